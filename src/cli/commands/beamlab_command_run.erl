%%% @doc `beamlab run CODE...' (also the bare form `beamlab CODE...'):
%%% benchmark Erlang code with erlperf's command-line habits.
%%%
%%% Hook and label options are positional, as in erlperf: `--init',
%%% `--init_runner', `--done' and `--label' apply to the code given just
%%% before them; `--init_all', `--init_runner_all' and `--done_all' are
%%% defaults for every code that has none of its own.
-module(beamlab_command_run).
-behaviour(beamlab_command).

-export([summary/0, options/0, usage/0, run/1, experiment/1, text/2]).
-export([kind/0]).

-include("beamlab_cli_error.hrl").


%% @doc One line for `beamlab help'.
-spec summary() -> string().
summary() ->
    "benchmark Erlang code (continuous, timed and concurrency-estimation modes)".

%% @doc The options of `beamlab run': the bench kind's
%% (`beamlab_experiment_bench:options/0': the engine's run options, the
%% stopping rule, the fresh VMs, the after-phase), the command line's
%% hooks and labels, `--ci', `-pa', `-r', `--bench', the metrics server's
%% and the common ones.
-spec options() -> [beamlab_cli_args:option()].
options() ->
    Kind = fun(Names) -> beamlab_cli_schema:flags(beamlab_experiment_bench:options(), Names) end,
    Kind([concurrency, samples, duration, warmup, loop, squeeze, min, max, step, threshold])
    ++ [#{name => init, long => "init", type => string, attach => true, metavar => "CODE",
          help => "run once before the code before it; result goes to init_runner and done"},
        #{name => init_runner, long => "init_runner", type => string, attach => true,
          metavar => "CODE", help => "run in every worker before the loop; result goes to the runner"},
        #{name => done, long => "done", type => string, attach => true, metavar => "CODE",
          help => "run once after the code before it"},
        #{name => label, long => "label", type => string, attach => true, metavar => "TEXT",
          help => "name for the code before it (default: the code)"},
        #{name => init_all, long => "init_all", type => string, metavar => "CODE",
          help => "--init for every code without its own"},
        #{name => init_runner_all, long => "init_runner_all", type => string, metavar => "CODE",
          help => "--init_runner for every code without its own"},
        #{name => done_all, long => "done_all", type => string, metavar => "CODE",
          help => "--done for every code without its own"}]
    ++ Kind([baseline])
    %% (--ci is --rel-ci under the name its help explains)
    ++ [#{name => ci, long => "ci", type => fraction, metavar => "PCT",
          help => "sample until the 95% CI of every mean is within PCT of it on both sides (2% or 0.02), "
                  "or --max-samples/--max-time is spent; the output says which ended the run"}]
    ++ Kind([rel_ci, cv, max_samples, max_time, deadline])
    ++ [#{name => pa, short => "pa", type => string, multi => true, metavar => "DIR",
          help => "add a code path (repeatable); ERL_LIBS is honoured too"}]
    ++ Kind([isolated, vm_args, flavor, metric])
    ++ [#{name => report, short => "r", long => "report", type => {enum, [basic, extended, full]},
          metavar => "KIND", help => "basic, extended (default with 10+ samples) or full (adds the environment)"},
        #{name => bench, long => "bench", type => string, metavar => "DIR",
          help => "run the project's bench modules in DIR (bench/*_bench.erl exporting benchmarks/0) "
                  "instead of CODE; the project is built first"},
        #{name => no_build, long => "no-build", type => boolean, default => false,
          help => "with --bench: use the project's code as it is built now"}]
    ++ Kind([profile, msacc, memory, reductions])
    ++ beamlab_cli_metrics:options() ++ beamlab_cli_args:common_options().

%% @doc Examples for `beamlab help run'.
-spec usage() -> iodata().
usage() ->
    "Usage: beamlab [run] CODE [--init C] [--init_runner C] [--done C] [--label L] [CODE ...] [OPTIONS]\n\n"
    "CODE is an expression ('rand:uniform().'), a function with 0, 1 or 2 arguments\n"
    "('r(X) -> X * 2.'; with 2: r(InitRunnerResult, State) -> NextState) or an MFA\n"
    "tuple ('{rand,uniform,[]}'). It is compiled, not interpreted.\n"
    "Several CODEs run interleaved (one at a time, order rotating every sample) and\n"
    "are compared with the first (or --baseline).\n\n"
    "Examples:\n"
    "  beamlab 'rand:uniform().'\n"
    "  beamlab 'rand:uniform().' -c 4\n"
    "  beamlab 'rand:uniform().' 'crypto:strong_rand_bytes(2).' -s 10 -w 1\n"
    "  beamlab 'r(_, S) -> {_, N} = rand:uniform_s(S), N.' --init_runner 'rand:seed(exsss).'\n"
    "  beamlab 'rand:uniform().' -l 10M\n"
    "  beamlab 'code:is_loaded(local_udp).' -q --max 8\n"
    "  beamlab 'lists:seq(1, 100).' --rel-ci 1% --max-time 20\n"
    "  beamlab 'lists:seq(1, 100).' -i --flavor emu        (the interpreter: an OTP with both flavours)\n"
    "  beamlab 'lists:seq(1, 100).' --cv 0.05 -s 5\n"
    "  beamlab 'ets:insert(t, {1, 2}).' --init 'ets:new(t, [public, named_table]).' -i --vm-args '+S 2'\n"
    "  beamlab run --bench bench/ --reductions       (the project's bench modules, see docs/ci.md)\n".

