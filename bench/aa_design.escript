#!/usr/bin/env escript
%%! -pa _build/default/lib/beamlab/ebin
%%% The candidates of the between-run rule (docs/statistics.md, "The
%%% between-run rule"), judged on the documents bench/aa.sh kept
%%% (KEEP=DIR), on the odd iterations (design), the even ones
%%% (validation) and all. Usage, from the repository root after `make':
%%%
%%%   bench/aa_design.escript KEEP_DIR
%%%
%%% compare  each kept pair (a.json, b-Z.json: Z = 0 is A/A, 5 and 20 the
%%%          planted slowdowns) by beamlab_stats:compare/3 on the fresh
%%%          VMs' means: Welch on the logs at 95% and 99% with a
%%%          run-to-run term (`run_noise') of 0-3%, a minimum change
%%%          (`min_change') of 3-8%, and a z test with a fixed sd of the
%%%          A/A difference (4-6%);
%%% matrix   the kept A/A matrices at 99%, the second configuration's VM
%%%          means slowed by 1.05 and 1.20 (the harness cannot plant a
%%%          matrix), consecutive matrices joined to emulate -n 6, 9, 12.
%%%
%%% A row: false verdicts of the A/A pairs, then the share of +5% and +20%
%%% caught. Prints figures; asserts nothing.
-mode(compile).

main([Dir]) ->
    compare(Dir),
    matrix(Dir);
main(_) ->
    io:format(standard_error, "usage: bench/aa_design.escript KEEP_DIR~n", []),
    halt(2).

compare(Dir) ->
    Pairs = [{I, Z, values(Base), values(New)}
             || Z <- [0, 5, 20], {I, Sub} <- iterations(Dir, "compare-" ++ integer_to_list(Z) ++ "-"),
                Base <- [filename:join(Sub, "a.json")],
                New <- [filename:join(Sub, "b-" ++ integer_to_list(Z) ++ ".json")]],
    io:format("== compare: ~b pairs~n~-34s | odd: false  +5% +20% | even: false +5% +20% | all: false  +5% +20%~n",
              [length(Pairs), "rule"]),
    Rules = [{welch, C, Noise, 0.0} || C <- [0.95, 0.975, 0.99], Noise <- [0.0, 0.01, 0.015, 0.02, 0.025, 0.03]]
        ++ [{welch, C, 0.0, T} || C <- [0.95, 0.99], T <- [0.03, 0.05, 0.08]]
        ++ [{fixed_sd, C, S, 0.0} || C <- [0.95, 0.99], S <- [0.04, 0.05, 0.056, 0.06]],
    [io:format("~-34s | ~s~n", [io_lib:format("~w", [Rule]),
                                 lists:join(" | ", [row([{Z, verdict(Rule, A, B)} || {I, Z, A, B} <- Pairs, Keep(I)])
                                                    || Keep <- halves()])])
     || Rule <- Rules],
    ok.

%% Throughput (iterations per sample): higher is better.
verdict({welch, C, Noise, T}, A, B) ->
    maps:get(verdict, beamlab_stats:compare(A, B, #{better => higher, confidence => C,
                                                    run_noise => Noise, min_change => T}));
verdict({fixed_sd, C, S, _}, A, B) ->
    D = mean([math:log(X) || X <- B]) - mean([math:log(X) || X <- A]),
    case abs(D) > beamlab_stats:normal_quantile((1 + C) / 2) * S of
        true when D < 0 -> slower;
        true -> faster;
        false -> no_difference
    end.

matrix(Dir) ->
    Docs = [Vs || {_, F} <- lists:sort([{list_to_integer(filename:basename(F, ".json") -- "matrix-0-"), F}
                                        || F <- filelib:wildcard(filename:join([Dir, "runs", "matrix-0-*.json"]))]),
                  [_, _] = Vs <- [[S || #{samples := S} <- benchmarks(F)]]],
    io:format("== matrix: ~b documents, 99%, planted by slowing the second configuration~n", [length(Docs)]),
    [begin
         Groups = chunks(Docs, K),
         R = [{Z, maps:get(verdict, beamlab_stats:compare(
                                      lists:append([A || [A, _] <- G]),
                                      [Y / (1 + Z / 100) || [_, B] <- G, Y <- B],
                                      #{better => higher, confidence => 0.99}))}
              || G <- Groups, Z <- [0, 5, 20]],
         io:format("-n ~2b (~b matrices): ~s~n", [3 * K, length(Groups), row(R)])
     end || K <- [1, 2, 3, 4], length(Docs) >= K].

row(L) ->
    N = fun(Z) -> max(1, length([x || {Y, _} <- L, Y =:= Z])) end,
    F = length([x || {0, V} <- L, V =:= faster orelse V =:= slower]),
    C = fun(Z) -> round(100 * length([x || {Y, slower} <- L, Y =:= Z]) / N(Z)) end,
    io_lib:format("~2b/~2b ~3b% ~3b%", [F, length([x || {0, _} <- L]), C(5), C(20)]).

halves() -> [fun(I) -> I rem 2 =:= 1 end, fun(I) -> I rem 2 =:= 0 end, fun(_) -> true end].

chunks(L, K) when length(L) >= K -> {H, T} = lists:split(K, L), [H | chunks(T, K)];
chunks(_, _) -> [].

iterations(Dir, Prefix) ->
    lists:sort([{list_to_integer(lists:nthtail(length(Prefix), filename:basename(S))), S}
                || S <- filelib:wildcard(filename:join([Dir, "runs", Prefix ++ "*"])), filelib:is_dir(S)]).

benchmarks(File) ->
    {ok, Doc} = beamlab_result:load(File),
    maps:get(benchmarks, Doc).

values(File) -> maps:get(samples, hd(benchmarks(File))).

mean(L) -> lists:sum(L) / length(L).
