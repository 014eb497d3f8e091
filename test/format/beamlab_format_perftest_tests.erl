-module(beamlab_format_perftest_tests).
-include_lib("eunit/include/eunit.hrl").

%% PerfTest 2.22's output (recorded against a private broker).
perftest_2_22_test() ->
    Text = <<"id: test-211500-511, starting consumer #0\n"
             "id: test-211500-511, time 1.129 s, sent: 27464 msg/s, returned: 0 msg/s, confirmed: 27458 msg/s, "
             "nacked: 0 msg/s, received: 3304 msg/s, min/median/75th/95th/99th consumer latency: "
             "997/137302/573245/724658/743173 µs, confirm latency: 61/807/1359/7766/37816 µs\n"
             "id: test-211500-511, time 2.036 s, sent: 29418 msg/s, returned: 0 msg/s, confirmed: 29315 msg/s, "
             "nacked: 0 msg/s, received: 8221 msg/s, min/median/75th/95th/99th consumer latency: "
             "749146/902302/1038414/1169389/1343160 µs, confirm latency: 56/999/1519/5570/16324 µs\n"
             "test stopped (Reached time limit)\n"
             "id: test-211500-511, sending rate avg: 27468 msg/s\n"
             "id: test-211500-511, receiving rate avg: 13009 msg/s\n"
             "id: test-211500-511, consumer latency min/median/75th/95th/99th 3372/1806627/2042587/2131267/2155041 µs\n"
             "id: test-211500-511, confirm latency min/median/75th/95th/99th 48/906/1773/7972/23664 µs\n"/utf8>>,
    #{id := Id, intervals := [I1, I2], summary := S} = beamlab_format_perftest:parse(Text),
    ?assertEqual(<<"test-211500-511">>, Id),
    ?assertEqual(#{time_s => 1.129, sent => 27464.0, returned => 0.0, confirmed => 27458.0, nacked => 0.0,
                   received => 3304.0, consumer => [997, 137302, 573245, 724658, 743173],
                   confirm => [61, 807, 1359, 7766, 37816]}, I1),
    ?assertMatch(#{time_s := 2.036, received := 8221.0}, I2),
    ?assertEqual(#{sent => 27468.0, received => 13009.0,
                   consumer => [3372, 1806627, 2042587, 2131267, 2155041],
                   confirm => [48, 906, 1773, 7972, 23664]}, S).

%% The published run's form (PerfTest 2.x of 2020): `time: 1,000s', the
%% locale's decimal comma, and no latency summary.
perftest_published_test() ->
    Text = <<"id: test-104559-735, time: 1,000s, sent: 13548 msg/s, returned: 0 msg/s, confirmed: 13449 msg/s, "
             "nacked: 0 msg/s, received: 13433 msg/s, min/median/75th/95th/99th consumer latency: "
             "404/5648/7770/11609/14864 µs, confirm latency: 241/3707/5544/9435/11787 µs\n"
             "^Ctest stopped (Producer thread interrupted)\n"
             "id: test-104559-735, sending rate avg: 24354 msg/s\n"
             "id: test-104559-735, receiving rate avg: 24352 msg/s\n"/utf8>>,
    #{intervals := [I], summary := S} = beamlab_format_perftest:parse(Text),
    ?assertMatch(#{time_s := 1.0, sent := 13548.0, consumer := [404, 5648, 7770, 11609, 14864]}, I),
    ?assertEqual(#{sent => 24354.0, received => 24352.0}, S).

nothing_to_read_test() ->
    ?assertEqual(#{id => undefined, intervals => [], summary => #{}},
                 beamlab_format_perftest:parse(<<"Error: could not connect\n">>)).

%% beamlab_sut_load: the command line filled in, and PerfTest's output as
%% a document shaped like `beamlab amqp''s.
load_command_line_test() ->
    T = #{uri => <<"amqp://guest:guest@127.0.0.1:5799/%2F">>, node => 'beamlab-target-5799@127.0.0.1'},
    ?assertEqual("perftest -h amqp://guest:guest@127.0.0.1:5799/%2F -z 30 # beamlab-target-5799@127.0.0.1",
                 beamlab_sut_load:command_line("perftest -h {uri} -z 30 # {node}", T)),
    ?assertEqual("run.sh", beamlab_sut_load:command_line("run.sh", T)).

load_document_test() ->
    Text = <<"id: t, time 1.000 s, sent: 100 msg/s, received: 90 msg/s, min/median/75th/95th/99th "
             "consumer latency: 1/2/3/4/5 µs\n"
             "id: t, time 2.000 s, sent: 300 msg/s, received: 310 msg/s, min/median/75th/95th/99th "
             "consumer latency: 1/4/5/6/7 µs\n"
             "id: t, sending rate avg: 210 msg/s\n"
             "id: t, receiving rate avg: 205 msg/s\n"
             "id: t, consumer latency min/median/75th/95th/99th 1/3/5/6/7 µs\n"/utf8>>,
    {ok, Doc} = beamlab_sut_load:document(Text, "perftest", #{started_at => <<"2026-01-01T00:00:00Z">>}),
    #{kind := amqp, benchmarks := [Sent, Recv, Lat]} = Doc,
    ?assertMatch(#{name := <<"sent">>, samples := [100.0, 300.0], unit := <<"msg/s">>, better := higher,
                   extra := #{<<"average">> := 210.0}}, Sent),
    ?assertMatch(#{name := <<"received">>, extra := #{<<"average">> := 205.0}}, Recv),
    ?assertMatch(#{name := <<"consumer latency">>, samples := [2, 4], better := lower,
                   extra := #{<<"total">> := #{<<"p50">> := 3, <<"p99">> := 7}}}, Lat),
    ?assertMatch({error, _}, beamlab_sut_load:document(<<"Exception in thread main\n">>, "x",
                                                        #{started_at => <<"t">>})).
