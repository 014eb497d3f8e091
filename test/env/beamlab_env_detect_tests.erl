-module(beamlab_env_detect_tests).
-include_lib("eunit/include/eunit.hrl").

-define(QUIET_TIMER, #{sleep_ms => 1, samples => 20,
                       overshoot_us => #{median => 80, p90 => 120, max => 300, mean => 90.0}}).

ids(Fs) -> [maps:get(id, F) || F <- Fs].

%% A series of N samples on a 4-scheduler VM; Overrides replace metrics.
%% Detectors read it as JSON, so the same series with binary keys (as in a
%% saved document) must give the same findings: see same_as_json_test.
series(N, Overrides) ->
    maps:merge(#{schedulers => #{normal => 4, online => 4, dirty_cpu => 4, dirty_io => 10},
                 t_ms => [I * 1000 || I <- lists:seq(1, N)],
                 util_schedulers => lists:duplicate(N, [95.0, 97.0, 96.0, 98.0]),
                 run_queue => lists:duplicate(N, 2),
                 os_cpu_cores => lists:duplicate(N, 3.9),
                 scheduler_busy_cores => lists:duplicate(N, 3.86),
                 steal_pct => lists:duplicate(N, 0.0),
                 machine_cpu_pct => lists:duplicate(N, 97.0),
                 load1 => lists:duplicate(N, 3.5),
                 cgroup_nr_periods => lists:duplicate(N, 10),
                 cgroup_nr_throttled => lists:duplicate(N, 0),
                 cgroup_throttled_usec => lists:duplicate(N, 0)}, Overrides).

env() -> #{cpu => #{logical_processors_online => 4, logical_processors_available => 4}}.

