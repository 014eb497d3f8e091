-module(beamlab_profile_stacks_tests).
-include_lib("eunit/include/eunit.hrl").

-define(TEXT, <<"1_scheduler 100 \n"
                "\t    7f14f45bf6fa $busy:loop/2 (/tmp/perf-1.map)\n"
                "\t    7f14f44c7ebc $erl_eval:do_apply/7 (/tmp/perf-1.map)\n"
                "\n"
                "1_scheduler 100 \n"
                "\t          160af0 trapping_make_hash2 (/usr/lib/erlang/erts-13.1.5/bin/beam.smp)\n"
                "\t    7f1537021459 $global::call_light_bif_shared (/tmp/perf-1.map)\n"
                "\t    7f14f45bf744 $busy:loop/2 (/tmp/perf-1.map)\n"
                "\t    7f14f44c7ebc $erl_eval:do_apply/7 (/tmp/perf-1.map)\n"
                "\n"
                "2_dirty_cpu_sch 101 \n"
                "\t          15d07f do_minor (/usr/lib/erlang/erts-13.1.5/bin/beam.smp)\n"
                "\t58bf00000000035e [unknown] ([unknown])\n"
                "\n"
                "1_dirty_io_sche 102 \n"
                "\tffffffff8100 __x64_sys_futex ([kernel.kallsyms])\n"
                "\t          15d07f [unknown] (/usr/lib/erlang/erts-13.1.5/bin/beam.smp)\n"
                "\n"
                "1_scheduler 100 \n"
                "\t          15d07f erts_cmp ([unknown])\n"
                "\t    7f14f45bf744 $beamlab_engine_sampler:loop/3 (/tmp/perf-1.map)\n"
                "\n"
                "aux 103 \n"
                "\t    7f0000000001 [unknown] ([unknown])\n"
                "\n"
                "weird name 7 \n"
                "\t    7f14f45bf744 $'a b':'c;d'/0+0x10 (/tmp/perf-1.map)\n">>).

