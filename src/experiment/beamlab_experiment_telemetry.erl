%%% @doc This VM's telemetry during an experiment that does not sample it
%%% itself (a suite, a matrix, an AMQP load; a benchmark's engine does):
%%% scheduler utilisation, run queues, memory, ... recorded every second
%%% (and printed live on stderr with `telemetry => live'), then the
%%% pathology detectors run on the series and their findings join the
%%% document. With live metrics (`metrics'), the sampler's latest sample is
%%% served there, and runs for that alone when no telemetry is asked for
%%% (its series is then not kept).
-module(beamlab_experiment_telemetry).

-export([start/1, start/2, start/3, stop/3, cancel/1]).

-type sampler() :: none | pid() | {metrics_only, pid()}.
-export_type([sampler/0]).

%% @doc Starts the sampler the experiment asks for (`none' without one).
-spec start(beamlab_experiment:telemetry()) -> sampler().
start(Mode) ->
    start_mode(Mode, #{}).

start_mode(none, _Opts) ->
    none;
start_mode(Mode, Opts) ->
    {ok, Pid} = beamlab_runtime_telemetry:start_link(Opts#{interval => 1000, print => Mode =:= live}),
    Pid.

%% @doc As {@link start/1} for the experiment's `telemetry', and with its
%% live metrics, serving this VM's telemetry there.
-spec start(beamlab_experiment:telemetry(), beamlab_experiment:experiment()) -> sampler().
start(Mode, Exp) ->
    start(Mode, Exp, #{}).

%% @doc As {@link start/2}, its time axis from `t0' (a monotonic
%% millisecond: the run's start, which the run's other series count from).
-spec start(beamlab_experiment:telemetry(), beamlab_experiment:experiment(), #{t0 => integer()}) -> sampler().
start(Mode, Exp, Opts0) ->
    Opts = maps:with([t0], Opts0),
    case {start_mode(Mode, Opts), beamlab_experiment_metrics:server(Exp)} of
        {Sampler, undefined} -> Sampler;
        {none, _} ->
            {ok, Pid} = beamlab_runtime_telemetry:start_link(Opts#{interval => 1000, print => false}),
            ok = beamlab_experiment_metrics:vm(Exp, Pid),
            {metrics_only, Pid};
        {Pid, _} ->
            ok = beamlab_experiment_metrics:vm(Exp, Pid),
            Pid
    end.

%% @doc Stops the sampler and records its series and the detectors'
%% findings (which read the environment report, attached first) in the
%% document.
-spec stop(sampler(), beamlab_result:result(), beamlab_experiment:experiment()) ->
          beamlab_result:result().
stop(none, Doc, _Exp) ->
    Doc;
stop({metrics_only, Pid}, Doc, _Exp) ->
    _ = beamlab_runtime_telemetry:stop(Pid),
    Doc;
stop(Pid, Doc, Exp) ->
    Series = beamlab_runtime_telemetry:stop(Pid),
    beamlab_env_detect:attach(Series, beamlab_experiment_env:attach(Doc, Exp)).

%% @doc Stops the sampler of a run that produced no document.
-spec cancel(sampler()) -> ok.
cancel(none) ->
    ok;
cancel({metrics_only, Pid}) ->
    cancel(Pid);
cancel(Pid) ->
    _ = beamlab_runtime_telemetry:stop(Pid),
    ok.
