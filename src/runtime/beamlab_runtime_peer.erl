%%% @doc Fresh VMs with beamlab's code loaded, for isolated jobs (`run -i'),
%%% the matrix of VM configurations, the second VM of ping-pong and the
%%% load-generator nodes of `amqp --nodes'.
%%%
%%% A VM is started with OTP's `peer' module. By default it talks to us over
%%% its standard input/output (no distribution, no epmd); with
%%% `dist => true' it is a distributed node on 127.0.0.1 (both sides use
%%% loopback only). beamlab's modules are sent to it as binaries, so this
%%% works from the escript, whose code lives in an archive; a caller that
%%% starts many VMs writes them once ({@link write_code/1}) and each VM
%%% reads them itself (`load').
%%%
%%% ```
%%% {ok, Vm} = beamlab_runtime_peer:start(#{args => ["+S", "1"]}),
%%% 1 = beamlab_runtime_peer:call(Vm, erlang, system_info, [schedulers_online]),
%%% beamlab_runtime_peer:stop(Vm).
%%% '''
-module(beamlab_runtime_peer).

-compile({no_auto_import, [node/1]}).

-export([home/0]).
-export([start/1, stop/1, kill/1, interrupt_grace/0, call/4, call/5, interrupt/1, run/3, node/1,
         split_args/1, parse_args/1, parse_words/1, ensure_dist/0, start_dist/1, start_hidden/1, stop_dist/0, release_epmd/0,
         cookie/1, set_cookie/2, flavor_args/1, write_code/1, store/2, format_error/1]).

%% Polls of 10 ms for a stopped distribution's name to go (5 s).
-define(STOP_POLLS, 500).

-type opts() :: #{args => [string()],          % emulator arguments, one per element
                  exec => file:filename(),     % an `erl' executable (another OTP install)
                  wrapper => [string()],       % e.g. ["taskset", "-c", "0"]
                  dist => boolean(),
                  paths => [file:filename()],  % extra code paths (-pa)
                  env => [{string(), string()}],
                  flavor => beamlab_runtime_otp:flavor(), % emulator flavour, proven after start
                  timeout => timeout(),
                  deadline => timeout(),       % run/3: ms for the call (default infinity)
                  %% load beamlab's modules (default true), or read them
                  %% from the copies write_code/1 made (in name order)
                  load => boolean() | [stored()],
                  %% modules loaded before anything runs, one after the
                  %% other in this order (after beamlab's), each read
                  %% from its copy as the file it was built as: {Module,
                  %% File, Copy}, see preload/2
                  preload => [stored()]}.
%% a module, the file it was built as, the copy a new VM reads it from
-type stored() :: {module(), file:filename(), file:filename()}.
-type vm() :: #{peer := pid(), node := node(), connection := standard_io | dist,
                os_pid => string()}.
-type call_spec() :: {module(), atom(), [term()]}.
-type run_out() :: #{exit := integer(), result := term(), env := term()}.
-type run_error() :: {vm_start, term()} | {vm_failed, error | exit | throw, term()}
                   | {vm_unresponsive, pos_integer()} | {vm_deadline, pos_integer()}.
-type dist_opts() :: #{name := string(),              % name@host: host is a local address
                       cookie => string(),
                       port => inet:port_number(),      % fixed distribution port
                       epmd => required | optional}.    % must epmd answer on the address?
-type dist_info() :: #{node := node(), address := inet:ip_address(), port := inet:port_number(),
                       epmd := boolean()}.
-export_type([opts/0, stored/0, vm/0, call_spec/0, run_out/0, run_error/0, dist_opts/0, dist_info/0]).

-define(START_TIMEOUT, 30000).

