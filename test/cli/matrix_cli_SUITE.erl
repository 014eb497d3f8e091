%%% Common Test suite for `beamlab matrix' through the built escript: real
%%% suite workloads in fresh VMs per configuration, the scheduler count each
%%% VM reported itself, the sweep's speedup/efficiency columns (checked for
%%% consistency with the means, never for size: the machine is shared), a
%%% configuration whose VM refuses its flags, and `-v' (telemetry and
%%% findings in the document) for `matrix' and `suite'.
-module(matrix_cli_SUITE).
-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-export([all/0, suite/0]).
-export([vm_configs_text/1, sweep_json/1, sweep_text_verbose/1, failing_config/1, suite_verbose/1]).
-export([ci_budget_spent/1, ci_confident/1, ci_bad_values/1, metric_cpu/1,
         matrix_value_words/1]).

%% big: many-to-many messaging, which uses every scheduler; small enough
%% that one repetition takes well under a second.
-define(BIG, ["suite", "big", "--param", "big.n=100", "--param", "big.m=200", "-n", "2"]).

suite() -> [{timetrap, {minutes, 5}}].

all() ->
    [vm_configs_text, sweep_json, sweep_text_verbose, failing_config, suite_verbose,
     ci_budget_spent, ci_confident, ci_bad_values, metric_cpu, matrix_value_words].

%%--------------------------------------------------------------------

vm_configs_text(_Config) ->
    #{code := 0, out := Out, err := Err} =
        cli(["matrix", "--vm", "+S 1", "--vm", "+S 2", "-n", "2", "--" | ?BIG]),
    ?assertMatch({match, _}, re:run(Out, "^2 repetitions per configuration, interleaved; baseline \\+S 1;",
                                    [multiline])),
    Header = row(Out, "configuration"),
    ?assertEqual("schedulers", lists:last(Header)),
    ?assertNot(lists:member("speedup", Header)),
    %% The last column is the scheduler count the configuration's VM reported.
    ["+S 1", "big" | R1] = row(Out, "+S 1"),
    ?assertEqual("1", lists:last(R1)),
    ?assert(lists:member("baseline", R1)),
    ["+S 2", "big" | R2] = row(Out, "+S 2"),
    ?assertEqual("2", lists:last(R2)),
    %% Each of the four fresh VMs said how many schedulers it had.
    ?assertEqual(2, count(Err, "\\[\\+S 1\\] rep [12]/2 done \\(1 scheduler online, jit flavour\\)")),
    ?assertEqual(2, count(Err, "\\[\\+S 2\\] rep [12]/2 done \\(2 schedulers online, jit flavour\\)")).

sweep_json(_Config) ->
    #{code := 0, out := Out} =
        cli(["matrix", "--sweep-schedulers", "1..2", "-n", "2", "--format", "json", "--" | ?BIG]),
    check_sweep(json(Out)).

