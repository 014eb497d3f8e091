-module(beamlab_render_history_tests).
%% A history in every format of `beamlab compare', and in the report's model.
-include_lib("eunit/include/eunit.hrl").

run(Label, Started, Ns) ->
    rand:seed(exsss, {erlang:phash2(Label), 2, 3}),
    B = beamlab_result:benchmark(<<"b">>, [Ns * (1 + 0.01 * rand:normal()) || _ <- lists:seq(1, 20)],
                                 #{unit => ns, better => lower, metric => time}),
    D = beamlab_result:add_benchmarks(beamlab_result:new(suite, #{command => [], started_at => Started}), [B]),
    {Label, beamlab_result:set(env, #{git => #{commit => <<"0123456789abcdef", Label/binary>>,
                                               commit_time => Started, dirty => Label =:= <<"c">>}}, D)}.

runs() ->
    [run(<<"c">>, <<"2026-01-03T00:00:00Z">>, 100), run(<<"a">>, <<"2026-01-01T00:00:00Z">>, 100),
     run(<<"b">>, <<"2026-01-02T00:00:00Z">>, 150)].

history() ->
    {ok, H} = beamlab_result_history:history(runs(), #{}),
    H.

text_test() ->
    T = iolist_to_binary(beamlab_render_history:render(history(), text, #{})),
    ?assertMatch({match, _}, re:run(T, <<"history of 3 runs, oldest first \\(ordered by commit\\)">>)),
    %% Short commits, the dirty one said, the runs in order.
    ?assertMatch({match, _}, re:run(T, <<"1 +a +0123456 .*\\n +2 +b +0123456 .*\\n +3 +c +0123456 +dirty">>)),
    ?assertMatch({match, _}, re:run(T, <<"b \\(ns, lower is better\\)">>)),
    ?assertMatch({match, _}, re:run(T, <<"2 +b +150 ns .*\\+(49|50)\\.[0-9]% .* SLOWER">>)),
    ?assertMatch({match, _}, re:run(T, <<"significant changes \\(2\\):\\n  b: a -> b \\+(49|50)\\.[0-9]% SLOWER\\n  b: b -> c -33\\.[0-9]% faster">>)).

markdown_csv_json_test() ->
    H = history(),
    Md = iolist_to_binary(beamlab_render_history:render(H, markdown, #{})),
    ?assertMatch({match, _}, re:run(Md, <<"\\*\\*b \\(ns, lower is better\\)\\*\\*\\n\\n\\| # \\| run \\| mean \\|">>)),
    {ok, [Header | Rows]} = beamlab_csv_decoder:decode(beamlab_render_history:render(H, csv, #{})),
    ?assertEqual(<<"verdict">>, lists:last(Header)),
    %% #35: intervals as their low and high bounds (in the unit; the
    %% change's as fractions), as compare's CSV gives them: no `±%' column.
    [?assert(lists:member(C, Header)) || C <- [<<"ci_low">>, <<"ci_high">>, <<"change_ci_low">>, <<"change_ci_high">>]],
    ?assertEqual([], [Hd || Hd <- Header, re:run(Hd, <<"±|%|\\+-"/utf8>>, [unicode]) =/= nomatch]),
    %% (the decoder gives every field as text)
    Num = fun(B) -> try binary_to_float(B) catch _:_ -> try binary_to_integer(B) catch _:_ -> B end end end,
    Col = fun(Name, Row) -> Num(lists:nth(length(lists:takewhile(fun(Hd) -> Hd =/= Name end, Header)) + 1, Row)) end,
    [?assert(Col(<<"ci_low">>, R) =< Col(<<"mean">>, R) andalso Col(<<"mean">>, R) =< Col(<<"ci_high">>, R)
             andalso Col(<<"ci_low">>, R) > 0)
     || R <- Rows, is_number(Col(<<"ci_low">>, R))],
    ?assertNotEqual([], [R || R <- Rows, is_number(Col(<<"ci_low">>, R))]),
    ?assertEqual([<<>>, <<"slower">>, <<"faster">>], [lists:last(R) || R <- Rows]),
    {ok, #{<<"schema">> := <<"beamlab.history">>, <<"order">> := <<"commit">>,
           <<"trends">> := [#{<<"changes">> := [_, _]}]}} =
        beamlab_json:decode(beamlab_render_history:render(H, json, #{})).

%% The report draws the runs in the history's order, with the trend
%% instead of the comparison against the first run.
report_model_test() ->
    Runs = runs(),
    #{runs := Ms, history := #{order := commit, trends := [#{name := <<"b">>, points := Ps, changes := Cs}]},
      compare := null} = beamlab_report_html:model(Runs, #{history => history()}),
    ?assertEqual([<<"a">>, <<"b">>, <<"c">>], [L || #{label := L} <- Ms]),
    ?assertEqual([0, 1, 2], [I || [I | _] <- Ps]),
    ?assertEqual([slower, faster], [V || #{verdict := V} <- Cs]),
    #{compare := #{}, history := null} = beamlab_report_html:model(Runs).

%% #35: single runs: the newest run alone outside the history's spread is
%% `unconfirmed' (run again) in every format; with the run before it also
%% outside, the verdict names both runs it rests on.
unconfirmed_test() ->
    Single = fun(I, Ns) -> single_run(I, {I, 3, 5}, Ns, 0.02, 10) end,
    Same = [Single(I, 100) || I <- lists:seq(1, 6)],
    {ok, H1} = beamlab_result_history:history(Same ++ [Single(7, 150)], #{}),
    T1 = iolist_to_binary(beamlab_render_history:render(H1, text, #{})),
    ?assertMatch({match, _}, re:run(T1, <<"7 +7 .*\\+[0-9.]+% vs #1-#5 with #6 .* unconfirmed: run again">>)),
    ?assertMatch({match, _}, re:run(T1, <<"unconfirmed \\(1\\): one run outside the history's range, not the run "
                                         "before it; run again: a verdict needs two consecutive runs outside it\\n  b: 7 \\+">>)),
    ?assertMatch({match, _}, re:run(T1, <<"no significant change between consecutive runs">>)),
    Md = iolist_to_binary(beamlab_render_history:render(H1, markdown, #{})),
    ?assertMatch({match, _}, re:run(Md, <<"\\| unconfirmed: run again \\|">>)),
    {ok, [_ | Rows]} = beamlab_csv_decoder:decode(beamlab_render_history:render(H1, csv, #{})),
    ?assertEqual(<<"unconfirmed">>, lists:last(lists:last(Rows))),
    {ok, #{<<"trends">> := [#{<<"changes">> := Cs}]}} = beamlab_json:decode(beamlab_render_history:render(H1, json, #{})),
    ?assertMatch(#{<<"verdict">> := <<"unconfirmed">>, <<"confirmed_by">> := 6, <<"basis">> := <<"history">>},
                 lists:last(Cs)),
    %% #35: the newest run on an overloaded machine: inconclusive, and
    %% the summary points to the measure that keeps a verdict under load
    %% (none of it on a quiet machine, above)
    ?assertEqual(nomatch, re:run(T1, <<"--metric cpu">>)),
    {L7, D7} = Single(7, 150),
    Loaded = beamlab_result:add_findings(D7, [beamlab_result:finding(machine_overloaded, warning, <<"t">>,
                                                                     <<"e">>, <<"a">>, #{})]),
    {ok, HL} = beamlab_result_history:history(Same ++ [{L7, Loaded}], #{}),
    TL = iolist_to_binary(beamlab_render_history:render(HL, text, #{})),
    ?assertMatch({match, _}, re:run(TL, <<"7 +7 .* inconclusive: overloaded">>)),
    ?assertMatch({match, _}, re:run(TL, <<"inconclusive \\(1\\): the machine was overloaded and the wall-clock "
                                         "change is not far outside the noise; CPU time keeps its verdict under "
                                         "load: measure with --metric cpu\\n  b: 7 \\+">>)),
    {ok, H2} = beamlab_result_history:history(Same ++ [Single(7, 150), Single(8, 150)], #{}),
    T2 = iolist_to_binary(beamlab_render_history:render(H2, text, #{})),
    ?assertMatch({match, _}, re:run(T2, <<"8 +8 .*\\+[0-9.]+% vs #1-#6 with #7 .* SLOWER">>)),
    ?assertMatch({match, _}, re:run(T2, <<"significant changes \\(1\\):\\n  b: 1 -> 8 \\+">>)).

%% #35: a `~' between runs with repetitions says what it could have seen,
%% in every format of a history (and the report's model), as compare does.
detectable_test() ->
    {ok, H} = beamlab_result_history:history([run(<<"a">>, <<"2026-01-01T00:00:00Z">>, 100),
                                              run(<<"b">>, <<"2026-01-02T00:00:00Z">>, 100)], #{}),
    #{trends := [#{changes := [#{verdict := no_difference, detectable := D}]}]} = H,
    ?assert(D > 0 andalso D < 1),
    Both = list_to_binary(beamlab_format_units:detectable(D)),
    [?assertNotEqual(nomatch, binary:match(iolist_to_binary(beamlab_render_history:render(H, F, #{})),
                                           <<"caught 80% of the time only beyond:\n  b: b ", Both/binary>>))
     || F <- [text, markdown]],
    {ok, [Header | Rows]} = beamlab_csv_decoder:decode(beamlab_render_history:render(H, csv, #{})),
    ?assertEqual([<<"detectable">>, <<"verdict">>], lists:nthtail(length(Header) - 2, Header)),
    [_, Last] = Rows,
    [Csv, <<"no_difference">>] = lists:nthtail(length(Last) - 2, Last),
    ?assert(abs(binary_to_float(Csv) - D) < 1.0e-9),
    #{history := #{trends := [#{changes := [#{detectable := M}]}]}} =
        beamlab_report_html:model([run(<<"a">>, <<"2026-01-01T00:00:00Z">>, 100),
                                   run(<<"b">>, <<"2026-01-02T00:00:00Z">>, 100)], #{history => H}),
    ?assert(abs(M - D) < 1.0e-6),
    %% a verdict carries none
    ?assertEqual([], [C || #{changes := Cs} <- maps:get(trends, history()), C <- Cs, is_map_key(detectable, C)]).

%% #35: a history of single runs: a `~' (the two newest runs inside the
%% spread of the runs before them) says what it could have seen
%% (confirm_runs/4's `detectable') in text, Markdown, CSV and the report.
single_runs_detectable_test() ->
    Single = fun(I) -> single_run(I, {I, 7, 9}, 100, 0.03, 5) end,
    Runs = [Single(I) || I <- lists:seq(1, 8)],
    {ok, H} = beamlab_result_history:history(Runs, #{}),
    #{trends := [#{changes := Cs}]} = H,
    #{verdict := no_difference, basis := history, detectable := D} = lists:last(Cs),
    ?assert(D > 0.03 andalso D < 1),
    Both = list_to_binary(beamlab_format_units:detectable(D)),
    [?assertNotEqual(nomatch, binary:match(iolist_to_binary(beamlab_render_history:render(H, F, #{})),
                                           <<"  b: 8 ", Both/binary>>))
     || F <- [text, markdown]],
    {ok, [_ | Rows]} = beamlab_csv_decoder:decode(beamlab_render_history:render(H, csv, #{})),
    [Csv, <<"no_difference">>] = lists:nthtail(length(lists:last(Rows)) - 2, lists:last(Rows)),
    ?assert(abs(binary_to_float(Csv) - D) < 1.0e-9),
    #{history := #{trends := [#{changes := MCs}]}} = beamlab_report_html:model(Runs, #{history => H}),
    #{detectable := M} = lists:last(MCs),
    ?assert(abs(M - D) < 1.0e-6).

%% Run I of a history of single runs: a level drawn around Ns (relative
%% sd RunSd, seeded by Seed) and Samples samples tightly around it.
single_run(I, Seed, Ns, RunSd, Samples) ->
    rand:seed(exsss, Seed),
    Level = Ns * (1 + RunSd * rand:normal()),
    B = beamlab_result:benchmark(<<"b">>, [Level * (1 + 0.001 * rand:normal()) || _ <- lists:seq(1, Samples)],
                                 #{unit => ns, better => lower, metric => time}),
    Started = iolist_to_binary(io_lib:format("2026-01-~2..0bT00:00:00Z", [I])),
    {integer_to_binary(I), beamlab_result:add_benchmarks(
                             beamlab_result:new(bench, #{command => [], started_at => Started}), [B])}.
