%%% @doc Sends an OS signal to a process or to a whole process group (a
%%% session beamlab started: a fresh VM, a build tool, a load command),
%%% so that nothing beamlab started outlives it. The shell's builtin
%%% `kill' of some systems (dash, Debian's /bin/sh) takes no `--' and
%%% reads `-PGID' as an option, so the `kill' program is run directly,
%%% without a shell.
-module(beamlab_runtime_signal).

-export([send/2, send_group/2]).

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
