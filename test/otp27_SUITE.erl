-module(otp27_SUITE).
%%% beamlab on OTP 27: the built ./beamlab run by the `escript' of the OTP
%%% that scripts/install-otp.sh builds (BEAMLAB_OTP27_PREFIX, default
%%% /opt/beamlab-otp/27), first on PATH. What only a newer OTP has:
%%% `run --profile tprof', the allocating functions of `--memory'
%%% (call_memory tracing), and, since that emulator keeps its symbols,
%%% `beamlab profile' naming the garbage collector's C functions. Plus a
%%% smoke test of the main commands on 27.
%%%
%%% Skipped, with the reason, when that OTP is not there; failed instead
%%% when BEAMLAB_REQUIRE_OTP27=1 (set by .ci/run, whose install step builds it).
-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-export([all/0, init_per_suite/1, end_per_suite/1]).
-export([smoke_run_suite_env/1, smoke_saved_file_compare_report/1, tprof_lists_the_runner/1,
         memory_names_the_allocating_function/1, suite_memory_counts_spawned_processes/1,
         profile_on_27/1, profile_names_gc_functions/1]).

all() ->
    [smoke_run_suite_env, smoke_saved_file_compare_report, tprof_lists_the_runner,
     memory_names_the_allocating_function, suite_memory_counts_spawned_processes,
     profile_on_27, profile_names_gc_functions].

init_per_suite(Config) ->
    case beamlab_test_util:otp27() of
        {error, Why} ->
            beamlab_test_util:otp27_missing(Why ++ ": OTP 27 tests NOT run");
        {ok, Bin} ->
            Dir = ?config(priv_dir, Config),
            %% Compiled by this (older) OTP: OTP 27 loads it.
            Src = filename:join(Dir, "otp27_hot.erl"),
            ok = file:write_file(Src, hot_module()),
            {ok, otp27_hot} = compile:file(Src, [debug_info, {outdir, Dir}]),
            [{otp_bin, Bin}, {hot_dir, Dir} | Config]
    end.

end_per_suite(_Config) ->
    ok.

%% spin/2: a tight loop; garbage/1 builds and drops short lists (minor
%% collections all the time); alloc/0 builds a 10 000-element list.
hot_module() ->
    <<"-module(otp27_hot).\n"
      "-export([work/0, spin/2, garbage/1, alloc/0, kids/0, kid/0]).\n"
      "work() -> spin(20000, 0).\n"
      "spin(0, A) -> A;\n"
      "spin(N, A) -> spin(N - 1, (A * 31 + N) band 16#ffff).\n"
      "garbage(0) -> ok;\n"
      "garbage(N) -> _ = lists:reverse(lists:seq(1, 200)), garbage(N - 1).\n"
      "alloc() -> lists:seq(1, 10000).\n"
      "kids() -> {_, R} = spawn_monitor(otp27_hot, kid, []), receive {'DOWN', R, _, _, _} -> ok end.\n"
      "kid() -> _ = alloc(), ok.\n">>.

cli(Config, Args) ->
    beamlab_test_util:cli(Args, #{env => beamlab_test_util:otp_env(?config(otp_bin, Config)),
                                  timeout => 300000}).

doc(Out) ->
    {ok, J} = beamlab_json:decode(Out),
    {ok, Doc} = beamlab_result:from_json(J),
    Doc.

release(#{env := #{<<"otp">> := #{<<"release">> := R}}}) -> R.

%% run, suite (one small workload) and env work on 27, and say 27.
smoke_run_suite_env(Config) ->
    #{code := 0, out := Run} = cli(Config, ["run", "lists:seq(1, 100).", "-s", "1", "--format", "json"]),
    RunDoc = doc(Run),
    ?assertEqual(<<"27">>, release(RunDoc)),
    #{benchmarks := [#{samples := [_ | _]}]} = RunDoc,
    #{code := 0, out := Suite} = cli(Config, ["suite", "spawn", "--param", "spawn.n=1000",
                                              "--param", "spawn.variant=monitor", "-n", "2", "--format", "json"]),
    SuiteDoc = doc(Suite),
    ?assertEqual(<<"27">>, release(SuiteDoc)),
    #{benchmarks := [#{samples := [_, _]} | _]} = SuiteDoc,
    #{code := 0, out := Env} = cli(Config, ["env", "--format", "json"]),
    {ok, #{<<"otp">> := #{<<"release">> := <<"27">>}}} = beamlab_json:decode(Env),
    #{code := 0, out := EnvText} = cli(Config, ["env"]),
    ?assertNotEqual(nomatch, binary:match(EnvText, <<"27">>)).

%% A file saved on 27 is read back by compare and report on 27 (and by
%% this OTP's tools: the format does not depend on the release).
smoke_saved_file_compare_report(Config) ->
    Dir = beamlab_test_util:tmp_dir("otp27"),
    A = filename:join(Dir, "a.json"),
    B = filename:join(Dir, "b.json"),
    #{code := 0} = cli(Config, ["run", "lists:seq(1, 100).", "-s", "1", "-q", "--save", A]),
    #{code := 0} = cli(Config, ["run", "lists:seq(1, 200).", "-s", "1", "-q", "--save", B]),
    #{code := 0, out := Cmp} = cli(Config, ["compare", A, B]),
    ?assertNotEqual(nomatch, binary:match(Cmp, <<"lists:seq">>)),
    Html = filename:join(Dir, "r.html"),
    #{code := 0} = cli(Config, ["report", A, B, "-o", Html]),
    {ok, Page} = file:read_file(Html),
    ?assertNotEqual(nomatch, binary:match(Page, <<"<html">>)).

%% `run --profile tprof' (OTP 27 and later) lists the runner's function.
tprof_lists_the_runner(Config) ->
    Dir = ?config(hot_dir, Config),
    #{code := 0, out := Out} = cli(Config, ["run", "otp27_hot:work().", "-pa", Dir, "-s", "1",
                                            "--profile", "tprof", "--format", "json"]),
    #{benchmarks := [#{extra := #{<<"profile">> := P}}]} = doc(Out),
    ct:log("~p", [P]),
    ?assertEqual(<<"tprof">>, maps:get(<<"tool">>, P)),
    [Spin] = [R || R = #{<<"function">> := <<"otp27_hot:spin/2">>} <- maps:get(<<"rows">>, P)],
    ?assert(maps:get(<<"calls">>, Spin) > 1000),
    #{code := 0, out := Text} = cli(Config, ["run", "otp27_hot:work().", "-pa", Dir, "-s", "1",
                                             "--profile", "tprof"]),
    ?assertNotEqual(nomatch, binary:match(Text, <<"tprof profile">>)),
    ?assertNotEqual(nomatch, binary:match(Text, <<"otp27_hot:spin/2">>)).

