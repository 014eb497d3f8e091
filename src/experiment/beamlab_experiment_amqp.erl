%%% @doc An AMQP 0-9-1 load as an experiment: PerfTest's run
%%% (`beamlab_amqp_perf'), the broker's telemetry beside it (`watch'),
%%% this VM's telemetry and the detectors' findings; PerfTest's report
%%% lines go to the sink as `{amqp, Line}'.
-module(beamlab_experiment_amqp).

-behaviour(beamlab_experiment_kind).

-include_lib("kernel/include/file.hrl").

-export([name/0, options/0, new/1, check/2, run/3, verdict/1, error_class/1, format_error/1]).
-export([check_options/1, check_config/1, check_name/2, queue_file/1, config_values/1, prefetch/2]).

%% `config' is the load generator's (`beamlab_amqp_perf:options()', without
%% `out' and `nodes'); `nodes' where the load runs: this VM, N VMs (this
%% one and N-1 started peers) or named nodes; `watch' the broker's node;
%% `dist' names this VM for named nodes on other hosts.
-type amqp() :: #{config := beamlab_amqp_perf:options(),
                  nodes => this | {peers, pos_integer()} | [node()],
                  watch => #{node := string(), cookie => string() | undefined},
                  dist => beamlab_experiment:dist()}.
-type error_reason() :: {option, beamlab_schema:error_reason()}
                      | {watch, beamlab_experiment_watch:error_reason()}
                      | {dist, beamlab_experiment_dist:error_reason()}
                      | term().
-export_type([amqp/0, error_reason/0]).

%% @doc The kind's name: `amqp'.
-spec name() -> amqp.
name() -> amqp.

%% @doc The options of an AMQP load: the load generator's
%% (`beamlab_amqp_config:defaults/0' but `out' and `nodes'), `nodes',
%% `watch'. Numbers are bounded, each with the reason for its limit
%% (#27); texts are checked (a URI parses, a name fits AMQP's 255 bytes,
%% a queue pattern has its number's conversion); the flag of each is
%% PerfTest's, and the command line takes the bounds and checks from
%% here.
-spec options() -> [beamlab_schema:option()].
options() ->
    Bounded = declared(),
    Names = [N || #{name := N} <- Bounded],
    Bounded ++ [#{name => K} || K <- lists:sort(maps:keys(config_defaults())) ++ [watch],
                                not lists:member(K, Names)].

%% The queues are named by a list or a pattern, not both.
-define(ONE_WAY, "give one of ~ts or ~ts: the queues are named one way").
-define(MAX_COUNT, 100000).             % producers, consumers, closed-loop channels
-define(MAX_CHANNELS, 2047).            % the client's channel_max
-define(MAX_BODY, 536870912).           % RabbitMQ's largest message (512 MiB)
-define(MAX_SECONDS, 31536000).         % one year
-define(MAX_RATE, 1000000000).
-define(MAX_LATENCY, 60000000).         % one minute per message, as -L
%% What one run holds in memory at once for its bodies (#34): every -B
%% file, the paddings of every -s/-vs size (one shared binary per size).
-define(MAX_HELD, 1073741824).          % 1 GiB

%% The options checked, in the order of the checks.
declared() ->
    bounded() ++ texts() ++ forms().

%% The options of text (URIs, names, a pattern, the test id), after the
%% numbers (the command line reads every number before it turns these
%% flags' text into the values the library takes, then checks them here:
%% the order here is the order of the checks, the same for both fronts).
texts() ->
    Undef = {enum, [undefined]},
    [#{name => uri, short => "h", long => "uri", type => string,
       default => "amqp://guest:guest@localhost:5672/%2F", metavar => "URI",
       check => fun check_uri/1,
       help => "broker URI amqp://user:pass@host:port/vhost or amqps:// (TLS); -h is the URI, "
               "as in PerfTest"},
     #{name => uris, short => "H", long => "uris", type => {list, string}, cli_type => string,
       metavar => "URI,URI...", parse => fun entries/1,
       check => fun(Us) -> first_error([check_uri(U) || U <- Us]) end,
       help => "URIs of a cluster's nodes: each connection takes them in a random order "
               "(the first that answers); queue i is declared on node i"},
     #{name => queue, short => "u", long => "queue", type => {one_of, [string, Undef]},
       cli_type => string, metavar => "NAME[,NAME...]",
       check => fun(Q) -> check_name(queue, Q) end,
       conflicts => [{queues, ?ONE_WAY}, {queue_pattern, ?ONE_WAY}],
       help => "queue name(s) (default: one queue named after the test id, deleted at the end)"},
     %% (the command line's -u a,b: each name checked as `queue')
     #{name => queues, type => {one_of, [{list, string}, Undef]},
       conflicts => [{queue_pattern, ?ONE_WAY}],
       check => fun(undefined) -> ok;
                   (Qs) -> first_error([check_name(queue, Q) || Q <- Qs])
                end},
     %% (a path, read when the load is made: the names, not the file's
     %% contents, are the library's value; checked by reading it)
     #{name => queue_file, short => "qf", long => "queue-file", type => {one_of, [string, Undef]},
       cli_type => string, metavar => "FILE",
       check => fun(F) -> case queue_file(F) of {ok, _} -> ok; {error, _} = E -> E end end,
       conflicts => [{queue, ?ONE_WAY}, {queues, ?ONE_WAY}, {queue_pattern, ?ONE_WAY}],
       help => "queue names, one per line, used in sequence"},
     #{name => exchange, short => "e", long => "exchange", type => string, cli_type => string,
       metavar => "NAME", check => fun(E) -> check_name(exchange, E) end,
       help => "exchange name (\"\" or amq.default: the default exchange; "
               "default: named after its type, as PerfTest)"},
     #{name => routing_key, short => "k", long => "routing-key", type => {one_of, [string, Undef]},
       cli_type => string, metavar => "KEY", check => fun(K) -> check_name(routing_key, K) end,
       help => "routing key (default: the queue's name, to which the queue is bound)"},
     #{name => queue_pattern, short => "qp", long => "queue-pattern", type => term, cli_type => string,
       metavar => "PATTERN", check => fun check_pattern/1,
       help => "queue name pattern, e.g. 'perf-test-%d' (Java format: "
               "%d, %s, %03d...)"},
     #{name => id, short => "d", long => "id", type => {one_of, [string, Undef]}, cli_type => string,
       metavar => "ID", check => fun check_id/1,
       help => "test id printed on every line (default: test-HHMMSS-mmm)"},
     %% (the command line's text N or a@h,b@h: a count or the names)
     #{name => nodes, long => "nodes", type => term, cli_type => string, metavar => "N|NODES",
       check => fun check_nodes/1,
       help => "spread the load over N VMs (this one and N-1 started peers) or over the "
               "named nodes a@host,b@host"},
     %% (the command line's -f persistent / -f mandatory)
     #{name => persistent, type => boolean},
     #{name => mandatory, type => boolean},
     %% (the command line's --tls-*-file, -sni and --tls-insecure flags
     %% make this map: its keys' flags, which its check's lines name)
     #{name => tls, type => map, check => fun check_tls/1,
       fields => [#{name => tls_ca_file, key => cacertfile, long => "tls-ca-file", type => string,
                    metavar => "FILE",
                    help => "CA certificates (PEM) that sign the broker's certificate (amqps://)"},
                  #{name => tls_cert_file, key => certfile, long => "tls-cert-file", type => string,
                    metavar => "FILE", help => "client certificate (PEM) for amqps://"},
                  #{name => tls_key_file, key => keyfile, long => "tls-key-file", type => string,
                    metavar => "FILE", help => "the client certificate's key (PEM, unencrypted)"},
                  #{name => tls_insecure, key => verify, long => "tls-insecure", type => boolean,
                    default => false, parse => fun(true) -> {ok, verify_none}; (_) -> {ok, verify_peer} end,
                    help => "do not verify the broker's certificate (PerfTest's amqps:// default)"},
                  %% (PerfTest's list: its first name)
                  #{name => sni, key => server_name_indication, short => "sni",
                    long => "server-name-indication", type => string, metavar => "NAME",
                    parse => fun(S) -> {ok, string:trim(hd(string:split(S, ",", leading)))} end,
                    help => "TLS server name (SNI), also the name the broker's certificate must have"}]},
     %% (what the load does without a CA file: said, so that it can be
     %% refused beside --tls-insecure; not a key of the load)
     #{name => use_default_ssl_context, short => "udsc", long => "use-default-ssl-context",
       type => boolean, default => false,
       help => "verify the broker with the system's trust store (the default without --tls-ca-file)"},
     %% (the command line's -se is `external')
     #{name => sasl, short => "se", long => "sasl-external", type => {enum, [plain, external]},
       cli_type => boolean, default => false,
       parse => fun(true) -> {ok, external}; (_) -> {ok, plain} end,
       help => "log in with SASL EXTERNAL (the client certificate's name)"}].

