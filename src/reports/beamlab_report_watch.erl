%%% @doc The processes of a watched node in the HTML report, from the top
%%% lists of its telemetry (`watch', or any series recorded with `top'):
%%% one chart per measure (message queue length, memory, reductions per
%%% second) with a line for each process that led it at some point, the
%%% largest ETS tables' memory, a table of every process listed over the
%%% recording, and the table of each sample (what the live view showed).
%%% Each chart is shaded where the findings about its measure were raised
%%% (a growing mailbox on the queue chart, a growing process heap on the
%%% memory chart, a growing table on the ETS chart).
%%% `priv/report/watch.js' draws it. Pure.
-module(beamlab_report_watch).

-export([processes/1]).

-type line() :: #{label := binary(), y := [number() | null]}.
-type chart() :: #{key := binary(), title := binary(), unit := binary(), lines := [line()],
                   marks := [beamlab_report_views:mark()]}.
-type model() :: #{t := [number()], charts := [chart()], summary := [[term()]], samples := [map()]}.
-export_type([model/0]).

%% Lines per chart: the processes (or tables) that led the measure.
-define(LINES, 8).

%% @doc The model of the run's processes, `null' when its telemetry has
%% no top lists.
-spec processes(beamlab_result:result()) -> model() | null.
processes(R) ->
    T = beamlab_report_views:key_bins(maps:get(telemetry, R, #{})),
    Tops0 = [beamlab_json:canonical(S) || S <- list(<<"top">>, T)],
    Times0 = list(<<"t_ms">>, T),
    %% A last sample taken when the watch stopped between two ticks covers
    %% part of an interval: its reductions/s would be a swing the node did
    %% not make (beamlab_report_views:partial_tail/1); it is left out.
    {Tops, Times} = case length(Tops0) =:= length(Times0) andalso lists:all(fun is_number/1, Times0)
                             andalso beamlab_report_views:partial_tail(Times0) of
                        true -> {lists:droplast(Tops0), lists:droplast(Times0)};
                        false -> {Tops0, Times0}
                    end,
    case length(Tops) =:= length(Times) andalso lists:any(fun is_map/1, Tops) of
        false -> null;
        true ->
            %% (the telemetry's clock, from the start of the watch: the
            %% findings' evidence and the live lines tell times on it)
            Ts = [num(X / 1000) || X <- Times],
            Ets = case list(<<"ets_top">>, T) of
                      L when length(L) =:= length(Times0) ->
                          [beamlab_json:canonical(E) || E <- lists:sublist(L, length(Times))];
                      _ -> [null || _ <- Times]
                  end,
            Marks = fun(Kinds) -> marks(R, Kinds) end,
            #{t => Ts,
              charts => [(chart(Tops, K, Title, Unit, List))#{marks => Marks(Kinds)}
                         || {K, Title, Unit, List, Kinds} <- [{<<"message_queue_len">>, <<"Message queue length">>,
                                                               <<"messages">>, <<"by_message_queue">>, [<<"mailbox">>]},
                                                              {<<"memory">>, <<"Process memory">>, <<"bytes">>, <<"by_memory">>,
                                                               [<<"process_memory">>, <<"mailbox">>]},
                                                              {<<"reductions_per_s">>, <<"Reductions">>,
                                                               <<"reductions/s">>, <<"by_reductions">>, [<<"long_schedule">>]}]]
                  ++ [(ets_chart(Ets))#{marks => Marks([<<"ets">>])}],
              summary => summary(Tops),
              samples => [#{t => Tm, rows => rows(S)} || {Tm, S} <- lists:zip(Ts, Tops), is_map(S)]}
    end.

%% The findings of these kinds over the interval they state (from the
%% start of the rise to the last sample that saw it, `last_ms'; older
%% documents: `to_ms', else the sample that raised it), on the chart's
%% time axis.
marks(R, Kinds) ->
    [#{title => Title, severity => Sev, from => num(From / 1000), to => num(To / 1000)}
     || #{title := Title, severity := Sev, data := D} <- maps:get(findings, R, []),
        lists:member(beamlab_json:canonical(maps:get(<<"kind">>, D, null)), Kinds),
        From <- [maps:get(<<"from_ms">>, D, null)],
        To <- [hd([V || K <- [<<"last_ms">>, <<"to_ms">>, <<"detected_ms">>],
                        V <- [maps:get(K, D, null)], is_number(V)] ++ [null])],
        is_number(From), is_number(To)].

%% A line for each process that was among the leaders of `List' at some
%% sample (the largest first), valued wherever any top list had it.
chart(Tops, Key, Title, Unit, List) ->
    Leaders = lists:usort([{maps:get(<<"pid">>, E), num_or(maps:get(Key, E, 0))}
                           || S <- Tops, is_map(S), E <- list(List, S)]),
    Best = lists:foldl(fun({P, V}, Acc) -> maps:update_with(P, fun(X) -> max(X, V) end, V, Acc) end, #{}, Leaders),
    Pids = [P || {P, _} <- lists:sublist(lists:reverse(lists:keysort(2, maps:to_list(Best))), ?LINES)],
    #{key => Key, title => Title, unit => Unit,
      lines => [#{label => label(P, Tops), y => [value(P, Key, S) || S <- Tops]} || P <- Pids]}.

ets_chart(Ets) ->
    Best = lists:foldl(fun(E, Acc) ->
                               K = {maps:get(<<"id">>, E), maps:get(<<"name">>, E, null)},
                               maps:update_with(K, fun(X) -> max(X, num_or(maps:get(<<"memory">>, E, 0))) end,
                                                num_or(maps:get(<<"memory">>, E, 0)), Acc)
                       end, #{}, [E || L <- Ets, is_list(L), E <- L, is_map(E)]),
    Tabs = [K || {K, _} <- lists:sublist(lists:reverse(lists:keysort(2, maps:to_list(Best))), ?LINES)],
    #{key => <<"ets">>, title => <<"ETS table memory">>, unit => <<"bytes">>,
      lines => [#{label => case Name of null -> Id; _ -> Name end,
                  y => [case [maps:get(<<"memory">>, E, null) || L <- [Sample], is_list(L), E <- L, is_map(E),
                                                                maps:get(<<"id">>, E) =:= Id] of
                            [V | _] -> num(V);
                            [] -> null
                        end || Sample <- Ets]}
                || {Id, Name} <- Tabs]}.

value(Pid, Key, S) when is_map(S) ->
    case [E || L <- maps:values(S), is_list(L), E <- L, is_map(E), maps:get(<<"pid">>, E, null) =:= Pid] of
        [E | _] -> num(maps:get(Key, E, null));
        [] -> null
    end;
value(_, _, _) ->
    null.

label(Pid, Tops) ->
    case [maps:get(<<"name">>, E) || S <- lists:reverse(Tops), is_map(S), L <- maps:values(S), is_list(L),
                                      E <- L, is_map(E), maps:get(<<"pid">>, E, null) =:= Pid] of
        [Name | _] -> <<Name/binary, " ", Pid/binary>>;
        [] -> Pid
    end.

%% Every process listed over the recording: its name, its last current
%% function, the largest queue and memory seen, the mean reductions per
%% second where listed, and in how many samples.
summary(Tops) ->
    Entries = [E || S <- Tops, is_map(S), L <- maps:values(S), is_list(L), E <- L, is_map(E)],
    ByPid = lists:foldl(fun(E, Acc) -> maps:update_with(maps:get(<<"pid">>, E), fun(Es) -> [E | Es] end, [E], Acc) end,
                        #{}, Entries),
    Rows = [begin
                Last = hd(Es),
                Reds = [num_or(maps:get(<<"reductions_per_s">>, E, 0)) || E <- Es],
                Seen = length([S || S <- Tops, is_map(S),
                                    lists:any(fun(L) -> is_list(L) andalso
                                                            lists:any(fun(E) -> maps:get(<<"pid">>, E, null) =:= P end, L)
                                              end, maps:values(S))]),
                [P, maps:get(<<"name">>, Last, null), maps:get(<<"current_function">>, Last, null),
                 lists:max([num_or(maps:get(<<"message_queue_len">>, E, 0)) || E <- Es]),
                 lists:max([num_or(maps:get(<<"memory">>, E, 0)) || E <- Es]),
                 num(lists:sum(Reds) / length(Reds)), Seen]
            end || {P, Es} <- maps:to_list(ByPid)],
    lists:sublist(lists:reverse(lists:sort(fun(A, B) -> {lists:nth(6, A), lists:nth(4, A)} =< {lists:nth(6, B), lists:nth(4, B)} end,
                                            Rows)), 30).

%% One sample's table: R, Q, M (which top lists the process is in), then
%% its figures.
rows(S) ->
    Lists = [{<<"R">>, list(<<"by_reductions">>, S)}, {<<"Q">>, list(<<"by_message_queue">>, S)},
             {<<"M">>, list(<<"by_memory">>, S)}],
    Order = lists:foldl(fun({_, L}, Acc) -> Acc ++ [P || #{<<"pid">> := P} <- L, not lists:member(P, Acc)] end,
                        [], Lists),
    [begin
         E = hd([X || {_, L} <- Lists, X = #{<<"pid">> := Px} <- L, Px =:= P]),
         [iolist_to_binary([M || {M, L} <- Lists, lists:any(fun(#{<<"pid">> := Px}) -> Px =:= P end, L)]),
          num(maps:get(<<"reductions_per_s">>, E, null)), maps:get(<<"message_queue_len">>, E, null),
          maps:get(<<"memory">>, E, null), P, maps:get(<<"name">>, E, null), maps:get(<<"current_function">>, E, null)]
     end || P <- Order].

list(K, M) ->
    case maps:get(K, M, []) of
        L when is_list(L) -> L;
        _ -> []
    end.

num_or(N) when is_number(N) -> N;
num_or(_) -> 0.

num(X) -> beamlab_report_views:num(X).
