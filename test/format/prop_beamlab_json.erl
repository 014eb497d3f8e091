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
               {1, ?LAZY(short_list(json(S div 3)))},
               {1, ?LAZY(?LET(KVs, short_list({utf8(), json(S div 3)}), maps:from_list(KVs)))}]).

%% Up to 8 elements a level (nesting 4 levels deep at most): list(G)
%% takes up to the size's length at every level, and a few terms of 100k
%% words took most of the property's time (300 cases once passed the
%% EUnit timeout of 120 s on a loaded 2-core machine) while covering no
%% more shapes than these: empty and non-empty lists and objects, nested,
%% every scalar.
short_list(G) ->
    ?LET(N, integer(0, 8), vector(N, G)).

prop_roundtrip() ->
    ?FORALL(T, json(),
            begin
                {ok, T1} = beamlab_json:decode(beamlab_json:encode(T)),
                {ok, T2} = beamlab_json:decode(beamlab_json:encode(T, #{pretty => true})),
                T1 =:= T andalso T2 =:= T
            end).
