%%% @doc Point-in-time probes of the VM and the OS: how late timers fire,
%%% the load average, the machine's CPU times, this OS process's CPU time
%%% and its cgroup CPU controller's throttling counters.
%%%
%%% The one place these are read: the engine's pre-flight checks, the
%%% environment report, the pathology detectors and live telemetry all
%%% call here. OS facts are read from `/proc' and `/sys' below a `Root'
%%% directory ("/" on a real machine) so tests can point it at a fake tree.
%%% A missing or malformed file is an `{error, _}', never a crash.
-module(beamlab_runtime_probe).

-export([timer/1, timer_overshoot/0, loadavg/1, load1/0, cpu_times/1, process_cpu_us/1, process_cpu_us/2,
         tree_cpu_us/2, tree_cpu_us/3, tree_cpu/4, cpu_snapshot/2, cpu_snapshot/3, competition/2, contended/2, thresholds/0, tree_root/0,
         cgroup_locate/1, cgroup_cpu_stat/1, cgroup_cpu_stat_at/1, parse_kv_space/1,
         scheduler_migrations/2, migration_rate/4, parse_nr_migrations/1]).

-type timer_report() :: #{sleep_ms := pos_integer(), samples := pos_integer(),
                          overshoot_us := #{median := integer(), p90 := integer(),
                                            max := integer(), mean := float()}}.
-type loadavg() :: #{load1 := number(), load5 := number(), load15 := number()}.
-type cgroup() :: {v1 | v2, file:filename()} | none.
-type cgroup_stat() :: #{nr_periods := non_neg_integer(), nr_throttled := non_neg_integer(),
                         throttled_usec := non_neg_integer(), usage_usec => non_neg_integer()}.
%% The machine's busy CPU time and an OS process tree's at one instant.
%% `t_us' is when the machine's time was read, `tree_t_us' when the tree's
%% walk ended: the walk reads every process and can take a large part of
%% a short window on a loaded machine, so each figure has its own clock.
-type cpu_snapshot() :: #{t_us := integer(), busy_ticks := non_neg_integer(), own_us := non_neg_integer(),
                          tree_t_us => integer()}.
%% What ran between two snapshots, in cores (1.0 = one CPU all the time).
-type competition() :: #{window_ms := non_neg_integer(), machine_cores := float(),
                         own_cores := float(), others_cores := float()}.
%% A process tree's pids between walks of /proc ({@link tree_cpu/4}): the
%% walk's key (root directory, roots, `Upto'), when it was made, every pid
%% /proc listed at the last look, and the tree's pids and their
%% ancestors' up to `Upto' with their start times (a pid reused by
%% another process is not the tree's).
-opaque tree() :: #{key := {file:filename(), [string()], string() | undefined},
                    walked := integer(),
                    known := #{integer() => true},
                    mine := #{integer() => non_neg_integer()},
                    above := #{integer() => non_neg_integer()}}.
-export_type([timer_report/0, loadavg/0, cgroup/0, cgroup_stat/0, cpu_snapshot/0, competition/0, tree/0]).

%% How often a tree's pids are found again by reading every proc/N/stat
%% ({@link tree_cpu/4}); between, only the tree's and new pids' are read.
-define(TREE_REFRESH_MS, 10000).

%% USER_HZ is part of the Linux /proc ABI and 100 on every architecture
%% Linux runs beamlab on; /proc/*/stat times are in these ticks.
-define(USER_HZ, 100).

%% When other processes competed for the CPUs (#35, measured by
%% bench/load_detector.sh, docs/statistics.md "What a load finding
%% measures"): others used at least OTHERS_MIN_SHARE of the CPUs while the
%% machine was busy (others and beamlab's tree together at least
%% BUSY_SHARE of them), or others alone at least OTHERS_SHARE. One busy
%% loop beside a run on both cores of 2 slowed it 15-25% while others
%% measured 0.7-0.9 cores: under the old rule (others >= half the CPUs).
%% The one rule of the engine's `load_high' and the telemetry's
%% `machine_overloaded'.
-define(OTHERS_SHARE, 0.5).
-define(OTHERS_MIN_SHARE, 0.1).
-define(BUSY_SHARE, 0.75).

%%--------------------------------------------------------------------
%% Timers
%%--------------------------------------------------------------------

%% @doc Sleeps `samples' times (default 20) for `sleep_ms' (default 1) and
%% reports how late each wake-up was, in microseconds (median, p90, max,
%% mean). A late timer means overloaded schedulers or a descheduled VM.
-spec timer(#{samples => pos_integer(), sleep_ms => pos_integer()}) -> timer_report().
timer(Opts) ->
    N = maps:get(samples, Opts, 20),
    Ms = maps:get(sleep_ms, Opts, 1),
    Over = lists:sort([begin
                           T0 = erlang:monotonic_time(microsecond),
                           receive after Ms -> ok end,
                           erlang:monotonic_time(microsecond) - T0 - Ms * 1000
                       end || _ <- lists:seq(1, N)]),
    #{sleep_ms => Ms, samples => N,
      overshoot_us => #{median => lists:nth((N + 1) div 2, Over),
                        p90 => lists:nth(max(1, (N * 9 + 9) div 10), Over),
                        max => lists:last(Over),
                        mean => lists:sum(Over) / N}}.

%% @doc Median overshoot of nine 1 ms sleeps, in microseconds: a quick
%% answer for deciding how to time sample boundaries.
-spec timer_overshoot() -> non_neg_integer().
timer_overshoot() ->
    #{overshoot_us := #{median := Median}} = timer(#{samples => 9, sleep_ms => 1}),
    max(0, Median).

%%--------------------------------------------------------------------
%% Load and CPU time
%%--------------------------------------------------------------------

%% @doc The 1, 5 and 15 minute load averages from proc/loadavg.
-spec loadavg(file:filename()) -> {ok, loadavg()} | {error, enoent}.
loadavg(Root) ->
    case read(filename:join(Root, "proc/loadavg")) of
        {ok, T} ->
            try string:lexemes(T, " \n") of
                [A, B, C | _] -> {ok, #{load1 => num(A), load5 => num(B), load15 => num(C)}};
                _ -> {error, enoent}
            catch error:badarg -> {error, enoent}
            end;
        error -> {error, enoent}
    end.

%% @doc This machine's 1-minute load average, or `undefined' off Linux.
-spec load1() -> number() | undefined.
load1() ->
    case loadavg("/") of
        {ok, #{load1 := L}} -> L;
        {error, _} -> undefined
    end.

%% @doc The machine's aggregate CPU times in USER_HZ ticks from the first
%% line of proc/stat (`user', `nice', `system', `idle', `iowait', `irq',
%% `softirq', `steal').
-spec cpu_times(file:filename()) -> {ok, #{atom() => non_neg_integer()}} | {error, enoent}.
cpu_times(Root) ->
    case read(filename:join(Root, "proc/stat")) of
        {ok, T} ->
            case string:lexemes(hd(string:split(T, "\n")), " ") of
                [<<"cpu">> | Fields] ->
                    Names = [user, nice, system, idle, iowait, irq, softirq, steal],
                    Vals = [binary_to_integer(F) || F <- Fields],
                    {ok, maps:from_list(lists:zip(lists:sublist(Names, length(Vals)),
                                                  lists:sublist(Vals, length(Names))))};
                _ -> {error, enoent}
            end;
        error -> {error, enoent}
    end.

%% @doc CPU time used by this OS process (the VM), user + system, in
%% microseconds, from proc/self/stat.
-spec process_cpu_us(file:filename()) -> {ok, non_neg_integer()} | {error, enoent}.
process_cpu_us(Root) ->
    process_cpu_us(Root, "self").

%% @doc CPU time used by the OS process `Pid' (user + system), in
%% microseconds, from proc/PID/stat: another VM on this host.
-spec process_cpu_us(file:filename(), string()) -> {ok, non_neg_integer()} | {error, enoent}.
process_cpu_us(Root, Pid) ->
    case read(filename:join([Root, "proc", Pid, "stat"])) of
        {ok, T} ->
            case stat_fields(T) of
                {ok, Fields} ->
                    %% utime (14) and stime (15) are the 12th and 13th
                    UTime = binary_to_integer(lists:nth(12, Fields)),
                    STime = binary_to_integer(lists:nth(13, Fields)),
                    {ok, (UTime + STime) * (1000000 div ?USER_HZ)};
                error -> {error, enoent}
            end;
        error -> {error, enoent}
    end.

%% @doc CPU time (user + system, in microseconds) of the OS process `Pid'
%% and of every descendant: each live one's own time, plus the time of
%% the children each has reaped (`cutime'/`cstime'), so a fresh VM that
%% ran and exited during a window still counts as the tree's. Read from
%% every proc/N/stat; a process gone meanwhile is skipped.
-spec tree_cpu_us(file:filename(), string()) -> {ok, non_neg_integer()} | {error, enoent}.
tree_cpu_us(Root, Pid) ->
    tree_cpu_us(Root, Pid, undefined).

%% @doc {@link tree_cpu_us/2}, plus the CPU time of `Pid''s ancestors up to
%% and including the process `Upto' (their own time only: not their other
%% children's, nor those they reaped), when `Upto' is an ancestor of
%% `Pid' (else, or `undefined', the tree alone): a fresh VM of a `matrix'
%% or `check' counts the beamlab VM that started it as its own, not as
%% another process competing for the CPUs. With `Upto' given, the VMs
%% beamlab started detached from it (`peer''s default: their parent is
%% init; their environment holds `BEAMLAB_TREE=Upto') and their trees
%% count too: a suite's peer VMs are beamlab's own.
-spec tree_cpu_us(file:filename(), string(), string() | undefined) -> {ok, non_neg_integer()} | {error, enoent}.
tree_cpu_us(Root, Pid, Upto) ->
    case tree_cpu(Root, [Pid], Upto, undefined) of
        {ok, Us, _Tree} -> {ok, Us};
        {error, enoent} = E -> E
    end.

%% @doc {@link tree_cpu_us/3} of the trees of `Pids' together (the first
%% one's ancestors up to `Upto'; the first must exist, the others may
%% not: a watched node's VM beside beamlab's own), for a caller that
%% samples it again and again: it keeps the tree's pids (`undefined' the
%% first time) and reads every proc/N/stat at most once every 10 s
%% (`TREE_REFRESH_MS'). In between it lists /proc and reads only the
%% tree's pids and the new ones (a child started since is the tree's at
%% once; a pid gone, or reused by another process, is left out).
-spec tree_cpu(file:filename(), [string(), ...], string() | undefined, tree() | undefined) ->
          {ok, non_neg_integer(), tree()} | {error, enoent}.
tree_cpu(Root, Pids, Upto, Tree) ->
    Key = {Root, Pids, Upto},
    Now = erlang:monotonic_time(millisecond),
    case Tree of
        #{key := Key, walked := At} when Now - At < ?TREE_REFRESH_MS -> tree_again(Tree);
        _ -> tree_walk(Key, Now)
    end.

%% Every proc/N/stat read: the trees' pids found from scratch.
tree_walk({Root, [Pid | _] = Pids, Upto} = Key, Now) ->
    Proc = filename:join(Root, "proc"),
    case list_dir(Proc) of
        {ok, Names} ->
            Listed = [N || N <- Names, is_digits(list_to_binary(N))],
            Texts = [{N, T} || N <- Listed, {ok, T} <- [read(filename:join([Proc, N, "stat"]))]],
            Stats = maps:from_list([{P, S} || {_, T} <- Texts, {P, _, _, _, _} = S <- parse_stat(T)]),
            Children = maps:fold(fun(P, {_, PP, _, _, _}, Acc) -> maps:update_with(PP, fun(L) -> [P | L] end, [P], Acc) end,
                                 #{}, Stats),
            Present = [P || R <- Pids, {P, []} <- [string:to_integer(R)], is_map_key(P, Stats)],
            case string:to_integer(Pid) of
                {Me, []} when is_map_key(Me, Stats) ->
                    Mine = tree_pids(Present, Children, #{}),
                    %% the VMs beamlab started detached (peer's default:
                    %% their parent is init), and what they started
                    All = tree_pids([P || {N, T} <- Texts, upto(Upto) =/= undefined,
                                          P <- [binary_to_integer(list_to_binary(N))],
                                          not is_map_key(P, Mine), detached(Proc, N, T, Upto)],
                                    Children, Mine),
                    Above = [P || P <- ancestors(Me, upto(Upto), Stats), not is_map_key(P, All)],
                    Tree = #{key => Key, walked => Now,
                             known => maps:from_list([{list_to_integer(N), true} || N <- Listed]),
                             mine => start_times(maps:keys(All), Stats),
                             above => start_times(Above, Stats)},
                    {ok, tree_us(Tree, Stats), Tree};
                _ -> {error, enoent}
            end;
        {error, _} -> {error, enoent}
    end.

%% Between walks: /proc listed, the tree's and the new pids' stat read.
tree_again(#{key := {Root, [Pid | _], Upto}, known := Known, mine := Mine0, above := Above} = Tree) ->
    Proc = filename:join(Root, "proc"),
    case list_dir(Proc) of
        {ok, Names} ->
            Listed = [list_to_integer(N) || N <- Names, is_digits(list_to_binary(N))],
            New = [{P, T} || P <- Listed, not is_map_key(P, Known),
                             {ok, T} <- [read(filename:join([Proc, integer_to_list(P), "stat"]))]],
            NewStats = maps:from_list([{P, S} || {_, T} <- New, {P, _, _, _, _} = S <- parse_stat(T)]),
            Old = [{P, S} || P <- maps:keys(Mine0) ++ maps:keys(Above),
                             {ok, T} <- [read(filename:join([Proc, integer_to_list(P), "stat"]))],
                             {_, _, _, _, Start} = S <- parse_stat(T),
                             Start =:= maps:get(P, Mine0, maps:get(P, Above, none))],
            Stats = maps:merge(maps:from_list(Old), NewStats),
            Live = maps:filter(fun(P, _) -> is_map_key(P, Stats) end, Mine0),
            %% a new pid whose parent is the tree's, or a detached VM
            %% naming it, is the tree's (in the order they came: a
            %% child of a new child too)
            Detached = [P || upto(Upto) =/= undefined, {P, T} <- New,
                             detached(Proc, integer_to_list(P), T, Upto)],
            Mine = adopt(lists:sort(maps:keys(NewStats)), NewStats, Detached, Live),
            {Me, []} = string:to_integer(Pid),
            case is_map_key(Me, Mine) of
                true ->
                    Tree1 = Tree#{known := maps:from_list([{P, true} || P <- Listed]),
                                  mine := Mine,
                                  above := maps:filter(fun(P, _) -> is_map_key(P, Stats) end, Above)},
                    {ok, tree_us(Tree1, Stats), Tree1};
                false -> {error, enoent}
            end;
        {error, _} -> {error, enoent}
    end.

%% New pids joined to the tree until none more joins.
adopt(New, Stats, Detached, Mine) ->
    Joining = [P || P <- New, not is_map_key(P, Mine),
                    is_map_key(element(2, maps:get(P, Stats)), Mine) orelse lists:member(P, Detached)],
    case Joining of
        [] -> Mine;
        _ -> adopt(New, Stats, Detached,
                   maps:merge(Mine, start_times(Joining, Stats)))
    end.

%% The tree's CPU time, in microseconds: each of its processes' own and
%% reaped children's, and its ancestors' own.
tree_us(#{mine := Mine, above := Above}, Stats) ->
    Ticks = lists:sum([Total || P <- maps:keys(Mine), {_, _, Total, _, _} <- [maps:get(P, Stats, none)]])
        + lists:sum([Self || P <- maps:keys(Above), {_, _, _, Self, _} <- [maps:get(P, Stats, none)]]),
    Ticks * (1000000 div ?USER_HZ).

start_times(Pids, Stats) ->
    maps:from_list([{P, element(5, maps:get(P, Stats))} || P <- Pids]).

%% A VM beamlab started detached (peer's default: its parent is init):
%% a beam.smp whose environment names the tree's root.
detached(Proc, N, Text, Upto) ->
    comm(Text) =:= <<"beam.smp">> andalso names_tree(filename:join([Proc, N, "environ"]), Upto).

upto(undefined) -> undefined;
upto(Upto) ->
    case string:to_integer(Upto) of
        {U, []} when U > 1 -> U;
        _ -> undefined
    end.

%% The ancestors of `Me' up to and including `Upto', [] when `Upto' is
%% not one of them.
ancestors(_Me, undefined, _Stats) -> [];
ancestors(Me, Me, _Stats) -> [];
ancestors(Me, Upto, Stats) -> ancestors(Me, Upto, Stats, [], 64).

ancestors(_P, _Upto, _Stats, _Acc, 0) -> [];
ancestors(P, Upto, Stats, Acc, Left) ->
    case maps:find(P, Stats) of
        {ok, {_, Upto, _, _, _}} -> [Upto || is_map_key(Upto, Stats)] ++ Acc;
        {ok, {_, PP, _, _, _}} when PP > 1, PP =/= P, is_map_key(PP, Stats) ->
            ancestors(PP, Upto, Stats, [PP | Acc], Left - 1);
        _ -> []
    end.

%% @doc The OS process whose tree is beamlab's own: `BEAMLAB_TREE' (set by
%% {@link beamlab_runtime_peer} for the fresh VMs it starts: the first
%% beamlab VM's process) or this VM's.
-spec tree_root() -> string().
tree_root() ->
    case os:getenv("BEAMLAB_TREE") of
        false -> os:getpid();
        "" -> os:getpid();
        P -> case is_digits(list_to_binary(P)) of
                 true -> P;
                 false -> os:getpid()
             end
    end.

%% The pids of the trees rooted at `Ps', added to `Acc' (a set).
tree_pids([], _Children, Acc) ->
    Acc;
tree_pids([P | Rest], Children, Acc) when is_map_key(P, Acc) ->
    tree_pids(Rest, Children, Acc);
tree_pids([P | Rest], Children, Acc) ->
    %% (a pid is its own parent only for the kernel's pid 0: never here)
    Kids = [K || K <- maps:get(P, Children, []), K =/= P],
    tree_pids(Kids ++ Rest, Children, Acc#{P => true}).

%% The command name of a proc/PID/stat text (between the first '(' and
%% the last ')').
comm(T) ->
    case {binary:match(T, <<"(">>), string:split(T, ")", trailing)} of
        {{Start, 1}, [Before, _]} when byte_size(Before) > Start ->
            binary:part(Before, Start + 1, byte_size(Before) - Start - 1);
        _ -> <<>>
    end.

%% Whether a process's environment (proc/PID/environ, readable for our
%% own user's processes only) says it is beamlab's: BEAMLAB_TREE=Upto,
%% set by beamlab_runtime_peer for every VM it starts.
names_tree(Environ, Upto) ->
    case read(Environ) of
        {ok, Env} -> lists:member(iolist_to_binary(["BEAMLAB_TREE=", Upto]), binary:split(Env, <<0>>, [global]));
        error -> false
    end.

%% proc/PID/stat -> [{Pid, PPid, utime + stime + cutime + cstime, utime +
%% stime, starttime}], or [] when malformed (starttime 0 when absent).
%% The command name (field 2) may hold spaces and ')'.
parse_stat(T) ->
    case {string:split(T, " "), stat_fields(T)} of
        {[PidB, _], {ok, Fields}} ->
            try
                Int = fun(I) -> binary_to_integer(lists:nth(I, Fields)) end,
                %% ppid (4) is the 2nd, utime, stime, cutime, cstime
                %% (14-17) the 12th to 15th, starttime (22) the 20th
                Start = case length(Fields) >= 20 of
                            true -> Int(20);
                            false -> 0
                        end,
                [{binary_to_integer(PidB), Int(2), Int(12) + Int(13) + Int(14) + Int(15), Int(12) + Int(13), Start}]
            catch error:_ -> []
            end;
        _ -> []
    end.

%% The fields of a proc/PID/stat text from the 3rd on: the command name
%% (the 2nd) may hold spaces and ')', so they start after its last ')'.
stat_fields(T) ->
    case string:split(T, ")", trailing) of
        [_, After] -> {ok, string:lexemes(After, " \n")};
        _ -> error
    end.

%% @doc The machine's busy CPU time (proc/stat: all but idle and iowait)
%% and the CPU time of the process tree of `Pid' ({@link tree_cpu_us/2}),
%% now: two of them give {@link competition/2}.
-spec cpu_snapshot(file:filename(), string()) -> {ok, cpu_snapshot()} | {error, enoent}.
cpu_snapshot(Root, Pid) ->
    cpu_snapshot(Root, Pid, undefined).

%% @doc {@link cpu_snapshot/2} with the tree of {@link tree_cpu_us/3}: the
%% ancestors up to `Upto' count as the tree's.
-spec cpu_snapshot(file:filename(), string(), string() | undefined) -> {ok, cpu_snapshot()} | {error, enoent}.
cpu_snapshot(Root, Pid, Upto) ->
    Stat = cpu_times(Root),
    T = erlang:monotonic_time(microsecond),
    case {Stat, tree_cpu_us(Root, Pid, Upto)} of
        {{ok, Times}, {ok, Own}} ->
            Busy = lists:sum(maps:values(Times)) - maps:get(idle, Times, 0) - maps:get(iowait, Times, 0),
            {ok, #{t_us => T, busy_ticks => Busy, own_us => Own,
                   tree_t_us => erlang:monotonic_time(microsecond)}};
        _ ->
            {error, enoent}
    end.

%% @doc What ran on the machine between two snapshots, in cores: all of
%% it, the snapshotted process tree, and everything else (`others', never
%% below zero: the two clocks tick apart). beamlab's own work, now or in
%% an earlier run, is never "others", unlike the load average.
-spec competition(cpu_snapshot(), cpu_snapshot()) -> competition().
competition(#{t_us := T0, busy_ticks := B0, own_us := O0} = S0, #{t_us := T1, busy_ticks := B1, own_us := O1} = S1) ->
    Wall = max(1, T1 - T0),
    Machine = max(0, B1 - B0) * (1000000 div ?USER_HZ) / Wall,
    %% (the tree's own clock: a walk slowed at one end of the window made
    %% the machine look idle, 0.9 of 2 CPUs beside a busy loop)
    TreeWall = max(1, maps:get(tree_t_us, S1, T1) - maps:get(tree_t_us, S0, T0)),
    Own = max(0, O1 - O0) / TreeWall,
    #{window_ms => Wall div 1000, machine_cores => Machine, own_cores => Own,
      others_cores => max(0.0, Machine - Own)}.

%% @doc Whether other processes competed for the CPUs, from what was
%% measured over a window (in cores) on a machine of `Cpus' CPUs: the
%% machine was busy (others and beamlab's own tree together used at least
%% 3/4 of the CPUs) and others took at least 1/10 of them; or others alone
%% used at least half the CPUs ({@link thresholds/0}). A quiet machine
%% running beamlab alone (its fresh VMs, its private broker and the VM
%% that started them included: `BEAMLAB_TREE', {@link tree_root/0}) has
%% others near zero.
-spec contended(#{others_cores := number(), own_cores := number(), _ => _}, pos_integer()) -> boolean().
contended(#{others_cores := Others, own_cores := Own}, Cpus) ->
    Others >= ?OTHERS_SHARE * Cpus
        orelse (Others >= ?OTHERS_MIN_SHARE * Cpus andalso Others + Own >= ?BUSY_SHARE * Cpus).

%% @doc The rule's thresholds, as shares of the CPUs: `others_min' (what
%% others must use while the machine is busy), `busy' (others and
%% beamlab's tree together) and `others' (others alone, busy or not).
-spec thresholds() -> #{others_min := float(), busy := float(), others := float()}.
thresholds() ->
    #{others_min => ?OTHERS_MIN_SHARE, busy => ?BUSY_SHARE, others => ?OTHERS_SHARE}.

%% @doc How many times the kernel moved each normal scheduler thread of
%% the VM `Pid' ("self" or an OS pid on this host) to another CPU since
%% it started: `se.nr_migrations' of proc/PID/task/TID/sched, for the
%% threads named `N_scheduler' (the VM names its threads), as
%% `#{N => Migrations}'. `{error, enoent}' when the kernel does not show
%% it (no sched debug file) or the process is gone.
-spec scheduler_migrations(file:filename(), string()) ->
          {ok, #{pos_integer() => non_neg_integer()}} | {error, enoent}.
scheduler_migrations(Root, Pid) ->
    Dir = filename:join([Root, "proc", Pid, "task"]),
    case list_dir(Dir) of
        {ok, Tids} ->
            Pairs = [{Id, M} || Tid <- Tids,
                                {ok, Comm} <- [read(filename:join([Dir, Tid, "comm"]))],
                                Id <- scheduler_id(string:trim(Comm)),
                                {ok, Sched} <- [read(filename:join([Dir, Tid, "sched"]))],
                                M <- [parse_nr_migrations(Sched)], is_integer(M)],
            case Pairs of
                [] -> {error, enoent};
                _ -> {ok, maps:from_list(Pairs)}
            end;
        {error, _} -> {error, enoent}
    end.

%% @doc The migrations of the online schedulers 1..`Online' between two
%% reads of {@link scheduler_migrations/2} `WallUs' microseconds apart:
%% per scheduler, in all and per second; `null' (and no schedulers) when
%% either read failed.
-spec migration_rate({ok, #{pos_integer() => non_neg_integer()}} | {error, term()},
                     {ok, #{pos_integer() => non_neg_integer()}} | {error, term()}, integer(), term()) ->
          #{per_scheduler := [integer()], total := integer() | null, per_s := float() | null}.
migration_rate({ok, A}, {ok, B}, WallUs, Online) when WallUs > 0, is_integer(Online) ->
    Per = [maps:get(I, B) - maps:get(I, A) || I <- lists:seq(1, Online), is_map_key(I, A), is_map_key(I, B)],
    #{per_scheduler => Per, total => lists:sum(Per), per_s => lists:sum(Per) * 1.0e6 / WallUs};
migration_rate(_, _, _, _) ->
    #{per_scheduler => [], total => null, per_s => null}.

%% "3_scheduler" is normal scheduler 3 (the dirty ones are "N_dirty_...").
scheduler_id(Comm) ->
    case string:split(Comm, "_") of
        [N, <<"scheduler">>] ->
            try [binary_to_integer(N)] catch error:badarg -> [] end;
        _ -> []
    end.

%% @doc The `se.nr_migrations' count of a proc/PID/task/TID/sched file,
%% `undefined' when it has none.
-spec parse_nr_migrations(binary()) -> non_neg_integer() | undefined.
parse_nr_migrations(Text) ->
    case re:run(Text, "^se\\.nr_migrations\\s*:\\s*([0-9]+)", [multiline, {capture, all_but_first, binary}]) of
        {match, [N]} -> binary_to_integer(N);
        nomatch -> undefined
    end.

%%--------------------------------------------------------------------
%% cgroup
%%--------------------------------------------------------------------

%% @doc Where this process's cgroup CPU controller is below `Root', for
%% repeated reads with {@link cgroup_cpu_stat_at/1}. /proc/self/cgroup
%% names the path; inside a container namespace the controller is at the
%% mount root.
-spec cgroup_locate(file:filename()) -> cgroup().
cgroup_locate(Root) ->
    Base = filename:join(Root, "sys/fs/cgroup"),
    Lines = case read(filename:join(Root, "proc/self/cgroup")) of
                {ok, T} -> [string:split(L, ":", all) || L <- string:lexemes(T, "\n")];
                error -> []
            end,
    V2Rel = [rel(P) || [<<"0">>, <<>>, P] <- Lines],
    V1Rel = [rel(P) || [_, Ctl, P] <- Lines,
                       lists:member(<<"cpu">>, string:lexemes(Ctl, ","))],
    V2 = [D || R <- V2Rel ++ [""], D <- [filename:join(Base, R)],
               filelib:is_regular(filename:join(D, "cpu.max"))],
    V1 = [D || R <- V1Rel ++ [""], Ctl <- ["cpu,cpuacct", "cpu"],
               D <- [filename:join([Base, Ctl, R])],
               filelib:is_regular(filename:join(D, "cpu.cfs_quota_us"))],
    case {V2, V1} of
        {[D | _], _} -> {v2, D};
        {[], [D | _]} -> {v1, D};
        {[], []} -> none
    end.

rel(P) -> string:trim(binary_to_list(P), leading, "/").

%% @doc The throttling counters of this process's cgroup CPU controller:
%% `nr_periods', `nr_throttled' and `throttled_usec' (v1's nanoseconds are
%% converted), plus `usage_usec' where the controller offers it.
-spec cgroup_cpu_stat(file:filename()) -> {ok, cgroup_stat()} | {error, no_cgroup}.
cgroup_cpu_stat(Root) ->
    cgroup_cpu_stat_at(cgroup_locate(Root)).

%% @doc As {@link cgroup_cpu_stat/1} for a located controller.
-spec cgroup_cpu_stat_at(cgroup()) -> {ok, cgroup_stat()} | {error, no_cgroup}.
cgroup_cpu_stat_at(none) ->
    {error, no_cgroup};
cgroup_cpu_stat_at({Version, Dir}) ->
    case read(filename:join(Dir, "cpu.stat")) of
        {ok, Text} ->
            KV = maps:from_list(parse_kv_space(Text)),
            Throttled = case {Version, KV} of
                            {v2, #{<<"throttled_usec">> := U}} -> U;
                            {v1, #{<<"throttled_time">> := Ns}} -> Ns div 1000;
                            _ -> 0
                        end,
            Usage = case {Version, KV} of
                        {v2, #{<<"usage_usec">> := Us}} -> #{usage_usec => Us};
                        _ -> #{}
                    end,
            {ok, Usage#{nr_periods => maps:get(<<"nr_periods">>, KV, 0),
                        nr_throttled => maps:get(<<"nr_throttled">>, KV, 0),
                        throttled_usec => Throttled}};
        error -> {error, no_cgroup}
    end.

%% @doc "key 123" lines (cgroup cpu.stat) -> [{Key, Integer}]; other lines
%% are skipped.
-spec parse_kv_space(binary()) -> [{binary(), non_neg_integer()}].
parse_kv_space(Text) ->
    [{K, binary_to_integer(V)}
     || L <- string:lexemes(Text, "\n"), [K, V] <- [string:lexemes(L, " ")], is_digits(V)].

%%--------------------------------------------------------------------
%% Helpers
%%--------------------------------------------------------------------

%% Raw reads (prim_file), not through the file server: a process at
%% normal priority that waits behind a busy VM's run queue. Reading the
%% 157 proc/N/stat of this machine from a high-priority process took
%% 4.5 s through it and 1.8 s raw beside 8 busy processes (median of 21).
read(File) ->
    case prim_file:read_file(File) of
        {ok, B} -> {ok, B};
        {error, _} -> error
    end.

list_dir(Dir) ->
    prim_file:list_dir(Dir).

is_digits(<<>>) -> false;
is_digits(B) -> lists:all(fun(C) -> C >= $0 andalso C =< $9 end, binary_to_list(B)).

num(B) ->
    try binary_to_float(B)
    catch error:badarg -> binary_to_integer(B)
    end.
