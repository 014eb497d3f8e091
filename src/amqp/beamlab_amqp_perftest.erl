%%% @doc PerfTest's syntax for option values, read as PerfTest 2.22.1 reads
%%% them (pure functions): key/value lists (`--queue-args',
%%% `--consumer-args', `--message-properties'), byte capacities (`20gb'),
%%% ISO 8601 durations (`PT10M30S'), stream offsets, `VALUE:DURATION'
%%% definitions of `--variable-rate', `--variable-size' and
%%% `--variable-latency', recovery intervals (`30-60') and the Java format
%%% strings of `--queue-pattern'. Each returns `{error, Text}' with a
%%% sentence for the user.
-module(beamlab_amqp_perftest).

-export([key_values/1, byte_capacity/1, iso_duration/1, stream_offset/1, variable/2,
         recovery_interval/1, queue_name/2, check_pattern/1, publishing_interval/1,
         properties/1, json_bodies/3]).

-export_type([value/0, stream_offset/0]).

%% A value of a key/value list, typed as PerfTest types it.
-type value() :: boolean() | integer() | binary().
%% first | last | next, an offset, or a time (seconds since the epoch).
-type stream_offset() :: binary() | non_neg_integer() | {timestamp, integer()}.

-define(MAX_LONG, 9223372036854775807).

%% @doc PerfTest's `k1=v1,k2=v2': `true'/`false' become booleans, what
%% parses as a 64-bit integer an integer, the rest a string; a key without
%% `=' gets the empty string. As PerfTest: `x-dead-letter-exchange=amq.default'
%% means the default exchange (""), `x-single-active-consumer' is always a
%% boolean, and a later key replaces an earlier one.
-spec key_values(string()) -> {ok, [{binary(), value()}]} | {error, string()}.
key_values(S) ->
    case string:trim(S) of
        "" -> {ok, []};
        T -> kv(string:split(T, ",", all), [])
    end.

kv([], Acc) ->
    {ok, lists:reverse(Acc)};
kv([Entry | Rest], Acc) ->
    case string:split(Entry, "=", all) of
        [""] ->
            {error, "an empty key (two commas in a row?)"};
        [[] | _] ->
            {error, lists:flatten(io_lib:format("'~ts' has no key before '='", [Entry]))};
        [K] ->
            kv(Rest, put_kv(unicode:characters_to_binary(K), <<>>, Acc));
        [K, V | _] ->
            Key = unicode:characters_to_binary(K),
            kv(Rest, put_kv(Key, special(Key, kv_value(V)), Acc))
    end.

put_kv(K, V, Acc) ->
    [{K, V} | lists:keydelete(K, 1, Acc)].

kv_value("true") -> true;
kv_value("false") -> false;
kv_value(V) ->
    case string:to_integer(V) of
        {N, ""} when N >= -?MAX_LONG - 1, N =< ?MAX_LONG -> N;
        _ -> unicode:characters_to_binary(V)
    end.

special(<<"x-dead-letter-exchange">>, <<"amq.default">>) -> <<>>;
special(<<"x-single-active-consumer">>, V) -> V =:= true;
special(_, V) -> V.

%% @doc A byte capacity as PerfTest reads it: digits with an optional unit
%% kb, mb, gb or tb (powers of 1000, any case).
-spec byte_capacity(string()) -> {ok, non_neg_integer()} | {error, string()}.
byte_capacity(S) ->
    case re:run(S, "^([0-9]+)(kb|mb|gb|tb)?$", [caseless, {capture, all_but_first, list}]) of
        {match, [Digits]} -> {ok, list_to_integer(Digits)};
        {match, [Digits, Unit]} -> {ok, list_to_integer(Digits) * unit(string:lowercase(Unit))};
        nomatch -> {error, lists:flatten(io_lib:format("'~ts' is not a valid byte capacity, valid "
                                                       "example values: 100gb, 50mb", [S]))}
    end.

unit("kb") -> 1000;
unit("mb") -> 1000000;
unit("gb") -> 1000000000;
unit("tb") -> 1000000000000.

%% @doc An ISO 8601 duration as Java's `Duration.parse' reads it
%% (`PnDTnHnMn.nS', e.g. PT10M30S or P5DT8H), in whole seconds; it must be
%% positive.
-spec iso_duration(string()) -> {ok, pos_integer()} | {error, string()}.
iso_duration(S) ->
    Re = "^([-+]?)P(?:([-+]?[0-9]+)D)?(T(?:([-+]?[0-9]+)H)?(?:([-+]?[0-9]+)M)?"
         "(?:([-+]?[0-9]+)(?:[.,]([0-9]{0,9}))?S)?)?$",
    Bad = fun(Why) -> {error, lists:flatten(io_lib:format("'~ts' is not a valid duration, ~ts",
                                                          [S, Why]))} end,
    case re:run(string:uppercase(S), Re, [{capture, all_but_first, list}]) of
        {match, Parts} ->
            [Sign, D, T, H, M, Sec, _Frac] = pad_parts(Parts, 7),
            Empty = D =:= "" andalso H =:= "" andalso M =:= "" andalso Sec =:= "",
            if
                Empty; T =:= "T" -> Bad("valid example values: PT15M, PT10H");
                true ->
                    Secs = (int(D) * 86400 + int(H) * 3600 + int(M) * 60 + int(Sec))
                        * case Sign of "-" -> -1; _ -> 1 end,
                    case Secs > 0 of
                        true -> {ok, Secs};
                        false -> Bad("it must be positive")
                    end
            end;
        nomatch ->
            Bad("valid example values: PT15M, PT10H")
    end.

pad_parts(Parts, N) ->
    Parts ++ lists:duplicate(N - length(Parts), "").

int("") -> 0;
int(S) -> list_to_integer(string:trim(S, leading, "+")).

%% @doc `--stream-consumer-offset': first, last or next (any case), an
%% unsigned offset, or an ISO 8601 time with an offset
%% (2022-06-03T07:45:54Z), sent as an AMQP timestamp (seconds).
-spec stream_offset(string()) -> {ok, stream_offset()} | {error, string()}.
stream_offset(S) ->
    L = string:lowercase(S),
    case lists:member(L, ["first", "last", "next"]) of
        true -> {ok, list_to_binary(L)};
        false ->
            case string:to_integer(S) of
                {N, ""} when N >= 0, N =< 18446744073709551615 -> {ok, N};
                _ ->
                    try calendar:rfc3339_to_system_time(S, [{unit, second}]) of
                        T -> {ok, {timestamp, T}}
                    catch _:_ ->
                        {error, lists:flatten(io_lib:format("'~ts' is not a valid stream offset value.",
                                                            [S]))}
                    end
            end
    end.

%% @doc `VALUE:DURATION' (VALUE an integer >= `Min', DURATION a positive
%% integer, seconds), as `--variable-rate 100:60' reads it.
-spec variable(string(), non_neg_integer()) -> {ok, {non_neg_integer(), pos_integer()}} | {error, string()}.
variable(S, Min) ->
    case string:split(S, ":", all) of
        [V, D] ->
            case {string:to_integer(V), string:to_integer(D)} of
                {{Vi, ""}, {Di, ""}} when Vi >= Min, Di > 0, Di =< 31536000 -> {ok, {Vi, Di}};
                _ -> bad_variable(S, Min)
            end;
        _ ->
            bad_variable(S, Min)
    end.

bad_variable(S, Min) ->
    {error, lists:flatten(io_lib:format("Invalid variable value definition: ~ts. Should be "
                                        "[VALUE]:[DURATION] with VALUE integer >= ~b and DURATION "
                                        "integer > 0 (seconds, at most a year)", [S, Min]))}.

%% @doc `--connection-recovery-interval': `30' (seconds) or `30-60' (a
%% random delay between the two, PerfTest's syntax), as milliseconds.
-spec recovery_interval(string()) -> {ok, {non_neg_integer(), non_neg_integer()}} | {error, string()}.
recovery_interval(S) ->
    case re:run(string:trim(S), "^([0-9]{1,6})(?:-([0-9]{1,6}))?$", [{capture, all_but_first, list}]) of
        {match, [A]} -> {ok, {list_to_integer(A) * 1000, list_to_integer(A) * 1000}};
        {match, [A, B]} ->
            case list_to_integer(B) > list_to_integer(A) of
                true -> {ok, {list_to_integer(A) * 1000, list_to_integer(B) * 1000}};
                false -> {error, "wrong interval min-max values: " ++ S}
            end;
        nomatch -> {error, "must be e.g. 30 or 30-60 (seconds)"}
    end.

%% @doc `--publishing-interval': seconds, at least 0.1.
-spec publishing_interval(string()) -> {ok, float()} | {error, string()}.
publishing_interval(S) ->
    case beamlab_amqp_perftest_num(S) of
        {ok, V} when V >= 0.1, V =< 86400 -> {ok, float(V)};
        {ok, V} when V > 86400 -> {error, "at most 86400 (one day)"};
        {ok, V} when V > 0 -> {error, "cannot be less than 0.1"};
        {ok, _} -> {error, "must be positive"};
        error -> {error, "must be a number"}
    end.

beamlab_amqp_perftest_num(S) ->
    T = string:trim(S),
    case string:to_float(T) of
        {F, ""} -> {ok, F};
        _ -> case string:to_integer(T) of
                 {N, ""} -> {ok, N};
                 _ -> error
             end
    end.

%% @doc Checks a `--queue-pattern' (a Java format string with one
%% argument, the queue number): `%d', `%s', `%x', `%X', `%o' with flags
%% `0', `-' and a width, and `%%'. It must use its argument.
-spec check_pattern(unicode:chardata()) -> ok | {error, string()}.
check_pattern(P) ->
    try conversions(unicode:characters_to_list(P), 0) of
        0 -> {error, "has no conversion for the queue number (e.g. %d)"};
        _ -> ok
    catch throw:{bad_conversion, C} ->
        {error, lists:flatten(io_lib:format("has an unsupported conversion '%~ts' (use %d, %s, "
                                            "%x, %o, with a width: %03d)", [C]))}
    end.

conversions([], N) -> N;
conversions("%%" ++ R, N) -> conversions(R, N);
conversions("%n" ++ R, N) -> conversions(R, N);
conversions([$% | R], N) ->
    {_Flags, R1} = lists:splitwith(fun(C) -> lists:member(C, "-0") end, R),
    {_Width, R2} = lists:splitwith(fun(C) -> C >= $0 andalso C =< $9 end, R1),
    case R2 of
        [C | R3] when C =:= $d; C =:= $s; C =:= $x; C =:= $X; C =:= $o -> conversions(R3, N + 1);
        [C | _] -> throw({bad_conversion, [C]});
        [] -> throw({bad_conversion, ""})
    end;
conversions([_ | R], N) -> conversions(R, N).

%% @doc The name of queue `I' of a `--queue-pattern' (checked with
%% check_pattern/1), as Java's `String.format(Pattern, I)' writes it.
-spec queue_name(unicode:chardata(), integer()) -> binary().
queue_name(P, I) ->
    unicode:characters_to_binary(format(unicode:characters_to_list(P), I)).

