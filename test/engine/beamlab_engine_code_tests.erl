-module(beamlab_engine_code_tests).
-include_lib("eunit/include/eunit.hrl").

%% Compiles, runs `N' timed iterations, purges; returns the exec's runner arity.
run_timed(Map, N) ->
    {ok, E} = beamlab_engine_code:compile(Map),
    try
        Init = beamlab_engine_code:call_init(E),
        IR = beamlab_engine_code:call_init_runner(E, Init),
        Ns = beamlab_engine_code:timed(E, N, IR),
        ?assert(is_integer(Ns) andalso Ns >= 0),
        _ = beamlab_engine_code:call_done(E, Init),
        beamlab_engine_code:runner_arity(E)
    after
        beamlab_engine_code:purge(E)
    end.

err(Map) ->
    {error, R} = beamlab_engine_code:compile(Map),
    lists:flatten(beamlab_engine_code:format_error(R)).

%% Counts how often the runner ran, through a side effect in the process
%% dictionary of the calling process.
counting_runner_test() ->
    erase(n),
    0 = run_timed(#{runner => "put(n, case get(n) of undefined -> 1; X -> X + 1 end)."}, 1000),
    ?assertEqual(1000, get(n)).

expression_forms_test_() ->
    [?_assertEqual(0, run_timed(#{runner => "rand:uniform()."}, 10)),
     ?_assertEqual(0, run_timed(#{runner => "rand:uniform()"}, 10)),          % dot optional
     ?_assertEqual(0, run_timed(#{runner => <<"X = 2, X * X.">>}, 10)),
     ?_assertEqual(0, run_timed(#{runner => "F = fun(X) -> X end, F(1)."}, 10)),
     ?_assertEqual(0, run_timed(#{runner => "lists:seq(1, 3)."}, 10))].

function_forms_test_() ->
    [?_assertEqual(0, run_timed(#{runner => "r() -> ok."}, 10)),
     ?_assertEqual(1, run_timed(#{runner => "r(X) -> X * 2.", init_runner => "21."}, 10)),
     ?_assertEqual(2, run_timed(#{runner => "r(_, S) -> S + 1.", init_runner => "0."}, 10)),
     %% several clauses and a self-recursive function (not inlined)
     ?_assertEqual(1, run_timed(#{runner => "fib(0) -> 0; fib(1) -> 1; fib(N) -> fib(N-1) + fib(N-2).",
                                  init_runner => "10."}, 10)),
     ?_assertEqual(0, run_timed(#{runner => "r() -> when_not_a_fun_keyword."}, 10))].

mfa_forms_test_() ->
    [?_assertEqual(0, run_timed(#{runner => "{rand, uniform, []}"}, 10)),
     ?_assertEqual(0, run_timed(#{runner => "{rand,uniform,[10]}"}, 10)),
     ?_assertEqual(0, run_timed(#{runner => {rand, uniform, [10]}}, 10)),
     %% a pid has no literal form: falls back to apply
     ?_assertEqual(0, run_timed(#{runner => {erlang, is_process_alive, [self()]}}, 10))].

fun_forms_test_() ->
    [?_assertEqual(0, run_timed(#{runner => fun() -> ok end}, 10)),
     ?_assertEqual(1, run_timed(#{runner => fun(X) -> X end, init_runner => fun() -> 1 end}, 10)),
     ?_assertEqual(2, run_timed(#{runner => fun(I, S) -> I + S end, init_runner => fun() -> 1 end}, 10))].

state_passing_test() ->
    %% arity 2: (InitRunnerResult, State) -> NextState, first state = init_runner result
    {ok, E} = beamlab_engine_code:compile(#{runner => "r(I, S) -> put(last, S), S + I.",
                                             init_runner => "1."}),
    try
        _ = beamlab_engine_code:timed(E, 5, 1),
        ?assertEqual(5, get(last))   % states 1,2,3,4,5
    after
        beamlab_engine_code:purge(E)
    end.

hooks_test() ->
    Self = self(),
    {ok, E} = beamlab_engine_code:compile(
                #{runner => "r(X) -> X.",
                  init => "init() -> 7.",
                  init_runner => "ir(X) -> X * 2.",
                  done => fun(X) -> Self ! {done, X} end}),
    try
        ?assertEqual(7, beamlab_engine_code:call_init(E)),
        ?assertEqual(14, beamlab_engine_code:call_init_runner(E, 7)),
        _ = beamlab_engine_code:call_done(E, 7),
        ?assertEqual({done, 7}, receive M -> M after 1000 -> timeout end)
    after
        beamlab_engine_code:purge(E)
    end.

hook_default_and_mfa_test() ->
    {ok, E} = beamlab_engine_code:compile(#{runner => "ok.", init => {erlang, abs, [-3]},
                                             init_runner => "ok."}),
    try
        ?assertEqual(3, beamlab_engine_code:call_init(E)),
        ?assertEqual(ok, beamlab_engine_code:call_init_runner(E, 3)),
        ?assertEqual(undefined, beamlab_engine_code:call_done(E, 3))
    after
        beamlab_engine_code:purge(E)
    end.

purge_unloads_test() ->
    {ok, E} = beamlab_engine_code:compile(#{runner => "ok."}),
    #{module := Mod} = E,
    ?assertMatch({file, _}, code:is_loaded(Mod)),
    ok = beamlab_engine_code:purge(E),
    ?assertEqual(false, code:is_loaded(Mod)).

continuous_counts_test() ->
    {ok, E} = beamlab_engine_code:compile(#{runner => "ok."}),
    C = counters:new(1, []),
    Pid = spawn(fun() -> beamlab_engine_code:continuous(E, C, undefined) end),
    %% The counter starts moving, and keeps moving.
    ok = beamlab_test_util:wait_until(fun() -> counters:get(C, 1) > 0 end, 5000, first_iterations),
    V1 = counters:get(C, 1),
    ok = beamlab_test_util:wait_until(fun() -> counters:get(C, 1) > V1 end, 5000, more_iterations),
    V2 = counters:get(C, 1),
    exit(Pid, kill),
    beamlab_engine_code:purge(E),
    ?assert(V1 > 0),
    ?assert(V2 > V1).

%% Errors carry the role and the user's line:column.
syntax_error_position_test_() ->
    [?_assertEqual("runner: 1:13: syntax error before: '.'", err(#{runner => "r(X) -> X + ."})),
     ?_assertEqual("runner: 2:4: syntax error before: ')'", err(#{runner => "foo(\n  )) ."})),
     ?_assertEqual("runner: 1:1: unterminated string starting with \"abc. ok \"", err(#{runner => "\"abc. ok "})),
     ?_assertEqual("init: 1:5: syntax error before: ','", err(#{runner => "ok.", init => "1 + , 2."})),
     %% code that ends early (the full stop left out, as it may be): the
     %% error is at the user's last token, not at the '.' beamlab adds
     ?_assertEqual("runner: 1:11: syntax error at the end of the code, after '+'", err(#{runner => "r(X) -> X +"})),
     ?_assertEqual("runner: 1:13: syntax error at the end of the code, after '10'",
                   err(#{runner => "lists:seq(1,10"})),
     ?_assertEqual("runner: 2:4: syntax error at the end of the code, after ','",
                   err(#{runner => "foo(1,\n  2,\n"})),
     ?_assertEqual("init: 1:8: syntax error at the end of the code, after 'of'",
                   err(#{runner => "ok", init => "case x of"})),
     %% (an error before the end is told where it is)
     ?_assertEqual("runner: 1:5: syntax error before: foo", err(#{runner => "foo foo"}))].

undefined_function_test_() ->
    [?_assertEqual("runner: 1:1: undefined function nomod:foo/1", err(#{runner => "nomod:foo(1)."})),
     ?_assertEqual("runner: 1:9: undefined function lists:nope/0",
                   err(#{runner => "ok = 1, lists:nope()."})),
     ?_assertEqual("runner: 1:1: function foo/1 undefined", err(#{runner => "foo(1)."})),
     ?_assertEqual("runner: 1:1: undefined function nomod:f/0", err(#{runner => "{nomod, f, []}"})),
     ?_assertEqual("init_runner: 1:8: undefined function a:b/0",
                   err(#{runner => "ok.", init_runner => "r() -> a:b()."}))].

compile_error_test_() ->
    [?_assertEqual("runner: 1:1: variable 'Y' is unbound", err(#{runner => "Y + 1."})),
     ?_assertEqual("done: 1:8: variable 'Z' is unbound", err(#{runner => "ok.", done => "d() -> Z."}))].

arity_errors_test_() ->
    [?_assertMatch("runner: a runner of arity 1 needs an init_runner" ++ _, err(#{runner => "r(X) -> X."})),
     ?_assertMatch("runner: a function of arity 3 " ++ _, err(#{runner => "r(A, B, C) -> ok."})),
     ?_assertMatch("init: a function of arity 1 " ++ _, err(#{runner => "ok.", init => "i(X) -> X."})),
     ?_assertMatch("done: a hook of arity 1 needs an init hook" ++ _,
                   err(#{runner => "ok.", done => "d(X) -> X."})),
     ?_assertMatch("init: a function of arity 1 " ++ _, err(#{runner => "ok.", init => fun(X) -> X end}))].

bad_input_test_() ->
    [?_assertEqual("runner: empty code", err(#{runner => ""})),
     ?_assertEqual("runner: empty code", err(#{runner => "   "})),
     ?_assertMatch("runner: not code, a fun or an {M,F,Args} tuple" ++ _, err(#{runner => 42})),
     ?_assertEqual("no runner given", err(#{init => "ok."}))].

source_label_test_() ->
    [?_assertEqual(<<"rand:uniform().">>, beamlab_engine_code:source_label("rand:uniform().")),
     ?_assertEqual(<<"{rand,uniform,[]}">>, beamlab_engine_code:source_label({rand, uniform, []}))].

properties_test_() ->
    %% (a timeout each: on the list it would leave each the 5 s default)
    Q = fun(P, N) -> {timeout, 60, ?_assert(proper:quickcheck(P, [{numtests, N}, {to_file, user}]))} end,
    [Q(prop_beamlab_engine_code:prop_timed_runs_exactly_n(), 100),
     Q(prop_beamlab_engine_code:prop_state_threads_through(), 100),
     Q(prop_beamlab_engine_code:prop_continuous_never_overcounts(), 20)].

%% Code that would stop the VM is compiled into an error naming the call,
%% in every form the code can name it; other code is untouched.
vm_stops_become_errors_test_() ->
    Stops = [{"halt().", <<"erlang:halt/0">>},
             {"halt(0).", <<"erlang:halt/1">>},
             {"erlang:halt(0, []).", <<"erlang:halt/2">>},
             {"init:stop().", <<"init:stop/0">>},
             {"init:stop(2).", <<"init:stop/1">>},
             {"init:reboot().", <<"init:reboot/0">>},
             {"init:restart().", <<"init:restart/0">>},
             {"c:q().", <<"c:q/0">>},
             {"apply(erlang, halt, [0]).", <<"erlang:halt/1">>},
             {"erlang:apply(init, stop, []).", <<"init:stop/0">>},
             {"(fun erlang:halt/1)(0).", <<"erlang:halt/1">>},
             {"F = fun init:stop/0, F().", <<"init:stop/0">>},
             {"{erlang, halt, [0]}", <<"erlang:halt/1">>},
             {"r() -> case 1 of 1 -> halt(); _ -> ok end.", <<"erlang:halt/0">>}],
    [{Code, fun() ->
                    {ok, E} = beamlab_engine_code:compile(#{runner => Code}),
                    try
                        ?assertError({beamlab_stops_vm, Name}, beamlab_engine_code:timed(E, 1, undefined))
                    after
                        beamlab_engine_code:purge(E)
                    end
            end} || {Code, Name} <- Stops].

other_code_untouched_test() ->
    {ok, E} = beamlab_engine_code:compile(#{runner => "r() -> erlang:max(1, 2)."}),
    _ = beamlab_engine_code:timed(E, 10, undefined),
    beamlab_engine_code:purge(E),
    ?assert(beamlab_engine_code:stops_vm(erlang, halt, 1)),
    ?assertNot(beamlab_engine_code:stops_vm(erlang, halt, 3)),
    ?assertNot(beamlab_engine_code:stops_vm(init, get_arguments, 0)).

%% Generated modules are named after the code (or the label), so the same
%% benchmark profiles to the same frames in every run: a differential
%% flame graph matches them.
stable_module_names_test() ->
    Code = #{runner => "lists:seq(1, 10)."},
    Name = beamlab_engine_code:module_name(Code),
    ?assertMatch("beamlab_gen_" ++ [_, _, _, _, _, _, _, _], atom_to_list(Name)),
    ?assertEqual(Name, beamlab_engine_code:module_name(#{runner => "lists:seq(1, 10)."})),
    ?assertNotEqual(Name, beamlab_engine_code:module_name(#{runner => "lists:seq(1, 11)."})),
    ?assertNotEqual(Name, beamlab_engine_code:module_name(Code#{init => "ok."})),
    %% A label names the job whatever its code.
    ?assertEqual(beamlab_engine_code:module_name(#{runner => "a().", label => "hot"}),
                 beamlab_engine_code:module_name(#{runner => "b().", label => <<"hot">>})),
    {ok, #{module := M1} = E1} = beamlab_engine_code:compile(Code),
    ?assertEqual(Name, M1),
    %% The same code twice at once: the second gets its own module.
    {ok, #{module := M2} = E2} = beamlab_engine_code:compile(Code),
    ?assertEqual(list_to_atom(atom_to_list(Name) ++ "_2"), M2),
    ok = beamlab_engine_code:purge(E1),
    ok = beamlab_engine_code:purge(E2),
    %% Purged, the name is free again.
    {ok, #{module := M3} = E3} = beamlab_engine_code:compile(Code),
    ?assertEqual(Name, M3),
    ok = beamlab_engine_code:purge(E3).
