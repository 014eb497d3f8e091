-module(beamlab_runtime_alloc_wrap_tests).
-include_lib("eunit/include/eunit.hrl").

expr(S) ->
    {ok, Ts, _} = erl_scan:string(S ++ "."),
    {ok, [E]} = erl_parse:parse_exprs(Ts),
    E.

text(E) -> lists:flatten(erl_pp:expr(E)).

wraps_every_spawn_form_test_() ->
    W = fun(S) -> text(beamlab_runtime_alloc_wrap:spawns(expr(S))) end,
    [?_assertEqual("spawn(beamlab_runtime_alloc:gc_after(F))", W("spawn(F)")),
     ?_assertEqual(expr("erlang:spawn_link(beamlab_runtime_alloc:gc_after(m, f, []))"),
                   beamlab_runtime_alloc_wrap:spawns(expr("erlang:spawn_link(m, f, [])"))),
     ?_assertEqual("spawn_monitor(beamlab_runtime_alloc:gc_after(F))", W("spawn_monitor(F)")),
     ?_assertEqual("spawn_opt(beamlab_runtime_alloc:gc_after(F), [link])", W("spawn_opt(F, [link])")),
     ?_assertEqual("proc_lib:spawn_link(beamlab_runtime_alloc:gc_after(F))", W("proc_lib:spawn_link(F)")),
     %% Spawns on another node and other calls are kept.
     ?_assertEqual("spawn(Node, F)", W("spawn(Node, F)")),
     ?_assertEqual("spawn_link(Node, m, f, [])", W("spawn_link(Node, m, f, [])")),
     ?_assertEqual("lists:map(F, L)", W("lists:map(F, L)"))].

%% A wrapped copy of a compiled module: its spawns and its calls to itself
%% go through the copy; the original is untouched.
module_copy_test() ->
    Dir = beamlab_test_util:tmp_dir("alloc-wrap"),
    Src = filename:join(Dir, "wrap_probe.erl"),
    ok = file:write_file(Src, <<"-module(wrap_probe).\n-export([go/0, kid/0]).\n"
                                "go() -> {P, R} = spawn_monitor(wrap_probe, kid, []),\n"
                                "        receive {'DOWN', R, process, P, V} -> V end.\n"
                                "kid() -> exit(wrap_probe:where()).\n"
                                "where() -> ?MODULE.\n">>),
    {ok, wrap_probe} = compile:file(Src, [debug_info, {outdir, Dir}, export_all, nowarn_export_all]),
    true = code:add_patha(Dir),
    {module, wrap_probe} = code:load_file(wrap_probe),
    try
        {ok, Copy} = beamlab_runtime_alloc_wrap:module(wrap_probe),
        ?assertEqual(Copy, beamlab_runtime_alloc_wrap:copy_name(wrap_probe)),
        %% ?MODULE (a literal atom) stays; the call went through the copy.
        ?assertEqual(wrap_probe, Copy:go()),
        ?assertEqual({ok, Copy}, beamlab_runtime_alloc_wrap:module(wrap_probe)),
        ?assertEqual(wrap_probe, wrap_probe:go())
    after
        _ = code:del_path(Dir),
        _ = file:del_dir_r(Dir)
    end.

no_debug_info_test() ->
    ?assertMatch({error, {no_object_code, _}}, beamlab_runtime_alloc_wrap:module(no_such_module_here)),
    ?assertEqual("no_such_module_here has no debug information (compile it with debug_info)",
                 lists:flatten(beamlab_runtime_alloc_wrap:format_error({no_debug_info, no_such_module_here}))).
