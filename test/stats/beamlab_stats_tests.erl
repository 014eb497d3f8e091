%%% @doc EUnit tests of beamlab_stats against published table values and
%%% textbook examples, plus the corner cases it must survive.
-module(beamlab_stats_tests).

-include_lib("eunit/include/eunit.hrl").

-define(near(Expected, Actual, Tol),
        ?assert(abs((Expected) - (Actual)) =< (Tol))).

%%--------------------------------------------------------------------
%% Distributions (values from standard tables / R)

t_quantile_table_test_() ->
    [?_test(?near(E, beamlab_stats:t_quantile(P, Df), 1.0e-3))
     || {P, Df, E} <- [{0.975, 1, 12.706}, {0.975, 2, 4.303},
                       {0.975, 3, 3.182}, {0.975, 10, 2.228},
                       {0.975, 30, 2.042}, {0.995, 5, 4.032},
                       {0.95, 20, 1.725}, {0.9995, 1, 636.619},
                       {0.975, infinity, 1.960}]].

t_quantile_precise_test() ->
    %% qt(0.975, 10) and qt(0.975, 1) in R, more digits.
    ?near(2.228138851986274, beamlab_stats:t_quantile(0.975, 10), 1.0e-9),
    ?near(12.70620473617471, beamlab_stats:t_quantile(0.975, 1), 1.0e-8),
    ?near(-2.228138851986274, beamlab_stats:t_quantile(0.025, 10), 1.0e-9),
    ?assertEqual(0.0, beamlab_stats:t_quantile(0.5, 7)),
    %% Non-integer df (Welch) lies between its integer neighbours.
    T = beamlab_stats:t_quantile(0.975, 17.5),
    ?assert(T < beamlab_stats:t_quantile(0.975, 17)),
    ?assert(T > beamlab_stats:t_quantile(0.975, 18)).

t_cdf_test() ->
    ?near(0.975, beamlab_stats:t_cdf(2.228138851986274, 10), 1.0e-9),
    ?near(0.75, beamlab_stats:t_cdf(1.0, 1), 1.0e-12),
    ?near(0.5, beamlab_stats:t_cdf(0.0, 4), 1.0e-15),
    ?near(0.9303370, beamlab_stats:t_cdf(2.0, 3), 1.0e-6),
    ?near(1 - 0.9303370, beamlab_stats:t_cdf(-2.0, 3), 1.0e-6),
    %% Quantile and cdf are inverse for fractional df too.
    [?near(P, beamlab_stats:t_cdf(beamlab_stats:t_quantile(P, Df), Df), 1.0e-9)
     || P <- [0.001, 0.1, 0.6, 0.99, 0.99999], Df <- [0.7, 1, 2.5, 9, 250]].

normal_test() ->
    ?near(1.959963984540054, beamlab_stats:normal_quantile(0.975), 1.0e-12),
    ?near(3.090232306167814, beamlab_stats:normal_quantile(0.999), 1.0e-12),
    ?near(-6.361340902404056, beamlab_stats:normal_quantile(1.0e-10), 1.0e-9),
    ?near(0.8413447460685429, beamlab_stats:normal_cdf(1), 1.0e-12),
    ?assertEqual(0.0, beamlab_stats:normal_quantile(0.5)),
    ?assertError(function_clause, beamlab_stats:normal_quantile(0.0)),
    ?assertError(function_clause, beamlab_stats:normal_quantile(1)),
    ?assertError(function_clause, beamlab_stats:t_quantile(0.9, 0)),
    ?assertError(function_clause, beamlab_stats:t_cdf(1.0, -2)).

%%--------------------------------------------------------------------
%% Descriptive statistics

percentile_type7_test() ->
    %% numpy.percentile([1,2,3,4], [0, 25, 50, 90, 100])
    L = [1, 2, 3, 4],
    ?assertEqual([1.0, 1.75, 2.5, 3.7, 4.0],
                 [round6(beamlab_stats:percentile(L, P))
                  || P <- [0, 25, 50, 90, 100]]),
    ?assertEqual(7.0, beamlab_stats:percentile([7], 99.9)).

summary_known_values_test() ->
    S = beamlab_stats:summary(lists:seq(1, 10)),
    ?assertMatch(#{n := 10, mean := 5.5, median := 5.5, min := 1.0,
                   max := 10.0, p25 := 3.25, p75 := 7.75, iqr := 4.5,
                   too_few := false, confidence := 0.95}, S),
    ?near(3.0276503540974917, maps:get(sd, S), 1.0e-12),
    %% Log scale: mean */ exp(qt(0.975, 9) * cv / sqrt(10)), cv = sd / mean
    F = math:exp(2.2621571627982 * (3.0276503540974917 / 5.5) / math:sqrt(10)),
    {Lo, Hi} = maps:get(ci_mean, S),
    ?assertEqual(log_delta, maps:get(ci_mean_method, S)),
    ?near(5.5 / F, Lo, 1.0e-6),
    ?near(5.5 * F, Hi, 1.0e-6),
    %% A zero among the samples: Student's t, mean +- qt(0.975, 9) * sd / sqrt(10)
    S0 = beamlab_stats:summary(lists:seq(0, 9)),
    ?assertEqual(student, maps:get(ci_mean_method, S0)),
    {Lo0, Hi0} = maps:get(ci_mean, S0),
    ?near(2.334149, Lo0, 1.0e-6),
    ?near(6.665851, Hi0, 1.0e-6),
    %% n = 10: ranks 2 and 9 cover 1 - 2 * 11/1024 = 97.9%.
    ?assertEqual({{2.0, 9.0}, true},
                 {maps:get(ci_median, S), maps:get(ci_median_exact, S)}),
    ?near(1 - 2 * 11 / 1024, maps:get(ci_median_coverage, S), 1.0e-12).

