%%% @doc beamlab's AMQP 0-9-1 client: the functions a load generator (or a
%%% test) calls. Connections are {@link beamlab_amqp_conn} processes;
%%% channels are plain terms naming the connection and channel number, so
%%% that publishing and acking are a local encode plus one message to the
%%% connection process, with no call and no reply. See docs/amqp-client.md.
-module(beamlab_amqp).

%% In every ack frame: inlined (#33).
-compile({inline, [bool/1]}).

-include("beamlab_amqp.hrl").

-export([connect/2, close/1, close_all/2, info/1, pending/1,
         open_channel/1, open_channel/2, close_channel/1, close_channel/2,
         declare_queue/3, declare_exchange/3, delete_exchange/3,
         bind/4, bind/5, unbind/4, unbind/5, bind_exchange/5,
         purge/2, delete_queue/3, qos/2, consume/3, cancel/2, cancel/3, confirm_select/1,
         tx_select/1, tx_commit/1, commit/1, tx_rollback/1,
         get/3, recover/2,
         publish/4, publish/5, ack/3, nack/3, nack/4, reject/3,
         publish_frames/5, publish_head/5, publish_body/2, publish_body_head/2, ack_frame/3, nack_frame/4, send/2, send/3,
         take_reads/1, reads/2, give_back_reads/1,
         format_error/1]).

-export_type([conn/0, channel/0, written/0, reader/0, params/0, connect_opts/0, tls_opts/0, tcp_opts/0, arguments/0, reason/0, info/0,
              queue_opts/0, declare_ok/0, exchange_opts/0, delete_opts/0, qos_opts/0,
              consume_opts/0, publish_opts/0, get_ok/0, sync_opts/0]).

-type conn() :: pid().
%% A channel: its connection, number and frame_max; a direct channel
%% (opened with `direct => true' on plain TCP) also carries the socket,
%% its gate and its owner, who writes its frames to the socket itself.
-type channel() :: {amqp_channel, pid(), char(), non_neg_integer()}
                 | {amqp_channel, pid(), char(), non_neg_integer(),
                    {gen_tcp:socket(), atomics:atomics_ref(), pid()}}.

%% TLS (amqps://): the broker's certificate is verified (`verify_peer',
%% the default) against `cacertfile' or else the system's trust store,
%% and its name against the host (or `server_name_indication'); a client
%% certificate with `certfile' and `keyfile' (unencrypted PEM).
-type tls_opts() :: #{verify => verify_peer | verify_none,
                      cacertfile => file:filename_all(),
                      certfile => file:filename_all(), keyfile => file:filename_all(),
                      server_name_indication => string()}.
-type tcp_opts() :: #{nodelay => boolean(), sndbuf => pos_integer(), recbuf => pos_integer()}.
%% Connection parameters: what beamlab_amqp_uri:parse/1 returns; a caller
%% may give any subset (the rest are the parser's defaults).
-type params() :: #{host => inet:hostname() | inet:ip_address() | binary(),
                    port => inet:port_number(),
                    user => unicode:chardata(), password => unicode:chardata(),
                    vhost => unicode:chardata(),
                    heartbeat => non_neg_integer(), frame_max => non_neg_integer(),
                    channel_max => non_neg_integer(), connection_timeout => pos_integer(),
                    tls => false | tls_opts(), auth_mechanism => plain | external}.
%% `owner' gets the connection's notices; `name' is the connection_name
%% the management UI shows; the others override the URI or tune batching.
-type connect_opts() :: #{owner => pid(), name => binary(),
                          heartbeat => non_neg_integer(), frame_max => non_neg_integer(),
                          channel_max => non_neg_integer(), connection_timeout => pos_integer(),
                          batch_bytes => pos_integer(), batch_msgs => pos_integer(),
                          sndbuf => pos_integer(), recbuf => pos_integer(), nodelay => boolean(),
                          %% Merged into an amqps:// URI's TLS options.
                          tls => tls_opts(), auth_mechanism => plain | external}.
