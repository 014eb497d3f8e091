%%% @doc `beamlab watch': record a running node's telemetry (the system
%%% under test, e.g. a RabbitMQ broker) from outside, as a hidden node,
%%% with no beamlab code loaded there; run the pathology detectors on it.
%%% See `beamlab_sut_watch'.
-module(beamlab_command_watch).
-behaviour(beamlab_command).

-export([summary/0, options/0, usage/0, run/1, text/2]).

%% @doc One line for `beamlab help'.
-spec summary() -> string().
summary() ->
    "watch a running node (schedulers, memory, top processes) without loading code there".

%% @doc Options of `beamlab watch'.
-spec options() -> [beamlab_cli_args:option()].
options() ->
    [#{name => node, long => "node", type => string, metavar => "NAME@HOST",
       help => "the node to watch (required)"},
     #{name => cookie, long => "cookie", type => cookie, metavar => "COOKIE",
       help => "its distribution cookie (default: ~/.erlang.cookie)"},
     #{name => duration, long => "duration", type => pos_number, metavar => "SECONDS",
       help => "how long to watch (default: until Ctrl-C or the node goes down)"},
     #{name => interval, long => "interval", type => pos_integer, default => 1000, metavar => "MS",
       help => "sampling interval in milliseconds"},
     #{name => top, long => "top", type => non_neg_integer, default => 5, metavar => "N",
       help => "top processes listed per interval (by reductions, queue, memory)"},
     #{name => msacc, long => "msacc", type => boolean, default => false,
       help => "record microstate accounting too (restored when done)"}
     | beamlab_cli_args:common_options()].

%% @doc Examples for `beamlab help watch'.
-spec usage() -> iodata().
usage() ->
    "Usage: beamlab watch --node NAME@HOST [--cookie C] [--duration S] [--interval MS]\n\n"
    "Connects as a hidden node and samples the node every interval with OTP\n"
    "functions only: per-scheduler utilisation (normal, dirty CPU, dirty IO), run\n"
    "queues, memory by type, process and port counts, reductions, GC, IO and the\n"
    "top processes. One line per interval goes to stderr; the detectors run on the\n"
    "recording. Flags turned on for it (scheduler_wall_time, --msacc) are restored.\n"
    "A node that goes down mid-watch keeps what was recorded (exit 1).\n\n"
    "Examples:\n"
    "  beamlab watch --node rabbit@$(hostname -s) --duration 30\n"
    "  beamlab watch --node app@10.0.0.5 --cookie secret --msacc --save\n"
    "  beamlab report beamlab-results/watch-*.json -o watch.html\n".

%% @doc Watches the node; the document holds its series and the findings.
-spec run(beamlab_cli_args:parsed()) -> beamlab_command:outcome().
run(Parsed) ->
    Get = fun(K) -> beamlab_cli_args:get(K, Parsed) end,
    maps:get(args, Parsed) =:= [] orelse
        beamlab_cli_error:usage("watch takes no arguments (got: ~ts)", [lists:join(" ", maps:get(args, Parsed))]),
    NodeName = case Get(node) of
                   undefined -> beamlab_cli_error:usage("give the node to watch: --node NAME@HOST", []);
                   N -> N
               end,
    Started = beamlab_runtime_clock:rfc3339(),
    Node = case beamlab_sut_watch:connect(NodeName, Get(cookie)) of
               {ok, Nd} -> Nd;
               {error, {bad_node, _} = E} -> beamlab_cli_error:usage("~ts", [beamlab_sut_watch:format_error(E)]);
               {error, E} -> beamlab_cli_error:fail("~ts", [beamlab_sut_watch:format_error(E)])
           end,
    NodeEnv = case beamlab_sut_watch:node_env(Node) of
                  {ok, NE} -> NE;
                  {error, E2} -> beamlab_cli_error:fail("~ts", [beamlab_sut_watch:format_error(E2)])
              end,
    Duration = case Get(duration) of
                   undefined -> infinity;
                   S -> max(1, round(S * 1000))
               end,
    ok = beamlab_runtime_interrupt:subscribe(),
    Watched = try beamlab_sut_watch:watch(Node, #{duration => Duration, interval => Get(interval),
                                                     top => Get(top), msacc => Get(msacc),
                                                     print => true})
              after ok = beamlab_runtime_interrupt:unsubscribe()
              end,
    case Watched of
        {ok, Series, #{interrupted := Interrupted}} ->
            Doc = document(Parsed, Started, Node, NodeEnv, Series, Interrupted),
            T = maps:get(telemetry, Doc),
            case maps:get(<<"node_down">>, T) of
                true ->
                    io:format(standard_error, "beamlab: ~ts went down (~ts); keeping the ~b samples recorded~n",
                              [Node, maps:get(<<"node_down_reason">>, T), maps:get(<<"samples">>, T)]),
                    {1, Doc};
                false when Interrupted -> {beamlab_runtime_interrupt:exit_code(), Doc};
                false -> {0, Doc}
            end;
        {error, E3} ->
            beamlab_cli_error:fail("~ts", [beamlab_sut_watch:format_error(E3)])
    end.

document(Parsed, Started, Node, NodeEnv, Series, Interrupted) ->
    Get = fun(K) -> beamlab_cli_args:get(K, Parsed) end,
    Doc0 = beamlab_result:new(watch, #{command => beamlab_result_redact:argv(maps:get(argv, Parsed)), started_at => Started,
                                      params => #{node => atom_to_binary(Node),
                                                  interval_ms => Get(interval),
                                                  duration_s => case Get(duration) of undefined -> null; D -> D end,
                                                  top => Get(top), msacc => Get(msacc)}}),
    Benchmarks = [beamlab_result:benchmark(Name, Vals, #{group => <<"watch">>, metric => Metric,
                                                         unit => Unit, better => Better})
                  || {Key, Name, Metric, Unit, Better} <- [{util, <<"scheduler utilisation">>, <<"util">>, <<"%">>, lower},
                                                           {run_queue, <<"run queue">>, <<"run_queue">>, <<>>, lower},
                                                           {reductions_per_s, <<"reductions">>, <<"reductions">>, <<"1/s">>, higher}],
                     Vals <- [[V || V <- maps:get(Key, Series, []), is_number(V)]], Vals =/= []],
    Doc1 = beamlab_result:add_benchmarks(Doc0, Benchmarks),
    Doc2 = beamlab_result:set(extra, #{node_env => NodeEnv}, beamlab_result:set(telemetry, Series, Doc1)),
    %% The benchmarks are the node's series, not measurements: no noise check.
    Findings = beamlab_env_detect:findings(#{telemetry => Series, env => NodeEnv, result => #{},
                                             timer => skip}),
    beamlab_result:finish(beamlab_result:add_findings(Doc2, Findings),
                          #{finished_at => beamlab_runtime_clock:rfc3339(), partial => Interrupted}).

%% @doc The node's summary, its top processes, then the findings.
-spec text(beamlab_result:result(), beamlab_cli_args:parsed()) -> unicode:chardata().
text(Doc, _Parsed) ->
    [beamlab_render_watch:render(Doc), beamlab_render_text:findings(maps:get(findings, Doc))].
