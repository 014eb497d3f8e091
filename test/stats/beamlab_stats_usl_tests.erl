-module(beamlab_stats_usl_tests).
%% The Universal Scalability Law fit recovers known coefficients.
-include_lib("eunit/include/eunit.hrl").

points(L, S, K, Ns) ->
    [{N, L * N / (1 + S * (N - 1) + K * N * (N - 1))} || N <- Ns].

%% Noise-free points of a law that peaks inside the range.
recovers_known_coefficients_test() ->
    {ok, F} = beamlab_stats_usl:fit(points(1000, 0.05, 0.002, lists:seq(1, 32))),
    #{lambda := L, sigma := S, kappa := K, model := usl, peak_n := PN, peak_x := PX, r2 := R2} = F,
    ?assert(abs(L - 1000) < 0.01),
    ?assert(abs(S - 0.05) < 1.0e-5),
    ?assert(abs(K - 0.002) < 1.0e-7),
    %% N* = sqrt((1 - 0.05) / 0.002) = 21.79
    ?assert(abs(PN - math:sqrt(0.95 / 0.002)) < 0.01),
    ?assert(abs(PX - beamlab_stats_usl:predict(F, PN)) < 1.0e-9),
    ?assert(R2 > 0.999999).

%% Linear scaling: no contention, no coherency, no peak.
linear_test() ->
    {ok, #{sigma := S, kappa := K, peak_n := infinity, lambda := L}} =
        beamlab_stats_usl:fit(points(50, 0.0, 0.0, [1, 2, 4, 8])),
    ?assert(S < 1.0e-6 andalso K < 1.0e-8),
    ?assert(abs(L - 50) < 1.0e-6).

%% Three repetitions per level with 2% noise: close to the truth.
noisy_repetitions_test() ->
    rand:seed(exsss, {7, 8, 9}),
    Pts = [{N, X * (1 + 0.02 * rand:normal())} || {N, X} <- points(2.0e6, 0.1, 0.005, lists:seq(1, 16)),
                                                _ <- [1, 2, 3]],
    {ok, #{sigma := S, kappa := K, points := 48, levels := 16, r2 := R2}} = beamlab_stats_usl:fit(Pts),
    ?assert(abs(S - 0.1) < 0.03),
    ?assert(abs(K - 0.005) < 0.002),
    ?assert(R2 > 0.9).

%% Two levels cannot separate contention from coherency: Amdahl's law.
two_levels_amdahl_test() ->
    {ok, #{model := amdahl, kappa := +0.0, sigma := S, peak_n := infinity}} =
        beamlab_stats_usl:fit([{1, 100}, {1, 102}, {2, 160}, {2, 162}]),
    %% X(2)/X(1) = 2 / (1 + sigma) = 1.596
    ?assert(abs(S - (2 / (161 / 101) - 1)) < 1.0e-4).

errors_test() ->
    ?assertEqual({error, too_few_levels}, beamlab_stats_usl:fit([{1, 10}, {1, 12}])),
    ?assertEqual({error, too_few_levels}, beamlab_stats_usl:fit([])),
    ?assertEqual({error, no_throughput}, beamlab_stats_usl:fit([{1, 0}, {2, 0}, {3, 0}])),
    ?assertMatch([_ | _], lists:flatten(beamlab_stats_usl:format_error(too_few_levels))).
