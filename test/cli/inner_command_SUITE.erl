-module(inner_command_SUITE).
%% The inner-command policy of `matrix' and `profile' (#27 item 8),
%% through the escript: the inner command is parsed before anything
%% starts, so a command they cannot run, a help flag, an inner `--save' or
%% a mistake in the inner command's options is exit 2 with one line on
%% stderr naming what is allowed, stdout stays empty (only JSON under
%% --format json), and no VM is started (no progress line). `-h' after
%% `--' belongs to the inner command: `amqp -h URI' (PerfTest's URI) runs
%% the load, under matrix (and under profile, where perf is installed)
%% against a private RabbitMQ (scripts/rabbitmq.sh).
-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-export([all/0, groups/0, suite/0, init_per_group/2, end_per_group/2]).
-export([refused_before_anything_starts/1, inner_mistakes_are_usage_errors/1,
         allowed_commands_still_run/1, matrix_runs_amqp_with_h/1, profile_runs_amqp_with_h/1]).

%% The broker's port, chosen free when it starts (beamlab_test_util:
%% start_suite_rabbitmq/1): a fresh machine or a parallel run may hold any
%% fixed one.
-define(PORT, beamlab_test_util:suite_broker_port(?MODULE)).
-define(URI, "amqp://guest:guest@127.0.0.1:" ++ ?PORT ++ "/%2F").

suite() -> [{timetrap, {minutes, 5}}].

all() -> [refused_before_anything_starts, inner_mistakes_are_usage_errors, allowed_commands_still_run,
          {group, broker}].

groups() -> [{broker, [], [matrix_runs_amqp_with_h, profile_runs_amqp_with_h]}].

init_per_group(broker, Config) ->
    ok = beamlab_test_util:start_suite_rabbitmq(?MODULE),
    Config.

end_per_group(broker, _Config) ->
    beamlab_test_util:stop_suite_rabbitmq(?MODULE).

%% Commands that produce no experiment (env, compare, report, node), or
%% one the outer command cannot run inside it (watch in a matrix, a
%% matrix in a matrix, profile in profile): exit 2, one line naming the
%% commands allowed, nothing on stdout even with --format json.
refused_before_anything_starts(_Config) ->
    Cases = [{["matrix", "-n", "1", "--", "env"], "matrix cannot run 'env' (it runs: run, suite, amqp)"},
             {["matrix", "-n", "1", "--format", "json", "--", "compare", "a.json", "b.json"],
              "matrix cannot run 'compare'"},
             {["matrix", "--format", "json", "--", "report", "x.json", "-o", "x.html"], "matrix cannot run 'report'"},
             {["profile", "--", "node", "--name", "n@127.0.0.1"], "profile cannot run 'node' (it runs: run, suite, matrix, amqp)"},
             %% variants
             {["matrix", "-n", "1", "--format", "json", "--", "watch", "--node", "x@127.0.0.1"],
              "matrix cannot run 'watch'"},
             {["matrix", "--vm", "+S 1", "--", "matrix", "--", "run", "ok."], "a matrix cannot run a matrix"},
             {["profile", "--format", "json", "--", "env", "--format", "json"], "profile cannot run 'env'"},
             {["profile", "--", "report", "a.json"], "profile cannot run 'report'"},
             {["profile", "--", "profile", "--", "run", "ok."], "profile cannot profile itself"},
             {["matrix", "-n", "1", "--", "help"], "matrix cannot run 'help'"},
             {["matrix", "-n", "1", "--", "nosuchcommand", "x"], "matrix cannot run 'nosuchcommand' (it runs: run, suite, amqp)"}],
    [refused(Args, Expect) || {Args, Expect} <- Cases],
    ok.

