%%% @doc A load generator worker: the behaviour of the processes an agent
%%% runs per channel (`beamlab_amqp_producer', `beamlab_amqp_consumer',
%%% `beamlab_amqp_loop'), their start-up handshake with the agent, and what
%%% they share: asking the agent for a connection, reopening a channel,
%%% ending when the connection is lost, recording a latency. Apart from the
%%% agent so that the agent calls its workers and the workers call this,
%%% with no cycle between them.
-module(beamlab_amqp_worker).

-export([start/3, connection/2, record/2, reopen/1, connection_lost/2]).

%% Internal entry point (spawned by start/3).
-export([init/4]).

%% A worker (producer, consumer, closed-loop channel) opens its channel
%% with `open/2' (`{error, R}' or anything else on success) and then runs
%% `run/3' on what it opened until it ends. {@link start/3} does the
%% handshake with the agent around them.
-callback open(Ctx :: map(), Spec :: map()) -> {error, term()} | tuple().
-callback run(Opened :: tuple(), Ctx :: map(), Spec :: map()) -> no_return().

%% @doc Starts a worker of callback module `Module' linked to the calling
%% agent. Once `Module:open/2' succeeds the worker sends `{self(), ready}'
%% and goes on with `Module:run/3'; otherwise it sends
%% `{self(), {error, R}}' and ends normally.
-spec start(module(), beamlab_runtime_shared:key(), map()) -> pid().
start(Module, CtxKey, Spec) ->
    proc_lib:spawn_link(?MODULE, init, [self(), Module, CtxKey, Spec]).

%% @private
%% The worker fetches the context itself: its counters and histograms
%% (about 2 MB of magic references) copied onto every worker's heap would
%% make each of its collections a full sweep (see beamlab_runtime_shared).
-spec init(pid(), module(), beamlab_runtime_shared:key(), map()) -> no_return().
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
-spec connection(map(), map()) -> {ok, pid()} | {error, term()}.
connection(#{agent := Agent}, #{group := Group}) ->
    Ref = monitor(process, Agent),
    Agent ! {connection, self(), Ref, Group},
    receive
        {Ref, Reply} ->
            demonitor(Ref, [flush]),
            Reply;
        {'DOWN', Ref, process, _, Reason} ->
            {error, {agent_down, Reason}}
    end.

%% @doc With `--reconnect': calls `Open' every second until it succeeds
%% (producers, consumers and closed-loop workers reopen their channel).
-spec reopen(fun(() -> {error, term()} | tuple())) -> tuple().
reopen(Open) ->
    case Open() of
        {error, _} ->
            receive after 1000 -> ok end,
            reopen(Open);
        Ok ->
            Ok
    end.

%% @doc Ends a worker whose connection is gone (without `--reconnect').
-spec connection_lost(term(), term()) -> no_return().
connection_lost(Code, Text) ->
    exit({shutdown, {connection_lost, Code, Text}}).

%% @doc Records one latency (microseconds) in the total and interval
%% histograms of a worker context.
-spec record({term(), term()}, non_neg_integer()) -> ok.
record({Total, Interval}, V) ->
    _ = beamlab_stats_hist:record(Total, V),
    _ = beamlab_stats_hist:record(Interval, V),
    ok.
