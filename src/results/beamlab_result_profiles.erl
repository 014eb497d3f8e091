%%% @doc The profiles a matrix document holds (`matrix --target ...
%%% --profile': each configuration's profiled repetition's profile, in
%%% `extra.configs[].profile'), as profile documents of their own, one per
%%% configuration (kind `profile', the profile in `extra.profile'), so the
%%% text shows each as `beamlab profile' does and `--folded' writes each.
%%% Pure.
-module(beamlab_result_profiles).

-export([of_matrix/1, captures_of_matrix/1]).

%% @doc Each profiled configuration's name and profile document, in the
%% matrix's order; none for other documents.
-spec of_matrix(beamlab_result:result()) -> [{binary(), beamlab_result:result()}].
of_matrix(#{kind := matrix, extra := #{<<"configs">> := Cs}} = Doc) ->
    [{N, profile_doc(Doc, P)} || #{<<"name">> := N, <<"profile">> := P} <- Cs, is_map(P)];
of_matrix(_) ->
    [].

%% @doc Each configuration's call capture (`matrix --profile-process':
%% `extra.configs[].capture', a capture document) or the one line that
%% says why it is missing (`capture_error'), in the matrix's order.
-spec captures_of_matrix(beamlab_result:result()) ->
          [{binary(), {ok, beamlab_result:result()} | {error, binary()}}].
captures_of_matrix(#{kind := matrix, extra := #{<<"configs">> := Cs}}) ->
    lists:append([capture(N, C) || #{<<"name">> := N} = C <- Cs]);
captures_of_matrix(_) ->
    [].

capture(Name, #{<<"capture">> := Doc}) when is_map(Doc) ->
    case beamlab_result:from_json(Doc) of
        {ok, D} -> [{Name, {ok, D}}];
        {error, _} -> [{Name, {error, <<"capture: its document is not readable">>}}]
    end;
capture(Name, #{<<"capture_error">> := E}) when is_binary(E) ->
    [{Name, {error, E}}];
capture(_, _) ->
    [].

profile_doc(Doc, P) ->
    Params = maps:with([<<"subject">>, <<"label">>, <<"mode">>, <<"frequency">>, <<"flavor">>], P),
    D0 = beamlab_result:new(profile, #{command => maps:get(command, Doc),
                                       started_at => maps:get(started_at, Doc),
                                       params => Params}),
    D1 = beamlab_result:set(extra, #{<<"profile">> => P}, D0),
    beamlab_result:finish(D1, #{finished_at => maps:get(finished_at, Doc, maps:get(started_at, Doc)),
                                partial => maps:get(partial, Doc, false)}).
