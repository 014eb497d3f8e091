%%% @doc `beamlab amqp': a RabbitMQ load generator compatible with PerfTest's
%%% options and output.
%%%
%%% The coordinator (the calling process) checks the broker, declares the
%%% topology, splits producers, consumers and closed-loop channels over the
%%% nodes of the run, starts one `beamlab_amqp_agent' per node, prints a
%%% PerfTest line per interval from the agents' merged counters and
%%% histogram snapshots, stops producers first, lets consumers drain, reads
%%% the queues' depth and prints the summary and the accounting
%%% (sent = received + returned + nacked + queued).
-module(beamlab_amqp_perf).

-export([run/1, defaults/0, write_utf8/1, write_utf8/2, result/2,
         format_error/1]).

-export_type([config/0, report/0, result_opts/0]).

-type config() :: map().
-type report() :: map().
%% What the caller knows about the run for the result document: its
%% command line, its start time (`beamlab_runtime_clock:rfc3339/0') and
%% the options to record.
-type result_opts() :: #{command := [unicode:chardata()], started_at := binary(),
                         params => map()}.

-define(DRAIN_MAX_MS, 3000).
-define(DRAIN_QUIET_MS, 500).
-define(STOP_TIMEOUT_MS, 15000).
-define(SAMPLE_TIMEOUT_MS, 5000).
-define(LOOP_CHANNELS_PER_CONN, 50).
%% After the run, each step on the setup connection (queue depths, deleting
%% the run's queues) gets this long; a broker that does not answer (frozen)
%% is given up and its connection killed, so a run always ends.
-define(SETUP_OP_MS, 3000).
-define(REDECLARE_RETRY_MS, 500).

%% @doc Default configuration (PerfTest's defaults where they make sense).
-spec defaults() -> config().
defaults() ->
    #{uri => <<"amqp://guest:guest@localhost:5672/%2F">>,
      producers => 1, consumers => 1, producer_channels => 1, consumer_channels => 1,
      queue => undefined, queue_pattern => undefined,
      exchange => <<"direct">>, exchange_type => <<"direct">>, routing_key => undefined,
      persistent => false, mandatory => false, prefetch => 0, confirm => undefined,
      autoack => false, multi_ack => 0, rate => infinity, body_size => 12,
      duration => undefined, pmessages => 0, cmessages => 0, predeclared => false,
      quorum => false, interval => 1, reconnect => false, nodes => [node()],
      closed_loop => 0, id => undefined,
      out => fun write_utf8/1}.

%% @doc Writes UTF-8 text to standard output as UTF-8 whatever the
%% encoding of the output device (a latin1 device would otherwise turn
%% "µ" into one byte).
-spec write_utf8(binary()) -> ok.
write_utf8(Bin) ->
    write_utf8(standard_io, Bin).

%% @doc As {@link write_utf8/1} on `Device' (e.g. `standard_error').
-spec write_utf8(io:device(), binary()) -> ok.
write_utf8(Device, Bin) ->
    case lists:keyfind(encoding, 1, io:getopts(Device)) of
        {encoding, unicode} -> io:put_chars(Device, Bin);
        _ -> ok = file:write(Device, Bin)
    end.

%% @doc Runs the load test. `{error, R}' when it could not start (broker,
%% credentials, topology, nodes); otherwise a report, with `failure' set
%% when the run ended early (broker gone, node down) and `partial' when it
%% was interrupted or failed.
-spec run(config()) -> {ok, report()} | {error, term()}.
run(Cfg0) ->
    Cfg1 = maps:merge(defaults(), Cfg0),
    Id = case maps:get(id, Cfg1) of
             undefined -> beamlab_amqp_report:test_id(erlang:system_time(millisecond));
             I -> I
         end,
    Cfg = Cfg1#{id := Id},
    case beamlab_amqp_uri:parse(maps:get(uri, Cfg)) of
        {ok, Uri} ->
            case beamlab_amqp:connect(Uri, #{name => <<"beamlab amqp ", Id/binary, " setup">>}) of
                {ok, Conn} ->
                    try setup_and_run(Conn, Cfg#{uri := Uri}) of
                        {Result, Live} ->
                            close_setup([Conn, Live]),
                            Result
                    catch
                        Class:Reason:Stack ->
                            close_setup([Conn]),
                            erlang:raise(Class, Reason, Stack)
                    end;
                {error, _} = E ->
                    E
            end;
        {error, R} ->
            {error, {uri, R}}
    end.

%% Returns the outcome and the setup connection in use at the end (the
%% original one or its replacement), which the caller closes.
setup_and_run(Conn, Cfg) ->
    Uri = maps:get(uri, Cfg),
    Queues = beamlab_amqp_topology:queue_names(Cfg, maps:get(id, Cfg)),
    case beamlab_amqp_topology:declare(Conn, Cfg, Queues) of
        {ok, Topo} ->
            {Result, Used} =
                try beamlab_amqp_nodes:start(Cfg) of
                    {ok, Nodes, Cleanup} ->
                        try start_run(Conn, Cfg#{nodes := Nodes}, Topo)
                        after Cleanup()
                        end;
                    {error, _} = E ->
                        {E, Conn}
                catch
                    Class:Reason:Stack ->
                        {_, Reopened} = setup_op(Conn, Uri, fun(C) -> beamlab_amqp_topology:delete(C, Topo) end, ok),
                        close_setup([Reopened || Reopened =/= Conn]),
                        erlang:raise(Class, Reason, Stack)
                end,
            {_, Live} = setup_op(Used, Uri, fun(C) -> beamlab_amqp_topology:delete(C, Topo) end, ok),
            {Result, Live};
        {error, _} = E ->
            {E, Conn}
    end.

%% Runs `Op' on a live setup connection within ?SETUP_OP_MS: returns its
%% value and the connection to keep, or `Default' and `unresponsive' when
%% the broker did not answer in time (the connection is then killed and
%% later steps are skipped). The step runs in a helper process so that a
%% call without answer cannot hold the run.
setup_op(unresponsive, _Uri, _Op, Default) ->
    {Default, unresponsive};
