%%% The per-scheduler finding (`imbalance') from fixture observations, and
%%% the scheduler threads' migrations read from a fixture /proc.
-module(beamlab_env_doctor_sched_tests).
-include_lib("eunit/include/eunit.hrl").

root(Name) ->
    case filelib:is_dir(filename:join(["test", "fixtures", "env", Name])) of
        true -> filename:join(["test", "fixtures", "env", Name]);
        false -> filename:join([code:lib_dir(beamlab), "..", "..", "..", "..", "test", "fixtures", "env", Name])
    end.

pattern_test() ->
    ?assertEqual({true, [1, 2], [3, 4]}, beamlab_env_doctor_sched:pattern([1.0, 0.95, 0.02, 0.0])),
    %% all busy, all idle, one scheduler: no pattern
    ?assertEqual(false, beamlab_env_doctor_sched:pattern([1.0, 0.97, 0.93])),
    ?assertEqual(false, beamlab_env_doctor_sched:pattern([0.1, 0.0])),
    ?assertEqual(false, beamlab_env_doctor_sched:pattern([1.0])),
    %% busy but not saturated beside idle: not the pattern
    ?assertEqual(false, beamlab_env_doctor_sched:pattern([0.8, 0.1])).

mean_vector_test() ->
    ?assertEqual([0.5, 0.25], beamlab_env_doctor_sched:mean_vector([[1.0, 0.0], [0.0, 0.5]])),
    %% an observation of another length (schedulers changed) is left out
    ?assertEqual([1.0, 0.0], beamlab_env_doctor_sched:mean_vector([[1.0, 0.0], [1.0, 0.0], [0.3]])),
    ?assertEqual([], beamlab_env_doctor_sched:mean_vector([])).

%% The forum report's dump: a few schedulers saturated, the rest idle,
%% work waiting: a warning, sure of it when every sample shows it.
forum_pattern_test() ->
    S = [1.0, 0.99, 0.01, 0.0, 0.02, 0.0],
    [F] = beamlab_env_doctor_sched:imbalance(#{samples => lists:duplicate(5, S), run_queue_mean => 4.0,
                                               migrations_per_s => 12.5, where => <<"while the node worked">>}),
    ?assertMatch(#{id := <<"imbalance">>, severity := warning}, F),
    D = maps:get(data, F),
    ?assertEqual(<<"high">>, maps:get(<<"confidence">>, D)),
    ?assertEqual([1, 2], maps:get(<<"hot">>, D)),
    ?assertEqual([3, 4, 5, 6], maps:get(<<"idle">>, D)),
    ?assertEqual([<<"+sub true">>, <<"+scl false">>], maps:get(<<"remedies">>, D)),
    ?assertEqual(<<"2 of 6 schedulers at 90% or more while 4 idle">>, maps:get(title, F)),
    E = maps:get(evidence, F),
    ?assertNotEqual(nomatch, binary:match(E, <<"100% 99% 1% 0% 2% 0%">>)),
    ?assertNotEqual(nomatch, binary:match(E, <<"5 of 5 observations">>)),
    ?assertNotEqual(nomatch, binary:match(E, <<"12.5 times/s">>)).

%% A light load on few schedulers with nothing waiting is load
%% compaction: information, not a warning (a node's samples).
compaction_is_info_test() ->
    [F] = beamlab_env_doctor_sched:imbalance(#{samples => lists:duplicate(4, [0.95, 0.05]), run_queue_mean => 0.0}),
    ?assertMatch(#{severity := info}, F),
    %% the same with processes waiting in the run queues: a warning
    [G] = beamlab_env_doctor_sched:imbalance(#{samples => lists:duplicate(4, [0.95, 0.05]), run_queue_mean => 2.5}),
    ?assertMatch(#{severity := warning}, G).

%% A load that is not parallel (one scheduler busy, the other idle, but
%% never work waiting beside the idle one) raises nothing under the
%% probe, whatever the load was meant to be: the old mesh's curve.
not_parallel_load_test() ->
    E = #{samples => [[0.97, 0.02], [0.98, 0.01], [0.96, 0.03]], stranded => 0.05, run_queue_mean => 0.6,
          active_mean => [1.1, 0.0], unoffered => none},
    ?assertEqual([], beamlab_env_doctor_sched:imbalance(E)),
    ?assertNot(beamlab_env_doctor_sched:offered(E)),
    %% a node's observer still learns of it, as information
    [F] = beamlab_env_doctor_sched:imbalance(maps:remove(unoffered, E)),
    ?assertMatch(#{severity := info}, F),
    %% the sampled evidence decides, not the run queue's mean
    ?assertEqual([], beamlab_env_doctor_sched:imbalance(E#{run_queue_mean => 5.0})).

%% Runnable work waiting on one scheduler while another had none, in
%% most samples, beside the busy/idle pattern: a warning, with the
%% evidence in its text.
stranded_work_test() ->
    E = #{samples => lists:duplicate(3, [1.0, 0.1]), stranded => 0.9, run_queue_mean => 0.4,
          active_mean => [6.0, 0.0], unoffered => none, where => <<"under the saturating load">>},
    ?assert(beamlab_env_doctor_sched:offered(E)),
    [F] = beamlab_env_doctor_sched:imbalance(E),
    ?assertMatch(#{id := <<"imbalance">>, severity := warning}, F),
    #{evidence := Ev, data := D} = F,
    ?assertEqual(true, maps:get(<<"offered">>, D)),
    ?assertNotEqual(nomatch, binary:match(Ev, <<"in 90% of the samples">>)),
    ?assertNotEqual(nomatch, binary:match(Ev, <<"runnable processes per scheduler on average: 6.0 0.0">>)),
    %% every scheduler busy: no pattern, no finding, whatever waited
    ?assertEqual([], beamlab_env_doctor_sched:imbalance(E#{samples => lists:duplicate(3, [1.0, 0.99])})).

%% Shown in fewer than half the observations: no finding; in half but not
%% 80% (or fewer than 3 observations): medium confidence.
how_often_test() ->
    Bad = [1.0, 0.0],
    Good = [0.97, 0.96],
    ?assertEqual([], beamlab_env_doctor_sched:imbalance(#{samples => [Bad, Good, Good], stranded => 1.0})),
    [F] = beamlab_env_doctor_sched:imbalance(#{samples => [Bad, Bad, Good, Good], stranded => 1.0}),
    ?assertEqual(<<"medium">>, maps:get(<<"confidence">>, maps:get(data, F))),
    [G] = beamlab_env_doctor_sched:imbalance(#{samples => [Bad, Bad], stranded => 1.0}),
    ?assertEqual(<<"medium">>, maps:get(<<"confidence">>, maps:get(data, G))),
    ?assertEqual([], beamlab_env_doctor_sched:imbalance(#{samples => []})),
    ?assertEqual([], beamlab_env_doctor_sched:imbalance(#{samples => [[1.0]]})).

%% The doctor's findings/3 raises it from the default's repetitions of
%% the saturating load when work was stranded, and not otherwise.
in_findings_test() ->
    Base = #{n => 3, capacity_utilisation_samples => lists:duplicate(3, [1.0, 0.0]), capacity_stranded => 0.8,
             capacity_active_mean => [5.0, 0.0], migrations_per_s => null, schedulers_online => 2,
             cpus_allowed => 2, msacc => #{}, capacity => 1.0e6, goodput => 3.0e4, latency_p99_us => 100.0,
             cpu_per_msg_us => 2.0, others_share => 0.01, steal_share => 0.0},
    Ids = [Id || #{id := Id} <- beamlab_env_doctor:findings(#{}, Base, #{points => []})],
    ?assert(lists:member(<<"imbalance">>, Ids)),
    ?assertNot(lists:member(<<"no_pathology">>, Ids)),
    Curve = #{points => [], peak_capacity => 1.0e6, peak_schedulers => 2},
    ?assertEqual([<<"no_pathology">>],
                 [Id || #{id := Id} <- beamlab_env_doctor:findings(#{}, Base#{capacity_stranded := 0.02}, Curve)]).

migrations_test() ->
    ?assertEqual({ok, #{1 => 17, 2 => 250}},
                 beamlab_runtime_probe:scheduler_migrations(root("doctor_migrations"), "4242")),
    ?assertEqual({error, enoent}, beamlab_runtime_probe:scheduler_migrations(root("doctor_migrations"), "1")),
    ?assertEqual(undefined, beamlab_runtime_probe:parse_nr_migrations(<<"nr_switches : 3\n">>)),
    ?assertEqual(7, beamlab_runtime_probe:parse_nr_migrations(<<"x\nse.nr_migrations   :   7\n">>)),
    %% 2 migrations of the 2 online schedulers in 0.1 s (scheduler 3 is offline)
    ?assertEqual(#{per_scheduler => [1, 1], total => 2, per_s => 20.0},
                 beamlab_runtime_probe:migration_rate({ok, #{1 => 1, 2 => 5, 3 => 0}}, {ok, #{1 => 2, 2 => 6, 3 => 9}},
                                                      100000, 2)),
    ?assertEqual(#{per_scheduler => [], total => null, per_s => null},
                 beamlab_runtime_probe:migration_rate({error, enoent}, {ok, #{}}, 100000, 2)).

%% This VM's own scheduler threads, where the kernel shows them.
own_migrations_test() ->
    case beamlab_runtime_probe:scheduler_migrations("/", "self") of
        {ok, M} ->
            ?assertEqual(lists:seq(1, erlang:system_info(schedulers)), lists:sort(maps:keys(M)));
        {error, enoent} ->
            ok
    end.
