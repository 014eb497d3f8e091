-module(beamlab_experiment_opts_tests).
%% The public API's option maps turned into typed experiments: every
%% kind refuses a key it does not know and a value it cannot use, with
%% the option named, and builds the description the command line builds.
-include_lib("eunit/include/eunit.hrl").

unknown_keys_refused_test() ->
    [?assertEqual({error, {unknown_option, bogus}}, Call)
     || Call <- [beamlab_experiment_opts:benchmark(["ok."], #{bogus => 1}),
                 beamlab_experiment_opts:check(#{bogus => 1}),
                 beamlab_experiment_opts:suite([fib], #{bogus => 1}),
                 beamlab_experiment_opts:matrix({benchmark, ["ok."], #{}}, #{bogus => 1}),
                 beamlab_experiment_opts:watch(n@h, #{bogus => 1}),
                 beamlab_experiment_opts:amqp(#{bogus => 1}),
                 beamlab_experiment_opts:profile({pid, 1}, #{bogus => 1})]].

bad_values_refused_test() ->
    ?assertEqual({error, {bad_option, squeeze, 3}}, beamlab_experiment_opts:benchmark(["ok."], #{squeeze => 3})),
    ?assertMatch({error, {bad_option, value, {x}}}, beamlab_experiment_opts:suite([{x}], #{})),
    ?assertMatch({error, {bad_option, nodes, -1}}, beamlab_experiment_opts:amqp(#{nodes => -1})),
    ?assertMatch({error, {bad_option, value, {x}}}, beamlab_experiment_opts:watch(n@h, #{cookie => {x}})),
    ?assertMatch({error, {bad_option, value, {x}}}, beamlab_experiment_opts:profile({node, n@h}, #{cookie => {x}})),
    ?assertMatch({error, {bad_option, vm_args, _}}, beamlab_experiment_opts:check(#{vm_args => "'"})).

%% A matrix's inner experiment's own error comes as it is.
inner_error_passes_through_test() ->
    ?assertEqual({error, {unknown_option, sampels}},
                 beamlab_experiment_opts:matrix({benchmark, ["ok."], #{sampels => 1}}, #{vm => ["+S 1"]})).

descriptions_test() ->
    {ok, B} = beamlab_experiment_opts:benchmark(["ok."], #{samples => 2, squeeze => true, memory => true,
                                                           verbose => true}),
    ?assertMatch(#{run := {bench, #{jobs := [#{runner := "ok."}], options := #{samples := 2},
                                     squeeze := #{}}},
                   'after' := #{memory := true}, telemetry := live, env := true}, B),
    {ok, W} = beamlab_experiment_opts:watch("n@h", #{cookie => <<"c">>, duration => 10}),
    ?assertMatch(#{run := {watch, #{node := "n@h", cookie := "c", duration := 10}}, telemetry := none}, W),
    {ok, M} = beamlab_experiment_opts:matrix({benchmark, ["ok."], #{}},
                                             #{vm => ["+S 1"], target => #{cmd => "x", node => "a@b"}}),
    ?assertMatch(#{run := {matrix, #{inner := #{run := {bench, _}}, repeat := 3}},
                   target := #{kind := cmd, node := "a@b", cookie := undefined}}, M),
    {ok, A} = beamlab_experiment_opts:amqp(#{watch => #{node => r@h, cookie => c}, nodes => 2}),
    ?assertMatch(#{run := {amqp, #{nodes := {peers, 2}, watch := #{node := "r@h", cookie := "c"}}}}, A).

%% `beamlab:doctor/1' with a target: the broker and its amqp load; the
%% entry point refuses either without the other, and a mistake in the load.
doctor_target_test() ->
    {ok, D} = beamlab_experiment_opts:doctor(#{quick => true, target => rabbitmq,
                                               load => {amqp, #{producers => 1, consumers => 1, duration => 2}}}),
    ?assertMatch(#{run := {doctor, #{target := rabbitmq, load := #{run := {amqp, _}}}},
                   target := #{kind := rabbitmq}}, D),
    ?assertEqual(ok, beamlab_experiment:check(D)),
    {ok, NoLoad} = beamlab_experiment_opts:doctor(#{target => <<"rabbitmq">>}),
    ?assertEqual({error, {doctor, target_needs_load}}, beamlab_experiment:check(NoLoad)),
    {ok, NoTarget} = beamlab_experiment_opts:doctor(#{load => {amqp, #{}}}),
    ?assertEqual({error, {doctor, load_needs_target}}, beamlab_experiment:check(NoTarget)),
    ?assertEqual({error, {bad_option, target, foo}}, beamlab_experiment_opts:doctor(#{target => foo})),
    ?assertEqual({error, {bad_option, load, {suite, [], #{}}}},
                 beamlab_experiment_opts:doctor(#{target => rabbitmq, load => {suite, [], #{}}})),
    ?assertEqual({error, {unknown_option, bogus}},
                 beamlab_experiment_opts:doctor(#{target => rabbitmq, load => {amqp, #{bogus => 1}}})),
    ?assertEqual(usage, beamlab_experiment:error_class({doctor, target_needs_load})),
    ?assertEqual("--target rabbitmq runs an amqp load: give '-- amqp ...'",
                 lists:flatten(beamlab_experiment:format_error({doctor, target_needs_load}))).
