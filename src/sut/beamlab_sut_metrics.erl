%%% @doc Live metrics of a watch, for `beamlab_runtime_metrics': the
%%% watched node's VM families (`beamlab_format_vm_metrics') from its
%%% latest sample, whether it answers, its top processes and ETS tables,
%%% the system monitor's events and the findings raised so far, each
%%% sample labelled with `node'.
%%%
%%% The watch publishes into a board it owns ({@link new/1}, {@link
%%% publish/2}, `beamlab_runtime_metrics_board'), which the collector only
%%% reads at scrape time: a scrape never waits for the node.
-module(beamlab_sut_metrics).

-export([new/1, publish/2]).

-type update() :: {sample, map()} | {up, boolean()} | {findings, [beamlab_result:finding()]}.
-export_type([update/0]).

%% @doc A board for the watch of `Node', owned by the calling process.
-spec new(node()) -> beamlab_runtime_metrics_board:board().
new(Node) ->
    beamlab_runtime_metrics_board:new(#{node => atom_to_binary(Node), up => true, samples => 0, findings => [],
                                        sample => undefined, events => #{}},
                                      fun families/1).

%% @doc Records a sample, whether the node answers, or new findings.
-spec publish(beamlab_runtime_metrics_board:board(), update()) -> ok.
publish(B, {sample, S}) ->
    E = lists:foldl(fun(#{event := Ev, count := C}, Acc) -> maps:update_with(Ev, fun(X) -> X + C end, C, Acc) end,
                    beamlab_runtime_metrics_board:get(B, events), maps:get(monitor_events, S, [])),
    beamlab_runtime_metrics_board:set(B, #{sample => S, samples => beamlab_runtime_metrics_board:get(B, samples) + 1,
                                           up => true, events => E});
publish(B, {up, Up}) ->
    beamlab_runtime_metrics_board:set(B, #{up => Up});
publish(B, {findings, New}) ->
    beamlab_runtime_metrics_board:set(B, #{findings => beamlab_runtime_metrics_board:get(B, findings) ++ New}).

families(#{node := Node, sample := S, up := Up, samples := N, findings := Fs, events := Events}) ->
    L = [{<<"node">>, Node}],
    Top = case S of #{top := Tp} -> Tp; _ -> #{} end,
    Proc = fun(E) -> L ++ [{<<"pid">>, maps:get(pid, E)}, {<<"name">>, maps:get(name, E)}] end,
    beamlab_format_vm_metrics:families(S, L)
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
