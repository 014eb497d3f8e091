%%% @doc Text of the load generator's report, in RabbitMQ PerfTest's format
%%% so that scripts parsing PerfTest's output can parse ours: the
%%% per-interval line, the final summary, plus beamlab's accounting line.
%%% Pure functions; all text is UTF-8 binaries ("µs").
-module(beamlab_amqp_report).

-export([format_rate/1, interval_line/4, interval_line/5, summary_lines/4, summary_lines/5,
         compact_header/1, compact_line/4, csv_header/1, csv_line/5, latency/1,
         accounting/2, accounting/3, accounting_line/2, test_id/1]).

-export_type([unit/0]).

%% Latency printed in microseconds (PerfTest's default) or milliseconds
%% (--use-millis).
-type unit() :: us | ms.

-export_type([enabled/0, latency/0, interval/0, summary/0, accounting/0, counts/0]).

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
-type counts() :: #{sent := non_neg_integer(), received := non_neg_integer(),
                    returned := non_neg_integer(), nacked := non_neg_integer(),
                    requeued => non_neg_integer(), reconnects => non_neg_integer(),
                    atom() => non_neg_integer()}.
-type accounting() :: #{kind := queue | stream,
                        sent := non_neg_integer(), received := non_neg_integer(),
                        requeued := non_neg_integer(),
                        returned := non_neg_integer(), nacked := non_neg_integer(),
                        queued := integer() | undefined, unaccounted := integer() | undefined,
                        balanced := boolean(), reconnects := non_neg_integer(),
                        approximate := boolean(),
                        %% The end took longer than the shutdown timeout.
                        cut_short => boolean(),
                        %% Streams: what they hold, consumers per stream, unread.
                        stored => integer(), consumers_per_stream => pos_integer() | undefined,
                        unread => integer() | undefined,
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
    interval_line(Id, ElapsedUs, R, En, us).

