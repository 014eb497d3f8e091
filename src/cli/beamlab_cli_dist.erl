%%% @doc Distribution for the CLI: how a controller (`amqp --nodes',
%%% `suite ... ping_pong.node=') names itself with `--name' and `--cookie',
%%% and checks that the nodes it names are reachable from that name. With
%%% no `--name' the VM stays on loopback (`beamlab_runtime_peer:ensure_dist/0').
-module(beamlab_cli_dist).

-export([options/0, controller/2, start/3, loopback/1, far/1]).

%% @doc `--name' and `--cookie' as every controller command declares them.
-spec options() -> [beamlab_cli_args:option()].
options() ->
    [#{name => dist_name, long => "name", type => string, metavar => "NAME@HOST",
       help => "name this VM (the controller) NAME@HOST, HOST an address of one of this "
               "machine's interfaces, to reach nodes on other machines (default: loopback only)"},
     #{name => cookie, long => "cookie", type => cookie, metavar => "COOKIE",
       help => "distribution cookie shared with the nodes (default: ~/.erlang.cookie)"}].

%% @doc Sets up distribution for a controller from `--name'/`--cookie'
%% before it talks to `Nodes'. Without `--name', a node on another host is
%% a usage error (the controller would be on loopback); without nodes and
%% without either option nothing is started.
-spec controller(beamlab_cli_args:parsed(), [node()]) -> ok.
controller(Parsed, Nodes) ->
    Name = beamlab_cli_args:get(dist_name, Parsed),
    Cookie = beamlab_cli_args:get(cookie, Parsed),
    case Name of
        undefined ->
            case [N || N <- Nodes, N =/= node(), far(N)] of
                [] -> ok;
                [Far | _] ->
                    beamlab_cli_error:usage(
                      "node ~s is not on loopback: name this controller after an interface "
                      "that reaches it, e.g. --name ctl@ADDRESS", [Far])
            end,
            Cookie =/= undefined andalso
                begin
                    _ = beamlab_runtime_peer:ensure_dist(),
                    ok = beamlab_runtime_peer:set_cookie(node(), Cookie)
                end,
            ok;
        _ ->
            _ = start(Name, Cookie, #{epmd => optional}),
            ok
    end.

%% @doc Starts distribution as `Name' (usage error on a bad name, failure
%% otherwise) and returns what `beamlab_runtime_peer:start_dist/1' says.
-spec start(string(), string() | undefined, map()) -> beamlab_runtime_peer:dist_info().
start(Name, Cookie, Extra) ->
    Opts = maps:merge(Extra, #{name => Name}),
    case beamlab_runtime_peer:start_dist(case Cookie of
                                             undefined -> Opts;
                                             _ -> Opts#{cookie => Cookie}
                                         end) of
        {ok, Info} -> Info;
        {error, {Bad, _} = E} when Bad =:= bad_node_name; Bad =:= unknown_host ->
            beamlab_cli_error:usage("--name: ~ts", [beamlab_runtime_peer:format_error(E)]);
        {error, {not_local, _, _} = E} ->
            beamlab_cli_error:usage("--name: ~ts", [beamlab_runtime_peer:format_error(E)]);
        {error, E} ->
            beamlab_cli_error:fail("~ts", [beamlab_runtime_peer:format_error(E)])
    end.

%% @doc True when the node's host resolves to an address that is not
%% loopback (a host that does not resolve is left to the connection
%% attempt, which names it).
-spec far(node()) -> boolean().
far(Node) ->
    case string:split(atom_to_list(Node), "@") of
        [_, Host] ->
            case inet:getaddr(Host, inet) of
                {ok, {127, _, _, _}} -> false;
                {ok, _} -> not loopback(Node);
                {error, _} -> false
            end;
        _ -> false
    end.

%% @doc True when the node's host is a loopback name or address.
-spec loopback(node()) -> boolean().
loopback(Node) ->
    case string:split(atom_to_list(Node), "@") of
        [_, "localhost"] -> true;
        [_, Host] ->
            case inet:parse_address(Host) of
                {ok, {127, _, _, _}} -> true;
                {ok, {0, 0, 0, 0, 0, 0, 0, 1}} -> true;
                _ -> false
            end;
        _ -> false
    end.
