-module(profile_SUITE).
%% `beamlab profile' end to end through the escript, with Linux perf:
%% a known hot Erlang function and a known hot BIF in the top 3, folded
%% stacks that parse back, --pid on a fresh VM (with and without perf
%% support), --node, a target that exits mid-profile, one-line errors, and
%% the report's flame graph in headless Chromium (renders, a click zooms),
%% and its differential: a known hot function made colder is blue, with a
%% negative change in the table.
-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-export([all/0, init_per_suite/1, end_per_suite/1]).
-export([hot_function_and_bif_in_top3/1, pid_of_fresh_vm/1, pid_without_perf_support/1,
         node_of_fresh_vm/1, target_exits_mid_profile/1, errors_are_one_line/1,
         flame_graph_renders_and_zooms/1, invm_profilers_list_the_runner/1,
         memory_per_iteration/1, dwarf_call_graph/1, suite_memory_per_repetition/1,
         suite_memory_counts_spawned_processes/1, duration_stops_the_command/1,
         differential_hot_to_cold/1]).

all() ->
    [invm_profilers_list_the_runner, memory_per_iteration, suite_memory_per_repetition,
     suite_memory_counts_spawned_processes,
     errors_are_one_line, hot_function_and_bif_in_top3, duration_stops_the_command, pid_of_fresh_vm, pid_without_perf_support,
     node_of_fresh_vm, target_exits_mid_profile, dwarf_call_graph, flame_graph_renders_and_zooms,
     differential_hot_to_cold].

init_per_suite(Config) ->
    case os:find_executable("perf") of
        false ->
            {skip, "perf is not installed (Debian package linux-perf); CI installs it"};
        _ ->
            Dir = ?config(priv_dir, Config),
            Src = filename:join(Dir, "prof_hot.erl"),
            ok = file:write_file(Src, hot_module()),
            {ok, prof_hot} = compile:file(Src, [{outdir, Dir}]),
            [{hot_dir, Dir} | Config]
    end.

end_per_suite(_Config) ->
    ok.

%% A tight Erlang loop (prof_hot:spin/2) and a BIF that does its work in
%% its own C function (lists:member/2, lists_member_2 in beam.smp).
hot_module() ->
    <<"-module(prof_hot).\n"
      "-export([work/0, spin/2, forever/0]).\n"
      "work() ->\n"
      "    L = case persistent_term:get(prof_hot_list, undefined) of\n"
      "            undefined -> X = lists:seq(1, 20000), persistent_term:put(prof_hot_list, X), X;\n"
      "            X -> X\n"
      "        end,\n"
      "    false = lists:member(-1, L),\n"
      "    spin(6000, 0).\n"
      "spin(0, A) -> A;\n"
      "spin(N, A) -> spin(N - 1, (A * 31 + N) band 16#ffff).\n"
      "forever() -> work(), forever().\n">>.

hot_function_and_bif_in_top3(Config) ->
    Dir = ?config(hot_dir, Config),
    Folded = filename:join(Dir, "hot.folded"),
    Speedscope = filename:join(Dir, "hot.speedscope.json"),
    #{code := 0, out := Out} = beamlab_test_util:cli(["profile", "--format", "json", "--folded", Folded,
                                                      "--speedscope", Speedscope, "--",
                                                      "run", "prof_hot:work().", "-pa", Dir, "-s", "2"]),
    Doc = doc(Out),
    #{kind := profile, extra := #{<<"profile">> := P}, benchmarks := [_]} = Doc,
    Top3 = [N || #{<<"name">> := N} <- lists:sublist(maps:get(<<"functions">>, P), 3)],
    ct:log("top 3: ~p", [Top3]),
    ?assert(lists:member(<<"prof_hot:spin/2">>, Top3)),
    ?assert(lists:member(<<"lists_member_2">>, Top3)),
    [Member] = [F || F = #{<<"name">> := <<"lists_member_2">>} <- maps:get(<<"functions">>, P)],
    ?assertMatch(#{<<"category">> := <<"emulator">>, <<"note">> := <<"BIF lists:member/2">>}, Member),
    %% The folded stacks parse back, root first (thread type), and hold every sample.
    {ok, Text} = file:read_file(Folded),
    {ok, Stacks} = beamlab_profile_stacks:parse_folded(Text),
    ?assertEqual(maps:get(<<"samples">>, P), lists:sum([C || {_, C} <- Stacks])),
    ?assert(lists:all(fun({[Root | _], _}) ->
                              lists:member(Root, [<<"scheduler">>, <<"dirty_cpu">>, <<"dirty_io">>, <<"other">>])
                      end, Stacks)),
    ?assert(lists:any(fun({Frames, _}) -> lists:member(<<"prof_hot:spin/2">>, Frames) end, Stacks)),
    %% speedscope's file holds the same stacks, valid against its schema.
    ok = beamlab_test_util:json_schema_valid("speedscope.schema.json", Speedscope),
    {ok, SText} = file:read_file(Speedscope),
    {ok, #{<<"shared">> := #{<<"frames">> := SFrames}, <<"profiles">> := [#{<<"weights">> := Ws}]}} =
        beamlab_json:decode(SText),
    ?assertEqual(maps:get(<<"samples">>, P), lists:sum(Ws)),
    ?assert(lists:member(#{<<"name">> => <<"prof_hot:spin/2">>}, SFrames)),
    %% The text view is the top table.
    #{code := 0, out := TextOut} = beamlab_test_util:cli(["profile", "--top", "5", "--",
                                                          "run", "prof_hot:work().", "-pa", Dir, "-s", "1"]),
    ?assertNotEqual(nomatch, binary:match(TextOut, <<"prof_hot:spin/2">>)),
    ?assertNotEqual(nomatch, binary:match(TextOut, <<"categories: erlang">>)).

%% --duration stops a longer command as Ctrl-C would: it keeps what it
%% measured, and the profile is shown.
duration_stops_the_command(Config) ->
    Dir = ?config(hot_dir, Config),
    #{code := 0, out := Out, err := Err} =
        beamlab_test_util:cli(["profile", "--duration", "3", "--format", "json", "--",
                               "run", "prof_hot:work().", "-pa", Dir, "-s", "60"]),
    ct:log("~ts", [Err]),
    #{extra := #{<<"profile">> := P}} = doc(Out),
    %% (The inner run alone would take 60 samples of a second. What the
    %% 3 s window holds depends on how far the VM got under the machine's
    %% load, so the ranking of functions is left to
    %% hot_function_and_bif_in_top3, which profiles a run to its end.)
    ?assert(maps:get(<<"elapsed_ms">>, P) < 30000),
    ?assert(maps:get(<<"samples">>, P) > 0).

pid_of_fresh_vm(Config) ->
    {Port, OsPid} = start_vm(Config, ["+JPperf", "true"], "prof_hot:forever()"),
    try
        #{code := 0, out := Out} = beamlab_test_util:cli(["profile", "--pid", integer_to_list(OsPid),
                                                          "--duration", "1", "--format", "json"]),
        #{extra := #{<<"profile">> := P}} = doc(Out),
        ?assertEqual(true, maps:get(<<"perf_support">>, P)),
        ?assert(maps:get(<<"samples">>, P) > 20),
        [#{<<"name">> := First} | _] = maps:get(<<"functions">>, P),
        ct:log("first: ~ts", [First]),
        ?assert(lists:member(<<"prof_hot:spin/2">>, top_names(P, 3))),
        ?assert(maps:get(<<"scheduler">>, maps:get(<<"threads">>, P)) > 20)
    after
        stop_vm(Port, OsPid)
    end.

pid_without_perf_support(Config) ->
    {Port, OsPid} = start_vm(Config, [], "prof_hot:forever()"),
    try
        #{code := 0, out := Out} = beamlab_test_util:cli(["profile", "--pid", integer_to_list(OsPid),
                                                          "--duration", "1"]),
        ?assertNotEqual(nomatch, binary:match(Out, <<"started without perf support">>)),
        ?assertNotEqual(nomatch, binary:match(Out, <<"+JPperf true">>)),
        ?assertNotEqual(nomatch, binary:match(Out, <<"[unnamed JIT code]">>))
    after
        stop_vm(Port, OsPid)
    end.

node_of_fresh_vm(Config) ->
    Name = "prof_peer_" ++ integer_to_list(erlang:unique_integer([positive])),
    {Port, OsPid} = start_vm(Config, ["+JPperf", "true", "-sname", Name, "-setcookie", "profsecret"],
                             "prof_hot:forever()"),
    try
        {ok, Host} = inet:gethostname(),
        Node = Name ++ "@" ++ Host,
        beamlab_test_util:wait_until(fun() ->
                                             string:find(os:cmd("epmd -names"), Name) =/= nomatch
                                     end, 20000),
        #{code := 0, out := Out} = beamlab_test_util:cli(["profile", "--node", Node, "--cookie", "profsecret",
                                                          "--duration", "1", "--format", "json"]),
        #{extra := #{<<"profile">> := P}, params := #{<<"target">> := #{<<"os_pid">> := Pid}}} = doc(Out),
        ?assertEqual(OsPid, Pid),
        ?assert(lists:member(<<"prof_hot:spin/2">>, top_names(P, 3))),
        %% A wrong cookie: one line.
        R = beamlab_test_util:cli(["profile", "--node", Node, "--cookie", "wrong", "--duration", "1"]),
        ?assertMatch(#{code := 1}, R),
        ok = beamlab_test_util:assert_one_line_error(R)
    after
        stop_vm(Port, OsPid)
    end.

%% The VM halts after about 6 s of a 20 s profile: what was recorded
%% is kept and the profile says so.
target_exits_mid_profile(Config) ->
    {Port, OsPid} = start_vm(Config, ["+JPperf", "true"],
                             "spawn(fun() -> prof_hot:forever() end), timer:sleep(6000), halt()"),
    #{code := 0, out := Out} = beamlab_test_util:cli(["profile", "--pid", integer_to_list(OsPid),
                                                      "--duration", "20", "--format", "json"]),
    #{extra := #{<<"profile">> := P}} = doc(Out),
    ?assertEqual(true, maps:get(<<"target_exited">>, P)),
    ?assert(maps:get(<<"elapsed_ms">>, P) < 19000),
    ?assert(maps:get(<<"samples">>, P) > 0),
    stop_vm(Port, OsPid).

%% DWARF unwinding keeps the C callers of a C leaf: lists:member/2's own
%% function under the JIT's BIF call.
dwarf_call_graph(Config) ->
    {Port, OsPid} = start_vm(Config, ["+JPperf", "true"], "prof_hot:forever()"),
    try
        #{code := 0, out := Out} = beamlab_test_util:cli(["profile", "--pid", integer_to_list(OsPid), "--freq", "299",
                                                          "--call-graph", "dwarf", "--duration", "1",
                                                          "--callers", "lists_member_2"]),
        ct:log("~ts", [Out]),
        ?assertNotEqual(nomatch, binary:match(Out, <<"callers of lists_member_2">>)),
        ?assertNotEqual(nomatch, binary:match(Out, <<"prof_hot:spin/2">>))
    after
        stop_vm(Port, OsPid)
    end.

errors_are_one_line(Config) ->
    Dir = ?config(hot_dir, Config),
    Check = fun(Args, Env, Code, Expect) ->
                    R = beamlab_test_util:cli(Args, #{env => Env}),
                    ct:log("~p -> ~p", [Args, R]),
                    ?assertMatch(#{code := Code}, R),
                    ok = beamlab_test_util:assert_one_line_error(R),
                    ?assertNotEqual(nomatch, binary:match(maps:get(err, R), Expect))
            end,
    Check(["profile"], [], 2, <<"nothing to profile">>),
    Check(["profile", "--pid", "999999999"], [], 1, <<"no process with OS pid">>),
    Check(["profile", "--pid", "1"], [], 1, <<"not an Erlang VM">>),
    Check(["profile", "--", "run", "1."], [{"BEAMLAB_PERF", filename:join(Dir, "no-perf")}], 1,
          <<"Debian package linux-perf">>),
    Check(["profile", "--", "run", "1."], [{"BEAMLAB_PERF", "/bin/false"}], 1, <<"perf does not run here">>),
    Check(["profile", "--node", "nohost", "--duration", "1"], [], 1, <<"expected NAME@HOST">>),
    Check(["profile", "--pid", "1", "--", "run", "1."], [], 2, <<"not both">>).

flame_graph_renders_and_zooms(Config) ->
    case beamlab_test_util:chromium() of
        false ->
            {skip, "chromium is not installed (Debian package 'chromium')"};
        Chromium ->
            Dir = ?config(hot_dir, Config),
            Saved = [begin
                         F = filename:join(Dir, "p" ++ integer_to_list(I) ++ ".json"),
                         #{code := 0} = beamlab_test_util:cli(["profile", "--label", "hot", "--save=" ++ F, "--",
                                                               "run", "prof_hot:work().", "-pa", Dir, "-s", "1"]),
                         F
                     end || I <- [1, 2]],
            Html = filename:join(Dir, "flame.html"),
            #{code := 0} = beamlab_test_util:cli(["report" | Saved] ++ ["-o", Html]),
            {ok, Page} = file:read_file(Html),
            %% Click the widest frame above the thread root of the first graph,
            %% after the page has drawn, and record what the graph shows.
            Click = <<"<script>(function () {"
                      " var svg = document.querySelector('svg.flame');"
                      " var before = svg.querySelectorAll('rect.frame').length;"
                      " var best = null, bw = 0;"
                      " svg.querySelectorAll('rect.frame').forEach(function (r) {"
                      "   var n = r.getAttribute('data-name'), w = parseFloat(r.getAttribute('width'));"
                      "   if (n.indexOf('prof_hot:spin') === 0 && w > bw) { best = r; bw = w; } });"
                      " best.parentNode.dispatchEvent(new MouseEvent('click', { bubbles: true }));"
                      " document.body.setAttribute('data-test-before', String(before));"
                      " document.body.setAttribute('data-test-after', String(svg.querySelectorAll('rect.frame').length));"
                      " document.body.setAttribute('data-test-width', svg.querySelector('rect.frame[data-name^=\"prof_hot:spin\"]').getAttribute('width'));"
                      " var box = svg.parentNode, input = box.querySelector('input');"
                      " input.value = 'spin'; input.dispatchEvent(new Event('input'));"
                      " document.body.setAttribute('data-test-matches', String(svg.querySelectorAll('rect.match').length));"
                      " document.body.setAttribute('data-test-matched', box.querySelector('.matched').textContent);"
                      "})();</script></body>">>,
            Clicked = binary:replace(Page, <<"</body>">>, Click),
            ClickFile = filename:join(Dir, "flame-click.html"),
            ok = file:write_file(ClickFile, Clicked),
            Dom = beamlab_test_util:dump_dom(Chromium, Dir, Html),
            Body = beamlab_test_util:dom_body(Dom),
            ?assertEqual(<<>>, beamlab_test_util:dom_attr(Body, <<"data-errors">>)),
            %% The page's layout check: every flame graph within its card.
            ?assertEqual(<<>>, beamlab_test_util:dom_attr(Body, <<"data-layout">>)),
            ?assertNotEqual(nomatch, binary:match(Dom, <<"<section id=\"profiles\"">>)),
            %% Two flame graphs and the differential one.
            ?assertEqual(3, length(binary:matches(Dom, <<"<svg class=\"flame\"">>))),
            ?assertNotEqual(nomatch, binary:match(Dom, <<"Differential: ">>)),
            ?assertNotEqual(nomatch, binary:match(Dom, <<"data-name=\"prof_hot:spin/2\"">>)),
            %% #35: a frame too narrow for its whole name shows what tells it
            %% apart: an Erlang function's function/arity (cut with `..' if
            %% need be), never the first letters of its module
            %% (`rabbit_que..'); the frame's title holds the whole name.
            Labels = [{N, T} || [N, T] <- re_all(Dom, <<"<rect class=\"frame\" [^>]*data-name=\"([^\"&]*)\"[^>]*>"
                                                         "</rect><text [^>]*>([^<]*)</text>">>)],
            ct:log("frame labels: ~p", [Labels]),
            ?assert(length(Labels) >= 3),
            [?assert(T =:= N orelse label_of(N, T)) || {N, T} <- Labels],
            CDom = beamlab_test_util:dump_dom(Chromium, Dir, ClickFile),
            CBody = beamlab_test_util:dom_body(CDom),
            ?assertEqual(<<>>, beamlab_test_util:dom_attr(CBody, <<"data-errors">>)),
            ?assertNotEqual(nomatch, binary:match(CDom, <<"data-zoom=\"prof_hot:spin/2\"">>)),
            Before = binary_to_integer(beamlab_test_util:dom_attr(CBody, <<"data-test-before">>)),
            After = binary_to_integer(beamlab_test_util:dom_attr(CBody, <<"data-test-after">>)),
            ct:log("frames before ~b, after the click ~b, zoomed width ~ts",
                   [Before, After, beamlab_test_util:dom_attr(CBody, <<"data-test-width">>)]),
            ?assertNotEqual(Before, After),
            %% The clicked frame fills the graph's width.
            ?assert(binary_to_float(beamlab_test_util:dom_attr(CBody, <<"data-test-width">>)) > 1100.0),
            %% A search highlights the matching frames and gives their share.
            ?assert(binary_to_integer(beamlab_test_util:dom_attr(CBody, <<"data-test-matches">>)) > 0),
            ?assertMatch(<<"matched ", _/binary>>, beamlab_test_util:dom_attr(CBody, <<"data-test-matched">>))
    end.

%% hotmod:work() spends 80% of its loop iterations in hot_loop/2, then,
%% changed, 20%. Profiled before and after (no --label: the two profiles
%% pair by their benchmark, hotmod:work().), the report's differential
%% flame graph paints every hot_loop/2 frame blue (its share fell) and
%% other_loop/2 red, and the table of changed functions says so with signs.
differential_hot_to_cold(Config) ->
    case beamlab_test_util:chromium() of
        false ->
            {skip, "chromium is not installed (Debian package 'chromium')"};
        Chromium ->
            Base = filename:join(?config(priv_dir, Config), "hotcold"),
            Saved = [begin
                         Dir = filename:join(Base, Name),
                         ok = filelib:ensure_path(Dir),
                         Src = filename:join(Dir, "hotmod.erl"),
                         ok = file:write_file(Src, hotmod(Hot, Other)),
                         {ok, hotmod} = compile:file(Src, [{outdir, Dir}]),
                         F = filename:join(Base, Name ++ ".json"),
                         #{code := 0} = beamlab_test_util:cli(["profile", "--save=" ++ F, "--",
                                                               "run", "hotmod:work().", "-pa", Dir, "-s", "2"]),
                         F
                     end || {Name, Hot, Other} <- [{"before", 8000, 2000}, {"after", 2000, 8000}]],
            Html = filename:join(Base, "diff.html"),
            #{code := 0} = beamlab_test_util:cli(["report" | Saved] ++ ["-o", Html]),
            Dom = beamlab_test_util:dump_dom(Chromium, Base, Html),
            ?assertEqual(<<>>, beamlab_test_util:dom_attr(beamlab_test_util:dom_body(Dom), <<"data-errors">>)),
            ?assertEqual(<<>>, beamlab_test_util:dom_attr(beamlab_test_util:dom_body(Dom), <<"data-layout">>)),
            {match, [Diff]} = re:run(Dom, <<"(<figure [^>]*data-kind=\"flame-diff\".*?</figure>)">>,
                                     [dotall, {capture, all_but_first, binary}]),
            Frames = fun(Fn) ->
                             [{binary_to_float(C), F}
                              || [F, C] <- re_all(Diff, <<"<rect [^>]*fill=\"([^\"]*)\" data-name=\"hotmod:", Fn/binary,
                                                          "\" [^>]*data-change=\"([^\"]*)\"">>)]
                     end,
            Hot = Frames(<<"hot_loop/2">>),
            Other = Frames(<<"other_loop/2">>),
            ct:log("hot_loop frames ~p~nother_loop frames ~p", [Hot, Other]),
            ?assertNotEqual([], Hot),
            ?assertNotEqual([], Other),
            %% Cooler: a negative change and blue (rgb(c,c,235), c < 235).
            %% Judged on the frame with the largest change: perf's sampling
            %% puts a stray sample of a function under another stack now and
            %% then (a hot_loop frame of +0.17 pp beside its -43 pp one).
            Main = fun(Fs) -> lists:last(lists:sort(fun({A, _}, {B, _}) -> abs(A) =< abs(B) end, Fs)) end,
            {HotC, HotF} = Main(Hot),
            ?assert(HotC < 0 andalso blue(HotF)),
            {OtherC, OtherF} = Main(Other),
            ?assert(OtherC > 0 andalso not blue(OtherF)),
            [[HotRow]] = re_all(Diff, <<"<tr class=\"(cooler)\" data-function=\"hotmod:hot_loop/2\" data-change=\"-[0-9.]+\"">>),
            ?assertEqual(<<"cooler">>, HotRow),
            ?assertMatch([_], re_all(Diff, <<"<tr class=\"hotter\" data-function=\"hotmod:other_loop/2\" data-change=\"[0-9.]+\"">>)),
            %% The legend is in percentage points.
            ?assertMatch({match, _}, re:run(Diff, <<"cooler \x{2212}[0-9.]+ pp"/utf8>>, [unicode])),
            %% #35: the scale's ends and the table beside it show one
            %% maximum: the table's largest change (the scale took its own
            %% from the frames' paths, a different number).
            [[Cool]] = re_all(Diff, <<"<span class=\"cooler\">cooler \x{2212}([0-9.]+ pp)</span>"/utf8>>),
            [[Hotter]] = re_all(Diff, <<"<span class=\"hotter\">\\+([0-9.]+ pp) hotter</span>">>),
            Rows = [{abs(number(C)), Text} || [C, Text] <- re_all(Diff, <<"<tr class=\"(?:hotter|cooler)\" data-function=\"[^\"]*\" "
                                                                      "data-change=\"([^\"]*)\">.*?<td class=\"num change\">"
                                                                      "[+\x{2212}]([0-9.]+ pp)</td>"/utf8>>)],
            {_, Largest} = lists:last(lists:keysort(1, Rows)),
            ct:log("scale ~ts / ~ts, table's largest ~ts", [Cool, Hotter, Largest]),
            ?assertEqual({Largest, Largest}, {Cool, Hotter})
    end.

number(B) ->
    case string:to_float(B) of
        {F, <<>>} -> F;
        _ -> binary_to_integer(B)
    end.

%% A shortened frame text T of the frame named N: a function/arity of
%% N's, whole or cut with `..' (never a module's prefix), else N cut.
label_of(N, T) ->
    Cut = fun(Whole) ->
                  case binary:longest_common_suffix([T, <<"..">>]) of
                      2 -> Kept = binary:part(T, 0, byte_size(T) - 2),
                           binary:longest_common_prefix([Whole, Kept]) =:= byte_size(Kept);
                      _ -> false
                  end
          end,
    case re:run(N, <<"^[^:;]+:(.+/[0-9]+)$">>, [{capture, all_but_first, binary}]) of
        {match, [FA]} -> T =:= FA orelse Cut(FA);
        nomatch -> Cut(N)
    end.

