#!/usr/bin/env escript
%%! -pa _build/default/lib/beamlab/ebin
%%% Variance components of the A/A runs that bench/aa.sh kept (KEEP=DIR),
%%% the figures behind the between-run rule of docs/statistics.md
%%% ("Verdicts between runs"). Usage, from the repository root after
%%% `make' (or `rebar3 compile'):
%%%
%%%   bench/aa_components.escript KEEP_DIR [MORE_KEEP_DIRS...]
%%%
%%% Everything is on the log scale (a value's log; 100 x an sd of logs is
%%% about a relative sd in percent), the scale the verdicts work on:
%%%
%%% compare  the A/A chain of `matrix -n 3' runs (a of iteration I, then
%%%          b-0 of every iteration: b-0 of I is a of I+1): one-way
%%%          analysis of variance of the fresh VMs' means, within a run
%%%          (VM to VM) and between runs (run to run, beyond what the
%%%          VMs' spread explains); the planted pairs' measured shifts.
%%% matrix   two identical configurations interleaved in one matrix
%%%          (A1 B1 A2 B2 A3 B3): the VM-to-VM spread, the round effect
%%%          (what rounds share) and the configurations' A/A difference.
%%% history  single runs (samples within each run): the spread of the
%%%          samples within a run, of the runs' means between runs, and
%%%          the A/A change of the 10th run against the 9 before it in
%%%          units of its standard error (the t of compare_to_runs/3).
%%%
%%% METRIC=cpu (environment) reads the cells of `METRIC=cpu bench/aa.sh'
%%% (SCENARIO-cpu-Z: CPU time per iteration, where the planted work is
%%% +5%/+20% of the value, not of the rate).
%%%
%%% Prints figures; asserts nothing.
-mode(compile).

main([_ | _] = Dirs) ->
    compare(Dirs),
    matrix(Dirs),
    history(Dirs);
main(_) ->
    io:format(standard_error, "usage: bench/aa_components.escript KEEP_DIR [MORE...]~n", []),
    halt(2).

%% ---- compare -------------------------------------------------------

%% The cells' tag: "" for time, "-cpu" with METRIC=cpu.
tag() ->
    case os:getenv("METRIC") of
        "cpu" -> "-cpu";
        _ -> ""
    end.

%% The change a planted slowdown D makes: a rate falls to 1/(1+D), a CPU
%% time per iteration grows by D.
planted(D) ->
    case tag() of
        "-cpu" -> D;
        _ -> 1 / (1 + D) - 1
    end.

compare(Dirs) ->
    Iters = lists:append([iterations(D, "compare" ++ tag() ++ "-0-") || D <- Dirs]),
    %% The chain of A/A runs, each once (b-0 of I is a of I+1).
    Docs = dedup([F || {_, Dir} <- Iters, F <- [filename:join(Dir, "a.json"),
                                                  filename:join(Dir, "b-0.json")]]),
    Runs = [Ys || F <- Docs, Ys <- [logs(hd(benchmarks(F)))], length(Ys) >= 2],
    io:format("== compare: ~b A/A runs (fresh-VM means per run: ~w)~n",
              [length(Runs), lists:usort([length(R) || R <- Runs])]),
    length(Runs) >= 2 andalso compare_runs(Dirs, Runs).

compare_runs(Dirs, Runs) ->
    {_, S2b} = components("VM to VM (within a run)", "run to run (between runs)", Runs),
    io:format("   => this machine's `compare --run-noise': ~.1f (beamlab's default: ~.1f)~n",
              [100 * math:sqrt(S2b), 100 * beamlab_result_compare:run_noise()]),
    Means = [mean(R) || R <- Runs],
    io:format("   lag-1 autocorrelation of the run means: ~.2f (drift when well above 0)~n",
              [autocorr(Means)]),
    Diffs = [mean(B) - mean(A) || {A, B} <- pairs_of(Dirs, "0")],
    io:format("   A/A pairs: ~b; sd of the log difference of their means: ~.2f%~n",
              [length(Diffs), 100 * sd(Diffs)]),
    [begin
         Ps = pairs_of(Dirs, Z),
         Ds = [mean(B) - mean(A) || {A, B} <- Ps],
         case Ds of
             [] -> ok;
             _ ->
                 io:format("   +~s% pairs: ~b; measured change of the means ~.2f% (planted ~.2f%), sd ~.2f%~n",
                           [Z, length(Ds), 100 * (math:exp(mean(Ds)) - 1),
                            100 * planted(list_to_integer(Z) / 100), 100 * sd(Ds)])
         end
     end || Z <- ["5", "20"]],
    ok.

