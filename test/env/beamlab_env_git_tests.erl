-module(beamlab_env_git_tests).
%% The git commit of a work tree in the environment report.
-include_lib("eunit/include/eunit.hrl").

git(Dir, Args) ->
    {0, _} = run(os:find_executable("git"), ["-C", Dir | Args]),
    ok.

run(Exe, Args) ->
    Port = open_port({spawn_executable, Exe}, [{args, Args}, exit_status, stderr_to_stdout, binary,
                                              {env, [{"GIT_AUTHOR_NAME", "t"}, {"GIT_AUTHOR_EMAIL", "t@example.org"},
                                                     {"GIT_COMMITTER_NAME", "t"}, {"GIT_COMMITTER_EMAIL", "t@example.org"},
                                                     {"GIT_COMMITTER_DATE", "2026-01-02T03:04:05+00:00"}]}]),
    beamlab_test_util:port_output(Port, 60000).

work_tree_test_() ->
    {timeout, 60,
     fun() ->
             Dir = beamlab_test_util:tmp_dir("git"),
             ?assertEqual(none, beamlab_env_git:work_tree(Dir)),
             ok = git(Dir, ["init", "-q", "-b", "main"]),
             %% A repository without a commit has nothing to record.
             ?assertEqual(none, beamlab_env_git:work_tree(Dir)),
             ok = file:write_file(filename:join(Dir, "a.txt"), <<"1">>),
             ok = git(Dir, ["add", "a.txt"]),
             ok = git(Dir, ["commit", "-q", "-m", "one"]),
             #{commit := C, commit_time := T, branch := <<"main">>, dirty := false} = beamlab_env_git:work_tree(Dir),
             ?assertEqual(40, byte_size(C)),
             ?assertEqual(<<"2026-01-02T03:04:05+00:00">>, T),
             %% A subdirectory is in the same work tree.
             Sub = filename:join(Dir, "sub"),
             ok = file:make_dir(Sub),
             ?assertMatch(#{commit := C}, beamlab_env_git:work_tree(Sub)),
             %% Untracked files leave it clean; a changed tracked file does not.
             ok = file:write_file(filename:join(Dir, "new.txt"), <<"x">>),
             ?assertMatch(#{dirty := false}, beamlab_env_git:work_tree(Dir)),
             ok = file:write_file(filename:join(Dir, "a.txt"), <<"2">>),
             ?assertMatch(#{commit := C, dirty := true}, beamlab_env_git:work_tree(Dir))
     end}.
