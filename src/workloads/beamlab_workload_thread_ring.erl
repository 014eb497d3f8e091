%%% @doc Workload `thread_ring': the benchmarks-game thread ring. N processes
%%% in a ring pass a token that is decremented at every hop; the process
%%% that receives 0 reports its number.
-module(beamlab_workload_thread_ring).
-behaviour(beamlab_workload).

-export([info/0, params/0, setup/1, run/2, teardown/1, processes/1]).

%% @doc Workload description.
-spec info() -> beamlab_workload:info().
info() ->
    #{name => <<"thread_ring">>,
      summary => <<"token decremented at every hop around N processes until 0">>,
      definition =>
          <<"The ring of N processes (numbered 1..N) is created in setup "
            "(untimed). Timed: from sending the token T to process 1 until "
            "the process that receives 0 reports its number, divided by T "
            "hops (us per hop). Each process passes T-1 to the next; the "
            "token is the bare integer, as in the benchmarks game's Erlang "
            "program.">>,
      unit => <<"us">>, better => lower, metric => <<"hop">>,
      checks => <<"the process that sees 0 is number (T mod N)+1, as in the "
                  "benchmarks game, and the hop counts collected around the "
                  "ring (untimed) add up to T">>}.

%% @doc Parameters.
-spec params() -> [beamlab_workload:param_spec()].
params() ->
    [#{key => n, default => 503, full => 503, type => pos_integer,
       help => <<"processes in the ring">>},
     #{key => token, default => 200000, full => 10000000, type => pos_integer,
       help => <<"initial token value = hops">>}].

%% @doc Peak number of processes.
-spec processes(beamlab_workload:params()) -> non_neg_integer().
processes(#{n := N}) -> N.

%% @doc Build the ring; process 1 is linked to all others.
-spec setup(beamlab_workload:params()) -> {ok, pid()}.
setup(#{n := N}) ->
    Parent = self(),
    First = spawn_link(fun() ->
                               Next = build(Parent, self(), N, N),
                               Parent ! {thread_ring_ready, self()},
                               member(Parent, Next, 1, 0)
                       end),
    receive {thread_ring_ready, First} -> {ok, First} end.

%% @doc One repetition.
-spec run(pid(), beamlab_workload:params()) -> {ok, beamlab_workload:rep()}.
run(First, #{n := N, token := T}) ->
    T0 = erlang:monotonic_time(),
    First ! T,
    Winner = receive {thread_ring_zero, W} -> W end,
    T1 = erlang:monotonic_time(),
    First ! {count, 0, N},
    Hops = receive {thread_ring_hops, H} -> H end,
    {ok, #{value => beamlab_workload:us(T1 - T0) / T,
           counters => #{hops => Hops, winner => Winner},
           check => beamlab_workload:check_all([{"winner", T rem N + 1, Winner},
                                                {"hops", T, Hops}])}}.

%% @doc Stop the ring.
-spec teardown(pid()) -> ok.
teardown(First) ->
    unlink(First),
    exit(First, shutdown),
    ok.

%% Spawn processes N..2 (each knowing its successor); process N's successor is 1.
build(_Parent, Next, 1, _N) -> Next;
build(Parent, Next, K, N) ->
    build(Parent, spawn_link(fun() -> member(Parent, Next, K, 0) end), K - 1, N).

%% As in the benchmarks game, the token is the bare integer. Count = hops
%% forwarded since the last count request; a count message goes once
%% around (Left processes still to visit), summing them.
member(Parent, Next, Id, Count) ->
    receive
        0 -> Parent ! {thread_ring_zero, Id}, member(Parent, Next, Id, Count);
        T when is_integer(T) -> Next ! T - 1, member(Parent, Next, Id, Count + 1);
        {count, Sum, 1} -> Parent ! {thread_ring_hops, Sum + Count}, member(Parent, Next, Id, 0);
        {count, Sum, Left} -> Next ! {count, Sum + Count, Left - 1}, member(Parent, Next, Id, 0)
    end.
