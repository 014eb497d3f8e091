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
     #{name => cookie, long => "cookie", type => string, metavar => "COOKIE",
       help => "its distribution cookie (default: ~/.erlang.cookie)"},
     #{name => duration, long => "duration", type => pos_number, metavar => "SECONDS",
       help => "how long to watch (default: until Ctrl-C or the node goes down)"},
     #{name => interval, long => "interval", type => pos_integer, default => 1000, metavar => "MS",
       help => "sampling interval in milliseconds"},
     #{name => top, long => "top", type => non_neg_integer, default => 5, metavar => "N",
       help => "top processes listed per interval (by reductions, queue, memory)"},
     #{name => msacc, long => "msacc", type => boolean, default => false,
       help => "record microstate accounting too (restored when done)"},
     #{name => long_gc, long => "long-gc", type => pos_integer, default => 100, metavar => "MS",
       help => "report garbage collections longer than MS (the node's system monitor)"},
     #{name => long_schedule, long => "long-schedule", type => pos_integer, default => 100, metavar => "MS",
       help => "report processes or ports running longer than MS without yielding"},
     #{name => no_system_monitor, long => "no-system-monitor", type => boolean, default => false,
       help => "leave the node's system monitor alone (no long GC, long schedule or busy port events)"}]
    ++ beamlab_cli_metrics:options() ++ beamlab_cli_args:common_options().

%% @doc Examples for `beamlab help watch'.
-spec usage() -> iodata().
usage() ->
    "Usage: beamlab watch --node NAME@HOST [--cookie C] [--duration S] [--interval MS] [--top N]\n"
    "                     [--metrics-port PORT [--metrics-bind ADDR]]\n\n"
    "Connects as a hidden node and samples the node every interval with OTP\n"
    "functions only (no code is loaded there): per-scheduler utilisation, run\n"
    "queues, memory by kind, process, port and atom counts, reductions, GC, IO,\n"
    "the top processes by reductions, message queue and memory, the largest ETS\n"
    "tables, and the system monitor's long GCs, long schedules and busy ports.\n"
    "Findings (a growing mailbox, process heap, refc binaries, ETS table, process,\n"
    "port or atom count; long GCs...) are printed as soon as two intervals show\n"
    "them, naming the process or table, the rate and the interval. Flags turned on\n"
    "for it (scheduler_wall_time, --msacc, the system monitor) are restored. A node\n"
    "that goes down keeps what was recorded (exit 1); one that stops answering is\n"
    "probed every interval; a watch with --duration ends within 5 s of it.\n\n"
    "Each interval's lines (stderr):\n"
    "  time    seconds since the watch started\n"
    "  util    mean busy share of the online schedulers; [a b ...] each scheduler\n"
    "  dcpu, dio  dirty CPU and dirty IO schedulers' busy share\n"
    "  runq    processes waiting in the normal run queues\n"
    "  procs, memory, reds/s, gc/s  process count, total memory, reductions and\n"
    "          garbage collections per second\n"
    "  mon     the watch's own cost: the share of the interval's wall time spent\n"
    "          taking this sample (round trips to the node, reading its processes)\n"
    "  memory: the node's memory by kind, its atom and port counts\n"
    "  top     R, Q, M: among the top N by reductions per second, by message queue\n"
    "          length, by memory; each with its registered name or initial call\n"
    "          and current function\n"
    "  !       a finding, when it is raised\n\n"
    "Examples:\n"
    "  beamlab watch --node rabbit@$(hostname -s) --duration 30\n"
    "  beamlab watch --node app@10.0.0.5 --cookie secret --msacc --save\n"
    "  beamlab watch --node app@127.0.0.1 --metrics-port 9464    # for Prometheus\n"
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
    %% Everything below is bounded by one deadline: the duration plus the
    %% grace, however the node behaves.
    T0 = erlang:monotonic_time(millisecond),
    Duration = case Get(duration) of
                   undefined -> infinity;
                   S -> max(1, round(S * 1000))
               end,
    Grace = beamlab_sut_watch:grace_ms(),
    Deadline = case Duration of
                   infinity -> infinity;
                   _ -> T0 + Duration + Grace
               end,
    Left = fun(Cap) -> case Deadline of
                           infinity -> Cap;
                           _ -> max(1, min(Cap, Deadline - erlang:monotonic_time(millisecond) - 1000))
                       end
           end,
    Metrics = beamlab_cli_metrics:start(Parsed),
    Node = case beamlab_sut_watch:connect(NodeName, Get(cookie), Left(5000)) of
               {ok, Nd} -> Nd;
               {error, {bad_node, _} = E} -> beamlab_cli_error:usage("~ts", [beamlab_sut_watch:format_error(E)]);
               {error, E} -> beamlab_cli_error:fail("~ts", [beamlab_sut_watch:format_error(E)])
           end,
    NodeEnv = case beamlab_sut_watch:node_env(Node, Left(10000)) of
                  {ok, NE} -> NE;
                  {error, E2} -> beamlab_cli_error:fail("~ts", [beamlab_sut_watch:format_error(E2)])
              end,
    SysMon = case Get(no_system_monitor) of
                 true -> false;
                 false -> #{long_gc => Get(long_gc), long_schedule => Get(long_schedule)}
             end,
    Recording = case Deadline of
                    infinity -> infinity;
                    _ -> max(1, min(Duration, Deadline - Grace - erlang:monotonic_time(millisecond)))
                end,
    ok = beamlab_runtime_interrupt:subscribe(),
    Watched = try beamlab_sut_watch:watch(Node, #{duration => Recording, interval => Get(interval),
                                                     top => Get(top), msacc => Get(msacc),
                                                     system_monitor => SysMon, metrics => Metrics,
                                                     deadline => case Deadline of
                                                                     infinity -> infinity;
                                                                     _ -> Deadline - 1000
                                                                 end,
                                                     print => true})
              after ok = beamlab_runtime_interrupt:unsubscribe()
              end,
    case Watched of
        {ok, Series, #{interrupted := Interrupted, findings := Growth}} ->
            Doc = document(Parsed, Started, Node, NodeEnv, Series, Growth, Interrupted),
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

document(Parsed, Started, Node, NodeEnv, Series, Growth, Interrupted) ->
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
                                             timer => skip}) ++ Growth,
    beamlab_result:finish(beamlab_result:add_findings(Doc2, Findings),
                          #{finished_at => beamlab_runtime_clock:rfc3339(), partial => Interrupted}).

%% @doc The node's summary, its top processes, then the findings.
-spec text(beamlab_result:result(), beamlab_cli_args:parsed()) -> unicode:chardata().
text(Doc, _Parsed) ->
    [beamlab_render_watch:render(Doc), beamlab_render_text:findings(maps:get(findings, Doc))].
