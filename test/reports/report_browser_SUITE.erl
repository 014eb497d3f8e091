-module(report_browser_SUITE).
%% Renders generated HTML reports in headless Chromium and checks, from the
%% dumped DOM, that every chart was drawn and no script error occurred;
%% then each chart kind on real runs made through the escript (group
%% chart_kinds): a parameter sweep's curve, scaling with the Universal
%% Scalability Law, the latency spectrum, time series, a matrix, sample
%% distributions and a history's trend. (The differential flame graph is
%% in profile_SUITE: it needs perf.)
-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-export([all/0, groups/0, init_per_suite/1, end_per_suite/1, init_per_group/2, end_per_group/2]).
-export([every_kind_renders/1, single_run_renders/1, long_series_are_downsampled/1,
         script_errors_are_caught/1, screenshot_is_taken/1, cli_report_renders/1,
         hostile_labels_render/1]).
-export([sweep_chart/1, sweep_units/1, suite_titles/1, identical_runs_visible/1, identical_series_visible/1, ordinal_sweep_chart/1, categorical_sweep_chart/1, scaling_chart/1, latency_chart/1, timeseries_chart/1,
         matrix_chart/1, matrix_long_labels/1, matrix_suite_titles/1, matrix_sweep_title/1, distribution_chart/1, trend_chart/1, check_trend_chart/1, profile_chart/1,
         amqp_run_charts/1, cpu_metric_charts/1, cpu_matrix_interrupted/1, run_clock_chart/1, shared_margin_chart/1,
         matrix_broker_clock/1]).

all() ->
    [{group, fixtures}, {group, chart_kinds}].

groups() ->
    [{fixtures, [], [every_kind_renders, single_run_renders, long_series_are_downsampled,
                     script_errors_are_caught, screenshot_is_taken, cli_report_renders,
                     hostile_labels_render]},
     {chart_kinds, [], [sweep_chart, sweep_units, suite_titles, identical_runs_visible, identical_series_visible, ordinal_sweep_chart, categorical_sweep_chart, scaling_chart, latency_chart, timeseries_chart,
                        matrix_chart, matrix_long_labels, matrix_suite_titles, matrix_sweep_title, distribution_chart, trend_chart, check_trend_chart, profile_chart,
                        amqp_run_charts, cpu_metric_charts, cpu_matrix_interrupted, run_clock_chart, shared_margin_chart,
                        matrix_broker_clock]}].

init_per_suite(Config) ->
    case beamlab_test_util:chromium() of
        false ->
            {skip, "chromium is not installed (Debian package 'chromium'); "
                   "CI installs it, the browser test needs it"};
        Exe ->
            [{chromium, Exe} | Config]
    end.

end_per_suite(_Config) ->
    ok.

init_per_group(chart_kinds, Config) ->
    _ = beamlab_test_util:escript(),
    Config;
init_per_group(_, Config) ->
    Config.

end_per_group(_, _Config) ->
    ok.

