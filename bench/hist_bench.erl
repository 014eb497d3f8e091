%%% @doc beamlab's latency histogram: recording values (done once per
%%% message by `amqp' and the suite's message_load). Bench module of
%%% `beamlab check' (docs/ci.md).
-module(hist_bench).

-export([benchmarks/0]).

benchmarks() ->
    [#{name => "hist record 1000 values",
       init => fun() -> {beamlab_stats_hist:new(#{}), [I * 7919 rem 1000000 || I <- lists:seq(1, 1000)]} end,
       init_runner => fun(P) -> P end,
       runner => fun({H, Values}) -> record(H, Values) end}].

record(_H, []) -> ok;
record(H, [V | Vs]) ->
    ok = beamlab_stats_hist:record(H, V),
    record(H, Vs).
