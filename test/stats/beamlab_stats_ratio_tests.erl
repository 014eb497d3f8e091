-module(beamlab_stats_ratio_tests).
-include_lib("eunit/include/eunit.hrl").

doubled_test() ->
    R = beamlab_stats_ratio:ratio([10, 11, 9, 10], [20, 22, 18, 20], 0.95),
    ?assertEqual(higher, maps:get(verdict, R)),
    ?assert(abs(maps:get(ratio, R) - 2.0) < 0.01),
    {Lo, Hi} = maps:get(ci, R),
    ?assert(Lo > 1.0 andalso Lo < 2.0 andalso Hi > 2.0).

never_below_zero_test() ->
    %% Wildly spread samples: a symmetric interval on the ratio would go
    %% below zero; on the log scale it cannot.
    R = beamlab_stats_ratio:ratio([1, 100, 3], [0.5, 80, 1], 0.95),
    {Lo, Hi} = maps:get(ci, R),
    ?assert(Lo > 0.0),
    ?assert(Hi > Lo),
    ?assertEqual(no_difference, maps:get(verdict, R)).

one_repetition_has_no_interval_test() ->
    R = beamlab_stats_ratio:ratio([10], [20], 0.95),
    ?assertEqual(undefined, maps:get(ci, R)),
    ?assertEqual(too_few_samples, maps:get(verdict, R)),
    ?assert(abs(maps:get(ratio, R) - 2.0) < 1.0e-9).

lower_and_nonpositive_left_out_test() ->
    R = beamlab_stats_ratio:ratio([10, 10.5, 9.5, 0, -1], [5, 5.2, 4.8], 0.95),
    ?assertEqual(3, maps:get(n_base, R)),
    ?assertEqual(lower, maps:get(verdict, R)),
    ?assertEqual(undefined, maps:get(ratio, beamlab_stats_ratio:ratio([], [1], 0.95))).
