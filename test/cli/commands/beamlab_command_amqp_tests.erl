-module(beamlab_command_amqp_tests).
-include_lib("eunit/include/eunit.hrl").

%% The load's configuration with where it runs, as the command describes
%% the experiment.
config(Argv) ->
    {ok, P} = beamlab_cli_args:parse(Argv, beamlab_command_amqp:options()),
    case beamlab_command_amqp:experiment(P#{argv => Argv}) of
        {ok, #{run := {amqp, #{config := C, nodes := N}}}} -> C#{nodes => N};
        {error, _} = Error -> Error
    end.

%% A mistake caught by the option parser (a value out of its bounds) or by
%% the command: its one line.
usage_error(Argv) ->
    case beamlab_cli_args:parse(Argv, beamlab_command_amqp:options()) of
        {error, Msg} ->
            lists:flatten(io_lib:format("~ts", [Msg]));
        {ok, _} ->
            case config(Argv) of
                {error, {usage, Msg}} -> lists:flatten(io_lib:format("~ts", [Msg]));
                Cfg -> {no_error, Cfg}
            end
    end.

defaults_test() ->
    C = config([]),
    ?assertMatch(#{producers := 1, consumers := 1, producer_channels := 1,
                   consumer_channels := 1, queue := undefined, exchange := <<"direct">>,
                   exchange_type := <<"direct">>, routing_key := undefined,
                   persistent := false, mandatory := false, prefetch := 0,
                   confirm := undefined, autoack := false, multi_ack := 0, rate := infinity,
                   body_size := 12, duration := undefined, pmessages := 0, cmessages := 0,
                   queue_pattern := undefined, predeclared := false, quorum := false,
                   interval := 1, reconnect := false, closed_loop := 0},
                 C),
    ?assertEqual(<<"amqp://guest:guest@localhost:5672/%2F">>, maps:get(uri, C)).

%% The JIT article's command line, letter for letter.
perftest_single_queue_test() ->
    C = config(["-x", "1", "-y", "1", "-u", "q1", "-f", "mandatory", "-q", "300", "-c", "100"]),
    ?assertMatch(#{producers := 1, consumers := 1, queue := <<"q1">>, mandatory := true,
                   persistent := false, prefetch := 300, confirm := 100}, C).

perftest_long_names_and_pattern_test() ->
    C = config(["--producers", "150", "--consumers", "300", "--flag", "mandatory",
                "--qos", "300", "--confirm", "100", "--queue-pattern", "perf-test-%d",
                "--queue-pattern-from", "1", "--queue-pattern-to", "100"]),
    ?assertMatch(#{producers := 150, consumers := 300, queue_pattern := {<<"perf-test-%d">>, 1, 100}},
                 C).

