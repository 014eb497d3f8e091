-module(beamlab_runtime_checkpoint_tests).
-include_lib("eunit/include/eunit.hrl").

due_test() ->
    %% a new job is always due; the same job at most once a second
    {true, P1} = beamlab_runtime_checkpoint:due(1, none, 0),
    ?assertEqual(false, beamlab_runtime_checkpoint:due(1, P1, 999)),
    ?assertMatch({true, {1, 1000}}, beamlab_runtime_checkpoint:due(1, P1, 1000)),
    ?assertMatch({true, {2, 10}}, beamlab_runtime_checkpoint:due(2, P1, 10)).

cause_test() ->
    Text = fun(S) -> unicode:characters_to_list(beamlab_runtime_checkpoint:cause(S)) end,
    ?assertMatch("likely a halt() or init:stop()" ++ _, Text(0)),
    ?assertMatch("likely out of memory" ++ _, Text(1)),
    ?assertMatch("likely a halt(3) or init:stop(3)" ++ _, Text(3)),
    ?assertMatch("killed by SIGKILL" ++ _, Text(137)),
    ?assertEqual("killed by signal 11", Text(139)).

none_test() ->
    ?assertEqual(none, beamlab_runtime_checkpoint:open(undefined, ctx)),
    ?assertEqual(none, beamlab_runtime_checkpoint:open("", ctx)),
    ?assertEqual(ok, beamlab_runtime_checkpoint:save(none, state)),
    ?assertEqual(ok, beamlab_runtime_checkpoint:clear(none)).

round_trip_test() ->
    {ok, Dir} = beamlab_runtime_file:private_dir("beamlab-cp-test"),
    try
        Cp = beamlab_runtime_checkpoint:open(Dir, #{command => "run"}),
        ?assertMatch({error, enoent}, beamlab_runtime_checkpoint:load(Dir)),
        ok = beamlab_runtime_checkpoint:save(Cp, #{n => 1}),
        ok = beamlab_runtime_checkpoint:save(Cp, #{n => 2}),
        ?assertEqual({ok, #{context => #{command => "run"}, state => #{n => 2}}},
                     beamlab_runtime_checkpoint:load(Dir)),
        %% only the checkpoint itself is there (the temporary file was renamed)
        ?assertEqual({ok, ["checkpoint"]}, file:list_dir(Dir)),
        ok = beamlab_runtime_checkpoint:clear(Cp),
        ?assertEqual({ok, []}, file:list_dir(Dir)),
        ok = file:write_file(filename:join(Dir, "checkpoint"), <<"garbage">>),
        ?assertEqual({error, corrupt}, beamlab_runtime_checkpoint:load(Dir)),
        ok = beamlab_runtime_checkpoint:clear(Dir)
    after
        _ = file:del_dir_r(Dir)
    end.

%% A directory that is gone stays gone: nothing is created.
gone_dir_test() ->
    {ok, Dir} = beamlab_runtime_file:private_dir("beamlab-cp-test"),
    ok = file:del_dir(Dir),
    ok = beamlab_runtime_checkpoint:save(beamlab_runtime_checkpoint:open(Dir, c), s),
    ?assertNot(filelib:is_dir(Dir)).
