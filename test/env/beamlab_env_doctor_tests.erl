-module(beamlab_env_doctor_tests).
-include_lib("eunit/include/eunit.hrl").

fixture(Name) ->
    filename:join([code:lib_dir(beamlab), "..", "..", "..", "..", "test", "fixtures", "env", Name]).

root(Name) ->
    %% Run from the project directory (rebar3 eunit) or from _build.
    case filelib:is_dir(filename:join(["test", "fixtures", "env", Name])) of
        true -> filename:join(["test", "fixtures", "env", Name]);
        false -> fixture(Name)
    end.

smt_numa_facts_test() ->
    F = beamlab_env_doctor_facts:machine(root("doctor_smt")),
    ?assertEqual(4, maps:get(logical_cpus, F)),
    ?assertEqual(2, maps:get(physical_cores, F)),
    ?assertEqual(2, maps:get(threads_per_core, F)),
    ?assertEqual([[0, 2], [1, 3]], maps:get(smt_groups, F)),
    ?assertEqual(2, maps:get(numa_nodes, F)),
    ?assertEqual([10, 21], maps:get(distances, hd(maps:get(numa, F)))),
    ?assertEqual(#{level => 3, groups => [[0, 1, 2, 3]]}, maps:get(llc_groups, F)),
    ?assertMatch(#{governor := <<"powersave">>, max_khz := 3000000,
                   current_khz := [1200000, 1300000, 1400000, 1500000]}, maps:get(frequency, F)),
    ?assertEqual(<<"madvise">>, maps:get(thp, F)),
    ?assertEqual(#{visible => true, state => <<"enabled">>, ops => <<"rusty">>}, maps:get(sched_ext, F)),
    ?assertEqual([3], maps:get(isolated_cpus, F)),
    ?assertEqual(0.5, maps:get(load1, F)).

missing_files_test() ->
    F = beamlab_env_doctor_facts:machine(root("nothing")),
    ?assertEqual(null, maps:get(logical_cpus, F)),
    ?assertEqual(0, maps:get(numa_nodes, F)),
    ?assertEqual(#{visible => false}, maps:get(sched_ext, F)),
    ?assertEqual(null, maps:get(thp, F)),
    ?assertNotEqual([], maps:get(notes, F)).

counts_test() ->
    ?assertEqual([1, 2, 4], beamlab_env_doctor:counts(2)),
    ?assertEqual([1, 2], beamlab_env_doctor:counts(1)),
    ?assertEqual([1, 2, 4, 6, 8, 12], beamlab_env_doctor:counts(6)),
    C96 = beamlab_env_doctor:counts(96),
    ?assert(length(C96) =< 8),
    ?assert(lists:member(96, C96) andalso lists:member(192, C96) andalso lists:member(1, C96)).

%% A probe run as beamlab_suite_probe returns it.
run(Goodput, Capacity, CpuPerMsg, Msacc, Util, Vm) ->
    Load = #{goodput => Goodput, latency_p99_us => 100.0, latency_p50_us => 10.0, flushput => 10.0,
             cpu_per_msg_us => CpuPerMsg, cpu_us => 100000, wall_us => 1000000,
             msacc => Msacc, utilisation => Util, run_queue => #{mean => 0.1, max => 2},
             machine => #{total_ticks => 200, busy_ticks => 12, steal_ticks => 0, tick_us => 10000},
             throttled => #{}},
    Mesh = Load#{goodput => Capacity},
    #{probe => #{load => Load, mesh => Mesh, ping_pong => #{round_trip_us => 1.0}}, vm => Vm}.

vm(Online, Allowed) ->
    #{schedulers_online => Online, cpus_allowed => lists:seq(0, Allowed - 1), cgroup_quota_cpus => null,
      emu_args => [], timer_overshoot_us => 80}.

quiet_msacc() -> #{emulator => 0.05, gc => 0.01, other => 0.01, sleep => 0.93}.

machine() ->
    #{logical_cpus => 2, physical_cores => 2, threads_per_core => 1, numa_nodes => 1, numa => [],
      frequency => #{governor => null, current_khz => [], max_khz => null}}.

curve(Points) ->
    beamlab_env_doctor:curve([{N, beamlab_env_doctor:summary([run(30000, C, 2.0, quiet_msacc(), 0.3, vm(N, 2))
                                                              || C <- Cs])} || {N, Cs} <- Points]).

ids(Fs) -> [Id || #{id := Id} <- Fs].

healthy_test() ->
    Base = beamlab_env_doctor:summary([run(30000, 300000, 2.0, quiet_msacc(), 0.3, vm(2, 2)) || _ <- [1, 2, 3]]),
    Curve = curve([{1, [150000, 151000]}, {2, [300000, 298000]}, {4, [290000, 295000]}]),
    Fs = beamlab_env_doctor:findings(machine(), Base, Curve),
    ?assertEqual([<<"no_pathology">>], ids(Fs)),
    ?assertEqual([], [F || #{severity := critical} = F <- Fs]),
    %% No finding suggests a remedy: the no-busy-wait set is still measured.
    ?assertMatch([#{name := <<"+sbwt none +sbwtdcpu none +sbwtdio none">>}],
                 beamlab_env_doctor:candidates(Fs, [], 3)).

oversubscribed_and_collapse_test() ->
    Base = beamlab_env_doctor:summary([run(30000, 100000, 6.0, quiet_msacc(), 0.3, vm(16, 2)) || _ <- [1, 2]]),
    Curve = curve([{1, [150000, 151000]}, {2, [300000, 298000]}, {4, [100000, 101000]}]),
    Fs = beamlab_env_doctor:findings(machine(), Base, Curve),
    ?assert(lists:member(<<"oversubscribed">>, ids(Fs))),
    ?assert(lists:member(<<"collapse">>, ids(Fs))),
    [First | _] = beamlab_env_doctor:candidates(Fs, ["+S", "16:16"], 3),
    ?assertEqual(<<"+S 2:2">>, maps:get(name, First)),
    ?assertEqual(["+S", "16:16", "+S", "2:2"], maps:get(args, First)).

%% Capacity falling only past the CPUs the VM may use is what
%% oversubscription does anywhere: said (info), no remedy, still "no
%% pathology found"; a peak below those CPUs is the pathology (warning,
%% critical when the VM runs more schedulers than the peak).
collapse_severity_test() ->
    Past = curve([{1, [150000, 151000]}, {2, [300000, 298000]}, {4, [150000, 152000]}]),
    Healthy = beamlab_env_doctor:summary([run(30000, 300000, 2.0, quiet_msacc(), 0.3, vm(2, 2)) || _ <- [1, 2]]),
    Fs = beamlab_env_doctor:findings(machine(), Healthy, Past),
    ?assertEqual([<<"no_pathology">>, <<"collapse">>], ids(Fs)),
    [#{severity := info, title := T, data := D}] = [F || #{id := <<"collapse">>} = F <- Fs],
    ?assertNotEqual(nomatch, binary:match(T, <<"oversubscription">>)),
    ?assertEqual([], maps:get(<<"remedies">>, D)),
    ?assertMatch([#{name := <<"+sbwt none +sbwtdcpu none +sbwtdio none">>}],
                 beamlab_env_doctor:candidates(Fs, [], 3)),
    Within = curve([{1, [300000, 298000]}, {2, [150000, 151000]}, {4, [100000, 101000]}]),
    One = beamlab_env_doctor:summary([run(30000, 300000, 2.0, quiet_msacc(), 0.3, vm(1, 2)) || _ <- [1, 2]]),
    ?assertMatch([#{severity := warning}],
                 [F || #{id := <<"collapse">>} = F <- beamlab_env_doctor:findings(machine(), One, Within)]),
    %% The VM's own runs (the default, 2 schedulers) held the peak's
    %% capacity: the curve's low point at 2 is not confirmed, no critical.
    ?assertMatch([#{severity := warning}],
                 [F || #{id := <<"collapse">>} = F <- beamlab_env_doctor:findings(machine(), Healthy, Within)]),
    Slow = beamlab_env_doctor:summary([run(30000, 140000, 2.0, quiet_msacc(), 0.3, vm(2, 2)) || _ <- [1, 2]]),
    ?assertMatch([#{severity := critical}],
                 [F || #{id := <<"collapse">>} = F <- beamlab_env_doctor:findings(machine(), Slow, Within)]).

busy_wait_test() ->
    Spinning = #{emulator => 0.03, gc => 0.01, other => 0.30, sleep => 0.66},
    Base = beamlab_env_doctor:summary([run(30000, 300000, 5.0, Spinning, 0.05, vm(2, 2)) || _ <- [1, 2]]),
    Fs = beamlab_env_doctor:findings(machine(), Base, curve([{1, [1.5e5]}, {2, [3.0e5]}])),
    ?assertEqual([<<"busy_wait">>], ids(Fs)),
    [#{name := N}] = beamlab_env_doctor:candidates(Fs, [], 3),
    ?assertEqual(<<"+sbwt none +sbwtdcpu none +sbwtdio none">>, N).

quota_and_smt_numa_test() ->
    Vm = (vm(2, 2))#{cgroup_quota_cpus => 0.5},
    Base = beamlab_env_doctor:summary([run(30000, 300000, 2.0, quiet_msacc(), 0.3, Vm)]),
    M = beamlab_env_doctor_facts:machine(root("doctor_smt")),
    Fs = beamlab_env_doctor:findings(M, Base#{schedulers_online := 4}, curve([{1, [1.0e5]}, {2, [2.0e5]}])),
    ?assert(lists:member(<<"cgroup_quota">>, ids(Fs))),
    ?assert(lists:member(<<"smt">>, ids(Fs))),
    ?assert(lists:member(<<"numa">>, ids(Fs))),
    ?assert(lists:member(<<"frequency_scaling">>, ids(Fs))),
    #{severity := critical} = hd([F || #{id := <<"cgroup_quota">>} = F <- Fs]).

rank_test() ->
    Base = beamlab_env_doctor:summary([run(G, 100000, 4.0, quiet_msacc(), 0.3, vm(2, 2)) || G <- [30000, 31000, 29000]]),
    Good = beamlab_env_doctor:summary([run(G, 300000, 2.0, quiet_msacc(), 0.3, vm(2, 2)) || G <- [30000, 30500, 29500]]),
    Bad = beamlab_env_doctor:summary([run(G, 50000, 4.0, quiet_msacc(), 0.3, vm(2, 2)) || G <- [15000, 15500, 14500]]),
    R = fun(N) -> #{name => N, args => [], wrap => [], why => [<<"x">>]} end,
    [First, Second] = beamlab_env_doctor:rank(Base, [{R(<<"bad">>), Bad}, {R(<<"good">>), Good}], 0.95),
    ?assertMatch(#{name := <<"good">>, verdict := better}, First),
    ?assertMatch(#{name := <<"bad">>, verdict := worse}, Second),
    Line = beamlab_env_doctor:recommendation([First, Second]),
    ?assertMatch(<<"start the VM with good: goodput 1.00x (", _/binary>>, Line),
    ?assertMatch(<<"keep the VM's flags", _/binary>>, beamlab_env_doctor:recommendation([Second])).

status_cpus_test() ->
    S = <<"Name:\tbeam.smp\nCpus_allowed:\t3\nCpus_allowed_list:\t0-1,4\nMems_allowed_list:\t0\n">>,
    ?assertEqual([0, 1, 4], beamlab_suite_probe:parse_status_cpus(S)),
    ?assertEqual([], beamlab_suite_probe:parse_status_cpus(<<"Name: x\n">>)).

%% Two documents as the doctor writes them (JSON sections), compared.
doc(Host, Numa, Capacities, Findings) ->
    D0 = beamlab_result:new(doctor, #{command => [<<"doctor">>], started_at => <<"2026-01-01T00:00:00Z">>}),
    D1 = beamlab_result:set(env, #{os => #{hostname => Host}}, D0),
    D2 = beamlab_result:set(extra, #{machine => #{numa_nodes => Numa, logical_cpus => 4, load1 => 0.1},
                                     vm => #{schedulers_online => 4},
                                     default => #{capacity => hd(Capacities), goodput => 1000.0},
                                     curve => #{points => [#{schedulers => N, capacity => C}
                                                           || {N, C} <- lists:zip([1, 2, 4], Capacities)]},
                                     recommendation => <<"keep">>}, D1),
    beamlab_result:add_findings(D2, Findings).

compare_test() ->
    Numa = beamlab_result:finding(numa, warning, <<"2 NUMA nodes">>, <<"e">>, <<"a">>, #{}),
    A = doc(<<"a">>, 1, [100.0, 200.0, 400.0], []),
    B = doc(<<"b">>, 2, [100.0, 210.0, 150.0], [Numa]),
    C = beamlab_result_doctor:compare(A, B),
    ?assertEqual(4, maps:get(parted_at, C)),
    ?assertMatch([#{fact := <<"machine.numa_nodes">>, a := 1, b := 2}], maps:get(facts, C)),
    ?assertMatch([#{id := <<"numa">>}], maps:get(only_b, C)),
    ?assertEqual([], maps:get(only_a, C)),
    ?assertMatch(<<"b at ", _/binary>>, maps:get(b, C)),
    Text = iolist_to_binary(beamlab_render_doctor:compare(C)),
    ?assertNotEqual(nomatch, binary:match(Text, <<"part at 4 schedulers">>)),
    Same = beamlab_result_doctor:compare(A, A),
    ?assertEqual(null, maps:get(parted_at, Same)),
    ?assertEqual([], maps:get(facts, Same)).

%% The multiplicity correction: m = remedies x figures comparisons, each
%% interval at 1 - 0.05 / m; none for one comparison or when not asked.
corrected_test() ->
    ?assertEqual(#{correction => bonferroni, comparisons => 16, confidence => 1 - 0.05 / 16},
                 beamlab_env_doctor:corrected(bonferroni, 4, 4, 0.95)),
    ?assertEqual(#{correction => none, comparisons => 1, confidence => 0.95},
                 beamlab_env_doctor:corrected(bonferroni, 1, 1, 0.95)),
    ?assertEqual(#{correction => none, comparisons => 8, confidence => 0.95},
                 beamlab_env_doctor:corrected(none, 2, 4, 0.95)).

%% An A/A-like run: four remedies that are the default (the same machine,
%% run-to-run noise), one of them lucky in goodput: at 95% each its
%% interval just excludes 1 and it would be recommended; over the 16
%% comparisons, Bonferroni-corrected, nothing is, and every row says the
%% correction.
correction_recommends_nothing_by_chance_test() ->
    %% capacity and CPU per message: noise of the same size in every configuration
    S = fun(Gs) -> beamlab_env_doctor:summary([run(G, 3.0e5 + 10 * (G rem 1000), 2.0 + (G rem 1000) / 1.0e5,
                                                   quiet_msacc(), 0.3, vm(2, 2))
                                               || G <- Gs]) end,
    Base = S([30000, 30300, 29700]),
    Lucky = S([30700, 31000, 31300]),
    Same = [S([29900, 30200, 30000 + 100 * I]) || I <- [1, 2, 3]],
    R = fun(N) -> #{name => N, args => [], wrap => [], why => [<<"x">>]} end,
    One = beamlab_stats_ratio:ratio(maps:get(goodput_samples, Base), maps:get(goodput_samples, Lucky), 0.95),
    ?assertMatch(#{verdict := higher}, One),
    Ranked = beamlab_env_doctor:rank(Base, [{R(<<"lucky">>), Lucky}
                                            | [{R(integer_to_binary(I)), X} || {I, X} <- lists:enumerate(Same)]],
                                     0.95),
    ?assertEqual([], [N || #{name := N, verdict := better} <- Ranked]),
    ?assertMatch(<<"keep the VM's flags", _/binary>>, beamlab_env_doctor:recommendation(Ranked)),
    [?assertMatch(#{correction := bonferroni, comparisons := 16}, Row) || Row <- Ranked],
    %% a remedy that clearly cures still stands out after the correction
    Cure = S([45000, 45300, 44700]),
    [First | _] = beamlab_env_doctor:rank(Base, [{R(<<"cure">>), Cure} | [{R(<<"same">>), hd(Same)}]], 0.95),
    ?assertMatch(#{name := <<"cure">>, verdict := better}, First).
