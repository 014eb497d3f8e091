%%% @doc `beamlab doctor''s reasoning, pure: the scheduler counts of the
%%% scaling curve, the summary of a configuration's repetitions, the
%%% findings drawn from the machine's facts, the VM's facts and the
%%% curve (each with its evidence, how sure it is and the flag sets that
%%% may cure it), the ranking of the measured remedies against the
%%% default and the recommendation's first line. The measuring is the
%%% experiment layer's (`beamlab_experiment_doctor'); the probe is
%%% `beamlab_suite_probe'. Thresholds are ratios and shares, never
%%% absolute times, so they mean the same on any machine (see
%%% docs/doctor.md).
-module(beamlab_env_doctor).

-export([counts/1, summary/1, curve/1, findings/3, node_findings/2, candidates/3, remedy/3, rank/3, rank/4,
         corrected/4,
         recommendation/1, buys/2, flags_of/1]).

-export_type([run/0, summary/0, config/0, remedy/0, ranked/0, metric/0]).

%% One probe run: what beamlab_suite_probe:run/1 measured and vm/0 said.
-type run() :: #{probe := map(), vm := map()}.
-type summary() :: #{atom() => term()}.
%% A configuration: its name (the flags as typed) and its arguments.
-type config() :: #{name := binary(), args := [string()], schedulers => pos_integer() | default}.
%% A candidate remedy: its flags and why it is tried (the findings).
-type remedy() :: #{name := binary(), args := [string()], wrap := [string()], why := [binary()]}.
-type ranked() :: #{atom() => term()}.
%% A figure remedies are ranked by: its key in the ranking, the key of its
%% samples in a summary, which way is better, and its part in the score.
-type metric() :: {atom(), atom(), higher | lower, gain | cost | none}.

%% Shares and ratios the findings use.
-define(COLLAPSE, 0.7).          % capacity at N below this share of the peak
-define(BUSY_WAIT, 0.5).         % share of the VM's CPU that does no work
-define(OTHERS_WARN, 0.25).      % other processes' share of the VM's CPUs
-define(OTHERS_CRIT, 0.5).
-define(STEAL_WARN, 0.05).
-define(STEAL_CRIT, 0.2).
-define(LATE_TIMER_US, 2000).
-define(THROTTLED, 0.1).         % share of cgroup periods throttled
-define(CONF, 0.95).

%% @doc The scheduler counts of the curve on `Cpus' logical CPUs: 1, 2,
%% 4, ... up to the CPUs, the CPUs themselves, and beyond them up to
%% twice the CPUs (oversubscription), at most 8 counts.
-spec counts(pos_integer()) -> [pos_integer()].
counts(Cpus) when Cpus >= 1 ->
    Pow = [1 bsl I || I <- lists:seq(0, 20), 1 bsl I =< 2 * Cpus],
    All = lists:usort(Pow ++ [Cpus, 2 * Cpus]),
    case length(All) =< 8 of
        true -> All;
        false ->
            %% Keep 1, 2, the CPUs and twice them; thin the powers between.
            Keep = lists:usort([1, 2, Cpus, 2 * Cpus]),
            Rest = All -- Keep,
            Step = max(1, ceil(length(Rest) / (8 - length(Keep)))),
            lists:usort(Keep ++ [X || {I, X} <- lists:zip(lists:seq(1, length(Rest)), Rest),
                                      I rem Step =:= 0])
    end.

