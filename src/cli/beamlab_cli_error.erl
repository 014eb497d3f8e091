%%% @doc How the command line reports a problem, as a value: a user's
%%% mistake ({@link usage_error/2}, exit code 2) or a failure
%%% ({@link failure/2}, exit code 1). Commands and helpers return
%%% `{error, Reason}'; the dispatcher ({@link beamlab_cli}) prints
%%% {@link format_error/1} as one line on stderr and exits with
%%% {@link exit_code/1}. Nothing here throws (#31): a command that ends
%%% deep in its parsing throws only inside itself and catches at its own
%%% exported entries (`include/beamlab_cli_error.hrl').
-module(beamlab_cli_error).

-export([usage_error/2, failure/2, format_error/1, exit_code/1]).

-type kind() :: usage | fail.
-type reason() :: {kind(), unicode:chardata()}.
-export_type([kind/0, reason/0]).

%% @doc A usage error (exit code 2): the user's mistake, in one line.
-spec usage_error(io:format(), [term()]) -> {error, reason()}.
usage_error(Fmt, Args) ->
    {error, {usage, io_lib:format(Fmt, Args)}}.

%% @doc A runtime failure (exit code 1), in one line.
-spec failure(io:format(), [term()]) -> {error, reason()}.
failure(Fmt, Args) ->
    {error, {fail, io_lib:format(Fmt, Args)}}.

%% @doc The line of an error, whatever the term (`beamlab_format_reason').
%% The dispatcher prints the message itself (redacted, its line breaks
%% made spaces).
-spec format_error(reason()) -> unicode:chardata().
format_error(Reason) ->
    beamlab_format_reason:line(fun error_line/1, Reason).

error_line({Kind, Msg}) when Kind =:= usage; Kind =:= fail -> Msg.

%% @doc The exit code of an error: 2 for a usage error, 1 for a failure.
-spec exit_code(reason()) -> 1 | 2.
exit_code({usage, _}) -> 2;
exit_code({fail, _}) -> 1.
