%%% @doc Bounded uniform random sample of an unbounded stream of numbers,
%%% with exact streaming count, mean, variance, min and max.
%%%
%%% Sampling is Vitter's algorithm R: the first `Capacity' values are kept;
%%% the i-th value after that replaces a uniformly chosen kept one with
%%% probability Capacity/i, so at any time every value seen so far is in the
%%% reservoir with the same probability. Mean and variance use Welford's
%%% update, which is exact to rounding and does not cancel catastrophically.
%%% The structure is a plain immutable value; with a `seed' it is fully
%%% deterministic.
-module(beamlab_stats_reservoir).

-export([new/1, new/2, add/2, add_all/2, samples/1, count/1, capacity/1,
         summary/1]).

-export_type([reservoir/0]).

-record(res, {cap :: pos_integer(),
              n = 0 :: non_neg_integer(),
              mean = 0.0 :: float(),
              m2 = 0.0 :: float(),          % sum of squared deviations
              min :: number() | undefined,
              max :: number() | undefined,
              kept :: array:array(number()),
              rng :: rand:state()}).

-opaque reservoir() :: #res{}.

%% @doc A reservoir keeping at most `Capacity' samples, with a random seed.
-spec new(pos_integer()) -> reservoir().
new(Capacity) ->
    new(Capacity, #{}).

%% @doc Options: `seed' (an integer) makes the sample reproducible.
-spec new(pos_integer(), #{seed => integer()}) -> reservoir().
new(Capacity, Opts) when is_integer(Capacity), Capacity >= 1, is_map(Opts) ->
    Rng = case maps:get(seed, Opts, undefined) of
              undefined -> rand:seed_s(exsss);
              Seed when is_integer(Seed) -> rand:seed_s(exsss, Seed)
          end,
    #res{cap = Capacity, kept = array:new(), rng = Rng}.

%% @doc Add one value.
-spec add(reservoir(), number()) -> reservoir().
add(#res{cap = Cap, n = N0, mean = M0, m2 = M20, kept = Kept,
         rng = Rng} = R, X) when is_number(X) ->
    N = N0 + 1,
    Delta = X - M0,
    M = M0 + Delta / N,
    M2 = M20 + Delta * (X - M),
    R1 = R#res{n = N, mean = M, m2 = M2,
               min = min_of(R#res.min, X), max = max_of(R#res.max, X)},
    case N =< Cap of
        true ->
            R1#res{kept = array:set(N - 1, X, Kept)};
        false ->
            {J, Rng1} = rand:uniform_s(N, Rng),
            case J =< Cap of
                true -> R1#res{kept = array:set(J - 1, X, Kept), rng = Rng1};
                false -> R1#res{rng = Rng1}
            end
    end.

%% @doc Add every value of a list, in order.
-spec add_all(reservoir(), [number()]) -> reservoir().
add_all(R, Xs) ->
    lists:foldl(fun(X, Acc) -> add(Acc, X) end, R, Xs).

min_of(undefined, X) -> X;
min_of(A, X) -> erlang:min(A, X).

max_of(undefined, X) -> X;
max_of(A, X) -> erlang:max(A, X).

%% @doc The kept samples (at most the capacity), in slot order.
-spec samples(reservoir()) -> [number()].
samples(#res{kept = Kept}) -> array:to_list(Kept).

%% @doc How many values were added in total.
-spec count(reservoir()) -> non_neg_integer().
count(#res{n = N}) -> N.

%% @doc The maximum number of kept samples.
-spec capacity(reservoir()) -> pos_integer().
capacity(#res{cap = Cap}) -> Cap.

%% @doc Exact statistics of everything added plus the kept sample.
%% `variance' and `sd' use n-1 (0.0 below two values); mean, min and max
%% are `undefined' for an empty reservoir. `method' is `all' while nothing
%% was dropped, `reservoir' afterwards.
-spec summary(reservoir()) ->
          #{count := non_neg_integer(), kept := non_neg_integer(),
            mean := float() | undefined, variance := float(), sd := float(),
            min := number() | undefined, max := number() | undefined,
            method := all | reservoir, samples := [number()]}.
summary(#res{cap = Cap, n = N, mean = M, m2 = M2, min = Min, max = Max} = R) ->
    Var = case N < 2 of
              true -> 0.0;
              false -> erlang:max(0.0, M2 / (N - 1))
          end,
    #{count => N, kept => erlang:min(N, Cap),
      mean => case N of 0 -> undefined; _ -> M end,
      variance => Var, sd => math:sqrt(Var), min => Min, max => Max,
      method => case N =< Cap of true -> all; false -> reservoir end,
      samples => samples(R)}.
