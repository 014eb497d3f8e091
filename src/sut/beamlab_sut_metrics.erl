%%% @doc Live metrics of a watch, for `beamlab_runtime_metrics': the
%%% watched node's VM families (`beamlab_runtime_vm_metrics') from its
%%% latest sample, whether it answers, its top processes and ETS tables,
%%% the system monitor's events and the findings raised so far, each
%%% sample labelled with `node'.
%%%
%%% The watch publishes into a table it owns ({@link new/1}, {@link
%%% publish/2}); the collector ({@link collector/1}) only reads that table
%%% at scrape time, so a scrape never waits for the node.
-module(beamlab_sut_metrics).

-export([new/1, publish/2, collector/1, delete/1]).

-opaque table() :: ets:tid().
-type update() :: {sample, map()} | {up, boolean()} | {findings, [beamlab_result:finding()]}.
-export_type([table/0, update/0]).

%% @doc A table for the watch of `Node', owned by the calling process.
-spec new(node()) -> table().
new(Node) ->
    T = ets:new(beamlab_watch_metrics, [protected, set, {read_concurrency, true}]),
    true = ets:insert(T, [{node, atom_to_binary(Node)}, {up, true}, {samples, 0}, {findings, []},
                          {sample, undefined}, {events, #{}}]),
    T.

%% @doc Records a sample, whether the node answers, or new findings.
-spec publish(table(), update()) -> ok.
publish(T, {sample, S}) ->
    [{samples, N}] = ets:lookup(T, samples),
    [{events, E0}] = ets:lookup(T, events),
    E = lists:foldl(fun(#{event := Ev, count := C}, Acc) -> maps:update_with(Ev, fun(X) -> X + C end, C, Acc) end,
                    E0, maps:get(monitor_events, S, [])),
    true = ets:insert(T, [{sample, S}, {samples, N + 1}, {up, true}, {events, E}]),
    ok;
publish(T, {up, Up}) ->
    true = ets:insert(T, {up, Up}),
    ok;
publish(T, {findings, New}) ->
    [{findings, Old}] = ets:lookup(T, findings),
    true = ets:insert(T, {findings, Old ++ New}),
    ok.

%% @doc Forgets the table (scrapes after it see no watch).
-spec delete(table()) -> ok.
delete(T) ->
    true = ets:delete(T),
    ok.

%% @doc The collector that reads the table.
-spec collector(table()) -> beamlab_runtime_metrics:collector().
collector(T) ->
    fun() -> families(T) end.

families(T) ->
    [{node, Node}] = ets:lookup(T, node),
    [{sample, S}] = ets:lookup(T, sample),
    [{up, Up}] = ets:lookup(T, up),
    [{samples, N}] = ets:lookup(T, samples),
    [{findings, Fs}] = ets:lookup(T, findings),
    [{events, Events}] = ets:lookup(T, events),
    L = [{<<"node">>, Node}],
    Top = case S of #{top := Tp} -> Tp; _ -> #{} end,
    Proc = fun(E) -> L ++ [{<<"pid">>, maps:get(pid, E)}, {<<"name">>, maps:get(name, E)}] end,
    beamlab_runtime_vm_metrics:families(S, L)
        ++ [#{name => <<"beamlab_watch_up">>, type => gauge,
              help => <<"1 while the watched node answers, 0 while it does not">>,
              samples => [{L, case Up of true -> 1; false -> 0 end}]},
            #{name => <<"beamlab_watch_samples">>, type => counter, help => <<"Samples taken of the watched node">>,
              samples => [{L, N}]},
            #{name => <<"beamlab_watch_top_process_reductions_per_second">>, type => gauge,
              help => <<"Reductions per second of the busiest processes in the last interval">>,
              samples => [{Proc(E), maps:get(reductions_per_s, E)} || E <- maps:get(by_reductions, Top, [])]},
            #{name => <<"beamlab_watch_top_process_message_queue_length">>, type => gauge,
              help => <<"Message queue length of the processes with the longest queues">>,
              samples => [{Proc(E), maps:get(message_queue_len, E)} || E <- maps:get(by_message_queue, Top, [])]},
            #{name => <<"beamlab_watch_top_process_memory_bytes">>, type => gauge, unit => <<"bytes">>,
              help => <<"Memory of the processes that use the most">>,
              samples => [{Proc(E), maps:get(memory, E)} || E <- maps:get(by_memory, Top, [])]},
            #{name => <<"beamlab_watch_top_ets_table_memory_bytes">>, type => gauge, unit => <<"bytes">>,
              help => <<"Memory of the largest and fastest-growing ETS tables">>,
              samples => [{L ++ [{<<"table">>, maps:get(name, E)}, {<<"id">>, maps:get(id, E)},
                                 {<<"owner">>, maps:get(owner, E)}], maps:get(memory, E)}
                          || E <- case S of #{ets_top := Et} -> Et; _ -> [] end]},
            #{name => <<"beamlab_watch_monitor_events">>, type => counter,
              help => <<"System monitor events on the watched node (long_gc, long_schedule, busy_port, busy_dist_port)">>,
              samples => [{L ++ [{<<"event">>, atom_to_binary(Ev)}], C} || {Ev, C} <- lists:sort(maps:to_list(Events))]},
            #{name => <<"beamlab_watch_findings">>, type => gauge,
              help => <<"Findings raised so far on the watched node, by kind and severity">>,
              samples => [{L ++ [{<<"id">>, Id}, {<<"severity">>, atom_to_binary(Sev)}], C}
                          || {{Id, Sev}, C} <- lists:sort(maps:to_list(
                                                            lists:foldl(fun(#{id := Id, severity := Sev}, Acc) ->
                                                                                maps:update_with({Id, Sev}, fun(X) -> X + 1 end, 1, Acc)
                                                                        end, #{}, Fs)))]}].
