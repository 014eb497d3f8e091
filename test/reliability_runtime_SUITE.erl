%%% Reliability of the runtime, through the built escript: signals sent to
%%% the process group (as `timeout', `kill -TERM -PGID' and CI runners do),
%%% benchmarked code that stops the VM, leaves busy processes behind, runs
%%% out of memory or makes OTP log, a user workload whose callbacks crash,
%%% bad emulator arguments, and what erlperf's `--cv' means.
%%% docs/reliability.md lists these promises.
-module(reliability_runtime_SUITE).
-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-export([all/0, groups/0, init_per_suite/1, end_per_suite/1,
         init_per_group/2, end_per_group/2]).
-export([group_term_run/1, group_term_suite/1, group_term_matrix/1,
         term_launcher_then_vm_is_one/1, second_interrupt_stops_now/1,
         timed_interrupt_is_prompt/1, group_term_isolated/1, real_timeout/1, group_term_amqp/1,
         stop_signals_amqp/1]).
-export([halting_runner_fails_its_job/1, stopping_hooks_and_forms/1,
         dynamic_halt_is_no_success/1, dynamic_stops_recovered/1, timed_and_squeeze_recovered/1,
         big_allocation_recovered/1, recovered_json_is_valid/1, suite_halting_workload_recovered/1,
         stop_before_measuring_one_line/1, killed_vm_recovered/1, busy_leftovers_do_not_hang/1,
         memory_limit_fails_job/1, memory_watermark_fails_job/1, workload_callbacks_crash/1,
         logs_stay_out_of_json/1]).
-export([bad_vm_args_fail_fast/1, matrix_shows_inner_error/1, clear_messages/1,
         cv_is_a_fraction/1]).

%% The broker's port, chosen free when it starts (beamlab_test_util:
%% start_suite_rabbitmq/1): a fresh machine or a parallel run may hold any
%% fixed one.
-define(AMQP_PORT, beamlab_test_util:suite_broker_port(?MODULE)).

all() ->
    [{group, signals}, {group, runners}, {group, messages}, {group, amqp}].

groups() ->
    [{signals, [], [group_term_run, group_term_suite, group_term_matrix,
                    term_launcher_then_vm_is_one, second_interrupt_stops_now,
                    timed_interrupt_is_prompt, group_term_isolated, real_timeout]},
     {runners, [], [halting_runner_fails_its_job, stopping_hooks_and_forms,
                    dynamic_halt_is_no_success, dynamic_stops_recovered,
                    timed_and_squeeze_recovered, big_allocation_recovered,
                    recovered_json_is_valid, suite_halting_workload_recovered,
                    stop_before_measuring_one_line, killed_vm_recovered,
                    busy_leftovers_do_not_hang,
                    memory_limit_fails_job, memory_watermark_fails_job, workload_callbacks_crash,
                    logs_stay_out_of_json]},
     {messages, [], [bad_vm_args_fail_fast, matrix_shows_inner_error, clear_messages,
                     cv_is_a_fraction]},
     {amqp, [], [group_term_amqp, stop_signals_amqp]}].

init_per_suite(Config) ->
    _ = beamlab_test_util:escript(),
    Config.

end_per_suite(_Config) ->
    ok.

init_per_group(amqp, Config) ->
    ok = beamlab_test_util:start_suite_rabbitmq(?MODULE),
    Config;
init_per_group(_, Config) ->
    Config.

end_per_group(amqp, _Config) ->
    beamlab_test_util:stop_suite_rabbitmq(?MODULE);
end_per_group(_, _Config) ->
    ok.

%%--------------------------------------------------------------------
%% Helpers

