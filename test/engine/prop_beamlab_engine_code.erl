%%% PropEr properties of the generated measuring loops (run from
%%% beamlab_engine_code_tests).
-module(prop_beamlab_engine_code).
-include_lib("proper/include/proper.hrl").

-export([prop_timed_runs_exactly_n/0, prop_state_threads_through/0,
         prop_continuous_never_overcounts/0]).

%% Timed mode runs the runner exactly N times, for every runner arity.
prop_timed_runs_exactly_n() ->
    ?FORALL({N, Arity}, {range(1, 5000), range(0, 2)},
            begin
                Code = case Arity of
                           0 -> "r() -> put(n, get(n) + 1).";
                           1 -> "r(Step) -> put(n, get(n) + Step).";
                           2 -> "r(Step, S) -> put(n, get(n) + Step), S."
                       end,
                {ok, E} = beamlab_engine_code:compile(#{runner => Code, init_runner => "1."}),
                put(n, 0),
                _ = beamlab_engine_code:timed(E, N, 1),
                ok = beamlab_engine_code:purge(E),
                get(n) =:= N
            end).

%% An arity-2 runner's state after N iterations is the fold of N steps.
prop_state_threads_through() ->
    ?FORALL({N, Init}, {range(1, 2000), integer()},
            begin
                {ok, E} = beamlab_engine_code:compile(
                            #{runner => "r(I, S) -> put(last, S), S + I.", init_runner => "0."}),
                put(last, none),
                _ = beamlab_engine_code:timed(E, N, Init),
                ok = beamlab_engine_code:purge(E),
                %% states: Init, 2*Init, ..., N*Init; the last one seen is N*Init
                get(last) =:= N * Init
            end).

%% The continuous counter only ever reports completed iterations: it never
%% exceeds what the runner itself counted.
prop_continuous_never_overcounts() ->
    ?FORALL(K, range(1, 2000),
            begin
                Tab = ets:new(count, [public]),
                ets:insert(Tab, {n, 0}),
                {ok, E} = beamlab_engine_code:compile(
                            #{runner => fun(T) -> ets:update_counter(T, n, 1) end,
                              init_runner => fun() -> Tab end}),
                C = counters:new(1, []),
                Pid = spawn(fun() -> beamlab_engine_code:continuous(E, C, Tab) end),
                %% stop it at an arbitrary point: once K iterations are done
                ok = beamlab_test_util:wait_until(
                       fun() -> ets:lookup_element(Tab, n, 2) >= K end, 10000, {iterations, K}),
                erlang:suspend_process(Pid),
                Counted = counters:get(C, 1),
                [{n, Done}] = ets:lookup(Tab, n),
                exit(Pid, kill),
                ok = beamlab_engine_code:purge(E),
                ets:delete(Tab),
                Counted =< Done andalso Done > 0
            end).
