%%% @doc Watching a running node (the system under test) from outside: this
%%% VM joins its cluster as a hidden node that listens for nobody, and
%%% reads the node with OTP functions only (`erpc' calls to `erlang',
%%% `init', `os' and `erl_eval'), so no beamlab code is ever loaded there.
%%%
%%% {@link connect/3} makes the connection and turns every way it can fail
%%% into one reason; {@link node_env/2} reads the node's own view of its
%%% VM (schedulers, bind type, flavour, emulator arguments), which is how
%%% a matrix proves the flags a broker runs with; {@link watch/2} records
%%% the node's telemetry series (`beamlab_runtime_telemetry' with `node')
%%% for a duration or until the node goes down or the run is interrupted,
%%% raises the growth findings as they appear (`beamlab_sut_growth') and
%%% serves them with the node's figures as live metrics when given a
%%% metrics server (`beamlab_sut_metrics').
%%%
%%% Every wait is bounded: connecting (5 s, however the node behaves),
%%% reading its environment, each sample (`beamlab_runtime_telemetry'), so
%%% a watch with a duration ends within that duration plus {@link
%%% grace_ms/0}, even when the node is frozen (SIGSTOP), dies or answers
%%% slowly.
-module(beamlab_sut_watch).

-export([connect/2, connect/3, node_env/1, node_env/2, watch/2, grace_ms/0, format_error/1]).

-type watch_opts() :: #{duration => pos_integer() | infinity,  % ms
                        interval => pos_integer(), msacc => boolean(),
                        top => non_neg_integer(), print => boolean(),
                        system_monitor => false | #{long_gc := pos_integer(), long_schedule := pos_integer()},
                        metrics => beamlab_runtime_metrics:server() | undefined,
                        on_finding => none | fun(([beamlab_result:finding()]) -> term()),
                        deadline => integer() | infinity}.
-type error_reason() :: {bad_node, string()} | {no_distribution, term()}
                      | {unreachable, node(), term()} | {not_running, node()}
                      | {refused, node()} | {no_answer, node(), pos_integer()} | {watch, node(), term()}
                      | {sampler_lost, node(), term()}.
-export_type([watch_opts/0, error_reason/0]).

-define(CONNECT_MS, 5000).
-define(GRACE_MS, 5000).

%% @doc How long after its duration a watch may take to end at most
%% (waiting for a node that does not answer, stopping, saving).
-spec grace_ms() -> pos_integer().
grace_ms() ->
    ?GRACE_MS.

%% @doc {@link connect/3} waiting at most 5 s for the node.
-spec connect(string() | node(), string() | undefined) -> {ok, node()} | {error, error_reason()}.
connect(Node, Cookie) ->
    connect(Node, Cookie, ?CONNECT_MS).

%% @doc Connects to `Node' (a string `name@host'), starting distribution
%% for this VM when needed: a hidden node, not listening, in the name
%% domain of `Node' (long names when its host has a dot or is an address).
%% `Cookie' is used for that node only. A node that does not complete the
%% handshake within `TimeoutMs' (frozen, overloaded) is `no_answer'.
-spec connect(string() | node(), string() | undefined, pos_integer()) -> {ok, node()} | {error, error_reason()}.
connect(Node, Cookie, TimeoutMs) when is_atom(Node) ->
    connect(atom_to_list(Node), Cookie, TimeoutMs);
connect(Name, Cookie, TimeoutMs) ->
    case string:split(Name, "@") of
        [[_ | _] = Alive, [_ | _] = Host] ->
            case lists:member($@, Host) orelse not valid_alive(Alive) of
                true -> {error, {bad_node, Name}};
                false -> connect(list_to_atom(Name), Host, Cookie, TimeoutMs)
            end;
        _ -> {error, {bad_node, Name}}
    end.

valid_alive(A) ->
    lists:all(fun(C) -> (C >= $a andalso C =< $z) orelse (C >= $A andalso C =< $Z)
                            orelse (C >= $0 andalso C =< $9) orelse C =:= $_ orelse C =:= $-
              end, A).

