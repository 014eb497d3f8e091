%%% @doc The load generator's per-node agent: one process on every node
%%% taking part in a run (the local one, started peers, or named nodes).
%%%
%%% It owns the node's AMQP connections (one per producer, consumer, or
%%% group of closed-loop channels, reopened on request with `--reconnect'),
%%% the node's `counters' array and latency histograms shared by its
%%% workers, and answers the coordinator (`beamlab_amqp_perf') with counter
%%% values and histogram snapshots, which are plain terms that cross nodes.
%%% Each sample takes what the workers' histograms recorded since the last
%%% one; the run's totals are the merge of the takes.
-module(beamlab_amqp_agent).

-include("beamlab_amqp_perf.hrl").

-export([start/3, new_hist/0, hist_options/0, hist_max/0]).

-export_type([plan/0, counts/0, sample/0, final/0, memory/0]).

%% What the coordinator gives an agent: the broker, the test id (in
%% connection names), this node's clock offset and the workers to run.
%% `uris': the broker's nodes (each connection tries them in a random
%% order); `bodies': prepared bodies; `sizes': every body size used.
-type plan() :: #{uris := [beamlab_amqp:params(), ...], conn_opts := beamlab_amqp:connect_opts(),
                  id := binary(),
                  clock_offset_us => integer(),
                  %% --connection-rate: new connections per second at most.
                  connection_rate => pos_integer() | infinity,
                  bodies := tuple(), sizes := [non_neg_integer()],
                  producers => [beamlab_amqp_worker:producer_spec()],
                  consumers => [beamlab_amqp_worker:consumer_spec()],
                  loops => [beamlab_amqp_worker:loop_spec()]}.
%% The node's counters so far.
-type counts() :: #{reconnects := non_neg_integer(), sent := non_neg_integer(),
                    returned := non_neg_integer(), confirmed := non_neg_integer(),
                    nacked := non_neg_integer(), received := non_neg_integer(),
                    requeued := non_neg_integer(), late := non_neg_integer(),
                    direct_reads := non_neg_integer()}.
%% One interval: the counters, the interval's latency histograms, and how
%% many workers have finished their -C/-D counts.
-type sample() :: #{counters := counts(),
                    consumer := beamlab_stats_hist:snapshot(),
                    confirm := beamlab_stats_hist:snapshot(),
                    producers_done := non_neg_integer(),
                    consumers_done := non_neg_integer()}.
%% The node's totals at the end of the run, and the messages left in its
%% consumers' exclusive queues (gone with their connections).
-type final() :: #{counters := counts(),
                   consumer := beamlab_stats_hist:snapshot(),
                   confirm := beamlab_stats_hist:snapshot(),
                   exclusive_queued := non_neg_integer() | undefined,
                   memory := memory()}.
%% The node's VM memory (erlang:memory(total), bytes) before its workers
%% started and when the producers were told to stop (every connection
%% open, in steady state), and the connections open then.
-type memory() :: #{node := node(), before := non_neg_integer(), running := non_neg_integer(),
                    connections := non_neg_integer()}.

%% Internal entry point (spawned, possibly on another node).
-export([init/2]).

%% Takes of the latency histograms merged into the totals at once.
-define(MERGE_TAKES, 16).
-define(HIST_MAX_US, 3600000000).    % one hour; larger latencies clamp, counted as overflow
%% At most this long with the connections open after the final counts,
%% waiting for the coordinator's depth read (see await_close/1).
-define(HOLD_MS, 120000).

