%%% @doc The workload suite runner: turns workload names, a profile and
%%% parameter overrides into measurement points, runs every point (setup,
%%% one warm-up repetition, N measured repetitions, teardown) in a fresh
%%% worker process (or in a fresh VM with a larger process limit when the
%%% point needs more processes than this VM allows), honours a
%%% per-repetition timeout and interrupts, and builds the result document
%%% (kind `suite').
%%%
%%% The workload times itself inside `run/2'; the harness only passes the
%%% repetition's result back by one message, so its overhead is outside
%%% every measured interval.
-module(beamlab_suite).

-export([plan/3, run/2, recover/2, default_options/0, worker/6, format_error/1]).
-export_type([plan/0, options/0, run_options/0, event/0, error_reason/0]).

-type point() :: {[atom()], beamlab_workload:params()}.
-type plan() :: [{module(), [point()]}].
-type event() :: {point_start, binary(), #{isolated := boolean()}}
               | {repetition, binary(), warmup | pos_integer(), number()}
               | {point_done, binary(), ok | {error, iodata()}}.
%% Every option, as default_options/0 returns them. `command' is the
%% command line recorded in the result (given by the caller), `params' the
%% command's options recorded as the result's `params', `extra' more
%% entries for the result's `extra' (e.g. the preset a run follows).
-type run_options() :: #{profile := beamlab_workload:profile(),
                         repeat := pos_integer() | default,
                         warmup := boolean(),
                         memory := boolean(),               % one more repetition, GC-traced
                         timeout := pos_integer(),          % ms per repetition
                         progress := fun((event()) -> any()),
                         command := [unicode:chardata()],
                         params := #{atom() | binary() => term()},
                         extra := #{atom() | binary() => term()},
                         checkpoint := beamlab_runtime_checkpoint:checkpoint() | none,
                         %% every point in a fresh VM of this flavour
                         flavor := beamlab_runtime_otp:flavor() | undefined,
                         %% --ci: `repeat' is the least; more repetitions
                         %% until the point's interval is within `ci', or
                         %% `max_time' ms per point are spent
                         ci := float() | undefined,
                         max_time := pos_integer(),
                         %% cpu: each repetition's scheduler CPU time too
                         metric := time | cpu,
                         %% internal: the checkpoint writers of the run and of one point
                         save => fun((map()) -> ok),
                         save_reps => fun(([map()]) -> ok)}.
%% What callers pass: any subset of run_options().
-type options() :: #{profile => beamlab_workload:profile(),
                     repeat => pos_integer() | default,
                     warmup => boolean(),
                     memory => boolean(),
                     timeout => pos_integer(),
                     progress => fun((event()) -> any()),
                     command => [unicode:chardata()],
                     params => #{atom() | binary() => term()},
                     extra => #{atom() | binary() => term()},
                     checkpoint => beamlab_runtime_checkpoint:checkpoint() | none,
                     flavor => beamlab_runtime_otp:flavor() | undefined,
                     ci => float() | undefined,
                     max_time => pos_integer(),
                     metric => time | cpu}.
-type error_reason() :: {workload, term()}
                      | {bad_param, binary(), atom(), term()}
                      | {param_for_unselected, binary()}
                      | {not_enough_memory, pos_integer(), pos_integer(), non_neg_integer()}
                      | {isolated_vm, term()}.

%% Per process, what the VM needs on top of the workload's processes, and
%% the memory a minimal process takes (PCB + default heap, 64-bit), with
%% headroom for messages in flight.
-define(PROC_MARGIN, 10000).
-define(BYTES_PER_PROC, 4096).
-define(DEFAULT_TIMEOUT, 600000).
%% --ci: the budget per point without --max-time, the cap on repetitions.
-define(MAX_TIME, 600000).
-define(MAX_REPEAT, 10000).
%% --metric cpu: a repetition's CPU time is read over at least this much
%% of its runs (the repetition's, then more of the same until it has
%% passed), at their boundaries, where nothing of the workload runs. A
%% reading costs about 0.1 ms of counted scheduler CPU and a running
%% thread's figure lags by up to a kernel tick (4 ms at 250 Hz): over one
%% run of fib(20) (0.04 ms) they read 0.11-0.88 ms; over 100 ms of runs
%% they are a few percent of it, as over a `run --metric cpu' sample
%% (docs/statistics.md).
-define(CPU_SPAN_MS, 100).

%% @doc Resolve workload names (all built-ins when empty) and expand their
%% parameters into points. Overrides map workload name (binary) to
%% `#{Key => [Value]}' (textual values, parsed here with the param's type).
-spec plan([string()], beamlab_workload:profile(),
           #{binary() => #{atom() | string() => [string()]}}) ->
          {ok, plan()} | {error, error_reason()}.
plan([], Profile, Overrides) ->
    plan_modules(beamlab_workload:builtin(), Profile, Overrides, []);
plan(Names, Profile, Overrides) ->
    case resolve_all(Names, []) of
        {ok, Mods} -> plan_modules(Mods, Profile, Overrides, []);
        {error, _} = E -> E
    end.

%% A workload named twice runs once: benchmark names must stay unique.
resolve_all([], Acc) ->
    {ok, lists:foldr(fun(M, Seen) -> [M | lists:delete(M, Seen)] end, [], lists:reverse(Acc))};
resolve_all([N | Rest], Acc) ->
    case beamlab_workload:resolve(N) of
        {ok, M} -> resolve_all(Rest, [M | Acc]);
        {error, R} -> {error, {workload, R}}
    end.

plan_modules([], _Profile, Overrides, Acc) ->
    Known = [maps:get(name, M:info()) || {M, _} <- Acc],
    case [W || W <- maps:keys(Overrides), not lists:member(W, Known)] of
        [] -> {ok, lists:reverse(Acc)};
        [W | _] -> {error, {param_for_unselected, W}}
    end;
plan_modules([Mod | Rest], Profile, Overrides, Acc) ->
    Name = maps:get(name, Mod:info()),
    Raw = maps:get(Name, Overrides, #{}),
    case parse_overrides(Mod, Name, maps:to_list(Raw), #{}) of
        {ok, Typed} ->
            case beamlab_workload:points(Mod, Profile, Typed) of
                {ok, Points} -> plan_modules(Rest, Profile, Overrides, [{Mod, Points} | Acc]);
                {error, R} -> {error, {workload, R}}
            end;
        {error, _} = E ->
            E
    end.

parse_overrides(_Mod, _Name, [], Acc) -> {ok, Acc};
parse_overrides(Mod, Name, [{Key0, Strs} | Rest], Acc) ->
    Specs = beamlab_workload:param_specs(Mod),
    %% Keys from the command line are strings: match them against the
    %% workload's atoms rather than creating atoms from user input.
    Key = key_text(Key0),
    case [S || #{key := K} = S <- Specs, atom_to_list(K) =:= Key] of
        [] ->
            {error, {workload, {unknown_param, Name, Key, [K || #{key := K} <- Specs]}}};
        [#{key := Key1, type := Type}] ->
            case parse_all(Type, Strs, []) of
                {ok, Vs} -> parse_overrides(Mod, Name, Rest, Acc#{Key1 => Vs});
                {error, R} -> {error, {bad_param, Name, Key1, R}}
            end
    end.

key_text(K) when is_atom(K) -> atom_to_list(K);
key_text(K) when is_binary(K) -> binary_to_list(K);
key_text(K) -> K.

parse_all(_Type, [], Acc) -> {ok, lists:reverse(Acc)};
parse_all(Type, [S | Rest], Acc) ->
    case beamlab_workload:parse_value(Type, S) of
        {ok, V} -> parse_all(Type, Rest, [V | Acc]);
        {error, _} = E -> E
    end.

%% @doc Run a plan and return the result document. Never throws for a
%% failing workload: its point is reported in `extra.failures'. An
%% interrupt (`{beamlab_interrupt, _}' in the caller's mailbox) stops the
%% run; what was measured is returned with `partial => true'.
%% The document has no environment report: the caller attaches one.
%% With `checkpoint', a checkpoint names the point being run and holds
%% what was measured (see {@link recover/2}).
-spec run(plan(), options()) -> {ok, beamlab_result:result()}.
run(Plan, Opts0) ->
    Started = beamlab_runtime_clock:rfc3339(),
    Opts1 = maps:merge(default_options(), Opts0),
    Workloads = [workload_doc(Mod) || {Mod, _} <- Plan],
    Opts = Opts1#{save => saver(Opts1, Started, Workloads, Plan)},
    {Benchmarks, Failures, Partial} = run_plan(Plan, Opts, [], [], false),
    {ok, document(Opts, Started, Benchmarks, Failures, Partial, Workloads)}.

%% @doc Defaults of every option of {@link run/2}.
-spec default_options() -> run_options().
default_options() ->
    #{profile => quick, repeat => default, warmup => true, memory => false, timeout => ?DEFAULT_TIMEOUT,
      progress => fun(_) -> ok end, command => [], params => #{}, extra => #{},
      checkpoint => none, flavor => undefined, ci => undefined, max_time => ?MAX_TIME, metric => time}.

saver(#{checkpoint := none}, _Started, _Workloads, _Plan) ->
    fun(_) -> ok end;
saver(#{checkpoint := Cp} = Opts, Started, Workloads, Plan) ->
    Context = #{opts => maps:without([progress, checkpoint], Opts), started_at => Started,
                workloads => Workloads,
                points => [beamlab_workload:point_name(maps:get(name, beamlab_workload:info(Mod)), P)
                           || {Mod, Points} <- Plan, P <- Points]},
    fun(Progress) -> beamlab_runtime_checkpoint:save(Cp, #{suite => Context, progress => Progress}) end.

%% @doc The document of a suite run whose VM stopped (the benchmarked
%% workload called halt, ran the VM out of memory) from its last
%% checkpoint (the `state' {@link beamlab_runtime_checkpoint:load/1}
%% returns) and the VM's exit status: partial, the point that was running
%% failed, the points never started in `extra.not_run', and
%% `extra.vm_stopped' says which point and the likely cause.
-spec recover(term(), integer()) -> {ok, beamlab_result:result()} | {error, bad_checkpoint}.
recover(#{suite := #{opts := Opts, started_at := Started, workloads := Workloads, points := Names},
          progress := #{bs := Bs, fs := Fs, current := Current} = P}, Status) ->
    Cause = unicode:characters_to_binary(beamlab_runtime_checkpoint:cause(Status)),
    {CurrentBs, Stopped, NotRun} =
        case Current of
            none ->
                {[], [], []};
            _ ->
                {Info, Point} = maps:get(point, P),
                Err = io_lib:format("the VM stopped (exit status ~b) while this point ran: ~ts",
                                    [Status, Cause]),
                %% 130: SIGINT to the VM alone, an interrupt: no failure.
                {benchmarks(Info, Current, Point, lists:reverse(maps:get(reps, P))),
                 [#{name => Current, error => iolist_to_binary(Err)} || Status =/= 130],
                 case lists:dropwhile(fun(N) -> N =/= Current end, Names) of
                     [_ | After] -> After;
                     [] -> []
                 end}
        end,
    Extra = maps:merge(maps:get(extra, Opts),
                       #{vm_stopped => #{point => case Current of none -> null; _ -> Current end,
                                         exit_status => Status, cause => Cause},
                         not_run => NotRun}),
    {ok, document(Opts#{extra => Extra}, Started, lists:reverse(CurrentBs ++ Bs),
                  lists:reverse(Fs) ++ Stopped, true, Workloads)};
recover(_, _Status) ->
    {error, bad_checkpoint}.

run_plan([], _Opts, Bs, Fs, Partial) ->
    {lists:reverse(Bs), lists:reverse(Fs), Partial};
run_plan([{_Mod, []} | Rest], Opts, Bs, Fs, Partial) ->
    run_plan(Rest, Opts, Bs, Fs, Partial);
run_plan([{Mod, [Point | Points]} | Rest], #{save := Save} = Opts, Bs, Fs, _) ->
    Info = beamlab_workload:info(Mod),
    Name = beamlab_workload:point_name(maps:get(name, Info), Point),
    %% The point's code runs from here on: the checkpoint names it, with
    %% its repetitions as they come.
    SaveReps = fun(Reps) ->
                       Save(#{bs => Bs, fs => Fs, current => Name, point => {Info, Point}, reps => Reps})
               end,
    ok = SaveReps([]),
    {Reps, Status} = run_point(Mod, Info, Name, Point, Opts#{save_reps => SaveReps}),
    NewBs = benchmarks(Info, Name, Point, Reps) ++ Bs,
    NewFs = case Status of
                ok -> Fs;
                interrupted -> Fs;
                {error, Msg} -> [#{name => Name, error => iolist_to_binary(Msg)} | Fs]
            end,
    (maps:get(progress, Opts))({point_done, Name, case Status of
                                                       interrupted -> {error, "interrupted"};
                                                       _ -> Status
                                                   end}),
    case Status of
        interrupted -> {lists:reverse(NewBs), lists:reverse(NewFs), true};
        _ -> run_plan([{Mod, Points} | Rest], Opts, NewBs, NewFs, false)
    end.

%% Returns the measured repetitions (maps, in order) and the point's status.
run_point(Mod, Info, Name, {_, Params}, Opts) ->
    Reps = case maps:get(repeat, Opts) of
               default -> maps:get(maps:get(profile, Opts), maps:get(repeat, Info),
                                   default_repeat(maps:get(profile, Opts)));
               N -> N
           end,
    Warmup = maps:get(warmup, Opts) andalso maps:get(warmup, Info),
    case placement(Mod, Params, maps:get(flavor, Opts)) of
        {error, R} ->
            {[], {error, format_error(R)}};
        {ok, Where} ->
            (maps:get(progress, Opts))({point_start, Name, #{isolated => Where =/= local}}),
            case start_vm(Where, Mod, maps:get(flavor, Opts)) of
                {ok, Node, Peer} ->
                    try
                        %% The worker is not linked: the harness outlives a
                        %% crashing workload and reports it.
                        Now = erlang:monotonic_time(millisecond),
                        {Pid, MRef} = spawn_monitor(Node, ?MODULE, worker,
                                                    [self(), Mod, Params, worker_reps(Reps, Opts), Warmup,
                                                     memory_arg(maps:get(memory, Opts, false), Node, Mod)]),
                        collect(Pid, MRef, Name, Mod, Opts#{point_reps => Reps, point_start => Now}, [],
                                {Name, Now})
                    after
                        stop_vm(Peer)
                    end;
                {error, R} ->
                    {[], {error, format_error(R)}}
            end
    end.

%% A fresh VM got the workload as a binary and cannot read its object code
%% back: the wrapped copy of `--memory' is built there from ours.
memory_arg(true, Node, Mod) when Node =/= node() ->
    case code:get_object_code(Mod) of
        {Mod, Bin, _} -> {object_code, Bin};
        error -> true
    end;
memory_arg(Memory, _Node, _Mod) ->
    Memory.

%% What the worker is told: a count, or (--ci) to ask after each
%% repetition; with (--metric cpu) its scheduler CPU time measured too.
worker_reps(Reps, Opts) ->
    Count = case maps:get(ci, Opts, undefined) of
                undefined -> Reps;
                _ -> {ci, Reps}
            end,
    case maps:get(metric, Opts, time) of
        cpu -> {cpu, Count};
        time -> Count
    end.

%% --ci: after a measured repetition, whether the worker goes on (told to
%% it); the repetition that ended the point carries why (`stopped_by').
go_on(Pid, Rep, Acc, #{ci := Ci} = Opts) when is_number(Ci) ->
    Values = judged(Acc),
    Min = maps:get(point_reps, Opts),
    State = #{ci => Ci, elapsed => erlang:monotonic_time(millisecond) - maps:get(point_start, Opts),
              max_time => maps:get(max_time, Opts), repetitions => length(Acc), min => Min,
              max_repeat => ?MAX_REPEAT,
              unmet => case beamlab_stats_stop:met(Values, Ci, Min) of
                           true -> [];
                           false -> [point]
                       end},
    case beamlab_stats_stop:decide(State) of
        continue ->
            Pid ! {suite_go, self(), true},
            Rep;
        {stop, Reason} ->
            Pid ! {suite_go, self(), false},
            Rep#{stopped_by => Reason}
    end;
go_on(_Pid, Rep, _Acc, _Opts) ->
    Rep.

%% What --ci judges: the repetitions' CPU time when measured, else their
%% values.
judged(Reps) ->
    case [C || #{cpu_ns := C} <- Reps] of
        Cpu when length(Cpu) =:= length(Reps) -> Cpu;
        _ -> [V || #{value := V} <- Reps]
    end.

default_repeat(quick) -> 5;
default_repeat(full) -> 10.

%% A point whose peak process count does not fit under this VM's limit runs
%% in a fresh VM with +P large enough, after a memory estimate; with a
%% flavour, every point runs in a fresh VM of that flavour.
placement(Mod, Params, Flavor) ->
    case erlang:function_exported(Mod, processes, 1) of
        false when Flavor =:= undefined -> {ok, local};
        false -> {ok, {isolated, 0}};
        true ->
            Need = Mod:processes(Params) + ?PROC_MARGIN,
            Avail = erlang:system_info(process_limit) - erlang:system_info(process_count),
            case memory_ok(Need) of
                {error, _} = E -> E;
                ok when Need =< Avail, Flavor =:= undefined -> {ok, local};
                ok when Need =< Avail -> {ok, {isolated, 0}};
                ok -> {ok, {isolated, Need}}
            end
    end.

memory_ok(Procs) ->
    Need = Procs * ?BYTES_PER_PROC,
    case available_memory() of
        unknown -> ok;
        Avail when Need =< Avail -> ok;
        Avail -> {error, {not_enough_memory, Procs, Need, Avail}}
    end.

available_memory() ->
    case file:read_file("/proc/meminfo") of
        {ok, Bin} ->
            case re:run(Bin, "MemAvailable:\\s+(\\d+) kB", [{capture, all_but_first, list}]) of
                {match, [Kb]} -> list_to_integer(Kb) * 1024;
                nomatch -> unknown
            end;
        {error, _} ->
            unknown
    end.

start_vm(local, _Mod, _Flavor) -> {ok, node(), none};
start_vm({isolated, Need}, Mod, Flavor) ->
    %% The VM rounds +P up to a power of two; ask for twice the need (a
    %% point in a fresh VM only for its flavour keeps the default).
    Args = case Need of
               0 -> [];
               _ -> ["+P", integer_to_list(max(2 * Need, 1048576))]
           end,
    Paths = case code:which(Mod) of
                File when is_list(File) -> [filename:dirname(File)];
                _ -> []
            end,
    Opts = #{args => Args, paths => Paths},
    case beamlab_suite_dist:start_peer(case Flavor of
                                           undefined -> Opts;
                                           _ -> Opts#{flavor => Flavor}
                                       end) of
        {ok, Vm, Node} -> {ok, Node, Vm};
        {error, R} -> {error, {isolated_vm, R}}
    end.

stop_vm(none) -> ok;
stop_vm(Peer) -> beamlab_suite_dist:stop_peer(Peer).

%% `Pace': the last checkpoint (at most one a second while the point runs).
collect(Pid, MRef, Name, Mod, Opts, Acc, Pace) ->
    Timeout = maps:get(timeout, Opts),
    Progress = maps:get(progress, Opts),
    receive
        {suite_rep, Pid, Which, #{value := V} = Rep} ->
            _ = Progress({repetition, Name, Which, V}),
            case Which of
                warmup ->
                    collect(Pid, MRef, Name, Mod, Opts, Acc, Pace);
                _ ->
                    Acc1 = [go_on(Pid, Rep, [Rep | Acc], Opts) | Acc],
                    Pace1 = case beamlab_runtime_checkpoint:due(Name, Pace,
                                                                erlang:monotonic_time(millisecond)) of
                                false -> Pace;
                                {true, P} -> ok = (maps:get(save_reps, Opts))(Acc1), P
                            end,
                    collect(Pid, MRef, Name, Mod, Opts, Acc1, Pace1)
            end;
        {suite_alloc, Pid, Counts} ->
            %% --memory: the traced repetition after the measured ones; its
            %% counts ride on the last measured repetition.
            case Acc of
                [Last | Before] -> collect(Pid, MRef, Name, Mod, Opts, [Last#{alloc => Counts} | Before], Pace);
                [] -> collect(Pid, MRef, Name, Mod, Opts, Acc, Pace)
            end;
        {suite_error, Pid, Stage, Reason} ->
            stop_worker(Pid, MRef),
            {lists:reverse(Acc), {error, stage_error(Mod, Stage, Reason)}};
        {suite_done, Pid} ->
            receive {'DOWN', MRef, process, Pid, _} -> ok end,
            {lists:reverse(Acc), ok};
        {'DOWN', MRef, process, Pid, noconnection} ->
            {lists:reverse(Acc),
             {error, "the VM running the workload went down (out of memory?)"}};
        {'DOWN', MRef, process, Pid, Reason} ->
            {lists:reverse(Acc), {error, stage_error(Mod, run, {crashed, Reason})}};
        {beamlab_interrupt, _} ->
            stop_worker(Pid, MRef),
            {lists:reverse(Acc), interrupted}
    after Timeout ->
            stop_worker(Pid, MRef),
            {lists:reverse(Acc),
             {error, io_lib:format("a repetition took longer than the timeout (~b s)",
                                   [Timeout div 1000])}}
    end.

stop_worker(Pid, MRef) ->
    exit(Pid, kill),
    receive {'DOWN', MRef, process, Pid, _} -> ok end.

stage_error(_Mod, _Stage, {cpu, R}) ->
    beamlab_runtime_cpu:format_error(R);
stage_error(_Mod, Stage, {crashed, {Class, Reason, Stack}}) ->
    Where = case Stack of
                [{M, F, A, Loc} | _] ->
                    Arity = if is_list(A) -> length(A); true -> A end,
                    io_lib:format(" in ~s:~s/~b (line ~p)",
                                  [M, F, Arity, proplists:get_value(line, Loc, '?')]);
                _ -> ""
            end,
    Hint = case Reason of
               system_limit -> " (a VM limit was reached: processes, ports, atoms or ETS tables)";
               _ -> ""
           end,
    io_lib:format("~s crashed: ~s:~0P~s~s", [Stage, Class, Reason, 12, Where, Hint]);
stage_error(_Mod, Stage, {crashed, Reason}) ->
    io_lib:format("~s crashed: ~0P", [Stage, Reason, 12]);
stage_error(Mod, Stage, Reason) ->
    Text = case erlang:function_exported(Mod, format_error, 1) of
               true -> try Mod:format_error(Reason) catch _:_ -> io_lib:format("~0p", [Reason]) end;
               false -> io_lib:format("~0p", [Reason])
           end,
    [atom_to_list(Stage), " failed: ", Text].

%% @doc The worker process that runs one point: setup, optional warm-up
%% repetition, `Reps' measured repetitions, teardown, reporting each
%% repetition to `Harness' by one message. Runs in a fresh process so each
%% point starts with a small heap and an empty mailbox.
%% With `Memory', one more repetition after them runs under
%% `beamlab_runtime_alloc' (its words, reductions and spawned processes go
%% to the harness as `suite_alloc'; its time is not a sample), in the
%% workload's wrapped copy (built from `{object_code, Bin}' when given).
%% `{ci, Min}': after each measured repetition the worker waits for the
%% harness to say whether to go on (`{suite_go, Harness, Bool}');
%% `{cpu, Reps}': each repetition also carries the CPU time of this VM's
%% scheduler threads while it ran (`cpu_ns', beamlab_runtime_cpu).
-spec worker(pid(), module(), beamlab_workload:params(),
             pos_integer() | {ci, pos_integer()} | {cpu, pos_integer() | {ci, pos_integer()}}, boolean(),
             boolean() | {object_code, binary()}) -> ok.
worker(Harness, Mod, Params, {cpu, Reps}, Warmup, Memory) ->
    case beamlab_runtime_cpu:threads() of
        {ok, Threads} -> worker(Harness, Mod, Params, Reps, Warmup, Memory, Threads);
        {error, R} -> Harness ! {suite_error, self(), setup, {cpu, R}}, ok
    end;
worker(Harness, Mod, Params, Reps, Warmup, Memory) ->
    worker(Harness, Mod, Params, Reps, Warmup, Memory, none).

worker(Harness, Mod, Params, Reps, Warmup, Memory, Cpu) ->
    case catch_stage(fun() -> Mod:setup(Params) end) of
        {ok, {ok, State}} ->
            Measured = case Reps of
                           {ci, _} -> [{ci, 1}];
                           N -> lists:seq(1, N)
                       end,
            Order = [warmup || Warmup] ++ Measured ++ [{memory, Memory} || Memory =/= false],
            State1 = reps({Harness, Cpu}, Mod, Params, State, Order),
            _ = catch_stage(fun() -> Mod:teardown(State1) end),
            Harness ! {suite_done, self()},
            ok;
        {ok, {error, R}} -> Harness ! {suite_error, self(), setup, R}, ok;
        {ok, Other} -> Harness ! {suite_error, self(), setup, {bad_return, Other}}, ok;
        {crashed, R} -> Harness ! {suite_error, self(), setup, {crashed, R}}, ok
    end.

%% `To': the harness and the CPU threads to read (`none').
reps(_To, _Mod, _Params, State, []) -> State;
reps({Harness, _}, Mod, Params, State, [{memory, Memory}]) ->
    %% The repetition runs the workload's wrapped copy (same code, its spawns
    %% end with a last GC), built before the measurement; without debug
    %% information the workload itself, its processes seen through their GCs.
    ObjectCode = case Memory of
                     {object_code, Bin} -> Bin;
                     true -> none
                 end,
    {Run, Wrapped} = try beamlab_runtime_alloc_wrap:module(Mod, ObjectCode) of
                         {ok, Copy} -> {Copy, true};
                         {error, Why} -> {Mod, iolist_to_binary(beamlab_runtime_alloc_wrap:format_error(Why))}
                     catch
                         Class:Reason ->
                             {Mod, iolist_to_binary(io_lib:format("the wrapped copy of ~ts failed: ~0tp:~0tP",
                                                                  [Mod, Class, Reason, 8]))}
                     end,
    case catch_stage(fun() -> beamlab_runtime_alloc:measure_self(fun() -> Run:run(State, Params) end) end) of
        {ok, {{ok, _Rep}, Counts}} -> Harness ! {suite_alloc, self(), Counts#{wrapped => Wrapped}}, State;
        {ok, {{ok, _Rep, State1}, Counts}} -> Harness ! {suite_alloc, self(), Counts#{wrapped => Wrapped}}, State1;
        _ -> State
    end;
reps({Harness, _} = To, Mod, Params, State, [{ci, I} | Rest]) ->
    %% (--ci: the harness says whether another repetition follows)
    case rep(To, Mod, Params, State, I) of
        {ok, State1} ->
            receive
                {suite_go, Harness, true} -> reps(To, Mod, Params, State1, [{ci, I + 1} | Rest]);
                {suite_go, Harness, false} -> reps(To, Mod, Params, State1, Rest)
            end;
        {error, State1} ->
            State1
    end;
reps(To, Mod, Params, State, [Which | Rest]) ->
    case rep(To, Mod, Params, State, Which) of
        {ok, State1} -> reps(To, Mod, Params, State1, Rest);
        {error, State1} -> State1
    end.

%% One repetition, told to the harness (with its CPU time when measured:
%% per run, over runs of at least CPU_SPAN_MS; the repetition's own
%% figures are its first run's).
rep({Harness, Cpu}, Mod, Params, State, Which) ->
    Before = cpu(Cpu),
    Until = erlang:monotonic_time(millisecond) + ?CPU_SPAN_MS,
    First = catch_stage(fun() -> Mod:run(State, Params) end),
    {Result, Used} = case {Before, ok_state(First, State)} of
                         {none, _} -> {First, #{}};
                         {_, error} -> {First, #{}};
                         {_, {ok, S1}} ->
                             case more_runs(Mod, Params, S1, Until, 1) of
                                 {ok, S2, Runs} ->
                                     {with_state(First, S2),
                                      #{cpu_ns => (cpu(Cpu) - Before) / Runs, cpu_runs => Runs}};
                                 {error, Failed} ->
                                     {Failed, #{}}
                             end
                     end,
    case Result of
        {ok, {ok, #{value := V} = Rep}} when is_number(V) ->
            Harness ! {suite_rep, self(), Which, maps:merge(Rep, Used)},
            {ok, State};
        {ok, {ok, #{value := V} = Rep, State1}} when is_number(V) ->
            Harness ! {suite_rep, self(), Which, maps:merge(Rep, Used)},
            {ok, State1};
        {ok, {error, R}} ->
            Harness ! {suite_error, self(), run, R},
            {error, State};
        {ok, Other} ->
            Harness ! {suite_error, self(), run, {bad_return, Other}},
            {error, State};
        {crashed, R} ->
            Harness ! {suite_error, self(), run, {crashed, R}},
            {error, State}
    end.

cpu(none) -> none;
cpu(Threads) -> beamlab_runtime_cpu:read(Threads).

%% The state after a run that succeeded, or `error'.
ok_state({ok, {ok, #{value := V}}}, State) when is_number(V) -> {ok, State};
ok_state({ok, {ok, #{value := V}, State1}}, _State) when is_number(V) -> {ok, State1};
ok_state(_, _) -> error.

%% A first run's result with the state the runs after it left.
with_state({ok, {ok, Rep}}, State) -> {ok, {ok, Rep, State}};
with_state({ok, {ok, Rep, _}}, State) -> {ok, {ok, Rep, State}}.

%% --metric cpu: more runs of the repetition until `Until' (monotonic
%% ms), `Runs' done so far; a run that fails is the repetition's failure.
more_runs(Mod, Params, State, Until, Runs) ->
    case erlang:monotonic_time(millisecond) >= Until of
        true -> {ok, State, Runs};
        false ->
            Result = catch_stage(fun() -> Mod:run(State, Params) end),
            case ok_state(Result, State) of
                {ok, State1} -> more_runs(Mod, Params, State1, Until, Runs + 1);
                error -> {error, Result}
            end
    end.

%% `suite --memory': words (and bytes), reductions and spawned processes of
%% one repetition, as `extra.per_repetition'.
with_alloc(#{alloc := #{words := W, reductions := R, spawned := S} = A}, Extra) ->
    Extra#{per_repetition => #{words => W, bytes => W * erlang:system_info(wordsize),
                               reductions => R, spawned => S,
                               %% true: every process the workload's code spawned
                               %% ended with a last GC; else why not.
                               spawns_wrapped => maps:get(wrapped, A, false)}};
with_alloc(_Rep, Extra) ->
    Extra.

catch_stage(F) ->
    try {ok, F()}
    catch Class:Reason:Stack -> {crashed, {Class, Reason, Stack}}
    end.

%% One benchmark for the primary metric (named by the workload's info, or
%% by the repetition's `metric' when its variant measures something else)
%% and one per secondary metric the repetitions report.
benchmarks(_Info, _Name, _Point, []) -> [];
benchmarks(Info, Name, {_, Params}, Reps) ->
    Last = lists:last(Reps),
    Check = combined_check(Reps),
    Common = #{group => maps:get(name, Info), params => beamlab_workload:params_to_map(Params)},
    %% `extra.point': the point every benchmark of it measures (`fib[n=16]',
    %% beside `fib[n=16]/cpu'), what the report's titles name before the
    %% measure instead of reading it out of the benchmark's name.
    Metric = maps:get(metric, Last, maps:get(metric, Info)),
    Primary = beamlab_result:benchmark(
                Name, [V || #{value := V} <- Reps],
                (maps:merge(Common, measure(Info, Metric)))#{metric => Metric,
                        unit => maps:get(unit, Info),
                        better => maps:get(better, Info),
                        counters => maps:get(counters, Last, #{}),
                        extra => stopped(Reps, with_alloc(Last, (maps:get(extra, Last, #{}))#{check => Check,
                                                                                             point => Name}))}),
    Secondary = [beamlab_result:benchmark(
                   [Name, $/, atom_to_binary(K)],
                   [maps:get(K, maps:get(metrics, R, #{}), 0) || R <- Reps],
                   (maps:merge(Common, maps:with([measure], Spec)))#{metric => atom_to_binary(K), unit => U, better => B,
                           extra => #{check => Check, point => Name}})
                 || #{key := K, unit := U, better := B} = Spec <- maps:get(metrics, Info),
                    %% A metric only some variants report is left out of the others.
                    lists:all(fun(R) -> maps:is_key(K, maps:get(metrics, R, #{})) end, Reps)],
    %% --metric cpu: the scheduler threads' CPU time of each repetition
    %% (ms per run, read over the repetition's runs: `cpu_runs'), what
    %% --ci judges then.
    Cpu = [beamlab_result:benchmark(
             [Name, "/cpu"], [C / 1.0e6 || #{cpu_ns := C} <- Reps],
             Common#{metric => <<"cpu">>, unit => <<"ms">>, better => lower,
                     measure => <<"CPU time per repetition">>,
                     extra => #{check => Check, point => Name,
                                cpu_source => <<"scheduler threads (/proc/self/task/*/schedstat)">>,
                                cpu_runs => [maps:get(cpu_runs, R, 1) || R <- Reps]}})
           || lists:all(fun(R) -> is_map_key(cpu_ns, R) end, Reps)],
    lists:reverse([Primary | Secondary] ++ Cpu).

%% What the primary metric measures, in words, when its unit is a time
%% (the report's titles: `fib: wall-clock time per repetition (ms)'):
%% the workload's own words (`measure'), else per what its metric says
%% (`time': a repetition; `round_trip': a round trip; `per_process': a
%% process). A rate says its measure in its unit.
measure(Info, Metric) ->
    case {maps:find(measure, Info), lists:member(maps:get(unit, Info), [<<"ns">>, <<"us">>, <<"ms">>, <<"s">>])} of
        {{ok, M}, _} when Metric =:= map_get(metric, Info) -> #{measure => M};
        {_, true} -> #{measure => <<"wall-clock time per ", (per(Metric))/binary>>};
        {_, false} -> #{}
    end.

per(<<"time">>) -> <<"repetition">>;
per(<<"per_", What/binary>>) -> per(What);
per(What) -> binary:replace(What, <<"_">>, <<" ">>, [global]).

%% --ci: what ended the point's repetitions (the last one says).
stopped(Reps, Extra) ->
    case [By || #{stopped_by := By} <- Reps] of
        [By | _] -> Extra#{stopped_by => By};
        [] -> Extra
    end.

%% The point's check is the first failure over its repetitions, else the
%% weakest status (unchecked if any repetition could not check itself).
combined_check(Reps) ->
    Checks = [maps:get(check, R, unchecked) || R <- Reps],
    case [Why || {failed, Why} <- Checks] of
        [Why | _] -> <<"failed: ", Why/binary>>;
        [] ->
            case lists:member(unchecked, Checks) of
                true -> <<"unchecked">>;
                false -> <<"ok">>
            end
    end.

workload_doc(Mod) ->
    Info = beamlab_workload:info(Mod),
    #{name => maps:get(name, Info), definition => maps:get(definition, Info),
      unit => maps:get(unit, Info), checks => maps:get(checks, Info),
      module => atom_to_binary(Mod)}.

document(Opts, Started, Benchmarks, Failures, Partial, Workloads) ->
    Doc0 = beamlab_result:new(suite, #{command => maps:get(command, Opts),
                                       started_at => Started,
                                       params => maps:get(params, Opts)}),
    Doc1 = beamlab_result:add_benchmarks(Doc0, Benchmarks),
    Doc2 = beamlab_result:set(extra, maps:merge(maps:merge(maps:get(extra, Opts),
                                                           #{workloads => Workloads, failures => Failures}),
                                                stopping(Opts, Benchmarks, Partial)),
                              Doc1),
    beamlab_result:finish(Doc2, #{finished_at => beamlab_runtime_clock:rfc3339(),
                                  partial => Partial}).

%% --ci: what ended the run (`interrupted', else the points' reason that
%% is furthest from confident) and the points that did not meet it.
stopping(#{ci := Ci}, Benchmarks, Partial) when is_number(Ci) ->
    Points = [{N, By} || #{name := N, extra := X} <- Benchmarks,
                         By <- [maps:get(<<"stopped_by">>, X, maps:get(stopped_by, X, none))], By =/= none],
    Reasons = [beamlab_format_units:to_binary(By) || {_, By} <- Points],
    #{stopped_by => if
                        Partial -> interrupted;
                        true ->
                            case [R || R <- [<<"max_time">>, <<"max_repeat">>], lists:member(R, Reasons)] of
                                [R | _] -> R;
                                [] -> converged
                            end
                    end,
      unconfident => [N || {N, By} <- Points, beamlab_format_units:to_binary(By) =/= <<"converged">>]};
stopping(_Opts, _Benchmarks, _Partial) ->
    #{}.

%% @doc One line per error.
-spec format_error(error_reason()) -> iolist().
format_error(Reason) ->
    beamlab_format_reason:line(fun error_line/1, Reason).

error_line({workload, R}) -> beamlab_workload:format_error(R);
error_line({bad_param, W, K, R}) ->
    [W, $., atom_to_list(K), ": ", beamlab_workload:format_error(R)];
error_line({param_for_unselected, W}) ->
    io_lib:format("--param for workload '~ts', which is not selected or does not exist", [W]);
error_line({not_enough_memory, Procs, Need, Avail}) ->
    io_lib:format("needs about ~b MB for ~b processes but only ~b MB of memory is available",
                  [Need div 1048576, Procs, Avail div 1048576]);
error_line({isolated_vm, R}) ->
    ["could not start a VM with a larger process limit: ", beamlab_suite_dist:format_error(R)];
error_line(Other) ->
    io_lib:format("~0p", [Other]).
