%%% @doc Workload `message_load': the message-load benchmark
%%% (jessestimpson/message_load_benchmark_public) and beamlab's random mesh.
%%%
%%% variant=original (default) follows the original loop: P processes each
%%% pick a random process of the P (picking itself sends nothing), send it
%%% `{Ref, Timestamp}', flush what has queued (flushput), then wait at most
%%% W ms; a message received while others are queued is discarded and the
%%% rest of the queue flushed, a message received from an empty queue is
%%% goodput with its latency. Measured counts go to one shared ETS counter
%%% as in the original. variant=mesh is beamlab's CPU-bound form (re-pick,
%%% every received message is goodput). Both keep per-process counts so the
%%% conservation check accounts for every message sent.
-module(beamlab_workload_message_load).
-behaviour(beamlab_workload).

-export([info/0, params/0, setup/1, run/2, teardown/1, processes/1, normalize/1]).
%% The original variant's worker loop entry (spawned by MFA).
-export([o_start/1]).
-ifdef(TEST).
%% The receive rule of the original variant, for its EUnit test.
-export([o_received/5]).
-endif.

%% Kept across repetitions: the latency histogram of every measured
%% repetition, the per-second series and the repetition count.
-type state() :: #{hist := beamlab_stats_hist:hist(), series := [map()],
                   rep := non_neg_integer(),
                   orig_all => beamlab_stats_hist:snapshot()}.

-define(WARMUP, 1).
-define(MEASURE, 2).
-define(STOP, 3).

%% @doc Workload description.
-spec info() -> beamlab_workload:info().
info() ->
    #{name => <<"message_load">>,
      summary => <<"message-load benchmark: P processes send to a random peer, flush, wait W ms">>,
      definition =>
          <<"variant=original (message_load_benchmark_public): P processes "
            "loop: pick one of the P processes at random (picking itself "
            "sends nothing), send_nosuspend {make_ref(), now in us}, flush "
            "every message already queued (counted as flushput), then wait at "
            "most W ms. A message received when the queue is otherwise empty "
            "is goodput, its latency is receive minus send time in us; a "
            "message received while others are queued is discarded and the "
            "queue behind it flushed (flushput). Measured goodput, latency "
            "sum and flushput go to one shared ETS counter, as in the "
            "original. After `warmup` ms every process is sent `collect`, "
            "`duration` ms later `stop`: goodput and flushput are counts over "
            "that interval divided by it, latency is the average over "
            "goodput, total = goodput + flushput. variant=mesh (beamlab's "
            "form): a self-pick re-picks, the message is {Timestamp}, every "
            "message received by the wait is goodput (also when others were "
            "queued), latency in ns. record=true (default) adds one histogram "
            "add per goodput message (latency percentiles) and a per-second "
            "series read from the shared counters by a sampler process; "
            "record=false measures exactly the original's work.">>,
      unit => <<"msg/s">>, better => higher, metric => <<"goodput">>,
      metrics => [#{key => latency_mean, unit => <<"us">>, better => lower, measure => <<"mean latency">>},
                  #{key => flushput, unit => <<"msg/s">>, better => lower,
                    measure => <<"rate of messages flushed unread">>},
                  #{key => total, unit => <<"msg/s">>, better => higher,
                    measure => <<"rate of messages received or flushed">>},
                  #{key => latency_p99, unit => <<"us">>, better => lower, measure => <<"99th percentile latency">>}],
      repeat => #{quick => 3, full => 1},
      warmup => false,
      checks => <<"conservation over the whole run (warm-up included): "
                  "sent = goodput + discarded + flushed + left in mailboxes "
                  "after every process stopped; original: loops = sent + "
                  "self-picks, and the shared ETS goodput count equals the "
                  "processes' own measured count (and the histogram's)">>}.

%% @doc Parameters.
-spec params() -> [beamlab_workload:param_spec()].
params() ->
    [#{key => variant, default => original, full => original,
       type => {enum, [original, mesh]},
       help => <<"original: the published benchmark; mesh: beamlab's CPU-bound mesh">>},
     #{key => procs, default => 96, full => 96, type => {int_range, 2, 100000000},
       help => <<"processes">>},
     #{key => wait, default => 10, full => 10, type => non_neg_integer,
       help => <<"ms to wait for one message per loop">>},
     #{key => warmup, default => 300, full => 300000, type => non_neg_integer,
       help => <<"ms of warm-up before measuring (original: 5 min)">>},
     #{key => duration, default => 1000, full => 60000, type => pos_integer,
       help => <<"ms measured (original: 60 s)">>},
     #{key => record, default => true, full => true, type => boolean,
       help => <<"also record a latency histogram and per-second series">>}].

