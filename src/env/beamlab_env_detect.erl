%%% @doc Pathology detectors: turn a telemetry series, the environment
%%% report and a result into findings, each with its evidence and advice.
%%%
%%% Detectors: scheduler imbalance/collapse, schedulers left offline while
%%% work waits, cgroup CPU throttling, busy-wait inflating OS CPU, timer
%%% inaccuracy, a machine overloaded by other processes (steal, others'
%%% CPU) and measurements too noisy to trust. Each looks only at the
%%% data it is given, so tests can feed real or constructed series.
%%%
%%% The telemetry series and the environment report are read as JSON
%%% objects (binary keys), so a fresh series or report and the sections of
%%% a saved document are judged alike.
-module(beamlab_env_detect).

-export([findings/1, attach/2]).

-type input() :: #{telemetry => map(), env => map(), result => map(),
                   timer => beamlab_runtime_probe:timer_report() | skip}.
-export_type([input/0]).

%% Thresholds, per-scheduler utilisation in percent. With runnable work
%% queued, a healthy VM keeps every online scheduler near 100% (idle ones
%% steal); one under IDLE is not getting work. On an overloaded host the
%% idle scheduler's own overhead shows as 50-60% "active" wall time, hence
%% the generous IDLE.
-define(BUSY, 90).
-define(IDLE, 75).
-define(CONSECUTIVE, 3).
-define(CONSECUTIVE_SINGLE, 5).  % samples when never more than one process waits
-define(REL_CI, 0.05).
-define(CV, 0.10).
-define(TIMER_MEDIAN_US, 2000).

