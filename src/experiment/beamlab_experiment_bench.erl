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
                      | msacc_needs_profile
                      | beamlab_engine_after:error_reason()
                      | {project, beamlab_experiment_project:error_reason()}.
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
    Workers = #{max => erlang:system_info(process_limit) div 2,
                max_why => "half the VM's process limit; raise it with +P"},
    Samples = #{max => 1000000, max_why => "a million samples"},
    Day = #{max => 86400000, max_why => "one day"},
    Squeeze = #{requires => [squeeze]},
    [Workers#{name => concurrency, short => "c", type => pos_integer},
     Samples#{name => samples, short => "s", type => pos_integer},
     Samples#{name => warmup, short => "w", type => non_neg_integer},
     #{name => loop, short => "l", type => quantity, max => 1000000000000000,
       conflicts => [{concurrency, "~ts (timed mode) runs one worker; it cannot be combined with ~ts"},
                     {squeeze, "~ts (timed mode) and ~ts (concurrency estimation) cannot be combined"}]},
     #{name => squeeze, short => "q", type => boolean,
       conflicts => [{concurrency, "~ts chooses the concurrency itself; drop ~ts or use --min"}]},
     %% (after loop and squeeze: the order of the checks is the schema's)
     Day#{name => duration, short => "d", type => pos_integer,
          conflicts => [{loop, "~ts sets the sample time of continuous mode; ~ts (timed mode) counts "
                               "iterations instead"}]},
     (maps:merge(Workers, Squeeze))#{name => min, long => "min", type => pos_integer},
     (maps:merge(Workers, Squeeze))#{name => max, long => "max", type => pos_integer},
     (maps:merge(Workers, Squeeze))#{name => step, long => "step", type => pos_integer},
     (maps:merge(Samples, Squeeze))#{name => threshold, short => "t", type => pos_integer},
     #{name => rel_ci, long => "rel-ci", type => fraction},
     #{name => cv, long => "cv", type => fraction},
     Samples#{name => max_samples, long => "max-samples", type => pos_integer, requires => [rel_ci, cv]},
     %% (the library's is in ms, the command line's in seconds: no bound here)
     #{name => max_time, long => "max-time", type => pos_number, requires => [rel_ci, cv]},
     Day#{name => deadline, long => "deadline", type => pos_integer},
     #{name => isolated, short => "i", type => boolean},
     #{name => vm_args, long => "vm-args", type => string, requires => [isolated],
       requires_format => "~ts applies to the fresh VMs of ~ts; add it"},
     #{name => flavor, long => "flavor", type => {enum, [jit, emu]}, requires => [isolated],
       requires_format => "~ts applies to the fresh VMs of ~ts; add it"},
     #{name => metric, long => "metric", type => {enum, [time, cpu]},
       conflicts => [{squeeze, "~ts measures per iteration; ~ts (concurrency estimation) "
                               "measures throughput: use one"}]}].

%% @doc Checks the options given (the engine's keys; `squeeze' true, and
%% its bounds `min', `max', `step', `threshold' beside it) against the
%% schema, and that a concurrency estimation's first concurrency is not
%% above its last. The command line checks its flags here too.
-spec check_options(#{atom() => term()}) -> ok | {error, beamlab_schema:error_reason()}.
check_options(Given) ->
    Schema = schema(),
    case beamlab_schema:check(Schema, maps:with([N || #{name := N} <- Schema], Given)) of
        ok -> squeeze_range(Schema, Given);
        {error, _} = E -> E
    end.

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
    Options = maps:with(maps:keys(beamlab_engine:default_run_opts()), Opts),
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

%% @doc The after-phase options that cannot work, before anything runs:
%% `msacc' without a profiler and live telemetry, a profiler this OTP
%% release lacks.
-spec check(bench(), beamlab_experiment:experiment()) -> ok | {error, {bench, error_reason()}}.
check(_B, Exp) ->
    After = maps:get('after', Exp, #{}),
    Tool = maps:get(profile, After, undefined),
    Msacc = maps:get(msacc, After, false),
    Live = maps:get(telemetry, Exp, none) =/= none,
    if
        Msacc, Tool =:= undefined orelse not Live ->
            {error, {bench, msacc_needs_profile}};
        Tool =/= undefined ->
            case lists:member(Tool, beamlab_engine_after:tools()) of
                true -> ok;
                false -> {error, {bench, {unsupported_tool, Tool, erlang:system_info(otp_release)}}}
            end;
        true ->
            ok
    end.

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
error_class(msacc_needs_profile) -> usage;
error_class({unsupported_tool, _, _}) -> usage;
error_class({project, {tool, _}}) -> failure;
error_class({project, {tmp_dir, _}}) -> failure;
error_class({project, _}) -> usage;
error_class(_) -> failure.

%% @doc One line for each error.
-spec format_error(error_reason()) -> unicode:chardata().
format_error({option, R}) ->
    beamlab_schema:format_error(R);
format_error(msacc_needs_profile) ->
    "microstate accounting (msacc) needs a profiler and telemetry (--profile TOOL and -v)";
format_error({unsupported_tool, _, _} = R) ->
    beamlab_engine_after:format_error(R);
format_error({no_such_directory, D}) ->
    io_lib:format("code path ~ts: no such directory", [D]);
format_error({project, {no_such_directory, D}}) ->
    io_lib:format("code path ~ts: no such directory", [D]);
format_error({project, {tmp_dir, Why}}) ->
    ["cannot create a temporary directory: ", beamlab_runtime_file:format_error(Why)];
format_error({project, no_runnable_benchmark}) ->
    "no benchmark of the bench modules can run (each one's code fails to compile)";
format_error({project, R}) ->
    %% (one line per mistake in the bench modules)
    beamlab_project_bench:format_error(R);
format_error(R) ->
    beamlab_engine:format_error(R).
