#!/usr/bin/env escript
%%! -pa _build/default/lib/beamlab/ebin
%%% The candidates of the history rule (docs/statistics.md, "A history of
%%% single runs: a verdict needs two runs"), judged on the history windows
%%% bench/aa.sh kept (KEEP=DIR): runs/history-Z-I/ holds 10 single runs,
%%% 9 of identical code and the newest one identical (Z = 0) or with the
%%% planted slowdown (Z = 5, 20). Usage, from the repository root after
%%% `make':
%%%
%%%   bench/aa_history_design.escript DESIGN_DIR [VALIDATION_DIR]
%%%
%%% single   the newest run alone against the 9 before it
%%%          (beamlab_stats:compare_to_runs/3 at 95, 99, 99.9%);
%%% two      the two newest runs, each against the 8 runs before both, and
%%%          a verdict only when both are outside at that level and on the
%%%          same side (beamlab_stats:confirm_runs/4). A/A: the window's
%%%          last two runs. Planted: documents kept before the harness
%%%          planted two runs hold one planted run a window, so the pair
%%%          is the planted run of iteration I - 1 and that of I, against
%%%          the oldest 8 runs of window I (all measured before both, as
%%%          bench/aa.sh now does it).
%%%
%%% single_mad, two_mad  the same with a robust bound: median -+ K x 1.4826
%%%          x the median absolute deviation of the earlier runs' logs.
%%%
%%% A row: false verdicts of the A/A windows (faster or slower), then the
%%% share of +5% and +20% caught (slower); on the odd iterations, the even
%%% ones and all, for each directory given. Prints figures; asserts nothing.
-mode(compile).

main([_ | _] = Dirs) when length(Dirs) =< 2 ->
    [begin
         W = windows(Dir),
         io:format("== ~s: ~b A/A windows, ~b +5%, ~b +20%~n",
                   [Dir, length(maps:get(0, W)), length(maps:get(5, W)), length(maps:get(20, W))]),
         io:format("~-26s | odd: false   +5%  +20% | even: false  +5%  +20% | all: false   +5%  +20%~n",
                   ["rule"]),
         [io:format("~-26s | ~s~n", [io_lib:format("~w", [Rule]),
                                      lists:join(" | ", [row(Rule, W, Keep) || Keep <- halves()])])
          || Rule <- rules()]
     end || Dir <- Dirs],
    ok;
main(_) ->
    io:format(standard_error, "usage: bench/aa_history_design.escript DESIGN_DIR [VALIDATION_DIR]~n", []),
    halt(2).

rules() ->
    [{single, C} || C <- [0.95, 0.99, 0.999]] ++ [{two, C} || C <- [0.9, 0.95, 0.975, 0.99]]
        ++ [{Mad, K} || Mad <- [single_mad, two_mad], K <- [4.0, 5.0, 6.0]].

row(Rule, W, Keep) ->
    Trials = fun(Z) -> [V || {I, V} <- trials(Rule, Z, W), Keep(I)] end,
    A = Trials(0),
    False = length([x || V <- A, V =:= faster orelse V =:= slower]),
    Caught = fun(Z) -> L = Trials(Z), round(100 * length([x || slower <- L]) / max(1, length(L))) end,
    io_lib:format("~2b/~-3b ~4b% ~4b%", [False, length(A), Caught(5), Caught(20)]).

%% {Iteration, Verdict} of every trial of a cell. Throughput: higher is better.
trials({single, C}, Z, W) ->
    [{I, maps:get(verdict, beamlab_stats:compare_to_runs(Earlier, Last, opts(C)))}
     || {I, Ms} <- maps:get(Z, W), {Earlier, [Last]} <- [lists:split(length(Ms) - 1, Ms)]];
trials({single_mad, K}, Z, W) ->
    [{I, mad(K, Earlier, Last)} || {I, Ms} <- maps:get(Z, W), {Earlier, [Last]} <- [lists:split(length(Ms) - 1, Ms)]];
trials({two_mad, K}, 0, W) ->
    [{I, both(mad(K, Earlier, Prev), mad(K, Earlier, Last))}
     || {I, Ms} <- maps:get(0, W), {Earlier, [Prev, Last]} <- [lists:split(length(Ms) - 2, Ms)]];
trials({two_mad, K}, Z, W) ->
    Cell = maps:get(Z, W),
    Before = maps:from_list(Cell),
    [{I, both(mad(K, lists:droplast(Earlier), lists:last(maps:get(I - 1, Before))), mad(K, lists:droplast(Earlier), Last))}
     || {I, Ms} <- Cell, is_map_key(I - 1, Before), {Earlier, [Last]} <- [lists:split(length(Ms) - 1, Ms)]];
trials({two, C}, 0, W) ->
    [{I, maps:get(verdict, beamlab_stats:confirm_runs(Earlier, Prev, Last, opts(C)))}
     || {I, Ms} <- maps:get(0, W), {Earlier, [Prev, Last]} <- [lists:split(length(Ms) - 2, Ms)]];
trials({two, C}, Z, W) ->
    Cell = maps:get(Z, W),
    Before = maps:from_list(Cell),
    [{I, maps:get(verdict, beamlab_stats:confirm_runs(lists:droplast(Earlier), lists:last(maps:get(I - 1, Before)),
                                                       Last, opts(C)))}
     || {I, Ms} <- Cell, is_map_key(I - 1, Before), {Earlier, [Last]} <- [lists:split(length(Ms) - 1, Ms)]].

opts(C) -> #{better => higher, confidence => C}.

%% The robust candidate: on the logs, outside median -+ K * 1.4826 * MAD
%% (x sqrt(1 + 1/m)) of the earlier runs. Throughput: lower is slower.
mad(K, Earlier, X) ->
    Ys = [math:log(E) || E <- Earlier],
    Med = median(Ys),
    S = 1.4826 * median([abs(Y - Med) || Y <- Ys]) * math:sqrt(1 + 1 / length(Ys)),
    D = math:log(X) - Med,
    if
        D < -K * S -> slower;
        D > K * S -> faster;
        true -> no_difference
    end.

both(V, V) -> V;
both(_, _) -> no_difference.

median(L) ->
    S = lists:sort(L),
    N = length(S),
    case N rem 2 of
        1 -> lists:nth(N div 2 + 1, S);
        0 -> (lists:nth(N div 2, S) + lists:nth(N div 2 + 1, S)) / 2
    end.

halves() -> [fun(I) -> I rem 2 =:= 1 end, fun(I) -> I rem 2 =:= 0 end, fun(_) -> true end].

%% #{Z => [{Iteration, [RunMean]}]}, each window's runs in the order they
%% were measured (the file names are their start times).
windows(Dir) ->
    maps:from_list(
      [{Z, [{I, [run_mean(F) || F <- lists:sort(filelib:wildcard(filename:join(Sub, "*.json")))]}
            || {I, Sub} <- iterations(Dir, "history-" ++ integer_to_list(Z) ++ "-")]}
       || Z <- [0, 5, 20]]).

run_mean(File) ->
    {ok, Doc} = beamlab_result:load(File),
    #{stats := #{mean := M}} = hd(maps:get(benchmarks, Doc)),
    M.

iterations(Dir, Prefix) ->
    lists:sort([{list_to_integer(lists:nthtail(length(Prefix), filename:basename(S))), S}
                || S <- filelib:wildcard(filename:join([Dir, "runs", Prefix ++ "*"])), filelib:is_dir(S)]).
