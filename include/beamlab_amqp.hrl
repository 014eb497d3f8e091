%%% AMQP 0-9-1 method records used by beamlab's client (beamlab_amqp_method).
%%% One record per method, named as in the specification; fields as in the
%%% specification with hyphens turned into underscores. Reserved fields
%%% (ticket, out-of-band, capabilities, insist, known-hosts, channel-id,
%%% cluster-id) are not in the records: the encoder writes their fixed values.

-ifndef(BEAMLAB_AMQP_HRL).
-define(BEAMLAB_AMQP_HRL, true).

-define(AMQP_FRAME_METHOD, 1).
-define(AMQP_FRAME_HEADER, 2).
-define(AMQP_FRAME_BODY, 3).
-define(AMQP_FRAME_HEARTBEAT, 8).
-define(AMQP_FRAME_END, 16#CE).
%% Smallest frame_max a peer may impose (spec 4.2.1).
-define(AMQP_FRAME_MIN_SIZE, 4096).
%% Frame header (7 bytes) plus frame-end octet.
-define(AMQP_FRAME_OVERHEAD, 8).
%% A body larger than this is kept as the producer's iodata ([Stamp,
%% Padding]) down to its frames, never flattened into a copy per message.
-define(AMQP_SHARED_BODY, 65536).

-define(AMQP_CLASS_BASIC, 60).

