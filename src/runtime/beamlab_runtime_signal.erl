%%% @doc Sends an OS signal to a process or to a whole process group (a
%%% session beamlab started: a fresh VM, a build tool, a load command),
%%% so that nothing beamlab started outlives it. The shell's builtin
%%% `kill' of some systems (dash, Debian's /bin/sh) takes no `--' (and
%%% `kill -s SIG -PGID' reads the group as an option), so the `kill'
%%% program is run directly, without a shell.
-module(beamlab_runtime_signal).

-export([send/2, send_group/2, send_tree/2, tree/1]).

-type signal() :: string().   % a name: "TERM", "KILL", "USR2"
-export_type([signal/0]).

%% @doc Sends `Signal' to the process `OsPid'; `ok' whether or not it was
%% still there.
-spec send(string() | integer(), signal()) -> ok.
send(OsPid, Signal) ->
    kill(["-s", Signal, pid(OsPid)]).

%% @doc Sends `Signal' to every process of the process group `Pgid' (the
%% pid of its leader) and to the leader itself, in case it left the group.
-spec send_group(string() | integer(), signal()) -> ok.
send_group(Pgid, Signal) ->
    P = pid(Pgid),
    case string:to_integer(P) of
        {N, ""} when is_integer(N), N > 1 -> kill(["-s", Signal, "--", "-" ++ P, P]);
        _ -> ok
    end.

%% @doc Sends `Signal' to the process group of `Pid' and to every process
%% descending from `Pid' (read from /proc before the first signal): a
%% program that starts others in sessions of their own (rebar3 runs a
%% hook as an OTP port, which gets a session of its own) leaves none of
%% them behind.
-spec send_tree(string() | integer(), signal()) -> ok.
send_tree(Pid, Signal) ->
    Tree = tree(Pid),
    ok = send_group(Pid, Signal),
    _ = [send(P, Signal) || P <- Tree],
    ok.

%% @doc `Pid' and its descendants, as /proc shows them now (`[Pid]' where
%% there is no /proc).
-spec tree(string() | integer()) -> [integer()].
tree(Pid) ->
    Root = list_to_integer(pid(Pid)),
    Children = lists:foldl(fun({P, PP}, Acc) -> maps:update_with(PP, fun(L) -> [P | L] end, [P], Acc) end,
                           #{}, parents()),
    descend([Root], Children, []).

descend([], _Children, Acc) ->
    lists:reverse(Acc);
descend([P | Rest], Children, Acc) ->
    case lists:member(P, Acc) of
        true -> descend(Rest, Children, Acc);
        false -> descend(Rest ++ maps:get(P, Children, []), Children, [P | Acc])
    end.

%% {Pid, ParentPid} of every process in /proc.
parents() ->
    case file:list_dir("/proc") of
        {ok, Names} ->
            [{list_to_integer(N), PP} || N <- Names, lists:all(fun(C) -> C >= $0 andalso C =< $9 end, N),
                                         PP <- ppid(N)];
        {error, _} -> []
    end.

ppid(N) ->
    case file:read_file(filename:join(["/proc", N, "stat"])) of
        {ok, Stat} ->
            %% pid (comm) state ppid ...: the name may hold spaces and ')'.
            case string:split(Stat, <<")">>, trailing) of
                [_, After] ->
                    case string:lexemes(After, " ") of
                        [_State, PP | _] ->
                            case string:to_integer(PP) of
                                {I, <<>>} when is_integer(I) -> [I];
                                _ -> []
                            end;
                        _ -> []
                    end;
                _ -> []
            end;
        {error, _} -> []
    end.

pid(P) when is_integer(P) -> integer_to_list(P);
pid(P) -> P.

kill(Args) ->
    case os:find_executable("kill") of
        false -> ok;
        Exe ->
            Port = open_port({spawn_executable, Exe}, [{args, Args}, exit_status, stderr_to_stdout, hide]),
            wait(Port)
    end.

wait(Port) ->
    receive
        {Port, {data, _}} -> wait(Port);
        {Port, {exit_status, _}} -> ok
    after 5000 ->
        catch port_close(Port),
        ok
    end.
