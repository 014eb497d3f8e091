%%% @doc The coordinator of a load test (the calling process): checks the
%%% broker, declares the topology, splits producers, consumers and
%%% closed-loop channels over the nodes of the run, starts one
%%% `beamlab_amqp_agent' per node, ticks the reporting intervals (lines by
%%% {@link beamlab_amqp_live}), stops producers first, lets consumers
%%% drain, reads the queues' depth and returns the run's report.
-module(beamlab_amqp_coordinator).

-export([run/1, format_error/1]).

-export_type([report/0, failure/0, stop/0]).

-define(DRAIN_MAX_MS, 3000).
-define(DRAIN_QUIET_MS, 500).
-define(STOP_TIMEOUT_MS, 15000).
-define(LOOP_CHANNELS_PER_CONN, 50).

%% Why the run ended.
-type stop() :: time_limit | counts | interrupted | failed.
%% Why it ended early (or could not start): a node, the broker, a worker.
-type failure() :: beamlab_amqp:reason()
                 | beamlab_amqp_topology:error()
                 | beamlab_amqp_nodes:error()
                 | {uri, beamlab_amqp_uri:error()}
                 | {connection_lost, integer() | atom(), binary()}
                 | {queue_lost, binary()}
                 | {redeclare, beamlab_amqp_topology:error()}
                 | {consumer_cancelled, binary()}
                 | {nodes_lost, [{node(), Exit :: term()}]}
                 | {agent_down, node(), Exit :: term()}
                 | {timeout, atom() | [node()]}
                 | {worker_crashed, Exit :: term()}.
%% What a run measured (beamlab_amqp_result turns it into the document).
-type report() :: #{id := binary(),
                    stop := stop(),
                    elapsed_us := non_neg_integer(),
                    counters := beamlab_amqp_agent:counts(),
                    %% The counters when the run stopped (the averages).
                    at_stop := beamlab_amqp_agent:counts(),
                    accounting := beamlab_amqp_report:accounting(),
                    failure := failure() | undefined,
                    partial := boolean(),
                    rates := [beamlab_amqp_live:rates()],
                    consumer_latency := beamlab_amqp_report:latency(),
                    confirm_latency := beamlab_amqp_report:latency(),
                    consumer_hist := beamlab_stats_hist:snapshot(),
                    confirm_hist := beamlab_stats_hist:snapshot(),
                    interval_consumer_latency := [beamlab_amqp_report:latency()],
                    interval_confirm_latency := [beamlab_amqp_report:latency()],
                    enabled := beamlab_amqp_report:enabled(),
                    nodes := [node()],
                    shares := [beamlab_amqp_live:share()],
                    lost := [{node(), Exit :: term()}],
                    split := boolean(),
                    clock := #{node() => beamlab_runtime_clock:combined()},
                    queues := [binary()]}.

-record(agent, {node :: node(), mon :: reference()}).

-record(run, {cfg :: beamlab_amqp_config:config(),
              uri :: beamlab_amqp_uri:params(),
              conn :: beamlab_amqp_setup:conn(),
              topo :: beamlab_amqp_topology:topology(),
              agents = #{} :: #{pid() => #agent{}},
              %% Set when the run starts (monotonic µs), then the columns
              %% and the live reporting.
              t0 :: integer() | undefined,
              enabled :: beamlab_amqp_report:enabled() | undefined,
              timer :: reference() | undefined,
              split = false :: boolean(),
              clock_before = #{} :: #{node() => beamlab_runtime_clock:offset()},
              done = #{} :: #{pid() => {non_neg_integer(), non_neg_integer()}},
              done_p = 0 :: non_neg_integer(),
              done_c = 0 :: non_neg_integer(),
              failure :: failure() | undefined,
              interrupted = false :: boolean(),
              %% --reconnect: the process declaring the topology again
              %% after the setup connection was lost, and the queues found
              %% lost (declared again), each `{SecondsIntoRun, [Queue]}'.
              redeclarer :: pid() | undefined,
              lost_queues = [] :: [{float(), [binary()]}],
              live :: beamlab_amqp_live:live() | undefined}).

