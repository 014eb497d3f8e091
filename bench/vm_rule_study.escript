#!/usr/bin/env escript
%%! -pa _build/default/lib/beamlab/ebin
%%% Candidate rules for comparing two runs of fresh VMs by CPU time per
%%% iteration when a VM can be slowed as a whole (#35, docs/statistics.md
%%% "Rules against a VM slowed as a whole"). Usage, from the repository
%%% root after `make':
%%%
%%%   bench/vm_rule_study.escript [TRIALS]     (default 2000, seeded)
%%%
%%% The simulation is the calibration of beamlab_stats_tests:
%%% cpu_fastest_vm_test_ at n = 3, 5 and 10 VMs a run: each VM 5 samples
%%% (0.5% apart), its fastest the VM's value; VMs 2% apart, runs 1.5%;
%%% 3 samples in 10 up to +40%; `base': 3 VMs in 100 slowed 1.2-2.0x as a
%%% whole (every sample), `harsh': 1 VM in 10 slowed 1.2-2.5x. Every rule
%%% judges the same simulated pairs; "whole" is the +20% pairs in which at
%%% least one VM (either run) was slowed as a whole.
%%%
%%% Rules (95%, a run-to-run term of 2.5% on each side where named):
%%%   welch        beamlab's rule before this study: beamlab_stats:compare/3 (Welch on the
%%%                logs, the term, the df of the sample)
%%%   yuen         Yuen's trimmed Welch on the logs: trim g = floor(0.2 n)
%%%                VMs at each end of each run (n = 3: none, i.e. welch),
%%%                winsorised variances, df of the h - 1 kept, the term
%%%   reject       beamlab_stats:compare/3 with `robust' (beamlab's rule since
%%%                this study): per run, without looking at the other, drop the VMs
%%%                whose log is more than 3.5 x max(1.4826 MAD, 1%) from
%%%                the run's median, only while 3 or more stay; then welch
%%%   hl           Hodges-Lehmann shift of the logs, the exact
%%%                Mann-Whitney interval, each half-width combined in
%%%                quadrature with z * sqrt(2) * term; verdict: that
%%%                interval excludes 0; n = 3 (no exact 95% interval): welch
%%%   hl_noterm    hl without the term (what a rank rule alone gives)
%%% REJECT_K=K sets reject's cut (default 3.5). Prints figures; asserts
%%% nothing.
-mode(compile).

-define(TERM, 0.025).
-define(CONF, 0.95).

main(Args) ->
    Trials = case Args of
                 [T] -> list_to_integer(T);
                 [] -> 2000
             end,
    Rules = [welch, yuen, reject, hl, hl_noterm],
    io:format("~b pairs a cell, seeded; false = A/A called faster or slower; "
              "+5%/+20% = called slower;~nwhole = +20% pairs with a VM slowed as a whole "
              "(their count in brackets)~n~n", [Trials]),
    io:format("| simulation | n | rule | A/A false | +5% caught | +20% caught | +20% whole |~n"
              "|---|---|---|---|---|---|---|~n"),
    [cell(Sim, N, Rules, Trials) || Sim <- [base, harsh], N <- [3, 5, 10]],
    ok.

cell(Sim, N, Rules, Trials) ->
    rand:seed(exsss, {35, N, erlang:phash2(Sim)}),
    Judge = fun(Shift) ->
                    [begin
                         {A, WA} = run(Sim, N, 0.0),
                         {B, WB} = run(Sim, N, Shift),
                         {WA orelse WB, [verdict(R, A, B) || R <- Rules]}
                     end || _ <- lists:seq(1, Trials)]
            end,
    AA = Judge(0.0),
    P5 = Judge(math:log(1.05)),
    P20 = Judge(math:log(1.2)),
    Whole = [Vs || {true, Vs} <- P20],
    lists:foreach(
      fun({I, R}) ->
              Rate = fun(L, Want) -> pct(length([x || Vs <- L, lists:member(lists:nth(I, Vs), Want)]), length(L)) end,
              Vs = fun(L) -> [V || {_, V} <- L] end,
              io:format("| ~s | ~b | ~s | ~s | ~s | ~s | ~s (~b) |~n",
                        [Sim, N, R, Rate(Vs(AA), [faster, slower]), Rate(Vs(P5), [slower]),
                         Rate(Vs(P20), [slower]), Rate(Whole, [slower]), length(Whole)])
      end, lists:zip(lists:seq(1, length(Rules)), Rules)).

pct(_, 0) -> "-";
pct(K, T) -> io_lib:format("~.1f%", [100 * K / T]).

%% One run: N VMs' fastest samples; true when a VM was slowed as a whole.
run(Sim, N, Shift) ->
    Level = Shift + 0.015 * rand:normal(),
    Vms = [vm(Sim, Level) || _ <- lists:seq(1, N)],
    {[V || {V, _} <- Vms], lists:any(fun({_, W}) -> W end, Vms)}.

vm(Sim, Level) ->
    {P, Span} = case Sim of
                    base -> {0.03, 0.8};
                    harsh -> {0.1, 1.3}
                end,
    {Whole, W} = case rand:uniform() < P of
                     true -> {math:log(1.2 + Span * rand:uniform()), true};
                     false -> {0.0, false}
                 end,
    V = Level + 0.02 * rand:normal() + Whole,
    S = [3500 * math:exp(V + 0.005 * rand:normal()
                         + case rand:uniform() < 0.3 of
                               true -> math:log(1 + 0.4 * rand:uniform());
                               false -> 0.0
                           end) || _ <- lists:seq(1, 5)],
    {lists:min(S), W}.

