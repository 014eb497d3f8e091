-module(beamlab_stats_stop_tests).

-include_lib("eunit/include/eunit.hrl").

state(Over) ->
    maps:merge(#{ci => 0.05, elapsed => 0, max_time => 1000, repetitions => 3, min => 3,
                 max_repeat => 100, unmet => []}, Over).

met_tight_values_test() ->
    ?assert(beamlab_stats_stop:met([100, 101, 99, 100, 100.5], 0.02, 3)).

met_needs_three_values_test() ->
    %% Two identical values have no interval: never "confident".
    ?assertNot(beamlab_stats_stop:met([100, 100], 0.5, 1)),
    ?assertNot(beamlab_stats_stop:met([], 0.5, 0)),
    ?assert(beamlab_stats_stop:met([100, 100, 100], 0.01, 1)).

met_respects_min_test() ->
    ?assertNot(beamlab_stats_stop:met([100, 100, 100], 0.5, 5)).

met_wide_values_test() ->
    ?assertNot(beamlab_stats_stop:met([10, 100, 50, 5], 0.05, 3)).

unmet_names_the_wide_items_test() ->
    Items = #{<<"a">> => [100, 100.2, 99.9, 100.1], <<"b">> => [10, 100, 50]},
    ?assertEqual([<<"b">>], beamlab_stats_stop:unmet(Items, 0.05, 3)).

paired_met_test() ->
    ?assert(beamlab_stats_stop:paired_met(#{change => 0.0, ci => {-0.01, 0.01}}, 0.02)),
    ?assertNot(beamlab_stats_stop:paired_met(#{change => 0.0, ci => {-0.05, 0.01}}, 0.02)),
    %% relative to the ratio 1 + change: 0.08 each side of 2.0 is 4%
    ?assert(beamlab_stats_stop:paired_met(#{change => 1.0, ci => {0.92, 1.08}}, 0.05)),
    ?assertNot(beamlab_stats_stop:paired_met(#{change => 0.0, ci => undefined}, 0.5)),
    ?assertNot(beamlab_stats_stop:paired_met(#{change => undefined, ci => undefined}, 0.5)).

decide_converged_test() ->
    ?assertEqual({stop, converged}, beamlab_stats_stop:decide(state(#{}))).

decide_not_before_min_test() ->
    ?assertEqual(continue, beamlab_stats_stop:decide(state(#{repetitions => 2}))).

decide_budget_test() ->
    ?assertEqual({stop, max_time}, beamlab_stats_stop:decide(state(#{unmet => [x], elapsed => 1000}))),
    ?assertEqual(continue, beamlab_stats_stop:decide(state(#{unmet => [x], elapsed => 999}))).

decide_converged_wins_over_budget_test() ->
    ?assertEqual({stop, converged}, beamlab_stats_stop:decide(state(#{elapsed => 5000}))).

decide_cap_test() ->
    ?assertEqual({stop, max_repeat}, beamlab_stats_stop:decide(state(#{unmet => [x], repetitions => 100}))).

line_test() ->
    Text = fun(R, U) -> lists:flatten(io_lib:format("~ts", [beamlab_stats_stop:line(R, 0.02, U, "+-")])) end,
    ?assertEqual("stopped: budget spent before +-2% (--max-time; not within it: a, b)\n",
                 Text(<<"max_time">>, [<<"a">>, "b"])),
    ?assertMatch("stopped: confident" ++ _, Text(converged, [])),
    ?assertEqual("", Text(null, [])),
    ?assertMatch("stopped: budget spent before +-2.5% " ++ _,
                 lists:flatten(io_lib:format("~ts", [beamlab_stats_stop:line(max_time, 0.025, [], "+-")]))).

%% The confident line names the level of the intervals judged: 95% by
%% default, the family's for `check' (its table's "99.75% CI").
line_level_test() ->
    Text = fun(L) -> lists:flatten(io_lib:format("~ts", [L])) end,
    ?assertEqual("stopped: confident (every 95% interval within +-2% of its estimate)\n",
                 Text(beamlab_stats_stop:line(<<"converged">>, 0.02, [], "+-"))),
    ?assertEqual("stopped: confident (every 99.75% interval within +-2% of its estimate)\n",
                 Text(beamlab_stats_stop:line(<<"converged">>, 0.02, [], "+-", "99.75%"))),
    ?assertEqual("stopped: budget spent before +-2% (--max-time; not within it: a)\n",
                 Text(beamlab_stats_stop:line(max_time, 0.02, [<<"a">>], "+-", "99.75%"))).
