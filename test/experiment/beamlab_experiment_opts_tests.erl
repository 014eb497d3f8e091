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
    {error, Nodes} = beamlab_experiment_opts:amqp(#{nodes => -1}),
    ?assertEqual("nodes: needs at least 1 node", lists:flatten(io_lib:format("~ts", [beamlab:format_error(Nodes)]))),
    ?assertMatch({error, {bad_option, value, {x}}}, beamlab_experiment_opts:watch(n@h, #{cookie => {x}})),
    ?assertMatch({error, {bad_option, value, {x}}}, beamlab_experiment_opts:profile({node, n@h}, #{cookie => {x}})),
    ?assertMatch({error, {check, {option, _}}}, beamlab_experiment_opts:check(#{against => "HEAD", vm_args => "'"})).

%% The kinds whose options are declared refuse a value by their schema,
%% the option named by its key (#31: the command line's reasons).
schema_reasons_test() ->
    Line = fun({error, R}) -> lists:flatten(io_lib:format("~ts", [beamlab:format_error(R)])) end,
    ?assertEqual("invalid value 'x' for profile: expected one of quick, full",
                 Line(beamlab_experiment_opts:suite([fib], #{profile => x}))),
    ?assertEqual("code_paths /no/such/dir: no such directory",
                 Line(beamlab_experiment_opts:suite([fib], #{code_paths => ["/no/such/dir"]}))),
    ?assertEqual("invalid value 'x' for flavor: expected one of jit, emu",
                 Line(beamlab_experiment_opts:matrix({benchmark, ["ok."], #{}}, #{flavor => [x]}))),
    ?assertEqual("invalid value '+S 1' for vm: expected a list of text",
                 Line(beamlab_experiment_opts:matrix({benchmark, ["ok."], #{}}, #{vm => "+S 1"}))),
    ?assertEqual("vm_args: unterminated ' quote",
                 Line(beamlab_experiment_opts:check(#{against => "HEAD", vm_args => "'"}))),
    ?assertEqual("metric needs against REF", Line(beamlab_experiment_opts:check(#{metric => time}))),
    ?assertEqual("invalid value '0' for curve_reps: expected a positive integer",
                 Line(beamlab_experiment_opts:doctor(#{curve_reps => 0}))),
    ?assertEqual("invalid value '+S 1' for remedy: expected a list of text",
                 Line(beamlab_experiment_opts:doctor(#{remedy => "+S 1"}))).

%% A check's timeout (ms) is the library's too, as --timeout (s).
check_timeout_test() ->
    {ok, #{run := {check, C}}} = beamlab_experiment_opts:check(#{timeout => 5000}),
    ?assertEqual(5000, maps:get(timeout, C)).

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

%% `nodes' of `undefined' is not given, as the schema takes it: the load
%% runs in this VM (#31: it came out as an error of no option's).
amqp_nodes_undefined_test() ->
    {ok, A} = beamlab_experiment_opts:amqp(#{nodes => undefined}),
    ?assertMatch(#{run := {amqp, #{nodes := this}}}, A).

%% The doctor's `vm', `wrap' and `schedulers' that do not parse are
%% refused by its options' check, naming the option, before the doctor
%% is built (#31: build/1's own refusals were never reached).
doctor_words_and_counts_test() ->
    Line = fun({error, R}) -> lists:flatten(io_lib:format("~ts", [beamlab:format_error(R)])) end,
    ?assertEqual("vm +S \"1: an unterminated quote", Line(beamlab_experiment_opts:doctor(#{vm => "+S \"1"}))),
    ?assertEqual("wrap taskset '0: an unterminated quote",
                 Line(beamlab_experiment_opts:doctor(#{wrap => "taskset '0"}))),
    [?assertEqual("schedulers " ++ S ++ ": give scheduler counts from 1 to 1024 separated by commas",
                  Line(beamlab_experiment_opts:doctor(#{schedulers => S}))) || S <- ["0", "1,x", ",", "2000"]],
    {ok, D} = beamlab_experiment_opts:doctor(#{vm => "+S 2:2 +sbt db", wrap => "taskset -c 0", schedulers => "4, 1,2,2"}),
    ?assertMatch(#{run := {doctor, #{vm_args := ["+S", "2:2", "+sbt", "db"], wrap := ["taskset", "-c", "0"],
                                     counts := [1, 2, 4]}}}, D).

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
    %% (the schema's reason, as the command line's --target foo)
    {error, {doctor, {option, _}} = BadTarget} = beamlab_experiment_opts:doctor(#{target => foo}),
    ?assertEqual("invalid value 'foo' for target: expected one of rabbitmq",
                 lists:flatten(io_lib:format("~ts", [beamlab:format_error(BadTarget)]))),
    ?assertEqual({error, {bad_option, load, {suite, [], #{}}}},
                 beamlab_experiment_opts:doctor(#{target => rabbitmq, load => {suite, [], #{}}})),
    ?assertEqual({error, {unknown_option, bogus}},
                 beamlab_experiment_opts:doctor(#{target => rabbitmq, load => {amqp, #{bogus => 1}}})),
    ?assertEqual(usage, beamlab_experiment:error_class({doctor, target_needs_load})),
    ?assertEqual("--target rabbitmq runs an amqp load: give '-- amqp ...'",
                 lists:flatten(beamlab_experiment:format_error({doctor, target_needs_load}))).
