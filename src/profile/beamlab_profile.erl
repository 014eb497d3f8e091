%%% @doc Sampling profiles of a BEAM with Linux `perf' and the JIT's perf
%%% support: checks that perf can run here (installed, allowed by
%%% `kernel.perf_event_paranoid'), records call graphs (`perf record -g',
%%% frame pointers from the JIT's `+JPperf true') of a running VM by OS
%%% pid or of a command it starts with perf support, resolves the samples
%%% with `perf script' (the VM's `/tmp/perf-PID.map' names JIT code) and
%%% builds the profile with {@link beamlab_profile_stacks}.
%%%
%%% A target that exits mid-profile keeps what was recorded; an interrupt
%%% (`{beamlab_interrupt, _}' in the caller's mailbox) stops perf and keeps
%%% what was recorded too.
-module(beamlab_profile).

-export([check_perf/0, vm_flags/0, perf_support/1, max_frequency/0, record/2, format_error/1]).

-type target() :: {pid, pos_integer()}
                | {command, Exe :: file:filename(), Args :: [string()], Env :: [{string(), string()}]}.
-type opts() :: #{frequency := pos_integer(), duration := pos_integer() | infinity,
                  call_graph => fp | dwarf,
                  scratch => file:filename(),  % a private directory for perf's data
                  on_output => fun((binary()) -> term())}.
-type outcome() :: #{profile := beamlab_profile_stacks:profile(), os_pid := pos_integer(),
                     exit_status => integer(), target_exited := boolean(), interrupted := boolean(),
                     perf_support := boolean(), elapsed_ms := non_neg_integer()}.
-type error_reason() :: perf_missing | {perf_unusable, binary()} | {paranoid, integer()}
                      | {no_such_process, pos_integer()} | {not_a_beam, pos_integer(), binary()}
                      | {no_jit, string(), string()} | {interpreter, pos_integer()} | {perf_failed, binary()}
                      | {command_failed, integer(), binary()} | {target_gone, pos_integer()}.
-export_type([target/0, opts/0, outcome/0, error_reason/0]).

-define(POLL_MS, 200).

%% @doc Finds `perf' (on PATH, or `$BEAMLAB_PERF') and checks that this user may record: `{ok, Path}'.
-spec check_perf() -> {ok, file:filename()} | {error, error_reason()}.
check_perf() ->
    %% BEAMLAB_PERF names another perf binary (one not on PATH).
    Found = case os:getenv("BEAMLAB_PERF") of
                V when V =:= false; V =:= "" -> os:find_executable("perf");
                Path -> case filelib:is_regular(Path) of true -> Path; false -> false end
            end,
    case Found of
        false ->
            {error, perf_missing};
        Perf ->
            %% Debian's /usr/bin/perf is a wrapper that fails when no perf
            %% matches the running kernel.
            case run([Perf, "--version"]) of
                {0, _} -> check_paranoid(Perf);
                {_, Out} -> {error, {perf_unusable, first_line(Out)}}
            end
    end.

check_paranoid(Perf) ->
    Root = string:trim(os:cmd("id -u")) =:= "0",
    case file:read_file("/proc/sys/kernel/perf_event_paranoid") of
        {ok, B} ->
            Level = binary_to_integer(string:trim(B)),
            case Root orelse Level =< 1 of
                true -> {ok, Perf};
                false -> {error, {paranoid, Level}}
            end;
        {error, _} ->
            {ok, Perf}
    end.

%% @doc The emulator flags that give this OTP release's JIT perf support
%% (`+JPperf true': frame pointers and a perf map), or an error naming why
%% this VM has none (the interpreter, or an OTP release before the JIT).
-spec vm_flags() -> {ok, string()} | {error, error_reason()}.
vm_flags() ->
    Release = erlang:system_info(otp_release),
    Flavor = try atom_to_list(erlang:system_info(emu_flavor)) catch error:badarg -> "emu" end,
    case Flavor =:= "jit" andalso list_to_integer(Release) >= 24 of
        true -> {ok, "+JPperf true"};
        false -> {error, {no_jit, Release, Flavor}}
    end.