pairs_of(Dirs, Z) ->
    [{logs(hd(benchmarks(filename:join(Dir, "a.json")))),
      logs(hd(benchmarks(filename:join(Dir, "b-" ++ Z ++ ".json"))))}
     || {_, Dir} <- lists:append([iterations(D, "compare" ++ tag() ++ "-" ++ Z ++ "-") || D <- Dirs])].

%% ---- matrix --------------------------------------------------------

matrix(Dirs) ->
    Files = lists:sort([F || D <- Dirs, F <- filelib:wildcard(filename:join([D, "runs", "matrix" ++ tag() ++ "-0-*.json"]))]),
    Docs = [{logs(A), logs(B)} || F <- Files, [A, B | _] <- [benchmarks(F)],
                                   length(logs(A)) =:= length(logs(B)), length(logs(A)) >= 2],
    io:format("== matrix: ~b documents of two identical configurations~n", [length(Docs)]),
    case Docs of
        [] -> ok;
        _ ->
            %% Two-way (round x configuration) per document: residual
            %% (VM to VM, with the round and the configuration removed)
            %% and round effect.
            Res = lists:append([residuals(A, B) || {A, B} <- Docs]),
            DfRes = lists:sum([length(A) - 1 || {A, _} <- Docs]),
            S2e = lists:sum([X * X || X <- Res]) / DfRes,
            RoundMeans = [[(X + Y) / 2 || {X, Y} <- lists:zip(A, B)] || {A, B} <- Docs],
            S2rm = pooled(RoundMeans),
            S2round = max(0.0, S2rm - S2e / 2),
            io:format("   VM to VM (residual): sd ~.2f%; round effect (shared by a round's two VMs): sd ~.2f%~n",
                      [100 * math:sqrt(S2e), 100 * math:sqrt(S2round)]),
            components("VM to VM within a configuration (round effect included)",
                       "matrix to matrix", [A || {A, _} <- Docs] ++ [B || {_, B} <- Docs]),
            D = [mean(B) - mean(A) || {A, B} <- Docs],
            Paired = [[Y - X || {X, Y} <- lists:zip(A, B)] || {A, B} <- Docs],
            Pos = [lists:nth(K, P) || P <- Paired, K <- [1]],
            io:format("   A/A difference of the configurations' means: mean ~.2f%, sd ~.2f% "
                      "(VM noise alone: ~.2f%)~n",
                      [100 * mean(D), 100 * sd(D), 100 * math:sqrt(2 * S2e / length(element(1, hd(Docs))))]),
            io:format("   per-round difference (second minus first configuration): mean ~.2f%, sd ~.2f%; "
                      "round 1 only: mean ~.2f%~n",
                      [100 * mean(lists:append(Paired)), 100 * sd(lists:append(Paired)), 100 * mean(Pos)])
    end.

residuals(A, B) ->
    MA = mean(A), MB = mean(B), M = (MA + MB) / 2,
    lists:append([[X - R - MA + M, Y - R - MB + M]
                  || {X, Y} <- lists:zip(A, B), R <- [(X + Y) / 2]]).

%% ---- history -------------------------------------------------------

