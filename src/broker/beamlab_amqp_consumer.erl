%%% @doc One consuming channel of the load generator (PerfTest's "consumer
%%% #i, channel #j").
%%%
%%% Consumes a queue with the given prefetch, acknowledges every message,
%%% every Nth message with `multiple' (multi-ack), or not at all (autoack),
%%% and records consumer latency: receive time minus the intended send time
%%% the producer wrote into the body. On stop it acknowledges what it has
%%% counted before closing the channel, so a message is either counted as
%%% received or left in the queue, never both.
-module(beamlab_amqp_consumer).
-behaviour(beamlab_amqp_worker).

-include("beamlab_amqp_perf.hrl").

-export([start_link/2]).

%% Worker callbacks (beamlab_amqp_worker:start/3).
-export([open/2, run/3]).

-record(st, {ctx :: beamlab_amqp_worker:ctx(),
             spec :: beamlab_amqp_worker:consumer_spec(),
             ch :: beamlab_amqp:channel(),
             left :: non_neg_integer() | infinity,
             unacked = 0 :: non_neg_integer(),
             last_tag = 0 :: non_neg_integer()}).

%% @doc Starts a consumer for `Spec' (queue, group, prefetch, autoack,
%% multi_ack, count, reconnect). It sends `{self(), ready}' to its parent
%% once the broker confirmed the subscription (basic.consume-ok), so no
%% message published afterwards is missed, or `{self(), {error, R}}'.
-spec start_link(beamlab_runtime_shared:key(), beamlab_amqp_worker:consumer_spec()) -> pid().
start_link(CtxKey, Spec) ->
    beamlab_amqp_worker:start(?MODULE, CtxKey, Spec).

%% @private
-spec open(beamlab_amqp_worker:ctx(), beamlab_amqp_worker:consumer_spec()) ->
          {ok, beamlab_amqp:channel()} | {error, beamlab_amqp:reason()}.
open(Ctx, Spec) ->
    subscribe(Ctx, Spec).

%% @private
-spec run({ok, beamlab_amqp:channel()}, beamlab_amqp_worker:ctx(),
          beamlab_amqp_worker:consumer_spec()) -> no_return().
run({ok, Ch}, Ctx, Spec) ->
    loop(#st{ctx = Ctx, spec = Spec, ch = Ch,
             left = case maps:get(count, Spec) of
                        0 -> infinity;
                        C -> C
                    end}).

subscribe(Ctx, Spec) ->
    case beamlab_amqp_worker:connection(Ctx, Spec) of
        {ok, Conn} ->
            with_channel(beamlab_amqp:open_channel(Conn), Spec);
        {error, _} = E ->
            E
    end.

with_channel({ok, Ch}, Spec) ->
    Qos = case maps:get(prefetch, Spec) of
              0 -> ok;
              P -> beamlab_amqp:qos(Ch, P)
          end,
    case Qos of
        ok ->
            case beamlab_amqp:consume(Ch, maps:get(queue, Spec),
                                      #{no_ack => maps:get(autoack, Spec)}) of
                {ok, _Tag} -> {ok, Ch};
                {error, _} = E -> quiet(Ch, E)
            end;
        {error, _} = E ->
            quiet(Ch, E)
    end;
with_channel({error, _} = E, _Spec) ->
    E.

%% A refused method (consume of a queue that does not exist yet, while the
%% run declares it again after a broker restart) closes the channel and
%% leaves its `amqp_closed' notice here. The next channel may get the same
%% number, hence the same handle: the stale notice must not be taken for
%% the loss of that one.
quiet(Ch, E) ->
    receive {amqp_closed, Ch, _, _} -> E
    after 0 -> E
    end.

loop(#st{left = 0} = St) ->
    finish(St);
loop(#st{ch = Ch} = St) ->
    receive
        {amqp_deliver, Ch, Tag, _Redelivered, _Ex, _Key, _Props, Body} ->
            loop(deliver(Tag, Body, St));
        {amqp_closed, Ch, Code, Text} ->
            loop(connection_lost(Code, Text, St));
        {amqp_cancelled, Ch, _} ->
            exit({shutdown, {consumer_cancelled, maps:get(queue, St#st.spec)}});
        stop ->
            finish(St);
        _ ->
            loop(St)
    end.

deliver(Tag, Body, #st{ctx = #{counters := C, cons_hists := Hs} = Ctx} = St) ->
    case Body of
        <<Intended:64/signed, _/binary>> ->
            %% Intended is in the coordinator's time (see the agent's clock_offset).
            Off = maps:get(clock_offset, Ctx, 0),
            beamlab_amqp_worker:record(Hs, max(0, ?NOW_US() - Off - Intended));
        _ ->
            ok   % a foreign message in the queue: counted, no latency
    end,
    counters:add(C, ?C_RECEIVED, 1),
    ack(Tag, St#st{left = case St#st.left of
                              infinity -> infinity;
                              L -> L - 1
                          end}).

ack(_Tag, #st{spec = #{autoack := true}} = St) ->
    St;
ack(Tag, #st{spec = #{multi_ack := N}, ch = Ch, unacked = U} = St) when N > 1 ->
    case U + 1 >= N of
        true ->
            ok = beamlab_amqp:ack(Ch, Tag, true),
            St#st{unacked = 0, last_tag = Tag};
        false ->
            St#st{unacked = U + 1, last_tag = Tag}
    end;
ack(Tag, #st{ch = Ch} = St) ->
    ok = beamlab_amqp:ack(Ch, Tag, false),
    St#st{last_tag = Tag}.

connection_lost(_Code, _Text, #st{spec = #{reconnect := true} = Spec, ctx = Ctx} = St) ->
    %% Unacked deliveries go back to the queue with the old channel.
    {ok, Ch} = beamlab_amqp_worker:reopen(fun() -> subscribe(Ctx, Spec) end),
    St#st{ch = Ch, unacked = 0, last_tag = 0};
connection_lost(Code, Text, _St) ->
    beamlab_amqp_worker:connection_lost(Code, Text).

-spec finish(#st{}) -> no_return().
finish(#st{ch = Ch, unacked = U, last_tag = Tag} = St) ->
    _ = case U > 0 of
            true -> beamlab_amqp:ack(Ch, Tag, true);
            false -> ok
        end,
    _ = catch beamlab_amqp:close_channel(Ch, #{timeout => ?CLOSE_MS}),
    %% With autoack, deliveries still in the mailbox have left the queue:
    %% count them. With acks they return to the queue with the channel.
    case maps:get(autoack, St#st.spec) of
        true -> drain_autoack(St);
        false -> ok
    end,
    exit(normal).

drain_autoack(#st{ch = Ch} = St) ->
    receive
        {amqp_deliver, Ch, Tag, _, _, _, _, Body} ->
            drain_autoack(deliver(Tag, Body, St#st{left = infinity}))
    after 0 ->
        ok
    end.
