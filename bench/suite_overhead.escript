#!/usr/bin/env escript
%%! +sbwt none
%%% Compares what `beamlab suite' measures with what a bare hand-written
%%% loop measures, in ONE run, for (1) ping-pong in one VM and (2) spawn
%%% (+monitor, wait for all DOWNs). Rounds alternate bare and harness so
%%% drift on a shared machine hits both alike. Prints the ratio of the
%%% medians, of the minimums (the least disturbed runs) and the median of
%%% the per-round ratios (the two measured back to back, so they share the
%%% machine's load at that moment); the suite promises <= 1.05.
%%%
%%% Run from the repository root after `rebar3 compile' (or `make'):
%%%   escript bench/suite_overhead.escript [ROUNDS]
-mode(compile).

main(Args) ->
    Rounds = case Args of [R] -> list_to_integer(R); [] -> 31 end,
    Root = filename:dirname(filename:dirname(filename:absname(escript:script_name()))),
    true = code:add_patha(filename:join(Root, "_build/default/lib/beamlab/ebin")),
    {module, _} = code:ensure_loaded(beamlab_suite),
    PingN = 50000,
    SpawnN = 20000,
    Cases = [{"ping_pong (size=0, list, one VM)", "ping_pong",
              #{size => ["0"], payload => ["list"], n => [integer_to_list(PingN)]},
              fun() -> bare_ping_pong(PingN) end},
             {"spawn (monitor, wait for all)", "spawn",
              #{variant => ["monitor"], n => [integer_to_list(SpawnN)]},
              fun() -> bare_spawn(SpawnN) end}],
    io:format("~b rounds, each in alternating order: the bare loop twice in a fresh "
              "process (the second one counts) and one harness point (worker process, "
              "warm-up repetition, 1 measured repetition)~n~n", [Rounds]),
    io:format("~-34s ~21s ~21s ~23s~n", ["", "bare us/op", "suite us/op", "suite / bare"]),
    io:format("~-34s ~10s ~10s ~10s ~10s ~7s ~7s ~7s~n",
              ["case", "median", "min", "median", "min", "medians", "mins", "paired"]),
    Ratios = [run_case(C, Rounds) || C <- Cases],
    Max = lists:max(Ratios),
    io:format("~npaired = median over rounds of (suite / bare) measured back to back.~n"
              "largest paired ratio: ~.3f (limit 1.05): ~s~n",
              [Max, case Max =< 1.05 of true -> "ok"; false -> "OVER" end]).

run_case({Label, Name, Params, Bare}, Rounds) ->
    {ok, Plan} = beamlab_suite:plan([Name], quick, #{list_to_binary(Name) => Params}),
    %% Like the harness, the bare side runs its loop twice per round and
    %% keeps the second: back-to-back repetitions of spawn-heavy loops are
    %% slower than isolated ones (the previous batch's processes are still
    %% being freed), and both sides must see the same sequence.
    BareRound = fun() -> in_fresh_process(fun() -> _ = Bare(), Bare() end) end,
    %% Alternate which goes first, so order effects cancel out.
    Pairs = [case I rem 2 of
                 0 -> B = BareRound(), {B, harness(Plan)};
                 1 -> H = harness(Plan), {BareRound(), H}
             end || I <- lists:seq(1, Rounds)],
    Bs = [X || {X, _} <- Pairs],
    Hs = [Y || {_, Y} <- Pairs],
    Paired = median([Y / X || {X, Y} <- Pairs]),
    io:format("~-34s ~10.4f ~10.4f ~10.4f ~10.4f ~7.3f ~7.3f ~7.3f~n",
              [Label, median(Bs), lists:min(Bs), median(Hs), lists:min(Hs),
               median(Hs) / median(Bs), lists:min(Hs) / lists:min(Bs), Paired]),
    Paired.

harness(Plan) ->
    {ok, #{benchmarks := [#{samples := [V]} | _]}} =
        beamlab_suite:run(Plan, #{repeat => 1, command => []}),
    V.

%% A fresh process, as the harness's worker is: a long-lived process (this
%% script's main, a shell) with a grown heap measures spawn up to 30% faster,
%% because a fresh process's first garbage collections copy the growing
%% mailbox of DOWN messages again and again. That is the process, not the
%% harness, so both sides get a fresh one.
in_fresh_process(F) ->
    Self = self(),
    {Pid, MRef} = spawn_monitor(fun() -> Self ! {self(), F()} end),
    receive {Pid, V} -> erlang:demonitor(MRef, [flush]), V end.

%% The bare loops: what someone would write by hand, timed the same way.
bare_ping_pong(N) ->
    Ponger = spawn_link(fun pong/0),
    T0 = erlang:monotonic_time(),
    ping(Ponger, [], N),
    T1 = erlang:monotonic_time(),
    Ponger ! stop,
    us(T1 - T0) / N.

ping(_, _, 0) -> ok;
ping(P, Msg, N) -> P ! {self(), Msg}, receive {pong, _} -> ping(P, Msg, N - 1) end.

pong() -> receive {From, M} -> From ! {pong, M}, pong(); stop -> ok end.

%% The same loop as beamlab_workload_spawn's monitor variant (a list
%% comprehension would grow the heap and change what is measured).
bare_spawn(N) ->
    Child = fun() -> ok end,
    T0 = erlang:monotonic_time(),
    spawn_n(Child, N),
    downs(N),
    T1 = erlang:monotonic_time(),
    us(T1 - T0) / N.

spawn_n(_F, 0) -> ok;
spawn_n(F, N) -> _ = spawn_monitor(F), spawn_n(F, N - 1).

downs(0) -> ok;
downs(N) -> receive {'DOWN', _, process, _, _} -> downs(N - 1) end.

us(Native) -> erlang:convert_time_unit(Native, native, nanosecond) / 1000.

median(L) -> lists:nth((length(L) + 1) div 2, lists:sort(L)).
