%%% @doc The coordinator of a load test (the calling process): connects to
%%% the broker (every node of `--uris', waiting for them with
%%% `--servers-startup-timeout'), declares the topology, splits producers,
%%% consumers and closed-loop channels over the nodes of the run, starts
%%% one `beamlab_amqp_agent' per node, ticks the reporting intervals (lines
%%% by {@link beamlab_amqp_live}), stops producers first, lets consumers
%%% drain, reads the queues' depth and returns the run's report.
%%%
%%% Every wait is bounded: a node that stops answering (frozen) is dropped
%%% after a few seconds and its counts so far kept; the end of the run
%%% (stop, drain, final counts) takes at most the shutdown timeout, plus at
%%% most a second each to read the queues' depth (plus 5 ms per
%%% connection: the broker is closing them) and delete them; an
%%% interruption during the set-up (a silent server) ends it at once.
-module(beamlab_amqp_coordinator).

-include("beamlab_amqp_perf.hrl").

-export([run/1, format_error/1]).

-export_type([report/0, failure/0, stop/0]).

-define(DRAIN_MAX_MS, 3000).
-define(DRAIN_QUIET_MS, 500).
-define(LOOP_CHANNELS_PER_CONN, 50).
-define(AGENTS_START_MS, 60000).
%% A node whose agent has not answered for this long (and two intervals)
%% is taken as gone (frozen, or its link dead).
-define(SILENT_MS, 3000).
%% Reading the queues' depth and deleting them after the end, each.
-define(END_OP_MS, 1000).
-define(END_OP_PER_CONN_MS, 5).
%% The pause between two reads of the depth while it is still changing.
-define(DEPTH_RETRY_MS, 200).
-define(SETUP_RETRY_MS, 1000).

%% Why the run ended.
-type stop() :: time_limit | counts | interrupted | failed.
%% Why it ended early (or could not start): a node, the broker, a worker.
-type failure() :: beamlab_amqp:reason()
                 | beamlab_amqp_topology:error()
                 | beamlab_amqp_nodes:error()
                 | interrupted
                 | {uri, beamlab_amqp_uri:error()}
                 | {connection_lost, integer() | atom(), binary()}
                 | {queue_lost, binary()}
                 | {redeclare, beamlab_amqp_topology:error()}
                 | {consumer_cancelled, binary()}
                 | {confirm_timeout, pos_integer()}
                 | {nodes_lost, [{node(), Exit :: term()}]}
                 | {agent_down, node(), Exit :: term()}
                 | {timeout, atom() | [node()]}
                 | {output_file, binary(), beamlab_runtime_file:path_error() | badarg | terminated}
                 | {worker_crashed, Exit :: term()}.
%% What a run measured (beamlab_amqp_result turns it into the document).
-type report() :: #{id := binary(),
                    stop := stop(),
                    %% when the load started (monotonic ms): its
                    %% intervals' ends count from there
                    started_ms := integer() | undefined,
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
                    queues := [binary()],
                    %% Per node: its VM's memory before and with the
                    %% connections open, per connection (bytes).
                    memory := [memory()]}.
-type memory() :: #{node := node(), before := non_neg_integer(), running := non_neg_integer(),
                    connections := non_neg_integer(), per_connection := non_neg_integer() | undefined}.

-record(agent, {node :: node(), mon :: reference(),
                seen :: integer(),                    % last answer, monotonic ms
                %% Its AMQP connections, aborted when the agent is given up.
                conns = [] :: [beamlab_amqp:conn()]}).

-record(run, {cfg :: beamlab_amqp_config:config(),
              %% The broker node the setup connection is on, and all of
              %% those that answered (the workers' choice).
              target :: beamlab_amqp_setup:target(),
              targets :: [beamlab_amqp_setup:target(), ...],
              conn :: beamlab_amqp_setup:conn(),
              topo :: beamlab_amqp_topology:topology(),
              agents = #{} :: #{pid() => #agent{}},
              t0 :: integer() | undefined,            % monotonic µs, at the start
              enabled :: beamlab_amqp_report:enabled() | undefined,
              timer :: reference() | undefined,
              split = false :: boolean(),
              clock_before = #{} :: #{node() => beamlab_runtime_clock:offset()},
              %% Consumers per stream (undefined: not all the same).
              per_stream :: pos_integer() | undefined,
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
%% credentials, topology, nodes, an interruption); otherwise a report,
%% with `failure' set when the run ended early (broker gone, node down)
%% and `partial' when it was interrupted or failed.
-spec run(beamlab_amqp_config:config()) -> {ok, report()} | {error, failure()}.
run(Cfg) ->
    %% From the start: an interruption while connecting to a silent server
    %% ends the wait at once.
    ok = beamlab_runtime_interrupt:subscribe(),
    try targets(Cfg) of
        {ok, Targets} -> connect(Targets, Cfg);
        {error, R} -> {error, {uri, R}}
    after
        ok = beamlab_runtime_interrupt:unsubscribe(),
        flush()
    end.

%% The broker's nodes (-h, or every URI of --uris) with the run's
%% connection options.
targets(Cfg) ->
    Uris = case maps:get(uris, Cfg) of
               [] -> [maps:get(uri, Cfg)];
               L -> L
           end,
    Opts = conn_opts(Cfg),
    lists:foldr(fun(U, {ok, Acc}) ->
                        case beamlab_amqp_uri:parse(U) of
                            {ok, P} -> {ok, [{P, Opts} | Acc]};
                            {error, _} = E -> E
                        end;
                   (_, E) -> E
                end, {ok, []}, Uris).

%% -b 0 asks for the broker's heartbeat (PerfTest's "no interval
%% requested"): the client proposes the most and takes the broker's lower
%% value.
conn_opts(Cfg) ->
    Heartbeat = case maps:get(heartbeat, Cfg) of
                    undefined -> #{};
                    0 -> #{heartbeat => 65535};
                    H -> #{heartbeat => H}
                end,
    FrameMax = case maps:get(frame_max, Cfg) of
                   undefined -> #{};
                   F -> #{frame_max => F}
               end,
    maps:merge(maps:merge(Heartbeat, FrameMax),
               (maps:get(tcp, Cfg))#{tls => maps:get(tls, Cfg), auth_mechanism => maps:get(sasl, Cfg)}).

connect(Targets, Cfg) ->
    case connect_setup(Targets, Cfg) of
        {ok, [{Target, _} | _] = Up} ->
            Conns = [C || {_, C} <- Up],
            try setup_and_run(Conns, Target, [T || {T, _} <- Up], Cfg) of
                {Result, Live} ->
                    beamlab_amqp_setup:close([Live | Conns]),
                    Result
            catch
                Class:Reason:Stack ->
                    beamlab_amqp_setup:close(Conns),
                    erlang:raise(Class, Reason, Stack)
            end;
        {error, _} = E ->
            E
    end.

%% One setup connection per broker node. Without --servers-startup-timeout
%% every node must answer now; with it, the run waits (retrying every
%% second) until --servers-up-limit of them answer (default: all).
connect_setup(Targets, Cfg) ->
    Need = case maps:get(servers_up, Cfg) of
               undefined -> length(Targets);
               N -> min(N, length(Targets))
           end,
    Deadline = erlang:monotonic_time(millisecond) + maps:get(startup_timeout, Cfg) * 1000,
    Name = <<"beamlab amqp ", (maps:get(id, Cfg))/binary, " setup">>,
    connect_setup(Targets, [], Need, Deadline, Name).

connect_setup(Pending, Up, Need, Deadline, Name) ->
    case try_connect(Pending, Name, [], none) of
        {interrupted, New} ->
            beamlab_amqp_setup:close([C || {_, C} <- Up ++ New]),
            {error, interrupted};
        {New, Failed, LastError} ->
            Up1 = Up ++ New,
            Left = Deadline - erlang:monotonic_time(millisecond),
            if
                length(Up1) >= Need ->
                    beamlab_amqp_setup:close([C || {_, C} <- lists:nthtail(Need, Up1)]),
                    {ok, lists:sublist(Up1, Need)};
                Left =< 0 ->
                    beamlab_amqp_setup:close([C || {_, C} <- Up1]),
                    LastError;
                true ->
                    receive
                        {beamlab_interrupt, _} ->
                            beamlab_amqp_setup:close([C || {_, C} <- Up1]),
                            {error, interrupted}
                    after min(?SETUP_RETRY_MS, Left) ->
                        connect_setup(Failed, Up1, Need, Deadline, Name)
                    end
            end
    end.

try_connect([], _Name, Up, Last) ->
    {lists:reverse(Up), [], Last};
try_connect([T | Rest], Name, Up, Last) ->
    case connect_interruptible(T, Name) of
        {ok, Conn} -> try_connect(Rest, Name, [{T, Conn} | Up], Last);
        {error, interrupted} -> {interrupted, lists:reverse(Up)};
        {error, _} = E ->
            {New, Failed, Last1} = try_connect(Rest, Name, Up, E),
            {New, [T | Failed], case Last1 of none -> E; _ -> Last1 end}
    end.

%% The handshake runs in a helper so that an interruption ends the wait
%% (a silent server would otherwise hold it for the connection timeout).
connect_interruptible({Uri, Opts}, Name) ->
    Self = self(),
    {Pid, Mon} = spawn_monitor(fun() ->
                                       Self ! {setup_connected, self(),
                                               beamlab_amqp:connect(Uri, Opts#{name => Name, owner => Self})}
                               end),
    receive
        {setup_connected, Pid, R} ->
            demonitor(Mon, [flush]),
            R;
        {'DOWN', Mon, process, Pid, Reason} ->
            erlang:error({setup_connect, Reason});
        {beamlab_interrupt, _} ->
            demonitor(Mon, [flush]),
            exit(Pid, kill),
            {error, interrupted}
    end.

%% Returns the outcome and the setup connection in use at the end (the
%% original one or its replacement), which the caller closes.
setup_and_run([Conn | _] = Conns, Target, Targets, Cfg) ->
    Queues = beamlab_amqp_topology:queue_names(Cfg, maps:get(id, Cfg)),
    case beamlab_amqp_topology:declare(Conns, Cfg, Queues) of
        {ok, Topo} ->
            Delete = fun(C) -> beamlab_amqp_topology:delete(C, Topo) end,
            {Result, Used} =
                try beamlab_amqp_nodes:start(Cfg) of
                    {ok, Nodes, Cleanup} ->
                        try start_run(#run{cfg = Cfg#{nodes := Nodes}, target = Target, targets = Targets,
                                           conn = Conn, topo = Topo})
                        after Cleanup()
                        end;
                    {error, _} = E ->
                        {E, Conn}
                catch
                    Class:Reason:Stack ->
                        {_, Reopened} = beamlab_amqp_setup:op(Conn, Target, Delete, ok, ?END_OP_MS),
                        beamlab_amqp_setup:close([Reopened || Reopened =/= Conn]),
                        erlang:raise(Class, Reason, Stack)
                end,
            {_, Live} = beamlab_amqp_setup:op(Used, Target, Delete, ok, ?END_OP_MS),
            {Result, Live};
        {error, _} = E ->
            {E, Conn}
    end.

%%%-------------------------------------------------------------------
%%% Start
%%%-------------------------------------------------------------------

start_run(#run{cfg = Cfg, topo = Topo} = R0) ->
    Queues = [Q || {Q, _, _} <- maps:get(queues, Topo)],
    {Plans, Split, PerStream} = plans(R0#run.targets, Cfg, Topo, Queues),
    %% Each node's clock against ours, before the run (issue 13): bodies
    %% are stamped and read in our time, so latency between two nodes
    %% compares one clock.
    Clock0 = beamlab_runtime_clock:offsets([N || {N, _} <- Plans]),
    Self = self(),
    Now = erlang:monotonic_time(millisecond),
    Agents = maps:from_list(
               [begin
                    Off = maps:get(offset_us, maps:get(Node, Clock0)),
                    Pid = beamlab_amqp_agent:start(Node, Self, Plan#{clock_offset_us => Off}),
                    {Pid, #agent{node = Node, mon = monitor(process, Pid), seen = Now}}
                end || {Node, Plan} <- Plans]),
    R = R0#run{agents = Agents, split = Split, clock_before = Clock0, per_stream = PerStream},
    case await_ready(maps:keys(Agents), start_ms(Plans, maps:get(connection_rate, Cfg))) of
        ok ->
            StartUs = erlang:system_time(microsecond),
            T0 = erlang:monotonic_time(microsecond),
            _ = [A ! {go, StartUs} || A <- maps:keys(Agents)],
            Metrics = beamlab_amqp_metrics:start(R#run.cfg),
            try measure(R#run{t0 = T0}, Metrics)
            after
                cleanup(Agents),
                beamlab_amqp_metrics:stop(Metrics)
            end;
        {error, _} = E ->
            _ = [give_up(A, R) || A <- maps:keys(Agents)],
            cleanup(Agents),
            {E, R#run.conn}
    end.

%% Leave the caller's mailbox as it was: a library caller (or a test) runs
%% many of these in one process.
cleanup(Agents) ->
    _ = [demonitor(Mon, [flush]) || #agent{mon = Mon} <- maps:values(Agents)],
    flush().

flush() ->
    receive
        {amqp_perf_tick, _, _} -> flush();
        {workers_done, _, _, _} -> flush();
        {sample, Ref, _, _} when is_reference(Ref) -> flush();
        {agent_failure, _, _} -> flush();
        {final, _, _} -> flush();
        {agent_conn, _, _} -> flush();
        {producers_stopped, _} -> flush();
        {beamlab_interrupt, _} -> flush()
    after 0 ->
        ok
    end.

%% How long the agents may take to be ready: a minute, plus the time the
%% --connection-rate pacing takes to open a node's connections.
start_ms(_Plans, infinity) ->
    ?AGENTS_START_MS;
start_ms(Plans, Rate) ->
    Conns = lists:max([length(maps:get(producers, P, [])) + length(maps:get(consumers, P, []))
                       + length(maps:get(loops, P, [])) div ?LOOP_CHANNELS_PER_CONN + 1
                       || {_, P} <- Plans]),
    ?AGENTS_START_MS + Conns * 1000 div Rate.

await_ready([], _Ms) ->
    ok;
await_ready(Pending, Ms) ->
    receive
        {agent_ready, A} -> await_ready(lists:delete(A, Pending), Ms);
        {agent_error, _A, Reason} -> {error, Reason};
        {'DOWN', _, process, A, Reason} when is_pid(A) ->
            case lists:member(A, Pending) of
                true -> {error, {agent_down, node(A), Reason}};
                false -> await_ready(Pending, Ms)
            end;
        {beamlab_interrupt, _} ->
            {error, interrupted}
    after Ms ->
        {error, {timeout, agents_start}}
    end.

%% Worker specs per node, whether a queue's producers and consumers are on
%% different nodes (`split'), and the consumers per stream. Producer/
%% consumer i works on queue i mod q with all of its channels (they share
%% its connection). With at least as many queues as nodes, a queue's
%% producers and consumers stay on one node (queue j on node j mod n), so
%% latency compares one clock; with fewer queues than nodes, worker i goes
%% to node i mod n and a queue's workers are split over nodes (latency is
%% then corrected for the nodes' clock offsets). Closed-loop channels are
%% never split.
plans(Targets, Cfg, Topo, Queues) ->
    Nodes = maps:get(nodes, Cfg),
    NQ = length(Queues),
    NN = length(Nodes),
    QAt = fun(I) -> lists:nth(I rem NQ + 1, Queues) end,
    NodeAt = case NQ >= NN of
                 true -> fun(I) -> lists:nth((I rem NQ) rem NN + 1, Nodes) end;
                 false -> fun(I) -> lists:nth(I rem NN + 1, Nodes) end
             end,
    Common = #{reconnect => maps:get(reconnect, Cfg),
               recovery_ms => maps:get(recovery_interval, Cfg)},
    Specs = case maps:get(closed_loop, Cfg) of
                L when L > 0 ->
                    [{NodeAt(I), loops,
                      Common#{queue => QAt(I), group => {l, I div ?LOOP_CHANNELS_PER_CONN},
                              body_size => maps:get(body_size, Cfg),
                              persistent => maps:get(persistent, Cfg)}}
                     || I <- lists:seq(0, L - 1)];
                0 ->
                    consumer_specs(Cfg, Common, NodeAt, QAt, NQ)
                        ++ producer_specs(Cfg, Common, NodeAt, QAt)
            end,
    Plan0 = #{uris => [U || {U, _} <- Targets], conn_opts => element(2, hd(Targets)),
              connection_rate => maps:get(connection_rate, Cfg),
              id => maps:get(id, Cfg), bodies => bodies(Cfg), sizes => sizes(Cfg)},
    Grouped = lists:foldl(
                fun({Node, Kind, Spec}, Acc) ->
                        P = maps:get(Node, Acc, Plan0),
                        Acc#{Node => P#{Kind => maps:get(Kind, P, []) ++ [Spec]}}
                end, #{}, Specs),
    PerStream = case maps:get(stream, Topo) of
                    true ->
                        Counts = lists:foldl(fun({_, consumers, #{queue := Q}}, A) ->
                                                     A#{Q => maps:get(Q, A, 0) + 1};
                                                (_, A) -> A
                                             end, maps:from_list([{Q, 0} || Q <- Queues]), Specs),
                        case lists:usort(maps:values(Counts)) of
                            [K] when K > 0 -> K;
                            _ -> undefined
                        end;
                    false -> undefined
                end,
    {maps:to_list(Grouped), split(Cfg, Specs), PerStream}.

consumer_specs(Cfg, Common, NodeAt, QAt, NQ) ->
    Exclusive = maps:get(exclusive, Cfg),
    Slow = maps:get(slow_start, Cfg),
    Delay = maps:get(consumer_start_delay, Cfg) * 1000,
    Args = beamlab_amqp_topology:table(
             maps:get(consumer_args, Cfg)
             ++ [{<<"x-stream-offset">>, O} || O <- [maps:get(stream_offset, Cfg)], O =/= undefined]),
    Channels = maps:get(consumer_channels, Cfg),
    [{NodeAt(I), consumers,
      Common#{queue => QAt(I),
              %% Exclusive queues belong to a connection: a queue's
              %% consumers share one.
              group => case Exclusive of true -> {c, I rem NQ}; false -> {c, I} end,
              exclusive => case Exclusive of
                               true -> beamlab_amqp_topology:queue_spec(Cfg, QAt(I));
                               false -> none
                           end,
              prefetch => maps:get(prefetch, Cfg), global_qos => maps:get(global_qos, Cfg),
              autoack => maps:get(autoack, Cfg), multi_ack => maps:get(multi_ack, Cfg),
              nack => maps:get(nack, Cfg), requeue => maps:get(requeue, Cfg),
              args => Args, count => maps:get(cmessages, Cfg), tx => maps:get(consumer_tx, Cfg),
              rate => maps:get(consumer_rate, Cfg),
              latency => case maps:get(variable_latency, Cfg) of
                             undefined -> {fixed, maps:get(consumer_latency, Cfg)};
                             Steps -> {variable, Steps}
                         end,
              %% PerfTest's slow start: one consumer channel a second.
              start_delay_ms => Delay + case Slow of
                                            true -> (I * Channels + J) * 1000;
                                            false -> 0
                                        end,
              exit_when => maps:get(exit_when, Cfg),
              polling => case maps:get(polling, Cfg) of
                             true -> {true, maps:get(polling_interval, Cfg)};
                             false -> false
                         end,
              stamp => case maps:get(body, Cfg) of stamp -> body; _ -> header end}}
     || I <- lists:seq(0, maps:get(consumers, Cfg) - 1), J <- lists:seq(0, Channels - 1)].

producer_specs(Cfg, Common, NodeAt, QAt) ->
    Schedule = case {maps:get(variable_rate, Cfg), maps:get(publishing_interval, Cfg),
                     maps:get(rate, Cfg)} of
                   {[_ | _] = RateSteps, _, _} -> {variable, RateSteps};
                   {_, P, _} when is_float(P) -> {rate, 1 / P};
                   {_, _, R} -> {rate, R}
               end,
    %% PerfTest: producers with a rate start within a random second unless
    %% -prsd says otherwise; with --slow-start (and no consumer delay)
    %% they start once every consumer has.
    Random = case {maps:get(producer_start_delay, Cfg), Schedule} of
                 {undefined, {rate, infinity}} -> 0;
                 {undefined, _} -> 1;
                 {S, _} -> S
             end,
    AfterConsumers = case maps:get(slow_start, Cfg) andalso maps:get(consumer_start_delay, Cfg) =:= 0 of
                         true -> beamlab_amqp_config:consumer_channels(Cfg) * 1000;
                         false -> 0
                     end,
    Keys = case {maps:get(random_routing_key, Cfg), maps:get(routing_key_cache, Cfg)} of
               {_, N} when N > 0 -> {cache, N};
               {true, 0} -> random;
               {false, 0} -> fixed
           end,
    [{NodeAt(I), producers,
      Common#{exchange => maps:get(exchange, Cfg), key => producer_key(Cfg, QAt(I)), keys => Keys,
              group => {p, I}, mandatory => maps:get(mandatory, Cfg), props => props(Cfg),
              confirm => maps:get(confirm, Cfg), confirm_timeout => maps:get(confirm_timeout, Cfg),
              schedule => Schedule,
              late_us => case {maps:get(publishing_interval, Cfg), Schedule} of
                             {Every, {rate, _}} when is_float(Every) -> max(1, round(Every * 1000000));
                             _ -> undefined
                         end,
              start_delay_ms => AfterConsumers + case Random of
                                                     0 -> 0;
                                                     _ -> rand:uniform(Random * 1000)
                                                 end,
              count => maps:get(pmessages, Cfg), tx => maps:get(producer_tx, Cfg),
              body => case maps:get(body, Cfg) of
                          stamp -> stamp;
                          {files, _, _} -> files;
                          {json, _, _} -> json
                      end,
              size => case maps:get(variable_size, Cfg) of
                          undefined -> {fixed, maps:get(body_size, Cfg)};
                          Steps -> {variable, Steps}
                      end}}
     || I <- lists:seq(0, maps:get(producers, Cfg) - 1),
        _ <- lists:seq(1, maps:get(producer_channels, Cfg))].

%% PerfTest's properties: persistent, the bodies' content type, then
%% --message-properties (which may override both; headers merged).
props(Cfg) ->
    Base = maps:merge(case maps:get(persistent, Cfg) of
                          true -> #{delivery_mode => 2};
                          false -> #{}
                      end,
                      case maps:get(body, Cfg) of
                          {files, _, Type} when is_binary(Type) -> #{content_type => Type};
                          {json, _, _} -> #{content_type => <<"application/json">>};
                          _ -> #{}
                      end),
    maps:merge(Base, maps:get(message_properties, Cfg)).

bodies(Cfg) ->
    case maps:get(body, Cfg) of
        stamp -> {};
        {files, Files, _} -> list_to_tuple(Files);
        {json, Fields, Count} ->
            list_to_tuple(beamlab_amqp_perftest:json_bodies(maps:get(body_size, Cfg), Fields, Count))
    end.

sizes(Cfg) ->
    [maps:get(body_size, Cfg) | case maps:get(variable_size, Cfg) of
                                    undefined -> [];
                                    Steps -> [S || {S, _} <- Steps]
                                end].

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
        orelse maps:get(random_routing_key, Cfg)
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

measure(#run{cfg = Cfg, t0 = T0} = R, Metrics) ->
    Interval = round(maps:get(interval, Cfg) * 1000),
    En = beamlab_amqp_config:enabled(Cfg),
    tick_loop(R#run{enabled = En, live = beamlab_amqp_live:new(Cfg, En, T0, Metrics),
                    timer = schedule_tick(T0, Interval, 1)}).

%% Ticks at absolute times T0 + K * Interval, so that lines do not drift.
%% The timer's millisecond is T0's rounded up (convert_time_unit/3 rounds
%% down): a tick never comes before its time, so the first line reads
%% `time 1.000 s', as PerfTest's, not 0.999.
schedule_tick(T0, Interval, K) ->
    At = erlang:convert_time_unit(T0 + 999, microsecond, millisecond) + K * Interval,
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
                {agent_conn, A, Conn} ->
                    tick_loop(add_conn(A, Conn, R));
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
            after to_time_limit(R) ->
                tick_loop(R)
            end;
        Why ->
            finish(Why, last_interval(R))
    end.

%% A sample waits for the agents at most half an interval: a frozen node
%% must not hold the lines of the others.
sample_ms(#run{cfg = #{interval := I}}) ->
    max(100, min(5000, round(I * 500))).

interval(R) ->
    {L, Missing} = beamlab_amqp_live:interval(maps:keys(R#run.agents), sample_ms(R), R#run.live),
    silent(Missing, R#run{live = L}).

last_interval(R) ->
    {L, Missing} = beamlab_amqp_live:last_interval(maps:keys(R#run.agents), sample_ms(R), R#run.live),
    silent(Missing, R#run{live = L}).

%% The agents that answered are seen now; one silent for too long is gone.
silent(Missing, #run{agents = Agents, cfg = #{interval := I}} = R) ->
    Now = erlang:monotonic_time(millisecond),
    Limit = max(?SILENT_MS, round(2 * I * 1000)),
    Seen = maps:map(fun(A, Ag) ->
                            case lists:member(A, Missing) of
                                true -> Ag;
                                false -> Ag#agent{seen = Now}
                            end
                    end, Agents),
    lists:foldl(fun(A, Acc) ->
                        #agent{seen = S} = maps:get(A, Seen),
                        case Now - S > Limit of
                            true ->
                                lose(A, {not_answering, (Now - S) div 1000}, Acc);
                            false -> Acc
                        end
                end, R#run{agents = Seen}, Missing).

%% A node went away: named in the report, its share so far kept, the run
%% goes on with the others (and ends with a failure exit code).
lose(A, Reason, R) ->
    #agent{node = Node, mon = Mon} = maps:get(A, R#run.agents),
    give_up(A, R),
    demonitor(Mon, [flush]),
    R#run{agents = maps:remove(A, R#run.agents),
          live = beamlab_amqp_live:lose(Node, Reason, R#run.live)}.

add_conn(A, Conn, #run{agents = Agents} = R) ->
    case Agents of
        #{A := Ag} -> R#run{agents = Agents#{A := Ag#agent{conns = [Conn | Ag#agent.conns]}}};
        _ -> R
    end.

%% An agent given up (silent, dead, or the run could not start) is killed
%% and its connections on this node are aborted at once (killed, socket
%% reset): the agent can no longer close them, and one blocked writing to a
%% broker that stopped reading would otherwise hold this VM's exit (halt
%% waits for unsent data). A remote agent's connections go with its node.
give_up(A, #run{agents = Agents}) ->
    exit(A, kill),
    Known = case Agents of
                #{A := #agent{conns = Cs}} -> Cs;
                _ -> []
            end,
    Conns = Known ++ late_conns(A),
    ok = beamlab_amqp:close_all([C || C <- Conns, node(C) =:= node()], 0).

%% An agent that sent its final counts closes its connections (bounded:
%% it aborts those that do not close within ?CLOSE_MS) and exits. Wait for
%% that, so that nothing is left to hold this VM's exit; one still there
%% after the bound (and a margin) is given up.
closed(Agents, R) ->
    Deadline = erlang:monotonic_time(millisecond) + ?CLOSE_MS + ?END_OP_MS,
    lists:foreach(
      fun(A) ->
              Mon = monitor(process, A),
              receive {'DOWN', Mon, process, A, _} -> ok
              after left(Deadline) ->
                      demonitor(Mon, [flush]),
                      give_up(A, R)
              end
      end, Agents).

%% Connections the agent reported that the coordinator has not read yet.
late_conns(A) ->
    receive {agent_conn, A, C} -> [C | late_conns(A)]
    after 0 -> []
    end.

stop_reason(#run{failure = F}) when F =/= undefined -> failed;
stop_reason(#run{agents = As}) when map_size(As) =:= 0 -> failed;
stop_reason(#run{interrupted = true}) -> interrupted;
stop_reason(#run{cfg = Cfg, t0 = T0} = R) ->
    Elapsed = erlang:monotonic_time(microsecond) - T0,
    case maps:get(duration, Cfg) of
        D when is_number(D), Elapsed >= D * 1000000 -> time_limit;
        _ -> counts_reached(R)
    end.

%% Milliseconds until -z's end (rounded up), or `infinity': every other
%% reason to stop comes as a message, so the loop sleeps until then
%% instead of polling (#33: a poll every 100 ms woke a scheduler ten times
%% a second for nothing).
to_time_limit(#run{cfg = Cfg, t0 = T0}) ->
    case maps:get(duration, Cfg) of
        D when is_number(D) ->
            Left = ceil(D * 1000000) - (erlang:monotonic_time(microsecond) - T0),
            max(0, (Left + 999) div 1000);
        _ ->
            infinity
    end.

%% -C: every producer has published its count; -D or --exit-when: every
%% consumer has received its count or ended. Both given: both must hold.
counts_reached(#run{cfg = #{closed_loop := L}}) when L > 0 ->
    continue;
counts_reached(#run{cfg = Cfg, done_p = DP, done_c = DC}) ->
    P = maps:get(pmessages, Cfg) > 0,
    C = maps:get(cmessages, Cfg) > 0 orelse maps:get(exit_when, Cfg) =/= never,
    PDone = P andalso DP >= beamlab_amqp_config:producer_channels(Cfg),
    CDone = C andalso DC >= beamlab_amqp_config:consumer_channels(Cfg),
    case {P, C} of
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
    Names = [Q || {Q, _, Kind} <- maps:get(queues, Topo), Kind =/= exclusive],
    Target = R#run.target,
    Pid = spawn_link(fun() -> beamlab_amqp_setup:redeclare(Self, {Target, Cfg}, Names) end),
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

%% Stop producers, let consumers drain, stop consumers, collect totals,
%% all before the end's deadline (--shutdown-timeout): an agent that has
%% not answered by then is given up, its last counts kept.
finish(Why, #run{t0 = T0, timer = Timer, cfg = Cfg} = R00) ->
    _ = erlang:cancel_timer(Timer),
    R0 = stop_redeclarer(R00),
    ElapsedUs = erlang:monotonic_time(microsecond) - T0,
    End = erlang:monotonic_time(millisecond) + round(maps:get(shutdown_timeout, Cfg) * 1000),
    Agents = maps:keys(R0#run.agents),
    %% The averages cover the measured window only: what is received while
    %% draining after the stop counts in the accounting, not in the rates.
    AtStop = beamlab_amqp_live:at_stop(case R0#run.failure of
                                           undefined -> Agents;
                                           _ -> none
                                       end, min(sample_ms(R0), left(End)), R0#run.live),
    _ = [A ! stop_producers || A <- Agents],
    R1 = await_all(Agents, producers_stopped, End, R0),
    %% Closed-loop channels publish until told to stop: no drain for them
    %% (their message in flight stays queued and is accounted as such).
    R2 = case maps:get(closed_loop, Cfg) > 0 of
             true -> R1;
             false -> drain(R1, min(End, erlang:monotonic_time(millisecond) + ?DRAIN_MAX_MS),
                            undefined, erlang:monotonic_time(millisecond))
         end,
    Live = maps:keys(R2#run.agents),
    _ = [A ! stop_consumers || A <- Live],
    {Finals, R3} = collect_finals(Live, [], End, R2),
    %% Agents without a final count by now: given up, their last counts
    %% kept (the accounting says it is approximate).
    Silent = [A || A <- Live, not lists:keymember(A, 1, Finals)],
    _ = [give_up(A, R3) || A <- Silent],
    %% The depth is read while the agents still hold their producers'
    %% connections open, then they close them: a broker busy closing
    %% thousands of connections (-x 15000) would answer the read too
    %% late (#33).
    {Totals, L3} = beamlab_amqp_live:totals(Finals, [node(A) || A <- Silent], R3#run.live),
    {Queued, R4} = depth(Finals, Silent, maps:get(counters, Totals), R3#run{live = L3}),
    _ = [A ! close_connections || {A, _} <- Finals],
    closed([A || {A, _} <- Finals], R4),
    _ = Silent =/= [] andalso
        beamlab_amqp_live:write(R3#run.live,
                                [<<"id: ">>, maps:get(id, Cfg), <<", the end of the run took longer than "
                                 "the shutdown timeout (">>, float_to_binary(float(maps:get(shutdown_timeout, Cfg)),
                                                                            [{decimals, 1}, compact]),
                                 <<" s, -st): the last counts of ">>,
                                 lists:join(<<", ">>, [atom_to_binary(node(A)) || A <- Silent]),
                                 <<" stand for their final ones\n">>]),

    %% The clocks again, after the run: the drift widens the uncertainty.
    After = beamlab_runtime_clock:offsets([N || {A, #agent{node = N}} <- maps:to_list(R4#run.agents),
                                                not lists:member(A, Silent)]),
    Clock = maps:map(fun(N, B) -> beamlab_runtime_clock:combine(B, maps:get(N, After, undefined)) end,
                     R4#run.clock_before),
    Memory = [memory(maps:get(memory, F)) || {_, F} <- lists:sort(Finals)],
    {report(Why, ElapsedUs, AtStop, Totals, Queued, Clock, Silent =/= [], Memory, R4), R4#run.conn}.

%% A node's memory per connection: the VM's growth from before its workers
%% started to the stop, over its connections (the VM's fixed footprint
%% cancels out).
memory(#{before := B, running := M, connections := N} = Mem) ->
    Mem#{per_connection => case N of
                               0 -> undefined;
                               _ -> max(0, M - B) div N
                           end}.

%% -P or --connection-rate (many slow connections): how many publishes
%% were late, and what each connection cost.
iot_lines(#{publishing_interval := P, connection_rate := CR, id := Id}, C, Memory)
  when is_float(P); is_integer(CR) ->
    Pfx = [<<"id: ">>, Id, <<", ">>],
    [[[Pfx, <<"publishes more than one interval (">>, float_to_binary(P, [{decimals, 3}, compact]),
       <<" s) late: ">>, integer_to_binary(maps:get(late, C, 0)), <<" of ">>,
       integer_to_binary(maps:get(sent, C)), <<"\n">>] || is_float(P)],
     [[Pfx, <<"memory on ">>, atom_to_binary(N), <<": ">>, integer_to_binary(Conns),
       <<" connections, VM ">>, mib(B), <<" MiB before them, ">>, mib(M), <<" MiB with them open = ">>,
       integer_to_binary(round(Per / 1024)), <<" KiB per connection\n">>]
      || #{node := N, before := B, running := M, connections := Conns, per_connection := Per} <- Memory,
         is_integer(Per)]];
iot_lines(_Cfg, _C, _Memory) ->
    [].

mib(Bytes) ->
    float_to_binary(Bytes / 1048576, [{decimals, 1}]).


left(End) ->
    max(0, End - erlang:monotonic_time(millisecond)).

await_all([], _Tag, _End, R) ->
    R;
await_all(Pending, Tag, End, R) ->
    receive
        {Tag, A} -> await_all(lists:delete(A, Pending), Tag, End, R);
        {agent_failure, _A, Reason} -> await_all(Pending, Tag, End, keep_failure(Reason, R));
        {'DOWN', _, process, A, Reason} when is_map_key(A, R#run.agents) ->
            await_all(lists:delete(A, Pending), Tag, End, lose(A, Reason, R))
    after left(End) ->
        R
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
            #{counters := C} = beamlab_amqp_live:sample(maps:keys(R#run.agents),
                                                        min(sample_ms(R), Deadline - Now)),
            #{sent := S, received := Rcv, requeued := Req, returned := Ret, nacked := N} = C,
            %% A stream's consumers each read everything stored in it.
            Settled = case {maps:get(stream, R#run.topo), R#run.per_stream} of
                          {true, K} when is_integer(K) -> Rcv >= K * (S - Ret - N);
                          _ -> Rcv - Req + Ret + N >= S
                      end,
            Quiet = Rcv =:= Prev andalso Now - Since >= ?DRAIN_QUIET_MS,
            case Settled orelse Quiet of
                true -> R;
                false ->
                    receive after 50 -> ok end,
                    Since1 = case Rcv =:= Prev of true -> Since; false -> Now end,
                    drain(R, Deadline, Rcv, Since1)
            end
    end.

collect_finals([], Acc, _End, R) ->
    {Acc, R};
collect_finals(Pending, Acc, End, R) ->
    receive
        {final, A, F} -> collect_finals(lists:delete(A, Pending), [{A, F} | Acc], End, R);
        {agent_failure, _A, Reason} -> collect_finals(Pending, Acc, End, keep_failure(Reason, R));
        {'DOWN', _, process, A, Reason} when is_map_key(A, R#run.agents) ->
            case lists:member(A, Pending) of
                true -> collect_finals(lists:delete(A, Pending), Acc, End, lose(A, Reason, R));
                false -> collect_finals(Pending, Acc, End, R)
            end
    after left(End) ->
        {Acc, R}
    end.

%% The queues' depth, on a fresh setup connection if the broker closed
%% ours; `undefined' when the broker does not answer in time, and for
%% streams (which keep what is read). Exclusive queues: what their agents
%% read before closing their connections.
depth(Finals, Silent, Counts, #run{conn = Conn, target = Target, topo = Topo, cfg = Cfg} = R) ->
    %% The broker has just closed the run's channels: with thousands of
    %% them the queue is busy for a while before it answers (-x 15000 on
    %% the 2-core machine, loaded: 53 s, #33), so the read may wait
    %% ?END_OP_PER_CONN_MS more per connection.
    Ms = ?END_OP_MS + ?END_OP_PER_CONN_MS * (maps:get(producers, Cfg) + maps:get(consumers, Cfg)),
    Exclusive = [Q || {Q, _, exclusive} <- maps:get(queues, Topo)],
    ExclQueued = case {Exclusive, Silent} of
                     {[], _} -> 0;
                     {_, [_ | _]} -> undefined;
                     _ -> sum_defined([maps:get(exclusive_queued, F) || {_, F} <- Finals])
                 end,
    %% What the queues should hold if nothing is missing. Deliveries a
    %% consumer had not acked when its connection closed go back to the
    %% queue while the broker closes it: the depth is read again until it
    %% balances, or stops changing, within the bound.
    Want = case ExclQueued of
               undefined -> undefined;
               _ -> #{sent := S, received := Rcv, returned := Ret, nacked := N} = Counts,
                    S - (Rcv - maps:get(requeued, Counts, 0)) - Ret - N - ExclQueued
           end,
    Until = erlang:monotonic_time(millisecond) + Ms,
    {Queued, Live} = settled_depth(Conn, Target, Topo, Want, Until, undefined),
    {sum_defined([Queued, ExclQueued]), R#run{conn = Live}}.

%% Each read is bounded by the time left; a read that does not answer in
%% it leaves the last value read (or undefined).
settled_depth(Conn, Target, Topo, Want, Until, Prev) ->
    Left = Until - erlang:monotonic_time(millisecond),
    {D, Live} = beamlab_amqp_setup:op(Conn, Target, fun(C) -> beamlab_amqp_topology:depth(C, Topo) end,
                                      undefined, max(0, Left)),
    case D of
        Want -> {D, Live};
        undefined -> {Prev, Live};
        Prev -> {D, Live};
        _ ->
            case erlang:monotonic_time(millisecond) + ?DEPTH_RETRY_MS < Until of
                true ->
                    receive after ?DEPTH_RETRY_MS -> ok end,
                    settled_depth(Live, Target, Topo, Want, Until, D);
                false ->
                    {D, Live}
            end
    end.

sum_defined(L) ->
    case lists:member(undefined, L) of
        true -> undefined;
        false -> lists:sum(L)
    end.

report(Why, ElapsedUs, AtStop, Totals, Queued, Clock, CutShort, Memory, R0) ->
    R = write_csv(R0),
    #run{cfg = Cfg, enabled = En, live = L} = R,
    C = maps:get(counters, Totals),
    Secs = max(ElapsedUs, 1) / 1000000,
    Cons = beamlab_amqp_report:latency(maps:get(consumer, Totals)),
    Conf = beamlab_amqp_report:latency(maps:get(confirm, Totals)),
    Acc0 = case maps:get(stream, R#run.topo) of
               true -> beamlab_amqp_report:accounting(C, undefined, #{stream => R#run.per_stream});
               false -> beamlab_amqp_report:accounting(C, Queued)
           end,
    Acc = Acc0#{lost_queues => lists:usort(lists:append([Qs || {_, Qs} <- R#run.lost_queues])),
                lost_at_s => lists:reverse([round(T * 1000) / 1000 || {T, _} <- R#run.lost_queues]),
                cut_short => CutShort,
                approximate => maps:get(approximate, Acc0) orelse CutShort},
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
    _ = case iot_lines(Cfg, C, Memory) of
            [] -> ok;
            Lines -> beamlab_amqp_live:write(L, Lines)
        end,
    {ok, #{id => maps:get(id, Cfg), stop => Why, elapsed_us => ElapsedUs, counters => C,
           started_ms => case R#run.t0 of undefined -> undefined; T0 -> T0 div 1000 end,
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
           queues => [Q || {Q, _, _} <- maps:get(queues, R#run.topo)],
           memory => Memory}}.

%% --output-file: PerfTest's CSV, written whole when the run ends (also
%% for a run that was interrupted or failed: what was measured), under
%% the output-path policy (atomic for a file, in place for a stream).
write_csv(#run{cfg = #{output_file := undefined}} = R) ->
    R;
write_csv(#run{cfg = #{output_file := File}, live = L} = R) ->
    case beamlab_runtime_file:write(unicode:characters_to_list(File), beamlab_amqp_live:csv(L)) of
        {ok, _} -> R;
        {error, Reason} -> keep_failure({output_file, File, Reason}, R)
    end.

%%%-------------------------------------------------------------------
%%% Errors
%%%-------------------------------------------------------------------

%% @doc One line for every error `run/1' returns or a report carries.
-spec format_error(failure()) -> iolist().
format_error(Reason) ->
    beamlab_format_reason:line(fun error_line/1, Reason).

error_line({uri, R}) ->
    ["malformed URI: ", beamlab_amqp_uri:format_error(R)];
error_line({Kind, _, _} = E) when Kind =:= declare_queue; Kind =:= declare_exchange;
                                    Kind =:= bind ->
    beamlab_amqp_topology:format_error(E);
error_line({Kind, _} = E) when Kind =:= nodes_unreachable; Kind =:= load_code; Kind =:= peer ->
    beamlab_amqp_nodes:format_error(E);
error_line(interrupted) ->
    "interrupted";
error_line({connection_lost, Code, Text}) when is_integer(Code) ->
    io_lib:format("broker closed the connection: ~b ~ts", [Code, Text]);
error_line({connection_lost, _Code, Text}) ->
    io_lib:format("~ts", [Text]);
error_line({queue_lost, Q}) ->
    io_lib:format("the broker lost queue ~ts (restarted?) and -p forbids declaring it again;"
                  " declare it durable, or drop -p", [Q]);
error_line({redeclare, R}) ->
    ["cannot declare the run's topology again after reconnecting: ", format_error(R)];
error_line({consumer_cancelled, Q}) ->
    io_lib:format("the broker cancelled the consumer of queue ~ts (queue deleted?)", [Q]);
error_line({confirm_timeout, Secs}) ->
    io_lib:format("a producer waited ~b s for publisher confirms (--confirm-timeout): the broker "
                  "stopped confirming", [Secs]);
error_line({nodes_lost, Lost}) ->
    io_lib:format("node(s) went away during the run: ~ts (the other nodes' data is kept)",
                  [lists:join(", ", [io_lib:format("~s (~ts)", [N, lost_reason(R)]) || {N, R} <- Lost])]);
error_line({agent_down, Node, Reason}) ->
    io_lib:format("load generator on node ~s stopped: ~0p", [Node, Reason]);
error_line({timeout, What}) when is_list(What) ->
    io_lib:format("no answer from node(s) ~ts at the end of the run (their last counts are kept)",
                  [lists:join(", ", [atom_to_list(N) || N <- What])]);
error_line({timeout, What}) ->
    io_lib:format("timed out (~0p)", [What]);
error_line({output_file, File, Reason}) ->
    io_lib:format("cannot write --output-file ~ts: ~ts", [File, file_error(Reason)]);
error_line({worker_crashed, R}) ->
    io_lib:format("a load generator process crashed: ~0p", [R]);
error_line(R) ->
    beamlab_amqp:format_error(R).

lost_reason({not_answering, Secs}) -> io_lib:format("no answer for ~b s", [Secs]);
lost_reason(R) -> io_lib:format("~0p", [R]).

file_error(R) -> beamlab_runtime_file:format_error(R).
