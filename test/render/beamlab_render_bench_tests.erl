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
