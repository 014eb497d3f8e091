%%% @doc Paired comparison of two versions measured in the same rounds:
%%% `beamlab check' runs base and head once each per round (order swapped
%%% every round), so round i gives one value of each and their ratio
%%% New/Base. Whatever slowed the machine during round i slowed both
%%% sides, and the ratio cancels it.
%%%
%%% The estimate is the median of the per-round ratios, its interval the
%%% distribution-free order-statistic interval of that median
%%% ({@link beamlab_stats:summary/2}'s `ci_median', at confidence
%%% 1 - alpha), and the test the exact two-sided sign test on the rounds
%%% whose values differ (the test this interval inverts: the interval
%%% leaves out 1 exactly when the test rejects). Neither assumes a shape
%%% for the noise, and both stay valid when one round is disturbed.
%%%
%%% The verdict: `regressed' when p < alpha and the median ratio is worse
%%% (by `better') than `threshold', `improved' the same the other way,
%%% `unchanged' otherwise; `too_few_rounds' when even rounds that all
%%% agree could not reach p < alpha (fewer than 8 rounds at 0.01).
-module(beamlab_stats_paired).

-export([compare/3, sign_test/2, min_rounds/1, family/2]).

-type better() :: higher | lower.
-type verdict() :: regressed | improved | unchanged | too_few_rounds
                 | inconclusive_load.  % set by a caller (beamlab_project_check) on a loaded machine
-type opts() :: #{better => better(),     % default lower (times, reductions, words)
                  alpha => float(),       % significance level, default 0.01
                  threshold => float()}.  % effect floor, a fraction: 0.05 = 5%
-type result() :: #{n := non_neg_integer(),
                    ratios := [float()],
                    median_base := float() | undefined,
                    median_new := float() | undefined,
                    change := float() | undefined,
                    ci := {float(), float()} | undefined,
                    confidence := float(),
                    ci_coverage := float(),
                    p_value := float(),
                    test := sign,
                    higher := non_neg_integer(),
                    lower := non_neg_integer(),
                    ties := non_neg_integer(),
                    alpha := float(),
                    threshold := float(),
                    better := better(),
                    verdict := verdict()}.
%% The family-wise correction of several comparisons judged together.
-type family() :: #{method := bonferroni, alpha := float(), compared := non_neg_integer(),
                    size := non_neg_integer(), entry_alpha := float()}.
-export_type([result/0, verdict/0, opts/0, family/0]).

-define(ALPHA, 0.01).
-define(THRESHOLD, 0.05).

%% @doc Compares `New' with `Base', paired by position (round i of each).
%% Both lists must have the same length.
-spec compare([number()], [number()], opts()) -> result().
compare(Base, New, Opts) when length(Base) =:= length(New) ->
    Alpha = float(maps:get(alpha, Opts, ?ALPHA)),
    Threshold = float(maps:get(threshold, Opts, ?THRESHOLD)),
    Better = maps:get(better, Opts, lower),
    Pairs = lists:zip(Base, New),
    Higher = length([x || {B, N} <- Pairs, N > B]),
    Lower = length([x || {B, N} <- Pairs, N < B]),
    Ratios = [ratio(B, N) || {B, N} <- Pairs, B > 0 orelse N == B],
    P = sign_test(Higher, Lower),
    {Change, Ci, Coverage} = estimate(Ratios, 1 - Alpha),
    #{n => length(Pairs), ratios => Ratios,
      median_base => median(Base), median_new => median(New),
      change => Change, ci => Ci, confidence => 1 - Alpha, ci_coverage => Coverage,
      p_value => P, test => sign, higher => Higher, lower => Lower,
      ties => length(Pairs) - Higher - Lower, alpha => Alpha, threshold => Threshold,
      better => Better,
      verdict => verdict(length(Pairs), P, Change, Alpha, Threshold, Better)}.

%% @doc Exact two-sided p-value of the sign test: `Higher' rounds went one
%% way, `Lower' the other (ties left out). 1.0 when nothing differs.
-spec sign_test(non_neg_integer(), non_neg_integer()) -> float().
sign_test(Higher, Lower) ->
    N = Higher + Lower,
    case N of
        0 -> 1.0;
        _ -> min(1.0, 2 * binomial_cdf(min(Higher, Lower), N))
    end.

%% @doc The fewest rounds whose unanimous agreement reaches p < `Alpha'.
-spec min_rounds(float()) -> pos_integer().
min_rounds(Alpha) ->
    min_rounds(Alpha, 1).

min_rounds(Alpha, N) ->
    case sign_test(N, 0) < Alpha of
        true -> N;
        false -> min_rounds(Alpha, N + 1)
    end.

%% @doc The level each of several paired comparisons is judged at so that
%% all of them together hold at `Alpha' (the chance of any false verdict
%% at most `Alpha'): Bonferroni, `Alpha / size', with Tarone's refinement
%% for discrete tests (Tarone, 1990). `Differing' gives, per comparison,
%% its rounds whose values differ; a comparison whose rounds could not
%% reach significance even if all went one way (all tied, or too few)
%% can never give a false verdict, so it is left out of the family: the
%% size is the smallest K for which at most K comparisons can reach
%% p < Alpha / K. Test and interval of each comparison are then taken at
%% `entry_alpha' (the interval at confidence 1 - entry_alpha), so they
%% agree.
-spec family(float(), [non_neg_integer()]) -> family().
family(Alpha, Differing) ->
    Compared = length(Differing),
    MinP = [sign_test(N, 0) || N <- Differing],
    Size = case Compared of
               0 -> 0;
               _ -> hd([K || K <- lists:seq(1, Compared),
                             length([P || P <- MinP, P < Alpha / K]) =< K])
           end,
    #{method => bonferroni, alpha => float(Alpha), compared => Compared, size => Size,
      entry_alpha => float(Alpha / max(1, Size))}.

%%--------------------------------------------------------------------

ratio(B, N) when N == B -> 1.0;
ratio(B, N) -> N / B.

median([]) -> undefined;
median(Xs) -> beamlab_stats:median(Xs).

estimate([], _Conf) ->
    {undefined, undefined, 0.0};
estimate(Ratios, Conf) ->
    case beamlab_stats:summary(Ratios, #{confidence => Conf}) of
        #{median := M, ci_median := {Lo, Hi}, ci_median_coverage := Cov} ->
            {M - 1, {Lo - 1, Hi - 1}, Cov};
        %% One or two rounds: no interval.
        #{median := M} ->
            {M - 1, undefined, 0.0}
    end.

verdict(N, P, Change, Alpha, Threshold, Better) ->
    Worse = case {Change, Better} of
                {undefined, _} -> 0.0;
                {_, lower} -> Change;
                {_, higher} -> -Change
            end,
    if
        N =:= 0 -> too_few_rounds;
        true ->
            case sign_test(N, 0) >= Alpha of
                true -> too_few_rounds;
                false when P >= Alpha -> unchanged;
                false when Worse > Threshold -> regressed;
                false when -Worse > Threshold -> improved;
                false -> unchanged
            end
    end.

%% P(Bin(N, 1/2) =< K), summed in log space (N may be large).
binomial_cdf(K, N) ->
    LogHalfN = -N * math:log(2),
    binomial_cdf(K, N, 0, LogHalfN, 0.0).

binomial_cdf(K, _N, I, _LogPmf, Acc) when I > K ->
    min(1.0, Acc);
binomial_cdf(K, N, I, LogPmf, Acc) ->
    Next = LogPmf + math:log(N - I) - math:log(I + 1),
    binomial_cdf(K, N, I + 1, Next, Acc + math:exp(LogPmf)).
