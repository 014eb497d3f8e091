%%% @doc Live reporting of a load test: samples every node's agent, merges
%%% their counters and histogram snapshots, prints PerfTest's line for each
%%% interval, keeps each node's share (and what a node that went away had
%%% counted), and at the end prints the summary, the node shares, the clock
%%% offsets and the accounting (text from {@link beamlab_amqp_report}).
-module(beamlab_amqp_live).

-export([new/4, sample/2, interval/3, last_interval/3, at_stop/3, lose/3, totals/3, shares/3,
         summary/3, csv/1, write/2, write_utf8/2, empty_snap/0, zero_counts/0]).

-export_type([live/0, rates/0, share/0, node_state/0]).

%% Each node's latest counters and its latency histograms so far (kept for
%% a node that goes away).
-type node_state() :: #{counters := beamlab_amqp_agent:counts(),
                        consumer := beamlab_stats_hist:snapshot(),
                        confirm := beamlab_stats_hist:snapshot()}.
%% One interval's rates (msg/s) and its end, seconds into the run.
-type rates() :: #{time := float(), reconnects := float(), sent := float(),
                   returned := float(), confirmed := float(), nacked := float(),
                   received := float()}.
%% A node's part of the run.
-type share() :: #{node := node(), lost := boolean(),
                   sent := non_neg_integer(), received := non_neg_integer(),
                   returned := non_neg_integer(), confirmed := non_neg_integer(),
                   nacked := non_neg_integer(),
                   sent_pct := float() | null, received_pct := float() | null,
                   consumer_latency := beamlab_amqp_report:latency()}.
%% Samples merged over the agents that answered, each agent's own, and
%% the agents that did not answer in time.
-type merged() :: #{counters := beamlab_amqp_agent:counts(),
                    consumer := beamlab_stats_hist:snapshot(),
                    confirm := beamlab_stats_hist:snapshot(),
                    producers_done => non_neg_integer(),
                    consumers_done => non_neg_integer(),
                    by_agent => [{pid(), beamlab_amqp_agent:sample()}],
                    missing => [pid()]}.

%% Histogram samples merged into the nodes' shares at once.
-define(MERGE_SAMPLES, 16).

-record(live, {id :: binary(),
               out :: beamlab_amqp_config:out(),
               enabled :: beamlab_amqp_report:enabled(),
               unit :: beamlab_amqp_report:unit(),
               format :: default | compact,
               %% --output-file: the CSV rows so far (newest first), or none.
               csv :: [binary()] | none,
               annotate :: fun(() -> unicode:chardata() | none) | none,
               %% --metrics-port: where each interval is published.
               metrics :: beamlab_amqp_metrics:handle(),
               interval :: number(),
               t0 :: integer(),                          % monotonic, µs
               last :: beamlab_amqp_agent:counts(),
               last_t :: integer(),
               samples = [] :: [rates()],                % newest first
               cons = [] :: [beamlab_amqp_report:latency()],
               conf = [] :: [beamlab_amqp_report:latency()],
               shares = #{} :: #{node() => node_state()},
               %% Each node's histogram samples not merged into its share
               %% yet (consumer, confirm; newest first) and their number.
               pending = #{} :: #{node() => {[beamlab_stats_hist:snapshot()],
                                             [beamlab_stats_hist:snapshot()], pos_integer()}},
               lost = [] :: [{node(), term()}]}).        % nodes gone, exit reasons
-opaque live() :: #live{}.

%% @doc The live state of a run that started at `T0' (monotonic µs),
%% publishing each interval to `Metrics'.
-spec new(beamlab_amqp_config:config(), beamlab_amqp_report:enabled(), integer(),
          beamlab_amqp_metrics:handle()) -> live().
