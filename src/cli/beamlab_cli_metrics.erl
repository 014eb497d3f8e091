%%% @doc `--metrics-port PORT' and `--metrics-bind ADDR' of the commands
%%% that serve live metrics (`watch', `suite', `run'): starts the metrics
%%% server (`beamlab_runtime_metrics') before the command measures, on
%%% loopback unless `--metrics-bind' widens it, and says where it is on
%%% stderr. The server ends with the command.
-module(beamlab_cli_metrics).

-export([options/0, start/1]).

%% @doc The two options.
-spec options() -> [beamlab_cli_args:option()].
options() ->
    [#{name => metrics_port, long => "metrics-port", type => non_neg_integer, metavar => "PORT",
       help => "serve live metrics for Prometheus at http://ADDR:PORT/metrics (OpenMetrics or "
               "Prometheus text; 0 picks a free port)"},
     #{name => metrics_bind, long => "metrics-bind", type => string, metavar => "ADDR",
       help => "address the metrics are served on (default 127.0.0.1; 0.0.0.0 or :: for every interface)"}].

%% @doc The server of `--metrics-port', or `undefined' without it. A bad
%% port or address is a usage error, a port in use a failure.
-spec start(beamlab_cli_args:parsed()) -> beamlab_runtime_metrics:server() | undefined.
start(Parsed) ->
    Bind = case beamlab_cli_args:get(metrics_bind, Parsed) of
               undefined -> {127, 0, 0, 1};
               Text ->
                   case inet:parse_strict_address(Text) of
                       {ok, Ip} -> Ip;
                       {error, _} -> beamlab_cli_error:usage("--metrics-bind: '~ts' is not an IP address", [Text])
                   end
           end,
    case beamlab_cli_args:get(metrics_port, Parsed) of
        undefined ->
            _ = beamlab_cli_args:get(metrics_bind, Parsed) =:= undefined orelse
                beamlab_cli_error:usage("--metrics-bind needs --metrics-port", []),
            undefined;
        Port when Port > 65535 ->
            beamlab_cli_error:usage("--metrics-port: ~b is not a port (0 to 65535)", [Port]);
        Port ->
            case beamlab_runtime_metrics:start(#{port => Port, bind => Bind}) of
                {ok, Server} ->
                    io:format(standard_error, "metrics: http://~ts/metrics~n",
                              [address(Bind, beamlab_runtime_metrics:port(Server))]),
                    Server;
                {error, E} ->
                    beamlab_cli_error:fail("~ts", [beamlab_runtime_metrics:format_error(E)])
            end
    end.

address(Ip, Port) when tuple_size(Ip) =:= 8 -> io_lib:format("[~ts]:~b", [inet:ntoa(Ip), Port]);
address(Ip, Port) -> io_lib:format("~ts:~b", [inet:ntoa(Ip), Port]).
