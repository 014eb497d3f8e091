-module(beamlab_report_html_tests).
%% The page's model: telemetry series over time.
-include_lib("eunit/include/eunit.hrl").

telemetry_doc(Telemetry) ->
    D = beamlab_result:new(bench, #{command => [], started_at => <<"2026-01-01T00:00:00Z">>}),
    beamlab_result:set(telemetry, Telemetry, D).

series(Doc) ->
    #{runs := [#{series := Series}]} = beamlab_report_html:model([{<<"a">>, Doc}]),
    maps:from_list([{N, {T, Y}} || #{name := N, t := T, y := Y} <- Series]).

%% A watched node silent from 2.5 s to 4 s: a null point where the
%% silence began, so the chart breaks its line there instead of joining
%% the samples on either side; the axis is the telemetry's own clock
%% (from the start of the recording: the first sample at 1 s), on which
%% the findings' evidence tells times.
unanswered_gap_test() ->
    Doc = telemetry_doc(#{t_ms => [1000, 2000, 4000, 5000], run_queue => [1, 2, 3, 4],
                          unanswered => [#{from_ms => 2500, to_ms => 4000}]}),
    ?assertEqual({[1.0, 2.0, 2.5, 4.0, 5.0], [1, 2, null, 3, 4]}, maps:get(<<"run_queue">>, series(Doc))),
    %% A node silent to the end: the null point after the last sample.
    Open = telemetry_doc(#{t_ms => [1000, 2000], run_queue => [1, 2],
                           unanswered => [#{from_ms => 2500, to_ms => null}]}),
    ?assertEqual({[1.0, 2.0, 2.5], [1, 2, null]}, maps:get(<<"run_queue">>, series(Open))),
    %% No silence, no extra point.
    Quiet = telemetry_doc(#{t_ms => [1000, 2000], run_queue => [1, 2]}),
    ?assertEqual({[1.0, 2.0], [1, 2]}, maps:get(<<"run_queue">>, series(Quiet))).

%% #35: a last sample taken when the recording stopped between two ticks
%% covers part of an interval: left out of every series (and heatmap) on
%% that axis and counted, never drawn as a fall; an interval within 10%
%% of the others is whole.
partial_tail_test() ->
    Doc = telemetry_doc(#{t_ms => [1000, 2000, 3000, 3400], run_queue => [1, 2, 3, 0],
                          nested => #{reductions_per_s => [5, 6, 7, 1]},
                          util_schedulers => [[1, 2], [3, 4], [5, 6], [0, 0]]}),
    #{runs := [#{series := Series, heatmaps := [Hm]}]} = beamlab_report_html:model([{<<"a">>, Doc}]),
    ?assertEqual([{<<"nested.reductions_per_s">>, [1.0, 2.0, 3.0], [5, 6, 7], 1, <<"reductions/s">>},
                  {<<"run_queue">>, [1.0, 2.0, 3.0], [1, 2, 3], 1, <<"count">>}],
                 lists:sort([{N, T, Y, P, U} || #{name := N, t := T, y := Y, partial := P, unit := U} <- Series])),
    ?assertEqual([1.0, 2.0, 3.0], maps:get(t, Hm)),
    Whole = telemetry_doc(#{t_ms => [1000, 2000, 3000, 3950], run_queue => [1, 2, 3, 4]}),
    ?assertEqual({[1.0, 2.0, 3.0, 3.95], [1, 2, 3, 4]}, maps:get(<<"run_queue">>, series(Whole))),
    ?assert(beamlab_report_views:partial_tail([0, 1000, 3000, 3500])),
    ?assertNot(beamlab_report_views:partial_tail([0, 1000, 3000, 4000])),
    ?assertNot(beamlab_report_views:partial_tail([0, 400])).

%% message_load's per-second maps of 2 repetitions of 1000 ms: one line per
%% repetition and key over the seconds of that repetition (never one line
%% over seconds 1..4), the partial second after each period left out and
%% counted, and none of it from a matrix's fresh-VM repetitions.
per_second_repetitions_test() ->
    Series = [#{rep => R, second => S, goodput => G, flushput => 10}
              || {R, S, G} <- [{1, 1, 26000}, {1, 2, 0}, {2, 1, 27000}, {2, 2, 450}]],
    B = beamlab_result:benchmark(<<"message_load">>, [26000.0, 27000.0],
                                 #{group => <<"message_load">>, metric => goodput, unit => 'msg/s', better => higher,
                                   params => #{duration => 1000}, extra => #{series => Series}}),
    D = beamlab_result:add_benchmarks(telemetry_doc(#{}), [B]),
    #{runs := [#{series := Model}]} = beamlab_report_html:model([{<<"a">>, D}]),
    Goodput = [S || S = #{name := <<"message_load series.goodput">>} <- Model],
    ?assertEqual([{1, [1], [26000], 1}, {2, [1], [27000], 1}],
                 [{R, T, Y, P} || #{rep := R, t := T, y := Y, partial := P} <- Goodput]),
    %% A point that says it lasted less than a second is partial too.
    Short = B#{extra := #{series => [#{rep => 1, second => 1, goodput => 5, ms => 300}]}},
    #{runs := [#{series := M2}]} = beamlab_report_html:model([{<<"a">>, beamlab_result:add_benchmarks(telemetry_doc(#{}), [Short#{params := #{}}])}]),
    ?assertEqual([], [S || S = #{name := <<"message_load series.goodput">>} <- M2]),
    %% A matrix's benchmark: its samples are fresh VMs, not seconds.
    Rep = B#{extra := #{inner_benchmark => <<"message_load">>, series => Series}},
    #{runs := [#{series := M3}]} = beamlab_report_html:model([{<<"a">>, beamlab_result:add_benchmarks(telemetry_doc(#{}), [Rep])}]),
    ?assertEqual([], M3).

%% #35: a check's samples are paired rounds in fresh VMs and its `extra'
%% the base's rounds and the paired interval: nothing of it is drawn over
%% seconds (it was: `work (time) base' and `paired.ci' against 1..8 s).
check_rounds_are_not_time_test() ->
    B = beamlab_result:benchmark(<<"work (time)">>, [2000.0, 2100.0, 1900.0, 2050.0],
                                 #{group => <<"work">>, metric => time, unit => ns, better => lower,
                                   extra => #{base => [1000.0, 1100.0, 900.0, 1050.0],
                                              paired => #{ci => [0.8, 1.2], change => 1.0}}}),
    Check = beamlab_result:add_benchmarks(beamlab_result:new(check, #{command => [], started_at => <<"2026-01-01T00:00:00Z">>}), [B]),
    #{runs := [#{series := Series}]} = beamlab_report_html:model([{<<"a">>, Check}]),
    ?assertEqual([], Series),
    %% The same benchmark in a bench document is drawn (the list of per-second values).
    Bench = beamlab_result:add_benchmarks(telemetry_doc(#{}), [B]),
    #{runs := [#{series := BenchSeries}]} = beamlab_report_html:model([{<<"a">>, Bench}]),
    ?assertNotEqual([], BenchSeries).

%% #35: a watch's run names the node it watched (every chart's title says
%% it); other runs name none.
watch_subject_test() ->
    W = beamlab_result:new(watch, #{command => [], started_at => <<"2026-01-01T00:00:00Z">>,
                                    params => #{node => <<"app@host">>}}),
    #{runs := [#{subject := <<"app@host">>}]} = beamlab_report_html:model([{<<"w">>, W}]),
    %% (as saved and loaded: binary keys)
    {ok, Json} = beamlab_json:decode(iolist_to_binary(beamlab_result:to_json(W))),
    {ok, Loaded} = beamlab_result:from_json(Json),
    #{runs := [#{subject := <<"app@host">>}]} = beamlab_report_html:model([{<<"w">>, Loaded}]),
    #{runs := [#{subject := null}]} = beamlab_report_html:model([{<<"b">>, telemetry_doc(#{})}]).

%% #35: an amqp run's samples at the ends of their intervals; a last
%% interval shorter than the others (the run stopped 0.5 s into it) is
%% left out and counted, never drawn as one more whole second.
amqp_interval_ends_test() ->
    Doc = fun(Ends) ->
                  Extra = case Ends of none -> #{}; _ -> #{interval_end_s => Ends} end,
                  B = beamlab_result:benchmark(<<"sent">>, [500.0, 1000.0, 1500.0, 4000.0],
                                               #{group => <<"amqp">>, metric => throughput, unit => 'msg/s',
                                                 better => higher, extra => Extra}),
                  D = beamlab_result:new(amqp, #{command => [], started_at => <<"2026-01-01T00:00:00Z">>,
                                                 params => #{interval => 1}}),
                  beamlab_result:add_benchmarks(D, [B])
          end,
    Sent = fun(D) ->
                   #{runs := [#{series := Series}]} = beamlab_report_html:model([{<<"a">>, D}]),
                   [{T, Y, P}] = [{T, Y, P} || #{name := <<"sent (msg/s)">>, t := T, y := Y, partial := P} <- Series],
                   {T, Y, P}
           end,
    ?assertEqual({[1.02, 2.01, 3.0], [500.0, 1000.0, 1500.0], 1}, Sent(Doc([1.02, 2.01, 3.0, 3.5]))),
    ?assertEqual({[1.02, 2.01, 3.0, 4.01], [500.0, 1000.0, 1500.0, 4000.0], 0}, Sent(Doc([1.02, 2.01, 3.0, 4.01]))),
    %% (older documents: one interval per sample)
    ?assertEqual({[1, 2, 3, 4], [500.0, 1000.0, 1500.0, 4000.0], 0}, Sent(Doc(none))),
    %% The ends are the samples' time axis, not a series of their own.
    #{runs := [#{series := All}]} = beamlab_report_html:model([{<<"a">>, Doc([1.02, 2.01, 3.0, 3.5])}]),
    ?assertEqual([<<"sent (msg/s)">>], [N || #{name := N} <- All]),
    %% A run that says when its load started (0.4 s after the run, the
    %% origin of its telemetry and the watched broker's): its intervals on
    %% the run's clock, with the broker's series and heatmap (#35).
    Broker = #{t_ms => [1000, 2000, 3000], util => [10, 20, 30], run_queue => [0, 1, 0],
               reductions_per_s => [1, 2, 3], util_schedulers => [[10], [20], [30]]},
    Watched = fun(D) ->
                      beamlab_result:set(extra, (maps:get(extra, D, #{}))#{load_start_ms => 400,
                                                                           broker => #{telemetry => Broker}}, D)
              end,
    #{runs := [#{series := WS, heatmaps := WH}]} =
        beamlab_report_html:model([{<<"a">>, Watched(Doc([1.02, 2.01, 3.0, 3.5]))}]),
    [{SentT, SentClock}] = [{T, C} || #{name := <<"sent (msg/s)">>, t := T, clock := C} <- WS],
    ?assertEqual({[1.42, 2.41, 3.4], <<"run">>}, {SentT, SentClock}),
    ?assertEqual([{[1.0, 2.0, 3.0], <<"run">>}], [{T, C} || #{name := <<"broker util">>, t := T, clock := C} <- WS]),
    ?assertEqual([<<"run">>], [C || #{clock := C} <- WH]),
    %% (an older document: the load's clock, the broker's series on it unshifted)
    #{runs := [#{series := OS}]} =
        beamlab_report_html:model([{<<"a">>, beamlab_result:set(extra, #{broker => #{telemetry => Broker}},
                                                                Doc([1.02, 2.01, 3.0, 3.5]))}]),
    ?assertEqual([[1.02, 2.01, 3.0]], [T || #{name := <<"sent (msg/s)">>, t := T} = S <- OS, not is_map_key(clock, S)]).

%% #35: a run's samples and its telemetry on one clock: each sample at
%% its end (`sample_end_ms', ms since the run started: rounds rotate two
%% jobs, so the second job's first sample ended after the first job's)
%% and the telemetry at its `t_ms', both marked `run', so the page draws
%% them on one axis of seconds since the run started. An older document
%% (no `sample_end_ms') keeps the k-th sample at k durations and no
%% shared clock.
run_clock_test() ->
    Doc = fun(Ends) ->
                  Bench = fun(Name, E) ->
                                  Extra = case E of none -> #{}; _ -> #{sample_end_ms => E} end,
                                  beamlab_result:benchmark(Name, [300, 330, 310],
                                                           #{params => #{<<"sample">> => #{<<"duration_ms">> => 300}}, unit => iterations,
                                                             extra => Extra})
                          end,
                  {E1, E2} = case Ends of none -> {none, none}; {A, B} -> {A, B} end,
                  beamlab_result:add_benchmarks(
                    telemetry_doc(#{t_ms => [1000, 2000], run_queue => [1, 2],
                                    run_queues => [[1], [2]]}),
                    [Bench(<<"a">>, E1), Bench(<<"b">>, E2)])
          end,
    Model = fun(D) ->
                    #{runs := [#{series := Series, heatmaps := Hms}]} = beamlab_report_html:model([{<<"r">>, D}]),
                    {maps:from_list([{N, {T, maps:get(clock, S, null)}} || #{name := N, t := T} = S <- Series]),
                     [maps:get(clock, H, null) || H <- Hms]}
            end,
    {New, NewHm} = Model(Doc({[310, 1250, 1560], [620, 940, 1870]})),
    ?assertEqual({[0.31, 1.25, 1.56], <<"run">>}, maps:get(<<"a (iterations/s)">>, New)),
    ?assertEqual({[0.62, 0.94, 1.87], <<"run">>}, maps:get(<<"b (iterations/s)">>, New)),
    ?assertEqual({[1.0, 2.0], <<"run">>}, maps:get(<<"run_queue">>, New)),
    ?assertEqual([<<"run">>], NewHm),
    %% the ends are the samples' time axis, not a series of their own
    ?assertEqual([<<"a (iterations/s)">>, <<"b (iterations/s)">>, <<"run_queue">>], lists:sort(maps:keys(New))),
    {Old, OldHm} = Model(Doc(none)),
    ?assertEqual({[0.3, 0.6, 0.9], null}, maps:get(<<"a (iterations/s)">>, Old)),
    ?assertEqual({[0.3, 0.6, 0.9], null}, maps:get(<<"b (iterations/s)">>, Old)),
    ?assertEqual({[1.0, 2.0], null}, maps:get(<<"run_queue">>, Old)),
    ?assertEqual([null], OldHm).

%% #35: the Runs table counts a matrix's benchmarks, not its benchmark x
%% configuration entries: one benchmark in two configurations is "1 in 2
%% configurations" (it said "benchmarks 2"); any other run counts its own.
counted_test() ->
    {ok, Cs} = beamlab_env_matrix:configs(#{vm => ["+S 1", "+S 2"]}),
    Runner = fun(_, _Argv) ->
                     {ok, #{exit => 0, env => #{},
                            result => #{benchmarks => [#{name => <<"x">>, unit => <<"ns">>, better => <<"lower">>,
                                                         samples => [10.0, 11.0]}]}}}
             end,
    {ok, Matrix} = beamlab_env_matrix:run(#{configs => Cs, command => ["run", "x"], repeat => 2, argv => ["matrix"],
                                            started_at => <<"2026-01-01T00:00:00Z">>,
                                            inner => {erlang, error, [not_called]}},
                                          #{runner => Runner}),
    ?assertEqual(2, length(maps:get(benchmarks, Matrix))),
    Counted = fun(Doc) -> #{runs := [#{counted := C}]} = beamlab_report_html:model([{<<"a">>, Doc}]), C end,
    ?assertEqual(#{benchmarks => 1, configurations => 2}, Counted(Matrix)),
    Bench = beamlab_result:add_benchmarks(telemetry_doc(#{}),
                                          [beamlab_result:benchmark(N, [1.0, 2.0], #{unit => <<"ns">>, better => lower})
                                           || N <- [<<"a">>, <<"b">>]]),
    ?assertEqual(#{benchmarks => 2}, Counted(Bench)).

%% #35: what a chart's title names before the measure comes from the
%% document's fields (`workload' of the page's benchmarks): a suite's
%% point (`extra.point', which wins over the name), a check's bench
%% (`group'), any other benchmark itself; a suite document written before
%% `extra.point' is read by the suite's naming (`POINT/cpu' beside POINT).
workload_test() ->
    B = fun(Name, Opts) -> beamlab_result:benchmark(Name, [1.0, 2.0], maps:merge(#{unit => <<"ms">>, better => lower}, Opts)) end,
    Workloads = fun(Kind, Bs) ->
                        Doc = beamlab_result:add_benchmarks(
                                beamlab_result:new(Kind, #{command => [], started_at => <<"2026-01-01T00:00:00Z">>}), Bs),
                        #{runs := [#{benchmarks := Ms}]} = beamlab_report_html:model([{<<"a">>, Doc}]),
                        [W || #{workload := W} <- Ms]
                end,
    ?assertEqual([<<"fib[n=16]">>, <<"fib[n=16]">>, <<"other">>],
                 Workloads(suite, [B(<<"fib[n=16]">>, #{group => fib, extra => #{point => <<"fib[n=16]">>}}),
                                   B(<<"fib[n=16]/cpu">>, #{group => fib, metric => cpu, extra => #{point => <<"fib[n=16]">>}}),
                                   B(<<"fib[n=18]/cpu">>, #{group => fib, metric => cpu, extra => #{point => <<"other">>}})])),
    %% (older: no extra.point)
    ?assertEqual([<<"fib[n=16]">>, <<"fib[n=16]">>, <<"fib[n=18]/cpu">>],
                 Workloads(suite, [B(<<"fib[n=16]">>, #{group => fib}), B(<<"fib[n=16]/cpu">>, #{group => fib, metric => cpu}),
                                   B(<<"fib[n=18]/cpu">>, #{group => fib, metric => cpu})])),
    ?assertEqual([<<"work">>], Workloads(check, [B(<<"work (cpu)">>, #{group => work, metric => cpu})])),
    ?assertEqual([<<"lists:seq(1, 10).">>], Workloads(bench, [B(<<"lists:seq(1, 10).">>, #{group => run})])).

%% #35: a matrix of a suite titles each chart by the inner suite's point
%% (`fib[n=16]: CPU time per repetition', not `fib[n=16]/cpu: ...'): the
%% matrix keeps the inner benchmark's `extra.point'.
matrix_workload_test() ->
    {ok, Cs} = beamlab_env_matrix:configs(#{vm => ["+S 1", "+S 2"]}),
    Runner = fun(_, _Argv) ->
                     {ok, #{exit => 0, env => #{},
                            result => #{benchmarks => [#{name => <<"fib[n=16]/cpu">>, unit => <<"ms">>, better => <<"lower">>,
                                                         metric => <<"cpu">>, measure => <<"CPU time per repetition">>,
                                                         extra => #{<<"point">> => <<"fib[n=16]">>},
                                                         samples => [10.0, 11.0]},
                                                       #{name => <<"ok.">>, unit => <<"ns">>, better => <<"lower">>,
                                                         samples => [10.0, 11.0]}]}}}
             end,
    {ok, Matrix} = beamlab_env_matrix:run(#{configs => Cs, command => ["suite", "fib"], repeat => 2, argv => ["matrix"],
                                            started_at => <<"2026-01-01T00:00:00Z">>,
                                            inner => {erlang, error, [not_called]}},
                                          #{runner => Runner}),
    #{rows := Rows} = beamlab_report_views:matrix(Matrix),
    ?assertEqual([{<<"fib[n=16]/cpu">>, <<"fib[n=16]">>}, {<<"ok.">>, <<"ok.">>}],
                 lists:sort([{I, W} || #{benchmark := I, workload := W} <- Rows])).

%% #35: a matrix of brokers: each configuration's broker telemetry counts
%% from its repetition's run start; where the configuration says when that
%% load started (`broker.load_start_ms') it is drawn on the load's clock
%% (seconds since the load started), as a document without it already
%% counted.
matrix_broker_clock_test() ->
    Broker = #{t_ms => [1000, 2000, 3000], util => [10, 20, 30], run_queue => [0, 1, 0],
               reductions_per_s => [1, 2, 3]},
    Doc = fun(Conf) ->
                  D = beamlab_result:new(matrix, #{command => [], started_at => <<"2026-01-01T00:00:00Z">>,
                                                   params => #{baseline => <<"+S 1">>}}),
                  beamlab_result:set(extra, #{configs => [Conf#{name => <<"+S 1">>, status => <<"ok">>}]}, D)
          end,
    Util = fun(D) ->
                   #{runs := [#{series := S}]} = beamlab_report_html:model([{<<"m">>, D}]),
                   [{T, maps:get(clock, X, none)} || #{name := <<"+S 1: broker util">>, t := T} = X <- S]
           end,
    ?assertEqual([{[0.6, 1.6, 2.6], none}], Util(Doc(#{broker => #{telemetry => Broker, load_start_ms => 400}}))),
    ?assertEqual([{[1.0, 2.0, 3.0], none}], Util(Doc(#{broker => #{telemetry => Broker}}))).