new(Cfg, Enabled, T0, Metrics) ->
    L = #live{id = maps:get(id, Cfg), out = maps:get(out, Cfg), enabled = Enabled,
              unit = case maps:get(use_millis, Cfg) of true -> ms; false -> us end,
              format = maps:get(metrics_format, Cfg),
              csv = case maps:get(output_file, Cfg) of undefined -> none; _ -> [] end,
              annotate = maps:get(annotate, Cfg), metrics = Metrics,
              interval = maps:get(interval, Cfg), t0 = T0, last_t = T0, last = zero_counts()},
    _ = L#live.format =:= compact andalso write(L, [beamlab_amqp_report:compact_header(Enabled), $\n]),
    L.

%% @doc Counters that have counted nothing.
-spec zero_counts() -> beamlab_amqp_agent:counts().
zero_counts() ->
    #{reconnects => 0, sent => 0, returned => 0, confirmed => 0, nacked => 0, received => 0,
      requeued => 0, late => 0, direct_reads => 0}.

%% @doc An empty latency histogram snapshot.
-spec empty_snap() -> beamlab_stats_hist:snapshot().
empty_snap() ->
    beamlab_stats_hist:empty(beamlab_amqp_agent:hist_options()).

%%--------------------------------------------------------------------
%% Sampling the agents

%% @doc Asks every agent for its sample and merges the answers that come
%% within `TimeoutMs'; `missing' names the agents that did not answer (a
%% frozen node must not hold the run). A node gone while we wait (its
%% 'DOWN') is put back in the mailbox for the loop that owns the agents;
%% the others' samples stand. A late answer is dropped with its reference.
-spec sample([pid()], non_neg_integer()) -> merged().
sample(Agents, TimeoutMs) ->
    Ref = make_ref(),
    _ = [A ! {sample, self(), Ref} || A <- Agents],
    collect_samples(Agents, Ref, [], [], erlang:monotonic_time(millisecond) + TimeoutMs).

collect_samples([], _Ref, Acc, Downs, _Deadline) ->
    merged(Acc, [], Downs);
collect_samples(Pending, Ref, Acc, Downs, Deadline) ->
    receive
        {sample, Ref, A, S} ->
            collect_samples(lists:delete(A, Pending), Ref, [{A, S} | Acc], Downs, Deadline);
        {'DOWN', _, process, A, _} = Down when is_pid(A) ->
            collect_samples(lists:delete(A, Pending), Ref, Acc, [Down | Downs], Deadline)
    after max(0, Deadline - erlang:monotonic_time(millisecond)) ->
        merged(Acc, Pending, Downs)
    end.

merged(Acc, Missing, Downs) ->
    _ = [self() ! D || D <- lists:reverse(Downs)],
    case Acc of
        [] -> #{counters => zero_counts(), consumer => empty_snap(), confirm => empty_snap(),
                by_agent => [], missing => Missing};
        _ -> (merge([S || {_, S} <- Acc]))#{by_agent => Acc, missing => Missing}
    end.

%% @doc Sums samples (or finals) of several nodes.
-spec merge([beamlab_amqp_agent:sample() | beamlab_amqp_agent:final() | node_state(), ...]) -> merged().
merge([First | Rest]) ->
    lists:foldl(
      fun(S, Acc) ->
              #{counters => add_counters(maps:get(counters, S), maps:get(counters, Acc)),
                consumer => beamlab_stats_hist:merge(maps:get(consumer, S), maps:get(consumer, Acc)),
                confirm => beamlab_stats_hist:merge(maps:get(confirm, S), maps:get(confirm, Acc)),
                producers_done => maps:get(producers_done, S, 0) + maps:get(producers_done, Acc, 0),
                consumers_done => maps:get(consumers_done, S, 0) + maps:get(consumers_done, Acc, 0)}
      end, First, Rest).

add_counters(A, B) ->
    maps:merge_with(fun(_, X, Y) -> X + Y end, A, B).

%%--------------------------------------------------------------------
%% Interval lines

