%%% @doc The Erlang nodes a load test runs on (`--nodes'): this VM plus
%%% peers started with `beamlab_runtime_peer' (distribution on loopback), or running
%%% nodes the user names, which get beamlab's code as binaries.
-module(beamlab_amqp_nodes).

-export([start/1, format_error/1]).

-export_type([error/0]).

-type error() :: {nodes_unreachable, [node()]}
               | {load_code, Failure :: term()}
               | {peer, Reason :: term()}.

%% @doc The nodes of a run from the `nodes' option: `{peers, N}' is this
%% node and N-1 started peers; a list names running nodes (beamlab's code
%% is loaded there). Returns a fun that stops what was started.
-spec start(beamlab_amqp_config:config()) ->
          {ok, [node()], fun(() -> ok)} | {error, error()}.
start(#{nodes := {peers, N}}) when N > 1 ->
    start_peers(N - 1, [], []);
start(#{nodes := {peers, _}}) ->
    {ok, [node()], fun() -> ok end};
start(#{nodes := Nodes}) ->
    case Nodes -- [node()] of
        [] ->
            {ok, Nodes, fun() -> ok end};
        Remote ->
            case beamlab_runtime_peer:ensure_dist() of
                ok ->
                    case [Nd || Nd <- Remote, net_adm:ping(Nd) =/= pong] of
                        [] ->
                            case load_code(Remote) of
                                ok -> {ok, Nodes, fun() -> ok end};
                                {error, _} = E -> E
                            end;
                        Down ->
                            {error, {nodes_unreachable, Down}}
                    end;
                {error, R} ->
                    {error, {peer, R}}
            end
    end.

%% --nodes N: this VM plus N-1 fresh distributed VMs on loopback, which
%% beamlab_runtime_peer starts with beamlab's code loaded.
start_peers(0, Nodes, Vms) ->
    {ok, [node() | lists:reverse(Nodes)],
     fun() -> lists:foreach(fun beamlab_runtime_peer:stop/1, Vms) end};
start_peers(N, Nodes, Vms) ->
    case beamlab_runtime_peer:start(#{dist => true}) of
        {ok, Vm} ->
            start_peers(N - 1, [beamlab_runtime_peer:node(Vm) | Nodes], [Vm | Vms]);
        {error, R} ->
            lists:foreach(fun beamlab_runtime_peer:stop/1, Vms),
            {error, {peer, R}}
    end.

%% Named nodes may not have beamlab's code: send every beamlab module
%% loaded here (the agent and what it calls are loaded by then).
load_code(Nodes) ->
    Needed = [beamlab_amqp, beamlab_amqp_conn, beamlab_amqp_frame, beamlab_amqp_method,
              beamlab_amqp_uri, beamlab_amqp_agent, beamlab_amqp_worker, beamlab_amqp_producer,
              beamlab_amqp_consumer, beamlab_amqp_loop, beamlab_amqp_rate,
              beamlab_stats_hist, beamlab_runtime_shared],
    _ = [code:ensure_loaded(M) || M <- Needed],
    Mods = [M || {M, _} <- code:all_loaded(), lists:prefix("beamlab", atom_to_list(M))],
    Objs = [Obj || M <- Mods, {_, _, _} = Obj <- [code:get_object_code(M)]],
    %% A module the node already runs in this version is left alone: a
    %% `beamlab node' runs the same escript, and reloading would purge the
    %% code its own processes run (issue 13).
    Results = [case catch erpc:call(Nd, M, module_info, [md5], 10000) =:= M:module_info(md5) of
                   true -> {module, M};
                   _ -> catch erpc:call(Nd, code, load_binary, [M, F, B], 10000)
               end
               || Nd <- Nodes, {M, B, F} <- Objs],
    case [R || R <- Results, element(1, R) =/= module] of
        [] -> ok;
        [Bad | _] -> {error, {load_code, Bad}}
    end.


%% @doc One line for a node error.
-spec format_error(error()) -> iolist().
format_error(Reason) ->
    beamlab_format_reason:line(fun error_line/1, Reason).

error_line({nodes_unreachable, Nodes}) ->
    io_lib:format("cannot reach node(s) ~ts (same cookie? distribution started?)",
                  [lists:join(", ", [atom_to_list(N) || N <- Nodes])]);
error_line({load_code, R}) ->
    io_lib:format("cannot load beamlab's code on a node: ~0p", [R]);
error_line({peer, R}) ->
    ["cannot start a peer node: ", beamlab_runtime_peer:format_error(R)];
error_line(Other) ->
    %% (a reason of no kind above: printed, never raised)
    beamlab_format_reason:term(Other).
