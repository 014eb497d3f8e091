-module(beamlab_suite_tests).
-include_lib("eunit/include/eunit.hrl").

plan_all_builtin_test() ->
    {ok, Plan} = beamlab_suite:plan([], quick, #{}),
    ?assertEqual(beamlab_workload:builtin(), [M || {M, _} <- Plan]).

plan_sweep_from_text_test() ->
    {ok, [{beamlab_workload_ping_pong, Points}]} =
        beamlab_suite:plan(["ping_pong"], quick,
                           #{<<"ping_pong">> => #{size => ["0", "10", "100"], payload => ["list"]}}),
    ?assertEqual([0, 10, 100], [S || {_, #{size := S}} <- Points]).

plan_errors_test_() ->
    Msg = fun({error, R}) -> lists:flatten(io_lib:format("~ts", [beamlab_suite:format_error(R)])) end,
    [?_assertEqual("unknown workload 'nope' (see beamlab suite --list)",
                   Msg(beamlab_suite:plan(["nope"], quick, #{}))),
     ?_assertEqual("workload fib has no parameter 'm' (it has: n)",
                   Msg(beamlab_suite:plan(["fib"], quick, #{<<"fib">> => #{m => ["1"]}}))),
     ?_assertEqual("fib.n: bad value 'x': expected integer 0..45",
                   Msg(beamlab_suite:plan(["fib"], quick, #{<<"fib">> => #{n => ["x"]}}))),
     ?_assertEqual("--param for workload 'ring', which is not selected or does not exist",
                   Msg(beamlab_suite:plan(["fib"], quick, #{<<"ring">> => #{n => ["1"]}}))),
     ?_assertEqual("skynet: size must be a power of 10 (10, 100, ..., 1000000), not 20",
                   Msg(beamlab_suite:plan(["skynet"], quick, #{<<"skynet">> => #{size => ["20"]}})))].

plan_dedupes_names_test() ->
    {ok, Plan} = beamlab_suite:plan(["ring", "fib", "ring"], quick, #{}),
    ?assertEqual([beamlab_workload_ring, beamlab_workload_fib], [M || {M, _} <- Plan]).

%% A preset is data: every built-in row plans to exactly one point, named
%% after the keys the row sets; the remote rows only with a node.
preset_termite_plan_test() ->
    {ok, P} = beamlab_suite_preset:find("termite"),
    {ok, Plan, Rows} = beamlab_suite_preset:plan(P, quick, none, #{}),
    ?assertEqual(9, length(Plan)),
    ?assertEqual([<<"fib(34)">>, <<"spawn">>, <<"send">>, <<"ring 40k/0">>, <<"ring 40k/4">>,
                  <<"ping-pong internal (0)">>, <<"ping-pong internal (1000)">>,
                  <<"ping-pong same node (0)">>, <<"ping-pong same node (1000)">>],
                 [L || #{label := L} <- Rows]),
    ?assertMatch([#{benchmark := <<"fib[n=34]">>, published := 585, unit := <<"ms">>} | _], Rows),
    [{beamlab_workload_ring, [{_, #{variant := termite, n := 40000, k := 4}}]}] =
        [E || {beamlab_workload_ring, [{_, #{k := 4}}]} = E <- Plan],
    {ok, Plan2, _} = beamlab_suite_preset:plan(P, quick, 'far@host', #{}),
    ?assertEqual(11, length(Plan2)),
    ?assertMatch({beamlab_workload_ping_pong, [{_, #{vm := remote, node := 'far@host', size := 1000}}]},
                 lists:last(Plan2)).

preset_message_load_plan_test() ->
    {ok, P} = beamlab_suite_preset:find("message-load"),
    {ok, Plan, Rows} = beamlab_suite_preset:plan(P, full, none,
                                                 #{<<"message_load">> => #{"wait" => ["5"]}}),
    ?assertEqual([96, 192], [N || {_, [{_, #{procs := N}}]} <- Plan]),
    %% full profile: the original's periods; --param applies to every row
    [?assertMatch(#{variant := original, warmup := 300000, duration := 60000, wait := 5}, Ps)
     || {_, [{_, Ps}]} <- Plan],
    ?assertEqual([<<"message_load[variant=original,procs=96,wait=5]">>,
                  <<"message_load[variant=original,procs=192,wait=5]">>],
                 [B || #{benchmark := B} <- Rows]).

preset_file_test() ->
    File = filename:join(filename:basedir(user_cache, "beamlab-test"), "my.preset"),
    ok = filelib:ensure_dir(File),
    ok = file:write_file(File, <<"#{name => \"mine\", title => \"Mine\", layout => rows,\n"
                                 "  rows => [#{label => \"fib 10\", workload => \"fib\",\n"
                                 "             params => #{\"n\" => 10}, published => 1, unit => \"ms\"},\n"
                                 "           #{label => \"fib 12\", workload => fib,\n"
                                 "             params => #{n => \"12\"}}]}.\n">>),
    {ok, P} = beamlab_suite_preset:find(File),
    {ok, Plan, Rows} = beamlab_suite_preset:plan(P, quick, none, #{}),
    ?assertEqual([10, 12], [N || {_, [{_, #{n := N}}]} <- Plan]),
    ?assertEqual([<<"fib[n=10]">>, <<"fib[n=12]">>], [B || #{benchmark := B} <- Rows]),
    ok = file:write_file(File, <<"#{name => \"bad\", rows => []}.\n">>),
    ?assertMatch({error, {bad_preset, <<"bad">>, _}}, beamlab_suite_preset:find(File)),
    ok = file:write_file(File, <<"#{name => \"twice\", rows => [#{label => a, workload => fib, params => #{n => 3}},"
                                 " #{label => b, workload => fib, params => #{n => 3}}]}.\n">>),
    {ok, P2} = beamlab_suite_preset:find(File),
    ?assertMatch({error, {same_point_twice, <<"fib[n=3]">>}},
                 beamlab_suite_preset:plan(P2, quick, none, #{})),
    ok = file:write_file(File, <<"#{name => \"sweep\", rows => [#{label => a, workload => ring, params => #{}}]}.\n">>),
    {ok, P3} = beamlab_suite_preset:find(File),
    ?assertMatch({error, {row_sweeps, <<"a">>}}, beamlab_suite_preset:plan(P3, quick, none, #{})),
    ?assertMatch({error, {unknown_preset, <<"nope">>}}, beamlab_suite_preset:find("nope")),
    file:delete(File).

%% The preset table: published beside ours, and the ratio.
preset_render_test() ->
    {ok, P} = beamlab_suite_preset:find("termite"),
    {ok, [_, _ | _], Rows} = beamlab_suite_preset:plan(P, quick, none, #{}),
    [Fib, Spawn | _] = Rows,
    Doc0 = beamlab_result:new(suite, #{command => [], started_at => <<"2026-01-01T00:00:00Z">>}),
    Bs = [beamlab_result:benchmark(maps:get(benchmark, Fib), [292.5, 292.5],
                                   #{metric => <<"time">>, unit => <<"ms">>, group => <<"fib">>}),
          beamlab_result:benchmark(maps:get(benchmark, Spawn), [3.46],
                                   #{metric => <<"per_process">>, unit => <<"us">>, group => <<"spawn">>})],
    Doc = beamlab_result:set(extra, #{preset => P#{rows => Rows}}, beamlab_result:add_benchmarks(Doc0, Bs)),
    Text = lists:flatten(io_lib:format("~ts", [beamlab_render_suite_preset:table(Doc)])),
    ?assertMatch({match, _}, re:run(Text, "^fib\\(34\\) +585 +292\\.5 +ms +0\\.500$", [multiline])),
    ?assertMatch({match, _}, re:run(Text, "^spawn +6\\.920 +3\\.460 +us +0\\.500$", [multiline])),
    ?assertMatch({match, _}, re:run(Text, "^send +0\\.2000 +- +us +-$", [multiline])).
