%%% @doc Text of the load generator's report, in RabbitMQ PerfTest's format
%%% so that scripts parsing PerfTest's output can parse ours: the
%%% per-interval line, the final summary, plus beamlab's accounting line.
%%% Pure functions; all text is UTF-8 binaries ("µs").
-module(beamlab_amqp_report).

-export([format_rate/1, interval_line/4, summary_lines/4, latency/1,
         accounting/2, accounting_line/2, test_id/1]).

-export_type([enabled/0, latency/0, interval/0, summary/0, accounting/0]).

%% Which columns PerfTest prints: published (there are producers), received
%% (there are consumers), returned (the mandatory flag), confirmed (-c).
-type enabled() :: #{published := boolean(), received := boolean(),
                     returned := boolean(), confirmed := boolean()}.
%% min, median, 75th, 95th, 99th percentile in microseconds.
-type latency() :: [non_neg_integer()].
%% One interval: rates in msg/s and the interval's latency percentiles.
-type interval() :: #{sent := number(), returned := number(), confirmed := number(),
                      nacked := number(), received := number(), reconnects => number(),
                      consumer := latency(), confirm := latency()}.
%% The run: average rates and the run's latency percentiles.
-type summary() :: #{sent := number(), received := number(),
                     consumer := latency(), confirm := latency()}.
%% sent = received + returned + nacked + queued + unaccounted; `queued'
%% and `unaccounted' are `undefined' when the queues' depth is unknown.
-type accounting() :: #{sent := non_neg_integer(), received := non_neg_integer(),
                        returned := non_neg_integer(), nacked := non_neg_integer(),
                        queued := integer() | undefined, unaccounted := integer() | undefined,
                        balanced := boolean(), reconnects := non_neg_integer(),
                        approximate := boolean(),
                        %% Queues the broker lost (declared again) and when, s.
                        lost_queues => [binary()], lost_at_s => [number()]}.

%% @doc A rate as PerfTest prints it: "0", two decimals below 1, one decimal
%% below 10, else the integer part.
-spec format_rate(number()) -> binary().
format_rate(R) when R == 0 -> <<"0">>;
format_rate(R) when R < 1 -> float_to_binary(float(R), [{decimals, 2}]);
format_rate(R) when R < 10 -> float_to_binary(float(R), [{decimals, 1}]);
format_rate(R) -> integer_to_binary(trunc(R)).

%% @doc One interval line: `Id', microseconds since the start, the rates
%% (`sent', `returned', `confirmed', `nacked', `received' in msg/s) and the
%% interval's latency percentiles (`consumer', `confirm').
-spec interval_line(binary(), non_neg_integer(), interval(), enabled()) -> binary().
interval_line(Id, ElapsedUs, R, En) ->
    Time = float_to_binary(ElapsedUs / 1000000, [{decimals, 3}]),
    Rate = fun(Label, Key) -> [<<", ">>, Label, <<": ">>, format_rate(maps:get(Key, R)), <<" msg/s">>] end,
    Cons = maps:get(received, En),
    Conf = maps:get(published, En) andalso maps:get(confirmed, En),
    iolist_to_binary(
      [<<"id: ">>, Id, <<", time ">>, Time, <<" s">>,
       [Rate(<<"sent">>, sent) || maps:get(published, En)],
       [Rate(<<"returned">>, returned) || maps:get(returned, En)],
       [[Rate(<<"confirmed">>, confirmed), Rate(<<"nacked">>, nacked)] || Conf],
       [Rate(<<"received">>, received) || maps:get(received, En)],
       [<<", min/median/75th/95th/99th ">> || Cons orelse Conf],
       [[<<"consumer latency: ">>, lat(maps:get(consumer, R))] || Cons],
       [<<", ">> || Cons andalso Conf],
       [[<<"confirm latency: ">>, lat(maps:get(confirm, R))] || Conf]]).

%% @doc The final summary lines (each ends with a newline): average sending
%% and receiving rates over the run, then total latency percentiles.
-spec summary_lines(binary(), summary(), enabled(), non_neg_integer()) -> binary().
summary_lines(Id, R, En, ElapsedUs) ->
    P = [<<"id: ">>, Id, <<", ">>],
    Conf = maps:get(published, En) andalso maps:get(confirmed, En),
    iolist_to_binary(
      [P, <<"sending rate avg: ">>, format_rate(maps:get(sent, R)), <<" msg/s\n">>,
       [[P, <<"receiving rate avg: ">>, format_rate(maps:get(received, R)), <<" msg/s\n">>,
         [[P, <<"consumer latency min/median/75th/95th/99th ">>, lat(maps:get(consumer, R)), <<"\n">>]
          || maps:get(received, En)],
         [[P, <<"confirm latency min/median/75th/95th/99th ">>, lat(maps:get(confirm, R)), <<"\n">>]
          || Conf]]
        || ElapsedUs >= 1000]]).

lat(L) ->
    [lists:join(<<"/">>, [integer_to_binary(V) || V <- L]), <<" µs"/utf8>>].

%% @doc Min/median/75th/95th/99th of a `beamlab_stats_hist' snapshot, zeros
%% when it is empty (as PerfTest prints an interval without messages).
-spec latency(beamlab_stats_hist:snapshot()) -> latency().
latency(Snap) ->
    case beamlab_stats_hist:count(Snap) of
        0 -> [0, 0, 0, 0, 0];
        _ ->
            [round(beamlab_stats_hist:min(Snap)) |
             [round(beamlab_stats_hist:percentile(Snap, P)) || P <- [50, 75, 95, 99]]]
    end.

