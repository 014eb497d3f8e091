%%% @doc `beamlab watch': record a running node's telemetry (the system
%%% under test, e.g. a RabbitMQ broker) from outside, as a hidden node,
%%% with no beamlab code loaded there; run the pathology detectors on it.
%%% See `beamlab_sut_watch'.
-module(beamlab_command_watch).
-behaviour(beamlab_command).

-export([summary/0, options/0, usage/0, run/1, experiment/1, text/2]).
-export([kind/0]).

-include("beamlab_cli_error.hrl").

%% @doc One line for `beamlab help'.
-spec summary() -> string().
summary() ->
    "watch a running node (schedulers, memory, top processes) without loading code there".

%% @doc Options of `beamlab watch': the watch kind's
%% (`beamlab_experiment_watch:options/0'), the metrics server's and the
%% common ones.
-spec options() -> [beamlab_cli_args:option()].
options() ->
    beamlab_schema:flags(beamlab_experiment_watch:options())
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
    ?CATCHING(run_parsed(Parsed)).

run_parsed(Parsed) ->
    ?VALUE(beamlab_cli_experiment:run(describe(Parsed))).

%% @doc The experiment: the node, how long and how often to sample it,
%% one line per interval on stderr.
-spec experiment(beamlab_cli_args:parsed()) ->
          {ok, beamlab_experiment:experiment()} | {error, beamlab_cli_error:reason()}.
experiment(Parsed) ->
    ?CATCHING({ok, describe(Parsed)}).

describe(Parsed) ->
    Get = fun(K) -> beamlab_cli_args:get(K, Parsed) end,
    case {maps:get(args, Parsed), Get(node)} of
        {[], _} -> ok;
        %% (`beamlab watch rabbit@host': the node named without its flag)
        {[Arg], undefined} ->
            case is_node_name(Arg) of
                true -> ?USAGE("watch takes no arguments (got: ~ts); did you mean --node ~ts?", [Arg, Arg]);
                false -> ?USAGE("watch takes no arguments (got: ~ts)", [Arg])
            end;
        {Args, _} -> ?USAGE("watch takes no arguments (got: ~ts)", [lists:join(" ", Args)])
    end,
    NodeName = case Get(node) of
                   undefined -> ?USAGE("give the node to watch: --node NAME@HOST", []);
                   N -> N
               end,
    Given = ?VALUE(beamlab_cli_schema:given(beamlab_experiment_watch:options(), Parsed)),
    Watch = case beamlab_experiment_watch:new(Given#{node => NodeName}) of
                {ok, W} -> W;
                {error, {option, R}} -> ?ABORT(beamlab_cli_schema:refusal(R))
            end,
    ?VALUE(beamlab_cli_metrics:add(Parsed, #{run => {watch, Watch},
                                             command => beamlab_result_redact:argv(maps:get(argv, Parsed)),
                                             telemetry => live})).

%% @doc The node's summary, its top processes, then the findings.
-spec text(beamlab_result:result(), beamlab_cli_args:parsed()) -> unicode:chardata().
text(Doc, Parsed) ->
    beamlab_render_view:text(Doc, beamlab_cli_output:text_opts(Parsed)).

%% @doc The kind of experiment the command runs.
-spec kind() -> watch.
kind() -> watch.

%% Whether an argument looks like a node name: NAME@HOST, both parts
%% non-empty, no space, one `@'.
is_node_name(Arg) ->
    case string:split(Arg, "@", all) of
        [Name, Host] -> Name =/= "" andalso Host =/= "" andalso string:find(Arg, " ") =:= nomatch;
        _ -> false
    end.
