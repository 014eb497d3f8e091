%%% Benchmarks in a user's project (#25), end to end with real tools: a
%%% rebar3 project in a temporary git repository with beamlab as a
%%% project plugin fetched from a git URL (a local repository holding this
%%% build's sources, file://), a Mix project with beamlab as a git
%%% dependency, and the escript. Each case commits the state it checks
%%% against and then its change (`commits/4'), so no case depends on
%%% what another left: CT may run them alone or in any order.
%%%
%%% No timed assertion: a benchmark made twice as slow is caught by a
%%% gate on time and reductions, and asserted through its reductions
%%% (exact); what time showed is written to the log (on this shared
%%% machine a time gate missed a doubling at a load average of 7). The
%%% history case's verdicts rest on a change of 20 times.
-module(project_SUITE).
-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-export([all/0, groups/0, init_per_suite/1, end_per_suite/1, init_per_group/2, end_per_group/2]).
-export([validate/1, vm_stop_fails_the_gate/1, mistakes_one_line_each/1, twice_as_slow_fails/1, no_change_passes/1,
         reductions_gate_on_loaded_machine/1, interrupt_removes_worktree/1, history/1, ci_budget_cpu/1, ci_bad_values/1,
         mix_project/1]).

%% Quick settings: 11 rounds are the fewest that can reach p < 0.01 over
%% the family of a check of two benchmarks (up to 8 entries judged
%% together: 0.01 / 8); the time gate gets 12, so that one round
%% disturbed by the machine does not hide a doubling.
-define(QUICK, ["--rounds", "11", "-d", "30", "-s", "2", "-w", "1"]).
-define(TIMED, ["--rounds", "12", "-d", "30", "-s", "2", "-w", "1"]).

all() ->
    [{group, rebar3}, {group, mix}].

groups() ->
    [{rebar3, [], [validate, vm_stop_fails_the_gate, mistakes_one_line_each, twice_as_slow_fails, no_change_passes,
                           reductions_gate_on_loaded_machine, interrupt_removes_worktree, history,
                           ci_budget_cpu, ci_bad_values]},
     {mix, [], [mix_project]}].

init_per_suite(Config) ->
    _ = beamlab_test_util:escript(),
    Dir = beamlab_test_util:tmp_dir("project"),
    Tmp = filename:join(Dir, "tmp"),
    ok = filelib:ensure_path(Tmp),
    Src = beamlab_source(Dir),
    %% (here, not in the group's init: a case run alone, `--case=C', runs
    %% outside its group)
    Sample = rebar3_project(Dir, Src),
    [{dir, Dir}, {tmp, Tmp}, {beamlab_src, Src}, {sample, Sample} | Config].

end_per_suite(_Config) ->
    ok.

init_per_group(rebar3, Config) ->
    Config;
init_per_group(mix, Config) ->
    case os:find_executable("mix") of
        false -> {skip, "mix (Elixir) is not installed: scripts/install-deps.sh --test installs it"};
        _ -> Config
    end.

end_per_group(_, _Config) ->
    ok.

%%--------------------------------------------------------------------
%% Cases

%% `rebar3 beamlab check' (the plugin, fetched from a git URL and built
%% by rebar3) compiles the project and validates its bench modules, then
%% `rebar3 beamlab' runs them.
validate(Config) ->
    Sample = ?config(sample, Config),
    {0, Out} = sh(Sample, "rebar3 beamlab check", env(Config)),
    ct:log("~ts", [Out]),
    [?assertMatch({_, _}, binary:match(Out, P), P)
     || P <- [<<"Fetching beamlab">>, <<"Compiling sample">>, <<"work ">>, <<"other ">>,
              <<"2 benchmark(s) in 1 module(s); every runner works">>]],
    {0, Run} = sh(Sample, "rebar3 beamlab -d 30 -s 2", env(Config)),
    ct:log("~ts", [Run]),
    ?assertMatch({_, _}, binary:match(Run, <<"QPS">>)),
    %% docs/ci.md's trend step: stdout holds the JSON alone
    trend_json(Sample, "QUIET=1 rebar3 beamlab", env(Config), Config).

%% A runner that stops the VM in a way beamlab cannot see in the code
%% (`M = erlang, M:halt(0)', `M:stop()' of init, `halt(1)' through apply)
%% never passes `rebar3 beamlab check' nor `rebar3 beamlab' (run): the
%% command runs in a VM of its own, and a VM that stopped is a failure in
%% one line, as with the escript (it used to stop rebar3's VM with status
%% 0 and print nothing). The run keeps what it measured before.
vm_stop_fails_the_gate(Config) ->
    Sample = ?config(sample, Config),
    Dir = filename:join(Sample, "haltbench"),
    ok = filelib:ensure_path(Dir),
    Stops = [{"halt", "M = erlang, M:halt(0)"}, {"stop", "M = init, M:stop()"},
             {"apply", "A = fun erlang:apply/3, A(erlang, halt, [1])"}],
    try
        [begin
             ok = file:write_file(filename:join(Dir, "stop_bench.erl"),
                                  ["-module(stop_bench).\n-export([benchmarks/0]).\n"
                                   "benchmarks() -> [#{name => \"ok\", runner => fun() -> ok end},\n"
                                   "                 #{name => \"", Name, "\", runner => fun() -> ", Code, " end}].\n"]),
             {C1, Check} = sh(Sample, "rebar3 beamlab check --bench haltbench", env(Config)),
             ct:log("check, ~ts: ~b~n~ts", [Name, C1, Check]),
             ?assertEqual(1, C1),
             ?assertMatch({_, _}, binary:match(Check, <<"beamlab: the VM stopped">>)),
             Json = filename:join(?config(dir, Config), "stopped-" ++ Name ++ ".json"),
             {C2, Run} = sh(Sample, "rebar3 beamlab --bench haltbench -s 1 -d 20 --save " ++ Json, env(Config)),
             ct:log("run, ~ts: ~b~n~ts", [Name, C2, Run]),
             ?assertEqual(1, C2),
             ?assertMatch({match, _}, re:run(Run, "beamlab: " ++ Name ++ ": the VM stopped \\(exit status [01]\\)")),
             #{partial := true, benchmarks := [#{name := <<"ok">>, samples := [_ | _]} | _]} = load(Json)
         end || {Name, Code} <- Stops]
    after
        ok = file:del_dir_r(Dir)
    end.

%% Every mistake in the bench modules is one line naming the file.
mistakes_one_line_each(Config) ->
    Sample = ?config(sample, Config),
    Bad = filename:join(Sample, "badbench"),
    ok = filelib:ensure_path(Bad),
    ok = file:write_file(filename:join(Bad, "bad_bench.erl"),
                         "-module(bad_bench).\n-export([benchmarks/0]).\n"
                         "benchmarks() -> [#{runner => fun() -> ok end},\n"
                         "                 #{name => \"a\", runner => 42},\n"
                         "                 #{name => \"b\", runner => fun() -> ok end, inputz => 1}].\n"),
    ok = file:write_file(filename:join(Bad, "none_bench.erl"), "-module(none_bench).\n"),
    R = beamlab_test_util:cli(["check", "--bench", "badbench", "--no-build"], cli_opts(Config)),
    ct:log("~p", [R]),
    #{code := 2, err := Err} = R,
    Lines = [L || L <- binary:split(Err, <<"\n">>, [global]), L =/= <<>>],
    ?assertEqual(4, length(Lines)),
    [?assertMatch(<<"beamlab: badbench/", _/binary>>, L) || L <- Lines],
    [?assert(lists:any(fun(L) -> binary:match(L, P) =/= nomatch end, Lines), P)
     || P <- [<<"bad_bench.erl: benchmark 1 of bad_bench: has no name">>,
              <<"benchmark \"a\" of bad_bench: runner must be a fun">>,
              <<"benchmark \"b\" of bad_bench: unknown key inputz">>,
              <<"none_bench.erl: none_bench does not export benchmarks/0">>]],
    ok = file:del_dir_r(Bad).

%% The commit makes `work' twice as slow: `rebar3 beamlab check --against
%% HEAD~1' (gating time and reductions) fails, names it and the size of
%% the change; `other' is not named.
twice_as_slow_fails(Config) ->
    Sample = ?config(sample, Config),
    commits(Sample, #{}, #{work => 2}, "work twice as slow"),
    Json = filename:join(?config(dir, Config), "twice.json"),
    {Code, Out} = sh(Sample, ["rebar3 beamlab check --against HEAD~1 --metric time,reductions "
                              | lists:join(" ", ?TIMED)] ++ " --save " ++ Json, env(Config)),
    ct:log("~ts", [Out]),
    ?assertEqual(1, Code),
    Doc = regressed_work(Out, Json),
    ?assertMatch({_, _}, binary:match(Out, <<"beamlab: failed (the reason is above)">>)),
    #{<<"change">> := R0, <<"verdict">> := <<"unchanged">>} = paired(Doc, <<"other">>, <<"reductions">>),
    ?assert(abs(R0) < 0.005),
    %% the document's history name: the head's commit
    #{params := #{<<"project">> := #{<<"short">> := _}, <<"base">> := #{<<"ref">> := <<"HEAD~1">>}}} = Doc.

%% A commit that changes nothing measurable (a comment, the README)
%% passes the exact gates; its time figures are logged.
no_change_passes(Config) ->
    Sample = ?config(sample, Config),
    Readme = filename:join(Sample, "README.md"),
    ok = file:write_file(Readme, "A sample.\n"),
    commits(Sample, #{work => 2}, #{work => 2, comment => "%% no change in what runs\n"}, "nothing measurable",
            fun() -> file:write_file(Readme, "A sample project.\n") end),
    Json = filename:join(?config(dir, Config), "nochange.json"),
    R = beamlab_test_util:cli(["check", "--against", "HEAD~1", "--metric", "reductions,memory",
                               "--save", Json | ?QUICK], cli_opts(Config)),
    ct:log("~p", [R]),
    ?assertMatch(#{code := 0}, R),
    Doc = load(Json),
    [?assertMatch(#{<<"verdict">> := <<"unchanged">>}, paired(Doc, B, M))
     || B <- [<<"work">>, <<"other">>], M <- [<<"reductions">>, <<"memory">>]],
    %% #35: every paired entry says what its rounds could have seen, and a
    %% `~' of time names it in the text (time's verdict is not asserted:
    %% under load it may be inconclusive)
    [?assert(is_number(maps:get(<<"detectable">>, paired(Doc, B, M)))) || B <- [<<"work">>, <<"other">>],
                                                                           M <- [<<"time">>, <<"reductions">>]],
    [?assertMatch({match, _}, re:run(maps:get(out, R), "  ~ \\(could have seen -[0-9.]+%/\\+[0-9.]+%\\)"))
     || B <- [<<"work">>, <<"other">>], maps:get(<<"verdict">>, paired(Doc, B, <<"time">>)) =:= <<"unchanged">>],
    ct:log("time (not gated, not asserted): ~p",
           [[{B, paired(Doc, B, <<"time">>)} || B <- [<<"work">>, <<"other">>]]]).

