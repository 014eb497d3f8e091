%%% @doc Erlang expressions written as text in beamlab's own code, parsed
%%% into the abstract forms OTP's `erl_eval' evaluates on another node or
%%% VM, which may have none of beamlab's modules loaded (a peer before its
%%% preload, a watched node, a broker): an expression of OTP's modules
%%% only, sent as data, runs there where a fun of ours would not.
%%%
%%% The text is fixed in the caller's code, so a malformed one is the
%%% caller's bug, not a user's mistake: {@link parse/1} returns it as
%%% `{error, {Line, Message}}' (the scanner's or the parser's message,
%%% {@link format_error/1} prints it), and callers match `{ok, Exprs}',
%%% so the bug shows as a `badmatch' naming the line and the message the
%%% first time any test runs the caller. Pure.
-module(beamlab_runtime_expr).

-export([parse/1, format_error/1]).

-type error_reason() :: {erl_anno:line(), string()}.
-export_type([error_reason/0]).

%% @doc The expressions of `Text' (a deep list of characters: one or
%% more expressions separated by commas, ended by a full stop), in the
%% order written; `{error, {Line, Message}}' when the text does not scan
%% or parse.
-spec parse(io_lib:chars()) -> {ok, [erl_parse:abstract_expr()]} | {error, error_reason()}.
parse(Text) ->
    case erl_scan:string(lists:flatten(Text)) of
        {ok, Tokens, _} ->
            case erl_parse:parse_exprs(Tokens) of
                {ok, Exprs} -> {ok, Exprs};
                {error, {Loc, Mod, Desc}} -> {error, {line(Loc), lists:flatten(Mod:format_error(Desc))}}
            end;
        {error, {Loc, Mod, Desc}, _} ->
            {error, {line(Loc), lists:flatten(Mod:format_error(Desc))}}
    end.

%% @doc One line for a reason of {@link parse/1}.
-spec format_error(error_reason()) -> unicode:chardata().
format_error(Reason) ->
    beamlab_format_reason:line(fun error_line/1, Reason).

error_line({Line, Message}) when is_integer(Line) ->
    io_lib:format("expression text, line ~B: ~ts", [Line, Message]).

%% (a location: a line, or a line and a column)
line({Line, _Column}) -> Line;
line(Line) -> Line.
