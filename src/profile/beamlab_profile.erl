%%% @doc Sampling profiles of a BEAM with Linux `perf' and the JIT's perf
%%% support: checks that perf can run here (installed, allowed by
%%% `kernel.perf_event_paranoid'), records call graphs (`perf record -g',
%%% frame pointers from the JIT's `+JPperf true') of a running VM by OS
%%% pid or of a fresh VM started with perf support under perf (which runs
%%% a function the caller names there and returns its value; the VMs that
%%% VM starts are recorded too), resolves the samples
%%% with `perf script' (the VM's `/tmp/perf-PID.map' names JIT code) and
%%% builds the profile with {@link beamlab_profile_stacks}.
%%%
%%% Two modes ({@link mode_info/1}): `graph' records call stacks (the JIT
%%% keeps frame pointers with `+JPperf true': flame graphs, self and total
%%% time, at the frame pointers' cost to call-heavy code), `flat' records
%%% the leaf only (`+JPperf map' names JIT code without frame pointers:
%%% self time, almost free). An interpreter (the emu flavour) has no JIT
%%% code to name: its profile is the emulator's C functions, its loop
%%% `process_main' first.
%%%
%%% A target that exits mid-profile keeps what was recorded; an interrupt
%%% (`{beamlab_interrupt, _}' in the caller's mailbox) stops perf and keeps
%%% what was recorded too. {@link start/2} and {@link stop/1} record a
%%% running VM in the background for as long as the caller says (the
%%% broker of a matrix configuration while it is loaded).
-module(beamlab_profile).

-export([check_perf/0, vm_flags/0, vm_flags/1, mode_info/1, perf_support/1, max_frequency/0, record/2,
         start/2, stop/1, format_error/1]).

-type target() :: {pid, pos_integer()}
                | {vm, beamlab_runtime_peer:opts(), beamlab_runtime_peer:call_spec()}.
-type mode() :: graph | flat.
-type opts() :: #{frequency := pos_integer(), duration := pos_integer() | infinity,
                  mode => mode(),                 % default graph
                  call_graph => fp | dwarf,       % graph mode's stack walking
                  scratch => file:filename(),     % a private directory for perf's data
                  started => fun(() -> term())}.  % --pid: called once perf records
-opaque recorder() :: #{pid := pid(), ref := reference()}.
%% `returned': what the function run in a fresh VM returned.
-type outcome() :: #{profile := beamlab_profile_stacks:profile(), os_pid := pos_integer(),
                     returned => term(), target_exited := boolean(), interrupted := boolean(),
                     perf_support := boolean(), elapsed_ms := non_neg_integer(),
                     flavor => jit | emu | unknown}.   % --pid: the VM's emulator flavour
-type error_reason() :: perf_missing | {perf_unusable, binary()} | {paranoid, integer()}
                      | {no_such_process, pos_integer()} | {not_a_beam, pos_integer(), binary()}
                      | {no_jit, string(), string()} | {perf_failed, binary()}
                      | {target_gone, pos_integer()} | {vm, term()}.
-export_type([target/0, mode/0, opts/0, outcome/0, recorder/0, error_reason/0]).

-define(POLL_MS, 200).
%% How long perf may take to write its data once its VM is gone.
-define(EXIT_MS, 60000).

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
%% in graph mode (`+JPperf true': frame pointers and a perf map), or an
%% error naming why this VM has none (the interpreter, or an OTP release
%% before the JIT).
-spec vm_flags() -> {ok, string()} | {error, error_reason()}.
vm_flags() ->
    vm_flags(graph).

%% @doc As {@link vm_flags/0} for a mode.
-spec vm_flags(mode()) -> {ok, string()} | {error, error_reason()}.
vm_flags(Mode) ->
    Release = erlang:system_info(otp_release),
    Flavor = try atom_to_list(erlang:system_info(emu_flavor)) catch error:badarg -> "emu" end,
    case Flavor =:= "jit" andalso list_to_integer(Release) >= 24 of
        true -> {ok, maps:get(vm_flags, mode_info(Mode))};
        false -> {error, {no_jit, Release, Flavor}}
    end.

%% @doc What a mode asks of the VM (`vm_flags', for the JIT flavour) and
%% of perf (`stacks': call graphs or the leaf only), in words (`what'),
%% and what it costs the profiled code as bench/profile_overhead.escript
%% measured it (`cost'; docs/profile.md).
-spec mode_info(mode()) -> #{vm_flags := string(), stacks := boolean(), what := binary(),
                             cost := binary()}.
mode_info(graph) ->
    #{vm_flags => "+JPperf true", stacks => true,
      what => <<"call stacks (perf record -g; the JIT keeps frame pointers: +JPperf true)">>,
      cost => <<"about 1% of rand:uniform()'s rate on a quiet machine (bench/profile_overhead.escript); "
                "perf's stack walking takes CPU of its own, which a saturated machine takes from the "
                "profiled VM">>};
mode_info(flat) ->
    #{vm_flags => "+JPperf map", stacks => false,
      what => <<"self time only (perf record without call graphs; +JPperf map names JIT code, "
                "no frame pointers)">>,
      cost => <<"under 1% of rand:uniform()'s rate on a quiet machine (bench/profile_overhead.escript), "
                "and less of perf's own CPU than graph mode">>}.

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
record(Perf, {vm, PeerOpts, Call}, Opts) ->
    case vm_flags(maps:get(mode, Opts, graph)) of
        {ok, Flags} -> with_data(Opts, fun(Data) -> record_vm(Perf, PeerOpts, Call, Flags, Data, Opts) end);
        {error, _} = E -> E
    end.

%% perf starts the fresh VM (perf is its wrapper), so every process and
%% thread it creates is recorded too (the fresh VMs of a matrix and of
%% `run -i' included, which inherit ERL_FLAGS and with it the JIT's perf
%% support). The function runs there while this process waits; a duration
%% or an interrupt interrupts it there as Ctrl-C would (it returns what it
%% measured). Then the VM stops, and perf, whose child it was, writes its
%% data and exits.
record_vm(Perf, PeerOpts, {M, F, A}, Flags, Data, #{frequency := Hz, duration := Duration} = Opts) ->
    Old = os:getenv("ERL_FLAGS", ""),
    Wrapper = [Perf, "record", "-q", "-F", integer_to_list(Hz) | call_graph(Opts)] ++ ["-o", Data, "--"],
    VmOpts = PeerOpts#{wrapper => Wrapper ++ maps:get(wrapper, PeerOpts, []),
                       args => string:lexemes(Flags, " ") ++ maps:get(args, PeerOpts, []),
                       env => [{"ERL_FLAGS", string:trim(Old ++ " " ++ Flags)} | maps:get(env, PeerOpts, [])]},
    T0 = erlang:monotonic_time(millisecond),
    case beamlab_runtime_peer:start(VmOpts) of
        {ok, Vm} ->
            VmPid = list_to_integer(beamlab_runtime_peer:call(Vm, os, getpid, [], 60000)),
            PerfPid = parent(VmPid),
            Self = self(),
            Ref = make_ref(),
            _ = spawn_link(fun() ->
                                   Self ! {Ref, try {returned, beamlab_runtime_peer:call(Vm, M, F, A)}
                                                catch C:E -> {raised, C, E}
                                                end}
                           end),
            St = await(recording(Ref, T0, Duration, #{perf_pid => PerfPid, vms => [VmPid]},
                                 #{data => fun(_, S) -> S end,
                                   poll => fun(S) -> {continue, S#{vms := descendants(S)}} end,
                                   stop => fun(S) -> ok = beamlab_runtime_peer:interrupt(Vm), S end})),
            Elapsed = erlang:monotonic_time(millisecond) - T0,
            #{ended := Ended, interrupted := Int} = St,
            Vms = descendants(St),
            Support = perf_support(VmPid),
            ok = beamlab_runtime_peer:stop(Vm),
            ok = await_exit(PerfPid),
            try
                case {Ended, script(Perf, Data)} of
                    {{raised, Class, Reason}, _} ->
                        {error, {vm, {vm_failed, Class, Reason}}};
                    {{returned, Value}, {ok, Text}} ->
                        Profile = beamlab_profile_stacks:build(beamlab_profile_perf:parse(Text), #{}),
                        {ok, #{profile => Profile, os_pid => VmPid, target_exited => false,
                               interrupted => Int, perf_support => Support, elapsed_ms => Elapsed,
                               returned => Value}};
                    {_, {error, _} = Er} ->
                        Er
                end
            after
                _ = [begin
                         _ = file:delete(map_file(V)),
                         file:delete("/tmp/jit-" ++ integer_to_list(V) ++ ".dump")
                     end || V <- Vms]
            end;
        {error, {start_failed, _, {vm_said, Line, _}}} ->
            %% perf refused before it started the VM: its own message.
            {error, perf_error(Line)};
        {error, Reason} ->
            {error, {vm, Reason}}
    end.

%% The OS parent of a process (perf, for the VM it started).
parent(OsPid) ->
    {ok, Stat} = file:read_file("/proc/" ++ integer_to_list(OsPid) ++ "/stat"),
    %% pid (comm) state ppid ...: comm may hold spaces and parentheses.
    [_, After] = string:split(Stat, <<")">>, trailing),
    [_State, PPid | _] = string:lexemes(After, " "),
    binary_to_integer(PPid).

%% perf writes its data once its child is gone; bounded: SIGINT after
%% ?EXIT_MS, then what it wrote is what there is.
await_exit(PerfPid) ->
    case wait_gone(PerfPid, erlang:monotonic_time(millisecond) + ?EXIT_MS) of
        ok -> ok;
        timeout ->
            _ = os:cmd("kill -INT " ++ integer_to_list(PerfPid)),
            _ = wait_gone(PerfPid, erlang:monotonic_time(millisecond) + ?EXIT_MS),
            ok
    end.

wait_gone(Pid, Deadline) ->
    case gone(Pid) of
        true -> ok;
        false ->
            case erlang:monotonic_time(millisecond) >= Deadline of
                true -> timeout;
                false -> timer:sleep(50), wait_gone(Pid, Deadline)
            end
    end.

call_graph(Opts) ->
    %% fp: frame pointers (the JIT's with +JPperf true; C code without
    %% them loses its callers); dwarf: the stack copied and unwound with
    %% the emulator's unwind tables (C callers kept, up to the JIT code
    %% that called them; more data per sample). Flat mode: the leaf only.
    case {maps:get(mode, Opts, graph), maps:get(call_graph, Opts, fp)} of
        {flat, _} -> [];
        {graph, fp} -> ["-g"];
        {graph, dwarf} -> ["--call-graph", "dwarf,16384"]
    end.

%%--------------------------------------------------------------------
%% The recorder loop, one for every kind of recording

%% A recording in progress: `source' is what ends it (perf's port, whose
%% output and exit status arrive as `{Source, {data, D}}' and `{Source,
%% {exit_status, S}}'; the reference of a call into a fresh VM, answered
%% by `{Source, {returned, V}}'), `deadline' when it must be stopped
%% (monotonic ms, or infinity); the hooks say what the kind of recording
%% does with the source's output (`data'), at each poll every ?POLL_MS
%% (`poll', which may ask to stop) and to stop (`stop', called once:
%% interrupt the fresh VM's run, SIGINT to an attached perf).
-type hooks() :: #{data := fun((binary(), recording()) -> recording()),
                   poll := fun((recording()) -> {continue | stop, recording()}),
                   stop := fun((recording()) -> recording())}.