%% @doc The mesh always records (its histogram is its latency figure).
-spec normalize(beamlab_workload:params()) -> {ok, beamlab_workload:params()}.
normalize(#{variant := mesh} = P) -> {ok, maps:remove(record, P)};
normalize(P) -> {ok, P}.

%% @doc Peak number of processes.
-spec processes(beamlab_workload:params()) -> non_neg_integer().
processes(#{procs := P}) -> P.

%% @doc The state keeps a histogram and the series over all repetitions.
-spec setup(beamlab_workload:params()) -> {ok, state()}.
setup(_) ->
    {ok, #{hist => new_hist(), series => [], rep => 0}}.

%% @doc One repetition: warm-up, measured period, stop and account.
-spec run(state(), beamlab_workload:params()) -> {ok, beamlab_workload:rep(), state()}.
run(State, #{variant := original} = Params) ->
    run_original(State, Params);
run(State, #{variant := mesh} = Params) ->
    run_mesh(State, Params).

%% @doc Nothing to clean (processes stop at the end of each run).
-spec teardown(state()) -> ok.
teardown(_) -> ok.

%%--------------------------------------------------------------------
%% variant=original

run_original(#{series := Series0, rep := Rep0} = State,
             #{procs := P, wait := W, warmup := Warm, duration := Dur, record := Record}) ->
    Tab = ets:new(?MODULE, [public, set]),
    ets:insert(Tab, {diff, 0, 0}),
    ets:insert(Tab, {flush, 0}),
    Key = {?MODULE, make_ref()},
    Rec = case Record of
              false -> none;
              %% The cheapest recording: one bucket add per goodput message,
              %% inline in the loop (latency in us, as measured: below 2048
              %% us each value is its own bucket; the exact mean is the
              %% original's ETS sum). The per-second series is read from the
              %% ETS counters by a sampler, not in the loop.
              true ->
                  Hist = beamlab_stats_hist:new(#{significant_digits => 3, exact => false}),
                  {Buckets, Bound} = beamlab_stats_hist:inline_buckets(Hist),
                  {Buckets, Bound, Hist}
          end,
    %% The workers fetch the histogram's references themselves from a
    %% shared literal: copied onto their heaps, they tripled the workers'
    %% collections (see beamlab_runtime_shared).
    RecKey = case Rec of
                 none -> none;
                 _ -> beamlab_runtime_shared:share(Rec)
             end,
    Parent = self(),
    Pids = [{N, spawn_link(?MODULE, o_start, [{Parent, {Key, Tab, W, RecKey}}])}
            || N <- lists:seq(1, P)],
    persistent_term:put(Key, maps:from_list(Pids)),
    _ = [Pid ! start || {_, Pid} <- Pids],
    timer:sleep(Warm),
    T0 = erlang:monotonic_time(),
    Sampler = case Rec of
                  none -> none;
                  _ -> spawn_link(fun() -> sampler(Tab, erlang:convert_time_unit(T0, native, millisecond),
                                                   1, {0, 0, 0}, []) end)
              end,
    _ = [Pid ! collect || {_, Pid} <- Pids],
    timer:sleep(Dur),
    T1 = erlang:monotonic_time(),
    _ = [Pid ! stop || {_, Pid} <- Pids],
    Counts = collect_counts(Pids, #{}),
    PerSec = case Sampler of
                 none -> [];
                 _ -> Sampler ! {ml_final, self()},
                      receive {ml_series, Sampler, Ps} -> unlink(Sampler), Ps end
             end,
    _ = [Pid ! ml_drain || {_, Pid} <- Pids],
    Left = collect_left(Pids, 0),
    _ = [unlink(Pid) || {_, Pid} <- Pids],
    _ = persistent_term:erase(Key),
    RecKey =:= none orelse beamlab_runtime_shared:release(RecKey),
    [{diff, USum, NGood}] = ets:lookup(Tab, diff),
    [{flush, NFlush}] = ets:lookup(Tab, flush),
    ets:delete(Tab),
    Seconds = beamlab_workload:us(T1 - T0) / 1.0e6,
    #{loops := Loops, sent := Sent, self_picks := SelfPicks, good := Good,
      discarded := Discarded, flushed := Flushed, m_good := MGood} = Counts,
    Goodput = NGood / Seconds,
    Flushput = NFlush / Seconds,
    LatMean = case NGood of 0 -> 0.0; _ -> USum / NGood end,
    Rep = Rep0 + 1,
    {HistChecks, Extra, Series, P99, AllSnap} =
        case Rec of
            none ->
                {[], #{}, Series0, undefined, maps:get(orig_all, State, undefined)};
            {_, _, H} ->
                Snap = beamlab_stats_hist:snapshot(H),
                All = case maps:get(orig_all, State, undefined) of
                          undefined -> Snap;
                          Before -> beamlab_stats_hist:merge(Before, Snap)
                      end,
                S1 = Series0 ++ [Pt#{rep => Rep} || Pt <- PerSec],
                {[{"histogram samples = measured goodput", NGood, beamlab_stats_hist:count(Snap)},
                  {"per-second goodput adds up", NGood,
                   lists:sum([G1 || #{goodput := G1} <- PerSec])}],
                 #{latency_us => latencies(All, 1),
                   latency_scope => <<"all measured repetitions so far">>,
                   series => S1},
                 S1, maps:get(p99, latencies(Snap, 1)), All}
        end,
    Metrics0 = #{flushput => Flushput, latency_mean => LatMean, total => Goodput + Flushput},
    Metrics = case P99 of undefined -> Metrics0; _ -> Metrics0#{latency_p99 => P99} end,
    {ok, #{value => Goodput,
           metrics => Metrics,
           counters => #{loops => Loops, sent => Sent, self_picks => SelfPicks,
                         goodput => Good, discarded => Discarded, flushed => Flushed,
                         left => Left, measured_goodput => NGood,
                         measured_flushed => NFlush, latency_sum_us => USum},
           check => beamlab_workload:check_all(
                      [{"sent = goodput + discarded + flushed + left", Sent,
                        Good + Discarded + Flushed + Left},
                       {"loops = sent + self-picks", Loops, Sent + SelfPicks},
                       {"shared ETS goodput = processes' measured goodput", MGood, NGood}
                       | HistChecks]),
           extra => Extra},
     case AllSnap of
         undefined -> State#{series => Series, rep => Rep};
         _ -> State#{series => Series, rep => Rep, orig_all => AllSnap}
     end}.

%% @doc The original variant's process: the original's worker_loop, idle
%% until `start'.
-spec o_start({pid(), {term(), ets:tid(), non_neg_integer(),
                        none | beamlab_runtime_shared:key()}}) -> ok.
o_start({Parent, {Key, Tab, W, RecKey}}) ->
    Rec = case RecKey of
              none -> none;
              _ -> beamlab_runtime_shared:fetch(RecKey)
          end,
    o_idle(Parent, {Key, Tab, W, Rec}, nocollect, {0, 0, 0, 0, 0, 0, 0}).

%% Counters, per process (local, not shared): {Loops, Sent, SelfPicks,
%% Good, Discarded, Flushed, MeasuredGood}.
o_idle(Parent, Sh, Collect, C) ->
    receive
        start -> o_loop(Parent, Sh, Collect, C);
        stop -> o_stop(Parent, C);
        collect -> o_idle(Parent, Sh, collect, C);
        {Ref, T1} when is_reference(Ref) ->
            T2 = erlang:monotonic_time(microsecond),
            o_idle(Parent, Sh, Collect, o_received(Sh, T1, T2, Collect, C))
    end.

o_loop(Parent, {Key, _Tab, W, _Rec} = Sh, Collect, {L, S, SP, G, D, F, MG}) ->
    C1 = case o_target(Key) of
             Target when is_pid(Target) ->
                 _ = erlang:send_nosuspend(Target, {make_ref(), erlang:monotonic_time(microsecond)}),
                 {L + 1, S + 1, SP, G, D, F, MG};
             _ ->
                 {L + 1, S, SP + 1, G, D, F, MG}
         end,
    C2 = o_flush(Sh, Collect, C1),
    receive
        stop -> o_stop(Parent, C2);
        collect -> o_loop(Parent, Sh, collect, C2);
        {Ref, T1} when is_reference(Ref) ->
            T2 = erlang:monotonic_time(microsecond),
            o_loop(Parent, Sh, Collect, o_received(Sh, T1, T2, Collect, C2))
    after W ->
            o_loop(Parent, Sh, Collect, C2)
    end.

o_target(Key) ->
    Map = #{} = persistent_term:get(Key),
    Idx = rand:uniform(map_size(Map)),
    Self = self(),
    case maps:get(Idx, Map) of
        Self -> undefined;
        Pid -> Pid
    end.

%% The original's receive_message/4: a message taken from an otherwise
%% empty queue is goodput; otherwise it is discarded and the queue flushed.
-spec o_received(term(), integer(), integer(), collect | nocollect, tuple()) -> tuple().
o_received(Sh, T1, T2, Collect, {L, S, SP, G, D, F, MG} = C) ->
    case process_info(self(), message_queue_len) of
        {message_queue_len, 0} ->
            case Collect of
                collect ->
                    {_Key, Tab, _W, Rec} = Sh,
                    Diff = T2 - T1,
                    _ = ets:update_counter(Tab, diff, [{2, Diff}, {3, 1}]),
                    Rec =:= none orelse o_record(Rec, Diff),
                    {L, S, SP, G + 1, D, F, MG + 1};
                nocollect ->
                    {L, S, SP, G + 1, D, F, MG}
            end;
        _ ->
            o_flush(Sh, Collect, setelement(5, C, D + 1))
    end.

%% record=true: the latency's bucket, inline when it is an exact one.
o_record({Buckets, Bound, _Hist}, Diff) when Diff >= 0, Diff < Bound ->
    counters:add(Buckets, Diff + 1, 1);
o_record({_Buckets, _Bound, Hist}, Diff) ->
    beamlab_stats_hist:record(Hist, max(Diff, 0)).

%% As the original: while collecting, every flush updates the shared ETS
%% counter, also when it flushed nothing.
o_flush(Sh, Collect, {L, S, SP, G, D, F, MG}) ->
    N = o_do_flush(0),
    case Collect of
        collect ->
            {_Key, Tab, _W, _Rec} = Sh,
            _ = ets:update_counter(Tab, flush, [{2, N}]),
            ok;
        nocollect ->
            ok
    end,
    case N of
        0 -> {L, S, SP, G, D, F, MG};
        _ -> {L, S, SP, G, D, F + N, MG}
    end.

o_do_flush(N) ->
    receive
        {Ref, _} when is_reference(Ref) -> o_do_flush(N + 1)
    after 0 -> N
    end.

%% Every second (absolute timer ticks from the start of the measured
%% period) the deltas of the shared ETS counters; a last, partial second
%% once every process has stopped.
sampler(Tab, T0Ms, Sec, Prev, Acc) ->
    erlang:send_after(T0Ms + 1000 * Sec, self(), ml_tick, [{abs, true}]),
    receive
        ml_tick ->
            {Point, Now} = sample(Tab, Sec, Prev),
            sampler(Tab, T0Ms, Sec + 1, Now, [Point | Acc]);
        {ml_final, From} ->
            {Point, _} = sample(Tab, Sec, Prev),
            Points = [P || #{goodput := G, flushput := F} = P <- lists:reverse([Point | Acc]),
                           G + F > 0],
            From ! {ml_series, self(), Points}
    end.

sample(Tab, Sec, {S0, N0, F0}) ->
    [{diff, S, N}] = ets:lookup(Tab, diff),
    [{flush, F}] = ets:lookup(Tab, flush),
    Good = N - N0,
    {#{second => Sec, goodput => Good, flushput => F - F0,
       latency_mean_us => case Good of 0 -> 0.0; _ -> (S - S0) / Good end},
     {S, N, F}}.

%% Stopped: report the counts, then (once every process has stopped and
%% nothing more can arrive) what is left in the mailbox.
o_stop(Parent, {L, S, SP, G, D, F, MG}) ->
    Parent ! {ml_counts, self(), #{loops => L, sent => S, self_picks => SP, good => G,
                                   discarded => D, flushed => F, m_good => MG}},
    receive ml_drain -> ok end,
    Parent ! {ml_left, self(), o_do_flush(0)},
    ok.

collect_counts([], Acc) -> Acc;
collect_counts([{_, Pid} | Rest], Acc) ->
    receive
        {ml_counts, Pid, C} ->
            collect_counts(Rest, maps:fold(fun(K, V, A) -> A#{K => maps:get(K, A, 0) + V} end,
                                           Acc, C))
    end.

collect_left([], N) -> N;
collect_left([{_, Pid} | Rest], N) ->
    receive {ml_left, Pid, K} -> collect_left(Rest, N + K) end.

%%--------------------------------------------------------------------
%% variant=mesh (beamlab's random mesh)

run_mesh(#{hist := AllHist, series := Series0, rep := Rep0} = State,
         #{procs := P, wait := W, warmup := Warm, duration := Dur}) ->
    %% The last second also takes the few ms between the end of the period
    %% and the moment every process has seen the stop.
    Secs = (Dur + 999) div 1000,
    Shared = #{phase => atomics:new(2, [{signed, true}]),
               per_sec => counters:new(3 * Secs, [write_concurrency]),
               secs => Secs, hist => new_hist(), all => AllHist, wait => W},
    #{phase := Phase} = Shared,
    atomics:put(Phase, 1, ?WARMUP),
    Parent = self(),
    %% Fetched by each worker, not copied into it: see run_original/2.
    SharedKey = beamlab_runtime_shared:share(Shared),
    Pids = [spawn_link(fun() -> start(Parent, SharedKey) end) || _ <- lists:seq(1, P)],
    Peers = list_to_tuple(Pids),
    _ = [Pid ! {ml_peers, Peers} || Pid <- Pids],
    timer:sleep(Warm),
    T0 = erlang:monotonic_time(),
    atomics:put(Phase, 2, T0),
    atomics:put(Phase, 1, ?MEASURE),
    timer:sleep(Dur),
    atomics:put(Phase, 1, ?STOP),
    T1 = erlang:monotonic_time(),
    {Sent, Good, Flushed, MGood, MFlushed} = collect_stopped(Pids, {0, 0, 0, 0, 0}),
    _ = [Pid ! ml_drain || Pid <- Pids],
    InFlight = collect_inflight(Pids, 0),
    _ = [unlink(Pid) || Pid <- Pids],
    ok = beamlab_runtime_shared:release(SharedKey),
    Seconds = beamlab_workload:us(T1 - T0) / 1.0e6,
    Snap = beamlab_stats_hist:snapshot(maps:get(hist, Shared)),
    Rep = Rep0 + 1,
    Series = Series0 ++ series(Rep, Shared),
    #{mean := LatMean, p99 := LatP99} = latencies(Snap, 1000),
    {ok, #{value => MGood / Seconds,
           metrics => #{flushput => MFlushed / Seconds,
                        latency_mean => LatMean,
                        total => (MGood + MFlushed) / Seconds,
                        latency_p99 => LatP99},
           counters => #{sent => Sent, goodput => Good, discarded => 0, flushed => Flushed,
                         left => InFlight, measured_goodput => MGood,
                         measured_flushed => MFlushed},
           check => beamlab_workload:check_all(
                      [{"sent = goodput + discarded + flushed + left", Sent,
                        Good + Flushed + InFlight},
                       {"latency samples = measured received", MGood,
                        beamlab_stats_hist:count(Snap)}]),
           extra => #{latency_us => latencies(beamlab_stats_hist:snapshot(AllHist), 1000),
                      latency_scope => <<"all measured repetitions so far">>,
                      series => Series}},
     State#{series => Series, rep => Rep}}.

%% Latencies in ns, 3 significant digits, up to 2^40 ns (18 minutes).
new_hist() ->
    beamlab_stats_hist:new(#{significant_digits => 3}).

start(Parent, SharedKey) ->
    Shared = beamlab_runtime_shared:fetch(SharedKey),
    Peers = receive {ml_peers, Ps} -> Ps end,
    loop(Parent, Shared, Peers, 0, 0, 0, 0, 0).

loop(Parent, #{phase := Phase} = Sh, Peers, Sent, Good, Flushed, MGood, MFlushed) ->
    case atomics:get(Phase, 1) of
        ?STOP ->
            Parent ! {ml_stopped, self(), {Sent, Good, Flushed, MGood, MFlushed}},
            receive ml_drain -> ok end,
            Parent ! {ml_inflight, self(), flush(0)};
        Ph ->
            beamlab_workload:random_peer(Peers) ! {ml, erlang:monotonic_time()},
            F = flush(0),
            Measuring = Ph =:= ?MEASURE,
            #{wait := W} = Sh,
            receive
                {ml, Ts} ->
                    Now = erlang:monotonic_time(),
                    case Measuring of
                        true ->
                            record(Sh, Now, Ts, F),
                            loop(Parent, Sh, Peers, Sent + 1, Good + 1, Flushed + F,
                                 MGood + 1, MFlushed + F);
                        false ->
                            loop(Parent, Sh, Peers, Sent + 1, Good + 1, Flushed + F,
                                 MGood, MFlushed)
                    end
            after W ->
                    case Measuring of
                        true ->
                            record_flushed(Sh, erlang:monotonic_time(), F),
                            loop(Parent, Sh, Peers, Sent + 1, Good, Flushed + F,
                                 MGood, MFlushed + F);
                        false ->
                            loop(Parent, Sh, Peers, Sent + 1, Good, Flushed + F,
                                 MGood, MFlushed)
                    end
            end
    end.

record(#{hist := H, all := All, per_sec := C} = Sh, Now, Ts, F) ->
    Lat = erlang:convert_time_unit(Now - Ts, native, nanosecond),
    ok = beamlab_stats_hist:record(H, Lat),
    ok = beamlab_stats_hist:record(All, Lat),
    Ix = 3 * second(Sh, Now),
    counters:add(C, Ix + 1, 1),
    counters:add(C, Ix + 3, Lat),
    F =:= 0 orelse counters:add(C, Ix + 2, F),
    ok.

record_flushed(_Sh, _Now, 0) -> ok;
record_flushed(#{per_sec := C} = Sh, Now, F) ->
    counters:add(C, 3 * second(Sh, Now) + 2, F).

second(#{phase := Phase, secs := Secs}, Now) ->
    S = erlang:convert_time_unit(Now - atomics:get(Phase, 2), native, second),
    min(max(S, 0), Secs - 1).

flush(N) ->
    receive {ml, _} -> flush(N + 1) after 0 -> N end.

collect_stopped([], Acc) -> Acc;
collect_stopped([Pid | Rest], {S, G, F, MG, MF}) ->
    receive
        {ml_stopped, Pid, {S1, G1, F1, MG1, MF1}} ->
            collect_stopped(Rest, {S + S1, G + G1, F + F1, MG + MG1, MF + MF1})
    end.

collect_inflight([], N) -> N;
collect_inflight([Pid | Rest], N) ->
    receive {ml_inflight, Pid, K} -> collect_inflight(Rest, N + K) end.

series(Rep, #{per_sec := C, secs := Secs}) ->
    [begin
         Good = counters:get(C, 3 * S + 1),
         #{rep => Rep, second => S + 1, goodput => Good,
           flushput => counters:get(C, 3 * S + 2),
           latency_mean_us => case Good of
                                  0 -> 0.0;
                                  _ -> counters:get(C, 3 * S + 3) / Good / 1000
                              end}
     end || S <- lists:seq(0, Secs - 1),
            counters:get(C, 3 * S + 1) + counters:get(C, 3 * S + 2) > 0].

%% Latency percentiles in microseconds from a histogram recorded in
%% `Per' units per microsecond (the original variant records microseconds,
%% 1; the mesh variant nanoseconds, 1000).
latencies(Snap, Per) ->
    Us = fun(F) ->
                 case beamlab_stats_hist:count(Snap) of
                     0 -> 0.0;
                     _ -> F(Snap) / Per
                 end
         end,
    Pct = fun(P) -> Us(fun(S) -> beamlab_stats_hist:percentile(S, P) end) end,
    #{p50 => Pct(50), p90 => Pct(90), p99 => Pct(99), p999 => Pct(99.9),
      max => Us(fun beamlab_stats_hist:max/1), mean => Us(fun beamlab_stats_hist:mean/1),
      count => beamlab_stats_hist:count(Snap)}.