hotmod(Hot, Other) ->
    iolist_to_binary(
      ["-module(hotmod).\n-export([work/0]).\n",
       io_lib:format("work() -> hot_loop(~b, 0), other_loop(~b, 0).~n", [Hot, Other]),
       "hot_loop(0, A) -> A;\nhot_loop(N, A) -> hot_loop(N - 1, (A * 31 + N) band 16#ffff).\n",
       "other_loop(0, A) -> A;\nother_loop(N, A) -> other_loop(N - 1, (A * 31 + N) band 16#ffff).\n"]).

blue(Fill) ->
    case re:run(Fill, <<"^rgb\\(([0-9]+),([0-9]+),235\\)$">>, [{capture, all_but_first, list}]) of
        {match, [R, G]} -> list_to_integer(R) < 235 andalso R =:= G;
        nomatch -> false
    end.

re_all(Bin, Re) ->
    case re:run(Bin, Re, [global, dotall, unicode, {capture, all_but_first, binary}]) of
        {match, M} -> M;
        nomatch -> []
    end.

%% The in-VM profilers run after the samples and list the runner's function.
invm_profilers_list_the_runner(Config) ->
    Dir = ?config(hot_dir, Config),
    [begin
         #{code := 0, out := Out} = beamlab_test_util:cli(["run", "prof_hot:work().", "-pa", Dir, "-s", "1",
                                                           "--profile", Tool, "--format", "json"]),
         #{benchmarks := [#{extra := #{<<"profile">> := P}}]} = doc(Out),
         ct:log("~s: ~p", [Tool, P]),
         ?assertEqual(list_to_binary(Tool), maps:get(<<"tool">>, P)),
         Names = [F || #{<<"function">> := F} <- maps:get(<<"rows">>, P)],
         ?assert(lists:member(<<"prof_hot:spin/2">>, Names)),
         [Spin] = [R || R = #{<<"function">> := <<"prof_hot:spin/2">>} <- maps:get(<<"rows">>, P)],
         ?assert(maps:get(<<"calls">>, Spin) > 1000)
     end || Tool <- ["eprof", "fprof", "cprof"]],
    %% The text view prints the table after the run's; msacc with -v.
    #{code := 0, out := Text} = beamlab_test_util:cli(["run", "prof_hot:work().", "-pa", Dir, "-s", "1",
                                                       "--profile", "eprof", "-v", "--msacc"]),
    ?assertNotEqual(nomatch, binary:match(Text, <<"eprof profile">>)),
    ?assertNotEqual(nomatch, binary:match(Text, <<"microstate accounting">>)),
    %% tprof needs OTP 27.
    case list_to_integer(erlang:system_info(otp_release)) >= 27 of
        true -> ok;
        false ->
            R = beamlab_test_util:cli(["run", "ok.", "-s", "1", "--profile", "tprof"]),
            ?assertMatch(#{code := 2}, R),
            ok = beamlab_test_util:assert_one_line_error(R)
    end.

%% A runner that builds a 10 000-element list allocates 20 000 words per
%% iteration, also when a spawned process builds it.
memory_per_iteration(_Config) ->
    Words = fun(Code) ->
                    #{code := 0, out := Out} = beamlab_test_util:cli(["run", Code, "-s", "1", "--memory",
                                                                      "--reductions", "--format", "json"]),
                    #{benchmarks := [#{extra := #{<<"per_iteration">> := M}}]} = doc(Out),
                    ct:log("~ts: ~p", [Code, M]),
                    ?assert(maps:get(<<"reductions">>, M) > 0),
                    M
            end,
    Within = fun(Expected, Got) -> ?assert(abs(Got - Expected) =< 0.05 * Expected) end,
    M1 = Words("lists:seq(1, 10000)."),
    Within(20000, maps:get(<<"words">>, M1)),
    ?assertEqual(0, maps:get(<<"spawned">>, M1)),
    M2 = Words("r() -> {_, Ref} = spawn_monitor(fun() -> _ = lists:seq(1, 10000), ok end), "
               "receive {'DOWN', Ref, _, _, _} -> ok end."),
    Within(20000, maps:get(<<"words">>, M2)),
    ?assertEqual(1, maps:get(<<"spawned">>, M2)),
    %% The timed figures come first, untouched: a plain table row is there.
    #{code := 0, out := Text} = beamlab_test_util:cli(["run", "lists:seq(1, 10000).", "-s", "1", "--memory"]),
    ?assertNotEqual(nomatch, binary:match(Text, <<"words (">>)).

