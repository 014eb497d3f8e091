%%% @doc Workload `skynet' (atemerev/skynet, erlang/skynet.erl): a 10-ary
%%% tree of processes whose leaves hold the numbers 0..Size-1 and send their
%%% sums back up to the root; the same code shape as the original (spawn/3,
%%% plain integers as messages).
-module(beamlab_workload_skynet).
-behaviour(beamlab_workload).

-export([info/0, params/0, setup/1, run/2, teardown/1, processes/1,
         normalize/1, format_error/1]).
%% A tree node (spawned by MFA, as in the original).
-export([skynet/4]).

%% @doc Workload description.
-spec info() -> beamlab_workload:info().
info() ->
    #{name => <<"skynet">>,
      summary => <<"10-ary tree of Size leaf processes summing back to the root">>,
      definition =>
          <<"As atemerev/skynet's Erlang version: time from spawning the root "
            "until the caller has received the sum. Every tree node is a "
            "process: an inner node spawns its 10 children with spawn/3 and "
            "adds up the first 10 messages it receives (plain integers); a "
            "leaf sends its number. "
            "Size leaves (a power of 10) means Size*10/9 processes in all.">>,
      unit => <<"ms">>, better => lower, metric => <<"time">>,
      repeat => #{quick => 3, full => 3},
      checks => <<"the sum equals Size*(Size-1)/2 (every leaf reported once: "
                  "the numbers are distinct) and every tree process exited (the "
                  "VM's process count is back to what it was, untimed)">>}.

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
    Before = erlang:system_info(process_count),
    T0 = erlang:monotonic_time(),
    _ = spawn(?MODULE, skynet, [self(), 0, Size, 10]),
    Sum = receive N when is_integer(N) -> N end,
    T1 = erlang:monotonic_time(),
    {Drained, After} = beamlab_workload:await_process_count(Before, 30000),
    {ok, #{value => beamlab_workload:us(T1 - T0) / 1000,
           counters => #{processes => processes(#{size => Size}) - 1, sum => Sum,
                         processes_left => After - Before},
           check => beamlab_workload:check_all(
                      [{"sum", Size * (Size - 1) div 2, Sum},
                       {"every tree process exited", true, Drained}])}}.

%% @doc Nothing to clean.
-spec teardown(none) -> ok.
teardown(_) -> ok.

%% @doc One line per error.
-spec format_error(term()) -> iolist().
format_error(Reason) ->
    beamlab_format_reason:line(fun error_line/1, Reason).

error_line({not_power_of_10, S}) ->
    io_lib:format("size must be a power of 10 (10, 100, ..., 1000000), not ~b", [S]);
error_line(Other) ->
    %% (a reason of no kind above: printed, never raised)
    beamlab_format_reason:term(Other).

%% @doc One tree node of the original: a leaf sends its number, an inner
%% node spawns `Div' children and sends the sum of their answers.
-spec skynet(pid(), non_neg_integer(), pos_integer(), pos_integer()) -> term().
skynet(Parent, Num, 1, _) ->
    Parent ! Num;
skynet(Parent, Num, Size, Div) ->
    NewSize = Size div Div,
    lists:foreach(fun(X) -> spawn(?MODULE, skynet, [self(), Num + X * NewSize, NewSize, Div]) end,
                  lists:seq(0, Div - 1)),
    process_sum(Parent, Div, 0, 0).

process_sum(Parent, Div, Received, Total) ->
    receive
        N ->
            if
                Received < Div - 1 -> process_sum(Parent, Div, Received + 1, Total + N);
                true -> Parent ! Total + N
            end
    end.

levels(1, L) -> {ok, L};
levels(S, L) when S >= 10, S rem 10 =:= 0 -> levels(S div 10, L + 1);
levels(_, _) -> error.
