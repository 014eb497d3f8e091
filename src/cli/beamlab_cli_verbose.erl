%%% @doc `-v' of the measuring commands: live VM telemetry (scheduler
%%% utilisation, run queues, memory, ...) printed every second on stderr
%%% and recorded, then the pathology detectors run on the series and their
%%% findings join the document.
-module(beamlab_cli_verbose).

-export([start/1, stop/2, cancel/1]).

-type telemetry() :: none | pid().
-export_type([telemetry/0]).

%% @doc Starts the telemetry sampler when `Verbose'.
-spec start(boolean()) -> telemetry().
start(false) ->
    none;
start(true) ->
    {ok, Pid} = beamlab_runtime_telemetry:start_link(#{interval => 1000, print => true}),
    Pid.

%% @doc Stops the sampler and records its series and the detectors'
%% findings (which read the environment report) in the document.
-spec stop(telemetry(), beamlab_result:result()) -> beamlab_result:result().
stop(none, Doc) ->
    Doc;
stop(Pid, Doc) ->
    Series = beamlab_runtime_telemetry:stop(Pid),
    beamlab_env_detect:attach(Series, beamlab_cli_output:with_env(Doc)).

%% @doc Stops the sampler of a run that produced no document.
-spec cancel(telemetry()) -> ok.
cancel(none) ->
    ok;
cancel(Pid) ->
    _ = beamlab_runtime_telemetry:stop(Pid),
    ok.
