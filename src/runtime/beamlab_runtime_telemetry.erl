%%% @doc Live VM telemetry: a process that samples the VM every interval
%%% (default 1 s) and keeps a time series of what explains a benchmark:
%%% scheduler utilisation (total and per scheduler, normal/dirty CPU/dirty
%%% IO, from `scheduler_wall_time_all' deltas), run queues, process/port/ETS
%%% counts, memory by type, reductions and GC per second, the job's own
%%% rates, the OS-visible CPU time of the VM, cgroup throttling, steal time,
%%% load average and, with `msacc => true', microstate accounting.
%%%
%%% The monitor measures its own cost (time spent sampling per second of
%%% wall time, reductions it used) so a reader can judge the disturbance.
%%% `scheduler_wall_time' is enabled for this process only (the flag is
%%% reference counted per process); microstate accounting is global and is
%%% restored to its previous state when the monitor stops.
%%%
%%% With `print => true' one aligned line per sample goes to stderr.
%%%
%%% With `node => Node' the same series is recorded for another, already
%%% connected node (`beamlab watch', `amqp --watch'), through calls to OTP
%%% functions only: no beamlab module is loaded there. The flags the
%%% sampler needs are held by a small process on that node evaluated by
%%% `erl_eval' (OTP's own interpreter); it restores them when the sampler
%%% stops or dies, or when the connection is lost. A node that goes down
%%% ends the sampling; the series keeps what was recorded and says so.
%%% With `top => N' every sample also lists the top N processes by
%%% reductions (in the interval), message queue length and memory.
-module(beamlab_runtime_telemetry).
-behaviour(gen_server).

-export([start_link/1, start/1, stop/1, last/1, header/1, line/2, format_error/1]).
-export([init/1, handle_call/3, handle_cast/2, handle_info/2, terminate/2]).

-type opts() :: #{interval => pos_integer(), print => boolean(),
                  rates => fun(() -> [{binary() | atom() | string(), number()}]),
                  msacc => boolean(), root => file:filename(),
                  node => node(), top => non_neg_integer(), t0 => integer(),
                  notify => pid()}.
-type series() :: #{atom() => term()}.
-export_type([opts/0, series/0]).

-record(st, {interval :: pos_integer(),
             print :: boolean(),
             rates :: undefined | fun(() -> [{term(), number()}]),
             msacc :: boolean(),
             root :: file:filename(),
             cgroup :: beamlab_runtime_probe:cgroup(),
             t0 :: integer(),
             tick = 0 :: non_neg_integer(),
             timer :: reference() | undefined,
             old_swt = false :: boolean(),
             old_msacc = false :: boolean(),
             node :: node() | undefined,
             holder :: pid() | undefined,
             snapshot :: [erl_parse:abstract_expr()] | undefined,
             os_pid :: string() | undefined,
             top = 0 :: non_neg_integer(),
             notify :: pid() | undefined,
             down = false :: false | binary(),
             shape :: map(),
             prev :: map(),
             samples = [] :: [map()]}).

%% @doc Start sampling. Options: `interval' (ms, default 1000), `print'
%% (default false), `rates' (a fun returning cumulative counters; their
%% per-second rates are recorded), `msacc' (default false), `root' (where
%% /proc and /sys are, default "/"), `node' (sample that node instead of
%% this one), `top' (processes listed per sample, default 0), `t0' (the
%% monotonic millisecond the time axis starts at, default now), `notify'
%% (gets `{beamlab_telemetry_down, Pid, Reason}' when the node goes down).
-spec start_link(opts()) -> {ok, pid()} | {error, term()}.
start_link(Opts) ->
    gen_server:start_link(?MODULE, Opts, []).

