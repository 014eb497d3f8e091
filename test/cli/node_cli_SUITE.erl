%%% `beamlab node' and the controller's `--name' through the built escript,
%%% on loopback only (no root needed; the cross-host tests are
%%% multihost_SUITE).
-module(node_cli_SUITE).
-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-export([all/0]).
-export([needs_name/1, bad_names/1, far_node_needs_controller_name/1, loopback_node_serves_and_stops/1]).

all() ->
    [needs_name, bad_names, far_node_needs_controller_name, loopback_node_serves_and_stops].

usage_error(Args, Pattern) ->
    #{code := Code, err := Err} = R = beamlab_test_util:cli(Args),
    ?assertEqual(2, Code),
    ok = beamlab_test_util:assert_one_line_error(R),
    ?assertMatch({match, _}, re:run(Err, Pattern)).

needs_name(_) ->
    usage_error(["node"], "node needs --name NAME@HOST").

bad_names(_) ->
    usage_error(["node", "--name", "nohost"], "not a node name"),
    %% 192.0.2.0/24 (TEST-NET-1) is never an address of this machine.
    usage_error(["node", "--name", "gen@192.0.2.7"], "not an address of this machine"),
    usage_error(["node", "--name", "gen@127.0.0.1", "--dist-port", "70000"], "not a TCP port"),
    usage_error(["node", "--stop", "nohost"], "not a node name").

%% The default stays on loopback: a node on another host needs --name.
far_node_needs_controller_name(_) ->
    usage_error(["amqp", "-z", "1", "--nodes", "gen@192.0.2.7"], "--name ctl@ADDRESS").

%% A node on loopback: ready line, a controller connects (node --stop) and
%% the node says who stopped it and exits 0.
loopback_node_serves_and_stops(_) ->
    Name = "t" ++ integer_to_list(erlang:unique_integer([positive])) ++ "@127.0.0.1",
    H = beamlab_test_util:cli_start(["node", "--name", Name, "--cookie", "node-cli"], #{}),
    Seen = beamlab_test_util:await_output(maps:get(port, H), "ready", <<>>, 60000),
    ?assertMatch({match, _}, re:run(Seen, "beamlab node " ++ Name ++ " ready: distribution on 127.0.0.1:[0-9]+")),
    #{code := 0, out := Out} = beamlab_test_util:cli(["node", "--stop", Name, "--cookie", "node-cli"]),
    ?assertMatch({match, _}, re:run(Out, "stopped " ++ Name)),
    #{code := 0, out := NodeOut} = beamlab_test_util:cli_finish(H, Seen),
    ?assertMatch({match, _}, re:run(NodeOut, "stopped by beamlab_[0-9]+@127.0.0.1")).
