%%% @doc The result document of a load test (`kind' amqp) from the
%%% coordinator's report: benchmarks for sent and received msg/s (one sample
%%% per interval) and for consumer and confirm latency (per-interval medians
%%% as samples; the run's exact percentiles and histogram in `extra'; the
%%% end of each sample's interval, seconds into the run, in `extra'
%%% `interval_end_s': the last one may be shorter than the others), and
%%% an `amqp' section in `extra' (accounting, counters, failure, nodes,
%%% queues).
-module(beamlab_amqp_result).

-export([document/2]).

-export_type([opts/0]).

%% What the caller knows about the run: its command line, its start time
%% (`beamlab_runtime_clock:rfc3339/0') and the options to record.
-type opts() :: #{command := [unicode:chardata()], started_at := binary(),
                  params => beamlab_json:object()}.

%% @doc The document of a run, finished now.
-spec document(beamlab_amqp_coordinator:report(), opts()) -> beamlab_result:result().
document(R, #{command := Argv, started_at := Started} = Opts) ->
    Params = maps:get(params, Opts, #{}),
    Secs = max(maps:get(elapsed_us, R), 1) / 1000000,
    En = maps:get(enabled, R),
    Benchmarks =
        [throughput(R, sent, <<"sent">>, Secs) || maps:get(published, En)] ++
        [throughput(R, received, <<"received">>, Secs) || maps:get(received, En)] ++
        [latency(R, interval_consumer_latency, consumer_hist, <<"consumer latency">>)
         || maps:get(received, En)] ++
        [latency(R, interval_confirm_latency, confirm_hist, <<"confirm latency">>)
         || maps:get(confirmed, En)],
    Doc0 = beamlab_result:new(amqp, #{params => Params, command => Argv, started_at => Started}),
    Doc1 = beamlab_result:add_benchmarks(Doc0, Benchmarks),
    Doc2 = beamlab_result:set(extra, #{amqp => amqp_section(R, Secs)}, Doc1),
    beamlab_result:finish(Doc2, #{finished_at => beamlab_runtime_clock:rfc3339(),
                                  partial => maps:get(partial, R)}).

throughput(R, Key, Name, Secs) ->
    %% A run shorter than one interval has no interval sample: its average
    %% is the one sample.
    Average = maps:get(Key, maps:get(at_stop, R)) / Secs,
    Rates = maps:get(rates, R),
    {Samples, Extra} = case [maps:get(Key, S) || S <- Rates] of
                           [] -> {[Average], #{}};
                           L -> {L, #{interval_end_s => [maps:get(time, S) || S <- Rates]}}
                       end,
    beamlab_result:benchmark(
      Name, Samples,
      #{group => <<"amqp">>, metric => <<"throughput">>, unit => <<"msg/s">>,
        better => higher, counters => #{total => maps:get(Key, maps:get(counters, R))},
        extra => Extra#{average => Average}}).

latency(R, Key, HistKey, Name) ->
    Hist = maps:get(HistKey, R),
    Intervals = maps:get(Key, R),
    Measured = [L || L <- Intervals, L =/= [0, 0, 0, 0, 0]],
    Medians = case [lists:nth(2, L) || L <- Measured] of
                  [] when map_get(count, Hist) > 0 -> [beamlab_stats_hist:percentile(Hist, 50)];
                  Ms -> Ms
              end,
    Extra0 = #{per_interval => <<"median">>, total => percentiles(Hist),
               histogram => beamlab_stats_hist:to_map(Hist)},
    %% The intervals' ends of the medians (an interval without messages
    %% has none), when every interval has its rates.
    Rates = maps:get(rates, R),
    Extra = case length(Rates) =:= length(Intervals) andalso Measured =/= [] of
                true -> Extra0#{interval_end_s => [T || {#{time := T}, L} <- lists:zip(Rates, Intervals),
                                                        L =/= [0, 0, 0, 0, 0]]};
                false -> Extra0
            end,
    beamlab_result:benchmark(
      Name, Medians,
      #{group => <<"amqp">>, metric => <<"latency">>, unit => <<"us">>, better => lower,
        extra => case Medians of
                     [] -> Extra#{error => <<"no messages measured">>};
                     _ -> Extra
                 end}).

amqp_section(R, Secs) ->
    #{id => maps:get(id, R),
      stop => atom_to_binary(maps:get(stop, R)),
      elapsed_s => Secs,
      counters => maps:get(counters, R),
      accounting => maps:map(fun(_, undefined) -> null; (_, V) -> V end, maps:get(accounting, R)),
      failure => case maps:get(failure, R) of
                     undefined -> null;
                     F -> iolist_to_binary(beamlab_amqp_coordinator:format_error(F))
                 end,
      nodes => [atom_to_binary(N) || N <- maps:get(nodes, R)],
      node_shares => [S#{node := atom_to_binary(N)} || #{node := N} = S <- maps:get(shares, R)],
      lost_nodes => [#{node => atom_to_binary(N), reason => iolist_to_binary(io_lib:format("~0p", [Rs]))}
                     || {N, Rs} <- maps:get(lost, R)],
      split => maps:get(split, R),
      clock_offsets => maps:fold(fun(N, O, A0) -> A0#{atom_to_binary(N) => O} end,
                                 #{}, maps:get(clock, R)),
      queues => maps:get(queues, R),
      memory => [M#{node := atom_to_binary(N),
                    per_connection := case P of undefined -> null; _ -> P end}
                 || #{node := N, per_connection := P} = M <- maps:get(memory, R)],
      latency_unit => <<"us">>,
      latency_precision => <<"log-linear histogram, 3 significant digits (relative error =< 0.05%)">>}.

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
