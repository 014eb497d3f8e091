%%% @doc Workload `big' (bencherl/Savina): many-to-many random ping-pong.
%%% N processes each send M pings, one at a time, to random peers and wait
%%% for the pong; every process answers the pings it gets.
-module(beamlab_workload_big).
-behaviour(beamlab_workload).

-export([info/0, params/0, setup/1, run/2, teardown/1, processes/1]).

%% @doc Workload description.
-spec info() -> beamlab_workload:info().
info() ->
    #{name => <<"big">>,
      summary => <<"many-to-many: N processes ping random peers M times each">>,
      definition =>
          <<"N processes are spawned (untimed) and wait for go. Timed: from "
            "broadcasting go until all N processes have received their M "
            "pongs. Each process repeatedly sends {ping, Self} to a uniformly "
            "random other process and waits for the pong, answering every "
            "ping it receives meanwhile. Value: messages (pings + pongs) per "
            "second, 2*N*M messages in all.">>,
      unit => <<"msg/s">>, better => higher, metric => <<"throughput">>,
      checks => <<"pings sent = pings answered = pongs received = N*M "
                  "(counts from every process, collected after the run)">>}.

%% @doc Parameters.
-spec params() -> [beamlab_workload:param_spec()].
params() ->
    [#{key => n, default => 200, full => 1000, type => {int_range, 2, 100000000},
       help => <<"processes">>},
     #{key => m, default => 500, full => 2000, type => pos_integer,
       help => <<"pings sent by each process">>}].

%% @doc Peak number of processes.
-spec processes(beamlab_workload:params()) -> non_neg_integer().
processes(#{n := N}) -> N.

%% @doc No state: processes are created in each repetition.
-spec setup(beamlab_workload:params()) -> {ok, none}.
setup(_) -> {ok, none}.

%% @doc One repetition.
-spec run(none, beamlab_workload:params()) -> {ok, beamlab_workload:rep()}.
run(none, #{n := N, m := M}) ->
    Parent = self(),
    Pids = [spawn_link(fun() -> init(Parent, M) end) || _ <- lists:seq(1, N)],
    Peers = list_to_tuple(Pids),
    _ = [P ! {peers, Peers} || P <- Pids],
    T0 = erlang:monotonic_time(),
    _ = [P ! go || P <- Pids],
    ok = wait_done(N),
    T1 = erlang:monotonic_time(),
    _ = [P ! {stop, Parent} || P <- Pids],
    {Sent, Answered, Pongs} = collect(N, {0, 0, 0}),
    _ = [unlink(P) || P <- Pids],
    Total = N * M,
    {ok, #{value => 2 * Total / (beamlab_workload:us(T1 - T0) / 1.0e6),
           counters => #{pings_sent => Sent, pings_answered => Answered,
                         pongs_received => Pongs},
           check => beamlab_workload:check_all([{"pings sent", Total, Sent},
                                                {"pings answered", Total, Answered},
                                                {"pongs received", Total, Pongs}])}}.

%% @doc Nothing to clean.
-spec teardown(none) -> ok.
teardown(_) -> ok.

init(Parent, M) ->
    Peers = receive {peers, P} -> P end,
    receive go -> ok end,
    ping(Parent, Peers, M, 0, 0).

%% Send the next ping (or report done), then serve pings until our pong.
ping(Parent, _Peers, 0, Answered, Pongs) ->
    Parent ! big_done,
    serve(Answered, Pongs);
ping(Parent, Peers, Left, Answered, Pongs) ->
    peer(Peers) ! {ping, self()},
    await_pong(Parent, Peers, Left, Answered, Pongs).

await_pong(Parent, Peers, Left, Answered, Pongs) ->
    receive
        {ping, From} ->
            From ! pong,
            await_pong(Parent, Peers, Left, Answered + 1, Pongs);
        pong ->
            ping(Parent, Peers, Left - 1, Answered, Pongs + 1)
    end.

serve(Answered, Pongs) ->
    receive
        {ping, From} -> From ! pong, serve(Answered + 1, Pongs);
        {stop, Parent} -> Parent ! {big_counts, Pongs, Answered, Pongs}
    end.

peer(Peers) ->
    Self = self(),
    case element(rand:uniform(tuple_size(Peers)), Peers) of
        Self -> peer(Peers);
        P -> P
    end.

wait_done(0) -> ok;
wait_done(N) -> receive big_done -> wait_done(N - 1) end.

collect(0, Acc) -> Acc;
collect(N, {S, A, P}) ->
    receive {big_counts, S1, A1, P1} -> collect(N - 1, {S + S1, A + A1, P + P1}) end.
