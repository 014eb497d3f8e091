%%% @doc beamlab's JSON codec on a result document of 1000 samples:
%%% encoding (what --save and --format json do) and decoding (what
%%% compare and report do). Bench module of `beamlab check' (docs/ci.md).
-module(json_bench).

-export([benchmarks/0]).

benchmarks() ->
    [#{name => "json encode document",
       init => fun document/0, init_runner => fun(D) -> D end,
       runner => fun(D) -> beamlab_json:encode(D) end},
     #{name => "json decode document",
       init => fun() -> iolist_to_binary(beamlab_json:encode(document())) end,
       init_runner => fun(B) -> B end,
       runner => fun(B) -> beamlab_json:decode(B) end}].

document() ->
    Doc = beamlab_result:new(bench, #{command => ["run", "lists:seq(1, 100)."],
                                      started_at => <<"2026-01-01T00:00:00.000Z">>}),
    B = beamlab_result:benchmark(<<"lists:seq(1, 100).">>, [1000 + I * 3 rem 97 || I <- lists:seq(1, 1000)],
                                 #{metric => throughput, unit => iterations, better => higher}),
    beamlab_result:add_benchmarks(Doc, [B]).
