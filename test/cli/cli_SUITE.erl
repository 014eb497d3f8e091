%%% Command dispatch through the built escript: help, version, unknown
%%% commands and the one-line error contract.
-module(cli_SUITE).
-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-export([all/0, version/1, help/1, no_arguments/1, unknown_command/1, help_unknown/1,
         bad_option_is_usage_error/1, flags_before_code/1]).

all() ->
    [version, help, no_arguments, unknown_command, help_unknown, bad_option_is_usage_error,
     flags_before_code].

cli(Args) -> beamlab_test_util:cli(Args).

version(_) ->
    #{code := 0, out := Out} = cli(["--version"]),
    {match, _} = re:run(Out, "^beamlab \\d+\\.\\d+\\.\\d+ \\(OTP \\d+, erts [0-9.]+\\)\n$").

help(_) ->
    #{code := 0, out := Out} = cli(["help"]),
    [?assertNotEqual(nomatch, binary:match(Out, S)) || S <- [<<"Usage:">>, <<"Commands:">>, <<"beamlab help [COMMAND]">>]],
    #{code := 0, out := Out} = cli(["--help"]).

%% `beamlab' alone is a mistake like any other: one line on stderr with a
%% hint, exit 2, nothing on stdout (it printed the whole usage).
no_arguments(_) ->
    R = #{code := 2, err := Err, out := Out} = cli([]),
    beamlab_test_util:assert_one_line_error(R),
    ?assertEqual(<<>>, Out),
    ?assertMatch({_, _}, binary:match(Err, <<"see: beamlab help">>)).

unknown_command(_) ->
    R = #{code := 2, err := Err} = cli(["frobnicate"]),
    beamlab_test_util:assert_one_line_error(R),
    ?assertMatch({match, _}, re:run(Err, "unknown command 'frobnicate'")).

help_unknown(_) ->
    R = #{code := 2} = cli(["help", "nope"]),
    beamlab_test_util:assert_one_line_error(R).

bad_option_is_usage_error(_) ->
    R = #{code := 2, err := Err} = cli(["env", "--no-such-option"]),
    beamlab_test_util:assert_one_line_error(R),
    ?assertMatch({match, _}, re:run(Err, "unknown option '--no-such-option'")).

%% erlperf's synopsis puts the flags first: `beamlab -c 2 CODE' is the
%% bare form, and an unknown flag there is run's usage error.
flags_before_code(_) ->
    #{code := 0, out := Out} = cli(["-c", "2", "-d", "50", "-s", "1", "ok."]),
    ?assertMatch({match, _}, re:run(Out, "^ok\\.\\s+2\\s", [multiline])),
    R = #{code := 2, err := Err} = cli(["-x", "ok."]),
    beamlab_test_util:assert_one_line_error(R),
    ?assertMatch({match, _}, re:run(Err, "unknown option '-x' \\(see: beamlab help run\\)")).
