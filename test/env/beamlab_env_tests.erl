-module(beamlab_env_tests).
-include_lib("eunit/include/eunit.hrl").

fixture(Name) ->
    filename:join([beamlab_test_util:root(), "test", "fixtures", "env", Name]).

parse_cpulist_test_() ->
    [?_assertEqual([0, 1, 2, 3, 8, 10, 11], beamlab_env:parse_cpulist(<<"0-3,8,10-11\n">>)),
     ?_assertEqual([5], beamlab_env:parse_cpulist("5")),
     ?_assertEqual([], beamlab_env:parse_cpulist(<<"\n">>)),
     ?_assertEqual([], beamlab_env:parse_cpulist(<<"garbage">>))].

parse_meminfo_test() ->
    M = beamlab_env:parse_meminfo(<<"MemTotal:  1000 kB\nMemAvailable: 10 kB\nBogus: 1 kB\n">>),
    ?assertEqual(#{total => 1024000, available => 10240}, M).

parse_kv_test() ->
    ?assertEqual([{<<"model name">>, <<"X: Y">>}, {<<"a">>, <<>>}],
                 beamlab_env:parse_kv(<<"model name\t: X: Y\nno colon\na:\n">>)).

numa_box_test() ->
    R = beamlab_env:report(#{root => fixture("numa2")}),
    #{numa := Numa, cpu := Cpu, memory := #{system := Sys}, load := Load,
      os := Os, cgroup := Cg} = R,
    ?assertMatch(#{available := true, count := 2,
                   nodes := [#{id := 0, cpus := [0, 1, 2, 3], distances := [10, 21],
                               memory_total := 33554432000},
                             #{id := 1, cpus := [4, 5, 6, 7], distances := [21, 10]}]}, Numa),
    ?assertMatch(#{model := <<"Intel(R) Xeon(R) Gold 6148 CPU @ 2.40GHz">>,
                   sockets := 2, cores := 4, threads := 8, threads_per_core := 2,
                   online_cpus := [0, 1, 2, 3, 4, 5, 6, 7]}, Cpu),
    ?assertEqual(65536000 * 1024, maps:get(total, Sys)),
    ?assertEqual(#{load1 => 9.5, load5 => 7.25, load15 => 6.0}, Load),
    ?assertEqual(<<"Linux version 5.15.0-numa (gcc 12) #1 SMP">>, maps:get(kernel, Os)),
    %% no cgroup controller files in this tree
    ?assertMatch(#{available := false}, Cg),
    ?assertEqual({ok, #{user => 1000, nice => 10, system => 500, idle => 8000, iowait => 40,
                        irq => 0, softirq => 20, steal => 430}},
                 beamlab_runtime_probe:cpu_times(fixture("numa2"))),
    %% utime 250 + stime 50 ticks at USER_HZ 100 = 3 s
    ?assertEqual({ok, 3000000}, beamlab_runtime_probe:process_cpu_us(fixture("numa2"))),
    json_safe(R),
    Text = iolist_to_binary(beamlab_render_env:render(beamlab_json:canonical(R))),
    ?assertNotEqual(nomatch, binary:match(Text, <<"node 1: cpus 4,5,6,7, distances 21 10">>)),
    ?assertNotEqual(nomatch, binary:match(Text, <<"2 socket(s), 4 core(s), 8 thread(s)">>)).

cgroup_v2_container_test() ->
    Root = fixture("cgroup2"),
    R = beamlab_env:report(#{root => Root}),
    ?assertMatch(#{available := true, version := 2, quota_us := 150000, period_us := 100000,
                   quota_cores := 1.5,
                   stat := #{nr_periods := 120, nr_throttled := 45, throttled_usec := 2300000,
                             usage_usec := 9000000}},
                 maps:get(cgroup, R)),
    ?assertEqual(<<"AMD EPYC 7R13 Processor">>, maps:get(model, maps:get(cpu, R))),
    %% a container without /sys/devices/system: no NUMA, topology unknown
    ?assertMatch(#{available := false}, maps:get(numa, R)),
    ?assertEqual(<<"unknown">>, maps:get(sockets, maps:get(cpu, R))),
    ?assertEqual({ok, #{nr_periods => 120, nr_throttled => 45, throttled_usec => 2300000,
                        usage_usec => 9000000}},
                 beamlab_runtime_probe:cgroup_cpu_stat(Root)),
    json_safe(R),
    Text = iolist_to_binary(beamlab_render_env:render(beamlab_json:canonical(R))),
    ?assertNotEqual(nomatch, binary:match(Text, <<"v2 quota 150000 (1.5 cores)">>)).

cgroup_v1_test() ->
    Root = filename:join(tmp_dir(), "v1"),
    Dir = filename:join(Root, "sys/fs/cgroup/cpu,cpuacct/docker/x"),
    ok = filelib:ensure_dir(filename:join(Dir, "f")),
    ok = filelib:ensure_dir(filename:join(Root, "proc/self/f")),
    ok = file:write_file(filename:join(Root, "proc/self/cgroup"), "3:cpu,cpuacct:/docker/x\n0::/\n"),
    ok = file:write_file(filename:join(Dir, "cpu.cfs_quota_us"), "-1\n"),
    ok = file:write_file(filename:join(Dir, "cpu.cfs_period_us"), "100000\n"),
    ok = file:write_file(filename:join(Dir, "cpu.stat"), "nr_periods 3\nnr_throttled 2\nthrottled_time 5000000\n"),
    #{cgroup := Cg} = beamlab_env:report(#{root => Root}),
    ?assertMatch(#{version := 1, quota_us := <<"max">>, quota_cores := <<"unlimited">>,
                   stat := #{nr_throttled := 2, throttled_usec := 5000}}, Cg).

machine_with_nothing_test() ->
    Root = fixture("nothing"),
    R = beamlab_env:report(#{root => Root}),
    ?assertEqual(<<"unknown">>, maps:get(model, maps:get(cpu, R))),
    ?assertEqual(<<"unknown">>, maps:get(threads, maps:get(cpu, R))),
    ?assertMatch(#{available := false}, maps:get(numa, R)),
    ?assertMatch(#{available := false}, maps:get(cgroup, R)),
    ?assertEqual(#{}, maps:get(system, maps:get(memory, R))),
    ?assertEqual(<<"unknown">>, maps:get(load1, maps:get(load, R))),
    ?assert(length(maps:get(notes, R)) >= 5),
    %% VM facts never depend on the root
    ?assertEqual(erlang:system_info(schedulers_online), maps:get(online, maps:get(schedulers, R))),
    ?assertEqual({error, no_cgroup}, beamlab_runtime_probe:cgroup_cpu_stat(Root)),
    ?assertEqual({error, enoent}, beamlab_runtime_probe:cpu_times(Root)),
    ?assertEqual({error, enoent}, beamlab_runtime_probe:process_cpu_us(Root)),
    json_safe(R),
    Text = iolist_to_binary(beamlab_render_env:render(beamlab_json:canonical(R))),
    ?assertNotEqual(nomatch, binary:match(Text, <<"NUMA            not available">>)).

vm_facts_test() ->
    #{otp := O, schedulers := S} = beamlab_env:report(),
    ?assertEqual(list_to_binary(erlang:system_info(otp_release)), maps:get(release, O)),
    ?assertEqual(erlang:system_info(schedulers), maps:get(total, S)),
    ?assertEqual(length(maps:get(bindings, S)), maps:get(total, S)),
    ?assert(lists:member(maps:get(emu_flavor, O), [<<"jit">>, <<"emu">>])).

%% JSON-safe: maps with atom/binary keys, binaries, numbers, booleans, lists.
json_safe(M) when is_map(M) ->
    maps:foreach(fun(K, V) ->
                         ?assert(is_atom(K) orelse is_binary(K)),
                         json_safe(V)
                 end, M);
json_safe(L) when is_list(L) -> lists:foreach(fun json_safe/1, L);
json_safe(B) when is_binary(B); is_number(B); is_boolean(B) -> ok;
json_safe(Other) -> ?assertEqual(json_safe, Other).

tmp_dir() ->
    beamlab_test_util:tmp_dir("env").