%% `run --memory' on 27 names the functions that allocate, with words per
%% iteration: lists:seq(1, 10000) allocates 20 000 words in lists:seq_loop/3.
memory_names_the_allocating_function(Config) ->
    Dir = ?config(hot_dir, Config),
    #{code := 0, out := Out} = cli(Config, ["run", "otp27_hot:alloc().", "-pa", Dir, "-s", "1",
                                            "--memory", "--format", "json"]),
    #{benchmarks := [#{extra := #{<<"per_iteration">> := M}}]} = doc(Out),
    ct:log("~p", [M]),
    Within = fun(Expected, Got) -> ?assert(abs(Got - Expected) =< 0.05 * Expected) end,
    Within(20000, maps:get(<<"words">>, M)),
    Allocators = maps:get(<<"allocators">>, M),
    Words = maps:from_list([{F, W} || #{<<"function">> := F, <<"words">> := W} <- Allocators]),
    ct:log("allocators: ~p", [Words]),
    Within(20000, lists:sum(maps:values(Words))),
    ?assert(maps:get(<<"lists:seq_loop/3">>, Words, 0) > 15000),
    %% The runner's own function and a spawned process's are named too.
    #{code := 0, out := Out2} = cli(Config, ["run", "otp27_hot:kids().", "-pa", Dir, "-s", "1",
                                             "--memory", "--format", "json"]),
    #{benchmarks := [#{extra := #{<<"per_iteration">> := M2}}]} = doc(Out2),
    ct:log("~p", [M2]),
    Within(20000, maps:get(<<"words">>, M2)),
    Names2 = [F || #{<<"function">> := F} <- maps:get(<<"allocators">>, M2)],
    ?assert(lists:member(<<"lists:seq_loop/3">>, Names2)),
    ?assert(lists:member(<<"otp27_hot:kids/0">>, Names2)),
    #{code := 0, out := Text} = cli(Config, ["run", "otp27_hot:alloc().", "-pa", Dir, "-s", "1", "--memory"]),
    ?assertNotEqual(nomatch, binary:match(Text, <<"lists:seq_loop/3">>)).

%% suite --memory on 27 as on 25: the wrapped copy of the workload.
suite_memory_counts_spawned_processes(Config) ->
    #{code := 0, out := Out} = cli(Config, ["suite", "spawn", "--param", "spawn.n=1000",
                                            "--param", "spawn.variant=monitor", "-n", "1",
                                            "--memory", "--format", "json"]),
    #{benchmarks := [#{extra := #{<<"per_repetition">> := M}} | _]} = doc(Out),
    ct:log("~p", [M]),
    ?assertEqual(1000, maps:get(<<"spawned">>, M)),
    ?assertEqual(true, maps:get(<<"spawns_wrapped">>, M)).

%% `beamlab profile' runs on 27 (perf and the JIT's perf map).
profile_on_27(Config) ->
    with_perf(fun() -> profile_on_27_(Config) end).

