%%% @doc Live VM telemetry: a process that samples the VM every interval
%%% (default 1 s) and keeps a time series of what explains a benchmark:
%%% scheduler utilisation (total and per scheduler, normal/dirty CPU/dirty
%%% IO, from `scheduler_wall_time_all' deltas), run queues, process/port/ETS
%%% counts, memory by type, reductions and GC per second, the job's own
%%% rates, the OS-visible CPU time of the VM, cgroup throttling, steal time,
%%% load average and, with `msacc => true', microstate accounting.
%%%
%%% The monitor records what sampling took so a reader can judge the
%%% disturbance: the reductions it used (`monitor_reductions', its work in
%%% this VM) and the wall time of each sample as a share of the interval
%%% (`monitor_wall_pct'), which counts waiting for the node, the OS and a
%%% scheduler too: not a CPU cost (it read 250% on a loaded machine).
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
%%% reductions (per second since the last look), message queue length and
%%% memory, the largest and fastest-growing ETS tables and, when they grow,
%%% who holds the refc binaries and what the new processes and ports are
%%% (`beamlab_runtime_procs'); with `system_monitor' the node's long
%%% garbage collections, long schedules and busy ports are gathered there
%%% (`erlang:system_monitor/2', unless another process holds it: then it
%%% is left alone and the series says who has it).
%%%
%%% Every call to the node is bounded: by twice the interval (at least
%%% 2 s) and by `deadline'. A node that does not answer in time is marked
%%% silent: the series records when (`unanswered'), it is probed every
%%% interval with a cheap call, and sampling resumes when it answers.
-module(beamlab_runtime_telemetry).
-behaviour(gen_server).

-export([start_link/1, start/1, stop/1, finish/2, last/1, info/1, header/1, line/2, format_error/1]).
-export([init/1, handle_call/3, handle_cast/2, handle_info/2, terminate/2]).

-type opts() :: #{interval => pos_integer(), print => boolean(),
                  rates => fun(() -> [{binary() | atom() | string(), number()}]),
                  msacc => boolean(), root => file:filename(),
                  node => node(), top => non_neg_integer(), t0 => integer(),
                  notify => pid(), deadline => integer() | infinity,
                  system_monitor => false | #{long_gc := pos_integer(), long_schedule := pos_integer()}}.
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
             samples = [] :: [map()],
             deadline = infinity :: integer() | infinity,
             tracker :: beamlab_runtime_procs:tracker() | undefined,
             %% beamlab's tree CPU: who reads it, its latest reading (the
             %% CPU time and when it was read; the walk's pids stay there)
             tree_reader :: pid() | undefined,
             tree_reading = none :: none | {non_neg_integer(), integer()},
             sysmon = off :: off | ours | {taken, pid()},
             limits = #{} :: map(),
             silent = false :: false | integer(),
             unanswered = [] :: [{integer(), integer() | null}],
             %% Samples that raised (a `rates' fun of the caller, an
             %% unexpected value): counted, the first one's error kept.
             failed = 0 :: non_neg_integer(),
             first_failure = null :: null | binary()}).

%% @doc Start sampling. Options: `interval' (ms, default 1000), `print'
%% (default false), `rates' (a fun returning cumulative counters; their
%% per-second rates are recorded), `msacc' (default false), `root' (where
%% /proc and /sys are, default "/"), `node' (sample that node instead of
%% this one), `top' (processes listed per sample, default 0), `t0' (the
%% monotonic millisecond the time axis starts at, default now), `notify'
%% (gets `{beamlab_telemetry_sample, Pid, Sample}' after each sample,
%% `{beamlab_telemetry_silent, Pid, Since}' and
%% `{beamlab_telemetry_answering, Pid, At}' when the node stops and
%% resumes answering (times on the series' axis, ms), and
%% `{beamlab_telemetry_down, Pid, Reason}' when it goes down), `deadline'
%% (monotonic ms no call to the node may outlast, default none),
%% `system_monitor' (thresholds in ms for long GCs and schedules to watch
%% on the node, default off).
-spec start_link(opts()) -> {ok, pid()} | {error, term()}.
start_link(Opts) ->
    start(Opts, link).

%% @doc As {@link start_link/1}, unlinked: a node that cannot be watched
%% gives `{error, Reason}' (see {@link format_error/1}).
-spec start(opts()) -> {ok, pid()} | {error, term()}.
start(Opts) ->
    start(Opts, nolink).

%% Another node is set up (its flags held, its shape and first snapshot
%% read) by the sampler's process before it becomes the server, not in
%% init/1: on OTP 25 an init/1 that returns `{stop, _}' leaves a crash
%% report on stderr beside the one line of a node that cannot be watched.
%% A set-up that fails ends the process normally, with no report.
start(#{node := Node} = Opts, Link) when Node =/= node() ->
    Ref = make_ref(),
    %% (through init/1, so the sampler's initial call is the server's)
    Args = [{remote, self(), Ref, Opts}],
    Pid = case Link of
              link -> proc_lib:spawn_link(?MODULE, init, Args);
              nolink -> proc_lib:spawn(?MODULE, init, Args)
          end,
    Mon = erlang:monitor(process, Pid),
    receive
        {Ref, ok} -> erlang:demonitor(Mon, [flush]), {ok, Pid};
        {Ref, {error, _} = E} -> erlang:demonitor(Mon, [flush]), E;
        {'DOWN', Mon, process, Pid, Why} -> {error, {watch, Node, Why}}
    end;
start(Opts, link) ->
    gen_server:start_link(?MODULE, Opts, []);
start(Opts, nolink) ->
    gen_server:start(?MODULE, Opts, []).

%% @doc One line for a start error.
-spec format_error(term()) -> iolist().
format_error(Reason) ->
    beamlab_format_reason:line(fun error_line/1, Reason).

error_line({watch, Node, Reason}) ->
    io_lib:format("cannot watch ~ts: ~ts", [Node, reason(Reason)]);
error_line(Other) ->
    io_lib:format("~0p", [Other]).

%% @doc Take a final sample, stop the monitor and return the series: a
%% JSON-safe map of lists, one element per sample.
-spec stop(pid()) -> series().
stop(Pid) ->
    gen_server:call(Pid, stop, infinity).

%% @doc As {@link stop/1}, for a sampler that may be gone, monitored by
%% the caller with `Mon': one that died during the run (its series with
%% it) gives `{error, Reason}' instead of taking the caller down. The
%% monitor is removed either way.
-spec finish(pid(), reference()) -> {ok, series()} | {error, term()}.
finish(Pid, Mon) ->
    receive
        {'DOWN', Mon, process, Pid, Reason} -> {error, Reason}
    after 0 ->
        erlang:demonitor(Mon, [flush]),
        try gen_server:call(Pid, stop, infinity) of
            Series -> {ok, Series}
        catch
            exit:{Reason, {gen_server, call, _}} -> {error, Reason}
        end
    end.

%% @doc The latest sample (single values), or `undefined' before the first.
-spec last(pid()) -> map() | undefined.
last(Pid) ->
    gen_server:call(Pid, last, infinity).

%% @doc What the sampler knows from its start: the node's `limits'
%% (processes, ports, atoms; empty for this VM), its scheduler `shape' and
%% whether the system monitor is ours (`system_monitor').
-spec info(pid()) -> #{limits := map(), shape := map(), system_monitor := off | ours | {taken, pid()}}.
info(Pid) ->
    gen_server:call(Pid, info, infinity).

%%--------------------------------------------------------------------
%% gen_server
%%--------------------------------------------------------------------

%% The state of a sampler of another node (see start/2), or why it
%% cannot be watched.
setup_remote(#{node := Node} = Opts) ->
    process_flag(trap_exit, true),
    process_flag(priority, high),
    Msacc = maps:get(msacc, Opts, false),
    Deadline = maps:get(deadline, Opts, infinity),
    Interval = maps:get(interval, Opts, 1000),
    Top = maps:get(top, Opts, 0),
    try
        true = erlang:monitor_node(Node, true),
        Until = min_deadline(Deadline, now_ms() + 10000),
        {Holder, SysMon} = hold_flags(Node, Msacc, maps:get(system_monitor, Opts, false), Until),
        Info = remote(Node, "{erlang:system_info(schedulers), erlang:system_info(schedulers_online),"
                            " erlang:system_info(dirty_cpu_schedulers),"
                            " erlang:system_info(dirty_io_schedulers), os:getpid(),"
                            " erlang:system_info(wordsize), erlang:system_info(otp_release),"
                            " erlang:system_info(process_limit), erlang:system_info(port_limit),"
                            " erlang:system_info(atom_limit)}.", left(Until)),
        {N, Online, DC, DIO, OsPid, WordSize, Release, ProcLimit, PortLimit, AtomLimit} = Info,
        Root = maps:get(root, Opts, "/"),
        Local = same_host(Node),
        Tracker = tracker(Node, Top, Interval, WordSize, Release, [Holder]),
        St0 = #st{interval = Interval, print = maps:get(print, Opts, false),
                  rates = maps:get(rates, Opts, undefined), msacc = Msacc, root = Root,
                  cgroup = none, node = Node, holder = Holder, sysmon = SysMon,
                  snapshot = parse(snapshot_text(Msacc)),
                  os_pid = case Local of true -> OsPid; false -> undefined end,
                  top = Top, notify = maps:get(notify, Opts, undefined),
                  shape = #{normal => N, online => Online, dirty_cpu => DC, dirty_io => DIO},
                  limits = #{processes => ProcLimit, ports => PortLimit, atoms => AtomLimit},
                  t0 = maps:get(t0, Opts, now_ms()), prev = #{}, deadline = Deadline, tracker = Tracker},
        Reader = case Local of
                     true -> start_tree_reader(Root, [os:getpid(), OsPid], St0);
                     false -> undefined
                 end,
        St = remote(baseline(St0#st{tree_reader = Reader}, Until)),
        _ = St#st.print andalso io:put_chars(standard_error, header(line_info(St))),
        _ = St#st.print andalso io:put_chars(standard_error, sysmon_line(SysMon)),
        {ok, schedule(St)}
    catch
        throw:{remote, Reason} -> {error, {watch, Node, Reason}};
        error:{erpc, Reason} -> {error, {watch, Node, Reason}};
        error:{exception, Reason, _} -> {error, {watch, Node, Reason}};
        Class:Reason ->
            _ = Class,
            {error, {watch, Node, Reason}}
    end.

%% @private
%% `{remote, Caller, Ref, Opts}': the sampler of another node, spawned by
%% start/2: set up, it tells `Caller' and becomes the server; else it
%% tells why and ends normally (`ignore': nothing to report).
-spec init(opts() | {remote, pid(), reference(), opts()}) -> {ok, #st{}} | ignore.
init({remote, Caller, Ref, Opts}) ->
    case setup_remote(Opts) of
        {ok, St} ->
            Caller ! {Ref, ok},
            gen_server:enter_loop(?MODULE, [], St);
        {error, _} = E ->
            Caller ! {Ref, E},
            ignore
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
    Top = maps:get(top, Opts, 0),
    Tracker = tracker(node(), Top, Interval, erlang:system_info(wordsize), erlang:system_info(otp_release),
                      [self()]),
    St0 = #st{interval = Interval, print = maps:get(print, Opts, false),
              rates = maps:get(rates, Opts, undefined), msacc = Msacc,
              root = Root, cgroup = beamlab_runtime_probe:cgroup_locate(Root), old_swt = OldSwt, old_msacc = OldMsacc, shape = Shape,
              top = Top, notify = maps:get(notify, Opts, undefined), tracker = Tracker,
              t0 = maps:get(t0, Opts, now_ms()), prev = #{}},
    %% beamlab's own process tree (this VM, its peers, its private broker;
    %% with BEAMLAB_TREE the VM that started this one): what
    %% `machine_overloaded' never counts as others, read beside the
    %% sampler as a watched node's (#35)
    Reader = start_tree_reader(Root, [os:getpid()], St0),
    %% (this VM's own processes: read here, they always answer)
    {ok, St} = baseline(St0#st{tree_reader = Reader}, infinity),
    _ = St#st.print andalso io:put_chars(standard_error, header(line_info(St))),
    {ok, schedule(St)}.

%% @private
-spec handle_call(stop | last | info, gen_server:from(), #st{}) ->
          {reply, term(), #st{}} | {stop, normal, series(), #st{}}.
handle_call(stop, _From, St) ->
    %% A short tail (< 1/4 interval) would give a noisy last point: drop
    %% it; so is a sample the node cannot give before the deadline.
    St1 = case St#st.down =:= false andalso St#st.silent =:= false andalso
              now_ms() - maps:get(t, St#st.prev) >= St#st.interval div 4 andalso
              left(St#st.deadline) > 0 of
              true -> guarded_sample(fresh_tree(St));
              false -> St
          end,
    {stop, normal, series(St1), St1};
handle_call(info, _From, St = #st{limits = Limits, shape = Shape, sysmon = SysMon}) ->
    {reply, #{limits => Limits, shape => Shape, system_monitor => SysMon}, St};
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
    case guarded_sample(St) of
        St1 = #st{down = false} -> {noreply, schedule(St1)};
        St1 -> {noreply, St1#st{timer = undefined}}
    end;
handle_info({tree_cpu, Reader, Reading}, St = #st{tree_reader = Reader, prev = Prev}) ->
    %% The first reading is also the previous snapshot's when it had none
    %% (the baseline is taken before the reader's first walk ends): the
    %% tree's cores are over the time between readings (tree_t), so the
    %% first sample has them too.
    Prev1 = case is_map_key(tree_cpu_us, Prev) orelse not is_map_key(t, Prev) of
                true -> Prev;
                false -> maps:merge(Prev, maps:from_list(tree_reading(Reading)))
            end,
    {noreply, St#st{tree_reading = Reading, prev = Prev1}};
handle_info({nodedown, Node}, St = #st{node = Node, down = false}) ->
    {noreply, went_down(St#st{timer = undefined}, noconnection)};
handle_info({'EXIT', _, Reason}, St) ->
    {stop, Reason, St};
handle_info(_, St) ->
    {noreply, St}.

%% @private
-spec terminate(term(), #st{}) -> ok.
terminate(_Reason, #st{node = Node, holder = Holder, deadline = Deadline}) when Node =/= undefined ->
    release_flags(Holder, min(2000, left(Deadline)));
terminate(_Reason, #st{msacc = Msacc, old_swt = OldSwt, old_msacc = Old}) ->
    _ = OldSwt orelse erlang:system_flag(scheduler_wall_time, false),
    _ = Msacc andalso erlang:system_flag(microstate_accounting, Old),
    ok.

%%--------------------------------------------------------------------
%% Sampling
%%--------------------------------------------------------------------

%% What reads the processes of `Node' (`top' > 0): never the sampler's
%% own (`Exclude').
tracker(_Node, 0, _Interval, _WordSize, _Release, _Exclude) ->
    undefined;
tracker(Node, Top, Interval, WordSize, Release, Exclude) ->
    beamlab_runtime_procs:new(Node, #{top => Top, interval => Interval, wordsize => WordSize, exclude => Exclude,
                                      parent => otp_release(Release) >= 26}).

%% The first snapshot, with every process when they are tracked: what the
%% first sample compares with.
baseline(St0 = #st{tracker = undefined}, Until) ->
    {ok, St0#st{prev = raw(St0, false, Until)}};
baseline(St0 = #st{tracker = Tracker}, Until) ->
    Raw = raw(St0, true, Until),
    case beamlab_runtime_procs:baseline(Tracker, Raw, Until) of
        {ok, Tr} -> {ok, St0#st{prev = Raw, tracker = Tr}};
        {error, _} = E -> E
    end.

%% A node's reads that failed: thrown on, to the catches of this module.
remote({ok, V}) -> V;
remote({error, {remote, _} = R}) -> throw(R).

%% Absolute timer targets: sampling does not drift by its own cost.
schedule(St = #st{t0 = T0, tick = K, interval = I}) ->
    Ref = erlang:start_timer(T0 + (K + 1) * I, self(), tick, [{abs, true}]),
    St#st{timer = Ref, tick = K + 1}.

%% One sample; one that raises is counted (and its error kept, and said
%% once on the live output) instead of ending the sampler with the series
%% recorded so far.
guarded_sample(St) ->
    try
        sample(St)
    catch
        Class:Reason:Stack ->
            Where = hd(Stack ++ [none]),
            failed_sample(St, iolist_to_binary(io_lib:format("~0tp:~0tP at ~0tP",
                                                             [Class, Reason, 12, Where, 6])))
    end.

failed_sample(St = #st{failed = 0, print = Print, t0 = T0}, Why) ->
    _ = Print andalso io:format(standard_error, "~7.1fs  a telemetry sample failed, left out: ~ts~n",
                                [(now_ms() - T0) / 1000, Why]),
    St#st{failed = 1, first_failure = Why};
failed_sample(St = #st{failed = N}, _Why) ->
    St#st{failed = N + 1}.

sample(St = #st{node = Node, silent = false}) when Node =/= undefined ->
    try sample1(St)
    catch
        throw:{remote, timeout} -> silent(St);
        error:{erpc, timeout} -> silent(St);
        throw:{remote, Reason} -> went_down(St, Reason);
        error:{erpc, Reason} -> went_down(St, Reason);
        error:{exception, Reason, _} -> went_down(St, Reason)
    end;
sample(St = #st{node = Node}) when Node =/= undefined ->
    probe(St);
sample(St) ->
    sample1(St).

sample1(St = #st{prev = Prev, samples = Samples, print = Print, tracker = Tracker, notify = Notify}) ->
    Start = erlang:monotonic_time(microsecond),
    Until = min_deadline(St#st.deadline, now_ms() + call_timeout(St)),
    Full = Tracker =/= undefined andalso beamlab_runtime_procs:full_due(Tracker),
    Raw = raw(St, Full, Until),
    S0 = derive(Prev, Raw, St),
    {S1, Tracker1} = case Tracker of
                         undefined -> {S0, undefined};
                         _ ->
                             {Extras, Tr} = remote(beamlab_runtime_procs:observe(Tracker, Raw, Prev, Until)),
                             {maps:merge(S0, Extras), Tr}
                     end,
    CostUs = erlang:monotonic_time(microsecond) - Start,
    {reductions, MonReds} = process_info(self(), reductions),
    DtUs = max(1, (maps:get(t, Raw) - maps:get(t, Prev)) * 1000),
    S = S1#{monitor_wall_pct => 100 * CostUs / DtUs,
            monitor_reductions => MonReds - maps:get(mon_reds, Prev, MonReds)},
    _ = Print andalso io:put_chars(standard_error, [line(line_info(St), S), detail_lines(St, S)]),
    _ = is_pid(Notify) andalso (Notify ! {beamlab_telemetry_sample, self(), S}),
    St#st{prev = Raw#{mon_reds => MonReds}, samples = [S | Samples], tracker = Tracker1}.

%% The node did not answer in time: from now on it is probed with a cheap
%% call every interval until it answers.
silent(St = #st{notify = Notify, t0 = T0, print = Print}) ->
    Since = now_ms() - T0,
    _ = Print andalso io:format(standard_error, "~7.1fs  the node does not answer (~ts); probing it every interval~n",
                                [Since / 1000, seconds(call_timeout(St))]),
    _ = is_pid(Notify) andalso (Notify ! {beamlab_telemetry_silent, self(), Since}),
    St#st{silent = Since, unanswered = [{Since, null} | St#st.unanswered]}.

probe(St = #st{node = Node, silent = Since, notify = Notify, t0 = T0, print = Print}) ->
    Until = min_deadline(St#st.deadline, now_ms() + St#st.interval),
    %% Both calls inside the try: a node that answers the probe can still
    %% time out on the snapshot (a loaded broker), and that is silence too.
    try
        _ = erpc:call(Node, erlang, node, [], left(Until)),
        raw(St, false, min_deadline(St#st.deadline, now_ms() + call_timeout(St)))
    of
        Raw ->
            %% Answering again: a fresh baseline, so no sample spans the silence.
            At = now_ms() - T0,
            _ = Print andalso io:format(standard_error, "~7.1fs  the node answers again after ~.1f s~n",
                                        [At / 1000, (At - Since) / 1000]),
            _ = is_pid(Notify) andalso (Notify ! {beamlab_telemetry_answering, self(), At}),
            [{Since, null} | Rest] = St#st.unanswered,
            St#st{silent = false, prev = Raw#{mon_reds => maps:get(mon_reds, St#st.prev, 0)},
                  unanswered = [{Since, At} | Rest]}
    catch
        error:{erpc, timeout} -> St;
        throw:{remote, timeout} -> St;
        error:{erpc, Reason} -> went_down(St, Reason);
        throw:{remote, Reason} -> went_down(St, Reason);
        error:{exception, Reason, _} -> went_down(St, Reason)
    end.

%% How long one sample may take: twice the interval, at least 2 s.
call_timeout(#st{interval = I}) ->
    max(2 * I, 2000).

seconds(Ms) ->
    io_lib:format("~.1f s", [Ms / 1000]).

%% The watched node is gone (or stopped answering): keep what was recorded.
went_down(St = #st{notify = Notify}, Reason) ->
    Why = unicode:characters_to_binary(reason(Reason)),
    _ = is_pid(Notify) andalso (Notify ! {beamlab_telemetry_down, self(), Why}),
    St#st{down = Why}.

reason(noconnection) -> "node down or unreachable";
reason(timeout) -> "the node did not answer";
reason(not_allowed) -> "connection refused (wrong cookie?)";
reason(holder_timeout) -> "the node did not answer";
reason({holder_down, noconnection}) -> "node down or unreachable";
reason({holder_down, Why}) -> io_lib:format("its process holding the sampling flags ended during set-up (~0tP)", [Why, 8]);
reason(R) -> io_lib:format("~0tp", [R]).

%% Cumulative counters at one instant, read from another node in one call
%% (with its process list when a full scan is due, its ETS tables' memory
%% when processes are tracked, and the system monitor's events).
raw(#st{node = Node, snapshot = Exprs, rates = Rates, msacc = Msacc, root = Root, os_pid = OsPid,
        holder = Holder, tracker = Tracker, tree_reading = Reading}, Full, Until)
  when Node =/= undefined ->
    {value, {Reds, GCs, Swt, Rq, Procs, Ports, Ets, Mem, Io, MsaccRaw, Atoms, Pids, EtsMem, Events, Dist}, _} =
        erpc:call(Node, erl_eval, exprs, [Exprs, lists:sort([{'H', Holder}, {'Full', Full},
                                                             {'Tables', Tracker =/= undefined}])], left(Until)),
    {{input, In}, {output, Out}} = Io,
    M = #{t => now_ms(),
          swt => case Swt of undefined -> []; _ -> Swt end,
          reds => Reds, gcs => GCs, rq => Rq, processes => Procs, ports => Ports, ets => Ets,
          memory => maps:from_list(Mem), io_in => In, io_out => Out, atoms => Atoms,
          pids => Pids, events => Events, dist_ctrl => Dist,
          ets_mem => ets_bytes(EtsMem, Tracker),
          rates => case Rates of
                       undefined -> [];
                       F -> [{label(L), C} || {L, C} <- F()]
                   end},
    %% Machine-wide counters only when the node runs on this host; the
    %% tree's CPU (the node's VM with beamlab's own tree) is the reader's
    %% latest reading (start_tree_reader/3), with the time it was made.
    Os = case OsPid of
             undefined -> [];
             _ -> [{os_cpu_us, beamlab_runtime_probe:process_cpu_us(Root, OsPid)},
                   {cpu_times, beamlab_runtime_probe:cpu_times(Root)},
                   {load, beamlab_runtime_probe:loadavg(Root)}]
         end,
    M1 = maps:merge(M, maps:from_list([{K, V} || {K, {ok, V}} <- Os] ++ tree_reading(Reading))),
    case Msacc of
        true -> M1#{msacc => msacc_sum(MsaccRaw)};
        false -> M1
    end;
raw(#st{rates = Rates, msacc = Msacc, root = Root, cgroup = Cgroup, tracker = Tracker, tree_reading = Reading},
    Full, _Until) ->
    {Reds, _} = erlang:statistics(reductions),
    {GCs, _, _} = erlang:statistics(garbage_collection),
    {{input, In}, {output, Out}} = erlang:statistics(io),
    M = #{t => now_ms(), io_in => In, io_out => Out,
          pids => case Full of true -> erlang:processes(); false -> skip end,
          ets_mem => case Tracker of
                         undefined -> #{};
                         _ -> {ok, E} = beamlab_runtime_procs:ets(node(), erlang:system_info(wordsize), infinity),
                              E
                     end,
          swt => lists:sort(erlang:statistics(scheduler_wall_time_all)),
          reds => Reds, gcs => GCs,
          rq => erlang:statistics(run_queue_lengths_all),
          processes => erlang:system_info(process_count),
          ports => erlang:system_info(port_count),
          ets => ets_count(),
          atoms => erlang:system_info(atom_count),
          memory => maps:from_list(erlang:memory()),
          rates => case Rates of
                       undefined -> [];
                       F -> [{label(L), C} || {L, C} <- F()]
                   end},
    Os = [{os_cpu_us, beamlab_runtime_probe:process_cpu_us(Root)},
          {cgroup, beamlab_runtime_probe:cgroup_cpu_stat_at(Cgroup)},
          {cpu_times, beamlab_runtime_probe:cpu_times(Root)},
          {load, beamlab_runtime_probe:loadavg(Root)}],
    %% (the tree's CPU: the reader's latest reading, start_tree_reader/3)
    M1 = maps:merge(M, maps:from_list([{K, V} || {K, {ok, V}} <- Os] ++ tree_reading(Reading))),
    case Msacc of
        true -> M1#{msacc => msacc_totals()};
        false -> M1
    end.

%% The CPU time of the trees of `Pids' (beamlab_runtime_probe:tree_cpu/4)
%% and when it was read (the tree has its own clock: a reading can take
%% long on a loaded machine), with the tree's pids (the reader keeps them
%% for its next reading: every process of /proc is read at most once
%% every 10 s).
tree(Root, Pids, Tree0) ->
    case beamlab_runtime_probe:tree_cpu(Root, Pids, beamlab_runtime_probe:tree_root(), Tree0) of
        {ok, Us, Tree} -> {{Us, now_ms()}, Tree};
        {error, _} -> {none, Tree0}
    end.

%% A reading's fields of a raw snapshot.
tree_reading(none) -> [];
tree_reading({Us, T}) -> [{tree_cpu_us, Us}, {tree_t, T}].

%% beamlab's own tree (this VM, its peers, its private broker; a watched
%% node's VM with it: `amqp --watch''s load generators) read by a process
%% of its own, every interval a quarter interval before the sample, for
%% this VM's sampler as for a watched node's: a full walk of /proc takes
%% seconds on a loaded machine (157 processes beside 8 busy ones: 1.8 s),
%% and a sampler waiting for it misses its ticks (and does not answer
%% last/1: `amqp --watch''s lines). Each reading goes to the sampler
%% (`{tree_cpu, Reader, {CpuUs, At}}': only what it uses, not the walk's
%% pid maps, ~900 bytes at 77 processes); the reader ends with it.
start_tree_reader(Root, Pids, #st{t0 = T0, interval = I}) ->
    Sampler = self(),
    spawn(fun() ->
                  process_flag(priority, high),
                  Mon = erlang:monitor(process, Sampler),
                  tree_reader(Sampler, Mon, Root, Pids, T0 - I div 4, I, undefined)
          end).

tree_reader(Sampler, Mon, Root, Pids, At, I, Tree0) ->
    {Reading, Tree} = tree(Root, Pids, Tree0),
    Sampler ! {tree_cpu, self(), Reading},
    %% the next reading at the first of its ticks still ahead, or at once
    %% for the last sample (fresh_tree/1)
    Now = now_ms(),
    Next = At + ((Now - At) div I + 1) * I,
    receive
        {'DOWN', Mon, process, Sampler, _} -> ok;
        {read_now, Sampler} -> tree_reader(Sampler, Mon, Root, Pids, At, I, Tree)
    after Next - Now ->
            tree_reader(Sampler, Mon, Root, Pids, At, I, Tree)
    end.

%% The last sample (the run stopped between two ticks) with a reading of
%% its own, as every other one: asked of the reader and awaited for at
%% most half an interval (never past the deadline); without it the sample
%% has no tree figure.
fresh_tree(St = #st{tree_reader = undefined}) ->
    St;
fresh_tree(St = #st{tree_reader = Reader, interval = I, deadline = Deadline}) ->
    Reader ! {read_now, self()},
    receive
        {tree_cpu, Reader, Reading} -> St#st{tree_reading = Reading}
    after min(I div 2, left(Deadline)) -> St
    end.

ets_bytes(_, undefined) -> #{};
ets_bytes({Tabs, Words}, Tracker) ->
    W = maps:get(wordsize, Tracker),
    maps:from_list([{T, N * W} || {T, N} <- lists:zip(Tabs, Words), is_integer(N)]);
ets_bytes(_, _) -> #{}.

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
             atoms => maps:get(atoms, R),
             growth => growth(P, R),
             totals => maps:from_list([{K, maps:get(K, R)} || K <- [reds, gcs, io_in, io_out, os_cpu_us, tree_cpu_us],
                                                           is_map_key(K, R)]),
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

%% What grew since the previous snapshot (negative: shrank), so the first
%% sample says it too.
growth(P, R) ->
    Counts = [{K, maps:get(K, R) - maps:get(K, P)} || K <- [processes, ports, atoms], is_map_key(K, P)],
    Memory = [{binary_to_atom(<<"memory_", (atom_to_binary(K))/binary>>), V - maps:get(K, maps:get(memory, P), V)}
              || K <- [total, processes, binary, ets, atom, code], V <- [maps:get(K, maps:get(memory, R), 0)]],
    maps:from_list(Counts ++ Memory).

%% CPU time the OS charged to the VM, and to beamlab's process tree
%% (`tree_cpu_cores': this VM's, or a watched node's VM with it), in
%% cores (1.0 = one CPU all the time), the tree's over the time between
%% its readings (none when no new reading came: the reader is late).
%% A VM of the tree that ends takes its time with it (a detached peer's
%% goes to init): the tree's figure never falls below the VM's.
os_cpu(P, R, DtMs) ->
    Vm = [{os_cpu_cores, (B - A) / (DtMs * 1000)} || #{os_cpu_us := A} <- [P], #{os_cpu_us := B} <- [R]],
    Tree = [{tree_cpu_cores, (B - A) / ((Tb - Ta) * 1000)}
            || #{tree_cpu_us := A, tree_t := Ta} <- [P], #{tree_cpu_us := B, tree_t := Tb} <- [R], Tb > Ta],
    case maps:from_list(Vm ++ Tree) of
        #{os_cpu_cores := V, tree_cpu_cores := T} = M -> M#{tree_cpu_cores := max(V, T)};
        M -> M
    end.

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
%% Another node: flags held there, snapshots read in one call
%%--------------------------------------------------------------------

%% A process on `Node', evaluated by erl_eval, turns on scheduler wall
%% time (reference counted per process: it ends with the process) and,
%% when asked, microstate accounting and the system monitor (only when
%% no other process holds it: there is one per node). It gathers the
%% monitor's events, counted per process and kind, until asked for them,
%% and restores everything when told to or when this sampler is gone.
%% A sender already suspended on a busy distribution port when the
%% monitor is installed never produces a monitor message: the holder
%% counts each suspended process once for each dist port whose driver
%% queue is over its high watermark at that moment (it cannot tell which
%% of several busy ports a process waits on), so the order of the two
%% does not matter. The first request for events is the watch's baseline
%% snapshot, whose events no interval shows: it gets none, and what was
%% gathered so far goes to the first interval.
hold_flags(Node, Msacc, SysMon, Until) ->
    %% (monitored until it answers: a holder that dies, e.g. killed on
    %% the node, fails the set-up at once rather than at its deadline)
    {Holder, HMon} = erlang:spawn_monitor(Node, erl_eval, exprs, [parse(holder_text()), []]),
    Opts = case SysMon of
               false -> [];
               #{long_gc := Gc, long_schedule := Ls} ->
                   [{long_gc, Gc}, {long_schedule, Ls}, busy_port, busy_dist_port]
           end,
    Holder ! {beamlab_watch, self(), Msacc, Opts},
    receive
        {beamlab_watch_holder, Holder, Mon} -> erlang:demonitor(HMon, [flush]), {Holder, Mon};
        {'DOWN', HMon, process, Holder, Why} -> throw({remote, {holder_down, Why}})
    after left(Until) -> throw({remote, timeout})
    end.

release_flags(undefined, _) ->
    ok;
release_flags(Holder, Timeout) ->
    Ref = erlang:monitor(process, Holder),
    Holder ! {beamlab_watch_stop, self()},
    receive
        {'DOWN', Ref, process, Holder, _} -> ok
    after Timeout -> ok
    end.

holder_text() ->
    "receive {beamlab_watch, W, M, SysMon} ->"
    "  Ref = erlang:monitor(process, W),"
    "  erlang:system_flag(scheduler_wall_time, true),"
    "  Old = case M of true -> erlang:system_flag(microstate_accounting, true); false -> keep end,"
    "  Mon = case SysMon of"
    "          [] -> off;"
    "          _ -> case erlang:system_monitor() of"
    "                 undefined -> erlang:system_monitor(self(), SysMon), ours;"
    "                 {Other, _} -> {taken, Other}"
    "               end"
    "        end,"
    "  W ! {beamlab_watch_holder, self(), Mon},"
    "  Busy = case Mon of"
    "           ours -> [Pt || {_, Pt} <- erlang:system_info(dist_ctrl), is_port(Pt),"
    "                          case {erlang:port_info(Pt, queue_size), inet:getopts(Pt, [high_watermark])} of"
    "                            {{queue_size, Q}, {ok, [{high_watermark, Hw}]}} -> Q >= Hw;"
    "                            {{queue_size, Q}, _} -> Q > 0;"
    "                            _ -> false"
    "                          end];"
    "           _ -> []"
    "         end,"
    "  Seed = maps:from_list(lists:sublist([{{busy_dist_port, P, Pt}, {1, 0}} || Pt <- Busy, P <- erlang:processes(),"
    "                         erlang:process_info(P, status) =:= {status, suspended}], 1000)),"
    "  Loop = fun L(Acc, N, First) ->"
    "    receive"
    "      {beamlab_watch_stop, W} -> ok;"
    "      {'DOWN', Ref, process, W, _} -> ok;"
    "      {beamlab_watch_events, From} when First -> From ! {beamlab_watch_events, self(), #{}, 0}, L(Acc, N, false);"
    "      {beamlab_watch_events, From} -> From ! {beamlab_watch_events, self(), Acc, N}, L(#{}, 0, false);"
    "      {monitor, P, What, Info} ->"
    "        K = {What, P, case Info of I when is_port(I) -> I; _ -> none end},"
    "        Ms = case Info of [_ | _] -> proplists:get_value(timeout, Info, 0); _ -> 0 end,"
    "        case Acc of"
    "          #{K := {C, Max}} -> L(Acc#{K := {C + 1, erlang:max(Max, Ms)}}, N + 1, First);"
    "          _ when map_size(Acc) < 1000 -> L(Acc#{K => {1, Ms}}, N + 1, First);"
    "          _ -> L(Acc, N + 1, First)"
    "        end"
    "    end"
    "  end,"
    "  Loop(Seed, map_size(Seed), true),"
    "  Self = self(),"
    "  case erlang:system_monitor() of {Self, _} -> erlang:system_monitor(undefined); _ -> ok end,"
    "  case Old of keep -> ok; _ -> erlang:system_flag(microstate_accounting, Old) end,"
    "  erlang:system_flag(scheduler_wall_time, false)"
    " end.".

%% One call: the counters, the process list when `Full', the ETS tables'
%% memory when `Tables', the events the holder `H' gathered.
snapshot_text(Msacc) ->
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
     " erlang:system_info(atom_count),"
     " case Full of true -> erlang:processes(); false -> skip end,"
     " case Tables of"
     "   true -> Ts = ets:all(), {Ts, lists:zipwith(fun ets:info/2, Ts, lists:duplicate(length(Ts), memory))};"
     "   false -> none"
     " end,"
     " begin H ! {beamlab_watch_events, self()},"
     "   receive {beamlab_watch_events, H, Acc, N} -> {Acc, N} after 1000 -> none end"
     " end,"
     " erlang:system_info(dist_ctrl)}."].

parse(Text) ->
    {ok, Exprs} = beamlab_runtime_expr:parse(Text),
    Exprs.

remote(Node, Text, Timeout) ->
    {value, V, _} = erpc:call(Node, erl_eval, exprs, [parse(Text), []], Timeout),
    V.

otp_release(R) ->
    case string:to_integer(R) of
        {N, _} when is_integer(N) -> N;
        _ -> 0
    end.

min_deadline(infinity, B) -> B;
min_deadline(A, B) -> min(A, B).

left(infinity) -> infinity;
left(Deadline) -> max(0, Deadline - now_ms()).

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
series(#st{samples = Rev, interval = I, shape = Shape, msacc = Msacc, node = Node, down = Down,
           limits = Limits, sysmon = SysMon, unanswered = Unanswered, failed = Failed,
           first_failure = FirstFailure}) ->
    Samples = lists:reverse(Rev),
    Keys = lists:usort(lists:append([maps:keys(S) || S <- Samples])),
    Nested = [memory, rates, msacc, totals, growth],
    Flat = maps:from_list([{K, [maps:get(K, S, null) || S <- Samples]}
                           || K <- Keys, not lists:member(K, Nested)]),
    Sub = maps:from_list([{K, columns([maps:get(K, S, #{}) || S <- Samples])}
                          || K <- Nested, lists:member(K, Keys)]),
    Watched = case Node of
                  undefined -> #{};
                  _ -> #{node => atom_to_binary(Node),
                         node_down => Down =/= false,
                         node_down_reason => case Down of false -> null; _ -> Down end,
                         limits => Limits,
                         system_monitor => case SysMon of
                                               {taken, P} -> #{state => taken, holder => beamlab_runtime_procs:id(P)};
                                               _ -> #{state => SysMon}
                                           end,
                         unanswered => [#{from_ms => F, to_ms => T} || {F, T} <- lists:reverse(Unanswered)]}
              end,
    Failures = case Failed of
                   0 -> #{};
                   _ -> #{failed_samples => Failed, first_failure => FirstFailure}
               end,
    maps:merge(maps:merge(maps:merge(Flat, Sub#{interval_ms => I, samples => length(Samples),
                                                schedulers => Shape, msacc_enabled => Msacc}), Watched),
               Failures).

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
                   [io_lib:format(" ~*ts", [rate_width(L), L]) || L <- Labels], "mon"]).

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
                   [io_lib:format(" ~*ts", [rate_width(L), beamlab_format_units:rate(maps:get(L, maps:get(rates, S), 0))])
                    || L <- Labels],
                   maps:get(monitor_wall_pct, S)]).

%% Under a watched node's line: its memory by kind, then its top
%% processes in one table (R: among the top by reductions, Q: by message
%% queue, M: by memory).
detail_lines(#st{node = undefined}, S) ->
    top_table(S);
detail_lines(_, S) ->
    [memory_line(S), top_table(S)].

memory_line(#{memory := M} = S) ->
    B = fun(K) -> beamlab_format_units:bytes(maps:get(K, M, 0)) end,
    io_lib:format("          memory: processes ~ts, binary ~ts, ets ~ts, atoms ~ts, code ~ts; "
                  "~b atoms, ~b ports~n",
                  [B(processes), B(binary), B(ets), B(atom), B(code), maps:get(atoms, S, 0), maps:get(ports, S, 0)]).

top_table(#{top := Top}) ->
    Lists = [{Mark, maps:get(K, Top, [])} || {Mark, K} <- [{$R, by_reductions}, {$Q, by_message_queue},
                                                          {$M, by_memory}]],
    Order = lists:foldl(fun({_, L}, Acc) ->
                                Acc ++ [P || #{pid := P} <- L, not lists:member(P, Acc)]
                        end, [], Lists),
    Entries = maps:from_list([{P, E} || {_, L} <- Lists, E = #{pid := P} <- L]),
    case Order of
        [] -> [];
        _ ->
            [io_lib:format("          ~-3s ~9s ~8s ~9s  ~-16s ~-30s ~ts~n",
                           ["top", "reds/s", "queue", "memory", "pid", "name or initial call", "current function"]),
             [begin
                  E = maps:get(P, Entries),
                  Marks = [Mark || {Mark, L} <- Lists, lists:any(fun(#{pid := X}) -> X =:= P end, L)],
                  io_lib:format("          ~-3s ~9ts ~8b ~9ts  ~-16ts ~-30ts ~ts~n",
                                [Marks, beamlab_format_units:count(round(maps:get(reductions_per_s, E, 0))),
                                 maps:get(message_queue_len, E), beamlab_format_units:bytes(maps:get(memory, E)),
                                 P, string:slice(maps:get(name, E), 0, 30),
                                 null_text(maps:get(current_function, E))])
              end || P <- Order]]
    end;
top_table(_) -> [].

null_text(null) -> "-";
null_text(B) -> B.

%% Whether the system monitor is ours, said once at the start.
sysmon_line({taken, Pid}) ->
    io_lib:format("          system monitor: already held by ~ts on the node; long GCs, long schedules "
                  "and busy ports are not watched (there is one per node)~n", [beamlab_runtime_procs:id(Pid)]);
sysmon_line(_) -> [].

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

%% A rate's column is as wide as its name (a benchmark's code), so the
%% header shows it whole; at least 12 for the value.
rate_width(Label) -> max(12, string:length(Label)).

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
