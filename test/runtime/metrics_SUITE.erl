%%% The live metrics server (`beamlab_runtime_metrics') over real sockets:
%%% content negotiation, keep-alive, HEAD, gzip, errors, collectors that
%%% fail or hang, its end with its owner; `promtool check metrics' on what
%%% it serves; a real Prometheus (Debian's, on loopback) scraping a running
%%% `beamlab watch --metrics-port' whose series exist and move.
-module(metrics_SUITE).
-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-export([all/0]).
-export([formats/1, http_details/1, collector_failures/1, stops_with_owner/1, listen_error/1,
         promtool_accepts/1, prometheus_scrapes_watch/1, metrics_options/1, run_and_suite/1]).
-export([idle_clients_cannot_lock_out/1, slowloris_cut/1, metrics_bind_warns/1]).

-define(M, beamlab_runtime_metrics).
-define(OM_ACCEPT, "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,"
                   "text/plain;version=0.0.4;q=0.5,*/*;q=0.1").

all() ->
    [formats, http_details, collector_failures, stops_with_owner, listen_error, promtool_accepts,
     prometheus_scrapes_watch, metrics_options, run_and_suite, idle_clients_cannot_lock_out,
     slowloris_cut, metrics_bind_warns].

families() ->
    [#{name => <<"beamlab_test_events">>, type => counter, help => <<"Events seen">>,
       samples => [{[{<<"node">>, <<"a@127.0.0.1">>}], 42}]},
     #{name => <<"beamlab_test_memory_bytes">>, type => gauge, help => <<"Memory \"used\"">>, unit => <<"bytes">>,
       samples => [{[{<<"node">>, <<"a@127.0.0.1">>}, {<<"kind">>, <<"ets">>}], 1024}]},
     #{name => <<"beamlab_test_latency_seconds">>, type => histogram, help => <<"Latency">>, unit => <<"seconds">>,
       samples => [{[{<<"node">>, <<"a@127.0.0.1">>}],
                    #{buckets => [{0.001, 1}, {0.01, 5}, {0.1, 9}], sum => 0.25, count => 10}}]},
     #{name => <<"beamlab_test_build">>, type => info, help => <<"Build">>,
       samples => [{[{<<"version">>, <<"0.1">>}], 1}]}].

start() ->
    {ok, S} = ?M:start(#{port => 0}),
    ok = ?M:register(S, test, fun families/0),
    {S, ?M:port(S)}.

%% The OpenMetrics text when Prometheus's Accept header asks for it, the
%% 0.0.4 text format otherwise; both from the same families.
formats(_Config) ->
    {S, Port} = start(),
    try
        {200, H1, Om} = get(Port, "/metrics", [{"accept", ?OM_ACCEPT}]),
        ?assertEqual(<<"application/openmetrics-text; version=1.0.0; charset=utf-8">>, header(<<"content-type">>, H1)),
        ?assertMatch(<<_/binary>>, Om),
        ?assertEqual(<<"# EOF\n">>, binary:part(Om, byte_size(Om), -6)),
        [?assertNotEqual(nomatch, binary:match(Om, L), L)
         || L <- [<<"# TYPE beamlab_test_events counter\n">>, <<"beamlab_test_events_total{node=\"a@127.0.0.1\"} 42\n">>,
                  <<"# UNIT beamlab_test_memory_bytes bytes\n">>,
                  <<"# HELP beamlab_test_memory_bytes Memory \\\"used\\\"\n">>,
                  <<"beamlab_test_latency_seconds_bucket{node=\"a@127.0.0.1\",le=\"+Inf\"} 10\n">>,
                  <<"beamlab_test_build_info{version=\"0.1\"} 1\n">>,
                  <<"beamlab_metrics_collector_up{collector=\"test\"} 1\n">>]],
        {200, H2, Prom} = get(Port, "/metrics", []),
        ?assertEqual(<<"text/plain; version=0.0.4; charset=utf-8">>, header(<<"content-type">>, H2)),
        ?assertEqual(nomatch, binary:match(Prom, <<"# EOF">>)),
        ?assertNotEqual(nomatch, binary:match(Prom, <<"# TYPE beamlab_test_events_total counter\n">>))
    after
        ?M:stop(S)
    end.

%% Keep-alive (two requests on one connection), HEAD, gzip, 404, 405, a
%% bad request line; the server goes on serving after each.
http_details(_Config) ->
    {S, Port} = start(),
    try
        {ok, C} = gen_tcp:connect({127, 0, 0, 1}, Port, [binary, {active, false}]),
        {200, _, B1} = request(C, "GET", "/metrics", []),
        {200, _, B2} = request(C, "GET", "/metrics?x=1", []),
        ?assertEqual(B1, B2),
        {200, H, <<>>} = request(C, "HEAD", "/metrics", []),
        ?assertEqual(integer_to_binary(byte_size(B1)), header(<<"content-length">>, H)),
        {404, _, _} = request(C, "GET", "/other", []),
        {405, H405, _} = request(C, "POST", "/metrics", []),
        ?assertEqual(<<"GET, HEAD">>, header(<<"allow">>, H405)),
        ok = gen_tcp:close(C),
        {200, Hz, Z} = get(Port, "/metrics", [{"accept-encoding", "gzip"}]),
        ?assertEqual(<<"gzip">>, header(<<"content-encoding">>, Hz)),
        ?assertEqual(B1, zlib:gunzip(Z)),
        {ok, Bad} = gen_tcp:connect({127, 0, 0, 1}, Port, [binary, {active, false}]),
        ok = gen_tcp:send(Bad, <<"\x01\x02 nonsense\r\n\r\n">>),
        {ok, Resp} = gen_tcp:recv(Bad, 0, 5000),
        ?assertMatch(<<"HTTP/1.1 400", _/binary>>, Resp),
        {200, _, _} = get(Port, "/metrics", [])
    after
        ?M:stop(S)
    end.

%% A collector that crashes and one that hangs are left out of the scrape
%% (which still answers, within the collectors' timeout) and marked down.
collector_failures(_Config) ->
    {S, Port} = start(),
    try
        ok = ?M:register(S, crashes, fun() -> error(boom) end),
        ok = ?M:register(S, hangs, fun() -> receive after infinity -> [] end end),
        ok = ?M:register(S, garbage, fun() -> not_a_list end),
        {200, _, Body} = get(Port, "/metrics", [], 30000),
        [?assertNotEqual(nomatch, binary:match(Body, L), L)
         || L <- [<<"beamlab_metrics_collector_up{collector=\"crashes\"} 0">>,
                  <<"beamlab_metrics_collector_up{collector=\"hangs\"} 0">>,
                  <<"beamlab_metrics_collector_up{collector=\"garbage\"} 0">>,
                  <<"beamlab_metrics_collector_up{collector=\"test\"} 1">>,
                  <<"beamlab_test_events_total">>]],
        ok = ?M:unregister(S, hangs),
        ok = ?M:unregister(S, test),
        {200, _, Body2} = get(Port, "/metrics", []),
        ?assertEqual(nomatch, binary:match(Body2, <<"beamlab_test_events_total">>)),
        ?assertEqual(nomatch, binary:match(Body2, <<"\"hangs\"">>))
    after
        ?M:stop(S)
    end.

%% The server ends with the process that started it; its port is free again.
stops_with_owner(_Config) ->
    Self = self(),
    Owner = spawn(fun() ->
                          {ok, S} = ?M:start(#{port => 0}),
                          Self ! {server, S, ?M:port(S)},
                          receive stop -> ok end
                  end),
    {S, Port} = receive {server, S0, P0} -> {S0, P0} after 10000 -> error(no_server) end,
    Ref = erlang:monitor(process, S),
    Owner ! stop,
    receive {'DOWN', Ref, process, S, _} -> ok after 10000 -> error(server_lives_on) end,
    ?assertMatch({error, econnrefused}, gen_tcp:connect({127, 0, 0, 1}, Port, [])),
    {ok, S2} = ?M:start(#{port => Port}),
    ok = ?M:stop(S2),
    ok = ?M:stop(S2).

listen_error(_Config) ->
    {S, Port} = start(),
    try
        {error, E} = ?M:start(#{port => Port}),
        Line = lists:flatten(?M:format_error(E)),
        ct:log("~ts", [Line]),
        ?assertEqual("cannot serve metrics on 127.0.0.1:" ++ integer_to_list(Port) ++ ": address already in use", Line)
    after
        ?M:stop(S)
    end.

%% promtool's linter accepts the 0.0.4 text of every type of family.
promtool_accepts(_Config) ->
    case beamlab_test_prometheus:available() of
        {skip, _} = Skip -> Skip;
        ok ->
            {S, Port} = start(),
            try
                {200, _, Body} = get(Port, "/metrics", []),
                ?assertEqual({0, <<>>}, beamlab_test_prometheus:check_metrics(Body))
            after
                ?M:stop(S)
            end
    end.

%% `watch --metrics-port 0' of a node with a spinning process, scraped by
%% Prometheus every second: the node's series exist, are labelled with the
%% node, and move (its reductions counter grows); the spinner is named in
%% the top processes; promtool accepts the text.
prometheus_scrapes_watch(_Config) ->
    case beamlab_test_prometheus:available() of
        {skip, _} = Skip -> Skip;
        ok ->
            _ = os:cmd("epmd -address 127.0.0.1 -daemon"),
            {ok, Peer, NodeAtom} = peer:start(#{name => peer:random_name("metrics_watched"), longnames => true, host => "127.0.0.1",
                                                connection => standard_io,
                                                args => ["-setcookie", "metrics_suite"]}),
            Node = atom_to_list(NodeAtom),
            {ok, Tokens, _} = erl_scan:string("erlang:spawn(fun() -> register(spinner, self()),"
                                              " L = fun Loop() -> Loop() end, L() end), ok."),
            {ok, Exprs} = erl_parse:parse_exprs(Tokens),
            {value, ok, _} = peer:call(Peer, erl_eval, exprs, [Exprs, []]),
            H = beamlab_test_util:cli_start(["watch", "--node", Node, "--cookie", "metrics_suite",
                                             "--interval", "500", "--metrics-port", "0"], #{}),
            try
                Err = beamlab_test_util:wait_for_file(maps:get(err_file, H), "metrics: http://127.0.0.1:[0-9]+/metrics", 30000),
                {match, [Port]} = re:run(Err, "metrics: http://127.0.0.1:([0-9]+)/metrics", [{capture, all_but_first, list}]),
                _ = beamlab_test_util:wait_for_file(maps:get(err_file, H), "memory: ", 30000),
                %% promtool's linter on the 0.0.4 text beamlab serves for the watch
                {200, _, Text} = get(list_to_integer(Port), "/metrics", []),
                ?assertEqual({0, <<>>}, beamlab_test_prometheus:check_metrics(Text)),
                {ok, Prom} = beamlab_test_prometheus:start(["127.0.0.1:" ++ Port], #{interval => "1s"}),
                try
                    Sel = "{node=\"" ++ Node ++ "\"}",
                    [#{value := R1}] = beamlab_test_prometheus:wait_for(
                                         Prom, "beamlab_vm_reductions_total" ++ Sel, fun(L) -> L =/= [] end, 60000),
                    [#{value := R2}] = beamlab_test_prometheus:wait_for(
                                         Prom, "beamlab_vm_reductions_total" ++ Sel,
                                         fun([#{value := V}]) -> V > R1; (_) -> false end, 60000),
                    ct:log("reductions ~p -> ~p", [R1, R2]),
                    [#{value := 1.0}] = beamlab_test_prometheus:wait_for(
                                          Prom, "beamlab_watch_up" ++ Sel, fun(L) -> L =/= [] end, 30000),
                    [_ | _] = beamlab_test_prometheus:wait_for(
                                Prom, "beamlab_vm_memory_bytes{kind=\"total\",node=\"" ++ Node ++ "\"}",
                                fun(L) -> L =/= [] end, 30000),
                    [_ | _] = beamlab_test_prometheus:wait_for(
                                Prom, "beamlab_vm_scheduler_utilization_ratio" ++ Sel,
                                fun(L) -> length(L) >= 1 end, 30000),
                    [#{metric := #{<<"pid">> := _}} | _] =
                        beamlab_test_prometheus:wait_for(
                          Prom, "beamlab_watch_top_process_reductions_per_second{name=\"spinner\"}",
                          fun(L) -> L =/= [] end, 30000),
                    [{_, <<"up">>, <<>>}] = beamlab_test_prometheus:targets(Prom)
                after
                    ok = beamlab_test_prometheus:stop(Prom)
                end
            after
                _ = os:cmd("kill -TERM " ++ integer_to_list(maps:get(os_pid, H))),
                R = beamlab_test_util:cli_finish(H, <<>>),
                ct:log("watch: exit ~b~n~ts", [maps:get(code, R), maps:get(err, R)]),
                peer:stop(Peer)
            end
    end.

%% `run' serves each job's iteration counter (it moves) and this VM's
%% telemetry while it measures, without recording the telemetry in the
%% document; `suite' serves this VM's telemetry; promtool accepts both.
run_and_suite(_Config) ->
    Run = beamlab_test_util:cli_start(["run", "timer:sleep(1).", "-s", "40", "-d", "300", "--metrics-port", "0",
                                       "--format", "json"], #{}),
    Port = metrics_port(Run),
    Iterations = fun() ->
                         {200, _, B} = get(Port, "/metrics", []),
                         {match, [N]} = re:run(B, "beamlab_run_iterations_total\\{node=\"[^\"]+\",job=\"timer:sleep\\(1\\).\"\\} ([0-9]+)",
                                               [{capture, all_but_first, list}]),
                         {list_to_integer(N), B}
                 end,
    %% (the telemetry's families come with its first sample, a second in)
    {N1, Text} = beamlab_test_util:wait_for(fun() -> case catch Iterations() of
                                                        {N, B} = R when is_integer(N), N > 0 ->
                                                            case binary:match(B, <<"beamlab_vm_memory_bytes{">>) of
                                                                nomatch -> R;
                                                                _ -> {ok, R}
                                                            end;
                                                        Other -> Other
                                                    end end, 30000, iterations),
    beamlab_test_util:wait_until(fun() -> element(1, Iterations()) > N1 end, 30000, iterations_move),
    promtool(Text),
    _ = os:cmd("kill -TERM " ++ integer_to_list(maps:get(os_pid, Run))),
    R = beamlab_test_util:cli_finish(Run, <<>>),
    ?assertEqual(130, maps:get(code, R)),
    {ok, Doc} = beamlab_json:decode(maps:get(out, R)),
    ?assertEqual(#{}, maps:get(<<"telemetry">>, Doc, #{})),
    %% (every workload: long enough to be scraped, stopped once it was)
    Suite = beamlab_test_util:cli_start(["suite", "--metrics-port", "0"], #{}),
    SPort = metrics_port(Suite),
    STex = beamlab_test_util:wait_for(fun() ->
                                              case catch get(SPort, "/metrics", []) of
                                                  {200, _, B} ->
                                                      case binary:match(B, <<"beamlab_vm_processes{">>) of
                                                          nomatch -> B;
                                                          _ -> {ok, B}
                                                      end;
                                                  Other -> Other
                                              end
                                      end, 30000, suite_metrics),
    promtool(STex),
    _ = os:cmd("kill -TERM " ++ integer_to_list(maps:get(os_pid, Suite))),
    _ = beamlab_test_util:cli_finish(Suite, <<>>),
    ok.

metrics_port(H) ->
    Err = beamlab_test_util:wait_for_file(maps:get(err_file, H), "metrics: http://127.0.0.1:[0-9]+/metrics", 30000),
    {match, [Port]} = re:run(Err, "metrics: http://127.0.0.1:([0-9]+)/metrics", [{capture, all_but_first, list}]),
    list_to_integer(Port).

promtool(Text) ->
    case beamlab_test_prometheus:available() of
        ok -> ?assertEqual({0, <<>>}, beamlab_test_prometheus:check_metrics(Text));
        {skip, Why} -> ct:log("~ts", [Why])
    end.

%% Bad values are one line and exit 2; a port in use is one line, exit 1.
metrics_options(_Config) ->
    [begin
         R = beamlab_test_util:cli(Args),
         ct:log("~p: ~ts", [Args, maps:get(err, R)]),
         ?assertEqual(2, maps:get(code, R)),
         beamlab_test_util:assert_one_line_error(R)
     end || Args <- [["watch", "--node", "a@127.0.0.1", "--metrics-port", "70000"],
                     ["watch", "--node", "a@127.0.0.1", "--metrics-port", "0", "--metrics-bind", "nowhere"],
                     ["watch", "--node", "a@127.0.0.1", "--metrics-bind", "127.0.0.1"]]],
    {ok, Busy} = gen_tcp:listen(0, [{ip, {127, 0, 0, 1}}]),
    {ok, Port} = inet:port(Busy),
    try
        R = beamlab_test_util:cli(["watch", "--node", "a@127.0.0.1", "--metrics-port", integer_to_list(Port)]),
        ?assertEqual(1, maps:get(code, R)),
        beamlab_test_util:assert_one_line_error(R),
        ?assertNotEqual(nomatch, binary:match(maps:get(err, R), <<"address already in use">>))
    after
        gen_tcp:close(Busy)
    end.

%%--------------------------------------------------------------------
%% Idle clients (#34)

%% A few idle local clients used to hold all 16 slots for 10 s each and
%% lock Prometheus out with 503s. Now a scrape is served whatever the idle
%% clients do, and under pressure the connections that have been waiting
%% for over a second are closed. Variant: idle kept-alive connections
%% (after a request) are evicted the same way.
idle_clients_cannot_lock_out(_Config) ->
    {S, Port} = start(),
    try
        Idle = [begin
                    {ok, C} = gen_tcp:connect({127, 0, 0, 1}, Port, [binary, {active, false}]),
                    C
                end || _ <- lists:seq(1, 40)],
        {ok, Kept} = gen_tcp:connect({127, 0, 0, 1}, Port, [binary, {active, false}]),
        {200, _, _} = request(Kept, "GET", "/metrics", []),
        %% Served at once, not refused, while all of them wait.
        {200, _, _} = get(Port, "/metrics", []),
        Opened = erlang:monotonic_time(millisecond),
        %% Eviction takes connections that waited over a second when a
        %% newcomer arrives: let that second pass, then one more scrape.
        beamlab_test_util:wait_until(fun() -> erlang:monotonic_time(millisecond) - Opened > 1100 end, 5000),
        {200, _, _} = get(Port, "/metrics", []),
        [?assertEqual({error, closed}, gen_tcp:recv(C, 0, 5000)) || C <- [Kept | Idle]],
        {200, _, _} = get(Port, "/metrics", [])
    after
        ?M:stop(S)
    end.

%% A slowloris (a request whose head trickles in, one header line every
%% 1.5 s) is cut when its request does not complete within 10 s: each
%% line used to get 10 s of its own, so such a client held its slot for
%% 100 lines. Variant: a client that sends nothing at all.
slowloris_cut(_Config) ->
    {S, Port} = start(),
    try
        {ok, C} = gen_tcp:connect({127, 0, 0, 1}, Port, [binary, {active, false}]),
        ok = gen_tcp:send(C, <<"GET /metrics HTTP/1.1\r\n">>),
        Lines = trickle(C, 0),
        ct:log("cut after ~b header lines", [Lines]),
        ?assert(Lines < 20),
        {ok, Mute} = gen_tcp:connect({127, 0, 0, 1}, Port, [binary, {active, false}]),
        ?assertEqual({error, closed}, gen_tcp:recv(Mute, 0, 30000)),
        {200, _, _} = get(Port, "/metrics", [])
    after
        ?M:stop(S)
    end.

trickle(C, N) when N < 100 ->
    case gen_tcp:recv(C, 0, 1500) of
        {error, timeout} ->
            case gen_tcp:send(C, [<<"x-slow-">>, integer_to_list(N), <<": 1\r\n">>]) of
                ok -> trickle(C, N + 1);
                {error, _} -> N
            end;
        {error, closed} -> N;
        {ok, Data} -> error({answered, Data})
    end;
trickle(_C, N) ->
    N.

%% --metrics-bind to an address other hosts reach says so on stderr.
%% (A short run; nothing connects to the endpoint.) Variant: a loopback
%% address other than 127.0.0.1 says nothing.
metrics_bind_warns(_Config) ->
    Run = fun(Bind) -> beamlab_test_util:cli(["ok.", "-d", "20", "-s", "1", "--metrics-port", "0",
                                              "--metrics-bind", Bind]) end,
    #{code := 0, err := Err} = Run("0.0.0.0"),
    ?assertNotEqual(nomatch, binary:match(Err, <<"--metrics-bind 0.0.0.0: the metrics are reachable from other hosts">>)),
    #{code := 0, err := Err2} = Run("127.0.0.2"),
    ?assertEqual(nomatch, binary:match(Err2, <<"reachable from other hosts">>)).

%%--------------------------------------------------------------------
%% A small HTTP/1.1 client
%%--------------------------------------------------------------------

get(Port, Path, Headers) ->
    get(Port, Path, Headers, 10000).

get(Port, Path, Headers, Timeout) ->
    {ok, C} = gen_tcp:connect({127, 0, 0, 1}, Port, [binary, {active, false}]),
    try request(C, "GET", Path, [{"connection", "close"} | Headers], Timeout)
    after gen_tcp:close(C)
    end.

request(C, Method, Path, Headers) ->
    request(C, Method, Path, Headers, 10000).

request(C, Method, Path, Headers, Timeout) ->
    ok = gen_tcp:send(C, [Method, " ", Path, " HTTP/1.1\r\nhost: localhost\r\n",
                          [[K, ": ", V, "\r\n"] || {K, V} <- Headers], "\r\n"]),
    ok = inet:setopts(C, [{packet, http_bin}]),
    {ok, {http_response, _, Status, _}} = gen_tcp:recv(C, 0, Timeout),
    Hs = response_headers(C, []),
    ok = inet:setopts(C, [{packet, raw}]),
    Len = binary_to_integer(header(<<"content-length">>, Hs)),
    Body = case Len of
               0 -> <<>>;
               _ when Method =:= "HEAD" -> <<>>;
               _ -> {ok, B} = gen_tcp:recv(C, Len, Timeout), B
           end,
    {Status, Hs, Body}.

response_headers(C, Acc) ->
    case gen_tcp:recv(C, 0, 10000) of
        {ok, {http_header, _, Name, _, Value}} ->
            K = case Name of A when is_atom(A) -> atom_to_binary(A); B -> B end,
            response_headers(C, [{string:lowercase(K), Value} | Acc]);
        {ok, http_eoh} -> Acc
    end.

header(Name, Hs) ->
    proplists:get_value(Name, Hs).
