%%% @doc The doctor's probe, run inside one fresh VM: the suite's message
%%% load as the published benchmark defines it (variant `original': a load
%%% below capacity whose goodput, latency and CPU per message show how the
%%% VM wakes and spins), a saturating load of independent token-passing
%%% meshes sized from the schedulers online ({@link
%%% beamlab_suite_probe_mesh}: its capacity, the point of a scaling
%%% curve) and one local ping-pong
%%% (round-trip time between two processes), each measured with the VM's
%%% own counters around it: its OS process's CPU time (/proc/self/stat),
%%% microstate accounting per state, scheduler utilisation
%%% (`scheduler_wall_time'), run-queue lengths and each scheduler's
%%% runnable processes (`active_tasks') sampled every 20 ms, the
%%% machine's CPU ticks (/proc/stat: other processes' share, steal) and
%%% the cgroup's throttling counters. {@link vm/0} says what the VM runs
%%% with: schedulers, the CPUs it may run on, its cgroup quota, its
%%% emulator flags and how late its timers fire.
%%%
%%% Returned as plain maps with atom keys (the caller puts them in the
%%% document, where they become JSON). Runs where called: the doctor calls
%%% it in each fresh VM by MFA.
-module(beamlab_suite_probe).

-export([run/1, vm/0, parse_status_cpus/1]).

-export_type([opts/0, measured/0]).

-type opts() :: #{warmup_ms := non_neg_integer(), duration_ms := pos_integer(),
                  procs => pos_integer(), wait_ms => non_neg_integer(),
                  ping_pong_n => pos_integer(), root => file:filename()}.
-type measured() :: #{atom() => term()}.

%% Run-queue sampling interval while a load runs.
-define(RUNQ_MS, 20).

%% @doc Runs the probe and returns `{0, Measured}' (the shape of a fresh
%% VM's main call, see {@link beamlab_runtime_peer:run/3}); `{130, Partial}'
%% when interrupted between its parts.
-spec run(opts()) -> {0 | 130, measured()}.
run(Opts) ->
    ok = beamlab_runtime_interrupt:subscribe(),
    Procs = maps:get(procs, Opts, 96),
    Params = #{procs => Procs, wait => maps:get(wait_ms, Opts, 10),
               warmup => maps:get(warmup_ms, Opts), duration => maps:get(duration_ms, Opts)},
    Root = maps:get(root, Opts, "/"),
    Parts = [{load, fun() -> measured(Root, fun() -> message_load(Params#{variant => original, record => true}) end) end},
             {mesh, fun() -> measured(Root, fun() -> beamlab_suite_probe_mesh:run(
                                                               #{warmup_ms => maps:get(warmup_ms, Opts),
                                                                 duration_ms => maps:get(duration_ms, Opts)})
                                               end) end},
             {ping_pong, fun() -> ping_pong(maps:get(ping_pong_n, Opts, 2000)) end}],
    Out = lists:foldl(fun({Key, F}, Acc) ->
                              case interrupted() of
                                  true -> Acc#{partial => true};
                                  false -> Acc#{Key => F()}
                              end
                      end, #{}, Parts),
    ok = beamlab_runtime_interrupt:unsubscribe(),
    case Out of
        #{partial := true} -> {130, Out};
        _ -> {0, Out}
    end.

interrupted() ->
    receive {beamlab_interrupt, _} -> true
    after 0 -> beamlab_runtime_interrupt:interrupted()
    end.

%% One message load with the VM's counters read around it.
message_load(Params0) ->
    {ok, Params} = beamlab_workload_message_load:normalize(Params0),
    {ok, State} = beamlab_workload_message_load:setup(Params),
    try beamlab_workload_message_load:run(State, Params) of
        {ok, Rep, _} -> Rep
    after
        beamlab_workload_message_load:teardown(State)
    end.

measured(Root, Load) ->
    Old = erlang:system_flag(microstate_accounting, true),
    _ = erlang:system_flag(microstate_accounting, reset),
    OldSwt = erlang:system_flag(scheduler_wall_time, true),
    Swt0 = lists:sort(erlang:statistics(scheduler_wall_time)),
    Machine0 = machine(Root),
    Cg = beamlab_runtime_probe:cgroup_locate(Root),
    Throttle0 = throttled(Cg),
    {ok, Cpu0} = cpu_us(Root),
    Mig0 = beamlab_runtime_probe:scheduler_migrations(Root, "self"),
    T0 = erlang:monotonic_time(microsecond),
    Sampler = runq_sampler(),
    Rep = Load(),
    Runq = stop_sampler(Sampler),
    T1 = erlang:monotonic_time(microsecond),
    Mig1 = beamlab_runtime_probe:scheduler_migrations(Root, "self"),
    {ok, Cpu1} = cpu_us(Root),
    Throttle1 = throttled(Cg),
    Machine1 = machine(Root),
    Swt1 = lists:sort(erlang:statistics(scheduler_wall_time)),
    Msacc = msacc(erlang:statistics(microstate_accounting)),
    _ = erlang:system_flag(microstate_accounting, Old),
    _ = erlang:system_flag(scheduler_wall_time, OldSwt),
    #{counters := C} = Rep,
    %% The whole run's messages (warm-up included), as the CPU time is
    %% the whole run's: one window for both.
    Messages = maps:get(goodput, C, 0),
    CpuUs = Cpu1 - Cpu0,
    Metrics = maps:get(metrics, Rep, #{}),
    Lat = maps:get(latency_us, maps:get(extra, Rep, #{}), #{}),
    #{goodput => maps:get(value, Rep),
      flushput => maps:get(flushput, Metrics, 0.0),
      latency_mean_us => maps:get(latency_mean, Metrics, 0.0),
      latency_p50_us => maps:get(p50, Lat, 0.0),
      latency_p99_us => maps:get(latency_p99, Metrics, maps:get(p99, Lat, 0.0)),
      messages => Messages,
      check => case maps:get(check, Rep, unchecked) of
                   ok -> ok;
                   unchecked -> unchecked;
                   {failed, Why} -> Why
               end,
      cpu_us => CpuUs, wall_us => T1 - T0,
      cpu_per_msg_us => case Messages of
                            0 -> null;
                            _ -> CpuUs / Messages
                        end,
      msacc => Msacc,
      utilisation => utilisation(Swt0, Swt1),
      utilisation_schedulers => utilisation_schedulers(Swt0, Swt1),
      migrations => migrations(Mig0, Mig1, T1 - T0),
      run_queue => Runq,
      machine => machine_delta(Machine0, Machine1),
      throttled => throttle_delta(Throttle0, Throttle1)}.

cpu_us(Root) ->
    case beamlab_runtime_probe:process_cpu_us(Root) of
        {ok, _} = Ok -> Ok;
        {error, _} -> {ok, erlang:convert_time_unit(element(1, erlang:statistics(runtime)), millisecond, microsecond)}
    end.

%% The CPU ticks of the CPUs this VM may run on (its affinity), summed
%% from their `cpuN' lines of /proc/stat: another process busy on a CPU
%% the VM cannot use is no competitor. All CPUs when the affinity is
%% unknown.
machine(Root) ->
    Allowed = case file:read_file(filename:join(Root, "proc/self/status")) of
                  {ok, S} -> parse_status_cpus(S);
                  {error, _} -> []
              end,
    case file:read_file(filename:join(Root, "proc/stat")) of
        {ok, Stat} -> cpu_ticks(Stat, Allowed);
        {error, _} -> #{}
    end.

cpu_ticks(Stat, Allowed) ->
    Names = [user, nice, system, idle, iowait, irq, softirq, steal],
    Lines = [string:lexemes(L, " ") || L <- string:split(Stat, "\n", all)],
    Rows = [lists:sublist(Fields, length(Names))
            || [<<"cpu", N/binary>> | Fields] <- Lines, N =/= <<>>,
               Allowed =:= [] orelse lists:member(int(N), Allowed)],
    case Rows of
        [] -> #{};
        _ ->
            Sums = lists:foldl(fun(Fields, Acc) -> [A + int(F) || {A, F} <- lists:zip(Acc, pad(Fields, length(Names)))] end,
                               lists:duplicate(length(Names), 0), Rows),
            maps:from_list(lists:zip(Names, Sums))
    end.

pad(L, N) when length(L) >= N -> L;
pad(L, N) -> L ++ lists:duplicate(N - length(L), <<"0">>).

int(B) ->
    try binary_to_integer(B) catch error:badarg -> -1 end.

%% The machine's CPU ticks over the run: all, busy (not idle or iowait),
%% stolen by the hypervisor.
machine_delta(A, B) when map_size(A) > 0, map_size(B) > 0 ->
    D = maps:map(fun(K, V) -> V - maps:get(K, A, V) end, B),
    Total = lists:sum(maps:values(D)),
    Idle = maps:get(idle, D, 0) + maps:get(iowait, D, 0),
    #{total_ticks => Total, busy_ticks => Total - Idle, steal_ticks => maps:get(steal, D, 0),
      tick_us => 10000};
machine_delta(_, _) ->
    #{}.

throttled(Cg) ->
    case beamlab_runtime_probe:cgroup_cpu_stat_at(Cg) of
        {ok, S} -> S;
        {error, _} -> #{}
    end.

throttle_delta(#{nr_periods := P0, nr_throttled := N0, throttled_usec := U0},
               #{nr_periods := P1, nr_throttled := N1, throttled_usec := U1}) ->
    #{periods => P1 - P0, throttled => N1 - N0, throttled_us => U1 - U0};
throttle_delta(_, _) ->
    #{}.

%% Microstate accounting of the normal schedulers: each state's share of
%% their time (states the emulator has: the default set, or more with the
%% extra states compiled in).
msacc(undefined) ->
    #{};
msacc(Threads) ->
    Sums = lists:foldl(fun(#{type := scheduler, counters := Cs}, Acc) ->
                               maps:fold(fun(K, V, A) -> A#{K => maps:get(K, A, 0) + V} end, Acc, Cs);
                          (_, Acc) -> Acc
                       end, #{}, Threads),
    Total = lists:sum(maps:values(Sums)),
    case Total of
        0 -> #{};
        _ -> maps:map(fun(_, V) -> V / Total end, Sums)
    end.

%% Mean busy share of the online normal schedulers.
utilisation(A, B) ->
    N = erlang:system_info(schedulers_online),
    Pairs = [{Ab - Aa, Tb - Ta} || {{I, Aa, Ta}, {I, Ab, Tb}} <- lists:zip(A, B), I =< N],
    case lists:sum([T || {_, T} <- Pairs]) of
        0 -> 0.0;
        Total -> lists:sum([Act || {Act, _} <- Pairs]) / Total
    end.

%% Each online normal scheduler's busy share, in scheduler order: the
%% mean hides a few saturated schedulers beside idle ones.
utilisation_schedulers(A, B) ->
    N = erlang:system_info(schedulers_online),
    [case Tb - Ta of 0 -> 0.0; T -> (Ab - Aa) / T end
     || {{I, Aa, Ta}, {I, Ab, Tb}} <- lists:zip(A, B), I =< N].

%% The kernel's migrations of the online normal scheduler threads between
%% CPUs over the load: per scheduler, in all and per second (`null' where
%% the kernel does not show them).
migrations(A, B, WallUs) ->
    beamlab_runtime_probe:migration_rate(A, B, WallUs, erlang:system_info(schedulers_online)).

runq_sampler() ->
    Parent = self(),
    spawn_link(fun() -> runq_loop(Parent, {0, 0, 0, 0, []}) end).

%% Every 20 ms: the total run queue (processes waiting), and each online
%% scheduler's runnable processes (`active_tasks': waiting or running,
%% this sampler left out). A sample is `stranded' when one scheduler had
%% work waiting (2 or more runnable) while another had none: work the
%% idle one could have run. That, not an idle scheduler alone, says the
%% load offered parallel work the VM did not spread.
runq_loop(Parent, {N, Sum, Max, Stranded, Act}) ->
    receive
        {stop, Parent} ->
            Parent ! {runq, self(), #{samples => N, mean => case N of 0 -> 0.0; _ -> Sum / N end,
                                      max => Max,
                                      stranded => case N of 0 -> null; _ -> Stranded / N end,
                                      active_mean => [case N of 0 -> 0.0; _ -> A / N end || A <- Act]}}
    after ?RUNQ_MS ->
            L = erlang:statistics(total_run_queue_lengths),
            A = active(),
            runq_loop(Parent, {N + 1, Sum + L, max(Max, L),
                               Stranded + case stranded(A) of true -> 1; false -> 0 end,
                               case Act of
                                   [] -> A;
                                   _ when length(Act) =:= length(A) -> [X + Y || {X, Y} <- lists:zip(Act, A)];
                                   _ -> Act
                               end})
    end.

active() ->
    Own = erlang:system_info(scheduler_id),
    On = erlang:system_info(schedulers_online),
    Tasks = lists:sublist(erlang:statistics(active_tasks), On),
    [case I of Own -> max(0, T - 1); _ -> T end || {I, T} <- lists:zip(lists:seq(1, length(Tasks)), Tasks)].

stranded(A) when length(A) >= 2 -> lists:max(A) >= 2 andalso lists:min(A) =:= 0;
stranded(_) -> false.

stop_sampler(Pid) ->
    Pid ! {stop, self()},
    receive {runq, Pid, R} -> unlink(Pid), R end.

ping_pong(N) ->
    Params = #{size => 10, payload => list, vm => local, node => none, n => N},
    {ok, St} = beamlab_workload_ping_pong:setup(Params),
    try beamlab_workload_ping_pong:run(St, Params) of
        {ok, #{value := Us}} -> #{round_trip_us => Us, n => N}
    after
        beamlab_workload_ping_pong:teardown(St)
    end.

%% @doc What this VM runs with: schedulers online, the CPUs it may run on
%% (its affinity), its cgroup's CPU quota in CPUs, the emulator flags,
%% the scheduler bind type and the median overshoot of a 1 ms timer.
-spec vm() -> measured().
vm() ->
    Allowed = case file:read_file("/proc/self/status") of
                  {ok, S} -> parse_status_cpus(S);
                  {error, _} -> []
              end,
    #{schedulers_online => erlang:system_info(schedulers_online),
      schedulers => erlang:system_info(schedulers),
      dirty_cpu_schedulers_online => erlang:system_info(dirty_cpu_schedulers_online),
      logical_processors_available => unknown_null(erlang:system_info(logical_processors_available)),
      cpus_allowed => Allowed,
      cgroup_quota_cpus => quota(beamlab_runtime_probe:cgroup_locate("/")),
      bind_type => erlang:system_info(scheduler_bind_type),
      emu_args => [unicode:characters_to_binary(A) || A <- emu_args()],
      otp_release => list_to_binary(erlang:system_info(otp_release)),
      emu_flavor => try erlang:system_info(emu_flavor) catch error:badarg -> emu end,
      timer_overshoot_us => beamlab_runtime_probe:timer_overshoot()}.

unknown_null(N) when is_integer(N) -> N;
unknown_null(_) -> null.

emu_args() ->
    case catch erlang:system_info(emu_args) of
        %% The flags given; after the first "--" come erl's own (-root, -progname).
        [_Beam | Args] -> [A || A <- lists:takewhile(fun(X) -> X =/= "--" end, Args),
                                io_lib:printable_list(A)];
        _ -> []
    end.

%% The cgroup's CPU quota in CPUs, `null' when there is none.
quota({v2, Dir}) ->
    case file:read_file(filename:join(Dir, "cpu.max")) of
        {ok, T} ->
            case string:lexemes(T, " \n") of
                [Q, P] when Q =/= <<"max">> -> ratio(Q, P);
                _ -> null
            end;
        {error, _} -> null
    end;
quota({v1, Dir}) ->
    case {file:read_file(filename:join(Dir, "cpu.cfs_quota_us")),
          file:read_file(filename:join(Dir, "cpu.cfs_period_us"))} of
        {{ok, Q}, {ok, P}} -> ratio(string:trim(Q), string:trim(P));
        _ -> null
    end;
quota(none) ->
    null.

ratio(Q, P) ->
    try {binary_to_integer(Q), binary_to_integer(P)} of
        {Qi, Pi} when Qi > 0, Pi > 0 -> Qi / Pi;
        _ -> null
    catch error:badarg -> null
    end.

%% @doc The CPUs of `Cpus_allowed_list' in proc/PID/status ([] when absent).
-spec parse_status_cpus(binary()) -> [non_neg_integer()].
parse_status_cpus(Status) ->
    case [string:trim(V) || L <- string:split(Status, "\n", all),
                            [<<"Cpus_allowed_list">>, V] <- [string:split(L, ":")]] of
        [List | _] -> cpulist(List);
        [] -> []
    end.

cpulist(B) ->
    lists:usort(lists:append([range(string:split(R, "-")) || R <- string:lexemes(B, ","), R =/= <<>>])).

range([A]) -> int_list(A, A);
range([A, B]) -> int_list(A, B).

int_list(A, B) ->
    try {binary_to_integer(string:trim(A)), binary_to_integer(string:trim(B))} of
        {X, Y} when X =< Y, Y - X < 65536 -> lists:seq(X, Y);
        _ -> []
    catch error:badarg -> []
    end.
