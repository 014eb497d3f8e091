%%% @doc The configuration of a load test (`beamlab amqp'): its type, every
%%% key typed, PerfTest's defaults, and what follows from it (the test id,
%%% which columns the report prints). A library caller gives a map with any
%%% of these keys; `run/1' of {@link beamlab_amqp_perf} fills in the rest.
-module(beamlab_amqp_config).

-export([defaults/0, new/1, enabled/1, producer_channels/1, consumer_channels/1]).

-export_type([config/0, options/0, queue_pattern/0, nodes/0, out/0, body/0]).

%% `{Pattern, From, To}': queues Pattern with %d replaced by From..To.
-type queue_pattern() :: {unicode:chardata(), integer(), integer()}.
%% This VM plus N-1 started peers, or named running nodes.
-type nodes() :: {peers, pos_integer()} | [node()].
%% Where the report's text goes: an output device (written as UTF-8
%% whatever the device's encoding), or a fun called with each line or
%% group of lines.
-type out() :: io:device() | fun((binary()) -> ok).

%% What the producers publish: bodies stamped with the intended send time
%% (PerfTest's default), the contents of files (stamp in a header), or
%% random JSON documents of about `body_size' bytes (stamp in a header).
-type body() :: stamp
              | {files, [binary()], ContentType :: binary() | undefined}
              | {json, FieldCount :: pos_integer(), BodyCount :: pos_integer()}.

-type config() ::
        #{uri := unicode:chardata(),
          %% -H: the URIs of a cluster's nodes; each connection takes them
          %% in a random order (the first that answers). [] = just `uri'.
          uris := [unicode:chardata()],
          %% -b: heartbeat in seconds (0: the broker's); undefined: the URI's.
          heartbeat := non_neg_integer() | undefined,
          %% -M: frame_max (0: the broker's); undefined: the URI's.
          frame_max := non_neg_integer() | undefined,
          tcp := beamlab_amqp:tcp_opts(),
          tls := beamlab_amqp:tls_opts(),
          sasl := plain | external,
          %% Reconnection delay (ms), a random one between the two.
          recovery_interval := {non_neg_integer(), non_neg_integer()},
          %% --connection-rate: connections opened per second and VM at
          %% most (beamlab's addition), or at once.
          connection_rate := pos_integer() | infinity,
          %% -sst: seconds to wait for the brokers to answer at the start
          %% (0: fail at once); -sul: how many of the URIs must answer.
          startup_timeout := non_neg_integer(),
          servers_up := pos_integer() | undefined,
          %% Seconds the end of the run (stop, drain, close) may take.
          shutdown_timeout := number(),
          producers := non_neg_integer(),
          consumers := non_neg_integer(),
          producer_channels := pos_integer(),
          consumer_channels := pos_integer(),
          queue := binary() | undefined,
          %% -u a,b or --queue-file: several queues used in sequence.
          queues := [binary()] | undefined,
          queue_pattern := queue_pattern() | undefined,
          exchange := binary(),
          exchange_type := binary(),
          routing_key := binary() | undefined,
          random_routing_key := boolean(),
          %% -rkcs: that many random keys, cycled (0: a new one each time).
          routing_key_cache := non_neg_integer(),
          skip_binding := boolean(),
          persistent := boolean(),
          mandatory := boolean(),
          prefetch := non_neg_integer(),
          %% -Q: the channel's prefetch (basic.qos global).
          global_qos := non_neg_integer(),
          %% At most this many unconfirmed publishes per producer channel.
          confirm := pos_integer() | undefined,
          %% -ct: seconds a producer waits for a free confirm slot.
          confirm_timeout := pos_integer(),
          autoack := boolean(),
          multi_ack := non_neg_integer(),
          nack := boolean(),
          requeue := boolean(),
          %% msg/s per producer channel.
          rate := number() | infinity,
          %% -vr: {msg/s, seconds} in a cycle (replaces `rate').
          variable_rate := [{non_neg_integer(), pos_integer()}] | undefined,
          %% -P: one message every that many seconds per producer channel.
          publishing_interval := float() | undefined,
          %% -prsd: each producer starts after a random delay up to this
          %% many seconds (PerfTest's 1 s when a rate is given).
          producer_start_delay := non_neg_integer() | undefined,
          %% msg/s per consumer channel.
          consumer_rate := number() | infinity,
          %% -L: µs of simulated work per message; -vl: {µs, seconds} cycled.
          consumer_latency := non_neg_integer(),
          variable_latency := [{non_neg_integer(), pos_integer()}] | undefined,
          body_size := non_neg_integer(),
          variable_size := [{pos_integer(), pos_integer()}] | undefined,
          body := body(),
          message_properties := beamlab_amqp_method:props(),
          %% Seconds; `undefined' runs until -C/-D, --exit-when or an interruption.
          duration := number() | undefined,
          pmessages := non_neg_integer(),
          cmessages := non_neg_integer(),
          %% Transactions: commit every that many publishes / acks (0: none).
          producer_tx := non_neg_integer(),
          consumer_tx := non_neg_integer(),
          predeclared := boolean(),
          quorum := boolean(),
          stream := boolean(),
          %% -qa: queue arguments as given (the queue type, -mlb, -ma,
          %% -smssb and -ll are added to them).
          queue_args := [{binary(), beamlab_amqp_perftest:value()}],
          max_length_bytes := non_neg_integer() | undefined,
          max_age := pos_integer() | undefined,
          stream_segment_bytes := pos_integer() | undefined,
          leader_locator := binary() | undefined,
          %% undefined: plain queues deleted at the end of the run (ours);
          %% true/false: PerfTest's auto-delete (false: left on the broker).
          auto_delete := boolean() | undefined,
          exclusive := boolean(),
          consumer_args := [{binary(), beamlab_amqp_perftest:value()}],
          stream_offset := beamlab_amqp_perftest:stream_offset() | undefined,
          slow_start := boolean(),
          consumer_start_delay := non_neg_integer(),
          exit_when := never | empty | idle,
          polling := boolean(),
          %% ms between two basic.get.
          polling_interval := non_neg_integer(),
          %% Reporting interval, seconds.
          interval := number(),
          reconnect := boolean(),
          nodes := nodes(),
          closed_loop := non_neg_integer(),
          id := binary(),
          out := out(),
          %% -o: PerfTest's CSV of the interval lines.
          output_file := file:filename_all() | undefined,
          %% -ms: latency printed in milliseconds.
          use_millis := boolean(),
          %% -mf: PerfTest's default or compact lines.
          metrics_format := default | compact,
          %% A line to print under each interval line (e.g. the broker's
          %% own figures with --watch), or none.
          annotate := fun(() -> unicode:chardata() | none) | none,
          %% --metrics-port: the server the run's rates and latencies are
          %% published to (beamlab_amqp_metrics).
          metrics := beamlab_runtime_metrics:server() | none}.

%% What a caller gives: any keys of `config()' (the id may be left out).
-type options() ::
        #{uri => unicode:chardata(),
          %% -H: the URIs of a cluster's nodes; each connection takes them
          %% in a random order (the first that answers). [] = just `uri'.
          uris => [unicode:chardata()],
          %% -b: heartbeat in seconds (0: the broker's); undefined: the URI's.
          heartbeat => non_neg_integer() | undefined,
          %% -M: frame_max (0: the broker's); undefined: the URI's.
          frame_max => non_neg_integer() | undefined,
          tcp => beamlab_amqp:tcp_opts(),
          tls => beamlab_amqp:tls_opts(),
          sasl => plain | external,
          %% Reconnection delay (ms), a random one between the two.
          recovery_interval => {non_neg_integer(), non_neg_integer()},
          connection_rate => pos_integer() | infinity,
          %% -sst: seconds to wait for the brokers to answer at the start
          %% (0: fail at once); -sul: how many of the URIs must answer.
          startup_timeout => non_neg_integer(),
          servers_up => pos_integer() | undefined,
          %% Seconds the end of the run (stop, drain, close) may take.
          shutdown_timeout => number(),
          producers => non_neg_integer(),
          consumers => non_neg_integer(),
          producer_channels => pos_integer(),
          consumer_channels => pos_integer(),
          queue => binary() | undefined,
          %% -u a,b or --queue-file: several queues used in sequence.
          queues => [binary()] | undefined,
          queue_pattern => queue_pattern() | undefined,
          exchange => binary(),
          exchange_type => binary(),
          routing_key => binary() | undefined,
          random_routing_key => boolean(),
          %% -rkcs: that many random keys, cycled (0: a new one each time).
          routing_key_cache => non_neg_integer(),
          skip_binding => boolean(),
          persistent => boolean(),
          mandatory => boolean(),
          prefetch => non_neg_integer(),
          %% -Q: the channel's prefetch (basic.qos global).
          global_qos => non_neg_integer(),
          %% At most this many unconfirmed publishes per producer channel.
          confirm => pos_integer() | undefined,
          %% -ct: seconds a producer waits for a free confirm slot.
          confirm_timeout => pos_integer(),
          autoack => boolean(),
          multi_ack => non_neg_integer(),
          nack => boolean(),
          requeue => boolean(),
          %% msg/s per producer channel.
          rate => number() | infinity,
          %% -vr: {msg/s, seconds} in a cycle (replaces `rate').
          variable_rate => [{non_neg_integer(), pos_integer()}] | undefined,
          %% -P: one message every that many seconds per producer channel.
          publishing_interval => float() | undefined,
          %% -prsd: each producer starts after a random delay up to this
          %% many seconds (PerfTest's 1 s when a rate is given).
          producer_start_delay => non_neg_integer() | undefined,
          %% msg/s per consumer channel.
          consumer_rate => number() | infinity,
          %% -L: µs of simulated work per message; -vl: {µs, seconds} cycled.
          consumer_latency => non_neg_integer(),
          variable_latency => [{non_neg_integer(), pos_integer()}] | undefined,
          body_size => non_neg_integer(),
          variable_size => [{pos_integer(), pos_integer()}] | undefined,
          body => body(),
          message_properties => beamlab_amqp_method:props(),
          %% Seconds; `undefined' runs until -C/-D, --exit-when or an interruption.
          duration => number() | undefined,
          pmessages => non_neg_integer(),
          cmessages => non_neg_integer(),
          %% Transactions: commit every that many publishes / acks (0: none).
          producer_tx => non_neg_integer(),
          consumer_tx => non_neg_integer(),
          predeclared => boolean(),
          quorum => boolean(),
          stream => boolean(),
          %% -qa: queue arguments as given (the queue type, -mlb, -ma,
          %% -smssb and -ll are added to them).
          queue_args => [{binary(), beamlab_amqp_perftest:value()}],
          max_length_bytes => non_neg_integer() | undefined,
          max_age => pos_integer() | undefined,
          stream_segment_bytes => pos_integer() | undefined,
          leader_locator => binary() | undefined,
          %% undefined: plain queues deleted at the end of the run (ours);
          %% true/false: PerfTest's auto-delete (false: left on the broker).
          auto_delete => boolean() | undefined,
          exclusive => boolean(),
          consumer_args => [{binary(), beamlab_amqp_perftest:value()}],
          stream_offset => beamlab_amqp_perftest:stream_offset() | undefined,
          slow_start => boolean(),
          consumer_start_delay => non_neg_integer(),
          exit_when => never | empty | idle,
          polling => boolean(),
          %% ms between two basic.get.
          polling_interval => non_neg_integer(),
          %% Reporting interval, seconds.
          interval => number(),
          reconnect => boolean(),
          nodes => nodes(),
          closed_loop => non_neg_integer(),
          id => binary() | undefined,
          out => out(),
          %% -o: PerfTest's CSV of the interval lines.
          output_file => file:filename_all() | undefined,
          %% -ms: latency printed in milliseconds.
          use_millis => boolean(),
          %% -mf: PerfTest's default or compact lines.
          metrics_format => default | compact,
          %% A line to print under each interval line (e.g. the broker's
          %% own figures with --watch), or none.
          annotate => fun(() -> unicode:chardata() | none) | none,
          metrics => beamlab_runtime_metrics:server() | none}.

%% @doc Default configuration (PerfTest's defaults where they make sense),
%% without an id.
-spec defaults() -> options().
defaults() ->
    #{uri => <<"amqp://guest:guest@localhost:5672/%2F">>, uris => [],
      heartbeat => undefined, frame_max => undefined, tcp => #{}, tls => #{},
      sasl => plain, recovery_interval => {1000, 1000}, connection_rate => infinity, startup_timeout => 0,
      servers_up => undefined, shutdown_timeout => 5,
      producers => 1, consumers => 1, producer_channels => 1, consumer_channels => 1,
      queue => undefined, queues => undefined, queue_pattern => undefined,
      exchange => <<"direct">>, exchange_type => <<"direct">>, routing_key => undefined,
      random_routing_key => false, routing_key_cache => 0, skip_binding => false,
      persistent => false, mandatory => false, prefetch => 0, global_qos => 0,
      confirm => undefined, confirm_timeout => 30,
      autoack => false, multi_ack => 0, nack => false, requeue => true,
      rate => infinity, variable_rate => undefined, publishing_interval => undefined,
      producer_start_delay => undefined, consumer_rate => infinity,
      consumer_latency => 0, variable_latency => undefined,
      body_size => 12, variable_size => undefined, body => stamp, message_properties => #{},
      duration => undefined, pmessages => 0, cmessages => 0,
      producer_tx => 0, consumer_tx => 0, predeclared => false,
      quorum => false, stream => false, queue_args => [], max_length_bytes => undefined,
      max_age => undefined, stream_segment_bytes => undefined, leader_locator => undefined,
      auto_delete => undefined, exclusive => false, consumer_args => [], stream_offset => undefined,
      slow_start => false, consumer_start_delay => 0, exit_when => never,
      polling => false, polling_interval => 0,
      interval => 1, reconnect => false, nodes => [node()],
      closed_loop => 0, id => undefined,
      out => standard_io, output_file => undefined, use_millis => false,
      metrics_format => default, annotate => none, metrics => none}.

%% @doc The full configuration from a caller's options: defaults for what
%% is missing, and a PerfTest-style test id (`test-HHMMSS-mmm') when none
%% is given.
-spec new(options()) -> config().
new(Opts) ->
    Cfg = maps:merge(defaults(), Opts),
    case maps:get(id, Cfg) of
        undefined -> Cfg#{id := beamlab_amqp_report:test_id(erlang:system_time(millisecond))};
        _ -> Cfg
    end.

%% @doc Which columns PerfTest prints for this configuration.
-spec enabled(config()) -> beamlab_amqp_report:enabled().
enabled(Cfg) ->
    Loop = maps:get(closed_loop, Cfg) > 0,
    #{published => Loop orelse maps:get(producers, Cfg) > 0,
      received => Loop orelse maps:get(consumers, Cfg) > 0,
      returned => maps:get(mandatory, Cfg) andalso not Loop,
      confirmed => maps:get(confirm, Cfg) =/= undefined andalso not Loop}.

%% @doc Publishing channels in all (producers times channels each).
-spec producer_channels(config()) -> non_neg_integer().
producer_channels(Cfg) ->
    maps:get(producers, Cfg) * maps:get(producer_channels, Cfg).

%% @doc Consuming channels in all.
-spec consumer_channels(config()) -> non_neg_integer().
consumer_channels(Cfg) ->
    maps:get(consumers, Cfg) * maps:get(consumer_channels, Cfg).
