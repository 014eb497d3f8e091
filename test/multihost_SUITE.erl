%%% Load and benchmarks across hosts over real links: network namespaces
%%% joined by veth pairs to a bridge (scripts/netns.sh, addresses in
%%% 198.18.14.0/24), RabbitMQ in one namespace, two `beamlab node's in two
%%% others, the controller (the escript) in the root namespace.
%%%
%%% Needs root and `ip netns'; where that is not permitted the whole suite
%%% is SKIPPED with the reason (it never passes without running), or FAILS
%%% when BEAMLAB_REQUIRE_NETNS=1 (for a CI that must run it).
-module(multihost_SUITE).
-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-export([all/0, init_per_suite/1, end_per_suite/1]).
-export([loopback_default_refuses_far_nodes/1, merged_accounting/1, split_queue_clock_offsets/1,
         wrong_cookie/1, remote_ping_pong/1, termite_preset_remote_rows/1,
         node_killed_mid_run/1, stop_node/1]).

-define(PREFIX, "blms").
-define(NET, "198.18.14").
-define(CTL, ?NET ".1").
-define(BROKER, ?NET ".2").
-define(N1, ?NET ".3").
-define(N2, ?NET ".4").
-define(RPORT, "5686").
-define(URI, "amqp://guest:guest@" ?BROKER ":" ?RPORT "/%2F").
-define(COOKIE, "multihost-cookie").
-define(NODE1, "n1@" ?N1).
-define(NODE2, "n2@" ?N2).

all() ->
    [loopback_default_refuses_far_nodes, merged_accounting, split_queue_clock_offsets,
     wrong_cookie, remote_ping_pong, termite_preset_remote_rows, node_killed_mid_run, stop_node].

init_per_suite(Config) ->
    case permitted() of
        {no, Why} ->
            Msg = "network namespaces not permitted here (" ++ Why ++ "): multihost tests NOT run",
            case os:getenv("BEAMLAB_REQUIRE_NETNS") of
                "1" -> ct:fail(Msg);
                _ -> {skip, Msg}
            end;
        yes ->
            {0, NetOut} = netns("up"),
            ct:log("~ts", [NetOut]),
            {0, RabbitOut} = in_ns("broker", [script("rabbitmq.sh"), "start"],
                                   [{"BEAMLAB_RABBIT_PORT", ?RPORT}, {"BEAMLAB_RABBIT_ADDR", ?BROKER}]),
            ct:log("~ts", [RabbitOut]),
            N1 = start_node("n1", ?NODE1, []),
            N2 = start_node("n2", ?NODE2, ["--dist-port", "9714"]),
            [{nodes, [N1, N2]} | Config]
    end.

end_per_suite(_Config) ->
    _ = beamlab_test_util:cli(["node", "--stop", ?NODE1 "," ?NODE2, "--cookie", ?COOKIE,
                               "--name", "stopper@" ?CTL]),
    _ = in_ns("broker", [script("rabbitmq.sh"), "stop"],
              [{"BEAMLAB_RABBIT_PORT", ?RPORT}, {"BEAMLAB_RABBIT_ADDR", ?BROKER}]),
    _ = netns("down"),
    ok.

%%--------------------------------------------------------------------
%% Tests

%% Without --name the controller stays on loopback: a node on another host
%% is a usage error naming --name, not a silent attempt.
loopback_default_refuses_far_nodes(_Config) ->
    #{code := Code, err := Err} = beamlab_test_util:cli(
                                    ["amqp", "-h", ?URI, "-z", "1", "--nodes", ?NODE1,
                                     "--cookie", ?COOKIE]),
    ?assertEqual(2, Code),
    ?assertMatch({match, _}, re:run(Err, "--name")).

