-module(beamlab_amqp_perf_tests).
-include_lib("eunit/include/eunit.hrl").

expand_pattern_test() ->
    ?assertEqual([<<"perf-test-1">>, <<"perf-test-2">>, <<"perf-test-3">>],
                 beamlab_amqp_perf:expand_pattern("perf-test-%d", 1, 3)),
    ?assertEqual([<<"q-008">>, <<"q-009">>, <<"q-010">>],
                 beamlab_amqp_perf:expand_pattern(<<"q-%03d">>, 8, 10)),
    ?assertEqual([<<"100%-5">>], beamlab_amqp_perf:expand_pattern("100%%-%d", 5, 5)),
    ?assertEqual([], beamlab_amqp_perf:expand_pattern("q%d", 3, 2)).

queue_names_test() ->
    D = beamlab_amqp_perf:defaults(),
    ?assertEqual([<<"q1">>], beamlab_amqp_perf:queue_names(D#{queue := <<"q1">>}, <<"id">>)),
    ?assertEqual([<<"beamlab-id">>], beamlab_amqp_perf:queue_names(D, <<"id">>)),
    ?assertEqual([<<"p-1">>, <<"p-2">>],
                 beamlab_amqp_perf:queue_names(D#{queue_pattern := {"p-%d", 1, 2}}, <<"id">>)),
    ?assertEqual([<<"beamlab-loop-id-1">>, <<"beamlab-loop-id-2">>],
                 beamlab_amqp_perf:queue_names(D#{closed_loop := 2}, <<"id">>)).

body_layout_test() ->
    B = beamlab_amqp_producer:body(1234567890123, 7, <<0, 0, 0, 0>>),
    ?assertEqual(16, byte_size(B)),
    ?assertMatch(<<1234567890123:64/signed, 7:32, 0:32>>, B).
