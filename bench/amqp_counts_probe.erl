%%% @doc Counts inside a load generator's VM over a window (#33,
%%% bench/amqp_counts.sh): started before the tool's own code by
%%%
%%%   ERL_AFLAGS="-pa DIR -s amqp_counts_probe start DELAY_MS WINDOW_MS OUT"
%%%
%%% (ERL_AFLAGS: at the front of the command line, so it runs before the
%%% escript's or the floor's `-run', which never returns). After DELAY_MS
%%% it counts for WINDOW_MS and writes `key value' lines to OUT: the VM's
%%% context switches, reductions and garbage collections (their number
%%% and the words they reclaimed), the bytes and operations of every TCP
%%% port (inet:getstat/2's recv_cnt and send_cnt: the reads and writes the
%%% VM made), the scheduler time by state (msacc), the number of processes, and which process kind
%%% controls each TCP socket (so whether a worker took its socket's reads
%%% is visible). Counts, not times: they move little with the machine's
%%% load.
-module(amqp_counts_probe).

-export([start/1]).

-spec start([atom()]) -> ok.
start([DelayA, WindowA, OutA]) ->
    Delay = list_to_integer(atom_to_list(DelayA)),
    Window = list_to_integer(atom_to_list(WindowA)),
    Out = atom_to_list(OutA),
    %% Loaded now, not in the window: in an escript a module not loaded yet
    %% is looked up in the archive, file work on the dirty I/O schedulers
    %% that would count as the tool's CPU (the floor, run by erl, has no
    %% archive).
    _ = [{module, M} = code:ensure_loaded(M)
         || M <- [msacc, inet, prim_inet, proplists, maps, lists, io_lib, io_lib_format, file]],
    _ = spawn(fun() -> run(Delay, Window, Out) end),
    ok.

