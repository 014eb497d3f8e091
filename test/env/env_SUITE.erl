%%% Common Test suite for the environment lab: the env report of this
%%% machine, the telemetry series, detectors provoked on purpose in fresh
%%% VMs (and quiet on healthy runs).
-module(env_SUITE).
-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-export([all/0, suite/0, init_per_suite/1, end_per_suite/1]).
-export([env_report_here/1, telemetry_series_shape/1, telemetry_restores_flags/1,
         collapse_provoked/1, schedulers_offline_provoked/1, healthy_run_quiet/1,
         throttling_from_fake_cgroup/1, noisy_result/1, timer_provoked_and_quiet/1,
         busy_wait_provoked_and_quiet/1,
         matrix_schedulers/1, matrix_failed_config_goes_on/1,
         cli_env/1, cli_env_json/1, cli_matrix_errors/1]).
%% run inside peer VMs
-export([busy/1, busy_pinned/2, observe/2, cpu_work/1, tickers/1]).

suite() -> [{timetrap, {minutes, 3}}].

all() ->
    [env_report_here, telemetry_series_shape, telemetry_restores_flags,
     collapse_provoked, schedulers_offline_provoked, healthy_run_quiet,
     throttling_from_fake_cgroup, noisy_result, timer_provoked_and_quiet,
     busy_wait_provoked_and_quiet,
     matrix_schedulers, matrix_failed_config_goes_on,
     cli_env, cli_env_json, cli_matrix_errors].

init_per_suite(Config) -> Config.
end_per_suite(_Config) -> ok.

%%--------------------------------------------------------------------

env_report_here(_Config) ->
    R = beamlab_env:report(),
    #{schedulers := #{online := Online, total := Total}, cpu := Cpu, os := Os} = R,
    ?assertEqual(erlang:system_info(schedulers_online), Online),
    ?assertEqual(erlang:system_info(schedulers), Total),
    ?assertEqual(erlang:system_info(logical_processors_available),
                 maps:get(logical_processors_available, Cpu)),
    {ok, Host} = inet:gethostname(),
    ?assertEqual(list_to_binary(Host), maps:get(hostname, Os)),
    case os:type() of
        {unix, linux} ->
            ?assert(is_integer(maps:get(threads, Cpu))),
            ?assert(is_binary(maps:get(model, Cpu)));
        _ -> ok
    end,
    Text = iolist_to_binary(beamlab_render_env:render(beamlab_json:canonical(R))),
    ct:log("~ts", [Text]),
    ?assertNotEqual(nomatch, binary:match(Text, maps:get(erts, maps:get(otp, R)))).

telemetry_series_shape(_Config) ->
    C = counters:new(1, []),
    W = spawn(fun() -> count_loop(C) end),
    %% The rates fun runs once per reading (the first at start): it tells
    %% how many samples have been taken.
    Readings = counters:new(1, []),
    {ok, P} = beamlab_runtime_telemetry:start_link(
                #{interval => 200, msacc => true,
                  rates => fun() ->
                                   counters:add(Readings, 1, 1),
                                   [{<<"ops">>, counters:get(C, 1)}]
                           end}),
    ok = beamlab_test_util:wait_until(fun() -> counters:get(Readings, 1) >= 1 + 5 end, 30000,
                                      five_samples),
    Last = beamlab_runtime_telemetry:last(P),
    ?assert(is_map(Last)),
    S = beamlab_runtime_telemetry:stop(P),
    exit(W, kill),
    #{samples := N, t_ms := Ts, util := U, util_schedulers := Per, run_queue := Rq,
      memory := #{total := Mem}, rates := #{<<"ops">> := Ops}, msacc := Msacc,
      monitor_wall_pct := Wall, monitor_reductions := MonReds, reductions_per_s := Reds} = S,
    ?assert(N >= 5),
    [?assertEqual(N, length(L)) || L <- [Ts, U, Per, Rq, Mem, Ops, Wall, MonReds, Reds]],
    ?assertEqual(lists:sort(Ts), Ts),
    [?assertEqual(erlang:system_info(schedulers), length(P1)) || P1 <- Per],
    %% the counting loop is always runnable: about one scheduler's worth of
    %% busy time, wherever it runs (the mean over schedulers would shrink
    %% with their number)
    ?assert(lists:max(U) > 0),
    ?assert(lists:max(maps:get(scheduler_busy_cores, S)) > 0.5),
    ?assert(lists:min(Ops) > 0),
    %% a share of wall time, waiting included (above 100 when a sample
    %% outlasts the interval on an overloaded host), never negative; the
    %% sampler's work is its reductions (the first sample has none: the
    %% baseline before it did not count them)
    ?assert(lists:all(fun(X) -> X >= 0 end, Wall)),
    ?assert(lists:all(fun(X) -> X >= 0 end, MonReds)),
    ?assert(lists:sum(MonReds) > 0),
    ?assert(lists:member(emulator, maps:keys(Msacc))),
    ct:log("~p", [S]).

