%%% @doc Workload `message_load': the random-mesh message-load benchmark.
%%% P processes loop: send a timestamped message to a random peer, flush
%%% whatever has queued, then wait at most W ms for one message and record
%%% its send-to-receive latency. After a warm-up period the workload
%%% measures goodput, flushput and latency (percentiles from a log-linear
%%% histogram) with a per-second time series, and checks that every message
%%% sent is accounted for.
-module(beamlab_workload_message_load).
-behaviour(beamlab_workload).

-export([info/0, params/0, setup/1, run/2, teardown/1, processes/1]).

%% Kept across repetitions: the latency histogram of every measured
%% repetition, the per-second series and the repetition count.
-type state() :: #{hist := beamlab_stats_hist:hist(), series := [map()],
                   rep := non_neg_integer()}.

-define(WARMUP, 1).
-define(MEASURE, 2).
-define(STOP, 3).

%% @doc Workload description.
-spec info() -> beamlab_workload:info().
info() ->
    #{name => <<"message_load">>,
      summary => <<"random mesh: P processes send, flush, wait W ms; goodput and latency">>,
      definition =>
          <<"P processes each loop: send {Timestamp} to a uniformly random "
            "other process, flush (receive with timeout 0) every message "
            "already queued, then wait at most W ms for one message; a message "
            "received by that wait counts as goodput and its latency is "
            "receive time minus send time (monotonic clock); flushed "
            "messages count as flushput and have no latency. Only the "
            "`duration` ms after `warmup` ms count. Value: goodput in "
            "messages/s over the measured period; also flushput (msg/s) and "
            "latency mean and p99 (us), percentiles p50/p90/p99/p99.9/max "
            "and a per-second series (extra).">>,
      unit => <<"msg/s">>, better => higher, metric => <<"goodput">>,
      metrics => [#{key => flushput, unit => <<"msg/s">>, better => lower},
                  #{key => latency_mean, unit => <<"us">>, better => lower},
                  #{key => latency_p99, unit => <<"us">>, better => lower}],
      repeat => #{quick => 3, full => 3},
      warmup => false,
      checks => <<"conservation over the whole run (warm-up included): "
                  "sent = received + flushed + in flight at the end, where in "
                  "flight is what is still queued once every process has "
                  "stopped sending">>}.

%% @doc Parameters.
-spec params() -> [beamlab_workload:param_spec()].
params() ->
    [#{key => procs, default => 96, full => 96, type => {int_range, 2, 100000000},
       help => <<"processes in the mesh">>},
     #{key => wait, default => 10, full => 10, type => non_neg_integer,
       help => <<"ms to wait for one message per loop">>},
     #{key => warmup, default => 300, full => 10000, type => non_neg_integer,
       help => <<"ms of warm-up before measuring">>},
     #{key => duration, default => 1000, full => 60000, type => pos_integer,
       help => <<"ms measured">>}].

%% @doc Peak number of processes.
-spec processes(beamlab_workload:params()) -> non_neg_integer().
processes(#{procs := P}) -> P.

%% @doc The state keeps a histogram and the series over all repetitions.
-spec setup(beamlab_workload:params()) -> {ok, state()}.
setup(_) ->
    {ok, #{hist => new_hist(), series => [], rep => 0}}.

%% @doc One repetition: warm-up, measured period, stop and account.
-spec run(state(), beamlab_workload:params()) -> {ok, beamlab_workload:rep(), state()}.
run(#{hist := AllHist, series := Series0, rep := Rep0} = State,
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
    Pids = [spawn_link(fun() -> start(Parent, Shared) end) || _ <- lists:seq(1, P)],
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
    Seconds = beamlab_workload:us(T1 - T0) / 1.0e6,
    Snap = beamlab_stats_hist:snapshot(maps:get(hist, Shared)),
    Rep = Rep0 + 1,
    Series = Series0 ++ series(Rep, Shared),
    LatMean = hist_us(fun beamlab_stats_hist:mean/1, Snap),
    {ok, #{value => MGood / Seconds,
           metrics => #{flushput => MFlushed / Seconds,
                        latency_mean => LatMean,
                        latency_p99 => pct_us(Snap, 99)},
           counters => #{sent => Sent, received => Good, flushed => Flushed,
                         in_flight => InFlight, measured_received => MGood,
                         measured_flushed => MFlushed},
           check => beamlab_workload:check_all(
                      [{"sent = received + flushed + in flight", Sent,
                        Good + Flushed + InFlight},
                       {"latency samples = measured received", MGood,
                        beamlab_stats_hist:count(Snap)}]),
           extra => #{latency_us => latencies(beamlab_stats_hist:snapshot(AllHist)),
                      latency_scope => <<"all measured repetitions so far">>,
                      series => Series}},
     State#{series => Series, rep => Rep}}.

%% @doc Nothing to clean (processes stop at the end of each run).
-spec teardown(state()) -> ok.
teardown(_) -> ok.

%% Latencies in ns, 3 significant digits, up to 2^40 ns (18 minutes).
new_hist() ->
    beamlab_stats_hist:new(#{significant_digits => 3}).

start(Parent, Shared) ->
    Peers = receive {ml_peers, Ps} -> Ps end,
    loop(Parent, Shared, Peers, 0, 0, 0, 0, 0).

loop(Parent, #{phase := Phase} = Sh, Peers, Sent, Good, Flushed, MGood, MFlushed) ->
    case atomics:get(Phase, 1) of
        ?STOP ->
            Parent ! {ml_stopped, self(), {Sent, Good, Flushed, MGood, MFlushed}},
            receive ml_drain -> ok end,
            Parent ! {ml_inflight, self(), flush(0)};
        Ph ->
            peer(Peers) ! {ml, erlang:monotonic_time()},
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

peer(Peers) ->
    Self = self(),
    case element(rand:uniform(tuple_size(Peers)), Peers) of
        Self -> peer(Peers);
        P -> P
    end.

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

latencies(Snap) ->
    #{p50 => pct_us(Snap, 50), p90 => pct_us(Snap, 90), p99 => pct_us(Snap, 99),
      p999 => pct_us(Snap, 99.9), max => hist_us(fun beamlab_stats_hist:max/1, Snap),
      mean => hist_us(fun beamlab_stats_hist:mean/1, Snap),
      count => beamlab_stats_hist:count(Snap)}.

pct_us(Snap, P) ->
    hist_us(fun(S) -> beamlab_stats_hist:percentile(S, P) end, Snap).

hist_us(F, Snap) ->
    case beamlab_stats_hist:count(Snap) of
        0 -> 0.0;
        _ -> F(Snap) / 1000
    end.
