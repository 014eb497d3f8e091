%%% @doc A load generator worker: the behaviour of the processes an agent
%%% runs per channel (`beamlab_amqp_producer', `beamlab_amqp_consumer',
%%% `beamlab_amqp_loop'), their start-up handshake with the agent, and what
%%% they share: asking the agent for a connection, reopening a channel,
%%% ending when the connection is lost, recording a latency. Apart from the
%%% agent so that the agent calls its workers and the workers call this,
%%% with no cycle between them.
-module(beamlab_amqp_worker).

-include("beamlab_amqp_perf.hrl").

-export([start/3, connection/2, take_reads/2, record/2, reopen/2, connection_lost/2]).

-export_type([ctx/0, hists/0, group/0, spec/0, producer_spec/0, consumer_spec/0,
              loop_spec/0, opened/0, common/0, schedule/0]).

%% A latency histogram: what was recorded since the agent last took it
%% (beamlab_stats_hist:take/1, at each line); the agent adds each take to
%% the run's total. One histogram, so a message costs one record (#33).
-type hists() :: beamlab_stats_hist:hist().
%% What an agent shares with its workers (fetched by each worker, see
%% init/4): the node's counters (slots in beamlab_amqp_perf.hrl), latency
%% histograms, and this node's clock minus the coordinator's.
-type ctx() :: #{agent := pid(),
                 counters := counters:counters_ref(),
                 cons_hists := hists(),
                 conf_hists := hists(),
                 clock_offset := integer(),
                 %% Prepared bodies (--body files, --json-body) and the
                 %% zero padding of each body size, shared, never copied.
                 bodies := tuple(),
                 pads := #{non_neg_integer() => binary()}}.
%% The connection a worker uses: producer i, consumer i, or closed-loop
%% group i (channels of one group share a connection).
-type group() :: {p | c | l, non_neg_integer()}.
%% Every worker: its connection's group, whether it reopens a lost
%% channel, and the delay between two attempts (ms, random in the range).
-type common() :: #{group := group(), reconnect := boolean(),
                    recovery_ms := {non_neg_integer(), non_neg_integer()}}.
%% When to publish: a rate (msg/s; 0: never), or PerfTest's variable rate
%% steps {msg/s, seconds}, cycled.
-type schedule() :: {rate, number() | infinity} | {variable, [{non_neg_integer(), pos_integer()}]}.
-type producer_spec() :: #{group := group(), reconnect := boolean(),
                           recovery_ms := {non_neg_integer(), non_neg_integer()},
                           exchange := binary(), key := binary(),
                           keys := fixed | random | {cache, pos_integer()},
                           mandatory := boolean(),
                           props := beamlab_amqp_method:props(),
                           confirm := pos_integer() | undefined,
                           confirm_timeout := pos_integer(),
                           schedule := schedule(),
                           %% -P: a publish made this much (one interval,
                           %% µs) after it was due counts as late.
                           late_us := pos_integer() | undefined,
                           start_delay_ms := non_neg_integer(),
                           count := non_neg_integer(),
                           tx := non_neg_integer(),
                           body := stamp | files | json,
                           size := {fixed, non_neg_integer()}
                                 | {variable, [{pos_integer(), pos_integer()}]}}.
-type consumer_spec() :: #{group := group(), reconnect := boolean(),
                           recovery_ms := {non_neg_integer(), non_neg_integer()},
                           queue := binary(),
                           %% --exclusive: declared and bound by this consumer.
                           exclusive := beamlab_amqp_topology:queue_spec() | none,
                           prefetch := non_neg_integer(), global_qos := non_neg_integer(),
                           autoack := boolean(), multi_ack := non_neg_integer(),
                           nack := boolean(), requeue := boolean(),
                           args := beamlab_amqp_method:table(),
                           count := non_neg_integer(), tx := non_neg_integer(),
                           rate := number() | infinity,
                           latency := {fixed, non_neg_integer()}
                                    | {variable, [{non_neg_integer(), pos_integer()}]},
                           start_delay_ms := non_neg_integer(),
                           exit_when := never | empty | idle,
                           polling := false | {true, non_neg_integer()},
                           %% Where the producers put the stamp.
                           stamp := body | header}.
-type loop_spec() :: #{group := group(), reconnect := boolean(),
                       recovery_ms := {non_neg_integer(), non_neg_integer()},
                       queue := binary(),
                       body_size := non_neg_integer(), persistent := boolean()}.
-type spec() :: producer_spec() | consumer_spec() | loop_spec().
%% What a worker's open/2 returns on success: its channel, and for a
%% producer its connection too (for the backlog check).
-type opened() :: {ok, beamlab_amqp:conn(), beamlab_amqp:channel()} | {ok, beamlab_amqp:channel()}.

%% Internal entry point (spawned by start/3).
-export([init/4]).

%% A worker (producer, consumer, closed-loop channel) opens its channel
%% with `open/2' (`{error, R}' or anything else on success) and then runs
%% `run/3' on what it opened until it ends. {@link start/3} does the
%% handshake with the agent around them.
-callback open(ctx(), spec()) -> opened() | {error, beamlab_amqp:reason()}.
-callback run(opened(), ctx(), spec()) -> no_return().

%% @doc Starts a worker of callback module `Module' linked to the calling
%% agent. Once `Module:open/2' succeeds the worker sends `{self(), ready}'
%% and goes on with `Module:run/3'; otherwise it sends
%% `{self(), {error, R}}' and ends normally.
-spec start(module(), beamlab_runtime_shared:key(), spec()) -> pid().
start(Module, CtxKey, Spec) ->
    proc_lib:spawn_link(?MODULE, init, [self(), Module, CtxKey, Spec]).