%% `suite --memory': one traced repetition per point, its spawned processes
%% counted; the measured repetitions stay as many as asked.
suite_memory_per_repetition(_Config) ->
    #{code := 0, out := Out} = beamlab_test_util:cli(["suite", "spawn", "--param", "spawn.n=2000",
                                                      "--param", "spawn.variant=monitor", "-n", "2",
                                                      "--memory", "--format", "json"]),
    #{benchmarks := [B | _]} = doc(Out),
    #{samples := Samples, extra := #{<<"per_repetition">> := M}} = B,
    ct:log("~p", [M]),
    ?assertEqual(2, length(Samples)),
    ?assertEqual(2000, maps:get(<<"spawned">>, M)),
    ?assert(maps:get(<<"words">>, M) > 2000),
    ?assert(maps:get(<<"reductions">>, M) > 0),
    #{code := 0, out := Text} = beamlab_test_util:cli(["suite", "spawn", "--param", "spawn.n=500", "-n", "1",
                                                       "--memory"]),
    ?assertNotEqual(nomatch, binary:match(Text, <<"allocated per repetition">>)).

%% `suite --memory' counts every word the workload's spawned processes
%% allocate, also after their last GC: a user workload spawns 20 processes
%% that each build a 10 000-element list (20 000 words) and exit, half of
%% them (spawn_opt with a large min_heap_size) without any GC at all.
suite_memory_counts_spawned_processes(Config) ->
    Dir = ?config(priv_dir, Config),
    NoDebug = filename:join(Dir, "nodebug"),
    ok = filelib:ensure_path(NoDebug),
    Src = filename:join(Dir, "alloc_kids.erl"),
    ok = file:write_file(Src, alloc_kids_module()),
    {ok, alloc_kids} = compile:file(Src, [debug_info, {outdir, Dir}]),
    {ok, alloc_kids} = compile:file(Src, [{outdir, NoDebug}]),
    Run = fun(Path) ->
                  #{code := 0, out := Out} = beamlab_test_util:cli(["suite", "alloc_kids", "-pa", Path, "-n", "1",
                                                                    "--memory", "--format", "json"]),
                  #{benchmarks := [#{extra := #{<<"per_repetition">> := M}}]} = doc(Out),
                  ct:log("~ts: ~p", [Path, M]),
                  M
          end,
    Expected = 20 * 20000,
    M = Run(Dir),
    ?assertEqual(20, maps:get(<<"spawned">>, M)),
    ?assertEqual(true, maps:get(<<"spawns_wrapped">>, M)),
    ?assert(abs(maps:get(<<"words">>, M) - Expected) =< 0.05 * Expected),
    %% The children's reductions are counted too (each builds its list).
    ?assert(maps:get(<<"reductions">>, M) > 20 * 2000),
    %% Without debug information the module cannot be wrapped: the
    %% processes that never collected are missing, and the output says why.
    M2 = Run(NoDebug),
    ?assert(maps:get(<<"words">>, M2) < 0.75 * Expected),
    ?assertMatch(<<"alloc_kids has no debug information", _/binary>>, maps:get(<<"spawns_wrapped">>, M2)),
    #{code := 0, out := Text} = beamlab_test_util:cli(["suite", "alloc_kids", "-pa", NoDebug, "-n", "1", "--memory"]),
    ?assertNotEqual(nomatch, binary:match(Text, <<"compile it with debug_info">>)).

