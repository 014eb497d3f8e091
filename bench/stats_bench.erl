%%% @doc beamlab's statistics on its hot paths: the summary of a run's
%%% samples (sorting, percentiles, both intervals) and the comparison of
%%% two runs (Mann-Whitney, Welch, Fieller). Bench module of `beamlab
%%% check' (docs/ci.md); `.ci/run' gates on their reductions.
-module(stats_bench).

-export([benchmarks/0]).

benchmarks() ->
    [#{name => "stats summary n=1000",
       init => fun() -> samples(1, 1000) end,
       init_runner => fun(S) -> S end,
       runner => fun(S) -> beamlab_stats:summary(S) end},
     #{name => "stats compare n=30+30",
       init => fun() -> {samples(2, 30), samples(3, 30)} end,
       init_runner => fun(P) -> P end,
       runner => fun({A, B}) -> beamlab_stats:compare(A, B, #{}) end}].

%% The same samples every time (a seeded generator): the work per
%% iteration does not depend on the run.
samples(Seed, N) ->
    {Xs, _} = lists:mapfoldl(fun(_, S) ->
                                     {X, S1} = rand:normal_s(S),
                                     {1000 + 50 * X, S1}
                             end, rand:seed_s(exsss, Seed), lists:seq(1, N)),
    Xs.
