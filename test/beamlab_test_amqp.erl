%%% @doc AMQP helpers shared by the test suites: a client channel of the
%%% test itself, and a TCP proxy in front of the broker whose `cut' makes
%%% the broker vanish as a client sees it.
-module(beamlab_test_amqp).

-export([with_channel/2, proxy/1]).

%% @doc Runs `Fun(Channel)' on a connection of its own to `Uri', then
%% closes it and waits until the connection process has ended, so that
%% every notice it sent (to us, the channel's owner) has arrived; those
%% notices (about this connection and channel only) are then dropped.
-spec with_channel(unicode:chardata(), fun((beamlab_amqp:channel()) -> Result)) -> Result.
with_channel(Uri, Fun) ->
    {ok, Conn} = beamlab_amqp:connect(Uri, #{}),
    {ok, Ch} = beamlab_amqp:open_channel(Conn),
    try Fun(Ch)
    after
        Mon = monitor(process, Conn),
        _ = beamlab_amqp:close(Conn),
        receive {'DOWN', Mon, process, Conn, _} -> ok
        after 10000 -> error(connection_not_closed)
        end,
        flush_closed(Conn, Ch)
    end.

flush_closed(Conn, Ch) ->
    receive {amqp_closed, H, _, _} when H =:= Conn; H =:= Ch -> flush_closed(Conn, Ch)
    after 0 -> ok
    end.

%% @doc A TCP proxy on 127.0.0.1 to the broker on `BrokerPort', for any
%% number of connections, linked to the caller: `{Pid, Port}'. `Pid ! cut'
%% closes its listening port and every connection through it.
-spec proxy(inet:port_number()) -> {pid(), inet:port_number()}.
proxy(BrokerPort) ->
    Self = self(),
    Pid = spawn_link(fun() ->
                             {ok, L} = gen_tcp:listen(0, [binary, {ip, {127, 0, 0, 1}}, {active, false}]),
                             {ok, P} = inet:port(L),
                             Self ! {proxy_port, P},
                             Owner = self(),
                             _ = spawn_link(fun() -> accept_loop(L, BrokerPort, Owner) end),
                             owner(L, [])
                     end),
    receive {proxy_port, Port} -> {Pid, Port} end.

owner(L, Relays) ->
    receive
        {relay, R} -> owner(L, [R | Relays]);
        cut ->
            gen_tcp:close(L),
            [R ! cut || R <- Relays],
            receive never -> ok end
    end.

accept_loop(L, BrokerPort, Owner) ->
    case gen_tcp:accept(L) of
        {ok, A} ->
            {ok, B} = gen_tcp:connect({127, 0, 0, 1}, BrokerPort, [binary, {active, true}]),
            Relay = spawn(fun() -> receive go -> relay(A, B) end end),
            ok = gen_tcp:controlling_process(A, Relay),
            ok = gen_tcp:controlling_process(B, Relay),
            Owner ! {relay, Relay},
            Relay ! go,
            accept_loop(L, BrokerPort, Owner);
        {error, _} ->
            ok
    end.

relay(A, B) ->
    ok = inet:setopts(A, [{active, true}]),
    relay_loop(A, B).

relay_loop(A, B) ->
    receive
        {tcp, A, D} -> _ = gen_tcp:send(B, D), relay_loop(A, B);
        {tcp, B, D} -> _ = gen_tcp:send(A, D), relay_loop(A, B);
        cut -> gen_tcp:close(A), gen_tcp:close(B);
        {tcp_closed, _} -> gen_tcp:close(A), gen_tcp:close(B)
    end.
