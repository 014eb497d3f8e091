%%% @doc The contract of a `beamlab' command module: its help, its options,
%%% and `run/1', which returns the exit code and the result document (or
%%% `none' when the command printed its own output, as `env', `compare'
%%% and `report' do). The dispatcher ({@link beamlab_cli}) parses the
%%% options, attaches the environment report, and hands the document to
%%% {@link beamlab_cli_output}, which prints it in the chosen format and
%%% saves it; `text/2' gives the command's own text view.
-module(beamlab_command).

-export([all/0]).

-type exit_code() :: 0 | 1 | 2 | 130.
-type outcome() :: {exit_code(), beamlab_result:result() | none}.
-export_type([exit_code/0, outcome/0]).

%% One line for `beamlab help'.
-callback summary() -> string().
%% The command's options (see beamlab_cli_args).
-callback options() -> [beamlab_cli_args:option()].
%% Extra help text: usage line and examples.
-callback usage() -> iodata().
%% Runs the command; user mistakes end in beamlab_cli_error:usage/2,
%% failures before anything was measured in beamlab_cli_error:fail/2.
-callback run(beamlab_cli_args:parsed()) -> outcome().
%% The command's text view of its document (default: the generic table).
-callback text(beamlab_result:result(), beamlab_cli_args:parsed()) -> unicode:chardata().
%% The flags that ask for help (default `--help' and `-h'; `amqp' keeps
%% PerfTest's `-h' for the broker URI).
-callback help_flags() -> [string()].

-optional_callbacks([text/2, help_flags/0]).

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
     {"check", beamlab_command_check}].
