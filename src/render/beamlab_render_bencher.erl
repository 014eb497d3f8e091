%%% @doc A result document in Bencher Metric Format (BMF, the JSON that
%%% `bencher run --adapter json' reads): `{BENCHMARK: {MEASURE: {"value",
%%% "lower_value", "upper_value"}}}', the bounds being the mean's
%%% confidence interval. Times are given to Bencher's built-in `latency'
%%% measure in nanoseconds, rates per second to its `throughput' measure;
%%% other metrics, and the reductions and memory per iteration of
%%% `--reductions'/`--memory', keep their own measure names (Bencher
%%% creates them). The measures are those of `beamlab_render_ci'. Pure.
-module(beamlab_render_bencher).

-export([render/1]).

%% @doc The BMF object of the document.
-spec render(beamlab_result:result()) -> iodata().
render(Doc) ->
    Bmf = lists:foldl(fun(#{benchmark := B} = M, Acc) ->
                              {Slug, Metric} = metric(M),
                              Acc#{B => maps:put(Slug, Metric, maps:get(B, Acc, #{}))}
                      end, #{}, beamlab_render_ci:measures(Doc)),
    [beamlab_json:encode(Bmf, #{pretty => true}), $\n].

metric(#{measure := Measure, unit := Unit, value := V} = M) ->
    {Slug, Scale} = case {time_scale(Unit), rate(Unit)} of
                        {{ok, S}, _} -> {<<"latency">>, S};
                        {error, true} -> {<<"throughput">>, 1};
                        {error, false} -> {Measure, 1}
                    end,
    Base = #{value => V * Scale},
    {Slug, case M of
               #{interval := {Lo, Hi}} -> Base#{lower_value => Lo * Scale, upper_value => Hi * Scale};
               _ -> Base
           end}.

%% Nanoseconds per unit of a duration.
time_scale(<<"ns">>) -> {ok, 1};
time_scale(<<"us">>) -> {ok, 1000};
time_scale(<<"ms">>) -> {ok, 1000000};
time_scale(<<"s">>) -> {ok, 1000000000};
time_scale(_) -> error.

%% A count per second: ops/s, msg/s, iterations/s, calls/s.
rate(Unit) ->
    case binary:split(Unit, <<"/">>) of
        [_, <<"s">>] -> true;
        _ -> false
    end.
