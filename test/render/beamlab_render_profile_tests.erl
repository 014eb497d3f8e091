-module(beamlab_render_profile_tests).
-include_lib("eunit/include/eunit.hrl").

-define(TEXT, <<"1_scheduler 100 \n"
                "\t    7f14f45bf6fa $busy:loop/2 (/tmp/perf-1.map)\n"
                "\n"
                "1_scheduler 100 \n"
                "\t          160af0 do_minor (/usr/lib/erlang/erts-13.1.5/bin/beam.smp)\n"
                "\t    7f14f45bf744 $busy:loop/2 (/tmp/perf-1.map)\n"
                "\n"
                "1_dirty_io_sche 102 \n"
                "\tffffffff8100 __x64_sys_futex ([kernel.kallsyms])\n">>).

doc(Extra) ->
    P = beamlab_profile_stacks:build(beamlab_profile_perf:parse(?TEXT), #{}),
    D = beamlab_result:new(profile, #{command => [<<"profile">>], started_at => <<"2026-01-01T00:00:00Z">>,
                                      params => #{subject => <<"busy">>, frequency => 999}}),
    beamlab_result:set(extra, #{profile => maps:merge(P, Extra)}, D).

top_table_test() ->
    Text = iolist_to_binary(beamlab_render_profile:render(doc(#{<<"perf_support">> => true,
                                                                <<"elapsed_ms">> => 1000}), #{top => 5})),
    ?assertNotEqual(nomatch, binary:match(Text, <<"busy: 3 samples at 999 Hz over 1.00 s">>)),
    ?assertNotEqual(nomatch, binary:match(Text, <<"busy:loop/2">>)),
    ?assertNotEqual(nomatch, binary:match(Text, <<"garbage collection (minor)">>)),
    ?assertNotEqual(nomatch, binary:match(Text, <<"dirty_io: kernel 33.3%">>)),
    ?assertEqual(nomatch, binary:match(Text, <<"warning">>)).

no_perf_support_test() ->
    Text = iolist_to_binary(beamlab_render_profile:render(doc(#{<<"perf_support">> => false,
                                                                <<"target_exited">> => true}), #{})),
    ?assertNotEqual(nomatch, binary:match(Text, <<"started without perf support">>)),
    ?assertNotEqual(nomatch, binary:match(Text, <<"+JPperf true">>)),
    ?assertNotEqual(nomatch, binary:match(Text, <<"target exited">>)).

callers_test() ->
    Text = iolist_to_binary(beamlab_render_profile:render(
                              doc(#{}), #{callers => [{<<"do_minor">>, [{<<"busy:loop/2;do_minor">>, 1}]},
                                                      {<<"nope">>, []}]})),
    ?assertNotEqual(nomatch, binary:match(Text, <<"callers of do_minor">>)),
    ?assertNotEqual(nomatch, binary:match(Text, <<"busy:loop/2 > do_minor">>)),
    ?assertNotEqual(nomatch, binary:match(Text, <<"callers of nope: none">>)).

memory_lines_test() ->
    Text = iolist_to_binary(beamlab_render_profile:memory_lines(
                              #{<<"words">> => 20000, <<"bytes">> => 160000, <<"reductions">> => 12,
                                <<"spawned">> => 1}, "repetition")),
    ?assertNotEqual(nomatch, binary:match(Text, <<"20000 words">>)),
    ?assertNotEqual(nomatch, binary:match(Text, <<"1 spawned process(es) per repetition">>)).
