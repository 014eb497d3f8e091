%%% @doc RFC 4180 CSV: encoding rows of fields.
%%%
%%% Fields containing a comma, a double quote, CR or LF are quoted, quotes are
%%% doubled; records end with CRLF as the RFC asks. Numbers are written in a
%%% form spreadsheets and `float()' parsers read back exactly.
%%%
%%% A text field that starts with `=', `+', `-', `@' or a tab would be read
%%% as a formula by a spreadsheet (CSV injection): it gets a leading `''
%%% and is quoted, so it shows as the text it is. Numbers (negative ones
%%% included) are numbers and are written as they are.
-module(beamlab_format_csv).

-export([encode/1, encode_row/1, field/1]).

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

%% Internals

quote(<<C, _/binary>> = B) when C =:= $=; C =:= $+; C =:= $-; C =:= $@; C =:= $\t ->
    <<$", $', (binary:replace(B, <<"\"">>, <<"\"\"">>, [global]))/binary, $">>;
quote(B) ->
    case binary:match(B, [<<",">>, <<"\"">>, <<"\r">>, <<"\n">>]) of
        nomatch -> B;
        _ -> <<$", (binary:replace(B, <<"\"">>, <<"\"\"">>, [global]))/binary, $">>
    end.
