-module(beamlab_format_spark_tests).
-include_lib("eunit/include/eunit.hrl").

line_unicode_test() ->
    ?assertEqual(unicode:characters_to_binary([16#2581, 16#2583, 16#2588]),
                 beamlab_format_spark:line([0, 3, 10])).

line_ascii_test() ->
    ?assertEqual(<<"_:#">>, beamlab_format_spark:line([0, 4, 10], #{ascii => true})).

flat_line_is_mid_height_test() ->
    ?assertEqual(<<"::">>, beamlab_format_spark:line([3, 3], #{ascii => true})).

line_squeezes_to_width_test() ->
    L = beamlab_format_spark:line(lists:seq(1, 1000), #{width => 20}),
    ?assertEqual(20, string:length(L)),
    ?assertEqual(<<>>, beamlab_format_spark:line([])).

bars_test() ->
    [A, B] = beamlab_format_spark:bars([{0, 10, 4}, {10, 20, 8}],
                                       #{width => 4, ascii => true}),
    ?assertEqual(<<" 0 - 10 |##   4">>, A),
    ?assertEqual(<<"10 - 20 |#### 8">>, B).

bars_unicode_partial_block_test() ->
    [A, _] = beamlab_format_spark:bars([{0, 1, 1}, {1, 2, 16}], #{width => 1}),
    %% 1/16 of one column is half an eighth: rounds to one eighth block.
    ?assertEqual(unicode:characters_to_binary([$0, " - ", $1, " |", 16#258F, "  1"]), A).

use_unicode_test() ->
    Old = [{V, os:getenv(V)} || V <- ["LC_ALL", "LC_CTYPE", "LANG"]],
    try
        os:putenv("LC_ALL", "en_US.UTF-8"),
        ?assert(beamlab_format_spark:use_unicode(#{})),
        ?assertNot(beamlab_format_spark:use_unicode(#{no_color => true})),
        os:putenv("LC_ALL", "C"),
        ?assertNot(beamlab_format_spark:utf8_terminal())
    after
        [case Val of false -> os:unsetenv(V); _ -> os:putenv(V, Val) end || {V, Val} <- Old]
    end.
