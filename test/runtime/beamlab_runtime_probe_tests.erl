-module(beamlab_runtime_probe_tests).
-include_lib("eunit/include/eunit.hrl").

%% A fake proc tree: this VM (100) with an erl_child_setup (101) that
%% reaped one fresh VM and runs another (102, a command name with spaces
%% and a parenthesis), and processes that are not ours (1, 200).
fake_proc() ->
    Root = beamlab_test_util:tmp_dir("probe"),
    Stat = fun(Pid, Comm, PPid, U, S, CU, CS) ->
                   File = filename:join([Root, "proc", integer_to_list(Pid), "stat"]),
                   ok = filelib:ensure_dir(File),
                   ok = file:write_file(File, io_lib:format("~b (~s) S ~b 0 0 0 0 0 0 0 0 0 ~b ~b ~b ~b 20 0 1 0\n",
                                                            [Pid, Comm, PPid, U, S, CU, CS]))
           end,
    Stat(1, "init", 0, 7, 3, 900, 100),
    Stat(100, "beam.smp", 1, 100, 50, 10, 0),
    Stat(101, "erl_child_setup", 100, 0, 1, 199, 0),
    Stat(102, "beam.smp (x) y", 101, 250, 50, 0, 0),
    Stat(200, "sh", 1, 5000, 0, 0, 0),
    ok = filelib:ensure_dir(filename:join([Root, "proc", "self", "f"])),
    ok = file:write_file(filename:join([Root, "proc", "stat"]), "cpu  1000 0 500 8000 40 0 0 0 0 0\ncpu0 1 2 3 4\n"),
    Root.

