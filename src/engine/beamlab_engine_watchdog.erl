%%% @doc The memory watermark of a run. The heap limit (see
%%% {@link beamlab_engine_measure:measure/3}) stops a process whose own heap grows
%%% without bound, but not memory held outside heaps: large binaries kept
%%% in a list or a state, ETS tables. The watchdog checks the VM's total
%%% memory four times a second; when it passes the watermark (what the VM
%%% used at the start plus three quarters of the memory then left), the job
%%% holding the most memory (its processes, the binaries they reference,
%%% the ETS tables they own) fails with `{memory_watermark, ...}' and its
%%% workers are killed, so the VM survives and the other jobs go on.
-module(beamlab_engine_watchdog).

-export([start/2, stop/1]).

-define(PERIOD_MS, 250).

%% @doc Watches the jobs; `undefined' (nothing to watch) when the memory
%% left is unknown.
-spec start([beamlab_engine_job:job()], pos_integer() | unknown) -> pid() | undefined.
start(_Jobs, unknown) ->
    undefined;
start([], _Headroom) ->
    undefined;
start(Jobs, Headroom) ->
    Allowed = Headroom * 3 div 4,
    Start = erlang:memory(total),
    spawn_opt(fun() -> loop(Jobs, {Start, Allowed}) end, [link, {priority, high}]).

%% @doc Stops the watchdog (and waits for it).
-spec stop(pid() | undefined) -> ok.
stop(undefined) ->
    ok;
stop(Pid) ->
    Ref = monitor(process, Pid),
    unlink(Pid),
    Pid ! stop,
    receive {'DOWN', Ref, process, Pid, _} -> ok end.

loop([], _Limit) ->
    receive stop -> ok end;
loop(Jobs, {Start, Allowed} = Limit) ->
    receive
        stop -> ok
    after ?PERIOD_MS ->
            case erlang:memory(total) of
                Used when Used > Start + Allowed ->
                    {Worst, Held} = largest(Jobs),
                    ok = beamlab_engine_job:abort(Worst, {memory_watermark, Held, Allowed}),
                    loop(lists:delete(Worst, Jobs), Limit);
                _ ->
                    loop(Jobs, Limit)
            end
    end.

largest(Jobs) ->
    hd(lists:reverse(lists:keysort(2, [{J, held(J)} || J <- Jobs]))).

%% Memory of every process sharing the job's group leader, the binaries
%% they reference (each counted once) and the ETS tables they own.
held(Job) ->
    case erlang:process_info(Job, group_leader) of
        {group_leader, Leader} ->
            Procs = [P || P <- erlang:processes(),
                          erlang:process_info(P, group_leader) =:= {group_leader, Leader}],
            Own = lists:sum([M || P <- Procs, {memory, M} <- [erlang:process_info(P, memory)]]),
            Bins = maps:from_list([{Id, Size} || P <- Procs,
                                                 {binary, Bs} <- [erlang:process_info(P, binary)],
                                                 {Id, Size, _Refs} <- Bs]),
            Set = sets:from_list(Procs),
            Ets = lists:sum([W * erlang:system_info(wordsize)
                             || T <- ets:all(),
                                sets:is_element(ets:info(T, owner), Set),
                                W <- [ets:info(T, memory)], is_integer(W)]),
            Own + lists:sum(maps:values(Bins)) + Ets;
        undefined ->
            0
    end.
