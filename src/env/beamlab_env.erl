%%% @doc The environment report: everything about the VM, the OS and the
%%% hardware that can explain a benchmark number, as one JSON-safe map.
%%%
%%% VM facts come from `erlang:system_info/1' of the running VM; OS and
%%% hardware facts are read from `/proc' and `/sys' below a root directory
%%% (option `root', default "/") so tests can point it at a fake tree. Missing
%%% files never fail the report: the field becomes `<<"unknown">>' (or the
%%% section says `available => false') and a line is added to `notes'.
%%%
%%% The readers shared with live sampling (load average, cgroup location
%%% and cpu.stat) are in `beamlab_runtime_probe'. The report of the live
%%% machine also holds `git' when the current directory is in a git work
%%% tree (`beamlab_env_git': commit, its date, branch, dirty), so saved
%%% runs can be ordered by the code they measured.
-module(beamlab_env).

-export([report/0, report/1, parse_cpulist/1, parse_meminfo/1, parse_kv/1]).

-type report() :: #{atom() => term()}.
-export_type([report/0]).

-define(UNKNOWN, <<"unknown">>).
%% What one file of /proc or /sys may hold (cpuinfo of 192 CPUs: 300 KiB).
-define(MAX_READ, 4 * 1024 * 1024).
%% CPU numbers accepted in a CPU list.
-define(MAX_CPUS, 65536).

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
    %% Each section that can miss a file returns {Value, Notes}; the notes
    %% are collected here in section order.
    Sections = [{vm_args, fun vm_args/1}, {cpu, fun cpu/1}, {numa, fun numa/1},
                {cgroup, fun cgroup/1}, {os, fun os_info/1}, {memory, fun memory/1},
                {load, fun load/1}],
    {Noted, Notes} = lists:foldl(fun({Key, F}, {Acc, NotesAcc}) ->
                                         {V, N} = section(Key, F, Root),
                                         {Acc#{Key => V}, NotesAcc ++ N}
                                 end, {#{}, []}, Sections),
    Report = Noted#{otp => otp(),
                    schedulers => schedulers(),
                    collected_at => beamlab_runtime_clock:rfc3339(),
                    notes => Notes},
    case Root =:= "/" andalso file:get_cwd() of
        {ok, Cwd} ->
            case beamlab_env_git:work_tree(Cwd) of
                none -> Report;
                Git -> Report#{git => Git}
            end;
        _ -> Report
    end.

%% A file that exists but does not read as expected (a malformed /proc or
%% /sys file under --root) never fails the report: its section is marked
%% unavailable (read as if its files were missing) with a note.
section(Key, F, Root) ->
    try F(Root)
    catch Class:Reason ->
            Note = note("~s: unexpected content of a file under ~ts (~s); the section is left unknown",
                        [Key, Root, short_reason(Class, Reason)]),
            %% Read again as if the files were missing, for the section's
            %% usual shape (its own "missing" notes would name a fake path).
            try F(filename:join(Root, ".beamlab-malformed-input")) of
                {V, _MissingNotes} -> {V, [Note]}
            catch _:_ -> {#{available => false}, [Note]}
            end
    end.

short_reason(_, {badmatch, _}) -> "unexpected content";
short_reason(_, badarg) -> "unexpected content";
short_reason(_, Reason) when is_atom(Reason) -> atom_to_list(Reason);
short_reason(Class, _) -> atom_to_list(Class).

note(Fmt, Args) ->
    beamlab_format_units:to_binary(io_lib:format(Fmt, Args)).

otp() ->
    BuildType = sysinfo(build_type, opt),
    DynTrace = sysinfo(dynamic_trace, none),
    Warnings = [<<"debug build: numbers are not representative">> || BuildType =:= debug]
        ++ [beamlab_format_units:to_binary(io_lib:format("~p build: instrumented, numbers are not representative", [BuildType]))
            || lists:member(BuildType, [asan, valgrind, gcov, lcnt, frmptr])]
        ++ [beamlab_format_units:to_binary(io_lib:format("dynamic tracing (~p) compiled in: small probe overhead", [DynTrace]))
            || DynTrace =/= none],
    #{release => beamlab_format_units:to_binary(erlang:system_info(otp_release)),
      otp_version => otp_version(),
      erts => beamlab_format_units:to_binary(erlang:system_info(version)),
      system_version => beamlab_format_units:to_binary(string:trim(erlang:system_info(system_version))),
      emu_flavor => beamlab_format_units:to_binary(sysinfo(emu_flavor, emu)),
      %% the flavours this installation holds by name (erl -emu_flavor F)
      flavors_installed => flavors_installed(),
      emu_type => beamlab_format_units:to_binary(sysinfo(emu_type, opt)),
      build_type => beamlab_format_units:to_binary(BuildType),
      dynamic_trace => beamlab_format_units:to_binary(DynTrace),
      wordsize_bits => 8 * erlang:system_info({wordsize, external}),
      kernel_poll => sysinfo(kernel_poll, false),
      build_warnings => Warnings}.

flavors_installed() ->
    case beamlab_runtime_otp:install(filename:join([code:root_dir(), "bin", "erl"])) of
        {ok, #{flavors := Fs}} -> [atom_to_binary(F) || F <- Fs];
        {error, _} -> []
    end.

%% The full version (e.g. "25.3.2") is only in the OTP_VERSION file.
otp_version() ->
    File = filename:join([code:root_dir(), "releases",
                          erlang:system_info(otp_release), "OTP_VERSION"]),
    case file:read_file(File) of
        {ok, V} -> string:trim(V);
        {error, _} -> beamlab_format_units:to_binary(erlang:system_info(otp_release))
    end.

schedulers() ->
    Bindings = [bin_or_int(B) || B <- tuple_to_list(erlang:system_info(scheduler_bindings))],
    EmuArgs = emu_flags(),
    #{total => erlang:system_info(schedulers),
      online => erlang:system_info(schedulers_online),
      dirty_cpu => sysinfo(dirty_cpu_schedulers, 0),
      dirty_cpu_online => sysinfo(dirty_cpu_schedulers_online, 0),
      dirty_io => sysinfo(dirty_io_schedulers, 0),
      bind_type => beamlab_format_units:to_binary(erlang:system_info(scheduler_bind_type)),
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
        Vs -> beamlab_format_units:to_binary(lists:last(Vs))
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

vm_args(_Root) ->
    Args = [#{flag => arg(F), values => [arg(V) || V <- Vs]} || {F, Vs} <- init:get_arguments()],
    {EmuArgs, Notes} = case catch erlang:system_info(emu_args) of
                           L when is_list(L) -> {[arg(A) || A <- L], []};
                           _ -> {[], [note("emulator arguments not exposed by this VM", [])]}
                       end,
    {#{arguments => Args, emu_args => EmuArgs,
       plain_arguments => [arg(A) || A <- init:get_plain_arguments()]}, Notes}.

%% Emulator arguments are the command line's bytes, one list element a
%% byte: UTF-8 text ("café") is decoded as UTF-8, anything else as Latin-1,
%% so the report is valid UTF-8 either way.
%% A plain argument that is not UTF-8 comes as an `{error, Good, Rest}'
%% tuple (beamlab_input_text:decode/1 reads every form).
arg(A) when is_atom(A) -> atom_to_binary(A);
arg(T) when is_tuple(T) -> unicode:characters_to_binary(beamlab_input_text:decode(T));
arg(L) when is_list(L) ->
    case lists:all(fun(C) -> is_integer(C) andalso C >= 0 andalso C < 256 end, L) of
        true -> unicode:characters_to_binary(beamlab_input_text:decode(list_to_binary(L)));
        false -> text(L)
    end.

text(L) ->
    case unicode:characters_to_binary(L) of
        B when is_binary(B) -> B;
        _ -> iolist_to_binary(io_lib:format("~0tp", [L]))
    end.

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
    {Sockets, Cores, TopoNotes} =
        case Known of
            [] when Online =/= [] ->
                {?UNKNOWN, ?UNKNOWN, [note("no CPU topology under ~s", [Sys("")])]};
            [] -> {?UNKNOWN, ?UNKNOWN, []};
            _ -> {length(lists:usort([P || {P, _} <- Known])), length(lists:usort(Known)), []}
        end,
    {Threads, OnlineNotes} = case Online of
                                 [] -> {?UNKNOWN, [note("~s missing: online CPUs unknown", [Sys("online")])]};
                                 _ -> {length(Online), []}
                             end,
    {Model, ModelNotes} = cpu_model(Root),
    ThreadsPerCore = case is_integer(Threads) andalso is_integer(Cores) andalso Cores > 0 of
                         true -> Threads div Cores;
                         false -> ?UNKNOWN
                     end,
    {#{model => Model,
      logical_processors => sysinfo_int(logical_processors),
      logical_processors_online => sysinfo_int(logical_processors_online),
      logical_processors_available => sysinfo_int(logical_processors_available),
      online_cpus => Online,
      sockets => Sockets, cores => Cores, threads => Threads,
      threads_per_core => ThreadsPerCore,
      erlang_cpu_topology => topology(erlang:system_info(cpu_topology))},
     ModelNotes ++ TopoNotes ++ OnlineNotes}.

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
                [M | _] -> {M, []};
                [] -> {?UNKNOWN, [note("no model name in ~s", [File])]}
            end;
        error ->
            {?UNKNOWN, [note("~s missing: CPU model unknown", [File])]}
    end.

%% erlang:system_info(cpu_topology) as nested maps: {node, [...]} becomes
%% #{type => <<"node">>, children => [...]}, {logical, N} #{logical => N}.
topology(undefined) -> ?UNKNOWN;
topology(L) when is_list(L) -> [topology(E) || E <- L];
topology({logical, N}) -> #{logical => N};
topology({Type, {logical, N}}) -> #{type => beamlab_format_units:to_binary(Type), logical => N};
topology({Type, Children}) when is_list(Children) ->
    #{type => beamlab_format_units:to_binary(Type), children => topology(Children)};
topology(Other) -> beamlab_format_units:to_binary(io_lib:format("~p", [Other])).

numa(Root) ->
    Dir = filename:join(Root, "sys/devices/system/node"),
    case file:list_dir(Dir) of
        {ok, Names} ->
            Ids = lists:sort([list_to_integer(I) || "node" ++ I <- Names, is_digits(I)]),
            Nodes = [numa_node(Dir, Id) || Id <- Ids],
            {#{available => Ids =/= [], count => length(Ids), nodes => Nodes}, []};
        {error, _} ->
            {#{available => false, count => ?UNKNOWN, nodes => []},
             [note("~s missing: no NUMA information", [Dir])]}
    end.

numa_node(Dir, Id) ->
    NDir = filename:join(Dir, "node" ++ integer_to_list(Id)),
    Cpus = case read(filename:join(NDir, "cpulist")) of
               {ok, S} -> parse_cpulist(S);
               error -> []
           end,
    Dist = case read(filename:join(NDir, "distance")) of
               {ok, D} -> try [binary_to_integer(X) || X <- string:lexemes(D, " \n")]
                          catch error:badarg -> []
                          end;
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
    Loc = beamlab_runtime_probe:cgroup_locate(Root),
    case Loc of
        {v2, Dir} ->
            Max = read(filename:join(Dir, "cpu.max")),
            {Quota, Period} = case Max of
                                  {ok, M} -> parse_cpu_max(M);
                                  error -> {?UNKNOWN, ?UNKNOWN}
                              end,
            {cgroup_map(2, Dir, Quota, Period, Loc), []};
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
            {cgroup_map(1, Dir, Quota, Period, Loc), []};
        none ->
            {#{available => false, version => ?UNKNOWN},
             [note("no cgroup CPU controller found under ~s", [filename:join(Root, "sys/fs/cgroup")])]}
    end.

cgroup_map(Version, Dir, Quota, Period, Loc) ->
    Cores = case {Quota, Period} of
                {unlimited, _} -> <<"unlimited">>;
                {Q, P} when is_integer(Q), is_integer(P), P > 0 -> Q / P;
                _ -> ?UNKNOWN
            end,
    Stat = case beamlab_runtime_probe:cgroup_cpu_stat_at(Loc) of
               {ok, S} -> S;
               {error, _} -> #{}
           end,
    #{available => true, version => Version, path => beamlab_format_units:to_binary(Dir),
      quota_us => json_quota(Quota), period_us => Period, quota_cores => Cores,
      stat => Stat}.

json_quota(unlimited) -> <<"max">>;
json_quota(Q) -> Q.

%% "max 100000" or "200000 100000".
parse_cpu_max(Text) ->
    try
        case string:lexemes(Text, " \n") of
            [<<"max">>, P] -> {unlimited, binary_to_integer(P)};
            [Q, P] -> {binary_to_integer(Q), binary_to_integer(P)};
            _ -> {?UNKNOWN, ?UNKNOWN}
        end
    catch error:_ -> {?UNKNOWN, ?UNKNOWN}
    end.


%%--------------------------------------------------------------------
%% OS, memory, load
%%--------------------------------------------------------------------

os_info(Root) ->
    {Family, Name} = os:type(),
    Version = case os:version() of
                  {Ma, Mi, Pa} -> beamlab_format_units:to_binary(io_lib:format("~b.~b.~b", [Ma, Mi, Pa]));
                  V -> beamlab_format_units:to_binary(V)
              end,
    {ProcVersion, Notes} =
        case read(filename:join(Root, "proc/version")) of
            {ok, PV} -> {string:trim(PV), []};
            error -> {?UNKNOWN, [note("~s missing: kernel build unknown", [filename:join(Root, "proc/version")])]}
        end,
    {ok, H} = inet:gethostname(),  % never fails: falls back to "nohost"
    Host = beamlab_format_units:to_binary(H),
    {#{family => beamlab_format_units:to_binary(Family), name => beamlab_format_units:to_binary(Name), kernel_version => Version,
       kernel => ProcVersion, hostname => Host,
       architecture => beamlab_format_units:to_binary(erlang:system_info(system_architecture))}, Notes}.

