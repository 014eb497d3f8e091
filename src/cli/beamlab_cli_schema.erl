%%% @doc A command's side of an experiment kind's schema
%%% ({@link beamlab_schema}): the kind's flags in the order its help
%%% shows them, the flags given as the kind's option map (in the keys'
%%% units), and a refusal as the command line's usage error (a value, #31). A
%%% command's options are the kind's options that have a flag plus the
%%% command line's own (format, save, ...).
-module(beamlab_cli_schema).

-export([flags/2, given/2, refusal/1]).

%% @doc The flags of the options named `Names' of `Schema', in that
%% order (`beamlab_schema:flags/1': in the flag's units and type).
-spec flags(beamlab_schema:schema(), [atom()]) -> [beamlab_cli_args:option()].
flags(Schema, Names) ->
    Flags = beamlab_schema:flags(Schema),
    [F || N <- Names, #{name := M} = F <- Flags, M =:= N].

%% @doc The options of `Schema' given on the command line, by their keys
%% and in their keys' units (`beamlab_schema:from_flags/2'), the text of
%% a flag the kind reads itself read by its `parse' (`beamlab_schema:parse/2';
%% text that reads as no value is a usage error): the map the kind's
%% `new/1' and the library take.
-spec given(beamlab_schema:schema(), beamlab_cli_args:parsed()) ->
          {ok, #{atom() => term()}} | {error, beamlab_cli_error:reason()}.
given(Schema, #{opts := Opts} = Parsed) ->
    case beamlab_schema:parse(Schema, beamlab_schema:from_flags(Schema, maps:with(maps:get(given, Parsed, []), Opts))) of
        {ok, Given} -> {ok, Given};
        {error, R} -> refusal(R)
    end.

%% @doc The usage error of the kind's refusal of an option, in one line
%% naming the flags.
-spec refusal(beamlab_schema:error_reason()) -> {error, beamlab_cli_error:reason()}.
refusal(Reason) ->
    beamlab_cli_error:usage_error("~ts", [beamlab_schema:format_error(Reason, flag)]).