telemetry_restores_flags(_Config) ->
    false = erlang:system_flag(microstate_accounting, false),
    {ok, P} = beamlab_runtime_telemetry:start_link(#{interval => 100, msacc => true}),
    ?assertEqual(true, erlang:system_flag(microstate_accounting, true)),
    _ = beamlab_runtime_telemetry:stop(P),
    ?assertEqual(false, erlang:system_flag(microstate_accounting, false)).

%% Three busy processes pinned to scheduler 1 of 2: the run queue of
%% scheduler 1 holds runnable work that scheduler 2 may not steal.
collapse_provoked(Config) ->
    {Peer, _} = start_peer(["+S", "2"], Config),
    try
        case peer:call(Peer, ?MODULE, busy_pinned, [3, 1], 60000) of
            unsupported -> {skip, "spawn_opt {scheduler, N} unsupported here"};
            ok ->
                {Series, Env} = peer:call(Peer, ?MODULE, observe, [250, 1500], 60000),
                Fs = beamlab_env_detect:findings(#{telemetry => Series, env => Env, timer => skip}),
                ct:log("~p~n~p", [maps:get(util_schedulers, Series), Fs]),
                [F] = [F || F = #{id := <<"scheduler_imbalance">>} <- Fs],
                ?assert(maps:get(<<"samples">>, maps:get(data, F)) >= 3)
        end
    after
        peer:stop(Peer)
    end.

%% +S 2:1: one of two schedulers online while three processes want CPU.
schedulers_offline_provoked(Config) ->
    {Peer, _} = start_peer(["+S", "2:1"], Config),
    try
        ok = peer:call(Peer, ?MODULE, busy, [3], 60000),
        {Series, Env} = peer:call(Peer, ?MODULE, observe, [250, 1250], 60000),
        ?assertEqual(1, maps:get(online, maps:get(schedulers, Env))),
        Fs = beamlab_env_detect:findings(#{telemetry => Series, env => Env, timer => skip}),
        ct:log("~p", [Fs]),
        [F] = [F || F = #{id := <<"schedulers_offline">>} <- Fs],
        ?assertMatch(#{<<"online">> := 1, <<"total">> := 2}, maps:get(data, F))
    after
        peer:stop(Peer)
    end.

%% Four CPU-bound processes on two schedulers: both busy, nothing wrong
%% with the VM. Machine-wide findings may appear on a shared host, but only
%% with evidence that holds.
healthy_run_quiet(Config) ->
    {Peer, _} = start_peer(["+S", "2"], Config),
    try
        ok = peer:call(Peer, ?MODULE, busy, [4], 60000),
        {Series, Env} = peer:call(Peer, ?MODULE, observe, [250, 1250], 60000),
        Fs = beamlab_env_detect:findings(#{telemetry => Series, env => Env, timer => skip}),
        ct:log("~p~n~p", [Series, Fs]),
        VmIds = [Id || #{id := Id} <- Fs, Id =/= <<"machine_overloaded">>],
        ?assertEqual([], VmIds),
        [begin
             #{data := #{<<"steal_pct">> := St, <<"cpus">> := Cpus, <<"others_cores">> := O,
                         <<"own_cores">> := Own}} = F,
             ?assert(St >= 5 orelse beamlab_runtime_probe:contended(#{others_cores => O, own_cores => Own}, Cpus))
         end || F = #{id := <<"machine_overloaded">>} <- Fs]
    after
        peer:stop(Peer)
    end.

%% Processes that wake every millisecond do almost no work. With long
%% busy-wait thresholds the schedulers spin between wake-ups, so the OS
%% charges the VM far more CPU than its schedulers used; with busy-wait
%% off it does not.
busy_wait_provoked_and_quiet(Config) ->
    Spin = ["+S", "2", "+sbwt", "very_long", "+sbwtdcpu", "very_long", "+sbwtdio", "very_long",
            "+swt", "very_low"],
    NoSpin = ["+S", "2", "+sbwt", "none", "+sbwtdcpu", "none", "+sbwtdio", "none"],
    [Provoked, Quiet] =
        [begin
             {Peer, _} = start_peer(Args, Config),
             try
                 ok = peer:call(Peer, ?MODULE, tickers, [20], 60000),
                 {Series, Env} = peer:call(Peer, ?MODULE, observe, [250, 2000], 60000),
                 Fs = beamlab_env_detect:findings(#{telemetry => Series, env => Env, timer => skip}),
                 ct:log("~p~nos ~p~nbusy ~p~n~p", [Args, maps:get(os_cpu_cores, Series, none),
                                                 maps:get(scheduler_busy_cores, Series), Fs]),
                 [F || F = #{id := <<"busy_wait">>} <- Fs]
             after
                 peer:stop(Peer)
             end
         end || Args <- [Spin, NoSpin]],
    ?assertMatch([#{severity := warning}], Provoked),
    ?assertEqual([], Quiet).

%% Telemetry reads cgroup cpu.stat below `root': a fake tree whose
%% throttling counters grow while the monitor samples.
throttling_from_fake_cgroup(Config) ->
    Root = filename:join(?config(priv_dir, Config), "fakeroot"),
    Cg = filename:join(Root, "sys/fs/cgroup"),
    ok = filelib:ensure_dir(filename:join(Cg, "x")),
    ok = filelib:ensure_dir(filename:join([Root, "proc", "self", "x"])),
    ok = file:write_file(filename:join(Root, "proc/self/cgroup"), "0::/\n"),
    ok = file:write_file(filename:join(Cg, "cpu.max"), "50000 100000\n"),
    Write = fun(I) ->
                    file:write_file(filename:join(Cg, "cpu.stat"),
                                    io_lib:format("usage_usec ~b\nnr_periods ~b\nnr_throttled ~b\nthrottled_usec ~b\n",
                                                  [I * 50000, I * 10, I * 4, I * 20000]))
            end,
    ok = Write(0),
    %% The rates fun runs at the start of every reading, before cpu.stat is
    %% read: after each rewrite, wait for a reading that began after it, so
    %% every rewrite is sampled.
    Self = self(),
    {ok, P} = beamlab_runtime_telemetry:start_link(
                #{interval => 200, root => Root,
                  rates => fun() -> Self ! telemetry_reading, [] end}),
    lists:foreach(fun(I) ->
                          ok = Write(I),
                          flush_readings(),
                          receive telemetry_reading -> ok
                          after 30000 -> error({no_reading_after_write, I})
                          end
                  end, lists:seq(1, 10)),
    S = beamlab_runtime_telemetry:stop(P),
    flush_readings(),
    %% Every rewrite adds 4, and every one was sampled.
    ?assertEqual(40, lists:sum(maps:get(cgroup_nr_throttled, S))),
    Env = beamlab_env:report(#{root => Root}),
    ?assertMatch(#{version := 2, quota_cores := 0.5}, maps:get(cgroup, Env)),
    [F] = beamlab_env_detect:findings(#{telemetry => S, env => Env, timer => skip}),
    ct:log("~p", [F]),
    ?assertMatch(#{id := <<"cgroup_throttling">>, severity := critical}, F).

%% Durations of randomly long sleeps are noisy; the reductions a fixed
%% computation costs are steady however loaded the machine is (timings of
%% a steady workload would not be on an overloaded shared host).
noisy_result(_Config) ->
    Measure = fun(SleepFun) ->
                      [begin
                           T0 = erlang:monotonic_time(microsecond),
                           timer:sleep(SleepFun()),
                           erlang:monotonic_time(microsecond) - T0
                       end || _ <- lists:seq(1, 12)]
              end,
    Noisy = Measure(fun() -> rand:uniform(60) end),
    Steady = [begin
                  {reductions, R0} = process_info(self(), reductions),
                  ok = count_down(10000 + I rem 2),
                  {reductions, R1} = process_info(self(), reductions),
                  R1 - R0
              end || I <- lists:seq(1, 12)],
    Bench = fun(Name, Samples) -> #{name => Name, samples => Samples,
                                    stats => beamlab_stats:summary(Samples)} end,
    Result = #{benchmarks => [Bench(<<"random_sleep">>, Noisy), Bench(<<"fixed_work_reductions">>, Steady)]},
    Fs = beamlab_env_detect:findings(#{result => Result, timer => skip}),
    ct:log("~p", [Fs]),
    ?assertEqual([<<"random_sleep">>],
                 [B || #{id := <<"noisy_measurement">>, data := #{<<"benchmark">> := B}} <- Fs]).

%% 2000 busy processes on one scheduler delay every timer wake-up; an idle
%% fresh VM wakes on time.
timer_provoked_and_quiet(Config) ->
    {Busy, _} = start_peer(["+S", "1"], Config),
    {Idle, _} = start_peer(["+S", "1"], Config),
    try
        ok = peer:call(Busy, ?MODULE, busy, [2000], 60000),
        Late = peer:call(Busy, beamlab_runtime_probe, timer, [#{}], 60000),
        OnTime = peer:call(Idle, beamlab_runtime_probe, timer, [#{}], 60000),
        ct:log("late ~p~non time ~p", [Late, OnTime]),
        [#{id := <<"timer_late">>}] = beamlab_env_detect:findings(#{timer => Late}),
        [] = beamlab_env_detect:findings(#{timer => OnTime})
    after
        peer:stop(Busy),
        peer:stop(Idle)
    end.

%% +S 1 against +S 2, each repetition a fresh VM running a CPU-bound
%% workload; every VM's own env report proves its scheduler count. (No
%% assertion on the speedup's size: machines are noisy.)
matrix_schedulers(_Config) ->
    {ok, Cs} = beamlab_env_matrix:configs(#{sweep => [1, 2]}),
    Spec = #{configs => Cs, command => ["cpu_work"], repeat => 2, sweep => true,
             argv => ["matrix"], started_at => beamlab_runtime_clock:rfc3339(),
             inner => {?MODULE, cpu_work, [300]}, paths => test_paths()},
    Self = self(),
    {ok, R} = beamlab_env_matrix:run(Spec, #{progress => fun(L) -> Self ! {progress, L} end}),
    Text = unicode:characters_to_binary(beamlab_render_matrix:render(R, #{unicode => false})),
    ct:log("~ts", [Text]),
    #{benchmarks := [B1, B2], extra := #{<<"configs">> := [C1, C2]}} = R,
    ?assertMatch(#{<<"status">> := <<"ok">>, <<"ok_runs">> := 2, <<"schedulers_online">> := 1,
                   <<"env">> := #{<<"schedulers">> := #{<<"online">> := 1, <<"total">> := 1}}}, C1),
    ?assertMatch(#{<<"status">> := <<"ok">>, <<"ok_runs">> := 2, <<"schedulers_online">> := 2,
                   <<"env">> := #{<<"schedulers">> := #{<<"online">> := 2, <<"total">> := 2}}}, C2),
    ?assertEqual(2, length(maps:get(samples, B1))),
    #{extra := #{<<"speedup">> := S, <<"efficiency">> := E, <<"schedulers_online">> := 2}} = B2,
    ?assert(S > 0 andalso abs(E - S / 2) < 1.0e-9),
    ?assertMatch(#{comparison := #{verdict := _}}, B2),
    ?assertEqual(4, length(flush_progress())),
    [?assertNotEqual(nomatch, binary:match(Text, P)) || P <- [<<"speedup">>, <<"+S 2:2">>]].

%% A VM that refuses its flags is reported; the other configuration runs.
matrix_failed_config_goes_on(_Config) ->
    {ok, Cs} = beamlab_env_matrix:configs(#{vm => ["+S 1", "+sbt no_such_bind_type"]}),
    Spec = #{configs => Cs, command => ["cpu_work"], repeat => 2,
             argv => ["matrix"], started_at => beamlab_runtime_clock:rfc3339(),
             inner => {?MODULE, cpu_work, [100]}, paths => test_paths()},
    {ok, R} = beamlab_env_matrix:run(Spec, #{}),
    #{benchmarks := [B], extra := #{<<"configs">> := [Ok, Bad]}} = R,
    ?assertMatch(#{group := <<"+S 1">>}, B),
    ?assertMatch(#{<<"status">> := <<"ok">>, <<"ok_runs">> := 2}, Ok),
    ?assertMatch(#{<<"status">> := <<"failed">>, <<"runs">> := 1, <<"errors">> := [_]}, Bad),
    ct:log("~ts", [beamlab_render_matrix:render(R, #{unicode => false})]).

cli_env(_Config) ->
    #{code := 0, out := Out} = beamlab_test_util:cli(["env"]),
    [?assertNotEqual(nomatch, binary:match(Out, P)) || P <- [<<"schedulers">>, <<"NUMA">>, <<"cgroup CPU">>]],
    Fixture = filename:join([beamlab_test_util:root(), "test", "fixtures", "env", "numa2"]),
    #{code := 0, out := Numa} = beamlab_test_util:cli(["env", "--root", Fixture]),
    ?assertNotEqual(nomatch, binary:match(Numa, <<"node 1: cpus 4,5,6,7, distances 21 10">>)),
    beamlab_test_util:assert_one_line_error(
      #{code := 2} = beamlab_test_util:cli(["env", "--root", "/no/such/dir"])).

cli_env_json(_Config) ->
    #{code := 0, out := Out} = beamlab_test_util:cli(["env", "--format", "json"]),
    {ok, #{<<"schedulers">> := #{<<"online">> := N}, <<"otp">> := #{<<"release">> := Rel}}} =
        beamlab_json:decode(Out),
    ?assert(is_integer(N)),
    ?assertEqual(list_to_binary(erlang:system_info(otp_release)), Rel).

cli_matrix_errors(_Config) ->
    #{code := 2, err := E1} = R1 = beamlab_test_util:cli(["matrix", "--vm", "+S 1"]),
    beamlab_test_util:assert_one_line_error(R1),
    ?assertNotEqual(nomatch, binary:match(E1, <<"no command to run">>)),
    #{code := 2, err := E2} = beamlab_test_util:cli(["matrix", "--wrap", "no-such-wrapper-xyz -c 0",
                                                     "--", "env"]),
    ?assertNotEqual(nomatch, binary:match(E2, <<"no-such-wrapper-xyz is not installed">>)),
    #{code := 2, err := E3} = beamlab_test_util:cli(["matrix", "--sweep-schedulers", "0..2", "--", "env"]),
    ?assertNotEqual(nomatch, binary:match(E3, <<"bad scheduler range">>)).

flush_readings() ->
    receive telemetry_reading -> flush_readings()
    after 0 -> ok
    end.

flush_progress() ->
    receive {progress, L} -> [L | flush_progress()]
    after 0 -> []
    end.

%% A directory holding only this suite's code (beamlab's own modules are
%% loaded into peers by beamlab_runtime_peer).
test_paths() ->
    Dir = beamlab_test_util:tmp_dir("env-suite"),
    {ok, _} = file:copy(code:which(?MODULE), filename:join(Dir, atom_to_list(?MODULE) ++ ".beam")),
    [Dir].

%%--------------------------------------------------------------------
%% Inside peers
%%--------------------------------------------------------------------

%% Two CPU-bound workers per online scheduler; throughput sampled every
%% 50 ms for Ms, returned as a one-benchmark result document.
cpu_work(Ms) ->
    C = counters:new(1, [write_concurrency]),
    Workers = [spawn(fun() -> work_loop(C) end)
               || _ <- lists:seq(1, 2 * erlang:system_info(schedulers_online))],
    Samples = sample_counter(C, Ms div 50, counters:get(C, 1)),
    [exit(W, kill) || W <- Workers],
    B = beamlab_result:benchmark(<<"cpu_work">>, Samples,
                                 #{unit => <<"ops/s">>, better => higher, metric => <<"throughput">>}),
    Doc = beamlab_result:new(bench, #{command => ["cpu_work"], started_at => beamlab_runtime_clock:rfc3339()}),
    {0, beamlab_result:add_benchmarks(Doc, [B])}.

sample_counter(_, 0, _) -> [];
sample_counter(C, N, Prev) ->
    timer:sleep(50),
    Now = counters:get(C, 1),
    [(Now - Prev) * 20 | sample_counter(C, N - 1, Now)].

work_loop(C) ->
    _ = erlang:phash2(lists:seq(1, 100)),
    counters:add(C, 1, 1),
    work_loop(C).

busy(N) ->
    _ = [spawn(fun spin/0) || _ <- lists:seq(1, N)],
    ok.

busy_pinned(N, Sched) ->
    try
        _ = [spawn_opt(fun spin/0, [{scheduler, Sched}]) || _ <- lists:seq(1, N)],
        ok
    catch error:badarg -> unsupported
    end.

%% Telemetry over Ms of wall time: Ms div Interval samples (counted as they
%% are taken, however late the sampler runs).
observe(Interval, Ms) ->
    Self = self(),
    {ok, P} = beamlab_runtime_telemetry:start_link(
                #{interval => Interval, rates => fun() -> Self ! telemetry_reading, [] end}),
    %% one reading at start, then one per sample
    ok = await_readings(1 + Ms div Interval),
    Series = beamlab_runtime_telemetry:stop(P),
    {Series, beamlab_env:report()}.

await_readings(0) -> ok;
await_readings(N) ->
    receive telemetry_reading -> await_readings(N - 1)
    after 60000 -> error({telemetry_readings_missing, N})
    end.

spin() -> spin().

tickers(N) ->
    _ = [spawn(fun() -> timer:sleep(I rem 10), tick() end) || I <- lists:seq(1, N)],
    ok.

tick() ->
    receive after 1 -> tick() end.

%% No allocation, so no garbage collection: a steady reduction count.
count_down(0) -> ok;
count_down(N) -> count_down(N - 1).

count_loop(C) ->
    counters:add(C, 1, 1),
    count_loop(C).

%%--------------------------------------------------------------------

start_peer(Args, _Config) ->
    Paths = lists:usort([filename:dirname(code:which(M)) || M <- [?MODULE, beamlab_env]]),
    {ok, Peer, Node} = peer:start_link(#{connection => standard_io,
                                         args => Args ++ ["-pa" | Paths]}),
    {Peer, Node}.
