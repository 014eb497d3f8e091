-module(beamlab_amqp_rate_tests).
-include_lib("eunit/include/eunit.hrl").

due_times_test() ->
    L = beamlab_amqp_rate:new(4, 1000),
    ?assertEqual([1000, 251000, 501000, 751000, 1001000],
                 [beamlab_amqp_rate:due(L, K) || K <- lists:seq(0, 4)]).

due_rounds_up_test() ->
    %% 3 msg/s: 333333.33.. us apart; never early, so rounded up.
    L = beamlab_amqp_rate:new(3, 0),
    ?assertEqual([0, 333334, 666667, 1000000],
                 [beamlab_amqp_rate:due(L, K) || K <- lists:seq(0, 3)]).

wait_then_go_test() ->
    L0 = beamlab_amqp_rate:new(10, 0),
    {go, 0, L1} = beamlab_amqp_rate:next(L0, 0),
    ?assertEqual({wait, 60000}, beamlab_amqp_rate:next(L1, 40000)),
    %% Late: sends now, but stamps the intended time, not the actual one.
    {go, 100000, L2} = beamlab_amqp_rate:next(L1, 350000),
    {go, 200000, L3} = beamlab_amqp_rate:next(L2, 350000),
    {go, 300000, L4} = beamlab_amqp_rate:next(L3, 350000),
    ?assertEqual({wait, 50000}, beamlab_amqp_rate:next(L4, 350000)),
    ?assertEqual(4, beamlab_amqp_rate:sent(L4)).

infinity_test() ->
    L0 = beamlab_amqp_rate:new(infinity, 5),
    {go, 7, L1} = beamlab_amqp_rate:next(L0, 7),
    {go, 7, _} = beamlab_amqp_rate:next(L1, 7),
    ?assertEqual(infinity, beamlab_amqp_rate:allowed(L1, 7)).

float_rate_test() ->
    L = beamlab_amqp_rate:new(0.5, 0),
    ?assertEqual(2000000, beamlab_amqp_rate:due(L, 1)),
    ?assertEqual(1, beamlab_amqp_rate:allowed(L, 1999999)),
    ?assertEqual(2, beamlab_amqp_rate:allowed(L, 2000000)).

%% Drive the limiter greedily at random (sometimes late) clock readings:
%% the count released never exceeds the schedule, intended times are the
%% schedule itself and never in the future.
never_overshoots_test() ->
    rand:seed(exsss, {1, 2, 3}),
    lists:foreach(fun(_) -> greedy_run(rand:uniform(100000)) end, lists:seq(1, 50)).

greedy_run(Rate) ->
    L0 = beamlab_amqp_rate:new(Rate, 0),
    greedy(L0, 0, 0, 200).

greedy(_L, _Now, _Prev, 0) ->
    ok;
greedy(L, Now, Prev, Steps) ->
    case beamlab_amqp_rate:next(L, Now) of
        {go, Intended, L1} ->
            ?assert(Intended =< Now),
            ?assert(Intended >= Prev),
            ?assertEqual(Intended, beamlab_amqp_rate:due(L, beamlab_amqp_rate:sent(L))),
            ?assert(beamlab_amqp_rate:sent(L1) =< beamlab_amqp_rate:allowed(L1, Now)),
            greedy(L1, Now, Intended, Steps - 1);
        {wait, Us} ->
            ?assert(Us > 0),
            %% The clock moves on by up to twice the wait (a late wake-up).
            greedy(L, Now + rand:uniform(2 * Us), Prev, Steps - 1)
    end.

allowed_matches_due_test() ->
    L = beamlab_amqp_rate:new(7, 100),
    ?assertEqual(0, beamlab_amqp_rate:allowed(L, 99)),
    [begin
         D = beamlab_amqp_rate:due(L, K),
         ?assertEqual(K + 1, beamlab_amqp_rate:allowed(L, D)),
         ?assertEqual(K, beamlab_amqp_rate:allowed(L, D - 1))
     end || K <- lists:seq(1, 50)].

