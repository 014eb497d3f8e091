%%% @doc Words allocated and reductions of a piece of work and of every
%%% process it spawns, measured by tracing garbage collections
%%% (`set_on_spawn'): each GC start tells how much the young heap and its
%%% heap fragments grew since the previous GC of that process ended. The
%%% measuring process collects before and after the work, so its own part
%%% is exact; a spawned process is counted through its GCs, and completely
%%% when it calls {@link child_done/0} as it ends (a last GC, and its
%%% reductions reported), which code compiled by beamlab arranges.
%%% Used by the engine (`run --memory --reductions') and the suite
%%% (`suite --memory').
-module(beamlab_runtime_alloc).

-export([measure_self/1, child_done/0, gc_after/1, gc_after/3]).

-type counts() :: #{words := non_neg_integer(), reductions := non_neg_integer(),
                    spawned := non_neg_integer()}.
-export_type([counts/0]).

-define(COLLECTOR, beamlab_runtime_alloc_collector).

%% @doc Runs `Fun' in the calling process while tracing it and the
%% processes it spawns; returns its result and the counts. Leaves the
%% calling process untraced.
-spec measure_self(fun(() -> Result)) -> {Result, counts()}.
measure_self(Fun) ->
    Self = self(),
    Tracer = spawn_link(fun() -> tracer(#{}) end),
    Registered = try register(?COLLECTOR, Tracer) catch error:badarg -> false end,
    _ = erlang:trace(Self, true, [garbage_collection, procs, set_on_spawn, {tracer, Tracer}]),
    try
        erlang:garbage_collect(),
        {reductions, R0} = process_info(Self, reductions),
        Result = Fun(),
        {reductions, R1} = process_info(Self, reductions),
        erlang:garbage_collect(),
        _ = erlang:trace(Self, false, [garbage_collection, procs, set_on_spawn]),
        %% Every trace message about this process is delivered before this.
        Ref = erlang:trace_delivered(Self),
        receive {trace_delivered, Self, Ref} -> ok end,
        Tracer ! {done, Self},
        Counts = receive {Tracer, result, C} -> C end,
        {Result, #{words => maps:get(words, Counts),
                   reductions => R1 - R0 + maps:get(child_reductions, Counts),
                   spawned => maps:get(spawned, Counts)}}
    after
        _ = (catch erlang:trace(Self, false, [garbage_collection, procs, set_on_spawn])),
        Registered =:= true andalso (catch unregister(?COLLECTOR)),
        unlink(Tracer),
        exit(Tracer, kill)
    end.

%% @doc The wrapper the spawn calls of code rewritten by
%% {@link beamlab_runtime_alloc_wrap} go through: the spawned fun ends with
%% {@link child_done/0} (a last GC, so the trace sees every word it
%% allocated, and its reductions).
-spec gc_after(fun(() -> term())) -> fun(() -> term()).
gc_after(Fun) when is_function(Fun, 0) ->
    fun() ->
            try Fun()
            after
                child_done()
            end
    end;
gc_after(Other) ->
    Other.

%% @doc As {@link gc_after/1} for `spawn(M, F, Args)'.
-spec gc_after(module(), atom(), [term()]) -> fun(() -> term()).
gc_after(M, F, Args) ->
    gc_after(fun() -> apply(M, F, Args) end).

%% @doc Called by a spawned process as it ends: a last GC, so the trace sees
%% every word it allocated, and its reductions to the measurement running
%% (nothing when none runs).
-spec child_done() -> ok.
child_done() ->
    erlang:garbage_collect(),
    case whereis(?COLLECTOR) of
        undefined -> ok;
        C ->
            {reductions, R} = process_info(self(), reductions),
            C ! {?MODULE, reductions, R},
            ok
    end.

%% Per process: the used heap after its last GC (`last'), whether its
%% first GC is still to come (the measuring process's first GC is the
%% baseline), and the words counted.
tracer(St) ->
    receive
        {done, From} ->
            St1 = drain(St),
            Words = lists:sum([C || {P, #{counted := C}} <- maps:to_list(St1), is_pid(P)]),
            From ! {self(), result, #{words => Words, spawned => maps:get(spawned, St1, 0),
                                      child_reductions => maps:get(child_reductions, St1, 0)}};
        Msg ->
            tracer(event(Msg, St))
    end.

%% Children report after their last GC: wait for stragglers briefly.
%% Without children, every trace message is here already (the measuring
%% process waited for trace_delivered): no wait.
drain(St) ->
    Wait = case maps:get(spawned, St, 0) of
               0 -> 0;
               _ -> 100
           end,
    receive
        Msg -> drain(event(Msg, St))
    after Wait ->
            St
    end.

event({trace, Pid, E, Info}, St) when E =:= gc_minor_start; E =:= gc_major_start; E =:= gc_start ->
    gc_start(Pid, Info, St);
event({trace, Pid, E, Info}, St) when E =:= gc_minor_end; E =:= gc_major_end; E =:= gc_end ->
    gc_end(Pid, Info, St);
event({trace, _Parent, spawn, Child, _}, St) ->
    St#{Child => maps:get(Child, St, #{last => 0, counted => 0, baseline => false}),
        spawned => maps:get(spawned, St, 0) + 1};
event({?MODULE, reductions, R}, St) ->
    St#{child_reductions => maps:get(child_reductions, St, 0) + R};
event(_, St) ->
    St.

%% A process first seen without a spawn event is the measuring one: its
%% first GC is the baseline.
proc(Pid, St) ->
    maps:get(Pid, St, #{last => 0, counted => 0, baseline => true}).

gc_start(Pid, Info, St) ->
    P = proc(Pid, St),
    Used = proplists:get_value(heap_size, Info, 0) + proplists:get_value(mbuf_size, Info, 0),
    P1 = case P of
             #{baseline := true} -> P;
             #{last := Last, counted := C} -> P#{counted := C + max(0, Used - Last)}
         end,
    St#{Pid => P1}.

gc_end(Pid, Info, St) ->
    P = proc(Pid, St),
    St#{Pid => P#{last := proplists:get_value(heap_size, Info, 0), baseline := false}}.
