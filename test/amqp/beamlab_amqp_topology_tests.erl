-module(beamlab_amqp_topology_tests).
-include_lib("eunit/include/eunit.hrl").

expand_pattern_test() ->
    ?assertEqual([<<"perf-test-1">>, <<"perf-test-2">>, <<"perf-test-3">>],
                 beamlab_amqp_topology:expand_pattern("perf-test-%d", 1, 3)),
    ?assertEqual([<<"q-008">>, <<"q-009">>, <<"q-010">>],
                 beamlab_amqp_topology:expand_pattern(<<"q-%03d">>, 8, 10)),
    ?assertEqual([<<"100%-5">>], beamlab_amqp_topology:expand_pattern("100%%-%d", 5, 5)),
    ?assertEqual([], beamlab_amqp_topology:expand_pattern("q%d", 3, 2)).

queue_names_test() ->
    D = beamlab_amqp_config:new(#{}),
    ?assertEqual([<<"q1">>], beamlab_amqp_topology:queue_names(D#{queue := <<"q1">>}, <<"id">>)),
    ?assertEqual([<<"beamlab-id">>], beamlab_amqp_topology:queue_names(D, <<"id">>)),
    ?assertEqual([<<"p-1">>, <<"p-2">>],
                 beamlab_amqp_topology:queue_names(D#{queue_pattern := {"p-%d", 1, 2}}, <<"id">>)),
    ?assertEqual([<<"beamlab-loop-id-1">>, <<"beamlab-loop-id-2">>],
                 beamlab_amqp_topology:queue_names(D#{closed_loop := 2}, <<"id">>)).