%% The frame of a basic.ack of delivery `Tag' on channel `Num' (`Multiple'
%% 0 or 1), written out where it is built per delivery (#33: a call each).
-define(AMQP_ACK_FRAME(Num, Tag, Multiple),
        <<?AMQP_FRAME_METHOD, (Num):16, 13:32, ?AMQP_CLASS_BASIC:16, 80:16, (Tag):64, (Multiple):8,
          ?AMQP_FRAME_END>>).

%% connection (class 10)
-record('connection.start', {version_major = 0 :: byte(), version_minor = 9 :: byte(),
                             server_properties = [] :: list(),
                             mechanisms = <<"PLAIN">> :: binary(), locales = <<"en_US">> :: binary()}).
-record('connection.start_ok', {client_properties = [] :: list(), mechanism = <<"PLAIN">> :: binary(),
                                response = <<>> :: binary(), locale = <<"en_US">> :: binary()}).
-record('connection.secure', {challenge = <<>> :: binary()}).
-record('connection.secure_ok', {response = <<>> :: binary()}).
-record('connection.tune', {channel_max = 0 :: char(), frame_max = 0 :: non_neg_integer(),
                            heartbeat = 0 :: char()}).
-record('connection.tune_ok', {channel_max = 0 :: char(), frame_max = 0 :: non_neg_integer(),
                               heartbeat = 0 :: char()}).
-record('connection.open', {virtual_host = <<"/">> :: binary()}).
-record('connection.open_ok', {}).
-record('connection.close', {reply_code = 0 :: char(), reply_text = <<>> :: binary(),
                             class_id = 0 :: char(), method_id = 0 :: char()}).
-record('connection.close_ok', {}).
-record('connection.blocked', {reason = <<>> :: binary()}).
-record('connection.unblocked', {}).

%% channel (class 20)
-record('channel.open', {}).
-record('channel.open_ok', {}).
-record('channel.flow', {active = true :: boolean()}).
-record('channel.flow_ok', {active = true :: boolean()}).
-record('channel.close', {reply_code = 0 :: char(), reply_text = <<>> :: binary(),
                          class_id = 0 :: char(), method_id = 0 :: char()}).
-record('channel.close_ok', {}).

%% exchange (class 40)
-record('exchange.declare', {exchange = <<>> :: binary(), type = <<"direct">> :: binary(),
                             passive = false :: boolean(), durable = false :: boolean(),
                             auto_delete = false :: boolean(), internal = false :: boolean(),
                             nowait = false :: boolean(), arguments = [] :: list()}).
-record('exchange.declare_ok', {}).
-record('exchange.delete', {exchange = <<>> :: binary(), if_unused = false :: boolean(),
                            nowait = false :: boolean()}).
-record('exchange.delete_ok', {}).
-record('exchange.bind', {destination = <<>> :: binary(), source = <<>> :: binary(),
                          routing_key = <<>> :: binary(), nowait = false :: boolean(),
                          arguments = [] :: list()}).
-record('exchange.bind_ok', {}).
-record('exchange.unbind', {destination = <<>> :: binary(), source = <<>> :: binary(),
                            routing_key = <<>> :: binary(), nowait = false :: boolean(),
                            arguments = [] :: list()}).
-record('exchange.unbind_ok', {}).

%% queue (class 50)
-record('queue.declare', {queue = <<>> :: binary(), passive = false :: boolean(),
                          durable = false :: boolean(), exclusive = false :: boolean(),
                          auto_delete = false :: boolean(), nowait = false :: boolean(),
                          arguments = [] :: list()}).
-record('queue.declare_ok', {queue = <<>> :: binary(), message_count = 0 :: non_neg_integer(),
                             consumer_count = 0 :: non_neg_integer()}).
-record('queue.bind', {queue = <<>> :: binary(), exchange = <<>> :: binary(),
                       routing_key = <<>> :: binary(), nowait = false :: boolean(),
                       arguments = [] :: list()}).
-record('queue.bind_ok', {}).
-record('queue.purge', {queue = <<>> :: binary(), nowait = false :: boolean()}).
-record('queue.purge_ok', {message_count = 0 :: non_neg_integer()}).
-record('queue.delete', {queue = <<>> :: binary(), if_unused = false :: boolean(),
                         if_empty = false :: boolean(), nowait = false :: boolean()}).
-record('queue.delete_ok', {message_count = 0 :: non_neg_integer()}).
-record('queue.unbind', {queue = <<>> :: binary(), exchange = <<>> :: binary(),
                         routing_key = <<>> :: binary(), arguments = [] :: list()}).
-record('queue.unbind_ok', {}).

%% basic (class 60)
-record('basic.qos', {prefetch_size = 0 :: non_neg_integer(), prefetch_count = 0 :: char(),
                      global = false :: boolean()}).
-record('basic.qos_ok', {}).
-record('basic.consume', {queue = <<>> :: binary(), consumer_tag = <<>> :: binary(),
                          no_local = false :: boolean(), no_ack = false :: boolean(),
                          exclusive = false :: boolean(), nowait = false :: boolean(),
                          arguments = [] :: list()}).
-record('basic.consume_ok', {consumer_tag = <<>> :: binary()}).
-record('basic.cancel', {consumer_tag = <<>> :: binary(), nowait = false :: boolean()}).
-record('basic.cancel_ok', {consumer_tag = <<>> :: binary()}).
-record('basic.publish', {exchange = <<>> :: binary(), routing_key = <<>> :: binary(),
                          mandatory = false :: boolean(), immediate = false :: boolean()}).
-record('basic.return', {reply_code = 0 :: char(), reply_text = <<>> :: binary(),
                         exchange = <<>> :: binary(), routing_key = <<>> :: binary()}).
-record('basic.deliver', {consumer_tag = <<>> :: binary(), delivery_tag = 0 :: non_neg_integer(),
                          redelivered = false :: boolean(), exchange = <<>> :: binary(),
                          routing_key = <<>> :: binary()}).
-record('basic.get', {queue = <<>> :: binary(), no_ack = false :: boolean()}).
-record('basic.get_ok', {delivery_tag = 0 :: non_neg_integer(), redelivered = false :: boolean(),
                         exchange = <<>> :: binary(), routing_key = <<>> :: binary(),
                         message_count = 0 :: non_neg_integer()}).
-record('basic.get_empty', {}).
-record('basic.ack', {delivery_tag = 0 :: non_neg_integer(), multiple = false :: boolean()}).
-record('basic.reject', {delivery_tag = 0 :: non_neg_integer(), requeue = true :: boolean()}).
-record('basic.recover_async', {requeue = false :: boolean()}).
-record('basic.recover', {requeue = false :: boolean()}).
-record('basic.recover_ok', {}).
-record('basic.nack', {delivery_tag = 0 :: non_neg_integer(), multiple = false :: boolean(),
                       requeue = true :: boolean()}).

%% confirm (class 85)
-record('confirm.select', {nowait = false :: boolean()}).
-record('confirm.select_ok', {}).

%% tx (class 90)
-record('tx.select', {}).
-record('tx.select_ok', {}).
-record('tx.commit', {}).
-record('tx.commit_ok', {}).
-record('tx.rollback', {}).
-record('tx.rollback_ok', {}).

-endif.
