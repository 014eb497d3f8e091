%%% @doc The system under test started by beamlab, one per configuration
%%% of `beamlab matrix --target': a private RabbitMQ (its own data and log directory, AMQP and Erlang
%%% distribution on 127.0.0.1 at free ports, a private cookie), or any
%%% release or escript given as a command (`--target-cmd', its emulator
%%% flags through `ERL_ZFLAGS'). The configuration's emulator flags go to
%%% the VM, the wrapper (`taskset -c 0', `numactl --cpunodebind=0') in
%%% front of it, another Erlang/OTP installation (`--otp DIR') first on
%%% its PATH, the emulator flavour (`flavor') as `-emu_flavor' on its
%%% `erl' command line.
%%%
%%% The broker is the one given (`sbin'), else the first installed one
%%% that runs on the configuration's OTP release: Debian 12's
%%% rabbitmq-server 3.10 (`/usr/lib/rabbitmq/bin', OTP 23 to 25) or
%%% RabbitMQ 4.0 unpacked by scripts/install-rabbitmq.sh
%%% (`/opt/beamlab-rabbitmq/4.0/bin', OTP 26 and 27).
%%%
%%% {@link start/1} waits until the target accepts connections and proves
%%% the flags from the node's own view of its VM read over distribution
%%% (`beamlab_sut_watch:node_env/1'); {@link stop/1} stops it and
%%% removes its directory. Every failure is a reason {@link format_error/1}
%%% turns into one line.
-module(beamlab_sut_broker).

-export([start/1, check/1, stop/1, run/3, alive/1, verify/2, brokers/0, free_port/0, format_error/1]).

-type spec() :: #{kind := rabbitmq | cmd,
                  args := [string()],                 % emulator flags
                  wrap => [string()] | undefined,     % e.g. ["taskset", "-c", "0"]
                  otp => file:filename() | undefined, % another OTP installation
                  flavor => beamlab_runtime_otp:flavor(), % proven from the node's report
                  cmd => string(),                    % kind cmd: the command line
                  node => string(),                   % kind cmd: its node name
                  cookie => string() | undefined,     % kind cmd: its cookie
                  sbin => file:filename(),            % where rabbitmq-server is (default: by OTP release)
                  timeout => pos_integer()}.          % boot timeout, ms
-type target() :: #{node := node(), port := port(), dir := file:filename(),
                    amqp_port := inet:port_number() | undefined,
                    uri := binary() | undefined, cookie := string() | undefined,
                    env := map(), os_pid := string()}.
-export_type([spec/0, target/0]).

-define(BOOT_TIMEOUT, 180000).

%% @doc The RabbitMQ installations beamlab knows, in order of preference:
%% where their scripts are, the version, and the OTP releases they run on
%% (RabbitMQ's own compatibility table).
-spec brokers() -> [#{sbin := file:filename(), version := string(),
                      otp := {pos_integer(), pos_integer()}}].
brokers() ->
    Prefix40 = case os:getenv("BEAMLAB_RABBITMQ40_PREFIX") of
                   V when V =:= false; V =:= "" -> "/opt/beamlab-rabbitmq/4.0";
                   V -> V
               end,
    [#{sbin => "/usr/lib/rabbitmq/bin", version => "3.10", otp => {23, 25}},
     #{sbin => filename:join(Prefix40, "bin"), version => "4.0", otp => {26, 27}}].

%% @doc Starts the target, waits until it is up and checks its flags.
-spec start(spec()) -> {ok, target()} | {error, term()}.
start(Spec) ->
    case check(Spec) of
        {ok, Spec1} ->
            case beamlab_runtime_file:private_dir("beamlab-target") of
                {ok, Dir} ->
                    try launch(Spec1, Dir)
                    catch throw:{target, Reason} ->
                            _ = del_dir(Dir),
                            {error, Reason}
                    end;
                {error, Reason} -> {error, {private_dir, Reason}}
            end;
        {error, _} = E -> E
    end.

%% @doc The spec made concrete without starting anything: the broker
%% chosen for its OTP, the flavour's flags added; a wrapper, an OTP, a
%% flavour or a broker that is not there is the error {@link start/1}
%% would return.
-spec check(spec()) -> {ok, spec()} | {error, term()}.
check(Spec) ->
    try
        case maps:get(wrap, Spec, undefined) of
            [W | _] -> os:find_executable(W) =/= false orelse throw({wrapper_not_found, W});
            _ -> ok
        end,
        Erl = case maps:get(otp, Spec, undefined) of
                  undefined -> "erl";
                  Otp ->
                      E = filename:join([Otp, "bin", "erl"]),
                      filelib:is_regular(E) orelse throw({otp_not_found, Otp}),
                      E
              end,
        %% (Without a flavour asked for, an erl whose installation cannot
        %% be read runs Debian's broker, as before.)
        Install = case {beamlab_runtime_otp:install(Erl), Spec} of
                      {{ok, I}, _} -> I;
                      {{error, R}, #{flavor := _}} -> throw({otp, R});
                      {{error, _}, _} -> #{}
                  end,
        FlavorArgs = case maps:find(flavor, Spec) of
                         {ok, F} ->
                             case beamlab_runtime_otp:flavor_args(Install, F) of
                                 {ok, A} -> A;
                                 {error, R2} -> throw({otp, R2})
                             end;
                         error -> []
                     end,
        Spec1 = Spec#{args => maps:get(args, Spec, []) ++ FlavorArgs},
        case Spec of
            #{kind := cmd} -> {ok, Spec1};
            #{kind := rabbitmq} -> {ok, Spec1#{sbin => sbin(Spec, Install)}}
        end
    catch throw:Reason -> {error, Reason}
    end.

sbin(#{sbin := Sbin}, _) ->
    filelib:is_regular(filename:join(Sbin, "rabbitmq-server")) orelse throw({no_rabbitmq, Sbin}),
    Sbin;
sbin(_, Install) when map_size(Install) =:= 0 ->
    sbin(#{sbin => maps:get(sbin, hd(brokers()))}, Install);
sbin(_, #{release := Rel, root := Root}) ->
    Major = list_to_integer(Rel),
    Fits = [B || #{otp := {Lo, Hi}} = B <- brokers(), Major >= Lo, Major =< Hi],
    case [S || #{sbin := S} <- Fits, filelib:is_regular(filename:join(S, "rabbitmq-server"))] of
        [S | _] -> S;
        [] -> throw({no_broker_for, Rel, Root, Fits})
    end.

launch(#{kind := Kind} = Spec, Dir) ->
    Args = maps:get(args, Spec, []),
    Wrap = case maps:get(wrap, Spec, undefined) of undefined -> []; W -> W end,
    PathEnv = case maps:get(otp, Spec, undefined) of
                  undefined -> [];
                  Otp -> [{"PATH", filename:join(Otp, "bin") ++ ":" ++ os:getenv("PATH", "/usr/bin:/bin")},
                          {"ERL_DIR", filename:join(Otp, "bin") ++ "/"}]
              end,
    {Node, Cookie, AmqpPort, Env, Cmd} =
        case Kind of
            rabbitmq -> rabbit_setup(Spec, Dir, Args);
            cmd ->
                {list_to_atom(maps:get(node, Spec)), maps:get(cookie, Spec, undefined), undefined,
                 [{"ERL_ZFLAGS", string:join(Args, " ")}, {"ERL_EPMD_ADDRESS", "127.0.0.1"}
                  | inherited()],
                 ["/bin/sh", "-c", maps:get(cmd, Spec)]}
        end,
    Log = filename:join(Dir, "stdout.log"),
    %% The shell only redirects the output and replaces itself with the
    %% wrapper, which replaces itself with the target: the port's OS
    %% process is the VM.
    Exe = "/bin/sh",
    ShArgs = ["-c", "cd \"$0\" && exec \"$@\" </dev/null >>\"$0/stdout.log\" 2>&1", Dir | Wrap ++ Cmd],
    Port = open_port({spawn_executable, Exe},
                     [{args, ShArgs}, {env, Env ++ PathEnv}, exit_status, {cd, Dir}]),
    Deadline = erlang:monotonic_time(millisecond) + maps:get(timeout, Spec, ?BOOT_TIMEOUT),
    T0 = #{node => Node, port => Port, dir => Dir, amqp_port => AmqpPort,
           uri => case AmqpPort of
                      undefined -> undefined;
                      _ -> iolist_to_binary(io_lib:format("amqp://guest:guest@127.0.0.1:~b/%2F", [AmqpPort]))
                  end,
           cookie => Cookie, env => #{}, os_pid => ""},
    case wait_up(T0, Deadline, Log) of
        ok ->
            case beamlab_sut_watch:node_env(Node) of
                {ok, NodeEnv} ->
                    T = T0#{env => NodeEnv, os_pid => binary_to_list(maps:get(os_pid, NodeEnv))},
                    case check_flavor(Spec, NodeEnv, verify(Args, NodeEnv)) of
                        ok ->
                            ok = watchdog(Node),
                            {ok, T};
                        {error, Why} ->
                            stop(T),
                            throw({target, {flags_not_applied, Why}})
                    end;
                {error, E} ->
                    kill(T0),
                    throw({target, E})
            end;
        {error, Reason} ->
            kill(T0),
            throw({target, Reason})
    end.

%% A private broker: the environment scripts/rabbitmq.sh sets, with free
%% ports, a long node name on 127.0.0.1 and the configuration's flags.
rabbit_setup(#{sbin := Sbin}, Dir, Args) ->
    Port = free_port(),
    DistPort = other_free_port(Port),
    NodeName = lists:flatten(io_lib:format("beamlab-target-~b@127.0.0.1", [Port])),
    Cookie = cookie(),
    %% (Dir is private: beamlab_runtime_file:private_dir/1.)
    W = fun(Name, Data) -> ok = beamlab_runtime_file:write_new(filename:join(Dir, Name), Data) end,
    W(".erlang.cookie", Cookie),
    ok = file:change_mode(filename:join(Dir, ".erlang.cookie"), 8#400),
    ok = filelib:ensure_dir(filename:join([Dir, "mnesia", "x"])),
    ok = filelib:ensure_dir(filename:join([Dir, "log", "x"])),
    W("rabbitmq-env.conf", ""),
    W("enabled_plugins", "[].\n"),
    W("advanced.config", "[].\n"),
    W("rabbitmq.conf",
                         io_lib:format("listeners.tcp.1 = 127.0.0.1:~b\n"
                                       "loopback_users.guest = true\n"
                                       "log.console = false\n"
                                       "log.file.level = warning\n"
                                       "disk_free_limit.absolute = 50MB\n", [Port])),
    J = fun(F) -> filename:join(Dir, F) end,
    Env = [{"HOME", Dir}, {"ERL_EPMD_ADDRESS", "127.0.0.1"},
           {"RABBITMQ_NODENAME", NodeName}, {"RABBITMQ_USE_LONGNAME", "true"},
           {"RABBITMQ_NODE_IP_ADDRESS", "127.0.0.1"},
           {"RABBITMQ_NODE_PORT", integer_to_list(Port)},
           {"RABBITMQ_DIST_PORT", integer_to_list(DistPort)},
           {"RABBITMQ_CONF_ENV_FILE", J("rabbitmq-env.conf")},
           {"RABBITMQ_CONFIG_FILE", J("rabbitmq.conf")},
           {"RABBITMQ_ADVANCED_CONFIG_FILE", J("advanced.config")},
           {"RABBITMQ_ENABLED_PLUGINS_FILE", J("enabled_plugins")},
           {"RABBITMQ_MNESIA_BASE", J("mnesia")},
           {"RABBITMQ_LOG_BASE", J("log")},
           {"RABBITMQ_PID_FILE", J("rabbit.pid")},
           {"RABBITMQ_PLUGINS_EXPAND_DIR", J("plugins-expand")},
           %% The script execs the VM itself (no proxy shell): the port's
           %% process is the broker. -noinput: stdin is /dev/null.
           {"RABBITMQ_ALLOW_INPUT", "true"},
           {"RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS",
            string:join(["-noinput -kernel inet_dist_use_interface {127,0,0,1}" | Args], " ")},
           {"ERL_ZFLAGS", false}, {"ERL_FLAGS", false}, {"ERL_AFLAGS", false}
           | inherited()],
    {list_to_atom(NodeName), Cookie, Port, Env, [filename:join(Sbin, "rabbitmq-server")]}.

%% A target we started must not outlive us: a process on it (OTP's
%% erl_eval, no beamlab code) stops it when this process or the
%% connection goes away.
watchdog(Node) ->
    {ok, Exprs} = beamlab_runtime_expr:parse(
                    "receive {beamlab_target_owner, W} ->"
                    "  Ref = erlang:monitor(process, W),"
                    "  receive {'DOWN', Ref, process, W, _} -> init:stop() end"
                    " end."),
    Pid = spawn(Node, erl_eval, exprs, [Exprs, []]),
    Pid ! {beamlab_target_owner, self()},
    ok.

%% What this VM's own start left in the environment must not reach the
%% target's `erl' (ESCRIPT_NAME would even become its argv[0]).
inherited() ->
    [{V, false} || V <- ["ESCRIPT_NAME", "ROOTDIR", "BINDIR", "EMU", "PROGNAME"]].

%% Up: the AMQP port accepts (a broker opens it last) and the node
%% answers over distribution; or the process exited (a flag it refused).
wait_up(#{port := Port} = T, Deadline, Log) ->
    receive
        {Port, {exit_status, S}} -> {error, {boot_failed, S, tail(Log)}}
    after 0 ->
            case erlang:monotonic_time(millisecond) > Deadline of
                true -> {error, {boot_timeout, tail(Log)}};
                false ->
                    case accepts(T) andalso connects(T) of
                        true -> ok;
                        false ->
                            receive
                                {Port, {exit_status, S}} -> {error, {boot_failed, S, tail(Log)}}
                            after 300 -> wait_up(T, Deadline, Log)
                            end
                    end
            end
    end.

accepts(#{amqp_port := undefined}) -> true;
accepts(#{amqp_port := P}) ->
    case gen_tcp:connect({127, 0, 0, 1}, P, [binary, {active, false}], 1000) of
        {ok, S} -> gen_tcp:close(S), true;
        {error, _} -> false
    end.

connects(#{node := Node, cookie := Cookie}) ->
    case beamlab_sut_watch:connect(Node, Cookie) of
        {ok, _} -> true;
        {error, {no_distribution, _} = E} -> throw({target, E});
        {error, _} -> false
    end.

%% @doc One repetition of a configuration: start the target, report it
%% (`Progress' gets one line: node, OS pid, what its VM reports), run
%% `Load' against it, check that it survived, stop it. The outcome has the
%% shape of a matrix run: the load's exit code and document, and the
%% target's own env as proof of its flags.
-spec run(spec(), fun((target()) -> {integer(), term()}), fun((iodata()) -> term())) ->
          {ok, #{exit := integer(), result := term(), env := map()}} | {error, term()}.
run(Spec, Load, Progress) ->
    case start(Spec) of
        {ok, #{node := Node, env := Env} = T} ->
            #{schedulers := S, otp := Otp} = Env,
            Progress(io_lib:format("  target ~ts up (os pid ~ts): ~b/~b schedulers, bind ~ts, "
                                   "busy wait ~ts, ~ts flavour~n",
                                   [Node, maps:get(os_pid, T), maps:get(online, S), maps:get(normal, S),
                                    maps:get(bind_type, S), maps:get(busy_wait, Env),
                                    case maps:get(flavor, Otp) of null -> <<"?">>; F -> F end])),
            Out = try Load(T)
                  catch Class:Reason -> {crashed, Class, Reason}
                  end,
            case {alive(T), Out} of
                {false, _} ->
                    %% The exit status may follow the lost connection.
                    Status = receive {Port, {exit_status, St}} when Port =:= map_get(port, T) -> St
                             after 5000 -> unknown
                             end,
                    %% (No signal to a process that is known to be gone.)
                    _ = Status =:= unknown andalso kill(T),
                    _ = del_dir(maps:get(dir, T)),
                    {error, {died, Status}};
                {true, {crashed, C, R}} ->
                    stop(T),
                    {error, {load_crashed, C, R}};
                {true, {Code, Doc}} ->
                    stop(T),
                    {ok, #{exit => Code, result => Doc, env => Env}}
            end;
        {error, _} = E -> E
    end.

%% @doc The target is still running: its process has not exited and its
%% node is still connected (a killed node's connection drops at once, its
%% exit status may come later).
-spec alive(target()) -> boolean().
alive(#{port := Port, node := Node}) ->
    erlang:port_info(Port) =/= undefined andalso
        lists:member(Node, nodes(connected)) andalso
        receive
            {Port, {exit_status, _}} = M -> self() ! M, false
        after 0 -> true
        end.

%% @doc Stops the target (init:stop over distribution, then SIGKILL when
%% it does not go within 60 s) and removes its directory.
-spec stop(target()) -> ok.
stop(#{node := Node, port := Port} = T) ->
    _ = catch erpc:call(Node, init, stop, [], 10000),
    receive
        {Port, {exit_status, _}} -> ok
    after 60000 -> kill(T)
    end,
    _ = erlang:disconnect_node(Node),
    del_dir(maps:get(dir, T)).

kill(#{port := Port, dir := Dir} = T) ->
    _ = case erlang:port_info(Port, os_pid) of
            {os_pid, Pid} -> os:cmd("kill -KILL " ++ integer_to_list(Pid) ++ " 2>/dev/null");
            undefined -> ok
        end,
    _ = case maps:get(os_pid, T, "") of
            "" -> ok;
            P -> os:cmd("kill -KILL " ++ P ++ " 2>/dev/null")
        end,
    receive {Port, {exit_status, _}} -> ok after 5000 -> ok end,
    catch port_close(Port),
    _ = Dir,
    ok.

%% The flavour asked for is the one the node reports, whatever flags
%% brought it (none, for the only flavour of a single-flavour install).
check_flavor(#{flavor := F}, Env, ok) ->
    case maps:get(flavor, maps:get(otp, Env, #{}), null) of
        Got when Got =:= null; Got =:= <<>> ->
            {error, <<"the node does not report its flavour">>};
        Got ->
            case atom_to_binary(F) =:= Got of
                true -> ok;
                false -> {error, iolist_to_binary(io_lib:format("the ~s flavour asked, the node runs the ~ts flavour",
                                                                [F, Got]))}
            end
    end;
check_flavor(_, _, Verdict) ->
    Verdict.

%% @doc Checks the node's own report against the requested flags: every
%% flag on the emulator's command line in order (when readable), and what
%% the VM says for `+S', `+sbt' and `+sbwt'.
-spec verify([string()], map()) -> ok | {error, binary()}.
verify(Args, Env) ->
    Sched = maps:get(schedulers, Env),
    Checks = lists:append([check_flag(F, V, Sched) || {F, V} <- pairs(Args)])
        ++ [iolist_to_binary(io_lib:format("-emu_flavor ~s asked, the node runs the ~ts flavour", [V, Got]))
            || {"-emu_flavor", V} <- pairs(Args), V =/= "smp",  % smp: the install's default
               Got <- [maps:get(flavor, maps:get(otp, Env, #{}), null)], Got =/= list_to_binary(V)],
    %% erl itself consumes these; beam's command line never shows them.
    Beam = drop_erl_flags(Args),
    Cmdline = maps:get(emulator_cmdline, Env, null),
    Missing = case Cmdline of
                  null -> [];
                  _ ->
                      %% erl hands `+' flags to beam as `-' flags.
                      Want = [list_to_binary(case A of "+" ++ R -> "-" ++ R; _ -> A end) || A <- Beam],
                      case Want =:= [] orelse sublist(Want, Cmdline) of
                          true -> [];
                          false -> [iolist_to_binary(["the emulator's command line lacks '",
                                                      lists:join(" ", Beam), "'"])]
                      end
              end,
    case Missing ++ Checks of
        [] -> ok;
        [Why | _] -> {error, Why}
    end.

pairs([F, V | Rest]) -> [{F, V} | pairs(Rest)];
pairs(_) -> [].

drop_erl_flags([F, _ | Rest]) when F =:= "-emu_flavor"; F =:= "-emu_type" -> drop_erl_flags(Rest);
drop_erl_flags([A | Rest]) -> [A | drop_erl_flags(Rest)];
drop_erl_flags([]) -> [].

check_flag("+S", V, #{normal := N, online := On}) ->
    case string:split(V, ":") of
        [A, B] -> expect("+S " ++ V, [{A, N}, {B, On}]);
        [A] -> expect("+S " ++ V, [{A, N}, {A, On}])
    end;
check_flag("+sbt", V, #{bind_type := Got}) ->
    Want = maps:get(V, #{"u" => <<"unbound">>, "ns" => <<"no_spread">>, "ts" => <<"thread_spread">>,
                         "ps" => <<"processor_spread">>, "s" => <<"spread">>,
                         "nnts" => <<"no_node_thread_spread">>, "nnps" => <<"no_node_processor_spread">>,
                         "tnnps" => <<"thread_no_node_processor_spread">>,
                         "db" => <<"thread_no_node_processor_spread">>}, undefined),
    case Want =:= undefined orelse Want =:= Got of
        true -> [];
        false -> [iolist_to_binary(io_lib:format("+sbt ~s asked, the node reports bind type ~ts", [V, Got]))]
    end;
check_flag(_, _, _) -> [].

expect(Flag, Pairs) ->
    case [{A, G} || {A, G} <- Pairs, string:to_integer(A) =/= {G, ""}, A =/= ""] of
        [] -> [];
        [{_, G} | _] -> [iolist_to_binary(io_lib:format("~s asked, the node reports ~0p", [Flag, G]))]
    end.

sublist(Want, List) when length(Want) > length(List) -> false;
sublist(Want, [_ | T] = List) ->
    lists:prefix(Want, List) orelse sublist(Want, T).

%% @doc A free TCP port on 127.0.0.1 (bound, read, released).
-spec free_port() -> inet:port_number().
free_port() ->
    {ok, S} = gen_tcp:listen(0, [{ip, {127, 0, 0, 1}}]),
    {ok, P} = inet:port(S),
    ok = gen_tcp:close(S),
    P.

other_free_port(Taken) ->
    case free_port() of
        Taken -> other_free_port(Taken);
        P -> P
    end.

%% The target's cookie: 16 bytes from the kernel's random source (a
%% cookie from rand would be guessable from the time it was seeded).
cookie() ->
    lists:flatten([io_lib:format("~2.16.0B", [B]) || <<B>> <= random_bytes(16)]).

random_bytes(N) ->
    {ok, Fd} = file:open("/dev/urandom", [read, raw, binary]),
    try
        {ok, Bytes} = file:read(Fd, N),
        Bytes
    after
        file:close(Fd)
    end.



del_dir(Dir) ->
    _ = file:del_dir_r(Dir),
    ok.

%% The last lines of the target's output: why it did not boot.
tail(Log) ->
    case file:read_file(Log) of
        {ok, B} ->
            Lines = [L || L <- binary:split(B, <<"\n">>, [global]), string:trim(L) =/= <<>>],
            Interesting = [L || L <- Lines, re:run(L, <<"(?i)error|invalid|bad|unknown|fail|abort|crash">>) =/= nomatch],
            case Interesting of
                [] -> lists:last([<<"no output">> | Lines]);
                [First | _] ->
                    %% "...: " announces the next line (erlexec's list of
                    %% flavours): keep it.
                    case {binary:last(string:trim(First)), lists:dropwhile(fun(L) -> L =/= First end, Lines)} of
                        {$:, [_, Next | _]} -> <<(string:trim(First))/binary, " ", (string:trim(Next))/binary>>;
                        _ -> First
                    end
            end;
        _ -> <<"no output">>
    end.

%% @doc One line for each error of this module.
-spec format_error(term()) -> iolist().
format_error(Reason) ->
    beamlab_format_reason:line(fun error_line/1, Reason).

error_line({wrapper_not_found, W}) ->
    io_lib:format("wrapper ~ts is not installed (not found on PATH)", [W]);
error_line({otp_not_found, D}) ->
    io_lib:format("--otp ~ts: no bin/erl there", [D]);
error_line({no_rabbitmq, Sbin}) ->
    io_lib:format("~ts/rabbitmq-server not found (install Debian's rabbitmq-server)", [Sbin]);
error_line({no_broker_for, Rel, Root, Fits}) ->
    io_lib:format("no installed RabbitMQ runs on the OTP ~ts in ~ts~ts", [Rel, Root,
        case Fits of
            [#{version := "4.0"} | _] -> ": scripts/install-rabbitmq.sh installs RabbitMQ 4.0 for OTP 26 and 27";
            [#{version := V} | _] -> io_lib:format(": RabbitMQ ~ts runs on it (Debian 12's rabbitmq-server)", [V]);
            [] -> " (RabbitMQ 3.10 needs OTP 23 to 25, 4.0 OTP 26 or 27)"
        end]);
error_line({otp, R}) ->
    beamlab_runtime_otp:format_error(R);
error_line({boot_failed, S, Why}) ->
    io_lib:format("the target exited during boot (status ~b): ~ts", [S, string:trim(Why)]);
error_line({boot_timeout, Why}) ->
    io_lib:format("the target did not come up in time; last output: ~ts", [string:trim(Why)]);
error_line({private_dir, Why}) ->
    io_lib:format("cannot create the target's directory: ~ts", [beamlab_runtime_file:format_error(Why)]);
error_line({flags_not_applied, Why}) ->
    io_lib:format("flags not in effect: ~ts", [Why]);
error_line({load_crashed, C, R}) ->
    io_lib:format("the load crashed: ~0tP", [{C, R}, 10]);
error_line({died, S}) when is_integer(S), S > 128 ->
    io_lib:format("the target died during the load (killed by signal ~b)", [S - 128]);
error_line({died, S}) ->
    io_lib:format("the target died during the load (exit status ~0p)", [S]);
error_line(E) ->
    beamlab_sut_watch:format_error(E).
