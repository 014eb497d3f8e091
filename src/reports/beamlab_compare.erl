%%% @doc Comparison of saved runs: pairs benchmarks by name, measures the
%%% change of every later run against the first with `beamlab_stats:compare/3',
%%% lists unpaired benchmarks and the `env'/`params' differences that might
%%% explain a change. Pure: takes loaded result documents, returns the
%%% comparison (`beamlab_result_compare:comparison()', a core type) the CLI
%%% renders in any format (see `beamlab_render_compare').
-module(beamlab_compare).

-export([compare/1, compare/2, format_error/1]).

-type run() :: {Label :: binary(), Result :: beamlab_result:result()}.
-type opts() :: #{confidence => float(), labels => [binary()]}.
-type error_reason() :: {too_few_runs, non_neg_integer()}.
-export_type([run/0, opts/0, error_reason/0]).

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

%% @doc Compare runs at the default 95% confidence.
-spec compare([run()]) -> {ok, beamlab_result_compare:comparison()} | {error, error_reason()}.
compare(Runs) ->
    compare(Runs, #{}).

%% @doc Compare two or more runs; the first one is the baseline.
-spec compare([run()], opts()) -> {ok, beamlab_result_compare:comparison()} | {error, error_reason()}.
compare(Runs, _Opts) when length(Runs) < 2 ->
    {error, {too_few_runs, length(Runs)}};
compare(Runs, Opts) ->
    Conf = maps:get(confidence, Opts, 0.95),
    Names = ordered_names(Runs),
    Rows = [row(Name, Runs, Conf, context(Runs)) || Name <- Names],
    Labels = [L || {L, _} <- Runs],
    Unpaired = [#{name => maps:get(name, R),
                  missing_in => [L || {L, #{present := false}} <- lists:zip(Labels, maps:get(cells, R))]}
                || R <- Rows, lists:any(fun(#{present := P}) -> not P end, maps:get(cells, R))],
    {ok, #{runs => [run_info(L, Res) || {L, Res} <- Runs],
           rows => Rows,
           unpaired => Unpaired,
           env_diff => env_diff(Runs),
           notes => notes(Runs, Rows, Unpaired),
           confidence => Conf}}.

%% @doc One line for each error `compare/2' returns.
-spec format_error(error_reason()) -> iolist().
format_error({too_few_runs, N}) ->
    io_lib:format("compare needs at least two runs, got ~b", [N]).

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
    [{beamlab_result_compare:replication(R), beamlab_result_compare:overloaded(R)} || {_, R} <- Runs].

row(Name, Runs, Conf, Context) ->
    Found = [{L, find(Name, Res)} || {L, Res} <- Runs],
    Present = [B || {_, B} <- Found, B =/= undefined],
    First = hd(Present),
    Better = maps:get(better, First),
    Unit = maps:get(unit, First, <<>>),
    [{_, BaseB} | _] = Found,
    WallClock = beamlab_result_compare:wall_clock(Unit, maps:get(metric, First, <<>>)),
    [BaseCtx | _] = Context,
    Cells = [cell(L, B, BaseB, Better, Unit, Conf, Pos, ctx(BaseCtx, Ctx, WallClock))
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
      overloaded => LoadB orelse Load, wall_clock => WallClock}.

cell(Label, undefined, _BaseB, _Better, _Unit, _Conf, _Pos, _Ctx) ->
    #{label => Label, present => false};
cell(Label, B, BaseB, Better, Unit, Conf, Pos, Ctx) ->
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
                true -> maps:merge(Own, change(BaseB, B, Better, Conf, Ctx))
            end
    end.

change(BaseB, B, Better, Conf, Ctx) ->
    %% beamlab_stats:compare/3 itself says too_few_samples below 3 per side.
    Xs = maps:get(samples, BaseB, []),
    Ys = maps:get(samples, B, []),
    C = beamlab_stats:compare(Xs, Ys, #{better => Better, confidence => Conf}),
    Far = case Ctx of
              #{overloaded := true, wall_clock := true, replication := runs} ->
                  maps:get(verdict, beamlab_stats:compare(
                                      Xs, Ys, #{better => Better,
                                                confidence => beamlab_result_compare:far_confidence()}));
              _ -> undefined
          end,
    #{change => null_if_undefined(maps:get(change, C)), ci => pair(maps:get(ci, C)),
      p_value => null_if_undefined(maps:get(p_value, C)), test => maps:get(test, C),
      basis => case Ctx of
                   #{replication := runs} -> runs;
                   _ -> within_run
               end,
      verdict => beamlab_result_compare:qualify(C, Far, Ctx)}.

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

notes(Runs, Rows, Unpaired) ->
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
       [fmt("inconclusive: the machine was overloaded (a machine_overloaded or noisy_measurement "
            "finding) and the wall-clock difference is not far outside the noise: ~ts",
            [lists:join(", ", Loaded)]) || Loaded =/= []],
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
