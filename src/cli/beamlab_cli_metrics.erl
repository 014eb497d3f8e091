%%% @doc `--metrics-port PORT' and `--metrics-bind ADDR' of the commands
%%% that serve live metrics (`watch', `suite', `run', `amqp'): they go into
%%% the experiment's description (`metrics'), whose layer runs the server
%%% while the experiment runs, on loopback unless `--metrics-bind' widens
%%% it; where it listens is printed on stderr (`beamlab_cli_experiment').
-module(beamlab_cli_metrics).

-export([options/0, add/2]).

-include("beamlab_cli_error.hrl").

%% @doc The two options.
-spec options() -> [beamlab_cli_args:option()].
options() ->
    [#{name => metrics_port, long => "metrics-port", type => non_neg_integer, metavar => "PORT",
       help => "serve live metrics for Prometheus at http://ADDR:PORT/metrics (OpenMetrics or "
               "Prometheus text; 0 picks a free port)"},
     #{name => metrics_bind, long => "metrics-bind", type => string, metavar => "ADDR",
       help => "address the metrics are served on (default 127.0.0.1; 0.0.0.0 or :: for every interface)"}].

%% @doc The experiment with `metrics' when `--metrics-port' is given. A
%% bad port or address is a usage error.
-spec add(beamlab_cli_args:parsed(), beamlab_experiment:experiment()) ->
          {ok, beamlab_experiment:experiment()} | {error, beamlab_cli_error:reason()}.
add(Parsed, Exp) ->
    ?CATCHING({ok, added(Parsed, Exp)}).

added(Parsed, Exp) ->
    Bind = case beamlab_cli_args:get(metrics_bind, Parsed) of
               undefined -> {127, 0, 0, 1};
               Text ->
                   case inet:parse_strict_address(Text) of
                       {ok, Ip} -> Ip;
                       {error, _} -> ?USAGE("--metrics-bind: '~ts' is not an IP address", [Text])
                   end
           end,
    case beamlab_cli_args:get(metrics_port, Parsed) of
        undefined ->
            _ = beamlab_cli_args:get(metrics_bind, Parsed) =:= undefined orelse
                ?USAGE("--metrics-bind needs --metrics-port", []),
            Exp;
        Port when Port > 65535 ->
            ?USAGE("--metrics-port: ~b is not a port (0 to 65535)", [Port]);
        Port ->
            loopback(Bind) orelse
                io:format(standard_error, "beamlab: --metrics-bind ~ts: the metrics are reachable from "
                          "other hosts (anyone who can reach this address can read them)~n",
                          [inet:ntoa(Bind)]),
            Exp#{metrics => #{port => Port, bind => Bind}}
    end.

%% 127.0.0.0/8 and ::1 (and ::ffff:127.x) stay on this machine.
loopback({127, _, _, _}) -> true;
loopback({0, 0, 0, 0, 0, 0, 0, 1}) -> true;
loopback({0, 0, 0, 0, 0, 16#ffff, A, _}) -> A bsr 8 =:= 127;
loopback(_) -> false.