-record(st, {coord :: pid(),
             plan :: plan(),
             ctx :: beamlab_amqp_worker:ctx(),
             ctx_key :: beamlab_runtime_shared:key(),
             conns = #{} :: #{beamlab_amqp_worker:group() => beamlab_amqp:conn()},
             %% Sets (15,000 producers: removing each exit from a list
             %% took the agent seconds at the end, #33).
             producers = #{} :: #{pid() => true},
             consumers = #{} :: #{pid() => true},   % consumers and loop workers
             pending = #{} :: #{pid() => true},     % started, not yet ready
             done_p = 0 :: non_neg_integer(),
             done_c = 0 :: non_neg_integer(),
             %% How many producers, and consumers and loop workers, started.
             n_p = 0 :: non_neg_integer(),
             n_c = 0 :: non_neg_integer(),
             reconnects = 0 :: non_neg_integer(),
             opened = #{} :: #{beamlab_amqp_worker:group() => true},   % groups ever connected
             %% Connections being opened, and the workers waiting for them.
             connecting = #{} :: #{beamlab_amqp_worker:group() => [{pid(), reference()}]},
             %% --connection-rate: when (monotonic µs) the next connection
             %% may be opened.
             next_conn_us :: integer() | undefined,
             phase = starting :: starting | running | stopping_p | stopping_c,
             %% The run's latency totals: the sum of every take of the
             %% workers' histograms (consumer, confirm), but the takes
             %% not merged yet (newest first, their number).
             totals :: {beamlab_stats_hist:snapshot(), beamlab_stats_hist:snapshot()},
             takes = {[], [], 0} :: {[beamlab_stats_hist:snapshot()], [beamlab_stats_hist:snapshot()],
                                       non_neg_integer()},
             memory :: memory()}).

%% @doc Starts an agent on `Node' for coordinator `Coord' with `Plan'
%% (`uri', `producers', `consumers', `loops': lists of worker specs). The
%% agent sends `{agent_ready, Pid}' or `{agent_error, Pid, Reason}'. Not
%% linked: the coordinator monitors the agent, the agent monitors the
%% coordinator and stops its workers when the coordinator is gone.
-spec start(node(), pid(), plan()) -> pid().
start(Node, Coord, Plan) ->
    proc_lib:spawn(Node, ?MODULE, init, [Coord, Plan]).

%% @doc A latency histogram as used by every node of a run: microseconds,
%% 3 significant digits.
-spec new_hist() -> beamlab_stats_hist:hist().
new_hist() ->
    beamlab_stats_hist:new(hist_options()).

%% @doc The options of the latency histograms (also for an empty snapshot
%% of their shape, beamlab_stats_hist:empty/1).
-spec hist_options() -> beamlab_stats_hist:options().
hist_options() ->
    #{significant_digits => 3, max => ?HIST_MAX_US}.

%% @doc The largest latency (microseconds) recorded without clamping.
-spec hist_max() -> pos_integer().
hist_max() -> ?HIST_MAX_US.

%% @private
-spec init(pid(), plan()) -> no_return().
init(Coord, Plan) ->
    process_flag(trap_exit, true),
    _ = monitor(process, Coord),
    Ctx = #{agent => self(),
            counters => counters:new(?C_SIZE, [write_concurrency]),
            cons_hists => new_hist(),
            conf_hists => new_hist(),
            %% This node's clock minus the coordinator's (microseconds):
            %% producers stamp and consumers read bodies in the
            %% coordinator's time, so a message produced on one node and
            %% consumed on another compares one clock (issue 13).
            clock_offset => maps:get(clock_offset_us, Plan, 0),
            bodies => maps:get(bodies, Plan),
            %% One padding per body size, shared by every producer.
            pads => maps:from_list([{Size, binary:copy(<<0>>, Size - ?BODY_MIN)}
                                    || Size <- lists:usort([max(?BODY_MIN, S)
                                                            || S <- maps:get(sizes, Plan)])])},
    CtxKey = beamlab_runtime_shared:share(Ctx),
    Empty = beamlab_stats_hist:snapshot(new_hist()),
    St0 = #st{coord = Coord, plan = Plan, ctx = Ctx, ctx_key = CtxKey, totals = {Empty, Empty},
              memory = #{node => node(), before => erlang:memory(total), running => 0, connections => 0}},
    %% Consumers first: they must be subscribed before anything is published.
    Cons = [beamlab_amqp_consumer:start_link(CtxKey, S) || S <- maps:get(consumers, Plan, [])]
        ++ [beamlab_amqp_loop:start_link(CtxKey, S) || S <- maps:get(loops, Plan, [])],
    Prods = [beamlab_amqp_producer:start_link(CtxKey, S) || S <- maps:get(producers, Plan, [])],
    loop(St0#st{consumers = maps:from_keys(Cons, true), producers = maps:from_keys(Prods, true),
                n_c = length(Cons), n_p = length(Prods),
                pending = maps:from_keys(Cons ++ Prods, true)}).

loop(St) ->
    receive Msg -> loop(handle(Msg, St)) end.

