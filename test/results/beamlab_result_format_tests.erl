%%% The versioned result format as compare/report read it: version checks,
%%% property-based round trips of whole documents.
-module(beamlab_result_format_tests).
-include_lib("eunit/include/eunit.hrl").

doc() ->
    beamlab_results_fixtures:result(<<"bench">>, #{seconds => 3}).

version_older_and_current_accepted_test() ->
    {ok, Json} = beamlab_json:decode(beamlab_result:to_json(doc())),
    ?assertMatch({ok, #{kind := bench}}, beamlab_result:from_json(Json)),
    %% A reader accepts every version up to its own.
    Current = beamlab_result:version(),
    [?assertMatch({ok, _}, beamlab_result:from_json(Json#{<<"version">> => V}))
     || V <- lists:seq(1, Current)].

version_newer_rejected_test() ->
    Dir = beamlab_test_util:tmp_dir("version"),
    Path = filename:join(Dir, "new.json"),
    {ok, Json} = beamlab_json:decode(beamlab_result:to_json(doc())),
    Newer = beamlab_result:version() + 1,
    ok = file:write_file(Path, beamlab_json:encode(Json#{<<"version">> => Newer})),
    {error, Reason} = beamlab_result:load(Path),
    Msg = lists:flatten(beamlab_result:format_error(Reason)),
    ?assertNotEqual(nomatch, string:find(Msg, "newer than this beamlab reads")),
    ?assertEqual(1, length(string:split(Msg, "\n", all))).

not_a_result_rejected_test() ->
    ?assertEqual({error, not_a_result}, beamlab_result:from_json(#{<<"schema">> => <<"x">>})),
    ?assertEqual({error, not_a_result}, beamlab_result:from_json([1, 2])).

saved_document_compares_and_reports_test() ->
    %% What `--save' writes is exactly what compare and report consume.
    Dir = beamlab_test_util:tmp_dir("saved"),
    Path = filename:join(Dir, "a.json"),
    {ok, _} = beamlab_result:save(beamlab_result:bound_samples(doc(), 10), Path),
    {ok, Loaded} = beamlab_result:load(Path),
    {ok, Cmp} = beamlab_result_compare:compare([{<<"a">>, Loaded}, {<<"b">>, Loaded}]),
    %% Two single bench runs: within-run noise only, never a verdict.
    ?assertEqual([within_run_only], [maps:get(verdict, lists:last(maps:get(cells, R))) || R <- maps:get(rows, Cmp)]),
    {ok, Html} = beamlab_report_html:render([{<<"a">>, Loaded}]),
    ?assertNotEqual(nomatch, binary:match(Html, <<"id=\"beamlab-data\"">>)).

roundtrip_property_test_() ->
    {timeout, 60, ?_assert(proper:quickcheck(prop_beamlab_result:prop_roundtrip(),
                                             [{numtests, 100}, {to_file, user}]))}.

bounded_roundtrip_property_test_() ->
    {timeout, 60, ?_assert(proper:quickcheck(prop_beamlab_result:prop_bounded_roundtrip(),
                                             [{numtests, 100}, {to_file, user}]))}.

%% Issue 34: numbers beyond the bounds of limits/0 are refused with the
%% field's path (a 901-digit integer, 1.79e308, a subnormal sample); the
%% bounds themselves are read.
numbers_bounded_test() ->
    {ok, Json = #{<<"benchmarks">> := [B | Bs]}} = beamlab_json:decode(beamlab_result:to_json(doc())),
    With = fun(Samples) -> Json#{<<"benchmarks">> := [B#{<<"samples">> := Samples} | Bs]} end,
    Digits = list_to_integer(lists:duplicate(901, $9)),
    [?assertMatch({error, {bad_field, [<<"benchmarks">>, 0, <<"samples">>, 1], Why}}
                    when Why =:= out_of_range; Why =:= too_small,
                  beamlab_result:from_json(With([1, X])))
     || X <- [Digits, -Digits, 1.79e308, -1.0e61, 5.0e-324, -1.0e-61]],
    ?assertMatch({ok, _}, beamlab_result:from_json(With([1.0e60, -1.0e60, 1.0e-60, 0, 0.0]))),
    ?assertMatch({error, {bad_field, [<<"params">>, <<"x">>], out_of_range}},
                 beamlab_result:from_json(Json#{<<"params">> => #{<<"x">> => Digits}})),
    {error, R} = beamlab_result:from_json(With([1.79e308])),
    Msg = lists:flatten(beamlab_result:format_error(R)),
    ?assertNotEqual(nomatch, string:find(Msg, "benchmarks[0].samples[0] is out of range")).

%% #35: a benchmark says what it measures (`measure'); a document written
%% before the field is read with it where its benchmarks can tell
%% (`--metric cpu', a check's `G (metric)' entries), and without it for
%% the rest, as before; a measure given is kept as written, not guessed.
measure_of_older_documents_test() ->
    {ok, Json = #{<<"benchmarks">> := [B | _]}} = beamlab_json:decode(beamlab_result:to_json(doc())),
    Old = fun(Fields) -> maps:remove(<<"measure">>, maps:merge(B, Fields)) end,
    Read = fun(Bench) ->
                   {ok, #{benchmarks := [R]}} = beamlab_result:from_json(Json#{<<"benchmarks">> := [Bench]}),
                   maps:get(measure, R, none)
           end,
    ?assertEqual(<<"CPU time per iteration">>, Read(Old(#{<<"name">> => <<"ok.">>, <<"metric">> => <<"cpu">>}))),
    ?assertEqual(<<"CPU time per repetition">>,
                 Read(Old(#{<<"name">> => <<"fib/cpu">>, <<"group">> => <<"fib">>, <<"metric">> => <<"cpu">>}))),
    ?assertEqual(<<"wall-clock time per iteration">>,
                 Read(Old(#{<<"name">> => <<"work (time)">>, <<"group">> => <<"work">>, <<"metric">> => <<"time">>}))),
    ?assertEqual(<<"reductions per iteration">>,
                 Read(Old(#{<<"name">> => <<"work (reductions)">>, <<"group">> => <<"work">>,
                            <<"metric">> => <<"reductions">>}))),
    ?assertEqual(none, Read(Old(#{<<"name">> => <<"fib">>, <<"group">> => <<"fib">>, <<"metric">> => <<"time">>}))),
    ?assertEqual(<<"words">>, Read(B#{<<"metric">> => <<"cpu">>, <<"measure">> => <<"words">>})),
    ?assertMatch({error, {bad_field, [<<"benchmarks">>, 0, <<"measure">>], string}},
                 beamlab_result:from_json(Json#{<<"benchmarks">> := [B#{<<"measure">> => 1}]})).
