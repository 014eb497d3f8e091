%%% Integration tests of the load generator (`beamlab amqp') against a real
%%% RabbitMQ started on loopback by scripts/rabbitmq.sh (own port, own state
%%% directory), through the library and through the built escript.
-module(amqp_perf_SUITE).
-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-export([all/0, groups/0, init_per_suite/1, end_per_suite/1]).
-export([cli_short_run/1, cli_json/1, cli_direct_reads/1, cli_interrupt/1, counts_exact/1, consumer_count_below_producer_count/1,
         mandatory_unroutable_returned/1, confirms_and_nacks/1, prefetch_honoured/1,
         multi_ack/1, queue_pattern/1, closed_loop/1, rate_never_overshoots/1, rate_bursts_exact/1,
         unpaced_paced_by_socket/1,
         iot_500_connections/1,
         quorum_queue/1, nodes_peer/1, named_node_without_code/1, inequivalent_queue/1, bad_uri/1, wrong_credentials/1,
         unreachable/1, broker_stops_mid_run/1, connections_closed/1, reconnect/1]).

%% The broker's port, chosen free when it starts (beamlab_test_util:
%% start_suite_rabbitmq/1): a fresh machine or a parallel run may hold any
%% fixed one.
-define(PORT, beamlab_test_util:suite_broker_port(?MODULE)).
-define(URI, list_to_binary("amqp://guest:guest@127.0.0.1:" ++ ?PORT ++ "/%2F")).

all() ->
    [{group, library}, {group, cli}, connections_closed, reconnect, broker_stops_mid_run].

groups() ->
    [{library, [], [counts_exact, consumer_count_below_producer_count,
                    mandatory_unroutable_returned, confirms_and_nacks, prefetch_honoured,
                    multi_ack, queue_pattern, closed_loop, rate_never_overshoots, rate_bursts_exact,
                    unpaced_paced_by_socket,
                    iot_500_connections,
                    quorum_queue, nodes_peer, named_node_without_code]},
     {cli, [], [cli_short_run, cli_json, cli_direct_reads, cli_interrupt, inequivalent_queue, bad_uri, wrong_credentials,
                unreachable]}].

init_per_suite(Config) ->
    ok = beamlab_test_util:start_suite_rabbitmq(?MODULE),
    Config.

end_per_suite(_Config) ->
    beamlab_test_util:stop_suite_rabbitmq(?MODULE).

rabbit(Cmd) ->
    beamlab_test_util:rabbitmq(Cmd, ?PORT).

%% Runs the generator in this process; its lines are logged. `on_line'
%% (a fun) also sees every line as it is printed.
run(Cfg0) ->
    Self = self(),
    {OnLine, Cfg} = case maps:take(on_line, Cfg0) of
                        {F, C} -> {F, C};
                        error -> {fun(_) -> ok end, Cfg0}
                    end,
    Out = fun(B) -> OnLine(B), Self ! {amqp_line, B}, ok end,
    Res = beamlab_amqp_perf:run(maps:merge(#{uri => ?URI, out => Out}, Cfg)),
    Lines = lines(),
    ct:log("~ts", [Lines]),
    {Res, Lines}.

lines() ->
    receive {amqp_line, B} -> [B | lines()]
    after 0 -> []
    end.

ok_run(Cfg) ->
    {{ok, R}, Lines} = run(Cfg),
    %% Nothing of the run is left in the caller's mailbox.
    ?assertEqual({messages, []}, process_info(self(), messages)),
    {R, iolist_to_binary(Lines)}.

uniq(Name) ->
    iolist_to_binary([Name, $-, integer_to_binary(erlang:unique_integer([positive]))]).

%% A client connection for setting up and inspecting queues.
with_channel(Fun) ->
    beamlab_test_amqp:with_channel(?URI, Fun).

queue_exists(Q) ->
    with_channel(fun(Ch) ->
                         case beamlab_amqp:declare_queue(Ch, Q, #{passive => true}) of
                             {ok, _} -> true;
                             {error, {amqp_closed, 404, _}} -> false
                         end
                 end).

counters(R) -> maps:get(counters, R).
acc(R) -> maps:get(accounting, R).

%%--------------------------------------------------------------------
%% Library

counts_exact(_) ->
    Q = uniq(<<"counts">>),
    {R, Text} = ok_run(#{queue => Q, pmessages => 300, cmessages => 300, prefetch => 50,
                         confirm => 20, producers => 1, consumers => 1}),
    ?assertMatch(#{sent := 300, received := 300, confirmed := 300, nacked := 0}, counters(R)),
    %% One latency per message, also where the deliveries and confirms of
    %% one read are recorded together (#33).
    ?assertEqual(300, beamlab_stats_hist:count(maps:get(consumer_hist, R))),
    ?assertEqual(300, beamlab_stats_hist:count(maps:get(confirm_hist, R))),
    ?assertMatch(#{balanced := true, queued := 0}, acc(R)),
    ?assertEqual(counts, maps:get(stop, R)),
    ?assertNotEqual(nomatch, binary:match(Text, <<"sending rate avg: ">>)),
    ?assertNotEqual(nomatch, binary:match(Text, <<"(balanced)">>)),
    %% The queue was created by the run and is gone afterwards.
    ?assertNot(queue_exists(Q)).

%% -D below -C: the rest stays in the queue and the accounting says so.
consumer_count_below_producer_count(_) ->
    Q = uniq(<<"rest">>),
    {R, _} = ok_run(#{queue => Q, pmessages => 200, cmessages => 50, prefetch => 10,
                      confirm => 50, duration => 5}),
    #{sent := 200, received := Rcv} = counters(R),
    ?assertEqual(50, Rcv),
    %% The deliveries of the last read past -C are neither counted nor recorded.
    ?assertEqual(50, beamlab_stats_hist:count(maps:get(consumer_hist, R))),
    ?assertMatch(#{balanced := true, queued := 150}, acc(R)).

mandatory_unroutable_returned(_) ->
    Q = uniq(<<"unroutable">>),
    with_channel(fun(Ch) -> {ok, _} = beamlab_amqp:declare_queue(Ch, Q, #{}) end),
    %% amq.direct has no binding for the key: every message comes back.
    {R, Text} = ok_run(#{queue => Q, predeclared => true, exchange => <<"amq.direct">>,
                         mandatory => true, consumers => 0, pmessages => 40, confirm => 10}),
    ?assertMatch(#{sent := 40, returned := 40, confirmed := 40, received := 0}, counters(R)),
    ?assertMatch(#{balanced := true}, acc(R)),
    ?assertNotEqual(nomatch, binary:match(Text, <<"+ returned 40 +">>)),
    %% A predeclared queue is left in place.
    ?assert(queue_exists(Q)),
    with_channel(fun(Ch) -> {ok, _} = beamlab_amqp:delete_queue(Ch, Q, #{}) end).

confirms_and_nacks(_) ->
    Q = uniq(<<"maxlen">>),
    Args = #{<<"x-max-length">> => 1, <<"x-overflow">> => <<"reject-publish">>},
    with_channel(fun(Ch) -> {ok, _} = beamlab_amqp:declare_queue(Ch, Q, #{arguments => Args}) end),
    {R, Text} = ok_run(#{queue => Q, predeclared => true, exchange => <<>>, consumers => 0,
                         pmessages => 30, confirm => 1}),
    %% confirm window 1: each publish waits for its confirm, so the queue
    %% holds the first message and rejects every later one.
    ?assertMatch(#{sent := 30, confirmed := 1, nacked := 29}, counters(R)),
    ?assertMatch(#{balanced := true, queued := 1}, acc(R)),
    ?assertMatch({match, _}, re:run(Text, "confirm latency min/median/75th/95th/99th [0-9]+/")),
    with_channel(fun(Ch) -> {ok, _} = beamlab_amqp:delete_queue(Ch, Q, #{}) end).

%% Multi-ack every 100 with prefetch 10 never acknowledges during the run:
%% the broker stops delivering after exactly the prefetch count.
prefetch_honoured(_) ->
    Q = uniq(<<"prefetch">>),
    {R, _} = ok_run(#{queue => Q, prefetch => 10, multi_ack => 100, pmessages => 60,
                      confirm => 60, duration => 2}),
    ?assertMatch(#{sent := 60, received := 10}, counters(R)),
    %% The 10 were acknowledged at the end, the 50 others are still queued.
    ?assertMatch(#{balanced := true, queued := 50}, acc(R)).

%% Prefetch 20 and an ack every 10 (multiple): only multi-acks keep the
%% consumer going past 20 messages.
multi_ack(_) ->
    Q = uniq(<<"multiack">>),
    {R, _} = ok_run(#{queue => Q, prefetch => 20, multi_ack => 10, pmessages => 500,
                      cmessages => 500, confirm => 50, duration => 10}),
    ?assertMatch(#{sent := 500, received := 500}, counters(R)),
    ?assertEqual(counts, maps:get(stop, R)),
    ?assertMatch(#{balanced := true, queued := 0}, acc(R)).

queue_pattern(_) ->
    P = <<(uniq(<<"pat">>))/binary, "-%d">>,
    {R, _} = ok_run(#{queue_pattern => {P, 1, 3}, producers => 3, consumers => 3,
                      pmessages => 100, cmessages => 100, confirm => 20, mandatory => true}),
    Qs = beamlab_amqp_topology:expand_pattern(P, 1, 3),
    ?assertEqual(Qs, maps:get(queues, R)),
    %% Producer i publishes to queue i, consumer i reads queue i.
    ?assertMatch(#{sent := 300, received := 300, returned := 0}, counters(R)),
    ?assertMatch(#{balanced := true, queued := 0}, acc(R)),
    ?assertEqual([false, false, false], [queue_exists(Q) || Q <- Qs]).

closed_loop(_) ->
    {R, Text} = ok_run(#{closed_loop => 4, duration => 2}),
    #{sent := S, received := Rcv} = counters(R),
    ?assert(Rcv > 0),
    %% At most one message per channel is in flight at any time.
    ?assert(S - Rcv =< 4),
    ?assertMatch(#{balanced := true}, acc(R)),
    ?assertEqual(4, length(maps:get(queues, R))),
    ?assertEqual(nomatch, binary:match(Text, <<"confirmed:">>)).

%% Never more than the schedule allows: rate * elapsed + 1 per producer.
rate_never_overshoots(_) ->
    Q = uniq(<<"rate">>),
    {R, _} = ok_run(#{queue => Q, rate => 40, producers => 2, duration => 2}),
    #{sent := S} = counters(R),
    Elapsed = maps:get(elapsed_us, R) / 1000000,
    ?assert(S =< 2 * (40 * Elapsed + 1)),
    ?assert(S > 0),
    ?assertMatch(#{balanced := true}, acc(R)).

%% At a rate, the messages due at one moment go out as one burst
%% (beamlab_amqp_producer:burst/2): every message once, in order, its
%% sequence number in its body and its confirm settled, whether the burst
%% ends with the schedule, the window (confirm 30) or the batch (64
%% publishes). 3000 msg/s on a 1 ms timer are bursts of several messages;
%% the queue keeps them for inspection.
rate_bursts_exact(_) ->
    Q = uniq(<<"bursts">>),
    N = 1500,
    with_channel(fun(Ch) -> {ok, _} = beamlab_amqp:declare_queue(Ch, Q, #{}) end),
    {R, _} = ok_run(#{queue => Q, predeclared => true, exchange => <<>>, consumers => 0,
                      rate => 3000, pmessages => N, confirm => 30}),
    ?assertMatch(#{sent := N, confirmed := N, nacked := 0}, counters(R)),
    ?assertEqual(N, beamlab_stats_hist:count(maps:get(confirm_hist, R))),
    ?assertMatch(#{balanced := true, queued := N}, acc(R)),
    Bodies = with_channel(fun(Ch) -> get_all(Ch, Q, []) end),
    with_channel(fun(Ch) -> {ok, _} = beamlab_amqp:delete_queue(Ch, Q, #{}) end),
    Stamps = [S || <<S:64/signed, _:32, _/binary>> <- Bodies],
    ?assertEqual(lists:seq(0, N - 1), [K || <<_:64, K:32, _/binary>> <- Bodies]),
    %% Stamps follow the schedule: never backwards.
    ?assertEqual(Stamps, lists:sort(Stamps)).

get_all(Ch, Q, Acc) ->
    case beamlab_amqp:get(Ch, Q, true) of
        {ok, {_T, _R, _X, _K, _C, _Props, Body}} -> get_all(Ch, Q, [iolist_to_binary(Body) | Acc]);
        empty -> lists:reverse(Acc)
    end.

%% #33-5: `-x 1 -y 1' with no rate and no confirms. A publish counts as
%% sent when the socket took it (not when it was queued in the client), and
%% the consumers' connections stop reading while their consumer is behind,
%% so the backlog sits on the broker: the run ends with nothing left
%% unaccounted. The end may take longer than the default 5 s on a loaded
%% machine (the broker still has megabytes to read from its socket), hence
%% -st 60: a bound, not a timing assertion. Whether a second of the sent
%% series is 0 depends on the broker's flow control (it stops reading the
%% socket while its queue is behind), so that is logged, not asserted.
unpaced_paced_by_socket(_) ->
    Q = uniq(<<"unpaced">>),
    {R, Text} = ok_run(#{queue => Q, producers => 1, consumers => 1, duration => 3,
                         shutdown_timeout => 60}),
    Sent = [maps:get(sent, S) || S <- maps:get(rates, R)],
    ct:log("sent per interval: ~p", [Sent]),
    ?assert(length(Sent) >= 2),
    ?assert(lists:sum(Sent) > 0),
    #{sent := S, received := Rcv} = counters(R),
    ?assert(S > 0),
    ?assertMatch(#{balanced := true, unaccounted := 0, approximate := false}, acc(R)),
    ?assertEqual(S, Rcv + maps:get(queued, acc(R))),
    ?assertEqual(nomatch, binary:match(Text, <<"shutdown timeout">>)).

%% #33-3/4, PerfTest's IoT scenario at small scale: 500 producers, each on
%% its own connection (opened at most 500 a second), one message every 2 s
%% after a random delay of up to 2 s, no consumer. Everything sent is in
%% the queue, the producers' lateness is counted, and the VM's memory per
%% connection stays under a bound (idle producers and connections
%% hibernate: without that it was 35 KiB).
iot_500_connections(_) ->
    Q = uniq(<<"iot">>),
    {R, Text} = ok_run(#{queue => Q, producers => 500, consumers => 0, publishing_interval => 2.0,
                         producer_start_delay => 2, connection_rate => 500, duration => 6}),
    #{sent := S, late := Late} = counters(R),
    ct:log("sent ~b, late ~b, memory ~p", [S, Late, maps:get(memory, R)]),
    %% Every producer publishes at least once between its start (at most
    %% 2 s in) and the end (6 s).
    ?assert(S >= 500),
    ?assert(is_integer(Late) andalso Late >= 0 andalso Late =< S),
    ?assertMatch(#{balanced := true, queued := S, unaccounted := 0}, acc(R)),
    [#{connections := 500, per_connection := Per}] = maps:get(memory, R),
    ?assert(Per =< 32 * 1024),
    ?assertMatch({match, _}, re:run(Text, "publishes more than one interval \\(2.0 s\\) late: [0-9]+ of "
                                          ++ integer_to_list(S) ++ "\n")),
    ?assertMatch({match, _}, re:run(Text, "500 connections, .* KiB per connection\n")).

quorum_queue(_) ->
    Q = uniq(<<"quorum">>),
    {R, _} = ok_run(#{queue => Q, quorum => true, pmessages => 100, cmessages => 100,
                      confirm => 20, prefetch => 20}),
    ?assertMatch(#{sent := 100, received := 100}, counters(R)),
    ?assertMatch(#{balanced := true}, acc(R)).

%% --nodes 2: this node and one peer, each running one producer and one
%% consumer; counters and histograms merge into one report.
nodes_peer(_) ->
    Q = uniq(<<"nodes">>),
    {R, _} = ok_run(#{queue => Q, nodes => {peers, 2}, producers => 2, consumers => 2,
                      pmessages => 200, cmessages => 200, confirm => 20, prefetch => 20}),
    ?assertEqual(2, length(maps:get(nodes, R))),
    ?assertMatch(#{sent := 400, received := 400}, counters(R)),
    ?assertEqual(400, beamlab_stats_hist:count(maps:get(consumer_hist, R))),
    ?assertEqual(400, beamlab_stats_hist:count(maps:get(confirm_hist, R))),
    ?assertMatch(#{balanced := true}, acc(R)).

%% --nodes with a running node that has no beamlab code: the run loads it.
named_node_without_code(_) ->
    {ok, Vm} = beamlab_runtime_peer:start(#{dist => true, load => false}),
    Peer = beamlab_runtime_peer:node(Vm),
    try
        ?assertEqual(non_existing, erpc:call(Peer, code, which, [beamlab_amqp_agent])),
        Q = uniq(<<"named">>),
        {R, _} = ok_run(#{queue => Q, nodes => [node(), Peer], producers => 2, consumers => 2,
                          pmessages => 100, cmessages => 100, confirm => 20}),
        ?assertEqual(lists:sort([node(), Peer]), maps:get(nodes, R)),
        ?assertMatch(#{sent := 200, received := 200}, counters(R)),
        ?assertMatch(#{balanced := true}, acc(R))
    after
        beamlab_runtime_peer:stop(Vm)
    end.

%%--------------------------------------------------------------------
%% CLI

cli(Args) ->
    R = beamlab_test_util:cli(["amqp", "-h", binary_to_list(?URI) | Args]),
    ct:log("exit ~p~nstdout:~n~ts~nstderr:~n~ts", [maps:get(code, R), maps:get(out, R), maps:get(err, R)]),
    R.

cli_short_run(_) ->
    #{code := 0, out := Out} = cli(["-x", "1", "-y", "1", "-z", "2", "-f", "mandatory",
                                    "-f", "persistent", "-c", "50", "-q", "100", "-s", "100",
                                    "-u", binary_to_list(uniq(<<"cli">>))]),
    Line = "id: test-[0-9]{6}-[0-9]{3}, time [0-9]+\\.[0-9]{3} s, sent: [0-9.]+ msg/s, "
           "returned: [0-9.]+ msg/s, confirmed: [0-9.]+ msg/s, nacked: [0-9.]+ msg/s, "
           "received: [0-9.]+ msg/s, min/median/75th/95th/99th consumer latency: "
           "[0-9]+/[0-9]+/[0-9]+/[0-9]+/[0-9]+ \302\265s, confirm latency: [0-9]+/[0-9]+/[0-9]+/[0-9]+/[0-9]+ \302\265s\n",
    ?assertMatch({match, _}, re:run(Out, Line)),
    ?assertMatch({match, _}, re:run(Out, "sending rate avg: [0-9.]+ msg/s\n")),
    ?assertMatch({match, _}, re:run(Out, "receiving rate avg: [0-9.]+ msg/s\n")),
    ?assertMatch({match, _}, re:run(Out, "accounting: sent ([0-9]+) = received \\1 \\+ returned 0 "
                                         "\\+ nacked 0 \\+ queued 0 \\(balanced\\)")),
    %% beamlab's own table follows.
    ?assertMatch({match, _}, re:run(Out, "consumer latency +[0-9]")).

cli_json(_) ->
    #{code := 0, out := Out, err := Err} =
        cli(["-C", "100", "-D", "100", "-c", "10", "--format", "json",
             "-u", binary_to_list(uniq(<<"json">>))]),
    {ok, Doc} = beamlab_json:decode(Out),
    ?assertMatch(#{<<"kind">> := <<"amqp">>}, Doc),
    #{<<"extra">> := #{<<"amqp">> := #{<<"counters">> := #{<<"sent">> := 100, <<"received">> := 100},
                                       <<"accounting">> := #{<<"balanced">> := true}}}} = Doc,
    %% The PerfTest lines went to stderr.
    ?assertMatch({match, _}, re:run(Err, "sending rate avg")).

%% The application environment's `amqp_direct_reads', given on the
%% escript's command line, is what the run does: with `true' the producer
%% and the consumer (each the only channel of its connection) read their
%% own sockets, with `false' neither does, and the counts close either way
%% (the escript used to ignore the setting: its application was never
%% loaded).
cli_direct_reads(_) ->
    Run = fun(Flag) ->
                  R = #{code := 0, out := Out} =
                      beamlab_test_util:cli(["amqp", "-h", binary_to_list(?URI), "-x", "1", "-y", "1",
                                             "-C", "200", "-D", "200", "-c", "10", "--format", "json",
                                             "-u", binary_to_list(uniq(<<"dr">>))],
                                            #{env => [{"ERL_FLAGS", "-beamlab amqp_direct_reads " ++ Flag}]}),
                  ct:log("~s: ~p", [Flag, R]),
                  {ok, Doc} = beamlab_json:decode(Out),
                  #{<<"extra">> := #{<<"amqp">> := #{<<"counters">> := C,
                                                     <<"accounting">> := #{<<"balanced">> := true}}}} = Doc,
                  ?assertMatch(#{<<"sent">> := 200, <<"received">> := 200}, C),
                  maps:get(<<"direct_reads">>, C)
          end,
    ?assertEqual(2, Run("true")),
    ?assertEqual(0, Run("false")).

%% Ctrl-C (SIGTERM to the launcher): the run stops, prints what it measured,
%% drains and balances, and the document says partial.
cli_interrupt(_) ->
    %% The port's OS process is the escript's launcher (exec), which
    %% forwards SIGTERM to the VM. In json mode the PerfTest lines go to
    %% stderr: interrupt once one says messages are flowing.
    H = #{os_pid := Pid, err_file := ErrFile} =
        beamlab_test_util:cli_start(["amqp", "-h", binary_to_list(?URI), "-c", "20", "-z", "60",
                                     "--format", "json", "-u", binary_to_list(uniq(<<"int">>))],
                                    #{}),
    _ = beamlab_test_util:wait_for_file(ErrFile, ", sent: [1-9]", 30000),
    os:cmd("kill -TERM " ++ integer_to_list(Pid)),
    #{code := Code, out := Out, err := Err} = beamlab_test_util:cli_finish(H, []),
    ct:log("exit ~p~n~ts~n--- stderr ---~n~ts", [Code, Out, Err]),
    ?assertEqual(130, Code),
    {ok, Doc} = beamlab_json:decode(Out),
    ?assertMatch(#{<<"partial">> := true,
                   <<"extra">> := #{<<"amqp">> := #{<<"stop">> := <<"interrupted">>,
                                                    <<"accounting">> := #{<<"balanced">> := true}}}},
                 Doc).

inequivalent_queue(_) ->
    Q = uniq(<<"ineq">>),
    with_channel(fun(Ch) ->
                         {ok, _} = beamlab_amqp:declare_queue(
                                     Ch, Q, #{arguments => #{<<"x-max-length">> => 5}})
                 end),
    R = #{code := 1, err := Err} = cli(["-u", binary_to_list(Q), "-z", "1"]),
    beamlab_test_util:assert_one_line_error(R),
    ?assertMatch({match, _}, re:run(Err, "406 PRECONDITION_FAILED - inequivalent arg 'x-max-length'")),
    with_channel(fun(Ch) -> {ok, _} = beamlab_amqp:delete_queue(Ch, Q, #{}) end).

bad_uri(_) ->
    R = #{code := 2, err := Err} = beamlab_test_util:cli(["amqp", "-h", "amqp://host:port:x/", "-z", "1"]),
    beamlab_test_util:assert_one_line_error(R),
    ?assertMatch({match, _}, re:run(Err, "malformed AMQP URI")).

wrong_credentials(_) ->
    R = #{code := 1, err := Err} =
        beamlab_test_util:cli(["amqp", "-h", "amqp://guest:nope@127.0.0.1:" ++ ?PORT ++ "/%2F", "-z", "1"]),
    beamlab_test_util:assert_one_line_error(R),
    ?assertMatch({match, _}, re:run(Err, "wrong credentials")),
    R2 = #{code := 1, err := Err2} =
        beamlab_test_util:cli(["amqp", "-h", "amqp://guest:guest@127.0.0.1:" ++ ?PORT ++ "/novhost", "-z", "1"]),
    beamlab_test_util:assert_one_line_error(R2),
    ?assertMatch({match, _}, re:run(Err2, "virtual host")).

unreachable(_) ->
    R = #{code := 1, err := Err} =
        beamlab_test_util:cli(["amqp", "-h", "amqp://guest:guest@127.0.0.1:1/%2F", "-z", "1"]),
    beamlab_test_util:assert_one_line_error(R),
    ?assertMatch({match, _}, re:run(Err, "broker not reachable at 127.0.0.1:1")).

%% Last: stops the suite's broker. The run reports the disconnect, prints
%% what it measured, and exits non-zero.
broker_stops_mid_run(_) ->
    H = #{port := Port} = beamlab_test_util:cli_start(["amqp", "-h", binary_to_list(?URI), "-x", "1", "-y", "1",
                                                       "-c", "50", "-z", "60", "-u", "gone"], #{}),
    %% Stop the broker once a PerfTest line (stdout) shows messages sent.
    Seen = beamlab_test_util:await_output(Port, "time [0-9.]+ s, sent: [1-9]", <<>>, 30000),
    {0, _} = rabbit("stop"),
    R = #{code := Code, out := Out, err := Err} = beamlab_test_util:cli_finish(H, Seen),
    ct:log("exit ~p~nstdout:~n~ts~nstderr:~n~ts", [Code, Out, Err]),
    ?assertEqual(1, Code),
    beamlab_test_util:assert_one_line_error(R),
    ?assertMatch({match, _}, re:run(Err, "connection|broker", [caseless])),
    ?assertMatch({match, _}, re:run(Out, "test stopped \\(")),
    ?assertMatch({match, _}, re:run(Out, "sending rate avg: [0-9.]+ msg/s")),
    ?assertMatch({match, _}, re:run(Out, "time [0-9.]+ s, sent: [1-9]")).

%% The broker's rabbitmqctl for the suite's node (scripts/rabbitmq.sh ctl).
ctl(Args) ->
    beamlab_test_util:rabbitmqctl(?PORT, Args).

%% An `on_line' hook: once a PerfTest line shows messages sent, the broker
%% closes every connection (once; from another process, so the run goes on).
close_connections_when_sending() ->
    close_connections_when_sending(none).

%% ... and with `Flowed' an atomics array of 3: when the connections are
%% closed (rabbitmqctl returned) its first slot is set; the second counts
%% the lines printed after that; the run (the process printing the lines)
%% is interrupted once at the first of them, from the second on, whose
%% interval began after the close and saw messages both sent and received
%% (the third slot set then): both connections were reopened, messages
%% flow again. Not a time limit: rabbitmqctl, a VM of its own, took over
%% 5 s to close them on a loaded machine, and a 5 s run had ended before.
close_connections_when_sending(Flowed) ->
    Closer = spawn_link(fun() ->
                                receive sending -> {0, _} = ctl(["close_all_connections", "beamlab test"]) end,
                                _ = [atomics:put(Flowed, 1, 1) || Flowed =/= none]
                        end),
    fun(Line) ->
            case re:run(Line, ", sent: [1-9]") of
                {match, _} -> Closer ! sending;
                nomatch -> ok
            end,
            case Flowed =/= none andalso atomics:get(Flowed, 1) =:= 1 andalso atomics:add_get(Flowed, 2, 1) >= 2
                andalso atomics:get(Flowed, 3) =:= 0
                andalso re:run(Line, ", sent: [1-9][0-9]* msg/s.*, received: [1-9]") =/= nomatch of
                true ->
                    atomics:put(Flowed, 3, 1),
                    self() ! {beamlab_interrupt, test};
                false ->
                    ok
            end
    end.

%% The broker closes every connection (320 CONNECTION_FORCED): the run
%% stops, reports what it measured and the reason.
connections_closed(_) ->
    Q = uniq(<<"forced">>),
    {R, Text} = ok_run(#{queue => Q, confirm => 50, duration => 30,
                         on_line => close_connections_when_sending()}),
    ?assertMatch({connection_lost, 320, _}, maps:get(failure, R)),
    ?assert(maps:get(partial, R)),
    ?assert(maps:get(sent, counters(R)) > 0),
    ?assertMatch({match, _}, re:run(Text, "test stopped \\(broker closed the connection: 320 CONNECTION_FORCED")),
    with_channel(fun(Ch) -> catch beamlab_amqp:delete_queue(Ch, Q, #{}) end).

%% With reconnect the same event is survived: connections are reopened and
%% the run goes on, messages flowing again, until it is stopped (by the
%% test, once a line after the close shows messages sent and received;
%% the 60 s time limit is a hang guard: reaching it fails the test).
reconnect(_) ->
    Q = uniq(<<"reconnect">>),
    Flowed = atomics:new(3, []),
    {R, Text} = ok_run(#{queue => Q, confirm => 50, duration => 60, reconnect => true,
                         on_line => close_connections_when_sending(Flowed)}),
    ?assertEqual(undefined, maps:get(failure, R)),
    ?assertEqual(1, atomics:get(Flowed, 3)),
    ?assertEqual(interrupted, maps:get(stop, R)),
    %% Both connections (producer's and consumer's) were reopened.
    ?assertEqual(2, maps:get(reconnects, counters(R))),
    %% The queue depth was read on a reopened setup connection.
    ?assertMatch(#{queued := N} when is_integer(N), acc(R)),
    %% The accounting says it is approximate rather than "NOT balanced".
    ?assertMatch(#{approximate := true, reconnects := 2}, acc(R)),
    ?assertEqual(nomatch, re:run(Text, "NOT balanced")),
    ?assertMatch({match, _}, re:run(Text, "accounting: .*\\((balanced|approximate after 2 reconnects: .*)\\)\n")),
    with_channel(fun(Ch) -> catch beamlab_amqp:delete_queue(Ch, Q, #{}) end).
