-module(beamlab_workload_tests).
-include_lib("eunit/include/eunit.hrl").

parse_value_test_() ->
    P = fun beamlab_workload:parse_value/2,
    [?_assertEqual({ok, 10}, P(pos_integer, "10")),
     ?_assertEqual({ok, 0}, P(non_neg_integer, " 0 ")),
     ?_assertMatch({error, {bad_value, pos_integer, "0"}}, P(pos_integer, "0")),
     ?_assertMatch({error, _}, P(pos_integer, "ten")),
     ?_assertMatch({error, _}, P(non_neg_integer, "-1")),
     ?_assertEqual({ok, 9}, P({int_range, 0, 9}, "9")),
     ?_assertMatch({error, _}, P({int_range, 0, 9}, "10")),
     ?_assertEqual({ok, 1.5}, P(number, "1.5")),
     ?_assertEqual({ok, 3}, P(number, "3")),
     ?_assertEqual({ok, true}, P(boolean, "true")),
     ?_assertEqual({ok, false}, P(boolean, "no")),
     ?_assertMatch({error, _}, P(boolean, "maybe")),
     ?_assertEqual({ok, list}, P({enum, [list, binary]}, "list")),
     ?_assertMatch({error, _}, P({enum, [list, binary]}, "tuple")),
     ?_assertEqual({ok, 'a@b'}, P(node, "a@b")),
     ?_assertMatch({error, _}, P(node, "nohost")),
     ?_assertEqual({ok, <<"x">>}, P(binary, "x"))].

format_test_() ->
    [?_assertEqual("12", beamlab_workload:format_value(12)),
     ?_assertEqual("list", beamlab_workload:format_value(list)),
     ?_assertEqual("list|binary", beamlab_workload:type_name({enum, [list, binary]})),
     ?_assertEqual("integer 0..9", beamlab_workload:type_name({int_range, 0, 9}))].

%% ping_pong sweeps size (4 values) and payload (2) by default.
points_default_sweep_test() ->
    {ok, Points} = beamlab_workload:points(beamlab_workload_ping_pong, quick, #{}),
    ?assertEqual(8, length(Points)),
    Names = [beamlab_workload:point_name(<<"ping_pong">>, P) || P <- Points],
    ?assertEqual(<<"ping_pong[size=0,payload=list]">>, hd(Names)),
    ?assertEqual(<<"ping_pong[size=1000,payload=binary]">>, lists:last(Names)),
    ?assertEqual(length(Names), length(lists:usort(Names))).

points_override_test() ->
    {ok, Points} = beamlab_workload:points(beamlab_workload_ping_pong, quick,
                                           #{size => [5], payload => [binary], n => [3, 4]}),
    ?assertEqual([<<"ping_pong[n=3]">>, <<"ping_pong[n=4]">>],
                 [beamlab_workload:point_name(<<"ping_pong">>, P) || P <- Points]),
    [{_, P1} | _] = Points,
    ?assertMatch(#{size := 5, payload := binary, n := 3, vm := local}, P1).

points_unswept_name_test() ->
    {ok, [Point]} = beamlab_workload:points(beamlab_workload_fib, quick, #{}),
    ?assertEqual(<<"fib">>, beamlab_workload:point_name(<<"fib">>, Point)).

points_full_profile_test() ->
    {ok, [{[], #{n := 32}}]} = beamlab_workload:points(beamlab_workload_fib, full, #{}),
    {ok, Ring} = beamlab_workload:points(beamlab_workload_ring, full, #{}),
    ?assert(lists:member(1000000, [N || {_, #{n := N}} <- Ring])).

points_unknown_param_test() ->
    ?assertMatch({error, {unknown_param, <<"fib">>, size, [n]}},
                 beamlab_workload:points(beamlab_workload_fib, quick, #{size => [1]})).

points_normalize_test_() ->
    [?_assertMatch({error, {invalid_params, beamlab_workload_skynet, {not_power_of_10, 20}}},
                   beamlab_workload:points(beamlab_workload_skynet, quick, #{size => [20]})),
     ?_assertMatch({ok, [{_, #{vm := remote, node := 'x@h'}}]},
                   beamlab_workload:points(beamlab_workload_ping_pong, quick,
                                           #{node => ['x@h'], size => [0], payload => [list]})),
     ?_assertMatch({error, {invalid_params, _, remote_needs_node}},
                   beamlab_workload:points(beamlab_workload_ping_pong, quick,
                                           #{vm => [remote], size => [0], payload => [list]}))].

resolve_test_() ->
    [?_assertEqual({ok, beamlab_workload_ring}, beamlab_workload:resolve("ring")),
     ?_assertMatch({error, {unknown_workload, "no_such_workload_xyz"}},
                   beamlab_workload:resolve("no_such_workload_xyz")),
     ?_assertMatch({error, {not_a_workload, lists}}, beamlab_workload:resolve("lists")),
     ?_assertMatch({error, {unknown_workload, _}}, beamlab_workload:resolve(""))].

builtin_are_workloads_test() ->
    Mods = beamlab_workload:builtin(),
    ?assertEqual(14, length(Mods)),
    [begin
         ?assert(beamlab_workload:is_workload(M)),
         Info = M:info(),
         [?assert(maps:is_key(K, Info)) || K <- [name, summary, definition, unit, better, checks]],
         ?assertEqual(atom_to_binary(M), <<"beamlab_workload_", (maps:get(name, Info))/binary>>),
         [?assert(maps:is_key(K, S)) || S <- M:params(), K <- [key, default, full, type, help]]
     end || M <- Mods].

check_all_test_() ->
    [?_assertEqual(ok, beamlab_workload:check_all([{"a", 1, 1}])),
     ?_assertEqual({failed, <<"hops: expected 4, got 3">>},
                   beamlab_workload:check_all([{"a", 1, 1}, {"hops", 4, 3}]))].

params_to_map_test() ->
    ?assertEqual(#{<<"n">> => 3, <<"vm">> => <<"local">>, <<"b">> => true},
                 beamlab_workload:params_to_map(#{n => 3, vm => local, b => true})).

sweep_property_test_() ->
    {timeout, 60,
     fun() -> ?assert(proper:quickcheck(prop_beamlab_workload:prop_sweep(),
                                        [{numtests, 200}, {to_file, user}])) end}.
