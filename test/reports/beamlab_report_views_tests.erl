-module(beamlab_report_views_tests).
%% What each part of a document is, from its typed content: sweeps,
%% scaling with the USL fit, latency spectra, a matrix, findings in time.
-include_lib("eunit/include/eunit.hrl").

doc(Kind, Benchmarks) ->
    beamlab_result:add_benchmarks(beamlab_result:new(Kind, #{command => [], started_at => <<"2026-01-01T00:00:00Z">>}),
                                  Benchmarks).

bench(Name, Samples, Opts) ->
    beamlab_result:benchmark(Name, Samples, maps:merge(#{unit => us, better => lower, metric => round_trip}, Opts)).

%% ping_pong's size x payload: one series per payload over size, on a log
%% axis (0 to 10000: four decades of positive sizes); the points claimed.
sweep_test() ->
    Bs = [bench(iolist_to_binary(io_lib:format("pp[size=~b,payload=~s]", [S, P])), [S + 1.0, S + 1.2, S + 0.8],
                #{params => #{size => S, payload => P, vm => local}})
          || P <- [list, binary], S <- [0, 10, 100, 10000]],
    D = doc(suite, Bs),
    [#{param := <<"size">>, metric := <<"round_trip">>, unit := <<"us">>, log := true,
       series := [#{name := <<"payload=list">>, points := Ps}, #{name := <<"payload=binary">>}]}] =
        beamlab_report_views:sweeps(D),
    ?assertEqual([0, 10, 100, 10000], [X || [X | _] <- Ps]),
    [_, Mean, Lo, Hi, 3] = lists:last(Ps),
    ?assert(Lo < Mean andalso Mean < Hi),
    ?assertEqual(8, length(beamlab_report_views:claimed(D))),
    ?assertEqual([], beamlab_report_views:scaling(D)).

%% Fewer than two decades: a linear axis; a parameter that is not a
%% number does not make a sweep.
no_log_no_sweep_test() ->
    Lin = [bench(integer_to_binary(S), [1.0, 2.0], #{params => #{n => S}}) || S <- [10, 50, 200]],
    ?assertMatch([#{log := false}], beamlab_report_views:sweeps(doc(suite, Lin))),
    Words = [bench(V, [1.0, 2.0], #{params => #{variant => V}}) || V <- [<<"a">>, <<"b">>]],
    ?assertEqual([], beamlab_report_views:sweeps(doc(suite, Words))).

%% #35: the x axis keeps every point apart. 0,10,100,1000,10000: a log
%% axis (the 0 a decade below 10, past a break); 0,1,10,100 spans two
%% decades exactly: log too; 10,11,12,5000 crowds 10,11,12 even on a log axis,
%% 1,2,90 on a linear one (below two decades): ordinal, the measured
%% values evenly spaced; 10,50,200 is spread enough for a linear axis.
x_scale_test() ->
    Scale = fun(Xs) ->
                    Bs = [bench(integer_to_binary(S), [1.0, 2.0], #{params => #{n => S}}) || S <- Xs],
                    [#{log := Log, ordinal := Ord, categorical := Cat}] = beamlab_report_views:sweeps(doc(suite, Bs)),
                    case {Log, Ord, Cat} of
                        {true, false, false} -> log;
                        {false, true, false} -> ordinal;
                        {false, false, true} -> categorical;
                        {false, false, false} -> linear
                    end
            end,
    ?assertEqual(log, Scale([0, 10, 100, 1000, 10000])),
    ?assertEqual(log, Scale([0, 1, 10, 100])),
    ?assertEqual(log, Scale([1, 2, 4, 8, 16, 32, 64, 128, 256])),
    ?assertEqual(ordinal, Scale([10, 11, 12, 5000])),
    ?assertEqual(log, Scale([1, 2, 3, 500])),
    ?assertEqual(ordinal, Scale([1, 2, 90])),
    ?assertEqual(ordinal, Scale([0, 1, 50])),
    ?assertEqual(linear, Scale([10, 50, 200])),
    ?assertEqual(linear, Scale([0, 10, 20, 30])),
    ?assertEqual(categorical, Scale([0, 6])).

%% A squeeze curve: throughput per second against workers, every sample a
%% point, speedup, efficiency and a USL fit.
squeeze_scaling_test() ->
    Curve = [#{concurrency => C, samples => [X, X * 1.01, X * 0.99]}
             || C <- [1, 2, 3, 4], X <- [100.0 * C / (1 + 0.1 * (C - 1))]],
    B = beamlab_result:benchmark(<<"q">>, [100.0, 101.0], #{unit => iterations, better => higher,
                                                           params => #{sample => #{duration_ms => 100}},
                                                           extra => #{squeeze_curve => Curve}}),
    [#{axis := <<"workers">>, unit := <<"iterations/s">>, points := Pts, speedup := Sp, efficiency := Ef,
       fit := #{model := usl, sigma := Sigma, curve := [_ | _]}}] = beamlab_report_views:scaling(doc(bench, [B])),
    ?assertEqual(12, length(Pts)),
    ?assertEqual([1, 1000.0], hd(Pts)),                       % 100 per 100 ms = 1000/s
    [_, S4] = lists:last(Sp),
    ?assert(abs(S4 - 4 / 1.3) < 0.01),
    [_, E4] = lists:last(Ef),
    ?assert(abs(E4 - 1 / 1.3) < 0.01),
    ?assert(abs(Sigma - 0.1) < 0.01).

%% A matrix over schedulers, a time per repetition: operations per second,
%% Amdahl with two levels; the verdicts per configuration.
matrix_test() ->
    Bs = [beamlab_result:benchmark(<<C/binary, " / fib">>, Vs,
                                   #{group => C, unit => ms, better => lower, metric => time,
                                     params => #{config => C},
                                     extra => #{inner_benchmark => <<"fib">>, schedulers_online => S}})
          || {C, S, Vs} <- [{<<"+S 1:1">>, 1, [2.0, 2.1, 1.9]}, {<<"+S 2:2">>, 2, [1.1, 1.0, 1.2]}]],
    D0 = doc(matrix, Bs),
    D = D0#{params := #{<<"baseline">> => <<"+S 1:1">>},
            extra := #{<<"configs">> => [#{<<"name">> => <<"+S 1:1">>, <<"status">> => <<"ok">>},
                                         #{<<"name">> => <<"+S 2:2">>, <<"status">> => <<"ok">>}]}},
    [#{axis := <<"schedulers">>, unit := <<"ops/s">>, means := [[1, M1 | _], [2, M2 | _]],
       fit := #{model := amdahl}}] = beamlab_report_views:scaling(D),
    ?assert(abs(M1 - 500) < 1 andalso abs(M2 - 1000 / 1.1) < 20),
    #{baseline := <<"+S 1:1">>, rows := [#{benchmark := <<"fib">>, unit := <<"ms">>,
                                           cells := [#{config := <<"+S 1:1">>, samples := [2.0, 2.1, 1.9]},
                                                     #{config := <<"+S 2:2">>}]}]} = beamlab_report_views:matrix(D),
    ?assertEqual(null, beamlab_report_views:matrix(doc(bench, Bs))).

%% A histogram gives the spectrum; a percentile map (message_load's
%% latency_us) its points, its unit from the key.
latency_test() ->
    H = beamlab_stats_hist:new(#{significant_digits => 3, max => 1000000}),
    [beamlab_stats_hist:record(H, V) || V <- lists:seq(1, 10000)],
    Hist = beamlab_stats_hist:to_map(beamlab_stats_hist:snapshot(H)),
    A = bench(<<"lat">>, [1.0, 2.0], #{extra => #{latency_hist => Hist, total => #{p50 => 5, p99 => 99}}}),
    B = bench(<<"ml">>, [1.0, 2.0], #{unit => 'msg/s', extra => #{latency_us => #{p50 => 2.0, p90 => 25.0, p99 => 105.0,
                                                                                 p999 => 195.0, max => 26312.0}}}),
    [#{name := <<"lat">>, unit := <<"us">>, count := 10000, points := [[50.0, P50] | _] = Ps},
     #{name := <<"ml latency_us">>, unit := <<"us">>, max := 26312.0,
       points := [[50.0, 2.0], [90.0, 25.0], [99.0, 105.0], [99.9, 195.0]]}] =
        beamlab_report_views:latency(doc(suite, [A, B])),
    ?assert(abs(P50 - 5000) < 10),
    ?assertEqual(10, length(Ps)).

%% Findings that say when they fired, in seconds from the telemetry's start.
marks_test() ->
    D0 = beamlab_result:set(telemetry, #{t_ms => [1000, 2000, 3000]}, doc(bench, [])),
    D = beamlab_result:add_findings(D0, [beamlab_result:finding(x, warning, <<"T">>, <<>>, <<>>, #{from_ms => 1500, to_ms => 2500}),
                                         beamlab_result:finding(y, info, <<"U">>, <<>>, <<>>, #{})]),
    %% (on the telemetry's clock, as the evidence tells them: #35)
    ?assertEqual([#{title => <<"T">>, severity => warning, from => 1.5, to => 2.5}], beamlab_report_views:marks(D)).

%% A series' unit: the run's metric of that name first, then its name.
series_unit_test() ->
    U = fun(K) -> beamlab_report_views:series_unit(K, #{<<"goodput">> => <<"msg/s">>}) end,
    ?assertEqual(<<"msg/s">>, U(<<"series.goodput">>)),
    ?assertEqual(<<"us">>, U(<<"series.latency_mean_us">>)),
    ?assertEqual(<<"bytes">>, U(<<"memory.total">>)),
    ?assertEqual(<<"bytes">>, U(<<"growth.memory_binary">>)),
    ?assertEqual(<<"%">>, U(<<"util">>)),
    ?assertEqual(<<"%">>, U(<<"util_dirty_io">>)),
    ?assertEqual(<<"%">>, U(<<"steal_pct">>)),
    %% #35: a rate names what it counts
    ?assertEqual(<<"reductions/s">>, U(<<"reductions_per_s">>)),
    ?assertEqual(<<"context switches/s">>, U(<<"context_switches_per_s">>)),
    ?assertEqual(<<"bytes/s">>, U(<<"io_in_bytes_per_s">>)),
    ?assertEqual(<<"iterations/s">>, U(<<"rates.lists:seq(1,100).">>)),
    ?assertEqual(<<"cores">>, U(<<"scheduler_busy_cores">>)),
    ?assertEqual(<<"us">>, U(<<"cgroup_throttled_usec">>)),
    ?assertEqual(<<"load average">>, U(<<"load1">>)),
    ?assertEqual(<<"count">>, U(<<"processes">>)),
    ?assertEqual(<<"count">>, U(<<"run_queue">>)).

%% Two values of a parameter are levels (zlib 0 and 6): categorical, never
%% a log axis; the title's workload is the benchmarks' group; a point
%% without an interval has none (never a band of width 0).
categorical_sweep_test() ->
    Bs = [bench(iolist_to_binary(io_lib:format("ser[compressed=~b,term=~s]", [C, T])), Vs,
                #{group => <<"serialization">>, params => #{compressed => C, term => T}})
          || T <- [binary, atoms], {C, Vs} <- [{0, [1.0, 1.1, 0.9]}, {6, [100.0]}]],
    [#{categorical := true, log := false, workload := <<"serialization">>, method := Method,
       series := [#{points := [[0, _, Lo, Hi, 3], [6, 100.0, null, null, 1]]} | _]}] =
        beamlab_report_views:sweeps(doc(suite, Bs)),
    ?assert(Lo < Hi),
    ?assert(is_binary(Method)),
    Three = [bench(integer_to_binary(S), [1.0, 2.0], #{params => #{n => S}}) || S <- [10, 50, 200]],
    ?assertMatch([#{categorical := false, workload := <<>>}], beamlab_report_views:sweeps(doc(suite, Three))).

%% A matrix of `run': iterations per 100 ms sample drawn per second, as
%% the command line prints them.
matrix_per_second_test() ->
    Bs = [beamlab_result:benchmark(<<C/binary, " / f">>, [100.0, 120.0, 110.0],
                                   #{group => C, unit => iterations, better => higher, metric => throughput,
                                     params => #{config => C, sample => #{duration_ms => 100}},
                                     extra => #{inner_benchmark => <<"f">>}})
          || C <- [<<"a">>, <<"b">>]],
    D0 = doc(matrix, Bs),
    D = D0#{params := #{<<"baseline">> => <<"a">>},
            extra := #{<<"configs">> => [#{<<"name">> => <<"a">>}, #{<<"name">> => <<"b">>}]}},
    #{rows := [#{unit := <<"iterations/s">>, cells := [#{mean := M, ci := [Lo, Hi], samples := [1000.0, 1200.0, 1100.0]} | _]}]} =
        beamlab_report_views:matrix(D),
    ?assert(abs(M - 1100) < 1.0e-6),
    ?assert(Lo < M andalso M < Hi).

%% A growth finding is shaded to the last sample of its evidence
%% (`last_ms'), past the sample that raised it (`to_ms').
marks_last_sample_test() ->
    D0 = beamlab_result:set(telemetry, #{t_ms => [1000, 2000, 3000]}, doc(bench, [])),
    D = beamlab_result:add_findings(D0, [beamlab_result:finding(x, warning, <<"T">>, <<>>, <<>>,
                                                                #{from_ms => 1100, to_ms => 1500, last_ms => 2900})]),
    ?assertEqual([#{title => <<"T">>, severity => warning, from => 1.1, to => 2.9}], beamlab_report_views:marks(D)).

%% #35: a matrix configuration's `~' carries what it could have seen into
%% the report (the verdict table's cell), as the command line says it;
%% a verdict carries none.
matrix_detectable_test() ->
    Base = [2.0, 2.1, 1.9],
    Bs = [beamlab_result:benchmark(<<C/binary, " / fib">>, Vs,
                                   maps:merge(#{group => C, unit => ms, better => lower, metric => time,
                                                params => #{config => C},
                                                extra => #{inner_benchmark => <<"fib">>, schedulers_online => 2}},
                                              case C of
                                                  <<"a">> -> #{};
                                                  _ -> #{comparison => beamlab_stats:compare(Base, Vs, #{better => lower})}
                                              end))
          || {C, Vs} <- [{<<"a">>, Base}, {<<"same">>, [2.05, 1.95, 2.0]}, {<<"slow">>, [4.0, 4.2, 3.8]}]],
    D0 = doc(matrix, Bs),
    D = D0#{params := #{<<"baseline">> => <<"a">>},
            extra := #{<<"configs">> => [#{<<"name">> => N, <<"status">> => <<"ok">>} || N <- [<<"a">>, <<"same">>, <<"slow">>]]}},
    #{rows := [#{cells := [A, Same, Slow]}]} = beamlab_report_views:matrix(D),
    #{verdict := <<"no_difference">>, detectable := Det} = Same,
    [#{comparison := #{detectable := Expected}}] = [B || #{group := <<"same">>} = B <- Bs],
    ?assert(abs(Det - Expected) < 1.0e-6),
    ?assertNot(is_map_key(detectable, A)),
    ?assertMatch(#{verdict := <<"slower">>}, Slow),
    ?assertNot(is_map_key(detectable, Slow)).

%% A matrix of a suite: `NAME/METRIC' is the point's other metric; a row
%% says its measure (#35: `ring[k=0]/total (ms)' had none): the
%% document's, else (a suite written before its metrics said it) the
%% metric, after the point that ran.
matrix_suite_rows_test() ->
    Bs = [beamlab_result:benchmark(<<C/binary, " / ", Name/binary>>, [2.0, 2.1, 1.9],
                                   maps:merge(#{group => C, unit => ms, better => lower, metric => Metric,
                                                params => #{config => C, k => 0},
                                                extra => #{inner_benchmark => Name, point => <<"ring[k=0]">>}},
                                              Measure))
          || C <- [<<"a">>, <<"b">>],
             {Name, Metric, Measure} <- [{<<"ring[k=0]">>, per_process, #{measure => <<"wall-clock time per process">>}},
                                         {<<"ring[k=0]/total">>, total, #{}},
                                         {<<"ring[k=0]/create">>, create, #{measure => <<"wall-clock time to create the ring">>}}]],
    D0 = doc(matrix, Bs),
    D = D0#{params := #{<<"baseline">> => <<"a">>},
            extra := #{<<"configs">> => [#{<<"name">> => <<"a">>}, #{<<"name">> => <<"b">>}]}},
    #{rows := Rows} = beamlab_report_views:matrix(D),
    ?assertEqual([{<<"ring[k=0]">>, <<"wall-clock time per process">>}, {<<"ring[k=0]">>, <<"total">>},
                  {<<"ring[k=0]">>, <<"wall-clock time to create the ring">>}],
                 [{W, M} || #{workload := W, measure := M} <- Rows]).

%% A matrix of a suite's sweep: its benchmarks' groups are the
%% configurations; the sweep names the workload the points ran (#35: it
%% was titled without one).
matrix_sweep_workload_test() ->
    Bs = [beamlab_result:benchmark(<<C/binary, " / ", P/binary>>, [S + 1.0, S + 1.1, S + 0.9],
                                   #{group => C, unit => ns, better => lower, metric => round_trip,
                                     params => #{config => C, size => S},
                                     extra => #{inner_benchmark => P, point => P}})
          || C <- [<<"+S 1">>], S <- [10, 100, 1000],
             P <- [iolist_to_binary(io_lib:format("ping_pong[size=~b]", [S]))]],
    [#{workload := <<"ping_pong">>, param := <<"size">>}] = beamlab_report_views:sweeps(doc(matrix, Bs)).
