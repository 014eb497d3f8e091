%%% @doc The least CPU a BEAM client can spend on PerfTest's rate-limited
%%% scenarios (FLOOR=1 bench/amqp_vs_perftest.sh, issue #26): the same traffic as
%%% `-x P -y C -u Q -r RATE -f mandatory -q 300 -c 100' (or
%%% `--variable-rate'), sent and received by one process per socket over
%%% gen_tcp, with nothing a load tool needs beyond counting: no latency
%%% histograms, no per-producer statistics, no reconnects, no channel
%%% bookkeeping, no error handling. Whatever beamlab does on top of this is
%%% its own cost; what this costs is the platform's.
%%%
%%% Same wire traffic as PerfTest: a 12-byte body per message, one
%%% basic.publish (mandatory) per message with at most 100 unconfirmed per
%%% producer, prefetch 300 per consumer, one basic.ack per delivery (the
%%% acks of one socket read in one write).
%%%
%%% The producer publishes by beamlab's rule (beamlab_amqp_producer, #33),
%%% so that both make the same writes: on beamlab's schedule
%%% (beamlab_amqp_rate), everything due goes out in one write (at most 64
%%% messages a write) when a timer set to the next message's due time
%%% fires; confirms read while it runs only free slots in the window (no
%%% write per confirm read); a full window publishes what is due as soon
%%% as a confirm frees a slot; a timer more than 2 ms late is not waited
%%% for once a read wakes the producer. A floor that wrote on every
%%% confirm read would do more work than beamlab and be no floor.
%%%
%%%   erl -noshell -pa BEAMLAB_EBIN -pa DIR -run amqp_floor main \
%%%       PORT PRODUCERS CONSUMERS QUEUE STEPS SECONDS
%%% STEPS is `RATE' (msg/s per producer) or `RATE:SECONDS,RATE:SECONDS,...'
%%% (cycled, as --variable-rate). Prints PerfTest's interval line once a
%%% second ("time T s, sent: S msg/s, received: R msg/s"), then halts.
%%% For bench/amqp_tcp_opts.sh (#33): FLOOR_ACTIVE_N sets the sockets'
%%% {active, N} (default 64).
-module(amqp_floor).

-include("beamlab_amqp.hrl").   % erlc -I include

-export([main/1]).

-define(FRAME_MAX, 131072).
-define(CONFIRM_WINDOW, 100).
-define(PREFETCH, 300).
%% Publishes per write at most (beamlab_amqp_producer's BATCH_MSGS).
-define(BATCH_MSGS, 64).

-spec main([string()]) -> no_return().
main([PortS, ProducersS, ConsumersS, Queue, StepsS, SecsS]) ->
    Port = list_to_integer(PortS),
    Q = list_to_binary(Queue),
    Steps = steps(StepsS),
    Counts = counters:new(2, [write_concurrency]),   % 1: sent, 2: received
    lists:foreach(fun(_) -> consumer(Port, Q, Counts) end,
                  lists:seq(1, list_to_integer(ConsumersS))),
    Start = erlang:monotonic_time(microsecond),
    lists:foreach(fun(_) -> producer(Port, Q, Steps, Start, Counts) end,
                  lists:seq(1, list_to_integer(ProducersS))),
    report(1, list_to_integer(SecsS), Start, Counts, {0, 0}),
    halt(0).

%% "R" or "R:S,R:S": [{MsgPerSecond, Seconds}] (one step of a second for "R").
steps(S) ->
    [step(string:split(X, ":")) || X <- string:split(S, ",", all)].

step([R]) -> {list_to_integer(R), 1};
step([R, D]) -> {list_to_integer(R), list_to_integer(D)}.

report(T, Secs, _Start, _Counts, _Prev) when T > Secs ->
    ok;
report(T, Secs, Start, Counts, {PrevS, PrevR}) ->
    Wait = (Start + T * 1000000 - erlang:monotonic_time(microsecond)) div 1000,
    receive after max(0, Wait) -> ok end,
    S = counters:get(Counts, 1),
    R = counters:get(Counts, 2),
    io:format("time ~b s, sent: ~b msg/s, received: ~b msg/s~n", [T, S - PrevS, R - PrevR]),
    report(T + 1, Secs, Start, Counts, {S, R}).

%%--------------------------------------------------------------------
%% Connection set-up (passive mode, then handed to the socket's process)
%%--------------------------------------------------------------------

connect(Port) ->
    {ok, S} = gen_tcp:connect({127, 0, 0, 1}, Port, [binary, {active, false}, {nodelay, true}]),
    ok = gen_tcp:send(S, beamlab_amqp_frame:protocol_header()),
    {#'connection.start'{}, B1} = recv_method(S, <<>>),
    send_method(S, 0, #'connection.start_ok'{response = <<0, "guest", 0, "guest">>}),
    {#'connection.tune'{}, B2} = recv_method(S, B1),
    send_method(S, 0, #'connection.tune_ok'{channel_max = 1, frame_max = ?FRAME_MAX, heartbeat = 0}),
    send_method(S, 0, #'connection.open'{}),
    {#'connection.open_ok'{}, B3} = recv_method(S, B2),
    send_method(S, 1, #'channel.open'{}),
    {#'channel.open_ok'{}, <<>>} = recv_method(S, B3),
    S.

call(S, Method) ->
    send_method(S, 1, Method),
    {_Reply, <<>>} = recv_method(S, <<>>),
    ok.

send_method(S, Ch, Method) ->
    ok = gen_tcp:send(S, beamlab_amqp_frame:encode_method(Ch, Method)).

recv_method(S, Buf) ->
    case beamlab_amqp_frame:parse(Buf) of
        {ok, {method, _, Payload}, Rest} ->
            {ok, Method} = beamlab_amqp_method:decode(Payload),
            {Method, Rest};
        more ->
            {ok, Data} = gen_tcp:recv(S, 0),
            recv_method(S, <<Buf/binary, Data/binary>>)
    end.

declare(S, Q) ->
    call(S, #'queue.declare'{queue = Q, auto_delete = true}).

%% Starts a process that owns socket `S' in {active, N} mode and runs `Loop'.
own(S, Loop) ->
    Pid = spawn_link(fun() -> receive go -> ok end, active(S), Loop() end),
    ok = gen_tcp:controlling_process(S, Pid),
    Pid ! go.

active(S) ->
    ok = inet:setopts(S, [{active, env_int("FLOOR_ACTIVE_N", 64)}]).

env_int(Name, Default) ->
    case os:getenv(Name) of
        false -> Default;
        V -> list_to_integer(V)
    end.

%%--------------------------------------------------------------------
%% Consumer: one basic.ack per delivery, the acks of one read in one write
%%--------------------------------------------------------------------

consumer(Port, Q, Counts) ->
    S = connect(Port),
    declare(S, Q),
    call(S, #'basic.qos'{prefetch_count = ?PREFETCH}),
    call(S, #'basic.consume'{queue = Q}),
    own(S, fun() -> consume(S, <<>>, Counts) end).

consume(S, Buf, Counts) ->
    receive
        {tcp, S, Data} ->
            {Acks, N, Rest} = deliveries(<<Buf/binary, Data/binary>>, [], 0),
            N > 0 andalso gen_tcp:send(S, Acks),
            counters:add(Counts, 2, N),
            consume(S, Rest, Counts);
        {tcp_passive, S} ->
            active(S),
            consume(S, Buf, Counts)
    end.

deliveries(Bin, Acks, N) ->
    case beamlab_amqp_frame:parse(Bin) of
        {ok, {method, Ch, <<60:16, 60:16, _/binary>> = Payload}, Rest} ->
            {ok, #'basic.deliver'{delivery_tag = T}} = beamlab_amqp_method:decode(Payload),
            Ack = beamlab_amqp_frame:encode_method(Ch, #'basic.ack'{delivery_tag = T}),
            deliveries(Rest, [Acks | Ack], N + 1);
        {ok, _HeaderOrBody, Rest} ->
            deliveries(Rest, Acks, N);
        more ->
            {Acks, N, Bin}
    end.

%%--------------------------------------------------------------------
%% Producer: beamlab's publishing rule (beamlab_amqp_producer:publish_or_wait/1)
%%--------------------------------------------------------------------

producer(Port, Q, Steps, Start, Counts) ->
    S = connect(Port),
    declare(S, Q),
    call(S, #'confirm.select'{}),
    Publish = #'basic.publish'{routing_key = Q, mandatory = true},
    own(S, fun() -> produce(#{sock => S, limiter => limiter(Steps, Start), counts => Counts,
                              publish => Publish, sent => 0, unconfirmed => 0,
                              confirmed => 0, buf => <<>>}) end).

%% beamlab's schedule (beamlab_amqp_rate), so both send the same messages
%% at the same moments.
limiter([{R, _}], Start) when R > 0 -> beamlab_amqp_rate:new(R, Start);
limiter(Steps, Start) -> beamlab_amqp_rate:new_variable(Steps, Start).

%% Publishes what is due, as far as the window allows, then waits: for a
%% confirm while the window is full (what is due then goes out as soon as
%% one frees a slot), else for a timer set to the next message's due time.
produce(#{limiter := L, sent := K, unconfirmed := Out} = St) ->
    Now = erlang:monotonic_time(microsecond),
    N = max(0, min(beamlab_amqp_rate:allowed(L, Now) - K, ?CONFIRM_WINDOW - Out)),
    N > 0 andalso publish(St, K, N, Now),
    St1 = St#{sent := K + N, unconfirmed := Out + N},
    case Out + N >= ?CONFIRM_WINDOW of
        true ->
            window_full(St1);
        false ->
            Us = beamlab_amqp_rate:due(L, K + N) - Now,
            Ref = erlang:start_timer(min((Us + 999) div 1000, 4294967295), self(), tick),
            tick(St1, Ref, Now + Us + beamlab_amqp_rate:timer_slack_us())
    end.

window_full(#{sock := S} = St) ->
    receive
        {tcp, S, Data} -> produce(confirms(Data, St));
        {tcp_passive, S} -> active(S), window_full(St);
        {timeout, _Stale, tick} -> window_full(St)
    end.

%% Everything due went out and the timer runs: confirms read meanwhile
%% only free slots, so what comes due until the timer goes out in one
%% write (#33: not a write per confirm read). A timer late beyond its
%% usual slack (a loaded machine) is waited for no longer.
tick(#{sock := S} = St, Ref, Late) ->
    receive
        {timeout, Ref, tick} ->
            produce(St);
        {tcp, S, Data} ->
            tick_or_late(confirms(Data, St), Ref, Late);
        {tcp_passive, S} ->
            active(S),
            tick_or_late(St, Ref, Late);
        {timeout, _Stale, tick} ->
            tick(St, Ref, Late)
    end.

tick_or_late(St, Ref, Late) ->
    case erlang:monotonic_time(microsecond) >= Late of
        true -> produce(St);
        false -> tick(St, Ref, Late)
    end.

%% Messages K..K+N-1 in writes of at most ?BATCH_MSGS, as beamlab's
%% batches.
publish(St, K, N, Now) when N > ?BATCH_MSGS ->
    publish(St, K, ?BATCH_MSGS, Now),
    publish(St, K + ?BATCH_MSGS, N - ?BATCH_MSGS, Now);
publish(#{sock := S, publish := Publish, counts := Counts}, K, N, Now) ->
    Frames = [beamlab_amqp_frame:encode_content(1, Publish, #{}, <<I:32, Now:64>>, ?FRAME_MAX)
              || I <- lists:seq(K, K + N - 1)],
    ok = gen_tcp:send(S, Frames),
    counters:add(Counts, 1, N).

%% The broker's basic.ack confirms (delivery tags count from 1, in order).
confirms(Data, #{buf := Buf} = St) ->
    confirm_frames(<<Buf/binary, Data/binary>>, St).

confirm_frames(Bin, #{confirmed := C, unconfirmed := Out} = St) ->
    case beamlab_amqp_frame:parse(Bin) of
        {ok, {method, _, <<60:16, 80:16, Tag:64, Multiple:8>>}, Rest} ->
            Acked = case Multiple of
                        1 -> Tag - C;
                        0 -> 1
                    end,
            confirm_frames(Rest, St#{confirmed := max(C, Tag), unconfirmed := Out - Acked});
        {ok, _Other, Rest} ->
            confirm_frames(Rest, St);
        more ->
            St#{buf := Bin}
    end.
