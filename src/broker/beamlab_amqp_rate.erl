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
%%% Pure functions only; time is passed in, so the schedule is testable.
-module(beamlab_amqp_rate).

-export([new/2, next/2, due/2, sent/1, allowed/2]).

-export_type([limiter/0]).

-record(rate, {rate :: pos_integer() | float() | infinity,
               start :: integer(),
               k = 0 :: non_neg_integer()}).

-opaque limiter() :: #rate{}.

%% @doc A limiter for `Rate' messages per second starting at `StartUs'
%% (microseconds, any clock). `infinity' never waits; its intended time is the
%% current time.
-spec new(pos_integer() | float() | infinity, integer()) -> limiter().
new(infinity, StartUs) when is_integer(StartUs) ->
    #rate{rate = infinity, start = StartUs};
new(Rate, StartUs) when is_number(Rate), Rate > 0, is_integer(StartUs) ->
    #rate{rate = Rate, start = StartUs}.

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
    end.

%% @doc The intended send time of message `K' (0-based).
-spec due(limiter(), non_neg_integer()) -> integer().
due(#rate{rate = infinity, start = S}, _K) ->
    S;
due(#rate{rate = Rate, start = S}, K) when is_integer(Rate) ->
    S + ceil_div(K * 1000000, Rate);
due(#rate{rate = Rate, start = S}, K) ->
    S + ceil(K * 1000000 / Rate).

%% @doc Messages released so far.
-spec sent(limiter()) -> non_neg_integer().
sent(#rate{k = K}) -> K.

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
    floor((NowUs - S) * Rate / 1000000) + 1.

ceil_div(A, B) -> (A + B - 1) div B.
