-module(beamlab_render_speedscope_tests).
%% A profile document in speedscope's file format: valid against its
%% schema, every stack and sample kept, frames shared.
-include_lib("eunit/include/eunit.hrl").

profile_doc() ->
    Doc = beamlab_results_fixtures:result(<<"bench">>),
    Doc#{kind := profile,
         extra := #{<<"profile">> => #{<<"subject">> => <<"hot \"loop\"">>, <<"samples">> => 10,
                                       <<"stacks">> => [[<<"scheduler;m:a/0;m:b/1">>, 6],
                                                        [<<"scheduler;m:a/0">>, 3],
                                                        [<<"dirty_io;erts_io">>, 1]]}}}.

stacks_and_weights_test() ->
    {ok, Json} = beamlab_render_speedscope:render(profile_doc()),
    {ok, #{<<"$schema">> := <<"https://www.speedscope.app/file-format-schema.json">>,
           <<"exporter">> := <<"beamlab@", _/binary>>,
           <<"shared">> := #{<<"frames">> := Frames},
           <<"profiles">> := [#{<<"type">> := <<"sampled">>, <<"name">> := <<"hot \"loop\"">>,
                                <<"unit">> := <<"none">>, <<"startValue">> := 0, <<"endValue">> := 10,
                                <<"samples">> := Samples, <<"weights">> := [6, 3, 1]}]}} =
        beamlab_json:decode(Json),
    Names = [N || #{<<"name">> := N} <- Frames],
    ?assertEqual([<<"scheduler">>, <<"m:a/0">>, <<"m:b/1">>, <<"dirty_io">>, <<"erts_io">>], Names),
    ?assertEqual([[<<"scheduler">>, <<"m:a/0">>, <<"m:b/1">>], [<<"scheduler">>, <<"m:a/0">>],
                  [<<"dirty_io">>, <<"erts_io">>]],
                 [[lists:nth(I + 1, Names) || I <- S] || S <- Samples]).

valid_against_schema_test_() ->
    {timeout, 60,
     fun() ->
             {ok, Json} = beamlab_render_speedscope:render(profile_doc()),
             File = filename:join(beamlab_test_util:tmp_dir("speedscope"), "p.speedscope.json"),
             ok = file:write_file(File, Json),
             ok = beamlab_test_util:json_schema_valid("speedscope.schema.json", File)
     end}.

no_profile_test() ->
    ?assertEqual({error, no_profile}, beamlab_render_speedscope:render(beamlab_results_fixtures:result(<<"bench">>))).