%% Queue, exchange, binding and consumer arguments: a field table, or a
%% map converted by beamlab_amqp_method:to_table/1.
-type arguments() :: beamlab_amqp_method:table() | #{binary() => beamlab_amqp_method:value()}.
%% Every error of this client (format_error/1 prints each as one line).
-type reason() :: {unreachable, inet:hostname() | inet:ip_address(), inet:port_number(), inet:posix()}
                | {access_refused, binary(), binary()}
                | {external_refused, binary()}
                | {vhost_not_found, binary(), binary()}
                | {timeout, atom()}
                | {bad_param, atom(), Given :: term()}
                | {closed_during, atom()}
                | {uri, beamlab_amqp_uri:error()}
                | {amqp_closed, non_neg_integer(), binary()}
                | {connection_closed, non_neg_integer(), binary()}
                | {no_auth_mechanism, binary(), binary()}
                %% The TLS connection to Host:Port failed: an alert (the
                %% broker's certificate, name, or ours), bad options, or no
                %% system trust store.
                | {tls, binary(), {alert, atom(), binary()} | {options, binary()} | atom()}
                %% The broker refused the client certificate in File.
                | {client_cert_refused, file:filename_all(), atom()}
                %% ... or closed the connection before AMQP started.
                | {client_cert_closed, file:filename_all()}
                | {frame_max_too_small, non_neg_integer()}
                | {channel_max, non_neg_integer()}
                | {encode, beamlab_amqp_method:encode_error()}
                | {protocol, binary()}
                | {socket, inet:posix() | term()}
                %% take_reads/1 refused: not the caller's direct channel on
                %% plain TCP, the connection has other channels, or the
                %% channel waits for a reply.
                | {reads, not_direct | shared | waiting}
                %% A synchronous call by a channel owner that holds the reads.
                | reads_taken
                %% A connection lost for a local reason (socket_closed,
                %% heartbeat_timeout, ...) and its explanation.
                | {atom(), binary()}
                | closed.
%% The reads of a direct channel taken by its owner (take_reads/1).
-type reader() :: beamlab_amqp_reader:reader().
-type info() :: #{host := inet:hostname() | inet:ip_address(), port := inet:port_number(),
                  user := binary(), vhost := binary(),
                  frame_max := non_neg_integer(), channel_max := char(),
                  heartbeat := non_neg_integer(),
                  server_properties := beamlab_amqp_method:table(),
                  channels := non_neg_integer(),
                  batch_writes := non_neg_integer(), batched_sends := non_neg_integer()}.
-type sync_opts() :: #{timeout => timeout()}.
-type queue_opts() :: #{durable => boolean(), exclusive => boolean(), auto_delete => boolean(),
                        passive => boolean(), arguments => arguments(), timeout => timeout()}.
-type declare_ok() :: #{queue := binary(), message_count := non_neg_integer(),
                        consumer_count := non_neg_integer()}.
-type exchange_opts() :: #{type => unicode:chardata(), durable => boolean(),
                           auto_delete => boolean(), internal => boolean(),
                           passive => boolean(), arguments => arguments(), timeout => timeout()}.
-type delete_opts() :: #{if_unused => boolean(), if_empty => boolean(), timeout => timeout()}.
-type qos_opts() :: #{prefetch_count => non_neg_integer(), prefetch_size => non_neg_integer(),
                      global => boolean(), timeout => timeout()}.
%% `keep': how many bytes of each delivered body reach the owner (the
%% first ones; default all): a consumer that reads only a stamp at the
%% start of the body holds no more of a large message than that.
-type consume_opts() :: #{no_ack => boolean(), exclusive => boolean(), consumer_tag => binary(),
                          arguments => arguments(), timeout => timeout(),
                          keep => all | non_neg_integer()}.
%% What the connection does once a send's frames are written (see send/3).
-type written() :: {counters:counters_ref(), pos_integer(), non_neg_integer(), notify | silent}.
-type publish_opts() :: #{props => beamlab_amqp_method:props(), mandatory => boolean()}.
%% basic.get-ok: delivery tag, redelivered, exchange, routing key, messages
%% left in the queue, properties, body.
-type get_ok() :: {non_neg_integer(), boolean(), binary(), binary(), non_neg_integer(),
                   beamlab_amqp_method:props(), binary()}.

-define(TIMEOUT, 30000).

%%====================================================================
%% Connections and channels
%%====================================================================

%% @doc Connect and negotiate. `UriOrMap' is an `amqp://' URI or a map as
%% returned by {@link beamlab_amqp_uri:parse/1}; `Opts' may override its
%% settings and set `owner', `name', `batch_msgs', `batch_bytes', `sndbuf',
%% `recbuf'.
-spec connect(unicode:chardata() | params(), connect_opts()) -> {ok, conn()} | {error, reason()}.
connect(Uri, Opts) when is_list(Uri); is_binary(Uri) ->
    case beamlab_amqp_uri:parse(Uri) of
        {ok, Params} -> connect(Params, Opts);
        {error, R} -> {error, {uri, R}}
    end;
connect(Params, Opts) when is_map(Params), is_map(Opts) ->
    P0 = maps:merge(beamlab_amqp_uri:defaults(), Params),
    Tls = case {maps:get(tls, P0), maps:find(tls, Opts)} of
              {false, _} -> false;
              {UriTls, {ok, T}} -> maps:merge(UriTls, T);
              {UriTls, error} -> UriTls
          end,
    P = (maps:merge(P0, maps:without([owner, tls], Opts)))#{tls => Tls},
    case validate(P) of
        ok ->
            P1 = P#{user => to_bin(maps:get(user, P)), password => to_bin(maps:get(password, P)),
                    vhost => to_bin(maps:get(vhost, P)), host => to_host(maps:get(host, P))},
            beamlab_amqp_conn:start(P1, maps:get(owner, Opts, self()));
        Error ->
            Error
    end.

%% Maps given by callers (not parsed from a URI) are checked here, so that a
%% bad value is an error message and not a crash in the connection process.
validate(P) ->
    Checks = [{host, fun(H) -> is_list(H) orelse is_binary(H) orelse is_tuple(H) end},
              {port, fun(V) -> is_integer(V) andalso V >= 1 andalso V =< 65535 end},
              {heartbeat, fun(V) -> is_integer(V) andalso V >= 0 andalso V =< 16#FFFF end},
              {channel_max, fun(V) -> is_integer(V) andalso V >= 0 andalso V =< 16#FFFF end},
              {frame_max, fun(V) -> is_integer(V) andalso (V =:= 0 orelse (V >= 4096 andalso V < 1 bsl 32)) end},
              {connection_timeout, fun(V) -> is_integer(V) andalso V > 0 end},
              {tls, fun(V) -> V =:= false orelse is_map(V) end},
              {auth_mechanism, fun(V) -> V =:= plain orelse V =:= external end},
              {user, fun is_text/1}, {password, fun is_text/1}, {vhost, fun is_text/1}],
    case [{K, maps:get(K, P)} || {K, Ok} <- Checks, not Ok(maps:get(K, P))] of
        [] -> ok;
        [{K, V} | _] -> {error, {bad_param, K, V}}
    end.

is_text(V) ->
    (is_binary(V) orelse is_list(V)) andalso is_binary(unicode:characters_to_binary(V)).

to_bin(B) when is_binary(B) -> B;
to_bin(L) when is_list(L) -> unicode:characters_to_binary(L).

to_host(H) when is_binary(H) -> binary_to_list(H);
to_host(H) -> H.

%% @doc Close the connection and every channel on it. Channel owners get
%% `{amqp_closed, Ch, closed, Text}'; the caller gets no message.
-spec close(conn()) -> ok.
close(Conn) ->
    beamlab_amqp_conn:close(Conn, ?TIMEOUT).

