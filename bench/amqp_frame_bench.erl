%%% @doc beamlab's AMQP 0-9-1 frame codec: a publish encoded (method,
%%% content header and a 1 KiB body), and frames parsed off a buffer, as
%%% the load generator does for every message. Bench module of `beamlab
%%% check' (docs/ci.md).
-module(amqp_frame_bench).

-include("beamlab_amqp.hrl").

-export([benchmarks/0]).

benchmarks() ->
    [#{name => "amqp encode publish 1 KiB",
       init => fun() -> binary:copy(<<"x">>, 1024) end,
       init_runner => fun(Body) -> Body end,
       runner => fun(Body) -> iolist_size(publish(Body)) end},
     #{name => "amqp parse 10 frames",
       init => fun() -> iolist_to_binary([publish(binary:copy(<<"y">>, 100)) || _ <- lists:seq(1, 3)]
                                         ++ [beamlab_amqp_frame:encode_heartbeat()]) end,
       init_runner => fun(Buffer) -> Buffer end,
       runner => fun(Buffer) -> parse(Buffer, 0) end}].

publish(Body) ->
    beamlab_amqp_frame:encode_content(1, #'basic.publish'{exchange = <<"x">>, routing_key = <<"key">>},
                                      #{delivery_mode => 2, content_type => <<"application/octet-stream">>},
                                      Body, 131072).

parse(<<>>, N) -> N;
parse(Buffer, N) ->
    {ok, _Frame, Rest} = beamlab_amqp_frame:parse(Buffer),
    parse(Rest, N + 1).