%% The tree's own and reaped children's time, not its parent's or a
%% sibling's: (100+50+10) + (1+199) + (250+50) ticks of 10 ms.
tree_cpu_test() ->
    Root = fake_proc(),
    ?assertEqual({ok, 6600000}, beamlab_runtime_probe:tree_cpu_us(Root, "100")),
    ?assertEqual({ok, 3000000}, beamlab_runtime_probe:tree_cpu_us(Root, "102")),
    ?assertEqual({error, enoent}, beamlab_runtime_probe:tree_cpu_us(Root, "4242")),
    ?assertEqual({error, enoent}, beamlab_runtime_probe:tree_cpu_us(filename:join(Root, "none"), "100")),
    {ok, #{busy_ticks := 1500, own_us := 6600000}} = beamlab_runtime_probe:cpu_snapshot(Root, "100"),
    ?assertEqual({error, enoent}, beamlab_runtime_probe:cpu_snapshot(Root, "4242")).

%% A fresh VM (102) started by a beamlab VM (100, BEAMLAB_TREE): the
%% ancestors up to it count as its own, their own time only (not the
%% fresh VM reaped before, 101's cutime, nor 100's cutime); an `Upto'
%% that is no ancestor (200, a sibling of 100) or none adds nothing.
tree_upto_test() ->
    Root = fake_proc(),
    %% 102's 300 ticks + 101's own 1 + 100's own 150
    ?assertEqual({ok, 4510000}, beamlab_runtime_probe:tree_cpu_us(Root, "102", "100")),
    ?assertEqual({ok, 3010000}, beamlab_runtime_probe:tree_cpu_us(Root, "102", "101")),
    ?assertEqual({ok, 3000000}, beamlab_runtime_probe:tree_cpu_us(Root, "102", "200")),
    ?assertEqual({ok, 3000000}, beamlab_runtime_probe:tree_cpu_us(Root, "102", "102")),
    ?assertEqual({ok, 3000000}, beamlab_runtime_probe:tree_cpu_us(Root, "102", undefined)),
    ?assertEqual({ok, 6600000}, beamlab_runtime_probe:tree_cpu_us(Root, "100", "100")),
    {ok, #{own_us := 4510000}} = beamlab_runtime_probe:cpu_snapshot(Root, "102", "100"),
    %% BEAMLAB_TREE unset or not a pid: this VM's own tree
    Old = os:getenv("BEAMLAB_TREE"),
    try
        os:unsetenv("BEAMLAB_TREE"),
        ?assertEqual(os:getpid(), beamlab_runtime_probe:tree_root()),
        os:putenv("BEAMLAB_TREE", "12x"),
        ?assertEqual(os:getpid(), beamlab_runtime_probe:tree_root()),
        os:putenv("BEAMLAB_TREE", "4242"),
        ?assertEqual("4242", beamlab_runtime_probe:tree_root())
    after
        case Old of
            false -> os:unsetenv("BEAMLAB_TREE");
            _ -> os:putenv("BEAMLAB_TREE", Old)
        end
    end.

%% A VM beamlab started detached (peer's default: its parent is init)
%% carries BEAMLAB_TREE=root in its environment: it and its children are
%% the root's tree too; a detached VM of another root, or another
%% program's beam.smp, or one with no environment to read, are not.
detached_vms_are_the_trees_test() ->
    Root = fake_proc(),
    Stat = fun(Pid, Comm, PPid, U, Env) ->
                   Dir = filename:join([Root, "proc", integer_to_list(Pid)]),
                   ok = filelib:ensure_dir(filename:join(Dir, "f")),
                   ok = file:write_file(filename:join(Dir, "stat"),
                                        io_lib:format("~b (~s) S ~b 0 0 0 0 0 0 0 0 0 ~b 0 0 0 20 0 1 0\n",
                                                      [Pid, Comm, PPid, U])),
                   [ok = file:write_file(filename:join(Dir, "environ"), [lists:join([0], E), 0]) || E <- [Env], E =/= none]
           end,
    Stat(300, "beam.smp", 1, 400, ["HOME=/x", "BEAMLAB_TREE=100"]),
    Stat(301, "erl_child_setup", 300, 20, none),
    Stat(302, "beam.smp", 1, 4000, ["BEAMLAB_TREE=200"]),
    Stat(303, "sh", 1, 4000, ["BEAMLAB_TREE=100"]),
    Stat(304, "beam.smp", 1, 4000, ["BEAMLAB_TREE=1000"]),
    Stat(305, "beam.smp", 1, 4000, none),
    %% 100's tree (660 ticks) and 300's (420)
    ?assertEqual({ok, 10800000}, beamlab_runtime_probe:tree_cpu_us(Root, "100", "100")),
    %% without a root named, the tree alone (as before)
    ?assertEqual({ok, 6600000}, beamlab_runtime_probe:tree_cpu_us(Root, "100")),
    %% a fresh VM (102) of root 100: its own, its ancestors', the detached VM's
    ?assertEqual({ok, 4510000 + 4200000}, beamlab_runtime_probe:tree_cpu_us(Root, "102", "100")).

%% A stat line with a start time (field 22).
stat_line(Pid, Comm, PPid, U, Start) ->
    io_lib:format("~b (~s) S ~b 0 0 0 0 0 0 0 0 0 ~b 0 0 0 20 0 1 0 ~b 0\n", [Pid, Comm, PPid, U, Start]).

write_stat(Root, Pid, Text) ->
    File = filename:join([Root, "proc", integer_to_list(Pid), "stat"]),
    ok = filelib:ensure_dir(File),
    ok = file:write_file(File, Text).

%% Sampled again within 10 s, the tree's pids are kept: /proc is
%% listed, and only the tree's and new pids' stat read (a process outside
%% the tree is not read again: 200's stat rewritten to claim 100 as its
%% parent, impossible for a real process, is not seen until the next
%% walk); a child started since counts at once, with its children; a
%% child gone, or its pid reused by another process, no longer counts.
tree_cache_test() ->
    Root = fake_proc(),
    %% (walked "now" for the whole test, however slow the machine)
    Fresh = fun(T) -> T#{walked := erlang:monotonic_time(millisecond) + 3600000} end,
    {ok, 6600000, T0} = beamlab_runtime_probe:tree_cpu(Root, ["100"], undefined, undefined),
    write_stat(Root, 200, stat_line(200, "sh", 100, 5000, 0)),
    write_stat(Root, 400, stat_line(400, "sh", 100, 30, 7)),
    write_stat(Root, 401, stat_line(401, "sleep", 400, 5, 8)),
    {ok, Us1, T1} = beamlab_runtime_probe:tree_cpu(Root, ["100"], undefined, Fresh(T0)),
    ?assertEqual(6600000 + 350000, Us1),
    %% 401 gone, 400's pid reused by a process that is not ours
    ok = file:del_dir_r(filename:join([Root, "proc", "401"])),
    write_stat(Root, 400, stat_line(400, "other", 1, 900, 99)),
    {ok, Us2, T2} = beamlab_runtime_probe:tree_cpu(Root, ["100"], undefined, Fresh(T1)),
    ?assertEqual(6600000, Us2),
    %% 10 s later, every process is read again: 200 claims 100 now
    Aged = T2#{walked := erlang:monotonic_time(millisecond) - 10000},
    ?assertMatch({ok, 6600000 + 50000000, _}, beamlab_runtime_probe:tree_cpu(Root, ["100"], undefined, Aged)),
    %% another tree asked for: walked again
    ?assertMatch({ok, 3000000, _}, beamlab_runtime_probe:tree_cpu(Root, ["102"], undefined, T2)),
    %% the tree's root gone: no tree
    ok = file:del_dir_r(filename:join([Root, "proc", "100"])),
    ?assertEqual({error, enoent}, beamlab_runtime_probe:tree_cpu(Root, ["100"], undefined, Fresh(T2))).

%% Two trees together (a watched node's VM, 200, beside beamlab's own,
%% 100), each counted once when one is in the other; the second may be
%% missing.
trees_together_test() ->
    Root = fake_proc(),
    ?assertMatch({ok, 6600000 + 50000000, _}, beamlab_runtime_probe:tree_cpu(Root, ["100", "200"], undefined, undefined)),
    ?assertMatch({ok, 6600000, _}, beamlab_runtime_probe:tree_cpu(Root, ["100", "102"], undefined, undefined)),
    ?assertMatch({ok, 6600000, _}, beamlab_runtime_probe:tree_cpu(Root, ["100", "4242"], undefined, undefined)),
    ?assertEqual({error, enoent}, beamlab_runtime_probe:tree_cpu(Root, ["4242", "100"], undefined, undefined)).

%% Others = the machine's busy time minus the tree's, in cores.
competition_test() ->
    S0 = #{t_us => 0, busy_ticks => 1000, own_us => 0},
    ?assertEqual(#{window_ms => 1000, machine_cores => 2.0, own_cores => 0.5, others_cores => 1.5},
                 beamlab_runtime_probe:competition(S0, #{t_us => 1000000, busy_ticks => 1200, own_us => 500000})),
    %% the two clocks tick apart: never below zero
    ?assertMatch(#{others_cores := 0.0, own_cores := 1.0},
                 beamlab_runtime_probe:competition(S0, #{t_us => 1000000, busy_ticks => 1090, own_us => 1000000})),
    %% each figure over its own clock: the machine's from its /proc/stat
    %% reads, the tree's from its walks (a walk that ended 0.6 s after the
    %% machine's read made a busy machine look idle)
    T0 = S0#{tree_t_us => 50000},
    ?assertEqual(#{window_ms => 1000, machine_cores => 2.0, own_cores => 1.0, others_cores => 1.0},
                 beamlab_runtime_probe:competition(T0, #{t_us => 1000000, busy_ticks => 1200, own_us => 1600000,
                                                         tree_t_us => 1650000})).

%% The real machine: this VM is in its own tree, and burning CPU here
%% shows as its own time, not others'.
this_machine_test() ->
    case os:type() of
        {unix, linux} ->
            {ok, S0} = beamlab_runtime_probe:cpu_snapshot("/", os:getpid()),
            Until = erlang:monotonic_time(millisecond) + 300,
            spin(Until),
            {ok, S1} = beamlab_runtime_probe:cpu_snapshot("/", os:getpid()),
            #{own_cores := Own, machine_cores := Machine} = beamlab_runtime_probe:competition(S0, S1),
            ?assert(Own > 0.0),
            ?assert(Machine > 0.0);
        _ ->
            ?assertEqual({error, enoent}, beamlab_runtime_probe:cpu_snapshot("/", os:getpid()))
    end.

spin(Until) ->
    case erlang:monotonic_time(millisecond) >= Until of
        true -> ok;
        false -> spin(Until)
    end.
