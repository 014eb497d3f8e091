%%% PropEr properties of the JSON codec (run from beamlab_json_tests).
-module(prop_beamlab_json).
-include_lib("proper/include/proper.hrl").

-export([prop_roundtrip/0]).

%% Decoding what we encode gives the JSON view of the term back.
json() ->
    ?SIZED(S, json(min(S, 40))).
json(0) ->
    oneof([null, true, false, integer(), float(), utf8()]);
json(S) ->
    frequency([{3, json(0)},
               {1, ?LAZY(list(json(S div 3)))},
               {1, ?LAZY(?LET(KVs, list({utf8(), json(S div 3)}), maps:from_list(KVs)))}]).

prop_roundtrip() ->
    ?FORALL(T, json(),
            begin
                {ok, T1} = beamlab_json:decode(beamlab_json:encode(T)),
                {ok, T2} = beamlab_json:decode(beamlab_json:encode(T, #{pretty => true})),
                T1 =:= T andalso T2 =:= T
            end).
