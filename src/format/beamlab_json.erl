%%% @doc A small JSON codec (RFC 8259). OTP 25 has no `json' module, and
%%% result documents must round-trip exactly, so beamlab carries its own.
%%%
%%% Encoding: maps become objects (atom, binary, string or integer keys),
%%% lists and tuples become arrays, binaries become strings, `true', `false'
%%% and `null' are literals, other atoms become strings, floats are written
%%% in the shortest form that reads back to the same float.
%%%
%%% Decoding: objects become maps with binary keys, arrays lists, strings
%%% binaries (UTF-8), numbers integers or floats, literals atoms. Crafted
%%% input costs time linear in its size: nesting deeper than 512 and
%%% numbers longer than 1000 characters are refused (converting a number
%%% of n digits costs n^2), and bytes of a string that are not UTF-8 are
%%% read as Latin-1 characters, so every decoded string is valid UTF-8.
%%%
%%% ```
%%% 1> iolist_to_binary(beamlab_json:encode(#{a => [1, 2.5, <<"x">>]})).
%%% <<"{\"a\":[1,2.5,\"x\"]}">>
%%% 2> beamlab_json:decode(<<"{\"a\":[1,2.5,\"x\"]}">>).
%%% {ok,#{<<"a">> => [1,2.5,<<"x">>]}}
%%% '''
-module(beamlab_json).

-export([encode/1, encode/2, decode/1, canonical/1, format_error/1]).

%% Decoding limits (see the module doc).
-define(MAX_DEPTH, 512).
-define(MAX_NUMBER, 1000).

-type json() :: null | boolean() | number() | binary() | [json()] | object().
-type object() :: #{binary() => json()}.
-export_type([json/0, object/0]).

%% @doc Encodes a term as compact JSON.
-spec encode(term()) -> iodata().
encode(Term) ->
    enc(Term).

%% @doc Encodes with options: `#{pretty => true}' indents by two spaces.
-spec encode(term(), #{pretty => boolean()}) -> iodata().
encode(Term, #{pretty := true}) ->
    pretty(Term, 0);
encode(Term, _) ->
    enc(Term).

%% @doc Decodes a JSON text.
-spec decode(iodata()) -> {ok, json()} | {error, term()}.
decode(Data) ->
    Bin = iolist_to_binary(Data),
    try
        {Value, Rest} = value(skip_ws(Bin), 0),
        case skip_ws(Rest) of
            <<>> -> {ok, Value};
            Trailing -> {error, {trailing_data, byte_size(Bin) - byte_size(Trailing)}}
        end
    catch
        throw:{json_error, Reason, Where} ->
            {error, {Reason, byte_size(Bin) - byte_size(Where)}}
    end.

%% @doc The term as it reads back after encoding and decoding, computed
%% directly: binary keys, atoms other than `true', `false' and `null' as
%% strings (`undefined' as `null'), tuples as arrays, pids, ports,
%% references and funs as their printed form.
-spec canonical(term()) -> json().
canonical(B) when is_binary(B); is_number(B); is_boolean(B); B =:= null -> B;
canonical(undefined) -> null;
canonical(A) when is_atom(A) -> atom_to_binary(A, utf8);
canonical(L) when is_list(L) -> [canonical(X) || X <- L];
canonical(T) when is_tuple(T) -> canonical(tuple_to_list(T));
canonical(M) when is_map(M) -> maps:fold(fun(K, V, Acc) -> Acc#{key(K) => canonical(V)} end, #{}, M);
canonical(Other) -> iolist_to_binary(io_lib:format("~p", [Other])).

%% @doc Explains a decoding error in one line.
-spec format_error(term()) -> iolist().
format_error(Reason) ->
    beamlab_format_reason:line(fun error_line/1, Reason).

error_line({trailing_data, Pos}) ->
    io_lib:format("unexpected data after the JSON value at byte ~b", [Pos]);
error_line({Reason, Pos}) when is_integer(Pos) ->
    io_lib:format("invalid JSON at byte ~b: ~ts", [Pos, reason_text(Reason)]);
error_line(Other) ->
    io_lib:format("invalid JSON: ~0tP", [Other, 12]).

reason_text(unexpected_end) -> "unexpected end of input";
reason_text(unexpected_char) -> "unexpected character";
reason_text(bad_string) -> "bad string";
reason_text(bad_number) -> "bad number";
reason_text(bad_escape) -> "bad escape sequence";
reason_text(too_deep) -> io_lib:format("nested more than ~b levels deep", [?MAX_DEPTH]);
reason_text(number_too_long) -> io_lib:format("a number longer than ~b characters", [?MAX_NUMBER]);
reason_text(Other) -> beamlab_format_reason:term(Other).

%%--------------------------------------------------------------------
%% Encoding

enc(true) -> <<"true">>;
enc(false) -> <<"false">>;
enc(null) -> <<"null">>;
enc(undefined) -> <<"null">>;
enc(I) when is_integer(I) -> integer_to_binary(I);
enc(F) when is_float(F) -> float_text(F);
enc(B) when is_binary(B) -> string(B);
enc(A) when is_atom(A) -> string(atom_to_binary(A, utf8));
enc(L) when is_list(L) -> [$[, join([enc(X) || X <- L]), $]];
enc(T) when is_tuple(T) -> enc(tuple_to_list(T));
enc(M) when is_map(M) ->
    [${, join([[string(key(K)), $:, enc(V)] || {K, V} <- sorted(M)]), $}];
enc(Pid) when is_pid(Pid); is_reference(Pid); is_port(Pid); is_function(Pid) ->
    string(iolist_to_binary(io_lib:format("~p", [Pid]))).

pretty(M, Depth) when is_map(M), map_size(M) > 0 ->
    Ind = indent(Depth + 1),
    Items = [[Ind, string(key(K)), <<": ">>, pretty(V, Depth + 1)] || {K, V} <- sorted(M)],
    [<<"{\n">>, lists:join(<<",\n">>, Items), $\n, indent(Depth), $}];
pretty(L, Depth) when is_list(L), L =/= [] ->
    case lists:all(fun scalar/1, L) of
        true -> enc(L);  % keeps long sample lists on one line
        false ->
            Ind = indent(Depth + 1),
            [<<"[\n">>, lists:join(<<",\n">>, [[Ind, pretty(X, Depth + 1)] || X <- L]), $\n,
             indent(Depth), $]]
    end;
pretty(T, Depth) when is_tuple(T) ->
    pretty(tuple_to_list(T), Depth);
pretty(X, _) ->
    enc(X).

scalar(X) -> not (is_map(X) orelse is_list(X) orelse is_tuple(X)).

indent(N) -> binary:copy(<<"  ">>, N).

sorted(M) -> lists:sort([{key(K), V} || {K, V} <- maps:to_list(M)]).

key(K) when is_binary(K) -> K;
key(K) when is_atom(K) -> atom_to_binary(K, utf8);
key(K) when is_integer(K) -> integer_to_binary(K);
key(K) when is_list(K) -> unicode:characters_to_binary(K);
key(K) -> iolist_to_binary(io_lib:format("~0tp", [K])).

join([]) -> [];
join([H | T]) -> [H | [[$, | X] || X <- T]].

%% `short' (OTP 25) gives the shortest text that reads back as the same
%% float; its forms ("0.1", "1.0e-9") are all valid JSON numbers.
float_text(F) ->
    float_to_binary(F, [short]).

string(B) ->
    [$", escape(B, B, 0, 0, []), $"].

%% Copies runs of safe bytes as sub-binaries; escapes the rest.
escape(<<>>, Orig, Start, Len, Acc) ->
    lists:reverse([binary_part(Orig, Start, Len) | Acc]);
escape(<<C, Rest/binary>>, Orig, Start, Len, Acc) when C >= 16#20, C =/= $", C =/= $\\ ->
    escape(Rest, Orig, Start, Len + 1, Acc);
escape(<<C, Rest/binary>>, Orig, Start, Len, Acc) ->
    Esc = case C of
              $" -> <<"\\\"">>;
              $\\ -> <<"\\\\">>;
              $\n -> <<"\\n">>;
              $\r -> <<"\\r">>;
              $\t -> <<"\\t">>;
              $\b -> <<"\\b">>;
              $\f -> <<"\\f">>;
              _ -> <<"\\u00", (hex_digit(C bsr 4)), (hex_digit(C band 15))>>
          end,
    escape(Rest, Orig, Start + Len + 1, 0, [Esc, binary_part(Orig, Start, Len) | Acc]).

hex_digit(D) when D < 10 -> $0 + D;
hex_digit(D) -> $a + D - 10.

%%--------------------------------------------------------------------
%% Decoding

skip_ws(<<C, Rest/binary>>) when C =:= $\s; C =:= $\t; C =:= $\n; C =:= $\r -> skip_ws(Rest);
skip_ws(Bin) -> Bin.

value(_Bin, Depth) when Depth >= ?MAX_DEPTH -> throw({json_error, too_deep, _Bin});
value(<<${, Rest/binary>>, Depth) -> object(skip_ws(Rest), #{}, Depth + 1);
value(<<$[, Rest/binary>>, Depth) -> array(skip_ws(Rest), [], Depth + 1);
value(<<$", Rest/binary>>, _) -> str(Rest, []);
value(<<"true", Rest/binary>>, _) -> {true, Rest};
value(<<"false", Rest/binary>>, _) -> {false, Rest};
value(<<"null", Rest/binary>>, _) -> {null, Rest};
value(<<C, _/binary>> = Bin, _) when C =:= $-; C >= $0, C =< $9 -> number(Bin);
value(<<>>, _) -> throw({json_error, unexpected_end, <<>>});
value(Bin, _) -> throw({json_error, unexpected_char, Bin}).

object(<<$}, Rest/binary>>, Acc, _Depth) when map_size(Acc) =:= 0 -> {Acc, Rest};
object(<<$", Rest/binary>>, Acc, Depth) ->
    {Key, R1} = str(Rest, []),
    case skip_ws(R1) of
        <<$:, R2/binary>> ->
            {Val, R3} = value(skip_ws(R2), Depth),
            Acc1 = Acc#{Key => Val},
            case skip_ws(R3) of
                <<$,, R4/binary>> -> object(skip_ws(R4), Acc1, Depth);
                <<$}, R4/binary>> -> {Acc1, R4};
                Other -> fail(Other)
            end;
        Other -> fail(Other)
    end;
object(Other, _, _) -> fail(Other).

array(<<$], Rest/binary>>, [], _Depth) -> {[], Rest};
array(Bin, Acc, Depth) ->
    {Val, R1} = value(Bin, Depth),
    case skip_ws(R1) of
        <<$,, R2/binary>> -> array(skip_ws(R2), [Val | Acc], Depth);
        <<$], R2/binary>> -> {lists:reverse([Val | Acc]), R2};
        Other -> fail(Other)
    end.

-spec fail(binary()) -> no_return().
fail(<<>>) -> throw({json_error, unexpected_end, <<>>});
fail(Bin) -> throw({json_error, unexpected_char, Bin}).

str(Bin, Acc) ->
    case binary:match(Bin, [<<"\"">>, <<"\\">>]) of
        nomatch -> throw({json_error, unexpected_end, <<>>});
        {Pos, 1} ->
            <<Chunk:Pos/binary, Sep, Rest/binary>> = Bin,
            check_control(Chunk, Bin),
            case Sep of
                $" -> {utf8(iolist_to_binary(lists:reverse([Chunk | Acc]))), Rest};
                $\\ -> unescape(Rest, [Chunk | Acc])
            end
    end.

%% A string's bytes that are not UTF-8 become Latin-1 characters.
utf8(S) ->
    case unicode:characters_to_binary(S) of
        S -> S;
        _ -> unicode:characters_to_binary(beamlab_input_text:decode(S))
    end.

check_control(Chunk, Where) ->
    case [C || <<C>> <= Chunk, C < 16#20] of
        [] -> ok;
        _ -> throw({json_error, bad_string, Where})
    end.

unescape(<<C, Rest/binary>>, Acc) when C =:= $"; C =:= $\\; C =:= $/ -> str(Rest, [<<C>> | Acc]);
unescape(<<$n, Rest/binary>>, Acc) -> str(Rest, [<<$\n>> | Acc]);
unescape(<<$t, Rest/binary>>, Acc) -> str(Rest, [<<$\t>> | Acc]);
unescape(<<$r, Rest/binary>>, Acc) -> str(Rest, [<<$\r>> | Acc]);
unescape(<<$b, Rest/binary>>, Acc) -> str(Rest, [<<$\b>> | Acc]);
unescape(<<$f, Rest/binary>>, Acc) -> str(Rest, [<<$\f>> | Acc]);
unescape(<<$u, H:4/binary, Rest/binary>> = Bin, Acc) ->
    case hex(H, Bin) of
        Hi when Hi >= 16#D800, Hi =< 16#DBFF ->
            %% A high surrogate must be followed by its low half.
            case Rest of
                <<$\\, $u, L:4/binary, Rest2/binary>> ->
                    case hex(L, Bin) of
                        Lo when Lo >= 16#DC00, Lo =< 16#DFFF ->
                            Cp = 16#10000 + ((Hi - 16#D800) bsl 10) + (Lo - 16#DC00),
                            str(Rest2, [<<Cp/utf8>> | Acc]);
                        _ -> throw({json_error, bad_escape, Bin})
                    end;
                _ -> throw({json_error, bad_escape, Bin})
            end;
        Cp ->
            str(Rest, [codepoint(Cp, Bin) | Acc])
    end;
unescape(Bin, _) ->
    throw({json_error, bad_escape, Bin}).

codepoint(Cp, Where) when Cp >= 16#D800, Cp =< 16#DFFF -> throw({json_error, bad_escape, Where});
codepoint(Cp, _) -> <<Cp/utf8>>.

hex(H, Where) ->
    try binary_to_integer(H, 16)
    catch error:badarg -> throw({json_error, bad_escape, Where})
    end.

number(Bin) ->
    %% Bounded before converting: binary_to_integer/1 is quadratic.
    case number_length(Bin, 0) of
        Long when Long > ?MAX_NUMBER -> throw({json_error, number_too_long, Bin});
        _ -> number_text(Bin)
    end.

number_length(<<C, Rest/binary>>, N) when C >= $0, C =< $9; C =:= $-; C =:= $+; C =:= $.;
                                          C =:= $e; C =:= $E ->
    case N > ?MAX_NUMBER of
        true -> N;
        false -> number_length(Rest, N + 1)
    end;
number_length(_, N) -> N.

number_text(Bin) ->
    {Int, R1} = digits_signed(Bin),
    {Frac, R2} = case R1 of
                     <<$., AfterDot/binary>> -> take_digits(AfterDot, required);
                     _ -> {<<>>, R1}
                 end,
    {Exp, R3} = case R2 of
                    <<E, AfterE/binary>> when E =:= $e; E =:= $E -> exponent(AfterE);
                    _ -> {<<>>, R2}
                end,
    case {Frac, Exp} of
        {<<>>, <<>>} -> {binary_to_integer(Int), R3};
        _ ->
            F = iolist_to_binary([Int, $., case Frac of <<>> -> <<"0">>; _ -> Frac end,
                                  case Exp of <<>> -> <<>>; _ -> [$e, Exp] end]),
            try {binary_to_float(F), R3}
            catch error:badarg -> throw({json_error, bad_number, Bin})
            end
    end.

digits_signed(<<$-, Rest/binary>>) ->
    {D, R} = take_digits(Rest, required),
    {<<$-, D/binary>>, R};
digits_signed(Bin) ->
    take_digits(Bin, required).

exponent(<<S, Rest/binary>>) when S =:= $+; S =:= $- ->
    {D, R} = take_digits(Rest, required),
    {<<S, D/binary>>, R};
exponent(Bin) ->
    take_digits(Bin, required).

take_digits(Bin, required) ->
    N = count_digits(Bin, 0),
    case N of
        0 -> throw({json_error, bad_number, Bin});
        _ -> <<D:N/binary, R/binary>> = Bin, {D, R}
    end.

count_digits(<<C, Rest/binary>>, N) when C >= $0, C =< $9 -> count_digits(Rest, N + 1);
count_digits(_, N) -> N.
