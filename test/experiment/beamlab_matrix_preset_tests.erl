-module(beamlab_matrix_preset_tests).
-include_lib("eunit/include/eunit.hrl").

%% A matrix of the two flavours whose runner answers like a broker: the
%% JIT sends Factor times the interpreter's rate (+ noise), with the
%% study's figures as the inner document's benchmarks.
scenario_doc(Factor) ->
    Configs = [#{name => <<"flavor=emu">>, args => [], erl => undefined, wrap => undefined, flavor => emu},
               #{name => <<"flavor=jit">>, args => [], erl => undefined, wrap => undefined, flavor => jit}],
    Runner = fun(#{flavor := F}, _Argv) ->
                     Rate = 10000.0 * case F of jit -> Factor; emu -> 1.0 end * (1 + rand:uniform() / 100),
                     B = fun(N, V, U, Better) -> #{name => N, unit => U, better => Better, stats => #{mean => V}} end,
                     {ok, #{exit => 0, env => #{otp => #{emu_flavor => atom_to_binary(F)}, schedulers => #{online => 2}},
                            result => #{benchmarks => [B(<<"sending rate avg">>, Rate, <<"msg/s">>, <<"higher">>),
                                                       B(<<"receiving rate avg">>, Rate - 1, <<"msg/s">>, <<"higher">>),
                                                       B(<<"consumer latency p50">>, 1.0e6 / Rate, <<"us">>, <<"lower">>),
                                                       B(<<"consumer latency p95">>, 2.0e6 / Rate, <<"us">>, <<"lower">>),
                                                       B(<<"consumer latency p99">>, 3.0e6 / Rate, <<"us">>, <<"lower">>),
                                                       B(<<"broker CPU per message">>, 1.0e6 / Rate, <<"us">>, <<"lower">>)]}}}
             end,
    Spec = #{configs => Configs, command => ["amqp", "-z", "1"], repeat => 3,
             argv => ["matrix"], started_at => <<"2026-01-01T00:00:00Z">>, inner => {erlang, error, [unused]}},
    {ok, Doc} = beamlab_env_matrix:run(Spec, #{runner => Runner}),
    Doc.

combined() ->
    {ok, Preset} = beamlab_experiment_preset:find("jit-study"),
    [Single, Multi] = maps:get(scenarios, Preset),
    beamlab_experiment_preset:combine(Preset, [{Single, scenario_doc(2.0)}, {Multi, scenario_doc(1.25)}],
                                      #{preset => <<"jit-study">>}).

preset_data_test() ->
    {ok, #{scenarios := [S1, S2], flavors := [emu, jit], repeat := 5}} = beamlab_experiment_preset:find("jit-study"),
    ?assertEqual(["amqp", "-x", "1", "-y", "1", "-u", "q1", "-f", "mandatory", "-q", "300", "-c", "100", "-z", "30"],
                 beamlab_experiment_preset:inner(#{}, S1, 30)),
    ?assertMatch(#{published := #{emu := #{sent := 37489, received := 37242}}}, S2),
    ?assertMatch({error, {unknown_preset, <<"nope">>}}, beamlab_experiment_preset:find("nope")).

combine_names_everything_by_scenario_test() ->
    #{benchmarks := Bs, extra := #{<<"configs">> := Cs, <<"preset">> := P}} = combined(),
    ?assertEqual(24, length(Bs)),
    ?assertEqual(4, length(Cs)),
    ?assertMatch([#{<<"name">> := <<"single queue: flavor=emu">>, <<"scenario">> := <<"single queue">>,
                    <<"config">> := <<"flavor=emu">>} | _], Cs),
    Names = [N || #{name := N} <- Bs],
    ?assertEqual(length(Names), length(lists:usort(Names))),
    #{<<"scenarios">> := [#{<<"baseline">> := <<"flavor=emu">>, <<"command">> := [<<"amqp">> | _]}, _]} = P.

%% #35: the study ends when its last scenario does: the combined
%% document's `finished_at' is the last scenario's (it was the first's),
%% its `started_at' the first's.
finished_at_is_the_last_scenarios_test() ->
    {ok, Preset} = beamlab_experiment_preset:find("jit-study"),
    [Single, Multi] = maps:get(scenarios, Preset),
    At = fun(D, S, F) -> D#{started_at := S, finished_at => F} end,
    Doc = beamlab_experiment_preset:combine(
            Preset, [{Single, At(scenario_doc(2.0), <<"2026-01-01T00:00:00Z">>, <<"2026-01-01T00:05:00Z">>)},
                     {Multi, At(scenario_doc(1.25), <<"2026-01-01T00:05:01Z">>, <<"2026-01-01T00:11:00Z">>)}],
            #{preset => <<"jit-study">>}),
    ?assertMatch(#{started_at := <<"2026-01-01T00:00:00Z">>, finished_at := <<"2026-01-01T00:11:00Z">>}, Doc).

%% The published layout: published figures beside ours, the ratio with
%% its interval and the verdict; then the details and each scenario's
%% own matrix table.
table_test() ->
    Text = lists:flatten(io_lib:format("~ts", [beamlab_render_matrix_preset:render(combined(), #{unicode => false})])),
    ?debugFmt("~n~ts", [Text]),
    [?assertNotEqual(nomatch, string:find(Text, S))
     || S <- ["The JIT against the interpreter", "interpreter published", "JIT here",
              "24354 / 24352", "36620 / 36612", "1.50", "1.27", "faster",
              "consumer latency p50 / p95 / p99", "JIT / interp.", "single queue (amqp",
              "100 queues (amqp"]],
    %% our single-queue ratio: about 2.0, inside its interval
    {match, [R, Lo, Hi]} = re:run(Text, "single queue .* ([0-9.]+) \\(([0-9.]+) \\.\\. ([0-9.]+)\\)\\s+faster",
                                  [{capture, all_but_first, list}]),
    [Rv, Lv, Hv] = [list_to_float(X) || X <- [R, Lo, Hi]],
    ?assert(Lv =< Rv andalso Rv =< Hv),
    ?assert(abs(Rv - 2.0) < 0.05).

%% A configuration that lost a repetition says so under the table.
short_runs_test() ->
    Doc = #{extra := #{<<"configs">> := [C1, C2, C3, C4]} = Extra} = combined(),
    Doc1 = Doc#{extra := Extra#{<<"configs">> := [C1, C2, C3#{<<"ok_runs">> := 2}, C4]}},
    Full = lists:flatten(io_lib:format("~ts", [beamlab_render_matrix_preset:table(Doc)])),
    Short = lists:flatten(io_lib:format("~ts", [beamlab_render_matrix_preset:table(Doc1)])),
    ?assertEqual(nomatch, string:find(Full, "repetitions measured")),
    ?assertNotEqual(nomatch, string:find(Short, "100 queues, interpreter: 2 of 3 repetitions measured (failed runs below)")).

%% #35 --ci: the combined document says what ended the scenarios (the
%% furthest from confident) and names the items of each that missed it.
combine_stops_test() ->
    {ok, Preset} = beamlab_experiment_preset:find("jit-study"),
    [Single, Multi] = maps:get(scenarios, Preset),
    With = fun(#{extra := X} = D, By, Unmet) ->
                   D#{extra := X#{<<"stopped_by">> => By, <<"unconfident">> => Unmet}}
           end,
    #{extra := X} = beamlab_experiment_preset:combine(
                      Preset, [{Single, With(scenario_doc(2.0), <<"converged">>, [])},
                               {Multi, With(scenario_doc(1.25), <<"max_time">>, [<<"flavor=jit / x">>])}],
                      #{preset => <<"jit-study">>}),
    ?assertMatch(#{<<"stopped_by">> := <<"max_time">>, <<"unconfident">> := [<<"100 queues: flavor=jit / x">>]}, X),
    #{extra := X0} = combined(),
    ?assertNot(maps:is_key(<<"stopped_by">>, X0)).

%% #35 --ci: the combined stop line is the whole preset's: printed once,
%% after the scenarios' tables, not under each of them.
stop_line_once_test() ->
    {ok, Preset} = beamlab_experiment_preset:find("jit-study"),
    [Single, Multi] = maps:get(scenarios, Preset),
    With = fun(#{extra := X, params := P} = D, By, Unmet) ->
                   D#{extra := X#{<<"stopped_by">> => By, <<"unconfident">> => Unmet},
                      params := P#{<<"ci">> => 0.02}}
           end,
    Doc = #{params := P} = beamlab_experiment_preset:combine(
                             Preset, [{Single, With(scenario_doc(2.0), <<"converged">>, [])},
                                      {Multi, With(scenario_doc(1.25), <<"max_time">>, [<<"flavor=jit / x">>])}],
                             #{preset => <<"jit-study">>}),
    Text = unicode:characters_to_binary(
             beamlab_render_matrix_preset:render(Doc#{params := P#{<<"ci">> => 0.02}}, #{unicode => false})),
    ?assertMatch([_], binary:matches(Text, <<"stopped: ">>)),
    %% after the last scenario's table
    {Last, _} = lists:last(binary:matches(Text, <<"100 queues (amqp">>)),
    {Stop, _} = binary:match(Text, <<"stopped: ">>),
    ?assert(Stop > Last).
