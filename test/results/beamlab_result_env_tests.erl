-module(beamlab_result_env_tests).
%% A flat env or params value as text, with the unit its path names.
-include_lib("eunit/include/eunit.hrl").

value_text_test() ->
    T = fun beamlab_result_env:value_text/2,
    ?assertEqual(<<"22.2 MiB">>, T(<<"env.memory.erlang.total">>, 23268000)),
    ?assertEqual(<<"100 ms">>, T(<<"env.cgroup.period_us">>, 100000)),
    ?assertEqual(<<"0 ns">>, T(<<"env.cgroup.stat.throttled_usec">>, 0)),
    ?assertEqual(<<"1500 ms">>, T(<<"params.timeout_ms">>, 1500)),
    ?assertEqual(<<"2">>, T(<<"env.schedulers.online">>, 2)),
    ?assertEqual(<<"3.26">>, T(<<"env.load.load1">>, 3.26)),
    ?assertEqual(<<"jit">>, T(<<"env.otp.emu_flavor">>, <<"jit">>)),
    ?assertEqual(<<"true">>, T(<<"env.numa.available">>, true)),
    ?assertEqual(<<"-">>, T(<<"env.git.commit">>, null)).

%% A long value shortened in the middle of a multi-byte character stays
%% UTF-8 (the report's environment table is written into the page).
shortened_value_stays_utf8_test() ->
    Args = [<<"ok.">>, <<"--save">>, <<"r", (binary:copy(<<"é"/utf8>>, 40))/binary>>],
    [{_, V}] = [KV || {<<"env.args">>, _} = KV <- beamlab_result_env:flat(#{env => #{args => Args}})],
    ?assertEqual(V, unicode:characters_to_binary(V)),
    ?assertMatch(<<_/binary>>, V),
    ?assert(byte_size(V) =< 60),
    ?assertEqual(<<"...">>, binary:part(V, byte_size(V) - 3, 3)).
