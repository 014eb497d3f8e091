-module(beamlab_profile_tests).
-include_lib("eunit/include/eunit.hrl").

%% Every error is one line a user can act on.
format_error_test_() ->
    Cases = [{perf_missing, "linux-perf"},
             {{perf_unusable, <<"no perf for kernel 6.1">>}, "linux-perf"},
             {{paranoid, 3}, "sysctl -w kernel.perf_event_paranoid=1"},
             {{paranoid, 3}, "is 3"},
             {{no_such_process, 42}, "no process with OS pid 42"},
             {{not_a_beam, 1, <<"systemd">>}, "systemd, not an Erlang VM"},
             {{no_jit, "23", "emu"}, "no perf support"},
             {{perf_failed, <<"boom">>}, "perf failed: boom"},
             {{target_gone, 7}, "exited before perf could attach"}],
    [?_assert(begin
                  Text = lists:flatten(beamlab_profile:format_error(R)),
                  string:find(Text, Expect) =/= nomatch andalso string:find(Text, "\n") =:= nomatch
              end) || {R, Expect} <- Cases].

node_errors_test() ->
    ?assertEqual({error, {bad_node, "nohost"}}, beamlab_profile_node:os_pid("nohost", undefined)),
    Text = lists:flatten(beamlab_profile_node:format_error({unreachable, 'a@b'})),
    ?assertNotEqual(nomatch, string:find(Text, "--cookie")).

vm_flags_test() ->
    case erlang:system_info(emu_flavor) of
        jit ->
            ?assertEqual({ok, "+JPperf true"}, beamlab_profile:vm_flags()),
            ?assertEqual({ok, "+JPperf map"}, beamlab_profile:vm_flags(flat));
        _ -> ?assertMatch({error, {no_jit, _, _}}, beamlab_profile:vm_flags())
    end,
    ?assertMatch(#{stacks := true}, beamlab_profile:mode_info(graph)),
    ?assertMatch(#{stacks := false}, beamlab_profile:mode_info(flat)).
