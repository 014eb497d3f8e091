%%% `doctor --node''s pure parts: the node's facts from what was read
%%% there, the summary of a watched series, the findings on it and the
%%% recommendation for the node's next start.
-module(beamlab_env_doctor_node_tests).
-include_lib("eunit/include/eunit.hrl").

raw() ->
    #{info => #{os_type => {unix, linux}, os_pid => "4242", schedulers => 8, schedulers_online => 8,
                dirty_cpu_schedulers_online => 8, logical_processors => 4, logical_processors_available => 4,
                scheduler_bind_type => unbound, otp_release => "27", version => "15.2", emu_flavor => jit,
                emu_args => ["/usr/lib/erlang/erts/bin/beam.smp", "-S", "8:8", "-sbwt", "very_long", "--",
                             "-root", "/usr/lib/erlang"]},
      status => <<"Name:\tbeam.smp\nCpus_allowed:\tf\nCpus_allowed_list:\t0-3\n">>,
      cgroup => <<"0::/user.slice\n">>,
      quota => #{"/sys/fs/cgroup/user.slice/cpu.max" => <<"150000 100000\n">>}}.

facts_test() ->
    F = beamlab_env_doctor_node:facts(raw()),
    ?assertEqual(8, maps:get(schedulers_online, F)),
    ?assertEqual([0, 1, 2, 3], maps:get(cpus_allowed, F)),
    ?assertEqual(1.5, maps:get(cgroup_quota_cpus, F)),
    ?assertEqual([<<"-S">>, <<"8:8">>, <<"-sbwt">>, <<"very_long">>], maps:get(emu_args, F)),
    ?assertEqual(<<"unix/linux">>, maps:get(os, F)),
    ?assertEqual(<<"4242">>, maps:get(os_pid, F)),
    ?assertEqual(<<"unbound">>, maps:get(bind_type, F)).

quota_v1_and_none_test() ->
    V1 = (raw())#{quota => #{"/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us" => <<"50000\n">>,
                             "/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us" => <<"100000\n">>}},
    ?assertEqual(0.5, maps:get(cgroup_quota_cpus, beamlab_env_doctor_node:facts(V1))),
    Unlimited = (raw())#{quota => #{"/sys/fs/cgroup/cpu.max" => <<"max 100000\n">>}},
    ?assertEqual(null, maps:get(cgroup_quota_cpus, beamlab_env_doctor_node:facts(Unlimited))),
    Nothing = #{info => #{}, status => null, cgroup => null, quota => #{}},
    F = beamlab_env_doctor_node:facts(Nothing),
    ?assertEqual({[], null, []}, {maps:get(cpus_allowed, F), maps:get(cgroup_quota_cpus, F), maps:get(emu_args, F)}).

%% A watched series (telemetry's shape: percentages per sample) of a node
%% with 8 schedulers on 4 CPUs, spinning under a light load, two of its
%% schedulers saturated: oversubscribed, cgroup quota, busy-wait and
%% imbalance; the recommendation merges their flags.
series() ->
    Sched = [100.0, 99.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 55.0, 55.0],   % 10 normal schedulers, 8 online
    #{util => [27.0, 26.0, 28.0],
      util_schedulers => [Sched, Sched, Sched],
      run_queue => [3, 4, 5],
      msacc => #{other => [70.0, 72.0, 71.0], emulator => [5.0, 5.0, 5.0], sleep => [25.0, 23.0, 24.0]},
      os_cpu_cores => [2.0, 2.0, 2.0],
      machine_cpu_pct => [60.0, 60.0, 60.0],
      steal_pct => [0.0, 0.0, 0.0]}.

summary_test() ->
    S = beamlab_env_doctor_node:summary(beamlab_env_doctor_node:facts(raw()), series(),
                                        #{migrations_per_s => 3.5, logical_cpus => 4}),
    ?assertEqual(8, length(maps:get(utilisation_schedulers, S))),
    ?assertEqual(4.0, maps:get(run_queue_mean, S)),
    ?assertEqual(5, maps:get(run_queue_max, S)),
    ?assert(abs(maps:get(other, maps:get(msacc, S)) - 0.71) < 1.0e-9),
    ?assertEqual(0.25, maps:get(cpu_share, S)),
    %% the machine's 2.4 busy cores less the node's 2.0, of 4 CPUs
    ?assert(abs(maps:get(others_share, S) - 0.1) < 1.0e-9),
    ?assertEqual(4, maps:get(cpus_allowed, S)),
    ?assertEqual(3.5, maps:get(migrations_per_s, S)).

findings_and_recommendation_test() ->
    S = beamlab_env_doctor_node:summary(beamlab_env_doctor_node:facts(raw()), series(),
                                        #{migrations_per_s => 3.5, logical_cpus => 4}),
    Fs = beamlab_env_doctor:node_findings(#{}, S),
    Ids = [Id || #{id := Id} <- Fs],
    [?assert(lists:member(Id, Ids)) || Id <- [<<"oversubscribed">>, <<"cgroup_quota">>, <<"busy_wait">>,
                                             <<"imbalance">>]],
    ?assertNot(lists:member(<<"no_pathology">>, Ids)),
    #{line := Line, flags := Flags, rests_on := Rests} = beamlab_env_doctor_node:recommendation(Fs),
    %% the most severe finding sets +S (affinity: 4 CPUs); the quota's
    %% +S 1:1 does not override it; busy-waiting off; imbalance's +sub.
    ?assertEqual([<<"+S 4:4">>, <<"+sbwt none">>, <<"+sbwtdcpu none">>, <<"+sbwtdio none">>, <<"+sub true">>],
                 Flags),
    ?assertEqual([<<"oversubscribed">>, <<"cgroup_quota">>, <<"busy_wait">>, <<"imbalance">>], Rests),
    ?assertMatch({_, _}, binary:match(Line, <<"start the node next time with +S 4:4 +sbwt none">>)),
    ?assertMatch({_, _}, binary:match(Line, <<"not measured">>)).

healthy_node_test() ->
    Facts = (beamlab_env_doctor_node:facts(raw()))#{schedulers_online => 4, emu_args => [], cgroup_quota_cpus => null},
    Quiet = #{util => [20.0, 22.0], util_schedulers => [[20.0, 21.0, 19.0, 22.0], [22.0, 20.0, 23.0, 21.0]],
              run_queue => [0, 0], msacc => #{emulator => [20.0, 21.0], sleep => [80.0, 79.0]},
              os_cpu_cores => [0.8, 0.9], machine_cpu_pct => [22.0, 23.0]},
    S = beamlab_env_doctor_node:summary(Facts, Quiet, #{migrations_per_s => null, logical_cpus => 4}),
    Fs = beamlab_env_doctor:node_findings(#{}, S),
    ?assertEqual([<<"no_pathology">>], [Id || #{id := Id} <- Fs]),
    ?assertMatch(#{flags := [], rests_on := [], line := <<"keep the node's flags", _/binary>>},
                 beamlab_env_doctor_node:recommendation(Fs)).

%% The text and Markdown views of a node's document (`doctor --node'):
%% the recommendation first, that nothing was measured, each scheduler's
%% utilisation, the migrations, the node's microstate accounting.
node_views_test() ->
    S = beamlab_env_doctor_node:summary(beamlab_env_doctor_node:facts(raw()), series(),
                                        #{migrations_per_s => 3.5, logical_cpus => 4}),
    Fs = beamlab_env_doctor:node_findings(#{}, S),
    #{line := Line} = beamlab_env_doctor_node:recommendation(Fs),
    Doc0 = beamlab_result:new(doctor, #{command => [], started_at => <<"2026-01-01T00:00:00Z">>, params => #{}}),
    Extra = #{recommendation => Line, vm => beamlab_env_doctor_node:facts(raw()), machine => #{},
              default => maps:without([utilisation_samples], S),
              node => #{name => <<"app@127.0.0.1">>, local => true, duration_s => 3.0, samples => 3,
                        utilisation_schedulers => maps:get(utilisation_schedulers, S),
                        utilisation => maps:get(utilisation, S), run_queue_mean => 4.0, run_queue_max => 5,
                        msacc => maps:get(msacc, S), cpu_cores => 2.0, others_share => 0.1, steal_share => 0.0,
                        migrations => #{per_s => 3.5, per_scheduler => [1, 2, 3, 4, 0, 0, 0, 0]},
                        restored => <<"turned back">>, why_not_measured => <<"cannot restart">>}},
    Doc = beamlab_result:add_findings(beamlab_result:set(extra, Extra, Doc0), Fs),
    Text = iolist_to_binary(beamlab_render_doctor:text(Doc)),
    ?assertEqual(Line, hd(binary:split(Text, <<"\n">>))),
    [?assertMatch({_, _}, binary:match(Text, W))
     || W <- [<<"(cannot restart)">>, <<"each scheduler: 100 99 1 0 2 0 1 0">>, <<"3.5 times/s">>,
              <<"Node app@127.0.0.1, watched 3.0 s (3 samples), on this host">>, <<"the node: 8 schedulers online">>]],
    Md = beamlab_render_doctor:markdown(Doc),
    ?assertMatch({_, _}, binary:match(Md, <<"**beamlab doctor --node**">>)),
    ?assertMatch({_, _}, binary:match(Md, <<"each scheduler: 100 99 1 0 2 0 1 0">>)).
