#!/usr/bin/env escript
%%% What `beamlab profile --node N --process P' (call capture, #36) costs
%%% the captured process, and how its call table compares with OTP 27's
%%% tprof run on the node itself, in ONE run. A node (OTP 27 from
%%% /opt/beamlab-otp/27 when installed, for tprof; else `erl') runs three
%%% victims (bench/capture_bench_victim.erl, loaded by this script): a
%%% tight loop (`hot', 1000 calls of spin/2 an iteration), a deep chain
%%% (`deep': d1 > ... > d6 > leaf_loop(2000)) and a gen_server a client
%%% calls in a loop, each request a few microseconds of ordinary work
%%% (`busy'). For each victim, rounds rotate the ways: untraced, `--calls
%%% none' (stack samples only), `--calls time --duty 100' (full: call_time
%%% counters on every function all along + stack samples), `--calls time'
%%% (the default: duty-cycled, the patterns on the process's own modules
%%% 5% of the time, counts scaled), `--calls time --patterns all'
%%% (duty-cycled, on every function) and, on OTP 27, tprof on the node, with its
%%% patterns on every function and on the own modules only (eprof on older
%%% releases); each way's throughput (iterations/s, read from the
%%% victim's counter over 1.5 s while the capture runs) is printed as a
%%% median and as a ratio to untraced, with the node's memory growth while
%%% captured. Then, for `hot', `deep' and `busy', per function of the
%%% in-node anchor's table: the share of calls and of own time in the
%%% duty-cycled table, the full one and the anchor's, as ratios, and the
%%% calls per second (scaled ones for the duty cycle) against the full
%%% capture's; and the hot path of beamlab's flame graph (the heaviest
%%% child from the root, over the stack samples) against fprof's (the
%%% callee with the most accumulated time, from the analysis of fprof run
%%% on the node).
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
    code:add_pathz(filename:join(Root, "_build/default/lib/beamlab/ebin")),
    io:format("node ~s on OTP ~s (~s); ~b rounds, ways in rotating order, ~b ms windows~n"
              "load average before: ~ts~n~n", [Node, Otp, Erl, Rounds, ?WINDOW, loadavg()]),
    Anchor = case Tprof of true -> tprof; false -> eprof end,
    %% (tprof_own: tprof with the duty cycle's patterns, the process's own
    %% modules: the anchor for the duty cycle's windows alone)
    Ways = [untraced, none, time, duty, duty_all] ++ [tprof_own || Tprof] ++ [Anchor],
    io:format("~-6s ~10s ~10s ~10s ~10s ~10s ~10s ~8s ~8s ~8s ~8s ~8s  ~s~n",
              ["victim", "untraced", "stacks", "full time", "duty", "duty all", Anchor, "stacks", "full",
               "duty", "duty all", Anchor, "node memory growth (MiB: stacks, full, duty, duty all)"]),
    Tables = [victim(Beamlab, Node, Cookie, V, Ways, Rounds) || V <- [bench_hot, bench_deep, bench_busy]],
    io:format("~ncall tables (last round), per function of the in-node anchor's top 6 among the duty-cycled "
              "table's functions: the duty-cycled capture (default: own modules) against ~s on the node with "
              "the same patterns (tprof_own: the process's own modules; ~s if none), `--patterns all' "
              "duty-cycled against ~s on every function, the full capture (--duty 100) against ~s (share of "
              "calls % among those functions; share of own time % of each table's whole; calls per second, "
              "scaled for the duty cycle, duty/full):~n",
              [Anchor, Anchor, Anchor, Anchor]),
    [compare(V, T, Anchor) || {V, T} <- Tables],
    io:format("~nhot paths: beamlab's flame graph (stack samples) against fprof on the node:~n"),
    [hot_path(Beamlab, Node, Cookie, V) || V <- [bench_hot, bench_deep, bench_busy]],
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
    %% The other victims are suspended meanwhile: on two schedulers, a
    %% gen_server and its client beside two spinning loops ran at rates
    %% that depended on where the schedulers put them (124 to 46760 calls
    %% a second untraced).
    Others = [erpc:call(Node, erlang, whereis, [O]) || O <- [bench_hot, bench_deep, bench_busy, bench_busy_client],
                                                      O =/= V, not (V =:= bench_busy andalso O =:= bench_busy_client)],
    Holder = erpc:call(Node, capture_bench_victim, suspend, [Others]),
    try victim_rounds(Beamlab, Node, Cookie, V, Ways, Rounds)
    after Holder ! resume
    end.

victim_rounds(Beamlab, Node, Cookie, V, Ways, Rounds) ->
    Res = lists:foldl(
            fun(R, Acc) ->
                    Order = rotate(Ways, R),
                    lists:foldl(fun(W, A) ->
                                        {Rate, Table, Mem, Sampled} = way(Beamlab, Node, Cookie, V, W),
                                        A#{W => [Rate | maps:get(W, A, [])], {table, W} => Table,
                                           {sampled, W} => Sampled,
                                           {mem, W} => [Mem | maps:get({mem, W}, A, [])]}
                                end, Acc, Order)
            end, #{}, lists:seq(0, Rounds - 1)),
    Med = fun(W) -> case maps:get(W, Res, []) of [] -> undefined; L -> median(L) end end,
    U = Med(untraced),
    Ratio = fun(W) -> case Med(W) of undefined -> "-"; X -> io_lib:format("~.3f", [X / U]) end end,
    Fmt = fun(undefined) -> "-"; (X) -> io_lib:format("~.1f", [X]) end,
    Anchor = lists:last(Ways),
    MemMed = fun(W) -> case [M || M <- maps:get({mem, W}, Res, []), is_number(M)] of
                           [] -> "-";
                           Ms -> io_lib:format("~.1f", [median(Ms) / 1048576])
                       end
             end,
    io:format("~-6s ~10s ~10s ~10s ~10s ~10s ~10s ~8s ~8s ~8s ~8s ~8s  ~s, ~s, ~s, ~s~n",
              [atom_to_list(V) -- "bench_", Fmt(U), Fmt(Med(none)), Fmt(Med(time)), Fmt(Med(duty)),
               Fmt(Med(duty_all)), Fmt(Med(Anchor)), Ratio(none), Ratio(time), Ratio(duty), Ratio(duty_all),
               Ratio(Anchor), MemMed(none), MemMed(time), MemMed(duty), MemMed(duty_all)]),
    Table = fun(W) -> maps:get({table, W}, Res, {1, []}) end,
    {V, #{time => Table(time), duty => Table(duty), duty_all => Table(duty_all), anchor => Table(Anchor),
          anchor_own => case lists:member(tprof_own, Ways) of true -> Table(tprof_own); false -> Table(Anchor) end,
          sampled => maps:get({sampled, duty}, Res, null)}}.

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
    {rate(Node, V), {1, []}, none, null};
way(_Beamlab, Node, _Cookie, V, tprof_own) ->
    {Rate, Total, Lines} = erpc:call(Node, capture_bench_victim, tprof, [V, ?WINDOW, own], 60000),
    {Rate, {?WINDOW, [{F, C, T / max(1, Total)} || {F, C, T} <- Lines]}, none, null};
way(_Beamlab, Node, _Cookie, V, Anchor) when Anchor =:= tprof; Anchor =:= eprof ->
    {Rate, Total, Lines} = erpc:call(Node, capture_bench_victim, Anchor, [V, ?WINDOW], 60000),
    {Rate, {?WINDOW, [{F, C, T / max(1, Total)} || {F, C, T} <- Lines]}, none, null};
way(Beamlab, Node, Cookie, V, Way) ->
    {ok, #{<<"extra">> := #{<<"capture">> := Cap}}, Rate} = capture(Beamlab, Node, Cookie, V, Way, true),
    Table = [{F, C, S} || #{<<"function">> := F, <<"calls">> := C, <<"own_share">> := S} <- maps:get(<<"calls">>, Cap)],
    Mem = case maps:get(<<"cost">>, Cap) of
              #{<<"node_memory_before">> := A, <<"node_memory_after">> := B} when is_integer(A), is_integer(B) -> B - A;
              _ -> none
          end,
    {Rate, {max(1, maps:get(<<"elapsed_ms">>, Cap)), Table}, Mem, maps:get(<<"sampled">>, Cap, null)}.

%% One `beamlab profile --node --process' run, its document and (when
%% `Measure') the victim's throughput while it captured.
capture(Beamlab, Node, Cookie, V, Way, Measure) ->
    Calls = case Way of
                none -> "none";
                time -> "time --duty 100";
                duty -> "time";
                duty_all -> "time --patterns all"
            end,
    Out = filename:join("/tmp", "capbench-" ++ os:getpid() ++ ".json"),
    _ = file:delete(Out),
    %% (setsid: the launcher signals its process group when it ends)
    Cmd = lists:flatten(io_lib:format("setsid ~s profile --node ~s --cookie ~s --process ~s --duration 4 --calls ~s "
                                      "--format json > ~s 2>/dev/null",
                                      [Beamlab, Node, Cookie, V, Calls, Out])),
    Self = self(),
    spawn_link(fun() -> _ = os:cmd(Cmd), Self ! cli_done end),
    Rate = case Measure of
               true -> ok = wait_capturing(Node, 200), rate(Node, V);
               false -> none
           end,
    receive cli_done -> ok after 60000 -> error(cli_timeout) end,
    {ok, J} = file:read_file(Out),
    ok = file:delete(Out),
    {ok, Doc} = beamlab_json:decode(J),
    {ok, Doc, Rate}.

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

%% Per function of the in-node anchor's table with the own modules
%% patterned (its top 6 by own time, among the duty-cycled table's
%% functions): the shares of calls and of own time of the duty-cycled
%% capture against that anchor (the same patterns: what is left is the
%% duty cycle's own error), of the duty-cycled capture on every function
%% against the anchor on every function, and of the full capture against
%% the anchor on every function; and the calls per second of the
%% duty-cycled capture (scaled) over the full one's. Shares of calls are
%% over the duty-cycled table's functions in each table (calls into
%% other modules are not counted with the own modules patterned). Shares
%% of own time are over each table's whole: with the own modules
%% patterned, the time in an unpatterned callee (lists:sort/2's own code,
%% say) is charged to the patterned function that called it, which is
%% what `own' time means then, and a breakpoint's own cost is charged to
%% the function it counts, so the shares depend on what is patterned.
compare(V, #{time := {TMs, Time}, duty := {DMs, Duty}, duty_all := {_, DutyAll}, anchor := {_, Anchor},
             anchor_own := {_, AnchorOwn}, sampled := S}, Name) ->
    Own = [F || {F, _, _} <- Duty],
    OwnCalls = fun(L) -> max(1, lists:sum([C || {F, C, _} <- L, lists:member(F, Own)])) end,
    Top = lists:sublist(lists:reverse(lists:keysort(3, [E || {F, _, _} = E <- AnchorOwn, lists:member(F, Own)])),
                        6),
    Sampled = case S of
                  #{<<"on_fraction">> := F0, <<"on_fraction_error">> := E, <<"windows">> := W} ->
                      io_lib:format("patterns on ~.2f% of the time, ~b windows, on-time error ~.1f%",
                                    [F0 * 100, W, E * 100]);
                  _ -> "not sampled"
              end,
    N = atom_to_list(Name),
    io:format("  ~s (duty cycle: ~s)~n  ~-36s ~20s ~20s ~14s ~20s ~20s ~14s~n",
              [V, Sampled, "function", "calls % duty/" ++ N ++ "_own", "own % duty/" ++ N ++ "_own",
               "ratio own", "own % all/" ++ N, "own % full/" ++ N, "calls/s d/f"]),
    R = fun(_, Y) when Y == 0 -> "-"; (X, Y) -> io_lib:format("~.3f", [X / Y]) end,
    Share = fun(F, L) ->
                    case lists:keyfind(F, 1, L) of
                        {_, C1, S1} -> {C1 / OwnCalls(L), S1, C1};
                        false -> {0.0, 0.0, 0}
                    end
            end,
    [begin
         {DC, DS, DN} = Share(F, Duty),
         {OC, OS, _} = Share(F, AnchorOwn),
         {_, AS, _} = Share(F, DutyAll),
         {_, XS, _} = Share(F, Anchor),
         {_, TS, TN} = Share(F, Time),
         io:format("  ~-36s ~9.2f/~9.2f ~9.2f/~9.2f ~6s,~6s ~9.2f/~9.2f ~9.2f/~9.2f ~14s~n",
                   [F, DC * 100, OC * 100, DS * 100, OS * 100, R(DC, OC), R(DS, OS), AS * 100, XS * 100,
                    TS * 100, XS * 100, R(DN / DMs, TN / TMs)])
     end || {F, _, _} <- Top],
    ok.

%% The hot path of beamlab's flame graph (a --calls none capture: the
%% stack samples alone) against fprof's on the same victim.
hot_path(Beamlab, Node, Cookie, V) ->
    {ok, #{<<"extra">> := #{<<"profile">> := P}}, _} = capture(Beamlab, Node, Cookie, V, none, false),
    Stacks = [{binary:split(S, <<";">>, [global]), C} || [S, C] <- maps:get(<<"stacks">>, P)],
    %% (the root frame is the process's label)
    Ours = heaviest([{tl(S), C} || {S, C} <- Stacks, S =/= []]),
    Dir = filename:join("/tmp", "capbench-fprof-" ++ os:getpid()),
    ok = filelib:ensure_path(Dir),
    Entries = erpc:call(Node, capture_bench_victim, fprof_run, [V, 300, Dir], 300000),
    _ = file:del_dir(Dir),
    Theirs = fprof_path(Entries),
    io:format("  ~s~n    beamlab: ~ts~n    fprof:   ~ts~n", [V, lists:join(" > ", Ours), lists:join(" > ", Theirs)]).

heaviest([]) -> [];
heaviest(Stacks) ->
    By = lists:foldl(fun({[F | _], C}, M) -> M#{F => maps:get(F, M, 0) + C}; (_, M) -> M end, #{}, Stacks),
    case lists:reverse(lists:keysort(2, maps:to_list(By))) of
        [] -> [];
        [{F, _} | _] -> [F | heaviest([{Rest, C} || {[G | Rest], C} <- Stacks, G =:= F, Rest =/= []])]
    end.

%% From the function with the most accumulated time (not fprof's own
%% pseudo functions), the callee with the most, until a leaf or a loop.
fprof_path(Entries) ->
    Real = [E || {F, _, _, _} = E <- Entries, binary:match(F, <<":">>) =/= nomatch,
                 binary:match(F, [<<"fprof">>, <<"erlang:apply">>, <<"proc_lib">>]) =:= nomatch],
    case lists:reverse(lists:keysort(2, Real)) of
        [] -> [];
        [{Top, _, _, _} | _] -> follow(Top, Real, [Top])
    end.

follow(F, Entries, Path) ->
    case lists:keyfind(F, 1, Entries) of
        {F, _, _, Callees} ->
            case lists:reverse(lists:keysort(2, [C || {G, _} = C <- Callees, not lists:member(G, Path),
                                                       binary:match(G, <<":">>) =/= nomatch])) of
                [{G, _} | _] -> follow(G, Entries, Path ++ [G]);
                [] -> Path
            end;
        false -> Path
    end.
