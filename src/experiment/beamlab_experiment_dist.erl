%%% @doc Distribution for an experiment that talks to other nodes (`amqp'
%%% with named `nodes', a suite's remote ping-pong): this VM named
%%% `name@host' with a cookie, or kept on loopback, and the nodes it names
%%% checked to be reachable from that name. With no name the VM stays on
%%% loopback (`beamlab_runtime_peer:ensure_dist/0').
-module(beamlab_experiment_dist).

-export([controller/2, loopback/1, far/1, as_found/1, error_class/1, format_error/1]).

-type error_reason() :: {not_loopback, node()} | {name, term()}.
-export_type([error_reason/0]).

%% @doc Sets up distribution for a controller before it talks to `Nodes'.
%% Without a name, a node on another host is an error (the controller
%% would be on loopback); without nodes and without a name or a cookie
%% nothing is started.
-spec controller(beamlab_experiment:dist(), [node()]) -> ok | {error, error_reason()}.
controller(Dist, Nodes) ->
    Cookie = maps:get(cookie, Dist, undefined),
    case maps:get(name, Dist, undefined) of
        undefined ->
            case [N || N <- Nodes, N =/= node(), far(N)] of
                [] when Cookie =:= undefined ->
                    ok;
                [] ->
                    %% (an empty cookie is refused: beamlab_runtime_peer:cookie/1)
                    case beamlab_runtime_peer:ensure_dist() of
                        ok ->
                            case beamlab_runtime_peer:set_cookie(node(), Cookie) of
                                ok -> ok;
                                {error, Bad} -> {error, {name, Bad}}
                            end;
                        {error, NoDist} ->
                            {error, {name, NoDist}}
                    end;
                [Far | _] ->
                    {error, {not_loopback, Far}}
            end;
        Name ->
            Opts = #{name => Name, epmd => optional},
            case beamlab_runtime_peer:start_dist(case Cookie of
                                                     undefined -> Opts;
                                                     _ -> Opts#{cookie => Cookie}
                                                 end) of
                {ok, _} -> ok;
                {error, E} -> {error, {name, E}}
            end
    end.

%% @doc Runs `Fun' and leaves this VM's distribution as it found it, for
%% the public API's callers (a plain `erl' shell stays `nonode@nohost'):
%% distribution started on the way (`watch', `amqp' with nodes, a remote
%% ping-pong, fresh VMs over distribution) is stopped again, the kernel's
%% distribution settings beamlab set are restored, and in a VM that was
%% distributed already its own cookie is put back and the connections
%% beamlab opened are closed. Also when `Fun' fails or raises.
-spec as_found(fun(() -> Result)) -> Result.
as_found(Fun) ->
    Before = dist_state(),
    try Fun()
    after
        restore(Before)
    end.

-define(DIST_ENV, [inet_dist_use_interface, inet_dist_listen_min, inet_dist_listen_max]).

dist_state() ->
    Env = [{K, application:get_env(kernel, K)} || K <- ?DIST_ENV],
    case node() of
        nonode@nohost -> #{alive => false, env => Env};
        _ -> #{alive => true, env => Env, cookie => erlang:get_cookie(), connected => nodes(connected)}
    end.

restore(#{alive := Alive, env := Env} = Before) ->
    case {Alive, node()} of
        {false, nonode@nohost} -> ok;
        {false, _} -> beamlab_runtime_peer:stop_dist();
        {true, nonode@nohost} -> ok;
        {true, _} ->
            #{cookie := Cookie, connected := Connected} = Before,
            _ = erlang:get_cookie() =:= Cookie orelse erlang:set_cookie(node(), Cookie),
            _ = [erlang:disconnect_node(N) || N <- nodes(connected), not lists:member(N, Connected)],
            ok
    end,
    lists:foreach(fun({K, {ok, V}}) -> ok = application:set_env(kernel, K, V);
                     ({K, undefined}) -> ok = application:unset_env(kernel, K)
                  end, Env).

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

%% @doc A name that cannot be this VM's is the caller's mistake; a
%% distribution that does not start is a failure.
-spec error_class(error_reason()) -> usage | failure.
error_class({not_loopback, _}) -> usage;
error_class({name, {Bad, _}}) when Bad =:= bad_node_name; Bad =:= unknown_host -> usage;
error_class({name, {not_local, _, _}}) -> usage;
error_class({name, _}) -> failure.

%% @doc One line for each error.
-spec format_error(error_reason()) -> unicode:chardata().
format_error(Reason) ->
    beamlab_format_reason:line(fun error_line/1, Reason).

error_line({not_loopback, Far}) ->
    io_lib:format("node ~s is not on loopback: name this controller after an interface "
                  "that reaches it, e.g. --name ctl@ADDRESS", [Far]);
error_line({name, E}) ->
    case error_class({name, E}) of
        usage -> ["--name: ", beamlab_runtime_peer:format_error(E)];
        failure -> beamlab_runtime_peer:format_error(E)
    end;
error_line(Other) ->
    %% (a reason of no kind above: printed, never raised)
    beamlab_format_reason:term(Other).
