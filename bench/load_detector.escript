#!/usr/bin/env escript
%%! -pa _build/default/lib/beamlab/ebin
%%% The figures of bench/load_detector.sh from the documents it kept:
%%%
%%%   bench/load_detector.escript DIR
%%%
%%% Per command (run1, run2, mat1, mat2) and condition (none, one, half):
%%% rounds; the median rate (a run's mean, a matrix's mean of its fresh
%%% VMs' means); the median per-round ratio of the rate to the same
%%% round's `none' (rounds are interleaved, so a ratio compares runs
%%% measured a minute apart); the medians of the others' and own cores
%%% the detector measured (a run's `extra.competition'; every fresh VM's
%%% for a matrix) and, for the runs (-v), of the others' cores
%%% `machine_overloaded' computes from the telemetry; and how many runs
%%% (fresh VMs for a matrix) each rule calls loaded: `load_high' as the
%%% document says, `machine_overloaded' as the document says, and the
%%% rule of beamlab_runtime_probe:contended/2 on the same figures.
%%% Prints figures; asserts nothing.
-mode(compile).

main([Dir]) ->
    Docs = [{Cmd, Cond, Round, Doc}
            || F <- filelib:wildcard(filename:join(Dir, "*.json")),
               [Cmd, Cond, Round] <- [string:split(filename:basename(F, ".json"), "-", all)],
               {ok, Bin} <- [file:read_file(F)],
               {ok, Doc} <- [beamlab_json:decode(Bin)]],
    io:format("~-5s ~-5s ~6s ~12s ~8s ~8s ~8s ~8s ~10s ~12s ~10s~n",
              ["cmd", "cond", "rounds", "rate (med)", "ratio", "others", "own", "others-v",
               "load_high", "overloaded", "contended"]),
    [row(Cmd, Cond, [D || {C1, C2, _, _} = D <- Docs, C1 =:= Cmd, C2 =:= Cond], Docs)
     || Cmd <- ["run1", "run2", "mat1", "mat2"], Cond <- ["none", "one", "half"]],
    %% Candidate rules on the same figures: others >= M x CPUs while
    %% others + own >= B x CPUs (or others alone >= half the CPUs).
    Grid = [{M, B} || M <- [0.1, 0.15, 0.2, 0.25], B <- [0.75, 0.8, 0.9]],
    io:format("~ncandidates (others >= M x CPUs and others + own >= B x CPUs, or others >= 0.5 x CPUs): "
              "runs / fresh VMs called loaded~n~-5s ~-5s ~ts~n",
              ["cmd", "cond", [io_lib:format(" M~.2f/B~.2f", [M, B]) || {M, B} <- Grid]]),
    [candidates(Cmd, Cond, [D || {C1, C2, _, D} <- Docs, C1 =:= Cmd, C2 =:= Cond], Grid)
     || Cmd <- ["run1", "run2", "mat1", "mat2"], Cond <- ["none", "one", "half"]],
    ok;
main(_) ->
    io:format(standard_error, "usage: bench/load_detector.escript DIR~n", []),
    halt(2).

row(_Cmd, _Cond, [], _Docs) ->
    ok;
row(Cmd, Cond, Rows, Docs) ->
    Rates = [{R, rate(D)} || {_, _, R, D} <- Rows],
    Ratios = [V / N || {R, V} <- Rates, {C1, C2, R2, D} <- Docs, C1 =:= Cmd, C2 =:= "none", R2 =:= R,
                       N <- [rate(D)], is_number(V), is_number(N), N > 0],
    Comps = lists:append([comps(D) || {_, _, _, D} <- Rows]),
    Others = [O || #{<<"others_cores">> := O} <- Comps],
    Own = [O || #{<<"own_cores">> := O} <- Comps],
    Tel = [T || {_, _, _, D} <- Rows, T <- [telemetry_others(D)], is_number(T)],
    Fired = fun(Id) -> length([ok || {_, _, _, D} <- Rows, F <- maps:get(<<"findings">>, D, []),
                                     maps:get(<<"id">>, F) =:= Id]) end,
    Units = case Cmd of "mat" ++ _ -> "VMs"; _ -> "runs" end,
    New = length([ok || #{<<"others_cores">> := O, <<"own_cores">> := W, <<"cores">> := C} <- Comps,
                        beamlab_runtime_probe:contended(#{others_cores => O, own_cores => W}, C)]),
    io:format("~-5s ~-5s ~6b ~12s ~8s ~8s ~8s ~8s ~10s ~12s ~10s~n",
              [Cmd, Cond, length(Rows), num(median([V || {_, V} <- Rates, is_number(V)])),
               num(median(Ratios)), num(median(Others)), num(median(Own)), num(median(Tel)),
               io_lib:format("~b/~b", [Fired(<<"load_high">>), length(Rows)]),
               io_lib:format("~b/~b", [Fired(<<"machine_overloaded">>), length(Rows)]),
               io_lib:format("~b/~b ~s", [New, length(Comps), Units])]).

candidates(_Cmd, _Cond, [], _Grid) ->
    ok;
candidates(Cmd, Cond, Docs, Grid) ->
    Comps = lists:append([comps(D) || D <- Docs]),
    io:format("~-5s ~-5s ~ts~n",
              [Cmd, Cond,
               [io_lib:format(" ~11s", [io_lib:format("~b/~b", [length([ok || #{<<"others_cores">> := O, <<"own_cores">> := W,
                                                                                  <<"cores">> := C} <- Comps,
                                                                              O >= 0.5 * C orelse
                                                                                  (O >= M * C andalso O + W >= B * C)]),
                                                                  length(Comps)])])
                || {M, B} <- Grid]]).

%% A run's rate: its benchmark's mean; a matrix's: the mean of its fresh
%% VMs' means (its one benchmark's samples).
rate(#{<<"kind">> := <<"matrix">>, <<"benchmarks">> := [#{<<"samples">> := [_ | _] = S} | _]}) ->
    lists:sum(S) / length(S);
rate(#{<<"benchmarks">> := [#{<<"stats">> := #{<<"mean">> := M}} | _]}) ->
    M;
rate(_) ->
    undefined.

comps(#{<<"kind">> := <<"matrix">>, <<"extra">> := #{<<"competition">> := Cs}}) -> Cs;
comps(#{<<"extra">> := #{<<"competition">> := C}}) when is_map(C) -> [C];
comps(_) -> [].

%% machine_overloaded's others (beamlab_env_detect): the machine's mean
%% busy share of the CPUs less this VM's mean OS CPU, over the telemetry.
telemetry_others(#{<<"telemetry">> := #{<<"machine_cpu_pct">> := [_ | _] = M, <<"os_cpu_cores">> := [_ | _] = O},
                   <<"env">> := Env}) when length(M) =:= length(O) ->
    Cpus = case Env of
               #{<<"cpu">> := #{<<"logical_processors_online">> := N}} when is_integer(N) -> N;
               _ -> erlang:system_info(logical_processors_online)
           end,
    Ns = fun(L) -> [X || X <- L, is_number(X)] end,
    case {Ns(M), Ns(O)} of
        {[_ | _] = M1, [_ | _] = O1} -> max(0.0, mean(M1) * Cpus / 100 - mean(O1));
        _ -> undefined
    end;
telemetry_others(_) ->
    undefined.

mean(L) -> lists:sum(L) / length(L).

median([]) -> undefined;
median(L) ->
    S = lists:sort(L),
    N = length(S),
    case N rem 2 of
        1 -> lists:nth(N div 2 + 1, S);
        0 -> (lists:nth(N div 2, S) + lists:nth(N div 2 + 1, S)) / 2
    end.

num(undefined) -> "-";
num(X) when abs(X) >= 1000 -> io_lib:format("~.4g", [float(X)]);
num(X) -> io_lib:format("~.3f", [float(X)]).
