%%% @doc PropEr properties of the producer rate limiter: driven greedily by
%%% any non-decreasing sequence of clock readings, it never releases more
%%% than the schedule allows, stamps exactly the scheduled (intended) times,
%%% and never stamps a time in the future. The `_test_' function lets
%%% `rebar3 eunit' run it.
-module(prop_beamlab_amqp_rate).

-include_lib("proper/include/proper.hrl").
-include_lib("eunit/include/eunit.hrl").

-export([prop_schedule/0, prop_variable_schedule/0, prop_next_stamped/0, prop_take_is_next/0]).

rate() ->
    oneof([range(1, 1000000), ?LET(F, float(0.01, 100000.0), F)]).

%% Clock advances between two asks of the producer, as a number of message
%% intervals (so that any rate sees both waits and long stalls to catch up
%% on, at most a few hundred messages at once), plus jitter in microseconds.
steps() ->
    list({oneof([float(0.0, 1.0), float(0.0, 5.0), float(0.0, 300.0)]), range(0, 1000)}).

prop_schedule() ->
    ?FORALL({Rate, Start, Steps}, {rate(), range(-1000000, 1000000), steps()},
            check(beamlab_amqp_rate:new(Rate, Start), Start, Rate, Steps, 0)).

check(_L, _Now, _Rate, [], _K) ->
    true;
check(L, Now, Rate, [{Intervals, Jitter} | Steps], K) ->
    Now1 = Now + round(Intervals * 1000000 / Rate) + Jitter,
    {L1, K1, Ok} = release_due(L, Now1, K, true),
    Ok andalso beamlab_amqp_rate:sent(L1) =:= K1
        andalso K1 =< beamlab_amqp_rate:allowed(L1, Now1)
        andalso check(L1, Now1, Rate, Steps, K1).

%% Take every message that is due at Now (what a late producer does).
release_due(L, Now, K, Ok) ->
    case beamlab_amqp_rate:next(L, Now) of
        {go, Intended, L1} ->
            Ok1 = Ok andalso Intended =< Now
                andalso Intended =:= beamlab_amqp_rate:due(L, K),
            release_due(L1, Now, K + 1, Ok1);
        {wait, Us} ->
            {L, K, Ok andalso Us > 0 andalso beamlab_amqp_rate:due(L, K) =:= Now + Us}
    end.

%% The same for --variable-rate steps (some of them 0), whatever the clock.
prop_variable_schedule() ->
    ?FORALL({Steps, Start, Clock}, {non_empty(list({range(0, 2000), range(1, 5)})),
                                    range(-1000000, 1000000),
                                    list({range(0, 3000000), range(0, 1000)})},
            begin
                L = beamlab_amqp_rate:new_variable(Steps, Start),
                check_clock(L, Start, Clock, 0)
            end).

check_clock(_L, _Now, [], _K) ->
    true;
check_clock(L, Now, [{Us, Jitter} | Rest], K) ->
    Now1 = Now + Us + Jitter,
    {L1, K1, Ok} = release_due(L, Now1, K, true),
    Ok andalso beamlab_amqp_rate:sent(L1) =:= K1
        andalso K1 =< beamlab_amqp_rate:allowed(L1, Now1)
        andalso check_clock(L1, Now1, Rest, K1).

%% next/3 (one call per message of a burst) is next/2 with stamp/3, for
%% any limiter, clock and wake-up: fixed, variable (some steps 0) and
%% unlimited rates, released greedily along a clock.
prop_next_stamped() ->
    ?FORALL({Kind, Start, Clock, Woke},
            {oneof([{rate, rate()}, {rate, infinity},
                    %% small rates too: a run crosses their steps' bounds
                    {variable, non_empty(list({oneof([range(0, 5), range(0, 2000)]), range(1, 5)}))}]),
             range(-1000000, 1000000), list(oneof([range(0, 20000), range(0, 3000000)])), boolean()},
            begin
                L = case Kind of
                        {rate, R} -> beamlab_amqp_rate:new(R, Start);
                        {variable, Steps} -> beamlab_amqp_rate:new_variable(Steps, Start)
                    end,
                same_stamped(L, Start, Clock, Woke, 50)
            end).

same_stamped(_L, _Now, [], _Woke, _Left) ->
    true;
same_stamped(L, Now, [_ | Rest], Woke, 0) ->
    same_stamped(L, Now, Rest, Woke, 50);
