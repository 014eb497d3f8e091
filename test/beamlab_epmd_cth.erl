%%% A Common Test hook (rebar.config's ct_opts) that leaves no epmd
%%% behind a suite: nodes started with a name (peer's named nodes,
%%% RabbitMQ, `erl -sname') start `epmd -daemon' when none runs, and
%%% stopping them does not stop it, so a full CT run left an OTP 25 epmd
%%% running. After each suite: the epmd beamlab's code started in this
%%% node goes (beamlab_runtime_peer:release_epmd/0), and an epmd that did
%%% not run when the suite began is stopped once no node is registered
%%% with it. A suite whose nodes were still registered after 10 s leaves
%%% epmd to the next suites, which find it running at their start: so at
%%% the end of the whole run an epmd that did not run when it began is
%%% stopped too (a full run on a fresh machine left one that way).
%%%
%%% Only an epmd this run started is ever stopped, and only by epmd
%%% itself. epmd is one per machine (per port): another engineer's or
%%% job's suite may start nodes on it, and a check of its names followed
%%% by a kill races with them (it did: `epmd -kill' ran while another
%%% worktree's nodes were being started). So:
%%%   - the hook marks this run's environment (BEAMLAB_EPMD_CTH_RUN, set
%%%     in init/2 and inherited by every process the run starts, epmd
%%%     included); an epmd whose environment does not carry the mark (by
%%%     its OS pid, in /proc) was started by someone else and is left;
%%%   - the stop is `epmd -kill', never a signal: epmd answers it in its
%%%     one thread and refuses while any node is registered ("Killing not
%%%     allowed - living nodes in database"), so a node that registered
%%%     after the hook's look at the names keeps its epmd whatever the
%%%     interleaving. An epmd started with `-relaxed_command_check' kills
%%%     regardless: such an epmd is never asked.
%%% What no check can see is a node still booting (erl found an epmd,
%%% the node has not registered yet): it loses its epmd to any kill. With
%%% the mark that can only happen to a node of another run that found
%%% this run's epmd, never to one whose run started its own.
%%%
%%% The CT node itself counts: a suite that makes it a node while an
%%% epmd it did not start runs (a broker's, a named peer's) leaves it
%%% registered, since release_epmd/0 only undoes what it started, and
%%% epmd then never stops (measured: amqp_perf_SUITE's
%%% named_node_without_code left `beamlab_PID@127.0.0.1' registered, both
%%% stops gave up after 10 s and the run left epmd behind). So a node that
%%% became distributed during a suite (or the run) stops being one at its
%%% end. epmd is asked on 127.0.0.1, where every epmd the tests start
%%% listens (`-address 127.0.0.1' included): erl_epmd:names/0 asks the
%%% host name's address, which is not loopback on some machines.
%%%
%%% What it sees and does goes to epmd_cth.log in the run's log directory
%%% (ct_run.*), one line per step.
-module(beamlab_epmd_cth).

-export([id/1, init/2, pre_init_per_suite/3, post_end_per_suite/4, terminate/1]).

-define(MARK, "BEAMLAB_EPMD_CTH_RUN").

id(_Opts) -> ?MODULE.

init(_Id, _Opts) ->
    %% This run's mark, inherited by every epmd the run starts.
    Mark = os:getpid() ++ "-" ++ integer_to_list(erlang:system_time(microsecond)),
    true = os:putenv(?MARK, Mark),
    State = #{'$run' => running(), '$alive' => is_alive(), '$log' => undefined, '$mark' => Mark},
    {ok, State}.

terminate(#{'$run' := Before, '$alive' := Alive} = State) ->
    log(State, "terminate: epmd ran when the run began: ~p; ~ts", [Before, seen()]),
    ok = beamlab_runtime_peer:release_epmd(),
    ok = undistribute(State, terminate, Alive),
    _ = Before orelse stop_epmd(State, terminate, 100),
    log(State, "terminate done: ~ts", [seen()]),
    ok.

pre_init_per_suite(Suite, Config, State0) ->
    State = State0#{'$log' => log_file(Config, maps:get('$log', State0))},
    Running = running(),
    log(State, "~p begins: epmd running: ~p; ~ts", [Suite, Running, seen()]),
    {Config, State#{Suite => {Running, is_alive()}}}.

post_end_per_suite(Suite, _Config, Return, State) ->
    log(State, "~p ended: ~ts", [Suite, seen()]),
    {Running, Alive} = maps:get(Suite, State, {true, true}),
    ok = beamlab_runtime_peer:release_epmd(),
    ok = undistribute(State, Suite, Alive),
    _ = Running orelse stop_epmd(State, Suite, 100),
    log(State, "~p after the hook: ~ts", [Suite, seen()]),
    {Return, maps:remove(Suite, State)}.

running() ->
    element(1, names()) =:= ok.

names() ->
    erl_epmd:names({127, 0, 0, 1}).

%% This node stops being a node when it was not one at the start.
undistribute(_State, _Who, true) ->
    ok;
undistribute(State, Who, false) ->
    case is_alive() of
        true -> log(State, "~p: net_kernel:stop() -> ~0p", [Who, net_kernel:stop()]);
        false -> ok
    end.

%% Up to 10 s for the suite's nodes (a broker shutting down) to go.
stop_epmd(State, Who, 0) ->
    log(State, "~p: gave up stopping epmd: ~ts", [Who, seen()]);
stop_epmd(State, Who, N) ->
    case names() of
        {error, _} -> ok;
        {ok, []} ->
            case epmds(State) of
                {[_ | _] = Ours, []} ->
                    %% (epmd refuses if a node registered since names())
                    Out = os:cmd("epmd -kill"),
                    log(State, "~p: epmd ~0p is this run's: epmd -kill: ~ts", [Who, Ours, string:trim(Out)]),
                    stop_epmd(State, Who, N - 1);
                {Ours, Others} ->
                    log(State, "~p: epmd left: this run's ~0p, others' (or relaxed) ~0p", [Who, Ours, Others])
            end;
        {ok, _} ->
            receive after 100 -> stop_epmd(State, Who, N - 1) end
    end.

%% The OS pids of the epmd processes serving epmd's port (this VM's
%% ERL_EPMD_PORT, else 4369), split into the ones this run started (its
%% mark in their environment, no relaxed command check) and the others.
epmds(#{'$mark' := Mark}) ->
    Port = case os:getenv("ERL_EPMD_PORT") of
               false -> "4369";
               P -> P
           end,
    Epmds = [{Pid, Args, Env} || Pid <- filelib:wildcard("[0-9]*", "/proc"),
                                 {ok, <<"epmd\n">>} <- [file:read_file(filename:join(["/proc", Pid, "comm"]))],
                                 %% (a zombie has an empty command line)
                                 {ok, <<_, _/binary>> = Cmd} <- [file:read_file(filename:join(["/proc", Pid, "cmdline"]))],
                                 {ok, Environ} <- [file:read_file(filename:join(["/proc", Pid, "environ"]))],
                                 Args <- [binary:split(Cmd, <<0>>, [global, trim])],
                                 Env <- [binary:split(Environ, <<0>>, [global, trim])],
                                 epmd_port(Args, Env) =:= list_to_binary(Port)],
    Ours = fun(Args, Env) ->
                   lists:member(iolist_to_binary([?MARK, $=, Mark]), Env)
                       andalso not lists:member(<<"-relaxed_command_check">>, Args)
           end,
    {[list_to_integer(Pid) || {Pid, Args, Env} <- Epmds, Ours(Args, Env)],
     [list_to_integer(Pid) || {Pid, Args, Env} <- Epmds, not Ours(Args, Env)]}.

%% The port an epmd listens on: its `-port', else its ERL_EPMD_PORT.
epmd_port([<<"-port">>, Port | _], _Env) -> Port;
epmd_port([_ | Args], Env) -> epmd_port(Args, Env);
epmd_port([], Env) ->
    case [P || <<"ERL_EPMD_PORT=", P/binary>> <- Env] of
        [P | _] -> P;
        [] -> <<"4369">>
    end.

%% What the hook sees: this node, the names epmd knows (asked on loopback
%% and through the host name, as erl_epmd:names/0 does), the epmd
%% processes and their binaries.
seen() ->
    io_lib:format("node ~p alive ~p; names() ~0p; names(127.0.0.1) ~0p; epmd processes: ~ts",
                  [node(), is_alive(), erl_epmd:names(), erl_epmd:names({127, 0, 0, 1}),
                   string:trim(os:cmd("ps -C epmd -o pid=,args= | tr '\\n' ';'"))]).

%% The run's log directory (ct_run.*), found from a suite's priv_dir.
log_file(_Config, File) when File =/= undefined ->
    File;
log_file(Config, undefined) ->
    Parts = filename:split(proplists:get_value(priv_dir, Config, "")),
    case lists:splitwith(fun(P) -> not lists:prefix("ct_run.", P) end, Parts) of
        {Up, [Run | _]} -> filename:join(Up ++ [Run, "epmd_cth.log"]);
        {_, []} -> undefined
    end.

log(#{'$log' := File}, Fmt, Args) ->
    Line = io_lib:format("~ts ~ts~n", [calendar:system_time_to_rfc3339(erlang:system_time(millisecond),
                                                                     [{unit, millisecond}]),
                                      io_lib:format(Fmt, Args)]),
    _ = File =/= undefined andalso file:write_file(File, Line, [append]),
    ok.
