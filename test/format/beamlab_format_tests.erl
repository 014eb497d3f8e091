-module(beamlab_format_tests).
-include_lib("eunit/include/eunit.hrl").

count_test() ->
    ?assertEqual("0", beamlab_format_units:count(0)),
    ?assertEqual("982", beamlab_format_units:count(982)),
    ?assertEqual("99999", beamlab_format_units:count(99999)),
    ?assertEqual("17266 Ki", beamlab_format_units:count(17266000)),
    ?assertEqual("1402 Mi", beamlab_format_units:count(1402000000)),
    ?assertEqual("0.500", beamlab_format_units:count(0.5)),
    ?assertEqual("0.00123", beamlab_format_units:count(0.00123)).

duration_test() ->
    ?assertEqual("0.423 ns", beamlab_format_units:duration(0.4234)),
    ?assertEqual("57.3 ns", beamlab_format_units:duration(57.3)),
    ?assertEqual("9999 ns", beamlab_format_units:duration(9999)),
    ?assertEqual("2001 us", beamlab_format_units:duration(2001000)),
    ?assertEqual("554 ms", beamlab_format_units:duration(554000000)),
    ?assertEqual("32.0 s", beamlab_format_units:duration(32.0e9)),
    ?assertEqual("15.0 ms", beamlab_format_units:duration(15, ms)),
    ?assertEqual("0 ns", beamlab_format_units:duration(0)).

other_units_test() ->
    ?assertEqual("512 B", beamlab_format_units:bytes(512)),
    ?assertEqual("24.2 MiB", beamlab_format_units:bytes(25330000)),
    ?assertEqual("1.23%", beamlab_format_units:percent(0.0123)),
    ?assertEqual("17266 Ki/s", beamlab_format_units:rate(17266000)),
    ?assertEqual("57.0 ns", beamlab_format_units:value(57, <<"ns">>)),
    ?assertEqual("40000 msg/s", beamlab_format_units:value(40000, <<"msg/s">>)),
    ?assertEqual("3 procs", beamlab_format_units:value(3, <<"procs">>)).

table_aligns_numbers_right_text_left_test() ->
    Out = lists:flatten(io_lib:format("~ts", [beamlab_format_table:render(
        ["Code", "||", "QPS"], [["rand:uniform().", 1, "17266 Ki"], ["x.", 12, "5"]])])),
    ?assertEqual("Code             ||       QPS\n"
                 "rand:uniform().   1  17266 Ki\n"
                 "x.               12         5\n", Out).

table_unicode_width_test() ->
    Out = lists:flatten(io_lib:format("~ts", [beamlab_format_table:render(["é", "b"], [["µs", "x"]])])),
    ?assertEqual("é   b\nµs  x\n", Out).

table_short_rows_are_padded_test() ->
    Out = lists:flatten(io_lib:format("~ts", [beamlab_format_table:render(["a", "b"], [["1"]], #{header => false})])),
    ?assertEqual("1\n", Out).

plural_test() ->
    ?assertEqual("scheduler", beamlab_format_units:plural(1, "scheduler")),
    ?assertEqual("schedulers", beamlab_format_units:plural(2, "scheduler")),
    ?assertEqual("repetitions", beamlab_format_units:plural(0, "repetition")).
