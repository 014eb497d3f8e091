-module(prop_beamlab_csv).
%% Written against PropEr's functions rather than its macros: Debian's
%% erlang-proper ships no include/proper.hrl (that is erlang-proper-dev).
-export([prop_parse_back/0]).

%% Any table of text fields survives encode + decode unchanged; fields are
%% drawn from an alphabet rich in the characters that need quoting.
prop_parse_back() ->
    proper:forall(proper_types:non_empty(proper_types:list(row())),
                  fun(Rows) ->
                          {ok, Back} = beamlab_csv_decoder:decode(beamlab_format_csv:encode(Rows)),
                          Back =:= Rows
                  end).

%% A record of one empty field would be an empty line, which RFC 4180 cannot
%% tell from no record; the encoder never writes such rows, so neither do we.
row() ->
    proper_types:add_constraint(proper_types:non_empty(proper_types:list(field())),
                           fun(R) -> R =/= [<<>>] end, true).

field() ->
    proper_types:bind(
      proper_types:list(proper_types:oneof([$a, $Z, $0, $,, $", $\r, $\n, $\s, $;, 16#e9])),
      fun(Chars) -> unicode:characters_to_binary(Chars) end, false).
