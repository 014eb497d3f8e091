%%% @doc Workload `send': a process sends a message to itself and receives
%%% it, N times: enqueue and dequeue without a context switch.
-module(beamlab_workload_send).
-behaviour(beamlab_workload).

-export([info/0, params/0, setup/1, run/2, teardown/1]).

%% @doc Workload description.
-spec info() -> beamlab_workload:info().
info() ->
    #{name => <<"send">>,
      summary => <<"send to self and receive: enqueue+dequeue, no context switch">>,
      definition =>
          <<"Time of a loop of N iterations, each `self() ! {msg, I}` followed "
            "by a receive of that message (the mailbox is empty before each "
            "send), divided by N.">>,
      unit => <<"us">>, better => lower, metric => <<"per_message">>,
      checks => <<"N messages received, the sum of the received counters "
                  "equals N*(N+1)/2, the mailbox is empty after">>}.

%% @doc Parameters.
-spec params() -> [beamlab_workload:param_spec()].
params() ->
    [#{key => n, default => 1000000, full => 10000000, type => pos_integer,
       help => <<"messages per repetition">>}].

%% @doc No state.
-spec setup(beamlab_workload:params()) -> {ok, none}.
setup(_) -> {ok, none}.

%% @doc One repetition.
-spec run(none, beamlab_workload:params()) -> {ok, beamlab_workload:rep()}.
run(none, #{n := N}) ->
    Self = self(),
    T0 = erlang:monotonic_time(),
    {Got, Sum} = loop(Self, N, 0, 0),
    T1 = erlang:monotonic_time(),
    {message_queue_len, Left} = process_info(Self, message_queue_len),
    {ok, #{value => beamlab_workload:us(T1 - T0) / N,
           counters => #{sent => N, received => Got},
           check => beamlab_workload:check_all([{"received", N, Got},
                                                {"sum", N * (N + 1) div 2, Sum},
                                                {"left in mailbox", 0, Left}])}}.

%% @doc Nothing to clean.
-spec teardown(none) -> ok.
teardown(_) -> ok.

loop(_Self, 0, Got, Sum) -> {Got, Sum};
loop(Self, N, Got, Sum) ->
    Self ! {msg, N},
    receive {msg, I} -> loop(Self, N - 1, Got + 1, Sum + I) end.
