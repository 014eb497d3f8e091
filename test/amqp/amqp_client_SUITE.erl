%%% Integration tests of beamlab's AMQP 0-9-1 client against a real RabbitMQ
%%% (Debian's rabbitmq-server, started on 127.0.0.1 by scripts/rabbitmq.sh in
%%% init_per_suite and stopped in end_per_suite). BEAMLAB_RABBIT_PORT picks
%%% the broker's port (default 5673).
-module(amqp_client_SUITE).

-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-export([all/0, suite/0, init_per_suite/1, end_per_suite/1,
         init_per_testcase/2, end_per_testcase/2]).
-export([negotiate/1, tune_limits/1, heartbeat_negotiation/1, heartbeats_sent/1, publish_consume/1,
         large_body/1, batching/1, mandatory_return/1, confirms/1, nacks_reject_publish/1, prefetch/1,
         multi_ack/1, nack_reject_requeue/1, get_purge_delete/1, cancel/1,
         redeclare_406/1, wrong_credentials/1, wrong_vhost/1, not_reachable/1,
         channel_owner_exit/1, connection_owner_exit/1, broker_closes_connection/1, socket_lost/1,
         blocked/1, missed_heartbeats/1, broker_stops/1, send_counted_when_written/1,
         direct_send_counted_when_written/1, direct_channel_closed_by_broker/1,
         direct_reads/1, direct_reads_closed_by_broker/1, direct_reads_heartbeats/1,
         direct_reads_owner_exit/1, direct_reads_owner_killed_unsent/1,
         silent_server/1, not_amqp_server/1, wrong_protocol_version/1]).

all() ->
    [negotiate, tune_limits, heartbeat_negotiation, heartbeats_sent, publish_consume, large_body, batching,
     mandatory_return, confirms, nacks_reject_publish, prefetch, multi_ack, nack_reject_requeue,
     get_purge_delete, cancel, redeclare_406, wrong_credentials, wrong_vhost, not_reachable,
     silent_server, not_amqp_server, wrong_protocol_version, channel_owner_exit, connection_owner_exit, broker_closes_connection, socket_lost,
     blocked, missed_heartbeats, send_counted_when_written,
     direct_send_counted_when_written, direct_channel_closed_by_broker,
     direct_reads, direct_reads_closed_by_broker, direct_reads_heartbeats, direct_reads_owner_exit,
     direct_reads_owner_killed_unsent,
     %% Last: it stops the broker.
     broker_stops].

suite() ->
    [{timetrap, {minutes, 3}}].

%%====================================================================
%% Setup
%%====================================================================

init_per_suite(Config) ->
    Port = list_to_integer(os:getenv("BEAMLAB_RABBIT_PORT", "5673")),
    Script = script(),
    {Out, 0} = rabbitmq(Script, Port, "start"),
    ct:log("~s", [Out]),
    [{port, Port}, {script, Script}, {uri, "amqp://guest:guest@127.0.0.1:" ++ integer_to_list(Port)}
     | Config].

end_per_suite(Config) ->
    {Out, _} = rabbitmq(?config(script, Config), ?config(port, Config), "stop"),
    ct:log("~s", [Out]),
    ok.

init_per_testcase(_Case, Config) ->
    Config.

