%%% @doc The contract of a `beamlab' command module: its help, its options,
%%% and `run/1', which returns the exit code and the result document (or
%%% `none' when the command printed its own output, as `env', `compare'
%%% and `report' do). The dispatcher ({@link beamlab_cli}) parses the
%%% options and hands the document to {@link beamlab_cli_output}, which
%%% prints it in the chosen format and saves it; `text/2' gives the
%%% command's own text view. A command that runs an experiment parses its
%%% options into the experiment's description (`experiment/1') and runs it
%%% through the experiment layer ({@link beamlab_experiment}); `matrix'
%%% and `profile' parse their inner command the same way.
-module(beamlab_command).

-export([all/0, find/1, help_flags/1]).

-type exit_code() :: 0 | 1 | 2 | 130.
%% A command's outcome: its exit code and document, or its error (a
%% value: the dispatcher prints its one line and exits 2 or 1).
-type outcome() :: {exit_code(), beamlab_result:result() | none} | {error, beamlab_cli_error:reason()}.
-export_type([exit_code/0, outcome/0]).

%% One line for `beamlab help'.
-callback summary() -> string().
%% The command's options (see beamlab_cli_args).
-callback options() -> [beamlab_cli_args:option()].
%% Extra help text: usage line and examples.
-callback usage() -> iodata().
%% Runs the command; user mistakes are beamlab_cli_error:usage_error/2,
%% failures before anything was measured beamlab_cli_error:failure/2.
-callback run(beamlab_cli_args:parsed()) -> outcome().
%% The command's text view of its document (default: the generic table).
-callback text(beamlab_result:result(), beamlab_cli_args:parsed()) -> unicode:chardata().
%% The flags that ask for help (default `--help' and `-h'; `amqp' keeps
%% PerfTest's `-h' for the broker URI).
-callback help_flags() -> [string()].
%% The experiment the options describe (commands that run one); user
%% mistakes are beamlab_cli_error:usage_error/2. No side effect: the inner
%% command of a matrix runs in another VM.
-callback experiment(beamlab_cli_args:parsed()) ->
    {ok, beamlab_experiment:experiment()} | {error, beamlab_cli_error:reason()}.

%% The kind of experiment it runs (beamlab_experiment_kind), for commands
%% with experiment/1.
-callback kind() -> beamlab_experiment:kind().
%% The files the command line names besides `--save': what it reads and
%% what it writes (option and path), checked by the dispatcher before
%% anything runs so that no output is an input or another output.
-callback files(beamlab_cli_args:parsed()) -> #{inputs => [beamlab_runtime_file:named()],
                                                 outputs => [beamlab_runtime_file:named()]}.

-optional_callbacks([text/2, help_flags/0, experiment/1, kind/0, files/1]).

%% @doc The command table: the name a user types and its module.
-spec all() -> [{string(), module()}].
all() ->
    [{"run", beamlab_command_run},
     {"suite", beamlab_command_suite},
     {"env", beamlab_command_env},
     {"matrix", beamlab_command_matrix},
     {"compare", beamlab_command_compare},
     {"report", beamlab_command_report},
     {"amqp", beamlab_command_amqp},
     {"profile", beamlab_command_profile},
     {"watch", beamlab_command_watch},
     {"node", beamlab_command_node},
     {"check", beamlab_command_check},
     {"doctor", beamlab_command_doctor}].

%% @doc The command a command line runs: its name, its module and its
%% arguments. A first word that names no command is the bare form of
%% `run' (`beamlab CODE...', flags first as erlperf takes them: `beamlab
%% -c 4 CODE'), unless it is a word of letters only, which is a mistyped
%% command (code always has punctuation: a dot, parentheses, braces).
-spec find([string(), ...]) -> {ok, string(), module(), [string()]} | {unknown, string()}.
find([Word | Rest] = Argv) ->
    case lists:keyfind(Word, 1, all()) of
        {Word, Mod} -> {ok, Word, Mod, Rest};
        false ->
            case looks_like_command(Word) of
                true -> {unknown, Word};
                false -> {ok, "run", beamlab_command_run, Argv}
            end
    end.

%% @doc The flags that ask `Mod' for its help.
-spec help_flags(module()) -> [string()].
help_flags(Mod) ->
    case erlang:function_exported(Mod, help_flags, 0) of
        true -> Mod:help_flags();
        false -> ["--help", "-h"]
    end.

looks_like_command([$- | _]) -> false;
looks_like_command(Word) ->
    Word =/= [] andalso lists:all(fun(C) -> (C >= $a andalso C =< $z) orelse C =:= $- orelse C =:= $_ end, Word).