run(Delay, Window, Out) ->
    receive after Delay -> ok end,
    Ports0 = ports(),
    Reds0 = reds(),
    {Cs0, _} = erlang:statistics(context_switches),
    {Red0, _} = erlang:statistics(exact_reductions),
    {Gc0, Words0, _} = erlang:statistics(garbage_collection),
    _ = msgs(),
    %% msacc:start/1 counts for Window ms and returns when done.
    true = msacc:start(Window),
    {Cs1, _} = erlang:statistics(context_switches),
    {Red1, _} = erlang:statistics(exact_reductions),
    {Gc1, Words1, _} = erlang:statistics(garbage_collection),
    Msgs1 = msgs(),
    Ports1 = ports(),
    Reds1 = reds(),
    Stats = msacc:stats(),
    Sched = states(Stats, scheduler),
    All = [{K, V1 - V0} || {P, K, V1} <- flat(Ports1), {P0, K0, V0} <- flat(Ports0),
                           P =:= P0, K =:= K0],
    Sum = fun(K) -> lists:sum([V || {K1, V} <- All, K1 =:= K]) end,
    Owners = [{owner, Kind} || {_, Kind} <- owners()],
    %% Per socket, its counts in the window, the socket that sent the most
    %% bytes (the publisher's) first, then the one that received the most.
    Per = [{P, [{K, V1 - V0} || {K, V1} <- S1, {K0, V0} <- S0, K =:= K0]}
           || {P, S1} <- Ports1, {P0, S0} <- Ports0, P =:= P0],
    Pub = lists:reverse(lists:keysort(2, [{P, proplists:get_value(send_oct, S)} || {P, S} <- Per])),
    Con = lists:reverse(lists:keysort(2, [{P, proplists:get_value(recv_oct, S)} || {P, S} <- Per])),
    Role = fun(Name, [{P, _} | _]) ->
                   S = proplists:get_value(P, Per),
                   [{list_to_atom(Name ++ "_" ++ atom_to_list(K)), V} || {K, V} <- S];
              (_, []) -> []
           end,
    Lines =
        [{context_switches, Cs1 - Cs0}, {reductions, Red1 - Red0},
         {gcs, Gc1 - Gc0}, {gc_words_reclaimed, Words1 - Words0},
         {tcp_recv_cnt, Sum(recv_cnt)}, {tcp_send_cnt, Sum(send_cnt)},
         {tcp_recv_oct, Sum(recv_oct)}, {tcp_send_oct, Sum(send_oct)},
         {processes, Msgs1}]
        ++ [{list_to_atom("sched_us_" ++ atom_to_list(S)), V} || {S, V} <- Sched]
        ++ Role("tcp_pub", Pub) ++ Role("tcp_con", Con)
        ++ top_reds(Reds0, Reds1)
        ++ [{direct_reads_env, application:get_env(beamlab, amqp_direct_reads, unset)}]
        ++ Owners,
    ok = file:write_file(Out, [io_lib:format("~p ~p~n", [K, V]) || {K, V} <- Lines]),
    ok.

%% The VM keeps no count of messages sent or received (only tracing
%% would, which costs more than it measures): the process count shows
%% the shape instead.
msgs() ->
    erlang:system_info(process_count).

reds() ->
    [{P, R} || P <- erlang:processes(), {reductions, R} <- [erlang:process_info(P, reductions)]].

%% The reductions of each kind of process in the window (processes that
%% lived through it), the six largest.
top_reds(Reds0, Reds1) ->
    Old = maps:from_list(Reds0),
    ByKind = lists:foldl(fun({P, R}, Acc) ->
                                 case maps:find(P, Old) of
                                     {ok, R0} ->
                                         K = list_to_atom("reds_" ++ atom_to_list(kind(P))),
                                         maps:update_with(K, fun(V) -> V + R - R0 end, R - R0, Acc);
                                     error -> Acc
                                 end
                         end, #{}, Reds1),
    lists:sublist(lists:reverse(lists:keysort(2, maps:to_list(ByKind))), 6).

ports() ->
    [{P, S} || P <- erlang:ports(), erlang:port_info(P, name) =:= {name, "tcp_inet"},
               {ok, S} <- [inet:getstat(P, [recv_cnt, send_cnt, recv_oct, send_oct])]].

flat(Ports) ->
    [{P, K, V} || {P, S} <- Ports, {K, V} <- S].

%% Microseconds per state, summed over the threads of one type.
states(Stats, Type) ->
    Counters = [C || #{type := T, counters := C} <- Stats, T =:= Type],
    Keys = lists:usort(lists:append([maps:keys(C) || C <- Counters])),
    [{K, lists:sum([maps:get(K, C, 0) || C <- Counters])} || K <- Keys].

%% Which kind of process controls each TCP socket.
owners() ->
    [{P, kind(Pid)} || P <- erlang:ports(), erlang:port_info(P, name) =:= {name, "tcp_inet"},
                       {connected, Pid} <- [erlang:port_info(P, connected)]].

%% A process's kind, as a short name: the `$initial_call' of a proc_lib
%% process, else its initial call and the outermost function of its
%% stack (not the one it runs now: a process seen in another function at
%% the end of another round would count as another kind).
kind(Pid) ->
    case erlang:process_info(Pid, [dictionary, initial_call, current_stacktrace]) of
        undefined -> gone;
        Info ->
            Dict = proplists:get_value(dictionary, Info),
            case proplists:get_value('$initial_call', Dict) of
                {M, _, _} -> M;
                undefined ->
                    {M, _, _} = proplists:get_value(initial_call, Info),
                    {M2, F, _, _} = case proplists:get_value(current_stacktrace, Info) of
                                        [] -> {M, unknown, 0, []};
                                        Stack -> lists:last(Stack)
                                    end,
                    list_to_atom(atom_to_list(M) ++ "/" ++ atom_to_list(M2) ++ ":" ++ atom_to_list(F))
            end
    end.
