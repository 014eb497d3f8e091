-module(beamlab_render_bench_tests).
%% The erlperf-style text table of `beamlab run'.
-include_lib("eunit/include/eunit.hrl").

header(Mode) ->
    D = beamlab_result:new(bench, #{command => [], started_at => <<"2026-01-01T00:00:00Z">>,
                                    params => #{mode => Mode}}),
    Doc = beamlab_result:add_benchmarks(D, [beamlab_result:benchmark(<<"ok.">>, [100, 110, 120],
                                                                     #{unit => iterations, params => #{concurrency => 1}})]),
    [Header | _] = string:split(unicode:characters_to_list(beamlab_render_bench:render(Doc, #{unicode => false, report => extended})), "\n"),
    string:trim(Header).

%% The extended table's average says what a sample holds: iterations
%% counted in a fixed time, or the time of a fixed number of them.
average_unit_test() ->
    ?assertMatch({match, _}, re:run(header(<<"continuous">>), "^Code +\\|\\| +Samples +Avg iter/sample +StdDev +Median")),
    ?assertMatch({match, _}, re:run(header(<<"timed">>), "^Code +\\|\\| +Samples +Avg time/sample +StdDev +Median")).

%% A bench document whose jobs say no concurrency (a project's bench
%% modules, a file written by another tool) and whose baseline is not
%% one of its jobs: rendered with what it has, "-" where it says
%% nothing (#31: conc/1 raised a function_clause).
no_concurrency_test() ->
    D = beamlab_result:new(bench, #{command => [], started_at => <<"2026-01-01T00:00:00Z">>,
                                    params => #{baseline => 7}}),
    Doc = beamlab_result:add_benchmarks(D, [beamlab_result:benchmark(N, S, #{unit => iterations})
                                            || {N, S} <- [{<<"a">>, [100, 110]}, {<<"b">>, lists:seq(1, 12)}]]),
    [begin
         Text = unicode:characters_to_list(beamlab_render_bench:render(Doc, #{unicode => false, report => R})),
         [Header, Row | _] = string:split(Text, "\n", all),
         ?assertMatch({match, _}, re:run(Header, "^Code +\\|\\|")),
         ?assertMatch({match, _}, re:run(Row, "^a +- "))
     end || R <- [basic, extended]].

%% #35: one sample has no spread: the extended table's StdDev is "-",
%% never 0% (and its interval "no interval"), as the CSV's sd is empty.
one_sample_has_no_spread_test() ->
    D = beamlab_result:new(bench, #{command => [], started_at => <<"2026-01-01T00:00:00Z">>,
                                    params => #{mode => <<"continuous">>}}),
    Row = fun(Samples) ->
                  Doc = beamlab_result:add_benchmarks(D, [beamlab_result:benchmark(<<"ok.">>, Samples,
                                                                                   #{unit => iterations,
                                                                                     params => #{concurrency => 1}})]),
                  Text = unicode:characters_to_list(beamlab_render_bench:render(Doc, #{unicode => false,
                                                                                      report => extended})),
                  [_, R | _] = string:split(Text, "\n", all),
                  {R, beamlab_render_csv:render(Doc)}
          end,
    {One, Csv} = Row([100]),
    ?assertMatch({match, _}, re:run(One, "^ok\\. +1 +1 +100 +- +100 .* no interval ")),
    {ok, [H, C]} = beamlab_csv_decoder:decode(Csv),
    #{<<"sd">> := <<>>, <<"cv">> := <<>>, <<"n">> := <<"1">>} = maps:from_list(lists:zip(H, C)),
    {Two, _} = Row([100, 110]),
    ?assertMatch({match, _}, re:run(Two, "^ok\\. +1 +2 +105 +[0-9.]+% ")).