%% @doc The medians of a configuration's repetitions (a run that failed
%% is left out): the load's goodput, latency p50/p99 and CPU per message,
%% the mesh's goodput (capacity), ping-pong's round trip, microstate
%% accounting per state, scheduler utilisation, run queue, other
%% processes' and the hypervisor's share of the CPUs, throttling.
-spec summary([run()]) -> summary().
summary(Runs0) ->
    Runs = [R || #{probe := #{load := _, mesh := _}} = R <- Runs0],
    Load = [L || #{probe := #{load := L}} <- Runs],
    Mesh = [M || #{probe := #{mesh := M}} <- Runs],
    Pp = [P || #{probe := #{ping_pong := P}} <- Runs],
    Vm = case Runs of
             [#{vm := V} | _] -> V;
             [] -> #{}
         end,
    Allowed = allowed(Vm),
    Med = fun(Key, L) -> median([V || M <- L, V <- [maps:get(Key, M, null)], is_number(V)]) end,
    #{n => length(Runs),
      goodput => Med(goodput, Load),
      goodput_samples => [maps:get(goodput, L) || L <- Load],
      latency_p50_us => Med(latency_p50_us, Load),
      latency_p99_us => Med(latency_p99_us, Load),
      latency_p99_samples => [V || L <- Load, V <- [maps:get(latency_p99_us, L, null)], is_number(V)],
      flushput => Med(flushput, Load),
      cpu_per_msg_us => Med(cpu_per_msg_us, Load),
      cpu_per_msg_samples => [V || L <- Load, V <- [maps:get(cpu_per_msg_us, L, null)], is_number(V)],
      capacity => Med(goodput, Mesh),
      capacity_samples => [maps:get(goodput, M) || M <- Mesh],
      capacity_cpu_per_msg_us => Med(cpu_per_msg_us, Mesh),
      round_trip_us => Med(round_trip_us, Pp),
      utilisation => Med(utilisation, Load),
      capacity_utilisation => Med(utilisation, Mesh),
      %% each scheduler's busy share under the saturating mesh, per
      %% repetition and on average (the mean hides an imbalance)
      capacity_utilisation_samples => [U || M <- Mesh, U <- [maps:get(utilisation_schedulers, M, [])], U =/= []],
      capacity_utilisation_schedulers =>
          beamlab_env_doctor_sched:mean_vector([maps:get(utilisation_schedulers, M, []) || M <- Mesh]),
      migrations_per_s => Med(per_s, [maps:get(migrations, M, #{}) || M <- Mesh]),
      %% the evidence that the saturating load offered work to every
      %% scheduler: its own run queue, the share of samples with work
      %% waiting beside an idle scheduler, runnable processes per scheduler
      capacity_run_queue_mean => Med(mean, [maps:get(run_queue, M, #{}) || M <- Mesh]),
      capacity_stranded => Med(stranded, [maps:get(run_queue, M, #{}) || M <- Mesh]),
      capacity_active_mean =>
          beamlab_env_doctor_sched:mean_vector([maps:get(active_mean, maps:get(run_queue, M, #{}), [])
                                                || M <- Mesh]),
      run_queue_mean => median([maps:get(mean, maps:get(run_queue, L, #{}), 0) || L <- Load ++ Mesh]),
      run_queue_max => lists:max([0 | [maps:get(max, maps:get(run_queue, L, #{}), 0) || L <- Load ++ Mesh]]),
      msacc => msacc_median(Load),
      capacity_msacc => msacc_median(Mesh),
      cpu_share => Med(cpu_share, [cpu_share(L, Vm) || L <- Load]),
      others_share => median([S || L <- Load ++ Mesh, S <- [others_share(L, Allowed)], is_number(S)]),
      steal_share => median([S || L <- Load ++ Mesh, S <- [steal_share(L)], is_number(S)]),
      throttled_share => median([S || L <- Mesh, S <- [throttled_share(L)], is_number(S)]),
      schedulers_online => maps:get(schedulers_online, Vm, null),
      cpus_allowed => Allowed,
      quota_cpus => maps:get(cgroup_quota_cpus, Vm, null),
      emu_args => maps:get(emu_args, Vm, []),
      timer_overshoot_us => median([T || #{vm := #{timer_overshoot_us := T}} <- Runs, is_number(T)]),
      failed => length(Runs0) - length(Runs),
      %% the loads' own checks (message conservation; the saturating
      %% load's tokens) that did not hold, as `load: reason'
      checks_failed => [iolist_to_binary(io_lib:format("~ts: ~tp", [K, C]))
                        || #{probe := P} <- Runs, K <- [load, mesh], C <- [maps:get(check, maps:get(K, P), ok)],
                           C =/= ok, C =/= unchecked]}.

allowed(#{cpus_allowed := [_ | _] = L}) -> length(L);
allowed(#{logical_processors_available := N}) when is_integer(N) -> N;
allowed(_) -> null.

median([]) -> null;
median(L) -> beamlab_stats:median(L).

%% Each state's median share across repetitions.
msacc_median(Ms) ->
    States = lists:usort(lists:append([maps:keys(maps:get(msacc, M, #{})) || M <- Ms])),
    maps:from_list([{S, median([maps:get(S, maps:get(msacc, M, #{}), 0.0) || M <- Ms])} || S <- States]).

%% The VM's CPU time as a share of its schedulers' wall time.
cpu_share(#{cpu_us := C, wall_us := W}, #{schedulers_online := N}) when W > 0, N > 0 ->
    #{cpu_share => C / (W * N)};
cpu_share(_, _) ->
    #{}.

%% Other processes' CPU time during the run (the machine's busy time
%% minus the VM's own) as a share of the CPUs the VM may run on.
others_share(#{machine := #{busy_ticks := B, total_ticks := T, tick_us := Tick}, cpu_us := C,
               wall_us := W}, Allowed)
  when T > 0, W > 0, is_integer(Allowed), Allowed > 0 ->
    Others = max(0, B * Tick - C),
    min(1.0, Others / (W * Allowed));
others_share(_, _) ->
    null.

steal_share(#{machine := #{steal_ticks := S, total_ticks := T}}) when T > 0 -> S / T;
steal_share(_) -> null.

throttled_share(#{throttled := #{periods := P, throttled := N}}) when P > 0 -> N / P;
throttled_share(_) -> null.

%% @doc The scaling curve from the summaries per scheduler count: the
%% capacity at each count, the peak and the USL fit over every
%% repetition.
-spec curve([{pos_integer(), summary()}]) -> map().
curve(Points) ->
    Measured = [{N, S} || {N, #{capacity := C} = S} <- Points, is_number(C)],
    Fit = case beamlab_stats_usl:fit([{N, X} || {N, S} <- Measured, X <- maps:get(capacity_samples, S)]) of
              {ok, F} -> maps:with([lambda, sigma, kappa, model, peak_n, peak_x, r2], F);
              {error, R} -> #{error => iolist_to_binary(beamlab_stats_usl:format_error(R))}
          end,
    {PeakN, PeakX} = case Measured of
                         [] -> {null, null};
                         _ -> lists:foldl(fun({N, #{capacity := X}}, {_, BX}) when X > BX -> {N, X};
                                             (_, Acc) -> Acc
                                          end, {null, -1}, Measured)
                     end,
    #{points => [#{schedulers => N, capacity => maps:get(capacity, S),
                   goodput => maps:get(goodput, S),
                   latency_p99_us => maps:get(latency_p99_us, S),
                   cpu_per_msg_us => maps:get(cpu_per_msg_us, S),
                   round_trip_us => maps:get(round_trip_us, S),
                   utilisation => maps:get(capacity_utilisation, S),
                   utilisation_schedulers => maps:get(capacity_utilisation_schedulers, S, []),
                   migrations_per_s => maps:get(migrations_per_s, S, null),
                   msacc => maps:get(msacc, S),
                   capacity_msacc => maps:get(capacity_msacc, S, #{}),
                   capacity_cpu_per_msg_us => maps:get(capacity_cpu_per_msg_us, S, null),
                   capacity_stranded => maps:get(capacity_stranded, S, null),
                   capacity_active_mean => maps:get(capacity_active_mean, S, []),
                   capacity_samples => maps:get(capacity_samples, S)} || {N, S} <- Measured],
      peak_schedulers => PeakN, peak_capacity => PeakX, usl => Fit}.

%% @doc The findings: from the machine's facts, the default
%% configuration's summary (its VM's facts inside) and the curve. Each
%% carries `confidence' and `remedies' (flag strings) in its data. A
%% machine with no warning or critical finding gets `no_pathology' with
%% the figures that say so.
-spec findings(map(), summary(), map()) -> [beamlab_result:finding()].
findings(Machine, Base, Curve) ->
    Fs = lists:append([oversubscribed(Base), quota(Base), collapse(Base, Curve),
                       busy_wait(Base), imbalance(Base), others(Base), steal(Base), smt(Machine, Base),
                       numa(Machine), frequency(Machine), late_timers(Base)]),
    case [F || #{severity := S} = F <- Fs, S =/= info] of
        [] -> [healthy(Base, Curve) | Fs];
        _ -> Fs
    end.

%% @doc The findings on a running node (`doctor --node'), from the
%% machine's facts (those of this host when the node runs here, else
%% what the node reports) and the summary of its watch
%% (`beamlab_env_doctor_node:summary/3'): the same as the probe's but
%% those that need a curve or a fresh VM (collapse, late timers), and the
%% per-scheduler imbalance from the node's samples. A node with no
%% warning or critical finding gets `no_pathology'.
-spec node_findings(map(), summary()) -> [beamlab_result:finding()].
node_findings(Machine, Base) ->
    Imbalance = beamlab_env_doctor_sched:imbalance(
                  #{samples => maps:get(utilisation_samples, Base, []),
                    run_queue_mean => maps:get(run_queue_mean, Base, null),
                    migrations_per_s => maps:get(migrations_per_s, Base, null),
                    where => <<"while the node worked">>}),
    Fs = lists:append([oversubscribed(Base), quota(Base), busy_wait(Base), Imbalance, others(Base),
                       steal(Base), smt(Machine, Base), numa(Machine), frequency(Machine)]),
    case [F || #{severity := S} = F <- Fs, S =/= info] of
        [] -> [healthy_node(Base) | Fs];
        _ -> Fs
    end.

healthy_node(B) ->
    finding(no_pathology, info, <<"no pathology found">>,
            s("while the node worked its schedulers were busy ~ts of the time, run queue ~ts on average, "
              "the node used ~ts of its schedulers' time in CPU; other processes ~ts, steal ~ts",
              [opt_pct(maps:get(utilisation, B, null)),
               case maps:get(run_queue_mean, B, null) of null -> <<"unknown">>; Rq -> s("~.1f", [float(Rq)]) end,
               opt_pct(maps:get(cpu_share, B, null)), opt_pct(maps:get(others_share, B, null)),
               opt_pct(maps:get(steal_share, B, null))]),
            <<"nothing to change">>, medium, [], #{}).

finding(Id, Sev, Title, Evidence, Advice, Confidence, Remedies, Data) ->
    beamlab_result:finding(Id, Sev, Title, Evidence, Advice,
                           Data#{confidence => Confidence, remedies => Remedies}).

s(Fmt, Args) -> iolist_to_binary(io_lib:format(Fmt, Args)).

pct(X) -> s("~.1f%", [100 * X]).

sbwt() -> <<"+sbwt none +sbwtdcpu none +sbwtdio none">>.

s_flag(K) -> s("+S ~b:~b", [K, K]).

oversubscribed(#{schedulers_online := On, cpus_allowed := Al} = B)
  when is_integer(On), is_integer(Al), On > Al ->
    [finding(oversubscribed, critical,
             s("~b schedulers online on ~b CPU~s", [On, Al, plural(Al)]),
             case maps:get(capacity, B, null) of
                 null ->
                     s("the VM runs ~b schedulers but may run on ~b CPU~s (its affinity)", [On, Al, plural(Al)]);
                 Cap ->
                     s("the VM runs ~b schedulers but may run on ~b CPU~s (its affinity); capacity ~ts msg/s, "
                       "CPU per message ~ts", [On, Al, plural(Al), num(Cap), us(maps:get(cpu_per_msg_us, B))])
             end,
             s("start the VM with ~ts (one scheduler per CPU it may use)", [s_flag(Al)]),
             high, [s_flag(Al), <<(s_flag(Al))/binary, " ", (sbwt())/binary>>],
             #{schedulers_online => On, cpus => Al})];
oversubscribed(_) ->
    [].

quota(#{schedulers_online := On} = B) ->
    case maps:get(quota_cpus, B, null) of
        Q when is_number(Q), Q < On ->
            K = max(1, floor(Q)),
            Th = maps:get(throttled_share, B),
            {Sev, Conf} = case is_number(Th) andalso Th >= ?THROTTLED of
                              true -> {critical, high};
                              false -> {critical, medium}
                          end,
            [finding(cgroup_quota, Sev,
                     s("cgroup CPU quota of ~.2f CPUs under ~b schedulers", [float(Q), On]),
                     s("the VM's cgroup allows ~.2f CPUs per period while ~b schedulers are online; "
                       "~ts of the periods were throttled during the load",
                       [float(Q), On, case Th of null -> <<"an unknown share">>; _ -> pct(Th) end]),
                     s("start the VM with ~ts and no busy-waiting (spinning schedulers burn the quota)",
                       [s_flag(K)]),
                     Conf, [<<(s_flag(K))/binary, " ", (sbwt())/binary>>, s_flag(K), sbwt()],
                     #{quota_cpus => Q, schedulers_online => On, throttled_share => Th})];
        _ -> []
    end;
quota(_) ->
    [].

collapse(#{schedulers_online := On} = B, #{points := Points, peak_schedulers := PN, peak_capacity := PX})
  when is_integer(PN), is_number(PX), PX > 0 ->
    Beyond = [P || #{schedulers := N, capacity := X} = P <- Points, N > PN, X < ?COLLAPSE * PX],
    case Beyond of
        [] -> [];
        _ ->
            #{schedulers := WN, capacity := WX} =
                lists:foldl(fun(#{capacity := X} = P, #{capacity := BX}) when X < BX -> P;
                               (_, Acc) -> Acc
                            end, hd(Beyond), Beyond),
            Peak = hd([P || #{schedulers := N} = P <- Points, N =:= PN]),
            Conf = case beamlab_stats_ratio:ratio(maps:get(capacity_samples, Peak),
                                                  maps:get(capacity_samples, lists:last(Beyond)), ?CONF) of
                       #{verdict := lower} -> high;
                       _ -> medium
                   end,
            %% A VM running more schedulers than the peak loses capacity
            %% now, when its own runs (the default's, measured apart from
            %% the curve's point) confirm it: a stall of the host during
            %% one point's runs alone (seen on a quiet VM: +S 2 at 0.66 of
            %% +S 1 while the default, also 2 schedulers, held 0.97) is
            %% no critical finding. A peak below the CPUs the VM may use
            %% is the pathology (the forum report's); a fall only beyond
            %% those CPUs, with the VM at or below the peak, is what
            %% oversubscription does on any machine: said, not a warning.
            Al = maps:get(cpus_allowed, B, null),
            Own = maps:get(capacity, B, null),
            Sev = if
                      is_integer(On), On > PN, is_number(Own), Own < ?COLLAPSE * PX -> critical;
                      is_integer(Al), is_integer(On), PN >= Al -> info;
                      true -> warning
                  end,
            {Title, Remedy, Remedies} =
                case Sev of
                    info ->
                        {s("capacity falls beyond ~b scheduler~s, past the CPUs the VM may use (oversubscription)",
                           [PN, plural(PN)]),
                         s("nothing to change: the VM runs ~b scheduler~s", [On, plural(On)]), []};
                    _ ->
                        {s("capacity collapses beyond ~b scheduler~s", [PN, plural(PN)]),
                         s("start the VM with ~ts", [s_flag(PN)]),
                         [s_flag(PN), <<(s_flag(PN))/binary, " ", (sbwt())/binary>>]}
                end,
            [finding(collapse, Sev, Title,
                     s("capacity peaks at ~ts msg/s with ~b scheduler~s and falls to ~ts of it with ~b",
                       [num(PX), PN, plural(PN), pct(WX / PX), WN]),
                     Remedy, Conf, Remedies,
                     #{peak_schedulers => PN, worst_schedulers => WN, worst_share => WX / PX})]
    end;
collapse(_, _) ->
    [].

%% Spinning: the share of the VM's CPU time its schedulers spent outside
%% useful work (msacc's busy_wait state where the emulator has it, its
%% `other' otherwise, where the default build counts spinning), while
%% the load left them mostly idle.
busy_wait(#{msacc := M, utilisation := U, cpu_per_msg_us := Cpm, cpu_share := CS} = B)
  when map_size(M) > 0, is_number(U) ->
    Spin = case maps:find(busy_wait, M) of
               {ok, BW} -> BW;
               error -> maps:get(other, M, 0.0)
           end,
    Work = lists:sum([maps:get(K, M, 0.0) || K <- [emulator, gc, port, check_io, aux, nif, bif,
                                                      send, timers]]),
    Share = case Spin + Work of
                T when T > 0 -> Spin / T;
                _ -> 0.0
            end,
    case Share >= ?BUSY_WAIT andalso U < 0.7 andalso not sbwt_off(B) of
        true ->
            [finding(busy_wait, warning,
                     s("schedulers busy-wait: ~ts of their awake time does no work", [pct(Share)]),
                     s("~ts the schedulers were busy ~ts of the time but awake "
                       "(spinning: ~ts, working: ~ts of their time); the VM used ~ts of its schedulers' "
                       "time in CPU~ts",
                       [maps:get(where, B, <<"under the load (below capacity)">>),
                        pct(U), pct(Spin), pct(Work), case CS of null -> <<"?">>; _ -> pct(CS) end,
                        case Cpm of null -> <<>>; _ -> [", ", us(Cpm), " per message"] end]),
                     s("start the VM with ~ts (RabbitMQ's default since 3.11)", [sbwt()]), medium,
                     [sbwt()], #{spin_share => Share, utilisation => U})];
        false -> []
    end;
busy_wait(_) ->
    [].

%% A few schedulers saturated while others idle under the saturating
%% load, raised only when the samples show it offered the idle ones work
%% (beamlab_env_doctor_sched): a load that was not parallel says nothing
%% about the machine.
imbalance(B) ->
    beamlab_env_doctor_sched:imbalance(#{samples => maps:get(capacity_utilisation_samples, B, []),
                                         run_queue_mean => maps:get(capacity_run_queue_mean, B, null),
                                         migrations_per_s => maps:get(migrations_per_s, B, null),
                                         stranded => maps:get(capacity_stranded, B, null),
                                         active_mean => maps:get(capacity_active_mean, B, []),
                                         unoffered => none,
                                         where => <<"under the saturating load">>}).

sbwt_off(#{emu_args := Args}) ->
    lists:member(<<"-sbwt">>, Args) andalso lists:member(<<"none">>, Args);
sbwt_off(_) ->
    false.

others(#{others_share := O, schedulers_online := On, cpus_allowed := Al} = B) when is_number(O), O >= ?OTHERS_WARN ->
    Sev = case O >= ?OTHERS_CRIT of true -> critical; false -> warning end,
    Free = case is_integer(Al) of
               true -> max(1, round(Al * (1 - O)));
               false -> 1
           end,
    Rem = [<<(s_flag(Free))/binary, " ", (sbwt())/binary>> || is_integer(On), Free < On]
        ++ [sbwt()] ++ [s_flag(Free) || is_integer(On), Free < On],
    [finding(competing, Sev,
             s("other processes take ~ts of the CPUs", [pct(O)]),
             s("~ts, processes other than the VM used ~ts of the CPU time of the ~ts CPU~s "
               "the VM may run on", [maps:get(where, B, <<"while the probe ran">>),
                                     pct(O), case Al of null -> "?"; _ -> integer_to_list(Al) end,
                                     plural(Al)]),
             s("move the other work away (taskset/cpuset) or give the VM fewer schedulers and no "
               "busy-waiting: ~ts", [hd(Rem)]),
             case O >= ?OTHERS_CRIT of true -> high; false -> medium end, Rem,
             #{others_share => O})];
others(_) ->
    [].

steal(#{steal_share := S}) when is_number(S), S >= ?STEAL_WARN ->
    Sev = case S >= ?STEAL_CRIT of true -> critical; false -> warning end,
    [finding(steal, Sev, s("the hypervisor steals ~ts of the CPU time", [pct(S)]),
             s("/proc/stat counted ~ts of the machine's CPU time as stolen while the probe ran", [pct(S)]),
             <<"a larger or dedicated instance (metal) or fewer vCPUs per host; no VM flag cures this">>,
             high, [], #{steal_share => S})];
steal(_) ->
    [].

smt(#{threads_per_core := T, physical_cores := C}, #{schedulers_online := On})
  when is_integer(T), T > 1, is_integer(C), is_integer(On), On > C ->
    [finding(smt, info, s("~b SMT siblings per core: ~b schedulers on ~b physical cores", [T, On, C]),
             s("the CPUs come in groups of ~b hardware threads sharing a core; ~b schedulers online "
               "make siblings compete for its execution units", [T, On]),
             s("try ~ts (one scheduler per core) and +sbt ps", [s_flag(C)]), medium,
             [s_flag(C), <<"+sbt ps">>], #{threads_per_core => T, physical_cores => C})];
smt(_, _) ->
    [].

numa(#{numa_nodes := N, numa := Nodes}) when N > 1 ->
    Dist = [maps:get(distances, Nd, []) || Nd <- Nodes],
    Numactl = <<"numactl --cpunodebind=0 --membind=0">>,
    [finding(numa, warning, s("~b NUMA nodes: the VM's work spreads across them", [N]),
             s("~b NUMA nodes with distances ~ts; a VM with one scheduler per CPU runs on all of them "
               "and its processes' memory is remote for most schedulers", [N, s("~w", [Dist])]),
             s("bind the schedulers (+sbt tnnps or +sbt ps) or run the VM on one node (~ts)", [Numactl]),
             medium, [<<"+sbt tnnps">>, <<"+sbt ps">>, <<"+sbt db">>] ++ [Numactl || os:find_executable("numactl") =/= false],
             #{nodes => N})];
numa(_) ->
    [].

frequency(#{frequency := #{governor := G, current_khz := Cur, max_khz := Max}})
  when is_binary(G), G =/= <<"performance">>, Cur =/= [], is_integer(Max), Max > 0 ->
    Low = lists:min(Cur) / Max,
    case Low < 0.8 of
        true ->
            [finding(frequency_scaling, info,
                     s("CPU frequency scaling (~ts): CPUs run at ~ts of their maximum", [G, pct(Low)]),
                     s("governor ~ts; current frequencies ~ts kHz, maximum ~b kHz", [G, s("~w", [Cur]), Max]),
                     <<"set the governor to performance (cpupower frequency-set -g performance) when "
                       "latency matters; no VM flag changes it">>, medium, [],
                     #{governor => G, min_share => Low})];
        false -> []
    end;
frequency(_) ->
    [].

late_timers(#{timer_overshoot_us := T}) when is_number(T), T >= ?LATE_TIMER_US ->
    [finding(late_timers, warning, s("timers fire late: a 1 ms timer overshoots by ~ts", [us(T)]),
             s("the median overshoot of nine 1 ms sleeps in the probed VM was ~ts", [us(T)]),
             <<"look for CPU contention (other processes, a quota) or timer slack; +swt very_low wakes "
               "sleeping schedulers sooner">>, medium, [<<"+swt very_low">>], #{overshoot_us => T})];
late_timers(_) ->
    [].

healthy(B, Curve) ->
    finding(no_pathology, info, <<"no pathology found">>,
            s("capacity ~ts msg/s with the default flags, peak ~ts msg/s at ~ts schedulers; load goodput "
              "~ts msg/s, p99 latency ~ts, CPU per message ~ts; other processes ~ts, steal ~ts",
              [num(maps:get(capacity, B)), num(maps:get(peak_capacity, Curve)),
               case maps:get(peak_schedulers, Curve) of null -> "?"; N -> integer_to_list(N) end,
               num(maps:get(goodput, B)), us(maps:get(latency_p99_us, B)), us(maps:get(cpu_per_msg_us, B)),
               opt_pct(maps:get(others_share, B)), opt_pct(maps:get(steal_share, B))]),
            <<"nothing to change">>, medium, [], #{}).

opt_pct(null) -> <<"unknown">>;
opt_pct(X) -> pct(X).

plural(1) -> "";
plural(_) -> "s".

num(null) -> <<"?">>;
num(X) when X >= 1.0e6 -> s("~.2fM", [X / 1.0e6]);
num(X) when X >= 1.0e3 -> s("~.1fk", [X / 1.0e3]);
num(X) -> s("~.1f", [float(X)]).

us(null) -> <<"?">>;
us(X) when X >= 1000 -> s("~.2f ms", [X / 1000]);
us(X) -> s("~.2f us", [float(X)]).

%% @doc The remedies to measure: the findings' flag sets (the most severe
%% first), without the default's own flags, at most `Max'; a machine with
%% no finding that suggests any gets the no-busy-wait set (RabbitMQ's
%% default today) so the comparison is still made.
-spec candidates([beamlab_result:finding()], [string()], pos_integer()) -> [remedy()].
candidates(Findings, BaseArgs, Max) ->
    Order = fun(#{severity := critical}) -> 0; (#{severity := warning}) -> 1; (_) -> 2 end,
    Sorted = lists:sort(fun(A, B) -> Order(A) =< Order(B) end, Findings),
    Pairs = [{R, Id} || #{id := Id, data := D} <- Sorted, R <- maps:get(<<"remedies">>, D, [])],
    Pairs1 = case Pairs of
                 [] -> [{sbwt(), <<"no_pathology">>}];
                 _ -> Pairs
             end,
    Names = lists:foldl(fun({R, _}, Acc) ->
                                case lists:member(R, Acc) of
                                    true -> Acc;
                                    false -> Acc ++ [R]
                                end
                        end, [], Pairs1),
    Base = iolist_to_binary(lists:join(" ", BaseArgs)),
    [remedy(N, [Id || {R, Id} <- Pairs1, R =:= N], BaseArgs)
     || N <- lists:sublist([N || N <- Names, N =/= Base], Max)].

%% @doc A remedy from its flag string: emulator flags added to the
%% default's, or a `numactl ...' command the VM is started under.
-spec remedy(binary(), [binary()], [string()]) -> remedy().
remedy(<<"numactl ", _/binary>> = N, Why, BaseArgs) ->
    #{name => N, args => BaseArgs, wrap => string:lexemes(binary_to_list(N), " "), why => lists:usort(Why)};
remedy(N, Why, BaseArgs) ->
    #{name => N, args => BaseArgs ++ flags_of(N), wrap => [], why => lists:usort(Why)}.

%% @doc A flag string as emulator arguments (`"+S 2:2 +sbwt none"').
-spec flags_of(binary() | string()) -> [string()].
flags_of(B) ->
    beamlab_runtime_peer:split_args(unicode:characters_to_list(B)).

%% @doc Each remedy against the default, from their repetitions'
%% summaries: ratios with intervals on the log scale for goodput,
%% capacity, p99 latency and CPU per message, a verdict, and the score
%% that ranks them: the geometric mean of the goodput and capacity
%% ratios divided by the CPU-per-message ratio (more messages, each for
%% less CPU). Clearly better remedies (a ratio's interval excludes 1 in
%% the good direction, none in the bad) come first, then trade-offs (some
%% of each) and those with no clear difference, then the clearly worse;
%% by score within each. Returned best first.
%%
%% The intervals are Bonferroni-corrected over every remedy x figure
%% comparison of the run (m of them, each interval at confidence
%% 1 - (1 - Conf) / m): with four remedies and four figures at 95% each,
%% a healthy machine would see some interval exclude 1 by chance in more
%% than half the runs; corrected, in at most 1 - Conf of them. Each row
%% says the correction (`correction', `comparisons', `confidence').
-spec rank(summary(), [{remedy(), summary()}], float()) -> [ranked()].
rank(Base, Remedies, Conf) ->
    rank(Base, Remedies, #{metrics => [{goodput, goodput_samples, higher, gain},
                                       {capacity, capacity_samples, higher, gain},
                                       {latency_p99, latency_p99_samples, lower, none},
                                       {cpu_per_msg, cpu_per_msg_samples, lower, cost}],
                           medians => [goodput, capacity, latency_p99_us, cpu_per_msg_us, round_trip_us],
                           correction => bonferroni},
         Conf).

%% @doc {@link rank/3} over any figures (a system under test's load:
%% `beamlab_env_doctor_target'): each metric is `{Key, SamplesKey,
%% Better, Role}', its ratio kept under `Key'; the score is the geometric
%% mean of the `gain' ratios divided by that of the `cost' ratios;
%% `medians' are the summary's keys kept beside the ratios; `correction'
%% (`bonferroni' or `none', the default) the multiplicity correction of
%% the intervals ({@link corrected/4}).
-spec rank(summary(), [{remedy(), summary()}],
           #{metrics := [metric()], medians := [atom()], correction => bonferroni | none}, float()) ->
          [ranked()].
rank(Base, Remedies, #{metrics := Metrics} = Spec, Conf) ->
    Corr = corrected(maps:get(correction, Spec, none), length(Remedies), length(Metrics), Conf),
    #{confidence := C} = Corr,
    Rows = [maps:merge(row(Base, R, S, Spec, C), Corr) || {R, S} <- Remedies],
    lists:sort(fun(A, B) -> key(A) =< key(B) end, Rows).

%% @doc The confidence of each interval when `Remedies' x `Figures'
%% comparisons are made at family-wise confidence `Conf': Bonferroni's
%% 1 - (1 - Conf) / m, or `Conf' itself without a correction (or with
%% one comparison).
-spec corrected(bonferroni | none, non_neg_integer(), non_neg_integer(), float()) ->
          #{correction := bonferroni | none, comparisons := non_neg_integer(), confidence := float()}.
corrected(bonferroni, Remedies, Figures, Conf) when Remedies * Figures > 1 ->
    M = Remedies * Figures,
    #{correction => bonferroni, comparisons => M, confidence => 1 - (1 - Conf) / M};
corrected(_, Remedies, Figures, Conf) ->
    #{correction => none, comparisons => Remedies * Figures, confidence => Conf}.

%% Clearly better first, then neither, then clearly worse; by score within.
key(#{verdict := V, score := S}) ->
    {case V of better -> 0; trade_off -> 1; no_difference -> 1; worse -> 2 end, case S of null -> 0.0; _ -> -S end}.

row(Base, #{name := Name, why := Why}, S, #{metrics := Metrics, medians := Medians}, Conf) ->
    Rs = [{K, Better, Role, beamlab_stats_ratio:ratio(maps:get(SK, Base, []), maps:get(SK, S, []), Conf)}
          || {K, SK, Better, Role} <- Metrics],
    Score = score([R || {_, _, gain, #{ratio := R}} <- Rs], [R || {_, _, cost, #{ratio := R}} <- Rs]),
    %% Clearly better: more of a higher-is-better figure, less of a
    %% lower-is-better one (an interval that excludes 1); clearly worse:
    %% the opposite. Both at once is a trade-off, not a cure and not harm.
    Gains = [K || {K, Good, _, #{verdict := V}} <- Rs, V =:= Good],
    Losses = [K || {K, Good, _, #{verdict := V}} <- Rs, V =:= opposite(Good)],
    {Better, Worse} = {Gains =/= [] andalso Losses =:= [], Losses =/= [] andalso Gains =:= []},
    maps:merge(maps:from_list([{K, ratio_out(R)} || {K, _, _, R} <- Rs]),
               #{name => Name, why => Why, n => maps:get(n, S), score => Score, worse => Worse,
                 verdict => if Worse -> worse; Better -> better; Gains =/= [] -> trade_off; true -> no_difference end,
                 medians => maps:with(Medians, S)}).

opposite(higher) -> lower;
opposite(lower) -> higher.

%% Geometric mean of the gains over that of the costs (null when a
%% ratio is unknown).
score(Gains, Costs) ->
    case lists:all(fun(R) -> is_float(R) andalso R > 0 end, Gains ++ Costs) andalso Gains =/= [] of
        true -> geomean(Gains) / geomean(Costs);
        false -> null
    end.

geomean([]) -> 1.0;
geomean(Rs) -> math:exp(lists:sum([math:log(R) || R <- Rs]) / length(Rs)).

ratio_out(#{ratio := R, ci := Ci, verdict := V}) ->
    #{ratio => R, ci => case Ci of undefined -> null; {Lo, Hi} -> [Lo, Hi] end, verdict => V}.

%% @doc The first line of the output: the flags to start the VM with and
%% what they buy, or why the default stays.
-spec recommendation([ranked()]) -> binary().
recommendation([#{verdict := better, name := Name} = Best | _]) ->
    s("start the VM with ~ts: ~ts", [Name, buys(Best)]);
recommendation([#{name := Name} = Best | _]) ->
    s("keep the VM's flags: no remedy measured clearly better (best tried: ~ts: ~ts)", [Name, buys(Best)]);
recommendation([]) ->
    <<"keep the VM's flags: no remedy was measured">>.

buys(Row) ->
    buys(Row, [{goodput, "goodput"}, {capacity, "capacity"}, {latency_p99, "p99 latency"},
               {cpu_per_msg, "CPU per message"}]).

%% @doc What a ranked remedy buys, as the recommendation says it: each
%% figure `{Key, Label}' as its ratio with the interval
%% (`throughput 1.10x (1.02 .. 1.19)').
-spec buys(ranked(), [{atom(), string()}]) -> binary().
buys(Row, Figures) ->
    iolist_to_binary(lists:join(", ", [x(Label, maps:get(K, Row, #{ratio => null})) || {K, Label} <- Figures])).

x(What, #{ratio := R}) when not is_number(R) -> s("~ts unknown", [What]);
x(What, #{ratio := R, ci := null}) -> s("~ts ~.2fx (one repetition: no interval)", [What, R]);
x(What, #{ratio := R, ci := [Lo, Hi]}) -> s("~ts ~.2fx (~.2f .. ~.2f)", [What, R, Lo, Hi]).
