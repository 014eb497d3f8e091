%%% @doc Log-linear (HdrHistogram-style) histogram of non-negative integers,
%%% for latencies recorded concurrently by many processes.
%%%
%%% A histogram is a handle on `counters' and `atomics' arrays: any process
%%% on the node may call {@link record/2} without messages or locks.
%%% {@link snapshot/1} turns it into a plain sparse map that can be sent to
%%% other nodes, merged, queried and stored as JSON.
%%%
%%% Layout. With `B' sub-bucket bits (2^B >= 2 * 10^digits) and H = 2^(B-1),
%%% values below 2^B have exact buckets of width 1. A larger value V with
%%% bit length L is shifted right by S = L - B, leaving a B-bit mantissa M in
%%% [H, 2H); its bucket index is H*S + M, its bucket covers
%%% [M*2^S, (M+1)*2^S). Percentiles report the bucket middle, so the
%%% relative error of a reported value is at most 2^S/2 / (H*2^S) =
%%% 1/2^B =< 1/(2 * 10^digits): within 0.5% for 2 digits, 0.05% for 3.
%%% Bucket-width-1 values, the minimum and the maximum are exact.
%%%
%%% Cost. By default `count', `sum', `min' and `max' are exact, which costs
%%% a record an `atomics:add_get' on its bucket, an `atomics:add' to the
%%% sum and two `atomics:get' ({@link record_list/2}: the bucket's for
%%% each value, the rest once per list). These are `atomics', one BIF call
%%% each (a `counters' update is two calls on OTP 25, which was most of a
%%% load generator's recording, #33), so recorders on different schedulers
%%% share the cache lines of a bucket and of the sum
%%% (bench/hist_contention.escript measures what that costs). With
%%% `exact => false' a
%%% record is a bucket `counters:add' alone (per-scheduler cells with
%%% `write_concurrency': no shared line, for hot loops of many processes);
%%% sum, min and max are then derived from the buckets at snapshot time
%%% (bucket middles, so within the same relative bound as percentiles).
-module(beamlab_stats_hist).

%% Called per recorded value: inlined, one call (reduction) less each (#33).
-compile({inline, [index/2, add/4, keep/3, record_items/3]}).

-export([new/0, new/1, record/2, record_n/3, record_list/2, record_counts/2, inline_buckets/1, reset/1,
         snapshot/1, take/1, take_all/1, merge/2, merge_all/1, empty/1,
         count/1, sum/1, mean/1, min/1, max/1, overflow/1,
         percentile/2, percentiles/2, summary/1, buckets/1,
         to_map/1, from_map/1, format_error/1]).

-export_type([hist/0, snapshot/0, options/0]).

-record(hist, {%% Exact histograms: atomics, one per bucket, and one mark
               %% per block of 16 buckets, set after the first value
               %% put in an empty bucket of the block (take/1). Inexact:
               %% counters (inline_buckets/1), no marks.
               buckets :: atomics:atomics_ref() | counters:counters_ref(),
               marks :: atomics:atomics_ref() | none,
               %% min, max; the previous take's min and max (take/1);
               %% overflow; sum (?SUM). Atomics: a take exchanges them, one
               %% call each.
               cells :: atomics:atomics_ref(),
               digits :: 1..4,
               bits :: pos_integer(),
               max :: pos_integer(),
               nbuckets :: pos_integer(),
               exact :: boolean()}).

-opaque hist() :: #hist{}.
-type options() :: #{significant_digits => 1..4, max => pos_integer(),
                     write_concurrency => boolean(), exact => boolean()}.
-type snapshot() :: #{significant_digits := 1..4,
                      bits := pos_integer(),
                      max_trackable := pos_integer(),
                      count := non_neg_integer(),
                      sum := non_neg_integer(),
                      min := non_neg_integer() | undefined,
                      max := non_neg_integer() | undefined,
                      overflow := non_neg_integer(),
                      exact := boolean(),
                      buckets := [{non_neg_integer(), pos_integer()}]}.

-define(DEFAULT_DIGITS, 3).
%% 2^40 ns is 18 minutes, 2^40 us is 12 days.
-define(DEFAULT_MAX, (1 bsl 40)).
%% Larger values would leave the small-integer range of the atomics.
-define(LIMIT_MAX, ((1 bsl 62) - 1)).
-define(EMPTY_MIN, ((1 bsl 63) - 1)).
-define(OVERFLOW, 5).
%% 64 bytes past the extremes, so on another cache line: every record
%% writes the sum and reads the extremes, which then stay in each
%% recorder's cache (extremes change rarely).
-define(SUM, 9).
%% Buckets per mark: 2^4 (take_block/3 is written for 16). A take reads a
%% mark per block between the extremes and the buckets of the marked
%% blocks only.
-define(BLOCK_BITS, 4).

