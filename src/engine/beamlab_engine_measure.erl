%%% @doc Measures benchmark jobs in this VM: compiles them, starts them,
%%% samples them (continuous, timed or concurrency estimation), stops them
%%% and returns one raw outcome per job. {@link beamlab_engine:run/3} calls
%%% it for a run in this VM, {@link beamlab_engine_isolated} inside each
%%% fresh VM. A compile error is `{error, Reason}' (nothing is measured).
-module(beamlab_engine_measure).

-export([measure/3, finish/2, empty/1, metric_families/2]).

%% @doc Measures the jobs in this VM and returns one raw outcome per job
%% (used by `beamlab_engine:run/3' and, inside each fresh VM, by the
%% isolated mode).
%% A compile error in any job is an error of the whole run; a failing hook
%% or runner only marks its own job. `RunOpts' has every key of
%% `beamlab_engine:run_opts()' (the caller merges the defaults), and
%% optionally `labels' and `save'.
-spec measure([beamlab_engine:job_spec()], beamlab_engine:options(),
              beamlab_engine:mode_opts()) ->
          {ok, #{outcomes := [beamlab_engine:outcome()], interrupted := boolean(),
                 telemetry := beamlab_runtime_telemetry:series()}}
        | {error, {compile, pos_integer(), binary(), term()}}.
measure(Jobs, RunOpts, ModeOpts) ->
    try [compile_job(I, J) || {I, J} <- lists:zip(lists:seq(1, length(Jobs)), Jobs)] of
        Execs -> {ok, measure_compiled(Execs, RunOpts, ModeOpts)}
    catch
        throw:{?MODULE, Compile} -> {error, Compile}
    end.

