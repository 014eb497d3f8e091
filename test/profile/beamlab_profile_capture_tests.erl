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

%% The duty cycle's arithmetic: each window counts from the middle of
%% its first read to the middle of its last; the error is half of both
%% reads' lengths over the on-time; counters are divided by the fraction.
on_fraction_test() ->
    %% Two windows of 50 ms on (each read 2 ms) in 1 s: 100 ms.
    W = [{0, 2000, 50000, 52000}, {500000, 502000, 550000, 552000}],
    {F, E} = beamlab_profile_capture:on_fraction(W, 1000000),
    ?assertEqual(0.1, F),
    ?assert(abs(E - 0.04) < 1.0e-9),
    ?assertEqual({0.0, 0.0}, beamlab_profile_capture:on_fraction([], 1000000)),
    ?assertEqual({0.0, 0.0}, beamlab_profile_capture:on_fraction(W, 0)),
    %% (never above 1: a window longer than the elapsed time)
    ?assertMatch({1.0, _}, beamlab_profile_capture:on_fraction([{0, 0, 2000, 2000}], 1000)).

scale_test() ->
    ?assertEqual(1000, beamlab_profile_capture:scale(50, 0.05)),
    ?assertEqual(333, beamlab_profile_capture:scale(100, 0.3)),
    ?assertEqual(0, beamlab_profile_capture:scale(0, 0.05)),
    %% counted all along, or nothing counted: as is
    ?assertEqual(7, beamlab_profile_capture:scale(7, 1.0)),
    ?assertEqual(7, beamlab_profile_capture:scale(7, 0.0)).

duty_options_test() ->
    {ok, C} = beamlab_experiment_capture:new(#{node => "n@h", process => ["p"], duty => 20, duty_period => 2000.4}),
    ?assertEqual(20, maps:get(duty, C)),
    ?assertEqual(2000, maps:get(duty_period, C)),
    ?assertMatch({error, {option, _}}, beamlab_experiment_capture:new(#{node => "n@h", process => ["p"], duty => 101})),
    ?assertMatch({error, {option, _}}, beamlab_experiment_capture:new(#{node => "n@h", process => ["p"], duty => 0})).

render_sampled_test() ->
    Doc = #{kind => capture, params => #{},
            extra => #{<<"capture">> =>
                           #{<<"node">> => <<"n@h">>, <<"elapsed_ms">> => 2000, <<"samples">> => 10,
                             <<"stacks_mode">> => <<"sample">>, <<"calls_mode">> => <<"time">>,
                             <<"tracing">> => <<"classic">>, <<"stopped">> => <<"stopped">>,
                             <<"sampled">> => #{<<"on_fraction">> => 0.05, <<"on_fraction_error">> => 0.02,
                                                <<"windows">> => 2, <<"on_ms">> => 50.0, <<"period_ms">> => 1000},
                             <<"processes">> => [], <<"calls">> => [], <<"cost">> => #{}},
                       <<"profile">> => #{}}},
    Text = unicode:characters_to_binary(beamlab_render_capture:render(Doc, #{})),
    ?assertNotEqual(nomatch, binary:match(Text, <<"sampled: patterns on 5">>)),
    ?assertNotEqual(nomatch, binary:match(Text, <<"counts and times scaled">>)).

%% What the windows counted: the last reads minus the first ones, per
%% function and process, in microseconds (seconds folded in); a pair the
%% first reads did not have started at zero; never below zero; a full
%% capture (no first reads) as it is.
window_counts_test() ->
    P = list_to_pid("<0.85.0>"),
    Q = list_to_pid("<0.86.0>"),
    Ends = [{{m, hot, 2}, [{P, 1500, 2, 500000}, {Q, 10, 0, 40}]},
            {{m, new, 0}, [{P, 3, 0, 7}]}],
    Bases = [{{m, hot, 2}, [{P, 500, 1, 900000}, {Q, 12, 0, 50}]}],
    ?assertEqual([{{m, hot, 2}, [{P, 1000, 0, 600000}, {Q, 0, 0, 0}]},
                  {{m, new, 0}, [{P, 3, 0, 7}]}],
                 beamlab_profile_capture:window_counts(Ends, Bases)),
    ?assertEqual([{{m, new, 0}, [{P, 3, 0, 7}]}],
                 beamlab_profile_capture:window_counts([{{m, new, 0}, [{P, 3, 0, 7}]}], [])),
    ?assertEqual([], beamlab_profile_capture:window_counts([], Bases)).

%% Modules followed are listed, and a reached bound said.
render_followed_test() ->
    Doc = fun(Mods, Full) ->
                  #{kind => capture, params => #{},
                    extra => #{<<"capture">> =>
                                   #{<<"node">> => <<"n@h">>, <<"elapsed_ms">> => 2000, <<"samples">> => 10,
                                     <<"stacks_mode">> => <<"sample">>, <<"calls_mode">> => <<"time">>,
                                     <<"tracing">> => <<"classic">>, <<"stopped">> => <<"stopped">>,
                                     <<"followed_modules">> => Mods, <<"followed_bound_reached">> => Full,
                                     <<"bounds">> => #{<<"sample_ms">> => 10, <<"max_followed">> => 32},
                                     <<"processes">> => [], <<"calls">> => [], <<"cost">> => #{}},
                               <<"profile">> => #{}}}
          end,
    Text = fun(D) -> unicode:characters_to_binary(beamlab_render_capture:render(D, #{})) end,
    ?assertNotEqual(nomatch, binary:match(Text(Doc([<<"late_mod">>], false)),
                                          <<"modules followed (first seen on the stacks, patterned from then on): "
                                            "late_mod">>)),
    ?assertNotEqual(nomatch, binary:match(Text(Doc([<<"a">>], true)), <<"the bound of 32 was reached">>)),
    ?assertEqual(nomatch, binary:match(Text(Doc([], false)), <<"modules followed">>)).
