%%% @doc The configuration of a load test (`beamlab amqp'): its type, every
%%% key typed, PerfTest's defaults, and what follows from it (the test id,
%%% which columns the report prints). A library caller gives a map with any
%%% of these keys; `run/1' of {@link beamlab_amqp_perf} fills in the rest.
-module(beamlab_amqp_config).

-export([defaults/0, new/1, enabled/1, producer_channels/1, consumer_channels/1]).

-export_type([config/0, options/0, queue_pattern/0, nodes/0, out/0]).

%% `{Pattern, From, To}': queues Pattern with %d replaced by From..To.
-type queue_pattern() :: {unicode:chardata(), integer(), integer()}.
%% This VM plus N-1 started peers, or named running nodes.
-type nodes() :: {peers, pos_integer()} | [node()].
%% Where the report's text goes: an output device (written as UTF-8
%% whatever the device's encoding), or a fun called with each line or
%% group of lines.
-type out() :: io:device() | fun((binary()) -> ok).

-type config() ::
        #{uri := unicode:chardata(),
          producers := non_neg_integer(),
          consumers := non_neg_integer(),
          producer_channels := pos_integer(),
          consumer_channels := pos_integer(),
          queue := binary() | undefined,
          queue_pattern := queue_pattern() | undefined,
          exchange := binary(),
          exchange_type := binary(),
          routing_key := binary() | undefined,
          persistent := boolean(),
          mandatory := boolean(),
          prefetch := non_neg_integer(),
          %% At most this many unconfirmed publishes per producer channel.
          confirm := pos_integer() | undefined,
          autoack := boolean(),
          multi_ack := non_neg_integer(),
          %% msg/s per producer channel.
          rate := number() | infinity,
          body_size := non_neg_integer(),
          %% Seconds; `undefined' runs until -C/-D or an interruption.
          duration := number() | undefined,
          pmessages := non_neg_integer(),
          cmessages := non_neg_integer(),
          predeclared := boolean(),
          quorum := boolean(),
          %% Reporting interval, seconds.
          interval := number(),
          reconnect := boolean(),
          nodes := nodes(),
          closed_loop := non_neg_integer(),
          id := binary(),
          out := out()}.

%% What a caller gives: any keys of `config()' (the id may be left out).
-type options() :: #{uri => unicode:chardata(),
                     producers => non_neg_integer(),
                     consumers => non_neg_integer(),
                     producer_channels => pos_integer(),
                     consumer_channels => pos_integer(),
                     queue => binary() | undefined,
                     queue_pattern => queue_pattern() | undefined,
                     exchange => binary(),
                     exchange_type => binary(),
                     routing_key => binary() | undefined,
                     persistent => boolean(),
                     mandatory => boolean(),
                     prefetch => non_neg_integer(),
                     confirm => pos_integer() | undefined,
                     autoack => boolean(),
                     multi_ack => non_neg_integer(),
                     rate => number() | infinity,
                     body_size => non_neg_integer(),
                     duration => number() | undefined,
                     pmessages => non_neg_integer(),
                     cmessages => non_neg_integer(),
                     predeclared => boolean(),
                     quorum => boolean(),
                     interval => number(),
                     reconnect => boolean(),
                     nodes => nodes(),
                     closed_loop => non_neg_integer(),
                     id => binary() | undefined,
                     out => out()}.

%% @doc Default configuration (PerfTest's defaults where they make sense),
%% without an id.
-spec defaults() -> options().
defaults() ->
    #{uri => <<"amqp://guest:guest@localhost:5672/%2F">>,
      producers => 1, consumers => 1, producer_channels => 1, consumer_channels => 1,
      queue => undefined, queue_pattern => undefined,
      exchange => <<"direct">>, exchange_type => <<"direct">>, routing_key => undefined,
      persistent => false, mandatory => false, prefetch => 0, confirm => undefined,
      autoack => false, multi_ack => 0, rate => infinity, body_size => 12,
      duration => undefined, pmessages => 0, cmessages => 0, predeclared => false,
      quorum => false, interval => 1, reconnect => false, nodes => [node()],
      closed_loop => 0, id => undefined,
      out => standard_io}.

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
