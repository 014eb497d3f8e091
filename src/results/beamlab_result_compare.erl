%%% @doc The comparison of saved runs, in one place: pairs benchmarks by
%%% name, measures the change of every later run against the first with
%%% `beamlab_stats:compare/3', lists unpaired benchmarks and the
%%% `env'/`params' differences that might explain a change, and holds the
%%% pure rules read from a comparison (`--fail-if-slower', the replication
%%% unit, load-aware verdicts). Pure: takes loaded result documents and
%%% returns the comparison that `beamlab_render_compare' renders in any
%%% format.
-module(beamlab_result_compare).

-export([compare/1, compare/2, format_error/1]).
-export([slower_than/2, worse_by/2, replication/1, overloaded/1, wall_clock/2, qualify/3,
         far_confidence/0, between_runs_confidence/0, runs_confidence/0, run_noise/0,
         robust_history/1, run_level/1, vm_level/1, vm_levels/1, robust_vms/1, robust_vms/2, level_words/1,
         history_floor/1,
         configurations/1]).

-type run_info() :: #{label := binary(), kind := beamlab_result:kind(), partial := boolean(),
                      started_at := binary()}.
-type cell() :: #{label := binary(), present := boolean(), n => non_neg_integer(),
                  mean => number() | null, ci_mean => [number()] | null,
                  change => number() | null, ci => [number()] | null, p_value => number() | null,
                  test => welch_log | welch_log_robust | welch | mann_whitney | none,
                  verdict => verdict(),
                  %% test welch_log_robust: the fresh VMs left out of each side
                  rejected_base => non_neg_integer(), rejected_new => non_neg_integer(),
                  %% basis runs, verdict no_difference: the smallest slowdown
                  %% this comparison catches 80% of the time (relative)
                  detectable => number() | null}.
-type verdict() :: faster | slower | no_difference | too_few_samples | unit_mismatch | no_baseline
                 | within_run_only | inconclusive_load | unconfirmed.
