-module(beamlab_amqp_perftest_tests).
-include_lib("eunit/include/eunit.hrl").

key_values_test() ->
    KV = fun(S) -> {ok, L} = beamlab_amqp_perftest:key_values(S), L end,
    ?assertEqual([{<<"x-max-length">>, 10}, {<<"x-overflow">>, <<"reject-publish">>}],
                 KV("x-max-length=10,x-overflow=reject-publish")),
    %% PerfTest's typing: booleans, 64-bit integers, the rest strings.
    ?assertEqual([{<<"a">>, true}, {<<"b">>, false}, {<<"c">>, -3},
                  {<<"d">>, <<"9223372036854775808">>}, {<<"e">>, <<"1.5">>}],
                 KV("a=true,b=false,c=-3,d=9223372036854775808,e=1.5")),
    ?assertEqual([{<<"k">>, <<>>}, {<<"j">>, <<>>}], KV("k,j=")),
    %% PerfTest's special cases; a later key replaces an earlier one.
    ?assertEqual([{<<"x-dead-letter-exchange">>, <<>>}], KV("x-dead-letter-exchange=amq.default")),
    ?assertEqual([{<<"x-single-active-consumer">>, true}], KV("x-single-active-consumer=true")),
    ?assertEqual([{<<"x-single-active-consumer">>, false}], KV("x-single-active-consumer=yes")),
    ?assertEqual([{<<"a">>, 2}], KV("a=1,a=2")),
    ?assertEqual([], KV("")),
    ?assertMatch({error, _}, beamlab_amqp_perftest:key_values("a=1,,b=2")),
    ?assertMatch({error, _}, beamlab_amqp_perftest:key_values("=1")).

byte_capacity_test() ->
    C = fun beamlab_amqp_perftest:byte_capacity/1,
    ?assertEqual({ok, 100}, C("100")),
    ?assertEqual({ok, 20000000000}, C("20gb")),
    ?assertEqual({ok, 500000000}, C("500MB")),
    ?assertEqual({ok, 3000}, C("3kb")),
    ?assertEqual({ok, 2000000000000}, C("2tb")),
    ?assertMatch({error, "'5xb' is not a valid byte capacity" ++ _}, C("5xb")),
    ?assertMatch({error, _}, C("-1")),
    ?assertMatch({error, _}, C("1.5gb")).

iso_duration_test() ->
    D = fun beamlab_amqp_perftest:iso_duration/1,
    ?assertEqual({ok, 630}, D("PT10M30S")),
    ?assertEqual({ok, 5 * 86400 + 8 * 3600}, D("P5DT8H")),
    ?assertEqual({ok, 15}, D("pt15s")),
    ?assertEqual({ok, 1}, D("PT1.5S")),
    ?assertMatch({error, "'PT0S' is not a valid duration, it must be positive"}, D("PT0S")),
    ?assertMatch({error, _}, D("-PT5M")),
    ?assertMatch({error, _}, D("P")),
    ?assertMatch({error, _}, D("PT")),
    ?assertMatch({error, _}, D("10 minutes")).

stream_offset_test() ->
    O = fun beamlab_amqp_perftest:stream_offset/1,
    ?assertEqual({ok, <<"first">>}, O("FIRST")),
    ?assertEqual({ok, <<"next">>}, O("next")),
    ?assertEqual({ok, 12345}, O("12345")),
    ?assertEqual({ok, {timestamp, 1654242354}}, O("2022-06-03T07:45:54Z")),
    ?assertMatch({error, _}, O("-1")),
    ?assertMatch({error, _}, O("yesterday")).

variable_test() ->
    V = fun beamlab_amqp_perftest:variable/2,
    ?assertEqual({ok, {100, 60}}, V("100:60", 0)),
    ?assertEqual({ok, {0, 5}}, V("0:5", 0)),
    ?assertMatch({error, _}, V("0:5", 1)),
    ?assertMatch({error, _}, V("100:0", 0)),
    ?assertMatch({error, _}, V("100", 0)),
    ?assertMatch({error, _}, V("a:b", 0)),
    ?assertMatch({error, _}, V("1:2:3", 0)).

