-module(beamlab_project_code_tests).

-include_lib("eunit/include/eunit.hrl").

%% The same two modules built as a project in Root: `src/' compiled with
%% absolute paths and the project's include directories into
%% `_build/default/lib/app/ebin', as rebar3 does. Returns the ebin.
build(Root) ->
    Src = filename:join(Root, "src"),
    Inc = filename:join(Root, "include"),
    Ebin = filename:join([Root, "_build", "default", "lib", "app", "ebin"]),
    ok = filelib:ensure_path(Src),
    ok = filelib:ensure_path(Inc),
    ok = filelib:ensure_path(Ebin),
    ok = file:write_file(filename:join(Inc, "app.hrl"), "-define(N, 7).\n"),
    %% a function past line 2047: its line number takes the compact
    %% encoding's longer forms in the line table
    ok = file:write_file(filename:join(Src, "app_a.erl"),
                         ["-module(app_a).\n-export([f/1, far/0]).\n-include(\"app.hrl\").\n",
                          "f(X) -> X * ?N.\n", lists:duplicate(3000, "\n"),
                          "far() -> erlang:error(far).\n"]),
    ok = file:write_file(filename:join(Src, "app_b.erl"),
                         "-module(app_b).\n-export([g/0]).\ng() -> app_a:f(6).\n"),
    [{ok, _} = compile:file(filename:join(Src, F),
                            [debug_info, {outdir, Ebin}, {i, Inc}, {i, Src}, report_errors])
     || F <- ["app_a.erl", "app_b.erl"]],
    Ebin.

tmp(Name) ->
    Base = case os:getenv("BEAMLAB_TEST_TMP") of
               false -> "/tmp";
               D -> D
           end,
    Dir = filename:join([Base, "project_code_tests", Name]),
    _ = file:del_dir_r(Dir),
    ok = filelib:ensure_path(Dir),
    Dir.

%% #35: the base of a check is built in a temporary worktree, the head in
%% the project: the same code, built in directories whose names differ in
%% length, must reach both sides' VMs as the same bytes in the same order
%% (it took more room on one side, which moved every module after it).
same_code_built_in_two_places_loads_the_same_test() ->
    Short = build(tmp("h")),
    Long = build(filename:join(tmp("base-of-a-longer-name"), "worktree")),
    Raw = fun(Ebin) -> [B || F <- lists:sort(filelib:wildcard(filename:join(Ebin, "*.beam"))),
                             {ok, B} <- [file:read_file(F)]] end,
    %% the cause: the raw builds differ (paths in their compile information
    %% and line tables)
    ?assertNotEqual(Raw(Short), Raw(Long)),
    [?assertNotEqual(byte_size(A), byte_size(B)) || {A, B} <- lists:zip(Raw(Short), Raw(Long))],
    Side = fun(Ebin) -> [{M, Bin} || {M, _File, Bin} <- beamlab_project_code:modules([Ebin], [])] end,
    ?assertEqual([app_a, app_b], [M || {M, _} <- Side(Short)]),
    ?assertEqual(Side(Short), Side(Long)),
    %% each comes with the file it was read from
    ?assertEqual([filename:join(Long, "app_a.beam"), filename:join(Long, "app_b.beam")],
                 [F || {_, F, _} <- beamlab_project_code:modules([Long], [])]).

normalized_code_runs_test() ->
    Ebin = build(tmp("runs")),
    Mods = beamlab_project_code:modules([Ebin], []),
    try
        [{module, M} = code:load_binary(M, F, B) || {M, F, B} <- Mods],
        ?assertEqual(42, app_b:g()),
        %% what +deterministic keeps of the compile information
        ?assertMatch([{version, _}], app_a:module_info(compile)),
        ?assertEqual(filename:join(Ebin, "app_a.beam"), code:which(app_a)),
        %% the line table is whole: base name and line of a raise past line 2047
        {'EXIT', {far, [{app_a, far, 0, Where} | _]}} = (catch app_a:far()),
        ?assertEqual("app_a.erl", proplists:get_value(file, Where)),
        ?assertEqual(3005, proplists:get_value(line, Where))
    after
        [begin code:purge(M), code:delete(M), code:purge(M) end || M <- [app_a, app_b]]
    end.

first_on_the_path_and_shared_paths_test() ->
    One = build(tmp("one")),
    Two = build(tmp("two")),
    ok = file:delete(filename:join(One, "app_b.beam")),
    %% app_a from One (first on the path), app_b from Two
    ?assertEqual([{app_a, filename:join(One, "app_a.beam")}, {app_b, filename:join(Two, "app_b.beam")}],
                 [{M, F} || {M, F, _} <- beamlab_project_code:modules([One, Two], [])]),
    %% a module found first in a shared path is left to load on demand,
    %% even where a later path has it too
    ?assertEqual([app_b], [M || {M, _, _} <- beamlab_project_code:modules([One, Two], [One])]),
    ?assertEqual([], beamlab_project_code:modules([One, Two], [One, Two])).

%% write/3: the modules normalized once into a directory of the check,
%% listed in name order with the file each was built as; the copies are
%% the bytes modules/2 gives, the same for both sides.
write_test() ->
    Short = build(tmp("w-h")),
    Long = build(filename:join(tmp("w-base-of-a-longer-name"), "worktree")),
    Out = fun(Ebin, Dir) ->
                  {ok, Stored} = beamlab_project_code:write([Ebin], [], Dir),
                  Stored
          end,
    HeadDir = filename:join(tmp("w-out"), "head-code"),
    BaseDir = filename:join(tmp("w-out2"), "base-code"),
    Head = Out(Short, HeadDir),
    Base = Out(Long, BaseDir),
    ?assertEqual([{app_a, filename:join(Short, "app_a.beam"), filename:join(HeadDir, "app_a.beam")},
                  {app_b, filename:join(Short, "app_b.beam"), filename:join(HeadDir, "app_b.beam")}], Head),
    Bytes = fun(Stored) -> [begin {ok, B} = file:read_file(C), B end || {_, _, C} <- Stored] end,
    ?assertEqual(Bytes(Head), Bytes(Base)),
    ?assertEqual([B || {_, _, B} <- beamlab_project_code:modules([Short], [])], Bytes(Head)),
    %% a directory that cannot be made is an error naming it
    Blocker = filename:join(tmp("w-blocked"), "file"),
    ok = file:write_file(Blocker, "x"),
    ?assertMatch({error, {normalize, _, _}},
                 beamlab_project_code:write([Short], [], filename:join(Blocker, "code"))).

normalize_dir_test() ->
    A = build(tmp("dir-a")),
    B = build(tmp("dir-b-longer")),
    ok = beamlab_project_code:normalize_dir(A),
    ok = beamlab_project_code:normalize_dir(B),
    Read = fun(Ebin) -> [begin {ok, X} = file:read_file(filename:join(Ebin, F)), X end
                         || F <- ["app_a.beam", "app_b.beam"]] end,
    ?assertEqual(Read(A), Read(B)),
    %% normalizing again changes nothing
    ok = beamlab_project_code:normalize_dir(A),
    ?assertEqual(Read(B), Read(A)).

not_a_beam_is_left_as_it_is_test() ->
    ?assertEqual(<<"not a beam">>, beamlab_project_code:normalize(<<"not a beam">>)),
    ?assertEqual(<<>>, beamlab_project_code:normalize(<<>>)).
