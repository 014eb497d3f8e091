%%% Common Test suite for `beamlab doctor', through the built ./beamlab:
%%% each pathology is made to happen on this (2-core) machine and the
%%% doctor must name it and rank the right remedy first; a quiet machine
%%% must raise no critical finding. Every run is short (hidden options:
%%% short loads, one curve point, few repetitions) and adds a decoy
%%% remedy (`+swt very_low', which cures none of them) that the right
%%% remedy must beat. Assertions are about what the doctor says, never
%%% about times.
-module(doctor_SUITE).
-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-export([all/0, suite/0, init_per_suite/1, end_per_suite/1,
         init_per_testcase/2, end_per_testcase/2]).
-export([oversubscribed_taskset/1, cgroup_quota/1, competing_processes/1, busy_waiting/1,
         healthy_quiet/1, quick_text_and_errors/1, interrupted_keeps_what_was_measured/1,
         api_erlang_and_elixir/1, report_page_in_chromium/1]).

-define(DECOY, "+swt very_low").
-define(SBWT, <<"+sbwt none +sbwtdcpu none +sbwtdio none">>).

suite() -> [{timetrap, {minutes, 4}}].

all() ->
    [quick_text_and_errors, api_erlang_and_elixir, oversubscribed_taskset, cgroup_quota, competing_processes,
     busy_waiting, healthy_quiet, interrupted_keeps_what_was_measured, report_page_in_chromium].

init_per_suite(Config) ->
    _ = beamlab_test_util:escript(),
    Config.

end_per_suite(_Config) ->
    ok.

init_per_testcase(_Case, Config) ->
    Config.

