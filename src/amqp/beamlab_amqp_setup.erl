%%% @doc The coordinator's own connection to the broker (the "setup"
%%% connection): each step on it is bounded, so a frozen broker cannot hold
%%% the end of a run; it is reopened when the broker closed it; and with
%%% `--reconnect' a helper declares the run's topology again after a broker
%%% restart.
-module(beamlab_amqp_setup).

-export([op/5, close/1, redeclare/3]).

-export_type([conn/0, target/0]).

%% A broker node to connect to: its parameters and the run's connection
%% options (TLS, heartbeat, frame_max, TCP).
-type target() :: {beamlab_amqp:params(), beamlab_amqp:connect_opts()}.

%% The setup connection, `lost' while the broker has it closed (a
%% redeclaring helper reopens it), or `unresponsive' once a step timed out
%% (it was killed; later steps are skipped).
-type conn() :: beamlab_amqp:conn() | lost | unresponsive.

-define(CLOSE_MS, 3000).
-define(REDECLARE_RETRY_MS, 500).

%% @doc Runs `Op' on a live setup connection within `TimeoutMs': returns
%% its value and the connection to keep, or `Default' and `unresponsive'
%% when the broker did not answer in time (the connection is then killed
%% and later steps are skipped: a broker that does not answer, frozen,
%% cannot hold the end of a run). The step runs in a helper process so
%% that a call without answer cannot hold the run. A connection the broker
%% closed is reopened first, owned by the caller.
-spec op(conn(), target(), fun((beamlab_amqp:conn()) -> V), D, non_neg_integer()) ->
          {V | D, conn()}.
op(unresponsive, _Target, _Op, Default, _TimeoutMs) ->
    {Default, unresponsive};
op(Conn, Uri, Op, Default, TimeoutMs) ->
    Self = self(),
    {Pid, Mon} = spawn_monitor(
                   fun() ->
                           Live = live_conn(Conn, Uri, Self),
                           Self ! {setup_conn, self(), Live},
                           Self ! {setup_op, self(), Live, try Op(Live) catch _:_ -> Default end}
                   end),
    receive
        {setup_op, Pid, Live, V} ->
            demonitor(Mon, [flush]),
            flush_setup_conn(Pid),
            {V, Live};
        {'DOWN', Mon, process, Pid, _} ->
            {Default, setup_op_conn(Pid, Conn)}
    after TimeoutMs ->
        exit(Pid, kill),
        receive {'DOWN', Mon, process, Pid, _} -> ok end,
        ok = beamlab_amqp:close_all([C || C <- lists:usort([Conn, setup_op_conn(Pid, Conn)]),
                                          is_pid(C)], 0),
        {Default, unresponsive}
    end.

%% The setup connection may have been closed by the broker during the run
%% (it survives with --reconnect): open a new one, owned by the
%% coordinator, for the final queue depths and deletions.
live_conn(Conn, Uri, Owner) ->
    case is_pid(Conn) andalso is_process_alive(Conn) of
        true -> Conn;
        false -> new_conn(Conn, Uri, Owner)
    end.

setup_op_conn(Pid, Default) ->
    receive {setup_conn, Pid, C} -> C
    after 0 -> Default
    end.

flush_setup_conn(Pid) ->
    _ = setup_op_conn(Pid, none),
    ok.

new_conn(Conn, {Uri, Opts}, Owner) ->
    case beamlab_amqp:connect(Uri, Opts#{name => <<"beamlab amqp setup (reopened)">>, owner => Owner}) of
        {ok, C} -> C;
        {error, _} -> Conn
    end.

%% @doc Closes the setup connection(s), bounded, and drops their notices to
%% us, the owner. `lost' and `unresponsive' are skipped.
-spec close([conn()]) -> ok.
close(Conns0) ->
    Conns = lists:usort([C || C <- Conns0, is_pid(C)]),
    ok = beamlab_amqp:close_all(Conns, ?CLOSE_MS),
    lists:foreach(fun flush_conn/1, Conns).

flush_conn(C) ->
    receive
        {amqp_closed, C, _, _} -> flush_conn(C);
        {amqp_closed, {amqp_channel, C, _, _}, _, _} -> flush_conn(C)
    after 0 ->
        ok
    end.

%% @doc With `--reconnect', after the broker closed the setup connection:
%% reconnects (retrying) and declares the run's topology again, exactly as
%% at the start. Tells `Coord' `{setup_conn, self(), Conn}' for each new
%% connection (owned by `Coord') and `{redeclared, self(), Result}' once
%% declared or refused by the broker. Runs in the calling process (spawn
%% it).
-spec redeclare(pid(), {target(), beamlab_amqp_config:config()}, [binary()]) -> ok.
redeclare(Coord, {{Uri, Opts}, Cfg} = Run, Names) ->
    case beamlab_amqp:connect(Uri, Opts#{name => <<"beamlab amqp setup (reconnected)">>,
                                         owner => Coord}) of
        {ok, Conn} ->
            Coord ! {setup_conn, self(), Conn},
            case catch beamlab_amqp_topology:declare([Conn], Cfg, Names) of
                {ok, _} = Ok ->
                    Coord ! {redeclared, self(), Ok},
                    ok;
                {error, {_, _, {amqp_closed, _, _}}} = E ->
                    %% The broker refused (404 with -p, 406 arguments...).
                    Coord ! {redeclared, self(), E},
                    ok;
                _ ->
                    %% The new connection was lost too (restarting again).
                    receive after ?REDECLARE_RETRY_MS -> ok end,
                    redeclare(Coord, Run, Names)
            end;
        {error, _} ->
            receive after ?REDECLARE_RETRY_MS -> ok end,
            redeclare(Coord, Run, Names)
    end.
