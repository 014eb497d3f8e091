%%% @doc One consuming channel of the load generator (PerfTest's "consumer
%%% #i, channel #j").
%%%
%%% Consumes a queue (basic.consume, or basic.get with `--polling') with
%%% the given prefetch, acknowledges every message, every Nth message with
%%% `multiple' (multi-ack), or not at all (autoack), or nacks them
%%% (`--nack', requeued or not), in transactions when asked, and records
%%% consumer latency: receive time minus the intended send time the
%%% producer wrote into the body (or a header). As PerfTest it can simulate
%%% work per message (`-L', `--variable-latency'), limit its rate (`-R'),
%%% start late (`--slow-start', `--consumer-start-delay') and end by itself
%%% when its queue is empty or it is idle (`--exit-when'). On stop it
%%% acknowledges what it has counted before closing the channel, so a
%%% message is either counted as received or left in the queue, never both.
-module(beamlab_amqp_consumer).

%% Per-delivery helpers inlined: each call is a reduction (#33).
-compile({inline, [dec/1, stamp/3, latency/2, last_activity/1]}).
-behaviour(beamlab_amqp_worker).

-include("beamlab_amqp.hrl").
-include("beamlab_amqp_perf.hrl").

-export([start_link/2]).

%% Worker callbacks (beamlab_amqp_worker:start/3).
-export([open/2, run/3]).

%% --exit-when: first check 2 s after the start, then every second; idle
%% means no delivery for more than a second (PerfTest's timings).
-define(EXIT_CHECK_FIRST_MS, 2000).
-define(EXIT_CHECK_MS, 1000).
-define(IDLE_MS, 1000).
%% A busy wait for simulated work shorter than this, a sleep above (as
%% PerfTest: below a millisecond sleeping is too coarse).
-define(SLEEP_MIN_US, 1000).
%% Each consumer has a channel of its own: one fixed tag serves them all.
-define(TAG, <<"beamlab">>).
%% The bytes of each delivered body the consumer keeps: the producer's
%% stamp (64 bits at its start) is all it reads; the rest of a body (up
%% to 512 MiB) is received and dropped frame by frame, never assembled.
-define(KEEP, 8).
%% Acks handed to the connection at most at once (see loop/1).
-define(SETTLE_BATCH, 32).

-record(st, {ctx :: beamlab_amqp_worker:ctx(),
             spec :: beamlab_amqp_worker:consumer_spec(),
             ch :: beamlab_amqp:channel(),
             left :: non_neg_integer() | infinity,
             unacked = 0 :: non_neg_integer(),
             last_tag = 0 :: non_neg_integer(),
             tx_left :: non_neg_integer() | none,
             latency :: beamlab_amqp_cycle:cycle() | none,
             %% -R: when the next message may be handled (µs), or none.
             next_at :: integer() | none,
             last_activity :: integer() | undefined,   % ms, --exit-when
             subscribed = false :: boolean(),
             %% Acks/nacks not yet handed to the connection (newest
             %% first) and their number.
             settles = [] :: [binary()],
             settles_n = 0 :: non_neg_integer(),
             %% The channel's reads, when this process reads its socket
             %% itself (take/1), or none.
             reader = none :: beamlab_amqp:reader() | none}).

%% @doc Starts a consumer for `Spec'. It sends `{self(), ready}' to its
%% parent once the broker confirmed the subscription (basic.consume-ok),
%% so no message published afterwards is missed, or `{self(), {error, R}}'.
%% A consumer that starts late (slow start, start delay) or polls is ready
%% once its channel is open, and subscribes or polls when its time comes.
-spec start_link(beamlab_runtime_shared:key(), beamlab_amqp_worker:consumer_spec()) -> pid().
start_link(CtxKey, Spec) ->
    beamlab_amqp_worker:start(?MODULE, CtxKey, Spec).

%% @private
-spec open(beamlab_amqp_worker:ctx(), beamlab_amqp_worker:consumer_spec()) ->
          {ok, beamlab_amqp:channel()} | {error, beamlab_amqp:reason()}.
open(Ctx, Spec) ->
    case beamlab_amqp_worker:connection(Ctx, Spec) of
        {ok, Conn} ->
            %% Direct: the consumer writes its acks to the socket itself (#33).
            with_channel(beamlab_amqp:open_channel(Conn, #{direct => true}), Spec);
        {error, _} = E ->
            E
    end.

%% @private
-spec run({ok, beamlab_amqp:channel()}, beamlab_amqp_worker:ctx(),
          beamlab_amqp_worker:consumer_spec()) -> no_return().
run({ok, Ch}, Ctx, Spec) ->
    St = #st{ctx = Ctx, spec = Spec, ch = Ch,
             left = case maps:get(count, Spec) of
                        0 -> infinity;
                        C -> C
                    end,
             tx_left = tx(Spec), latency = none, next_at = none,
             subscribed = subscribes_at_once(Spec)},
    receive
        {go, StartUs} ->
            St1 = St#st{latency = case maps:get(latency, Spec) of
                                      {fixed, 0} -> none;
                                      {fixed, Us} -> beamlab_amqp_cycle:fixed(Us);
                                      {variable, Steps} -> beamlab_amqp_cycle:new(Steps, StartUs)
                                  end},
            _ = case maps:get(exit_when, Spec) of
                    never -> ok;
                    _ -> erlang:send_after(?EXIT_CHECK_FIRST_MS + maps:get(start_delay_ms, Spec),
                                           self(), exit_check)
                end,
            start(St1);
        stop ->
            finish(St)
    end.

tx(#{tx := 0}) -> none;
tx(#{tx := N}) -> N.

subscribes_at_once(#{start_delay_ms := 0, polling := false}) -> true;
subscribes_at_once(_) -> false.

%% A late consumer subscribes (or polls) when its delay is over.
start(#st{spec = #{start_delay_ms := 0, polling := false}} = St) ->
    loop(take(St));
start(#st{spec = #{start_delay_ms := Delay}} = St) ->
    receive
        stop -> finish(St)
    after Delay ->
        case subscribe(St) of
            {ok, St1} -> loop(take(St1));
            {error, R} -> exit({shutdown, R})
        end
    end.

subscribe(#st{spec = #{polling := {true, _}}} = St) ->
    self() ! poll,
    {ok, St#st{subscribed = true}};
subscribe(#st{ch = Ch, spec = Spec} = St) ->
    case consume(Ch, Spec) of
        ok -> {ok, St#st{subscribed = true}};
        {error, _} = E -> E
    end.

with_channel({ok, Ch}, Spec) ->
    Steps = [fun() -> exclusive(Ch, Spec) end,
             fun() -> qos(Ch, maps:get(prefetch, Spec), false) end,
             fun() -> qos(Ch, maps:get(global_qos, Spec), true) end,
             fun() -> case tx(Spec) of none -> ok; _ -> beamlab_amqp:tx_select(Ch) end end]
        ++ [fun() -> consume(Ch, Spec) end || subscribes_at_once(Spec)],
    case run_steps(Steps) of
        ok -> {ok, Ch};
        {error, _} = E -> quiet(Ch, E)
    end;
with_channel({error, _} = E, _Spec) ->
    E.

run_steps([]) -> ok;
run_steps([F | Rest]) ->
    case F() of
        ok -> run_steps(Rest);
        {error, _} = E -> E
    end.

%% --exclusive: the queue is declared (and bound) on this connection.
exclusive(Ch, #{exclusive := #{} = QSpec, queue := Q}) ->
    case beamlab_amqp_topology:declare_exclusive(Ch, Q, QSpec) of
        ok -> ok;
        {error, {_, _, R}} -> {error, R}
    end;
exclusive(_Ch, _Spec) ->
    ok.

qos(_Ch, 0, _Global) -> ok;
qos(Ch, N, Global) -> beamlab_amqp:qos(Ch, #{prefetch_count => N, global => Global}).

consume(Ch, Spec) ->
    case beamlab_amqp:consume(Ch, maps:get(queue, Spec),
                              #{no_ack => maps:get(autoack, Spec), arguments => maps:get(args, Spec),
                                consumer_tag => ?TAG, keep => ?KEEP}) of
        {ok, _Tag} -> ok;
        {error, _} = E -> E
    end.

%% A refused method (consume of a queue that does not exist yet, while the
%% run declares it again after a broker restart) closes the channel and
%% leaves its `amqp_closed' notice here. The next channel may get the same
%% number, hence the same handle: the stale notice must not be taken for
%% the loss of that one.
quiet(Ch, E) ->
    receive {amqp_closed, Ch, _, _} -> E
    after 0 -> E
    end.

%% A subscribed consumer that makes no synchronous call while it runs
%% (none of -n, --polling, --exit-when empty) reads its socket itself
%% when its channel is the only one of its connection (PerfTest's
%% default, a connection per consumer): no hop through the connection
%% process per burst of deliveries (#33). The reads go back before the
%% calls of its end.
take(#st{reader = none, subscribed = true, ch = Ch,
         spec = #{tx := 0, polling := false, exit_when := When}} = St) when When =/= empty ->
    St#st{reader = beamlab_amqp_worker:take_reads(Ch, St#st.ctx)};
take(St) ->
    St.

%% While deliveries are waiting, their acks are gathered and handed to
%% the connection together once the mailbox is empty (or SETTLE_BATCH of
%% them), so that they take one socket write: the same frames, one
%% basic.ack per message as PerfTest sends, never held while we wait.
loop(#st{left = 0} = St) ->
    finish(St);
loop(#st{settles = []} = St) ->
    receive Msg -> loop(handle(Msg, St)) end;
loop(St) ->
    receive
        Msg -> loop(handle(Msg, St))
    after 0 ->
        loop(flush(St))
    end.

handle(Msg, #st{reader = R} = St) when R =/= none ->
    case beamlab_amqp:reads(Msg, R) of
        %% Most reads end on a frame's end: the reader is the same term,
        %% no copy of the record for it (#33).
        {ok, Msgs, R} -> handle_read(Msgs, St);
        {ok, Msgs, R1} -> handle_read(Msgs, St#st{reader = R1});
        ignore -> handle_msg(Msg, St)
    end;
handle(Msg, St) ->
    handle_msg(Msg, St).

%% The deliveries of one read, as if each had come as a message: those
%% after the last one the consumer is to take (-C) wait in the mailbox,
%% as they would have. A consumer that neither simulates work nor limits
%% its rate (nothing makes it wait between two deliveries) records them
%% together (#33): they arrived together, so they share one receive time,
%% and the read costs one histogram update of the sum and extremes and
%% one add to the received count instead of one per message.
handle_read(Msgs, #st{latency = none, spec = #{rate := infinity, stamp := Where},
                      ctx = #{counters := C, cons_hists := Hs} = Ctx} = St) ->
    %% Received now, in the coordinator's time (see the agent's clock_offset).
    Now = ?NOW_US() - maps:get(clock_offset, Ctx, 0),
    {St1, Ls, N} = case St of
                       #st{spec = #{autoack := false, nack := false, multi_ack := M}, tx_left = none}
                         when M =< 1 ->
                           read_acks(Msgs, Where, Now, St, St#st.left, St#st.settles,
                                     St#st.settles_n, St#st.last_tag, [], 0);
                       _ ->
                           read_batch(Msgs, Where, Now, St, [], 0)
                   end,
    beamlab_stats_hist:record_list(Hs, Ls),
    _ = N > 0 andalso counters:add(C, ?C_RECEIVED, N),
    St1;
handle_read(Msgs, St) ->
    read_each(Msgs, St).

read_each([Msg | Rest], #st{left = L} = St) when L =/= 0 ->
    read_each(Rest, handle_msg(Msg, St));
read_each(Rest, St) ->
    requeue(Rest, St).

%% The deliveries of a read counted and acked as deliver/5 does, their
%% latencies and number returned to be recorded at once; any other
%% message of the read is handled as it comes.
%% A read's messages are all its channel's (the reader's handle, a copy
%% of the state's `ch'): the handle is not compared, a deep compare per
%% delivery (#33: `eq' in the VM's profile).
read_batch([{amqp_deliver, _Ch, Tag, _Re, _Ex, _Key, Props, Body} | Rest], Where, Now,
           #st{left = L} = St, Ls, N) when L =/= 0 ->
    Ls1 = case stamp(Where, Props, Body) of
              none -> Ls;   % a foreign message in the queue: counted, no latency
              Intended -> [latency(Now, Intended) | Ls]
          end,
    St1 = ack(Tag, St#st{left = dec(L), last_activity = last_activity(St)}),
    read_batch(Rest, Where, Now, St1, Ls1, N + 1);
read_batch([Msg | Rest], Where, Now, #st{left = L} = St, Ls, N) when L =/= 0 ->
    read_batch(Rest, Where, Now, handle_msg(Msg, St), Ls, N);
read_batch(Rest, _Where, _Now, St, Ls, N) ->
    {requeue(Rest, St), Ls, N}.

%% read_batch/6 when each delivery gets its own basic.ack (no autoack,
%% nacks, multi-ack or transactions): the same frames into the same
%% batches, with the state updated once per read (and per full batch),
%% not three times per delivery (#33). L, Fs, K and Last stand for the
%% state's left, settles, settles_n and last_tag meanwhile; anything
%% but a delivery goes on in read_batch/6. The ack is written out here
%% (beamlab_amqp:ack_frame/3's frame, without its calls).
read_acks([{amqp_deliver, {amqp_channel, _, Num, _, _}, Tag, _Re, _Ex, _Key, Props, Body} | Rest],
          Where, Now, St, L, Fs, K, _Last, Ls, N) when L =/= 0 ->
    Ls1 = case stamp(Where, Props, Body) of
              none -> Ls;   % a foreign message in the queue: counted, no latency
              Intended -> [latency(Now, Intended) | Ls]
          end,
    Fs1 = [?AMQP_ACK_FRAME(Num, Tag, 0) | Fs],
    case K + 1 < ?SETTLE_BATCH of
        true ->
            read_acks(Rest, Where, Now, St, dec(L), Fs1, K + 1, Tag, Ls1, N + 1);
        false ->
            St1 = flush(St#st{left = dec(L), settles = Fs1, last_tag = Tag,
                              last_activity = last_activity(St)}),
            read_acks(Rest, Where, Now, St1, St1#st.left, [], 0, Tag, Ls1, N + 1)
    end;
read_acks(Msgs, Where, Now, St, L, Fs, K, Last, Ls, N) ->
    Activity = case N of
                   0 -> St#st.last_activity;
                   _ -> last_activity(St)
               end,
    read_batch(Msgs, Where, Now, St#st{left = L, settles = Fs, settles_n = K, last_tag = Last,
                                       last_activity = Activity}, Ls, N).

%% Most reads end with their last delivery: nothing to put back, no call.
requeue([], St) ->
    St;
requeue(Rest, St) ->
    _ = [self() ! Msg || Msg <- Rest],
    St.

%% max(0, Now - Intended) without a call of erlang:max/2 (OTP 25).
latency(Now, Intended) when Intended < Now -> Now - Intended;
latency(_Now, _Intended) -> 0.

dec(infinity) -> infinity;
dec(L) -> L - 1.

handle_msg({amqp_deliver, Ch, Tag, Redelivered, _Ex, _Key, Props, Body}, #st{ch = Ch} = St) ->
    deliver(Tag, Redelivered, Props, Body, St);
handle_msg({amqp_closed, Ch, Code, Text}, #st{ch = Ch} = St) ->
    %% The connection closed the socket (or has the reads back).
    connection_lost(Code, Text, St#st{reader = none});
handle_msg({amqp_cancelled, Ch, _}, #st{ch = Ch} = St) ->
    exit({shutdown, {consumer_cancelled, maps:get(queue, St#st.spec)}});
handle_msg(poll, St) ->
    poll(St);
handle_msg(exit_check, St) ->
    exit_check(St);
handle_msg(stop, St) ->
    finish(St);
handle_msg(_Other, St) ->
    St.

deliver(Tag, _Redelivered, Props, Body, #st{ctx = #{counters := C, cons_hists := Hs} = Ctx} = St) ->
    case stamp(maps:get(stamp, St#st.spec), Props, Body) of
        none ->
            ok;   % a foreign message in the queue: counted, no latency
        Intended ->
            %% Intended is in the coordinator's time (see the agent's clock_offset).
            Off = maps:get(clock_offset, Ctx, 0),
            beamlab_amqp_worker:record(Hs, max(0, ?NOW_US() - Off - Intended))
    end,
    counters:add(C, ?C_RECEIVED, 1),
    St1 = pace(work(St)),
    ack(Tag, St1#st{left = dec(St1#st.left), last_activity = last_activity(St1)}).

stamp(body, _Props, <<Intended:64/signed, _/binary>>) ->
    Intended;
stamp(header, #{headers := Headers}, _Body) ->
    case lists:keyfind(?STAMP_HEADER, 1, Headers) of
        {_, _, T} when is_integer(T) -> T;
        _ -> none
    end;
stamp(_, _, _) ->
    none.

last_activity(#st{spec = #{exit_when := never}}) -> undefined;
last_activity(_) -> erlang:monotonic_time(millisecond).

%% -L/--variable-latency: PerfTest's simulated processing time.
work(#st{latency = none} = St) ->
    St;
work(#st{latency = L} = St0) ->
    St = flush(St0),
    case beamlab_amqp_cycle:value(L, ?NOW_US()) of
        0 -> ok;
        Us when Us >= ?SLEEP_MIN_US -> receive after Us div 1000 -> ok end;
        Us -> spin(erlang:monotonic_time(microsecond) + Us)
    end,
    St.

spin(Until) ->
    case erlang:monotonic_time(microsecond) < Until of
        true -> spin(Until);
        false -> ok
    end.

%% -R: at most that many messages a second (no burst after idling).
pace(#st{spec = #{rate := infinity}} = St) ->
    St;
pace(#st{spec = #{rate := Rate}, next_at = Next} = St0) ->
    St = flush(St0),
    Now = erlang:monotonic_time(microsecond),
    Due = case Next of none -> Now; _ -> max(Next, Now) end,
    _ = Due > Now andalso (receive after (Due - Now + 999) div 1000 -> true end),
    St#st{next_at = Due + round(1000000 / Rate)}.

ack(_Tag, #st{spec = #{autoack := true}} = St) ->
    St;
ack(Tag, #st{spec = #{multi_ack := N}, unacked = U} = St) when N > 1 ->
    case U + 1 >= N of
        true -> settle(Tag, true, N, St#st{unacked = 0, last_tag = Tag});
        false -> St#st{unacked = U + 1, last_tag = Tag}
    end;
ack(Tag, St) ->
    settle(Tag, false, 1, St#st{last_tag = Tag}).

%% ack, or nack with or without requeue (--nack, --requeue); in a
%% transaction, committed every -n settlements.
settle(Tag, Multiple, Count, #st{ch = Ch, spec = #{nack := false}} = St) ->
    commit(Count, batch(beamlab_amqp:ack_frame(Ch, Tag, Multiple), St));
settle(Tag, Multiple, Count, #st{ch = Ch, spec = #{requeue := Requeue}, ctx = #{counters := C}} = St) ->
    _ = Requeue andalso counters:add(C, ?C_REQUEUED, Count),
    commit(Count, batch(beamlab_amqp:nack_frame(Ch, Tag, Multiple, Requeue), St)).

%% Adds an ack or nack to the batch; a full batch goes to the connection.
batch(Frame, #st{settles = Fs, settles_n = K} = St) when K + 1 < ?SETTLE_BATCH ->
    St#st{settles = [Frame | Fs], settles_n = K + 1};
batch(Frame, #st{settles = Fs} = St) ->
    flush(St#st{settles = [Frame | Fs]}).

%% Hands the batch to the connection (in order): when the mailbox is
%% empty, and before anything that waits.
flush(#st{settles = []} = St) ->
    St;
flush(#st{settles = Fs, ch = Ch} = St) ->
    ok = beamlab_amqp:send(Ch, lists:reverse(Fs)),
    St#st{settles = [], settles_n = 0}.

commit(_Count, #st{tx_left = none} = St) ->
    St;
commit(Count, #st{tx_left = L, ch = Ch, spec = #{tx := N}} = St0) when L =< Count ->
    St = flush(St0),
    case beamlab_amqp:commit(Ch) of
        ok -> St#st{tx_left = N};
        {lost, Code, Text} -> connection_lost(Code, Text, St);
        {error, R} -> exit({shutdown, R})
    end;
commit(Count, #st{tx_left = L} = St) ->
    St#st{tx_left = L - Count}.

%% --polling: basic.get, then the pause (PerfTest pauses after every get).
poll(#st{ch = Ch, spec = #{polling := {true, Pause}} = Spec} = St0) ->
    St = flush(St0),
    St1 = case beamlab_amqp:get(Ch, maps:get(queue, Spec), maps:get(autoack, Spec)) of
              {ok, {Tag, Redelivered, _Ex, _Key, _Count, Props, Body}} ->
                  deliver(Tag, Redelivered, Props, Body, St);
              empty ->
                  St;
              {error, {Code, Text}} when is_binary(Text) ->
                  connection_lost(Code, Text, St);
              {error, R} ->
                  exit({shutdown, R})
          end,
    _ = case Pause of
            0 -> self() ! poll;
            _ -> erlang:send_after(Pause, self(), poll)
        end,
    St1.

%% --exit-when: idle for a second (no delivery), or its queue empty.
exit_check(#st{last_activity = undefined} = St) ->
    %% Never received anything: idle from now on (PerfTest's rule).
    erlang:send_after(?EXIT_CHECK_MS, self(), exit_check),
    St#st{last_activity = erlang:monotonic_time(millisecond)};
exit_check(#st{last_activity = Last, spec = #{exit_when := When} = Spec, ch = Ch} = St) ->
    Idle = erlang:monotonic_time(millisecond) - Last > ?IDLE_MS,
    Done = Idle andalso
        case When of
            idle -> true;
            empty ->
                case beamlab_amqp:declare_queue(Ch, maps:get(queue, Spec), #{passive => true}) of
                    {ok, #{message_count := 0}} -> true;
                    _ -> false
                end
        end,
    case Done of
        true -> finish(St);
        false ->
            erlang:send_after(?EXIT_CHECK_MS, self(), exit_check),
            St
    end.

connection_lost(_Code, _Text, #st{spec = #{reconnect := true} = Spec, ctx = Ctx} = St) ->
    %% Unacked deliveries go back to the queue with the old channel.
    {ok, Ch} = beamlab_amqp_worker:reopen(fun() -> open(Ctx, Spec) end, Spec),
    St1 = St#st{ch = Ch, unacked = 0, last_tag = 0, tx_left = tx(Spec), settles = [], settles_n = 0},
    case St#st.subscribed andalso not subscribes_at_once(Spec) of
        true ->
            case subscribe(St1) of
                {ok, St2} -> take(St2);
                {error, R} -> exit({shutdown, R})
            end;
        false -> take(St1)
    end;
connection_lost(Code, Text, _St) ->
    beamlab_amqp_worker:connection_lost(Code, Text).

-spec finish(#st{}) -> no_return().
finish(#st{ch = Ch, unacked = U, last_tag = Tag, reader = R} = St0) ->
    %% The calls below need the connection reading the socket.
    St = St0#st{reader = beamlab_amqp:give_back_reads(R)},
    St1 = flush(case U > 0 of
                    true -> settle(Tag, true, U, St);
                    false -> St
                end),
    _ = St1#st.tx_left =/= none andalso (catch beamlab_amqp:tx_commit(Ch)),
    %% The broker applies acks asynchronously (a quorum queue through its
    %% log): closing the channel at once can return acknowledged messages
    %% to the queue. cancel-ok comes after the acks sent before it.
    _ = St1#st.subscribed andalso maps:get(polling, St1#st.spec) =:= false andalso
        (catch beamlab_amqp:cancel(Ch, ?TAG, #{timeout => ?CLOSE_MS})),
    _ = catch beamlab_amqp:close_channel(Ch, #{timeout => ?CLOSE_MS}),
    %% With autoack, deliveries still in the mailbox have left the queue:
    %% count them. With acks they return to the queue with the channel.
    case maps:get(autoack, St#st.spec) of
        true -> drain_autoack(St1);
        false -> ok
    end,
    exit(normal).

drain_autoack(#st{ch = Ch} = St) ->
    receive
        {amqp_deliver, Ch, Tag, R, _, _, Props, Body} ->
            drain_autoack(deliver(Tag, R, Props, Body, St#st{left = infinity, latency = none,
                                                             spec = (St#st.spec)#{rate := infinity}}))
    after 0 ->
        ok
    end.
