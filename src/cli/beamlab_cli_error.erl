%%% @doc How the command line reports a problem: a user's mistake
%%% ({@link usage/2}, exit code 2) or a failure ({@link fail/2}, exit code
%%% 1). Both throw; the dispatcher ({@link beamlab_cli}) catches them with
%%% {@link caught/2} and prints one line on stderr. Commands and
%%% helpers call this module, never the dispatcher, so the command line
%%% has no call cycle.
-module(beamlab_cli_error).

-export([usage/2, fail/2, caught/2]).

-type kind() :: usage | fail.
-export_type([kind/0]).

%% @doc Aborts the current command with a usage error (exit code 2).
-spec usage(io:format(), [term()]) -> no_return().
usage(Fmt, Args) ->
    throw({?MODULE, usage, io_lib:format(Fmt, Args)}).

%% @doc Aborts the current command with a runtime failure (exit code 1).
-spec fail(io:format(), [term()]) -> no_return().
fail(Fmt, Args) ->
    throw({?MODULE, fail, io_lib:format(Fmt, Args)}).

%% @doc What a caught `throw' means: `{Kind, Message}' for one raised here,
%% `other' for anything else (to be handled as an internal error).
-spec caught(throw, term()) -> {kind(), unicode:chardata()} | other.
caught(throw, {?MODULE, Kind, Msg}) when Kind =:= usage; Kind =:= fail -> {Kind, Msg};
caught(_, _) -> other.