%% @doc Runs the benchmark; returns the exit code and the result.
-spec run(beamlab_cli_args:parsed()) -> beamlab_command:outcome().
run(Parsed) ->
    ?CATCHING(run_parsed(Parsed)).

run_parsed(Parsed) ->
    Exp = describe(Parsed),
    NJobs = case maps:get(run, Exp) of
                {bench, #{jobs := Jobs}} -> length(Jobs);
                {bench, #{modules := _}} -> 1
            end,
    Progress = progress(Parsed, NJobs),
    %% Under the launcher: what was measured survives code that stops the VM.
    Checkpoint = beamlab_runtime_checkpoint:open(maps:get(checkpoint, Parsed, undefined),
                                                 #{command => "run", parsed => Parsed}),
    try ?VALUE(beamlab_cli_experiment:run(Exp#{sink => sink(Progress, Parsed), checkpoint => Checkpoint},
               #{error => fun error_line/1}))
    after
        Progress =/= undefined andalso beamlab_runtime_progress:stop(Progress)
    end.

%% @doc The experiment: the jobs, the engine's options, the after-phase.
-spec experiment(beamlab_cli_args:parsed()) ->
          {ok, beamlab_experiment:experiment()} | {error, beamlab_cli_error:reason()}.
experiment(Parsed) ->
    ?CATCHING({ok, describe(Parsed)}).

describe(Parsed) ->
    case beamlab_cli_args:get(bench, Parsed) of
        undefined ->
            Jobs = jobs(Parsed),
            describe(Parsed, fun() -> #{jobs => Jobs} end);
        Dir ->
            ok = bench_only(Parsed),
            describe(Parsed, fun() -> #{modules => bench_modules(Dir, Parsed)} end)
    end.

%% The options are checked before `What' is made: a mistake is refused
%% before a project is built.
describe(Parsed, What0) ->
    {Options, Squeeze} = run_opts(Parsed),
    _ = [filelib:is_dir(D) orelse ?USAGE("-pa ~ts: no such directory", [D])
         || D <- beamlab_cli_args:get(pa, Parsed, [])],
    What = What0(),
    Get = fun(K) -> beamlab_cli_args:get(K, Parsed) end,
    After = maps:from_list([{K, V} || K <- [memory, reductions, msacc], V <- [Get(K)], V =:= true]
                           ++ [{profile, T} || T <- [Get(profile)], T =/= undefined]),
    Bench = case Squeeze of
                undefined -> What#{options => Options};
                _ -> What#{options => Options, squeeze => Squeeze}
            end,
    Exp = maps:merge(#{run => {bench, Bench}, command => maps:get(argv, Parsed),
                       telemetry => case Get(verbose) > 0 of true -> live; false -> none end},
                     case map_size(After) of 0 -> #{}; _ -> #{'after' => After} end),
    ?VALUE(beamlab_cli_metrics:add(Parsed, Exp)).

%% @doc The erlperf-style table (`-r basic|extended|full').
-spec text(beamlab_result:result(), beamlab_cli_args:parsed()) -> unicode:chardata().
text(Doc, Parsed) ->
    beamlab_render_view:text(Doc, #{unicode => beamlab_cli_output:unicode(Parsed),
                                    report => beamlab_cli_args:get(report, Parsed, auto)}).

%% One line per mistake in the bench modules; the layer's line otherwise.
error_line({bench, {project, _}} = R) ->
    beamlab_cli_project:error_lines(R);
error_line(_) ->
    undefined.

%%====================================================================
%% Options to engine options
%%====================================================================

jobs(#{args := []}) ->
    ?USAGE("no code to benchmark (example: beamlab 'rand:uniform().')", []);
jobs(#{args := Codes, arg_opts := ArgOpts} = Parsed) ->
    Defaults = [{init, beamlab_cli_args:get(init_all, Parsed)},
                {init_runner, beamlab_cli_args:get(init_runner_all, Parsed)},
                {done, beamlab_cli_args:get(done_all, Parsed)}],
    [begin
         Own = maps:with([init, init_runner, done, label], AO),
         WithDefaults = lists:foldl(fun({_K, undefined}, M) -> M;
                                       ({K, V}, M) -> maps:merge(#{K => V}, M)
                                    end, Own, Defaults),
         WithDefaults#{runner => Code}
     end || {Code, AO} <- lists:zip(Codes, ArgOpts)].

run_opts(Parsed) ->
    Get = fun(K) -> beamlab_cli_args:get(K, Parsed) end,
    Given = fun(K) -> lists:member(K, maps:get(given, Parsed)) end,
    Squeeze = Get(squeeze),
    Loop = Get(loop),
    Given(ci) andalso Given(rel_ci)
        andalso ?USAGE("--ci and --rel-ci are the same rule; give one", []),
    RelCi = case Get(ci) of
                undefined -> Get(rel_ci);
                Ci -> Ci
            end,
    %% What cannot go together, what needs what, a squeeze's range, the
    %% fresh VMs' arguments: the kind's schema, the same checks as the
    %% library's (naming the flags; --ci is --rel-ci).
    Flags0 = ?VALUE(beamlab_cli_schema:given(beamlab_experiment_bench:options(), Parsed)),
    Flags1 = case Given(ci) of
                 true -> Flags0#{rel_ci => RelCi};
                 false -> Flags0
             end,
    %% (bench modules: the kind's rules for `dir', e.g. no baseline)
    Flags = case Get(bench) of
                undefined -> Flags1;
                Dir -> Flags1#{dir => Dir}
            end,
    case beamlab_experiment_bench:check_options(Flags) of
        ok -> ok;
        {error, Refused} -> ?ABORT(beamlab_cli_schema:refusal(Refused))
    end,
    %% (a baseline is checked against the jobs, and the flavour's VMs
    %% against this installation, by the kind: beamlab_experiment_bench:check/2)
    Samples = Get(samples),
    Duration = Get(duration),
    Base = #{concurrency => Get(concurrency), samples => Samples, duration => Duration,
             warmup => Get(warmup), loop => Loop,
             rel_ci => RelCi, cv => Get(cv),
             isolated => Get(isolated), vm_args => beamlab_cli_args:get(vm_args, Parsed, ""),
             flavor => Get(flavor), metric => Get(metric),
             code_paths => beamlab_cli_args:get(pa, Parsed, [])},
    Optional = [{K, V} || {K, V} <- [{max_samples, Get(max_samples)},
                                     %% (whole milliseconds, as the kind takes them)
                                     {max_time, case maps:find(max_time, Flags) of
                                                    {ok, T} -> max(1, round(T));
                                                    error -> undefined
                                                end},
                                     {deadline, Get(deadline)},
                                     {baseline, Get(baseline)}],
                          V =/= undefined],
    ModeOpts = case Squeeze of
                   false -> undefined;
                   true -> maps:from_list([{K, Get(K)} || K <- [min, max, step, threshold],
                                                          Get(K) =/= undefined])
               end,
    {maps:merge(Base, maps:from_list(Optional)), ModeOpts}.

option_text(K) -> string:replace(atom_to_list(K), "_", "-", all).

%% Progress on stderr for runs expected to take more than a few seconds
%% (not with -v, whose telemetry lines already show progress): one line
%% rewritten in place on a terminal, else a plain line at most once a second
%% so logs stay readable.
progress(Parsed, NJobs) ->
    Get = fun(K) -> beamlab_cli_args:get(K, Parsed) end,
    Expected = case Get(loop) of
                   undefined -> (Get(samples) + Get(warmup)) * NJobs * Get(duration);
                   _ -> infinity
               end,
    case Get(verbose) > 0 orelse beamlab_cli_output:format(Parsed) =/= text
        orelse (is_integer(Expected) andalso Expected < 3000) of
        true -> undefined;
        false -> beamlab_runtime_progress:start()
    end.

%% The sampling rounds as the progress line.
sink(undefined, _Parsed) ->
    fun(_) -> ok end;
sink(Progress, Parsed) ->
    Get = fun(K) -> beamlab_cli_args:get(K, Parsed) end,
    Of = case Get(rel_ci) =:= undefined andalso Get(ci) =:= undefined andalso Get(cv) =:= undefined of
             true -> io_lib:format("/~w", [Get(samples) + Get(warmup)]);
             false -> ""
         end,
    fun({bench, #{round := R, warmup := W}}) ->
            What = case W of true -> "warm-up"; false -> "sampling" end,
            beamlab_runtime_progress:show(Progress, io_lib:format("~ts round ~w~ts", [What, R, Of]));
       (_) ->
            ok
    end.

%% What the command line's own flags cannot do with `--bench DIR' (the
%% library has no such flags: its codes and bench modules are two
%% functions, a job's hooks are in its map).
bench_only(#{args := [_ | _]}) ->
    ?USAGE("give either CODE or --bench DIR, not both", []);
bench_only(Parsed) ->
    _ = [?USAGE("--~ts applies to CODE, not to --bench (a bench module's map holds "
                "its hooks)", [option_text(K)])
         || K <- [init_all, init_runner_all, done_all], beamlab_cli_args:get(K, Parsed) =/= undefined],
    ok.

%% The project's bench modules (`--bench DIR'), compiled against the
%% project (built unless --no-build, or given by the build tool).
bench_modules(Dir, Parsed) ->
    #{root := Root, paths := Paths, include := Include} = ?VALUE(beamlab_cli_project:project(Parsed)),
    #{dir => Dir, root => Root, paths => Paths, include => Include}.

%% @doc The kind of experiment the command runs.
-spec kind() -> bench.
kind() -> bench.