repeatable_flag_test() ->
    C = config(["-f", "persistent", "-f", "mandatory"]),
    ?assertMatch(#{persistent := true, mandatory := true}, C),
    ?assertMatch(#{persistent := true, mandatory := false}, config(["-f", "persistent"])),
    ?assertMatch(#{persistent := false, mandatory := true}, config(["--flag", "mandatory"])).

short_letters_test() ->
    C = config(["-h", "amqp://u:p@127.0.0.1:5673/v", "-X", "3", "-Y", "2", "-e", "ex", "-t", "fanout",
                "-k", "key", "-a", "-r", "250.5", "-s", "1000", "-z", "30", "-C", "5", "-D", "7",
                "-i", "2", "-d", "my-test", "-qq"]),
    ?assertMatch(#{uri := <<"amqp://u:p@127.0.0.1:5673/v">>, producer_channels := 3,
                   consumer_channels := 2, exchange := <<"ex">>, exchange_type := <<"fanout">>,
                   routing_key := <<"key">>, autoack := true, rate := 250.5, body_size := 1000,
                   duration := 30, pmessages := 5, cmessages := 7, interval := 2,
                   id := <<"my-test">>, quorum := true}, C).

multi_ack_and_predeclared_test() ->
    ?assertMatch(#{multi_ack := 10, predeclared := true, queue := <<"q">>},
                 config(["-A", "10", "-p", "-u", "q"])).

confirm_off_like_perftest_test() ->
    ?assertMatch(#{confirm := undefined}, config(["-c", "-1"])),
    ?assertMatch(#{confirm := undefined}, config(["-c", "0"])),
    ?assertMatch(#{confirm := 5}, config(["-c", "5"])).

closed_loop_and_nodes_test() ->
    ?assertMatch(#{closed_loop := 500}, config(["--closed-loop", "500"])),
    ?assertMatch(#{nodes := {peers, 3}}, config(["--nodes", "3"])),
    ?assertMatch(#{nodes := ['a@h', 'b@h']}, config(["--nodes", "a@h,b@h"])).

usage_errors_test() ->
    ?assertMatch("-h: malformed AMQP URI" ++ _, usage_error(["-h", "amqp://h:notaport/"])),
    ?assertMatch("-A (multi-ack) and -a" ++ _, usage_error(["-A", "5", "-a"])),
    ?assertMatch("give one of -u or -qp" ++ _,
                 usage_error(["-u", "q", "--queue-pattern", "p-%d", "--queue-pattern-from", "1",
                              "--queue-pattern-to", "2"])),
    ?assertMatch("--queue-pattern needs" ++ _, usage_error(["--queue-pattern", "p-%d"])),
    ?assertMatch("-qp: 'p' has no conversion" ++ _,
                 usage_error(["--queue-pattern", "p", "--queue-pattern-from", "1",
                              "--queue-pattern-to", "2"])),
    ?assertEqual("-qp: the first number 3 is above the last 2",
                 usage_error(["--queue-pattern", "p-%d", "--queue-pattern-from", "3",
                              "--queue-pattern-to", "2"])),
    ?assertMatch("-p needs the queue(s)" ++ _, usage_error(["-p"])),
    ?assertMatch("-qp: 'q-%f' has an unsupported conversion '%f'" ++ _,
                 usage_error(["--queue-pattern", "q-%f", "--queue-pattern-from", "1",
                              "--queue-pattern-to", "2"])),
    ?assertMatch("--nodes: 'nohost' is not a node name" ++ _, usage_error(["--nodes", "nohost"])).

bad_values_are_parse_errors_test() ->
    Opts = beamlab_command_amqp:options(),
    ?assertMatch({error, _}, beamlab_cli_args:parse(["-f", "urgent"], Opts)),
    ?assertMatch({error, _}, beamlab_cli_args:parse(["-x", "-1"], Opts)),
    ?assertMatch("invalid value 'fast' for -r" ++ _, usage_error(["-r", "fast"])),
    ?assertMatch({error, _}, beamlab_cli_args:parse(["-t", "nonsense"], Opts)).

%% The options PerfTest 2.22.1 lists in its --help (java -cp ...
%% com.rabbitmq.perf.PerfTest --help; bench/perftest-fetch.sh fetches it).
perftest_help() ->
    [{"?", "help"}, {"a", "autoack"}, {"A", "multi-ack-every"}, {"ad", "auto-delete"},
     {"b", "heartbeat"}, {"B", "body"}, {"bc", "body-count"}, {"bfc", "body-field-count"},
     {"c", "confirm"}, {"C", "pmessages"}, {"ca", "consumer-args"},
     {"cri", "connection-recovery-interval"}, {"csd", "consumer-start-delay"},
     {"ct", "confirm-timeout"}, {"ctp", "consumers-thread-pools"}, {"d", "id"}, {"D", "cmessages"},
     {"dcr", "disable-connection-recovery"}, {"e", "exchange"}, {"E", "exclusive"},
     {"ei", "expected-instances"}, {"em", "exposed-metrics"}, {"env", "environment-variables"},
     {"ew", "exit-when"}, {"f", "flag"}, {"h", "uri"}, {"H", "uris"},
     {"hst", "heartbeat-sender-threads"}, {"i", "interval"}, {"isn", "instance-sync-namespace"},
     {"ist", "instance-sync-timeout"}, {"jb", "json-body"}, {"k", "routing-key"},
     {"K", "random-routing-key"}, {"L", "consumer-latency"}, {"ll", "leader-locator"},
     {"m", "ptxsize"}, {"M", "framemax"}, {"ma", "max-age"}, {"mf", "metrics-format"},
     {"mh", "metrics-help"}, {"mlb", "max-length-bytes"}, {"mp", "message-properties"},
     {"ms", "use-millis"}, {"n", "ctxsize"}, {"na", "nack"}, {"niot", "nio-threads"},
     {"niotp", "nio-thread-pool"}, {"o", "output-file"}, {"o2gr", "oauth2-grant-type"},
     {"o2id", "oauth2-client-id"}, {"o2p", "oauth2-parameters"}, {"o2sec", "oauth2-client-secret"},
     {"o2uri", "oauth2-token-endpoint"}, {"p", "predeclared"}, {"P", "publishing-interval"},
     {"pi", "polling-interval"}, {"po", "polling"}, {"prsd", "producer-random-start-delay"},
     {"pst", "producer-scheduler-threads"}, {"q", "qos"}, {"Q", "global-qos"}, {"qa", "queue-args"},
     {"qf", "queue-file"}, {"qp", "queue-pattern"}, {"qpf", "queue-pattern-from"},
     {"qpt", "queue-pattern-to"}, {"qq", "quorum-queue"}, {"r", "rate"}, {"R", "consumer-rate"},
     {"re", "requeue"}, {"rkcs", "routing-key-cache-size"}, {"S", "slow-start"}, {"s", "size"},
     {"sb", "skip-binding-queues"}, {"sco", "stream-consumer-offset"}, {"se", "sasl-external"},
     {"smssb", "stream-max-segment-size-bytes"}, {"sni", "server-name-indication"},
     {"sq", "stream-queue"}, {"sst", "servers-startup-timeout"}, {"st", "shutdown-timeout"},
     {"sul", "servers-up-limit"}, {"t", "type"}, {"T", "body-content-type"},
     {"tnd", "tcp-no-delay"}, {"trbs", "tcp-receive-buffer-size"},
     {"tsbs", "tcp-send-buffer-size"}, {"u", "queue"}, {"udsc", "use-default-ssl-context"},
     {"v", "version"}, {none, "verbose"}, {none, "verbose-full"}, {"vl", "variable-latency"},
     {"vr", "variable-rate"}, {"vs", "variable-size"}, {"x", "producers"},
     {"X", "producer-channel-count"}, {"y", "consumers"}, {"Y", "consumer-channel-count"},
     {"z", "time"}].

%% The audit covers every option of PerfTest's --help, no more, no less.
audit_is_complete_test() ->
    Audit = beamlab_command_amqp:perftest_options(),
    ?assertEqual(101, length(perftest_help())),
    ?assertEqual(lists:sort(perftest_help()), lists:sort([{S, L} || {S, L, _} <- Audit])).

%% A valid value for each option that takes one (and what it needs).
sample(Long, Dir) ->
    File = filename:join(Dir, "f.txt"),
    ok = file:write_file(File, <<"q-one\nq-two\n">>),
    Tls = ["-h", "amqps://h/%2F"],
    case Long of
        "multi-ack-every" -> ["5"]; "auto-delete" -> ["false"]; "heartbeat" -> ["10"];
        "body" -> [File]; "body-count" -> ["10", "--json-body"];
        "body-field-count" -> ["10", "--json-body"]; "confirm" -> ["10"]; "pmessages" -> ["10"];
        "consumer-args" -> ["x-priority=10"]; "connection-recovery-interval" -> ["1-3"];
        "consumer-start-delay" -> ["2"]; "confirm-timeout" -> ["5"];
        "consumers-thread-pools" -> ["2"]; "id" -> ["my-test"]; "cmessages" -> ["10"];
        "exchange" -> ["ex"]; "expected-instances" -> ["2"]; "exposed-metrics" -> ["a=1"];
        "exit-when" -> ["idle"]; "flag" -> ["persistent"]; "uri" -> ["amqp://h/%2F"];
        "uris" -> ["amqp://a/%2F,amqp://b/%2F"]; "heartbeat-sender-threads" -> ["2"];
        "interval" -> ["2"]; "instance-sync-namespace" -> ["ns"]; "instance-sync-timeout" -> ["5"];
        "routing-key" -> ["k"]; "consumer-latency" -> ["1000"]; "leader-locator" -> ["balanced"];
        "ptxsize" -> ["10"]; "framemax" -> ["8192"]; "max-age" -> ["PT10M"];
        "metrics-format" -> ["compact"]; "max-length-bytes" -> ["1gb"];
        "message-properties" -> ["priority=5"]; "ctxsize" -> ["10"]; "nio-threads" -> ["2"];
        "nio-thread-pool" -> ["4"]; "output-file" -> [filename:join(Dir, "out.csv")];
        "oauth2-grant-type" -> ["x"]; "oauth2-client-id" -> ["x"]; "oauth2-parameters" -> ["a=1"];
        "oauth2-client-secret" -> ["x"]; "oauth2-token-endpoint" -> ["http://x"];
        "predeclared" -> ["-u", "q"]; "publishing-interval" -> ["5"]; "polling-interval" -> ["10"];
        "producer-random-start-delay" -> ["3"]; "producer-scheduler-threads" -> ["2"];
        "qos" -> ["100"]; "global-qos" -> ["100"]; "queue-args" -> ["x-max-length=10"];
        "queue-file" -> [File];
        "queue-pattern" -> ["q-%d", "--queue-pattern-from", "1", "--queue-pattern-to", "3"];
        "queue-pattern-from" -> ["1", "--queue-pattern", "q-%d", "--queue-pattern-to", "3"];
        "queue-pattern-to" -> ["3", "--queue-pattern", "q-%d", "--queue-pattern-from", "1"];
        "rate" -> ["100"]; "consumer-rate" -> ["100"]; "requeue" -> ["false"];
        "routing-key-cache-size" -> ["10"]; "size" -> ["1000"];
        "stream-consumer-offset" -> ["first"];
        %% (real PEM files: they are checked before any connection, #34)
        "sasl-external" -> {Cert, Key} = ec_cert(Dir),
                           Tls ++ ["--tls-cert-file", Cert, "--tls-key-file", Key];
        "stream-max-segment-size-bytes" -> ["100mb"]; "server-name-indication" -> ["b"] ++ Tls;
        "servers-startup-timeout" -> ["5"]; "shutdown-timeout" -> ["2"];
        "servers-up-limit" -> ["1"]; "type" -> ["fanout"]; "body-content-type" -> ["text/plain"];
        "tcp-no-delay" -> ["false"]; "tcp-receive-buffer-size" -> ["65536"];
        "tcp-send-buffer-size" -> ["65536"]; "queue" -> ["q"];
        "use-default-ssl-context" -> Tls; "variable-latency" -> ["100:5"];
        "variable-rate" -> ["100:5"]; "variable-size" -> ["100:5"]; "producers" -> ["2"];
        "producer-channel-count" -> ["2"]; "consumers" -> ["2"]; "consumer-channel-count" -> ["2"];
        "time" -> ["5"];
        _ -> []
    end.

%% Every PerfTest option: taken (same meaning, or as audited), refused
%% with one line naming it, or accepted without effect, never unknown.
every_perftest_option_test() ->
    Dir = string:trim(os:cmd("mktemp -d")),
    try
        [begin
             Flag = case Short of none -> "--" ++ Long; _ -> "-" ++ Short end,
             Argv = [Flag | sample(Long, Dir)],
             case {Long, Audit} of
                 {"help", _} ->
                     %% -? is a help flag, handled before the options.
                     ?assert(lists:member("-?", beamlab_command_amqp:help_flags()));
                 {L, _} when L =:= "version"; L =:= "verbose" ->
                     %% The dispatcher's help, run/1's version, the common -v.
                     ?assertMatch({ok, _}, beamlab_cli_args:parse(Argv, beamlab_command_amqp:options()));
                 {_, {refused, _}} ->
                     Msg = usage_error(Argv),
                     ?assertEqual({Flag, "--" ++ Long ++ " is not supported"},
                                  {Flag, lists:sublist(Msg, length(Long) + 19)});
                 _ ->
                     ?assertMatch({Flag, #{}}, {Flag, config(Argv)})
             end
         end || {Short, Long, Audit} <- beamlab_command_amqp:perftest_options()]
    after
        os:cmd("rm -rf " ++ Dir)
    end.

new_options_test() ->
    ?assertMatch(#{variable_rate := [{100, 60}, {1000, 10}], rate := infinity},
                 config(["-vr", "100:60", "--variable-rate", "1000:10"])),
    ?assertMatch(#{publishing_interval := 5.0, producer_start_delay := 30},
                 config(["-P", "5", "-prsd", "30"])),
    ?assertMatch(#{queue_args := [{<<"x-queue-type">>, <<"quorum">>}, {<<"x-max-length">>, 10}]},
                 config(["-qa", "x-queue-type=quorum", "-qa", "x-max-length=10"])),
    ?assertMatch(#{stream := true, persistent := true, prefetch := 200, max_age := 600,
                   max_length_bytes := 1000000000, stream_segment_bytes := 100000000,
                   leader_locator := <<"balanced">>, stream_offset := <<"first">>},
                 config(["-sq", "-ma", "PT10M", "-mlb", "1gb", "-smssb", "100mb", "-ll", "balanced",
                         "-sco", "first"])),
    ?assertMatch(#{quorum := true, persistent := true}, config(["-qq"])),
    ?assertMatch(#{nack := true, requeue := false}, config(["-na", "-re", "false"])),
    ?assertMatch(#{exchange := <<"fanout">>, exchange_type := <<"fanout">>}, config(["-t", "fanout"])),
    ?assertMatch(#{exchange := <<>>}, config(["-e", "amq.default"])),
    ?assertMatch(#{queues := [<<"a">>, <<"b">>], queue := undefined}, config(["-u", "a,b"])),
    ?assertMatch(#{uris := [<<"amqp://a/%2F">>, <<"amqp://b/%2F">>]},
                 config(["-H", "amqp://a/%2F, amqp://b/%2F"])),
    ?assertMatch(#{tls := #{verify := verify_none}}, config(["-h", "amqps://h", "--tls-insecure"])),
    ?assertMatch(#{tls := #{verify := verify_peer, server_name_indication := "b.example"}},
                 config(["-h", "amqps://h", "-sni", "b.example,c.example"])),
    ?assertMatch(#{use_millis := true, metrics_format := compact},
                 config(["-ms", "-mf", "compact"])),
    ?assertMatch(#{heartbeat := 0, frame_max := 0, tcp := #{nodelay := false, sndbuf := 65536}},
                 config(["-b", "0", "-M", "0", "-tnd", "false", "-tsbs", "65536"])),
    ?assertMatch(#{body := {json, 1000, 100}}, config(["-jb"])),
    ?assertMatch(#{body := {json, 7, 5}}, config(["-jb", "-bc", "5", "-bfc", "7"])),
    %% (-bc and -bfc without -jb: ignored, as PerfTest does)
    ?assertMatch(#{body := stamp}, config(["-bc", "5"])),
    ?assertMatch(#{exit_when := idle}, config(["-ew", "idle"])),
    ?assertMatch(#{interval := 2.5, duration := 1000.0}, config(["-i", "2.5", "-z", "1e3"])),
    ?assertMatch(#{message_properties := #{priority := 5, headers := [{<<"h">>, longstr, <<"v">>}]}},
                 config(["-mp", "priority=5,h=v"])).

%% Values bounded at parse time, each error naming the limit (#27).
bounds_test() ->
    ?assertMatch("invalid value '1.0e12' for -i: at most 86400 (one day)", usage_error(["-i", "1e12"])),
    ?assertMatch("invalid value '1099511627776' for -s: at most 536870912" ++ _,
                 usage_error(["-s", "1099511627776"])),
    ?assertMatch("invalid value '70000' for -q: at most 65535 (AMQP's prefetch count is 16 bits)",
                 usage_error(["-q", "70000"])),
    ?assertMatch("invalid value '70000' for -Q: at most 65535" ++ _, usage_error(["-Q", "70000"])),
    ?assertMatch("invalid value '5000' for -X: at most 2047" ++ _, usage_error(["-X", "5000"])),
    ?assertMatch("invalid value '100' for -M: 0 (the broker's) or at least 4096" ++ _,
                 usage_error(["-M", "100"])),
    ?assertMatch("invalid value '2.0e9' for -z: at most 31536000 (one year)",
                 usage_error(["-z", "2e9"])),
    ?assertMatch("invalid value '70000' for -b: at most 65535" ++ _, usage_error(["-b", "70000"])),
    ?assertMatch("invalid value '1.0e10' for -r: at most 1000000000" ++ _,
                 usage_error(["-r", "1e10"])),
    ?assertMatch("invalid value '-1' for -R: expected a number >= 0", usage_error(["-R", "-1"])),
    %% -s below 12 is taken (PerfTest sends 12 bytes), the help says so.
    ?assertMatch(#{body_size := 11}, config(["-s", "11"])),
    Help = lists:flatten(beamlab_cli_args:help(beamlab_command_amqp:options())),
    ?assertNotEqual(nomatch, string:find(Help, "smaller sizes send 12 bytes")).

%% The test id names queues: printable, bounded (#27: a newline gave a
%% broker 404).
id_test() ->
    ?assertMatch("-d: the test id must be printable" ++ _, usage_error(["-d", "a\nb"])),
    ?assertMatch("-d: the test id must be printable" ++ _, usage_error(["-d", [$a, 7]])),
    ?assertMatch("-d: the test id is 201 bytes" ++ _, usage_error(["-d", lists:duplicate(201, $x)])),
    ?assertMatch(#{id := <<"été-1"/utf8>>}, config(["-d", "été-1"])).

option_conflicts_test() ->
    ?assertMatch("use quorum queues or stream queues" ++ _, usage_error(["-qq", "-sq"])),
    ?assertMatch("-A 10 must be less than or equal to -q 5" ++ _,
                 usage_error(["-A", "10", "-q", "5"])),
    ?assertMatch("--tls-ca-file needs an amqps:// URI", usage_error(["--tls-ca-file", "ca.pem"])),
    ?assertEqual("-se logs in with the client certificate: give --tls-cert-file and --tls-key-file "
                 "(and an amqps:// URI)", usage_error(["-h", "amqps://h", "-se"])),
    %% (the URIs the load connects to: -H's when given, else -h)
    ?assertEqual("-sni needs an amqps:// URI", usage_error(["-h", "amqps://h", "-H", "amqp://a", "-sni", "b"])),
    ?assertMatch(#{tls := #{server_name_indication := "b"}}, config(["-H", "amqp://a,amqps://b", "-sni", "b"])),
    ?assertEqual("-udsc needs an amqps:// URI", usage_error(["-udsc"])),
    ?assertEqual("--tls-insecure verifies nothing: drop --tls-ca-file and -udsc, or drop --tls-insecure",
                 usage_error(["-h", "amqps://h", "--tls-insecure", "-udsc"])),
    ?assertEqual("--tls-insecure needs an amqps:// URI", usage_error(["--tls-insecure"])),
    ?assertMatch(#{sasl := plain, tls := #{verify := verify_peer}}, config(["-h", "amqps://h", "-udsc"])),
    ?assertMatch("--tls-cert-file and --tls-key-file go together",
                 usage_error(["-h", "amqps://h", "--tls-cert-file", "c.pem"])),
    ?assertMatch("give either -B or -jb, not both",
                 usage_error(["-B", "/etc/hostname", "-jb"])),
    ?assertEqual("-B: /nonexistent/x: no such file or directory", usage_error(["-B", "/nonexistent/x"])),
    ?assertMatch("-qf: /dev/null: not a regular file", usage_error(["-qf", "/dev/null"])),
    ?assertMatch("unexpected argument 'mandatory'" ++ _, usage_error(["-f", "persistent", "mandatory"])),
    ?assertMatch("-vr: Invalid variable value definition: 10" ++ _,
                 usage_error(["-vr", "10"])),
    ?assertEqual("invalid value '0.05' for -P: expected a number >= 0.1 (PerfTest's smallest)",
                 usage_error(["-P", "0.05"])),
    ?assertEqual("invalid value '4000000000' for -smssb: at most 3000000000 (a stream segment is at most 3 GB)",
                 usage_error(["-smssb", "4gb"])),
    ?assertEqual("invalid value '0' for -smssb: expected a positive integer", usage_error(["-smssb", "0"])),
    ?assertEqual("-vr: 2000000000:5: at most 1000000000 (messages per second per channel)",
                 usage_error(["-vr", "100:5", "-vr", "2000000000:5"])),
    ?assertMatch("-vs: Invalid variable value definition: 0:5." ++ _, usage_error(["-vs", "0:5"])),
    ?assertEqual("-H: an empty entry in the list (two commas in a row, or a comma at an end)",
                 usage_error(["-H", "amqp://a,,amqp://b"])),
    ?assertEqual("-mp: message property priority=300: expected an integer 0..255",
                 usage_error(["-mp", "priority=300"])),
    ?assertEqual("-qa: 'a=1,,b=2': an empty key (two commas in a row?)", usage_error(["-qa", "a=1,,b=2"])),
    ?assertMatch("-ma: 'PT0S' is not a valid duration" ++ _, usage_error(["-ma", "PT0S"])),
    ?assertEqual("-cri: must be e.g. 30 or 30-60 (seconds)", usage_error(["-cri", "x"])),
    ?assertEqual("-sco: 'sometime' is not a valid stream offset value.", usage_error(["-sco", "sometime"])),
    ?assertEqual("--watch: 'nohost' is not a node name (name@host)", usage_error(["--watch", "nohost"])),
    ?assertEqual("-s and -vs: the bodies of 3 distinct sizes add up to 1073741835 bytes, more than 1 GiB "
                 "to keep in memory at once",
                 usage_error(["-vs", "536870912:1", "-vs", "536870911:1"])).

%% docs/amqp.md's audit table has a row for every PerfTest option, with
%% the status the command gives it.
audit_table_test() ->
    {ok, Doc} = file:read_file(filename:join([beamlab_test_util:root(), "docs", "amqp.md"])),
    Rows = [R || R <- binary:split(Doc, <<"\n">>, [global]), binary:match(R, <<"| `-">>) =/= nomatch],
    [begin
         Opt = case Short of
                   none -> ["| `--", Long, "` | "];
                   _ -> ["| `-", Short, "`, `--", Long, "` | "]
               end,
         Status = case Audit of
                      same -> "same";
                      {differently, _} -> "differently";
                      {no_effect, _} -> "accepted, no effect";
                      {refused, _} -> "refused"
                  end,
         Prefix = iolist_to_binary([Opt, Status]),
         ?assertMatch({Long, [_]}, {Long, [R || R <- Rows, binary:longest_common_prefix([R, Prefix]) =:= byte_size(Prefix)]})
     end || {Short, Long, Audit} <- beamlab_command_amqp:perftest_options()].

%% A client certificate and its key (EC: made in milliseconds, where RSA
%% keys take seconds on a loaded machine), as PEM files in Dir.
ec_cert(Dir) ->
    Ec = [{key, {namedCurve, secp256r1}}],
    #{client_config := C} = public_key:pkix_test_data(#{server_chain => #{root => Ec, intermediates => [], peer => Ec},
                                                         client_chain => #{root => Ec, intermediates => [], peer => Ec}}),
    Cert = filename:join(Dir, "ec.pem"),
    Key = filename:join(Dir, "ec.key"),
    ok = file:write_file(Cert, public_key:pem_encode([{'Certificate', proplists:get_value(cert, C), not_encrypted}])),
    {KT, KD} = proplists:get_value(key, C),
    ok = file:write_file(Key, public_key:pem_encode([{KT, KD, not_encrypted}])),
    {Cert, Key}.
