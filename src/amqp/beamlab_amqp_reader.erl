%%% @doc The reads of a direct channel in its owner's process (#33): the
%%% owner of the only channel of a plain TCP connection takes the socket's
%%% reads from the connection process ({@link beamlab_amqp:take_reads/1}),
%%% gets the socket's `{tcp, ...}' messages itself and turns them here into
%%% the messages the connection would have sent it (`amqp_deliver',
%%% `amqp_confirm', `amqp_return'): no message, wake-up or copy of the
%%% connection process per burst.
%%%
%%% Only those frames are read here (and heartbeats, which need no
%%% answer). At any other frame (a method on channel 0, a reply, the
%%% broker's `channel.close', `connection.blocked'...), a socket closed or
%%% failed, or when the owner asks ({@link give_back/1}, before a
%%% synchronous call or its end), the reads go back to the connection:
%%% the socket (its messages still waiting in the owner's mailbox move with
%%% it, in order), the bytes not yet handled and a content being received,
%%% so the connection carries on from the frame this process stopped at.
-module(beamlab_amqp_reader).

%% Called per frame (three per delivery): inlined, no call each (#33).
-compile({inline, [frame/4, method/5, header/6, body/6, whole/7, kept_one/2, done/4, stop/4, keep/3,
                   content_header/1]}).

-include("beamlab_amqp.hrl").

-export([new/7, handle/2, give_back/1, kept/3]).

-export_type([reader/0, content/0]).

%% The reads' state: the socket, the connection process, the channel
%% (number, the handle in the messages, bytes of a body kept), frame_max,
%% the bytes of a frame not complete yet, a content being received.
-record(reader, {sock :: gen_tcp:socket(),
                 conn :: pid(),
                 num :: char(),
                 handle :: tuple(),
                 keep :: all | non_neg_integer(),
                 frame_max :: non_neg_integer(),
                 buf = <<>> :: binary(),
                 content = none :: content()}).

-opaque reader() :: #reader{}.
%% A delivery or return waiting for its header and body frames (as the
%% connection keeps it): the method, its properties once the header came,
%% the body bytes still due, the kept body frames (newest first).
-type content() :: none | {tuple(), beamlab_amqp_method:props() | undefined,
                           non_neg_integer(), [binary()]}.
%% A message as the connection process sends it to a channel's owner.
-type msg() :: {amqp_deliver, tuple(), non_neg_integer(), boolean(), binary(), binary(),
                beamlab_amqp_method:props(), binary()}
             | {amqp_confirm, tuple(), ack | nack, non_neg_integer(), boolean()}
             | {amqp_return, tuple(), char(), binary(), binary(), binary(),
                beamlab_amqp_method:props(), binary()}.

%% Packets read per re-arming of the socket, as the connection's.
-define(ACTIVE_N, 64).

%% @doc The reads of channel `Num' (its messages carry `Handle') on
%% `Sock' of connection `Conn', starting with `Buf' (bytes the connection
%% read but did not handle) and `Content'.
-spec new(gen_tcp:socket(), pid(), char(), tuple(), all | non_neg_integer(), non_neg_integer(),
          {binary(), content()}) -> reader().
new(Sock, Conn, Num, Handle, Keep, FrameMax, {Buf, Content}) ->
    #reader{sock = Sock, conn = Conn, num = Num, handle = Handle, keep = Keep,
            frame_max = FrameMax, buf = Buf, content = Content}.

%% @doc Handles `Msg' if it is the socket's: `{ok, Msgs, Reader1}' with
%% the channel's messages read (in order), and `none' for `Reader1' once
%% the reads went back to the connection; `ignore' for any other message.
-spec handle(term(), reader()) -> {ok, [msg()], reader() | none} | ignore.
handle({tcp, Sock, Data}, #reader{sock = Sock, buf = Buf, content = C} = R) ->
    Bin = case Buf of <<>> -> Data; _ -> <<Buf/binary, Data/binary>> end,
    frames(Bin, C, R, []);
handle({tcp_passive, Sock}, #reader{sock = Sock} = R) ->
    %% If the socket closed meanwhile, tcp_closed follows.
    _ = inet:setopts(Sock, [{active, ?ACTIVE_N}]),
    {ok, [], R};
handle({T, Sock} = Msg, #reader{sock = Sock} = R) when T =:= tcp_closed ->
    {ok, [], back(R, [Msg])};
handle({tcp_error, Sock, _} = Msg, #reader{sock = Sock} = R) ->
    {ok, [], back(R, [Msg])};
handle(_, _) ->
    ignore.

%% @doc Gives the reads back to the connection (see the module's doc).
-spec give_back(reader() | none) -> none.
give_back(none) -> none;
give_back(R) -> back(R, []).

%% @doc The body frames kept so far, newest first: all of them, or up to
%% `Keep' bytes, copied (a part of a frame refers to the whole of what the
%% socket read).
-spec kept(all | non_neg_integer(), binary(), [binary()]) -> [binary()].
kept(all, Payload, Acc) ->
    [Payload | Acc];
