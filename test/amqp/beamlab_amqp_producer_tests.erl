-module(beamlab_amqp_producer_tests).
-include_lib("eunit/include/eunit.hrl").

body_layout_test() ->
    B = beamlab_amqp_producer:body(1234567890123, 7, <<0, 0, 0, 0>>),
    ?assertEqual(16, byte_size(B)),
    ?assertMatch(<<1234567890123:64/signed, 7:32, 0:32>>, B).

%% #34: a large padding is shared, not copied per message: the body and
%% every body frame of a publish refer to the one padding binary.
shared_padding_test() ->
    Pad = binary:copy(<<0>>, 1 bsl 20),
    Body = beamlab_amqp_producer:body(1, 2, Pad),
    ?assertEqual(12 + (1 bsl 20), iolist_size(Body)),
    ok = beamlab_amqp:publish({amqp_channel, self(), 1, 131072}, <<>>, <<"q">>, Body, #{}),
    Frames = receive {'$amqp_send', 1, F} -> F end,
    Parts = [B || B <- binaries(Frames), byte_size(B) > 4096],
    ?assert(length(Parts) >= 8),
    ?assert(lists:all(fun(B) -> binary:referenced_byte_size(B) =:= byte_size(Pad) end, Parts)).

binaries(B) when is_binary(B) -> [B];
binaries([H | T]) -> binaries(H) ++ binaries(T);
binaries(_) -> [].