%% What a comparison's samples replicate: whole runs (repetitions,
%% fresh VMs, rounds) or samples within one run.
-type replication() :: runs | samples.
%% `loaded': which sides of a comparison of two separately measured runs
%% carry a load finding (absent: the caller does not tell, e.g. a
%% matrix's interleaved configurations, and the far rule alone decides).
-type context() :: #{replication := replication(), overloaded := boolean(),
                     wall_clock := boolean(), loaded => [base | new]}.
-type row() :: #{name := binary(), unit := binary(), better := beamlab_result:better(),
                 metric := binary(), group := binary(), cells := [cell()]}.
-type comparison() :: #{runs := [run_info()], rows := [row()],
                        unpaired := [#{name := binary(), missing_in := [binary()]}],
                        env_diff := [#{key := binary(), values := [beamlab_result_env:scalar()]}],
                        notes := [binary()], confidence := float(), run_noise := float()}.
-export_type([comparison/0, row/0, cell/0, run_info/0, verdict/0, replication/0, context/0]).

-type run() :: {Label :: binary(), Result :: beamlab_result:result()}.
%% `run_noise': the relative sd of a run's level from run to run (the
%% between-run term of two separately measured runs, see run_noise/0);
%% `interleaved': the runs are the configurations of one matrix, measured
%% in the same rounds, so no between-run term applies.
-type opts() :: #{confidence => float(), labels => [binary()], run_noise => number(),
                  interleaved => boolean()}.
-type error_reason() :: {too_few_runs, non_neg_integer()} | not_a_matrix.
-export_type([run/0, opts/0, error_reason/0]).


%% Finding ids (beamlab_env_detect) that make wall-clock verdicts
%% inconclusive.
%% (`load_high' is the engine's pre-flight check, the one a `run' carries:
%% without it a history of loaded runs was judged as if quiet.)
-define(LOAD_FINDINGS, [<<"machine_overloaded">>, <<"noisy_measurement">>, <<"load_high">>]).
%% Units and metrics that do not depend on the machine's load.
-define(LOAD_FREE, [<<"reduction">>, <<"word">>, <<"byte">>, <<"cpu">>, <<"alloc">>]).
%% "Far outside the noise": the difference is still significant at this level.
-define(FAR_CONFIDENCE, 0.999).
%% The level of every verdict between runs, configurations or commits
%% (#35; check's paired rounds use the same alpha, 0.01): at 95% the A/A
%% runs of bench/aa.sh on a quiet machine were called faster or slower
%% 3 to 16% of the time (docs/statistics.md, "Verdicts between runs").
-define(BETWEEN_RUNS_CONFIDENCE, 0.99).
%% The level of a verdict between two separately measured runs with
%% repetitions (`basis' `runs', the between-run term on each side): the
%% term, with the degrees of freedom of the repetitions alone, makes the
%% test conservative, and designed on the A/A documents of 29 November
%% (70 iterations, docs/statistics.md "The between-run rule") 95% with a
%% 2.5% term gave no false verdict and the most power; validated on 85
%% fresh ones: no false verdict, +20% caught 55%.
-define(RUNS_CONFIDENCE, 0.95).
%% A MACHINE-SPECIFIC CONSTANT (`compare --run-noise PCT' overrides it):
%% the sd of a run's level from run to run beyond what its repetitions'
%% spread shows, on beamlab's quiet 2-core development machine
%% (bench/aa_components.escript: 3.0% and 4.4% run to run on two A/A
%% sessions of `matrix -n 3' runs, 5.5-7% fresh VM to fresh VM); chosen
%% with RUNS_CONFIDENCE by bench/aa_design.escript on the first session.
-define(RUN_NOISE, 0.025).
%% CPU time's history: the least run-to-run spread of the fastest samples
-define(CPU_HISTORY_FLOOR, 0.02).

%% @doc What the samples of a document's benchmarks replicate: `runs' for
%% a suite (each sample is one repetition), a matrix (one fresh VM's
%% mean) and a check (one round), `samples' for everything else (samples
%% taken within one run, which say nothing about the next run).
-spec replication(beamlab_result:result()) -> replication().
replication(#{kind := K}) when K =:= suite; K =:= matrix; K =:= check -> runs;
replication(_) -> samples.

%% @doc True when the document has a `machine_overloaded',
%% `noisy_measurement' or `load_high' finding.
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

%% @doc The confidence level of verdicts between runs, configurations
%% and commits (`compare', history, `matrix'): 0.99.
-spec between_runs_confidence() -> float().
between_runs_confidence() -> ?BETWEEN_RUNS_CONFIDENCE.

%% @doc The default between-run term of two separately measured runs: the
%% relative sd of a run's level from run to run on the machine it was
%% measured on (0.025; machine-specific, `compare --run-noise PCT').
-spec run_noise() -> float().
run_noise() -> ?RUN_NOISE.

%% @doc Whether a history of single runs judges a metric by the median
%% and the median absolute deviation of its earlier runs (`robust' of
%% beamlab_stats:confirm_runs/4) rather than their mean and sd: true for
%% CPU time per iteration, whose runs are tight but for a rare far one
%% that would hide every change while it stays in the window; wall-clock
%% time keeps the mean and sd (docs/statistics.md).
-spec robust_history(Metric :: binary()) -> boolean().
robust_history(Metric) ->
    cpu_time(Metric).

%% @doc What stands for one measured run: a single run of a history, and
%% a matrix's fresh VM (so `compare' of two matrices, and a matrix's own
%% verdict): its `mean', or for CPU time per iteration its `fastest'
%% sample. Load only adds CPU time (cache and memory contention,
%% frequency), so the fastest sample is the least disturbed: under load a
%% run's mean was above 1.2x the median in 1 run of 20, its fastest sample
%% never above 1.07x (docs/statistics.md).
-spec run_level(Metric :: binary()) -> mean | fastest.
run_level(Metric) ->
    case cpu_time(Metric) of
        true -> fastest;
        false -> mean
    end.

%% @doc The least spread (relative, the `spread_floor' of
%% beamlab_stats:confirm_runs/4) a history of single runs judges a
%% metric by: 0.02 for CPU time, whose fastest samples vary less from
%% run to run (1.4826 x MAD 0.6-1.5%) than the machine shifts them (two
%% runs at 1.04x were 4-10 false verdicts in 228 without it, none with
%% it: docs/statistics.md); 0 otherwise.
-spec history_floor(Metric :: binary()) -> float().
history_floor(Metric) ->
    case cpu_time(Metric) of
        true -> ?CPU_HISTORY_FLOOR;
        false -> 0.0
    end.

%% @doc What each value of a matrix benchmark is (one per fresh VM): the
%% level {@link run_level/1} took when the matrix ran, as its document
%% records it: `fastest' where the VMs' means are kept beside the values
%% (`extra.vm_means'), else `mean' (wall-clock time; CPU time measured
%% before it took the fastest sample, or where a VM gave no samples).
%% What every output says of a matrix's values follows this.
-spec vm_level(beamlab_result:benchmark()) -> mean | fastest.
vm_level(#{extra := #{<<"vm_means">> := _}}) -> fastest;
vm_level(_) -> mean.

%% @doc Whether a comparison of fresh VMs valued at `Level' leaves out,
%% in each run on its own, the VMs far from the run's others before its
%% test (`robust' of beamlab_stats:compare/3, test `welch_log_robust'):
%% true for the fastest samples of CPU time, where one VM slowed as a
%% whole otherwise hides +20% (bench/vm_rule_study.escript: at 5 VMs a run
%% caught in 97-99% of the pairs with such a VM instead of 12-26%, at most
%% 0.4% false; docs/statistics.md); false for means (wall-clock time: not
%% studied).
-spec robust_vms(mean | fastest) -> boolean().
robust_vms(fastest) -> true;
robust_vms(mean) -> false.

%% @doc Whether a comparison of the fresh VMs of benchmarks `B0' and `B1'
%% leaves out far VMs first: {@link robust_vms/1} of both their levels
%% ({@link vm_level/1}).
-spec robust_vms(beamlab_result:benchmark(), beamlab_result:benchmark()) -> boolean().
robust_vms(B0, B1) ->
    robust_vms(vm_level(B0)) andalso robust_vms(vm_level(B1)).

%% @doc The levels ({@link vm_level/1}) of a matrix document's values,
%% each once; with no benchmark (interrupted before a repetition ended),
%% the level its metric takes ({@link run_level/1}; `params.metric'
%% `cpu': fastest), so that what every output says of the values does
%% not turn to `mean' when nothing was measured.
-spec vm_levels(beamlab_result:result()) -> [mean | fastest].
vm_levels(#{benchmarks := [_ | _] = Bs}) ->
    lists:usort([vm_level(B) || B <- Bs]);
vm_levels(Doc) ->
    [run_level(maps:get(<<"metric">>, maps:get(params, Doc, #{}), <<"time">>))].

%% @doc A level of {@link run_level/1} in words: "mean", "fastest sample".
-spec level_words(mean | fastest) -> string().
level_words(mean) -> "mean";
level_words(fastest) -> "fastest sample".

cpu_time(Metric) -> Metric =:= <<"cpu">>.

%% @doc The default confidence level of a verdict between two separately
%% measured runs with repetitions, judged with the between-run term
%% (`basis' `runs'): 0.95. Every other verdict between runs (a matrix's
%% interleaved configurations, a history of single runs) is judged at
%% {@link between_runs_confidence/0}.
-spec runs_confidence() -> float().
runs_confidence() -> ?RUNS_CONFIDENCE.

%% @doc One matrix document as the runs of its configurations, the
%% baseline first, each labelled by its configuration and holding its
%% benchmarks under their inner names: `compare/2' of them (with
%% `interleaved') recomputes the matrix's own verdicts with the current
%% rule. `{error, not_a_matrix'} for any other document.
-spec configurations(beamlab_result:result()) -> {ok, [run()]} | {error, error_reason()}.
configurations(#{kind := matrix, benchmarks := Bs} = Doc) ->
    Groups = dedup([maps:get(group, B, <<>>) || B <- Bs], #{}, []),
    Params = maps:get(params, Doc, #{}),
    Base = maps:get(<<"baseline">>, Params, maps:get(baseline, Params, hd(Groups ++ [<<>>]))),
    Ordered = [G || G <- Groups, G =:= Base] ++ [G || G <- Groups, G =/= Base],
    {ok, [{G, Doc#{benchmarks => [inner_name(B) || B <- Bs, maps:get(group, B, <<>>) =:= G]}}
          || G <- Ordered]};
configurations(_) ->
    {error, not_a_matrix}.

inner_name(#{extra := X} = B) ->
    Name = case X of
               #{<<"inner_benchmark">> := I} -> I;
               #{inner_benchmark := I} -> I;
               _ -> maps:get(name, B)
           end,
    maps:remove(comparison, B#{name => Name}).

%% @doc The verdict a comparison may claim in its context: two single runs
%% (`replication => samples') only show within-run noise and never get
%% `faster'/`slower' (`within_run_only'); a wall-clock change measured
%% (or an `unconfirmed' run of a history)
%% on an overloaded machine is `inconclusive_load' unless it is
%% significant at {@link far_confidence/0} too (`Far' is the comparison's
%% verdict at that level, or `undefined' when not computed) and the load
%% cannot explain its direction: load only ever makes a wall-clock
%% measure worse, so `slower' with the new side loaded, or `faster' with
%% the baseline loaded, stays `inconclusive_load' at any size (bench/aa.sh
%% on a shared machine: every repetition of one run slowed by the same
%% burst, -27% at p < 0.001; the repetitions' spread does not contain a
%% load that lasted the whole run).
-spec qualify(beamlab_stats:comparison(), verdict() | undefined, context()) -> verdict().
qualify(#{verdict := V}, _Far, #{replication := samples})
  when V =:= faster; V =:= slower; V =:= no_difference ->
    within_run_only;
qualify(#{verdict := V}, Far, #{overloaded := true, wall_clock := true} = Ctx)
  when V =:= faster; V =:= slower; V =:= unconfirmed ->
    %% (an unconfirmed run has no far verdict: inconclusive under load)
    case Far =:= V andalso not load_explains(V, maps:get(loaded, Ctx, [])) of
        true -> V;
        false -> inconclusive_load
    end;
qualify(#{verdict := V}, _Far, _Context) ->
    V.

%% A loaded new side explains `slower', a loaded baseline `faster'.
load_explains(slower, Loaded) -> lists:member(new, Loaded);
load_explains(faster, Loaded) -> lists:member(base, Loaded).

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

%% Env keys that commonly explain a performance change, shown first.
-define(EXPLAINING, [<<"git">>, <<"otp">>, <<"release">>, <<"erts">>, <<"flavo">>, <<"jit">>,
                     <<"emu">>, <<"schedul">>, <<"cpu">>, <<"model">>, <<"bind">>,
                     <<"busy">>, <<"sbwt">>, <<"logical">>, <<"core">>, <<"thread">>,
                     <<"cgroup">>, <<"quota">>, <<"kernel">>, <<"os.">>, <<"arch">>,
                     <<"hostname">>, <<"numa">>, <<"governor">>, <<"virt">>]).
%% Env values that change between any two runs and explain nothing: the
%% VM's own memory use, load, collection times, counters; the command line
%% (its options show under params.*).
-define(NOISE_PREFIX, [<<"env.memory.erlang">>, <<"env.memory.system.free">>,
                       <<"env.memory.system.available">>, <<"env.memory.system.cached">>,
                       <<"env.memory.system.swap_free">>, <<"env.load">>, <<"env.cgroup.stat">>,
                       <<"env.vm_args.plain_arguments">>, <<"env.notes">>]).
%% Matched against the last segment of a key; `time' alone would also hide
%% `timer_resolution', so whole words are used where needed.
-define(NOISE, [<<"date">>, <<"uptime">>, <<"timestamp">>, <<"pid">>, <<"started">>,
                <<"finished">>, <<"_at">>, <<"now">>, <<"clock">>]).
-define(NOISE_EXACT, [<<"time">>, <<"t">>, <<"ts">>]).

%% @doc Compare runs at the default confidence and between-run term (see
%% {@link compare/2}).
-spec compare([run()]) -> {ok, comparison()} | {error, error_reason()}.
compare(Runs) ->
    compare(Runs, #{}).

%% @doc Compare two or more runs; the first one is the baseline. A
%% verdict between runs with repetitions (`basis' `runs') rests on their
%% repetitions' spread plus the between-run term `run_noise' on each
%% side (none when `interleaved'), at `confidence'. Without a
%% `confidence': {@link runs_confidence/0} when every run holds
%% repetitions and they are not `interleaved', else
%% {@link between_runs_confidence/0}.
-spec compare([run()], opts()) -> {ok, comparison()} | {error, error_reason()}.
compare(Runs, _Opts) when length(Runs) < 2 ->
    {error, {too_few_runs, length(Runs)}};
compare(Runs, Opts) ->
    Interleaved = maps:get(interleaved, Opts, false),
    Context = context(Runs),
    Conf = case maps:get(confidence, Opts, undefined) of
               undefined ->
                   case not Interleaved andalso lists:all(fun({Rep, _}) -> Rep =:= runs end, Context) of
                       true -> ?RUNS_CONFIDENCE;
                       false -> ?BETWEEN_RUNS_CONFIDENCE
                   end;
               C -> C
           end,
    Noise = case Interleaved of
                true -> 0.0;
                false -> float(maps:get(run_noise, Opts, ?RUN_NOISE))
            end,
    Names = ordered_names(Runs),
    Rows = [row(Name, Runs, #{confidence => Conf, run_noise => Noise}, Context) || Name <- Names],
    Labels = [L || {L, _} <- Runs],
    Unpaired = [#{name => maps:get(name, R),
                  missing_in => [L || {L, #{present := false}} <- lists:zip(Labels, maps:get(cells, R))]}
                || R <- Rows, lists:any(fun(#{present := P}) -> not P end, maps:get(cells, R))],
    {ok, #{runs => [run_info(L, Res) || {L, Res} <- Runs],
           rows => Rows,
           unpaired => Unpaired,
           env_diff => env_diff(Runs),
           notes => notes(Runs, Rows, Unpaired, Interleaved),
           confidence => Conf, run_noise => Noise}}.

%% @doc One line for each error `compare/2' returns.
-spec format_error(error_reason()) -> iolist().
format_error(Reason) ->
    beamlab_format_reason:line(fun error_line/1, Reason).

error_line({too_few_runs, N}) ->
    io_lib:format("compare needs at least two runs, got ~b", [N]);
error_line(not_a_matrix) ->
    "one document is compared with itself only when it is a matrix (its configurations against its baseline)";
error_line(Other) ->
    %% (a reason of no kind above: printed, never raised)
    beamlab_format_reason:term(Other).

%% Internals

%% Names in first-seen order across runs: the baseline's order first, then
%% benchmarks only later runs have.
ordered_names(Runs) ->
    All = [maps:get(name, B) || {_, Res} <- Runs, B <- maps:get(benchmarks, Res, [])],
    dedup(All, #{}, []).

dedup([], _Seen, Acc) -> lists:reverse(Acc);
dedup([N | T], Seen, Acc) when is_map_key(N, Seen) -> dedup(T, Seen, Acc);
dedup([N | T], Seen, Acc) -> dedup(T, Seen#{N => true}, [N | Acc]).

find(Name, Res) ->
    case [B || B <- maps:get(benchmarks, Res, []), maps:get(name, B) =:= Name] of
        [B | _] -> per_second(B);
        [] -> undefined
    end.

%% Iterations counted per sample of D ms as iterations per second (as the
%% history and the report show them), so that runs with another `-d'
%% compare; other units stay.
per_second(B) ->
    case beamlab_format_units:per_second(B) of
        {_, Unit} when Unit =:= map_get(unit, B) ->
            B;
        {F, Unit} ->
            Stats = maps:get(stats, B, #{}),
            Scaled = maps:map(fun(K, V) when K =:= mean, is_number(V) -> V * F;
                                 (ci_mean, {Lo, Hi}) when is_number(Lo), is_number(Hi) -> {Lo * F, Hi * F};
                                 (_, V) -> V
                              end, maps:with([mean, ci_mean, n], Stats)),
            B#{unit => Unit, samples => [X * F || X <- maps:get(samples, B, []), is_number(X)],
               stats => Scaled}
    end.

%% Per run: what its samples replicate and whether the machine was
%% overloaded while it ran.
context(Runs) ->
    [{replication(R), overloaded(R)} || {_, R} <- Runs].

row(Name, Runs, Judge, Context) ->
    Found = [{L, find(Name, Res)} || {L, Res} <- Runs],
    Present = [B || {_, B} <- Found, B =/= undefined],
    First = hd(Present),
    Better = maps:get(better, First),
    Unit = maps:get(unit, First, <<>>),
    [{_, BaseB} | _] = Found,
    WallClock = wall_clock(Unit, maps:get(metric, First, <<>>)),
    [BaseCtx | _] = Context,
    Cells = [cell(L, B, BaseB, Better, Unit, Judge, Pos, ctx(BaseCtx, Ctx, WallClock))
             || {Pos, {{L, B}, Ctx}} <- enumerate(lists:zip(Found, Context))],
    #{name => Name, unit => Unit, better => Better,
      metric => maps:get(metric, First, <<>>), group => maps:get(group, First, <<>>),
      cells => Cells}.

enumerate(L) -> lists:zip(lists:seq(1, length(L)), L).

ctx({RepB, LoadB}, {Rep, Load}, WallClock) ->
    #{replication => case {RepB, Rep} of
                         {runs, runs} -> runs;
                         _ -> samples
                     end,
      overloaded => LoadB orelse Load, wall_clock => WallClock,
      loaded => [base || LoadB] ++ [new || Load]}.

cell(Label, undefined, _BaseB, _Better, _Unit, _Conf, _Pos, _Ctx) ->
    #{label => Label, present => false};
cell(Label, B, BaseB, Better, Unit, Judge, Pos, Ctx) ->
    Samples = maps:get(samples, B, []),
    Stats = stats_of(B, Samples),
    Own = #{label => Label, present => true, n => sample_count(B, Stats),
            mean => maps:get(mean, Stats, null), ci_mean => pair(maps:get(ci_mean, Stats, null))},
    case Pos of
        1 -> Own;
        _ when BaseB =:= undefined -> Own#{verdict => no_baseline};
        _ ->
            case maps:get(unit, B, Unit) =:= maps:get(unit, BaseB, Unit) of
                false -> Own#{verdict => unit_mismatch};
                true -> maps:merge(Own, change(BaseB, B, Better, Judge, Ctx))
            end
    end.

change(BaseB, B, Better, #{confidence := Conf, run_noise := Noise}, Ctx) ->
    %% beamlab_stats:compare/3 itself says too_few_samples below 3 per side.
    Xs = maps:get(samples, BaseB, []),
    Ys = maps:get(samples, B, []),
    %% The between-run term belongs to repetitions of two runs; samples
    %% within single runs get no verdict anyway (within_run_only).
    Opts = #{better => Better, run_noise => case Ctx of
                                               #{replication := runs} -> Noise;
                                               _ -> 0.0
                                           end,
             robust => robust_vms(BaseB, B)},
    C = beamlab_stats:compare(Xs, Ys, Opts#{confidence => Conf}),
    Far = case Ctx of
              #{overloaded := true, wall_clock := true, replication := runs} ->
                  maps:get(verdict, beamlab_stats:compare(Xs, Ys, Opts#{confidence => far_confidence()}));
              _ -> undefined
          end,
    Verdict = qualify(C, Far, Ctx),
    %% What a "no difference" between runs could have seen (#35).
    Detectable = case {Ctx, Verdict} of
                     {#{replication := runs}, no_difference} ->
                         #{detectable => null_if_undefined(maps:get(detectable, C, undefined))};
                     _ -> #{}
                 end,
    (maps:merge(Detectable, maps:with([rejected_base, rejected_new], C)))#{
                change => null_if_undefined(maps:get(change, C)), ci => pair(maps:get(ci, C)),
                p_value => null_if_undefined(maps:get(p_value, C)), test => maps:get(test, C),
                basis => case Ctx of
                             #{replication := runs} -> runs;
                             _ -> within_run
                         end,
                verdict => Verdict}.

null_if_undefined(undefined) -> null;
null_if_undefined(V) -> V.

stats_of(B, Samples) ->
    case maps:get(stats, B, #{}) of
        #{mean := _} = S -> S;
        _ when Samples =/= [] -> beamlab_stats:summary(Samples);
        _ -> #{}
    end.

%% The number of measurements behind the statistics, not only those kept.
sample_count(B, Stats) ->
    case maps:get(sample_info, B, #{}) of
        #{count := N} -> N;
        _ -> maps:get(n, Stats, length(maps:get(samples, B, [])))
    end.

pair({Lo, Hi}) -> [Lo, Hi];
pair([Lo, Hi]) -> [Lo, Hi];
pair(_) -> null.

run_info(Label, Res) ->
    #{label => Label, kind => maps:get(kind, Res, null),
      partial => maps:get(partial, Res, false) =:= true,
      started_at => maps:get(started_at, Res, null),
      command => maps:get(command, Res, []),
      benchmarks => length(maps:get(benchmarks, Res, []))}.

notes(Runs, Rows, Unpaired, Interleaved) ->
    Kinds = lists:usort([maps:get(kind, R, null) || {_, R} <- Runs]),
    Partial = [L || {L, R} <- Runs, maps:get(partial, R, false) =:= true],
    TooFew = [maps:get(name, R) || R <- Rows,
                                   lists:any(fun(C) -> maps:get(verdict, C, x) =:= too_few_samples end,
                                             maps:get(cells, R))],
    Within = [maps:get(name, R) || R <- Rows,
                                   lists:any(fun(C) -> maps:get(verdict, C, x) =:= within_run_only end,
                                             maps:get(cells, R))],
    Loaded = [maps:get(name, R) || R <- Rows,
                                   lists:any(fun(C) -> maps:get(verdict, C, x) =:= inconclusive_load end,
                                             maps:get(cells, R))],
    Detectable = [{maps:get(name, R), maps:get(label, C), D}
                  || R <- Rows, C = #{detectable := D} <- tl(maps:get(cells, R)), is_number(D)],
    Rejected = [{maps:get(name, R), maps:get(label, C), RB, RN}
                || R <- Rows, C = #{rejected_base := RB, rejected_new := RN} <- tl(maps:get(cells, R)),
                   RB + RN > 0],
    Mismatch = [maps:get(name, R) || R <- Rows,
                                     lists:any(fun(C) -> maps:get(verdict, C, x) =:= unit_mismatch end,
                                               maps:get(cells, R))],
    lists:append(
      [[fmt("runs are of different kinds (~ts): names may not measure the same thing",
            [lists:join(", ", [beamlab_format_units:to_binary(K) || K <- Kinds])]) || length(Kinds) > 1],
       [fmt("partial (interrupted) run: ~ts", [lists:join(", ", Partial)]) || Partial =/= []],
       [fmt("too few samples to tell (need at least 3 on each side): ~ts",
            [lists:join(", ", TooFew)]) || TooFew =/= []],
       [fmt("within-run noise only (single runs): the interval covers the noise within each run, "
            "not the run-to-run variation, so there is no verdict; repeat each side "
            "(suite -n 5, matrix -n 5, check --against) or compare a history of 3+ runs: ~ts",
            [lists:join(", ", Within)]) || Within =/= []],
       [fmt("inconclusive: the machine was overloaded (a load_high, machine_overloaded or "
            "noisy_measurement finding, of a run or of a matrix's repetitions) and the "
            "wall-clock difference is not far outside the noise, or goes the way the load "
            "pushes (the loaded run slower): ~ts; CPU time keeps its verdict under load: "
            "measure with --metric cpu (run, suite, matrix, check; docs/statistics.md)",
            [lists:join(", ", Loaded)]) || Loaded =/= []],
       [fmt("no significant difference between ~ts; from their own spread, "
            "this comparison catches a change 80% of the time only beyond: ~ts; smaller changes need ~ts",
            [case Interleaved of
                 true -> "configurations measured interleaved";
                 false -> "separately measured runs"
             end,
             lists:join(", ", [[N, " (", L, ") ", beamlab_format_units:detectable(D)] || {N, L, D} <- Detectable]),
             case Interleaved of
                 true -> "more fresh VMs (matrix -n 9 or more)";
                 false -> "an interleaved design (check --against REF, or a matrix of both versions with -n 9)"
             end])
        || Detectable =/= []],
       [fmt("fresh VMs left out of the change and its test as far from the other VMs of their run "
            "(more than 3.5 robust sd of the logs; CPU time's fastest samples, docs/statistics.md; "
            "each run's mean and interval still hold every VM): ~ts",
            [lists:join(", ", [io_lib:format("~ts (~ts) ~b of the baseline, ~b of this run", [N, L, RB, RN])
                               || {N, L, RB, RN} <- Rejected])]) || Rejected =/= []],
       [fmt("units differ, not compared: ~ts", [lists:join(", ", Mismatch)]) || Mismatch =/= []],
       [fmt("~b benchmark(s) missing from some runs: ~ts",
            [length(Unpaired), lists:join(", ", [maps:get(name, U) || U <- Unpaired])])
        || Unpaired =/= []]]).

%% Paths of env and params whose values differ between runs.
env_diff(Runs) ->
    Flat = [maps:from_list(beamlab_result_env:flat(R)) || {_, R} <- Runs],
    Keys = lists:usort(lists:append([maps:keys(F) || F <- Flat])),
    Diffs = [#{key => K, values => [maps:get(K, F, null) || F <- Flat]}
             || K <- Keys, not noise(K),
                length(lists:usort([maps:get(K, F, null) || F <- Flat])) > 1],
    {Important, Rest} = lists:partition(fun(#{key := K}) -> explaining(K) end, Diffs),
    Important ++ Rest.

explaining(Key) ->
    Lower = string:lowercase(Key),
    lists:any(fun(P) -> binary:match(Lower, P) =/= nomatch end, ?EXPLAINING).

noise(Key) ->
    Lower = string:lowercase(Key),
    Last = lists:last(binary:split(Lower, <<".">>, [global])),
    lists:member(Last, ?NOISE_EXACT)
        orelse lists:any(fun(P) -> binary:match(Last, P) =/= nomatch end, ?NOISE)
        orelse lists:any(fun(P) -> binary:longest_common_prefix([Lower, P]) =:= byte_size(P) end,
                         ?NOISE_PREFIX).

fmt(F, A) -> unicode:characters_to_binary(io_lib:format(F, A)).
