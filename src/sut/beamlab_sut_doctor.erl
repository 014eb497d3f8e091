%%% @doc What `beamlab doctor --node' reads from a running node, over
%%% distribution, with calls of OTP functions only (`erlang', `file',
%%% `erl_eval'), so no beamlab code is loaded there: the VM's own view of
%%% its schedulers (online, configured, dirty, bind type), its CPUs
%%% (logical, online, available), release and flavour, the emulator flags
%%% it was started with (`+S', `+sbwt', ...), and the files of its host
%%% that say which CPUs it may use and its cgroup's CPU quota
%%% (/proc/self/status, /proc/self/cgroup and the quota files), read by
%%% the node itself, so they are the node's even on another host. The raw
%%% texts are returned; `beamlab_env_doctor_node' reads them.
-module(beamlab_sut_doctor).

-export([read/2, format_error/1]).

-export_type([raw/0, error_reason/0]).

-type raw() :: #{info := #{atom() => term()}, status := binary() | null, cgroup := binary() | null,
                 quota := #{file:filename() => binary()}}.
-type error_reason() :: {read, node(), term()}.

%% @doc Reads `Node''s facts in two calls, each bounded by `TimeoutMs':
%% the VM's figures with its status and cgroup files, then the quota
%% files its cgroup names.
-spec read(node(), pos_integer()) -> {ok, raw()} | {error, error_reason()}.
read(Node, TimeoutMs) ->
    Text = "Try = fun(I) -> try erlang:system_info(I) catch _:_ -> null end end,"
           "Read = fun(F) -> case file:read_file(F) of {ok, B} -> B; _ -> null end end,"
           "{os:type(), os:getpid(),"
           " [{I, Try(I)} || I <- [schedulers, schedulers_online, dirty_cpu_schedulers,"
           "                       dirty_cpu_schedulers_online, dirty_io_schedulers, scheduler_bind_type,"
           "                       logical_processors, logical_processors_online,"
           "                       logical_processors_available, otp_release, version, emu_flavor,"
           "                       emu_type, emu_args]],"
           " Read(\"/proc/self/status\"), Read(\"/proc/self/cgroup\")}.",
    {ok, Exprs} = beamlab_runtime_expr:parse(Text),
    try
        {value, {OsType, OsPid, Info, Status, Cgroup}, _} =
            erpc:call(Node, erl_eval, exprs, [Exprs, []], TimeoutMs),
        Paths = quota_files(Cgroup),
        Quota = case Paths of
                    [] -> #{};
                    _ ->
                        %% (an external fun of an OTP module, which the node has)
                        Reads = erpc:call(Node, lists, map, [fun file:read_file/1, Paths], TimeoutMs),
                        maps:from_list([{P, B} || {P, {ok, B}} <- lists:zip(Paths, Reads)])
                end,
        {ok, #{info => maps:from_list([{os_type, OsType}, {os_pid, OsPid} | Info]),
               status => Status, cgroup => Cgroup, quota => Quota}}
    catch
        error:{erpc, R} -> {error, {read, Node, R}};
        error:{exception, R, _} -> {error, {read, Node, R}};
        error:{badmatch, R} -> {error, {read, Node, R}}
    end.

%% The files that may hold the cgroup's CPU quota, from the lines of
%% /proc/self/cgroup: v2's cpu.max under its path, v1's cpu controller's
%% quota and period (each also at the mount root, as inside a container).
quota_files(null) ->
    [];
quota_files(Text) ->
    Lines = [string:split(L, ":", all) || L <- string:lexemes(Text, "\n")],
    Base = "/sys/fs/cgroup",
    V2 = [filename:join([Base, rel(P), "cpu.max"]) || [<<"0">>, <<>>, P] <- Lines],
    V1 = [filename:join([Base, Ctl, R, F]) || [_, C, P] <- Lines, lists:member(<<"cpu">>, string:lexemes(C, ",")),
                                              R <- [rel(P), ""], Ctl <- ["cpu,cpuacct", "cpu"],
                                              F <- ["cpu.cfs_quota_us", "cpu.cfs_period_us"]],
    lists:usort(V2 ++ [filename:join(Base, "cpu.max") || V2 =/= []] ++ V1).

rel(P) -> string:trim(binary_to_list(P), leading, "/").

%% @doc One line for each error.
-spec format_error(error_reason()) -> iolist().
format_error(Reason) ->
    beamlab_format_reason:line(fun error_line/1, Reason).

error_line({read, Node, R}) ->
    io_lib:format("reading ~ts's facts failed: ~0tP", [Node, R, 8]);
error_line(Other) ->
    %% (a reason of no kind above: printed, never raised)
    beamlab_format_reason:term(Other).
