%%% The escript's launcher line as rebar.config.script makes it from
%%% scripts/launcher.sh: valid sh, one line under escript's 1024-byte
%%% buffer, and the line the built ./beamlab carries.
-module(beamlab_launcher_tests).
-include_lib("eunit/include/eunit.hrl").

%% The line made from the script, as rebar3 gets it.
launcher_line() ->
    Root = beamlab_test_util:root(),
    Script = filename:join(Root, "rebar.config.script"),
    {ok, Config} = file:consult(filename:join(Root, "rebar.config")),
    {ok, Built} = file:script(Script, [{'CONFIG', Config}, {'SCRIPT', Script}]),
    {escript_comment, Line} = lists:keyfind(escript_comment, 1, Built),
    Line.

line_is_one_short_comment_line_test() ->
    Line = launcher_line(),
    %% (first the checks of what would end the VM before it runs, #34)
    ?assertMatch("%% 2>/dev/null; f(){ echo beamlab: $1>&2;exit 1;}; " ++ _, Line),
    ?assertNotEqual(nomatch, string:find(Line, "; exec 3<&0; ")),
    ?assertEqual([$\n], [C || C <- Line, C =:= $\n]),
    ?assertEqual($\n, lists:last(Line)),
    ?assert(length(Line) < 1023),
    %% ASCII only: length is the byte count.
    ?assert(lists:all(fun(C) -> C < 128 end, Line)).

%% The file and the line it makes parse as sh (`%%' is a command there).
launcher_is_valid_sh_test() ->
    Root = beamlab_test_util:root(),
    ?assertEqual("0", sh_n(filename:join([Root, "scripts", "launcher.sh"]))),
    Tmp = filename:join(Root, "_build/launcher-line.sh"),
    ok = file:write_file(Tmp, launcher_line()),
    try ?assertEqual("0", sh_n(Tmp))
    after file:delete(Tmp)
    end.

sh_n(File) ->
    string:trim(os:cmd("sh -n '" ++ File ++ "' 2>&1; echo $?")).

%% The built escript carries the line the script makes (scripts/test.sh
%% builds it before the unit tests); escript writes the comment marker
%% `%% ' in front of what follows the line's own `%%'.
built_escript_carries_the_line_test() ->
    Escript = filename:join(beamlab_test_util:root(), "beamlab"),
    case filelib:is_regular(Escript) of
        false -> ok;
        true ->
            {ok, Bin} = file:read_file(Escript),
            [<<"#!/bin/sh">>, Second | _] = binary:split(Bin, <<"\n">>, [global]),
            "%%" ++ Code = launcher_line(),
            ?assertEqual(<<"%% ", (list_to_binary(Code))/binary>>, <<Second/binary, "\n">>)
    end.
