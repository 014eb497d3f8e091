%%% @doc A telemetry sample (`beamlab_runtime_telemetry') as metric
%%% families for `beamlab_runtime_metrics': scheduler utilisation, run
%%% queues, counts, memory by kind, and the VM's cumulative counters
%%% (reductions, garbage collections, IO bytes, OS CPU time) as counters,
%%% each sample labelled with the given labels (`node'). The names start
%%% with `beamlab_vm_' for a watched node and for beamlab's own VM alike.
-module(beamlab_format_vm_metrics).

-export([families/2]).

-type labels() :: beamlab_format_openmetrics:labels().

%% @doc The families of one sample (`undefined' before the first: none).
-spec families(map() | undefined, labels()) -> [beamlab_format_openmetrics:family()].
families(undefined, _Labels) ->
    [];
families(S, L) ->
    Ratio = fun(Pct) when is_number(Pct) -> Pct / 100; (_) -> null end,
    Memory = maps:get(memory, S, #{}),
    Totals = maps:get(totals, S, #{}),
    Scheds = lists:zip(lists:seq(1, length(maps:get(util_schedulers, S, []))), maps:get(util_schedulers, S, [])),
    [gauge(<<"beamlab_vm_scheduler_utilization_ratio">>, <<"ratio">>,
           <<"Share of wall time each normal scheduler was busy over the last interval">>,
           [{L ++ [{<<"scheduler">>, integer_to_binary(I)}], Ratio(U)} || {I, U} <- Scheds]),
     gauge(<<"beamlab_vm_utilization_ratio">>, <<"ratio">>,
           <<"Mean busy share of the online normal, dirty CPU and dirty IO schedulers over the last interval">>,
           [{L ++ [{<<"type">>, T}], Ratio(maps:get(K, S, null))}
            || {T, K} <- [{<<"normal">>, util}, {<<"dirty_cpu">>, util_dirty_cpu}, {<<"dirty_io">>, util_dirty_io}]]),
     gauge(<<"beamlab_vm_run_queue_length">>, undefined,
           <<"Processes and ports waiting to run, by scheduler type">>,
           [{L ++ [{<<"type">>, T}], maps:get(K, S, null)}
            || {T, K} <- [{<<"normal">>, run_queue}, {<<"dirty_cpu">>, run_queue_dirty_cpu},
                          {<<"dirty_io">>, run_queue_dirty_io}]]),
     gauge(<<"beamlab_vm_processes">>, undefined, <<"Processes alive">>, [{L, maps:get(processes, S, null)}]),
     gauge(<<"beamlab_vm_ports">>, undefined, <<"Ports open">>, [{L, maps:get(ports, S, null)}]),
     gauge(<<"beamlab_vm_atoms">>, undefined, <<"Atoms in the atom table">>, [{L, maps:get(atoms, S, null)}]),
     gauge(<<"beamlab_vm_ets_tables">>, undefined, <<"ETS tables">>, [{L, maps:get(ets_tables, S, null)}]),
     gauge(<<"beamlab_vm_memory_bytes">>, <<"bytes">>, <<"Memory allocated by the VM, by kind (erlang:memory/0)">>,
           [{L ++ [{<<"kind">>, atom_to_binary(K)}], V} || {K, V} <- lists:sort(maps:to_list(Memory))]),
     counter(<<"beamlab_vm_reductions">>, undefined, <<"Reductions executed since the VM started">>,
             [{L, maps:get(reds, Totals, null)}]),
     counter(<<"beamlab_vm_garbage_collections">>, undefined, <<"Garbage collections since the VM started">>,
             [{L, maps:get(gcs, Totals, null)}]),
     counter(<<"beamlab_vm_io_received_bytes">>, <<"bytes">>, <<"Bytes received through ports since the VM started">>,
             [{L, maps:get(io_in, Totals, null)}]),
     counter(<<"beamlab_vm_io_sent_bytes">>, <<"bytes">>, <<"Bytes sent through ports since the VM started">>,
             [{L, maps:get(io_out, Totals, null)}]),
     counter(<<"beamlab_vm_os_cpu_seconds">>, <<"seconds">>,
             <<"CPU time the OS charged to the VM's process (when it runs on this host)">>,
             [{L, case maps:get(os_cpu_us, Totals, null) of null -> null; Us -> Us / 1000000 end}]),
     gauge(<<"beamlab_vm_sampler_wall_ratio">>, <<"ratio">>,
           <<"Wall time the last sample took, as a share of the interval (the mon column; waiting included, not CPU)">>,
           [{L, Ratio(maps:get(monitor_wall_pct, S, null))}])]
        ++ case maps:get(msacc, S, #{}) of
               M when map_size(M) > 0 ->
                   [gauge(<<"beamlab_vm_microstate_ratio">>, <<"ratio">>,
                          <<"Share of the normal scheduler threads' time in each state (microstate accounting)">>,
                          [{L ++ [{<<"state">>, atom_to_binary(K)}], Ratio(V)} || {K, V} <- lists:sort(maps:to_list(M))])];
               _ -> []
           end.

gauge(Name, Unit, Help, Samples) ->
    family(Name, gauge, Unit, Help, Samples).

counter(Name, Unit, Help, Samples) ->
    family(Name, counter, Unit, Help, Samples).

family(Name, Type, Unit, Help, Samples) ->
    F = #{name => Name, type => Type, help => Help, samples => [{Ls, V} || {Ls, V} <- Samples, is_number(V)]},
    case Unit of
        undefined -> F;
        _ -> F#{unit => Unit}
    end.
