%%% @doc Descriptive and inferential statistics for benchmark samples.
%%%
%%% Pure functions: numbers in, floats and maps out. Every area of beamlab
%%% uses this module for means, percentiles, confidence intervals,
%%% comparisons of two runs and the engine's stopping rule, so that numbers
%%% agree everywhere. Methods and formulas are documented in
%%% `docs/statistics.md'.
%%%
%%% Robustness rules: integers and floats may be mixed (all results are
%%% floats); zeros, all-equal samples and a single sample are valid; very
%%% large and very small magnitudes are rescaled by a power of two before
%%% squaring so that no intermediate overflows or underflows. Erlang has no
%%% NaN or infinity, so every division is guarded.
-module(beamlab_stats).

-export([summary/1, summary/2, safe_summary/1,
         mean/1, variance/1, sd/1, median/1,
         percentile/2, histogram/2,
         compare/3, robust_values/2, converged/2,
         compare_to_runs/3, confirm_runs/4,
         mann_whitney/2, welch/2,
         normal_cdf/1, normal_quantile/1, t_cdf/2, t_quantile/2]).

-export_type([summary/0, comparison/0, interval/0, df/0]).

-type interval() :: {float(), float()}.
-type df() :: number() | infinity.
-type summary() ::
        #{n := pos_integer(),
          mean := float(), sd := float(), cv := float(),
          median := float(), min := float(), max := float(),
          p1 := float(), p5 := float(), p10 := float(), p25 := float(),
          p75 := float(), p90 := float(), p95 := float(), p99 := float(),
          p999 := float(), iqr := float(),
          ci_mean => interval(), ci_mean_method := log_delta | student | none,
          ci_median => interval(),
          ci_median_exact := boolean(), ci_median_coverage := float(),
          confidence := float(),
          outliers := #{low := non_neg_integer(), high := non_neg_integer(),
                        low_severe := non_neg_integer(),
                        high_severe := non_neg_integer()},
          too_few := boolean()}.
-type comparison() ::
        #{change := float() | undefined,
          ci := interval() | undefined,
          ci_method := log_welch | welch | log_runs | runs | none,
          p_value := float() | undefined,
          p_value_welch := float() | undefined,
          p_value_mann_whitney := float() | undefined,
          mann_whitney_method := exact | normal | none,
          test := welch_log | welch_log_robust | welch | runs_log | runs | confirm | none,
          %% compare/3 with `robust': the values left out of each side
          rejected_base => non_neg_integer(), rejected_new => non_neg_integer(),
          %% (inconclusive_load: set by a caller, a matrix on a loaded machine)
          verdict := faster | slower | no_difference | too_few_samples | inconclusive_load
                   | unconfirmed,
          n_base := non_neg_integer(), n_new := non_neg_integer(),
          mean_base := float() | undefined, mean_new := float() | undefined,
          confidence := float(),
          %% compare/3 on positive samples: the smallest slowdown caught
          %% 80% of the time at the level (relative); confirm_runs/4: the
          %% smallest that puts both runs outside the spread 80% of the time
          detectable => float() | undefined,
          %% confirm_runs/4: the previous run's own comparison
          prev => #{atom() => term()},
          %% compare_to_runs/3, confirm_runs/4: median and MAD in place
          %% of mean and sd (the `robust' option)
          robust => boolean()}.

-define(DEFAULT_CONFIDENCE, 0.95).
%% Beyond this many degrees of freedom Student's t equals the normal
%% distribution to far better than 1e-9.
-define(DF_NORMAL, 1.0e10).
%% The fewest values an interval is computed from: with one or two there is
%% no interval (one value has no spread; two give a Student quantile of
%% 12.7 and an interval that says nothing). Documented in docs/statistics.md.
-define(MIN_INTERVAL_N, 3).
%% Magnitudes outside [SMALL, LARGE] are rescaled before squaring.
-define(LARGE, 1.0e150).
-define(SMALL, 1.0e-150).
-define(MAX_FLOAT, 1.7976931348623157e308).
%% The median absolute deviation times this estimates a normal sample's sd.
-define(MAD_SD, 1.4826).
%% compare/3's `robust': a value is left out when its log lies more than
%% this many robust sds (MAD_SD x MAD of the logs, at least ROBUST_FLOOR)
%% from its side's median log; bench/vm_rule_study.escript chose it (a cut
%% of 3 or 5 gave as few false verdicts and nearly the same power:
%% docs/statistics.md).
-define(ROBUST_CUT, 3.5).
%% The least robust sd: values (fresh VMs' fastest samples) that agree
%% to a fraction of a percent leave out no VM only 2-3% off.
-define(ROBUST_FLOOR, 0.01).

%%====================================================================
%% Descriptive statistics
%%====================================================================

%% @doc Full summary of a non-empty sample (confidence 0.95).
-spec summary([number(), ...]) -> summary().
summary(Samples) ->
    summary(Samples, #{}).

%% @doc Full summary of a non-empty sample. Options: `confidence' in (0,1).
%% With fewer than three samples there are no intervals (`ci_mean' and
%% `ci_median' are absent, `ci_mean_method' is `none') and `too_few' is
%% true. The interval of the mean of positive samples is on the log scale
%% (mean */ exp(t * cv / sqrt(n)), never below zero); samples with a zero
%% or a negative value get Student's t interval, which stops at zero when
%% no sample is negative (a rate with an idle second).
-spec summary([number(), ...], #{confidence => float()}) -> summary().
summary([_ | _] = Samples, Opts) when is_map(Opts) ->
    Conf = confidence(Opts),
    Sorted = lists:sort(to_floats(Samples)),
    T = list_to_tuple(Sorted),
    N = tuple_size(T),
    Min = element(1, T),
    Max = element(N, T),
    {Mean, Sd} = mean_sd(Sorted, N, Min, Max),
    P = fun(Q) -> pct(T, N, Q) end,
    P25 = P(25),
    P75 = P(75),
    Iqr = sub(P75, P25),
    Median = P(50),
    {CiMedian, Exact, Coverage} = ci_median(T, N, Conf),
    {CiMean, CiMethod} = ci_mean(Sorted, Mean, Sd, N, Min, Conf),
    Intervals = case N < ?MIN_INTERVAL_N of
                    true -> #{};
                    false -> #{ci_mean => CiMean, ci_median => CiMedian}
                end,
    Intervals#{n => N,
      mean => Mean, sd => Sd, cv => cv(Sd, Mean),
      median => Median, min => Min, max => Max,
      p1 => P(1), p5 => P(5), p10 => P(10), p25 => P25, p75 => P75,
      p90 => P(90), p95 => P(95), p99 => P(99), p999 => P(99.9),
      iqr => Iqr,
      ci_mean_method => CiMethod,
      ci_median_exact => Exact,
      ci_median_coverage => Coverage,
      confidence => Conf,
      outliers => outliers(T, N, P25, P75, Iqr),
      too_few => N < ?MIN_INTERVAL_N}.

%% @doc Like {@link summary/1} but `undefined' for an empty sample.
-spec safe_summary([number()]) -> summary() | undefined.
safe_summary([]) -> undefined;
safe_summary(Samples) -> summary(Samples).

%% @doc Arithmetic mean (compensated summation, never outside [min, max]).
-spec mean([number(), ...]) -> float().
mean([_ | _] = Samples) ->
    Fs = to_floats(Samples),
    {Mean, _} = mean_sd(Fs, length(Fs), lists:min(Fs), lists:max(Fs)),
    Mean.

%% @doc Sample variance (denominator n-1); 0.0 for a single sample.
%% Saturates at the largest float instead of overflowing.
-spec variance([number(), ...]) -> float().
variance([_ | _] = Samples) ->
    Fs = to_floats(Samples),
    {_, _, Var} = moments(Fs, length(Fs), lists:min(Fs), lists:max(Fs)),
    Var.

%% @doc Sample standard deviation (denominator n-1); 0.0 for one sample.
-spec sd([number(), ...]) -> float().
sd([_ | _] = Samples) ->
    Fs = to_floats(Samples),
    {_, Sd} = mean_sd(Fs, length(Fs), lists:min(Fs), lists:max(Fs)),
    Sd.

%% @doc Median (the 50th percentile, interpolated).
-spec median([number(), ...]) -> float().
median([_ | _] = Samples) ->
    percentile(lists:sort(Samples), 50).

%% @doc Percentile `P' (0..100) of an already sorted non-empty list, with
%% linear interpolation between closest ranks (Hyndman-Fan type 7, the
%% default of R and NumPy).
-spec percentile([number(), ...], number()) -> float().
percentile([_ | _] = Sorted, P) when is_number(P), P >= 0, P =< 100 ->
    T = list_to_tuple(to_floats(Sorted)),
    pct(T, tuple_size(T), P).

%% @doc Equal-width histogram with `Bins' bins spanning [min, max]; bins
%% are half-open except the last, which includes max. All-equal samples
%% give one bin `{X, X, N}'.
-spec histogram([number(), ...], pos_integer()) ->
          [{float(), float(), non_neg_integer()}].
histogram([_ | _] = Samples, Bins) when is_integer(Bins), Bins >= 1 ->
    Fs = to_floats(Samples),
    Min = lists:min(Fs),
    Max = lists:max(Fs),
    %% Half-range arithmetic avoids overflow for huge opposite-sign ranges.
    HalfWidth = (Max / 2 - Min / 2) / Bins,
    case HalfWidth > 0.0 of
        false ->
            %% All equal, or a range too small to split (subnormals).
            [{Min, Max, length(Fs)}];
        true ->
            Edge = fun(0) -> Min;
                      (I) when I =:= Bins -> Max;
                      (I) -> min(Max, Min + HalfWidth * I + HalfWidth * I)
                   end,
            Counts = lists:foldl(
                       fun(X, Acc) ->
                               I = max(0, min(Bins - 1,
                                              trunc((X / 2 - Min / 2) / HalfWidth))),
                               maps:update_with(I, fun(C) -> C + 1 end, 1, Acc)
                       end, #{}, Fs),
            [{Edge(I), Edge(I + 1), maps:get(I, Counts, 0)}
             || I <- lists:seq(0, Bins - 1)]
    end.

%%====================================================================
%% Comparison of two samples
%%====================================================================

%% @doc Compare `New' against `Base'. Options: `better' (`higher' or
%% `lower', also as binaries like the result document's `better', default
%% `lower', as for times), `confidence' (default 0.95), `min_change'
%% (default 0.0) is the smallest relative change worth reporting: a
%% significant but smaller change is `no_difference'.
%%
%% One method gives the estimate, the interval and the test, so they cannot
%% disagree. Positive samples (times, rates, sizes) are compared on the log
%% scale: `change' is the ratio of the geometric means minus one, `ci' is
%% Welch's interval of the difference of the log means, exponentiated
%% (never below -100%), and the verdict is "that interval excludes 0"
%% (equivalently Welch's p < 1 - confidence on the logs). Samples with a
%% zero or a negative value are compared by Welch on the raw values
%% (`change' relative to |mean(Base)|). Fewer than three values on either
%% side give `too_few_samples' and no interval. The Mann-Whitney p-value
%% is reported for information only.
%%
%% `run_noise' (default 0.0) is the relative sd of a run's level from run
%% to run (Kalibera and Jones' between-run term) when `Base' and `New'
%% are the repetitions of two separately measured runs: their
%% repetitions share their run's conditions, so each side's mean varies
%% by that much more than its repetitions' spread says. Its variance,
%% 2 * run_noise^2 on the log scale ((run_noise * |mean(Base)|)^2 twice on
%% the raw scale), is added to Welch's, as a known term: the degrees of
%% freedom stay those of the sampled part, so the term can only widen the
%% interval and raise the p-value (never turn "no difference" into a
%% verdict), and the interval and the test still come from one standard
%% error.
%%
%% `robust' (default false; #35): each side, on its own, first leaves out
%% its values far from the rest -- those whose log lies more than 3.5
%% robust sds (1.4826 x the median absolute deviation of the side's logs,
%% at least 1%) from the side's median log, and only while 3 or more
%% values stay ({@link robust_values/2}) -- then the test above runs on
%% the rest (`test' `welch_log_robust', `rejected_base' and
%% `rejected_new' count what was left out; `mean_base' and `mean_new'
%% are of the rest). For values that are fresh VMs, one VM slowed as a
%% whole no longer hides a change behind its variance (docs/statistics.md,
%% "Rules against a VM slowed as a whole"). Positive samples only; on the
%% raw scale nothing is left out.
-spec compare([number()], [number()],
              #{better => higher | lower | binary(), confidence => float(),
                min_change => number(), run_noise => number(), robust => boolean()}) ->
          comparison().
compare(Base0, New0, Opts) when is_list(Base0), is_list(New0), is_map(Opts) ->
    Conf = confidence(Opts),
    Better = case maps:get(better, Opts, lower) of
                 B when B =:= higher; B =:= <<"higher">> -> higher;
                 B when B =:= lower; B =:= <<"lower">> -> lower;
                 B -> error({badarg, {better, B}})
             end,
    MinChange = case maps:get(min_change, Opts, 0.0) of
                    M when is_number(M), M >= 0 -> M;
                    M -> error({badarg, {min_change, M}})
                end,
    RunNoise = case maps:get(run_noise, Opts, 0.0) of
                   RN when is_number(RN), RN >= 0 -> float(RN);
                   RN -> error({badarg, {run_noise, RN}})
               end,
    Robust = case maps:get(robust, Opts, false) of
                 R when is_boolean(R) -> R;
                 R -> error({badarg, {robust, R}})
             end,
    NB = length(Base0),
    NN = length(New0),
    Common = #{n_base => NB, n_new => NN, confidence => Conf},
    case NB < ?MIN_INTERVAL_N orelse NN < ?MIN_INTERVAL_N of
        true ->
            {MB, MN, Change} = means_change(Base0, New0),
            Common#{change => Change, ci => undefined, ci_method => none,
                    p_value => undefined, p_value_welch => undefined,
                    p_value_mann_whitney => undefined,
                    mann_whitney_method => none, test => none,
                    verdict => too_few_samples,
                    mean_base => MB, mean_new => MN};
        false ->
            compare2(to_floats(Base0), to_floats(New0), Conf, Better, MinChange, RunNoise, Robust, Common)
    end.

compare2(Base0, New0, Conf, Better, MinChange, RunNoise, Robust0, Common) ->
    %% t and rank statistics are scale-invariant: rescale by a power of two
    %% (exact) so that squares never overflow or underflow.
    Scale = scale(lists:max([abs(X) || X <- Base0 ++ New0])),
    Base1 = [X / Scale || X <- Base0],
    New1 = [X / Scale || X <- New0],
    %% (after scaling: a value far below the largest can underflow to 0)
    Positive = lists:min(Base1 ++ New1) > 0,
    Robust = Robust0 andalso Positive,
    {Base, New} = case Robust of
                      true -> {robust_values(Base1, ?ROBUST_CUT), robust_values(New1, ?ROBUST_CUT)};
                      false -> {Base1, New1}
                  end,
    MW = mann_whitney(Base, New),
    {Test, W, Change, Ci, CiMethod} =
        case Positive of
            true ->
                WL = welch([math:log(X) || X <- Base], [math:log(X) || X <- New],
                           2 * RunNoise * RunNoise),
                {C, I} = log_change_ci(WL, Conf),
                {case Robust of
                     true -> welch_log_robust;
                     false -> welch_log
                 end, WL, C, I, log_welch};
            false ->
                RawNoise = RunNoise * abs(mean(Base)),
                WR = welch(Base, New, 2 * RawNoise * RawNoise),
                {C, I, M} = raw_change_ci(WR, Conf),
                {welch, WR, C, non_negative_change(I, Base ++ New), M}
        end,
    #{p_value := P, mean_base := WB, mean_new := WN} = W,
    Direction = sign(WN - WB),
    Relevant = MinChange == 0 orelse
        (is_float(Change) andalso abs(Change) >= MinChange),
    Verdict = case P < 1 - Conf andalso Direction =/= 0 andalso Relevant of
                  true -> verdict(Direction, Better);
                  false -> no_difference
              end,
    Rejected = case Robust of
                   true -> #{rejected_base => length(Base0) - length(Base),
                             rejected_new => length(New0) - length(New)};
                   false -> #{}
               end,
    (maps:merge(Common, Rejected))#{change => Change, ci => Ci, ci_method => CiMethod,
            p_value => P, p_value_welch => P,
            p_value_mann_whitney => maps:get(p_value, MW),
            mann_whitney_method => maps:get(method, MW), test => Test,
            verdict => Verdict, detectable => detectable(Test, W, Conf),
            mean_base => mean(Base) * Scale, mean_new => mean(New) * Scale}.

%% @doc The values of one side that a `robust' comparison keeps
%% ({@link compare/3}): all but those whose log lies more than `Cut'
%% robust sds (1.4826 x the median absolute deviation of the logs, at
%% least 1%) from the median log, in their order; all of them when fewer
%% than 3 would stay (at 3 values one far out cannot be told from a
%% spread, and 2 give no interval) or when a value is not positive.
%% Decided on the side alone, never looking at the other.
-spec robust_values([number()], number()) -> [number()].
robust_values(Values, Cut) when is_list(Values), is_number(Cut), Cut > 0 ->
    case length(Values) > ?MIN_INTERVAL_N andalso lists:min(Values) > 0 of
        false -> Values;
        true ->
            Ys = [math:log(X) || X <- Values],
            Med = median(Ys),
            S = max(?MAD_SD * median([abs(Y - Med) || Y <- Ys]), ?ROBUST_FLOOR),
            case [X || {X, Y} <- lists:zip(Values, Ys), abs(Y - Med) =< Cut * S] of
                Kept when length(Kept) >= ?MIN_INTERVAL_N -> Kept;
                _ -> Values
            end
    end.

%% The smallest slowdown this comparison calls 80% of the time at its
%% level: (t(1 - alpha/2) + t(0.8)) * se on the log scale (positive
%% samples), as a relative change; `undefined' on the raw scale or without
%% a spread.
detectable(Log, #{se2 := Se2, df := Df}, Conf)
  when (Log =:= welch_log orelse Log =:= welch_log_robust), Se2 > 0.0 ->
    D = (t_quantile((1 + Conf) / 2, Df) + t_quantile(0.8, Df)) * math:sqrt(Se2),
    case D < 700.0 of
        true -> math:exp(D) - 1;
        false -> undefined
    end;
detectable(_, _, _) ->
    undefined.

verdict(1, higher) -> faster;
verdict(1, lower) -> slower;
verdict(-1, higher) -> slower;
verdict(-1, lower) -> faster.

means_change(Base, New) ->
    MB = safe_mean(Base),
    MN = safe_mean(New),
    Change = case {MB, MN} of
                 {B, N} when is_float(B), is_float(N), B /= 0.0 ->
                     %% (N - B) / B overflows for means hundreds of orders
                     %% apart: then there is no finite change to show.
                     case abs(B) >= 1.0 orelse abs(N) < abs(B) * (?MAX_FLOAT / 2) of
                         true -> N / B - 1;
                         false -> undefined
                     end;
                 _ -> undefined
             end,
    {MB, MN, Change}.

safe_mean([]) -> undefined;
safe_mean(L) -> mean(L).

%% @doc Compare one run's value `New' with the values of earlier runs
%% (`Runs', one value per run, e.g. each run's mean): is `New' outside
%% what the run-to-run spread of `Runs' explains? The run is the unit:
%% with y the logs of the run values, d = ln(New) - mean(y), its standard
%% error s*sqrt(1 + 1/m) (the new run varies like any earlier one; m runs,
%% s their sd) and Student's t with m - 1 df give the p-value and the
%% interval of the change exp(d -+ t*se) - 1 (never below -100%) -- one
%% method for both. Values with a zero or a negative one are compared on
%% the raw scale. Fewer than 3 earlier runs: `too_few_samples'. Options as
%% {@link compare/3}, and `robust' (default false): the earlier runs'
%% location is their median and their spread 1.4826 times their median
%% absolute deviation (the sd of a normal sample, unmoved by one far run)
%% in place of the mean and the sd, with the same t reference, interval
%% and p-value (`robust => true' in the result). For a measure with a
%% rare far run and a tight spread otherwise (CPU time under load:
%% docs/statistics.md), one burst in the history no longer hides a change
%% for as long as it stays in the window. `spread_floor' (default 0): the
%% least spread on the log scale (relative), a run-to-run term for runs
%% whose own spread can be tighter than the machine's (the fastest
%% samples of CPU time: docs/statistics.md).
-spec compare_to_runs([number()], number(),
                      #{better => higher | lower | binary(), confidence => float(),
                        min_change => number(), robust => boolean(),
                        spread_floor => number()}) -> comparison().
compare_to_runs(Runs0, New, Opts) when is_list(Runs0), is_number(New), is_map(Opts) ->
    Conf = confidence(Opts),
    Better = case maps:get(better, Opts, lower) of
                 B when B =:= higher; B =:= <<"higher">> -> higher;
                 _ -> lower
             end,
    MinChange = maps:get(min_change, Opts, 0.0),
    M = length(Runs0),
    Common = #{n_base => M, n_new => 1, confidence => Conf,
               p_value_welch => undefined, p_value_mann_whitney => undefined,
               mann_whitney_method => none},
    case M < ?MIN_INTERVAL_N of
        true ->
            {MB, MN, Change} = means_change(Runs0, [New]),
            Common#{change => Change, ci => undefined, ci_method => none, p_value => undefined,
                    test => none, verdict => too_few_samples, mean_base => MB, mean_new => MN};
        false ->
            Runs = to_floats(Runs0),
            X = float(New),
            Positive = lists:min([X | Runs]) > 0,
            {Ys, Y, Test, Method} = case Positive of
                                         true -> {[math:log(R) || R <- Runs], math:log(X), runs_log, log_runs};
                                         false -> {Runs, X, runs, runs}
                                     end,
            Robust = maps:get(robust, Opts, false) =:= true,
            {YBar, S0} = runs_spread(Ys, Robust),
            S = spread_floor(S0, Positive, Opts),
            D = Y - YBar,
            Se = S * math:sqrt(1 + 1 / M),
            Df = M - 1,
            P = case Se == 0.0 of
                    true when D == 0.0 -> 1.0;
                    true -> 0.0;
                    false -> min(1.0, 2 * t_sf(abs(D / Se), Df))
                end,
            H = case Se == 0.0 of
                    true -> 0.0;
                    false -> t_quantile((1 + Conf) / 2, Df) * Se
                end,
            MB = mean(Runs),
            {Change, Ci} = case Positive of
                               true -> {safe_exp(D) - 1, {safe_exp(D - H) - 1, safe_exp(D + H) - 1}};
                               false when YBar == 0.0 -> {undefined, undefined};
                               false -> {D / abs(YBar),
                                         non_negative_change({(D - H) / abs(YBar), (D + H) / abs(YBar)},
                                                             [X | Runs])}
                           end,
            Relevant = MinChange == 0 orelse (is_float(Change) andalso abs(Change) >= MinChange),
            Verdict = case P < 1 - Conf andalso D /= 0.0 andalso Relevant of
                          true -> verdict(sign(D), Better);
                          false -> no_difference
                      end,
            Common#{change => Change, ci => Ci, ci_method => Method, p_value => P, test => Test,
                    verdict => Verdict, mean_base => MB, mean_new => X, robust => Robust}
    end.

%% @doc Judge the two newest runs of a history, `Prev' then `Last' (one
%% value each), against the earlier runs before both (`Runs'): each by
%% {@link compare_to_runs/3}, and `faster'/`slower' only when BOTH are
%% outside the earlier runs' spread at the level, on the same side. One
%% run outside it alone (`Last' significant, `Prev' not or on the other
%% side) is `unconfirmed': a single run far off is as often a burst of
%% the machine as a change, and only the next run can tell (the heavy tail
%% of single runs, docs/statistics.md). It is an intersection-union test:
%% `p_value' is the larger of the two p-values when both changes have one
%% sign (1.0 otherwise), `ci' is the hull of the two intervals, so the
%% verdict, "p < 1 - confidence" and "the interval excludes 0" are one
%% statement. `change' is `Last''s change against `Runs', `mean_new' its
%% value; `prev' holds `Prev''s own comparison. Options as
%% {@link compare_to_runs/3} (`robust' included).
-spec confirm_runs([number()], number(), number(),
                   #{better => higher | lower | binary(), confidence => float(),
                     min_change => number(), robust => boolean(),
                     spread_floor => number()}) -> comparison().
confirm_runs(Runs, Prev, Last, Opts) when is_list(Runs), is_number(Prev), is_number(Last), is_map(Opts) ->
    P = compare_to_runs(Runs, Prev, Opts),
    L = compare_to_runs(Runs, Last, Opts),
    case L of
        #{verdict := too_few_samples} -> L;
        #{change := undefined} -> L;
        #{ci := {LLo, LHi}, p_value := LP, verdict := LV, change := LC} ->
            #{ci := {PLo, PHi}, p_value := PP, verdict := PV, change := PC} = P,
            Same = sign(LC) =:= sign(PC) andalso sign(LC) =/= 0,
            Verdict = if
                          LV =:= PV, LV =/= no_difference -> LV;
                          LV =/= no_difference -> unconfirmed;
                          true -> no_difference
                      end,
            L#{ci => {min(LLo, PLo), max(LHi, PHi)},
               p_value => case Same of
                              true -> max(LP, PP);
                              false -> 1.0
                          end,
               test => confirm, verdict => Verdict,
               detectable => runs_detectable(Runs, confidence(Opts), Opts),
               prev => maps:with([change, ci, p_value, verdict, mean_new], P)}
    end.

%% What two runs judged against the spread of `Runs' could have seen
%% (#35): the smallest slowdown (relative) that puts both outside it 80%
%% of the time. Each run lies d ± s·sqrt(1 + 1/m) from the runs' mean on
%% the log scale (compare_to_runs/3's se); both beyond the level's t
%% quantile with probability 0.8 needs each with sqrt(0.8) (the two runs
%% are measured apart): (t(1 - alpha/2) + t(sqrt 0.8)) · se, on m - 1 df,
%% with the spread the runs were judged by (`robust': the MAD's).
%% `undefined' without a spread or on the raw scale (a value not
%% positive).
runs_detectable(Runs, Conf, Opts) ->
    M = length(Runs),
    case M >= ?MIN_INTERVAL_N andalso lists:min(Runs) > 0 of
        true ->
            {_, S0} = runs_spread([math:log(R) || R <- to_floats(Runs)], maps:get(robust, Opts, false) =:= true),
            S = spread_floor(S0, true, Opts),
            Se = S * math:sqrt(1 + 1 / M),
            D = (t_quantile((1 + Conf) / 2, M - 1) + t_quantile(math:sqrt(0.8), M - 1)) * Se,
            case Se > 0.0 andalso D < 700.0 of
                true -> math:exp(D) - 1;
                false -> undefined
            end;
        false ->
            undefined
    end.

%% The spread, at least `spread_floor' on the log scale (a relative
%% floor means nothing on the raw scale).
spread_floor(S, true, #{spread_floor := K}) when is_number(K), K > 0 -> max(S, float(K));
spread_floor(S, _, _) -> S.

%% The earlier runs' location and spread: mean and sd, or (`robust')
%% median and 1.4826 x MAD.
runs_spread(Ys, true) ->
    Med = median(Ys),
    %% (more than half the runs equal: the MAD says nothing of the
    %% spread, the sd does)
    case median([abs(Yi - Med) || Yi <- Ys]) of
        Mad when Mad > 0.0 -> {Med, ?MAD_SD * Mad};
        _ -> {Med, sd(Ys)}
    end;
runs_spread(Ys, false) ->
    {mean(Ys), sd(Ys)}.

%% On the logs: the difference of the means d estimates ln(ratio of the
%% geometric means); the interval d -+ t*se, exponentiated, is the
%% interval of the ratio, and minus one that of the change. The same t and
%% se give Welch's p, so "the interval excludes 0" and "p < 1 - confidence"
%% are one statement.
log_change_ci(#{mean_base := LB, mean_new := LN, se2 := Se2, df := Df}, Conf) ->
    D = LN - LB,
    Change = safe_exp(D) - 1,
    case Se2 == 0.0 of
        true -> {Change, {Change, Change}};
        false ->
            H = t_quantile((1 + Conf) / 2, Df) * math:sqrt(Se2),
            {Change, {safe_exp(D - H) - 1, safe_exp(D + H) - 1}}
    end.

%% Welch's interval of the difference, relative to |mean(Base)|: the same
%% t and se as the test. Undefined when the base mean is zero.
%% A change of a quantity that cannot go below zero (every value >= 0,
%% some zero: no log scale) cannot fall below -100%: its interval stops
%% there. Whether it contains 0, the test's statement, is unchanged.
non_negative_change({Lo, Hi}, Values) when is_float(Lo) ->
    case lists:min(Values) >= 0 of
        true -> {max(-1.0, Lo), Hi};
        false -> {Lo, Hi}
    end;
non_negative_change(Ci, _Values) ->
    Ci.

raw_change_ci(#{mean_base := MB}, _Conf) when MB == 0.0 ->
    {undefined, undefined, none};
raw_change_ci(#{mean_base := MB, mean_new := MN, se2 := Se2, df := Df}, Conf) ->
    H0 = case Se2 == 0.0 of
             true -> 0.0;
             false -> t_quantile((1 + Conf) / 2, Df) * math:sqrt(Se2)
         end,
    %% Relative to a base mean hundreds of orders smaller, the change (or
    %% its interval) has no finite value: none is shown.
    case {relative(MN - MB, MB), relative(H0, MB)} of
        {Change, H} when is_float(Change), is_float(H), abs(Change) + H < ?MAX_FLOAT / 2 ->
            {Change, {Change - H, Change + H}, welch};
        {Change, _} ->
            {Change, undefined, none}
    end.

relative(X, MB) ->
    case abs(MB) >= 1.0 orelse abs(X) < abs(MB) * (?MAX_FLOAT / 4) of
        true -> X / abs(MB);
        false -> undefined
    end.

%% @doc Welch's unequal-variance t test of `New' vs `Base' (two-sided).
%% Both samples need at least two values. Returns the statistic, the
%% Satterthwaite degrees of freedom and the p-value; `se2' is the
%% variance of the difference of the means (`se2_base' + `se2_new').
-spec welch([number(), ...], [number(), ...]) ->
          #{t := float(), df := df(), p_value := float(),
            mean_base := float(), mean_new := float(),
            se2_base := float(), se2_new := float(), se2 := float()}.
welch([_, _ | _] = Base, [_, _ | _] = New) ->
    welch(Base, New, 0.0).

%% Welch's test with a known variance `Known' added to that of the
%% difference (the between-run term of compare/3's `run_noise'): it
%% widens the standard error and leaves the degrees of freedom those of
%% the sampled part. (Satterthwaite's df over the sum, with the known
%% term counted as exact, would rise with it: at 3 values a side a term
%% of the sampled se's size takes df from 2 to about 8 and the 99% t
%% from 9.9 to 3.4, so adding noise could turn "no difference" into a
%% verdict. With the df fixed, a larger term can only lower |t| and widen
%% the interval: the p-value never falls, the interval never shrinks.)
welch(Base, New, Known) ->
    NB = length(Base),
    NN = length(New),
    MB = mean(Base),
    MN = mean(New),
    S1 = variance(Base) / NB,
    S2 = variance(New) / NN,
    Se2 = S1 + S2 + Known,
    Diff = MN - MB,
    {T, Df, P} =
        case Se2 == 0.0 of
            true when Diff == 0.0 -> {0.0, infinity, 1.0};
            %% No spread at all and different means: the difference is
            %% certain, as far as these samples can tell.
            true -> {float(sign(Diff)) * ?MAX_FLOAT, infinity, 0.0};
            false ->
                Df0 = sampled_df(S1, S2, NB, NN),
                T0 = Diff / math:sqrt(Se2),
                {T0, Df0, min(1.0, 2 * t_sf(abs(T0), Df0))}
        end,
    #{t => T, df => Df, p_value => P, mean_base => MB, mean_new => MN,
      se2_base => S1, se2_new => S2, se2 => Se2}.

%% Satterthwaite's df of the sampled variance S1 + S2, with the shares of
%% the sum (each =< 1) so that nothing is squared that could overflow. No
%% sampled spread at all (the known term alone): the normal's.
sampled_df(S1, S2, _NB, _NN) when S1 + S2 == 0.0 ->
    infinity;
sampled_df(S1, S2, NB, NN) ->
    F1 = S1 / (S1 + S2),
    F2 = S2 / (S1 + S2),
    case F1 * F1 / (NB - 1) + F2 * F2 / (NN - 1) of
        Inv when Inv < 1 / ?DF_NORMAL -> infinity;
        Inv -> 1 / Inv
    end.

%% @doc Two-sided Mann-Whitney U (Wilcoxon rank-sum) test of `New' vs
%% `Base'. Exact permutation distribution of the rank sum (ties handled by
%% mid-ranks) when both samples have at most 10 values; otherwise the
%% normal approximation with tie correction and continuity correction.
%% `u' is the U statistic of `New'; `direction' is 1 when New tends to be
%% larger, -1 when smaller, 0 when neither.
-spec mann_whitney([number(), ...], [number(), ...]) ->
          #{u := float(), p_value := float(), method := exact | normal,
            direction := -1 | 0 | 1}.
mann_whitney([_ | _] = Base, [_ | _] = New) ->
    NB = length(Base),
    NN = length(New),
    N = NB + NN,
    Tagged = lists:sort([{float(X), base} || X <- Base] ++
                            [{float(X), new} || X <- New]),
    %% Doubled mid-ranks are integers: exact arithmetic for the exact test.
    Ranked = rank2(Tagged),
    R2New = lists:sum([R || {R, new} <- Ranked]),
    Mu2 = NN * (N + 1),
    U = R2New / 2 - NN * (NN + 1) / 2,
    Direction = sign(R2New - Mu2),
    {P, Method} =
        case NB =< 10 andalso NN =< 10 of
            true ->
                {exact_rank_sum_p([R || {R, _} <- Ranked], NN,
                                  abs(R2New - Mu2)), exact};
            false ->
                {normal_rank_sum_p(Tagged, NB, NN, U), normal}
        end,
    #{u => float(U), p_value => P, method => Method, direction => Direction}.

%% Sorted [{X, Tag}] -> [{DoubledRank, Tag}].
rank2(Tagged) -> rank2(Tagged, 1, []).

rank2([], _, Acc) -> lists:reverse(Acc);
rank2([{X, _} | _] = L, Pos, Acc) ->
    {Ties, Rest} = lists:splitwith(fun({Y, _}) -> Y == X end, L),
    K = length(Ties),
    R2 = 2 * Pos + K - 1,           % (first + last) position
    rank2(Rest, Pos + K, [{R2, Tag} || {_, Tag} <- Ties] ++ Acc).

%% P(|S - mu| >= D) where S is the doubled rank sum of K values drawn
%% without replacement from the pooled doubled ranks.
exact_rank_sum_p(Ranks, K, D) ->
    Mu2 = K * (length(Ranks) + 1),
    Dist = lists:foldl(
             fun(R, Acc) ->
                     maps:fold(
                       fun({J, S}, C, A) when J < K ->
                               maps:update_with({J + 1, S + R},
                                                fun(V) -> V + C end, C, A);
                          (_, _, A) -> A
                       end, Acc, Acc)
             end, #{{0, 0} => 1}, Ranks),
    {Hit, Total} = maps:fold(
                     fun({J, S}, C, {H, T}) when J =:= K ->
                             case abs(S - Mu2) >= D of
                                 true -> {H + C, T + C};
                                 false -> {H, T + C}
                             end;
                        (_, _, Acc) -> Acc
                     end, {0, 0}, Dist),
    min(1.0, Hit / Total).

normal_rank_sum_p(Tagged, NB, NN, U) ->
    N = NB + NN,
    TieSum = tie_sum([X || {X, _} <- Tagged]),
    Var = NB * NN / 12 * ((N + 1) - TieSum / (N * (N - 1))),
    Dev = abs(U - NB * NN / 2),
    case Var =< 0.0 of
        true -> 1.0;
        false ->
            Z = max(0.0, Dev - 0.5) / math:sqrt(Var),
            min(1.0, math:erfc(Z / math:sqrt(2)))
    end.

%% Sum of t^3 - t over groups of tied values (input sorted).
tie_sum(Sorted) -> tie_sum(Sorted, 0).

tie_sum([], Acc) -> Acc;
tie_sum([X | _] = L, Acc) ->
    {Ties, Rest} = lists:splitwith(fun(Y) -> Y == X end, L),
    T = length(Ties),
    tie_sum(Rest, Acc + T * T * T - T).

%%====================================================================
%% Stopping rule
%%====================================================================

%% @doc The engine's stopping rule (`--ci'/`--rel-ci', `--cv'): true when
%% there are at least `min' samples (default 3) and every given target
%% holds: the interval of the mean that {@link summary/2} reports
%% (`ci_mean': on the log scale for positive samples, else Student's)
%% reaches at most `rel_ci' of |mean| on either side, and the coefficient
%% of variation is at most `cv'. One interval both stops the run and is
%% printed. With fewer than 3 samples there is no interval: `rel_ci' does
%% not hold. With no
%% target set, only `min' counts. Instead of the samples, a map with the
%% count (`n' or `count'), `mean' and `sd' may be given, e.g. a
%% {@link summary/1} or a `beamlab_stats_reservoir:summary/1', so that
%% long runs need not rescan every sample.
-spec converged([number()] | #{n => non_neg_integer(),
                               count => non_neg_integer(),
                               mean := number() | undefined, sd := number(),
                               _ => _},
                #{rel_ci => float() | undefined, cv => float() | undefined,
                  min => non_neg_integer(), confidence => float()}) ->
          boolean().
converged(Samples, Opts) when is_list(Samples), is_map(Opts) ->
    N = length(Samples),
    converged(N, Opts, fun() ->
                               Fs = to_floats(Samples),
                               Min = lists:min(Fs),
                               {M, Sd} = mean_sd(Fs, N, Min, lists:max(Fs)),
                               {M, Sd, Min > 0}
                       end);
converged(#{mean := Mean, sd := Sd} = Stats, Opts) when is_map(Opts) ->
    N = case Stats of
            #{n := N0} -> N0;
            #{count := N0} -> N0
        end,
    %% Positive when the summary says its minimum is.
    Positive = case Stats of
                   #{min := Min} when is_number(Min) -> Min > 0;
                   _ -> false
               end,
    converged(N, Opts, fun() -> {float(Mean), float(Sd), Positive} end).

converged(N, Opts, MeanSd) ->
    Min = max(1, maps:get(min, Opts, 3)),
    RelCi = maps:get(rel_ci, Opts, undefined),
    CvT = maps:get(cv, Opts, undefined),
    case N >= Min of
        false -> false;
        true when RelCi =:= undefined, CvT =:= undefined -> true;
        true ->
            {Mean, Sd, Positive} = MeanSd(),
            CiOk = RelCi =:= undefined orelse
                (N >= ?MIN_INTERVAL_N andalso rel_ci(Mean, Sd, N, Positive, confidence(Opts)) =< RelCi),
            CvOk = CvT =:= undefined orelse
                (N >= 2 andalso rel(Sd, Mean) =< CvT),
            CiOk andalso CvOk
    end.

%% The wider side of ci_mean relative to |mean|: on the log scale (mean */
%% F) the upper side, F - 1; Student's is symmetric.
rel_ci(Mean, Sd, N, true, Conf) when Mean > 0 ->
    safe_exp(mul_sat(t_quantile((1 + Conf) / 2, N - 1), cv(Sd, Mean) / math:sqrt(N))) - 1;
rel_ci(Mean, Sd, N, _, Conf) ->
    rel(half_width(Sd, N, Conf), Mean).

%% X / |Mean|, where 0/0 is 0 and X/0 is "infinitely large".
rel(X, _Mean) when X == 0.0 -> 0.0;
rel(_X, Mean) when Mean == 0.0 -> ?MAX_FLOAT;
rel(X, Mean) ->
    try X / abs(Mean)
    catch error:badarith -> ?MAX_FLOAT
    end.

%%====================================================================
%% Distributions
%%====================================================================

%% @doc Standard normal cumulative distribution function.
-spec normal_cdf(number()) -> float().
normal_cdf(X) when is_number(X) ->
    0.5 * math:erfc(-X / math:sqrt(2)).

%% @doc Inverse of the standard normal CDF for `P' in (0, 1): a rational
%% starting approximation refined by Halley steps on `erfc' (accurate to a
%% few ulps for P >= 1e-300).
-spec normal_quantile(float()) -> float().
normal_quantile(P) when is_number(P), P > 0, P < 1 ->
    if P == 0.5 -> 0.0;
       P < 0.5 -> lower_normal_quantile(float(P));
       true -> -lower_normal_quantile(1 - P)
    end.

%% Q in (0, 0.5): returns x <= 0 with Phi(x) = Q.
lower_normal_quantile(Q) ->
    %% Abramowitz & Stegun 26.2.23 (|error| < 4.5e-4) as the start.
    T = math:sqrt(-2 * math:log(Q)),
    X0 = -(T - (2.515517 + 0.802853 * T + 0.010328 * T * T) /
               (1 + 1.432788 * T + 0.189269 * T * T + 0.001308 * T * T * T)),
    case Q < 1.0e-300 of
        true -> X0;
        false -> halley(X0, Q, 3)
    end.

halley(X, _Q, 0) -> X;
halley(X, Q, K) ->
    E = 0.5 * math:erfc(-X / math:sqrt(2)) - Q,
    U = E * math:sqrt(2 * math:pi()) * math:exp(X * X / 2),
    halley(X - U / (1 + X * U / 2), Q, K - 1).

%% @doc Student's t cumulative distribution function with `DF' degrees of
%% freedom (any positive real, or `infinity' for the normal).
-spec t_cdf(number(), df()) -> float().
t_cdf(X, Df) when is_number(X) ->
    case X >= 0 of
        true -> 1 - t_sf(X, Df);
        false -> t_sf(-X, Df)
    end.

%% Upper tail P(T > X), X >= 0, accurate in the far tail.
t_sf(X, Df) when Df =:= infinity; Df > ?DF_NORMAL ->
    0.5 * math:erfc(X / math:sqrt(2));
t_sf(X, Df) when is_number(Df), Df > 0 ->
    X2 = float(X) * X,
    %% x = df / (df + t^2) computed without cancellation for huge t.
    Z = case X2 > Df of
            true -> 1 / (1 + X2 / Df);
            false -> Df / (Df + X2)
        end,
    0.5 * reg_inc_beta(Df / 2, 0.5, Z).

%% @doc Quantile of Student's t with `DF' degrees of freedom for `P' in
%% (0, 1): safeguarded Newton iteration on the upper tail, started from the
%% normal quantile. `t_quantile(0.975, 10)' is 2.228...
-spec t_quantile(float(), df()) -> float().
t_quantile(P, Df) when is_number(P), P > 0, P < 1,
                       Df =:= infinity orelse (is_number(Df) andalso Df > 0) ->
    if Df =:= infinity -> normal_quantile(P);
       P == 0.5 -> 0.0;
       P > 0.5 -> upper_t_quantile(1 - P, Df);
       true -> -upper_t_quantile(float(P), Df)
    end.

%% Q in (0, 0.5): the t > 0 with P(T > t) = Q.
upper_t_quantile(Q, Df) when Df > ?DF_NORMAL ->
    -lower_normal_quantile(Q);
upper_t_quantile(Q, Df) when Df == 1 ->
    1 / math:tan(math:pi() * Q);
upper_t_quantile(Q, Df) when Df == 2 ->
    A = 1 - 2 * Q,
    math:sqrt(2 * A * A / (4 * Q * (1 - Q)));
upper_t_quantile(Q, Df) ->
    Z = -lower_normal_quantile(Q),
    %% Cornish-Fisher first term as the start.
    X0 = Z + (Z * Z * Z + Z) / (4 * Df),
    Hi = bracket_hi(Q, Df, max(X0, 1.0)),
    LogC = lgamma((Df + 1) / 2) - lgamma(Df / 2) - 0.5 * math:log(Df * math:pi()),
    newton_t(min(X0, Hi), 0.0, Hi, Q, Df, LogC, 200).

bracket_hi(Q, Df, X) ->
    case t_sf(X, Df) < Q of
        true -> X;
        false -> bracket_hi(Q, Df, X * 2)
    end.

newton_t(X, _Lo, _Hi, _Q, _Df, _LogC, 0) -> X;
newton_t(X, Lo, Hi, Q, Df, LogC, K) ->
    newton_t(X, t_sf(X, Df) - Q, Lo, Hi, Q, Df, LogC, K).

newton_t(X, F, _Lo, _Hi, _Q, _Df, _LogC, _K) when F == 0.0 -> X;
newton_t(X, F, Lo, Hi, Q, Df, LogC, K) ->
    %% F = sf(X) - Q is decreasing in X.
    {Lo1, Hi1} = if F > 0 -> {X, Hi};
                    true -> {Lo, X}
                 end,
    Pdf = math:exp(LogC - (Df + 1) / 2 * math:log(1 + X * X / Df)),
    Newton = case Pdf > 0.0 of
                 true -> X + F / Pdf;
                 false -> -1.0
             end,
    Next = case Newton > Lo1 andalso Newton < Hi1 of
               true -> Newton;
               false -> (Lo1 + Hi1) / 2
           end,
    case abs(Next - X) =< 1.0e-14 * abs(X) of
        true -> Next;
        false -> newton_t(Next, Lo1, Hi1, Q, Df, LogC, K - 1)
    end.

%% Regularized incomplete beta I_x(a, b) by its continued fraction
%% (modified Lentz), using the symmetry I_x(a,b) = 1 - I_{1-x}(b,a) where
%% the fraction converges slowly.
reg_inc_beta(_A, _B, X) when X =< 0.0 -> 0.0;
reg_inc_beta(_A, _B, X) when X >= 1.0 -> 1.0;
reg_inc_beta(A, B, X) ->
    LogFront = lgamma(A + B) - lgamma(A) - lgamma(B)
        + A * math:log(X) + B * math:log(1 - X),
    case X < (A + 1) / (A + B + 2) of
        true -> exp0(LogFront) * beta_cf(A, B, X) / A;
        false -> 1 - exp0(LogFront) * beta_cf(B, A, 1 - X) / B
    end.

exp0(X) when X < -745.0 -> 0.0;
exp0(X) -> math:exp(X).

-define(TINY, 1.0e-300).

beta_cf(A, B, X) ->
    D0 = nz(1 - (A + B) * X / (A + 1)),
    D = 1 / D0,
    beta_cf(A, B, X, 1, 1.0, D, D).

beta_cf(_A, _B, _X, M, _C, _D, H) when M > 10000 -> H;
beta_cf(A, B, X, M, C0, D0, H0) ->
    M2 = 2 * M,
    Even = M * (B - M) * X / ((A + M2 - 1) * (A + M2)),
    D1 = 1 / nz(1 + Even * D0),
    C1 = nz(1 + Even / C0),
    H1 = H0 * D1 * C1,
    Odd = -(A + M) * (A + B + M) * X / ((A + M2) * (A + M2 + 1)),
    D2 = 1 / nz(1 + Odd * D1),
    C2 = nz(1 + Odd / C1),
    Del = D2 * C2,
    H2 = H1 * Del,
    case abs(Del - 1) < 1.0e-15 of
        true -> H2;
        false -> beta_cf(A, B, X, M + 1, C2, D2, H2)
    end.

nz(X) when abs(X) < ?TINY -> ?TINY;
nz(X) -> X.

%% log Gamma(x) for x > 0 (Lanczos, g = 7, 9 terms; ~1e-15 relative).
lgamma(X) when X < 0.5 ->
    math:log(math:pi() / math:sin(math:pi() * X)) - lgamma(1 - X);
lgamma(X0) ->
    X = X0 - 1,
    Coefs = [676.5203681218851, -1259.1392167224028, 771.32342877765313,
             -176.61502916214059, 12.507343278686905, -0.13857109526572012,
             9.9843695780195716e-6, 1.5056327351493116e-7],
    {A, _} = lists:foldl(fun(C, {Acc, I}) -> {Acc + C / (X + I), I + 1} end,
                         {0.99999999999980993, 1}, Coefs),
    T = X + 7.5,
    0.5 * math:log(2 * math:pi()) + (X + 0.5) * math:log(T) - T + math:log(A).

%%====================================================================
%% Internals
%%====================================================================

confidence(Opts) ->
    case maps:get(confidence, Opts, ?DEFAULT_CONFIDENCE) of
        C when is_number(C), C > 0, C < 1 -> float(C);
        C -> error({badarg, {confidence, C}})
    end.

to_floats(L) -> [float(X) || X <- L].

sign(X) when X > 0 -> 1;
sign(X) when X < 0 -> -1;
sign(_) -> 0.

sub(A, B) ->
    try A - B
    catch error:badarith -> ?MAX_FLOAT
    end.

%% A power of two bringing magnitude M near 1 when M is extreme, else 1.
scale(M) when M > ?LARGE; M < ?SMALL, M > 0.0 ->
    math:pow(2, math:floor(math:log2(M)));
scale(_) -> 1.0.

mean_sd(Fs, N, Min, Max) ->
    {Mean, Sd, _} = moments(Fs, N, Min, Max),
    {Mean, Sd}.

%% Mean (compensated sum), sample sd and variance, rescaled when extreme;
%% the mean is clamped to [Min, Max] against rounding.
moments(Fs, N, Min, Max) ->
    S = scale(max(abs(Min), abs(Max))),
    Xs = case S == 1.0 of
             true -> Fs;
             false -> [X / S || X <- Fs]
         end,
    M = neumaier(Xs) / N,
    V = case N < 2 of
            true -> 0.0;
            false -> neumaier([(X - M) * (X - M) || X <- Xs]) / (N - 1)
        end,
    Mean = min(Max, max(Min, M * S)),
    {Mean, mul_sat(math:sqrt(V), S), mul_sat(mul_sat(V, S), S)}.

mul_sat(A, B) ->
    try A * B
    catch error:badarith -> ?MAX_FLOAT
    end.

%% Neumaier's compensated summation.
neumaier([]) -> 0.0;
neumaier([X | Xs]) -> neumaier(Xs, X, 0.0).

neumaier([], S, C) -> S + C;
neumaier([X | Xs], S, C) ->
    T = S + X,
    C1 = case abs(S) >= abs(X) of
             true -> C + ((S - T) + X);
             false -> C + ((X - T) + S)
         end,
    neumaier(Xs, T, C1).

cv(_Sd, Mean) when Mean == 0.0 -> 0.0;
cv(Sd, Mean) -> rel(Sd, Mean).

%% Type-7 percentile of a sorted tuple.
pct(T, N, P) ->
    H = (N - 1) * P / 100,
    Lo = min(N - 1, trunc(H)),
    F = H - Lo,
    XLo = element(Lo + 1, T),
    case F == 0.0 orelse Lo + 1 >= N of
        true -> XLo;
        false -> lerp(XLo, element(Lo + 2, T), F)
    end.

%% Interpolation kept inside [A, B] (A =< B), so percentiles are monotone
%% in P even with rounding.
lerp(A, B, F) ->
    V = try A + F * (B - A)
        catch error:badarith -> A * (1 - F) + B * F
        end,
    min(B, max(A, V)).

ci_mean(_Sorted, Mean, _Sd, N, _Min, _Conf) when N < ?MIN_INTERVAL_N ->
    {{Mean, Mean}, none};
ci_mean(_Sorted, Mean, Sd, N, Min, Conf) when Min > 0 ->
    %% On the log scale (delta method): ln(mean) has standard error about
    %% cv/sqrt(n), so the interval is mean */ exp(t * cv / sqrt(n)). It is
    %% positive, contains the mean, and is wider above it than below, as
    %% the interval of a time, a rate or a size should be.
    F = safe_exp(mul_sat(t_quantile((1 + Conf) / 2, N - 1), cv(Sd, Mean) / math:sqrt(N))),
    {{Mean / F, mul_sat(Mean, F)}, log_delta};
ci_mean(_Sorted, Mean, Sd, N, Min, Conf) when Min == 0 ->
    %% Non-negative with a zero (a rate's second in which nothing was
    %% sent): no log scale, and Student's interval stops at zero, where
    %% the quantity does (an amqp run printed `sent ... ±315%').
    H = half_width(Sd, N, Conf),
    {{max(0.0, sat_add(Mean, -H)), sat_add(Mean, H)}, student};
ci_mean(_Sorted, Mean, Sd, N, _Min, Conf) ->
    H = half_width(Sd, N, Conf),
    {{sat_add(Mean, -H), sat_add(Mean, H)}, student}.

safe_exp(X) when X > 709.0 -> ?MAX_FLOAT;
safe_exp(X) when X < -745.0 -> 0.0;
safe_exp(X) -> math:exp(X).

half_width(_Sd, N, _Conf) when N < 2 -> 0.0;
half_width(Sd, N, Conf) ->
    mul_sat(t_quantile((1 + Conf) / 2, N - 1), Sd / math:sqrt(N)).

sat_add(A, B) ->
    try A + B
    catch error:badarith when B > 0 -> ?MAX_FLOAT;
          error:badarith -> -?MAX_FLOAT
    end.

%% Distribution-free interval for the median from order statistics: the
%% narrowest symmetric pair (X(j), X(n+1-j)) whose coverage
%% P(X(j) =< median =< X(n+1-j)) = 1 - 2 P(Bin(n, 1/2) =< j-1) is >= Conf.
%% Returns the interval, whether the coverage reached Conf, and the
%% coverage.
ci_median(T, 1, _Conf) ->
    X = element(1, T),
    {{X, X}, false, 0.0};
ci_median(T, N, Conf) ->
    Alpha2 = (1 - Conf) / 2,
    case median_rank(N, Alpha2) of
        {0, Tail} -> {{element(1, T), element(N, T)}, false, 1 - 2 * Tail};
        {J, Tail} -> {{element(J, T), element(N + 1 - J, T)}, true, 1 - 2 * Tail}
    end.

%% {J, P(Bin(n,1/2) =< J-1)} for the largest J >= 1 with that probability
%% =< Alpha2, or {0, P(Bin = 0)} when even J = 1 fails. Binomial terms are
%% accumulated in log space (n may be large).
median_rank(N, Alpha2) ->
    LogHalfN = -N * math:log(2),
    Cdf0 = exp0(LogHalfN),
    median_rank(N, Alpha2, 0, LogHalfN, Cdf0, Cdf0).

%% Cdf = P(Bin =< I), LogPmf = log P(Bin = I), Prev = P(Bin =< I-1).
median_rank(N, Alpha2, I, LogPmf, Cdf, Prev) ->
    case Cdf =< Alpha2 of
        true when I < (N - 1) div 2 ->
            LogPmf1 = LogPmf + math:log(N - I) - math:log(I + 1),
            median_rank(N, Alpha2, I + 1, LogPmf1, Cdf + exp0(LogPmf1), Cdf);
        true -> {I + 1, Cdf};
        false when I =:= 0 -> {0, Cdf};
        false -> {I, Prev}     % J - 1 = I - 1 was the last valid one
    end.

%% Tukey's fences; counts come from binary searches on the sorted tuple.
outliers(T, N, Q1, Q3, Iqr) ->
    Below = fun(F) -> count_below(T, F, 0, N) end,
    Above = fun(F) -> N - count_at_most(T, F, 0, N) end,
    #{low => Below(fence(Q1, -1.5, Iqr)), low_severe => Below(fence(Q1, -3, Iqr)),
      high => Above(fence(Q3, 1.5, Iqr)), high_severe => Above(fence(Q3, 3, Iqr))}.

%% Number of elements < F (resp. =< F) in the sorted tuple, searching the
%% half-open position range [Lo, Hi).
count_below(_T, _F, Lo, Lo) -> Lo;
count_below(T, F, Lo, Hi) ->
    Mid = (Lo + Hi) div 2,
    case element(Mid + 1, T) < F of
        true -> count_below(T, F, Mid + 1, Hi);
        false -> count_below(T, F, Lo, Mid)
    end.

count_at_most(_T, _F, Lo, Lo) -> Lo;
count_at_most(T, F, Lo, Hi) ->
    Mid = (Lo + Hi) div 2,
    case element(Mid + 1, T) =< F of
        true -> count_at_most(T, F, Mid + 1, Hi);
        false -> count_at_most(T, F, Lo, Mid)
    end.

fence(Q, K, Iqr) ->
    try Q + K * Iqr
    catch error:badarith when K > 0 -> ?MAX_FLOAT;
          error:badarith -> -?MAX_FLOAT
    end.
