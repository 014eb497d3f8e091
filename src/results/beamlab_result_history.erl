%%% @doc History: many saved runs of the same benchmarks, in order, with
%%% each benchmark's trend and the change between consecutive runs.
%%%
%%% Runs are ordered by the git commit each document recorded in its
%%% environment (`env.git': the committer date of the commit, then the
%%% start of the run: a commit measured again later stays in its place) or
%%% by the start of the run alone. The run is the unit of replication: a
%%% benchmark's change is measured against the previous run that has it,
%%% with `beamlab_stats:compare/3' when both runs' samples are
%%% repetitions (suite, matrix, check: `basis' `runs'; with the
%%% between-run term `run_noise' on each side, as `compare', at 95% by
%%% default; matrices of CPU time leave out the fresh VMs far from their
%%% run's others first, `beamlab_result_compare:robust_vms/1'); for single runs (samples within one run) the run and the
%%% one before it against the spread of the earlier runs' means (CPU
%%% time: each run's fastest sample, their spread at least 2%,
%%% `beamlab_result_compare:run_level/1' and `history_floor/1';
%%% up to the 10 runs before those two, at least 3; `beamlab_stats:confirm_runs/4',
%%% `basis' `history', at 99% by default): `faster'/`slower' only when
%%% both are outside it on the same side, `unconfirmed' when only the
%%% newer one is ("run again"); with fewer earlier runs the verdict is
%%% `within_run_only'. A wall-clock change on an overloaded machine is
%%% `inconclusive_load' unless far outside the noise
%%% (`beamlab_result_compare:qualify/3'). `faster' and `slower' are the
%%% significant changes; each change records its `confidence'.
%%% Iterations counted per sample of D ms are
%%% taken per second (`beamlab_format_units:per_second/1'), so runs with
%%% another sample duration stay comparable. Pure: takes loaded documents.
-module(beamlab_result_history).

-export([history/2, order/2, git/1, summary/1, significant/1, format_error/1]).

-type run() :: {Label :: binary(), beamlab_result:result()}.
-type order() :: time | commit.
%% `confidence' (of every change) defaults to
%% beamlab_result_compare:between_runs_confidence/0 for single runs and
%% beamlab_result_compare:runs_confidence/0 for runs with repetitions,
%% `run_noise' (the between-run term of consecutive runs with
%% repetitions) to beamlab_result_compare:run_noise/0.
-type opts() :: #{order => order() | auto, confidence => float(), run_noise => number()}.
-type git() :: #{commit := binary(), commit_time => binary(), dirty => boolean(),
                 branch => binary()}.
-type run_info() :: #{label := binary(), started_at := binary(), partial := boolean(),
                      commit := binary() | null, commit_time := binary() | null,
                      dirty := boolean() | null}.
-type point() :: #{run := pos_integer(), n := non_neg_integer(), mean := number(),
                   ci := {number(), number()} | null}.
-type change() :: #{from := pos_integer(), to := pos_integer(), change := number() | null,
                    ci := {number(), number()} | null, p_value := number() | null,
                    basis => runs | history | within_run, window => non_neg_integer(),
                    confidence => float(), confirmed_by => pos_integer(),
                    %% basis runs, verdict no_difference: the smallest
                    %% slowdown this change would have caught 80% of the time
                    detectable => float(),
                    verdict := beamlab_result_compare:verdict()}.
-type trend() :: #{name := binary(), unit := binary(), better := beamlab_result:better(),
                   points := [point()], changes := [change()]}.
-type history() :: #{runs := [run_info()], order := order(), confidence := float(),
                     trends := [trend()]}.
-type error_reason() :: {too_few_runs, non_neg_integer()} | {no_commit, [binary()]}.
-export_type([run/0, order/0, opts/0, history/0, trend/0, point/0, change/0, run_info/0,
              git/0, error_reason/0]).

%% Earlier runs whose spread judges a single run.
-define(WINDOW, 10).

%% @doc The runs in order (see {@link order/2}) and every benchmark's trend.
%% `order' `auto' (the default) is `commit' when every run recorded one,
%% else `time'.
-spec history([run()], opts()) -> {ok, history()} | {error, error_reason()}.
history(Runs, _Opts) when length(Runs) < 2 ->
    {error, {too_few_runs, length(Runs)}};
history(Runs, Opts) ->
    Order = case maps:get(order, Opts, auto) of
                auto ->
                    case lists:all(fun({_, R}) -> git(R) =/= undefined end, Runs) of
                        true -> commit;
                        false -> time
                    end;
                O -> O
            end,
    case order(Runs, Order) of
        {ok, Sorted} ->
            Conf = maps:get(confidence, Opts, beamlab_result_compare:between_runs_confidence()),
            Judge = #{confidence => Conf,
                      runs_confidence => maps:get(confidence, Opts, beamlab_result_compare:runs_confidence()),
                      run_noise => float(maps:get(run_noise, Opts, beamlab_result_compare:run_noise()))},
            {ok, #{runs => [run_info(L, R) || {L, R} <- Sorted], order => Order, confidence => Conf,
                   trends => [trend(Name, Sorted, Judge) || Name <- names(Sorted)]}};
        {error, _} = E ->
            E
    end.

