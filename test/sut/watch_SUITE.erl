%%% `beamlab watch' against peer nodes with one fault each (a spinning
%%% process, a growing mailbox, a leaking process heap, leaking refc
%%% binaries, a growing ETS table, a growing process, port or atom count,
%%% long garbage collections, a busy distribution port), through the built
%%% escript: the culprit is named within two intervals in the live text
%%% (stderr), in the JSON document and in the report. A healthy node gives
%%% no growth finding; a system monitor held by someone else is left to
%%% them; a frozen node (SIGSTOP) or one that is frozen before the watch
%%% ends the watch within its duration and grace; no cookie appears in
%%% anything written.
-module(watch_SUITE).
-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-export([all/0, init_per_suite/1, end_per_suite/1]).
-export([spinning/1, mailbox/1, process_heap/1, binaries/1, ets_table/1, process_count/1, port_count/1,
         atom_count/1, long_gc/1, busy_dist_port/1, busy_dist_port_during_watch/1, healthy/1, system_monitor_taken/1,
         frozen_mid_watch/1, frozen_then_resumes/1, frozen_before_watch/1, sampler_lost/1, no_secrets/1,
         setup_fails_one_line/1, node_as_argument/1]).

-define(COOKIE, "watch_suite_cookie_31415").
-define(INTERVAL, 500).

all() ->
    [spinning, mailbox, process_heap, binaries, ets_table, process_count, port_count, atom_count,
     long_gc, busy_dist_port, busy_dist_port_during_watch, healthy, system_monitor_taken, frozen_mid_watch, frozen_then_resumes,
     frozen_before_watch, sampler_lost, no_secrets, setup_fails_one_line, node_as_argument].

init_per_suite(Config) ->
    _ = os:cmd("epmd -address 127.0.0.1 -daemon"),
    Config.

end_per_suite(_Config) ->
    ok.

%%--------------------------------------------------------------------
%% Faults
%%--------------------------------------------------------------------

%% Each fault is OTP code evaluated on the peer (no test module there).
fault(spin) ->
    "erlang:spawn(fun() -> register(spinner, self()), L = fun Loop() -> Loop() end, L() end), ok.";
fault(kill_holder) ->
    %% Kills every process spawned here from another node to run
    %% erl_eval:exprs/2 (the sampler's flag holder; erpc's calls, the
    %% environment read among them, start as erpc:execute_call), from the
    %% spawn's trace event, at max priority on the node's one scheduler
    %% (+S 1): before the holder can take the sampler's first message.
    "Me = self(), erlang:spawn(fun() -> register(holder_killer, self()), process_flag(priority, max),"
    "  erlang:trace(new_processes, true, [procs]), Me ! tracing,"
    "  L = fun Loop() -> receive {trace, P, spawned, _, {erts_internal, dist_spawn_init, [{erl_eval, exprs, 2}]}} ->"
    "  exit(P, kill), Loop(); _ -> Loop() end end, L() end), receive tracing -> ok end.";
fault(mailbox) ->
    "Sink = erlang:spawn(fun() -> register(mailbox_sink, self()), receive never -> ok end end),"
    "erlang:spawn(fun() -> L = fun Loop() -> [Sink ! {msg, I} || I <- lists:seq(1, 200)],"
    "  receive after 10 -> ok end, Loop() end, L() end), ok.";
fault(heap) ->
    "erlang:spawn(fun() -> register(heap_leaker, self()),"
    "  L = fun Loop(Acc) -> receive after 10 -> Loop([lists:seq(1, 10000) | Acc]) end end, L([]) end), ok.";
fault(binary) ->
    "erlang:spawn(fun() -> register(binary_holder, self()),"
    "  L = fun Loop(Acc) -> receive after 10 -> Loop([binary:copy(<<1>>, 100000) | Acc]) end end, L([]) end), ok.";
fault(ets) ->
    "erlang:spawn(fun() -> register(table_owner, self()), T = ets:new(leaky_table, [named_table]),"
    "  L = fun Loop(N) -> ets:insert(T, [{K, lists:seq(1, 20)} || K <- lists:seq(N, N + 500)]),"
    "  receive after 10 -> Loop(N + 501) end end, L(0) end), ok.";
fault(procs) ->
    "erlang:spawn(fun() -> register(spawner, self()),"
    "  L = fun Loop() -> [proc_lib:spawn(timer, sleep, [infinity]) || _ <- lists:seq(1, 20)],"
    "  receive after 10 -> Loop() end end, L() end), ok.";
fault(ports) ->
    "erlang:spawn(fun() -> register(socket_opener, self()),"
    "  L = fun Loop(Acc) -> {ok, S} = gen_udp:open(0, [{ip, {127,0,0,1}}]),"
    "  receive after 10 -> Loop([S | Acc]) end end, L([]) end), ok.";
fault(atoms) ->
    "erlang:spawn(fun() -> register(atom_maker, self()),"
    "  L = fun Loop(N) -> [list_to_atom(\"watch_suite_atom_\" ++ integer_to_list(I)) || I <- lists:seq(N, N + 99)],"
    "  receive after 10 -> Loop(N + 100) end end, L(0) end), ok.";
fault(long_gc) ->
    "erlang:spawn(fun() -> register(big_collector, self()), Big = lists:seq(1, 3000000),"
    "  L = fun Loop() -> erlang:garbage_collect(), receive after 50 -> ok end, Loop() end,"
    "  L(), length(Big) end), ok.";
fault(healthy) ->
    "ok.".

%% A peer with the fault running, controlled over stdio.
peer(Name, Fault) ->
    peer(Name, Fault, []).

peer(Name, Fault, Args) ->
    {ok, Peer, Node} = peer:start(#{name => unique(Name), longnames => true, host => "127.0.0.1",
                                    connection => standard_io,
                                    args => ["-setcookie", ?COOKIE, "-kernel", "inet_dist_use_interface",
                                             "{127,0,0,1}" | Args]}),
    ok = eval(Peer, fault(Fault)),
    {Peer, atom_to_list(Node)}.

%% A node name no other run on this machine uses (`Name-N-OSPID'): the
%% machine has one epmd, and a second run of the suite at the same time
%% (another worktree, another CI job) could not register its peer under a
%% fixed name: it exited at boot (`boot_failed', "the name ... seems to
%% be in use by another Erlang node").
unique(Name) ->
    peer:random_name(atom_to_list(Name)).

eval(Peer, Text) ->
    beamlab_test_util:peer_eval(Peer, Text).

%% `watch' for `Seconds' with the JSON on stdout, the live lines on stderr
%% and the document saved; then its report. With `--metrics-port' in
%% `Extra', what it served after its first sample too (`metrics').
watch(Node, Seconds, Extra) ->
    Dir = beamlab_test_util:tmp_dir("watch"),
    Save = filename:join(Dir, "watch.json"),
    H = beamlab_test_util:cli_start(["watch", "--node", Node, "--cookie", ?COOKIE, "--duration", integer_to_list(Seconds),
                                     "--interval", integer_to_list(?INTERVAL), "--top", "3", "--format", "json",
                                     "--save", Save | Extra], #{dir => Dir}),
    Served = case lists:member("--metrics-port", Extra) of
                 true -> #{metrics => scrape(H)};
                 false -> #{}
             end,
    R = beamlab_test_util:cli_finish(H, <<>>),
    ct:log("exit ~b~nstderr:~n~ts", [maps:get(code, R), maps:get(err, R)]),
    {ok, Doc} = beamlab_json:decode(maps:get(out, R)),
    Html = filename:join(Dir, "watch.html"),
    Rep = beamlab_test_util:cli(["report", Save, "-o", Html], #{dir => Dir}),
    ?assertEqual(0, maps:get(code, Rep)),
    {ok, Page} = file:read_file(Html),
    maps:merge(R#{doc => Doc, save => Save, html => Page}, Served).

%% The metrics a running watch serves once it has a sample.
scrape(#{err_file := ErrFile}) ->
    Err = beamlab_test_util:wait_for_file(ErrFile, "metrics: http://127.0.0.1:[0-9]+/metrics", 30000),
    {match, [Port]} = re:run(Err, "metrics: http://127.0.0.1:([0-9]+)/metrics", [{capture, all_but_first, list}]),
    _ = beamlab_test_util:wait_for_file(ErrFile, "memory: ", 30000),
    {ok, 200, Text} = beamlab_test_prometheus:get("http://127.0.0.1:" ++ Port, "/metrics"),
    Text.

%% The finding `Id' names `Culprit' in its title, was raised by the second
%% sample (two intervals), and is in the live text by then and in the page.
named(#{doc := Doc, err := Err, html := Html}, Id, Culprit) ->
    Fs = [F || F = #{<<"id">> := I} <- maps:get(<<"findings">>, Doc), I =:= Id],
    ct:log("~ts: ~p", [Id, Fs]),
    [F | _] = [F || F = #{<<"title">> := T} <- Fs, binary:match(T, Culprit) =/= nomatch],
    Detected = maps:get(<<"detected_ms">>, maps:get(<<"data">>, F)),
    #{<<"telemetry">> := #{<<"t_ms">> := [_, Second | _]}} = Doc,
    ?assert(Detected =< Second),
    Live = live_before_third_sample(Err),
    ?assertNotEqual(nomatch, binary:match(Live, [<<"! [">>]), Live),
    ?assertNotEqual(nomatch, binary:match(Live, maps:get(<<"title">>, F)), Live),
    ?assertNotEqual(nomatch, binary:match(Html, json_text(maps:get(<<"title">>, F)))),
    F.

%% stderr up to the line of the third sample.
live_before_third_sample(Err) ->
    Lines = binary:split(Err, <<"\n">>, [global]),
    Samples = [I || {I, L} <- lists:zip(lists:seq(1, length(Lines)), Lines),
                    re:run(L, "^ +[0-9]+\\.[0-9]s +[0-9]+% \\[") =/= nomatch],
    Upto = case Samples of
               [_, _, Third | _] -> Third - 1;
               _ -> length(Lines)
           end,
    iolist_to_binary(lists:join(<<"\n">>, lists:sublist(Lines, Upto))).

%% How a title appears in the page's embedded JSON (no <, > or & there).
json_text(B) ->
    lists:foldl(fun({From, To}, Acc) -> binary:replace(Acc, From, To, [global]) end, B,
                [{<<"<">>, <<"\\u003c">>}, {<<">">>, <<"\\u003e">>}, {<<"&">>, <<"\\u0026">>}]).

ids(#{doc := Doc}) ->
    [I || #{<<"id">> := I} <- maps:get(<<"findings">>, Doc)].

with_peer(Name, Fault, Fun) ->
    {Peer, Node} = peer(Name, Fault),
    try Fun(Peer, Node)
    after peer:stop(Peer)
    end.

%%--------------------------------------------------------------------
%% Cases
%%--------------------------------------------------------------------

%% The spinner is the top process by reductions from the first sample, in
%% the live table too; one hot process on two schedulers is no critical
%% imbalance.
spinning(_Config) ->
    with_peer(watch_spin, spin, fun(_, Node) ->
        R = watch(Node, 3, []),
        ?assertEqual(0, maps:get(code, R)),
        #{<<"telemetry">> := T} = maps:get(doc, R),
        [?assertEqual(<<"spinner">>, maps:get(<<"name">>, hd(maps:get(<<"by_reductions">>, S))))
         || S <- maps:get(<<"top">>, T)],
        ?assertMatch({match, _}, re:run(live_before_third_sample(maps:get(err, R)), "R[QM]* +[0-9]+( [KMG]i)? .* spinner ")),
        Imbalance = [F || F = #{<<"id">> := <<"scheduler_imbalance">>} <- maps:get(<<"findings">>, maps:get(doc, R))],
        ?assertEqual([], [F || F = #{<<"severity">> := <<"critical">>} <- Imbalance]),
        %% The report's reductions chart leads with it.
        #{<<"charts">> := Charts} = page_processes(R),
        [#{<<"lines">> := [#{<<"label">> := Label} | _]}] = [C || C = #{<<"key">> := <<"reductions_per_s">>} <- Charts],
        ?assertMatch(<<"spinner ", _/binary>>, Label)
    end).

%% The processes model the page embeds for the run.
page_processes(#{html := Html}) ->
    {match, [Json]} = re:run(Html, "<script type=\"application/json\" id=\"beamlab-data\">(.*?)</script>",
                             [dotall, {capture, all_but_first, binary}]),
    {ok, #{<<"runs">> := [#{<<"processes">> := P}]}} = beamlab_json:decode(Json),
    P.

mailbox(_Config) ->
    with_peer(watch_mailbox, mailbox, fun(_, Node) ->
        R = watch(Node, 2, []),
        F = named(R, <<"mailbox_growing">>, <<"mailbox_sink">>),
        ?assert(maps:get(<<"rate_per_s">>, maps:get(<<"data">>, F)) > 1000),
        %% One finding for the culprit: its memory grows with its queue.
        ?assertNot(lists:member(<<"process_memory_growing">>, ids(R))),
        page(R, F)
    end).

%% The page as Chromium draws it: no script error, nothing its layout
%% check finds (no point outside its axis, no label cut off, no table off
%% the page, no word broken in a title), the processes' charts (the
%% culprit's line among them, the finding shaded over the interval it
%% states, from the start of the rise to its last sample) and table, the
%% watched node's environment (its own VM, not beamlab's); the node's
%% series are observations, never "higher is better".
page(#{html := Html, doc := Doc}, Finding) ->
    case beamlab_test_util:chromium() of
        false -> ct:log("chromium not installed: page not rendered");
        Exe ->
            Dir = beamlab_test_util:tmp_dir("page"),
            File = filename:join(Dir, "watch.html"),
            ok = file:write_file(File, Html),
            Dom = iolist_to_binary(os:cmd("'" ++ Exe ++ "' --headless --no-sandbox --disable-gpu --no-first-run "
                                          "--user-data-dir=" ++ Dir ++ " --dump-dom 'file://" ++ File ++ "' 2>/dev/null")),
            Body = beamlab_test_util:dom_body(Dom),
            ?assertEqual(<<>>, beamlab_test_util:dom_attr(Body, <<"data-errors">>)),
            ?assertEqual(<<>>, beamlab_test_util:dom_attr(Body, <<"data-layout">>)),
            Drawn = re:replace(Dom, <<"<script.*?</script>">>, <<>>, [dotall, global, {return, binary}]),
            ?assertEqual(nomatch, binary:match(Drawn, <<"higher is better">>)),
            %% #35: reductions are a rate with what it counts, never "1/s"
            ?assertEqual(nomatch, binary:match(Drawn, <<"1/s">>)),
            %% #35: every title names the node watched (its measures are
            %% the node's, not a workload's)
            #{<<"params">> := #{<<"node">> := Watched}} = Doc,
            {match, Caps} = re:run(Drawn, <<"<figcaption>([^<]*)</figcaption>">>, [global, {capture, all_but_first, binary}]),
            ?assert(length(Caps) >= 8),
            [?assertNotEqual(nomatch, string:prefix(C, <<Watched/binary, ": ">>), C) || [C] <- Caps],
            %% every axis its unit: the run queue counts processes
            ?assert(lists:member([<<Watched/binary, ": run queue (processes)">>], Caps)),
            ?assertMatch({match, _}, re:run(Drawn, <<"<figcaption>", Watched/binary, ": Reductions \\(reductions/s\\)</figcaption>.*?"
                                                     "class=\"label y-label\"[^>]*>reductions/s</text>">>, [dotall])),
            [_, Procs] = binary:split(Dom, <<"<section id=\"processes\"">>),
            #{<<"data">> := #{<<"from_ms">> := From, <<"last_ms">> := Last}, <<"evidence">> := Evidence} = Finding,
            {match, [[A, B] | _]} = re:run(Procs, <<"class=\"finding-mark\" data-from=\"([-0-9.e]+)\" data-to=\"([-0-9.e]+)\"">>,
                                           [global, {capture, all_but_first, binary}]),
            ?assert(abs(text_number(A) - From / 1000) < 0.01),
            ?assert(abs(text_number(B) - Last / 1000) < 0.01),
            %% #35: the shading is where the text says, on the axis the
            %% page draws: the evidence's "over 0.4-2.0 s" and the live
            %% lines tell times on the telemetry's clock, which the axis
            %% uses too (it started at the first sample: one interval off)
            {match, [SaidFrom, SaidTo]} = re:run(Evidence, <<" over ([0-9.]+)-([0-9.]+) s">>,
                                                 [{capture, all_but_first, binary}]),
            ct:log("evidence ~ts; shaded ~ts-~ts", [Evidence, A, B]),
            ?assert(abs(text_number(A) - text_number(SaidFrom)) =< 0.051),
            ?assert(abs(text_number(B) - text_number(SaidTo)) =< 0.051),
            ?assertEqual(4, length(binary:matches(Procs, <<"data-kind=\"processes\"">>))),
            %% #35: a last sample that covers part of an interval is left
            %% out of the processes' charts (and drawn when whole).
            Times = maps:get(<<"t_ms">>, maps:get(<<"telemetry">>, Doc)),
            #{<<"t">> := Drawn_t} = page_processes(#{html => Html}),
            ?assertEqual(length(Times) - case beamlab_report_views:partial_tail(Times) of true -> 1; false -> 0 end,
                         length(Drawn_t)),
            ?assertEqual(hd(Times) / 1000, hd(Drawn_t)),
            ?assertNotEqual(nomatch, binary:match(Procs, <<"data-series=\"mailbox_sink">>)),
            ?assertNotEqual(nomatch, binary:match(Procs, <<"data-kind=\"process-table\"">>)),
            #{<<"env">> := #{<<"node">> := Node, <<"otp">> := #{<<"release">> := _}}} = Doc,
            [_, Env] = binary:split(Dom, <<"<section id=\"env\"">>),
            ?assertNotEqual(nomatch, binary:match(Env, <<"env.node">>)),
            ?assertNotEqual(nomatch, binary:match(Env, Node))
    end.

%% A number as JavaScript writes it in an attribute ("1", "1.5").
text_number(B) ->
    case string:to_float(B) of
        {F, <<>>} -> F;
        _ -> binary_to_integer(B)
    end.

%% A node with `Fault': watched for two seconds, its finding `Id' names
%% `Culprit' (named/3).
culprit(Name, Fault, Id, Culprit) ->
    with_peer(Name, Fault, fun(_, Node) -> named(watch(Node, 2, []), Id, Culprit) end).

process_heap(_Config) ->
    culprit(watch_heap, heap, <<"process_memory_growing">>, <<"heap_leaker">>).

binaries(_Config) ->
    F = culprit(watch_binary, binary, <<"binary_growing">>, <<"binary_holder">>),
    [#{<<"name">> := <<"binary_holder">>} | _] = maps:get(<<"holders">>, maps:get(<<"data">>, F)).

ets_table(_Config) ->
    F = culprit(watch_ets, ets, <<"ets_growing">>, <<"leaky_table">>),
    ?assertNotEqual(nomatch, binary:match(maps:get(<<"title">>, F), <<"table_owner">>)).

process_count(_Config) ->
    F = culprit(watch_procs, procs, <<"processes_growing">>, <<"timer:sleep/1">>),
    ?assertNotEqual(nomatch, binary:match(maps:get(<<"title">>, F), <<"spawner">>)).

port_count(_Config) ->
    culprit(watch_ports, ports, <<"ports_growing">>, <<"udp_inet">>).

atom_count(_Config) ->
    culprit(watch_atoms, atoms, <<"atoms_growing">>, <<"Atom table growing">>).

long_gc(_Config) ->
    with_peer(watch_gc, long_gc, fun(Peer, Node) ->
        named(watch(Node, 2, ["--long-gc", "5"]), <<"long_gc">>, <<"big_collector">>),
        %% The monitor is released.
        ?assertEqual(undefined, peer:call(Peer, erlang, system_monitor, []))
    end).

%% A sender on the watched node floods a node that is frozen: the
%% distribution buffer to it fills and the sender is suspended. Here the
%% sender is suspended before the watch starts (its system monitor never
%% sees that suspension, which is how the case failed on every fresh
%% machine): the watch finds it from the process's status and the port's
%% queue.
busy_dist_port(_Config) ->
    flooding(watch_dist_target, watch_dist_sender, fun(Peer, Node, TargetNode) ->
        start_flood(Peer, TargetNode),
        named(watch(Node, 2, []), <<"busy_dist_port">>, list_to_binary(TargetNode))
    end).

%% The other order: the watch runs (its first sample is in) before the
%% sender starts and is suspended: the system monitor reports it.
busy_dist_port_during_watch(_Config) ->
    flooding(watch_dist_target2, watch_dist_sender2, fun(Peer, Node, TargetNode) ->
        Dir = beamlab_test_util:tmp_dir("watch"),
        H = beamlab_test_util:cli_start(["watch", "--node", Node, "--cookie", ?COOKIE, "--duration", "3",
                                         "--interval", integer_to_list(?INTERVAL), "--format", "json"],
                                        #{dir => Dir}),
        _ = beamlab_test_util:wait_for_file(maps:get(err_file, H), "memory: ", 30000),
        start_flood(Peer, TargetNode),
        R = beamlab_test_util:cli_finish(H, <<>>),
        ct:log("exit ~b~nstderr:~n~ts", [maps:get(code, R), maps:get(err, R)]),
        {ok, Doc} = beamlab_json:decode(maps:get(out, R)),
        Fs = [F || F = #{<<"id">> := <<"busy_dist_port">>, <<"title">> := T} <- maps:get(<<"findings">>, Doc),
                   binary:match(T, list_to_binary(TargetNode)) =/= nomatch],
        ?assertMatch([_ | _], Fs)
    end).

%% A frozen target node connected to a sender node, thawed and stopped
%% after `Fun(Sender, SenderNode, TargetNode)'.
flooding(TargetName, SenderName, Fun) ->
    {Target, TargetNode} = peer(TargetName, healthy),
    {Peer, Node} = peer(SenderName, healthy),
    TargetPid = peer:call(Target, os, getpid, []),
    try
        true = peer:call(Peer, net_kernel, connect_node, [list_to_atom(TargetNode)]),
        _ = os:cmd("kill -STOP " ++ TargetPid),
        Fun(Peer, Node, TargetNode)
    after
        _ = os:cmd("kill -CONT " ++ TargetPid),
        peer:stop(Peer),
        peer:stop(Target)
    end.

%% Starts the flooder and returns once it is suspended on the busy port.
start_flood(Peer, TargetNode) ->
    ok = eval(Peer, "erlang:spawn(fun() -> register(flooder, self()), B = binary:copy(<<1>>, 1000000),"
                    " L = fun Loop() -> {sink, '" ++ TargetNode ++ "'} ! B, Loop() end, L() end), ok."),
    beamlab_test_util:wait_until(
      fun() ->
              F = peer:call(Peer, erlang, whereis, [flooder]),
              is_pid(F) andalso peer:call(Peer, erlang, process_info, [F, status]) =:= {status, suspended}
      end, 30000, "the flooder suspended on the busy distribution port").

%% Nothing grows on an idle node: no growth finding.
healthy(_Config) ->
    with_peer(watch_healthy, healthy, fun(Peer, Node) ->
        R = watch(Node, 2, []),
        Growth = [I || I <- ids(R), lists:member(I, [<<"mailbox_growing">>, <<"process_memory_growing">>,
                                                     <<"binary_growing">>, <<"ets_growing">>,
                                                     <<"processes_growing">>, <<"ports_growing">>,
                                                     <<"atoms_growing">>, <<"node_unresponsive">>])],
        ?assertEqual([], Growth),
        ?assertEqual(undefined, peer:call(Peer, erlang, system_monitor, []))
    end).

%% Another process holds the system monitor: it keeps it, the watch says so.
system_monitor_taken(_Config) ->
    with_peer(watch_sysmon, healthy, fun(Peer, Node) ->
        ok = eval(Peer, "P = erlang:spawn(fun() -> register(their_monitor, self()), receive stop -> ok end end),"
                        " erlang:system_monitor(P, [{long_gc, 1000}]), ok."),
        R = watch(Node, 1, []),
        ?assertEqual(0, maps:get(code, R)),
        ?assert(lists:member(<<"system_monitor_taken">>, ids(R))),
        ?assertNotEqual(nomatch, binary:match(maps:get(err, R), <<"system monitor: already held">>)),
        Theirs = peer:call(Peer, erlang, whereis, [their_monitor]),
        ?assertMatch({Theirs, [{long_gc, 1000}]}, peer:call(Peer, erlang, system_monitor, []))
    end).

%% Frozen (SIGSTOP) after the first sample: the watch still ends within
%% its duration and grace (generously: the machine is shared), says the
%% node stopped answering and keeps what it recorded.
frozen_mid_watch(_Config) ->
    with_peer(watch_frozen, healthy, fun(Peer, Node) ->
        OsPid = peer:call(Peer, os, getpid, []),
        Dir = beamlab_test_util:tmp_dir("frozen"),
        T0 = erlang:monotonic_time(millisecond),
        H = beamlab_test_util:cli_start(["watch", "--node", Node, "--cookie", ?COOKIE, "--duration", "4",
                                         "--interval", "500", "--format", "json"], #{dir => Dir}),
        _ = beamlab_test_util:wait_for_file(maps:get(err_file, H), "memory: ", 30000),
        _ = os:cmd("kill -STOP " ++ OsPid),
        R = try beamlab_test_util:cli_finish(H, <<>>)
            after _ = os:cmd("kill -CONT " ++ OsPid)
            end,
        Took = erlang:monotonic_time(millisecond) - T0,
        ct:log("took ~b ms~nstderr:~n~ts", [Took, maps:get(err, R)]),
        ?assert(Took < (4 + 5 + 10) * 1000),
        ?assertEqual(0, maps:get(code, R)),
        {ok, Doc} = beamlab_json:decode(maps:get(out, R)),
        #{<<"telemetry">> := #{<<"unanswered">> := [_ | _], <<"samples">> := N}} = Doc,
        ?assert(N >= 1),
        ?assert(lists:member(<<"node_unresponsive">>, [I || #{<<"id">> := I} <- maps:get(<<"findings">>, Doc)])),
        ?assertNotEqual(nomatch, binary:match(maps:get(err, R), <<"does not answer">>))
    end).

%% The watch's sampler dies for a reason of its own (killed here from the
%% watched node, over the connection the watch made): the watch ends at
%% once, long before its duration, with one line and exit 1, not at the
%% end of its duration with an internal error.
sampler_lost(_Config) ->
    with_peer(watch_lost, healthy, fun(Peer, Node) ->
        Dir = beamlab_test_util:tmp_dir("lost"),
        T0 = erlang:monotonic_time(millisecond),
        H = beamlab_test_util:cli_start(["watch", "--node", Node, "--cookie", ?COOKIE, "--duration", "60",
                                         "--interval", "500", "--format", "json"], #{dir => Dir}),
        _ = beamlab_test_util:wait_for_file(maps:get(err_file, H), "memory: ", 30000),
        %% Per node in a try: another beamlab node (a short-lived probe)
        %% may leave while it is listed. The sampler is found first and
        %% killed by a signal from here: an erpc call of exit/2 could lose
        %% its reply to the watch ending (and its node leaving) at once.
        Samplers = eval(Peer, "lists:append([try [P"
                              " || P <- erpc:call(N, erlang, processes, []),"
                              " {dictionary, D} <- [erpc:call(N, erlang, process_info, [P, dictionary])],"
                              " proplists:get_value('$initial_call', D) =:= {beamlab_runtime_telemetry, init, 1}]"
                              " catch _:_ -> [] end"
                              " || N <- nodes(hidden), lists:prefix(\"beamlab\", atom_to_list(N))])."),
        ?assertMatch([_], Samplers),
        [true] = [peer:call(Peer, erlang, exit, [P, kill]) || P <- Samplers],
        R = beamlab_test_util:cli_finish(H, <<>>),
        Took = erlang:monotonic_time(millisecond) - T0,
        ct:log("took ~b ms~nstderr:~n~ts", [Took, maps:get(err, R)]),
        ?assert(Took < 30000),
        ?assertEqual(1, maps:get(code, R)),
        ?assertMatch({match, _}, re:run(maps:get(err, R), "watching " ++ Node ++ ": sampling stopped during "
                                                          "the watch \\(killed\\)")),
        ?assertEqual(nomatch, re:run(maps:get(err, R), "internal error|crash"))
    end).

%% Frozen for a while (a node too slow to answer), then running again:
%% the watch says so both times, records the silence and samples again.
frozen_then_resumes(_Config) ->
    with_peer(watch_resumes, healthy, fun(Peer, Node) ->
        OsPid = peer:call(Peer, os, getpid, []),
        Dir = beamlab_test_util:tmp_dir("resumes"),
        H = beamlab_test_util:cli_start(["watch", "--node", Node, "--cookie", ?COOKIE, "--duration", "7",
                                         "--interval", "500", "--format", "json"], #{dir => Dir}),
        _ = beamlab_test_util:wait_for_file(maps:get(err_file, H), "memory: ", 30000),
        _ = os:cmd("kill -STOP " ++ OsPid),
        _ = try beamlab_test_util:wait_for_file(maps:get(err_file, H), "does not answer", 30000)
            after os:cmd("kill -CONT " ++ OsPid)
            end,
        R = beamlab_test_util:cli_finish(H, <<>>),
        ct:log("stderr:~n~ts", [maps:get(err, R)]),
        ?assertEqual(0, maps:get(code, R)),
        ?assertNotEqual(nomatch, binary:match(maps:get(err, R), <<"answers again after">>)),
        {ok, Doc} = beamlab_json:decode(maps:get(out, R)),
        #{<<"telemetry">> := #{<<"unanswered">> := [#{<<"from_ms">> := From, <<"to_ms">> := To}],
                               <<"t_ms">> := Ts}} = Doc,
        ?assert(is_number(To) andalso To > From),
        %% Samples before the silence and after it.
        ?assert(lists:any(fun(T) -> T < From end, Ts)),
        ?assert(lists:any(fun(T) -> T > To end, Ts))
    end).

%% Frozen before the watch: one line, exit 1, within the bound.
frozen_before_watch(_Config) ->
    with_peer(watch_frozen0, healthy, fun(Peer, Node) ->
        OsPid = peer:call(Peer, os, getpid, []),
        _ = os:cmd("kill -STOP " ++ OsPid),
        T0 = erlang:monotonic_time(millisecond),
        R = try beamlab_test_util:cli(["watch", "--node", Node, "--cookie", ?COOKIE, "--duration", "2"])
            after _ = os:cmd("kill -CONT " ++ OsPid)
            end,
        Took = erlang:monotonic_time(millisecond) - T0,
        ct:log("took ~b ms: ~ts", [Took, maps:get(err, R)]),
        ?assert(Took < (2 + 5 + 10) * 1000),
        ?assertEqual(1, maps:get(code, R)),
        beamlab_test_util:assert_one_line_error(R),
        ?assertNotEqual(nomatch, binary:match(maps:get(err, R), <<"did not answer">>))
    end).

%% A node that fails while the watch sets it up (its process holding the
%% sampling flags killed there): one line on stderr, exit 1, at once. On
%% OTP 25 the sampler's init/1 returning `{stop, _}' printed a crash
%% report beside it (and the holder's death waited out 10 s).
setup_fails_one_line(_Config) ->
    {Peer, Node} = peer(watch_setup_fails, kill_holder, ["+S", "1"]),
    try
        R = beamlab_test_util:cli(["watch", "--node", Node, "--cookie", ?COOKIE, "--duration", "2"]),
        ct:log("~p", [R]),
        ?assertEqual(1, maps:get(code, R)),
        beamlab_test_util:assert_one_line_error(R),
        ?assertNotEqual(nomatch, binary:match(maps:get(err, R), <<"cannot watch ", (list_to_binary(Node))/binary>>)),
        ?assertNotEqual(nomatch, binary:match(maps:get(err, R), <<"killed">>)),
        ?assertEqual(<<>>, maps:get(out, R))
    after
        peer:stop(Peer)
    end.

%% `beamlab watch rabbit@host' (the node without its flag): one line
%% suggesting `--node', exit 2; an argument that is no node name, or one
%% beside --node, is only refused.
node_as_argument(_Config) ->
    R = beamlab_test_util:cli(["watch", "rabbit@somehost"]),
    ?assertEqual(2, maps:get(code, R)),
    beamlab_test_util:assert_one_line_error(R),
    ?assertEqual(<<"beamlab: watch takes no arguments (got: rabbit@somehost); did you mean --node rabbit@somehost?\n">>,
                 maps:get(err, R)),
    [begin
         R2 = beamlab_test_util:cli(Args),
         ?assertEqual(2, maps:get(code, R2)),
         beamlab_test_util:assert_one_line_error(R2),
         ?assertEqual(nomatch, binary:match(maps:get(err, R2), <<"did you mean">>))
     end || Args <- [["watch", "rabbit"], ["watch", "a@b", "--node", "c@d"], ["watch", "a@b", "c@d"]]].

%% The node's cookie (its -setcookie argument, also the --cookie value) and
%% the passwords in its arguments and ERL_ZFLAGS appear nowhere: not in
%% stdout, stderr, the saved document, the page or the live metrics.
no_secrets(_Config) ->
    {ok, Peer, NodeAtom} = peer:start(#{name => unique(watch_secret), longnames => true, host => "127.0.0.1",
                                        connection => standard_io,
                                        env => [{"ERL_ZFLAGS", "-myapp api_secret zflags_secret_2718"}],
                                        args => ["-setcookie", ?COOKIE, "-myapp", "db_password", "arg_secret_1618"]}),
    Node = atom_to_list(NodeAtom),
    try
        R = watch(Node, 3, ["--metrics-port", "0"]),
        ?assertEqual(0, maps:get(code, R)),
        {ok, Saved} = file:read_file(maps:get(save, R)),
        Metrics = maps:get(metrics, R),
        ?assertNotEqual(nomatch, binary:match(Metrics, <<"beamlab_watch_up{node=\"", (list_to_binary(Node))/binary, "\"} 1">>)),
        [?assertEqual(nomatch, binary:match(B, Secret), {What, Secret})
         || {What, B} <- [{stdout, maps:get(out, R)}, {stderr, maps:get(err, R)}, {saved, Saved},
                          {report, maps:get(html, R)}, {metrics, Metrics}],
            Secret <- [<<?COOKIE>>, <<"arg_secret_1618">>, <<"zflags_secret_2718">>]],
        %% The node's arguments are kept, with the value masked.
        #{<<"env">> := #{<<"init_arguments">> := Args}} = maps:get(doc, R),
        ?assert(lists:member(<<"-setcookie ****">>, Args)),
        ?assert(lists:member(<<"-myapp db_password ****">>, Args))
    after
        peer:stop(Peer)
    end.
