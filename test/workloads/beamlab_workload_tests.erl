-module(beamlab_workload_tests).
-include_lib("eunit/include/eunit.hrl").

bad_value_message_test_() ->
    M = fun(T, S) -> lists:flatten(beamlab_workload:format_error({bad_value, T, S})) end,
    [?_assertEqual("bad value '0': expected an integer >= 1", M(pos_integer, "0")),
     ?_assertEqual("bad value '-1': expected an integer >= 0", M(non_neg_integer, "-1")),
     ?_assertEqual("bad value 'x': expected a number", M(number, "x")),
     ?_assertEqual("bad value '2': expected true or false", M(boolean, "2")),
     ?_assertEqual("bad value '9': expected integer 0..5", M({int_range, 0, 5}, "9")),
     ?_assertEqual("bad value 't': expected list|binary", M({enum, [list, binary]}, "t"))].

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

%% The rule reads this process's mailbox: what an earlier test left there
%% (PropEr's late messages, on a loaded machine) would count as queued.
flush_mailbox() ->
    receive _ -> flush_mailbox()
    after 0 -> ok
    end.

%% The original message-load rule, on this process's own mailbox: a message
%% taken from an otherwise empty queue is goodput (latency summed in the
%% shared ETS counter while collecting); one taken while others are queued
%% is discarded and the rest flushed (flushput).
message_load_receive_rule_test() ->
    ok = flush_mailbox(),
    M = beamlab_workload_message_load,
    Tab = ets:new(t, [public, set]),
    ets:insert(Tab, {diff, 0, 0}),
    ets:insert(Tab, {flush, 0}),
    Sh = {key, Tab, 10, none},
    C0 = {0, 0, 0, 0, 0, 0, 0},
    %% empty queue: goodput, latency 7 us
    C1 = M:o_received(Sh, 100, 107, collect, C0),
    ?assertEqual({0, 0, 0, 1, 0, 0, 1}, C1),
    ?assertEqual([{diff, 7, 1}], ets:lookup(Tab, diff)),
    %% two more queued behind the one received: discarded, both flushed
    self() ! {make_ref(), 1},
    self() ! {make_ref(), 2},
    C2 = M:o_received(Sh, 100, 200, collect, C1),
    ?assertEqual({0, 0, 0, 1, 1, 2, 1}, C2),
    ?assertEqual([{diff, 7, 1}], ets:lookup(Tab, diff)),
    ?assertEqual([{flush, 2}], ets:lookup(Tab, flush)),
    %% not collecting (warm-up): counted by the process, not in ETS
    C3 = M:o_received(Sh, 100, 150, nocollect, C2),
    ?assertEqual({0, 0, 0, 2, 1, 2, 1}, C3),
    ?assertEqual([{diff, 7, 1}], ets:lookup(Tab, diff)),
    self() ! {make_ref(), 3},
    C4 = M:o_received(Sh, 100, 150, nocollect, C3),
    ?assertEqual({0, 0, 0, 2, 2, 3, 1}, C4),
    ?assertEqual([{flush, 2}], ets:lookup(Tab, flush)),
    ets:delete(Tab).

%% record=true: every measured goodput latency lands in the histogram
%% (inline for an exact bucket, through record/2 beyond), nothing else.
message_load_record_test() ->
    ok = flush_mailbox(),
    M = beamlab_workload_message_load,
    Tab = ets:new(t, [public, set]),
    ets:insert(Tab, {diff, 0, 0}),
    ets:insert(Tab, {flush, 0}),
    H = beamlab_stats_hist:new(#{significant_digits => 3, exact => false}),
    {Buckets, Bound} = beamlab_stats_hist:inline_buckets(H),
    Sh = {key, Tab, 10, {Buckets, Bound, H}},
    C0 = {0, 0, 0, 0, 0, 0, 0},
    C1 = M:o_received(Sh, 100, 107, collect, C0),
    C2 = M:o_received(Sh, 100, 100 + 5000, collect, C1),
    _ = M:o_received(Sh, 100, 103, nocollect, C2),
    self() ! {make_ref(), 1},
    self() ! {make_ref(), 2},
    _ = M:o_received(Sh, 100, 200, collect, C2),
    S = beamlab_stats_hist:snapshot(H),
    ?assertEqual(2, beamlab_stats_hist:count(S)),
    ?assertEqual(7, beamlab_stats_hist:min(S)),
    ?assertEqual([{diff, 5007, 2}], ets:lookup(Tab, diff)),
    ets:delete(Tab).

%% Both variants' workers hold the histograms as shared literals, not as
%% copies: a copy charges each worker's virtual binary heap with the whole
%% histogram and makes every one of its collections a full sweep.
message_load_workers_not_charged_test_() ->
    [{timeout, 60, fun() -> workers_not_charged(V) end} || V <- [original, mesh]].

workers_not_charged(Variant) ->
    M = beamlab_workload_message_load,
    {ok, P} = M:normalize(#{variant => Variant, procs => 8, wait => 10, warmup => 300,
                            duration => 300, record => true}),
    {ok, S} = M:setup(P),
    Self = self(),
    Runner = spawn_link(fun() -> Self ! {self(), M:run(S, P)} end),
    Charged = [beamlab_test_util:vheap_charge(W) || W <- workers(Runner, 8)],
    receive {Runner, Result} -> ?assertMatch({ok, #{value := _}, _}, Result) end,
    ?assert(length(Charged) >= 8),
    ?assert(lists:max(Charged) < 1000).

%% The processes the runner linked to (its workers and, once measuring,
%% the sampler) as soon as the workers are spawned.
workers(Runner, N) ->
    beamlab_test_util:wait_for(
      fun() ->
              {links, Ls} = process_info(Runner, links),
              Ws = [P || P <- Ls, P =/= self()],
              length(Ws) >= N andalso {ok, Ws}
      end, 10000, {workers, N}).

%% A variant's unused parameters are dropped and equal points run once.
variant_points_test_() ->
    Names = fun(Mod, Name, Ov) ->
                    {ok, Ps} = beamlab_workload:points(Mod, quick, Ov),
                    [beamlab_workload:point_name(Name, P) || P <- Ps]
            end,
    [?_assertEqual([<<"ring[k=0]">>, <<"ring[k=4]">>],
                   Names(beamlab_workload_ring, <<"ring">>, #{})),
     ?_assertEqual([<<"ring[variant=termite,k=0]">>, <<"ring[variant=termite,k=4]">>,
                    <<"ring[variant=laps]">>],
                   Names(beamlab_workload_ring, <<"ring">>, #{variant => [termite, laps]})),
     ?_assertMatch({error, {invalid_params, _, {token_not_below_n, 4, 3}}},
                   beamlab_workload:points(beamlab_workload_ring, quick, #{n => [3]})),
     ?_assertEqual([<<"big[variant=bencherl]">>, <<"big[variant=savina]">>],
                   Names(beamlab_workload_big, <<"big">>, #{variant => [bencherl, savina]})),
     ?_assertMatch({ok, [{_, #{variant := mesh} = P}]} when not is_map_key(record, P),
                   beamlab_workload:points(beamlab_workload_message_load, quick,
                                           #{variant => [mesh]}))].

%% The defaults are the published originals'.
default_variants_test_() ->
    Default = fun(Mod) ->
                      {ok, [{_, P} | _]} = beamlab_workload:points(Mod, quick, #{}),
                      maps:get(variant, P)
              end,
    [?_assertEqual(original, Default(beamlab_workload_message_load)),
     ?_assertEqual(bencherl, Default(beamlab_workload_big)),
     ?_assertEqual(bencherl, Default(beamlab_workload_bang)),
     ?_assertEqual(termite, Default(beamlab_workload_ring)),
     ?_assertEqual(termite, Default(beamlab_workload_spawn)),
     %% message_load full profile: the original's periods
     ?_assertMatch({ok, [{_, #{warmup := 300000, duration := 60000}}]},
                   beamlab_workload:points(beamlab_workload_message_load, full, #{}))].
