%%% @doc RFC 4180 CSV: encoding rows of fields, and parsing them back.
%%%
%%% Fields containing a comma, a double quote, CR or LF are quoted, quotes are
%%% doubled; records end with CRLF as the RFC asks. Numbers are written in a
%%% form spreadsheets and `float()' parsers read back exactly.
-module(beamlab_format_csv).

-export([encode/1, encode_row/1, field/1, decode/1, format_error/1]).

-type field() :: binary() | string() | atom() | number() | null.
-export_type([field/0]).

%% @doc Encode rows (the first one is usually the header) as CSV.
-spec encode([[field()]]) -> binary().
encode(Rows) ->
    iolist_to_binary([encode_row(R) || R <- Rows]).

%% @doc Encode one record, CRLF-terminated.
-spec encode_row([field()]) -> iodata().
encode_row(Fields) ->
    [lists:join($,, [field(F) || F <- Fields]), "\r\n"].

%% @doc Encode one field; `null' and `undefined' become an empty field.
-spec field(field() | undefined) -> binary().
field(null) -> <<>>;
field(undefined) -> <<>>;
field(true) -> <<"true">>;
field(false) -> <<"false">>;
field(A) when is_atom(A) -> quote(atom_to_binary(A, utf8));
field(I) when is_integer(I) -> integer_to_binary(I);
field(F) when is_float(F) -> float_to_binary(F, [short]);
field(S) when is_list(S) -> quote(unicode:characters_to_binary(S));
field(B) when is_binary(B) -> quote(B).

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

%% Internals

quote(B) ->
    case binary:match(B, [<<",">>, <<"\"">>, <<"\r">>, <<"\n">>]) of
        nomatch -> B;
        _ -> <<$", (binary:replace(B, <<"\"">>, <<"\"\"">>, [global]))/binary, $">>
    end.

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
