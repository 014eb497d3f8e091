%%% @doc Workload `bang' (bencherl): many-to-one flood. S senders each send
%%% M messages to one receiver as fast as they can.
-module(beamlab_workload_bang).
-behaviour(beamlab_workload).

-export([info/0, params/0, setup/1, run/2, teardown/1, processes/1]).

%% @doc Workload description.
-spec info() -> beamlab_workload:info().
info() ->
    #{name => <<"bang">>,
      summary => <<"many-to-one flood: S senders send M messages each to one receiver">>,
      definition =>
          <<"S sender processes are spawned (untimed) and wait for go. Timed: "
            "from broadcasting go until the receiver has received all S*M "
            "messages {Sender, I}. Value: messages received per second.">>,
      unit => <<"msg/s">>, better => higher, metric => <<"throughput">>,
      checks => <<"the receiver got S*M messages and the sum of their sequence "
                  "numbers (each sender sends M..1) is S*M*(M+1)/2">>}.

%% @doc Parameters.
-spec params() -> [beamlab_workload:param_spec()].
params() ->
    [#{key => senders, default => 100, full => 1000, type => pos_integer,
       help => <<"sending processes">>},
     #{key => m, default => 2000, full => 10000, type => pos_integer,
       help => <<"messages per sender">>}].

%% @doc Peak number of processes.
-spec processes(beamlab_workload:params()) -> non_neg_integer().
processes(#{senders := S}) -> S + 1.

%% @doc No state.
-spec setup(beamlab_workload:params()) -> {ok, none}.
setup(_) -> {ok, none}.

%% @doc One repetition; the harness worker process is the receiver.
-spec run(none, beamlab_workload:params()) -> {ok, beamlab_workload:rep()}.
run(none, #{senders := S, m := M}) ->
    Self = self(),
    Senders = [spawn_link(fun() -> receive go -> send(Self, M) end end)
               || _ <- lists:seq(1, S)],
    T0 = erlang:monotonic_time(),
    _ = [P ! go || P <- Senders],
    {Got, Sum} = receive_all(S * M, 0, 0),
    T1 = erlang:monotonic_time(),
    {ok, #{value => Got / (beamlab_workload:us(T1 - T0) / 1.0e6),
           counters => #{sent => S * M, received => Got},
           check => beamlab_workload:check_all([{"received", S * M, Got},
                                                {"sum of sequence numbers", S * (M * (M + 1) div 2), Sum}])}}.

%% @doc Nothing to clean.
-spec teardown(none) -> ok.
teardown(_) -> ok.

send(_To, 0) -> ok;
send(To, M) -> To ! {self(), M}, send(To, M - 1).

receive_all(0, Got, Sum) -> {Got, Sum};
receive_all(Left, Got, Sum) ->
    receive {From, I} when is_pid(From) -> receive_all(Left - 1, Got + 1, Sum + I) end.
