#!/usr/bin/env escript
%%% What loading a side's code costs a fresh VM of `check --against' (#35),
%%% in one run: beamlab's own modules (beamlab checking itself, as
%%% scripts/bench-check.sh does), normalized (beamlab_project_code), loaded
%%% into a new VM one after the other in name order,
%%%
%%%   sent: the way before, the binaries sent over the VM's control
%%%         channel at its start (code:load_binary/3 in the VM);
%%%   read: the way now, written once into a directory and read by the
%%%         VM itself (beamlab_runtime_peer's `preload' of the copies);
%%%   bare: a VM started and stopped, no code given.
%%%
%%% Each round starts one VM each way, in an order rotated every round;
%%% the time is from the start to the VM ready (code loaded), the stop
%%% not counted. Prints the medians (p25..p75) and the medians of the
%%% per-round ratios read/sent and of the loading alone,
%%% (read - bare)/(sent - bare); the load average before and after.
%%% Usage (from the repository root, after `rebar3 compile'):
%%%   escript bench/check_preload.escript [Rounds]
-mode(compile).

main(Args) ->
    Rounds = case Args of
                 [] -> 10;
                 [R | _] -> list_to_integer(R)
             end,
    Root = filename:dirname(filename:dirname(filename:absname(escript:script_name()))),
    Ebin = filename:join([Root, "_build", "default", "lib", "beamlab", "ebin"]),
    true = code:add_patha(Ebin),
    Mods = beamlab_project_code:modules([Ebin], []),
    Dir = filename:join(os:getenv("TMPDIR", "/tmp"), "beamlab-check-preload-" ++ os:getpid()),
    {ok, Stored} = beamlab_runtime_peer:store(Mods, Dir),
    io:format("~b modules, ~.1f MB normalized; load average before: ~s~n",
              [length(Mods), lists:sum([byte_size(B) || {_, _, B} <- Mods]) / 1.0e6, loadavg()]),
    Ways = #{bare => fun() -> beamlab_runtime_peer:start(#{load => false}) end,
             sent => fun() -> sent(Mods) end,
             read => fun() -> beamlab_runtime_peer:start(#{load => false, preload => Stored}) end},
    Order = [bare, sent, read],
    Times = [begin
                 Rot = lists:nthtail(I rem 3, Order) ++ lists:sublist(Order, I rem 3),
                 maps:from_list([{W, time(maps:get(W, Ways))} || W <- Rot])
             end || I <- lists:seq(1, Rounds)],
    ok = file:del_dir_r(Dir),
    io:format("load average after: ~s~n", [loadavg()]),
    [io:format("~s: median ~b ms (~b..~b) a VM started and given the code~n",
               [W, median(V), pct(V, 25), pct(V, 75)])
     || W <- Order, V <- [[maps:get(W, T) || T <- Times]]],
    Ratio = [maps:get(read, T) / maps:get(sent, T) || T <- Times],
    Loading = [(maps:get(read, T) - maps:get(bare, T)) / max(1, maps:get(sent, T) - maps:get(bare, T)) || T <- Times],
    io:format("read/sent: median ~.2f per round; loading alone (read - bare)/(sent - bare): median ~.2f (~b rounds)~n",
              [median(Ratio), median(Loading), Rounds]).

%% The way before: a VM started, then the binaries sent in one call.
sent(Mods) ->
    {ok, Vm} = beamlab_runtime_peer:start(#{load => false}),
    {Names, Files, Bins} = lists:unzip3(Mods),
    _ = beamlab_runtime_peer:call(Vm, lists, zipwith3, [fun code:load_binary/3, Names, Files, Bins], 600000),
    {ok, Vm}.

time(Start) ->
    T0 = erlang:monotonic_time(millisecond),
    {ok, Vm} = Start(),
    T = erlang:monotonic_time(millisecond) - T0,
    beamlab_runtime_peer:stop(Vm),
    T.

median(L) -> pct(L, 50).

pct(L, P) ->
    S = lists:sort(L),
    lists:nth(max(1, round(P / 100 * length(S))), S).

loadavg() ->
    {ok, B} = file:read_file("/proc/loadavg"),
    lists:join(" ", lists:sublist(string:lexemes(binary_to_list(B), " "), 3)).
