%%% @doc Workload `selective_receive': the cost of receiving a tagged reply
%%% when N unrelated messages are queued in front of it, with and without
%%% the fresh-reference optimisation (receive markers, OTP 24+).
%%%
%%% `fresh_loop/3' creates the reference with `make_ref()' in the same
%%% function as the `receive' that matches on it, so the compiler emits
%%% `recv_marker_reserve'/`recv_marker_bind'/`recv_marker_use' and the
%%% receive skips the messages queued before the reference existed.
%%% `opaque_loop/3' gets its reference from an external call, which the
%%% compiler cannot see through, so every receive scans the whole queue.
%%% The test suite checks both shapes in the compiled assembly.
-module(beamlab_workload_selective_receive).
-behaviour(beamlab_workload).

-export([info/0, params/0, setup/1, run/2, teardown/1]).
-export([new_ref/0, fresh_loop/3, opaque_loop/3]).

%% @doc Workload description.
-spec info() -> beamlab_workload:info().
info() ->
    #{name => <<"selective_receive">>,
      summary => <<"receive a tagged reply behind N queued messages, with/without the ref optimisation">>,
      definition =>
          <<"The measuring process first queues N unrelated messages to "
            "itself (untimed). Timed: K iterations of: create a reference, "
            "send {Ref, I} to self, receive the message matching {Ref, _}; "
            "divided by K. ref=fresh: make_ref() in the same function as the "
            "receive, so the compiler's receive-marker optimisation skips the "
            "N old messages; ref=opaque: the reference comes from an external "
            "function call, so each receive scans the N old messages.">>,
      unit => <<"us">>, better => lower, metric => <<"per_receive">>,
      checks => <<"K tagged replies received with the right payloads and the "
                  "N queued messages still there, in order, afterwards">>}.

%% @doc Parameters.
-spec params() -> [beamlab_workload:param_spec()].
params() ->
    [#{key => queued, default => [0, 1000, 10000], full => [0, 100, 1000, 10000, 100000],
       type => non_neg_integer, help => <<"unrelated messages queued in front">>},
     #{key => ref, default => [fresh, opaque], full => [fresh, opaque],
       type => {enum, [fresh, opaque]}, help => <<"how the reference is made">>},
     #{key => k, default => 2000, full => 2000, type => pos_integer,
       help => <<"receives per repetition">>}].

%% @doc No state.
-spec setup(beamlab_workload:params()) -> {ok, none}.
setup(_) -> {ok, none}.

%% @doc One repetition.
-spec run(none, beamlab_workload:params()) -> {ok, beamlab_workload:rep()}.
run(none, #{queued := N, ref := Shape, k := K}) ->
    Self = self(),
    _ = [Self ! {queued, I} || I <- lists:seq(1, N)],
    Loop = case Shape of
               fresh -> fun ?MODULE:fresh_loop/3;
               opaque -> fun ?MODULE:opaque_loop/3
           end,
    T0 = erlang:monotonic_time(),
    Sum = Loop(Self, K, 0),
    T1 = erlang:monotonic_time(),
    Queued = drain_queued(1, N),
    {ok, #{value => beamlab_workload:us(T1 - T0) / K,
           counters => #{received => K, queued => Queued},
           check => beamlab_workload:check_all([{"sum of replies", K * (K + 1) div 2, Sum},
                                                {"queued messages kept in order", N, Queued}])}}.

%% @doc Nothing to clean.
-spec teardown(none) -> ok.
teardown(_) -> ok.

%% @doc The optimised shape: make_ref/0 and the receive in one function.
-spec fresh_loop(pid(), non_neg_integer(), non_neg_integer()) -> non_neg_integer().
fresh_loop(_Self, 0, Sum) -> Sum;
fresh_loop(Self, K, Sum) ->
    Ref = make_ref(),
    Self ! {Ref, K},
    receive {Ref, X} -> fresh_loop(Self, K - 1, Sum + X) end.

%% @doc The unoptimised shape: the reference comes from an external call.
-spec opaque_loop(pid(), non_neg_integer(), non_neg_integer()) -> non_neg_integer().
opaque_loop(_Self, 0, Sum) -> Sum;
opaque_loop(Self, K, Sum) ->
    Ref = ?MODULE:new_ref(),
    Self ! {Ref, K},
    receive {Ref, X} -> opaque_loop(Self, K - 1, Sum + X) end.

%% @doc A reference the compiler cannot know is fresh.
-spec new_ref() -> reference().
new_ref() -> make_ref().

drain_queued(I, N) when I > N -> N;
drain_queued(I, N) ->
    receive
        Msg when Msg =:= {queued, I} -> drain_queued(I + 1, N);
        _Other -> I - 1
    after 0 -> I - 1
    end.
