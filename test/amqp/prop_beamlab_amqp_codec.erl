%%% @doc PropEr round-trip properties for the AMQP 0-9-1 codec: frames,
%%% every method, nested field tables and arrays, content headers with
%%% random properties, and body splitting by frame_max (including the
%%% frames `beamlab_amqp:publish/5' builds). The EUnit functions at the end
%%% run them under `rebar3 eunit'.
-module(prop_beamlab_amqp_codec).

-include_lib("proper/include/proper.hrl").
-include_lib("eunit/include/eunit.hrl").

-export([prop_frame/0, prop_frame_stream/0, prop_method/0, prop_table/0,
         prop_header/0, prop_content_split/0, prop_publish_frames/0, prop_publish_head/0, prop_publish_iodata/0, prop_ack_frames/0,
         prop_body_head/0]).

%%====================================================================
%% Generators
%%====================================================================

shortstr() -> ?LET(L, range(0, 40), binary(L)).

longstr() -> ?LET(L, range(0, 300), binary(L)).

%% A float that survives a trip through 32 bits (and fits in them).
float32() -> ?LET(F, float(-1.0e30, 1.0e30), begin <<G:32/float>> = <<F:32/float>>, G end).

scalar() ->
    oneof([{bool, boolean()},
           {byte, range(-128, 127)},
           {unsignedbyte, range(0, 255)},
           {short, range(-32768, 32767)},
           {unsignedshort, range(0, 65535)},
           {signedint, range(-(1 bsl 31), (1 bsl 31) - 1)},
           {unsignedint, range(0, (1 bsl 32) - 1)},
           {long, range(-(1 bsl 63), (1 bsl 63) - 1)},
           {float, float32()},
           {double, float()},
           {decimal, {range(0, 255), range(0, (1 bsl 32) - 1)}},
           {longstr, longstr()},
           {binary, longstr()},
           {timestamp, range(0, (1 bsl 64) - 1)},
           {void, undefined}]).

field(0) -> scalar();
field(D) -> frequency([{6, scalar()},
                       {1, {table, table(D - 1)}},
                       {1, {array, array(D - 1)}}]).

table(D) -> ?SIZED(S, resize(min(S, 6), list(?LET({N, {T, V}}, {shortstr(), field(D)}, {N, T, V})))).

array(D) -> ?SIZED(S, resize(min(S, 6), list(field(D)))).

table() -> table(3).

value(octet) -> range(0, 255);
value(short) -> range(0, 65535);
value(long) -> range(0, (1 bsl 32) - 1);
value(longlong) -> range(0, (1 bsl 64) - 1);
value(shortstr) -> shortstr();
value(longstr) -> longstr();
value(bit) -> boolean();
value(table) -> table(2).

method() ->
    ?LET(Name, oneof(beamlab_amqp_method:all_names()),
         begin
             {_, _, Types} = beamlab_amqp_method:spec(Name),
             ?LET(Values, [value(T) || T <- Types, not is_tuple(T)],
                  list_to_tuple([Name | Values]))
         end).

props() ->
    ?LET(Props,
         [{content_type, shortstr()}, {content_encoding, shortstr()}, {headers, table(2)},
          {delivery_mode, range(0, 255)}, {priority, range(0, 255)},
          {correlation_id, shortstr()}, {reply_to, shortstr()}, {expiration, shortstr()},
          {message_id, shortstr()}, {timestamp, range(0, (1 bsl 64) - 1)}, {type, shortstr()},
          {user_id, shortstr()}, {app_id, shortstr()}, {cluster_id, shortstr()}],
         ?LET(Keep, vector(length(Props), boolean()),
              maps:from_list([P || {P, true} <- lists:zip(Props, Keep)]))).

frame_max() -> oneof([0, range(4096, 9000), 131072]).

%%====================================================================
%% Helpers
%%====================================================================

parse_all(Bin, FrameMax) -> parse_all(Bin, FrameMax, []).

parse_all(<<>>, _, Acc) -> lists:reverse(Acc);
parse_all(Bin, FrameMax, Acc) ->
    {ok, F, Rest} = beamlab_amqp_frame:parse(Bin, FrameMax),
    parse_all(Rest, FrameMax, [F | Acc]).

frame_sizes(<<>>) -> [];
frame_sizes(<<_:8, _:16, Size:32, _:Size/binary, 16#CE, Rest/binary>>) ->
    [Size + 8 | frame_sizes(Rest)].

%% Checks a method + header + body frame sequence and returns its parts.
content_parts(Bin, Ch, FrameMax) ->
    [{method, Ch, MP}, {header, Ch, HP} | Bodies] = parse_all(Bin, FrameMax),
    {ok, M} = beamlab_amqp_method:decode(MP),
    {ok, 60, Size, Props} = beamlab_amqp_method:decode_header(HP),
    Body = iolist_to_binary([B || {body, C, B} <- Bodies, C =:= Ch]),
    true = length(Bodies) =:= length([x || {body, C, _} <- Bodies, C =:= Ch]),
    true = Size =:= byte_size(Body),
    %% Every frame within frame_max, and no empty body frames.
    true = FrameMax =:= 0 orelse lists:all(fun(S) -> S =< FrameMax end, frame_sizes(Bin)),
    true = lists:all(fun({body, _, B}) -> byte_size(B) > 0 end, Bodies),
    {M, Props, Body}.

%%====================================================================
%% Properties
%%====================================================================

prop_frame() ->
    ?FORALL({Type, Ch, Payload}, {oneof([1, 2, 3]), range(0, 65535), longstr()},
            begin
                Bin = iolist_to_binary(beamlab_amqp_frame:encode_frame(Type, Ch, Payload)),
                Tag = element(Type, {method, header, body}),
                {ok, {Tag, Ch, Payload}, <<>>} =:= beamlab_amqp_frame:parse(Bin)
            end).

%% Any cut of a stream of frames: a prefix gives `more' or whole frames only.
prop_frame_stream() ->
    ?FORALL({Payloads, Cut}, {non_empty(list(shortstr())), nat()},
            begin
                Bin = iolist_to_binary([[beamlab_amqp_frame:encode_frame(3, 1, P) || P <- Payloads],
                                        beamlab_amqp_frame:encode_heartbeat()]),
                Prefix = binary:part(Bin, 0, Cut rem (byte_size(Bin) + 1)),
                Frames = parse_prefix(Prefix),
                Expected = [{body, 1, P} || P <- Payloads] ++ [heartbeat],
                lists:prefix(Frames, Expected)
                    andalso (byte_size(Prefix) < byte_size(Bin) orelse Frames =:= Expected)
            end).

parse_prefix(Bin) ->
    case beamlab_amqp_frame:parse(Bin) of
        {ok, F, Rest} -> [F | parse_prefix(Rest)];
        more -> []
    end.

prop_method() ->
    ?FORALL(M, method(),
            begin
                Bin = iolist_to_binary(beamlab_amqp_method:encode(M)),
                ?WHENFAIL(io:format("~p~n~p~n", [M, beamlab_amqp_method:decode(Bin)]),
                          beamlab_amqp_method:decode(Bin) =:= {ok, M})
            end).

prop_table() ->
    ?FORALL(T, table(),
            beamlab_amqp_method:decode_table(iolist_to_binary(beamlab_amqp_method:encode_table(T)))
                =:= {ok, T}).

prop_header() ->
    ?FORALL({Size, Props}, {range(0, (1 bsl 64) - 1), props()},
            beamlab_amqp_method:decode_header(
              iolist_to_binary(beamlab_amqp_method:encode_header(60, Size, Props)))
                =:= {ok, 60, Size, Props}).

prop_content_split() ->
    ?FORALL({Ch, FrameMax, BodyLen, Props}, {range(1, 65535), frame_max(), range(0, 30000), props()},
            begin
                Body = binary:copy(<<"ab">>, BodyLen div 2),
                M = {'basic.deliver', <<"ctag">>, 7, true, <<"x">>, <<"k">>},
                Bin = iolist_to_binary(beamlab_amqp_frame:encode_content(Ch, M, Props, Body, FrameMax)),
                {M, Props, Body} =:= content_parts(Bin, Ch, FrameMax)
            end).

%% A large body given as iodata (the producers' [Stamp, Padding], #34) is
%% framed as its flat copy would be.
prop_publish_iodata() ->
    ?FORALL({Ch, FrameMax, PadLen}, {range(1, 65535), frame_max(), range(65537, 300000)},
            begin
                Pad = binary:copy(<<"x">>, PadLen),
                Body = beamlab_amqp_producer:body(42, 7, Pad),
                ok = beamlab_amqp:publish({amqp_channel, self(), Ch, FrameMax}, <<>>, <<"q">>, Body, #{}),
                receive {'$amqp_send', Ch, IoData} -> ok end,
                M = {'basic.publish', <<>>, <<"q">>, false, false},
                {M, #{}, iolist_to_binary(Body)} =:= content_parts(iolist_to_binary(IoData), Ch, FrameMax)
            end).

%% The hand-written publish encoder agrees with the generic codec.
prop_publish_frames() ->
    ?FORALL({Ch, FrameMax, X, K, Mandatory, BodyLen, Props},
            {range(1, 65535), frame_max(), shortstr(), shortstr(), boolean(), range(0, 20000), props()},
            begin
                Body = crypto:strong_rand_bytes(BodyLen),
                ok = beamlab_amqp:publish({amqp_channel, self(), Ch, FrameMax}, X, K, Body,
                                          #{props => Props, mandatory => Mandatory}),
                receive {'$amqp_send', Ch, IoData} -> ok end,
                M = {'basic.publish', X, K, Mandatory, false},
                {M, Props, Body} =:= content_parts(iolist_to_binary(IoData), Ch, FrameMax)
            end).

%% One head (method and header frames) serves every body of its size: the
%% producer builds it once while nothing in it changes (#33).
prop_publish_head() ->
    ?FORALL({Ch, FrameMax, X, K, Mandatory, Size, Props, N},
            {range(1, 65535), frame_max(), shortstr(), shortstr(), boolean(), range(0, 5000), props(),
             range(1, 4)},
            begin
                Handle = {amqp_channel, self(), Ch, FrameMax},
                Head = beamlab_amqp:publish_head(Handle, X, K, Size, #{props => Props, mandatory => Mandatory}),
                M = {'basic.publish', X, K, Mandatory, false},
                lists:all(fun(_) ->
                                  Body = crypto:strong_rand_bytes(Size),
                                  Bin = iolist_to_binary([Head | beamlab_amqp:publish_body(Handle, Body)]),
                                  {M, Props, Body} =:= content_parts(Bin, Ch, FrameMax)
                          end, lists:seq(1, N))
            end).

prop_ack_frames() ->
    ?FORALL({Ch, Tag, Multiple, Requeue, Kind},
            {range(1, 65535), range(0, (1 bsl 64) - 1), boolean(), boolean(), oneof([ack, nack, reject])},
            begin
                Handle = {amqp_channel, self(), Ch, 131072},
                Expected = case Kind of
                               ack -> ok = beamlab_amqp:ack(Handle, Tag, Multiple),
                                      {'basic.ack', Tag, Multiple};
                               nack -> ok = beamlab_amqp:nack(Handle, Tag, Multiple, Requeue),
                                       {'basic.nack', Tag, Multiple, Requeue};
                               reject -> ok = beamlab_amqp:reject(Handle, Tag, Requeue),
                                         {'basic.reject', Tag, Requeue}
                           end,
                receive {'$amqp_send', Ch, Frame} -> ok end,
                {ok, {method, Ch, P}, <<>>} = beamlab_amqp_frame:parse(iolist_to_binary(Frame)),
                {ok, Expected} =:= beamlab_amqp_method:decode(P)
                    andalso iolist_to_binary(beamlab_amqp_method:encode(Expected)) =:= P
            end).

%%====================================================================
%% EUnit
%%====================================================================

check(Prop, N) ->
    ?assert(proper:quickcheck(Prop, [{numtests, N}, {to_file, user}])).

%% A body that takes one frame is framed as `[body_head/3, Body, 16#CE]',
%% the same bytes as encode_body/3 (the producer's cached framing, #33);
%% body_head/3 is `none' exactly when the body takes no frame or several.
prop_body_head() ->
    ?FORALL({Ch, Body, FM}, {range(0, 65535), ?LET(L, oneof([range(0, 2), range(0, 40), range(0, 9000)]), binary(L)),
                             oneof([frame_max(), range(1, 64), range(1, 10)])},
            begin
                Enc = iolist_to_binary(beamlab_amqp_frame:encode_body(Ch, Body, FM)),
                Ch1 = {amqp_channel, self(), Ch, FM},
                case beamlab_amqp_frame:body_head(Ch, byte_size(Body), FM) of
                    none ->
                        beamlab_amqp:publish_body_head(Ch1, byte_size(Body)) =:= none
                            andalso (Body =:= <<>> orelse byte_size(Enc) > byte_size(Body) + 8);
                    Head ->
                        beamlab_amqp:publish_body_head(Ch1, byte_size(Body)) =:= Head
                            andalso iolist_to_binary([Head, Body, 16#CE]) =:= Enc
                end
            end).

%% (A timeout on each: EUnit's {timeout, N, List} bounds the list and
%% leaves each test in it the 5 s default.)
properties_test_() ->
    [{timeout, 120, T} || T <-
     [?_test(check(prop_frame(), 300)),
      ?_test(check(prop_frame_stream(), 300)),
      ?_test(check(prop_method(), 1000)),
      ?_test(check(prop_table(), 300)),
      ?_test(check(prop_header(), 300)),
      ?_test(check(prop_content_split(), 150)),
      ?_test(check(prop_publish_frames(), 150)),
      ?_test(check(prop_publish_head(), 100)),
      ?_test(check(prop_publish_iodata(), 60)),
      ?_test(check(prop_ack_frames(), 300)),
      ?_test(check(prop_body_head(), 500))]].

%% RabbitMQ decodes both 'l' and 'L' as signed 64-bit integers; so do we.
rabbitmq_long_test() ->
    Bin = <<1, "a", $L, -5:64/signed, 1, "b", $l, 7:64/signed>>,
    ?assertEqual({ok, [{<<"a">>, long, -5}, {<<"b">>, long, 7}]},
                 beamlab_amqp_method:decode_table(Bin)).

%% RabbitMQ's 's' is a signed 16-bit integer, not the spec's short string.
rabbitmq_short_test() ->
    ?assertEqual(<<1, "s", $s, -2:16/signed>>,
                 iolist_to_binary(beamlab_amqp_method:encode_table([{<<"s">>, short, -2}]))).

%% Known wire bytes: a basic.qos(prefetch_count=300, global=true) frame.
qos_wire_test() ->
    ?assertEqual(<<1, 0, 5, 0, 0, 0, 11, 0, 60, 0, 10, 0, 0, 0, 0, 1, 44, 1, 16#CE>>,
                 iolist_to_binary(beamlab_amqp_frame:encode_method(
                                    5, {'basic.qos', 0, 300, true}))).

%% Consecutive bits share one octet, lowest bit first (spec 4.2.5.2):
%% exchange.declare's passive, durable, auto-delete, internal, no-wait.
bit_packing_test() ->
    M = {'exchange.declare', <<"x">>, <<"direct">>, true, false, true, false, false, []},
    Bin = <<40:16, 10:16, 0:16, 1, "x", 6, "direct", 2#00101, 0:32>>,
    ?assertEqual(Bin, iolist_to_binary(beamlab_amqp_method:encode(M))),
    ?assertEqual({ok, M}, beamlab_amqp_method:decode(Bin)).

frame_errors_test() ->
    ?assertEqual(more, beamlab_amqp_frame:parse(<<1, 0>>)),
    ?assertEqual({error, {bad_frame_end, 0}}, beamlab_amqp_frame:parse(<<1, 0, 1, 0, 0, 0, 1, 9, 0>>)),
    ?assertEqual({error, {frame_too_large, 5008, 4096}},
                 beamlab_amqp_frame:parse(<<3, 0, 1, 5000:32, 0>>, 4096)),
    ?assertEqual({error, {protocol_mismatch, {0, 0, 9, 1}}},
                 beamlab_amqp_frame:parse(<<"AMQP", 0, 0, 9, 1>>)),
    ?assertEqual({error, {bad_frame_type, 9}},
                 beamlab_amqp_frame:parse(<<9, 0, 0, 0, 0, 0, 0, 16#CE>>)),
    ?assertMatch({error, {unknown_method, 99, 1}}, beamlab_amqp_method:decode(<<99:16, 1:16>>)),
    ?assertMatch({error, {'queue.declare_ok', _}}, beamlab_amqp_method:decode(<<50:16, 11:16, 5, "ab">>)).

%% Mistakes in values are reported, not silently dropped or mis-encoded.
encode_errors_test() ->
    ?assertError({amqp_encode, {unknown_properties, [persistent]}},
                 beamlab_amqp_method:encode_props(#{persistent => true})),
    ?assertError({amqp_encode, {shortstr_too_long, 256}},
                 beamlab_amqp_method:encode({'queue.declare', binary:copy(<<"q">>, 256),
                                             false, false, false, false, false, []})),
    ?assertError({amqp_encode, {bad_value, byte, 128}},
                 beamlab_amqp_method:encode_table([{<<"k">>, byte, 128}])),
    ?assertError({amqp_encode, {cannot_infer_type, {1, 2}}},
                 beamlab_amqp_method:to_table(#{<<"k">> => {1, 2}})),
    ?assertEqual([{<<"a">>, long, 1}, {<<"b">>, longstr, <<"x">>}, {<<"c">>, bool, true},
                  {<<"d">>, double, 1.5}, {<<"e">>, array, [{long, 1}, {longstr, <<"y">>}]},
                  {<<"f">>, table, [{<<"g">>, long, 2}]}],
                 beamlab_amqp_method:to_table(#{<<"a">> => 1, <<"b">> => <<"x">>, c => true,
                                                <<"d">> => 1.5, <<"e">> => [1, <<"y">>],
                                                <<"f">> => #{<<"g">> => 2}})),
    %% The facade returns such mistakes as errors (no broker needed to see it).
    Ch = {amqp_channel, self(), 1, 131072},
    ?assertEqual({error, {encode, {cannot_infer_type, {1, 2}}}},
                 beamlab_amqp:declare_queue(Ch, <<"q">>, #{arguments => #{<<"k">> => {1, 2}}})).