alloc_kids_module() ->
    <<"-module(alloc_kids).\n"
      "-export([info/0, params/0, setup/1, run/2, teardown/1, kid/1]).\n"
      "info() -> #{name => <<\"alloc_kids\">>, summary => <<\"children build a list and exit\">>,\n"
      "            definition => <<\"P children each build an L-element list\">>, unit => <<\"us\">>,\n"
      "            better => lower, metric => <<\"time\">>, checks => <<\"none\">>}.\n"
      "params() -> [#{key => procs, default => 20, type => pos_integer, help => <<\"children\">>},\n"
      "             #{key => len, default => 10000, type => pos_integer, help => <<\"list length\">>}].\n"
      "setup(_) -> {ok, none}.\n"
      "run(none, #{procs := P, len := L}) ->\n"
      "    T0 = erlang:monotonic_time(),\n"
      "    Half = P div 2,\n"
      "    Refs = [element(2, spawn_monitor(?MODULE, kid, [L])) || _ <- lists:seq(1, Half)]\n"
      "        ++ [element(2, spawn_opt(fun() -> kid(L) end, [monitor, {min_heap_size, 4 * L}]))\n"
      "            || _ <- lists:seq(1, P - Half)],\n"
      "    [receive {'DOWN', R, process, _, normal} -> ok end || R <- Refs],\n"
      "    {ok, #{value => erlang:convert_time_unit(erlang:monotonic_time() - T0, native, microsecond)}}.\n"
      "teardown(_) -> ok.\n"
      "kid(L) -> _ = length(lists:seq(1, L)), ok.\n">>.

