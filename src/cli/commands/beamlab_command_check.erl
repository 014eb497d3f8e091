%%% @doc `beamlab check': a project's bench modules, checked.
%%%
%%% Without `--against': the bench modules of `bench/' are compiled
%%% against the project and validated (one line per mistake), and each
%%% benchmark runs in its own phase to count its reductions and words
%%% per iteration, which shows that every runner works.
%%%
%%% With `--against REF': the working tree against the commit REF names,
%%% in paired rounds of fresh VMs ({@link beamlab_project_check}); exit
%%% code 1 when a benchmark regressed on a gated metric (`--metric',
%%% default time) by more than `--threshold' at p < `--alpha'.
-module(beamlab_command_check).
-behaviour(beamlab_command).

-export([summary/0, options/0, usage/0, run/1, text/2]).

-define(METRICS, [time, reductions, memory]).

%% @doc One line for `beamlab help'.
-spec summary() -> string().
summary() ->
    "check a project's bench modules, or compare them with a git commit (--against REF)".

%% @doc The options of `beamlab check'.
-spec options() -> [beamlab_cli_args:option()].
options() ->
    [#{name => against, long => "against", type => string, metavar => "REF",
       help => "compare the working tree with this commit (branch, tag, HEAD~1, hash)"},
     #{name => bench, long => "bench", type => string, default => "bench", metavar => "DIR",
       help => "the directory of the bench modules (default bench)"},
     #{name => rounds, long => "rounds", type => pos_integer, default => 12, metavar => "N",
       help => "paired rounds (default 12; at least 8 for p < 0.01)"},
     #{name => metric, long => "metric", type => {list, {enum, ?METRICS}}, default => [time],
       metavar => "M[,M]", help => "metrics that fail the check: time, reductions, memory (default time)"},
     #{name => threshold, long => "threshold", type => percent, default => 5, metavar => "PCT",
       help => "fail only on a regression beyond PCT percent (default 5%)"},
     #{name => alpha, long => "alpha", type => fraction, default => 0.01, metavar => "P",
       help => "significance level of the sign test (default 0.01)"},
     #{name => duration, short => "d", long => "duration", type => pos_integer, default => 100,
       metavar => "MS", help => "sample duration per side and round (default 100)"},
     #{name => samples, short => "s", long => "samples", type => pos_integer, default => 3,
       metavar => "N", help => "samples per side and round (default 3)"},
     #{name => warmup, short => "w", long => "warmup", type => non_neg_integer, default => 1,
       metavar => "N", help => "warm-up samples per side and round (default 1)"},
     #{name => vm_args, long => "vm-args", type => string, metavar => "ARGS",
       help => "emulator arguments of the measuring VMs, e.g. '+S 1'"},
     #{name => no_build, long => "no-build", type => boolean, default => false,
       help => "use the working tree's code as it is built now (the base is always built)"},
     #{name => summary, long => "summary", type => string, metavar => "FILE",
       help => "also write the Markdown summary (a pull-request comment) to FILE"}
     | beamlab_cli_args:common_options()].

%% @doc Usage and examples.
-spec usage() -> iodata().
usage() ->
    "Usage: beamlab check [--against REF] [OPTIONS]\n\n"
    "Run in a project's root (rebar3, Mix or plain). Bench modules are bench/*_bench.erl\n"
    "(and bench/*_bench.ex in Elixir projects) exporting benchmarks/0, a list of maps\n"
    "with a name and a runner; see docs/ci.md.\n\n"
    "Without --against: compile and validate the bench modules, run each benchmark once\n"
    "and count its reductions and words per iteration.\n"
    "With --against REF: build REF in a temporary git worktree, run base and head in\n"
    "paired rounds (fresh VMs, order swapped every round) and report the change in time,\n"
    "reductions and memory per iteration with its interval and verdict. Exit code 1 when\n"
    "a gated metric regressed beyond --threshold at p < --alpha.\n\n"
    "Examples:\n"
    "  beamlab check\n"
    "  beamlab check --against main\n"
    "  beamlab check --against HEAD~1 --metric reductions --threshold 1%\n"
    "  beamlab check --against origin/main --summary comment.md --save\n".

