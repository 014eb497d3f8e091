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
%%%
%%% Why the sign test and not the signed-rank test (#35): under load a
%%% round now and then has an outlier VM (1.3-1.9x the other side), and
%%% such a round has the largest |log ratio|, so it costs the signed-rank
%%% test the most where the sign test counts it as one round. Simulated
%%% with the rounds measured under load (docs/statistics.md, "check's
%%% rounds under load"), the sign test caught +20% more often at every
%%% number of rounds, with no false verdict for either.
%%%
%%% `detectable' says what an `unchanged' could have seen: the smallest
%%% change (a slowdown, relative; the speed-up it mirrors is 1/(1 + D) -
%%% 1) that this many rounds with this spread would call 80% of the time
%%% at this alpha. The rounds' log ratios, centred on their median, are
%%% the spread; a change shifts them all, and the sign test calls it when
%%% enough rounds then go its way (the empirical distribution of the
%%% centred rounds gives the chance of each going its way; the binomial
%%% with that chance the chance of enough). Never below `threshold' (the
%%% verdict's floor); `undefined' when the rounds cannot reach alpha.
-module(beamlab_stats_paired).

-export([compare/3, sign_test/2, min_rounds/1, family/2, detectable/4]).

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
                    detectable := float() | undefined,
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
      detectable => detectable(Ratios, Alpha, Threshold, 0.8),
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

%% @doc The smallest change (a slowdown, relative: 0.2 = +20%) that rounds
%% with the spread of `Ratios' (per-round ratios New/Base) would call at
%% `Alpha' beyond `Threshold' with probability about `Power', in whichever
%% direction needs more. Each round's log ratio, centred on their median
%% and shifted by the change, lands where the centred rounds' empirical
%% distribution (interpolated) puts it: the sign test needs `n - k' of
%% `n' rounds on the change's side of 0, and the verdict more than half
%% of them beyond the threshold; each needs `Power' on its own, and the
%% change is the larger. `undefined' when `n' rounds cannot reach
%% `Alpha' or a ratio is not positive.
-spec detectable([number()], float(), float(), float()) -> float() | undefined.
detectable(Ratios, Alpha, Threshold, Power) ->
    N = length(Ratios),
    case N > 0 andalso lists:all(fun(R) -> R > 0 end, Ratios) andalso critical(N, Alpha) of
        false -> undefined;
        none -> undefined;
        K ->
            Logs = [math:log(R) || R <- Ratios],
            M = beamlab_stats:median(Logs),
            Centred = lists:sort([L - M || L <- Logs]),
            T = math:log(1 + Threshold),
            %% the chance per round that `Power' of the checks have at
            %% least n - k rounds past 0 (the test), at least half past
            %% the threshold (the verdict's floor)
            Test = chance_needed(N, K, Power),
            Floor = chance_needed(N, (N - 1) div 2, Power),
            %% a slowdown D moves round i past X when c_i > X - D: the
            %% (1 - chance) quantile of the centred rounds; a speed-up
            %% mirrors it
            Q = fun(P) -> beamlab_stats:percentile(Centred, 100 * P) end,
            Up = max(-Q(1 - Test), T - Q(1 - Floor)),
            Down = max(Q(Test), T + Q(Floor)),
            D = max(0.0, max(Up, Down)),
            case D < 700.0 of
                true -> math:exp(D) - 1;
                false -> undefined
            end
    end.

%%--------------------------------------------------------------------

%% The most rounds of `N' that may go the other way with the sign test
%% still below `Alpha'; `none' when even unanimous rounds cannot.
critical(N, Alpha) ->
    case sign_test(N, 0) < Alpha of
        false -> none;
        true -> critical(N, Alpha, 0)
    end.

critical(N, Alpha, K) ->
    case K + 1 =< N div 2 andalso sign_test(N - K - 1, K + 1) < Alpha of
        true -> critical(N, Alpha, K + 1);
        false -> K
    end.

%% The chance q per round for which at most K of N rounds go the other
%% way with probability `Power' (bisection: that probability grows with q).
chance_needed(N, K, Power) ->
    chance_needed(N, K, Power, 0.5, 1.0, 60).

chance_needed(_N, _K, _Power, _Lo, Hi, 0) ->
    Hi;
chance_needed(N, K, Power, Lo, Hi, I) ->
    Q = (Lo + Hi) / 2,
    case at_most(K, N, 1 - Q) >= Power of
        true -> chance_needed(N, K, Power, Lo, Q, I - 1);
        false -> chance_needed(N, K, Power, Q, Hi, I - 1)
    end.

%% P(Bin(N, P) =< K).
at_most(K, N, P) ->
    lists:sum([math:exp(log_choose(N, I) + I * log(P) + (N - I) * log(1 - P))
               || I <- lists:seq(0, K)]).

log(X) when X > 0 -> math:log(X);
log(_) -> -1.0e300.

log_choose(N, I) ->
    lists:sum([math:log(N - J) - math:log(J + 1) || J <- lists:seq(0, I - 1)]).

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
