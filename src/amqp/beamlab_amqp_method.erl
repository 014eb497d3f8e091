%%% @doc AMQP 0-9-1 method, field-table and content-header codec.
%%%
%%% Methods are the records of `include/beamlab_amqp.hrl'. Every method is
%%% described once by {@link spec/1} (class id, method id, argument types);
%%% a small interpreter encodes and decodes the arguments, packing
%%% consecutive bits into octets. The methods on the hot path (publish,
%%% deliver, ack, nack, return) also have hand-written clauses so that a
%%% load generator does not pay for the interpreter per message.
%%%
%%% Field tables follow RabbitMQ's reading of the specification (its 0-9-1
%%% errata): `s' is a signed 16-bit integer, not a short string, and both
%%% `l' and `L' are signed 64-bit integers (we encode `l').
-module(beamlab_amqp_method).

-include("beamlab_amqp.hrl").

-export([encode/1, decode/1, spec/1, method_ids/1, name/2, all_names/0,
         encode_table/1, decode_table/1, encode_array/1, decode_array/1,
         encode_header/3, decode_header/1, encode_props/1, decode_props/2,
         to_table/1, format_error/1]).

-export_type([method/0, table/0, array/0, field_type/0, props/0, arg_type/0, value/0,
              encode_error/0, decode_error/0]).

-type method() :: tuple().
-type field_type() :: bool | byte | unsignedbyte | short | unsignedshort | signedint
                    | unsignedint | long | float | double | decimal | longstr | binary
                    | array | timestamp | table | void.
-type table() :: [{binary(), field_type(), term()}].
-type array() :: [{field_type(), term()}].
-type props() :: #{content_type => binary(), content_encoding => binary(),
                   headers => table(), delivery_mode => byte(), priority => byte(),
                   correlation_id => binary(), reply_to => binary(), expiration => binary(),
                   message_id => binary(), timestamp => non_neg_integer(), type => binary(),
                   user_id => binary(), app_id => binary(), cluster_id => binary()}.

