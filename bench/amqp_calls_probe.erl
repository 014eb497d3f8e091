%%% @doc Where a load generator's reductions go, per function (#33): started
%%% before the tool's own code, as bench/amqp_counts_probe.erl is,
%%%
%%%   ERL_AFLAGS="-pa DIR -s amqp_calls_probe start DELAY_MS WINDOW_MS OUT" \
%%%     escript ./beamlab amqp -h URI -x 1 -y 1 -u q -r 10000 -f mandatory -q 300 -c 100 -z 16
%%%
%%% After DELAY_MS it takes each process's reductions over WINDOW_MS
%%% (untraced), then counts the calls of every function by every process
%%% for another WINDOW_MS (call_count tracing, which slows the run but not
%%% what it counts), and writes to OUT the processes with most reductions,
%%% `{Pid, Kind, Reductions}', then `{{M, F, A}, Calls}', most calls first.
%%% Divide by the messages of the window (one beamlab_amqp:ack_frame/3
%%% call per message acknowledged) for counts per message.
-module(amqp_calls_probe).

-export([start/1]).

-spec start([atom()]) -> ok.
start([DelayA, WindowA, OutA]) ->
    Delay = list_to_integer(atom_to_list(DelayA)),
    Window = list_to_integer(atom_to_list(WindowA)),
    Out = atom_to_list(OutA),
    _ = spawn(fun() -> run(Delay, Window, Out) end),
    ok.

run(Delay, Window, Out) ->
    receive after Delay -> ok end,
    Procs = [P || P <- erlang:processes(), P =/= self()],
    R0 = [{P, reds(P)} || P <- Procs],
    receive after Window -> ok end,
    R1 = [{P, reds(P)} || P <- Procs],
    _ = erlang:trace_pattern({'_', '_', '_'}, true, [call_count]),
    _ = [catch erlang:trace(P, true, [call]) || P <- Procs],
    receive after Window -> ok end,
    _ = [catch erlang:trace(P, false, [call]) || P <- Procs],
    Counts = lists:append([fcounts(M) || {M, _} <- code:all_loaded()]),
    _ = erlang:trace_pattern({'_', '_', '_'}, false, [call_count]),
    PR = [{P, kind(P), B - A} || {{P, A}, {P, B}} <- lists:zip(R0, R1), is_integer(A), is_integer(B)],
    Lines = lists:sublist(lists:reverse(lists:keysort(3, PR)), 8)
        ++ lists:reverse(lists:keysort(2, Counts)),
    ok = file:write_file(Out, [io_lib:format("~0p~n", [X]) || X <- Lines]).

reds(P) ->
    case erlang:process_info(P, reductions) of
        {reductions, R} -> R;
        undefined -> gone
    end.

%% The proc_lib initial call, the spawn's, and the function it runs now.
kind(P) ->
    case erlang:process_info(P, [dictionary, initial_call, current_function]) of
        undefined -> gone;
        I -> {proplists:get_value('$initial_call', proplists:get_value(dictionary, I)),
              proplists:get_value(initial_call, I), proplists:get_value(current_function, I)}
    end.

fcounts(M) ->
    Fs = try M:module_info(functions) catch _:_ -> [] end,
    [{{M, F, A}, C} || {F, A} <- Fs, {call_count, C} <- [erlang:trace_info({M, F, A}, call_count)],
                       is_integer(C), C > 0].
