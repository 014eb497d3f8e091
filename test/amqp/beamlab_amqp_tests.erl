-module(beamlab_amqp_tests).

-include_lib("eunit/include/eunit.hrl").

msg(E) -> binary_to_list(iolist_to_binary(beamlab_amqp:format_error(E))).

%% Bad parameters in a map are errors before any socket is opened.
bad_params_test_() ->
    Base = #{host => "127.0.0.1", port => 1},
    [?_assertEqual({error, {bad_param, K, V}}, beamlab_amqp:connect(maps:put(K, V, Base), #{}))
     || {K, V} <- [{port, 0}, {port, 65536}, {port, "5672"}, {heartbeat, -1},
                   {frame_max, 100}, {channel_max, 70000}, {connection_timeout, 0},
                   {user, 42}, {host, 5}]].

%% Options override the URI, and URI errors come back wrapped.
uri_errors_test() ->
    ?assertEqual({error, {bad_param, frame_max, 1}},
                 beamlab_amqp:connect("amqp://127.0.0.1:1", #{frame_max => 1})),
    {error, {uri, _} = E} = beamlab_amqp:connect("amqp://h/a/b", #{}),
    ?assertEqual("amqp://h/a/b: vhost \"a/b\" contains '/'; percent-encode it (e.g. %2F for \"/\")",
                 msg(E)).

format_error_test_() ->
    [?_assertEqual(Expected, msg(E)) || {E, Expected} <-
        [{{unreachable, "h", 5672, econnrefused}, "broker not reachable at h:5672 (connection refused)"},
         {{unreachable, "h", 5672, nxdomain}, "broker not reachable at h:5672 (non-existing domain)"},
         {{access_refused, <<"bob">>, <<"ACCESS_REFUSED - x">>},
          "wrong credentials for user \"bob\" (ACCESS_REFUSED - x)"},
         {{vhost_not_found, <<"v">>, <<"NOT_ALLOWED - vhost v not found">>},
          "virtual host \"v\" not found or not allowed (NOT_ALLOWED - vhost v not found)"},
         {{timeout, connect}, "timed out connecting to the broker"},
         {{timeout, 'queue.declare'}, "timed out waiting for the broker (queue.declare)"},
         {{closed_during, open}, "the broker closed the connection during negotiation (open)"},
         {{amqp_closed, 404, <<"NOT_FOUND - no queue 'q'">>},
          "broker closed the channel: 404 NOT_FOUND - no queue 'q'"},
         {{connection_closed, 320, <<"CONNECTION_FORCED - bye">>},
          "broker closed the connection: 320 CONNECTION_FORCED - bye"},
         {{heartbeat_timeout, <<"missed heartbeats from h:1 (no data for 2 s)">>},
          "missed heartbeats from h:1 (no data for 2 s)"},
         {{no_auth_mechanism, <<"PLAIN">>, <<"AMQPLAIN">>},
          "the broker does not offer PLAIN authentication (offers: AMQPLAIN)"},
         {{tls, <<"h:5671">>, {alert, unknown_ca, <<"unknown_ca">>}},
          "TLS connection to h:5671 failed: the broker's certificate is not signed by a trusted CA (give its CA with --tls-ca-file) "
          "(unknown_ca)"},
         {{tls, <<"h:5671">>, {alert, handshake_failure, <<"hostname_check_failed">>}},
          "TLS connection to h:5671 failed: the broker's certificate does not name this host (give "
          "the name it has with --server-name-indication, or connect by that name) "
          "(hostname_check_failed)"},
         {{external_refused, <<"ACCESS_REFUSED">>},
          "the broker refused the user named by the client certificate (SASL EXTERNAL: does that "
          "user exist, with access to the vhost?) (ACCESS_REFUSED)"},
         {{channel_max, 3}, "no free channel (channel_max is 3)"},
         {{protocol, <<"the server does not speak AMQP">>},
          "AMQP protocol error: the server does not speak AMQP"},
         {{bad_param, port, 0}, "bad connection parameter port: 0"},
         {closed, "the connection or channel is closed"}]].

%% The async functions address the connection process directly.
async_to_dead_connection_test() ->
    {Dead, Mon} = spawn_monitor(fun() -> ok end),
    receive {'DOWN', Mon, process, Dead, _} -> ok end,
    Ch = {amqp_channel, Dead, 1, 131072},
    ?assertEqual(ok, beamlab_amqp:publish(Ch, <<>>, <<"q">>, <<"b">>)),
    ?assertEqual(ok, beamlab_amqp:ack(Ch, 1, false)),
    ?assertEqual({error, closed}, beamlab_amqp:declare_queue(Ch, <<"q">>, #{})),
    ?assertEqual({error, closed}, beamlab_amqp:open_channel(Dead)),
    ?assertEqual(ok, beamlab_amqp:close(Dead)),
    ?assertEqual(0, beamlab_amqp:pending(Dead)).
