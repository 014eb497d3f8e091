%%% @doc The experiment-kind behaviour's registry (#31): every registered
%%% kind implements every callback and is found by its name; every module
%%% that declares the behaviour is registered; the entry point dispatches
%%% through the registry.
-module(beamlab_experiment_kind_tests).
-include_lib("eunit/include/eunit.hrl").

kinds() ->
    beamlab_experiment_kind:all().

every_kind_exports_every_callback_test() ->
    Callbacks = beamlab_experiment_kind:callbacks(),
    ?assertEqual([check, error_class, format_error, name, new, options, run, verdict],
                 lists:usort([F || {F, _} <- Callbacks])),
    Missing = [{M, F, A} || M <- kinds(), code:ensure_loaded(M) =:= {module, M},
                            {F, A} <- Callbacks, not erlang:function_exported(M, F, A)],
    ?assertEqual([], Missing).

every_kind_declares_the_behaviour_test() ->
    ?assertEqual([], [M || M <- kinds(), not lists:member(beamlab_experiment_kind, behaviours(M))]).

%% A kind that runs an inner experiment says which kinds it runs and
%% which is its inner one: both optional callbacks or neither.
inner_callbacks_go_together_test() ->
    ?assertEqual([], [M || M <- kinds(),
                           erlang:function_exported(M, inner_kinds, 0) =/= erlang:function_exported(M, inner, 1)]).

every_module_declaring_the_behaviour_is_registered_test() ->
    _ = application:load(beamlab),
    {ok, Mods} = application:get_key(beamlab, modules),
    Declaring = [M || M <- Mods, lists:member(beamlab_experiment_kind, behaviours(M))],
    ?assert(length(Declaring) >= 7),
    ?assertEqual(lists:sort(Declaring), lists:sort(kinds())).

names_are_unique_and_found_test() ->
    Names = [M:name() || M <- kinds()],
    ?assertEqual(length(Names), length(lists:usort(Names))),
    ?assertEqual([{ok, M} || M <- kinds()], [beamlab_experiment_kind:find(N) || N <- Names]),
    ?assertEqual(error, beamlab_experiment_kind:find(no_such_kind)),
    ?assertEqual(error, beamlab_experiment_kind:find("bench")).

%% The seven kinds of the first round are there, by name.
the_known_kinds_are_registered_test() ->
    Names = [M:name() || M <- kinds()],
    ?assertEqual([], [bench, suite, matrix, watch, amqp, profile, check] -- Names).

options_are_schema_maps_test() ->
    [?assert(lists:all(fun(#{name := N}) -> is_atom(N); (_) -> false end, M:options())) || M <- kinds()].

unknown_kind_is_a_usage_error_test() ->
    {error, R} = beamlab_experiment:check(#{run => {no_such_kind, #{}}}),
    ?assertEqual({unknown_kind, no_such_kind}, R),
    ?assertEqual(usage, beamlab_experiment:error_class(R)),
    Line = lists:flatten(io_lib:format("~ts", [beamlab_experiment:format_error(R)])),
    ?assertEqual(nomatch, string:find(Line, "\n")),
    ?assertNotEqual(nomatch, string:find(Line, "bench")).

%% A kind's error goes to its module's format_error/1 and error_class/1.
kind_errors_dispatch_to_the_kind_test() ->
    ?assertEqual(usage, beamlab_experiment:error_class({bench, {no_such_directory, "/nowhere"}})),
    ?assertEqual(iolist_to_binary(beamlab_experiment_bench:format_error({no_such_directory, "/nowhere"})),
                 iolist_to_binary(beamlab_experiment:format_error({bench, {no_such_directory, "/nowhere"}}))),
    ?assertEqual(failure, beamlab_experiment:error_class({suite, {flavor, x}})),
    ?assert(beamlab_experiment:is_error({bench, {no_such_directory, "/nowhere"}})),
    ?assertNot(beamlab_experiment:is_error({no_such_kind, x})).

inner_kinds_come_from_the_kinds_test() ->
    ?assertEqual([bench, suite, amqp], beamlab_experiment:inner_kinds(matrix)),
    ?assertEqual([bench, suite, matrix, amqp], beamlab_experiment:inner_kinds(profile)),
    ?assertEqual([], beamlab_experiment:inner_kinds(bench)),
    Watch = #{run => {watch, #{node => "n@h"}}},
    ?assertEqual({error, {inner_kind, matrix, watch}},
                 beamlab_experiment:check(#{run => {matrix, #{configs => [], inner => Watch}}})),
    ?assertEqual({error, {unsupported, target, bench}},
                 beamlab_experiment:check(#{run => {bench, #{jobs => []}}, target => #{kind => rabbitmq}})).

verdict_of_a_document_of_no_kind_test() ->
    ?assertEqual({interrupted, []}, beamlab_experiment:verdict(#{kind => env, partial => true})),
    ?assertEqual({ok, []}, beamlab_experiment:verdict(#{kind => env, partial => false})).

behaviours(M) ->
    {module, M} = code:ensure_loaded(M),
    Attrs = M:module_info(attributes),
    lists:append([Bs || {K, Bs} <- Attrs, K =:= behaviour orelse K =:= behavior]).
