-module(beamlab_stats_paired_tests).

-include_lib("eunit/include/eunit.hrl").

-define(near(A, B), ?assert(abs((A) - (B)) < 1.0e-12)).

sign_test_known_values_test() ->
    ?assertEqual(1.0, beamlab_stats_paired:sign_test(0, 0)),
    ?near(2 / 1024, beamlab_stats_paired:sign_test(10, 0)),
    ?near(2 / 1024, beamlab_stats_paired:sign_test(0, 10)),
    %% 11 of 12: 2 * (1 + 12) / 4096
    ?near(26 / 4096, beamlab_stats_paired:sign_test(11, 1)),
    ?assertEqual(1.0, beamlab_stats_paired:sign_test(5, 5)),
    %% 1 of 1: 2 * 1/2
    ?near(1.0, beamlab_stats_paired:sign_test(1, 0)),
    %% large n does not underflow: 600 to 400 is far below 1e-9
    P = beamlab_stats_paired:sign_test(600, 400),
    ?assert(P > 0 andalso P < 1.0e-9).

min_rounds_test() ->
    ?assertEqual(8, beamlab_stats_paired:min_rounds(0.01)),
    ?assertEqual(6, beamlab_stats_paired:min_rounds(0.05)).

twice_as_slow_is_regressed_test() ->
    Base = [100, 102, 98, 101, 99, 103, 100, 97, 100, 101, 99, 100],
    New = [2 * B + (I rem 3) || {I, B} <- lists:zip(lists:seq(1, 12), Base)],
    R = beamlab_stats_paired:compare(Base, New, #{}),
    ?assertMatch(#{verdict := regressed, higher := 12, lower := 0, ties := 0, n := 12}, R),
    #{change := C, ci := {Lo, Hi}, p_value := P, confidence := Conf} = R,
    ?assert(C > 0.99 andalso C < 1.03),
    ?assert(Lo =< C andalso C =< Hi andalso Lo > 0.9),
    ?near(2 / 4096, P),
    ?near(0.99, Conf).

identical_values_are_unchanged_test() ->
    Xs = [1272.1, 1272.1, 1272.1, 1272.1, 1272.1, 1272.1, 1272.1, 1272.1, 1272.1, 1272.1],
    R = beamlab_stats_paired:compare(Xs, Xs, #{}),
    ?assertMatch(#{verdict := unchanged, p_value := 1.0, ties := 10, change := 0.0,
                   ci := {0.0, 0.0}}, R).

too_few_rounds_test() ->
    Base = [100, 100, 100, 100, 100, 100, 100],
    New = [200, 200, 200, 200, 200, 200, 200],
    ?assertMatch(#{verdict := too_few_rounds},
                 beamlab_stats_paired:compare(Base, New, #{})),
    %% at 5% the same seven rounds are enough
    ?assertMatch(#{verdict := regressed},
                 beamlab_stats_paired:compare(Base, New, #{alpha => 0.05})),
    ?assertMatch(#{verdict := too_few_rounds, n := 0},
                 beamlab_stats_paired:compare([], [], #{})).

threshold_is_the_effect_floor_test() ->
    Base = lists:duplicate(10, 1000),
    New = lists:duplicate(10, 1030),
    ?assertMatch(#{verdict := unchanged, p_value := P} when P < 0.01,
                 beamlab_stats_paired:compare(Base, New, #{threshold => 0.05})),
    ?assertMatch(#{verdict := regressed},
                 beamlab_stats_paired:compare(Base, New, #{threshold => 0.01})).

direction_follows_better_test() ->
    Base = lists:duplicate(10, 100),
    Faster = lists:duplicate(10, 50),
    ?assertMatch(#{verdict := improved}, beamlab_stats_paired:compare(Base, Faster, #{})),
    %% for a rate (higher is better) the same numbers are a regression
    ?assertMatch(#{verdict := regressed},
                 beamlab_stats_paired:compare(Base, Faster, #{better => higher})).

one_disturbed_round_is_tolerated_test() ->
    Base = lists:duplicate(12, 100),
    One = [50 | lists:duplicate(11, 200)],
    Two = [50, 50 | lists:duplicate(10, 200)],
    ?assertMatch(#{verdict := regressed, lower := 1},
                 beamlab_stats_paired:compare(Base, One, #{})),
    ?assertMatch(#{verdict := unchanged, lower := 2},
                 beamlab_stats_paired:compare(Base, Two, #{})).

zero_base_values_test() ->
    R = beamlab_stats_paired:compare([0, 0, 0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0, 0, 0], #{}),
    ?assertMatch(#{verdict := unchanged, change := 0.0}, R),
    %% from nothing to something: no ratio, the signs still count
    R2 = beamlab_stats_paired:compare(lists:duplicate(8, 0), lists:duplicate(8, 5), #{}),
    ?assertMatch(#{ratios := [], change := undefined, ci := undefined, higher := 8,
                   verdict := unchanged}, R2).

%% The interval leaves out no change exactly when the test rejects.
interval_agrees_with_the_test_test() ->
    rand:seed(exsss, {7, 11, 13}),
    lists:foreach(
      fun(_) ->
              N = 8 + rand:uniform(12),
              Shift = rand:uniform() * 0.2 - 0.1,
              Base = [100 + rand:normal() * 3 || _ <- lists:seq(1, N)],
              New = [B * (1 + Shift) + rand:normal() * 3 || B <- Base],
              #{ci := {Lo, Hi}, p_value := P} = beamlab_stats_paired:compare(Base, New, #{}),
              ?assertEqual(P < 0.01, Lo > 0 orelse Hi < 0)
      end, lists:seq(1, 300)).

%% Under no change (independent noise) the false-alarm rate stays below alpha.
calibration_under_no_change_test() ->
    rand:seed(exsss, {1, 2, 3}),
    Trials = 2000,
    Alarms = length([x || _ <- lists:seq(1, Trials),
                          begin
                              Base = [100 * math:exp(0.1 * rand:normal()) || _ <- lists:seq(1, 12)],
                              New = [100 * math:exp(0.1 * rand:normal()) || _ <- lists:seq(1, 12)],
                              #{p_value := P} = beamlab_stats_paired:compare(Base, New, #{}),
                              P < 0.01
                          end]),
    %% exact size of the 12-round sign test at 0.01 is 26/4096 = 0.63%
    ?assert(Alarms / Trials < 0.012).

%% Bonferroni with Tarone's refinement: comparisons whose rounds cannot
%% reach significance (all tied, or too few differing) leave the family.
family_test() ->
    %% nothing compared: the level itself
    ?assertMatch(#{size := 0, compared := 0, entry_alpha := 0.01}, beamlab_stats_paired:family(0.01, [])),
    %% one comparison: no correction
    ?assertMatch(#{size := 1, entry_alpha := 0.01}, beamlab_stats_paired:family(0.01, [12])),
    %% 24 entries of which 8 (time) differ in all 12 rounds, 16 tie
    %% (exact counts): the 8 form the family, 0.01 / 8
    F = beamlab_stats_paired:family(0.01, lists:duplicate(8, 12) ++ lists:duplicate(16, 0)),
    ?assertMatch(#{method := bonferroni, compared := 24, size := 8, alpha := 0.01}, F),
    ?near(0.01 / 8, maps:get(entry_alpha, F)),
    %% the same 24 all differing: 0.01 / 24
    ?assertMatch(#{size := 24}, beamlab_stats_paired:family(0.01, lists:duplicate(24, 14))),
    %% 8 rounds (p >= 0.0078 at best) in a family of 24: none can reach
    %% 0.01 / 2, so K = 2 and every entry is too few rounds
    ?assertMatch(#{size := 2}, beamlab_stats_paired:family(0.01, lists:duplicate(24, 8))).

%% The CI's false "regressed" (issue #35): 8 rounds all one way by
%% chance, one of 24 entries. Alone at 0.01 it is regressed; at the
%% family's level it cannot be, and interval and test agree.
family_level_agrees_test() ->
    Base = [100.0 + I || I <- lists:seq(1, 8)],
    New = [B * 1.0276 || B <- Base],
    #{verdict := regressed, p_value := P} = beamlab_stats_paired:compare(Base, New, #{threshold => 0.02}),
    ?near(2 / 256, P),
    #{entry_alpha := A} = beamlab_stats_paired:family(0.01, lists:duplicate(24, 8)),
    R = beamlab_stats_paired:compare(Base, New, #{threshold => 0.02, alpha => A}),
    ?assertMatch(#{verdict := too_few_rounds}, R),
    %% 14 rounds at 0.01 / 24: the interval leaves out 0 exactly when p < level
    Base14 = [100.0 + I || I <- lists:seq(1, 14)],
    R14 = beamlab_stats_paired:compare(Base14, [B * 1.0276 || B <- Base14],
                                       #{threshold => 0.02, alpha => 0.01 / 24}),
    #{verdict := regressed, ci := {Lo, _}, p_value := P14, confidence := Conf} = R14,
    ?assert(P14 < 0.01 / 24 andalso Lo > 0),
    ?near(1 - 0.01 / 24, Conf).

%% --- calibration under load (#35) -----------------------------------
%% Simulated rounds as measured with `--metric cpu' under load: the
%% log ratio of a round is normal with sd 3.2% (the middle of the rounds
%% of /tmp/aa-cpu35's matrices: IQR/1.349), and with probability `Q' one
%% side's VM is an outlier, 1.2-2.0x slower (either side). A check with
%% `--metric cpu' judges time and cpu together: a family of 2, each entry
%% at 0.005. Seeded: the counts are the same on every machine.

rounds(N, Q, Shift, Rng0) ->
    lists:mapfoldl(fun(_, R0) ->
                           {Z, R1} = rand:normal_s(R0),
                           {U, R2} = rand:uniform_s(R1),
                           {Mag, R3} = rand:uniform_s(R2),
                           {Side, R4} = rand:uniform_s(R3),
                           Out = case U < Q of
                                     true when Side < 0.5 -> 0.2 + 0.5 * Mag;
                                     true -> -(0.2 + 0.5 * Mag);
                                     false -> 0.0
                                 end,
                           {math:exp(Shift + 0.032 * Z + Out), R4}
                   end, Rng0, lists:seq(1, N)).

%% How many of `Trials' checks of `N' rounds say `Verdict'.
verdicts(N, Q, Shift, Trials, Seed) ->
    {Vs, _} = lists:mapfoldl(
                fun(_, R0) ->
                        {Ratios, R1} = rounds(N, Q, Shift, R0),
                        #{verdict := V} = beamlab_stats_paired:compare([1.0 || _ <- Ratios], Ratios,
                                                                        #{alpha => 0.005}),
                        {V, R1}
                end, rand:seed_s(exsss, {Seed, 35, 35}), lists:seq(1, Trials)),
    Vs.

count(V, Vs) -> length([x || X <- Vs, X =:= V]).

%% 24 rounds (the default with --metric cpu): with a tenth of the rounds
%% disturbed, identical code is never called different and +20% is
%% caught in at least 95% of checks.
cpu_default_rounds_catch_20_percent_under_load_test_() ->
    {timeout, 60,
     fun() ->
             AA = verdicts(24, 0.10, 0.0, 1000, 1),
             ?assert(count(regressed, AA) + count(improved, AA) =< 10),
             Slow = verdicts(24, 0.10, math:log(1.2), 1000, 2),
             ?assert(count(regressed, Slow) >= 950),
             %% 15% of the rounds disturbed: still at least 90%
             Worse = verdicts(24, 0.15, math:log(1.2), 1000, 3),
             ?assert(count(regressed, Worse) >= 900)
     end}.

%% Why 24 and not 14: 14 rounds tolerate one disturbed round, and with a
%% tenth of them disturbed +20% is missed in about one check in six.
fourteen_rounds_miss_20_percent_under_load_test_() ->
    {timeout, 60,
     fun() ->
             Slow = verdicts(14, 0.10, math:log(1.2), 1000, 4),
             ?assert(count(regressed, Slow) < 900)
     end}.

default_rounds_test() ->
    ?assertEqual(14, beamlab_experiment_check:default_rounds([time])),
    ?assertEqual(24, beamlab_experiment_check:default_rounds([cpu])),
    ?assertEqual(24, beamlab_experiment_check:default_rounds([time, cpu])).

%% `detectable': a change of that size is caught about 80% of the time
%% by checks with the same spread (normal rounds, sd 3%, 24 rounds).
detectable_is_caught_80_percent_test_() ->
    {timeout, 60,
     fun() ->
             Rng = rand:seed_s(exsss, {35, 8, 0}),
             {Ratios, _} = rounds(24, 0.0, 0.0, Rng),
             #{detectable := D} = beamlab_stats_paired:compare([1.0 || _ <- Ratios], Ratios,
                                                              #{alpha => 0.005}),
             ?assert(D > 0.02 andalso D < 0.1),
             Vs = verdicts(24, 0.0, math:log(1 + D), 1000, 5),
             Caught = count(regressed, Vs),
             ?assert(Caught >= 600 andalso Caught =< 990)
     end}.

detectable_bounds_test() ->
    %% too few rounds to reach alpha: nothing is detectable
    ?assertEqual(undefined, beamlab_stats_paired:detectable([1.0, 1.1, 0.9], 0.01, 0.05, 0.8)),
    %% no spread: the verdict's floor, the threshold
    Same = [1.0 || _ <- lists:seq(1, 14)],
    #{detectable := D0} = beamlab_stats_paired:compare(Same, Same, #{}),
    ?assert(abs(D0 - 0.05) < 1.0e-9),
    %% more spread, more to see
    Narrow = [1.0 + 0.01 * ((I rem 5) - 2) || I <- lists:seq(1, 24)],
    Wide = [1.0 + 0.05 * ((I rem 5) - 2) || I <- lists:seq(1, 24)],
    ?assert(beamlab_stats_paired:detectable(Narrow, 0.01, 0.05, 0.8)
            < beamlab_stats_paired:detectable(Wide, 0.01, 0.05, 0.8)).