%% @doc Runs the load test. `{error, R}' when it could not start (broker,
%% credentials, topology, nodes); otherwise a report, with `failure' set
%% when the run ended early (broker gone, node down) and `partial' when it
%% was interrupted or failed.
-spec run(beamlab_amqp_config:config()) -> {ok, report()} | {error, failure()}.
run(Cfg) ->
    Id = maps:get(id, Cfg),
    case beamlab_amqp_uri:parse(maps:get(uri, Cfg)) of
        {ok, Uri} ->
            case beamlab_amqp:connect(Uri, #{name => <<"beamlab amqp ", Id/binary, " setup">>}) of
                {ok, Conn} ->
                    try setup_and_run(Conn, Uri, Cfg) of
                        {Result, Live} ->
                            beamlab_amqp_setup:close([Conn, Live]),
                            Result
                    catch
                        Class:Reason:Stack ->
                            beamlab_amqp_setup:close([Conn]),
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
setup_and_run(Conn, Uri, Cfg) ->
    Queues = beamlab_amqp_topology:queue_names(Cfg, maps:get(id, Cfg)),
    case beamlab_amqp_topology:declare(Conn, Cfg, Queues) of
        {ok, Topo} ->
            Delete = fun(C) -> beamlab_amqp_topology:delete(C, Topo) end,
            {Result, Used} =
                try beamlab_amqp_nodes:start(Cfg) of
                    {ok, Nodes, Cleanup} ->
                        try start_run(#run{cfg = Cfg#{nodes := Nodes}, uri = Uri, conn = Conn,
                                           topo = Topo})
                        after Cleanup()
                        end;
                    {error, _} = E ->
                        {E, Conn}
                catch
                    Class:Reason:Stack ->
                        {_, Reopened} = beamlab_amqp_setup:op(Conn, Uri, Delete, ok),
                        beamlab_amqp_setup:close([Reopened || Reopened =/= Conn]),
                        erlang:raise(Class, Reason, Stack)
                end,
            {_, Live} = beamlab_amqp_setup:op(Used, Uri, Delete, ok),
            {Result, Live};
        {error, _} = E ->
            {E, Conn}
    end.

%%%-------------------------------------------------------------------
%%% Start
%%%-------------------------------------------------------------------

start_run(#run{cfg = Cfg0, topo = Topo} = R0) ->
    {Plans, Split} = plans(R0#run.uri, Cfg0, [Q || {Q, _, _} <- maps:get(queues, Topo)]),
    %% Each node's clock against ours, before the run (issue 13): bodies
    %% are stamped and read in our time, so latency between two nodes
    %% compares one clock.
    Clock0 = beamlab_runtime_clock:offsets([N || {N, _} <- Plans]),
    Self = self(),
    Agents = maps:from_list(
               [begin
                    Off = maps:get(offset_us, maps:get(Node, Clock0)),
                    Pid = beamlab_amqp_agent:start(Node, Self, Plan#{clock_offset_us => Off}),
                    {Pid, #agent{node = Node, mon = monitor(process, Pid)}}
                end || {Node, Plan} <- Plans]),
    R = R0#run{agents = Agents, split = Split, clock_before = Clock0},
    case await_ready(maps:keys(Agents)) of
        ok ->
            StartUs = erlang:system_time(microsecond),
            T0 = erlang:monotonic_time(microsecond),
            _ = [A ! {go, StartUs} || A <- maps:keys(Agents)],
            ok = beamlab_runtime_interrupt:subscribe(),
            try measure(R#run{t0 = T0})
            after cleanup(Agents)
            end;
        {error, _} = E ->
            _ = [exit(A, kill) || A <- maps:keys(Agents)],
            cleanup(Agents),
            {E, R#run.conn}
    end.

%% Leave the caller's mailbox as it was: a library caller (or a test) runs
%% many of these in one process.
cleanup(Agents) ->
    _ = [demonitor(Mon, [flush]) || #agent{mon = Mon} <- maps:values(Agents)],
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
plans(Uri, Cfg, Queues) ->
    Nodes = maps:get(nodes, Cfg),
    NQ = length(Queues),
    NN = length(Nodes),
    QAt = fun(I) -> lists:nth(I rem NQ + 1, Queues) end,
    NodeAt = case NQ >= NN of
                 true -> fun(I) -> lists:nth((I rem NQ) rem NN + 1, Nodes) end;
                 false -> fun(I) -> lists:nth(I rem NN + 1, Nodes) end
             end,
    Id = maps:get(id, Cfg),
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
    Routed = maps:get(routing_key, Cfg) =/= undefined
        orelse maps:get(exchange_type, Cfg) =/= <<"direct">>,
    length(Used) > 1 andalso
        (Routed orelse lists:any(fun(Ns) -> length(Ns) > 1 end, maps:values(ByQueue))).

add_node(Q, N, Acc) ->
    Acc#{Q => lists:usort([N | maps:get(Q, Acc, [])])}.

%% Messages go to the queue's name (bound with it) unless -k names a key.
producer_key(#{routing_key := undefined}, Q) -> Q;
producer_key(#{routing_key := K}, _Q) -> K.

%%%-------------------------------------------------------------------
%%% The run
%%%-------------------------------------------------------------------

measure(#run{cfg = Cfg, t0 = T0} = R) ->
    Interval = round(maps:get(interval, Cfg) * 1000),
    En = beamlab_amqp_config:enabled(Cfg),
    tick_loop(R#run{enabled = En, live = beamlab_amqp_live:new(Cfg, En, T0),
                    timer = schedule_tick(T0, Interval, 1)}).

%% Ticks at absolute times T0 + K * Interval, so that lines do not drift.
schedule_tick(T0, Interval, K) ->
    At = erlang:convert_time_unit(T0, microsecond, millisecond) + K * Interval,
    erlang:send_after(At, self(), {amqp_perf_tick, Interval, K}, [{abs, true}]).

tick_loop(R) ->
    case stop_reason(R) of
        continue ->
            receive
                {amqp_perf_tick, Interval, K} ->
                    Timer = schedule_tick(R#run.t0, Interval, K + 1),
                    tick_loop(interval(R#run{timer = Timer}));
                {agent_failure, _A, Reason} ->
                    tick_loop(R#run{failure = Reason});
                {workers_done, A, P, C} ->
                    Done = (R#run.done)#{A => {P, C}},
                    tick_loop(R#run{done = Done,
                                    done_p = lists:sum([X || {X, _} <- maps:values(Done)]),
                                    done_c = lists:sum([X || {_, X} <- maps:values(Done)])});
                {'DOWN', _, process, A, Reason} when is_map_key(A, R#run.agents) ->
                    tick_loop(lose(A, Reason, R));
                {amqp_closed, Conn, _, _} when Conn =:= R#run.conn ->
                    tick_loop(setup_lost(R));
                {setup_conn, Pid, Conn} when Pid =:= R#run.redeclarer ->
                    tick_loop(R#run{conn = Conn});
                {redeclared, Pid, Result} when Pid =:= R#run.redeclarer ->
                    tick_loop(redeclared(Result, R#run{redeclarer = undefined}));
                {beamlab_interrupt, _} ->
                    tick_loop(R#run{interrupted = true})
            after 100 ->
                tick_loop(R)
            end;
        Why ->
            finish(Why, last_interval(R))
    end.

interval(R) ->
    case beamlab_amqp_live:interval(maps:keys(R#run.agents), R#run.live) of
        {ok, L} -> R#run{live = L};
        {error, Reason} -> R#run{failure = Reason}
    end.

last_interval(#run{failure = undefined} = R) ->
    case beamlab_amqp_live:last_interval(maps:keys(R#run.agents), R#run.live) of
        {ok, L} -> R#run{live = L};
        {error, Reason} -> R#run{failure = Reason}
    end;
last_interval(R) ->
    R.

%% A node went away: named in the report, its share so far kept, the run
%% goes on with the others (and ends with a failure exit code).
lose(A, Reason, R) ->
    #agent{node = Node} = maps:get(A, R#run.agents),
    R#run{agents = maps:remove(A, R#run.agents),
          live = beamlab_amqp_live:lose(Node, Reason, R#run.live)}.

stop_reason(#run{failure = F}) when F =/= undefined -> failed;
stop_reason(#run{agents = As}) when map_size(As) =:= 0 -> failed;
stop_reason(#run{interrupted = true}) -> interrupted;
stop_reason(#run{cfg = Cfg, t0 = T0} = R) ->
    Elapsed = erlang:monotonic_time(microsecond) - T0,
    case maps:get(duration, Cfg) of
        D when is_number(D), Elapsed >= D * 1000000 -> time_limit;
        _ -> counts_reached(R)
    end.

%% -C: every producer has published its count; -D: every consumer has
%% received its count. Both given: both must hold.
counts_reached(#run{cfg = #{closed_loop := L}}) when L > 0 ->
    continue;
counts_reached(#run{cfg = Cfg, done_p = DP, done_c = DC}) ->
    PDone = maps:get(pmessages, Cfg) > 0 andalso DP >= beamlab_amqp_config:producer_channels(Cfg),
    CDone = maps:get(cmessages, Cfg) > 0 andalso DC >= beamlab_amqp_config:consumer_channels(Cfg),
    case {maps:get(pmessages, Cfg) > 0, maps:get(cmessages, Cfg) > 0} of
        {true, true} when PDone, CDone -> counts;
        {true, false} when PDone -> counts;
        {false, true} when CDone -> counts;
        _ -> continue
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
setup_lost(#run{cfg = #{reconnect := true} = Cfg, redeclarer = undefined, topo = Topo} = R) ->
    Self = self(),
    Names = [Q || {Q, _, _} <- maps:get(queues, Topo)],
    Pid = spawn_link(fun() -> beamlab_amqp_setup:redeclare(Self, Cfg, Names) end),
    R#run{redeclarer = Pid, conn = lost};
setup_lost(R) ->
    %% Without --reconnect the workers' own connection losses end the run.
    R#run{conn = lost}.

%% The topology is declared again: a queue the broker no longer had comes
%% back as `ours' (created now). Its messages are lost; its depth before
%% the run no longer counts in the accounting.
redeclared({ok, #{queues := Now}}, #run{topo = Topo, t0 = T0} = R) ->
    Lost = [Q || {Q, _, ours} <- Now],
    Qs = [case lists:member(Q, Lost) of
              true -> {Q, 0, Kind};
              false -> Entry
          end || {Q, _, Kind} = Entry <- maps:get(queues, Topo)],
    case Lost of
        [] ->
            R;
        _ ->
            Secs = (erlang:monotonic_time(microsecond) - T0) / 1000000,
            beamlab_amqp_live:write(
              R#run.live,
              [<<"id: ">>, maps:get(id, R#run.cfg), <<", time ">>, float_to_binary(Secs, [{decimals, 3}]),
               <<" s, the broker lost queue">>, [$s || length(Lost) > 1], $\s,
               lists:join(<<", ">>, Lost),
               <<" (restarted?): declared again, the messages in ">>,
               case Lost of [_] -> <<"it">>; _ -> <<"them">> end, <<" are lost\n">>]),
            R#run{topo = Topo#{queues := Qs}, lost_queues = [{Secs, Lost} | R#run.lost_queues]}
    end;
redeclared({error, {declare_queue, Q, {amqp_closed, 404, _}}}, #run{cfg = #{predeclared := true}} = R) ->
    R#run{failure = {queue_lost, Q}};
redeclared({error, Reason}, R) ->
    R#run{failure = {redeclare, Reason}}.

stop_redeclarer(#run{redeclarer = undefined} = R) ->
    R;
stop_redeclarer(#run{redeclarer = Pid} = R) ->
    unlink(Pid),
    exit(Pid, kill),
    Mon = monitor(process, Pid),
    receive {'DOWN', Mon, process, Pid, _} -> ok end,
    R1 = receive {setup_conn, Pid, C} -> R#run{conn = C} after 0 -> R end,
    receive {redeclared, Pid, _} -> ok after 0 -> ok end,
    R1#run{redeclarer = undefined}.

%%%-------------------------------------------------------------------
%%% The end
%%%-------------------------------------------------------------------

%% Stop producers, let consumers drain, stop consumers, collect totals.
finish(Why, #run{t0 = T0, timer = Timer} = R00) ->
    _ = erlang:cancel_timer(Timer),
    R0 = stop_redeclarer(R00),
    ElapsedUs = erlang:monotonic_time(microsecond) - T0,
    Agents = maps:keys(R0#run.agents),
    %% The averages cover the measured window only: what is received while
    %% draining after the stop counts in the accounting, not in the rates.
    AtStop = beamlab_amqp_live:at_stop(case R0#run.failure of
                                           undefined -> Agents;
                                           _ -> none
                                       end, R0#run.live),
    _ = [A ! stop_producers || A <- Agents],
    R1 = await_all(Agents, producers_stopped, R0),
    %% Closed-loop channels publish until told to stop: no drain for them
    %% (their message in flight stays queued and is accounted as such).
    R2 = case maps:get(closed_loop, R1#run.cfg) > 0 of
             true -> R1;
             false -> drain(R1, erlang:monotonic_time(millisecond) + ?DRAIN_MAX_MS, undefined,
                            erlang:monotonic_time(millisecond))
         end,
    Live = maps:keys(R2#run.agents),
    _ = [A ! stop_consumers || A <- Live],
    {Finals, R3} = collect_finals(Live, [], R2),
    {Totals, L3} = beamlab_amqp_live:totals(Finals, R3#run.live),
    {Queued, R4} = depth(R3#run{live = L3}),
    %% The clocks again, after the run: the drift widens the uncertainty.
    After = beamlab_runtime_clock:offsets([N || #agent{node = N} <- maps:values(R4#run.agents)]),
    Clock = maps:map(fun(N, B) -> beamlab_runtime_clock:combine(B, maps:get(N, After, undefined)) end,
                     R4#run.clock_before),
    {report(Why, ElapsedUs, AtStop, Totals, Queued, Clock, R4), R4#run.conn}.

await_all([], _Tag, R) ->
    R;
await_all(Pending, Tag, R) ->
    receive
        {Tag, A} -> await_all(lists:delete(A, Pending), Tag, R);
        {agent_failure, _A, Reason} -> await_all(Pending, Tag, keep_failure(Reason, R));
        {'DOWN', _, process, A, Reason} when is_map_key(A, R#run.agents) ->
            await_all(lists:delete(A, Pending), Tag, lose(A, Reason, R))
    after ?STOP_TIMEOUT_MS ->
        keep_failure({timeout, Tag}, R)
    end.

keep_failure(Reason, #run{failure = undefined} = R) -> R#run{failure = Reason};
keep_failure(_Reason, R) -> R.

%% After the producers stop, consumers still receive what is queued or in
%% flight: wait until everything sent is settled or nothing arrives for a
%% while (bounded).
drain(#run{failure = F} = R, _Deadline, _Prev, _Since) when F =/= undefined ->
    R;
drain(R, Deadline, Prev, Since) ->
    Now = erlang:monotonic_time(millisecond),
    case Now >= Deadline orelse maps:size(R#run.agents) =:= 0 of
        true ->
            R;
        false ->
            case beamlab_amqp_live:sample(maps:keys(R#run.agents)) of
                {ok, #{counters := C}} ->
                    #{sent := S, received := Rcv, returned := Ret, nacked := N} = C,
                    Settled = Rcv + Ret + N >= S,
                    Quiet = Rcv =:= Prev andalso Now - Since >= ?DRAIN_QUIET_MS,
                    case Settled orelse Quiet of
                        true -> R;
                        false ->
                            receive after 50 -> ok end,
                            Since1 = case Rcv =:= Prev of true -> Since; false -> Now end,
                            drain(R, Deadline, Rcv, Since1)
                    end;
                {error, Reason} ->
                    keep_failure(Reason, R)
            end
    end.

collect_finals([], Acc, R) ->
    {Acc, R};
collect_finals(Pending, Acc, R) ->
    receive
        {final, A, F} -> collect_finals(lists:delete(A, Pending), [{A, F} | Acc], R);
        {agent_failure, _A, Reason} -> collect_finals(Pending, Acc, keep_failure(Reason, R));
        {'DOWN', _, process, A, Reason} when is_map_key(A, R#run.agents) ->
            case lists:member(A, Pending) of
                true -> collect_finals(lists:delete(A, Pending), Acc, lose(A, Reason, R));
                false -> collect_finals(Pending, Acc, R)
            end
    after ?STOP_TIMEOUT_MS ->
        {Acc, keep_failure({timeout, final}, R)}
    end.

%% The queues' depth, on a fresh setup connection if the broker closed
%% ours; `undefined' when the broker does not answer in time.
depth(#run{conn = Conn, uri = Uri, topo = Topo} = R) ->
    {Queued, Live} = beamlab_amqp_setup:op(Conn, Uri, fun(C) -> beamlab_amqp_topology:depth(C, Topo) end,
                                           undefined),
    {Queued, R#run{conn = Live}}.

report(Why, ElapsedUs, AtStop, Totals, Queued, Clock, R) ->
    #run{cfg = Cfg, enabled = En, live = L} = R,
    C = maps:get(counters, Totals),
    Secs = max(ElapsedUs, 1) / 1000000,
    Cons = beamlab_amqp_report:latency(maps:get(consumer, Totals)),
    Conf = beamlab_amqp_report:latency(maps:get(confirm, Totals)),
    Acc = (beamlab_amqp_report:accounting(C, Queued))#{
            lost_queues => lists:usort(lists:append([Qs || {_, Qs} <- R#run.lost_queues])),
            lost_at_s => lists:reverse([round(T * 1000) / 1000 || {T, _} <- R#run.lost_queues])},
    {AllNodes, Shares, Lost} = beamlab_amqp_live:shares(maps:keys(R#run.clock_before), C, L),
    Failure = case {R#run.failure, Lost} of
                  {undefined, [_ | _]} -> {nodes_lost, Lost};
                  {F, _} -> F
              end,
    Stopped = case {Failure, R#run.failure} of
                  {undefined, _} -> none;
                  {_, undefined} -> format_error(Failure);
                  _ -> [<<"test stopped (">>, format_error(Failure), <<")">>]
              end,
    Series = beamlab_amqp_live:summary(
               L, #{stopped => Stopped, elapsed_us => ElapsedUs, shares => Shares, accounting => Acc,
                    summary => #{sent => maps:get(sent, AtStop) / Secs,
                                 received => maps:get(received, AtStop) / Secs,
                                 consumer => Cons, confirm => Conf},
                    clock => case R#run.split of true -> Clock; false -> none end}, C),
    {ok, #{id => maps:get(id, Cfg), stop => Why, elapsed_us => ElapsedUs, counters => C,
           at_stop => AtStop, accounting => Acc, failure => Failure,
           partial => Failure =/= undefined orelse Why =:= interrupted,
           rates => maps:get(rates, Series),
           consumer_latency => Cons, confirm_latency => Conf,
           consumer_hist => maps:get(consumer, Totals),
           confirm_hist => maps:get(confirm, Totals),
           interval_consumer_latency => maps:get(consumer, Series),
           interval_confirm_latency => maps:get(confirm, Series),
           enabled => En,
           nodes => AllNodes, shares => Shares, lost => Lost,
           split => R#run.split, clock => Clock,
           queues => [Q || {Q, _, _} <- maps:get(queues, R#run.topo)]}}.

%%%-------------------------------------------------------------------
%%% Errors
%%%-------------------------------------------------------------------

%% @doc One line for every error `run/1' returns or a report carries.
-spec format_error(failure()) -> iolist().
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
