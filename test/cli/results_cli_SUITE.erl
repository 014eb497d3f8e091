%%% Saved runs, `beamlab compare' and `beamlab report' through the built
%%% escript: every output format, the --fail-if-slower exit code, partial
%%% (interrupted) runs and bad inputs. Runs made by the real `run' command
%%% where that command is in the build; result documents of every kind
%%% (bench, suite, matrix, amqp) from fixtures.
-module(results_cli_SUITE).
-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-export([compare_overloaded/1, all/0, groups/0, init_per_suite/1, end_per_suite/1, init_per_group/2, end_per_group/2]).
-export([compare_every_kind/1, compare_one_matrix/1, compare_formats/1, compare_three_runs/1, fail_if_slower/1, compare_history/1,
         compare_unpaired/1, bad_inputs/1, report_every_kind/1, report_bad_inputs/1,
         run_save_compare_report/1, run_formats/1, ci_formats/1, interrupted_run_is_partial/1,
         save_default_path/1]).

all() ->
    [{group, fixtures}, {group, real_runs}].

groups() ->
    [{fixtures, [], [compare_every_kind, compare_one_matrix, compare_formats, compare_overloaded, compare_three_runs,
                     fail_if_slower, compare_history,
                     compare_unpaired, bad_inputs, report_every_kind, report_bad_inputs]},
     {real_runs, [], [run_save_compare_report, run_formats, ci_formats, interrupted_run_is_partial,
                      save_default_path]}].

init_per_suite(Config) ->
    _ = beamlab_test_util:escript(),
    Dir = beamlab_test_util:tmp_dir("results"),
    %% The fixtures carry a noisy_measurement finding; these cases are about
    %% the verdicts of quiet runs (a loaded run's slower is inconclusive at
    %% any size since #35's load direction rule: beamlab_result_compare_tests
    %% and beamlab_env_matrix_tests cover load).
    F = fun(Kind, Opts) -> (beamlab_results_fixtures:result(Kind, Opts))#{findings := []} end,
    Docs = [{"bench-a", F(<<"bench">>, #{})},
            {"bench-b", F(<<"bench">>, #{factor => 1.2})},
            {"bench-same", F(<<"bench">>, #{})},
            {"suite-a", F(<<"suite">>, #{})},
            {"suite-b", (F(<<"suite">>, #{factor => 0.7, partial => true}))},
            {"suite-slow", F(<<"suite">>, #{factor => 1.2})},
            {"matrix-a", F(<<"matrix">>, #{})},
            {"matrix-b", F(<<"matrix">>, #{factor => 1.3, schedulers => 8})},
            {"matrix-slow", F(<<"matrix">>, #{factor => 0.8})},
            {"amqp-a", F(<<"amqp">>, #{})},
            {"amqp-b", F(<<"amqp">>, #{factor => 0.8})}],
    Paths = [begin
                 Path = filename:join(Dir, Name ++ ".json"),
                 {ok, _} = beamlab_result:save(Doc, Path),
                 {Name, Path}
             end || {Name, Doc} <- Docs],
    [{dir, Dir}, {files, maps:from_list(Paths)} | Config].

end_per_suite(_Config) ->
    ok.

init_per_group(real_runs, Config) ->
    %% The `run' command belongs to the engine; in a build without it these
    %% cases cannot run (the integrated build has it).
    case cli(["help", "run"]) of
        #{code := 0} -> Config;
        _ -> {skip, "the 'run' command is not in this build"}
    end;
init_per_group(_, Config) ->
    Config.

end_per_group(_, _Config) ->
    ok.

cli(Args) -> beamlab_test_util:cli(Args).
file(Config, Name) -> maps:get(Name, ?config(files, Config)).

%% Fixtures ------------------------------------------------------------------

