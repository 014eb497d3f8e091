%%% @doc Workload `spawn'. variant=termite (default) is the Termite paper's
%%% spawn.erl: only the loop spawning N processes is timed, each running a
%%% closure that returns N. The other variants are beamlab's: create N
%%% processes and wait until all of them have finished (plain), with a link
%%% or with a monitor per process.
-module(beamlab_workload_spawn).
-behaviour(beamlab_workload).

-export([info/0, params/0, setup/1, run/2, teardown/1, processes/1]).

%% @doc Workload description.
-spec info() -> beamlab_workload:info().
info() ->
    #{name => <<"spawn">>,
      summary => <<"spawn N processes (Termite), or spawn and see them finish (plain, link, monitor)">>,
      definition =>
          <<"variant=termite (Termite paper, spawn.erl): time of the loop "
            "that spawns N processes with spawn/1, each running a closure "
            "that returns the loop counter, divided by N; the children's "
            "exits are not waited for. Other variants: time from before the first spawn until all N processes have "
            "terminated, divided by N. Each process runs an empty function. "
            "plain: spawn/1, each child decrements a shared atomic counter "
            "and the last one to finish sends one message to the parent; "
            "link: spawn_link/1 with trap_exit, the parent receives N "
            "'EXIT' messages; monitor: spawn_monitor/1, the parent receives "
            "N 'DOWN' messages.">>,
      unit => <<"us">>, better => lower, metric => <<"per_process">>,
      checks => <<"termite: the VM's process count is back to what it was "
                  "(untimed, after the loop), so every child ran and exited. "
                  "Others: exactly N processes finished (counter reaches 0 / N exit "
                  "or down messages), the parent's mailbox is empty after">>}.

%% @doc Parameters.
-spec params() -> [beamlab_workload:param_spec()].
params() ->
    [#{key => n, default => 20000, full => 200000, type => pos_integer,
       help => <<"processes per repetition">>},
     #{key => variant, default => termite, full => [termite, plain, link, monitor],
       type => {enum, [termite, plain, link, monitor]},
       help => <<"termite: the spawn loop only; others: until every child finished">>}].

%% @doc Peak number of processes.
-spec processes(beamlab_workload:params()) -> non_neg_integer().
processes(#{n := N}) -> N.

%% @doc No state.
-spec setup(beamlab_workload:params()) -> {ok, none}.
setup(_) -> {ok, none}.

%% @doc One repetition.
-spec run(none, beamlab_workload:params()) -> {ok, beamlab_workload:rep()}.
run(none, #{n := N, variant := termite}) ->
    Before = erlang:system_info(process_count),
    T0 = erlang:monotonic_time(),
    ok = t_test(N),
    T1 = erlang:monotonic_time(),
    {Drained, After} = beamlab_workload:await_process_count(Before, 30000),
    {ok, #{value => beamlab_workload:us(T1 - T0) / N,
           counters => #{spawned => N, processes_left => After - Before},
           check => beamlab_workload:check_all([{"every child exited", true, Drained}])}};
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

%% spawn.erl's test/1.
t_test(0) -> ok;
t_test(N) ->
    F = fun() -> N end,
    _ = spawn(F),
    t_test(N - 1).
