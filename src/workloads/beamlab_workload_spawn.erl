%%% @doc Workload `spawn': create N processes and wait until all of them
%%% have finished; variants with a link or a monitor per process.
-module(beamlab_workload_spawn).
-behaviour(beamlab_workload).

-export([info/0, params/0, setup/1, run/2, teardown/1, processes/1]).

%% @doc Workload description.
-spec info() -> beamlab_workload:info().
info() ->
    #{name => <<"spawn">>,
      summary => <<"create and finish N processes (plain, link, monitor)">>,
      definition =>
          <<"Time from before the first spawn until all N processes have "
            "terminated, divided by N. Each process runs an empty function. "
            "plain: spawn/1, each child decrements a shared atomic counter "
            "and the last one to finish sends one message to the parent; "
            "link: spawn_link/1 with trap_exit, the parent receives N "
            "'EXIT' messages; monitor: spawn_monitor/1, the parent receives "
            "N 'DOWN' messages.">>,
      unit => <<"us">>, better => lower, metric => <<"per_process">>,
      checks => <<"exactly N processes finished (counter reaches 0 / N exit "
                  "or down messages), the parent's mailbox is empty after">>}.

%% @doc Parameters.
-spec params() -> [beamlab_workload:param_spec()].
params() ->
    [#{key => n, default => 20000, full => 200000, type => pos_integer,
       help => <<"processes per repetition">>},
     #{key => variant, default => [plain, link, monitor], full => [plain, link, monitor],
       type => {enum, [plain, link, monitor]},
       help => <<"how the parent learns that a child finished">>}].

%% @doc Peak number of processes.
-spec processes(beamlab_workload:params()) -> non_neg_integer().
processes(#{n := N}) -> N.

%% @doc No state.
-spec setup(beamlab_workload:params()) -> {ok, none}.
setup(_) -> {ok, none}.

%% @doc One repetition.
-spec run(none, beamlab_workload:params()) -> {ok, beamlab_workload:rep()}.
run(none, #{n := N, variant := Variant}) ->
    {Elapsed, Finished} = measure(Variant, N),
    Leftover = drain(0),
    {ok, #{value => beamlab_workload:us(Elapsed) / N,
           counters => #{spawned => N, finished => Finished},
           check => beamlab_workload:check_all([{"finished", N, Finished},
                                                {"stray messages", 0, Leftover}])}}.

%% @doc Nothing to clean.
-spec teardown(none) -> ok.
teardown(_) -> ok.

measure(plain, N) ->
    Left = atomics:new(1, []),
    atomics:put(Left, 1, N),
    Parent = self(),
    Tag = make_ref(),
    Child = fun() ->
                    case atomics:sub_get(Left, 1, 1) of
                        0 -> Parent ! Tag;
                        _ -> ok
                    end
            end,
    T0 = erlang:monotonic_time(),
    spawn_n(Child, N),
    receive Tag -> ok end,
    T1 = erlang:monotonic_time(),
    {T1 - T0, N - atomics:get(Left, 1)};
measure(link, N) ->
    Old = process_flag(trap_exit, true),
    Child = fun() -> ok end,
    T0 = erlang:monotonic_time(),
    spawn_link_n(Child, N),
    Got = wait_exits(N, 0),
    T1 = erlang:monotonic_time(),
    process_flag(trap_exit, Old),
    {T1 - T0, Got};
measure(monitor, N) ->
    Child = fun() -> ok end,
    T0 = erlang:monotonic_time(),
    spawn_monitor_n(Child, N),
    Got = wait_downs(N, 0),
    T1 = erlang:monotonic_time(),
    {T1 - T0, Got}.

spawn_n(_F, 0) -> ok;
spawn_n(F, N) -> _ = spawn(F), spawn_n(F, N - 1).

spawn_link_n(_F, 0) -> ok;
spawn_link_n(F, N) -> _ = spawn_link(F), spawn_link_n(F, N - 1).

spawn_monitor_n(_F, 0) -> ok;
spawn_monitor_n(F, N) -> _ = spawn_monitor(F), spawn_monitor_n(F, N - 1).

wait_exits(0, Got) -> Got;
wait_exits(N, Got) -> receive {'EXIT', _, normal} -> wait_exits(N - 1, Got + 1) end.

wait_downs(0, Got) -> Got;
wait_downs(N, Got) -> receive {'DOWN', _, process, _, normal} -> wait_downs(N - 1, Got + 1) end.

drain(N) -> receive _ -> drain(N + 1) after 0 -> N end.
