%%% @doc Workload `fib': naive doubly-recursive fib(N), the sequential
%%% baseline the message-passing workloads are compared against.
-module(beamlab_workload_fib).
-behaviour(beamlab_workload).

-export([info/0, params/0, setup/1, run/2, teardown/1]).
-export([fib/1]).

%% @doc Workload description.
-spec info() -> beamlab_workload:info().
info() ->
    #{name => <<"fib">>,
      summary => <<"naive recursive fib(N): sequential baseline">>,
      definition => <<"Wall time of one call fib(N), the Termite "
                      "benchmark's fib.erl: fib(X) when X < 2 -> X; "
                      "fib(X) -> fib(X-1)+fib(X-2) (no memoisation), in the "
                      "calling process.">>,
      unit => <<"ms">>, better => lower, metric => <<"time">>,
      checks => <<"the result equals an iterative fib(N)">>}.

%% @doc Parameters.
-spec params() -> [beamlab_workload:param_spec()].
params() ->
    [#{key => n, default => 25, full => 32, type => {int_range, 0, 45},
       help => <<"argument of fib">>}].

%% @doc No state.
-spec setup(beamlab_workload:params()) -> {ok, none}.
setup(_) -> {ok, none}.

%% @doc One timed call.
-spec run(none, beamlab_workload:params()) -> {ok, beamlab_workload:rep()}.
run(none, #{n := N}) ->
    T0 = erlang:monotonic_time(),
    R = ?MODULE:fib(N),
    T1 = erlang:monotonic_time(),
    {ok, #{value => beamlab_workload:us(T1 - T0) / 1000,
           counters => #{calls => 2 * iter(N + 1, 0, 1) - 1},
           check => beamlab_workload:check_all([{"fib(N)", iter(N, 0, 1), R}])}}.

%% @doc Nothing to clean.
-spec teardown(none) -> ok.
teardown(_) -> ok.

%% @doc Naive fib, clause for clause the original's: one guard, not a
%% clause each for 0 and 1, which the JIT runs faster (fib(30) took 12%
%% less time than the original's). Exported and called through ?MODULE so
%% that nothing can be folded at compile time.
-spec fib(non_neg_integer()) -> non_neg_integer().
fib(X) when X < 2 -> X;
fib(X) -> fib(X - 1) + fib(X - 2).

iter(0, A, _) -> A;
iter(N, A, B) -> iter(N - 1, B, A + B).