%% @doc As {@link interval_line/4}, latency in `Unit'.
-spec interval_line(binary(), non_neg_integer(), interval(), enabled(), unit()) -> binary().
interval_line(Id, ElapsedUs, R, En, Unit) ->
    Time = time(ElapsedUs),
    Lat = fun(L) -> lat(L, Unit) end,
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
       [[<<"consumer latency: ">>, Lat(maps:get(consumer, R))] || Cons],
       [<<", ">> || Cons andalso Conf],
       [[<<"confirm latency: ">>, Lat(maps:get(confirm, R))] || Conf]]).

time(ElapsedUs) ->
    float_to_binary(ElapsedUs / 1000000, [{decimals, 3}]).

%% @doc The header of PerfTest's compact format (--metrics-format compact).
-spec compact_header(enabled()) -> binary().
compact_header(En) ->
    Conf = maps:get(published, En) andalso maps:get(confirmed, En),
    iolist_to_binary(
      [pad("time", 10, trailing),
       [pad("sent", 13, leading) || maps:get(published, En)],
       [pad("returned", 13, leading) || maps:get(returned, En)],
       [[pad("confirmed", 13, leading), pad("nacked", 13, leading)] || Conf],
       [pad("received", 13, leading) || maps:get(received, En)],
       [pad("consumer latency", 23, leading) || maps:get(received, En)],
       [pad("confirm latency", 23, leading) || Conf]]).

%% @doc One interval in PerfTest's compact format: aligned columns, a
%% latency wider than its column pushes the rest right.
-spec compact_line(non_neg_integer(), interval(), enabled(), unit()) -> binary().
compact_line(ElapsedUs, R, En, Unit) ->
    Conf = maps:get(published, En) andalso maps:get(confirmed, En),
    Rate = fun(K) -> pad([format_rate(maps:get(K, R)), <<" msg/s">>], 13, leading) end,
    ConsLat = [lat(maps:get(consumer, R), Unit) || maps:get(received, En)],
    ConfLat = [lat(maps:get(confirm, R), Unit) || Conf],
    Wide = fun(L) -> string:length(L) > 22 end,
    {Cons, Over} = case ConsLat of
                       [C] -> case Wide(C) of
                                  true -> {[<<" ">>, C], true};
                                  false -> {pad(C, 23, leading), false}
                              end;
                       [] -> {[], false}
                   end,
    ConfText = case ConfLat of
                   [F] -> case Wide(F) orelse Over of
                              true -> [<<" ">>, F];
                              false -> pad(F, 23, leading)
                          end;
                   [] -> []
               end,
    iolist_to_binary(
      [pad([time(ElapsedUs), <<"s">>], 10, trailing),
       [Rate(sent) || maps:get(published, En)],
       [Rate(returned) || maps:get(returned, En)],
       [[Rate(confirmed), Rate(nacked)] || Conf],
       [Rate(received) || maps:get(received, En)],
       Cons, ConfText]).

pad(Text, Width, Dir) ->
    unicode:characters_to_binary(string:pad(unicode:characters_to_list(iolist_to_binary(Text)),
                                            Width, Dir)).

%% @doc PerfTest's CSV header (--output-file).
-spec csv_header(unit()) -> binary().
csv_header(Unit) ->
    U = unit_text(Unit),
    iolist_to_binary(
      ["id,time (s),published (msg/s),returned (msg/s),confirmed (msg/s),nacked (msg/s),"
       "received (msg/s),min consumer latency (", U, "),median consumer latency (", U, "),"
       "75th p. consumer latency (", U, "),95th p. consumer latency (", U, "),"
       "99th p. consumer latency (", U, "),min confirm latency (", U, "),"
       "median confirm latency (", U, "),75th p. confirm latency (", U, "),"
       "95th p. confirm latency (", U, "),99th p. confirm latency (", U, ")"]).

%% @doc One interval as a CSV row in PerfTest's columns (empty cells for
%% what PerfTest leaves out).
-spec csv_line(binary(), non_neg_integer(), interval(), enabled(), unit()) -> binary().
csv_line(Id, ElapsedUs, R, En, Unit) ->
    Pub = maps:get(published, En),
    Conf = Pub andalso maps:get(confirmed, En),
    Rate = fun(K, true) -> format_rate(maps:get(K, R));
              (_, false) -> <<>>
           end,
    Lats = fun(K, true) -> [integer_to_binary(V) || V <- in_unit(maps:get(K, R), Unit)];
              (_, false) -> lists:duplicate(5, <<>>)
           end,
    iolist_to_binary(
      lists:join(<<",">>, [Id, time(ElapsedUs), Rate(sent, Pub),
                           Rate(returned, Pub andalso maps:get(returned, En)),
                           Rate(confirmed, Conf), Rate(nacked, Conf),
                           Rate(received, maps:get(received, En))]
                 ++ Lats(consumer, maps:get(received, En)) ++ Lats(confirm, Conf))).

in_unit(L, us) -> L;
in_unit(L, ms) -> [V div 1000 || V <- L].

unit_text(us) -> <<"µs"/utf8>>;
unit_text(ms) -> <<"ms">>.

%% @doc The final summary lines (each ends with a newline): average sending
%% and receiving rates over the run, then total latency percentiles.
-spec summary_lines(binary(), summary(), enabled(), non_neg_integer()) -> binary().
summary_lines(Id, R, En, ElapsedUs) ->
    summary_lines(Id, R, En, ElapsedUs, us).

%% @doc As {@link summary_lines/4}, latency in `Unit' (without a test id
%% prefix when `Id' is `none', as PerfTest's compact format).
-spec summary_lines(binary() | none, summary(), enabled(), non_neg_integer(), unit()) -> binary().
summary_lines(Id, R, En, ElapsedUs, Unit) ->
    P = case Id of
            none -> [];
            _ -> [<<"id: ">>, Id, <<", ">>]
        end,
    Lat = fun(L) -> lat(L, Unit) end,
    Conf = maps:get(published, En) andalso maps:get(confirmed, En),
    iolist_to_binary(
      [P, <<"sending rate avg: ">>, format_rate(maps:get(sent, R)), <<" msg/s\n">>,
       [[P, <<"receiving rate avg: ">>, format_rate(maps:get(received, R)), <<" msg/s\n">>,
         [[P, <<"consumer latency min/median/75th/95th/99th ">>, Lat(maps:get(consumer, R)), <<"\n">>]
          || maps:get(received, En)],
         [[P, <<"confirm latency min/median/75th/95th/99th ">>, Lat(maps:get(confirm, R)), <<"\n">>]
          || Conf]]
        || ElapsedUs >= 1000]]).

lat(L, Unit) ->
    [lists:join(<<"/">>, [integer_to_binary(V) || V <- in_unit(L, Unit)]), <<" ">>, unit_text(Unit)].