measure_compiled(Execs, RunOpts, ModeOpts) ->
    Save = maps:get(save, RunOpts, undefined),
    OldPrio = process_flag(priority, high),
    %% Processes started from here on (jobs, workers, what the benchmarked
    %% code spawns) are killed when their heap passes a share of the
    %% memory left, instead of the whole VM dying of it (their job fails).
    Headroom = beamlab_runtime_memory:headroom(),
    OldHeap = limit_heaps(beamlab_runtime_memory:heap_limit(Headroom)),
    try
        Started = start_jobs(Execs, RunOpts, Save),
        %% Memory held outside heaps (binaries, ETS) has a watermark.
        Watchdog = beamlab_engine_watchdog:start([J || {ok, J} <- Started], Headroom),
        %% One clock origin for the telemetry's `t_ms' and the samples'
        %% end times (`sample_end_ms'), so the report draws an instant at
        %% the same x in both charts (#35).
        Origin = erlang:monotonic_time(millisecond),
        Monitor = start_telemetry(Started, RunOpts, Origin),
        Result = try sample(Started, RunOpts#{origin => Origin}, ModeOpts, Save)
                 after beamlab_engine_watchdog:stop(Watchdog)
                 end,
        Telemetry = stop_telemetry(Monitor),
        Stopped = stop_jobs(Started, Result, Save),
        {Outcomes, Int} = finish(Result, Stopped),
        #{outcomes => Outcomes, interrupted => Int, telemetry => Telemetry}
    after
        process_flag(priority, OldPrio),
        _ = erlang:system_flag(max_heap_size, OldHeap),
        ok = beamlab_runtime_memory:unwatch_heap_limit(),
        _ = [beamlab_engine_code:purge(E) || E <- Execs]
    end.

limit_heaps(infinity) ->
    erlang:system_info(max_heap_size);
limit_heaps(Bytes) ->
    Words = Bytes div erlang:system_info(wordsize),
    %% The emulator's report of a kill tells a worker that hit the limit
    %% from one the code killed; the filter turns it into a message.
    ok = beamlab_runtime_memory:watch_heap_limit(),
    erlang:system_flag(max_heap_size, #{size => Words, kill => true, error_logger => true}).

%% The telemetry's rate columns are the jobs' iteration counters. With
%% live metrics, the counters and the telemetry are served there (the
%% telemetry recorded only when asked for).
start_telemetry(Started, #{telemetry := T, verbose := V} = RunOpts, Origin) ->
    Metrics = maps:get(metrics, RunOpts, undefined),
    case T orelse V orelse Metrics =/= undefined of
        false -> undefined;
        true ->
            Labels = maps:get(labels, RunOpts, [integer_to_binary(I) || I <- lists:seq(1, length(Started))]),
            Counters = [{L, beamlab_engine_job:counter(J)} || {L, {ok, J}} <- lists:zip(Labels, Started)],
            Rates = fun() -> [{L, counters:get(C, 1)} || {L, C} <- Counters] end,
            {ok, Pid} = beamlab_runtime_telemetry:start_link(#{print => V =:= true, rates => Rates, t0 => Origin}),
            _ = Metrics =:= undefined orelse serve(Metrics, Pid, Counters),
            {Pid, T orelse V}
    end.

serve(Server, Pid, Counters) ->
    beamlab_runtime_metrics:register(
      Server, run, fun() -> metric_families(beamlab_runtime_telemetry:last(Pid), Counters) end).

%% @doc What a run serves on `--metrics-port': each job's iteration
%% counter (`{Label, Counter}') and this VM's telemetry `Sample' (its
%% latest, `undefined' before the first), labelled with this node.
-spec metric_families(map() | undefined, [{binary(), counters:counters_ref()}]) ->
          [beamlab_runtime_metrics:family()].
metric_families(Sample, Counters) ->
    Node = [{<<"node">>, atom_to_binary(node())}],
    [#{name => <<"beamlab_run_iterations">>, type => counter,
       help => <<"Iterations each benchmark job has completed (rate() gives its throughput)">>,
       samples => [{Node ++ [{<<"job">>, L}], counters:get(C, 1)} || {L, C} <- Counters]}
     | beamlab_format_vm_metrics:families(Sample, Node)].

stop_telemetry(undefined) -> #{};
stop_telemetry({Pid, true}) -> beamlab_runtime_telemetry:stop(Pid);
stop_telemetry({Pid, false}) -> _ = beamlab_runtime_telemetry:stop(Pid), #{}.

compile_job(I, Job) ->
    case beamlab_engine_code:compile(Job) of
        {ok, Exec} -> Exec;
        {error, Reason} -> throw({?MODULE, {compile, I, beamlab_engine_code:job_label(Job), Reason}})
    end.

%% Each job's init hook runs in start_job/2: the checkpoint names it first.
start_jobs(Execs, RunOpts, Save) ->
    {Started, _} =
        lists:mapfoldl(fun(E, {I, Entries}) ->
                               checkpoint(Save, #{phase => init, current => I, entries => Entries}),
                               case start_job(E, RunOpts) of
                                   {ok, _} = S ->
                                       {S, {I + 1, Entries}};
                                   {error, F} = S ->
                                       {S, {I + 1, Entries#{I => {empty({error, F}), 0, undefined}}}}
                               end
                       end, {1, #{}}, Execs),
    Started.

%% Each job's done hook runs in stop_job/1; after the last one, the run is
%% measured (what follows, e.g. --profile, blames no job).
stop_jobs(Started, {PerJob, _Int}, Save) ->
    Entries = maps:from_list(lists:zip(lists:seq(1, length(PerJob)), PerJob)),
    Stopped = [begin
                   checkpoint(Save, #{phase => done, current => I, entries => Entries}),
                   stop_job(S)
               end || {I, S} <- lists:zip(lists:seq(1, length(Started)), Started)],
    _ = Save =/= undefined andalso
        begin
            {Outcomes, _} = finish({PerJob, false}, Stopped),
            Final = [{I, {maps:with([samples, times, cpu, status], O), C, Curve}}
                     || {I, O, {_, C, Curve}} <- lists:zip3(lists:seq(1, length(PerJob)),
                                                           Outcomes, PerJob)],
            checkpoint(Save, #{phase => finished, current => none,
                               entries => maps:from_list(Final)})
        end,
    Stopped.

start_job(Exec, #{deadline := Deadline}) ->
    case beamlab_engine_job:start(Exec, #{deadline => Deadline}) of
        {ok, Job} -> {ok, Job};
        {error, Failure} -> {error, Failure}
    end.

stop_job({ok, Job}) -> beamlab_engine_job:stop(Job);
stop_job({error, _} = E) -> E.

%% Returns per job {Outcome, Concurrency, Curve} and whether an interrupt
%% came.
sample(Started, RunOpts, ModeOpts, Save) ->
    SOpts = sampler_opts(RunOpts),
    Indexed = lists:zip(lists:seq(1, length(Started)), Started),
    Failed = maps:from_list([{I, {empty({error, F}), 0, undefined}} || {I, {error, F}} <- Indexed]),
    case ModeOpts of
        undefined ->
            Live = [{I, J} || {I, {ok, J}} <- Indexed],
            C = case maps:get(mode, SOpts) of
                    timed -> 1;
                    continuous -> maps:get(concurrency, RunOpts)
                end,
            %% Workers run init_runner as they start.
            Ready = [case maps:get(mode, SOpts) of
                         timed -> ok;
                         continuous ->
                             checkpoint(Save, #{phase => init_runner, current => I, entries => Failed}),
                             beamlab_engine_job:set_concurrency(J, C)
                     end || {I, J} <- Live],
            RunnableAt = [IJ || {IJ, ok} <- lists:zip(Live, Ready)],
            Runnable = [J || {_, J} <- RunnableAt],
            SOpts1 = SOpts#{checkpoint => sampler_checkpoint(Save, [I || {I, _} <- RunnableAt], C,
                                                             Failed)},
            {Outs, #{interrupted := Int}} = case Runnable of
                                                 [] -> {[], #{interrupted => false}};
                                                 _ -> beamlab_engine_sampler:run(Runnable, SOpts1)
                                             end,
            ByJob = maps:from_list(lists:zip(Runnable, Outs)),
            {[case S of
                  {ok, J} ->
                      case maps:find(J, ByJob) of
                          {ok, O} -> {O, C, undefined};
                          error -> {empty(beamlab_engine_job:status(J)), C, undefined}
                      end;
                  {error, F} ->
                      {empty({error, F}), 0, undefined}
              end || S <- Started], Int};
        Squeeze when is_map(Squeeze) ->
            squeeze(Started, SOpts, Squeeze, [], false, Save)
    end.

%% The sampler's checkpoints, by position among the runnable jobs, become
%% the run's: every job's outcome so far, by position among all jobs.
sampler_checkpoint(undefined, _Positions, _C, _Failed) ->
    undefined;
sampler_checkpoint(Save, Positions, C, Failed) ->
    fun(K, Outs) ->
            Entries = maps:from_list([{I, {O, C, undefined}} || {I, O} <- lists:zip(Positions, Outs)]),
            Save(#{phase => sampling, current => lists:nth(K, Positions),
                   entries => maps:merge(Failed, Entries)})
    end.

%% Each job is searched on its own; an interrupt ends the whole run.
squeeze(Started, SOpts, Q, Acc, Int, Save) ->
    squeeze(Started, SOpts, Q, Acc, Int, Save, 1).

squeeze([], _SOpts, _Q, Acc, Int, _Save, _I) ->
    {lists:reverse(Acc), Int};
squeeze([{error, F} | Rest], SOpts, Q, Acc, Int, Save, I) ->
    squeeze(Rest, SOpts, Q, [{empty({error, F}), 0, []} | Acc], Int, Save, I + 1);
squeeze([{ok, _J} | Rest], SOpts, Q, Acc, true, Save, I) ->
    squeeze(Rest, SOpts, Q, [{empty(ok), 0, []} | Acc], true, Save, I + 1);
squeeze([{ok, J} | Rest], SOpts, Q, Acc, false, Save, I) ->
    Done = maps:from_list(lists:zip(lists:seq(1, length(Acc)), lists:reverse(Acc))),
    checkpoint(Save, #{phase => sampling, current => I, entries => Done}),
    Checkpoint = case Save of
                     undefined -> undefined;
                     _ -> fun(#{best := B, curve := Cv}) ->
                                  Save(#{phase => sampling, current => I,
                                         entries => Done#{I => squeeze_entry(B, Cv, ok)}})
                          end
                 end,
    #{best := Best, curve := Curve, interrupted := Int, status := Status} =
        beamlab_engine_squeeze:run(J, SOpts, Q, Checkpoint),
    _ = beamlab_engine_job:set_concurrency(J, 0),
    squeeze(Rest, SOpts, Q, [squeeze_entry(Best, Curve, Status) | Acc], Int, Save, I + 1).

squeeze_entry(undefined, Curve, Status) -> {empty(Status), 0, Curve};
squeeze_entry(#{concurrency := C, outcome := O}, Curve, Status) -> {O#{status := Status}, C, Curve}.

%% @doc The outcome of a job with no sample.
-spec empty(term()) -> #{samples := [], times := [], status := term()}.
empty(Status) -> #{samples => [], times => [], status => Status}.

%% @doc Per job {Outcome, Concurrency, Curve} and the status its stop
%% returned, as the outcomes of the run (also rebuilt by
%% beamlab_engine:recover/2 from a checkpoint).
-spec finish({[{map(), non_neg_integer(), undefined | [map()]}], boolean()}, [term()]) ->
          {[beamlab_engine:outcome()], boolean()}.
finish({PerJob, Int}, Stopped) ->
    Outcomes = [begin
                    Status = case {maps:get(status, O), Stop} of
                                 {ok, {error, F}} -> {error, F};
                                 {S, _} -> S
                             end,
                    Base0 = #{samples => maps:get(samples, O), times => maps:get(times, O),
                              status => Status, concurrency => C, label => <<>>},
                    Base = maps:merge(Base0, maps:with([cpu, ends], O)),
                    case Curve of
                        undefined -> Base;
                        _ -> Base#{curve => [#{concurrency => PC, mean => PM, samples => PS}
                                             || #{concurrency := PC, mean := PM,
                                                  outcome := #{samples := PS}} <- Curve]}
                    end
                end || {{O, C, Curve}, Stop} <- lists:zip(PerJob, Stopped)],
    {Outcomes, Int}.

sampler_opts(RunOpts) ->
    Mode = case maps:get(loop, RunOpts) of
               undefined -> continuous;
               _ -> timed
           end,
    #{mode => Mode, duration => maps:get(duration, RunOpts),
      loop => case maps:get(loop, RunOpts) of undefined -> 1; L -> L end,
      samples => maps:get(samples, RunOpts), warmup => maps:get(warmup, RunOpts),
      rel_ci => maps:get(rel_ci, RunOpts), cv => maps:get(cv, RunOpts),
      max_samples => maps:get(max_samples, RunOpts), max_time => maps:get(max_time, RunOpts),
      deadline => maps:get(deadline, RunOpts),
      busy_wait => maps:get(busy_wait, RunOpts) =:= true,
      progress => maps:get(progress, RunOpts),
      origin => maps:get(origin, RunOpts, erlang:monotonic_time(millisecond)),
      cpu => cpu_threads(maps:get(metric, RunOpts, time))}.

%% beamlab_engine:run/3 has checked that the threads can be read here
%% (a fresh VM runs on the same machine).
cpu_threads(cpu) ->
    case beamlab_runtime_cpu:threads() of
        {ok, Threads} -> Threads;
        {error, _} -> undefined
    end;
cpu_threads(_) ->
    undefined.

checkpoint(undefined, _Progress) -> ok;
checkpoint(Save, Progress) -> Save(Progress).