%% @doc Runs the command.
-spec run(beamlab_cli_args:parsed()) -> beamlab_command:outcome().
run(Parsed) ->
    case beamlab_cli_args:get(against, Parsed) of
        undefined -> validate(Parsed);
        Ref -> against(Ref, Parsed)
    end.

%% @doc The check's text view.
-spec text(beamlab_result:result(), beamlab_cli_args:parsed()) -> unicode:chardata().
text(Doc, Parsed) ->
    beamlab_render_check:text(Doc, #{unicode => beamlab_cli_output:unicode(Parsed)}).

%%--------------------------------------------------------------------
%% Validation: the bench modules as they are

validate(Parsed) ->
    _ = [beamlab_cli_error:usage("--~ts needs --against REF", [option_text(K)])
         || K <- [rounds, metric, threshold, alpha, duration, samples, warmup, vm_args, summary],
            lists:member(K, maps:get(given, Parsed))],
    Project = beamlab_cli_project:project(Parsed),
    Jobs = beamlab_cli_project:bench_jobs(beamlab_cli_args:get(bench, Parsed), Project),
    Rows = [row(J) || J <- Jobs],
    Failed = [R || {error, R} <- Rows],
    beamlab_cli_output:put_chars(
      [beamlab_format_table:render(["Benchmark", "Module", "Reductions/iter", "Memory/iter", "Status"],
                                   [R || {_, R} <- Rows]),
       io_lib:format("~b benchmark(s) in ~b module(s); ~ts~n",
                     [length(Jobs), length(lists:usort([M || #{module := M} <- Jobs])),
                      case Failed of
                          [] -> "every runner works";
                          _ -> io_lib:format("~b failed", [length(Failed)])
                      end])]),
    {case Failed of [] -> 0; _ -> 1 end, none}.

row(#{label := L, module := M} = Job) ->
    case beamlab_engine_after:per_iteration(beamlab_cli_project:code_map(Job),
                                            #{reductions => true, memory => true}) of
        {ok, #{<<"reductions">> := R, <<"words">> := W}} ->
            {ok, [L, atom_to_list(M), beamlab_format_units:number(R),
                  [beamlab_format_units:number(W), " words"], "ok"]};
        {error, Reason} ->
            Msg = beamlab_engine_after:format_error(Reason),
            io:format(standard_error, "beamlab: ~ts: ~ts~n", [L, Msg]),
            {error, [L, atom_to_list(M), "-", "-", "failed"]}
    end.

%%--------------------------------------------------------------------
%% Against a commit

against(Ref, Parsed) ->
    Get = fun(K) -> beamlab_cli_args:get(K, Parsed) end,
    Alpha = Get(alpha),
    Min = beamlab_stats_paired:min_rounds(Alpha),
    Get(rounds) >= Min
        orelse beamlab_cli_error:usage("--rounds ~b cannot reach p < ~ts: even rounds that all agree "
                                       "need at least ~b", [Get(rounds), fmt(Alpha), Min]),
    VmArgs = case beamlab_runtime_peer:parse_args(beamlab_cli_args:get(vm_args, Parsed, "")) of
                 {ok, A} -> A;
                 {error, Why} -> beamlab_cli_error:usage("--vm-args: ~ts", [beamlab_runtime_peer:format_error(Why)])
             end,
    _ = [beamlab_cli_output:check_output("--summary", F) || F <- [Get(summary)], F =/= undefined],
    {ok, Root} = file:get_cwd(),
    Head = case {maps:find(project, Parsed), Get(no_build)} of
               {{ok, P}, _} -> #{head => P};
               {error, true} -> #{head => beamlab_cli_project:project(Parsed)};
               {error, false} -> #{}
           end,
    Run = [integer_to_list(Get(K)) || K <- [duration, samples, warmup]],
    Opts = Head#{root => Root, against => Ref, bench => Get(bench), rounds => Get(rounds),
                 gate => lists:usort(Get(metric)), threshold => Get(threshold) / 100,
                 alpha => Alpha, command => maps:get(argv, Parsed), vm_args => VmArgs,
                 main => main(Run),
                 params => #{duration => Get(duration), samples => Get(samples), warmup => Get(warmup),
                             project => beamlab_cli_project:info(Root)},
                 progress => fun beamlab_cli_project:progress/1},
    ok = beamlab_runtime_interrupt:subscribe(),
    Result = try beamlab_project_check:run(Opts)
             after
                 ok = beamlab_runtime_interrupt:unsubscribe()
             end,
    case Result of
        {ok, Doc} -> outcome(Doc, Parsed);
        {error, Reason} -> error_exit(Reason)
    end.

%% What each side's fresh VM runs: `beamlab run' on the bench modules
%% compiled for that side, with the after-phase counting reductions and
%% words per iteration. The side's code is on the VM's path already.
main([D, S, W]) ->
    fun(#{bench := Ebin, dir := Dir}) ->
            Argv = ["run", "--bench", Ebin, "-d", D, "-s", S, "-w", W, "--reductions", "--memory"],
            None = #{root => Dir, tool => none, paths => [], include => []},
            {beamlab_cli, run_command, [Argv, #{quiet => true, errors => return, project => None}]}
    end.

outcome(Doc, Parsed) ->
    _ = [write_summary(F, Doc) || F <- [beamlab_cli_args:get(summary, Parsed)], F =/= undefined],
    Regressed = beamlab_project_check:regressions(Doc),
    Broken = beamlab_project_check:failed_head(Doc),
    case {maps:get(partial, Doc), Regressed} of
        {true, _} ->
            {beamlab_runtime_interrupt:exit_code(), Doc};
        {false, []} when Broken =:= [] ->
            {0, Doc};
        {false, []} ->
            io:format(standard_error, "beamlab: ~b benchmark(s) fail on the working tree but ran on ~ts: ~ts~n",
                      [length(Broken), beamlab_cli_args:get(against, Parsed), lists:join(", ", Broken)]),
            {1, Doc};
        {false, _} ->
            #{params := #{<<"threshold">> := T}} = Doc,
            io:format(standard_error, "beamlab: ~b benchmark metric(s) regressed beyond ~ts: ~ts~n",
                      [length(Regressed), beamlab_format_units:signed_percent(T),
                       lists:join("; ", [io_lib:format("~ts ~ts ~ts", [G, M, change_text(P)])
                                         || {G, M, P} <- Regressed])]),
            {1, Doc}
    end.

change_text(#{<<"change">> := C, <<"ci">> := [Lo, Hi]}) ->
    io_lib:format("~ts [~ts, ~ts]", [beamlab_format_units:signed_percent(C),
                                     beamlab_format_units:signed_percent(Lo),
                                     beamlab_format_units:signed_percent(Hi)]);
change_text(#{<<"change">> := C}) ->
    beamlab_format_units:signed_percent(C).

write_summary(File, Doc) ->
    case beamlab_runtime_file:write_atomic(File, beamlab_render_check:markdown(Doc)) of
        ok -> io:format(standard_error, "summary: ~ts~n", [File]);
        {error, Why} -> beamlab_cli_error:fail("cannot write the summary to ~ts: ~ts",
                                               [File, beamlab_runtime_file:format_error(Why)])
    end.

%% A ref that names nothing and bench modules with mistakes are the
%% user's (exit 2); a build that fails is a failure (exit 1).
-spec error_exit(beamlab_project_check:error_reason()) -> no_return().
error_exit({invalid, _} = R) -> lines(R, usage);
error_exit({compile, _} = R) -> lines(R, usage);
error_exit({no_bench_dir, _} = R) -> lines(R, usage);
error_exit({no_bench_modules, _} = R) -> lines(R, usage);
error_exit({unknown_ref, _} = R) -> lines(R, usage);
error_exit({not_a_repository, _} = R) -> lines(R, usage);
error_exit(R) -> lines(R, fail).

-spec lines(beamlab_project_check:error_reason(), usage | fail) -> no_return().
lines(Reason, Kind) ->
    beamlab_cli_project:error_lines(beamlab_project_check:format_error(Reason), Kind).

option_text(K) -> string:replace(atom_to_list(K), "_", "-", all).

fmt(F) -> float_to_list(F, [short]).