profile_on_27_(Config) ->
    Dir = ?config(hot_dir, Config),
    #{code := 0, out := Out} = cli(Config, ["profile", "--format", "json", "--",
                                            "run", "otp27_hot:work().", "-pa", Dir, "-s", "2"]),
    #{kind := profile, extra := #{<<"profile">> := P}} = doc(Out),
    Top = [N || #{<<"name">> := N} <- lists:sublist(maps:get(<<"functions">>, P), 5)],
    ct:log("top 5: ~p", [Top]),
    ?assert(lists:member(<<"otp27_hot:spin/2">>, Top)),
    ?assertEqual(true, maps:get(<<"perf_support">>, P)),
    %% OTP 27 names its threads erts_sched_N, ...: the Erlang code ran on
    %% the schedulers.
    #{<<"threads">> := #{<<"scheduler">> := Sched}} = P,
    ct:log("threads: ~p", [maps:get(<<"threads">>, P)]),
    ?assert(Sched > 0.5 * maps:get(<<"samples">>, P)).

%% The source-built emulator keeps its symbols: GC's static functions
%% (do_minor, ...) are named, in the emulator category, with their note,
%% instead of one `[beam.smp]' bucket.
profile_names_gc_functions(Config) ->
    with_perf(fun() -> profile_names_gc_functions_(Config) end).

profile_names_gc_functions_(Config) ->
    Dir = ?config(hot_dir, Config),
    #{code := 0, out := Out} = cli(Config, ["profile", "--format", "json", "--",
                                            "run", "otp27_hot:garbage(100).", "-pa", Dir, "-s", "2"]),
    #{extra := #{<<"profile">> := P}} = doc(Out),
    Fs = maps:get(<<"functions">>, P),
    ct:log("~p", [lists:sublist(Fs, 25)]),
    Gc = [F || F = #{<<"name">> := N, <<"category">> := <<"emulator">>} <- Fs,
               lists:member(N, [<<"do_minor">>, <<"sweep">>, <<"minor_collection">>])
                   orelse binary:match(N, <<"garbage_collect">>) =/= nomatch],
    ?assertNotEqual([], Gc),
    ?assert(lists:any(fun(#{<<"note">> := Note}) -> binary:match(Note, <<"garbage collection">>) =/= nomatch;
                         (_) -> false
                      end, Gc)).

with_perf(Fun) ->
    case os:find_executable("perf") of
        false -> {skip, "perf is not installed (Debian package linux-perf)"};
        _ -> Fun()
    end.
