%%% @doc beamlab's latency histogram: recording values (done once per
%%% message by `amqp' and the suite's message_load), one at a time and as
%%% `amqp' records them, a read's latencies at once. Bench module of
%%% `beamlab check' (docs/ci.md).
-module(hist_bench).

-export([benchmarks/0]).

benchmarks() ->
    [#{name => "hist record 1000 values",
       init => fun() -> {beamlab_stats_hist:new(#{}), [I * 7919 rem 1000000 || I <- lists:seq(1, 1000)]} end,
       init_runner => fun(P) -> P end,
       runner => fun({H, Values}) -> record(H, Values) end},
     %% The consumer's call: one read's deliveries, whose latencies come
     %% in runs (a burst's messages share their stamp), 1 to 8 long here.
     #{name => "hist record_list 1000 values in runs",
       init => fun() -> {beamlab_stats_hist:new(#{}), values(runs(1000))} end,
       init_runner => fun(P) -> P end,
       runner => fun({H, Values}) -> beamlab_stats_hist:record_list(H, Values) end},
     %% The producer's call: a multiple confirm settles runs of the
     %% window, each recorded as a value and its count.
     #{name => "hist record_counts 1000 values in runs",
       init => fun() -> {beamlab_stats_hist:new(#{}), runs(1000)} end,
       init_runner => fun(P) -> P end,
       runner => fun({H, Runs}) -> beamlab_stats_hist:record_counts(H, Runs) end}].

record(_H, []) -> ok;
record(H, [V | Vs]) ->
    ok = beamlab_stats_hist:record(H, V),
    record(H, Vs).

%% N values in runs of 1 to 8 equal values (lengths cycling), each run's
%% value a different one, as {Value, Count} pairs ...
runs(N) ->
    runs(1, N).

runs(_I, 0) -> [];
runs(I, N) ->
    K = min(I rem 8 + 1, N),
    [{I * 7919 rem 1000000, K} | runs(I + 1, N - K)].

%% ... and written out.
values(Runs) ->
    lists:append([lists:duplicate(K, V) || {V, K} <- Runs]).
