#!/usr/bin/env escript
%%% What profiling costs the profiled code, in ONE run: the throughput of
%%% `rand:uniform()' (`beamlab run') and the goodput of the message-load
%%% workload (`beamlab suite message_load') measured five ways, rounds
%%% rotating the order so a shared machine's drift hits all alike:
%%%   plain     ./beamlab ...                            (no perf support)
%%%   jpperf    ERL_FLAGS='+JPperf true' ./beamlab ...   (frame pointers + perf map, no perf)
%%%   profile   ./beamlab profile -- ...                 (graph mode: +JPperf true, perf record -g at 999 Hz)
%%%   jpmap     ERL_FLAGS='+JPperf map' ./beamlab ...    (perf map only, no frame pointers, no perf)
%%%   flat      ./beamlab profile --mode flat -- ...     (flat mode: +JPperf map, perf record at 999 Hz)
%%% Prints the median of each, the ratios to plain (1.00 = no cost) and
%%% the load average before and after.
%%%
%%% Run from the repository root after `make' (perf needs root or
%%% kernel.perf_event_paranoid <= 1):
%%%   escript bench/profile_overhead.escript [ROUNDS]
-mode(compile).

main(Args) ->
    Rounds = case Args of [R] -> list_to_integer(R); [] -> 5 end,
    Root = filename:dirname(filename:dirname(filename:absname(escript:script_name()))),
    true = code:add_patha(filename:join(Root, "_build/default/lib/beamlab/ebin")),
    Beamlab = filename:join(Root, "beamlab"),
    Cases = [{"rand:uniform() (run, ops/s)", ["run", "rand:uniform().", "-s", "5"], <<"rand:uniform().">>},
             {"message_load goodput (suite, msg/s)", ["suite", "message_load", "-n", "3"], <<"message_load">>}],
    io:format("~b rounds per case; each round runs the five ways in rotating order.~n"
              "load average before: ~ts~n~n", [Rounds, loadavg()]),
    io:format("~-38s ~9s ~9s ~9s ~9s ~9s ~9s ~9s ~9s ~9s~n",
              ["case", "plain", "jpperf", "profile", "jpmap", "flat",
               "jp/plain", "prof/pl", "map/pl", "flat/pl"]),
    [run_case(Beamlab, C, Rounds) || C <- Cases],
    io:format("~nload average after: ~ts~n", [loadavg()]),
    ok.

loadavg() ->
    {ok, B} = file:read_file("/proc/loadavg"),
    lists:join(" ", lists:sublist(string:lexemes(binary_to_list(B), " "), 3)).

run_case(Beamlab, {Label, Argv, Bench}, Rounds) ->
    Ways = [plain, jpperf, profile, jpmap, flat],
    Results = [begin
                   Order = rotate(Ways, I rem length(Ways)),
                   maps:from_list([{W, measure(Beamlab, W, Argv, Bench)} || W <- Order])
               end || I <- lists:seq(1, Rounds)],
    Med = fun(W) -> median([maps:get(W, R) || R <- Results]) end,
    [P, J, F, M, Fl] = [Med(W) || W <- Ways],
    io:format("~-38s ~9s ~9s ~9s ~9s ~9s ~9.3f ~9.3f ~9.3f ~9.3f~n",
              [Label, fmt(P), fmt(J), fmt(F), fmt(M), fmt(Fl), J / P, F / P, M / P, Fl / P]).

rotate(L, 0) -> L;
rotate([H | T], N) -> rotate(T ++ [H], N - 1).

measure(Beamlab, Way, Argv, Bench) ->
    {Cmd, Env} = case Way of
                     plain -> {[Beamlab | Argv] ++ ["--format", "json"], []};
                     jpperf -> {[Beamlab | Argv] ++ ["--format", "json"], [{"ERL_FLAGS", "+JPperf true"}]};
                     profile -> {[Beamlab, "profile", "--format", "json", "--" | Argv], []};
                     jpmap -> {[Beamlab | Argv] ++ ["--format", "json"], [{"ERL_FLAGS", "+JPperf map"}]};
                     flat -> {[Beamlab, "profile", "--mode", "flat", "--format", "json", "--" | Argv], []}
                 end,
    %% `escript beamlab' (not the launcher line of ./beamlab): the port's
    %% OS pid is then the VM's.
    Out = run([os:find_executable("escript") | Cmd], Env),
    {ok, J} = beamlab_json:decode(Out),
    {ok, Doc} = beamlab_result:from_json(J),
    [Mean] = [maps:get(mean, S) || #{name := N, stats := S} <- maps:get(benchmarks, Doc), N =:= Bench],
    Mean.

run([Exe | Args], Env) ->
    Port = open_port({spawn_executable, Exe}, [{args, Args}, {env, Env}, binary, exit_status]),
    {os_pid, Pid} = erlang:port_info(Port, os_pid),
    try collect(Port, [])
    after
        %% +JPperf true leaves the VM's perf map and jitdump behind.
        _ = file:delete("/tmp/perf-" ++ integer_to_list(Pid) ++ ".map"),
        _ = file:delete("/tmp/jit-" ++ integer_to_list(Pid) ++ ".dump")
    end.

collect(Port, Acc) ->
    receive
        {Port, {data, D}} -> collect(Port, [Acc, D]);
        {Port, {exit_status, 0}} -> iolist_to_binary(Acc);
        {Port, {exit_status, S}} -> error({exit_status, S})
    end.

median(L) ->
    S = lists:sort(L),
    N = length(S),
    case N rem 2 of
        1 -> lists:nth(N div 2 + 1, S);
        0 -> (lists:nth(N div 2, S) + lists:nth(N div 2 + 1, S)) / 2
    end.

fmt(V) when V >= 1.0e6 -> io_lib:format("~.2fM", [V / 1.0e6]);
fmt(V) when V >= 1.0e3 -> io_lib:format("~.1fk", [V / 1.0e3]);
fmt(V) -> io_lib:format("~.2f", [V]).
