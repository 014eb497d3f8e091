%%% The micro-benchmark engine through its API: every mode, hook, runner
%%% form, the stopping rule, failures (raise, exit, throw, hang, hooks),
%%% several jobs with a baseline, interleaving, and isolation in a fresh VM.
%%% Durations are small (50-100 ms) so the suite stays fast; nothing asserts
%%% a timing, only behaviour and counts.
-module(engine_SUITE).
-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-compile([export_all, nowarn_export_all]).

all() ->
    [continuous_basic, continuous_concurrency, timed_mode, runner_forms, fun_and_mfa_runners,
     state_passing, hooks_order, hook_values_reach_runner, init_all_defaults_via_api,
     squeeze_mode, stopping_rule_rel_ci, stopping_rule_caps, warmup_discarded, single_sample,
     runner_raises, runner_exits, runner_throws, runner_hangs_continuous, runner_hangs_timed,
     init_fails, init_runner_fails, done_fails, init_hangs, init_runner_hangs, done_hangs, slower_than_sample,
     several_jobs_baseline, baseline_by_label, failed_baseline_falls_back, interleaving_no_overlap, interrupt_gives_partial,
     busy_wait_timer, modules_purged, result_document_json, telemetry_recorded, public_api, isolated_fresh_vm,
     isolated_vm_args, isolated_code_paths].

suite() ->
    [{timetrap, {seconds, 60}}].

