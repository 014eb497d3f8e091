%%% @doc Collects samples from one or more jobs.
%%%
%%% Sampling is done in rounds. With several jobs, a round runs the jobs one
%%% after another (the others are suspended), and the order rotates every
%%% round: job 1, 2, 3, then 2, 3, 1, then 3, 1, 2, ... So jobs never compete
%%% for cores, and a slow drift of machine speed (thermal throttling, a
%%% neighbour's load) is spread evenly over all jobs instead of hitting the
%%% one that happened to run last. A single job simply keeps running and is
%%% read at every sample boundary, except when the scheduler threads' CPU
%%% time is measured (`cpu'): then every job is read while suspended.
%%%
%%% Continuous mode: a sample is the number of iterations the job's workers
%%% completed during one sample duration (read from the job's counter).
%%% Timed mode: a sample is the time in nanoseconds that one worker took to
%%% run exactly `loop' iterations.
%%%
%%% The first `warmup' rounds are discarded. Then sampling stops after
%%% `samples' rounds, or, with a stopping rule (`rel_ci' or `cv', fractions:
%%% 0.05 is 5%), when every job satisfies {@link beamlab_stats:converged/2}
%%% (at least `samples' rounds; `rel_ci' on all samples, `cv' on the last
%%% `samples' ones, as erlperf), capped by `max_samples' rounds and
%%% `max_time' ms.
%%%
%%% A `{beamlab_interrupt, _}' message to the calling process ends sampling
%%% early; the result then says `interrupted => true'. A continuous job whose
%%% counter does not move for `deadline' ms of its own running time, or a
%%% timed sample that takes longer than `deadline', fails that job; the
%%% other jobs carry on.
%%%
%%% `checkpoint' (a fun, default `undefined') is called with the job about
%%% to run and every job's outcome so far, before a job's code runs in a
%%% round when another job ran last, and otherwise at most once a second
%%% ({@link beamlab_runtime_checkpoint:due/3}): never inside a sample's
%%% timed interval. It keeps what was measured if the code stops the VM.
-module(beamlab_engine_sampler).

-export([run/2, default_opts/0]).

-export_type([opts/0, outcome/0, progress/0]).

-type opts() :: #{mode := continuous | timed,
                  duration := pos_integer(),          % ms per sample (continuous)
                  loop := pos_integer(),              % iterations per sample (timed)
                  samples := pos_integer(),
                  warmup := non_neg_integer(),
                  rel_ci := undefined | float(),
                  cv := undefined | float(),
                  max_samples := pos_integer(),
                  max_time := pos_integer(),          % ms
                  deadline := pos_integer(),          % ms
                  busy_wait := boolean(),
                  progress := undefined | fun((progress()) -> any()),
                  checkpoint => undefined | fun((pos_integer(), [outcome()]) -> ok),
                  cpu => undefined | beamlab_runtime_cpu:threads(),
                  origin => integer()}.                % monotonic ms `ends' count from
%% Reported after every round: samples kept so far per job (by position).
-type progress() :: #{round := pos_integer(), warmup := boolean(),
                      samples := [{pos_integer(), non_neg_integer()}]}.
-type outcome() :: #{samples := [number()],
                     times := [non_neg_integer()],    % actual ns per sample
                     cpu => [non_neg_integer()],      % scheduler CPU ns per sample (`cpu')
                     ends => [integer()],             % when each sample ended, ms since `origin'
                     status := ok | {error, beamlab_engine_job:failure()}}.

%% @doc Default sampling options (erlperf's defaults: 3 samples of 1 s).
-spec default_opts() -> opts().
default_opts() ->
    #{mode => continuous, duration => 1000, loop => 1, samples => 3, warmup => 0,
      rel_ci => undefined, cv => undefined, max_samples => 1000, max_time => 600000,
      deadline => 30000, busy_wait => false, progress => undefined, checkpoint => undefined,
      cpu => undefined}.

%% @doc Samples the jobs. Returns each job's outcome (in the given order)
%% and whether the run was interrupted.
-spec run([beamlab_engine_job:job()], opts()) ->
          {[outcome()], #{interrupted := boolean(), rounds := non_neg_integer()}}.
run(Jobs, Opts0) ->
    Opts = maps:merge(default_opts(), Opts0),
    Ids = lists:seq(1, length(Jobs)),
    JobMap = maps:from_list(lists:zip(Ids, Jobs)),
    Init = maps:from_list([{I, #{samples => [], times => [], cpu => [], ends => [], status => ok, idle => 0}}
                           || I <- Ids]),
    %% (Measuring CPU time, a lone job is paused between samples too: its
    %% counter and CPU time are read while it is suspended, see sample/2.)
    Solo = length(Jobs) =:= 1 andalso maps:get(mode, Opts) =:= continuous
        andalso maps:get(cpu, Opts) =:= undefined,
    %% A lone continuous job runs from here on: its checkpoint comes first.
    Pace = case Solo of
               true -> checkpoint(1, Init, Opts, none);
               false -> none
           end,
    _ = Solo andalso resume(JobMap, 1, Init),
    Start = erlang:monotonic_time(millisecond),
    Opts1 = Opts#{solo => Solo, origin => maps:get(origin, Opts, Start)},
    {Final, Interrupted, Rounds} = rounds(0, Ids, JobMap, Init, Opts1, Start, Pace),
    _ = Solo andalso maps:get(status, maps:get(1, Final)) =:= ok
        andalso beamlab_engine_job:pause(maps:get(1, JobMap)),
    {outcomes(Final), #{interrupted => Interrupted, rounds => Rounds}}.

outcomes(Acc) ->
    [begin
         #{samples := S, times := T, cpu := Cpu, ends := E, status := St} = maps:get(I, Acc),
         O = #{samples => lists:reverse(S), times => lists:reverse(T), ends => lists:reverse(E), status => St},
         case Cpu of
             [] -> O;
             _ -> O#{cpu => lists:reverse(Cpu)}
         end
     end || I <- lists:sort(maps:keys(Acc))].

%% Before job I's code runs (outside every timed interval).
checkpoint(_I, _Acc, #{checkpoint := undefined}, Pace) ->
    Pace;
checkpoint(I, Acc, #{checkpoint := Save}, Pace) ->
    case beamlab_runtime_checkpoint:due(I, Pace, erlang:monotonic_time(millisecond)) of
        false ->
            Pace;
        {true, Pace1} ->
            ok = Save(I, outcomes(Acc)),
            Pace1
    end.

%%====================================================================
%% Rounds
%%====================================================================

rounds(Round, Ids, JobMap, Acc, Opts, Start, Pace) ->
    Alive = [I || I <- rotate(Ids, Round), maps:get(status, maps:get(I, Acc)) =:= ok],
    case Alive =:= [] orelse finished(Round, Acc, Opts, Start) of
        true ->
            {Acc, false, kept_rounds(Round, Opts)};
        false ->
            case round(Alive, JobMap, Acc, Round < maps:get(warmup, Opts), Opts, Pace) of
                {interrupted, Acc1, _} ->
                    {Acc1, true, kept_rounds(Round, Opts)};
                {ok, Acc1, Pace1} ->
                    report(Round + 1, Acc1, Opts),
                    rounds(Round + 1, Ids, JobMap, Acc1, Opts, Start, Pace1)
            end
    end.

kept_rounds(Round, #{warmup := W}) -> max(0, Round - W).

rotate(Ids, Round) ->
    K = Round rem length(Ids),
    {A, B} = lists:split(K, Ids),
    B ++ A.

finished(Round, Acc, #{warmup := W, samples := S} = Opts, Start) ->
    Kept = Round - W,
    Rule = maps:get(rel_ci, Opts) =/= undefined orelse maps:get(cv, Opts) =/= undefined,
    if
        Kept < S ->
            false;
        not Rule ->
            true;
        Kept >= map_get(max_samples, Opts) ->
            true;
        true ->
            Elapsed = erlang:monotonic_time(millisecond) - Start,
            Elapsed >= map_get(max_time, Opts) orelse all_converged(Acc, Opts)
    end.

%% `rel_ci' holds for all samples (the interval narrows as samples come);
%% `cv' for the last `samples' of them, as erlperf's `--cv' does (the
%% spread of a window falls once the machine is steady; that of all
%% samples would not). The newest sample is first in `S'.
all_converged(Acc, Opts) ->
    Window = max(2, maps:get(samples, Opts)),
    RelCi = #{rel_ci => maps:get(rel_ci, Opts), min => Window},
    Cv = #{cv => maps:get(cv, Opts), min => Window},
    lists:all(fun(#{status := ok} = M) ->
                      S = judged(M, Opts),
                      beamlab_stats:converged(S, RelCi)
                          andalso beamlab_stats:converged(lists:sublist(S, Window), Cv);
                 (_) -> true
              end, maps:values(Acc)).

%% What the stopping rule judges: the samples, or with `cpu' the CPU time
%% per iteration of each sample (newest first, as the samples).
judged(#{samples := S}, #{cpu := undefined}) ->
    S;
judged(#{samples := S, cpu := Cpu}, #{mode := Mode, loop := Loop}) ->
    [Ns / case Mode of timed -> Loop; continuous -> N end
     || {N, Ns} <- lists:zip(S, Cpu), Mode =:= timed orelse N > 0].

report(Round, Acc, #{progress := Progress, warmup := W}) when is_function(Progress, 1) ->
    _ = Progress(#{round => Round, warmup => Round =< W,
                   samples => [{I, length(S)} || {I, #{samples := S}} <- lists:sort(maps:to_list(Acc))]}),
    ok;
report(_, _, _) ->
    ok.

round([], _JobMap, Acc, _Warm, _Opts, Pace) ->
    {ok, Acc, Pace};
round([I | Rest], JobMap, Acc, Warm, Opts, Pace) ->
    Job = maps:get(I, JobMap),
    Pace1 = checkpoint(I, Acc, Opts, Pace),
    case sample(Job, Opts) of
        interrupted ->
            {interrupted, Acc, Pace1};
        {ok, Value, Ns, Cpu} ->
            %% (rounds rotate the jobs: a sample's place in its job's list
            %% does not say when it was taken)
            End = erlang:monotonic_time(millisecond) - maps:get(origin, Opts),
            Acc1 = case Warm of
                       true -> Acc;
                       false -> record(I, {Value, Ns, Cpu, End}, Acc)
                   end,
            round(Rest, JobMap, check_idle(I, Job, Value, Ns, Acc1, Opts), Warm, Opts, Pace1);
        {error, Failure} ->
            round(Rest, JobMap, set_status(I, {error, Failure}, Acc), Warm, Opts, Pace1)
    end.

record(I, {Value, Ns, Cpu, End}, Acc) ->
    maps:update_with(I, fun(#{samples := S, times := T, cpu := C, ends := E} = M) ->
                                M#{samples := [Value | S], times := [Ns | T], ends := [End | E],
                                   cpu := case Cpu of none -> C; _ -> [Cpu | C] end}
                        end, Acc).

set_status(I, Status, Acc) ->
    maps:update_with(I, fun(M) -> M#{status := Status} end, Acc).

%% A continuous job with no completed iteration for `deadline' ms of its own
%% running time is hung: fail it so the other jobs can finish.
check_idle(I, Job, Value, Ns, Acc, #{mode := continuous, deadline := Deadline}) ->
    #{idle := Idle} = maps:get(I, Acc),
    Idle1 = case Value of
                0 -> Idle + Ns;
                _ -> 0
            end,
    case Idle1 >= Deadline * 1000000 of
        true ->
            Failure = {runner_timeout, Deadline},
            ok = beamlab_engine_job:abort(Job, Failure),
            maps:update_with(I, fun(M) -> M#{idle := Idle1, status := {error, Failure}} end, Acc);
        false ->
            maps:update_with(I, fun(M) -> M#{idle := Idle1} end, Acc)
    end;
check_idle(_I, _Job, _Value, _Ns, Acc, _Opts) ->
    Acc.

%%====================================================================
%% One sample
%%====================================================================

sample(Job, #{mode := timed, loop := N, cpu := Threads}) ->
    case interrupt_pending() of
        true -> interrupted;
        false ->
            Cpu0 = cpu(Threads),
            case timed_sample(Job, N) of
                {ok, Value, Ns} -> {ok, Value, Ns, cpu_since(Threads, Cpu0)};
                Other -> Other
            end
    end;
sample(Job, #{mode := continuous, duration := D, cpu := Threads} = Opts) when Threads =/= undefined ->
    %% `--metric cpu': the counter and the threads' CPU time are read while
    %% the job is suspended, before it resumes and after it pauses, so both
    %% cover the same work. Read while it runs, a thread's CPU time lags
    %% by up to a kernel tick (Linux updates a running thread's
    %% `schedstat' at ticks and context switches only): with 50 ms samples
    %% on a loaded machine that put +-50% on a sample; read paused, the
    %% same iteration's CPU time varied by ~5% at a load average of 15
    %% (docs/statistics.md).
    Counter = beamlab_engine_job:counter(Job),
    Cpu0 = cpu(Threads),
    C0 = counters:get(Counter, 1),
    T0 = erlang:monotonic_time(),
    case beamlab_engine_job:resume(Job) of
        {error, _} = E ->
            E;
        ok ->
            Waited = wait(T0 + erlang:convert_time_unit(D, millisecond, native), Opts),
            Paused = beamlab_engine_job:pause(Job),
            T1 = erlang:monotonic_time(),
            C1 = counters:get(Counter, 1),
            Cpu = cpu_since(Threads, Cpu0),
            case {Waited, Paused} of
                {interrupted, _} -> interrupted;
                {ok, {error, _} = E} -> E;
                {ok, ok} ->
                    case beamlab_engine_job:status(Job) of
                        ok -> {ok, C1 - C0, erlang:convert_time_unit(T1 - T0, native, nanosecond), Cpu};
                        {error, _} = E -> E
                    end
            end
    end;
sample(Job, #{mode := continuous, duration := D, solo := Solo} = Opts) ->
    Counter = beamlab_engine_job:counter(Job),
    case Solo orelse beamlab_engine_job:resume(Job) of
        {error, _} = E ->
            E;
        _ ->
            Threads = maps:get(cpu, Opts),
            Cpu0 = cpu(Threads),
            C0 = counters:get(Counter, 1),
            T0 = erlang:monotonic_time(),
            Waited = wait(T0 + erlang:convert_time_unit(D, millisecond, native), Opts),
            C1 = counters:get(Counter, 1),
            T1 = erlang:monotonic_time(),
            Cpu = cpu_since(Threads, Cpu0),
            Solo orelse beamlab_engine_job:pause(Job),
            case Waited of
                interrupted ->
                    interrupted;
                ok ->
                    case beamlab_engine_job:status(Job) of
                        ok -> {ok, C1 - C0, erlang:convert_time_unit(T1 - T0, native, nanosecond), Cpu};
                        {error, _} = E -> E
                    end
            end
    end.

%% A timed sample may take long (a huge `loop'): it is measured by a helper
%% so that an interrupt is honoured at once (the sample is abandoned).
timed_sample(Job, N) ->
    Self = self(),
    Ref = make_ref(),
    {_Pid, MRef} = spawn_monitor(fun() -> Self ! {Ref, beamlab_engine_job:measure(Job, N)} end),
    receive
        {Ref, Reply} ->
            erlang:demonitor(MRef, [flush]),
            case Reply of
                {ok, Ns} -> {ok, Ns, Ns};
                {error, _} = E -> E
            end;
        {'DOWN', MRef, process, _, Reason} ->
            {error, {job_down, Reason}};
        {beamlab_interrupt, _} = Msg ->
            self() ! Msg,
            ok = beamlab_engine_job:cancel(Job),
            receive {Ref, _} -> ok;
                    {'DOWN', MRef, process, _, _} -> ok
            end,
            erlang:demonitor(MRef, [flush]),
            interrupted
    end.

resume(JobMap, I, _Acc) ->
    beamlab_engine_job:resume(maps:get(I, JobMap)).

%% The scheduler threads' CPU time at a sample's boundary (`none' when
%% the run does not measure it).
cpu(undefined) -> none;
cpu(Threads) -> beamlab_runtime_cpu:read(Threads).

cpu_since(undefined, none) -> none;
cpu_since(Threads, Cpu0) -> max(0, beamlab_runtime_cpu:read(Threads) - Cpu0).

%% Sleeps until the native-time deadline; returns early on an interrupt.
%% Measuring CPU time, the sampler does not busy-wait: its spinning would
%% be counted (a sample's actual length is measured anyway).
wait(Until, #{busy_wait := true, cpu := undefined}) ->
    busy_wait(Until);
wait(Until, #{cpu := Threads}) when Threads =/= undefined ->
    Ms = erlang:convert_time_unit(Until - erlang:monotonic_time(), native, millisecond),
    receive
        {beamlab_interrupt, _} = Msg -> self() ! Msg, interrupted
    after max(0, Ms) -> ok
    end;
wait(Until, _Opts) ->
    Ms = erlang:convert_time_unit(Until - erlang:monotonic_time(), native, millisecond),
    receive
        {beamlab_interrupt, _} = Msg -> self() ! Msg, interrupted
    after max(0, Ms) ->
            %% `after' has millisecond resolution; finish the remainder exactly.
            busy_wait(Until)
    end.

busy_wait(Until) ->
    case erlang:monotonic_time() >= Until of
        true ->
            ok;
        false ->
            case interrupt_pending() of
                true -> interrupted;
                false -> busy_wait(Until)
            end
    end.

%% The interrupt stays in the mailbox so later checks (and the caller) see it.
interrupt_pending() ->
    receive
        {beamlab_interrupt, _} = Msg -> self() ! Msg, true
    after 0 -> false
    end.