setup_op(Conn, Uri, Op, Default) ->
    Self = self(),
    {Pid, Mon} = spawn_monitor(
                   fun() ->
                           Live = live_conn(Conn, Uri, Self),
                           Self ! {setup_conn, self(), Live},
                           Self ! {setup_op, self(), Live, try Op(Live) catch _:_ -> Default end}
                   end),
    receive
        {setup_op, Pid, Live, V} ->
            demonitor(Mon, [flush]),
            flush_setup_conn(Pid),
            {V, Live};
        {'DOWN', Mon, process, Pid, _} ->
            {Default, setup_op_conn(Pid, Conn)}
    after ?SETUP_OP_MS ->
        exit(Pid, kill),
        receive {'DOWN', Mon, process, Pid, _} -> ok end,
        ok = beamlab_amqp:close_all([C || C <- lists:usort([Conn, setup_op_conn(Pid, Conn)]),
                                          is_pid(C)], 0),
        {Default, unresponsive}
    end.

%% The setup connection may have been closed by the broker during the run
%% (it survives with --reconnect): open a new one, owned by the
%% coordinator, for the final queue depths and deletions.
live_conn(Conn, Uri, Owner) ->
    case is_pid(Conn) andalso is_process_alive(Conn) of
        true -> Conn;
        false -> new_conn(Conn, Uri, Owner)
    end.

setup_op_conn(Pid, Default) ->
    receive {setup_conn, Pid, C} -> C
    after 0 -> Default
    end.

flush_setup_conn(Pid) ->
    _ = setup_op_conn(Pid, none),
    ok.

