-module(beamlab_format_csv_tests).
-include_lib("eunit/include/eunit.hrl").

plain_fields_are_not_quoted_test() ->
    ?assertEqual(<<"a,1,2.5,,true\r\n">>,
                 beamlab_format_csv:encode([[<<"a">>, 1, 2.5, null, true]])).

quoting_rfc4180_test() ->
    ?assertEqual(<<"\"a,b\"">>, beamlab_format_csv:field(<<"a,b">>)),
    ?assertEqual(<<"\"say \"\"hi\"\"\"">>, beamlab_format_csv:field(<<"say \"hi\"">>)),
    ?assertEqual(<<"\"two\nlines\"">>, beamlab_format_csv:field("two\nlines")),
    ?assertEqual(<<"\"cr\rhere\"">>, beamlab_format_csv:field(<<"cr\rhere">>)),
    ?assertEqual(<<"caf", 16#c3, 16#a9>>, beamlab_format_csv:field("café")).

floats_read_back_exactly_test() ->
    F = 0.1 + 0.2,
    ?assertEqual(F, binary_to_float(beamlab_format_csv:field(F))).

decode_test() ->
    ?assertEqual({ok, [[<<"a">>, <<"b,c">>, <<>>], [<<"1">>, <<"x\"y">>, <<"\r\n">>]]},
                 beamlab_csv_decoder:decode(<<"a,\"b,c\",\r\n1,\"x\"\"y\",\"\r\n\"\r\n">>)),
    ?assertEqual({ok, [[<<"a">>], [<<"b">>]]}, beamlab_csv_decoder:decode(<<"a\nb">>)),
    ?assertEqual({ok, []}, beamlab_csv_decoder:decode(<<>>)).

decode_errors_test() ->
    {error, E1} = beamlab_csv_decoder:decode(<<"a\n\"open">>),
    ?assertEqual({unterminated_quote, 2}, E1),
    {error, E2} = beamlab_csv_decoder:decode(<<"\"a\"b,c">>),
    ?assertEqual({junk_after_quote, 1}, E2),
    ?assertMatch([_ | _], lists:flatten(beamlab_csv_decoder:format_error(E1))).

parse_back_property_test() ->
    ?assert(proper:quickcheck(prop_beamlab_csv:prop_parse_back(),
                              [{numtests, 300}, {to_file, user}])).

%% CSV injection: text that a spreadsheet would run as a formula is
%% neutralised; numbers, negative ones included, stay numbers.
formula_text_is_neutralised_test() ->
    [?assertEqual(<<"\"'", Text/binary, "\"">>, beamlab_format_csv:field(Text))
     || Text <- [<<"=1+2">>, <<"+1">>, <<"-cmd">>, <<"@SUM(A1)">>, <<"\tx">>]],
    ?assertEqual(<<"\"'=HYPERLINK(\"\"x\"\")\"">>, beamlab_format_csv:field(<<"=HYPERLINK(\"x\")">>)),
    ?assertEqual(<<"-5">>, beamlab_format_csv:field(-5)),
    ?assertEqual(<<"-2.5">>, beamlab_format_csv:field(-2.5)),
    ?assertEqual(<<"a=b">>, beamlab_format_csv:field(<<"a=b">>)).
