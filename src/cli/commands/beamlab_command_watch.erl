%%% @doc `beamlab watch': record a running node's telemetry (the system
%%% under test, e.g. a RabbitMQ broker) from outside, as a hidden node,
%%% with no beamlab code loaded there; run the pathology detectors on it.
%%% See `beamlab_sut_watch'.
-module(beamlab_command_watch).
-behaviour(beamlab_command).

-export([summary/0, options/0, usage/0, run/1, experiment/1, text/2]).

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
    beamlab_cli_experiment:run(experiment(Parsed)).

%% @doc The experiment: the node, how long and how often to sample it,
%% one line per interval on stderr.
-spec experiment(beamlab_cli_args:parsed()) -> beamlab_experiment:experiment().
experiment(Parsed) ->
    Get = fun(K) -> beamlab_cli_args:get(K, Parsed) end,
    maps:get(args, Parsed) =:= [] orelse
        beamlab_cli_error:usage("watch takes no arguments (got: ~ts)", [lists:join(" ", maps:get(args, Parsed))]),
    NodeName = case Get(node) of
                   undefined -> beamlab_cli_error:usage("give the node to watch: --node NAME@HOST", []);
                   N -> N
               end,
    Watch = #{node => NodeName, cookie => Get(cookie),
              duration => case Get(duration) of
                              undefined -> infinity;
                              S -> max(1, round(S * 1000))
                          end,
              interval => Get(interval), top => Get(top), msacc => Get(msacc)},
    #{run => {watch, Watch}, command => beamlab_result_redact:argv(maps:get(argv, Parsed)),
      telemetry => live}.

%% @doc The node's summary, its top processes, then the findings.
-spec text(beamlab_result:result(), beamlab_cli_args:parsed()) -> unicode:chardata().
text(Doc, _Parsed) ->
    [beamlab_render_watch:render(Doc), beamlab_render_text:findings(maps:get(findings, Doc))].
