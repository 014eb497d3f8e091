%%% @doc An AMQP 0-9-1 load as an experiment: PerfTest's run
%%% (`beamlab_amqp_perf'), the broker's telemetry beside it (`watch'),
%%% this VM's telemetry and the detectors' findings; PerfTest's report
%%% lines go to the sink as `{amqp, Line}'.
-module(beamlab_experiment_amqp).

-behaviour(beamlab_experiment_kind).

-include_lib("kernel/include/file.hrl").

-export([name/0, options/0, new/1, check/2, run/3, verdict/1, error_class/1, format_error/1]).
-export([check_options/1, check_config/1, check_name/2, queue_file/1]).

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
    Bounded = bounded() ++ texts(),
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
       metavar => "URI,URI...", check => fun(Us) -> first_error([check_uri(U) || U <- Us]) end,
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
     %% (the command line's --tls-*-file flags make this map and check
     %% their files themselves, naming the flags)
     #{name => tls, type => map, check => fun check_tls/1}].

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
        [{K, F, Why} | _] ->
            {error, [atom_to_list(K), " ", beamlab_schema:value_text(F), ": ", Why]};
        [] when is_map_key(certfile, Files) =/= is_map_key(keyfile, Files) ->
            {error, "certfile and keyfile go together"};
        [] ->
            case beamlab_amqp_tls:check_files(Files) of
                ok -> ok;
                {error, E} ->
                    %% (its line names the command line's flags: the keys here)
                    Line = unicode:characters_to_list(beamlab_amqp_tls:format_error(E)),
                    {error, lists:foldl(fun({Flag, Key}, L) -> string:replace(L, Flag, Key, all) end, Line,
                                        [{"--tls-ca-file", "cacertfile"}, {"--tls-cert-file", "certfile"},
                                         {"--tls-key-file", "keyfile"}])}
            end
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
     %% Last: the command line reads these four as text and checks them
     %% once it has read every flag; the order here is the order of the
     %% checks, the same for both front ends.
     #{name => interval, short => "i", type => number, min => 0.01, max => 86400, max_why => "one day",
       long => "interval",
       cli_type => string,
       default => 1,
       metavar => "SECONDS",
       help => "reporting interval"},
     #{name => duration, short => "z", type => {one_of, [pos_number, Undef]}, max => ?MAX_SECONDS,
       max_why => "one year",
       long => "time",
       cli_type => string,
       metavar => "SECONDS",
       help => "run duration (default: until -C/-D counts, --exit-when or Ctrl-C)"},
     #{name => rate, short => "r", type => Rate, min => 0, max => ?MAX_RATE,
       max_why => "messages per second per channel",
       long => "rate",
       cli_type => string,
       metavar => "MSG/S",
       help => "rate limit of each producer channel (default: unlimited; 0: publish nothing)"},
     %% (0: no limit, as PerfTest's -R)
     #{name => consumer_rate, short => "R", type => Rate, min => 0, max => ?MAX_RATE,
       max_why => "messages per second per channel",
       long => "consumer-rate",
       cli_type => string,
       metavar => "MSG/S",
       help => "rate limit of each consumer channel"}].

%% @doc Checks the options given (load generator's keys, as given) against
%% the schema: types and bounds, each with its reason. The command line
%% checks its flags' values here too, so both refuse the same values for
%% the same reason.
-spec check_options(#{atom() => term()}) -> ok | {error, beamlab_schema:error_reason()}.
check_options(Given) ->
    Declared = bounded() ++ texts(),
    beamlab_schema:check(Declared, maps:with([N || #{name := N} <- Declared], Given)).

%% @doc Checks a whole configuration for a run that cannot work: a
%% frame_max below AMQP's smallest, nothing to run, or a consumer count
%% (`cmessages') that can never be reached without a duration (the run
%% would wait forever without a word).
-spec check_config(beamlab_amqp_perf:options()) -> ok | {error, beamlab_schema:error_reason()}.
check_config(Cfg) ->
    G = fun(K) -> maps:get(K, maps:merge(config_defaults(), Cfg)) end,
    {ok, FrameMax} = beamlab_schema:find(frame_max, bounded()),
    case G(frame_max) of
        F when is_integer(F), F > 0, F < 4096 ->
            {error, {rule, "invalid value '~ts' for ~ts: 0 (the broker's) or at least 4096 "
                           "(AMQP's smallest frame_max)", [{value, F}, {opt, FrameMax}]}};
        _ ->
            check_work(G)
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

build_config(Opts) ->
    Defaults = config_defaults(),
    Cfg0 = maps:merge(Defaults, maps:with(maps:keys(Defaults), Opts)),
    Cfg = Cfg0#{uri := unicode:characters_to_binary(maps:get(uri, Cfg0)),
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

%% @doc A run that cannot work is refused before anything starts
%% (check_config/1).
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

load(A, Cfg0, Exp) ->
    Sink = maps:get(sink, Exp, fun(_) -> ok end),
    Sampler = beamlab_experiment_telemetry:start(maps:get(telemetry, Exp, none), Exp),
    Started = beamlab_runtime_clock:rfc3339(),
    %% The broker's telemetry, one sample per reporting interval.
    Interval = max(1, round(maps:get(interval, Cfg0, 1) * 1000)),
    case beamlab_experiment_watch:start_beside(maps:get(watch, A, undefined), Interval, Exp) of
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
                    Doc0 = beamlab_amqp_perf:result(Report, #{command => maps:get(command, Exp, []),
                                                              started_at => Started,
                                                              params => params(Cfg)}),
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
