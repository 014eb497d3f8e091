%%% @doc `beamlab amqp': load-test a RabbitMQ broker with PerfTest's options
%%% and output format (see `beamlab_amqp_perf'). Every option PerfTest
%%% 2.22.1 lists in `--help' is accepted with its meaning, or refused with
%%% one line naming it (exit 2), or (Java thread settings) accepted with a
%%% note that it has no equivalent: {@link perftest_options/0} is the
%%% audit, option by option.
-module(beamlab_command_amqp).
-behaviour(beamlab_command).

-export([summary/0, options/0, usage/0, run/1, experiment/1, help_flags/0,
         perftest_options/0]).
-export([kind/0, files/1]).

-export_type([audit/0]).

-include_lib("kernel/include/file.hrl").

%% How beamlab treats one PerfTest option: `same' (same meaning and
%% output), `{differently, Why}', `{no_effect, Why}' (accepted, one line on
%% stderr says why nothing changes) or `{refused, Why}' (one line, exit 2).
-type audit() :: same | {differently | no_effect | refused, string()}.

-include("beamlab_cli_error.hrl").

%% @doc One line for `beamlab help'.
-spec summary() -> string().
summary() ->
    "load-test RabbitMQ (AMQP 0-9-1) with PerfTest's options and output".

%% @doc PerfTest 2.22.1's options (as its `--help' lists them: short and
%% long name) and how beamlab treats each.
-spec perftest_options() -> [{Short :: string() | none, Long :: string(), audit()}].
perftest_options() ->
    Threads = "each channel is an Erlang process and the VM schedules them; there are no "
              "thread pools to size",
    Sync = "PerfTest instances synchronised over JGroups/Kubernetes; beamlab spreads one run "
           "over several VMs or machines with --nodes instead",
    OAuth = "OAuth 2 token endpoints are not supported; give the token as the URI's password",
    [{"?", "help", {differently, "prints beamlab's help (--help)"}},
     {"a", "autoack", same},
     {"A", "multi-ack-every", same},
     {"ad", "auto-delete", {differently, "without it beamlab declares plain queues and deletes "
                                         "the ones it created at the end; true/false as PerfTest "
                                         "(false leaves them on the broker)"}},
     {"b", "heartbeat", same},
     {"B", "body", same},
     {"bc", "body-count", same},
     {"bfc", "body-field-count", same},
     {"c", "confirm", same},
     {"C", "pmessages", same},
     {"ca", "consumer-args", same},
     {"cri", "connection-recovery-interval",
      {differently, "the delay between reconnection attempts; recovery itself needs --reconnect "
                    "(beamlab stops the run on a lost connection by default)"}},
     {"csd", "consumer-start-delay", same},
     {"ct", "confirm-timeout", same},
     {"ctp", "consumers-thread-pools", {no_effect, Threads}},
     {"d", "id", same},
     {"D", "cmessages", same},
     {"dcr", "disable-connection-recovery",
      {differently, "beamlab's default: a lost connection stops the run (--reconnect recovers)"}},
     {"e", "exchange", same},
     {"E", "exclusive", {differently, "each consumer's exclusive queue is named after the test "
                                      "id (not server-named), so producers can address it"}},
     {"ei", "expected-instances", {refused, Sync}},
     {"em", "exposed-metrics", {refused, "PerfTest's expected-value gauges; beamlab's "
                                         "--metrics-port serves the measured series"}},
     {"env", "environment-variables", {refused, "beamlab reads its options from the command "
                                                "line only, not from environment variables"}},
     {"ew", "exit-when", same},
     {"f", "flag", same},
     {"h", "uri", same},
     {"H", "uris", same},
     {"hst", "heartbeat-sender-threads", {no_effect, Threads}},
     {"i", "interval", same},
     {"isn", "instance-sync-namespace", {refused, Sync}},
     {"ist", "instance-sync-timeout", {refused, Sync}},
     {"jb", "json-body", same},
     {"k", "routing-key", same},
     {"K", "random-routing-key", {differently, "consumer latency is still measured (PerfTest "
                                               "records none for messages with a random key)"}},
     {"L", "consumer-latency", same},
     {"ll", "leader-locator", same},
     {"m", "ptxsize", same},
     {"M", "framemax", same},
     {"ma", "max-age", same},
     {"mf", "metrics-format", same},
     {"mh", "metrics-help", {refused, "PerfTest's Micrometer options; beamlab's metrics are "
                                      "--metrics-port and --metrics-bind (beamlab help amqp)"}},
     {"mlb", "max-length-bytes", same},
     {"mp", "message-properties", same},
     {"ms", "use-millis", same},
     {"n", "ctxsize", same},
     {"na", "nack", same},
     {"niot", "nio-threads", {no_effect, Threads}},
     {"niotp", "nio-thread-pool", {no_effect, Threads}},
     {"o", "output-file", {differently, "same CSV columns, written atomically when the run ends "
                                        "(also after an interruption), not line by line"}},
     {"o2gr", "oauth2-grant-type", {refused, OAuth}},
     {"o2id", "oauth2-client-id", {refused, OAuth}},
     {"o2p", "oauth2-parameters", {refused, OAuth}},
     {"o2sec", "oauth2-client-secret", {refused, OAuth}},
     {"o2uri", "oauth2-token-endpoint", {refused, OAuth}},
     {"p", "predeclared", same},
     {"P", "publishing-interval", same},
     {"pi", "polling-interval", same},
     {"po", "polling", same},
     {"prsd", "producer-random-start-delay", same},
     {"pst", "producer-scheduler-threads", {no_effect, Threads}},
     {"q", "qos", same},
     {"Q", "global-qos", same},
     {"qa", "queue-args", same},
     {"qf", "queue-file", same},
     {"qp", "queue-pattern", same},
     {"qpf", "queue-pattern-from", same},
     {"qpt", "queue-pattern-to", same},
     {"qq", "quorum-queue", same},
     {"r", "rate", same},
     {"R", "consumer-rate", same},
     {"re", "requeue", same},
     {"rkcs", "routing-key-cache-size", same},
     {"S", "slow-start", same},
     {"s", "size", same},
     {"sb", "skip-binding-queues", same},
     {"sco", "stream-consumer-offset", same},
     {"se", "sasl-external", same},
     {"smssb", "stream-max-segment-size-bytes", same},
     {"sni", "server-name-indication", same},
     {"sq", "stream-queue", same},
     {"sst", "servers-startup-timeout", same},
     {"st", "shutdown-timeout", {differently, "bounds the whole end of the run (stop, drain, "
                                              "close), not only closing the connections"}},
     {"sul", "servers-up-limit", same},
     {"t", "type", same},
     {"T", "body-content-type", same},
     {"tnd", "tcp-no-delay", same},
     {"trbs", "tcp-receive-buffer-size", same},
     {"tsbs", "tcp-send-buffer-size", same},
     {"u", "queue", {differently, "several queues (a,b) are used in sequence, producer and "
                                  "consumer i on queue i (PerfTest binds every queue with one "
                                  "key, so each message reaches all of them)"}},
     {"udsc", "use-default-ssl-context", {differently, "the system's trust store (beamlab "
                                                       "verifies the broker by default)"}},
     {"v", "version", {differently, "-v is beamlab's verbose telemetry; --version prints "
                                    "beamlab's version"}},
     {none, "verbose", {differently, "beamlab's --verbose prints the VM's telemetry, not each "
                                     "message"}},
     {none, "verbose-full", {refused, "per-message logging is not offered"}},
     {"vl", "variable-latency", same},
     {"vr", "variable-rate", same},
     {"vs", "variable-size", same},
     {"x", "producers", same},
     {"X", "producer-channel-count", same},
     {"y", "consumers", same},
     {"Y", "consumer-channel-count", same},
     {"z", "time", same}].

