%%% The architecture as docs/architecture.md states it, checked against
%%% the tree and the compiled code: every folder under src/ is in the
%%% layers' table, the module map is the one generated from src/, and no module calls back into one that calls it
%%% (directly or through others: xref finds the module graph's strongly
%%% connected components; each must be one module). The developers' guide
%%% on every module: it opens with a `%%% @doc', each exported function
%%% has a -spec, the broker's specs name their maps, and no JavaScript or
%%% CSS hides in an Erlang string or binary (the report's assets are files
%%% under priv/report, checked by beamlab_report_assets_tests).
-module(beamlab_architecture_tests).
%%%
%%% The checks that read the whole tree, start a VM or run xref have a
%%% timeout of their own (EUnit's default is 5 s a test; at a load average
%%% above 30 the module map's check, which starts a VM, took longer), and
%%% the compiled code is read once for the checks on it.
-include_lib("eunit/include/eunit.hrl").

%% A whole-tree check's bound: more than ten times what the slowest takes
%% at a load average of 23 (the module map's escript, 2.4 s).
-define(TREE_TIMEOUT_S, 60).

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

%% The README's layout paragraph names every folder too.
every_src_folder_is_in_the_readme_test() ->
    Root = beamlab_test_util:root(),
    {ok, Readme} = file:read_file(filename:join(Root, "README.md")),
    Folders = [unicode:characters_to_binary(D) || D <- src_folders(Root, [])],
    ?assertEqual([], [F || F <- Folders, binary:match(Readme, <<"`src/", F/binary, "`">>) =:= nomatch]).

%% test/ mirrors src/: every folder of tests is a folder of src/ (test/cli
%% holds the tests of src/cli, ...), besides the fixtures and a suite's
%% data folder; tests of several layers stay at the top.
test_folders_mirror_src_test() ->
    Root = beamlab_test_util:root(),
    Src = src_folders(Root, []),
    Tests = [D || D <- test_folders(filename:join(Root, "test"), ""),
                  not lists:prefix("fixtures", D), string:find(D, "_SUITE_data") =:= nomatch],
    ?assert(length(Tests) > 5),
    ?assertEqual([], [D || D <- Tests, not lists:member(D, Src)]).

%% A module's name carries its folder (#31): src/amqp/ holds beamlab_amqp*,
%% src/cli/commands/ beamlab_command_*, ...; the exceptions are named by
%% the layers' table: the build tools' entry points (their names are the
%% tools') and the JSON codec of src/format/.
module_prefixes_match_folders_test() ->
    Root = beamlab_test_util:root(),
    Exceptions = ["cli/beamlab_rebar3", "cli/Elixir.Mix.Tasks.Beamlab", "format/beamlab_json"],
    Files = [F || F <- src_files(), filename:dirname(F) =/= filename:join(Root, "src")],
    ?assert(length(Files) > 100),
    Wrong = [Rel || F <- Files,
                    Folder <- [filename:basename(filename:dirname(F))],
                    Mod <- [filename:basename(F, ".erl")],
                    Rel <- [Folder ++ "/" ++ Mod],
                    not lists:member(Rel, Exceptions),
                    not lists:prefix("beamlab_" ++ string:trim(Folder, trailing, "s"), Mod)],
    ?assertEqual([], Wrong).

test_folders(Dir, Rel) ->
    {ok, Names} = file:list_dir(filename:join(Dir, Rel)),
    Subs = lists:sort([case Rel of "" -> N; _ -> Rel ++ "/" ++ N end
                       || N <- Names, filelib:is_dir(filename:join([Dir, Rel, N]))]),
    Subs ++ lists:append([test_folders(Dir, S) || S <- Subs]).

%% The folders under src/, as paths relative to it (["cli", "cli/commands", ...]).
src_folders(Root, Rel) ->
    Dir = filename:join([Root, "src" | Rel]),
    {ok, Names} = file:list_dir(Dir),
    Subs = lists:sort([Rel ++ [N] || N <- Names, filelib:is_dir(filename:join(Dir, N))]),
    [filename:join(S) || S <- Subs] ++ lists:append([src_folders(Root, S) || S <- Subs]).

%% The module map of docs/architecture.md is the one the code gives
%% (scripts/architecture-map.escript --check); when a module was added,
%% moved or redocumented, the failure names the command that regenerates it.
module_map_is_generated_from_the_code_test_() ->
    {timeout, ?TREE_TIMEOUT_S, fun module_map_is_generated_from_the_code/0}.

module_map_is_generated_from_the_code() ->
    Root = beamlab_test_util:root(),
    Script = filename:join([Root, "scripts", "architecture-map.escript"]),
    Out = os:cmd("escript '" ++ Script ++ "' --check 2>&1; echo \"exit=$?\""),
    lists:suffix("exit=0\n", Out) orelse
        erlang:error({module_map_out_of_date,
                      "docs/architecture.md's module map differs from src/: run "
                      "`escript scripts/architecture-map.escript` (or make architecture-map) and commit it",
                      Out}).

no_call_cycle_between_modules_test_() ->
    {timeout, ?TREE_TIMEOUT_S, fun no_call_cycle_between_modules/0}.

no_call_cycle_between_modules() ->
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

every_module_opens_with_a_doc_test_() ->
    {timeout, ?TREE_TIMEOUT_S, fun every_module_opens_with_a_doc/0}.

every_module_opens_with_a_doc() ->
    Files = src_files(),
    ?assert(length(Files) > 100),
    Undocumented = [F || F <- Files,
                         begin
                             {ok, Src} = file:read_file(F),
                             [First | _] = [L || L <- binary:split(Src, <<"\n">>, [global]),
                                                 string:trim(L) =/= <<>>] ++ [<<>>],
                             not lists:prefix("%%% @doc ", binary_to_list(First))
                         end],
    ?assertEqual([], Undocumented).

%% The application's modules' abstract code, each beam read once for the
%% checks below.
compiled_code_test_() ->
    {setup, fun() -> [{M, forms(M)} || M <- app_modules()] end,
     fun(Code) ->
             [{"every export has a spec",
               {timeout, ?TREE_TIMEOUT_S, fun() -> every_export_has_a_spec(Code) end}},
              {"the broker's specs name their maps",
               {timeout, ?TREE_TIMEOUT_S, fun() -> broker_specs_name_their_maps(Code) end}}]
     end}.

%% The default profile compiles with warn_missing_spec; this checks the
%% same from the compiled code, in every profile.
every_export_has_a_spec(Code) ->
    ?assert(length(Code) > 100),
    Missing = [{M, F, A} || {M, Forms} <- Code,
                            Specs <- [[FA || {attribute, _, spec, {FA, _}} <- Forms]
                                      ++ [{F, A} || {attribute, _, spec, {{_, F, A}, _}} <- Forms]],
                            {attribute, _, export, Exports} <- Forms,
                            {F, A} <- Exports,
                            not lists:member({F, A}, Specs)],
    ?assertEqual([], Missing).

%% The broker's specs and types say which map they mean: no bare map().
broker_specs_name_their_maps(Code) ->
    Broker = [C || {M, _} = C <- Code, lists:prefix("beamlab_amqp", atom_to_list(M))],
    ?assert(length(Broker) > 10),
    Bare = [{M, Name} || {M, Forms} <- Broker,
                         {attribute, _, Kind, {Name, Type, _}} <- Forms,
                         Kind =:= type orelse Kind =:= opaque,
                         bare_map(Type)]
        ++ [{M, FA} || {M, Forms} <- Broker,
                       {attribute, _, spec, {FA, Clauses}} <- Forms,
                       bare_map(Clauses)],
    ?assertEqual([], Bare).

bare_map({type, _, map, any}) -> true;
bare_map(T) when is_tuple(T) -> bare_map(tuple_to_list(T));
bare_map(L) when is_list(L) -> lists:any(fun bare_map/1, L);
bare_map(_) -> false.

%% Script and style sheet code lives in priv/report, never in a literal:
%% no string or binary in src/ holds a function with its body, a
%% variable declaration, a DOM call or a CSS declaration block.
no_script_or_style_in_literals_test_() ->
    {timeout, ?TREE_TIMEOUT_S, fun no_script_or_style_in_literals/0}.

no_script_or_style_in_literals() ->
    Code = "\\bfunction\\s*\\w*\\s*\\([\\w\\s,]*\\)\\s*\\{|\\bdocument\\.|addEventListener|"
           "\\b(const|let|var)\\s+\\w+\\s*=|\\{\\s*[a-z-]+\\s*:\\s*[^{};\"]+;",
    {ok, Re} = re:compile(Code, [unicode]),
    Found = [{F, Line, string:slice(S, 0, 60)}
             || F <- src_files(),
                {ok, Src} <- [file:read_file(F)],
                {ok, Tokens, _} <- [erl_scan:string(unicode:characters_to_list(Src))],
                {string, Line, S} <- Tokens,
                re:run(S, Re) =/= nomatch],
    ?assertEqual([], Found).

src_files() ->
    filelib:wildcard(filename:join([beamlab_test_util:root(), "src", "**", "*.erl"])).

app_modules() ->
    _ = application:load(beamlab),
    {ok, Modules} = application:get_key(beamlab, modules),
    Modules.

forms(M) ->
    {ok, {M, [{abstract_code, {raw_abstract_v1, Forms}}]}} = beam_lib:chunks(code:which(M), [abstract_code]),
    Forms.
