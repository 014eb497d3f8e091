-module(beamlab_format_markdown_tests).
-include_lib("eunit/include/eunit.hrl").

table_alignment_test() ->
    ?assertEqual(<<"| name | mean |\n| --- | --: |\n| a | 1.5 |\n| b | 2 |\n">>,
                 beamlab_format_markdown:table([<<"name">>, <<"mean">>],
                                               [[<<"a">>, 1.5], [<<"b">>, 2]])).

escaping_test() ->
    ?assertEqual(<<"a\\|b">>, beamlab_format_markdown:cell(<<"a|b">>)),
    ?assertEqual(<<"one<br>two<br>three">>, beamlab_format_markdown:cell("one\ntwo\r\nthree")),
    ?assertEqual(<<"c:\\\\x">>, beamlab_format_markdown:cell(<<"c:\\x">>)),
    ?assertEqual(<<"send &lt;tag&gt;">>, beamlab_format_markdown:cell(<<"send <tag>">>)).

explicit_align_test() ->
    ?assertEqual(<<"| x |\n| :-: |\n| y |\n">>,
                 beamlab_format_markdown:table(["x"], [["y"]], [center])).