opts(Extra) ->
    maps:merge(#{duration => 50, samples => 3, checks => false}, Extra).

run(Jobs, Extra) ->
    {ok, Doc} = beamlab_engine:run(Jobs, opts(Extra), undefined),
    Doc.

bench(Doc) ->
    [B] = maps:get(benchmarks, Doc),
    B.

%% Free-form sections (params, extra) are JSON objects: binary keys.
status(B) -> maps:get(<<"status">>, maps:get(extra, B)).
err(B) -> maps:get(<<"error">>, maps:get(extra, B)).

%%--------------------------------------------------------------------

continuous_basic(_) ->
    Doc = run([#{runner => "rand:uniform()."}], #{}),
    #{kind := bench, partial := false, schema := <<"beamlab.result">>} = Doc,
    B = bench(Doc),
    <<"ok">> = status(B),
    #{samples := S, stats := #{n := 3}, unit := <<"iterations">>, better := higher} = B,
    3 = length(S),
    true = lists:all(fun(X) -> is_integer(X) andalso X > 0 end, S),
    #{<<"qps">> := Q, <<"iteration_ns">> := I} = maps:get(extra, B),
    true = Q > 0 andalso I > 0.

continuous_concurrency(_) ->
    %% Each iteration notes how many iterations are under way (itself
    %% included) and which process runs it.
    Tab = ets:new(conc, [public]),
    ets:insert(Tab, {busy, 0}),
    Runner = fun() ->
                     N = ets:update_counter(Tab, busy, 1),
                     ets:insert(Tab, [{{busy_seen, N}}, {{runner, self()}}]),
                     timer:sleep(5),
                     ets:update_counter(Tab, busy, -1)
             end,
    B = bench(run([#{runner => Runner}], #{concurrency => 3, duration => 100})),
    #{params := #{<<"concurrency">> := 3}} = B,
    true = lists:all(fun(X) -> is_integer(X) andalso X > 0 end, maps:get(samples, B)),
    %% three runner processes, iterating side by side, never more
    3 = length(ets:match(Tab, {{runner, '_'}})),
    3 = lists:max([N || [N] <- ets:match(Tab, {{busy_seen, '$1'}})]).

timed_mode(_) ->
    Doc = run([#{runner => "put(n, case get(n) of undefined -> 1; N -> N + 1 end)."}],
              #{loop => 1000, samples => 4}),
    B = bench(Doc),
    #{unit := <<"ns">>, better := lower, samples := S} = B,
    4 = length(S),
    #{<<"mode">> := <<"timed">>} = maps:get(params, Doc),
    #{<<"iterations_per_sample">> := 1000, <<"iteration_ns">> := I} = maps:get(extra, B),
    true = I > 0.

runner_forms(_) ->
    Codes = ["rand:uniform().", "r() -> rand:uniform().", "{rand, uniform, []}",
             "r(X) -> rand:uniform(X)."],
    Jobs = [#{runner => C, init_runner => "10."} || C <- Codes],
    Doc = run(Jobs, #{samples => 1}),
    [<<"ok">>] = lists:usort([status(B) || B <- maps:get(benchmarks, Doc)]).

fun_and_mfa_runners(_) ->
    Doc = run([#{runner => fun() -> rand:uniform() end},
               #{runner => fun(X) -> X + 1 end, init_runner => fun() -> 1 end},
               #{runner => fun(_, S) -> S + 1 end, init_runner => fun() -> 0 end},
               #{runner => {rand, uniform, [5]}}], #{samples => 1}),
    [<<"ok">>] = lists:usort([status(B) || B <- maps:get(benchmarks, Doc)]).

%% runner/2: the state returned by one iteration is the next iteration's,
%% the first state being the init_runner result.
state_passing(_) ->
    Tab = ets:new(state, [public]),
    Doc = run([#{runner => fun(_Init, {T, N}) -> ets:insert(T, {last, N}), {T, N + 1} end,
                 init_runner => fun(T) -> {T, 0} end, init => fun() -> Tab end}],
              #{loop => 100, samples => 1}),
    <<"ok">> = status(bench(Doc)),
    [{last, 99}] = ets:lookup(Tab, last).

hooks_order(_) ->
    Self = self(),
    Doc = run([#{runner => "ok.",
                 init => fun() -> Self ! {hook, init, self()}, init_value end,
                 init_runner => fun(I) -> Self ! {hook, init_runner, I}, ir end,
                 done => fun(I) -> Self ! {hook, done, I} end}],
              #{concurrency => 2, samples => 1}),
    <<"ok">> = status(bench(Doc)),
    Msgs = flush_hooks(),
    [{init, _}, {init_runner, init_value}, {init_runner, init_value}, {done, init_value}] =
        [{H, V} || {hook, H, V} <- Msgs].

flush_hooks() ->
    receive {hook, _, _} = M -> [M | flush_hooks()]
    after 0 -> []
    end.

hook_values_reach_runner(_) ->
    Tab = ets:new(seen, [public, bag]),
    Doc = run([#{runner => fun(X) -> ets:insert(Tab, {x, X}) end,
                 init => "41.", init_runner => "ir(X) -> X + 1."}],
              #{samples => 1}),
    <<"ok">> = status(bench(Doc)),
    [{x, 42}] = lists:usort(ets:lookup(Tab, x)).

init_all_defaults_via_api(_) ->
    %% code strings for all three hooks, arity 0 and 1
    Doc = run([#{runner => "r(X) -> X.", init => "init() -> 1.", init_runner => "ir(X) -> X.",
                 done => "d(X) -> X."}], #{samples => 1}),
    <<"ok">> = status(bench(Doc)).

squeeze_mode(_) ->
    {ok, Doc} = beamlab_engine:run([#{runner => "timer:sleep(2)."}],
                                   opts(#{samples => 1}), #{min => 1, max => 3, threshold => 2}),
    B = bench(Doc),
    #{<<"squeeze_curve">> := Curve} = maps:get(extra, B),
    %% sleepers scale: every step gains, so the whole range is walked
    [1, 2, 3] = [C || #{<<"concurrency">> := C} <- Curve],
    #{params := #{<<"concurrency">> := 3}} = B,
    #{<<"mode">> := <<"squeeze">>} = maps:get(params, Doc).

stopping_rule_rel_ci(_) ->
    %% timer:sleep(1) has a steady rate: a loose target converges quickly
    B = bench(run([#{runner => "timer:sleep(1)."}],
                  #{rel_ci => 0.5, samples => 3, max_samples => 50})),
    N = length(maps:get(samples, B)),
    true = N >= 3 andalso N < 50.

stopping_rule_caps(_) ->
    %% an impossible target stops at the sample cap...
    B = bench(run([#{runner => "rand:uniform()."}], #{rel_ci => 1.0e-9, max_samples => 5})),
    5 = length(maps:get(samples, B)),
    %% ...or at the time cap, well before the sample cap (1000 samples of
    %% 50 ms would outlast the suite's timetrap)
    B2 = bench(run([#{runner => "rand:uniform()."}],
                   #{cv => 1.0e-9, max_samples => 1000, max_time => 300})),
    N2 = length(maps:get(samples, B2)),
    true = N2 >= 3 andalso N2 < 1000.

warmup_discarded(_) ->
    Tab = ets:new(w, [public]),
    ets:insert(Tab, {n, 0}),
    B = bench(run([#{runner => fun() -> ets:update_counter(Tab, n, 1) end}],
                  #{loop => 10, samples => 2, warmup => 3})),
    2 = length(maps:get(samples, B)),
    %% 5 rounds of 10 iterations ran, 2 were kept
    [{n, 50}] = ets:lookup(Tab, n).

single_sample(_) ->
    B = bench(run([#{runner => "ok."}], #{samples => 1})),
    #{stats := #{n := 1}, samples := [_]} = B,
    Doc = run([#{runner => "ok."}, #{runner => "ok."}], #{samples => 1}),
    [_, #{comparison := #{verdict := too_few_samples}}] = maps:get(benchmarks, Doc).

runner_raises(_) ->
    Doc = run([#{runner => "erlang:error(boom)."}, #{runner => "ok."}], #{}),
    [Bad, Good] = maps:get(benchmarks, Doc),
    <<"failed">> = status(Bad),
    <<"runner failed: error boom">> = err(Bad),
    <<"ok">> = status(Good),
    3 = length(maps:get(samples, Good)).

runner_exits(_) ->
    B = bench(run([#{runner => "exit(gone)."}], #{})),
    <<"runner failed: exit gone">> = err(B).

runner_throws(_) ->
    B = bench(run([#{runner => "throw(ball)."}], #{loop => 5})),
    <<"runner failed: throw ball">> = err(B).

runner_hangs_continuous(_) ->
    Doc = run([#{runner => "receive after infinity -> ok end."}, #{runner => "ok."}],
              #{samples => 6, deadline => 120}),
    [Hung, Good] = maps:get(benchmarks, Doc),
    <<"runner hung: no iteration completed within 120 ms">> = err(Hung),
    <<"ok">> = status(Good),
    6 = length(maps:get(samples, Good)).

runner_hangs_timed(_) ->
    B = bench(run([#{runner => "receive after infinity -> ok end."}],
                  #{loop => 1, deadline => 100})),
    <<"runner hung: no iteration completed within 100 ms">> = err(B).

init_fails(_) ->
    Doc = run([#{runner => "ok.", init => "exit(nope)."}, #{runner => "ok."}], #{}),
    [Bad, Good] = maps:get(benchmarks, Doc),
    <<"init hook failed: exit nope">> = err(Bad),
    <<"ok">> = status(Good).

init_runner_fails(_) ->
    B = bench(run([#{runner => "ok.", init_runner => "1 = 2."}], #{})),
    <<"init_runner hook failed: error {badmatch,2}">> = err(B).

done_fails(_) ->
    B = bench(run([#{runner => "ok.", done => "throw(late)."}], #{})),
    <<"done hook failed: throw late">> = err(B),
    %% the samples measured before done are kept
    3 = length(maps:get(samples, B)).

init_hangs(_) ->
    B = bench(run([#{runner => "ok.", init => "timer:sleep(infinity)."}], #{deadline => 100})),
    <<"init hook did not return within 100 ms">> = err(B).

init_runner_hangs(_) ->
    B = bench(run([#{runner => "ok.", init_runner => "timer:sleep(infinity)."}], #{deadline => 100})),
    <<"init_runner hook did not return within 100 ms">> = err(B),
    B2 = bench(run([#{runner => "ok.", init_runner => "timer:sleep(infinity)."}],
                   #{deadline => 100, loop => 10})),
    <<"init_runner hook did not return within 100 ms">> = err(B2).

done_hangs(_) ->
    B = bench(run([#{runner => "ok.", done => "timer:sleep(infinity)."}], #{deadline => 100})),
    <<"done hook did not return within 100 ms">> = err(B),
    3 = length(maps:get(samples, B)).

%% A runner slower than a sample: zero-iteration samples, no crash, honest figures.
slower_than_sample(_) ->
    B = bench(run([#{runner => "timer:sleep(120)."}], #{duration => 50, samples => 4})),
    <<"ok">> = status(B),
    S = maps:get(samples, B),
    true = lists:member(0, S),
    #{<<"mean_iterations_per_sample">> := M} = maps:get(extra, B),
    true = M < 1,
    #{stats := #{n := 4}} = B.

several_jobs_baseline(_) ->
    Doc = run([#{runner => "timer:sleep(1)."}, #{runner => "timer:sleep(10)."}], #{samples => 6}),
    [Base, Slow] = maps:get(benchmarks, Doc),
    #{<<"baseline">> := true} = maps:get(extra, Base),
    #{<<"baseline">> := false, <<"rel">> := Rel} = maps:get(extra, Slow),
    true = Rel > 0 andalso Rel < 1,
    #{comparison := #{verdict := slower, change := C}} = Slow,
    true = C < 0,
    true = maps:get(<<"interleaved">>, maps:get(extra, Doc)).

baseline_by_label(_) ->
    Doc = run([#{runner => "timer:sleep(10).", label => "slow"},
               #{runner => "timer:sleep(1).", label => "fast"}],
              #{samples => 4, baseline => <<"fast">>}),
    [Slow, Fast] = maps:get(benchmarks, Doc),
    <<"slow">> = maps:get(name, Slow),
    #{<<"baseline">> := true} = maps:get(extra, Fast),
    #{comparison := #{verdict := slower}} = Slow,
    #{params := #{<<"baseline">> := 2}} = Doc,
    Doc2 = run([#{runner => "ok."}, #{runner => "ok."}], #{samples => 1, baseline => 2}),
    [#{name := <<"ok.">>}, #{name := <<"ok. #2">>, extra := #{<<"baseline">> := true}}] =
        maps:get(benchmarks, Doc2).

%% A failed baseline is replaced by the first job that succeeded; the
%% request stays in params, the job used in extra.baseline_used.
failed_baseline_falls_back(_) ->
    Doc = run([#{runner => "erlang:error(boom)."}, #{runner => "timer:sleep(1)."},
               #{runner => "timer:sleep(10)."}], #{samples => 4}),
    [Bad, Fast, Slow] = maps:get(benchmarks, Doc),
    #{<<"baseline">> := false, <<"rel">> := null} = maps:get(extra, Bad),
    false = maps:is_key(comparison, Bad),
    #{<<"baseline">> := true, <<"rel">> := 1.0} = maps:get(extra, Fast),
    #{<<"baseline">> := false, <<"rel">> := Rel} = maps:get(extra, Slow),
    true = Rel > 0 andalso Rel < 1,
    #{comparison := #{verdict := slower}} = Slow,
    #{params := #{<<"baseline">> := 1}, extra := #{<<"baseline_used">> := 2}} = Doc,
    %% --baseline naming a failed job: same fallback
    Doc2 = run([#{runner => "ok.", label => "a"}, #{runner => "exit(x).", label => "b"},
                #{runner => "ok.", label => "c"}], #{samples => 2, baseline => <<"b">>}),
    #{params := #{<<"baseline">> := 2}, extra := #{<<"baseline_used">> := 1}} = Doc2,
    [#{extra := #{<<"baseline">> := true}}, #{extra := #{<<"baseline">> := false}},
     #{extra := #{<<"baseline">> := false, <<"rel">> := R3}}] = maps:get(benchmarks, Doc2),
    true = is_float(R3),
    %% nothing succeeded: nothing is compared
    Doc3 = run([#{runner => "exit(x)."}, #{runner => "exit(y)."}], #{samples => 1}),
    #{extra := #{<<"baseline_used">> := null}} = Doc3,
    [] = [B || B = #{extra := #{<<"baseline">> := true}} <- maps:get(benchmarks, Doc3)],
    [] = [B || B = #{comparison := _} <- maps:get(benchmarks, Doc3)],
    %% a healthy baseline is used as asked
    #{extra := #{<<"baseline_used">> := 1}} = run([#{runner => "ok."}, #{runner => "ok."}], #{samples => 1}).

%% Interleaving: jobs take turns. Each runner logs when an iteration
%% completes; ordered by time, the log must switch between the jobs about
%% once per turn (a suspended iteration may complete just after its job's
%% next turn starts), not constantly as it would if they ran concurrently.
interleaving_no_overlap(_) ->
    Tab = ets:new(log, [public, duplicate_bag]),
    Mk = fun(Id) -> fun() -> timer:sleep(1), ets:insert(Tab, {erlang:monotonic_time(), Id}) end end,
    Rounds = 4,
    Doc = run([#{runner => Mk(a)}, #{runner => Mk(b)}], #{samples => Rounds, duration => 40}),
    [<<"ok">>, <<"ok">>] = [status(B) || B <- maps:get(benchmarks, Doc)],
    Log = [Id || {_, Id} <- lists:sort(ets:tab2list(Tab))],
    true = length(Log) > 40,
    Switches = length([1 || {X, Y} <- lists:zip(lists:droplast(Log), tl(Log)), X =/= Y]),
    Turns = Rounds * 2,
    ct:log("~w iterations, ~w switches in ~w turns", [length(Log), Switches, Turns]),
    true = Switches =< 2 * Turns.

interrupt_gives_partial(_) ->
    Self = self(),
    %% The interrupt comes once the first sample is in (progress runs in
    %% the sampling process, which is this one).
    Progress = fun(#{samples := [{1, K}]}) when K >= 1 -> Self ! {beamlab_interrupt, sigterm};
                  (_) -> ok
               end,
    B = bench(begin
                  {ok, D} = beamlab_engine:run([#{runner => "ok."}],
                                               opts(#{samples => 100, progress => Progress}), undefined),
                  true = maps:get(partial, D),
                  D
              end),
    N = length(maps:get(samples, B)),
    true = N >= 1 andalso N < 100,
    %% the interrupt was consumed: the next run is complete
    #{partial := false} = run([#{runner => "ok."}], #{samples => 2}).

%% The busy-wait sample timer (chosen when timers fire late) measures the
%% same way: full samples of the requested duration.
busy_wait_timer(_) ->
    Jobs = [#{runner => "timer:sleep(1)."}, #{runner => "ok."}],
    Doc = run(Jobs, #{busy_wait => true, samples => 2, duration => 100}),
    #{extra := #{<<"timer">> := #{<<"busy_wait">> := true}}} = Doc,
    [#{samples := [S1, S2]}, #{samples := [_, _]}] = maps:get(benchmarks, Doc),
    true = S1 > 0 andalso S2 > 0,
    %% every sample lasts at least the requested duration (the busy-wait
    %% timer does not return early)
    {ok, #{outcomes := Outcomes, interrupted := false}} =
        beamlab_engine_measure:measure(
          Jobs, maps:merge(beamlab_engine:default_run_opts(),
                           #{busy_wait => true, samples => 2, duration => 100,
                             checks => false, labels => [<<"a">>, <<"b">>]}), undefined),
    [#{times := [_, _]} = _, #{times := [_, _]}] = Outcomes,
    true = lists:all(fun(Ns) -> Ns >= 100 * 1000000 end,
                     lists:append([T || #{times := T} <- Outcomes])).

modules_purged(_) ->
    Before = [M || {M, _} <- code:all_loaded(), lists:prefix("beamlab_gen_", atom_to_list(M))],
    _ = run([#{runner => "ok."}, #{runner => "erlang:error(x)."}], #{samples => 1}),
    After = [M || {M, _} <- code:all_loaded(), lists:prefix("beamlab_gen_", atom_to_list(M))],
    [] = After -- Before.

result_document_json(_) ->
    Doc = run([#{runner => "ok."}, #{runner => "erlang:error(x)."}], #{samples => 2}),
    Json = iolist_to_binary(beamlab_result:to_json(Doc)),
    {ok, Decoded} = beamlab_json:decode(Json),
    {ok, Back} = beamlab_result:from_json(Decoded),
    [#{name := <<"ok.">>}, #{name := <<"erlang:error(x).">>}] = maps:get(benchmarks, Back).

telemetry_recorded(_) ->
    Doc = run([#{runner => "ok."}], #{samples => 2, duration => 600, telemetry => true}),
    T = maps:get(telemetry, Doc),
    true = map_size(T) > 0.

public_api(_) ->
    Q = beamlab:run("ok.", #{samples => 1, duration => 50}),
    true = is_integer(Q) andalso Q > 0,
    [Q1, Q2] = beamlab:compare(["timer:sleep(1).", "timer:sleep(10)."],
                               #{samples => 2, duration => 50}),
    true = Q1 > Q2,
    {Q3, C} = beamlab:run(#{runner => "timer:sleep(2)."}, #{samples => 1, duration => 50},
                          #{max => 2}),
    true = Q3 > 0 andalso C >= 1,
    Us = beamlab:time("timer:sleep(1).", 5),
    true = Us >= 5000,
    {ok, #{benchmarks := [_]}} = beamlab:benchmark([fun() -> ok end], #{samples => 1, duration => 50,
                                                                       checks => false}, undefined),
    R = raised(fun() -> beamlab:run("erlang:error(x).", #{samples => 1, duration => 50}) end),
    "erlang:error(x).: runner failed: error x" = lists:flatten(beamlab:format_error(R)),
    {compile, _, _, _} = raised(fun() -> beamlab:run("x(", #{}) end).

raised(Fun) ->
    try Fun() of
        V -> error({no_exception, V})
    catch
        error:{beamlab, Reason} -> Reason
    end.

isolated_fresh_vm(Config) ->
    %% Each job's init hook writes the OS pid of the VM it runs in.
    Dir = ?config(priv_dir, Config),
    Hook = fun(Name) ->
                   io_lib:format("file:write_file(~0tp, os:getpid()).", [filename:join(Dir, Name)])
           end,
    Doc = run([#{runner => "ok.", init => Hook("a")}, #{runner => "ok.", init => Hook("b")}],
              #{samples => 1, isolated => true}),
    [<<"ok">>, <<"ok">>] = [status(B) || B <- maps:get(benchmarks, Doc)],
    true = maps:get(<<"isolated">>, maps:get(extra, Doc)),
    {ok, A} = file:read_file(filename:join(Dir, "a")),
    {ok, B} = file:read_file(filename:join(Dir, "b")),
    Here = list_to_binary(os:getpid()),
    true = A =/= Here andalso B =/= Here andalso A =/= B,
    Doc2 = run([#{runner => "erlang:error(boom)."}], #{samples => 1, isolated => true}),
    <<"runner failed: error boom">> = err(bench(Doc2)).

isolated_vm_args(_) ->
    %% +S 1 is visible inside the fresh VM: a runner that asserts it succeeds,
    %% and the same runner fails in a VM with two schedulers.
    Check = "1 = erlang:system_info(schedulers_online).",
    B = bench(run([#{runner => Check}], #{samples => 1, isolated => true, vm_args => "+S 1"})),
    <<"ok">> = status(B),
    B2 = bench(run([#{runner => Check}], #{samples => 1, isolated => true, vm_args => "+S 2"})),
    <<"failed">> = status(B2).

%% code_paths reach the fresh VM (and the compile check here).
isolated_code_paths(Config) ->
    Dir = ?config(priv_dir, Config),
    {ok, Mod, Bin} = compile:forms([{attribute, 1, module, engine_suite_pa_mod},
                                    {attribute, 1, export, [{f, 0}]},
                                    {function, 1, f, 0, [{clause, 1, [], [], [{atom, 1, ok}]}]}]),
    ok = file:write_file(filename:join(Dir, atom_to_list(Mod) ++ ".beam"), Bin),
    B = bench(run([#{runner => "engine_suite_pa_mod:f()."}],
                  #{samples => 1, isolated => true, code_paths => [Dir]})),
    <<"ok">> = status(B),
    false = lists:member(Dir, code:get_path()).