kept(Keep, Payload, Acc) ->
    case Keep - iolist_size(Acc) of
        Room when Room > 0 -> [binary:copy(binary:part(Payload, 0, min(Room, byte_size(Payload)))) | Acc];
        _ -> Acc
    end.

%% The frames of `Bin', up to the first one this process does not read,
%% with the content being received (`C') and the messages read (`Acc',
%% newest first) in arguments: the reader's record is updated once per
%% read, not once per frame, and a complete frame of this channel is
%% matched here, not by a call of beamlab_amqp_frame:parse/2 per frame
%% (#33: three frames a delivery). The match is parse/2's for a valid
%% frame; anything else (a heartbeat, bytes still to come, another
%% channel's frame, an invalid one) goes through parse/2.
frames(<<?AMQP_FRAME_METHOD, Ch1:16, S1:32, P1:S1/binary, ?AMQP_FRAME_END,
         ?AMQP_FRAME_HEADER, Ch2:16, S2:32, P2:S2/binary, ?AMQP_FRAME_END,
         ?AMQP_FRAME_BODY, Ch3:16, S3:32, P3:S3/binary, ?AMQP_FRAME_END, Rest/binary>> = Bin, none,
       #reader{num = N, frame_max = Max} = R, Acc)
  when Ch1 =:= N, Ch2 =:= N, Ch3 =:= N,
       (Max =:= 0 orelse (S1 + ?AMQP_FRAME_OVERHEAD =< Max andalso S2 + ?AMQP_FRAME_OVERHEAD =< Max
                          andalso S3 + ?AMQP_FRAME_OVERHEAD =< Max)) ->
    %% The usual delivery, whole in the read: its three frames (method,
    %% header, a body in one frame) in one step of the loop, one call
    %% where there were three (#33). Anything else: frame by frame.
    whole(P1, P2, P3, Rest, Bin, R, Acc);
frames(Bin, C, R, Acc) ->
    frame(Bin, C, R, Acc).

%% A delivery or return whole in three frames (see frames/4), else the
%% first frame alone.
whole(P1, P2, P3, Rest, Bin, R, Acc) ->
    case beamlab_amqp_method:decode(P1) of
        {ok, M} when is_record(M, 'basic.deliver'); is_record(M, 'basic.return') ->
            case content_header(P2) of
                {ok, _Class, Size, Props} when Size =:= byte_size(P3), Size > 0 ->
                    frames(Rest, none, R, [done(M, Props, kept_one(R#reader.keep, P3), R) | Acc]);
                _ -> frame(Bin, none, R, Acc)
            end;
        _ -> frame(Bin, none, R, Acc)
    end.

%% A content header with no properties (what beamlab and PerfTest publish
%% unless asked for some) read here, without decode_header/1's two calls
%% per delivery (#33); any other through it.
content_header(<<Class:16, _Weight:16, Size:64, 0:16>>) ->
    {ok, Class, Size, #{}};
content_header(Payload) ->
    beamlab_amqp_method:decode_header(Payload).

%% One frame off the front of `Bin'.
frame(<<Type:8, Ch:16, Size:32, Payload:Size/binary, ?AMQP_FRAME_END, Rest/binary>> = Bin, C,
      #reader{num = N, frame_max = Max} = R, Acc)
  when Ch =:= N, (Max =:= 0 orelse Size + ?AMQP_FRAME_OVERHEAD =< Max) ->
    case Type of
        ?AMQP_FRAME_METHOD when C =:= none -> method(Payload, Rest, Bin, R, Acc);
        ?AMQP_FRAME_HEADER -> header(Payload, Rest, Bin, C, R, Acc);
        ?AMQP_FRAME_BODY -> body(Payload, Rest, Bin, C, R, Acc);
        _ -> stop(Bin, C, R, Acc)
    end;
frame(Bin, C, #reader{frame_max = Max} = R, Acc) ->
    case beamlab_amqp_frame:parse(Bin, Max) of
        {ok, heartbeat, Rest} -> frames(Rest, C, R, Acc);
        more -> {ok, lists:reverse(Acc), keep(Bin, C, R)};
        _ ->
            %% Another channel's or the connection's frame, or not a valid
            %% frame: the connection handles it (and reports the error).
            stop(Bin, C, R, Acc)
    end.

method(Payload, Rest, Bin, R, Acc) ->
    case beamlab_amqp_method:decode(Payload) of
        {ok, #'basic.deliver'{} = M} -> frames(Rest, {M, undefined, 0, []}, R, Acc);
        {ok, #'basic.return'{} = M} -> frames(Rest, {M, undefined, 0, []}, R, Acc);
        {ok, #'basic.ack'{delivery_tag = Tag, multiple = Mu}} ->
            frames(Rest, none, R, [{amqp_confirm, R#reader.handle, ack, Tag, Mu} | Acc]);
        {ok, #'basic.nack'{delivery_tag = Tag, multiple = Mu}} ->
            frames(Rest, none, R, [{amqp_confirm, R#reader.handle, nack, Tag, Mu} | Acc]);
        _ -> stop(Bin, none, R, Acc)
    end.

header(Payload, Rest, Bin, {M, undefined, _, []} = C, R, Acc) ->
    case content_header(Payload) of
        {ok, _Class, 0, Props} -> frames(Rest, none, R, [done(M, Props, <<>>, R) | Acc]);
        {ok, _Class, Size, Props} -> frames(Rest, {M, Props, Size, []}, R, Acc);
        {error, _} -> stop(Bin, C, R, Acc)
    end;
header(_Payload, _Rest, Bin, C, R, Acc) ->
    stop(Bin, C, R, Acc).

body(Payload, Rest, Bin, {M, Props, Left, Kept0} = C, #reader{keep = Keep} = R, Acc)
  when Props =/= undefined ->
    case Left - byte_size(Payload) of
        0 when Kept0 =:= [] -> frames(Rest, none, R, [done(M, Props, kept_one(Keep, Payload), R) | Acc]);
        0 ->
            Body = iolist_to_binary(lists:reverse(kept(Keep, Payload, Kept0))),
            frames(Rest, none, R, [done(M, Props, Body, R) | Acc]);
        L when L > 0 -> frames(Rest, {M, Props, L, kept(Keep, Payload, Kept0)}, R, Acc);
        _ -> stop(Bin, C, R, Acc)
    end;
body(_Payload, _Rest, Bin, C, R, Acc) ->
    stop(Bin, C, R, Acc).

%% What is kept of a body that came in one frame: all of it, or its first
%% `Keep' bytes copied (a part would hold the whole read). No calls per
%% delivery (#33): a comparison, not min/2, and up to 8 bytes (the
%% consumer's stamp) copied through an integer, not by binary:copy/1.
kept_one(all, Payload) ->
    Payload;
kept_one(Keep, Payload) ->
    Len = if Keep < byte_size(Payload) -> Keep;
             true -> byte_size(Payload)
          end,
    if Len =< 8 ->
            <<I:Len/unit:8, _/binary>> = Payload,
            <<I:Len/unit:8>>;
       true -> binary:copy(binary_part(Payload, 0, Len))
    end.

%% The read ends with `Bin' not handled yet, `C' being received: the
%% record is updated only if they changed.
keep(<<>>, none, #reader{buf = <<>>, content = none} = R) -> R;
keep(Bin, C, R) -> R#reader{buf = Bin, content = C}.

%% The reads go back to the connection from the frame at the start of `Bin'.
stop(Bin, C, R, Acc) ->
    {ok, lists:reverse(Acc), back(R#reader{buf = Bin, content = C}, [])}.

done(#'basic.deliver'{delivery_tag = Tag, redelivered = Re, exchange = X, routing_key = K},
     Props, Body, #reader{handle = H}) ->
    {amqp_deliver, H, Tag, Re, X, K, Props, Body};
done(#'basic.return'{reply_code = C, reply_text = T, exchange = X, routing_key = K},
     Props, Body, #reader{handle = H}) ->
    {amqp_return, H, C, T, X, K, Props, Body}.

%% The socket goes back to the connection: reading stops, the socket's
%% messages still in this mailbox move to the connection (controlling_process
%% forwards them in order), then the bytes not handled, the content and
%% `Extra' (a tcp_closed or tcp_error this process got) follow; the
%% connection holds what the socket sent until then and handles it after.
back(#reader{sock = Sock, conn = Conn, num = N, buf = Buf, content = Content}, Extra) ->
    _ = inet:setopts(Sock, [{active, false}]),
    _ = gen_tcp:controlling_process(Sock, Conn),
    Conn ! {'$amqp_reads_back', N, Buf, Content, Extra},
    none.