history(Dirs) ->
    Windows = lists:append([[lists:sort(filelib:wildcard(filename:join(Dir, "*.json")))
                             || {_, Dir} <- iterations(D, "history" ++ tag() ++ "-0-")] || D <- Dirs]),
    Windows1 = [W || W <- Windows, length(W) >= 4],
    %% (the windows of one directory have one length: aa.sh's HISTORY)
    io:format("== history: ~b A/A windows~n", [length(Windows1)]),
    case Windows1 of
        [] -> ok;
        _ ->
            Distinct = dedup_by_name(lists:append(Windows1)),
            Runs = [logs(hd(benchmarks(F))) || F <- Distinct],
            io:format("   ~b distinct runs of ~w samples~n",
                      [length(Runs), lists:usort([length(R) || R <- Runs])]),
            components("sample to sample (within a run)", "run to run (between runs)", Runs),
            Ts = [window_t(W) || W <- Windows1],
            Changes = lists:sort([100 * (math:exp(D) - 1) || {D, _, _} <- Ts]),
            io:format("   A/A change of the last run against the mean of the ones before (%): "
                      "p5 ~.1f, p25 ~.1f, median ~.1f, p75 ~.1f, p95 ~.1f; sd of the earlier "
                      "runs' means: median ~.2f%~n",
                      [pct(Changes, 5), pct(Changes, 25), pct(Changes, 50), pct(Changes, 75), pct(Changes, 95),
                       100 * median([S || {_, S, _} <- Ts])]),
            [begin
                 Df = length(hd(Windows1)) - 2,
                 Q = beamlab_stats:t_quantile(1 - (1 - C) / 2, Df),
                 N = length([T || {_, _, T} <- Ts, abs(T) > Q]),
                 io:format("   |t| beyond the ~s% quantile (df ~b, ~.2f): ~b of ~b (~.1f%)~n",
                           [float_to_list(100 * C, [{decimals, 1}, compact]), Df, Q, N, length(Ts),
                            100 * N / length(Ts)])
             end || C <- [0.95, 0.99, 0.999]],
             ok
    end.

window_t(Files) ->
    Ms = [mean(logs(hd(benchmarks(F)))) || F <- Files],
    {Earlier, [Last]} = lists:split(length(Ms) - 1, Ms),
    D = Last - mean(Earlier),
    S = sd(Earlier),
    {D, S, D / (S * math:sqrt(1 + 1 / length(Earlier)))}.

%% ---- helpers -------------------------------------------------------

%% One-way analysis of variance (method of moments; unbalanced groups
%% through n0).
components(WithinName, BetweenName, Groups) ->
    N = lists:sum([length(G) || G <- Groups]),
    R = length(Groups),
    Msw = pooled(Groups),
    GM = lists:sum(lists:append(Groups)) / N,
    Msb = lists:sum([length(G) * math:pow(mean(G) - GM, 2) || G <- Groups]) / (R - 1),
    N0 = (N - lists:sum([length(G) * length(G) || G <- Groups]) / N) / (R - 1),
    S2b = max(0.0, (Msb - Msw) / N0),
    io:format("   ~s: sd ~.2f%; ~s: sd ~.2f% (share of a value's variance: ~b%)~n",
              [WithinName, 100 * math:sqrt(Msw), BetweenName, 100 * math:sqrt(S2b),
               round(100 * S2b / (S2b + Msw))]),
    io:format("   a run's mean of ~.1f values: sd ~.2f%, of which between runs ~b%~n",
              [N / R, 100 * math:sqrt(S2b + Msw / (N / R)), round(100 * S2b / (S2b + Msw / (N / R)))]),
    {Msw, S2b}.

pooled(Groups) ->
    Ss = lists:sum([lists:sum([math:pow(X - mean(G), 2) || X <- G]) || G <- Groups]),
    Ss / lists:sum([length(G) - 1 || G <- Groups]).

iterations(Dir, Prefix) ->
    Subs = filelib:wildcard(filename:join([Dir, "runs", Prefix ++ "*"])),
    lists:sort([{list_to_integer(lists:nthtail(length(Prefix), filename:basename(S))), S}
                || S <- Subs, filelib:is_dir(S)]).

benchmarks(File) ->
    {ok, Doc} = beamlab_result:load(File),
    maps:get(benchmarks, Doc).

logs(#{samples := S}) -> [math:log(X) || X <- S, X > 0].

%% The same document kept twice (a chain's run): once, by its start.
dedup(Files) ->
    {_, Out} = lists:foldl(fun(F, {Seen, Acc}) ->
                                   case filelib:is_regular(F) of
                                       false -> {Seen, Acc};
                                       true ->
                                           {ok, #{started_at := S}} = beamlab_result:load(F),
                                           case Seen of
                                               #{S := _} -> {Seen, Acc};
                                               _ -> {Seen#{S => true}, [F | Acc]}
                                           end
                                   end
                           end, {#{}, []}, Files),
    lists:reverse(Out).

dedup_by_name(Files) ->
    maps:values(maps:from_list([{filename:basename(F), F} || F <- Files])).

mean(L) -> lists:sum(L) / length(L).
sd(L) when length(L) < 2 -> 0.0;
sd(L) -> M = mean(L), math:sqrt(lists:sum([(X - M) * (X - M) || X <- L]) / (length(L) - 1)).
median(L) -> pct(lists:sort(L), 50).
pct(Sorted, P) -> beamlab_stats:percentile(Sorted, P).

autocorr(Xs) when length(Xs) < 3 -> 0.0;
autocorr(Xs) ->
    M = mean(Xs),
    Num = lists:sum([(A - M) * (B - M) || {A, B} <- lists:zip(lists:droplast(Xs), tl(Xs))]),
    Den = lists:sum([(X - M) * (X - M) || X <- Xs]),
    case Den == 0.0 of true -> 0.0; false -> Num / Den end.
