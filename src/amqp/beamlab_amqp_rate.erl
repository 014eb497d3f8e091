%%% @doc Producer rate limiter that schedules by intended send time.
%%%
%%% Message `K' (0-based) of a producer running at `Rate' msg/s is due at
%%% `Start + ceil(K * 1000000 / Rate)' microseconds. A producer may send a
%%% message only once its due time has passed, so the number sent by any time
%%% `T' never exceeds the schedule (no overshoot, no bursts above the rate
%%% beyond catching up on messages that are already late). The due time, not
%%% the actual send time, is what the producer writes into the message: a
%%% stalled producer (confirm window full, TCP back-pressure, a slow
%%% scheduler) then shows up as latency instead of silently sending fewer
%%% messages (no coordinated omission).
%%%
%%% A variable rate (`--variable-rate RATE:SECONDS' steps, cycled) is the
%%% same schedule piece by piece: step i of the cycle releases RATE_i x
%%% SECONDS_i messages spread evenly over its SECONDS_i, so message K's due
%%% time is exact and catching up after a stall stamps intended times too.
%%% A step of rate 0 releases nothing; a schedule of only zeros never
%%% releases.
%%%
%%% A producer that slept until its next message was due wakes up late by
%%% the VM's timer resolution ({@link stamp/3}): that part of the delay is
%%% the generator's own and is not counted as latency.
%%%
%%% Pure functions only; time is passed in, so the schedule is testable.
-module(beamlab_amqp_rate).

%% next/2, next/3 and take/4's loops run per message: their helpers
%% inlined, no calls of their own (#33).
-compile({inline, [due/2, stamp/3, run/2]}).
%% A macro, not a function: one was past the compiler's inlining size
%% in next/3 and stayed a call.
-define(CEIL_DIV(A, B), (((A) + (B) - 1) div (B))).

-export([new/2, new_variable/2, next/2, next/3, take/4, late/4, due/2, sent/1, allowed/2, stamp/3,
         timer_slack_us/0, woken/2]).

-export_type([limiter/0]).

-record(rate, {rate :: pos_integer() | float() | infinity,
               start :: integer(),
               k = 0 :: non_neg_integer()}).
%% steps: {offset in the cycle (µs), first message index in the cycle,
%% messages, rate}, those with messages only; cycle_us and per_cycle the
%% cycle's length and messages.
-record(var, {steps :: [{non_neg_integer(), non_neg_integer(), pos_integer(), pos_integer()}],
              cycle_us :: pos_integer(),
              per_cycle :: non_neg_integer(),
              start :: integer(),
              k = 0 :: non_neg_integer()}).

-opaque limiter() :: #rate{} | #var{}.

%% Far enough in the future to mean never (a year), for schedules of zeros.
-define(NEVER_US, 31536000000000).

%% @doc A limiter for `Rate' messages per second starting at `StartUs'
%% (microseconds, any clock). `infinity' never waits; its intended time is the
%% current time.
-spec new(pos_integer() | float() | infinity, integer()) -> limiter().
new(infinity, StartUs) when is_integer(StartUs) ->
    #rate{rate = infinity, start = StartUs};
new(Rate, StartUs) when is_number(Rate), Rate > 0, is_integer(StartUs) ->
    #rate{rate = Rate, start = StartUs}.

%% @doc A limiter for rate steps `[{Rate, Seconds}]' (integers, rate >= 0,
%% seconds > 0), repeated in a cycle from `StartUs'.
-spec new_variable([{non_neg_integer(), pos_integer()}, ...], integer()) -> limiter().
new_variable(Steps, StartUs) when is_list(Steps), Steps =/= [], is_integer(StartUs) ->
    {Ss, CycleUs, PerCycle} =
        lists:foldl(fun({Rate, Secs}, {Acc, Off, First}) when is_integer(Rate), Rate >= 0,
                                                               is_integer(Secs), Secs > 0 ->
                            N = Rate * Secs,
                            Acc1 = case N of
                                       0 -> Acc;
                                       _ -> [{Off, First, N, Rate} | Acc]
                                   end,
                            {Acc1, Off + Secs * 1000000, First + N}
                    end, {[], 0, 0}, Steps),
    #var{steps = lists:reverse(Ss), cycle_us = CycleUs, per_cycle = PerCycle, start = StartUs}.

%% @doc Asks to send the next message at `NowUs'. Either `{go, IntendedUs, L}'
%% (send now, stamp `IntendedUs') or `{wait, Us}' (the next message is due in
%% `Us' microseconds, `Us > 0').
-spec next(limiter(), integer()) -> {go, integer(), limiter()} | {wait, pos_integer()}.
next(#rate{rate = infinity, k = K} = L, NowUs) ->
    {go, NowUs, L#rate{k = K + 1}};
next(#rate{k = K} = L, NowUs) ->
    Due = due(L, K),
    case Due =< NowUs of
        true -> {go, Due, L#rate{k = K + 1}};
        false -> {wait, Due - NowUs}
    end;
next(#var{per_cycle = 0} = L, NowUs) ->
    %% Never due: the wait agrees with due/2 (a year after the start, as
    %% long as the longest run) and stays positive.
    {wait, max(1, due(L, 0) - NowUs)};
next(#var{k = K} = L, NowUs) ->
    Due = due(L, K),
    case Due =< NowUs of
        true -> {go, Due, L#var{k = K + 1}};
        false -> {wait, Due - NowUs}
    end.

%% A sleeping producer's timer fires this late at most (the usual case):
%% erlang:start_timer/3 waits whole milliseconds, rounded up, and fires
%% on a millisecond tick; measured on this VM, 1.4 ms late at the median
%% and 1.9 ms at the 90th percentile.
-define(TIMER_SLACK_US, 2000).

%% Due at `Due' (a variable: used more than once): wait, or go with the
%% stamp of stamp/3 and the limiter `L1' that has counted the message. A
%% macro: as a function the compiler kept it a call in next/3.
-define(GO(Due, NowUs, Woke, L1),
        if Due > NowUs -> {wait, Due - NowUs};
           not Woke -> {go, Due, Due, L1};
           NowUs < Due + ?TIMER_SLACK_US -> {go, Due, NowUs, L1};
           true -> {go, Due, Due + ?TIMER_SLACK_US, L1}
        end).

%% @doc {@link next/2} and, for a message to send, its {@link stamp/3}
%% with `Woke': `{go, IntendedUs, StampUs, L}' or `{wait, Us}'. One call
%% per message where a producer publishes a burst (#33).
-spec next(limiter(), integer(), boolean()) ->
          {go, integer(), integer(), limiter()} | {wait, pos_integer()}.
next(#rate{rate = Rate, start = S, k = K} = L, NowUs, Woke) when is_integer(Rate) ->
    %% A fixed rate and rate steps written out (the compiler would not
    %% inline next/2 and stamp/3 here).
    Due = S + ?CEIL_DIV(K * 1000000, Rate),
    ?GO(Due, NowUs, Woke, L#rate{k = K + 1});
next(#var{steps = [{_, F1, N1, _} = Step1 | Later], cycle_us = CycleUs, per_cycle = N,
          start = S, k = K} = L, NowUs, Woke) when N > 0 ->
    %% due/2's: the message's step, the first one without a call.
    R = K rem N,
    {Off, First, _, Rate} = if R < F1 + N1 -> Step1;
                               true -> step(Later, R)
                            end,
    Due = S + (K div N) * CycleUs + Off + ?CEIL_DIV((R - First) * 1000000, Rate),
    ?GO(Due, NowUs, Woke, L#var{k = K + 1});
next(L, NowUs, Woke) ->
    case next(L, NowUs) of
        {go, Intended, L1} -> ?GO(Intended, NowUs, Woke, L1);
        Wait -> Wait
    end.

%% @doc The messages due by `NowUs', at most `Max' of them, as
%% {@link next/3} would release them one by one: `{Runs, L}', with `Runs'
%% their stamps oldest first, consecutive messages of one stamp as one
%% `{Stamp, Count}' (a burst after the producer's timer is mostly one),
%% and `L' the limiter that has counted them. One call per burst, not
%% per message: no tuple and no limiter per message (#33).
-spec take(limiter(), integer(), boolean(), non_neg_integer()) ->
          {[{integer(), pos_integer()}], limiter()}.
take(#rate{rate = infinity, k = K} = L, NowUs, _Woke, Max) ->
    %% Each message due at its own now (next/2): all of them, one stamp.
    {[{NowUs, Max} || Max > 0], L#rate{k = K + Max}};
take(L, NowUs, Woke, Max) ->
    K = sent(L),
    {Runs, K1} = take(L, K, K + Max, NowUs, Woke, []),
    {Runs, case L of
               #rate{} -> L#rate{k = K1};
               #var{} -> L#var{k = K1}
           end}.

%% next/2's due times (due/2, inlined), next/3's stamps, message K on.
take(L, K, End, NowUs, Woke, Acc) when K < End ->
    Due = due(L, K),
    if Due > NowUs -> {lists:reverse(Acc), K};
       true -> take(L, K + 1, End, NowUs, Woke, run(stamp(Due, NowUs, Woke), Acc))
    end;
take(_L, K, _End, _NowUs, _Woke, Acc) ->
    {lists:reverse(Acc), K}.

run(Stamp, [{Stamp, C} | Acc]) -> [{Stamp, C + 1} | Acc];
run(Stamp, Acc) -> [{Stamp, 1} | Acc].

%% @doc Of the messages `L1' has counted beyond `L' (the same limiter
%% earlier: {@link take/4}'s), how many were due more than `ByUs' before
%% `NowUs': those a producer publishing them at `NowUs' sends late.
-spec late(limiter(), limiter(), integer(), non_neg_integer()) -> non_neg_integer().
late(#rate{rate = infinity}, _L1, _NowUs, _ByUs) ->
    0;   % unlimited: each message is due when it is sent
late(L, L1, NowUs, ByUs) ->
    %% Due times increase: the late ones come first, and the count costs
    %% a due/2 per late message (and one more), the same times as next/2.
    late(L, sent(L), sent(L1), NowUs - ByUs, 0).

late(L, K, End, Before, N) when K < End ->
    case due(L, K) < Before of
        true -> late(L, K + 1, End, Before, N + 1);
        false -> N
    end;
late(_L, _K, _End, _Before, N) ->
    N.

%% @doc The stamp of a message due at `IntendedUs' and sent at `NowUs'.
%% Sent on waking from the producer's own timer (`Woke'): the timer's
%% resolution is not latency, so up to 2 ms of lateness is taken off (a
%% longer stall still counts beyond it; PerfTest stamps the send time). A
%% message sent while catching up (the producer was busy, not asleep, when
%% it came due) keeps its intended time.
-spec stamp(integer(), integer(), boolean()) -> integer().
stamp(IntendedUs, NowUs, true) ->
    %% max(IntendedUs, min(NowUs, IntendedUs + slack)), without the calls
    %% of erlang:min/max (OTP 25): this runs per message (#33).
    Cap = IntendedUs + ?TIMER_SLACK_US,
    if NowUs =< IntendedUs -> IntendedUs;
       NowUs < Cap -> NowUs;
       true -> Cap
    end;
stamp(IntendedUs, _NowUs, false) ->
    IntendedUs.

%% @doc Whether a producer waiting for its timer, which should have
%% fired by `LateUs' (its due time plus {@link timer_slack_us/0}), is to
%% publish at `NowUs' as woken by it (`stamp/3' with `Woke' true) though
%% its message has not come: a timer late beyond its resolution (a loaded
%% machine) is waited for no more, and what came due meanwhile is stamped
%% as it would be had the timer's message come first.
-spec woken(integer(), integer()) -> boolean().
woken(NowUs, LateUs) ->
    NowUs >= LateUs.

%% @doc How late (µs) a producer's timer for its next message usually
%% fires at most: the lateness {@link stamp/3} takes off.
-spec timer_slack_us() -> pos_integer().
timer_slack_us() ->
    ?TIMER_SLACK_US.

%% @doc The intended send time of message `K' (0-based).
-spec due(limiter(), non_neg_integer()) -> integer().
due(#rate{rate = infinity, start = S}, _K) ->
    S;
due(#rate{rate = Rate, start = S}, K) when is_integer(Rate) ->
    S + ?CEIL_DIV(K * 1000000, Rate);
due(#rate{rate = Rate, start = S}, K) ->
    S + ceil(K * 1000000 / Rate);
due(#var{per_cycle = 0, start = S}, _K) ->
    S + ?NEVER_US;
due(#var{steps = Steps, cycle_us = CycleUs, per_cycle = N, start = S}, K) ->
    {Off, First, _, Rate} = step(Steps, K rem N),
    S + (K div N) * CycleUs + Off + ?CEIL_DIV((K rem N - First) * 1000000, Rate).

step([{_, First, N, _} = St | _], R) when R < First + N -> St;
step([_ | Rest], R) -> step(Rest, R).

%% @doc Messages released so far.
-spec sent(limiter()) -> non_neg_integer().
sent(#rate{k = K}) -> K;
sent(#var{k = K}) -> K.

%% @doc How many messages the schedule allows by `NowUs' in total (the upper
%% bound that `sent/1' never exceeds); `infinity' for an unlimited rate.
-spec allowed(limiter(), integer()) -> non_neg_integer() | infinity.
allowed(#rate{rate = infinity}, _NowUs) ->
    infinity;
allowed(#rate{start = S}, NowUs) when NowUs < S ->
    0;
allowed(#rate{rate = Rate, start = S}, NowUs) when is_integer(Rate) ->
    %% Largest K with ceil(K*1e6/Rate) =< Now-S, plus message 0.
    ((NowUs - S) * Rate) div 1000000 + 1;
allowed(#rate{rate = Rate, start = S}, NowUs) ->
    floor((NowUs - S) * Rate / 1000000) + 1;
allowed(#var{start = S}, NowUs) when NowUs < S ->
    0;
allowed(#var{per_cycle = 0}, _NowUs) ->
    0;
allowed(#var{steps = Steps, cycle_us = CycleUs, per_cycle = N, start = S}, NowUs) ->
    %% Whole cycles, then within the cycle the steps whose messages are due.
    T = NowUs - S,
    In = T rem CycleUs,
    (T div CycleUs) * N
        + lists:sum([case In - Off of
                         D when D < 0 -> 0;
                         D -> min(M, (D * Rate) div 1000000 + 1)
                     end || {Off, _First, M, Rate} <- Steps]).

