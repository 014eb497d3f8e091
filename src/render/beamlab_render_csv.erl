%%% @doc A result document as CSV: one row per benchmark under a stable
%%% header (RFC 4180; the columns are documented in docs/results.md).
-module(beamlab_render_csv).

-export([render/1, header/0]).

%% @doc The stable CSV columns, in order.
-spec header() -> [binary()].
header() ->
    [<<"kind">>, <<"name">>, <<"group">>, <<"metric">>, <<"unit">>, <<"better">>,
     <<"n">>, <<"mean">>, <<"ci_low">>, <<"ci_high">>, <<"sd">>, <<"cv">>,
     <<"median">>, <<"min">>, <<"p5">>, <<"p25">>, <<"p75">>, <<"p95">>, <<"p99">>, <<"max">>,
     <<"samples_kept">>, <<"sample_method">>,
     <<"change">>, <<"change_ci_low">>, <<"change_ci_high">>, <<"p_value">>, <<"detectable">>, <<"verdict">>,
     <<"partial">>, <<"started_at">>, <<"vm_value">>].

%% @doc One CSV row per benchmark, header first.
-spec render(beamlab_result:result()) -> binary().
render(#{kind := Kind, partial := Partial, started_at := Started, benchmarks := Benchmarks} = Doc) ->
    Matrix = is_map_key(<<"configs">>, maps:get(extra, Doc, #{})),
    Rows = [begin
                S = maps:get(stats, B, #{}),
                C = comparison(B),
                {CiLo, CiHi} = interval(maps:get(ci_mean, S, null)),
                {ChLo, ChHi} = interval(maps:get(ci, C, null)),
                #{kept := Kept, method := Method} = Info,
                [Kind, Name, Group, Metric, Unit, Better,
                 maps:get(n, S, null), maps:get(mean, S, null), CiLo, CiHi,
                 spread(sd, S), spread(cv, S), maps:get(median, S, null),
                 maps:get(min, S, null), maps:get(p5, S, null), maps:get(p25, S, null),
                 maps:get(p75, S, null), maps:get(p95, S, null), maps:get(p99, S, null),
                 maps:get(max, S, null), Kept, Method,
                 maps:get(change, C, null), ChLo, ChHi,
                 maps:get(p_value, C, null), detectable(C), maps:get(verdict, C, null),
                 Partial, Started, vm_value(Matrix, B)]
            end || B = #{name := Name, group := Group, metric := Metric, unit := Unit,
                         better := Better, sample_info := Info} <- Benchmarks],
    beamlab_format_csv:encode([header() | [[null_undefined(F) || F <- R] || R <- Rows]]).

%% What each of a matrix's values is, one per fresh VM (its `n'): "mean"
%% or "fastest sample" (beamlab_result_compare:vm_level/1); empty for a
%% benchmark whose values are samples of one run.
vm_value(true, B) -> list_to_binary(beamlab_result_compare:level_words(beamlab_result_compare:vm_level(B)));
vm_value(false, _) -> null.

%% One value has no spread (a sample sd needs two): empty, never `0.0'
%% (one repetition has no interval either).
spread(K, #{n := N} = S) when N >= 2 -> maps:get(K, S, null);
spread(_, _) -> null.

%% A benchmark's comparison: its own, or a check's paired one (its
%% rounds, `extra.paired', beamlab_stats_paired) in the same columns.
comparison(#{comparison := C}) ->
    C;
comparison(#{extra := #{<<"paired">> := #{} = P}}) ->
    maps:from_list([{K, V} || {K, J} <- [{change, <<"change">>}, {p_value, <<"p_value">>},
                                         {detectable, <<"detectable">>}],
                              V <- [maps:get(J, P, null)], is_number(V)]
                   ++ [{ci, {Lo, Hi}} || [Lo, Hi] <- [maps:get(<<"ci">>, P, null)]]
                   ++ [{verdict, binary_to_atom(V)} || V <- [maps:get(<<"verdict">>, P, null)], is_binary(V)]);
comparison(_) ->
    #{}.

%% What a `~' could have seen (beamlab_stats:compare/3's `detectable', a
%% check's paired `unchanged': beamlab_stats_paired's); empty beside any
%% other verdict.
detectable(#{verdict := V, detectable := D}) when is_number(D), V =:= no_difference; is_number(D), V =:= unchanged -> D;
detectable(_) -> null.

interval({Lo, Hi}) -> {Lo, Hi};
interval(_) -> {null, null}.

null_undefined(undefined) -> null;
null_undefined(V) -> V.