%% What to_table/1 converts (a map's values).
-type value() :: boolean() | integer() | float() | binary() | atom() | [value()]
               | #{binary() | atom() | string() => value()}.
%% Why a value could not be encoded (raised as `{amqp_encode, Reason}').
-type encode_error() :: arity | {unknown_method, atom()} | {bad_table, term()}
                      | {bad_array, term()} | {bad_value, atom(), term()}
                      | {shortstr_too_long, non_neg_integer()}
                      | {cannot_infer_type, term()} | {unknown_properties, [atom()]}.

%% Why received bytes could not be decoded.
-type decode_error() :: {unknown_method, non_neg_integer(), non_neg_integer()}
                      | short_method_frame | short_content_header | bad_property_flags
                      | {atom(), Detail :: term()}
                      | bad_table | truncated | truncated_table.

-type arg_type() :: octet | short | long | longlong | shortstr | longstr | bit | table
                  | {reserved, short | shortstr | longstr | bit}.

%%====================================================================
%% Method table
%%====================================================================

%% @doc Class id, method id and argument types of a method record name.
-spec spec(atom()) -> {pos_integer(), pos_integer(), [arg_type()]}.
spec('connection.start') -> {10, 10, [octet, octet, table, longstr, longstr]};
spec('connection.start_ok') -> {10, 11, [table, shortstr, longstr, shortstr]};
spec('connection.secure') -> {10, 20, [longstr]};
spec('connection.secure_ok') -> {10, 21, [longstr]};
spec('connection.tune') -> {10, 30, [short, long, short]};
spec('connection.tune_ok') -> {10, 31, [short, long, short]};
spec('connection.open') -> {10, 40, [shortstr, {reserved, shortstr}, {reserved, bit}]};
spec('connection.open_ok') -> {10, 41, [{reserved, shortstr}]};
spec('connection.close') -> {10, 50, [short, shortstr, short, short]};
spec('connection.close_ok') -> {10, 51, []};
spec('connection.blocked') -> {10, 60, [shortstr]};
spec('connection.unblocked') -> {10, 61, []};
spec('channel.open') -> {20, 10, [{reserved, shortstr}]};
spec('channel.open_ok') -> {20, 11, [{reserved, longstr}]};
spec('channel.flow') -> {20, 20, [bit]};
spec('channel.flow_ok') -> {20, 21, [bit]};
spec('channel.close') -> {20, 40, [short, shortstr, short, short]};
spec('channel.close_ok') -> {20, 41, []};
spec('exchange.declare') ->
    {40, 10, [{reserved, short}, shortstr, shortstr, bit, bit, bit, bit, bit, table]};
spec('exchange.declare_ok') -> {40, 11, []};
spec('exchange.delete') -> {40, 20, [{reserved, short}, shortstr, bit, bit]};
spec('exchange.delete_ok') -> {40, 21, []};
spec('exchange.bind') -> {40, 30, [{reserved, short}, shortstr, shortstr, shortstr, bit, table]};
spec('exchange.bind_ok') -> {40, 31, []};
spec('exchange.unbind') -> {40, 40, [{reserved, short}, shortstr, shortstr, shortstr, bit, table]};
spec('exchange.unbind_ok') -> {40, 51, []};
spec('queue.declare') -> {50, 10, [{reserved, short}, shortstr, bit, bit, bit, bit, bit, table]};
spec('queue.declare_ok') -> {50, 11, [shortstr, long, long]};
spec('queue.bind') -> {50, 20, [{reserved, short}, shortstr, shortstr, shortstr, bit, table]};
spec('queue.bind_ok') -> {50, 21, []};
spec('queue.purge') -> {50, 30, [{reserved, short}, shortstr, bit]};
spec('queue.purge_ok') -> {50, 31, [long]};
spec('queue.delete') -> {50, 40, [{reserved, short}, shortstr, bit, bit, bit]};
spec('queue.delete_ok') -> {50, 41, [long]};
spec('queue.unbind') -> {50, 50, [{reserved, short}, shortstr, shortstr, shortstr, table]};
spec('queue.unbind_ok') -> {50, 51, []};
spec('basic.qos') -> {60, 10, [long, short, bit]};
spec('basic.qos_ok') -> {60, 11, []};
spec('basic.consume') -> {60, 20, [{reserved, short}, shortstr, shortstr, bit, bit, bit, bit, table]};
spec('basic.consume_ok') -> {60, 21, [shortstr]};
spec('basic.cancel') -> {60, 30, [shortstr, bit]};
spec('basic.cancel_ok') -> {60, 31, [shortstr]};
spec('basic.publish') -> {60, 40, [{reserved, short}, shortstr, shortstr, bit, bit]};
spec('basic.return') -> {60, 50, [short, shortstr, shortstr, shortstr]};
spec('basic.deliver') -> {60, 60, [shortstr, longlong, bit, shortstr, shortstr]};
spec('basic.get') -> {60, 70, [{reserved, short}, shortstr, bit]};
spec('basic.get_ok') -> {60, 71, [longlong, bit, shortstr, shortstr, long]};
spec('basic.get_empty') -> {60, 72, [{reserved, shortstr}]};
spec('basic.ack') -> {60, 80, [longlong, bit]};
spec('basic.reject') -> {60, 90, [longlong, bit]};
spec('basic.recover_async') -> {60, 100, [bit]};
spec('basic.recover') -> {60, 110, [bit]};
spec('basic.recover_ok') -> {60, 111, []};
spec('basic.nack') -> {60, 120, [longlong, bit, bit]};
spec('confirm.select') -> {85, 10, [bit]};
spec('confirm.select_ok') -> {85, 11, []};
spec('tx.select') -> {90, 10, []};
spec('tx.select_ok') -> {90, 11, []};
spec('tx.commit') -> {90, 20, []};
spec('tx.commit_ok') -> {90, 21, []};
spec('tx.rollback') -> {90, 30, []};
spec('tx.rollback_ok') -> {90, 31, []}.

%% @doc Every method record name this codec knows.
-spec all_names() -> [atom()].
all_names() ->
    ['connection.start', 'connection.start_ok', 'connection.secure', 'connection.secure_ok',
     'connection.tune', 'connection.tune_ok', 'connection.open', 'connection.open_ok',
     'connection.close', 'connection.close_ok', 'connection.blocked', 'connection.unblocked',
     'channel.open', 'channel.open_ok', 'channel.flow', 'channel.flow_ok', 'channel.close',
     'channel.close_ok', 'exchange.declare', 'exchange.declare_ok', 'exchange.delete',
     'exchange.delete_ok', 'exchange.bind', 'exchange.bind_ok', 'exchange.unbind',
     'exchange.unbind_ok', 'queue.declare', 'queue.declare_ok', 'queue.bind', 'queue.bind_ok',
     'queue.purge', 'queue.purge_ok', 'queue.delete', 'queue.delete_ok', 'queue.unbind',
     'queue.unbind_ok', 'basic.qos', 'basic.qos_ok', 'basic.consume', 'basic.consume_ok',
     'basic.cancel', 'basic.cancel_ok', 'basic.publish', 'basic.return', 'basic.deliver',
     'basic.get', 'basic.get_ok', 'basic.get_empty', 'basic.ack', 'basic.reject',
     'basic.recover_async', 'basic.recover', 'basic.recover_ok', 'basic.nack',
     'confirm.select', 'confirm.select_ok', 'tx.select', 'tx.select_ok', 'tx.commit',
     'tx.commit_ok', 'tx.rollback', 'tx.rollback_ok'].

%% @doc `{ClassId, MethodId}' of a method record (or record name).
-spec method_ids(method() | atom()) -> {pos_integer(), pos_integer()}.
method_ids(Name) when is_atom(Name) ->
    {C, M, _} = spec(Name),
    {C, M};
method_ids(Method) when is_tuple(Method) ->
    method_ids(element(1, Method)).

%% @doc The record name of a class id and method id, or `undefined'.
-spec name(non_neg_integer(), non_neg_integer()) -> atom() | undefined.
name(C, M) ->
    case persistent_lookup() of
        #{{C, M} := Name} -> Name;
        _ -> undefined
    end.

persistent_lookup() ->
    Key = {?MODULE, names},
    try persistent_term:get(Key)
    catch error:badarg ->
        Map = maps:from_list([{method_ids(N), N} || N <- all_names()]),
        persistent_term:put(Key, Map),
        Map
    end.

%%====================================================================
%% Methods
%%====================================================================

%% @doc Encode a method record to a method frame payload (class id, method
%% id, arguments). Raises `error({amqp_encode, Reason})' on a value that
%% does not fit its AMQP type (e.g. a short string over 255 bytes).
-spec encode(method()) -> iodata().
encode(#'basic.publish'{exchange = X, routing_key = K, mandatory = M, immediate = I}) ->
    [<<60:16, 40:16, 0:16>>, shortstr(X), shortstr(K), bits([M, I])];
encode(#'basic.ack'{delivery_tag = T, multiple = M}) ->
    <<60:16, 80:16, T:64, (bit(M)):8>>;
encode(#'basic.nack'{delivery_tag = T, multiple = M, requeue = R}) ->
    <<60:16, 120:16, T:64, (bit(M) bor (bit(R) bsl 1)):8>>;
encode(Method) when is_tuple(Method) ->
    [Name | Values] = tuple_to_list(Method),
    {C, M, Types} = try spec(Name)
                    catch error:function_clause -> error({amqp_encode, {unknown_method, Name}})
                    end,
    [<<C:16, M:16>> | enc_args(Types, Values, [], [])].

enc_args([], [], [], Acc) ->
    lists:reverse(Acc);
enc_args([], [], Bits, Acc) ->
    lists:reverse(Acc, [bits(lists:reverse(Bits))]);
enc_args([bit | Ts], [V | Vs], Bits, Acc) ->
    enc_args(Ts, Vs, [V | Bits], Acc);
enc_args([{reserved, bit} | Ts], Vs, Bits, Acc) ->
    enc_args(Ts, Vs, [false | Bits], Acc);
enc_args(Ts, Vs, Bits, Acc) when Bits =/= [] ->
    enc_args(Ts, Vs, [], [bits(lists:reverse(Bits)) | Acc]);
enc_args([{reserved, T} | Ts], Vs, [], Acc) ->
    enc_args(Ts, Vs, [], [reserved(T) | Acc]);
enc_args([T | Ts], [V | Vs], [], Acc) ->
    enc_args(Ts, Vs, [], [enc_value(T, V) | Acc]);
enc_args(_, _, _, _) ->
    error({amqp_encode, arity}).

reserved(short) -> <<0:16>>;
reserved(shortstr) -> <<0>>;
reserved(longstr) -> <<0:32>>.

enc_value(octet, V) when is_integer(V), V >= 0, V =< 255 -> <<V:8>>;
enc_value(short, V) when is_integer(V), V >= 0, V =< 16#FFFF -> <<V:16>>;
enc_value(long, V) when is_integer(V), V >= 0, V =< 16#FFFFFFFF -> <<V:32>>;
enc_value(longlong, V) when is_integer(V), V >= 0, V < 1 bsl 64 -> <<V:64>>;
enc_value(shortstr, V) -> shortstr(V);
enc_value(longstr, V) -> longstr(V);
enc_value(table, V) -> longstr_of(encode_table(V));
enc_value(T, V) -> error({amqp_encode, {bad_value, T, V}}).

bit(true) -> 1;
bit(false) -> 0;
bit(V) -> error({amqp_encode, {bad_value, bit, V}}).

%% Spec 4.2.5.2: bits are packed into octets, lowest bit first.
bits([]) -> [];
bits(Bs) when length(Bs) > 8 ->
    {First, Rest} = lists:split(8, Bs),
    [bits(First) | bits(Rest)];
bits(Bs) ->
    {Octet, _} = lists:foldl(fun(B, {Acc, Shift}) -> {Acc bor (bit(B) bsl Shift), Shift + 1} end,
                             {0, 0}, Bs),
    <<Octet:8>>.

shortstr(S) when is_binary(S), byte_size(S) =< 255 -> [byte_size(S), S];
shortstr(S) when is_list(S); is_binary(S) ->
    B = try iolist_to_binary(S) catch error:badarg -> error({amqp_encode, {bad_value, shortstr, S}}) end,
    if byte_size(B) =< 255 -> [byte_size(B), B];
       true -> error({amqp_encode, {shortstr_too_long, byte_size(B)}})
    end;
shortstr(S) when is_atom(S) -> shortstr(atom_to_binary(S, utf8));
shortstr(S) -> error({amqp_encode, {bad_value, shortstr, S}}).

longstr(S) when is_binary(S) -> [<<(byte_size(S)):32>>, S];
longstr(S) when is_list(S) ->
    try iolist_to_binary(S) of B -> longstr(B)
    catch error:badarg -> error({amqp_encode, {bad_value, longstr, S}})
    end;
longstr(S) -> error({amqp_encode, {bad_value, longstr, S}}).

longstr_of(IoData) -> [<<(iolist_size(IoData)):32>>, IoData].

%% @doc Decode a method frame payload into its record.
-spec decode(binary()) -> {ok, method()} | {error, decode_error()}.
decode(<<60:16, 60:16, TL, Tag:TL/binary, DTag:64, R:8, XL, X:XL/binary, KL, K:KL/binary>>) ->
    {ok, #'basic.deliver'{consumer_tag = Tag, delivery_tag = DTag, redelivered = R band 1 =:= 1,
                          exchange = X, routing_key = K}};
decode(<<60:16, 80:16, DTag:64, M:8>>) ->
    {ok, #'basic.ack'{delivery_tag = DTag, multiple = M band 1 =:= 1}};
decode(<<60:16, 120:16, DTag:64, B:8>>) ->
    {ok, #'basic.nack'{delivery_tag = DTag, multiple = B band 1 =:= 1, requeue = B band 2 =:= 2}};
decode(<<C:16, M:16, Args/binary>>) ->
    case name(C, M) of
        undefined ->
            {error, {unknown_method, C, M}};
        Name ->
            {_, _, Types} = spec(Name),
            try dec_args(Types, Args, none, []) of
                Values -> {ok, list_to_tuple([Name | Values])}
            catch throw:{amqp_decode, Reason} -> {error, {Name, Reason}}
            end
    end;
decode(_) ->
    {error, short_method_frame}.

%% Bits: `none' when not inside a run of bits, else {Octet, NextBitIndex}.
dec_args([], <<>>, _, Acc) ->
    lists:reverse(Acc);
dec_args([], Rest, _, _) ->
    throw({amqp_decode, {trailing_bytes, byte_size(Rest)}});
dec_args([bit | Ts], Bin, Bits, Acc) ->
    {V, Bin1, Bits1} = take_bit(Bin, Bits),
    dec_args(Ts, Bin1, Bits1, [V | Acc]);
dec_args([{reserved, bit} | Ts], Bin, Bits, Acc) ->
    {_, Bin1, Bits1} = take_bit(Bin, Bits),
    dec_args(Ts, Bin1, Bits1, Acc);
dec_args([{reserved, T} | Ts], Bin, _, Acc) ->
    {_, Rest} = dec_value(T, Bin),
    dec_args(Ts, Rest, none, Acc);
dec_args([T | Ts], Bin, _, Acc) ->
    {V, Rest} = dec_value(T, Bin),
    dec_args(Ts, Rest, none, [V | Acc]).

take_bit(<<Octet:8, Rest/binary>>, none) -> {Octet band 1 =:= 1, Rest, {Octet, 1}};
take_bit(Bin, {_, 8}) -> take_bit(Bin, none);
take_bit(Bin, {Octet, I}) -> {(Octet bsr I) band 1 =:= 1, Bin, {Octet, I + 1}};
take_bit(<<>>, none) -> throw({amqp_decode, truncated}).

dec_value(octet, <<V:8, R/binary>>) -> {V, R};
dec_value(short, <<V:16, R/binary>>) -> {V, R};
dec_value(long, <<V:32, R/binary>>) -> {V, R};
dec_value(longlong, <<V:64, R/binary>>) -> {V, R};
dec_value(shortstr, <<L:8, V:L/binary, R/binary>>) -> {V, R};
dec_value(longstr, <<L:32, V:L/binary, R/binary>>) -> {V, R};
dec_value(table, <<L:32, V:L/binary, R/binary>>) ->
    case decode_table(V) of
        {ok, T} -> {T, R};
        {error, E} -> throw({amqp_decode, E})
    end;
dec_value(T, _) -> throw({amqp_decode, {truncated, T}}).

%%====================================================================
%% Field tables and arrays
%%====================================================================

%% @doc Encode a field table (without its 32-bit length prefix).
-spec encode_table(table()) -> iodata().
encode_table(Table) when is_list(Table) ->
    [[shortstr(Name), field(Type, Value)] || {Name, Type, Value} <- Table];
encode_table(T) ->
    error({amqp_encode, {bad_table, T}}).

%% @doc Encode a field array (without its 32-bit length prefix).
-spec encode_array(array()) -> iodata().
encode_array(Array) when is_list(Array) ->
    [field(Type, Value) || {Type, Value} <- Array];
encode_array(A) ->
    error({amqp_encode, {bad_array, A}}).

-define(IN(V, Lo, Hi), (is_integer(V) andalso V >= (Lo) andalso V =< (Hi))).

field(bool, true) -> <<$t, 1>>;
field(bool, false) -> <<$t, 0>>;
field(byte, V) when ?IN(V, -128, 127) -> <<$b, V:8/signed>>;
field(unsignedbyte, V) when ?IN(V, 0, 255) -> <<$B, V:8>>;
field(short, V) when ?IN(V, -32768, 32767) -> <<$s, V:16/signed>>;
field(unsignedshort, V) when ?IN(V, 0, 65535) -> <<$u, V:16>>;
field(signedint, V) when ?IN(V, -(1 bsl 31), (1 bsl 31) - 1) -> <<$I, V:32/signed>>;
field(unsignedint, V) when ?IN(V, 0, (1 bsl 32) - 1) -> <<$i, V:32>>;
field(long, V) when ?IN(V, -(1 bsl 63), (1 bsl 63) - 1) -> <<$l, V:64/signed>>;
field(float, V) when is_float(V) -> <<$f, V:32/float>>;
field(double, V) when is_float(V) -> <<$d, V:64/float>>;
field(decimal, {S, V}) when ?IN(S, 0, 255), ?IN(V, 0, (1 bsl 32) - 1) -> <<$D, S:8, V:32>>;
field(longstr, V) -> [$S | longstr(V)];
field(binary, V) when is_binary(V) -> [$x | longstr(V)];
field(timestamp, V) when ?IN(V, 0, (1 bsl 64) - 1) -> <<$T, V:64>>;
field(table, V) -> [$F | longstr_of(encode_table(V))];
field(array, V) -> [$A | longstr_of(encode_array(V))];
field(void, _) -> <<$V>>;
field(Type, V) -> error({amqp_encode, {bad_value, Type, V}}).

%% @doc Decode a field table (the bytes inside its length prefix).
-spec decode_table(binary()) -> {ok, table()} | {error, decode_error()}.
decode_table(Bin) ->
    try {ok, dec_table(Bin, [])}
    catch throw:{amqp_decode, R} -> {error, R}
    end.

%% @doc Decode a field array (the bytes inside its length prefix).
-spec decode_array(binary()) -> {ok, array()} | {error, decode_error()}.
decode_array(Bin) ->
    try {ok, dec_array(Bin, [])}
    catch throw:{amqp_decode, R} -> {error, R}
    end.

dec_table(<<>>, Acc) ->
    lists:reverse(Acc);
dec_table(<<L:8, Name:L/binary, Rest/binary>>, Acc) ->
    {Type, V, Rest1} = dec_field(Rest),
    dec_table(Rest1, [{Name, Type, V} | Acc]);
dec_table(_, _) ->
    throw({amqp_decode, bad_table}).

dec_array(<<>>, Acc) ->
    lists:reverse(Acc);
dec_array(Bin, Acc) ->
    {Type, V, Rest} = dec_field(Bin),
    dec_array(Rest, [{Type, V} | Acc]).

dec_field(<<$S, L:32, V:L/binary, R/binary>>) -> {longstr, V, R};
dec_field(<<$t, V:8, R/binary>>) -> {bool, V =/= 0, R};
dec_field(<<$b, V:8/signed, R/binary>>) -> {byte, V, R};
dec_field(<<$B, V:8, R/binary>>) -> {unsignedbyte, V, R};
dec_field(<<$s, V:16/signed, R/binary>>) -> {short, V, R};
dec_field(<<$u, V:16, R/binary>>) -> {unsignedshort, V, R};
dec_field(<<$I, V:32/signed, R/binary>>) -> {signedint, V, R};
dec_field(<<$i, V:32, R/binary>>) -> {unsignedint, V, R};
dec_field(<<$l, V:64/signed, R/binary>>) -> {long, V, R};
dec_field(<<$L, V:64/signed, R/binary>>) -> {long, V, R};
dec_field(<<$f, V:32/float, R/binary>>) -> {float, V, R};
dec_field(<<$d, V:64/float, R/binary>>) -> {double, V, R};
dec_field(<<$D, S:8, V:32, R/binary>>) -> {decimal, {S, V}, R};
dec_field(<<$x, L:32, V:L/binary, R/binary>>) -> {binary, V, R};
dec_field(<<$T, V:64, R/binary>>) -> {timestamp, V, R};
dec_field(<<$F, L:32, V:L/binary, R/binary>>) -> {table, dec_table(V, []), R};
dec_field(<<$A, L:32, V:L/binary, R/binary>>) -> {array, dec_array(V, []), R};
dec_field(<<$V, R/binary>>) -> {void, undefined, R};
dec_field(<<T, _/binary>>) -> throw({amqp_decode, {bad_field_type, T}});
dec_field(<<>>) -> throw({amqp_decode, truncated_table}).

%% @doc Turn a map with binary keys (or an existing table) into a field
%% table: integers become `long', binaries `longstr', booleans `bool',
%% floats `double', lists `array' and maps nested `table'.
-spec to_table(#{binary() | atom() | string() => value()} | table()) -> table().
to_table(Table) when is_list(Table) -> Table;
to_table(Map) when is_map(Map) ->
    [begin {T, V1} = infer(V), {K, T, V1} end
     || {K, V} <- lists:sort([{key(K0), V0} || {K0, V0} <- maps:to_list(Map)])].

key(K) when is_binary(K) -> K;
key(K) when is_atom(K) -> atom_to_binary(K, utf8);
key(K) when is_list(K) -> unicode:characters_to_binary(K).

infer(V) when is_boolean(V) -> {bool, V};
infer(V) when is_integer(V) -> {long, V};
infer(V) when is_float(V) -> {double, V};
infer(V) when is_binary(V) -> {longstr, V};
infer(V) when is_map(V) -> {table, to_table(V)};
infer(V) when is_list(V) -> {array, [infer(E) || E <- V]};
infer(V) when is_atom(V) -> {longstr, atom_to_binary(V, utf8)};
infer(V) -> error({amqp_encode, {cannot_infer_type, V}}).

%%====================================================================
%% Content header and basic properties
%%====================================================================

-define(PROPS, [{content_type, shortstr}, {content_encoding, shortstr}, {headers, table},
                {delivery_mode, octet}, {priority, octet}, {correlation_id, shortstr},
                {reply_to, shortstr}, {expiration, shortstr}, {message_id, shortstr},
                {timestamp, longlong}, {type, shortstr}, {user_id, shortstr},
                {app_id, shortstr}, {cluster_id, shortstr}]).

%% @doc Content header frame payload: class id, weight 0, body size, property
%% flags and property list.
-spec encode_header(pos_integer(), non_neg_integer(), props()) -> iodata().
encode_header(ClassId, BodySize, Props) ->
    [<<ClassId:16, 0:16, BodySize:64>> | encode_props(Props)].

%% @doc Property flags and property list of basic properties. 14 properties
%% fit the first flag word (bits 15..2), so no continuation word is needed.
-spec encode_props(props()) -> iodata().
encode_props(Props) when map_size(Props) =:= 0 ->
    <<0:16>>;
encode_props(Props) when is_map(Props) ->
    Unknown = maps:keys(maps:without([K || {K, _} <- ?PROPS], Props)),
    Unknown =:= [] orelse error({amqp_encode, {unknown_properties, Unknown}}),
    {Flags, Values, _} =
        lists:foldl(
          fun({Key, Type}, {F, Acc, Bit}) ->
                  case Props of
                      #{Key := V} when V =/= undefined ->
                          {F bor (1 bsl Bit), [prop_value(Type, V) | Acc], Bit - 1};
                      _ -> {F, Acc, Bit - 1}
                  end
          end, {0, [], 15}, ?PROPS),
    [<<Flags:16>> | lists:reverse(Values)].

prop_value(table, V) -> longstr_of(encode_table(to_table(V)));
prop_value(Type, V) -> enc_value(Type, V).

%% @doc Decode a content header payload:
%% `{ok, ClassId, BodySize, Props}'.
-spec decode_header(binary()) -> {ok, pos_integer(), non_neg_integer(), props()} | {error, decode_error()}.
decode_header(<<ClassId:16, _Weight:16, Size:64, Rest/binary>>) ->
    case decode_props(Rest, #{}) of
        {ok, Props} -> {ok, ClassId, Size, Props};
        Error -> Error
    end;
decode_header(_) ->
    {error, short_content_header}.

%% @doc Decode property flags plus properties into a map, merged into `Acc'.
-spec decode_props(binary(), props()) -> {ok, props()} | {error, decode_error()}.
decode_props(<<0:16>>, Acc) ->
    {ok, Acc};
decode_props(<<Flags:16, Rest/binary>>, Acc) when Flags band 1 =:= 0 ->
    try dec_props(?PROPS, Flags, 15, Rest, Acc)
    catch throw:{amqp_decode, R} -> {error, {properties, R}}
    end;
decode_props(_, _) ->
    {error, bad_property_flags}.

dec_props([], _, _, <<>>, Acc) -> {ok, Acc};
dec_props([], _, _, Rest, _) -> throw({amqp_decode, {trailing_bytes, byte_size(Rest)}});
dec_props([{Key, Type} | Ps], Flags, Bit, Bin, Acc) ->
    case Flags band (1 bsl Bit) of
        0 -> dec_props(Ps, Flags, Bit - 1, Bin, Acc);
        _ ->
            {V, Rest} = dec_value(Type, Bin),
            dec_props(Ps, Flags, Bit - 1, Rest, Acc#{Key => V})
    end.

%%====================================================================
%% Errors
%%====================================================================

%% @doc One line for a codec error.
-spec format_error(decode_error() | {amqp_encode, encode_error()}) -> iolist().
format_error(Reason) ->
    beamlab_format_reason:line(fun error_line/1, Reason).

error_line({unknown_method, C, M}) ->
    io_lib:format("unknown AMQP method ~b/~b", [C, M]);
error_line({amqp_encode, R}) ->
    io_lib:format("cannot encode AMQP value: ~0tp", [R]);
error_line({Name, R}) when is_atom(Name) ->
    %% (a name of any atom: its control characters are not printed)
    io_lib:format("malformed ~ts method: ~0tp", [[C || C <- atom_to_list(Name), C >= 32], R]);
error_line(R) ->
    io_lib:format("malformed AMQP data: ~0tp", [R]).
