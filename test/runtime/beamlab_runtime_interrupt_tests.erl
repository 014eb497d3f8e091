-module(beamlab_runtime_interrupt_tests).
-include_lib("eunit/include/eunit.hrl").

%% Library mode (install/0 is never called here: it would take over the
%% test VM's SIGTERM): subscribing works, simulate/0 notifies and sets the
%% flag, and the flag is cleared when the run is over.
library_subscribe_and_reset_test() ->
    ok = beamlab_runtime_interrupt:reset(),
    ok = beamlab_runtime_interrupt:subscribe(),
    ?assertNot(beamlab_runtime_interrupt:interrupted()),
    ok = beamlab_runtime_interrupt:simulate(),
    receive {beamlab_interrupt, sigterm} -> ok
    after 1000 -> ?assert(false)
    end,
    ?assert(beamlab_runtime_interrupt:interrupted()),
    %% the last subscriber leaving ends the run
    ok = beamlab_runtime_interrupt:unsubscribe(),
    ?assertNot(beamlab_runtime_interrupt:interrupted()),
    ok = beamlab_runtime_interrupt:unsubscribe().

%% Subscriptions nest: an inner run in the same process (an AMQP load of
%% a matrix --target) that subscribes and unsubscribes leaves the outer
%% run subscribed and its interrupt standing (#32: a doctor --target
%% interrupted during a load went on measuring).
nested_subscription_keeps_the_outer_run_test() ->
    ok = beamlab_runtime_interrupt:reset(),
    ok = beamlab_runtime_interrupt:subscribe(),
    ok = beamlab_runtime_interrupt:subscribe(),
    ok = told(),
    ok = beamlab_runtime_interrupt:unsubscribe(),
    ?assert(beamlab_runtime_interrupt:interrupted()),
    %% the outer run is still told of the next one
    ok = told(),
    ok = beamlab_runtime_interrupt:unsubscribe(),
    ?assertNot(beamlab_runtime_interrupt:interrupted()),
    flush().

%% An interrupt simulated reaches this process.
told() ->
    ok = beamlab_runtime_interrupt:simulate(),
    receive {beamlab_interrupt, sigterm} -> ok
    after 1000 -> error(not_told)
    end.

explicit_reset_test() ->
    ok = beamlab_runtime_interrupt:subscribe(),
    ok = beamlab_runtime_interrupt:simulate(),
    ?assert(beamlab_runtime_interrupt:interrupted()),
    ok = beamlab_runtime_interrupt:reset(),
    ?assertNot(beamlab_runtime_interrupt:interrupted()),
    ok = beamlab_runtime_interrupt:unsubscribe(),
    flush().

%% A subscriber that dies is dropped; when it was the last one, the flag
%% is reset.
dead_subscriber_is_removed_test() ->
    Self = self(),
    Pid = spawn(fun() ->
                        ok = beamlab_runtime_interrupt:subscribe(),
                        Self ! subscribed,
                        receive stop -> ok end
                end),
    receive subscribed -> ok end,
    ok = beamlab_runtime_interrupt:simulate(),
    ?assert(beamlab_runtime_interrupt:interrupted()),
    Ref = monitor(process, Pid),
    Pid ! stop,
    receive {'DOWN', Ref, process, Pid, _} -> ok end,
    %% the handler sees the 'DOWN' after us: wait for it
    ?assert(wait_until(fun() -> not beamlab_runtime_interrupt:interrupted() end, 100)),
    ?assertEqual(130, beamlab_runtime_interrupt:exit_code()).

wait_until(_, 0) -> false;
wait_until(F, N) ->
    case F() of
        true -> true;
        false -> timer:sleep(10), wait_until(F, N - 1)
    end.

flush() ->
    receive {beamlab_interrupt, _} -> flush()
    after 0 -> ok
    end.

%% An interrupt that came while nobody listened (passed on to a fresh VM
%% whose command had not subscribed yet) reaches the next subscriber.
pending_interrupt_reaches_late_subscriber_test() ->
    ok = beamlab_runtime_interrupt:reset(),
    ok = beamlab_runtime_interrupt:simulate(),
    ok = beamlab_runtime_interrupt:subscribe(),
    receive {beamlab_interrupt, sigterm} -> ok
    after 1000 -> ?assert(false)
    end,
    ok = beamlab_runtime_interrupt:unsubscribe(),
    ?assertNot(beamlab_runtime_interrupt:interrupted()),
    flush().
