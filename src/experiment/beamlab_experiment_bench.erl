%%% @doc A micro-benchmark as an experiment: the jobs and their measurement
%%% options go to the engine (`beamlab_engine:run/3'); the after-phase
%%% (`memory', `reductions': per iteration; `profile': an in-VM profiler)
%%% runs on each job once the timed samples are taken, in this VM, one job
%%% after the other, and never touches the timed figures: its results go
%%% to each benchmark's `extra' (`per_iteration', `profile').
%%%
%%% The jobs are given (`jobs'), or are a project's bench modules
%%% (`modules': {@link beamlab_experiment_project}), compiled and loaded
%%% in the VM that runs the experiment.
-module(beamlab_experiment_bench).

-behaviour(beamlab_experiment_kind).

-export([name/0, options/0, new/1, run/3, check/2, verdict/1, error_class/1, format_error/1,
         composes/0]).
-export([check_options/1]).

%% `options' are the engine's (`beamlab_engine:options()': samples,
%% duration, concurrency, loop, stopping rule, isolated, ...); `squeeze'
%% present means concurrency estimation with these bounds.
-type bench() :: #{jobs := [beamlab_engine:job_spec()],
                   options => beamlab_engine:options(),
                   squeeze => beamlab_engine_squeeze:given_opts()}
               | #{modules := beamlab_experiment_project:modules(),
                   options => beamlab_engine:options(),
                   squeeze => beamlab_engine_squeeze:given_opts()}.
-type error_reason() :: {option, beamlab_schema:error_reason()}
                      | beamlab_engine:error_reason()
                      | beamlab_engine_after:error_reason()
                      | {project, beamlab_experiment_project:error_reason()}
                      | {flavor, term()}.
-export_type([bench/0, error_reason/0]).

%% @doc The kind's name: `bench'.
-spec name() -> bench.
name() -> bench.

%% @doc The options of a benchmark: the engine's run options (bounded,
%% with what cannot go together and what needs what), `squeeze'
%% (concurrency estimation; the command line's `-q' with `--min',
%% `--max', `--step', `--threshold', the library's `squeeze => true' or a
%% map of them), the code (`codes') or a project's bench modules (`dir',
%% `include', `root'). The command line takes its checks from here.
-spec options() -> [beamlab_schema:option()].
options() ->
    Schema = schema(),
    Names = [N || #{name := N} <- Schema],
    Schema ++ [#{name => K} || K <- lists:sort(maps:keys(beamlab_engine:default_run_opts()))
                                   ++ [codes, dir, include, root],
                               not lists:member(K, Names)].

schema() ->
    %% The defaults are the engine's: one place says what a run does by default.
    D = beamlab_engine:default_run_opts(),
    %% Workers are processes: at most half of what the VM allows, so the
    %% job's own processes still fit.
    Workers = #{max => erlang:system_info(process_limit) div 2,
                max_why => "half the VM's process limit; raise it with +P"},
    Samples = #{max => 1000000, max_why => "a million samples"},
    Day = #{max => 86400000, max_why => "one day"},
    Squeeze = #{requires => [squeeze]},
    Fresh = #{requires => [isolated], requires_format => "~ts applies to the fresh VMs of ~ts; add it"},
    Text = fun(Format, Args) -> lists:flatten(io_lib:format(Format, Args)) end,
    [Workers#{name => concurrency, short => "c", long => "concurrency", type => pos_integer,
              default => maps:get(concurrency, D), metavar => "N", help => "workers running the code concurrently"},
     Samples#{name => samples, short => "s", long => "samples", type => pos_integer,
              default => maps:get(samples, D), metavar => "N",
              help => "samples to take (the minimum with --rel-ci/--cv)"},
     Samples#{name => warmup, short => "w", long => "warmup", type => non_neg_integer,
              default => maps:get(warmup, D), metavar => "N", help => "warm-up samples, discarded"},
     #{name => loop, short => "l", long => "loop", type => quantity, max => 1000000000000000, metavar => "N",
       conflicts => [{concurrency, "~ts (timed mode) runs one worker; it cannot be combined with ~ts"},
                     {squeeze, "~ts (timed mode) and ~ts (concurrency estimation) cannot be combined"}],
       help => "timed mode: time N iterations per sample (K/M/G suffixes: 10M)"},
     #{name => squeeze, short => "q", long => "squeeze", type => boolean, default => false,
       conflicts => [{concurrency, "~ts chooses the concurrency itself; drop ~ts or use --min"}],
       help => "concurrency estimation: add workers until throughput stops growing"},
     %% (after loop and squeeze: the order of the checks is the schema's)
     Day#{name => duration, short => "d", long => "duration", type => pos_integer,
          default => maps:get(duration, D), metavar => "MS",
          conflicts => [{loop, "~ts sets the sample time of continuous mode; ~ts (timed mode) counts "
                               "iterations instead"}],
          help => "sample duration in ms, continuous mode"},
     (maps:merge(Workers, Squeeze))#{name => min, long => "min", type => pos_integer, metavar => "N",
                                     help => "squeeze: first concurrency (default 1)"},
     (maps:merge(Workers, Squeeze))#{name => max, long => "max", type => pos_integer, metavar => "N",
                                     help => "squeeze: last concurrency (default 2 x schedulers)"},
     (maps:merge(Workers, Squeeze))#{name => step, long => "step", type => pos_integer, metavar => "N",
                                     help => "squeeze: concurrency increment (default 1)"},
     (maps:merge(Samples, Squeeze))#{name => threshold, short => "t", long => "threshold", type => pos_integer,
                                     metavar => "N", help => "squeeze: stop after N steps without gain (default 3)"},
     %% (a job's number or label; checked against the jobs by check/2)
     #{name => baseline, long => "baseline", type => {one_of, [integer, string]}, cli_type => string,
       metavar => "N|LABEL", help => "job the others are compared to (default: the first)"},
     #{name => rel_ci, long => "rel-ci", type => fraction, metavar => "F",
       help => "the same as --ci (kept for erlperf users)"},
     #{name => cv, long => "cv", type => fraction, metavar => "F",
       help => "sample until the coefficient of variation of the last -s samples is at most F "
               "(0.05 or 5%), as erlperf's --cv"},
     Samples#{name => max_samples, long => "max-samples", type => pos_integer, requires => [rel_ci, cv],
              metavar => "N", help => Text("stopping rule cap on samples (default ~b)", [maps:get(max_samples, D)])},
     %% (the library's in ms, the command line's in seconds)
     #{name => max_time, long => "max-time", type => pos_number, scale => 1000, requires => [rel_ci, cv],
       max => 604800000, max_why => "one week", metavar => "SEC",
       help => Text("stopping rule cap on time in seconds (default ~b)", [maps:get(max_time, D) div 1000])},
     Day#{name => deadline, long => "deadline", type => pos_integer, metavar => "MS",
          help => Text("fail a job whose hook or runner makes no progress for MS (default ~b)",
                       [maps:get(deadline, D)])},
     #{name => isolated, short => "i", long => "isolated", type => boolean, default => maps:get(isolated, D),
       help => "run each job in a fresh VM"},
     Fresh#{name => vm_args, long => "vm-args", type => string, metavar => "ARGS",
            help => "emulator arguments for the fresh VMs of -i, e.g. '+S 2'"},
     Fresh#{name => flavor, long => "flavor", type => {enum, [jit, emu]}, metavar => "jit|emu",
            help => "the emulator flavour of the fresh VMs of -i (the JIT or the interpreter), "
                    "proven from what each VM reports"},
     #{name => metric, long => "metric", type => {enum, [time, cpu]}, default => maps:get(metric, D),
       metavar => "time|cpu",
       conflicts => [{squeeze, "~ts measures per iteration; ~ts (concurrency estimation) "
                               "measures throughput: use one"}],
       help => "what a sample measures: wall-clock time (default) or cpu, the CPU time per iteration "
               "of the measuring VM's scheduler threads (Linux), which the machine's load does not inflate"},
     %% The after-the-samples phases: they run in this VM on each job once
     %% the timed samples are taken and never touch the timed figures.
     #{name => profile, long => "profile", type => {enum, [eprof, fprof, cprof, tprof]}, metavar => "TOOL",
       help => "after the samples, profile the runner in the VM: eprof, fprof, cprof (tprof: OTP 27+)"},
     #{name => msacc, long => "msacc", type => boolean, default => false,
       help => "with --profile and -v: microstate accounting of the profiled period"},
     #{name => memory, long => "memory", type => boolean, default => false,
       help => "after the samples, words allocated per iteration (spawned processes included)"},
     #{name => reductions, long => "reductions", type => boolean, default => false,
       help => "after the samples, reductions per iteration (spawned processes included)"}].

