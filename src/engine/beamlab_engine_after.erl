%%% @doc Phases that run after the timed samples, so they never touch the
%%% figures: an in-VM profiler over the runner (`eprof', `fprof', `cprof',
%%% `tprof' on OTP 27 and later), with microstate accounting for the
%%% profiled period on request, and the words allocated and reductions per
%%% runner iteration, each in its own phase.
%%%
%%% Memory per iteration is measured by tracing garbage collections of the
%%% measuring process and of every process it spawns
%%% ({@link beamlab_runtime_alloc}). Code given to beamlab is compiled with
%%% its spawn calls wrapped so that a spawned process collects once more
%%% just before it ends: the words it allocated after its last GC are
%%% counted too, and it reports its reductions. The per-iteration figure is
%%% `(W(N) - W(0)) / N', which removes the measuring overhead.
%%% On OTP 26 and later, `call_memory' tracing names the functions that
%%% allocate.
-module(beamlab_engine_after).

-export([profile/3, per_iteration/2, tools/0, format_error/1]).

-type tool() :: eprof | fprof | cprof | tprof.
-type json_object() :: #{binary() => beamlab_json:json()}.
-type error_reason() :: {unsupported_tool, tool(), string()} | {compile, term()} | {runner, term()}.
-export_type([tool/0, error_reason/0]).

-define(TARGET_MS, 200).
-define(MAX_ROWS, 30).

%% @doc The profilers this VM offers.
-spec tools() -> [tool()].
tools() ->
    [eprof, fprof, cprof] ++ case otp() >= 27 of true -> [tprof]; false -> [] end.

otp() ->
    list_to_integer(erlang:system_info(otp_release)).

%% @doc Profiles the runner of `Job' with `Tool' for about 200 ms of
%% unprofiled work (`#{msacc => true}' adds microstate accounting).
%% Returns `tool', `unit', `iterations', `rows' (function, calls, value,
%% share; at most 30, by value) and `msacc'.
-spec profile(beamlab_engine:job_spec(), tool(), #{msacc => boolean()}) ->
          {ok, json_object()} | {error, error_reason()}.
profile(Job, Tool, Opts) ->
    case lists:member(Tool, tools()) of
        false -> {error, {unsupported_tool, Tool, erlang:system_info(otp_release)}};
        true ->
            with_exec(Job, #{}, fun(Exec, IRR) ->
                                        N = calibrate(Exec, IRR, case Tool of fprof -> 20; _ -> ?TARGET_MS end),
                                        Msacc = maps:get(msacc, Opts, false) andalso msacc_start(),
                                        Rows = run_tool(Tool, fun() -> beamlab_engine_code:timed(Exec, N, IRR) end),
                                        M = msacc_stop(Msacc),
                                        #{<<"tool">> => atom_to_binary(Tool), <<"unit">> => unit(Tool),
                                          <<"iterations">> => N, <<"rows">> => rows(Rows),
                                          <<"msacc">> => M}
                                end)
    end.

unit(cprof) -> <<"count">>;
unit(_) -> <<"us">>.

%% @doc Words allocated (`#{memory => true}') and reductions
%% (`#{reductions => true}') per iteration of the runner of `Job',
%% counting the processes it spawns.
-spec per_iteration(beamlab_engine:job_spec(), #{memory => boolean(), reductions => boolean()}) ->
          {ok, json_object()} | {error, error_reason()}.
per_iteration(Job, Opts) ->
    with_exec(Job, #{wrap_spawns => true},
              fun(Exec, IRR) ->
                      N = max(1, calibrate(Exec, IRR, 50)),
                      Base = measure(Exec, IRR, 0, false),
                      Full = measure(Exec, IRR, N, otp() >= 26 andalso maps:get(memory, Opts, false)),
                      Per = fun(K) -> (maps:get(K, Full) - maps:get(K, Base)) / N end,
                      Words = Per(words),
                      M0 = #{<<"iterations">> => N,
                             <<"spawned">> => round(Per(spawned))},
                      M1 = case maps:get(memory, Opts, false) of
                               true -> M0#{<<"words">> => round1(Words),
                                           <<"bytes">> => round(Words * erlang:system_info(wordsize)),
                                           <<"allocators">> => allocators(maps:get(allocators, Full), N)};
                               false -> M0
                           end,
                      case maps:get(reductions, Opts, false) of
                          true -> M1#{<<"reductions">> => round1(Per(reductions))};
                          false -> M1
                      end
              end).

round1(X) -> round(X * 10) / 10.

with_exec(Job, CompileOpts, Fun) ->
    case beamlab_engine_code:compile(Job, CompileOpts) of
        {ok, Exec} ->
            try
                Init = beamlab_engine_code:call_init(Exec),
                IRR = beamlab_engine_code:call_init_runner(Exec, Init),
                try {ok, Fun(Exec, IRR)}
                after
                    _ = beamlab_engine_code:call_done(Exec, Init)
                end
            catch
                %% The user's frames only: the harness's (the generated
                %% module, the engine) say nothing to them (#34).
                Class:Reason:Stack ->
                    {error, {runner, {Class, Reason, beamlab_engine_code:user_frames(Stack)}}}
            after
                beamlab_engine_code:purge(Exec)
            end;
        {error, Reason} ->
            {error, {compile, Reason}}
    end.

%% Iterations that take about `Ms' unprofiled (found in a fresh process,
%% whose mailbox and heap are the runner's alone).
calibrate(Exec, IRR, Ms) ->
    aside(fun() -> calibrate(Exec, IRR, Ms * 1000000, 1) end).

%% Fun's value, computed in a fresh process. What it raises is raised
%% here with its own class, reason and stack: a crash of that process
%% would be logged by OTP ("Error in process ... with exit value") and
%% reach us as an exit reason with the stack folded in.
aside(Fun) ->
    Self = self(),
    {Pid, Ref} = spawn_monitor(fun() ->
                                       Self ! {self(), try {value, Fun()}
                                                       catch C:R:St -> {raised, C, R, St}
                                                       end}
                               end),
    receive
        {Pid, {value, V}} ->
            receive {'DOWN', Ref, process, Pid, _} -> V end;
        {Pid, {raised, C, R, St}} ->
            receive {'DOWN', Ref, process, Pid, _} -> ok end,
            erlang:raise(C, R, St);
        {'DOWN', Ref, process, Pid, Reason} ->
            exit(Reason)
    end.

calibrate(Exec, IRR, TargetNs, N) ->
    T = beamlab_engine_code:timed(Exec, N, IRR),
    if
        T >= TargetNs div 4; N >= 1 bsl 26 -> max(1, round(N * TargetNs / max(T, 1)));
        true -> calibrate(Exec, IRR, TargetNs, N * 4)
    end.

%%--------------------------------------------------------------------
%% Profilers: each returns [{MFA, Calls, Value}].

run_tool(eprof, Run) ->
    _ = eprof:start(),
    try
        _ = eprof:profile([], Run),
        Data = eprof:dump(),
        merge([{MFA, C, T} || {_Pid, Fs} <- Data, {MFA, {C, T}} <- Fs])
    after
        eprof:stop()
    end;
run_tool(fprof, Run) ->
    silently(fun() -> fprof_rows(Run) end);
run_tool(cprof, Run) ->
    cprof_rows(Run);
run_tool(tprof, Run) ->
    tprof_rows(Run).

%% fprof reports its progress on the group leader: a sink takes it.
silently(Fun) ->
    Old = group_leader(),
    Sink = spawn_link(fun Loop() ->
                              receive
                                  {io_request, From, ReplyAs, _} -> From ! {io_reply, ReplyAs, ok}, Loop();
                                  stop -> ok
                              end
                      end),
    group_leader(Sink, self()),
    try Fun()
    after
        group_leader(Old, self()),
        unlink(Sink),
        Sink ! stop
    end.

fprof_rows(Run) ->
    %% fprof writes its files itself: in a new directory only we can enter.
    {ok, Dir} = beamlab_runtime_file:private_dir("beamlab-fprof"),
    Base = filename:join(Dir, "fprof"),
    Trace = Base ++ ".trace",
    Out = Base ++ ".analysis",
    try
        _ = fprof:apply(Run, [], [{file, Trace}]),
        ok = fprof:profile([{file, Trace}]),
        ok = fprof:analyse([{dest, Out}, {totals, false}, {details, true}]),
        {ok, Terms} = file:consult(Out),
        %% {[Callers], {MFA, Cnt, Acc, Own}, [Callees]}: own time in ms.
        merge([{MFA, Cnt, Own * 1000} || {Callers, {MFA, Cnt, _Acc, Own}, _} <- Terms,
                                         is_list(Callers), is_tuple(MFA), tuple_size(MFA) =:= 3])
    after
        _ = fprof:stop(),
        _ = file:del_dir_r(Dir)
    end.

cprof_rows(Run) ->
    _ = cprof:stop(),
    _ = cprof:start(),
    try
        _ = Run(),
        _ = cprof:pause(),
        {_Total, Mods} = cprof:analyse(),
        [{MFA, C, C} || {_M, _MC, Fs} <- Mods, {MFA, C} <- Fs]
    after
        cprof:stop()
    end.

tprof_rows(Run) ->
    %% OTP 27+: called through a variable so older releases compile this.
    Tprof = tprof,
    {_, Raw} = Tprof:profile(Run, #{type => call_time, report => return}),
    %% Totals over every process (inspect/1 keys the results by process).
    Inspected = Tprof:inspect(Raw, total, measurement),
    Entries = case maps:get(all, Inspected, undefined) of
                  {_Type, _Total, Es} -> Es;
                  _ -> []
              end,
    merge([{{M, F, A}, C, T} || {M, {F, A}, C, T, _, _} <- Entries]).

merge(Rows) ->
    M = lists:foldl(fun({MFA, C, V}, Acc) ->
                            {C0, V0} = maps:get(MFA, Acc, {0, 0}),
                            Acc#{MFA => {C0 + C, V0 + V}}
                    end, #{}, Rows),
    [{MFA, C, V} || {MFA, {C, V}} <- maps:to_list(M)].

rows(Rows) ->
    Total = lists:sum([V || {_, _, V} <- Rows]),
    Sorted = lists:sublist(lists:reverse(lists:keysort(3, Rows)), ?MAX_ROWS),
    [#{<<"function">> => mfa_text(MFA), <<"calls">> => C, <<"value">> => num(V),
       <<"share">> => case Total of 0 -> 0.0; _ -> V / Total end}
     || {MFA, C, V} <- Sorted].

num(V) when is_integer(V) -> V;
num(V) -> round(V * 1000) / 1000.

mfa_text({M, F, A}) ->
    iolist_to_binary(io_lib:format("~0tp:~0tp/~b", [M, F, A])).

%%--------------------------------------------------------------------
%% Microstate accounting

msacc_start() ->
    _ = msacc:start(),
    true.

msacc_stop(false) ->
    null;
msacc_stop(true) ->
    Stats = msacc:stats(),
    _ = msacc:stop(),
    _ = msacc:reset(),
    Sum = lists:foldl(fun(#{counters := Cs}, Acc) ->
                              maps:fold(fun(K, V, A) -> A#{K => maps:get(K, A, 0) + V} end, Acc, Cs)
                      end, #{}, Stats),
    Total = lists:sum(maps:values(Sum)),
    maps:from_list([{atom_to_binary(K), iolist_to_binary(io_lib:format("~.1f%", [100 * V / max(Total, 1)]))}
                    || {K, V} <- maps:to_list(Sum), V > 0]).

%%--------------------------------------------------------------------
%% Memory and reductions

%% Runs N iterations in a fresh traced process; returns the words its
%% tree allocated, its reductions (its own and its children's) and the
%% processes it spawned, with the allocating functions on OTP 26+.
measure(Exec, IRR, N, CallMemory) ->
    aside(fun() ->
                           {_, Counts} = beamlab_runtime_alloc:measure_self(
                                           fun() -> beamlab_engine_code:timed(Exec, N, IRR) end),
                           %% A second pass names the allocating functions
                           %% (call tracing of its own, after the GC trace).
                           Allocators = case CallMemory of
                                            true ->
                                                ok = call_memory(on),
                                                _ = beamlab_engine_code:timed(Exec, N, IRR),
                                                call_memory(off);
                                            false -> []
                                        end,
                           Counts#{allocators => Allocators}
          end).

%% OTP 26+: call_memory tracing of every function, for the worker's tree.
%% (The module name is built at run time: OTP 25's types do not know the
%% call_memory flag.)
call_memory(on) ->
    Erl = binary_to_atom(<<"erlang">>),
    _ = Erl:trace_pattern({'_', '_', '_'}, true, [call_memory]),
    _ = erlang:trace(self(), true, [call, set_on_spawn]),
    ok;
call_memory(off) ->
    Erl = binary_to_atom(<<"erlang">>),
    _ = erlang:trace(self(), false, [call, set_on_spawn]),
    Found = lists:append(
              [[{{M, F, A}, W} || {F, A} <- M:module_info(functions),
                                  {call_memory, [_ | _] = PerPid} <- [Erl:trace_info({M, F, A}, call_memory)],
                                  W <- [lists:sum([Words || {_Pid, _Count, Words} <- PerPid])], W > 0]
               || {M, _} <- code:all_loaded(), erlang:function_exported(M, module_info, 1)]),
    _ = Erl:trace_pattern({'_', '_', '_'}, false, [call_memory]),
    [{MFA, W} || {MFA, W} <- lists:sublist(lists:reverse(lists:keysort(2, Found)), 10)].

allocators(List, N) ->
    [#{<<"function">> => mfa_text(MFA), <<"words">> => round1(W / N)} || {MFA, W} <- List].

%% @doc One line for each error.
-spec format_error(error_reason()) -> iolist().
format_error(Reason) ->
    beamlab_format_reason:line(fun error_line/1, Reason).

error_line({unsupported_tool, tprof, Release}) ->
    io_lib:format("--profile tprof needs OTP 27 or later (this is OTP ~s); use eprof, fprof or cprof",
                  [Release]);
error_line({unsupported_tool, Tool, _}) ->
    io_lib:format("unknown profiler ~ts (eprof, fprof, cprof or tprof)", [Tool]);
error_line({compile, Reason}) ->
    beamlab_engine_code:format_error(Reason);
error_line({runner, {Class, Reason, Frames}}) ->
    ["the runner failed while profiling: ", beamlab_engine_code:format_raised(Class, Reason, Frames)];
error_line({runner, {Class, Reason}}) ->
    ["the runner failed while profiling: ", beamlab_engine_code:format_raised(Class, Reason, [])];
error_line(Other) ->
    %% (a reason of no kind above: printed, never raised)
    beamlab_format_reason:term(Other).
