-module(beamlab_env_doctor_target_tests).
-include_lib("eunit/include/eunit.hrl").

%% Debian's rabbitmq-server 3.10 command line, as the node reports it.
cmdline() ->
    [<<"/usr/lib/erlang/erts-13.1.5/bin/beam.smp">>, <<"-W">>, <<"w">>, <<"-MBas">>, <<"ageffcbf">>,
     <<"-P">>, <<"1048576">>, <<"-stbt">>, <<"db">>, <<"-sbwt">>, <<"none">>, <<"-sbwtdcpu">>, <<"none">>,
     <<"-sbwtdio">>, <<"none">>, <<"-S">>, <<"2:2">>, <<"-sbwt">>, <<"very_short">>, <<"--">>, <<"-root">>,
     <<"/usr/lib/erlang">>, <<"-noinput">>].

effective_drops_what_is_in_effect_test() ->
    %% The last -sbwt wins (very_short): +sbwt none is a change, the others are not.
    ?assertEqual(["+sbwt", "none"], beamlab_env_doctor_target:effective(["+sbwt", "none", "+sbwtdcpu", "none",
                                                                         "+sbwtdio", "none"], cmdline())),
    ?assertEqual([], beamlab_env_doctor_target:effective(["+sbwtdcpu", "none", "+stbt", "db"], cmdline())),
    ?assertEqual(["+S", "1:1"], beamlab_env_doctor_target:effective(["+S", "1:1"], cmdline())),
    ?assertEqual([], beamlab_env_doctor_target:effective(["+S", "2:2"], cmdline())),
    ?assertEqual(["+sbt", "ps"], beamlab_env_doctor_target:effective(["+sbt", "ps"], cmdline())),
    %% unreadable command line, odd flags: kept as they are
    ?assertEqual(["+S", "2:2"], beamlab_env_doctor_target:effective(["+S", "2:2"], null)),
    ?assertEqual(["+S"], beamlab_env_doctor_target:effective(["+S"], cmdline())).

%% A matrix document as `matrix --target' leaves it, in memory.
matrix_doc(Values) ->
    Bench = fun(Config, Metric, Samples) ->
                    beamlab_result:benchmark(<<Config/binary, " / ", Metric/binary>>, Samples,
                                             #{group => Config, extra => #{inner_benchmark => Metric}})
            end,
    Bs = lists:append([[Bench(C, <<"receiving rate avg">>, T), Bench(C, <<"consumer latency p99">>, L),
                        Bench(C, <<"broker CPU per message">>, P)] || {C, T, L, P} <- Values]),
    Doc = beamlab_result:add_benchmarks(beamlab_result:new(matrix, #{command => [], started_at => <<"2026-11-28T00:00:00Z">>}), Bs),
    beamlab_result:set(extra, #{configs => [#{name => C, ok_runs => length(T), runs => length(T)}
                                            || {C, T, _, _} <- Values]}, Doc).

summary_rank_recommendation_test() ->
    Doc = matrix_doc([{<<"default">>, [1000.0, 1010.0, 990.0], [900.0, 950.0, 920.0], [30.0, 31.0, 29.0]},
                      {<<"+S 1:1">>, [1000.0, 1005.0, 995.0], [500.0, 520.0, 510.0], [20.0, 20.5, 19.5]},
                      {<<"+sbt ps">>, [600.0, 610.0, 590.0], [1500.0, 1550.0, 1490.0], [40.0, 41.0, 39.0]},
                      {<<"+S 3:3">>, [1000.0, 1010.0, 990.0], [910.0, 940.0, 925.0], [30.0, 31.5, 29.0]}]),
    Base = beamlab_env_doctor_target:summary(<<"default">>, Doc),
    ?assertMatch(#{n := 3, throughput := 1000.0, latency_p99_us := 920.0, broker_cpu_per_msg_us := 30.0}, Base),
    %% read back from JSON: the same figures
    {ok, Json} = beamlab_json:decode(iolist_to_binary(beamlab_result:to_json(Doc))),
    {ok, Back} = beamlab_result:from_json(Json),
    ?assertEqual(Base, beamlab_env_doctor_target:summary(<<"default">>, Back)),
    Remedy = fun(N) -> beamlab_env_doctor:remedy(N, [<<"competing">>], []) end,
    Ranked = beamlab_env_doctor_target:rank(
               Base, [{Remedy(N), beamlab_env_doctor_target:summary(N, Doc)}
                      || N <- [<<"+sbt ps">>, <<"+S 3:3">>, <<"+S 1:1">>]], 0.95),
    ?assertEqual([<<"+S 1:1">>, <<"+S 3:3">>, <<"+sbt ps">>], [N || #{name := N} <- Ranked]),
    ?assertEqual([better, no_difference, worse], [V || #{verdict := V} <- Ranked]),
    [Best | _] = Ranked,
    ?assertMatch(#{broker_cpu_per_msg := #{ratio := R, ci := [_, _]}} when R < 1, Best),
    Rec = beamlab_env_doctor_target:recommendation(Ranked, ["+P", "2000000"], []),
    ?assertMatch(<<"put in rabbitmq-env.conf: RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS=\"+P 2000000 +S 1:1\": "
                   "throughput 1.00x (", _/binary>>, Rec),
    ?assertNotEqual(nomatch, binary:match(Rec, <<"broker CPU per message 0.67x (">>)),
    ?assertMatch(<<"keep the broker's flags: no remedy measured clearly better (best tried: +S 3:3", _/binary>>,
                 beamlab_env_doctor_target:recommendation(tl(Ranked), [], [])),
    ?assertEqual(<<"keep the broker's flags: it already runs with every remedy the findings suggest "
                   "(+sbwt none +sbwtdcpu none +sbwtdio none)">>,
                 beamlab_env_doctor_target:recommendation([], [], [<<"+sbwt none +sbwtdcpu none +sbwtdio none">>])),
    Numa = beamlab_env_doctor:remedy(<<"numactl --cpunodebind=0 --membind=0">>, [<<"numa">>], []),
    [NumaRow] = beamlab_env_doctor_target:rank(Base, [{Numa, beamlab_env_doctor_target:summary(<<"+S 1:1">>, Doc)}], 0.95),
    ?assertMatch(<<"start rabbitmq-server under numactl --cpunodebind=0 --membind=0: ", _/binary>>,
                 beamlab_env_doctor_target:recommendation([NumaRow], [], [])).

missing_configuration_test() ->
    Doc = matrix_doc([{<<"default">>, [1.0], [1.0], [1.0]}]),
    ?assertMatch(#{n := 0, throughput := null, throughput_samples := []},
                 beamlab_env_doctor_target:summary(<<"+S 1:1">>, Doc)).
