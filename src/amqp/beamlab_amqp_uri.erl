%%% @doc Parser for `amqp://' URIs as RabbitMQ documents them:
%%% `amqp://user:pass@host:port/vhost?heartbeat=10&frame_max=131072', and
%%% `amqps://' (TLS, port 5671) with RabbitMQ's TLS query parameters
%%% (`cacertfile', `certfile', `keyfile', `verify', `server_name_indication',
%%% `auth_mechanism').
%%% Every part is optional (defaults guest/guest@localhost:5672, vhost "/");
%%% user, password and vhost are percent-decoded, so vhost "/" is written
%%% `%2F'. An empty path and a bare "/" both mean the default vhost "/"
%%% (the empty vhost name is never useful and is a common typo).
-module(beamlab_amqp_uri).

-export([parse/1, defaults/0, format_error/1]).

-export_type([params/0, error/0]).

-type params() :: #{host := string(), port := 1..65535, user := binary(),
                    password := binary(), vhost := binary(),
                    heartbeat := non_neg_integer(), frame_max := non_neg_integer(),
                    channel_max := non_neg_integer(), connection_timeout := pos_integer(),
                    %% amqps://: TLS with these options.
                    tls := false | beamlab_amqp:tls_opts(),
                    auth_mechanism := plain | external}.

%% Why a URI was refused (format_error/1 prints it without the password).
-type error() :: {malformed | bad_vhost, unicode:chardata(), string()}
               | {bad_scheme, string(), string()}
               | {bad_port, string(), term()}
               | {bad_query_value, string(), string(), string()}
               | {unknown_query_param | tls_param_without_tls, string(), string()}
               | {bad_percent_encoding, string(), password | string()}.

