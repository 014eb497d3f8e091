-module(smoke_SUITE).
%% The quick tier's Common Test group (scripts/test.sh --quick): a handful
%% of command lines through the built ./beamlab, each a few hundred
%% milliseconds, that cross every layer once: the dispatcher and its
%% help, a benchmark with its after-phase, a suite point, a matrix over a
%% fresh VM, saved documents compared and reported, and the one-line
%% errors of a user's mistake and of an inner command a matrix cannot run.
%% The full run (scripts/test.sh, CI) runs it too, with everything else.
-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-export([all/0, groups/0, suite/0]).
-export([help_and_version/1, run_with_after_phase/1, suite_point/1, matrix_fresh_vm/1,
         save_compare_report/1, one_line_errors/1]).

suite() -> [{timetrap, {minutes, 2}}].

all() -> [{group, smoke}].

groups() ->
    [{smoke, [parallel], [help_and_version, run_with_after_phase, suite_point, matrix_fresh_vm,
                          save_compare_report, one_line_errors]}].

cli(Args) ->
    beamlab_test_util:cli(Args).

doc(Out) ->
    {ok, Json} = beamlab_json:decode(Out),
    {ok, Doc} = beamlab_result:from_json(Json),
    Doc.

help_and_version(_Config) ->
    #{code := 0, out := Help} = cli(["help"]),
    [?assertNotEqual(nomatch, binary:match(Help, C))
     || C <- [<<"run">>, <<"suite">>, <<"matrix">>, <<"profile">>, <<"watch">>]],
    #{code := 0, out := Version} = cli(["--version"]),
    ?assertMatch(<<"beamlab ", _/binary>>, Version).

run_with_after_phase(_Config) ->
    #{code := 0, out := Out} = cli(["lists:seq(1, 100).", "-s", "2", "-d", "50", "--memory",
                                    "--reductions", "--format", "json"]),
    #{kind := bench, env := Env, benchmarks := [#{extra := #{<<"per_iteration">> := P}}]} = doc(Out),
    ?assert(map_size(Env) > 0),
    ?assertMatch(#{<<"words">> := _, <<"reductions">> := _}, P).

suite_point(_Config) ->
    #{code := 0, out := Out} = cli(["suite", "fib", "--param", "fib.n=12", "-n", "1", "--format", "json"]),
    #{kind := suite, benchmarks := [#{name := <<"fib">>, params := #{<<"n">> := 12}}]} = doc(Out).

matrix_fresh_vm(_Config) ->
    #{code := 0, out := Out} = cli(["matrix", "--vm", "+S 1", "-n", "1", "--format", "json", "--",
                                    "ok.", "-s", "1", "-d", "50"]),
    #{kind := matrix, extra := #{<<"configs">> := [#{<<"schedulers_online">> := 1, <<"ok_runs">> := 1}]}} =
        doc(Out).

save_compare_report(_Config) ->
    Dir = beamlab_test_util:tmp_dir(?FUNCTION_NAME),
    [A, B] = [filename:join(Dir, N) || N <- ["a.json", "b.json"]],
    [#{code := 0} = cli(["ok.", "-s", "3", "-d", "20", "--save=" ++ F]) || F <- [A, B]],
    #{code := 0, out := Cmp} = cli(["compare", A, B, "--format", "json"]),
    {ok, #{<<"rows">> := [_]}} = beamlab_json:decode(Cmp),
    Html = filename:join(Dir, "r.html"),
    #{code := 0} = cli(["report", A, B, "-o", Html]),
    {ok, Page} = file:read_file(Html),
    ?assertMatch(<<"<!DOCTYPE html>", _/binary>>, Page).

one_line_errors(_Config) ->
    [begin
         R = #{code := 2, out := <<>>, err := Err} = cli(Args),
         ok = beamlab_test_util:assert_one_line_error(R),
         ?assertNotEqual(nomatch, binary:match(Err, Expect))
     end || {Args, Expect} <- [{["ok.", "-s", "0"], <<"-s">>},
                               {["matrix", "--format", "json", "--", "env"], <<"matrix cannot run 'env'">>},
                               {["nosuchcommand"], <<"unknown command">>}]],
    ok.
