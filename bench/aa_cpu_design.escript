#!/usr/bin/env escript
%%! -pa _build/default/lib/beamlab/ebin
%%% The candidates of the between-run rule for CPU time per iteration
%%% (`--metric cpu', docs/statistics.md "Under load with `--metric cpu`,
%%% REPEAT=5"), judged on the documents `METRIC=cpu KEEP=DIR bench/aa.sh'
%%% kept. Usage, from the repository root after `make':
%%%
%%%   bench/aa_cpu_design.escript KEEP_DIR [MORE_KEEP_DIRS...]
%%%
%%% Each directory is judged on its own (design on one, validate on
%%% another: the rule is chosen before the validation directory is read).
%%% METRIC=time reads the wall-clock cells instead (SCENARIO-Z).
%%%
%%% compare  the kept pairs (a.json, b-Z.json), then ALL PAIRS of the
%%%          independent runs: every two A/A runs of the chain (a of the
%%%          first iteration, then b-0 of every iteration) are a
%%%          legitimate A/A comparison, and every (A/A run, planted run)
%%%          a planted one. The pairs share runs, so they are not
%%%          independent trials: the rate is a U-statistic (an unbiased
%%%          estimate of one pair's false rate, with far more evidence
%%%          than the N kept pairs, but no binomial bound); printed with
%%%          how many runs take part in a false pair.
%%%          Rules, on the logs of the fresh VMs' means:
%%%            {welch, C, K}  beamlab_stats:compare/3 at confidence C with
%%%                           the run-to-run term K on each side (the df of
%%%                           the sample: the rule of wall-clock time)
%%%            {both, C, K}   a verdict only when Welch WITHOUT the term
%%%                           (df of the sample) AND Welch with it, the
%%%                           known term counted as exact in
%%%                           Satterthwaite's df, are both significant at
%%%                           C: the term adds no estimation uncertainty,
%%%                           and it can only remove verdicts
%%%            {median_both, C, K}  as both, each side's location the
%%%                           median of its VMs (robust to one far VM)
%%% history  the kept windows (the newest two runs against the 8 before
%%%          both, beamlab_stats:confirm_runs/4), then windows drawn from
%%%          the pool of distinct runs (8 A/A runs and 2 more: A/A, or the
%%%          2 planted; a fixed seed).
%%%
%%% Environment (bench/aa.sh's knobs, emulated on the kept documents):
%%%   LEVEL=fastest  compare: each fresh VM's fastest sample instead of its
%%%              mean (LEVEL=mean, the default, reads the means whichever
%%%              rule formed the document's samples)
%%%   VMS=K      compare: judge each run by its first K fresh VMs only (a
%%%              run of REPEAT=9 judged as one of K: both in one run, under
%%%              the same load)
%%%   WINDOW=W   history: the earlier runs the newest two are judged by
%%%              (default 8, HISTORY=10's; kept windows need HISTORY of at
%%%              least W + 2, drawn windows draw W); a list ("8 12 20")
%%%              prints a table for each
%%%   RULES="S1 S2" only the rules whose printed form holds one of them
%%%              (e.g. "two_robust,0.99}")
%%%   ITERS=A-B  only the iterations A to B (design on some, validate on
%%%              others: the rule is fixed before the others are read)
%%%
%%% Prints figures; asserts nothing.
-mode(compile).

-define(DRAWS, 4000).

main([_ | _] = Dirs) ->
    [begin
         io:format("######## ~s (~s; VMS=~s WINDOW=~s ITERS=~s)~n",
                   [Dir, tag(), os:getenv("VMS", "all"), os:getenv("WINDOW", "8"), os:getenv("ITERS", "all")]),
         compare(Dir),
         history(Dir)
     end || Dir <- Dirs],
    ok;
main(_) ->
    io:format(standard_error, "usage: bench/aa_cpu_design.escript KEEP_DIR [MORE...]~n", []),
    halt(2).

tag() ->
    case os:getenv("METRIC") of
        "time" -> "";
        _ -> "-cpu"
    end.

windows() -> [list_to_integer(W) || W <- string:lexemes(os:getenv("WINDOW", "8"), " ,")].

%% RULES="S1 S2": only the rules whose printed form holds one of them.
chosen(Rules) ->
    case string:lexemes(os:getenv("RULES", ""), " ") of
        [] -> Rules;
        Ss -> [R || R <- Rules, F <- [lists:flatten(io_lib:format("~w", [R]))],
                    lists:any(fun(S) -> string:find(F, S) =/= nomatch end, Ss)]
    end.

%% ITERS=A-B: the iterations kept.
in_iters(I) ->
    case string:split(os:getenv("ITERS", "1-999999"), "-") of
        [A, B] -> I >= list_to_integer(A) andalso I =< list_to_integer(B)
    end.

%% ---- compare -------------------------------------------------------

compare_rules() ->
    [{welch, C, K} || C <- [0.95, 0.975, 0.99], K <- [0.0, 0.01, 0.015, 0.02, 0.025, 0.03]]
        ++ [{both, C, K} || C <- [0.95, 0.975, 0.99], K <- [0.01, 0.015, 0.02, 0.025, 0.03, 0.04]]
        ++ [{median_both, C, K} || C <- [0.95, 0.99], K <- [0.02, 0.025, 0.03]].

compare(Dir) ->
    Cell = fun(Z) -> iterations(Dir, "compare" ++ tag() ++ "-" ++ Z ++ "-") end,
    Cell("0") =/= [] andalso compare(Dir, Cell).

compare(_Dir, Cell) ->
    Pairs = [{Z, values(filename:join(S, "a.json")), values(filename:join(S, "b-" ++ Z ++ ".json"))}
             || Z <- ["0", "5", "20"], {_, S} <- Cell(Z)],
    Chain = dedup([F || {_, S} <- Cell("0"), F <- [filename:join(S, "a.json"), filename:join(S, "b-0.json")]]),
    %% (b-0 of iteration I is a of I + 1: distinct runs by their values)
    AA = dedup([values(F) || F <- Chain]),
    Planted = fun(Z) -> [values(filename:join(S, "b-" ++ Z ++ ".json")) || {_, S} <- Cell(Z)] end,
    P20 = Planted("20"),
    P5 = Planted("5"),
    Better = better(Chain),
    io:format("== compare: ~b kept pairs; all pairs: ~b A/A runs (~b pairs), ~b +20% and ~b +5% runs~n",
              [length(Pairs), length(AA), length(AA) * (length(AA) - 1) div 2, length(P20), length(P5)]),
    io:format("~-28s | kept: false +5% +20% | all pairs: false (rate, runs in a false pair) +20% +5%~n", ["rule"]),
    [begin
         V = fun(A, B) -> verdict(Rule, A, B, Better) end,
         Kept = row([{Z, V(A, B)} || {Z, A, B} <- Pairs]),
         Idx = lists:zip(lists:seq(1, length(AA)), AA),
         FalsePairs = [{I, J} || {I, A} <- Idx, {J, B} <- Idx, I < J, wrong(V(A, B))],
         NPairs = max(1, length(AA) * (length(AA) - 1) div 2),
         Involved = length(lists:usort(lists:append([[I, J] || {I, J} <- FalsePairs]))),
         Caught = fun(Ps) ->
                          L = [V(A, B) || A <- AA, B <- Ps],
                          pct(length([x || slower <- L]), length(L))
                  end,
         io:format("~-28s | ~s | ~4b of ~4b (~.2f%, ~b runs) ~s ~s~n",
                   [io_lib:format("~w", [Rule]), Kept, length(FalsePairs), NPairs,
                    100 * length(FalsePairs) / NPairs, Involved, Caught(P20), Caught(P5)])
     end || Rule <- chosen(compare_rules())],
    ok.

wrong(V) -> V =:= faster orelse V =:= slower.

verdict({welch, C, K}, A, B, Better) ->
    maps:get(verdict, beamlab_stats:compare(A, B, #{better => Better, confidence => C, run_noise => K}));
verdict({both, C, K}, A, B, Better) ->
    both(A, B, Better, C, K, fun mean/1);
verdict({median_both, C, K}, A, B, Better) ->
    both(A, B, Better, C, K, fun beamlab_stats:median/1).

%% Welch on the logs without the term (df of the sample) and with it (the
%% term exact in Satterthwaite's df): a verdict when both are significant.
both(A0, B0, Better, C, K, Loc) ->
    A = [math:log(X) || X <- A0],
    B = [math:log(X) || X <- B0],
    S1 = beamlab_stats:variance(A) / length(A),
    S2 = beamlab_stats:variance(B) / length(B),
    D = Loc(B) - Loc(A),
    Df0 = (S1 + S2) * (S1 + S2) / (S1 * S1 / (length(A) - 1) + S2 * S2 / (length(B) - 1)),
    Known = 2 * K * K,
    DfK = (S1 + S2 + Known) * (S1 + S2 + Known) / (S1 * S1 / (length(A) - 1) + S2 * S2 / (length(B) - 1)),
    Q = (1 + C) / 2,
    Sig = abs(D) > beamlab_stats:t_quantile(Q, Df0) * math:sqrt(S1 + S2)
        andalso abs(D) > beamlab_stats:t_quantile(Q, DfK) * math:sqrt(S1 + S2 + Known),
    case Sig of
        false -> no_difference;
        true when (D > 0) =:= (Better =:= lower) -> slower;
        true -> faster
    end.

row(L) ->
    N = fun(Z) -> length([x || {Y, _} <- L, Y =:= Z]) end,
    F = length([x || {"0", V} <- L, wrong(V)]),
    C = fun(Z) -> pct(length([x || {Y, slower} <- L, Y =:= Z]), N(Z)) end,
    io_lib:format("~2b/~-3b ~s ~s", [F, N("0"), C("5"), C("20")]).

pct(_, 0) -> "   -";
pct(K, N) -> io_lib:format("~3b%", [round(100 * K / N)]).

%% ---- history -------------------------------------------------------

history_rules() ->
    [{two, C} || C <- [0.95, 0.975, 0.99, 0.995]] ++ [{two_mad, K} || K <- [3.0, 4.0, 5.0, 6.0]]
        ++ [{two_robust, C} || C <- [0.98, 0.99, 0.995, 0.999]]
        %% each run's fastest sample instead of its mean
        ++ [{{min, R}, C} || R <- [two, two_robust], C <- [0.99, 0.995, 0.999]]
        %% and with a floor K under the median and MAD's sd (a run-to-run term)
        ++ [{floor_min, K, C} || K <- [0.01, 0.015, 0.02, 0.025], C <- [0.99, 0.995]].

history(Dir) ->
    %% (the windows share their runs: each document is read once)
    Docs = iterations(Dir, "history" ++ tag() ++ "-0-") ++ iterations(Dir, "history" ++ tag() ++ "-20-"),
    Files = maps:from_list([{filename:basename(F), F}
                            || {_, S} <- Docs, F <- filelib:wildcard(filename:join(S, "*.json"))]),
    Means = maps:map(fun(_, F) -> run_levels(F) end, Files),
    Cell = fun(Z) -> [{I, runs(S, Means)} || {I, S} <- iterations(Dir, "history" ++ tag() ++ "-" ++ Z ++ "-")] end,
    W0 = Cell("0"),
    W20 = Cell("20"),
    [history(W, W0, W20) || W <- windows()],
    ok.

history(W, W0, W20) ->
    case W0 of
        [] -> ok;
        [{_, [{F, _} | _]} | _] ->
            Better = better([F]),
            Pool = pool([R || {_, Rs} <- W0, R <- Rs]),
            %% the planted runs: the newest two of every planted window
            PPool = pool([R || {_, Rs} <- W20, R <- lists:nthtail(length(Rs) - 2, Rs)]),
            io:format("== history, window ~b: ~b A/A and ~b +20% windows; pools: ~b distinct A/A runs, ~b planted~n",
                      [W, length(W0), length(W20), length(Pool), length(PPool)]),
            io:format("~-20s | kept: false +20% (~~, unconfirmed) | ~b drawn windows: false (rate) +20%~n",
                      ["rule", ?DRAWS]),
            [begin
                 Kept = fun(Ws) -> [judge(Rule, W, Ms, Better) || {_, Rs} <- Ws, Ms <- [[M || {_, M} <- Rs]]] end,
                 K0 = Kept(W0),
                 K20 = Kept(W20),
                 rand:seed(exsss, {35, 36, 37}),
                 D0 = [judge(Rule, W, draw(Pool, W + 2, []), Better) || _ <- lists:seq(1, ?DRAWS)],
                 D20 = [judge(Rule, W, draw(Pool, W, []) ++ draw(PPool, 2, []), Better)
                        || length(PPool) >= 2, _ <- lists:seq(1, ?DRAWS)],
                 io:format("~-20s | ~2b/~-3b ~s (~b, ~b) | ~4b (~.2f%) ~s~n",
                           [io_lib:format("~w", [Rule]), length([x || V <- K0, wrong(V)]), length(K0),
                            pct(length([x || slower <- K20]), length(K20)),
                            length([x || no_difference <- K20]), length([x || unconfirmed <- K20]),
                            length([x || V <- D0, wrong(V)]), 100 * length([x || V <- D0, wrong(V)]) / ?DRAWS,
                            pct(length([x || slower <- D20]), length(D20))])
             end || Rule <- chosen(history_rules())],
            ok
    end.

%% The newest two runs against the (up to WINDOW) before both, as `compare DIR'.
judge({{min, Rule}, C}, W, Ms, Better) ->
    judge({Rule, C}, W, [{Min, Min} || {_, Min} <- Ms], Better);
judge({floor_min, K, C}, W, Ms0, Better) ->
    Ms = [Min || {_, Min} <- Ms0],
    {Earlier, [Prev, Last]} = lists:split(length(Ms) - 2, Ms),
    E = lists:nthtail(max(0, length(Earlier) - W), Earlier),
    case {floor(K, C, E, Prev, Better), floor(K, C, E, Last, Better)} of
        {V, V} -> V;
        {_, no_difference} -> no_difference;
        _ -> unconfirmed
    end;
judge(Rule, W, Ms0, Better) ->
    Ms = [Mean || {Mean, _} <- Ms0],
    {Earlier, [Prev, Last]} = lists:split(length(Ms) - 2, Ms),
    E = lists:nthtail(max(0, length(Earlier) - W), Earlier),
    case Rule of
        {two, C} ->
            maps:get(verdict, beamlab_stats:confirm_runs(E, Prev, Last, #{better => Better, confidence => C}));
        {two_robust, C} ->
            maps:get(verdict, beamlab_stats:confirm_runs(E, Prev, Last, #{better => Better, confidence => C,
                                                                           robust => true}));
        {two_mad, K} ->
            case {mad(K, E, Prev, Better), mad(K, E, Last, Better)} of
                {V, V} -> V;
                {_, no_difference} -> no_difference;
                _ -> unconfirmed
            end
    end.

%% X against the median of the earlier runs' logs, the spread the larger
%% of 1.4826 x their MAD and K, at confidence C on m - 1 df.
floor(K, C, Earlier, X, Better) ->
    Ys = [math:log(E) || E <- Earlier],
    M = length(Ys),
    Med = beamlab_stats:median(Ys),
    S = max(K, 1.4826 * beamlab_stats:median([abs(Y - Med) || Y <- Ys])) * math:sqrt(1 + 1 / M),
    D = math:log(X) - Med,
    case abs(D) =< beamlab_stats:t_quantile((1 + C) / 2, M - 1) * S of
        true -> no_difference;
        false when (D > 0) =:= (Better =:= lower) -> slower;
        false -> faster
    end.

mad(K, Earlier, X, Better) ->
    Ys = [math:log(E) || E <- Earlier],
    Med = beamlab_stats:median(Ys),
    S = 1.4826 * beamlab_stats:median([abs(Y - Med) || Y <- Ys]) * math:sqrt(1 + 1 / length(Ys)),
    D = math:log(X) - Med,
    if
        abs(D) =< K * S -> no_difference;
        (D > 0) =:= (Better =:= lower) -> slower;
        true -> faster
    end.

draw(_, 0, Acc) -> Acc;
draw(Pool, K, Acc) ->
    X = lists:nth(rand:uniform(length(Pool)), Pool),
    case lists:member(X, Acc) of
        true -> draw(Pool, K, Acc);
        false -> draw(Pool, K - 1, [X | Acc])
    end.

%% Distinct runs by their value (a planted run is kept under two names).
pool(Rs) -> lists:usort([M || {_, M} <- Rs]).

%% [{File, RunMean}] of a window, in the order measured.
runs(Sub, Means) ->
    [{F, maps:get(filename:basename(F), Means)} || F <- lists:sort(filelib:wildcard(filename:join(Sub, "*.json")))].

%% {mean, fastest sample} of a single run
run_levels(File) ->
    #{stats := #{mean := M}, samples := S} = hd(benchmarks(File)),
    {M, lists:min(S)}.

%% ---- documents -----------------------------------------------------

better([F | _]) ->
    case maps:get(better, hd(benchmarks(F))) of
        B when B =:= higher; B =:= <<"higher">> -> higher;
        _ -> lower
    end.

iterations(Dir, Prefix) ->
    lists:sort([{list_to_integer(N), S}
                || S <- filelib:wildcard(filename:join([Dir, "runs", Prefix ++ "*"])), filelib:is_dir(S),
                   N <- [lists:nthtail(length(Prefix), filename:basename(S))],
                   lists:all(fun(Ch) -> Ch >= $0 andalso Ch =< $9 end, N),
                   in_iters(list_to_integer(N))]).

benchmarks(File) ->
    {ok, Doc} = beamlab_result:load(File),
    maps:get(benchmarks, Doc).

%% A compare run's fresh VMs' values (the first VMS of them): their means
%% (the samples), or with LEVEL=fastest each VM's fastest sample
%% (`extra.vm_fastest', kept by matrices since #35's fastest-sample rule;
%% a document of that rule holds its means in `extra.vm_means').
values(File) ->
    B = hd(benchmarks(File)),
    X = maps:get(extra, B, #{}),
    S = case os:getenv("LEVEL", "mean") of
            "fastest" -> extra(X, vm_fastest, maps:get(samples, B));
            "mean" -> extra(X, vm_means, maps:get(samples, B))
        end,
    case os:getenv("VMS") of
        false -> S;
        K -> lists:sublist(S, list_to_integer(K))
    end.

mean(L) -> lists:sum(L) / length(L).

extra(X, K, Default) ->
    maps:get(K, X, maps:get(atom_to_binary(K), X, Default)).

dedup(L) -> dedup(L, #{}).
dedup([], _) -> [];
dedup([X | T], Seen) when is_map_key(X, Seen) -> dedup(T, Seen);
dedup([X | T], Seen) -> [X | dedup(T, Seen#{X => true})].
