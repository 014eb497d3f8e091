-module(beamlab_engine_sampler_tests).
-include_lib("eunit/include/eunit.hrl").

%% Measuring CPU time (`--metric cpu'), a lone continuous job is paused at
%% every sample boundary and its counter and CPU time are read while it
%% is suspended: the samples add up to every iteration the job ran, and
%% every sample has its CPU time. (Read running, as a wall-clock run
%% does, the counter moves between one sample's end and the next one's
%% start, and a running thread's CPU time lags by up to a kernel tick.)
cpu_samples_cover_every_iteration_test() ->
    {ok, Threads} = beamlab_runtime_cpu:threads(),
    {ok, Exec} = beamlab_engine_code:compile(#{runner => "ok."}),
    {ok, Job} = beamlab_engine_job:start(Exec, #{deadline => 30000}),
    try
        ok = beamlab_engine_job:set_concurrency(Job, 1),
        {[#{samples := S, cpu := Cpu, status := ok}], #{interrupted := false}} =
            beamlab_engine_sampler:run([Job], #{duration => 20, samples => 4, warmup => 0,
                                                cpu => Threads}),
        Total = counters:get(beamlab_engine_job:counter(Job), 1),
        ?assertEqual(4, length(S)),
        ?assertEqual(4, length(Cpu)),
        ?assertEqual(Total, lists:sum(S))
    after
        beamlab_engine_job:stop(Job)
    end.
