%%% @doc Distribution helpers of the suite, on top of `beamlab_runtime_peer':
%%% start a second VM on this host tied to the calling process (it is
%%% stopped when the caller exits, even when killed by a timeout or an
%%% interrupt), and connect to a user-named node, loading the modules a
%%% workload needs there.
-module(beamlab_suite_dist).

-export([start_peer/1, stop_peer/1, connect/2, format_error/1]).

%% @doc Start a distributed VM on 127.0.0.1 with beamlab's code (see
%% `beamlab_runtime_peer:start/1' for `Opts'; `dist' is forced on). The VM is stopped
%% when the calling process exits.
-spec start_peer(beamlab_runtime_peer:opts()) -> {ok, beamlab_runtime_peer:vm(), node()} | {error, term()}.
start_peer(Opts) ->
    case beamlab_runtime_peer:start(Opts#{dist => true}) of
        {ok, Vm} ->
            Owner = self(),
            _ = spawn(fun() ->
                              MRef = monitor(process, Owner),
                              receive {'DOWN', MRef, process, Owner, _} -> beamlab_runtime_peer:stop(Vm) end
                      end),
            {ok, Vm, beamlab_runtime_peer:node(Vm)};
        {error, R} ->
            {error, {peer, R}}
    end.

%% @doc Stop a VM started by start_peer/1.
-spec stop_peer(beamlab_runtime_peer:vm()) -> ok.
stop_peer(Vm) -> beamlab_runtime_peer:stop(Vm).

%% @doc Connect to `Node' and load `Mods' there unless the same version is
%% already loaded.
-spec connect(node(), [module()]) -> ok | {error, term()}.
connect(Node, Mods) ->
    case beamlab_runtime_peer:ensure_dist() of
        ok ->
            case net_kernel:connect_node(Node) of
                true -> load_modules(Node, Mods);
                _ -> {error, {cannot_connect, Node}}
            end;
        {error, R} ->
            {error, {peer, R}}
    end.

%% @doc One line per error.
-spec format_error(term()) -> iolist().
format_error(Reason) ->
    beamlab_format_reason:line(fun error_line/1, Reason).

error_line({peer, R}) -> beamlab_runtime_peer:format_error(R);
error_line({cannot_connect, Node}) ->
    io_lib:format("cannot connect to node ~s (is it running, with the same cookie?)", [Node]);
error_line({load_failed, Node, Mod, R}) ->
    io_lib:format("cannot load ~s on ~s: ~0p", [Mod, Node, R]);
error_line(Other) ->
    io_lib:format("~0p", [Other]).

load_modules(_Node, []) -> ok;
load_modules(Node, [Mod | Rest]) ->
    case code:get_object_code(Mod) of
        {Mod, Bin, File} ->
            Same = try erpc:call(Node, Mod, module_info, [md5], 10000) =:= Mod:module_info(md5)
                   catch _:_ -> false end,
            Res = case Same of
                      true -> {module, Mod};
                      false -> erpc:call(Node, code, load_binary, [Mod, File, Bin], 30000)
                  end,
            case Res of
                {module, Mod} -> load_modules(Node, Rest);
                {error, R} -> {error, {load_failed, Node, Mod, R}}
            end;
        error ->
            {error, {load_failed, Node, Mod, no_object_code}}
    end.
