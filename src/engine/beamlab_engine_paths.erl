%%% @doc The one implementation of `-pa': the CLI calls it for this VM,
%%% the isolated mode for its compile check.
-module(beamlab_engine_paths).

-export([add_code_paths/1, remove_code_paths/1]).

%% @doc Puts `-pa' directories at the front of this VM's code path, first
%% given first (as `erl -pa' does). Directories already on the path are
%% left where they are. All are checked before any is added. Returns the
%% directories added, for {@link remove_code_paths/1}.
-spec add_code_paths([file:filename()]) ->
          {ok, [file:filename()]} | {error, {no_such_directory, file:filename()}}.
add_code_paths(Dirs) ->
    case [D || D <- Dirs, not filelib:is_dir(D)] of
        [Missing | _] ->
            {error, {no_such_directory, Missing}};
        [] ->
            Path = code:get_path(),
            New = dedup([D || D <- Dirs, not lists:member(D, Path)]),
            %% add_pathsa/1 reverses its argument on the path.
            ok = code:add_pathsa(lists:reverse(New)),
            {ok, New}
    end.

%% @doc Removes directories added by {@link add_code_paths/1}.
-spec remove_code_paths([file:filename()]) -> ok.
remove_code_paths(Dirs) ->
    _ = [code:del_path(D) || D <- Dirs],
    ok.

dedup([]) -> [];
dedup([D | Rest]) -> [D | dedup([X || X <- Rest, X =/= D])].
