%%% @doc Live metrics of an experiment (`metrics => #{port, bind}'): the
%%% server (`beamlab_runtime_metrics', loopback unless `bind' says
%%% otherwise) runs while the experiment does, and what it measures is
%%% registered there as it starts: this VM's telemetry ({@link vm/2}), a
%%% benchmark's iteration counters (the engine), a watched node's figures
%%% and findings (`beamlab_sut_watch'), an AMQP load's rates and latencies.
%%% Where the server listens goes to the sink as `{metrics, Url}'.
-module(beamlab_experiment_metrics).

-export([start/1, stop/1, server/1, vm/2, node_telemetry/4, withdraw/2, format_error/1]).

-type spec() :: #{port := inet:port_number(), bind => inet:ip_address(),
                  server => beamlab_runtime_metrics:server()}.
-type error_reason() :: beamlab_runtime_metrics:error_reason().
-export_type([spec/0, error_reason/0]).

%% @doc Starts the server the experiment asks for (the experiment, with
%% the server in its `metrics', is what the kinds are given).
-spec start(beamlab_experiment:experiment()) ->
          {ok, beamlab_experiment:experiment()} | {error, {metrics, error_reason()}}.
start(#{metrics := #{port := Port} = Spec} = Exp) ->
    Bind = maps:get(bind, Spec, {127, 0, 0, 1}),
    case beamlab_runtime_metrics:start(#{port => Port, bind => Bind}) of
        {ok, Server} ->
            Sink = maps:get(sink, Exp, fun(_) -> ok end),
            _ = Sink({metrics, io_lib:format("http://~ts/metrics", [address(Bind, beamlab_runtime_metrics:port(Server))])}),
            {ok, Exp#{metrics := Spec#{server => Server}}};
        {error, E} ->
            {error, {metrics, E}}
    end;
start(Exp) ->
    {ok, Exp}.

%% @doc Stops the server (when there is one).
-spec stop(beamlab_experiment:experiment()) -> ok.
stop(Exp) ->
    case server(Exp) of
        undefined -> ok;
        Server -> beamlab_runtime_metrics:stop(Server)
    end.

%% @doc The running server, or `undefined'.
-spec server(beamlab_experiment:experiment()) -> beamlab_runtime_metrics:server() | undefined.
server(#{metrics := #{server := Server}}) -> Server;
server(_) -> undefined.

%% @doc Serves this VM's telemetry from the sampler `Pid' (its latest
%% sample, labelled with this node's name).
-spec vm(beamlab_experiment:experiment(), pid()) -> ok.
vm(Exp, Pid) ->
    node_telemetry(Exp, vm, node(), Pid).

%% @doc Serves the telemetry of `Node' from the sampler `Pid' (its latest
%% sample, labelled with the node's name) as the collector `Name'.
-spec node_telemetry(beamlab_experiment:experiment(), atom(), node(), pid()) -> ok.
node_telemetry(Exp, Name, Node, Pid) ->
    case server(Exp) of
        undefined -> ok;
        Server ->
            Labels = [{<<"node">>, atom_to_binary(Node)}],
            beamlab_runtime_metrics:register(
              Server, Name, fun() -> beamlab_format_vm_metrics:families(beamlab_runtime_telemetry:last(Pid), Labels) end)
    end.

%% @doc Stops serving the collector `Name' (when there is a server).
-spec withdraw(beamlab_experiment:experiment(), atom()) -> ok.
withdraw(Exp, Name) ->
    case server(Exp) of
        undefined -> ok;
        Server -> beamlab_runtime_metrics:unregister(Server, Name)
    end.

%% @doc One line for an error.
-spec format_error(error_reason()) -> unicode:chardata().
format_error(E) ->
    beamlab_runtime_metrics:format_error(E).

address(Ip, Port) when tuple_size(Ip) =:= 8 -> io_lib:format("[~ts]:~b", [inet:ntoa(Ip), Port]);
address(Ip, Port) -> io_lib:format("~ts:~b", [inet:ntoa(Ip), Port]).