%% The text of a sweep shows speedup and efficiency; with -v the saved
%% document of the same run carries the telemetry and the findings.
sweep_text_verbose(_Config) ->
    #{code := 0, out := Out, err := Err, dir := Dir} =
        cli(["matrix", "--sweep-schedulers", "1..2", "-n", "2", "-v", "--save", "m.json", "--" | ?BIG]),
    {ok, Saved} = file:read_file(filename:join(Dir, "m.json")),
    Doc = json(Saved),
    check_sweep(Doc),
    #{<<"benchmarks">> := [_, #{<<"extra">> := #{<<"speedup">> := S, <<"efficiency">> := E}}]} = Doc,
    ?assertEqual(["schedulers", "speedup", "efficiency"], lists:nthtail(7, row(Out, "configuration"))),
    ?assertEqual(["1", "1.00x", "100%"], lists:nthtail(length(row(Out, "+S 1:1")) - 3, row(Out, "+S 1:1"))),
    ?assertEqual(["2", fmt("~.2fx", [S]), fmt("~b%", [round(100 * E)])],
                 lists:nthtail(length(row(Out, "+S 2:2")) - 3, row(Out, "+S 2:2"))),
    %% Live telemetry went to stderr, and into the document.
    ?assertMatch({match, _}, re:run(Err, "^ +time +util .*runq", [multiline])),
    check_verbose(Doc, <<"matrix">>, "repetitions per configuration \\(-n\\)"),
    #{<<"findings">> := Fs} = Doc,
    %% The matrix's own detector counts its fresh VMs as beamlab's own
    %% processes, never as others (others, if any competed, are measured
    %% apart from beamlab's tree); a repetition's finding (kept by the
    %% matrix, #35: "K of N repetitions; worst ...") is that VM's view.
    [?assertNotEqual(nomatch, binary:match(Ev, <<"beamlab's own processes'">>))
     || #{<<"id">> := <<"machine_overloaded">>, <<"evidence">> := Ev} <- Fs,
        re:run(Ev, <<"^[0-9]+ of [0-9]+ repetitions; ">>) =:= nomatch,
        binary:match(Ev, <<"other processes">>) =/= nomatch],
    [?assertNotEqual(nomatch, binary:match(Out, T)) || #{<<"title">> := T} <- Fs].

%% A VM that refuses its flags: its own error line is reported, the other
%% configuration runs and the command succeeds.
failing_config(_Config) ->
    #{code := 0, out := Out, err := Err} =
        cli(["matrix", "--vm", "+S 1", "--vm", "+S banana", "-n", "2", "--",
             "run", "code.", "-d", "100", "-s", "3"]),
    ["+S 1", "code." | R1] = row(Out, "+S 1"),
    ?assertEqual("1", lists:last(R1)),
    ?assertEqual(nomatch, re:run(Out, "^\\+S banana  ", [multiline])),
    %% "bad amount of schedulers" is what erts itself prints for +S banana.
    ?assertMatch({match, _}, re:run(Out, "^failed runs:\n\\+S banana: the VM did not start: .*"
                                         "bad amount of schedulers banana", [multiline])),
    %% It is not retried: one failed start in the progress lines.
    ?assertEqual(1, count(Err, "\\[\\+S banana\\] rep 1/2: .*bad amount of schedulers banana")),
    ?assertEqual(0, count(Err, "\\[\\+S banana\\] rep 2/2")).

%% suite -v: telemetry recorded over the whole run, findings judged with
%% the suite's advice.
suite_verbose(_Config) ->
    #{code := 0, out := Out, err := Err} =
        cli(["suite", "big", "--param", "big.variant=savina", "--param", "big.n=200", "--param", "big.m=2000", "-n", "3", "-v",
             "--format", "json"]),
    ?assertMatch({match, _}, re:run(Err, "^ +time +util .*runq", [multiline])),
    check_verbose(json(Out), <<"suite">>, "repeat it more often \\(-n\\)").

%% --ci with a budget spent before the target (1 ms: spent once the first
%% round is done, and one value per configuration has no interval): the
%% text, the saved document say so, and for which benchmarks; not an error.
ci_budget_spent(_Config) ->
    #{code := 0, out := Out, dir := Dir} =
        cli(["matrix", "--vm", "+S 1", "--vm", "+S 2", "-n", "1", "--ci", "0.1%", "--max-time", "0.001",
             "--save", "m.json", "--", "run", "lists:seq(1, 10).", "-d", "20", "-s", "3", "-w", "0"]),
    {ok, Saved} = file:read_file(filename:join(Dir, "m.json")),
    #{<<"params">> := #{<<"ci">> := Ci, <<"max_time">> := 1, <<"repeat">> := 1},
      <<"extra">> := #{<<"stopped_by">> := <<"max_time">>, <<"unconfident">> := Unmet},
      <<"benchmarks">> := Bs} = json(Saved),
    close(0.001, Ci),
    ?assertEqual(lists:sort([N || #{<<"name">> := N} <- Bs]), lists:sort(Unmet)),
    ?assertEqual([1, 1], [length(S) || #{<<"samples">> := S} <- Bs]),
    ?assertMatch({match, _}, re:run(Out, "^at least 1 repetitions per configuration \\(--ci\\)", [multiline])),
    ?assertMatch({match, _}, re:run(Out, "^stopped: budget spent before (\\+/-|±)0.1% \\(--max-time; not within it: "
                                         "\\+S 1 / lists:seq\\(1, 10\\)\\., \\+S 2 / ", [multiline, unicode])).

%% --ci with a target the fresh VMs' means reach (99%) and a budget that
%% is never the limit: more rounds than -n, stopped as confident, and
%% every configuration's interval is within the target.
ci_confident(_Config) ->
    #{code := 0, out := Out, dir := Dir} =
        cli(["matrix", "--vm", "+S 1", "-n", "2", "--ci", "99%", "--max-time", "600", "--save", "c.json",
             "--", "run", "lists:seq(1, 10).", "-d", "20", "-s", "3", "-w", "0"]),
    %% the text says what ended it (#35), the saved document too
    ?assertMatch({match, _}, re:run(Out, "^stopped: confident \\(every 95% interval within (\\+/-|±)99% of its "
                                         "estimate\\)", [multiline, unicode])),
    {ok, Saved} = file:read_file(filename:join(Dir, "c.json")),
    #{<<"extra">> := #{<<"stopped_by">> := <<"converged">>, <<"unconfident">> := []},
      <<"benchmarks">> := [#{<<"samples">> := S, <<"stats">> := #{<<"mean">> := M, <<"ci_mean">> := [Lo, Hi]}}]} =
        json(Saved),
    ?assert(length(S) >= 3),
    ?assert(Hi / M - 1 =< 0.99 andalso 1 - Lo / M =< 0.99, {Lo, M, Hi}).

%% Bad values: one line, exit 2, before any VM starts.
ci_bad_values(_Config) ->
    Inner = ["--", "run", "ok."],
    [begin
         #{code := 2, out := <<>>, err := Err} = cli(["matrix", "--vm", "+S 1" | Args] ++ Inner),
         ?assertMatch([_], string:split(string:trim(Err), "\n", all), Err),
         ?assertMatch({match, _}, re:run(Err, Pattern), {Args, Err})
     end || {Args, Pattern} <- [{["--ci", "0"], "invalid value '0' for --ci"},
                                {["--ci", "5"], "for 5 percent write 5%"},
                                {["--max-time", "5"], "--max-time needs --ci"},
                                {["--ci", "5%", "--max-time", "0"], "invalid value '0' for --max-time"},
                                {["--metric", "wall"], "invalid value 'wall' for --metric"}]],
    #{code := 2, err := AmqpErr} = cli(["matrix", "--vm", "+S 1", "--metric", "cpu", "--", "amqp"]),
    ?assertMatch({match, _}, re:run(AmqpErr, "^beamlab: --metric cpu measures a run or a suite")).

%% --metric cpu: each fresh VM's run measures the CPU time per iteration
%% of its scheduler threads, and the configurations compare on it.
metric_cpu(_Config) ->
    #{code := 0, out := Out} =
        cli(["matrix", "--vm", "+S 1", "--vm", "+S 2", "-n", "3", "--metric", "cpu", "--format", "json",
             "--", "run", "lists:seq(1, 10).", "-d", "20", "-s", "3", "-w", "0"]),
    #{<<"benchmarks">> := [B1, B2]} = json(Out),
    [?assertMatch(#{<<"metric">> := <<"cpu">>, <<"unit">> := <<"ns">>, <<"better">> := <<"lower">>}, B)
     || B <- [B1, B2]],
    ?assertMatch(#{<<"comparison">> := #{<<"verdict">> := _}}, B2).

%% #35: what a matrix's value is follows the metric
%% (beamlab_result_compare:run_level/1): with --metric cpu each fresh VM
%% gives its fastest sample, and the text's first line and column, the
%% help and the report's data say so; a wall-clock matrix says "mean" as
%% before.
matrix_value_words(_Config) ->
    Inner = ["--", "run", "lists:seq(1, 1000).", "-d", "100", "-s", "3"],
    #{code := 0, out := Cpu, dir := Dir} =
        cli(["matrix", "--vm", "+S 1", "--vm", "+S 2", "-n", "2", "--metric", "cpu", "--save", "cpu.json" | Inner]),
    ?assertMatch({match, _}, re:run(Cpu, "^2 repetitions per configuration, interleaved; baseline \\+S 1; "
                                         "each value is one fresh VM's fastest sample$", [multiline])),
    ?assertEqual(["configuration", "benchmark", "mean of fastest"], lists:sublist(row(Cpu, "configuration"), 3)),
    #{code := 0, out := Wall} = cli(["matrix", "--vm", "+S 1", "--vm", "+S 2", "-n", "2" | Inner]),
    ?assertMatch({match, _}, re:run(Wall, "each value is one fresh VM's mean$", [multiline])),
    ?assertEqual(["configuration", "benchmark", "mean"], lists:sublist(row(Wall, "configuration"), 3)),
    ?assertEqual(nomatch, re:run(Wall, "fastest")),
    #{code := 0, out := Help} = cli(["help", "matrix"]),
    ?assertMatch({match, _}, re:run(Help, "contributes one value: wall-clock, its mean;\n--metric cpu, its fastest sample")),
    %% The report's matrix rows carry the word its captions use
    %% (report_browser_SUITE checks them as drawn).
    Html = filename:join(Dir, "cpu.html"),
    #{code := 0} = cli(["report", filename:join(Dir, "cpu.json"), "-o", Html]),
    {ok, Page} = file:read_file(Html),
    ?assertNotEqual(nomatch, binary:match(Page, <<"\"value\":\"fastest sample\"">>)).

%%--------------------------------------------------------------------

%% Both configurations ran twice, each VM's env says its scheduler count,
%% and speedup/efficiency follow from the means. (The document as JSON:
%% binary keys throughout.)
check_sweep(Doc) ->
    #{<<"kind">> := <<"matrix">>,
      <<"params">> := #{<<"sweep">> := true, <<"baseline">> := <<"+S 1:1">>},
      <<"benchmarks">> := [B1, B2], <<"extra">> := #{<<"configs">> := [C1, C2]}} = Doc,
    ?assertMatch(#{<<"name">> := <<"+S 1:1">>, <<"status">> := <<"ok">>, <<"ok_runs">> := 2,
                   <<"schedulers_online">> := 1,
                   <<"env">> := #{<<"schedulers">> := #{<<"online">> := 1, <<"total">> := 1}}}, C1),
    ?assertMatch(#{<<"name">> := <<"+S 2:2">>, <<"status">> := <<"ok">>, <<"ok_runs">> := 2,
                   <<"schedulers_online">> := 2,
                   <<"env">> := #{<<"schedulers">> := #{<<"online">> := 2, <<"total">> := 2}}}, C2),
    #{<<"group">> := <<"+S 1:1">>, <<"samples">> := S1, <<"stats">> := #{<<"mean">> := M1},
      <<"extra">> := #{<<"schedulers_online">> := 1, <<"speedup">> := Sp1, <<"efficiency">> := E1}} = B1,
    #{<<"group">> := <<"+S 2:2">>, <<"samples">> := S2, <<"stats">> := #{<<"mean">> := M2},
      <<"better">> := <<"higher">>, <<"comparison">> := #{<<"change">> := Change},
      <<"extra">> := #{<<"schedulers_online">> := 2, <<"speedup">> := Sp2, <<"efficiency">> := E2}} = B2,
    ?assertEqual({2, 2}, {length(S1), length(S2)}),
    ?assert(lists:all(fun(V) -> is_number(V) andalso V > 0 end, S1 ++ S2)),
    close(M1, lists:sum(S1) / 2),
    close(M2, lists:sum(S2) / 2),
    close(1.0, Sp1),
    close(1.0, E1),
    close(M2 / M1, Sp2),
    close(Sp2 / 2, E2),
    close(M2 / M1 - 1, Change).

%% The document has a real telemetry series, and its noise findings are
%% exactly the benchmarks past the limits (+/-5 % CI, cv 10 %), each with
%% the advice of this command.
check_verbose(#{<<"kind">> := Kind} = Doc, Kind, AdvicePattern) ->
    #{<<"telemetry">> := #{<<"t_ms">> := Ts, <<"util">> := Util},
      <<"findings">> := Fs, <<"benchmarks">> := Bs} = Doc,
    ?assert(length(Ts) >= 1 andalso length(Ts) =:= length(Util)),
    [?assertMatch(#{<<"id">> := _, <<"severity">> := _, <<"title">> := _, <<"evidence">> := _,
                    <<"advice">> := _}, F) || F <- Fs],
    Noisy = lists:sort([N || #{<<"id">> := <<"noisy_measurement">>,
                               <<"data">> := #{<<"benchmark">> := N}} <- Fs]),
    ?assertEqual(lists:sort([N || #{<<"name">> := N} = B <- Bs, noisy(B)]), Noisy),
    [?assertMatch({match, _}, re:run(A, AdvicePattern))
     || #{<<"id">> := <<"noisy_measurement">>, <<"advice">> := A} <- Fs],
    ct:log("~b findings: ~p", [length(Fs), [Id || #{<<"id">> := Id} <- Fs]]).

noisy(#{<<"stats">> := #{<<"mean">> := M, <<"cv">> := Cv, <<"ci_mean">> := [Lo, Hi]}}) when M /= 0 ->
    abs(Hi - Lo) / 2 / abs(M) > 0.05 orelse Cv > 0.10;
%% Fewer than 3 repetitions: no interval, the cv alone.
noisy(#{<<"stats">> := #{<<"mean">> := M, <<"cv">> := Cv}}) when M /= 0 ->
    Cv > 0.10;
noisy(_) -> false.

json(Bin) ->
    {ok, Doc} = beamlab_json:decode(Bin),
    Doc.

close(A, B) ->
    ?assert(abs(A - B) =< 1.0e-9 * max(1.0, abs(A)), {A, B}).

cli(Args) ->
    R = #{out := Out, err := Err} = beamlab_test_util:cli(Args, #{timeout => 240000}),
    ct:log("beamlab ~ts~n~ts~n--- stderr ---~n~ts", [lists:join(" ", Args), Out, Err]),
    R.

%% The cells of the table row whose first cell is First (cells are
%% separated by two or more spaces; empty cells vanish).
row(Out, First) ->
    Lines = [L || L <- string:split(unicode:characters_to_list(Out), "\n", all)],
    [Cells] = [Cs || L <- Lines, [F | _] = Cs <- [re:split(string:trim(L, trailing), "  +",
                                                            [{return, list}, unicode])],
                     F =:= First],
    Cells.

count(Bin, Pattern) ->
    case re:run(Bin, Pattern, [multiline, global]) of
        {match, Ms} -> length(Ms);
        nomatch -> 0
    end.

fmt(F, A) -> lists:flatten(io_lib:format(F, A)).
