-module(beamlab_sut_growth_tests).
-include_lib("eunit/include/eunit.hrl").

-define(G, beamlab_sut_growth).

%% A sample as the sampler makes it (atom keys), every 500 ms.
sample(I, Over) ->
    maps:merge(#{t_ms => I * 500, processes => 100, ports => 5, atoms => 9000,
                 memory => #{total => 100000000, binary => 1000000},
                 growth => #{processes => 0, ports => 0, atoms => 0, memory_binary => 0},
                 top => #{by_reductions => [], by_message_queue => [], by_memory => []},
                 ets_top => []}, Over).

proc(Pid, Name, Q, Dq, Mem, Dm) ->
    #{pid => Pid, name => Name, current_function => <<"m:f/1">>, initial_call => <<"m:init/1">>,
      message_queue_len => Q, queue_delta => Dq, memory => Mem, memory_delta => Dm, since_ms => 500,
      reductions => 10, reductions_per_s => 20.0}.

run(Samples) ->
    lists:foldl(fun(S, {Acc, St}) ->
                        {New, St1} = ?G:step(S, St),
                        {Acc ++ [{maps:get(t_ms, S), F} || F <- New], St1}
                end, {[], ?G:new(#{interval => 500, limits => #{processes => 262144}})}, Samples).

ids(Raised) -> [maps:get(id, F) || {_, F} <- Raised].

%% Raised at the second sample (the first's change is since the start).
mailbox_test() ->
    Q = fun(I, N, D) -> sample(I, #{top => #{by_message_queue => [proc(<<"<0.9.0>">>, <<"sink">>, N, D, 5000000, 2000000)],
                                              by_memory => [proc(<<"<0.9.0>">>, <<"sink">>, N, D, 5000000, 2000000)]}}) end,
    {Raised, _} = run([Q(1, 10000, 10000), Q(2, 20000, 10000), Q(3, 30000, 10000)]),
    ?assertEqual([{1000, <<"mailbox_growing">>}], [{T, Id} || {T, #{id := Id}} <- Raised]),
    [{_, F}] = Raised,
    ?assertMatch(#{title := <<"Message queue growing: sink <0.9.0>">>,
                   data := #{<<"culprit">> := <<"<0.9.0>">>, <<"detected_ms">> := 1000,
                             <<"first">> := 0, <<"last">> := 20000, <<"from_ms">> := 0, <<"to_ms">> := 1000,
                             <<"last_ms">> := 1000}}, F),
    ?assertNotEqual(nomatch, binary:match(maps:get(evidence, F), <<"grew from 0 to 20000 messages over 0.0-1.0 s (20000 msg/s)">>)),
    %% the same process's memory grew too: one finding, not two
    ?assertNot(lists:member(<<"process_memory_growing">>, ids(Raised))).

%% A queue that rises once, or is small, or drains, is not raised.
mailbox_quiet_test() ->
    Q = fun(I, N, D) -> sample(I, #{top => #{by_message_queue => [proc(<<"<0.9.0>">>, <<"busy">>, N, D, 1000, 0)]}}) end,
    ?assertEqual([], ids(element(1, run([Q(1, 5000, 5000), Q(2, 100, -4900), Q(3, 3000, 2900), Q(4, 10, -2990)])))),
    ?assertEqual([], ids(element(1, run([Q(1, 300, 100), Q(2, 600, 300), Q(3, 900, 300)])))),
    %% a gap (the process left the top list) starts the track again
    ?assertEqual([], ids(element(1, run([Q(1, 5000, 5000), sample(2, #{}), Q(3, 9000, 4000)])))).

process_memory_test() ->
    M = fun(I, Mem, D) -> sample(I, #{top => #{by_memory => [proc(<<"<0.7.0>">>, <<"leaker">>, 0, 0, Mem, D)]}}) end,
    {Raised, _} = run([M(1, 2000000, 1500000), M(2, 2000000, 0), M(3, 4000000, 2000000)]),
    ?assertEqual([{1000, <<"process_memory_growing">>}], [{T, Id} || {T, #{id := Id}} <- Raised]),
    %% garbage collected back down in between: not a leak
    ?assertEqual([], ids(element(1, run([M(1, 3000000, 1000000), M(2, 1000000, -2000000), M(3, 1500000, 500000)])))).

binary_test() ->
    B = fun(I, Bin, D, Holders) -> sample(I, #{memory => #{total => 1, binary => Bin},
                                               growth => #{memory_binary => D}, binary_holders => Holders}) end,
    H = [#{pid => <<"<0.5.0>">>, name => <<"holder">>, binary => 9000000, binaries => 90}],
    {[{1000, F}], _} = run([B(1, 5000000, 4000000, H), B(2, 9000000, 4000000, []), B(3, 9000000, 0, [])]),
    ?assertMatch(#{id := <<"binary_growing">>, title := <<"Refc binary memory growing, held by holder <0.5.0>">>}, F),
    ?assertNotEqual(nomatch, binary:match(maps:get(evidence, F), <<"(8.58 MiB in 90 binaries)">>)).

ets_test() ->
    E = fun(I, Mem, D) -> sample(I, #{ets_top => [#{id => <<"leaky">>, name => <<"leaky">>, owner => <<"<0.6.0>">>,
                                                    owner_name => <<"owner">>, memory => Mem, memory_delta => D,
                                                    size => 1000, type => <<"set">>}]}) end,
    {[{1000, F}], _} = run([E(1, 1000000, 400000), E(2, 1400000, 400000)]),
    ?assertMatch(#{id := <<"ets_growing">>, title := <<"ETS table growing: leaky (owner owner <0.6.0>)">>}, F).

%% Counts: the new processes' initial call and spawner in the title; close
%% to the limit at this rate: critical.
processes_test() ->
    Groups = #{count => 800, sampled => 50, alive => 50,
               groups => [#{initial_call => <<"timer:sleep/1">>, spawned_by => <<"spawner">>, count => 50}]},
    P = fun(I, N, D, Extra) -> sample(I, maps:merge(#{processes => N, growth => #{processes => D}}, Extra)) end,
    {[{1000, F}], _} = run([P(1, 1000, 800, #{new_processes => Groups}), P(2, 1800, 800, #{}), P(3, 1800, 0, #{})]),
    ?assertMatch(#{id := <<"processes_growing">>, severity := warning,
                   title := <<"Process count growing: timer:sleep/1 started by spawner">>}, F),
    {[{1000, _}], St} = run([P(1, 200000, 50000, #{}), P(2, 250000, 50000, #{}), P(3, 255000, 5000, #{})]),
    [Crit] = [F1 || F1 <- ?G:findings(series([P(1, 200000, 50000, #{}), P(2, 250000, 50000, #{}),
                                               P(3, 255000, 5000, #{})]))],
    ?assertNotEqual(undefined, St),
    ?assertMatch(#{severity := critical}, Crit),
    ?assertNotEqual(nomatch, binary:match(maps:get(evidence, Crit), <<"limit 262 Ki">>)).

atoms_quiet_below_threshold_test() ->
    A = fun(I, N, D) -> sample(I, #{atoms => N, growth => #{atoms => D}}) end,
    ?assertEqual([], ids(element(1, run([A(1, 9100, 100), A(2, 9200, 100), A(3, 9300, 100)])))),
    ?assertEqual([<<"atoms_growing">>], ids(element(1, run([A(1, 9400, 400), A(2, 9800, 400)])))).

%% Growth that goes on for five samples is critical.
sustained_test() ->
    E = fun(I) -> sample(I, #{ets_top => [#{id => <<"t">>, name => <<"t">>, owner => <<"<0.6.0>">>, owner_name => null,
                                           memory => I * 600000, memory_delta => 600000, size => I, type => <<"set">>}]}) end,
    Series = series([E(I) || I <- lists:seq(1, 6)]),
    [F] = ?G:findings(Series),
    ?assertMatch(#{severity := critical, data := #{<<"samples">> := 6, <<"detected_ms">> := 1000}}, F).

%% The system monitor's events: once per kind and culprit, counted on.
events_test() ->
    Ev = fun(I, C, Max) -> sample(I, #{monitor_events => [#{event => long_gc, pid => <<"<0.8.0>">>, name => <<"big">>,
                                                           count => C, max_ms => Max}]}) end,
    {Raised, St} = run([Ev(1, 2, 40), Ev(2, 3, 1200), sample(3, #{})]),
    ?assertEqual([{500, <<"long_gc">>}], [{T, Id} || {T, #{id := Id}} <- Raised]),
    ?assertNotEqual(undefined, St),
    [F] = ?G:findings(series([Ev(1, 2, 40), Ev(2, 3, 1200), sample(3, #{})])),
    ?assertMatch(#{severity := critical, title := <<"Long garbage collections: big <0.8.0>">>,
                   data := #{<<"count">> := 5, <<"max_ms">> := 1200}}, F).

%% The document's findings are the live ones, completed, plus the node's
%% silences and a system monitor held by someone else.
series_test() ->
    Q = fun(I, N, D) -> sample(I, #{top => #{by_message_queue => [proc(<<"<0.9.0>">>, <<"sink">>, N, D, 1, 0)]}}) end,
    Series = (series([Q(1, 2000, 2000), Q(2, 4000, 2000), Q(3, 9000, 5000)]))#{
               unanswered => [#{from_ms => 1600, to_ms => 3100}],
               system_monitor => #{state => taken, holder => <<"<0.77.0>">>}},
    Fs = ?G:findings(beamlab_json:canonical(Series)),
    ?assertEqual([<<"mailbox_growing">>, <<"node_unresponsive">>, <<"system_monitor_taken">>], [maps:get(id, F) || F <- Fs]),
    [M | _] = Fs,
    ?assertMatch(#{data := #{<<"last">> := 9000, <<"from_ms">> := 0, <<"to_ms">> := 1000, <<"last_ms">> := 1500}}, M).

live_line_test() ->
    F = beamlab_result:finding(x, warning, <<"T">>, <<"E">>, <<"A">>, #{}),
    ?assertEqual(<<"          ! [warning] T: E\n">>, iolist_to_binary(?G:live_line(F))).

%% Samples -> the sampler's columnar series.
series(Samples) ->
    Keys = lists:usort(lists:append([maps:keys(S) || S <- Samples])),
    Nested = [memory, growth],
    Flat = maps:from_list([{K, [maps:get(K, S, null) || S <- Samples]} || K <- Keys, not lists:member(K, Nested)]),
    Sub = maps:from_list([{K, columns([maps:get(K, S, #{}) || S <- Samples])} || K <- Nested]),
    maps:merge(Flat, Sub#{interval_ms => 500, samples => length(Samples), limits => #{processes => 262144}}).

columns(Maps) ->
    Keys = lists:usort(lists:append([maps:keys(M) || M <- Maps])),
    maps:from_list([{K, [maps:get(K, M, null) || M <- Maps]} || K <- Keys]).
