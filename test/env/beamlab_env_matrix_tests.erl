-module(beamlab_env_matrix_tests).
-include_lib("eunit/include/eunit.hrl").

names(Cs) -> [maps:get(name, C) || C <- Cs].

configs_test() ->
    {ok, Cs} = beamlab_env_matrix:configs(#{vm => ["+S 1", "+S 2  +sbt db"]}),
    ?assertEqual([<<"+S 1">>, <<"+S 2 +sbt db">>], names(Cs)),
    ?assertMatch([#{args := ["+S", "1"], erl := undefined, wrap := undefined} | _], Cs),
    {ok, Sweep} = beamlab_env_matrix:configs(#{sweep => [1, 2, 4]}),
    ?assertEqual([<<"+S 1:1">>, <<"+S 2:2">>, <<"+S 4:4">>], names(Sweep)),
    {ok, [D]} = beamlab_env_matrix:configs(#{}),
    ?assertEqual(<<"default">>, maps:get(name, D)),
    Erl = os:find_executable("erl"),
    {ok, Cross} = beamlab_env_matrix:configs(#{vm => ["+S 1", "+S 2"], erl => [Erl],
                                               wrap => ["none", "env"]}),
    ?assertEqual(4, length(Cross)),
    ?assertEqual(<<"+S 2 erl=", (list_to_binary(Erl))/binary, " wrap=env">>, lists:last(names(Cross))).

configs_errors_test() ->
    ?assertEqual({error, {wrapper_not_found, "no-such-wrapper-xyz"}},
                 beamlab_env_matrix:configs(#{wrap => ["no-such-wrapper-xyz -c 0"]})),
    ?assertEqual({error, {erl_not_found, "/nonexistent/bin/erl"}},
                 beamlab_env_matrix:configs(#{erl => ["/nonexistent/bin/erl"]})),
    ?assertEqual({error, {duplicate_config, <<"+S 1">>}},
                 beamlab_env_matrix:configs(#{vm => ["+S 1", "+S  1"]})),
    ?assertNotEqual([], beamlab_env_matrix:format_error({wrapper_not_found, "x"})).

parse_range_test_() ->
    [?_assertEqual({ok, [1, 2, 3, 4]}, beamlab_env_matrix:parse_range("1..4")),
     ?_assertEqual({ok, [1, 2, 4]}, beamlab_env_matrix:parse_range("4,1,2")),
     ?_assertMatch({ok, [1 | _]}, beamlab_env_matrix:parse_range("1..max")),
     ?_assertEqual({error, {bad_range, "0..2"}}, beamlab_env_matrix:parse_range("0..2")),
     ?_assertEqual({error, {bad_range, "a..b"}}, beamlab_env_matrix:parse_range("a..b"))].

read_grid_test() ->
    File = filename:join(beamlab_test_util:tmp_dir("grid"), "grid.config"),
    ok = file:write_file(File, "{vm, \"+S 1\"}.\n{vm, \"+S 2\"}.\n{sweep, \"3..4\"}.\n"
                               "{baseline, \"+S 2\"}.\n{repeat, 4}.\n{command, [\"run\", \"ok.\"]}.\n"),
    ?assertEqual({ok, #{vm => ["+S 1", "+S 2"], sweep => [3, 4], baseline => <<"+S 2">>,
                        repeat => 4, command => ["run", "ok."]}},
                 beamlab_env_matrix:read_grid(File)),
    ok = file:write_file(File, "{colour, blue}.\n"),
    ?assertEqual({error, {bad_grid_term, {colour, blue}}}, beamlab_env_matrix:read_grid(File)),
    ok = file:write_file(File, "{vm, \"+S 1\"\n"),
    ?assertMatch({error, {grid_file, _, _}}, beamlab_env_matrix:read_grid(File)),
    file:delete(File).

%% A runner that records the call order and answers like a VM with
%% K schedulers whose throughput is 100 * K (+ a little noise).
fake_runner(Log) ->
    fun(#{name := <<"broken">>}, _Argv) ->
            Log ! {ran, <<"broken">>},
            {error, {vm_start, timeout}};
       (#{name := Name, args := ["+S", KK]}, Argv) ->
            Log ! {ran, Name},
            ["run", "x"] = Argv,
            K = list_to_integer(hd(string:split(KK, ":"))),
            V = 100.0 * K + rand:uniform(),
            {ok, #{exit => 0, env => #{schedulers => #{online => K}},
                   result => #{benchmarks => [#{name => <<"x">>, unit => <<"ops/s">>,
                                                better => <<"higher">>,
                                                stats => #{mean => V}}]}}}
    end.

collect(Acc) ->
    receive {ran, N} -> collect([N | Acc])
    after 0 -> lists:reverse(Acc)
    end.

interleaved_and_failures_test() ->
    {ok, Cs} = beamlab_env_matrix:configs(#{sweep => [1, 2]}),
    Broken = #{name => <<"broken">>, args => [], erl => undefined, wrap => undefined},
    Spec = #{configs => Cs ++ [Broken], command => ["run", "x"], repeat => 3, sweep => true,
             argv => ["matrix", "--", "run", "x"], started_at => <<"2026-01-01T00:00:00Z">>,
             inner => {erlang, error, [not_called]}},
    {ok, R} = beamlab_env_matrix:run(Spec, #{runner => fake_runner(self())}),
    %% A1 B1 C1 A2 B2 A3 B3: interleaved, the broken VM is not retried
    ?assertEqual([<<"+S 1:1">>, <<"+S 2:2">>, <<"broken">>,
                  <<"+S 1:1">>, <<"+S 2:2">>, <<"+S 1:1">>, <<"+S 2:2">>], collect([])),
    #{kind := matrix, benchmarks := [B1, B2], params := #{<<"baseline">> := <<"+S 1:1">>},
      extra := #{<<"configs">> := [_, _, BrokenInfo]}, partial := false} = R,
    ?assertEqual(3, length(maps:get(samples, B1))),
    ?assertNot(maps:is_key(comparison, B1)),
    ?assertMatch(#{comparison := #{verdict := faster}}, B2),
    #{extra := #{<<"speedup">> := S, <<"efficiency">> := E, <<"schedulers_online">> := 2}} = B2,
    ?assert(S > 1.98 andalso S < 2.02),
    ?assert(E > 0.99 andalso E < 1.01),
    ?assertMatch(#{<<"status">> := <<"failed">>, <<"runs">> := 1, <<"ok_runs">> := 0, <<"env">> := null,
                   <<"errors">> := [<<"the VM did not start: timeout">>]}, BrokenInfo),
    Text = unicode:characters_to_binary(beamlab_render_matrix:render(R, #{unicode => false})),
    io:format(user, "~ts", [Text]),
    [?assertNotEqual(nomatch, binary:match(Text, P))
     || P <- [<<"speedup">>, <<"efficiency">>, <<"baseline">>, <<"faster">>,
              <<"broken: the VM did not start: timeout">>]],
    %% the document survives JSON
    {ok, Json} = beamlab_json:decode(iolist_to_binary(beamlab_result:to_json(R))),
    {ok, #{kind := matrix}} = beamlab_result:from_json(Json).

unknown_baseline_test() ->
    {ok, Cs} = beamlab_env_matrix:configs(#{vm => ["+S 1"]}),
    ?assertEqual({error, {unknown_baseline, <<"+S 9">>}},
                 beamlab_env_matrix:run(#{configs => Cs, command => ["run", "x"], repeat => 1,
                                          argv => ["matrix"], started_at => <<"2026-01-01T00:00:00Z">>,
                                          inner => {erlang, error, [not_called]},
                                          baseline => <<"+S 9">>}, #{runner => fake_runner(self())})).

%% #35: the repetitions' load findings join the matrix document (one per
%% id, the worst, with how many repetitions raised it), so a compare of
%% two matrices measured on a loaded machine is `inconclusive_load' like
%% a compare of runs, unless far outside the noise and not the way the load
%% pushes (the loaded matrix slower).
load_finding_test() ->
    {ok, Cs} = beamlab_env_matrix:configs(#{vm => ["+S 1"]}),
    Loaded = fun(Factor) ->
                     Count = counters:new(1, []),
                     fun(_C, _Argv) ->
                             ok = counters:add(Count, 1, 1),
                             Rep = counters:get(Count, 1),
                             F = beamlab_result:finding(load_high, case Rep of 2 -> critical; _ -> warning end,
                                                        "Machine is overloaded",
                                                        io_lib:format("load ~b", [Rep]), "stop it", #{}),
                             Mean = Factor * lists:nth(Rep, [10.0, 10.5, 9.5]),
                             {ok, #{exit => 0, env => #{schedulers => #{online => 1}},
                                    result => #{findings => [F],
                                                benchmarks => [#{name => <<"x">>, unit => <<"ms">>,
                                                                 better => lower,
                                                                 stats => #{mean => Mean}}]}}}
                     end
             end,
    Spec = #{configs => Cs, command => ["run", "x"], repeat => 3,
             argv => ["matrix"], started_at => <<"2026-01-01T00:00:00Z">>,
             inner => {erlang, error, [not_called]}},
    {ok, A} = beamlab_env_matrix:run(Spec, #{runner => Loaded(1.0)}),
    [#{id := <<"load_high">>, severity := critical, evidence := Ev}] = maps:get(findings, A),
    ?assertMatch({match, _}, re:run(Ev, "^3 of 3 repetitions; worst \\[\\+S 1\\] rep 2: load 2")),
    ?assert(beamlab_result_compare:overloaded(A)),
    Verdict = fun(Factor, Which) ->
                      {ok, B} = beamlab_env_matrix:run(Spec, #{runner => Loaded(Factor)}),
                      Q = fun(D) -> D#{findings := []} end,
                      Pair = case Which of
                                 true -> [Q(A), Q(B)];       % both quiet
                                 false -> [A, B];            % both loaded
                                 base_loaded -> [A, Q(B)]
                             end,
                      {ok, #{rows := [#{cells := [_, Cell]}]}} =
                          beamlab_result_compare:compare(lists:zip([<<"a">>, <<"b">>], Pair)),
                      ?assertEqual(runs, maps:get(basis, Cell)),
                      maps:get(verdict, Cell)
              end,
    %% +20%: significant at 95% (with the run-to-run noise of two
    %% separate matrices), not at 99.9%
    ?assertEqual(slower, Verdict(1.2, true)),
    ?assertEqual(inconclusive_load, Verdict(1.2, false)),
    %% +50%: far outside the noise, but the loaded new matrix is the
    %% slower one: the load explains that direction at any size
    ?assertEqual(inconclusive_load, Verdict(1.5, false)),
    %% ... a quiet new matrix slower than a loaded baseline: not the load's
    %% doing; +50% is not far enough with 3 VMs a side (#35: the
    %% between-run term keeps the repetitions' 4 df, whose 99.9% t is
    %% 8.6), +80% is far outside the noise: a verdict
    ?assertEqual(inconclusive_load, Verdict(1.5, base_loaded)),
    ?assertEqual(slower, Verdict(1.8, base_loaded)),
    %% the finding survives JSON
    {ok, Json} = beamlab_json:decode(iolist_to_binary(beamlab_result:to_json(A))),
    {ok, #{findings := [#{id := <<"load_high">>}]}} = beamlab_result:from_json(Json).

%% #35: the matrix's own verdict against its baseline configuration is
%% load-aware as a compare of two matrices is: with the repetitions'
%% `load_high', +20% in time is `inconclusive_load', +50% stands; a
%% load-independent unit (reductions) keeps its verdict; quiet, +20% is
%% `slower'.
own_verdict_load_aware_test() ->
    {ok, Cs} = beamlab_env_matrix:configs(#{vm => ["+S 1", "+S 2"]}),
    Runner = fun(Factor, Unit, Load) ->
                     Counts = ets:new(counts, [public]),
                     fun(#{name := Name}, _Argv) ->
                             Rep = ets:update_counter(Counts, Name, 1, {Name, 0}),
                             F = [beamlab_result:finding(load_high, warning, "Machine is overloaded", "e", "a", #{})
                                  || Load],
                             Scale = case Name of <<"+S 2">> -> Factor; _ -> 1.0 end,
                             {ok, #{exit => 0, env => #{schedulers => #{online => 1}},
                                    result => #{findings => F,
                                                benchmarks => [#{name => <<"x">>, unit => Unit, better => lower,
                                                                 stats => #{mean => Scale * lists:nth(Rep, [10.0, 10.3, 9.7])}}]}}}
                     end
             end,
    Verdict = fun(Factor, Unit, Load) ->
                      Spec = #{configs => Cs, command => ["run", "x"], repeat => 3, baseline => <<"+S 1">>,
                               argv => ["matrix"], started_at => <<"2026-01-01T00:00:00Z">>,
                               inner => {erlang, error, [not_called]}},
                      {ok, #{benchmarks := Bs}} = beamlab_env_matrix:run(Spec, #{runner => Runner(Factor, Unit, Load)}),
                      [V] = [V || #{group := <<"+S 2">>, comparison := #{verdict := V}} <- Bs],
                      V
              end,
    ?assertEqual(slower, Verdict(1.2, <<"ms">>, false)),
    ?assertEqual(inconclusive_load, Verdict(1.2, <<"ms">>, true)),
    ?assertEqual(slower, Verdict(1.5, <<"ms">>, true)),
    ?assertEqual(slower, Verdict(1.2, <<"reductions">>, true)).

%% #35 `--ci': a runner whose values are given per configuration, in turn.
values_runner(Values) ->
    Counter = counters:new(1, []),
    fun(#{name := Name}, _Argv) ->
            ok = counters:add(Counter, 1, 1),
            Vs = maps:get(Name, Values),
            V = lists:nth((counters:get(Counter, 1) - 1) rem length(Vs) + 1, Vs),
            {ok, #{exit => 0, env => #{},
                   result => #{benchmarks => [#{name => <<"x">>, unit => <<"ns">>, better => <<"lower">>,
                                                stats => #{mean => V}}]}}}
    end.

%% #35: a fresh VM of CPU time per iteration stands for its fastest sample
%% (beamlab_result_compare:run_level/1), its mean kept in `vm_means'; a
%% VM of wall-clock time for its mean, its fastest sample kept in
%% `vm_fastest'; the text says which.
fastest_sample_test() ->
    {Cpu, Time} = cpu_and_time(),
    #{benchmarks := [#{samples := [100.0, 98.0], extra := #{<<"vm_means">> := CpuMeans} = CX}]} = Cpu,
    ?assertEqual([334.0 / 3, 357.0 / 3], CpuMeans),
    ?assertNot(maps:is_key(<<"vm_fastest">>, CX)),
    #{benchmarks := [#{samples := TimeMeans, extra := #{<<"vm_fastest">> := [100.0, 98.0]} = TX}]} = Time,
    ?assertEqual([334.0 / 3, 357.0 / 3], TimeMeans),
    ?assertNot(maps:is_key(<<"vm_means">>, TX)),
    Text = fun(R) -> unicode:characters_to_binary(beamlab_render_matrix:render(R, #{unicode => false})) end,
    ?assertNotEqual(nomatch, binary:match(Text(Cpu), <<"each value is one fresh VM's fastest sample">>)),
    ?assertNotEqual(nomatch, binary:match(Text(Time), <<"each value is one fresh VM's mean">>)).

%% #35: every output names what a matrix's values are as the document
%% records it (beamlab_result_compare:vm_level/1): the text's column, the
%% Markdown's line and column, the CSV's `vm_value', github-*'s `extra' and
%% the report's chart data; a wall-clock matrix says "mean" as before.
vm_value_words_test() ->
    {Cpu, Time} = cpu_and_time(),
    Has = fun(Doc, Fmt, Word) ->
                  {ok, Out} = beamlab_render_view:render(Doc, Fmt, #{unicode => false, color => false}),
                  binary:match(unicode:characters_to_binary(Out), Word) =/= nomatch
          end,
    ?assert(Has(Cpu, text, <<"mean of fastest">>)),
    ?assertNot(Has(Time, text, <<"fastest">>)),
    ?assert(Has(Time, text, <<"  mean  ">>)),
    ?assert(Has(Cpu, markdown, <<"Each value is one fresh VM's fastest sample.">>)),
    ?assert(Has(Cpu, markdown, <<"| Mean of fastest |">>)),
    ?assert(Has(Time, markdown, <<"| Mean |">>)),
    ?assertNot(Has(Time, markdown, <<"fastest">>)),
    ?assert(Has(Cpu, csv, <<",vm_value\r\n">>)),
    ?assert(Has(Cpu, csv, <<",fastest sample\r\n">>)),
    ?assert(Has(Time, csv, <<",mean\r\n">>)),
    ?assert(Has(Cpu, 'github-smaller', <<"n=2 (one fastest sample per fresh VM)">>)),
    ?assert(Has(Time, 'github-smaller', <<"n=2 (one mean per fresh VM)">>)),
    Value = fun(Doc) -> #{rows := [#{value := V}]} = beamlab_report_views:matrix(Doc), V end,
    ?assertEqual(<<"fastest sample">>, Value(Cpu)),
    ?assertEqual(<<"mean">>, Value(Time)),
    %% a document without configurations (not a matrix's) names no VM
    ?assertNot(Has(Cpu#{extra := #{}}, csv, <<",fastest sample\r\n">>)),
    ?assertNot(Has(Cpu#{extra := #{}}, 'github-smaller', <<"per fresh VM">>)).

%% One configuration, two fresh VMs, run on CPU time and on wall-clock time.
cpu_and_time() ->
    {ok, Cs} = beamlab_env_matrix:configs(#{vm => ["+S 1"]}),
    Samples = [[100.0, 130.0, 104.0], [98.0, 99.0, 160.0]],
    Runner = fun(Metric) ->
                     Count = counters:new(1, []),
                     fun(_, _Argv) ->
                             ok = counters:add(Count, 1, 1),
                             S = lists:nth(counters:get(Count, 1), Samples),
                             {ok, #{exit => 0, env => #{},
                                    result => #{benchmarks => [#{name => <<"x">>, unit => <<"ns">>, better => <<"lower">>,
                                                                 metric => Metric, samples => S}]}}}
                     end
             end,
    Spec = #{configs => Cs, command => ["run", "x"], repeat => 2, argv => ["matrix"],
             started_at => <<"2026-01-01T00:00:00Z">>, inner => {erlang, error, [not_called]}},
    {ok, Cpu} = beamlab_env_matrix:run(Spec, #{runner => Runner(<<"cpu">>)}),
    {ok, Time} = beamlab_env_matrix:run(Spec, #{runner => Runner(<<"time">>)}),
    {Cpu, Time}.

ci_spec(Extra) ->
    {ok, Cs} = beamlab_env_matrix:configs(#{vm => ["+S 1"]}),
    maps:merge(#{configs => Cs, command => ["run", "x"], repeat => 1, argv => ["matrix"],
                 started_at => <<"2026-01-01T00:00:00Z">>, inner => {erlang, error, [not_called]}}, Extra).

%% Steady values meet 5% once there are 3 of them: -n 1 becomes 3 rounds,
%% stopped as confident.
ci_converged_test() ->
    {ok, R} = beamlab_env_matrix:run(ci_spec(#{ci => 0.05, max_time => 600000}),
                                     #{runner => values_runner(#{<<"+S 1">> => [100.0, 101.0, 99.0]})}),
    #{benchmarks := [#{samples := S}], params := #{<<"ci">> := 0.05, <<"max_time">> := 600000},
      extra := #{<<"stopped_by">> := <<"converged">>, <<"unconfident">> := []}} = R,
    ?assertEqual(3, length(S)).

%% Values that never agree and no budget: stopped after the least rounds
%% as `max_time', the configuration named.
ci_budget_test() ->
    {ok, R} = beamlab_env_matrix:run(ci_spec(#{ci => 0.01, max_time => 1, repeat => 2}),
                                     #{runner => values_runner(#{<<"+S 1">> => [10.0, 1000.0]})}),
    #{benchmarks := [#{name := Name, samples := S}],
      extra := #{<<"stopped_by">> := <<"max_time">>, <<"unconfident">> := [Name]}} = R,
    %% (the budget is judged after the least rounds: at least 2)
    ?assert(length(S) >= 2),
    Text = unicode:characters_to_binary(beamlab_render_matrix:render(R, #{unicode => false})),
    ?assertNotEqual(nomatch, binary:match(Text, <<"stopped: budget spent before +/-1% (--max-time; "
                                                  "not within it: +S 1 / x)">>)).

%% Without --ci nothing changes: -n rounds, no stop reason.
ci_absent_test() ->
    {ok, R} = beamlab_env_matrix:run(ci_spec(#{repeat => 2}),
                                     #{runner => values_runner(#{<<"+S 1">> => [10.0, 1000.0]})}),
    #{benchmarks := [#{samples := [_, _]}], extra := Extra, params := P} = R,
    ?assertNot(maps:is_key(<<"stopped_by">>, Extra)),
    ?assertNot(maps:is_key(<<"ci">>, P)).

%% The matrix's own verdict between configurations and `compare M.json'
%% (beamlab_result_compare:configurations/1, interleaved) are one rule:
%% 99%, no between-run term (the configurations ran in the same rounds).
own_verdict_is_compare_test() ->
    {ok, Cs} = beamlab_env_matrix:configs(#{vm => ["+S 1", "+S 2"]}),
    Means = #{<<"+S 1">> => [10.0, 10.2, 9.9, 10.1], <<"+S 2">> => [10.9, 11.3, 10.8, 11.2]},
    Runner = fun() ->
                     Count = counters:new(1, []),
                     fun(#{name := Name}, _Argv) ->
                             ok = counters:add(Count, 1, 1),
                             Rep = (counters:get(Count, 1) + 1) div 2,
                             {ok, #{exit => 0, env => #{schedulers => #{online => 1}},
                                    result => #{findings => [],
                                                benchmarks => [#{name => <<"x">>, unit => <<"ms">>, better => lower,
                                                                 stats => #{mean => lists:nth(Rep, maps:get(Name, Means))}}]}}}
                     end
             end,
    Spec = #{configs => Cs, command => ["run", "x"], repeat => 4, baseline => <<"+S 2">>,
             argv => ["matrix"], started_at => <<"2026-01-01T00:00:00Z">>,
             inner => {erlang, error, [not_called]}},
    {ok, Doc} = beamlab_env_matrix:run(Spec, #{runner => Runner()}),
    [#{comparison := Own}] = [B || #{group := <<"+S 1">>} = B <- maps:get(benchmarks, Doc)],
    ?assertMatch(#{confidence := 0.99, verdict := faster}, Own),
    %% Through JSON, as `beamlab compare M.json' reads it.
    {ok, Json} = beamlab_json:decode(iolist_to_binary(beamlab_result:to_json(Doc))),
    {ok, Loaded} = beamlab_result:from_json(Json),
    {ok, [{<<"+S 2">>, _}, {<<"+S 1">>, _}] = Runs} = beamlab_result_compare:configurations(Loaded),
    {ok, #{rows := [#{name := <<"x">>, cells := [_, Cell]}], run_noise := +0.0}} =
        beamlab_result_compare:compare(Runs, #{interleaved => true}),
    #{change := C, ci := {Lo, Hi}} = Own,
    ?assertMatch(#{verdict := faster, basis := runs}, Cell),
    ?assert(abs(maps:get(change, Cell) - C) < 1.0e-12),
    [CLo, CHi] = maps:get(ci, Cell),
    ?assert(abs(CLo - Lo) < 1.0e-12 andalso abs(CHi - Hi) < 1.0e-12),
    %% Two separately measured matrices would add the between-run term.
    {ok, #{rows := [#{cells := [_, Apart]}]}} = beamlab_result_compare:compare(Runs),
    [ALo, AHi] = maps:get(ci, Apart),
    ?assert(ALo < Lo andalso AHi > Hi),
    ?assertEqual({error, not_a_matrix},
                 beamlab_result_compare:configurations(beamlab_result:new(bench, #{command => [], started_at => <<"2026-01-01T00:00:00Z">>}))).

%% #35 (robust37): the matrix's own verdict of CPU time leaves out, in
%% each configuration on its own, the fresh VMs far from the others (one
%% VM of the baseline slowed 2.2x as a whole, every sample): +20% is
%% `slower' by `welch_log_robust', the document and the text say which
%% VM was left out; the same values in wall-clock time keep the plain test.
own_verdict_robust_test() ->
    {ok, Cs} = beamlab_env_matrix:configs(#{vm => ["+S 1", "+S 2"]}),
    Fastest = #{<<"+S 1">> => [3500.0, 3560.0, 7700.0, 3480.0, 3530.0],
                <<"+S 2">> => [4200.0, 4272.0, 4176.0, 4236.0, 4188.0]},
    Runner = fun(Metric) ->
                     Counts = ets:new(counts, [public]),
                     fun(#{name := Name}, _Argv) ->
                             Rep = ets:update_counter(Counts, Name, 1, {Name, 0}),
                             V = lists:nth(Rep, maps:get(Name, Fastest)),
                             {ok, #{exit => 0, env => #{schedulers => #{online => 1}},
                                    result => #{benchmarks => [#{name => <<"x">>, unit => <<"ns">>, better => lower,
                                                                 metric => Metric,
                                                                 samples => [V * 1.3, V, V * 1.05]}]}}}
                     end
             end,
    Spec = #{configs => Cs, command => ["run", "x"], repeat => 5, baseline => <<"+S 1">>,
             argv => ["matrix"], started_at => <<"2026-01-01T00:00:00Z">>, inner => {erlang, error, [not_called]}},
    {ok, #{benchmarks := Bs} = Doc} = beamlab_env_matrix:run(Spec, #{runner => Runner(<<"cpu">>)}),
    [C] = [C || #{group := <<"+S 2">>, comparison := C} <- Bs],
    ?assertMatch(#{test := welch_log_robust, rejected_base := 1, rejected_new := 0, verdict := slower}, C),
    Text = unicode:characters_to_binary(beamlab_render_matrix:render(Doc, #{unicode => false})),
    ?assertNotEqual(nomatch, binary:match(Text, <<"fresh VMs left out of the change and verdict">>)),
    ?assertNotEqual(nomatch, binary:match(Text, <<"+S 2 / x: 1 of the baseline, 0 of this configuration">>)),
    ?assertNotEqual(nomatch, binary:match(beamlab_render_markdown:render(Doc), <<"fresh VMs left out of the change and verdict">>)),
    %% the document's comparison survives JSON
    {ok, Json} = beamlab_json:decode(iolist_to_binary(beamlab_result:to_json(Doc))),
    {ok, #{benchmarks := Bs2}} = beamlab_result:from_json(Json),
    ?assertMatch([#{test := welch_log_robust, rejected_base := 1}],
                 [C2 || #{group := <<"+S 2">>, comparison := C2} <- Bs2]),
    {ok, #{benchmarks := TBs}} = beamlab_env_matrix:run(Spec, #{runner => Runner(<<"time">>)}),
    [TC] = [TC || #{group := <<"+S 2">>, comparison := TC} <- TBs],
    ?assertMatch(#{test := welch_log}, TC),
    ?assertNot(maps:is_key(rejected_base, TC)).

%% #35: a CPU matrix interrupted before any repetition finished has no
%% benchmark to say what its values are: its document records the metric
%% (`params.metric'), and the text and Markdown say fastest samples as a
%% complete one's do (beamlab_result_compare:vm_levels/1); a wall-clock
%% one says mean.
nothing_measured_words_test() ->
    {ok, Cs} = beamlab_env_matrix:configs(#{vm => ["+S 1"]}),
    Failing = fun(_, _Argv) -> {error, boom} end,
    Spec = #{configs => Cs, command => ["run", "x"], repeat => 1, argv => ["matrix"],
             started_at => <<"2026-01-01T00:00:00Z">>, inner => {erlang, error, [not_called]}},
    Doc = fun(Metric) ->
                  {_, D} = beamlab_env_matrix:run(Spec#{metric => Metric}, #{runner => Failing}),
                  #{benchmarks := []} = D
          end,
    Cpu = Doc(cpu),
    ?assertMatch(#{params := #{<<"metric">> := <<"cpu">>}}, Cpu),
    ?assertEqual([fastest], beamlab_result_compare:vm_levels(Cpu)),
    ?assertEqual([mean], beamlab_result_compare:vm_levels(Doc(time))),
    Text = unicode:characters_to_binary(beamlab_render_matrix:render(Cpu, #{unicode => false})),
    ?assertNotEqual(nomatch, binary:match(Text, <<"each value is one fresh VM's fastest sample">>)),
    ?assertNotEqual(nomatch, binary:match(Text, <<"mean of fastest">>)),
    ?assertNotEqual(nomatch, binary:match(beamlab_render_markdown:render(Cpu), <<"Each value is one fresh VM's fastest sample.">>)).