%% @doc Samples every agent (waiting at most `TimeoutMs'), merges, prints
%% one PerfTest line and keeps the rates; returns the agents that did not
%% answer (their last counters stand for them).
-spec interval([pid()], non_neg_integer(), live()) -> {live(), Missing :: [pid()]}.
interval(Agents, TimeoutMs, #live{last = Last, last_t = LastT, t0 = T0} = L) ->
    case sample(Agents, TimeoutMs) of
        S ->
            L1 = add_shares(maps:get(by_agent, S), L),
            Now = erlang:monotonic_time(microsecond),
            Dt = max(1, Now - LastT) / 1000000,
            %% A node gone away counts with its last sample (the totals
            %% never go down).
            C = lists:foldl(fun add_counters/2, maps:get(counters, S),
                            gone_counters(maps:get(by_agent, S), L1)),
            Rates = maps:map(fun(K, V) -> (V - maps:get(K, Last)) / Dt end, C),
            Cons = beamlab_amqp_report:latency(maps:get(consumer, S)),
            Conf = beamlab_amqp_report:latency(maps:get(confirm, S)),
            Line = Rates#{consumer => Cons, confirm => Conf},
            write(L, [line(L, Now - T0, Line), $\n]),
            annotate(L),
            publish(L1, Dt),
            {L1#live{last = C, last_t = Now,
                     samples = [Rates#{time => (Now - T0) / 1000000} | L1#live.samples],
                     cons = [Cons | L1#live.cons], conf = [Conf | L1#live.conf],
                     csv = csv_row(L1, Now - T0, Line)},
             maps:get(missing, S)}
    end.

publish(#live{metrics = none}, _Dt) ->
    ok;
publish(#live{metrics = {_, T}} = L, Dt) ->
    beamlab_amqp_metrics:publish(T, (merge_pending(L))#live.shares, Dt).

%% The caller's line under the interval line (--watch: the broker's figures).
annotate(#live{annotate = none}) ->
    ok;
annotate(#live{annotate = F, id = Id} = L) ->
    case F() of
        none -> ok;
        Text -> write(L, [<<"id: ">>, Id, <<", ">>, Text, $\n])
    end.

line(#live{format = default, id = Id, enabled = En, unit = U}, ElapsedUs, Line) ->
    beamlab_amqp_report:interval_line(Id, ElapsedUs, Line, En, U);
line(#live{format = compact, enabled = En, unit = U}, ElapsedUs, Line) ->
    beamlab_amqp_report:compact_line(ElapsedUs, Line, En, U).

csv_row(#live{csv = none}, _ElapsedUs, _Line) ->
    none;
csv_row(#live{csv = Rows, id = Id, enabled = En, unit = U}, ElapsedUs, Line) ->
    [beamlab_amqp_report:csv_line(Id, ElapsedUs, Line, En, U) | Rows].

%% @doc PerfTest's CSV of the run's intervals (--output-file), or none.
-spec csv(live()) -> iodata() | none.
csv(#live{csv = none}) ->
    none;
csv(#live{csv = Rows, unit = U}) ->
    [beamlab_amqp_report:csv_header(U), $\n, [[R, $\n] || R <- lists:reverse(Rows)]].

%% @doc A run that ends more than half an interval after the last line gets
%% a last line for that stretch (as -z 3 gives lines at 1, 2 and 3 s).
-spec last_interval([pid()], non_neg_integer(), live()) -> {live(), [pid()]}.
last_interval(Agents, TimeoutMs, #live{last_t = LastT, interval = I} = L) ->
    case erlang:monotonic_time(microsecond) - LastT > I * 500000 of
        true -> interval(Agents, TimeoutMs, L);
        false -> {L, []}
    end.

%% @doc The counters when the run stopped (what the averages cover; what
%% is received while draining after the stop counts in the accounting
%% only): a fresh sample, or the last one when `Sampled' is false.
-spec at_stop([pid()] | none, non_neg_integer(), live()) -> beamlab_amqp_agent:counts().
at_stop(none, _TimeoutMs, L) ->
    L#live.last;
at_stop(Agents, TimeoutMs, L) ->
    #{counters := Cs, by_agent := ByA} = sample(Agents, TimeoutMs),
    %% Nodes gone (or silent) at the stop count with their last sample.
    lists:foldl(fun add_counters/2, Cs, gone_counters(ByA, L)).

%% The last counters of the nodes that did not answer this sample (gone
%% away, or going: their 'DOWN' may not have been handled yet).
gone_counters(ByAgent, L) ->
    Answered = [node(A) || {A, _} <- ByAgent],
    [maps:get(counters, S) || {N, S} <- maps:to_list(L#live.shares), not lists:member(N, Answered)].

%% Keeps the latest counters and the histograms so far of each node. A
%% merge into a node's histograms so far costs their size (thousands of
%% buckets in a long run), a sample's a few hundred: the samples wait and
%% go in together every MERGE_SAMPLES samples, and whenever the shares'
%% histograms are read (#33: a merge each second was much of the
%% coordinator's work at low rates).
add_shares(ByAgent, L) ->
    lists:foldl(
      fun({A, S}, #live{shares = Shares, pending = Pending} = Acc) ->
              N = node(A),
              %% Not maps:get/3: its default would be made every time.
              Old = case maps:find(N, Shares) of
                        {ok, O} -> O;
                        error -> #{consumer => empty_snap(), confirm => empty_snap()}
                    end,
              {Cs, Fs, K} = case maps:find(N, Pending) of
                                {ok, P} -> P;
                                error -> {[], [], 0}
                            end,
              Acc1 = Acc#live{shares = Shares#{N => Old#{counters => maps:get(counters, S)}},
                              pending = Pending#{N => {[maps:get(consumer, S) | Cs],
                                                       [maps:get(confirm, S) | Fs], K + 1}}},
              case K + 1 >= ?MERGE_SAMPLES of
                  true -> merge_pending(N, Acc1);
                  false -> Acc1
              end
      end, L, ByAgent).

%% Every node's pending samples merged into its share.
merge_pending(#live{pending = Pending} = L) ->
    lists:foldl(fun merge_pending/2, L, maps:keys(Pending)).

merge_pending(N, #live{shares = Shares, pending = Pending} = L) ->
    {{Cs, Fs, _}, Pending1} = maps:take(N, Pending),
    #{consumer := C, confirm := F} = Share = maps:get(N, Shares),
    Merged = Share#{consumer := beamlab_stats_hist:merge(C, beamlab_stats_hist:merge_all(Cs)),
                    confirm := beamlab_stats_hist:merge(F, beamlab_stats_hist:merge_all(Fs))},
    L#live{shares = Shares#{N := Merged}, pending = Pending1}.

%% @doc A node went away: named on a line, its share so far kept.
-spec lose(node(), Exit :: term(), live()) -> live().
lose(Node, Reason, L) ->
    Why = case Reason of
              {not_answering, Secs} -> io_lib:format("no answer for ~b s", [Secs]);
              _ -> io_lib:format("~0p", [Reason])
          end,
    write(L, [<<"id: ">>, L#live.id, <<", node ">>, atom_to_binary(Node), <<" went away (">>,
              Why, <<"); the run goes on with the other nodes\n">>]),
    L#live{lost = L#live.lost ++ [{Node, Reason}]}.

%%--------------------------------------------------------------------
%% The end of the run

%% @doc The run's totals: each node's final totals, or for a node gone
%% away or silent at the end (in `Silent') what it had counted until its
%% last sample.
-spec totals([{pid(), beamlab_amqp_agent:final()}], [node()], live()) -> {merged(), live()}.
totals(Finals, Silent, L0) ->
    L = merge_pending(L0),
    FinalShares = maps:from_list([{node(A), maps:with([counters, consumer, confirm], F)}
                                  || {A, F} <- Finals]),
    Shares = maps:merge(maps:with(lost_nodes(L) ++ Silent, L#live.shares), FinalShares),
    L1 = L#live{shares = Shares},
    Totals = case maps:values(Shares) of
                 [] -> #{counters => maps:merge(#{reconnects => 0}, L#live.last),
                         consumer => empty_snap(), confirm => empty_snap()};
                 Ss -> merge(Ss)
             end,
    {Totals, L1}.

%% @doc Every node of the run (those given and those that reported), each
%% with its share of the `Total' counters and its consumer latency, and the
%% nodes that went away with the reason.
-spec shares([node()], beamlab_amqp_agent:counts(), live()) ->
          {[node()], [share()], [{node(), Exit :: term()}]}.
shares(Given, Total, L0) ->
    #live{shares = ByNode} = L = merge_pending(L0),
    Nodes = lists:usort(Given ++ maps:keys(ByNode)),
    Lost = lost_nodes(L),
    {Nodes, [share(N, maps:get(N, ByNode, #{counters => #{}, consumer => empty_snap()}), Total, Lost)
             || N <- Nodes], L#live.lost}.

share(N, S, Total, Lost) ->
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
      consumer_latency => beamlab_amqp_report:latency(maps:get(consumer, S))}.

lost_nodes(L) ->
    [N || {N, _} <- L#live.lost].

%% @doc Prints the end of the run: why it stopped (`Stopped', a line
%% without the id, or none), PerfTest's summary, each node's share (several
%% nodes), the clock offsets (a queue's workers split over nodes), the
%% reconnects and the accounting. Returns the interval series.
-spec summary(live(), #{stopped := iodata() | none, summary := beamlab_amqp_report:summary(),
                        elapsed_us := non_neg_integer(), shares := [share()],
                        clock := #{node() => beamlab_runtime_clock:combined()} | none,
                        accounting := beamlab_amqp_report:accounting()},
              beamlab_amqp_agent:counts()) ->
          #{rates := [rates()], consumer := [beamlab_amqp_report:latency()],
            confirm := [beamlab_amqp_report:latency()]}.
summary(L, #{stopped := Stopped, summary := Sum, elapsed_us := ElapsedUs, shares := Shares,
             clock := Clock, accounting := Acc}, C) ->
    Id = L#live.id,
    _ = [write(L, [<<"id: ">>, Id, <<", ">>, Stopped, <<"\n">>]) || Stopped =/= none],
    write(L, beamlab_amqp_report:summary_lines(case L#live.format of default -> Id; compact -> none end,
                                               Sum, L#live.enabled, ElapsedUs, L#live.unit)),
    _ = [write(L, share_line(Id, S)) || length(Shares) > 1, S <- Shares],
    _ = [write(L, clock_lines(Id, Clock)) || Clock =/= none],
    _ = [write(L, [<<"id: ">>, Id, <<", reconnects: ">>, integer_to_binary(Rc), $\n])
         || Rc <- [maps:get(reconnects, C, 0)], Rc > 0],
    write(L, [beamlab_amqp_report:accounting_line(Id, Acc), $\n]),
    #{rates => lists:reverse(L#live.samples), consumer => lists:reverse(L#live.cons),
      confirm => lists:reverse(L#live.conf)}.

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

%%--------------------------------------------------------------------
%% Output

%% @doc Writes report text to the run's output.
-spec write(live(), iodata()) -> ok.
write(#live{out = Out}, IoData) when is_function(Out, 1) ->
    Out(iolist_to_binary(IoData));
write(#live{out = Device}, IoData) ->
    write_utf8(Device, iolist_to_binary(IoData)).

%% @doc Writes UTF-8 text to `Device' as UTF-8 whatever the device's
%% encoding (a latin1 device would otherwise turn "µ" into one byte).
%% A device that is gone (standard output closed early, `| head -1', a
%% terminal that hung up) drops the text: the run goes on and is saved.
-spec write_utf8(io:device(), binary()) -> ok.
write_utf8(Device, Bin) ->
    try io:getopts(Device) of
        Opts when is_list(Opts) ->
            _ = case lists:keyfind(encoding, 1, Opts) of
                    {encoding, unicode} -> io:put_chars(Device, Bin);
                    _ -> file:write(Device, Bin)
                end,
            ok;
        _ -> ok
    catch
        _:_ -> ok
    end.
