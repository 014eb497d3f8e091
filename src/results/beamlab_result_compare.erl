%%% @doc The comparison of saved runs as a value: what `beamlab_compare'
%%% (the reports feature) computes and `beamlab_render_compare' (core)
%%% renders, so the renderer depends on core only. Also the pure rules
%%% read from a comparison (`--fail-if-slower').
-module(beamlab_result_compare).

-export([slower_than/2, worse_by/2, replication/1, overloaded/1, wall_clock/2, qualify/3,
         far_confidence/0]).

-type run_info() :: #{label := binary(), kind := beamlab_result:kind(), partial := boolean(),
                      started_at := binary()}.
-type cell() :: #{label := binary(), present := boolean(), n => non_neg_integer(),
                  mean => number() | null, ci_mean => [number()] | null,
                  change => number() | null, ci => [number()] | null, p_value => number() | null,
                  test => welch_log | welch | mann_whitney | none, verdict => verdict()}.
-type verdict() :: faster | slower | no_difference | too_few_samples | unit_mismatch | no_baseline
                 | within_run_only | inconclusive_load.
%% What a comparison's samples replicate: whole runs (repetitions,
%% fresh VMs, rounds) or samples within one run.
-type replication() :: runs | samples.
-type context() :: #{replication := replication(), overloaded := boolean(),
                     wall_clock := boolean()}.
-type row() :: #{name := binary(), unit := binary(), better := beamlab_result:better(),
                 metric := binary(), group := binary(), cells := [cell()]}.
-type comparison() :: #{runs := [run_info()], rows := [row()],
                        unpaired := [#{name := binary(), missing_in := [binary()]}],
                        env_diff := [#{key := binary(), values := [beamlab_result_env:scalar()]}],
                        notes := [binary()], confidence := float()}.
-export_type([comparison/0, row/0, cell/0, run_info/0, verdict/0, replication/0, context/0]).

%% Finding ids (beamlab_env_detect) that make wall-clock verdicts
%% inconclusive.
-define(LOAD_FINDINGS, [<<"machine_overloaded">>, <<"noisy_measurement">>]).
%% Units and metrics that do not depend on the machine's load.
-define(LOAD_FREE, [<<"reduction">>, <<"word">>, <<"byte">>, <<"cpu">>, <<"alloc">>]).
%% "Far outside the noise": the difference is still significant at this level.
-define(FAR_CONFIDENCE, 0.999).

%% @doc What the samples of a document's benchmarks replicate: `runs' for
%% a suite (each sample is one repetition), a matrix (one fresh VM's
%% mean) and a check (one round), `samples' for everything else (samples
%% taken within one run, which say nothing about the next run).
-spec replication(beamlab_result:result()) -> replication().
replication(#{kind := K}) when K =:= suite; K =:= matrix; K =:= check -> runs;
replication(_) -> samples.

%% @doc True when the document has a `machine_overloaded' or
%% `noisy_measurement' finding.
-spec overloaded(beamlab_result:result() | #{findings := [beamlab_result:finding()]}) -> boolean().
overloaded(R) ->
    lists:any(fun(#{id := Id}) -> lists:member(Id, ?LOAD_FINDINGS) end, maps:get(findings, R, [])).

%% @doc True for a wall-clock measure (times, rates, iterations per
%% sample), false for load-independent ones (reductions, words, bytes,
%% CPU time per operation), judged from the unit and the metric's name.
-spec wall_clock(Unit :: binary(), Metric :: binary()) -> boolean().
wall_clock(Unit, Metric) ->
    Text = string:lowercase(<<Unit/binary, " ", Metric/binary>>),
    not lists:any(fun(W) -> binary:match(Text, W) =/= nomatch end, ?LOAD_FREE).

%% @doc The confidence at which a difference counts as far outside the
%% noise of an overloaded machine.
-spec far_confidence() -> float().
far_confidence() -> ?FAR_CONFIDENCE.

%% @doc The verdict a comparison may claim in its context: two single runs
%% (`replication => samples') only show within-run noise and never get
%% `faster'/`slower' (`within_run_only'); a wall-clock change measured
%% on an overloaded machine is `inconclusive_load' unless it is
%% significant at {@link far_confidence/0} too (`Far' is the comparison's
%% verdict at that level, or `undefined' when not computed).
-spec qualify(beamlab_stats:comparison(), verdict() | undefined, context()) -> verdict().
qualify(#{verdict := V}, _Far, #{replication := samples})
  when V =:= faster; V =:= slower; V =:= no_difference ->
    within_run_only;
qualify(#{verdict := V}, Far, #{overloaded := true, wall_clock := true})
  when V =:= faster; V =:= slower ->
    case Far =:= V of
        true -> V;
        false -> inconclusive_load
    end;
qualify(#{verdict := V}, _Far, _Context) ->
    V.

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
