%%% @doc Closed-loop worker: one channel with its own queue that publishes
%%% its next message only when the previous one has been delivered back (the
%%% channel-per-queue stress test of the NUMA investigation). Throughput is
%%% then bounded by the round trip, and the consumer latency is that round
%%% trip.
-module(beamlab_amqp_loop).
-behaviour(beamlab_amqp_worker).

-include("beamlab_amqp_perf.hrl").

-export([start_link/2]).

%% Worker callbacks (beamlab_amqp_worker:start/3).
-export([open/2, run/3]).

%% @doc Starts a loop worker for `Spec' (queue, group, body_size, persistent,
%% reconnect); it subscribes, sends `{self(), ready}' to its parent, then
%% waits for `{go, StartUs}' to publish its first message.
-spec start_link(beamlab_runtime_shared:key(), beamlab_amqp_worker:loop_spec()) -> pid().
start_link(CtxKey, Spec) ->
    beamlab_amqp_worker:start(?MODULE, CtxKey, Spec).

%% @private
-spec run({ok, beamlab_amqp:channel()}, beamlab_amqp_worker:ctx(),
          beamlab_amqp_worker:loop_spec()) -> no_return().
run({ok, Ch}, Ctx, Spec) ->
    Pad = maps:get(max(?BODY_MIN, maps:get(body_size, Spec)), maps:get(pads, Ctx)),
    Opts = #{props => case maps:get(persistent, Spec) of
                          true -> #{delivery_mode => 2};
                          false -> #{}
                      end},
    receive
        {go, _StartUs} ->
            Q = maps:get(queue, Spec),
            publish(Ch, Q, Pad, Opts, 0, Ctx),
            loop(Ch, Q, Pad, Opts, 1, Ctx, Spec)
    end.

%% @private
-spec open(beamlab_amqp_worker:ctx(), beamlab_amqp_worker:loop_spec()) ->
          {ok, beamlab_amqp:channel()} | {error, beamlab_amqp:reason()}.
open(Ctx, Spec) ->
    case beamlab_amqp_worker:connection(Ctx, Spec) of
        {ok, Conn} ->
            case beamlab_amqp:open_channel(Conn, #{direct => true}) of
                {ok, Ch} ->
                    case beamlab_amqp:consume(Ch, maps:get(queue, Spec), #{}) of
                        {ok, _} -> {ok, Ch};
                        {error, _} = E ->
                            %% Drop the refused channel's notice: the next
                            %% channel may reuse its number (and handle).
                            receive {amqp_closed, Ch, _, _} -> E after 0 -> E end
                    end;
                {error, _} = E ->
                    E
            end;
        {error, _} = E ->
            E
    end.

publish(Ch, Q, Pad, Opts, N, #{counters := C}) ->
    ok = beamlab_amqp:publish(Ch, <<>>, Q,
                              beamlab_amqp_producer:body(?NOW_US(), N band 16#FFFFFFFF, Pad),
                              Opts),
    counters:add(C, ?C_SENT, 1).

loop(Ch, Q, Pad, Opts, N, #{counters := C, cons_hists := Hs} = Ctx, Spec) ->
    receive
        {amqp_deliver, Ch, Tag, _, _, _, _, <<T:64/signed, _/binary>>} ->
            beamlab_amqp_worker:record(Hs, max(0, ?NOW_US() - T)),
            counters:add(C, ?C_RECEIVED, 1),
            ok = beamlab_amqp:ack(Ch, Tag, false),
            case counters:get(C, ?C_STOPPING) of
                0 -> publish(Ch, Q, Pad, Opts, N, Ctx);
                _ -> ok
            end,
            loop(Ch, Q, Pad, Opts, N + 1, Ctx, Spec);
        {amqp_closed, Ch, Code, Text} ->
            case maps:get(reconnect, Spec) of
                true ->
                    {ok, Ch1} = beamlab_amqp_worker:reopen(fun() -> open(Ctx, Spec) end, Spec),
                    %% The message in flight may be lost with the connection.
                    publish(Ch1, Q, Pad, Opts, N, Ctx),
                    loop(Ch1, Q, Pad, Opts, N + 1, Ctx, Spec);
                false ->
                    beamlab_amqp_worker:connection_lost(Code, Text)
            end;
        stop ->
            _ = catch beamlab_amqp:close_channel(Ch, #{timeout => ?CLOSE_MS}),
            exit(normal);
        _ ->
            loop(Ch, Q, Pad, Opts, N, Ctx, Spec)
    end.

