%% Common Test suite of the workload suite: every workload's definition
%% (counts, conservation, parameters honoured) through beamlab_suite, the
%% harness (isolation VM, timeout, interrupt, failures) and the CLI through
%% the built ./beamlab.
-module(suite_SUITE).
-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-export([all/0, groups/0, init_per_suite/1, end_per_suite/1]).
-export([ping_pong_remote/1, cli_interrupt_partial/1, cli_ctrl_c_partial/1]).
-export([fib/1, spawn_variants/1, skynet/1, send/1, ping_pong_local/1,
         ping_pong_peer/1, ring_hops/1, ring_termite/1, thread_ring/1, big/1, big_bencherl/1,
         bang/1, bang_bencherl/1, message_load_conservation/1, message_load_unrecorded/1,
         message_load_mesh/1, selective_receive_shapes/1,
         selective_receive_asm/1, serialization/1, ets/1, gen_server/1,
         failed_check_reported/1, isolated_vm_for_process_limit/1,
         not_enough_memory/1, repetition_timeout/1, interrupt_partial/1,
         crash_reported/1]).
-export([cli_preset_termite/1, cli_preset_message_load/1, cli_verbose_scheduler_utilisation/1]).
-export([cli_list/1, cli_bad_params/1, cli_user_workload_pa/1, cli_json_parsed_back/1,
         cli_text_report/1, cli_text_unicode_and_ascii/1, cli_check_failure_exit_code/1]).
-export([cli_ci_budget_spent/1, cli_ci_confident_cpu/1, cli_ci_bad_values/1, cli_peer_leaves_no_epmd/1,
         cli_verbose_peers_are_own/1, cpu_short_against_long/1]).

all() -> [{group, workloads}, {group, harness}, {group, cli}].

groups() ->
    [{workloads, [], [fib, spawn_variants, skynet, send, ping_pong_local,
                      ping_pong_peer, ping_pong_remote, ring_hops, ring_termite, thread_ring,
                      big, big_bencherl, bang, bang_bencherl, message_load_conservation,
                      message_load_unrecorded, message_load_mesh, selective_receive_shapes,
                      selective_receive_asm, serialization, ets, gen_server]},
     {harness, [], [failed_check_reported, isolated_vm_for_process_limit, cpu_short_against_long,
                    not_enough_memory, repetition_timeout, interrupt_partial,
                    crash_reported]},
     {cli, [], [cli_list, cli_bad_params, cli_user_workload_pa, cli_json_parsed_back,
                cli_text_report, cli_text_unicode_and_ascii, cli_check_failure_exit_code,
                cli_interrupt_partial, cli_ctrl_c_partial, cli_preset_termite,
                cli_preset_message_load, cli_verbose_scheduler_utilisation,
                cli_ci_budget_spent, cli_ci_confident_cpu, cli_ci_bad_values, cli_peer_leaves_no_epmd,
                cli_verbose_peers_are_own]}].

init_per_suite(Config) ->
    Dir = ?config(priv_dir, Config),
    ok = compile_user_workloads(Dir),
    true = code:add_patha(Dir),
    [{workload_dir, Dir} | Config].

end_per_suite(_Config) -> ok.

