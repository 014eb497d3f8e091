%%% The system under test through the built escript: `beamlab watch' on a
%%% peer node with a known busy process, `amqp --watch' and `matrix
%%% --target rabbitmq' with the real RabbitMQ from Debian (started by the
%%% test setup or by beamlab itself, loopback only, free ports), and every
%%% failure of them as one line.
-module(target_SUITE).
-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-export([all/0, init_per_suite/1, end_per_suite/1]).
-export([watch_busy_peer/1, watch_failures/1, watch_node_down/1, watch_interrupted/1, amqp_watch_records_broker/1,
         matrix_two_configs/1, matrix_failures/1, matrix_broker_dies/1, matrix_target_cmd/1,
         matrix_otp_flavours/1,
         usage_errors/1]).

-define(COOKIE, "beamlab_target_suite").

all() ->
    [usage_errors, watch_busy_peer, watch_failures, watch_node_down, watch_interrupted, amqp_watch_records_broker,
     matrix_two_configs, matrix_failures, matrix_broker_dies, matrix_target_cmd, matrix_otp_flavours].

init_per_suite(Config) ->
    case filelib:is_regular("/usr/lib/rabbitmq/bin/rabbitmq-server") of
        false -> {skip, "Debian's rabbitmq-server is not installed"};
        true ->
            _ = os:cmd("epmd -address 127.0.0.1 -daemon"),
            Config
    end.

end_per_suite(_Config) ->
    ok.

