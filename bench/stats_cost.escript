#!/usr/bin/env escript
%%! -pa _build/default/lib/beamlab/ebin
%%% Cost of the statistics hot paths, measured in one run (run from the
%%% repository root after `rebar3 compile`):
%%%   beamlab_stats_hist:record/2 and record_list/2 vs a bare counters:add/3
%%%   (the floor),
%%%   beamlab_stats_reservoir:add/2, beamlab_stats:summary/1.
%%% Prints absolute times for this machine and the ratio to the floor;
%%% nothing here is asserted (machines are noisy).
-mode(compile).

main(_) ->
    N = 1000000,
    Vals = list_to_tuple([rand:uniform(1 bsl 30) || _ <- lists:seq(1, 1024)]),
    C = counters:new(1, [write_concurrency]),
    Floor = per_op(N, fun() -> bare(C, Vals, N) end),
    H = beamlab_stats_hist:new(#{significant_digits => 3}),
    Hist = per_op(N, fun() -> hist(H, Vals, N) end),
    Par = per_op(N, fun() -> parallel(H, Vals, N, erlang:system_info(schedulers_online)) end),
    HI = beamlab_stats_hist:new(#{significant_digits => 3, exact => false}),
    Inexact = per_op(N, fun() -> hist(HI, Vals, N) end),
    Batch = [element(I, Vals) || I <- lists:seq(1, 100)],
    List = per_op(N, fun() -> batches(H, Batch, N div 100) end),
    R = per_op(N div 4, fun() -> res(beamlab_stats_reservoir:new(1000, #{seed => 1}), N div 4) end),
    Xs = [float(rand:uniform(100000)) || _ <- lists:seq(1, 100000)],
    Sum = per_op(1, fun() -> beamlab_stats:summary(Xs) end),
    io:format("counters:add (floor)          ~7.1f ns/op~n", [Floor]),
    io:format("hist record, 1 process        ~7.1f ns/op  (~.1fx floor)~n", [Hist, Hist / Floor]),
    io:format("hist record, exact => false   ~7.1f ns/op  (~.1fx floor)~n", [Inexact, Inexact / Floor]),
    io:format("hist record, all schedulers   ~7.1f ns/op wall per record~n", [Par]),
    io:format("hist record_list, batch 100   ~7.1f ns/op  (~.1fx floor)~n", [List, List / Floor]),
    io:format("reservoir add (cap 1000)      ~7.1f ns/op~n", [R]),
    io:format("summary of 100000 samples     ~7.1f ms~n", [Sum / 1.0e6]).

per_op(N, F) ->
    T0 = erlang:monotonic_time(nanosecond),
    _ = F(),
    (erlang:monotonic_time(nanosecond) - T0) / N.

bare(_C, _V, 0) -> ok;
bare(C, V, N) -> counters:add(C, 1, element(N band 1023 + 1, V)), bare(C, V, N - 1).

hist(_H, _V, 0) -> ok;
hist(H, V, N) -> beamlab_stats_hist:record(H, element(N band 1023 + 1, V)), hist(H, V, N - 1).

batches(_H, _B, 0) -> ok;
batches(H, B, K) -> beamlab_stats_hist:record_list(H, B), batches(H, B, K - 1).

parallel(H, V, N, P) ->
    Self = self(),
    Pids = [spawn_link(fun() -> hist(H, V, N div P), Self ! {done, self()} end)
            || _ <- lists:seq(1, P)],
    [receive {done, Pid} -> ok end || Pid <- Pids].

res(R, 0) -> R;
res(R, N) -> res(beamlab_stats_reservoir:add(R, N), N - 1).
