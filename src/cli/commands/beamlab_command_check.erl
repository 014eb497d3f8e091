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
       help => "the directory of the bench modules"},
     #{name => rounds, long => "rounds", type => pos_integer, default => 12, metavar => "N",
       max => 10000,
       help => "paired rounds (at least 8 for p < 0.01)"},
     #{name => metric, long => "metric", type => {list, {enum, ?METRICS}}, default => [time],
       metavar => "M[,M]", help => "metrics that fail the check: time, reductions, memory"},
     #{name => threshold, long => "threshold", type => percent, default => 5, metavar => "PCT",
       help => "fail only on a regression beyond PCT percent"},
     #{name => alpha, long => "alpha", type => fraction, default => 0.01, metavar => "P",
       help => "significance level of the sign test"},
     #{name => duration, short => "d", long => "duration", type => pos_integer, default => 100,
       max => 86400000, max_why => "one day",
       metavar => "MS", help => "sample duration per side and round"},
     #{name => samples, short => "s", long => "samples", type => pos_integer, default => 3,
       max => 1000000,
       metavar => "N", help => "samples per side and round"},
     #{name => warmup, short => "w", long => "warmup", type => non_neg_integer, default => 1,
       max => 1000000,
       metavar => "N", help => "warm-up samples per side and round"},
     #{name => vm_args, long => "vm-args", type => string, metavar => "ARGS",
       help => "emulator arguments of the measuring VMs, e.g. '+S 1'"},
     #{name => no_build, long => "no-build", type => boolean, default => false,
       help => "use the working tree's code as it is built now (the base is always built)"},
     #{name => summary, long => "summary", type => string, metavar => "FILE",
       help => "also write the Markdown summary (a pull-request comment) to FILE"},
     #{name => timeout, long => "timeout", type => pos_integer, default => 600, max => 604800,
       max_why => "one week", metavar => "S",
       help => "deadline of each phase: a build, a benchmark's validation, a side's VM in a "
               "round (beyond the time its samples take); past it the phase is stopped"}
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

%% @doc The file written besides `--save' (`--summary').
-spec files(beamlab_cli_args:parsed()) -> #{outputs := [beamlab_runtime_file:named()]}.
files(Parsed) ->
    #{outputs => [{"--summary", F} || F <- [beamlab_cli_args:get(summary, Parsed)], F =/= undefined]}.

%% @doc Runs the command.
-spec run(beamlab_cli_args:parsed()) -> beamlab_command:outcome().
run(Parsed) ->
    Exp = experiment(Parsed),
    %% A summary file that cannot be written is said now, not after the run.
    _ = [beamlab_cli_output:check_output("--summary", F)
         || F <- [beamlab_cli_args:get(summary, Parsed)], F =/= undefined],
    Sink = fun({check, Line}) -> beamlab_cli_project:progress(Line);
              (_) -> ok
           end,
    {Code, Doc} = beamlab_cli_experiment:run(Exp#{sink => Sink}, #{error => fun error_line/1}),
    _ = [write_summary(F, Doc) || F <- [beamlab_cli_args:get(summary, Parsed)], F =/= undefined],
    {Code, Doc}.

%% @doc The check as an experiment: validation, or against a commit.
-spec experiment(beamlab_cli_args:parsed()) -> beamlab_experiment:experiment().
experiment(Parsed) ->
    Get = fun(K) -> beamlab_cli_args:get(K, Parsed) end,
    {ok, Root} = file:get_cwd(),
    Base = maps:merge(#{root => Root, bench => Get(bench), build => not Get(no_build),
                        timeout => Get(timeout) * 1000},
                      maps:with([project], Parsed)),
    Check = case Get(against) of
                undefined ->
                    _ = [beamlab_cli_error:usage("--~ts needs --against REF", [option_text(K)])
                         || K <- [rounds, metric, threshold, alpha, duration, samples, warmup, vm_args,
                                  summary],
                            lists:member(K, maps:get(given, Parsed))],
                    Base;
                Ref ->
                    against(Ref, Parsed, Base)
            end,
    #{run => {check, Check}, command => maps:get(argv, Parsed)}.

against(Ref, Parsed, Base) ->
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
    Base#{against => Ref, rounds => Get(rounds), gate => lists:usort(Get(metric)),
          threshold => Get(threshold) / 100, alpha => Alpha, vm_args => VmArgs,
          options => #{duration => Get(duration), samples => Get(samples), warmup => Get(warmup)}}.

%% @doc The check's text view.
-spec text(beamlab_result:result(), beamlab_cli_args:parsed()) -> unicode:chardata().
text(Doc, Parsed) ->
    beamlab_render_view:text(Doc, beamlab_cli_output:text_opts(Parsed)).

write_summary(File, Doc) ->
    case beamlab_runtime_file:write(File, beamlab_render_check:markdown(Doc)) of
        {ok, _} -> io:format(standard_error, "summary: ~ts~n", [File]);
        {error, Why} -> beamlab_cli_error:fail("cannot write the summary to ~ts: ~ts",
                                               [File, beamlab_runtime_file:format_error(Why)])
    end.

%% Errors of several lines (a mistake in the bench modules each) are
%% told line by line.
-spec error_line(beamlab_experiment:error_reason()) -> no_return().
error_line(R) ->
    beamlab_cli_project:error_lines(beamlab_experiment:format_error(R), beamlab_experiment:error_class(R)).

option_text(K) -> string:replace(atom_to_list(K), "_", "-", all).

fmt(F) -> float_to_list(F, [short]).

%% @doc The kind of experiment the command runs.
-spec kind() -> check.
kind() -> check.