format([], _I) -> [];
format("%%" ++ R, I) -> [$% | format(R, I)];
format("%n" ++ R, I) -> [$\n | format(R, I)];
format([$% | R], I) ->
    {Flags, R1} = lists:splitwith(fun(C) -> lists:member(C, "-0") end, R),
    {Width, [C | R2]} = lists:splitwith(fun(X) -> X >= $0 andalso X =< $9 end, R1),
    Text = case C of
               $d -> integer_to_list(I);
               $s -> integer_to_list(I);
               $x -> string:lowercase(integer_to_list(I, 16));
               $X -> integer_to_list(I, 16);
               $o -> integer_to_list(I, 8)
           end,
    [pad(Text, Flags, Width) | format(R2, I)];
format([C | R], I) -> [C | format(R, I)].

pad(Text, _Flags, "") -> Text;
pad(Text, Flags, W) ->
    Width = list_to_integer(W),
    case {lists:member($-, Flags), lists:member($0, Flags)} of
        {true, _} -> string:pad(Text, Width, trailing);
        {false, true} ->
            case Text of
                [$- | Digits] -> [$- | string:pad(Digits, Width - 1, leading, $0)];
                _ -> string:pad(Text, Width, leading, $0)
            end;
        _ -> string:pad(Text, Width, leading)
    end.