connect(Node, Host, Cookie, TimeoutMs) ->
    Domain = case lists:member($., Host) orelse lists:member($:, Host) of
                 true -> longnames;
                 false -> shortnames
             end,
    case beamlab_runtime_peer:start_hidden(Domain) of
        ok ->
            %% (an empty cookie is refused: beamlab_runtime_peer:cookie/1)
            _ = Cookie =/= undefined andalso beamlab_runtime_peer:set_cookie(Node, Cookie),
            %% A refused handshake is logged by the kernel; the caller
            %% reports it in one line instead.
            Level = maps:get(level, logger:get_primary_config()),
            ok = logger:set_primary_config(level, none),
            %% The handshake waits net_setuptime (seconds) for a node that
            %% accepted the TCP connection but does not answer.
            Setup = application:get_env(kernel, net_setuptime),
            ok = application:set_env(kernel, net_setuptime, TimeoutMs / 1000),
            T0 = erlang:monotonic_time(millisecond),
            %% Hidden even when this VM is a visible node already.
            Up = try net_kernel:hidden_connect_node(Node)
                 after
                     ok = logger:set_primary_config(level, Level),
                     ok = case Setup of
                              {ok, V} -> application:set_env(kernel, net_setuptime, V);
                              undefined -> application:unset_env(kernel, net_setuptime)
                          end
                 end,
            Took = erlang:monotonic_time(millisecond) - T0,
            case Up of
                true -> {ok, Node};
                _ when Took >= TimeoutMs - 250 -> {error, {no_answer, Node, TimeoutMs}};
                _ -> {error, why_not(Node, Host)}
            end;
        {error, _} = E -> E
    end.

%% Why a connection failed: no such host, nothing of that name on it, or
%% the node refused us (the cookie).
why_not(Node, Host) ->
    [Alive, _] = string:split(atom_to_list(Node), "@"),
    case inet:getaddr(Host, inet) of
        {error, R} -> {unreachable, Node, R};
        {ok, _} ->
            case erl_epmd:port_please(Alive, Host, 5000) of
                {port, _, _} -> {refused, Node};
                noport -> {not_running, Node};
                {error, R} -> {unreachable, Node, R};
                _ -> {unreachable, Node, epmd}
            end
    end.

%% @doc {@link node_env/2} waiting at most 10 s.
-spec node_env(node()) -> {ok, map()} | {error, error_reason()}.
node_env(Node) ->
    node_env(Node, 10000).

%% @doc The node's own view of its VM, read over distribution in one call
%% (at most `TimeoutMs'): schedulers (with bind type and bindings),
%% flavour, release, the emulator's command line (from /proc when the node
%% runs on this host: the `+' flags are only there) and the relevant
%% environment variables. The shape follows `beamlab_env:report()' where
%% the two overlap (`schedulers', `otp').
-spec node_env(node(), timeout()) -> {ok, map()} | {error, error_reason()}.
node_env(Node, TimeoutMs) ->
    Vars = ["ERL_ZFLAGS", "ERL_FLAGS", "ERL_AFLAGS", "RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS"],
    Text = "Try = fun(I) -> try erlang:system_info(I) catch error:badarg -> null end end,"
           "{os:getpid(), init:get_arguments(), [os:getenv(V) || V <- Vars],"
           " [Try(I) || I <- [schedulers, schedulers_online, dirty_cpu_schedulers, dirty_cpu_schedulers_online,"
           "                  dirty_io_schedulers, scheduler_bind_type, scheduler_bindings, otp_release, version,"
           "                  emu_flavor, emu_type, logical_processors, logical_processors_online,"
           "                  logical_processors_available]]}.",
    {ok, Exprs} = beamlab_runtime_expr:parse(Text),
    try erpc:call(Node, erl_eval, exprs, [Exprs, [{'Vars', Vars}]], TimeoutMs) of
        {value, {OsPid, Args, Env, Info}, _} ->
            [S, Online, DC, DCOnline, DIO, Bind, Bindings, Release, Version, Flavor, EmuType, LP, LPOnline,
             LPAvailable] = Info,
            %% Only when that OS process is the node (it runs on this host).
            Cmdline = case file:read_file(filename:join(["/proc", OsPid, "cmdline"])) of
                          {ok, B} ->
                              Argv = [X || X <- binary:split(B, <<0>>, [global]), X =/= <<>>],
                              case local_host(Node) andalso Argv =/= [] andalso
                                  binary:match(hd(Argv), <<"beam">>) =/= nomatch of
                                  true -> Argv;
                                  false -> null
                              end;
                          _ -> null
                      end,
            {ok, #{node => atom_to_binary(Node),
                   os_pid => bin(OsPid),
                   schedulers => #{normal => S, online => Online, dirty_cpu => DC, dirty_cpu_online => DCOnline,
                                   dirty_io => DIO, bind_type => bin(Bind),
                                   bindings => [case X of unbound -> null; _ -> X end
                                                || X <- case Bindings of null -> []; _ -> tuple_to_list(Bindings) end]},
                   otp => #{release => bin(Release), erts => bin(Version), flavor => bin(Flavor),
                            emu_type => bin(EmuType)},
                   cpu => #{logical_processors => LP, logical_processors_online => LPOnline,
                            logical_processors_available => LPAvailable},
                   emulator_cmdline => Cmdline,
                   busy_wait => bin(busy_wait(Cmdline)),
                   init_arguments => [bin(io_lib:format("-~ts ~ts", [K, lists:join(" ", V)])) || {K, V} <- Args],
                   os_env => maps:from_list([{list_to_binary(V), case X of false -> null; _ -> bin(X) end}
                                             || {V, X} <- lists:zip(Vars, Env)])}}
    catch
        error:{erpc, R} -> {error, {watch, Node, R}};
        error:{exception, R, _} -> {error, {watch, Node, R}}
    end.