%% The commit adds 3% of work to `other'. With the machine loaded by two
%% busy loops the reductions gate at 1% catches it (exact counts, an
%% interval a few hundredths of a percent wide); what the time gate saw
%% is logged. With `--ci 50%' the gated intervals are within it at the
%% least rounds: the run ends as confident, and says so (#35).
reductions_gate_on_loaded_machine(Config) ->
    Sample = ?config(sample, Config),
    commits(Sample, #{work => 2}, #{work => 2, other => 103}, "other does 3% more"),
    Json = filename:join(?config(dir, Config), "loaded.json"),
    Load = [busy_loop() || _ <- lists:seq(1, 2)],
    {R, Alive} =
        try
            Res = beamlab_test_util:cli(["check", "--against", "HEAD~1", "--metric", "reductions",
                                         "--threshold", "1%", "--ci", "50%", "--save", Json | ?QUICK],
                                        cli_opts(Config)),
            {Res, [os:cmd("kill -0 " ++ Pid ++ " && echo alive") =:= "alive\n" || Pid <- Load]}
        after
            [os:cmd("kill " ++ Pid) || Pid <- Load]
        end,
    ct:log("~p", [R]),
    %% the load lasted the whole check
    ?assertEqual([true, true], Alive),
    #{code := 1, err := Err, out := Out} = R,
    ?assertMatch({_, _}, binary:match(Err, <<"regressed beyond +1.00%: other reductions +">>)),
    %% (at the level of the entries' intervals, the table's)
    {match, [Level]} = re:run(Out, "Change +([0-9.]+%) CI", [{capture, all_but_first, binary}]),
    ?assertNotEqual(<<"95%">>, Level),
    ?assertMatch({match, _}, re:run(Out, ["^stopped: confident \\(every ", Level, " interval within (\\+-|±)50% of ",
                                          "its estimate\\)"], [multiline, unicode])),
    Doc = load(Json),
    #{extra := #{<<"stopped_by">> := <<"converged">>, <<"unconfident">> := []},
      params := #{<<"rounds_done">> := 11}} = Doc,
    #{<<"change">> := C, <<"ci">> := [Lo, Hi]} = paired(Doc, <<"other">>, <<"reductions">>),
    ?assert(C > 0.02 andalso C < 0.04),
    ?assert(Hi - Lo < 0.005),
    #{<<"verdict">> := <<"unchanged">>} = paired(Doc, <<"work">>, <<"reductions">>),
    %% Time is not gated and not asserted (a timed assertion would
    %% flake): what it showed is the case's comment.
    #{<<"change">> := TC, <<"ci">> := [TLo, THi], <<"p_value">> := TP, <<"verdict">> := TV} =
        paired(Doc, <<"other">>, <<"time">>),
    Pct = fun beamlab_format_units:signed_percent/1,
    Comment = io_lib:format("other: reductions ~ts [~ts, ~ts] regressed; time (not gated) ~ts [~ts, ~ts] "
                            "p=~.3f ~ts; load average ~ts",
                            [Pct(C), Pct(Lo), Pct(Hi), Pct(TC), Pct(TLo), Pct(THi), float(TP), TV,
                             hd(string:lexemes(os:cmd("cat /proc/loadavg"), " "))]),
    ct:log("~ts", [Comment]),
    {comment, lists:flatten(Comment)}.

%% `check --ci' whose budget is spent (1 ms: at the least rounds) before
%% a target no CPU time reaches, with `--metric cpu' gated: the text and
%% the document say the budget ended it and for which entries; the sides
%% measured CPU time per iteration (`NAME (cpu)', ns). Not an error.
ci_budget_cpu(Config) ->
    Sample = ?config(sample, Config),
    commits(Sample, #{work => 2, other => 103}, #{work => 3, other => 103}, "work x3"),
    Json = filename:join(?config(dir, Config), "ci-cpu.json"),
    R = beamlab_test_util:cli(["check", "--against", "HEAD~1", "--metric", "reductions,cpu", "--ci", "0.01%",
                               "--max-time", "0.001", "--save", Json | ?QUICK], cli_opts(Config)),
    ct:log("~p", [R]),
    #{code := Code, out := Out} = R,
    %% (the gate's verdict on CPU time is the machine's; the rule is not)
    ?assert(Code =:= 0 orelse Code =:= 1),
    Doc = load(Json),
    #{params := #{<<"max_time">> := 1, <<"rounds_done">> := 11, <<"gate">> := Gate},
      extra := #{<<"stopped_by">> := <<"max_time">>, <<"unconfident">> := Unmet}} = Doc,
    ?assertEqual([<<"cpu">>, <<"reductions">>], lists:sort(Gate)),
    ?assert(lists:member(<<"other (cpu)">>, Unmet), Unmet),
    [?assertMatch(#{<<"median_new">> := N} when N > 0, paired(Doc, B, <<"cpu">>)) || B <- [<<"work">>, <<"other">>]],
    ?assertMatch({match, _}, re:run(Out, "^stopped: budget spent before (\\+-|±)0.01% \\(--max-time; "
                                         "not within it: .*other \\(cpu\\)", [multiline, unicode])).

%% Bad values: one line, exit 2, before anything is built.
ci_bad_values(Config) ->
    [begin
         R = #{code := Code, err := Err} = beamlab_test_util:cli(["check" | Args], cli_opts(Config)),
         ct:log("~p", [R]),
         ?assertEqual(2, Code),
         ?assertMatch([_], binary:split(string:trim(Err), <<"\n">>, [global]), Err),
         ?assertMatch({match, _}, re:run(Err, Pattern), {Args, Err})
     end || {Args, Pattern} <- [{["--ci", "2%"], "--ci needs --against REF"},
                                {["--against", "HEAD~1", "--max-time", "5"], "--max-time needs --ci"},
                                {["--against", "HEAD~1", "--ci", "0"], "invalid value '0' for --ci"},
                                {["--against", "HEAD~1", "--metric", "cpu,wall"], "--metric"},
                                %% the default rounds follow the gate (#35): 14, 24 when cpu is gated
                                {["--against", "HEAD~1", "--alpha", "0.00000001"],
                                 "the default --rounds 14 cannot reach .*at least 28"},
                                {["--against", "HEAD~1", "--metric", "time,cpu", "--alpha", "0.00000001"],
                                 "the default --rounds 24 cannot reach .*at least 28"},
                                {["--against", "HEAD~1", "--rounds", "20", "--alpha", "0.00000001"],
                                 "^beamlab: --rounds 20 cannot reach"}]].

%% SIGTERM to the process group (as Ctrl-C or `timeout' send it) in the
%% middle of the rounds: what was measured is printed (partial), exit 130,
%% and the temporary worktree is gone.
interrupt_removes_worktree(Config) ->
    Sample = ?config(sample, Config),
    commits(Sample, #{}, #{work => 2}, "work twice as slow, interrupted"),
    H = beamlab_test_util:cli_start_group(["check", "--against", "HEAD~1", "--rounds", "40",
                                           "-d", "30", "-s", "1", "-w", "0"], cli_opts(Config)),
    _ = beamlab_test_util:wait_for_file(maps:get(err_file, H), "round 2/40", 120000),
    ?assertMatch({_, _}, binary:match(list_to_binary(os:cmd("git -C " ++ Sample ++ " worktree list")),
                                      <<"beamlab-check-">>)),
    ok = beamlab_test_util:signal_group(H, "TERM"),
    R = beamlab_test_util:cli_group_finish(H),
    ct:log("~p", [R]),
    ?assertMatch(#{code := 130}, R),
    ?assertMatch({_, _}, binary:match(maps:get(out, R), <<"interrupted: showing the rounds measured so far">>)),
    Trees = [L || L <- string:lexemes(os:cmd("git -C " ++ Sample ++ " worktree list"), "\n")],
    ?assertEqual(1, length(Trees)),
    ?assertEqual([], filelib:wildcard("beamlab-check-*", ?config(tmp, Config))).

%% `run --bench --save' files runs under .beamlab/history/ by date and
%% commit, never over an earlier one; three commits later (`work' 20
%% times slower, then back), `beamlab report .beamlab/history/' draws
%% each benchmark's trend in commit order, and `compare' prints them.
%% Three single runs give no run-to-run spread to judge a change by (the
%% run is the unit of replication, issue #35): the 20-fold step is shown
%% with its within-run interval and the verdict `within-run only', and
%% the chart marks no change.
history(Config) ->
    Sample = ?config(sample, Config),
    Run = fun() -> beamlab_test_util:cli(["run", "--bench", "bench", "-d", "30", "-s", "8", "--save"],
                                         cli_opts(Config))
          end,
    #{code := 0, err := E1} = Run(),
    #{code := 0, err := E2} = Run(),
    ct:log("~ts~ts", [E1, E2]),
    History = filename:join([Sample, ".beamlab", "history"]),
    Files = lists:sort(filelib:wildcard(filename:join(History, "*.json"))),
    ?assertEqual(2, length(Files)),
    Short = string:trim(os:cmd("git -C " ++ Sample ++ " rev-parse --short HEAD")),
    [?assertMatch({match, _}, re:run(filename:basename(F), "^[0-9]{8}-[0-9]{6}-" ++ Short ++ "(-2)?\\.json$"))
     || F <- Files],
    [#{params := #{<<"project">> := #{<<"short">> := S}}} | _] = [load(F) || F <- Files],
    ?assertEqual(list_to_binary(Short), S),
    ok = file:delete(hd(Files)),
    [begin
         ok = write_sample(Sample, #{work => K, other => 103}),
         commit(Sample, "work x" ++ integer_to_list(K)),
         #{code := 0} = Run()
     end || K <- [40, 2]],
    Html = filename:join(?config(dir, Config), "trend.html"),
    #{code := 0} = beamlab_test_util:cli(["report", History, "-o", Html], cli_opts(Config)),
    #{code := 0, out := Text} = beamlab_test_util:cli(["compare", History], cli_opts(Config)),
    ct:log("~ts", [Text]),
    ?assertMatch({match, _}, re:run(Text, <<"\\+[0-9.]+% .* within-run only">>)),
    ?assertEqual(nomatch, re:run(Text, <<"SLOWER">>)),
    case beamlab_test_util:chromium() of
        false ->
            {comment, "chromium is not installed: the trend chart was not drawn"};
        Chromium ->
            {0, Dom} = sh(?config(dir, Config),
                          [Chromium, " --headless --no-sandbox --disable-gpu --no-first-run "
                           "--disable-background-networking --user-data-dir=", ?config(dir, Config),
                           "/chromium --dump-dom file://", Html, " 2>/dev/null"], []),
            ?assertEqual(<<>>, beamlab_test_util:dom_attr(beamlab_test_util:dom_body(Dom), <<"data-errors">>)),
            {match, Trends} = re:run(Dom, <<"<figure class=\"card\" data-kind=\"trend\">(.*?)</figure>">>,
                                     [global, dotall, {capture, all_but_first, binary}]),
            [Work] = [T || [T] <- Trends, binary:match(T, <<"work">>) =/= nomatch],
            ?assertMatch({_, _}, binary:match(Work, <<"trend-line">>)),
            ?assertEqual(nomatch, binary:match(Work, <<"data-verdict=\"slower\"">>))
    end.

%% The same from an Elixir project: beamlab as a Mix dependency (git URL),
%% an Elixir bench module, `mix beamlab check --against HEAD~1'.
mix_project(Config) ->
    Dir = filename:join(?config(dir, Config), "sample_ex"),
    ok = filelib:ensure_path(filename:join(Dir, "lib")),
    ok = filelib:ensure_path(filename:join(Dir, "bench")),
    Src = ?config(beamlab_src, Config),
    ok = file:write_file(filename:join(Dir, "mix.exs"),
                         ["defmodule SampleEx.MixProject do\n  use Mix.Project\n\n"
                          "  def project do\n"
                          "    [app: :sample_ex, version: \"0.1.0\", elixir: \"~> 1.14\",\n"
                          "     deps: [{:beamlab, git: \"file://", Src, "\", tag: \"v-test\", only: :dev, runtime: false}]]\n"
                          "  end\nend\n"]),
    ok = file:write_file(filename:join(Dir, ".gitignore"), "_build\ndeps\n"),
    ok = file:write_file(filename:join([Dir, "bench", "sample_ex_bench.ex"]),
                         "defmodule SampleExBench do\n"
                         "  def benchmarks do\n"
                         "    [%{name: \"work\", runner: fn -> SampleEx.work(1000) end},\n"
                         "     %{name: \"sized\", runner: fn n -> SampleEx.work(n) end, inputs: [{\"10\", 10}]}]\n"
                         "  end\nend\n"),
    Work = fun(K) ->
                   ok = file:write_file(filename:join([Dir, "lib", "sample_ex.ex"]),
                                        ["defmodule SampleEx do\n"
                                         "  def work(n), do: Enum.reduce(1..(", integer_to_list(K),
                                         " * n), 0, fn x, acc -> acc + x * x end)\nend\n"])
           end,
    ok = Work(1),
    Env = mix_env(Config),
    {0, Get} = sh(Dir, "git init -q && mix deps.get", Env),
    ct:log("~ts", [Get]),
    commit(Dir, "first"),
    ok = Work(2),
    commit(Dir, "work twice as slow"),
    Json = filename:join(?config(dir, Config), "mix.json"),
    {Code, Out} = sh(Dir, ["mix beamlab check --against HEAD~1 --metric time,reductions "
                           | lists:join(" ", ?TIMED)] ++ " --save " ++ Json, Env),
    ct:log("~ts", [Out]),
    ?assertEqual(1, Code),
    Doc = regressed_work(Out, Json),
    #{params := #{<<"project">> := #{<<"tool">> := <<"mix">>}}} = Doc,
    %% docs/ci.md's trend step for Mix, after `mix compile'
    {0, _} = sh(Dir, "mix compile", Env),
    trend_json(Dir, "mix beamlab", Env, Config),
    %% A runner that stops its VM where beamlab cannot see it fails `mix
    %% beamlab check' with beamlab's line (it used to end Mix with 0).
    Halt = filename:join(Dir, "haltbench"),
    ok = filelib:ensure_path(Halt),
    ok = file:write_file(filename:join(Halt, "halt_bench.ex"),
                         "defmodule HaltBench do\n"
                         "  def benchmarks do\n"
                         "    [%{name: \"halt\", runner: fn -> m = :erlang; m.halt(0) end}]\n"
                         "  end\nend\n"),
    {HCode, HOut} = sh(Dir, "mix beamlab check --bench haltbench", Env),
    ct:log("~ts", [HOut]),
    ?assertNotEqual(0, HCode),
    ?assertMatch({_, _}, binary:match(HOut, <<"beamlab: the VM stopped">>)).

%% `TOOL --reductions --memory --format github-smaller > bench.json', as
%% docs/ci.md's GitHub Actions example runs it (shorter samples): stdout
%% is github-action-benchmark's JSON, a reductions and a memory entry per
%% benchmark, and nothing else.
trend_json(Dir, Tool, Env, Config) ->
    Err = filename:join(?config(dir, Config), "trend.err"),
    {0, Out} = sh(Dir, [Tool, " --reductions --memory --format github-smaller -d 30 -s 2 2>", Err], Env),
    ct:log("~ts~n~ts", [Out, element(2, file:read_file(Err))]),
    {ok, Entries} = beamlab_json:decode(Out),
    Names = [N || #{<<"name">> := N, <<"value">> := V} <- Entries, is_number(V)],
    ?assertEqual(length(Entries), length(Names)),
    [?assert(lists:member(<<"work (", M/binary>>, Names), M) || M <- [<<"reductions)">>, <<"memory)">>]].

%% The check's line names `work' with its reductions doubled (the change
%% and its interval), the saved document agrees; what time showed (gated
%% too, not asserted) goes to the log. The document.
regressed_work(Out, Json) ->
    {match, [Pct]} = re:run(Out, "regressed beyond \\+5\\.00%: .*work reductions \\+([0-9.]+)% \\[",
                            [{capture, all_but_first, list}]),
    ?assert(number(Pct) > 90 andalso number(Pct) < 110),
    ?assertEqual(nomatch, re:run(Out, "regressed beyond [^\n]*other")),
    Doc = load(Json),
    #{<<"change">> := R, <<"verdict">> := <<"regressed">>} = paired(Doc, <<"work">>, <<"reductions">>),
    ?assert(R > 0.9 andalso R < 1.1),
    ct:log("work's time (gated, not asserted): ~p", [paired(Doc, <<"work">>, <<"time">>)]),
    Doc.

%%--------------------------------------------------------------------
%% The projects

%% A git repository holding this build's sources (the working tree's, so
%% uncommitted changes are tested too), tagged v-test: what a project
%% names in its rebar.config or mix.exs.
beamlab_source(Dir) ->
    Src = filename:join(Dir, "beamlab-src"),
    Root = beamlab_test_util:root(),
    ok = filelib:ensure_path(Src),
    {0, _} = sh(Root, ["cp -R src include rebar.config '", Src, "'/ && "
                       "(cp rebar.lock '", Src, "'/ 2>/dev/null || true)"], []),
    {0, _} = sh(Src, "git init -q && git add -A && " ++ git_commit("beamlab") ++ " && git tag v-test", []),
    Src.

%% The rebar3 sample: `work' and `other' (each N rounds of a small sum),
%% one bench module, beamlab as a project plugin from a git URL.
rebar3_project(Dir, Src) ->
    Sample = filename:join(Dir, "sample"),
    ok = filelib:ensure_path(filename:join(Sample, "src")),
    ok = filelib:ensure_path(filename:join(Sample, "bench")),
    ok = file:write_file(filename:join(Sample, "rebar.config"),
                         ["{erl_opts, [debug_info]}.\n"
                          "{project_plugins, [{beamlab, {git, \"file://", Src, "\", {tag, \"v-test\"}}}]}.\n"]),
    ok = file:write_file(filename:join([Sample, "src", "sample.app.src"]),
                         "{application, sample, [{description, \"sample\"}, {vsn, \"0.1.0\"},\n"
                         "  {applications, [kernel, stdlib]}, {modules, []}]}.\n"),
    ok = file:write_file(filename:join([Sample, "bench", "sample_bench.erl"]),
                         "-module(sample_bench).\n-export([benchmarks/0]).\n"
                         "benchmarks() ->\n"
                         "    [#{name => \"work\", runner => fun() -> sample:work(1000) end},\n"
                         "     #{name => \"other\", runner => {sample, other, [1000]}}].\n"),
    ok = file:write_file(filename:join(Sample, ".gitignore"), "_build\n.beamlab\n"),
    ok = write_sample(Sample, #{}),
    {0, _} = sh(Sample, "git init -q", []),
    commit(Sample, "first"),
    Sample.

%% work(N) sums N*K squares, other(N) N*O/100.
write_sample(Sample, Opts) ->
    K = integer_to_list(maps:get(work, Opts, 1)),
    O = integer_to_list(maps:get(other, Opts, 100)),
    file:write_file(filename:join([Sample, "src", "sample.erl"]),
                    ["-module(sample).\n-export([work/1, other/1]).\n", maps:get(comment, Opts, ""),
                     "work(N) -> sum(N * ", K, ", 0).\n"
                     "other(N) -> sum(N * ", O, " div 100, 0).\n"
                     "sum(0, Acc) -> Acc;\nsum(I, Acc) -> sum(I - 1, Acc + I * I).\n"]).

%% Two commits of the sample: `Base' (what the case's check is against,
%% HEAD~1), then `Head' (and what `Also' writes besides), whatever the
%% project held before.
commits(Sample, Base, Head, Message) ->
    commits(Sample, Base, Head, Message, fun() -> ok end).

commits(Sample, Base, Head, Message, Also) ->
    ok = write_sample(Sample, Base),
    commit(Sample, "before: " ++ Message),
    ok = write_sample(Sample, Head),
    ok = Also(),
    commit(Sample, Message).

%% (empty when the project already held that state)
commit(Dir, Message) ->
    {0, _} = sh(Dir, "git add -A && " ++ git_commit(Message), []),
    ok.

git_commit(Message) ->
    "git -c user.name=beamlab -c user.email=beamlab@localhost commit -q --allow-empty -m '" ++ Message ++ "'".

%%--------------------------------------------------------------------
%% Helpers

%% Subprocesses see neither this test VM's ERL_LIBS nor its rebar3
%% settings; temporary directories go under the suite's own.
env(Config) ->
    [{"ERL_LIBS", false}, {"REBAR_PROFILE", false}, {"TMPDIR", ?config(tmp, Config)},
     {"REBAR_COLOR", "none"}].

mix_env(Config) ->
    Home = filename:join(?config(dir, Config), "mix-home"),
    [{"MIX_HOME", Home}, {"HEX_HOME", Home}, {"MIX_REBAR3", os:find_executable("rebar3")},
     {"HEX_OFFLINE", "1"} | env(Config)].

cli_opts(Config) ->
    #{dir => ?config(sample, Config), env => env(Config), timeout => 600000}.

sh(Dir, Cmd, Env) ->
    Port = open_port({spawn_executable, "/bin/sh"},
                     [{args, ["-c", lists:flatten(Cmd)]}, {cd, Dir}, {env, Env}, exit_status,
                      stderr_to_stdout, binary]),
    beamlab_test_util:port_output(Port, 600000).

%% A busy loop in a shell of its own; its pid.
busy_loop() ->
    string:trim(os:cmd("sh -c 'while :; do :; done' >/dev/null 2>&1 & echo $!")).

number(S) ->
    case string:to_float(S) of
        {F, ""} -> F;
        _ -> list_to_integer(S)
    end.

load(File) ->
    {ok, Doc} = beamlab_result:load(File),
    Doc.

paired(#{benchmarks := Bs}, Bench, Metric) ->
    [P] = [P || #{group := G, metric := M, extra := #{<<"paired">> := P}} <- Bs, G =:= Bench, M =:= Metric],
    P.
