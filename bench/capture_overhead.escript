#!/usr/bin/env escript
%%% What `beamlab profile --node N --process P' (call capture, #36) costs
%%% the captured process, and how its call table compares with OTP 27's
%%% tprof run on the node itself, in ONE run. A node (OTP 27 from
%%% /opt/beamlab-otp/27 when installed, for tprof; else `erl') runs three
%%% victims (bench/capture_bench_victim.erl, loaded by this script): a
%%% tight loop (`hot', 1000 calls of spin/2 an iteration), a deep chain
%%% (`deep': d1 > ... > d6 > leaf_loop(2000)) and a server-like process
%%% whose work is in BIFs (`busy'). For each victim, rounds rotate the
%%% ways: untraced, `--calls none' (stack samples only), `--calls time'
%%% (call_time counters + stack samples) and, on OTP 27, tprof on the
%%% node; each way's throughput (iterations/s, read from the victim's
%%% counter over 1.5 s while the capture runs) is printed as a median and
%%% as a ratio to untraced. Then, for `hot' and `deep', the top function's
%%% share of own time and the calls ratio leaf_loop/d1 from beamlab's
%%% table against tprof's.
%%%
%%% Run from the repository root after `make':
%%%   escript bench/capture_overhead.escript [ROUNDS]
-mode(compile).

-define(WINDOW, 1500).

main(Args) ->
    Rounds = case Args of [R] -> list_to_integer(R); [] -> 3 end,
    Root = filename:dirname(filename:dirname(filename:absname(escript:script_name()))),
    Beamlab = filename:join(Root, "beamlab"),
    Erl = case filelib:is_regular("/opt/beamlab-otp/27/bin/erl") of
              true -> "/opt/beamlab-otp/27/bin/erl";
              false -> os:find_executable("erl")
          end,
    {ok, Host} = inet:gethostname(),
    Cookie = "capture_bench_" ++ integer_to_list(erlang:unique_integer([positive])),
    {ok, _} = net_kernel:start([list_to_atom("capbench_ctl_" ++ os:getpid()), shortnames]),
    erlang:set_cookie(node(), list_to_atom(Cookie)),
    NodeName = "capbench_" ++ os:getpid(),
    Node = list_to_atom(NodeName ++ "@" ++ Host),
    %% (the escript's own start must not reach the node's erl)
    Env = [{V, false} || V <- ["ESCRIPT_NAME", "ROOTDIR", "BINDIR", "EMU", "PROGNAME"]],
    Port = open_port({spawn_executable, Erl}, [{args, ["-sname", NodeName, "-setcookie", Cookie, "-noshell"]},
                                               {env, Env}, exit_status]),
    ok = wait_up(Node, 100),
    Otp = erpc:call(Node, erlang, system_info, [otp_release]),
    Src = filename:join(Root, "bench/capture_bench_victim.erl"),
    {ok, Mod, Bin} = erpc:call(Node, compile, file, [Src, [binary, report]]),
    {module, Mod} = erpc:call(Node, code, load_binary, [Mod, Src, Bin]),
    ok = erpc:call(Node, capture_bench_victim, start, []),
    Tprof = Otp >= "27",
    io:format("node ~s on OTP ~s (~s); ~b rounds, ways in rotating order, ~b ms windows~n"
              "load average before: ~ts~n~n", [Node, Otp, Erl, Rounds, ?WINDOW, loadavg()]),
    Ways = [untraced, none, time] ++ [tprof || Tprof],
    io:format("~-8s ~12s ~12s ~12s ~12s ~9s ~9s ~9s~n",
              ["victim", "untraced", "calls none", "calls time", "tprof", "none/un", "time/un", "tprof/un"]),
    Tables = [victim(Beamlab, Node, Cookie, V, Ways, Rounds) || V <- [bench_hot, bench_deep, bench_busy]],
    io:format("~ncall tables (last round), beamlab --calls time against tprof on the node:~n"),
    [compare(V, T) || {V, T} <- Tables, V =/= bench_busy],
    io:format("~nload average after: ~ts~n", [loadavg()]),
    catch erpc:call(Node, init, stop, []),
    receive {Port, {exit_status, _}} -> ok after 10000 -> ok end.

wait_up(_Node, 0) -> error(node_not_up);
wait_up(Node, N) ->
    case net_adm:ping(Node) of
        pong -> ok;
        pang -> timer:sleep(100), wait_up(Node, N - 1)
    end.

loadavg() ->
    {ok, B} = file:read_file("/proc/loadavg"),
    lists:join(" ", lists:sublist(string:lexemes(binary_to_list(B), " "), 3)).

victim(Beamlab, Node, Cookie, V, Ways, Rounds) ->
    Res = lists:foldl(
            fun(R, Acc) ->
                    Order = rotate(Ways, R),
                    lists:foldl(fun(W, A) ->
                                        {Rate, Table} = way(Beamlab, Node, Cookie, V, W),
                                        A#{W => [Rate | maps:get(W, A, [])], {table, W} => Table}
                                end, Acc, Order)
            end, #{}, lists:seq(0, Rounds - 1)),
    Med = fun(W) -> case maps:get(W, Res, []) of [] -> undefined; L -> median(L) end end,
    U = Med(untraced),
    Ratio = fun(W) -> case Med(W) of undefined -> "-"; X -> io_lib:format("~.3f", [X / U]) end end,
    Fmt = fun(undefined) -> "-"; (X) -> io_lib:format("~.1f", [X]) end,
    io:format("~-8s ~12s ~12s ~12s ~12s ~9s ~9s ~9s~n",
              [atom_to_list(V) -- "bench_", Fmt(U), Fmt(Med(none)), Fmt(Med(time)), Fmt(Med(tprof)),
               Ratio(none), Ratio(time), Ratio(tprof)]),
    {V, #{time => maps:get({table, time}, Res, []), tprof => maps:get({table, tprof}, Res, [])}}.

rotate(L, 0) -> L;
rotate([H | T], N) -> rotate(T ++ [H], N - 1).

median(L) ->
    S = lists:sort(L),
    N = length(S),
    case N rem 2 of
        1 -> lists:nth(N div 2 + 1, S);
        0 -> (lists:nth(N div 2, S) + lists:nth(N div 2 + 1, S)) / 2
    end.

counter(Node, V) ->
    erpc:call(Node, atomics, get, [erpc:call(Node, persistent_term, get, [capture_bench_counter]),
                                   erpc:call(Node, capture_bench_victim, slot, [V])]).

rate(Node, V) ->
    A = counter(Node, V),
    T0 = erlang:monotonic_time(millisecond),
    timer:sleep(?WINDOW),
    B = counter(Node, V),
    (B - A) * 1000 / (erlang:monotonic_time(millisecond) - T0).

way(_Beamlab, Node, _Cookie, V, untraced) ->
    {rate(Node, V), []};
way(_Beamlab, Node, _Cookie, V, tprof) ->
    {Rate, Total, Lines} = erpc:call(Node, capture_bench_victim, tprof_run, [V, ?WINDOW], 60000),
    {Rate, [{F, C, T / max(1, Total)} || {F, C, T} <- Lines]};
way(Beamlab, Node, Cookie, V, Calls) ->
    Out = filename:join("/tmp", "capbench-" ++ os:getpid() ++ ".json"),
    _ = file:delete(Out),
    %% (setsid: the launcher signals its process group when it ends)
    Cmd = lists:flatten(io_lib:format("setsid ~s profile --node ~s --cookie ~s --process ~s --duration 4 --calls ~s "
                                      "--format json > ~s 2>/dev/null",
                                      [Beamlab, Node, Cookie, V, Calls, Out])),
    Self = self(),
    spawn_link(fun() -> _ = os:cmd(Cmd), Self ! cli_done end),
    ok = wait_capturing(Node, 200),
    Rate = rate(Node, V),
    receive cli_done -> ok after 60000 -> error(cli_timeout) end,
    {ok, J} = file:read_file(Out),
    ok = file:delete(Out),
    Table = case re:run(J, "\"calls\":\\[(.*?)\\],\"calls_mode\"", [{capture, all_but_first, binary}]) of
                {match, [Calls0]} -> parse_calls(Calls0);
                nomatch -> []
            end,
    {Rate, Table}.

%% The capture's tracer is on the node (an erl_eval process): the
%% capture runs.
wait_capturing(_Node, 0) -> error(capture_never_started);
wait_capturing(Node, N) ->
    Agents = [P || P <- erpc:call(Node, erlang, processes, []),
                   erpc:call(Node, erlang, process_info, [P, initial_call]) =:= {initial_call, {erl_eval, exprs, 2}}],
    case Agents of
        [] -> timer:sleep(50), wait_capturing(Node, N - 1);
        _ -> timer:sleep(300), ok   % past the untraced window it measures first
    end.

%% Function, calls and own share of each row of the document's table.
parse_calls(Text) ->
    Rows = re:run(Text, "\\{\"calls\":([0-9]+),\"function\":\"([^\"]+)\",[^}]*\"own_share\":([-0-9.e]+)",
                  [global, {capture, all_but_first, binary}]),
    case Rows of
        {match, L} -> [{F, binary_to_integer(C), binary_to_number(S)} || [C, F, S] <- L];
        nomatch -> []
    end.

binary_to_number(B) ->
    try binary_to_float(B) catch error:badarg -> float(binary_to_integer(B)) end.

compare(V, #{time := Time, tprof := Tprof}) ->
    Top = fun([]) -> {"-", 0, 0.0}; (L) -> hd(lists:reverse(lists:keysort(3, L))) end,
    {F1, _, S1} = Top(Time),
    {F2, _, S2} = Top(Tprof),
    io:format("  ~s: top by own time: beamlab ~s ~.1f%, tprof ~s ~.1f%~n", [V, F1, S1 * 100, F2, S2 * 100]),
    case V of
        bench_deep ->
            Ratio = fun(L) ->
                            Get = fun(F) -> case lists:keyfind(F, 1, L) of {_, C, _} -> C; false -> 0 end end,
                            Get(<<"capture_bench_victim:leaf_loop/2">>) / max(1, Get(<<"capture_bench_victim:d1/0">>))
                    end,
            io:format("  bench_deep: calls leaf_loop/2 per d1/0 call: beamlab ~.1f, tprof ~.1f (2001 by construction)~n",
                      [Ratio(Time), Ratio(Tprof)]);
        _ -> ok
    end.
