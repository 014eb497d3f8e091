-module(beamlab_amqp_producer_tests).
-include_lib("eunit/include/eunit.hrl").

body_layout_test() ->
    B = beamlab_amqp_producer:body(1234567890123, 7, <<0, 0, 0, 0>>),
    ?assertEqual(16, byte_size(B)),
    ?assertMatch(<<1234567890123:64/signed, 7:32, 0:32>>, B).