%% @doc Min/median/75th/95th/99th of a `beamlab_stats_hist' snapshot, zeros
%% when it is empty (as PerfTest prints an interval without messages).
-spec latency(beamlab_stats_hist:snapshot()) -> latency().
latency(Snap) ->
    case beamlab_stats_hist:count(Snap) of
        0 -> [0, 0, 0, 0, 0];
        _ ->
            %% One walk over the buckets for the four, not one each
            %% (#33: each line's walks were a call per message at 30000 msg/s).
            [round(beamlab_stats_hist:min(Snap)) |
             [round(V) || V <- beamlab_stats_hist:percentiles(Snap, [50, 75, 95, 99])]]
    end.

%% @doc Checks sent = received + returned + nacked + queued, where queued is
%% the growth of the queues' depth over the run (`undefined' when it could
%% not be read) and received leaves out the deliveries a consumer nacked
%% with requeue (`--nack': back in the queue). Returns the terms and the
%% difference (`unaccounted'). After a reconnect (`reconnects' in the
%% counters) the check is only approximate: messages in flight on a lost
%% connection are neither received nor confirmed, and deliveries that were
%% not acknowledged before the loss are redelivered and counted twice;
%% `approximate' says so.
-spec accounting(counts(), integer() | undefined) -> accounting().
accounting(C, Queued) ->
    accounting(C, Queued, #{}).

%% @doc As {@link accounting/2}; with `stream => K', the queues are streams
%% (reading does not remove a message, every consumer of a stream reads all
%% of it): sent = stored + returned + nacked, and the consumers, K per
%% stream, should have read K times what was stored (`unread' is what they
%% did not; `K' `undefined' when streams have different numbers of
%% consumers).
-spec accounting(counts(), integer() | undefined, #{stream => pos_integer() | undefined}) ->
          accounting().
accounting(C, Queued, Opts) ->
    #{sent := S, received := Rcv, returned := Ret, nacked := N} = C,
    Req = maps:get(requeued, C, 0),
    Rc = maps:get(reconnects, C, 0),
    Base = #{sent => S, received => Rcv, requeued => Req, returned => Ret, nacked => N,
             reconnects => Rc, approximate => Rc > 0},
    case maps:find(stream, Opts) of
        error ->
            Un = case Queued of
                     undefined -> undefined;
                     _ -> S - (Rcv - Req) - Ret - N - Queued
                 end,
            Base#{kind => queue, queued => Queued, unaccounted => Un, balanced => Un =:= 0};
        {ok, K} ->
            Stored = S - Ret - N,
            Unread = case K of
                         undefined -> undefined;
                         _ -> K * Stored - Rcv
                     end,
            Base#{kind => stream, queued => undefined, stored => Stored,
                  consumers_per_stream => K, unread => Unread,
                  unaccounted => Unread, balanced => Unread =:= 0}
    end.

%% @doc The accounting as one line, prefixed with the test id. With
%% `lost_queues' (queues the broker lost and the run declared again, at
%% `lost_at_s' seconds) the line says that their messages are part of the
%% unaccounted count.
-spec accounting_line(binary(), accounting()) -> binary().
accounting_line(Id, #{kind := stream, sent := S, received := Rcv, returned := Ret, nacked := N,
                      stored := Stored, consumers_per_stream := K, unread := Unread} = A) ->
    I = fun integer_to_binary/1,
    Read = case K of
               undefined ->
                   [<<"; read ">>, I(Rcv), <<" (the streams have different numbers of consumers)">>];
               _ ->
                   Expect = [I(K), <<" consumer">>, [$s || K =/= 1], <<" per stream x ">>, I(Stored),
                             <<" stored">>],
                   case Unread of
                       0 -> [<<"; read ">>, I(Rcv), <<" = ">>, Expect, <<" (balanced)">>];
                       _ -> [<<"; read ">>, I(Rcv), <<" of ">>, I(K * Stored), <<" = ">>, Expect,
                             <<": ">>, I(Unread), <<" unread (">>, verdict(A, []), <<")">>]
                   end
           end,
    iolist_to_binary([<<"id: ">>, Id, <<", accounting (streams keep what is read): sent ">>, I(S),
                      <<" = stored ">>, I(Stored), <<" + returned ">>, I(Ret), <<" + nacked ">>,
                      I(N), Read]);
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
    Tail = case Un of
               undefined -> <<" + queued ? (queue depth unknown)">>;
               0 -> [<<" + queued ">>, I(Q), <<" (balanced)">>];
               _ -> [<<" + queued ">>, I(Q), <<" + unaccounted ">>, I(Un), <<" (">>,
                     verdict(A, Lost), <<")">>]
           end,
    Requeued = case maps:get(requeued, A, 0) of
                   0 -> [];
                   R -> [<<" - requeued ">>, I(R)]
               end,
    iolist_to_binary([<<"id: ">>, Id, <<", accounting: sent ">>, I(S), <<" = received ">>, I(Rcv),
                      Requeued, <<" + returned ">>, I(Ret), <<" + nacked ">>, I(N), Tail]).

verdict(A, Lost) ->
    case {maps:get(reconnects, A, 0), maps:get(cut_short, A, false)} of
        {0, false} when Lost =:= [] -> <<"NOT balanced">>;
        {0, true} when Lost =:= [] ->
            <<"approximate: the end of the run was cut short by the shutdown timeout">>;
        {Rc, _} -> [<<"approximate after ">>, integer_to_binary(Rc), <<" reconnect">>, [$s || Rc =/= 1],
                    <<": in-flight messages lost with a connection are not counted,"
                      " redelivered ones are counted twice">>, Lost]
    end.

%% @doc A PerfTest-style test id, "test-HHMMSS-mmm", from a system time in
%% milliseconds.
-spec test_id(integer()) -> binary().
test_id(Ms) ->
    {_, {H, M, S}} = calendar:system_time_to_local_time(Ms div 1000, second),
    iolist_to_binary(io_lib:format("test-~2..0b~2..0b~2..0b-~3..0b", [H, M, S, Ms rem 1000])).