%% @doc Checks the options given (the engine's keys; `squeeze' true, and
%% its bounds `min', `max', `step', `threshold' beside it; `dir' for a
%% project's bench modules) against the schema, that a concurrency
%% estimation's first concurrency is not above its last, and that bench
%% modules have no `baseline' (their benchmarks are not compared with one
%% another). The command line checks its flags here too.
-spec check_options(#{atom() => term()}) -> ok | {error, beamlab_schema:error_reason()}.
check_options(Given) ->
    Schema = schema(),
    case beamlab_schema:check(Schema, maps:with([N || #{name := N} <- Schema], Given)) of
        ok ->
            case squeeze_range(Schema, Given) of
                ok ->
                    case modules_baseline(Schema, Given) of
                        ok -> vm_args(Schema, Given);
                        {error, _} = E -> E
                    end;
                {error, _} = E ->
                    E
            end;
        {error, _} = E ->
            E
    end.

%% A project's bench modules are measured side by side, each against
%% nothing: a baseline would compare what is not meant to be compared.
modules_baseline(Schema, #{dir := _, baseline := Bl}) when Bl =/= undefined ->
    {ok, O} = beamlab_schema:find(baseline, Schema),
    {error, {rule, "~ts: the benchmarks of bench modules are not compared with one another", [{opt, O}]}};
modules_baseline(_, _) ->
    ok.

%% Emulator arguments the fresh VMs could not start with.
vm_args(Schema, #{vm_args := Args}) when Args =/= undefined ->
    case beamlab_runtime_peer:parse_args(Args) of
        {ok, _} ->
            ok;
        {error, Why} ->
            {ok, O} = beamlab_schema:find(vm_args, Schema),
            {error, {rule, "~ts: " ++ tilde(beamlab_runtime_peer:format_error(Why)), [{opt, O}]}}
    end;
vm_args(_, _) ->
    ok.

%% A text as an io_lib format that prints it as it is.
tilde(Text) ->
    lists:flatten(string:replace(unicode:characters_to_list(Text), "~", "~~", all)).

squeeze_range(Schema, #{squeeze := true} = Given) ->
    M = maps:merge(beamlab_engine_squeeze:defaults(), maps:with([min, max], Given)),
    case M of
        #{min := Min, max := Max} when is_integer(Min), is_integer(Max), Min > Max ->
            {ok, MinO} = beamlab_schema:find(min, Schema),
            {ok, MaxO} = beamlab_schema:find(max, Schema),
            {error, {rule, "~ts ~ts is above ~ts ~ts (the default ~ts is 2 x schedulers; give a larger "
                           "~ts or a smaller ~ts)",
                     [{opt, MinO}, {value, Min}, {opt, MaxO}, {value, Max}, {opt, MaxO}, {opt, MaxO},
                      {opt, MinO}]}};
        _ ->
            ok
    end;
squeeze_range(_, _) ->
    ok.

%% The library's map as the schema reads it: `squeeze' true or its
%% bounds' map, which stand beside it.
flat_squeeze(#{squeeze := Sq} = Opts) when is_map(Sq) ->
    maps:merge(Sq, Opts#{squeeze := true});
flat_squeeze(Opts) ->
    Opts.

%% @doc The benchmark of `codes' (each code, or a map with its `runner'),
%% or of the bench modules in `dir' (against `code_paths', with
%% `include' and the project's `root'); the engine's options as given;
%% `squeeze' (`true' or its bounds) asks for concurrency estimation.
-spec new(#{atom() => term()}) -> {ok, bench()} | {error, {bad_option, squeeze, term()}
                                                         | {option, beamlab_schema:error_reason()}}.
new(#{squeeze := Bad}) when not is_boolean(Bad), not is_map(Bad) ->
    {error, {bad_option, squeeze, Bad}};
new(Opts) ->
    case check_options(flat_squeeze(Opts)) of
        ok -> build(Opts);
        {error, R} -> {error, {option, R}}
    end.

build(Opts) ->
    Options0 = maps:with(maps:keys(beamlab_engine:default_run_opts()), Opts),
    %% (whole milliseconds: the command line's seconds may have a fraction)
    Options = case Options0 of
                  #{max_time := T} when is_number(T) -> Options0#{max_time := max(1, round(T))};
                  _ -> Options0
              end,
    Run = case Opts of
              #{dir := Dir} ->
                  #{modules => maps:merge(#{dir => Dir, paths => maps:get(code_paths, Opts, []),
                                            include => maps:get(include, Opts, [])},
                                          maps:with([root], Opts))};
              _ ->
                  #{jobs => [case C of
                                 #{runner := _} -> C;
                                 _ -> #{runner => C}
                             end || C <- maps:get(codes, Opts, [])]}
          end,
    case maps:get(squeeze, Opts, none) of
        none -> {ok, Run#{options => Options}};
        true -> {ok, Run#{options => Options, squeeze => #{}}};
        Sq when is_map(Sq) -> {ok, Run#{options => Options, squeeze => Sq}};
        Bad -> {error, {bad_option, squeeze, Bad}}
    end.

%% @doc A benchmark has an after-phase.
-spec composes() -> ['after'].
composes() -> ['after'].

%% @doc Runs the benchmark, then the after-phase on every job that
%% measured (a partial run gets none).
-spec run(bench(), beamlab_experiment:experiment(), beamlab_experiment:inner()) ->
          {ok, beamlab_result:result()} | {error, {bench, error_reason()}}.
run(B, Exp, _Inner) ->
    run(B, Exp).

run(#{modules := M} = B, Exp) ->
    case beamlab_experiment_project:jobs(M) of
        {ok, #{jobs := Jobs} = Project} ->
            Codes = [beamlab_experiment_project:code_map(J) || J <- Jobs],
            case run((maps:remove(modules, B))#{jobs => Codes}, Exp) of
                {ok, Doc} -> {ok, beamlab_experiment_project:attach(Doc, Project, root(M))};
                {error, _} = E -> E
            end;
        {error, R} ->
            {error, {bench, {project, R}}}
    end;
run(#{jobs := Jobs} = B, Exp) ->
    Options = maps:get(options, B, #{}),
    case beamlab_engine_paths:add_code_paths(maps:get(code_paths, Options, [])) of
        {ok, _} ->
            Telemetry = maps:get(telemetry, Exp, none),
            Sink = maps:get(sink, Exp, undefined),
            RunOpts = Options#{command => maps:get(command, Exp, maps:get(command, Options, [])),
                               telemetry => Telemetry =/= none, verbose => Telemetry =:= live,
                               metrics => beamlab_experiment_metrics:server(Exp),
                               checkpoint => maps:get(checkpoint, Exp, none),
                               progress => case Sink of
                                               undefined -> maps:get(progress, Options, undefined);
                                               _ -> fun(P) -> Sink({bench, P}) end
                                           end},
            case beamlab_engine:run(Jobs, RunOpts, maps:get(squeeze, B, undefined)) of
                {ok, Doc} ->
                    After = after_phase(Jobs, Doc, maps:get('after', Exp, #{})),
                    {ok, beamlab_experiment_env:attach(After, Exp)};
                {error, R} ->
                    {error, {bench, R}}
            end;
        {error, R} ->
            {error, {bench, R}}
    end.

%% @doc What cannot work, before anything runs: a `baseline' that is
%% none of the jobs (or with one job, nothing to compare), `msacc'
%% without a profiler and live telemetry, a profiler this OTP release
%% lacks.
-spec check(bench(), beamlab_experiment:experiment()) -> ok | {error, {bench, error_reason()}}.
check(B, Exp) ->
    After = maps:get('after', Exp, #{}),
    Tool = maps:get(profile, After, undefined),
    Msacc = maps:get(msacc, After, false),
    Live = maps:get(telemetry, Exp, none) =/= none,
    Opt = fun(K) -> {ok, O} = beamlab_schema:find(K, schema()), {opt, O} end,
    Refuse = fun(Format, Args) -> {error, {bench, {option, {rule, Format, Args}}}} end,
    case baseline(B) of
        {error, few} ->
            Refuse("~ts needs at least two codes to compare", [Opt(baseline)]);
        {error, {bad_baseline, Bl}} ->
            Refuse("~ts '~ts' is neither a job number nor a job's label", [Opt(baseline), {value, Bl}]);
        ok when is_map_key(flavor, map_get(options, B)) ->
            %% (an emulator flavour this OTP installation lacks: before anything runs)
            case flavor(maps:get(flavor, maps:get(options, B))) of
                ok -> check(maps:update_with(options, fun(O) -> maps:remove(flavor, O) end, B), Exp);
                {error, R} -> {error, {bench, {flavor, R}}}
            end;
        ok when Msacc, Tool =:= undefined orelse not Live ->
            %% (`verbose' or `telemetry' in the library, -v on the command line)
            Refuse("~ts needs ~ts and live telemetry (~ts)",
                   [Opt(msacc), Opt(profile), {opt, #{name => verbose, short => "v"}}]);
        ok when Tool =/= undefined ->
            case lists:member(Tool, beamlab_engine_after:tools()) of
                true -> ok;
                false -> {error, {bench, {unsupported_tool, Tool, erlang:system_info(otp_release)}}}
            end;
        ok ->
            ok
    end.

flavor(undefined) ->
    ok;
flavor(F) ->
    case beamlab_runtime_peer:flavor_args(#{flavor => F}) of
        {ok, _} -> ok;
        {error, _} = E -> E
    end.

baseline(#{jobs := Jobs, options := #{baseline := _}}) when length(Jobs) < 2 ->
    {error, few};
baseline(#{jobs := Jobs, options := #{baseline := Bl}}) when Bl =/= undefined ->
    case beamlab_engine:baseline(Bl, Jobs) of
        {ok, _} -> ok;
        {error, _} = E -> E
    end;
baseline(_) ->
    ok.

root(#{root := Root}) ->
    Root;
root(_) ->
    {ok, Cwd} = file:get_cwd(),
    Cwd.

after_phase(_Jobs, Doc = #{partial := true}, _After) ->
    Doc;
after_phase(Jobs, Doc = #{benchmarks := Bs}, After) ->
    Tool = maps:get(profile, After, undefined),
    Mem = maps:get(memory, After, false),
    Reds = maps:get(reductions, After, false),
    case Tool =:= undefined andalso not Mem andalso not Reds of
        true -> Doc;
        false when length(Jobs) =/= length(Bs) -> Doc;
        false ->
            Msacc = maps:get(msacc, After, false),
            Doc#{benchmarks := [phases(J, B, Tool, Mem, Reds, Msacc) || {J, B} <- lists:zip(Jobs, Bs)]}
    end.

phases(_Job, B = #{extra := #{<<"status">> := <<"failed">>}}, _Tool, _Mem, _Reds, _Msacc) ->
    B;
phases(Job, B = #{extra := Extra}, Tool, Mem, Reds, Msacc) ->
    E1 = case Mem orelse Reds of
             false -> Extra;
             true -> Extra#{<<"per_iteration">> => phase(beamlab_engine_after:per_iteration(
                                                            Job, #{memory => Mem, reductions => Reds}))}
         end,
    E2 = case Tool of
             undefined -> E1;
             _ -> E1#{<<"profile">> => phase(beamlab_engine_after:profile(Job, Tool, #{msacc => Msacc}))}
         end,
    B#{extra := beamlab_json:canonical(E2)}.

phase({ok, M}) -> M;
phase({error, R}) -> #{<<"error">> => iolist_to_binary(beamlab_engine_after:format_error(R))}.

%% @doc Interrupted when partial; failed when a job failed (each told in
%% one line, `LABEL: ERROR'; jobs not run because the VM stopped before
%% them are only shown in the document).
-spec verdict(beamlab_result:result()) -> beamlab_experiment:verdict().
verdict(Doc) ->
    Failed = [B || B = #{extra := #{<<"status">> := <<"failed">>}} <- maps:get(benchmarks, Doc)],
    Lines = [[N, ": ", E] || #{name := N, extra := #{<<"error">> := E} = X} <- Failed,
                             not maps:get(<<"not_run">>, X, false)],
    if
        map_get(partial, Doc) -> {interrupted, Lines};
        Failed =/= [] -> {failed, Lines};
        true -> {ok, Lines}
    end.

%% @doc Code that does not compile and options that do not fit are the
%% caller's mistakes.
-spec error_class(error_reason()) -> usage | failure.
error_class({option, _}) -> usage;
error_class({compile, _, _, _}) -> usage;
error_class({bad_option, _, _}) -> usage;
error_class({conflict, _, _}) -> usage;
error_class({bad_baseline, _}) -> usage;
error_class({bad_vm_args, _}) -> usage;
error_class({min_above_max, _, _}) -> usage;
error_class({no_such_directory, _}) -> usage;
error_class({unsupported_tool, _, _}) -> usage;
error_class({flavor, _}) -> failure;
error_class({project, {tool, _}}) -> failure;
error_class({project, {tmp_dir, _}}) -> failure;
error_class({project, _}) -> usage;
error_class(_) -> failure.

%% @doc One line for each error.
-spec format_error(error_reason()) -> unicode:chardata().
format_error(Reason) ->
    beamlab_format_reason:line(fun error_line/1, Reason).

error_line({option, R}) ->
    beamlab_schema:format_error(R);
error_line({flavor, R}) ->
    ["--flavor: ", beamlab_runtime_otp:format_error(R)];
error_line({unsupported_tool, _, _} = R) ->
    beamlab_engine_after:format_error(R);
error_line({no_such_directory, D}) ->
    io_lib:format("code path ~ts: no such directory", [D]);
error_line({project, {no_such_directory, D}}) ->
    io_lib:format("code path ~ts: no such directory", [D]);
error_line({project, {tmp_dir, Why}}) ->
    ["cannot create a temporary directory: ", beamlab_runtime_file:format_error(Why)];
error_line({project, no_runnable_benchmark}) ->
    "no benchmark of the bench modules can run (each one's code fails to compile)";
error_line({project, R}) ->
    %% (one line per mistake in the bench modules)
    beamlab_project_bench:format_error(R);
error_line(R) ->
    beamlab_engine:format_error(R).