%% The inner command's own mistakes are found before any VM starts.
inner_mistakes_are_usage_errors(_Config) ->
    Cases = [{["matrix", "-n", "1", "--format", "json", "--", "run", "ok.", "--bogus"], "unknown option '--bogus'"},
             {["matrix", "-n", "1", "--", "run", "ok.", "-s", "0"], "-s"},
             {["matrix", "-n", "1", "--", "run", "--help"], "asks for help"},
             {["matrix", "-n", "1", "--", "amqp", "--help"], "asks for help"},
             {["matrix", "-n", "1", "--", "run", "ok.", "--save", "inner.json"], "give --save to matrix"},
             {["matrix", "-n", "1", "--", "suite", "--param", "nonsense"], "--param nonsense"},
             {["matrix", "-n", "1", "--", "suite", "no_such_workload"], "no_such_workload"},
             {["matrix", "-n", "1", "--", "amqp", "-h", "notauri", "-z", "1"], "notauri"},
             {["matrix", "-n", "1", "--", "amqp", "-x", "0", "-y", "0"], "nothing to run"},
             {["profile", "--", "run", "ok.", "-l", "10", "-c", "2"], "-l (timed mode)"},
             {["profile", "--format", "json", "--", "suite", "--preset", "no-such-preset"], "no-such-preset"}],
    [refused(Args, Expect) || {Args, Expect} <- Cases],
    ok.

refused(Args, Expect) ->
    R = #{code := Code, out := Out, err := Err} = beamlab_test_util:cli(Args),
    ct:log("~p -> ~p", [Args, R]),
    ?assertEqual(2, Code),
    ok = beamlab_test_util:assert_one_line_error(R),
    ?assertNotEqual(nomatch, binary:match(Err, unicode:characters_to_binary(Expect))),
    ?assertEqual(<<>>, Out),
    %% Nothing started: no configuration's progress line.
    ?assertEqual(nomatch, binary:match(Err, <<"rep 1/">>)).

%% What they can run still runs, the bare form of `run' included.
allowed_commands_still_run(_Config) ->
    #{code := 0, out := Out} = beamlab_test_util:cli(["matrix", "-n", "1", "--format", "json", "--",
                                                      "ok.", "-s", "1", "-d", "50"]),
    {ok, #{<<"kind">> := <<"matrix">>, <<"params">> := #{<<"inner_command">> := Inner}}} =
        beamlab_json:decode(Out),
    ?assertEqual([<<"ok.">>, <<"-s">>, <<"1">>, <<"-d">>, <<"50">>], Inner),
    #{code := 0, out := Out2} = beamlab_test_util:cli(["matrix", "-n", "1", "--format", "json", "--",
                                                       "suite", "fib", "-n", "1"]),
    {ok, #{<<"benchmarks">> := [#{<<"name">> := <<"default / fib">>}]}} = beamlab_json:decode(Out2).

%% `-h' after `--' is amqp's broker URI: the load runs.
matrix_runs_amqp_with_h(_Config) ->
    #{code := 0, out := Out, err := Err} =
        beamlab_test_util:cli(["matrix", "-n", "1", "--format", "json", "--",
                               "amqp", "-h", ?URI, "-z", "1", "--closed-loop", "1"]),
    ct:log("~ts", [Err]),
    {ok, #{<<"kind">> := <<"matrix">>, <<"benchmarks">> := Bs, <<"extra">> := #{<<"configs">> := [C]}}} =
        beamlab_json:decode(Out),
    ?assertMatch(#{<<"ok_runs">> := 1}, C),
    ?assert(lists:member(<<"default / received">>, [N || #{<<"name">> := N} <- Bs])).

profile_runs_amqp_with_h(_Config) ->
    case os:find_executable("perf") of
        false ->
            {skip, "perf is not installed (Debian package linux-perf); CI installs it"};
        _ ->
            #{code := 0, out := Out} =
                beamlab_test_util:cli(["profile", "--format", "json", "--",
                                       "amqp", "-h", ?URI, "-z", "1", "--closed-loop", "1"]),
            {ok, #{<<"kind">> := <<"profile">>, <<"benchmarks">> := Bs,
                   <<"extra">> := #{<<"profile">> := P}}} = beamlab_json:decode(Out),
            ?assert(lists:member(<<"received">>, [N || #{<<"name">> := N} <- Bs])),
            ?assert(maps:get(<<"samples">>, P) > 0)
    end.