memory(Root) ->
    File = filename:join(Root, "proc/meminfo"),
    {System, Notes} = case read(File) of
                          {ok, T} -> {parse_meminfo(T), []};
                          error -> {#{}, [note("~s missing: system memory unknown", [File])]}
                      end,
    {#{system => System, erlang => maps:from_list(erlang:memory())}, Notes}.

load(Root) ->
    case beamlab_runtime_probe:loadavg(Root) of
        {ok, L} -> {L, []};
        {error, _} ->
            {#{load1 => ?UNKNOWN, load5 => ?UNKNOWN, load15 => ?UNKNOWN},
             [note("~s missing: load average unknown", [filename:join(Root, "proc/loadavg")])]}
    end.

%%--------------------------------------------------------------------
%% Parsers
%%--------------------------------------------------------------------

%% @doc "0-3,8,10-11" -> [0,1,2,3,8,10,11]; empty or garbage -> []. A
%% crafted list cannot cost more than a real one: CPU numbers above
%% 65535 (Linux supports 8192) or more than 65536 CPUs in all are garbage.
-spec parse_cpulist(binary() | string()) -> [non_neg_integer()].
parse_cpulist(Text) ->
    try
        Cpus = lists:append([case string:split(R, "-") of
                                 [A, B] -> lists:seq(cpu_number(A), cpu_number(B));
                                 [A] -> [cpu_number(A)]
                             end || R <- string:lexemes(beamlab_format_units:to_binary(Text), ", \n")]),
        length(Cpus) =< ?MAX_CPUS orelse error(badarg),
        Cpus
    catch error:badarg -> []
    end.

cpu_number(B) when byte_size(B) =< 5 ->
    case binary_to_integer(B) of
        N when N >= 0, N < ?MAX_CPUS -> N;
        _ -> error(badarg)
    end;
cpu_number(_) ->
    error(badarg).

%% @doc proc/meminfo content -> byte counts for the fields that matter.
-spec parse_meminfo(binary()) -> #{atom() => non_neg_integer() | binary()}.
parse_meminfo(Text) ->
    Keys = [{<<"MemTotal">>, total}, {<<"MemFree">>, free},
            {<<"MemAvailable">>, available}, {<<"Cached">>, cached},
            {<<"SwapTotal">>, swap_total}, {<<"SwapFree">>, swap_free}],
    KV = parse_kv(Text),
    maps:from_list([{Name, kb_to_bytes(V)} || {K, Name} <- Keys, {K1, V} <- KV, K1 =:= K]).

kb_to_bytes(V) when byte_size(V) > 40 ->
    ?UNKNOWN;  % no real count is that long; converting it would be slow
kb_to_bytes(V) ->
    try
        case string:lexemes(V, " ") of
            [N, <<"kB">>] -> binary_to_integer(N) * 1024;
            [N] -> binary_to_integer(N);
            _ -> ?UNKNOWN
        end
    catch error:_ -> ?UNKNOWN
    end.

%% @doc "Key : value" lines (cpuinfo, meminfo) -> [{Key, Value}] in order,
%% both trimmed binaries. Lines without a colon are skipped.
-spec parse_kv(binary()) -> [{binary(), binary()}].
parse_kv(Text) ->
    [{string:trim(K), string:trim(V)}
     || L <- string:split(Text, "\n", all), [K, V] <- [string:split(L, ":")]].

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

%% File contents as UTF-8 (bytes that are not UTF-8 are read as Latin-1,
%% so the report stays valid UTF-8); bounded in size and time whatever the
%% file is (`env --root' may point at a crafted tree: a FIFO for cpuinfo,
%% /dev/zero): beamlab_runtime_file:read/2.
read(File) ->
    case beamlab_runtime_file:read(File, ?MAX_READ, #{streams => false}) of
        {ok, B} -> {ok, utf8(B)};
        {error, _} -> error
    end.

utf8(B) ->
    case unicode:characters_to_binary(B, utf8, utf8) of
        U when is_binary(U) -> U;
        _ -> unicode:characters_to_binary(B, latin1, utf8)
    end.

read_int(File) ->
    case read(File) of
        {ok, B} when byte_size(B) > 40 -> error;
        {ok, B} ->
            try {ok, binary_to_integer(string:trim(B))}
            catch error:badarg -> error
            end;
        error -> error
    end.

