%%% Pure parts of the call capture: the agent parses (it is sent to the
%%% node as an abstract form), process specs, the document's text.
-module(beamlab_profile_capture_tests).
-include_lib("eunit/include/eunit.hrl").

agent_parses_test() ->
    Exprs = beamlab_profile_capture:agent_exprs(),
    ?assertMatch([{'receive', _, _}], Exprs).

fun_name_test() ->
    ?assertEqual(<<"lists:seq/2">>, beamlab_profile_capture:fun_name({lists, seq, 2})),
    ?assertEqual(<<"m:f/2">>, beamlab_profile_capture:fun_name({m, f, [a, b]})).

targets_test() ->
    {ok, C} = beamlab_experiment_capture:new(#{node => "n@h", process => ["<0.85.0>", "my_server",
                                                                          "top:reductions", <<"top:message_queue">>]}),
    ?assertEqual([{pid, "<0.85.0>"}, {name, "my_server"}, {top, reductions}, {top, message_queue}],
                 maps:get(processes, C)),
    ?assertMatch({error, {bad_process, "top:cpu"}},
                 beamlab_experiment_capture:new(#{node => "n@h", process => ["top:cpu"]})),
    ?assertEqual(usage, beamlab_experiment_capture:error_class({bad_process, "x"})),
    ?assertEqual(failure, beamlab_experiment_capture:error_class({node, 'n@h', timeout})).

%% queue:NAME (a RabbitMQ queue's process); the matrix's window over a load.
queue_target_test() ->
    {ok, C} = beamlab_experiment_capture:new(#{node => "n@h", process => ["queue:q1"], patterns => own}),
    ?assertEqual([{queue, "q1"}], maps:get(processes, C)),
    ?assertEqual(own, maps:get(patterns, C)),
    ?assertMatch({error, {bad_process, "queue:"}},
                 beamlab_experiment_capture:new(#{node => "n@h", process => ["queue:"]})),
    ?assertEqual(usage, beamlab_experiment_capture:error_class({no_queue, "q1"})),
    ?assertNotEqual(nomatch, string:find(lists:flatten(beamlab_experiment_capture:format_error({not_rabbit, "q1"})),
                                         "does not run RabbitMQ")),
    ?assertEqual({1000, 5000}, beamlab_experiment_target:capture_window(0)),
    ?assertEqual({2500, 5000}, beamlab_experiment_target:capture_window(10)),
    ?assertEqual({250, 1000}, beamlab_experiment_target:capture_window(1)).

command_line_test() ->
    ?assertEqual(<<"beamlab profile --node a@h --process '<0.85.0>' --duration 5">>,
                 beamlab_experiment_capture:command_line(<<"a@h">>, <<"<0.85.0>">>)).

verdict_test() ->
    Doc = fun(Why) -> #{partial => false, extra => #{<<"capture">> => #{<<"stopped">> => Why,
                                                                      <<"bounds">> => #{<<"max_rate">> => 10}}}}
          end,
    ?assertEqual({ok, []}, beamlab_experiment_capture:verdict(Doc(<<"stopped">>))),
    ?assertMatch({ok, [_]}, beamlab_experiment_capture:verdict(Doc(<<"rate_bound">>))),
    ?assertMatch({interrupted, []}, beamlab_experiment_capture:verdict(Doc(<<"interrupted">>))),
    ?assertMatch({failed, [_]}, beamlab_experiment_capture:verdict(Doc(<<"node_down">>))).

render_test() ->
    Doc = #{kind => capture, params => #{},
            extra => #{<<"capture">> =>
                           #{<<"node">> => <<"n@h">>, <<"elapsed_ms">> => 2000, <<"samples">> => 10,
                             <<"stacks_mode">> => <<"sample">>, <<"calls_mode">> => <<"time">>,
                             <<"tracing">> => <<"classic">>, <<"stopped">> => <<"stopped">>,
                             <<"memory_measured">> => false, <<"trace_messages">> => 0,
                             <<"bounds">> => #{<<"sample_ms">> => 1},
                             <<"processes">> =>
                                 [#{<<"label">> => <<"<0.85.0> hot">>,
                                    <<"before">> => #{<<"status">> => <<"running">>, <<"message_queue_len">> => 0,
                                                      <<"total_heap_size">> => 233, <<"memory">> => 2640,
                                                      <<"reductions">> => 5,
                                                      <<"current_function">> => <<"m:spin/2">>},
                                    <<"after">> => null,
                                    <<"reductions_per_s_untraced">> => 1000,
                                    <<"reductions_per_s_captured">> => 800}],
                             <<"calls">> => [#{<<"function">> => <<"m:spin/2">>, <<"calls">> => 7,
                                               <<"own_us">> => 1500, <<"own_share">> => 1.0,
                                               <<"self_samples">> => 1.0, <<"total_samples">> => 1.0,
                                               <<"memory_words">> => null}],
                             <<"cost">> => #{<<"agent_reductions">> => 100, <<"agent_memory_peak">> => 4096,
                                             <<"node_memory_before">> => 1000, <<"node_memory_after">> => 2000,
                                             <<"read_ms">> => 3}},
                       <<"profile">> => #{}}},
    Text = unicode:characters_to_binary(beamlab_render_capture:render(Doc, #{})),
    [?assertNotEqual(nomatch, binary:match(Text, S), S)
     || S <- [<<"m:spin/2">>, <<"at the end of its duration">>, <<"0.800 of untraced">>, <<"exited">>,
              <<"1500 us">>, <<"cost on the node">>]].
