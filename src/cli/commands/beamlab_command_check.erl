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

-export([summary/0, options/0, usage/0, run/1, experiment/1, text/2]).
-export([kind/0, files/1]).

-include("beamlab_cli_error.hrl").

%% @doc One line for `beamlab help'.
-spec summary() -> string().
summary() ->
    "check a project's bench modules, or compare them with a git commit (--against REF)".

%% @doc The options of `beamlab check': the check kind's
%% (beamlab_experiment_check:options/0, where their types, bounds and
%% help are declared) with the command line's own after `--vm-args',
%% then the common ones.
-spec options() -> [beamlab_cli_args:option()].
options() ->
    Own = #{vm_args =>
                [#{name => no_build, long => "no-build", type => boolean, default => false,
                   help => "use the working tree's code as it is built now (the base is always built)"},
                 #{name => summary, long => "summary", type => string, metavar => "FILE",
                   help => "also write the Markdown summary (a pull-request comment) to FILE"}]},
    lists:append([[F | maps:get(N, Own, [])]
                  || #{name := N} = F <- beamlab_schema:flags(beamlab_experiment_check:options())])
        ++ beamlab_cli_args:common_options().

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
    "  beamlab check --against origin/main --summary comment.md --save\n"
    "  beamlab check --against main --metric cpu,reductions     (CPU time per iteration: load-independent)\n"
    "  beamlab check --against main --ci 2% --max-time 300      (more rounds until within +-2%, or 5 min)\n".

%% @doc The file written besides `--save' (`--summary').
-spec files(beamlab_cli_args:parsed()) -> #{outputs := [beamlab_runtime_file:named()]}.
files(Parsed) ->
    #{outputs => [{"--summary", F} || F <- [beamlab_cli_args:get(summary, Parsed)], F =/= undefined]}.

%% @doc Runs the command.
-spec run(beamlab_cli_args:parsed()) -> beamlab_command:outcome().
run(Parsed) ->
    ?CATCHING(run_parsed(Parsed)).

run_parsed(Parsed) ->
    Exp = describe(Parsed),
    %% A summary file that cannot be written is said now, not after the run.
    _ = [?CHECK(beamlab_cli_output:check_output("--summary", F))
         || F <- [beamlab_cli_args:get(summary, Parsed)], F =/= undefined],
    Sink = fun({check, Line}) -> beamlab_cli_project:progress(Line);
              (_) -> ok
           end,
    {Code, Doc} = ?VALUE(beamlab_cli_experiment:run(Exp#{sink => Sink}, #{error => fun error_line/1})),
    _ = [write_summary(F, Doc) || F <- [beamlab_cli_args:get(summary, Parsed)], F =/= undefined],
    {Code, Doc}.

%% @doc The check as an experiment: validation, or against a commit;
%% the kind's options given checked as the library checks them
%% (beamlab_experiment_check:check_options/1), naming the flags.
-spec experiment(beamlab_cli_args:parsed()) ->
          {ok, beamlab_experiment:experiment()} | {error, beamlab_cli_error:reason()}.
experiment(Parsed) ->
    ?CATCHING({ok, describe(Parsed)}).

describe(Parsed) ->
    Get = fun(K) -> beamlab_cli_args:get(K, Parsed) end,
    Schema = beamlab_experiment_check:options(),
    ?CHECK(beamlab_cli_experiment:checked(
             beamlab_experiment_check:check_options(beamlab_cli_experiment:given(Parsed, Schema)))),
    Get(against) =:= undefined andalso lists:member(summary, maps:get(given, Parsed)) andalso
        ?USAGE("--summary needs --against REF", []),
    Values = beamlab_schema:from_flags(Schema, maps:get(opts, Parsed)),
    {ok, Root} = file:get_cwd(),
    Base = maps:merge(#{root => Root, bench => Get(bench), build => not Get(no_build),
                        timeout => maps:get(timeout, Values)},
                      maps:with([project], Parsed)),
    Check = case Get(against) of
                undefined -> Base;
                Ref -> against(Ref, Values, Get(summary), Base)
            end,
    #{run => {check, Check}, command => maps:get(argv, Parsed)}.

against(Ref, Values, Summary, Base) ->
    %% (checked: the arguments split)
    {ok, VmArgs} = beamlab_runtime_peer:parse_args(maps:get(vm_args, Values, "")),
    _ = [?CHECK(beamlab_cli_output:check_output("--summary", F)) || F <- [Summary], F =/= undefined],
    %% no --rounds: the check's default for its gate (beamlab_experiment_check:default_rounds/1)
    maps:merge(Base#{against => Ref, gate => lists:usort(maps:get(metric, Values)),
          threshold => maps:get(threshold, Values), alpha => maps:get(alpha, Values), vm_args => VmArgs,
          options => maps:with([duration, samples, warmup], Values)},
               maps:merge(maps:with([rounds], Values), rule(Values))).

%% --ci, and its budget in whole ms.
rule(Values) ->
    maps:from_list([{ci, C} || C <- [maps:get(ci, Values, undefined)], C =/= undefined]
                   ++ [{max_time, max(1, round(T))} || T <- [maps:get(max_time, Values, undefined)],
                                                         T =/= undefined]).

%% @doc The check's text view.
-spec text(beamlab_result:result(), beamlab_cli_args:parsed()) -> unicode:chardata().
text(Doc, Parsed) ->
    beamlab_render_view:text(Doc, beamlab_cli_output:text_opts(Parsed)).

write_summary(File, Doc) ->
    case beamlab_runtime_file:write(File, beamlab_render_check:markdown(Doc)) of
        {ok, _} -> io:format(standard_error, "summary: ~ts~n", [File]);
        {error, Why} -> ?FAIL("cannot write the summary to ~ts: ~ts",
                              [File, beamlab_runtime_file:format_error(Why)])
    end.

%% Errors of several lines (a mistake in the bench modules each) are
%% told line by line.
-spec error_line(beamlab_experiment:error_reason()) -> {error, beamlab_cli_error:reason()}.
error_line(R) ->
    beamlab_cli_project:error_lines(R).

%% @doc The kind of experiment the command runs.
-spec kind() -> check.
kind() -> check.
