%% The victims of bench/capture_overhead.escript, compiled and loaded on
%% the bench's node by the bench (the node's own code). Each counts its
%% iterations in an atomics array (persistent_term capture_bench_counter,
%% one slot per victim) so the bench reads each one's throughput.
-module(capture_bench_victim).
-export([tprof/2, tprof/3, eprof/2, slot/1, suspend/1]).
-export([start/0, hot/1, deep/1, busy_client/2, spin/2, d1/0, d2/0, d3/0, d4/0, d5/0, d6/0, leaf_loop/2,
         handle_request/2, items/3, compare/2, weigh/2, fprof_run/3]).
-export([init/1, handle_call/3, handle_cast/2]).
-behaviour(gen_server).

start() ->
    C = atomics:new(3, []),
    persistent_term:put(capture_bench_counter, C),
    register(bench_hot, spawn(?MODULE, hot, [C])),
    register(bench_deep, spawn(?MODULE, deep, [C])),
    busy_start(C).

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

%% A busy server: bench_busy is a gen_server that a client process
%% (bench_busy_client) calls in a loop; each request does a few
%% microseconds of ordinary work: builds a small list of records, sorts
%% it with a comparison fun, folds it, updates its map. Its counter
%% counts the replies the client got.
busy_start(C) ->
    {ok, _} = gen_server:start({local, bench_busy}, ?MODULE, C, []),
    register(bench_busy_client, spawn(?MODULE, busy_client, [C, 0])),
    ok.

busy_client(C, N) ->
    _ = gen_server:call(bench_busy, {request, N}, infinity),
    atomics:add(C, 3, 1),
    busy_client(C, N + 1).

init(C) -> {ok, #{counter => C, table => #{}}}.

handle_call({request, N}, _From, #{table := T} = S) ->
    {Reply, T1} = handle_request(N, T),
    {reply, Reply, S#{table := T1}}.

handle_cast(_, S) -> {noreply, S}.

handle_request(N, T) ->
    Items = items(N, 20, []),
    Sorted = lists:sort(fun compare/2, Items),
    Sum = lists:foldl(fun weigh/2, 0, Sorted),
    Key = N rem 256,
    {Sum, maps:put(Key, Sum, T)}.

items(_, 0, Acc) -> Acc;
items(N, K, Acc) -> items(N, K - 1, [{item, (N * 7919 + K * 104729) rem 1000, K} | Acc]).

compare({item, A, _}, {item, B, _}) -> A =< B.

weigh({item, W, K}, Acc) -> Acc + W * K.

%% OTP 27's tprof, run on the node itself on one victim for `Ms':
%% {iterations per second meanwhile, total time, [{Function, Calls, Time}]}.
tprof(Name, Ms) ->
    tprof(Name, Ms, all).

%% ... with patterns on every function (all) or on the modules a capture
%% takes as the process's own (own: the modules on its stack and of its
%% initial call; gen_server and proc_lib for the gen_server).
tprof(Name, Ms, Scope) ->
    Pid = whereis(Name),
    C = persistent_term:get(capture_bench_counter),
    {ok, _} = tprof:start(#{type => call_time}),
    _ = tprof:enable_trace(Pid),
    _ = case Scope of
            all -> tprof:set_pattern('_', '_', '_');
            own -> [tprof:set_pattern(M, '_', '_') || M <- own_modules(Name)]
        end,
    A = atomics:get(C, slot(Name)),
    timer:sleep(Ms),
    B = atomics:get(C, slot(Name)),
    _ = tprof:disable_trace(Pid),
    Data = tprof:collect(),
    ok = tprof:stop(),
    [{call_time, Total, Lines}] = maps:values(tprof:inspect(Data)),
    {(B - A) * 1000 / Ms, Total,
     [{iolist_to_binary(io_lib:format("~ts:~ts/~b", [M, F, Ar])), Cnt, T} || {M, {F, Ar}, Cnt, T, _, _} <- Lines]}.

%% OTP's fprof on the node on one victim for `Ms' (its trace file and
%% analysis in `Dir'): the analysis's entries, {Function, Acc, Own,
%% [{Callee, Acc}]}, to find its hot path.
fprof_run(Name, Ms, Dir) ->
    Pid = whereis(Name),
    Trace = filename:join(Dir, "fprof.trace"),
    Out = filename:join(Dir, "fprof.analysis"),
    ok = fprof:trace([start, {procs, [Pid]}, {file, Trace}]),
    timer:sleep(Ms),
    ok = fprof:trace(stop),
    ok = fprof:profile([{file, Trace}]),
    ok = fprof:analyse([{dest, Out}, {totals, false}]),
    ok = fprof:stop(),
    {ok, Terms} = file:consult(Out),
    _ = file:delete(Trace),
    _ = file:delete(Out),
    [{name(F), Acc, Own, [{name(G), GAcc} || {G, _, GAcc, _} <- Callees]}
     || {_Callers, {F, _Cnt, Acc, Own}, Callees} <- Terms, is_list(Callees)].

name({M, F, A}) -> iolist_to_binary(io_lib:format("~ts:~ts/~b", [M, F, A]));
name(Other) -> iolist_to_binary(io_lib:format("~tp", [Other])).

%% eprof (the in-node anchor before OTP 27), the same way.
eprof(Name, Ms) ->
    Pid = whereis(Name),
    C = persistent_term:get(capture_bench_counter),
    {ok, _} = eprof:start(),
    profiling = eprof:start_profiling([Pid]),
    A = atomics:get(C, slot(Name)),
    timer:sleep(Ms),
    B = atomics:get(C, slot(Name)),
    profiling_stopped = eprof:stop_profiling(),
    %% (its #bpd{} record: the fifth element is every function's calls
    %% and microseconds over the profiled processes)
    Fs = element(5, eprof:dump_data()),
    stopped = eprof:stop(),
    Lines = [{iolist_to_binary(io_lib:format("~ts:~ts/~b", [M, F, Ar])), Cnt, Us} || {{M, F, Ar}, {Cnt, Us}} <- Fs],
    {(B - A) * 1000 / Ms, lists:sum([T || {_, _, T} <- Lines]), Lines}.

%% A process that keeps `Pids' suspended until it gets `resume' (a
%% suspension ends with the process that made it).
suspend(Pids) ->
    Self = self(),
    H = spawn(fun() -> [true = erlang:suspend_process(P) || P <- Pids], Self ! {held, self()},
                       receive resume -> ok end end),
    receive {held, H} -> H end.

own_modules(bench_busy) -> [?MODULE, gen_server, proc_lib];
own_modules(_) -> [?MODULE].

slot(bench_hot) -> 1;
slot(bench_deep) -> 2;
slot(bench_busy) -> 3.
