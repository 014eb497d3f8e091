%% The victims of bench/capture_overhead.escript, compiled and loaded on
%% the bench's node by the bench (the node's own code). Each counts its
%% iterations in an atomics array (persistent_term capture_bench_counter,
%% one slot per victim) so the bench reads each one's throughput.
-module(capture_bench_victim).
-export([tprof_run/2, slot/1]).
-export([start/0, hot/1, deep/1, busy/1, spin/2, d1/0, d2/0, d3/0, d4/0, d5/0, d6/0, leaf_loop/2,
         handle/1]).

start() ->
    C = atomics:new(3, []),
    persistent_term:put(capture_bench_counter, C),
    register(bench_hot, spawn(?MODULE, hot, [C])),
    register(bench_deep, spawn(?MODULE, deep, [C])),
    register(bench_busy, spawn(?MODULE, busy, [C])),
    ok.

%% A tight loop: tens of millions of calls a second, 1000 per iteration.
hot(C) -> _ = spin(1000, 0), atomics:add(C, 1, 1), hot(C).

spin(0, Acc) -> Acc;
spin(N, Acc) -> spin(N - 1, Acc + N * 2).

%% A deep chain over a loop: d1 > ... > d6 > leaf_loop(2000).
deep(C) -> _ = d1(), atomics:add(C, 2, 1), deep(C).
d1() -> 1 + d2().
d2() -> 1 + d3().
d3() -> 1 + d4().
d4() -> 1 + d5().
d5() -> 1 + d6().
d6() -> 1 + leaf_loop(2000, 0).

leaf_loop(0, Acc) -> Acc band 16#ff;
leaf_loop(N, Acc) -> leaf_loop(N - 1, Acc + N).

%% A busy server-like process: each iteration handles a request whose
%% work is mostly in BIFs (encoding, hashing, a map update), few calls.
busy(C) -> busy(C, #{}).

busy(C, State) ->
    State1 = handle({request, atomics:get(C, 3), State}),
    atomics:add(C, 3, 1),
    busy(C, State1).

handle({request, N, State}) ->
    Bin = term_to_binary({N, lists:seq(1, 50)}),
    Key = erlang:phash2(Bin, 64),
    maps:put(Key, byte_size(Bin), State).

%% OTP 27's tprof, run on the node itself on one victim for `Ms':
%% {iterations per second meanwhile, total time, [{Function, Calls, Time}]}.
tprof_run(Name, Ms) ->
    Pid = whereis(Name),
    C = persistent_term:get(capture_bench_counter),
    {ok, _} = tprof:start(#{type => call_time}),
    _ = tprof:enable_trace(Pid),
    _ = tprof:set_pattern('_', '_', '_'),
    A = atomics:get(C, slot(Name)),
    timer:sleep(Ms),
    B = atomics:get(C, slot(Name)),
    _ = tprof:disable_trace(Pid),
    Data = tprof:collect(),
    ok = tprof:stop(),
    [{call_time, Total, Lines}] = maps:values(tprof:inspect(Data)),
    {(B - A) * 1000 / Ms, Total,
     [{iolist_to_binary(io_lib:format("~ts:~ts/~b", [M, F, Ar])), Cnt, T} || {M, {F, Ar}, Cnt, T, _, _} <- Lines]}.

slot(bench_hot) -> 1;
slot(bench_deep) -> 2;
slot(bench_busy) -> 3.
