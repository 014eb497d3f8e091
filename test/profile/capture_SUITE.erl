%%% `beamlab profile --node N --process P' (call capture, #36) through the
%%% built escript, against a peer node running the test's victims
%%% (capture_SUITE_data/capture_victim.erl: a hot loop, a deep call
%%% chain, a process with a growing mailbox; the node's own code, loaded
%%% by the test): each one's hottest function is named; folded stacks,
%%% speedscope and the report (rendered in headless Chromium) are
%%% written; a process making millions of calls a second stops the
%%% capture at its rate bound; no trace flag, pattern or tracer process is
%%% left on the node after a normal end, SIGTERM to beamlab, and SIGKILL to
%%% beamlab's VM mid-capture; bad processes are one line and exit 2; the
%%% public API does the same. `matrix --target rabbitmq --profile-process'
%%% captures a queue's process of the private broker under each
%%% configuration; a name the broker does not have is one line. On OTP 27
%%% the capture runs in a trace session of its own, beside another tracer.
%%% The default capture is duty-cycled (patterns on 5% of the time, counts
%%% scaled) and says so; `--duty 100' counts all along; a SIGKILL while
%%% the duty cycle's patterns are on, and while they are off, leaves the
%%% node clean. Under the duty cycle a gen_server's hottest function by
%%% own time is named right (what the windows' edges charge is left out),
%%% and a module the process runs only after the capture started is
%%% followed: patterned from the next window, its calls counted.
-module(capture_SUITE).
-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-export([all/0, init_per_suite/1, end_per_suite/1, init_per_testcase/2, end_per_testcase/2]).
-export([hot_loop/1, deep_chain/1, growing_mailbox/1, rate_bound/1, sigterm/1, sigkill/1,
         bad_processes/1, api/1, watch_capture/1, matrix_queue/1, matrix_bad_process/1, session_otp27/1,
         full_capture/1, sigkill_patterns_on/1, sigkill_patterns_off/1, server_duty/1, modules_followed/1,
         full_memory_otp27/1]).

-define(COOKIE, "capture_suite_cookie_27182").

all() ->
    [hot_loop, deep_chain, growing_mailbox, rate_bound, sigterm, sigkill, bad_processes, api, watch_capture,
     matrix_queue, matrix_bad_process, session_otp27, full_capture, sigkill_patterns_on, sigkill_patterns_off,
     server_duty, modules_followed, full_memory_otp27].

init_per_suite(Config) ->
    _ = os:cmd("epmd -address 127.0.0.1 -daemon"),
    %% From the repository, not ?config(data_dir): rebar3 compiles the
    %% suites of test/<folder>/ into one directory, where no data dir is.
    Src = filename:join([beamlab_test_util:root(), "test", "profile", "capture_SUITE_data",
                         "capture_victim.erl"]),
    {ok, capture_victim, Beam} = compile:file(Src, [binary, debug_info]),
    {ok, capture_late, Late} = compile:file(filename:join(filename:dirname(Src), "capture_late.erl"),
                                            [binary, debug_info]),
    [{victim_beam, Beam}, {late_beam, Late} | Config].

end_per_suite(_Config) ->
    ok.

%% Each case gets a fresh node with only its victim running (the machine
%% has two cores); the matrix cases run their own brokers.
init_per_testcase(Case, Config) when Case =:= matrix_queue; Case =:= matrix_bad_process ->
    case filelib:is_regular("/usr/lib/rabbitmq/bin/rabbitmq-server") of
        false -> {skip, "Debian's rabbitmq-server is not installed"};
        true -> [{dir, beamlab_test_util:tmp_dir("capture_matrix")} | Config]
    end;
init_per_testcase(session_otp27, Config) ->
    case beamlab_test_util:otp27() of
        {error, Why} -> beamlab_test_util:otp27_missing(Why);
        {ok, Bin} -> init_per_testcase(hot_loop, [{exec, filename:join(Bin, "erl")} | Config])
    end;
init_per_testcase(full_memory_otp27, Config) ->
    case beamlab_test_util:otp27() of
        {error, Why} -> beamlab_test_util:otp27_missing(Why);
        {ok, Bin} -> init_per_testcase(server_duty, [{exec, filename:join(Bin, "erl")} | Config])
    end;
init_per_testcase(Case, Config) ->
    Victim = case Case of
                 hot_loop -> hot;
                 full_capture -> hot;
                 rate_bound -> hot;
                 growing_mailbox -> mailbox;
                 watch_capture -> mailbox;
                 bad_processes -> none;
                 server_duty -> server;
                 modules_followed -> late;
                 _ -> deep
             end,
    Name = peer:random_name("capture_" ++ atom_to_list(Case)),
    %% (watch_capture's node has the default cookie, ~/.erlang.cookie, so
    %% the command a finding prints works as printed)
    Cookie = case Case of
                 watch_capture -> [];
                 _ -> ["-setcookie", ?COOKIE]
             end,
    Exec = case ?config(exec, Config) of
               undefined -> #{};
               Erl -> #{exec => Erl}
           end,
    {ok, Peer, Node} = peer:start(Exec#{name => Name, longnames => true, host => "127.0.0.1",
                                        connection => standard_io,
                                        args => Cookie ++ ["-kernel", "inet_dist_use_interface", "{127,0,0,1}"]}),
    {module, capture_victim} = peer:call(Peer, code, load_binary,
                                         [capture_victim, "capture_victim.erl", ?config(victim_beam, Config)]),
    ok = case Victim of
             none -> ok;
             _ -> peer:call(Peer, capture_victim, start, [Victim])
         end,
    [{peer, Peer}, {node, atom_to_list(Node)}, {dir, beamlab_test_util:tmp_dir("capture")} | Config].

end_per_testcase(_Case, Config) ->
    _ = [catch peer:stop(P) || P <- [?config(peer, Config)], P =/= undefined],
    ok.

%%--------------------------------------------------------------------
%% Cases
%%--------------------------------------------------------------------

%% A process that only loops in spin/2: that is its hottest function.
hot_loop(Config) ->
    #{doc := Doc} = capture(Config, ["--process", "capture_hot", "--duration", "1"]),
    ?assertEqual(<<"capture_victim:spin/2">>, hottest(Doc)),
    %% The default is the duty cycle: it says so, in the document and the
    %% text, and its counts are the counted ones scaled up.
    C = maps:get(<<"capture">>, maps:get(<<"extra">>, Doc)),
    #{<<"sampled">> := #{<<"on_fraction">> := F, <<"windows">> := W}} = C,
    ?assert(W >= 1 andalso F > 0 andalso F < 1),
    ?assertEqual([<<"capture_victim">>], maps:get(<<"pattern_modules">>, C)),
    [#{<<"calls">> := Scaled, <<"calls_counted">> := Counted} | _] = maps:get(<<"calls">>, C),
    ?assertEqual(beamlab_profile_capture:scale(Counted, F), Scaled),
    {ok, Loaded} = beamlab_result:from_json(Doc),
    Text = unicode:characters_to_binary(beamlab_render_capture:render(Loaded, #{})),
    ?assertNotEqual(nomatch, binary:match(Text, <<"sampled: patterns on ">>)),
    ?assertNotEqual(nomatch, binary:match(Text, <<"counts and times scaled">>)),
    [P] = procs(Doc),
    ?assertMatch(#{<<"label">> := <<"<0.", _/binary>>}, P),
    ?assertEqual(<<"capture_hot">>, maps:get(<<"registered_name">>, maps:get(<<"before">>, P))),
    ?assert(maps:get(<<"reductions_per_s_untraced">>, P) > 0),
    clean(Config).

%% d1 > ... > d6 > leaf_loop: the leaf is the hottest, the chain is on
%% the stacks, and folded, speedscope and report output are written; the
%% report's page draws the capture's flame graph in Chromium.
deep_chain(Config) ->
    Dir = ?config(dir, Config),
    Folded = filename:join(Dir, "deep.folded"),
    Speedscope = filename:join(Dir, "deep.speedscope.json"),
    Save = filename:join(Dir, "deep.json"),
    #{doc := Doc} = capture(Config, ["--process", "capture_deep", "--duration", "1", "--folded", Folded,
                                     "--speedscope", Speedscope, "--save", Save]),
    ?assertEqual(<<"capture_victim:leaf_loop/2">>, hottest(Doc)),
    ?assertMatch(#{<<"windows">> := W} when W >= 1,
                 maps:get(<<"sampled">>, maps:get(<<"capture">>, maps:get(<<"extra">>, Doc)))),
    Chain = <<"capture_victim:deep/0;capture_victim:d1/0;capture_victim:d2/0;capture_victim:d3/0;"
              "capture_victim:d4/0;capture_victim:d5/0;capture_victim:d6/0;capture_victim:leaf_loop/2">>,
    {ok, FoldedText} = file:read_file(Folded),
    ?assertNotEqual(nomatch, binary:match(FoldedText, Chain)),
    {ok, Stacks} = beamlab_profile_stacks:parse_folded(FoldedText),
    ?assert(lists:sum([N || {_, N} <- Stacks]) > 0),
    ok = beamlab_test_util:json_schema_valid("speedscope.schema.json", Speedscope),
    {ok, SS} = file:read_file(Speedscope),
    ?assertNotEqual(nomatch, binary:match(SS, <<"capture_victim:leaf_loop/2">>)),
    %% The saved document reads back, and the report draws it.
    {ok, Loaded} = beamlab_result:load(Save),
    ?assertEqual(capture, maps:get(kind, Loaded)),
    Html = filename:join(Dir, "deep.html"),
    #{code := 0} = beamlab_test_util:cli(["report", Save, "-o", Html], #{dir => Dir}),
    case beamlab_test_util:chromium() of
        false ->
            {skip, "chromium is not installed (Debian package 'chromium')"};
        Chromium ->
            Dom = beamlab_test_util:dump_dom(Chromium, Dir, Html),
            ?assertNotEqual(nomatch, binary:match(Dom, <<"svg">>)),
            ?assertNotEqual(nomatch, binary:match(Dom, <<"data-name=\"capture_victim:leaf_loop/2\"">>)),
            ?assertNotEqual(nomatch, binary:match(Dom, <<"data-name=\"capture_victim:d3/0\"">>)),
            clean(Config)
    end.

%% top:message_queue finds the process with the growing mailbox; its
%% time goes to crunch/2; its mailbox grew from before to after.
growing_mailbox(Config) ->
    %% (until its mailbox is clearly the longest)
    beamlab_test_util:wait_until(fun() -> queue_len(Config) > 100 end, 30000),
    #{doc := Doc} = capture(Config, ["--process", "top:message_queue", "--duration", "1"]),
    ?assertEqual(<<"capture_victim:crunch/2">>, hottest(Doc)),
    [P] = procs(Doc),
    ?assertEqual(<<"top:message_queue">>, maps:get(<<"spec">>, P)),
    ?assertNotEqual(nomatch, binary:match(maps:get(<<"label">>, P), <<"capture_mailbox">>)),
    ?assert(maps:get(<<"message_queue_len">>, maps:get(<<"before">>, P)) > 0),
    clean(Config).

%% One trace message per call on a process making millions of calls a
%% second: the capture stops at its rate bound, says so, keeps what it
%% had, and leaves the node clean.
rate_bound(Config) ->
    #{doc := Doc, err := Err, code := Code} =
        capture(Config, ["--process", "capture_hot", "--duration", "20", "--stacks", "trace",
                         "--max-rate", "5000"]),
    ?assertEqual(0, Code),
    C = maps:get(<<"capture">>, maps:get(<<"extra">>, Doc)),
    ?assertEqual(<<"rate_bound">>, maps:get(<<"stopped">>, C)),
    ?assert(maps:get(<<"elapsed_ms">>, C) < 20000),
    ?assertNotEqual(nomatch, binary:match(Err, <<"rate bound">>)),
    clean(Config).

%% SIGTERM to beamlab's process group mid-capture: what was captured is
%% printed (exit 130) and the node is left clean.
sigterm(Config) ->
    Dir = ?config(dir, Config),
    H = beamlab_test_util:cli_start_group(["profile", "--node", ?config(node, Config), "--cookie", ?COOKIE,
                                           "--process", "capture_deep", "--duration", "60",
                                           "--format", "json"], #{dir => Dir}),
    wait_traced(Config),
    ok = beamlab_test_util:signal_group(H, "TERM"),
    #{code := Code, out := Out} = beamlab_test_util:cli_group_finish(H),
    ?assertEqual(130, Code),
    {ok, Doc} = beamlab_json:decode(Out),
    ?assertEqual(<<"interrupted">>, maps:get(<<"stopped">>, maps:get(<<"capture">>, maps:get(<<"extra">>, Doc)))),
    clean(Config).

%% SIGKILL to beamlab's VM mid-capture: nothing of beamlab's runs any
%% more, and the tracer on the node removes every flag and pattern when
%% its monitor on beamlab's process fires.
sigkill(Config) ->
    Dir = ?config(dir, Config),
    H = beamlab_test_util:cli_start_group(["profile", "--node", ?config(node, Config), "--cookie", ?COOKIE,
                                           "--process", "capture_deep", "--duration", "60"], #{dir => Dir}),
    wait_traced(Config),
    [ok = beamlab_test_util:signal_pid(P, "KILL") || P <- beamlab_test_util:launcher_children(H)],
    _ = beamlab_test_util:cli_group_finish(H),
    clean(Config).

%% `--duty 100': call_time on every function all along, nothing scaled.
full_capture(Config) ->
    #{doc := Doc, code := 0} = capture(Config, ["--process", "capture_hot", "--duration", "1", "--duty", "100"]),
    ?assertEqual(<<"capture_victim:spin/2">>, hottest(Doc)),
    C = maps:get(<<"capture">>, maps:get(<<"extra">>, Doc)),
    ?assertEqual(null, maps:get(<<"sampled">>, C)),
    ?assertEqual(<<"all">>, maps:get(<<"patterns">>, C)),
    [#{<<"calls">> := N, <<"calls_counted">> := N} | _] = maps:get(<<"calls">>, C),
    clean(Config).

%% SIGKILL to beamlab's VM while the duty cycle's patterns are on (a
%% window of 10 s from the start): the node is left clean.
sigkill_patterns_on(Config) ->
    H = start_duty(Config, "50", "20"),
    wait_pattern(Config, true),
    kill(H),
    clean(Config).

%% ... and while they are off (a window of 0.6 s, then 59.4 s off): the
%% window seen on, then off, before the kill.
sigkill_patterns_off(Config) ->
    H = start_duty(Config, "1", "60"),
    wait_pattern(Config, true),
    wait_pattern(Config, false),
    kill(H),
    clean(Config).

start_duty(Config, Pct, Period) ->
    H = beamlab_test_util:cli_start_group(["profile", "--node", ?config(node, Config), "--cookie", ?COOKIE,
                                           "--process", "capture_deep", "--duration", "60",
                                           "--duty", Pct, "--duty-period", Period], #{dir => ?config(dir, Config)}),
    wait_traced(Config),
    H.

kill(H) ->
    [ok = beamlab_test_util:signal_pid(P, "KILL") || P <- beamlab_test_util:launcher_children(H)],
    _ = beamlab_test_util:cli_group_finish(H),
    ok.

%% The deep victim's leaf has its call_time pattern (On) or none.
wait_pattern(Config, On) ->
    Peer = ?config(peer, Config),
    beamlab_test_util:wait_until(
      fun() ->
              case peer:call(Peer, erlang, trace_info, [{capture_victim, leaf_loop, 2}, call_time]) of
                  {call_time, L} when is_list(L) -> On;
                  _ -> not On
              end
      end, 60000, {pattern_on, On}).

%% A gen_server serving short requests (each a loop of tally/2, some 95%
%% of its time) under the duty cycle, with windows (2 ms) short against
%% the time one read of the counters takes: tally/2 is the hottest
%% function by own time, and by far (ten times any other in practice;
%% asserted: five). Counting up to a pause and reading after it instead
%% charged each window's read, while the process kept serving, to the
%% one function it was last counted in (gen_server:loop/7 at 28-49%
%% against tally/2's 41-66% in runs by hand).
server_duty(Config) ->
    #{doc := Doc, code := 0} = capture(Config, ["--process", "capture_server", "--duration", "2",
                                                 "--duty", "1", "--duty-period", "0.2"]),
    C = maps:get(<<"capture">>, maps:get(<<"extra">>, Doc)),
    ct:log("~p", [lists:sublist(maps:get(<<"calls">>, C), 8)]),
    ?assertMatch(#{<<"windows">> := W} when W >= 2, maps:get(<<"sampled">>, C)),
    ?assertEqual(<<"capture_victim:tally/2">>, hottest(Doc)),
    [#{<<"own_share">> := Top} | Rest] = maps:get(<<"calls">>, C),
    [?assert(Top > 5 * S, F) || #{<<"function">> := F, <<"own_share">> := S} <- Rest],
    ?assert(lists:member(<<"gen_server">>, maps:get(<<"pattern_modules">>, C))),
    clean(Config).

%% `--duty 100' measures memory (call_memory with call_time) on OTP 27,
%% whose VM crashed when both patterns were switched on and off
%% repeatedly (scripts/repro/call_memory_toggle.escript): a full capture
%% sets them once and removes them once. Three in a row on the
%% gen_server: each measures its words, and the node is still up after
%% them (its victim still serving) and left clean.
full_memory_otp27(Config) ->
    Peer = ?config(peer, Config),
    Served = fun() -> peer:call(Peer, sys, get_state, [capture_server]) end,
    [begin
         #{doc := Doc, code := 0} = capture(Config, ["--process", "capture_server", "--duration", "1",
                                                     "--duty", "100"]),
         C = maps:get(<<"capture">>, maps:get(<<"extra">>, Doc)),
         ?assertEqual(true, maps:get(<<"memory_measured">>, C)),
         ?assert(lists:any(fun(#{<<"memory_words">> := W}) -> is_integer(W) andalso W > 0 end,
                           maps:get(<<"calls">>, C)))
     end || _ <- [1, 2, 3]],
    N = Served(),
    beamlab_test_util:wait_until(fun() -> Served() > N end, 30000),
    clean(Config).

%% A process that runs a module loaded after its capture started
%% (capture_late, loaded here once the capture traces it): the module
%% seen on the sampled stacks is followed, patterned from the next
%% window, and its function is the hottest; the document says so.
modules_followed(Config) ->
    Peer = ?config(peer, Config),
    %% another tool's call_time patterns (eprof's) on a module the capture
    %% never patterns: its cleanup leaves them
    {module, calendar} = peer:call(Peer, code, ensure_loaded, [calendar]),
    Other = {calendar, date_to_gregorian_days, 3},
    peer:call(Peer, erlang, trace_pattern, [{calendar, '_', '_'}, true, [call_time]]),
    H = beamlab_test_util:cli_start_group(["profile", "--node", ?config(node, Config), "--cookie", ?COOKIE,
                                           "--process", "capture_late_victim", "--duration", "3",
                                           "--duty", "20", "--duty-period", "0.25", "--format", "json"],
                                          #{dir => ?config(dir, Config)}),
    wait_traced(Config, capture_late_victim),
    ?assertEqual(false, peer:call(Peer, code, is_loaded, [capture_late])),
    {module, capture_late} = peer:call(Peer, code, load_binary,
                                       [capture_late, "capture_late.erl", ?config(late_beam, Config)]),
    peer:call(Peer, erlang, send, [capture_late_victim, {go, capture_late}]),
    #{code := Code, out := Out} = beamlab_test_util:cli_group_finish(H),
    ?assertEqual(0, Code),
    {ok, Doc} = beamlab_json:decode(Out),
    C = maps:get(<<"capture">>, maps:get(<<"extra">>, Doc)),
    ct:log("~p", [maps:without([<<"timeline">>], C)]),
    ?assertEqual([<<"capture_late">>], maps:get(<<"followed_modules">>, C)),
    ?assert(lists:member(<<"capture_late">>, maps:get(<<"pattern_modules">>, C))),
    ?assertEqual(<<"capture_late:churn/2">>, hottest(Doc)),
    [#{<<"calls_counted">> := N} | _] = maps:get(<<"calls">>, C),
    ?assert(N > 0),
    {ok, Loaded} = beamlab_result:from_json(Doc),
    Text = unicode:characters_to_binary(beamlab_render_capture:render(Loaded, #{})),
    ?assertNotEqual(nomatch, binary:match(Text, <<"modules followed (first seen on the stacks">>)),
    clean(Config),
    ?assertMatch({call_time, L} when is_list(L), peer:call(Peer, erlang, trace_info, [Other, call_time])),
    peer:call(Peer, erlang, trace_pattern, [{calendar, '_', '_'}, false, [call_time]]).

%% A name nobody registered, a pid that is not one, a dead pid: one line,
%% exit 2, and no atom created on the node for the unknown name.
bad_processes(Config) ->
    Node = ?config(node, Config),
    Check = fun(Proc, Expect) ->
                    R = beamlab_test_util:cli(["profile", "--node", Node, "--cookie", ?COOKIE,
                                               "--process", Proc, "--duration", "1"]),
                    ?assertEqual(2, maps:get(code, R)),
                    beamlab_test_util:assert_one_line_error(R),
                    ?assertNotEqual(nomatch, binary:match(maps:get(err, R), Expect))
            end,
    Check("no_such_registered_name_31337", <<"no process is registered">>),
    Check("<0.9999.0>", <<"no such process">>),
    Check("<0.x.0>", <<"not a pid">>),
    Check("top:cpu", <<"expected a pid">>),
    Check("queue:q1", <<"does not run RabbitMQ">>),
    %% (the unknown name was looked up with list_to_existing_atom)
    ?assertMatch({'EXIT', _}, catch peer:call(?config(peer, Config), erlang, list_to_existing_atom,
                                              ["no_such_registered_name_31337"])),
    #{code := 2} = beamlab_test_util:cli(["profile", "--process", "x"]),
    clean(Config).

%% beamlab:profile/2 with `process': the same capture from Erlang.
api(Config) ->
    Node = list_to_atom(?config(node, Config)),
    {ok, Doc} = beamlab:profile({node, Node}, #{process => [capture_deep], duration => 1000, cookie => ?COOKIE,
                                                 env => false}),
    ?assertEqual(capture, maps:get(kind, Doc)),
    #{extra := #{<<"capture">> := #{<<"calls">> := [#{<<"function">> := F} | _]}}} = Doc,
    ?assertEqual(<<"capture_victim:leaf_loop/2">>, F),
    %% A process that is not there is an error value with its one line.
    {error, R} = beamlab:profile({node, Node}, #{process => ["nobody_31337"], duration => 1000,
                                                  cookie => ?COOKIE}),
    ?assertNotEqual(nomatch, string:find(lists:flatten(io_lib:format("~ts", [beamlab:format_error(R)])),
                                         "no process is registered")),
    clean(Config).

%% `watch' names the process with the growing mailbox and prints the
%% command that captures it; run as printed (through the shell, with
%% beamlab on PATH), it names crunch/2. `watch --capture' captures it by
%% itself: the finding says its hottest function, the document holds the
%% capture, the report draws its flame graph beside the findings.
watch_capture(Config) ->
    Dir = ?config(dir, Config),
    Node = ?config(node, Config),
    Save = filename:join(Dir, "watch.json"),
    R = beamlab_test_util:cli(["watch", "--node", Node, "--duration", "4", "--interval", "500", "--capture",
                               "--format", "json", "--save", Save], #{dir => Dir}),
    ct:log("exit ~p~nstderr:~n~ts", [maps:get(code, R), maps:get(err, R)]),
    ?assertEqual(0, maps:get(code, R)),
    {ok, Doc} = beamlab_json:decode(maps:get(out, R)),
    [F | _] = [F || F = #{<<"id">> := <<"mailbox_growth">>} <- maps:get(<<"findings">>, Doc)]
        ++ [F || F = #{<<"data">> := #{<<"capture_command">> := _}} <- maps:get(<<"findings">>, Doc)],
    #{<<"data">> := #{<<"capture_command">> := Cmd}} = F,
    ?assertNotEqual(nomatch, binary:match(maps:get(err, R), <<"capture it: ", Cmd/binary>>)),
    %% The automatic capture, beside the finding.
    #{<<"extra">> := #{<<"capture">> := C, <<"profile">> := _}} = Doc,
    [#{<<"function">> := <<"capture_victim:crunch/2">>} | _] = maps:get(<<"calls">>, C),
    ?assertNotEqual(nomatch, binary:match(maps:get(<<"advice">>, F), <<"capture_victim:crunch/2">>)),
    Html = filename:join(Dir, "watch.html"),
    #{code := 0} = beamlab_test_util:cli(["report", Save, "-o", Html], #{dir => Dir}),
    {ok, Page} = file:read_file(Html),
    ?assertNotEqual(nomatch, binary:match(Page, <<"capture_victim:crunch/2">>)),
    clean(Config),
    %% The printed command, as printed.
    Root = beamlab_test_util:root(),
    Out = os:cmd("cd " ++ Dir ++ " && PATH=" ++ Root ++ ":$PATH " ++ binary_to_list(Cmd) ++ " 2>&1; echo \"exit $?\""),
    ct:log("~ts~n~ts", [Cmd, Out]),
    ?assertNotEqual(nomatch, string:find(Out, "exit 0")),
    ?assertNotEqual(nomatch, string:find(Out, "capture_mailbox")),
    ?assertNotEqual(nomatch, string:find(Out, "1  capture_victim:crunch/2")),
    clean(Config).

%%--------------------------------------------------------------------
%% Helpers
%%--------------------------------------------------------------------

%% On OTP 27 the capture runs in a trace session of its own: a process
%% another tracer traces already is captured all the same (classic tracing
%% refuses it), that tracer keeps its flag, and no session of ours is
%% left on the node afterwards.
session_otp27(Config) ->
    Peer = ?config(peer, Config),
    {ok, Exprs} = beamlab_runtime_expr:parse("P = whereis(capture_hot), erlang:trace(P, true, [call]), "
                                             "register(other_tracer, self()), receive stop -> ok end."),
    _ = peer:call(Peer, erlang, spawn, [erl_eval, exprs, [Exprs, []]]),
    Hot = peer:call(Peer, erlang, whereis, [capture_hot]),
    beamlab_test_util:wait_until(fun() -> is_pid(peer:call(Peer, erlang, whereis, [other_tracer])) end, 10000),
    Other = peer:call(Peer, erlang, whereis, [other_tracer]),
    ?assertEqual({tracer, Other}, peer:call(Peer, erlang, trace_info, [Hot, tracer])),
    #{doc := Doc, code := Code} = capture(Config, ["--process", "capture_hot", "--duration", "1"]),
    ?assertEqual(0, Code),
    ?assertEqual(<<"capture_victim:spin/2">>, hottest(Doc)),
    C = maps:get(<<"capture">>, maps:get(<<"extra">>, Doc)),
    ?assertMatch(<<"session: trace:session_create/3", _/binary>>, maps:get(<<"tracing">>, C)),
    ?assertEqual({tracer, Other}, peer:call(Peer, erlang, trace_info, [Hot, tracer])),
    ?assertEqual([], [S || {beamlab_capture, _} = S <- peer:call(Peer, trace, session_info, [all])]).

%% matrix --target rabbitmq --profile-process queue:q1: each configuration's
%% profiled repetition captures the queue's process while the load runs;
%% its call table and flame graph name the queue's own code, and the text
%% and the report's flame graphs show each configuration's capture.
matrix_queue(Config) ->
    R = beamlab_test_util:cli(["matrix", "--target", "rabbitmq", "--vm", "+S 1", "--vm", "+S 2", "-n", "1",
                               "--profile-process", "queue:q1", "--format", "json",
                               "--", "amqp", "-x", "1", "-y", "1", "-u", "q1", "-z", "2"],
                              #{dir => ?config(dir, Config), timeout => 600000}),
    ct:log("exit ~p~nstderr:~n~ts", [maps:get(code, R), maps:get(err, R)]),
    ?assertEqual(0, maps:get(code, R)),
    {ok, Json} = beamlab_json:decode(maps:get(out, R)),
    #{<<"extra">> := #{<<"configs">> := Configs}} = Json,
    ?assertEqual([<<"+S 1">>, <<"+S 2">>], [N || #{<<"name">> := N} <- Configs]),
    [begin
         #{<<"extra">> := #{<<"capture">> := C, <<"profile">> := P}} = maps:get(<<"capture">>, Cfg),
         [Proc] = maps:get(<<"processes">>, C),
         ?assertEqual(<<"queue:q1">>, maps:get(<<"spec">>, Proc)),
         ?assert(maps:get(<<"samples">>, C) > 0),
         [#{<<"function">> := Hottest} | _] = Calls = maps:get(<<"calls">>, C),
         ct:log("~ts: hottest ~ts", [maps:get(<<"name">>, Cfg), Hottest]),
         %% A queue process's time is in its own code or the OTP and
         %% RabbitMQ libraries it runs, never in a tracer of ours.
         ?assertMatch({match, _}, re:run(Hottest, "^(rabbit|gen_server2|gb_trees|lqueue|priority_queue|lists|"
                                                  "erlang|maps|queue|credit_flow|pmon|ets|sets|dict|"
                                                  "file_handle_cache|mirrored_supervisor)")),
         ?assert(lists:any(fun(#{<<"function">> := F}) -> binary:match(F, <<"rabbit_amqqueue_process:">>) =/= nomatch end,
                           Calls)),
         ?assert(lists:any(fun([S, _]) -> binary:match(S, <<"rabbit_amqqueue_process:">>) =/= nomatch end,
                           maps:get(<<"stacks">>, P)))
     end || Cfg <- Configs],
    %% The text and the report's flame graphs show each capture.
    {ok, Doc} = beamlab_result:from_json(Json),
    Text = unicode:characters_to_binary(beamlab_render_view:text(Doc, #{})),
    [?assertNotEqual(nomatch, binary:match(Text, <<"capture in ", N/binary>>)) || N <- [<<"+S 1">>, <<"+S 2">>]],
    ?assertNotEqual(nomatch, binary:match(Text, <<"hottest function (own time): ">>)),
    Flames = [L || #{label := L} <- beamlab_report_flame:profiles([{<<"m">>, Doc}])],
    ?assertEqual([<<"m: +S 1 capture">>, <<"m: +S 2 capture">>], Flames).

%% A name the broker does not have: its one line (no stack trace), the
%% matrix fails as no capture was made; a form that is none fails before
%% any broker starts (exit 2).
matrix_bad_process(Config) ->
    R = beamlab_test_util:cli(["matrix", "--target", "rabbitmq", "--vm", "+S 1", "-n", "1",
                               "--profile-process", "no_such_broker_process",
                               "--", "amqp", "-x", "1", "-y", "1", "-u", "q1", "-z", "1"],
                              #{dir => ?config(dir, Config), timeout => 600000}),
    ct:log("exit ~p~nstdout:~n~ts~nstderr:~n~ts", [maps:get(code, R), maps:get(out, R), maps:get(err, R)]),
    ?assertEqual(1, maps:get(code, R)),
    Line = <<"capture: --profile-process no_such_broker_process: no process is registered under that name "
             "on the node">>,
    ?assertNotEqual(nomatch, binary:match(maps:get(err, R), <<"beamlab: ", Line/binary, "\n">>)),
    ?assertEqual(nomatch, binary:match(maps:get(err, R), [<<"stacktrace">>, <<"crash">>, <<"error:">>])),
    Usage = beamlab_test_util:cli(["matrix", "--target", "rabbitmq", "--vm", "+S 1", "--profile-process", "top:cpu",
                                   "--", "amqp", "-z", "1"]),
    ?assertEqual(2, maps:get(code, Usage)),
    beamlab_test_util:assert_one_line_error(Usage).

capture(Config, Args) ->
    R = beamlab_test_util:cli(["profile", "--node", ?config(node, Config), "--cookie", ?COOKIE,
                               "--format", "json" | Args], #{dir => ?config(dir, Config)}),
    ct:log("exit ~p~nstderr:~n~ts", [maps:get(code, R), maps:get(err, R)]),
    {ok, Doc} = beamlab_json:decode(maps:get(out, R)),
    R#{doc => Doc}.

hottest(Doc) ->
    [#{<<"function">> := F} | _] = maps:get(<<"calls">>, maps:get(<<"capture">>, maps:get(<<"extra">>, Doc))),
    F.

procs(Doc) ->
    maps:get(<<"processes">>, maps:get(<<"capture">>, maps:get(<<"extra">>, Doc))).

queue_len(Config) ->
    Peer = ?config(peer, Config),
    case peer:call(Peer, erlang, whereis, [capture_mailbox]) of
        P when is_pid(P) -> element(2, peer:call(Peer, erlang, process_info, [P, message_queue_len]));
        _ -> 0
    end.

%% The capture is on: the victim has the call flag.
wait_traced(Config) ->
    wait_traced(Config, capture_deep).

wait_traced(Config, Name) ->
    Peer = ?config(peer, Config),
    P = peer:call(Peer, erlang, whereis, [Name]),
    beamlab_test_util:wait_until(fun() -> peer:call(Peer, erlang, trace_info, [P, flags]) =:= {flags, [call]} end,
                                 60000).

%% No trace flag on any process, no pattern on the victims' functions or
%% on OTP's, no tracer process of beamlab's left (the tracer ends within
%% a few seconds of the end; awaited, never slept).
clean(Config) ->
    Peer = ?config(peer, Config),
    Funs = [{capture_victim, F, A} || {F, A} <- peer:call(Peer, capture_victim, module_info, [functions]),
                                      F =/= module_info]
        ++ [{lists, seq, 2}, {erlang, apply, 2}, {gen_server, loop, 7}, {erl_eval, exprs, 2}]
        %% (a module followed: modules_followed)
        ++ case peer:call(Peer, code, is_loaded, [capture_late]) of
               false -> [];
               _ -> [{capture_late, churn, 2}, {capture_late, run, 0}]
           end,
    Clean = fun() ->
                    Flags = [P || P <- peer:call(Peer, erlang, processes, []),
                                  peer:call(Peer, erlang, trace_info, [P, flags]) =/= {flags, []},
                                  peer:call(Peer, erlang, trace_info, [P, flags]) =/= undefined],
                    Patterns = [MFA || MFA <- Funs, peer:call(Peer, erlang, trace_info, [MFA, all]) =/= {all, false}],
                    Agents = [P || P <- peer:call(Peer, erlang, processes, []),
                                   peer:call(Peer, erlang, process_info, [P, initial_call])
                                       =:= {initial_call, {erl_eval, exprs, 2}}],
                    ct:log("flags ~p patterns ~p tracers ~p", [Flags, Patterns, Agents]),
                    Flags =:= [] andalso Patterns =:= [] andalso Agents =:= []
            end,
    beamlab_test_util:wait_until(Clean, 30000),
    ok.