%% Helpers

doc(Out) ->
    {ok, J} = beamlab_json:decode(Out),
    {ok, Doc} = beamlab_result:from_json(J),
    Doc.

top_names(P, N) ->
    [Name || #{<<"name">> := Name} <- lists:sublist(maps:get(<<"functions">>, P), N)].

start_vm(Config, Flags, Eval) ->
    Dir = ?config(hot_dir, Config),
    Erl = os:find_executable("erl"),
    Port = open_port({spawn_executable, Erl},
                     [{args, Flags ++ ["-noshell", "-pa", Dir, "-eval", Eval]}, exit_status, binary]),
    {os_pid, OsPid} = erlang:port_info(Port, os_pid),
    %% perf attaches to the threads that exist: wait for the schedulers.
    beamlab_test_util:wait_until(
      fun() ->
              Task = "/proc/" ++ integer_to_list(OsPid) ++ "/task",
              {ok, Tids} = file:list_dir(Task),
              lists:any(fun(T) ->
                                case file:read_file(filename:join([Task, T, "comm"])) of
                                    {ok, C} -> binary:match(C, <<"_scheduler">>) =/= nomatch;
                                    _ -> false
                                end
                        end, Tids)
      end, 20000),
    %% ... and for the evaluated code to run: 0.3 s of CPU time used.
    beamlab_test_util:wait_until(fun() -> cpu_ms(OsPid) >= 300 end, 60000),
    {Port, OsPid}.

cpu_ms(OsPid) ->
    case file:read_file("/proc/" ++ integer_to_list(OsPid) ++ "/stat") of
        {ok, B} ->
            %% After the command name (in parentheses): utime is field 14, stime 15.
            [_, After] = binary:split(B, <<") ">>),
            Fields = binary:split(After, <<" ">>, [global]),
            Ticks = binary_to_integer(lists:nth(12, Fields)) + binary_to_integer(lists:nth(13, Fields)),
            Ticks * 10;
        {error, _} ->
            0
    end.

stop_vm(Port, OsPid) ->
    _ = os:cmd("kill " ++ integer_to_list(OsPid)),
    receive {Port, {exit_status, _}} -> ok after 10000 -> ok end,
    _ = file:delete("/tmp/perf-" ++ integer_to_list(OsPid) ++ ".map"),
    _ = file:delete("/tmp/jit-" ++ integer_to_list(OsPid) ++ ".dump"),
    ok.