%% PerfTest's text forms and the files the load reads (#31): each key
%% takes the library's value (steps `[{Value, Seconds}]', a number of
%% bytes or seconds, a properties map, file names), the flag's text read
%% into it by the option's `parse'; the check is the same for both fronts.
forms() ->
    Undef = {enum, [undefined]},
    Steps = fun(Min, Max) -> #{type => term, cli_type => string, multi => true,
                               parse => fun(Texts) -> all_ok([step(T, Min) || T <- Texts]) end,
                               check => fun(V) -> check_steps(V, Min, Max) end} end,
    Args = #{type => term, cli_type => string, multi => true, parse => fun key_values/1,
             check => fun check_args/1},
    [(Steps(0, {?MAX_RATE, "messages per second per channel"}))#{
       name => variable_rate, short => "vr", long => "variable-rate", metavar => "RATE:SECONDS",
       help => "publish at RATE for SECONDS, repeatable; the steps cycle (e.g. -vr 100:60 -vr 1000:10)"},
     #{name => publishing_interval, short => "P", long => "publishing-interval",
       type => {one_of, [pos_number, Undef]}, min => 0.1, min_why => "PerfTest's smallest",
       max => 86400, max_why => "one day", cli_type => string, parse => fun number_text/1,
       metavar => "SECONDS", help => "each producer channel publishes one message every SECONDS "
                                     "(at least 0.1)"},
     (Steps(0, {?MAX_LATENCY, "one minute per message"}))#{
       name => variable_latency, short => "vl", long => "variable-latency", metavar => "US:SECONDS",
       help => "simulated work per message that varies over time, repeatable, cycled"},
     (Steps(1, {?MAX_BODY, "RabbitMQ's largest message, 512 MiB"}))#{
       name => variable_size, short => "vs", long => "variable-size", metavar => "BYTES:SECONDS",
       help => "body size that varies over time, repeatable, cycled"},
     %% (paths, read when the load is made: the files' contents are the
     %% load's `body')
     #{name => body_files, short => "B", long => "body", type => term, cli_type => string,
       parse => fun entries/1, check => fun check_bodies/1, metavar => "FILE,FILE...",
       conflicts => [{json_body, "give either ~ts or ~ts, not both"}],
       help => "send the contents of these files as bodies, in turn"},
     #{name => body_content_type, short => "T", long => "body-content-type",
       type => {one_of, [string, Undef]}, cli_type => string, check => fun check_short_text/1,
       metavar => "TYPE", help => "content type of the -B bodies"},
     #{name => message_properties, short => "mp", long => "message-properties", type => term,
       cli_type => string, multi => true, parse => fun properties/1, check => fun check_properties/1,
       metavar => "K=V,...", help => "message properties (priority=5, contentType=...); other keys are headers"},
     Args#{name => queue_args, short => "qa", long => "queue-args", metavar => "K=V,...",
           help => "queue arguments, e.g. x-queue-type=quorum,x-max-length=10"},
     #{name => max_length_bytes, short => "mlb", long => "max-length-bytes",
       type => {one_of, [non_neg_integer, Undef]}, cli_type => string,
       parse => fun beamlab_amqp_perftest:byte_capacity/1, metavar => "BYTES",
       help => "x-max-length-bytes of created queues (e.g. 20gb; 0: none)"},
     #{name => max_age, short => "ma", long => "max-age", type => {one_of, [pos_integer, Undef]},
       cli_type => string, parse => fun beamlab_amqp_perftest:iso_duration/1, metavar => "DURATION",
       help => "x-max-age of created streams, ISO 8601 (PT10M30S, P5DT8H)"},
     #{name => stream_segment_bytes, short => "smssb", long => "stream-max-segment-size-bytes",
       type => {one_of, [pos_integer, Undef]}, max => 3000000000, max_why => "a stream segment is at most 3 GB",
       cli_type => string, parse => fun beamlab_amqp_perftest:byte_capacity/1, metavar => "BYTES",
       help => "segment size of created streams (at most 3gb)"},
     Args#{name => consumer_args, short => "ca", long => "consumer-args", metavar => "K=V,...",
           help => "consumer arguments, e.g. x-priority=10"},
     #{name => stream_offset, short => "sco", long => "stream-consumer-offset", type => term,
       cli_type => string, parse => fun beamlab_amqp_perftest:stream_offset/1, check => fun check_offset/1,
       metavar => "OFFSET", help => "where stream consumers start: first, last, next, an offset "
                                    "or an ISO 8601 time"},
     %% (checked now: a directory or an impossible path fails before the
     %% run; written atomically at the end)
     #{name => output_file, short => "o", long => "output-file", type => {one_of, [string, Undef]},
       cli_type => string, check => fun check_output/1, metavar => "FILE",
       help => "PerfTest's CSV of the interval lines, written when the run ends"},
     #{name => recovery_interval, short => "cri", long => "connection-recovery-interval", type => term,
       cli_type => string, parse => fun beamlab_amqp_perftest:recovery_interval/1,
       check => fun check_recovery/1, metavar => "S|S-S",
       help => "with --reconnect: seconds between attempts, or a random delay in a range"},
     %% (the command line's text is the node; its --cookie joins it there)
     #{name => watch, long => "watch", type => term, cli_type => string, check => fun check_watch/1,
       metavar => "NODE",
       help => "record the broker node's telemetry (schedulers, memory, top processes) "
               "beside the load, over distribution (--cookie gives its cookie); its key "
               "figures are printed under each interval line and after the summary"}].

%% `{ok, [V]}' of every `{ok, V}', or the first error.
all_ok(Results) ->
    case [E || {error, _} = E <- Results] of
        [] -> {ok, [V || {ok, V} <- Results]};
        [E | _] -> E
    end.

