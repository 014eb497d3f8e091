%%% @doc An experiment kind's schema ({@link beamlab_schema}) as the
%%% command line's flags, and the flags given as the kind's option map
%%% (#31): a command's options are the kind's options that have a flag
%%% (their type, default, bounds, metavar and help as the schema declares
%%% them) plus the command line's own (format, save, ...). The value of a
%%% flag in other units than its key (`cli_scale': seconds on the command
%%% line, milliseconds in the map) is converted here, so the kind checks
%%% the same map whichever front end built it.
-module(beamlab_cli_schema).

-export([flags/1, flags/2, given/2, refuse/1]).

%% @doc The flags of `Schema': its options that have a short or a long
%% name, as `beamlab_cli_args' reads them (`cli_type' the type read, the
%% bounds in the flag's units).
-spec flags(beamlab_schema:schema()) -> [beamlab_cli_args:option()].
flags(Schema) ->
    [flag(O) || O <- Schema, is_map_key(short, O) orelse is_map_key(long, O)].

%% @doc The flags of the options named `Names' of `Schema', in that order.
-spec flags(beamlab_schema:schema(), [atom()]) -> [beamlab_cli_args:option()].
flags(Schema, Names) ->
    [flag(O) || N <- Names, {ok, O} <- [beamlab_schema:find(N, Schema)]].

flag(O) ->
    Type = beamlab_schema:cli_type(O),
    Bounds = maps:from_list([{K, beamlab_schema:to_flag_units(O, V)} || K <- [max, min, default],
                                                                       {ok, V} <- [maps:find(K, O)]]),
    maps:merge(maps:without([cli_type, cli_scale, conflicts, requires, why, requires_format, min, min_why],
                            O#{type => Type}),
               maps:without([min], Bounds)).

%% @doc The options of `Schema' given on the command line, by their keys
%% and in their keys' units: what the kind's `new/1' takes.
-spec given(beamlab_schema:schema(), beamlab_cli_args:parsed()) -> #{atom() => term()}.
given(Schema, Parsed) ->
    Given = maps:get(given, Parsed, []),
    maps:from_list([{N, to_key_units(O, beamlab_cli_args:get(N, Parsed))}
                    || #{name := N} = O <- flags_of(Schema), lists:member(N, Given)]).

flags_of(Schema) ->
    [O || O <- Schema, is_map_key(short, O) orelse is_map_key(long, O)].

to_key_units(#{cli_scale := Scale}, V) when is_number(V), V > 0 ->
    %% (at least 1: a positive number of seconds is a positive number of ms)
    max(1, round(V * Scale));
to_key_units(#{cli_scale := Scale}, V) when is_number(V) ->
    round(V * Scale);
to_key_units(_, V) ->
    V.

%% @doc Ends the command with a usage error: the kind's refusal of an
%% option, in one line naming the flags.
-spec refuse(beamlab_schema:error_reason()) -> no_return().
refuse(Reason) ->
    beamlab_cli_error:usage("~ts", [beamlab_schema:format_error(Reason, flag)]).
