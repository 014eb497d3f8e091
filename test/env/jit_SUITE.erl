-module(jit_SUITE).
%%% The JIT against the interpreter (issue #22), through the built escript:
%%% the emulator flavour as a configuration of `run -i', `suite', `matrix'
%%% and `matrix --target rabbitmq', each proven from what the started VM
%%% reports, and a flavour the installation lacks as one line. Runs on the
%%% OTP 27 that scripts/install-otp.sh builds with both flavours
%%% (BEAMLAB_OTP27_PREFIX, default /opt/beamlab-otp/27) and the RabbitMQ 4.0
%%% that scripts/install-rabbitmq.sh unpacks for it.
%%%
%%% Skipped, with the reason, when those are not installed; failed instead
%%% when BEAMLAB_REQUIRE_OTP27=1 (set by .ci/run, whose install step builds
%%% them). Durations are short: these tests check behaviour, not speed.
-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-export([all/0, init_per_suite/1, end_per_suite/1]).
-export([flavor_run_isolated/1, flavor_suite/1, flavor_matrix/1, flavor_missing/1,
         broker_both_flavours/1, profiled_matrix_perftest/1, profile_flat_interpreter/1,
         preset_jit_study/1]).

all() ->
    [flavor_missing, flavor_run_isolated, flavor_suite, flavor_matrix, broker_both_flavours,
     profiled_matrix_perftest, profile_flat_interpreter, preset_jit_study].

init_per_suite(Config) ->
    Rabbit = filename:join(rabbit40_prefix(), "bin/rabbitmq-server"),
    PerfTest = perftest(),
    Ready = case beamlab_test_util:otp27() of
                {error, Why} -> {error, Why};
                {ok, Bin} ->
                    Erl = filename:join(Bin, "erl"),
                    Flavours = os:cmd("'" ++ Erl ++ "' -emu_flavor emu -noshell -noinput -eval "
                                      "'io:put_chars(atom_to_list(erlang:system_info(emu_flavor))), halt().' 2>&1"),
                    case {Flavours, filelib:is_regular(Rabbit), filelib:is_regular(PerfTest)} of
                        {"emu", true, true} -> {ok, Bin};
                        {"emu", false, _} -> {error, "no RabbitMQ 4.0 in " ++ rabbit40_prefix()
                                              ++ " (scripts/install-rabbitmq.sh)"};
                        {"emu", _, false} -> {error, "no PerfTest at " ++ PerfTest
                                              ++ " (scripts/install-perftest.sh)"};
                        _ -> {error, Erl ++ " has no emu flavour (rebuild with scripts/install-otp.sh): "
                              ++ string:slice(Flavours, 0, 200)}
                    end
            end,
    case Ready of
        {error, Reason} ->
            beamlab_test_util:otp27_missing(Reason ++ ": JIT/interpreter tests NOT run");
        {ok, OtpBin} ->
            [{otp_bin, OtpBin}, {otp, filename:dirname(OtpBin)} | Config]
    end.

end_per_suite(_Config) ->
    ok.

perftest() ->
    case os:getenv("BEAMLAB_PERFTEST_PREFIX") of
        V when V =:= false; V =:= "" -> "/opt/beamlab-perftest/2.22.1/bin/perftest";
        V -> filename:join(V, "bin/perftest")
    end.

rabbit40_prefix() ->
    case os:getenv("BEAMLAB_RABBITMQ40_PREFIX") of
        V when V =:= false; V =:= "" -> "/opt/beamlab-rabbitmq/4.0";
        V -> V
    end.

%% ./beamlab on OTP 27 (its escript first on PATH).
cli(Config, Args) ->
    cli(Config, Args, #{}).

cli(Config, Args, Opts) ->
    beamlab_test_util:cli(Args, maps:merge(#{env => beamlab_test_util:otp_env(?config(otp_bin, Config)),
                                             timeout => 600000}, Opts)).

json(#{out := Out}) ->
    {ok, J} = beamlab_json:decode(Out),
    J.

%% Debian's OTP holds the JIT only: asking any command for the interpreter
%% is one line (exit 1 for run and suite, 2 for matrix, whose
%% configurations are the user's), before any VM or broker starts.
flavor_missing(_Config) ->
    [begin
         R = beamlab_test_util:cli(Args),
         ct:log("~p: ~ts", [Args, maps:get(err, R)]),
         ?assertEqual(Code, maps:get(code, R)),
         beamlab_test_util:assert_one_line_error(R),
         ?assertNotEqual(nomatch, binary:match(maps:get(err, R), <<"has no emu flavour (it has jit)">>))
     end || {Code, Args} <- [{1, ["run", "ok.", "-i", "--flavor", "emu"]},
                             {1, ["suite", "spawn", "--flavor", "emu"]},
                             {2, ["matrix", "--flavor", "emu", "--", "run", "ok."]},
                             {2, ["matrix", "--target", "rabbitmq", "--flavor", "emu", "--", "amqp"]}]],
    R = beamlab_test_util:cli(["run", "ok.", "--flavor", "emu"]),
    ?assertEqual(2, maps:get(code, R)),
    beamlab_test_util:assert_one_line_error(R).

%% run -i --flavor emu: the job's fresh VM proved it runs the interpreter
%% before the job ran; the text says so.
flavor_run_isolated(Config) ->
    R = cli(Config, ["run", "lists:seq(1, 100).", "-i", "--flavor", "emu", "-s", "1", "-d", "100",
                     "--format", "json"]),
    ?assertEqual(0, maps:get(code, R)),
    #{<<"params">> := #{<<"flavor">> := <<"emu">>, <<"isolated">> := true},
      <<"benchmarks">> := [#{<<"samples">> := [_]}]} = json(R),
    T = cli(Config, ["run", "lists:seq(1, 100).", "-i", "--flavor", "jit", "-s", "1", "-d", "100"]),
    ?assertNotEqual(nomatch, binary:match(maps:get(out, T), <<"fresh VM of the jit flavour">>)).

%% suite --flavor emu: every point in a fresh VM of that flavour.
flavor_suite(Config) ->
    R = cli(Config, ["suite", "spawn", "--param", "spawn.n=1000", "-n", "1", "--flavor", "emu"]),
    ?assertEqual(0, maps:get(code, R)),
    ?assertNotEqual(nomatch, binary:match(maps:get(out, R), <<"fresh VM of the emu flavour">>)),
    J = cli(Config, ["suite", "spawn", "--param", "spawn.n=1000", "-n", "1", "--flavor", "emu",
                     "--format", "json"]),
    #{<<"params">> := #{<<"flavor">> := <<"emu">>}, <<"benchmarks">> := [_ | _]} = json(J).

%% matrix --flavor emu --flavor jit: one configuration per flavour, named
%% after it, each VM's own env report says which flavour it ran.
flavor_matrix(Config) ->
    Erl = filename:join(?config(otp_bin, Config), "erl"),
    R = cli(Config, ["matrix", "--erl", Erl, "--flavor", "emu", "--flavor", "jit", "-n", "1",
                     "--format", "json", "--", "run", "lists:seq(1, 100).", "-s", "1", "-d", "100"]),
    ?assertEqual(0, maps:get(code, R)),
    #{<<"extra">> := #{<<"configs">> := [Emu, Jit]}} = json(R),
    [begin
         ?assertEqual(<<"ok">>, maps:get(<<"status">>, C)),
         ?assertEqual(F, maps:get(<<"flavor">>, C)),
         ?assertEqual(F, maps:get(<<"flavor_reported">>, C)),
         ?assertEqual(F, maps:get(<<"emu_flavor">>, maps:get(<<"otp">>, maps:get(<<"env">>, C)))),
         ?assertMatch(<<"flavor=", F:3/binary, " erl=", _/binary>>, maps:get(<<"name">>, C))
     end || {C, F} <- [{Emu, <<"emu">>}, {Jit, <<"jit">>}]],
    %% -emu_flavor in --vm is a flavour as well, proven the same way.
    V = cli(Config, ["matrix", "--erl", Erl, "--vm", "-emu_flavor emu", "-n", "1", "--",
                     "run", "ok.", "-s", "1", "-d", "50"]),
    ?assertEqual(0, maps:get(code, V)),
    ?assertNotEqual(nomatch, binary:match(maps:get(err, V), <<"rep 1/1 done (2 schedulers online, emu flavour)">>)).

%% The broker on both flavours of the one OTP build: RabbitMQ 4.0 chosen
%% for OTP 27, loaded PerfTest-style; each broker reported its flavour.
broker_both_flavours(Config) ->
    Tmp = beamlab_test_util:tmp_dir("jit-brokers"),
    R = cli(Config, ["matrix", "--target", "rabbitmq", "--otp", ?config(otp, Config),
                     "--flavor", "emu", "--flavor", "jit", "-n", "1", "--format", "json",
                     "--", "amqp", "-x", "1", "-y", "1", "-u", "q1", "-f", "mandatory",
                     "-q", "300", "-c", "100", "-z", "2"],
            #{env => beamlab_test_util:otp_env(?config(otp_bin, Config)) ++ [{"TMPDIR", Tmp}]}),
    ct:log("~ts", [maps:get(err, R)]),
    ?assertEqual(0, maps:get(code, R)),
    #{<<"extra">> := #{<<"configs">> := Cs}, <<"benchmarks">> := Bs} = json(R),
    [begin
         ?assertEqual(<<"ok">>, maps:get(<<"status">>, C)),
         ?assertEqual(F, maps:get(<<"flavor_reported">>, C)),
         #{<<"otp">> := #{<<"release">> := <<"27">>, <<"flavor">> := F}} = maps:get(<<"env">>, C)
     end || {C, F} <- lists:zip(Cs, [<<"emu">>, <<"jit">>])],
    Sent = [V || #{<<"params">> := #{<<"config">> := _}, <<"extra">> := #{<<"inner_benchmark">> := <<"sent">>},
                   <<"samples">> := [V]} <- Bs],
    ?assertMatch([_, _], Sent),
    ?assert(lists:all(fun(V) -> V > 0 end, Sent)),
    ?assertEqual([], filelib:wildcard(filename:join(Tmp, "beamlab-target-*"))).

%% The study's parts in one run, as short as it can be: PerfTest itself as
%% the load (--load-cmd, its figures read from its output), and the
%% broker profiled under each flavour (--profile: one more repetition per
%% configuration, kept out of the statistics). The interpreter's profile
%% is its loop, process_main; the JIT's names Erlang functions (the
%% +JPperf perf map); each configuration's folded stacks are written.
profiled_matrix_perftest(Config) ->
    Folded = beamlab_test_util:tmp_dir("jit-folded"),
    Save = filename:join(Folded, "study.json"),
    R = cli(Config, ["matrix", "--target", "rabbitmq", "--otp", ?config(otp, Config),
                     "--flavor", "emu", "--flavor", "jit", "-n", "1", "--profile", "--folded", Folded,
                     "--load-cmd", perftest() ++ " -h {uri} {flags}", "--save", Save,
                     "--", "amqp", "-x", "1", "-y", "1", "-u", "q1", "-f", "mandatory", "-q", "300",
                     "-c", "100", "-z", "3"]),
    ct:log("~ts~n~ts", [maps:get(out, R), maps:get(err, R)]),
    ?assertEqual(0, maps:get(code, R)),
    Out = maps:get(out, R),
    %% PerfTest's own lines went by, and its figures are the matrix's.
    ?assertNotEqual(nomatch, binary:match(maps:get(err, R), <<"sending rate avg:">>)),
    {ok, Doc} = beamlab_result:load(Save),
    #{extra := #{<<"configs">> := [Emu, Jit]}, benchmarks := Bs} = Doc,
    Rate = [M || #{extra := #{<<"inner_benchmark">> := <<"sending rate avg">>}, stats := #{mean := M}} <- Bs],
    ?assertMatch([_, _], Rate),
    ?assert(lists:all(fun(V) -> V > 100 end, Rate)),
    ?assertMatch([_, _], [B || #{extra := #{<<"inner_benchmark">> := <<"broker CPU per message">>}} = B <- Bs]),
    ?assertNotEqual(nomatch, binary:match(maps:get(<<"subject">>, profile(Emu)), <<"perftest -h ">>)),
    %% Interpreter: C functions, its loop first; no Erlang frames.
    EmuP = profile(Emu),
    ?assertEqual(<<"emu">>, maps:get(<<"flavor">>, EmuP)),
    ?assertEqual(<<"process_main">>, maps:get(<<"name">>, hd(maps:get(<<"functions">>, EmuP)))),
    %% JIT: Erlang functions named by the perf map.
    JitP = profile(Jit),
    ?assertEqual(<<"jit">>, maps:get(<<"flavor">>, JitP)),
    ?assert(maps:get(<<"erlang">>, maps:get(<<"categories">>, JitP)) > 0),
    Erlang = [N || #{<<"name">> := N, <<"category">> := <<"erlang">>} <- maps:get(<<"functions">>, JitP)],
    ct:log("JIT's Erlang functions: ~p", [lists:sublist(Erlang, 10)]),
    ?assert(lists:any(fun(N) -> binary:match(N, [<<"rabbit">>, <<"gen_server">>]) =/= nomatch end, Erlang)),
    %% Both profiles pair: same subject, labelled by configuration.
    ?assertEqual(maps:get(<<"subject">>, EmuP), maps:get(<<"subject">>, JitP)),
    ?assertEqual(maps:get(<<"name">>, Emu), maps:get(<<"label">>, EmuP)),
    %% The text: each profile with its mode and cost, and the top tables.
    ?assertNotEqual(nomatch, binary:match(Out, <<"mode graph: call stacks">>)),
    ?assertNotEqual(nomatch, binary:match(Out, <<"load while profiled: sending rate avg">>)),
    {match, _} = re:run(Out, <<"hottest Erlang functions \\(total, self\\):\\n  (gen_server|rabbit_|proc_lib|erts_beamasm)">>),
    Files = filelib:wildcard(filename:join(Folded, "*.folded")),
    ?assertEqual(2, length(Files)),
    {ok, EmuFolded} = file:read_file(hd([F || F <- Files, string:find(F, "flavor=emu") =/= nomatch])),
    ?assertNotEqual(nomatch, binary:match(EmuFolded, <<"process_main">>)),
    %% The report: a flame graph per flavour, the JIT's differential
    %% against the interpreter's, drawn in headless Chromium.
    Html = filename:join(Folded, "study.html"),
    #{code := 0} = cli(Config, ["report", Save, "-o", Html]),
    case beamlab_test_util:chromium() of
        false -> ct:log("no chromium: the page is not drawn");
        Chromium ->
            Dom = dom(Chromium, Html),
            {match, Cards} = re:run(Dom, <<"class=\"card flamecard[^\"]*\"">>, [global, unicode]),
            ?assertEqual(3, length(Cards)),
            %% (the words both labels share are left out of the caption,
            %% and kept in its title)
            ?assertMatch({match, _}, re:run(Dom, <<"<figcaption title=\"[^\"]*study[^\"]*\">"
                                                   "Differential: [^<]*flavor=jit[^<]* against [^<]*flavor=emu">>)),
            ?assertNotEqual(nomatch, binary:match(Dom, <<"process_main">>))
    end.

profile(#{<<"profile">> := P}) -> P.

%% beamlab profile --pid of an interpreter VM in flat mode: its C code,
%% process_main first, the mode and its cost said, the note instead of a
%% warning about perf support.
profile_flat_interpreter(Config) ->
    Erl = filename:join(?config(otp_bin, Config), "erl"),
    Port = open_port({spawn_executable, Erl},
                     [{args, ["-emu_flavor", "emu", "-noshell", "-noinput", "-eval",
                              "F = fun Loop(N) -> Loop((N * 7 + 1) rem 1000003) end, F(1)."]},
                      exit_status]),
    {os_pid, Pid} = erlang:port_info(Port, os_pid),
    try
        R = cli(Config, ["profile", "--pid", integer_to_list(Pid), "--duration", "2", "--mode", "flat",
                         "--top", "5"]),
        ct:log("~ts~n~ts", [maps:get(out, R), maps:get(err, R)]),
        ?assertEqual(0, maps:get(code, R)),
        Out = maps:get(out, R),
        ?assertNotEqual(nomatch, binary:match(Out, <<"mode flat: self time only">>)),
        ?assertNotEqual(nomatch, binary:match(Out, <<"the interpreter (emu flavour) runs no JIT code">>)),
        ?assertEqual(nomatch, binary:match(Out, <<"without perf support">>)),
        {match, _} = re:run(Out, <<"\\n1\\s+process_main\\s+emulator">>)
    after
        os:cmd("kill -KILL " ++ integer_to_list(Pid))
    end.

%% matrix --preset jit-study: both published scenarios under both
%% flavours (2 interleaved repetitions, 1 s loads: behaviour, not speed),
%% the published table's layout with this machine's figures, ratios with
%% intervals and verdicts; the report draws the matrix.
preset_jit_study(Config) ->
    Dir = beamlab_test_util:tmp_dir("jit-preset"),
    Save = filename:join(Dir, "study.json"),
    R = cli(Config, ["matrix", "--preset", "jit-study", "--otp", ?config(otp, Config), "-n", "2",
                     "--duration", "1", "--save", Save]),
    ct:log("~ts~n~ts", [maps:get(out, R), maps:get(err, R)]),
    ?assertEqual(0, maps:get(code, R)),
    Out = maps:get(out, R),
    [?assertNotEqual(nomatch, binary:match(Out, S))
     || S <- [<<"The JIT against the interpreter">>, <<"interpreter published">>, <<"JIT here">>,
              <<"JIT/interp. here (95% CI)">>, <<"24354 / 24352">>, <<"47626 / 47390">>,
              <<"consumer latency p50 / p95 / p99">>, <<"broker CPU per message">>,
              <<"single queue (amqp -x 1 -y 1 -u q1 -f mandatory -q 300 -c 100 -z 1)">>,
              <<"100 queues (amqp -x 150 -y 300">>]],
    %% each scenario's row: published ratio, ours, and no verdict from 2
    %% repetitions (an interval needs 3)
    [{match, _} = re:run(Out, <<Label/binary, " +[0-9]+ / [0-9]+ +[0-9]+ / [0-9]+ +[0-9]+ / [0-9]+ +[0-9]+ / [0-9]+ +",
                                 Pub/binary, " +[0-9.]+ +too_few_samples">>)
     || {Label, Pub} <- [{<<"single queue">>, <<"1.50">>}, {<<"100 queues">>, <<"1.27">>}]],
    {ok, Doc} = beamlab_result:load(Save),
    #{kind := matrix, extra := #{<<"preset">> := #{<<"name">> := <<"jit-study">>, <<"scenarios">> := [_, _]},
                                 <<"configs">> := Cs}} = Doc,
    ?assertEqual(4, length(Cs)),
    ?assert(lists:all(fun(#{<<"ok_runs">> := N}) -> N =:= 2 end, Cs)),
    ?assertEqual([<<"emu">>, <<"jit">>, <<"emu">>, <<"jit">>], [F || #{<<"flavor_reported">> := F} <- Cs]),
    Html = filename:join(Dir, "study.html"),
    #{code := 0} = cli(Config, ["report", Save, "-o", Html]),
    ?assert(filelib:is_regular(Html)),
    %% The matrix's charts: one per scenario (their loads differ by orders
    %% of magnitude), each row named by what tells it apart (the flavour),
    %% not by the OTP path every configuration shares.
    case beamlab_test_util:chromium() of
        false -> ct:log("no chromium: the page is not drawn");
        Chromium ->
            Dom = dom(Chromium, Html),
            %% (the title names the measure: its unit)
            [?assertMatch({match, _}, re:run(Dom, <<"<figcaption>", S/binary, ": sending rate avg \\([^)<]+\\) per configuration</figcaption>">>))
             || S <- [<<"single queue">>, <<"100 queues">>]],
            {match, Rows} = re:run(Dom, <<"class=\"interval-row\" data-row=\"([^\"]*)\"">>,
                                   [global, {capture, all_but_first, binary}]),
            ?assertEqual([[<<"flavor=emu">>], [<<"flavor=jit">>]], lists:usort(Rows))
    end.

%% The page as headless Chromium leaves it after its scripts ran.
dom(Chromium, Html) ->
    unicode:characters_to_binary(
      os:cmd(Chromium ++ " --headless --no-sandbox --disable-gpu --virtual-time-budget=5000 "
             "--dump-dom 'file://" ++ Html ++ "' 2>/dev/null")).
