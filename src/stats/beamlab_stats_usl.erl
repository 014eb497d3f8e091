%%% @doc Fits Gunther's Universal Scalability Law to throughput measured at
%%% several concurrency levels (workers, schedulers):
%%%
%%% ```
%%% X(N) = lambda * N / (1 + sigma * (N - 1) + kappa * N * (N - 1))
%%% '''
%%%
%%% `lambda' is the throughput of one worker without interference, `sigma'
%%% the contention (the serial fraction: queueing on a shared resource,
%%% Amdahl's law when `kappa' is 0) and `kappa' the coherency cost (pairwise
%%% exchange of data between workers, which makes throughput fall beyond a
%%% peak at `N* = sqrt((1 - sigma) / kappa)').
%%%
%%% Least squares over every (N, X) point given, repetitions included:
%%% for fixed `sigma' and `kappa' the best `lambda' has a closed form, so
%%% only the two coefficients are searched: from the better of a grid
%%% (sigma in [0, 1], kappa 0 or log-spaced in [1e-7, 1]) and Gunther's
%%% linear regression of N / X, refined by Nelder-Mead (sigma in [0, 1],
%%% kappa >= 0). With two distinct levels only, contention and coherency cannot
%%% be told apart: `kappa' is held at 0 (Amdahl) and the result says so.
%%% Pure; see docs/statistics.md.
-module(beamlab_stats_usl).

-export([fit/1, predict/2, format_error/1]).

-type point() :: {N :: number(), X :: number()}.
-type fit() :: #{lambda := float(), sigma := float(), kappa := float(),
                 model := usl | amdahl,
                 peak_n := float() | infinity, peak_x := float() | infinity,
                 r2 := float(), levels := pos_integer(), points := pos_integer()}.
-type error_reason() :: too_few_levels | no_throughput.
-export_type([point/0, fit/0, error_reason/0]).

%% Nelder-Mead: stop when the simplex's SSE spread is below this share of
%% the total sum of squares, or after this many iterations.
-define(TOL, 1.0e-14).
-define(MAX_ITER, 1000).

%% @doc The coefficients that fit `Points' best. Concurrency levels `N >=
%% 1'; throughput `X >= 0', not all zero.
-spec fit([point()]) -> {ok, fit()} | {error, error_reason()}.
fit(Points0) ->
    Points = [{float(N), float(X)} || {N, X} <- Points0, is_number(N), is_number(X), N >= 1, X >= 0],
    Levels = length(lists:usort([N || {N, _} <- Points])),
    case {Levels, lists:any(fun({_, X}) -> X > 0 end, Points)} of
        {L, _} when L < 2 -> {error, too_few_levels};
        {_, false} -> {error, no_throughput};
        {2, true} -> {ok, result(amdahl, best(Points, amdahl), Points, Levels)};
        {_, true} -> {ok, result(usl, best(Points, usl), Points, Levels)}
    end.