%% @doc All findings for the given data. Missing inputs skip the detectors
%% that need them. `timer' is a {@link beamlab_runtime_probe:timer/1}
%% report; when absent a short check runs now, `skip' disables it.
-spec findings(input()) -> [beamlab_result:finding()].
findings(In) ->
    T = beamlab_json:canonical(maps:get(telemetry, In, #{})),
    Env = beamlab_json:canonical(maps:get(env, In, #{})),
    Result = maps:get(result, In, #{}),
    Timer = case maps:get(timer, In, undefined) of
                undefined -> beamlab_runtime_probe:timer(#{});
                Tc -> Tc
            end,
    lists:append([scheduler_imbalance(T), schedulers_offline(T, Env), throttling(T, Env),
                  busy_wait(T), timer(Timer), overloaded(T, Env, kind(Result)), noisy(Result)]).

%% @doc Record a telemetry series in a finished result document and add
%% the findings on it, on the document and on the document's env to those
%% it already has (a command's own checks).
-spec attach(beamlab_runtime_telemetry:series(), beamlab_result:result()) -> beamlab_result:result().
attach(Series, Doc) ->
    New = findings(#{telemetry => Series, result => Doc, env => maps:get(env, Doc, #{})}),
    beamlab_result:add_findings(beamlab_result:set(telemetry, Series, Doc), New).

%%--------------------------------------------------------------------
%% Schedulers
%%--------------------------------------------------------------------

%% Some online schedulers busy, others idle, runnable work queued: the
%% load is not spreading (collapse, as seen on some cloud instance types).
%% A single queued process is often transient (one hot process on two
%% schedulers queues whatever lands behind it for an instant, until the
%% other scheduler wakes up and steals it): a queue that never exceeds one
%% must persist for five samples, not three, and only a queue of two or
%% more in every sample of the run (work an idle scheduler could take) is
%% critical.
scheduler_imbalance(T) ->
    Online = online(T),
    Rows = per_sample(T),
    Hit = fun(#{utils := U, rq := Rq}) ->
                  On = lists:sublist(U, Online),
                  Rq > 0 andalso lists:any(fun(X) -> X >= ?BUSY end, On)
                      andalso lists:any(fun(X) -> X =< ?IDLE end, On)
          end,
    Run = longest_run(Hit, Rows),
    Rqs = [Rq || #{rq := Rq} <- Run],
    {MinRq, MaxRq} = case Rqs of
                         [] -> {0, 0};
                         _ -> {lists:min(Rqs), lists:max(Rqs)}
                     end,
    Needed = case MaxRq >= 2 of
                 true -> ?CONSECUTIVE;
                 false -> ?CONSECUTIVE_SINGLE
             end,
    case Run of
        _ when length(Run) >= Needed ->
            Idle = lists:max([length([X || X <- lists:sublist(U, Online), X =< ?IDLE])
                              || #{utils := U} <- Run]),
            #{t := T0} = hd(Run),
            #{t := T1} = lists:last(Run),
            Severity = case Idle * 2 >= Online andalso MinRq >= 2 of
                           true -> critical;
                           false -> warning
                       end,
            [finding(scheduler_imbalance, Severity,
                     "Scheduler imbalance: runnable work waits while schedulers idle",
                     io_lib:format("for ~b consecutive samples (~.1f-~.1f s) up to ~b of ~b online "
                                   "schedulers were at most ~b% busy while others were busy and ~b to ~b "
                                   "processes waited in run queues; per-scheduler utilisation at ~.1f s: ~s",
                                   [length(Run), T0 / 1000, T1 / 1000, Idle, Online, ?IDLE, MinRq, MaxRq,
                                    T0 / 1000, utils_text(maps:get(utils, hd(Run)), Online)]),
                     "Work is not spreading over the schedulers. Compare scheduler settings in fresh VMs "
                     "with `beamlab matrix`: fewer schedulers (+S N), binding (+sbt db / +sbt ns), "
                     "utilisation balancing (+sub true), no load compaction (+scl false), busy wait (+sbwt). "
                     "Also check for processes pinned to one scheduler and for long NIFs.",
                     #{samples => length(Run), from_ms => T0, to_ms => T1,
                       max_idle => Idle, online => Online, max_run_queue => MaxRq, min_run_queue => MinRq})];
        _ -> []
    end.

%% All online schedulers busy, work queued, and schedulers left offline
%% (e.g. +S 8:1 or system_flag(schedulers_online, 1)).
schedulers_offline(T, Env) ->
    Online = online(T),
    Total = maps:get(<<"normal">>, maps:get(<<"schedulers">>, T, #{}), Online),
    Cpus = case maps:get(<<"cpu">>, Env, #{}) of
               #{<<"logical_processors_available">> := N} when is_integer(N) -> N;
               _ -> Total
           end,
    Hit = fun(#{utils := U, rq := Rq}) ->
                  Rq > 0 andalso lists:all(fun(X) -> X >= ?BUSY - 10 end, lists:sublist(U, Online))
          end,
    case Online < min(Total, Cpus) andalso longest_run(Hit, per_sample(T)) of
        Run when is_list(Run), length(Run) >= ?CONSECUTIVE ->
            MaxRq = lists:max([Rq || #{rq := Rq} <- Run]),
            [finding(schedulers_offline, warning,
                     "Schedulers offline while work waits",
                     io_lib:format("only ~b of ~b schedulers were online (~b CPUs available); all online "
                                   "ones were busy and up to ~b processes waited for ~b consecutive samples",
                                   [Online, Total, Cpus, MaxRq, length(Run)]),
                     "Bring more schedulers online (+S N:N or erlang:system_flag(schedulers_online, N)) "
                     "unless the limit is deliberate; `beamlab matrix --sweep-schedulers` shows the scaling.",
                     #{online => Online, total => Total, cpus => Cpus, samples => length(Run),
                       max_run_queue => MaxRq})];
        _ -> []
    end.

%%--------------------------------------------------------------------
%% OS: cgroup, busy wait, overload
%%--------------------------------------------------------------------

throttling(T, Env) ->
    Throttled = sum(maps:get(<<"cgroup_nr_throttled">>, T, [])),
    Periods = sum(maps:get(<<"cgroup_nr_periods">>, T, [])),
    Usec = sum(maps:get(<<"cgroup_throttled_usec">>, T, [])),
    case Throttled > 0 of
        true ->
            Share = case Periods of 0 -> 1.0; _ -> Throttled / Periods end,
            Quota = case maps:get(<<"cgroup">>, Env, #{}) of
                        #{<<"quota_cores">> := Q} when is_number(Q) -> io_lib:format("; quota ~.2f cores", [Q * 1.0]);
                        _ -> ""
                    end,
            [finding(cgroup_throttling,
                     case Share >= 0.1 of true -> critical; false -> warning end,
                     "CPU throttled by the cgroup quota",
                     io_lib:format("throttled in ~b of ~b scheduling periods (~.1f%), ~.1f ms of CPU "
                                   "time withheld during the run~s",
                                   [Throttled, Periods, 100 * Share, Usec / 1000, Quota]),
                     "The container's CPU quota stalls the VM in bursts, which shows as latency spikes "
                     "and lower throughput. Raise the quota, or match the schedulers to it (+S N with N = "
                     "quota cores, +sbwt none so spinning does not burn quota).",
                     #{nr_throttled => Throttled, nr_periods => Periods, throttled_usec => Usec})];
        false -> []
    end.

%% The OS charges busy-waiting to the VM; scheduler_wall_time does not count
%% it as active. A large gap means spinning (or non-scheduler threads).
busy_wait(T) ->
    Os = nums(maps:get(<<"os_cpu_cores">>, T, [])),
    Busy = nums(maps:get(<<"scheduler_busy_cores">>, T, [])),
    case {Os, Busy} of
        {[_, _, _ | _], [_ | _]} when length(Os) =:= length(Busy) ->
            MeanOs = mean(Os),
            MeanBusy = mean(Busy),
            Gap = MeanOs - MeanBusy,
            case Gap >= 0.25 andalso MeanOs >= 1.3 * MeanBusy of
                true ->
                    [finding(busy_wait, warning,
                             "Busy-wait inflates OS CPU",
                             io_lib:format("the OS charged the VM ~.2f cores on average while its schedulers "
                                           "did work for ~.2f cores: ~.2f cores (~b%) went to spinning "
                                           "schedulers or other VM threads",
                                           [MeanOs, MeanBusy, Gap, round(100 * Gap / MeanOs)]),
                             "OS CPU (top, cloud billing, cgroup quota) overstates the load. On a shared "
                             "machine or under a quota try +sbwt none +sbwtdcpu none +sbwtdio none; on a "
                             "dedicated machine spinning buys latency and is harmless.",
                             #{os_cpu_cores => MeanOs, scheduler_busy_cores => MeanBusy})];
                false -> []
            end;
        _ -> []
    end.

%% The load average is not evidence: it counts this VM's own work, and a
%% benchmark that ended a minute ago (beamlab's own previous run) still
%% lifts it above the cores. Others' CPU is the machine's busy time minus
%% this VM's, during the run; the load average is kept in the data only.
overloaded(T, Env, Kind) ->
    Cpus = case maps:get(<<"cpu">>, Env, #{}) of
               #{<<"logical_processors_online">> := N} when is_integer(N) -> N;
               _ -> erlang:system_info(logical_processors_online)
           end,
    Steal = mean(nums(maps:get(<<"steal_pct">>, T, []))),
    Load = case nums(maps:get(<<"load1">>, T, [])) of
               [] -> case maps:get(<<"load">>, Env, #{}) of
                         #{<<"load1">> := L} when is_number(L) -> L;
                         _ -> 0
                     end;
               Ls -> lists:max(Ls)
           end,
    %% CPU used on the machine by everything but beamlab's own process
    %% tree (this VM, its peers, its private broker: `tree_cpu_cores'),
    %% in cores; a series without it (saved before, another node's) has
    %% the VM's alone, and a matrix measures in child VMs, whose CPU is ours.
    Machine = nums(maps:get(<<"machine_cpu_pct">>, T, [])),
    %% (a watched node's tree has no figure in a sample its reader was
    %% late for: the mean of the others)
    Own = case {nums(maps:get(<<"tree_cpu_cores">>, T, [])), maps:get(<<"tree_cpu_cores">>, T, [])} of
              {[_ | _] = Tree, All} when length(All) =:= length(Machine) -> {tree, Tree};
              _ -> {vm, nums(maps:get(<<"os_cpu_cores">>, T, []))}
          end,
    C = case {Machine, Own} of
            {[_ | _], {tree, O}} -> competition(Machine, O, Cpus);
            {[_ | _], {vm, [_ | _] = O}} when Kind =/= <<"matrix">>, length(O) =:= length(Machine) ->
                competition(Machine, O, Cpus);
            _ -> #{others_cores => 0.0, own_cores => 0.0}
        end,
    Others = maps:get(others_cores, C),
    Contended = beamlab_runtime_probe:contended(C, Cpus),
    Reasons = [io_lib:format("steal time ~.1f% (the hypervisor ran other guests)", [Steal]) || Steal >= 5]
        ++ [io_lib:format("other processes used ~.2f of ~b CPUs during the run (the machine's busy CPU "
                          "time minus ~ts, ~.2f)",
                          [Others, Cpus, own_text(Own, is_map_key(<<"node">>, T)), maps:get(own_cores, C)])
            || Contended],
    case Reasons of
        [] -> [];
        _ ->
            [finding(machine_overloaded,
                     case Steal >= 20 orelse Others >= Cpus of true -> critical; false -> warning end,
                     "The machine is busy with other work",
                     lists:join("; ", Reasons),
                     "Numbers measured now are not comparable with a quiet machine. Stop other jobs, use "
                     "a dedicated or larger instance (steal), or interleave and repeat runs so drift hits "
                     "every variant (`beamlab matrix -n`).",
                     #{steal_pct => Steal, load1 => Load, cpus => Cpus, others_cores => Others,
                       own_cores => maps:get(own_cores, C)})]
    end.

%% Whose CPU time is not others': a watched node's series (`node') has
%% the node's VM, and with the tree beamlab's own processes beside it
%% (`amqp --watch''s load generators).
own_text({tree, _}, false) -> "beamlab's own processes'";
own_text({tree, _}, true) -> "the node's VM's and beamlab's own processes'";
own_text({vm, _}, false) -> "this VM's";
own_text({vm, _}, true) -> "the node's VM's".

%% Mean others and own cores over a series (machine busy percent and own
%% cores per sample), as beamlab_runtime_probe:contended/2 takes them.
competition(Machine, Own, Cpus) ->
    M = mean(Machine) * Cpus / 100,
    O = mean(Own),
    #{others_cores => max(0.0, M - O), own_cores => O}.

%%--------------------------------------------------------------------
%% Timer
%%--------------------------------------------------------------------

timer(skip) -> [];
timer(#{overshoot_us := #{median := Med, max := Max}, sleep_ms := Ms} = C) when Med > ?TIMER_MEDIAN_US ->
    [finding(timer_late,
             case Med > 10 * ?TIMER_MEDIAN_US of true -> critical; false -> warning end,
             "Timers fire late",
             io_lib:format("~b sleeps of ~b ms overshot by ~b us (median), ~b us (max)",
                           [maps:get(samples, C), Ms, Med, Max]),
             "Timeouts, `receive after` and rate-limited loads run slow: the schedulers are overloaded "
             "(long run queues, NIFs without yielding) or the OS deschedules the VM (quota, steal). "
             "Check run queues and throttling findings.",
             C)];
timer(_) -> [].

%%--------------------------------------------------------------------
%% Noise
%%--------------------------------------------------------------------

noisy(Result) ->
    Kind = kind(Result),
    lists:append([noisy_bench(B, Kind) || B <- maps:get(benchmarks, Result, []), is_map(B)]).

noisy_bench(#{stats := #{mean := Mean} = S} = B, Kind) when is_number(Mean), Mean /= 0 ->
    Cv = case S of #{cv := C} when is_number(C) -> C; _ -> 0.0 end,
    %% Fewer than 3 samples have no interval (docs/statistics.md): only
    %% the cv can say the measurement is noisy.
    {RelCi, CiText} = case ci(maps:get(ci_mean, S, undefined)) of
                          {Lo, Hi} ->
                              R = abs(Hi - Lo) / 2 / abs(Mean),
                              {R, io_lib:format("confidence interval of the mean is +/-~.1f% of the mean", [100 * R])};
                          undefined ->
                              {0.0, "no confidence interval (fewer than 3 samples)"}
                      end,
    Name = maps:get(name, B, <<"benchmark">>),
    case RelCi > ?REL_CI orelse Cv > ?CV of
        true ->
            [finding(noisy_measurement,
                     case RelCi > 4 * ?REL_CI orelse Cv > 4 * ?CV of true -> critical; false -> warning end,
                     ["Measurement too noisy to trust: ", Name],
                     io_lib:format("~ts: ~ts, "
                                   "cv ~.1f% over ~p samples (limits: +/-~b%, cv ~b%)",
                                   [Name, CiText, 100 * Cv, maps:get(n, S, length(maps:get(samples, B, []))),
                                    round(100 * ?REL_CI), round(100 * ?CV)]),
                     noisy_advice(Kind),
                     #{benchmark => Name, rel_ci => RelCi, cv => Cv})];
        false -> []
    end;
noisy_bench(_, _) -> [].

%% The remedy names the options of the command that produced the result:
%% what a sample is differs (a timed slice, a repetition, a fresh VM's
%% mean, a reporting interval).
noisy_advice(<<"suite">>) ->
    "Each sample is one repetition of the workload: repeat it more often (-n), make each "
    "repetition longer (a larger --profile or --param), stop other load, and compare VM "
    "settings with repetitions in fresh VMs (`beamlab matrix -n`).";
noisy_advice(<<"matrix">>) ->
    "Each sample is one fresh VM's mean (CPU time: its fastest sample): run more repetitions "
    "per configuration (-n), make "
    "the inner command's own measurement steadier (its -s/-d, or -n for a suite), and stop "
    "other load; repetitions are interleaved, so drift spreads over every configuration.";
noisy_advice(<<"amqp">>) ->
    "Each sample is one reporting interval: run longer (-z) so that more intervals count and "
    "ramp-up weighs less, and stop other load on the machines of the broker and the generator.";
noisy_advice(_) ->
    "Take more samples (-s) or longer ones (-d), run in a fresh isolated VM (-i), pin "
    "the VM to CPUs (taskset, +sbt db), stop other load, and compare with repetitions "
    "(`beamlab matrix -n`).".

kind(#{kind := K}) when is_atom(K) -> atom_to_binary(K);  % a document
kind(#{kind := K}) when is_binary(K) -> K;
kind(_) -> <<"bench">>.

%% The CI may be a tuple in memory, a list after JSON, or a map.
ci({Lo, Hi}) when is_number(Lo), is_number(Hi) -> {Lo, Hi};
ci([Lo, Hi]) when is_number(Lo), is_number(Hi) -> {Lo, Hi};
ci(#{lo := Lo, hi := Hi}) -> ci({Lo, Hi});
ci(_) -> undefined.

%%--------------------------------------------------------------------
%% Helpers
%%--------------------------------------------------------------------

finding(Id, Sev, Title, Evidence, Advice, Data) ->
    beamlab_result:finding(Id, Sev, Title, Evidence, Advice, Data).

online(T) ->
    case maps:get(<<"schedulers">>, T, #{}) of
        #{<<"online">> := O} -> O;
        _ -> erlang:system_info(schedulers_online)
    end.

%% [#{t, utils, rq}] per sample.
per_sample(T) ->
    Utils = maps:get(<<"util_schedulers">>, T, []),
    Rqs = maps:get(<<"run_queue">>, T, []),
    Ts = maps:get(<<"t_ms">>, T, lists:seq(1, length(Utils))),
    case length(Utils) =:= length(Rqs) andalso length(Rqs) =:= length(Ts) of
        true -> [#{t => Tm, utils => nums(U), rq => Rq}
                 || {Tm, U, Rq} <- lists:zip3(Ts, Utils, Rqs), is_list(U), is_number(Rq)];
        false -> []
    end.

%% The longest run of consecutive elements satisfying Pred.
longest_run(Pred, L) ->
    {Best, Cur} = lists:foldl(fun(X, {B, C}) ->
                                      case Pred(X) of
                                          true -> {B, [X | C]};
                                          false -> {longer(B, C), []}
                                      end
                              end, {[], []}, L),
    lists:reverse(longer(Best, Cur)).

longer(A, B) when length(B) > length(A) -> B;
longer(A, _) -> A.

utils_text(U, Online) ->
    ["[", lists:join(" ", [integer_to_list(round(X)) || X <- lists:sublist(U, Online)]), "]"].

nums(L) -> [X || X <- L, is_number(X)].

sum(L) -> lists:sum(nums(L)).

mean([]) -> 0.0;
mean(L) -> lists:sum(L) / length(L).

