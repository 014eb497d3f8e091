-module(beamlab_amqp_metrics_tests).
-include_lib("eunit/include/eunit.hrl").

counts(Sent, Received) ->
    #{reconnects => 0, sent => Sent, returned => 0, confirmed => Sent, nacked => 0,
      received => Received, requeued => 0}.

snap(Values) ->
    H = beamlab_amqp_agent:new_hist(),
    ok = beamlab_stats_hist:record_list(H, Values),
    beamlab_stats_hist:snapshot(H).

%% Cumulative buckets in seconds; +Inf is the count; the sum in seconds.
histogram_test() ->
    #{buckets := B, sum := Sum, count := 4} = beamlab_amqp_metrics:histogram(snap([40, 90, 900, 40000000])),
    ?assertEqual({5.0e-5, 1}, lists:keyfind(5.0e-5, 1, B)),
    ?assertEqual({1.0e-4, 2}, lists:keyfind(1.0e-4, 1, B)),
    ?assertEqual({0.001, 3}, lists:keyfind(0.001, 1, B)),
    ?assertEqual({30.0, 3}, lists:keyfind(30.0, 1, B)),
    ?assertEqual({infinity, 4}, lists:last(B)),
    Counts = [N || {_, N} <- B],
    ?assertEqual(Counts, lists:sort(Counts)),
    ?assert(abs(Sum - 40.00103) < 0.01).

%% Rates over the interval since the last publication; PerfTest's names
%% unlabelled on one node, `node' on every sample over several.
families_test() ->
    T = beamlab_amqp_metrics:new(false),
    S = fun(C, R) -> #{counters => counts(C, R), consumer => snap([100]), confirm => snap([50])} end,
    ok = beamlab_amqp_metrics:publish(T, #{node() => S(100, 90)}, 1.0),
    ok = beamlab_amqp_metrics:publish(T, #{node() => S(300, 290)}, 2.0),
    Fs = (beamlab_runtime_metrics_board:collector(T))(),
    Get = fun(Name) -> [F] = [F || #{name := N} = F <- Fs, N =:= Name], maps:get(samples, F) end,
    ?assertEqual([{[], 100.0}], Get(<<"perftest_published">>)),
    ?assertEqual([{[], 100.0}], Get(<<"perftest_consumed">>)),
    ?assertEqual([{[], 300}], Get(<<"beamlab_amqp_published_total">>)),
    [{[], #{count := 1}}] = Get(<<"perftest_latency_seconds">>),
    ok = beamlab_runtime_metrics_board:delete(T),
    L = beamlab_amqp_metrics:new(true),
    ok = beamlab_amqp_metrics:publish(L, #{'a@h' => S(10, 10), 'b@h' => S(20, 20)}, 1.0),
    Ls = (beamlab_runtime_metrics_board:collector(L))(),
    ?assert(lists:all(fun(#{samples := Ss}) ->
                              lists:all(fun({Lb, _}) -> lists:keymember(<<"node">>, 1, Lb) end, Ss)
                      end, Ls)),
    [Pub] = [Ss || #{name := <<"perftest_published">>, samples := Ss} <- Ls],
    ?assertEqual([{[{<<"node">>, <<"a@h">>}], 10.0}, {[{<<"node">>, <<"b@h">>}], 20.0}], Pub),
    ok = beamlab_runtime_metrics_board:delete(L).