parse_test() ->
    S = beamlab_profile_perf:parse(?TEXT),
    ?assertEqual(7, length(S)),
    [#{thread := <<"1_scheduler">>, tid := 100, frames := [#{sym := <<"$busy:loop/2">>} | _]} | _] = S,
    #{thread := <<"weird name">>, tid := 7, frames := [#{sym := <<"$'a b':'c;d'/0">>}]} = lists:last(S).

%% perf record without -g (flat mode): one line a sample, the thread's
%% name padded on the left; the leaf is the whole stack.
parse_flat_test() ->
    Text = <<"     erts_sched_1 2001      7f14f45bf6fa $busy:loop/2 (/tmp/perf-1.map)\n"
             "     erts_sched_2 2002          160af0 process_main (/opt/otp/erts-15.2.7/bin/beam.emu)\n"
             "  erts_dios_1 2003 ffffffff8100 __x64_sys_futex ([kernel.kallsyms])\n"
             "[ perf record: Woken up 1 times ]\n">>,
    S = beamlab_profile_perf:parse(Text),
    ?assertMatch([#{thread := <<"erts_sched_1">>, tid := 2001, frames := [#{sym := <<"$busy:loop/2">>}]},
                  #{thread := <<"erts_sched_2">>, frames := [#{sym := <<"process_main">>}]},
                  #{thread := <<"erts_dios_1">>, frames := [#{sym := <<"__x64_sys_futex">>}]}], S),
    P = beamlab_profile_stacks:build(S, #{}),
    ?assertEqual(3, maps:get(<<"samples">>, P)),
    [Main] = [F || F = #{<<"name">> := <<"process_main">>} <- maps:get(<<"functions">>, P)],
    ?assertMatch(#{<<"category">> := <<"emulator">>, <<"self">> := 1,
                   <<"note">> := <<"emulator main loop", _/binary>>}, Main).

recorded_fixture_test() ->
    {ok, Text} = file:read_file(fixture()),
    P = beamlab_profile_stacks:build(beamlab_profile_perf:parse(Text), #{}),
    ?assertEqual(17, maps:get(<<"samples">>, P)),
    Top2 = [N || #{<<"name">> := N} <- lists:sublist(maps:get(<<"functions">>, P), 2)],
    ?assert(lists:member(<<"busy:loop/2">>, Top2)),
    ?assertEqual(17, maps:get(<<"scheduler">>, maps:get(<<"threads">>, P))).

build_test() ->
    P = beamlab_profile_stacks:build(beamlab_profile_perf:parse(?TEXT), #{}),
    ?assertEqual(7, maps:get(<<"samples">>, P)),
    ?assertEqual(#{<<"scheduler">> => 3, <<"dirty_cpu">> => 1, <<"dirty_io">> => 1, <<"other">> => 2},
                 maps:get(<<"threads">>, P)),
    ?assertEqual(#{<<"erlang">> => 3, <<"emulator">> => 2, <<"kernel">> => 1, <<"harness">> => 1},
                 maps:get(<<"categories">>, P)),
    Fs = maps:get(<<"functions">>, P),
    Get = fun(N) -> hd([F || F = #{<<"name">> := X} <- Fs, X =:= N]) end,
    ?assertMatch(#{<<"self">> := 1, <<"total">> := 2, <<"category">> := <<"erlang">>}, Get(<<"busy:loop/2">>)),
    ?assertMatch(#{<<"category">> := <<"emulator">>, <<"note">> := <<"garbage collection (minor)">>},
                 Get(<<"do_minor">>)),
    ?assertMatch(#{<<"category">> := <<"emulator">>, <<"note">> := <<"JIT: calls a BIF">>},
                 Get(<<"global::call_light_bif_shared">>)),
    ?assertMatch(#{<<"category">> := <<"kernel">>}, Get(<<"__x64_sys_futex">>)),
    ?assertMatch(#{<<"category">> := <<"harness">>}, Get(<<"beamlab_engine_sampler:loop/3">>)),
    ?assertMatch(#{<<"category">> := <<"erlang">>}, Get(<<"[unnamed JIT code]">>)),
    ?assertEqual(1, maps:get(<<"unnamed_jit">>, P)),
    %% The noise frame under do_minor is dropped; `;' never splits a frame.
    Stacks = maps:from_list([{S, C} || [S, C] <- maps:get(<<"stacks">>, P)]),
    ?assertEqual(1, maps:get(<<"dirty_cpu;do_minor">>, Stacks)),
    ?assertEqual(1, maps:get(<<"other;'a b':'c:d'/0">>, Stacks)),
    ?assertEqual(1, maps:get(<<"scheduler;erl_eval:do_apply/7;busy:loop/2;"
                               "global::call_light_bif_shared;trapping_make_hash2">>, Stacks)).

folded_round_trip_test() ->
    P = beamlab_profile_stacks:build(beamlab_profile_perf:parse(?TEXT), #{}),
    {ok, Back} = beamlab_profile_stacks:parse_folded(beamlab_profile_stacks:folded(P)),
    ?assertEqual(7, lists:sum([C || {_, C} <- Back])),
    ?assert(lists:member({[<<"dirty_cpu">>, <<"do_minor">>], 1}, Back)),
    ?assertEqual({error, {bad_line, 2}}, beamlab_profile_stacks:parse_folded(<<"a;b 1\nnocount\n">>)).

bounded_test() ->
    Samples = [#{thread => <<"1_scheduler">>, tid => 1,
                 frames => [#{sym => iolist_to_binary(io_lib:format("$m:f~b/0", [I])), dso => <<"x.map">>}]}
               || I <- lists:seq(1, 50)],
    P = beamlab_profile_stacks:build(Samples, #{max_stacks => 10, max_functions => 5}),
    ?assertEqual(10, length(maps:get(<<"stacks">>, P))),
    ?assertEqual(41, maps:get(<<"stacks_merged">>, P)),
    ?assertEqual(5, length(maps:get(<<"functions">>, P))),
    ?assertEqual(50, lists:sum([C || [_, C] <- maps:get(<<"stacks">>, P)])).

thread_type_test() ->
    ?assertEqual(scheduler, beamlab_profile_stacks:thread_type(<<"12_scheduler">>)),
    ?assertEqual(dirty_cpu, beamlab_profile_stacks:thread_type(<<"1_dirty_cpu_sch">>)),
    ?assertEqual(dirty_io, beamlab_profile_stacks:thread_type(<<"10_dirty_io_sch">>)),
    ?assertEqual(other, beamlab_profile_stacks:thread_type(<<"beam.smp">>)),
    %% OTP 26 and later name them differently.
    ?assertEqual(scheduler, beamlab_profile_stacks:thread_type(<<"erts_sched_2">>)),
    ?assertEqual(dirty_cpu, beamlab_profile_stacks:thread_type(<<"erts_dcpus_1">>)),
    ?assertEqual(dirty_io, beamlab_profile_stacks:thread_type(<<"erts_dios_10">>)),
    ?assertEqual(other, beamlab_profile_stacks:thread_type(<<"erts_aux_1">>)).

harness_test() ->
    ?assert(beamlab_profile_stacks:harness_module(<<"beamlab_engine_job">>)),
    ?assert(beamlab_profile_stacks:harness_module(<<"beamlab">>)),
    ?assertNot(beamlab_profile_stacks:harness_module(<<"beamlab_gen_12">>)),
    ?assertNot(beamlab_profile_stacks:harness_module(<<"beamlab_workload_ring">>)),
    ?assertNot(beamlab_profile_stacks:harness_module(<<"lists">>)).

fixture() ->
    filename:join([filename:dirname(code:which(?MODULE)), "fixtures", "profile", "busy-loop.perf-script.txt"]).

memfd_jit_test() ->
    [#{frames := [F]}] = beamlab_profile_perf:parse(<<"1_scheduler 5\n\t7f00 [unknown] (/memfd:vmem (deleted))\n">>),
    ?assertEqual(#{sym => <<"[unknown]">>, dso => <<"/memfd:vmem (deleted)">>}, F),
    ?assertMatch({<<"[unnamed JIT code]">>, erlang, _}, beamlab_profile_stacks:classify(F)).

callers_test() ->
    P = beamlab_profile_stacks:build(beamlab_profile_perf:parse(?TEXT), #{}),
    ?assertEqual([{<<"busy:loop/2;global::call_light_bif_shared;trapping_make_hash2">>, 1}],
                 beamlab_profile_stacks:callers(P, <<"trapping_make_hash2">>, 5)),
    ?assertEqual([{<<"dirty_cpu;do_minor">>, 1}], beamlab_profile_stacks:callers(P, <<"do_minor">>, 5)),
    ?assertEqual([], beamlab_profile_stacks:callers(P, <<"nothing">>, 5)).

thread_categories_test() ->
    P = beamlab_profile_stacks:build(beamlab_profile_perf:parse(?TEXT), #{}),
    TC = maps:get(<<"thread_categories">>, P),
    ?assertEqual(#{<<"erlang">> => 1, <<"emulator">> => 1, <<"harness">> => 1}, maps:get(<<"scheduler">>, TC)),
    ?assertEqual(#{<<"kernel">> => 1}, maps:get(<<"dirty_io">>, TC)).