end_per_testcase(_Case, Config) ->
    %% Nothing a case started outlives it: the competing burners, the
    %% cgroup it made.
    %% (each case stops what it started itself, in an `after')
    _ = Config,
    ok.

%%--------------------------------------------------------------------

%% The short protocol of every case: one curve point (+S 1) beside the
%% default, 3 repetitions of the remedies, 250 ms loads.
doctor(Extra) ->
    doctor(2, Extra).

%% `Max' of the findings' remedies besides the decoy (1 where the
%% pathology's own finding is the most severe one on any machine).
doctor(Max, Extra) ->
    R = beamlab_test_util:cli(["doctor", "--quick", "--reps", "3", "--curve-reps", "1",
                               "--schedulers", "1", "--probe-ms", "250", "--max-remedies", integer_to_list(Max),
                               "--remedy", ?DECOY, "--format", "json" | Extra],
                              #{timeout => 150000}),
    #{code := Code, out := Out, err := Err} = R,
    ct:log("exit ~b~nstderr:~n~ts", [Code, Err]),
    ?assertEqual(0, Code),
    {ok, Json} = beamlab_json:decode(Out),
    {ok, Doc} = beamlab_result:from_json(Json),
    ct:log("~ts", [beamlab_render_doctor:text(Doc)]),
    Doc.

ids(#{findings := Fs}) -> [Id || #{id := Id} <- Fs].

finding(Id, #{findings := Fs}) ->
    case [F || #{id := I} = F <- Fs, I =:= Id] of
        [F | _] -> F;
        [] -> ct:fail({no_finding, Id, [I || #{id := I} <- Fs]})
    end.

remedies(#{extra := #{<<"remedies">> := Rs}}) -> Rs.

first(Doc) ->
    [R | _] = remedies(Doc),
    R.

name(#{<<"name">> := N}) -> N.

%% The ranking puts `Name' (or a name `Pred' accepts) above the decoy.
above_decoy(Pred, Doc) ->
    Names = [name(R) || R <- remedies(Doc)],
    Pos = fun(P) -> length(lists:takewhile(fun(N) -> not P(N) end, Names)) end,
    ?assert(Pos(Pred) < Pos(fun(N) -> N =:= <<?DECOY>> end)).

ratio(Key, R) -> maps:get(<<"ratio">>, maps:get(Key, R)).

%%--------------------------------------------------------------------

%% The VM restricted to one CPU with 2 schedulers online: oversubscribed,
%% and one scheduler per CPU ranked first.
oversubscribed_taskset(_Config) ->
    case os:find_executable("taskset") of
        false -> {skip, "taskset is not installed"};
        _ ->
            Doc = doctor(1, ["--wrap", "taskset -c 0", "--vm", "+S 2:2"]),
            #{severity := critical, data := D} = finding(<<"oversubscribed">>, Doc),
            ?assertMatch(#{<<"cpus">> := 1, <<"schedulers_online">> := 2}, D),
            First = first(Doc),
            ?assertMatch(<<"+S 1:1", _/binary>>, name(First)),
            %% the cure: each message costs less CPU
            ?assert(ratio(<<"cpu_per_msg">>, First) < 1.0)
    end.

%% Half a CPU of quota under 2 schedulers: cgroup_quota, and one
%% scheduler without busy-waiting first.
cgroup_quota(Config) ->
    case make_cgroup() of
        {skip, _} = Skip -> Skip;
        {ok, Dir} ->
            _ = Config,
            Doc = try doctor(1, ["--cgroup", Dir])
                  after remove_cgroup(Dir)
                  end,
            #{severity := critical, data := D} = finding(<<"cgroup_quota">>, Doc),
            ?assertEqual(0.5, maps:get(<<"quota_cpus">>, D)),
            First = first(Doc),
            ?assertMatch(<<"+S 1:1", _/binary>>, name(First)),
            above_decoy(fun(N) -> binary:match(N, <<"+S 1:1">>) =/= nomatch end, Doc),
            ?assert(ratio(<<"cpu_per_msg">>, First) < 1.0)
    end.

%% The cgroup goes once its last VM has exited (a stopped VM's OS
%% process may take a moment to leave it): nothing outlives the case.
remove_cgroup(Dir) ->
    beamlab_test_util:wait_until(fun() -> file:del_dir(Dir) =:= ok orelse not filelib:is_dir(Dir) end,
                                 10000, {cgroup_removed, Dir}).

%% A child cgroup with half a CPU: cgroup v1's cpu controller
%% (cpu.cfs_quota_us), else v2's cpu.max.
make_cgroup() ->
    Name = "beamlab-doctor-" ++ integer_to_list(erlang:unique_integer([positive])),
    V1 = "/sys/fs/cgroup/cpu",
    V2 = "/sys/fs/cgroup",
    case filelib:is_regular(filename:join(V1, "cpu.cfs_quota_us")) of
        true ->
            Dir = filename:join(V1, Name),
            case file:make_dir(Dir) of
                ok ->
                    case {file:write_file(filename:join(Dir, "cpu.cfs_period_us"), "100000"),
                          file:write_file(filename:join(Dir, "cpu.cfs_quota_us"), "50000")} of
                        {ok, ok} -> {ok, Dir};
                        Err -> _ = file:del_dir(Dir), {skip, io_lib:format("cannot set a quota in ~ts: ~p", [Dir, Err])}
                    end;
                {error, E} -> {skip, io_lib:format("no writable cgroup v1 cpu controller (~ts: ~p)", [V1, E])}
            end;
        false ->
            case file:read_file(filename:join(V2, "cgroup.subtree_control")) of
                {ok, Ctl} ->
                    case binary:match(Ctl, <<"cpu">>) of
                        nomatch -> {skip, "the cgroup v2 cpu controller is not enabled for children here"};
                        _ ->
                            Dir = filename:join(V2, Name),
                            case file:make_dir(Dir) of
                                ok ->
                                    case file:write_file(filename:join(Dir, "cpu.max"), "50000 100000") of
                                        ok -> {ok, Dir};
                                        E -> _ = file:del_dir(Dir), {skip, io_lib:format("cpu.max not writable: ~p", [E])}
                                    end;
                                {error, E} -> {skip, io_lib:format("no writable cgroup v2 (~p)", [E])}
                            end
                    end;
                {error, _} -> {skip, "no writable cgroup cpu controller (neither v1 nor v2)"}
            end
    end.

%% Two CPU-bound shell loops, one on each CPU: competing, and fewer
%% schedulers or no busy-waiting first.
competing_processes(Config) ->
    Cpus = erlang:system_info(logical_processors_available),
    Burners = [burner(C) || C <- lists:seq(0, Cpus - 1)],
    try
        Doc = doctor(1, []),
        #{severity := Sev} = finding(<<"competing">>, Doc),
        ?assert(lists:member(Sev, [warning, critical])),
        #{data := #{<<"remedies">> := Cures}} = finding(<<"competing">>, Doc),
        ?assert(lists:member(name(first(Doc)), Cures)),
        above_decoy(fun(N) -> lists:member(N, Cures) end, Doc)
    after
        _ = [os:cmd("kill -KILL " ++ integer_to_list(P) ++ " 2>/dev/null") || P <- Burners],
        _ = Config
    end.

burner(Cpu) ->
    Taskset = os:find_executable("taskset"),
    Port = open_port({spawn_executable, "/bin/sh"},
                     [{args, ["-c", "exec " ++ Taskset ++ " -c " ++ integer_to_list(Cpu)
                              ++ " sh -c 'while :; do :; done'"]}]),
    {os_pid, P} = erlang:port_info(Port, os_pid),
    P.

%% Schedulers told to spin long at a message rate below capacity: the
%% doctor names the busy-waiting and ranks no busy-waiting above the
%% decoy, keeping the goodput and lowering CPU per message.
busy_waiting(_Config) ->
    Doc = doctor(["--vm", "+sbwt very_long +sbwtdcpu very_long +sbwtdio very_long"]),
    #{data := #{<<"spin_share">> := Spin}} = finding(<<"busy_wait">>, Doc),
    ?assert(Spin >= 0.5),
    above_decoy(fun(N) -> binary:match(N, ?SBWT) =/= nomatch end, Doc),
    [Cure | _] = [R || R <- remedies(Doc), binary:match(name(R), ?SBWT) =/= nomatch],
    ?assert(ratio(<<"cpu_per_msg">>, Cure) < 1.0),
    ?assertNotEqual(<<"lower">>, maps:get(<<"verdict">>, maps:get(<<"goodput">>, Cure))).

%% A quiet machine: no critical finding (the false-alarm side). Other
%% processes busy before the run make the machine not quiet: then the
%% case cannot say anything about false alarms and is skipped.
healthy_quiet(_Config) ->
    case busy_share(1000) of
        B when B > 0.2 ->
            {skip, io_lib:format("the machine is not quiet: ~b% of its CPU time was busy before the run", [round(100 * B)])};
        _ ->
            Doc = doctor([]),
            ?assertEqual([], [Id || #{id := Id, severity := critical} <- maps:get(findings, Doc)]),
            ct:log("findings: ~p", [ids(Doc)])
    end.

busy_share(Ms) ->
    {ok, A} = beamlab_runtime_probe:cpu_times("/"),
    timer:sleep(Ms),
    {ok, B} = beamlab_runtime_probe:cpu_times("/"),
    D = maps:map(fun(K, V) -> V - maps:get(K, A) end, B),
    Total = lists:sum(maps:values(D)),
    Idle = maps:get(idle, D, 0) + maps:get(iowait, D, 0),
    case Total of
        0 -> 0.0;
        _ -> (Total - Idle) / Total
    end.

%% The text view leads with the recommendation; bad options are one line
%% and exit 2.
quick_text_and_errors(_Config) ->
    #{code := 2} = E1 = beamlab_test_util:cli(["doctor", "--vm", "\"+S 2"]),
    beamlab_test_util:assert_one_line_error(E1),
    #{code := 2} = E2 = beamlab_test_util:cli(["doctor", "--schedulers", "0"]),
    beamlab_test_util:assert_one_line_error(E2),
    #{code := 2} = E3 = beamlab_test_util:cli(["doctor", "--cgroup", "/nonexistent-cgroup"]),
    beamlab_test_util:assert_one_line_error(E3),
    #{code := 2} = E4 = beamlab_test_util:cli(["doctor", "--vm", "+Sbad 3", "--schedulers", "1",
                                                      "--curve-reps", "1"]),
    beamlab_test_util:assert_one_line_error(E4),
    #{code := 0, out := Out, err := Err} =
        beamlab_test_util:cli(["doctor", "--quick", "--reps", "2", "--curve-reps", "1", "--schedulers", "1,2",
                               "--probe-ms", "200", "--max-remedies", "1"], #{timeout => 150000}),
    ct:log("~ts~n~ts", [Out, Err]),
    [First | _] = string:split(Out, "\n"),
    ?assertMatch({match, _}, re:run(First, "^(start the VM with |keep the VM's flags)")),
    [?assertNotEqual(nomatch, binary:match(Err, P)) || P <- [<<"doctor: facts:">>, <<"doctor: curve:">>,
                                                           <<"doctor: diagnosis:">>, <<"doctor: remedies:">>]],
    ?assertNotEqual(nomatch, binary:match(Out, <<"Scaling">>)),
    ?assertNotEqual(nomatch, binary:match(Out, <<"Microstate accounting">>)).

%% SIGTERM during the curve: exit 130, the document saved with what was
%% measured, partial.
interrupted_keeps_what_was_measured(_Config) ->
    Dir = beamlab_test_util:tmp_dir("doctor-int"),
    File = filename:join(Dir, "d.json"),
    Run = beamlab_test_util:cli_start_group(["doctor", "--quick", "--schedulers", "1,2", "--probe-ms", "300",
                                             "--save", File], #{dir => Dir}),
    %% After the first VM's line, interrupt.
    _ = beamlab_test_util:wait_for_file(maps:get(err_file, Run), "doctor: \\[1/", 60000),
    beamlab_test_util:signal_group(Run, "TERM"),
    #{code := Code} = beamlab_test_util:cli_group_finish(Run),
    ?assertEqual(130, Code),
    {ok, Doc} = beamlab_result:load(File),
    ?assertEqual(true, maps:get(partial, Doc)),
    ?assertMatch([_ | _], [B || #{samples := [_ | _]} = B <- maps:get(benchmarks, Doc)]).

%% beamlab:doctor/1 from Erlang (here) and from Elixir: the same document;
%% its mistakes are values with one line.
api_erlang_and_elixir(_Config) ->
    Opts = #{quick => true, reps => 2, curve_reps => 1, schedulers => "1", probe_ms => 200, max_remedies => 1},
    {ok, Doc} = beamlab:doctor(Opts),
    api_doc(Doc),
    {error, {unknown_option, bogus}} = beamlab:doctor(#{bogus => 1}),
    %% (the schema's reason, naming the key: the command line's names --reps)
    {error, {doctor, {option, _}} = E} = beamlab:doctor(#{reps => 0}),
    ?assertEqual("invalid value '0' for reps: expected a positive integer",
                 lists:flatten(io_lib:format("~ts", [beamlab:format_error(E)]))),
    {error, {doctor, {cgroup, _, _}}} = E2 = beamlab:doctor(#{cgroup => "/nonexistent-cgroup"}),
    ?assertNotEqual(nomatch, string:find(beamlab:format_error(E2), "cgroup")),
    case os:find_executable("elixir") of
        false -> {comment, "elixir is not installed: the Elixir half was not run"};
        Elixir ->
            Ebin = filename:dirname(code:which(beamlab)),
            Code = "{:ok, doc} = :beamlab.doctor(%{quick: true, reps: 2, curve_reps: 1, schedulers: ~c\"1\", "
                   "probe_ms: 200, max_remedies: 1})\nIO.binwrite(:beamlab_result.to_json(doc))\n",
            Port = open_port({spawn_executable, Elixir}, [{args, ["-pa", Ebin, "-e", Code]},
                                                          exit_status, binary, use_stdio]),
            {0, Out} = beamlab_test_util:port_output(Port, 150000),
            {ok, Json} = beamlab_json:decode(Out),
            {ok, Doc2} = beamlab_result:from_json(Json),
            api_doc(Doc2)
    end.

api_doc(Doc) ->
    #{kind := doctor, extra := #{<<"recommendation">> := Line, <<"curve">> := #{<<"points">> := [_]}},
      findings := [_ | _]} = Doc,
    ?assertMatch({match, _}, re:run(Line, "^(start the VM with |keep the VM's flags)")).

%% The report page of a saved doctor document, in headless Chromium: the
%% recommendation first, the curve drawn as a chart, microstate accounting
%% stacked, the remedies with their intervals; no script error; a
%% screenshot is taken.
report_page_in_chromium(_Config) ->
    case beamlab_test_util:chromium() of
        false -> {skip, "chromium is not installed (Debian package 'chromium')"};
        Chromium ->
            Dir = beamlab_test_util:tmp_dir("doctor-report"),
            Json = filename:join(Dir, "doctor.json"),
            Html = filename:join(Dir, "doctor.html"),
            #{code := 0} = beamlab_test_util:cli(["doctor", "--quick", "--reps", "2", "--curve-reps", "1",
                                                  "--schedulers", "1,2", "--probe-ms", "200",
                                                  "--max-remedies", "1", "--save", Json], #{timeout => 150000}),
            #{code := 0} = beamlab_test_util:cli(["report", Json, "-o", Html]),
            saturating_load_recorded(Json),
            compare_cli(Dir, Json),
            Flags = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                     "--disable-background-networking", "--disable-component-update", "--disable-sync",
                     "--user-data-dir=" ++ filename:join(Dir, "chromium")],
            Dom = os:cmd(lists:flatten(io_lib:format("'~ts' ~ts --dump-dom 'file://~ts' 2>/dev/null",
                                                     [Chromium, lists:join(" ", Flags), Html]))),
            Body = beamlab_test_util:dom_body(unicode:characters_to_binary(Dom)),
            ?assertEqual(<<>>, beamlab_test_util:dom_attr(Body, <<"data-errors">>)),
            D = unicode:characters_to_binary(Dom),
            %% The doctor's section comes first, the recommendation first in it.
            {match, [{Doctor, _}]} = re:run(D, <<"<section id=\"doctor\"">>),
            [?assert(Doctor =< P) || {P, _} <- binary:matches(D, <<"<section id=\"">>)],
            {match, _} = re:run(D, <<"<section id=\"doctor\".*?data-kind=\"recommendation\">(start the VM with|keep the VM's flags)">>,
                                [dotall]),
            ?assertNotEqual(nomatch, binary:match(D, <<"data-kind=\"doctor-curve\"">>)),
            ?assertMatch({match, _}, re:run(D, <<"data-kind=\"doctor-curve\".*?<svg class=\"chart\"">>, [dotall])),
            ?assertNotEqual(nomatch, binary:match(D, <<"data-kind=\"doctor-msacc\"">>)),
            ?assert(length(binary:matches(D, <<"class=\"stack\"">>)) >= 3),
            ?assertNotEqual(nomatch, binary:match(D, <<"data-kind=\"doctor-remedies\"">>)),
            ?assertNotEqual(nomatch, binary:match(D, <<"class=\"forest\"">>)),
            %% microstate accounting under both loads; the ranking's
            %% caption says the multiplicity correction (1 remedy x 4 figures)
            ?assertEqual(2, length(binary:matches(D, <<"data-kind=\"doctor-msacc\"">>))),
            ?assertNotEqual(nomatch, binary:match(D, <<"Bonferroni over 4 comparisons">>)),
            Png = filename:join(Dir, "doctor.png"),
            _ = os:cmd(lists:flatten(io_lib:format("'~ts' ~ts --hide-scrollbars --window-size=1280,2000 "
                                                   "--screenshot='~ts' 'file://~ts' 2>/dev/null",
                                                   [Chromium, lists:join(" ", Flags), Png, Html]))),
            {ok, <<137, "PNG", _/binary>> = Bin} = file:read_file(Png),
            ?assert(byte_size(Bin) > 20000),
            layout_at_widths(Chromium, Dir, Html)
    end.

%% The saturating load as the saved document records it: at each
%% scheduler count one busy share and one mean of runnable processes per
%% scheduler, microstate accounting under it, the evidence of stranded
%% work as a share, and every load's own check held (the tokens
%% conserved, the message load's conservation). No figure is asserted:
%% how busy the schedulers were depends on the machine.
saturating_load_recorded(Json) ->
    {ok, Doc} = beamlab_result:load(Json),
    #{extra := #{<<"curve">> := #{<<"points">> := Points}, <<"default">> := Default}} = Doc,
    ?assertEqual([1, 2], [N || #{<<"schedulers">> := N} <- Points]),
    [begin
         ?assertEqual(N, length(maps:get(<<"utilisation_schedulers">>, P))),
         ?assertEqual(N, length(maps:get(<<"capacity_active_mean">>, P))),
         ?assert(maps:is_key(<<"emulator">>, maps:get(<<"capacity_msacc">>, P))),
         S = maps:get(<<"capacity_stranded">>, P),
         ?assert(S >= 0 andalso S =< 1)
     end || #{<<"schedulers">> := N} = P <- Points],
    ?assertEqual([], maps:get(<<"checks_failed">>, Default)),
    #{<<"remedies">> := [R | _]} = maps:get(extra, Doc),
    ?assertMatch(#{<<"correction">> := <<"bonferroni">>, <<"comparisons">> := 4}, R),
    ?assert(maps:get(<<"confidence">>, R) > 0.95).

%% The page laid out at 1300 and 800 px has nothing wrong by its own
%% layout check (the remedies' table fits: it ran off a 1300 px page
%% behind a scrollbar, unflagged); the ranking's cells unwrapped, as they
%% were, are flagged at both widths. Each run's repetitions appear in the
%% doctor's section only: no bar card per curve point, no chart over
%% time, no scaling view of them.
layout_at_widths(Chromium, Dir, Html) ->
    Layout = fun(Path, W) ->
                     Dom = beamlab_test_util:dump_dom(Chromium, Dir, Path, ["--window-size=" ++ integer_to_list(W) ++ ",2000"]),
                     Body = beamlab_test_util:dom_body(Dom),
                     ?assertEqual(<<>>, beamlab_test_util:dom_attr(Body, <<"data-errors">>)),
                     {beamlab_test_util:dom_attr(Body, <<"data-layout">>), Dom}
             end,
    [begin
         {Problems, Dom} = Layout(Html, W),
         ?assertEqual({W, <<>>}, {W, Problems}),
         [?assertEqual({W, nomatch}, {W, binary:match(Dom, <<"<section id=\"", Id/binary, "\"">>)})
          || Id <- [<<"results">>, <<"distributions">>, <<"timeline">>, <<"scaling">>]]
     end || W <- [1300, 800]],
    {ok, Page} = file:read_file(Html),
    Wide = filename:join(Dir, "doctor-wide.html"),
    ok = file:write_file(Wide, binary:replace(Page, <<"</head>">>,
                                              <<"<style>.remedies td{white-space:nowrap!important}"
                                                ".forest{display:inline-block!important;width:200px!important}"
                                                %% wider than any card whatever the run's
                                                %% figures (a quiet run's cells are short)
                                                ".remedies td.flags{min-width:1400px!important}"
                                                "</style></head>">>)),
    [begin
         {Problems, _} = Layout(Wide, W),
         ?assertMatch({W, {_, _}}, {W, binary:match(Problems, <<"a table (Remedies against the default">>)})
     end || W <- [1300, 800]].

%% `doctor --compare A B' on a real document and a copy of it made to
%% look like a machine with 4 NUMA nodes whose capacity halves from 2
%% schedulers on and that has a critical finding A has not.
compare_cli(Dir, FileA) ->
    {ok, A} = beamlab_result:load(FileA),
    #{extra := X} = A,
    Machine = maps:get(<<"machine">>, X),
    Curve = maps:get(<<"curve">>, X),
    Points = [case P of
                  #{<<"schedulers">> := N, <<"capacity">> := C} when N >= 2 -> P#{<<"capacity">> := C / 2};
                  _ -> P
              end || P <- maps:get(<<"points">>, Curve)],
    Numa = beamlab_result:finding(numa, critical, <<"4 NUMA nodes: the VM's work spreads across them">>,
                                  <<"4 NUMA nodes with distances ...">>, <<"bind the schedulers">>,
                                  #{confidence => medium, remedies => []}),
    B = (beamlab_result:add_findings(A, [Numa]))#{extra := X#{<<"machine">> := Machine#{<<"numa_nodes">> := 4},
                                                             <<"curve">> := Curve#{<<"points">> := Points}}},
    FileB = filename:join(Dir, "b.json"),
    {ok, _} = beamlab_result:save(B, FileB),
    #{code := 0, out := Out} = beamlab_test_util:cli(["doctor", "--compare", FileA, FileB]),
    ct:log("~ts", [Out]),
    ?assertNotEqual(nomatch, binary:match(Out, <<"The capacity curves part at 2 schedulers">>)),
    ?assertNotEqual(nomatch, binary:match(Out, <<"only on B: [critical] 4 NUMA nodes">>)),
    ?assertMatch({match, _}, re:run(Out, <<"machine.numa_nodes +[01] +4">>)),
    #{code := 2} = E = beamlab_test_util:cli(["doctor", "--compare", FileA]),
    beamlab_test_util:assert_one_line_error(E).