start(Args) -> beamlab_test_util:cli_start_group(Args, #{}).

finish(H) ->
    R = beamlab_test_util:cli_group_finish(H),
    ct:log("exit ~p~n--- stdout ---~n~ts~n--- stderr ---~n~ts", [maps:get(code, R), maps:get(out, R), maps:get(err, R)]),
    R.

cli(Args) ->
    cli(Args, #{}).

cli(Args, Opts) ->
    R = beamlab_test_util:cli(Args, Opts),
    ct:log("~p~n--- exit ~p ---~n--- stdout ---~n~ts~n--- stderr ---~n~ts",
           [Args, maps:get(code, R), maps:get(out, R), maps:get(err, R)]),
    R.

%% Runs the escript with a TMPDIR of its own (where the launcher makes its
%% checkpoint directory) and checks that nothing is left there, nor a
%% crash dump in the working directory.
cli_clean(Args) ->
    Tmp = beamlab_test_util:tmp_dir("tmpdir"),
    R = #{dir := Dir} = cli(Args, #{env => [{"TMPDIR", Tmp}]}),
    ?assertEqual({ok, []}, file:list_dir(Tmp)),
    ?assertNot(filelib:is_file(filename:join(Dir, "erl_crash.dump"))),
    ok = file:del_dir(Tmp),
    R.

lines(Bin) ->
    [L || L <- binary:split(Bin, <<"\n">>, [global]), L =/= <<>>].

wait_err(#{err_file := F}, Pattern) ->
    beamlab_test_util:wait_for_file(F, Pattern, 60000).

has(Bin, Re) ->
    case re:run(Bin, Re) of
        {match, _} -> ok;
        nomatch -> error({missing, Re, Bin})
    end.

hasnt(Bin, Re) ->
    case re:run(Bin, Re) of
        nomatch -> ok;
        {match, _} -> error({unexpected, Re, Bin})
    end.

load(Dir, File) ->
    {ok, Doc} = beamlab_result:load(filename:join(Dir, File)),
    Doc.

%%--------------------------------------------------------------------
%% Signals

%% `timeout 3 beamlab ... --save p.json': SIGTERM reaches the launcher and
%% the VM at once. One interrupt: the table is printed, the file saved,
%% exit 130.
group_term_run(_) ->
    H = start(["rand:uniform().", "-d", "100", "-s", "200", "--save", "p.json"]),
    _ = wait_err(H, "sampling round"),
    ok = beamlab_test_util:signal_group(H, "TERM"),
    #{code := Code, out := Out, err := Err, dir := Dir} = finish(H),
    ?assertEqual(130, Code),
    has(Out, "interrupted"),
    has(Out, "rand:uniform\\(\\)\\. +1 +[0-9]+"),
    hasnt(Err, "interrupted twice"),
    #{partial := true, benchmarks := [#{samples := [_ | _]}]} = load(Dir, "p.json").

group_term_suite(_) ->
    H = start(["suite", "fib", "message_load", "-n", "50", "-v", "--param", "message_load.procs=4",
               "--param", "message_load.duration=300", "--save", "s.json"]),
    _ = wait_err(H, "suite: message_load\n(.*\n)*  1: "),
    ok = beamlab_test_util:signal_group(H, "TERM"),
    #{code := Code, out := Out, err := Err, dir := Dir} = finish(H),
    ?assertEqual(130, Code),
    has(Out, "^\\(partial: interrupted"),
    hasnt(Err, "interrupted twice"),
    #{partial := true} = load(Dir, "s.json").

%% The running configuration's VM is told too: the matrix stops at once,
%% leaves the cut repetition out, says partial in its text and its file.
group_term_matrix(_) ->
    H = start(["matrix", "--vm", "+S 1", "--vm", "+S 2", "-n", "3", "--save", "m.json", "--",
               "run", "ok.", "-d", "200", "-s", "500"]),
    %% (each repetition lasts 100 s unless interrupted)
    #{code := Code, out := Out, err := Err, dir := Dir} = stop_matrix(H),
    ?assertEqual(130, Code),
    has(Out, "^\\(partial: interrupted"),
    has(Err, "interrupted \\(left out\\)"),
    hasnt(Err, "interrupted twice"),
    #{partial := true, extra := #{<<"configs">> := [#{<<"errors">> := []} | _]}} = load(Dir, "m.json").

%% The matrix prints nothing before the first repetition ends: interrupt
%% once the configuration's VM runs (a beam.smp below the VM's port
%% program launcher).
stop_matrix(H) ->
    beamlab_test_util:wait_until(
      fun() -> [P || V <- beamlab_test_util:launcher_children(H),
                     C <- string:lexemes(os:cmd("pgrep -P " ++ V), "\n"),
                     P <- string:lexemes(os:cmd("pgrep -P " ++ C ++ " beam.smp"), "\n")] =/= [] end,
      60000, matrix_vm_started),
    ok = beamlab_test_util:signal_group(H, "TERM"),
    finish(H).

%% TERM to the launcher alone (`kill $!'), then to the VM alone: still one
%% interrupt (one forwarded, one direct).
term_launcher_then_vm_is_one(_) ->
    H = #{pgid := Launcher} = start(["ok.", "-d", "100", "-s", "300",
                                     "--done", "file:write_file(\"stopping\", <<>>), timer:sleep(2000)."]),
    _ = wait_err(H, "sampling round"),
    [Vm] = beamlab_test_util:launcher_children(H),
    ok = beamlab_test_util:signal_pid(Launcher, "TERM"),
    %% the run is stopping (its done hook runs): now the VM alone
    _ = beamlab_test_util:wait_for_file(filename:join(maps:get(dir, H), "stopping"), "", 60000),
    ok = beamlab_test_util:signal_pid(Vm, "TERM"),
    #{code := Code, out := Out, err := Err} = finish(H),
    ?assertEqual(130, Code),
    has(Out, "interrupted"),
    hasnt(Err, "interrupted twice").

%% A second interrupt (the first is still being handled: a slow done hook)
%% stops at once. (Signals within a second of an interrupt belong to it,
%% as `timeout' sends two: the hook marks the file a while after it began.)
second_interrupt_stops_now(_) ->
    H = start(["ok.", "-d", "100", "-s", "300", "--deadline", "120000",
               "--done", "timer:sleep(1500), file:write_file(\"stopping\", <<>>), timer:sleep(100000)."]),
    _ = wait_err(H, "sampling round"),
    ok = beamlab_test_util:signal_group(H, "TERM"),
    _ = beamlab_test_util:wait_for_file(filename:join(maps:get(dir, H), "stopping"), "", 60000),
    ok = beamlab_test_util:signal_group(H, "TERM"),
    #{code := Code, err := Err} = finish(H),
    ?assertEqual(130, Code),
    has(Err, "interrupted twice, stopping now").

%% Timed mode with a sample that would take hours: the interrupt is
%% honoured at once (not at the 30 s deadline) and the run is partial.
timed_interrupt_is_prompt(_) ->
    H = start(["ok.", "-l", "1000G", "--init_runner", "file:write_file(\"ready\", <<>>).",
               "--save", "t.json"]),
    _ = beamlab_test_util:wait_for_file(filename:join(maps:get(dir, H), "ready"), "", 60000),
    ok = beamlab_test_util:signal_group(H, "TERM"),
    #{code := Code, out := Out, dir := Dir} = finish(H),
    ?assertEqual(130, Code),
    has(Out, "interrupted"),
    #{partial := true, benchmarks := [#{extra := #{<<"status">> := <<"ok">>}}]} = load(Dir, "t.json").

%% -i: the job's own VM is in another session (no group signal reaches
%% it); the interrupt is passed on to it and it returns what it measured.
group_term_isolated(_) ->
    H = start(["ok.", "--init_runner", "file:write_file(\"ready\", <<>>).", "ok.", "-i",
               "-d", "100", "-s", "500", "--save", "i.json"]),
    _ = beamlab_test_util:wait_for_file(filename:join(maps:get(dir, H), "ready"), "", 60000),
    ok = beamlab_test_util:signal_group(H, "TERM"),
    #{code := Code, err := Err, dir := Dir} = finish(H),
    ?assertEqual(130, Code),
    hasnt(Err, "interrupted twice"),
    #{partial := true, benchmarks := [#{extra := #{<<"status">> := <<"ok">>}}, _]} =
        load(Dir, "i.json").

%% The real `timeout': it signals the launcher and then the whole group,
%% so the launcher may get SIGTERM twice. Still one interrupt: the table
%% is printed and the file saved. `timeout' does the same when it is sent
%% SIGTERM itself, which lets the test choose the moment (once a sample is
%% in) instead of guessing a duration. (`timeout' exits 124 when its own
%% time runs out; with --preserve-status it passes beamlab's 130 on.)
real_timeout(_) ->
    [begin
         H = #{pgid := Timeout} =
             beamlab_test_util:cli_start_group(["rand:uniform().", "-d", "100", "-s", "500",
                                                "--save", "p.json"],
                                               #{prefix => ["timeout", "--preserve-status", "600"]}),
         _ = wait_err(H, "sampling round"),
         ok = beamlab_test_util:signal_pid(Timeout, "TERM"),
         #{code := Code, out := Out, err := Err, dir := Dir} = finish(H),
         ?assertEqual(130, Code),
         has(Out, "interrupted"),
         hasnt(Err, "interrupted twice"),
         #{partial := true} = load(Dir, "p.json")
     end || _ <- lists:seq(1, 5)],
    ok.

group_term_amqp(_) ->
    Uri = "amqp://guest:guest@127.0.0.1:" ++ ?AMQP_PORT ++ "/%2F",
    %% in json mode the PerfTest lines go to stderr
    H = start(["amqp", "-h", Uri, "-z", "120", "-u", "reliability-term", "--format", "json",
               "--save", "a.json"]),
    _ = wait_err(H, ", sent: [1-9]"),
    ok = beamlab_test_util:signal_group(H, "TERM"),
    #{code := Code, out := Out, err := Err, dir := Dir} = finish(H),
    ?assertEqual(130, Code),
    hasnt(Err, "interrupted twice"),
    {ok, #{<<"partial">> := true}} = beamlab_json:decode(Out),
    #{partial := true, extra := #{<<"amqp">> := #{<<"stop">> := <<"interrupted">>}}} = load(Dir, "a.json").

%% Every stop signal is an interrupt for amqp too (issue 27): HUP to the
%% group, QUIT and TERM to the VM alone; each time the run's queue is
%% deleted on the way out (a predeclared-queue run, -p, then finds none).
stop_signals_amqp(_) ->
    Uri = "amqp://guest:guest@127.0.0.1:" ++ ?AMQP_PORT ++ "/%2F",
    [begin
         Queue = "reliability-" ++ string:lowercase(Sig),
         H = beamlab_test_util:cli_start_group(["amqp", "-h", Uri, "-z", "120", "-u", Queue,
                                                "--format", "json"],
                                               #{prefix => ["env", "--default-signal"]}),
         _ = wait_err(H, ", sent: [1-9]"),
         Target = case Who of
                      group -> "-" ++ maps:get(pgid, H);
                      vm -> hd(beamlab_test_util:launcher_children(H))
                  end,
         "" = os:cmd("kill -" ++ Sig ++ " " ++ Target),
         #{code := Code, out := Out} = finish(H),
         ?assertEqual({Sig, 130}, {Sig, Code}),
         {ok, #{<<"partial">> := true}} = beamlab_json:decode(Out),
         #{code := 1, err := Err} = cli(["amqp", "-h", Uri, "-u", Queue, "-p", "-x", "0", "-y", "1",
                                         "-z", "1"]),
         has(Err, "queue " ++ Queue ++ " does not exist")
     end || {Who, Sig} <- [{group, "HUP"}, {vm, "QUIT"}, {vm, "TERM"}]],
    ok.

%%--------------------------------------------------------------------
%% Runners

%% `beamlab 'ok.' 'halt(0).'' used to exit 0 with nothing: the halting job
%% fails (it is never allowed to stop the VM), the other keeps its result.
halting_runner_fails_its_job(_) ->
    [begin
         #{code := Code, out := Out, err := Err, dir := Dir} =
             cli(["ok.", Stop, "-d", "50", "-s", "2", "--save", "h.json" | Extra]),
         ?assertEqual(1, Code),
         has(Out, "ok\\. +1 "),
         has(Err, "which would stop beamlab's VM"),
         #{benchmarks := [#{samples := [_, _]},
                          #{extra := #{<<"status">> := <<"failed">>, <<"error">> := E}}]} =
             load(Dir, "h.json"),
         has(E, Name)
     end || {Stop, Extra, Name} <- [{"halt(0).", [], "erlang:halt/1"},
                                    {"init:stop().", [], "init:stop/0"},
                                    {"halt(0).", ["-i"], "erlang:halt/1"},
                                    {"init:stop().", ["-i"], "init:stop/0"}]],
    ok.

stopping_hooks_and_forms(_) ->
    [begin
         #{code := Code, err := Err} = cli(["ok.", "-d", "50", "-s", "1" | Args]),
         ?assertEqual(1, Code),
         has(Err, Expect)
     end || {Args, Expect} <- [{["apply(erlang, halt, [0])."], "erlang:halt/1"},
                               {["(fun erlang:halt/1)(0)."], "erlang:halt/1"},
                               {["{init, reboot, []}"], "init:reboot/0"},
                               {["r() -> erlang:halt(0, [{flush, false}])."], "erlang:halt/2"},
                               {["ok.", "--init", "init:stop(3)."], "init hook calls init:stop/1"},
                               {["ok.", "--done", "c:q()."], "done hook calls c:q/0"}]],
    ok.

%% A stop beamlab cannot see in the code (the module is a variable) is
%% never exit 0; with -i only that job's VM stops.
dynamic_halt_is_no_success(_) ->
    #{code := Code} = cli(["ok.", "M = erlang, M:halt(0).", "-d", "50", "-s", "1"]),
    ?assertEqual(1, Code),
    %% with -i only that job's VM stops: the other result is kept
    #{code := 1, out := Out, err := Err2, dir := Dir} =
        cli(["ok.", "M = erlang, M:halt(0).", "-i", "-d", "50", "-s", "1", "--save", "d.json"]),
    has(Out, "ok\\. +1 "),
    has(Err2, "the job's VM stopped while measuring"),
    ?assert(byte_size(Err2) < 1000),
    #{benchmarks := [#{samples := [_]}, #{extra := #{<<"status">> := <<"failed">>}}]} =
        load(Dir, "d.json").

%% The VM stopped by code beamlab cannot see (`M:halt(0)', `M:stop()'):
%% the launcher's recovery run prints and saves what the checkpoint held,
%% as an interrupted run: the `ok.' job's samples, the stopping job failed
%% and named in one line with the exit status and the likely cause, the
%% jobs after it not run; exit 1; the checkpoint directory is gone.
dynamic_stops_recovered(_) ->
    [begin
         #{code := Code, out := Out, err := Err, dir := Dir} =
             cli_clean(["ok.", Stop, "rand:uniform().", "-d", "50", "-s", "2", "--save", "d.json"]),
         ?assertEqual(1, Code),
         has(Out, "partial: the VM stopped \\(exit status 0\\) while M = "),
         has(Out, "ok\\. +1 "),
         has(Out, "rand:uniform\\(\\)\\. +1 +not run"),
         [Line, <<"saved: d.json">>] = lines(Err),
         has(Line, ["^beamlab: \\Q", Stop, "\\E: the VM stopped \\(exit status 0\\) while it was measured: "
                    "likely a halt\\(\\) or init:stop\\(\\) call"]),
         #{partial := true,
           benchmarks := [#{samples := [_ | _], extra := #{<<"status">> := <<"ok">>}},
                          #{name := Name, extra := #{<<"status">> := <<"failed">>, <<"error">> := E}},
                          #{samples := [], extra := #{<<"status">> := <<"failed">>,
                                                      <<"not_run">> := true}}],
           extra := #{<<"vm_stopped">> := #{<<"job">> := Name, <<"exit_status">> := 0}}} =
             load(Dir, "d.json"),
         ?assertEqual(unicode:characters_to_binary(Stop), Name),
         has(E, "exit status 0")
     end || Stop <- ["M = erlang, M:halt(0).", "M = init, M:stop()."]],
    %% a run that ends normally leaves nothing behind either
    #{code := 0} = cli_clean(["ok.", "-d", "50", "-s", "1"]),
    ok.

%% The same in timed mode and in concurrency estimation.
timed_and_squeeze_recovered(_) ->
    [begin
         #{code := Code, out := Out, err := Err, dir := Dir} =
             cli_clean(["ok.", "M = erlang, M:halt(3).", "-s", "2", "--save", "t.json" | Mode]),
         ?assertEqual(1, Code),
         has(Out, "ok\\. +[0-9]+ "),
         has(Err, "^beamlab: M = erlang, M:halt\\(3\\)\\.: the VM stopped \\(exit status 3\\)"),
         #{partial := true, params := #{<<"mode">> := ModeName},
           benchmarks := [#{samples := [_ | _]}, #{extra := #{<<"status">> := <<"failed">>}}]} =
             load(Dir, "t.json")
     end || {Mode, ModeName} <- [{["-l", "1000"], <<"timed">>},
                                 {["-q", "--max", "2", "-d", "50"], <<"squeeze">>}]],
    ok.

%% One allocation too large to fit (1 TiB on this machine) ends the
%% emulator: its own line, then beamlab's naming the job, then the saved
%% partial result; no crash dump.
big_allocation_recovered(_) ->
    #{code := Code, out := Out, err := Err, dir := Dir} =
        cli_clean(["ok.", "binary:copy(<<0>>, 1 bsl 40).", "-d", "50", "-s", "2", "--save", "b.json"]),
    ?assertEqual(1, Code),
    has(Out, "ok\\. +1 "),
    [Emulator, Line, <<"saved: b.json">>] = lines(Err),
    has(Emulator, "^binary_alloc: Cannot allocate"),
    has(Line, "^beamlab: binary:copy\\(<<0>>, 1 bsl 40\\)\\.: the VM stopped \\(exit status 1\\) "
              "while it was measured: likely out of memory"),
    #{partial := true,
      benchmarks := [#{samples := [_ | _]}, #{extra := #{<<"status">> := <<"failed">>}}]} =
        load(Dir, "b.json").

%% --format json of a recovered run is one valid result document.
recovered_json_is_valid(_) ->
    #{code := 1, out := Out} =
        cli_clean(["ok.", "M = erlang, M:halt(0).", "-d", "50", "-s", "1", "--format", "json"]),
    {ok, Json} = beamlab_json:decode(Out),
    {ok, #{partial := true, benchmarks := [_, _]}} = beamlab_result:from_json(Json).

%% A user workload that halts the VM on one point of its sweep: the point
%% before it is kept, the halting point is named, the one after it is
%% listed as not run.
suite_halting_workload_recovered(Config) ->
    Dir = workload_module(Config, "haltwl",
                          "info() -> #{name => <<\"haltwl\">>, summary => <<\"halts\">>, definition => <<\"halts\">>,\n"
                          "            unit => <<\"us\">>, better => lower, checks => <<\"none\">>}.",
                          "params() -> [#{key => n, default => [1, 2, 3], full => [1, 2, 3], type => pos_integer,\n"
                          "               help => <<\"n\">>}].",
                          "run(#{n := 2}, _) -> M = list_to_atom(\"erlang\"), M:halt(0);\n"
                          "run(_, _) -> {ok, #{value => 1.0}}."),
    #{code := Code, out := Out, err := Err, dir := Run} =
        cli_clean(["suite", "haltwl", "-pa", Dir, "--save", "s.json"]),
    ?assertEqual(1, Code),
    has(Out, "FAILED haltwl\\[n=2\\]: the VM stopped \\(exit status 0\\)"),
    has(Out, "not run \\(the VM stopped before them\\): haltwl\\[n=3\\]"),
    has(Err, "beamlab: haltwl\\[n=2\\]: the VM stopped \\(exit status 0\\) while this point ran"),
    #{partial := true, benchmarks := [#{name := <<"haltwl[n=1]">>, samples := [_ | _]}],
      extra := #{<<"failures">> := [#{<<"name">> := <<"haltwl[n=2]">>}],
                 <<"not_run">> := [<<"haltwl[n=3]">>]}} = load(Run, "s.json").

%% A VM stopped before anything was measured (a workload's info/0 halts
%% while the suite is planned) has no checkpoint: the launcher's one line.
stop_before_measuring_one_line(Config) ->
    Dir = workload_module(Config, "haltinfo", "info() -> M = list_to_atom(\"erlang\"), M:halt(0).",
                          "params() -> [].", "run(_, _) -> {ok, #{value => 1.0}}."),
    R = #{code := 1, err := Err} = cli_clean(["suite", "haltinfo", "-pa", Dir]),
    beamlab_test_util:assert_one_line_error(R),
    has(Err, "the VM stopped before beamlab finished \\(exit status 0\\)").

%% The VM alone killed with SIGKILL (as the kernel's out-of-memory killer
%% does): the status of the signal as before (137), and the result so far
%% printed and saved.
killed_vm_recovered(_) ->
    H = start(["rand:uniform().", "-d", "100", "-s", "300", "--save", "k.json"]),
    %% three progress lines (one a second at most): a checkpoint with samples
    _ = wait_err(H, "(?s)sampling round.*sampling round.*sampling round"),
    [Vm] = beamlab_test_util:launcher_children(H),
    ok = beamlab_test_util:signal_pid(Vm, "KILL"),
    #{code := Code, out := Out, err := Err, dir := Dir} = finish(H),
    ?assertEqual(137, Code),
    has(Out, "partial: the VM stopped \\(exit status 137\\)"),
    has(Err, "beamlab: rand:uniform\\(\\)\\.: the VM stopped \\(exit status 137\\) while it was "
             "measured: killed by SIGKILL"),
    #{partial := true, benchmarks := [#{samples := [_ | _]}],
      extra := #{<<"vm_stopped">> := #{<<"exit_status">> := 137}}} = load(Dir, "k.json").

busy_leftovers_do_not_hang(_) ->
    #{code := 0, out := Out} = cli(["spawn(fun F() -> F() end).", "ok.", "-d", "100", "-s", "2"]),
    has(Out, "ok\\. +1 ").

%% Under `ulimit -v' a runner that keeps growing its heap: the heap limit
%% stops it, its job fails, the other job's result is printed and saved.
memory_limit_fails_job(_) ->
    H = beamlab_test_util:cli_start_group(
          ["ok.", "r(_, S) -> [binary_to_list(<<0:8000000>>) | S].", "--init_runner", "[].",
           "-d", "500", "-s", "10", "--save", "m.json"],
          #{prefix => ["sh", "-c", "ulimit -v 3000000 && exec \"$@\"", "sh"]}),
    #{code := Code, err := Err, dir := Dir} = finish(H),
    ?assertEqual(1, Code),
    has(Err, "grew past [0-9]+ MB of heap"),
    hasnt(Err, "eheap_alloc"),
    #{benchmarks := [#{samples := [_ | _]}, #{extra := #{<<"status">> := <<"failed">>}}]} =
        load(Dir, "m.json").

%% Memory outside the heap (a list of large binaries: the heap itself
%% stays small): the watermark stops the job holding it.
memory_watermark_fails_job(_) ->
    H = beamlab_test_util:cli_start_group(
          ["ok.", "r(_, S) -> [binary:copy(<<0>>, 100000000) | S].", "--init_runner", "[].",
           "-d", "300", "-s", "40", "--save", "w.json"],
          #{prefix => ["sh", "-c", "ulimit -v 3000000 && exec \"$@\"", "sh"]}),
    #{code := Code, err := Err, dir := Dir} = finish(H),
    ?assertEqual(1, Code),
    has(Err, "the run's memory grew by more than [0-9]+ MB"),
    hasnt(Err, "binary_alloc|stopped before beamlab finished"),
    #{benchmarks := [#{samples := [_ | _]}, #{extra := #{<<"status">> := <<"failed">>}}]} =
        load(Dir, "w.json").

workload_callbacks_crash(Config) ->
    Mods = [{"crashinfo", "info() -> error(oops).", "params() -> []."},
            {"crashparams", "info() -> #{name => <<\"crashparams\">>}.", "params() -> exit(nope)."},
            {"mapless", "info() -> hello.", "params() -> []."}],
    [Dir | _] = [workload_module(Config, M, Info, Params, "run(_, _) -> ok.") || {M, Info, Params} <- Mods],
    [begin
         R = #{code := 2, err := Err} = cli(["suite", M, "-pa", Dir]),
         beamlab_test_util:assert_one_line_error(R),
         hasnt(Err, "internal error"),
         has(Err, Expect)
     end || {M, Expect} <- [{"crashinfo", "info/0 failed: error oops \\(a fault in the workload"},
                            {"crashparams", "params/0 failed: exit nope"},
                            {"mapless", "info/0 returned hello"}]],
    ok.

%% Log events from benchmarked code go to stderr: JSON stays JSON.
logs_stay_out_of_json(_) ->
    [begin
         #{code := 0, out := Out, err := Err} = cli(Args),
         {ok, _} = beamlab_json:decode(Out),
         has(Err, Expect)
     end || {Args, Expect} <- [{["logger:error(\"from-runner\").", "-d", "50", "-s", "1",
                                 "--format", "json"], "from-runner"},
                                {["whereis(kernel_sup) ! unexpected.", "-d", "50", "-s", "1",
                                  "--format", "json"], "unexpected message"},
                                {["logger:error(\"x\").", "-i", "-d", "50", "-s", "1",
                                  "--format", "json"], ""},
                                {["matrix", "-n", "1", "--format", "json", "--",
                                  "run", "logger:error(\"x\").", "-d", "50", "-s", "1"], ""}]],
    ok.

%%--------------------------------------------------------------------
%% Messages

bad_vm_args_fail_fast(_) ->
    %% a VM that stops itself: one short line, never the code it was sent
    #{code := 1, err := Err} = cli(["ok.", "-i", "--vm-args", "-eval halt(3)", "-d", "50", "-s", "1"]),
    ?assert(byte_size(Err) < 1000),
    has(Err, "stopped before beamlab's code was loaded"),
    [begin
         R = #{code := 2, out := Out, err := E} = cli(Args),
         beamlab_test_util:assert_one_line_error(R),
         hasnt(Out, "Eshell"),
         has(E, Expect)
     end || {Args, Expect} <- [{["ok.", "-i", "--vm-args", "\"unterminated"], "unterminated \" quote"},
                               {["ok.", "-i", "--vm-args", "foo +S 1"], "'foo' is not a flag"},
                               {["matrix", "--vm", "'+S 1", "--", "run", "ok."], "unterminated ' quote"},
                               {["matrix", "--wrap", "\"taskset -c 0", "--", "run", "ok."],
                                "--wrap \"taskset -c 0: unterminated \" quote"}]],
    ok.

matrix_shows_inner_error(_) ->
    %% The inner command is parsed before any VM starts (#21, #27 item
    %% 8): its mistake is the matrix's usage error, in one line.
    #{code := 2, out := Out, err := Err} = R = cli(["matrix", "-n", "1", "--", "run", "ok.", "--bogus"]),
    beamlab_test_util:assert_one_line_error(R),
    has(Err, "unknown option '--bogus'"),
    ?assertEqual(<<>>, Out),
    #{code := 1, err := Err2} = cli(["matrix", "-n", "1", "--", "run", "error(boom).", "-d", "50", "-s", "1"]),
    has(Err2, "runner failed: error boom").

clear_messages(_) ->
    [begin
         R = #{code := 2, err := Err} = cli(Args),
         beamlab_test_util:assert_one_line_error(R),
         has(Err, Expect),
         hasnt(Err, "<<")
     end || {Args, Expect} <- [{["ok.", "-q", "--min", "5", "--max", "2"], "--min 5 is above --max 2"},
                               {["ok.", "ok.", "--baseline", "nosuch"], "baseline 'nosuch' is neither"}]],
    ok.

%% erlperf's --cv 0.05 is 5%; so is 5%; a bare 5 is refused with a hint.
cv_is_a_fraction(_) ->
    Cv = fun(V) ->
                 #{code := 0, out := Out} = cli(["ok.", "--cv", V, "-s", "3", "-d", "50",
                                                 "--max-samples", "30", "--format", "json"]),
                 {ok, #{<<"params">> := P, <<"benchmarks">> := [#{<<"samples">> := S}]}} =
                     beamlab_json:decode(Out),
                 ?assert(length(S) >= 3 andalso length(S) =< 30),
                 maps:get(<<"cv">>, P)
         end,
    ?assertEqual(0.5, Cv("0.5")),
    ?assertEqual(0.5, Cv("50%")),
    R = #{code := 2, err := Err} = cli(["ok.", "--cv", "5"]),
    beamlab_test_util:assert_one_line_error(R),
    has(Err, "0.05 means 5%"),
    #{code := 0, out := Out} = cli(["ok.", "--rel-ci", "0.5", "-s", "3", "-d", "50",
                                     "--max-samples", "30", "--format", "json"]),
    {ok, #{<<"params">> := #{<<"rel_ci">> := 0.5}}} = beamlab_json:decode(Out).

%% Compiles a user workload module NAME (the given info/0, params/0 and
%% run/2 clauses, trivial setup and teardown) into the case's priv_dir,
%% which it returns for `-pa'.
workload_module(Config, Name, Info, Params, Run) ->
    Dir = ?config(priv_dir, Config),
    Src = filename:join(Dir, Name ++ ".erl"),
    ok = file:write_file(Src, ["-module(", Name, ").\n"
                               "-export([info/0, params/0, setup/1, run/2, teardown/1]).\n",
                               Info, "\n", Params, "\nsetup(P) -> {ok, P}.\n", Run, "\nteardown(_) -> ok.\n"]),
    {ok, _} = compile:file(Src, [{outdir, Dir}, return_errors]),
    Dir.