%% @doc `--message-properties' as PerfTest applies them: the 13 standard
%% properties by their Java names (contentType, deliveryMode, priority,
%% correlationId, replyTo, expiration, messageId, timestamp as ISO 8601,
%% type, userId, appId, clusterId, contentEncoding); any other key is a
%% header.
-spec properties([{binary(), value()}]) ->
          {ok, beamlab_amqp_method:props()} | {error, string()}.
properties(KVs) ->
    try
        {Props, Headers} =
            lists:foldl(fun({K, V}, {P, H}) ->
                                case property(K) of
                                    header -> {P, [{K, V} | H]};
                                    {Key, Type} -> {P#{Key => prop_value(K, Type, V)}, H}
                                end
                        end, {#{}, []}, KVs),
        {ok, case Headers of
                 [] -> Props;
                 _ -> Props#{headers => beamlab_amqp_method:to_table(maps:from_list(Headers))}
             end}
    catch throw:{bad_property, Msg} -> {error, Msg}
    end.

property(<<"contentType">>) -> {content_type, string};
property(<<"contentEncoding">>) -> {content_encoding, string};
property(<<"deliveryMode">>) -> {delivery_mode, {int, 1, 2}};
property(<<"priority">>) -> {priority, {int, 0, 255}};
property(<<"correlationId">>) -> {correlation_id, string};
property(<<"replyTo">>) -> {reply_to, string};
property(<<"expiration">>) -> {expiration, string};
property(<<"messageId">>) -> {message_id, string};
property(<<"timestamp">>) -> {timestamp, time};
property(<<"type">>) -> {type, string};
property(<<"userId">>) -> {user_id, string};
property(<<"appId">>) -> {app_id, string};
property(<<"clusterId">>) -> {cluster_id, string};
property(_) -> header.

prop_value(_K, string, V) when is_binary(V), byte_size(V) =< 255 -> V;
prop_value(_K, string, V) when is_integer(V) -> integer_to_binary(V);
prop_value(_K, string, V) when is_boolean(V) -> atom_to_binary(V);
prop_value(_K, {int, Lo, Hi}, V) when is_integer(V), V >= Lo, V =< Hi -> V;
prop_value(_K, time, V) when is_binary(V) ->
    try calendar:rfc3339_to_system_time(binary_to_list(V), [{unit, second}]) of
        T when T >= 0 -> T;
        _ -> bad_property(<<"timestamp">>, V, "an ISO 8601 time after 1970")
    catch _:_ -> bad_property(<<"timestamp">>, V, "an ISO 8601 time, e.g. 2024-06-03T07:45:54Z")
    end;
prop_value(K, string, V) -> bad_property(K, V, "a string of at most 255 bytes");
prop_value(K, {int, Lo, Hi}, V) -> bad_property(K, V, io_lib:format("an integer ~b..~b", [Lo, Hi]));
prop_value(K, time, V) -> bad_property(K, V, "an ISO 8601 time").

-spec bad_property(binary(), value(), iodata()) -> no_return().
bad_property(K, V, What) ->
    throw({bad_property, lists:flatten(io_lib:format("message property ~ts=~tp: expected ~ts",
                                                     [K, V, What]))}).

%% @doc PerfTest's --json-body: `Count' random JSON documents of at least
%% `Size' bytes, each a list of `"field" : "value"' pairs drawn from
%% `Fields' random field names (lowercase, 5 to 30 letters) and as many
%% random values (5 to 200 letters and digits).
-spec json_bodies(non_neg_integer(), pos_integer(), pos_integer()) -> [binary()].
json_bodies(Size, Fields, Count) ->
    Names = [random_text(30, "abcdefghijklmnopqrstuvwxyz") || _ <- lists:seq(1, Fields)],
    Values = list_to_tuple([random_text(200, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                             "0123456789") || _ <- lists:seq(1, Fields)]),
    [json_body(Size, shuffle(Names), Values) || _ <- lists:seq(1, Count)].

json_body(Size, Names, Values) ->
    iolist_to_binary(["{ ", json_pairs(Names, Names, Values, Size, 2, []), " }"]).

json_pairs([], All, Values, Size, Len, Acc) ->
    json_pairs(All, All, Values, Size, Len, Acc);
json_pairs([Name | Rest], All, Values, Size, Len, Acc) ->
    V = element(rand:uniform(tuple_size(Values)), Values),
    Pair = [$", Name, "\" : \"", V, $"],
    Len1 = Len + iolist_size(Pair),
    case Len1 < Size of
        true -> json_pairs(Rest, All, Values, Size, Len1 + 1, [$,, Pair | Acc]);
        false -> lists:reverse([Pair | Acc])
    end.

random_text(Max, Symbols) ->
    N = rand:uniform(Max - 4) + 4,
    S = list_to_tuple(Symbols),
    [element(rand:uniform(tuple_size(S)), S) || _ <- lists:seq(1, N)].

shuffle(L) ->
    [X || {_, X} <- lists:sort([{rand:uniform(), X} || X <- L])].