summary_confidence_option_test() ->
    S90 = beamlab_stats:summary(lists:seq(1, 10), #{confidence => 0.9}),
    S99 = beamlab_stats:summary(lists:seq(1, 10), #{confidence => 0.99}),
    {L90, H90} = maps:get(ci_mean, S90),
    {L99, H99} = maps:get(ci_mean, S99),
    ?assert(L99 < L90 andalso H90 < H99),
    ?assertEqual(0.9, maps:get(confidence, S90)).

ci_median_small_n_test() ->
    %% n = 5: even (min, max) covers only 1 - 2/32 = 93.75% < 95%.
    S5 = beamlab_stats:summary([3, 1, 2, 5, 4]),
    ?assertEqual({{1.0, 5.0}, false, 0.9375},
                 {maps:get(ci_median, S5), maps:get(ci_median_exact, S5),
                  maps:get(ci_median_coverage, S5)}),
    %% n = 6: (min, max) covers 1 - 2/64 = 96.9%.
    S6 = beamlab_stats:summary([3, 1, 2, 5, 4, 6]),
    ?assertEqual({{1.0, 6.0}, true, 1 - 2 / 64},
                 {maps:get(ci_median, S6), maps:get(ci_median_exact, S6),
                  maps:get(ci_median_coverage, S6)}).

ci_median_large_n_test() ->
    %% Large n must not underflow 2^-n; the interval is about
    %% n/2 -+ 1.96 sqrt(n)/2 ranks.
    N = 20000,
    S = beamlab_stats:summary(lists:seq(1, N)),
    {Lo, Hi} = maps:get(ci_median, S),
    ?assert(maps:get(ci_median_exact, S)),
    ?assert(abs(Lo - (N / 2 - 1.96 * math:sqrt(N) / 2)) < 3),
    ?assertEqual(float(N + 1), Lo + Hi).

single_sample_test() ->
    %% One or two samples: no interval at all (never a +-0).
    S = beamlab_stats:summary([42]),
    ?assertMatch(#{n := 1, mean := 42.0, sd := 0.0, cv := 0.0,
                   ci_mean_method := none, ci_median_exact := false, too_few := true,
                   p999 := 42.0}, S),
    S2 = beamlab_stats:summary([42, 50]),
    [?assertNot(maps:is_key(K, X)) || K <- [ci_mean, ci_median], X <- [S, S2]],
    ?assertMatch(#{too_few := true}, S2),
    ?assertMatch(#{too_few := false, ci_mean := {_, _}}, beamlab_stats:summary([42, 50, 46])).

log_interval_never_below_zero_test() ->
    %% The issue's example: three skewed samples whose Student interval
    %% ran to -35.69 (fib -n 3, github-smaller).
    #{ci_mean := {Lo, Hi}, mean := M} = beamlab_stats:summary([2.1, 3.0, 31.5]),
    ?assert(Lo > 0 andalso Lo < M andalso M < Hi).

all_equal_and_zeros_test() ->
    S = beamlab_stats:summary([0, 0.0, 0, 0]),
    ?assertMatch(#{mean := 0.0, sd := 0.0, cv := 0.0, ci_mean := {0.0, 0.0},
                   outliers := #{low := 0, high := 0}}, S),
    E = beamlab_stats:summary(lists:duplicate(7, 0.1)),
    ?assertEqual(0.1, maps:get(mean, E)),
    {ELo, EHi} = maps:get(ci_mean, E),
    ?assert(ELo == 0.1 andalso EHi == 0.1).

extreme_magnitudes_test() ->
    Huge = beamlab_stats:summary([1.0e300, 1.7e308, 1.5e308]),
    ?assert(maps:get(mean, Huge) > 1.0e308),
    ?assert(maps:get(sd, Huge) > 0.0),
    Tiny = beamlab_stats:summary([1.0e-310, 2.0e-310, 3.0e-310]),
    ?near(2.0e-310, maps:get(mean, Tiny), 1.0e-320),
    ?near(1.0e-310, maps:get(sd, Tiny), 1.0e-320),
    Sub = beamlab_stats:summary([0.3, 0.25, 0.31, 0.28]),   % sub-ns
    ?near(0.285, maps:get(mean, Sub), 1.0e-12),
    ?assertEqual(2.0, beamlab_stats:mean([1, 2.0, 3])).

outliers_test() ->
    %% 14 values: q1 = 2.25, q3 = 8.75, iqr = 6.5; mild fences -7.5 / 18.5,
    %% severe fences -17.25 / 28.25.
    L = lists:seq(1, 10) ++ [-10, 20, 30, -50],
    #{outliers := O} = beamlab_stats:summary(L),
    ?assertMatch(#{low := 2, low_severe := 1, high := 2, high_severe := 1}, O).

safe_summary_test() ->
    ?assertEqual(undefined, beamlab_stats:safe_summary([])),
    ?assertMatch(#{n := 2}, beamlab_stats:safe_summary([1, 2])).

variance_median_test() ->
    ?assertEqual(2.5, beamlab_stats:variance([1, 2, 3, 4, 5])),
    ?assertEqual(0.0, beamlab_stats:variance([9])),
    ?assertEqual(3.0, beamlab_stats:median([5, 1, 3])),
    ?assertEqual(2.5, beamlab_stats:median([4, 1, 3, 2])).

histogram_test() ->
    ?assertEqual([{1.0, 4.0, 3}, {4.0, 7.0, 3}, {7.0, 10.0, 4}],
                 beamlab_stats:histogram(lists:seq(1, 10), 3)),
    ?assertEqual([{5.0, 5.0, 3}], beamlab_stats:histogram([5, 5, 5], 4)),
    ?assertEqual([{5.0e-324, 1.0e-323, 2}],
                 beamlab_stats:histogram([5.0e-324, 1.0e-323], 1000)),
    H = beamlab_stats:histogram([0, 0, 0, 100], 4),
    ?assertEqual([3, 0, 0, 1], [C || {_, _, C} <- H]).

%%--------------------------------------------------------------------
%% Tests and comparisons

mann_whitney_r_example_test() ->
    %% R ?wilcox.test: W = 35, one-sided p = 0.1272 (exact, no ties).
    X = [0.80, 0.83, 1.89, 1.04, 1.45, 1.38, 1.91, 1.64, 0.73, 1.46],
    Y = [1.15, 0.88, 0.90, 0.74, 1.21],
    #{u := U, p_value := P, method := exact, direction := 1} =
        beamlab_stats:mann_whitney(Y, X),
    ?assertEqual(35.0, U),
    ?near(2 * 0.1272, P, 5.0e-4).

mann_whitney_scipy_example_test() ->
    %% SciPy docs: males vs females, U = 17, exact p = 0.1111.
    #{u := U, p_value := P} =
        beamlab_stats:mann_whitney([20, 11, 17, 12], [19, 22, 16, 29, 24]),
    ?assertEqual(17.0, U),
    ?near(1 / 9, P, 1.0e-12).

mann_whitney_complete_separation_test() ->
    %% The most extreme of C(10,5) = 252 arrangements, two-sided: 2/252.
    #{p_value := P} = beamlab_stats:mann_whitney([1, 2, 3, 4, 5],
                                                 [6, 7, 8, 9, 10]),
    ?near(2 / 252, P, 1.0e-12).

mann_whitney_normal_test() ->
    %% n > 10: normal approximation; 1..11 vs 12..22 gives U = 121,
    %% mu = 60.5, sigma^2 = 11*11*23/12, z = 60/sigma.
    #{u := U, p_value := P, method := normal} =
        beamlab_stats:mann_whitney(lists:seq(1, 11), lists:seq(12, 22)),
    ?assertEqual(121.0, U),
    Z = 60 / math:sqrt(11 * 11 * 23 / 12),
    ?near(math:erfc(Z / math:sqrt(2)), P, 1.0e-12),
    ?near(8.15e-5, P, 1.0e-6).

mann_whitney_ties_test() ->
    %% All values tied: no evidence either way.
    ?assertMatch(#{p_value := 1.0, direction := 0},
                 beamlab_stats:mann_whitney([3, 3, 3], [3, 3])),
    ?assertMatch(#{p_value := 1.0, method := normal},
                 beamlab_stats:mann_whitney(lists:duplicate(12, 1),
                                            lists:duplicate(12, 1))).

welch_sleep_test() ->
    %% R: t.test(extra ~ group, data = sleep): t = -1.8608,
    %% df = 17.776, p = 0.07939.
    G1 = [0.7, -1.6, -0.2, -1.2, -0.1, 3.4, 3.7, 0.8, 0.0, 2.0],
    G2 = [1.9, 0.8, 1.1, 0.1, -0.1, 4.4, 5.5, 1.6, 4.6, 3.4],
    #{t := T, df := Df, p_value := P} = beamlab_stats:welch(G2, G1),
    ?near(-1.8608, T, 1.0e-4),
    ?near(17.776, Df, 1.0e-3),
    ?near(0.07939, P, 1.0e-5).

compare_verdicts_test() ->
    Base = [100, 102, 98, 101, 99, 100, 103, 97, 100, 101, 99, 100],
    Slow = [X * 2 || X <- Base],
    R1 = beamlab_stats:compare(Base, Slow, #{better => lower}),
    ?assertMatch(#{verdict := slower, test := welch_log, ci_method := log_welch,
                   n_base := 12, n_new := 12, confidence := 0.95}, R1),
    %% Ratio of the geometric means, minus one.
    ?near(1.0, maps:get(change, R1), 1.0e-12),
    {Lo, Hi} = maps:get(ci, R1),
    ?assert(Lo < 1.0 andalso 1.0 < Hi),
    %% Zeros: Welch on the raw values.
    ?assertMatch(#{test := welch, ci_method := welch, verdict := slower},
                 beamlab_stats:compare([0, 1, 2, 1], [10, 11, 12, 11], #{})),
    ?assertMatch(#{verdict := faster},
                 beamlab_stats:compare(Base, Slow, #{better => higher})),
    ?assertMatch(#{verdict := faster, test := welch_log},
                 beamlab_stats:compare(Slow, Base, #{better => lower})),
    ?assertMatch(#{verdict := no_difference, change := 0.0},
                 beamlab_stats:compare(Base, Base, #{})),
    ?assertMatch(#{verdict := faster},
                 beamlab_stats:compare(Base, Slow, #{better => <<"higher">>})),
    ?assertError({badarg, {better, up}},
                 beamlab_stats:compare(Base, Slow, #{better => up})).

compare_too_few_test() ->
    ?assertMatch(#{verdict := too_few_samples, test := none,
                   p_value := undefined, ci := undefined, change := 1.0},
                 beamlab_stats:compare([1], [2, 2, 2], #{})),
    %% Two values are too few for an interval too.
    ?assertMatch(#{verdict := too_few_samples, ci := undefined},
                 beamlab_stats:compare([1, 2], [2, 2, 2], #{})),
    ?assertMatch(#{verdict := too_few_samples, change := undefined},
                 beamlab_stats:compare([], [], #{})).

compare_constant_samples_test() ->
    %% Identical constants: nothing differs, p = 1.
    ?assertMatch(#{verdict := no_difference, p_value := 1.0,
                   ci := {0.0, 0.0}},
                 beamlab_stats:compare([5, 5, 5], [5, 5, 5], #{})),
    %% Distinct constants: Welch is certain, the interval is the point.
    R = beamlab_stats:compare([5, 5, 5], [6, 6, 6], #{}),
    ?assertMatch(#{verdict := slower}, R),
    ?assert(maps:get(p_value, R) < 1.0e-20),
    {CLo, CHi} = maps:get(ci, R),
    ?assert(abs(CLo - 0.2) < 1.0e-9 andalso abs(CHi - 0.2) < 1.0e-9).

compare_test_and_interval_agree_test() ->
    %% The issue's `+25.6% [+3.3%, +52.2%] p=0.095 ~': one method now gives
    %% both, so the interval excludes 0 exactly when the verdict is a change.
    rand:seed(exsss, 35),
    Draw = fun(M) -> [M * math:exp(0.3 * rand:normal()) || _ <- lists:seq(1, 5)] end,
    [begin
         #{ci := {Lo, Hi}, verdict := V, p_value := P} =
             beamlab_stats:compare(Draw(100), Draw(100 * F), #{}),
         ?assertEqual(Lo > 0 orelse Hi < 0, V =/= no_difference),
         ?assertEqual(P < 0.05, V =/= no_difference),
         ?assert(Lo > -1.0)
     end || F <- [0.5, 0.8, 1.0, 1.25, 2.0], _ <- lists:seq(1, 40)].

compare_min_change_test() ->
    Base = [100, 101, 99, 100, 101, 99, 100, 101, 99, 100, 101, 99],
    New = [X + 3 || X <- Base],              % +3%, clearly significant
    ?assertMatch(#{verdict := slower},
                 beamlab_stats:compare(Base, New, #{min_change => 0.02})),
    ?assertMatch(#{verdict := no_difference},
                 beamlab_stats:compare(Base, New, #{min_change => 0.05})).

compare_zero_base_test() ->
    ?assertMatch(#{change := undefined, ci := undefined},
                 beamlab_stats:compare([0, 0, 0], [1, 2, 3], #{})).

compare_huge_values_test() ->
    Base = [1.0e306, 1.1e306, 0.9e306, 1.0e306],
    New = [1.5e307, 1.6e307, 1.4e307, 1.5e307],
    R = beamlab_stats:compare(Base, New, #{better => higher}),
    %% Ratio of the geometric means: 14.98... (their arithmetic ratio is 15).
    GB = math:exp(lists:sum([math:log(X) || X <- Base]) / 4),
    GN = math:exp(lists:sum([math:log(X) || X <- New]) / 4),
    ?near(GN / GB - 1, maps:get(change, R), 1.0e-9).

converged_test() ->
    Tight = [100.0, 100.1, 99.9, 100.0, 100.05],
    ?assert(beamlab_stats:converged(Tight, #{rel_ci => 0.01, min => 3})),
    ?assertNot(beamlab_stats:converged(Tight, #{rel_ci => 0.01, min => 6})),
    ?assertNot(beamlab_stats:converged([1, 10, 100], #{rel_ci => 0.05})),
    ?assert(beamlab_stats:converged([1, 10, 100], #{rel_ci => undefined,
                                                    cv => undefined})),
    ?assert(beamlab_stats:converged(Tight, #{cv => 0.01})),
    ?assertNot(beamlab_stats:converged(Tight, #{cv => 0.0001})),
    %% Both targets must hold.
    ?assertNot(beamlab_stats:converged(Tight, #{rel_ci => 0.01,
                                                cv => 0.0001})),
    ?assert(beamlab_stats:converged([0, 0, 0], #{rel_ci => 0.01})),
    ?assertNot(beamlab_stats:converged([-1, 0, 1], #{rel_ci => 0.01})),
    ?assertNot(beamlab_stats:converged([], #{min => 0, rel_ci => 0.1})).

converged_from_stats_test() ->
    Tight = [100.0, 100.1, 99.9, 100.0, 100.05],
    Opts = [#{rel_ci => 0.01}, #{rel_ci => 0.0001}, #{cv => 0.01, min => 6},
            #{cv => 0.01}],
    Summary = beamlab_stats:summary(Tight),
    Res = beamlab_stats_reservoir:summary(
            beamlab_stats_reservoir:add_all(beamlab_stats_reservoir:new(2),
                                            Tight)),
    [?assertEqual(beamlab_stats:converged(Tight, O),
                  beamlab_stats:converged(S, O))
     || O <- Opts, S <- [Summary, Res]],
    ?assertNot(beamlab_stats:converged(
                 beamlab_stats_reservoir:summary(beamlab_stats_reservoir:new(2)),
                 #{rel_ci => 0.1})).

%%--------------------------------------------------------------------
%% Calibration: with a fixed seed, the intervals cover and the tests reject
%% at the advertised rates (simulated normal data; deterministic).

calibration_test_() ->
    {timeout, 60, fun calibration/0}.

calibration() ->
    rand:seed(exsss, 20261122),
    Trials = 500,
    Draw = fun(N) -> [10 + rand:normal() || _ <- lists:seq(1, N)] end,
    Covered = fun(Key, Truth) ->
                      length([ok || _ <- lists:seq(1, Trials),
                                    {Lo, Hi} <- [maps:get(Key, beamlab_stats:summary(Draw(15)))],
                                    Lo =< Truth, Truth =< Hi]) / Trials
              end,
    CovMean = Covered(ci_mean, 10),
    CovMedian = Covered(ci_median, 10),
    %% Binomial sd of a 95% rate over 500 trials is 1%; the seed is fixed, so
    %% the outcome is deterministic.
    ?assert(CovMean > 0.93 andalso CovMean < 0.97),
    %% n = 15: the order-statistic interval covers 96.5% by construction.
    ?assert(CovMedian > 0.94 andalso CovMedian < 0.985),
    FalsePositive =
        fun(N) ->
                length([ok || _ <- lists:seq(1, 2 * Trials),
                              #{verdict := V} <- [beamlab_stats:compare(Draw(N), Draw(N), #{})],
                              V =/= no_difference]) / (2 * Trials)
        end,
    %% Rejection rate under the null must not exceed 5% by more than the
    %% binomial noise of 1000 trials (sd 0.7%).
    [?assert(FalsePositive(N) < 0.07) || N <- [3, 8, 20]],
    %% The log-scale interval covers the true relative change (+10%).
    CovChange = length([ok || _ <- lists:seq(1, Trials),
                              #{ci := {Lo, Hi}} <- [beamlab_stats:compare(
                                                      Draw(10),
                                                      [X * 1.1 || X <- Draw(10)],
                                                      #{})],
                              Lo =< 0.1, 0.1 =< Hi]) / Trials,
    ?assert(CovChange > 0.93 andalso CovChange < 0.97).

round6(X) -> round(X * 1000000) / 1000000.

%%--------------------------------------------------------------------
%% Verdicts between runs (#35): A/A-like runs with a between-run effect.
%% Each run has its own level (sd 3% on the log scale: what the run's
%% conditions add) and 3 repetitions around it (sd 5%), as the fresh VMs
%% of `matrix -n 3' on the quiet machine (docs/statistics.md).

between_runs_test_() ->
    {timeout, 60, fun between_runs/0}.

between_runs() ->
    rand:seed(exsss, 35035),
    Run = fun(Shift) ->
                  Level = 0.03 * rand:normal(),
                  [1000 * math:exp(Shift + Level + 0.05 * rand:normal()) || _ <- lists:seq(1, 3)]
          end,
    Trials = 1000,
    Rate = fun(Shift, Opts, V) ->
                   length([ok || _ <- lists:seq(1, Trials),
                                 #{verdict := X} <- [beamlab_stats:compare(Run(0.0), Run(Shift), Opts)],
                                 lists:member(X, V)]) / Trials
           end,
    %% The rule of `compare' between two runs (beamlab_result_compare:
    %% runs_confidence/0 and run_noise/0): 95%, a 2.5% term.
    Rule = #{confidence => 0.95, run_noise => 0.025},
    %% Welch on the repetitions alone, at 95%, ignores the run's level:
    %% far more than 5% false verdicts (the A/A harness saw 16%).
    Naive = Rate(0.0, #{}, [faster, slower]),
    ?assert(Naive > 0.08),
    %% With the between-run term (its df those of the repetitions): about
    %% 1% (binomial sd of 1000 trials at 1%: 0.3%).
    False = Rate(0.0, Rule, [faster, slower]),
    ?assert(False =< 0.02),
    %% A planted slowdown of +50% is caught nearly always, +20% about half
    %% the time (power is what two runs of 3 repetitions can give).
    ?assert(Rate(math:log(1.5), Rule, [slower]) > 0.95),
    ?assert(Rate(math:log(1.2), Rule, [slower]) > 0.4),
    %% One method: the interval excludes 0 exactly when there is a verdict,
    %% and never goes below -100%.
    [begin
         #{ci := {Lo, Hi}, verdict := V, p_value := P} = beamlab_stats:compare(Run(0.0), Run(S), Rule),
         ?assertEqual(Lo > 0 orelse Hi < 0, V =/= no_difference),
         ?assertEqual(P < 0.05, V =/= no_difference),
         ?assert(Lo > -1.0 andalso Lo =< Hi)
     end || S <- [-0.5, 0.0, 0.2, 0.5], _ <- lists:seq(1, 50)].

%% #35, CPU time per iteration under load (`--metric cpu', `-n 5', the
%% design docs/statistics.md recommends there): fresh VMs with an sd of
%% 2.5% and, one in 10, a slow VM (+10% to +40%); runs with a level sd
%% of 2% and, one in 30, a whole run +5% to +15% slower (what the A/A
%% documents of `METRIC=cpu bench/aa.sh' showed). The rule of `compare'
%% (95%, a 2.5% term) stays near 1% false; a 2% term, which the
%% documents of 3 VMs a side allowed, is less safe with 5: the t
%% quantile of more repetitions carries less of the caution.
cpu_between_runs_test_() ->
    {timeout, 60, fun cpu_between_runs/0}.

cpu_between_runs() ->
    rand:seed(exsss, 36035),
    Tail = fun(P, Lo, W) ->
                   case rand:uniform() < P of
                       true -> Lo + W * rand:uniform();
                       false -> 0.0
                   end
           end,
    Run = fun(Shift) ->
                  Level = 0.02 * rand:normal() + Tail(1 / 30, 0.05, 0.1),
                  [2000 * math:exp(Shift + Level + 0.025 * rand:normal() + Tail(0.1, 0.1, 0.3))
                   || _ <- lists:seq(1, 5)]
          end,
    Trials = 1000,
    Rate = fun(Shift, Noise, V) ->
                   Opts = #{confidence => 0.95, run_noise => Noise},
                   length([ok || _ <- lists:seq(1, Trials),
                                 #{verdict := X} <- [beamlab_stats:compare(Run(0.0), Run(Shift), Opts)],
                                 lists:member(X, V)]) / Trials
           end,
    False = Rate(0.0, 0.025, [faster, slower]),
    ?assert(False =< 0.02),
    ?assert(Rate(math:log(1.2), 0.025, [slower]) > 0.55),
    ?assert(Rate(math:log(1.5), 0.025, [slower]) > 0.95),
    ?assert(Rate(0.0, 0.02, [faster, slower]) > False).

%% #35, CPU time per iteration under load, each fresh VM as its fastest
%% sample (beamlab_result_compare:run_level/1, what a matrix of CPU time
%% keeps): a VM's samples have one-sided excursions (contention only adds
%% CPU time; here 3 samples in 10 up to +40%), now and then a whole VM is
%% slow (3 in 100, 1.2-2.0x: the fastest sample cannot help there), runs
%% differ by 1.5% and VMs by 2% (what the A/A documents of `METRIC=cpu
%% REPEAT=5 LOAD=1 bench/aa.sh' showed for the fastest samples: run to
%% run 1.5%, VM to VM 1.1-2.8%; the means 6.1% and 1.2-10%). With the
%% rule of `compare' (95%, a 2.5% term) the fastest samples keep false
%% verdicts near zero and catch +20% more often than the means.
cpu_fastest_vm_test_() ->
    {timeout, 60, fun cpu_fastest_vm/0}.

cpu_fastest_vm() ->
    rand:seed(exsss, 35035),
    Vm = fun(Level) ->
                 Whole = case rand:uniform() < 0.03 of
                             true -> math:log(1.2 + 0.8 * rand:uniform());
                             false -> 0.0
                         end,
                 V = Level + 0.02 * rand:normal() + Whole,
                 S = [3500 * math:exp(V + 0.005 * rand:normal()
                                      + case rand:uniform() < 0.3 of
                                            true -> math:log(1 + 0.4 * rand:uniform());
                                            false -> 0.0
                                        end) || _ <- lists:seq(1, 5)],
                 {lists:sum(S) / 5, lists:min(S)}
         end,
    Run = fun(Shift) ->
                  Level = Shift + 0.015 * rand:normal(),
                  lists:unzip([Vm(Level) || _ <- lists:seq(1, 5)])
          end,
    Opts = #{confidence => 0.95, run_noise => 0.025, better => lower},
    Trials = 1000,
    %% both levels judged on the same simulated runs
    Rates = fun(Shift, V) ->
                    Vs = [{Hit(M0, M1), Hit(F0, F1)}
                          || _ <- lists:seq(1, Trials),
                             {{M0, F0}, {M1, F1}} <- [{Run(0.0), Run(Shift)}],
                             Hit <- [fun(A, B) -> lists:member(maps:get(verdict, beamlab_stats:compare(A, B, Opts)), V) end]],
                    {length([x || {true, _} <- Vs]) / Trials, length([x || {_, true} <- Vs]) / Trials}
            end,
    {_, False} = Rates(0.0, [faster, slower]),
    ?assert(False =< 0.01),
    {ByMeans, Caught} = Rates(math:log(1.2), [slower]),
    ?assert(Caught > 0.75),
    ?assert(Caught > ByMeans).

%% #35 (robust37): one fresh VM slowed as a whole (every sample, so its
%% fastest too) inflates its run's variance, and Welch then reads +20% as
%% `~'. The harsher simulation of bench/vm_rule_study.escript (1 VM in 10
%% slowed 1.2-2.5x, else as cpu_fastest_vm_test_), 5 VMs a run:
%% `robust' (far VMs left out within each run) keeps the false bound and
%% catches +20% in the pairs with a slowed VM nearly always; the old rule
%% (no `robust') fails that bound on the same pairs. At 3 VMs nothing is
%% left out: the two rules agree.
cpu_whole_vm_test_() ->
    {timeout, 120, fun cpu_whole_vm/0}.

cpu_whole_vm() ->
    rand:seed(exsss, 3537),
    Vm = fun(Level) ->
                 {Whole, W} = case rand:uniform() < 0.1 of
                                  true -> {math:log(1.2 + 1.3 * rand:uniform()), true};
                                  false -> {0.0, false}
                              end,
                 V = Level + 0.02 * rand:normal() + Whole,
                 {lists:min([3500 * math:exp(V + 0.005 * rand:normal()
                                             + case rand:uniform() < 0.3 of
                                                   true -> math:log(1 + 0.4 * rand:uniform());
                                                   false -> 0.0
                                               end) || _ <- lists:seq(1, 5)]), W}
         end,
    Run = fun(N, Shift) ->
                  Level = Shift + 0.015 * rand:normal(),
                  lists:unzip([Vm(Level) || _ <- lists:seq(1, N)])
          end,
    Opts = #{confidence => 0.95, run_noise => 0.025, better => lower},
    Trials = 1000,
    %% [{a VM slowed as a whole, old rule's verdict, robust verdict}]
    Judge = fun(N, Shift) ->
                    [{lists:member(true, W0 ++ W1),
                      maps:get(verdict, beamlab_stats:compare(A, B, Opts)),
                      maps:get(verdict, beamlab_stats:compare(A, B, Opts#{robust => true}))}
                     || _ <- lists:seq(1, Trials),
                        {{A, W0}, {B, W1}} <- [{Run(N, 0.0), Run(N, Shift)}]]
            end,
    Rate = fun(L, Pos, Want) -> length([x || T <- L, lists:member(element(Pos, T), Want)]) / max(1, length(L)) end,
    AA = Judge(5, 0.0),
    ?assert(Rate(AA, 3, [faster, slower]) =< 0.01),
    P20 = Judge(5, math:log(1.2)),
    Whole = [T || {true, _, _} = T <- P20],
    ?assert(length(Whole) > 300),
    ?assert(Rate(Whole, 3, [slower]) > 0.9),
    ?assert(Rate(Whole, 2, [slower]) < 0.5),
    ?assert(Rate(P20, 3, [slower]) > 0.9),
    %% 3 VMs a run: the same verdicts
    ?assertEqual([], [T || {_, V0, V1} = T <- Judge(3, math:log(1.2)), V0 =/= V1]).

%% Within one side: the far value out, the rest kept in order; at most
%% 3 values, a value not positive, or too few left: all kept.
robust_values_test() ->
    Vms = [3500.0, 3560.0, 7700.0, 3480.0, 3530.0],
    ?assertEqual([3500.0, 3560.0, 3480.0, 3530.0], beamlab_stats:robust_values(Vms, 3.5)),
    ?assertEqual([3500.0, 3560.0, 7700.0], beamlab_stats:robust_values([3500.0, 3560.0, 7700.0], 3.5)),
    ?assertEqual([0.0 | tl(Vms)], beamlab_stats:robust_values([0.0 | tl(Vms)], 3.5)),
    %% a 1% floor on the robust sd: 2% off is no outlier however tight the rest
    ?assertEqual([100.0, 100.0, 100.0, 102.0], beamlab_stats:robust_values([100.0, 100.0, 100.0, 102.0], 3.5)),
    ?assertEqual([100.0, 100.0, 100.0], beamlab_stats:robust_values([100.0, 100.0, 100.0, 110.0], 3.5)),
    %% in compare/3: named, counted, judged on the rest
    Other = [3490.0, 3550.0, 3510.0, 3540.0, 3500.0],
    #{test := welch_log_robust, rejected_base := 1, rejected_new := 0, n_base := 5,
      verdict := no_difference, ci := {Lo, Hi}} =
        beamlab_stats:compare(Vms, Other, #{robust => true, run_noise => 0.025}),
    ?assert(Lo > -0.1 andalso Hi < 0.1),
    #{test := welch_log, ci := {Lo0, Hi0}} = beamlab_stats:compare(Vms, Other, #{run_noise => 0.025}),
    ?assert(Lo0 < Lo andalso Hi0 > Hi),
    ?assertNot(maps:is_key(rejected_base, beamlab_stats:compare(Vms, Other, #{}))),
    ?assertError({badarg, {robust, 1}}, beamlab_stats:compare(Vms, Other, #{robust => 1})).

run_noise_widens_test() ->
    Base = [100.0, 101.0, 99.0],
    New = [110.0, 111.1, 108.9],
    #{ci := {Lo0, Hi0}, verdict := slower} = beamlab_stats:compare(Base, New, #{}),
    #{ci := {Lo, Hi}, p_value := P} = beamlab_stats:compare(Base, New, #{run_noise => 0.05}),
    ?assert(Lo < Lo0 andalso Hi > Hi0),
    ?assert(P > 0.01),
    %% No spread at all: the known term alone decides (normal quantile).
    #{ci := {CLo, CHi}} = beamlab_stats:compare([100, 100, 100], [110, 110, 110], #{run_noise => 0.02}),
    H = beamlab_stats:normal_quantile(0.975) * math:sqrt(2 * 0.02 * 0.02),
    ?near(math:exp(math:log(1.1) - H) - 1, CLo, 1.0e-9),
    ?near(math:exp(math:log(1.1) + H) - 1, CHi, 1.0e-9),
    %% Raw scale (a zero among the values): relative to |mean(Base)|.
    #{ci := {RLo, RHi}} = beamlab_stats:compare([0, 1, 2], [0, 1, 2], #{run_noise => 0.1}),
    ?assert(RLo < 0 andalso RHi > 0),
    ?assertError({badarg, {run_noise, -1}}, beamlab_stats:compare(Base, New, #{run_noise => -1})).

%% A history of single runs: at 99%, the 10th run of identical code is
%% outside the spread of the 9 before it about 1% of the time.
%% #35: a history's verdict needs two runs. Runs of a level with sd 3%
%% (normal): the two newest both outside the spread of the 8 before them
%% at 99% is rarer than one (well under 1% false), a +20% step in both is
%% still caught nearly always, and a step in the newest alone is
%% `unconfirmed', never a verdict.
confirm_runs_level_test_() ->
    {timeout, 120, fun confirm_runs_level/0}.

confirm_runs_level() ->
    rand:seed(exsss, 3535),
    Trials = 1000,
    Run = fun(Shift) -> 1000 * math:exp(Shift + 0.03 * rand:normal()) end,
    Judge = fun(ShiftPrev, ShiftLast) ->
                    maps:get(verdict, beamlab_stats:confirm_runs([Run(0.0) || _ <- lists:seq(1, 8)],
                                                                 Run(ShiftPrev), Run(ShiftLast),
                                                                 #{confidence => 0.99}))
            end,
    Rate = fun(P, L, V) -> length([ok || _ <- lists:seq(1, Trials), lists:member(Judge(P, L), V)]) / Trials end,
    ?assert(Rate(0.0, 0.0, [faster, slower]) =< 0.005),
    ?assert(Rate(math:log(1.2), math:log(1.2), [slower]) > 0.85),
    %% (only when the run before was outside by chance, about 0.5%)
    ?assert(Rate(0.0, math:log(1.5), [faster, slower]) =< 0.01),
    ?assert(Rate(0.0, math:log(1.5), [unconfirmed]) > 0.9).

%% One method: the verdict, "p < 1 - confidence" and "the interval (the
%% hull of both runs' intervals) excludes 0" are one statement; the change
%% and `prev' are each run's own.
confirm_runs_one_method_test() ->
    Earlier = [100.0, 102.0, 98.0, 101.0, 99.0],
    Opts = #{confidence => 0.99, better => lower},
    #{verdict := slower, p_value := P, ci := {Lo, Hi}, change := Ch, test := confirm,
      prev := #{verdict := slower, change := PCh}} = beamlab_stats:confirm_runs(Earlier, 125.0, 130.0, Opts),
    ?assert(P < 0.01 andalso Lo > 0 andalso Lo =< Ch andalso Ch =< Hi andalso Lo =< PCh andalso PCh =< Hi),
    ?assert(abs(Ch - 0.3) < 0.01),
    #{verdict := unconfirmed, p_value := P2, ci := {Lo2, _}} = beamlab_stats:confirm_runs(Earlier, 100.5, 130.0, Opts),
    ?assert(P2 >= 0.01 andalso Lo2 =< 0),
    %% Outside on opposite sides: no verdict, p = 1.
    #{verdict := unconfirmed, p_value := 1.0} = beamlab_stats:confirm_runs(Earlier, 75.0, 130.0, Opts),
    #{verdict := no_difference} = beamlab_stats:confirm_runs(Earlier, 130.0, 100.5, Opts),
    #{verdict := too_few_samples} = beamlab_stats:confirm_runs([100.0, 101.0], 130.0, 130.0, Opts).

%% `robust' (#35, CPU time under load): the earlier runs' median and
%% 1.4826 x their median absolute deviation in place of the mean and the
%% sd. One far run among the earlier ones (a burst: 1.4x) inflates their
%% sd so much that a +20% run falls inside it; the median and MAD ignore
%% it. Same t reference, so the verdict, p and interval stay one method.
robust_runs_test() ->
    Earlier = [100.0, 101.0, 99.0, 100.5, 99.5, 100.2, 98.8, 140.0],
    Opts = #{confidence => 0.99, better => lower},
    #{verdict := no_difference, robust := false} = beamlab_stats:compare_to_runs(Earlier, 120.0, Opts),
    #{verdict := slower, robust := true, p_value := P, ci := {Lo, Hi}, change := Ch} =
        beamlab_stats:compare_to_runs(Earlier, 120.0, Opts#{robust => true}),
    ?assert(P < 0.01 andalso Lo > 0 andalso Lo < Ch andalso Ch < Hi),
    %% the change is against the median of the earlier runs' logs, the
    %% spread 1.4826 x the MAD of the logs: p from t(m - 1)
    Ys = [math:log(X) || X <- Earlier],
    Med = beamlab_stats:median(Ys),
    ?near(math:exp(math:log(120.0) - Med) - 1, Ch, 1.0e-9),
    Se = 1.4826 * beamlab_stats:median([abs(Y - Med) || Y <- Ys]) * math:sqrt(1 + 1 / 8),
    ?near(2 * (1 - beamlab_stats:t_cdf((math:log(120.0) - Med) / Se, 7)), P, 1.0e-9),
    %% both runs outside: a verdict; the newest alone: unconfirmed
    #{verdict := slower} = beamlab_stats:confirm_runs(Earlier, 121.0, 120.0, Opts#{robust => true}),
    #{verdict := unconfirmed} = beamlab_stats:confirm_runs(Earlier, 100.0, 120.0, Opts#{robust => true}),
    %% More than half the runs equal (MAD 0): the sd, not a zero spread.
    Ties = [100.0, 100.0, 100.0, 100.0, 104.0],
    #{verdict := no_difference} = beamlab_stats:compare_to_runs(Ties, 101.0, Opts#{robust => true}).

%% The history rule of CPU time (`robust' at 99%, two runs): runs of a
%% level with sd 2% and, one run in 20, a burst of +10% to +50% (what
%% CPU time per iteration showed under load, docs/statistics.md): with
%% the mean and sd a burst among the 8 earlier runs hides a +20% step;
%% with the median and MAD it does not, and identical runs still get a
%% verdict rarely.
robust_history_level_test_() ->
    {timeout, 120, fun robust_history_level/0}.

robust_history_level() ->
    rand:seed(exsss, 3636),
    Trials = 1000,
    Run = fun(Shift) ->
                  Burst = case rand:uniform() < 0.05 of
                              true -> 0.1 + 0.4 * rand:uniform();
                              false -> 0.0
                          end,
                  2000 * math:exp(Shift + Burst + 0.02 * rand:normal())
          end,
    Rate = fun(Shift, Robust, V) ->
                   length([ok || _ <- lists:seq(1, Trials),
                                 #{verdict := X} <- [beamlab_stats:confirm_runs(
                                                       [Run(0.0) || _ <- lists:seq(1, 8)], Run(Shift), Run(Shift),
                                                       #{confidence => 0.99, robust => Robust})],
                                 lists:member(X, V)]) / Trials
           end,
    ?assert(Rate(0.0, true, [faster, slower]) =< 0.02),
    Robust = Rate(math:log(1.2), true, [slower]),
    ?assert(Robust > 0.95),
    ?assert(Rate(math:log(1.2), false, [slower]) < Robust - 0.15).

compare_to_runs_level_test() ->
    rand:seed(exsss, 3599),
    Trials = 2000,
    Run = fun(Shift) -> 1000 * math:exp(Shift + 0.03 * rand:normal()) end,
    Rate = fun(Shift, V) ->
                   length([ok || _ <- lists:seq(1, Trials),
                                 #{verdict := X} <- [beamlab_stats:compare_to_runs(
                                                       [Run(0.0) || _ <- lists:seq(1, 9)], Run(Shift),
                                                       #{confidence => 0.99})],
                                 lists:member(X, V)]) / Trials
           end,
    False = Rate(0.0, [faster, slower]),
    ?assert(False =< 0.02),
    ?assert(Rate(math:log(1.2), [slower]) > 0.9).

%% #35: a non-negative quantity with a zero among its values (an amqp
%% run's `sent' per second: 95620, 22664, 0 when the broker blocked the
%% publisher) has no log scale; Student's interval of its mean stops at
%% zero (it printed ±315%, a rate below zero), and a change of it stops
%% at -100%, while the test (and whether the interval holds 0) is as
%% before.
non_negative_with_zero_test() ->
    S = beamlab_stats:summary([95620.13, 22664.12, 0.0]),
    #{ci_mean := {Lo, Hi}, ci_mean_method := student, mean := M, sd := Sd} = S,
    ?assertEqual(0.0, Lo),
    ?near(M + beamlab_stats:t_quantile(0.975, 2) * Sd / math:sqrt(3), Hi, 1.0e-6),
    %% a negative value keeps the plain Student interval
    #{ci_mean := {NLo, _}} = beamlab_stats:summary([95620.13, 22664.12, -1.0]),
    ?assert(NLo < 0),
    Zeros = beamlab_stats:compare([100.0, 90.0, 110.0], [0.0, 80.0, 5.0], #{better => higher}),
    #{ci := {CLo, CHi}, ci_method := welch, p_value := P} = Zeros,
    ?assertEqual(-1.0, CLo),
    ?assert(CHi > 0 andalso P > 0.01),
    #{ci := {RLo, _}} = beamlab_stats:compare_to_runs([0.0, 100.0, 200.0], 1.0, #{}),
    ?assertEqual(-1.0, RLo),
    #{ci := {SLo, _}} = beamlab_stats:compare_to_runs([-1.0, 100.0, 200.0], 1.0, #{}),
    ?assert(SLo < -1.0).

%% #35: confirm_runs/4's `detectable': two runs shifted by what a window
%% says it could have seen are both outside that window's spread about
%% 80% of the time (log-normal runs, sd 3%, 8 before; seeded).
confirm_runs_detectable_test_() ->
    {timeout, 60,
     fun() ->
             rand:seed(exsss, {35, 3, 5}),
             Run = fun(Shift) -> 100 * math:exp(Shift + 0.03 * rand:normal()) end,
             Caught = length([x || _ <- lists:seq(1, 1000),
                                   W <- [[Run(0.0) || _ <- lists:seq(1, 8)]],
                                   #{detectable := D} <- [beamlab_stats:confirm_runs(W, 100.0, 100.0,
                                                                                     #{confidence => 0.99})],
                                   #{verdict := slower} <- [beamlab_stats:confirm_runs(
                                                              W, Run(math:log(1 + D)), Run(math:log(1 + D)),
                                                              #{confidence => 0.99})]]),
             ?assert(Caught >= 720 andalso Caught =< 880),
             %% judged robustly (median and MAD), by that spread: one far
             %% run in the window hides less
             Far = [100.0, 101.0, 99.0, 100.5, 99.5, 100.2, 99.8, 160.0],
             #{detectable := Sd} = beamlab_stats:confirm_runs(Far, 100.0, 100.0, #{}),
             #{detectable := Mad} = beamlab_stats:confirm_runs(Far, 100.0, 100.0, #{robust => true}),
             ?assert(Mad < Sd / 5),
             %% too few runs, or no spread: nothing to say
             ?assertNot(is_map_key(detectable, beamlab_stats:confirm_runs([1.0, 2.0], 1.0, 1.0, #{}))),
             #{detectable := undefined} = beamlab_stats:confirm_runs([5.0, 5.0, 5.0], 5.0, 5.0, #{})
     end}.