%% @doc The command's options: PerfTest's (same letters, same meaning) plus
%% beamlab's `--closed-loop', `--nodes', `--cookie', `--reconnect', the TLS
%% files and the common ones; PerfTest's options without an equivalent are
%% parsed (hidden from the help) to say so. The load's bounded options are
%% the kind's (`beamlab_experiment_amqp:options/0'): their flags, defaults,
%% help and bounds (the same limit and reason for `-x 200000' as for
%% `producers => 200000').
-spec options() -> [beamlab_cli_args:option()].
options() ->
    flag_options() ++ hidden_options() ++ beamlab_cli_args:common_options().

flag_options() ->
    Bool = {enum, [true, false]},
    Flags = beamlab_schema:flags(beamlab_experiment_amqp:options()),
    Kind = fun(Name) -> hd([F || #{name := N} = F <- Flags, N =:= Name]) end,
    [Kind(uri),
     Kind(uris),
     Kind(producers),
     Kind(consumers),
     Kind(producer_channels),
     Kind(consumer_channels),
     Kind(queue),
     Kind(queue_file),
     Kind(exchange),
     #{name => exchange_type, short => "t", long => "type",
       type => {enum, [direct, fanout, topic, headers]}, default => direct, metavar => "TYPE",
       help => "exchange type"},
     Kind(routing_key),
     #{name => random_routing_key, short => "K", long => "random-routing-key", type => boolean,
       default => false, help => "a random routing key for each message"},
     Kind(routing_key_cache),
     #{name => skip_binding, short => "sb", long => "skip-binding-queues", type => boolean,
       default => false, help => "don't bind queues to the exchange"},
     #{name => flag, short => "f", long => "flag", type => {enum, [persistent, mandatory]},
       multi => true, metavar => "FLAG", help => "message flag, repeatable: persistent, mandatory"},
     Kind(prefetch),
     Kind(global_qos),
     Kind(confirm),
     Kind(confirm_timeout),
     Kind(autoack),
     Kind(multi_ack),
     #{name => nack, short => "na", long => "nack", type => boolean, default => false,
       help => "nack the messages instead of acknowledging them"},
     #{name => requeue, short => "re", long => "requeue", type => Bool, metavar => "true|false",
       help => "whether nacked messages are requeued (default: true)"},
     Kind(rate),
     Kind(variable_rate),
     Kind(publishing_interval),
     Kind(producer_start_delay),
     Kind(consumer_rate),
     Kind(consumer_latency),
     Kind(variable_latency),
     Kind(body_size),
     Kind(variable_size),
     Kind(body_files),
     Kind(body_content_type),
     Kind(json_body),
     Kind(body_field_count),
     Kind(body_count),
     Kind(message_properties),
     Kind(duration),
     Kind(pmessages),
     Kind(cmessages),
     Kind(producer_tx),
     Kind(consumer_tx),
     Kind(queue_pattern),
     #{name => queue_pattern_from, short => "qpf", long => "queue-pattern-from", type => integer,
       metavar => "N", help => "first number of the queue pattern"},
     #{name => queue_pattern_to, short => "qpt", long => "queue-pattern-to", type => integer,
       metavar => "N", help => "last number of the queue pattern"},
     Kind(predeclared),
     Kind(quorum),
     Kind(stream),
     Kind(queue_args),
     Kind(max_length_bytes),
     Kind(max_age),
     Kind(stream_segment_bytes),
     #{name => leader_locator, short => "ll", long => "leader-locator",
       type => {enum, ['client-local', balanced]}, metavar => "STRATEGY",
       help => "leader locator of created quorum queues and streams"},
     #{name => auto_delete, short => "ad", long => "auto-delete", type => Bool,
       metavar => "true|false", help => "declare queues auto-delete (false: leave them on the "
                                        "broker; default: plain, deleted by beamlab at the end)"},
     #{name => exclusive, short => "E", long => "exclusive", type => boolean, default => false,
       help => "each consumer declares its own exclusive queue"},
     Kind(consumer_args),
     Kind(stream_offset),
     #{name => slow_start, short => "S", long => "slow-start", type => boolean, default => false,
       help => "start consumers one second apart"},
     Kind(consumer_start_delay),
     #{name => exit_when, short => "ew", long => "exit-when", type => {enum, [empty, idle]},
       metavar => "empty|idle", help => "end when the consumers' queues are empty, or the "
                                        "consumers idle, for 1 second"},
     #{name => polling, short => "po", long => "polling", type => boolean, default => false,
       help => "consume with basic.get"},
     Kind(polling_interval),
     Kind(interval),
     Kind(id),
     Kind(output_file),
     #{name => use_millis, short => "ms", long => "use-millis", type => boolean, default => false,
       help => "print latency in milliseconds"},
     #{name => metrics_format, short => "mf", long => "metrics-format",
       type => {enum, [default, compact]}, default => default, metavar => "FORMAT",
       help => "interval lines: PerfTest's default or compact format"},
     Kind(heartbeat),
     Kind(frame_max),
     #{name => tcp_no_delay, short => "tnd", long => "tcp-no-delay", type => Bool,
       metavar => "true|false", help => "TCP_NODELAY (default: true)"},
     #{name => tcp_send_buffer, short => "tsbs", long => "tcp-send-buffer-size",
       type => pos_integer, max => 268435456, max_why => "256 MiB", metavar => "BYTES", help => "TCP send buffer"},
     #{name => tcp_receive_buffer, short => "trbs", long => "tcp-receive-buffer-size",
       type => pos_integer, max => 268435456, max_why => "256 MiB", metavar => "BYTES", help => "TCP receive buffer"},
     Kind(use_default_ssl_context),
     Kind(tls_ca_file),
     Kind(tls_cert_file),
     Kind(tls_key_file),
     Kind(tls_insecure),
     Kind(sni),
     Kind(sasl),
     Kind(recovery_interval),
     #{name => disable_recovery, short => "dcr", long => "disable-connection-recovery",
       type => boolean, default => false, help => "stop the run on a lost connection "
                                                  "(beamlab's default; see --reconnect)"},
     Kind(startup_timeout),
     #{name => servers_up, short => "sul", long => "servers-up-limit", type => pos_integer,
       metavar => "N", help => "with -sst: how many of the --uris must answer"},
     Kind(shutdown_timeout),
     #{name => reconnect, long => "reconnect", type => boolean, default => false,
       help => "reopen lost connections and carry on instead of stopping the run"},
     #{name => connection_rate, long => "connection-rate", type => pos_integer, metavar => "N",
       help => "open at most N connections per second (and VM), so that thousands of "
               "connections do not storm the broker (default: all at once)"},
     Kind(closed_loop),
     Kind(nodes),
     %% issue 13: --name NAME@HOST and --cookie (beamlab_cli_dist)
     #{name => cookie, long => "cookie", type => cookie, metavar => "COOKIE",
       help => "distribution cookie for --nodes with named nodes"},
     #{name => version, long => "version", type => boolean, default => false,
       help => "print beamlab's version"},
     %% issue 12: the broker's own telemetry (beamlab_experiment_watch)
     Kind(watch),
     hd([O || #{name := dist_name} = O <- beamlab_cli_dist:options()])]
        %% #24: the rates and latencies for Prometheus, under PerfTest's names.
        ++ beamlab_cli_metrics:options().

%% PerfTest's options that beamlab does not take as they are: parsed so
%% that a script passing them gets one clear line.
hidden_options() ->
    Known = [L || #{long := L} <- flag_options() ++ beamlab_cli_args:common_options()],
    Takes = ["ctp", "ei", "em", "hst", "isn", "ist", "niot", "niotp", "o2gr", "o2id",
             "o2p", "o2sec", "o2uri", "pst"],
    [maps:merge(#{name => list_to_atom("perftest:" ++ Long), long => Long, hidden => true,
                  type => case lists:member(S, Takes) of
                              true -> string;
                              false -> boolean
                          end, multi => true},
                case S of none -> #{}; _ -> #{short => S} end)
     || {S, Long, {Kind, _}} <- perftest_options(), Kind =/= differently,
        not lists:member(Long, Known)].

%% @doc Examples for `beamlab help amqp'.
-spec usage() -> iodata().
usage() ->
    "Examples:\n"
    "  beamlab amqp -h amqp://guest:guest@127.0.0.1:5672/%2F -x 1 -y 1 -u q1 -f mandatory -q 300 -c 100 -z 30\n"
    "  beamlab amqp -x 10 -y 20 -f mandatory -q 300 -c 100 --queue-pattern 'perf-test-%d' \\\n"
    "               --queue-pattern-from 1 --queue-pattern-to 10 -z 60\n"
    "  beamlab amqp -x 100 -X 100 -y 1 -P 5 -s 400 -z 60     # 10,000 publishers, one message every 5 s\n"
    "  beamlab amqp -vr 1000:10 -vr 5000:10 -vs 100:10 -vs 4000:10 -c 100 -z 60\n"
    "  beamlab amqp -qq -u q1 -c 100 -q 100 -z 30            # a quorum queue\n"
    "  beamlab amqp -sq -u s1 -c 100 -z 30                   # a stream, over AMQP 0-9-1\n"
    "  beamlab amqp -h amqps://broker.example:5671/%2F --tls-ca-file ca.pem -z 30\n"
    "  beamlab amqp -r 1000 -z 600 --metrics-port 9464   # rates and latencies for Prometheus\n"
    "  beamlab amqp --closed-loop 500 -z 60              # the NUMA stress test\n"
    "  beamlab amqp -x 4 -y 4 -r 1000 --nodes 2 -z 30    # 2 VMs, 1000 msg/s per producer\n"
    "  beamlab amqp -h amqp://guest:guest@10.0.0.10:5672/%2F --queue-pattern 'q-%d' \\\n"
    "               --queue-pattern-from 1 --queue-pattern-to 4 -x 4 -y 4 -z 30 \\\n"
    "               --nodes gen1@10.0.0.11,gen2@10.0.0.12 --cookie C --name ctl@10.0.0.5\n"
    "               # generators started with: beamlab node --name gen1@10.0.0.11 --cookie C\n"
    "Output: one PerfTest line per interval, PerfTest's summary, the accounting\n"
    "(sent = received + returned + nacked + queued), then beamlab's table.\n"
    "Every PerfTest 2.22.1 option is accepted or refused with a reason: see docs/amqp.md.\n".

%% @doc `-h' is PerfTest's broker URI; help is `--help' (or PerfTest's `-?').
-spec help_flags() -> [string()].
help_flags() ->
    ["--help", "-?"].

%% @doc The files read (bodies, queue names, TLS files) and written (`-o').
-spec files(beamlab_cli_args:parsed()) -> #{inputs := [beamlab_runtime_file:named()],
                                             outputs := [beamlab_runtime_file:named()]}.
files(Parsed) ->
    G = fun(K) -> beamlab_cli_args:get(K, Parsed) end,
    Bodies = case G(body_files) of
                 undefined -> [];
                 B -> [{"-B", string:trim(F)} || F <- string:split(B, ",", all)]
             end,
    Given = fun(K, Flag) -> [{Flag, F} || F <- [G(K)], F =/= undefined] end,
    #{inputs => Bodies ++ Given(queue_file, "-qf") ++ Given(tls_ca_file, "--tls-ca-file")
                    ++ Given(tls_cert_file, "--tls-cert-file") ++ Given(tls_key_file, "--tls-key-file"),
      outputs => Given(output_file, "-o")}.

%% @doc Runs the command; the exit code is non-zero when the run could not
%% start or ended early (broker gone, node down).
-spec run(beamlab_cli_args:parsed()) -> beamlab_command:outcome().
run(Parsed) ->
    ?CATCHING(run_parsed(Parsed)).

run_parsed(#{opts := #{version := true}}) ->
    io:format("beamlab ~ts (amqp: PerfTest 2.22.1's options; Erlang/OTP ~ts)~n",
              [beamlab_result:tool_version(), erlang:system_info(otp_release)]),
    {0, none};
run_parsed(Parsed) ->
    %% PerfTest's lines go to stdout in text mode; with a machine format
    %% stdout carries only the document.
    Out = case beamlab_cli_output:format(Parsed) of
              text -> standard_io;
              _ -> standard_error
          end,
    Sink = fun({amqp, Bin}) -> beamlab_amqp_live:write_utf8(Out, Bin);
              ({note, Line}) -> io:format(standard_error, "beamlab: ~ts~n", [Line]);
              (_) -> ok
           end,
    Exp = describe(Parsed),
    Csv = beamlab_cli_args:get(output_file, Parsed),
    Before = csv_file(Csv),
    Outcome = ?VALUE(beamlab_cli_experiment:run(Exp#{sink => Sink})),
    csv_written(Csv, Before),
    Outcome.

%% -o is written at the end of the run under the output-path policy, as
%% `--save' and `report -o' are: a file it replaced is said, like theirs.
%% (The write replaces the file by a new one, so a new inode means it was
%% written.)
csv_file(undefined) -> none;
csv_file(F) ->
    case file:read_file_info(beamlab_input_text:native_name(F)) of
        {ok, #file_info{type = regular, inode = Ino}} -> {exists, Ino};
        {ok, _} -> other;
        {error, _} -> new
    end.

csv_written(undefined, _) -> ok;
csv_written(F, Before) ->
    case {Before, csv_file(F)} of
        {new, {exists, _}} -> io:format(standard_error, "wrote ~ts~n", [F]);
        {{exists, Old}, {exists, New}} when New =/= Old ->
            io:format(standard_error, "wrote ~ts~ts~n", [F, beamlab_cli_output:written_note({ok, exists})]);
        _ -> ok
    end.

%% @doc The experiment: the load's configuration, where it runs, the
%% broker node to watch beside it (`--watch'), and this VM's telemetry
%% (`-v': the detectors' findings on it, scheduler trouble, a busy
%% machine, noisy intervals, join the result).
-spec experiment(beamlab_cli_args:parsed()) ->
          {ok, beamlab_experiment:experiment()} | {error, beamlab_cli_error:reason()}.
experiment(Parsed) ->
    ?CATCHING({ok, describe(Parsed)}).

describe(Parsed) ->
    G = fun(K) -> beamlab_cli_args:get(K, Parsed) end,
    Cfg = config(Parsed),
    Nodes = node_list(G(nodes)),
    %% With --watch alone the cookie is the watched node's (set for it only).
    Dist = maps:from_list([{name, N} || N <- [G(dist_name)], N =/= undefined]
                          ++ [{cookie, C} || C <- [G(cookie)], C =/= undefined,
                                             G(watch) =:= undefined orelse G(nodes) =/= undefined]),
    Amqp = maps:merge(#{config => Cfg, nodes => Nodes, dist => Dist},
                      case G(watch) of
                          undefined -> #{};
                          W -> #{watch => #{node => W, cookie => G(cookie)}}
                      end),
    ?VALUE(beamlab_cli_metrics:add(Parsed, #{run => {amqp, Amqp}, command => maps:get(argv, Parsed),
                                             telemetry => case G(verbose) > 0 of true -> live; false -> none end})).

%%--------------------------------------------------------------------
%% Options to configuration

%% @doc The run configuration for `beamlab_amqp_perf:run/1' from parsed
%% options (but where it runs, `nodes', and where its lines go, `out');
%% user mistakes end in a usage error (?USAGE, caught by run/1 and experiment/1).
-spec config(beamlab_cli_args:parsed()) -> beamlab_amqp_perf:options().
config(P) ->
    G = fun(Name) -> beamlab_cli_args:get(Name, P) end,
    perftest_only(P),
    _ = [?USAGE("unexpected argument '~ts' (each value needs its own option, "
                "e.g. -f persistent -f mandatory)", [A])
         || A <- lists:sublist(maps:get(args, P), 1)],
    %% The values given, as the kind's schema names them: the same check
    %% (and line, naming the flag) as the library's.
    Given = ?VALUE(beamlab_cli_schema:given(beamlab_experiment_amqp:options(), P)),
    Uri = G(uri),
    Uris = maps:get(uris, Given, []),
    Pattern = pattern(G(queue_pattern), G(queue_pattern_from), G(queue_pattern_to)),
    %% (-u a,b: each name checked as the kind's `queue'; --queue-file is
    %% the kind's `queue_file', checked and read by it)
    Named = queues(G(queue)),
    _ = [refuse(beamlab_experiment_amqp:check_options(#{queue => Q})) || length(Named) > 1, Q <- Named],
    Texts = #{uri => Uri, uris => Uris, queue_pattern => Pattern, id => G(id),
              nodes => node_value(G(nodes)),
              queue => case Named of [Q1] -> Q1; _ -> undefined end,
              queues => case Named of
                            [_, _ | _] -> Named;
                            _ -> undefined
                        end},
    %% (the TLS rules among them: the kind's, said before its files are read)
    refuse(beamlab_experiment_amqp:check_options(maps:merge(Given, Texts))),
    %% PerfTest's text forms, the -B files and --json-body's bodies as the
    %% load takes them, as the library's are made
    Loaded = case beamlab_experiment_amqp:config_values(Given) of
                 {ok, Values} -> Values;
                 {error, LoadErr} -> ?ABORT(beamlab_cli_schema:refusal(LoadErr))
             end,
    Load = fun(Key, Default) -> case maps:get(Key, Loaded, undefined) of undefined -> Default; Value -> Value end end,
    %% (-i, -z, -r, -R: PerfTest's numbers, read by the kind's `parse')
    Num = fun(Key) -> maps:get(Key, Given, G(Key)) end,
    Queues = case {Named, beamlab_experiment_amqp:queue_file(G(queue_file))} of
                 {[], {ok, FromFile}} -> FromFile;
                 {[], {error, Why}} -> ?USAGE("-qf: ~ts", [Why]);
                 _ -> Named
             end,
    Flags = case G(flag) of
                undefined -> [];
                L -> L
            end,
    Stream = G(stream),
    Type = atom_to_binary(G(exchange_type)),
    Exchange = case G(exchange) of
                   undefined -> Type;                 % PerfTest: named after its type
                   "amq.default" -> <<>>;
                   E -> bin(E)
               end,
    {Single, Several} = case Queues of
                            [Q] -> {Q, undefined};
                            _ -> {undefined, Queues}
                        end,
    Cfg = maps:merge(
      #{uri => list_to_binary(Uri), uris => [list_to_binary(U) || U <- Uris],
        producers => G(producers), consumers => G(consumers),
        producer_channels => G(producer_channels), consumer_channels => G(consumer_channels),
        queue => Single, queues => Several, queue_pattern => Pattern,
        exchange => Exchange, exchange_type => Type,
        routing_key => bin(G(routing_key)), random_routing_key => G(random_routing_key),
        routing_key_cache => G(routing_key_cache), skip_binding => G(skip_binding),
        persistent => lists:member(persistent, Flags) orelse G(quorum) orelse Stream,
        mandatory => lists:member(mandatory, Flags),
        prefetch => beamlab_experiment_amqp:prefetch(Stream, G(prefetch)),
        global_qos => G(global_qos),
        confirm => case G(confirm) of
                       C when is_integer(C), C > 0 -> C;
                       _ -> undefined
                   end,
        confirm_timeout => G(confirm_timeout),
        autoack => G(autoack), multi_ack => G(multi_ack), nack => G(nack),
        requeue => G(requeue) =/= false,
        rate => case Num(rate) of undefined -> infinity; Rate -> Rate end,
        variable_rate => Load(variable_rate, undefined),
        publishing_interval => Load(publishing_interval, undefined),
        producer_start_delay => G(producer_start_delay),
        consumer_rate => case Num(consumer_rate) of
                             undefined -> infinity;
                             R when R =< 0 -> infinity;     % PerfTest: no limit
                             R -> R
                         end,
        consumer_latency => G(consumer_latency),
        variable_latency => Load(variable_latency, undefined),
        body_size => G(body_size),
        variable_size => Load(variable_size, undefined),
        body => Load(body, stamp),
        message_properties => Load(message_properties, #{}),
        duration => Num(duration), pmessages => G(pmessages), cmessages => G(cmessages),
        producer_tx => G(producer_tx), consumer_tx => G(consumer_tx),
        predeclared => G(predeclared), quorum => G(quorum), stream => Stream,
        queue_args => Load(queue_args, []),
        max_length_bytes => Load(max_length_bytes, undefined),
        max_age => Load(max_age, undefined),
        stream_segment_bytes => Load(stream_segment_bytes, undefined),
        leader_locator => case G(leader_locator) of undefined -> undefined; LL -> atom_to_binary(LL) end,
        auto_delete => G(auto_delete), exclusive => G(exclusive),
        consumer_args => Load(consumer_args, []),
        stream_offset => Load(stream_offset, undefined),
        slow_start => G(slow_start), consumer_start_delay => G(consumer_start_delay),
        exit_when => case G(exit_when) of undefined -> never; W -> W end,
        polling => G(polling), polling_interval => G(polling_interval),
        interval => Num(interval), reconnect => G(reconnect),
        closed_loop => case G(closed_loop) of undefined -> 0; N -> N end,
        connection_rate => case G(connection_rate) of undefined -> infinity; CR -> CR end,
        id => bin(G(id)),
        output_file => Load(output_file, undefined),
        use_millis => G(use_millis), metrics_format => G(metrics_format),
        heartbeat => G(heartbeat), frame_max => G(frame_max),
        tcp => maps:from_list([{K, V} || {K, V} <- [{nodelay, G(tcp_no_delay)},
                                                     {sndbuf, G(tcp_send_buffer)},
                                                     {recbuf, G(tcp_receive_buffer)}],
                                         V =/= undefined]),
        recovery_interval => Load(recovery_interval, {1000, 1000}),
        startup_timeout => G(startup_timeout), servers_up => G(servers_up),
        shutdown_timeout => G(shutdown_timeout)},
      tls(Given)),
    %% A run that cannot work (-A with -a, -qq with -sq, -p without its
    %% queues, nothing to run, -D never reached): the kind's check, as the
    %% library's.
    refuse(beamlab_experiment_amqp:check_config(Cfg)),
    Cfg.

refuse(ok) -> ok;
refuse({error, R}) -> ?USAGE("~ts", [beamlab_schema:format_error(R, flag)]).

%% PerfTest's options without an equivalent: refused (usage error) or,
%% for Java thread settings, accepted with a note.
perftest_only(#{given := Given}) ->
    Audit = maps:from_list([{L, A} || {_, L, A} <- perftest_options()]),
    lists:foreach(
      fun(Name) ->
              case atom_to_list(Name) of
                  "perftest:" ++ Long -> perftest_only(Long, maps:get(Long, Audit));
                  _ -> ok
              end
      end, lists:usort(Given)).

perftest_only(Long, Audit) ->
              case Audit of
                  {refused, Why} ->
                      ?USAGE("--~ts is not supported: ~ts", [Long, Why]);
                  {no_effect, Why} ->
                      io:format(standard_error, "beamlab: --~ts has no effect: ~ts~n", [Long, Why])
              end.

bin(undefined) -> undefined;
bin(S) -> unicode:characters_to_binary(S).

pattern(undefined, undefined, undefined) ->
    undefined;
pattern(undefined, _, _) ->
    ?USAGE("--queue-pattern-from/--queue-pattern-to need --queue-pattern", []);
pattern(P, From, To) when is_integer(From), is_integer(To) ->
    %% (checked as the library's triple: the kind's check_options/1)
    {unicode:characters_to_binary(P), From, To};
pattern(_P, _, _) ->
    ?USAGE("--queue-pattern needs --queue-pattern-from and --queue-pattern-to", []).

%% -u a,b (PerfTest's comma list): [] when not given.
queues(undefined) ->
    [];
queues(Names) ->
    [bin(string:trim(N)) || N <- string:split(Names, ",", all)].

%% The TLS options: the kind's `tls' map of the flags given (its files
%% checked by the kind: regular, PEM, the key matching its certificate,
%% #34), verifying the broker unless --tls-insecure; SASL EXTERNAL.
tls(Given) ->
    #{tls => maps:merge(#{verify => verify_peer}, maps:get(tls, Given, #{})),
      sasl => maps:get(sasl, Given, plain)}.

%% --nodes N or a@h,b@h: the kind's `nodes' (checked there).
node_value(undefined) ->
    undefined;
node_value(S) ->
    case string:to_integer(string:trim(S)) of
        {N, ""} -> N;
        _ -> [string:trim(X) || X <- string:lexemes(S, ",")]
    end.

node_list(undefined) ->
    this;
node_list(S) ->
    case node_value(S) of
        N when is_integer(N) -> {peers, N};
        Names -> [list_to_atom(X) || X <- Names]
    end.

%% @doc The kind of experiment the command runs.
-spec kind() -> amqp.
kind() -> amqp.