%% Every kind of run in one report, with a partial run and long telemetry.
every_kind_renders(Config) ->
    F = fun beamlab_results_fixtures:result/2,
    Runs = [{<<"bench">>, F(<<"bench">>, #{seconds => 3000})},
            {<<"suite">>, F(<<"suite">>, #{partial => true, factor => 1.1})},
            {<<"matrix">>, F(<<"matrix">>, #{})},
            {<<"amqp">>, F(<<"amqp">>, #{seconds => 120})}],
    {Body, Dom} = render(Config, "all.html", Runs),
    ?assertEqual(<<>>, beamlab_test_util:dom_attr(Body, <<"data-errors">>)),
    Charts = binary_to_integer(beamlab_test_util:dom_attr(Body, <<"data-charts-rendered">>)),
    Svgs = count(Dom, <<"<svg class=\"chart\"">>),
    Canvases = count(Dom, <<"class=\"chart heatmap\"">>),
    ct:log("charts ~b, svg ~b, canvas ~b", [Charts, Svgs, Canvases]),
    ?assertEqual(Charts, Svgs + Canvases),
    %% One heatmap per run; 10 benchmarks (ok., 3 suite, 4 matrix, 2 amqp),
    %% each with its CI: the 6 alone as error bars, the matrix's 4 (a sweep
    %% over schedulers) as the band of the scaling chart's means.
    ?assertEqual(4, Canvases),
    ?assertEqual(6, count(Dom, <<"class=\"errorbar\"">>)),
    ?assertMatch({match, _}, re:run(Dom, <<"data-kind=\"scaling\".*?class=\"ci-band\"">>, [dotall])),
    [?assertNotEqual(nomatch, binary:match(Dom, <<"<section id=\"", Id/binary, "\"">>), Id)
     || Id <- [<<"runs">>, <<"compare">>, <<"results">>, <<"distributions">>, <<"timeline">>,
               <<"latency">>, <<"schedulers">>, <<"scaling">>, <<"env">>, <<"findings">>]],
    ?assertNotEqual(nomatch, binary:match(Dom, <<"partial</span>">>)),
    %% Names with quotes and markup arrive as text, never as markup.
    ?assertNotEqual(nomatch, binary:match(Dom, <<"send_\"quoted\", &lt;tag&gt;">>)),
    %% (The embedded JSON holds the raw name; that is data, not markup.)
    Markup = re:replace(Dom, <<"<script type=\"application/json\".*?</script>">>, <<>>, [dotall, {return, binary}]),
    ?assertEqual(nomatch, binary:match(Markup, <<"<tag>">>)),
    ?assertNotEqual(nomatch, binary:match(Dom, <<"cv 12% on &lt;b&gt;queue&lt;/b&gt;">>)),
    ok.

single_run_renders(Config) ->
    %% With a failed benchmark (no samples, no stats) beside a measured one.
    R0 = beamlab_results_fixtures:result(<<"bench">>),
    Failed = beamlab_result:benchmark(<<"crashed">>, [], #{group => <<"bench">>, metric => <<"time">>,
                                                            unit => <<"ns">>, better => lower,
                                                            extra => #{error => <<"badarith">>}}),
    R = R0#{benchmarks := maps:get(benchmarks, R0) ++ [Failed]},
    {Body, Dom} = render(Config, "one.html", [{<<"only">>, R}]),
    ?assertEqual(<<>>, beamlab_test_util:dom_attr(Body, <<"data-errors">>)),
    ?assert(binary_to_integer(beamlab_test_util:dom_attr(Body, <<"data-charts-rendered">>)) >= 3),
    %% One run: nothing to compare against.
    ?assertEqual(nomatch, binary:match(Dom, <<"<section id=\"compare\"">>)).

%% 20 000 telemetry points per series: each drawn path keeps at most four
%% points per pixel column of the 548-pixel plot.
long_series_are_downsampled(Config) ->
    R = beamlab_results_fixtures:result(<<"bench">>, #{seconds => 20000}),
    {Body, Dom} = render(Config, "long.html", [{<<"long">>, R}]),
    ?assertEqual(<<>>, beamlab_test_util:dom_attr(Body, <<"data-errors">>)),
    {match, Found} = re:run(Dom, <<"<path d=\"(M[^\"]*)\" fill=\"none\"">>,
                            [global, {capture, all_but_first, binary}]),
    Paths = [D || [D] <- Found],
    ?assert(length(Paths) >= 3),
    Points = [length(binary:split(D, <<"L">>, [global])) || D <- Paths],
    ct:log("points per drawn path: ~w", [Points]),
    ?assert(lists:max(Points) =< 4 * 548),
    ?assert(lists:max(Points) > 100).

%% The detection itself: a model the page cannot draw must show up in
%% data-errors (otherwise the checks above could never fail).
script_errors_are_caught(Config) ->
    {ok, Html} = beamlab_report_html:render([{<<"x">>, beamlab_results_fixtures:result(<<"bench">>)}]),
    [Before, After0] = binary:split(Html, <<"<script type=\"application/json\" id=\"beamlab-data\">">>),
    [_, After] = binary:split(After0, <<"</script>">>),
    Broken = <<Before/binary, "<script type=\"application/json\" id=\"beamlab-data\">",
               "{\"runs\": [{\"label\": \"x\", \"benchmarks\": 7}], \"env\": [], \"compare\": null}",
               "</script>", After/binary>>,
    Path = filename:join(?config(priv_dir, Config), "broken.html"),
    ok = file:write_file(Path, Broken),
    Body = beamlab_test_util:dom_body(dump_dom(Config, Path)),
    ?assertNotEqual(<<>>, beamlab_test_util:dom_attr(Body, <<"data-errors">>)).

screenshot_is_taken(Config) ->
    Runs = [{<<"base">>, beamlab_results_fixtures:result(<<"suite">>)},
            {<<"new">>, beamlab_results_fixtures:result(<<"suite">>, #{factor => 1.08})}],
    Html = filename:join(?config(priv_dir, Config), "shot.html"),
    ok = beamlab_report_html:write(Html, Runs),
    Png = filename:join(?config(priv_dir, Config), "shot.png"),
    {0, _} = chromium_run(Config, ["--hide-scrollbars", "--window-size=1280,2400",
                                   "--screenshot=" ++ Png, "file://" ++ Html]),
    {ok, <<137, "PNG", _/binary>> = Bin} = file:read_file(Png),
    ?assert(byte_size(Bin) > 20000).

%% The report command end to end through the escript, on saved files.
cli_report_renders(Config) ->
    Dir = ?config(priv_dir, Config),
    Files = [begin
                 P = filename:join(Dir, binary_to_list(K) ++ ".json"),
                 {ok, _} = beamlab_result:save(beamlab_results_fixtures:result(K, #{}), P),
                 P
             end || K <- [<<"bench">>, <<"suite">>, <<"matrix">>, <<"amqp">>]],
    Out = filename:join(Dir, "cli.html"),
    #{code := 0} = beamlab_test_util:cli(["report" | Files] ++ ["-o", Out]),
    Dom = dump_dom(Config, Out),
    Body = beamlab_test_util:dom_body(Dom),
    ?assertEqual(<<>>, beamlab_test_util:dom_attr(Body, <<"data-errors">>)),
    ?assert(binary_to_integer(beamlab_test_util:dom_attr(Body, <<"data-charts-rendered">>)) >= 20),
    %% Four runs side by side: the comparison table scrolls in its box.
    layout_ok(Dom).

%% Labels that could end or comment out the embedded data's <script>
%% (saved through the escript, rendered through it): every chart is still
%% drawn, no script error, and each label shows as text.
hostile_labels_render(Config) ->
    Dir = ?config(priv_dir, Config),
    Labels = ["<!--<script>", "</script><b>x</b>", "a\x{2028}b\x{2029}c", "&amp;<>"],
    Files = [begin
                 P = filename:join(Dir, "hostile-" ++ integer_to_list(I) ++ ".json"),
                 Lab = unicode:characters_to_binary(L),  % raw UTF-8 bytes on the command line
                 #{code := 0} = beamlab_test_util:cli(["ok.", "-d", "20", "-s", "3", "--label", Lab,
                                                       "--save", P]),
                 P
             end || {I, L} <- lists:zip(lists:seq(1, length(Labels)), Labels)],
    Out = filename:join(Dir, "hostile.html"),
    #{code := 0} = beamlab_test_util:cli(["report" | Files] ++ ["-o", Out]),
    {ok, Html} = file:read_file(Out),
    %% Only the page's own comment-free markup: no label text inside it raw.
    ?assertEqual(nomatch, binary:match(Html, <<"<!--">>)),
    %% As many scripts as a page of harmless runs has: no label opened one.
    {ok, Plain} = beamlab_report_html:render([{<<"x">>, beamlab_results_fixtures:result(<<"bench">>)}]),
    ?assertEqual(count(Plain, <<"<script">>), count(Html, <<"<script">>)),
    ?assertEqual(count(Plain, <<"</script>">>), count(Html, <<"</script>">>)),
    Dom = dump_dom(Config, Out),
    Body = beamlab_test_util:dom_body(Dom),
    ?assertEqual(<<>>, beamlab_test_util:dom_attr(Body, <<"data-errors">>)),
    ?assert(binary_to_integer(beamlab_test_util:dom_attr(Body, <<"data-charts-rendered">>)) >= 1),
    %% The scripts ran (the <noscript> fallback stays in the DOM as text).
    ?assertNotEqual(nomatch, binary:match(Dom, <<"&lt;!--&lt;script&gt;">>)).

%% Chart kinds on real runs ----------------------------------------------------

%% suite --param size=0,10,100,1000,10000 (issue #35's sweep): one curve
%% per payload over the size, on a log axis (four decades of positive
%% sizes), the 0 one decade below 10 past a marked break of the axis; every
%% point at its own place, apart from its neighbours; ticks at the decades
%% only; the interval as a band, not one bar per point.
sweep_chart(Config) ->
    Dom = report(Config, "sweep", [sweep_run(Config)]),
    [Fig] = figures(Dom, <<"sweep">>),
    ?assertNotEqual(nomatch, binary:match(Fig, <<"data-x-scale=\"log\"">>)),
    ?assertEqual([<<"payload=binary">>, <<"payload=list">>],
                 lists:sort(attrs(Fig, <<"path">>, <<"sweep-line">>, <<"data-series">>))),
    ?assertEqual(2, count(Fig, <<"class=\"ci-band\"">>)),
    %% Five points each, the axis labelled with the parameter and the metric.
    Lines = attrs(Fig, <<"path">>, <<"sweep-line">>, <<"d">>),
    ?assertEqual([5, 5], [length(binary:split(D, <<"L">>, [global])) || D <- Lines]),
    ?assertEqual([<<"size">>], texts(Fig, <<"label x-label">>)),
    ?assertMatch([<<"wall-clock time per round trip (", _/binary>>], texts(Fig, <<"label y-label">>)),
    ?assertEqual([<<"0">>, <<"10">>, <<"100">>, <<"1000">>, <<"10k">>], xticks(Fig)),
    %% #35: 0, 10 and 100 are not piled up at the origin: the five sizes
    %% sit at five places at least 20 pixels apart, in order.
    Xs = lists:usort([binary_to_float(X) || D <- Lines, [X, _] <- re_all(D, <<"[ML]([0-9.]+),([0-9.]+)">>)]),
    ?assertEqual(5, length(Xs)),
    ?assert(lists:all(fun({A, B}) -> B - A >= 20 end, lists:zip(lists:droplast(Xs), tl(Xs)))),
    %% The 0 is not a decade: the axis is broken between it and 10.
    ?assertEqual(1, count(Fig, <<"class=\"axis-break\" data-axis=\"x\"">>)),
    ?assertMatch({match, _}, re:run(Dom, <<"a 0 sits one decade below, past a marked break">>)),
    %% The title names the workload and the measure, the subtitle the band's method.
    [Title] = captions(Fig),
    ?assertMatch({match, _}, re:run(Title, <<"^ping_pong: wall-clock time per round trip \\((ns|us|ms)\\) against size$">>)),
    ?assertMatch({match, _}, re:run(Fig, <<"band: [A-Za-z]">>)),
    ?assertEqual([], figures(Dom, <<"results">>)).

%% #35: one unit per chart. fib's document is in ms; fib(18..22) takes
%% microseconds, drawn in us (or ns): the title, the subtitle, the axis and
%% every point's tooltip all name the unit the axis shows. The title names
%% the workload and its measure, as the document says it (`measure'): a
%% repetition's wall-clock time (it was `fib: time (us)').
sweep_units(Config) ->
    F = run(Config, "fib-sweep", ["suite", "fib", "--param", "fib.n=18,20,22", "-n", "3"]),
    {ok, #{benchmarks := [#{unit := <<"ms">>, measure := <<"wall-clock time per repetition">>} | _]}} = beamlab_result:load(F),
    Dom = report(Config, "fib-sweep", [F]),
    [Fig] = figures(Dom, <<"sweep">>),
    [Title] = captions(Fig),
    {match, [Unit]} = re:run(Title, <<"^fib: wall-clock time per repetition \\((ns|us)\\) against n$">>,
                             [{capture, all_but_first, binary}]),
    ?assertEqual([<<"wall-clock time per repetition (", Unit/binary, ")">>], texts(Fig, <<"label y-label">>)),
    [Sub] = [S || [S] <- re_all(Fig, <<"<div class=\"muted\">([^<]*)</div>">>)],
    ?assertMatch({match, _}, re:run(Sub, <<"^", Unit/binary, ", lower is better">>)),
    ?assertEqual(nomatch, binary:match(Sub, <<"ms">>)),
    Tips = [T || [T] <- re_all(Fig, <<"<title>wall-clock time per repetition: (n [^<]*)</title>">>)],
    ?assertEqual(3, length(Tips)),
    [?assertMatch({match, _}, re:run(T, <<"^n [0-9]+, [0-9.]+ ", Unit/binary, "$">>)) || T <- Tips].

%% #35: a suite's own charts (no sweep) name the workload and its measure:
%% `fib: wall-clock time per repetition (us)', not `fib (us)'; the axis
%% names the measure too.
suite_titles(Config) ->
    F = run(Config, "fib", ["suite", "fib", "-n", "3"]),
    Dom = report(Config, "fib", [F]),
    Cards = figures(Dom, <<"results">>) ++ figures(Dom, <<"points">>),
    ?assertEqual(2, length(Cards)),
    [begin
         [Title] = captions(C),
         {match, [U]} = re:run(Title, <<"^fib: wall-clock time per repetition \\((ns|us|ms)\\)$">>,
                               [{capture, all_but_first, binary}]),
         ?assertEqual([<<"wall-clock time per repetition (", U/binary, ")">>], texts(C, <<"label x-label">>))
     end || C <- Cards].

%% #35: a report of the same run twice (two names, identical numbers):
%% the second run's lines lie exactly on the first's, yet both show.
%% Distinct dash patterns and marker shapes, the first drawn wider under
%% the second, and the legend says which overlaps which. Checked on the
%% pixels: a screenshot of the chart alone holds every series' colour.
identical_runs_visible(Config) ->
    F = sweep_run(Config),
    Copy = filename:join(?config(priv_dir, Config), "again.json"),
    {ok, _} = file:copy(F, Copy),
    Dom = report(Config, "identical", [F, Copy]),
    Png = screenshot(Config, "identical", filename:join(?config(priv_dir, Config), "identical.html"), <<"figure[data-kind=sweep] svg.chart">>),
    Colours = [{16#25, 16#63, 16#eb}, {16#dc, 16#26, 16#26}, {16#16, 16#a3, 16#4a}, {16#93, 16#33, 16#ea}],
    Counts = [colour_pixels(Png, C) || C <- Colours],
    ct:log("pixels of each series' colour: ~w", [Counts]),
    [?assert(N >= 30) || N <- Counts],
    [Fig] = figures(Dom, <<"sweep">>),
    Series = attrs(Fig, <<"path">>, <<"sweep-line">>, <<"data-series">>),
    ?assertEqual(4, length(Series)),
    %% Four series, four dash patterns (the first solid), four marker shapes.
    Dashes = dashes(Fig, <<"sweep-line">>),
    ?assertEqual(4, length(lists:usort(Dashes))),
    %% (in the chart; the legend's swatches show each line and marker too)
    [Chart] = [C || [C] <- re_all(Fig, <<"(<svg class=\"chart\".*?</svg>)">>)],
    ?assertEqual(5, count(Chart, <<"<circle">>)),
    ?assertEqual(15, count(Chart, <<"class=\"marker\"">>)),
    ?assertEqual([<<"again: payload=binary (overlaps sweep: payload=binary)">>,
                  <<"again: payload=list (overlaps sweep: payload=list)">>],
                 lists:sort([T || [T] <- re_all(Fig, <<"</svg>(again[^<]*)</span>">>)])).

%% #35: the same message_load run twice: its latency spectra and its
%% per-second series lie on one another too; each later line has its own
%% dash pattern and the legend says which one it overlaps.
identical_series_visible(Config) ->
    F = latency_run(Config),
    Copy = filename:join(?config(priv_dir, Config), "copy.json"),
    {ok, _} = file:copy(F, Copy),
    Dom = report(Config, "identical-latency", [F, Copy]),
    [Spectrum] = figures(Dom, <<"latency">>),
    ?assertEqual([<<"copy (overlaps latency)">>], [T || [T] <- re_all(Spectrum, <<"</svg>(copy[^<]*)</span>">>)]),
    ?assertEqual(2, length(lists:usort([P || [P] <- re_all(Spectrum, <<"<path ([^>]*class=\"spectrum\"[^>]*)>">>)]))),
    %% (#35: titled with what ran and what it counts, not the key's path
    %% `message_load series.goodput')
    [Goodput] = [S || S <- figures(Dom, <<"timeseries">>), captions(S) =:= [<<"message_load: goodput">>]],
    Notes = [T || [T] <- re_all(Goodput, <<"</svg>(copy rep [0-9]+ \\(1 s\\) \\(overlaps latency rep [0-9]+ \\(1 s\\)\\))</span>">>)],
    ?assertEqual(2, length(Notes)),
    Dashes = dashes(Goodput, <<"series rep-line">>),
    ?assertEqual(4, length(Dashes)),
    ?assertEqual(4, length(lists:usort(Dashes))).

%% #35: sizes 10, 11, 12 and 5000 crowd together on a log axis as on a
%% linear one: an ordinal axis, the measured values evenly spaced, a tick
%% at each and none between.
ordinal_sweep_chart(Config) ->
    F = run(Config, "ordinal", ["suite", "ping_pong", "--param", "ping_pong.size=10,11,12,5000",
                                "--param", "ping_pong.n=2000", "-n", "3"]),
    Dom = report(Config, "ordinal", [F]),
    [Fig] = figures(Dom, <<"sweep">>),
    ?assertNotEqual(nomatch, binary:match(Fig, <<"data-x-scale=\"ordinal\"">>)),
    ?assertEqual([<<"10">>, <<"11">>, <<"12">>, <<"5000">>], xticks(Fig)),
    [Line | _] = attrs(Fig, <<"path">>, <<"sweep-line">>, <<"d">>),
    Xs = [binary_to_float(X) || [X, _] <- re_all(Line, <<"[ML]([0-9.]+),([0-9.]+)">>)],
    Gaps = [B - A || {A, B} <- lists:zip(lists:droplast(Xs), tl(Xs))],
    ?assertEqual(3, length(Gaps)),
    ?assert(lists:max(Gaps) - lists:min(Gaps) < 1),
    ?assert(lists:min(Gaps) > 50),
    ?assertMatch({match, _}, re:run(Fig, <<"size on an ordinal axis: its 4 measured values evenly spaced">>)).

%% A parameter with two values (zlib levels 0 and 6) is levels, not a
%% range: each series' two points at those values with their intervals as
%% whiskers, no line through 1..5, and no tick at a value never measured.
categorical_sweep_chart(Config) ->
    F = run(Config, "categorical", ["suite", "serialization", "--param", "serialization.compressed=0,6",
                                    "--param", "serialization.term=binary,atoms", "--param", "serialization.k=10",
                                    "-n", "3"]),
    Dom = report(Config, "categorical", [F]),
    [Fig] = figures(Dom, <<"sweep">>),
    %% (the time in the unit its axis shows, which depends on the machine)
    [Title] = captions(Fig),
    ?assertMatch({match, _}, re:run(Title, <<"^serialization: wall-clock time per encode\\+decode \\((ns|us|ms)\\) against compressed$">>)),
    ?assertEqual([], attrs(Fig, <<"path">>, <<"sweep-line">>, <<"d">>)),
    ?assertEqual([<<"0">>, <<"6">>], xticks(Fig)),
    %% (each series its marker shape: the first's circles, the second's squares)
    [Chart] = [C || [C] <- re_all(Fig, <<"(<svg class=\"chart\".*?</svg>)">>)],
    ?assertEqual({2, 2}, {count(Chart, <<"<circle">>), count(Chart, <<"class=\"marker\"">>)}),
    ?assertEqual(2, count(Fig, <<"class=\"errorbar\"">>)),
    ?assertMatch({match, _}, re:run(Fig, <<"whiskers: [A-Za-z]">>)).

%% -q: throughput against workers, every repetition as a point, the fitted
%% Universal Scalability Law, speedup and efficiency.
scaling_chart(Config) ->
    F = run(Config, "squeeze", ["lists:seq(1, 1000).", "-q", "--max", "3", "--threshold", "3",
                                "-d", "100", "-s", "3"]),
    Dom = report(Config, "squeeze", [F]),
    [Fig | _] = figures(Dom, <<"scaling">>),
    %% The title names what ran and the measure; the band says its method.
    ?assertEqual(<<"squeeze: lists:seq(1, 1000).: throughput against workers">>, hd(captions(Fig))),
    ?assertMatch({match, _}, re:run(Fig, <<"band: [a-z ]*interval">>)),
    ?assertEqual([<<"USL fit">>], attrs(Fig, <<"path">>, <<"usl-fit">>, <<"data-series">>)),
    %% 3 levels x 3 samples, as points.
    {match, [Points]} = re:run(Fig, <<"<g class=\"usl-point\"[^>]*>(.*?)</g>">>, [{capture, all_but_first, binary}]),
    ?assertEqual(9, count(Points, <<"<circle">>)),
    ?assertEqual([<<"workers">>], lists:usort(texts(Fig, <<"label x-label">>))),
    ?assertMatch([<<"iterations/s">> | _], texts(Fig, <<"label y-label">>)),
    %% The coefficients are numbers (a small one in exponent form, 2.1e-5),
    %% then the predicted peak or how far the fit stays without one.
    Num = <<"[0-9.]+(?:e-[0-9]+)?">>,
    ?assertMatch({match, _}, re:run(Fig, <<"\x{3c3} = "/utf8, Num/binary, ", \x{3ba} = "/utf8, Num/binary, ", ">>,
                                    [unicode])),
    ?assertMatch({match, _}, re:run(Fig, <<"(predicted peak [0-9.]+[kMG]? iterations/s at [0-9.]+ workers?"
                                          "|no peak within 12 workers)">>)),
    ?assertNotEqual(nomatch, binary:match(Fig, <<"data-kind=\"speedup\"">>)),
    ?assertEqual(1, count(Dom, <<"data-kind=\"efficiency\"">>)),
    %% #35: speedup and efficiency name what ran and their measure too
    %% (they were `speedup', `efficiency'), and say what the ratio is of;
    %% their narrow cards wrap the titles between words (the layout check
    %% in report/3 finds no word broken).
    [Speedup] = figures(Dom, <<"speedup">>),
    ?assertEqual([<<"squeeze: lists:seq(1, 1000).: throughput speedup against workers">>], captions(Speedup)),
    ?assertMatch({match, _}, re:run(Speedup, <<"<div class=\"muted\">throughput \\(iterations/s\\) at each level / at 1 worker">>)),
    [Efficiency] = figures(Dom, <<"efficiency">>),
    ?assertEqual([<<"squeeze: lists:seq(1, 1000).: throughput efficiency against workers">>], captions(Efficiency)).

%% message_load records latency percentiles: the spectrum from 50% to
%% 99.9% on the 1/(1-p) axis; its per-second series over time.
latency_chart(Config) ->
    F = latency_run(Config),
    Dom = report(Config, "latency", [F]),
    [Fig] = figures(Dom, <<"latency">>),
    ?assertEqual([<<"message_load latency_us: latency percentile spectrum">>], captions(Fig)),
    %% One unit: the subtitle starts with the one the axis shows.
    {match, [LUnit]} = re:run(hd(texts(Fig, <<"label y-label">>)), <<"^latency \\((ns|us|ms)\\)$">>,
                              [{capture, all_but_first, binary}]),
    ?assertMatch({match, _}, re:run(Fig, <<"<div class=\"muted\">", LUnit/binary, "; max ">>)),
    %% A log latency axis (p50 and p99.9 differ by orders of magnitude).
    ?assertNotEqual(nomatch, binary:match(Fig, <<"data-y-scale=\"log\"">>)),
    [D] = attrs(Fig, <<"path">>, <<"spectrum">>, <<"d">>),
    %% p50, p90, p99, p99.9, rising.
    Ys = [binary_to_float(Y) || [_, Y] <- re_all(D, <<"[ML]([0-9.]+),([0-9.]+)">>)],
    ?assertEqual(4, length(Ys)),
    ?assertEqual(lists:reverse(lists:sort(Ys)), Ys),   % SVG y grows downwards
    ?assertEqual([<<"percentile">>], texts(Fig, <<"label x-label">>)),
    [?assert(lists:member(T, texts(Fig, <<"tick">>))) || T <- [<<"50%">>, <<"99%">>, <<"99.99%">>]],
    %% (#35: titled with what ran and what it counts, not the key's path
    %% `message_load series.goodput')
    [Goodput] = [S || S <- figures(Dom, <<"timeseries">>), captions(S) =:= [<<"message_load: goodput">>]],
    %% Each series with its unit: the run's metric of that name, or its name.
    ?assertEqual([<<"msg/s">>], texts(Goodput, <<"label y-label">>)),
    %% Two repetitions of one second each (the legend): two lines over the first second
    %% of each, never one line over seconds 1..4; the partial second after
    %% each measured period is left out, not drawn as a fall to 0.
    ?assertEqual([<<"rep 1">>, <<"rep 2">>], [R || [R] <- re_all(Goodput, <<"</svg>(rep [0-9]+) \\(1 s\\)</span>">>)]),
    ?assertEqual([<<"1">>], xticks(Goodput)),
    ?assertEqual([<<"second of the repetition">>], texts(Goodput, <<"label x-label">>)),
    %% (#35: so is every per-second chart of the suite: each repetition
    %% its own line, the legend naming it, none over the suite's seconds)
    [begin
         ?assertEqual([<<"second of the repetition">>], texts(S, <<"label x-label">>)),
         Legend = [R || [R] <- re_all(S, <<"</svg>(rep [0-9]+) \\([0-9]+ s\\)[^<]*</span>">>)],
         ?assertEqual([<<"rep 1">>, <<"rep 2">>], lists:usort(Legend))
     end || S <- figures(Dom, <<"timeseries">>)],
    [Mean] = [S || S <- figures(Dom, <<"timeseries">>), captions(S) =:= [<<"message_load: latency mean">>]],
    ?assertEqual([], [C || S <- figures(Dom, <<"timeseries">>), C <- captions(S),
                           binary:match(C, <<"series.">>) =/= nomatch]),
    %% (and the suite's secondary rates by their measure, not `message_load/flushput')
    ?assert(lists:any(fun(C) -> binary:match(C, <<"message_load: rate of messages flushed unread">>) =/= nomatch end,
                      captions(Dom))),
    ?assertEqual([], [C || C <- captions(Dom), binary:match(C, <<"message_load/flushput">>) =/= nomatch]),
    %% (a time in the unit that keeps it short: 9 us is drawn as 9000 ns)
    [MeanUnit] = texts(Mean, <<"label y-label">>),
    ?assert(lists:member(MeanUnit, [<<"ns">>, <<"us">>, <<"ms">>])).

%% -v telemetry over time, and a finding that says when it fired shaded
%% on the telemetry's time axis.
timeseries_chart(Config) ->
    F = run(Config, "telemetry", ["lists:seq(1, 100).", "-d", "300", "-s", "5", "-v"]),
    {ok, Doc} = beamlab_result:load(F),
    Marked = beamlab_result:add_findings(
               Doc, [beamlab_result:finding(scheduler_imbalance, critical, <<"Scheduler imbalance">>,
                                            <<"evidence">>, <<"advice">>,
                                            #{from_ms => 500, to_ms => 1000, last_ms => 1500})]),
    F2 = filename:join(?config(priv_dir, Config), "telemetry-marked.json"),
    {ok, _} = beamlab_result:save(Marked, F2),
    Dom = report(Config, "telemetry", [F2]),
    [Util] = [S || S <- figures(Dom, <<"timeseries">>), binary:match(S, <<"VM telemetry util</figcaption>">>) =/= nomatch],
    %% The title names what ran and the measure.
    ?assertEqual([<<"lists:seq(1, 100).: VM telemetry util">>], captions(Util)),
    %% #35: one naming rule for every telemetry chart: the benchmark's own
    %% rate names it once (it read `lists:seq(1, 100).: VM telemetry
    %% rates.lists:seq(1, 100).').
    Tele = [C || S <- figures(Dom, <<"timeseries">>), C <- captions(S), binary:match(C, <<"VM telemetry">>) =/= nomatch],
    ct:log("~p", [Tele]),
    ?assert(lists:member(<<"lists:seq(1, 100).: VM telemetry rates">>, Tele)),
    [?assertMatch({match, _}, re:run(C, <<"^lists:seq\\(1, 100\\)\\.: VM telemetry [a-z_.]+$">>)) || C <- Tele],
    ?assertEqual([], [C || C <- Tele, length(binary:matches(C, <<"lists:seq">>)) > 1]),
    %% (the run's samples and telemetry share its clock: #35)
    ?assertEqual([<<"s since the run started">>], texts(Util, <<"label x-label">>)),
    ?assertEqual([<<"%">>], texts(Util, <<"label y-label">>)),
    ?assertEqual(1, count(Util, <<"class=\"finding-mark\"">>)),
    %% Shaded over the interval the finding states: 0.5 s to its last
    %% sample at 1.5 s (past the 1.0 s that raised it), on the
    %% telemetry's clock, as its evidence tells times (#35).
    ?assertEqual([{<<"0.5">>, <<"1.5">>}], [{A, B} || [A, B] <- re_all(Util, <<"class=\"finding-mark\" data-from=\"([0-9.]+)\" data-to=\"([0-9.]+)\"">>)]),
    ?assertNotEqual(nomatch, binary:match(Util, <<"Scheduler imbalance">>)),
    [UtilLine] = attrs(Util, <<"path">>, <<"series">>, <<"d">>),
    ?assertEqual(1, count(UtilLine, <<"M">>)),
    %% A watched node silent between the first two samples: the line
    %% breaks there (starts again after the gap).
    #{<<"t_ms">> := [S1, S2 | _]} = Tele = maps:get(telemetry, Doc),
    Silent = beamlab_result:set(telemetry, Tele#{<<"unanswered">> => [#{from_ms => (S1 + S2) div 2, to_ms => S2}]}, Doc),
    F3 = filename:join(?config(priv_dir, Config), "telemetry-silent.json"),
    {ok, _} = beamlab_result:save(Silent, F3),
    [Broken] = [S || S <- figures(report(Config, "telemetry-silent", [F3]), <<"timeseries">>),
                     binary:match(S, <<"VM telemetry util</figcaption>">>) =/= nomatch],
    ?assertMatch([_], attrs(Broken, <<"path">>, <<"series">>, <<"d">>)),
    ?assertEqual(2, count(hd(attrs(Broken, <<"path">>, <<"series">>, <<"d">>)), <<"M">>)),
    %% The benchmark's samples over time too, per second.
    ?assertMatch([_], [S || S <- figures(Dom, <<"timeseries">>),
                            binary:match(S, <<"lists:seq(1, 100). (iterations/s)">>) =/= nomatch]),
    %% #35: a last sample 0.3 s after the one before (the run stopped
    %% between two ticks) is a partial interval: left out of the line, and
    %% the subtitle says so; the same run without it draws every sample.
    #{<<"t_ms">> := Times} = Tele,
    N = length(Times),
    Tail = maps:map(fun(<<"t_ms">>, V) -> V ++ [lists:last(V) + 300];
                       (_, V) when is_list(V), length(V) =:= N ->
                            V ++ [case lists:last(V) of X when is_number(X) -> 0; X -> X end];
                       (_, V) -> V
                    end, Tele),
    F4 = filename:join(?config(priv_dir, Config), "telemetry-tail.json"),
    {ok, _} = beamlab_result:save(beamlab_result:set(telemetry, Tail, Doc), F4),
    Points = fun(D) ->
                     [Fig] = [S || S <- figures(D, <<"timeseries">>),
                                   binary:match(S, <<"VM telemetry util</figcaption>">>) =/= nomatch],
                     [Line] = attrs(Fig, <<"path">>, <<"series">>, <<"d">>),
                     {count(Line, <<"M">>) + count(Line, <<"L">>), Fig}
             end,
    {Whole, WholeFig} = Points(Dom),
    {Cut, CutFig} = Points(report(Config, "telemetry-tail", [F4])),
    ?assertEqual(Whole, Cut),
    ?assertEqual(nomatch, binary:match(WholeFig, <<"left out">>)),
    ?assertNotEqual(nomatch, binary:match(CutFig, <<"the last interval, shorter than the others">>)).

%% #35: a run's samples over time and its telemetry on one clock, the
%% run's start: stacked, the same instant at the same x. Two benchmarks
%% (their rounds rotate, so the second's samples did not end at k
%% durations): each sample chart, the telemetry charts and the scheduler
%% heatmap share the axis (range and pixels) titled `s since the run
%% started'; the first sample of each benchmark and the first telemetry
%% point are drawn at the x of their time in the document.
run_clock_chart(Config) ->
    F = run(Config, "run-clock", ["lists:seq(1, 100).", "lists:seq(1, 1000).", "-d", "300", "-s", "6", "-v"]),
    {ok, #{benchmarks := Bs, telemetry := #{<<"t_ms">> := [T1 | _] = Ts}}} = beamlab_result:load(F),
    Ends = [maps:get(<<"sample_end_ms">>, maps:get(extra, B)) || B <- Bs],
    ct:log("sample ends ~p~ntelemetry ~p", [Ends, Ts]),
    %% The samples' ends and the telemetry count from one origin: every
    %% sample ended before the telemetry's last point (taken when sampling
    %% had stopped), and the rounds alternate the jobs.
    [[A1 | _] = EA, [B1 | _]] = Ends,
    ?assert(lists:max(lists:append(Ends)) =< lists:last(Ts)),
    ?assert(A1 < B1 andalso B1 < lists:nth(2, EA)),
    Dom = report(Config, "run-clock", [F]),
    [_, Timeline] = binary:split(Dom, <<"<section id=\"timeline\"">>),
    Axis = fun(Fig) ->
                   [Lo] = attrs(Fig, <<"svg">>, <<"chart">>, <<"data-x-lo">>),
                   [Hi] = attrs(Fig, <<"svg">>, <<"chart">>, <<"data-x-hi">>),
                   [Px] = attrs(Fig, <<"svg">>, <<"chart">>, <<"data-x-px">>),
                   {Lo, Hi, Px}
           end,
    %% The x of an instant (s) on that axis, and where a chart's line starts.
    At = fun({Lo, Hi, Px}, Sec) ->
                 [P0, P1] = [num(X) || X <- binary:split(Px, <<" ">>)],
                 P0 + (Sec - num(Lo)) / (num(Hi) - num(Lo)) * (P1 - P0)
         end,
    Start = fun(Fig) ->
                    [D | _] = attrs(Fig, <<"path">>, <<"series">>, <<"d">>),
                    {match, [X]} = re:run(D, <<"^M([0-9.]+),">>, [{capture, all_but_first, binary}]),
                    num(X)
            end,
    Fig = fun(Caption) ->
                  [G] = [S || S <- figures(Timeline, <<"timeseries">>), binary:match(S, Caption) =/= nomatch],
                  G
          end,
    Util = Fig(<<"VM telemetry util</figcaption>">>),
    Samples = [Fig(<<"<figcaption>", Code/binary, " (iterations/s)</figcaption>">>)
               || Code <- [<<"lists:seq(1, 100).">>, <<"lists:seq(1, 1000).">>]],
    Shared = Axis(Util),
    [?assertEqual(Shared, Axis(S)) || S <- Samples],
    [?assertEqual([<<"s since the run started">>], texts(S, <<"label x-label">>)) || S <- [Util | Samples]],
    %% the heatmaps below them (utilisation, run queues): the same range and pixels
    {match, Heatmaps} = re:run(Timeline, <<"class=\"chart heatmap\" data-x-lo=\"([^\"]*)\" data-x-hi=\"([^\"]*)\" "
                                                    "data-x-ticks=\"[^\"]*\" data-x-px=\"([^\"]*)\"">>,
                                        [global, {capture, all_but_first, binary}]),
    ?assertNotEqual([], Heatmaps),
    [?assertEqual(Shared, {HLo, HHi, HPx}) || [HLo, HHi, HPx] <- Heatmaps],
    ?assert(abs(Start(Util) - At(Shared, T1 / 1000)) < 0.6),
    [?assert(abs(Start(S) - At(Shared, E / 1000)) < 0.6) || {S, E} <- lists:zip(Samples, [A1, B1])].

%% #35: the charts of one time axis share its left margin, so their plot
%% areas line up; a y tick label longer than 8 characters (a run at
%% 12,345,600-12,345,800 iterations/s: `12.34565M') widened its own
%% chart's margin alone and broke that. The shared margin is the room the
%% widest label of all the axis' charts needs: no label clipped (the
%% page's layout check), every chart and heatmap on `s since the run
%% started' with its plot at the same pixels. A real run, its samples set
%% to such rates.
shared_margin_chart(Config) ->
    F = run(Config, "margin", ["ok.", "-d", "300", "-s", "6", "-v"]),
    {ok, #{benchmarks := [#{samples := S, params := #{<<"sample">> := #{<<"duration_ms">> := D}}} = B]} = Doc} =
        beamlab_result:load(F),
    %% (iterations per sample of D ms)
    Big = [(12345600 + 100 * (I rem 3)) * D / 1000 || I <- lists:seq(1, length(S))],
    F2 = filename:join(?config(priv_dir, Config), "margin-big.json"),
    {ok, _} = beamlab_result:save(Doc#{benchmarks := [B#{samples := Big, stats := beamlab_stats:summary(Big)}]}, F2),
    Dom = report(Config, "margin", [F2]),
    [_, Timeline] = binary:split(Dom, <<"<section id=\"timeline\"">>),
    OnClock = [Fig || Fig <- figures(Timeline, <<"timeseries">>), texts(Fig, <<"label x-label">>) =:= [<<"s since the run started">>]],
    ?assert(length(OnClock) >= 3),
    [Rate] = [Fig || Fig <- OnClock, captions(Fig) =:= [<<"ok. (iterations/s)">>]],
    YTicks = [T || [T] <- re_all(Rate, <<"<text [^>]*data-axis=\"y\"[^>]*>([^<]*)</text>">>)],
    ct:log("y ticks ~p", [YTicks]),
    ?assert(lists:max([string:length(T) || T <- YTicks]) > 8),
    Px = lists:usort([P || Fig <- OnClock, P <- attrs(Fig, <<"svg">>, <<"chart">>, <<"data-x-px">>)]),
    {match, Heatmaps} = re:run(Timeline, <<"class=\"chart heatmap\" [^>]*data-x-px=\"([^\"]*)\"">>,
                               [global, {capture, all_but_first, binary}]),
    ct:log("plot pixels ~p, heatmaps ~p", [Px, Heatmaps]),
    ?assertMatch([_], Px),
    ?assertEqual(Px, lists:usort([H || [H] <- Heatmaps])),
    %% (wider than the 78 pixels the shared margin had)
    [Left, _] = binary:split(hd(Px), <<" ">>),
    ?assert(num(Left) - 6 > 78).

%% #35: a matrix of brokers (`--target rabbitmq', each configuration's
%% broker watched by its inner amqp run): each configuration's telemetry
%% charts say what their time counts from. The broker's samples count
%% from its repetition's run start; the document keeps when that
%% repetition's load started (`configs[].broker.load_start_ms'), and the
%% charts draw them on the load's clock, `s since the load started' (the
%% axis said `seconds'): the first sample at its `t_ms' less that.
matrix_broker_clock(Config) ->
    case filelib:is_regular("/usr/lib/rabbitmq/bin/rabbitmq-server") of
        false -> {skip, "Debian's rabbitmq-server is not installed"};
        true ->
            _ = os:cmd("epmd -address 127.0.0.1 -daemon"),
            F = run(Config, "matrix-brokers", ["matrix", "--target", "rabbitmq", "--vm", "+S 1", "--vm", "+S 2", "-n", "1",
                                               "--", "amqp", "--closed-loop", "2", "-z", "2"]),
            {ok, #{extra := #{<<"configs">> := Configs}}} = beamlab_result:load(F),
            Starts = [{N, LoadStart, hd(maps:get(<<"t_ms">>, T))}
                      || #{<<"name">> := N, <<"broker">> := #{<<"load_start_ms">> := LoadStart, <<"telemetry">> := T}} <- Configs],
            ct:log("~p", [Starts]),
            ?assert(length(Starts) >= 1),
            Dom = report(Config, "matrix-brokers", [F]),
            Broker = [Fig || Fig <- figures(Dom, <<"timeseries">>), binary:match(hd(captions(Fig)), <<": broker">>) =/= nomatch],
            ct:log("~p", [[captions(Fig) || Fig <- Broker]]),
            ?assert(length(Broker) >= length(Starts)),
            [?assertEqual([<<"s since the load started">>], texts(Fig, <<"label x-label">>)) || Fig <- Broker],
            %% each configuration's first broker sample at its time since its load started
            [begin
                 [Fig | _] = [G || G <- Broker, binary:match(hd(captions(G)), <<N/binary, ": broker util">>) =/= nomatch],
                 [Lo] = attrs(Fig, <<"svg">>, <<"chart">>, <<"data-x-lo">>),
                 [Hi] = attrs(Fig, <<"svg">>, <<"chart">>, <<"data-x-hi">>),
                 [Px] = attrs(Fig, <<"svg">>, <<"chart">>, <<"data-x-px">>),
                 [P0, P1] = [num(X) || X <- binary:split(Px, <<" ">>)],
                 Sec = (T0 - LS) / 1000,
                 Want = P0 + (Sec - num(Lo)) / (num(Hi) - num(Lo)) * (P1 - P0),
                 [D | _] = attrs(Fig, <<"path">>, <<"series">>, <<"d">>),
                 {match, [X0]} = re:run(D, <<"^M([0-9.]+),">>, [{capture, all_but_first, binary}]),
                 ?assert(abs(num(X0) - Want) < 0.6)
             end || {N, LS, T0} <- Starts]
    end.

num(B) ->
    case string:to_float(B) of
        {F, _} when is_float(F) -> F;
        _ -> float(binary_to_integer(B))
    end.

%% A matrix over schedulers: the verdict table first, one chart of every
%% configuration's repetitions per benchmark, and the scaling chart.
matrix_chart(Config) ->
    F = run(Config, "matrix", ["matrix", "--sweep-schedulers", "1..2", "-n", "3", "--",
                               "run", "lists:seq(1, 300).", "-d", "100", "-s", "2"]),
    Dom = report(Config, "matrix", [F]),
    {TablePos, _} = binary:match(Dom, <<"matrix-table">>),
    [{ChartPos, _} | _] = binary:matches(Dom, <<"data-kind=\"matrix\"">>),
    ?assert(TablePos < ChartPos),
    [Fig] = figures(Dom, <<"matrix">>),
    ?assertEqual([<<"lists:seq(1, 300). (iterations/s) per configuration">>], captions(Fig)),
    [Sub] = subtitles(Fig),
    ?assertNotEqual(nomatch, binary:match(Sub, <<"; dots: repetitions (one fresh VM\x{2019}s mean each), bar: their mean, "/utf8>>), Sub),
    ?assertEqual([<<"+S 1:1">>, <<"+S 2:2">>], attrs(Fig, <<"g">>, <<"interval-row">>, <<"data-row">>)),
    %% Iterations per 100 ms sample as a rate, as the command line prints it.
    ?assertEqual([<<"iterations/s">>], texts(Fig, <<"label x-label">>)),
    [Table] = [T || [T] <- re_all(Dom, <<"(<table class=\"matrix-table\">.*?</table>)">>)],
    ?assertEqual(2, count(Table, <<"iterations/s">>)),
    %% #35: the Runs table counts one benchmark, in two configurations
    [Runs] = [R || [R] <- re_all(Dom, <<"(<section id=\"runs\".*?</table>)">>)],
    ?assertNotEqual(nomatch, binary:match(Runs, <<"<td>1 in 2 configurations</td>">>)),
    %% Fresh-VM repetitions are not time: no chart over seconds of them.
    ?assertEqual([], figures(Dom, <<"timeseries">>)),
    %% Three fresh VMs per configuration (an interval needs three values).
    ?assertEqual(6, count(Fig, <<"class=\"sample\"">>)),
    ?assertEqual(2, count(Fig, <<"class=\"errorbar\"">>)),
    {match, _} = re:run(Dom, <<"data-verdict=\"baseline\"">>),
    [Scaling | _] = figures(Dom, <<"scaling">>),
    ?assertEqual([<<"schedulers">>], lists:usort(texts(Scaling, <<"label x-label">>))),
    ?assertNotEqual(nomatch, binary:match(Scaling, <<"Amdahl">>)),
    ?assertMatch([_], attrs(Scaling, <<"path">>, <<"usl-fit">>, <<"d">>)).

%% #35: a configuration's label longer than the chart's margin is not cut
%% off: it ends in an ellipsis and its full text is the row's <title>;
%% the page's layout check (report/3) finds nothing cut off.
matrix_long_labels(Config) ->
    Vm = "+S 1:1 +sbwt none +sbwtdcpu none +sbwtdio none +swt very_low +swtdcpu very_low +swtdio very_low +sub true",
    F = run(Config, "matrix-long", ["matrix", "--vm", Vm, "-n", "3", "--", "run", "ok.", "-d", "10", "-s", "2"]),
    Dom = report(Config, "matrix-long", [F]),
    [Fig] = figures(Dom, <<"matrix">>),
    [Row] = [R || [R] <- re_all(Fig, <<"(<g class=\"interval-row\".*?</g>)">>)],
    [[Shown, Full]] = re_all(Row, <<"<text [^>]*class=\"tick row-label\"[^>]*>([^<]*)<title>([^<]*)</title></text>">>),
    ?assertMatch({match, _}, re:run(Shown, <<"^\\+S 1:1 .*\\x{2026}$">>, [unicode])),
    ?assert(string:length(Shown) < length(Vm)),
    ?assertEqual(list_to_binary(Vm), Full).

%% #35: a matrix of a suite titles every chart with the point that ran
%% and its measure, as the suite's own report does: ring's whole time was
%% `ring[k=0]/total (ms) per configuration' (no measure, the metric glued
%% to the point); the suite now says what it measures (`measure').
matrix_suite_titles(Config) ->
    F = run(Config, "matrix-ring", ["matrix", "--vm", "+S 1", "--vm", "+S 2", "-n", "2", "--",
                                    "suite", "ring", "--param", "ring.k=0", "--param", "ring.n=2000"]),
    Dom = report(Config, "matrix-ring", [F]),
    Caps = lists:append([captions(Fig) || Fig <- figures(Dom, <<"matrix">>)]),
    ct:log("~p", [Caps]),
    ?assertEqual(2, length(Caps)),
    %% (one point: its name is the workload's; the time in the unit its axis shows)
    Unit = <<"\\((ns|us|ms)\\)">>,
    ?assertMatch([_], [C || C <- Caps, re:run(C, <<"^ring: wall-clock time of the whole ring ", Unit/binary, " per configuration$">>) =/= nomatch]),
    ?assertMatch([_], [C || C <- Caps, re:run(C, <<"^ring: wall-clock time per process ", Unit/binary, " per configuration$">>) =/= nomatch]),
    %% the suite's report of the same benchmark says the same
    S = run(Config, "suite-ring", ["suite", "ring", "--param", "ring.k=0", "--param", "ring.n=2000", "-n", "3"]),
    SDom = report(Config, "suite-ring", [S]),
    SCaps = lists:append([captions(Fig) || Fig <- figures(SDom, <<"results">>) ++ figures(SDom, <<"points">>)]),
    ct:log("~p", [SCaps]),
    ?assertMatch([_ | _], [C || C <- SCaps, re:run(C, <<"^ring: wall-clock time of the whole ring ", Unit/binary, "$">>) =/= nomatch]),
    ?assertEqual([], [C || C <- Caps ++ SCaps, binary:match(C, <<"/total">>) =/= nomatch]).

%% #35: a matrix of a suite's sweep titles its sweep chart with the
%% workload (it was `wall-clock time per round trip (ns) against size':
%% the configurations are the groups of a matrix's benchmarks).
matrix_sweep_title(Config) ->
    F = run(Config, "matrix-sweep", ["matrix", "--vm", "+S 1", "--vm", "+S 2", "-n", "2", "--",
                                     "suite", "ping_pong", "--param", "ping_pong.size=10,100",
                                     "--param", "ping_pong.payload=binary", "--param", "ping_pong.n=1000"]),
    Dom = report(Config, "matrix-sweep", [F]),
    [Fig] = figures(Dom, <<"sweep">>),
    ?assertMatch({match, _}, re:run(hd(captions(Fig)), <<"^ping_pong: wall-clock time per round trip \\((ns|us|ms)\\) against size$">>)).

%% A histogram from 20 samples on; fewer are drawn as points.
distribution_chart(Config) ->
    Many = run(Config, "many", ["ok.", "-d", "10", "-s", "25"]),
    Few = run(Config, "few", ["rand:uniform().", "-d", "10", "-s", "5"]),
    Dom = report(Config, "dist", [Many, Few]),
    [Hist] = figures(Dom, <<"distribution">>),
    ?assertNotEqual(nomatch, binary:match(Hist, <<"ok. (iterations/s)">>)),
    ?assert(count(Hist, <<"class=\"hist\"">>) >= 1),
    ?assertEqual([<<"iterations/s">>], texts(Hist, <<"label x-label">>)),
    ?assertEqual([<<"samples">>], texts(Hist, <<"label y-label">>)),
    [Points] = figures(Dom, <<"points">>),
    ?assertNotEqual(nomatch, binary:match(Points, <<"<figcaption>rand:uniform(). (iterations/s)</figcaption>">>)),
    ?assertEqual(5, count(Points, <<"class=\"sample\"">>)).

%% Runs saved in a git work tree after each of three commits, the second
%% ten thousand times slower (on a log axis): `report DIR' orders them by commit and draws the trend.
%% Single runs with fewer than 3 earlier runs have no run-to-run spread to
%% judge by (issue #35): no change is marked, `compare DIR' says
%% within-run only.
trend_chart(Config) ->
    Repo = filename:join(?config(priv_dir, Config), "repo"),
    Hist = filename:join(Repo, "history"),
    ok = filelib:ensure_path(Hist),
    Git = fun(Args) -> {0, _} = sh(["git", "-C", Repo, "-c", "user.name=t", "-c", "user.email=t@example.org" | Args]) end,
    Git(["init", "-q"]),
    [begin
         ok = file:write_file(filename:join(Repo, "code.txt"), integer_to_list(N)),
         Git(["add", "code.txt"]),
         Git(["commit", "-q", "-m", "c" ++ integer_to_list(I), "--date", "2026-01-0" ++ integer_to_list(I) ++ "T00:00:00Z"]),
         %% Saved in reverse order of commits: the file names sort the other way.
         Out = filename:join(Hist, "run-" ++ integer_to_list(4 - I) ++ ".json"),
         #{code := 0} = beamlab_test_util:cli(["lists:seq(1, " ++ integer_to_list(N) ++ ").", "--label", "seq",
                                               "-d", "50", "-s", "8", "--save", Out], #{dir => Repo})
     end || {I, N} <- [{1, 10}, {2, 100000}, {3, 10}]],
    Dom = report(Config, "trend", [Hist]),
    [Fig] = figures(Dom, <<"trend">>),
    ?assertEqual([<<"seq (iterations/s) by commit">>], captions(Fig)),
    ?assertEqual([<<"iterations/s">>], texts(Fig, <<"label y-label">>)),
    ?assertMatch({match, _}, re:run(Fig, <<"band: 99% interval of that mean">>)),
    ?assertEqual([<<"commit">>], texts(Fig, <<"label x-label">>)),
    ?assertMatch([_], attrs(Fig, <<"path">>, <<"trend-line">>, <<"d">>)),
    ?assertEqual([], attrs(Fig, <<"path">>, <<"change-mark">>, <<"data-verdict">>)),
    ?assertEqual(1, count(Fig, <<"class=\"ci-band\"">>)),
    %% #35: the slow commit does ten thousand times the work: on a linear
    %% axis it sat on the floor at 0 (or, as a time, flattened the others
    %% onto it). Means decades apart go on a log axis, the subtitle says
    %% so, and no tick reads 0.
    ?assertNotEqual(nomatch, binary:match(Fig, <<"data-y-scale=\"log\"">>)),
    ?assertMatch({match, _}, re:run(Fig, <<"log axis: the means span [3-9][.][0-9] decades">>)),
    YTicks = [T || [T] <- re_all(Fig, <<"<text [^>]*data-axis=\"y\"[^>]*>([^<]*)</text>">>)],
    ?assert(length(YTicks) >= 4),
    ?assertNot(lists:member(<<"0">>, YTicks)),
    ?assertNotEqual(nomatch, binary:match(Dom, <<"Ordered by commit">>)),
    %% In commit order: run-3 (c1), run-2 (c2), run-1 (c3).
    #{code := 0, out := Text} = beamlab_test_util:cli(["compare", Hist]),
    ct:log("~ts", [Text]),
    ?assertMatch({match, _}, re:run(Text, <<"2 +run-2 .* within-run only">>)),
    ?assertMatch({match, _}, re:run(Text, <<"3 +run-1 .* within-run only">>)),
    ?assertEqual(nomatch, re:run(Text, <<"SLOWER|faster">>)).

%% #35: the trend of `check' results (each saved after a commit, as CI
%% keeps them): a sample project whose second commit does a thousand
%% times the work and whose third takes it back, checked against the
%% commit before each time. Each benchmark and metric its trend, titled
%% `work: wall-clock time per iteration (us) by commit' (the benchmark,
%% then the measure; it was `work (time) (us)'), on a log axis where the
%% means lie decades apart;
%% the check's paired rounds are not time: no chart over seconds of them
%% (the base's rounds and the paired interval were drawn as per-second
%% series); the page's layout check finds nothing wrong.
check_trend_chart(Config) ->
    Dir = ?config(priv_dir, Config),
    Sample = filename:join(Dir, "check-sample"),
    Hist = filename:join(Dir, "check-history"),
    [ok = filelib:ensure_path(filename:join(Sample, D)) || D <- ["src", "bench", "tmp"]],
    ok = filelib:ensure_path(Hist),
    ok = file:write_file(filename:join(Sample, "rebar.config"), "{erl_opts, [debug_info]}.\n"),
    ok = file:write_file(filename:join([Sample, "src", "sample.app.src"]),
                         "{application, sample, [{description, \"sample\"}, {vsn, \"0.1.0\"},\n"
                         "  {applications, [kernel, stdlib]}, {modules, []}]}.\n"),
    ok = file:write_file(filename:join([Sample, "bench", "sample_bench.erl"]),
                         "-module(sample_bench).\n-export([benchmarks/0]).\n"
                         "benchmarks() -> [#{name => \"work\", runner => fun() -> sample:work(100) end}].\n"),
    ok = file:write_file(filename:join(Sample, ".gitignore"), "_build\n.beamlab\ntmp\n"),
    Git = fun(Args) -> {0, _} = sh(["git", "-C", Sample, "-c", "user.name=t", "-c", "user.email=t@example.org" | Args]) end,
    Work = fun(K) ->
                   ok = file:write_file(filename:join([Sample, "src", "sample.erl"]),
                                        ["-module(sample).\n-export([work/1]).\n"
                                         "work(N) -> sum(N * ", integer_to_list(K), ", 0).\n"
                                         "sum(0, Acc) -> Acc;\nsum(I, Acc) -> sum(I - 1, Acc + I * I).\n"])
           end,
    ok = Work(1),
    Git(["init", "-q"]),
    Git(["add", "-A"]),
    Git(["commit", "-q", "-m", "first", "--date", "2026-01-01T00:00:00Z"]),
    %% (the child's rebar3 sees neither this VM's ERL_LIBS nor its profile)
    Env = [{"ERL_LIBS", false}, {"REBAR_PROFILE", false}, {"REBAR_COLOR", "none"},
           {"TMPDIR", filename:join(Sample, "tmp")}],
    [begin
         ok = Work(K),
         Git(["commit", "-q", "-a", "-m", "work x" ++ integer_to_list(K), "--date", Date]),
         Out = filename:join(Hist, "check-" ++ integer_to_list(K) ++ ".json"),
         R = beamlab_test_util:cli(["check", "--against", "HEAD~1", "--metric", "cpu,reductions", "--rounds", "10",
                                    "-d", "10", "-s", "1", "-w", "0", "--save", Out],
                                   #{dir => Sample, env => Env, timeout => 600000}),
         ct:log("~ts~n~ts", [maps:get(out, R), maps:get(err, R)]),
         ?assert(lists:member(maps:get(code, R), [0, 1]))  % 1: the gate saw the regression
     end || {K, Date} <- [{1000, "2026-01-02T00:00:00Z"}, {1, "2026-01-03T00:00:00Z"}]],
    Dom = report(Config, "check-trend", [Hist]),
    Trends = figures(Dom, <<"trend">>),
    Captions = lists:append([captions(F) || F <- Trends]),
    ct:log("~p", [Captions]),
    %% #35: each trend names its measure, each axis its unit: the CPU
    %% time per iteration is not `(ns)' as if it were the wall clock's.
    ?assert(lists:member(<<"work: reductions per iteration by commit">>, Captions)),
    [Time] = [F || F <- Trends, re:run(hd(captions(F)), <<"^work: wall-clock time per iteration \\((ns|us|ms)\\) by commit$">>) =/= nomatch],
    [Cpu] = [F || F <- Trends, re:run(hd(captions(F)), <<"^work: CPU time per iteration \\((ns|us|ms)\\) by commit$">>) =/= nomatch],
    {match, [CpuUnit]} = re:run(hd(captions(Cpu)), <<"\\((ns|us|ms)\\)">>, [{capture, all_but_first, binary}]),
    ?assertEqual([<<"CPU time per iteration (", CpuUnit/binary, ")">>], texts(Cpu, <<"label y-label">>)),
    ?assertEqual([], [C || C <- Captions, binary:match(C, <<") (">>) =/= nomatch]),
    [Reds] = [F || F <- Trends, hd(captions(F)) =:= <<"work: reductions per iteration by commit">>],
    %% A thousand times the reductions, then back: a log axis.
    ?assertNotEqual(nomatch, binary:match(Reds, <<"data-y-scale=\"log\"">>)),
    ?assertEqual([<<"commit">>], texts(Time, <<"label x-label">>)),
    ?assertMatch([<<"reductions per iteration">>], texts(Reds, <<"label y-label">>)),
    %% Paired rounds in fresh VMs are not seconds.
    ?assertEqual([], figures(Dom, <<"timeseries">>)),
    check_verdicts(Config, filename:join(Hist, "check-1000.json")).

%% #35: a check's report shows its paired verdicts as its text table
%% does (it showed only the head's rounds): one row per benchmark and
%% metric with the medians, the change, its interval, p and the verdict,
%% a `~' of a time with what it could have seen. A thousand times the
%% work: its reductions (counted, no noise) REGRESSED, gated.
check_verdicts(Config, File) ->
    {ok, Doc} = beamlab_result:load(File),
    Dom = report(Config, "check-verdicts", [File]),
    [Section] = [S || [S] <- re_all(Dom, <<"(<section id=\"check\">.*?</section>)">>)],
    Rows = [R || [R] <- re_all(Section, <<"<tr class=\"[a-z ]*check-entry\">(.*?)</tr>">>)],
    Cells = [[C || [C] <- re_all(R, <<"<td[^>]*>([^<]*)</td>">>)] || R <- Rows],
    ct:log("~p", [Cells]),
    ?assertEqual([<<"time">>, <<"cpu (gated)">>, <<"reductions (gated)">>, <<"memory">>], [M || [_, M | _] <- Cells]),
    Text = iolist_to_binary(beamlab_render_check:text(Doc, #{unicode => true})),
    [begin
         %% the verdict as the command line prints it
         ?assertNotEqual(nomatch, binary:match(Text, V)),
         ?assertMatch({match, _}, re:run(Ch, <<"^([+-][0-9.]+|0)%$">>)),
         ?assertMatch({match, _}, re:run(Ci, <<"^\\[([+-][0-9.]+|0)%, ([+-][0-9.]+|0)%\\]$">>)),
         ?assertMatch({match, _}, re:run(P, <<"^[0-9.e-]+$">>))
     end || [_, _, _, _, Ch, Ci, P, V] <- Cells],
    [_, _, [_, _, Base, Head | _] = Reds, _] = Cells,
    ?assertNotEqual(Base, Head),
    ?assertEqual(<<"REGRESSED">>, lists:last(Reds)),
    %% every `~' of a measured time says what it could have seen, as the JSON does
    [?assertEqual(is_number(maps:get(<<"detectable">>, maps:get(<<"paired">>, X), null)),
                  binary:match(V, <<"could have seen">>) =/= nomatch)
     || {[_, M, _, _, _, _, _, V], #{extra := X}} <- lists:zip(Cells, maps:get(benchmarks, Doc)),
        lists:member(M, [<<"time">>, <<"cpu (gated)">>]), binary:match(V, <<"~">>) =/= nomatch],
    ?assertMatch({match, _}, re:run(Section, <<"10 paired rounds">>)),
    %% The bars and points below are the head's rounds, and say so.
    [?assertEqual([<<"check-1000 (head)">>], [L || [L] <- re_all(F, <<"class=\"tick row-label\"[^>]*>([^<]*)<">>)])
     || F <- figures(Dom, <<"results">>) ++ figures(Dom, <<"points">>)].

%% #35: a profiled run's report (with perf): the flame graph's table of
%% top functions scrolls in its box instead of running off an 800-pixel
%% page (the layout check in report/3), the run's own charts name their
%% measure and axis, and no axis of a rate runs below zero.
profile_chart(Config) ->
    case os:find_executable("perf") of
        false -> {skip, "perf is not installed (Debian package linux-perf); CI installs it"};
        _ ->
            F = run(Config, "profile", ["profile", "--", "run", "lists:seq(1, 1000).", "-s", "3"]),
            Dom = report(Config, "profile", [F]),
            ?assertMatch([_], flame_cards(Dom)),
            [Bars] = figures(Dom, <<"results">>),
            ?assertEqual([<<"lists:seq(1, 1000). (iterations/s)">>], captions(Bars)),
            ?assertEqual([<<"iterations/s">>], texts(Bars, <<"label x-label">>)),
            [Points] = figures(Dom, <<"points">>),
            ?assertEqual([<<"iterations/s">>], texts(Points, <<"label x-label">>)),
            [?assertNotMatch(<<"-", _/binary>>, T) || T <- xticks(Bars) ++ xticks(Points)]
    end.

%% #35: an `amqp' run against a real broker (RabbitMQ, started for the
%% case on free ports), stopped 0.7 s into its fourth 1-second interval:
%% every title names the workload (`amqp: sent (msg/s)'; it was `sent
%% (msg/s)'), the rates are msg/s, the latency spectrum of the consumer
%% latency histogram is on a log axis, and the per-interval series put
%% each point at the end of its interval and leave the last, partial one
%% out, saying so (it was drawn as a fourth whole second).
amqp_run_charts(Config) ->
    case filelib:is_regular("/usr/lib/rabbitmq/bin/rabbitmq-server") of
        false -> {skip, "Debian's rabbitmq-server is not installed"};
        true ->
            _ = os:cmd("epmd -address 127.0.0.1 -daemon"),
            {ok, B} = beamlab_sut_broker:start(#{kind => rabbitmq, args => []}),
            try
                #{uri := Uri} = B,
                amqp_charts(Config, run(Config, "amqp", ["amqp", "-h", binary_to_list(Uri), "--closed-loop", "2",
                                                         "-z", "3.7"]))
            after
                beamlab_sut_broker:stop(B)
            end
    end.

amqp_charts(Config, F) ->
    {ok, #{benchmarks := [#{name := <<"sent">>, samples := Sent, extra := Extra} | _]}} = beamlab_result:load(F),
    #{<<"interval_end_s">> := Ends} = beamlab_report_views:key_bins(Extra),
    ct:log("sent: ~p at ~p s", [Sent, Ends]),
    %% Four intervals, the last 0.7 s: partial.
    ?assertEqual(4, length(Ends)),
    ?assert(beamlab_report_views:partial_tail([0 | Ends])),
    Dom = report(Config, "amqp", [F]),
    [Spectrum] = figures(Dom, <<"latency">>),
    ?assertEqual([<<"amqp: consumer latency: latency percentile spectrum">>], captions(Spectrum)),
    ?assertNotEqual(nomatch, binary:match(Spectrum, <<"data-y-scale=\"log\"">>)),
    ?assertMatch([<<"latency (", _/binary>>], texts(Spectrum, <<"label y-label">>)),
    [D] = attrs(Spectrum, <<"path">>, <<"spectrum">>, <<"d">>),
    Ys = [binary_to_float(Y) || [_, Y] <- re_all(D, <<"[ML]([0-9.]+),([0-9.]+)">>)],
    ?assert(length(Ys) >= 5),
    ?assertEqual(lists:reverse(lists:sort(Ys)), Ys),
    Results = lists:append([captions(R) || R <- figures(Dom, <<"results">>)]),
    ?assertEqual([<<"amqp: consumer latency (us)">>, <<"amqp: received (msg/s)">>, <<"amqp: sent (msg/s)">>],
                 lists:sort(Results)),
    [SentFig] = [S || S <- figures(Dom, <<"timeseries">>), captions(S) =:= [<<"amqp: sent (msg/s)">>]],
    ?assertEqual([<<"msg/s">>], texts(SentFig, <<"label y-label">>)),
    %% (its intervals on the run's clock: they say when the load started, #35)
    ?assertEqual([<<"s since the run started">>], texts(SentFig, <<"label x-label">>)),
    [Line] = attrs(SentFig, <<"path">>, <<"series">>, <<"d">>),
    ?assertEqual(3, count(Line, <<"M">>) + count(Line, <<"L">>)),
    ?assertNotEqual(nomatch, binary:match(SentFig, <<"the last interval, shorter than the others">>)),
    %% (the legend counts the points drawn)
    ?assertNotEqual(nomatch, binary:match(SentFig, <<"(3 points)">>)).

%% #35: `--metric cpu' measures CPU time per iteration (per repetition
%% in a suite), which its charts titled and labelled `(ns)' alone, as if
%% it were the wall clock's. Two runs (their report compares them), a
%% suite's sweep and a matrix: every title names the workload and the
%% measure, every axis the measure and its unit; the suite's count of
%% runs per repetition is not drawn over seconds, and a matrix's CPU time
%% is not turned into a throughput against schedulers.
cpu_metric_charts(Config) ->
    Unit = <<"(ns|us|ms)">>,
    Run = fun(Name) -> run(Config, Name, ["lists:seq(1, 1000).", "--metric", "cpu", "-d", "50", "-s", "3"]) end,
    Dom = report(Config, "cpu-runs", [Run("cpu-a"), Run("cpu-b")]),
    Cards = figures(Dom, <<"results">>) ++ figures(Dom, <<"points">>) ++ figures(Dom, <<"timeseries">>),
    ?assertEqual(3, length(Cards)),
    [begin
         [Title] = captions(C),
         {match, [U]} = re:run(Title, <<"^lists:seq\\(1, 1000\\)\\.: CPU time per iteration \\(", Unit/binary, "\\)$">>,
                               [{capture, all_but_first, binary}]),
         ?assertEqual([<<"CPU time per iteration (", U/binary, ")">>],
                      (texts(C, <<"label x-label">>) -- [<<"seconds">>, <<"s since the run started">>]) ++ texts(C, <<"label y-label">>))
     end || C <- Cards],
    %% (the comparison's row names the measure its values are in)
    ?assertNotEqual(nomatch, binary:match(Dom, <<"<td>lists:seq(1, 1000). (CPU time per iteration)</td>">>)),
    Sweep = run(Config, "cpu-sweep", ["suite", "fib", "--param", "fib.n=16,18", "--metric", "cpu", "-n", "3"]),
    SDom = report(Config, "cpu-sweep", [Sweep]),
    SCaps = lists:append([captions(F) || F <- figures(SDom, <<"sweep">>)]),
    ct:log("~p", [SCaps]),
    [CpuSweep] = [F || F <- figures(SDom, <<"sweep">>),
                       re:run(hd(captions(F)), <<"^fib: CPU time per repetition \\(", Unit/binary, "\\) against n$">>) =/= nomatch],
    ?assertMatch([<<"CPU time per repetition (", _/binary>>], texts(CpuSweep, <<"label y-label">>)),
    ?assertEqual([], figures(SDom, <<"timeseries">>)),
    %% a suite's CPU time (`fib/cpu') is titled by the point it measures
    %% (its `extra.point'), as its wall-clock twin `fib' is
    Fib = run(Config, "cpu-fib", ["suite", "fib", "--metric", "cpu", "-n", "3"]),
    FDom = report(Config, "cpu-fib", [Fib]),
    FCaps = lists:append([captions(F) || F <- figures(FDom, <<"results">>) ++ figures(FDom, <<"points">>)]),
    ct:log("~p", [FCaps]),
    ?assertMatch([_ | _], [C || C <- FCaps, re:run(C, <<"^fib: CPU time per repetition \\(", Unit/binary, "\\)$">>) =/= nomatch]),
    ?assertEqual([], [C || C <- FCaps, binary:match(C, <<"/cpu">>) =/= nomatch]),
    Matrix = run(Config, "cpu-matrix", ["matrix", "--vm", "+S 1", "--vm", "+S 2", "--metric", "cpu", "-n", "3", "--",
                                        "run", "lists:seq(1, 300).", "-d", "50", "-s", "2"]),
    MDom = report(Config, "cpu-matrix", [Matrix]),
    [MFig] = figures(MDom, <<"matrix">>),
    [MTitle] = captions(MFig),
    {match, [MU]} = re:run(MTitle, <<"^lists:seq\\(1, 300\\)\\.: CPU time per iteration \\(", Unit/binary, "\\) per configuration$">>,
                           [{capture, all_but_first, binary}]),
    ?assertEqual([<<"CPU time per iteration (", MU/binary, ")">>], texts(MFig, <<"label x-label">>)),
    %% each dot is a fresh VM's fastest sample (beamlab_result_compare:vm_level/1)
    [MSub] = subtitles(MFig),
    ?assertNotEqual(nomatch, binary:match(MSub, <<"; dots: repetitions (one fresh VM\x{2019}s fastest sample each), bar: their mean, "/utf8>>), MSub),
    ?assertNotEqual(nomatch, binary:match(MDom, <<"each value the mean of fresh VMs\x{2019} fastest samples"/utf8>>)),
    ?assertEqual([], figures(MDom, <<"scaling">>)).

%% #35: a CPU matrix interrupted (SIGINT to its group, as Ctrl-C) before
%% any repetition finished: what its values would have been follows the
%% metric as a complete one's does (beamlab_result_compare:vm_levels/1):
%% the text and the report say fastest samples (they said "one fresh
%% VM's mean", the rule for no benchmarks at all). The inner run's code
%% marks its start, then waits.
cpu_matrix_interrupted(Config) ->
    Dir = ?config(priv_dir, Config),
    Marker = filename:join(Dir, "cpu-interrupted.marker"),
    F = filename:join(Dir, "cpu-interrupted.json"),
    Code = "ok = file:write_file(\"" ++ Marker ++ "\", <<>>), timer:sleep(60000).",
    H = beamlab_test_util:cli_start_group(["matrix", "--vm", "+S 1", "--vm", "+S 2", "--metric", "cpu", "-n", "2",
                                           "--save=" ++ F, "--", "run", Code, "-d", "100", "-s", "3"], #{}),
    _ = beamlab_test_util:wait_for_file(Marker, "", 120000),
    ok = beamlab_test_util:signal_group(H, "INT"),
    #{out := Out} = R = beamlab_test_util:cli_group_finish(H),
    ct:log("~p", [R]),
    ?assertMatch({match, _}, re:run(Out, "^\\(partial: interrupted", [multiline])),
    ?assertMatch({match, _}, re:run(Out, "each value is one fresh VM's fastest sample$", [multiline])),
    ?assertEqual(nomatch, binary:match(Out, <<"VM's mean">>)),
    {ok, #{benchmarks := [], partial := true}} = beamlab_result:load(F),
    Dom = report(Config, "cpu-interrupted", [F]),
    ?assertNotEqual(nomatch, binary:match(Dom, <<"each value the mean of fresh VMs\x{2019} fastest samples"/utf8>>)).

flame_cards(Dom) ->
    [F || [F] <- re_all(Dom, <<"(<figure class=\"card flamecard\" data-kind=\"flame\">.*?</figure>)">>)].

%% Helpers

%% message_load, two repetitions of a second: a latency spectrum and
%% per-second series, run once for the cases that draw them.
latency_run(Config) ->
    F = filename:join(?config(priv_dir, Config), "latency.json"),
    case filelib:is_regular(F) of
        true -> F;
        false -> run(Config, "latency", ["suite", "message_load", "-n", "2", "--param", "message_load.duration=1000",
                                         "--param", "message_load.warmup=100"])
    end.

%% Issue #35's sweep (ping_pong over five sizes, two payloads), run once
%% for the cases that draw it.
sweep_run(Config) ->
    F = filename:join(?config(priv_dir, Config), "sweep.json"),
    case filelib:is_regular(F) of
        true -> F;
        false -> run(Config, "sweep", ["suite", "ping_pong", "--param", "ping_pong.size=0,10,100,1000,10000",
                                       "--param", "ping_pong.n=2000", "-n", "3"])
    end.

%% A screenshot of the element SELECTOR of the page HTML alone (everything
%% else hidden, so no legend swatch or table counts), decoded: {Width,
%% Height, Bytes per pixel, Pixels}.
screenshot(Config, Name, Html, Selector) ->
    {ok, Page} = file:read_file(Html),
    Isolate = <<"<script>(function () { var el = document.querySelector('", Selector/binary, "');\n"
                "for (var n = el; n && n !== document.body; n = n.parentNode) {\n"
                "  var sibs = n.parentNode ? n.parentNode.children : [];\n"
                "  for (var i = 0; i < sibs.length; i++) if (sibs[i] !== n) sibs[i].style.display = 'none'; } })();</script>">>,
    Shot = filename:join(?config(priv_dir, Config), Name ++ "-shot.html"),
    ok = file:write_file(Shot, [Page, Isolate]),
    Png = filename:join(?config(priv_dir, Config), Name ++ ".png"),
    {0, _} = chromium_run(Config, ["--hide-scrollbars", "--force-device-scale-factor=1", "--window-size=800,600",
                                   "--screenshot=" ++ Png, "file://" ++ Shot]),
    {ok, Bin} = file:read_file(Png),
    png_decode(Bin).

%% The dash pattern of each line of class CLASS (`solid': none).
dashes(Fig, Class) ->
    [case re:run(P, <<"stroke-dasharray=\"([^\"]*)\"">>, [{capture, all_but_first, binary}]) of
         {match, [D]} -> D;
         nomatch -> solid
     end || [P] <- re_all(Fig, <<"(<path [^>]*class=\"", Class/binary, "\"[^>]*>)">>)].

%% Pixels within 6 of colour {R, G, B} on every channel.
colour_pixels({_W, _H, Bpp, Pixels}, {R, G, B}) ->
    length([x || <<R1, G1, B1, _:(Bpp - 3)/binary>> <= Pixels,
                 abs(R1 - R) =< 6, abs(G1 - G) =< 6, abs(B1 - B) =< 6]).

%% An 8-bit RGB or RGBA, non-interlaced PNG (what Chromium writes).
png_decode(<<137, "PNG", 13, 10, 26, 10, Chunks/binary>>) ->
    png_chunks(Chunks, undefined, []).

png_chunks(<<Len:32, Type:4/binary, Data:Len/binary, _Crc:32, Rest/binary>>, Hdr, Idat) ->
    case Type of
        <<"IHDR">> ->
            <<W:32, H:32, 8, Colour, _:3/binary>> = Data,
            png_chunks(Rest, {W, H, case Colour of 2 -> 3; 6 -> 4 end}, Idat);
        <<"IDAT">> -> png_chunks(Rest, Hdr, [Data | Idat]);
        <<"IEND">> ->
            {W, H, Bpp} = Hdr,
            Raw = zlib:uncompress(iolist_to_binary(lists:reverse(Idat))),
            {W, H, Bpp, png_unfilter(Raw, W * Bpp, Bpp, binary:copy(<<0>>, W * Bpp), [])};
        _ -> png_chunks(Rest, Hdr, Idat)
    end.

png_unfilter(<<>>, _Stride, _Bpp, _Prev, Acc) ->
    iolist_to_binary(lists:reverse(Acc));
png_unfilter(Raw, Stride, Bpp, Prev, Acc) ->
    <<Filter, Line:Stride/binary, Rest/binary>> = Raw,
    Row = png_row(Filter, Line, Prev, Bpp),
    png_unfilter(Rest, Stride, Bpp, Row, [Row | Acc]).

png_row(Filter, Line, Prev, Bpp) ->
    Up = binary_to_list(Prev),
    Out = png_row(Filter, binary_to_list(Line), Up, lists:duplicate(Bpp, 0), lists:duplicate(Bpp, 0), []),
    list_to_binary(Out).

%% Left (A) and upper-left (C) bytes are the last Bpp bytes decoded / above.
png_row(_F, [], _Up, _As, _Cs, Acc) ->
    lists:reverse(Acc);
png_row(F, [X | Xs], [B | Up], [A | As], [C | Cs], Acc) ->
    V = case F of
            0 -> X;
            1 -> X + A;
            2 -> X + B;
            3 -> X + (A + B) div 2;
            4 -> X + paeth(A, B, C)
        end band 255,
    png_row(F, Xs, Up, As ++ [V], Cs ++ [B], [V | Acc]).

paeth(A, B, C) ->
    P = A + B - C,
    Pa = abs(P - A), Pb = abs(P - B), Pc = abs(P - C),
    if Pa =< Pb, Pa =< Pc -> A;
       Pb =< Pc -> B;
       true -> C
    end.

render(Config, Name, Runs) ->
    Path = filename:join(?config(priv_dir, Config), Name),
    ok = beamlab_report_html:write(Path, Runs),
    Dom = dump_dom(Config, Path),
    layout_ok(Dom),
    {beamlab_test_util:dom_body(Dom), Dom}.

%% What the page's own layout check (priv/report/layout.js) found as
%% Chromium laid it out: no point or band outside its axis, no label cut
%% off, no table running off the page, no word broken in a title, nothing
%% wider than its card.
layout_ok(Dom) ->
    Problems = beamlab_test_util:dom_attr(beamlab_test_util:dom_body(Dom), <<"data-layout">>),
    ct:log("layout: ~ts", [Problems]),
    ?assertEqual(<<>>, Problems).

dump_dom(Config, Path) ->
    {0, Dom} = chromium_run(Config, ["--dump-dom", "file://" ++ Path]),
    ?assertNotEqual(nomatch, binary:match(Dom, <<"</html>">>)),
    Dom.

chromium_run(Config, Args) ->
    UserDir = filename:join(?config(priv_dir, Config),
                            "chromium-" ++ integer_to_list(erlang:unique_integer([positive]))),
    ok = filelib:ensure_dir(filename:join(UserDir, "x")),
    Flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--user-data-dir=" ++ UserDir],
    %% Chromium logs D-Bus noise on stderr; only stdout is the DOM.
    sh_quiet([?config(chromium, Config) | Flags ++ Args]).

count(Bin, Pattern) ->
    length(binary:matches(Bin, Pattern)).

%% A real run through the escript, saved under the suite's directory
%% (--save goes before a matrix's inner command).
run(Config, Name, [First | Rest]) ->
    F = filename:join(?config(priv_dir, Config), Name ++ ".json"),
    #{code := 0} = R = beamlab_test_util:cli([First, "--save=" ++ F | Rest]),
    ct:log("~ts~n~ts", [maps:get(out, R), maps:get(err, R)]),
    F.

%% `beamlab report FILES' through the escript, rendered by Chromium: the
%% DOM, checked for script errors.
report(Config, Name, Files) ->
    Out = filename:join(?config(priv_dir, Config), Name ++ ".html"),
    #{code := 0} = beamlab_test_util:cli(["report" | Files] ++ ["-o", Out]),
    Dom = dump_dom(Config, Out),
    ?assertEqual(<<>>, beamlab_test_util:dom_attr(beamlab_test_util:dom_body(Dom), <<"data-errors">>)),
    layout_ok(Dom),
    Dom.

%% The charts of a kind: each <figure data-kind=KIND> up to the end of its
%% own chart (a nested figure's end is far enough for the assertions).
figures(Dom, Kind) ->
    [F || [F] <- re_all(Dom, <<"(<figure class=\"card\" data-kind=\"", Kind/binary, "\">.*?</figure>)">>)].

%% The text of every figure caption.
captions(Bin) ->
    [T || [T] <- re_all(Bin, <<"<figcaption>([^<]*)</figcaption>">>)].

%% The text of every card's subtitle (the line under its caption).
subtitles(Bin) ->
    [T || [T] <- re_all(Bin, <<"</figcaption><div class=\"muted\">([^<]*)</div>">>)].

%% The x axis' tick labels.
xticks(Bin) ->
    [T || [T] <- re_all(Bin, <<"<text [^>]*data-axis=\"x\"[^>]*>([^<]*)</text>">>)].

%% An attribute of every element TAG of class CLASS.
attrs(Bin, Tag, Class, Attr) ->
    [V || [V] <- re_all(Bin, <<"<", Tag/binary, " [^>]*class=\"", Class/binary, "\"[^>]*", Attr/binary, "=\"([^\"]*)\"">>)]
        ++ [V || [V] <- re_all(Bin, <<"<", Tag/binary, " [^>]*", Attr/binary, "=\"([^\"]*)\"[^>]*class=\"", Class/binary, "\"">>)].

%% The text of every <text> element of class CLASS.
texts(Bin, Class) ->
    [T || [T] <- re_all(Bin, <<"<text [^>]*class=\"", Class/binary, "\"[^>]*>([^<]*)</text>">>)].

re_all(Bin, Re) ->
    case re:run(Bin, Re, [global, dotall, unicode, {capture, all_but_first, binary}]) of
        {match, M} -> M;
        nomatch -> []
    end.

sh(Argv) ->
    run_port(["/bin/sh", "-c", "exec \"$0\" \"$@\" 2>&1" | Argv]).

sh_quiet(Argv) ->
    run_port(["/bin/sh", "-c", "exec \"$0\" \"$@\" 2>/dev/null" | Argv]).

run_port([Exe | Args]) ->
    Port = open_port({spawn_executable, Exe}, [{args, Args}, binary, exit_status]),
    beamlab_test_util:port_output(Port, 120000).