handle({Pid, ready}, #st{pending = P} = St) ->
    ready_check(St#st{pending = maps:remove(Pid, P)});
handle({Pid, {error, Reason}}, #st{coord = C} = St) when is_pid(Pid) ->
    C ! {agent_error, self(), Reason},
    shutdown(St);
handle({connection, From, Ref, Group}, St) ->
    get_connection(Group, From, Ref, St);
handle({connected, Group, Result}, St) ->
    connected(Group, Result, St);
handle({go, StartUs}, St) ->
    _ = [W ! {go, StartUs} || W <- workers(St)],
    St#st{phase = running};
handle({sample, From, Ref}, St0) ->
    {{Cons, Conf}, St} = take(St0),
    From ! {sample, Ref, self(), #{counters => counts(St),
                                   consumer => Cons,
                                   confirm => Conf,
                                   producers_done => St#st.done_p,
                                   consumers_done => St#st.done_c}},
    St;
handle(stop_producers, #st{ctx = #{counters := C}, memory = M} = St0) ->
    St = St0#st{memory = M#{running := erlang:memory(total), connections := map_size(St0#st.conns)}},
    counters:put(C, ?C_STOPPING, 1),
    _ = [P ! stop || P <- maps:keys(St#st.producers)],
    maybe_stopped(St#st{phase = stopping_p});
handle(stop_consumers, St) ->
    _ = [W ! stop || W <- maps:keys(St#st.consumers)],
    maybe_stopped(St#st{phase = stopping_c});
handle({'DOWN', _, process, Coord, _}, #st{coord = Coord} = St) ->
    shutdown(St);
handle({'EXIT', Pid, Reason}, St) ->
    worker_exit(Pid, Reason, St);
handle({amqp_closed, Conn, _Code, _Text}, #st{conns = Cs} = St) when is_pid(Conn) ->
    St#st{conns = maps:filter(fun(_, C) -> C =/= Conn end, Cs)};
handle(_Other, St) ->
    St.

ready_check(#st{pending = P, coord = C} = St) when map_size(P) =:= 0 ->
    C ! {agent_ready, self()},
    St;
ready_check(St) ->
    St.

%% A live connection for the group, or one being opened for it: the
%% agent never waits for a broker itself (a connection attempt to a
%% broker that does not answer would otherwise stop it from answering the
%% coordinator); a helper connects and the askers get its result.
get_connection(Group, From, Ref, #st{conns = Cs, connecting = Ing} = St) ->
    Live = case maps:find(Group, Cs) of
               {ok, Conn} -> is_process_alive(Conn) andalso {ok, Conn};
               error -> false
           end,
    case {Live, Ing} of
        {{ok, C}, _} ->
            From ! {Ref, {ok, C}},
            St;
        {false, #{Group := Waiting}} ->
            St#st{connecting = Ing#{Group => [{From, Ref} | Waiting]}};
        {false, _} ->
            Self = self(),
            #st{plan = Plan} = St,
            Name = iolist_to_binary(["beamlab amqp ", maps:get(id, Plan, <<>>), " ", group_name(Group)]),
            Opts = (maps:get(conn_opts, Plan))#{name => Name, owner => Self},
            Uris = shuffle(maps:get(uris, Plan)),
            {DelayMs, Next} = conn_slot(maps:get(connection_rate, Plan, infinity), St#st.next_conn_us),
            _ = spawn_link(fun() ->
                                   timer:sleep(DelayMs),
                                   Self ! {connected, Group, connect_any(Uris, Opts)}
                           end),
            St#st{conns = maps:remove(Group, Cs), connecting = Ing#{Group => [{From, Ref}]},
                  next_conn_us = Next}
    end.

%% --connection-rate: the connections are opened one every 1/Rate s (their
%% helpers wait for their slot), so that thousands of them do not storm
%% the broker (each costs it a process tree and a TLS or SASL handshake).
conn_slot(infinity, Next) ->
    {0, Next};
conn_slot(Rate, Next) ->
    Now = erlang:monotonic_time(microsecond),
    Slot = case Next of
               undefined -> Now;
               _ -> max(Now, Next)
           end,
    {(Slot - Now) div 1000, Slot + 1000000 div Rate}.

connected(Group, Result, #st{connecting = Ing, conns = Cs, opened = Opened} = St) ->
    {Waiting, Ing1} = case maps:take(Group, Ing) of
                          {W, I} -> {W, I};
                          error -> {[], Ing}
                      end,
    _ = [From ! {Ref, Result} || {From, Ref} <- Waiting],
    case Result of
        {ok, Conn} ->
            %% The coordinator aborts it should it give this agent up
            %% (killed): a connection left to a broker that stopped reading
            %% would hold the VM's exit.
            St#st.coord ! {agent_conn, self(), Conn},
            Rc = case is_map_key(Group, Opened) of
                     true -> St#st.reconnects + 1;
                     false -> St#st.reconnects
                 end,
            St#st{connecting = Ing1, conns = Cs#{Group => Conn}, opened = Opened#{Group => true},
                  reconnects = Rc};
        {error, _} ->
            St#st{connecting = Ing1}
    end.

%% The nodes of a cluster in a random order, the first that answers (as
%% PerfTest's --uris): the error of the last one otherwise.
connect_any([Uri], Opts) ->
    beamlab_amqp:connect(Uri, Opts);
connect_any([Uri | Rest], Opts) ->
    case beamlab_amqp:connect(Uri, Opts) of
        {ok, _} = Ok -> Ok;
        {error, _} -> connect_any(Rest, Opts)
    end.

shuffle([_] = L) -> L;
shuffle(L) -> [X || {_, X} <- lists:sort([{rand:uniform(), X} || X <- L])].

group_name({Kind, N}) ->
    io_lib:format("~s~b", [Kind, N]).

worker_exit(Pid, Reason, #st{producers = Ps, consumers = Cs, coord = C} = St) ->
    IsP = is_map_key(Pid, Ps),
    IsC = is_map_key(Pid, Cs),
    case Reason of
        normal when IsP ->
            maybe_stopped(done(p, St#st{producers = maps:remove(Pid, Ps), done_p = St#st.done_p + 1}));
        normal when IsC ->
            maybe_stopped(done(c, St#st{consumers = maps:remove(Pid, Cs), done_c = St#st.done_c + 1}));
        _ when IsP; IsC ->
            C ! {agent_failure, self(), failure_reason(Reason)},
            maybe_stopped(St#st{producers = maps:remove(Pid, Ps), consumers = maps:remove(Pid, Cs)});
        _ ->
            St
    end.

%% The coordinator ends a -C/-D run as soon as every producer (-C) or
%% every consumer (-D, --exit-when) is done, on all agents: an agent tells
%% it once all of its producers, and once all of its consumers, have ended
%% normally, not at every worker's end (15,000 messages at the end of an
%% IoT run, #33). A count that stays short (a worker failed) ends the run
%% through the failure instead.
done(Kind, #st{coord = C, done_p = P, done_c = D, n_p = NP, n_c = NC} = St) ->
    Last = case Kind of
               p -> P =:= NP;
               c -> D =:= NC
           end,
    _ = Last andalso (C ! {workers_done, self(), P, D}),
    St.

failure_reason({shutdown, R}) -> R;
failure_reason(R) -> {worker_crashed, R}.

maybe_stopped(#st{phase = stopping_p, producers = Ps, coord = C} = St) when map_size(Ps) =:= 0 ->
    C ! {producers_stopped, self()},
    St#st{phase = running};
maybe_stopped(#st{phase = stopping_c, consumers = Cs, producers = Ps,
                  coord = C} = St0) when map_size(Cs) =:= 0, map_size(Ps) =:= 0 ->
    {_, #st{totals = {ConsT, ConfT}} = St1} = merge_pending(take(fun beamlab_stats_hist:take_all/1, St0)),
    Excl = exclusive_depth(St1),
    %% Consumers' connections close before the depth is read: what a
    %% consumer had unacked when its channel did not close in time goes
    %% back to its queue with the connection, and counts as queued.
    St = close_groups([c, l], St1),
    C ! {final, self(), #{counters => counts(St),
                          consumer => ConsT,
                          confirm => ConfT,
                          exclusive_queued => Excl,
                          memory => St#st.memory}},
    await_close(C),
    close_all(St),
    ok = beamlab_runtime_shared:release(St#st.ctx_key),
    exit(normal);
maybe_stopped(St) ->
    St.

%% The producers' connections stay open until the coordinator has read
%% the queues' depth (their channels are closed, what they published is
%% routed): a broker closing thousands of connections (-x 15000) at once
%% answers that read too late (#33). Bounded: a coordinator that never
%% says so (it always does, or is gone) does not keep them forever.
await_close(Coord) ->
    receive
        close_connections -> ok;
        {'DOWN', _, process, Coord, _} -> ok
    after ?HOLD_MS ->
        ok
    end.

%% --exclusive: the consumers' queues die with their connections, so their
%% depth is read now, on those connections (a fresh channel each).
exclusive_depth(#st{plan = Plan, conns = Conns}) ->
    Excl = lists:usort([{G, Q} || #{exclusive := #{}, group := G, queue := Q}
                                      <- maps:get(consumers, Plan, [])]),
    Depths = [case maps:find(G, Conns) of
                  {ok, Conn} -> queue_depth(Conn, Q);
                  error -> undefined
              end || {G, Q} <- Excl],
    case lists:member(undefined, Depths) of
        true -> undefined;
        false -> lists:sum(Depths)
    end.

queue_depth(Conn, Q) ->
    case catch beamlab_amqp:open_channel(Conn, #{timeout => ?CLOSE_MS}) of
        {ok, Ch} ->
            R = case catch beamlab_amqp:declare_queue(Ch, Q, #{passive => true, timeout => ?CLOSE_MS}) of
                    {ok, #{message_count := N}} -> N;
                    _ -> undefined
                end,
            _ = catch beamlab_amqp:close_channel(Ch, #{timeout => ?CLOSE_MS}),
            R;
        _ ->
            undefined
    end.

counts(#st{ctx = #{counters := C}, reconnects = Rc}) ->
    #{reconnects => Rc,
      sent => counters:get(C, ?C_SENT),
      returned => counters:get(C, ?C_RETURNED),
      confirmed => counters:get(C, ?C_CONFIRMED),
      nacked => counters:get(C, ?C_NACKED),
      received => counters:get(C, ?C_RECEIVED),
      requeued => counters:get(C, ?C_REQUEUED),
      late => counters:get(C, ?C_LATE),
      direct_reads => counters:get(C, ?C_DIRECT_READS)}.

%% What the workers recorded since the last take (consumer and confirm
%% latencies), added to the run's totals. Each second's take reads the
%% buckets between the extremes recorded (beamlab_stats_hist:take/1); the
%% last one, once the workers are gone, reads them all.
take(St) ->
    take(fun beamlab_stats_hist:take/1, St).

take(Take, #st{ctx = Ctx, takes = {PCons, PConf, N}} = St) ->
    Cons = Take(maps:get(cons_hists, Ctx)),
    Conf = Take(maps:get(conf_hists, Ctx)),
    St1 = St#st{takes = {[Cons | PCons], [Conf | PConf], N + 1}},
    case N + 1 >= ?MERGE_TAKES of
        true -> merge_pending({{Cons, Conf}, St1});
        false -> {{Cons, Conf}, St1}
    end.

%% The pending takes merged into the totals. A merge costs the size of the
%% totals (thousands of buckets in a long run), a take's a few hundred, so
%% the takes wait and go into the totals every MERGE_TAKES takes and at
%% the end (#33: a merge a second was much of the agent's work at low
%% rates).
merge_pending({Sample, #st{totals = {ConsT, ConfT}, takes = {PCons, PConf, _}} = St}) ->
    %% The takes merged among themselves first: the totals are walked once.
    Merge = fun(T, []) -> T;
               (T, Ps) -> beamlab_stats_hist:merge(T, beamlab_stats_hist:merge_all(Ps))
            end,
    {Sample, St#st{totals = {Merge(ConsT, PCons), Merge(ConfT, PConf)}, takes = {[], [], 0}}}.

workers(#st{producers = Ps, consumers = Cs}) ->
    maps:keys(Ps) ++ maps:keys(Cs).

%% Closes the connections of the groups of these kinds (bounded).
close_groups(Kinds, #st{conns = Cs} = St) ->
    {Close, Keep} = maps:fold(fun({K, _} = G, Conn, {Cl, Kp}) ->
                                      case lists:member(K, Kinds) of
                                          true -> {[Conn | Cl], Kp};
                                          false -> {Cl, Kp#{G => Conn}}
                                      end
                              end, {[], #{}}, Cs),
    ok = beamlab_amqp:close_all(Close, ?CLOSE_MS),
    St#st{conns = Keep}.

%% Bounded: a connection that cannot close (frozen broker) is killed.
close_all(#st{conns = Cs}) ->
    beamlab_amqp:close_all(maps:values(Cs), ?CLOSE_MS).

-spec shutdown(#st{}) -> no_return().
shutdown(St) ->
    _ = [exit(W, kill) || W <- workers(St)],
    close_all(St),
    ok = beamlab_runtime_shared:release(St#st.ctx_key),
    exit(normal).
