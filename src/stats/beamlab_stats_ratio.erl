%%% @doc The ratio of a new configuration's figure to a base's (goodput,
%%% latency, CPU per message: positive quantities), with a confidence
%%% interval computed on the log scale: Welch's interval for the
%%% difference of the mean logarithms, exponentiated. The ratio is the
%%% ratio of geometric means; its interval can never go below zero and
%%% is not symmetric around it, as a ratio's should not be. One value on
%%% either side has no interval (`undefined'), and no verdict is drawn
%%% from it. Values that are not positive are left out (a logarithm needs
%%% them positive); with none left the ratio is `undefined'. Pure.
-module(beamlab_stats_ratio).

-export([ratio/3]).

-export_type([ratio/0]).

-type ratio() :: #{ratio := float() | undefined,
                   ci := {float(), float()} | undefined,
                   p_value := float() | undefined,
                   verdict := higher | lower | no_difference | too_few_samples,
                   n_base := non_neg_integer(), n_new := non_neg_integer()}.

%% @doc `New' over `Base' at confidence `Conf' (e.g. 0.95). The verdict
%% says whether the new figure is clearly higher, clearly lower (the
%% interval excludes 1) or neither.
-spec ratio([number()], [number()], float()) -> ratio().
ratio(Base0, New0, Conf) when Conf > 0, Conf < 1 ->
    Base = [math:log(X) || X <- Base0, is_number(X), X > 0],
    New = [math:log(X) || X <- New0, is_number(X), X > 0],
    Common = #{n_base => length(Base), n_new => length(New)},
    case {Base, New} of
        {[], _} -> Common#{ratio => undefined, ci => undefined, p_value => undefined,
                           verdict => too_few_samples};
        {_, []} -> Common#{ratio => undefined, ci => undefined, p_value => undefined,
                           verdict => too_few_samples};
        {[_], _} -> point(Base, New, Common);
        {_, [_]} -> point(Base, New, Common);
        _ ->
            #{mean_base := MB, mean_new := MN, se2_base := S1, se2_new := S2, df := Df,
              p_value := P} = beamlab_stats:welch(Base, New),
            D = MN - MB,
            H = case S1 + S2 == 0.0 of
                    true -> 0.0;
                    false -> beamlab_stats:t_quantile((1 + Conf) / 2, Df) * math:sqrt(S1 + S2)
                end,
            {Lo, Hi} = {exp(D - H), exp(D + H)},
            Verdict = if Lo > 1.0 -> higher;
                         Hi < 1.0 -> lower;
                         true -> no_difference
                      end,
            Common#{ratio => exp(D), ci => {Lo, Hi}, p_value => P, verdict => Verdict}
    end.

point(Base, New, Common) ->
    Common#{ratio => exp(mean(New) - mean(Base)), ci => undefined, p_value => undefined,
            verdict => too_few_samples}.

mean(L) -> lists:sum(L) / length(L).

%% Bounded: a log difference beyond +-700 would overflow exp/1.
exp(X) -> math:exp(max(-700.0, min(700.0, X))).
