-module(beamlab_render_ci_tests).
%% The formats of continuous-benchmarking services (github-action-benchmark's
%% custom tools, Bencher Metric Format) from result documents of every kind.
-include_lib("eunit/include/eunit.hrl").

fixture(Kind) -> beamlab_results_fixtures:result(Kind).

decode(IoData) ->
    {ok, J} = beamlab_json:decode(IoData),
    J.

%% A run's iterations per sample of D ms become iterations per second.
iterations_per_second_test() ->
    B = beamlab_result:benchmark(<<"x">>, [100, 110, 120], #{unit => iterations, metric => throughput,
                                                            better => higher,
                                                            params => #{sample => #{duration_ms => 100}}}),
    Doc = (fixture(<<"bench">>))#{benchmarks := [B]},
    [#{unit := <<"iterations/s">>, value := V, interval := {Lo, Hi}, better := higher}] =
        beamlab_render_ci:measures(Doc),
    ?assertEqual(1100.0, V),
    ?assert(Lo < V andalso V < Hi).

%% Every benchmark of an amqp run in its direction; the latency in us goes
%% to Bencher's latency measure in ns, the rate to throughput.
directions_and_bencher_measures_test() ->
    Doc = fixture(<<"amqp">>),
    [#{<<"name">> := <<"publish">>, <<"unit">> := <<"msg/s">>}] =
        decode(beamlab_render_github_benchmark:render(Doc, bigger)),
    [#{<<"name">> := <<"latency">>, <<"unit">> := <<"us">>, <<"value">> := LatUs,
       <<"range">> := Range, <<"extra">> := <<"n=200, 95% CI of the mean", _/binary>>}] =
        decode(beamlab_render_github_benchmark:render(Doc, smaller)),
    %% `± h' when symmetric, else both sides (a log-scale interval is wider above).
    ?assertMatch({match, _}, re:run(Range, <<"^(\x{b1} [0-9.]+|-[0-9.]+ \\+[0-9.]+)$"/utf8>>, [unicode])),
    ?assertEqual([<<"latency">>], beamlab_render_github_benchmark:left_out(Doc, bigger)),
    #{<<"publish">> := #{<<"throughput">> := #{<<"value">> := _}},
      <<"latency">> := #{<<"latency">> := #{<<"value">> := LatNs, <<"lower_value">> := Lo,
                                            <<"upper_value">> := Hi}}} =
        decode(beamlab_render_bencher:render(Doc)),
    ?assert(abs(LatNs - 1000 * LatUs) < 1.0e-6 * LatNs),
    ?assert(Lo < LatNs andalso LatNs < Hi).

%% A failed benchmark (no statistics) has no measure, and is named.
failed_benchmark_test() ->
    Failed = beamlab_result:benchmark(<<"crashed">>, [], #{extra => #{error => <<"badarith">>}}),
    Doc0 = fixture(<<"bench">>),
    Doc = Doc0#{benchmarks := maps:get(benchmarks, Doc0) ++ [Failed]},
    ?assertEqual([<<"crashed">>], beamlab_render_ci:left_out(Doc)),
    ?assertEqual([<<"ok.">>], maps:keys(decode(beamlab_render_bencher:render(Doc)))),
    ?assertEqual([], decode(beamlab_render_github_benchmark:render(Doc, bigger))).

%% Reductions and memory counted per repetition of a suite point.
per_repetition_test() ->
    B = beamlab_result:benchmark(<<"fib">>, [1.0, 1.1], #{unit => ms, better => lower, metric => time,
                                                         extra => #{per_repetition => #{reductions => 420,
                                                                                        bytes => 64,
                                                                                        words => 8}}}),
    Doc = (fixture(<<"suite">>))#{benchmarks := [B]},
    ?assertMatch([#{name := <<"fib">>},
                  #{name := <<"fib (reductions)">>, unit := <<"reductions/repetition">>, value := 420},
                  #{name := <<"fib (memory)">>, unit := <<"bytes/repetition">>, value := 64}],
                 beamlab_render_ci:measures(Doc)),
    ?assertMatch(#{<<"fib">> := #{<<"latency">> := _, <<"reductions">> := #{<<"value">> := 420},
                                  <<"memory">> := #{<<"value">> := 64}}},
                 decode(beamlab_render_bencher:render(Doc))).

%% An interval whose lower bound is zero: the distance to it, rounded to 4
%% digits, must not exceed the value (18.8598 read `± 18.86', below zero).
range_never_below_zero_test() ->
    Mean = 18.859832334948646,
    B0 = beamlab_result:benchmark(<<"p">>, [1.0, 2.0, 60.0], #{unit => us, better => lower, metric => time}),
    B = B0#{stats := (maps:get(stats, B0))#{mean := Mean, ci_mean => {0.0, 2 * Mean}}},
    Doc = (fixture(<<"suite">>))#{benchmarks := [B]},
    [#{<<"value">> := Mean, <<"range">> := Range}] =
        decode(beamlab_render_github_benchmark:render(Doc, smaller)),
    ?assertEqual(<<"-18.85 +18.86">>, Range).
