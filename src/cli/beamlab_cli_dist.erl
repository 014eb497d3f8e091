%%% @doc Distribution for the CLI: the `--name' and `--cookie' options of a
%%% controller (`amqp --nodes', `suite ... ping_pong.node=', `node
%%% --stop'), which the experiment layer sets up
%%% ({@link beamlab_experiment_dist}), and a `beamlab node' started by name.
-module(beamlab_cli_dist).

-export([options/0, controller/2, start/3]).

%% @doc `--name' and `--cookie' as every controller command declares them.
-spec options() -> [beamlab_cli_args:option()].
options() ->
    [#{name => dist_name, long => "name", type => string, metavar => "NAME@HOST",
       help => "name this VM (the controller) NAME@HOST, HOST an address of one of this "
               "machine's interfaces, to reach nodes on other machines (default: loopback only)"},
     #{name => cookie, long => "cookie", type => cookie, metavar => "COOKIE",
       help => "distribution cookie shared with the nodes (default: ~/.erlang.cookie)"}].

%% @doc Sets up distribution for a controller from `--name'/`--cookie'
%% before it talks to `Nodes' (see {@link beamlab_experiment_dist}); a
%% name that cannot work is a usage error.
-spec controller(beamlab_cli_args:parsed(), [node()]) -> ok | {error, beamlab_cli_error:reason()}.
controller(Parsed, Nodes) ->
    Dist = maps:from_list([{K, V} || {K, O} <- [{name, dist_name}, {cookie, cookie}],
                                     V <- [beamlab_cli_args:get(O, Parsed)], V =/= undefined]),
    case beamlab_experiment_dist:controller(Dist, Nodes) of
        ok -> ok;
        {error, R} -> beamlab_cli_experiment:cli_error({dist, R})
    end.

%% @doc Starts distribution as `Name' (usage error on a bad name, failure
%% otherwise) and returns what `beamlab_runtime_peer:start_dist/1' says.
-spec start(string(), string() | undefined, map()) ->
          {ok, beamlab_runtime_peer:dist_info()} | {error, beamlab_cli_error:reason()}.
start(Name, Cookie, Extra) ->
    Opts = maps:merge(Extra, #{name => Name}),
    case beamlab_runtime_peer:start_dist(case Cookie of
                                             undefined -> Opts;
                                             _ -> Opts#{cookie => Cookie}
                                         end) of
        {ok, Info} -> {ok, Info};
        {error, {Bad, _} = E} when Bad =:= bad_node_name; Bad =:= unknown_host ->
            beamlab_cli_error:usage_error("--name: ~ts", [beamlab_runtime_peer:format_error(E)]);
        {error, {not_local, _, _} = E} ->
            beamlab_cli_error:usage_error("--name: ~ts", [beamlab_runtime_peer:format_error(E)]);
        {error, E} ->
            beamlab_cli_error:failure("~ts", [beamlab_runtime_peer:format_error(E)])
    end.
