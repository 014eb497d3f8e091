%%% @doc `beamlab node': a load-generator node for a controller on another
%%% machine. The VM becomes the distributed node `--name NAME@HOST' on the
%%% interface HOST names (epmd and the distribution listen there), prints
%%% one line when it is ready and serves runs (`amqp --nodes', remote
%%% ping-pong) until Ctrl-C, SIGTERM or a controller stops it
%%% (`beamlab node --stop NODE'). A controller with another cookie is
%%% refused by the distribution handshake; the node says so on stderr.
-module(beamlab_command_node).
-behaviour(beamlab_command).

-export([summary/0, options/0, usage/0, run/1]).
%% Called by a controller over distribution.
-export([stop_request/1]).
%% Logger filter (a refused handshake as one line).
-export([refused_filter/2]).

-define(REG, beamlab_node).

-include("beamlab_cli_error.hrl").

%% @doc One line for `beamlab help'.
-spec summary() -> string().
summary() ->
    "serve as a load-generator node for a controller on another machine".

%% @doc Options of `beamlab node'.
-spec options() -> [beamlab_cli_args:option()].
options() ->
    [#{name => dist_name, long => "name", type => string, metavar => "NAME@HOST",
       help => "this node's name; HOST is the address (or a name of it) of the interface "
               "the controller reaches"},
     #{name => cookie, long => "cookie", type => cookie, metavar => "COOKIE",
       help => "distribution cookie (default: ~/.erlang.cookie)"},
     #{name => dist_port, long => "dist-port", type => pos_integer, metavar => "PORT",
       help => "listen for distribution on this TCP port (default: any free port; "
               "fix it to open one port in a firewall)"},
     #{name => stop, long => "stop", type => string, metavar => "NODES",
       help => "stop the running node(s) a@host,b@host instead of starting one "
               "(with --name for this VM when they are on other hosts)"}].

%% @doc Examples for `beamlab help node'.
-spec usage() -> iodata().
usage() ->
    "Usage: beamlab node --name NAME@HOST [--cookie C] [--dist-port P]\n"
    "       beamlab node --stop NODE[,NODE] [--name NAME@HOST] [--cookie C]\n\n"
    "Firewall: the controller reaches the node's epmd (TCP 4369) and its\n"
    "distribution port (--dist-port, or the range the kernel picks from).\n\n"
    "Examples:\n"
    "  beamlab node --name gen1@10.0.0.11 --cookie s3cret --dist-port 9100\n"
    "  beamlab amqp -h amqp://guest:guest@10.0.0.10:5672/%2F -x 2 -y 2 \\\n"
    "      --nodes gen1@10.0.0.11,gen2@10.0.0.12 --cookie s3cret --name ctl@10.0.0.5 -z 60\n"
    "  beamlab node --stop gen1@10.0.0.11 --cookie s3cret --name ctl@10.0.0.5\n".

%% @doc Serves until stopped (exit 0), or stops the named nodes.
-spec run(beamlab_cli_args:parsed()) -> beamlab_command:outcome().
run(Parsed) ->
    ?CATCHING(run_parsed(Parsed)).

run_parsed(Parsed) ->
    case maps:get(args, Parsed) of
        [] -> ok;
        Extra -> ?USAGE("node takes no arguments (got: ~ts)", [lists:join(" ", Extra)])
    end,
    G = fun(K) -> beamlab_cli_args:get(K, Parsed) end,
    case {G(stop), G(dist_name)} of
        {undefined, undefined} ->
            ?USAGE("node needs --name NAME@HOST (HOST: an address of this "
                   "machine the controller reaches)", []);
        {undefined, _} ->
            serve(?VALUE(beamlab_cli_dist:start(G(dist_name), G(cookie), port_opt(G(dist_port)))));
        {Nodes, _} ->
            stop_nodes(Parsed, node_names(Nodes))
    end.

port_opt(undefined) -> #{epmd => required};
port_opt(P) when P > 65535 -> ?USAGE("--dist-port ~b is not a TCP port", [P]);
port_opt(P) -> #{epmd => required, port => P}.

serve(#{node := Node, address := Ip, port := Port}) ->
    true = register(?REG, self()),
    ok = net_kernel:monitor_nodes(true, [{node_type, all}]),
    ok = beamlab_runtime_interrupt:subscribe(),
    _ = logger:add_primary_filter(beamlab_node_refused, {fun ?MODULE:refused_filter/2, []}),
    say("beamlab node ~s ready: distribution on ~ts:~b, epmd on ~ts:4369, os pid ~s; "
        "waiting for a controller (Ctrl-C to stop)",
        [Node, inet:ntoa(Ip), Port, inet:ntoa(Ip), os:getpid()]),
    loop().

loop() ->
    receive
        {nodeup, N, _} -> say("~s connected", [N]), loop();
        {nodedown, N, _} -> say("~s disconnected", [N]), loop();
        {stop, From} -> say("stopped by ~s", [From]), {0, none};
        {beamlab_interrupt, _} -> say("stopped (signal)", []), {0, none};
        _ -> loop()
    end.

%% @doc OTP logs a handshake that failed on the cookie as a multi-line error
%% report; a node says it in one line on stderr instead.
-spec refused_filter(logger:log_event(), term()) -> logger:filter_return().
refused_filter(#{msg := {report, #{format := Fmt, args := [From | _]}}} = Event, _) when is_list(Fmt) ->
    refused(Fmt, From, Event);
refused_filter(#{msg := {Fmt, [From | _]}} = Event, _) when is_list(Fmt) ->
    refused(Fmt, From, Event);
refused_filter(Event, _) ->
    Event.

refused(Fmt, From, Event) ->
    case string:find(Fmt, "Invalid challenge reply") of
        nomatch -> Event;
        _ ->
            io:format(standard_error, "beamlab node: refused a connection from ~w (wrong cookie)~n",
                      [From]),
            stop
    end.

say(Fmt, Args) ->
    io:format(standard_io, Fmt ++ "~n", Args).

%% @doc Asks the node's serving process to stop (called on the node by a
%% controller's `beamlab node --stop').
-spec stop_request(node()) -> ok | not_serving.
stop_request(From) ->
    case whereis(?REG) of
        undefined -> not_serving;
        Pid -> Pid ! {stop, From}, ok
    end.

stop_nodes(Parsed, Nodes) ->
    ?CHECK(beamlab_cli_dist:controller(Parsed, Nodes)),
    case beamlab_runtime_peer:ensure_dist() of
        ok -> ok;
        {error, NoDist} -> ?FAIL("~ts", [beamlab_runtime_peer:format_error(NoDist)])
    end,
    Bad = [{N, R} || N <- Nodes,
                     R <- [try erpc:call(N, ?MODULE, stop_request, [node()], 10000)
                           catch _:E -> {unreachable, E} end],
                     R =/= ok],
    case Bad of
        [] ->
            _ = [io:format("stopped ~s~n", [N]) || N <- Nodes],
            {0, none};
        [{N, not_serving} | _] -> ?FAIL("~s is not a beamlab node", [N]);
        [{N, _} | _] -> ?FAIL("cannot reach node ~s (running? same cookie?)", [N])
    end.

node_names(S) ->
    [case string:split(X, "@") of
         [[_ | _], [_ | _]] -> list_to_atom(X);
         _ -> ?USAGE("--stop: '~ts' is not a node name (name@host)", [X])
     end || X0 <- string:lexemes(S, ","), X <- [string:trim(X0)]].
