-module(beamlab_sut_broker_tests).
-include_lib("eunit/include/eunit.hrl").

env(Normal, Online, Bind, Cmdline) ->
    #{schedulers => #{normal => Normal, online => Online, bind_type => Bind},
      otp => #{flavor => <<"jit">>},
      emulator_cmdline => Cmdline}.

verify_accepts_flags_in_effect_test() ->
    Cmd = [<<"/usr/lib/erlang/erts-13.1.5/bin/beam.smp">>, <<"-S">>, <<"1">>, <<"-sbt">>, <<"u">>, <<"--">>],
    ?assertEqual(ok, beamlab_sut_broker:verify(["+S", "1", "+sbt", "u"], env(1, 1, <<"unbound">>, Cmd))),
    ?assertEqual(ok, beamlab_sut_broker:verify(["+S", "2:1"], env(2, 1, <<"unbound">>, null))),
    ?assertEqual(ok, beamlab_sut_broker:verify([], env(2, 2, <<"unbound">>, Cmd))),
    ?assertEqual(ok, beamlab_sut_broker:verify(["-emu_flavor", "jit"], env(2, 2, <<"unbound">>, Cmd))).

verify_rejects_flags_not_in_effect_test() ->
    Cmd = [<<"beam.smp">>, <<"-S">>, <<"2">>],
    {error, E1} = beamlab_sut_broker:verify(["+S", "1"], env(2, 2, <<"unbound">>, Cmd)),
    ?assertNotEqual(nomatch, binary:match(E1, <<"lacks '+S 1'">>)),
    {error, E2} = beamlab_sut_broker:verify(["+S", "1"], env(2, 2, <<"unbound">>, null)),
    ?assertNotEqual(nomatch, binary:match(E2, <<"+S 1 asked">>)),
    {error, E3} = beamlab_sut_broker:verify(["+sbt", "db"], env(2, 2, <<"unbound">>, null)),
    ?assertNotEqual(nomatch, binary:match(E3, <<"bind type unbound">>)),
    {error, E4} = beamlab_sut_broker:verify(["-emu_flavor", "emu"], env(2, 2, <<"unbound">>, null)),
    ?assertNotEqual(nomatch, binary:match(E4, <<"jit flavour">>)).

free_port_test() ->
    P = beamlab_sut_broker:free_port(),
    ?assert(P > 0 andalso P < 65536).

format_error_one_line_test() ->
    [?assertEqual(nomatch, string:find(lists:flatten(io_lib:format("~ts", [beamlab_sut_broker:format_error(E)])), "\n"))
     || E <- [{wrapper_not_found, "numactl"}, {otp_not_found, "/x"}, {no_rabbitmq, "/y"},
              {boot_failed, 1, <<"bad flag\n">>}, {boot_timeout, <<"x">>}, {flags_not_applied, <<"x">>},
              {died, 137}, {died, 1}, {load_crashed, error, badarg},
              {no_broker_for, "27", "/opt/x", []}, {no_broker_for, "27", "/opt/x", [#{version => "4.0"}]},
              {otp, {no_erl, "/x/erl"}}]].

brokers_by_otp_release_test() ->
    [B310, B40] = beamlab_sut_broker:brokers(),
    ?assertMatch(#{version := "3.10", otp := {23, 25}, sbin := "/usr/lib/rabbitmq/bin"}, B310),
    ?assertMatch(#{version := "4.0", otp := {26, 27}}, B40).
