%%% Tests of beamlab_runtime_shared: a large magic reference copied onto a
%%% process heap is charged to its virtual binary heap, fetched from the
%%% shared store it is not; a dead owner's term goes with the next share.
-module(beamlab_runtime_shared_tests).
-include_lib("eunit/include/eunit.hrl").

%% Words charged to a process's virtual binary heaps after it obtained a
%% term with `Get' and moved it to its old heap.
charged(Get) ->
    Parent = self(),
    {Pid, Ref} = spawn_monitor(
                   fun() ->
                           Term = Get(),
                           true = erlang:garbage_collect(),
                           true = erlang:garbage_collect(),
                           Parent ! {self(), beamlab_test_util:vheap_charge(self())},
                           %% keep the term alive until measured
                           _ = element(1, Term)
                   end),
    receive
        {Pid, Words} -> receive {'DOWN', Ref, process, Pid, _} -> Words end;
        {'DOWN', Ref, process, Pid, Reason} -> error({probe_died, Reason})
    end.

fetched_term_is_not_charged_test() ->
    C = counters:new(100000, [write_concurrency]),
    Term = {counters, C},
    Key = beamlab_runtime_shared:share(Term),
    try
        %% the closure copies the reference onto the probe's heap
        ?assert(charged(fun() -> Term end) >= 100000),
        ?assert(charged(fun() -> beamlab_runtime_shared:fetch(Key) end) < 1000),
        ?assertEqual(Term, beamlab_runtime_shared:fetch(Key))
    after
        beamlab_runtime_shared:release(Key)
    end.

released_key_is_gone_test() ->
    Key = beamlab_runtime_shared:share(x),
    ?assertEqual(x, beamlab_runtime_shared:fetch(Key)),
    ok = beamlab_runtime_shared:release(Key),
    ?assertError(badarg, beamlab_runtime_shared:fetch(Key)),
    ?assertEqual(ok, beamlab_runtime_shared:release(Key)).

%% A term left behind by a process that died without releasing it goes
%% with the next share.
dead_owners_terms_are_released_test() ->
    Parent = self(),
    {Pid, Ref} = spawn_monitor(fun() -> Parent ! {key, beamlab_runtime_shared:share(left)},
                                        receive never -> ok end end),
    Key = receive {key, K} -> K end,
    exit(Pid, kill),
    receive {'DOWN', Ref, process, Pid, killed} -> ok end,
    ?assertEqual(left, beamlab_runtime_shared:fetch(Key)),
    Mine = beamlab_runtime_shared:share(mine),
    ?assertError(badarg, beamlab_runtime_shared:fetch(Key)),
    ?assertEqual(mine, beamlab_runtime_shared:fetch(Mine)),
    beamlab_runtime_shared:release(Mine).
