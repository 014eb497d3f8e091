%%% @doc One publishing channel of the load generator (PerfTest's "producer
%%% #i, channel #j").
%%%
%%% Publishes bodies stamped with their intended send time (see
%%% `beamlab_amqp_rate': a fixed rate, PerfTest's variable rate steps or a
%%% publishing interval), keeps at most `confirm' publishes unconfirmed
%%% when publisher confirms are on (failing after `confirm_timeout' without
%%% a free slot), measures confirm latency per sequence number and counts
%%% sent, returned, confirmed and nacked messages in the node's shared
%%% `counters'. Bodies are PerfTest's: the stamp and a sequence number
%%% padded to the size (fixed or varying over time), or files or JSON
%%% documents with the stamp in a header; properties, routing keys (fixed,
%%% random, or from a cache of random keys) and transactions as PerfTest
%%% sets them. A publish counts as sent once the connection's socket has
%%% accepted it. The producer's channel is direct: it writes its batches
%%% to the socket itself and counts them when the write returns (#33), so
%%% an unlimited producer is paced by TCP flow control and the broker's (a
%%% blocked connection, a busy queue) as PerfTest's blocking socket writes
%%% are. Over TLS the batches go through the connection process, which
%%% counts them after its write; the producer then keeps at most a few
%%% batches handed over but not yet written (it asks to be told of every
%%% `?NOTIFY_MSGS'-th publish's write), instead of queueing frames in the
%%% connection's mailbox and calling them sent.
%%%
%%% The messages due at one moment (a burst after the rate limiter's timer,
%%% or an unlimited producer's run until its confirm window fills) go to
%%% the connection as one batch of frames, so that they take one socket
%%% write: the frames on the wire are the same, one basic.publish each.
-module(beamlab_amqp_producer).

%% The per-message helpers of publish/3, inlined: each call is a
%% reduction, a dozen per message before (#33).
-compile({inline, [dec/1, next_key/1, late/2, head/3, message/3, body/3, commit/1, latency/2]}).
-behaviour(beamlab_amqp_worker).

-include("beamlab_amqp.hrl").
-include("beamlab_amqp_perf.hrl").

-export([start_link/2, body/3]).

%% Worker callbacks (beamlab_amqp_worker:start/3).
-export([open/2, run/3]).

%% Woken from hibernation (erlang:hibernate/3).
-export([sleeping/2]).

%% A write notice is asked for once this many publishes (or body bytes)
%% were handed to the connection since the last one asked for ...
-define(NOTIFY_MSGS, 64).
-define(NOTIFY_BYTES, 65536).
%% ... and the producer waits while this many notices are outstanding: at
%% most about WRITE_AHEAD * NOTIFY_MSGS publishes are ever unwritten.
-define(WRITE_AHEAD, 4).
%% A producer with nothing to do for at least this long (-P: one message
%% every few seconds) hibernates: its heap shrinks to what it holds, which
%% is most of the memory of an idle connection (#33).
-define(HIBERNATE_MS, 1000).
-define(SETTLE_MS, 5000).        % max wait for outstanding confirms at the end
-define(RETURN_GRACE_MS, 200).   % wait for late basic.return without confirms
-define(BATCH_MSGS, 64).         % publishes handed to the connection at most at once
-define(BATCH_BYTES, 65536).     % body bytes likewise

-record(st, {ctx :: beamlab_amqp_worker:ctx(),
             spec :: beamlab_amqp_worker:producer_spec(),
             conn :: beamlab_amqp:conn(),
             ch :: beamlab_amqp:channel(),
             %% `none': a rate of 0, nothing is published.
             limiter :: beamlab_amqp_rate:limiter() | none,
             seq = 1 :: pos_integer(),         % next confirm sequence number
             %% The stamps of the publishes not confirmed yet.
             outstanding = beamlab_amqp_window:new() :: beamlab_amqp_window:window(),
             %% When the confirm window filled (monotonic ms), for -ct.
             full_since :: integer() | undefined,
             left :: non_neg_integer() | infinity,
             n = 0 :: non_neg_integer(),       % messages published by us
             exchange :: binary(),
             key :: binary(),
             %% Random keys: a new one each time, or cycled from a cache.
             keys :: fixed | random | {tuple(), non_neg_integer()},
             opts :: beamlab_amqp:publish_opts(),
             %% stamp: the stamp in the body, padded by `pad' (one size) or
             %% to the size of `sizes' now (from `pads'); bodies: the
             %% stamp in a header.
             body :: stamp | {bodies, tuple(), files | json},
             pad :: binary(),
             sizes :: beamlab_amqp_cycle:cycle() | fixed,
             pads = #{} :: #{non_neg_integer() => binary()},
             tx_left :: non_neg_integer() | none,
             %% The body size of the last publish, its method and header
             %% frames and the header of its one body frame (none: several
             %% or none), kept while they cannot change (a fixed routing
             %% key, the stamp body: head/3), else `none'.
             head = none :: {non_neg_integer(), binary(), binary() | none} | none,
             %% Woken by our own timer for the next message (beamlab_amqp_rate:stamp/3).
             woke = false :: boolean(),
             %% The timer set for the next message due, while it runs
             %% (publish_or_wait/1), and when (monotonic µs) it is late
             %% beyond the timer's resolution; or none.
             tick = none :: {reference(), integer()} | none,
             %% Publishes not yet handed to the connection (newest first),
             %% their number and body bytes.
             out = [] :: [iodata()],
             out_n = 0 :: non_neg_integer(),
             out_bytes = 0 :: non_neg_integer(),
             %% Publishes and body bytes handed since the last write notice
             %% asked for; notices asked for and not yet received.
             unnoticed = 0 :: non_neg_integer(),
             unnoticed_bytes = 0 :: non_neg_integer(),
             unwritten = 0 :: non_neg_integer(),
             %% The channel's reads, when this process reads its socket
             %% itself (take/1), or none.
             reader = none :: beamlab_amqp:reader() | none}).

%% @doc Starts a producer for `Spec' with the agent's context (counters,
%% histograms, bodies, agent pid), shared under `CtxKey'. It sends
%% `{self(), ready}' to its parent once the channel is open (in confirm
%% or transaction mode when asked), then waits for `{go, StartUs}'.
-spec start_link(beamlab_runtime_shared:key(), beamlab_amqp_worker:producer_spec()) -> pid().
start_link(CtxKey, Spec) ->
    beamlab_amqp_worker:start(?MODULE, CtxKey, Spec).

%% @doc The message body: intended send time, sequence number, zero padding
%% up to `Size' bytes (at least 12). A large padding is not copied: the
%% body is then `[Stamp, Pad]', and every message refers to the one
%% padding the agent shares among its producers (#34).
-spec body(integer(), non_neg_integer(), binary()) -> binary() | [binary()].
body(IntendedUs, N, Pad) when byte_size(Pad) > ?AMQP_SHARED_BODY ->
    [<<IntendedUs:64/signed, N:32>>, Pad];
body(IntendedUs, N, Pad) ->
    <<IntendedUs:64/signed, N:32, Pad/binary>>.

%% @private
-spec run({ok, beamlab_amqp:conn(), beamlab_amqp:channel()}, beamlab_amqp_worker:ctx(),
          beamlab_amqp_worker:producer_spec()) -> no_return().
run({ok, Conn, Ch}, Ctx, Spec) ->
    #{body := BodyKind, size := Size} = Spec,
    Pads = maps:get(pads, Ctx),
    Body = case BodyKind of
               stamp -> stamp;
               Kind -> {bodies, maps:get(bodies, Ctx), Kind}
           end,
    St0 = #st{ctx = Ctx, spec = Spec, conn = Conn, ch = Ch,
              exchange = maps:get(exchange, Spec), key = maps:get(key, Spec),
              keys = keys(maps:get(keys, Spec)),
              opts = #{props => maps:get(props, Spec), mandatory => maps:get(mandatory, Spec)},
              body = Body,
              pad = case Size of
                        {fixed, S} -> maps:get(max(S, ?BODY_MIN), Pads);
                        _ -> <<>>
                    end,
              pads = Pads,
              left = case maps:get(count, Spec) of
                         0 -> infinity;
                         C -> C
                     end,
              tx_left = case maps:get(tx, Spec) of
                            0 -> none;
                            T -> T
                        end,
              limiter = none, sizes = fixed},
    receive
        {go, StartUs} ->
            Delay = maps:get(start_delay_ms, Spec),
            %% PerfTest's --producer-random-start-delay: the schedule
            %% starts when the producer does.
            case wait(Delay) of
                stop -> close(St0);
                ok ->
                    Start = StartUs + Delay * 1000,
                    loop((take(St0))#st{limiter = limiter(maps:get(schedule, Spec), Start),
                                sizes = case Size of
                                            {fixed, _} -> fixed;
                                            {variable, Steps} -> beamlab_amqp_cycle:new(Steps, StartUs)
                                        end})
            end
    end.

limiter({rate, 0}, _Start) -> none;
limiter({rate, R}, Start) -> beamlab_amqp_rate:new(R, Start);
limiter({variable, Steps}, Start) -> beamlab_amqp_rate:new_variable(Steps, Start).

keys(fixed) -> fixed;
keys(random) -> random;
keys({cache, N}) -> {list_to_tuple([random_key() || _ <- lists:seq(1, N)]), 0}.

%% Waits `Ms' unless told to stop (the stop is kept for the main loop).
wait(0) ->
    ok;
wait(Ms) ->
    receive
        stop -> stop
    after Ms ->
        ok
    end.

%% @private
-spec open(beamlab_amqp_worker:ctx(), beamlab_amqp_worker:producer_spec()) ->
          {ok, beamlab_amqp:conn(), beamlab_amqp:channel()} | {error, beamlab_amqp:reason()}.
open(Ctx, Spec) ->
    maybe_open(beamlab_amqp_worker:connection(Ctx, Spec), Spec).

maybe_open({ok, Conn}, Spec) ->
    %% Direct: the producer writes its batches to the socket itself (#33).
    case beamlab_amqp:open_channel(Conn, #{direct => true}) of
        {ok, Ch} ->
            Modes = [fun beamlab_amqp:confirm_select/1 || maps:get(confirm, Spec) =/= undefined]
                ++ [fun beamlab_amqp:tx_select/1 || maps:get(tx, Spec) > 0],
            case select(Ch, Modes) of
                ok -> {ok, Conn, Ch};
                {error, _} = E ->
                    %% The next channel may reuse this one's handle.
                    receive {amqp_closed, Ch, _, _} -> E after 0 -> E end
            end;
        {error, _} = E ->
            E
    end;
maybe_open({error, _} = E, _Spec) ->
    E.

select(_Ch, []) -> ok;
select(Ch, [Mode | Rest]) ->
    case Mode(Ch) of
        ok -> select(Ch, Rest);
        {error, _} = E -> E
    end.

%% A producer that makes no synchronous call while it runs (no -m) reads
%% its socket itself when its channel is the only one of its connection
%% (PerfTest's default, a connection per producer): its confirms and
%% returns come without a hop through the connection process per burst
%% (#33). The reads go back before the channel's close.
take(#st{reader = none, ch = Ch, spec = #{tx := 0}} = St) ->
    St#st{reader = beamlab_amqp_worker:take_reads(Ch, St#st.ctx)};
take(St) ->
    St.

%% The main loop: handle what arrived, then publish if the window, the
%% schedule and the message count allow.
loop(St) ->
    loop(St, none).

%% After a publish at a rate, `Now' is the time read before it: the
%% messages due by then go out stamped by it, one clock read per batch
%% rather than per message (#33); each stamp is still between its intended
%% time and its write. Once they are out the clock is read again, so what
%% came due meanwhile and the timer for the next are as with a read per
%% message.
loop(St, Now) ->
    receive
        Msg -> loop(handle(Msg, St))
    after 0 ->
        publish_or_wait(St, Now)
    end.

publish_or_wait(St) ->
    publish_or_wait(St, none).

publish_or_wait(#st{left = 0} = St, _) ->
    finish(St);
publish_or_wait(#st{limiter = none} = St, _) ->
    receive Msg -> loop(handle(Msg, St)) end;
publish_or_wait(#st{spec = #{confirm := Max}, outstanding = Out} = St, Now)
  when is_integer(Max) ->
    case beamlab_amqp_window:size(Out) >= Max of
        true ->
            %% Held by the window, not the timer: what is due goes out as
            %% soon as a confirm frees a slot (the tick, should it come, is
            %% ignored).
            window_full(flush(St, none, false));
        false ->
            room(St, Now)
    end;
publish_or_wait(St, Now) ->
    room(St, Now).

%% The window has room (or there is none).
room(#st{unwritten = U} = St, _) when U >= ?WRITE_AHEAD ->
    %% The socket has not taken what we handed over: wait for it (or a
    %% stop, a closed channel) rather than queue more.
    St1 = flush(St, none, false),
    receive Msg -> loop(handle(Msg, St1)) end;
room(#st{tick = {_, Late}} = St, _) ->
    %% Everything due was published and the timer is set for the next:
    %% a read (confirms) that wakes us before it publishes nothing, so
    %% what comes due until the timer goes out together, in one write (as
    %% the floor client's tick, bench/amqp_floor.erl: #33, a write and
    %% the broker's deliveries and confirms per message at low rates).
    %% A timer late beyond its resolution (a loaded machine) waits no more:
    %% what came due meanwhile is published as woken by the timer, as it
    %% would be had the timer's message come first (stamp/3 takes off the
    %% same resolution either way; before, this path counted it all).
    case beamlab_amqp_rate:woken(?NOW_US(), Late) of
        true -> publish_or_wait(St#st{tick = none, woke = true});
        false -> receive Msg -> loop(handle(Msg, St)) end
    end;
room(#st{limiter = L} = St, Now0) ->
    Now = case Now0 of
              none -> ?NOW_US();
              _ -> Now0
          end,
    case beamlab_amqp_rate:next(L, Now, St#st.woke) of
        {go, Intended, Stamp, L1} ->
            %% Every message of a batch after the timer came due while we
            %% slept (or is late beyond the slack stamp/3 takes off).
            late(Now - Intended, St),
            case St#st.spec of
                %% Unlimited: each publish's intended time is its own now.
                #{schedule := {rate, infinity}} -> loop(publish(Stamp, L1, St));
                _ -> burst(publish(Stamp, L1, St), Now)
            end;
        {wait, _} when Now0 =/= none ->
            %% Caught up with the time the batch began: the time now.
            publish_or_wait(St, none);
        {wait, Us} when Us >= ?HIBERNATE_MS * 1000 ->
            St1 = flush(St, St#st.tick, false),
            Ref = erlang:start_timer(min((Us + 999) div 1000, 4294967295), self(), wake),
            erlang:hibernate(?MODULE, sleeping, [St1, Ref]);
        {wait, Us} ->
            Ref = erlang:start_timer(min((Us + 999) div 1000, 4294967295), self(), tick),
            Late = Now + Us + beamlab_amqp_rate:timer_slack_us(),
            St2 = flush(St, {Ref, Late}, false),
            case St2#st.unwritten < ?WRITE_AHEAD of
                %% The timer just set is not late (the clause for a tick
                %% would read the clock to find so): wait for it (#33).
                true -> receive Msg -> loop(handle(Msg, St2)) end;
                false -> publish_or_wait(St2)
            end
    end.

%% @private
%% Hibernated until the next message is due (timer `Ref') or a message
%% comes (the timer is then cancelled: the main loop sets it again).
-spec sleeping(#st{}, reference()) -> no_return().
sleeping(St, Ref) ->
    receive
        {timeout, Ref, wake} ->
            loop(St#st{woke = true});
        Msg ->
            _ = erlang:cancel_timer(Ref, [{async, true}, {info, false}]),
            loop(handle(Msg, St))
    end.

%% -P: a publish more than one interval behind its schedule is late.
late(By, #st{spec = #{late_us := Max}, ctx = #{counters := C}}) when is_integer(Max), By > Max ->
    counters:add(C, ?C_LATE, 1);
late(_, _) ->
    ok.

%% late/2 for a burst's publishes (the limiter `L' then `L1') at `Now'.
late(L, L1, Now, #st{spec = #{late_us := Max}, ctx = #{counters := C}}) when is_integer(Max) ->
    case beamlab_amqp_rate:late(L, L1, Now, Max) of
        0 -> ok;
        Late -> counters:add(C, ?C_LATE, Late)
    end;
late(_L, _L1, _Now, _St) ->
    ok.

%% The window is full: wait for a confirm, at most -ct seconds in all
%% (PerfTest's confirm timeout: a broker that stopped confirming fails
%% the run instead of holding it).
window_full(#st{full_since = undefined} = St) ->
    window_full(St#st{full_since = erlang:monotonic_time(millisecond)});
window_full(#st{full_since = Since, spec = #{confirm_timeout := Secs}} = St) ->
    Left = Since + Secs * 1000 - erlang:monotonic_time(millisecond),
    receive
        Msg -> loop(handle(Msg, St))
    after max(0, Left) ->
        %% The socket would close with this process.
        _ = beamlab_amqp:give_back_reads(St#st.reader),
        exit({shutdown, {confirm_timeout, Secs}})
    end.

%% Publishes the message due at `Intended' (the limiter then `L1'): its
%% frames join the batch (a full batch goes to the connection), and with
%% confirms it enters the window. The state is updated once per message
%% (#33: each update copies the record).
publish(Intended, L1, #st{ch = Ch, n = N, left = Left, seq = Seq,
                          outstanding = Window, out = Out, out_n = K, out_bytes = B,
                          ctx = #{clock_offset := Off}} = St) ->
    %% The body carries the coordinator's time (see the agent's clock_offset).
    Stamp = Intended - Off,
    {Body, Opts} = message(Stamp, N, St),
    Size = if is_binary(Body) -> byte_size(Body); true -> iolist_size(Body) end,
    Head = head(Size, Opts, St),
    Frames = case Head of
                 {_, H, none} -> [H | beamlab_amqp:publish_body(Ch, Body)];
                 %% What publish_body/2 gives, without its three calls (#33).
                 {_, H, BodyHead} -> [H, BodyHead, Body, ?AMQP_FRAME_END]
             end,
    B1 = B + Size,
    {Seq1, Window1} = case maps:get(confirm, St#st.spec) of
                          undefined -> {Seq, Window};
                          _ -> {Seq + 1, beamlab_amqp_window:add(Window, Seq, Intended)}
                      end,
    St1 = St#st{limiter = L1, full_since = undefined, head = Head,
                n = N + 1, left = dec(Left), keys = next_key(St#st.keys),
                seq = Seq1, outstanding = Window1,
                out = [Frames | Out], out_n = K + 1, out_bytes = B1},
    case K + 1 < ?BATCH_MSGS andalso B1 < ?BATCH_BYTES of
        true -> commit(St1);
        false -> commit(flush(St1))
    end.

%% The rest of a burst at a rate: after publish/3 sent its first message,
%% the messages due by `Now' that fit go out together, taken from the
%% schedule in one call (their stamps as runs: beamlab_amqp_rate:take/4),
%% entered in the window a run at a time and the record updated once
%% (#33: the main loop's turn, a limiter, a window and a record per
%% message were most of the producer's own work). The same messages,
%% stamps, frames, window and batches as publish/3 one by one: the burst
%% ends when nothing more is due, the window or the message count is
%% full, or the batch is (it then goes to the connection, as publish/3
%% would send it); what arrives meanwhile (confirms, a stop) is handled
%% after it. Only for stamp bodies of one size with one routing key and
%% no transactions, whose frames head/3 keeps; anything else goes on
%% message by message.
burst(#st{out_n = K, head = {Size, H, BH}, keys = fixed, body = stamp, sizes = fixed,
          tx_left = none, limiter = L, left = Left, seq = Seq, outstanding = W, out = Out,
          out_bytes = B, n = N, pad = Pad, woke = Woke, spec = #{confirm := Max},
          ctx = #{clock_offset := Off}} = St, Now)
  when K > 0, BH =/= none ->
    Room = case Max of
               undefined -> ?BATCH_MSGS;   % no window: the batch bounds the burst
               _ -> Max - beamlab_amqp_window:size(W)
           end,
    %% Messages until the batch is full: the one that fills it is the last.
    Batch = min(?BATCH_MSGS - K, (?BATCH_BYTES - B + Size - 1) div Size),
    Fit = min(min(Room, Batch), Left),   % an integer: below `infinity'
    case Fit > 0 andalso beamlab_amqp_rate:take(L, Now, Woke, Fit) of
        false ->
            loop(St, Now);
        {[], _} ->
            %% Nothing more due by `Now': after the mailbox, the clock is
            %% read again (not the same answer asked for at `Now' first).
            loop(St, none);
        {Runs, L1} ->
            late(L, L1, Now, St),
            {Seq1, W1} = case Max of
                             undefined -> {Seq, W};
                             _ -> beamlab_amqp_window:add_runs(W, Seq, Runs)
                         end,
            {N1, Out1} = frames(Runs, Off, Pad, H, BH, N, Out),
            M = N1 - N,
            St1 = St#st{limiter = L1, left = sub(Left, M), seq = Seq1, outstanding = W1,
                        out = Out1, out_n = K + M, out_bytes = B + M * Size, n = N1},
            case M < Fit of
                true -> loop(St1, none);
                false when M =:= Batch -> loop(flush(St1), Now);
                false -> loop(St1, Now)
            end
    end;
burst(St, Now) ->
    loop(St, Now).

%% A burst's frames, newest first on `Out', and the next message number.
frames([{Stamp, C} | Runs], Off, Pad, H, BH, N, Out) ->
    frames(Runs, Off, Pad, H, BH, N + C, run_frames(C, Stamp - Off, Pad, H, BH, N, Out));
frames([], _Off, _Pad, _H, _BH, N, Out) ->
    {N, Out}.

run_frames(0, _Stamp, _Pad, _H, _BH, _N, Out) ->
    Out;
run_frames(C, Stamp, Pad, H, BH, N, Out) ->
    run_frames(C - 1, Stamp, Pad, H, BH, N + 1,
               [[H, BH, body(Stamp, N band 16#FFFFFFFF, Pad), ?AMQP_FRAME_END] | Out]).

%% Hands the batch to the connection: before anything that waits, so that
%% a batch never waits with the producer. The connection counts it as
%% sent once written, and tells us so when a notice is due.
flush(#st{out = []} = St) ->
    St;
flush(St) ->
    flush(St, St#st.tick, St#st.woke).

%% flush/1, and the timer's fields set to `Tick' and `Woke' in the same
%% update: each update copies the whole record (#33: several per timer
%% tick were most of the producer's garbage).
flush(#st{out = []} = St, Tick, Woke) ->
    St#st{tick = Tick, woke = Woke};
flush(#st{out = Out, out_n = K, out_bytes = B, ch = Ch, ctx = #{counters := C},
          unnoticed = UN, unnoticed_bytes = UB, unwritten = UW} = St, Tick, Woke) ->
    case UN + K >= ?NOTIFY_MSGS orelse UB + B >= ?NOTIFY_BYTES of
        true ->
            ok = beamlab_amqp:send(Ch, lists:reverse(Out), {C, ?C_SENT, K, notify}),
            St#st{out = [], out_n = 0, out_bytes = 0, unnoticed = 0, unnoticed_bytes = 0,
                  unwritten = UW + 1, tick = Tick, woke = Woke};
        false ->
            ok = beamlab_amqp:send(Ch, lists:reverse(Out), {C, ?C_SENT, K, silent}),
            St#st{out = [], out_n = 0, out_bytes = 0, unnoticed = UN + K, unnoticed_bytes = UB + B,
                  tick = Tick, woke = Woke}
    end.

%% The method and header frames of a publish of `Size' body bytes and
%% the header of its one body frame, built once while the exchange, key,
%% properties and size stay the same (#33: the encoding of the properties
%% was most of a publish's own work).
head(Size, _Opts, #st{head = {Size, _, _} = Head, keys = fixed, body = stamp}) ->
    Head;
head(Size, Opts, #st{ch = Ch, exchange = Ex} = St) ->
    {Size, beamlab_amqp:publish_head(Ch, Ex, key(St), Size, Opts), beamlab_amqp:publish_body_head(Ch, Size)}.

%% PerfTest's bodies: the stamp and sequence number padded to the size,
%% or (files, JSON) a prepared body with the stamp in a header.
message(Stamp, N, #st{body = stamp, sizes = fixed, pad = Pad, opts = Opts}) ->
    {body(Stamp, N band 16#FFFFFFFF, Pad), Opts};
message(Stamp, N, #st{body = stamp, sizes = Sizes, pads = Pads, opts = Opts}) ->
    Size = max(?BODY_MIN, beamlab_amqp_cycle:value(Sizes, ?NOW_US())),
    {body(Stamp, N band 16#FFFFFFFF, maps:get(Size, Pads)), Opts};
message(Stamp, N, #st{body = {bodies, Bodies, Kind}, opts = #{props := Props} = Opts}) ->
    Body = case Kind of
               files -> element(N rem tuple_size(Bodies) + 1, Bodies);
               json -> element(rand:uniform(tuple_size(Bodies)), Bodies)
           end,
    Headers = [{?STAMP_HEADER, long, Stamp} | maps:get(headers, Props, [])],
    {Body, Opts#{props := Props#{headers => Headers}}}.

key(#st{keys = fixed, key = K}) -> K;
key(#st{keys = random}) -> random_key();
key(#st{keys = {Cache, I}}) -> element(I + 1, Cache).

next_key({Cache, I}) -> {Cache, (I + 1) rem tuple_size(Cache)};
next_key(Keys) -> Keys.

%% A random UUID (version 4) as text, as PerfTest's random routing keys.
random_key() ->
    <<A:32, B:16, _:4, C:12, _:2, D:14, E:48>> = rand:bytes(16),
    iolist_to_binary(io_lib:format("~8.16.0b-~4.16.0b-4~3.16.0b-~4.16.0b-~12.16.0b",
                                   [A, B, C, 16#8000 bor D, E])).

%% -m: commit every N publishes (a synchronous call, as PerfTest's).
commit(#st{tx_left = none} = St) ->
    St;
commit(#st{tx_left = 1, ch = Ch, spec = #{tx := N}} = St0) ->
    St = flush(St0),
    case beamlab_amqp:commit(Ch) of
        ok -> St#st{tx_left = N};
        {lost, Code, Text} -> connection_lost(Code, Text, St);
        {error, R} -> exit({shutdown, R})
    end;
commit(#st{tx_left = L} = St) ->
    St#st{tx_left = L - 1}.

dec(infinity) -> infinity;
dec(N) -> N - 1.

sub(infinity, _M) -> infinity;
sub(N, M) -> N - M.

handle(Msg, #st{reader = R} = St) when R =/= none ->
    case beamlab_amqp:reads(Msg, R) of
        %% Most reads end on a frame's end: the reader is the same term,
        %% no copy of the record for it.
        {ok, Msgs, R} -> handle_read(Msgs, St);
        {ok, Msgs, R1} -> handle_read(Msgs, St#st{reader = R1});
        ignore -> handle_msg(Msg, St)
    end;
handle(Msg, St) ->
    handle_msg(Msg, St).

handle_msg({amqp_confirm, Ch, Kind, Seq, Multiple}, #st{ch = Ch} = St) ->
    confirm(Kind, Seq, Multiple, St);
handle_msg({timeout, Ref, tick}, #st{tick = {Ref, _}} = St) ->
    St#st{tick = none, woke = true};
handle_msg({amqp_written, Ch}, #st{ch = Ch, unwritten = U} = St) ->
    St#st{unwritten = max(0, U - 1)};
handle_msg({amqp_return, Ch, _Code, _Text, _Ex, _Key, _Props, _Body},
           #st{ch = Ch, ctx = #{counters := C}} = St) ->
    counters:add(C, ?C_RETURNED, 1),
    St;
handle_msg({amqp_closed, Ch, Code, Text}, #st{ch = Ch} = St) ->
    %% The connection closed the socket (or has the reads back).
    connection_lost(Code, Text, St#st{reader = none});
handle_msg(stop, St) ->
    finish(St);
handle_msg(_Other, St) ->
    St.

%% The messages of one read: its confirms are settled together (#33),
%% acks and nacks apart, with one receive time (they arrived together):
%% one update of the counters and of the histogram's sum and extremes
%% per read instead of per confirm.
handle_read(Msgs, St) ->
    handle_read(Msgs, St, ?NOW_US(), [], []).

%% A read's messages are all the channel's: its handle is not compared
%% (a deep compare per confirm, #33).
handle_read([{amqp_confirm, _Ch, Kind, Seq, Multiple} | Rest], St, Now, Acks, Nacks) ->
    case Kind of
        ack ->
            {Acks1, St1} = confirmed(Seq, Multiple, Now, St, Acks),
            handle_read(Rest, St1, Now, Acks1, Nacks);
        nack ->
            {Nacks1, St1} = confirmed(Seq, Multiple, Now, St, Nacks),
            handle_read(Rest, St1, Now, Acks, Nacks1)
    end;
handle_read([Msg | Rest], St, Now, Acks, Nacks) ->
    handle_read(Rest, handle_msg(Msg, St), Now, Acks, Nacks);
handle_read([], St, _Now, Acks, Nacks) ->
    settle(nack, Nacks, settle(ack, Acks, St)).

confirm(Kind, Seq, Multiple, St) ->
    {Ls, St1} = confirmed(Seq, Multiple, ?NOW_US(), St, []),
    settle(Kind, Ls, St1).

%% The latencies at `Now' of the publishes a confirm settles (taken out
%% of the window), each with the number of publishes that had it (a run
%% of the window), added to `Acc'.
confirmed(Seq, false, Now, #st{outstanding = Out} = St, Acc) ->
    case beamlab_amqp_window:take(Out, Seq) of
        {Stamp, Out1} -> {[{latency(Now, Stamp), 1} | Acc], St#st{outstanding = Out1}};
        error -> {Acc, St}
    end;
confirmed(Seq, true, Now, #st{outstanding = Out} = St, Acc) ->
    {Runs, Out1} = beamlab_amqp_window:take_upto(Out, Seq),
    {latencies(Runs, Now, Acc), St#st{outstanding = Out1}}.

latencies([{Stamp, K} | Runs], Now, Acc) ->
    latencies(Runs, Now, [{latency(Now, Stamp), K} | Acc]);
latencies([], _Now, Acc) ->
    Acc.

%% max(0, Now - Intended) without a call of erlang:max/2 (OTP 25).
latency(Now, Intended) when Intended < Now -> Now - Intended;
latency(_Now, _Intended) -> 0.

settle(_Kind, [], St) ->
    St;
settle(Kind, Ls, #st{ctx = #{counters := C, conf_hists := Hs}} = St) ->
    counters:add(C, case Kind of ack -> ?C_CONFIRMED; nack -> ?C_NACKED end, settled(Ls, 0)),
    beamlab_stats_hist:record_counts(Hs, Ls),
    %% A settled confirm ends a full window's wait; the state is copied
    %% only when one was waiting (a record update copies every field: #33).
    case St#st.full_since of
        undefined -> St;
        _ -> St#st{full_since = undefined}
    end.

settled([{_, K} | Ls], N) -> settled(Ls, N + K);
settled([], N) -> N.

connection_lost(_Code, _Text, #st{spec = #{reconnect := true} = Spec, ctx = Ctx} = St) ->
    %% Fate of unconfirmed publishes is unknown after a reconnect: drop them
    %% from the window; the accounting shows them as unaccounted.
    %% The batch was for the lost channel: its fate is that of the window.
    {ok, Conn, Ch} = beamlab_amqp_worker:reopen(fun() -> open(Ctx, Spec) end, Spec),
    take(St#st{conn = Conn, ch = Ch, seq = 1, outstanding = beamlab_amqp_window:new(), full_since = undefined,
               out = [], out_n = 0, out_bytes = 0, unnoticed = 0, unnoticed_bytes = 0, unwritten = 0,
               head = none,
               tx_left = case maps:get(tx, Spec) of 0 -> none; T -> T end, reader = none});
connection_lost(Code, Text, _St) ->
    beamlab_amqp_worker:connection_lost(Code, Text).

%% Stop publishing; wait (bounded) for outstanding confirms and late returns
%% so that the counts are final, then close the channel (what an open
%% transaction holds is rolled back with it: PerfTest does not commit at
%% the end either).
-spec finish(#st{}) -> no_return().
finish(#st{out = [_ | _]} = St) ->
    finish(flush(St));
finish(#st{spec = #{confirm := undefined}} = St) ->
    Deadline = erlang:monotonic_time(millisecond) + ?RETURN_GRACE_MS,
    St1 = drain(St, Deadline),
    close(St1);
finish(St) ->
    Deadline = erlang:monotonic_time(millisecond) + ?SETTLE_MS,
    close(settle_all(St, Deadline)).

settle_all(#st{outstanding = Out} = St, Deadline) ->
    case beamlab_amqp_window:size(Out) of
        0 -> St;
        _ -> next_until(St, Deadline, fun settle_all/2)
    end.

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
close(#st{ch = Ch, reader = R}) ->
    _ = beamlab_amqp:give_back_reads(R),
    _ = catch beamlab_amqp:close_channel(Ch, #{timeout => ?CLOSE_MS}),
    exit(normal).