-define(QUERY_KEYS, [{"heartbeat", heartbeat, 0, 16#FFFF},
                     {"frame_max", frame_max, 0, 16#FFFFFFFF},
                     {"channel_max", channel_max, 0, 16#FFFF},
                     {"connection_timeout", connection_timeout, 1, 16#FFFFFFFF}]).
%% TLS parameters of amqps:// URIs (RabbitMQ's URI query parameters).
-define(TLS_KEYS, [{"cacertfile", cacertfile}, {"certfile", certfile}, {"keyfile", keyfile},
                   {"verify", verify}, {"server_name_indication", server_name_indication}]).
-define(KNOWN, "heartbeat, frame_max, channel_max, connection_timeout, auth_mechanism; "
               "with amqps: cacertfile, certfile, keyfile, verify, server_name_indication").

%% @doc The connection parameters used for anything a URI leaves out.
-spec defaults() -> params().
defaults() ->
    #{host => "localhost", port => 5672, user => <<"guest">>, password => <<"guest">>,
      vhost => <<"/">>, heartbeat => 60, frame_max => 131072, channel_max => 2047,
      connection_timeout => 10000, tls => false, auth_mechanism => plain}.

%% @doc Parse an AMQP URI into connection parameters.
-spec parse(unicode:chardata()) -> {ok, params()} | {error, error()}.
parse(Uri) when is_binary(Uri) ->
    case unicode:characters_to_list(Uri) of
        L when is_list(L) -> parse(L);
        _ -> {error, {malformed, Uri, "not valid UTF-8"}}
    end;
parse(Uri) when is_list(Uri) ->
    try
        {ok, parse_map(Uri, uri_string:parse(Uri))}
    catch throw:{uri_error, Reason} -> {error, Reason}
    end.

parse_map(Uri, {error, _, _}) ->
    throw({uri_error, {malformed, Uri, "not a valid URI"}});
parse_map(Uri, #{scheme := Scheme} = M) ->
    D0 = defaults(),
    D = case string:lowercase(Scheme) of
            "amqp" -> D0;
            "amqps" -> D0#{port := 5671, tls := #{}};
            _ -> throw({uri_error, {bad_scheme, Uri, Scheme}})
        end,
    case maps:get(fragment, M, undefined) of
        undefined -> ok;
        _ -> throw({uri_error, {malformed, Uri, "fragments (#...) are not allowed"}})
    end,
    P1 = userinfo(Uri, maps:get(userinfo, M, undefined), D),
    P2 = P1#{host => host(maps:get(host, M, ""))},
    P3 = case maps:get(port, M, undefined) of
             undefined -> P2;
             Port when is_integer(Port), Port >= 1, Port =< 65535 -> P2#{port => Port};
             Port -> throw({uri_error, {bad_port, Uri, Port}})
         end,
    P4 = P3#{vhost => vhost(Uri, maps:get(path, M, ""))},
    query(Uri, maps:get(query, M, ""), P4);
parse_map(Uri, _) ->
    %% (worded so that the secret policy's URI pattern finds no password
    %% in it: "amqp://[user[:password]@]host" came out as "[user[:****@]host")
    throw({uri_error, {malformed, Uri, "expected amqp:// or amqps://, then [user[:password]@]host[:port][/vhost]"}}).

userinfo(_Uri, undefined, D) ->
    D;
userinfo(Uri, Info, D) ->
    case string:split(Info, ":") of
        [User] -> D#{user => decode(Uri, User)};
        [User, Pass] -> D#{user => decode(Uri, User), password => decode(Uri, password, Pass)}
    end.

host("") -> "localhost";
host(H) -> H.

vhost(_Uri, "") -> <<"/">>;
vhost(_Uri, "/") -> <<"/">>;
vhost(Uri, "/" ++ Path) ->
    case lists:member($/, Path) of
        true -> throw({uri_error, {bad_vhost, Uri, Path}});
        false -> decode(Uri, Path)
    end.

query(_Uri, "", P) ->
    P;
query(Uri, Query, P) ->
    case uri_string:dissect_query(Query) of
        Pairs when is_list(Pairs) ->
            lists:foldl(fun(KV, Acc) -> query_param(Uri, KV, Acc) end, P, Pairs);
        _ ->
            throw({uri_error, {malformed, Uri, "bad query string"}})
    end.

query_param(Uri, {"auth_mechanism", V}, P) when is_list(V) ->
    case string:lowercase(V) of
        "plain" -> P#{auth_mechanism => plain};
        "external" -> P#{auth_mechanism => external};
        _ -> throw({uri_error, {bad_query_value, Uri, "auth_mechanism", V}})
    end;
query_param(Uri, {K, V}, P) when is_list(K), is_list(V) ->
    case {lists:keyfind(K, 1, ?QUERY_KEYS), lists:keyfind(K, 1, ?TLS_KEYS)} of
        {{K, Key, Min, Max}, _} ->
            case string:to_integer(V) of
                {N, ""} when N >= Min, N =< Max -> P#{Key => N};
                _ -> throw({uri_error, {bad_query_value, Uri, K, V}})
            end;
        {false, {K, Key}} ->
            case P of
                #{tls := Tls} when is_map(Tls) -> P#{tls := Tls#{Key => tls_value(Uri, Key, V)}};
                _ -> throw({uri_error, {tls_param_without_tls, Uri, K}})
            end;
        {false, false} ->
            throw({uri_error, {unknown_query_param, Uri, K}})
    end;
query_param(Uri, {K, true}, _P) ->
    throw({uri_error, {bad_query_value, Uri, K, ""}}).

tls_value(Uri, verify, V) ->
    case V of
        "verify_peer" -> verify_peer;
        "verify_none" -> verify_none;
        _ -> throw({uri_error, {bad_query_value, Uri, "verify", V}})
    end;
tls_value(_Uri, _Key, V) ->
    V.

decode(Uri, S) ->
    decode(Uri, S, S).

%% `Shown' is what an error may print of the part: never the password.
decode(Uri, Shown, S) ->
    case uri_string:percent_decode(S) of
        D when is_list(D) ->
            case unicode:characters_to_binary(D) of
                B when is_binary(B) -> B;
                _ -> throw({uri_error, {bad_percent_encoding, Uri, Shown}})
            end;
        _ -> throw({uri_error, {bad_percent_encoding, Uri, Shown}})
    end.

%% @doc One line for a URI error.
-spec format_error(error()) -> iolist().
format_error(Reason) ->
    beamlab_format_reason:line(fun error_line/1, Reason).

error_line({malformed, Uri, Why}) ->
    io_lib:format("malformed AMQP URI ~ts: ~ts", [redact(Uri), Why]);
error_line({tls_param_without_tls, Uri, K}) ->
    io_lib:format("~ts: ~ts is a TLS parameter: use an amqps:// URI", [redact(Uri), K]);
error_line({bad_scheme, Uri, Scheme}) ->
    io_lib:format("~ts: scheme must be amqp://, not ~ts://", [redact(Uri), Scheme]);
error_line({bad_port, Uri, Port}) ->
    io_lib:format("~ts: port must be 1..65535, got ~p", [redact(Uri), Port]);
error_line({bad_vhost, Uri, Path}) ->
    io_lib:format("~ts: vhost \"~ts\" contains '/'; percent-encode it (e.g. %2F for \"/\")",
                  [redact(Uri), Path]);
error_line({bad_query_value, Uri, K, V}) ->
    Expected = case K of
                   "verify" -> "verify_peer or verify_none";
                   "auth_mechanism" -> "plain or external";
                   _ -> "an integer"
               end,
    %% A value holding '=', ';' or '&' may hold another parameter (and
    %% its secret, decoded): it is not echoed (#34).
    case lists:any(fun(C) -> lists:member(C, "=;&") end, V) of
        true -> io_lib:format("~ts: bad value for ~ts (expected ~ts; parameters are separated by '&')",
                              [redact(Uri), K, Expected]);
        false -> io_lib:format("~ts: bad value \"~ts\" for ~ts (expected ~ts)",
                               [redact(Uri), beamlab_result_redact:text(V), K, Expected])
    end;
error_line({unknown_query_param, Uri, K}) ->
    io_lib:format("~ts: unknown parameter \"~ts\" (known: ~ts)", [redact(Uri), K, ?KNOWN]);
error_line({bad_percent_encoding, Uri, password}) ->
    io_lib:format("~ts: bad percent-encoding in the password", [redact(Uri)]);
error_line({bad_percent_encoding, Uri, S}) ->
    io_lib:format("~ts: bad percent-encoding in \"~ts\"", [redact(Uri), S]);
error_line(Other) ->
    %% (a reason of no kind above: printed, never raised)
    beamlab_format_reason:term(Other).

%% Never print a password back.
redact(Uri) ->
    beamlab_result_redact:text(Uri).
