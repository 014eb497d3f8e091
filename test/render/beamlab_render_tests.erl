-module(beamlab_render_tests).
-include_lib("eunit/include/eunit.hrl").
-export([doc/0]).  % for trying the views in a shell

doc() ->
    R0 = beamlab_result:new(bench, #{command => ["beamlab", "ok.", "-s", "12"], params => #{},
                                     started_at => <<"2026-11-22T03:00:00Z">>}),
    B1 = beamlab_result:benchmark("ok.", [50.0 + I rem 7 || I <- lists:seq(1, 12)],
                                  #{unit => ns, better => lower, metric => time}),
    B2 = beamlab_result:benchmark("say \"hi\", world", [1000, 1100, 1200],
                                  #{unit => <<"ops/s">>, better => higher,
                                    comparison => comparison(-0.125, {-0.2, -0.05}, 0.01, slower)}),
    R1 = beamlab_result:add_benchmarks(R0, [B1, B2]),
    R2 = beamlab_result:set(env, #{otp => #{release => <<"25">>, erts => <<"13.2">>, emu_flavor => <<"jit">>},
                                   schedulers => #{online => 2, total => 2, bind_type => <<"unbound">>},
                                   cpu => #{model => <<"Test CPU">>}, os => #{name => <<"linux">>}}, R1),
    beamlab_result:finish(R2, #{finished_at => <<"2026-11-22T03:00:01Z">>, partial => false}).

comparison(Change, Ci, P, Verdict) ->
    #{change => Change, ci => Ci, p_value => P, verdict => Verdict, ci_method => fieller,
      p_value_welch => P, p_value_mann_whitney => P, mann_whitney_method => exact,
      test => mann_whitney, n_base => 3, n_new => 3, mean_base => 1.0, mean_new => 1.0,
      confidence => 0.95}.

csv_columns_and_quoting_test() ->
    Csv = beamlab_render_csv:render(doc()),
    {ok, [Header, Row1, Row2]} = beamlab_csv_decoder:decode(Csv),
    ?assertEqual(beamlab_render_csv:header(), Header),
    Col = fun(Row, Name) ->
                  maps:get(Name, maps:from_list(lists:zip(Header, Row)))
          end,
    ?assertEqual(<<"ok.">>, Col(Row1, <<"name">>)),
    ?assertEqual(<<"12">>, Col(Row1, <<"n">>)),
    ?assertEqual(<<"ns">>, Col(Row1, <<"unit">>)),
    ?assertEqual(<<>>, Col(Row1, <<"verdict">>)),
    ?assertEqual(<<"say \"hi\", world">>, Col(Row2, <<"name">>)),
    ?assertEqual(<<"slower">>, Col(Row2, <<"verdict">>)),
    ?assertEqual(-0.125, binary_to_float(Col(Row2, <<"change">>))),
    ?assertEqual(1100.0, binary_to_float(Col(Row2, <<"mean">>))),
    ?assertEqual(<<"false">>, Col(Row2, <<"partial">>)),
    ?assertNotEqual(nomatch, binary:match(Csv, <<"\"say \"\"hi\"\", world\"">>)).

markdown_test() ->
    Md = beamlab_render_markdown:render((doc())#{partial => true}),
    [Title, <<>>, Env, <<>>, Head, Sep, Row1, Row2 | _] = binary:split(Md, <<"\n">>, [global]),
    ?assertNotEqual(nomatch, binary:match(Title, <<"partial run">>)),
    ?assertEqual(<<"OTP 25 · erts 13.2 · jit · 2 schedulers · bind unbound · Test CPU · linux"/utf8>>, Env),
    ?assertEqual(<<"| Benchmark | n | Mean | 95% CI | Median | P99 | Change | Verdict |">>, Head),
    ?assertEqual(<<"| --- | --: | --: | --: | --: | --: | --: | --- |">>, Sep),
    ?assertMatch(<<"| ok. | 12 | ", _/binary>>, Row1),
    ?assertMatch({match, _}, re:run(Row2, <<"\\| -12.5% \\| slower \\|$">>)).

text_has_sparkline_and_histogram_test() ->
    Text = unicode:characters_to_binary(beamlab_render_text:render(doc(), #{unicode => false})),
    ?assertNotEqual(nomatch, binary:match(Text, <<"Distribution of ok. (12 samples):">>)),
    %% ASCII mode: no byte above 127 except the ± the table always uses.
    Plain = binary:replace(Text, <<"±"/utf8>>, <<>>, [global]),
    ?assert(lists:all(fun(C) -> C < 128 end, binary_to_list(Plain))),
    ?assertMatch({match, _}, re:run(Text, <<"^ok\\. .* [_.:=+*#-]{12}$">>, [multiline])),
    Uni = unicode:characters_to_binary(beamlab_render_text:render(doc(), #{unicode => true})),
    ?assertNotEqual(nomatch, binary:match(Uni, <<16#2588/utf8>>)).

bound_samples_test() ->
    R = beamlab_result:add_benchmarks(beamlab_result:new(bench, #{command => [], started_at => <<>>}),
                                      [beamlab_result:benchmark("big", lists:seq(1, 500), #{}),
                                       beamlab_result:benchmark("small", [1, 2, 3], #{})]),
    #{benchmarks := [Big, Small]} = beamlab_result:bound_samples(R, 100),
    ?assertEqual(100, length(maps:get(samples, Big))),
    ?assertEqual(#{count => 500, kept => 100, method => reservoir}, maps:get(sample_info, Big)),
    ?assert(lists:all(fun(X) -> X >= 1 andalso X =< 500 end, maps:get(samples, Big))),
    %% Statistics remain those of all 500 samples.
    ?assertEqual(250.5, maps:get(mean, maps:get(stats, Big))),
    ?assertEqual([1, 2, 3], maps:get(samples, Small)),
    %% Deterministic: saving twice writes the same file.
    ?assertEqual(beamlab_result:bound_samples(R, 100), beamlab_result:bound_samples(R, 100)).

env_summary_without_env_test() ->
    ?assertEqual(<<"env: not recorded">>, beamlab_result_env:summary(#{})).
