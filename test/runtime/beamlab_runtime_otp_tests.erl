-module(beamlab_runtime_otp_tests).
-include_lib("eunit/include/eunit.hrl").

%% A fake installation laid out as `make install' leaves one: ROOT/bin/erl
%% (here a script that prints the flavour Default, as the real VM would
%% answer beamlab_runtime_otp's question), ROOT/releases/start_erl.data and
%% the emulators in ROOT/erts-VSN/bin; PREFIX/bin/erl links to ROOT/bin/erl.
fake_install(Beams, Default) ->
    Prefix = beamlab_test_util:tmp_dir("otp"),
    Root = filename:join([Prefix, "lib", "erlang"]),
    ok = filelib:ensure_path(filename:join(Root, "bin")),
    ok = filelib:ensure_path(filename:join([Root, "erts-15.2.7", "bin"])),
    ok = filelib:ensure_path(filename:join(Root, "releases")),
    ok = filelib:ensure_path(filename:join(Prefix, "bin")),
    ok = file:write_file(filename:join([Root, "releases", "start_erl.data"]), "15.2.7 27\n"),
    [ok = file:write_file(filename:join([Root, "erts-15.2.7", "bin", B]), "") || B <- Beams],
    Erl = filename:join([Root, "bin", "erl"]),
    ok = file:write_file(Erl, ["#!/bin/sh\nprintf ", Default, "\n"]),
    ok = file:change_mode(Erl, 8#755),
    ok = file:make_symlink("../lib/erlang/bin/erl", filename:join([Prefix, "bin", "erl"])),
    {filename:join([Prefix, "bin", "erl"]), Root}.

both_flavours_test() ->
    {Erl, Root} = fake_install(["beam.smp", "beam.jit", "beam.emu"], "jit"),
    {ok, I} = beamlab_runtime_otp:install(Erl),
    ?assertMatch(#{root := Root, release := "27", erts := "15.2.7", flavors := [jit, emu]}, I),
    ?assertEqual({ok, ["-emu_flavor", "emu"]}, beamlab_runtime_otp:flavor_args(I, emu)),
    ?assertEqual({ok, ["-emu_flavor", "jit"]}, beamlab_runtime_otp:flavor_args(I, jit)).

single_flavour_asks_the_vm_test() ->
    %% Debian's layout: beam.smp only, which erlexec knows as `smp'.
    {Erl, Root} = fake_install(["beam.smp"], "jit"),
    {ok, I} = beamlab_runtime_otp:install(Erl),
    ?assertMatch(#{flavors := []}, I),
    ?assertEqual({ok, []}, beamlab_runtime_otp:flavor_args(I, jit)),
    {error, E} = beamlab_runtime_otp:flavor_args(I, emu),
    ?assertEqual({flavor_missing, emu, Root, [jit]}, E),
    Line = lists:flatten(io_lib:format("~ts", [beamlab_runtime_otp:format_error(E)])),
    ?assertEqual("the Erlang/OTP in " ++ Root ++ " has no emu flavour (it has jit): "
                 "scripts/install-otp.sh builds both into /opt/beamlab-otp/27", Line).

not_an_install_test() ->
    ?assertEqual({error, {no_erl, "/nonexistent/erl"}}, beamlab_runtime_otp:install("/nonexistent/erl")),
    Dir = beamlab_test_util:tmp_dir("otp-not"),
    Sh = filename:join(Dir, "erl"),
    ok = file:write_file(Sh, "#!/bin/sh\n"),
    ?assertEqual({error, {not_an_install, Sh}}, beamlab_runtime_otp:install(Sh)),
    ?assertEqual({error, {bad_flavor, "smp"}}, beamlab_runtime_otp:parse_flavor("smp")),
    ?assertEqual({ok, emu}, beamlab_runtime_otp:parse_flavor("emu")),
    [?assertEqual(nomatch, string:find(lists:flatten(io_lib:format("~ts", [beamlab_runtime_otp:format_error(R)])), "\n"))
     || R <- [{no_erl, "x"}, {not_an_install, "x"}, {bad_flavor, "x"}, {flavor_missing, emu, "/r", [jit]}]].

%% The matrix's flavour dimension, checked against the installation.
matrix_flavor_dimension_test() ->
    {Erl, _} = fake_install(["beam.smp", "beam.jit", "beam.emu"], "jit"),
    {ok, Cs} = beamlab_env_matrix:configs(#{flavor => [emu, jit], erl => [Erl], vm => ["+S 1"]}),
    ?assertEqual([list_to_binary("+S 1 flavor=emu erl=" ++ Erl), list_to_binary("+S 1 flavor=jit erl=" ++ Erl)],
                 [N || #{name := N} <- Cs]),
    ?assertMatch([#{flavor := emu, args := ["+S", "1"]}, #{flavor := jit}], Cs),
    %% -emu_flavor among the arguments is a flavour too; both at once is a mistake
    ArgsName = list_to_binary("-emu_flavor emu erl=" ++ Erl),
    ?assertMatch({ok, [#{flavor := emu, name := ArgsName}]},
                 beamlab_env_matrix:configs(#{vm => ["-emu_flavor emu"], erl => [Erl]})),
    ?assertMatch({error, {flavor_twice, _}},
                 beamlab_env_matrix:configs(#{vm => ["-emu_flavor emu"], flavor => [jit]})),
    {Single, SRoot} = fake_install(["beam.smp"], "jit"),
    ?assertEqual({error, {flavor, {flavor_missing, emu, SRoot, [jit]}}},
                 beamlab_env_matrix:configs(#{flavor => [emu, jit], erl => [Single]})),
    ?assertMatch({ok, [#{flavor := jit}]}, beamlab_env_matrix:configs(#{flavor => [jit], erl => [Single]})),
    ok.
