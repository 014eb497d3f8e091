%%% @doc The measurements of a result document as continuous-benchmarking
%%% services take them: one value per benchmark and measure, in a unit that
%%% stays comparable from run to run, with its confidence interval. Shared
%%% by the renderers of those services' formats
%%% (`beamlab_render_github_benchmark', `beamlab_render_bencher'). Pure.
%%%
%%% Per benchmark with statistics:
%%% <ul>
%%%   <li>its metric: the mean and the interval of the mean, in the
%%%       benchmark's unit, except iterations counted per sample of D ms
%%%       (`beamlab run'), which become iterations per second (mean x
%%%       1000 / D), so that runs with another `-d' stay comparable;</li>
%%%   <li>with `--reductions'/`--memory' (`extra.per_iteration' of `run',
%%%       `extra.per_repetition' of `suite'): reductions and bytes
%%%       allocated per iteration or repetition, exact counts without an
%%%       interval, lower is better.</li>
%%% </ul>
%%% A benchmark without statistics (it failed) has no measure.
-module(beamlab_render_ci).

-export([measures/1, left_out/1]).

%% `name' is the benchmark's for its own metric, `"NAME (MEASURE)"' for
%% the counted ones; `confidence' is the interval's level (0.95).
-type measure() :: #{name := binary(), benchmark := binary(), measure := binary(),
                     unit := binary(), better := beamlab_result:better(), value := number(),
                     interval => {number(), number()}, confidence => float(),
                     n => non_neg_integer(), median => number(),
                     %% the benchmark's verdict against its baseline (a
                     %% matrix's configurations, a run's jobs), in words
                     verdict => binary(),
                     %% a matrix's: what each of its n values is, one per
                     %% fresh VM (beamlab_result_compare:vm_level/1)
                     vm_level => mean | fastest}.
-export_type([measure/0]).

%% @doc Every measure of the document, in benchmark order.
-spec measures(beamlab_result:result()) -> [measure()].
measures(#{benchmarks := Bs} = Doc) ->
    Matrix = is_map_key(<<"configs">>, maps:get(extra, Doc, #{})),
    lists:append([case bench_measures(B, benchmark(B, Doc)) of
                      [Main | Counted] when Matrix -> [Main#{vm_level => beamlab_result_compare:vm_level(B)} | Counted];
                      Ms -> Ms
                  end || B <- Bs]).

%% A check (`beamlab check') has an entry per benchmark and metric; the
%% benchmark is its group, the metric its measure.
benchmark(#{group := G}, #{kind := check}) -> G;
benchmark(#{name := N}, _Doc) -> N.

%% @doc Names of the benchmarks that give no measure (no statistics: the
%% benchmark failed), for a caller that must not drop them silently.
-spec left_out(beamlab_result:result()) -> [binary()].
left_out(#{benchmarks := Bs}) ->
    [Name || #{name := Name} = B <- Bs, not is_map_key(stats, B)].

bench_measures(#{name := Name, metric := Metric, better := Better,
                 stats := #{mean := Mean} = S} = B, Benchmark) ->
    {Scale, Unit} = beamlab_format_units:per_second(B),
    Main0 = #{name => Name, benchmark => Benchmark, measure => Metric, unit => Unit, better => Better,
              value => Mean * Scale, n => maps:get(n, S, 0)},
    Main1 = case maps:get(ci_mean, S, undefined) of
                {Lo, Hi} when is_number(Lo), is_number(Hi) ->
                    Main0#{interval => {Lo * Scale, Hi * Scale}, confidence => maps:get(confidence, S, 0.95)};
                _ -> Main0
            end,
    Main2 = case maps:get(median, S, undefined) of
               M when is_number(M) -> Main1#{median => M * Scale};
               _ -> Main1
           end,
    Main = case verdict(comparison(B)) of
               undefined -> Main2;
               Text -> Main2#{verdict => Text}
           end,
    [Main | counted(B)];
bench_measures(_, _) ->
    [].

%% The benchmark's comparison: its own, or a check's paired one against
%% the base (`extra.paired', beamlab_stats_paired).
comparison(#{comparison := C}) ->
    C;
comparison(#{extra := #{<<"paired">> := #{<<"verdict">> := V} = P}}) when is_binary(V) ->
    maps:from_list([{verdict, binary_to_atom(V)}]
                   ++ [{K, X} || {K, J} <- [{change, <<"change">>}, {detectable, <<"detectable">>}],
                                 X <- [maps:get(J, P, null)], is_number(X)]);
comparison(_) ->
    undefined.

%% A verdict against the baseline in words, with what a `~' could have
%% seen (#35): "+1.2% no_difference (could have seen -18%/+22%)", a
%% check's "+0.4% unchanged (could have seen -4.8%/+5.1%)".
verdict(#{verdict := V} = C) ->
    Change = case maps:get(change, C, undefined) of
                 X when is_number(X) -> [beamlab_format_units:signed_percent(X), " "];
                 _ -> []
             end,
    Could = case C of
                #{verdict := W, detectable := D} when is_number(D), W =:= no_difference;
                                                      is_number(D), W =:= unchanged ->
                    [" (could have seen ", beamlab_format_units:detectable(D), ")"];
                _ -> []
            end,
    unicode:characters_to_binary([Change, atom_to_binary(V), Could]);
verdict(_) ->
    undefined.

counted(#{name := Name, extra := Extra}) ->
    {Per, What} = case Extra of
                      #{<<"per_iteration">> := P} when is_map(P) -> {P, <<"iteration">>};
                      #{<<"per_repetition">> := P} when is_map(P) -> {P, <<"repetition">>};
                      _ -> {#{}, <<>>}
                  end,
    [#{name => <<Name/binary, " (", Measure/binary, ")">>, benchmark => Name, measure => Measure,
       unit => <<Unit/binary, "/", What/binary>>, better => lower, value => V}
     || {Key, Measure, Unit} <- [{<<"reductions">>, <<"reductions">>, <<"reductions">>},
                                 {<<"bytes">>, <<"memory">>, <<"bytes">>}],
        V <- [maps:get(Key, Per, null)], is_number(V)].
