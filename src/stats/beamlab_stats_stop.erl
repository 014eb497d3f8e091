%%% @doc The stopping rule of `--ci PCT' for the commands whose unit of
%%% replication is a repetition (`suite' points, `matrix' configurations,
%%% `check' rounds): keep repeating until the between-run interval of
%%% every item is within PCT of its estimate, or the time budget
%%% (`--max-time') is spent, or the repetitions reach their cap.
%%%
%%% An item's values are one per repetition (a point's repetitions, a
%%% configuration's fresh VMs' means). Its interval is the 95% interval of
%%% their mean as {@link beamlab_stats:converged/2} judges it (on the log
%%% scale for positive values, Student's otherwise; at least 3 values). A
%%% paired comparison (`check') is judged on its interval of the change:
%%% the ratio New/Base's interval relative to the ratio.
%%%
%%% Core: pure, it calls nothing above it.
-module(beamlab_stats_stop).

-export([met/3, paired_met/2, unmet/3, decide/1, line/4, line/5]).

-type reason() :: converged | max_time | max_repeat.
-type state() :: #{ci := float(),                  % the target: a fraction, 0.02 = 2%
                   elapsed := non_neg_integer(),   % ms since the repetitions began
                   max_time := pos_integer(),      % ms: the budget
                   repetitions := non_neg_integer(),
                   min := pos_integer(),           % repetitions before the rule is judged
                   max_repeat := pos_integer(),
                   unmet := [term()]}.             % the items not yet within the target
-export_type([reason/0, state/0]).

%% The fewest values an interval is judged on.
-define(MIN_VALUES, 3).

%% @doc Whether the 95% interval of the mean of `Values' is within `Pct'
%% of it (on both sides), with at least `Min' (and never fewer than 3)
%% values.
-spec met([number()], float(), non_neg_integer()) -> boolean().
met(Values, Pct, Min) when is_list(Values), is_number(Pct) ->
    Values =/= [] andalso
        beamlab_stats:converged(Values, #{rel_ci => Pct, min => max(?MIN_VALUES, Min)}).

%% @doc Whether a paired comparison's interval of the change (`ci', a
%% fraction of the base) is within `Pct' of the estimated ratio
%% `1 + change' on both sides.
-spec paired_met(#{change := number() | undefined, ci := {number(), number()} | undefined, _ => _},
                 float()) -> boolean().
paired_met(#{change := C, ci := {Lo, Hi}}, Pct) when is_number(C), is_number(Lo), is_number(Hi), C > -1 ->
    max(Hi - C, C - Lo) / (1 + C) =< Pct;
paired_met(_, _Pct) ->
    false.

%% @doc The items (`Key => Values') whose interval is not yet within `Pct'.
-spec unmet(#{term() => [number()]}, float(), non_neg_integer()) -> [term()].
unmet(Items, Pct, Min) ->
    [K || {K, Vs} <- lists:sort(maps:to_list(Items)), not met(Vs, Pct, Min)].

%% @doc What to do after a repetition: go on, or stop and why. The rule is
%% judged once `min' repetitions are done: every item met (`unmet' is
%% empty) stops as `converged'; else the budget spent stops as
%% `max_time', the repetitions at their cap as `max_repeat'.
-spec decide(state()) -> continue | {stop, reason()}.
decide(#{repetitions := R, min := Min, unmet := Unmet, elapsed := Elapsed, max_time := Budget,
         max_repeat := Cap}) ->
    if
        R >= Min, Unmet =:= [] -> {stop, converged};
        Elapsed >= Budget -> {stop, max_time};
        R >= Cap -> {stop, max_repeat};
        true -> continue
    end.

%% @doc The line that says what ended the repetitions (`Reason' as the
%% document records it), for the target `Pct' (a fraction) and what did
%% not meet it (`Unmet', their names), `Pm' the plus-minus sign the
%% output uses; empty for no rule (`null'). The intervals judged are 95%
%% intervals ({@link line/5} for another level).
-spec line(reason() | max_samples | interrupted | binary() | null, number() | null, [unicode:chardata()],
           string()) ->
          unicode:chardata().
line(Reason, Pct, Unmet, Pm) ->
    line(Reason, Pct, Unmet, Pm, "95%").

%% @doc {@link line/4} for intervals of the level `Level' (`"99.75%"'):
%% `check' judges each entry's interval at the family's level.
-spec line(reason() | max_samples | interrupted | binary() | null, number() | null, [unicode:chardata()],
           string(), unicode:chardata()) ->
          unicode:chardata().
line(Reason, Pct, Unmet, Pm, Level) when is_binary(Reason) ->
    line(case Reason of
             <<"converged">> -> converged;
             <<"max_time">> -> max_time;
             <<"max_repeat">> -> max_repeat;
             <<"max_samples">> -> max_samples;
             <<"interrupted">> -> interrupted;
             _ -> null
         end, Pct, Unmet, Pm, Level);
line(converged, Pct, _Unmet, Pm, Level) ->
    io_lib:format("stopped: confident (every ~ts interval within ~ts of its estimate)~n",
                  [Level, pm(Pct, Pm)]);
line(max_time, Pct, Unmet, Pm, _Level) ->
    io_lib:format("stopped: budget spent before ~ts (--max-time; not within it: ~ts)~n",
                  [pm(Pct, Pm), names(Unmet)]);
line(max_repeat, Pct, Unmet, Pm, _Level) ->
    io_lib:format("stopped: repetition cap reached before ~ts (not within it: ~ts)~n", [pm(Pct, Pm), names(Unmet)]);
line(max_samples, Pct, _Unmet, Pm, _Level) ->
    %% (run's own cap)
    io_lib:format("stopped: --max-samples reached before ~ts~n", [pm(Pct, Pm)]);
line(interrupted, Pct, _Unmet, Pm, _Level) ->
    io_lib:format("stopped: interrupted before ~ts~n", [pm(Pct, Pm)]);
line(_, _Pct, _Unmet, _Pm, _Level) ->
    "".

pm(Pct, Pm) when is_number(Pct) ->
    X = Pct * 100,
    Text = case abs(X - round(X)) < 1.0e-9 of
               true -> integer_to_list(round(X));
               false -> float_to_list(float(X), [{decimals, 2}, compact])
           end,
    [Pm, Text, $%];
pm(_, _Pm) ->
    "the target".

names([]) -> "-";
names(Unmet) ->
    Shown = lists:sublist(Unmet, 5),
    [lists:join(", ", Shown), case length(Unmet) - length(Shown) of
                                  0 -> "";
                                  More -> io_lib:format(" and ~b more", [More])
                              end].