%% Two generator nodes on two hosts, one queue each (not split): the
%% counters of both merge, each node's share is reported, the accounting
%% balances.
merged_accounting(_Config) ->
    #{code := 0, out := Out, err := Err} =
        ctl(["amqp", "-h", ?URI, "-x", "2", "-y", "2", "-r", "200", "-z", "2",
             "--queue-pattern", "mh-acc-%d", "--queue-pattern-from", "1", "--queue-pattern-to", "2",
             "--nodes", ?NODE1 "," ?NODE2, "--format", "json"]),
    ct:log("~ts", [Err]),
    Amqp = amqp_extra(Out),
    #{<<"accounting">> := #{<<"sent">> := S, <<"received">> := R, <<"returned">> := Ret,
                            <<"nacked">> := N, <<"queued">> := Q, <<"balanced">> := true},
      <<"node_shares">> := Shares, <<"split">> := false} = Amqp,
    ?assert(S > 0),
    ?assertEqual(S, R + Ret + N + Q),
    ?assertEqual(lists:sort([<<?NODE1>>, <<?NODE2>>]),
                 lists:sort([Nd || #{<<"node">> := Nd} <- Shares])),
    ?assertEqual(S, lists:sum([X || #{<<"sent">> := X} <- Shares])),
    ?assertEqual(R, lists:sum([X || #{<<"received">> := X} <- Shares])),
    ?assert(lists:all(fun(#{<<"sent">> := X, <<"received">> := Y}) -> X > 0 andalso Y > 0 end, Shares)).

%% One queue, two nodes: a queue's producers and consumers are split over
%% the hosts, so each node's clock offset is measured before and after the
%% run, applied, and printed with its uncertainty.
split_queue_clock_offsets(_Config) ->
    #{code := 0, out := Out, err := Err} =
        ctl(["amqp", "-h", ?URI, "-x", "2", "-y", "2", "-r", "200", "-z", "2",
             "--nodes", ?NODE1 "," ?NODE2, "--format", "json"]),
    ct:log("~ts", [Err]),
    #{<<"split">> := true, <<"clock_offsets">> := Clock,
      <<"accounting">> := #{<<"balanced">> := true}} = amqp_extra(Out),
    ?assertEqual(lists:sort([<<?NODE1>>, <<?NODE2>>]), lists:sort(maps:keys(Clock))),
    _ = [begin
             ?assert(is_integer(O)),
             ?assert(U > 0),
             ?assert(is_integer(D))
         end || #{<<"offset_us">> := O, <<"uncertainty_us">> := U, <<"drift_us">> := D}
                    <- maps:values(Clock)],
    %% "clock of NODE: +12 µs ± 40 µs against the controller"
    ?assertMatch({match, _}, re:run(Err, "clock of " ?NODE1 ": [-+]?[0-9]+ \\S+ \\S+ [0-9]+ \\S+ against")),
    ?assertMatch({match, _}, re:run(Err, "corrected for the clock offsets")),
    %% Every line is UTF-8: a micro sign is never a raw Latin-1 byte (#27).
    ?assertEqual(Err, unicode:characters_to_binary(Err)).

%% A controller with another cookie is refused: one line, exit 1, the node
%% keeps serving (the next test uses it).
wrong_cookie(Config) ->
    #{code := Code, err := Err} =
        beamlab_test_util:cli(["amqp", "-h", ?URI, "-z", "1", "--nodes", ?NODE1,
                               "--cookie", "not-the-cookie", "--name", "ctlbad@" ?CTL]),
    ?assertEqual(1, Code),
    ok = beamlab_test_util:assert_one_line_error(#{err => Err, dir => "."}),
    ?assertMatch({match, _}, re:run(Err, "cannot reach node\\(s\\) " ?NODE1)),
    %% The node said so in one line, and still serves.
    [#{log := Log} | _] = proplists:get_value(nodes, Config),
    _ = beamlab_test_util:wait_for_file(Log, "refused a connection from 'ctlbad@" ?CTL "' \\(wrong cookie\\)",
                                        30000).

%% Ping-pong between two namespaces (neither is the controller's): the
%% result names both hosts and the link.
remote_ping_pong(_Config) ->
    #{code := 0, out := Out} =
        ctl(["suite", "ping_pong", "--param", "ping_pong.vm=remote",
             "--param", "ping_pong.node=" ?NODE2, "--param", "ping_pong.from=" ?NODE1,
             "--param", "ping_pong.size=10", "--param", "ping_pong.payload=binary",
             "--param", "ping_pong.n=500", "-n", "2", "--format", "json"]),
    {ok, #{<<"benchmarks">> := [#{<<"extra">> := Extra} | _]}} = beamlab_json:decode(Out),
    ct:log("~p", [Extra]),
    #{<<"pinger_node">> := <<?NODE1>>, <<"ponger_node">> := <<?NODE2>>,
      <<"pinger_host">> := <<?N1>>, <<"ponger_host">> := <<?N2>>, <<"link">> := Link} = Extra,
    %% The pinger's side of the link: its address and its veth device.
    ?assertMatch({match, _}, re:run(Link, "^" ?N1 " \\(" ?PREFIX "p[0-9]+\\) -> " ?N2)).

%% The Termite preset with a named node adds its two remote rows, measured
%% against the node in another namespace: the published column beside ours,
%% and the suite's own rows name the node.
termite_preset_remote_rows(_Config) ->
    #{code := 0, out := Out} =
        ctl(["suite", "--preset", "termite", "--node", ?NODE2, "-n", "1",
             "--param", "fib.n=10", "--param", "spawn.n=100", "--param", "send.n=1000",
             "--param", "ring.n=100", "--param", "ping_pong.n=100"]),
    ct:log("~ts", [Out]),
    [?assertMatch({Row, {match, _}},
                  {Row, re:run(Out, ["^", Row, " +[0-9.]+ +[0-9.]+ +us +[0-9.]+$"], [multiline])})
     || Row <- ["ping-pong remote \\(0\\)", "ping-pong remote \\(1000\\)"]],
    ?assertMatch({match, _}, re:run(Out, "^ping_pong +.*node=" ?NODE2 ".* ok$", [multiline])).

%% A node killed (SIGKILL) mid-run: named in the report, the other node's
%% data kept, exit code 1.
node_killed_mid_run(_Config) ->
    Victim = start_node("n2", "victim@" ?N2, []),
    H = beamlab_test_util:cli_start(
          ["amqp", "-h", ?URI, "-x", "2", "-y", "2", "-r", "200", "-z", "30",
           "--queue-pattern", "mh-kill-%d", "--queue-pattern-from", "1", "--queue-pattern-to", "2",
           "--nodes", ?NODE1 ",victim@" ?N2, "--format", "json",
           "--cookie", ?COOKIE, "--name", "ctlkill@" ?CTL], #{}),
    _ = beamlab_test_util:wait_for_file(maps:get(err_file, H), "time 2", 60000),
    os:cmd("kill -KILL " ++ maps:get(os_pid, Victim)),
    #{code := Code, out := Out, err := Err} = beamlab_test_util:cli_finish(H, []),
    ct:log("~ts", [Err]),
    ?assertEqual(1, Code),
    ?assertMatch({match, _}, re:run(Err, "node victim@" ?N2 " went away")),
    #{<<"lost_nodes">> := [#{<<"node">> := <<"victim@" ?N2>>}], <<"node_shares">> := Shares} =
        amqp_extra(Out),
    %% The merged counters never go down when a node goes away: no
    %% negative rate in any interval.
    {ok, #{<<"benchmarks">> := Bs}} = beamlab_json:decode(Out),
    [?assert(lists:all(fun(V) -> V >= 0 end, Samples))
     || #{<<"name">> := Name, <<"samples">> := Samples} <- Bs,
        lists:member(Name, [<<"sent">>, <<"received">>])],
    [#{<<"received">> := Kept, <<"lost">> := false}] =
        [S || #{<<"node">> := <<?NODE1>>} = S <- Shares],
    ?assert(Kept > 0),
    [#{<<"lost">> := true, <<"sent">> := VictimSent}] =
        [S || #{<<"node">> := <<"victim@" ?N2>>} = S <- Shares],
    ?assert(VictimSent > 0).

%% `beamlab node --stop' ends a node (which says who stopped it).
stop_node(_Config) ->
    N = start_node("n1", "short@" ?N1, []),
    #{code := 0} = beamlab_test_util:cli(["node", "--stop", "short@" ?N1, "--cookie", ?COOKIE,
                                          "--name", "stopper@" ?CTL]),
    _ = beamlab_test_util:wait_for_file(maps:get(log, N), "stopped by stopper@" ?CTL, 30000),
    %% The node's VM is gone.
    ok = beamlab_test_util:wait_until(
           fun() -> os:cmd("kill -0 " ++ maps:get(os_pid, N) ++ " 2>&1") =/= "" end, 30000).

%%--------------------------------------------------------------------
%% Helpers

ctl(Args) ->
    beamlab_test_util:cli(Args ++ ["--cookie", ?COOKIE, "--name", "ctl@" ?CTL]).

amqp_extra(Json) ->
    {ok, #{<<"extra">> := #{<<"amqp">> := Amqp}}} = beamlab_json:decode(Json),
    Amqp.

permitted() ->
    case os:cmd("id -u") of
        "0\n" ->
            Probe = ?PREFIX "-probe",
            case os:cmd("ip netns add " ++ Probe ++ " 2>&1 && ip netns del " ++ Probe ++ " 2>&1 && echo OK") of
                "OK\n" -> yes;
                Msg -> {no, string:trim(Msg)}
            end;
        _ -> {no, "not root"}
    end.

script(Name) ->
    filename:join([beamlab_test_util:root(), "scripts", Name]).

netns(Action) ->
    run(script("netns.sh"), [Action], [{"BEAMLAB_NETNS_PREFIX", ?PREFIX}, {"BEAMLAB_NETNS_NET", ?NET}]).

in_ns(Role, [Exe | Args], Env) ->
    run(os:find_executable("ip"), ["netns", "exec", ?PREFIX "-" ++ Role, Exe | Args], Env).

run(Exe, Args, Env) ->
    P = open_port({spawn_executable, Exe},
                  [{args, Args}, {env, Env}, exit_status, stderr_to_stdout, binary]),
    beamlab_test_util:port_output(P, 180000).

%% `beamlab node' in a namespace, in the background (it outlives the
%% process that starts it), output to a log file; returns once the node
%% printed its ready line.
start_node(Role, Name, Extra) ->
    Log = filename:join(beamlab_test_util:tmp_dir("node"), "node.log"),
    Cmd = lists:join(" ", ["setsid", "ip", "netns", "exec", ?PREFIX "-" ++ Role,
                           beamlab_test_util:escript(), "node", "--name", Name,
                           "--cookie", ?COOKIE | Extra]
                          ++ [">", Log, "2>&1", "</dev/null", "&"]),
    _ = os:cmd(lists:flatten(Cmd)),
    Ready = beamlab_test_util:wait_for_file(Log, "ready", 60000),
    ct:log("~ts", [Ready]),
    {match, [OsPid]} = re:run(Ready, "os pid ([0-9]+)", [{capture, all_but_first, list}]),
    #{log => Log, os_pid => OsPid}.