%% Close the setup connection(s), bounded, and drop their notices to us,
%% the owner. `unresponsive' stands for one already killed.
close_setup(Conns0) ->
    Conns = lists:usort([C || C <- Conns0, is_pid(C)]),
    ok = beamlab_amqp:close_all(Conns, ?SETUP_OP_MS),
    flush_closed(Conns).

flush_closed(Conns) ->
    lists:foreach(fun flush_conn/1, Conns).

flush_conn(C) ->
    receive
        {amqp_closed, C, _, _} -> flush_conn(C);
        {amqp_closed, {amqp_channel, C, _, _}, _, _} -> flush_conn(C)
    after 0 ->
        ok
    end.

new_conn(Conn, Uri, Owner) ->
    case beamlab_amqp:connect(Uri, #{name => <<"beamlab amqp setup (reopened)">>, owner => Owner}) of
        {ok, C} -> C;
        {error, _} -> Conn
    end.

%%%-------------------------------------------------------------------
%%% The run
%%%-------------------------------------------------------------------

start_run(Conn, Cfg0, Topo) ->
    {Plans, Split} = plans(Cfg0, [Q || {Q, _, _} <- maps:get(queues, Topo)]),
    %% Each node's clock against ours, before the run (issue 13): bodies
    %% are stamped and read in our time, so latency between two nodes
    %% compares one clock.
    Clock0 = beamlab_runtime_clock:offsets([N || {N, _} <- Plans]),
    Cfg = Cfg0#{split => Split, clock_before => Clock0},
    Self = self(),
    Agents = maps:from_list(
               [begin
                    Off = maps:get(offset_us, maps:get(Node, Clock0)),
                    Pid = beamlab_amqp_agent:start(Node, Self, Plan#{clock_offset_us => Off}),
                    {Pid, #{node => Node, mon => monitor(process, Pid)}}
                end || {Node, Plan} <- Plans]),
    case await_ready(maps:keys(Agents)) of
        ok ->
            StartUs = erlang:system_time(microsecond),
            T0 = erlang:monotonic_time(microsecond),
            _ = [A ! {go, StartUs} || A <- maps:keys(Agents)],
            ok = beamlab_runtime_interrupt:subscribe(),
            try measure(Conn, Cfg, Topo, Agents, T0)
            after cleanup(Agents)
            end;
        {error, _} = E ->
            _ = [exit(A, kill) || A <- maps:keys(Agents)],
            cleanup(Agents),
            {E, Conn}
    end.

%% Leave the caller's mailbox as it was: a library caller (or a test) runs
%% many of these in one process.
cleanup(Agents) ->
    _ = [demonitor(Mon, [flush]) || #{mon := Mon} <- maps:values(Agents)],
    ok = beamlab_runtime_interrupt:unsubscribe(),
    flush().

flush() ->
    receive
        {amqp_perf_tick, _, _} -> flush();
        {workers_done, _, _, _} -> flush();
        {sample, Ref, _, _} when is_reference(Ref) -> flush();
        {agent_failure, _, _} -> flush()
    after 0 ->
        ok
    end.

await_ready([]) ->
    ok;
await_ready(Pending) ->
    receive
        {agent_ready, A} -> await_ready(lists:delete(A, Pending));
        {agent_error, _A, Reason} -> {error, Reason};
        {'DOWN', _, process, A, Reason} when is_pid(A) ->
            case lists:member(A, Pending) of
                true -> {error, {agent_down, node(A), Reason}};
                false -> await_ready(Pending)
            end
    after 60000 ->
        {error, {timeout, agents_start}}
    end.

%% Worker specs per node, and whether a queue's producers and consumers
%% are on different nodes (`split'). Producer/consumer i works on queue
%% i mod q with all of its channels (they share its connection). With at
%% least as many queues as nodes, a queue's producers and consumers stay on
%% one node (queue j on node j mod n), so latency compares one clock;
%% with fewer queues than nodes, worker i goes to node i mod n and a
%% queue's workers are split over nodes (latency is then corrected for the
%% nodes' clock offsets). Closed-loop channels are never split.
plans(Cfg, Queues) ->
    Nodes = maps:get(nodes, Cfg),
    NQ = length(Queues),
    NN = length(Nodes),
    QAt = fun(I) -> lists:nth(I rem NQ + 1, Queues) end,
    NodeAt = case NQ >= NN of
                 true -> fun(I) -> lists:nth((I rem NQ) rem NN + 1, Nodes) end;
                 false -> fun(I) -> lists:nth(I rem NN + 1, Nodes) end
             end,
    #{id := Id, uri := Uri} = Cfg,
    Common = #{reconnect => maps:get(reconnect, Cfg)},
    Specs =
        case maps:get(closed_loop, Cfg) of
            L when L > 0 ->
                [{NodeAt(I), loops,
                  Common#{queue => QAt(I), group => {l, I div ?LOOP_CHANNELS_PER_CONN},
                          body_size => maps:get(body_size, Cfg),
                          persistent => maps:get(persistent, Cfg)}}
                 || I <- lists:seq(0, L - 1)];
            0 ->
                [{NodeAt(I), consumers,
                  Common#{queue => QAt(I), group => {c, I}, prefetch => maps:get(prefetch, Cfg),
                          autoack => maps:get(autoack, Cfg), multi_ack => maps:get(multi_ack, Cfg),
                          count => maps:get(cmessages, Cfg)}}
                 || I <- lists:seq(0, maps:get(consumers, Cfg) - 1),
                    _ <- lists:seq(1, maps:get(consumer_channels, Cfg))]
                ++
                [{NodeAt(I), producers,
                  Common#{exchange => maps:get(exchange, Cfg), key => producer_key(Cfg, QAt(I)),
                          group => {p, I}, mandatory => maps:get(mandatory, Cfg),
                          persistent => maps:get(persistent, Cfg), confirm => maps:get(confirm, Cfg),
                          rate => maps:get(rate, Cfg), count => maps:get(pmessages, Cfg),
                          body_size => maps:get(body_size, Cfg)}}
                 || I <- lists:seq(0, maps:get(producers, Cfg) - 1),
                    _ <- lists:seq(1, maps:get(producer_channels, Cfg))]
        end,
    Grouped = lists:foldl(
                fun({Node, Kind, Spec}, Acc) ->
                        P = maps:get(Node, Acc, #{uri => Uri, id => Id}),
                        Acc#{Node => P#{Kind => maps:get(Kind, P, []) ++ [Spec]}}
                end, #{}, Specs),
    {maps:to_list(Grouped), split(Cfg, Specs)}.

%% Does a message possibly go from a producer on one node to a consumer on
%% another? Queue by queue (a routing key or a non-direct exchange may
%% send anything anywhere).
split(Cfg, Specs) ->
    Used = lists:usort([N || {N, _, _} <- Specs]),
    ByQueue = lists:foldl(fun({N, consumers, #{queue := Q}}, Acc) -> add_node(Q, N, Acc);
                             ({N, producers, #{key := K}}, Acc) -> add_node(K, N, Acc);
                             (_, Acc) -> Acc
                          end, #{}, Specs),
    Routed = maps:get(routing_key, Cfg, undefined) =/= undefined
        orelse maps:get(exchange_type, Cfg, <<"direct">>) =/= <<"direct">>,
    length(Used) > 1 andalso
        (Routed orelse lists:any(fun(Ns) -> length(Ns) > 1 end, maps:values(ByQueue))).

add_node(Q, N, Acc) ->
    Acc#{Q => lists:usort([N | maps:get(Q, Acc, [])])}.

%% Messages go to the queue's name (bound with it) unless -k names a key.
producer_key(#{routing_key := undefined}, Q) -> Q;
producer_key(#{routing_key := K}, _Q) -> K.

-record(m, {cfg, conn, topo, agents, t0, id, enabled, timer,
            last = #{}, last_t, samples = [], cons = [], conf = [],
            done = #{}, done_p = 0, done_c = 0, failure, interrupted = false,
            %% --reconnect: the process declaring the topology again after
            %% the setup connection was lost, and the queues found lost
            %% (declared again), each `{SecondsIntoRun, [Queue]}'.
            redeclarer, lost_queues = [],
            %% Each node's share: its latest counters and its latency
            %% histograms so far (kept for a node that goes away).
            shares = #{}, lost = []}).

measure(Conn, Cfg, Topo, Agents, T0) ->
    Interval = round(maps:get(interval, Cfg) * 1000),
    Loop = maps:get(closed_loop, Cfg) > 0,
    En = #{published => Loop orelse maps:get(producers, Cfg) > 0,
           received => Loop orelse maps:get(consumers, Cfg) > 0,
           returned => maps:get(mandatory, Cfg) andalso not Loop,
           confirmed => maps:get(confirm, Cfg) =/= undefined andalso not Loop},
    M = #m{cfg = Cfg, conn = Conn, topo = Topo, agents = Agents, t0 = T0,
           id = maps:get(id, Cfg), enabled = En, last_t = T0,
           last = #{reconnects => 0, sent => 0, returned => 0, confirmed => 0, nacked => 0, received => 0}},
    tick_loop(M#m{timer = schedule_tick(T0, Interval, 1)}).

%% Ticks at absolute times T0 + K * Interval, so that lines do not drift.
schedule_tick(T0, Interval, K) ->
    At = erlang:convert_time_unit(T0, microsecond, millisecond) + K * Interval,
    erlang:send_after(At, self(), {amqp_perf_tick, Interval, K}, [{abs, true}]).

tick_loop(M) ->
    case stop_reason(M) of
        continue ->
            receive
                {amqp_perf_tick, Interval, K} ->
                    Timer = schedule_tick(M#m.t0, Interval, K + 1),
                    tick_loop(interval(M#m{timer = Timer}));
                {agent_failure, _A, Reason} ->
                    tick_loop(M#m{failure = Reason});
                {workers_done, A, P, C} ->
                    Done = (M#m.done)#{A => {P, C}},
                    tick_loop(M#m{done = Done,
                                  done_p = lists:sum([X || {X, _} <- maps:values(Done)]),
                                  done_c = lists:sum([X || {_, X} <- maps:values(Done)])});
                {'DOWN', _, process, A, Reason} when is_map_key(A, M#m.agents) ->
                    tick_loop(lose(A, Reason, M));
                {amqp_closed, Conn, _, _} when Conn =:= M#m.conn ->
                    tick_loop(setup_lost(M));
                {setup_conn, Pid, Conn} when Pid =:= M#m.redeclarer ->
                    tick_loop(M#m{conn = Conn});
                {redeclared, Pid, Result} when Pid =:= M#m.redeclarer ->
                    tick_loop(redeclared(Result, M#m{redeclarer = undefined}));
                {beamlab_interrupt, _} ->
                    tick_loop(M#m{interrupted = true})
            after 100 ->
                tick_loop(M)
            end;
        Why ->
            finish(Why, last_interval(M))
    end.

%%%-------------------------------------------------------------------
%%% --reconnect: the topology after a broker restart
%%%-------------------------------------------------------------------

%% The broker closed the setup connection: it restarted, or closed every
%% connection. A restart loses the queues that are not durable (the run's
%% default queue among them) and their bindings; the workers reconnect by
%% themselves, but a consumer of a queue that no longer exists would wait
%% forever and producers would publish to nowhere. So, with --reconnect, a
%% helper reconnects (retrying) and declares the run's topology again,
%% exactly as at the start (exchange, queues, bindings; queue names are
%% fixed, never server-named, so producers' routing keys stay valid).
setup_lost(#m{cfg = #{reconnect := true}, redeclarer = undefined} = M) ->
    #m{cfg = Cfg, topo = Topo} = M,
    Self = self(),
    Names = [Q || {Q, _, _} <- maps:get(queues, Topo)],
    Pid = spawn_link(fun() -> redeclare(Self, Cfg, Names) end),
    M#m{redeclarer = Pid, conn = lost};
setup_lost(M) ->
    %% Without --reconnect the workers' own connection losses end the run.
    M#m{conn = lost}.

redeclare(Coord, #{uri := Uri} = Cfg, Names) ->
    case beamlab_amqp:connect(Uri, #{name => <<"beamlab amqp setup (reconnected)">>,
                                     owner => Coord}) of
        {ok, Conn} ->
            Coord ! {setup_conn, self(), Conn},
            case catch beamlab_amqp_topology:declare(Conn, Cfg, Names) of
                {ok, _} = Ok ->
                    Coord ! {redeclared, self(), Ok};
                {error, {_, _, {amqp_closed, _, _}}} = E ->
                    %% The broker refused (404 with -p, 406 arguments...).
                    Coord ! {redeclared, self(), E};
                _ ->
                    %% The new connection was lost too (restarting again).
                    receive after ?REDECLARE_RETRY_MS -> ok end,
                    redeclare(Coord, Cfg, Names)
            end;
        {error, _} ->
            receive after ?REDECLARE_RETRY_MS -> ok end,
            redeclare(Coord, Cfg, Names)
    end.

%% The topology is declared again: a queue the broker no longer had comes
%% back as `ours' (created now). Its messages are lost; its depth before
%% the run no longer counts in the accounting.
redeclared({ok, #{queues := Now}}, #m{topo = Topo, t0 = T0, id = Id} = M) ->
    Lost = [Q || {Q, _, ours} <- Now],
    Qs = [case lists:member(Q, Lost) of
              true -> {Q, 0, Kind};
              false -> Entry
          end || {Q, _, Kind} = Entry <- maps:get(queues, Topo)],
    case Lost of
        [] ->
            M;
        _ ->
            Secs = (erlang:monotonic_time(microsecond) - T0) / 1000000,
            out(M, [<<"id: ">>, Id, <<", time ">>, float_to_binary(Secs, [{decimals, 3}]),
                    <<" s, the broker lost queue">>, [$s || length(Lost) > 1], $\s,
                    lists:join(<<", ">>, Lost),
                    <<" (restarted?): declared again, the messages in ">>,
                    case Lost of [_] -> <<"it">>; _ -> <<"them">> end, <<" are lost\n">>]),
            M#m{topo = Topo#{queues := Qs}, lost_queues = [{Secs, Lost} | M#m.lost_queues]}
    end;
redeclared({error, {declare_queue, Q, {amqp_closed, 404, _}}}, #m{cfg = #{predeclared := true}} = M) ->
    M#m{failure = {queue_lost, Q}};
redeclared({error, R}, M) ->
    M#m{failure = {redeclare, R}}.

stop_redeclarer(#m{redeclarer = undefined} = M) ->
    M;
stop_redeclarer(#m{redeclarer = Pid} = M) ->
    unlink(Pid),
    exit(Pid, kill),
    Mon = monitor(process, Pid),
    receive {'DOWN', Mon, process, Pid, _} -> ok end,
    M1 = receive {setup_conn, Pid, C} -> M#m{conn = C} after 0 -> M end,
    receive {redeclared, Pid, _} -> ok after 0 -> ok end,
    M1#m{redeclarer = undefined}.

%% A run that ends more than half an interval after the last line gets a
%% last line for that stretch (as -z 3 gives lines at 1, 2 and 3 s).
last_interval(#m{failure = undefined, last_t = LastT, cfg = #{interval := I}} = M) ->
    case erlang:monotonic_time(microsecond) - LastT > I * 500000 of
        true -> interval(M);
        false -> M
    end;
last_interval(M) ->
    M.

stop_reason(#m{failure = F}) when F =/= undefined -> failed;
stop_reason(#m{agents = As}) when map_size(As) =:= 0 -> failed;
stop_reason(#m{interrupted = true}) -> interrupted;
stop_reason(#m{cfg = Cfg, t0 = T0} = M) ->
    Elapsed = erlang:monotonic_time(microsecond) - T0,
    case maps:get(duration, Cfg) of
        D when is_number(D), Elapsed >= D * 1000000 -> time_limit;
        _ -> counts_reached(M)
    end.

%% -C: every producer has published its count; -D: every consumer has
%% received its count. Both given: both must hold.
counts_reached(#m{cfg = #{closed_loop := L}}) when L > 0 ->
    continue;
counts_reached(#m{cfg = Cfg, done_p = DP, done_c = DC}) ->
    NP = maps:get(producers, Cfg) * maps:get(producer_channels, Cfg),
    NC = maps:get(consumers, Cfg) * maps:get(consumer_channels, Cfg),
    PDone = maps:get(pmessages, Cfg) > 0 andalso DP >= NP,
    CDone = maps:get(cmessages, Cfg) > 0 andalso DC >= NC,
    case {maps:get(pmessages, Cfg) > 0, maps:get(cmessages, Cfg) > 0} of
        {true, true} when PDone, CDone -> counts;
        {true, false} when PDone -> counts;
        {false, true} when CDone -> counts;
        _ -> continue
    end.

%% Sample every agent, merge, print one PerfTest line, keep the rates.
interval(#m{last = Last, last_t = LastT, t0 = T0} = M) ->
    case sample(maps:keys(M#m.agents)) of
        {ok, S} ->
            ByA = maps:get(by_agent, S),
            M1 = add_shares(ByA, M),
            Now = erlang:monotonic_time(microsecond),
            Dt = max(1, Now - LastT) / 1000000,
            %% A node gone away counts with its last sample (the totals
            %% never go down).
            C = lists:foldl(fun add_counters/2, maps:get(counters, S), gone_counters(ByA, M1)),
            Rates = maps:map(fun(K, V) -> (V - maps:get(K, Last)) / Dt end, C),
            Cons = beamlab_amqp_report:latency(maps:get(consumer, S)),
            Conf = beamlab_amqp_report:latency(maps:get(confirm, S)),
            Line = beamlab_amqp_report:interval_line(
                     M#m.id, Now - T0, Rates#{consumer => Cons, confirm => Conf}, M#m.enabled),
            out(M, [Line, $\n]),
            M1#m{last = C, last_t = Now,
                samples = [Rates#{time => (Now - T0) / 1000000} | M#m.samples],
                cons = [Cons | M#m.cons], conf = [Conf | M#m.conf]};
        {error, Reason} ->
            M#m{failure = Reason}
    end.

sample(Agents) ->
    Ref = make_ref(),
    _ = [A ! {sample, self(), Ref} || A <- Agents],
    collect_samples(Agents, Ref, [], []).

%% A node gone while we wait (its 'DOWN') is put back in the mailbox for the
%% loop that owns the agents; the others' samples stand.
collect_samples([], _Ref, Acc, Downs) ->
    _ = [self() ! D || D <- lists:reverse(Downs)],
    case Acc of
        [] -> {ok, #{counters => #{reconnects => 0, sent => 0, returned => 0, confirmed => 0,
                                   nacked => 0, received => 0},
                     consumer => empty_snap(), confirm => empty_snap(), by_agent => []}};
        _ -> {ok, (merge_samples([S || {_, S} <- Acc]))#{by_agent => Acc}}
    end;
collect_samples(Pending, Ref, Acc, Downs) ->
    receive
        {sample, Ref, A, S} ->
            collect_samples(lists:delete(A, Pending), Ref, [{A, S} | Acc], Downs);
        {'DOWN', _, process, A, _} = Down when is_pid(A) ->
            collect_samples(lists:delete(A, Pending), Ref, Acc, [Down | Downs])
    after ?SAMPLE_TIMEOUT_MS ->
        _ = [self() ! D || D <- lists:reverse(Downs)],
        {error, {timeout, [node(A) || A <- Pending]}}
    end.

lost_nodes(M) ->
    [N || {N, _} <- M#m.lost].

%% The last counters of the nodes that did not answer this sample (gone
%% away, or going: their 'DOWN' may not have been handled yet).
gone_counters(ByAgent, M) ->
    Answered = [node(A) || {A, _} <- ByAgent],
    [maps:get(counters, S) || {N, S} <- maps:to_list(M#m.shares), not lists:member(N, Answered)].

add_counters(A, B) ->
    maps:merge_with(fun(_, X, Y) -> X + Y end, A, B).

%% The latest counters and the histograms so far of each node.
add_shares(ByAgent, M) ->
    Shares = lists:foldl(
               fun({A, S}, Acc) ->
                       N = node(A),
                       Old = maps:get(N, Acc, #{consumer => empty_snap(), confirm => empty_snap()}),
                       Acc#{N => #{counters => maps:get(counters, S),
                                   consumer => beamlab_stats_hist:merge(maps:get(consumer, S),
                                                                        maps:get(consumer, Old)),
                                   confirm => beamlab_stats_hist:merge(maps:get(confirm, S),
                                                                       maps:get(confirm, Old))}}
               end, M#m.shares, ByAgent),
    M#m{shares = Shares}.

%% A node went away: named in the report, its share so far kept, the run
%% goes on with the others (and ends with a failure exit code).
lose(A, Reason, M) ->
    Node = maps:get(node, maps:get(A, M#m.agents)),
    out(M, [<<"id: ">>, M#m.id, <<", node ">>, atom_to_binary(Node), <<" went away (">>,
            io_lib:format("~0p", [Reason]), <<"); the run goes on with the other nodes\n">>]),
    M#m{agents = maps:remove(A, M#m.agents), lost = M#m.lost ++ [{Node, Reason}]}.

merge_samples([First | Rest]) ->
    lists:foldl(
      fun(S, Acc) ->
              #{counters => maps:merge_with(fun(_, A, B) -> A + B end,
                                            maps:get(counters, S), maps:get(counters, Acc)),
                consumer => beamlab_stats_hist:merge(maps:get(consumer, S), maps:get(consumer, Acc)),
                confirm => beamlab_stats_hist:merge(maps:get(confirm, S), maps:get(confirm, Acc)),
                producers_done => maps:get(producers_done, S, 0) + maps:get(producers_done, Acc, 0),
                consumers_done => maps:get(consumers_done, S, 0) + maps:get(consumers_done, Acc, 0)}
      end, First, Rest).

out(#m{cfg = #{out := Out}}, IoData) ->
    Out(iolist_to_binary(IoData)).

%% Stop producers, let consumers drain, stop consumers, collect totals.
finish(Why, #m{t0 = T0, timer = Timer} = M00) ->
    _ = erlang:cancel_timer(Timer),
    M0 = stop_redeclarer(M00),
    ElapsedUs = erlang:monotonic_time(microsecond) - T0,
    Agents = maps:keys(M0#m.agents),
    %% The averages cover the measured window only: what is received while
    %% draining after the stop counts in the accounting, not in the rates.
    AtStop = case M0#m.failure =:= undefined andalso sample(Agents) of
                 {ok, #{counters := Cs, by_agent := ByA}} ->
                     %% Nodes gone before the stop count with their last sample.
                     lists:foldl(fun add_counters/2, Cs, gone_counters(ByA, M0));
                 _ -> M0#m.last
             end,
    _ = [A ! stop_producers || A <- Agents],
    M1 = await_all(Agents, producers_stopped, M0),
    %% Closed-loop channels publish until told to stop: no drain for them
    %% (their message in flight stays queued and is accounted as such).
    M2 = case maps:get(closed_loop, M1#m.cfg) > 0 of
             true -> M1;
             false -> drain(M1, erlang:monotonic_time(millisecond) + ?DRAIN_MAX_MS, undefined,
                            erlang:monotonic_time(millisecond))
         end,
    Live = maps:keys(M2#m.agents),
    _ = [A ! stop_consumers || A <- Live],
    {Finals, M3a} = collect_finals(Live, [], M2),
    %% Each node's share: its final totals, or for a node gone away what
    %% it had counted until its last sample.
    FinalShares = maps:from_list([{node(A), F} || {A, F} <- Finals]),
    Shares = maps:merge(maps:with(lost_nodes(M3a), M3a#m.shares), FinalShares),
    M3 = M3a#m{shares = Shares},
    Totals = case maps:values(Shares) of
                 [] -> #{counters => maps:merge(#{reconnects => 0}, M3#m.last),
                         consumer => empty_snap(), confirm => empty_snap()};
                 Ss -> merge_samples(Ss)
             end,
    {Queued, M4} = catch_depth(M3),
    %% The clocks again, after the run: the drift widens the uncertainty.
    Cfg = M4#m.cfg,
    After = beamlab_runtime_clock:offsets(maps:values(maps:map(fun(_, #{node := N}) -> N end,
                                                                M4#m.agents))),
    Clock = maps:map(fun(N, B) -> beamlab_runtime_clock:combine(B, maps:get(N, After, undefined)) end,
                     maps:get(clock_before, Cfg, #{})),
    {report(Why, ElapsedUs, AtStop, Totals, Queued, M4#m{cfg = Cfg#{clock => Clock}}), M4#m.conn}.

%% The queues' depth, on a fresh setup connection if the broker closed
%% ours; `undefined' when the broker does not answer in time.
catch_depth(#m{conn = Conn, cfg = #{uri := Uri}, topo = Topo} = M) ->
    {Queued, Live} = setup_op(Conn, Uri, fun(C) -> beamlab_amqp_topology:depth(C, Topo) end,
                              undefined),
    {Queued, M#m{conn = Live}}.

empty_snap() ->
    beamlab_stats_hist:snapshot(beamlab_amqp_agent:new_hist()).

await_all([], _Tag, M) ->
    M;
await_all(Pending, Tag, M) ->
    receive
        {Tag, A} -> await_all(lists:delete(A, Pending), Tag, M);
        {agent_failure, _A, Reason} -> await_all(Pending, Tag, keep_failure(Reason, M));
        {'DOWN', _, process, A, Reason} when is_map_key(A, M#m.agents) ->
            await_all(lists:delete(A, Pending), Tag, lose(A, Reason, M))
    after ?STOP_TIMEOUT_MS ->
        keep_failure({timeout, Tag}, M)
    end.

keep_failure(R, #m{failure = undefined} = M) -> M#m{failure = R};
keep_failure(_R, M) -> M.

%% After the producers stop, consumers still receive what is queued or in
%% flight: wait until everything sent is settled or nothing arrives for a
%% while (bounded).
drain(#m{failure = F} = M, _Deadline, _Prev, _Since) when F =/= undefined ->
    M;
drain(M, Deadline, Prev, Since) ->
    Now = erlang:monotonic_time(millisecond),
    case Now >= Deadline orelse maps:size(M#m.agents) =:= 0 of
        true ->
            M;
        false ->
            case sample(maps:keys(M#m.agents)) of
                {ok, #{counters := C}} ->
                    #{sent := S, received := R, returned := Ret, nacked := N} = C,
                    Settled = R + Ret + N >= S,
                    Quiet = R =:= Prev andalso Now - Since >= ?DRAIN_QUIET_MS,
                    case Settled orelse Quiet of
                        true -> M;
                        false ->
                            receive after 50 -> ok end,
                            Since1 = case R =:= Prev of true -> Since; false -> Now end,
                            drain(M, Deadline, R, Since1)
                    end;
                {error, Reason} ->
                    keep_failure(Reason, M)
            end
    end.

collect_finals([], Acc, M) ->
    {Acc, M};
collect_finals(Pending, Acc, M) ->
    receive
        {final, A, F} -> collect_finals(lists:delete(A, Pending), [{A, F} | Acc], M);
        {agent_failure, _A, Reason} -> collect_finals(Pending, Acc, keep_failure(Reason, M));
        {'DOWN', _, process, A, Reason} when is_map_key(A, M#m.agents) ->
            case lists:member(A, Pending) of
                true ->
                    collect_finals(lists:delete(A, Pending), Acc, lose(A, Reason, M));
                false ->
                    collect_finals(Pending, Acc, M)
            end
    after ?STOP_TIMEOUT_MS ->
        {Acc, keep_failure({timeout, final}, M)}
    end.

report(Why, ElapsedUs, AtStop, Totals, Queued, M) ->
    #m{id = Id, enabled = En} = M,
    C = maps:get(counters, Totals),
    Secs = max(ElapsedUs, 1) / 1000000,
    Cons = beamlab_amqp_report:latency(maps:get(consumer, Totals)),
    Conf = beamlab_amqp_report:latency(maps:get(confirm, Totals)),
    Summary = beamlab_amqp_report:summary_lines(
                Id, #{sent => maps:get(sent, AtStop) / Secs,
                      received => maps:get(received, AtStop) / Secs,
                      consumer => Cons, confirm => Conf}, En, ElapsedUs),
    Acc = (beamlab_amqp_report:accounting(C, Queued))#{
            lost_queues => lists:usort(lists:append([Qs || {_, Qs} <- M#m.lost_queues])),
            lost_at_s => lists:reverse([round(T * 1000) / 1000 || {T, _} <- M#m.lost_queues])},
    Failure = case {M#m.failure, M#m.lost} of
                  {undefined, [_ | _] = Lost} -> {nodes_lost, Lost};
                  {F, _} -> F
              end,
    _ = [out(M, [<<"id: ">>, Id, <<", test stopped (">>, format_error(Failure), <<")\n">>])
         || Failure =/= undefined, M#m.failure =/= undefined],
    _ = [out(M, [<<"id: ">>, Id, <<", ">>, format_error(Failure), <<"\n">>])
         || M#m.failure =:= undefined, Failure =/= undefined],
    out(M, Summary),
    Cfg = M#m.cfg,
    AllNodes = lists:usort([N || {N, _} <- maps:to_list(maps:get(clock_before, Cfg, #{}))]
                           ++ maps:keys(M#m.shares)),
    Shares = shares(AllNodes, M#m.shares, C, lost_nodes(M)),
    Clock = maps:get(clock, Cfg, #{}),
    Split = maps:get(split, Cfg, false),
    _ = [out(M, share_line(Id, S)) || length(AllNodes) > 1, S <- Shares],
    _ = [out(M, clock_lines(Id, Clock)) || Split],
    _ = [out(M, [<<"id: ">>, Id, <<", reconnects: ">>, integer_to_binary(Rc), $\n])
         || Rc <- [maps:get(reconnects, C, 0)], Rc > 0],
    out(M, [beamlab_amqp_report:accounting_line(Id, Acc), $\n]),
    {ok, #{id => Id, stop => Why, elapsed_us => ElapsedUs, counters => C, at_stop => AtStop,
           accounting => Acc, failure => Failure,
           partial => Failure =/= undefined orelse Why =:= interrupted,
           rates => lists:reverse(M#m.samples),
           consumer_latency => Cons, confirm_latency => Conf,
           consumer_hist => maps:get(consumer, Totals),
           confirm_hist => maps:get(confirm, Totals),
           interval_consumer_latency => lists:reverse(M#m.cons),
           interval_confirm_latency => lists:reverse(M#m.conf),
           enabled => En,
           nodes => AllNodes, shares => Shares, lost => M#m.lost,
           split => Split, clock => Clock,
           queues => [Q || {Q, _, _} <- maps:get(queues, M#m.topo)]}}.

%% Each node's share of the counters (and its consumer latency).
shares(Nodes, ByNode, Total, Lost) ->
    [begin
         S = maps:get(N, ByNode, #{counters => #{}, consumer => empty_snap()}),
         Cs = maps:get(counters, S),
         Get = fun(K) -> maps:get(K, Cs, 0) end,
         Pct = fun(K) -> case maps:get(K, Total, 0) of
                             0 -> null;
                             T -> 100 * Get(K) / T
                         end
               end,
         #{node => N, lost => lists:member(N, Lost),
           sent => Get(sent), received => Get(received), returned => Get(returned),
           confirmed => Get(confirmed), nacked => Get(nacked),
           sent_pct => Pct(sent), received_pct => Pct(received),
           consumer_latency => beamlab_amqp_report:latency(maps:get(consumer, S))}
     end || N <- Nodes].

share_line(Id, #{node := N, sent := S, received := R, sent_pct := SP, received_pct := RP,
                 consumer_latency := [_, Med | _], lost := Lost}) ->
    P = fun(null) -> <<"-">>;
           (X) -> float_to_binary(float(X), [{decimals, 1}])
        end,
    [<<"id: ">>, Id, <<", node ">>, atom_to_binary(N), <<": sent ">>, integer_to_binary(S),
     <<" (">>, P(SP), <<"%), received ">>, integer_to_binary(R), <<" (">>, P(RP),
     <<"%), consumer latency median ">>, integer_to_binary(Med), <<" µs"/utf8>>,
     [<<" (node went away: counts until its last sample)">> || Lost], $\n].

%% A queue's producers and consumers on different nodes: the latency
%% compares clocks, corrected by each node's offset against ours.
clock_lines(Id, Clock) ->
    Us = fun(V) -> [case V >= 0 of true -> <<"+">>; false -> <<>> end, integer_to_binary(V)] end,
    Unc = [U || #{uncertainty_us := U} <- maps:values(Clock)],
    Worst = case lists:reverse(lists:sort(Unc)) of
                [A, B | _] -> A + B;
                [A] -> A;
                [] -> 0
            end,
    [[<<"id: ">>, Id, <<", clock of ">>, atom_to_binary(N), <<": ">>, Us(O), <<" µs ± "/utf8>>,
      integer_to_binary(U), <<" µs against the controller"/utf8>>,
      case D of
          null -> <<" (not measured after the run)">>;
          _ -> [<<" (drift during the run ">>, Us(D), <<" µs)"/utf8>>]
      end, $\n]
     || {N, #{offset_us := O, uncertainty_us := U, drift_us := D}} <- lists:sort(maps:to_list(Clock))]
    ++ [[<<"id: ">>, Id, <<", producers and consumers of a queue run on different nodes: "
         "consumer latency is corrected for the clock offsets above, ± "/utf8>>,
         integer_to_binary(Worst), <<" µs\n"/utf8>>]].

%%%-------------------------------------------------------------------
%%% Result document
%%%-------------------------------------------------------------------

%% @doc The result document of a run (`kind' <<"amqp">>): benchmarks for
%% sent and received msg/s (one sample per interval) and for consumer and
%% confirm latency (per-interval medians as samples; the run's exact
%% percentiles and histogram in `extra'), and an `amqp' section in `extra'
%% (accounting, counters, failure, nodes, queues). `Params' are the
%% command's options, `command' its command line, `started_at' when it
%% started; the document is finished now.
-spec result(report(), result_opts()) -> beamlab_result:result().
result(R, #{command := Argv, started_at := Started} = Opts) ->
    Params = maps:get(params, Opts, #{}),
    Rates = maps:get(rates, R),
    Secs = max(maps:get(elapsed_us, R), 1) / 1000000,
    C = maps:get(counters, R),
    Tput = fun(Key, Name) ->
                   %% A run shorter than one interval has no interval
                   %% sample: its average is the one sample.
                   Samples = case [maps:get(Key, S) || S <- Rates] of
                                 [] -> [maps:get(Key, maps:get(at_stop, R)) / Secs];
                                 L -> L
                             end,
                   beamlab_result:benchmark(
                     Name, Samples,
                     #{group => <<"amqp">>, metric => <<"throughput">>, unit => <<"msg/s">>,
                       better => higher, counters => #{total => maps:get(Key, C)},
                       extra => #{average => maps:get(Key, maps:get(at_stop, R)) / Secs}})
           end,
    Lat = fun(Key, HistKey, Name) ->
                  Hist = maps:get(HistKey, R),
                  Medians = case [lists:nth(2, L) || L <- maps:get(Key, R), L =/= [0, 0, 0, 0, 0]] of
                                [] when map_get(count, Hist) > 0 -> [beamlab_stats_hist:percentile(Hist, 50)];
                                Ms -> Ms
                            end,
                  Extra = #{per_interval => <<"median">>, total => percentiles(Hist),
                            histogram => beamlab_stats_hist:to_map(Hist)},
                  beamlab_result:benchmark(
                    Name, Medians,
                    #{group => <<"amqp">>, metric => <<"latency">>, unit => <<"us">>,
                      better => lower,
                      extra => case Medians of
                                   [] -> Extra#{error => <<"no messages measured">>};
                                   _ -> Extra
                               end})
          end,
    En = maps:get(enabled, R),
    Benchmarks =
        [Tput(sent, <<"sent">>) || maps:get(published, En)] ++
        [Tput(received, <<"received">>) || maps:get(received, En)] ++
        [Lat(interval_consumer_latency, consumer_hist, <<"consumer latency">>)
         || maps:get(received, En)] ++
        [Lat(interval_confirm_latency, confirm_hist, <<"confirm latency">>)
         || maps:get(confirmed, En)],
    Acc = maps:get(accounting, R),
    Doc0 = beamlab_result:new(amqp, #{params => Params, command => Argv, started_at => Started}),
    Doc1 = beamlab_result:add_benchmarks(Doc0, Benchmarks),
    Amqp = #{id => maps:get(id, R),
             stop => atom_to_binary(maps:get(stop, R)),
             elapsed_s => Secs,
             counters => C,
             accounting => maps:map(fun(_, undefined) -> null; (_, V) -> V end, Acc),
             failure => case maps:get(failure, R) of
                            undefined -> null;
                            F -> iolist_to_binary(format_error(F))
                        end,
             nodes => [atom_to_binary(N) || N <- maps:get(nodes, R)],
             node_shares => [S#{node := atom_to_binary(N)} || #{node := N} = S <- maps:get(shares, R, [])],
             lost_nodes => [#{node => atom_to_binary(N), reason => iolist_to_binary(io_lib:format("~0p", [Rs]))}
                            || {N, Rs} <- maps:get(lost, R, [])],
             split => maps:get(split, R, false),
             clock_offsets => maps:fold(fun(N, O, A0) -> A0#{atom_to_binary(N) => O} end,
                                        #{}, maps:get(clock, R, #{})),
             queues => maps:get(queues, R),
             latency_unit => <<"us">>,
             latency_precision => <<"log-linear histogram, 3 significant digits (relative error =< 0.05%)">>},
    Doc2 = beamlab_result:set(extra, #{amqp => Amqp}, Doc1),
    beamlab_result:finish(Doc2, #{finished_at => beamlab_runtime_clock:rfc3339(),
                                  partial => maps:get(partial, R)}).

percentiles(Hist) ->
    case beamlab_stats_hist:count(Hist) of
        0 -> #{count => 0};
        N -> #{count => N, min => beamlab_stats_hist:min(Hist), max => beamlab_stats_hist:max(Hist),
               mean => beamlab_stats_hist:mean(Hist),
               p50 => beamlab_stats_hist:percentile(Hist, 50),
               p75 => beamlab_stats_hist:percentile(Hist, 75),
               p95 => beamlab_stats_hist:percentile(Hist, 95),
               p99 => beamlab_stats_hist:percentile(Hist, 99),
               p999 => beamlab_stats_hist:percentile(Hist, 99.9)}
    end.

%%%-------------------------------------------------------------------
%%% Errors
%%%-------------------------------------------------------------------

%% @doc One line for every error `run/1' returns or a report carries.
-spec format_error(term()) -> iolist().
format_error({uri, R}) ->
    ["malformed URI: ", beamlab_amqp_uri:format_error(R)];
format_error({Kind, _, _} = E) when Kind =:= declare_queue; Kind =:= declare_exchange;
                                    Kind =:= bind ->
    beamlab_amqp_topology:format_error(E);
format_error({Kind, _} = E) when Kind =:= nodes_unreachable; Kind =:= load_code; Kind =:= peer ->
    beamlab_amqp_nodes:format_error(E);
format_error({connection_lost, Code, Text}) when is_integer(Code) ->
    io_lib:format("broker closed the connection: ~b ~ts", [Code, Text]);
format_error({connection_lost, _Code, Text}) ->
    io_lib:format("~ts", [Text]);
format_error({queue_lost, Q}) ->
    io_lib:format("the broker lost queue ~ts (restarted?) and -p forbids declaring it again;"
                  " declare it durable, or drop -p", [Q]);
format_error({redeclare, R}) ->
    ["cannot declare the run's topology again after reconnecting: ", format_error(R)];
format_error({consumer_cancelled, Q}) ->
    io_lib:format("the broker cancelled the consumer of queue ~ts (queue deleted?)", [Q]);
format_error({nodes_lost, Lost}) ->
    io_lib:format("node(s) went away during the run: ~ts (the other nodes' data is kept)",
                  [lists:join(", ", [io_lib:format("~s (~0p)", [N, R]) || {N, R} <- Lost])]);
format_error({agent_down, Node, Reason}) ->
    io_lib:format("load generator on node ~s stopped: ~0p", [Node, Reason]);
format_error({timeout, What}) when is_list(What) ->
    io_lib:format("no answer from node(s) ~0p", [What]);
format_error({timeout, What}) ->
    io_lib:format("timed out (~0p)", [What]);
format_error({worker_crashed, R}) ->
    io_lib:format("a load generator process crashed: ~0p", [R]);
format_error(R) ->
    beamlab_amqp:format_error(R).
