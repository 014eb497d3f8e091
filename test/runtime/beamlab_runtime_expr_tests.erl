-module(beamlab_runtime_expr_tests).
-include_lib("eunit/include/eunit.hrl").

eval(Exprs, Bindings) ->
    {value, V, _} = erl_eval:exprs(Exprs, Bindings),
    V.

%% Several expressions, a deep list of text, bindings given by the caller.
parses_what_erl_eval_runs_test() ->
    {ok, Exprs} = beamlab_runtime_expr:parse(["X = lists:sum(L),", " {X, ", "length(L)}."]),
    ?assertEqual(2, length(Exprs)),
    ?assertEqual({6, 3}, eval(Exprs, [{'L', [1, 2, 3]}])).

%% A malformed text names its line and what is wrong, on one line.
scan_error_test() ->
    {error, {2, _} = R} = beamlab_runtime_expr:parse("A = 1,\n\"unterminated."),
    Line = unicode:characters_to_list(beamlab_runtime_expr:format_error(R)),
    ?assertMatch("expression text, line 2: " ++ _, Line),
    ?assertEqual(nomatch, string:find(Line, "\n")).

parse_error_test() ->
    {error, {3, Msg} = R} = beamlab_runtime_expr:parse("A = 1,\nB = 2,\nC = )."),
    ?assertEqual("syntax error before: ')'", Msg),
    ?assertEqual("expression text, line 3: syntax error before: ')'",
                 unicode:characters_to_list(beamlab_runtime_expr:format_error(R))).

%% No full stop: the text is incomplete.
no_dot_test() ->
    ?assertMatch({error, {1, _}}, beamlab_runtime_expr:parse("ok")).

format_error_of_any_term_test() ->
    ?assertEqual(nomatch, string:find(beamlab_runtime_expr:format_error(surprise), "\n")).