%% @doc As {@link start_link/1}, unlinked: a node that cannot be watched
%% gives `{error, Reason}' (see {@link format_error/1}).
-spec start(opts()) -> {ok, pid()} | {error, term()}.
start(Opts) ->
    gen_server:start(?MODULE, Opts, []).

%% @doc One line for a start error.
-spec format_error(term()) -> iolist().
format_error({watch, Node, Reason}) ->
    io_lib:format("cannot watch ~ts: ~ts", [Node, reason(Reason)]);
format_error(Other) ->
    io_lib:format("~0p", [Other]).

%% @doc Take a final sample, stop the monitor and return the series: a
%% JSON-safe map of lists, one element per sample.
-spec stop(pid()) -> series().
stop(Pid) ->
    gen_server:call(Pid, stop, infinity).

%% @doc The latest sample (single values), or `undefined' before the first.
-spec last(pid()) -> map() | undefined.
last(Pid) ->
    gen_server:call(Pid, last, infinity).

%%--------------------------------------------------------------------
%% gen_server
%%--------------------------------------------------------------------

%% @private
-spec init(opts()) -> {ok, #st{}} | {stop, term()}.
init(#{node := Node} = Opts) when Node =/= node() ->
    process_flag(trap_exit, true),
    process_flag(priority, high),
    Msacc = maps:get(msacc, Opts, false),
    try
        true = erlang:monitor_node(Node, true),
        Holder = hold_flags(Node, Msacc),
        Info = remote(Node, "{erlang:system_info(schedulers), erlang:system_info(schedulers_online),"
                            " erlang:system_info(dirty_cpu_schedulers),"
                            " erlang:system_info(dirty_io_schedulers), os:getpid()}."),
        {N, Online, DC, DIO, OsPid} = Info,
        Root = maps:get(root, Opts, "/"),
        Local = same_host(Node),
        St0 = #st{interval = maps:get(interval, Opts, 1000), print = maps:get(print, Opts, false),
                  rates = maps:get(rates, Opts, undefined), msacc = Msacc, root = Root,
                  cgroup = none, node = Node, holder = Holder,
                  snapshot = parse(snapshot_text(Msacc, maps:get(top, Opts, 0) > 0)),
                  os_pid = case Local of true -> OsPid; false -> undefined end,
                  top = maps:get(top, Opts, 0), notify = maps:get(notify, Opts, undefined),
                  shape = #{normal => N, online => Online, dirty_cpu => DC, dirty_io => DIO},
                  t0 = maps:get(t0, Opts, now_ms()), prev = #{}},
        St = St0#st{prev = raw(St0)},
        _ = St#st.print andalso io:put_chars(standard_error, header(line_info(St))),
        {ok, schedule(St)}
    catch
        Class:Reason ->
            _ = Class,
            {stop, {watch, Node, Reason}}
    end;
init(Opts) ->
    Interval = maps:get(interval, Opts, 1000),
    Msacc = maps:get(msacc, Opts, false),
    OldSwt = erlang:system_flag(scheduler_wall_time, true),
    OldMsacc = case Msacc of
                   true ->
                       Old = erlang:system_flag(microstate_accounting, true),
                       _ = erlang:system_flag(microstate_accounting, reset),
                       Old;
                   false -> false
               end,
    process_flag(trap_exit, true),
    %% Sample on time even when the measured work saturates the schedulers.
    process_flag(priority, high),
    Root = maps:get(root, Opts, "/"),
    Shape = #{normal => erlang:system_info(schedulers),
              online => erlang:system_info(schedulers_online),
              dirty_cpu => sysinfo(dirty_cpu_schedulers, 0),
              dirty_io => sysinfo(dirty_io_schedulers, 0)},
    St0 = #st{interval = Interval, print = maps:get(print, Opts, false),
              rates = maps:get(rates, Opts, undefined), msacc = Msacc,
              root = Root, cgroup = beamlab_runtime_probe:cgroup_locate(Root), old_swt = OldSwt, old_msacc = OldMsacc, shape = Shape,
              top = maps:get(top, Opts, 0), notify = maps:get(notify, Opts, undefined),
              t0 = maps:get(t0, Opts, now_ms()), prev = #{}},
    St = St0#st{prev = raw(St0)},
    _ = St#st.print andalso io:put_chars(standard_error, header(line_info(St))),
    {ok, schedule(St)}.

%% @private
-spec handle_call(stop | last, gen_server:from(), #st{}) ->
          {reply, term(), #st{}} | {stop, normal, series(), #st{}}.
handle_call(stop, _From, St) ->
    %% A short tail (< 1/4 interval) would give a noisy last point: drop it.
    St1 = case St#st.down =:= false andalso
              now_ms() - maps:get(t, St#st.prev) >= St#st.interval div 4 of
              true -> sample(St);
              false -> St
          end,
    {stop, normal, series(St1), St1};
handle_call(last, _From, St = #st{samples = []}) ->
    {reply, undefined, St};
handle_call(last, _From, St = #st{samples = [S | _]}) ->
    {reply, S, St}.

%% @private
-spec handle_cast(term(), #st{}) -> {noreply, #st{}}.
handle_cast(_, St) ->
    {noreply, St}.

%% @private
-spec handle_info(term(), #st{}) -> {noreply, #st{}} | {stop, term(), #st{}}.
handle_info({timeout, Ref, tick}, St = #st{timer = Ref}) ->
    case sample(St) of
        St1 = #st{down = false} -> {noreply, schedule(St1)};
        St1 -> {noreply, St1#st{timer = undefined}}
    end;
handle_info({nodedown, Node}, St = #st{node = Node, down = false}) ->
    {noreply, went_down(St#st{timer = undefined}, noconnection)};
handle_info({'EXIT', _, Reason}, St) ->
    {stop, Reason, St};
handle_info(_, St) ->
    {noreply, St}.

%% @private
-spec terminate(term(), #st{}) -> ok.
terminate(_Reason, #st{node = Node, holder = Holder}) when Node =/= undefined ->
    release_flags(Holder);
terminate(_Reason, #st{msacc = Msacc, old_swt = OldSwt, old_msacc = Old}) ->
    _ = OldSwt orelse erlang:system_flag(scheduler_wall_time, false),
    _ = Msacc andalso erlang:system_flag(microstate_accounting, Old),
    ok.

%%--------------------------------------------------------------------
%% Sampling
%%--------------------------------------------------------------------

%% Absolute timer targets: sampling does not drift by its own cost.
schedule(St = #st{t0 = T0, tick = K, interval = I}) ->
    Ref = erlang:start_timer(T0 + (K + 1) * I, self(), tick, [{abs, true}]),
    St#st{timer = Ref, tick = K + 1}.

sample(St = #st{node = Node}) when Node =/= undefined ->
    try sample1(St)
    catch
        error:{erpc, Reason} -> went_down(St, Reason);
        error:{exception, Reason, _} -> went_down(St, Reason)
    end;
sample(St) ->
    sample1(St).

sample1(St = #st{prev = Prev, samples = Samples, print = Print}) ->
    Start = erlang:monotonic_time(microsecond),
    Raw = raw(St),
    S0 = top(Prev, Raw, derive(Prev, Raw, St), St),
    CostUs = erlang:monotonic_time(microsecond) - Start,
    {reductions, MonReds} = process_info(self(), reductions),
    DtUs = max(1, (maps:get(t, Raw) - maps:get(t, Prev)) * 1000),
    S = S0#{monitor_cost_pct => 100 * CostUs / DtUs,
            monitor_reductions => MonReds - maps:get(mon_reds, Prev, MonReds)},
    _ = Print andalso io:put_chars(standard_error, [line(line_info(St), S), top_line(S)]),
    St#st{prev = Raw#{mon_reds => MonReds}, samples = [S | Samples]}.

%% The watched node is gone (or stopped answering): keep what was recorded.
went_down(St = #st{notify = Notify}, Reason) ->
    Why = unicode:characters_to_binary(reason(Reason)),
    _ = is_pid(Notify) andalso (Notify ! {beamlab_telemetry_down, self(), Why}),
    St#st{down = Why}.

reason(noconnection) -> "node down or unreachable";
reason(timeout) -> "the node did not answer";
reason(not_allowed) -> "connection refused (wrong cookie?)";
reason(holder_timeout) -> "the node did not answer";
reason(R) -> io_lib:format("~0tp", [R]).

%% Cumulative counters at one instant, read from another node in one call.
raw(#st{node = Node, snapshot = Exprs, rates = Rates, msacc = Msacc, root = Root, os_pid = OsPid})
  when Node =/= undefined ->
    {value, {Reds, GCs, Swt, Rq, Procs, Ports, Ets, Mem, Io, MsaccRaw, ProcList}, _} =
        erpc:call(Node, erl_eval, exprs, [Exprs, []], 30000),
    {{input, In}, {output, Out}} = Io,
    M = #{t => now_ms(),
          swt => case Swt of undefined -> []; _ -> Swt end,
          reds => Reds, gcs => GCs, rq => Rq, processes => Procs, ports => Ports, ets => Ets,
          memory => maps:from_list(Mem), io_in => In, io_out => Out,
          procs => maps:from_list(ProcList),
          rates => case Rates of
                       undefined -> [];
                       F -> [{label(L), C} || {L, C} <- F()]
                   end},
    %% Machine-wide counters only when the node runs on this host.
    Os = case OsPid of
             undefined -> [];
             _ -> [{os_cpu_us, beamlab_runtime_probe:process_cpu_us(Root, OsPid)},
                   {cpu_times, beamlab_runtime_probe:cpu_times(Root)},
                   {load, beamlab_runtime_probe:loadavg(Root)}]
         end,
    M1 = maps:merge(M, maps:from_list([{K, V} || {K, {ok, V}} <- Os])),
    case Msacc of
        true -> M1#{msacc => msacc_sum(MsaccRaw)};
        false -> M1
    end;
raw(#st{rates = Rates, msacc = Msacc, root = Root, cgroup = Cgroup, top = Top}) ->
    {Reds, _} = erlang:statistics(reductions),
    {GCs, _, _} = erlang:statistics(garbage_collection),
    {{input, In}, {output, Out}} = erlang:statistics(io),
    M = #{t => now_ms(), io_in => In, io_out => Out,
          procs => case Top of
                       0 -> #{};
                       _ -> maps:from_list(
                              [{P, I} || P <- erlang:processes(),
                                         I <- [erlang:process_info(P, [reductions, message_queue_len, memory])],
                                         I =/= undefined])
                   end,
          swt => lists:sort(erlang:statistics(scheduler_wall_time_all)),
          reds => Reds, gcs => GCs,
          rq => erlang:statistics(run_queue_lengths_all),
          processes => erlang:system_info(process_count),
          ports => erlang:system_info(port_count),
          ets => ets_count(),
          memory => maps:from_list(erlang:memory()),
          rates => case Rates of
                       undefined -> [];
                       F -> [{label(L), C} || {L, C} <- F()]
                   end},
    Os = [{os_cpu_us, beamlab_runtime_probe:process_cpu_us(Root)},
          {cgroup, beamlab_runtime_probe:cgroup_cpu_stat_at(Cgroup)},
          {cpu_times, beamlab_runtime_probe:cpu_times(Root)},
          {load, beamlab_runtime_probe:loadavg(Root)}],
    M1 = maps:merge(M, maps:from_list([{K, V} || {K, {ok, V}} <- Os])),
    case Msacc of
        true -> M1#{msacc => msacc_totals()};
        false -> M1
    end.

%% One sample from two cumulative snapshots.
derive(P, R, #st{t0 = T0, shape = Shape}) ->
    DtMs = max(1, maps:get(t, R) - maps:get(t, P)),
    PerS = fun(D) -> D * 1000 / DtMs end,
    #{normal := N, online := Online, dirty_cpu := DC} = Shape,
    Util = case {maps:get(swt, P), maps:get(swt, R)} of
               {Swt0, Swt1} when length(Swt0) =:= length(Swt1) ->
                   [{Id, pct(A1 - A0, W1 - W0)}
                    || {{Id, A0, W0}, {Id, A1, W1}} <- lists:zip(Swt0, Swt1)];
               _ -> []
           end,
    Normal = [U || {Id, U} <- Util, Id =< N],
    DirtyCpu = [U || {Id, U} <- Util, Id > N, Id =< N + DC],
    DirtyIo = [U || {Id, U} <- Util, Id > N + DC],
    {RqNormal, RqRest} = lists:split(N, maps:get(rq, R)),
    Base = #{t_ms => maps:get(t, R) - T0,
             util => mean(lists:sublist(Normal, Online)),
             util_schedulers => Normal,
             util_dirty_cpu => mean(DirtyCpu),
             util_dirty_io => mean(DirtyIo),
             scheduler_busy_cores => lists:sum(Normal ++ DirtyCpu ++ DirtyIo) / 100,
             run_queue => lists:sum(RqNormal),
             run_queues => RqNormal,
             run_queue_dirty_cpu => nth_or_zero(1, RqRest),
             run_queue_dirty_io => nth_or_zero(2, RqRest),
             processes => maps:get(processes, R),
             ports => maps:get(ports, R),
             ets_tables => maps:get(ets, R),
             memory => maps:get(memory, R),
             reductions_per_s => PerS(maps:get(reds, R) - maps:get(reds, P)),
             gc_per_s => PerS(maps:get(gcs, R) - maps:get(gcs, P)),
             io_in_bytes_per_s => PerS(maps:get(io_in, R) - maps:get(io_in, P)),
             io_out_bytes_per_s => PerS(maps:get(io_out, R) - maps:get(io_out, P)),
             rates => maps:from_list(
                        [{L, PerS(C - proplists:get_value(L, maps:get(rates, P), C))}
                         || {L, C} <- maps:get(rates, R)])},
    lists:foldl(fun(F, Acc) -> maps:merge(Acc, F(P, R, DtMs)) end, Base,
                [fun os_cpu/3, fun cgroup/3, fun machine/3, fun msacc/3]).

%% CPU time the OS charged to the VM, in cores (1.0 = one CPU all the time).
os_cpu(#{os_cpu_us := A}, #{os_cpu_us := B}, DtMs) ->
    #{os_cpu_cores => (B - A) / (DtMs * 1000)};
os_cpu(_, _, _) -> #{}.

cgroup(#{cgroup := A}, #{cgroup := B}, _) ->
    #{cgroup_nr_periods => maps:get(nr_periods, B) - maps:get(nr_periods, A),
      cgroup_nr_throttled => maps:get(nr_throttled, B) - maps:get(nr_throttled, A),
      cgroup_throttled_usec => maps:get(throttled_usec, B) - maps:get(throttled_usec, A)};
cgroup(_, _, _) -> #{}.

%% Whole-machine view from /proc/stat: steal and non-idle share.
machine(P, R, _) ->
    M = case {P, R} of
            {#{cpu_times := A}, #{cpu_times := B}} ->
                D = maps:map(fun(K, V) -> V - maps:get(K, A, V) end, B),
                Total = lists:sum(maps:values(D)),
                Idle = maps:get(idle, D, 0) + maps:get(iowait, D, 0),
                #{steal_pct => pct(maps:get(steal, D, 0), Total),
                  machine_cpu_pct => pct(Total - Idle, Total)};
            _ -> #{}
        end,
    case R of
        #{load := #{load1 := L1}} -> M#{load1 => L1};
        _ -> M
    end.

msacc(#{msacc := A}, #{msacc := B}, _) ->
    D = maps:map(fun(K, V) -> V - maps:get(K, A, 0) end, B),
    Total = lists:sum(maps:values(D)),
    #{msacc => maps:map(fun(_, V) -> pct(V, Total) end, D)};
msacc(_, _, _) -> #{}.

%% Microstate counters summed over the normal scheduler threads. The BIF
%% behind the `msacc' tool is part of erts, so it works in the escript too.
msacc_totals() ->
    msacc_sum(erlang:statistics(microstate_accounting)).

msacc_sum(Stats) ->
    case Stats of
        undefined -> #{};
        Threads ->
            lists:foldl(fun(#{type := scheduler, counters := C}, Acc) ->
                                maps:fold(fun(K, V, A) -> maps:update_with(K, fun(X) -> X + V end, V, A) end,
                                          Acc, C);
                           (_, Acc) -> Acc
                        end, #{}, Threads)
    end.

%%--------------------------------------------------------------------
%% Top processes
%%--------------------------------------------------------------------

%% The top processes of the interval, as observer_cli and recon list them:
%% by reductions used in the interval, by message queue length, by memory.
top(_P, _R, S, #st{top = 0}) ->
    S;
top(P, R, S, #st{top = N, node = Node}) ->
    Prev = maps:get(procs, P, #{}),
    Rows = [{Pid, reds_delta(I, maps:get(Pid, Prev, undefined)),
             pget(message_queue_len, I), pget(memory, I)}
            || {Pid, I} <- maps:to_list(maps:get(procs, R, #{}))],
    By = fun(K) -> lists:sublist(lists:reverse(lists:keysort(K, Rows)), N) end,
    Lists = [{by_reductions, By(2)}, {by_message_queue, By(3)}, {by_memory, By(4)}],
    Pids = lists:usort([Pid || {_, L} <- Lists, {Pid, _, _, _} <- L]),
    Names = maps:from_list([{Pid, describe(Node, Pid)} || Pid <- Pids]),
    S#{top => maps:from_list(
                [{K, [(maps:get(Pid, Names))#{pid => list_to_binary(pid_to_list(Pid)),
                                              reductions => Reds, message_queue_len => Q,
                                              memory => Mem}
                      || {Pid, Reds, Q, Mem} <- L]}
                 || {K, L} <- Lists])}.

reds_delta(I, undefined) -> pget(reductions, I);
reds_delta(I, Old) -> max(0, pget(reductions, I) - pget(reductions, Old)).

pget(K, L) ->
    case lists:keyfind(K, 1, L) of
        {K, V} when is_integer(V) -> V;
        _ -> 0
    end.

%% A process's name: its registered name, else its initial call (the
%% proc_lib one when it has one), and its current function.
describe(Node, Pid) ->
    Items = [registered_name, initial_call, current_function, dictionary],
    Info = try
               case Node of
                   undefined -> erlang:process_info(Pid, Items);
                   _ -> erpc:call(Node, erlang, process_info, [Pid, Items], 5000)
               end
           catch _:_ -> undefined
           end,
    case Info of
        undefined -> #{name => <<"(exited)">>, current_function => null};
        _ ->
            Dict = case lists:keyfind(dictionary, 1, Info) of
                       {dictionary, D} -> D;
                       false -> []
                   end,
            Initial = case lists:keyfind('$initial_call', 1, Dict) of
                          {_, MFA = {_, _, _}} -> MFA;
                          _ -> element(2, lists:keyfind(initial_call, 1, Info))
                      end,
            Name = case lists:keyfind(registered_name, 1, Info) of
                       {registered_name, R} when is_atom(R), R =/= [] -> atom_to_binary(R);
                       _ -> mfa(Initial)
                   end,
            #{name => Name, initial_call => mfa(Initial),
              current_function => mfa(element(2, lists:keyfind(current_function, 1, Info)))}
    end.

mfa({M, F, A}) when is_atom(M), is_atom(F), is_integer(A) ->
    unicode:characters_to_binary(io_lib:format("~ts:~ts/~b", [M, F, A]));
mfa(_) -> null.

%%--------------------------------------------------------------------
%% Another node: flags held there, snapshots read in one call
%%--------------------------------------------------------------------

%% A process on `Node', evaluated by erl_eval, turns on scheduler wall
%% time (reference counted per process: it ends with the process) and,
%% when asked, microstate accounting; it restores both when told to or
%% when this sampler is gone.
hold_flags(Node, Msacc) ->
    Holder = spawn(Node, erl_eval, exprs, [parse(holder_text()), []]),
    Holder ! {beamlab_watch, self(), Msacc},
    receive
        {beamlab_watch_holder, Holder} -> Holder
    after 10000 -> error(holder_timeout)
    end.

release_flags(undefined) ->
    ok;
release_flags(Holder) ->
    Ref = erlang:monitor(process, Holder),
    Holder ! {beamlab_watch_stop, self()},
    receive
        {'DOWN', Ref, process, Holder, _} -> ok
    after 10000 -> ok
    end.

holder_text() ->
    "receive {beamlab_watch, W, M} ->"
    "  Ref = erlang:monitor(process, W),"
    "  erlang:system_flag(scheduler_wall_time, true),"
    "  Old = case M of true -> erlang:system_flag(microstate_accounting, true); false -> keep end,"
    "  W ! {beamlab_watch_holder, self()},"
    "  receive {beamlab_watch_stop, W} -> ok; {'DOWN', Ref, process, W, _} -> ok end,"
    "  case Old of keep -> ok; _ -> erlang:system_flag(microstate_accounting, Old) end,"
    "  erlang:system_flag(scheduler_wall_time, false)"
    " end.".

snapshot_text(Msacc, Procs) ->
    ["{element(1, erlang:statistics(reductions)),"
     " element(1, erlang:statistics(garbage_collection)),"
     " case erlang:statistics(scheduler_wall_time_all) of undefined -> undefined; Swt -> lists:sort(Swt) end,"
     " erlang:statistics(run_queue_lengths_all),"
     " erlang:system_info(process_count), erlang:system_info(port_count),"
     " erlang:system_info(ets_count), erlang:memory(), erlang:statistics(io),",
     case Msacc of
         true -> " erlang:statistics(microstate_accounting),";
         false -> " undefined,"
     end,
     case Procs of
         true -> " [{P, I} || P <- erlang:processes(),"
                 "  P =/= self(), I <- [erlang:process_info(P, [reductions, message_queue_len, memory])],"
                 "  I =/= undefined]}.";
         false -> " []}."
     end].

parse(Text) ->
    {ok, Tokens, _} = erl_scan:string(lists:flatten(Text)),
    {ok, Exprs} = erl_parse:parse_exprs(Tokens),
    Exprs.

remote(Node, Text) ->
    {value, V, _} = erpc:call(Node, erl_eval, exprs, [parse(Text), []], 10000),
    V.

%% The node runs on this host (its /proc entry is ours to read).
same_host(Node) ->
    [_, Host] = string:split(atom_to_list(Node), "@"),
    {ok, Me} = inet:gethostname(),
    lists:member(Host, ["localhost", "127.0.0.1", "::1", Me, net_adm:localhost()])
        orelse lists:prefix(Me ++ ".", Host).

%%--------------------------------------------------------------------
%% Series
%%--------------------------------------------------------------------

%% Samples (newest first) -> one list per metric, maps of lists for the
%% nested metrics (memory, rates, msacc).
series(#st{samples = Rev, interval = I, shape = Shape, msacc = Msacc, node = Node, down = Down}) ->
    Samples = lists:reverse(Rev),
    Keys = lists:usort(lists:append([maps:keys(S) || S <- Samples])),
    Nested = [memory, rates, msacc],
    Flat = maps:from_list([{K, [maps:get(K, S, null) || S <- Samples]}
                           || K <- Keys, not lists:member(K, Nested)]),
    Sub = maps:from_list([{K, columns([maps:get(K, S, #{}) || S <- Samples])}
                          || K <- Nested, lists:member(K, Keys)]),
    Watched = case Node of
                  undefined -> #{};
                  _ -> #{node => atom_to_binary(Node),
                         node_down => Down =/= false,
                         node_down_reason => case Down of false -> null; _ -> Down end}
              end,
    maps:merge(maps:merge(Flat, Sub#{interval_ms => I, samples => length(Samples),
                                     schedulers => Shape, msacc_enabled => Msacc}), Watched).

columns(Maps) ->
    Keys = lists:usort(lists:append([maps:keys(M) || M <- Maps])),
    maps:from_list([{K, [maps:get(K, M, null) || M <- Maps]} || K <- Keys]).

%%--------------------------------------------------------------------
%% Printing
%%--------------------------------------------------------------------

line_info(#st{shape = Shape, rates = Rates, prev = Prev}) ->
    Labels = case Rates of
                 undefined -> [];
                 _ -> [L || {L, _} <- maps:get(rates, Prev, [])]
             end,
    Shape#{labels => Labels}.

%% @doc The header line for `print': `Info' is the scheduler shape plus
%% the rate labels.
-spec header(map()) -> iolist().
header(#{labels := Labels} = Info) ->
    io_lib:format("~8s ~-*s ~5s ~5s ~6s ~7s ~9s ~9s ~7s~ts ~6s~n",
                  ["time", util_width(Info), "util [schedulers]", "dcpu", "dio", "runq",
                   "procs", "memory", "reds/s", "gc/s",
                   [io_lib:format(" ~12ts", [L]) || L <- Labels], "mon"]).

%% @doc One aligned line for a sample.
-spec line(map(), map()) -> iolist().
line(#{labels := Labels} = Info, S) ->
    Per = per_scheduler(maps:get(util_schedulers, S), maps:get(online, Info)),
    Util = io_lib:format("~3b% [~s]", [round(maps:get(util, S)), Per]),
    io_lib:format("~7.1fs ~-*s ~4b% ~4b% ~6b ~7b ~9ts ~9ts ~7ts~ts ~5.2f%~n",
                  [maps:get(t_ms, S) / 1000, util_width(Info), Util,
                   round(maps:get(util_dirty_cpu, S)), round(maps:get(util_dirty_io, S)),
                   maps:get(run_queue, S), maps:get(processes, S),
                   beamlab_format_units:bytes(maps:get(total, maps:get(memory, S))),
                   beamlab_format_units:count(round(maps:get(reductions_per_s, S))),
                   beamlab_format_units:count(round(maps:get(gc_per_s, S))),
                   [io_lib:format(" ~12ts", [beamlab_format_units:rate(maps:get(L, maps:get(rates, S), 0))])
                    || L <- Labels],
                   maps:get(monitor_cost_pct, S)]).

%% The busiest process of the interval under the line, when listed.
top_line(#{top := #{by_reductions := [P | _]}}) ->
    io_lib:format("         top: ~ts (~ts) ~ts reds, queue ~b, ~ts~n",
                  [maps:get(name, P), null_text(maps:get(current_function, P)),
                   beamlab_format_units:count(maps:get(reductions, P)),
                   maps:get(message_queue_len, P), beamlab_format_units:bytes(maps:get(memory, P))]);
top_line(_) -> [].

null_text(null) -> "-";
null_text(B) -> B.

%% Up to 16 online schedulers are listed; more are condensed to counts.
per_scheduler(Utils, Online) ->
    On = [round(U) || U <- lists:sublist(Utils, Online)],
    case length(On) =< 16 of
        true -> lists:join(" ", [io_lib:format("~3b", [U]) || U <- On]);
        false ->
            Busy = length([U || U <- On, U >= 80]),
            Idle = length([U || U <- On, U =< 20]),
            io_lib:format("busy ~b idle ~b of ~b", [Busy, Idle, length(On)])
    end.

util_width(#{online := Online}) when Online =< 16 -> max(17, 6 + 4 * Online);
util_width(_) -> 32.

%%--------------------------------------------------------------------
%% Helpers
%%--------------------------------------------------------------------

pct(_, 0) -> 0.0;
pct(A, B) -> 100 * A / B.

mean([]) -> 0.0;
mean(L) -> lists:sum(L) / length(L).

nth_or_zero(N, L) when length(L) >= N -> lists:nth(N, L);
nth_or_zero(_, _) -> 0.

label(L) when is_binary(L) -> L;
label(L) when is_atom(L) -> atom_to_binary(L);
label(L) -> unicode:characters_to_binary(io_lib:format("~ts", [L])).

ets_count() ->
    try erlang:system_info(ets_count)
    catch error:badarg -> length(ets:all())
    end.

sysinfo(Item, Default) ->
    try erlang:system_info(Item)
    catch error:badarg -> Default
    end.

now_ms() ->
    erlang:monotonic_time(millisecond).
