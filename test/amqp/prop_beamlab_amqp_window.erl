%%% @doc PropEr properties of a producer's confirm window kept as runs
%%% (beamlab_amqp_window, #33): under any mix of publishes (one by one or
%%% a burst's runs, stamps repeated or not) and confirms (one number or
%%% all up to one, in order or not, of numbers in the window or long
%%% settled), it answers what a map from sequence number to stamp
%%% answers. The `_test_' functions let `rebar3 eunit' run them.
-module(prop_beamlab_amqp_window).

-include_lib("proper/include/proper.hrl").
-include_lib("eunit/include/eunit.hrl").

-export([prop_as_a_map/0]).

%% A publish with one of a few stamps (runs form when a stamp repeats),
%% or a confirm of a number near the window's (as offsets back from the
%% next number to publish: in the window, settled, or far behind).
op() ->
    frequency([{5, {publish, range(1, 3)}},
               {2, {publish_runs, list({range(1, 3), range(1, 4)})}},
               {2, {take, range(1, 12)}},
               {1, {take_upto, range(1, 12)}}]).

prop_as_a_map() ->
    ?FORALL(Ops, list(op()),
            run(Ops, 1, beamlab_amqp_window:new(), #{})).

run([], _Next, W, M) ->
    beamlab_amqp_window:size(W) =:= map_size(M);
run([{publish, Stamp} | Ops], Next, W, M) ->
    run(Ops, Next + 1, beamlab_amqp_window:add(W, Next, Stamp), M#{Next => Stamp});
run([{publish_runs, Runs} | Ops], Next, W, M) ->
    %% A burst (beamlab_amqp_rate:take/4's runs): as its publishes one by one.
    Stamps = lists:append([lists:duplicate(K, T) || {T, K} <- Runs]),
    Next1 = Next + length(Stamps),
    M1 = maps:merge(M, maps:from_list(lists:zip(lists:seq(Next, Next1 - 1), Stamps))),
    case beamlab_amqp_window:add_runs(W, Next, Runs) of
        {Next1, W1} -> run(Ops, Next1, W1, M1);
        Other -> report({publish_runs, Next, Runs}, Other)
    end;
run([{take, Back} | Ops], Next, W, M) ->
    Seq = max(1, Next - Back),
    case {beamlab_amqp_window:take(W, Seq), maps:take(Seq, M)} of
        {{Stamp, W1}, {Stamp, M1}} -> run(Ops, Next, W1, M1);
        {error, error} -> run(Ops, Next, W, M);
        Other -> report({take, Seq}, Other)
    end;
run([{take_upto, Back} | Ops], Next, W, M) ->
    Seq = max(1, Next - Back),
    {Runs, W1} = beamlab_amqp_window:take_upto(W, Seq),
    {Taken, M1} = maps:fold(fun(S, T, {Ts, Acc}) when S =< Seq -> {[T | Ts], maps:remove(S, Acc)};
                               (_, _, Acc) -> Acc
                            end, {[], M}, M),
    Got = lists:append([lists:duplicate(K, T) || {T, K} <- Runs]),
    case lists:sort(Got) =:= lists:sort(Taken)
        andalso lists:all(fun({_, K}) -> K > 0 end, Runs)
        andalso beamlab_amqp_window:size(W1) =:= map_size(M1) of
        true -> run(Ops, Next, W1, M1);
        false -> report({take_upto, Seq}, {Runs, Taken})
    end.

report(What, Got) ->
    io:format("~p: ~p~n", [What, Got]),
    false.

as_a_map_test_() ->
    {timeout, 60,
     fun() -> ?assert(proper:quickcheck(prop_as_a_map(), [{numtests, 500}, {to_file, user}])) end}.

%% A burst stamped alike is one run, settled as one pair.
burst_is_one_run_test() ->
    W = lists:foldl(fun(S, Acc) -> beamlab_amqp_window:add(Acc, S, 7) end,
                    beamlab_amqp_window:new(), lists:seq(1, 10)),
    W1 = beamlab_amqp_window:add(W, 11, 8),
    ?assertEqual(11, beamlab_amqp_window:size(W1)),
    ?assertMatch({[{7, 10}], _}, beamlab_amqp_window:take_upto(W1, 10)),
    {[{8, 1}, {7, 10}], W2} = beamlab_amqp_window:take_upto(W1, 11),
    ?assertEqual(0, beamlab_amqp_window:size(W2)),
    ?assertEqual(error, beamlab_amqp_window:take(W2, 3)).
