-module(beamlab_amqp_report_tests).
-include_lib("eunit/include/eunit.hrl").

all_on() ->
    #{published => true, received => true, returned => true, confirmed => true}.

rates() ->
    #{sent => 13548.7, returned => 0, confirmed => 13449.2, nacked => 0.5,
      received => 7.25, consumer => [404, 5648, 7770, 11609, 14864],
      confirm => [241, 3707, 5544, 9435, 11787]}.

format_rate_test() ->
    ?assertEqual(<<"0">>, beamlab_amqp_report:format_rate(0)),
    ?assertEqual(<<"0">>, beamlab_amqp_report:format_rate(0.0)),
    ?assertEqual(<<"0.50">>, beamlab_amqp_report:format_rate(0.5)),
    ?assertEqual(<<"7.3">>, beamlab_amqp_report:format_rate(7.25)),
    ?assertEqual(<<"10">>, beamlab_amqp_report:format_rate(10.9)),
    ?assertEqual(<<"24354">>, beamlab_amqp_report:format_rate(24354.99)).

interval_line_all_columns_test() ->
    Line = beamlab_amqp_report:interval_line(<<"test-104559-735">>, 1000400, rates(), all_on()),
    ?assertEqual(<<"id: test-104559-735, time 1.000 s, sent: 13548 msg/s, returned: 0 msg/s, "
                   "confirmed: 13449 msg/s, nacked: 0.50 msg/s, received: 7.3 msg/s, "
                   "min/median/75th/95th/99th consumer latency: 404/5648/7770/11609/14864 µs, "
                   "confirm latency: 241/3707/5544/9435/11787 µs"/utf8>>, Line).

%% No -f mandatory, no -c: PerfTest leaves out returned, confirmed, nacked
%% and the confirm latency.
interval_line_minimal_test() ->
    En = #{published => true, received => true, returned => false, confirmed => false},
    Line = beamlab_amqp_report:interval_line(<<"t">>, 2000000, rates(), En),
    ?assertEqual(<<"id: t, time 2.000 s, sent: 13548 msg/s, received: 7.3 msg/s, "
                   "min/median/75th/95th/99th consumer latency: 404/5648/7770/11609/14864 µs"/utf8>>,
                 Line).

interval_line_producers_only_test() ->
    En = #{published => true, received => false, returned => false, confirmed => true},
    Line = beamlab_amqp_report:interval_line(<<"t">>, 1500, rates(), En),
    ?assertEqual(<<"id: t, time 0.002 s, sent: 13548 msg/s, confirmed: 13449 msg/s, "
                   "nacked: 0.50 msg/s, min/median/75th/95th/99th confirm latency: "
                   "241/3707/5544/9435/11787 µs"/utf8>>, Line).

%% The line must parse with the regular expression a PerfTest script would use.
interval_line_parses_like_perftest_test() ->
    Line = beamlab_amqp_report:interval_line(<<"test-1">>, 3000000, rates(), all_on()),
    {match, [Sent, Recv, Med]} =
        re:run(Line, "sent: ([0-9.]+) msg/s.*received: ([0-9.]+) msg/s.*consumer latency: "
                     "[0-9]+/([0-9]+)/", [unicode, {capture, all_but_first, binary}]),
    ?assertEqual({<<"13548">>, <<"7.3">>, <<"5648">>}, {Sent, Recv, Med}).

summary_test() ->
    S = beamlab_amqp_report:summary_lines(<<"t">>, rates(), all_on(), 5000000),
    ?assertEqual(<<"id: t, sending rate avg: 13548 msg/s\n"
                   "id: t, receiving rate avg: 7.3 msg/s\n"
                   "id: t, consumer latency min/median/75th/95th/99th 404/5648/7770/11609/14864 µs\n"
                   "id: t, confirm latency min/median/75th/95th/99th 241/3707/5544/9435/11787 µs\n"/utf8>>,
                 S).