%% @doc The throughput the fitted law predicts at concurrency `N'.
-spec predict(fit() | #{lambda := number(), sigma := number(), kappa := number(), atom() => term()},
              number()) -> float().
predict(#{lambda := L, sigma := S, kappa := K}, N) ->
    L * shape(S, K, N).

%% @doc One line for each error of this module.
-spec format_error(error_reason()) -> iolist().
format_error(Reason) ->
    beamlab_format_reason:line(fun error_line/1, Reason).

error_line(too_few_levels) -> "a scalability fit needs throughput at two or more concurrency levels";
error_line(no_throughput) -> "a scalability fit needs a throughput above zero";
error_line(Other) ->
    %% (a reason of no kind above: printed, never raised)
    beamlab_format_reason:term(Other).

%% X(N) / lambda.
shape(S, K, N) ->
    N / (1 + S * (N - 1) + K * N * (N - 1)).

%% The best lambda for fixed sigma and kappa, and the sum of squared errors.
lambda_sse(Points, S, K) ->
    {Sxy, Sxx} = lists:foldl(fun({N, X}, {A, B}) -> F = shape(S, K, N), {A + X * F, B + F * F} end,
                             {0.0, 0.0}, Points),
    L = Sxy / Sxx,
    {L, lists:sum([math:pow(X - L * shape(S, K, N), 2) || {N, X} <- Points])}.

sse(Points, {S, K}) ->
    element(2, lambda_sse(Points, S, K)).

%% Two starts: the best point of a grid, and the linear least-squares fit
%% of N / X = (1 + sigma (N - 1) + kappa N (N - 1)) / lambda (Gunther's
%% regression, exact without noise but weighting the points otherwise);
%% then Nelder-Mead from the better one.
best(Points, Model) ->
    Kappas = case Model of
                 amdahl -> [0.0];
                 usl -> [0.0 | [math:pow(10, E / 4) || E <- lists:seq(-28, 0)]]
             end,
    Grid = [{S / 100, K} || S <- lists:seq(0, 100), K <- Kappas],
    Starts = Grid ++ linear(Points, Model),
    {Start, _} = lists:foldl(fun(C, {_, Best} = Acc) ->
                                     E = sse(Points, C),
                                     case E < Best of true -> {C, E}; false -> Acc end
                             end, {hd(Starts), sse(Points, hd(Starts))}, tl(Starts)),
    refine(Points, Model, Start).

linear(Points, Model) ->
    Rows = [{[1.0, N - 1 | case Model of usl -> [N * (N - 1)]; amdahl -> [] end], N / X}
            || {N, X} <- Points, X > 0],
    case solve(Rows) of
        {ok, [A, B | C]} when A > 0 ->
            K = case C of [C1] -> C1 / A; [] -> 0.0 end,
            [{clamp(B / A, 1.0), clamp(K, 1.0)}];
        _ -> []
    end.

%% Least squares through the normal equations (2 or 3 unknowns).
solve(Rows) ->
    Cols = length(element(1, hd(Rows))),
    M = [[lists:sum([lists:nth(I, R) * lists:nth(J, R) || {R, _} <- Rows]) || J <- lists:seq(1, Cols)]
         ++ [lists:sum([lists:nth(I, R) * Z || {R, Z} <- Rows])] || I <- lists:seq(1, Cols)],
    gauss(M).

gauss(M) ->
    try {ok, back(eliminate(M))}
    catch error:badarith -> singular
    end.

eliminate([]) -> [];
eliminate(Rows) ->
    [P | Rest] = lists:reverse(lists:sort(fun([A | _], [B | _]) -> abs(A) =< abs(B) end, Rows)),
    [P0 | _] = P,
    abs(P0) < 1.0e-300 andalso error(badarith),
    [P | eliminate([tl([X - hd(R) / P0 * Y || {X, Y} <- lists:zip(R, P)]) || R <- Rest])].

back([]) -> [];
back([[A | Row] | Rest]) ->
    Xs = back(Rest),
    {Coefs, [B]} = lists:split(length(Row) - 1, Row),
    [(B - lists:sum([C * X || {C, X} <- lists:zip(Coefs, Xs)])) / A | Xs].

%% Nelder-Mead on the square roots of the coefficients (they stay >= 0
%% and the surface stays smooth), sigma at most 1.
refine(Points, amdahl, {S0, _}) ->
    F = fun([X]) -> sse(Points, {coef(X), 0.0}) end,
    [X] = nelder_mead(F, start([math:sqrt(S0)]), tss(Points)),
    {coef(X), 0.0};
refine(Points, usl, {S0, K0}) ->
    F = fun([X, Y]) -> sse(Points, {coef(X), Y * Y}) end,
    [X, Y] = nelder_mead(F, start([math:sqrt(S0), math:sqrt(K0)]), tss(Points)),
    {coef(X), Y * Y}.

coef(X) -> min(1.0, X * X).

%% A simplex around P: P and one point moved along each axis.
start(P) ->
    [P | [[case J of I -> V + max(abs(V) * 0.2, 1.0e-3); _ -> V end
           || {J, V} <- lists:zip(lists:seq(1, length(P)), P)]
          || I <- lists:seq(1, length(P))]].

clamp(V, _Hi) when V < 0 -> 0.0;
clamp(V, Hi) when V > Hi -> Hi;
clamp(V, _) -> V.

tss(Points) ->
    Mean = lists:sum([X || {_, X} <- Points]) / length(Points),
    max(lists:sum([math:pow(X - Mean, 2) || {_, X} <- Points]), 1.0e-300).

nelder_mead(F, Simplex, Scale) ->
    nm(F, [{F(P), P} || P <- Simplex], Scale, 0).

nm(F, Vs0, Scale, Iter) ->
    Vs = lists:keysort(1, Vs0),
    {FBest, Best} = hd(Vs),
    {FWorst, Worst} = lists:last(Vs),
    case Iter >= ?MAX_ITER orelse (FWorst - FBest) =< ?TOL * Scale of
        true -> Best;
        false ->
            Rest = lists:droplast(Vs),
            C = centroid([P || {_, P} <- Rest]),
            {FSecond, _} = lists:last(Rest),
            R = along(C, Worst, -1.0),
            FR = F(R),
            Next = if
                       FR < FBest ->
                           E = along(C, Worst, -2.0),
                           FE = F(E),
                           case FE < FR of true -> {FE, E}; false -> {FR, R} end;
                       FR < FSecond -> {FR, R};
                       true ->
                           K = along(C, Worst, 0.5),
                           FK = F(K),
                           case FK < FWorst of
                               true -> {FK, K};
                               false -> shrink
                           end
                   end,
            case Next of
                shrink ->
                    nm(F, [{FBest, Best} | [begin P1 = along(Best, P, 0.5), {F(P1), P1} end
                                             || {_, P} <- tl(Vs)]], Scale, Iter + 1);
                V -> nm(F, Rest ++ [V], Scale, Iter + 1)
            end
    end.

centroid(Ps) ->
    N = length(Ps),
    [lists:sum(Col) / N || Col <- transpose(Ps)].

transpose([[] | _]) -> [];
transpose(Rows) -> [[hd(R) || R <- Rows] | transpose([tl(R) || R <- Rows])].

%% C + T * (P - C): T = -1 reflects P through C, -2 expands, 0.5 contracts.
along(C, P, T) ->
    [Ci + T * (Pi - Ci) || {Ci, Pi} <- lists:zip(C, P)].

result(Model, {S, K}, Points, Levels) ->
    {L, Sse} = lambda_sse(Points, S, K),
    %% Without coherency cost throughput only approaches lambda / sigma.
    {PeakN, PeakX} = case K > 0 of
                         true ->
                             N = max(1.0, math:sqrt(max(0.0, 1 - S) / K)),
                             {N, L * shape(S, K, N)};
                         false -> {infinity, infinity}
                     end,
    #{lambda => L, sigma => S, kappa => K, model => Model, peak_n => PeakN, peak_x => PeakX,
      r2 => 1 - Sse / tss(Points), levels => Levels, points => length(Points)}.
