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
-compile({inline, [frame/3, done/4]}).

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
handle({tcp, Sock, Data}, #reader{sock = Sock, buf = Buf} = R) ->
    Bin = case Buf of <<>> -> Data; _ -> <<Buf/binary, Data/binary>> end,
    frames(Bin, R, []);
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

%% The frames of `Bin', up to the first one this process does not read.
frames(Bin, #reader{frame_max = Max} = R, Acc) ->
    case beamlab_amqp_frame:parse(Bin, Max) of
        {ok, heartbeat, Rest} ->
            frames(Rest, R, Acc);
        {ok, {Type, N, Payload}, Rest} when N =:= R#reader.num ->
            case frame(Type, Payload, R) of
                {ok, R1} -> frames(Rest, R1, Acc);
                {ok, Msg, R1} -> frames(Rest, R1, [Msg | Acc]);
                other -> {ok, lists:reverse(Acc), back(R#reader{buf = Bin}, [])}
            end;
        more ->
            {ok, lists:reverse(Acc), R#reader{buf = Bin}};
        _ ->
            %% Another channel's or the connection's frame, or not a valid
            %% frame: the connection handles it (and reports the error).
            {ok, lists:reverse(Acc), back(R#reader{buf = Bin}, [])}
    end.

frame(method, Payload, #reader{content = none} = R) ->
    case beamlab_amqp_method:decode(Payload) of
        {ok, #'basic.deliver'{} = M} -> {ok, R#reader{content = {M, undefined, 0, []}}};
        {ok, #'basic.return'{} = M} -> {ok, R#reader{content = {M, undefined, 0, []}}};
        {ok, #'basic.ack'{delivery_tag = Tag, multiple = Mu}} ->
            {ok, {amqp_confirm, R#reader.handle, ack, Tag, Mu}, R};
        {ok, #'basic.nack'{delivery_tag = Tag, multiple = Mu}} ->
            {ok, {amqp_confirm, R#reader.handle, nack, Tag, Mu}, R};
        _ -> other
    end;
frame(header, Payload, #reader{content = {M, undefined, _, []}} = R) ->
    case beamlab_amqp_method:decode_header(Payload) of
        {ok, _Class, 0, Props} -> {ok, done(M, Props, <<>>, R), R#reader{content = none}};
        {ok, _Class, Size, Props} -> {ok, R#reader{content = {M, Props, Size, []}}};
        {error, _} -> other
    end;
frame(body, Payload, #reader{content = {M, Props, Left, Acc}, keep = Keep} = R)
  when Props =/= undefined ->
    case Left - byte_size(Payload) of
        0 when Acc =:= [], Keep =:= all -> {ok, done(M, Props, Payload, R), R#reader{content = none}};
        0 when Acc =:= [] ->
            %% The usual body, in one frame: what is kept of it, copied.
            %% binary_part/3 and a comparison, not binary:part/3 and
            %% min/2: no calls per delivery (#33).
            Kept = binary:copy(binary_part(Payload, 0, if Keep < byte_size(Payload) -> Keep;
                                                          true -> byte_size(Payload)
                                                       end)),
            {ok, done(M, Props, Kept, R), R#reader{content = none}};
        0 -> {ok, done(M, Props, iolist_to_binary(lists:reverse(kept(Keep, Payload, Acc))), R),
              R#reader{content = none}};
        L when L > 0 -> {ok, R#reader{content = {M, Props, L, kept(Keep, Payload, Acc)}}};
        _ -> other
    end;
frame(_, _, _) ->
    other.

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