%% @private
%% The worker fetches the context itself: its counters and histograms
%% (about 2 MB of magic references) copied onto every worker's heap would
%% make each of its collections a full sweep (see beamlab_runtime_shared).
-spec init(pid(), module(), beamlab_runtime_shared:key(), spec()) -> no_return().
init(Agent, Module, CtxKey, Spec) ->
    Ctx = beamlab_runtime_shared:fetch(CtxKey),
    case Module:open(Ctx, Spec) of
        {error, _} = E ->
            Agent ! {self(), E},
            exit(normal);
        Opened ->
            Agent ! {self(), ready},
            Module:run(Opened, Ctx, Spec)
    end.

%% @doc A live connection for the worker's group, asked of the agent
%% (reconnecting when the previous one is gone).
-spec connection(ctx(), spec()) ->
          {ok, beamlab_amqp:conn()} | {error, beamlab_amqp:reason() | {agent_down, Exit :: term()}}.
connection(#{agent := Agent}, #{group := Group}) ->
    Ref = monitor(process, Agent),
    Agent ! {connection, self(), Ref, Group},
    connection_reply(Ref).

%% A stop while the connection is being opened (a broker that does not
%% answer) ends the worker: nothing of it is left to finish.
connection_reply(Ref) ->
    receive
        {Ref, Reply} ->
            demonitor(Ref, [flush]),
            Reply;
        {'DOWN', Ref, process, _, Reason} ->
            {error, {agent_down, Reason}};
        stop ->
            exit(normal)
    end.

%% @doc The reads of the worker's channel (beamlab_amqp:take_reads/1), or
%% `none' where the connection keeps them (TLS, a shared connection), or
%% when the application environment's `amqp_direct_reads' is false (on by
%% default since #33 counted them: without them the VM switched processes
%% 1.8-2.8x as often per message as the floor client, with them as often,
%% docs/amqp.md; the hang they caused on the first Ctrl-C against a frozen
%% broker is fixed, see beamlab_amqp_conn's take_reads). Each take is
%% counted in the context's counters (`direct_reads' in the result).
-spec take_reads(beamlab_amqp:channel(), ctx()) -> beamlab_amqp:reader() | none.
take_reads(Ch, #{counters := C}) ->
    case application:get_env(beamlab, amqp_direct_reads, true) =/= false
        andalso beamlab_amqp:take_reads(Ch) of
        {ok, R} ->
            counters:add(C, ?C_DIRECT_READS, 1),
            R;
        _ -> none
    end.

%% @doc With `--reconnect': calls `Open' until it succeeds, waiting the
%% spec's recovery interval between attempts (producers, consumers and
%% closed-loop workers reopen their channel). Told to stop meanwhile, the
%% worker ends there: nothing of it is left to finish.
-spec reopen(fun(() -> opened() | {error, beamlab_amqp:reason()}), spec()) -> opened().
reopen(Open, #{recovery_ms := {Min, Max}} = Spec) ->
    case Open() of
        {error, _} ->
            receive
                stop -> exit(normal)
            after Min + rand:uniform(Max - Min + 1) - 1 ->
                reopen(Open, Spec)
            end;
        Ok ->
            Ok
    end.

%% @doc Ends a worker whose connection is gone (without `--reconnect').
-spec connection_lost(integer() | atom(), binary()) -> no_return().
connection_lost(Code, Text) ->
    exit({shutdown, {connection_lost, Code, Text}}).

%% @doc Records one latency (microseconds) in a histogram of a worker
%% context.
-spec record(hists(), non_neg_integer()) -> ok.
record(H, V) ->
    beamlab_stats_hist:record(H, V).
