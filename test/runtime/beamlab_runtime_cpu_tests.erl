-module(beamlab_runtime_cpu_tests).
-include_lib("eunit/include/eunit.hrl").

parse_schedstat_test() ->
    ?assertEqual({ok, 50745242}, beamlab_runtime_cpu:parse_schedstat(<<"50745242 799877601 244\n">>)),
    ?assertEqual({ok, 0}, beamlab_runtime_cpu:parse_schedstat(<<"0 0 0\n">>)),
    ?assertEqual(error, beamlab_runtime_cpu:parse_schedstat(<<"x 1 2\n">>)),
    ?assertEqual(error, beamlab_runtime_cpu:parse_schedstat(<<"-1 1 2\n">>)),
    ?assertEqual(error, beamlab_runtime_cpu:parse_schedstat(<<>>)).

is_scheduler_test() ->
    %% normal and dirty-CPU schedulers count; dirty I/O, async, aux, poller do not
    ?assert(beamlab_runtime_cpu:is_scheduler(<<"1_scheduler">>)),
    ?assert(beamlab_runtime_cpu:is_scheduler(<<"12_scheduler">>)),
    ?assert(beamlab_runtime_cpu:is_scheduler(<<"2_dirty_cpu_sch">>)),
    ?assertNot(beamlab_runtime_cpu:is_scheduler(<<"1_dirty_io_sche">>)),
    ?assertNot(beamlab_runtime_cpu:is_scheduler(<<"async_1">>)),
    ?assertNot(beamlab_runtime_cpu:is_scheduler(<<"1_aux">>)),
    ?assertNot(beamlab_runtime_cpu:is_scheduler(<<"0_poller">>)),
    ?assertNot(beamlab_runtime_cpu:is_scheduler(<<"beam.smp">>)).

%% On Linux (the project's CI and this machine) the threads are found and
%% busy work advances their CPU time; elsewhere the error is one line.
read_advances_test() ->
    case beamlab_runtime_cpu:threads() of
        {ok, Threads} ->
            Before = beamlab_runtime_cpu:read(Threads),
            _ = lists:foldl(fun(X, A) -> (A * 31 + X) rem 1000003 end, 0, lists:seq(1, 2000000)),
            After = beamlab_runtime_cpu:read(Threads),
            ?assert(After > Before);
        {error, R} ->
            Line = lists:flatten(beamlab_runtime_cpu:format_error(R)),
            ?assertEqual(nomatch, string:find(Line, "\n"))
    end.

format_error_test() ->
    Line = lists:flatten(beamlab_runtime_cpu:format_error({unavailable, "why"})),
    ?assertMatch("--metric cpu: " ++ _, Line).
