%%% The architecture as docs/architecture.md states it, checked against
%%% the tree and the compiled code: every folder under src/ is in the
%%% layers' table, and no module calls back into one that calls it
%%% (directly or through others: xref finds the module graph's strongly
%%% connected components; each must be one module).
-module(beamlab_architecture_tests).
-include_lib("eunit/include/eunit.hrl").

every_src_folder_is_in_the_table_test() ->
    Root = beamlab_test_util:root(),
    {ok, Doc} = file:read_file(filename:join([Root, "docs", "architecture.md"])),
    Table = [L || L <- binary:split(Doc, <<"\n">>, [global]), binary:match(L, <<"| `src/">>) =/= nomatch],
    ?assertNotEqual([], Table),
    Listed = lists:usort([F || L <- Table,
                               {match, Ms} <- [re:run(L, "`(src/[a-z_/]*)`", [global, {capture, all_but_first, binary}])],
                               [F] <- Ms]),
    Folders = [<<"src/", (unicode:characters_to_binary(D))/binary, "/">> || D <- src_folders(Root, [])],
    ?assertNotEqual([], Folders),
    ?assertEqual([], [F || F <- Folders, not lists:member(F, Listed)]).

%% The folders under src/, as paths relative to it (["cli", "cli/commands", ...]).
src_folders(Root, Rel) ->
    Dir = filename:join([Root, "src" | Rel]),
    {ok, Names} = file:list_dir(Dir),
    Subs = lists:sort([Rel ++ [N] || N <- Names, filelib:is_dir(filename:join(Dir, N))]),
    [filename:join(S) || S <- Subs] ++ lists:append([src_folders(Root, S) || S <- Subs]).

no_call_cycle_between_modules_test() ->
    Ebin = filename:dirname(code:which(beamlab)),
    {ok, Xref} = xref:start([]),
    try
        ok = xref:set_default(Xref, [{warnings, false}, {verbose, false}]),
        {ok, _} = xref:add_directory(Xref, Ebin),
        {ok, Components} = xref:q(Xref, "components ME"),
        ?assert(length(Components) > 50),
        ?assertEqual([], [C || C <- Components, length(C) > 1])
    after
        xref:stop(Xref)
    end.
