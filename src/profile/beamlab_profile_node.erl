%%% @doc The OS pid of a running Erlang node on this machine, asked over
%%% distribution (this VM becomes a hidden node with short or long names,
%%% as the target's host part needs), so `beamlab profile --node' can hand
%%% it to perf.
-module(beamlab_profile_node).

-export([os_pid/2, format_error/1]).

-type error_reason() :: {bad_node, string()} | {no_distribution, term()} | {unreachable, atom()}
                      | {bad_cookie, empty | too_long}
                      | {remote_host, atom(), string()}.
-export_type([error_reason/0]).

%% @doc Connects to `Name' (with `Cookie' when given) and returns its OS pid.
-spec os_pid(string(), string() | undefined) -> {ok, pos_integer()} | {error, error_reason()}.
os_pid(Name, Cookie) ->
    case string:split(Name, "@") of
        [N, Host] when N =/= "", Host =/= "" ->
            Names = case lists:member($., Host) orelse lists:member($:, Host) of
                        true -> longnames;
                        false -> shortnames
                    end,
            case beamlab_runtime_peer:start_hidden(Names) of
                ok ->
                    Node = list_to_atom(Name),
                    case Cookie =:= undefined orelse beamlab_runtime_peer:set_cookie(Node, Cookie) of
                        {error, _} = E -> E;
                        _ -> ask(Node)
                    end;
                {error, _} = E -> E
            end;
        _ ->
            {error, {bad_node, Name}}
    end.

ask(Node) ->
    case net_kernel:hidden_connect_node(Node) of
        true ->
            case rpc:call(Node, os, getpid, [], 10000) of
                P when is_list(P) ->
                    %% Any flavour: an interpreter's profile is its C code.
                    case filelib:is_dir("/proc/" ++ P) of
                        false -> {error, {remote_host, Node, P}};
                        true -> {ok, list_to_integer(P)}
                    end;
                _ ->
                    {error, {unreachable, Node}}
            end;
        _ ->
            {error, {unreachable, Node}}
    end.

%% @doc One line for each error.
-spec format_error(error_reason()) -> iolist().
format_error(Reason) ->
    beamlab_format_reason:line(fun error_line/1, Reason).

error_line({bad_node, Name}) ->
    io_lib:format("--node ~ts: expected NAME@HOST", [Name]);
error_line({no_distribution, R}) when is_list(R) ->
    io_lib:format("cannot start distribution to reach the node: ~ts", [R]);
error_line({no_distribution, R}) ->
    io_lib:format("cannot start distribution to reach the node (is epmd running?): ~0p", [R]);
error_line({bad_cookie, _} = Bad) ->
    beamlab_runtime_peer:format_error(Bad);
error_line({unreachable, Node}) ->
    io_lib:format("cannot reach node ~ts: is it running, and is the cookie right (--cookie)?", [Node]);
error_line({remote_host, Node, P}) ->
    io_lib:format("node ~ts runs as OS pid ~ts on another machine: perf profiles local VMs only",
                  [Node, P]);
error_line(Other) ->
    %% (a reason of no kind above: printed, never raised)
    beamlab_format_reason:term(Other).