end_per_testcase(blocked, Config) ->
    %% A failed `blocked' must not leave the broker in a memory alarm.
    ctl(Config, "set_vm_memory_high_watermark 0.4"),
    ok;
end_per_testcase(direct_reads_heartbeats, Config) ->
    _ = signal_broker(Config, "CONT"),
    ok;
end_per_testcase(missed_heartbeats, Config) ->
    %% A failed missed_heartbeats must not leave the broker frozen.
    _ = signal_broker(Config, "CONT"),
    ok;
end_per_testcase(_Case, _Config) ->
    ok.

%% The repository root is the first ancestor of this file with the script.
script() ->
    script(filename:dirname(filename:absname(?FILE))).

script("/") -> error(no_rabbitmq_script);
script(Dir) ->
    S = filename:join([Dir, "scripts", "rabbitmq.sh"]),
    case filelib:is_regular(S) of
        true -> S;
        false -> script(filename:dirname(Dir))
    end.

rabbitmq(_Script, Port, Action) ->
    {Rc, Out} = beamlab_test_util:rabbitmq(Action, Port),
    {Out, Rc}.

broker_pid(Config) ->
    {ok, Bin} = file:read_file(filename:join(broker_dir(Config), "rabbit.pid")),
    string:trim(binary_to_list(Bin)).

signal_broker(Config, Sig) ->
    try os:cmd("kill -" ++ Sig ++ " " ++ broker_pid(Config))
    catch _:_ -> ok
    end.

%%====================================================================
%% Helpers
%%====================================================================

connect(Config) -> connect(Config, "").

connect(Config, Query) ->
    {ok, C} = beamlab_amqp:connect(?config(uri, Config) ++ "/" ++ Query, #{}),
    C.

channel(C) ->
    {ok, Ch} = beamlab_amqp:open_channel(C),
    Ch.

%% An exclusive, auto-deleted queue named after the test case.
queue(Ch, Name) -> queue(Ch, Name, #{}).

queue(Ch, Name, Args) ->
    Q = atom_to_binary(Name, utf8),
    {ok, #{queue := Q}} = beamlab_amqp:declare_queue(Ch, Q, #{exclusive => true, arguments => Args}),
    Q.

recv() -> recv(5000).

%% How long a test waits for an event the broker sends on its own time
%% (rabbitmqctl's effect): long enough for a machine at a load average of
%% 30, and well inside the timetrap, so that a lost event fails by name.
-define(LATE_MS, 60000).

recv(Timeout) ->
    receive M -> M after Timeout -> ct:fail(no_message) end.

no_message(Timeout) ->
    receive M -> ct:fail({unexpected, M}) after Timeout -> ok end.

deliveries(Ch, N) ->
    [receive {amqp_deliver, Ch, Tag, _, _, _, Props, Body} -> {Tag, Props, Body}
     after 5000 -> ct:fail({missing_delivery, I, N})
     end || I <- lists:seq(1, N)].

%% Collect confirms until every sequence number 1..N is confirmed; returns
%% #{SeqNo => ack | nack} and how many confirms had multiple = true.
confirms(Ch, N) -> confirms(Ch, N, #{}, 0, 0).

confirms(_Ch, N, Acc, _Max, Multi) when map_size(Acc) =:= N -> {Acc, Multi};
confirms(Ch, N, Acc, Max, Multi) ->
    receive
        {amqp_confirm, Ch, Kind, Seq, false} ->
            ?assertNot(maps:is_key(Seq, Acc)),
            confirms(Ch, N, Acc#{Seq => Kind}, max(Max, Seq), Multi);
        {amqp_confirm, Ch, Kind, Seq, true} ->
            %% Everything not yet confirmed up to Seq.
            New = maps:from_list([{S, Kind} || S <- lists:seq(1, Seq), not maps:is_key(S, Acc)]),
            ?assert(map_size(New) > 0),
            confirms(Ch, N, maps:merge(Acc, New), max(Max, Seq), Multi + 1)
    after 10000 ->
        ct:fail({missing_confirms, N - map_size(Acc)})
    end.

message_count(C, Q) ->
    Ch = channel(C),
    {ok, #{message_count := N}} = beamlab_amqp:declare_queue(Ch, Q, #{passive => true}),
    ok = beamlab_amqp:close_channel(Ch),
    N.

%%====================================================================
%% Cases
%%====================================================================

negotiate(Config) ->
    C = connect(Config),
    {ok, Info} = beamlab_amqp:info(C),
    ct:log("~p", [Info]),
    #{frame_max := 131072, channel_max := 2047, heartbeat := 60, vhost := <<"/">>,
      server_properties := Props} = Info,
    {<<"product">>, longstr, <<"RabbitMQ">>} = lists:keyfind(<<"product">>, 1, Props),
    {<<"capabilities">>, table, Caps} = lists:keyfind(<<"capabilities">>, 1, Props),
    {_, bool, true} = lists:keyfind(<<"publisher_confirms">>, 1, Caps),
    %% close/1 returns once the broker answered; the process exits right
    %% after, so wait for it rather than look at once.
    Ref = monitor(process, C),
    ok = beamlab_amqp:close(C),
    receive {'DOWN', Ref, process, C, _} -> ok after 5000 -> ct:fail(connection_alive) end,
    no_message(100).

tune_limits(Config) ->
    C = connect(Config, "?frame_max=8192&channel_max=3"),
    {ok, #{frame_max := 8192, channel_max := 3}} = beamlab_amqp:info(C),
    Chs = [channel(C) || _ <- lists:seq(1, 3)],
    [1, 2, 3] = [N || {amqp_channel, _, N, 8192} <- Chs],
    {error, {channel_max, 3} = E} = beamlab_amqp:open_channel(C),
    "no free channel (channel_max is 3)" = lists:flatten(beamlab_amqp:format_error(E)),
    %% Channel numbers are reused once free.
    ok = beamlab_amqp:close_channel(lists:nth(2, Chs)),
    {amqp_channel, _, 2, _} = channel(C),
    ok = beamlab_amqp:close(C).

heartbeat_negotiation(Config) ->
    [begin
         C = connect(Config, Query),
         {ok, #{heartbeat := Expected}} = beamlab_amqp:info(C),
         ok = beamlab_amqp:close(C)
     end || {Query, Expected} <- [{"?heartbeat=3", 3}, {"?heartbeat=0", 0}, {"?heartbeat=600", 60}]],
    ok.

%% An idle connection with heartbeat=1 survives several seconds: RabbitMQ
%% closes connections that miss two heartbeats, so ours must be flowing.
heartbeats_sent(Config) ->
    C = connect(Config, "?heartbeat=1"),
    Ch = channel(C),
    no_message(3500),
    {ok, _} = beamlab_amqp:declare_queue(Ch, <<>>, #{exclusive => true}),
    ok = beamlab_amqp:close(C).

publish_consume(Config) ->
    C = connect(Config),
    Ch = channel(C),
    Q = queue(Ch, ?FUNCTION_NAME),
    {ok, Tag} = beamlab_amqp:consume(Ch, Q, #{consumer_tag => <<"my-tag">>}),
    <<"my-tag">> = Tag,
    Props = #{content_type => <<"text/plain">>, delivery_mode => 2, priority => 3,
              message_id => <<"m">>, timestamp => 1700000000,
              headers => #{<<"n">> => 42, <<"s">> => <<"str">>, <<"nested">> => #{<<"b">> => true}}},
    N = 500,
    [ok = beamlab_amqp:publish(Ch, <<>>, Q, integer_to_binary(I), #{props => Props})
     || I <- lists:seq(1, N)],
    Got = deliveries(Ch, N),
    Bodies = [integer_to_binary(I) || I <- lists:seq(1, N)],
    Bodies = [B || {_, _, B} <- Got],
    {_, P1, _} = hd(Got),
    #{content_type := <<"text/plain">>, delivery_mode := 2, priority := 3, message_id := <<"m">>,
      timestamp := 1700000000, headers := Headers} = P1,
    {_, long, 42} = lists:keyfind(<<"n">>, 1, Headers),
    {_, table, [{<<"b">>, bool, true}]} = lists:keyfind(<<"nested">>, 1, Headers),
    ?assertEqual(lists:seq(1, N), [T || {T, _, _} <- Got]),
    [ok = beamlab_amqp:ack(Ch, T, false) || {T, _, _} <- Got],
    ok = beamlab_amqp:close_channel(Ch),
    0 = message_count(C, Q),
    ok = beamlab_amqp:close(C).

%% A body larger than frame_max travels split into several body frames.
large_body(Config) ->
    C = connect(Config, "?frame_max=4096"),
    Ch = channel(C),
    Q = queue(Ch, ?FUNCTION_NAME),
    {ok, _} = beamlab_amqp:consume(Ch, Q, #{no_ack => true}),
    Body = crypto:strong_rand_bytes(100000),
    ok = beamlab_amqp:publish(Ch, <<>>, Q, Body),
    ok = beamlab_amqp:publish(Ch, <<>>, Q, <<>>),
    [{_, _, Body}, {_, _, <<>>}] = deliveries(Ch, 2),
    ok = beamlab_amqp:close(C).

%% Sends waiting in the connection's mailbox go out in one socket write.
batching(Config) ->
    C = connect(Config),
    Ch = channel(C),
    Q = queue(Ch, ?FUNCTION_NAME),
    {ok, _} = beamlab_amqp:consume(Ch, Q, #{no_ack => true}),
    {ok, #{batch_writes := W0, batched_sends := S0}} = beamlab_amqp:info(C),
    ok = sys:suspend(C),
    [ok = beamlab_amqp:publish(Ch, <<>>, Q, integer_to_binary(I)) || I <- lists:seq(1, 500)],
    true = beamlab_amqp:pending(C) >= 500,
    ok = sys:resume(C),
    Got = deliveries(Ch, 500),
    ?assertEqual([integer_to_binary(I) || I <- lists:seq(1, 500)], [B || {_, _, B} <- Got]),
    {ok, #{batch_writes := W1, batched_sends := S1}} = beamlab_amqp:info(C),
    ct:log("~b sends in ~b writes", [S1 - S0, W1 - W0]),
    {500, 1} = {S1 - S0, W1 - W0},
    ok = beamlab_amqp:close(C).

mandatory_return(Config) ->
    C = connect(Config),
    Ch = channel(C),
    ok = beamlab_amqp:publish(Ch, <<>>, <<"no-such-queue">>, <<"lost">>,
                              #{mandatory => true, props => #{message_id => <<"r1">>}}),
    {amqp_return, Ch, 312, <<"NO_ROUTE">>, <<>>, <<"no-such-queue">>, #{message_id := <<"r1">>},
     <<"lost">>} = recv(),
    %% Without mandatory the broker drops it silently.
    ok = beamlab_amqp:publish(Ch, <<>>, <<"no-such-queue">>, <<"dropped">>),
    no_message(300),
    ok = beamlab_amqp:close(C).

confirms(Config) ->
    C = connect(Config),
    Ch = channel(C),
    Q = queue(Ch, ?FUNCTION_NAME),
    ok = beamlab_amqp:confirm_select(Ch),
    %% One at a time: each publish is confirmed on its own.
    [begin
         ok = beamlab_amqp:publish(Ch, <<>>, Q, <<"one">>),
         {amqp_confirm, Ch, ack, Seq, false} = recv()
     end || Seq <- [1, 2, 3]],
    %% A burst: the broker confirms several at once with multiple = true;
    %% every sequence number must come out acked exactly once.
    N = 3000,
    [ok = beamlab_amqp:publish(Ch, <<>>, Q, <<"burst">>) || _ <- lists:seq(1, N)],
    {Acks, Multi} = confirms(Ch, N + 3, #{1 => ack, 2 => ack, 3 => ack}, 3, 0),
    ct:log("~b confirms with multiple=true", [Multi]),
    true = lists:all(fun(K) -> K =:= ack end, maps:values(Acks)),
    true = Multi > 0,
    N = message_count(C, Q) - 3,
    ok = beamlab_amqp:close(C).

nacks_reject_publish(Config) ->
    C = connect(Config),
    Ch = channel(C),
    Q = queue(Ch, ?FUNCTION_NAME, #{<<"x-max-length">> => 1, <<"x-overflow">> => <<"reject-publish">>}),
    ok = beamlab_amqp:confirm_select(Ch),
    [ok = beamlab_amqp:publish(Ch, <<>>, Q, <<"m">>) || _ <- lists:seq(1, 5)],
    {Result, _} = confirms(Ch, 5),
    #{1 := ack, 2 := nack, 3 := nack, 4 := nack, 5 := nack} = Result,
    1 = message_count(C, Q),
    ok = beamlab_amqp:close(C).

prefetch(Config) ->
    C = connect(Config),
    Ch = channel(C),
    Q = queue(Ch, ?FUNCTION_NAME),
    ok = beamlab_amqp:qos(Ch, 5),
    {ok, _} = beamlab_amqp:consume(Ch, Q, #{}),
    [ok = beamlab_amqp:publish(Ch, <<>>, Q, <<"p">>) || _ <- lists:seq(1, 20)],
    Five = deliveries(Ch, 5),
    no_message(300),
    %% Each ack lets exactly one more in.
    {T5, _, _} = lists:last(Five),
    ok = beamlab_amqp:ack(Ch, T5, false),
    [{6, _, _}] = deliveries(Ch, 1),
    no_message(300),
    ok = beamlab_amqp:close(C).

multi_ack(Config) ->
    C = connect(Config),
    Ch = channel(C),
    Q = queue(Ch, ?FUNCTION_NAME),
    {ok, _} = beamlab_amqp:consume(Ch, Q, #{}),
    [ok = beamlab_amqp:publish(Ch, <<>>, Q, <<"m">>) || _ <- lists:seq(1, 10)],
    _ = deliveries(Ch, 10),
    %% One ack for the first seven; closing the channel requeues the rest.
    ok = beamlab_amqp:ack(Ch, 7, true),
    ok = beamlab_amqp:close_channel(Ch),
    Ch2 = channel(C),
    {ok, #{message_count := 3}} = beamlab_amqp:declare_queue(Ch2, Q, #{passive => true}),
    ok = beamlab_amqp:close(C).

nack_reject_requeue(Config) ->
    C = connect(Config),
    Ch = channel(C),
    Q = queue(Ch, ?FUNCTION_NAME),
    {ok, _} = beamlab_amqp:consume(Ch, Q, #{}),
    [ok = beamlab_amqp:publish(Ch, <<>>, Q, B) || B <- [<<"a">>, <<"b">>, <<"c">>]],
    [{1, _, <<"a">>}, {2, _, <<"b">>}, {3, _, <<"c">>}] = deliveries(Ch, 3),
    ok = beamlab_amqp:reject(Ch, 1, false),             % dropped
    ok = beamlab_amqp:nack(Ch, 3, true, true),          % b and c come back
    Again = [receive {amqp_deliver, Ch, _, Redelivered, <<>>, Q, _, B} -> {Redelivered, B}
             after 5000 -> ct:fail(not_requeued) end || _ <- [1, 2]],
    [{true, <<"b">>}, {true, <<"c">>}] = lists:sort(Again),
    no_message(300),
    ok = beamlab_amqp:close(C).

get_purge_delete(Config) ->
    C = connect(Config),
    Ch = channel(C),
    Q = queue(Ch, ?FUNCTION_NAME),
    empty = beamlab_amqp:get(Ch, Q, true),
    [ok = beamlab_amqp:publish(Ch, <<>>, Q, B) || B <- [<<"x">>, <<"y">>, <<"z">>]],
    ok = wait_until(fun() -> message_count(C, Q) =:= 3 end, "3 messages queued"),
    {ok, {_Tag, false, <<>>, Q, 2, _, <<"x">>}} = beamlab_amqp:get(Ch, Q, true),
    {ok, 2} = beamlab_amqp:purge(Ch, Q),
    ok = beamlab_amqp:publish(Ch, <<>>, Q, <<"w">>),
    ok = wait_until(fun() -> message_count(C, Q) =:= 1 end, "1 message queued"),
    {ok, 1} = beamlab_amqp:delete_queue(Ch, Q, #{}),
    %% Exchanges and bindings.
    ok = beamlab_amqp:declare_exchange(Ch, <<"beamlab.test.x">>, #{type => <<"fanout">>, auto_delete => true}),
    Q2 = queue(Ch, get_purge_delete_2),
    ok = beamlab_amqp:bind(Ch, Q2, <<"beamlab.test.x">>, <<>>),
    {ok, _} = beamlab_amqp:consume(Ch, Q2, #{no_ack => true}),
    ok = beamlab_amqp:publish(Ch, <<"beamlab.test.x">>, <<"any">>, <<"fan">>),
    [{_, _, <<"fan">>}] = deliveries(Ch, 1),
    ok = beamlab_amqp:unbind(Ch, Q2, <<"beamlab.test.x">>, <<>>),
    ok = beamlab_amqp:delete_exchange(Ch, <<"beamlab.test.x">>, #{}),
    ok = beamlab_amqp:close(C).

cancel(Config) ->
    C = connect(Config),
    Ch = channel(C),
    Q = queue(Ch, ?FUNCTION_NAME),
    {ok, Tag} = beamlab_amqp:consume(Ch, Q, #{no_ack => true}),
    ok = beamlab_amqp:cancel(Ch, Tag),
    ok = beamlab_amqp:publish(Ch, <<>>, Q, <<"after cancel">>),
    no_message(300),
    %% A consumer on a queue that gets deleted is cancelled by the broker.
    Ch2 = channel(C),
    {ok, #{queue := Q2}} = beamlab_amqp:declare_queue(Ch2, <<>>, #{}),
    {ok, Tag2} = beamlab_amqp:consume(Ch2, Q2, #{}),
    {ok, 0} = beamlab_amqp:delete_queue(Ch, Q2, #{}),
    {amqp_cancelled, Ch2, Tag2} = recv(),
    ok = beamlab_amqp:close(C).

redeclare_406(Config) ->
    C = connect(Config),
    Ch = channel(C),
    Q = queue(Ch, ?FUNCTION_NAME, #{<<"x-max-length">> => 10}),
    {error, {amqp_closed, 406, Text} = E} =
        beamlab_amqp:declare_queue(Ch, Q, #{exclusive => true,
                                            arguments => #{<<"x-max-length">> => 20}}),
    ct:log("~s", [beamlab_amqp:format_error(E)]),
    <<"PRECONDITION_FAILED - inequivalent arg 'x-max-length'", _/binary>> = Text,
    {amqp_closed, Ch, 406, Text} = recv(),
    %% The channel is gone, the connection is not.
    {error, closed} = beamlab_amqp:declare_queue(Ch, Q, #{passive => true}),
    Ch2 = channel(C),
    {ok, _} = beamlab_amqp:declare_queue(Ch2, Q, #{passive => true}),
    ok = beamlab_amqp:close(C).

wrong_credentials(Config) ->
    Uri = "amqp://guest:wrong@127.0.0.1:" ++ integer_to_list(?config(port, Config)),
    {error, {access_refused, <<"guest">>, <<"ACCESS_REFUSED", _/binary>>} = E} =
        beamlab_amqp:connect(Uri, #{}),
    Msg = lists:flatten(beamlab_amqp:format_error(E)),
    ct:log("~s", [Msg]),
    "wrong credentials for user \"guest\" (ACCESS_REFUSED" ++ _ = Msg,
    no_message(100).

wrong_vhost(Config) ->
    {error, {vhost_not_found, <<"no-such-vhost">>, Text} = E} =
        beamlab_amqp:connect(?config(uri, Config) ++ "/no-such-vhost", #{}),
    ct:log("~s", [beamlab_amqp:format_error(E)]),
    <<"NOT_ALLOWED - vhost no-such-vhost not found">> = Text.

not_reachable(_Config) ->
    %% A port nobody listens on: bind one, note it, close it.
    {ok, L} = gen_tcp:listen(0, [{ip, {127, 0, 0, 1}}]),
    {ok, Port} = inet:port(L),
    ok = gen_tcp:close(L),
    {error, E} = beamlab_amqp:connect(#{host => "127.0.0.1", port => Port}, #{}),
    Expected = "broker not reachable at 127.0.0.1:" ++ integer_to_list(Port) ++ " (connection refused)",
    Expected = lists:flatten(beamlab_amqp:format_error(E)),
    {error, {uri, _} = E2} = beamlab_amqp:connect("amqp://h:99999", #{}),
    "amqp://h:99999: port must be 1..65535, got 99999" = lists:flatten(beamlab_amqp:format_error(E2)).

%% Servers that are not RabbitMQ: one that accepts and says nothing, one
%% that answers in HTTP, one that offers another AMQP version.
silent_server(_Config) ->
    {Port, Server} = fake_server(fun(_Sock) -> hold() end),
    {error, {timeout, start} = E} =
        beamlab_amqp:connect(#{host => "127.0.0.1", port => Port, connection_timeout => 300}, #{}),
    "timed out waiting for the broker (start)" = lists:flatten(beamlab_amqp:format_error(E)),
    exit(Server, kill).

not_amqp_server(_Config) ->
    {Port, Server} = fake_server(fun(Sock) ->
                                         ok = gen_tcp:send(Sock, <<"HTTP/1.1 400 Bad Request\r\n\r\n">>),
                                         hold()
                                 end),
    {error, E} = beamlab_amqp:connect(#{host => "127.0.0.1", port => Port}, #{}),
    "AMQP protocol error: the server does not speak AMQP" = lists:flatten(beamlab_amqp:format_error(E)),
    exit(Server, kill).

wrong_protocol_version(_Config) ->
    {Port, _} = fake_server(fun(Sock) ->
                                    {ok, <<"AMQP", 0, 0, 9, 1>>} = gen_tcp:recv(Sock, 8),
                                    ok = gen_tcp:send(Sock, <<"AMQP", 1, 1, 0, 10>>),
                                    ok = gen_tcp:close(Sock)
                            end),
    {error, E} = beamlab_amqp:connect(#{host => "127.0.0.1", port => Port}, #{}),
    "AMQP protocol error: the server does not speak AMQP 0-9-1 (it offers protocol 1-1-0-10)" =
        lists:flatten(beamlab_amqp:format_error(E)).

%% A fake server keeps its socket open (saying nothing more) until killed.
hold() ->
    receive after infinity -> ok end.

fake_server(Handle) ->
    Self = self(),
    Pid = spawn(fun() ->
                        {ok, L} = gen_tcp:listen(0, [binary, {ip, {127, 0, 0, 1}}, {active, false}]),
                        {ok, P} = inet:port(L),
                        Self ! {fake_port, P},
                        {ok, S} = gen_tcp:accept(L),
                        Handle(S)
                end),
    receive {fake_port, Port} -> {Port, Pid} end.

channel_owner_exit(Config) ->
    C = connect(Config),
    Self = self(),
    Pid = spawn(fun() -> Self ! {ch, channel(C)}, receive stop -> ok end end),
    Ch = receive {ch, X} -> X end,
    {ok, #{channels := 1}} = beamlab_amqp:info(C),
    Pid ! stop,
    ok = wait_until(fun() -> {ok, I} = beamlab_amqp:info(C), maps:get(channels, I) =:= 0 end,
                    "the channel closed"),
    {error, closed} = beamlab_amqp:qos(Ch, 1),
    true = is_process_alive(C),
    ok = beamlab_amqp:close(C).

connection_owner_exit(Config) ->
    Self = self(),
    Pid = spawn(fun() -> Self ! {conn, connect(Config)}, receive stop -> ok end end),
    C = receive {conn, X} -> X end,
    Mon = monitor(process, C),
    Pid ! stop,
    receive {'DOWN', Mon, process, C, normal} -> ok after 6000 -> ct:fail(connection_lives_on) end.

%% rabbitmqctl returns once the broker has been asked to close, before
%% the close reaches us: the test waits for the close itself (the channel's
%% owner told, then the connection's, then the connection process gone),
%% as late as a loaded machine brings it (it gave it 5 s).
broker_closes_connection(Config) ->
    C = connect(Config),
    Ch = channel(C),
    Mon = monitor(process, C),
    ctl(Config, "close_all_connections 'closed by the test'"),
    {amqp_closed, Ch, 320, <<"CONNECTION_FORCED - closed by the test">>} = recv(?LATE_MS),
    {amqp_closed, C, 320, <<"CONNECTION_FORCED - closed by the test">>} = recv(?LATE_MS),
    receive {'DOWN', Mon, process, C, _} -> ok after ?LATE_MS -> ct:fail(connection_lives_on) end,
    {error, closed} = beamlab_amqp:open_channel(C).

%% A memory alarm makes RabbitMQ block publishing connections
%% (connection.blocked) until it clears (connection.unblocked).
blocked(Config) ->
    C = connect(Config),
    Ch = channel(C),
    Q = queue(Ch, ?FUNCTION_NAME),
    ctl(Config, "set_vm_memory_high_watermark absolute 1"),
    ok = beamlab_amqp:publish(Ch, <<>>, Q, <<"while the alarm is on">>),
    {amqp_blocked, C, Reason} = recv(10000),
    ct:log("blocked: ~s", [Reason]),
    <<"low on memory">> = Reason,
    ctl(Config, "set_vm_memory_high_watermark 0.4"),
    {amqp_unblocked, C} = recv(10000),
    1 = message_count(C, Q),
    ok = beamlab_amqp:close(C).

%% #33-5: send/3 counts what the socket took, after the write, and tells
%% the channel's owner when asked; frames for a closed channel are neither
%% written nor counted.
send_counted_when_written(Config) ->
    C = connect(Config),
    Ch = channel(C),
    Q = queue(Ch, ?FUNCTION_NAME),
    Cs = counters:new(2, []),
    Frames = [beamlab_amqp:publish_frames(Ch, <<>>, Q, integer_to_binary(I), #{}) || I <- lists:seq(1, 10)],
    ok = beamlab_amqp:send(Ch, Frames, {Cs, 2, 10, notify}),
    {amqp_written, Ch} = recv(10000),
    ?assertEqual({0, 10}, {counters:get(Cs, 1), counters:get(Cs, 2)}),
    ok = beamlab_amqp:send(Ch, hd(Frames), {Cs, 2, 1, silent}),
    %% The connection handles its mailbox in order: once info/1 answers,
    %% the send before it was written.
    {ok, _} = beamlab_amqp:info(C),
    ?assertEqual(11, counters:get(Cs, 2)),
    no_message(0),
    %% What was counted reached the queue.
    {ok, _} = beamlab_amqp:consume(Ch, Q, #{no_ack => true}),
    ?assertEqual([integer_to_binary(I) || I <- lists:seq(1, 10) ++ [1]],
                 [B || {_, _, B} <- deliveries(Ch, 11)]),
    ok = beamlab_amqp:close_channel(Ch),
    ok = beamlab_amqp:send(Ch, Frames, {Cs, 2, 10, notify}),
    {ok, _} = beamlab_amqp:info(C),
    ?assertEqual(11, counters:get(Cs, 2)),
    no_message(0),
    ok = beamlab_amqp:close(C).

%% A direct channel: its owner writes to the socket itself, so send/3
%% has counted (and notified) by the time it returns; another process's
%% send on the channel goes through the connection; after the close,
%% nothing is written or counted.
direct_send_counted_when_written(Config) ->
    C = connect(Config),
    {ok, Ch} = beamlab_amqp:open_channel(C, #{direct => true}),
    {amqp_channel, C, _, _, {_, _, Owner}} = Ch,
    ?assertEqual(self(), Owner),
    Q = queue(Ch, ?FUNCTION_NAME),
    Cs = counters:new(2, []),
    Frames = [beamlab_amqp:publish_frames(Ch, <<>>, Q, integer_to_binary(I), #{}) || I <- lists:seq(1, 10)],
    ok = beamlab_amqp:send(Ch, Frames, {Cs, 2, 10, notify}),
    ?assertEqual({0, 10}, {counters:get(Cs, 1), counters:get(Cs, 2)}),
    {amqp_written, Ch} = recv(0),
    Self = self(),
    Other = spawn_link(fun() -> ok = beamlab_amqp:send(Ch, hd(Frames), {Cs, 2, 1, notify}), Self ! {sent, self()} end),
    {sent, Other} = recv(),
    %% Through the connection: the notice goes to the channel's owner.
    {amqp_written, Ch} = recv(),
    ?assertEqual(11, counters:get(Cs, 2)),
    {ok, _} = beamlab_amqp:consume(Ch, Q, #{no_ack => true}),
    ?assertEqual([integer_to_binary(I) || I <- lists:seq(1, 10) ++ [1]],
                 [B || {_, _, B} <- deliveries(Ch, 11)]),
    ok = beamlab_amqp:close_channel(Ch),
    ok = beamlab_amqp:send(Ch, Frames, {Cs, 2, 10, notify}),
    ok = beamlab_amqp:send(Ch, Frames),
    {ok, #{channels := 0}} = beamlab_amqp:info(C),
    ?assertEqual(11, counters:get(Cs, 2)),
    no_message(0),
    ok = beamlab_amqp:close(C).

%% The broker closes a direct channel (a publish to an exchange that does
%% not exist) while its owner keeps writing as fast as it can: its frames
%% must all reach the broker before the channel's close-ok (the broker
%% ends the whole connection, 504, for a frame on a closed channel), and
%% what it sends once told of the close is neither written nor counted.
direct_channel_closed_by_broker(Config) ->
    C = connect(Config),
    Self = self(),
    Pub = spawn_link(
            fun() ->
                    {ok, Ch} = beamlab_amqp:open_channel(C, #{direct => true}),
                    Cs = counters:new(1, []),
                    Frames = [beamlab_amqp:publish_frames(Ch, <<"no-such-exchange">>, <<"k">>, <<"x">>, #{})
                              || _ <- lists:seq(1, 20)],
                    Self ! {flooded, self(), flood(Ch, Frames, Cs)}
            end),
    {flooded, Pub, {404, <<"NOT_FOUND - no exchange 'no-such-exchange'", _/binary>>, Written, Written}} =
        recv(30000),
    ct:log("~b writes of 20 publishes before the close", [Written]),
    ?assert(Written >= 1),
    %% The connection outlived the channel: a frame after close-ok would
    %% have closed it, and its connection.close would come before this
    %% channel's open-ok.
    outlived_channel(C, ?FUNCTION_NAME).

%% The owner of a direct channel, the only one of its connection, takes
%% the socket's reads: the socket's messages then come to it, and reads/2
%% turns them into the messages the connection would have sent
%% (deliveries, a return, confirms, in the order the broker sent them),
%% nothing comes from the connection; a synchronous call meanwhile is
%% refused, not left waiting for a reply nobody reads; given back, the
%% connection reads again. A channel that is not alone, or not direct, is
%% refused the reads.
direct_reads(Config) ->
    C = connect(Config),
    {ok, Ch} = beamlab_amqp:open_channel(C, #{direct => true}),
    {amqp_channel, C, _, _, {Sock, _, _}} = Ch,
    Q = queue(Ch, ?FUNCTION_NAME),
    ok = beamlab_amqp:confirm_select(Ch),
    {ok, _} = beamlab_amqp:consume(Ch, Q, #{no_ack => true}),
    {ok, R0} = beamlab_amqp:take_reads(Ch),
    ?assertEqual({connected, self()}, erlang:port_info(Sock, connected)),
    ?assertEqual({error, reads_taken}, beamlab_amqp:declare_queue(Ch, Q, #{passive => true})),
    Frames = [beamlab_amqp:publish_frames(Ch, <<>>, Q, integer_to_binary(I), #{}) || I <- lists:seq(1, 10)]
        ++ [beamlab_amqp:publish_frames(Ch, <<>>, <<"no-such-queue">>, <<"r">>, #{mandatory => true})],
    ok = beamlab_amqp:send(Ch, Frames),
    {Msgs, R1} = read_until(R0, fun(Ms) -> confirmed(Ms) =:= lists:seq(1, 11)
                                               andalso length([D || {amqp_deliver, _, _, _, _, _, _, _} = D <- Ms]) =:= 10
                                 end, []),
    ?assertNotEqual(none, R1),
    ?assertEqual([integer_to_binary(I) || I <- lists:seq(1, 10)],
                 [B || {amqp_deliver, Ch1, _, false, <<>>, _, _, B} <- Msgs, Ch1 =:= Ch]),
    ?assertMatch([{amqp_return, Ch, 312, <<"NO_ROUTE">>, <<>>, <<"no-such-queue">>, _, <<"r">>}],
                 [M || M <- Msgs, element(1, M) =:= amqp_return]),
    ?assertEqual([], [M || {amqp_confirm, _, nack, _, _} = M <- Msgs]),
    %% The return came before the confirm of its publish (11).
    ?assert(index(amqp_return, Msgs) =< length(lists:takewhile(fun(M) -> not lists:member(11, confirmed([M])) end, Msgs))),
    no_message(0),
    none = beamlab_amqp:give_back_reads(R1),
    ?assertEqual({connected, C}, erlang:port_info(Sock, connected)),
    {ok, #{queue := Q}} = beamlab_amqp:declare_queue(Ch, Q, #{passive => true}),
    ok = beamlab_amqp:send(Ch, hd(Frames)),
    [{_, _, <<"1">>}] = deliveries(Ch, 1),
    {amqp_confirm, Ch, ack, 12, false} = recv(),
    Ch2 = channel(C),
    ?assertEqual({error, {reads, shared}}, beamlab_amqp:take_reads(Ch)),
    ?assertEqual({error, {reads, not_direct}}, beamlab_amqp:take_reads(Ch2)),
    ok = beamlab_amqp:close(C).

%% The broker closes a channel whose owner holds the reads (a publish to
%% an exchange that does not exist): its channel.close gives the reads back
%% to the connection, which answers it; the owner is told as ever and the
%% connection lives on.
direct_reads_closed_by_broker(Config) ->
    C = connect(Config),
    {Ch, Sock, R0} = reading_channel(C),
    ok = beamlab_amqp:publish(Ch, <<"no-such-exchange">>, <<"k">>, <<"x">>),
    {[], none} = read_until(R0, fun(_) -> false end, []),
    {amqp_closed, Ch, 404, <<"NOT_FOUND - no exchange 'no-such-exchange'", _/binary>>} = recv(),
    ?assertEqual({connected, C}, erlang:port_info(Sock, connected)),
    outlived_channel(C, ?FUNCTION_NAME).

%% While the owner holds the reads, the connection still judges the
%% broker's heartbeats (by the socket's byte count): the broker's
%% heartbeats keep an idle connection open, a frozen broker is found out
%% after two missed ones.
direct_reads_heartbeats(Config) ->
    C = connect(Config, "?heartbeat=1"),
    {Ch, Sock, R0} = reading_channel(C),
    {ok, [{recv_oct, Oct0}]} = inet:getstat(Sock, [recv_oct]),
    %% Four heartbeats (8 bytes each), read and dropped here: twice what
    %% would have ended an idle connection that did not see them.
    wait_until(fun() -> {ok, [{recv_oct, Oct}]} = inet:getstat(Sock, [recv_oct]), Oct >= Oct0 + 32 end,
               "four heartbeats from the broker"),
    R1 = drain_reads(R0),
    ?assertNotEqual(none, R1),
    no_message(0),
    _ = signal_broker(Config, "STOP"),
    try
        %% (Heartbeats that came before the stop may wait in the mailbox.)
        Text = receive {amqp_closed, Ch, heartbeat_timeout, T} -> T after 10000 -> ct:fail(no_close) end,
        receive {amqp_closed, C, heartbeat_timeout, Text} -> ok after 1000 -> ct:fail(no_close) end,
        ct:log("~s", [Text]),
        {match, _} = re:run(Text, "\\(no data for 2 s\\)$")
    after
        signal_broker(Config, "CONT")
    end.

%% The owner of the reads exits without giving them back: the socket
%% closes with it, and the connection says so to its owner.
direct_reads_owner_exit(Config) ->
    C = connect(Config),
    Mon = monitor(process, C),
    Self = self(),
    Pid = spawn(fun() ->
                        {ok, Ch} = beamlab_amqp:open_channel(C, #{direct => true}),
                        {ok, _} = beamlab_amqp:take_reads(Ch),
                        Self ! {taken, self()}
                end),
    {taken, Pid} = recv(),
    {amqp_closed, C, socket_closed, Text} = recv(),
    ct:log("~s", [Text]),
    {'DOWN', Mon, process, C, normal} = recv().

%% The owner of the reads is killed while its writes wait in the socket
%% (the broker is frozen and reads nothing): the socket is reset at once,
%% its unsent data dropped, and the connection ends with it. The port used
%% to outlive its owner, holding that data for as long as the broker
%% stayed frozen, and `erlang:halt/2' (flush) waited for it: the first
%% Ctrl-C of a run against a frozen broker printed its summary but did not
%% end the VM (reliability_SUITE:amqp_frozen_broker_interrupt).
direct_reads_owner_killed_unsent(Config) ->
    C = connect(Config),
    Mon = monitor(process, C),
    Self = self(),
    Owner = spawn(fun() ->
                          {Ch, Sock, _R} = reading_channel(C),
                          Self ! {reading, self(), Sock},
                          receive write -> ok end,
                          Frames = beamlab_amqp:publish_frames(Ch, <<>>, <<"nowhere">>,
                                                               binary:copy(<<0>>, 65536), #{}),
                          write_while_ok(Ch, Frames)
                  end),
    {reading, Owner, Sock} = recv(),
    _ = signal_broker(Config, "STOP"),
    try
        Owner ! write,
        %% The kernel's buffers are full and the port queues the rest.
        beamlab_test_util:wait_until(
          fun() -> case erlang:port_info(Sock, queue_size) of
                       {queue_size, N} -> N > 0;
                       undefined -> false
                   end
          end, 60000, "unsent data queued in the port"),
        exit(Owner, kill),
        wait_until(fun() -> erlang:port_info(Sock) =:= undefined end, "the socket closed"),
        receive {'DOWN', Mon, process, C, _} -> ok after 5000 -> ct:fail(connection_left) end
    after
        signal_broker(Config, "CONT")
    end.

write_while_ok(Ch, Frames) ->
    case beamlab_amqp:send(Ch, Frames) of
        ok -> write_while_ok(Ch, Frames);
        _ -> ok
    end.

%% Connection C is still open after one of its channels was closed by
%% the broker: a new channel on it works, the old one is gone, nothing
%% else was said. Closes C.
outlived_channel(C, Name) ->
    Ch2 = channel(C),
    Q = queue(Ch2, Name),
    {ok, #{queue := Q}} = beamlab_amqp:declare_queue(Ch2, Q, #{passive => true}),
    {ok, #{channels := 1}} = beamlab_amqp:info(C),
    no_message(0),
    ok = beamlab_amqp:close(C).

%% A direct channel on C whose reads this process took: {Ch, Socket, Reader}.
reading_channel(C) ->
    {ok, Ch} = beamlab_amqp:open_channel(C, #{direct => true}),
    {amqp_channel, C, _, _, {Sock, _, _}} = Ch,
    {ok, R} = beamlab_amqp:take_reads(Ch),
    {Ch, Sock, R}.

%% Reads the socket's messages through R until Done(Msgs) holds or the
%% reads went back to the connection; {Msgs, Reader}.
read_until(R, Done, Acc) ->
    receive
        Msg ->
            case beamlab_amqp:reads(Msg, R) of
                {ok, Ms, R1} ->
                    Acc1 = Acc ++ Ms,
                    case R1 =:= none orelse Done(Acc1) of
                        true -> {Acc1, R1};
                        false -> read_until(R1, Done, Acc1)
                    end;
                ignore ->
                    ct:fail({unexpected, Msg})
            end
    after 5000 ->
        ct:fail({read_until, Acc})
    end.

%% The socket's messages waiting now, read (heartbeats only).
drain_reads(R) ->
    receive
        {tcp, _, _} = Msg ->
            {ok, [], R1} = beamlab_amqp:reads(Msg, R),
            drain_reads(R1);
        {tcp_passive, _} = Msg ->
            {ok, [], R1} = beamlab_amqp:reads(Msg, R),
            drain_reads(R1)
    after 0 ->
        R
    end.

%% The sequence numbers confirmed by Msgs (a multiple confirm covers all
%% up to its own), in order.
confirmed(Msgs) ->
    lists:usort(lists:append([case Mu of true -> lists:seq(1, Tag); false -> [Tag] end
                              || {amqp_confirm, _, _, Tag, Mu} <- Msgs])).

index(Tag, Msgs) ->
    length(lists:takewhile(fun(M) -> element(1, M) =/= Tag end, Msgs)) + 1.

flood(Ch, Frames, Cs) ->
    ok = beamlab_amqp:send(Ch, Frames, {Cs, 1, 1, silent}),
    receive
        {amqp_closed, Ch, Code, Text} ->
            Before = counters:get(Cs, 1),
            ok = beamlab_amqp:send(Ch, Frames, {Cs, 1, 1, silent}),
            {Code, Text, Before, counters:get(Cs, 1)}
    after 0 ->
        flood(Ch, Frames, Cs)
    end.

ctl(Config, Args) ->
    Out = os:cmd("HOME=" ++ broker_dir(Config) ++ " ERL_EPMD_ADDRESS=127.0.0.1 "
                 "/usr/lib/rabbitmq/bin/rabbitmqctl -n beamlab-rabbit-"
                 ++ integer_to_list(?config(port, Config)) ++ "@localhost " ++ Args ++ " 2>&1"),
    ct:log("rabbitmqctl ~s~n~s", [Args, Out]).

%% The TCP connection dies under the client (here: a proxy between client
%% and broker drops both sockets without any AMQP close).
socket_lost(Config) ->
    {Proxy, ProxyPort} = beamlab_test_amqp:proxy(?config(port, Config)),
    {ok, C} = beamlab_amqp:connect(#{host => "127.0.0.1", port => ProxyPort}, #{}),
    Ch = channel(C),
    Q = queue(Ch, ?FUNCTION_NAME),
    {ok, _} = beamlab_amqp:declare_queue(Ch, Q, #{passive => true}),
    Proxy ! cut,
    Text = iolist_to_binary(["connection to 127.0.0.1:", integer_to_list(ProxyPort),
                             " lost: socket closed"]),
    {amqp_closed, Ch, socket_closed, Text} = recv(),
    {amqp_closed, C, socket_closed, Text} = recv(),
    "connection to 127.0.0.1:" ++ _ = binary_to_list(iolist_to_binary(beamlab_amqp:format_error({socket_closed, Text}))),
    %% Calls after the loss fail cleanly; async sends are no-ops.
    {error, closed} = beamlab_amqp:open_channel(C),
    ok = beamlab_amqp:publish(Ch, <<>>, Q, <<"into the void">>).

broker_dir(Config) ->
    filename:join([filename:dirname(filename:dirname(?config(script, Config))), "_build",
                   "rabbitmq", integer_to_list(?config(port, Config))]).

%% Freeze the broker (SIGSTOP): with heartbeat=1 the client must notice
%% within about two heartbeat intervals and report it.
missed_heartbeats(Config) ->
    C = connect(Config, "?heartbeat=1"),
    Ch = channel(C),
    _ = signal_broker(Config, "STOP"),
    try
        {amqp_closed, Ch, heartbeat_timeout, Text} = recv(10000),
        {amqp_closed, C, heartbeat_timeout, Text} = recv(1000),
        ct:log("~s", [Text]),
        %% Declared dead after two missed heartbeats (four idle half-interval
        %% ticks of 1 s heartbeats), not at the first silence.
        <<"missed heartbeats from 127.0.0.1:", _/binary>> = Text,
        {match, _} = re:run(Text, "\\(no data for 2 s\\)$")
    after
        signal_broker(Config, "CONT")
    end.

%% The broker shuts down under an open connection.
broker_stops(Config) ->
    C = connect(Config),
    Ch = channel(C),
    {_, 0} = rabbitmq(?config(script, Config), ?config(port, Config), "stop"),
    {amqp_closed, Ch, Code, Text} = recv(),
    {amqp_closed, C, Code, Text} = recv(),
    ct:log("~p ~s", [Code, Text]),
    true = (Code =:= 320) orelse (Code =:= socket_closed),
    {error, E} = beamlab_amqp:connect(?config(uri, Config), #{}),
    "broker not reachable at 127.0.0.1:" ++ _ = lists:flatten(beamlab_amqp:format_error(E)).

wait_until(Cond, What) ->
    beamlab_test_util:wait_until(Cond, 5000, What).