opts() -> #{confidence => ?CONF, run_noise => ?TERM, better => lower}.

verdict(welch, A, B) ->
    maps:get(verdict, beamlab_stats:compare(A, B, opts()));
verdict(reject, A, B) ->
    maps:get(verdict, beamlab_stats:compare(reject(A), reject(B), opts()));
verdict(yuen, A, B) ->
    yuen(logs(A), logs(B));
verdict(hl, A, B) when length(A) < 4; length(B) < 4 ->
    verdict(welch, A, B);
verdict(hl, A, B) ->
    hl(logs(A), logs(B), ?TERM);
verdict(hl_noterm, A, B) when length(A) < 4; length(B) < 4 ->
    maps:get(verdict, beamlab_stats:compare(A, B, #{confidence => ?CONF, better => lower}));
verdict(hl_noterm, A, B) ->
    hl(logs(A), logs(B), 0.0).

logs(L) -> [math:log(X) || X <- L].

from_diff(D) when D > 0 -> slower;
from_diff(D) when D < 0 -> faster.

%% Median/MAD rejection within one run, beamlab_stats:robust_values/2 (both
%% sides: a rule that does not know which way the load pushes).
reject(Xs) ->
    beamlab_stats:robust_values(Xs, reject_k()).

%% REJECT_K (default 3.5): the sensitivity of the rule to its cut.
reject_k() ->
    case os:getenv("REJECT_K") of
        false -> 3.5;
        K -> element(1, string:to_float(K ++ ".0"))
    end.

%% Yuen's trimmed-mean Welch, with the known term and the df of the sample.
yuen(A, B) ->
    {MA, DA, HA} = trimmed(A),
    {MB, DB, HB} = trimmed(B),
    Se = math:sqrt(DA + DB + 2 * ?TERM * ?TERM),
    Df = case DA + DB == 0.0 of
             true -> 1.0e10;
             false -> (DA + DB) * (DA + DB) / (DA * DA / (HA - 1) + DB * DB / (HB - 1))
         end,
    H = beamlab_stats:t_quantile((1 + ?CONF) / 2, Df) * Se,
    D = MB - MA,
    case abs(D) > H of
        true -> from_diff(D);
        false -> no_difference
    end.

trimmed(Ys) ->
    N = length(Ys),
    G = trunc(0.2 * N),
    S = lists:sort(Ys),
    H = N - 2 * G,
    Mid = lists:sublist(S, G + 1, H),
    Win = lists:duplicate(G, lists:nth(G + 1, S)) ++ Mid ++ lists:duplicate(G, lists:nth(N - G, S)),
    {beamlab_stats:mean(Mid), (N - 1) * beamlab_stats:variance(Win) / (H * (H - 1)), H}.

%% Hodges-Lehmann with the exact Mann-Whitney interval [D(k), D(mn+1-k)].
hl(A, B, Term) ->
    Ds = lists:sort([Y - X || X <- A, Y <- B]),
    M = length(A),
    N = length(B),
    K = mw_k(M, N, (1 - ?CONF) / 2),
    Est = beamlab_stats:median(Ds),
    Lo = lists:nth(K, Ds),
    Hi = lists:nth(M * N + 1 - K, Ds),
    R = beamlab_stats:normal_quantile((1 + ?CONF) / 2) * math:sqrt(2) * Term,
    Lo2 = Est - math:sqrt((Est - Lo) * (Est - Lo) + R * R),
    Hi2 = Est + math:sqrt((Hi - Est) * (Hi - Est) + R * R),
    if Lo2 > 0 -> slower;
       Hi2 < 0 -> faster;
       true -> no_difference
    end.

%% The largest k with P(U =< k - 1) =< Tail under the exact null of U.
mw_k(M, N, Tail) ->
    Counts = u_counts(M, N),
    Total = lists:sum(Counts),
    k(Counts, 0, 0, Total, Tail).

k([C | T], U, Cum, Total, Tail) ->
    case (Cum + C) / Total =< Tail of
        true -> k(T, U + 1, Cum + C, Total, Tail);
        false -> U
    end.

%% The number of arrangements of M and N values giving U = 0..M*N: the
%% largest value is one of the N (it beats the M: U - M) or one of the M.
u_counts(M, N) ->
    lists:nth(N + 1, lists:foldl(fun(I, Prev) -> row(I, Prev) end,
                                 [[1] || _ <- lists:seq(0, N)], lists:seq(1, M))).

%% Row I (J = 0..N) from row I - 1.
row(I, Prev) ->
    lists:reverse(lists:foldl(fun({0, _}, Acc) -> [[1] | Acc];
                                 ({_J, Up}, [Left | _] = Acc) ->
                                      [add(Up, lists:duplicate(I, 0) ++ Left) | Acc]
                              end, [], lists:zip(lists:seq(0, length(Prev) - 1), Prev))).

add([], B) -> B;
add(A, []) -> A;
add([X | A], [Y | B]) -> [X + Y | add(A, B)].