%% A step of -vr/-vs/-vl: `VALUE:SECONDS', two integers (their bounds are
%% the check's); other text gets PerfTest's line.
step(Text, Min) ->
    case [string:to_integer(X) || X <- string:split(Text, ":", all)] of
        [{V, ""}, {S, ""}] -> {ok, {V, S}};
        _ -> beamlab_amqp_perftest:variable(Text, Min)
    end.

%% Steps `[{Value, Seconds}]', cycled: each value at least `Min' and at
%% most the bound of its fixed option (-r, -L, -s), each step a second to
%% a year (PerfTest's line for what it refuses).
check_steps(undefined, _, _) ->
    ok;
check_steps([_ | _] = Steps, Min, {Max, Why}) ->
    first_error([case Step of
                     {V, S} when is_integer(V), is_integer(S) ->
                         Text = lists:flatten(io_lib:format("~b:~b", [V, S])),
                         case beamlab_amqp_perftest:variable(Text, Min) of
                             {ok, _} when V > Max ->
                                 {error, lists:flatten(io_lib:format("~ts: at most ~b (~ts)", [Text, Max, Why]))};
                             {ok, _} -> ok;
                             {error, _} = E -> E
                         end;
                     _ ->
                         {error, ["'", beamlab_schema:value_text(Step), "' is not a step {Value, Seconds}"]}
                 end || Step <- Steps]);
check_steps(_, _, _) ->
    {error, "expected a list of steps {Value, Seconds}"}.

%% Text that reads as a number is the number; other text stays text, which
%% the option's type refuses.
number_text(Text) ->
    T = string:trim(Text),
    case {string:to_integer(T), string:to_float(T)} of
        {{I, ""}, _} -> {ok, I};
        {_, {F, ""}} -> {ok, F};
        _ -> {ok, Text}
    end.

%% PerfTest's numbers (-i, -z, -r, -R): an integer, a decimal or a number
%% with an exponent (`1e3', `2.5E-1'), as scripts write them; the bounds
%% are the check's, so a huge value is told its limit.
perftest_number(Text) ->
    T = string:lowercase(string:trim(Text)),
    Fixed = case string:split(T, "e") of
                [M, E] -> case lists:member($., M) of
                              true -> M ++ "e" ++ E;
                              false -> M ++ ".0e" ++ E
                          end;
                [M] -> M
            end,
    case {string:to_integer(T), string:to_float(Fixed)} of
        {{I, ""}, _} -> {ok, I};
        {_, {F, ""}} -> {ok, F};
        _ -> {error, {type, number}}
    end.

%% A comma-separated list (-B, -H): an empty entry (`a,,b', a comma at an
%% end) is refused as a mistake, not dropped.
entries(Text) ->
    case [string:trim(E) || E <- string:split(Text, ",", all)] of
        [""] -> {error, "needs at least one entry"};
        Entries ->
            case lists:member("", Entries) of
                true -> {error, "an empty entry in the list (two commas in a row, or a comma at an end)"};
                false -> {ok, Entries}
            end
    end.

%% The body files: regular, each at most RabbitMQ's largest message, all
%% of them at most 1 GiB (held in memory at once); their sizes are
%% checked before anything is read.
check_bodies(undefined) ->
    ok;
check_bodies([_ | _] = Files) ->
    Sizes = [case file_name(F) of
                 ok ->
                     case file:read_file_info(F) of
                         {ok, #file_info{size = Size}} when Size =< ?MAX_BODY -> {ok, Size};
                         {ok, _} -> {error, [file_text(F), ": larger than 512 MiB (RabbitMQ's largest message)"]};
                         {error, R} -> {error, [file_text(F), ": ", file:format_error(R)]}
                     end;
                 Why ->
                     {error, [file_text(F), ": ", Why]}
             end || F <- Files],
    case all_ok(Sizes) of
        {ok, Bytes} ->
            case lists:sum(Bytes) of
                Held when Held > ?MAX_HELD ->
                    {error, lists:flatten(io_lib:format("~b files of ~b bytes in all, more than 1 GiB to keep "
                                                        "in memory at once", [length(Files), Held]))};
                _ -> ok
            end;
        {error, _} = E -> E
    end;
check_bodies(_) ->
    {error, "expected a list of file names"}.

%% The contents of the body files (checked by check_bodies/1).
bodies(Files) ->
    all_ok([case file:read_file(F) of
                {ok, Bin} when byte_size(Bin) =< ?MAX_BODY -> {ok, Bin};
                {ok, _} -> {error, [file_text(F), ": larger than 512 MiB (RabbitMQ's largest message)"]};
                {error, R} -> {error, [file_text(F), ": ", file:format_error(R)]}
            end || F <- Files]).

%% An AMQP short string (a content type): at most 255 bytes.
check_short_text(undefined) ->
    ok;
check_short_text(T) ->
    case byte_size(unicode:characters_to_binary(T)) =< 255 of
        true -> ok;
        false -> {error, ["'", beamlab_schema:value_text(T), "' is longer than 255 bytes (an AMQP short string)"]}
    end.

%% PerfTest's `k1=v1,k2=v2' lists of a repeated flag, a later key
%% replacing an earlier one.
key_values(Texts) ->
    lists:foldl(fun(_, {error, _} = E) -> E;
                   (Text, {ok, Acc}) ->
                        case beamlab_amqp_perftest:key_values(Text) of
                            {ok, KVs} ->
                                {ok, lists:foldl(fun({K, X}, A) -> lists:keystore(K, 1, A, {K, X}) end, Acc, KVs)};
                            {error, Why} ->
                                {error, ["'", beamlab_schema:value_text(Text), "': ", Why]}
                        end
                end, {ok, []}, Texts).

%% Queue or consumer arguments: `[{Key, Value}]', the key text of at most
%% 255 bytes, the value `true', `false', a 64-bit integer or text.
check_args(Args) when is_list(Args) ->
    first_error([case KV of
                     {K, V} ->
                         case is_text(K) andalso byte_size(unicode:characters_to_binary(K)) of
                             N when is_integer(N), N > 0, N =< 255 -> check_arg(K, V);
                             _ -> {error, ["'", beamlab_schema:value_text(K), "' is not a key (1 to 255 bytes of text)"]}
                         end;
                     _ ->
                         {error, ["'", beamlab_schema:value_text(KV), "' is not a pair {Key, Value}"]}
                 end || KV <- Args]);
check_args(_) ->
    {error, "expected a list of pairs {Key, Value}"}.

check_arg(_K, V) when is_boolean(V) -> ok;
check_arg(_K, V) when is_integer(V), V >= -9223372036854775808, V =< 9223372036854775807 -> ok;
check_arg(K, V) ->
    case is_text(V) of
        true -> ok;
        false -> {error, ["the value of '", beamlab_schema:value_text(K), "' is not true, false, "
                          "a 64-bit integer or text"]}
    end.

%% -mp's lists: their pairs as PerfTest applies them (the 13 standard
%% properties, the other keys headers).
properties(Texts) ->
    case key_values(Texts) of
        {ok, KVs} -> beamlab_amqp_perftest:properties(KVs);
        {error, _} = E -> E
    end.

%% The message properties: a map of the standard properties (text of at
%% most 255 bytes, `delivery_mode' 1 or 2, `priority' 0 to 255,
%% `timestamp' seconds) and `headers' (a map, or an AMQP table).
check_properties(undefined) ->
    ok;
check_properties(Props) when is_map(Props) ->
    first_error([check_property(K, V) || {K, V} <- lists:sort(maps:to_list(Props))]);
check_properties(_) ->
    {error, "expected a map of message properties"}.

check_property(K, V) when K =:= delivery_mode, V =:= 1; K =:= delivery_mode, V =:= 2 -> ok;
check_property(priority, V) when is_integer(V), V >= 0, V =< 255 -> ok;
check_property(timestamp, V) when is_integer(V), V >= 0 -> ok;
check_property(headers, V) when is_map(V) ->
    case lists:all(fun header_value/1, [V]) of
        true -> ok;
        false -> {error, "headers: expected a map of text keys to true, false, numbers, text, lists or maps"}
    end;
check_property(headers, V) when is_list(V) ->
    %% (an AMQP table, as beamlab_amqp_method encodes it)
    case lists:all(fun({K, T, _}) -> is_binary(K) andalso is_atom(T); (_) -> false end, V) of
        true -> ok;
        false -> {error, "headers: expected a map (or an AMQP table [{Key, Type, Value}])"}
    end;
check_property(K, V) when K =:= content_type; K =:= content_encoding; K =:= correlation_id;
                          K =:= reply_to; K =:= expiration; K =:= message_id; K =:= type;
                          K =:= user_id; K =:= app_id; K =:= cluster_id ->
    case is_text(V) andalso check_short_text(V) of
        ok -> ok;
        _ -> {error, [atom_to_list(K), " '", beamlab_schema:value_text(V), "': expected text of at most 255 bytes"]}
    end;
check_property(K, V) when K =:= delivery_mode; K =:= priority; K =:= timestamp; K =:= headers ->
    {error, [atom_to_list(K), " '", beamlab_schema:value_text(V), "': expected ",
             case K of
                 delivery_mode -> "1 or 2";
                 priority -> "an integer 0..255";
                 timestamp -> "seconds since 1970";
                 headers -> "a map"
             end]};
check_property(K, _) ->
    {error, ["'", beamlab_schema:value_text(K), "' is not a message property (content_type, "
             "content_encoding, headers, delivery_mode, priority, correlation_id, reply_to, "
             "expiration, message_id, timestamp, type, user_id, app_id, cluster_id)"]}.

%% A value a header can hold (its AMQP type inferred from it).
header_value(M) when is_map(M) ->
    lists:all(fun({K, V}) -> (is_atom(K) orelse is_text(K)) andalso header_value(V) end, maps:to_list(M));
header_value(L) when is_list(L) -> is_text(L) orelse lists:all(fun header_value/1, L);
header_value(V) -> is_boolean(V) orelse is_number(V) orelse is_binary(V) orelse is_atom(V).

%% Where stream consumers start: first, last or next, an offset, or
%% `{timestamp, Seconds}'.
check_offset(undefined) -> ok;
check_offset(N) when is_integer(N), N >= 0, N =< 18446744073709551615 -> ok;
check_offset({timestamp, T}) when is_integer(T) -> ok;
check_offset(T) ->
    case is_text(T) andalso lists:member(string:lowercase(unicode:characters_to_list(T)), ["first", "last", "next"]) of
        true -> ok;
        false -> {error, ["'", beamlab_schema:value_text(T), "' is not a stream offset (first, last, next, "
                          "an offset or {timestamp, Seconds})"]}
    end.

%% -o: a file that can be written (not a directory, a path that exists).
check_output(undefined) ->
    ok;
check_output(F) ->
    case beamlab_runtime_file:check_target(unicode:characters_to_list(F)) of
        {ok, directory} -> {error, [file_text(F), " is a directory"]};
        {ok, _} -> ok;
        {error, R} -> {error, [file_text(F), ": ", beamlab_runtime_file:format_error(R)]}
    end.

%% The delay between reconnection attempts, ms: `{Min, Max}', a random
%% one between the two.
check_recovery({A, B}) when is_integer(A), is_integer(B), A >= 0, A =< B -> ok;
check_recovery(V) ->
    {error, ["'", beamlab_schema:value_text(V), "' is not {Min, Max}: milliseconds, 0 =< Min =< Max"]}.

%% The broker's node watched: its name (name@host), or `#{node, cookie}'.
check_watch(undefined) -> ok;
check_watch(#{node := N}) -> check_watch(N);
check_watch(N) when is_atom(N) -> check_watch(atom_to_list(N));
check_watch(N) ->
    case is_text(N) andalso node_name(unicode:characters_to_list(N)) of
        true -> ok;
        false -> {error, ["'", beamlab_schema:value_text(N), "' is not a node name (name@host)"]}
    end.

%% @doc The options given with the values of PerfTest's text forms and
%% files made the load's (`beamlab_amqp_config'): text as binaries, a
%% publishing interval a float, a headers map an AMQP table, the body
%% files (`body_files', `body_content_type') read into `body', or
%% `json_body' (`body_field_count', `body_count') made its `{json, F, C}'.
%% The command line makes its load's values here too.
-spec config_values(#{atom() => term()}) -> {ok, #{atom() => term()}} | {error, beamlab_schema:error_reason()}.
config_values(Opts) ->
    Bin = fun(T) -> unicode:characters_to_binary(T) end,
    Norm = #{publishing_interval => fun(P) -> float(P) end,
             stream_offset => fun(O) when is_integer(O); is_tuple(O) -> O;
                                 (O) -> Bin(string:lowercase(unicode:characters_to_list(O)))
                              end,
             message_properties => fun(P) -> maps:map(fun(headers, H) when is_map(H) -> beamlab_amqp_method:to_table(H);
                                                          (headers, H) -> H;
                                                          (_, V) when is_integer(V) -> V;
                                                          (_, V) -> Bin(V)
                                                       end, P)
                                   end,
             queue_args => fun(A) -> [{Bin(K), arg_value(V)} || {K, V} <- A] end,
             consumer_args => fun(A) -> [{Bin(K), arg_value(V)} || {K, V} <- A] end,
             output_file => Bin},
    Values = maps:map(fun(K, V) when V =/= undefined, is_map_key(K, Norm) -> (maps:get(K, Norm))(V);
                         (_, V) -> V
                      end, Opts),
    case maps:get(body_files, Opts, undefined) of
        undefined when map_get(json_body, Opts) =:= true ->
            %% (--json-body's documents: made when the load starts)
            Count = fun(K) -> {ok, #{default := D}} = beamlab_schema:find(K, bounded()), maps:get(K, Opts, D) end,
            {ok, Values#{body => {json, Count(body_field_count), Count(body_count)}}};
        undefined ->
            {ok, Values};
        Files ->
            case bodies(Files) of
                {ok, Bins} ->
                    {ok, Values#{body => {files, Bins, case maps:get(body_content_type, Opts, undefined) of
                                                          undefined -> undefined;
                                                          T -> Bin(T)
                                                      end}}};
                {error, Why} ->
                    %% (a file changed since its check)
                    {ok, O} = beamlab_schema:find(body_files, forms()),
                    {error, {invalid, O, Files, {check, Why}}}
            end
    end.

arg_value(V) when is_boolean(V); is_integer(V) -> V;
arg_value(V) -> unicode:characters_to_binary(V).

%% @doc The queue names of a queue file (`queue_file', `-qf'): one per
%% line, blank lines skipped, each a queue's name, at most as many as
%% connections to one broker; the file regular and at most 64 MiB (a FIFO
%% or a device would hang or never end). `undefined' is none given.
-spec queue_file(term()) -> {ok, undefined | [binary()]} | {error, unicode:chardata()}.
queue_file(undefined) ->
    {ok, undefined};
queue_file(F) ->
    Named = fun(Why) -> {error, [beamlab_schema:value_text(F), ": ", Why]} end,
    case file_name(F) of
        ok ->
            case file:read_file_info(F) of
                {ok, #file_info{size = Size}} when Size > 67108864 -> Named("larger than 64 MiB");
                _ ->
                    case file:read_file(F) of
                        {ok, Bin} ->
                            Lines = [string:trim(L) || L <- string:split(Bin, "\n", all)],
                            Names = [L || L <- Lines, L =/= <<>>],
                            case first_error([check_name(queue, N) || N <- Names]) of
                                {error, Why} -> Named(Why);
                                ok when Names =:= [] -> Named("no queue names");
                                ok when length(Names) > ?MAX_COUNT ->
                                    Named(io_lib:format("more than ~b queues", [?MAX_COUNT]));
                                ok -> {ok, Names}
                            end;
                        {error, R} -> Named(file:format_error(R))
                    end
            end;
        Why ->
            Named(Why)
    end.

%% The TLS files of an amqps:// load (`cacertfile', `certfile', `keyfile'):
%% regular files, the certificate and its key together, each PEM and the
%% key matching the certificate; said before anything connects.
check_tls(Tls) ->
    Files = maps:with([cacertfile, certfile, keyfile], Tls),
    Named = [{K, F, file_name(F)} || {K, F} <- lists:sort(maps:to_list(Files))],
    case [{K, F, R} || {K, F, R} <- Named, R =/= ok] of
        _ when is_map_key(certfile, Files) =/= is_map_key(keyfile, Files) ->
            %% (said before the files are read, as the command line does)
            {error, {fields, "~ts and ~ts go together", [certfile, keyfile]}};
        [{K, F, Why} | _] ->
            {error, {field, K, [file_text(F), ": ", Why]}};
        [] ->
            case beamlab_amqp_tls:check_files(Files) of
                ok -> ok;
                {error, {file, Flag, _, _} = E} ->
                    %% (its line names the command line's flag: the key's)
                    Line = unicode:characters_to_list(beamlab_amqp_tls:format_error(E)),
                    Key = maps:get(Flag, #{"--tls-ca-file" => cacertfile, "--tls-cert-file" => certfile,
                                           "--tls-key-file" => keyfile}),
                    {error, {field, Key, string:prefix(Line, Flag ++ " ")}}
            end
    end.

%% A file's name as a line shows it: whole, a control character as `?'.
file_text(F) ->
    case is_text(F) of
        true -> [case C of C when C < 32; C =:= 127 -> $?; C -> C end || C <- unicode:characters_to_list(F)];
        false -> beamlab_schema:value_text(F)
    end.

%% A file the load reads: named by text, a regular file.
file_name(F) ->
    case is_text(F) andalso file:read_file_info(F) of
        false -> "expected a file name";
        {ok, #file_info{type = regular}} -> ok;
        {ok, _} -> "not a regular file";
        {error, R} -> file:format_error(R)
    end.

%% Text: a UTF-8 binary or a list of characters.
is_text(B) when is_binary(B) -> is_list(unicode:characters_to_list(B));
is_text(L) when is_list(L) -> io_lib:char_list(L);
is_text(_) -> false.

check_uri(undefined) -> ok;
check_uri(Uri) ->
    case beamlab_amqp_uri:parse(Uri) of
        {ok, _} -> ok;
        {error, R} -> {error, beamlab_amqp_uri:format_error(R)}
    end.

%% @doc A queue's name (1 to 255 bytes), an exchange's or a routing key
%% (0 to 255 bytes): AMQP's short strings, checked before the broker
%% closes the channel for them; `undefined' is none given.
-spec check_name(queue | exchange | routing_key, term()) -> ok | {error, string()}.
check_name(_, undefined) ->
    ok;
check_name(What, Name) ->
    B = unicode:characters_to_binary(Name),
    Min = case What of queue -> 1; _ -> 0 end,
    case is_binary(B) andalso byte_size(B) >= Min andalso byte_size(B) =< 255 of
        true -> ok;
        false ->
            {error, lists:flatten(
                      io_lib:format("'~ts' is not ~ts (~ts to 255 bytes of UTF-8)",
                                    [beamlab_schema:value_text(Name), case What of
                                                           queue -> "a queue name";
                                                           exchange -> "an exchange name";
                                                           routing_key -> "a routing key"
                                                       end, integer_to_list(Min)]))}
    end.

%% `{Pattern, From, To}': queues Pattern with its conversion replaced by
%% From..To, at most as many as connections to one broker.
check_pattern(undefined) ->
    ok;
check_pattern({P, From, To}) when is_integer(From), is_integer(To), From =< To ->
    case is_text(P) andalso beamlab_amqp_perftest:check_pattern(P) of
        false -> check_pattern(none);
        _ when To - From >= ?MAX_COUNT ->
            {error, lists:flatten(io_lib:format("~b to ~b is more than ~b queues", [From, To, ?MAX_COUNT]))};
        ok -> ok;
        {error, Why} -> {error, ["'", beamlab_schema:value_text(P), "' ", Why]}
    end;
check_pattern({_P, From, To}) when is_integer(From), is_integer(To) ->
    {error, lists:flatten(io_lib:format("the first number ~b is above the last ~b", [From, To]))};
check_pattern(_) ->
    {error, "expected {Pattern, From, To}: a pattern with %d and the first and last numbers"}.

%% Where the load runs: this VM, a count of VMs (this one and started
%% peers, at most 64) or node names (name@host).
check_nodes(undefined) ->
    ok;
check_nodes(this) ->
    ok;
check_nodes(N) when is_integer(N), N > 64 ->
    {error, lists:flatten(io_lib:format("~b: at most 64 local VMs", [N]))};
check_nodes(N) when is_integer(N), N < 1 ->
    {error, "needs at least 1 node"};
check_nodes(N) when is_integer(N) ->
    ok;
check_nodes([_ | _] = Names) ->
    Text = fun(X) -> (is_list(X) andalso io_lib:char_list(X)) orelse is_binary(X) end,
    case lists:all(Text, Names) of
        false ->
            check_nodes(none);
        true ->
            case [X || X <- Names, not node_name(unicode:characters_to_list(X))] of
                [] -> ok;
                [X | _] -> {error, ["'", beamlab_schema:value_text(X), "' is not a node name (name@host)"]}
            end
    end;
check_nodes(_) ->
    {error, "expected a count of VMs or a list of node names (name@host)"}.

node_name(X) ->
    case string:split(X, "@") of
        [[_ | _], [_ | _]] -> true;
        _ -> false
    end.

%% The test id is part of queue and connection names: printable, short.
check_id(undefined) ->
    ok;
check_id(Id) ->
    B = unicode:characters_to_binary(Id),
    S = unicode:characters_to_list(Id),
    if
        not (is_binary(B) andalso is_list(S)) orelse S =:= [] ->
            {error, "the test id is empty"};
        true ->
            Printable = io_lib:printable_unicode_list(S)
                andalso not lists:any(fun(C) -> C < 32 orelse C =:= 127 end, S),
            if
                not Printable ->
                    {error, "the test id must be printable text (no newline or control character): "
                            "it names the run's queues"};
                byte_size(B) > 200 ->
                    {error, lists:flatten(io_lib:format("the test id is ~b bytes; at most 200 (queue names "
                                                        "are at most 255)", [byte_size(B)]))};
                true -> ok
            end
    end.

first_error([]) -> ok;
first_error([ok | Rest]) -> first_error(Rest);
first_error([{error, _} = E | _]) -> E.

bounded() ->
    Undef = {enum, [undefined]},
    Rate = {one_of, [number, {enum, [infinity]}]},
    [#{name => producers, short => "x", type => non_neg_integer, max => ?MAX_COUNT,
       max_why => "connections to one broker",
       long => "producers",
       default => 1,
       metavar => "N",
       help => "producer count (one connection each)"},
     #{name => consumers, short => "y", type => non_neg_integer, max => ?MAX_COUNT,
       max_why => "connections to one broker",
       long => "consumers",
       default => 1,
       metavar => "N",
       help => "consumer count (one connection each)"},
     #{name => closed_loop, long => "closed-loop", type => pos_integer, max => ?MAX_COUNT,
       max_why => "channels of one generator",
       metavar => "N",
       help => "N channels, each with its own queue, publishing the next message when the " "previous one is delivered (ignores -x/-y/-u/-r)"},
     #{name => producer_channels, short => "X", type => pos_integer, max => ?MAX_CHANNELS,
       max_why => "channels per connection",
       long => "producer-channel-count",
       default => 1,
       metavar => "N",
       help => "channels per producer"},
     #{name => consumer_channels, short => "Y", type => pos_integer, max => ?MAX_CHANNELS,
       max_why => "channels per connection",
       long => "consumer-channel-count",
       default => 1,
       metavar => "N",
       help => "channels per consumer"},
     #{name => body_size, short => "s", type => non_neg_integer, max => ?MAX_BODY,
       max_why => "RabbitMQ's largest message, 512 MiB",
       long => "size",
       default => 12,
       metavar => "BYTES",
       help => "message body size (bodies carry a 12-byte stamp: smaller " "sizes send 12 bytes, as PerfTest; at most 512 MiB)"},
     #{name => prefetch, short => "q", type => non_neg_integer, max => 65535,
       max_why => "AMQP's prefetch count is 16 bits",
       long => "qos",
       default => 0,
       metavar => "N",
       help => "consumer prefetch count (0: unlimited; at most 65535)"},
     #{name => global_qos, short => "Q", type => non_neg_integer, max => 65535,
       max_why => "AMQP's prefetch count is 16 bits",
       long => "global-qos",
       default => 0,
       metavar => "N",
       help => "channel prefetch count (basic.qos global; 0: unlimited)"},
     %% (0 or less: no confirms, as PerfTest's -c)
     #{name => confirm, short => "c", type => {one_of, [integer, Undef]}, max => 10000000,
       max_why => "unconfirmed messages kept per channel",
       long => "confirm",
       cli_type => integer,
       metavar => "N",
       help => "publisher confirms with at most N unconfirmed messages per producer channel " "(0 or -1, PerfTest's default: no confirms)"},
     #{name => consumer_latency, short => "L", type => non_neg_integer, max => 60000000,
       max_why => "one minute per message",
       long => "consumer-latency",
       default => 0,
       metavar => "MICROSECONDS",
       help => "simulated work per message"},
     #{name => heartbeat, short => "b", type => {one_of, [non_neg_integer, Undef]}, max => 65535,
       max_why => "AMQP's heartbeat is 16 bits",
       long => "heartbeat",
       cli_type => non_neg_integer,
       metavar => "SECONDS",
       help => "requested heartbeat (0: the broker's)"},
     #{name => frame_max, short => "M", type => {one_of, [non_neg_integer, Undef]}, max => 4294967295,
       max_why => "AMQP's frame_max is 32 bits",
       long => "framemax",
       cli_type => non_neg_integer,
       metavar => "BYTES",
       help => "requested frame_max (0: the broker's)"},
     #{name => confirm_timeout, short => "ct", type => pos_integer, max => 86400, max_why => "one day",
       long => "confirm-timeout",
       default => 30,
       metavar => "SECONDS",
       help => "a producer waiting that long for a free confirm slot fails the run"},
     #{name => producer_start_delay, short => "prsd", type => {one_of, [non_neg_integer, Undef]},
       max => 86400, max_why => "one day",
       long => "producer-random-start-delay",
       cli_type => non_neg_integer,
       metavar => "SECONDS",
       help => "each producer starts after a random delay up to SECONDS (default with a rate: 1)"},
     #{name => consumer_start_delay, short => "csd", type => non_neg_integer, max => 86400,
       max_why => "one day",
       long => "consumer-start-delay",
       default => 0,
       metavar => "SECONDS",
       help => "start consumers after this delay"},
     #{name => shutdown_timeout, short => "st", type => non_neg_integer, max => 3600,
       max_why => "one hour",
       long => "shutdown-timeout",
       default => 5,
       metavar => "SECONDS",
       help => "the longest the end of the run may take"},
     #{name => startup_timeout, short => "sst", type => non_neg_integer, max => 86400,
       max_why => "one day",
       long => "servers-startup-timeout",
       default => 0,
       metavar => "SECONDS",
       help => "wait this long for the broker(s) to answer at the start"},
     #{name => polling_interval, short => "pi", type => non_neg_integer, max => 3600000,
       max_why => "one hour",
       long => "polling-interval",
       default => 0,
       metavar => "MS",
       help => "pause after each basic.get"},
     #{name => routing_key_cache, short => "rkcs", type => non_neg_integer, max => 1000000,
       max_why => "keys kept in memory",
       long => "routing-key-cache-size",
       default => 0,
       metavar => "N",
       help => "with -K: cycle through N random keys instead of a new one each time"},
     #{name => producer_tx, short => "m", type => non_neg_integer, max => 100000000,
       max_why => "messages per transaction",
       long => "ptxsize",
       default => 0,
       metavar => "N",
       help => "producer transactions: commit every N messages"},
     #{name => consumer_tx, short => "n", type => non_neg_integer, max => 100000000,
       max_why => "messages per transaction",
       long => "ctxsize",
       default => 0,
       metavar => "N",
       help => "consumer transactions: commit every N acknowledgements"},
     #{name => pmessages, short => "C", type => non_neg_integer, max => 4294967295,
       long => "pmessages",
       default => 0,
       metavar => "N",
       help => "messages each producer channel publishes, then stops (0: no limit)"},
     #{name => cmessages, short => "D", type => non_neg_integer, max => 4294967295,
       long => "cmessages",
       default => 0,
       metavar => "N",
       help => "messages each consumer channel receives, then stops (0: no limit)"},
     %% (the acknowledgements and the queues' kind: check_config/1's rules)
     #{name => autoack, short => "a", long => "autoack", type => boolean, default => false,
       help => "consume without acknowledgements"},
     #{name => multi_ack, short => "A", long => "multi-ack-every", type => non_neg_integer,
       default => 0, metavar => "N", help => "acknowledge every N messages at once (multiple)"},
     #{name => predeclared, short => "p", long => "predeclared", type => boolean, default => false,
       help => "use existing queues as they are (no declaration, no binding)"},
     #{name => quorum, short => "qq", long => "quorum-queue", type => boolean, default => false,
       help => "declare quorum queues"},
     #{name => stream, short => "sq", long => "stream-queue", type => boolean, default => false,
       help => "declare stream queues (over AMQP 0-9-1; prefetch 200 unless -q)"},
     %% (the load's `body' {json, Fields, Count}, made by config_values/1)
     #{name => json_body, short => "jb", long => "json-body", type => boolean, default => false,
       help => "random JSON documents of about -s bytes as bodies"},
     #{name => body_field_count, short => "bfc", long => "body-field-count", type => pos_integer,
       max => 100000, max_why => "fields kept in memory", default => 1000, metavar => "N",
       help => "fields to draw the JSON bodies from"},
     #{name => body_count, short => "bc", long => "body-count", type => pos_integer,
       max => 100000, max_why => "bodies kept in memory", default => 100, metavar => "N",
       help => "JSON bodies generated in advance"},
     %% Last: the command line reads these four as text and checks them
     %% once it has read every flag; the order here is the order of the
     %% checks, the same for both front ends.
     #{name => interval, short => "i", type => number, min => 0.01, max => 86400, max_why => "one day",
       long => "interval",
       cli_type => string, parse => fun perftest_number/1,
       default => 1,
       metavar => "SECONDS",
       help => "reporting interval"},
     #{name => duration, short => "z", type => {one_of, [pos_number, Undef]}, max => ?MAX_SECONDS,
       max_why => "one year",
       long => "time",
       cli_type => string, parse => fun perftest_number/1,
       metavar => "SECONDS",
       help => "run duration (default: until -C/-D counts, --exit-when or Ctrl-C)"},
     #{name => rate, short => "r", type => Rate, min => 0, max => ?MAX_RATE,
       max_why => "messages per second per channel",
       long => "rate",
       cli_type => string, parse => fun perftest_number/1,
       metavar => "MSG/S",
       help => "rate limit of each producer channel (default: unlimited; 0: publish nothing)"},
     %% (0: no limit, as PerfTest's -R)
     #{name => consumer_rate, short => "R", type => Rate, min => 0, max => ?MAX_RATE,
       max_why => "messages per second per channel",
       long => "consumer-rate",
       cli_type => string, parse => fun perftest_number/1,
       metavar => "MSG/S",
       help => "rate limit of each consumer channel"}].

