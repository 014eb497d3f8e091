-module(beamlab_runtime_file_tests).
%%% The output-path policy's classification (beamlab_runtime_file:check_target/1).
-include_lib("eunit/include/eunit.hrl").

tmp() ->
    D = filename:join(case os:getenv("TMPDIR") of false -> "/tmp"; T -> T end,
                      "beamlab-file-tests-" ++ os:getpid() ++ "-"
                      ++ integer_to_list(erlang:unique_integer([positive]))),
    ok = file:make_dir(D),
    D.

streams_test() ->
    [?assertEqual({ok, {in_place, standard_output}}, beamlab_runtime_file:check_target(P))
     || P <- ["-", "/dev/stdout", "/dev/fd/1", "/proc/self/fd/1"]],
    ?assertEqual({ok, {in_place, standard_error}}, beamlab_runtime_file:check_target("/dev/stderr")),
    ?assertEqual({error, empty}, beamlab_runtime_file:check_target("")).

kinds_test() ->
    D = tmp(),
    J = fun(N) -> filename:join(D, N) end,
    ok = file:write_file(J("f"), <<>>),
    ok = file:make_symlink("f", J("l")),
    ok = file:make_symlink("loop", J("loop")),
    ok = file:make_symlink(D, J("dirlink")),
    ?assertEqual({ok, new}, beamlab_runtime_file:check_target(J("n.json"))),
    ?assertEqual({ok, new}, beamlab_runtime_file:check_target(J("a/b/n.json"))),
    ?assertEqual({ok, exists}, beamlab_runtime_file:check_target(J("f"))),
    ?assertEqual({ok, directory}, beamlab_runtime_file:check_target(D)),
    ?assertEqual({ok, directory}, beamlab_runtime_file:check_target(J("dirlink"))),
    ?assertEqual({ok, exists}, beamlab_runtime_file:check_target(J("dirlink/f"))),
    ?assertEqual({error, {link, J("l")}}, beamlab_runtime_file:check_target(J("l"))),
    ?assertEqual({error, {not_a_directory, J("f")}}, beamlab_runtime_file:check_target(J("f/x"))),
    ?assertMatch({error, {link_loop, _}}, beamlab_runtime_file:check_target(J("loop"))),
    %% Relative names are shown as given.
    {ok, Cwd} = file:get_cwd(),
    ok = file:set_cwd(D),
    try
        ?assertEqual({error, {link, "l"}}, beamlab_runtime_file:check_target("l")),
        ?assertEqual({error, {not_a_directory, "f"}}, beamlab_runtime_file:check_target("f/x/y"))
    after
        ok = file:set_cwd(Cwd),
        _ = file:del_dir_r(D)
    end.

%% /proc, /sys and /dev are the kernel's: a file or a directory there is
%% refused, wherever the path leads from (/proc/self is a link); what is
%% written in place there still is (devices, standard output), and
%% /dev/shm is a directory for files.
system_dirs_test() ->
    [?assertMatch({error, {system_dir, P, Top}}, beamlab_runtime_file:check_target(P), P)
     || {P, Top} <- [{"/proc/self/x", "/proc"}, {"/proc/self/x.json", "/proc"}, {"/proc", "/proc"},
                     {"/proc/self/environ", "/proc"}, {"/dev/x.json", "/dev"}, {"/dev", "/dev"},
                     {"/sys/x.json", "/sys"}]],
    ?assertEqual({ok, {in_place, character_device}}, beamlab_runtime_file:check_target("/dev/null")),
    ?assertEqual({ok, {in_place, standard_output}}, beamlab_runtime_file:check_target("/proc/self/fd/1")),
    [?assertEqual({ok, new}, beamlab_runtime_file:check_target("/dev/shm/beamlab-no-such-file.json"))
     || filelib:is_dir("/dev/shm")],
    %% a link to /proc on the way leads there
    D = tmp(),
    ok = file:make_symlink("/proc/self", filename:join(D, "p")),
    try
        ?assertMatch({error, {system_dir, _, "/proc"}},
                     beamlab_runtime_file:check_target(filename:join(D, "p/x.json")))
    after
        _ = file:del_dir_r(D)
    end,
    ?assertEqual("/proc/self/x is under /proc, the kernel's: beamlab writes there only to a device or its "
                 "standard output or error (/dev/null, /dev/stdout, /proc/self/fd/1); name a file elsewhere",
                 beamlab_runtime_file:format_error(element(2, beamlab_runtime_file:check_target("/proc/self/x")))).

write_test() ->
    D = tmp(),
    P = filename:join(D, "w.txt"),
    ?assertEqual({ok, new}, beamlab_runtime_file:write(P, <<"a">>)),
    ?assertEqual({ok, replaced}, beamlab_runtime_file:write(P, <<"b">>)),
    ?assertEqual({ok, <<"b">>}, file:read_file(P)),
    ?assertEqual({error, eisdir}, beamlab_runtime_file:write(D, <<"c">>)),
    _ = file:del_dir_r(D).

%% Outputs compared with inputs and with each other by identity (issue
%% 34): a hard link, a link to the input, a path through `..', two names
%% for one new file clash; other files, streams and devices do not.
distinct_test() ->
    D = tmp(),
    J = fun(N) -> filename:join(D, N) end,
    ok = file:write_file(J("in"), <<"x">>),
    ok = file:write_file(J("other"), <<"y">>),
    ok = file:make_link(J("in"), J("hard")),
    ok = file:make_symlink("in", J("sym")),
    ok = file:make_dir(J("sub")),
    Check = fun beamlab_runtime_file:check_distinct/2,
    In = [{"input", J("in")}],
    ?assertEqual({error, {same_file, {"-o", J("in")}, {"input", J("in")}, input}}, Check([{"-o", J("in")}], In)),
    ?assertMatch({error, {same_file, {"-o", _}, {"input", _}, input}}, Check([{"-o", J("hard")}], In)),
    ?assertMatch({error, {same_file, _, _, input}}, Check([{"-o", J("sub/../in")}], In)),
    ?assertMatch({error, {same_file, _, _, input}}, Check([{"-o", J("in")}], [{"-B", J("sym")}])),
    ?assertMatch({error, {same_file, {"-o", _}, {"--save", _}, output}},
                 Check([{"-o", J("new.json")}, {"--save", J("sub/../new.json")}], [])),
    ?assertEqual(ok, Check([{"-o", J("other")}, {"--save", J("new.json")}], In)),
    ?assertEqual(ok, Check([{"-o", "-"}, {"--save", "/dev/stdout"}, {"--x", "/dev/null"}, {"--y", "/dev/null"}], In)),
    %% An input that is not there is the command's own error, later.
    ?assertEqual(ok, Check([{"-o", J("missing")}], [{"input", J("missing")}])),
    [?assertEqual(1, length(string:split(lists:flatten(beamlab_runtime_file:format_error(E)), "\n", all)))
     || {error, E} <- [Check([{"-o", J("in")}], In), Check([{"-o", J("n")}, {"--save", J("n")}], [])]].
