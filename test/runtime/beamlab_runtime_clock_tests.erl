%%% Unit tests of the clock offsets' arithmetic (beamlab_runtime_clock).
-module(beamlab_runtime_clock_tests).
-include_lib("eunit/include/eunit.hrl").

own_node_has_no_offset_test() ->
    ?assertEqual({ok, #{offset_us => 0, uncertainty_us => 0, rtt_us => 0}},
                 beamlab_runtime_clock:offset(node())),
    ?assertEqual(#{node() => #{offset_us => 0, uncertainty_us => 0, rtt_us => 0}},
                 beamlab_runtime_clock:offsets([node(), node()])).

unreachable_node_is_left_out_test() ->
    ?assertEqual(#{}, beamlab_runtime_clock:offsets(['nobody@192.0.2.1'])).

combine_without_after_keeps_before_test() ->
    B = #{offset_us => 120, uncertainty_us => 30, rtt_us => 60},
    ?assertMatch(#{offset_us := 120, uncertainty_us := 30, drift_us := null, 'after' := null},
                 beamlab_runtime_clock:combine(B, undefined)).

combine_widens_by_half_the_drift_test() ->
    B = #{offset_us => 100, uncertainty_us => 30, rtt_us => 60},
    A = #{offset_us => 140, uncertainty_us => 45, rtt_us => 90},
    %% The applied offset is the one measured before; the larger half round
    %% trip (45) plus half the drift (40 / 2).
    ?assertMatch(#{offset_us := 100, uncertainty_us := 65, drift_us := 40},
                 beamlab_runtime_clock:combine(B, A)),
    ?assertMatch(#{uncertainty_us := 65, drift_us := -40},
                 beamlab_runtime_clock:combine(A#{offset_us := 140, uncertainty_us := 30},
                                               B#{offset_us := 100, uncertainty_us := 45})).
