%%% @doc Watching a running node (the system under test) from outside: this
%%% VM joins its cluster as a hidden node that listens for nobody, and
%%% reads the node with OTP functions only (`erpc' calls to `erlang',
%%% `init', `os' and `erl_eval'), so no beamlab code is ever loaded there.
%%%
%%% {@link connect/2} makes the connection and turns every way it can fail
%%% into one reason; {@link node_env/1} reads the node's own view of its
%%% VM (schedulers, bind type, flavour, emulator arguments), which is how
%%% a matrix proves the flags a broker runs with; {@link watch/2} records
%%% the node's telemetry series (`beamlab_runtime_telemetry' with `node')
%%% for a duration or until the node goes down or the run is interrupted.
-module(beamlab_sut_watch).

-export([connect/2, node_env/1, watch/2, format_error/1]).

-type watch_opts() :: #{duration => pos_integer() | infinity,  % ms
                        interval => pos_integer(), msacc => boolean(),
                        top => non_neg_integer(), print => boolean()}.
-type error_reason() :: {bad_node, string()} | {no_distribution, term()}
                      | {unreachable, node(), term()} | {not_running, node()}
                      | {refused, node()} | {watch, node(), term()}.
-export_type([watch_opts/0, error_reason/0]).

%% @doc Connects to `Node' (a string `name@host'), starting distribution
%% for this VM when needed: a hidden node, not listening, in the name
%% domain of `Node' (long names when its host has a dot or is an address).
%% `Cookie' is used for that node only.
-spec connect(string() | node(), string() | undefined) -> {ok, node()} | {error, error_reason()}.
connect(Node, Cookie) when is_atom(Node) ->
    connect(atom_to_list(Node), Cookie);
connect(Name, Cookie) ->
    case string:split(Name, "@") of
        [[_ | _] = Alive, [_ | _] = Host] ->
            case lists:member($@, Host) orelse not valid_alive(Alive) of
                true -> {error, {bad_node, Name}};
                false -> connect(list_to_atom(Name), Host, Cookie)
            end;
        _ -> {error, {bad_node, Name}}
    end.

valid_alive(A) ->
    lists:all(fun(C) -> (C >= $a andalso C =< $z) orelse (C >= $A andalso C =< $Z)
                            orelse (C >= $0 andalso C =< $9) orelse C =:= $_ orelse C =:= $-
              end, A).

connect(Node, Host, Cookie) ->
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
            %% Hidden even when this VM is a visible node already.
            Up = try net_kernel:hidden_connect_node(Node)
                 after ok = logger:set_primary_config(level, Level)
                 end,
            case Up of
                true -> {ok, Node};
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

%% @doc The node's own view of its VM, read over distribution: schedulers
%% (with bind type and bindings), flavour, release, the emulator's command
%% line (from /proc when the node runs on this host: the `+' flags are
%% only there) and the relevant environment variables. The shape follows
%% `beamlab_env:report()' where the two overlap (`schedulers', `otp').
-spec node_env(node()) -> {ok, map()} | {error, error_reason()}.
node_env(Node) ->
    try
        Get = fun(I) -> erpc:call(Node, erlang, system_info, [I], 10000) end,
        Try = fun(I) ->
                      try Get(I) catch error:{exception, _, _} -> null end
              end,
        OsPid = erpc:call(Node, os, getpid, [], 10000),
        Args = erpc:call(Node, init, get_arguments, [], 10000),
        Env = [{list_to_binary(V), case erpc:call(Node, os, getenv, [V], 10000) of false -> null; X -> bin(X) end}
               || V <- ["ERL_ZFLAGS", "ERL_FLAGS", "ERL_AFLAGS", "RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS"]],
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
               schedulers => #{normal => Get(schedulers), online => Get(schedulers_online),
                               dirty_cpu => Try(dirty_cpu_schedulers),
                               dirty_cpu_online => Try(dirty_cpu_schedulers_online),
                               dirty_io => Try(dirty_io_schedulers),
                               bind_type => atom_to_binary(Get(scheduler_bind_type)),
                               bindings => [case B of unbound -> null; _ -> B end
                                            || B <- tuple_to_list(Get(scheduler_bindings))]},
               otp => #{release => bin(Get(otp_release)), erts => bin(Get(version)),
                        flavor => bin(Try(emu_flavor)), emu_type => bin(Try(emu_type))},
               cpu => #{logical_processors => Try(logical_processors),
                        logical_processors_online => Try(logical_processors_online),
                        logical_processors_available => Try(logical_processors_available)},
               emulator_cmdline => Cmdline,
               busy_wait => bin(busy_wait(Cmdline)),
               init_arguments => [bin(io_lib:format("-~ts ~ts", [K, lists:join(" ", V)])) || {K, V} <- Args],
               os_env => maps:from_list(Env)}}
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
%% subscribes). Returns the series (with `node_down' and its reason) and
%% whether it was interrupted.
-spec watch(node(), watch_opts()) ->
          {ok, beamlab_runtime_telemetry:series(), #{interrupted := boolean()}} | {error, error_reason()}.
watch(Node, Opts) ->
    T0 = erlang:monotonic_time(millisecond),
    case beamlab_runtime_telemetry:start(#{node => Node, interval => maps:get(interval, Opts, 1000),
                                          msacc => maps:get(msacc, Opts, false),
                                          top => maps:get(top, Opts, 5),
                                          print => maps:get(print, Opts, true),
                                          t0 => T0, notify => self()}) of
        {ok, Pid} ->
            Timeout = case maps:get(duration, Opts, infinity) of
                          infinity -> infinity;
                          D -> D
                      end,
            Interrupted = receive
                              {beamlab_telemetry_down, Pid, _} -> false;
                              {beamlab_interrupt, _} -> true
                          after Timeout -> false
                          end,
            Series = beamlab_runtime_telemetry:stop(Pid),
            {ok, Series, #{interrupted => Interrupted}};
        {error, {watch, _, _} = E} -> {error, E};
        {error, R} -> {error, {watch, Node, R}}
    end.

%% @doc One line for each error of this module.
-spec format_error(error_reason()) -> iolist().
format_error({bad_node, Name}) ->
    io_lib:format("'~ts' is not a node name (name@host)", [Name]);
format_error({no_distribution, R}) when is_list(R) ->
    io_lib:format("cannot start distribution: ~ts", [R]);
format_error({no_distribution, R}) ->
    io_lib:format("cannot start distribution: ~0tp (is epmd running?)", [R]);
format_error({unreachable, Node, R}) ->
    io_lib:format("~ts is unreachable: ~ts", [Node, reason(R)]);
format_error({not_running, Node}) ->
    io_lib:format("no node ~ts is running (its host's epmd does not know the name)", [Node]);
format_error({refused, Node}) ->
    io_lib:format("~ts refused the connection: wrong cookie? (give it with --cookie)", [Node]);
format_error({watch, _, _} = E) ->
    beamlab_runtime_telemetry:format_error(E).

reason(nxdomain) -> "no such host";
reason(econnrefused) -> "connection refused";
reason(R) when is_atom(R) -> inet:format_error(R);
reason(R) -> io_lib:format("~0tp", [R]).

bin(null) -> null;
bin(B) when is_binary(B) -> B;
bin(A) when is_atom(A) -> atom_to_binary(A);
bin(L) -> unicode:characters_to_binary(L).
