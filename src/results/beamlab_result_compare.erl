%%% @doc The comparison of saved runs as a value: what `beamlab_compare'
%%% (the reports feature) computes and `beamlab_render_compare' (core)
%%% renders, so the renderer depends on core only. Also the pure rules
%%% read from a comparison (`--fail-if-slower').
-module(beamlab_result_compare).

-export([slower_than/2, worse_by/2]).

-type run_info() :: #{label := binary(), kind := beamlab_result:kind(), partial := boolean(),
                      started_at := binary()}.
-type cell() :: #{label := binary(), present := boolean(), n => non_neg_integer(),
                  mean => number() | null, ci_mean => [number()] | null,
                  change => number() | null, ci => [number()] | null, p_value => number() | null,
                  test => welch_log | welch | mann_whitney | none, verdict => verdict()}.
-type verdict() :: faster | slower | no_difference | too_few_samples | unit_mismatch | no_baseline.
-type row() :: #{name := binary(), unit := binary(), better := beamlab_result:better(),
                 metric := binary(), group := binary(), cells := [cell()]}.
-type comparison() :: #{runs := [run_info()], rows := [row()],
                        unpaired := [#{name := binary(), missing_in := [binary()]}],
                        env_diff := [#{key := binary(), values := [beamlab_result_env:scalar()]}],
                        notes := [binary()], confidence := float()}.
-export_type([comparison/0, row/0, cell/0, run_info/0, verdict/0]).

%% @doc Benchmarks significantly worse than the baseline by more than `Pct'
%% percent in any later run (the `--fail-if-slower' rule: verdict `slower'
%% and the point estimate of the change beyond the threshold).
-spec slower_than(comparison(), number()) -> [{Name :: binary(), Label :: binary(), Pct :: float()}].
slower_than(#{rows := Rows}, Pct) ->
    [{maps:get(name, R), maps:get(label, C), 100 * worse_by(C, maps:get(better, R))}
     || R <- Rows, C <- tl(maps:get(cells, R)),
        maps:get(verdict, C, undefined) =:= slower,
        100 * worse_by(C, maps:get(better, R)) > Pct].

%% @doc How much worse (as a fraction, positive = worse) a cell's change is,
%% given the benchmark's `better' direction.
-spec worse_by(cell(), beamlab_result:better()) -> float().
worse_by(#{change := Change}, higher) when is_number(Change) -> -Change * 1.0;
worse_by(#{change := Change}, _Lower) when is_number(Change) -> Change * 1.0;
worse_by(_, _) -> 0.0.
