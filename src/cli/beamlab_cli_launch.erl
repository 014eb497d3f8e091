%%% @doc The launcher of the build-tool entries (`rebar3 beamlab', `mix
%%% beamlab'): the command runs in a VM of its own, as the escript's
%%% launcher line runs the escript's VM, so that benchmarked code that
%%% stops its VM (`M = erlang, M:halt(0)', `init:stop()', an allocation
%%% too large to fit) cannot stop the build tool's VM with status 0 and
%%% pass a CI gate. That VM inherits standard input, output and error
%%% (the port talks over descriptors 3 and 4), ends with 200 + its exit
%%% code (203 for an interrupt); any other status means it stopped
%%% without beamlab, and the recovery of the escript's launcher says so
%%% (and prints and saves what a `run' measured): exit 1.
%%%
%%% Stop signals to the build tool's VM (a process group's SIGTERM, a CI
%%% runner cancelling) are passed on to the command's VM as the
%%% launcher's SIGUSR2: the first interrupt ends the run with what was
%%% measured (130), and the command's VM, in a session of its own, never
%%% outlives the build tool's (it watches its parent).
-module(beamlab_cli_launch).

-export([run/2]).

%% @doc Runs `Argv' with the options of {@link beamlab_cli:run_command/2}
%% (`project') in a new VM with this VM's code paths; its exit code.
-spec run([string()], #{project => beamlab_project_build:project()}) -> beamlab_command:exit_code().
run(Argv, Opts) ->
    case beamlab_runtime_file:private_dir("beamlab") of
        {ok, Dir} ->
            try launch(Argv, Opts, Dir)
            after
                _ = file:del_dir_r(Dir)
            end;
        {error, Why} ->
            io:format(standard_error, "beamlab: cannot make a private directory: ~ts~n",
                      [beamlab_runtime_file:format_error(Why)]),
            1
    end.

launch(Argv, Opts, Dir) ->
    Job = filename:join(Dir, "command"),
    ok = beamlab_runtime_file:write_new(Job, term_to_binary({Argv, Opts})),
    Erl = filename:join([code:root_dir(), "bin", "erl"]),
    %% (OTP's own directories are the new VM's anyway.)
    Otp = code:root_dir(),
    Paths = [P || P <- code:get_path(), P =/= ".", not lists:prefix(Otp, P)],
    Args = ["-noshell", "+fnui", "-env", "ERL_CRASH_DUMP_SECONDS", "0",
            "-pa" | Paths] ++ ["-run", "beamlab_cli", "launched", Job],
    Env = [{"BEAMLAB_LAUNCHER", "1"}, {"BEAMLAB_CHECKPOINT", Dir}, {"ERL_CRASH_DUMP_SECONDS", "0"},
           {"ERL_CRASH_DUMP", "/dev/null"}, {"BEAMLAB_RECOVER", false}],
    ok = beamlab_runtime_interrupt:install(),
    ok = beamlab_runtime_interrupt:subscribe(),
    Port = open_port({spawn_executable, Erl}, [{args, Args}, {env, Env}, exit_status, nouse_stdio, binary]),
    OsPid = case erlang:port_info(Port, os_pid) of
                {os_pid, P} -> integer_to_list(P);
                undefined -> undefined
            end,
    Status = wait(Port, OsPid),
    ok = beamlab_runtime_interrupt:unsubscribe(),
    code(Status, Dir).

%% Interrupts are passed on as the escript's launcher passes them.
wait(Port, OsPid) ->
    receive
        {Port, {exit_status, S}} -> S;
        {Port, {data, _}} -> wait(Port, OsPid);
        {beamlab_interrupt, _} ->
            _ = OsPid =/= undefined andalso os:cmd("kill -USR2 " ++ OsPid),
            wait(Port, OsPid)
    end.

code(S, _Dir) when S >= 200, S =< 202 -> S - 200;
code(203, _Dir) -> 130;
code(S, Dir) ->
    %% The VM stopped without beamlab: what the escript's launcher does.
    _ = beamlab_cli_recover:run(Dir, integer_to_list(S)),
    case S < 128 of
        true -> 1;
        false -> S
    end.