%% --variable-rate 2:1 --variable-rate 0:1 --variable-rate 4:1: two
%% messages in the first second, none in the second, four in the third,
%% then again from the start of the cycle.
variable_due_times_test() ->
    L = beamlab_amqp_rate:new_variable([{2, 1}, {0, 1}, {4, 1}], 0),
    ?assertEqual([0, 500000, 2000000, 2250000, 2500000, 2750000, 3000000, 3500000, 5000000],
                 [beamlab_amqp_rate:due(L, K) || K <- lists:seq(0, 8)]),
    ?assertEqual(0, beamlab_amqp_rate:allowed(L, -1)),
    ?assertEqual(1, beamlab_amqp_rate:allowed(L, 0)),
    ?assertEqual(2, beamlab_amqp_rate:allowed(L, 1999999)),
    ?assertEqual(3, beamlab_amqp_rate:allowed(L, 2000000)),
    ?assertEqual(6, beamlab_amqp_rate:allowed(L, 2999999)),
    ?assertEqual(7, beamlab_amqp_rate:allowed(L, 3000000)).

%% A late producer catches up on the intended times, as with a fixed rate.
variable_catch_up_test() ->
    L0 = beamlab_amqp_rate:new_variable([{10, 1}, {100, 1}], 1000),
    {go, 1000, L1} = beamlab_amqp_rate:next(L0, 1000),
    {go, 101000, L2} = beamlab_amqp_rate:next(L1, 1500000),
    ?assertEqual(beamlab_amqp_rate:due(L2, 2), 201000),
    ?assertEqual(2, beamlab_amqp_rate:sent(L2)).

%% Only zero rates: never due.
variable_zero_test() ->
    L = beamlab_amqp_rate:new_variable([{0, 5}], 0),
    {wait, W} = beamlab_amqp_rate:next(L, 0),
    ?assert(W > 3600000000),
    ?assertEqual(0, beamlab_amqp_rate:allowed(L, 100000000)).

%% --variable-size and --variable-latency: values that change in steps, cycled.
cycle_test() ->
    C = beamlab_amqp_cycle:new([{100, 2}, {5000, 1}], 1000),
    ?assertEqual([100, 100, 5000, 100, 100],
                 [beamlab_amqp_cycle:value(C, 1000 + S * 1000000) || S <- [0, 1, 2, 3, 4]]),
    ?assertEqual(5000, beamlab_amqp_cycle:value(C, 1000 + 2999999)),
    ?assertEqual(100, beamlab_amqp_cycle:value(C, 0)),
    ?assertEqual([100, 5000], beamlab_amqp_cycle:values(C)),
    ?assertEqual(7, beamlab_amqp_cycle:value(beamlab_amqp_cycle:fixed(7), 123)).

%% The timer's resolution is not latency: a producer woken by its own
%% timer stamps the send time when it is at most 2 ms late, and takes 2 ms
%% off a longer delay; one catching up keeps the intended time.
stamp_test() ->
    ?assertEqual(1500, beamlab_amqp_rate:stamp(1000, 1500, true)),
    ?assertEqual(3000, beamlab_amqp_rate:stamp(1000, 3000, true)),
    ?assertEqual(3000, beamlab_amqp_rate:stamp(1000, 50000, true)),
    ?assertEqual(1000, beamlab_amqp_rate:stamp(1000, 1000, true)),
    ?assertEqual(1000, beamlab_amqp_rate:stamp(1000, 1800, false)),
    ?assertEqual(1000, beamlab_amqp_rate:stamp(1000, 50000, false)),
    %% The producer's tick gives up waiting for its timer after the same slack.
    ?assertEqual(2000, beamlab_amqp_rate:timer_slack_us()).

%% A producer woken by another message (a read of confirms) while its
%% timer, due at 1000, is late beyond its resolution publishes as woken
%% by the timer: the same stamp as when the timer's message comes first
%% (2 ms taken off, the rest counted). Before its late point it waits on.
woken_test() ->
    Late = 1000 + beamlab_amqp_rate:timer_slack_us(),
    ?assertNot(beamlab_amqp_rate:woken(Late - 1, Late)),
    ?assert(beamlab_amqp_rate:woken(Late, Late)),
    [?assertEqual(beamlab_amqp_rate:stamp(1000, Now, true),
                  beamlab_amqp_rate:stamp(1000, Now, beamlab_amqp_rate:woken(Now, Late)))
     || Now <- [Late, Late + 1, Late + 5000]],
    ?assertEqual(Late, beamlab_amqp_rate:stamp(1000, Late + 5000, beamlab_amqp_rate:woken(Late + 5000, Late))).