same_stamped(L, Now, [Us | Rest] = Clock, Woke, Left) ->
    Now1 = Now + Us,
    case {beamlab_amqp_rate:next(L, Now1, Woke), beamlab_amqp_rate:next(L, Now1)} of
        {{go, I, S, L1}, {go, I, L1}} ->
            S =:= beamlab_amqp_rate:stamp(I, Now1, Woke)
                andalso same_stamped(L1, Now, Clock, Woke, Left - 1);
        {{wait, W}, {wait, W}} ->
            same_stamped(L, Now1, Rest, Woke, 50);
        _ ->
            false
    end.

%% take/4 (one call per burst) releases what next/3 would one by one, at
%% most Max, their stamps as runs; late/4 counts those of them next/2
%% would have given an intended time more than ByUs before the clock.
prop_take_is_next() ->
    ?FORALL({Kind, Start, Clock, Woke, Max, ByUs},
            {oneof([{rate, rate()}, {rate, infinity},
                    {variable, non_empty(list({oneof([range(0, 5), range(0, 2000)]), range(1, 5)}))}]),
             range(-1000000, 1000000), list(oneof([range(0, 20000), range(0, 3000000)])), boolean(),
             range(0, 70), oneof([range(0, 3000), range(0, 3000000)])},
            begin
                L = case Kind of
                        {rate, R} -> beamlab_amqp_rate:new(R, Start);
                        {variable, Steps} -> beamlab_amqp_rate:new_variable(Steps, Start)
                    end,
                same_taken(L, Start, Clock, Woke, Max, ByUs)
            end).

same_taken(_L, _Now, [], _Woke, _Max, _ByUs) ->
    true;
same_taken(L, Now, [Us | Clock], Woke, Max, ByUs) ->
    Now1 = Now + Us,
    {Runs, L1} = beamlab_amqp_rate:take(L, Now1, Woke, Max),
    {Stamps, Intended, L2} = one_by_one(L, Now1, Woke, Max, [], []),
    Late = length([I || I <- Intended, Now1 - I > ByUs]),
    Got = lists:append([lists:duplicate(K, S) || {S, K} <- Runs]),
    Ok = Got =:= Stamps
        andalso beamlab_amqp_rate:sent(L1) =:= beamlab_amqp_rate:sent(L2)
        andalso beamlab_amqp_rate:due(L1, beamlab_amqp_rate:sent(L1))
                =:= beamlab_amqp_rate:due(L2, beamlab_amqp_rate:sent(L2))
        %% runs: a count of at least 1, no two neighbours of one stamp
        andalso lists:all(fun({_, K}) -> K >= 1 end, Runs)
        andalso no_repeat([S || {S, _} <- Runs])
        andalso beamlab_amqp_rate:late(L, L1, Now1, ByUs) =:= Late,
    case Ok of
        true -> same_taken(L1, Now1, Clock, Woke, Max, ByUs);
        false -> io:format("take ~p at ~p: ~p, one by one ~p~n", [Max, Now1, Runs, Stamps]), false
    end.

one_by_one(L, _Now, _Woke, 0, Ss, Is) ->
    {lists:reverse(Ss), Is, L};
one_by_one(L, Now, Woke, Max, Ss, Is) ->
    case beamlab_amqp_rate:next(L, Now, Woke) of
        {go, I, S, L1} -> one_by_one(L1, Now, Woke, Max - 1, [S | Ss], [I | Is]);
        {wait, _} -> {lists:reverse(Ss), Is, L}
    end.

no_repeat([A, A | _]) -> false;
no_repeat([_ | Rest]) -> no_repeat(Rest);
no_repeat([]) -> true.

take_is_next_test_() ->
    {timeout, 60,
     fun() -> ?assert(proper:quickcheck(prop_take_is_next(), [{numtests, 300}, {to_file, user}])) end}.

next_stamped_test_() ->
    {timeout, 60,
     fun() -> ?assert(proper:quickcheck(prop_next_stamped(), [{numtests, 300}, {to_file, user}])) end}.

variable_schedule_test_() ->
    {timeout, 60,
     fun() -> ?assert(proper:quickcheck(prop_variable_schedule(), [{numtests, 200}, {to_file, user}])) end}.

schedule_test_() ->
    {timeout, 60,
     fun() -> ?assert(proper:quickcheck(prop_schedule(), [{numtests, 300}, {to_file, user}])) end}.
