%%% @doc AMQP 0-9-1 frame codec: the protocol header, parsing of method,
%%% content-header, body and heartbeat frames out of a byte stream, and
%%% encoding of frames, including splitting a message body into body frames
%%% that respect the negotiated `frame_max'.
-module(beamlab_amqp_frame).

-include("beamlab_amqp.hrl").

-export([protocol_header/0, parse/1, parse/2,
         encode_method/2, encode_header/4, encode_body/3, body_head/3, encode_heartbeat/0,
         encode_content/5, encode_frame/3, format_error/1]).

-export_type([frame/0, error/0]).

%% Why the received bytes are not a valid frame.
-type error() :: not_amqp
               | {protocol_mismatch, {byte(), byte(), byte(), byte()}}
               | {heartbeat_on_channel, char()} | {bad_frame_type, byte()}
               | {frame_too_large, pos_integer(), non_neg_integer()}
               | {bad_frame_end, byte()}.

-type frame() :: {method, char(), binary()} | {header, char(), binary()}
               | {body, char(), binary()} | heartbeat.

%% @doc The bytes a client sends first: "AMQP" 0 0 9 1.
-spec protocol_header() -> binary().
protocol_header() -> <<"AMQP", 0, 0, 9, 1>>.

%% @doc Parse one frame off the front of `Bin' (no size limit).
-spec parse(binary()) -> {ok, frame(), binary()} | more | {error, error()}.
parse(Bin) -> parse(Bin, 0).

%% @doc Parse one frame, rejecting frames larger than `FrameMax' bytes
%% (0 = no limit). Payloads are sub-binaries of `Bin' (no copy).
-spec parse(binary(), non_neg_integer()) -> {ok, frame(), binary()} | more | {error, error()}.
parse(<<"AMQP", A, B, C, D, _/binary>>, _) ->
    %% The server answers an unsupported protocol header with its own.
    {error, {protocol_mismatch, {A, B, C, D}}};
parse(<<Type:8, Ch:16, Size:32, Payload:Size/binary, ?AMQP_FRAME_END, Rest/binary>>, FrameMax)
  when FrameMax =:= 0; Size + ?AMQP_FRAME_OVERHEAD =< FrameMax ->
    case Type of
        ?AMQP_FRAME_METHOD -> {ok, {method, Ch, Payload}, Rest};
        ?AMQP_FRAME_HEADER -> {ok, {header, Ch, Payload}, Rest};
        ?AMQP_FRAME_BODY -> {ok, {body, Ch, Payload}, Rest};
        ?AMQP_FRAME_HEARTBEAT when Ch =:= 0 -> {ok, heartbeat, Rest};
        ?AMQP_FRAME_HEARTBEAT -> {error, {heartbeat_on_channel, Ch}};
        _ -> {error, {bad_frame_type, Type}}
    end;
parse(<<_:8, _:16, Size:32, _/binary>>, FrameMax)
  when FrameMax > 0, Size + ?AMQP_FRAME_OVERHEAD > FrameMax ->
    {error, {frame_too_large, Size + ?AMQP_FRAME_OVERHEAD, FrameMax}};
parse(<<_:8, _:16, Size:32, _:Size/binary, End:8, _/binary>>, _) ->
    {error, {bad_frame_end, End}};
parse(_, _) ->
    more.

%% @doc A frame of any type around an iodata payload.
-spec encode_frame(1..8, char(), iodata()) -> iodata().
encode_frame(Type, Ch, Payload) ->
    [<<Type:8, Ch:16, (iolist_size(Payload)):32>>, Payload, ?AMQP_FRAME_END].

%% @doc A method frame.
-spec encode_method(char(), beamlab_amqp_method:method()) -> iodata().
encode_method(Ch, Method) ->
    encode_frame(?AMQP_FRAME_METHOD, Ch, beamlab_amqp_method:encode(Method)).

%% @doc A content header frame.
-spec encode_header(char(), pos_integer(), non_neg_integer(), beamlab_amqp_method:props()) ->
          iodata().
encode_header(Ch, ClassId, BodySize, Props) ->
    encode_frame(?AMQP_FRAME_HEADER, Ch, beamlab_amqp_method:encode_header(ClassId, BodySize, Props)).