%% @doc Checks the options given (load generator's keys, as given) against
%% the schema: types and bounds, each with its reason, then the rules
%% that tie the TLS options together, then the TLS files. The command line
%% checks its flags' values here too, so both refuse the same values for
%% the same reason.
-spec check_options(#{atom() => term()}) -> ok | {error, beamlab_schema:error_reason()}.
check_options(Given) ->
    Declared = declared(),
    Opts = maps:with([N || #{name := N} <- Declared], Given),
    %% (the TLS rules once the values they read are known good, before
    %% the TLS files are read: the command line's order)
    {Tls, Others} = lists:partition(fun(#{name := N}) -> N =:= tls end, Declared),
    case beamlab_schema:check(Others, maps:without([tls], Opts)) of
        ok ->
            case tls_rules(Opts) of
                ok -> beamlab_schema:check(Tls, maps:with([tls], Opts));
                {error, _} = E -> E
            end;
        {error, _} = E ->
            E
    end.

%% The rules that tie the TLS options together (#31; the command line's
%% lines, naming the flags there and the keys here): TLS options need an
%% amqps:// URI among those the load connects to (`uris', else `uri'),
%% SASL EXTERNAL a client certificate, and `verify_none' (--tls-insecure)
%% no CA to verify with. Values of the wrong type are the schema's to
%% refuse: no rule reads them.
tls_rules(Opts) ->
    Tls = maps:get(tls, Opts, #{}),
    Udsc = maps:get(use_default_ssl_context, Opts, false) =:= true,
    case {is_map(Tls), uris_in_use(Opts)} of
        {true, {ok, Uris}} ->
            Amqps = lists:any(fun(U) -> string:prefix(string:lowercase(unicode:characters_to_list(U)),
                                                      "amqps:") =/= nomatch end, Uris),
            {ok, TlsOpt} = beamlab_schema:find(tls, texts()),
            Opt = fun(K) -> {ok, O} = beamlab_schema:find(K, texts()), {opt, O} end,
            Field = fun(K) -> {field, TlsOpt, K} end,
            %% (`verify_peer' is the default: no option of its own)
            Given = [K || #{key := K} <- maps:get(fields, TlsOpt),
                          maps:get(K, Tls, undefined) =/= undefined,
                          maps:get(K, Tls, undefined) =/= verify_peer],
            Insecure = maps:get(verify, Tls, verify_peer) =:= verify_none,
            if
                not Amqps, Given =/= [] ->
                    {error, {invalid, TlsOpt, Tls, {check, {field, hd(Given), "needs an amqps:// URI"}}}};
                not Amqps, Udsc ->
                    {error, {rule, "~ts needs an amqps:// URI", [Opt(use_default_ssl_context)]}};
                true ->
                    case maps:get(sasl, Opts, plain) =:= external andalso not is_map_key(certfile, Tls) of
                        true ->
                            {error, {rule, "~ts logs in with the client certificate: give ~ts and ~ts "
                                           "(and an amqps:// URI)",
                                     [Opt(sasl), Field(certfile), Field(keyfile)]}};
                        false when Insecure, Udsc orelse is_map_key(cacertfile, Tls) ->
                            {error, {rule, "~ts verifies nothing: drop ~ts and ~ts, or drop ~ts",
                                     [Field(verify), Field(cacertfile), Opt(use_default_ssl_context),
                                      Field(verify)]}};
                        false ->
                            ok
                    end
            end;
        _ ->
            ok
    end.

%% The URIs the load connects to: `uris' when given, else `uri' (its
%% default when not given); `error' when one is not text.
uris_in_use(Opts) ->
    Uris = case maps:get(uris, Opts, []) of
               U when U =:= []; U =:= undefined ->
                   [maps:get(uri, Opts, maps:get(uri, config_defaults()))];
               L -> L
           end,
    case is_list(Uris) andalso lists:all(fun is_text/1, Uris) of
        true -> {ok, Uris};
        false -> error
    end.

%% @doc Checks a whole configuration for a run that cannot work: a
%% frame_max below AMQP's smallest, TLS options without an amqps:// URI
%% or contradicting each other, bodies of more than 1 GiB in all, nothing
%% to run, or a consumer count (`cmessages') that can never be reached
%% without a duration (the run would wait forever without a word).
-spec check_config(beamlab_amqp_perf:options()) -> ok | {error, beamlab_schema:error_reason()}.
check_config(Cfg) ->
    G = fun(K) -> maps:get(K, maps:merge(config_defaults(), Cfg)) end,
    {ok, FrameMax} = beamlab_schema:find(frame_max, bounded()),
    case G(frame_max) of
        F when is_integer(F), F > 0, F < 4096 ->
            {error, {rule, "invalid value '~ts' for ~ts: 0 (the broker's) or at least 4096 "
                           "(AMQP's smallest frame_max)", [{value, F}, {opt, FrameMax}]}};
        _ ->
            first_error([tls_rules(maps:with([uri, uris, tls, sasl], maps:merge(config_defaults(), Cfg))),
                         check_acks_and_queues(G), check_held(G), check_work(G)])
    end.

%% Acknowledgements that can be given, one kind of queue, the queues of
%% -p named.
check_acks_and_queues(G) ->
    Opt = fun(K) -> {ok, O} = beamlab_schema:find(K, declared()), {opt, O} end,
    MultiAck = G(multi_ack),
    Prefetch = G(prefetch),
    Unnamed = lists:all(fun(K) -> G(K) =:= undefined end, [queue, queues, queue_pattern]),
    case {G(autoack), G(quorum), G(stream), G(predeclared), G(closed_loop)} of
        {true, _, _, _, _} when MultiAck > 0 ->
            {error, {rule, "~ts (multi-ack) and ~ts (autoack) exclude each other", [Opt(multi_ack), Opt(autoack)]}};
        _ when is_integer(MultiAck), is_integer(Prefetch), MultiAck > 0, Prefetch > 0, MultiAck > Prefetch ->
            {error, {rule, "~ts ~ts must be less than or equal to ~ts ~ts (the consumer would wait forever "
                           "for more messages)", [Opt(multi_ack), {value, MultiAck}, Opt(prefetch), {value, Prefetch}]}};
        {_, true, true, _, _} ->
            {error, {rule, "use quorum queues or stream queues, not both (~ts, ~ts)", [Opt(quorum), Opt(stream)]}};
        {_, _, _, true, 0} when Unnamed ->
            {error, {rule, "~ts needs the queue(s): ~ts, ~ts or ~ts",
                     [Opt(predeclared), Opt(queue), Opt(queue_file), Opt(queue_pattern)]}};
        _ ->
            ok
    end.

%% Each body size has one padding, shared by every producer of a VM: the
%% sizes of -s and -vs add up to what is held at once.
check_held(G) ->
    Opt = fun(K) -> {ok, O} = beamlab_schema:find(K, declared()), {opt, O} end,
    case {G(body), G(body_size)} of
        {{json, _, Count}, Size} when is_integer(Count), is_integer(Size),
                                      Count * Size > ?MAX_HELD orelse Count * 200 > ?MAX_HELD ->
            %% (a JSON body is about -s bytes, at least 200)
            {error, {rule, "~ts: ~ts bodies of ~ts bytes are more than 1 GiB to keep in memory; "
                           "lower ~ts or ~ts",
                     [Opt(json_body), {value, Count}, {value, Size}, Opt(body_count), Opt(body_size)]}};
        _ ->
            check_sizes(G)
    end.

check_sizes(G) ->
    case G(variable_size) of
        Steps when is_list(Steps) ->
            Sizes = lists:usort([G(body_size) | [S || {S, _} <- Steps]]),
            case lists:sum(Sizes) of
                Held when Held > ?MAX_HELD ->
                    Opt = fun(K) -> {ok, O} = beamlab_schema:find(K, declared()), {opt, O} end,
                    {error, {rule, "~ts and ~ts: the bodies of ~ts distinct sizes add up to ~ts bytes, more "
                                   "than 1 GiB to keep in memory at once",
                             [Opt(body_size), Opt(variable_size), {value, length(Sizes)}, {value, Held}]}};
                _ -> ok
            end;
        _ -> ok
    end.

check_work(G) ->
    Opt = fun(K) -> {ok, O} = beamlab_schema:find(K, bounded()), {opt, O} end,
    ClosedLoop = G(closed_loop) > 0,
    NP = G(producers) * G(producer_channels),
    NC = G(consumers) * G(consumer_channels),
    Timed = G(duration) =/= undefined,
    Shared = G(queue_pattern) =:= undefined andalso G(queue) =:= undefined
        andalso G(queues) =:= undefined andalso G(predeclared) =:= false
        andalso G(exchange_type) =:= <<"direct">> andalso G(routing_key) =:= undefined,
    D = G(cmessages),
    C = G(pmessages),
    if
        NP =:= 0, NC =:= 0, not ClosedLoop ->
            {error, {rule, "nothing to run: ~ts 0 and ~ts 0 (give producers, consumers or ~ts)",
                     [Opt(producers), Opt(consumers), Opt(closed_loop)]}};
        Timed; ClosedLoop; D =:= 0; NC =:= 0; not Shared ->
            ok;
        NP =:= 0 ->
            {error, {rule, "~ts ~ts can never be reached: no producer (~ts 0) publishes to the run's "
                           "queue; give ~ts or producers",
                     [Opt(cmessages), {value, D}, Opt(producers), Opt(duration)]}};
        C > 0, NC * D > NP * C ->
            {error, {rule, "~ts ~ts can never be reached: ~ts consumer channel(s) would need ~ts messages "
                           "but ~ts producer channel(s) publish ~ts in all (~ts ~ts) to one queue the "
                           "consumers share; lower ~ts, raise ~ts or give ~ts",
                     [Opt(cmessages), {value, D}, {value, NC}, {value, NC * D}, {value, NP},
                      {value, NP * C}, Opt(pmessages), {value, C}, Opt(cmessages), Opt(pmessages),
                      Opt(duration)]}};
        true ->
            ok
    end.

%% @doc The load of the generator's options over its defaults (`uri' as
%% text), on `nodes' (a count of VMs, or node names as text), with the
%% broker's node watched beside it (`watch': `#{node, cookie}', text).
%% The values are checked first (check_options/1, check_config/1);
%% `confirm' of 0 or less means no confirms and `consumer_rate' 0 no
%% limit, as PerfTest's `-c' and `-R' (and the command line) take them.
-spec new(#{atom() => term()}) -> {ok, amqp()} | {error, {option, beamlab_schema:error_reason()}}.
new(Opts) ->
    case check_options(Opts) of
        ok -> build(Opts);
        {error, R} -> {error, {option, R}}
    end.

build(Opts) ->
    case queue_file(maps:get(queue_file, Opts, undefined)) of
        {ok, undefined} -> build_config(Opts);
        {ok, [Q]} -> build_config(Opts#{queue => Q});
        {ok, Qs} -> build_config(Opts#{queues => Qs});
        {error, Why} ->
            %% (the file changed since its check)
            {ok, O} = beamlab_schema:find(queue_file, texts()),
            {error, {option, {invalid, O, maps:get(queue_file, Opts), {check, Why}}}}
    end.

build_config(Opts0) ->
    case config_values(Opts0) of
        {ok, Opts} -> build_load(Opts);
        {error, R} -> {error, {option, R}}
    end.

build_load(Opts) ->
    Defaults = config_defaults(),
    Cfg0 = maps:merge(Defaults, maps:with(maps:keys(Defaults), Opts)),
    Cfg = Cfg0#{uri := unicode:characters_to_binary(maps:get(uri, Cfg0)),
                prefetch := prefetch(maps:get(stream, Cfg0), maps:get(prefetch, Cfg0)),
                confirm := case maps:get(confirm, Cfg0) of
                               Max when is_integer(Max), Max > 0 -> Max;
                               _ -> undefined
                           end,
                consumer_rate := case maps:get(consumer_rate, Cfg0) of
                                     R when is_number(R), R =< 0 -> infinity;
                                     R -> R
                                 end},
    Watch = case maps:find(watch, Opts) of
                {ok, #{node := _} = W} -> #{watch => W};
                _ -> #{}
            end,
    %% (what check_nodes/1 passed: `undefined' is not given)
    Nodes = case maps:get(nodes, Opts, this) of
                N when is_integer(N), N > 1 -> {peers, N};
                N when N =:= 1; N =:= this; N =:= undefined -> this;
                L when is_list(L) -> [list_to_atom(unicode:characters_to_list(X)) || X <- L]
            end,
    case check_config(Cfg) of
        ok -> {ok, Watch#{config => Cfg, nodes => Nodes}};
        {error, R2} -> {error, {option, R2}}
    end.

config_defaults() ->
    maps:without([out, nodes], beamlab_amqp_config:defaults()).

%% @doc The consumers' prefetch: PerfTest's 200 for stream queues when
%% none is given (0), as a stream consumer needs one; otherwise as given.
%% The command line and the library both take it from here.
-spec prefetch(Stream :: boolean(), Prefetch :: non_neg_integer()) -> non_neg_integer().
prefetch(true, 0) -> 200;
prefetch(_, Prefetch) -> Prefetch.

%% @doc A run that cannot work is refused before anything starts
%% (check_config/1: the same rules new/1 applies, TLS's included, for an
%% experiment made by hand).
-spec check(amqp(), beamlab_experiment:experiment()) -> ok | {error, {amqp, {option, beamlab_schema:error_reason()}}}.
check(#{config := Cfg}, _Exp) ->
    case check_config(Cfg) of
        ok -> ok;
        {error, R} -> {error, {amqp, {option, R}}}
    end.

%% @doc Runs the load; a run that ended early (broker gone, node down)
%% still returns its document, whose verdict says so.
-spec run(amqp(), beamlab_experiment:experiment(), beamlab_experiment:inner()) ->
          {ok, beamlab_result:result()} | {error, {amqp, error_reason()}}.
run(#{config := Cfg0} = A, Exp, _Inner) ->
    Nodes0 = maps:get(nodes, A, this),
    case beamlab_experiment_dist:controller(maps:get(dist, A, #{}),
                                            case Nodes0 of L when is_list(L) -> L; _ -> [] end) of
        ok -> load(A, Cfg0, Exp);
        {error, R} -> {error, {amqp, {dist, R}}}
    end.

%% When the load started, in ms since the run's start (`Origin', the
%% origin of the telemetry's `t_ms'): the load's intervals (`interval_end_s')
%% count from there, so the report draws them on the telemetry's axis.
load_start(#{started_ms := Ms}, Origin, Doc) when is_integer(Ms) ->
    beamlab_result:set(extra, maps:put(load_start_ms, Ms - Origin, maps:get(extra, Doc, #{})), Doc);
load_start(_Report, _Origin, Doc) ->
    Doc.

load(A, Cfg0, Exp) ->
    Sink = maps:get(sink, Exp, fun(_) -> ok end),
    %% One clock origin, the run's start, for this VM's telemetry, the
    %% broker's and the load's intervals (`load_start_ms', #35).
    Origin = erlang:monotonic_time(millisecond),
    Sampler = beamlab_experiment_telemetry:start(maps:get(telemetry, Exp, none), Exp, #{t0 => Origin}),
    Started = beamlab_runtime_clock:rfc3339(),
    %% The broker's telemetry, one sample per reporting interval.
    Interval = max(1, round(maps:get(interval, Cfg0, 1) * 1000)),
    case beamlab_experiment_watch:start_beside(maps:get(watch, A, undefined), Interval, Exp, Origin) of
        {ok, Beside} ->
            %% (Watching may have made this VM a node: `this' is read now.)
            Nodes = case maps:get(nodes, A, this) of
                        this -> [node()];
                        N -> N
                    end,
            Cfg = Cfg0#{nodes => Nodes},
            %% --watch: the broker's figures under each interval line.
            Annotate = case Beside of
                           none -> none;
                           _ -> fun() -> beamlab_experiment_watch:line(Beside) end
                       end,
            %% --metrics-port: the rates and latencies as live metrics.
            Metrics = case beamlab_experiment_metrics:server(Exp) of
                          undefined -> none;
                          Server -> Server
                      end,
            case beamlab_amqp_perf:run(Cfg#{out => fun(Bin) -> Sink({amqp, Bin}) end,
                                            annotate => Annotate, metrics => Metrics}) of
                {ok, Report} ->
                    Doc0 = load_start(Report, Origin,
                                      beamlab_amqp_perf:result(Report, #{command => maps:get(command, Exp, []),
                                                                        started_at => Started,
                                                                        params => params(Cfg)})),
                    Doc1 = beamlab_experiment_telemetry:stop(Sampler, Doc0, Exp),
                    Doc2 = beamlab_experiment_watch:stop_beside(Beside, Doc1, Exp),
                    case beamlab_experiment_watch:summary(Beside, Doc2) of
                        none -> ok;
                        Text -> Sink({amqp, unicode:characters_to_binary(
                                              ["id: ", maps:get(id, Report), ", ", Text, "\n"])})
                    end,
                    {ok, beamlab_experiment_env:attach(Doc2, Exp)};
                {error, interrupted} ->
                    %% Interrupted while connecting (a silent server):
                    %% nothing measured, the run is over at once.
                    ok = beamlab_experiment_telemetry:cancel(Sampler),
                    ok = beamlab_experiment_watch:cancel_beside(Beside, Exp),
                    Sink({note, "interrupted before the run started"}),
                    Doc = beamlab_result:new(amqp, #{command => maps:get(command, Exp, []),
                                                     started_at => Started, params => params(Cfg)}),
                    {ok, beamlab_result:finish(Doc, #{finished_at => beamlab_runtime_clock:rfc3339(),
                                                      partial => true})};
                {error, Reason} ->
                    ok = beamlab_experiment_telemetry:cancel(Sampler),
                    ok = beamlab_experiment_watch:cancel_beside(Beside, Exp),
                    {error, {amqp, Reason}}
            end;
        {error, E} ->
            ok = beamlab_experiment_telemetry:cancel(Sampler),
            {error, {amqp, {watch, E}}}
    end.

%% The options as they go into the result document (JSON-friendly; the
%% bodies and the TLS files left out).
params(Cfg) ->
    maps:map(fun(_, V) -> param(V) end, maps:without([out, body, tls, annotate, metrics], Cfg)).

param(V) when is_atom(V), V =/= true, V =/= false, V =/= undefined -> atom_to_binary(V);
param(undefined) -> null;
param({peers, N}) -> N;
param({P, F, T}) when is_integer(F) -> #{pattern => P, from => F, to => T};
param({A, B}) when is_integer(A), is_integer(B) -> [A, B];
param({timestamp, T}) -> T;
param(L) when is_list(L) -> [param(X) || X <- L];
param(M) when is_map(M) -> maps:map(fun(_, X) -> param(X) end, M);
param({K, V}) when is_binary(K) -> #{key => K, value => param(V)};
param(V) when is_tuple(V) -> iolist_to_binary(io_lib:format("~0tp", [V]));
param(V) -> V.

%% @doc Failed when the run ended early (the reason in one line) or
%% measured nothing (with the likely reason); interrupted when it was.
-spec verdict(beamlab_result:result()) -> beamlab_experiment:verdict().
verdict(#{extra := #{<<"amqp">> := #{<<"failure">> := F}}}) when is_binary(F) ->
    {failed, [F]};
verdict(#{partial := true}) ->
    {interrupted, []};
verdict(#{extra := #{<<"amqp">> := Amqp}, benchmarks := Bs}) ->
    C = maps:get(<<"counters">>, Amqp, #{}),
    Sent = maps:get(<<"sent">>, C, 0),
    Received = maps:get(<<"received">>, C, 0),
    Queued = case maps:get(<<"queued">>, maps:get(<<"accounting">>, Amqp, #{}), null) of
                 Q when is_integer(Q) -> integer_to_list(Q);
                 _ -> "?"
             end,
    Names = [N || #{name := N} <- Bs],
    Published = lists:member(<<"sent">>, Names),
    ReceivedOn = lists:member(<<"received">>, Names),
    if
        Published, Sent =:= 0 ->
            {failed, ["no messages measured: nothing was published (is the broker blocking "
                      "publishers, e.g. a memory or disk alarm?)"]};
        ReceivedOn, Received =:= 0, Sent > 0 ->
            {failed, [io_lib:format("no messages measured: ~b sent, none received (~b returned, "
                                    "~ts still queued); the run ended before the consumers got "
                                    "any (large messages take time: give -D or a longer -z)",
                                    [Sent, maps:get(<<"returned">>, C, 0), Queued])]};
        true ->
            {ok, []}
    end.

%% @doc A node name that cannot work is the caller's mistake; what the
%% broker or the nodes did is a failure.
-spec error_class(error_reason()) -> usage | failure.
error_class({option, _}) -> usage;
error_class({watch, E}) -> beamlab_experiment_watch:error_class(E);
error_class({dist, E}) -> beamlab_experiment_dist:error_class(E);
error_class(_) -> failure.

%% @doc One line for each error.
-spec format_error(error_reason()) -> unicode:chardata().
format_error({option, R}) -> beamlab_schema:format_error(R);
format_error({watch, E}) -> ["--watch: ", beamlab_experiment_watch:format_error(E)];
format_error({dist, E}) -> beamlab_experiment_dist:format_error(E);
format_error(E) -> beamlab_amqp_perf:format_error(E).
