%%% @doc `--watch NODE' of `beamlab amqp': the broker's telemetry recorded
%%% beside the load generator's, on the load's time axis, and the
%%% detectors' findings on it. The series goes to the document's
%%% `extra.broker' (`node', `env' as the node reports it, `telemetry'),
%%% which the HTML report draws under the throughput chart.
-module(beamlab_cli_broker_watch).

-export([option/0, start/2, stop/2, cancel/1]).

-type watch() :: none | #{node := node(), env := map(), pid := pid()}.
-export_type([watch/0]).

%% @doc The option the load commands add.
-spec option() -> beamlab_cli_args:option().
option() ->
    #{name => watch, long => "watch", type => string, metavar => "NODE",
      help => "record the broker node's telemetry (schedulers, memory, top processes) "
              "beside the load, over distribution (--cookie gives its cookie)"}.

%% @doc Connects to the node of `--watch' and starts sampling it every
%% `IntervalMs'; `none' without `--watch'. Failures end the command.
-spec start(beamlab_cli_args:parsed(), pos_integer()) -> watch().
start(Parsed, IntervalMs) ->
    case beamlab_cli_args:get(watch, Parsed) of
        undefined -> none;
        Name ->
            Cookie = beamlab_cli_args:get(cookie, Parsed),
            Node = case beamlab_sut_watch:connect(Name, Cookie) of
                       {ok, N} -> N;
                       {error, {bad_node, _} = E} ->
                           beamlab_cli_error:usage("--watch: ~ts", [beamlab_sut_watch:format_error(E)]);
                       {error, E} -> beamlab_cli_error:fail("--watch: ~ts", [beamlab_sut_watch:format_error(E)])
                   end,
            Env = case beamlab_sut_watch:node_env(Node) of
                      {ok, Ev} -> Ev;
                      {error, E2} -> beamlab_cli_error:fail("--watch: ~ts", [beamlab_sut_watch:format_error(E2)])
                  end,
            case beamlab_runtime_telemetry:start(#{node => Node, interval => IntervalMs, top => 5,
                                                   print => false}) of
                {ok, Pid} -> #{node => Node, env => Env, pid => Pid};
                {error, E3} -> beamlab_cli_error:fail("--watch: ~ts", [beamlab_runtime_telemetry:format_error(E3)])
            end
    end.

%% @doc Stops sampling and records the broker's series and findings (each
%% titled "broker: ...") in the document.
-spec stop(watch(), beamlab_result:result()) -> beamlab_result:result().
stop(none, Doc) ->
    Doc;
stop(#{node := Node, env := Env, pid := Pid}, Doc) ->
    Series = beamlab_runtime_telemetry:stop(Pid),
    Findings = [F#{title := <<"broker: ", T/binary>>}
                || F = #{title := T} <- beamlab_env_detect:findings(#{telemetry => Series, env => Env,
                                                                      result => #{}, timer => skip})],
    Extra = maps:get(extra, Doc, #{}),
    %% (The cookie in the command line is masked with every other secret
    %% when the document is printed or saved: beamlab_result_redact.)
    Doc1 = beamlab_result:set(extra, Extra#{broker => #{node => atom_to_binary(Node), env => Env,
                                                        telemetry => Series}}, Doc),
    case maps:get(node_down, Series, false) of
        true -> io:format(standard_error, "beamlab: --watch: ~ts went down during the run (~ts)~n",
                          [Node, maps:get(node_down_reason, Series)]);
        false -> ok
    end,
    beamlab_result:add_findings(Doc1, Findings).

%% @doc Stops sampling for a run that produced no document.
-spec cancel(watch()) -> ok.
cancel(none) ->
    ok;
cancel(#{pid := Pid}) ->
    _ = beamlab_runtime_telemetry:stop(Pid),
    ok.