%% @doc Body frames carrying `Body', each at most `FrameMax' bytes long
%% including the 8 bytes of frame overhead (0 = no limit). An empty body
%% gives no frame, as the spec allows.
-spec encode_body(char(), iodata(), non_neg_integer()) -> iodata().
encode_body(Ch, Body, FrameMax) when is_binary(Body) ->
    %% At least 1 byte a frame; a comparison, not max/2 (a call on OTP 25,
    %% once per publish: #33).
    Chunk = case FrameMax of
                0 -> byte_size(Body);
                _ -> FrameMax - ?AMQP_FRAME_OVERHEAD
            end,
    split_body(Ch, Body, if Chunk > 1 -> Chunk; true -> 1 end);
encode_body(Ch, Body, FrameMax) ->
    case iolist_size(Body) of
        Small when Small =< ?AMQP_SHARED_BODY -> encode_body(Ch, iolist_to_binary(Body), FrameMax);
        Size ->
            %% A large body ([Stamp, Padding]) is framed without being
            %% flattened: its frames refer to the shared padding, so that
            %% producers publishing 512 MiB bodies hold one padding, not one
            %% copy per message (#34).
            Chunk = case FrameMax of
                        0 -> Size;
                        _ -> FrameMax - ?AMQP_FRAME_OVERHEAD
                    end,
            split_iovec(Ch, erlang:iolist_to_iovec(Body), Size, max(Chunk, 1))
    end.

%% @doc The header of the one body frame that carries a body of `Size'
%% bytes on channel `Ch' under `FrameMax': `[Head, Body, 16#CE]' is then
%% the iodata {@link encode_body/3} gives. `none' when such a body takes
%% no frame (it is empty) or several.
-spec body_head(char(), non_neg_integer(), non_neg_integer()) -> binary() | none.
body_head(_Ch, 0, _FrameMax) ->
    none;
body_head(Ch, Size, FrameMax) when FrameMax =:= 0; Size + ?AMQP_FRAME_OVERHEAD =< FrameMax;
                                   Size =:= 1 ->
    %% (A frame_max of at most 8 bytes still gives a byte a frame:
    %% encode_body/3's chunks are at least 1 byte.)
    <<?AMQP_FRAME_BODY:8, Ch:16, Size:32>>;
body_head(_Ch, _Size, _FrameMax) ->
    none.

split_iovec(_Ch, _Bins, 0, _Chunk) ->
    [];
split_iovec(Ch, Bins, Left, Chunk) ->
    N = min(Left, Chunk),
    {Part, Rest} = take(Bins, N, []),
    [<<?AMQP_FRAME_BODY:8, Ch:16, N:32>>, Part, ?AMQP_FRAME_END | split_iovec(Ch, Rest, Left - N, Chunk)].

%% The first N bytes of a list of binaries (sub-binaries: nothing copied).
take(Bins, 0, Acc) ->
    {lists:reverse(Acc), Bins};
take([B | Bins], N, Acc) when byte_size(B) =< N ->
    take(Bins, N - byte_size(B), [B | Acc]);
take([B | Bins], N, Acc) ->
    <<Part:N/binary, Rest/binary>> = B,
    {lists:reverse([Part | Acc]), [Rest | Bins]}.

split_body(_Ch, <<>>, _) ->
    [];
split_body(Ch, Body, Chunk) when byte_size(Body) =< Chunk ->
    [<<?AMQP_FRAME_BODY:8, Ch:16, (byte_size(Body)):32>>, Body, ?AMQP_FRAME_END];
split_body(Ch, Body, Chunk) ->
    <<Part:Chunk/binary, Rest/binary>> = Body,
    [<<?AMQP_FRAME_BODY:8, Ch:16, Chunk:32>>, Part, ?AMQP_FRAME_END | split_body(Ch, Rest, Chunk)].

%% @doc A heartbeat frame.
-spec encode_heartbeat() -> binary().
encode_heartbeat() ->
    <<?AMQP_FRAME_HEARTBEAT:8, 0:16, 0:32, ?AMQP_FRAME_END>>.

%% @doc A content-bearing method (basic.publish, basic.deliver, ...) with its
%% content header and body frames, ready to send.
-spec encode_content(char(), beamlab_amqp_method:method(), beamlab_amqp_method:props(),
                     iodata(), non_neg_integer()) -> iodata().
encode_content(Ch, Method, Props, Body, FrameMax) ->
    Bin = iolist_to_binary(Body),
    {ClassId, _} = beamlab_amqp_method:method_ids(Method),
    [encode_method(Ch, Method),
     encode_header(Ch, ClassId, byte_size(Bin), Props),
     encode_body(Ch, Bin, FrameMax)].

%% @doc One line for a frame error.
-spec format_error(error()) -> iolist().
format_error(Reason) ->
    beamlab_format_reason:line(fun error_line/1, Reason).

error_line({frame_too_large, Size, Max}) ->
    io_lib:format("frame of ~b bytes exceeds the negotiated frame_max of ~b", [Size, Max]);
error_line({bad_frame_end, End}) ->
    io_lib:format("frame does not end with 0xCE (got 0x~2.16.0B): stream out of sync", [End]);
error_line({bad_frame_type, T}) ->
    io_lib:format("unknown frame type ~b", [T]);
error_line({heartbeat_on_channel, Ch}) ->
    io_lib:format("heartbeat frame on channel ~b (must be 0)", [Ch]);
error_line({protocol_mismatch, {A, B, C, D}}) ->
    io_lib:format("the server does not speak AMQP 0-9-1 (it offers protocol ~b-~b-~b-~b)",
                  [A, B, C, D]);
error_line(R) ->
    io_lib:format("bad AMQP frame: ~0tp", [R]).
