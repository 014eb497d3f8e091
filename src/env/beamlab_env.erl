%%% @doc The environment report: everything about the VM, the OS and the
%%% hardware that can explain a benchmark number, as one JSON-safe map.
%%%
%%% VM facts come from `erlang:system_info/1' of the running VM; OS and
%%% hardware facts are read from `/proc' and `/sys' below a root directory
%%% (option `root', default "/") so tests can point it at a fake tree. Missing
%%% files never fail the report: the field becomes `<<"unknown">>' (or the
%%% section says `available => false') and a line is added to `notes'.
%%%
%%% The OS readers used while sampling (cgroup cpu.stat, /proc/stat CPU
%%% times, this process's CPU time) are exported for the telemetry module.
-module(beamlab_env).

-export([report/0, report/1, format_text/1,
         cgroup_cpu_stat/1, cgroup_locate/1, cgroup_cpu_stat_at/1, cpu_times/1, process_cpu_ticks/1, loadavg/1,
         parse_cpulist/1, parse_meminfo/1, parse_kv/1]).

-type report() :: #{atom() => term()}.
-export_type([report/0]).

-define(UNKNOWN, <<"unknown">>).
%% USER_HZ is part of the Linux /proc ABI and 100 on every architecture
%% Linux runs beamlab on; /proc/*/stat times are in these ticks.
-define(USER_HZ, 100).

%%--------------------------------------------------------------------
%% Report
%%--------------------------------------------------------------------

%% @doc The report of this VM on the real machine (root "/").
-spec report() -> report().
report() ->
    report(#{}).

%% @doc The report; `#{root => Dir}' reads /proc and /sys below Dir.
-spec report(#{root => file:filename()}) -> report().
report(Opts) ->
    Root = maps:get(root, Opts, "/"),
    put(beamlab_env_notes, []),
    try
        Report = #{otp => otp(),
                   schedulers => schedulers(),
                   vm_args => vm_args(),
                   cpu => cpu(Root),
                   numa => numa(Root),
                   cgroup => cgroup(Root),
                   os => os_info(Root),
                   memory => memory(Root),
                   load => load(Root),
                   collected_at => rfc3339()},
        Report#{notes => lists:reverse(get(beamlab_env_notes))}
    after
        erase(beamlab_env_notes)
    end.

note(Fmt, Args) ->
    put(beamlab_env_notes, [bin(io_lib:format(Fmt, Args)) | get(beamlab_env_notes)]).

otp() ->
    BuildType = sysinfo(build_type, opt),
    DynTrace = sysinfo(dynamic_trace, none),
    Warnings = [<<"debug build: numbers are not representative">> || BuildType =:= debug]
        ++ [bin(io_lib:format("~p build: instrumented, numbers are not representative", [BuildType]))
            || lists:member(BuildType, [asan, valgrind, gcov, lcnt, frmptr])]
        ++ [bin(io_lib:format("dynamic tracing (~p) compiled in: small probe overhead", [DynTrace]))
            || DynTrace =/= none],
    #{release => bin(erlang:system_info(otp_release)),
      otp_version => otp_version(),
      erts => bin(erlang:system_info(version)),
      system_version => bin(string:trim(erlang:system_info(system_version))),
      emu_flavor => bin(sysinfo(emu_flavor, emu)),
      emu_type => bin(sysinfo(emu_type, opt)),
      build_type => bin(BuildType),
      dynamic_trace => bin(DynTrace),
      wordsize_bits => 8 * erlang:system_info({wordsize, external}),
      kernel_poll => sysinfo(kernel_poll, false),
      build_warnings => Warnings}.

%% The full version (e.g. "25.3.2") is only in the OTP_VERSION file.
otp_version() ->
    File = filename:join([code:root_dir(), "releases",
                          erlang:system_info(otp_release), "OTP_VERSION"]),
    case file:read_file(File) of
        {ok, V} -> string:trim(V);
        {error, _} -> bin(erlang:system_info(otp_release))
    end.

schedulers() ->
    Bindings = [bin_or_int(B) || B <- tuple_to_list(erlang:system_info(scheduler_bindings))],
    EmuArgs = emu_flags(),
    #{total => erlang:system_info(schedulers),
      online => erlang:system_info(schedulers_online),
      dirty_cpu => sysinfo(dirty_cpu_schedulers, 0),
      dirty_cpu_online => sysinfo(dirty_cpu_schedulers_online, 0),
      dirty_io => sysinfo(dirty_io_schedulers, 0),
      bind_type => bin(erlang:system_info(scheduler_bind_type)),
      bindings => Bindings,
      busy_wait => busy_wait(EmuArgs),
      compaction_of_load => flag_value(EmuArgs, ["scl"]),
      utilization_balancing => flag_value(EmuArgs, ["sub"])}.

bin_or_int(unbound) -> <<"unbound">>;
bin_or_int(N) -> N.

%% Busy-wait thresholds cannot be read back from a running VM; what the VM
%% was started with is in its emulator arguments, otherwise it is the default.
busy_wait(EmuArgs) ->
    #{normal => flag_value(EmuArgs, ["sbwt"]),
      dirty_cpu => flag_value(EmuArgs, ["sbwtdcpu"]),
      dirty_io => flag_value(EmuArgs, ["sbwtdio"]),
      wake_threshold => flag_value(EmuArgs, ["swt"]),
      source => <<"emulator arguments; \"default\" means not set on the command line">>}.

flag_value(EmuArgs, Names) ->
    case [V || {F, V} <- EmuArgs, lists:member(F, Names)] of
        [] -> <<"default">>;
        Vs -> bin(lists:last(Vs))
    end.

%% Emulator flags as {Flag, Value}: "-sbwt none" -> {"sbwt", "none"}.
emu_flags() ->
    emu_flags(emu_args()).

emu_flags(["--" | _]) -> [];
emu_flags(["-" ++ Flag, Value | Rest]) when hd(Value) =/= $- -> [{Flag, Value} | emu_flags(Rest)];
emu_flags(["-" ++ Flag | Rest]) -> [{Flag, ""} | emu_flags(Rest)];
emu_flags([_ | Rest]) -> emu_flags(Rest);
emu_flags([]) -> [].

emu_args() ->
    case catch erlang:system_info(emu_args) of
        [_Beam | Args] -> Args;
        _ -> []
    end.

vm_args() ->
    Args = [#{flag => bin(F), values => [bin(V) || V <- Vs]} || {F, Vs} <- init:get_arguments()],
    EmuArgs = case catch erlang:system_info(emu_args) of
                  L when is_list(L) -> [bin(A) || A <- L];
                  _ -> note("emulator arguments not exposed by this VM", []), []
              end,
    #{arguments => Args, emu_args => EmuArgs,
      plain_arguments => [bin(A) || A <- init:get_plain_arguments()]}.

%%--------------------------------------------------------------------
%% CPU, NUMA
%%--------------------------------------------------------------------

cpu(Root) ->
    Sys = fun(P) -> filename:join([Root, "sys/devices/system/cpu", P]) end,
    Online = case read(Sys("online")) of
                 {ok, S} -> parse_cpulist(S);
                 error -> []
             end,
    Topo = [{Cpu, topo(Sys, Cpu)} || Cpu <- Online],
    Known = [T || {_, T} <- Topo, T =/= unknown],
    {Sockets, Cores} = case Known of
                           [] when Online =/= [] ->
                               note("no CPU topology under ~s", [Sys("")]),
                               {?UNKNOWN, ?UNKNOWN};
                           [] -> {?UNKNOWN, ?UNKNOWN};
                           _ -> {length(lists:usort([P || {P, _} <- Known])),
                                 length(lists:usort(Known))}
                       end,
    Threads = case Online of
                  [] -> note("~s missing: online CPUs unknown", [Sys("online")]), ?UNKNOWN;
                  _ -> length(Online)
              end,
    ThreadsPerCore = case is_integer(Threads) andalso is_integer(Cores) andalso Cores > 0 of
                         true -> Threads div Cores;
                         false -> ?UNKNOWN
                     end,
    #{model => cpu_model(Root),
      logical_processors => sysinfo_int(logical_processors),
      logical_processors_online => sysinfo_int(logical_processors_online),
      logical_processors_available => sysinfo_int(logical_processors_available),
      online_cpus => Online,
      sockets => Sockets, cores => Cores, threads => Threads,
      threads_per_core => ThreadsPerCore,
      erlang_cpu_topology => topology(erlang:system_info(cpu_topology))}.

topo(Sys, Cpu) ->
    Dir = "cpu" ++ integer_to_list(Cpu) ++ "/topology/",
    case {read_int(Sys(Dir ++ "physical_package_id")), read_int(Sys(Dir ++ "core_id"))} of
        {{ok, P}, {ok, C}} -> {P, C};
        _ -> unknown
    end.

cpu_model(Root) ->
    File = filename:join(Root, "proc/cpuinfo"),
    case read(File) of
        {ok, Text} ->
            KV = parse_kv(Text),
            case [V || K <- [<<"model name">>, <<"cpu model">>, <<"Model">>, <<"Hardware">>, <<"cpu">>],
                       {K1, V} <- KV, K1 =:= K] of
                [M | _] -> M;
                [] -> note("no model name in ~s", [File]), ?UNKNOWN
            end;
        error ->
            note("~s missing: CPU model unknown", [File]), ?UNKNOWN
    end.

%% erlang:system_info(cpu_topology) as nested maps: {node, [...]} becomes
%% #{type => <<"node">>, children => [...]}, {logical, N} #{logical => N}.
topology(undefined) -> ?UNKNOWN;
topology(L) when is_list(L) -> [topology(E) || E <- L];
topology({logical, N}) -> #{logical => N};
topology({Type, {logical, N}}) -> #{type => bin(Type), logical => N};
topology({Type, Children}) when is_list(Children) ->
    #{type => bin(Type), children => topology(Children)};
topology(Other) -> bin(io_lib:format("~p", [Other])).

numa(Root) ->
    Dir = filename:join(Root, "sys/devices/system/node"),
    case file:list_dir(Dir) of
        {ok, Names} ->
            Ids = lists:sort([list_to_integer(I) || "node" ++ I <- Names, is_digits(I)]),
            Nodes = [numa_node(Dir, Id) || Id <- Ids],
            #{available => Ids =/= [], count => length(Ids), nodes => Nodes};
        {error, _} ->
            note("~s missing: no NUMA information", [Dir]),
            #{available => false, count => ?UNKNOWN, nodes => []}
    end.

numa_node(Dir, Id) ->
    NDir = filename:join(Dir, "node" ++ integer_to_list(Id)),
    Cpus = case read(filename:join(NDir, "cpulist")) of
               {ok, S} -> parse_cpulist(S);
               error -> []
           end,
    Dist = case read(filename:join(NDir, "distance")) of
               {ok, D} -> [binary_to_integer(X) || X <- string:lexemes(D, " \n")];
               error -> []
           end,
    Mem = case read(filename:join(NDir, "meminfo")) of
              {ok, M} ->
                  %% "Node 0 MemTotal:  123 kB": drop the "Node N " prefix.
                  Lines = [string:trim(L) || L <- string:split(M, "\n", all)],
                  Strip = [case string:split(L, " ", all) of
                               [<<"Node">>, _ | Rest] -> lists:join(" ", Rest);
                               _ -> L
                           end || L <- Lines],
                  maps:get(total, parse_meminfo(iolist_to_binary(lists:join("\n", Strip))), ?UNKNOWN);
              error -> ?UNKNOWN
          end,
    #{id => Id, cpus => Cpus, distances => Dist, memory_total => Mem}.

is_digits(S) -> S =/= [] andalso lists:all(fun(C) -> C >= $0 andalso C =< $9 end, S).

%%--------------------------------------------------------------------
%% cgroup
%%--------------------------------------------------------------------

cgroup(Root) ->
    case cgroup_paths(Root) of
        {v2, Dir} ->
            Max = read(filename:join(Dir, "cpu.max")),
            {Quota, Period} = case Max of
                                  {ok, M} -> parse_cpu_max(M);
                                  error -> {?UNKNOWN, ?UNKNOWN}
                              end,
            cgroup_map(2, Dir, Quota, Period, Root);
        {v1, Dir} ->
            Quota = case read_int(filename:join(Dir, "cpu.cfs_quota_us")) of
                        {ok, Q} when Q < 0 -> unlimited;
                        {ok, Q} -> Q;
                        error -> ?UNKNOWN
                    end,
            Period = case read_int(filename:join(Dir, "cpu.cfs_period_us")) of
                         {ok, P} -> P;
                         error -> ?UNKNOWN
                     end,
            cgroup_map(1, Dir, Quota, Period, Root);
        none ->
            note("no cgroup CPU controller found under ~s", [filename:join(Root, "sys/fs/cgroup")]),
            #{available => false, version => ?UNKNOWN}
    end.

cgroup_map(Version, Dir, Quota, Period, Root) ->
    Cores = case {Quota, Period} of
                {unlimited, _} -> <<"unlimited">>;
                {Q, P} when is_integer(Q), is_integer(P), P > 0 -> Q / P;
                _ -> ?UNKNOWN
            end,
    Stat = case cgroup_cpu_stat(Root) of
               {ok, S} -> S;
               {error, _} -> #{}
           end,
    #{available => true, version => Version, path => bin(Dir),
      quota_us => json_quota(Quota), period_us => Period, quota_cores => Cores,
      stat => Stat}.

json_quota(unlimited) -> <<"max">>;
json_quota(Q) -> Q.

%% "max 100000" or "200000 100000".
parse_cpu_max(Text) ->
    case string:lexemes(Text, " \n") of
        [<<"max">>, P] -> {unlimited, binary_to_integer(P)};
        [Q, P] -> {binary_to_integer(Q), binary_to_integer(P)};
        _ -> {?UNKNOWN, ?UNKNOWN}
    end.

%% @doc The throttling counters of this process's cgroup CPU controller:
%% `nr_periods', `nr_throttled' and `throttled_usec' (v1's nanoseconds are
%% converted), plus `usage_usec' where the controller offers it.
-spec cgroup_cpu_stat(file:filename()) ->
          {ok, #{atom() => non_neg_integer()}} | {error, no_cgroup}.
cgroup_cpu_stat(Root) ->
    cgroup_cpu_stat_at(cgroup_locate(Root)).

%% @doc Where this process's cgroup CPU controller is below `Root', for
%% repeated reads with {@link cgroup_cpu_stat_at/1}.
-spec cgroup_locate(file:filename()) -> {v1 | v2, file:filename()} | none.
cgroup_locate(Root) ->
    cgroup_paths(Root).

%% @doc As {@link cgroup_cpu_stat/1} for a located controller.
-spec cgroup_cpu_stat_at({v1 | v2, file:filename()} | none) ->
          {ok, #{atom() => non_neg_integer()}} | {error, no_cgroup}.
cgroup_cpu_stat_at(Loc) ->
    case Loc of
        none -> {error, no_cgroup};
        {Version, Dir} ->
            case read(filename:join(Dir, "cpu.stat")) of
                {ok, Text} ->
                    KV = maps:from_list([{K, V} || {K, V} <- parse_kv_space(Text)]),
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
            end
    end.

%% Where this process's CPU controller lives. /proc/self/cgroup names the
%% path; inside a container namespace the controller is at the mount root.
cgroup_paths(Root) ->
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

%%--------------------------------------------------------------------
%% OS, memory, load
%%--------------------------------------------------------------------

os_info(Root) ->
    {Family, Name} = os:type(),
    Version = case os:version() of
                  {Ma, Mi, Pa} -> bin(io_lib:format("~b.~b.~b", [Ma, Mi, Pa]));
                  V -> bin(V)
              end,
    ProcVersion = case read(filename:join(Root, "proc/version")) of
                      {ok, PV} -> string:trim(PV);
                      error -> note("~s missing: kernel build unknown", [filename:join(Root, "proc/version")]),
                               ?UNKNOWN
                  end,
    {ok, H} = inet:gethostname(),
    Host = bin(H),
    #{family => bin(Family), name => bin(Name), kernel_version => Version,
      kernel => ProcVersion, hostname => Host,
      architecture => bin(erlang:system_info(system_architecture))}.

memory(Root) ->
    File = filename:join(Root, "proc/meminfo"),
    System = case read(File) of
                 {ok, T} -> parse_meminfo(T);
                 error -> note("~s missing: system memory unknown", [File]), #{}
             end,
    #{system => System, erlang => maps:from_list(erlang:memory())}.

load(Root) ->
    case loadavg(Root) of
        {ok, L} -> L;
        {error, _} ->
            note("~s missing: load average unknown", [filename:join(Root, "proc/loadavg")]),
            #{load1 => ?UNKNOWN, load5 => ?UNKNOWN, load15 => ?UNKNOWN}
    end.

%% @doc The 1, 5 and 15 minute load averages from proc/loadavg.
-spec loadavg(file:filename()) -> {ok, #{atom() => number()}} | {error, enoent}.
loadavg(Root) ->
    case read(filename:join(Root, "proc/loadavg")) of
        {ok, T} ->
            case string:lexemes(T, " \n") of
                [A, B, C | _] -> {ok, #{load1 => num(A), load5 => num(B), load15 => num(C)}};
                _ -> {error, enoent}
            end;
        error -> {error, enoent}
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
-spec process_cpu_ticks(file:filename()) -> {ok, non_neg_integer()} | {error, enoent}.
process_cpu_ticks(Root) ->
    case read(filename:join(Root, "proc/self/stat")) of
        {ok, T} ->
            %% The command name (field 2) may contain spaces: skip past ')'.
            [_, After] = string:split(T, ")", trailing),
            Fields = string:lexemes(After, " "),
            %% After ')' come fields 3.., so utime (14) and stime (15) are 12th and 13th.
            UTime = binary_to_integer(lists:nth(12, Fields)),
            STime = binary_to_integer(lists:nth(13, Fields)),
            {ok, (UTime + STime) * (1000000 div ?USER_HZ)};
        error -> {error, enoent}
    end.

%%--------------------------------------------------------------------
%% Parsers
%%--------------------------------------------------------------------

%% @doc "0-3,8,10-11" -> [0,1,2,3,8,10,11]; empty or garbage -> [].
-spec parse_cpulist(binary() | string()) -> [non_neg_integer()].
parse_cpulist(Text) ->
    try
        lists:append([case string:split(R, "-") of
                          [A, B] -> lists:seq(binary_to_integer(A), binary_to_integer(B));
                          [A] -> [binary_to_integer(A)]
                      end || R <- string:lexemes(bin(Text), ", \n")])
    catch error:badarg -> []
    end.

%% @doc proc/meminfo content -> byte counts for the fields that matter.
-spec parse_meminfo(binary()) -> #{atom() => non_neg_integer()}.
parse_meminfo(Text) ->
    Keys = [{<<"MemTotal">>, total}, {<<"MemFree">>, free},
            {<<"MemAvailable">>, available}, {<<"Cached">>, cached},
            {<<"SwapTotal">>, swap_total}, {<<"SwapFree">>, swap_free}],
    KV = parse_kv(Text),
    maps:from_list([{Name, kb_to_bytes(V)} || {K, Name} <- Keys, {K1, V} <- KV, K1 =:= K]).

kb_to_bytes(V) ->
    case string:lexemes(V, " ") of
        [N, <<"kB">>] -> binary_to_integer(N) * 1024;
        [N] -> binary_to_integer(N);
        _ -> 0
    end.

%% @doc "Key : value" lines (cpuinfo, meminfo) -> [{Key, Value}] in order,
%% both trimmed binaries. Lines without a colon are skipped.
-spec parse_kv(binary()) -> [{binary(), binary()}].
parse_kv(Text) ->
    [{string:trim(K), string:trim(V)}
     || L <- string:split(Text, "\n", all), [K, V] <- [string:split(L, ":")]].

%% "key 123" lines (cpu.stat) -> [{Key, Integer}].
parse_kv_space(Text) ->
    [{K, binary_to_integer(V)}
     || L <- string:lexemes(Text, "\n"), [K, V] <- [string:lexemes(L, " ")], is_digits(binary_to_list(V))].

%%--------------------------------------------------------------------
%% Text
%%--------------------------------------------------------------------

%% @doc A human-readable rendering of a report, one "key: value" per line.
-spec format_text(report()) -> iolist().
format_text(R) ->
    #{otp := O, schedulers := S, cpu := C, numa := N, cgroup := G, os := OS,
      memory := M, load := L} = R,
    BW = maps:get(busy_wait, S),
    Lines =
        [section("VM"),
         kv("OTP", [maps:get(otp_version, O), " (erts ", maps:get(erts, O), ")"]),
         kv("emulator", ["flavor ", maps:get(emu_flavor, O), ", type ", maps:get(emu_type, O),
                         ", build ", maps:get(build_type, O), ", dynamic trace ", maps:get(dynamic_trace, O)]),
         [kv("WARNING", W) || W <- maps:get(build_warnings, O)],
         kv("schedulers", io_lib:format("~b/~b online, dirty CPU ~b/~b online, dirty IO ~b",
                                        [maps:get(online, S), maps:get(total, S),
                                         maps:get(dirty_cpu_online, S), maps:get(dirty_cpu, S),
                                         maps:get(dirty_io, S)])),
         kv("binding", [maps:get(bind_type, S),
                        [[" (logical CPU per scheduler: ", lists:join(" ", [str(B) || B <- Bs]), ")"]
                         || Bs <- [maps:get(bindings, S)], lists:any(fun is_integer/1, Bs)]]),
         kv("busy wait", io_lib:format("sbwt ~s, sbwtdcpu ~s, sbwtdio ~s, swt ~s",
                                       [maps:get(normal, BW), maps:get(dirty_cpu, BW),
                                        maps:get(dirty_io, BW), maps:get(wake_threshold, BW)])),
         kv("emulator flags", case emu_flag_args(maps:get(emu_args, maps:get(vm_args, R))) of
                                  [] -> "(none)";
                                  Flags -> lists:join(" ", Flags)
                              end),
         section("Hardware"),
         kv("CPU model", str(maps:get(model, C))),
         kv("logical CPUs", io_lib:format("~s configured, ~s online, ~s available",
                                          [str(maps:get(logical_processors, C)),
                                           str(maps:get(logical_processors_online, C)),
                                           str(maps:get(logical_processors_available, C))])),
         kv("topology", io_lib:format("~s socket(s), ~s core(s), ~s thread(s)",
                                      [str(maps:get(sockets, C)), str(maps:get(cores, C)),
                                       str(maps:get(threads, C))])),
         kv("NUMA", case N of
                        #{available := true, nodes := Nodes} ->
                            lists:join("; ", [io_lib:format("node ~b: cpus ~s, distances ~s",
                                                            [Id, cpus_text(Cs),
                                                             lists:join(" ", [integer_to_list(D) || D <- Ds])])
                                              || #{id := Id, cpus := Cs, distances := Ds} <- Nodes]);
                        _ -> "not available"
                    end),
         kv("cgroup CPU", case G of
                              #{available := true} ->
                                  Stat = maps:get(stat, G),
                                  io_lib:format("v~b quota ~s (~s cores) period ~s us; throttled ~s of ~s periods, ~s us",
                                                [maps:get(version, G), str(maps:get(quota_us, G)),
                                                 str(maps:get(quota_cores, G)), str(maps:get(period_us, G)),
                                                 str(maps:get(nr_throttled, Stat, ?UNKNOWN)),
                                                 str(maps:get(nr_periods, Stat, ?UNKNOWN)),
                                                 str(maps:get(throttled_usec, Stat, ?UNKNOWN))]);
                              _ -> "not available"
                          end),
         section("OS"),
         kv("kernel", [maps:get(family, OS), "/", maps:get(name, OS), " ", maps:get(kernel_version, OS)]),
         kv("build", str(maps:get(kernel, OS))),
         kv("hostname", maps:get(hostname, OS)),
         kv("memory", io_lib:format("~s total, ~s available; VM uses ~s",
                                    [mb(maps:get(total, maps:get(system, M), ?UNKNOWN)),
                                     mb(maps:get(available, maps:get(system, M), ?UNKNOWN)),
                                     mb(maps:get(total, maps:get(erlang, M)))])),
         kv("load average", io_lib:format("~s ~s ~s", [str(maps:get(load1, L)), str(maps:get(load5, L)),
                                                         str(maps:get(load15, L))])),
         [[section("Notes"), [kv("note", Note) || Note <- Notes]]
          || Notes <- [maps:get(notes, R, [])], Notes =/= []]],
    Lines.

section(Name) -> [Name, "\n"].

%% The emulator's own flags: between the beam executable and the first "--".
emu_flag_args([_Beam | Args]) -> lists:takewhile(fun(A) -> A =/= <<"--">> end, Args);
emu_flag_args([]) -> [].
kv(K, V) -> io_lib:format("  ~-15s ~ts~n", [K, iolist_to_binary(V)]).

mb(B) when is_integer(B) -> io_lib:format("~b MiB", [B div (1024 * 1024)]);
mb(Other) -> str(Other).

cpus_text(Cs) -> lists:join(",", [integer_to_list(C) || C <- Cs]).

str(B) when is_binary(B) -> B;
str(I) when is_integer(I) -> integer_to_list(I);
str(F) when is_float(F) -> float_to_list(F, [{decimals, 2}, compact]);
str(A) when is_atom(A) -> atom_to_list(A);
str(L) -> io_lib:format("~p", [L]).

%%--------------------------------------------------------------------
%% Helpers
%%--------------------------------------------------------------------

sysinfo(Item, Default) ->
    try erlang:system_info(Item)
    catch error:badarg -> Default
    end.

sysinfo_int(Item) ->
    case sysinfo(Item, unknown) of
        N when is_integer(N) -> N;
        _ -> ?UNKNOWN
    end.

read(File) ->
    case file:read_file(File) of
        {ok, B} -> {ok, B};
        {error, _} -> error
    end.

read_int(File) ->
    case read(File) of
        {ok, B} ->
            try {ok, binary_to_integer(string:trim(B))}
            catch error:badarg -> error
            end;
        error -> error
    end.

num(B) ->
    try binary_to_float(B)
    catch error:badarg -> binary_to_integer(B)
    end.

bin(B) when is_binary(B) -> B;
bin(A) when is_atom(A) -> atom_to_binary(A);
bin(L) -> unicode:characters_to_binary(L).

rfc3339() ->
    bin(calendar:system_time_to_rfc3339(erlang:system_time(second), [{offset, "Z"}])).
