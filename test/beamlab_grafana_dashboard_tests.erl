-module(beamlab_grafana_dashboard_tests).
-include_lib("eunit/include/eunit.hrl").

%% docs/grafana/beamlab-dashboard.json is valid JSON, a Grafana dashboard
%% whose every query names metrics beamlab serves: the VM's and the
%% watch's (from a sample), the AMQP load's PerfTest names (an empty run's
%% families) and run's iteration counter.
dashboard_names_exist_test() ->
    File = filename:join([beamlab_test_util:root(), "docs", "grafana", "beamlab-dashboard.json"]),
    {ok, Bin} = file:read_file(File),
    {ok, #{<<"panels">> := Panels, <<"title">> := _, <<"uid">> := _}} = beamlab_json:decode(Bin),
    Exprs = [E || #{<<"targets">> := Ts} <- Panels, #{<<"expr">> := E} <- Ts],
    ?assert(length(Exprs) >= 15),
    Used = lists:usort([N || E <- Exprs,
                             {match, Ms} <- [re:run(E, "\\b(?:beamlab|perftest)_[a-z_]+", [global, {capture, all, binary}])],
                             [N] <- Ms]),
    Served = served(),
    Missing = [N || N <- Used, not served(N, Served)],
    ?assertEqual([], Missing).

%% A sample line, or the family's TYPE line (an AMQP run without samples
%% yet), or a histogram's buckets.
served(N, Text) ->
    Base = case re:run(N, "^(.*)_bucket$", [{capture, all_but_first, binary}]) of
               {match, [B]} -> B;
               nomatch -> N
           end,
    binary:match(Text, <<"\n", N/binary>>) =/= nomatch
        orelse binary:match(Text, <<"# TYPE ", Base/binary, " ">>) =/= nomatch.

%% Every family name (as the 0.0.4 text exposes it) of a watch, the VM and
%% an AMQP run.
served() ->
    Sample = #{util_schedulers => [50.0, 10.0], util => 30.0, util_dirty_cpu => 0.0, util_dirty_io => 0.0,
               run_queue => 1, run_queue_dirty_cpu => 0, run_queue_dirty_io => 0, processes => 40, ports => 3,
               atoms => 9000, ets_tables => 20, memory => #{total => 100, processes => 50},
               totals => #{reds => 10, gcs => 2, io_in => 1, io_out => 1, os_cpu_us => 1000000},
               monitor_wall_pct => 1.0,
               top => #{by_reductions => [#{pid => <<"<0.1.0>">>, name => <<"p">>, reductions_per_s => 1.0,
                                            message_queue_len => 0, memory => 1}],
                        by_message_queue => [#{pid => <<"<0.1.0>">>, name => <<"p">>, reductions_per_s => 1.0,
                                               message_queue_len => 5, memory => 1}],
                        by_memory => [#{pid => <<"<0.1.0>">>, name => <<"p">>, reductions_per_s => 1.0,
                                        message_queue_len => 0, memory => 1}]},
               ets_top => [#{name => <<"t">>, id => <<"t">>, owner => <<"<0.1.0>">>, memory => 10}],
               monitor_events => [#{event => long_gc, count => 1}]},
    W = beamlab_sut_metrics:new(node()),
    ok = beamlab_sut_metrics:publish(W, {sample, Sample}),
    ok = beamlab_sut_metrics:publish(W, {findings, [beamlab_result:finding(x, warning, <<"t">>, <<"e">>, <<"a">>, #{})]}),
    A = beamlab_amqp_metrics:new(false),
    Families = (beamlab_runtime_metrics_board:collector(W))() ++ (beamlab_runtime_metrics_board:collector(A))()
        ++ beamlab_engine_measure:metric_families(undefined, [{<<"job">>, counters:new(1, [])}]),
    ok = beamlab_runtime_metrics_board:delete(W),
    ok = beamlab_runtime_metrics_board:delete(A),
    iolist_to_binary(["\n", beamlab_format_openmetrics:render(Families, prometheus)]).