%% #35 item 3 through the command line: the second run carries a
%% machine_overloaded finding. Its +50% in time (slower at 99% on a quiet
%% machine) is "inconclusive: overloaded", in text and JSON, with the
%% note saying why, and so is its x5 (the load explains a loaded run
%% being slower at any size); a load-independent metric (reductions)
%% keeps its verdict, and x5 against a loaded baseline keeps its own.
compare_overloaded(Config) ->
    Noisy = fun(F) -> [X * F * (1 + 0.15 * math:sin(X)) || X <- [100.0, 130.0, 90.0, 115.0, 105.0]] end,
    B = fun(Name, Unit, Metric, F) ->
                beamlab_result:benchmark(Name, Noisy(F), #{group => <<"g">>, metric => Metric, unit => Unit,
                                                           better => lower})
        end,
    Doc = fun(F, Huge, Findings) ->
                  R = beamlab_result:new(suite, #{command => [<<"beamlab">>, <<"suite">>],
                                                  started_at => <<"2026-11-23T00:00:00Z">>}),
                  beamlab_result:add_findings(
                    beamlab_result:add_benchmarks(R, [B(<<"t">>, <<"ns">>, <<"time">>, F),
                                                      B(<<"huge">>, <<"ns">>, <<"time">>, Huge),
                                                      B(<<"reds">>, <<"reductions">>, <<"reductions">>, F)]),
                    Findings)
          end,
    Loaded = [beamlab_result:finding(machine_overloaded, warning, <<"Machine is overloaded">>,
                                     <<"other processes used 1.9 of 2 CPUs">>, <<"stop them">>, #{})],
    Dir = ?config(dir, Config),
    [A, AL, L, Q] = [filename:join(Dir, N) || N <- ["ov-a.json", "ov-a-loaded.json", "ov-loaded.json", "ov-quiet.json"]],
    {ok, _} = beamlab_result:save(Doc(1.0, 1.0, []), A),
    {ok, _} = beamlab_result:save(Doc(1.0, 1.0, Loaded), AL),
    {ok, _} = beamlab_result:save(Doc(1.5, 5.0, Loaded), L),
    {ok, _} = beamlab_result:save(Doc(1.5, 5.0, []), Q),
    #{code := 0, out := Quiet} = cli(["compare", A, Q]),
    ct:log("~ts", [Quiet]),
    ?assertMatch({match, _}, re:run(Quiet, <<"^t .* SLOWER$">>, [multiline])),
    #{code := 0, out := Text} = cli(["compare", A, L]),
    ct:log("~ts", [Text]),
    %% The loaded run is the slower one: the load explains that at any
    %% size (5x too); reductions keep their verdict.
    ?assertMatch({match, _}, re:run(Text, <<"^t .* inconclusive: overloaded$">>, [multiline])),
    ?assertMatch({match, _}, re:run(Text, <<"^huge .* inconclusive: overloaded$">>, [multiline])),
    ?assertMatch({match, _}, re:run(Text, <<"^reds .* SLOWER$">>, [multiline])),
    ?assertMatch({match, _}, re:run(Text, <<"inconclusive: the machine was overloaded">>)),
    #{code := 0, out := Json} = cli(["compare", A, L, "--format", "json"]),
    Verdicts = fun(Out) ->
                       {ok, #{<<"rows">> := Rows}} = beamlab_json:decode(Out),
                       maps:from_list([{N, V} || #{<<"name">> := N, <<"cells">> := [_, #{<<"verdict">> := V}]} <- Rows])
               end,
    ?assertEqual(#{<<"t">> => <<"inconclusive_load">>, <<"huge">> => <<"inconclusive_load">>,
                   <<"reds">> => <<"slower">>}, Verdicts(Json)),
    %% A loaded baseline cannot explain a quiet run being slower: 5x is
    %% far outside the noise and keeps its verdict, +50% does not.
    #{code := 0, out := BaseLoaded} = cli(["compare", AL, Q, "--format", "json"]),
    ?assertEqual(#{<<"t">> => <<"inconclusive_load">>, <<"huge">> => <<"slower">>, <<"reds">> => <<"slower">>},
                 Verdicts(BaseLoaded)).

compare_every_kind(Config) ->
    [begin
         #{code := 0, out := Out} = cli(["compare", file(Config, K ++ "-a"), file(Config, K ++ "-b")]),
         ct:log("~s:~n~ts", [K, Out]),
         ?assertNotEqual(nomatch, binary:match(Out, <<"vs ", (list_to_binary(K))/binary, "-a">>))
     end || K <- ["bench", "suite", "matrix", "amqp"]],
    %% The partial run is marked, and said to be partial.
    #{out := S} = cli(["compare", file(Config, "suite-a"), file(Config, "suite-b")]),
    ?assertNotEqual(nomatch, binary:match(S, <<"suite-b (partial)">>)),
    ?assertNotEqual(nomatch, binary:match(S, <<"partial (interrupted) run: suite-b">>)),
    %% suite-b is 30% faster (lower ns), matrix-b 30% more ops/s: beyond
    %% the run-to-run noise two separate runs are judged with (95%, 2.5%).
    ?assertEqual(3, count(S, <<"faster">>)),
    #{out := M} = cli(["compare", file(Config, "matrix-a"), file(Config, "matrix-b")]),
    ?assertEqual(4, count(M, <<"faster">>)),
    %% ...and the env difference that might explain it is shown.
    ?assertMatch({match, _}, re:run(M, <<"env.schedulers.online +4 +8">>)),
    %% ...but not the VM's own memory use, which differs on every run.
    ?assertEqual(nomatch, binary:match(M, <<"env.memory.erlang">>)).

%% One matrix document: `compare M.json' judges its configurations again
%% with this version's rule, and agrees with the matrix's own verdict (the
%% document bench/aa_recompute.sh re-judges).
compare_one_matrix(Config) ->
    {ok, Cs} = beamlab_env_matrix:configs(#{vm => ["+S 1", "+S 2"]}),
    Means = #{<<"+S 1">> => [100.0, 102.0, 99.0], <<"+S 2">> => [140.0, 143.0, 139.0]},
    Count = counters:new(1, []),
    Runner = fun(#{name := Name}, _Argv) ->
                     ok = counters:add(Count, 1, 1),
                     Rep = (counters:get(Count, 1) + 1) div 2,
                     {ok, #{exit => 0, env => #{schedulers => #{online => 1}},
                            result => #{findings => [],
                                        benchmarks => [#{name => <<"ring">>, unit => <<"ops/s">>, better => higher,
                                                         stats => #{mean => lists:nth(Rep, maps:get(Name, Means))}}]}}}
             end,
    {ok, Doc} = beamlab_env_matrix:run(#{configs => Cs, command => ["run", "x"], repeat => 3, argv => ["matrix"],
                                         started_at => <<"2026-01-01T00:00:00Z">>,
                                         inner => {erlang, error, [not_called]}}, #{runner => Runner}),
    Path = filename:join(?config(dir, Config), "one-matrix.json"),
    {ok, _} = beamlab_result:save(Doc, Path),
    #{code := 0, out := Out} = cli(["compare", Path]),
    ct:log("~ts", [Out]),
    ?assertMatch({match, _}, re:run(Out, <<"^ring .* \\+4\\d\\.\\d% +\\[.*\\] +[0-9.<]+ +faster$">>, [multiline])),
    #{code := 0, out := Csv} = cli(["compare", Path, "--format", "csv"]),
    {ok, [_, Row]} = beamlab_csv_decoder:decode(Csv),
    [#{comparison := #{verdict := Own}}] = [B || #{group := <<"+S 2">>} = B <- maps:get(benchmarks, Doc)],
    ?assertEqual(atom_to_binary(Own), lists:last(Row)),
    %% One document of another kind: nothing to compare.
    E = cli(["compare", file(Config, "suite-a")]),
    #{code := 2} = E,
    beamlab_test_util:assert_one_line_error(E).

compare_formats(Config) ->
    %% Two single bench runs, the second 20% slower: the change and its
    %% interval are shown, but samples within one run say nothing about
    %% the next run, so the verdict is `within_run_only', never `slower'.
    A = file(Config, "bench-a"),
    B = file(Config, "bench-b"),
    #{code := 0, out := Json} = cli(["compare", A, B, "--format", "json"]),
    {ok, #{<<"schema">> := <<"beamlab.compare">>, <<"rows">> := [Row]}} = beamlab_json:decode(Json),
    #{<<"name">> := <<"ok.">>, <<"cells">> := [_, #{<<"verdict">> := <<"within_run_only">>, <<"change">> := Ch,
                                                      <<"basis">> := <<"within_run">>}]} = Row,
    ?assert(abs(Ch - 0.2) < 0.05),
    #{code := 0, out := Csv} = cli(["compare", A, B, "--format", "csv"]),
    {ok, [Header, CsvRow]} = beamlab_csv_decoder:decode(Csv),
    ?assertEqual(<<"name">>, hd(Header)),
    ?assertEqual(length(Header), length(CsvRow)),
    ?assertEqual(<<"within_run_only">>, lists:last(CsvRow)),
    #{code := 0, out := Md} = cli(["compare", A, B, "--format", "markdown"]),
    ?assertMatch({match, _}, re:run(Md, <<"^\\| name \\| bench-a \\| bench-b \\| bench-b vs bench-a \\| 99% CI \\| p \\| verdict \\|$">>, [multiline])),
    ?assertMatch({match, _}, re:run(Md, <<"^\\| ok\\. \\| .* \\| \\+2\\d\\.\\d% \\| .* \\| within-run only \\|$">>, [multiline])),
    #{code := 0, out := Text} = cli(["compare", A, B, "--format", "text"]),
    ?assertMatch({match, _}, re:run(Text, <<"^ok\\. .* \\+2\\d\\.\\d% +\\[\\+\\d+\\.\\d%, \\+\\d+\\.\\d%\\] +<0\\.001 +within-run only$">>, [multiline])),
    ?assertEqual(nomatch, binary:match(Text, <<"SLOWER">>)),
    ?assertNotEqual(nomatch, binary:match(Text, <<"within-run noise only">>)),
    %% Repetitions (a suite) are runs: a verdict, in every format.
    #{code := 0, out := SText} = cli(["compare", file(Config, "suite-a"), file(Config, "suite-slow")]),
    ?assertMatch({match, _}, re:run(SText, <<"^ping_pong .* \\+2\\d\\.\\d% +\\[\\+\\d+\\.\\d%, \\+\\d+\\.\\d%\\] +<0\\.001 +SLOWER$">>, [multiline])),
    #{code := 0, out := SCsv} = cli(["compare", file(Config, "suite-a"), file(Config, "suite-slow"), "--format", "csv"]),
    {ok, [_ | SRows]} = beamlab_csv_decoder:decode(SCsv),
    ?assertEqual([<<"slower">>], lists:usort([lists:last(R) || R <- SRows])),
    %% Same run against itself: no significant difference.
    #{out := Same} = cli(["compare", file(Config, "suite-a"), file(Config, "suite-a")]),
    ?assertMatch({match, _}, re:run(Same, <<"^ping_pong .* ~$">>, [multiline])),
    %% ... and what it could have seen (#35), in the text, Markdown and JSON.
    ?assertMatch({match, _}, re:run(Same, <<"this comparison catches a change 80% of the time only beyond: "
                                            "ping_pong \\([^)]*suite-a\\) -[0-9.]+%/\\+[0-9.]+%">>, [unicode])),
    #{out := SameMd} = cli(["compare", file(Config, "suite-a"), file(Config, "suite-a"), "--format", "markdown"]),
    ?assertNotEqual(nomatch, binary:match(SameMd, <<"check --against REF, or a matrix of both versions with -n 9">>)),
    #{out := SameJson} = cli(["compare", file(Config, "suite-a"), file(Config, "suite-a"), "--format", "json"]),
    {ok, #{<<"rows">> := [#{<<"cells">> := [_, #{<<"detectable">> := D}]} | _]}} = beamlab_json:decode(SameJson),
    ?assert(is_number(D) andalso D > 0),
    %% ... and in the CSV: a `detectable' column before the verdict, the
    %% same fraction; --run-noise 0 (the repetitions' spread alone) sees
    %% smaller changes.
    Detectable = fun(Extra) ->
                         #{code := 0, out := C} = cli(["compare", file(Config, "suite-a"), file(Config, "suite-a"),
                                                       "--format", "csv" | Extra]),
                         {ok, [H, R | _]} = beamlab_csv_decoder:decode(C),
                         ?assertEqual([<<"detectable">>, <<"verdict">>], lists:nthtail(length(H) - 2, H)),
                         [V, <<"no_difference">>] = lists:nthtail(length(R) - 2, R),
                         binary_to_float(V)
                 end,
    ?assert(abs(Detectable([]) - D) < 1.0e-9),
    ?assert(Detectable(["--run-noise", "0"]) < D).

compare_three_runs(Config) ->
    #{code := 0, out := Out} = cli(["compare", file(Config, "bench-a"), file(Config, "bench-b"),
                                    file(Config, "bench-same")]),
    ?assertNotEqual(nomatch, binary:match(Out, <<"bench-b vs bench-a">>)),
    ?assertNotEqual(nomatch, binary:match(Out, <<"bench-same vs bench-a">>)).

fail_if_slower(Config) ->
    A = file(Config, "suite-a"),
    B = file(Config, "suite-slow"),
    R = #{code := 1, err := Err} = cli(["compare", A, B, "--fail-if-slower", "5"]),
    beamlab_test_util:assert_one_line_error(R),
    ?assertNotEqual(nomatch, binary:match(Err, <<"3 benchmark(s) significantly slower by more than 5%: ping_pong (suite-slow: 2">>)),
    %% 20% slower passes a 50% threshold; faster runs never fail.
    #{code := 0} = cli(["compare", A, B, "--fail-if-slower", "50"]),
    #{code := 0} = cli(["compare", B, A, "--fail-if-slower", "1"]),
    #{code := 0} = cli(["compare", A, A, "--fail-if-slower", "1"]),
    %% Throughput: matrix-slow does 20% fewer ops/s (higher is better): slower.
    #{code := 1} = cli(["compare", file(Config, "matrix-a"), file(Config, "matrix-slow"), "--fail-if-slower", "10%"]),
    %% Two single runs never fail the gate: within-run noise is no verdict.
    #{code := 0} = cli(["compare", file(Config, "bench-a"), file(Config, "bench-b"), "--fail-if-slower", "5"]),
    #{code := 0} = cli(["compare", file(Config, "amqp-a"), file(Config, "amqp-b"), "--fail-if-slower", "10%"]).

compare_unpaired(Config) ->
    #{code := 0, out := Out} = cli(["compare", file(Config, "bench-a"), file(Config, "suite-a")]),
    %% Nothing in common: every benchmark is listed and said to be missing.
    [?assertNotEqual(nomatch, binary:match(Out, N)) || N <- [<<"ok.">>, <<"ping_pong">>, <<"skynet">>]],
    ?assertNotEqual(nomatch, binary:match(Out, <<"4 benchmark(s) missing from some runs">>)),
    ?assertNotEqual(nomatch, binary:match(Out, <<"runs are of different kinds (bench, suite)">>)).

bad_inputs(Config) ->
    Dir = ?config(dir, Config),
    A = file(Config, "bench-a"),
    Garbage = filename:join(Dir, "garbage.json"),
    ok = file:write_file(Garbage, <<"{not json">>),
    Other = filename:join(Dir, "other.json"),
    ok = file:write_file(Other, <<"{\"hello\": 1}">>),
    Newer = filename:join(Dir, "newer.json"),
    {ok, Doc} = file:read_file(A),
    ok = file:write_file(Newer, binary:replace(Doc, <<"\"version\": 1">>, <<"\"version\": 99">>)),
    Cases = [{["compare", A], <<"at least two result files">>},
             {["compare", A, filename:join(Dir, "missing.json")], <<"missing.json: no such file">>},
             {["compare", A, Garbage], <<"garbage.json is not a beamlab result">>},
             {["compare", A, Other], <<"other.json is not a beamlab result file">>},
             {["compare", A, Newer], <<"newer than this beamlab reads">>},
             {["compare", A, A, "--fail-if-slower", "x"], <<"fail-if-slower">>},
             {["compare", A, A, "--format", "yaml"], <<"format">>}],
    [begin
         R = #{code := 2, err := Err} = cli(Args),
         beamlab_test_util:assert_one_line_error(R),
         ?assertNotEqual(nomatch, binary:match(Err, Expect), {Args, Err})
     end || {Args, Expect} <- Cases].

report_every_kind(Config) ->
    Out = filename:join(?config(dir, Config), "all.html"),
    Files = [file(Config, N) || N <- ["bench-a", "suite-b", "matrix-a", "amqp-a"]],
    #{code := 0, out := Msg} = cli(["report" | Files] ++ ["-o", Out, "--title", "All <kinds>"]),
    ?assertMatch({match, _}, re:run(Msg, <<"^wrote .*all.html \\(4 run\\(s\\), .*\\)$">>, [multiline])),
    {ok, Html} = file:read_file(Out),
    ?assertNotEqual(nomatch, binary:match(Html, <<"<title>All &lt;kinds&gt;</title>">>)),
    %% Self-contained: no external script, style or image.
    ?assertEqual(nomatch, re:run(Html, <<"<script[^>]+src=|<link |https?://(?!www.w3.org/2000/svg)">>)),
    {match, [Json]} = re:run(Html, <<"<script type=\"application/json\" id=\"beamlab-data\">(.*?)</script>">>,
                             [dotall, {capture, all_but_first, binary}]),
    {ok, #{<<"runs">> := Runs}} = beamlab_json:decode(binary:replace(Json, <<"<\\/">>, <<"</">>, [global])),
    ?assertEqual([<<"bench">>, <<"suite">>, <<"matrix">>, <<"amqp">>], [maps:get(<<"kind">>, R) || R <- Runs]),
    [_, #{<<"partial">> := true}, #{<<"scaling">> := [_]}, #{<<"latency">> := [_]}] = Runs,
    %% No temporary file left behind by the atomic write.
    ?assertEqual([], filelib:wildcard(Out ++ ".*")).

report_bad_inputs(Config) ->
    R1 = #{code := 2} = cli(["report"]),
    beamlab_test_util:assert_one_line_error(R1),
    R2 = #{code := 2, err := E2} = cli(["report", "/nonexistent/x.json"]),
    beamlab_test_util:assert_one_line_error(R2),
    ?assertNotEqual(nomatch, binary:match(E2, <<"no such file">>)),
    %% A regular file where a directory should be: cannot be created.
    Blocked = filename:join(file(Config, "bench-a"), "r.html"),
    R3 = #{code := 2, err := E3} = cli(["report", file(Config, "bench-a"), "-o", Blocked]),
    beamlab_test_util:assert_one_line_error(R3),
    ?assertNotEqual(nomatch, binary:match(E3, <<"is a file, not a directory">>)),
    %% --run-noise, as compare takes it (#35): a percentage below 100.
    [begin
         R = #{code := 2, err := E} = cli([Cmd, file(Config, "suite-a"), file(Config, "suite-a"), "--run-noise", V]),
         beamlab_test_util:assert_one_line_error(R),
         ?assertNotEqual(nomatch, binary:match(E, <<"--run-noise must be a percentage from 0 to below 100">>))
     end || Cmd <- ["compare", "report"], V <- ["100", "-1"]],
    %% and it judges the report's comparison: another term, another note
    Page = fun(Noise) ->
                   Html = filename:join(?config(dir, Config), "noise-" ++ Noise ++ ".html"),
                   #{code := 0} = cli(["report", file(Config, "suite-a"), file(Config, "suite-a"),
                                       "--run-noise", Noise, "-o", Html]),
                   {ok, P} = file:read_file(Html),
                   {match, [Note]} = re:run(P, <<"catches a change 80% of the time only beyond: ([^;]*);">>, [{capture, all_but_first, binary}]),
                   Note
           end,
    ?assertNotEqual(Page("0"), Page("20")).

%% Real runs -----------------------------------------------------------------

run_save_compare_report(Config) ->
    Dir = ?config(dir, Config),
    A = filename:join(Dir, "run-a.json"),
    B = filename:join(Dir, "run-b.json"),
    #{code := 0, err := ErrA} = cli(["ok.", "-d", "50", "-s", "5", "--save", A]),
    ?assertNotEqual(nomatch, binary:match(ErrA, <<"saved: ">>)),
    #{code := 0} = cli(["ok.", "-d", "50", "-s", "5", "--save", B]),
    {ok, #{kind := bench, partial := false, benchmarks := [Bench]}} = beamlab_result:load(A),
    #{sample_info := #{count := 5, kept := 5, method := all}} = Bench,
    #{code := 0, out := Out} = cli(["compare", A, B]),
    ct:log("~ts", [Out]),
    ?assertNotEqual(nomatch, binary:match(Out, <<"run-b vs run-a">>)),
    Html = filename:join(Dir, "run.html"),
    #{code := 0} = cli(["report", A, B, "-o", Html]),
    ?assert(filelib:file_size(Html) > 10000).

run_formats(Config) ->
    Dir = ?config(dir, Config),
    Base = ["ok.", "-d", "50", "-s", "5"],
    #{code := 0, out := Text} = cli(Base),
    ?assertNotEqual(nomatch, binary:match(Text, <<"ok.">>)),
    #{code := 0, out := Json} = cli(Base ++ ["--format", "json"]),
    %% JSON printed is a result document compare and report read.
    J = filename:join(Dir, "printed.json"),
    ok = file:write_file(J, Json),
    {ok, #{kind := bench}} = beamlab_result:load(J),
    #{code := 0} = cli(["compare", J, J]),
    #{code := 0, out := Csv} = cli(Base ++ ["--format", "csv"]),
    {ok, [Header, _Row]} = beamlab_csv_decoder:decode(Csv),
    ?assertEqual(beamlab_render_csv:header(), Header),
    #{code := 0, out := Md} = cli(Base ++ ["--format", "markdown"]),
    ?assertMatch({match, _}, re:run(Md, <<"^\\| Benchmark \\| n \\| Mean ">>, [multiline])).

%% A directory (or a quoted glob, or --history) is a history: runs in the
%% order they started whatever their file names, each against the one
%% before; --fail-if-slower looks at the newest; ordering by commit needs
%% commits.
compare_history(Config) ->
    Dir = filename:join(?config(dir, Config), "history"),
    ok = filelib:ensure_path(Dir),
    F = fun beamlab_results_fixtures:result/2,
    %% Single bench runs: the first changes have fewer than 3 runs before
    %% the previous one to judge by (within-run only); then each run and
    %% the one before it are judged against the spread of the runs before
    %% both (#35: one run alone outside it is `unconfirmed', a verdict
    %% needs two). The fixtures' runs vary little, so a 30% step stands out.
    %% (The fixtures carry a noisy_measurement finding, which would make a
    %% change not far outside the noise inconclusive: left out here.)
    [{ok, _} = beamlab_result:save((F(<<"bench">>, #{factor => Factor}))#{started_at := At, findings := []},
                                   filename:join(Dir, Name ++ ".json"))
     || {Name, Factor, At} <- [{"z-first", 1.0, <<"2026-11-16T00:00:00Z">>},
                               {"y-first", 1.01, <<"2026-11-17T00:00:00Z">>},
                               {"x-first", 0.99, <<"2026-11-18T00:00:00Z">>},
                               {"w-first", 1.0, <<"2026-11-19T00:00:00Z">>},
                               {"a-second", 1.3, <<"2026-11-21T00:00:00Z">>},
                               {"m-third", 1.3, <<"2026-11-22T00:00:00Z">>}]],
    #{code := 0, out := Out} = cli(["compare", Dir]),
    ct:log("~ts", [Out]),
    ?assertMatch({match, _}, re:run(Out, <<"1 +z-first .*\n +2 +y-first .*\n +3 +x-first .*\n +4 +w-first .*\n +5 +a-second .*\n +6 +m-third">>)),
    ?assertMatch({match, _}, re:run(Out, <<"2 +y-first .* within-run only">>)),
    %% ns, lower is better: the first run 30% above runs 1-3 (w-first
    %% within them) is unconfirmed; the second makes it slower.
    ?assertMatch({match, _}, re:run(Out, <<"5 +a-second +[0-9.]+ ns .*\\+30\\.[0-9]% vs #1-#3 with #4.*unconfirmed: run again">>)),
    ?assertMatch({match, _}, re:run(Out, <<"6 +m-third +[0-9.]+ ns .*\\+30\\.[0-9]% vs #1-#4 with #5.*SLOWER">>)),
    ?assertMatch({match, _}, re:run(Out, <<"significant changes \\(1\\):\n  ok\\.: z-first -> m-third">>)),
    ?assertMatch({match, _}, re:run(Out, <<"unconfirmed \\(1\\): one run outside the history's range">>)),
    %% The same through a glob and --history, as CSV.
    #{code := 0, out := Csv} = cli(["compare", filename:join(Dir, "*.json"), "--format", "csv"]),
    {ok, [_ | Rows]} = beamlab_csv_decoder:decode(Csv),
    ?assertEqual([<<>>, <<"within_run_only">>, <<"within_run_only">>, <<"within_run_only">>, <<"unconfirmed">>,
                  <<"slower">>],
                 [lists:last(R) || R <- Rows]),
    Files = [filename:join(Dir, N ++ ".json") || N <- ["m-third", "z-first", "y-first", "x-first", "w-first", "a-second"]],
    #{code := 0, out := Out} = cli(["compare", "--history" | Files]),
    %% The newest run is confirmed slower: the gate fails; one run alone
    %% outside (unconfirmed) does not fail it.
    #{code := 1, err := Err} = cli(["compare", Dir, "--fail-if-slower", "5"]),
    ?assertMatch({match, _}, re:run(Err, <<"newest run \\(m-third\\) significantly slower">>)),
    #{code := 0} = cli(["compare", "--history", "--fail-if-slower", "5" | tl(Files)]),
    E = cli(["compare", Dir, "--order", "commit"]),
    #{code := 2} = E,
    beamlab_test_util:assert_one_line_error(E),
    ?assertMatch({match, _}, re:run(maps:get(err, E), <<"cannot order by commit">>)),
    #{code := 2} = cli(["compare", filename:join(Dir, "nothing-*.json"), Dir]).

%% The formats of continuous-benchmarking services, from a real run with
%% reductions and memory per iteration: each valid against its schema
%% (test/fixtures/schemas), the throughput per second in the higher-is-better
%% file, the counts in the lower-is-better one, all of them for Bencher.
ci_formats(Config) ->
    Dir = ?config(dir, Config),
    Base = ["lists:seq(1, 100).", "-d", "50", "-s", "5", "--reductions", "--memory"],
    Write = fun(Format) ->
                    #{code := 0, out := Out, err := Err} = cli(Base ++ ["--format", Format]),
                    F = filename:join(Dir, Format ++ ".json"),
                    ok = file:write_file(F, Out),
                    {ok, J} = beamlab_json:decode(Out),
                    {F, J, Err}
            end,
    {Bigger, [Tp], BErr} = Write("github-bigger"),
    ok = beamlab_test_util:json_schema_valid("github-action-benchmark-custom.schema.json", Bigger),
    #{<<"name">> := <<"lists:seq(1, 100).">>, <<"unit">> := <<"iterations/s">>, <<"range">> := Range} = Tp,
    %% `± h' when the interval is symmetric, else both sides (log scale:
    %% wider above the mean than below).
    ?assertMatch({match, _}, re:run(Range, <<"^(\x{b1} [0-9.]+|-[0-9.]+ \\+[0-9.]+)$"/utf8>>, [unicode])),
    %% Nothing left out silently: stderr names the other file's measures.
    ?assertNotEqual(nomatch, binary:match(BErr, <<"(reductions)">>)),
    {Smaller, Counts, _} = Write("github-smaller"),
    ok = beamlab_test_util:json_schema_valid("github-action-benchmark-custom.schema.json", Smaller),
    ?assertEqual([<<"lists:seq(1, 100). (memory)">>, <<"lists:seq(1, 100). (reductions)">>],
                 lists:sort([N || #{<<"name">> := N} <- Counts])),
    {Bmf, #{<<"lists:seq(1, 100).">> := Measures}, <<>>} = Write("bencher"),
    ok = beamlab_test_util:json_schema_valid("bencher-metric-format.schema.json", Bmf),
    ?assertEqual([<<"memory">>, <<"reductions">>, <<"throughput">>], lists:sort(maps:keys(Measures))),
    #{<<"throughput">> := #{<<"value">> := V, <<"lower_value">> := Lo, <<"upper_value">> := Hi}} = Measures,
    ?assert(Lo =< V andalso V =< Hi),
    %% 1600 bytes: 100 list cells of two words each.
    ?assertMatch(#{<<"memory">> := #{<<"value">> := 1600}}, Measures).

%% Ctrl-C during a run: the launcher turns SIGINT into SIGTERM for the VM,
%% which stops measuring and still saves, marked partial. The escript is
%% started directly (a shell would start a background job with SIGINT
%% ignored, and the launcher could not trap it).
interrupted_run_is_partial(Config) ->
    Dir = ?config(dir, Config),
    P = filename:join(Dir, "partial.json"),
    %% (SIGINT restored to its default first: a test run started in the
    %% background has it ignored, and the launcher could not trap it; env
    %% execs the escript, so the OS pid is the launcher's)
    Port = open_port({spawn_executable, os:find_executable("env")},
                     [{args, ["--default-signal=INT", beamlab_test_util:escript(),
                              "timer:sleep(1).", "-d", "200", "-s", "1000", "--save", P]},
                      {cd, Dir}, exit_status, binary, stderr_to_stdout]),
    {os_pid, OsPid} = erlang:port_info(Port, os_pid),
    %% The first progress line comes once a sample is in: interrupt then.
    Seen = beamlab_test_util:await_output(Port, "sampling round", <<>>, 60000),
    _ = os:cmd("kill -INT " ++ integer_to_list(OsPid)),
    {Code, Out} = beamlab_test_util:port_output(Port, Seen, 60000),
    ct:log("exit ~p~n~ts", [Code, Out]),
    ?assertNotEqual(nomatch, binary:match(Out, <<"saved: ">>)),
    {ok, #{partial := true, benchmarks := [#{samples := S}]}} = beamlab_result:load(P),
    ?assert(length(S) >= 1 andalso length(S) < 1000),
    #{code := 0, out := Cmp} = cli(["compare", P, P]),
    ?assertNotEqual(nomatch, binary:match(Cmp, <<"(partial)">>)),
    #{code := 0} = cli(["report", P, "-o", filename:join(Dir, "partial.html")]).

save_default_path(_Config) ->
    #{code := 0, err := Err, dir := Dir} = cli(["ok.", "-d", "50", "-s", "3", "--save"]),
    {match, [Path]} = re:run(Err, <<"saved: (beamlab-results/bench-\\d{8}-\\d{6}\\.json)">>,
                             [{capture, all_but_first, list}]),
    {ok, _} = beamlab_result:load(filename:join(Dir, Path)).

count(Bin, Pattern) ->
    length(binary:matches(Bin, Pattern)).