%% @doc Close connections within `Timeout' milliseconds in all, whatever
%% the broker does: one that has not closed by then (broker frozen, socket
%% write blocked) is killed, which closes its socket. Channel owners get
%% `{amqp_closed, Ch, Code, Text}' from the ones that closed cleanly.
-spec close_all([conn()], non_neg_integer()) -> ok.
close_all(Conns, Timeout) ->
    beamlab_amqp_conn:close_all(Conns, Timeout).

%% @doc Negotiated parameters (frame_max, channel_max, heartbeat) and the
%% broker's properties.
-spec info(conn()) -> {ok, info()} | {error, reason()}.
info(Conn) ->
    beamlab_amqp_conn:info(Conn).

%% @doc How many messages wait in the connection process's mailbox: a cheap
%% back-pressure signal for publishers without confirms.
-spec pending(conn() | channel()) -> non_neg_integer().
pending(Conn) when is_pid(Conn) -> beamlab_amqp_conn:pending(Conn);
pending(Ch) -> beamlab_amqp_conn:pending(element(2, Ch)).

%% @doc Open a channel owned by the caller.
-spec open_channel(conn()) -> {ok, channel()} | {error, reason()}.
open_channel(Conn) ->
    open_channel(Conn, #{}).

%% @doc Open a channel; `#{owner => Pid}' names the process that gets its
%% messages. With `direct => true' (plain TCP; ignored over TLS) the
%% owner's {@link send/2} and {@link send/3} write the frames to the socket
%% from the owner's own process, one `gen_tcp:send/2' per call, instead of
%% handing them to the connection process (one message and one wake-up of
%% that process less per batch, #33); other processes' sends on the
%% channel still go through the connection.
-spec open_channel(conn(), #{owner => pid(), timeout => timeout(), direct => boolean()}) ->
          {ok, channel()} | {error, reason()}.
open_channel(Conn, Opts) ->
    beamlab_amqp_conn:open_channel(Conn, maps:get(owner, Opts, self()), maps:get(direct, Opts, false),
                                   maps:get(timeout, Opts, ?TIMEOUT)).

%% @doc Close a channel.
-spec close_channel(channel()) -> ok | {error, reason()}.
close_channel(Ch) ->
    beamlab_amqp_conn:close_channel(Ch, ?TIMEOUT).

%% @doc Close a channel, waiting at most `timeout' (milliseconds, in
%% `Opts') for the broker's close-ok: `{error, {timeout, _}}' after that.
-spec close_channel(channel(), sync_opts()) -> ok | {error, reason()}.
close_channel(Ch, Opts) ->
    beamlab_amqp_conn:close_channel(Ch, maps:get(timeout, Opts, ?TIMEOUT)).

%%====================================================================
%% Synchronous methods
%%====================================================================

%% @doc queue.declare. `Name' `<<>>' lets the broker name the queue.
-spec declare_queue(channel(), binary(), queue_opts()) -> {ok, declare_ok()} | {error, reason()}.
declare_queue(Ch, Name, Opts) ->
    encoding(fun() ->
        M = #'queue.declare'{queue = Name,
                             passive = opt(passive, Opts), durable = opt(durable, Opts),
                             exclusive = opt(exclusive, Opts), auto_delete = opt(auto_delete, Opts),
                             arguments = args(Opts)},
        case sync(Ch, M, Opts) of
            {ok, #'queue.declare_ok'{queue = Q, message_count = Mc, consumer_count = Cc}} ->
                {ok, #{queue => Q, message_count => Mc, consumer_count => Cc}};
            Error -> Error
        end
    end).

%% @doc exchange.declare (`type' defaults to `<<"direct">>').
-spec declare_exchange(channel(), binary(), exchange_opts()) -> ok | {error, reason()}.
declare_exchange(Ch, Name, Opts) ->
    encoding(fun() ->
        M = #'exchange.declare'{exchange = Name, type = to_bin(maps:get(type, Opts, <<"direct">>)),
                                passive = opt(passive, Opts), durable = opt(durable, Opts),
                                auto_delete = opt(auto_delete, Opts), internal = opt(internal, Opts),
                                arguments = args(Opts)},
        ok(sync(Ch, M, Opts))
    end).

%% @doc exchange.delete.
-spec delete_exchange(channel(), binary(), delete_opts()) -> ok | {error, reason()}.
delete_exchange(Ch, Name, Opts) ->
    ok(sync(Ch, #'exchange.delete'{exchange = Name, if_unused = opt(if_unused, Opts)}, Opts)).

%% @doc queue.bind.
-spec bind(channel(), binary(), binary(), binary()) -> ok | {error, reason()}.
bind(Ch, Queue, Exchange, Key) ->
    bind(Ch, Queue, Exchange, Key, []).

%% @doc queue.bind with arguments (a field table or a map).
-spec bind(channel(), binary(), binary(), binary(), arguments()) -> ok | {error, reason()}.
bind(Ch, Queue, Exchange, Key, Args) ->
    encoding(fun() ->
        ok(sync(Ch, #'queue.bind'{queue = Queue, exchange = Exchange, routing_key = Key,
                                  arguments = beamlab_amqp_method:to_table(Args)}, #{}))
    end).

%% @doc queue.unbind.
-spec unbind(channel(), binary(), binary(), binary()) -> ok | {error, reason()}.
unbind(Ch, Queue, Exchange, Key) ->
    unbind(Ch, Queue, Exchange, Key, []).

%% @doc queue.unbind with arguments.
-spec unbind(channel(), binary(), binary(), binary(), arguments()) -> ok | {error, reason()}.
unbind(Ch, Queue, Exchange, Key, Args) ->
    encoding(fun() ->
        ok(sync(Ch, #'queue.unbind'{queue = Queue, exchange = Exchange, routing_key = Key,
                                    arguments = beamlab_amqp_method:to_table(Args)}, #{}))
    end).

%% @doc exchange.bind (messages flow from `Source' to `Destination').
-spec bind_exchange(channel(), binary(), binary(), binary(), arguments()) -> ok | {error, reason()}.
bind_exchange(Ch, Destination, Source, Key, Args) ->
    encoding(fun() ->
        ok(sync(Ch, #'exchange.bind'{destination = Destination, source = Source, routing_key = Key,
                                     arguments = beamlab_amqp_method:to_table(Args)}, #{}))
    end).

%% @doc queue.purge; returns how many messages were removed.
-spec purge(channel(), binary()) -> {ok, non_neg_integer()} | {error, reason()}.
purge(Ch, Queue) ->
    case sync(Ch, #'queue.purge'{queue = Queue}, #{}) of
        {ok, #'queue.purge_ok'{message_count = N}} -> {ok, N};
        Error -> Error
    end.

%% @doc queue.delete; returns how many messages were deleted with it.
-spec delete_queue(channel(), binary(), delete_opts()) -> {ok, non_neg_integer()} | {error, reason()}.
delete_queue(Ch, Queue, Opts) ->
    M = #'queue.delete'{queue = Queue, if_unused = opt(if_unused, Opts),
                        if_empty = opt(if_empty, Opts)},
    case sync(Ch, M, Opts) of
        {ok, #'queue.delete_ok'{message_count = N}} -> {ok, N};
        Error -> Error
    end.

%% @doc basic.qos: a prefetch count, or a map with `prefetch_count',
%% `prefetch_size' and `global'.
-spec qos(channel(), non_neg_integer() | qos_opts()) -> ok | {error, reason()}.
qos(Ch, Count) when is_integer(Count) ->
    qos(Ch, #{prefetch_count => Count});
qos(Ch, Opts) when is_map(Opts) ->
    ok(sync(Ch, #'basic.qos'{prefetch_count = maps:get(prefetch_count, Opts, 0),
                             prefetch_size = maps:get(prefetch_size, Opts, 0),
                             global = opt(global, Opts)}, Opts)).

%% @doc basic.consume; deliveries go to the channel owner as
%% `{amqp_deliver, ...}' messages. Returns the consumer tag.
-spec consume(channel(), binary(), consume_opts()) -> {ok, binary()} | {error, reason()}.
consume(Ch, Queue, #{keep := Keep} = Opts) ->
    case beamlab_amqp_conn:keep(element(2, Ch), element(3, Ch), Keep, maps:get(timeout, Opts, ?TIMEOUT)) of
        ok -> consume(Ch, Queue, maps:remove(keep, Opts));
        {error, _} = E -> E
    end;
consume(Ch, Queue, Opts) ->
    encoding(fun() ->
        M = #'basic.consume'{queue = Queue, consumer_tag = maps:get(consumer_tag, Opts, <<>>),
                             no_ack = opt(no_ack, Opts), exclusive = opt(exclusive, Opts),
                             arguments = args(Opts)},
        case sync(Ch, M, Opts) of
            {ok, #'basic.consume_ok'{consumer_tag = Tag}} -> {ok, Tag};
            Error -> Error
        end
    end).

%% @doc basic.cancel.
-spec cancel(channel(), binary()) -> ok | {error, reason()}.
cancel(Ch, Tag) ->
    cancel(Ch, Tag, #{}).

%% @doc basic.cancel, waiting at most `timeout' for cancel-ok.
-spec cancel(channel(), binary(), sync_opts()) -> ok | {error, reason()}.
cancel(Ch, Tag, Opts) ->
    ok(sync(Ch, #'basic.cancel'{consumer_tag = Tag}, Opts)).

%% @doc confirm.select: from now on the broker confirms every publish on
%% this channel with `{amqp_confirm, Ch, ack | nack, SeqNo, Multiple}'.
-spec confirm_select(channel()) -> ok | {error, reason()}.
confirm_select(Ch) ->
    ok(sync(Ch, #'confirm.select'{}, #{})).

%% @doc tx.select: from now on publishes and acks on this channel take
%% effect at the next tx_commit/1.
-spec tx_select(channel()) -> ok | {error, reason()}.
tx_select(Ch) ->
    ok(sync(Ch, #'tx.select'{}, #{})).

%% @doc tx.commit.
-spec tx_commit(channel()) -> ok | {error, reason()}.
tx_commit(Ch) ->
    ok(sync(Ch, #'tx.commit'{}, #{})).

%% @doc tx.commit for a load generator's channel, with what its caller
%% must do next: `ok', `{lost, Code, Text}' (the channel or its connection
%% is gone: the caller reconnects or reports it) or `{error, Reason}' (the
%% broker refused or did not answer). The producers' `-m' and the
%% consumers' `-n' transactions both take this step.
-spec commit(channel()) -> ok | {lost, atom(), binary()} | {error, reason()}.
commit(Ch) ->
    case tx_commit(Ch) of
        ok -> ok;
        {error, {Code, Text}} when is_binary(Text) -> {lost, Code, Text};
        {error, _} = E -> E
    end.

%% @doc tx.rollback.
-spec tx_rollback(channel()) -> ok | {error, reason()}.
tx_rollback(Ch) ->
    ok(sync(Ch, #'tx.rollback'{}, #{})).

%% @doc basic.get.
-spec get(channel(), binary(), boolean()) -> {ok, get_ok()} | empty | {error, reason()}.
get(Ch, Queue, NoAck) ->
    case sync(Ch, #'basic.get'{queue = Queue, no_ack = NoAck}, #{}) of
        {ok, {#'basic.get_ok'{delivery_tag = T, redelivered = R, exchange = X,
                              routing_key = K, message_count = C}, Props, Body}} ->
            {ok, {T, R, X, K, C, Props, Body}};
        {ok, #'basic.get_empty'{}} ->
            empty;
        Error -> Error
    end.

%% @doc basic.recover: redeliver unacknowledged messages.
-spec recover(channel(), boolean()) -> ok | {error, reason()}.
recover(Ch, Requeue) ->
    ok(sync(Ch, #'basic.recover'{requeue = Requeue}, #{})).

sync(Ch, Method, Opts) ->
    beamlab_amqp_conn:sync(element(2, Ch), element(3, Ch), Method, maps:get(timeout, Opts, ?TIMEOUT)).

%% Arguments given as maps are converted before the call; a value that has
%% no AMQP type is the caller's error, returned rather than raised.
encoding(Fun) ->
    try Fun()
    catch error:{amqp_encode, R} -> {error, {encode, R}}
    end.

ok({ok, _}) -> ok;
ok(Error) -> Error.

opt(Key, Opts) -> maps:get(Key, Opts, false).

args(Opts) -> beamlab_amqp_method:to_table(maps:get(arguments, Opts, [])).

%%====================================================================
%% Hot path: asynchronous, encoded in the caller
%%====================================================================

%% @doc basic.publish without properties.
-spec publish(channel(), binary(), binary(), iodata()) -> ok.
publish(Ch, Exchange, Key, Body) ->
    publish(Ch, Exchange, Key, Body, #{}).

%% @doc basic.publish. `Opts': `props' (basic properties map) and
%% `mandatory'. Returns at once; the frames are built here and handed to
%% the connection process, which batches them into its next socket write.
-spec publish(channel(), binary(), binary(), iodata(), publish_opts()) -> ok.
publish(Ch, Exchange, Key, Body, Opts) ->
    send(Ch, publish_frames(Ch, Exchange, Key, Body, Opts)).

%% @doc The frames of a basic.publish (see {@link publish/5}), for a caller
%% that hands several methods to the connection at once with {@link send/2}.
-spec publish_frames(channel(), binary(), binary(), iodata(), publish_opts()) -> iodata().
publish_frames(Ch, Exchange, Key, Body, Opts) ->
    [publish_head(Ch, Exchange, Key, iolist_size(Body), Opts) | publish_body(Ch, Body)].

%% @doc The method and content header frames of a basic.publish of a body
%% of `Size' bytes (see {@link publish/5}), as one binary: a publisher
%% whose exchange, routing key, properties and body size do not change
%% builds them once and adds each body with {@link publish_body/2} (#33).
-spec publish_head(channel(), binary(), binary(), non_neg_integer(), publish_opts()) -> binary().
publish_head(Ch, Exchange, Key, Size, Opts)
  when byte_size(Exchange) =< 255, byte_size(Key) =< 255 ->
    N = element(3, Ch),
    Props = maps:get(props, Opts, #{}),
    Method = <<60:16, 40:16, 0:16, (byte_size(Exchange)):8, Exchange/binary,
               (byte_size(Key)):8, Key/binary, (bool(maps:get(mandatory, Opts, false))):8>>,
    Header = beamlab_amqp_method:encode_header(?AMQP_CLASS_BASIC, Size, Props),
    iolist_to_binary([<<?AMQP_FRAME_METHOD, N:16, (byte_size(Method)):32>>, Method, ?AMQP_FRAME_END,
                      beamlab_amqp_frame:encode_frame(?AMQP_FRAME_HEADER, N, Header)]).

%% @doc The body frames of a basic.publish on `Ch' (after its
%% {@link publish_head/5}); a large iodata body is framed without a copy.
-spec publish_body(channel(), iodata()) -> iodata().
publish_body(Ch, Body) ->
    beamlab_amqp_frame:encode_body(element(3, Ch), Body, element(4, Ch)).

%% @doc The header of the one body frame of a publish of `Size' body
%% bytes on `Ch', or `none' when such a body takes no frame or several: a
%% publisher that caches its {@link publish_head/5} caches this too and
%% frames each body as `[BodyHead, Body, 16#CE]', the iodata
%% {@link publish_body/2} gives, without its calls per message (#33).
-spec publish_body_head(channel(), non_neg_integer()) -> binary() | none.
publish_body_head(Ch, Size) ->
    beamlab_amqp_frame:body_head(element(3, Ch), Size, element(4, Ch)).

%% @doc Hands frames built for channel `Ch' (by {@link publish_frames/5},
%% {@link ack_frame/3}, {@link nack_frame/4}, in order) to its connection,
%% which writes them in its next socket write. Asynchronous; on a direct
%% channel, its owner writes them itself (returning once the socket took
%% them).
-spec send(channel(), iodata()) -> ok.
send({amqp_channel, _, _, _, {Sock, Gate, Owner}}, Frames) when Owner =:= self() ->
    _ = beamlab_amqp_conn:write_direct(Sock, Gate, Frames),
    ok;
send(Ch, Frames) ->
    element(2, Ch) ! {'$amqp_send', element(3, Ch), Frames},
    ok.

%% @doc {@link send/2}, and once the socket has accepted the frames (the
%% connection's write returned: the data is in the socket's buffers, past
%% the client's queues), `K' is added to element `Ix' of `Counters'; with
%% `notify', the channel's owner also gets `{amqp_written, Ch}' then. A
%% publisher that waits for that notice is paced by the socket (TCP flow
%% control, a broker that blocked the connection stops reading it) instead
%% of queueing frames without bound in the connection's mailbox. Frames
%% for a channel that closed meanwhile are neither written nor counted.
%% On a direct channel its owner writes them itself, counts them and (with
%% `notify') sends itself the notice.
-spec send(channel(), iodata(), written()) -> ok.
send({amqp_channel, _, _, _, {Sock, Gate, Owner}} = Ch, Frames, {C, Ix, K, Notify}) when Owner =:= self() ->
    case beamlab_amqp_conn:write_direct(Sock, Gate, Frames) of
        written ->
            counters:add(C, Ix, K),
            _ = Notify =:= notify andalso (self() ! {amqp_written, Ch}),
            ok;
        dropped ->
            ok
    end;
send(Ch, Frames, Written) ->
    element(2, Ch) ! {'$amqp_send', element(3, Ch), Frames, Written},
    ok.

%% @doc The caller, owner of direct channel `Ch' and the only channel of
%% its plain TCP connection, reads the socket itself from now on (#33):
%% the socket's messages come to it, and {@link reads/2} turns them into
%% the messages the connection process would have sent (`amqp_deliver',
%% `amqp_confirm', `amqp_return'), without the hop through that process.
%% Every other frame (a reply, the broker's close, `connection.blocked',
%% heartbeats aside) gives the reads back to the connection, which goes on
%% from it. While it holds the reads the owner makes no synchronous call
%% (`{error, reads_taken}'): {@link give_back_reads/1} first; and it gives
%% them back before it ends (its socket would close with it). `{error, _}'
%% (the channel is not direct, the connection is TLS or has other
%% channels): the connection keeps reading, nothing changed.
-spec take_reads(channel()) -> {ok, reader()} | {error, reason()}.
take_reads({amqp_channel, _, _, _, {_, _, Owner}} = Ch) when Owner =:= self() ->
    beamlab_amqp_conn:take_reads(Ch, ?TIMEOUT);
take_reads(_Ch) ->
    %% Not direct (or TLS, where direct is ignored), or not the caller's.
    {error, {reads, not_direct}}.

%% @doc Handles a message of the owner's mailbox if it is its socket's
%% (see {@link take_reads/1}): `{ok, Msgs, Reader1}' with the channel's
%% messages it carried, in order, to be handled as if they had come from
%% the connection; `Reader1' is `none' once the reads went back to the
%% connection. `ignore' for any other message.
-spec reads(term(), reader()) -> {ok, [tuple()], reader() | none} | ignore.
reads(Msg, Reader) ->
    beamlab_amqp_reader:handle(Msg, Reader).

%% @doc Gives the reads back to the connection process (before a
%% synchronous call, or at the owner's end); `none' is the state after.
-spec give_back_reads(reader() | none) -> none.
give_back_reads(Reader) ->
    beamlab_amqp_reader:give_back(Reader).

bool(true) -> 1;
bool(false) -> 0.

%% @doc basic.ack (asynchronous).
-spec ack(channel(), non_neg_integer(), boolean()) -> ok.
ack(Ch, Tag, Multiple) ->
    send(Ch, ack_frame(Ch, Tag, Multiple)).

%% @doc The frame of a basic.ack, for {@link send/2}.
-spec ack_frame(channel(), non_neg_integer(), boolean()) -> binary().
ack_frame(Ch, Tag, Multiple) ->
    ?AMQP_ACK_FRAME(element(3, Ch), Tag, bool(Multiple)).

%% @doc basic.nack with requeue (asynchronous).
-spec nack(channel(), non_neg_integer(), boolean()) -> ok.
nack(Ch, Tag, Multiple) ->
    nack(Ch, Tag, Multiple, true).

%% @doc basic.nack (asynchronous).
-spec nack(channel(), non_neg_integer(), boolean(), boolean()) -> ok.
nack(Ch, Tag, Multiple, Requeue) ->
    send(Ch, nack_frame(Ch, Tag, Multiple, Requeue)).

%% @doc The frame of a basic.nack, for {@link send/2}.
-spec nack_frame(channel(), non_neg_integer(), boolean(), boolean()) -> binary().
nack_frame(Ch, Tag, Multiple, Requeue) ->
    N = element(3, Ch),
    <<?AMQP_FRAME_METHOD, N:16, 13:32, 60:16, 120:16, Tag:64,
      (bool(Multiple) bor (bool(Requeue) bsl 1)):8, ?AMQP_FRAME_END>>.

%% @doc basic.reject (asynchronous). AMQP's reject has no `multiple' bit.
-spec reject(channel(), non_neg_integer(), boolean()) -> ok.
reject(Ch, Tag, Requeue) ->
    N = element(3, Ch),
    send(Ch, <<?AMQP_FRAME_METHOD, N:16, 13:32, 60:16, 90:16, Tag:64, (bool(Requeue)):8, ?AMQP_FRAME_END>>).

%%====================================================================
%% Errors
%%====================================================================

%% @doc One line for every error this client returns.
-spec format_error(reason()) -> iolist().
format_error(Reason) ->
    beamlab_format_reason:line(fun error_line/1, Reason).

error_line({unreachable, Host, Port, econnrefused}) ->
    io_lib:format("broker not reachable at ~s:~b (connection refused)", [Host, Port]);
error_line({unreachable, Host, Port, Posix}) ->
    io_lib:format("broker not reachable at ~s:~b (~s)", [Host, Port, inet:format_error(Posix)]);
error_line({access_refused, User, Text}) ->
    io_lib:format("wrong credentials for user \"~ts\" (~ts)", [User, Text]);
error_line({external_refused, Text}) ->
    io_lib:format("the broker refused the user named by the client certificate (SASL EXTERNAL: "
                  "does that user exist, with access to the vhost?) (~ts)", [Text]);
error_line({vhost_not_found, VHost, Text}) ->
    io_lib:format("virtual host \"~ts\" not found or not allowed (~ts)", [VHost, Text]);
error_line({timeout, connect}) ->
    "timed out connecting to the broker";
error_line({timeout, Stage}) ->
    io_lib:format("timed out waiting for the broker (~s)", [Stage]);
error_line({bad_param, frame_max, V}) ->
    io_lib:format("bad connection parameter frame_max: ~0tp (0 or 4096..2^32-1)", [V]);
error_line({bad_param, K, V}) ->
    io_lib:format("bad connection parameter ~s: ~0tp", [K, V]);
error_line({closed_during, Stage}) ->
    io_lib:format("the broker closed the connection during negotiation (~s)", [Stage]);
error_line({uri, R}) ->
    beamlab_amqp_uri:format_error(R);
error_line({amqp_closed, Code, Text}) ->
    io_lib:format("broker closed the channel: ~b ~ts", [Code, Text]);
error_line({connection_closed, Code, Text}) ->
    io_lib:format("broker closed the connection: ~b ~ts", [Code, Text]);
error_line({no_auth_mechanism, Mech, Mechs}) ->
    io_lib:format("the broker does not offer ~ts authentication (offers: ~ts)~ts",
                  [Mech, Mechs, case Mech of
                                    <<"EXTERNAL">> -> " (EXTERNAL needs TLS with a client certificate "
                                                      "and the rabbitmq_auth_mechanism_ssl plugin)";
                                    _ -> ""
                                end]);
error_line({tls, Peer, {alert, Alert, Text}}) ->
    io_lib:format("TLS connection to ~ts failed: ~ts (~ts)", [Peer, tls_alert_text(Alert, Text), Text]);
error_line({tls, Peer, {options, Text}}) ->
    io_lib:format("TLS connection to ~ts: bad TLS options (~ts)", [Peer, Text]);
error_line({tls, Peer, no_system_cas}) ->
    io_lib:format("TLS connection to ~ts: no system trust store on this machine (OTP 25 or later "
                  "reads it); give the broker's CA file", [Peer]);
error_line({tls, Peer, closed}) ->
    io_lib:format("TLS connection to ~ts: the broker closed the connection during the handshake "
                  "(is it a TLS port? does it require a client certificate?)", [Peer]);
error_line({tls, Peer, R}) ->
    io_lib:format("TLS connection to ~ts failed: ~ts", [Peer, ssl:format_error(R)]);
error_line({frame_max_too_small, F}) ->
    io_lib:format("negotiated frame_max ~b is below the protocol minimum 4096", [F]);
error_line({channel_max, Max}) ->
    io_lib:format("no free channel (channel_max is ~b)", [Max]);
error_line({encode, R}) ->
    beamlab_amqp_method:format_error({amqp_encode, R});
error_line({protocol, R}) when is_binary(R) ->
    io_lib:format("AMQP protocol error: ~ts", [R]);
error_line({protocol, R}) ->
    io_lib:format("AMQP protocol error: ~0tp", [R]);
error_line({client_cert_refused, File, Alert}) ->
    io_lib:format("the broker refused the client certificate in ~ts (~ts): is it signed by a CA the "
                  "broker trusts (its ssl_options cacertfile), and is its key the one given?", [File, Alert]);
error_line({client_cert_closed, File}) ->
    io_lib:format("the broker closed the TLS connection before AMQP started: did it refuse the client "
                  "certificate in ~ts (is it signed by a CA the broker trusts, its ssl_options cacertfile)?",
                  [File]);
error_line({socket, {tls_alert, {Alert, _}}}) ->
    %% After the handshake (TLS 1.3): the broker refused what this client
    %% showed (#34: was "unknown POSIX error").
    io_lib:format("the broker refused this client's TLS certificate (~ts): is it signed by a CA "
                  "the broker trusts (its ssl_options cacertfile)?", [Alert]);
error_line({socket, Posix}) when is_atom(Posix) ->
    io_lib:format("socket error: ~s", [inet:format_error(Posix)]);
error_line({socket, R}) ->
    io_lib:format("socket error: ~ts", [ssl:format_error(R)]);
error_line({Code, Text}) when is_atom(Code), is_binary(Text) ->
    %% Local reasons for a lost connection (socket_closed, heartbeat_timeout, ...);
    %% a text from elsewhere may not be UTF-8 nor one line.
    Chars = case unicode:characters_to_list(Text) of
                L when is_list(L) -> L;
                _ -> binary_to_list(Text)
            end,
    [case C of C when C < 32; C =:= 127 -> $\s; C -> C end || C <- Chars];
error_line({reads, not_direct}) ->
    "the channel's owner cannot read the socket: not its direct channel on a plain TCP connection";
error_line({reads, shared}) ->
    "the channel's owner cannot read the socket: the connection has other channels";
error_line({reads, waiting}) ->
    "the channel's owner cannot read the socket: the channel waits for a reply";
error_line(reads_taken) ->
    "a synchronous call by the owner of the channel's reads (give them back first: "
    "beamlab_amqp:give_back_reads/1)";
error_line(closed) ->
    "the connection or channel is closed";
error_line(Other) ->
    io_lib:format("AMQP error: ~0tp", [Other]).

%% What a TLS alert from the handshake means for the user.
tls_alert_text(Alert, Text) ->
    case Alert of
        _ when Text =:= <<"hostname_check_failed">> ->
            "the broker's certificate does not name this host (give the name it has with "
            "--server-name-indication, or connect by that name)";
        unknown_ca -> "the broker's certificate is not signed by a trusted CA (give its CA with --tls-ca-file)";
        bad_certificate -> "a certificate was refused";
        certificate_expired -> "a certificate has expired";
        handshake_failure -> "the TLS handshake failed";
        certificate_required -> "the broker requires a client certificate";
        unexpected_message -> "the server does not answer TLS (an AMQP port without TLS?)";
        _ -> atom_to_list(Alert)
    end.
