%%% Issue 32, through the built escript against Debian's RabbitMQ:
%%% `doctor --target rabbitmq -- amqp ...' measures the findings' remedies
%%% (and the asked ones) on a private broker, each started fresh per
%%% repetition and loaded by the inner amqp command, and ranks them by the
%%% load's own figures against the broker's default; remedies the broker
%%% already runs with (Debian's rabbitmq-server starts with +sbwt none
%%% ...) are left out; bad input is one line, exit 2 (the broker's --otp,
%%% --flavor and --load-cmd too); SIGTERM or Ctrl-C while the brokers are
%%% measured ends the run with 130, the configurations finished saved
%%% and nothing beamlab started left running. Skipped when
%%% rabbitmq-server is not installed.
-module(doctor_target_SUITE).
-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-export([all/0, suite/0, init_per_suite/1, end_per_suite/1]).
-export([ranks_remedies_on_the_broker/1, bad_input/1, interrupted_while_measuring_brokers/1]).

-define(SBWT, "+sbwt none +sbwtdcpu none +sbwtdio none").

suite() -> [{timetrap, {minutes, 6}}].

all() ->
    [bad_input, ranks_remedies_on_the_broker, interrupted_while_measuring_brokers].

init_per_suite(Config) ->
    case filelib:is_regular("/usr/lib/rabbitmq/bin/rabbitmq-server") of
        false -> {skip, "Debian's rabbitmq-server is not installed"};
        true ->
            _ = beamlab_test_util:escript(),
            _ = os:cmd("epmd -address 127.0.0.1 -daemon"),
            Config
    end.

end_per_suite(_Config) ->
    ok.

%% The short protocol (one curve point, 250 ms probes), then the broker:
%% one of the findings' remedies and `+S 1:1' asked, 2 repetitions of 2 s
%% loads at a fixed rate. The text's first line is the recommendation, the
%% ranking is on the broker's figures, what the broker already runs with
%% is left out, every broker is gone afterwards.
ranks_remedies_on_the_broker(_Config) ->
    Tmp = beamlab_test_util:tmp_dir("doctor-target"),
    Json = filename:join(Tmp, "doctor.json"),
    R = beamlab_test_util:cli(["doctor", "--quick", "--target", "rabbitmq", "--schedulers", "1",
                               "--curve-reps", "1", "--reps", "2", "--probe-ms", "250", "--max-remedies", "1",
                               "--remedy", "+S 1:1", "--remedy", ?SBWT, "--save", Json,
                               "--", "amqp", "-x", "1", "-y", "1", "-r", "300", "-z", "2"],
                              #{env => [{"TMPDIR", Tmp}], timeout => 330000}),
    #{code := Code, out := Out, err := Err} = R,
    ct:log("exit ~b~nstdout:~n~ts~nstderr:~n~ts", [Code, Out, Err]),
    ?assertEqual(0, Code),
    {ok, Doc} = beamlab_result:load(Json),
    #{kind := doctor, extra := #{<<"target">> := T, <<"recommendation">> := Rec}} = Doc,
    %% The first line of the text is the recommendation, a rabbitmq-env.conf line or why the flags stay.
    [First | _] = binary:split(Out, <<"\n">>),
    ?assertEqual(Rec, First),
    ?assertMatch({match, _}, re:run(Rec, <<"^(put in rabbitmq-env.conf: RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS=\""
                                           "|start rabbitmq-server under |keep the broker's flags: )">>)),
    ?assertNotEqual(nomatch, binary:match(Out, <<"Remedies on the broker (rabbitmq, a fresh broker per repetition "
                                                 "loaded by 'amqp -x 1 -y 1 -r 300 -z 2'">>)),
    %% Debian's broker starts without busy-waiting: that remedy is not measured against itself.
    ?assertEqual([<<?SBWT>>], maps:get(<<"already_in_effect">>, T)),
    ?assertNotEqual(nomatch, binary:match(Out, <<"left out, the broker already runs with them: " ?SBWT>>)),
    Flags = maps:get(<<"broker_flags">>, T),
    ?assertNotEqual(nomatch, binary:match(iolist_to_binary(lists:join(" ", Flags)), <<"+sbwt none">>)),
    %% Every measured remedy ran twice like the default, each in a broker that proved its flags.
    Configs = maps:get(<<"configs">>, T),
    ct:log("configs: ~p", [Configs]),
    [?assertEqual({N, 2, 2}, {N, Runs, Ok}) || #{<<"name">> := N, <<"runs">> := Runs, <<"ok_runs">> := Ok} <- Configs],
    Names = [N || #{<<"name">> := N} <- Configs],
    ?assertEqual(<<"default">>, hd(Names)),
    ?assert(lists:member(<<"+S 1:1">>, Names)),
    %% Ranked by the load's figures, each a ratio to the default with an interval.
    Ranked = maps:get(<<"remedies">>, T),
    ?assertEqual(lists:sort(tl(Names)), lists:sort([N || #{<<"name">> := N} <- Ranked])),
    [begin
         ?assertEqual(2, maps:get(<<"n">>, Row)),
         [?assertMatch(#{<<"ratio">> := X, <<"ci">> := [Lo, Hi]} when is_number(X) andalso Lo =< X andalso X =< Hi
                                                                       andalso Lo > 0,
                       maps:get(K, Row))
          || K <- [<<"throughput">>, <<"latency_p99">>, <<"broker_cpu_per_msg">>]],
         ?assert(lists:member(maps:get(<<"verdict">>, Row), [<<"better">>, <<"trade_off">>, <<"no_difference">>,
                                                             <<"worse">>]))
     end || Row <- Ranked],
    %% Best first: clearly better, then undecided, then clearly worse; by score within.
    Keys = [{case V of <<"better">> -> 0; <<"worse">> -> 2; _ -> 1 end, -S}
            || #{<<"verdict">> := V, <<"score">> := S} <- Ranked, is_number(S)],
    ?assertEqual(lists:sort(Keys), Keys),
    case Ranked of
        [#{<<"verdict">> := <<"better">>, <<"name">> := Best} | _] ->
            ?assertNotEqual(nomatch, binary:match(Rec, Best));
        _ ->
            ?assertMatch(<<"keep the broker's flags", _/binary>>, Rec)
    end,
    %% The brokers' figures are the document's benchmarks (one value per repetition).
    TargetBenches = [B || #{group := <<"target">>} = B <- maps:get(benchmarks, Doc)],
    ?assert(lists:any(fun(#{name := N, samples := S}) ->
                              N =:= <<"target default / receiving rate avg">> andalso length(S) =:= 2
                      end, TargetBenches)),
    report_page(Tmp, Json),
    %% No broker outlives the run, no broker directory is left behind.
    ?assertEqual([], filelib:wildcard(filename:join(Tmp, "beamlab-target-*"))),
    ?assertEqual("", string:trim(os:cmd("pgrep -f '" ++ Tmp ++ "/beamlab-target-' || true"))).

%% The report page draws the broker's ranking in the doctor's section, and
%% its own layout check finds nothing wrong at 1300 and 800 px.
report_page(Tmp, Json) ->
    case beamlab_test_util:chromium() of
        false -> ct:log("chromium is not installed: the page is not checked");
        Chromium ->
            Html = filename:join(Tmp, "doctor.html"),
            #{code := 0} = beamlab_test_util:cli(["report", Json, "-o", Html]),
            [begin
                 Dom = beamlab_test_util:dump_dom(Chromium, Tmp, Html, ["--window-size=" ++ integer_to_list(W) ++ ",1600"]),
                 Body = beamlab_test_util:dom_body(Dom),
                 ?assertEqual({W, <<>>}, {W, beamlab_test_util:dom_attr(Body, <<"data-errors">>)}),
                 ?assertEqual({W, <<>>}, {W, beamlab_test_util:dom_attr(Body, <<"data-layout">>)}),
                 ?assertMatch({match, _}, re:run(Dom, <<"<section id=\"doctor\".*data-kind=\"doctor-target-remedies\""
                                                       ".*class=\"forest\"">>, [dotall])),
                 ?assertNotEqual(nomatch, binary:match(Dom, <<"Left out, the broker already runs with them">>))
             end || W <- [1300, 800]]
    end.

%% A target without its load, a load without a target, an unknown target,
%% a command that is not amqp, a mistake in the amqp: one line, exit 2,
%% before anything starts.
bad_input(_Config) ->
    Cases = [{["doctor", "--target", "rabbitmq"], <<"--target rabbitmq runs an amqp load: give '-- amqp ...'">>},
             {["doctor", "--target", "rabbitmq", "--", "run", "ok."], <<"--target rabbitmq runs an amqp load">>},
             {["doctor", "--", "amqp", "-z", "1"], <<"a load after -- is the load of a target: give --target rabbitmq">>},
             {["doctor", "--target", "foo", "--", "amqp"], <<"'foo' for --target: expected one of rabbitmq">>},
             {["doctor", "--target", "rabbitmq", "--", "amqp", "--bogus"], <<"doctor: amqp: unknown option '--bogus'">>},
             {["doctor", "--compare", "a.json", "b.json", "--target", "rabbitmq", "--", "amqp"],
              <<"doctor --compare reads two saved documents: --target and a load after -- do not apply">>},
             %% the broker's OTP, flavour and load command (#32)
             {["doctor", "--target", "rabbitmq", "--otp", "/nonexistent-otp", "--", "amqp"],
              <<"--otp /nonexistent-otp: no bin/erl there (an OTP installation prefix)">>},
             {["doctor", "--otp", "/usr/lib/erlang", "--", "amqp"],
              <<"--otp is for the broker of --target rabbitmq: add it">>},
             {["doctor", "--target", "rabbitmq", "--flavor", "bogus", "--", "amqp"],
              <<"'bogus' for --flavor: expected one of jit, emu">>},
             {["doctor", "--flavor", "jit"], <<"--flavor is for the broker of --target rabbitmq: add it">>},
             {["doctor", "--load-cmd", "perftest -h {uri}"],
              <<"--load-cmd is for the broker of --target rabbitmq: add it">>},
             {["doctor", "--target", "rabbitmq", "--load-cmd", "  "],
              <<"--load-cmd is empty: give the load's command line">>},
             {["doctor", "--target", "rabbitmq", "--load-cmd", "perftest -h {uri}", "--", "amqp", "-z", "1"],
              <<"--load-cmd is the broker's load: the amqp after -- only fills its {flags}, which the command "
                "does not have">>},
             {["doctor", "--target", "rabbitmq", "--load-cmd", "perftest -h {uri} {flags}", "--", "run", "ok."],
              <<"--target rabbitmq runs an amqp load">>},
             %% (Debian's OTP holds the JIT only: said before any broker starts)
             {["doctor", "--target", "rabbitmq", "--flavor", "emu", "--", "amqp", "-z", "1"],
              <<"has no emu flavour">>}],
    lists:foreach(fun({Args, Says}) ->
                          E = beamlab_test_util:cli(Args),
                          ct:log("~p: ~p", [Args, E]),
                          ?assertEqual(2, maps:get(code, E), Args),
                          beamlab_test_util:assert_one_line_error(E),
                          ?assertNotEqual(nomatch, binary:match(maps:get(err, E), Says), Args)
                  end, Cases).

%% SIGTERM while the brokers are measured (Debian's broker under beamlab's
%% amqp), then Ctrl-C (SIGINT to the group, as a terminal sends it) on
%% OTP 27's interpreter under PerfTest (--otp, --flavor emu, --load-cmd):
%% each time once the default's first repetition is done and the next
%% broker is under load. Exit 130; the document is saved, partial, with
%% the configuration finished (its figures, its broker's flavour); no
%% broker, no load (PerfTest's JVM), no broker directory, no new epmd is
%% left, and nothing but the document is written.
interrupted_while_measuring_brokers(_Config) ->
    Common = ["doctor", "--quick", "--target", "rabbitmq", "--schedulers", "1", "--curve-reps", "1",
              "--reps", "2", "--probe-ms", "250", "--max-remedies", "1", "--remedy", "+S 1:1"],
    interrupted(Common, "-- amqp -x 1 -y 1 -r 300 -z 4", "TERM",
                "(?s)\\[default\\] rep 1/2 done.*up \\(os pid [0-9]+\\)", null),
    case perftest_on_otp27() of
        {skip, Why} ->
            {comment, "SIGINT half not run: " ++ Why};
        {ok, Otp, PerfTest} ->
            Id = "doctor-int-" ++ integer_to_list(erlang:unique_integer([positive])),
            interrupted(Common ++ ["--otp", Otp, "--flavor", "emu",
                                   "--load-cmd", PerfTest ++ " -h {uri} --id " ++ Id ++ " {flags}"],
                        "-- amqp -x 1 -y 1 -r 300 -z 4", "INT",
                        "(?s)\\[default\\] rep 1/2 done.*id: " ++ Id ++ ", time", Id),
            ok
    end.

interrupted(Args, Load, Sig, After, LoadId) ->
    Dir = beamlab_test_util:tmp_dir("doctor-target-int"),
    Json = filename:join(Dir, "doctor.json"),
    Epmd = pids("epmd"),
    Run = beamlab_test_util:cli_start_group(Args ++ ["--save", Json | string:lexemes(Load, " ")],
                                            #{dir => Dir, env => [{"TMPDIR", Dir}]}),
    _ = beamlab_test_util:wait_for_file(maps:get(err_file, Run), After, 240000),
    ok = beamlab_test_util:signal_group(Run, Sig),
    #{code := Code, out := Out, err := Err} = beamlab_test_util:cli_group_finish(Run),
    ct:log("~ts: exit ~p~nstdout:~n~ts~nstderr:~n~ts", [Sig, Code, Out, Err]),
    ?assertEqual(130, Code),
    %% The repetition under load was cut (its load stopped, not run to its end), none started after it.
    ?assertNotEqual(nomatch, binary:match(Err, <<"[+S 1:1] rep 1/2: interrupted (left out)">>)),
    ?assertEqual(nomatch, binary:match(Err, <<"rep 2/2">>)),
    %% What was measured is saved, marked interrupted: the default's finished repetition.
    {ok, Doc} = beamlab_result:load(Json),
    ?assertEqual(true, maps:get(partial, Doc)),
    #{extra := #{<<"target">> := T}} = Doc,
    [Default | _] = maps:get(<<"configs">>, T),
    ?assertMatch(#{<<"name">> := <<"default">>, <<"ok_runs">> := N} when N >= 1, Default),
    ?assertMatch([_ | _], [S || #{name := <<"target default / receiving rate avg">>, samples := [_ | _] = S}
                                    <- maps:get(benchmarks, Doc)]),
    case LoadId of
        null -> ok;
        _ ->
            ?assertEqual(<<"emu">>, maps:get(<<"flavor">>, T)),
            ?assertEqual(<<"emu">>, maps:get(<<"flavor_reported">>, Default)),
            ?assertMatch([<<"/", _/binary>>], maps:get(<<"load_command">>, T)),
            %% PerfTest's JVM (its own process group) is gone
            ?assertEqual([], pids(LoadId))
    end,
    %% Nothing beamlab started outlives it: no broker, no broker directory, no new epmd.
    %% (a broker's home is its directory under TMPDIR, this run's Dir)
    ?assertEqual([], pids(Dir)),
    ?assertEqual([], pids("epmd") -- Epmd),
    %% Only the document was written (no temporary file, no broker's directory).
    ?assertEqual([".pgid", ".stderr", ".stdout", "doctor.json"], lists:sort(element(2, file:list_dir(Dir)))).

%% OS pids of the processes whose command line holds `Pattern'.
pids(Pattern) ->
    [P || P <- string:lexemes(os:cmd("pgrep -f -- '" ++ Pattern ++ "' || true"), "\n"),
          string:find(cmdline(P), "pgrep") =:= nomatch].

cmdline(P) ->
    case file:read_file("/proc/" ++ P ++ "/cmdline") of
        {ok, B} -> binary_to_list(binary:replace(B, <<0>>, <<" ">>, [global]));
        {error, _} -> ""
    end.

%% OTP 27 with its interpreter, RabbitMQ 4.0 for it and PerfTest, as
%% scripts/install-deps.sh --test installs them (jit_SUITE needs the same).
perftest_on_otp27() ->
    Rabbit = case os:getenv("BEAMLAB_RABBITMQ40_PREFIX") of
                 V when V =:= false; V =:= "" -> "/opt/beamlab-rabbitmq/4.0";
                 V -> V
             end,
    PerfTest = case os:getenv("BEAMLAB_PERFTEST_PREFIX") of
                   V2 when V2 =:= false; V2 =:= "" -> "/opt/beamlab-perftest/2.22.1/bin/perftest";
                   V2 -> filename:join(V2, "bin/perftest")
               end,
    case {beamlab_test_util:otp27(), filelib:is_regular(filename:join(Rabbit, "bin/rabbitmq-server")),
          filelib:is_regular(PerfTest)} of
        {{ok, Bin}, true, true} -> {ok, filename:dirname(Bin), PerfTest};
        {{error, Why}, _, _} -> {skip, Why};
        {_, false, _} -> {skip, "no RabbitMQ 4.0 in " ++ Rabbit};
        {_, _, false} -> {skip, "no PerfTest at " ++ PerfTest}
    end.
