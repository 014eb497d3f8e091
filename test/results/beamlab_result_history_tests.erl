-module(beamlab_result_history_tests).
%% Runs in order (by time, by commit), each benchmark's trend and the
%% change between consecutive runs.
-include_lib("eunit/include/eunit.hrl").

%% A bench run started at `Started' whose benchmark takes about `Ns'.
run(Label, Started, Ns, Git) ->
    rand:seed(exsss, {erlang:phash2(Label), 2, 3}),
    Samples = [Ns * (1 + 0.01 * rand:normal()) || _ <- lists:seq(1, 20)],
    B = beamlab_result:benchmark(<<"b">>, Samples, #{unit => ns, better => lower, metric => time}),
    %% A suite: each sample is one repetition, so two runs compare by themselves.
    Doc0 = beamlab_result:new(suite, #{command => [], started_at => Started}),
    Doc = beamlab_result:add_benchmarks(Doc0, [B]),
    case Git of
        none -> {Label, Doc};
        {C, T} -> {Label, beamlab_result:set(env, #{git => #{commit => C, commit_time => T, dirty => false}}, Doc)}
    end.

by_time_test() ->
    Runs = [run(<<"c">>, <<"2026-01-03T00:00:00Z">>, 100, none),
            run(<<"a">>, <<"2026-01-01T00:00:00Z">>, 100, none),
            run(<<"b">>, <<"2026-01-02T00:00:00Z">>, 150, none)],
    {ok, #{order := time, runs := Infos, trends := [#{name := <<"b">>, points := Ps, changes := Cs}]} = H} =
        beamlab_result_history:history(Runs, #{}),
    ?assertEqual([<<"a">>, <<"b">>, <<"c">>], [L || #{label := L} <- Infos]),
    ?assertEqual([1, 2, 3], [I || #{run := I} <- Ps]),
    %% a -> b is 50% slower, b -> c 33% faster: both significant.
    [#{from := 1, to := 2, verdict := slower, change := Up}, #{from := 2, to := 3, verdict := faster, change := Down}] = Cs,
    ?assert(abs(Up - 0.5) < 0.02),
    ?assert(abs(Down + 1 / 3) < 0.02),
    ?assertEqual(2, length(beamlab_result_history:significant(H))).

%% By commit date (in UTC, whatever the offset it was written with): a
%% commit measured again later keeps its place.
by_commit_test() ->
    Runs = [run(<<"new-commit">>, <<"2026-01-01T00:00:00Z">>, 100, {<<"c2">>, <<"2026-01-02T08:00:00+00:00">>}),
            run(<<"old-commit-rerun">>, <<"2026-01-05T00:00:00Z">>, 100, {<<"c1">>, <<"2026-01-02T09:00:00+03:00">>})],
    {ok, #{order := commit, runs := [#{label := <<"old-commit-rerun">>, commit := <<"c1">>},
                                     #{label := <<"new-commit">>, commit := <<"c2">>}]}} =
        beamlab_result_history:history(Runs, #{}),
    %% Time order is still there on demand.
    {ok, #{order := time, runs := [#{label := <<"new-commit">>} | _]}} =
        beamlab_result_history:history(Runs, #{order => time}).

%% Without a commit in every run, auto is time and commit is an error.
missing_commit_test() ->
    Runs = [run(<<"a">>, <<"2026-01-01T00:00:00Z">>, 100, {<<"c1">>, <<"2026-01-01T00:00:00Z">>}),
            run(<<"b">>, <<"2026-01-02T00:00:00Z">>, 100, none)],
    {ok, #{order := time}} = beamlab_result_history:history(Runs, #{}),
    {error, {no_commit, [<<"b">>]} = E} = beamlab_result_history:history(Runs, #{order => commit}),
    ?assertMatch("cannot order by commit" ++ _, lists:flatten(beamlab_result_history:format_error(E))),
    {error, {too_few_runs, 1}} = beamlab_result_history:history([hd(Runs)], #{}).

%% A benchmark missing from a run is compared with the run before the gap.
gap_test() ->
    {A, DocA} = run(<<"a">>, <<"2026-01-01T00:00:00Z">>, 100, none),
    {B, DocB0} = run(<<"b">>, <<"2026-01-02T00:00:00Z">>, 100, none),
    {C, DocC} = run(<<"c">>, <<"2026-01-03T00:00:00Z">>, 100, none),
    DocB = DocB0#{benchmarks := []},
    {ok, #{trends := [#{points := Ps, changes := [#{from := 1, to := 3, verdict := no_difference}]}]}} =
        beamlab_result_history:history([{A, DocA}, {B, DocB}, {C, DocC}], #{}),
    ?assertEqual([1, 3], [I || #{run := I} <- Ps]).

%% Iterations counted per sample of another duration are compared per
%% second: twice the samples' length, twice the count, the same rate.
per_second_test() ->
    Run = fun(Label, Started, D, PerSample) ->
                  rand:seed(exsss, {erlang:phash2(Label), 5, 6}),
                  Samples = [PerSample * (1 + 0.01 * rand:normal()) || _ <- lists:seq(1, 20)],
                  B = beamlab_result:benchmark(<<"b">>, Samples, #{unit => iterations, better => higher,
                                                                  params => #{sample => #{duration_ms => D}}}),
                  {Label, beamlab_result:add_benchmarks(beamlab_result:new(bench, #{command => [], started_at => Started}), [B])}
          end,
    {ok, #{trends := [#{unit := <<"iterations/s">>, points := [#{mean := M1}, #{mean := M2}],
                        changes := [#{verdict := within_run_only, basis := within_run}]}]}} =
        beamlab_result_history:history([Run(<<"a">>, <<"2026-01-01T00:00:00Z">>, 100, 1000),
                                        Run(<<"b">>, <<"2026-01-02T00:00:00Z">>, 200, 2000)], #{}),
    ?assert(abs(M1 / 10000 - 1) < 0.02 andalso abs(M2 / 10000 - 1) < 0.02).

%% #34: a summary keeps all the history reads: the same history from
%% summaries as from whole documents (the fixtures carry a noisy finding,
%% which the history reads), and the summary holds no telemetry, extra or
%% environment but the git commit.
summary_keeps_history_test() ->
    Runs = [{<<"a">>, beamlab_results_fixtures:result(<<"bench">>, #{factor => 1.0})},
            {<<"b">>, beamlab_results_fixtures:result(<<"bench">>, #{factor => 1.3})},
            {<<"c">>, beamlab_results_fixtures:result(<<"bench">>, #{factor => 0.8})}],
    Summaries = [{L, beamlab_result_history:summary(R)} || {L, R} <- Runs],
    ?assertEqual(beamlab_result_history:history(Runs, #{order => time}),
                 beamlab_result_history:history(Summaries, #{order => time})),
    [?assertMatch(#{telemetry := T, extra := E} when map_size(T) =:= 0 andalso map_size(E) =:= 0, S)
     || {_, S} <- Summaries],
    [?assertEqual([], maps:keys(maps:without([<<"git">>], maps:get(env, S)))) || {_, S} <- Summaries].

%% Single runs (samples within one run each): the verdict rests on the
%% spread of the earlier runs' means, never on the samples within them.
%% #35: CPU time's history judges by the median and MAD of the earlier
%% runs (beamlab_result_compare:robust_history/1): one burst run (1.4x)
%% among them no longer hides two runs 20% slower; wall-clock time keeps
%% the mean and sd, which the burst widens beyond them.
cpu_history_robust_test() ->
    Run = fun(I, Level, Metric) ->
                  Samples = [Level * (1 + 0.001 * K) || K <- lists:seq(1, 5)],
                  B = beamlab_result:benchmark(<<"b">>, Samples, #{unit => ns, better => lower, metric => Metric}),
                  Started = iolist_to_binary(io_lib:format("2026-01-~2..0bT00:00:00Z", [I])),
                  {integer_to_binary(I), beamlab_result:add_benchmarks(
                                           beamlab_result:new(bench, #{command => [], started_at => Started}), [B])}
          end,
    Levels = [100.0, 101.0, 99.0, 100.5, 140.0, 99.5, 100.2, 98.8, 120.0, 121.0],
    Last = fun(Metric) ->
                   Runs = [Run(I, L, Metric) || {I, L} <- lists:zip(lists:seq(1, 10), Levels)],
                   {ok, #{trends := [#{changes := Cs}]}} = beamlab_result_history:history(Runs, #{}),
                   lists:last(Cs)
           end,
    ?assertMatch(#{verdict := slower, basis := history, window := 8, confidence := 0.99}, Last(cpu)),
    ?assertMatch(#{verdict := no_difference, basis := history}, Last(time)),
    ?assert(beamlab_result_compare:robust_history(<<"cpu">>)),
    ?assertNot(beamlab_result_compare:robust_history(<<"time">>)).

%% #35: CPU time's history judges each single run by its fastest sample
%% (beamlab_result_compare:run_level/1), their spread at least 2%
%% (history_floor/1): load only adds CPU time, so
%% two runs in one burst of load (three of five samples 1.3-1.5x: means
%% 1.24x) are no change, while two runs doing 20% more work are slower
%% whatever their bursts. Wall-clock time keeps the means: the burst is a
%% verdict there (the load rules make it inconclusive on a loaded machine).
cpu_history_fastest_test() ->
    Run = fun(I, Level, Burst, Metric) ->
                  Samples = [Level * (1 + 0.002 * K) * B
                             || {K, B} <- lists:zip(lists:seq(1, 5),
                                                    case Burst of
                                                        true -> [1.0, 1.3, 1.5, 1.0, 1.4];
                                                        false -> [1.0, 1.0, 1.0, 1.0, 1.0]
                                                    end)],
                  B = beamlab_result:benchmark(<<"b">>, Samples, #{unit => ns, better => lower, metric => Metric}),
                  Started = iolist_to_binary(io_lib:format("2026-01-~2..0bT00:00:00Z", [I])),
                  {integer_to_binary(I), beamlab_result:add_benchmarks(
                                           beamlab_result:new(bench, #{command => [], started_at => Started}), [B])}
          end,
    Earlier = [100.0, 101.0, 99.0, 100.5, 99.5, 100.2, 98.8, 100.7],
    Last = fun(Newest, Burst, Metric) ->
                   Runs = [Run(I, L, false, Metric) || {I, L} <- lists:zip(lists:seq(1, 8), Earlier)]
                       ++ [Run(I, L, Burst, Metric) || {I, L} <- lists:zip([9, 10], Newest)],
                   {ok, #{trends := [#{changes := Cs}]}} = beamlab_result_history:history(Runs, #{}),
                   lists:last(Cs)
           end,
    ?assertMatch(#{verdict := no_difference, basis := history}, Last([100.3, 99.6], true, cpu)),
    ?assertMatch(#{verdict := slower, basis := history}, Last([120.0, 120.5], true, cpu)),
    ?assertMatch(#{verdict := slower, basis := history}, Last([120.0, 120.5], false, cpu)),
    ?assertMatch(#{verdict := slower, basis := history}, Last([100.3, 99.6], true, time)),
    %% The fastest samples' spread is at least 2% (history_floor/1): two
    %% runs at 1.04x a tight history are no change for CPU time; the same
    %% runs of wall-clock time, whose history has no floor, are slower.
    ?assertMatch(#{verdict := no_difference, basis := history}, Last([104.0, 104.5], false, cpu)),
    ?assertMatch(#{verdict := slower, basis := history}, Last([104.0, 104.5], false, time)),
    ?assertEqual(fastest, beamlab_result_compare:run_level(<<"cpu">>)),
    ?assertEqual(mean, beamlab_result_compare:run_level(<<"time">>)),
    ?assertEqual(0.02, beamlab_result_compare:history_floor(<<"cpu">>)),
    ?assertEqual(0.0, beamlab_result_compare:history_floor(<<"time">>)).

history_spread_test() ->
    Single = fun(I, Ns, Noise) ->
                     rand:seed(exsss, {I, 7, 8}),
                     %% Each run has its own level (the machine's load of the day)
                     Level = Ns * (1 + Noise * rand:normal()),
                     Samples = [Level * (1 + 0.001 * rand:normal()) || _ <- lists:seq(1, 30)],
                     B = beamlab_result:benchmark(<<"b">>, Samples, #{unit => ns, better => lower, metric => time}),
                     Started = iolist_to_binary(io_lib:format("2026-01-~2..0bT00:00:00Z", [I])),
                     {integer_to_binary(I), beamlab_result:add_benchmarks(
                                              beamlab_result:new(bench, #{command => [], started_at => Started}), [B])}
             end,
    Same = [Single(I, 100, 0.05) || I <- lists:seq(1, 10)],
    {ok, #{trends := [#{changes := Cs}]}} = beamlab_result_history:history(Same, #{}),
    %% The within-run samples are 50x tighter than the run-to-run spread:
    %% treated as evidence they would call most steps a change.
    %% With fewer than 3 runs before the previous one there is no spread
    %% to judge the two by.
    ?assertEqual([within_run_only, within_run_only, within_run_only],
                 [V || #{verdict := V} <- lists:sublist(Cs, 3)]),
    ?assertEqual([history], lists:usort([B || #{basis := B} <- lists:nthtail(3, Cs)])),
    ?assertEqual([no_difference], lists:usort([V || #{verdict := V} <- lists:nthtail(3, Cs)])),
    %% A run 30% slower than the history stands out of its spread, but one
    %% run alone is `unconfirmed' (run again) ...
    Slow = Same ++ [Single(11, 130, 0.0)],
    {ok, #{trends := [#{changes := Cs2}]}} = beamlab_result_history:history(Slow, #{}),
    #{verdict := unconfirmed, basis := history, window := 9, from := 1, to := 11, confirmed_by := 10,
      confidence := 0.99} = lists:last(Cs2),
    %% ... and the next run, as slow, makes it `slower': both against the
    %% 10 runs before them.
    Slow2 = Slow ++ [Single(12, 130, 0.0)],
    {ok, #{trends := [#{changes := Cs2b}]} = H2} = beamlab_result_history:history(Slow2, #{}),
    #{verdict := slower, basis := history, window := 10, from := 1, confirmed_by := 11, ci := {Lo, _}} =
        lists:last(Cs2b),
    ?assert(Lo > 0),
    ?assertEqual([{<<"b">>, 12}], [{N, T} || {N, #{to := T}} <- beamlab_result_history:significant(H2)]),
    %% A burst: one slow run, then one as before: no verdict either time.
    {ok, #{trends := [#{changes := Cs2c}]}} = beamlab_result_history:history(Slow ++ [Single(12, 100, 0.0)], #{}),
    ?assertMatch([#{verdict := unconfirmed}, #{verdict := no_difference}], lists:nthtail(length(Cs2c) - 2, Cs2c)),
    %% ... unless the machine was overloaded and it is not far outside the noise.
    {L, Doc} = lists:last(Slow),
    Loaded = beamlab_result:add_findings(Doc, [beamlab_result:finding(noisy_measurement, warning, <<"t">>,
                                                                      <<"e">>, <<"a">>, #{})]),
    {ok, #{trends := [#{changes := Cs3}]}} =
        beamlab_result_history:history(lists:droplast(Slow) ++ [{L, Loaded}], #{}),
    ?assertMatch(#{verdict := inconclusive_load}, lists:last(Cs3)),
    %% Against a history, even a run far outside the spread stays
    %% inconclusive under load: one loaded run can be slowed by any factor
    %% (bench/aa.sh found a false `slower' at 99.9%).
    {L4, Doc4} = Single(11, 300, 0.0),
    Loaded4 = beamlab_result:add_findings(Doc4, [beamlab_result:finding(machine_overloaded, warning, <<"t">>,
                                                                        <<"e">>, <<"a">>, #{})]),
    {ok, #{trends := [#{changes := Cs4}]}} = beamlab_result_history:history(Same ++ [{L4, Loaded4}], #{}),
    ?assertMatch(#{verdict := inconclusive_load, basis := history}, lists:last(Cs4)),
    %% `run''s own load finding (the engine's pre-flight check) counts too.
    Loaded5 = beamlab_result:add_findings(Doc4, [beamlab_result:finding(load_high, warning, <<"t">>,
                                                                        <<"e">>, <<"a">>, #{})]),
    {ok, #{trends := [#{changes := Cs5}]}} = beamlab_result_history:history(Same ++ [{L4, Loaded5}], #{}),
    ?assertMatch(#{verdict := inconclusive_load, basis := history}, lists:last(Cs5)).

%% #35 (robust37): a history of matrices of CPU time (each value one fresh
%% VM's fastest sample): the change between two of them leaves out the
%% VMs far from their run's others, as `compare' does (one VM of the
%% earlier run slowed 2.2x as a whole: +20% is still `slower').
matrix_history_robust_test() ->
    Run = fun(I, Vals) ->
                  B = beamlab_result:benchmark(<<"x">>, Vals, #{group => <<"+S 1">>, unit => <<"ns">>,
                                                                better => lower, metric => <<"cpu">>,
                                                                extra => #{<<"vm_means">> => Vals}}),
                  Started = iolist_to_binary(io_lib:format("2026-01-~2..0bT00:00:00Z", [I])),
                  {integer_to_binary(I), beamlab_result:add_benchmarks(
                                           beamlab_result:new(matrix, #{command => [], started_at => Started}), [B])}
          end,
    Runs = [Run(1, [3500.0, 3560.0, 7700.0, 3480.0, 3530.0]), Run(2, [4200.0, 4272.0, 4176.0, 4236.0, 4188.0])],
    {ok, #{trends := [#{changes := [C]}]}} = beamlab_result_history:history(Runs, #{}),
    ?assertMatch(#{verdict := slower, basis := runs}, C).

%% A history of checks (or suites) of CPU time: repetitions valued by
%% their means, so no VM is left out, while the history's own rule for
%% single runs of CPU time is robust: the two must not be confused (a
%% report of two `check --metric cpu' runs crashed with a badmatch).
cpu_runs_by_mean_history_test() ->
    Run = fun(I, Vals) ->
                  B = beamlab_result:benchmark(<<"work">>, Vals, #{unit => <<"ns">>, better => lower,
                                                                   metric => <<"cpu">>}),
                  Started = iolist_to_binary(io_lib:format("2026-01-~2..0bT00:00:00Z", [I])),
                  {integer_to_binary(I), beamlab_result:add_benchmarks(
                                           beamlab_result:new(suite, #{command => [], started_at => Started}), [B])}
          end,
    Runs = [Run(1, [3500.0, 3560.0, 3480.0, 3530.0]), Run(2, [7000.0, 7120.0, 6960.0, 7060.0])],
    {ok, #{trends := [#{changes := [C]}]}} = beamlab_result_history:history(Runs, #{}),
    ?assertMatch(#{verdict := slower, basis := runs}, C).
