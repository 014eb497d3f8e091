%%% @doc A value that changes over time in steps, repeated in a cycle:
%%% PerfTest's `--variable-size SIZE:SECONDS' and `--variable-latency
%%% MICROSECONDS:SECONDS' (step i holds its value for its seconds, then the
%%% next, back to the first after the last). Pure; time is passed in.
-module(beamlab_amqp_cycle).

-export([new/2, fixed/1, value/2, values/1]).

-export_type([cycle/0]).

-record(cycle, {steps :: [{EndInCycleUs :: pos_integer(), Value :: non_neg_integer()}],
                cycle_us :: pos_integer(),
                start :: integer()}).
-opaque cycle() :: #cycle{} | {fixed, non_neg_integer()}.

%% @doc Steps `[{Value, Seconds}]' (seconds > 0) from `StartUs'.
-spec new([{non_neg_integer(), pos_integer()}, ...], integer()) -> cycle().
new(Steps, StartUs) when Steps =/= [] ->
    {Ends, CycleUs} = lists:mapfoldl(fun({V, Secs}, End) when is_integer(Secs), Secs > 0 ->
                                             E = End + Secs * 1000000,
                                             {{E, V}, E}
                                     end, 0, Steps),
    #cycle{steps = Ends, cycle_us = CycleUs, start = StartUs}.

%% @doc A value that never changes.
-spec fixed(non_neg_integer()) -> cycle().
fixed(V) ->
    {fixed, V}.

%% @doc The value at `NowUs' (the first step's before the start).
-spec value(cycle(), integer()) -> non_neg_integer().
value({fixed, V}, _NowUs) ->
    V;
value(#cycle{steps = Steps, cycle_us = C, start = S}, NowUs) ->
    In = max(0, NowUs - S) rem C,
    find(Steps, In).

find([{End, V} | _], In) when In < End -> V;
find([_ | Rest], In) -> find(Rest, In).

%% @doc Every value the cycle takes (to prepare what each needs).
-spec values(cycle()) -> [non_neg_integer()].
values({fixed, V}) -> [V];
values(#cycle{steps = Steps}) -> lists:usort([V || {_, V} <- Steps]).
