%%% @doc One AMQP 0-9-1 connection: the process that owns its socket. It
%%% negotiates the connection (protocol header, PLAIN
%%% start/start-ok, tune/tune-ok, open), exchanges heartbeats, opens and
%%% closes numbered channels, routes inbound frames to each channel's owner
%%% as plain messages, and answers synchronous methods.
%%%
%%% Hot path: publishers and ackers encode their frames themselves and send
%%% `{'$amqp_send', Channel, IoData}' to this process (see
%%% {@link beamlab_amqp:publish/5}); each time one arrives, the process also
%%% drains every such message already waiting in its mailbox (up to
%%% `batch_msgs' messages or `batch_bytes' bytes) and writes them all with
%%% one `gen_tcp:send/2'. A channel opened with `direct' (plain TCP only)
%%% lets its owner write its frames to the socket itself
%%% ({@link write_direct/3}), one `gen_tcp:send/2' per batch, without the
%%% hop through this process (#33); a gate per channel (an atomic) keeps
%%% those writes from following the channel's close (see shut_gate/1).
%%% The owner of a direct channel that is the connection's only one may
%%% also take the socket's reads ({@link take_reads/2},
%%% beamlab_amqp_reader): this process then neither reads nor forwards,
%%% judges the broker's heartbeats by the socket's byte count, and goes on
%%% reading where the owner stopped when the reads come back (at the first
%%% frame the owner does not handle, or when it asks).
%%%
%%% The process is started unlinked and monitors its owner; it always exits
%%% `normal' and reports why it ended by message to the owners.
-module(beamlab_amqp_conn).
-behaviour(gen_server).

-include("beamlab_amqp.hrl").

-export([start/2, sync/4, keep/4, open_channel/3, open_channel/4, close_channel/2, close/2, close_all/2,
         info/1, pending/1, write_direct/3, take_reads/2]).
-export([init_it/2, init/1, handle_call/3, handle_cast/2, handle_info/2, terminate/2]).

-define(ACTIVE_N, 64).
%% A channel owner with more messages than this waiting (a consumer behind
%% its deliveries) pauses reading the socket: the backlog then stays on the
%% broker (queued, flow-controlled, counted) instead of growing without
%% bound in the client's mailboxes. Checked every ACTIVE_N packets, and
%% every PAUSE_MS while paused.
-define(OWNER_BACKLOG, 1000).
-define(PAUSE_MS, 2).
-define(DEFAULT_BATCH_MSGS, 1000).
-define(DEFAULT_BATCH_BYTES, 1 bsl 20).
-define(CLOSE_WAIT, 5000).
%% Every HIBERNATE_AFTER_MS the connection checks whether it was idle
%% (fewer than IDLE_REDS reductions since the last check) and if so
%% hibernates. Not gen_server's hibernate_after: that arms and cancels a
%% timer at every message the process waits for, a cost per burst on the
%% hot path (#33).
-define(HIBERNATE_AFTER_MS, 1000).
-define(IDLE_REDS, 5000).
%% The gate of a direct channel (one atomic): its owner may write (OPEN),
%% is writing (WRITING), or may no longer write (SHUT: the channel is
%% closing or gone). The owner moves OPEN -> WRITING -> OPEN around each
%% write; this process shuts an OPEN gate, and marks a WRITING one
%% (CLOSING), which the owner then shuts at the end of its write: an owner
%% that writes without pause cannot starve the close. A broker's
%% channel.close is answered (close-ok) only once the gate is shut, so no
%% frame of the channel follows the close-ok (the broker would close the
%% whole connection for it). A gate not yet shut is looked at again every
%% GATE_RETRY_MS.
-define(GATE_OPEN, 0).
-define(GATE_WRITING, 1).
-define(GATE_SHUT, 2).
-define(GATE_CLOSING, 3).
-define(GATE_RETRY_MS, 1).

-record(ch, {num :: char(),
             handle :: tuple(),
             owner :: pid(),
             mon :: reference(),
             %% gated: closed (by the broker or us), waiting for the
             %% owner's write in progress to end; then `gated' is done.
             state = opening :: opening | open | closing | gated,
             gate = none :: none | atomics:atomics_ref(),
             gated = none :: none | {broker, non_neg_integer(), binary()}
                           | {client, gen_server:from() | none, non_neg_integer(), binary()},
             waiters = queue:new() :: queue:queue({gen_server:from() | none, [atom()]}),
             %% A content-bearing method waiting for its header and body frames.
             content = none :: none | {tuple(), beamlab_amqp_method:props() | undefined,
                                       non_neg_integer(), [binary()]},
             %% Bytes of each delivered body kept (the rest is received
             %% and dropped): a load generator's consumer needs the
             %% stamp at its start, not 512 MiB per message (#34-7).
             keep = all :: all | non_neg_integer()}).

-record(st, {sock :: socket(),
             tr :: gen_tcp | ssl,                  % the socket's module
             owner :: pid(),
             owner_mon :: reference(),
             params :: params(),
             frame_max :: non_neg_integer(),
             channel_max :: char(),
             heartbeat :: non_neg_integer(),
             server_properties :: beamlab_amqp_method:table(),
             buf = <<>> :: binary(),
             channels = #{} :: #{char() => #ch{}},
             mons = #{} :: #{reference() => char()},
             sent = false :: boolean(),
             idle_ticks = 0 :: non_neg_integer(),
             %% Not reading the socket: a channel owner is behind.
             paused = false :: boolean(),
             batch_msgs :: pos_integer(),
             %% Hot-path counters: socket writes of batches, and the
             %% '$amqp_send' messages they carried.
             writes = 0 :: non_neg_integer(),
             sends = 0 :: non_neg_integer(),
             batch_bytes :: pos_integer(),
             %% This process's reductions at the last idle check.
             reds = 0 :: non_neg_integer(),
             %% The reads taken by the owner of channel N (take_reads/2):
             %% the socket's bytes received at the last tick (heartbeats),
             %% and the socket's messages that came back meanwhile (held,
             %% newest first, handled once the reads are back).
             lent = none :: none | {char(), non_neg_integer()},
             held = [] :: [tuple()],
             closing = none :: none | {gen_server:from() | none, term()}}).

%%====================================================================
%% API (used by beamlab_amqp)
%%====================================================================

%% @doc Connect and negotiate; returns once the connection is open. The
%% connection process is not linked to the caller.
%% `Params' is a {@link beamlab_amqp_uri:params()} map merged with options.
%% The connection parameters (beamlab_amqp_uri:params() merged with the
%% caller's beamlab_amqp:connect_opts(), host as a string or address).
-type params() :: #{host := inet:hostname() | inet:ip_address(), port := inet:port_number(),
                    user := binary(), password := binary(), vhost := binary(),
                    heartbeat := non_neg_integer(), frame_max := non_neg_integer(),
                    channel_max := non_neg_integer(), connection_timeout := pos_integer(),
                    name => binary(), batch_bytes => pos_integer(), batch_msgs => pos_integer(),
                    sndbuf => pos_integer(), recbuf => pos_integer(), nodelay => boolean(),
                    tls := false | beamlab_amqp:tls_opts(),
                    auth_mechanism := plain | external}.
-type socket() :: gen_tcp:socket() | ssl:sslsocket().
-type request() :: {sync, char(), beamlab_amqp_method:method(), [atom()]}
                 | {keep, char(), all | non_neg_integer()}
                 | {open_channel, pid(), boolean()} | {close_channel, char()} | {take_reads, char()}
                 | info | close.

-spec start(params(), pid()) -> {ok, pid()} | {error, beamlab_amqp:reason()}.
start(Params, Owner) ->
    Timeout = maps:get(connection_timeout, Params),
    %% init/1 negotiates with its own deadlines; the extra second only keeps
    %% gen_server from giving up first.
    proc_lib:start(?MODULE, init_it, [Params, Owner], 3 * Timeout + 1000).

%% @doc Send a synchronous method on a channel and wait for the reply named
%% in `Expect'.
-spec sync(pid(), char(), beamlab_amqp_method:method(), timeout()) ->
          {ok, beamlab_amqp_method:method()
               | {beamlab_amqp_method:method(), beamlab_amqp_method:props(), binary()}}
          | {error, beamlab_amqp:reason()}.
sync(Conn, Ch, Method, Timeout) ->
    call(Conn, {sync, Ch, Method, expect(Method)}, Timeout).

%% @doc How many bytes of each body delivered on channel `Ch' are kept
%% (`all', or the first `Keep'); the rest is received and dropped.
-spec keep(pid(), char(), all | non_neg_integer(), timeout()) -> ok | {error, beamlab_amqp:reason()}.
keep(Conn, Ch, Keep, Timeout) ->
    call(Conn, {keep, Ch, Keep}, Timeout).

