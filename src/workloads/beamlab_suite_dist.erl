%%% @doc Distribution helpers of the suite: make this VM a distributed node
%%% on loopback, start a second VM with beamlab's code (and extra emulator
%%% flags such as `+P'), connect to a user-named node and load the modules
%%% a workload needs there.
-module(beamlab_suite_dist).

-export([ensure_distributed/0, start_peer/1, stop_peer/1, connect/2,
         format_error/1]).

%% @doc Start distribution (long names on 127.0.0.1) unless already alive.
-spec ensure_distributed() -> ok | {error, term()}.
ensure_distributed() ->
    case node() of
        nonode@nohost ->
            %% `erl -name' starts epmd itself; net_kernel:start/2 does not.
            _ = case os:find_executable("epmd") of
                    false -> ok;
                    Epmd -> os:cmd(Epmd ++ " -daemon")
                end,
            Name = list_to_atom("beamlab_" ++ os:getpid() ++ "@127.0.0.1"),
            case net_kernel:start(Name, #{name_domain => longnames}) of
                {ok, _} -> ok;
                {error, {already_started, _}} -> ok;
                {error, R} -> {error, {no_distribution, R}}
            end;
        _ ->
            ok
    end.

%% @doc Start a peer VM on this host, linked to the caller, connected over
%% distribution, with every beamlab module and `modules' (e.g. a user's
%% workload) loaded. `args' are extra emulator flags, e.g. `["+P", "2097152"]'.
-spec start_peer(#{args => [string()], modules => [module()]}) ->
          {ok, pid(), node()} | {error, term()}.
start_peer(Opts) ->
    case ensure_distributed() of
        ok ->
            Args = maps:get(args, Opts, []),
            try peer:start_link(#{name => peer:random_name(beamlab_suite),
                                  host => "127.0.0.1", longnames => true,
                                  args => Args, wait_boot => 60000}) of
                {ok, Peer, Node} ->
                    case load_modules(Node, lists:usort(beamlab_modules() ++
                                                       maps:get(modules, Opts, []))) of
                        ok -> {ok, Peer, Node};
                        {error, _} = E -> peer:stop(Peer), E
                    end;
                {error, R} -> {error, {peer_failed, R}}
            catch
                exit:R -> {error, {peer_failed, R}}
            end;
        {error, _} = E ->
            E
    end.

%% @doc Stop a peer started by start_peer/1.
-spec stop_peer(pid()) -> ok.
stop_peer(Peer) ->
    unlink(Peer),
    try peer:stop(Peer) catch exit:_ -> ok end.

%% @doc Connect to `Node' and load `Mods' there unless the same version is
%% already loaded.
-spec connect(node(), [module()]) -> ok | {error, term()}.
connect(Node, Mods) ->
    case ensure_distributed() of
        ok ->
            case net_kernel:connect_node(Node) of
                true -> load_modules(Node, Mods);
                _ -> {error, {cannot_connect, Node}}
            end;
        {error, _} = E ->
            E
    end.

%% @doc One line per error.
-spec format_error(term()) -> iolist().
format_error({no_distribution, R}) ->
    io_lib:format("cannot start Erlang distribution on 127.0.0.1 (is epmd available?): ~0p", [R]);
format_error({peer_failed, R}) ->
    io_lib:format("could not start a second VM: ~0p", [R]);
format_error({cannot_connect, Node}) ->
    io_lib:format("cannot connect to node ~s (is it running, with the same cookie?)", [Node]);
format_error({load_failed, Node, Mod, R}) ->
    io_lib:format("cannot load ~s on ~s: ~0p", [Mod, Node, R]);
format_error(Other) ->
    io_lib:format("~0p", [Other]).

beamlab_modules() ->
    _ = application:load(beamlab),
    FromApp = case application:get_key(beamlab, modules) of
                  {ok, Ms} -> Ms;
                  undefined -> []
              end,
    Loaded = [M || {M, _} <- code:all_loaded(),
                   lists:prefix("beamlab", atom_to_list(M))],
    lists:usort(FromApp ++ Loaded).

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