%% @doc Starts a VM. Fails with a reason {@link format_error/1} explains
%% (a bad `erl' path, emulator arguments the VM refused, a wrapper that is
%% not installed).
-spec start(opts()) -> {ok, vm()} | {error, term()}.
start(Opts) ->
    try
        Dist = maps:get(dist, Opts, false),
        case Dist andalso ensure_dist() of
            {error, NoDist} -> throw({beamlab_runtime_peer, NoDist});
            _ -> ok
        end,
        PeerOpts = peer_opts(flavor_env(Opts), Dist),
        Started = boot(PeerOpts),
        Stderr = read_stderr(PeerOpts),
        case Started of
            {ok, Pid, Node} when Dist ->
                ok = share_cookie(Pid),
                set_up(#{peer => Pid, node => Node, connection => dist}, Opts, PeerOpts);
            {ok, Pid, _NoNode} ->
                set_up(#{peer => Pid, node => undefined, connection => standard_io}, Opts, PeerOpts);
            {ok, Pid} ->
                set_up(#{peer => Pid, node => undefined, connection => standard_io}, Opts, PeerOpts);
            {error, interrupted} -> {error, interrupted};
            {error, Reason} -> {error, {start_failed, describe(Opts), first_line(Stderr, Reason)}}
        end
    catch
        throw:{beamlab_runtime_peer, Error} -> {error, Error};
        exit:Exit -> {error, {start_failed, describe(Opts), Exit}};
        error:Error -> {error, {start_failed, describe(Opts), Error}}
    end.

%% peer:start/1 in a process of its own, so that an interrupt reaching
%% the caller (subscribed to them) ends the boot at once instead of after
%% the boot timeout. A VM that does not boot (interrupted, timed out,
%% failed) is killed with everything in its session: an `erl' that hangs
%% (a wrapper script that sleeps) and its children never outlive us. The
%% shell that execs the VM wrote its pid, which is its session's and
%% process group's (OTP starts port programs with setsid).
boot(PeerOpts) ->
    Self = self(),
    Ref = make_ref(),
    {Pid, MRef} = spawn_monitor(fun() ->
                                        Self ! {Ref, try peer:start(PeerOpts)
                                                     catch exit:BootExit -> {error, BootExit}
                                                     end}
                                end),
    case await_boot(Pid, MRef, Ref) of
        {ok, _, _} = Ok -> Ok;
        {ok, _} = Ok -> Ok;
        {error, _} = E ->
            kill_session(pid_file(PeerOpts)),
            E
    end.

await_boot(Pid, MRef, Ref) ->
    receive
        {Ref, R} ->
            erlang:demonitor(MRef, [flush]),
            R;
        {'DOWN', MRef, process, Pid, Why} ->
            {error, Why};
        {beamlab_interrupt, _} = Msg ->
            exit(Pid, kill),
            receive {'DOWN', MRef, process, Pid, _} -> ok end,
            %% (the caller's own loop sees it too)
            self() ! Msg,
            {error, interrupted}
    end.

%% The booted VM proven and given its code, in a process of its own as
%% the boot: under load this takes tens of seconds (the flavour check, a
%% few MB of code sent and loaded), and an interrupt must end it at once
%% too, the VM with it, not after it (#35: a matrix stopped by SIGTERM
%% at a load average of 20 exited 45-52 s later).
set_up(Vm, Opts, PeerOpts) ->
    Self = self(),
    Ref = make_ref(),
    {Pid, MRef} = spawn_monitor(fun() -> Self ! {Ref, {proven, proven(Vm, Opts)}} end),
    case await_boot(Pid, MRef, Ref) of
        {proven, Result} ->
            Result;
        {error, Why} ->
            %% Interrupted, or the set-up process died: the VM goes too.
            kill_session(pid_file(PeerOpts)),
            stop(Vm),
            case Why of
                interrupted -> {error, interrupted};
                _ -> {error, {start_failed, describe(Opts), Why}}
            end
    end.

pid_file(#{exec := {_, [_, _, File | _]}}) ->
    File ++ ".pid".

kill_session(PidFile) ->
    case file:read_file(PidFile) of
        {ok, Bin} ->
            case string:to_integer(string:trim(Bin)) of
                {N, <<>>} when is_integer(N), N > 1 -> kill_group(integer_to_list(N));
                _ -> ok
            end;
        {error, _} -> ok
    end.

kill_group(OsPid) ->
    beamlab_runtime_signal:send_tree(OsPid, "KILL").

%% @doc The `erl' flags that start the flavour `Opts' asks for (none
%% without one) from its `exec' (default: this VM's installation); an
%% error when that installation lacks it.
-spec flavor_args(opts()) -> {ok, [string()]} | {error, beamlab_runtime_otp:error_reason()}.
flavor_args(#{flavor := F} = Opts) ->
    Erl = case maps:find(exec, Opts) of
              {ok, E} -> E;
              %% (no erl beside this VM nor on the PATH: install/1 says so)
              error -> try default_erl() catch throw:{?MODULE, {no_executable, N}} -> N end
          end,
    case beamlab_runtime_otp:install(Erl) of
        {ok, I} -> beamlab_runtime_otp:flavor_args(I, F);
        {error, _} = Error -> Error
    end;
flavor_args(_) ->
    {ok, []}.

%% A flavour is asked for through ERL_FLAGS, which erlexec reads: the VMs
%% the new VM starts in turn (the second VM of ping-pong) inherit it.
flavor_env(#{flavor := _} = Opts) ->
    Args = case flavor_args(Opts) of
               {ok, A} -> A;
               {error, R} -> throw({beamlab_runtime_peer, {otp, R}})
           end,
    Env = maps:get(env, Opts, []),
    Old = case lists:keyfind("ERL_FLAGS", 1, Env) of
              {_, V} -> V;
              false -> os:getenv("ERL_FLAGS", "")
          end,
    Opts#{env => [{"ERL_FLAGS", string:trim(string:join(Args ++ [Old], " "))}
                  | lists:keydelete("ERL_FLAGS", 1, Env)]};
flavor_env(Opts) ->
    Opts.

%% The VM runs the flavour asked for, as it says itself.
proven(Vm, #{flavor := F} = Opts) ->
    case catch call(Vm, erlang, system_info, [emu_flavor], 60000) of
        F -> loaded(Vm, Opts);
        Got -> stop(Vm), {error, {flavor_not_in_effect, F, Got}}
    end;
proven(Vm, Opts) ->
    loaded(Vm, Opts).

%% @doc Stops a VM (and waits until it is gone).
-spec stop(vm()) -> ok.
stop(#{peer := Pid}) ->
    try peer:stop(Pid)
    catch exit:_ -> ok
    end.

%% @doc Ends a VM that stopped answering (frozen, stuck): SIGKILL to its
%% OS process, then {@link stop/1}, which no longer waits for it.
-spec kill(vm()) -> ok.
kill(#{os_pid := OsPid} = Vm) ->
    %% Its session too: what it started (a wrapper's children) goes with it.
    ok = kill_group(OsPid),
    stop(Vm);
kill(Vm) ->
    stop(Vm).

%% @doc Calls `M:F(A)' in the VM; raises what the call raised there.
-spec call(vm(), module(), atom(), [term()]) -> term().
call(Vm, M, F, A) ->
    call(Vm, M, F, A, infinity).

%% @doc As {@link call/4} with a timeout in milliseconds.
-spec call(vm(), module(), atom(), [term()], timeout()) -> term().
call(#{connection := dist, node := Node}, M, F, A, Timeout) ->
    erpc:call(Node, M, F, A, Timeout);
call(#{peer := Pid}, M, F, A, Timeout) ->
    peer:call(Pid, M, F, A, Timeout).

%% @doc Runs one command in a fresh VM started with `Opts': calls `Main',
%% which must return `{ExitCode, Result}', then `Env' (typically the VM's
%% own environment report, taken after the command so it shows what the
%% command really ran with), and stops the VM whatever happened. Neither
%% call is known here: the caller names them.
%%
%% A `{beamlab_interrupt, _}' message reaching the caller while `Main'
%% runs is passed on to the VM ({@link beamlab_runtime_interrupt:simulate/0}
%% there), so the command stops early and returns what it measured; the
%% message is put back in the caller's mailbox afterwards. A VM that has
%% not returned {@link interrupt_grace/0} ms after that (frozen, stuck) is
%% killed: `{error, {vm_unresponsive, Ms}}'.
-spec run(opts(), call_spec(), call_spec()) -> {ok, run_out()} | {error, run_error()}.
run(Opts, {M, F, A}, {EM, EF, EA}) ->
    case start(Opts) of
        {ok, Vm} ->
            Deadline = case maps:get(deadline, Opts, infinity) of
                           infinity -> infinity;
                           Ms -> erlang:monotonic_time(millisecond) + Ms
                       end,
            try
                {Code, Result} = interruptible_call(Vm, M, F, A, Deadline),
                Env = call(Vm, EM, EF, EA, 60000),
                {ok, #{exit => Code, result => Result, env => Env}}
            catch
                throw:{?MODULE, unresponsive} ->
                    kill(Vm),
                    {error, {vm_unresponsive, interrupt_grace()}};
                throw:{?MODULE, deadline} ->
                    kill(Vm),
                    {error, {vm_deadline, maps:get(deadline, Opts)}};
                Class:Reason -> {error, {vm_failed, Class, Reason}}
            after
                stop(Vm)
            end;
        {error, Reason} ->
            {error, {vm_start, Reason}}
    end.

interruptible_call(Vm, M, F, A, Deadline) ->
    Self = self(),
    Ref = make_ref(),
    {Pid, MRef} = spawn_monitor(fun() ->
                                        Self ! {Ref, try {ok, call(Vm, M, F, A, infinity)}
                                                     catch C:E -> {raised, C, E}
                                                     end}
                                end),
    Reply = await_call(Vm, Pid, MRef, Ref, none, Deadline),
    case Reply of
        {{ok, V}, _} -> V;
        {{raised, C, E}, _} -> erlang:raise(C, E, [])
    end.

await_call(Vm, Pid, MRef, Ref, Held, Deadline) ->
    receive
        {Ref, R} ->
            erlang:demonitor(MRef, [flush]),
            Held =/= none andalso (self() ! Held),
            {R, Held};
        {'DOWN', MRef, process, Pid, Why} ->
            Held =/= none andalso (self() ! Held),
            {{raised, exit, Why}, Held};
        {beamlab_interrupt, _} = Msg when Held =:= none ->
            %% Passed on once; a second interrupt is the caller's business
            %% (in the command line it stops beamlab at once).
            ok = interrupt(Vm),
            await_call(Vm, Pid, MRef, Ref, Msg, Deadline)
    after case Held of
              none when Deadline =:= infinity -> infinity;
              none -> max(0, Deadline - erlang:monotonic_time(millisecond));
              _ -> interrupt_grace()
          end ->
            exit(Pid, kill),
            case Held of
                none -> throw({?MODULE, deadline});
                _ ->
                    self() ! Held,
                    throw({?MODULE, unresponsive})
            end
    end.

%% @doc How long a VM that was passed an interrupt may take to return
%% before it is killed (a bounded end whatever the VM does).
-spec interrupt_grace() -> pos_integer().
interrupt_grace() ->
    10000.

%% @doc Interrupts what runs in the VM as Ctrl-C would
%% ({@link beamlab_runtime_interrupt:simulate/0} there): a measurement
%% stops and returns what it measured. Does not wait.
-spec interrupt(vm()) -> ok.
interrupt(Vm) ->
    _ = (catch cast(Vm, beamlab_runtime_interrupt, simulate, [])),
    ok.

cast(#{connection := dist, node := Node}, M, F, A) ->
    erpc:cast(Node, M, F, A);
cast(#{peer := Pid}, M, F, A) ->
    peer:cast(Pid, M, F, A).

%% @doc The node name of a distributed VM (`undefined' for standard_io).
-spec node(vm()) -> node() | undefined.
node(#{node := Node}) ->
    Node.

%% @doc Splits a user's emulator-argument string (`"+S 2 +sbt db"') into
%% arguments. Single and double quotes group words.
-spec split_args(string()) -> [string()].
split_args(S) ->
    split(S, [], [], none).

%% @doc As {@link split_args/1}, checked: an unterminated quote, or a
%% first word that is not an emulator flag (`+S', `-eval': `erl' would
%% take it as a plain argument and ignore the flags after it), is an error.
-spec parse_args(string()) ->
          {ok, [string()]} | {error, {unterminated_quote, char()} | {not_a_flag, string()}}.
parse_args(S) ->
    case parse_words(S) of
        {ok, [[C | _] | _] = Args} when C =:= $-; C =:= $+ -> {ok, Args};
        {ok, []} -> {ok, []};
        {ok, [First | _]} -> {error, {not_a_flag, First}};
        {error, _} = E -> E
    end.

%% @doc As {@link split_args/1}, with an unterminated quote an error (for
%% a command line such as a wrapper's).
-spec parse_words(string()) -> {ok, [string()]} | {error, {unterminated_quote, char()}}.
parse_words(S) ->
    case unterminated(S, none) of
        {true, Q} -> {error, {unterminated_quote, Q}};
        false -> {ok, split_args(S)}
    end.

unterminated([], none) -> false;
unterminated([], Q) -> {true, Q};
unterminated([Q | T], none) when Q =:= $"; Q =:= $' -> unterminated(T, Q);
unterminated([Q | T], Q) -> unterminated(T, none);
unterminated([_ | T], Q) -> unterminated(T, Q).

%% @doc Makes this VM a hidden node that only connects out (it does not
%% listen), to reach a node named in the `Domain' it uses: long names
%% (its host has a dot or is an address) as `beamlab_<ospid>@127.0.0.1',
%% which needs no resolvable host name of our own, short names as
%% `beamlab_<ospid>'. A VM already distributed in the other domain cannot
%% reach it.
-spec start_hidden(longnames | shortnames) -> ok | {error, {no_distribution, term()}}.
start_hidden(Domain) ->
    case {node(), net_kernel:longnames()} of
        {nonode@nohost, _} ->
            start_hidden_home(Domain);
        {_, ignored} ->
            %% (a name and no net_kernel: a stop still under way)
            case await_nonode(?STOP_POLLS) of
                ok -> start_hidden_home(Domain);
                timeout -> {error, {no_distribution, "this VM's distribution is stopping and does not end"}}
            end;
        {_, Long} when Long =:= (Domain =:= longnames) -> ok;
        {_, true} -> {error, {no_distribution, "this VM uses long names; the node has a short one"}};
        {_, false} -> {error, {no_distribution, "this VM uses short names; the node has a long one"}}
    end.

start_hidden_home(Domain) ->
    case home() of
        {error, no_home} ->
            {error, {no_distribution, no_home_text()}};
        {ok, _} ->
            Self = "beamlab_" ++ os:getpid(),
            Name = case Domain of
                       longnames -> list_to_atom(Self ++ "@127.0.0.1");
                       shortnames -> list_to_atom(Self)
                   end,
            case net_kernel:start(Name, #{name_domain => Domain, hidden => true, dist_listen => false}) of
                {ok, _} -> ok;
                {error, {already_started, _}} -> ok;
                {error, R} -> {error, {no_distribution, R}}
            end
    end.

%% @doc A distribution cookie as the atom Erlang wants, under the secret
%% policy (docs/reliability.md "Secrets"): an empty cookie is refused (a
%% node with one lets anyone who also gives an empty cookie run any code
%% on it; an unset `$COOKIE' in a script gives `--cookie ""'), and so is
%% one longer than an atom can be.
-spec cookie(unicode:chardata()) -> {ok, atom()} | {error, {bad_cookie, empty | too_long}}.
cookie(Cookie) ->
    case unicode:characters_to_list(Cookie) of
        [] -> {error, {bad_cookie, empty}};
        L when is_list(L), length(L) =< 255 -> {ok, list_to_atom(L)};
        L when is_list(L) -> {error, {bad_cookie, too_long}};
        _ -> {error, {bad_cookie, empty}}
    end.

%% @doc Sets the cookie used with `Node' (this node's own cookie when
%% `Node' is this node) after {@link cookie/1} accepted it.
-spec set_cookie(node(), unicode:chardata()) -> ok | {error, {bad_cookie, empty | too_long}}.
set_cookie(Node, Cookie) ->
    case cookie(Cookie) of
        {ok, C} -> true = erlang:set_cookie(Node, C), ok;
        {error, _} = E -> E
    end.

%% The cookie this node ended up with must not be empty either: an
%% empty `-setcookie' among the emulator flags (ERL_FLAGS) gives one.
check_own_cookie() ->
    case erlang:get_cookie() of
        '' -> throw({beamlab_runtime_peer, {bad_cookie, empty_flag}});
        _ -> ok
    end.

%% @doc Makes this VM a distributed node on 127.0.0.1 (starting epmd on
%% loopback when none runs), unless it is one already; an error
%% ({@link format_error/1}) when the distribution cannot start.
-spec ensure_dist() -> ok | {error, {no_distribution, term()} | {bad_cookie, term()} | no_home}.
ensure_dist() ->
    case node() of
        nonode@nohost ->
            case home() of
                {error, no_home} -> {error, no_home};
                {ok, _} -> ensure_dist_here()
            end;
        _ ->
            ok
    end.

ensure_dist_here() ->
    _ = application:set_env(kernel, inet_dist_use_interface, {127, 0, 0, 1}),
    start_epmd(),
    Name = list_to_atom("beamlab_" ++ os:getpid() ++ "@127.0.0.1"),
    case net_kernel:start(Name, #{name_domain => longnames}) of
        {ok, _} ->
            try check_own_cookie()
            catch throw:{?MODULE, BadCookie} -> {error, BadCookie}
            end;
        {error, {already_started, _}} -> ok;
        {error, Reason} -> {error, {no_distribution, Reason}}
    end.

%% @doc Makes this VM the distributed node `name@host' on the interface
%% `host' names (an address or a name resolving to one of this machine's
%% addresses): the distribution listens there only (on `port' when given),
%% epmd is started on that address (plus loopback) when none answers there,
%% and the cookie is set. With `epmd => required' (a node others connect
%% to) an epmd that listens on loopback only is an error; a controller,
%% which only connects out, tolerates it (`epmd' is false in the result).
%% Without a call to this function, {@link ensure_dist/0} keeps everything
%% on 127.0.0.1.
-spec start_dist(dist_opts()) -> {ok, dist_info()} | {error, term()}.
start_dist(#{name := Name} = Opts) ->
    try
        Cookie = case maps:find(cookie, Opts) of
                     {ok, C0} ->
                         case cookie(C0) of
                             {ok, C} -> C;
                             {error, Bad} -> throw({beamlab_runtime_peer, Bad})
                         end;
                     error -> undefined
                 end,
        {Short, Ip} = dist_address(Name),
        Want = list_to_atom(Name),
        case node() of
            nonode@nohost -> ok = home_or_throw();
            Want -> ok;
            Other -> throw({beamlab_runtime_peer, {already_distributed, Other}})
        end,
        _ = application:set_env(kernel, inet_dist_use_interface, Ip),
        case maps:find(port, Opts) of
            {ok, P} ->
                _ = application:set_env(kernel, inet_dist_listen_min, P),
                _ = application:set_env(kernel, inet_dist_listen_max, P);
            error -> ok
        end,
        Epmd = start_epmd(Ip),
        Epmd orelse maps:get(epmd, Opts, optional) =:= optional orelse
            throw({beamlab_runtime_peer, {epmd_loopback_only, Ip}}),
        case node() of
            Want -> ok;
            _ ->
                %% The usual reasons it would fail, named before OTP logs
                %% them as a supervisor report.
                _ = [check_port_free(P, Ip) || {ok, P} <- [maps:find(port, Opts)]],
                case Epmd andalso erl_epmd:port_please(Short, Ip, 2000) of
                    {port, _, _} -> throw({beamlab_runtime_peer, {name_in_use, Name}});
                    _ -> ok
                end,
                %% Hidden: a controller and its nodes talk to whom they
                %% name, no global mesh (whose partition guard would cut a
                %% node off when controllers come and go).
                case quietly(fun() -> net_kernel:start(Want, #{name_domain => longnames,
                                                                hidden => true}) end) of
                    {ok, _} -> ok;
                    {error, Reason} -> throw({beamlab_runtime_peer, {dist_failed, Name, Reason}})
                end
        end,
        _ = Cookie =:= undefined orelse erlang:set_cookie(node(), Cookie),
        check_own_cookie(),
        Port = case erl_epmd:port_please(Short, {127, 0, 0, 1}) of
                   {port, Pt, _} -> Pt;
                   _ -> maps:get(port, Opts, 0)
               end,
        {ok, #{node => node(), address => Ip, port => Port, epmd => Epmd}}
    catch
        throw:{beamlab_runtime_peer, Error} -> {error, Error}
    end.

%% @doc Where Erlang keeps the node's cookie file: `{ok, Dir}', or
%% `{error, no_home}' when HOME is unset or empty and no `-setcookie' flag
%% was given. OTP's auth server then fails while distribution starts, in a
%% supervisor report and a crash report (#34): said before, in one line.
-spec home() -> {ok, string()} | {error, no_home}.
home() ->
    case {os:getenv("HOME"), init:get_argument(setcookie)} of
        {H, error} when H =:= false; H =:= "" -> {error, no_home};
        {H, _} when H =:= false; H =:= "" -> {ok, ""};
        {H, _} -> {ok, H}
    end.

home_or_throw() ->
    case home() of
        {ok, _} -> ok;
        {error, no_home} -> throw({beamlab_runtime_peer, no_home})
    end.

no_home_text() ->
    "HOME is not set, so Erlang can neither read nor create the node's cookie file "
    "($HOME/.erlang.cookie): set HOME (even with --cookie, the file is read first)".

%% OTP logs a distribution that does not start as three reports: they
%% are kept from the user, who gets one line.
quietly(Fun) ->
    Level = maps:get(level, logger:get_primary_config()),
    ok = logger:set_primary_config(level, none),
    try Fun()
    after ok = logger:set_primary_config(level, Level)
    end.

check_port_free(Port, Ip) ->
    case gen_tcp:listen(Port, [{ip, Ip}, {reuseaddr, true}]) of
        {ok, S} -> gen_tcp:close(S);
        {error, eaddrinuse} -> throw({beamlab_runtime_peer, {port_in_use, Port}});
        {error, eacces} -> throw({beamlab_runtime_peer, {port_denied, Port}});
        {error, _} -> ok  % left to net_kernel, which says why
    end.

%% name@host -> the name and the local address host stands for.
dist_address(Name) ->
    case string:split(Name, "@") of
        [[_ | _] = Short, [_ | _] = Host] ->
            valid_alive(Short) orelse throw({beamlab_runtime_peer, {bad_node_name, Name}}),
            Ip = case inet:parse_address(Host) of
                     {ok, A} -> A;
                     {error, _} ->
                         case inet:getaddr(Host, inet) of
                             {ok, A} -> A;
                             {error, _} -> throw({beamlab_runtime_peer, {unknown_host, Host}})
                         end
                 end,
            lists:member(Ip, local_addresses()) orelse
                throw({beamlab_runtime_peer, {not_local, Host, Ip}}),
            {Short, Ip};
        _ ->
            throw({beamlab_runtime_peer, {bad_node_name, Name}})
    end.

%% The part before the @: what OTP accepts (letters, digits, _ and -).
valid_alive(A) ->
    length(A) =< 255 andalso
        lists:all(fun(C) -> (C >= $a andalso C =< $z) orelse (C >= $A andalso C =< $Z)
                                orelse (C >= $0 andalso C =< $9) orelse C =:= $_ orelse C =:= $-
                  end, A).

local_addresses() ->
    case inet:getifaddrs() of
        {ok, Ifs} -> [A || {_, Props} <- Ifs, {addr, A} <- Props];
        {error, _} -> []
    end.

%% @doc One line for an error returned by this module.
-spec format_error(term()) -> iolist().
format_error(Reason) ->
    beamlab_format_reason:line(fun error_line/1, Reason).

error_line(interrupted) ->
    "interrupted while the VM was starting (it was stopped)";
error_line({start_failed, What, Reason}) ->
    io_lib:format("could not start a VM (~ts): ~ts", [What, reason_text(Reason)]);
error_line({otp, Reason}) ->
    beamlab_runtime_otp:format_error(Reason);
error_line({flavor_not_in_effect, F, Got}) ->
    io_lib:format("-emu_flavor ~s asked, the VM runs the ~0tP flavour", [F, Got, 5]);
error_line({stderr_file, Reason}) ->
    ["could not create a private directory for the VM's log: ",
     beamlab_runtime_file:format_error(Reason)];
error_line({no_executable, Exe}) ->
    io_lib:format("executable not found: ~ts", [Exe]);
error_line(no_home) ->
    no_home_text();
error_line({no_distribution, Reason}) when is_list(Reason) ->
    Reason;
error_line({no_distribution, Reason}) ->
    io_lib:format("could not start Erlang distribution on 127.0.0.1 (is epmd available?): ~0tp",
                  [Reason]);
error_line({load_failed, {exit, {Why, {gen_server, call, _}}}}) ->
    %% The call's arguments hold every module as a binary: never print them.
    io_lib:format("the new VM stopped before beamlab's code was loaded (~0tP): do the emulator "
                  "arguments stop it (e.g. -eval 'halt()')?", [Why, 6]);
error_line({bad_cookie, empty}) ->
    "an empty distribution cookie is refused: a node with one lets anyone run any code on it "
    "(an unset variable in a script?)";
error_line({bad_cookie, empty_flag}) ->
    "the emulator flags set an empty distribution cookie (-setcookie with an empty value, "
    "e.g. in ERL_FLAGS): anyone giving an empty cookie could run any code on this node";
error_line({bad_cookie, too_long}) ->
    "the distribution cookie is longer than 255 characters";
error_line({already_distributed, Node}) ->
    io_lib:format("this VM is already the distributed node ~s", [Node]);
error_line({bad_node_name, Name}) ->
    io_lib:format("'~ts' is not a node name (name@host: letters, digits, _ and - before the @, "
                  "host an address of this machine)", [Name]);
error_line({name_in_use, Name}) ->
    io_lib:format("a node named ~ts is already running on this machine (beamlab node --stop ~ts, "
                  "or choose another name)", [Name, Name]);
error_line({port_in_use, Port}) ->
    io_lib:format("distribution port ~b is in use~ts", [Port, case Port of
                                                                 4369 -> " (by epmd: it is epmd's port)";
                                                                 _ -> " by another program"
                                                             end]);
error_line({port_denied, Port}) ->
    io_lib:format("distribution port ~b needs privileges (ports below 1024 are root's)", [Port]);
error_line({unknown_host, Host}) ->
    io_lib:format("cannot resolve host '~ts' of the node name", [Host]);
error_line({not_local, Host, Ip}) ->
    io_lib:format("'~ts' (~ts) is not an address of this machine: name the node after one of its "
                  "interfaces", [Host, inet:ntoa(Ip)]);
error_line({epmd_loopback_only, Ip}) ->
    io_lib:format("epmd runs on this machine but does not listen on ~ts (it was started for "
                  "loopback only): stop it with 'epmd -kill' and start again", [inet:ntoa(Ip)]);
error_line({dist_failed, Name, Reason}) ->
    io_lib:format("could not start Erlang distribution as ~ts (port in use? epmd reachable?): ~0tP",
                  [Name, innermost(Reason), 6]);
error_line({write_code, File, Why}) ->
    io_lib:format("cannot write beamlab's code to ~ts: ~ts", [File, beamlab_runtime_file:format_error(Why)]);
error_line({load_failed, {read, Copy, Why}}) ->
    io_lib:format("the new VM could not read ~ts: ~ts", [Copy, file:format_error(Why)]);
error_line({load_failed, Reason}) ->
    io_lib:format("could not load beamlab's code into the new VM: ~0tP", [Reason, 10]);
error_line({unterminated_quote, Q}) ->
    io_lib:format("unterminated ~c quote", [Q]);
error_line({not_a_flag, Word}) ->
    io_lib:format("emulator arguments: '~ts' is not a flag (they start with + or -, e.g. '+S 2')",
                  [Word]);
error_line({vm_unresponsive, Ms}) ->
    io_lib:format("the VM did not stop within ~b s of the interrupt (frozen?): killed", [Ms div 1000]);
error_line({vm_deadline, Ms}) ->
    io_lib:format("the VM did not finish within ~b s (a runner that never returns?): killed; "
                  "--timeout sets the deadline", [Ms div 1000]);
error_line({vm_start, Reason}) ->
    ["the VM did not start: ", format_error(Reason)];
error_line({vm_failed, exit, {Why, {gen_server, call, _}}}) ->
    io_lib:format("the VM stopped while running the command (~0tP): did the command or the "
                  "emulator arguments stop it?", [Why, 6]);
error_line({vm_failed, Class, Reason}) ->
    io_lib:format("the VM failed while running: ~p:~0tP", [Class, Reason, 12]);
error_line(Other) ->
    beamlab_format_reason:term(Other).

%% What a supervisor's start error comes down to, without the child spec.
innermost({{shutdown, {failed_to_start_child, _, Why}}, _Child}) -> innermost(Why);
innermost({'EXIT', Why}) -> innermost(Why);
innermost(Why) -> Why.

%%--------------------------------------------------------------------

%% A controller named with --cookie has a cookie the new VM does not know
%% (it read ~/.erlang.cookie): give it ours over the control connection,
%% never on its command line, where any local user could read it.
share_cookie(Pid) ->
    true = peer:call(Pid, erlang, set_cookie, [erlang:get_cookie()]),
    ok.

peer_opts(Opts, Dist) ->
    Args = maps:get(args, Opts, []) ++
           lists:append([["-pa", P] || P <- maps:get(paths, Opts, [])]) ++
           case Dist of
               true -> ["-kernel", "inet_dist_use_interface", "{127,0,0,1}"];
               false -> []
           end,
    Base = #{args => Args,
             %% BEAMLAB_TREE: the first beamlab VM, whose CPU a fresh VM's
             %% load check counts as its own (beamlab_runtime_probe:tree_root/0)
             env => [{"ERL_CRASH_DUMP_SECONDS", "0"}, {"ERL_EPMD_ADDRESS", "127.0.0.1"},
                     {"BEAMLAB_TREE", beamlab_runtime_probe:tree_root()}
                     | maps:get(env, Opts, [])],
             wait_boot => maps:get(timeout, Opts, ?START_TIMEOUT),
             exec => exec(Opts, stderr_file())},
    case Dist of
        true ->
            Base#{name => peer:random_name("beamlab_vm"), host => "127.0.0.1",
                  longnames => true, connection => 0};
        false ->
            Base#{connection => standard_io}
    end.

%% The VM runs under `sh -c' so that what it prints on stderr while booting
%% (e.g. "bad amount of schedulers") lands in a file we can quote in the
%% error, instead of a page of emulator usage text on the user's terminal.
exec(Opts, StderrFile) ->
    Erl = case maps:find(exec, Opts) of
              {ok, E} -> find_exe(E);
              error -> default_erl()
          end,
    Command = case maps:get(wrapper, Opts, []) of
                  [] -> [Erl];
                  [W | WArgs] -> [find_exe(W) | WArgs] ++ [Erl]
              end,
    %% set -C: the redirection never replaces an existing file. The pid
    %% is the session's (see boot/1).
    {"/bin/sh", ["-c", "set -C; echo $$ >\"$0.pid\"; exec \"$@\" 2>\"$0\"", StderrFile | Command]}.

%% The file sits in a private directory (mode 0700, created exclusively,
%% see beamlab_runtime_file:private_dir/1): no one else can plant a link at
%% its name, which the shell's redirection would follow.
stderr_file() ->
    case beamlab_runtime_file:private_dir("beamlab-vm") of
        {ok, Dir} -> filename:join(Dir, "vm.stderr");
        {error, Reason} -> throw({beamlab_runtime_peer, {stderr_file, Reason}})
    end.

read_stderr(#{exec := {_, [_, _, File | _]}}) ->
    Text = case file:read_file(File) of
               {ok, Bin} -> Bin;
               {error, _} -> <<>>
           end,
    _ = file:delete(File),
    _ = file:delete(File ++ ".pid"),
    _ = file:del_dir(filename:dirname(File)),
    Text.

first_line(<<>>, Reason) ->
    Reason;
first_line(Stderr, Reason) ->
    case [L || L <- binary:split(Stderr, <<"\n">>, [global]), string:trim(L) =/= <<>>] of
        [First | _] -> {vm_said, string:trim(First), Reason};
        [] -> Reason
    end.

default_erl() ->
    %% The erl of the running OTP install, so a fresh VM matches this one.
    Local = filename:join([code:root_dir(), "bin", "erl"]),
    case filelib:is_regular(Local) of
        true -> Local;
        false -> find_exe("erl")
    end.

find_exe(Name) ->
    case filename:pathtype(Name) of
        relative when not (hd(Name) =:= $.) ->
            case os:find_executable(Name) of
                false -> throw({beamlab_runtime_peer, {no_executable, Name}});
                Path -> Path
            end;
        _ ->
            case filelib:is_regular(Name) of
                true -> Name;
                false -> throw({beamlab_runtime_peer, {no_executable, Name}})
            end
    end.

loaded(Vm0, Opts) ->
    %% Its OS pid, to end it (kill/1) when it stops answering.
    Vm = case catch call(Vm0, os, getpid, [], 60000) of
             P when is_list(P) -> Vm0#{os_pid => P};
             _ -> Vm0
         end,
    case maps:get(load, Opts, true) of
        false -> preloaded(Vm, Opts);
        Load ->
            case case Load of
                     true -> load_code(Vm);
                     Copies -> preload(Vm, Copies)
                 end of
                ok ->
                    %% Its standard output may be our control channel, and
                    %% its logs must not reach our output either.
                    _ = (catch call(Vm, beamlab_runtime_logs, to_stderr, [], 60000)),
                    preloaded(Vm, Opts);
                {error, Reason} -> stop(Vm), {error, {load_failed, Reason}}
            end
    end.

preloaded(Vm, Opts) ->
    case preload(Vm, maps:get(preload, Opts, [])) of
        ok -> {ok, Vm};
        {error, Reason} -> stop(Vm), {error, {load_failed, Reason}}
    end.

%% The caller's modules, loaded before anything runs, one after the
%% other in the order given, so that two VMs given the same modules lay
%% their code out alike (the sides of `check --against':
%% beamlab_project_code). One at a time: code:atomic_load/1 prepares
%% modules in parallel, and the JIT then placed them in an order that
%% changed from VM to VM. The VM reads each module from the copy named
%% (sent over the control channel at each start, 208 modules took a
%% second or more) and loads it as the file it was built as, which
%% code:which/1 then names (a NIF library found next to it). One call,
%% an expression of OTP's modules only (the VM may have none of ours):
%% not one call a module. A copy that cannot be read fails the start; a
%% module the code server refuses (a sticky name) is left to be loaded
%% on demand as usual.
preload(_Vm, []) ->
    ok;
preload(Vm, Mods) ->
    {ok, Exprs} = beamlab_runtime_expr:parse(
                    "[case file:read_file(Copy) of"
                    "     {ok, Bin} -> code:load_binary(M, File, Bin), ok;"
                    "     {error, Why} -> {Copy, Why}"
                    " end || {M, File, Copy} <- Mods]."),
    try
        %% (a minute, and a tenth of a second a module for a large project)
        call(Vm, erl_eval, exprs, [Exprs, [{'Mods', Mods}]],
             60000 + 100 * length(Mods)) of
        {value, Results, _} ->
            case [E || {_, _} = E <- Results] of
                [] -> ok;
                [{Copy, Why} | _] -> {error, {read, Copy, Why}}
            end
    catch
        Class:Reason -> {error, {Class, Reason}}
    end.

load_code(Vm) ->
    Mods = [{M, File, Bin} || M <- beamlab_modules(),
                              {_, Bin, File} <- [code:get_object_code(M)]],
    try call(Vm, code, atomic_load, [Mods], 60000) of
        ok -> ok;
        {error, Reason} -> {error, Reason}
    catch
        Class:Reason -> {error, {Class, Reason}}
    end.

%% @doc Writes beamlab's modules (this VM's: the escript's) into `Dir' as
%% `NAME.beam' ({@link store/2}), for VMs started with `load' the list
%% returned: each reads them itself, one after the other in name order,
%% instead of being sent them at its start (a second or more a VM under
%% load, for VMs started again and again: `check''s rounds). `Dir' is the
%% caller's temporary directory.
-spec write_code(file:filename()) -> {ok, [stored()]} | {error, {write_code, file:filename(), file:posix() | badarg | terminated}}.
write_code(Dir) ->
    store(lists:sort([{M, File, Bin} || M <- beamlab_modules(), {_, Bin, File} <- [code:get_object_code(M)]]), Dir).

%% @doc Writes modules (`{Module, File it was built as, Bytes}') into `Dir'
%% (made if missing) as `NAME.beam', to be loaded by new VMs in the order
%% given (`load', `preload'): listed as they are to be loaded, each with
%% the file it was built as and its copy.
-spec store([{module(), file:filename(), binary()}], file:filename()) ->
          {ok, [stored()]} | {error, {write_code, file:filename(), file:posix() | badarg | terminated}}.
store(Mods, Dir) ->
    case filelib:ensure_path(Dir) of
        ok -> store(Mods, Dir, []);
        {error, Why} -> {error, {write_code, Dir, Why}}
    end.

store([], _Dir, Acc) ->
    {ok, lists:reverse(Acc)};
store([{M, File, Bin} | Rest], Dir, Acc) ->
    Copy = filename:join(Dir, atom_to_list(M) ++ ".beam"),
    case beamlab_runtime_file:write_atomic(Copy, Bin, #{sync => false}) of
        ok -> store(Rest, Dir, [{M, File, Copy} | Acc]);
        {error, Why} -> {error, {write_code, Copy, Why}}
    end.

beamlab_modules() ->
    _ = application:load(beamlab),
    case application:get_key(beamlab, modules) of
        {ok, Mods} -> Mods;
        undefined -> [M || {M, _} <- code:all_loaded(), lists:prefix("beamlab", atom_to_list(M))]
    end.

%% epmd on Ip (and loopback): true when it answers there.
start_epmd({127, _, _, _}) ->
    start_epmd(),
    true;
start_epmd(Ip) ->
    case erl_epmd:names(Ip) of
        {ok, _} -> true;
        {error, _} ->
            case loopback_names() of
                {ok, _} -> false;    % an epmd for loopback only
                {error, _} ->
                    _ = os:cmd(epmd_exe() ++ " -daemon -address " ++ inet:ntoa(Ip)),
                    started_epmd(),
                    wait_epmd(50),
                    element(1, erl_epmd:names(Ip)) =:= ok
            end
    end.

%% The names the epmd on 127.0.0.1 knows. Not erl_epmd:names/0: it asks
%% the host name's address, which Debian's /etc/hosts makes 127.0.1.1,
%% where an epmd started for loopback (`-address 127.0.0.1', RabbitMQ's
%% ERL_EPMD_ADDRESS) does not listen: it seemed not to run, so it was
%% started again and never stopped.
loopback_names() ->
    erl_epmd:names({127, 0, 0, 1}).

epmd_exe() ->
    case os:find_executable("epmd") of
        false -> filename:join([code:root_dir(), "erts-" ++ erlang:system_info(version), "bin", "epmd"]);
        Path -> Path
    end.

start_epmd() ->
    case loopback_names() of
        {ok, _} -> ok;
        {error, _} ->
            _ = os:cmd(epmd_exe() ++ " -daemon -address 127.0.0.1"),
            started_epmd(),
            wait_epmd(50)
    end.

%% An epmd this VM started is stopped when it is done
%% (release_epmd/0): a flag of the VM, set once, read at the end.
-define(EPMD_STARTED, {?MODULE, epmd_started}).

started_epmd() ->
    persistent_term:put(?EPMD_STARTED, true).

%% @doc Stops this VM's distribution and returns once `node()' says so:
%% `net_kernel:stop/0' returns before the node's name is cleared, and a
%% start right after it found a name but no net_kernel. Waits at most
%% 5 s (a guard: the name goes within milliseconds).
-spec stop_dist() -> ok.
stop_dist() ->
    _ = net_kernel:stop(),
    _ = await_nonode(?STOP_POLLS),
    ok.

await_nonode(0) ->
    timeout;
await_nonode(N) ->
    case node() of
        nonode@nohost -> ok;
        _ -> receive after 10 -> await_nonode(N - 1) end
    end.

%% @doc Stops the epmd this VM started ({@link ensure_dist/0},
%% {@link start_dist/1} when none ran), for a VM that is done with
%% distribution: the command line calls it before it exits, so nothing
%% beamlab starts outlives it. This VM stops being a node first; epmd
%% itself refuses to stop while other nodes are registered with it
%% (`epmd -kill' without relaxed checks), so an epmd others use meanwhile
%% stays. Waits up to a second for this VM's own registration to go.
-spec release_epmd() -> ok.
release_epmd() ->
    case persistent_term:get(?EPMD_STARTED, false) of
        true ->
            _ = persistent_term:erase(?EPMD_STARTED),
            ok = stop_dist(),
            kill_epmd(20);
        false ->
            ok
    end.

kill_epmd(0) ->
    ok;
kill_epmd(N) ->
    case loopback_names() of
        {ok, []} ->
            _ = os:cmd(epmd_exe() ++ " -kill"),
            kill_epmd(N - 1);
        {ok, [_ | _]} ->
            %% (our own name until epmd has seen its connection close)
            timer:sleep(50),
            kill_epmd(N - 1);
        {error, _} ->
            ok
    end.

wait_epmd(0) ->
    ok;
wait_epmd(N) ->
    case loopback_names() of
        {ok, _} -> ok;
        {error, _} -> timer:sleep(100), wait_epmd(N - 1)
    end.

describe(Opts) ->
    Exe = case maps:find(exec, Opts) of
              {ok, E} -> E;
              error -> "erl"
          end,
    Flavor = case maps:find(flavor, Opts) of
                 {ok, F} -> ["-emu_flavor", atom_to_list(F)];
                 error -> []
             end,
    string:join(maps:get(wrapper, Opts, []) ++ [Exe | Flavor ++ maps:get(args, Opts, [])], " ").

reason_text({vm_said, Line, _}) ->
    Line;
reason_text(timeout) ->
    "it did not boot in time";
reason_text({boot_failed, {exit_status, Code}}) ->
    io_lib:format("the VM exited with status ~b while booting (are the emulator arguments valid?)",
                  [Code]);
reason_text(Other) ->
    beamlab_format_reason:term(Other).

split([], [], Acc, _) -> lists:reverse(Acc);
split([], Word, Acc, _) -> lists:reverse([lists:reverse(Word) | Acc]);
split([Q | T], Word, Acc, none) when Q =:= $"; Q =:= $' -> split(T, Word, Acc, Q);
split([Q | T], Word, Acc, Q) -> split(T, Word, Acc, none);
split([C | T], [], Acc, none) when C =:= $\s; C =:= $\t -> split(T, [], Acc, none);
split([C | T], Word, Acc, none) when C =:= $\s; C =:= $\t -> split(T, [], [lists:reverse(Word) | Acc], none);
split([C | T], Word, Acc, Q) -> split(T, [C | Word], Acc, Q).