find(Series) ->
    beamlab_env_detect:findings(#{telemetry => Series, env => env(), timer => ?QUIET_TIMER}).

healthy_is_quiet_test() ->
    ?assertEqual([], find(series(10, #{}))),
    %% idle VM: nothing queued, nothing busy
    ?assertEqual([], find(series(10, #{util_schedulers => lists:duplicate(10, [0.0, 1.0, 0.0, 0.0]),
                                       run_queue => lists:duplicate(10, 0),
                                       os_cpu_cores => lists:duplicate(10, 0.01),
                                       scheduler_busy_cores => lists:duplicate(10, 0.01),
                                       machine_cpu_pct => lists:duplicate(10, 1.0),
                                       load1 => lists:duplicate(10, 0.1)}))),
    %% empty input: nothing to say
    ?assertEqual([], beamlab_env_detect:findings(#{timer => skip})).

imbalance_needs_three_consecutive_samples_test() ->
    Bad = [100.0, 0.0, 0.0, 100.0],
    Good = [90.0, 90.0, 90.0, 90.0],
    Two = series(6, #{util_schedulers => [Bad, Bad, Good, Bad, Bad, Good]}),
    ?assertEqual([], find(Two)),
    Three = series(6, #{util_schedulers => [Good, Bad, Bad, Bad, Good, Good]}),
    [F] = find(Three),
    ?assertMatch(#{id := <<"scheduler_imbalance">>, severity := critical,
                   data := #{<<"samples">> := 3, <<"from_ms">> := 2000, <<"to_ms">> := 4000, <<"max_idle">> := 2}}, F),
    ?assertNotEqual(nomatch, binary:match(maps:get(evidence, F), <<"[100 0 0 100]">>)),
    %% idle schedulers but nothing runnable: quiet
    ?assertEqual([], find(series(6, #{util_schedulers => lists:duplicate(6, Bad),
                                      run_queue => lists:duplicate(6, 0)}))).

schedulers_offline_test() ->
    S = series(5, #{schedulers => #{normal => 4, online => 1, dirty_cpu => 4, dirty_io => 10},
                    util_schedulers => lists:duplicate(5, [100.0, 0.0, 0.0, 0.0]),
                    run_queue => lists:duplicate(5, 7),
                    os_cpu_cores => lists:duplicate(5, 1.0),
                    scheduler_busy_cores => lists:duplicate(5, 1.0),
                    machine_cpu_pct => lists:duplicate(5, 26.0)}),
    [F] = find(S),
    ?assertMatch(#{id := <<"schedulers_offline">>, data := #{<<"online">> := 1, <<"total">> := 4, <<"max_run_queue">> := 7}}, F).

throttling_test() ->
    S = series(5, #{cgroup_nr_throttled => [0, 3, 4, 0, 1],
                    cgroup_throttled_usec => [0, 30000, 41000, 0, 9000]}),
    Env = (env())#{cgroup => #{quota_cores => 1.5}},
    [F] = beamlab_env_detect:findings(#{telemetry => S, env => Env, timer => skip}),
    ?assertMatch(#{id := <<"cgroup_throttling">>, severity := critical,
                   data := #{<<"nr_throttled">> := 8, <<"nr_periods">> := 50, <<"throttled_usec">> := 80000}}, F),
    ?assertNotEqual(nomatch, binary:match(maps:get(evidence, F), <<"quota 1.50 cores">>)).

busy_wait_test() ->
    S = series(5, #{os_cpu_cores => lists:duplicate(5, 2.0),
                    scheduler_busy_cores => lists:duplicate(5, 0.6),
                    util_schedulers => lists:duplicate(5, [15.0, 15.0, 15.0, 15.0]),
                    run_queue => lists:duplicate(5, 0),
                    %% (the machine busy with the VM alone)
                    machine_cpu_pct => lists:duplicate(5, 51.0)}),
    [F] = find(S),
    ?assertMatch(#{id := <<"busy_wait">>}, F),
    ?assertNotEqual(nomatch, binary:match(maps:get(evidence, F), <<"2.00 cores">>)).

overloaded_test() ->
    Steal = series(5, #{steal_pct => lists:duplicate(5, 25.0)}),
    [F] = find(Steal),
    ?assertMatch(#{id := <<"machine_overloaded">>, severity := critical}, F),
    Others = series(5, #{os_cpu_cores => lists:duplicate(5, 0.5),
                         scheduler_busy_cores => lists:duplicate(5, 0.5),
                         util_schedulers => lists:duplicate(5, [50.0, 0.0, 0.0, 0.0]),
                         run_queue => lists:duplicate(5, 0),
                         machine_cpu_pct => lists:duplicate(5, 90.0),
                         load1 => lists:duplicate(5, 6.0)}),
    [G] = find(Others),
    ?assertNotEqual(nomatch, binary:match(maps:get(evidence, G), <<"other processes used 3.10 of 4 CPUs">>)),
    ?assertEqual(nomatch, binary:match(maps:get(evidence, G), <<"load average">>)).

%% A load average far above the CPUs with nothing else running (this VM's
%% own work, or beamlab's previous benchmark still in the 1-minute
%% average) is no evidence of competitors: quiet.
own_load_is_not_overload_test() ->
    Own = series(5, #{os_cpu_cores => lists:duplicate(5, 3.9),
                      machine_cpu_pct => lists:duplicate(5, 98.0),
                      load1 => lists:duplicate(5, 9.5)}),
    ?assertEqual([], find(Own)),
    After = series(5, #{os_cpu_cores => lists:duplicate(5, 0.02),
                        scheduler_busy_cores => lists:duplicate(5, 0.02),
                        util_schedulers => lists:duplicate(5, [1.0, 0.0, 0.0, 0.0]),
                        run_queue => lists:duplicate(5, 0),
                        machine_cpu_pct => lists:duplicate(5, 1.0),
                        load1 => lists:duplicate(5, 4.8)}),
    ?assertEqual([], find(After)).

%% The rule is the engine's (beamlab_runtime_probe:contended/2), on the
%% series' means: one busy loop beside a run on a busy machine counts
%% (0.5 of 4 CPUs: under the old "half the CPUs" threshold), others on
%% an idle machine's spare cores below half the CPUs do not.
overloaded_same_rule_as_engine_test() ->
    Quiet = #{os_cpu_cores => lists:duplicate(5, 0.02), scheduler_busy_cores => lists:duplicate(5, 0.02),
              util_schedulers => lists:duplicate(5, [1.0, 0.0, 0.0, 0.0]), run_queue => lists:duplicate(5, 0)},
    Over = fun(Tree, MachinePct) ->
                   [F || #{id := <<"machine_overloaded">>} = F
                             <- find(series(5, Quiet#{tree_cpu_cores => lists:duplicate(5, Tree),
                                                      machine_cpu_pct => lists:duplicate(5, MachinePct)}))]
           end,
    %% beamlab 2.8 of 4 CPUs, others 0.6 (3.4 busy of 4): contended
    [F] = Over(2.8, 85.0),
    #{data := #{<<"others_cores">> := O, <<"own_cores">> := 2.8}} = F,
    ?assert(abs(O - 0.6) < 1.0e-9),
    ?assert(beamlab_runtime_probe:contended(#{others_cores => 0.6, own_cores => 2.8}, 4)),
    %% others 0.6 with beamlab at 1.0 (the machine at 40%): not busy
    ?assertEqual([], Over(1.0, 40.0)),
    ?assertNot(beamlab_runtime_probe:contended(#{others_cores => 0.6, own_cores => 1.0}, 4)),
    %% others alone on half the CPUs: contended whatever beamlab did
    ?assertMatch([_], Over(0.0, 50.0)).

%% beamlab's own process tree (a suite's peer VMs, an amqp run's private
%% broker: `tree_cpu_cores') is never "others": the VM alone used 0.1 of
%% 4 CPUs while its tree used 3.8 of the machine's 3.9.
own_children_are_not_others_test() ->
    S = #{os_cpu_cores => lists:duplicate(5, 0.1), scheduler_busy_cores => lists:duplicate(5, 0.1),
          util_schedulers => lists:duplicate(5, [10.0, 0.0, 0.0, 0.0]), run_queue => lists:duplicate(5, 0),
          machine_cpu_pct => lists:duplicate(5, 97.5)},
    ?assertEqual([], find(series(5, S#{tree_cpu_cores => lists:duplicate(5, 3.8)}))),
    %% a saved series without the tree's figure: the VM's alone
    [#{id := <<"machine_overloaded">>, evidence := E}] = find(series(5, S)),
    ?assertNotEqual(nomatch, binary:match(E, <<"this VM's">>)),
    %% with it, others working beside the tree still count
    [#{evidence := E2}] = find(series(5, S#{tree_cpu_cores => lists:duplicate(5, 2.0)})),
    ?assertNotEqual(nomatch, binary:match(E2, <<"beamlab's own processes'">>)).

%% A watched node's series (`amqp --watch''s broker): beamlab's own load
%% generators beside the node's VM (`tree_cpu_cores') are not others, and
%% the evidence names both; a series without the tree names the node's VM.
node_series_own_test() ->
    S = #{node => <<"rabbit@localhost">>, os_cpu_cores => lists:duplicate(5, 0.5),
          scheduler_busy_cores => lists:duplicate(5, 0.5),
          util_schedulers => lists:duplicate(5, [50.0, 0.0, 0.0, 0.0]), run_queue => lists:duplicate(5, 0),
          machine_cpu_pct => lists:duplicate(5, 90.0)},
    ?assertEqual([], find(series(5, S#{tree_cpu_cores => lists:duplicate(5, 3.5)}))),
    %% samples the tree's reader was late for have no figure: the others
    %% still count (not the node's VM alone, 0.5: others 3.1 cores)
    ?assertEqual([], find(series(5, S#{tree_cpu_cores => [null, 3.5, null, 3.5, 3.5]}))),
    [#{evidence := E}] = find(series(5, S#{tree_cpu_cores => lists:duplicate(5, 1.5)})),
    ?assertNotEqual(nomatch, binary:match(E, <<"the node's VM's and beamlab's own processes'">>)),
    [#{evidence := E2}] = find(series(5, S)),
    ?assertNotEqual(nomatch, binary:match(E2, <<"minus the node's VM's, 0.50">>)).

timer_test() ->
    Late = #{sleep_ms => 1, samples => 20,
             overshoot_us => #{median => 4000, p90 => 9000, max => 12000, mean => 5000.0}},
    [F] = beamlab_env_detect:findings(#{timer => Late}),
    ?assertMatch(#{id := <<"timer_late">>, severity := warning}, F),
    ?assertEqual([], beamlab_env_detect:findings(#{timer => ?QUIET_TIMER})).

timer_check_test() ->
    #{samples := 5, sleep_ms := 2, overshoot_us := #{median := Med, max := Max, p90 := P90}} =
        beamlab_runtime_probe:timer(#{samples => 5, sleep_ms => 2}),
    ?assert(Med =< P90 andalso P90 =< Max),
    %% a sleep never returns early
    ?assert(Med >= 0),
    ?assert(beamlab_runtime_probe:timer_overshoot() >= 0).

noisy_test() ->
    Result = #{benchmarks =>
                   [#{name => <<"tight">>, stats => #{mean => 100.0, cv => 0.01, n => 50,
                                                      ci_mean => {99.5, 100.5}}},
                    #{name => <<"wide_ci">>, stats => #{mean => 100.0, cv => 0.08, n => 5,
                                                        ci_mean => [88.0, 112.0]}},
                    #{name => <<"high_cv">>, stats => #{mean => 10.0, cv => 0.5, n => 1000,
                                                        ci_mean => {9.9, 10.1}}}]},
    Fs = beamlab_env_detect:findings(#{result => Result, timer => skip}),
    ?assertEqual([<<"noisy_measurement">>, <<"noisy_measurement">>], ids(Fs)),
    [W, H] = Fs,
    ?assertMatch(#{data := #{<<"benchmark">> := <<"wide_ci">>}, severity := warning}, W),
    ?assertNotEqual(nomatch, binary:match(maps:get(evidence, W), <<"+/-12.0%">>)),
    ?assertMatch(#{data := #{<<"benchmark">> := <<"high_cv">>}, severity := critical}, H),
    Text = unicode:characters_to_binary(beamlab_render_text:findings(Fs)),
    ?assertNotEqual(nomatch, binary:match(Text, <<"[warning] Measurement too noisy to trust: wide_ci">>)).

%% The advice names the options of the command that produced the result.
noisy_advice_fits_the_command_test_() ->
    Noisy = [#{name => <<"n">>, stats => #{mean => 100.0, cv => 0.3, n => 5, ci_mean => {70.0, 130.0}}}],
    Advice = fun(Kind) ->
                     R = case Kind of
                             none -> #{benchmarks => Noisy};
                             _ -> #{kind => Kind, benchmarks => Noisy}
                         end,
                     [#{id := <<"noisy_measurement">>, advice := A}] =
                         beamlab_env_detect:findings(#{result => R, timer => skip}),
                     A
             end,
    Has = fun(A, Parts) -> [?assertNotEqual({P, nomatch}, {P, binary:match(A, P)}) || P <- Parts] end,
    HasNot = fun(A, Parts) -> [?assertEqual({P, nomatch}, {P, binary:match(A, P)}) || P <- Parts] end,
    [{"bench", fun() ->
                       A = Advice(<<"bench">>),
                       Has(A, [<<"(-s)">>, <<"(-d)">>, <<"(-i)">>]),
                       ?assertEqual(A, Advice(bench)),
                       ?assertEqual(A, Advice(none))
               end},
     {"suite", fun() ->
                       A = Advice(<<"suite">>),
                       Has(A, [<<"(-n)">>, <<"--profile">>]),
                       HasNot(A, [<<"(-s)">>, <<"(-i)">>, <<"(-z)">>]),
                       ?assertEqual(A, Advice(suite))
               end},
     {"matrix", fun() ->
                        A = Advice(<<"matrix">>),
                        Has(A, [<<"repetitions per configuration (-n)">>, <<"fresh VM">>]),
                        HasNot(A, [<<"(-i)">>, <<"(-z)">>])
                end},
     {"amqp", fun() ->
                      A = Advice(<<"amqp">>),
                      Has(A, [<<"(-z)">>]),
                      HasNot(A, [<<"(-s)">>, <<"(-d)">>, <<"(-n)">>, <<"(-i)">>])
              end}].

%% A matrix's child VMs are the measurement, not other processes: only
%% steal can call the machine overloaded (the VMs' own `load_high' say
%% the rest).
matrix_children_are_not_others_test() ->
    Controller = series(5, #{os_cpu_cores => lists:duplicate(5, 0.05),
                             scheduler_busy_cores => lists:duplicate(5, 0.04),
                             util_schedulers => lists:duplicate(5, [2.0, 1.0, 0.0, 0.0]),
                             run_queue => lists:duplicate(5, 0),
                             machine_cpu_pct => lists:duplicate(5, 95.0),
                             load1 => lists:duplicate(5, 3.0)}),
    In = #{telemetry => Controller, env => env(), timer => ?QUIET_TIMER},
    [#{id := <<"machine_overloaded">>}] = beamlab_env_detect:findings(In#{result => #{kind => <<"bench">>}}),
    ?assertEqual([], beamlab_env_detect:findings(In#{result => #{kind => <<"matrix">>}})),
    Steal = Controller#{steal_pct => lists:duplicate(5, 30.0)},
    [#{id := <<"machine_overloaded">>, evidence := E}] =
        beamlab_env_detect:findings(In#{telemetry => Steal, result => #{kind => <<"matrix">>}}),
    ?assertEqual(nomatch, binary:match(E, <<"other processes">>)).

%% A telemetry section and env read back from a document (binary keys)
%% give the same findings as the fresh series and report.
same_as_json_test() ->
    S = series(6, #{util_schedulers => lists:duplicate(6, [100.0, 0.0, 0.0, 100.0])}),
    Fresh = find(S),
    ?assertMatch([_], Fresh),
    ?assertEqual(Fresh, beamlab_env_detect:findings(#{telemetry => beamlab_json:canonical(S),
                                                      env => beamlab_json:canonical(env()),
                                                      timer => ?QUIET_TIMER})).

%% attach/2 records the series and appends findings to a document's own.
attach_test() ->
    Doc0 = beamlab_result:new(bench, #{command => ["run"], started_at => <<"2026-01-01T00:00:00Z">>}),
    Own = beamlab_result:finding(load_high, warning, "t", "e", "a", #{}),
    Doc1 = beamlab_result:add_findings(Doc0, [Own]),
    S = series(6, #{util_schedulers => lists:duplicate(6, [100.0, 0.0, 0.0, 100.0])}),
    Doc = beamlab_env_detect:attach(S, Doc1),
    #{telemetry := #{<<"run_queue">> := _}, findings := [Own | New]} = Doc,
    ?assert(lists:member(<<"scheduler_imbalance">>, ids(New))).

%% One hot process on two schedulers: whatever lands behind it waits for
%% an instant (a queue of 1 now and then): not critical, and not an
%% imbalance at all unless that lasts five samples; a queue of two or more
%% in every sample is.
imbalance_one_hot_process_test() ->
    Two = #{schedulers => #{normal => 2, online => 2, dirty_cpu => 2, dirty_io => 10}},
    Hot = [100.0, 3.0],
    S = fun(Rq) -> series(length(Rq), Two#{util_schedulers => lists:duplicate(length(Rq), Hot), run_queue => Rq}) end,
    ?assertEqual([], find(S([0, 1, 1, 1, 0, 1, 1, 0]))),
    [F] = find(S([1, 1, 1, 1, 1, 0])),
    ?assertMatch(#{id := <<"scheduler_imbalance">>, severity := warning,
                   data := #{<<"samples">> := 5, <<"max_run_queue">> := 1}}, F),
    [C] = find(S([0, 2, 3, 2, 0])),
    ?assertMatch(#{severity := critical, data := #{<<"min_run_queue">> := 2}}, C),
    [W] = find(S([0, 2, 1, 2, 0])),
    ?assertMatch(#{severity := warning}, W).