local_host(Node) ->
    [_, Host] = string:split(atom_to_list(Node), "@"),
    {ok, Me} = inet:gethostname(),
    lists:member(Host, ["localhost", "127.0.0.1", "::1", Me, net_adm:localhost()])
        orelse lists:prefix(Me ++ ".", Host).

%% The busy-wait setting as the emulator was started (+sbwt), the VM's
%% default otherwise.
busy_wait(null) -> "unknown";
busy_wait(Cmdline) ->
    %% erl passes `+sbwt' as `-sbwt'; the last one given wins.
    Values = [V || {<<"-sbwt">>, V} <- lists:zip(Cmdline, tl(Cmdline) ++ [<<>>])],
    case Values of
        [] -> "default";
        _ -> lists:last(Values)
    end.
%% @doc Records `Node''s telemetry until `duration' ms have passed, the
%% node goes down or the run is interrupted (a subscriber of
%% `beamlab_runtime_interrupt' gets `{beamlab_interrupt, _}'; the caller
%% subscribes). Findings are printed as they are raised (with `print').
%% With `metrics', the node's figures are served there while it runs.
%% No call to the node outlasts `deadline' (monotonic ms; default the
%% duration plus {@link grace_ms/0}, less a second for what follows).
%% Returns the series (with `node_down' and its reason), the growth
%% findings on it and whether it was interrupted.
-spec watch(node(), watch_opts()) ->
          {ok, beamlab_runtime_telemetry:series(),
           #{interrupted := boolean(), findings := [beamlab_result:finding()]}} | {error, error_reason()}.
watch(Node, Opts) ->
    T0 = erlang:monotonic_time(millisecond),
    Until = case maps:get(duration, Opts, infinity) of
                infinity -> infinity;
                D -> T0 + D
            end,
    Deadline = maps:get(deadline, Opts, case Until of
                                            infinity -> infinity;
                                            _ -> Until + ?GRACE_MS - 1000
                                        end),
    Interval = maps:get(interval, Opts, 1000),
    Print = maps:get(print, Opts, true),
    case beamlab_runtime_telemetry:start(#{node => Node, interval => Interval,
                                          msacc => maps:get(msacc, Opts, false),
                                          top => maps:get(top, Opts, 5),
                                          print => Print,
                                          system_monitor => maps:get(system_monitor, Opts, false),
                                          deadline => Deadline,
                                          t0 => T0, notify => self()}) of
        {ok, Pid} ->
            Metrics = case maps:get(metrics, Opts, undefined) of
                          undefined -> undefined;
                          Server ->
                              Board = beamlab_sut_metrics:new(Node),
                              ok = beamlab_runtime_metrics_board:serve(Server, collector_name(Node), Board),
                              {Server, Board}
                      end,
            Growth = beamlab_sut_growth:new(#{interval => Interval,
                                              limits => maps:get(limits, beamlab_runtime_telemetry:info(Pid))}),
            %% A sampler that dies (for any reason but the node going
            %% down, which it reports) ends the watch at once.
            Mon = erlang:monitor(process, Pid),
            L0 = #{pid => Pid, mon => Mon, until => Until, growth => Growth, print => Print,
                   metrics => Metrics, node => Node, on_finding => maps:get(on_finding, Opts, none)},
            {Ended, L} = try loop(L0)
                         after
                             case Metrics of
                                 undefined -> ok;
                                 {S, B} -> beamlab_runtime_metrics_board:withdraw(S, collector_name(Node), B)
                             end
                         end,
            Finished = case Ended of
                           {lost, Why} -> {error, Why};
                           _ -> beamlab_runtime_telemetry:finish(Pid, Mon)
                       end,
            %% The last sample (taken at the stop) raises its findings live
            %% too; the metrics are withdrawn and a capture would come too
            %% late, so it is printed only.
            ok = tail(L#{metrics := undefined, on_finding := none}),
            flush(Pid),
            case Finished of
                {ok, Series} ->
                    {ok, Series, #{interrupted => Ended =:= true, findings => beamlab_sut_growth:findings(Series)}};
                {error, Reason} ->
                    {error, {sampler_lost, Node, Reason}}
            end;
        {error, {watch, _, _} = E} -> {error, E};
        {error, R} -> {error, {watch, Node, R}}
    end.

%% Samples, silences and the end of the watch, as they come; how it ended,
%% with the state the samples left.
loop(L = #{pid := Pid, mon := Mon, until := Until, metrics := Metrics}) ->
    Wait = case Until of
               infinity -> infinity;
               _ -> max(0, Until - erlang:monotonic_time(millisecond))
           end,
    receive
        {beamlab_telemetry_sample, Pid, S} ->
            loop(sample(S, L));
        {beamlab_telemetry_silent, Pid, _} ->
            ok = publish(Metrics, [{up, false}]),
            loop(L);
        {beamlab_telemetry_answering, Pid, _} ->
            ok = publish(Metrics, [{up, true}]),
            loop(L);
        {beamlab_telemetry_down, Pid, _} -> {false, L};
        {beamlab_interrupt, _} -> {true, L};
        {'DOWN', Mon, process, Pid, Why} -> {{lost, Why}, L}
    after Wait -> {false, L}
    end.

%% A sample's new findings: printed live, given to the caller's function,
%% published with the sample.
sample(S, L = #{growth := G, print := Print, metrics := Metrics}) ->
    {New0, G1} = beamlab_sut_growth:step(S, G),
    New = [beamlab_sut_growth:with_capture_command(maps:get(node, L), F) || F <- New0],
    _ = Print andalso io:put_chars(standard_error, [beamlab_sut_growth:live_line(F) || F <- New]),
    ok = notify(maps:get(on_finding, L), New),
    ok = publish(Metrics, [{sample, S} | [{findings, New} || New =/= []]]),
    L#{growth := G1}.

%% The samples that came after the loop ended, the sampler's last among
%% them.
tail(L = #{pid := Pid}) ->
    receive
        {beamlab_telemetry_sample, Pid, S} -> tail(sample(S, L))
    after 0 -> ok
    end.

%% The caller's function gets each new finding (watch --capture).
notify(none, _) -> ok;
notify(_, []) -> ok;
notify(Fun, New) ->
    _ = Fun(New),
    ok.

publish(undefined, _) ->
    ok;
publish({_, Board}, Updates) ->
    lists:foreach(fun(U) -> ok = beamlab_sut_metrics:publish(Board, U) end, Updates).

collector_name(Node) ->
    list_to_atom("watch " ++ atom_to_list(Node)).

%% The messages of the last sample (taken when stopping).
flush(Pid) ->
    receive
        {beamlab_telemetry_sample, Pid, _} -> flush(Pid);
        {beamlab_telemetry_silent, Pid, _} -> flush(Pid);
        {beamlab_telemetry_answering, Pid, _} -> flush(Pid);
        {beamlab_telemetry_down, Pid, _} -> flush(Pid)
    after 0 -> ok
    end.

%% @doc One line for each error of this module.
-spec format_error(error_reason()) -> iolist().
format_error(Reason) ->
    beamlab_format_reason:line(fun error_line/1, Reason).

error_line({bad_node, Name}) ->
    io_lib:format("'~ts' is not a node name (name@host)", [Name]);
error_line({no_distribution, R}) when is_list(R) ->
    io_lib:format("cannot start distribution: ~ts", [R]);
error_line({no_distribution, R}) ->
    io_lib:format("cannot start distribution: ~0tp (is epmd running?)", [R]);
error_line({unreachable, Node, R}) ->
    io_lib:format("~ts is unreachable: ~ts", [Node, reason(R)]);
error_line({not_running, Node}) ->
    io_lib:format("no node ~ts is running (its host's epmd does not know the name)", [Node]);
error_line({refused, Node}) ->
    io_lib:format("~ts refused the connection: wrong cookie? (give it with --cookie)", [Node]);
error_line({no_answer, Node, Ms}) ->
    io_lib:format("~ts did not answer within ~b s (frozen, stopped or overloaded?)", [Node, Ms div 1000]);
error_line({watch, _, _} = E) ->
    beamlab_runtime_telemetry:format_error(E);
error_line({sampler_lost, Node, Why}) ->
    io_lib:format("watching ~ts: sampling stopped during the watch (~0tp); "
                  "its figures are the lines printed so far", [Node, Why]);
error_line(Other) ->
    %% (a reason of no kind above: printed, never raised)
    beamlab_format_reason:term(Other).

reason(nxdomain) -> "no such host";
reason(econnrefused) -> "connection refused";
reason(R) when is_atom(R) -> inet:format_error(R);
reason(R) -> io_lib:format("~0tp", [R]).

bin(null) -> null;
bin(B) when is_binary(B) -> B;
bin(A) when is_atom(A) -> atom_to_binary(A);
bin(L) -> unicode:characters_to_binary(L).