%% @doc Whether the VM with this OS pid writes a perf map (was started
%% with `+JPperf true' or `+JPperf map'): without one its Erlang frames are
%% anonymous JIT addresses.
-spec perf_support(pos_integer()) -> boolean().
perf_support(OsPid) ->
    filelib:is_regular(map_file(OsPid)).

map_file(OsPid) ->
    "/tmp/perf-" ++ integer_to_list(OsPid) ++ ".map".

%% @doc Records a profile of `Target' (see the module doc).
-spec record(target(), opts()) -> {ok, outcome()} | {error, error_reason()}.
record(Target, Opts) ->
    case check_perf() of
        {ok, Perf} -> record(Perf, Target, Opts);
        {error, _} = E -> E
    end.

record(Perf, {pid, OsPid}, Opts) ->
    case beam_process(OsPid) of
        ok -> with_data(Opts, fun(Data) -> record_pid(Perf, OsPid, Data, Opts) end);
        {error, _} = E -> E
    end;
record(Perf, {command, Exe, Args, Env}, Opts) ->
    case vm_flags() of
        {ok, Flags} ->
            Old = case os:getenv("ERL_FLAGS") of false -> ""; F -> F end,
            Env1 = [{"ERL_FLAGS", string:trim(Old ++ " " ++ Flags)} | Env],
            with_data(Opts, fun(Data) -> record_command(Perf, Exe, Args, Env1, Data, Opts) end);
        {error, _} = E ->
            E
    end.

%% perf starts the command, so every process and thread it creates is
%% recorded too (the fresh VMs of `matrix' and `run -i' included, which
%% inherit ERL_FLAGS and with it the JIT's perf support). perf exits with
%% the command's status. A duration or an interrupt stops the command as
%% Ctrl-C would (SIGTERM: beamlab prints and saves what it measured).
record_command(Perf, Exe, Args, Env, Data, #{frequency := Hz, duration := Duration} = Opts) ->
    Argv = ["record", "-q", "-F", integer_to_list(Hz) | call_graph(Opts)] ++ ["-o", Data, "--", Exe | Args],
    T0 = erlang:monotonic_time(millisecond),
    Port = open_port({spawn_executable, Perf}, [{args, Argv}, {env, Env}, binary, exit_status,
                                                use_stdio, stderr_to_stdout]),
    {os_pid, PerfPid} = erlang:port_info(Port, os_pid),
    Deadline = case Duration of
                   infinity -> infinity;
                   Ms -> T0 + Ms
               end,
    St = command_wait(#{port => Port, perf_pid => PerfPid, deadline => Deadline, vms => [],
                        on_output => maps:get(on_output, Opts, fun(_) -> ok end), tail => <<>>,
                        interrupted => false, stopped => false}),
    Elapsed = erlang:monotonic_time(millisecond) - T0,
    #{status := Status, vms := Vms, tail := Tail, interrupted := Int} = St,
    try
        case filelib:file_size(Data) > 0 of
            false -> {error, perf_error(Tail)};
            true ->
                case script(Perf, Data) of
                    {ok, Text} ->
                        Main = case Vms of [V | _] -> V; [] -> PerfPid end,
                        Support = perf_support(Main),
                        Profile = beamlab_profile_stacks:build(beamlab_profile_perf:parse(Text), #{}),
                        {ok, #{profile => Profile, os_pid => Main, target_exited => false,
                               interrupted => Int, perf_support => Support, elapsed_ms => Elapsed,
                               exit_status => Status}};
                    {error, _} = Er -> Er
                end
        end
    after
        _ = [begin
                 _ = file:delete(map_file(V)),
                 file:delete("/tmp/jit-" ++ integer_to_list(V) ++ ".dump")
             end || V <- Vms]
    end.

call_graph(Opts) ->
    %% fp: frame pointers (the JIT's with +JPperf true; C code without
    %% them loses its callers); dwarf: the stack copied and unwound with
    %% the emulator's unwind tables (C callers kept, up to the JIT code
    %% that called them; more data per sample).
    case maps:get(call_graph, Opts, fp) of
        fp -> ["-g"];
        dwarf -> ["--call-graph", "dwarf,16384"]
    end.