recovery_interval_test() ->
    R = fun beamlab_amqp_perftest:recovery_interval/1,
    ?assertEqual({ok, {30000, 30000}}, R("30")),
    ?assertEqual({ok, {30000, 60000}}, R("30-60")),
    ?assertMatch({error, _}, R("60-30")),
    ?assertMatch({error, _}, R("x")).

publishing_interval_test() ->
    P = fun beamlab_amqp_perftest:publishing_interval/1,
    ?assertEqual({ok, 5.0}, P("5")),
    ?assertEqual({ok, 0.1}, P("0.1")),
    ?assertEqual({error, "cannot be less than 0.1"}, P("0.05")),
    ?assertEqual({error, "must be positive"}, P("0")),
    ?assertEqual({error, "must be a number"}, P("x")).

%% Java's String.format with the queue number (#27: '%s' is not literal).
queue_name_test() ->
    N = fun beamlab_amqp_perftest:queue_name/2,
    ?assertEqual(<<"q-7">>, N("q-%s", 7)),
    ?assertEqual(<<"q-007">>, N("q-%03d", 7)),
    ?assertEqual(<<"q-  7">>, N("q-%3d", 7)),
    ?assertEqual(<<"q-7  ">>, N("q-%-3d", 7)),
    ?assertEqual(<<"q-ff">>, N("q-%x", 255)),
    ?assertEqual(<<"q-FF">>, N("q-%X", 255)),
    ?assertEqual(<<"q-17">>, N("q-%o", 15)),
    ?assertEqual(<<"100%-5">>, N("100%%-%d", 5)),
    ?assertEqual(<<"q-7-7">>, N("q-%d-%s", 7)),
    ?assertEqual(ok, beamlab_amqp_perftest:check_pattern("perf-test-%d")),
    ?assertMatch({error, "has no conversion" ++ _}, beamlab_amqp_perftest:check_pattern("q")),
    ?assertMatch({error, "has no conversion" ++ _}, beamlab_amqp_perftest:check_pattern("q-%%")),
    ?assertMatch({error, "has an unsupported conversion '%f'" ++ _},
                 beamlab_amqp_perftest:check_pattern("q-%f")),
    ?assertMatch({error, _}, beamlab_amqp_perftest:check_pattern("q-%")).

properties_test() ->
    {ok, KVs} = beamlab_amqp_perftest:key_values(
                  "priority=5,contentType=text/plain,deliveryMode=2,messageId=m1,"
                  "timestamp=2024-06-03T07:45:54Z,appId=a,myheader=x,count=3"),
    {ok, Props} = beamlab_amqp_perftest:properties(KVs),
    ?assertMatch(#{priority := 5, content_type := <<"text/plain">>, delivery_mode := 2,
                   message_id := <<"m1">>, timestamp := 1717400754, app_id := <<"a">>}, Props),
    ?assertEqual([{<<"count">>, long, 3}, {<<"myheader">>, longstr, <<"x">>}],
                 maps:get(headers, Props)),
    {ok, Bad} = beamlab_amqp_perftest:key_values("priority=300"),
    ?assertMatch({error, "message property priority=300: expected an integer 0..255"},
                 beamlab_amqp_perftest:properties(Bad)),
    {ok, BadTime} = beamlab_amqp_perftest:key_values("timestamp=noon"),
    ?assertMatch({error, _}, beamlab_amqp_perftest:properties(BadTime)).

%% PerfTest's random JSON bodies: at least the size, valid JSON objects.
json_bodies_test() ->
    Bodies = beamlab_amqp_perftest:json_bodies(500, 20, 5),
    ?assertEqual(5, length(Bodies)),
    [begin
         ?assert(byte_size(B) >= 500),
         ?assertMatch({ok, #{}}, beamlab_json:decode(B))
     end || B <- Bodies].
