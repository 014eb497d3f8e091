%%% @doc Workload `ping_pong': round trips between two processes carrying a
%%% payload, in one VM, to a second VM on this host (started with
%%% `beamlab_runtime_peer', over Erlang distribution on loopback), or to a remote
%%% node named by the user.
-module(beamlab_workload_ping_pong).
-behaviour(beamlab_workload).

-export([info/0, params/0, setup/1, run/2, teardown/1, normalize/1,
         format_error/1]).
-export([ponger/0, remote_ping/3, link_info/1]).

%% The ponger process and the peer VM it runs in (none: this VM or a node
%% the user started); with vm=remote, the node the pinger runs on (`from',
%% none: this VM) and the link between the two.
-type state() :: #{ponger := pid(), peer := beamlab_runtime_peer:vm() | none,
                   from => node() | none, link => map()}.

%% @doc Workload description.
-spec info() -> beamlab_workload:info().
info() ->
    #{name => <<"ping_pong">>,
      summary => <<"round trip of a payload between two processes: local, peer VM, remote node">>,
      definition =>
          <<"Time of N round trips divided by N. One round trip: the pinger "
            "sends {self(), Payload} to the ponger and waits for "
            "{pong, Payload} echoed back. Payload is a list of Size integers "
            "(1..Size, as in Termite) or a binary of Size bytes (binaries over "
            "64 bytes are reference-counted, so not copied within one VM). "
            "vm=local: both processes in this VM; vm=peer: the ponger runs in "
            "a second VM on this host started for the measurement, over "
            "Erlang distribution on 127.0.0.1; vm=remote: the ponger runs on "
            "the node given by `node` (setting `node` implies vm=remote) and "
            "the pinger on this VM or on the node given by `from` (two other "
            "hosts: Termite's remote rows); the result names both hosts and "
            "the link (addresses and the pinger's network device).">>,
      unit => <<"us">>, better => lower, metric => <<"round_trip">>,
      repeat => #{quick => 5, full => 5},
      checks => <<"N replies received, the ponger counted N requests, the last "
                  "echoed payload equals the one sent">>}.

%% @doc Parameters.
-spec params() -> [beamlab_workload:param_spec()].
params() ->
    [#{key => size, default => [0, 10, 100, 1000], full => [0, 10, 100, 1000],
       type => non_neg_integer, help => <<"payload elements (list) or bytes (binary)">>},
     #{key => payload, default => [list, binary], full => [list, binary],
       type => {enum, [list, binary]}, help => <<"payload shape">>},
     #{key => vm, default => local, full => [local, peer],
       type => {enum, [local, peer, remote]}, help => <<"where the ponger runs">>},
     #{key => node, default => none, full => none, type => node,
       help => <<"remote node name@host for vm=remote (same cookie)">>},
     #{key => from, default => none, full => none, type => node,
       help => <<"vm=remote: run the pinger on this node name@host instead of this VM">>},
     #{key => n, default => 10000, full => 20000, type => pos_integer,
       help => <<"round trips per repetition">>}].

%% @doc `node' implies vm=remote; vm=remote needs a node.
-spec normalize(beamlab_workload:params()) -> {ok, beamlab_workload:params()} | {error, term()}.
normalize(#{node := none, vm := remote}) -> {error, remote_needs_node};
normalize(#{node := Node, vm := peer}) when Node =/= none -> {error, peer_and_node};
normalize(#{node := none, from := From}) when From =/= none -> {error, from_needs_node};
normalize(#{node := Node} = P) when Node =/= none -> {ok, P#{vm => remote}};
normalize(P) -> {ok, P}.

%% @doc Start the ponger where `vm' says.
-spec setup(beamlab_workload:params()) -> {ok, state()} | {error, term()}.
setup(#{vm := local}) ->
    {ok, #{ponger => spawn_link(fun ponger/0), peer => none}};
setup(#{vm := peer}) ->
    case beamlab_suite_dist:start_peer(#{}) of
        {ok, Vm, Node} ->
            {ok, #{ponger => spawn_link(Node, ?MODULE, ponger, []), peer => Vm}};
        {error, _} = E ->
            E
    end;
setup(#{vm := remote, node := Node} = P) ->
    From = maps:get(from, P, none),
    case [R || Nd <- [Node | [From || From =/= none]],
               R <- [beamlab_suite_dist:connect(Nd, [?MODULE])], R =/= ok] of
        [] ->
            Link = case From of
                       none -> link_info(Node);
                       _ -> erpc:call(From, ?MODULE, link_info, [Node], 30000)
                   end,
            {ok, #{ponger => spawn_link(Node, ?MODULE, ponger, []), peer => none,
                   from => From, link => Link}};
        [{error, _} = E | _] ->
            E
    end.

%% @doc One repetition.
-spec run(state(), beamlab_workload:params()) -> {ok, beamlab_workload:rep()}.
run(#{ponger := Ponger} = St, #{size := Size, payload := Shape, n := N}) ->
    Payload = payload(Shape, Size),
    {Us, Got, Last} = case maps:get(from, St, none) of
                          none -> remote_ping(Ponger, Payload, N);
                          From -> erpc:call(From, ?MODULE, remote_ping, [Ponger, Payload, N])
                      end,
    Ponger ! {count, self()},
    Counted = receive {ponger_count, C} -> C end,
    {ok, #{value => Us / N,
           extra => maps:get(link, St, #{}),
           %% The hosts and the link also in the counters, which the text
           %% view prints.
           counters => maps:merge(maps:with([pinger_node, ponger_node, link], maps:get(link, St, #{})),
                                  #{sent => N, received => Got, ponged => Counted}),
           check => beamlab_workload:check_all([{"replies", N, Got},
                                                {"ponger requests", N, Counted},
                                                {"echoed payload", true, Last =:= Payload}])}}.

%% @doc Stop the ponger (and the peer VM).
-spec teardown(state()) -> ok.
teardown(#{ponger := Ponger, peer := Peer}) ->
    unlink(Ponger),
    Ponger ! stop,
    case Peer of
        none -> ok;
        _ -> beamlab_suite_dist:stop_peer(Peer)
    end.

%% @doc One line per error.
-spec format_error(term()) -> iolist().
format_error(Reason) ->
    beamlab_format_reason:line(fun error_line/1, Reason).

error_line(remote_needs_node) -> "vm=remote needs --param ping_pong.node=NAME@HOST";
error_line(peer_and_node) -> "vm=peer starts its own VM: do not also give node";
error_line(from_needs_node) -> "from (the pinger's node) needs node (the ponger's): vm=remote";
error_line(Other) -> beamlab_suite_dist:format_error(Other).

%% @doc The echoing process (exported to be spawned on other nodes).
-spec ponger() -> ok.
ponger() -> ponger(0).

ponger(Count) ->
    receive
        {From, Msg} when is_pid(From) -> From ! {pong, Msg}, ponger(Count + 1);
        {count, From} -> From ! {ponger_count, Count}, ponger(0);
        stop -> ok
    end.

%% @doc N round trips from the calling process (run on the pinger's node):
%% the time in microseconds, the replies, the last echoed payload.
-spec remote_ping(pid(), term(), pos_integer()) -> {float(), non_neg_integer(), term()}.
remote_ping(Ponger, Payload, N) ->
    T0 = erlang:monotonic_time(),
    {Got, Last} = ping(Ponger, Payload, N, 0, none),
    T1 = erlang:monotonic_time(),
    {float(beamlab_workload:us(T1 - T0)), Got, Last}.

%% @doc The link from this node to `Peer': both nodes and hosts, the local
%% address and network device the kernel routes the peer's address through
%% (run on the pinger's node).
-spec link_info(node()) -> #{atom() => binary()}.
link_info(Peer) ->
    [_, Host] = string:split(atom_to_list(Peer), "@"),
    Remote = case inet:getaddr(Host, inet) of
                 {ok, A} -> A;
                 {error, _} -> undefined
             end,
    Local = local_address(Remote),
    Dev = case inet:getifaddrs() of
              {ok, Ifs} -> [Name || {Name, Props} <- Ifs, {addr, L} <- Props, L =:= Local];
              _ -> []
          end,
    [_, MyHost] = string:split(atom_to_list(node()), "@"),
    Text = fun(undefined) -> <<"?">>;
              (Ip) -> list_to_binary(inet:ntoa(Ip))
           end,
    #{pinger_node => atom_to_binary(node()), pinger_host => list_to_binary(MyHost),
      ponger_node => atom_to_binary(Peer), ponger_host => list_to_binary(Host),
      link => iolist_to_binary(
                [Text(Local), " (", case Dev of [D | _] -> D; [] -> "?" end, ") -> ",
                 Text(Remote), ", Erlang distribution over TCP"])}.

%% The source address the kernel picks for Remote (a connected UDP socket
%% sends nothing).
local_address(undefined) -> undefined;
local_address(Remote) ->
    case gen_udp:open(0, [binary]) of
        {ok, S} ->
            R = case gen_udp:connect(S, Remote, 9) of
                    ok -> case inet:sockname(S) of {ok, {L, _}} -> L; _ -> undefined end;
                    _ -> undefined
                end,
            gen_udp:close(S),
            R;
        _ -> undefined
    end.

ping(_Ponger, _Payload, 0, Got, Last) -> {Got, Last};
ping(Ponger, Payload, N, Got, _) ->
    Ponger ! {self(), Payload},
    receive {pong, Echo} -> ping(Ponger, Payload, N - 1, Got + 1, Echo) end.

payload(list, Size) -> lists:seq(1, Size);
payload(binary, Size) -> rand:bytes(Size).
