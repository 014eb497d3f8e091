-module(beamlab_result_compare_tests).
-include_lib("eunit/include/eunit.hrl").

bench(Name, Samples) ->
    bench(Name, Samples, lower).
bench(Name, Samples, Better) ->
    beamlab_result:benchmark(Name, Samples, #{group => <<"g">>, metric => <<"time">>, unit => <<"ns">>,
                                              better => Better}).

result(Benchmarks) ->
    result(Benchmarks, #{}).
result(Benchmarks, Env) ->
    result(Benchmarks, Env, suite).
%% A suite's samples are repetitions (runs); a bench run's are samples
%% within one run.
result(Benchmarks, Env, Kind) ->
    R = beamlab_result:new(Kind, #{command => [], started_at => <<"2026-11-23T00:00:00Z">>}),
    beamlab_result:set(env, Env, beamlab_result:add_benchmarks(R, Benchmarks)).

overloaded(R) ->
    beamlab_result:add_findings(R, [beamlab_result:finding(machine_overloaded, warning, <<"t">>,
                                                           <<"e">>, <<"a">>, #{})]).

base() -> [100.0 + X / 10 || X <- lists:seq(1, 20)].
shifted(F) -> [X * F || X <- base()].

verdicts_test() ->
    A = result([bench(<<"same">>, base()), bench(<<"slow">>, base()), bench(<<"fast">>, base()),
                bench(<<"thr">>, base(), higher)]),
    B = result([bench(<<"same">>, base()), bench(<<"slow">>, shifted(1.2)),
                bench(<<"fast">>, shifted(0.8)), bench(<<"thr">>, shifted(1.2), higher)]),
    {ok, Cmp} = beamlab_result_compare:compare([{<<"A">>, A}, {<<"B">>, B}]),
    V = maps:from_list([{maps:get(name, R), maps:get(verdict, lists:last(maps:get(cells, R)))}
                        || R <- maps:get(rows, Cmp)]),
    ?assertEqual(#{<<"same">> => no_difference, <<"slow">> => slower, <<"fast">> => faster,
                   <<"thr">> => faster}, V),
    [Slow] = [R || R <- maps:get(rows, Cmp), maps:get(name, R) =:= <<"slow">>],
    #{change := Change, ci := [Lo, Hi], basis := runs} = lists:last(maps:get(cells, Slow)),
    ?assert(abs(Change - 0.2) < 1.0e-9),
    ?assert(Lo < 0.2 andalso 0.2 < Hi).

%% Two single runs (samples within each run): the change and its interval
%% are shown, but the verdict says what they cover, never faster/slower.
single_runs_get_no_verdict_test() ->
    A = result([bench(<<"slow">>, base())], #{}, bench),
    B = result([bench(<<"slow">>, shifted(1.2))], #{}, bench),
    {ok, Cmp} = beamlab_result_compare:compare([{<<"A">>, A}, {<<"B">>, B}]),
    [#{cells := [_, Cell]}] = maps:get(rows, Cmp),
    ?assertMatch(#{verdict := within_run_only, basis := within_run, ci := [_, _]}, Cell),
    ?assertEqual([], beamlab_result_compare:slower_than(Cmp, 5)),
    Notes = iolist_to_binary(maps:get(notes, Cmp)),
    ?assertNotEqual(nomatch, binary:match(Notes, <<"within-run noise only">>)),
    Text = iolist_to_binary(beamlab_render_compare:render(Cmp, text)),
    ?assertEqual(nomatch, binary:match(Text, <<"SLOWER">>)),
    ?assertNotEqual(nomatch, binary:match(Text, <<"within-run only">>)).

%% An overloaded machine: a wall-clock change not far outside the noise
%% is inconclusive; a huge one keeps its verdict only when the load
%% cannot explain it (load only makes things worse: a loaded new run's
%% `slower' or a loaded baseline's `faster' stays inconclusive at any
%% size); a load-independent metric keeps its verdict.
overloaded_machine_test() ->
    Noisy = fun(F) -> [X * F * (1 + 0.15 * math:sin(X)) || X <- [100.0, 130.0, 90.0, 115.0, 105.0]] end,
    Reds = fun(F) -> (bench(<<"reds">>, Noisy(F)))#{unit => <<"reductions">>, metric => <<"reductions">>} end,
    A = result([bench(<<"t">>, Noisy(1.0)), bench(<<"huge">>, Noisy(1.0)), Reds(1.0)]),
    %% (+50%: slower at 99% with the default run-to-run noise, not at 99.9%)
    B = overloaded(result([bench(<<"t">>, Noisy(1.5)), bench(<<"huge">>, Noisy(5.0)), Reds(1.5)])),
    {ok, Cmp} = beamlab_result_compare:compare([{<<"A">>, A}, {<<"B">>, B}]),
    V = maps:from_list([{N, maps:get(verdict, C)} || #{name := N, cells := [_, C]} <- maps:get(rows, Cmp)]),
    %% Without the finding, "t" is slower (at the default 99%).
    {ok, Quiet} = beamlab_result_compare:compare([{<<"A">>, A}, {<<"B">>, B#{findings := []}}]),
    ?assertMatch([#{cells := [_, #{verdict := slower}]} | _], maps:get(rows, Quiet)),
    ?assertEqual(#{<<"t">> => inconclusive_load, <<"huge">> => inconclusive_load, <<"reds">> => slower}, V),
    ?assertNotEqual(nomatch, binary:match(iolist_to_binary(maps:get(notes, Cmp)),
                                          <<"the machine was overloaded">>)),
    %% ... and the note says what keeps a verdict under load
    ?assertNotEqual(nomatch, binary:match(iolist_to_binary(maps:get(notes, Cmp)),
                                          <<"CPU time keeps its verdict under load: measure with --metric cpu">>)),
    ?assertEqual(nomatch, binary:match(iolist_to_binary(maps:get(notes, Quiet)), <<"--metric cpu">>)),
    %% The baseline loaded, the new run quiet: its 5x slowdown is not the
    %% load's doing (far outside the noise: kept), +50% is still within
    %% the noise a load adds.
    {ok, BaseLoaded} = beamlab_result_compare:compare([{<<"A">>, overloaded(A)}, {<<"B">>, B#{findings := []}}]),
    V2 = maps:from_list([{N, maps:get(verdict, C)} || #{name := N, cells := [_, C]} <- maps:get(rows, BaseLoaded)]),
    ?assertEqual(#{<<"t">> => inconclusive_load, <<"huge">> => slower, <<"reds">> => slower}, V2),
    %% ... and a 5x speed-up against a loaded baseline is the load's doing.
    {ok, Faster} = beamlab_result_compare:compare([{<<"B">>, overloaded(B)}, {<<"A">>, A}]),
    V3 = maps:from_list([{N, maps:get(verdict, C)} || #{name := N, cells := [_, C]} <- maps:get(rows, Faster)]),
    ?assertEqual(#{<<"t">> => inconclusive_load, <<"huge">> => inconclusive_load, <<"reds">> => faster}, V3).

%% qualify/3 on its own: the far rule, and the direction the load explains.
qualify_load_direction_test() ->
    Ctx = #{replication => runs, overloaded => true, wall_clock => true},
    Q = fun(V, Far, Loaded) -> beamlab_result_compare:qualify(#{verdict => V}, Far, Ctx#{loaded => Loaded}) end,
    ?assertEqual(inconclusive_load, Q(slower, slower, [new])),
    ?assertEqual(inconclusive_load, Q(slower, slower, [base, new])),
    ?assertEqual(slower, Q(slower, slower, [base])),
    ?assertEqual(inconclusive_load, Q(slower, no_difference, [base])),
    ?assertEqual(inconclusive_load, Q(faster, faster, [base])),
    ?assertEqual(faster, Q(faster, faster, [new])),
    ?assertEqual(no_difference, Q(no_difference, no_difference, [new])),
    %% No side named (a matrix's interleaved configurations): the far rule.
    ?assertEqual(slower, beamlab_result_compare:qualify(#{verdict => slower}, slower, Ctx)).

fail_if_slower_threshold_test() ->
    A = result([bench(<<"x">>, base()), bench(<<"y">>, base(), higher)]),
    %% (+20% and -30%: beyond the default run-to-run noise of 3% a side)
    B = result([bench(<<"x">>, shifted(1.2)), bench(<<"y">>, shifted(0.7), higher)]),
    {ok, Cmp} = beamlab_result_compare:compare([{<<"A">>, A}, {<<"B">>, B}]),
    ?assertMatch([{<<"x">>, <<"B">>, _}, {<<"y">>, <<"B">>, _}], beamlab_result_compare:slower_than(Cmp, 5)),
    ?assertMatch([{<<"y">>, <<"B">>, _}], beamlab_result_compare:slower_than(Cmp, 25)),
    ?assertEqual([], beamlab_result_compare:slower_than(Cmp, 40)).

unpaired_are_reported_test() ->
    A = result([bench(<<"a">>, base()), bench(<<"only_a">>, base())]),
    B = result([bench(<<"a">>, base()), bench(<<"only_b">>, base())]),
    {ok, Cmp} = beamlab_result_compare:compare([{<<"A">>, A}, {<<"B">>, B}]),
    ?assertEqual([<<"a">>, <<"only_a">>, <<"only_b">>], [maps:get(name, R) || R <- maps:get(rows, Cmp)]),
    ?assertEqual([#{name => <<"only_a">>, missing_in => [<<"B">>]},
                  #{name => <<"only_b">>, missing_in => [<<"A">>]}], maps:get(unpaired, Cmp)),
    ?assert(lists:any(fun(N) -> binary:match(N, <<"missing from some runs">>) =/= nomatch end,
                      maps:get(notes, Cmp))).

too_few_samples_test() ->
    A = result([bench(<<"a">>, [5.0, 5.5])]),
    B = result([bench(<<"a">>, [6.0, 6.1])]),
    {ok, Cmp} = beamlab_result_compare:compare([{<<"A">>, A}, {<<"B">>, B}]),
    [Row] = maps:get(rows, Cmp),
    ?assertEqual(too_few_samples, maps:get(verdict, lists:last(maps:get(cells, Row)))),
    ?assert(lists:any(fun(N) -> binary:match(N, <<"too few samples">>) =/= nomatch end,
                      maps:get(notes, Cmp))),
    {_, [TableRow]} = beamlab_render_compare:rows(Cmp),
    ?assertEqual(<<"too_few_samples">>, lists:last(TableRow)),
    %% two values have no interval: no bounds, never a +-0%
    ?assertMatch([_, null, null, 2], lists:sublist(TableRow, 3, 4)).

unit_mismatch_test() ->
    A = result([bench(<<"a">>, base())]),
    B = result([(bench(<<"a">>, base()))#{unit => <<"us">>}]),
    {ok, Cmp} = beamlab_result_compare:compare([{<<"A">>, A}, {<<"B">>, B}]),
    [Row] = maps:get(rows, Cmp),
    ?assertEqual(unit_mismatch, maps:get(verdict, lists:last(maps:get(cells, Row)))).

env_diff_test() ->
    EnvA = #{otp_release => <<"25">>, schedulers => 2, hostname => <<"h">>, now => <<"t1">>,
             cpu => #{model => <<"X">>}, memory => #{erlang => #{total => 1}},
             load => #{load1 => 1.5}},
    EnvB = EnvA#{otp_release => <<"26">>, now => <<"t2">>, extra_key => 1,
                 memory => #{erlang => #{total => 2}}, load => #{load1 => 3.0}},
    {ok, Cmp} = beamlab_result_compare:compare([{<<"A">>, result([], EnvA)}, {<<"B">>, result([], EnvB)}]),
    Diff = maps:get(env_diff, Cmp),
    Keys = [K || #{key := K} <- Diff],
    %% OTP is explanatory, so it sorts first; a key one run lacks shows as null.
    ?assertEqual([<<"env.otp_release">>, <<"env.extra_key">>], Keys),
    ?assertMatch([#{values := [<<"25">>, <<"26">>]}, #{values := [null, 1]}], Diff).

three_runs_and_table_test() ->
    Runs = [{L, result([bench(<<"a">>, shifted(F))])} || {L, F} <- [{<<"A">>, 1.0}, {<<"B">>, 1.3}, {<<"C">>, 0.7}]],
    {ok, Cmp} = beamlab_result_compare:compare(Runs),
    {Header, [Row]} = beamlab_render_compare:rows(Cmp),
    ?assertEqual(length(Header), length(Row)),
    ?assertEqual(2 + 3 * 4 + 2 * 6, length(Header)),
    ?assert(lists:member(<<"B vs A">>, Header)),
    ?assert(lists:member(<<"C vs A">>, Header)),
    ?assertEqual([<<"A mean">>, <<"A CI low">>, <<"A CI high">>, <<"A n">>], lists:sublist(Header, 3, 4)),
    %% the verdict stays each later run's last column (after `detectable')
    ?assertEqual([<<"slower">>, <<"faster">>], [lists:nth(20, Row), lists:nth(26, Row)]),
    ?assertEqual([<<"detectable">>, <<"verdict">>], lists:sublist(Header, 19, 2)),
    ?assertEqual(null, lists:nth(19, Row)),
    %% Each run's interval as its two bounds (never a symmetric +-%): on the
    %% log scale it reaches further above the mean than below, never below 0.
    [MeanA, LoA, HiA, _] = lists:sublist(Row, 3, 4),
    ?assert(0 < LoA andalso LoA < MeanA andalso MeanA < HiA),
    ?assert(HiA - MeanA > MeanA - LoA),
    %% Change and CI bounds are plain fractions for CSV and the HTML page.
    [Change, Lo, Hi] = lists:sublist(Row, 15, 3),
    ?assert(Lo < Change andalso Change < Hi andalso abs(Change - 0.3) < 1.0e-9),
    %% The C side: its interval never reaches below -100%.
    [ChangeC, LoC, _] = lists:sublist(Row, 21, 3),
    ?assert(LoC > -1.0 andalso abs(ChangeC + 0.3) < 1.0e-9).

needs_two_runs_test() ->
    ?assertEqual({error, {too_few_runs, 1}}, beamlab_result_compare:compare([{<<"A">>, result([])}])),
    ?assertMatch([_ | _], lists:flatten(beamlab_result_compare:format_error({too_few_runs, 1}))).

partial_and_kinds_notes_test() ->
    A = result([bench(<<"a">>, base())]),
    A1 = A#{kind => bench},
    B = (result([bench(<<"a">>, base())]))#{kind => suite, partial => true},
    {ok, Cmp} = beamlab_result_compare:compare([{<<"A">>, A1}, {<<"B">>, B}]),
    Notes = iolist_to_binary(maps:get(notes, Cmp)),
    ?assertNotEqual(nomatch, binary:match(Notes, <<"partial (interrupted) run: B">>)),
    ?assertNotEqual(nomatch, binary:match(Notes, <<"different kinds (bench, suite)">>)),
    ?assertMatch([_, #{partial := true}], maps:get(runs, Cmp)).

%% Iterations per sample of -d ms compare as iterations per second: the
%% same rate sampled every 100 ms and every 200 ms is no difference.
per_second_test() ->
    Run = fun(D, Factor) ->
                  B = beamlab_result:benchmark(<<"ok.">>, shifted(Factor),
                                               #{group => <<"run">>, metric => <<"throughput">>,
                                                 unit => <<"iterations">>, better => higher,
                                                 params => #{<<"sample">> => #{<<"duration_ms">> => D}}}),
                  result([B])
          end,
    {ok, Cmp} = beamlab_result_compare:compare([{<<"A">>, Run(100, 1.0)}, {<<"B">>, Run(200, 2.0)}]),
    [#{unit := <<"iterations/s">>, cells := [#{mean := M}, #{verdict := no_difference, change := C}]}] =
        maps:get(rows, Cmp),
    ?assert(abs(M - 1000.0 * lists:sum(base()) / 20 / 100) < 1.0e-6),
    ?assert(abs(C) < 1.0e-9).

%% #35: a "no difference" between separately measured runs says what it
%% could have seen: the smallest slowdown caught 80% of the time at the
%% comparison's level, from its own spread (cell `detectable', a note
%% naming the interleaved designs); a verdict or single runs say nothing.
detectable_test() ->
    Noisy = [100.0, 108.0, 93.0, 104.0, 97.0],
    A = result([bench(<<"same">>, Noisy), bench(<<"slow">>, Noisy)]),
    B = result([bench(<<"same">>, [X * 1.01 || X <- Noisy]), bench(<<"slow">>, [X * 1.5 || X <- Noisy])]),
    {ok, #{rows := Rows, notes := Notes}} = beamlab_result_compare:compare([{<<"a">>, A}, {<<"b">>, B}]),
    [#{cells := [_, #{verdict := no_difference, detectable := D}]}] = [R || R = #{name := <<"same">>} <- Rows],
    [#{cells := [_, Slow]}] = [R || R = #{name := <<"slow">>} <- Rows],
    ?assertMatch(#{verdict := slower}, Slow),
    ?assertNot(is_map_key(detectable, Slow)),
    %% (t(0.975, df) + t(0.8, df)) * se on the logs, df those of the repetitions
    Logs = [math:log(X) || X <- Noisy],
    #{se2 := Se2, df := Df} = beamlab_stats:welch(Logs, [L + math:log(1.01) || L <- Logs]),
    Se = math:sqrt(Se2 + 2 * math:pow(beamlab_result_compare:run_noise(), 2)),
    Expected = math:exp((beamlab_stats:t_quantile(0.975, Df) + beamlab_stats:t_quantile(0.8, Df)) * Se) - 1,
    ?assert(abs(D - Expected) < 1.0e-9),
    ?assert(D > 0.1 andalso D < 1.0),
    [Note] = [N || N <- Notes, binary:match(N, <<"catches a change 80% of the time">>) =/= nomatch],
    %% both ways, the speed-up the mirror of the slowdown on the log scale
    Both = iolist_to_binary(io_lib:format("same (b) -~b%/+~b%", [round(100 * D / (1 + D)), round(100 * D)])),
    ?assertNotEqual(nomatch, binary:match(Note, Both)),
    ?assertNotEqual(nomatch, binary:match(Note, <<"check --against REF">>)),
    ?assertNotEqual(nomatch, binary:match(Note, <<"separately measured runs">>)),
    %% A matrix's configurations were measured interleaved: the note says
    %% so, and asks for more fresh VMs, not for an interleaved design.
    {ok, #{notes := INotes}} = beamlab_result_compare:compare([{<<"a">>, A}, {<<"b">>, B}],
                                                              #{interleaved => true}),
    [INote] = [N || N <- INotes, binary:match(N, <<"catches a change 80% of the time">>) =/= nomatch],
    ?assertNotEqual(nomatch, binary:match(INote, <<"configurations measured interleaved">>)),
    ?assertEqual(nomatch, binary:match(INote, <<"separately measured">>)),
    ?assertEqual(nomatch, binary:match(INote, <<"check --against REF">>)),
    %% Two single runs: within-run only, nothing about what they could see.
    {ok, #{rows := SRows}} = beamlab_result_compare:compare([{<<"a">>, result([bench(<<"same">>, Noisy)], #{}, bench)},
                                                             {<<"b">>, result([bench(<<"same">>, Noisy)], #{}, bench)}]),
    ?assertEqual([], [C || #{cells := Cs} <- SRows, C <- Cs, is_map_key(detectable, C)]).

%% #35: every format that prints the `~' says what it could have seen: the
%% CSV's `detectable' column (the fraction, before the verdict, which stays
%% the last column), the text and Markdown notes (both ways), JSON's cell.
detectable_in_every_format_test() ->
    Noisy = [100.0, 108.0, 93.0, 104.0, 97.0],
    A = result([bench(<<"same">>, Noisy)]),
    B = result([bench(<<"same">>, [X * 1.01 || X <- Noisy])]),
    {ok, Cmp} = beamlab_result_compare:compare([{<<"a">>, A}, {<<"b">>, B}]),
    [#{cells := [_, #{detectable := D}]}] = maps:get(rows, Cmp),
    Text = beamlab_format_units:detectable(D),
    ?assertEqual(lists:flatten(io_lib:format("-~b%/+~b%", [round(100 * D / (1 + D)), round(100 * D)])), Text),
    {ok, [Header, Row]} = beamlab_csv_decoder:decode(iolist_to_binary(beamlab_render_compare:render(Cmp, csv))),
    #{<<"detectable">> := Csv} = maps:from_list(lists:zip(Header, Row)),
    ?assert(abs(binary_to_float(Csv) - D) < 1.0e-9),
    ?assertEqual(<<"no_difference">>, lists:last(Row)),
    [?assertNotEqual(nomatch, binary:match(iolist_to_binary(beamlab_render_compare:render(Cmp, F)),
                                           list_to_binary(Text)))
     || F <- [text, markdown]],
    {ok, #{<<"rows">> := [#{<<"cells">> := [_, #{<<"detectable">> := J}]}]}} =
        beamlab_json:decode(beamlab_render_compare:render(Cmp, json)),
    ?assert(abs(J - D) < 1.0e-9).

%% #35 (robust37): two matrices of CPU time (each value one fresh VM's
%% fastest sample, the means kept in `vm_means'), the baseline with one
%% VM slowed 2.2x as a whole: that VM is left out of its run before the
%% test (`welch_log_robust'), so +20% is `slower'; the JSON counts it and
%% a note says so. Wall-clock values (means) keep the plain test.
robust_vms_test() ->
    Matrix = fun(Vals, Metric, Extra) ->
                     B = beamlab_result:benchmark(<<"x">>, Vals, #{group => <<"+S 1">>, metric => Metric,
                                                                   unit => <<"ns">>, better => lower,
                                                                   extra => Extra}),
                     result([B], #{}, matrix)
             end,
    BaseVals = [3500.0, 3560.0, 7700.0, 3480.0, 3530.0],
    NewVals = [4200.0, 4272.0, 4176.0, 4236.0, 4188.0],
    Cpu = fun(Vals) -> Matrix(Vals, <<"cpu">>, #{<<"vm_means">> => [V * 1.1 || V <- Vals]}) end,
    {ok, Cmp} = beamlab_result_compare:compare([{<<"A">>, Cpu(BaseVals)}, {<<"B">>, Cpu(NewVals)}]),
    [#{cells := [_, Cell]}] = maps:get(rows, Cmp),
    ?assertMatch(#{test := welch_log_robust, rejected_base := 1, rejected_new := 0, verdict := slower,
                   basis := runs}, Cell),
    ?assertNotEqual(nomatch, binary:match(iolist_to_binary(maps:get(notes, Cmp)),
                                          <<"fresh VMs left out of the change and its test">>)),
    Json = iolist_to_binary(beamlab_render_compare:render(Cmp, json)),
    ?assertNotEqual(nomatch, binary:match(Json, <<"\"rejected_base\":1">>)),
    ?assertNotEqual(nomatch, binary:match(Json, <<"welch_log_robust">>)),
    Time = fun(Vals) -> Matrix(Vals, <<"time">>, #{<<"vm_fastest">> => Vals}) end,
    {ok, TCmp} = beamlab_result_compare:compare([{<<"A">>, Time(BaseVals)}, {<<"B">>, Time(NewVals)}]),
    [#{cells := [_, TCell]}] = maps:get(rows, TCmp),
    ?assertMatch(#{test := welch_log, verdict := no_difference}, TCell),
    ?assertNot(maps:is_key(rejected_base, TCell)).