cli(Args) ->
    cli(Args, #{}).

cli(Args, Opts) ->
    R = beamlab_test_util:cli(Args, Opts),
    ct:log("beamlab ~ts~nexit ~b~nstdout:~n~ts~nstderr:~n~ts",
           [lists:join(" ", Args), maps:get(code, R), maps:get(out, R), maps:get(err, R)]),
    R.

json(#{out := Out}) ->
    {ok, J} = beamlab_json:decode(Out),
    J.

%% A distributed peer (name@127.0.0.1, our cookie), controlled over stdio.
peer(Name) ->
    {ok, Peer, Node} = peer:start(#{name => peer:random_name(atom_to_list(Name)), longnames => true, host => "127.0.0.1",
                                    connection => standard_io,
                                    args => ["-setcookie", ?COOKIE, "-kernel", "inet_dist_use_interface",
                                             "{127,0,0,1}"]}),
    {Peer, atom_to_list(Node)}.

%% A process spinning forever, registered as `spinner', with OTP code only.
spin(Peer) ->
    {ok, Exprs} = beamlab_runtime_expr:parse("register(spinner, self()), L = fun Loop() -> Loop() end, L()."),
    _ = peer:call(Peer, erlang, spawn, [erl_eval, exprs, [Exprs, []]]),
    ok.

usage_errors(_Config) ->
    [begin
         R = cli(Args),
         ?assertEqual(2, maps:get(code, R)),
         beamlab_test_util:assert_one_line_error(R)
     end || Args <- [["watch"], ["watch", "--node", "nohost"],
                     ["matrix", "--target", "rabbitmq", "--vm", "+S 1", "--", "run", "ok."],
                     ["matrix", "--target-cmd", "true", "--vm", "+S 1", "--", "run", "ok."],
                     ["matrix", "--otp", "/nonexistent", "--vm", "+S 1", "--", "run", "ok."]]],
    ok.

%% The busy process is the top process of every interval, its scheduler
%% shows busy, and the node is left as it was: scheduler wall time and
%% microstate accounting off again, no beamlab module loaded.
watch_busy_peer(_Config) ->
    {Peer, Node} = peer(target_watch_busy),
    try
        ok = spin(Peer),
        R = cli(["watch", "--node", Node, "--cookie", ?COOKIE, "--duration", "3", "--interval", "500",
                 "--msacc", "--format", "json"]),
        ?assertEqual(0, maps:get(code, R)),
        #{<<"kind">> := <<"watch">>, <<"telemetry">> := T, <<"command">> := Argv} = json(R),
        ?assertNot(lists:member(<<?COOKIE>>, Argv)),
        ?assert(maps:get(<<"samples">>, T) >= 4),
        Tops = [hd(maps:get(<<"by_reductions">>, S)) || S <- maps:get(<<"top">>, T)],
        [?assertEqual(<<"spinner">>, maps:get(<<"name">>, P)) || P <- Tops],
        Busiest = lists:max(lists:append(maps:get(<<"util_schedulers">>, T))),
        ct:log("busiest scheduler sample: ~p%", [Busiest]),
        ?assert(Busiest >= 80),
        ?assert(is_map(maps:get(<<"msacc">>, T))),
        %% A line per interval on stderr, with the top process in its
        %% table (R: among the top by reductions).
        ?assertMatch({match, _}, re:run(maps:get(err, R), "\n +R[QM]* +[0-9]+( [KMG]i)? .* spinner ")),
        %% One hot process on two schedulers is no critical imbalance.
        ?assertEqual([], [F || F = #{<<"id">> := <<"scheduler_imbalance">>, <<"severity">> := <<"critical">>}
                                   <- maps:get(<<"findings">>, json(R))]),
        %% As found.
        ?assertEqual(undefined, peer:call(Peer, erlang, statistics, [scheduler_wall_time])),
        ?assertEqual(false, peer:call(Peer, erlang, system_flag, [microstate_accounting, false])),
        Loaded = [M || {M, _} <- peer:call(Peer, code, all_loaded, []),
                       lists:prefix("beamlab", atom_to_list(M))],
        ?assertEqual([], Loaded),
        %% The text view names the busy process too.
        R2 = cli(["watch", "--node", Node, "--cookie", ?COOKIE, "--duration", "1"]),
        ?assertEqual(0, maps:get(code, R2)),
        ?assertNotEqual(nomatch, binary:match(maps:get(out, R2), <<"spinner">>))
    after
        peer:stop(Peer)
    end.

watch_failures(_Config) ->
    {Peer, Node} = peer(target_watch_cookie),
    try
        Wrong = cli(["watch", "--node", Node, "--cookie", "not_the_cookie", "--duration", "1"]),
        ?assertEqual(1, maps:get(code, Wrong)),
        beamlab_test_util:assert_one_line_error(Wrong),
        ?assertNotEqual(nomatch, binary:match(maps:get(err, Wrong), <<"wrong cookie">>))
    after
        peer:stop(Peer)
    end,
    Absent = cli(["watch", "--node", "nobody_here@127.0.0.1", "--duration", "1"]),
    ?assertEqual(1, maps:get(code, Absent)),
    beamlab_test_util:assert_one_line_error(Absent),
    ?assertNotEqual(nomatch, binary:match(maps:get(err, Absent), <<"no node">>)),
    NoHost = cli(["watch", "--node", "x@no-such-host.invalid", "--duration", "1"]),
    ?assertEqual(1, maps:get(code, NoHost)),
    beamlab_test_util:assert_one_line_error(NoHost).

%% The node goes down mid-watch: one line, exit 1, what was recorded is
%% printed and saved.
watch_node_down(_Config) ->
    {Peer, Node} = peer(target_watch_down),
    Dir = beamlab_test_util:tmp_dir("watch"),
    Save = filename:join(Dir, "down.json"),
    H = beamlab_test_util:cli_start(["watch", "--node", Node, "--cookie", ?COOKIE, "--duration", "60",
                                     "--interval", "300", "--save", Save], #{dir => Dir}),
    _ = beamlab_test_util:wait_for_file(maps:get(err_file, H), "memory: ", 30000),
    peer:stop(Peer),
    R = beamlab_test_util:cli_finish(H, <<>>),
    ct:log("~p", [R]),
    ?assertEqual(1, maps:get(code, R)),
    ?assertNotEqual(nomatch, binary:match(maps:get(err, R), <<"went down">>)),
    {ok, Doc} = beamlab_result:load(Save),
    T = maps:get(telemetry, Doc),
    ?assertEqual(true, maps:get(<<"node_down">>, T)),
    ?assert(maps:get(<<"samples">>, T) >= 1).

%% amqp --watch against a broker the test starts: the broker's series and
%% its env are in the result beside the load's rates.
amqp_watch_records_broker(_Config) ->
    {ok, B} = beamlab_sut_broker:start(#{kind => rabbitmq, args => []}),
    try
        #{uri := Uri, node := Node, cookie := Cookie} = B,
        R = cli(["amqp", "-h", binary_to_list(Uri), "--closed-loop", "2", "-z", "3",
                 "--watch", atom_to_list(Node), "--cookie", Cookie, "--format", "json"]),
        ?assertEqual(0, maps:get(code, R)),
        #{<<"extra">> := #{<<"broker">> := Broker}, <<"benchmarks">> := Bs, <<"command">> := Argv} = json(R),
        %% The cookie is not kept.
        ?assert(lists:member(<<"****">>, Argv)),
        ?assertNot(lists:member(list_to_binary(Cookie), Argv)),
        ?assertEqual(atom_to_binary(Node), maps:get(<<"node">>, Broker)),
        T = maps:get(<<"telemetry">>, Broker),
        ?assert(maps:get(<<"samples">>, T) >= 2),
        ?assertEqual(maps:get(<<"samples">>, T), length(maps:get(<<"util_schedulers">>, T))),
        ?assert(lists:sum(maps:get(<<"reductions_per_s">>, T)) > 0),
        ?assertMatch(#{<<"schedulers">> := #{<<"online">> := _}}, maps:get(<<"env">>, Broker)),
        ?assert(length(Bs) >= 2),
        %% The load started after the run (the origin of the broker's
        %% `t_ms'), before the broker's last sample (#35).
        #{<<"load_start_ms">> := LoadStart} = maps:get(<<"extra">>, json(R)),
        ?assert(LoadStart >= 0 andalso LoadStart < lists:last(maps:get(<<"t_ms">>, T))),
        %% The report draws the broker's heatmap.
        {ok, Doc} = beamlab_result:from_json(json(R)),
        {ok, Html} = beamlab_report_html:render([{<<"amqp">>, Doc}]),
        ?assertNotEqual(nomatch, binary:match(Html, <<"broker util_schedulers">>)),
        browser_check(Html)
    after
        beamlab_sut_broker:stop(B)
    end.

%% Two configurations whose brokers' own env proves the flags.
matrix_two_configs(_Config) ->
    Tmp = beamlab_test_util:tmp_dir("brokers"),
    R = cli(["matrix", "--target", "rabbitmq", "--vm", "+S 1", "--vm", "+S 2", "-n", "1",
             "--format", "json", "--", "amqp", "--closed-loop", "2", "-z", "2"],
            #{env => [{"TMPDIR", Tmp}], timeout => 600000}),
    ?assertEqual(0, maps:get(code, R)),
    #{<<"extra">> := #{<<"configs">> := [C1, C2]}, <<"benchmarks">> := Bs} = json(R),
    [begin
         ?assertEqual(<<"ok">>, maps:get(<<"status">>, C)),
         Env = maps:get(<<"env">>, C),
         ?assertMatch(#{<<"normal">> := N, <<"online">> := N}, maps:get(<<"schedulers">>, Env)),
         Cmdline = maps:get(<<"emulator_cmdline">>, Env),
         ?assertNotEqual(nomatch, binary:match(iolist_to_binary(lists:join(" ", Cmdline)),
                                               iolist_to_binary(["-S ", integer_to_list(N)]))),
         ?assert(maps:get(<<"samples">>, maps:get(<<"telemetry">>, maps:get(<<"broker">>, C))) >= 1)
     end || {C, N} <- [{C1, 1}, {C2, 2}]],
    ?assert(lists:any(fun(B) -> maps:is_key(<<"comparison">>, B) end, Bs)),
    %% No broker directory is left behind.
    ?assertEqual([], filelib:wildcard(filename:join(Tmp, "beamlab-target-*"))).

%% A flag the broker refuses and a wrapper that is missing fail their
%% configurations with one line each; the good one runs.
matrix_failures(_Config) ->
    R = cli(["matrix", "--target", "rabbitmq", "--vm", "+S 1", "--vm", "+sbwt bogus",
             "--wrap", "none", "--wrap", "no-such-wrapper -x", "-n", "1",
             "--", "amqp", "--closed-loop", "1", "-z", "1"], #{timeout => 600000}),
    ?assertEqual(0, maps:get(code, R)),
    Out = maps:get(out, R),
    ?assertNotEqual(nomatch, binary:match(Out, <<"+sbwt bogus: the target exited during boot">>)),
    ?assertNotEqual(nomatch, binary:match(Out, <<"wrapper no-such-wrapper is not installed">>)),
    Failed = [L || L <- binary:split(Out, <<"\n">>, [global]),
                   binary:match(L, [<<": the target">>, <<": wrapper">>]) =/= nomatch],
    ?assertEqual(3, length(Failed)),
    ?assertNotEqual(nomatch, binary:match(Out, <<"+S 1   ">>)).

%% A broker killed under load: that configuration says so; the next runs.
matrix_broker_dies(_Config) ->
    Dir = beamlab_test_util:tmp_dir("dies"),
    H = beamlab_test_util:cli_start(["matrix", "--target", "rabbitmq", "--vm", "+S 1", "--vm", "+S 2",
                                     "-n", "1", "--", "amqp", "--closed-loop", "1", "-z", "20"],
                                    #{dir => Dir}),
    Err = beamlab_test_util:wait_for_file(maps:get(err_file, H), "received: [0-9]+ msg/s", 120000),
    {match, [Pid]} = re:run(Err, "os pid ([0-9]+)", [{capture, all_but_first, list}]),
    _ = os:cmd("kill -KILL " ++ Pid),
    R = beamlab_test_util:cli_finish(H, <<>>),
    ct:log("~p", [R]),
    ?assertEqual(0, maps:get(code, R)),
    ?assertNotEqual(nomatch, binary:match(maps:get(out, R), <<"+S 1: the target died during the load">>)),
    ?assertNotEqual(nomatch, binary:match(maps:get(err, R), <<"[+S 2] rep 1/1 done (2 schedulers online, jit flavour)">>)).

%% The generic form: any command that starts a node, flags via ERL_ZFLAGS.
matrix_target_cmd(_Config) ->
    Cmd = "exec erl -noshell -noinput -name beamlab_tcmd@127.0.0.1 -setcookie " ?COOKIE
          " -kernel inet_dist_use_interface '{127,0,0,1}'",
    R = cli(["matrix", "--target-cmd", Cmd, "--target-node", "beamlab_tcmd@127.0.0.1",
             "--cookie", ?COOKIE, "--vm", "+S 1", "--vm", "+S 2", "-n", "1", "--format", "json",
             "--", "run", "ok.", "-s", "3"], #{timeout => 600000}),
    ?assertEqual(0, maps:get(code, R)),
    #{<<"extra">> := #{<<"configs">> := Cs}, <<"command">> := Argv} = json(R),
    ?assertNot(lists:member(<<?COOKIE>>, Argv)),
    ?assertEqual([1, 2], [maps:get(<<"online">>, maps:get(<<"schedulers">>, maps:get(<<"env">>, C))) || C <- Cs]),
    ?assertEqual([<<"+S 1">>, <<"+S 2">>],
                 [maps:get(<<"ERL_ZFLAGS">>, maps:get(<<"os_env">>, maps:get(<<"env">>, C))) || C <- Cs]).

%% With Chromium installed: the page draws the broker heatmap (a canvas in
%% the timeline section) and the latency spectrum on a log axis, without
%% a script error or a layout problem.
browser_check(Html) ->
    case os:find_executable("chromium") of
        false -> ct:log("chromium not installed: page not rendered");
        Exe ->
            Dir = beamlab_test_util:tmp_dir("page"),
            File = filename:join(Dir, "amqp.html"),
            ok = file:write_file(File, Html),
            Port = open_port({spawn_executable, "/bin/sh"},
                             [{args, ["-c", "exec \"$0\" \"$@\" 2>/dev/null", Exe, "--headless", "--no-sandbox",
                                      "--disable-gpu", "--no-first-run", "--user-data-dir=" ++ Dir,
                                      "--dump-dom", "file://" ++ File]}, binary, exit_status]),
            Dom = collect_dom(Port, []),
            {match, [Body]} = re:run(Dom, <<"<body[^>]*>">>, [{capture, first, binary}]),
            ?assertNotEqual(nomatch, binary:match(Body, <<"data-errors=\"\"">>)),
            %% Its own layout check found nothing (no point outside its
            %% axis, no label cut off, no table off the page).
            ?assertNotEqual(nomatch, binary:match(Body, <<"data-layout=\"\"">>)),
            %% The consumer latency spectrum on a log axis.
            {match, [Latency]} = re:run(Dom, <<"<figure class=\"card\" data-kind=\"latency\">.*?</figure>">>,
                                        [dotall, {capture, first, binary}]),
            ?assertNotEqual(nomatch, binary:match(Latency, <<"data-y-scale=\"log\"">>)),
            [_, Timeline] = binary:split(Dom, <<"<section id=\"timeline\"">>),
            ?assertNotEqual(nomatch, binary:match(Timeline, <<"class=\"chart heatmap\"">>)),
            %% #35: the broker's heatmap and the line charts beside it (the
            %% load's rates, the broker's series) share one time axis: the
            %% same origin, range and ticks (the heatmap said 0..7 s beside
            %% lines over 1..8 s).
            Capture = [global, dotall, {capture, all_but_first, binary}],
            {match, [[Lo, Hi, Ticks]]} =
                re:run(Timeline, <<"class=\"chart heatmap\" data-x-lo=\"([^\"]*)\" data-x-hi=\"([^\"]*)\" "
                                   "data-x-ticks=\"([^\"]*)\"">>, Capture),
            {match, Charts} = re:run(Timeline, <<"<figure class=\"card\" data-kind=\"timeseries\">.*?"
                                                 "<svg class=\"chart\"[^>]*data-x-lo=\"([^\"]*)\" data-x-hi=\"([^\"]*)\""
                                                 "(.*?)</svg>">>, Capture),
            %% and the same pixels: stacked, an instant at the same x in each
            {match, Pixels} = re:run(Timeline, <<"data-x-px=\"([^\"]*)\"">>, Capture),
            ?assertMatch([_], lists:usort(Pixels)),
            ct:log("heatmap ~ts..~ts (~ts); charts ~p", [Lo, Hi, Ticks, [{L, H} || [L, H, _] <- Charts]]),
            ?assert(length(Charts) >= 3),
            [begin
                 ?assertEqual({Lo, Hi}, {L, H}),
                 {match, Xs} = re:run(Svg, <<"<text [^>]*data-axis=\"x\"[^>]*>([^<]*)</text>">>, Capture),
                 ?assertEqual(Ticks, iolist_to_binary(lists:join(" ", [X || [X] <- Xs])))
             end || [L, H, Svg] <- Charts]
    end.

collect_dom(Port, Acc) ->
    receive
        {Port, {data, D}} -> collect_dom(Port, [D | Acc]);
        {Port, {exit_status, _}} -> iolist_to_binary(lists:reverse(Acc))
    after 120000 -> error(chromium_timeout)
    end.

%% --otp DIR puts that installation first on the broker's PATH; the flavour
%% is proven from what the node reports. Debian's OTP has only the JIT:
%% asking for the interpreter is one line before any broker starts.
matrix_otp_flavours(_Config) ->
    Otp = code:root_dir(),
    R = cli(["matrix", "--target", "rabbitmq", "--otp", Otp, "--vm", "-emu_flavor smp",
             "-n", "1", "--format", "json",
             "--", "amqp", "--closed-loop", "1", "-z", "1"], #{timeout => 600000}),
    ?assertEqual(0, maps:get(code, R)),
    #{<<"extra">> := #{<<"configs">> := [Jit]}} = json(R),
    ?assertEqual(<<"ok">>, maps:get(<<"status">>, Jit)),
    ?assertEqual(<<"jit">>, maps:get(<<"flavor">>, maps:get(<<"otp">>, maps:get(<<"env">>, Jit)))),
    ?assertEqual(list_to_binary(filename:join([Otp, "bin", "erl"])), maps:get(<<"erl">>, Jit)),
    [begin
         Emu = cli(["matrix", "--target", "rabbitmq", "--otp", Otp | Ask]
                   ++ ["-n", "1", "--", "amqp", "--closed-loop", "1", "-z", "1"]),
         ?assertEqual(2, maps:get(code, Emu)),
         beamlab_test_util:assert_one_line_error(Emu),
         ct:log("emu: ~ts", [maps:get(err, Emu)]),
         ?assertNotEqual(nomatch, binary:match(maps:get(err, Emu), <<"has no emu flavour (it has jit)">>))
     end || Ask <- [["--vm", "-emu_flavor emu"], ["--flavor", "emu"]]].

%% Ctrl-C (SIGTERM to the launcher) ends a watch without --duration: exit
%% 130, the partial document printed, the node's flags restored.
watch_interrupted(_Config) ->
    {Peer, Node} = peer(target_watch_int),
    try
        H = #{os_pid := Pid, err_file := ErrFile} =
            beamlab_test_util:cli_start(["watch", "--node", Node, "--cookie", ?COOKIE, "--interval", "300",
                                         "--format", "json"], #{}),
        _ = beamlab_test_util:wait_for_file(ErrFile, "memory: ", 30000),
        _ = os:cmd("kill -TERM " ++ integer_to_list(Pid)),
        R = beamlab_test_util:cli_finish(H, []),
        ct:log("~p", [R]),
        ?assertEqual(130, maps:get(code, R)),
        #{<<"partial">> := true, <<"telemetry">> := T} = json(R),
        ?assert(maps:get(<<"samples">>, T) >= 1),
        ?assertEqual(undefined, peer:call(Peer, erlang, statistics, [scheduler_wall_time]))
    after
        peer:stop(Peer)
    end.