%% @doc The runs sorted by the start of each run, or by their commit's
%% date (then the start). Ordering by commit needs one in every run.
-spec order([run()], order()) -> {ok, [run()]} | {error, error_reason()}.
order(Runs, time) ->
    {ok, sort_by(fun({_, R}) -> {started(R)} end, Runs)};
order(Runs, commit) ->
    case [L || {L, R} <- Runs, git(R) =:= undefined] of
        [] -> {ok, sort_by(fun({_, R}) -> {commit_time(R), started(R)} end, Runs)};
        Missing -> {error, {no_commit, Missing}}
    end.

%% @doc What {@link history/2} reads of a document, and nothing else: its
%% kind, start, `partial', its findings, the git commit of its environment
%% and each benchmark's name, unit, samples and statistics. A report over thousands
%% of saved runs keeps this of each (#34: 3,000 whole documents took 949
%% MB), and the whole documents only of the runs it shows in detail.
-spec summary(beamlab_result:result()) -> beamlab_result:result().
summary(R) ->
    Env = maps:get(env, R, #{}),
    %% (The findings stay: a machine found overloaded changes a verdict.)
    R#{env => maps:with([<<"git">>], Env), telemetry => #{}, extra => #{},
       benchmarks => [maps:with([name, group, metric, unit, better, samples, sample_info, stats, params], B)
                      || B <- maps:get(benchmarks, R, [])]}.

%% @doc The git commit a document recorded (`env.git'), if any.
-spec git(beamlab_result:result()) -> git() | undefined.
git(#{env := #{<<"git">> := #{<<"commit">> := C} = G}}) when is_binary(C) ->
    maps:from_list([{K, V} || {KB, K} <- [{<<"commit">>, commit}, {<<"commit_time">>, commit_time},
                                          {<<"dirty">>, dirty}, {<<"branch">>, branch}],
                              V <- [maps:get(KB, G, null)], V =/= null]);
git(_) ->
    undefined.

%% @doc The significant changes of a history: `{Benchmark, Change}'.
-spec significant(history()) -> [{binary(), change()}].
significant(#{trends := Trends}) ->
    [{Name, C} || #{name := Name, changes := Cs} <- Trends, C = #{verdict := V} <- Cs,
                  V =:= faster orelse V =:= slower].

%% @doc One line for each error of this module.
-spec format_error(error_reason()) -> iolist().
format_error(Reason) ->
    beamlab_format_reason:line(fun error_line/1, Reason).

error_line({too_few_runs, N}) ->
    io_lib:format("a history needs at least two runs, got ~b", [N]);
error_line({no_commit, Labels}) ->
    io_lib:format("cannot order by commit: no git commit recorded in ~ts "
                  "(runs saved outside a git work tree, or by an older beamlab); order them by time",
                  [lists:join(", ", Labels)]);
error_line(Other) ->
    %% (a reason of no kind above: printed, never raised)
    beamlab_format_reason:term(Other).

%% Internals

%% Stable: runs with equal keys keep the order they were given in.
sort_by(Key, Runs) ->
    Indexed = lists:zip(lists:seq(1, length(Runs)), Runs),
    [R || {_, R} <- lists:sort(fun({I, A}, {J, B}) -> {Key(A), I} =< {Key(B), J} end, Indexed)].

%% RFC 3339 times of one writer sort as text; a commit time with an
%% offset is turned into UTC first.
started(R) -> maps:get(started_at, R, <<>>).

commit_time(R) ->
    case git(R) of
        #{commit_time := T} ->
            try calendar:rfc3339_to_system_time(binary_to_list(T))
            catch _:_ -> T
            end;
        _ -> <<>>
    end.

run_info(Label, R) ->
    G = case git(R) of
            undefined -> #{};
            Git -> Git
        end,
    #{label => Label, started_at => started(R), partial => maps:get(partial, R, false),
      commit => maps:get(commit, G, null), commit_time => maps:get(commit_time, G, null),
      dirty => maps:get(dirty, G, null)}.

names(Runs) ->
    {Rev, _} = lists:foldl(fun(N, {Acc, Seen}) ->
                                   case Seen of
                                       #{N := _} -> {Acc, Seen};
                                       _ -> {[N | Acc], Seen#{N => true}}
                                   end
                           end, {[], #{}}, [maps:get(name, B) || {_, R} <- Runs, B <- maps:get(benchmarks, R)]),
    lists:reverse(Rev).

trend(Name, Runs, Judge) ->
    Found = [{I, B, R} || {I, {_, R}} <- lists:zip(lists:seq(1, length(Runs)), Runs),
                          B <- [find(Name, R)], B =/= undefined, is_map_key(stats, B)],
    Bench = case Found of
                [{_, B0, _} | _] -> B0;
                [] -> find_any(Name, Runs)
            end,
    {_, Unit} = beamlab_format_units:per_second(Bench),
    Metric = maps:get(metric, Bench, <<>>),
    WallClock = beamlab_result_compare:wall_clock(Unit, Metric),
    %% CPU time's robust spread of single runs and their fastest samples
    %% (docs/statistics.md)
    Judged = Judge#{robust => beamlab_result_compare:robust_history(Metric),
                    level => beamlab_result_compare:run_level(Metric),
                    floor => beamlab_result_compare:history_floor(Metric)},
    #{name => Name, unit => Unit, better => maps:get(better, Bench),
      points => [point(I, B) || {I, B, _} <- Found],
      changes => changes(Found, [], Judged, WallClock)}.

%% Each point against the one before it, with the earlier points (newest
%% first) for the history's own spread.
changes([Prev, Cur | T], Earlier, Judge, WallClock) ->
    [change(Prev, Cur, [Prev | Earlier], Judge, WallClock) | changes([Cur | T], [Prev | Earlier], Judge, WallClock)];
changes(_, _, _, _) ->
    [].

point(I, #{stats := S} = B) ->
    {F, _} = beamlab_format_units:per_second(B),
    #{run => I, n => maps:get(count, maps:get(sample_info, B), maps:get(n, S)),
      mean => maps:get(mean, S) * F, ci => case maps:get(ci_mean, S, null) of
                                               {Lo, Hi} -> {Lo * F, Hi * F};
                                               _ -> null
                                           end}.

change({I0, B0, R0}, {I1, B1, R1}, Earlier,
       #{confidence := HistConf, runs_confidence := RunsConf, run_noise := Noise, robust := Robust,
         level := Level, floor := Floor}, WallClock) ->
    {F0, U0} = beamlab_format_units:per_second(B0),
    {F1, U1} = beamlab_format_units:per_second(B1),
    Same = [E || {_, EB, _} = E <- Earlier, element(2, beamlab_format_units:per_second(EB)) =:= U1],
    case U0 =:= U1 of
        true ->
            Ctx = #{replication => case {beamlab_result_compare:replication(R0),
                                         beamlab_result_compare:replication(R1)} of
                                       {runs, runs} -> runs;
                                       _ -> samples
                                   end,
                    overloaded => beamlab_result_compare:overloaded(R0)
                        orelse beamlab_result_compare:overloaded(R1),
                    wall_clock => WallClock,
                    loaded => [base || beamlab_result_compare:overloaded(R0)]
                        ++ [new || beamlab_result_compare:overloaded(R1)]},
            Conf = case Ctx of
                       #{replication := runs} -> RunsConf;
                       _ -> HistConf
                   end,
            Opts = #{better => maps:get(better, B1), confidence => Conf},
            S0 = [X * F0 || X <- maps:get(samples, B0)],
            S1 = [X * F1 || X <- maps:get(samples, B1)],
            %% The runs before the previous one (`Same' is newest first and
            %% starts with it): the spread the two newest are judged by.
            Older = lists:sublist(tl(Same), ?WINDOW),
            {Basis, Window, Cmp, Far} =
                case Ctx of
                    #{replication := runs} ->
                        %% two runs measured apart: the between-run term;
                        %% matrices of CPU time: far VMs left out first
                        %% (`Robust' is the history's own rule, for single runs)
                        RobustVms = beamlab_result_compare:robust_vms(B0, B1),
                        {runs, [], fun(O) -> beamlab_stats:compare(S0, S1, O#{run_noise => Noise, robust => RobustVms}) end,
                         Ctx};
                    _ when length(Older) >= 3 ->
                        %% A single run far off is as often a burst of the
                        %% machine as a change (the heavy tail of single
                        %% runs, docs/statistics.md): a verdict needs this
                        %% run and the one before it outside the spread.
                        Means = [run_level(B, Level) || {_, B, _} <- Older],
                        {history, Older,
                         fun(O) -> beamlab_stats:confirm_runs(Means, run_level(B0, Level), run_level(B1, Level),
                                                              O#{robust => Robust, spread_floor => Floor}) end,
                         Ctx#{replication := runs}};
                    _ ->
                        {within_run, [], fun(O) -> beamlab_stats:compare(S0, S1, O) end, Ctx}
                end,
            C = Cmp(Opts),
            %% A single run on an overloaded machine can be slowed by any
            %% factor by a burst of load that the earlier runs' spread does
            %% not contain (bench/aa.sh under load: a false `slower' at
            %% 99.9%): against a history, a wall-clock change under load is
            %% always inconclusive; only repetitions on both sides (`runs')
            %% may still show it far outside the noise.
            FarVerdict = case Far of
                             #{overloaded := true, wall_clock := true, replication := runs}
                               when Basis =:= runs ->
                                 maps:get(verdict, Cmp(Opts#{confidence => beamlab_result_compare:far_confidence()}));
                             _ -> undefined
                         end,
            Confirm = case C of
                          #{test := confirm} -> #{confirmed_by => I0};
                          _ -> #{}
                      end,
            Verdict = beamlab_result_compare:qualify(C, FarVerdict, Far),
            %% What a `~' between two runs with repetitions could have
            %% seen, as `compare' says it, or two single runs against the
            %% history's spread (confirm_runs/4's) (#35).
            Detectable = case {Basis, Verdict, maps:get(detectable, C, undefined)} of
                             {_, no_difference, D} when is_number(D), Basis =:= runs orelse Basis =:= history ->
                                 #{detectable => D};
                             _ -> #{}
                         end,
            (maps:merge(Confirm, Detectable))#{from => case Basis of
                                 history -> element(1, lists:last(Window));
                                 _ -> I0
                             end,
                     to => I1, change => null_if_undefined(maps:get(change, C)),
                     ci => null_if_undefined(maps:get(ci, C)), p_value => null_if_undefined(maps:get(p_value, C)),
                     basis => Basis, window => case Basis of history -> length(Window); _ -> 1 end,
                     confidence => Conf,
                     verdict => Verdict};
        false -> #{from => I0, to => I1, change => null, ci => null, p_value => null, verdict => unit_mismatch}
    end.

%% A single run's level in the history's unit: its mean, or its fastest
%% sample (beamlab_result_compare:run_level/1).
run_level(#{stats := #{mean := M}} = B, mean) ->
    {F, _} = beamlab_format_units:per_second(B),
    M * F;
run_level(#{samples := [_ | _] = S} = B, fastest) ->
    {F, _} = beamlab_format_units:per_second(B),
    case maps:get(better, B) of
        H when H =:= higher; H =:= <<"higher">> -> lists:max(S) * F;
        _ -> lists:min(S) * F
    end;
run_level(B, fastest) ->
    run_level(B, mean).

null_if_undefined(undefined) -> null;
null_if_undefined(V) -> V.

find(Name, R) ->
    case [B || B = #{name := N} <- maps:get(benchmarks, R), N =:= Name] of
        [B | _] -> B;
        [] -> undefined
    end.

find_any(Name, Runs) ->
    hd([B || {_, R} <- Runs, B <- [find(Name, R)], B =/= undefined]).