%% @equiv new(#{})
-spec new() -> hist().
new() -> new(#{}).

%% @doc A new empty histogram. `significant_digits' (1..4, default 3) sets
%% the precision, `max' (default 2^40) the largest trackable value: larger
%% values are recorded as `max' and counted in `overflow'. Memory is about
%% 8 bytes per bucket (an inexact histogram's per scheduler with
%% `write_concurrency', the default; it does not apply to exact ones):
%% 3 digits and max 2^40 need 31744 buckets. `exact' (default true): see
%% the module documentation.
-spec new(options()) -> hist().
new(Opts) when is_map(Opts) ->
    Digits = maps:get(significant_digits, Opts, ?DEFAULT_DIGITS),
    Max = maps:get(max, Opts, ?DEFAULT_MAX),
    (is_integer(Digits) andalso Digits >= 1 andalso Digits =< 4)
        orelse error({badarg, {significant_digits, Digits}}),
    (is_integer(Max) andalso Max >= 1 andalso Max =< ?LIMIT_MAX)
        orelse error({badarg, {max, Max}}),
    Exact = maps:get(exact, Opts, true),
    is_boolean(Exact) orelse error({badarg, {exact, Exact}}),
    Bits = bits(Digits),
    NBuckets = index(Max, Bits) + 1,
    CounterOpts = case maps:get(write_concurrency, Opts, true) of
                      true -> [write_concurrency];
                      false -> []
                  end,
    {Buckets, Marks} =
        case Exact of
            true ->
                %% Whole blocks, so that a take reads a block without bounds.
                NBlocks = nblocks(NBuckets),
                {atomics:new(NBlocks bsl ?BLOCK_BITS, [{signed, false}]),
                 atomics:new(NBlocks, [{signed, false}])};
            false ->
                {counters:new(NBuckets, CounterOpts), none}
        end,
    Cells = atomics:new(?SUM, [{signed, true}]),
    atomics:put(Cells, 1, ?EMPTY_MIN),
    atomics:put(Cells, 2, -1),
    atomics:put(Cells, 3, ?EMPTY_MIN),
    atomics:put(Cells, 4, -1),
    #hist{buckets = Buckets, marks = Marks, cells = Cells, digits = Digits, bits = Bits,
          max = Max, nbuckets = NBuckets, exact = Exact}.

%% @doc Record one value.
-spec record(hist(), non_neg_integer()) -> ok.
record(H, V) -> record_n(H, V, 1).

%% @doc Record value `V' `N' times.
-spec record_n(hist(), non_neg_integer(), non_neg_integer()) -> ok.
record_n(_H, V, 0) when is_integer(V), V >= 0 -> ok;
record_n(#hist{exact = false, buckets = C, cells = E, bits = Bits, max = Max}, V, N)
  when is_integer(V), V >= 0, is_integer(N), N > 0 ->
    case V > Max of
        true ->
            atomics:add(E, ?OVERFLOW, N),
            counters:add(C, index(Max, Bits) + 1, N);
        false ->
            counters:add(C, index(V, Bits) + 1, N)
    end;
record_n(#hist{buckets = A, marks = M, cells = E, bits = Bits, max = Max},
         V0, N) when is_integer(V0), V0 >= 0, is_integer(N), N > 0 ->
    V = case V0 > Max of
            true ->
                atomics:add(E, ?OVERFLOW, N),
                Max;
            false -> V0
        end,
    add(A, M, index(V, Bits), N),
    atomics:add(E, ?SUM, V * N),
    %% Extremes change rarely: a plain read first keeps the common case
    %% free of compare-and-swap traffic.
    atomics:get(E, 1) > V andalso lower_min(E, V),
    atomics:get(E, 2) < V andalso raise_max(E, V),
    ok.

%% @doc For a histogram made with `exact => false': its bucket array and
%% the bound below which a value is its own bucket, so that a hot loop can
%% record a value V with 0 =< V < Bound as `counters:add(Ref, V + 1, 1)'
%% inline - exactly what {@link record/2} does for it, without the call.
%% Other values go through {@link record/2}.
-spec inline_buckets(hist()) -> {counters:counters_ref(), pos_integer()}.
inline_buckets(#hist{exact = false, buckets = C, bits = Bits, max = Max}) ->
    {C, erlang:min(1 bsl Bits, Max + 1)}.

%% @doc Record every value of a list. Cheaper per value than
%% {@link record/2} for batches: the sum, overflow and extremes are updated
%% once per call.
-spec record_list(hist(), [non_neg_integer()]) -> ok.
record_list(_H, []) -> ok;
%% One value (a read of one confirm or delivery: a connection that
%% publishes every few seconds, #33's IoT scenario): record_n/3 takes 2
%% reductions fewer than a pass over the list (8 against 10).
record_list(H, [V]) -> record_n(H, V, 1);
record_list(H, [_ | _] = Vs) -> record_items(H, values, Vs).

%% @doc Record value `V' `N' times for each `{V, N}' of a list: what
%% {@link record_list/2} does for the values written out, one bucket add
%% per pair (a producer's confirm window keeps runs of publishes stamped
%% alike, #33).
-spec record_counts(hist(), [{non_neg_integer(), pos_integer()}]) -> ok.
record_counts(_H, []) -> ok;
record_counts(H, [{V, N}]) when is_integer(N), N > 0 -> record_n(H, V, N);
record_counts(H, [_ | _] = Runs) -> record_items(H, counts, Runs).

%% A list of values or of value-count pairs into the buckets; an exact
%% histogram's count beyond the maximum, sum and extremes once per list.
record_items(#hist{exact = true, buckets = A, marks = M, cells = E, bits = Bits, max = Max}, Kind, Xs) ->
    {Lo, Hi, Sum, Over} = case Kind of
                              values -> record_each(A, M, Bits, Max, Xs, Max, 0, 0, 0);
                              counts -> counts_each(A, M, Bits, Max, Xs, Max, 0, 0, 0)
                          end,
    Over > 0 andalso atomics:add(E, ?OVERFLOW, Over),
    atomics:add(E, ?SUM, Sum),
    atomics:get(E, 1) > Lo andalso lower_min(E, Lo),
    atomics:get(E, 2) < Hi andalso raise_max(E, Hi),
    ok;
record_items(#hist{buckets = C, cells = E, bits = Bits, max = Max}, Kind, Xs) ->
    Over = case Kind of
               values -> record_each(C, Bits, Max, Xs, 0);
               counts -> counts_each(C, Bits, Max, Xs, 0)
           end,
    Over > 0 andalso atomics:add(E, ?OVERFLOW, Over),
    ok.

%% A run of equal values costs one bucket add (#33): a producer stamps
%% the messages of one timer tick alike and a read's deliveries and
%% confirms share one receive time, so most of a read's latencies repeat
%% the one before. One call per value still (a value that starts a new
%% run closes the one before in the same call); P is the open run's
%% value (clamped to Max), K its length.
record_each(A, M, Bits, Max, [V0 | Vs], Lo, Hi, Sum, Over) when is_integer(V0), V0 >= 0 ->
    case V0 > Max of
        true -> record_each(A, M, Bits, Max, Vs, Max, 1, Lo, Hi, Sum, Over + 1);
        false -> record_each(A, M, Bits, Max, Vs, V0, 1, Lo, Hi, Sum, Over)
    end.

record_each(A, M, Bits, Max, [P | Vs], P, K, Lo, Hi, Sum, Over) ->
    %% A value equal to the run's is at most Max: no overflow.
    record_each(A, M, Bits, Max, Vs, P, K + 1, Lo, Hi, Sum, Over);
record_each(A, M, Bits, Max, Vs, P, K, Lo, Hi, Sum, Over) ->
    add(A, M, index(P, Bits), K),
    %% Comparisons, not erlang:min/max: on OTP 25 those are calls (#33).
    Lo1 = if P < Lo -> P; true -> Lo end,
    Hi1 = if P > Hi -> P; true -> Hi end,
    case Vs of
        [] -> {Lo1, Hi1, Sum + P * K, Over};
        [V0 | Rest] when is_integer(V0), V0 > Max ->
            record_each(A, M, Bits, Max, Rest, Max, 1, Lo1, Hi1, Sum + P * K, Over + 1);
        [V0 | Rest] when is_integer(V0), V0 >= 0 ->
            record_each(A, M, Bits, Max, Rest, V0, 1, Lo1, Hi1, Sum + P * K, Over);
        _ ->
            %% Not a value: refused there (function_clause).
            record_each(A, M, Bits, Max, Vs, Lo1, Hi1, Sum + P * K, Over)
    end.

%% An inexact histogram's: the buckets only, a run of equal values in
%% one add; the overflow count.
record_each(C, Bits, Max, [V | Vs], Over) when is_integer(V), V >= 0, V =< Max ->
    record_each(C, Bits, Max, Vs, V, 1, Over);
record_each(C, Bits, Max, [V | Vs], Over) when is_integer(V), V > Max ->
    record_each(C, Bits, Max, Vs, Max, 1, Over + 1).

record_each(C, Bits, Max, [P | Vs], P, K, Over) ->
    record_each(C, Bits, Max, Vs, P, K + 1, Over);
record_each(C, Bits, Max, Vs, P, K, Over) ->
    counters:add(C, index(P, Bits) + 1, K),
    case Vs of
        [] -> Over;
        [V | Rest] when is_integer(V), V >= 0, V =< Max -> record_each(C, Bits, Max, Rest, V, 1, Over);
        [V | Rest] when is_integer(V), V > Max -> record_each(C, Bits, Max, Rest, Max, 1, Over + 1);
        _ -> record_each(C, Bits, Max, Vs, Over)   % not a value: function_clause there
    end.

%% record_each/9 and record_each/5 for pairs of a value and a count.
counts_each(_A, _M, _Bits, _Max, [], Lo, Hi, Sum, Over) -> {Lo, Hi, Sum, Over};
counts_each(A, M, Bits, Max, [{V0, K} | Runs], Lo, Hi, Sum, Over)
  when is_integer(V0), V0 >= 0, is_integer(K), K > 0 ->
    {V, Over1} = if V0 > Max -> {Max, Over + K};
                    true -> {V0, Over}
                 end,
    add(A, M, index(V, Bits), K),
    Lo1 = if V < Lo -> V; true -> Lo end,
    Hi1 = if V > Hi -> V; true -> Hi end,
    counts_each(A, M, Bits, Max, Runs, Lo1, Hi1, Sum + V * K, Over1).

counts_each(_C, _Bits, _Max, [], Over) -> Over;
counts_each(C, Bits, Max, [{V, K} | Runs], Over)
  when is_integer(V), V >= 0, V =< Max, is_integer(K), K > 0 ->
    counters:add(C, index(V, Bits) + 1, K),
    counts_each(C, Bits, Max, Runs, Over);
counts_each(C, Bits, Max, [{V, K} | Runs], Over)
  when is_integer(V), V > Max, is_integer(K), K > 0 ->
    counters:add(C, index(Max, Bits) + 1, K),
    counts_each(C, Bits, Max, Runs, Over + K).

%% N values into bucket I of an exact histogram. The first value in an
%% empty bucket (one never filled or emptied by a take) marks the block
%% after the bucket: a take that finds the mark finds the value, and a
%% take that empties the bucket before the add leaves it empty, so the
%% add marks it again (take/1). Other values cost the add alone.
add(A, M, I, N) ->
    case atomics:add_get(A, I + 1, N) of
        N -> atomics:put(M, (I bsr ?BLOCK_BITS) + 1, 1);
        _ -> ok
    end.

lower_min(E, V) ->
    Cur = atomics:get(E, 1),
    Cur > V andalso
        (atomics:compare_exchange(E, 1, Cur, V) =:= ok orelse lower_min(E, V)).

raise_max(E, V) ->
    Cur = atomics:get(E, 2),
    Cur < V andalso
        (atomics:compare_exchange(E, 2, Cur, V) =:= ok orelse raise_max(E, V)).

%% @doc Forget everything recorded. Not atomic with respect to concurrent
%% recorders: a value recorded during the reset may be partly kept.
-spec reset(hist()) -> ok.
reset(#hist{exact = true, buckets = A, marks = M, cells = E, nbuckets = NB}) ->
    %% The marks first: a bucket filled again after its reset marks itself.
    lists:foreach(fun(I) -> atomics:put(M, I, 0) end, lists:seq(1, nblocks(NB))),
    lists:foreach(fun(I) -> atomics:put(A, I, 0) end, lists:seq(1, NB)),
    reset_cells(E);
reset(#hist{buckets = C, cells = E, nbuckets = NB}) ->
    lists:foreach(fun(I) -> counters:put(C, I, 0) end, lists:seq(1, NB)),
    reset_cells(E).

reset_cells(E) ->
    atomics:put(E, ?SUM, 0),
    atomics:put(E, ?OVERFLOW, 0),
    atomics:put(E, 1, ?EMPTY_MIN),
    atomics:put(E, 2, -1),
    atomics:put(E, 3, ?EMPTY_MIN),
    atomics:put(E, 4, -1),
    ok.

%% @doc A plain sparse copy of the histogram (non-empty buckets only).
%% Concurrent recording during a snapshot may make count and sum differ by
%% the values in flight; each bucket is read once.
-spec snapshot(hist()) -> snapshot().
snapshot(#hist{buckets = B, cells = E, digits = Digits, bits = Bits, max = Max,
               nbuckets = NB, exact = Exact}) ->
    Get = case Exact of
              true -> fun(I) -> atomics:get(B, I) end;
              false -> fun(I) -> counters:get(B, I) end
          end,
    Buckets = [{I - 1, K} || I <- lists:seq(1, NB), K <- [Get(I)], K > 0],
    Count = lists:sum([K || {_, K} <- Buckets]),
    {Min, MaxV, Sum} =
        case {Count, Exact} of
            {0, _} -> {undefined, undefined, 0};
            {_, true} -> {atomics:get(E, 1), atomics:get(E, 2), atomics:get(E, ?SUM)};
            {_, false} -> bucket_stats(Buckets, Bits, Max)
        end,
    #{significant_digits => Digits, bits => Bits, max_trackable => Max,
      count => Count, sum => Sum, min => Min, max => MaxV,
      overflow => atomics:get(E, ?OVERFLOW), exact => Exact,
      buckets => Buckets}.

%% @doc A snapshot that also takes what it read out of the histogram:
%% each bucket, the sum and the overflow count are decreased by what was
%% read, the extremes swapped for empty ones. A value recorded meanwhile is
%% never lost: it is in this take or the next, so the merge of all the
%% takes of a histogram is exactly what was recorded (a reset after a
%% snapshot would drop it). One pass over the buckets, which is cheaper
%% than {@link snapshot/1} and {@link reset/1} together.
%%
%% An exact histogram's take reads only the buckets between the lowest
%% and the highest value recorded since the take before the previous one
%% (the extremes of this take and the previous one), and of those only
%% the blocks of 16 buckets marked since their last read: a latency
%% histogram has tens of thousands of buckets and a second's values fill
%% a few hundred, and the full pass cost a load generator's agent more per
%% second than its workers' recording (#33). A value's recorder adds to
%% its bucket, marks the bucket's block if it found the bucket empty, then
%% checks the minimum, then the maximum; each check finds the value inside
%% the extremes of the epoch (the time between two takes) it runs in, or
%% moves them to it. So once both checks ran, the epochs they ran in cover
%% the value, and unless a recorder was paused within its record for
%% longer than a whole epoch they are this take's or the previous one's,
%% and the block is marked (by this recorder, or by the one that found the
%% bucket empty, which the same pause bounds). {@link take_all/1} reads
%% every bucket (the last take of a histogram).
-spec take(hist()) -> snapshot().
take(#hist{exact = true, buckets = A, marks = M, cells = E, bits = Bits,
           nbuckets = NB} = H) ->
    %% The extremes first: a record updates them after its bucket, so a
    %% value whose extremes are taken here has its bucket counted below.
    Lo = atomics:exchange(E, 1, ?EMPTY_MIN),
    Hi = atomics:exchange(E, 2, -1),
    From = erlang:min(Lo, atomics:exchange(E, 3, Lo)),
    To = erlang:max(Hi, atomics:exchange(E, 4, Hi)),
    %% Bucket indices; an open side is the end.
    {First, Last} = case {From, To} of
                        {?EMPTY_MIN, -1} -> {0, -1};
                        {?EMPTY_MIN, _} -> {0, index(To, Bits)};
                        {_, -1} -> {index(From, Bits), NB - 1};
                        _ -> {index(From, Bits), index(To, Bits)}
                    end,
    take(H, Lo, Hi, take_marked(A, M, First bsr ?BLOCK_BITS, Last bsr ?BLOCK_BITS, {[], 0}));
take(H) ->
    take_all(H).

%% @doc As {@link take/1}, reading every bucket: finds a value however
%% long its recorder was paused, so the last take of a histogram, after
%% which nothing records into it, is exact.
-spec take_all(hist()) -> snapshot().
take_all(#hist{exact = true, buckets = A, marks = M, cells = E, nbuckets = NB} = H) ->
    Lo = atomics:exchange(E, 1, ?EMPTY_MIN),
    Hi = atomics:exchange(E, 2, -1),
    _ = atomics:exchange(E, 3, Lo),
    _ = atomics:exchange(E, 4, Hi),
    %% The marks first, as in take/1: a bucket filled after its read marks
    %% its block again.
    lists:foreach(fun(I) -> atomics:put(M, I, 0) end, lists:seq(1, nblocks(NB))),
    take(H, Lo, Hi, take_range(A, 0, NB - 1, {[], 0}));
take_all(#hist{buckets = C, nbuckets = NB} = H) ->
    take(H, ?EMPTY_MIN, -1, take_buckets(C, 1, NB, {[], 0})).

take(#hist{cells = E, digits = Digits, bits = Bits, max = Max, exact = Exact},
     Lo, Hi, {Buckets, Count}) ->
    Sum0 = atomics:exchange(E, ?SUM, 0),
    Over = atomics:exchange(E, ?OVERFLOW, 0),
    {Min, MaxV, Sum} =
        case {Count, Exact} of
            {0, true} ->
                %% Extremes of values whose buckets were taken before:
                %% back for the next take.
                _ = Lo < ?EMPTY_MIN andalso lower_min(E, Lo),
                _ = Hi >= 0 andalso raise_max(E, Hi),
                {undefined, undefined, Sum0};
            {0, false} -> {undefined, undefined, 0};
            {_, true} ->
                {Lo1, Hi1} = late_extremes(E, Lo, Hi, 1000),
                %% Each exchange there ended an epoch whose values' buckets
                %% this pass may have missed: the next take's range covers
                %% them (take/1 reads from slots 3 and 4).
                _ = Lo1 < Lo andalso atomics:put(E, 3, erlang:min(Lo1, atomics:get(E, 3))),
                _ = Hi1 > Hi andalso atomics:put(E, 4, erlang:max(Hi1, atomics:get(E, 4))),
                {min_or(Lo1, Buckets, Bits), max_or(Hi1, Buckets, Bits), Sum0};
            {_, false} -> bucket_stats(Buckets, Bits, Max)
        end,
    #{significant_digits => Digits, bits => Bits, max_trackable => Max,
      count => Count, sum => Sum, min => Min, max => MaxV,
      overflow => Over, exact => Exact, buckets => Buckets}.

%% The buckets of the marked blocks Blk down to First of an exact
%% histogram, in order. A block's mark is cleared before its buckets are
%% read (each emptied by an exchange, which loses no concurrent add): a
%% value added after its bucket's read finds it empty and marks the block
%% again, so a non-empty bucket's block is marked, or about to be by the
%% recorder that filled it.
take_marked(_A, _M, First, Blk, Acc) when Blk < First ->
    Acc;
take_marked(A, M, First, Blk, Acc) ->
    case atomics:exchange(M, Blk + 1, 0) of
        0 -> take_marked(A, M, First, Blk - 1, Acc);
        _ ->
            take_marked(A, M, First, Blk - 1, take_block(A, Blk bsl ?BLOCK_BITS, Acc))
    end.

%% The 16 (2^?BLOCK_BITS) buckets from Lo, emptied, in one body: most of
%% a take's reads, at one call each rather than two (#33).
take_block(A, Lo, Acc0) ->
    Acc1 = keep(Lo + 15, atomics:exchange(A, Lo + 16, 0), Acc0),
    Acc2 = keep(Lo + 14, atomics:exchange(A, Lo + 15, 0), Acc1),
    Acc3 = keep(Lo + 13, atomics:exchange(A, Lo + 14, 0), Acc2),
    Acc4 = keep(Lo + 12, atomics:exchange(A, Lo + 13, 0), Acc3),
    Acc5 = keep(Lo + 11, atomics:exchange(A, Lo + 12, 0), Acc4),
    Acc6 = keep(Lo + 10, atomics:exchange(A, Lo + 11, 0), Acc5),
    Acc7 = keep(Lo + 9, atomics:exchange(A, Lo + 10, 0), Acc6),
    Acc8 = keep(Lo + 8, atomics:exchange(A, Lo + 9, 0), Acc7),
    Acc9 = keep(Lo + 7, atomics:exchange(A, Lo + 8, 0), Acc8),
    Acc10 = keep(Lo + 6, atomics:exchange(A, Lo + 7, 0), Acc9),
    Acc11 = keep(Lo + 5, atomics:exchange(A, Lo + 6, 0), Acc10),
    Acc12 = keep(Lo + 4, atomics:exchange(A, Lo + 5, 0), Acc11),
    Acc13 = keep(Lo + 3, atomics:exchange(A, Lo + 4, 0), Acc12),
    Acc14 = keep(Lo + 2, atomics:exchange(A, Lo + 3, 0), Acc13),
    Acc15 = keep(Lo + 1, atomics:exchange(A, Lo + 2, 0), Acc14),
    keep(Lo, atomics:exchange(A, Lo + 1, 0), Acc15).

%% Bucket I with K values in front of the (ascending) buckets so far and
%% their count.
keep(_I, 0, Acc) -> Acc;
keep(I, K, {Bs, N}) -> {[{I, K} | Bs], N + K}.

%% Bucket indices I down to First of an exact histogram, emptied.
take_range(_A, First, I, Acc) when I < First ->
    Acc;
take_range(A, First, I, Acc) ->
    take_range(A, First, I - 1, keep(I, atomics:exchange(A, I + 1, 0), Acc)).

%% Counter indices Last down to First of an inexact histogram.
take_buckets(_C, First, I, Acc) when I < First ->
    Acc;
take_buckets(C, First, I, Acc) ->
    case counters:get(C, I) of
        0 -> take_buckets(C, First, I - 1, Acc);
        K -> counters:sub(C, I, K), take_buckets(C, First, I - 1, keep(I - 1, K, Acc))
    end.

%% Buckets were taken but no extremes: their recorders are between the
%% bucket and the extremes (a few instructions); wait for them a little.
late_extremes(E, Lo, Hi, N) when N > 0, (Lo =:= ?EMPTY_MIN orelse Hi < 0) ->
    erlang:yield(),
    late_extremes(E, erlang:min(Lo, atomics:exchange(E, 1, ?EMPTY_MIN)),
                  erlang:max(Hi, atomics:exchange(E, 2, -1)), N - 1);
late_extremes(_E, Lo, Hi, _N) ->
    {Lo, Hi}.

%% The extremes of a take whose values' extremes all come after it (each
%% recorded between the take's swap of the extremes and its read of the
%% buckets, and still not there): the lowest and highest bucket's bounds,
%% within the histogram's precision.
min_or(Lo, _Buckets, _Bits) when Lo < ?EMPTY_MIN -> Lo;
min_or(_, [{First, _} | _], Bits) -> lowest(First, Bits).

max_or(Hi, _Buckets, _Bits) when Hi >= 0 -> Hi;
max_or(_, Buckets, Bits) -> {Last, _} = lists:last(Buckets), lowest(Last, Bits) + width(Last, Bits) - 1.

%% Min, max and sum estimated from bucket middles (clamped to the largest
%% trackable value, which is what overflowed values were recorded as).
bucket_stats([{First, _} | _] = Buckets, Bits, Max) ->
    Mid = fun(I) -> erlang:min(Max, middle(I, Bits)) end,
    {Last, _} = lists:last(Buckets),
    {Mid(First), Mid(Last), lists:sum([Mid(I) * K || {I, K} <- Buckets])}.

%% @doc An empty snapshot with the precision of `Opts' (see {@link new/1}).
-spec empty(options()) -> snapshot().
empty(Opts) ->
    Digits = maps:get(significant_digits, Opts, ?DEFAULT_DIGITS),
    #{significant_digits => Digits, bits => bits(Digits),
      max_trackable => maps:get(max, Opts, ?DEFAULT_MAX),
      count => 0, sum => 0, min => undefined, max => undefined,
      overflow => 0, exact => maps:get(exact, Opts, true), buckets => []}.

%% @doc Merge two snapshots, e.g. from several nodes. With different
%% precisions the result has the coarser one: every finer bucket lies
%% inside exactly one coarser bucket, so nothing is approximated twice.
-spec merge(snapshot(), snapshot()) -> snapshot().
merge(#{bits := B1} = S1, #{bits := B2} = S2) when B1 > B2 -> merge(S2, S1);
merge(#{bits := Bits} = S1, #{bits := B2} = S2) ->
    Buckets2 = case B2 =:= Bits of
                   true -> maps:get(buckets, S2);
                   false -> rebucket(maps:get(buckets, S2), B2, Bits)
               end,
    S1#{max_trackable := erlang:max(maps:get(max_trackable, S1),
                                    maps:get(max_trackable, S2)),
        count := maps:get(count, S1) + maps:get(count, S2),
        sum := maps:get(sum, S1) + maps:get(sum, S2),
        min := opt(fun erlang:min/2, maps:get(min, S1), maps:get(min, S2)),
        max := opt(fun erlang:max/2, maps:get(max, S1), maps:get(max, S2)),
        overflow := maps:get(overflow, S1) + maps:get(overflow, S2),
        exact := maps:get(exact, S1) andalso maps:get(exact, S2),
        buckets := merge_buckets(maps:get(buckets, S1), Buckets2)}.

%% @doc The merge of several snapshots (see {@link merge/2}), pairwise:
%% each bucket goes through about log2(N) merges, not up to N as in a
%% fold into a growing one (#33: a load generator merges its second's
%% takes into the run's totals).
-spec merge_all([snapshot(), ...]) -> snapshot().
merge_all([S]) -> S;
merge_all([_ | _] = Ss) -> merge_all(merge_pairs(Ss)).

merge_pairs([A, B | Rest]) -> [merge(A, B) | merge_pairs(Rest)];
merge_pairs(Rest) -> Rest.

opt(_F, undefined, B) -> B;
opt(_F, A, undefined) -> A;
opt(F, A, B) -> F(A, B).

rebucket(Buckets, FromBits, ToBits) ->
    Moved = [{index(lowest(I, FromBits), ToBits), K} || {I, K} <- Buckets],
    %% Re-indexing is monotone, so adjacent equal indices are the only
    %% duplicates.
    merge_buckets(Moved, []).

%% Merge two index-sorted bucket lists, summing equal indices.
merge_buckets(A, B) -> sum_adjacent(lists:merge(A, B)).

sum_adjacent([{I, K1}, {I, K2} | Rest]) -> sum_adjacent([{I, K1 + K2} | Rest]);
sum_adjacent([X | Rest]) -> [X | sum_adjacent(Rest)];
sum_adjacent([]) -> [].

%% @doc Number of recorded values (overflowed ones included); always exact.
-spec count(snapshot()) -> non_neg_integer().
count(#{count := N}) -> N.

%% @doc Sum of the recorded values (overflowed ones as max); exact unless
%% the histogram was created with `exact => false'.
-spec sum(snapshot()) -> non_neg_integer().
sum(#{sum := S}) -> S.

%% @doc Mean (exact unless `exact => false'), `undefined' when empty.
-spec mean(snapshot()) -> float() | undefined.
mean(#{count := 0}) -> undefined;
mean(#{count := N, sum := S}) -> S / N.

%% @doc Smallest recorded value (exact unless `exact => false'),
%% `undefined' when empty.
-spec min(snapshot()) -> non_neg_integer() | undefined.
min(#{min := Min}) -> Min.

%% @doc Largest recorded value after clamping (exact unless
%% `exact => false'), `undefined' when empty.
-spec max(snapshot()) -> non_neg_integer() | undefined.
max(#{max := Max}) -> Max.

%% @doc How many values exceeded the trackable maximum.
-spec overflow(snapshot()) -> non_neg_integer().
overflow(#{overflow := O}) -> O.

%% @doc Nearest-rank percentile `P' (0..100): the value of rank
%% max(1, ceil(P/100 * count)), reported as its bucket middle clamped to
%% [min, max] (exact for rank 1, rank count and width-1 buckets).
%% `undefined' when empty.
-spec percentile(snapshot(), number()) -> non_neg_integer() | undefined.
percentile(Snap, P) ->
    [V] = percentiles(Snap, [P]),
    V.

%% @doc Several percentiles in one pass over the buckets, in the given
%% order.
-spec percentiles(snapshot(), [number()]) -> [non_neg_integer() | undefined].
percentiles(#{count := 0}, Ps) ->
    [undefined || P <- Ps, valid_p(P)];
percentiles(#{count := N, bits := Bits, min := Min, max := Max,
              buckets := Buckets}, Ps) ->
    Ranks = [{rank(P, N), Pos} || {Pos, P} <- lists:enumerate(Ps), valid_p(P)],
    Found = walk(lists:sort(Ranks), Buckets, 0, Bits, Min, Max, N, []),
    [V || {_, V} <- lists:sort(Found)].

valid_p(P) when is_number(P), P >= 0, P =< 100 -> true;
valid_p(P) -> error({badarg, {percentile, P}}).

%% P is usually a decimal such as 99.9 that floats cannot hold exactly;
%% the tiny relative slack keeps 99.9% of 1000 at rank 999 and not 1000.
rank(P, N) ->
    X = P * N / 100,
    erlang:max(1, ceil_int(X - X * 1.0e-12)).

ceil_int(X) ->
    T = trunc(X),
    case X > T of
        true -> T + 1;
        false -> T
    end.

walk([], _, _, _, _, _, _, Acc) -> Acc;
walk([{1, Pos} | Rs], Bs, Cum, Bits, Min, Max, N, Acc) ->
    walk(Rs, Bs, Cum, Bits, Min, Max, N, [{Pos, Min} | Acc]);
walk([{R, Pos} | Rs], Bs, Cum, Bits, Min, Max, N, Acc) when R >= N ->
    walk(Rs, Bs, Cum, Bits, Min, Max, N, [{Pos, Max} | Acc]);
walk([{R, Pos} | Rs] = Ranks, [{I, K} | Bs] = Buckets, Cum, Bits, Min, Max,
     N, Acc) ->
    case Cum + K >= R of
        true ->
            V = erlang:min(Max, erlang:max(Min, middle(I, Bits))),
            walk(Rs, Buckets, Cum, Bits, Min, Max, N, [{Pos, V} | Acc]);
        false ->
            walk(Ranks, Bs, Cum + K, Bits, Min, Max, N, Acc)
    end.

%% @doc The snapshot in the shape of `beamlab_stats:summary/1' (the keys
%% a histogram can answer): `n', exact `mean', `min', `max', nearest-rank
%% percentiles `median', `p1' ... `p999', plus `overflow' and
%% `significant_digits'. Empty snapshots give `#{n => 0, overflow => 0, ...}'
%% with no value keys.
-spec summary(snapshot()) -> #{atom() => number()}.
summary(#{count := 0, overflow := O, significant_digits := D}) ->
    #{n => 0, overflow => O, significant_digits => D};
summary(#{count := N, overflow := O, significant_digits := D} = Snap) ->
    Keys = [p1, p5, p10, p25, median, p75, p90, p95, p99, p999],
    Values = percentiles(Snap, [1, 5, 10, 25, 50, 75, 90, 95, 99, 99.9]),
    maps:merge(maps:from_list(lists:zip(Keys, Values)),
               #{n => N, mean => mean(Snap), min => min(Snap), max => max(Snap),
                 overflow => O, significant_digits => D}).

%% @doc The non-empty buckets as `{Low, High, Count}' value ranges
%% (inclusive), for plots.
-spec buckets(snapshot()) ->
          [{non_neg_integer(), non_neg_integer(), pos_integer()}].
buckets(#{bits := Bits, buckets := Buckets}) ->
    [{lowest(I, Bits), lowest(I, Bits) + width(I, Bits) - 1, K}
     || {I, K} <- Buckets].

%% @doc The snapshot as a JSON-ready map: binary keys, numbers, lists and
%% the boolean `exact' only (`min'/`max' are left out when empty; buckets
%% are `[Index, Count]' pairs).
-spec to_map(snapshot()) ->
          #{binary() => number() | boolean() | [[non_neg_integer()]]}.
to_map(#{significant_digits := D, max_trackable := MT, count := N, sum := S,
         min := Min, max := Max, overflow := O, exact := Exact, buckets := Bs}) ->
    Base = #{<<"significant_digits">> => D, <<"max_trackable">> => MT,
             <<"count">> => N, <<"sum">> => S, <<"overflow">> => O,
             <<"exact">> => Exact,
             <<"buckets">> => [[I, K] || {I, K} <- Bs]},
    case Min of
        undefined -> Base;
        _ -> Base#{<<"min">> => Min, <<"max">> => Max}
    end.

%% @doc Inverse of {@link to_map/1}; validates what it reads.
-spec from_map(map()) -> {ok, snapshot()} | {error, term()}.
from_map(M) when is_map(M) ->
    try
        D = get_int(<<"significant_digits">>, M),
        (D >= 1 andalso D =< 4) orelse throw({bad_field, <<"significant_digits">>}),
        Bits = bits(D),
        Buckets = [bucket(B) || B <- get_list(<<"buckets">>, M)],
        Sorted = lists:usort(fun({A, _}, {B, _}) -> A =< B end, Buckets),
        length(Sorted) =:= length(Buckets)
            orelse throw({bad_field, <<"buckets">>}),
        Count = get_int(<<"count">>, M),
        Count =:= lists:sum([K || {_, K} <- Buckets])
            orelse throw({bad_field, <<"count">>}),
        {Min, Max} = case Count of
                         0 -> {undefined, undefined};
                         _ -> {get_int(<<"min">>, M), get_int(<<"max">>, M)}
                     end,
        Exact = case maps:get(<<"exact">>, M, true) of
                    E when is_boolean(E) -> E;
                    _ -> throw({bad_field, <<"exact">>})
                end,
        {ok, #{significant_digits => D, bits => Bits, exact => Exact,
               max_trackable => get_int(<<"max_trackable">>, M),
               count => Count, sum => get_int(<<"sum">>, M),
               min => Min, max => Max,
               overflow => get_int(<<"overflow">>, M),
               buckets => Sorted}}
    catch
        throw:Reason -> {error, Reason}
    end;
from_map(_) ->
    {error, not_a_map}.

get_int(K, M) ->
    case maps:get(K, M, undefined) of
        V when is_integer(V), V >= 0 -> V;
        undefined -> throw({missing_field, K});
        _ -> throw({bad_field, K})
    end.

get_list(K, M) ->
    case maps:get(K, M, undefined) of
        V when is_list(V) -> V;
        undefined -> throw({missing_field, K});
        _ -> throw({bad_field, K})
    end.

bucket([I, K]) when is_integer(I), I >= 0, is_integer(K), K > 0 -> {I, K};
bucket(_) -> throw({bad_field, <<"buckets">>}).

%% @doc One line describing a {@link from_map/1} error.
-spec format_error(term()) -> iolist().
format_error(Reason) ->
    beamlab_format_reason:line(fun error_line/1, Reason).

error_line({missing_field, K}) ->
    io_lib:format("histogram: missing field \"~ts\"", [K]);
error_line({bad_field, K}) ->
    io_lib:format("histogram: invalid field \"~ts\"", [K]);
error_line(not_a_map) ->
    "histogram: expected a JSON object";
error_line(Other) ->
    io_lib:format("histogram: ~0tP", [Other, 12]).

%%====================================================================
%% Bucket arithmetic
%%====================================================================

%% Smallest B with 2^B >= 2 * 10^Digits.
bits(Digits) -> bits(Digits, 1).

bits(Digits, B) ->
    case 1 bsl B >= 2 * pow10(Digits) of
        true -> B;
        false -> bits(Digits, B + 1)
    end.

pow10(0) -> 1;
pow10(D) -> 10 * pow10(D - 1).

%% Number of significant bits of V > 0, by binary search on shifts, in
%% one body without calls: it runs per recorded value above 2^bits, and
%% a call per step was 2-7 reductions per message of a load generator
%% (#33). A macro, as the compiler does not inline a function this size
%% into index/2's inlined copies. Its variables are Bl* (a macro binds them in
%% the caller's clause, which must use no such names).
-define(BIT_LENGTH(V0),
        begin
            {BlV1, BlA1} = if V0 >= (1 bsl 32) -> {V0 bsr 32, 32}; true -> {V0, 0} end,
            {BlV2, BlA2} = if BlV1 >= (1 bsl 16) -> {BlV1 bsr 16, BlA1 + 16}; true -> {BlV1, BlA1} end,
            {BlV3, BlA3} = if BlV2 >= (1 bsl 8) -> {BlV2 bsr 8, BlA2 + 8}; true -> {BlV2, BlA2} end,
            {BlV4, BlA4} = if BlV3 >= (1 bsl 4) -> {BlV3 bsr 4, BlA3 + 4}; true -> {BlV3, BlA3} end,
            {BlV5, BlA5} = if BlV4 >= 4 -> {BlV4 bsr 2, BlA4 + 2}; true -> {BlV4, BlA4} end,
            if BlV5 >= 2 -> BlA5 + 2;
               true -> BlA5 + BlV5
            end
        end).

index(V, Bits) when V < (1 bsl Bits) -> V;
index(V, Bits) when V >= (1 bsl 64) ->
    S = big_bit_length(V, 0) - Bits,
    (S bsl (Bits - 1)) + (V bsr S);
index(V, Bits) ->
    S = ?BIT_LENGTH(V) - Bits,
    (S bsl (Bits - 1)) + (V bsr S).

%% Shift of bucket I (0 for the exact region).
shift(I, Bits) ->
    H = 1 bsl (Bits - 1),
    erlang:max(0, (I div H) - 1).

width(I, Bits) -> 1 bsl shift(I, Bits).

lowest(I, Bits) ->
    S = shift(I, Bits),
    (I - (S bsl (Bits - 1))) bsl S.

middle(I, Bits) -> lowest(I, Bits) + (width(I, Bits) bsr 1).

%% Blocks of ?BLOCK_BITS buckets (marks) for NB buckets.
nblocks(NB) -> ((NB - 1) bsr ?BLOCK_BITS) + 1.

%% The bit length beyond 64 bits (a merged snapshot's bucket read from a
%% file), bit by bit.
big_bit_length(0, Acc) -> Acc;
big_bit_length(V, Acc) -> big_bit_length(V bsr 1, Acc + 1).
