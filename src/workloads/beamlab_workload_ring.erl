%%% @doc Workload `ring'. variant=termite (default) is the ring of the
%%% Termite paper's Erlang benchmarks ("ring 40k/K"): the calling process
%%% spawns N-1 relays, each knowing the previous one, sends itself the token
%%% K and becomes the last relay; a relay forwards the token decremented
%%% while it is positive, then forwards 0 and exits, so creation, hops and
%%% exits are timed together. variant=laps is Armstrong's ring: the token
%%% goes M times around an existing ring, creation reported apart.
-module(beamlab_workload_ring).
-behaviour(beamlab_workload).

-export([info/0, params/0, setup/1, run/2, teardown/1, processes/1,
         normalize/1, format_error/1]).
%% The termite variant's relay (spawned by MFA, as in the original).
-export([t_relay/1]).

%% @doc Workload description.
-spec info() -> beamlab_workload:info().
info() ->
    #{name => <<"ring">>,
      summary => <<"ring of N processes: Termite's ring N/K (default) or M laps (Armstrong)">>,
      definition =>
          <<"variant=termite (Termite paper, ring.erl): timed from the first "
            "spawn until the calling process, itself the last relay, sees the "
            "token come back as 0: it spawns N-1 relays, each with the "
            "previous one as successor (the first has the caller), sends "
            "itself the integer K and relays. A relay receiving K > 0 sends "
            "K-1 on and waits again; receiving 0 it sends 0 on and exits. So "
            "ring N/0 times spawning and one send; ring N/K also K hops and "
            "one lap of 0s and exits. Value: time divided by N (us per "
            "process, the Termite table's figure); also the whole time "
            "(total, ms). variant=laps (Armstrong's ring): create: time to "
            "spawn N linked processes and close the ring (ms); hop: time from "
            "the first send of the token until it has made N*M hops, divided "
            "by N*M (us).">>,
      unit => <<"us">>, better => lower, metric => <<"hop">>,
      metrics => [#{key => create, unit => <<"ms">>, better => lower,
                    measure => <<"wall-clock time to create the ring">>},
                  #{key => total, unit => <<"ms">>, better => lower,
                    measure => <<"wall-clock time of the whole ring">>}],
      repeat => #{quick => 3, full => 5},
      checks => <<"termite: the calling relay got the token back as 0, "
                  "exactly one 0 comes back after it returned when K = 0 (none "
                  "when 0 < K < N), and every relay exited (the VM's process count is back to what "
                  "it was before the repetition); laps: the token ends at the "
                  "first process after exactly N*M hops and the hop counts of "
                  "all N processes add up to N*M">>}.

%% @doc Parameters.
-spec params() -> [beamlab_workload:param_spec()].
params() ->
    [#{key => variant, default => termite, full => [termite, laps],
       type => {enum, [termite, laps]},
       help => <<"termite: ring N/K, everything timed; laps: M laps around a built ring">>},
     #{key => n, default => 40000, full => [40000, 1000000], type => pos_integer,
       help => <<"processes in the ring">>},
     #{key => k, default => [0, 4], full => [0, 4], type => non_neg_integer,
       help => <<"termite: the starting token, decremented at every hop">>},
     #{key => m, default => 4, full => 10, type => pos_integer,
       help => <<"laps: times the token goes around">>}].

%% @doc Each variant keeps only its own parameters; termite needs K < N.
-spec normalize(beamlab_workload:params()) -> {ok, beamlab_workload:params()} | {error, term()}.
normalize(#{variant := termite, n := N, k := K}) when K >= N -> {error, {token_not_below_n, K, N}};
normalize(#{variant := termite} = P) -> {ok, maps:remove(m, P)};
normalize(#{variant := laps} = P) -> {ok, maps:remove(k, P)}.

%% @doc One line per error.
-spec format_error(term()) -> iolist().
format_error(Reason) ->
    beamlab_format_reason:line(fun error_line/1, Reason).

error_line({token_not_below_n, K, N}) ->
    io_lib:format("k (the starting token, ~b) must be smaller than n (~b)", [K, N]);
error_line(Other) ->
    %% (a reason of no kind above: printed, never raised)
    beamlab_format_reason:term(Other).

%% @doc Peak number of processes.
-spec processes(beamlab_workload:params()) -> non_neg_integer().
processes(#{n := N}) -> N.

%% @doc No state: the ring is created (and timed) in every repetition.
-spec setup(beamlab_workload:params()) -> {ok, none}.
setup(_) -> {ok, none}.

%% @doc One repetition.
-spec run(none, beamlab_workload:params()) -> {ok, beamlab_workload:rep()}.
run(none, #{variant := termite, n := N, k := K}) ->
    Before = erlang:system_info(process_count),
    T0 = erlang:monotonic_time(),
    ok = t_ring(N, K),
    T1 = erlang:monotonic_time(),
    %% Untimed: the 0 goes on around the ring and every relay exits.
    {Drained, After} = beamlab_workload:await_process_count(Before, 30000),
    %% With K = 0 the caller returns at once and the 0 that goes around
    %% comes back to it: take it out before the next repetition.
    Stray = t_flush(0),
    Us = beamlab_workload:us(T1 - T0),
    {ok, #{value => Us / N, metric => <<"per_process">>,
           metrics => #{total => Us / 1000},
           counters => #{processes => N, token => K, processes_left => After - Before,
                         tokens_back_after => Stray},
           check => beamlab_workload:check_all(
                      [{"every relay exited", true, Drained},
                       {"tokens back at the caller after it returned",
                        case K of 0 -> 1; _ -> 0 end, Stray}])}};
run(none, #{variant := laps, n := N, m := M}) ->
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

%% Termite's ring: loop/3 and make_relay/1 of ring.erl.
t_ring(N, K) -> t_loop(K, self(), N).

t_loop(K, Current, N) when N > 1 ->
    t_loop(K, spawn(?MODULE, t_relay, [Current]), N - 1);
t_loop(K, Current, _) ->
    self() ! K,
    t_relay(Current).

%% @doc A Termite ring relay: forwards K-1 while K > 0, then 0 and stops.
-spec t_relay(pid()) -> ok.
t_relay(Next) ->
    receive
        K when K > 0 ->
            Next ! K - 1,
            t_relay(Next);
        K ->
            Next ! K,
            ok
    end.

t_flush(N) ->
    receive K when is_integer(K) -> t_flush(N + 1) after 0 -> N end.
