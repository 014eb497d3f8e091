%%% Unit tests of the controller's loopback rule (beamlab_experiment_dist).
-module(beamlab_experiment_dist_tests).
-include_lib("eunit/include/eunit.hrl").

loopback_test_() ->
    [?_assert(beamlab_experiment_dist:loopback('a@127.0.0.1')),
     ?_assert(beamlab_experiment_dist:loopback('a@127.1.2.3')),
     ?_assert(beamlab_experiment_dist:loopback('a@localhost')),
     ?_assert(beamlab_experiment_dist:loopback('a@::1')),
     ?_assertNot(beamlab_experiment_dist:loopback('a@198.18.0.3')),
     ?_assertNot(beamlab_experiment_dist:loopback('a@gen1.example.com'))].

far_test_() ->
    [?_assert(beamlab_experiment_dist:far('a@198.18.0.3')),
     ?_assertNot(beamlab_experiment_dist:far('a@127.0.0.1')),
     ?_assertNot(beamlab_experiment_dist:far('a@localhost')),
     %% not resolvable: left to the connection attempt
     ?_assertNot(beamlab_experiment_dist:far('a@no-such-host.invalid'))].
