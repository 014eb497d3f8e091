%%% @doc Workload `skynet': a 10-ary tree of processes whose leaves hold
%%% the numbers 0..Size-1 and send their sums back up to the root.
-module(beamlab_workload_skynet).
-behaviour(beamlab_workload).

-export([info/0, params/0, setup/1, run/2, teardown/1, processes/1,
         normalize/1, format_error/1]).

%% @doc Workload description.
-spec info() -> beamlab_workload:info().
info() ->
    #{name => <<"skynet">>,
      summary => <<"10-ary tree of Size leaf processes summing back to the root">>,
      definition =>
          <<"Time from the root's first spawn until the root has received the "
            "sum. Every tree node is a process: an inner node spawns 10 "
            "children and waits for their 10 sums; a leaf sends its number. "
            "Size leaves (a power of 10) means Size*10/9 processes in all.">>,
      unit => <<"ms">>, better => lower, metric => <<"time">>,
      repeat => #{quick => 3, full => 3},
      checks => <<"the sum equals Size*(Size-1)/2 and the number of processes "
                  "that reported equals Size*10/9 (rounded down)">>}.

%% @doc Parameters.
-spec params() -> [beamlab_workload:param_spec()].
params() ->
    [#{key => size, default => 10000, full => 1000000, type => pos_integer,
       help => <<"leaf processes, a power of 10">>}].

%% @doc Reject sizes that are not powers of 10.
-spec normalize(beamlab_workload:params()) -> {ok, beamlab_workload:params()} | {error, term()}.
normalize(#{size := S} = P) ->
    case levels(S, 0) of
        {ok, _} -> {ok, P};
        error -> {error, {not_power_of_10, S}}
    end.

%% @doc Peak number of processes: the whole tree can be alive at once.
-spec processes(beamlab_workload:params()) -> non_neg_integer().
processes(#{size := S}) -> S * 10 div 9 + 1.

%% @doc No state.
-spec setup(beamlab_workload:params()) -> {ok, none}.
setup(_) -> {ok, none}.

%% @doc One repetition.
-spec run(none, beamlab_workload:params()) -> {ok, beamlab_workload:rep()}.
run(none, #{size := Size}) ->
    Count = counters:new(1, [write_concurrency]),
    Self = self(),
    T0 = erlang:monotonic_time(),
    _ = spawn_link(fun() -> node(Self, 0, Size, Count) end),
    Sum = receive {skynet, S} -> S end,
    T1 = erlang:monotonic_time(),
    Procs = counters:get(Count, 1),
    {ok, #{value => beamlab_workload:us(T1 - T0) / 1000,
           counters => #{processes => Procs, sum => Sum},
           check => beamlab_workload:check_all(
                      [{"sum", Size * (Size - 1) div 2, Sum},
                       {"processes", processes(#{size => Size}) - 1, Procs}])}}.

%% @doc Nothing to clean.
-spec teardown(none) -> ok.
teardown(_) -> ok.

%% @doc One line per error.
-spec format_error(term()) -> iolist().
format_error({not_power_of_10, S}) ->
    io_lib:format("size must be a power of 10 (10, 100, ..., 1000000), not ~b", [S]).

node(Parent, Num, 1, Count) ->
    counters:add(Count, 1, 1),
    Parent ! {skynet, Num};
node(Parent, Num, Size, Count) ->
    counters:add(Count, 1, 1),
    Sub = Size div 10,
    Self = self(),
    _ = [spawn(fun() -> node(Self, Num + I * Sub, Sub, Count) end) || I <- lists:seq(0, 9)],
    Parent ! {skynet, collect(10, 0)}.

collect(0, Sum) -> Sum;
collect(N, Sum) -> receive {skynet, S} -> collect(N - 1, Sum + S) end.

levels(1, L) -> {ok, L};
levels(S, L) when S >= 10, S rem 10 =:= 0 -> levels(S div 10, L + 1);
levels(_, _) -> error.