command_wait(#{port := Port, deadline := Deadline} = St) ->
    Timeout = case Deadline of
                  infinity -> ?POLL_MS;
                  _ -> max(0, min(?POLL_MS, Deadline - erlang:monotonic_time(millisecond)))
              end,
    receive
        {Port, {data, D}} ->
            (maps:get(on_output, St))(D),
            #{tail := T} = St,
            Tail = binary:part(<<T/binary, D/binary>>, max(0, byte_size(T) + byte_size(D) - 2000),
                               min(2000, byte_size(T) + byte_size(D))),
            command_wait(St#{tail := Tail});
        {Port, {exit_status, S}} ->
            St#{status => S, vms := descendants(St)};
        {beamlab_interrupt, _} ->
            command_wait(stop_command(St#{interrupted := true}))
    after Timeout ->
            St1 = St#{vms := descendants(St)},
            case Deadline =/= infinity andalso erlang:monotonic_time(millisecond) >= Deadline of
                true -> command_wait(stop_command(St1));
                false -> command_wait(St1)
            end
    end.

stop_command(#{stopped := true} = St) ->
    St;
stop_command(#{vms := Vms} = St) ->
    _ = [os:cmd("kill -TERM " ++ integer_to_list(V)) || V <- lists:sublist(Vms, 1)],
    St#{stopped := true, deadline := infinity}.

%% The processes under perf (the command's VM first, then the VMs it
%% started), remembered to remove their perf maps afterwards.
descendants(#{perf_pid := PerfPid, vms := Known}) ->
    Found = children_tree(PerfPid),
    Known ++ [P || P <- Found, not lists:member(P, Known)].

children_tree(Pid) ->
    Kids = lists:append([children(Pid, T) || T <- tasks(Pid)]),
    lists:append([[K | children_tree(K)] || K <- Kids]).

tasks(Pid) ->
    case file:list_dir("/proc/" ++ integer_to_list(Pid) ++ "/task") of
        {ok, Ts} -> Ts;
        {error, _} -> []
    end.

children(Pid, Task) ->
    case file:read_file("/proc/" ++ integer_to_list(Pid) ++ "/task/" ++ Task ++ "/children") of
        {ok, B} -> [binary_to_integer(X) || X <- binary:split(B, [<<" ">>, <<"\n">>], [global, trim_all])];
        {error, _} -> []
    end.

beam_process(OsPid) ->
    case file:read_file("/proc/" ++ integer_to_list(OsPid) ++ "/comm") of
        {ok, Comm0} ->
            Comm = string:trim(Comm0),
            %% The interpreter flavour's emulator is beam.emu.smp.
            Exe = case file:read_link("/proc/" ++ integer_to_list(OsPid) ++ "/exe") of
                      {ok, E} -> filename:basename(E);
                      {error, _} -> ""
                  end,
            case binary:match(Comm, <<"beam">>) of
                {0, _} when Exe =/= "" ->
                    case string:find(Exe, ".emu.") of
                        nomatch -> ok;
                        _ -> {error, {interpreter, OsPid}}
                    end;
                {0, _} -> ok;
                _ -> {error, {not_a_beam, OsPid, Comm}}
            end;
        {error, _} ->
            {error, {no_such_process, OsPid}}
    end.

%% perf's data lives in a private directory: the `scratch' one given
%% (the launcher's, which it removes however the VM ends, so a run killed
%% meanwhile leaves nothing behind), else a new one removed afterwards.
with_data(Opts, Fun) ->
    {Dir, Own} = case maps:find(scratch, Opts) of
                     {ok, D} -> {D, false};
                     error ->
                         case beamlab_runtime_file:private_dir("beamlab-perf") of
                             {ok, D} -> {D, true};
                             {error, R} -> error({private_dir, R})
                         end
                 end,
    Data = filename:join(Dir, "perf-" ++ integer_to_list(erlang:unique_integer([positive])) ++ ".data"),
    try Fun(Data)
    after
        _ = [file:delete(F) || F <- [Data, Data ++ ".err", Data ++ ".txt", Data ++ ".old"]],
        Own andalso file:del_dir_r(Dir)
    end.

%% @doc The highest sampling frequency perf may use here
%% (kernel.perf_event_max_sample_rate; 100000 when it cannot be read).
-spec max_frequency() -> pos_integer().
max_frequency() ->
    case file:read_file("/proc/sys/kernel/perf_event_max_sample_rate") of
        {ok, B} ->
            try binary_to_integer(string:trim(B)) of
                N when N > 0 -> N;
                _ -> 100000
            catch error:badarg -> 100000
            end;
        {error, _} -> 100000
    end.

record_pid(Perf, OsPid, Data, #{frequency := Hz, duration := Duration} = Opts) ->
    Err = Data ++ ".err",
    Argv = [Perf, "record", "-F", integer_to_list(Hz) | call_graph(Opts)] ++ ["-o", Data, "-p", integer_to_list(OsPid)],
    T0 = erlang:monotonic_time(millisecond),
    PerfPort = open_port({spawn_executable, "/bin/sh"},
                         [{args, ["-c", "exec \"$0\" \"$@\" 2>\"$BEAMLAB_PERF_ERR\" >/dev/null" | Argv]},
                          {env, [{"BEAMLAB_PERF_ERR", Err}]}, binary, exit_status]),
    {os_pid, PerfPid} = erlang:port_info(PerfPort, os_pid),
    Deadline = case Duration of
                   infinity -> infinity;
                   Ms -> T0 + Ms
               end,
    St = wait(#{perf => PerfPort, perf_pid => PerfPid, os_pid => OsPid, deadline => Deadline,
                perf_status => undefined, exited => false, interrupted => false, stopping => false}),
    Elapsed = erlang:monotonic_time(millisecond) - T0,
    #{perf_status := PerfStatus, exited := Exited, interrupted := Int} = St,
    PerfErr = case file:read_file(Err) of {ok, E} -> E; _ -> <<>> end,
    HaveData = filelib:file_size(Data) > 0,
    Gone = not filelib:is_dir("/proc/" ++ integer_to_list(OsPid)),
    case PerfStatus of
        S when S =/= 0, not HaveData, Gone -> {error, {target_gone, OsPid}};
        S when S =/= 0, not HaveData -> {error, perf_error(PerfErr)};
        _ ->
            case script(Perf, Data) of
                {ok, Text} ->
                    Profile = beamlab_profile_stacks:build(beamlab_profile_perf:parse(Text), #{}),
                    %% perf ends by itself when its target exits, possibly
                    %% before the poll above noticed: ask /proc as well.
                    {ok, #{profile => Profile, os_pid => OsPid, target_exited => Exited orelse Gone,
                           interrupted => Int, perf_support => perf_support(OsPid), elapsed_ms => Elapsed}};
                {error, _} = Er -> Er
            end
    end.

%% Waits for perf to end: the target exits (perf stops by itself), the
%% duration passes or an interrupt arrives (perf gets SIGINT and writes
%% what it has).
wait(#{perf_status := P} = St) when P =/= undefined ->
    St;
wait(#{perf := PerfPort, os_pid := OsPid, deadline := Deadline} = St) ->
    Timeout = case Deadline of
                  infinity -> ?POLL_MS;
                  _ -> max(0, min(?POLL_MS, Deadline - erlang:monotonic_time(millisecond)))
              end,
    receive
        {PerfPort, {exit_status, S}} -> wait(St#{perf_status := S});
        {PerfPort, {data, _}} -> wait(St);
        {beamlab_interrupt, _} -> wait(stop_perf(St#{interrupted := true}))
    after Timeout ->
            Now = erlang:monotonic_time(millisecond),
            Gone = not filelib:is_dir("/proc/" ++ integer_to_list(OsPid)),
            if
                Gone -> wait(stop_perf(St#{exited := true}));
                Deadline =/= infinity, Now >= Deadline -> wait(stop_perf(St));
                true -> wait(St)
            end
    end.

stop_perf(#{stopping := true} = St) ->
    St;
stop_perf(#{perf_pid := PerfPid} = St) ->
    _ = os:cmd("kill -INT " ++ integer_to_list(PerfPid)),
    St#{stopping := true, deadline := infinity}.

script(Perf, Data) ->
    Txt = Data ++ ".txt",
    Err = Data ++ ".err",
    Cmd = [Perf, "script", "-F", beamlab_profile_perf:script_fields(), "-i", Data],
    case run(["/bin/sh", "-c", "exec \"$0\" \"$@\" >\"$BEAMLAB_OUT\" 2>\"$BEAMLAB_ERR\"" | Cmd],
             [{"BEAMLAB_OUT", Txt}, {"BEAMLAB_ERR", Err}]) of
        {0, _} ->
            file:read_file(Txt);
        {_, _} ->
            {error, perf_error(case file:read_file(Err) of {ok, E} -> E; _ -> <<>> end)}
    end.

perf_error(Err) ->
    case re:run(Err, <<"perf_event_paranoid|Permission denied|Access to performance monitoring">>) of
        {match, _} ->
            Level = case file:read_file("/proc/sys/kernel/perf_event_paranoid") of
                        {ok, B} -> binary_to_integer(string:trim(B));
                        _ -> -99
                    end,
            {paranoid, Level};
        nomatch ->
            {perf_failed, first_line(Err)}
    end.

first_line(B) ->
    %% perf starts some messages with a line `Error:' alone.
    Lines = [L || L <- binary:split(iolist_to_binary(B), <<"\n">>, [global]),
                  string:trim(L) =/= <<>>, string:trim(L) =/= <<"Error:">>,
                  binary:match(L, <<"WARNING">>) =:= nomatch],
    case Lines of
        [L | _] -> string:trim(L);
        [] -> <<"no message">>
    end.

run(Argv) ->
    run(Argv, []).

run([Exe | Args], Env) ->
    Port = open_port({spawn_executable, Exe}, [{args, Args}, {env, Env}, binary, exit_status,
                                               stderr_to_stdout]),
    collect(Port, []).

collect(Port, Acc) ->
    receive
        {Port, {data, D}} -> collect(Port, [Acc, D]);
        {Port, {exit_status, S}} -> {S, iolist_to_binary(Acc)}
    end.

%% @doc One line for each error.
-spec format_error(error_reason()) -> iolist().
format_error(perf_missing) ->
    "perf is not installed: install the Debian package linux-perf (apt-get install linux-perf)";
format_error({perf_unusable, Msg}) ->
    io_lib:format("perf does not run here: ~ts (install the Debian package linux-perf matching "
                  "the running kernel)", [Msg]);
format_error({paranoid, Level}) ->
    io_lib:format("perf may not record here: kernel.perf_event_paranoid is ~b; run as root or "
                  "allow it with: sysctl -w kernel.perf_event_paranoid=1", [Level]);
format_error({no_such_process, Pid}) ->
    io_lib:format("no process with OS pid ~b", [Pid]);
format_error({not_a_beam, Pid, Comm}) ->
    io_lib:format("OS pid ~b is ~ts, not an Erlang VM (beam.smp)", [Pid, Comm]);
format_error({no_jit, Release, Flavor}) ->
    io_lib:format("OTP ~s runs the ~s emulator, which has no perf support: profiling needs the "
                  "JIT (OTP 24 or later on x86-64 or arm64)", [Release, Flavor]);
format_error({interpreter, Pid}) ->
    io_lib:format("OS pid ~b runs the interpreter (beam.emu.smp), which has no perf support: "
                  "profiling needs the JIT flavour (the default from OTP 24 on x86-64 and arm64)", [Pid]);
format_error({perf_failed, Msg}) ->
    io_lib:format("perf failed: ~ts", [Msg]);
format_error({target_gone, Pid}) ->
    io_lib:format("the VM with OS pid ~b exited before perf could attach to it: nothing was recorded", [Pid]);
format_error({command_failed, Code, Out}) ->
    io_lib:format("the profiled command exited with status ~b: ~ts", [Code, first_line(Out)]).
