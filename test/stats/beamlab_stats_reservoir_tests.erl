%%% @doc EUnit tests of beamlab_stats_reservoir.
-module(beamlab_stats_reservoir_tests).

-include_lib("eunit/include/eunit.hrl").

-define(R, beamlab_stats_reservoir).

fills_then_samples_test() ->
    R = ?R:add_all(?R:new(5, #{seed => 1}), lists:seq(1, 3)),
    ?assertEqual([1, 2, 3], ?R:samples(R)),
    ?assertMatch(#{count := 3, kept := 3, method := all, mean := 2.0,
                   variance := 1.0, min := 1, max := 3}, ?R:summary(R)),
    R2 = ?R:add_all(R, lists:seq(4, 1000)),
    ?assertEqual(5, length(?R:samples(R2))),
    ?assertMatch(#{count := 1000, kept := 5, method := reservoir,
                   mean := 500.5, min := 1, max := 1000}, ?R:summary(R2)).

empty_test() ->
    R = ?R:new(3),
    ?assertMatch(#{count := 0, mean := undefined, variance := 0.0,
                   samples := []}, ?R:summary(R)).

uniformity_test() ->
    %% Each of 10 values should be kept in a 1-slot reservoir about 1/10 of
    %% the time; 2000 seeded trials, a generous band (binomial sd ~13).
    Kept = [hd(?R:samples(?R:add_all(?R:new(1, #{seed => S}),
                                     lists:seq(1, 10))))
            || S <- lists:seq(1, 2000)],
    Counts = [length([K || K <- Kept, K =:= V]) || V <- lists:seq(1, 10)],
    ?assert(lists:all(fun(C) -> C > 130 andalso C < 270 end, Counts)).

seeded_is_deterministic_test() ->
    F = fun(Seed) -> ?R:samples(?R:add_all(?R:new(4, #{seed => Seed}),
                                           lists:seq(1, 100)))
        end,
    ?assertEqual(F(7), F(7)),
    ?assertNotEqual(F(7), F(8)).
