%%% @doc Live metrics of a load test for `beamlab_runtime_metrics'
%%% (`--metrics-port'), under PerfTest's names where PerfTest has the
%%% metric: the rates of the last interval as gauges (`perftest_published',
%%% `perftest_confirmed', `perftest_nacked', `perftest_returned',
%%% `perftest_consumed', msg/s) and the consumer and confirm latencies as
%%% histograms since the start (`perftest_latency_seconds',
%%% `perftest_confirm_latency_seconds'; PerfTest's Micrometer timers are
%%% summaries with quantiles over the last interval, a histogram lets
%%% Prometheus compute any quantile over any window). beamlab adds the
%%% totals as counters (`beamlab_amqp_*_total'). A run over several nodes
%%% labels every sample with `node'.
%%%
%%% The live reporting publishes into a board it owns once per interval
%%% ({@link publish/3}, `beamlab_runtime_metrics_board'), which the
%%% collector only reads at scrape time: a scrape never waits for the
%%% agents.
-module(beamlab_amqp_metrics).

-export([start/1, stop/1, new/1, publish/3, histogram/1]).

%% A run's board served by the server of --metrics-port.
-type handle() :: {beamlab_runtime_metrics:server(), beamlab_runtime_metrics_board:board()} | none.
%% What one node has counted so far and its latency histograms so far.
-type node_state() :: #{counters := beamlab_amqp_agent:counts(),
                        consumer := beamlab_stats_hist:snapshot(),
                        confirm := beamlab_stats_hist:snapshot()}.
-export_type([handle/0, node_state/0]).

%% Bucket bounds of the latency histograms, µs (50 µs to 30 s).
-define(BOUNDS_US, [50, 100, 250, 500, 1000, 2500, 5000, 10000, 25000, 50000, 100000,
                    250000, 500000, 1000000, 2500000, 5000000, 10000000, 30000000]).

%% @doc Serves a run's board (collector `amqp') on the configuration's
%% metrics server, if it has one.
-spec start(beamlab_amqp_config:config()) -> handle().
start(#{metrics := none}) ->
    none;
start(#{metrics := Server, nodes := Nodes}) ->
    Labelled = case Nodes of
                   {peers, N} -> N > 1;
                   _ -> length(Nodes) > 1
               end,
    B = new(Labelled),
    ok = beamlab_runtime_metrics_board:serve(Server, amqp, B),
    {Server, B}.

%% @doc Stops serving the run's board and forgets it.
-spec stop(handle()) -> ok.
stop(none) ->
    ok;
stop({Server, B}) ->
    beamlab_runtime_metrics_board:withdraw(Server, amqp, B).

%% @doc A board for a run; `Labelled': label the samples with `node' (a
%% run over several nodes). Owned by the calling process.
-spec new(Labelled :: boolean()) -> beamlab_runtime_metrics_board:board().
new(Labelled) ->
    beamlab_runtime_metrics_board:new(#{labelled => Labelled, nodes => #{}}, fun families/1).

%% @doc Records every node's counters and histograms so far, `Dt' seconds
%% after the previous publication (the rates are the difference).
-spec publish(beamlab_runtime_metrics_board:board(), #{node() => node_state()}, Dt :: float()) -> ok.
publish(B, Shares, Dt) ->
    Old = beamlab_runtime_metrics_board:get(B, nodes),
    New = maps:map(
            fun(N, #{counters := C} = S) ->
                    Prev = case Old of
                               #{N := #{counters := P}} -> P;
                               _ -> #{}
                           end,
                    S#{rates => maps:map(fun(K, V) -> max(0, V - maps:get(K, Prev, 0)) / Dt end, C)}
            end, Shares),
    beamlab_runtime_metrics_board:set(B, #{nodes => New}).

families(#{labelled := Labelled, nodes := Nodes}) ->
    Ns = lists:sort(maps:to_list(Nodes)),
    L = fun(N) when Labelled -> [{<<"node">>, atom_to_binary(N)}];
           (_) -> []
        end,
    Rate = fun(Name, Key, Help) ->
                   #{name => Name, type => gauge, help => Help,
                     samples => [{L(N), maps:get(Key, maps:get(rates, S), 0.0)} || {N, S} <- Ns]}
           end,
    Total = fun(Name, Key, Help) ->
                    #{name => Name, type => counter, help => Help,
                      samples => [{L(N), maps:get(Key, maps:get(counters, S), 0)} || {N, S} <- Ns]}
            end,
    Hist = fun(Name, Key, Help) ->
                   #{name => Name, type => histogram, unit => <<"seconds">>, help => Help,
                     samples => [{L(N), histogram(maps:get(Key, S))} || {N, S} <- Ns]}
           end,
    %% PerfTest registers all of them whatever the run does.
    [Rate(<<"perftest_published">>, sent, <<"Messages published per second in the last interval">>),
     Rate(<<"perftest_confirmed">>, confirmed, <<"Messages confirmed per second in the last interval">>),
     Rate(<<"perftest_nacked">>, nacked, <<"Messages nacked per second in the last interval">>),
     Rate(<<"perftest_returned">>, returned, <<"Messages returned per second in the last interval">>),
     Rate(<<"perftest_consumed">>, received, <<"Messages consumed per second in the last interval">>),
     Hist(<<"perftest_latency_seconds">>, consumer,
          <<"Consumer latency (publish to delivery) since the start">>),
     Hist(<<"perftest_confirm_latency_seconds">>, confirm,
          <<"Confirm latency (publish to confirm) since the start">>)]
        ++ [Total(<<"beamlab_amqp_published_total">>, sent, <<"Messages published">>),
            Total(<<"beamlab_amqp_confirmed_total">>, confirmed, <<"Messages confirmed by the broker">>),
            Total(<<"beamlab_amqp_nacked_total">>, nacked, <<"Messages nacked by the broker">>),
            Total(<<"beamlab_amqp_returned_total">>, returned, <<"Mandatory messages returned unroutable">>),
            Total(<<"beamlab_amqp_consumed_total">>, received, <<"Messages delivered to consumers">>),
            Total(<<"beamlab_amqp_requeued_total">>, requeued, <<"Deliveries nacked or rejected with requeue">>),
            Total(<<"beamlab_amqp_reconnects_total">>, reconnects, <<"Connections recovered (--reconnect)">>)].

%% @doc A latency histogram (µs) as cumulative buckets in seconds. A
%% bucket of the snapshot that straddles a bound counts above it.
-spec histogram(beamlab_stats_hist:snapshot()) -> beamlab_runtime_metrics:histogram().
histogram(#{count := Count, sum := Sum} = Snap) ->
    Bs = beamlab_stats_hist:buckets(Snap),
    {Cum, _, _} = lists:foldl(
                    fun(Bound, {Acc, Left, Below}) ->
                            {In, Rest} = lists:splitwith(fun({_, Hi, _}) -> Hi =< Bound end, Left),
                            N = Below + lists:sum([K || {_, _, K} <- In]),
                            {[{Bound / 1000000, N} | Acc], Rest, N}
                    end, {[], Bs, 0}, ?BOUNDS_US),
    #{buckets => lists:reverse(Cum, [{infinity, Count}]), sum => Sum / 1000000, count => Count}.