%% @doc Open a channel owned by `Owner'.
-spec open_channel(pid(), pid(), timeout()) -> {ok, beamlab_amqp:channel()} | {error, beamlab_amqp:reason()}.
open_channel(Conn, Owner, Timeout) ->
    open_channel(Conn, Owner, false, Timeout).

%% @doc Open a channel owned by `Owner'; with `Direct' (and a plain TCP
%% connection) its owner writes the channel's frames to the socket itself
%% (see {@link write_direct/3}).
-spec open_channel(pid(), pid(), boolean(), timeout()) ->
          {ok, beamlab_amqp:channel()} | {error, beamlab_amqp:reason()}.
open_channel(Conn, Owner, Direct, Timeout) ->
    call(Conn, {open_channel, Owner, Direct}, Timeout).

%% @doc Writes frames of a direct channel from its owner's process: one
%% `gen_tcp:send/2', so the frames of one call never interleave with
%% another channel's. `written' once the socket took them; `dropped' if
%% the channel is closing or gone (its owner has or will get
%% `amqp_closed') or the socket failed (the connection reports that).
-spec write_direct(gen_tcp:socket(), atomics:atomics_ref(), iodata()) -> written | dropped.
write_direct(Sock, Gate, Data) ->
    case atomics:compare_exchange(Gate, 1, ?GATE_OPEN, ?GATE_WRITING) of
        ok ->
            Result = try gen_tcp:send(Sock, Data)
                     after
                         case atomics:compare_exchange(Gate, 1, ?GATE_WRITING, ?GATE_OPEN) of
                             ok -> ok;
                             %% The connection closes the channel (or has
                             %% shut every gate): this was the last write.
                             _ -> atomics:put(Gate, 1, ?GATE_SHUT)
                         end
                     end,
            case Result of
                ok -> written;
                {error, _} -> dropped
            end;
        _ ->
            dropped
    end.

%% @doc The owner of direct channel `Ch', the only channel of its plain
%% TCP connection, takes the socket's reads (see beamlab_amqp_reader): the
%% connection process no longer reads nor forwards the channel's frames.
%% `{error, Why}' when the connection has other channels, is TLS, or the
%% channel waits for a reply.
-spec take_reads(beamlab_amqp:channel(), timeout()) ->
          {ok, beamlab_amqp_reader:reader()} | {error, beamlab_amqp:reason()}.
take_reads(Ch, Timeout) ->
    call(element(2, Ch), {take_reads, element(3, Ch)}, Timeout).

%% @doc Close a channel (channel.close, waits for close-ok).
-spec close_channel(beamlab_amqp:channel(), timeout()) -> ok | {error, beamlab_amqp:reason()}.
close_channel(Ch, Timeout) ->
    case call(element(2, Ch), {close_channel, element(3, Ch)}, Timeout) of
        {ok, _} -> ok;
        {error, {amqp_closed, _, _}} -> ok;
        {error, closed} -> ok;
        Error -> Error
    end.

%% @doc Close the connection (connection.close, waits for close-ok).
-spec close(pid(), timeout()) -> ok.
close(Conn, Timeout) ->
    _ = call(Conn, close, Timeout),
    ok.

%% @doc Closes several connections at once, within `Timeout' in all: each
%% is asked to close (connection.close, close-ok); a connection that has not
%% ended by then (a frozen broker, a socket write that blocks) is killed,
%% which closes its socket. Returns when every one of them has ended.
-spec close_all([pid()], non_neg_integer()) -> ok.
close_all(Conns, Timeout) ->
    Deadline = erlang:monotonic_time(millisecond) + Timeout,
    Reqs = [{C, gen_server:send_request(C, close)} || C <- lists:usort(Conns)],
    lists:foreach(
      fun({C, Req}) ->
              Left = max(0, Deadline - erlang:monotonic_time(millisecond)),
              case gen_server:wait_response(Req, Left) of
                  timeout ->
                      abort(C),
                      _ = gen_server:wait_response(Req, infinity),
                      ok;
                  _ ->
                      ok
              end
      end, Reqs).

%% Kills a connection process that does not answer (blocked writing to a
%% broker that stopped reading) and drops what its socket still holds:
%% with linger {true, 0} the socket is reset instead of keeping unsent
%% data, which would otherwise hold `erlang:halt/2' (flush) and the
%% kernel until the broker reads again. Any process may set a port's
%% options; the socket is the port linked to the connection process.
abort(Conn) ->
    Ports = case erlang:process_info(Conn, links) of
                {links, Links} -> [P || P <- Links, is_port(P)];
                undefined -> []
            end,
    _ = [catch inet:setopts(P, [{linger, {true, 0}}]) || P <- Ports],
    exit(Conn, kill),
    _ = [catch erlang:port_close(P) || P <- Ports],
    ok.

%% @doc Negotiated parameters and the server's properties.
-spec info(pid()) -> {ok, beamlab_amqp:info()} | {error, beamlab_amqp:reason()}.
info(Conn) ->
    call(Conn, info, 5000).

%% @doc Messages waiting in the connection process's mailbox.
-spec pending(pid()) -> non_neg_integer().
pending(Conn) ->
    case erlang:process_info(Conn, message_queue_len) of
        {message_queue_len, N} -> N;
        undefined -> 0
    end.

call(Conn, Request, Timeout) ->
    try gen_server:call(Conn, Request, Timeout)
    catch
        exit:{timeout, _} -> {error, {timeout, request_name(Request)}};
        exit:{noproc, _} -> {error, closed};
        exit:{normal, _} -> {error, closed};
        exit:{shutdown, _} -> {error, closed}
    end.

request_name({sync, _, Method, _}) -> element(1, Method);
request_name({open_channel, _, _}) -> 'channel.open';
request_name({keep, _, _}) -> 'basic.consume';
request_name({close_channel, _}) -> 'channel.close';
request_name({take_reads, _}) -> take_reads;
request_name(close) -> 'connection.close';
request_name(Other) -> Other.

expect(#'exchange.declare'{}) -> ['exchange.declare_ok'];
expect(#'exchange.delete'{}) -> ['exchange.delete_ok'];
expect(#'exchange.bind'{}) -> ['exchange.bind_ok'];
expect(#'exchange.unbind'{}) -> ['exchange.unbind_ok'];
expect(#'queue.declare'{}) -> ['queue.declare_ok'];
expect(#'queue.bind'{}) -> ['queue.bind_ok'];
expect(#'queue.unbind'{}) -> ['queue.unbind_ok'];
expect(#'queue.purge'{}) -> ['queue.purge_ok'];
expect(#'queue.delete'{}) -> ['queue.delete_ok'];
expect(#'basic.qos'{}) -> ['basic.qos_ok'];
expect(#'basic.consume'{}) -> ['basic.consume_ok'];
expect(#'basic.cancel'{}) -> ['basic.cancel_ok'];
expect(#'basic.get'{}) -> ['basic.get_ok', 'basic.get_empty'];
expect(#'basic.recover'{}) -> ['basic.recover_ok'];
expect(#'confirm.select'{}) -> ['confirm.select_ok'];
expect(#'tx.select'{}) -> ['tx.select_ok'];
expect(#'tx.commit'{}) -> ['tx.commit_ok'];
expect(#'tx.rollback'{}) -> ['tx.rollback_ok'];
expect(#'channel.flow'{}) -> ['channel.flow_ok'].

%%====================================================================
%% Negotiation
%%====================================================================

%% @private
%% proc_lib rather than gen_server:start so that a refused connection is an
%% ordinary `{error, Reason}' for the caller, not a crash report (OTP 25 has
%% no `{error, R}' return from init/1).
-spec init_it(params(), pid()) -> ok.
init_it(Params, Owner) ->
    case connect(Params, Owner) of
        {ok, St} ->
            proc_lib:init_ack({ok, self()}),
            %% Idle checks (see HIBERNATE_AFTER_MS).
            _ = erlang:send_after(?HIBERNATE_AFTER_MS, self(), idle_check),
            gen_server:enter_loop(?MODULE, [], St);
        {stop, Reason} ->
            proc_lib:init_ack({error, Reason})
    end.

%% @private
-spec init([]) -> {stop, not_used}.
init(_) ->
    {stop, not_used}.

connect(Params, Owner) ->
    #{host := Host, port := Port, connection_timeout := Timeout} = Params,
    Deadline = erlang:monotonic_time(millisecond) + Timeout,
    SockOpts = [binary, {active, false}, {packet, raw}, {nodelay, maps:get(nodelay, Params, true)},
                {keepalive, true}]
        ++ [{K, V} || K <- [sndbuf, recbuf], {ok, V} <- [maps:find(K, Params)]],
    case open_socket(address(Host), Port, SockOpts, maps:get(tls, Params), Timeout) of
        {ok, {Tr, Sock}} ->
            try negotiate({Tr, Sock}, Params, Deadline) of
                {ok, Tuned, ServerProps} ->
                    ok = setopts(Tr, Sock, [{active, ?ACTIVE_N}]),
                    St = #st{sock = Sock, tr = Tr, owner = Owner, owner_mon = monitor(process, Owner),
                             params = Params,
                             frame_max = maps:get(frame_max, Tuned),
                             channel_max = maps:get(channel_max, Tuned),
                             heartbeat = maps:get(heartbeat, Tuned),
                             server_properties = ServerProps,
                             batch_msgs = maps:get(batch_msgs, Params, ?DEFAULT_BATCH_MSGS),
                             batch_bytes = maps:get(batch_bytes, Params, ?DEFAULT_BATCH_BYTES)},
                    schedule_tick(St),
                    {ok, St}
            catch throw:{negotiate, Reason} ->
                _ = Tr:close(Sock),
                {stop, cert_refused(Reason, Params)}
            end;
        {error, timeout} ->
            {stop, {timeout, connect}};
        {error, {tls, {tls_alert, _} = A} = E} ->
            case cert_refused({socket, A}, Params) of
                {socket, _} -> {stop, {tls, peer_text(Host, Port), tls_reason(E)}};
                Refused -> {stop, Refused}
            end;
        {error, {tls, _} = E} ->
            {stop, {tls, peer_text(Host, Port), tls_reason(E)}};
        {error, Posix} when is_atom(Posix) ->
            {stop, {unreachable, Host, Port, Posix}};
        {error, Other} ->
            {stop, {tls, peer_text(Host, Port), Other}}
    end.

%% An alert about a certificate that the broker sent (TLS 1.2: in the
%% handshake; TLS 1.3: at the first read after it) while this client
%% showed one is that certificate refused: said with its file (#34),
%% not as the broker's certificate untrusted or a socket error. An alert
%% this side generated (the broker's certificate refused here) is not.
cert_refused({socket, {tls_alert, {Alert, Text}}} = Reason, #{tls := #{certfile := File}}) ->
    Cert = lists:member(Alert, [unknown_ca, bad_certificate, unsupported_certificate, certificate_revoked,
                                certificate_expired, certificate_unknown, access_denied, decrypt_error]),
    case Cert andalso (is_list(Text) orelse is_binary(Text))
        andalso string:find(Text, "received SERVER ALERT") =/= nomatch of
        true -> {client_cert_refused, File, Alert};
        false -> Reason
    end;
cert_refused(Reason, #{tls := #{certfile := File}})
  when Reason =:= {socket, closed}; Reason =:= {closed_during, start} ->
    %% TLS 1.3: the broker's alert may be lost in the race with the AMQP
    %% header sent after the handshake: the connection is just closed
    %% before the broker said a word. The certificate is the likely cause.
    {client_cert_closed, File};
cert_refused(Reason, _) ->
    Reason.

%% An address given as text connects as that address (and TLS checks it
%% as an IP entry of the certificate).
address(Host) when is_list(Host) ->
    case inet:parse_address(Host) of
        {ok, Ip} -> Ip;
        {error, _} -> Host
    end;
address(Host) ->
    Host.

%% A TCP connection, with TLS on top for amqps://. The TLS handshake
%% shares the connection timeout.
open_socket(Host, Port, SockOpts, false, Timeout) ->
    case gen_tcp:connect(Host, Port, SockOpts, Timeout) of
        {ok, Sock} -> {ok, {gen_tcp, Sock}};
        {error, _} = E -> E
    end;
open_socket(Host, Port, SockOpts, Tls, Timeout) ->
    case {application:ensure_all_started(ssl), tls_options(Host, Tls)} of
        {{error, R}, _} ->
            {error, {tls, {ssl_not_started, R}}};
        {_, {ok, TlsOpts}} ->
            case ssl:connect(Host, Port, SockOpts ++ TlsOpts, Timeout) of
                {ok, Sock} -> {ok, {ssl, Sock}};
                {error, {tls_alert, _} = A} -> {error, {tls, A}};
                {error, {options, _} = O} -> {error, {tls, O}};
                {error, closed} -> {error, {tls, closed}};
                {error, _} = E -> E
            end;
        {_, {error, _} = E} ->
            E
    end.

%% TLS options: the peer is verified unless `verify => verify_none', with
%% the given CA file or else the system's trust store (OTP 25's
%% public_key:cacerts_get/0), against the host name (or `server_name_indication').
tls_options(Host, Tls) ->
    Verify = maps:get(verify, Tls, verify_peer),
    Cas = case {Verify, maps:find(cacertfile, Tls)} of
              {verify_none, _} -> {ok, []};
              {_, {ok, File}} -> {ok, [{cacertfile, File}]};
              {_, error} -> system_cas()
          end,
    case Cas of
        {ok, CaOpts} ->
            %% A host given as an IP address is checked against the
            %% certificate's IP entries, and no SNI is sent (RFC 6066).
            Sni = case maps:find(server_name_indication, Tls) of
                      {ok, Name} -> [{server_name_indication, Name}];
                      error when is_list(Host) ->
                          case inet:parse_address(Host) of
                              {ok, _} -> [];
                              {error, _} -> [{server_name_indication, Host}]
                          end;
                      error -> []
                  end,
            {ok, [{verify, Verify}, {log_level, none} | CaOpts]
                 ++ [{customize_hostname_check, [{match_fun, public_key:pkix_verify_hostname_match_fun(https)}]}
                     || Verify =:= verify_peer]
                 ++ Sni
                 ++ [{K, V} || K <- [certfile, keyfile], {ok, V} <- [maps:find(K, Tls)]]};
        {error, _} = E ->
            E
    end.

system_cas() ->
    case erlang:function_exported(public_key, cacerts_get, 0)
        orelse (code:ensure_loaded(public_key) =:= {module, public_key}
                andalso erlang:function_exported(public_key, cacerts_get, 0)) of
        true ->
            try {ok, [{cacerts, public_key:cacerts_get()}]}
            catch _:_ -> {error, {tls, no_system_cas}}
            end;
        false ->
            {error, {tls, no_system_cas}}
    end.

tls_reason({tls, {tls_alert, {Alert, Text}}}) ->
    %% The alert's text is several lines of the handshake's state; keep
    %% the reason in it (e.g. hostname_check_failed), if any.
    Detail = case re:run(Text, "[{]bad_cert,([a-z_]+)[}]", [{capture, all_but_first, binary}]) of
                 {match, [D]} -> D;
                 nomatch -> atom_to_binary(Alert)
             end,
    {alert, Alert, Detail};
tls_reason({tls, {options, O}}) -> {options, iolist_to_binary(io_lib:format("~0tp", [O]))};
tls_reason({tls, R}) -> R.

peer_text(Host, Port) ->
    iolist_to_binary(io_lib:format("~s:~b", [inet_host(Host), Port])).

inet_host(H) when is_tuple(H) -> inet:ntoa(H);
inet_host(H) -> H.

setopts(gen_tcp, Sock, Opts) -> inet:setopts(Sock, Opts);
setopts(ssl, Sock, Opts) -> ssl:setopts(Sock, Opts).

negotiate(Sock, Params, Deadline) ->
    #{user := User, password := Pass, vhost := VHost} = Params,
    send_raw(Sock, beamlab_amqp_frame:protocol_header()),
    {#'connection.start'{mechanisms = Mechs, server_properties = ServerProps}, Buf1} =
        recv_method(Sock, <<>>, Deadline, start, Params),
    {Mech, Response} = case maps:get(auth_mechanism, Params) of
                           plain -> {<<"PLAIN">>, <<0, User/binary, 0, Pass/binary>>};
                           %% The broker takes the user from the client's
                           %% certificate (rabbitmq_auth_mechanism_ssl).
                           external -> {<<"EXTERNAL">>, <<>>}
                       end,
    lists:member(Mech, binary:split(Mechs, <<" ">>, [global]))
        orelse throw({negotiate, {no_auth_mechanism, Mech, Mechs}}),
    StartOk = #'connection.start_ok'{client_properties = client_properties(Params),
                                     mechanism = Mech,
                                     response = Response,
                                     locale = <<"en_US">>},
    send_raw(Sock, beamlab_amqp_frame:encode_method(0, StartOk)),
    {Tune, Buf2} = recv_method(Sock, Buf1, Deadline, tune, Params),
    #'connection.tune'{channel_max = SCh, frame_max = SFr, heartbeat = SHb} = Tune,
    Tuned = #{channel_max => negotiate_max(maps:get(channel_max, Params), SCh, 16#FFFF),
              frame_max => negotiate_max(maps:get(frame_max, Params), SFr, 16#FFFFFFFF),
              %% A client asking for 0 switches heartbeats off; otherwise the
              %% lower non-zero value wins.
              heartbeat => case maps:get(heartbeat, Params) of
                               0 -> 0;
                               C when SHb =:= 0 -> C;
                               C -> min(C, SHb)
                           end},
    #{channel_max := ChMax, frame_max := FrMax, heartbeat := Hb} = Tuned,
    FrMax =:= 0 orelse FrMax >= ?AMQP_FRAME_MIN_SIZE
        orelse throw({negotiate, {frame_max_too_small, FrMax}}),
    send_raw(Sock, [beamlab_amqp_frame:encode_method(0, #'connection.tune_ok'{
                                                          channel_max = ChMax,
                                                          frame_max = FrMax,
                                                          heartbeat = Hb}),
                    beamlab_amqp_frame:encode_method(0, #'connection.open'{virtual_host = VHost})]),
    {#'connection.open_ok'{}, _} = recv_method(Sock, Buf2, Deadline, open, Params),
    {ok, Tuned#{channel_max => case ChMax of 0 -> 16#FFFF; _ -> ChMax end}, ServerProps}.

%% Spec 4.2.3 (tune): 0 means "no limit", so the non-zero value wins;
%% between two limits the lower one.
negotiate_max(0, Server, _Max) -> Server;
negotiate_max(Client, 0, _Max) -> Client;
negotiate_max(Client, Server, _Max) -> min(Client, Server).

client_properties(Params) ->
    Caps = [{<<"publisher_confirms">>, bool, true},
            {<<"exchange_exchange_bindings">>, bool, true},
            {<<"basic.nack">>, bool, true},
            {<<"consumer_cancel_notify">>, bool, true},
            {<<"connection.blocked">>, bool, true},
            {<<"authentication_failure_close">>, bool, true}],
    Vsn = case application:get_key(beamlab, vsn) of
              {ok, V} -> list_to_binary(V);
              undefined -> <<"dev">>
          end,
    [{<<"product">>, longstr, <<"beamlab">>},
     {<<"version">>, longstr, Vsn},
     {<<"platform">>, longstr, iolist_to_binary(["Erlang/OTP ", erlang:system_info(otp_release)])},
     {<<"information">>, longstr, <<"beamlab AMQP 0-9-1 load generator">>},
     {<<"capabilities">>, table, Caps}]
        ++ [{<<"connection_name">>, longstr, Name} || #{name := Name} <- [Params]].

%% Wait for the next method on channel 0 during negotiation.
recv_method(Sock, Buf, Deadline, Stage, Params) ->
    Expected = case Stage of
                   start -> 'connection.start';
                   tune -> 'connection.tune';
                   open -> 'connection.open_ok'
               end,
    case negotiation_frame(Buf) of
        {ok, {method, 0, Payload}, Rest} ->
            case beamlab_amqp_method:decode(Payload) of
                {ok, #'connection.close'{reply_code = Code, reply_text = Text}} ->
                    send_raw(Sock, beamlab_amqp_frame:encode_method(0, #'connection.close_ok'{})),
                    throw({negotiate, negotiation_close(Stage, Code, Text, Params)});
                {ok, #'connection.secure'{}} ->
                    throw({negotiate, {protocol, <<"broker asked for SASL challenge/response">>}});
                {ok, Method} when element(1, Method) =:= Expected -> {Method, Rest};
                {ok, Method} ->
                    throw({negotiate, {protocol, fmt("got ~s while waiting for ~s",
                                                     [element(1, Method), Expected])}});
                {error, R} ->
                    throw({negotiate, {protocol, iolist_to_binary(beamlab_amqp_method:format_error(R))}})
            end;
        {ok, heartbeat, Rest} ->
            recv_method(Sock, Rest, Deadline, Stage, Params);
        {ok, Other, _} ->
            throw({negotiate, {protocol, fmt("unexpected ~s frame during negotiation (~s)",
                                             [element(1, Other), Stage])}});
        {error, not_amqp} ->
            throw({negotiate, {protocol, <<"the server does not speak AMQP">>}});
        {error, R} ->
            throw({negotiate, {protocol, iolist_to_binary(beamlab_amqp_frame:format_error(R))}});
        more ->
            Left = Deadline - erlang:monotonic_time(millisecond),
            Left > 0 orelse throw({negotiate, {timeout, Stage}}),
            {Tr, S} = Sock,
            case Tr:recv(S, 0, Left) of
                {ok, Data} -> recv_method(Sock, <<Buf/binary, Data/binary>>, Deadline, Stage, Params);
                {error, timeout} -> throw({negotiate, {timeout, Stage}});
                {error, closed} when Stage =:= tune ->
                    %% Brokers without authentication_failure_close just hang up.
                    throw({negotiate, {access_refused, maps:get(user, Params),
                                       <<"connection closed during authentication">>}});
                {error, closed} ->
                    throw({negotiate, {closed_during, Stage}});
                {error, Posix} ->
                    throw({negotiate, {socket, Posix}})
            end
    end.

%% During negotiation only method and heartbeat frames on channel 0 (or the
%% server's own protocol header) make sense; anything else is not AMQP, and
%% waiting for a frame length read from, say, an HTTP reply would hang.
negotiation_frame(<<"AMQP", _/binary>> = Buf) -> beamlab_amqp_frame:parse(Buf);
negotiation_frame(<<T, 0, 0, _/binary>> = Buf) when T =:= 1; T =:= 8 -> beamlab_amqp_frame:parse(Buf);
negotiation_frame(<<_, _, _, _/binary>>) -> {error, not_amqp};
negotiation_frame(Buf) -> beamlab_amqp_frame:parse(Buf).

fmt(Fmt, Args) -> iolist_to_binary(io_lib:format(Fmt, Args)).

negotiation_close(_, 403, Text, #{auth_mechanism := external}) -> {external_refused, Text};
negotiation_close(_, 403, Text, #{user := User}) -> {access_refused, User, Text};
negotiation_close(open, 530, Text, #{vhost := VHost}) -> {vhost_not_found, VHost, Text};
negotiation_close(_, Code, Text, _) -> {connection_closed, Code, Text}.

send_raw({Tr, Sock}, Data) ->
    case Tr:send(Sock, Data) of
        ok -> ok;
        {error, R} -> throw({negotiate, {socket, R}})
    end.

%%====================================================================
%% Calls
%%====================================================================

%% @private
-spec handle_call(request(), gen_server:from(), #st{}) ->
          {noreply, #st{}} | {reply, {ok, beamlab_amqp:info()} | {error, closed}, #st{}}.
handle_call(_Req, _From, #st{closing = {_, _}} = St) ->
    {reply, {error, closed}, St};
handle_call(_Req, {Pid, _}, #st{lent = {N, _}, channels = Chs} = St)
  when is_map_key(N, Chs), Pid =:= (map_get(N, Chs))#ch.owner ->
    %% The caller reads the socket: the reply would wait for it forever.
    {reply, {error, reads_taken}, St};
handle_call(Req, From, #st{paused = true, sock = Sock, tr = Tr} = St) ->
    %% Its reply needs the socket read.
    _ = setopts(Tr, Sock, [{active, ?ACTIVE_N}]),
    handle_call(Req, From, St#st{paused = false});
handle_call({sync, N, Method, Expect}, From, St) ->
    case St#st.channels of
        #{N := #ch{state = open} = Ch} ->
            case encode_method(N, Method) of
                {ok, Frame} ->
                    Ch1 = Ch#ch{waiters = queue:in({From, Expect}, Ch#ch.waiters)},
                    {noreply, write(Frame, put_ch(Ch1, St))};
                {error, _} = E ->
                    {reply, E, St}
            end;
        _ ->
            {reply, {error, closed}, St}
    end;
handle_call({keep, N, Keep}, _From, St) ->
    case St#st.channels of
        #{N := #ch{state = open} = Ch} -> {reply, ok, put_ch(Ch#ch{keep = Keep}, St)};
        _ -> {reply, {error, closed}, St}
    end;
handle_call({open_channel, Owner, Direct}, From, #st{tr = Tr, sock = Sock} = St) ->
    case free_channel(St) of
        {ok, N} ->
            Mon = monitor(process, Owner),
            %% TLS keeps the hop: ssl:send is itself a call to another process.
            {Handle, Gate} = case Direct andalso Tr =:= gen_tcp of
                                 true ->
                                     G = atomics:new(1, [{signed, false}]),
                                     {{amqp_channel, self(), N, St#st.frame_max, {Sock, G, Owner}}, G};
                                 false ->
                                     {{amqp_channel, self(), N, St#st.frame_max}, none}
                             end,
            Ch = #ch{num = N, handle = Handle, gate = Gate,
                     owner = Owner, mon = Mon,
                     waiters = queue:from_list([{From, ['channel.open_ok']}])},
            St1 = St#st{mons = maps:put(Mon, N, St#st.mons)},
            {noreply, write(beamlab_amqp_frame:encode_method(N, #'channel.open'{}), put_ch(Ch, St1))};
        error ->
            {reply, {error, {channel_max, St#st.channel_max}}, St}
    end;
handle_call({close_channel, N}, From, St) ->
    case St#st.channels of
        #{N := #ch{state = open} = Ch} ->
            {ok, St1} = when_gate_shut(Ch, {client, From, 200, <<"Goodbye">>}, St),
            {noreply, St1};
        _ ->
            {reply, {error, closed}, St}
    end;
handle_call({take_reads, N}, {Pid, _}, #st{tr = Tr, sock = Sock, channels = Chs, lent = Lent} = St) ->
    case Chs of
        #{N := #ch{state = open, owner = Pid, gate = G, waiters = W, handle = H, keep = Keep,
                   content = Content} = Ch}
          when Tr =:= gen_tcp, G =/= none, map_size(Chs) =:= 1, Lent =:= none ->
            case queue:is_empty(W) of
                true ->
                    %% Reading stops; the socket's messages waiting here
                    %% move to the owner (in order, before the reply), and
                    %% the bytes not handled yet go with the reply.
                    %% While lent, the socket closes only when its new
                    %% owner dies (killed at the shutdown timeout, blocked
                    %% writing to a broker that stopped reading): linger
                    %% {true, 0} then drops its unsent data and resets it.
                    %% Otherwise the port stays open after its owner, to
                    %% send that data for as long as the broker does not
                    %% read, and `erlang:halt/2' (flush) waits for it: the
                    %% first Ctrl-C against a frozen broker printed the
                    %% summary but the VM did not exit. Set back when the
                    %% reads come back.
                    _ = inet:setopts(Sock, [{active, false}, {linger, {true, 0}}]),
                    case gen_tcp:controlling_process(Sock, Pid) of
                        ok ->
                            %% Still linked to the socket while the owner
                            %% reads: abort/1 finds it there and a killed
                            %% connection closes it; an owner that crashes
                            %% holding the reads takes the connection with
                            %% it, as its socket.
                            _ = try link(Sock) catch error:noproc -> false end,
                            _ = inet:setopts(Sock, [{active, ?ACTIVE_N}]),
                            R = beamlab_amqp_reader:new(Sock, self(), N, H, Keep, St#st.frame_max,
                                                        {St#st.buf, Content}),
                            {reply, {ok, R}, put_ch(Ch#ch{content = none},
                                                    St#st{buf = <<>>, paused = false,
                                                          lent = {N, recv_oct(Sock)}})};
                        {error, _} ->
                            %% The socket closed: its tcp_closed follows.
                            _ = inet:setopts(Sock, [{linger, {false, 0}}]),
                            {reply, {error, closed}, St}
                    end;
                false ->
                    {reply, {error, {reads, waiting}}, St}
            end;
        #{N := #ch{state = open}} ->
            {reply, {error, {reads, shared}}, St};
        _ ->
            {reply, {error, closed}, St}
    end;
handle_call(info, _From, St) ->
    #st{params = P} = St,
    {reply, {ok, #{host => maps:get(host, P), port => maps:get(port, P),
                   user => maps:get(user, P), vhost => maps:get(vhost, P),
                   frame_max => St#st.frame_max, channel_max => St#st.channel_max,
                   heartbeat => St#st.heartbeat,
                   server_properties => St#st.server_properties,
                   channels => maps:size(St#st.channels),
                   batch_writes => St#st.writes, batched_sends => St#st.sends}}, St};
handle_call(close, From, St) ->
    start_close(From, 200, <<"Goodbye">>, {closed, <<"connection closed by the client">>}, St).

encode_method(N, Method) ->
    try {ok, iolist_to_binary(beamlab_amqp_frame:encode_method(N, Method))}
    catch error:{amqp_encode, R} -> {error, {encode, R}}
    end.

free_channel(#st{channels = Chs, channel_max = Max}) ->
    free_channel(1, Max, Chs).

free_channel(N, Max, _) when N > Max -> error;
free_channel(N, Max, Chs) when is_map_key(N, Chs) -> free_channel(N + 1, Max, Chs);
free_channel(N, _, _) -> {ok, N}.

%% @private
-spec handle_cast(_, #st{}) -> {noreply, #st{}}.
handle_cast(_Msg, St) ->
    {noreply, St}.

%%====================================================================
%% Hot path and socket
%%====================================================================

%% @private
-spec handle_info(term(), #st{}) -> {noreply, #st{}} | {noreply, #st{}, hibernate} | {stop, normal, #st{}}.
handle_info({'$amqp_send', _, _}, #st{closing = {_, _}} = St) ->
    %% Once connection.close is sent, the spec allows nothing but close-ok.
    {noreply, St};
handle_info({'$amqp_send', _, _, _}, #st{closing = {_, _}} = St) ->
    {noreply, St};
handle_info({'$amqp_send', N, Data}, St) ->
    {Acc, Size, Done} = add_send(N, Data, none, St, {[], 0, []}),
    drain(St, Acc, Size, Done, 1);
handle_info({'$amqp_send', N, Data, Written}, St) ->
    {Acc, Size, Done} = add_send(N, Data, Written, St, {[], 0, []}),
    drain(St, Acc, Size, Done, 1);
handle_info(Msg, #st{lent = {_, _}, sock = Sock, held = Held} = St)
  when element(2, Msg) =:= Sock, (element(1, Msg) =:= tcp orelse element(1, Msg) =:= tcp_closed
                                  orelse element(1, Msg) =:= tcp_error
                                  orelse element(1, Msg) =:= tcp_passive) ->
    %% Moved here by the reader giving the reads back: handled after the
    %% bytes it had not handled (its '$amqp_reads_back' follows).
    {noreply, St#st{held = [Msg | Held]}};
handle_info({'$amqp_reads_back', N, Buf, Content, Extra}, #st{lent = {N, _}, held = Held} = St) ->
    %% Closes are the connection's again (close-ok handshake, abort/1).
    _ = inet:setopts(St#st.sock, [{linger, {false, 0}}]),
    St1 = case St#st.channels of
              #{N := Ch} -> put_ch(Ch#ch{content = Content}, St);
              _ -> St
          end,
    reads_back(frames(Buf, St1#st{lent = none, held = [], idle_ticks = 0}), lists:reverse(Held) ++ Extra);
handle_info({T, Sock, Data}, #st{sock = Sock, buf = Buf} = St) when T =:= tcp; T =:= ssl ->
    Buf1 = case Buf of <<>> -> Data; _ -> <<Buf/binary, Data/binary>> end,
    frames(Buf1, St#st{idle_ticks = 0});
handle_info({T, Sock}, #st{sock = Sock} = St) when T =:= tcp_passive; T =:= ssl_passive ->
    {noreply, read_on(St)};
handle_info(resume, #st{paused = true} = St) ->
    {noreply, read_on(St)};
handle_info(resume, St) ->
    {noreply, St};
handle_info({T, Sock}, #st{sock = Sock} = St) when T =:= tcp_closed; T =:= ssl_closed ->
    lost(socket_closed, "socket closed", St);
handle_info({T, Sock, Reason}, #st{sock = Sock} = St) when T =:= tcp_error; T =:= ssl_error ->
    lost(socket_error, io_lib:format("~ts", [socket_error_text(Reason)]), St);
handle_info(tick, #st{closing = {_, _}} = St) ->
    {noreply, St};
handle_info(tick, #st{lent = {N, Oct0}, sock = Sock, idle_ticks = Idle} = St) ->
    %% The owner reads: the socket's byte count says whether the broker
    %% sent anything since the last tick.
    Oct = recv_oct(Sock),
    tick(St#st{lent = {N, Oct}, idle_ticks = case Oct of Oct0 -> Idle; _ -> 0 end});
handle_info(tick, St) ->
    tick(St);
handle_info(idle_check, #st{reds = Reds0} = St) ->
    _ = erlang:send_after(?HIBERNATE_AFTER_MS, self(), idle_check),
    {reductions, Reds} = erlang:process_info(self(), reductions),
    case Reds - Reds0 < ?IDLE_REDS of
        %% An idle connection (many slow producers, -P) shrinks to what
        %% it holds.
        true -> {noreply, St#st{reds = Reds}, hibernate};
        false -> {noreply, St#st{reds = Reds}}
    end;
handle_info(close_timeout, #st{closing = {From, {Code, Text}}} = St) ->
    reply_close(From),
    shutdown(Code, Text, St);
handle_info({'DOWN', Mon, process, _, _}, #st{owner_mon = Mon} = St) ->
    start_close(none, 320, <<"CONNECTION_FORCED - owner process exited">>,
                {owner_down, <<"connection owner exited">>}, St);
handle_info({gate, N}, St) ->
    case St#st.channels of
        #{N := #ch{state = gated, gated = Close} = Ch} ->
            {ok, St1} = when_gate_shut(Ch, Close, St),
            {noreply, St1};
        _ ->
            {noreply, St}
    end;
handle_info({'DOWN', Mon, process, _, _}, #st{mons = Mons, lent = {N, _}} = St)
  when map_get(Mon, Mons) =:= N ->
    %% The owner held the reads: its socket closed with it.
    lost(socket_closed, "closed with the channel owner that read it", St);
handle_info({'DOWN', Mon, process, _, _}, #st{mons = Mons} = St) ->
    case Mons of
        #{Mon := N} ->
            St1 = St#st{mons = maps:remove(Mon, Mons)},
            %% A dead owner writes no more (even if it died writing).
            _ = case St1#st.channels of
                    #{N := #ch{gate = G}} when G =/= none -> atomics:put(G, 1, ?GATE_SHUT);
                    _ -> ok
                end,
            case St1#st.channels of
                #{N := #ch{state = S} = Ch} when S =:= closing; S =:= gated ->
                    {noreply, put_ch(Ch#ch{owner = self()}, St1)};
                #{N := Ch} ->
                    %% Nobody to tell: close it quietly.
                    Ch1 = Ch#ch{owner = self()},
                    {noreply, start_channel_close(Ch1, none, 200, <<"channel owner exited">>, St1)};
                _ ->
                    {noreply, St1}
            end;
        _ ->
            {noreply, St}
    end;
handle_info(_Other, St) ->
    {noreply, St}.

add_send(N, Data, Written, #st{channels = Chs}, {Acc, Size, Done} = Batch) ->
    case Chs of
        #{N := #ch{state = open} = Ch} ->
            {[Data | Acc], Size + iolist_size(Data), written(Written, Ch, Done)};
        %% Frames for a channel that is closing or gone would be a protocol
        %% error; the owner already has (or will get) its amqp_closed message.
        _ -> Batch
    end.

written(none, _Ch, Done) -> Done;
written(Written, #ch{owner = O, handle = H}, Done) -> [{Written, O, H} | Done].

drain(#st{batch_msgs = MaxN, batch_bytes = MaxB} = St, Acc, Size, Done, Count)
  when Count < MaxN, Size < MaxB ->
    receive
        {'$amqp_send', N, Data} ->
            {Acc1, Size1, Done1} = add_send(N, Data, none, St, {Acc, Size, Done}),
            drain(St, Acc1, Size1, Done1, Count + 1);
        {'$amqp_send', N, Data, Written} ->
            {Acc1, Size1, Done1} = add_send(N, Data, Written, St, {Acc, Size, Done}),
            drain(St, Acc1, Size1, Done1, Count + 1)
    after 0 ->
        flush(Acc, Done, Count, St)
    end;
drain(St, Acc, _, Done, Count) ->
    flush(Acc, Done, Count, St).

%% The write returns once the socket took the data (it blocks while the
%% port is busy: the kernel's buffer is full because the broker reads no
%% faster, or blocked the connection); only then are the sends counted
%% and their senders told.
flush([], _, _, St) -> {noreply, St};
flush(Acc, Done, Count, #st{writes = W, sends = S} = St) ->
    case send(St#st.tr, St#st.sock, lists:reverse(Acc)) of
        ok ->
            lists:foreach(fun done/1, lists:reverse(Done)),
            {noreply, St#st{sent = true, writes = W + 1, sends = S + Count}};
        {error, R} -> lost(socket_error, send_error(R), St)
    end.

done({{C, Ix, K, Notify}, Owner, H}) ->
    counters:add(C, Ix, K),
    case Notify of
        notify -> Owner ! {amqp_written, H}, ok;
        silent -> ok
    end.

send_error(closed) -> "socket closed";
send_error(R) -> socket_error_text(R).

socket_error_text(R) when is_atom(R) -> inet:format_error(R);
socket_error_text(R) -> ssl:format_error(R).

%% A static call (a call through the module in a variable looks the
%% function up at every call).
send(gen_tcp, Sock, Data) -> gen_tcp:send(Sock, Data);
send(ssl, Sock, Data) -> ssl:send(Sock, Data).

%% Writes from the connection process itself (replies, control methods).
write(Data, St) ->
    case send(St#st.tr, St#st.sock, Data) of
        ok -> ok;
        %% The socket's closed/error message follows and ends the connection.
        {error, _} -> ok
    end,
    St#st{sent = true}.

tick(#st{paused = true} = St) ->
    %% Not reading: the broker's heartbeats wait in the socket, unseen.
    schedule_tick(St),
    {noreply, maybe_heartbeat(St)};
tick(#st{heartbeat = Hb, idle_ticks = Idle} = St) ->
    schedule_tick(St),
    %% Ticks come every heartbeat/2: four idle ticks are two missed heartbeats.
    case Idle + 1 >= 4 of
        true ->
            Text = io_lib:format("missed heartbeats from ~s (no data for ~b s)",
                                 [peer(St), (Idle + 1) * Hb div 2]),
            shutdown(heartbeat_timeout, iolist_to_binary(Text), St);
        false ->
            {noreply, (maybe_heartbeat(St))#st{idle_ticks = Idle + 1}}
    end.

recv_oct(Sock) ->
    case inet:getstat(Sock, [recv_oct]) of
        {ok, [{recv_oct, N}]} -> N;
        _ -> 0
    end.

%% The reads are back (beamlab_amqp_reader): after the bytes the owner had
%% not handled, the socket's messages held meanwhile, then reading goes on.
reads_back({noreply, St}, [Msg | Rest]) ->
    reads_back(handle_info(Msg, St), Rest);
reads_back({noreply, #st{paused = false} = St}, []) ->
    {noreply, read_on(St)};
reads_back(Done, _) ->
    Done.

maybe_heartbeat(St) ->
    St1 = case St#st.sent of
              true -> St;
              false -> write(beamlab_amqp_frame:encode_heartbeat(), St)
          end,
    St1#st{sent = false}.

%% Reads the next ACTIVE_N packets, unless a channel owner is behind (and
%% nobody waits for a reply, which would need the socket read): then checks
%% again in PAUSE_MS. If the socket just closed, setopts fails; tcp_closed
%% follows and ends us.
read_on(#st{sock = Sock, tr = Tr} = St) ->
    case owner_behind(St) of
        true ->
            erlang:send_after(?PAUSE_MS, self(), resume),
            St#st{paused = true};
        false ->
            _ = setopts(Tr, Sock, [{active, ?ACTIVE_N}]),
            St#st{paused = false}
    end.

owner_behind(#st{closing = {_, _}}) ->
    false;
owner_behind(#st{channels = Chs}) ->
    Self = self(),
    Chans = maps:values(Chs),
    lists:all(fun(#ch{waiters = W}) -> queue:is_empty(W) end, Chans)
        andalso lists:any(fun(#ch{owner = O}) when O =:= Self -> false;
                             (#ch{owner = O}) ->
                                  case erlang:process_info(O, message_queue_len) of
                                      {message_queue_len, L} -> L > ?OWNER_BACKLOG;
                                      undefined -> false
                                  end
                          end, Chans).

schedule_tick(#st{heartbeat = 0}) -> ok;
schedule_tick(#st{heartbeat = Hb}) -> erlang:send_after(Hb * 500, self(), tick), ok.

%%====================================================================
%% Inbound frames
%%====================================================================

frames(Buf, St) ->
    case beamlab_amqp_frame:parse(Buf, St#st.frame_max) of
        {ok, Frame, Rest} ->
            case frame(Frame, St) of
                {ok, St1} -> frames(Rest, St1);
                {stop, _, _} = Stop -> Stop
            end;
        more ->
            {noreply, St#st{buf = Buf}};
        {error, R} ->
            protocol_error(501, beamlab_amqp_frame:format_error(R), St)
    end.

frame(heartbeat, St) ->
    {ok, St};
frame({method, 0, Payload}, St) ->
    case beamlab_amqp_method:decode(Payload) of
        {ok, M} -> connection_method(M, St);
        {error, R} -> protocol_error(502, beamlab_amqp_method:format_error(R), St)
    end;
frame({Type, N, Payload}, #st{channels = Chs} = St) ->
    case Chs of
        #{N := Ch} -> channel_frame(Type, Payload, Ch, St);
        _ -> protocol_error(504, io_lib:format("frame on unknown channel ~b", [N]), St)
    end.

connection_method(#'connection.close'{reply_code = Code, reply_text = Text}, St) ->
    _ = write(beamlab_amqp_frame:encode_method(0, #'connection.close_ok'{}), St),
    case St#st.closing of
        {From, _} -> reply_close(From);
        none -> ok
    end,
    shutdown(Code, Text, St);
connection_method(#'connection.close_ok'{}, #st{closing = {From, {Code, Text}}} = St) ->
    reply_close(From),
    shutdown(Code, Text, St);
connection_method(#'connection.blocked'{reason = Reason}, St) ->
    St#st.owner ! {amqp_blocked, self(), Reason},
    {ok, St};
connection_method(#'connection.unblocked'{}, St) ->
    St#st.owner ! {amqp_unblocked, self()},
    {ok, St};
connection_method(M, St) ->
    protocol_error(503, io_lib:format("unexpected ~s on channel 0", [element(1, M)]), St).

channel_frame(method, Payload, #ch{content = none} = Ch, St) ->
    case beamlab_amqp_method:decode(Payload) of
        {ok, M} -> channel_method(M, Ch, St);
        {error, R} -> protocol_error(502, beamlab_amqp_method:format_error(R), St)
    end;
channel_frame(header, Payload, #ch{content = {M, undefined, _, []}} = Ch, St) ->
    case beamlab_amqp_method:decode_header(Payload) of
        {ok, _Class, 0, Props} -> content_done(M, Props, <<>>, Ch#ch{content = none}, St);
        {ok, _Class, Size, Props} -> {ok, put_ch(Ch#ch{content = {M, Props, Size, []}}, St)};
        {error, R} -> protocol_error(502, beamlab_amqp_method:format_error(R), St)
    end;
channel_frame(body, Payload, #ch{content = {M, Props, Left, Acc}, keep = Keep} = Ch, St)
  when Props =/= undefined ->
    case Left - byte_size(Payload) of
        0 when Acc =:= [], Keep =:= all -> content_done(M, Props, Payload, Ch#ch{content = none}, St);
        0 -> content_done(M, Props, iolist_to_binary(lists:reverse(kept(Keep, Payload, Acc))),
                          Ch#ch{content = none}, St);
        L when L > 0 -> {ok, put_ch(Ch#ch{content = {M, Props, L, kept(Keep, Payload, Acc)}}, St)};
        _ -> protocol_error(501, "body frames longer than the content header's body size", St)
    end;
channel_frame(_Type, _, #ch{state = S} = Ch, St) when S =:= closing; S =:= gated ->
    %% Content of a delivery that raced with our channel.close: discard.
    {ok, put_ch(Ch, St)};
channel_frame(Type, _, Ch, St) ->
    protocol_error(505, io_lib:format("unexpected ~s frame on channel ~b", [Type, Ch#ch.num]), St).

kept(Keep, Payload, Acc) ->
    beamlab_amqp_reader:kept(Keep, Payload, Acc).

content_done(_M, _Props, _Body, #ch{state = closing} = Ch, St) ->
    {ok, put_ch(Ch, St)};
content_done(#'basic.deliver'{delivery_tag = Tag, redelivered = R, exchange = X, routing_key = K},
             Props, Body, #ch{owner = Owner, handle = H} = Ch, St) ->
    Owner ! {amqp_deliver, H, Tag, R, X, K, Props, Body},
    {ok, put_ch(Ch, St)};
content_done(#'basic.return'{reply_code = C, reply_text = T, exchange = X, routing_key = K},
             Props, Body, #ch{owner = Owner, handle = H} = Ch, St) ->
    Owner ! {amqp_return, H, C, T, X, K, Props, Body},
    {ok, put_ch(Ch, St)};
content_done(#'basic.get_ok'{} = M, Props, Body, Ch, St) ->
    reply_waiter({M, Props, Body}, Ch, St).

channel_method(#'channel.close'{reply_code = Code, reply_text = Text},
               #ch{state = gated, gated = {client, From, _, _}} = Ch, St) ->
    %% Both ends closing: the broker's close wins, ours is not sent.
    reply(From, {ok, closed}),
    {ok, put_ch(Ch#ch{gated = {broker, Code, Text}}, St)};
channel_method(_M, #ch{state = gated}, St) ->
    %% Closed, waiting for the owner's write to end: as closing.
    {ok, St};
channel_method(M, #ch{state = closing} = Ch, St) ->
    %% Spec: after sending channel.close, discard everything but close/close-ok.
    case M of
        #'channel.close_ok'{} -> channel_gone(Ch, {ok, M}, none, St);
        #'channel.close'{} ->
            St1 = write(beamlab_amqp_frame:encode_method(Ch#ch.num, #'channel.close_ok'{}), St),
            channel_gone(Ch, {ok, M}, none, St1);
        _ -> {ok, St}
    end;
channel_method(#'basic.deliver'{} = M, Ch, St) ->
    {ok, put_ch(Ch#ch{content = {M, undefined, 0, []}}, St)};
channel_method(#'basic.ack'{delivery_tag = Tag, multiple = Mu}, #ch{owner = O, handle = H}, St) ->
    O ! {amqp_confirm, H, ack, Tag, Mu},
    {ok, St};
channel_method(#'basic.nack'{delivery_tag = Tag, multiple = Mu}, #ch{owner = O, handle = H}, St) ->
    O ! {amqp_confirm, H, nack, Tag, Mu},
    {ok, St};
channel_method(#'basic.return'{} = M, Ch, St) ->
    {ok, put_ch(Ch#ch{content = {M, undefined, 0, []}}, St)};
channel_method(#'basic.get_ok'{} = M, Ch, St) ->
    {ok, put_ch(Ch#ch{content = {M, undefined, 0, []}}, St)};
channel_method(#'channel.open_ok'{}, #ch{state = opening} = Ch, St) ->
    reply_waiter({ok, Ch#ch.handle}, Ch#ch{state = open}, St, raw);
channel_method(#'channel.close'{reply_code = Code, reply_text = Text}, Ch, St) ->
    when_gate_shut(Ch, {broker, Code, Text}, St);
channel_method(#'channel.flow'{active = A}, Ch, St) ->
    St1 = write(beamlab_amqp_frame:encode_method(Ch#ch.num, #'channel.flow_ok'{active = A}), St),
    Ch#ch.owner ! {amqp_flow, Ch#ch.handle, A},
    {ok, St1};
channel_method(#'basic.cancel'{consumer_tag = Tag}, Ch, St) ->
    %% Broker-initiated cancel (consumer_cancel_notify), e.g. queue deleted.
    Ch#ch.owner ! {amqp_cancelled, Ch#ch.handle, Tag},
    {ok, St};
channel_method(M, Ch, St) ->
    reply_waiter({ok, M}, Ch, St).

%% The broker closed the channel: close-ok, and its owner is told.
broker_closed(Ch, Code, Text, St) ->
    St1 = write(beamlab_amqp_frame:encode_method(Ch#ch.num, #'channel.close_ok'{}), St),
    Ch#ch.owner ! {amqp_closed, Ch#ch.handle, Code, Text},
    channel_gone(Ch, {error, {amqp_closed, Code, Text}}, {error, {amqp_closed, Code, Text}}, St1).

%% Closes the channel (answers the broker's close, or sends ours) once
%% its owner can no longer write to the socket: at once, unless a direct
%% write is in progress; then the channel waits (state gated) and the
%% gate is tried again in GATE_RETRY_MS, while this process goes on
%% reading.
when_gate_shut(#ch{gate = G, num = N} = Ch, Close, St) ->
    case shut_gate(G) of
        true ->
            case Close of
                {broker, Code, Text} -> broker_closed(Ch#ch{gated = none}, Code, Text, St);
                {client, From, Code, Text} -> {ok, start_channel_close(Ch#ch{gated = none}, From, Code, Text, St)}
            end;
        false ->
            _ = erlang:send_after(?GATE_RETRY_MS, self(), {gate, N}),
            {ok, put_ch(Ch#ch{state = gated, gated = Close, content = none}, St)}
    end.

shut_gate(none) ->
    true;
shut_gate(G) ->
    case atomics:compare_exchange(G, 1, ?GATE_OPEN, ?GATE_SHUT) of
        ok -> true;
        ?GATE_SHUT -> true;
        ?GATE_CLOSING -> false;
        ?GATE_WRITING ->
            case atomics:compare_exchange(G, 1, ?GATE_WRITING, ?GATE_CLOSING) of
                ok -> false;
                %% The write ended meanwhile: try again.
                _ -> shut_gate(G)
            end
    end.

%% Shuts every gate at once: the connection is closing or gone (the
%% broker ignores channel frames once connection.close is under way).
shut_gates(#st{channels = Chs}) ->
    maps:foreach(fun(_, #ch{gate = none}) -> ok;
                    (_, #ch{gate = G}) -> atomics:put(G, 1, ?GATE_SHUT)
                 end, Chs).

reply_waiter(Reply, Ch, St) ->
    reply_waiter(Reply, Ch, St, checked).

reply_waiter(Reply, #ch{waiters = W} = Ch, St, Mode) ->
    case queue:out(W) of
        {{value, {From, Expect}}, W1} ->
            Name = reply_name(Reply),
            case Mode =:= raw orelse lists:member(Name, Expect) of
                true ->
                    reply(From, case Reply of {ok, _} -> Reply; _ -> {ok, Reply} end),
                    {ok, put_ch(Ch#ch{waiters = W1}, St)};
                false ->
                    protocol_error(505, io_lib:format("got ~s, expected ~p", [Name, Expect]), St)
            end;
        {empty, _} ->
            protocol_error(505, io_lib:format("unexpected ~s", [reply_name(Reply)]), St)
    end.

reply_name({ok, M}) when is_tuple(M) -> element(1, M);
reply_name({M, _Props, _Body}) -> element(1, M).

reply(none, _) -> ok;
reply(From, Reply) -> gen_server:reply(From, Reply).

start_channel_close(Ch, From, Code, Text, St) ->
    Frame = beamlab_amqp_frame:encode_method(Ch#ch.num, #'channel.close'{reply_code = Code,
                                                                          reply_text = Text}),
    %% Pending callers will not get their replies: the broker discards them.
    lists:foreach(fun({F, _}) -> reply(F, {error, closed}) end, queue:to_list(Ch#ch.waiters)),
    Ch1 = Ch#ch{state = closing, content = none,
                waiters = queue:from_list([{From, ['channel.close_ok']}])},
    write(Frame, put_ch(Ch1, St)).

%% The channel ended: answer its waiters (first gets FirstReply, the rest
%% RestReply) and forget it.
channel_gone(#ch{num = N, mon = Mon, waiters = W}, FirstReply, RestReply, St) ->
    case queue:to_list(W) of
        [] -> ok;
        [{F, _} | Rest] ->
            reply(F, FirstReply),
            case RestReply of
                none -> ok;
                _ -> lists:foreach(fun({F2, _}) -> reply(F2, RestReply) end, Rest)
            end
    end,
    demonitor(Mon, [flush]),
    {ok, St#st{channels = maps:remove(N, St#st.channels), mons = maps:remove(Mon, St#st.mons)}}.

put_ch(#ch{num = N} = Ch, St) ->
    St#st{channels = maps:put(N, Ch, St#st.channels)}.

%%====================================================================
%% Ending the connection
%%====================================================================

%% We close: send connection.close and wait (bounded) for close-ok.
start_close(From, Code, Text, Why, St) ->
    shut_gates(St),
    St1 = write(beamlab_amqp_frame:encode_method(0, #'connection.close'{reply_code = Code,
                                                                        reply_text = Text}), St),
    erlang:send_after(?CLOSE_WAIT, self(), close_timeout),
    {noreply, St1#st{closing = {From, Why}}}.

reply_close(none) -> ok;
reply_close(From) -> gen_server:reply(From, {ok, closed}).

protocol_error(Code, Detail, St) ->
    Text = iolist_to_binary(Detail),
    _ = write(beamlab_amqp_frame:encode_method(0, #'connection.close'{reply_code = Code,
                                                                       reply_text = Text}), St),
    shutdown(protocol_error, Text, St).

lost(Code, Detail, St) ->
    case St#st.closing of
        {From, {C, T}} ->
            %% We were closing anyway: the broker closed the socket first.
            reply_close(From),
            shutdown(C, T, St);
        none ->
            shutdown(Code, iolist_to_binary(io_lib:format("connection to ~s lost: ~s",
                                                          [peer(St), Detail])), St)
    end.

%% Tell everybody why the connection ended, then stop.
shutdown(Code, Text, #st{closing = Closing} = St) ->
    shut_gates(St),
    reset_if_unsent(St),
    _ = (St#st.tr):close(St#st.sock),
    Err = case is_integer(Code) of
              true -> {error, {connection_closed, Code, Text}};
              false -> {error, {Code, Text}}
          end,
    Self = self(),
    maps:foreach(
      fun(_, #ch{owner = O, handle = H, waiters = W}) ->
              lists:foreach(fun({F, _}) -> reply(F, Err) end, queue:to_list(W)),
              case O of
                  Self -> ok;     % orphaned channel being closed
                  _ -> O ! {amqp_closed, H, Code, Text}, ok
              end
      end, St#st.channels),
    case Closing of
        {_, _} when Code =:= closed -> ok;    % the owner asked for it
        _ -> St#st.owner ! {amqp_closed, self(), Code, Text}, ok
    end,
    {stop, normal, St#st{channels = #{}}}.

%% Output the broker has not read by now (it stopped reading: frozen, or
%% it never answered our connection.close) is dropped: with linger
%% {true, 0} the close resets the socket instead of leaving the port open
%% to send it later, which would hold `erlang:halt/2' (flush) for as long
%% as the broker does not read.
reset_if_unsent(#st{tr = gen_tcp, sock = Sock}) when is_port(Sock) ->
    case erlang:port_info(Sock, queue_size) of
        {queue_size, N} when N > 0 -> _ = inet:setopts(Sock, [{linger, {true, 0}}]), ok;
        _ -> ok
    end;
reset_if_unsent(_) ->
    ok.

peer(#st{params = #{host := H, port := P}}) ->
    io_lib:format("~s:~b", [H, P]).

%% @private
-spec terminate(term(), #st{}) -> ok.
terminate(_Reason, _St) ->
    ok.