%% Runs workload Name with textual overrides, returns the benchmarks.
run(Name, Params) -> run(Name, Params, #{repeat => 1, warmup => false}).

run(Name, Params, Opts) ->
    {ok, Plan} = beamlab_suite:plan([Name], quick, #{list_to_binary(Name) => Params}),
    {ok, Doc} = beamlab_suite:run(Plan, Opts),
    ?assertEqual([], maps:get(<<"failures">>, maps:get(extra, Doc))),
    maps:get(benchmarks, Doc).

ok_check(#{extra := #{<<"check">> := C}}) -> ?assertEqual(<<"ok">>, C).

fib(_) ->
    [B] = run("fib", #{n => ["20"]}),
    ok_check(B),
    %% fib(20) makes 2*fib(21)-1 calls.
    ?assertEqual(#{<<"calls">> => 2 * 10946 - 1}, maps:get(counters, B)),
    ?assertMatch(#{unit := <<"ms">>, params := #{<<"n">> := 20}}, B).

spawn_variants(_) ->
    Bs = run("spawn", #{n => ["500"], variant => ["termite", "plain", "link", "monitor"]}),
    ?assertEqual([<<"spawn[variant=termite]">>, <<"spawn[variant=plain]">>, <<"spawn[variant=link]">>,
                  <<"spawn[variant=monitor]">>], [N || #{name := N} <- Bs]),
    [Termite | Waiting] = Bs,
    ok_check(Termite),
    %% termite times the spawn loop only; every child still ran and exited
    ?assertEqual(#{<<"spawned">> => 500, <<"processes_left">> => 0}, maps:get(counters, Termite)),
    [begin ok_check(B),
           ?assertEqual(#{<<"spawned">> => 500, <<"finished">> => 500}, maps:get(counters, B))
     end || B <- Waiting].

skynet(_) ->
    [B] = run("skynet", #{size => ["1000"]}),
    ok_check(B),
    ?assertEqual(#{<<"processes">> => 1111, <<"sum">> => 499500, <<"processes_left">> => 0},
                 maps:get(counters, B)).

send(_) ->
    [B] = run("send", #{n => ["1234"]}),
    ok_check(B),
    ?assertEqual(#{<<"sent">> => 1234, <<"received">> => 1234}, maps:get(counters, B)).

ping_pong_local(_) ->
    Bs = run("ping_pong", #{n => ["300"], size => ["0", "100"], payload => ["list", "binary"]}),
    ?assertEqual(4, length(Bs)),
    [begin ok_check(B),
           ?assertEqual(#{<<"sent">> => 300, <<"received">> => 300, <<"ponged">> => 300}, maps:get(counters, B))
     end || B <- Bs],
    ?assertEqual(<<"ping_pong[size=100,payload=binary]">>, maps:get(name, lists:last(Bs))).

ping_pong_peer(_) ->
    [B] = run("ping_pong", #{n => ["200"], size => ["10"], payload => ["list"], vm => ["peer"]}),
    ok_check(B),
    ?assertEqual(#{<<"sent">> => 200, <<"received">> => 200, <<"ponged">> => 200}, maps:get(counters, B)),
    ?assertMatch(#{<<"vm">> := <<"peer">>}, maps:get(params, B)).

%% A node the suite did not start, without beamlab's code: the workload
%% loads its ponger module there.
ping_pong_remote(_) ->
    {ok, Vm} = beamlab_runtime_peer:start(#{dist => true, load => false}),
    try
        Node = beamlab_runtime_peer:node(Vm),
        false = beamlab_runtime_peer:call(Vm, code, is_loaded, [beamlab_workload_ping_pong]),
        [B] = run("ping_pong", #{n => ["100"], size => ["3"], payload => ["binary"],
                                 node => [atom_to_list(Node)]}),
        ok_check(B),
        ?assertEqual(#{<<"sent">> => 100, <<"received">> => 100, <<"ponged">> => 100},
                     maps:with([<<"sent">>, <<"received">>, <<"ponged">>], maps:get(counters, B))),
        %% The result names both nodes and the link (issue 13).
        ?assertMatch(#{<<"ponger_node">> := _, <<"pinger_node">> := _, <<"link">> := _},
                     maps:get(counters, B)),
        ?assertMatch(#{<<"vm">> := <<"remote">>}, maps:get(params, B)),
        ?assertMatch({file, _}, beamlab_runtime_peer:call(Vm, code, is_loaded, [beamlab_workload_ping_pong]))
    after
        beamlab_runtime_peer:stop(Vm)
    end.

%% Termite's ring N/K: the caller is the last relay; with K = 0 it returns
%% at once and exactly one 0 comes back to it; every relay exits.
ring_termite(_) ->
    Bs = run("ring", #{n => ["1", "50"], k => ["0"]}) ++ run("ring", #{n => ["50"], k => ["4", "49"]}),
    Primary = [B || #{metric := <<"per_process">>} = B <- Bs],
    ?assertEqual([<<"ring[n=1]">>, <<"ring[n=50]">>, <<"ring[k=4]">>, <<"ring[k=49]">>],
                 [N || #{name := N} <- Primary]),
    [ok_check(B) || B <- Bs],
    ?assertEqual([{1, 0, 1}, {50, 0, 1}, {50, 4, 0}, {50, 49, 0}],
                 [{P, K, Back} || #{counters := #{<<"processes">> := P, <<"token">> := K,
                                                  <<"tokens_back_after">> := Back,
                                                  <<"processes_left">> := 0}} <- Primary]),
    ?assertEqual(4, length([B || #{metric := <<"total">>, unit := <<"ms">>} = B <- Bs])).

ring_hops(_) ->
    Bs = run("ring", #{variant => ["laps"], n => ["1", "7", "100"], m => ["3"]}),
    Hops = [C || #{metric := <<"hop">>, counters := C} <- Bs],
    ?assertEqual([#{<<"processes">> => 1, <<"hops">> => 3}, #{<<"processes">> => 7, <<"hops">> => 21},
                  #{<<"processes">> => 100, <<"hops">> => 300}], Hops),
    [ok_check(B) || B <- Bs],
    %% creation is reported as its own benchmark
    ?assertEqual([<<"ring[n=1]/create">>, <<"ring[n=7]/create">>, <<"ring[n=100]/create">>],
                 [N || #{metric := <<"create">>, name := N} <- Bs]).

thread_ring(_) ->
    [B] = run("thread_ring", #{n => ["503"], token => ["1000"]}),
    ok_check(B),
    ?assertEqual(#{<<"hops">> => 1000, <<"winner">> => 1000 rem 503 + 1}, maps:get(counters, B)).

%% bencherl: every process pings every process; N done messages, and each
%% process exits on die.
big_bencherl(_) ->
    [B] = run("big", #{n => ["10"]}),
    ok_check(B),
    ?assertEqual(#{<<"done">> => 10, <<"pings">> => 100, <<"pongs">> => 100, <<"exited">> => 10},
                 maps:get(counters, B)),
    ?assertEqual(#{<<"variant">> => <<"bencherl">>, <<"n">> => 10}, maps:get(params, B)).

big(_) ->
    [B] = run("big", #{variant => ["savina"], n => ["10"], m => ["30"]}),
    ok_check(B),
    ?assertEqual(#{<<"pings_sent">> => 300, <<"pings_answered">> => 300, <<"pongs_received">> => 300},
                 maps:get(counters, B)).

bang(_) ->
    [B] = run("bang", #{variant => ["gated"], senders => ["7"], m => ["50"]}),
    ok_check(B),
    ?assertEqual(#{<<"sent">> => 350, <<"received">> => 350}, maps:get(counters, B)).

%% bencherl: the shared tuple, matched S*M times, nothing else left.
bang_bencherl(_) ->
    [B] = run("bang", #{senders => ["7"], m => ["50"]}),
    ok_check(B),
    ?assertEqual(#{<<"sent">> => 350, <<"received">> => 350, <<"left">> => 0}, maps:get(counters, B)).

%% The original loop: every message sent is goodput, discarded, flushed or
%% left at the end; self-picks send nothing; the shared ETS goodput count,
%% the processes' own count and the histogram agree.
message_load_conservation(_) ->
    Bs = run("message_load", #{procs => ["8"], wait => ["2"], warmup => ["100"],
                               duration => ["1200"]}),
    [Good | Secondary] = Bs,
    ok_check(Good),
    ?assertEqual([<<"latency_mean">>, <<"flushput">>, <<"total">>, <<"latency_p99">>],
                 [M || #{metric := M} <- Secondary]),
    #{<<"loops">> := L, <<"sent">> := S, <<"self_picks">> := SP, <<"goodput">> := G,
      <<"discarded">> := D, <<"flushed">> := F, <<"left">> := Left,
      <<"measured_goodput">> := MG} = maps:get(counters, Good),
    ?assertEqual(S, G + D + F + Left),
    ?assertEqual(L, S + SP),
    %% one pick in 8 is the process itself
    ?assert(SP > 0 andalso SP < L div 4),
    ?assert(MG > 0 andalso MG =< G),
    #{<<"latency_us">> := Lat, <<"series">> := Series} = maps:get(extra, Good),
    ?assertEqual(MG, maps:get(<<"count">>, Lat)),
    #{<<"p50">> := P50, <<"p99">> := P99, <<"max">> := Max} = Lat,
    ?assert(P50 =< P99 andalso P99 =< Max),
    %% 1.2 s measured: two per-second points, summing to the measured goodput
    ?assertEqual([1, 2], [Sec || #{<<"second">> := Sec} <- Series]),
    ?assertEqual(MG, lists:sum([G1 || #{<<"goodput">> := G1} <- Series])),
    %% total = goodput + flushput
    [#{stats := #{median := Total}}] = [B || #{metric := <<"total">>} = B <- Secondary],
    [#{stats := #{median := Flushput}}] = [B || #{metric := <<"flushput">>} = B <- Secondary],
    ?assert(abs(Total - (maps:get(median, maps:get(stats, Good)) + Flushput)) < 1.0e-6 * Total).

%% record=false: the original's work only - no histogram, no series, no p99.
message_load_unrecorded(_) ->
    [Good | Secondary] = run("message_load", #{procs => ["4"], warmup => ["50"], duration => ["300"],
                                               record => ["false"]}),
    ok_check(Good),
    ?assertEqual([<<"latency_mean">>, <<"flushput">>, <<"total">>], [M || #{metric := M} <- Secondary]),
    %% (and the point it measures, which the report's titles name)
    ?assertEqual(#{<<"check">> => <<"ok">>, <<"point">> => maps:get(name, Good)}, maps:get(extra, Good)).

%% The mesh: a self-pick re-picks, every received message is goodput.
message_load_mesh(_) ->
    [Good | _] = run("message_load", #{variant => ["mesh"], procs => ["8"], wait => ["2"],
                                       warmup => ["50"], duration => ["300"]}),
    ok_check(Good),
    #{<<"sent">> := S, <<"goodput">> := G, <<"discarded">> := 0, <<"flushed">> := F,
      <<"left">> := Left} = maps:get(counters, Good),
    ?assertEqual(S, G + F + Left).

selective_receive_shapes(_) ->
    Bs = run("selective_receive", #{queued => ["3000"], k => ["200"]}),
    [Fresh, Opaque] = Bs,
    [begin ok_check(B),
           ?assertEqual(#{<<"received">> => 200, <<"queued">> => 3000}, maps:get(counters, B))
     end || B <- Bs],
    ?assertEqual(<<"selective_receive[ref=fresh]">>, maps:get(name, Fresh)),
    ?assertEqual(<<"selective_receive[ref=opaque]">>, maps:get(name, Opaque)).

%% The optimisation is a compile-time transformation: the fresh shape must
%% carry receive-marker instructions, the opaque shape must not.
selective_receive_asm(_) ->
    Src = filename:join([code:lib_dir(beamlab), "src", "workloads",
                         "beamlab_workload_selective_receive.erl"]),
    Src1 = case filelib:is_regular(Src) of
               true -> Src;
               false -> proplists:get_value(source, beamlab_workload_selective_receive:module_info(compile))
           end,
    {ok, _, {_, _, _, Asm, _}} = compile:file(Src1, ['S', binary, return_errors]),
    Markers = fun(Name) ->
                      [Code] = [C || {function, N, 3, _, C} <- Asm, N =:= Name],
                      [I || I <- Code, is_tuple(I),
                            lists:member(element(1, I), [recv_marker_reserve, recv_marker_bind,
                                                         recv_marker_use])]
              end,
    ?assertMatch([_, _, _], lists:usort([element(1, I) || I <- Markers(fresh_loop)])),
    ?assertEqual([], Markers(opaque_loop)).

serialization(_) ->
    Bs = run("serialization", #{k => ["3"], compressed => ["0", "6"], term => ["map_of_lists"]}),
    [Plain, Compressed] = Bs,
    [ok_check(B) || B <- Bs],
    #{<<"encoded_bytes">> := S0} = maps:get(counters, Plain),
    #{<<"encoded_bytes">> := S6} = maps:get(counters, Compressed),
    ?assertEqual(byte_size(term_to_binary(beamlab_workload_serialization:term(map_of_lists),
                                          [{minor_version, 1}])), S0),
    ?assert(S6 < S0).

ets(_) ->
    Bs = run("ets", #{readers => ["3"], writers => ["2"], ops => ["400"], keys => ["50"]}),
    ?assertEqual(4, length(Bs)),
    [begin ok_check(B),
           ?assertEqual(#{<<"lookups">> => 1200, <<"found">> => 1200, <<"inserts">> => 800}, maps:get(counters, B))
     end || B <- Bs].

gen_server(_) ->
    [B] = run("gen_server", #{clients => ["5"], calls => ["40"]}),
    ok_check(B),
    ?assertEqual(#{<<"calls">> => 200, <<"replies">> => 200, <<"handled">> => 200}, maps:get(counters, B)).

%% --- harness -------------------------------------------------------------

failed_check_reported(_) ->
    [B] = run("suite_test_workload", #{mode => ["bad_check"]}),
    ?assertEqual(<<"failed: answer: expected 42, got 41">>, maps:get(<<"check">>, maps:get(extra, B))).

%% --metric cpu: a repetition's CPU time is read over at least 100 ms of
%% its runs, so a short workload's CPU per run keeps its proportion to a
%% long one's: fib(12) makes 465 calls, fib(20) 21891 (47x), and their
%% CPU per run is the same code's (more than 15x apart; the runs'
%% own overhead takes some). Read around one run (as before), fib(12)'s
%% microseconds drowned in the reading's ~0.1 ms and a kernel tick's lag:
%% the two read 2-3x apart.
cpu_short_against_long(_) ->
    Cpu = fun(N) ->
                  Bs = run("fib", #{n => [integer_to_list(N)]}, #{repeat => 3, warmup => true, metric => cpu}),
                  [#{samples := S, extra := #{<<"cpu_runs">> := Runs}}] =
                      [B || #{name := <<"fib/cpu">>} = B <- Bs],
                  ct:log("fib(~b): ~p ms per run over ~p runs", [N, S, Runs]),
                  {lists:sort(S), Runs}
          end,
    {Short, ShortRuns} = Cpu(12),
    {Long, _} = Cpu(20),
    %% (each repetition of the short one ran many times over its span)
    ?assert(lists:all(fun(R) -> R > 10 end, ShortRuns)),
    Median = fun(L) -> lists:nth(2, L) end,
    ?assert(Median(Long) / Median(Short) > 15, {Short, Long}).

isolated_vm_for_process_limit(_) ->
    Limit = erlang:system_info(process_limit),
    [B] = run("suite_test_workload", #{mode => ["ok"], procs => [integer_to_list(Limit + 1000)]}),
    %% Counters are a JSON object in the document: binary keys.
    #{<<"process_limit">> := L, <<"node">> := N} = maps:get(counters, B),
    ?assert(L > Limit),
    ?assertNotEqual(atom_to_binary(node()), N).

not_enough_memory(_) ->
    {ok, Plan} = beamlab_suite:plan(["suite_test_workload"], quick,
                                    #{<<"suite_test_workload">> => #{procs => ["100000000000"]}}),
    {ok, Doc} = beamlab_suite:run(Plan, #{repeat => 1}),
    [#{<<"name">> := <<"suite_test_workload">>, <<"error">> := Msg}] = maps:get(<<"failures">>, maps:get(extra, Doc)),
    ?assertMatch({match, _}, re:run(Msg, "^needs about \\d+ MB for 100000010000 processes "
                                         "but only \\d+ MB of memory is available$")),
    ?assertEqual([], maps:get(benchmarks, Doc)).

repetition_timeout(_) ->
    {ok, Plan} = beamlab_suite:plan(["suite_test_workload"], quick,
                                    #{<<"suite_test_workload">> => #{mode => ["sleep"]}}),
    {ok, Doc} = beamlab_suite:run(Plan, #{repeat => 3, timeout => 300}),
    [#{<<"error">> := Msg}] = maps:get(<<"failures">>, maps:get(extra, Doc)),
    ?assertEqual(<<"a repetition took longer than the timeout (0 s)">>, Msg).

interrupt_partial(_) ->
    {ok, Plan} = beamlab_suite:plan(["fib", "suite_test_workload"], quick,
                                    #{<<"fib">> => #{n => ["10"]},
                                      <<"suite_test_workload">> => #{mode => ["sleep"]}}),
    Self = self(),
    Progress = fun({point_start, <<"suite_test_workload">>, _}) -> Self ! started;
                  (_) -> ok end,
    Runner = spawn(fun() ->
                           Self ! {doc, beamlab_suite:run(Plan, #{repeat => 2, progress => Progress})}
                   end),
    receive started -> ok end,
    Runner ! {beamlab_interrupt, sigterm},
    {ok, Doc} = receive {doc, D} -> D after 10000 -> error(no_result) end,
    ?assertEqual(true, maps:get(partial, Doc)),
    ?assertEqual([<<"fib">>], [N || #{name := N} <- maps:get(benchmarks, Doc)]).

crash_reported(_) ->
    {ok, Plan} = beamlab_suite:plan(["suite_test_workload"], quick,
                                    #{<<"suite_test_workload">> => #{mode => ["crash"]}}),
    {ok, Doc} = beamlab_suite:run(Plan, #{repeat => 1}),
    [#{<<"error">> := Msg}] = maps:get(<<"failures">>, maps:get(extra, Doc)),
    ?assertMatch({match, _}, re:run(Msg, "^run crashed: error:\\{badmatch,41\\} in suite_test_workload:run/2 \\(line \\d+\\)$")).

%% A user workload (not in beamlab) used by the harness and CLI tests.
compile_user_workloads(Dir) ->
    Src = filename:join(Dir, "suite_test_workload.erl"),
    ok = file:write_file(Src, user_workload_source()),
    {ok, suite_test_workload} = compile:file(Src, [{outdir, Dir}, return_errors]),
    ok.

user_workload_source() ->
    <<"-module(suite_test_workload).\n"
      "-export([info/0, params/0, setup/1, run/2, teardown/1, processes/1]).\n"
      "info() -> #{name => <<\"suite_test_workload\">>, summary => <<\"test workload\">>,\n"
      "            definition => <<\"answers 42\">>, unit => <<\"us\">>, better => lower,\n"
      "            checks => <<\"the answer is 42\">>}.\n"
      "params() -> [#{key => mode, default => ok, full => ok,\n"
      "               type => {enum, [ok, bad_check, sleep, crash]}, help => <<\"behaviour\">>},\n"
      "             #{key => procs, default => 1, full => 1, type => pos_integer,\n"
      "               help => <<\"claimed peak processes\">>}].\n"
      "processes(#{procs := P}) -> P.\n"
      "setup(_) -> {ok, none}.\n"
      "run(none, #{mode := Mode}) ->\n"
      "    Answer = case Mode of bad_check -> 41; _ -> 42 end,\n"
      "    Mode =:= sleep andalso timer:sleep(60000),\n"
      "    Mode =:= crash andalso begin 42 = Answer - 1 end,\n"
      "    {ok, #{value => 1.5,\n"
      "           counters => #{process_limit => erlang:system_info(process_limit),\n"
      "                         node => atom_to_binary(node())},\n"
      "           check => case Answer of 42 -> ok;\n"
      "                      _ -> {failed, <<\"answer: expected 42, got 41\">>} end}}.\n"
      "teardown(_) -> ok.\n">>.

%% --- CLI (the built ./beamlab) ---------------------------------------------

cli(Args) -> beamlab_test_util:cli(Args).
cli(Args, Opts) -> beamlab_test_util:cli(Args, Opts).

%% --ci with a target no repetitions reach (0.01%) and a budget of 1 ms
%% per point: every point stops on its budget, the text and the saved
%% document say so, for which points; not an error.
cli_ci_budget_spent(Config) ->
    Json = filename:join(?config(priv_dir, Config), "ci-budget.json"),
    #{code := 0, out := Out} = cli(["suite", "fib", "send", "--param", "fib.n=10", "-n", "1",
                                    "--ci", "0.01%", "--max-time", "0.001", "--save", Json]),
    {ok, Doc} = beamlab_result:load(Json),
    #{params := #{<<"ci">> := Ci, <<"max_time">> := 1},
      extra := #{<<"stopped_by">> := <<"max_time">>, <<"unconfident">> := Unmet}, benchmarks := Bs} = Doc,
    ?assert(abs(Ci - 0.0001) < 1.0e-12),
    Points = [N || #{name := N, extra := #{<<"stopped_by">> := <<"max_time">>}} <- Bs],
    ?assertEqual([<<"fib">>, <<"send">>], lists:sort(Points)),
    ?assertEqual(lists:sort(Points), lists:sort(Unmet)),
    ?assertMatch({match, _}, re:run(Out, "^stopped: budget spent before (\\+-|±)0.01% \\(--max-time; "
                                         "not within it: fib, send\\)", [multiline, unicode])),
    %% the report says it too
    Html = filename:join(?config(priv_dir, Config), "ci-budget.html"),
    #{code := 0} = cli(["report", Json, "-o", Html]),
    {ok, Page} = file:read_file(Html),
    ?assertMatch({_, _}, binary:match(Page, <<"stopped: budget spent before ±0.01% (--max-time; "
                                              "not within it: fib, send)"/utf8>>)).

%% --ci with a target the repetitions reach (99%) and --metric cpu: the
%% point repeats past -n until its CPU time's interval is within it,
%% stopped as confident; each repetition's CPU time is the NAME/cpu
%% benchmark (ms), as many values as repetitions.
cli_ci_confident_cpu(_Config) ->
    #{code := 0, out := Out, dir := Dir} = cli(["suite", "fib", "--param", "fib.n=15", "-n", "2", "--ci", "99%",
                                                "--metric", "cpu", "--save", "confident.json"]),
    %% the text says what ended it (#35), the saved document too
    ?assertMatch({match, _}, re:run(Out, "^stopped: confident \\(every 95% interval within (\\+-|±)99% of its "
                                         "estimate\\)", [multiline, unicode])),
    {ok, Saved} = file:read_file(filename:join(Dir, "confident.json")),
    {ok, Doc} = beamlab_json:decode(Saved),
    #{<<"params">> := #{<<"metric">> := <<"cpu">>, <<"max_time">> := 600000},
      <<"extra">> := #{<<"stopped_by">> := <<"converged">>, <<"unconfident">> := []},
      <<"benchmarks">> := Bs} = Doc,
    [#{<<"samples">> := Own, <<"extra">> := #{<<"stopped_by">> := <<"converged">>}}] =
        [B || #{<<"name">> := <<"fib">>} = B <- Bs],
    [#{<<"samples">> := Cpu, <<"metric">> := <<"cpu">>, <<"unit">> := <<"ms">>,
       <<"better">> := <<"lower">>, <<"stats">> := #{<<"mean">> := M, <<"ci_mean">> := [Lo, Hi]}}] =
        [B || #{<<"name">> := <<"fib/cpu">>} = B <- Bs],
    ?assert(length(Own) >= 3),
    ?assertEqual(length(Own), length(Cpu)),
    ?assert(lists:all(fun(C) -> C > 0 end, Cpu)),
    ?assert(Hi / M - 1 =< 0.99 andalso 1 - Lo / M =< 0.99, {Lo, M, Hi}).

%% Bad values: one line, exit 2.
cli_ci_bad_values(_Config) ->
    [begin
         #{code := Code, err := Err} = R = cli(["suite", "fib" | Args]),
         ct:log("~p", [R]),
         ?assertEqual(2, Code),
         ?assertMatch([_], binary:split(string:trim(Err), <<"\n">>, [global]), Err),
         ?assertMatch({match, _}, re:run(Err, Pattern), {Args, Err})
     end || {Args, Pattern} <- [{["--ci", "0"], "invalid value '0' for --ci"},
                                {["--ci", "2"], "for 2 percent write 2%"},
                                {["--max-time", "5"], "--max-time needs --ci"},
                                {["--ci", "2%", "--max-time", "x"], "--max-time"},
                                {["--metric", "wall"], "invalid value 'wall' for --metric"}]].

cli_list(_) ->
    #{code := 0, out := Out} = cli(["suite", "--list"]),
    [?assertMatch({match, _}, re:run(Out, ["^", N, "  \\("], [multiline]))
     || N <- ["fib", "spawn", "skynet", "send", "ping_pong", "ring", "thread_ring", "big",
              "bang", "message_load", "selective_receive", "serialization", "ets",
              "gen_server"]],
    %% params with quick and full defaults
    ?assertMatch({match, _}, re:run(Out, "^  n +40000 +40000,1000000 +pos_integer", [multiline])),
    ?assertMatch({match, _}, re:run(Out, "^  variant +original +original +original\\|mesh", [multiline])),
    ?assertMatch({match, _}, re:run(Out, "^presets \\(beamlab suite --preset NAME\\): termite, message-load$",
                                    [multiline])),
    ?assertMatch({match, _}, re:run(Out, "^  size +10000 +1000000 ", [multiline])).

cli_bad_params(_) ->
    Cases = [{["suite", "nosuch"], "unknown workload 'nosuch'"},
             {["suite", "ring", "--param", "ring.q=1"], "workload ring has no parameter 'q' (it has: variant, n, k, m)"},
             {["suite", "ring", "--param", "ring.n=x"], "ring.n: bad value 'x': expected an integer >= 1"},
             {["suite", "ring", "--param", "ring.n=0"], "ring.n: bad value '0': expected an integer >= 1"},
             {["suite", "ring", "--param", "ring"], "--param ring: expected NAME.KEY=VALUE"},
             {["suite", "ring", "--param", "fib.n=3"], "--param for workload 'fib', which is not selected"},
             {["suite", "skynet", "--param", "skynet.size=99"], "skynet: size must be a power of 10"},
             {["suite", "ping_pong", "--param", "ping_pong.vm=remote"], "vm=remote needs --param ping_pong.node"},
             {["suite", "ring", "--profile", "huge"], "profile"},
             {["suite", "ring", "--param", "ring.n=3"], "ring: k (the starting token, 4) must be smaller than n (3)"},
             {["suite", "--preset", "nope"], "unknown preset 'nope' (built in: termite, message-load; or give a file)"},
             {["suite", "--preset", "termite", "fib"], "--preset runs the preset's rows: do not also name workloads"},
             {["suite", "--preset", "termite", "--node", "x"], "--node x: expected NAME@HOST"},
             {["suite", "--preset", "message-load", "--param", "fib.n=3"],
              "--param for workload 'fib', which preset message-load does not run"},
             {["suite", "-pa", "/no/such/dir", "x"], "-pa /no/such/dir: no such directory"}],
    [begin
         R = #{code := Code, err := Err} = cli(Args),
         ?assertEqual({Args, 2}, {Args, Code}),
         ok = beamlab_test_util:assert_one_line_error(R),
         ?assertMatch({Args, {match, _}}, {Args, re:run(Err, re_quote(Expect))})
     end || {Args, Expect} <- Cases].

re_quote(S) -> re:replace(S, "[][(){}.*+?^$|\\\\]", "\\\\&", [global, {return, list}]).

cli_user_workload_pa(Config) ->
    Dir = ?config(workload_dir, Config),
    #{code := 0, out := Out} = cli(["suite", "-pa", Dir, "suite_test_workload", "-n", "2"]),
    ?assertMatch({match, _}, re:run(Out, "^suite_test_workload +- +time +us +1\\.500 .* 2 +ok$",
                                    [multiline])),
    #{code := 0, out := List} = cli(["suite", "--list", "-pa", Dir, "suite_test_workload"]),
    ?assertMatch({match, _}, re:run(List, "^  mode +ok +ok +ok\\|bad_check\\|sleep\\|crash", [multiline])),
    %% without -pa the module is not found
    #{code := 2} = cli(["suite", "suite_test_workload"]).

cli_json_parsed_back(_) ->
    #{code := 0, out := Out} = cli(["suite", "ring", "fib", "--param", "ring.n=10,20",
                                    "--param", "ring.variant=laps",
                                    "--param", "ring.m=2", "--param", "fib.n=5",
                                    "-n", "3", "--format", "json"]),
    {ok, Json} = beamlab_json:decode(Out),
    {ok, Doc} = beamlab_result:from_json(Json),
    ?assertMatch(#{kind := suite, partial := false}, Doc),
    Bs = maps:get(benchmarks, Doc),
    ?assertEqual([<<"ring[n=10]">>, <<"ring[n=10]/create">>, <<"ring[n=20]">>,
                  <<"ring[n=20]/create">>, <<"fib">>], [N || #{name := N} <- Bs]),
    [Ring10 | _] = Bs,
    ?assertMatch(#{group := <<"ring">>, unit := <<"us">>, metric := <<"hop">>,
                   counters := #{<<"hops">> := 20, <<"processes">> := 10},
                   params := #{<<"n">> := 10, <<"m">> := 2, <<"variant">> := <<"laps">>},
                   stats := #{n := 3}}, Ring10),
    ?assertEqual(3, length(maps:get(samples, Ring10))).

cli_text_report(_) ->
    #{code := 0, out := Out} = cli(["suite", "message_load", "--param", "message_load.procs=4",
                                    "--param", "message_load.duration=300",
                                    "--param", "message_load.warmup=50", "-n", "1"], #{env => utf8_env()}),
    ?assertMatch({match, _}, re:run(Out, "^Workload +Params +Metric +Unit +Median +Mean ± CI95 +P99 +n +Reps +Check$",
                                    [multiline, unicode])),
    ?assertMatch({match, _}, re:run(Out, "^message_load +- +goodput +msg/s .* 1 +ok$", [multiline])),
    ?assertMatch({match, _}, re:run(Out, "latency us \\(.*\\): p50 .* p90 .* p99 .* p99\\.9 .* max ",
                                    [multiline])),
    ?assertMatch({match, _}, re:run(Out, "per second .*: 1:1 \\d+/\\d+/", [multiline])).

utf8_env() ->
    [{"LC_ALL", false}, {"LC_CTYPE", false}, {"LANG", "C.UTF-8"}].

%% UTF-8 locale: ± and block sparklines of the repetitions, a histogram
%% for a single point with many repetitions; --no-color: ASCII only.
cli_text_unicode_and_ascii(_) ->
    Args = ["suite", "fib", "--param", "fib.n=12", "-n", "12"],
    #{code := 0, out := U} = cli(Args, #{env => utf8_env()}),
    Blocks = "[\\x{2581}-\\x{2588}]",
    %% The interval relative to the mean: ±x% when symmetric, -a%/+b% when
    %% not (log scale).
    ?assertMatch({match, _}, re:run(U, "^fib +- +time +ms .* (±[0-9.]+%|-[0-9.]+%/\\+[0-9.]+%) .* 12  " ++ Blocks ++ "{10}  ok$",
                                    [multiline, unicode])),
    ?assertMatch({match, _}, re:run(U, "^Distribution of fib \\(12 samples\\):\n  .*\\|" ++ Blocks,
                                    [multiline, unicode])),
    #{code := 0, out := A} = cli(Args ++ ["--no-color"], #{env => utf8_env()}),
    ?assertMatch({match, _}, re:run(A, "^Workload .* Mean \\+- CI95 ", [multiline])),
    ?assertMatch({match, _}, re:run(A, "^fib +- +time +ms .* (\\+-[0-9.]+%|-[0-9.]+%/\\+[0-9.]+%) .* 12  [_.:=+*#-]{10}  ok$", [multiline])),
    ?assertMatch({match, _}, re:run(A, "^Distribution of fib \\(12 samples\\):\n  .*\\|#", [multiline])),
    ?assertEqual([], [C || <<C>> <= A, C > 127]).

cli_check_failure_exit_code(Config) ->
    Dir = ?config(workload_dir, Config),
    #{code := 1, out := Out} = cli(["suite", "-pa", Dir, "suite_test_workload", "-n", "1",
                                    "--param", "suite_test_workload.mode=bad_check"]),
    ?assertMatch({match, _}, re:run(Out, "failed: answer: expected 42, got 41")),
    #{code := 1, out := Out2} = cli(["suite", "-pa", Dir, "suite_test_workload", "-n", "1",
                                     "--param", "suite_test_workload.mode=crash"]),
    ?assertMatch({match, _}, re:run(Out2, "^FAILED suite_test_workload: run crashed: ", [multiline])).

%% SIGTERM to the launcher (what Ctrl-C becomes) during the second workload:
%% the first one's results and the finished repetitions are printed, marked
%% partial.
cli_interrupt_partial(_) ->
    Dir = beamlab_test_util:tmp_dir("suite-int"),
    Port = open_port({spawn_executable, beamlab_test_util:escript()},
                     [{args, ["suite", "fib", "message_load", "-n", "4", "-v",
                              "--param", "message_load.procs=4",
                              "--param", "message_load.warmup=0",
                              "--param", "message_load.duration=1000",
                              "--save", "partial.json"]},
                      {cd, Dir}, exit_status, binary, use_stdio, stderr_to_stdout]),
    {os_pid, OsPid} = erlang:port_info(Port, os_pid),
    %% -v reports every repetition: interrupt once message_load has one.
    %% (telemetry lines may come in between)
    Seen = beamlab_test_util:await_output(Port, "suite: message_load\n(.*\n)*  1: ", <<>>, 60000),
    os:cmd("kill -TERM " ++ integer_to_list(OsPid)),
    {Code, Out} = beamlab_test_util:port_output(Port, Seen, 60000),
    ?assertEqual(130, Code),
    ?assertMatch({match, _}, re:run(Out, "^\\(partial: interrupted", [multiline])),
    ?assertMatch({match, _}, re:run(Out, "^fib ", [multiline])),
    {ok, Doc} = beamlab_result:load(filename:join(Dir, "partial.json")),
    ?assertEqual(true, maps:get(partial, Doc)),
    [#{samples := Ml} | _] = [B || #{group := <<"message_load">>} = B <- maps:get(benchmarks, Doc)],
    ?assert(length(Ml) >= 1 andalso length(Ml) < 4).

%% Ctrl-C in a terminal: SIGINT to the whole process group. The suite stops
%% at the running repetition, prints what it measured and exits 130, as
%% `beamlab run' does.
cli_ctrl_c_partial(_) ->
    Dir = beamlab_test_util:tmp_dir("suite-ctrlc"),
    %% (in a process group of its own, SIGINT restored: cli_start_group/2)
    Run = beamlab_test_util:cli_start_group(["suite", "fib", "message_load",
                                             "-n", "4", "-v", "--param", "message_load.procs=4",
                                             "--param", "message_load.warmup=0",
                                             "--param", "message_load.duration=1000"], #{dir => Dir}),
    _ = beamlab_test_util:wait_for_file(maps:get(err_file, Run), "suite: message_load\n(.*\n)*  1: ", 60000),
    ok = beamlab_test_util:signal_group(Run, "INT"),
    #{code := Code, out := Text} = beamlab_test_util:cli_group_finish(Run),
    ?assertEqual(130, Code),
    ?assertMatch({match, _}, re:run(Text, "^\\(partial: interrupted", [multiline])),
    ?assertMatch({match, _}, re:run(Text, "^fib ", [multiline])),
    ?assertMatch({match, _}, re:run(Text, "^message_load ", [multiline])),
    ?assertNot(filelib:is_regular(filename:join(Dir, "erl_crash.dump"))).

%% The Termite table: published Erlang column beside ours, one line per
%% row (small sizes through --param: the layout, not the figures, is tested).
cli_preset_termite(_) ->
    #{code := 0, out := Out} =
        cli(["suite", "--preset", "termite", "-n", "1", "--param", "fib.n=10",
             "--param", "spawn.n=100", "--param", "send.n=1000", "--param", "ring.n=100",
             "--param", "ping_pong.n=100"]),
    ?assertMatch({match, _}, re:run(Out, "^test +Erlang \\(published\\) +this machine +unit +this / published$",
                                    [multiline])),
    [?assertMatch({Row, {match, _}},
                  {Row, re:run(Out, ["^", re_quote(Row), " +", re_quote(Pub), " +[0-9.]+ +", Unit, " +[0-9.]+$"],
                               [multiline])})
     || {Row, Pub, Unit} <- [{"fib(34)", "585", "ms"}, {"spawn", "6.920", "us"}, {"send", "0.2000", "us"},
                             {"ring 40k/0", "3", "us"}, {"ring 40k/4", "5", "us"},
                             {"ping-pong internal (0)", "0.7000", "us"},
                             {"ping-pong internal (1000)", "16", "us"},
                             {"ping-pong same node (0)", "58", "us"},
                             {"ping-pong same node (1000)", "182", "us"}]],
    %% remote rows only when a node is named
    nomatch = re:run(Out, "remote"),
    %% the suite's own table follows, every check ok
    ?assertMatch({match, _}, re:run(Out, "^ring +variant=termite,n=100,k=4 +per_process +us .* ok$", [multiline])).

cli_preset_message_load(_) ->
    #{code := 0, out := Out} =
        cli(["suite", "--preset", "message-load", "-n", "1", "--param", "message_load.warmup=50",
             "--param", "message_load.duration=300", "--format", "text"]),
    ?assertMatch({match, _}, re:run(Out, "^ +avg latency \\(us\\) +throughput \\(/s\\) +flushput \\(/s\\) +total \\(/s\\)$",
                                    [multiline])),
    ?assertMatch({match, _}, re:run(Out, "^this machine, 96 procs +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+$", [multiline])),
    ?assertMatch({match, _}, re:run(Out, "^this machine, 192 procs +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+$", [multiline])),
    ?assertMatch({match, _}, re:run(Out, "^c7i.24xlarge \\(96 cpus, 96 procs\\) +772 +5620 +4074 +9694$", [multiline])).

%% -v: per-scheduler utilisation averaged over the whole run.
cli_verbose_scheduler_utilisation(_) ->
    #{code := 0, out := Out} =
        cli(["suite", "message_load", "-v", "-n", "1", "--param", "message_load.warmup=200",
             "--param", "message_load.duration=1500"]),
    N = erlang:system_info(schedulers),
    {match, [Samples, Line]} = re:run(Out, "^Scheduler utilisation over the whole run \\(([0-9]+) samples\\): (.*)$",
                                      [multiline, {capture, all_but_first, list}]),
    ?assert(list_to_integer(Samples) >= 1),
    ?assertEqual(N, length(string:split(Line, "%", all)) - 1).

%% -v with a peer VM: the telemetry counts beamlab's own process tree
%% (`tree_cpu_cores': this VM and the peer, which `peer' starts detached
%% under init, found by its BEAMLAB_TREE) apart from the machine's other
%% processes, so the `machine_overloaded' detector never calls the
%% peer's work "others": the tree never used less CPU than the VM alone
%% in a sample, and more over the run (the peer's start and its half of
%% the ping-pong); a finding, if others did compete, names beamlab's own
%% processes, not this VM.
cli_verbose_peers_are_own(Config) ->
    Json = filename:join(?config(priv_dir, Config), "peers-own.json"),
    #{code := 0} = cli(["suite", "ping_pong", "--param", "ping_pong.vm=peer", "--param", "ping_pong.n=20000",
                        "--param", "ping_pong.size=100", "--param", "ping_pong.payload=list",
                        "-n", "2", "-v", "--save", Json]),
    {ok, #{telemetry := T} = Doc} = beamlab_result:load(Json),
    #{<<"tree_cpu_cores">> := Tree, <<"os_cpu_cores">> := Vm} = T,
    ct:log("tree ~p~nVM ~p~nfindings ~p", [Tree, Vm, maps:get(findings, Doc)]),
    ?assertEqual(length(Vm), length(Tree)),
    %% (a sample the tree's reader was late for has no tree figure)
    Both = [{A, B} || {A, B} <- lists:zip(Tree, Vm), is_number(A), is_number(B)],
    ?assertNotEqual([], Both),
    ?assert(lists:all(fun({A, B}) -> A >= B end, Both)),
    ?assert(lists:sum([A || {A, _} <- Both]) > lists:sum([B || {_, B} <- Both])),
    [?assertNotEqual(nomatch, string:find(E, "beamlab's own processes'"))
     || #{id := <<"machine_overloaded">>, evidence := E} <- maps:get(findings, Doc),
        string:find(E, "other processes") =/= nomatch].

%% A suite with a peer VM (distribution on loopback) starts epmd when none
%% runs; nothing beamlab starts outlives it, so that epmd goes when the
%% command ends. On a port of its own (ERL_EPMD_PORT, which epmd, the
%% VMs and `epmd -names' all follow), so that no other job's epmd on
%% this machine is involved: none answers there before, none after.
cli_peer_leaves_no_epmd(_) ->
    Port = integer_to_list(beamlab_test_util:free_port()),
    Names = fun() -> os:cmd("ERL_EPMD_PORT=" ++ Port ++ " epmd -names 2>&1") end,
    Down = fun() -> string:find(Names(), "up and running") =:= nomatch end,
    ?assert(Down()),
    #{code := 0} = cli(["suite", "ping_pong", "--param", "ping_pong.vm=peer", "--param", "ping_pong.n=100",
                        "--param", "ping_pong.size=10", "-n", "1"], #{env => [{"ERL_EPMD_PORT", Port}]}),
    ct:log("epmd on port ~s after the run: ~ts", [Port, Names()]),
    ?assert(Down()).