-type recording() :: #{source := port() | reference(), deadline := integer() | infinity,
                       hooks := hooks(), ended := term(), interrupted := boolean(),
                       stopping := boolean(), atom() => term()}.

recording(Source, T0, Duration, Own, Hooks) ->
    Own#{source => Source, hooks => Hooks, ended => undefined, interrupted => false,
         stopping => false,
         deadline => case Duration of
                         infinity -> infinity;
                         Ms -> T0 + Ms
                     end}.

%% Runs until the source ends (how, in `ended'),
%% stopping the recording once at the deadline, on an interrupt
%% (`{beamlab_interrupt, _}' in the mailbox) or when a poll asks.
-spec await(recording()) -> recording().
await(#{source := Source, deadline := Deadline, hooks := #{data := Data, poll := Poll}} = St) ->
    Timeout = case Deadline of
                  infinity -> ?POLL_MS;
                  _ -> max(0, min(?POLL_MS, Deadline - erlang:monotonic_time(millisecond)))
              end,
    receive
        {Source, {data, D}} ->
            await(Data(D, St));
        {Source, Ended} ->
            St#{ended := Ended};
        {beamlab_interrupt, _} ->
            await(end_recording(St#{interrupted := true}));
        {beamlab_profile, stop} ->
            await(end_recording(St))
    after Timeout ->
            Due = Deadline =/= infinity andalso erlang:monotonic_time(millisecond) >= Deadline,
            case Poll(St) of
                {stop, St1} -> await(end_recording(St1));
                {continue, St1} when Due -> await(end_recording(St1));
                {continue, St1} -> await(St1)
            end
    end.

end_recording(#{stopping := true} = St) ->
    St;
end_recording(#{hooks := #{stop := Stop}} = St) ->
    Stop(St#{stopping := true, deadline := infinity}).

%% The processes under perf (the fresh VM first, then the VMs it
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

%% Any flavour: the interpreter's (beam.emu, beam.emu.smp) profile is its
%% C code.
beam_process(OsPid) ->
    case file:read_file("/proc/" ++ integer_to_list(OsPid) ++ "/comm") of
        {ok, Comm0} ->
            Comm = string:trim(Comm0),
            case binary:match(Comm, <<"beam">>) of
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
    Flavor = flavor(OsPid),
    Err = Data ++ ".err",
    Argv = [Perf, "record", "-F", integer_to_list(Hz) | call_graph(Opts)] ++ ["-o", Data, "-p", integer_to_list(OsPid)],
    T0 = erlang:monotonic_time(millisecond),
    PerfPort = open_port({spawn_executable, "/bin/sh"},
                         [{args, ["-c", "exec \"$0\" \"$@\" 2>\"$BEAMLAB_PERF_ERR\" >/dev/null" | Argv]},
                          {env, [{"BEAMLAB_PERF_ERR", Err}]}, binary, exit_status]),
    {os_pid, PerfPid} = erlang:port_info(PerfPort, os_pid),
    %% perf ends by itself when its target exits; a duration, an interrupt
    %% or the target found gone sends it SIGINT, and it writes what it has.
    %% `started' tells the caller of start/2 once perf records (it has
    %% written its file's header).
    Started = maps:get(started, Opts, fun() -> ok end),
    St = await(recording(PerfPort, T0, Duration, #{perf_pid => PerfPid, exited => false,
                                                   told => false},
                         #{data => fun(_, S) -> S end,
                           poll => fun(S) ->
                                           S1 = tell_started(S, Data, Started),
                                           case gone(OsPid) of
                                               true -> {stop, S1#{exited := true}};
                                               false -> {continue, S1}
                                           end
                                   end,
                           stop => fun stop_perf/1})),
    Elapsed = erlang:monotonic_time(millisecond) - T0,
    #{ended := {exit_status, PerfStatus}, exited := Exited, interrupted := Int} = St,
    PerfErr = case file:read_file(Err) of {ok, E} -> E; _ -> <<>> end,
    HaveData = filelib:file_size(Data) > 0,
    Gone = gone(OsPid),
    case PerfStatus of
        S when S =/= 0, not HaveData, Gone -> {error, {target_gone, OsPid}};
        S when S =/= 0, not HaveData -> {error, perf_error(PerfErr)};
        _ ->
            case script(Perf, Data) of
                {ok, Text} ->
                    Profile = beamlab_profile_stacks:build(beamlab_profile_perf:parse(Text), #{}),
                    %% perf ends by itself when its target exits, possibly
                    %% before a poll noticed: ask /proc as well.
                    {ok, #{profile => Profile, os_pid => OsPid, target_exited => Exited orelse Gone,
                           interrupted => Int, perf_support => perf_support(OsPid), elapsed_ms => Elapsed,
                           flavor => Flavor}};
                {error, _} = Er -> Er
            end
    end.

%% The interpreter's emulator is beam.emu (beam.emu.smp before OTP 24),
%% the JIT's beam.jit; beam.smp is whichever the installation built first.
flavor(OsPid) ->
    case file:read_link("/proc/" ++ integer_to_list(OsPid) ++ "/exe") of
        {ok, Exe} ->
            case {string:find(filename:basename(Exe), ".emu"), string:find(filename:basename(Exe), ".jit")} of
                {nomatch, nomatch} -> unknown;
                {nomatch, _} -> jit;
                _ -> emu
            end;
        {error, _} -> unknown
    end.

tell_started(#{told := true} = S, _, _) ->
    S;
tell_started(S, Data, Started) ->
    case filelib:file_size(Data) > 0 of
        true -> Started(), S#{told := true};
        false -> S
    end.

%% @doc Starts recording the running VM `{pid, OsPid}' in the background
%% until {@link stop/1}; returns once perf records.
-spec start(target(), opts()) -> {ok, recorder()} | {error, error_reason()}.
start({pid, _} = Target, Opts) ->
    Self = self(),
    Ref = make_ref(),
    {Pid, MRef} = spawn_monitor(
                    fun() ->
                            Started = fun() -> Self ! {Ref, started} end,
                            Self ! {Ref, record(Target, Opts#{duration => infinity, started => Started})}
                    end),
    receive
        {Ref, started} -> {ok, #{pid => Pid, ref => Ref}};
        {Ref, {error, _} = E} -> erlang:demonitor(MRef, [flush]), E;
        {Ref, {ok, _}} -> erlang:demonitor(MRef, [flush]), {error, {target_gone, element(2, Target)}};
        {'DOWN', MRef, process, Pid, Why} -> {error, {perf_failed, iolist_to_binary(io_lib:format("~0tP", [Why, 8]))}}
    end.

%% @doc Stops a background recording and returns its profile.
-spec stop(recorder()) -> {ok, outcome()} | {error, error_reason()}.
stop(#{pid := Pid, ref := Ref}) ->
    MRef = erlang:monitor(process, Pid),
    Pid ! {beamlab_profile, stop},
    receive
        {Ref, Result} -> erlang:demonitor(MRef, [flush]), Result;
        {'DOWN', MRef, process, Pid, Why} ->
            {error, {perf_failed, iolist_to_binary(io_lib:format("~0tP", [Why, 8]))}}
    end.

gone(OsPid) ->
    not filelib:is_dir("/proc/" ++ integer_to_list(OsPid)).

stop_perf(#{perf_pid := PerfPid} = St) ->
    _ = os:cmd("kill -INT " ++ integer_to_list(PerfPid)),
    St.

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
format_error(Reason) ->
    beamlab_format_reason:line(fun error_line/1, Reason).

error_line(perf_missing) ->
    "perf is not installed: install the Debian package linux-perf (apt-get install linux-perf)";
error_line({perf_unusable, Msg}) ->
    io_lib:format("perf does not run here: ~ts (install the Debian package linux-perf matching "
                  "the running kernel)", [Msg]);
error_line({paranoid, Level}) ->
    io_lib:format("perf may not record here: kernel.perf_event_paranoid is ~b; run as root or "
                  "allow it with: sysctl -w kernel.perf_event_paranoid=1", [Level]);
error_line({no_such_process, Pid}) ->
    io_lib:format("no process with OS pid ~b", [Pid]);
error_line({not_a_beam, Pid, Comm}) ->
    io_lib:format("OS pid ~b is ~ts, not an Erlang VM (beam.smp)", [Pid, Comm]);
error_line({no_jit, Release, Flavor}) ->
    io_lib:format("OTP ~s runs the ~s emulator, which has no perf support: profiling needs the "
                  "JIT (OTP 24 or later on x86-64 or arm64)", [Release, Flavor]);
error_line({perf_failed, Msg}) ->
    io_lib:format("perf failed: ~ts", [Msg]);
error_line({target_gone, Pid}) ->
    io_lib:format("the VM with OS pid ~b exited before perf could attach to it: nothing was recorded", [Pid]);
error_line({vm, Reason}) ->
    beamlab_runtime_peer:format_error(Reason);
error_line(Other) ->
    %% (a reason of no kind above: printed, never raised)
    beamlab_format_reason:term(Other).
