%%% @doc Wall-clock timestamps for result documents (callers read the clock
%%% here and pass the values down, so the result model never reads it), and
%%% the offset of other nodes' clocks against ours, measured over
%%% distribution.
%%%
%%% An offset sample is one round trip: our time T1, the node's time Tn,
%%% our time T3; the node's clock is ahead of ours by Tn - (T1 + T3) / 2,
%%% give or take half the round trip (T3 - T1) / 2. Of `?ROUNDS' round trips
%%% the one with the smallest delay is kept (the one least disturbed by
%%% scheduling and queueing).
-module(beamlab_runtime_clock).

-export([rfc3339/0, rfc3339/1, offsets/1, offset/1, combine/2]).

-export_type([offset/0, combined/0]).

%% offset_us: the node's clock minus ours; uncertainty_us: half the
%% smallest round trip (the true offset is within offset +- uncertainty).
-type offset() :: #{offset_us := integer(), uncertainty_us := non_neg_integer(),
                    rtt_us := non_neg_integer()}.

%% The offset used during a run (combine/2): the one measured before, the
%% uncertainty widened by the drift until the one measured after (`null'
%% when it could not be measured).
-type combined() :: #{offset_us := integer(), uncertainty_us := non_neg_integer(),
                      before := offset(), 'after' := offset() | null,
                      drift_us := integer() | null}.

-define(ROUNDS, 30).

%% @doc The current time as RFC 3339 text with milliseconds, local offset.
-spec rfc3339() -> binary().
rfc3339() ->
    rfc3339(erlang:system_time(millisecond)).

%% @doc A system time in milliseconds as RFC 3339 text.
-spec rfc3339(integer()) -> binary().
rfc3339(Ms) ->
    list_to_binary(calendar:system_time_to_rfc3339(Ms, [{unit, millisecond}])).

%% @doc The clock offset of each node against this one (this node: 0).
%% A node that does not answer is left out.
-spec offsets([node()]) -> #{node() => offset()}.
offsets(Nodes) ->
    maps:from_list([{N, O} || N <- lists:usort(Nodes), {ok, O} <- [offset(N)]]).

%% @doc The clock offset of one node against this one.
-spec offset(node()) -> {ok, offset()} | {error, term()}.
offset(Node) when Node =:= node() ->
    {ok, #{offset_us => 0, uncertainty_us => 0, rtt_us => 0}};
offset(Node) ->
    try
        Samples = [sample(Node) || _ <- lists:seq(1, ?ROUNDS)],
        {Rtt, Off} = lists:min(Samples),
        {ok, #{offset_us => Off, uncertainty_us => (Rtt + 1) div 2, rtt_us => Rtt}}
    catch
        Class:Reason -> {error, {Class, Reason}}
    end.

sample(Node) ->
    T1 = erlang:system_time(microsecond),
    Tn = erpc:call(Node, erlang, system_time, [microsecond], 5000),
    T3 = erlang:system_time(microsecond),
    {T3 - T1, Tn - (T1 + T3) div 2}.

%% @doc The offset used during a run from the measurements before and after
%% it: their mean, uncertain by the larger half round trip plus half the
%% drift between the two.
-spec combine(offset(), offset() | undefined) -> combined().
combine(#{offset_us := B, uncertainty_us := UB} = Before, undefined) ->
    #{offset_us => B, uncertainty_us => UB, before => Before, 'after' => null, drift_us => null};
combine(#{offset_us := B, uncertainty_us := UB} = Before, #{offset_us := A, uncertainty_us := UA} = After) ->
    Drift = A - B,
    #{offset_us => B, uncertainty_us => max(UB, UA) + (abs(Drift) + 1) div 2,
      before => Before, 'after' => After, drift_us => Drift}.
