%%% @doc One publishing channel of the load generator (PerfTest's "producer
%%% #i, channel #j").
%%%
%%% Publishes bodies stamped with their intended send time (see
%%% `beamlab_amqp_rate'), keeps at most `confirm' publishes unconfirmed when
%%% publisher confirms are on, measures confirm latency per sequence number
%%% and counts sent, returned, confirmed and nacked messages in the node's
%%% shared `counters'. Without confirms it watches the connection's backlog
%%% so that an unlimited producer cannot flood the connection process.
-module(beamlab_amqp_producer).
-behaviour(beamlab_amqp_worker).

-include("beamlab_amqp_perf.hrl").

-export([start_link/2, body/3]).

%% Worker callbacks (beamlab_amqp_worker:start/3).
-export([open/2, run/3]).

-define(BACKLOG_CHECK, 128).     % publishes between backlog checks
-define(BACKLOG_MAX, 2000).      % connection mailbox length that pauses us
-define(SETTLE_MS, 5000).        % max wait for outstanding confirms at the end
-define(RETURN_GRACE_MS, 200).   % wait for late basic.return without confirms

-record(st, {ctx :: beamlab_amqp_worker:ctx(),
             spec :: beamlab_amqp_worker:producer_spec(),
             conn :: beamlab_amqp:conn(),
             ch :: beamlab_amqp:channel(),
             limiter :: beamlab_amqp_rate:limiter(),
             seq = 1 :: pos_integer(),         % next confirm sequence number
             low = 1 :: pos_integer(),         % lowest possibly unconfirmed
             outstanding = #{} :: #{pos_integer() => integer()},
             left :: non_neg_integer() | infinity,
             n = 0 :: non_neg_integer(),       % messages published by us
             opts :: beamlab_amqp:publish_opts(),
             pad :: binary()}).

%% @doc Starts a producer for `Spec' (exchange, key, mandatory, persistent,
%% confirm, rate, count, body_size, group, reconnect) with the agent's
%% context (counters, histograms, agent pid), shared under `CtxKey'. It sends `{self(), ready}'
%% to its parent once the channel is open (and in confirm mode when asked),
%% then waits for `{go, StartUs}'.
-spec start_link(beamlab_runtime_shared:key(), beamlab_amqp_worker:producer_spec()) -> pid().
start_link(CtxKey, Spec) ->
    beamlab_amqp_worker:start(?MODULE, CtxKey, Spec).

%% @doc The message body: intended send time, sequence number, zero padding
%% up to `Size' bytes (at least 12).
-spec body(integer(), non_neg_integer(), binary()) -> binary().
body(IntendedUs, N, Pad) ->
    <<IntendedUs:64/signed, N:32, Pad/binary>>.

%% @private
-spec run({ok, beamlab_amqp:conn(), beamlab_amqp:channel()}, beamlab_amqp_worker:ctx(),
          beamlab_amqp_worker:producer_spec()) -> no_return().
run({ok, Conn, Ch}, Ctx, Spec) ->
    Size = max(?BODY_MIN, maps:get(body_size, Spec)),
    Props = case maps:get(persistent, Spec) of
                true -> #{delivery_mode => 2};
                false -> #{}
            end,
    Opts = #{props => Props, mandatory => maps:get(mandatory, Spec)},
    St0 = #st{ctx = Ctx, spec = Spec, conn = Conn, ch = Ch, opts = Opts,
              pad = binary:copy(<<0>>, Size - ?BODY_MIN),
              left = case maps:get(count, Spec) of
                         0 -> infinity;
                         C -> C
                     end,
              limiter = beamlab_amqp_rate:new(infinity, 0)},
    receive
        {go, StartUs} ->
            L = beamlab_amqp_rate:new(maps:get(rate, Spec), StartUs),
            loop(St0#st{limiter = L})
    end.

%% @private
-spec open(beamlab_amqp_worker:ctx(), beamlab_amqp_worker:producer_spec()) ->
          {ok, beamlab_amqp:conn(), beamlab_amqp:channel()} | {error, beamlab_amqp:reason()}.
open(Ctx, Spec) ->
    maybe_open(beamlab_amqp_worker:connection(Ctx, Spec), Spec).

maybe_open({ok, Conn}, Spec) ->
    case beamlab_amqp:open_channel(Conn) of
        {ok, Ch} ->
            case maps:get(confirm, Spec) of
                undefined ->
                    {ok, Conn, Ch};
                _ ->
                    case beamlab_amqp:confirm_select(Ch) of
                        ok -> {ok, Conn, Ch};
                        {error, _} = E ->
                            %% The next channel may reuse this one's handle.
                            receive {amqp_closed, Ch, _, _} -> E after 0 -> E end
                    end
            end;
        {error, _} = E ->
            E
    end;
maybe_open({error, _} = E, _Spec) ->
    E.

%% The main loop: handle what arrived, then publish if the window, the
%% schedule and the message count allow.
loop(St) ->
    receive
        Msg -> loop(handle(Msg, St))
    after 0 ->
        publish_or_wait(St)
    end.

publish_or_wait(#st{left = 0} = St) ->
    finish(St);
publish_or_wait(#st{spec = #{confirm := Max}, outstanding = Out} = St)
  when is_integer(Max), map_size(Out) >= Max ->
    receive Msg -> loop(handle(Msg, St)) end;
publish_or_wait(#st{limiter = L} = St) ->
    case beamlab_amqp_rate:next(L, ?NOW_US()) of
        {go, Intended, L1} ->
            loop(throttle(publish(Intended, St#st{limiter = L1})));
        {wait, Us} ->
            receive
                Msg -> loop(handle(Msg, St))
            after (Us + 999) div 1000 ->
                loop(St)
            end
    end.

publish(Intended, #st{ch = Ch, spec = Spec, opts = Opts, pad = Pad, n = N,
                      left = Left, ctx = #{counters := C} = Ctx} = St) ->
    %% The body carries the coordinator's time (see the agent's clock_offset).
    Stamp = Intended - maps:get(clock_offset, Ctx, 0),
    ok = beamlab_amqp:publish(Ch, maps:get(exchange, Spec), maps:get(key, Spec),
                              body(Stamp, N band 16#FFFFFFFF, Pad), Opts),
    counters:add(C, ?C_SENT, 1),
    St1 = St#st{n = N + 1, left = dec(Left)},
    case maps:get(confirm, Spec) of
        undefined ->
            St1;
        _ ->
            Seq = St#st.seq,
            St1#st{seq = Seq + 1, outstanding = maps:put(Seq, Intended, St#st.outstanding)}
    end.

dec(infinity) -> infinity;
dec(N) -> N - 1.

%% Without confirms nothing stops a producer from outrunning the socket; the
%% connection's mailbox is the backlog, so pause while it is long.
throttle(#st{spec = #{confirm := undefined}, n = N, conn = Conn} = St)
  when N rem ?BACKLOG_CHECK =:= 0 ->
    wait_backlog(Conn),
    St;
throttle(St) ->
    St.

%% A stop request ends the wait (the connection may never catch up: a
%% frozen broker stops reading); it is put back for the main loop.
wait_backlog(Conn) ->
    case beamlab_amqp:pending(Conn) of
        P when is_integer(P), P > ?BACKLOG_MAX ->
            receive
                stop -> self() ! stop, ok
            after 1 ->
                wait_backlog(Conn)
            end;
        _ ->
            ok
    end.

handle({amqp_confirm, Ch, Kind, Seq, Multiple}, #st{ch = Ch} = St) ->
    confirm(Kind, Seq, Multiple, St);
handle({amqp_return, Ch, _Code, _Text, _Ex, _Key, _Props, _Body},
       #st{ch = Ch, ctx = #{counters := C}} = St) ->
    counters:add(C, ?C_RETURNED, 1),
    St;
handle({amqp_closed, Ch, Code, Text}, #st{ch = Ch} = St) ->
    connection_lost(Code, Text, St);
handle(stop, St) ->
    finish(St);
handle(_Other, St) ->
    St.

confirm(Kind, Seq, false, #st{outstanding = Out} = St) ->
    case maps:take(Seq, Out) of
        {Intended, Out1} ->
            settle(Kind, 1, [Intended], St#st{outstanding = Out1});
        error ->
            St
    end;
confirm(Kind, Seq, true, #st{outstanding = Out, low = Low} = St) ->
    {Ts, Out1} = take_upto(Low, Seq, Out, []),
    settle(Kind, length(Ts), Ts, St#st{outstanding = Out1, low = Seq + 1}).

take_upto(I, Seq, Out, Acc) when I > Seq ->
    {Acc, Out};
take_upto(I, Seq, Out, Acc) ->
    case maps:take(I, Out) of
        {T, Out1} -> take_upto(I + 1, Seq, Out1, [T | Acc]);
        error -> take_upto(I + 1, Seq, Out, Acc)
    end.

settle(_Kind, 0, _Ts, St) ->
    St;
settle(Kind, N, Ts, #st{ctx = #{counters := C, conf_hists := Hs}} = St) ->
    counters:add(C, case Kind of ack -> ?C_CONFIRMED; nack -> ?C_NACKED end, N),
    Now = ?NOW_US(),
    _ = [beamlab_amqp_worker:record(Hs, max(0, Now - T)) || T <- Ts],
    St.

connection_lost(_Code, _Text, #st{spec = #{reconnect := true} = Spec, ctx = Ctx} = St) ->
    %% Fate of unconfirmed publishes is unknown after a reconnect: drop them
    %% from the window; the accounting shows them as unaccounted.
    {ok, Conn, Ch} = beamlab_amqp_worker:reopen(fun() -> open(Ctx, Spec) end),
    St#st{conn = Conn, ch = Ch, seq = 1, low = 1, outstanding = #{}};
connection_lost(Code, Text, _St) ->
    beamlab_amqp_worker:connection_lost(Code, Text).

%% Stop publishing; wait (bounded) for outstanding confirms and late returns
%% so that the counts are final, then close the channel.
-spec finish(#st{}) -> no_return().
finish(#st{spec = #{confirm := undefined}} = St) ->
    Deadline = erlang:monotonic_time(millisecond) + ?RETURN_GRACE_MS,
    St1 = drain(St, Deadline),
    close(St1);
finish(St) ->
    Deadline = erlang:monotonic_time(millisecond) + ?SETTLE_MS,
    close(settle_all(St, Deadline)).

settle_all(#st{outstanding = Out} = St, _Deadline) when map_size(Out) =:= 0 ->
    St;
settle_all(St, Deadline) ->
    next_until(St, Deadline, fun settle_all/2).

drain(St, Deadline) ->
    next_until(St, Deadline, fun drain/2).

%% Handles the next message (a repeated stop is ignored) and goes on with
%% Next; at the deadline, the state as it is.
next_until(St, Deadline, Next) ->
    Left = max(0, Deadline - erlang:monotonic_time(millisecond)),
    receive
        stop -> Next(St, Deadline);
        Msg -> Next(handle(Msg, St), Deadline)
    after Left ->
        St
    end.

-spec close(#st{}) -> no_return().
close(#st{ch = Ch}) ->
    _ = catch beamlab_amqp:close_channel(Ch, #{timeout => ?CLOSE_MS}),
    exit(normal).
