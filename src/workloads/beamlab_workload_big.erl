%%% @doc Workload `big': the many-to-many message benchmark. variant=bencherl
%%% (default) follows bencherl's bench/big: every process pings every
%%% process (itself included) without waiting, then collects the pongs with
%%% a selective receive in a fixed order; spawning is timed. variant=savina
%%% is Savina's Big: N processes each send M pings, one at a time, to random
%%% peers and wait for each pong.
-module(beamlab_workload_big).
-behaviour(beamlab_workload).

-export([info/0, params/0, setup/1, run/2, teardown/1, processes/1, normalize/1]).

%% @doc Workload description.
-spec info() -> beamlab_workload:info().
info() ->
    #{name => <<"big">>,
      summary => <<"many-to-many: N processes ping every process (bencherl) or random peers (savina)">>,
      definition =>
          <<"variant=bencherl (bencherl bench/big): timed from the first "
            "spawn until the N-th {done, Pid} has been received and every "
            "process sent die: N processes are spawned, each is sent {procs, "
            "AllPids, Parent}; each sends {ping, Self} to every process in "
            "the list (itself included), answering a queued ping between "
            "sends, then collects one {pong, P} from every P with a selective "
            "receive in reverse send order, answering pings meanwhile, and "
            "reports done; it keeps answering pings until die. 2*N*N "
            "messages. variant=savina (Savina's Big): N processes are "
            "spawned (untimed) and wait for go; timed from go until every "
            "process got its M pongs; each sends {ping, Self} to a uniformly "
            "random other process and waits for the pong, answering pings "
            "meanwhile. 2*N*M messages. Value: messages (pings + pongs) per "
            "second.">>,
      unit => <<"msg/s">>, better => higher, metric => <<"throughput">>,
      checks => <<"bencherl: N done messages, each sent only after a pong from "
                  "every one of the N processes (so N*N pings and N*N pongs); "
                  "every process exits on die. savina: pings sent = pings "
                  "answered = pongs received = N*M">>}.

%% @doc Parameters.
-spec params() -> [beamlab_workload:param_spec()].
params() ->
    [#{key => variant, default => bencherl, full => [bencherl, savina],
       type => {enum, [bencherl, savina]},
       help => <<"bencherl: all-to-all, spawning timed; savina: M random pings each">>},
     #{key => n, default => 200, full => 1000, type => {int_range, 2, 100000000},
       help => <<"processes">>},
     #{key => m, default => 500, full => 2000, type => pos_integer,
       help => <<"savina: pings sent by each process">>}].

%% @doc bencherl has no M: every process pings every process once.
-spec normalize(beamlab_workload:params()) -> {ok, beamlab_workload:params()}.
normalize(#{variant := bencherl} = P) -> {ok, maps:remove(m, P)};
normalize(P) -> {ok, P}.

%% @doc Peak number of processes.
-spec processes(beamlab_workload:params()) -> non_neg_integer().
processes(#{n := N}) -> N.

%% @doc No state: processes are created in each repetition.
-spec setup(beamlab_workload:params()) -> {ok, none}.
setup(_) -> {ok, none}.

%% @doc One repetition.
-spec run(none, beamlab_workload:params()) -> {ok, beamlab_workload:rep()}.
run(none, #{variant := bencherl, n := N}) ->
    T0 = erlang:monotonic_time(),
    Procs = b_spawn(N),
    RMsgs = [{done, P} || P <- Procs],
    _ = b_send(Procs, {procs, Procs, self()}),
    b_receive(RMsgs),
    lists:foreach(fun(P) -> P ! die end, Procs),
    T1 = erlang:monotonic_time(),
    %% Untimed: every process exits normally on die.
    Exited = b_await_exits(Procs, 0),
    {ok, #{value => 2 * N * N / (beamlab_workload:us(T1 - T0) / 1.0e6),
           counters => #{done => length(RMsgs), pings => N * N, pongs => N * N,
                         exited => Exited},
           check => beamlab_workload:check_all([{"processes exited on die", N, Exited}])}};
run(none, #{variant := savina, n := N, m := M}) ->
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
    beamlab_workload:random_peer(Peers) ! {ping, self()},
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

wait_done(0) -> ok;
wait_done(N) -> receive big_done -> wait_done(N - 1) end.

collect(0, Acc) -> Acc;
collect(N, {S, A, P}) ->
    receive {big_counts, S1, A1, P1} -> collect(N - 1, {S + S1, A + A1, P + P1}) end.

%% bencherl's pinger, with its states: waiting for the list, pinging,
%% collecting pongs, done (answering pings until die).
b_pinger([], [], true) ->
    receive
        {procs, Procs, ReportTo} -> b_pinger(Procs, [], ReportTo)
    end;
b_pinger([], [], false) ->
    receive
        {ping, From} ->
            From ! {pong, self()},
            b_pinger([], [], false);
        die ->
            ok
    end;
b_pinger([], [], ReportTo) ->
    ReportTo ! {done, self()},
    b_pinger([], [], false);
b_pinger([], [Po | Pos] = Pongers, ReportTo) ->
    receive
        {ping, From} ->
            From ! {pong, self()},
            b_pinger([], Pongers, ReportTo);
        {pong, Po} ->
            b_pinger([], Pos, ReportTo)
    end;
b_pinger([Pi | Pis], Pongers, ReportTo) ->
    receive
        {ping, From} -> From ! {pong, self()}
    after 0 -> ok
    end,
    Pi ! {ping, self()},
    b_pinger(Pis, [Pi | Pongers], ReportTo).

b_spawn(N) when N =< 0 -> [];
b_spawn(N) -> [spawn_link(fun() -> b_pinger([], [], true) end) | b_spawn(N - 1)].

b_send([], Msg) -> Msg;
b_send([P | Ps], Msg) -> P ! Msg, b_send(Ps, Msg).

b_receive([]) -> ok;
b_receive([M | Ms]) -> receive M -> b_receive(Ms) end.

b_await_exits([], N) -> N;
b_await_exits([P | Ps], N) ->
    MRef = erlang:monitor(process, P),
    receive
        {'DOWN', MRef, process, P, R} when R =:= normal; R =:= noproc ->
            unlink(P), b_await_exits(Ps, N + 1);
        {'DOWN', MRef, process, P, _} ->
            unlink(P), b_await_exits(Ps, N)
    end.
