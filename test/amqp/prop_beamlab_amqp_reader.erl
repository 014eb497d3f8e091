%%% @doc PropEr properties of beamlab_amqp_reader (#33: it parses a whole
%%% read in one loop, the state in arguments): a random stream of a
%%% channel's deliveries, returns, confirms and heartbeats, framed at a
%%% random frame_max and cut into random reads, gives exactly the messages
%%% the stream holds, in order; the reads given back to the connection at
%%% any read (the bytes not handled and the content being received) and
%%% taken again lose and repeat nothing; a body's kept part is a copy; a frame the reader does not read
%%% (the connection's, another channel's) stops it there, with every byte
%%% from that frame on given back.
-module(prop_beamlab_amqp_reader).

-include_lib("proper/include/proper.hrl").
-include_lib("eunit/include/eunit.hrl").
-include("beamlab_amqp.hrl").

-export([prop_reads/0]).

-define(CH, 3).
-define(HANDLE, {amqp_channel, test, ?CH}).

%%====================================================================
%% Generators
%%====================================================================

str() -> ?LET(L, range(0, 12), binary(L)).

body() -> ?LET(L, oneof([range(0, 20), range(0, 700)]), binary(L)).

props() -> oneof([#{}, #{delivery_mode => 2}, #{content_type => <<"text/plain">>, priority => 3}]).

item() ->
    frequency([{6, {deliver, range(1, 1 bsl 40), boolean(), str(), str(), props(), body()}},
               {2, {return, range(300, 320), str(), str(), str(), props(), body()}},
               {3, {ack, range(1, 1 bsl 40), boolean()}},
               {1, {nack, range(1, 1 bsl 40), boolean()}},
               {1, heartbeat}]).

%% What ends the stream: nothing, a method on channel 0 or a frame of
%% another channel (followed by bytes the reader must not touch).
tail() -> oneof([none, {conn, binary(5)}, {other, binary(5)}]).

%%====================================================================
%% Properties
%%====================================================================

prop_reads() ->
    ?FORALL({Items, Tail, FrameMax, Keep, Cuts, BackAt},
            {list(item()), tail(), oneof([0, 256, 4096]), oneof([all, 0, 8, 100]),
             list(range(1, 300)), oneof([never, range(0, 10)])},
            begin
                {ok, L} = gen_tcp:listen(0, [binary, {ip, {127, 0, 0, 1}}]),
                try
                    Stream = iolist_to_binary([encode(I, FrameMax) || I <- Items]),
                    TailBin = tail_bytes(Tail),
                    Reads = cut(<<Stream/binary, TailBin/binary>>, Cuts),
                    R0 = beamlab_amqp_reader:new(L, self(), ?CH, ?HANDLE, Keep, FrameMax, {<<>>, none}),
                    {Msgs, End} = feed(Reads, R0, L, Keep, FrameMax, BackAt, 0, []),
                    Expected = [expected(I, Keep) || I <- Items, I =/= heartbeat],
                    %% Without a tail, everything was read; with one, every
                    %% byte from its frame on went back.
                    Left = case End of
                               {back, Buf, Content} -> {Buf, Content};
                               {reading, R} -> back(beamlab_amqp_reader:give_back(R))
                           end,
                    ?WHENFAIL(io:format("messages ~p~nexpected ~p~nleft ~p~n", [Msgs, Expected, Left]),
                              Msgs =:= Expected andalso Left =:= {TailBin, none}
                              andalso (Keep =:= all orelse lists:all(fun detached/1, Msgs)))
                after
                    gen_tcp:close(L)
                end
            end).

%% A kept part of a body is a copy: it does not hold the read it came in.
detached({amqp_deliver, _, _, _, _, _, _, Body}) -> binary:referenced_byte_size(Body) =:= byte_size(Body);
detached({amqp_return, _, _, _, _, _, _, Body}) -> binary:referenced_byte_size(Body) =:= byte_size(Body);
detached(_) -> true.

%% Feeds the reads; at read `BackAt' the reads go back to the "connection"
%% (this process) and are taken again from what came back.
feed([], R, _L, _Keep, _FM, _BackAt, _I, Acc) ->
    {lists:append(lists:reverse(Acc)), {reading, R}};
feed([Data | Reads], R, L, Keep, FM, BackAt, I, Acc) ->
    case beamlab_amqp_reader:handle({tcp, L, Data}, R) of
        {ok, Msgs, none} ->
            {Buf, Content} = back(none),
            Rest = iolist_to_binary(Reads),
            {lists:append(lists:reverse([Msgs | Acc])), {back, <<Buf/binary, Rest/binary>>, Content}};
        {ok, Msgs, R1} when I =:= BackAt ->
            none = beamlab_amqp_reader:give_back(R1),
            {Buf, Content} = back(none),
            R2 = beamlab_amqp_reader:new(L, self(), ?CH, ?HANDLE, Keep, FM, {Buf, Content}),
            feed(Reads, R2, L, Keep, FM, BackAt, I + 1, [Msgs | Acc]);
        {ok, Msgs, R1} ->
            feed(Reads, R1, L, Keep, FM, BackAt, I + 1, [Msgs | Acc])
    end.

back(none) ->
    receive {'$amqp_reads_back', ?CH, Buf, Content, []} -> {Buf, Content}
    after 1000 -> error(no_reads_back)
    end.

cut(Bin, []) -> [Bin];
cut(Bin, [N | Ns]) when N < byte_size(Bin) ->
    <<A:N/binary, B/binary>> = Bin,
    [A | cut(B, Ns)];
cut(Bin, _) -> [Bin].

encode({deliver, Tag, Re, X, K, Props, Body}, FM) ->
    beamlab_amqp_frame:encode_content(?CH, #'basic.deliver'{consumer_tag = <<"c">>, delivery_tag = Tag,
                                                             redelivered = Re, exchange = X,
                                                             routing_key = K}, Props, Body, FM);
encode({return, Code, Text, X, K, Props, Body}, FM) ->
    beamlab_amqp_frame:encode_content(?CH, #'basic.return'{reply_code = Code, reply_text = Text,
                                                            exchange = X, routing_key = K},
                                      Props, Body, FM);
encode({ack, Tag, Mu}, _FM) ->
    beamlab_amqp_frame:encode_method(?CH, #'basic.ack'{delivery_tag = Tag, multiple = Mu});
encode({nack, Tag, Mu}, _FM) ->
    beamlab_amqp_frame:encode_method(?CH, #'basic.nack'{delivery_tag = Tag, multiple = Mu});
encode(heartbeat, _FM) ->
    beamlab_amqp_frame:encode_heartbeat().

tail_bytes(none) -> <<>>;
tail_bytes({conn, More}) ->
    iolist_to_binary([beamlab_amqp_frame:encode_method(0, #'connection.close_ok'{}), More]);
tail_bytes({other, More}) ->
    iolist_to_binary([beamlab_amqp_frame:encode_method(?CH + 1, #'basic.ack'{delivery_tag = 1}), More]).

expected({deliver, Tag, Re, X, K, Props, Body}, Keep) ->
    {amqp_deliver, ?HANDLE, Tag, Re, X, K, decoded(Props), kept(Body, Keep)};
expected({return, Code, Text, X, K, Props, Body}, Keep) ->
    {amqp_return, ?HANDLE, Code, Text, X, K, decoded(Props), kept(Body, Keep)};
expected({Kind, Tag, Mu}, _Keep) ->
    {amqp_confirm, ?HANDLE, Kind, Tag, Mu}.

decoded(Props) ->
    Payload = iolist_to_binary(beamlab_amqp_method:encode_header(60, 0, Props)),
    {ok, 60, 0, P} = beamlab_amqp_method:decode_header(Payload),
    P.

kept(Body, all) -> Body;
kept(Body, Keep) -> binary:part(Body, 0, min(Keep, byte_size(Body))).

%%====================================================================
%% EUnit
%%====================================================================

reads_test_() ->
    {timeout, 120, ?_assert(proper:quickcheck(prop_reads(), [{numtests, 500}, {to_file, user}]))}.
