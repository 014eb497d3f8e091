-module(beamlab_format_reason_tests).
%% One line for any reason: a module's own line when it is one, escaped
%% when a payload brought a line break or a terminal's escape, the term
%% printed when the module's clauses raise on it or return no text.
-include_lib("eunit/include/eunit.hrl").

line(F, R) -> unicode:characters_to_list(beamlab_format_reason:line(F, R)).

a_good_line_is_returned_as_it_is_test() ->
    Chars = ["no such file: ", <<"a.json"/utf8>>],
    ?assertEqual(Chars, beamlab_format_reason:line(fun(_) -> Chars end, x)).

a_raise_prints_the_term_test() ->
    F = fun({bad, K}) -> io_lib:format("~ts: bad", [K]) end,
    ?assertEqual("{bad,{1,2}}", line(F, {bad, {1, 2}})),
    ?assertEqual("other", line(F, other)),
    ?assertEqual("x: bad", line(F, {bad, "x"})).

what_is_not_text_prints_the_term_test() ->
    ?assertEqual("{oops,<<\"ÿ\">>}", line(fun({oops, B}) -> B end, {oops, <<255>>})),
    ?assertEqual("{t,[{}]}", line(fun({t, L}) -> ["x" | L] end, {t, [{}]})).

control_characters_are_escaped_test() ->
    F = fun({file, Name}) -> ["cannot read ", Name] end,
    ?assertEqual("cannot read a\\nb\\tc\\x{1B}[31m\\x{9B}", line(F, {file, [$a, $\n, $b, $\t, $c, 27, $[, $3, $1, $m, 16#9b]})),
    ?assertEqual("cannot read été", line(F, {file, <<"été"/utf8>>})).

the_term_is_one_line_and_bounded_test() ->
    Deep = lists:foldl(fun(_, Acc) -> {Acc} end, x, lists:seq(1, 100)),
    Line = unicode:characters_to_list(beamlab_format_reason:term({Deep, lists:seq(1, 1000), <<"a\nb">>, 'a\nb'})),
    ?assertNot(lists:any(fun(C) -> C < 32 end, Line)),
    ?assert(length(Line) < 400),
    ?assertEqual("\"a\\nb\"", unicode:characters_to_list(beamlab_format_reason:term("a\nb"))).
