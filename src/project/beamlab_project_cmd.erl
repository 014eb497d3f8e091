%%% @doc Runs an external program of a project's tool chain (`git',
%%% `rebar3', `mix', `erlc', `elixirc') and collects what it prints.
%%%
%%% The program runs with its arguments as given (no shell), in a chosen
%%% directory and environment; standard error joins standard output. An
%%% interrupt (`{beamlab_interrupt, _}') arriving meanwhile stops the
%%% program (SIGTERM) and is put back in the caller's mailbox, so the
%%% caller's own loop sees it too. A program that runs past its deadline
%%% (`timeout') is stopped the same way. Stopping ends its whole session
%%% (SIGTERM, then SIGKILL after 10 s): what the program started (a
%%% compiler, a hook's `sleep') does not outlive it.
-module(beamlab_project_cmd).

-export([run/3, find/1, last_lines/2, format_error/1]).

-type opts() :: #{cd => file:filename(),
                  env => [{string(), string() | false}],
                  log => file:filename(),       % also append the output there
                  timeout => timeout()}.        % ms (default infinity)
-type error_reason() :: {not_found, string()}
                      | {exit, string(), integer(), binary()}
                      | {interrupted, string()}
                      | {timeout, string(), pos_integer()}.
-export_type([opts/0, error_reason/0]).

%% Output kept in memory (the last part; the log file has all of it).
-define(KEEP, 1048576).

%% @doc Runs `Program' (a name found on the PATH, or a path) with `Args'.
%% Returns its output when it exits with status 0.
-spec run(string(), [string()], opts()) -> {ok, binary()} | {error, error_reason()}.
run(Program, Args, Opts) ->
    case find(Program) of
        false -> {error, {not_found, Program}};
        Exe ->
            Log = case maps:find(log, Opts) of
                      {ok, File} ->
                          {ok, Fd} = file:open(File, [append, raw, binary]),
                          Fd;
                      error -> none
                  end,
            PortOpts = [{args, Args}, binary, exit_status, stderr_to_stdout, hide]
                       ++ [{cd, D} || {ok, D} <- [maps:find(cd, Opts)]]
                       ++ [{env, E} || {ok, E} <- [maps:find(env, Opts)]],
            Deadline = case maps:get(timeout, Opts, infinity) of
                           infinity -> infinity;
                           Ms -> {erlang:monotonic_time(millisecond) + Ms, Ms}
                       end,
            try
                Port = open_port({spawn_executable, Exe}, PortOpts),
                collect(Port, Program, Log, <<>>, Deadline)
            after
                Log =/= none andalso file:close(Log)
            end
    end.

%% @doc The executable `Program' names: a path as given, a bare name on
%% the PATH (OTP's own `erlc' first from this installation); `false'.
-spec find(string()) -> string() | false.
find(Program) ->
    case lists:member($/, Program) of
        true ->
            filelib:is_regular(Program) andalso Program;
        false ->
            Own = filename:join([code:root_dir(), "bin", Program]),
            case Program =:= "erlc" andalso filelib:is_regular(Own) of
                true -> Own;
                false -> os:find_executable(Program)
            end
    end.

collect(Port, Program, Log, Acc, Deadline) ->
    receive
        {Port, {data, Data}} ->
            Log =/= none andalso file:write(Log, Data),
            collect(Port, Program, Log, keep(<<Acc/binary, Data/binary>>), Deadline);
        {Port, {exit_status, 0}} ->
            {ok, Acc};
        {Port, {exit_status, Status}} ->
            {error, {exit, Program, Status, Acc}};
        {beamlab_interrupt, _} = Msg ->
            stop(Port),
            self() ! Msg,
            {error, {interrupted, Program}}
    after left(Deadline) ->
            stop(Port),
            {_, Ms} = Deadline,
            {error, {timeout, Program, Ms}}
    end.

left(infinity) -> infinity;
left({At, _}) -> max(0, At - erlang:monotonic_time(millisecond)).

keep(Bin) when byte_size(Bin) > ?KEEP ->
    binary:part(Bin, byte_size(Bin) - ?KEEP, ?KEEP);
keep(Bin) ->
    Bin.

%% SIGTERM to the program's session (OTP starts a port program with
%% setsid: its pid is its group's) and to everything it started (also in
%% sessions of their own: rebar3's hooks), then wait for it (its output
%% is dropped); SIGKILL to what is left after 10 s.
stop(Port) ->
    case erlang:port_info(Port, os_pid) of
        {os_pid, Pid} ->
            Tree = beamlab_runtime_signal:tree(Pid),
            ok = beamlab_runtime_signal:send_tree(Pid, "TERM"),
            case drain(Port) of
                ok -> ok;
                timeout -> catch port_close(Port)
            end,
            _ = [beamlab_runtime_signal:send(P, "KILL") || P <- Tree, alive(P)],
            ok;
        undefined ->
            ok
    end.

alive(Pid) ->
    filelib:is_dir("/proc/" ++ integer_to_list(Pid)).

drain(Port) ->
    receive
        {Port, {exit_status, _}} -> ok;
        {Port, {data, _}} -> drain(Port)
    after 10000 ->
            timeout
    end.

%% @doc The last `N' non-empty lines of an output, trimmed.
-spec last_lines(binary(), pos_integer()) -> [binary()].
last_lines(Output, N) ->
    Lines = [string:trim(plain(L)) || L <- binary:split(Output, [<<"\n">>, <<"\r">>], [global])],
    NonEmpty = [L || L <- Lines, L =/= <<>>],
    lists:nthtail(max(0, length(NonEmpty) - N), NonEmpty).

%% A tool's line as text: terminal escapes (rebar3's colours, ESC [ ... m,
%% and any other CSI or OSC sequence) and other control characters
%% removed, so that a quoted line reads the same on any output (#34).
plain(Line) ->
    NoCsi = re:replace(Line, "\e(\\[[0-?]*[ -/]*[@-~]|\\][^\a\e]*(\a|\e\\\\)?|[()*+#%]?[@-_0-9A-Za-z])", "",
                       [global, {return, binary}]),
    %% Bytes that are not UTF-8 as Latin-1 characters: string:trim/1
    %% raises on invalid UTF-8.
    unicode:characters_to_binary(beamlab_input_text:decode(
                                   << <<C>> || <<C>> <= NoCsi, C >= 32 orelse C =:= $\t >>)).

%% @doc One line for an error of this module.
-spec format_error(error_reason()) -> iolist().
format_error(Reason) ->
    beamlab_format_reason:line(fun error_line/1, Reason).

error_line({not_found, Program}) ->
    io_lib:format("~ts: command not found (is it installed and on the PATH?)", [Program]);
error_line({exit, Program, Status, Output}) ->
    Last = case last_lines(Output, 1) of
               [L] -> [": ", L];
               [] -> []
           end,
    [io_lib:format("~ts exited with status ~b", [Program, Status]) | Last];
error_line({interrupted, Program}) ->
    io_lib:format("~ts was interrupted", [Program]);
error_line({timeout, Program, Ms}) ->
    io_lib:format("~ts did not finish within ~ts (stopped; --timeout sets the deadline)",
                  [Program, seconds(Ms)]);
error_line(Other) ->
    %% (a reason of no kind above: printed, never raised)
    beamlab_format_reason:term(Other).

seconds(Ms) when Ms rem 1000 =:= 0 -> integer_to_list(Ms div 1000) ++ " s";
seconds(Ms) -> io_lib:format("~.1f s", [Ms / 1000]).
