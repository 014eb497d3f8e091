#!/usr/bin/env escript
%%! -noinput
%%% What one interval of `beamlab watch' costs the watched node, at 10k and
%%% 100k processes: a fresh node (busy waiting off, so its schedulers are
%%% busy only while they work) holds N idle processes, and the built
%%% ./beamlab watches it for a while with --top 5 (the process tables) and
%%% with --top 0 (counters only), alternating. The node does nothing else,
%%% so its schedulers' busy time per interval (the watch's own series:
%%% scheduler_busy_cores x interval) is what the watch costs it. Prints the
%%% median per setting, the share of one core, the process reads (full
%%% scans and candidate reads) and the ratio top 5 / top 0.
%%%
%%%   make escript && bench/watch_cost.escript [SECONDS] [ROUNDS]
%%%   (BEAMLAB=path names another escript, e.g. a copy, so the tree can be
%%%   rebuilt while it runs)
-mode(compile).

main(Args) ->
    Root = filename:dirname(filename:dirname(filename:absname(escript:script_name()))),
    true = code:add_patha(filename:join([Root, "_build", "default", "lib", "beamlab", "ebin"])),
    {Seconds, Rounds} = case Args of
                            [] -> {10, 2};
                            [S] -> {list_to_integer(S), 2};
                            [S, R | _] -> {list_to_integer(S), list_to_integer(R)}
                        end,
    _ = os:cmd("epmd -address 127.0.0.1 -daemon"),
    io:format("load average before: ~ts", [os:cmd("cat /proc/loadavg")]),
    io:format("~8s ~5s ~14s ~12s ~10s ~14s ~10s~n",
              ["procs", "top", "busy ms/int", "core share", "mon %", "reads", "read ms"]),
    [measure(Root, N, Seconds, Rounds) || N <- [10000, 100000]],
    io:format("load average after: ~ts", [os:cmd("cat /proc/loadavg")]).

measure(Root, N, Seconds, Rounds) ->
    Cookie = "watch_cost_" ++ os:getpid(),
    {ok, Peer, Node} = peer:start(#{name => list_to_atom("watch_cost_" ++ integer_to_list(N)), longnames => true,
                                    host => "127.0.0.1", connection => standard_io,
                                    args => ["-setcookie", Cookie, "+P", "1000000",
                                             "+sbwt", "none", "+sbwtdcpu", "none", "+sbwtdio", "none"]}),
    try
        {ok, T, _} = erl_scan:string("lists:foreach(fun(_) -> erlang:spawn(timer, sleep, [infinity]) end,"
                                     " lists:seq(1, N)), ok."),
        {ok, E} = erl_parse:parse_exprs(T),
        {value, ok, _} = peer:call(Peer, erl_eval, exprs, [E, [{'N', N}]], 120000),
        Runs = [{Top, watch(Root, Node, Cookie, Top, Seconds)} || _ <- lists:seq(1, Rounds), Top <- [5, 0]],
        Med = fun(Top, K) -> median(lists:append([maps:get(K, R) || {Tp, R} <- Runs, Tp =:= Top])) end,
        [begin
             Busy = Med(Top, busy_ms),
             Reads = lists:append([maps:get(reads, R) || {Tp, R} <- Runs, Tp =:= Top]),
             io:format("~8b ~5b ~14.1f ~11.1f% ~10.2f ~14ts ~10ts~n",
                       [N, Top, Busy, Busy / 10, Med(Top, mon),
                        io_lib:format("~b full, ~b cand", [length([x || {full, _} <- Reads]),
                                                          length([x || {candidates, _} <- Reads])]),
                        case Reads of
                            [] -> "-";
                            _ -> io_lib:format("~.1f", [median([float(Ms) || {_, Ms} <- Reads])])
                        end])
         end || Top <- [5, 0]],
        io:format("~8b ratio busy top 5 / top 0: ~.2f~n", [N, Med(5, busy_ms) / max(0.001, Med(0, busy_ms))])
    after
        peer:stop(Peer)
    end.

%% One watch; per sample the node's busy ms in the interval, the watch's
%% own wall-time share (mon) and how it read the processes.
watch(Root, Node, Cookie, Top, Seconds) ->
    Escript = case os:getenv("BEAMLAB") of
                  false -> filename:join(Root, "beamlab");
                  "" -> filename:join(Root, "beamlab");
                  B -> B
              end,
    Cmd = io_lib:format("'~ts' watch --node ~ts --cookie ~ts --duration ~b --interval 1000 --top ~b "
                        "--no-system-monitor --format json 2>/dev/null",
                        [Escript, Node, Cookie, Seconds, Top]),
    {ok, Doc} = beamlab_json:decode(list_to_binary(os:cmd(lists:flatten(Cmd)))),
    T = maps:get(<<"telemetry">>, Doc),
    %% The first sample also holds the start's full read: left out.
    Tail = fun(K) -> tl(maps:get(K, T, [null])) end,
    Interval = maps:get(<<"interval_ms">>, T),
    #{busy_ms => [C * Interval || C <- Tail(<<"scheduler_busy_cores">>), is_number(C)],
      mon => [M || M <- Tail(<<"monitor_wall_pct">>), is_number(M)],
      reads => [{binary_to_atom(K), Ms} || #{<<"kind">> := K, <<"ms">> := Ms} <- Tail(<<"scan">>)]}.

median([]) -> 0.0;
median(L) ->
    S = lists:sort(L),
    lists:nth((length(S) + 1) div 2, S).
