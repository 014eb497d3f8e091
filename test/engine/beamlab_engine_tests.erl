-module(beamlab_engine_tests).
-include_lib("eunit/include/eunit.hrl").

%% `run' parses -l with K/M/G suffixes and its numbers strictly.
run_options_test_() ->
    P = fun(Args) -> beamlab_cli_args:parse(Args, beamlab_command_run:options()) end,
    Loop = fun(Args) -> {ok, R} = P(Args), beamlab_cli_args:get(loop, R) end,
    [?_assertEqual(10000, Loop(["ok.", "-l", "10K"])),
     ?_assertEqual(10000000, Loop(["ok.", "-l", "10M"])),
     ?_assertEqual(2000000000, Loop(["ok.", "--loop", "2G"])),
     ?_assertEqual(7, Loop(["ok.", "-l", "7"])),
     ?_assertMatch({error, _}, P(["ok.", "-l", "0"])),
     ?_assertMatch({error, _}, P(["ok.", "-l", "1.5M"])),
     ?_assertMatch({error, _}, P(["ok.", "-l", "10X"])),
     ?_assertMatch({error, _}, P(["ok.", "-c", "0"])),
     ?_assertMatch({error, _}, P(["ok.", "-d", "-5"])),
     ?_assertMatch({error, _}, P(["ok.", "-s", "x"])),
     ?_assertMatch({error, _}, P(["--init", "ok.", "ok."])),
     %% positional hooks attach to the code before them
     ?_assertMatch({ok, #{args := ["a.", "b."], arg_opts := [#{init := "i."}, #{label := "B"}]}},
                   P(["a.", "--init", "i.", "b.", "--label", "B"]))].

%% The engine's invariants, for a direct caller: the front ends never
%% reach them, the bench kind refuses the same first with the options'
%% names (beamlab_experiment_bench_tests, prop_beamlab_schema_fronts).
validation_test_() ->
    Run = fun(Opts) -> beamlab_engine:run([#{runner => "ok."}], Opts#{checks => false}, undefined) end,
    [?_assertEqual({error, {bad_option, concurrency, 0}}, Run(#{concurrency => 0})),
     ?_assertEqual({error, {bad_option, duration, -5}}, Run(#{duration => -5})),
     ?_assertEqual({error, {bad_option, loop, 0}}, Run(#{loop => 0})),
     ?_assertEqual({error, {bad_option, samples, 0}}, Run(#{samples => 0})),
     ?_assertEqual({error, {bad_option, warmup, -1}}, Run(#{warmup => -1})),
     ?_assertEqual({error, {bad_option, rel_ci, 0}}, Run(#{rel_ci => 0})),
     ?_assertEqual({error, {conflict, loop, concurrency}}, Run(#{loop => 10, concurrency => 2})),
     ?_assertEqual({error, {conflict, loop, squeeze}},
                   beamlab_engine:run([#{runner => "ok."}], #{loop => 10, checks => false}, #{})),
     ?_assertEqual({error, {min_above_max, 5, 2}},
                   beamlab_engine:run([#{runner => "ok."}], #{checks => false}, #{min => 5, max => 2})),
     ?_assertEqual({error, {bad_baseline, <<"nope">>}}, Run(#{baseline => <<"nope">>})),
     ?_assertEqual({error, no_jobs}, beamlab_engine:run([], #{}, undefined))].

format_error_test_() ->
    F = fun(R) -> lists:flatten(beamlab_engine:format_error(R)) end,
    [?_assertEqual("invalid concurrency: 0", F({bad_option, concurrency, 0})),
     ?_assertEqual("loop and concurrency cannot be used together", F({conflict, loop, concurrency})),
     ?_assertEqual("runner failed: error boom", F({runner_failed, error, boom})),
     ?_assertEqual("init hook failed: exit nope", F({hook_failed, init, exit, nope})),
     ?_assertEqual("runner hung: no iteration completed within 10 ms", F({runner_timeout, 10}))].

compile_error_is_run_error_test() ->
    {error, R} = beamlab_engine:run([#{runner => "ok."}, #{runner => "x(."}], #{checks => false},
                                    undefined),
    ?assertEqual("x(.: runner: 1:3: syntax error before: '.'",
                 lists:flatten(beamlab_engine:format_error(R))).

%% -pa: every directory is checked before any is added; the first given
%% comes first on the path; only what was added is reported (and removed).
add_code_paths_test() ->
    Base = beamlab_test_util:tmp_dir("pa"),
    [A, B] = [filename:join(Base, D) || D <- ["a", "b"]],
    ok = filelib:ensure_path(A),
    ok = filelib:ensure_path(B),
    Missing = filename:join(Base, "missing"),
    try
        ?assertEqual({error, {no_such_directory, Missing}},
                     beamlab_engine_paths:add_code_paths([A, Missing])),
        ?assertNot(lists:member(A, code:get_path())),
        ?assertEqual({ok, [A, B]}, beamlab_engine_paths:add_code_paths([A, B, A])),
        ?assertMatch([A, B | _], code:get_path()),
        ?assertEqual({ok, []}, beamlab_engine_paths:add_code_paths([B])),
        ok = beamlab_engine_paths:remove_code_paths([A, B]),
        ?assertEqual([], [P || P <- code:get_path(), P =:= A orelse P =:= B])
    after
        _ = beamlab_engine_paths:remove_code_paths([A, B]),
        _ = file:del_dir_r(Base)
    end.

%% The command line is the caller's: recorded as given, empty by default.
command_is_given_test() ->
    Run = fun(Opts) ->
                  {ok, Doc} = beamlab_engine:run([#{runner => "ok."}],
                                                 Opts#{checks => false, samples => 1,
                                                       duration => 10}, undefined),
                  Doc
          end,
    ?assertMatch(#{command := [], kind := bench}, Run(#{})),
    ?assertMatch(#{command := [<<"beamlab">>, <<"ok.">>]},
                 Run(#{command => ["beamlab", <<"ok.">>]})).

default_run_opts_test() ->
    D = beamlab_engine:default_run_opts(),
    ?assertMatch(#{concurrency := 1, samples := 3, duration := 1000, warmup := 0,
                   command := [], checks := true}, D).
