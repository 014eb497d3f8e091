%%% @doc The escript entry point: dispatches `beamlab COMMAND ...' to the
%%% command modules, turns user mistakes into one line on stderr with the
%%% right exit code, and never lets a stack trace or crash dump reach a user.
%%%
%%% Command modules implement {@link beamlab_command}. They return their
%%% exit code and result document, which the dispatcher hands to
%%% {@link beamlab_cli_output}, or an error value
%%% ({@link beamlab_cli_error:usage_error/2}, exit 2;
%%% {@link beamlab_cli_error:failure/2}, exit 1), which it prints as one
%%% line on stderr.
-module(beamlab_cli).

-export([main/1, launched/1, run_command/1, run_command/2]).

-define(EXIT_USAGE, 2).
-define(EXIT_FAIL, 1).

-type exit_code() :: beamlab_command:exit_code().
-export_type([exit_code/0]).

%% @doc Escript entry point. Never returns: halts with the command's exit code.
-spec main([beamlab_input_text:raw_arg()]) -> no_return().
main(RawArgv) ->
    main(RawArgv, #{}).

%% @doc The command's VM of a build tool's entry ({@link
%% beamlab_cli_launch}: `-run beamlab_cli launched FILE'): runs the
%% command line and options of {@link run_command/2} (`project') that
%% `FILE' holds, as the escript runs under its launcher.
-spec launched([string()]) -> no_return().
launched([Job]) ->
    {ok, Bin} = file:read_file(Job),
    {Argv, Extra} = binary_to_term(Bin),
    main(Argv, Extra).

-spec main([beamlab_input_text:raw_arg()], #{project => beamlab_project_build:project()}) -> no_return().
main(RawArgv, Extra) ->
    %% Arguments that are not UTF-8 reach us as {error, Good, Rest}
    %% tuples: decoded once here, with a fallback that never fails
    %% (beamlab_input_text), so every command sees strings. A file they
    %% name keeps its bytes on disk (beamlab_input_text:native_name/1).
    Argv = [beamlab_input_text:decode(A) || A <- RawArgv],
    %% An escript's standard output starts as latin1: µ, ± and sparklines
    %% would be mangled.
    ok = io:setopts(standard_io, [{encoding, unicode}]),
    %% The same for standard error: a Latin-1 device writes µ or ÿ as one
    %% byte that is not UTF-8.
    ok = io:setopts(standard_error, [{encoding, unicode}]),
    %% Set by the escript's launcher line (rebar.config): our exit codes
    %% 0, 1, 2 travel as 200, 201, 202, so that any other status tells the
    %% launcher the VM stopped without us (benchmarked code, memory).
    Launched = os:getenv("BEAMLAB_LAUNCHER") =:= "1",
    Launched andalso os:unsetenv("BEAMLAB_LAUNCHER"),
    %% The launcher's private directory for checkpoints (fresh VMs started
    %% from here must not inherit it), and, when the VM it started stopped
    %% without beamlab, the recovery run.
    Checkpoint = os:getenv("BEAMLAB_CHECKPOINT", ""),
    Recover = os:getenv("BEAMLAB_RECOVER", ""),
    _ = [os:unsetenv(V) || V <- ["BEAMLAB_CHECKPOINT", "BEAMLAB_RECOVER"]],
    %% An escript does not load its application: without this, settings
    %% of the application environment given on the command line
    %% (`ERL_FLAGS="-beamlab amqp_direct_reads true"') would be ignored.
    _ = application:load(beamlab),
    %% Log events (from benchmarked code too) never go into the output.
    ok = beamlab_runtime_logs:to_stderr(),
    case Recover of
        "" ->
            beamlab_runtime_interrupt:install(#{launcher => Launched, private_dir => Checkpoint}),
            Opts = case Launched andalso Checkpoint =/= "" of
                       true -> Extra#{checkpoint => Checkpoint};
                       false -> Extra
                   end,
            {Code, _} = run_command(Argv, Opts),
            halt_flushed(launcher_code(Launched, Code));
        _ ->
            halt_flushed(beamlab_cli_recover:run(Checkpoint, Recover))
    end.

launcher_code(true, Code) when Code >= 0, Code =< 2 -> 200 + Code;
launcher_code(true, 130) -> 203;
launcher_code(_, Code) -> Code.

%% @doc Runs a command line inside this VM and returns its exit code and the
%% result document it emitted (if any). Used by `beamlab matrix' to run the
%% inner command in a fresh VM, and by tests.
-spec run_command([string()]) -> {exit_code(), beamlab_result:result() | undefined}.
run_command(Argv) ->
    run_command(Argv, #{}).

%% @doc As {@link run_command/1}; `#{quiet => true}' suppresses printing of
%% results (the document is still returned); `#{errors => return}' returns
%% the one-line error message as `{error, Message}' in place of the
%% document instead of printing it (the matrix shows it for the VM that
%% ran the command); `#{checkpoint => Dir}' keeps a checkpoint of the
%% measurement in the launcher's private directory (`run', `suite');
%% `#{project => Project}' is the project a build tool has built already
%% (the rebar3 plugin, the Mix task: `run --bench', `check').
-spec run_command([string()], #{quiet => boolean(), errors => print | return,
                                checkpoint => string(),
                                project => beamlab_project_build:project()}) ->
          {exit_code(), beamlab_result:result() | undefined | {error, binary()}}.
run_command(Argv, Opts) ->
    Report = fun(Code, Msg) ->
                     case maps:get(errors, Opts, print) of
                         return -> {Code, {error, unicode:characters_to_binary(one_line(Msg))}};
                         print -> print_error(Msg), {Code, undefined}
                     end
             end,
    try dispatch(Argv, Opts) of
        {error, {_Kind, Msg} = Reason} ->
            Report(beamlab_cli_error:exit_code(Reason), Msg);
        {Code, Doc} ->
            {Code, Doc}
    catch
        %% A crash is an internal error: one line, never a stack trace.
        Class:Reason:Stack ->
            case maps:get(errors, Opts, print) of
                return -> Report(?EXIT_FAIL, internal_text(Class, Reason));
                print -> internal_error(Class, Reason, Stack), {?EXIT_FAIL, undefined}
            end
    end.

version() ->
    beamlab_result:tool_version().

commands() ->
    beamlab_command:all().

%%--------------------------------------------------------------------
%% Dispatch

dispatch([], _Opts) ->
    %% A mistake like any other (the full usage is `beamlab help''s, on
    %% stdout): one line, exit 2.
    beamlab_cli_error:usage_error("nothing to run: give Erlang code or a command "
                                  "(example: beamlab 'rand:uniform().'; see: beamlab help)", []);
dispatch(["--version" | _], _Opts) ->
    io:format("beamlab ~ts (OTP ~s, erts ~s)~n",
              [version(), erlang:system_info(otp_release), erlang:system_info(version)]),
    {0, undefined};
dispatch([H | Rest], _Opts) when H =:= "help"; H =:= "--help"; H =:= "-h" ->
    help(Rest);
dispatch(Argv, Opts) ->
    case beamlab_command:find(Argv) of
        {ok, Name, Mod, Args} -> run_module(Name, Mod, Args, Argv, Opts);
        {unknown, Cmd} ->
            beamlab_cli_error:usage_error("unknown command '~ts' (commands: ~ts; or give Erlang code to "
                                    "benchmark, e.g. beamlab 'rand:uniform().')",
                                    [Cmd, string:join([N || {N, _} <- commands()], ", ")])
    end.

run_module(Name, Mod, Args, Argv, Opts) ->
    %% (What follows `--' is an inner command's: its `-h' is not ours.)
    Own = lists:takewhile(fun(A) -> A =/= "--" end, Args),
    case ensure_available(Name, Mod) of
        ok ->
            case lists:any(fun(F) -> lists:member(F, Own) end, beamlab_command:help_flags(Mod)) of
                true ->
                    io:put_chars(command_help(Name, Mod)),
                    {0, undefined};
                false ->
                    case beamlab_cli_args:parse(Args, Mod:options()) of
                        {ok, Parsed0} ->
                            Parsed = maps:merge(Parsed0#{command => Name, argv => Argv},
                                                maps:with([checkpoint, project], Opts)),
                            run_parsed(Mod, Parsed, Opts);
                        {error, Msg} ->
                            beamlab_cli_error:usage_error("~ts (see: beamlab help ~ts)", [Msg, Name])
                    end
            end;
        {error, _} = Error ->
            Error
    end.

run_parsed(Mod, Parsed, Opts) ->
    Checked = case beamlab_cli_output:check_save(Parsed) of
                  ok -> beamlab_cli_output:check_files(Mod, Parsed);
                  Refused -> Refused
              end,
    case Checked of
        ok -> run_checked(Mod, Parsed, Opts);
        {error, _} = Error -> Error
    end.

run_checked(Mod, Parsed, Opts) ->
    {ok, Cwd} = file:get_cwd(),
    Outcome = Mod:run(Parsed),
    %% Benchmarked code may have moved the working directory
    %% (file:set_cwd/1): relative paths (--save) mean what they
    %% meant on the command line.
    ok = restore_cwd(Cwd),
    %% Measured: from here on the command prints its result itself.
    ok = beamlab_runtime_checkpoint:clear(maps:get(checkpoint, Opts, none)),
    case Outcome of
        {error, _} = Error ->
            Error;
        {Code, none} ->
            {Code, undefined};
        {Code, Doc} ->
            case beamlab_cli_output:emit(Mod, Doc, Parsed, maps:get(quiet, Opts, false)) of
                ok -> {Code, Doc};
                {error, Reason} -> beamlab_cli_error:failure("~ts", [beamlab_result:format_error(Reason)])
            end
    end.

restore_cwd(Cwd) ->
    case file:get_cwd() of
        {ok, Cwd} -> ok;
        {ok, Moved} ->
            io:format(standard_error, "beamlab: the benchmarked code changed the working directory "
                      "to ~ts; back to ~ts~n", [Moved, Cwd]),
            file:set_cwd(Cwd);
        {error, _} -> file:set_cwd(Cwd)
    end.

ensure_available(Name, Mod) ->
    case code:ensure_loaded(Mod) of
        {module, Mod} -> ok;
        {error, _} -> beamlab_cli_error:failure("command '~ts' is not available in this build", [Name])
    end.

help([]) ->
    io:put_chars(top_help()),
    {0, undefined};
help([Cmd | _]) ->
    case lists:keyfind(Cmd, 1, commands()) of
        {Cmd, Mod} ->
            case ensure_available(Cmd, Mod) of
                ok ->
                    io:put_chars(command_help(Cmd, Mod)),
                    {0, undefined};
                {error, _} = Error ->
                    Error
            end;
        false ->
            beamlab_cli_error:usage_error("no help for unknown command '~ts' (try: beamlab help)", [Cmd])
    end.

top_help() ->
    Available = [{N, M} || {N, M} <- commands(), code:ensure_loaded(M) =:= {module, M}],
    Width = lists:max([length(N) || {N, _} <- Available] ++ [4]),
    ["beamlab ", version(), ": a performance lab for the Erlang VM\n\n"
     "Usage:\n"
     "  beamlab CODE... [OPTIONS]        benchmark Erlang code (same as: beamlab run)\n"
     "  beamlab COMMAND [ARGS] [OPTIONS]\n"
     "  beamlab help [COMMAND]\n"
     "  beamlab --version\n\n"
     "Commands:\n",
     [io_lib:format("  ~-*s  ~ts~n", [Width, N, M:summary()]) || {N, M} <- Available],
     "\nExamples:\n"
     "  beamlab 'rand:uniform().'\n"
     "  beamlab 'rand:uniform().' 'crypto:strong_rand_bytes(2).' -s 10 -w 1\n"
     "  beamlab suite ping_pong --param ping_pong.size=0,100,1000\n"
     "  beamlab env\n"].

command_help(Name, Mod) ->
    ["beamlab ", Name, ": ", Mod:summary(), "\n\n",
     Mod:usage(), "\n",
     "Options:\n", beamlab_cli_args:help(Mod:options())].

%%--------------------------------------------------------------------
%% Errors

print_error(Msg) ->
    io:put_chars(standard_error, ["beamlab: ", one_line(Msg), "\n"]).

%% Secrets never reach an error line either (a URI or a cookie flag the
%% message quotes).
one_line(Msg) ->
    Text = beamlab_result_redact:text(Msg),
    string:trim(lists:flatten(string:replace(unicode:characters_to_list(Text), "\n", " ", all))).

internal_error(Class, Reason, Stack) ->
    case os:getenv("BEAMLAB_DEBUG") of
        Debug when Debug =:= false; Debug =:= ""; Debug =:= "0" ->
            print_error(internal_text(Class, Reason));
        _ ->
            io:format(standard_error, "beamlab: internal error~n~tp~n", [{Class, Reason, Stack}])
    end.

internal_text(Class, Reason) ->
    io_lib:format("internal error: ~0tP (rerun with BEAMLAB_DEBUG=1 for details, and "
                  "please report it)", [{Class, Reason}, 12]).

%% An epmd a command started for its distribution (`suite' with a peer
%% VM, `amqp' nodes, `node') goes with it.
-spec halt_flushed(non_neg_integer()) -> no_return().
halt_flushed(Code) ->
    ok = beamlab_runtime_peer:release_epmd(),
    erlang:halt(Code, [{flush, true}]).
