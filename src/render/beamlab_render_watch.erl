%%% @doc Text view of a `watch' document: what the watched node did over
%%% the recording (mean and peak of each telemetry series, the schedulers
%%% one by one), its busiest processes over the whole recording, and
%%% whether it went down. Reads the document's JSON form (binary keys).
-module(beamlab_render_watch).

-export([render/1, summary/1]).

%% @doc The whole text view (without the findings, which the caller adds).
-spec render(beamlab_result:result()) -> unicode:chardata().
render(#{telemetry := T} = Doc) ->
    Node = maps:get(<<"node">>, T, maps:get(<<"node">>, maps:get(params, Doc), <<"?">>)),
    N = maps:get(<<"samples">>, T, 0),
    Head = io_lib:format("~ts: ~b samples every ~b ms~ts~n",
                         [Node, N, maps:get(<<"interval_ms">>, T, 0),
                          case maps:get(<<"node_down">>, T, false) of
                              true -> [" (the node went down: ", maps:get(<<"node_down_reason">>, T, <<>>), ")"];
                              _ -> ""
                          end]),
    Rows = [[Label, fmt(Fmt, mean(V)), fmt(Fmt, max_(V))]
            || {Key, Label, Fmt} <- metrics(),
               V <- [nums(get_path(Key, T))], V =/= []],
    Scheds = case maps:get(<<"util_schedulers">>, T, []) of
                 [_ | _] = PerSample ->
                     Cols = transpose([S || S <- PerSample, is_list(S), S =/= []]),
                     [io_lib:format("schedulers (mean util %): ~ts~n",
                                    [lists:join(" ", [io_lib:format("~b", [round(mean(C))]) || C <- Cols])])];
                 _ -> []
             end,
    [Head, "\n",
     case Rows of
         [] -> "no samples recorded\n";
         _ -> beamlab_format_table:render(["metric", "mean", "max"], Rows)
     end,
     Scheds, top(T)].

%% @doc Per process over the recording: `{Pid, Name, CurrentFunction,
%% Reductions (sum), MaxQueue, MaxMemory}', busiest first. A process
%% counts once per sample, whichever top lists it is in (each entry holds
%% its reductions since it was last seen).
-spec summary(map()) -> [{binary(), binary(), binary() | null, number(), number(), number()}].
summary(T) ->
    PerSample = [maps:values(maps:from_list([{maps:get(<<"pid">>, E), E}
                                             || L <- maps:values(S), is_list(L), E <- L, is_map(E)]))
                 || S <- maps:get(<<"top">>, T, []), is_map(S)],
    Entries = lists:append(PerSample),
    Pids = lists:usort([maps:get(<<"pid">>, E) || E <- Entries]),
    Rows = [begin
                Es = [E || E <- Entries, maps:get(<<"pid">>, E) =:= P],
                Last = lists:last(Es),
                {P, maps:get(<<"name">>, Last), maps:get(<<"current_function">>, Last, null),
                 lists:sum([maps:get(<<"reductions">>, E, 0) || E <- Es]),
                 lists:max([maps:get(<<"message_queue_len">>, E) || E <- Es]),
                 lists:max([maps:get(<<"memory">>, E) || E <- Es])}
            end || P <- Pids],
    lists:reverse(lists:keysort(4, Rows)).

top(T) ->
    case lists:sublist(summary(T), 10) of
        [] -> [];
        Rows ->
            ["\ntop processes (each sample's top lists; reductions summed where listed)\n",
             beamlab_format_table:render(
               ["pid", "name", "current function", "reductions", "max queue", "max memory"],
               [[P, Name, case CF of null -> "-"; _ -> CF end,
                 beamlab_format_units:count(R), integer_to_list(Q), beamlab_format_units:bytes(M)]
                || {P, Name, CF, R, Q, M} <- Rows])]
    end.

metrics() ->
    [{[<<"util">>], "scheduler util %", pct},
     {[<<"util_dirty_cpu">>], "dirty CPU util %", pct},
     {[<<"util_dirty_io">>], "dirty IO util %", pct},
     {[<<"run_queue">>], "run queue", num},
     {[<<"processes">>], "processes", int},
     {[<<"ports">>], "ports", int},
     {[<<"memory">>, <<"total">>], "memory", bytes},
     {[<<"memory">>, <<"processes">>], "memory: processes", bytes},
     {[<<"memory">>, <<"binary">>], "memory: binary", bytes},
     {[<<"memory">>, <<"ets">>], "memory: ets", bytes},
     {[<<"reductions_per_s">>], "reductions/s", count},
     {[<<"gc_per_s">>], "GCs/s", count},
     {[<<"io_in_bytes_per_s">>], "IO in/s", bytes},
     {[<<"io_out_bytes_per_s">>], "IO out/s", bytes},
     {[<<"os_cpu_cores">>], "OS CPU (cores)", num}].

get_path([K], M) when is_map(M) -> maps:get(K, M, []);
get_path([K | Rest], M) when is_map(M) -> get_path(Rest, maps:get(K, M, #{}));
get_path(_, _) -> [].

fmt(pct, V) -> io_lib:format("~.1f", [V * 1.0]);
fmt(num, V) -> io_lib:format("~.2f", [V * 1.0]);
fmt(int, V) -> integer_to_list(round(V));
fmt(bytes, V) -> beamlab_format_units:bytes(round(V));
fmt(count, V) -> beamlab_format_units:count(round(V)).

nums(L) when is_list(L) -> [X || X <- L, is_number(X)];
nums(_) -> [].

mean([]) -> 0.0;
mean(L) -> lists:sum(L) / length(L).

max_([]) -> 0;
max_(L) -> lists:max(L).

transpose([]) -> [];
transpose([[] | _]) -> [];
transpose(Rows) ->
    case lists:all(fun(R) -> R =/= [] end, Rows) of
        true -> [[hd(R) || R <- Rows] | transpose([tl(R) || R <- Rows])];
        false -> []
    end.
