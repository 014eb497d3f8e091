-module(beamlab_json_tests).
-include_lib("eunit/include/eunit.hrl").

enc(T) -> iolist_to_binary(beamlab_json:encode(T)).

encode_test() ->
    ?assertEqual(<<"{\"a\":[1,2.5,\"x\"],\"b\":null,\"c\":true}">>,
                 enc(#{a => [1, 2.5, <<"x">>], b => null, c => true})),
    ?assertEqual(<<"[1,2]">>, enc({1, 2})),
    ?assertEqual(<<"\"faster\"">>, enc(faster)),
    ?assertEqual(<<"\"\\\"\\\\\\n\\u0001\"">>, enc(<<"\"\\\n", 1>>)),
    ?assertEqual(<<"[]">>, enc([])),
    ?assertEqual(<<"{}">>, enc(#{})).

decode_test() ->
    ?assertEqual({ok, #{<<"k">> => [1, -2.5e-3, true, false, null, <<"é"/utf8>>]}},
                 beamlab_json:decode(<<" {\"k\" : [1, -2.5e-3, true, false, null, \"\\u00e9\"]} ">>)),
    ?assertEqual({ok, <<"😀"/utf8>>}, beamlab_json:decode(<<"\"\\ud83d\\ude00\"">>)),
    ?assertEqual({ok, 1.0e10}, beamlab_json:decode(<<"1E10">>)),
    ?assertEqual({ok, 100}, beamlab_json:decode(<<"100">>)).

decode_errors_test() ->
    [?assertMatch({error, _}, beamlab_json:decode(B)) ||
        B <- [<<>>, <<"{">>, <<"[1,]">>, <<"{\"a\" 1}">>, <<"\"abc">>, <<"01x">>, <<"1.">>,
              <<"\"\\x\"">>, <<"[1] 2">>, <<"\"a\nb\"">>, <<"tru">>, <<"\"\\udc00\"">>]],
    {error, R} = beamlab_json:decode(<<"[1, @]">>),
    ?assertEqual("invalid JSON at byte 4: unexpected character",
                 lists:flatten(beamlab_json:format_error(R))).

pretty_is_equivalent_test() ->
    T = #{a => [#{b => [1, 2]}, 3], c => #{}, d => []},
    {ok, Compact} = beamlab_json:decode(beamlab_json:encode(T)),
    {ok, Pretty} = beamlab_json:decode(beamlab_json:encode(T, #{pretty => true})),
    ?assertEqual(Compact, Pretty).

%% (the timeout is a hang guard: the 1000 cases take under a second on a
%% quiet machine, see prop_beamlab_json's short_list/1)
roundtrip_property_test_() ->
    {timeout, 120,
     fun() -> ?assert(proper:quickcheck(prop_beamlab_json:prop_roundtrip(),
                                        [{numtests, 1000}, {to_file, user}])) end}.