summary_without_time_test() ->
    S = beamlab_amqp_report:summary_lines(<<"t">>, rates(), all_on(), 0),
    ?assertEqual(<<"id: t, sending rate avg: 13548 msg/s\n">>, S).

accounting_balanced_test() ->
    A = beamlab_amqp_report:accounting(#{sent => 100, received => 90, returned => 4,
                                         nacked => 1, confirmed => 99}, 5),
    ?assertMatch(#{balanced := true, unaccounted := 0}, A),
    ?assertEqual(<<"id: t, accounting: sent 100 = received 90 + returned 4 + nacked 1"
                   " + queued 5 (balanced)">>, beamlab_amqp_report:accounting_line(<<"t">>, A)).

accounting_unbalanced_test() ->
    A = beamlab_amqp_report:accounting(#{sent => 100, received => 90, returned => 0,
                                         nacked => 0, confirmed => 0}, 3),
    ?assertMatch(#{balanced := false, unaccounted := 7}, A),
    ?assertEqual(<<"id: t, accounting: sent 100 = received 90 + returned 0 + nacked 0"
                   " + queued 3 + unaccounted 7 (NOT balanced)">>,
                 beamlab_amqp_report:accounting_line(<<"t">>, A)).

accounting_unknown_depth_test() ->
    A = beamlab_amqp_report:accounting(#{sent => 10, received => 9, returned => 0,
                                         nacked => 0, confirmed => 0}, undefined),
    ?assertMatch(#{balanced := false, unaccounted := undefined}, A),
    ?assertMatch({match, _}, re:run(beamlab_amqp_report:accounting_line(<<"t">>, A),
                                    "queue depth unknown")).

%% After reconnects a difference is explained, not flagged as an error;
%% without a difference the line stays "balanced".
accounting_after_reconnects_test() ->
    C = #{sent => 100, received => 104, returned => 0, nacked => 0, confirmed => 90},
    A = beamlab_amqp_report:accounting(C#{reconnects => 2}, 0),
    ?assertMatch(#{balanced := false, unaccounted := -4, reconnects := 2, approximate := true}, A),
    ?assertEqual(<<"id: t, accounting: sent 100 = received 104 + returned 0 + nacked 0"
                   " + queued 0 + unaccounted -4 (approximate after 2 reconnects: in-flight"
                   " messages lost with a connection are not counted, redelivered ones are"
                   " counted twice)">>,
                 beamlab_amqp_report:accounting_line(<<"t">>, A)),
    One = beamlab_amqp_report:accounting(C#{reconnects => 1}, 0),
    ?assertMatch({match, _}, re:run(beamlab_amqp_report:accounting_line(<<"t">>, One),
                                    "\\(approximate after 1 reconnect: ")),
    Even = beamlab_amqp_report:accounting(C#{reconnects => 1}, -4),
    ?assertMatch(#{balanced := true, approximate := true}, Even),
    ?assertMatch({match, _}, re:run(beamlab_amqp_report:accounting_line(<<"t">>, Even),
                                    "queued -4 \\(balanced\\)$")),
    %% No reconnect: exact check, no caveat.
    ?assertMatch(#{reconnects := 0, approximate := false},
                 beamlab_amqp_report:accounting(maps:remove(reconnects, C), 0)).

test_id_test() ->
    Id = beamlab_amqp_report:test_id(erlang:system_time(millisecond)),
    ?assertMatch({match, _}, re:run(Id, "^test-[0-9]{6}-[0-9]{3}$")).

%% --use-millis: latency in milliseconds, PerfTest's "ms".
interval_line_millis_test() ->
    Line = beamlab_amqp_report:interval_line(<<"t">>, 1000000, rates(), all_on(), ms),
    ?assertMatch({match, _}, re:run(Line, <<"consumer latency: 0/5/7/11/14 ms, confirm latency: "
                                            "0/3/5/9/11 ms$">>)).

%% --metrics-format compact: PerfTest's aligned columns.
compact_test() ->
    ?assertEqual(<<"time               sent     returned    confirmed       nacked     received"
                   "       consumer latency        confirm latency">>,
                 beamlab_amqp_report:compact_header(all_on())),
    Line = beamlab_amqp_report:compact_line(1000400, rates(), all_on(), us),
    ?assertEqual(<<"1.000s      13548 msg/s      0 msg/s  13449 msg/s   0.50 msg/s    7.3 msg/s"
                   " 404/5648/7770/11609/14864 µs 241/3707/5544/9435/11787 µs"/utf8>>, Line),
    Short = beamlab_amqp_report:compact_line(2000000, rates(), all_on(), ms),
    %% Short latencies are right-aligned in their 23 columns.
    ?assertMatch({match, _}, re:run(Short, <<" {9}0/5/7/11/14 ms {10}0/3/5/9/11 ms$">>)).

%% --output-file: PerfTest's 17 CSV columns, empty cells for what is off.
csv_test() ->
    Header = beamlab_amqp_report:csv_header(us),
    ?assertEqual(17, length(binary:split(Header, <<",">>, [global]))),
    ?assertMatch(<<"id,time (s),published (msg/s),returned (msg/s),", _/binary>>, Header),
    Row = beamlab_amqp_report:csv_line(<<"t">>, 1000400, rates(), all_on(), us),
    ?assertEqual(<<"t,1.000,13548,0,13449,0.50,7.3,404,5648,7770,11609,14864,241,3707,5544,9435,11787">>,
                 Row),
    En = #{published => true, received => true, returned => false, confirmed => false},
    Min = beamlab_amqp_report:csv_line(<<"t">>, 1000400, rates(), En, ms),
    ?assertEqual(<<"t,1.000,13548,,,,7.3,0,5,7,11,14,,,,,">>, Min),
    ?assertEqual(17, length(binary:split(Min, <<",">>, [global]))).

%% --nack with requeue: deliveries that went back to the queue are not
%% received ones.
requeued_accounting_test() ->
    A = beamlab_amqp_report:accounting(#{sent => 100, received => 350, requeued => 300,
                                         returned => 0, nacked => 0}, 50),
    ?assertMatch(#{balanced := true, unaccounted := 0, requeued := 300}, A),
    ?assertEqual(<<"id: t, accounting: sent 100 = received 350 - requeued 300 + returned 0 + "
                   "nacked 0 + queued 50 (balanced)">>, beamlab_amqp_report:accounting_line(<<"t">>, A)).

%% Streams keep what is read: every consumer of a stream reads all of it.
stream_accounting_test() ->
    C = #{sent => 1000, received => 1990, returned => 0, nacked => 10},
    A = beamlab_amqp_report:accounting(C, undefined, #{stream => 2}),
    ?assertMatch(#{kind := stream, stored := 990, unread := -10, balanced := false}, A),
    Ok = beamlab_amqp_report:accounting(C#{received => 1980}, undefined, #{stream => 2}),
    ?assertEqual(<<"id: t, accounting (streams keep what is read): sent 1000 = stored 990 + "
                   "returned 0 + nacked 10; read 1980 = 2 consumers per stream x 990 stored "
                   "(balanced)">>, beamlab_amqp_report:accounting_line(<<"t">>, Ok)),
    Short = beamlab_amqp_report:accounting(C#{received => 900, nacked => 0}, undefined, #{stream => 1}),
    ?assertMatch({match, _}, re:run(beamlab_amqp_report:accounting_line(<<"t">>, Short),
                                    "read 900 of 1000 = 1 consumer per stream x 1000 stored: "
                                    "100 unread \\(NOT balanced\\)$")),
    Uneven = beamlab_amqp_report:accounting(C, undefined, #{stream => undefined}),
    ?assertMatch({match, _}, re:run(beamlab_amqp_report:accounting_line(<<"t">>, Uneven),
                                    "different numbers of consumers")).
