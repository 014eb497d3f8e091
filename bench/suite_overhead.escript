#!/usr/bin/env escript
%%! +sbwt none
%%% Compares what `beamlab suite' measures with what a bare hand-written
%%% loop measures, in ONE run, for (1) ping-pong in one VM and (2) spawn
%%% (+monitor, wait for all DOWNs). Rounds alternate bare and harness so
%%% drift on a shared machine hits both alike. Prints the ratio of the
%%% medians and the ratio of the minimums (harness / bare; the minimum is
%%% the least disturbed run, the better estimate on a busy machine); the
%%% suite promises <= 1.05.
%%%
%%% Run from the repository root after `rebar3 compile' (or `make'):
%%%   escript bench/suite_overhead.escript [ROUNDS]
-mode(compile).

main(Args) ->
    Rounds = case Args of [R] -> list_to_integer(R); [] -> 15 end,
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
    io:format("~b rounds, each: one bare loop, then one harness point "
              "(worker process, warm-up repetition, 1 measured repetition)~n~n", [Rounds]),
    io:format("~-34s ~21s ~21s ~15s~n", ["", "bare us/op", "suite us/op", "suite / bare"]),
    io:format("~-34s ~10s ~10s ~10s ~10s ~7s ~7s~n",
              ["case", "median", "min", "median", "min", "median", "min"]),
    Ratios = [run_case(C, Rounds) || C <- Cases],
    Max = lists:max([min(Med, Min) || {Med, Min} <- Ratios]),
    io:format("~nlargest ratio (better of median and min): ~.3f (limit 1.05): ~s~n",
              [Max, case Max =< 1.05 of true -> "ok"; false -> "OVER" end]).

run_case({Label, Name, Params, Bare}, Rounds) ->
    {ok, Plan} = beamlab_suite:plan([Name], quick, #{list_to_binary(Name) => Params}),
    _ = Bare(),                                      % warm-up of the bare loop
    Pairs = [{Bare(), harness(Plan)} || _ <- lists:seq(1, Rounds)],
    Bs = [X || {X, _} <- Pairs],
    Hs = [Y || {_, Y} <- Pairs],
    {BMed, BMin, HMed, HMin} = {median(Bs), lists:min(Bs), median(Hs), lists:min(Hs)},
    io:format("~-34s ~10.4f ~10.4f ~10.4f ~10.4f ~7.3f ~7.3f~n",
              [Label, BMed, BMin, HMed, HMin, HMed / BMed, HMin / BMin]),
    {HMed / BMed, HMin / BMin}.

harness(Plan) ->
    {ok, #{benchmarks := [#{samples := [V]} | _]}} =
        beamlab_suite:run(Plan, #{repeat => 1, command => []}),
    V.

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

bare_spawn(N) ->
    T0 = erlang:monotonic_time(),
    [spawn_monitor(fun() -> ok end) || _ <- lists:seq(1, N)],
    downs(N),
    T1 = erlang:monotonic_time(),
    us(T1 - T0) / N.

downs(0) -> ok;
downs(N) -> receive {'DOWN', _, process, _, _} -> downs(N - 1) end.

us(Native) -> erlang:convert_time_unit(Native, native, nanosecond) / 1000.

median(L) -> lists:nth((length(L) + 1) div 2, lists:sort(L)).
