%%% @doc This VM's telemetry during an experiment that does not sample it
%%% itself (a suite, a matrix, an AMQP load; a benchmark's engine does):
%%% scheduler utilisation, run queues, memory, ... recorded every second
%%% (and printed live on stderr with `telemetry => live'), then the
%%% pathology detectors run on the series and their findings join the
%%% document.
-module(beamlab_experiment_telemetry).

-export([start/1, stop/3, cancel/1]).

-type sampler() :: none | pid().
-export_type([sampler/0]).

%% @doc Starts the sampler the experiment asks for (`none' without one).
-spec start(beamlab_experiment:telemetry()) -> sampler().
start(none) ->
    none;
start(Mode) ->
    {ok, Pid} = beamlab_runtime_telemetry:start_link(#{interval => 1000, print => Mode =:= live}),
    Pid.

%% @doc Stops the sampler and records its series and the detectors'
%% findings (which read the environment report, attached first) in the
%% document.
-spec stop(sampler(), beamlab_result:result(), beamlab_experiment:experiment()) ->
          beamlab_result:result().
stop(none, Doc, _Exp) ->
    Doc;
stop(Pid, Doc, Exp) ->
    Series = beamlab_runtime_telemetry:stop(Pid),
    beamlab_env_detect:attach(Series, beamlab_experiment_env:attach(Doc, Exp)).

%% @doc Stops the sampler of a run that produced no document.
-spec cancel(sampler()) -> ok.
cancel(none) ->
    ok;
cancel(Pid) ->
    _ = beamlab_runtime_telemetry:stop(Pid),
    ok.