%% @doc Checks sent = received + returned + nacked + queued, where queued is
%% the growth of the queues' depth over the run (`undefined' when it could
%% not be read). Returns the terms and the difference (`unaccounted').
%% After a reconnect (`reconnects' in the counters) the check is only
%% approximate: messages in flight on a lost connection are neither
%% received nor confirmed, and deliveries that were not acknowledged before
%% the loss are redelivered and counted twice; `approximate' says so.
-spec accounting(beamlab_amqp_agent:counts() | #{sent := non_neg_integer(), received := non_neg_integer(),
                                                   returned := non_neg_integer(), nacked := non_neg_integer()},
                 integer() | undefined) -> accounting().
accounting(C, Queued) ->
    #{sent := S, received := Rcv, returned := Ret, nacked := N} = C,
    Rc = maps:get(reconnects, C, 0),
    Un = case Queued of
             undefined -> undefined;
             _ -> S - Rcv - Ret - N - Queued
         end,
    #{sent => S, received => Rcv, returned => Ret, nacked => N, queued => Queued,
      unaccounted => Un, balanced => Un =:= 0, reconnects => Rc, approximate => Rc > 0}.

%% @doc The accounting as one line, prefixed with the test id. With
%% `lost_queues' (queues the broker lost and the run declared again, at
%% `lost_at_s' seconds) the line says that their messages are part of the
%% unaccounted count.
-spec accounting_line(binary(), accounting()) -> binary().
accounting_line(Id, #{sent := S, received := Rcv, returned := Ret, nacked := N,
                      queued := Q, unaccounted := Un} = A) ->
    I = fun integer_to_binary/1,
    Lost = case maps:get(lost_queues, A, []) of
               [] -> [];
               Qs -> [<<"; the broker lost queue">>, [$s || length(Qs) > 1], $\s,
                      lists:join(<<", ">>, Qs), <<" at ">>,
                      lists:join(<<", ">>, [[float_to_binary(float(T), [{decimals, 1}, compact]), <<" s">>]
                                           || T <- maps:get(lost_at_s, A, [])]),
                      <<" (broker restart): the messages it held and those published before"
                        " it was declared again are lost, counted here">>]
           end,
    Verdict = case maps:get(reconnects, A, 0) of
                  0 when Lost =:= [] -> <<"NOT balanced">>;
                  Rc -> [<<"approximate after ">>, I(Rc), <<" reconnect">>, [$s || Rc =/= 1],
                         <<": in-flight messages lost with a connection are not counted,"
                           " redelivered ones are counted twice">>, Lost]
              end,
    Tail = case Un of
               undefined -> <<" + queued ? (queue depth unknown)">>;
               0 -> [<<" + queued ">>, I(Q), <<" (balanced)">>];
               _ -> [<<" + queued ">>, I(Q), <<" + unaccounted ">>, I(Un), <<" (">>, Verdict, <<")">>]
           end,
    iolist_to_binary([<<"id: ">>, Id, <<", accounting: sent ">>, I(S), <<" = received ">>, I(Rcv),
                      <<" + returned ">>, I(Ret), <<" + nacked ">>, I(N), Tail]).

%% @doc A PerfTest-style test id, "test-HHMMSS-mmm", from a system time in
%% milliseconds.
-spec test_id(integer()) -> binary().
test_id(Ms) ->
    {_, {H, M, S}} = calendar:system_time_to_local_time(Ms div 1000, second),
    iolist_to_binary(io_lib:format("test-~2..0b~2..0b~2..0b-~3..0b", [H, M, S, Ms rem 1000])).
