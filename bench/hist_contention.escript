#!/usr/bin/env escript
%%! -pa _build/default/lib/beamlab/ebin +sbwt none +sbwtdcpu none +sbwtdio none
%%% What contention costs the histogram's bucket array (#33), measured in
%%% one run (run from the repository root after `rebar3 compile'): an
%%% exact histogram's buckets are `atomics' (one BIF call per value), where
%%% they were `counters' with `write_concurrency' (two calls on OTP 25, but
%%% one cell per scheduler, so recorders on different schedulers never
%%% share a cache line). P processes record 4 million values in all into
%%% one shared array, on one bucket (the worst case: every recorder on one
%%% cell) or spread over 2000 buckets (latencies of a few ms), then the
%%% whole exact record path, beamlab_stats_hist:record_list/2 of one value
%%% at a time (a producer's confirm, e.g. `amqp -x 15000'). Rounds
%%% alternate the forms; prints the median over 7 rounds of the VM's CPU
%%% time per value (all threads; schedulers do not busy-wait) and
%%% atomics / counters: contention shows as CPU time, a shared line's
%%% transfers, whatever else runs on the machine.
%%% On a machine with S cores at most S recorders run at once: the ratio
%%% at P >= S is what S-way contention costs here, not on a larger machine.
-mode(compile).

main(_) ->
    S = erlang:system_info(schedulers_online),
    N = 4000000,
    io:format("~b schedulers; ns of CPU per value, median of 7 rounds~n", [S]),
    io:format("~-10s ~-8s ~12s ~12s ~10s ~16s~n",
              ["values", "procs", "counters", "atomics", "ratio", "record_list/2"]),
    [row(Spread, P, N) || Spread <- [1, 2000], P <- lists:usort([1, S, 4 * S, 1000])],
    ok.

row(Spread, P, N) ->
    Vs = list_to_tuple([rand:uniform(Spread) || _ <- lists:seq(1, 1024)]),
    Per = P * (N div P),
    Rounds = [{ns(Per, fun() -> C = counters:new(Spread, [write_concurrency]),
                                par(P, N div P, fun(K) -> counters_loop(C, Vs, K) end) end),
               ns(Per, fun() -> A = atomics:new(Spread, [{signed, false}]),
                                par(P, N div P, fun(K) -> atomics_loop(A, Vs, K) end) end),
               ns(Per, fun() -> H = beamlab_stats_hist:new(#{}),
                                par(P, N div P, fun(K) -> hist_loop(H, Vs, K) end) end)}
              || _ <- lists:seq(1, 7)],
    Med = fun(I) -> lists:nth(4, lists:sort([element(I, R) || R <- Rounds])) end,
    {C, A, H} = {Med(1), Med(2), Med(3)},
    io:format("~-10s ~-8b ~12.1f ~12.1f ~10.2f ~16.1f~n",
              [case Spread of 1 -> "1 bucket"; _ -> integer_to_list(Spread) end, P, C, A, A / C, H]).

ns(Values, F) ->
    {Ms0, _} = erlang:statistics(runtime),
    ok = F(),
    {Ms1, _} = erlang:statistics(runtime),
    (Ms1 - Ms0) * 1.0e6 / Values.

%% P processes each running F(K), started together; returns when all ended.
par(P, K, F) ->
    Self = self(),
    Pids = [spawn_link(fun() -> receive go -> ok end, F(K), Self ! {done, self()} end)
            || _ <- lists:seq(1, P)],
    _ = [Pid ! go || Pid <- Pids],
    _ = [receive {done, Pid} -> ok end || Pid <- Pids],
    ok.

counters_loop(_C, _Vs, 0) -> ok;
counters_loop(C, Vs, K) ->
    counters:add(C, element((K band 1023) + 1, Vs), 1),
    counters_loop(C, Vs, K - 1).

atomics_loop(_A, _Vs, 0) -> ok;
atomics_loop(A, Vs, K) ->
    _ = atomics:add_get(A, element((K band 1023) + 1, Vs), 1),
    atomics_loop(A, Vs, K - 1).

%% Values in microseconds around 1 ms (the spread's buckets), one per list.
hist_loop(_H, _Vs, 0) -> ok;
hist_loop(H, Vs, K) ->
    ok = beamlab_stats_hist:record_list(H, [1000 + element((K band 1023) + 1, Vs)]),
    hist_loop(H, Vs, K - 1).
