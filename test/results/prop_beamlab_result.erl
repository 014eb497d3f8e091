%%% PropEr properties of saved result documents (run from
%%% beamlab_result_format_tests): JSON round-trips through beamlab_json and
%%% beamlab_result:from_json/1 give back the same document.
-module(prop_beamlab_result).
-include_lib("proper/include/proper.hrl").

-export([prop_roundtrip/0, prop_bounded_roundtrip/0]).

%% A document as producers build it, with user data under binary keys (as
%% it always reads back), survives encode -> decode -> from_json unchanged.
prop_roundtrip() ->
    ?FORALL(Doc, document(),
            begin
                {ok, Json} = beamlab_json:decode(beamlab_result:to_json(Doc)),
                {ok, Back} = beamlab_result:from_json(Json),
                Back =:= Doc
            end).

%% Bounding samples for saving keeps documents valid and round-trippable,
%% and never keeps more than the bound.
prop_bounded_roundtrip() ->
    ?FORALL({Doc, Max}, {document(), range(1, 20)},
            begin
                Bounded = beamlab_result:bound_samples(Doc, Max),
                {ok, Json} = beamlab_json:decode(beamlab_result:to_json(Bounded)),
                {ok, Back} = beamlab_result:from_json(Json),
                Back =:= Bounded andalso
                    lists:all(fun(#{samples := S, sample_info := #{kept := K, count := C}}) ->
                                      length(S) =:= K andalso K =< max(Max, C) andalso
                                          (C =< Max orelse K =:= Max)
                              end, maps:get(benchmarks, Bounded))
            end).

document() ->
    ?LET({Kind, Benchmarks, Params, Env, Partial, Findings},
         {oneof([bench, suite, matrix, amqp, watch]),
          list(benchmark()), user_map(), user_map(), boolean(), list(finding())},
         begin
             R0 = beamlab_result:new(Kind, #{params => Params, command => [<<"beamlab">>, atom_to_binary(Kind)],
                                            started_at => <<"2026-11-22T02:59:00Z">>}),
             R1 = beamlab_result:add_findings(beamlab_result:add_benchmarks(R0, unique(Benchmarks)), Findings),
             R2 = beamlab_result:set(telemetry, #{t_ms => [0, 1000], util => [1.5, 2.5]},
                                     beamlab_result:set(env, Env, R1)),
             beamlab_result:finish(R2, #{finished_at => <<"2026-11-22T03:00:00Z">>, partial => Partial})
         end).

benchmark() ->
    ?LET({Name, Samples, Unit, Better, Params, Base, Measure},
         {name(), non_empty(list(oneof([integer(), float()]))),
          oneof([<<"ns">>, <<"ops/s">>, <<"msg/s">>, <<"us">>]),
          oneof([higher, lower]), user_map(), oneof([none, list(oneof([integer(), float()]))]),
          oneof([none, name()])},
         begin
             %% (the measure in words, when a producer says it)
             Opts = #{unit => Unit, better => Better, params => Params},
             B = beamlab_result:benchmark(Name, Samples, case Measure of
                                                              none -> Opts;
                                                              _ -> Opts#{measure => Measure}
                                                          end),
             %% against a baseline, as `run' with several snippets saves it
             %% (every key of beamlab_stats:compare/3, `detectable' too)
             case Base of
                 none -> B;
                 _ -> B#{comparison => beamlab_stats:compare(Base, Samples, #{better => Better})}
             end
         end).

finding() ->
    ?LET({Title, Sev}, {name(), oneof([info, warning, critical])},
         beamlab_result:finding(f, Sev, Title, Title, <<>>, #{})).

name() ->
    ?LET(S, non_empty(utf8()), S).

user_map() ->
    ?LET(KVs, list({name(), oneof([integer(), name(), boolean(), null, list(integer())])}),
         maps:from_list(KVs)).

unique(Benchmarks) ->
    maps:values(maps:from_list([{maps:get(name, B), B} || B <- Benchmarks])).
