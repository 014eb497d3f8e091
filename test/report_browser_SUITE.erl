-module(report_browser_SUITE).
%% Renders generated HTML reports in headless Chromium and checks, from the
%% dumped DOM, that every chart was drawn and no script error occurred.
-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-export([all/0, init_per_suite/1, end_per_suite/1]).
-export([every_kind_renders/1, single_run_renders/1, long_series_are_downsampled/1,
         script_errors_are_caught/1, screenshot_is_taken/1, cli_report_renders/1,
         hostile_labels_render/1]).

all() ->
    [every_kind_renders, single_run_renders, long_series_are_downsampled,
     script_errors_are_caught, screenshot_is_taken, cli_report_renders, hostile_labels_render].

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
    %% each with its CI error bar.
    ?assertEqual(4, Canvases),
    ?assertEqual(10, count(Dom, <<"class=\"errorbar\"">>)),
    [?assertNotEqual(nomatch, binary:match(Dom, <<"<section id=\"", Id/binary, "\"">>), Id)
     || Id <- [<<"runs">>, <<"compare">>, <<"results">>, <<"distributions">>, <<"timeline">>,
               <<"percentiles">>, <<"schedulers">>, <<"scaling">>, <<"env">>, <<"findings">>]],
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
    Body = beamlab_test_util:dom_body(dump_dom(Config, Out)),
    ?assertEqual(<<>>, beamlab_test_util:dom_attr(Body, <<"data-errors">>)),
    ?assert(binary_to_integer(beamlab_test_util:dom_attr(Body, <<"data-charts-rendered">>)) >= 20).

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

%% Helpers

render(Config, Name, Runs) ->
    Path = filename:join(?config(priv_dir, Config), Name),
    ok = beamlab_report_html:write(Path, Runs),
    Dom = dump_dom(Config, Path),
    {beamlab_test_util:dom_body(Dom), Dom}.

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

sh_quiet(Argv) ->
    run_port(["/bin/sh", "-c", "exec \"$0\" \"$@\" 2>/dev/null" | Argv]).

run_port([Exe | Args]) ->
    Port = open_port({spawn_executable, Exe}, [{args, Args}, binary, exit_status]),
    collect(Port, []).

collect(Port, Acc) ->
    receive
        {Port, {data, D}} -> collect(Port, [D | Acc]);
        {Port, {exit_status, S}} -> {S, iolist_to_binary(lists:reverse(Acc))}
    after 120000 ->
        {os_pid, Pid} = erlang:port_info(Port, os_pid),
        _ = os:cmd("kill " ++ integer_to_list(Pid)),
        error(timeout)
    end.
