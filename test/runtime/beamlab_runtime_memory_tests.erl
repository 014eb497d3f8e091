-module(beamlab_runtime_memory_tests).
-include_lib("eunit/include/eunit.hrl").

kb_field_test() ->
    Meminfo = <<"MemTotal:       24684096 kB\nMemFree:        23324352 kB\nMemAvailable:   24070632 kB\n">>,
    ?assertEqual(24070632 * 1024, beamlab_runtime_memory:parse_kb_field(Meminfo, <<"MemAvailable">>)),
    ?assertEqual(undefined, beamlab_runtime_memory:parse_kb_field(Meminfo, <<"VmSize">>)).

limit_test() ->
    Unlimited = <<"Limit                     Soft Limit           Hard Limit           Units\n"
                  "Max address space         unlimited            unlimited            bytes\n">>,
    Limited = <<"Max address space         3072000000           unlimited            bytes\n">>,
    ?assertEqual(undefined, beamlab_runtime_memory:parse_limit(Unlimited)),
    ?assertEqual(3072000000, beamlab_runtime_memory:parse_limit(Limited)),
    ?assertEqual(undefined, beamlab_runtime_memory:parse_limit(<<"garbage">>)).

heap_limit_test() ->
    ?assertEqual(infinity, beamlab_runtime_memory:heap_limit(unknown)),
    ?assertEqual(1 bsl 30, beamlab_runtime_memory:heap_limit(4 bsl 30)),
    %% never below the floor
    ?assertEqual(64 * 1024 * 1024, beamlab_runtime_memory:heap_limit(1000)),
    ?assert(is_integer(beamlab_runtime_memory:headroom()) orelse
            beamlab_runtime_memory:headroom() =:= unknown).
