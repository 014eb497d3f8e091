%%% @doc Test-only RFC 4180 CSV parser: reads back what
%%% `beamlab_format_csv' writes (the tests check CSV output through it).
-module(beamlab_csv_decoder).

-export([decode/1, format_error/1]).

%% @doc Parse CSV text into rows of binary fields (CRLF or LF line ends; a
%% final line break is optional).
-spec decode(binary()) -> {ok, [[binary()]]} | {error, term()}.
decode(<<>>) ->
    {ok, []};
decode(Bin) when is_binary(Bin) ->
    records(Bin, 1, []).

%% @doc One line describing a decode error.
-spec format_error(term()) -> iolist().
format_error({unterminated_quote, Line}) ->
    io_lib:format("CSV: quoted field opened on record ~b is never closed", [Line]);
format_error({junk_after_quote, Line}) ->
    io_lib:format("CSV: characters after a closing quote on record ~b", [Line]);
format_error(Other) ->
    io_lib:format("CSV: ~p", [Other]).

records(<<>>, _Line, Acc) ->
    {ok, lists:reverse(Acc)};
records(Bin, Line, Acc) ->
    case fields(Bin, Line, []) of
        {ok, Row, Rest} -> records(Rest, Line + 1, [Row | Acc]);
        {error, _} = E -> E
    end.

%% One record: fields until a line end or the end of input.
fields(Bin, Line, Acc) ->
    case field_value(Bin, Line) of
        {ok, F, <<",", Rest/binary>>} -> fields(Rest, Line, [F | Acc]);
        {ok, F, <<"\r\n", Rest/binary>>} -> {ok, lists:reverse([F | Acc]), Rest};
        {ok, F, <<"\n", Rest/binary>>} -> {ok, lists:reverse([F | Acc]), Rest};
        {ok, F, <<>>} -> {ok, lists:reverse([F | Acc]), <<>>};
        {ok, _, _} -> {error, {junk_after_quote, Line}};
        {error, _} = E -> E
    end.

field_value(<<$", Rest/binary>>, Line) ->
    quoted(Rest, Line, <<>>);
field_value(Bin, _Line) ->
    Len = case binary:match(Bin, [<<",">>, <<"\r\n">>, <<"\n">>]) of
              nomatch -> byte_size(Bin);
              {Pos, _} -> Pos
          end,
    <<F:Len/binary, Rest/binary>> = Bin,
    {ok, F, Rest}.

quoted(<<$", $", Rest/binary>>, Line, Acc) -> quoted(Rest, Line, <<Acc/binary, $">>);
quoted(<<$", Rest/binary>>, _Line, Acc) -> {ok, Acc, Rest};
quoted(<<C, Rest/binary>>, Line, Acc) -> quoted(Rest, Line, <<Acc/binary, C>>);
quoted(<<>>, Line, _Acc) -> {error, {unterminated_quote, Line}}.
