-module(beamlab_project_bench_tests).

-include_lib("eunit/include/eunit.hrl").

%% Compiles and loads a module from source text; returns its name.
load(Name, Body) ->
    Dir = filename:join(tmp(), "bench"),
    ok = filelib:ensure_path(Dir),
    File = filename:join(Dir, Name ++ ".erl"),
    ok = file:write_file(File, ["-module(", Name, ").\n-export([benchmarks/0]).\n", Body]),
    {ok, Mod, Bin} = compile:file(File, [binary, report_errors]),
    _ = code:purge(Mod),
    {module, Mod} = code:load_binary(Mod, File, Bin),
    Mod.

tmp() ->
    Base = case os:getenv("BEAMLAB_TEST_TMP") of
               false -> "/tmp";
               D -> D
           end,
    Dir = filename:join(Base, "project_bench_tests"),
    ok = filelib:ensure_path(Dir),
    Dir.

errors(Mods) ->
    {error, {invalid, Lines}} = beamlab_project_bench:benchmarks(Mods),
    Lines.

valid_module_test() ->
    M = load("good_bench",
             "benchmarks() ->\n"
             "    [#{name => \"sort\", runner => fun() -> lists:sort([3, 1, 2]) end},\n"
             "     #{name => <<\"mfa\">>, runner => {lists, seq, [1, 10]}},\n"
             "     #{name => \"code\", runner => \"lists:reverse([1, 2]).\"},\n"
             "     #{name => \"with hooks\", runner => fun(T) -> T end,\n"
             "       init => fun() -> 5 end, init_runner => fun(X) -> X end, done => fun(_) -> ok end},\n"
             "     #{name => \"parse\", runner => fun(In) -> length(In) end,\n"
             "       inputs => [{small, [1]}, {\"large\", lists:seq(1, 100)}]}].\n"),
    {ok, Bs} = beamlab_project_bench:benchmarks([M]),
    ?assertEqual([<<"sort">>, <<"mfa">>, <<"code">>, <<"with hooks">>, <<"parse">>],
                 [N || #{name := N} <- Bs]),
    Jobs = beamlab_project_bench:jobs(Bs),
    ?assertEqual([<<"sort">>, <<"mfa">>, <<"code">>, <<"with hooks">>, <<"parse[small]">>,
                  <<"parse[large]">>], [L || #{label := L} <- Jobs]),
    [Large] = [J || #{label := <<"parse[large]">>} = J <- Jobs],
    ?assertMatch(#{module := good_bench, input := <<"large">>}, Large),
    %% the input reaches the runner through init and init_runner
    #{init := Init, init_runner := IR, runner := R} = Large,
    ?assertEqual(100, R(IR(Init()))).

inputs_with_own_init_test() ->
    M = load("init_input_bench",
             "benchmarks() ->\n"
             "    [#{name => \"n\", runner => fun(X) -> X end, init => fun(N) -> N * 2 end,\n"
             "       inputs => #{one => 1, two => 2}}].\n"),
    {ok, Bs} = beamlab_project_bench:benchmarks([M]),
    [One, Two] = beamlab_project_bench:jobs(Bs),
    ?assertMatch(#{label := <<"n[one]">>}, One),
    ?assertEqual(4, (maps:get(init, Two))()).

missing_export_test() ->
    Dir = filename:join(tmp(), "bench"),
    ok = filelib:ensure_path(Dir),
    File = filename:join(Dir, "noexport_bench.erl"),
    ok = file:write_file(File, "-module(noexport_bench).\n-export([other/0]).\nother() -> ok.\n"),
    {ok, Mod, Bin} = compile:file(File, [binary]),
    {module, Mod} = code:load_binary(Mod, File, Bin),
    [Line] = errors([noexport_bench]),
    ?assertMatch({_, _}, binary:match(Line, <<"noexport_bench.erl: noexport_bench does not export benchmarks/0">>)).

one_line_per_mistake_test() ->
    M = load("bad_bench",
             "benchmarks() ->\n"
             "    [#{runner => fun() -> ok end},\n"
             "     #{name => \"x\", runer => fun() -> ok end},\n"
             "     not_a_map,\n"
             "     #{name => 'atom', runner => fun() -> ok end},\n"
             "     #{name => \"y\", runner => 42},\n"
             "     #{name => \"z\", runner => fun(_) -> ok end},\n"
             "     #{name => \"w\", runner => fun(_) -> ok end, inputs => []}].\n"),
    Lines = errors([M]),
    Expect = [<<"benchmark 1 of bad_bench: has no name">>,
              <<"benchmark \"x\" of bad_bench: unknown key runer">>,
              <<"benchmark \"x\" of bad_bench: has no runner">>,
              <<"benchmark 3 of bad_bench is not a map: not_a_map">>,
              <<"benchmark 4 of bad_bench: name must be a non-empty string">>,
              <<"benchmark \"y\" of bad_bench: runner must be a fun">>,
              <<"benchmark \"z\" of bad_bench: a runner of arity 1 needs init_runner or inputs">>,
              <<"benchmark \"w\" of bad_bench: inputs must be a non-empty list">>],
    ?assertEqual(length(Expect), length(Lines)),
    [?assertMatch({_, _}, binary:match(L, E), {L, E}) || {L, E} <- lists:zip(Lines, Expect)],
    %% each line names the file
    [?assertMatch({0, _}, binary:match(L, <<"bench/bad_bench.erl: ">>), L) || L <- [string:prefix(L0, tmp_prefix()) || L0 <- Lines]].

tmp_prefix() ->
    {ok, Cwd} = file:get_cwd(),
    case string:prefix(tmp(), Cwd ++ "/") of
        nomatch -> tmp() ++ "/";
        Rest -> Rest ++ "/"
    end.

duplicate_names_test() ->
    A = load("dup_a_bench", "benchmarks() -> [#{name => \"same\", runner => fun() -> ok end}].\n"),
    B = load("dup_b_bench", "benchmarks() -> [#{name => <<\"same\">>, runner => {erlang, node, []}},\n"
                           "                  #{name => \"p\", runner => fun(X) -> X end, inputs => [{1, a}]},\n"
                           "                  #{name => \"p[1]\", runner => fun() -> ok end}].\n"),
    Lines = errors([A, B]),
    ?assertMatch([_, _], Lines),
    ?assert(lists:any(fun(L) -> binary:match(L, <<"\"same\" is used 2 times (dup_a_bench, dup_b_bench)">>) =/= nomatch end, Lines)),
    ?assert(lists:any(fun(L) -> binary:match(L, <<"\"p[1]\" is used 2 times">>) =/= nomatch end, Lines)).

crashing_and_empty_test() ->
    C = load("crash_bench", "benchmarks() -> erlang:error(boom).\n"),
    E = load("empty_bench", "benchmarks() -> [].\n"),
    O = load("other_bench", "benchmarks() -> ok.\n"),
    [L1, L2, L3] = errors([C, E, O]),
    ?assertMatch({_, _}, binary:match(L1, <<"crash_bench:benchmarks() failed: error:boom">>)),
    ?assertMatch({_, _}, binary:match(L2, <<"empty_bench:benchmarks() returned no benchmarks">>)),
    ?assertMatch({_, _}, binary:match(L3, <<"other_bench:benchmarks() must return a list of maps, got ok">>)).

no_bench_modules_test() ->
    ?assertMatch({error, {invalid, [_]}}, beamlab_project_bench:benchmarks([lists])),
    ?assertMatch({error, {no_bench_dir, _}}, beamlab_project_bench:sources("/nonexistent/bench")).

%% Several mistakes: one line from format_error/1 (joined with "; "),
%% one line each from mistakes/1 for the command line, a mistake's own
%% line breaks escaped (#31).
mistakes_test() ->
    R = {invalid, [<<"a.erl: no name">>, <<"b.erl: bad\nkey">>]},
    ?assertEqual("a.erl: no name; b.erl: bad\\nkey", lists:flatten(io_lib:format("~ts", [beamlab_project_bench:format_error(R)]))),
    {ok, Lines} = beamlab_project_bench:mistakes(R),
    ?assertEqual(["a.erl: no name", "b.erl: bad\\nkey"], [unicode:characters_to_list(L) || L <- Lines]),
    ?assertEqual(none, beamlab_project_bench:mistakes({no_bench_dir, "x"})),
    ?assertEqual(none, beamlab_project_bench:mistakes({invalid, []})).
