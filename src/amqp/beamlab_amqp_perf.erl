%%% @doc `beamlab amqp': a RabbitMQ load generator compatible with PerfTest's
%%% options and output. The entry point of the broker feature:
%%% {@link run/1} runs a load test (the coordinator,
%%% `beamlab_amqp_coordinator', with live lines by `beamlab_amqp_live'),
%%% {@link result/2} makes its result document (`beamlab_amqp_result'),
%%% {@link format_error/1} prints any of its errors as one line.
-module(beamlab_amqp_perf).

-export([run/1, result/2, format_error/1]).

-export_type([options/0, report/0, failure/0]).

-type options() :: beamlab_amqp_config:options().
-type report() :: beamlab_amqp_coordinator:report().
-type failure() :: beamlab_amqp_coordinator:failure().

%% @doc Runs the load test described by `Opts' (defaults for the rest, see
%% {@link beamlab_amqp_config:defaults/0}). `{error, R}' when it could not
%% start (broker, credentials, topology, nodes); otherwise a report, with
%% `failure' set when the run ended early (broker gone, node down) and
%% `partial' when it was interrupted or failed.
-spec run(options()) -> {ok, report()} | {error, failure()}.
run(Opts) ->
    beamlab_amqp_coordinator:run(beamlab_amqp_config:new(Opts)).

%% @doc The result document of a run.
-spec result(report(), beamlab_amqp_result:opts()) -> beamlab_result:result().
result(Report, Opts) ->
    beamlab_amqp_result:document(Report, Opts).

%% @doc One line for every error `run/1' returns or a report carries.
-spec format_error(failure()) -> iolist().
format_error(Reason) ->
    beamlab_amqp_coordinator:format_error(Reason).
