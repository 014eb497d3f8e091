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
          <<"Time of a loop of N iterations, each sending the bare integer "
            "I-1 to self and receiving whatever message comes, which is the "
            "next I (spheres self.erl: the mailbox is empty before each "
            "send), from I = N down to 0, divided by N.">>,
      unit => <<"us">>, better => lower, metric => <<"per_message">>,
      checks => <<"the chain of received integers came down from N to 0 "
                  "(so N messages received, each the one just sent: a foreign "
                  "message would break the chain or stay behind) and the "
                  "mailbox is empty after">>}.

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
    T0 = erlang:monotonic_time(),
    ok = loop(N),
    T1 = erlang:monotonic_time(),
    {message_queue_len, Left} = process_info(self(), message_queue_len),
    %% loop/1 returns only once it has received 0, one integer per
    %% iteration: N received when nothing else is left in the mailbox.
    Received = case Left of 0 -> N; _ -> N - Left end,
    {ok, #{value => beamlab_workload:us(T1 - T0) / N,
           counters => #{sent => N, received => Received},
           check => beamlab_workload:check_all([{"received", N, Received},
                                                {"left in mailbox", 0, Left}])}}.

%% @doc Nothing to clean.
-spec teardown(none) -> ok.
teardown(_) -> ok.

%% The loop of spheres self.erl: the bare integer, any message received.
loop(0) -> ok;
loop(N) ->
    self() ! (N - 1),
    receive N1 -> loop(N1) end.
