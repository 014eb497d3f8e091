%%% @doc EUnit tests of beamlab_stats_hist: layout, precision corners,
%%% overflow, concurrent recording, reset and the JSON map.
-module(beamlab_stats_hist_tests).

-include_lib("eunit/include/eunit.hrl").

snap(Opts, Vs) ->
    H = beamlab_stats_hist:new(Opts),
    [beamlab_stats_hist:record(H, V) || V <- Vs],
    beamlab_stats_hist:snapshot(H).

empty_test() ->
    S = beamlab_stats_hist:snapshot(beamlab_stats_hist:new()),
    ?assertEqual(0, beamlab_stats_hist:count(S)),
    ?assertEqual(undefined, beamlab_stats_hist:mean(S)),
    ?assertEqual([undefined, undefined], beamlab_stats_hist:percentiles(S, [50, 99])),
    ?assertEqual(S, beamlab_stats_hist:empty(#{})),
    ?assertEqual({ok, S}, beamlab_stats_hist:from_map(beamlab_stats_hist:to_map(S))).

small_values_exact_test() ->
    %% Below 2^bits every value has its own bucket: percentiles are exact.
    S = snap(#{significant_digits => 2}, lists:seq(0, 255)),
    ?assertEqual([0, 25, 127, 253, 255],
                 beamlab_stats_hist:percentiles(S, [0, 10, 50, 99, 100])),
    ?assertEqual(127.5, beamlab_stats_hist:mean(S)).

bucket_layout_test() ->
    %% 2 digits -> 8 bits: width 1 up to 255, then width 2, 4, ...
    S = snap(#{significant_digits => 2}, [255, 256, 257, 511, 512, 1023, 1024]),
    ?assertEqual([{255, 255, 1}, {256, 257, 2}, {510, 511, 1}, {512, 515, 1},
                  {1020, 1023, 1}, {1024, 1031, 1}],
                 beamlab_stats_hist:buckets(S)),
    ?assertEqual(8, maps:get(bits, S)),
    ?assertEqual(11, maps:get(bits, snap(#{significant_digits => 3}, []))).

precision_bound_test() ->
    %% One value per bucket boundary region, far from the exact zone.
    Vs = [1000003, 123456789, 987654321012, 3 bsl 38],
    [begin
         S = snap(#{significant_digits => D}, [V]),
         %% 1 value: rank 1 is the exact min; use two equal values and P50.
         S2 = beamlab_stats_hist:merge(S, S),
         R = beamlab_stats_hist:percentile(S2, 50),
         ?assertEqual(V, R),
         %% A value in the middle of a bucket reports the bucket middle.
         S3 = snap(#{significant_digits => D}, [V, V, V + 1, V + 2, V + 3]),
         [?assert(abs(P - V) =< V / (2 * math:pow(10, D)))
          || P <- beamlab_stats_hist:percentiles(S3, [40, 50, 60])]
     end || V <- Vs, D <- [2, 3]].

overflow_test() ->
    H = beamlab_stats_hist:new(#{max => 1000}),
    beamlab_stats_hist:record(H, 10),
    beamlab_stats_hist:record_n(H, 5000, 3),
    S = beamlab_stats_hist:snapshot(H),
    ?assertEqual(4, beamlab_stats_hist:count(S)),
    ?assertEqual(3, beamlab_stats_hist:overflow(S)),
    ?assertEqual(1000, beamlab_stats_hist:max(S)),
    ?assertEqual(3010, beamlab_stats_hist:sum(S)),
    ?assertEqual(1000, beamlab_stats_hist:percentile(S, 99.9)).

record_n_test() ->
    H = beamlab_stats_hist:new(#{write_concurrency => false}),
    beamlab_stats_hist:record_n(H, 7, 5),
    beamlab_stats_hist:record_n(H, 9, 0),
    S = beamlab_stats_hist:snapshot(H),
    ?assertMatch(#{count := 5, sum := 35, min := 7, max := 7}, S).

%% A one-value list (its own clause, #33) records what a pass over a
%% longer list does, in and beyond the exact region, past the maximum,
%% exact or not, and so does a list with runs of equal values; a bad
%% value is refused as in a longer list.
record_list_one_value_test_() ->
    [?_assertEqual(as_list(Exact, Vs), as_singletons(Exact, Vs))
     || Exact <- [true, false],
        Vs <- [[0, 0], [3, 3], [1500, 7, 1 bsl 20], [5000, 12],
               %% runs of equal values, one add each (#33), past the maximum too
               [9, 9, 9, 4, 4, 9, 5000, 5000, 6000, 4096, 4096, 0]]]
    ++ [?_assertError(function_clause, beamlab_stats_hist:record_list(beamlab_stats_hist:new(#{exact => Exact}), Vs))
        || Exact <- [true, false], Vs <- [[-1], [3, -1], [3, 3, x], [5, 5.0]]].

as_list(Exact, Vs) ->
    H = beamlab_stats_hist:new(#{max => 4096, exact => Exact}),
    ok = beamlab_stats_hist:record_list(H, Vs),
    beamlab_stats_hist:snapshot(H).

as_singletons(Exact, Vs) ->
    H = beamlab_stats_hist:new(#{max => 4096, exact => Exact}),
    [ok = beamlab_stats_hist:record_list(H, [V]) || V <- Vs],
    beamlab_stats_hist:snapshot(H).

concurrent_record_test() ->
    H = beamlab_stats_hist:new(#{significant_digits => 2}),
    Self = self(),
    Pids = [spawn_link(fun() ->
                               [beamlab_stats_hist:record(H, I * 1000 + V)
                                || V <- lists:seq(1, 1000)],
                               Self ! {done, self()}
                       end) || I <- lists:seq(1, 8)],
    [receive {done, P} -> ok end || P <- Pids],
    S = beamlab_stats_hist:snapshot(H),
    ?assertEqual(8000, beamlab_stats_hist:count(S)),
    ?assertEqual(1001, beamlab_stats_hist:min(S)),
    ?assertEqual(9000, beamlab_stats_hist:max(S)),
    ?assertEqual(lists:sum([I * 1000 + V || I <- lists:seq(1, 8),
                                           V <- lists:seq(1, 1000)]),
                 beamlab_stats_hist:sum(S)).

reset_test() ->
    H = beamlab_stats_hist:new(),
    beamlab_stats_hist:record(H, 123),
    ok = beamlab_stats_hist:reset(H),
    ?assertEqual(beamlab_stats_hist:empty(#{}), beamlab_stats_hist:snapshot(H)),
    beamlab_stats_hist:record(H, 5),
    ?assertMatch(#{count := 1, min := 5, max := 5},
                 beamlab_stats_hist:snapshot(H)).

snapshot_survives_term_to_binary_test() ->
    S = snap(#{}, [1, 20, 300, 4000, 50000]),
    ?assertEqual(S, binary_to_term(term_to_binary(S))).

from_map_errors_test() ->
    M = beamlab_stats_hist:to_map(snap(#{}, [1, 2, 3])),
    ?assertEqual({error, {missing_field, <<"count">>}},
                 beamlab_stats_hist:from_map(maps:remove(<<"count">>, M))),
    ?assertEqual({error, {bad_field, <<"count">>}},
                 beamlab_stats_hist:from_map(M#{<<"count">> => 4})),
    ?assertEqual({error, {bad_field, <<"buckets">>}},
                 beamlab_stats_hist:from_map(M#{<<"buckets">> => [[1, -1]]})),
    ?assertEqual({error, not_a_map}, beamlab_stats_hist:from_map([])),
    ?assertEqual("histogram: missing field \"count\"",
                 lists:flatten(beamlab_stats_hist:format_error(
                                 {missing_field, <<"count">>}))).

bad_options_test() ->
    ?assertError({badarg, _}, beamlab_stats_hist:new(#{significant_digits => 7})),
    ?assertError({badarg, _}, beamlab_stats_hist:new(#{max => 0})),
    ?assertError(function_clause,
                 beamlab_stats_hist:record(beamlab_stats_hist:new(), -1)),
    ?assertError({badarg, _},
                 beamlab_stats_hist:percentile(snap(#{}, [1]), 101)).

summary_test() ->
    S = snap(#{significant_digits => 3}, lists:seq(1, 1000)),
    ?assertMatch(#{n := 1000, mean := 500.5, min := 1, max := 1000,
                   median := 500, p99 := 990, p999 := 999, p1 := 10,
                   overflow := 0, significant_digits := 3},
                 beamlab_stats_hist:summary(S)),
    ?assertEqual(#{n => 0, overflow => 0, significant_digits => 2},
                 beamlab_stats_hist:summary(
                   beamlab_stats_hist:empty(#{significant_digits => 2}))).

inexact_test() ->
    H = beamlab_stats_hist:new(#{significant_digits => 2, max => 100000,
                                 exact => false}),
    [beamlab_stats_hist:record(H, V) || V <- [3, 1000, 1001, 70000]],
    beamlab_stats_hist:record_n(H, 500000, 2),
    S = beamlab_stats_hist:snapshot(H),
    %% 3 has an exact bucket; 1000/1001 share [1000, 1003] (middle 1002);
    %% overflowed values count as max.
    ?assertMatch(#{exact := false, count := 6, overflow := 2, min := 3,
                   max := 100000}, S),
    ?assertEqual(3 + 1002 + 1002 + beamlab_stats_hist:percentile(S, 60)
                 + 2 * 100000, beamlab_stats_hist:sum(S)),
    Merged = beamlab_stats_hist:merge(S, snap(#{significant_digits => 2}, [1])),
    ?assertMatch(#{exact := false, count := 7, min := 1}, Merged),
    ?assertEqual({ok, S}, beamlab_stats_hist:from_map(beamlab_stats_hist:to_map(S))).

%% Inline recording into the exact buckets of an inexact histogram gives
%% the same snapshot as record/2, and the bound is where exact buckets end
%% (or past the largest trackable value).
inline_buckets_test() ->
    New = fun(Max) -> beamlab_stats_hist:new(#{significant_digits => 3, max => Max,
                                                exact => false}) end,
    {Ref, Bound} = beamlab_stats_hist:inline_buckets(H1 = New(1 bsl 40)),
    ?assertEqual(2048, Bound),
    Vs = [0, 1, 7, 7, 2047],
    [counters:add(Ref, V + 1, 1) || V <- Vs],
    H2 = New(1 bsl 40),
    [beamlab_stats_hist:record(H2, V) || V <- Vs],
    ?assertEqual(beamlab_stats_hist:snapshot(H2), beamlab_stats_hist:snapshot(H1)),
    ?assertMatch({_, 101}, beamlab_stats_hist:inline_buckets(New(100))).

decimal_percentile_rank_test() ->
    %% With N = 41000, 99.9 * N / 100 computed in floats is slightly above
    %% the integer 40959: a plain ceil would pick rank 40960.
    N = 41000,
    K = 40959,
    ?assert(99.9 * N / 100 > K),
    H = beamlab_stats_hist:new(#{write_concurrency => false}),
    beamlab_stats_hist:record_n(H, 100, K),
    beamlab_stats_hist:record_n(H, 1000000, N - K),
    ?assertEqual(100, beamlab_stats_hist:percentile(
                        beamlab_stats_hist:snapshot(H), 99.9)).

%% take/1: a snapshot that empties what it read; the next take has only
%% what was recorded since.
take_empties_test() ->
    H = beamlab_stats_hist:new(#{max => 1000000}),
    [beamlab_stats_hist:record(H, V) || V <- [5, 70, 70, 123456, 2000000]],
    Ref = beamlab_stats_hist:new(#{max => 1000000}),
    [beamlab_stats_hist:record(Ref, V) || V <- [5, 70, 70, 123456, 2000000]],
    ?assertEqual(beamlab_stats_hist:snapshot(Ref), beamlab_stats_hist:take(H)),
    Empty = beamlab_stats_hist:take(H),
    ?assertMatch(#{count := 0, sum := 0, min := undefined, max := undefined, overflow := 0,
                   buckets := []}, Empty),
    beamlab_stats_hist:record(H, 9),
    ?assertMatch(#{count := 1, sum := 9, min := 9, max := 9}, beamlab_stats_hist:take(H)).

%% Values recorded while takes run are each in exactly one take: the
%% merge of the takes is everything recorded, count, sum and extremes.
take_loses_nothing_test() ->
    H = beamlab_stats_hist:new(#{max => 1 bsl 30}),
    Self = self(),
    Vs = [[(I * 7919 + W * 104729) rem 100000 + 1 || I <- lists:seq(1, 20000)] || W <- [1, 2, 3]],
    Ws = [spawn_link(fun() -> [beamlab_stats_hist:record(H, V) || V <- L], Self ! {done, self()} end)
          || L <- Vs],
    Takes = take_until_done(H, Ws, []),
    All = lists:append(Vs),
    M = lists:foldl(fun beamlab_stats_hist:merge/2, hd(Takes), tl(Takes)),
    ?assertEqual(length(All), beamlab_stats_hist:count(M)),
    ?assertEqual(lists:sum(All), beamlab_stats_hist:sum(M)),
    %% Extremes: exact, or (a recorder descheduled between its bucket and
    %% its extremes) within the precision of 3 significant digits.
    Near = fun(Exact, Got) -> abs(Got - Exact) =< Exact div 1000 + 1 end,
    ?assert(Near(lists:min(All), beamlab_stats_hist:min(M))),
    ?assert(Near(lists:max(All), beamlab_stats_hist:max(M))).

%% take/1 reads only the buckets between the extremes of its epoch and
%% the previous one (#33): values recorded while takes run, whose ranges
%% move from take to take (each recorder walks up, then down, a wide range
%% of values), are each in exactly one take, bucket for bucket.
take_ranges_lose_nothing_test() ->
    H = beamlab_stats_hist:new(#{max => 1 bsl 30}),
    Ref = beamlab_stats_hist:new(#{max => 1 bsl 30}),
    Self = self(),
    Up = [I * I * W || I <- lists:seq(1, 3000), W <- [1]],
    Vs = [Up ++ lists:reverse(Up), [V * 3 + 1 || V <- lists:reverse(Up) ++ Up], [7 || _ <- Up]],
    [beamlab_stats_hist:record(Ref, V) || L <- Vs, V <- L],
    Ws = [spawn_link(fun() -> [beamlab_stats_hist:record(H, V) || V <- L], Self ! {done, self()} end)
          || L <- Vs],
    Takes = take_until_done(H, Ws, []),
    M = lists:foldl(fun beamlab_stats_hist:merge/2, hd(Takes), tl(Takes)),
    R = beamlab_stats_hist:snapshot(Ref),
    ?assertEqual(beamlab_stats_hist:buckets(R), beamlab_stats_hist:buckets(M)),
    ?assertEqual(beamlab_stats_hist:sum(R), beamlab_stats_hist:sum(M)),
    %% Nothing is left for a full pass.
    ?assertMatch(#{count := 0, buckets := []}, beamlab_stats_hist:take_all(H)).

%% A take has only what was recorded since the previous one, wherever it
%% lies; take_all/1 finds the same.
take_moves_with_values_test() ->
    H = beamlab_stats_hist:new(#{max => 1 bsl 30}),
    beamlab_stats_hist:record(H, 3),
    ?assertMatch(#{count := 1, min := 3, max := 3}, beamlab_stats_hist:take(H)),
    beamlab_stats_hist:record(H, 1000000),
    ?assertMatch(#{count := 1, min := 1000000, max := 1000000}, beamlab_stats_hist:take(H)),
    [beamlab_stats_hist:record(H, V) || V <- [2, 5000000]],
    ?assertMatch(#{count := 2, min := 2, max := 5000000}, beamlab_stats_hist:take(H)),
    ?assertMatch(#{count := 0}, beamlab_stats_hist:take(H)),
    beamlab_stats_hist:record(H, 40),
    ?assertMatch(#{count := 1, min := 40, max := 40, sum := 40}, beamlab_stats_hist:take_all(H)),
    ?assertMatch(#{count := 0, buckets := []}, beamlab_stats_hist:take(H)).

take_until_done(H, [], Acc) ->
    [beamlab_stats_hist:take(H) | Acc];
take_until_done(H, Ws, Acc) ->
    T = beamlab_stats_hist:take(H),
    receive {done, W} -> take_until_done(H, lists:delete(W, Ws), [T | Acc])
    after 0 -> take_until_done(H, Ws, [T | Acc])
    end.

%% merge_all/1 (pairwise) is the snapshot of every value of its inputs,
%% as one histogram of all of them would be, for any number of inputs,
%% empty ones and mixed precisions among them (the coarser one wins).
merge_all_test() ->
    Parts = [[(I * 7919 + K * 104729) rem 50000 + K || I <- lists:seq(1, 40 * K)] || K <- lists:seq(0, 16)],
    Snaps = [snap(#{}, P) || P <- Parts],
    All = snap(#{}, lists:append(Parts)),
    [?assertEqual(snap(#{}, lists:append(lists:sublist(Parts, N))),
                  beamlab_stats_hist:merge_all(lists:sublist(Snaps, N)))
     || N <- [1, 2, 3, 16, 17]],
    ?assertEqual(All, beamlab_stats_hist:merge_all(lists:reverse(Snaps))),
    Mixed = beamlab_stats_hist:merge_all([snap(#{significant_digits => 2}, [5, 5000]) | tl(Snaps)]),
    ?assertEqual(2, maps:get(significant_digits, Mixed)),
    ?assertEqual(2 + lists:sum([length(P) || P <- tl(Parts)]), beamlab_stats_hist:count(Mixed)).
