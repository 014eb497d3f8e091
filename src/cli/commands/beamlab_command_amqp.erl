%%% @doc `beamlab amqp': load-test a RabbitMQ broker with PerfTest's options
%%% and output format (see `beamlab_amqp_perf').
-module(beamlab_command_amqp).
-behaviour(beamlab_command).

-export([summary/0, options/0, usage/0, run/1, experiment/1, help_flags/0, config/1]).

%% @doc One line for `beamlab help'.
-spec summary() -> string().
summary() ->
    "load-test RabbitMQ (AMQP 0-9-1) with PerfTest's options and output".

%% @doc The command's options: PerfTest's (same letters, same meaning) plus
%% beamlab's `--closed-loop', `--nodes', `--cookie', `--reconnect'.
-spec options() -> [beamlab_cli_args:option()].
options() ->
    [#{name => uri, short => "h", long => "uri", type => string,
       default => "amqp://guest:guest@localhost:5672/%2F", metavar => "URI",
       help => "broker URI amqp://user:pass@host:port/vhost (-h is the URI, as in PerfTest)"},
     #{name => producers, short => "x", long => "producers", type => non_neg_integer, default => 1,
       metavar => "N", help => "producer count (one connection each)"},
     #{name => consumers, short => "y", long => "consumers", type => non_neg_integer, default => 1,
       metavar => "N", help => "consumer count (one connection each)"},
     #{name => producer_channels, short => "X", long => "producer-channel-count",
       type => pos_integer, default => 1, metavar => "N", help => "channels per producer"},
     #{name => consumer_channels, short => "Y", long => "consumer-channel-count",
       type => pos_integer, default => 1, metavar => "N", help => "channels per consumer"},
     #{name => queue, short => "u", long => "queue", type => string, metavar => "NAME",
       help => "queue name (default: one queue named after the test id, deleted at the end)"},
     #{name => exchange, short => "e", long => "exchange", type => string, default => "direct",
       metavar => "NAME", help => "exchange name (\"\" is the default exchange)"},
     #{name => exchange_type, short => "t", long => "type",
       type => {enum, [direct, fanout, topic, headers]}, default => direct, metavar => "TYPE",
       help => "exchange type"},
     #{name => routing_key, short => "k", long => "routing-key", type => string, metavar => "KEY",
       help => "routing key (default: the queue's name, to which the queue is bound)"},
     #{name => flag, short => "f", long => "flag", type => {enum, [persistent, mandatory]},
       multi => true, metavar => "FLAG", help => "message flag, repeatable: persistent, mandatory"},
     #{name => qos, short => "q", long => "qos", type => non_neg_integer, default => 0,
       metavar => "N", help => "consumer prefetch count (0: unlimited)"},
     #{name => confirm, short => "c", long => "confirm", type => integer, metavar => "N",
       help => "publisher confirms with at most N unconfirmed messages per producer channel "
               "(0 or -1, PerfTest's default: no confirms)"},
     #{name => autoack, short => "a", long => "autoack", type => boolean, default => false,
       help => "consume without acknowledgements"},
     #{name => multi_ack, short => "A", long => "multi-ack-every", type => non_neg_integer,
       default => 0, metavar => "N", help => "acknowledge every N messages at once (multiple)"},
     #{name => rate, short => "r", long => "rate", type => pos_number, metavar => "MSG/S",
       help => "rate limit of each producer channel (default: unlimited)"},
     #{name => size, short => "s", long => "size", type => non_neg_integer, default => 12,
       metavar => "BYTES", help => "message body size (at least 12: time stamp and sequence)"},
     #{name => time, short => "z", long => "time", type => pos_number, metavar => "SECONDS",
       help => "run duration (default: until -C/-D counts are reached or Ctrl-C)"},
     #{name => pmessages, short => "C", long => "pmessages", type => non_neg_integer, default => 0,
       metavar => "N", help => "messages each producer channel publishes, then stops (0: no limit)"},
     #{name => cmessages, short => "D", long => "cmessages", type => non_neg_integer, default => 0,
       metavar => "N", help => "messages each consumer channel receives, then stops (0: no limit)"},
     #{name => queue_pattern, short => "qp", long => "queue-pattern", type => string,
       metavar => "PATTERN", help => "queue name pattern, e.g. 'perf-test-%d'"},
     #{name => queue_pattern_from, short => "qpf", long => "queue-pattern-from", type => integer,
       metavar => "N", help => "first number of the queue pattern"},
     #{name => queue_pattern_to, short => "qpt", long => "queue-pattern-to", type => integer,
       metavar => "N", help => "last number of the queue pattern"},
     #{name => predeclared, short => "p", long => "predeclared", type => boolean, default => false,
       help => "use existing queues as they are (no declaration, no binding)"},
     #{name => quorum, short => "qq", long => "quorum-queue", type => boolean, default => false,
       help => "declare quorum queues"},
     #{name => interval, short => "i", long => "interval", type => pos_number, default => 1,
       metavar => "SECONDS", help => "reporting interval"},
     #{name => id, short => "d", long => "id", type => string, metavar => "ID",
       help => "test id printed on every line (default: test-HHMMSS-mmm)"},
     #{name => reconnect, long => "reconnect", type => boolean, default => false,
       help => "reopen lost connections and carry on instead of stopping the run"},
     #{name => closed_loop, long => "closed-loop", type => pos_integer, metavar => "N",
       help => "N channels, each with its own queue, publishing the next message when the "
               "previous one is delivered (ignores -x/-y/-u/-r)"},
     #{name => nodes, long => "nodes", type => string, metavar => "N|NODES",
       help => "spread the load over N VMs (this one and N-1 started peers) or over the "
               "named nodes a@host,b@host"},
     %% issue 13: --name NAME@HOST and --cookie (beamlab_cli_dist)
     #{name => cookie, long => "cookie", type => cookie, metavar => "COOKIE",
       help => "distribution cookie for --nodes with named nodes"},
     %% issue 12: the broker's own telemetry (beamlab_experiment_watch)
     #{name => watch, long => "watch", type => string, metavar => "NODE",
       help => "record the broker node's telemetry (schedulers, memory, top processes) "
               "beside the load, over distribution (--cookie gives its cookie)"},
     hd([O || #{name := dist_name} = O <- beamlab_cli_dist:options()])]
        ++ beamlab_cli_args:common_options().

%% @doc Examples for `beamlab help amqp'.
-spec usage() -> iodata().
usage() ->
    "Examples:\n"
    "  beamlab amqp -h amqp://guest:guest@127.0.0.1:5672/%2F -x 1 -y 1 -u q1 -f mandatory -q 300 -c 100 -z 30\n"
    "  beamlab amqp -x 10 -y 20 -f mandatory -q 300 -c 100 --queue-pattern 'perf-test-%d' \\\n"
    "               --queue-pattern-from 1 --queue-pattern-to 10 -z 60\n"
    "  beamlab amqp --closed-loop 500 -z 60              # the NUMA stress test\n"
    "  beamlab amqp -x 4 -y 4 -r 1000 --nodes 2 -z 30    # 2 VMs, 1000 msg/s per producer\n"
    "  beamlab amqp -h amqp://guest:guest@10.0.0.10:5672/%2F --queue-pattern 'q-%d' \\\n"
    "               --queue-pattern-from 1 --queue-pattern-to 4 -x 4 -y 4 -z 30 \\\n"
    "               --nodes gen1@10.0.0.11,gen2@10.0.0.12 --cookie C --name ctl@10.0.0.5\n"
    "               # generators started with: beamlab node --name gen1@10.0.0.11 --cookie C\n"
    "Output: one PerfTest line per interval, PerfTest's summary, the accounting\n"
    "(sent = received + returned + nacked + queued), then beamlab's table.\n".

%% @doc `-h' is PerfTest's broker URI; help is `--help' only.
-spec help_flags() -> [string()].
help_flags() ->
    ["--help"].

%% @doc Runs the command; the exit code is non-zero when the run could not
%% start or ended early (broker gone, node down).
-spec run(beamlab_cli_args:parsed()) -> beamlab_command:outcome().
run(Parsed) ->
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
    beamlab_cli_experiment:run((experiment(Parsed))#{sink => Sink}).

%% @doc The experiment: the load's configuration, where it runs, the
%% broker node to watch beside it (`--watch'), and this VM's telemetry
%% (`-v': the detectors' findings on it, scheduler trouble, a busy
%% machine, noisy intervals, join the result).
-spec experiment(beamlab_cli_args:parsed()) -> beamlab_experiment:experiment().
experiment(Parsed) ->
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
    #{run => {amqp, Amqp}, command => maps:get(argv, Parsed),
      telemetry => case G(verbose) > 0 of true -> live; false -> none end}.

%% @doc The run configuration for `beamlab_amqp_perf:run/1' from parsed
%% options (but where it runs, `nodes', and where its lines go, `out');
%% user mistakes end in `beamlab_cli_error:usage/2'.
-spec config(beamlab_cli_args:parsed()) -> beamlab_amqp_perf:options().
config(P) ->
    G = fun(Name) -> beamlab_cli_args:get(Name, P) end,
    Uri = G(uri),
    case beamlab_amqp_uri:parse(Uri) of
        {ok, _} -> ok;
        {error, UriErr} -> beamlab_cli_error:usage("~ts", [beamlab_amqp_uri:format_error(UriErr)])
    end,
    Flags = case G(flag) of
                undefined -> [];
                L -> L
            end,
    G(multi_ack) > 0 andalso G(autoack) =:= true andalso
        beamlab_cli_error:usage("-A (multi-ack) and -a (autoack) exclude each other", []),
    Pattern = pattern(G(queue_pattern), G(queue_pattern_from), G(queue_pattern_to)),
    Pattern =/= undefined andalso G(queue) =/= undefined andalso
        beamlab_cli_error:usage("give either -u or --queue-pattern, not both", []),
    G(predeclared) =:= true andalso Pattern =:= undefined andalso G(queue) =:= undefined
        andalso G(closed_loop) =:= undefined andalso
        beamlab_cli_error:usage("-p needs the queue(s): -u or --queue-pattern", []),
    check_work(G, Pattern),
    #{uri => list_to_binary(Uri),
      producers => G(producers), consumers => G(consumers),
      producer_channels => G(producer_channels), consumer_channels => G(consumer_channels),
      queue => bin(G(queue)), queue_pattern => Pattern,
      exchange => list_to_binary(G(exchange)), exchange_type => atom_to_binary(G(exchange_type)),
      routing_key => bin(G(routing_key)),
      persistent => lists:member(persistent, Flags), mandatory => lists:member(mandatory, Flags),
      prefetch => G(qos),
      confirm => case G(confirm) of
                     C when is_integer(C), C > 0 -> C;
                     _ -> undefined
                 end, autoack => G(autoack), multi_ack => G(multi_ack),
      rate => case G(rate) of undefined -> infinity; Rate -> Rate end,
      body_size => G(size), duration => G(time),
      pmessages => G(pmessages), cmessages => G(cmessages),
      predeclared => G(predeclared), quorum => G(quorum), interval => G(interval),
      reconnect => G(reconnect),
      closed_loop => case G(closed_loop) of undefined -> 0; N -> N end,
      id => bin(G(id))}.

%% A run that has nothing to do, or whose counts can never be reached (it
%% would wait forever without a word), is a usage error.
check_work(G, Pattern) ->
    ClosedLoop = G(closed_loop) =/= undefined,
    NP = G(producers) * G(producer_channels),
    NC = G(consumers) * G(consumer_channels),
    NP =:= 0 andalso NC =:= 0 andalso not ClosedLoop andalso
        beamlab_cli_error:usage("nothing to run: -x 0 and -y 0 (give producers, consumers "
                                "or --closed-loop)", []),
    Timed = G(time) =/= undefined,
    Shared = Pattern =:= undefined andalso G(predeclared) =:= false
        andalso G(exchange_type) =:= direct andalso G(routing_key) =:= undefined,
    D = G(cmessages),
    (not Timed andalso not ClosedLoop andalso D > 0 andalso NC > 0 andalso Shared) andalso
        case {NP, G(pmessages)} of
            {0, _} ->
                beamlab_cli_error:usage("-D ~b can never be reached: no producer (-x 0) publishes "
                                        "to the run's queue; give -z or producers",
                                        [G(cmessages)]);
            {_, C} when C > 0, NC * D > NP * C ->
                beamlab_cli_error:usage(
                  "-D ~b can never be reached: ~b consumer channel(s) would need ~b messages "
                  "but ~b producer channel(s) publish ~b in all (-C ~b) to one queue the "
                  "consumers share; lower -D, raise -C or give -z",
                  [G(cmessages), NC, NC * G(cmessages), NP, NP * C, C]);
            _ -> ok
        end.

bin(undefined) -> undefined;
bin(S) -> unicode:characters_to_binary(S).

pattern(undefined, undefined, undefined) ->
    undefined;
pattern(undefined, _, _) ->
    beamlab_cli_error:usage("--queue-pattern-from/--queue-pattern-to need --queue-pattern", []);
pattern(P, From, To) when is_integer(From), is_integer(To), From =< To ->
    case string:find(P, "%") of
        nomatch -> beamlab_cli_error:usage("--queue-pattern '~ts' has no %d", [P]);
        _ -> {list_to_binary(P), From, To}
    end;
pattern(_P, From, To) when is_integer(From), is_integer(To) ->
    beamlab_cli_error:usage("--queue-pattern-from ~b is above --queue-pattern-to ~b", [From, To]);
pattern(_P, _, _) ->
    beamlab_cli_error:usage("--queue-pattern needs --queue-pattern-from and --queue-pattern-to", []).

node_list(undefined) ->
    this;
node_list(S) ->
    case string:to_integer(S) of
        {N, ""} when N >= 1 -> {peers, N};
        {_, ""} -> beamlab_cli_error:usage("--nodes needs at least 1 node", []);
        _ ->
            Names = [string:trim(X) || X <- string:lexemes(S, ",")],
            [case string:split(X, "@") of
                 [[_ | _], [_ | _]] -> list_to_atom(X);
                 _ -> beamlab_cli_error:usage("--nodes: '~ts' is not a node name (name@host)", [X])
             end || X <- Names]
    end.
