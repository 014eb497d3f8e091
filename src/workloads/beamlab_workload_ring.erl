%%% @doc Workload `ring': Armstrong's ring. N processes in a ring pass a
%%% token M times around; creating the ring is reported apart from passing.
-module(beamlab_workload_ring).
-behaviour(beamlab_workload).

-export([info/0, params/0, setup/1, run/2, teardown/1, processes/1]).

%% @doc Workload description.
-spec info() -> beamlab_workload:info().
info() ->
    #{name => <<"ring">>,
      summary => <<"N processes pass a token M times around (Armstrong's ring)">>,
      definition =>
          <<"Two metrics per repetition. create: time to spawn the N ring "
            "processes, each linked to the next, until the last one is "
            "spawned and the ring is closed (ms); the first process spawns "
            "and links all the others. hop: time from the first "
            "send of the token until it has made N*M hops and is back at "
            "the first process, divided by N*M (us). The token is an "
            "integer decremented at each hop.">>,
      unit => <<"us">>, better => lower, metric => <<"hop">>,
      metrics => [#{key => create, unit => <<"ms">>, better => lower}],
      repeat => #{quick => 3, full => 5},
      checks => <<"the token ends at the first process after exactly N*M hops, "
                  "and the hop counts of all N processes (collected by a stop "
                  "message sent once around, untimed) add up to N*M">>}.

%% @doc Parameters.
-spec params() -> [beamlab_workload:param_spec()].
params() ->
    [#{key => n, default => [1000, 40000], full => [40000, 1000000], type => pos_integer,
       help => <<"processes in the ring">>},
     #{key => m, default => 4, full => 10, type => pos_integer,
       help => <<"times the token goes around">>}].

%% @doc Peak number of processes.
-spec processes(beamlab_workload:params()) -> non_neg_integer().
processes(#{n := N}) -> N.

%% @doc No state: the ring is created (and timed) in every repetition.
-spec setup(beamlab_workload:params()) -> {ok, none}.
setup(_) -> {ok, none}.

%% @doc One repetition: create, pass, then stop the ring (untimed).
-spec run(none, beamlab_workload:params()) -> {ok, beamlab_workload:rep()}.
run(none, #{n := N, m := M}) ->
    Self = self(),
    T0 = erlang:monotonic_time(),
    First = spawn_link(fun() -> first(Self, N) end),
    receive {ring_closed, First} -> ok end,
    T1 = erlang:monotonic_time(),
    First ! {token, N * M},
    receive {ring_done, First} -> ok end,
    T2 = erlang:monotonic_time(),
    First ! stop,
    Hops = receive {ring_hops, First, H} -> H end,
    unlink(First),
    Hops0 = N * M,
    {ok, #{value => beamlab_workload:us(T2 - T1) / Hops0,
           metrics => #{create => beamlab_workload:us(T1 - T0) / 1000},
           counters => #{processes => N, hops => Hops},
           check => beamlab_workload:check_all([{"hops", Hops0, Hops}])}}.

%% @doc Nothing to clean.
-spec teardown(none) -> ok.
teardown(_) -> ok.

%% The first process spawns the others from the last to the second, each
%% knowing its successor, so no process needs to be told its neighbour later.
first(Parent, N) ->
    Next = build(self(), N - 1),
    Parent ! {ring_closed, self()},
    first_loop(Parent, Next, 0).

build(Next, 0) -> Next;
build(Next, K) -> build(spawn_link(fun() -> member(Next, 0) end), K - 1).

%% Count counts forwards (hops), so the sum over the ring is exactly N*M.
first_loop(Parent, Next, Count) ->
    receive
        {token, 0} -> Parent ! {ring_done, self()}, first_loop(Parent, Next, Count);
        {token, T} -> Next ! {token, T - 1}, first_loop(Parent, Next, Count + 1);
        stop when Next =:= self() -> Parent ! {ring_hops, self(), Count};
        stop -> Next ! {stop, Count}, first_loop(Parent, Next, Count);
        {stop, Sum} -> Parent ! {ring_hops, self(), Sum}
    end.

member(Next, Count) ->
    receive
        {token, T} -> Next ! {token, T - 1}, member(Next, Count + 1);
        {stop, Sum} -> Next ! {stop, Sum + Count}
    end.
