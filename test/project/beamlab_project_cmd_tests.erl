%%% A tool's output quoted in an error line (#34): readable text.
-module(beamlab_project_cmd_tests).
-include_lib("eunit/include/eunit.hrl").

%% rebar3's colours and other terminal escapes are removed; bytes that
%% are not UTF-8 do not crash the trimming; the last line is the one kept.
last_line_plain_test() ->
    Out = <<"first\n\e[0;31m===> \e[1mCompiling src/broken.erl failed\e[0m\e]0;title\a x\e(B \xff",
            226, 156, 147, "\r\n\n">>,
    ?assertEqual([<<"===> Compiling src/broken.erl failed x ", (unicode:characters_to_binary([255, 10003]))/binary>>],
                 beamlab_project_cmd:last_lines(Out, 1)),
    Msg = iolist_to_binary(beamlab_project_cmd:format_error({exit, "rebar3", 1, Out})),
    ?assertEqual(nomatch, binary:match(Msg, <<"\e">>)).

%% What a bench runner raises is shown with the user's frames only.
user_frames_test() ->
    Stack = [{x_bench, g, 1, [{file, "bench/x_bench.erl"}, {line, 4}]},
             {beamlab_gen_49d415f0, '$inner', 4, [{file, "beamlab_gen_49d415f0.erl"}, {line, 10}]},
             {beamlab_engine_after, calibrate, 4, []},
             {erl_eval, do_apply, 7, []}],
    Frames = beamlab_engine_code:user_frames(Stack),
    ?assertEqual([hd(Stack)], Frames),
    ?assertEqual(<<"error {bad,1} in x_bench:g/1 (x_bench.erl:4)">>,
                 iolist_to_binary(beamlab_engine_code:format_raised(error, {bad, 1}, Frames))).
