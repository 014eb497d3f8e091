%%% @doc The recovery run of the escript's launcher. When the VM running
%%% `run' or `suite' stops without beamlab (benchmarked code called halt or
%%% init:stop where beamlab could not see it, an allocation too large to
%%% fit ended the emulator), the launcher starts the escript again with
%%% `BEAMLAB_RECOVER=Status': this module loads the checkpoint the stopped
%%% VM left ({@link beamlab_runtime_checkpoint}) and prints and saves the
%%% partial result as an interrupted run would, with one line naming the
%%% job (or suite point) that stopped the VM, its exit status and the
%%% likely cause. Without a usable checkpoint it says only that the VM
%%% stopped. See docs/reliability.md, "Benchmarked code that stops the VM".
%%% Status 130 is SIGINT sent to the VM alone (the VM cannot catch it): an
%%% interrupt, recovered as one (docs/reliability.md, "Signals").
-module(beamlab_cli_recover).

-export([run/2]).

%% @doc Recovers from the checkpoint in `Dir' after the VM ended with
%% `StatusText' (its exit status, as the launcher saw it). Returns 0 once
%% it has said what it could (the launcher then exits 1, or with the
%% signal's status); anything else tells the launcher to say it instead.
-spec run(string(), string()) -> 0 | 1.
run(Dir, StatusText) ->
    Status = case string:to_integer(StatusText) of
                 {N, ""} when is_integer(N) -> N;
                 _ -> -1
             end,
    %% A progress line the stopped VM left on a terminal is cleared.
    beamlab_runtime_progress:stderr_is_terminal() andalso io:put_chars(standard_error, "\r\e[K"),
    try recover(Dir, Status)
    catch
        Class:Reason:Stack ->
            case os:getenv("BEAMLAB_DEBUG", "") of
                D when D =:= ""; D =:= "0" -> ok;
                _ -> io:format(standard_error, "beamlab: recovery failed~n~tp~n", [{Class, Reason, Stack}])
            end,
            stopped(Status)
    end.

recover("", Status) ->
    stopped(Status);
recover(Dir, Status) ->
    case beamlab_runtime_checkpoint:load(Dir) of
        {ok, #{context := #{command := Command, parsed := Parsed}, state := State}} ->
            case rebuild(Command, State, Status) of
                {ok, Mod, Doc} -> emit(Mod, Doc, Parsed, Status);
                {error, _} -> stopped(Status)
            end;
        _ ->
            stopped(Status)
    end.

rebuild("run", State, Status) ->
    case beamlab_engine:recover(State, Status) of
        {ok, Doc} -> {ok, beamlab_command_run, Doc};
        {error, _} = E -> E
    end;
rebuild("suite", State, Status) ->
    case beamlab_suite:recover(State, Status) of
        {ok, Doc} -> {ok, beamlab_command_suite, Doc};
        {error, _} = E -> E
    end;
rebuild(_Command, _State, _Status) ->
    {error, unknown_command}.

emit(Mod, Doc0, Parsed, Status) ->
    %% (the command's text view is looked up with function_exported/3)
    {module, Mod} = code:ensure_loaded(Mod),
    tell(Mod, Doc0, Status),
    Doc = beamlab_experiment_env:attach(Doc0),
    case beamlab_cli_output:emit(Mod, Doc, Parsed, false) of
        ok -> ok;
        {error, Reason} ->
            io:format(standard_error, "beamlab: ~ts~n", [beamlab_result:format_error(Reason)])
    end,
    0.

%% One line on stderr naming what stopped the VM (for `run', as every
%% failed job is told).
tell(_Mod, _Doc, 130) ->
    io:format(standard_error, "beamlab: ~ts~n", [beamlab_runtime_checkpoint:cause(130)]);
tell(beamlab_command_run, #{extra := #{<<"vm_stopped">> := #{<<"job">> := Job}}} = Doc, Status) ->
    {_, Lines} = beamlab_experiment:verdict(Doc),
    _ = [io:format(standard_error, "beamlab: ~ts~n", [L]) || L <- Lines],
    Job =:= null andalso after_measuring(Status);
tell(beamlab_command_suite, #{extra := #{<<"vm_stopped">> := #{<<"point">> := null}}}, Status) ->
    after_measuring(Status);
tell(beamlab_command_suite, #{extra := #{<<"vm_stopped">> := #{<<"point">> := Point},
                                     <<"failures">> := Failures}}, _Status) ->
    _ = [io:format(standard_error, "beamlab: ~ts: ~ts~n", [N, E])
         || #{<<"name">> := N, <<"error">> := E} <- Failures, N =:= Point],
    ok.

after_measuring(Status) ->
    io:format(standard_error, "beamlab: the VM stopped (exit status ~b) after the measurement: ~ts~n",
              [Status, beamlab_runtime_checkpoint:cause(Status)]).

%% Nothing to show: one line (none for a signal other than SIGINT, which
%% the launcher passes on silently as before).
stopped(130) ->
    io:put_chars(standard_error, "beamlab: interrupted: SIGINT reached the VM alone, which cannot "
                 "catch it, before anything was measured\n"),
    0;
stopped(Status) when Status >= 0, Status < 128 ->
    io:format(standard_error, "beamlab: the VM stopped before beamlab finished (exit status ~b): "
              "the benchmarked code may have stopped it (halt, init:stop) or it ran out of "
              "memory~n", [Status]),
    0;
stopped(_Status) ->
    0.
