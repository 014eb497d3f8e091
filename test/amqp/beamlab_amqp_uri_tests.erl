-module(beamlab_amqp_uri_tests).

-include_lib("eunit/include/eunit.hrl").

ok(Uri) ->
    {ok, M} = beamlab_amqp_uri:parse(Uri),
    M.

err(Uri) ->
    {error, R} = beamlab_amqp_uri:parse(Uri),
    lists:flatten(beamlab_amqp_uri:format_error(R)).

defaults_test() ->
    ?assertEqual(beamlab_amqp_uri:defaults(), ok("amqp://")),
    ?assertEqual(beamlab_amqp_uri:defaults(), ok(<<"amqp://localhost:5672/%2F">>)),
    ?assertMatch(#{host := "localhost", port := 5672, user := <<"guest">>,
                   password := <<"guest">>, vhost := <<"/">>}, ok("amqp://")).

full_test() ->
    ?assertMatch(#{host := "rabbit.example", port := 5673, user := <<"bob">>,
                   password := <<"s3cr:t@">>, vhost := <<"prod/eu">>, heartbeat := 10,
                   frame_max := 8192, channel_max := 5, connection_timeout := 2500},
                 ok("amqp://bob:s3cr%3At%40@rabbit.example:5673/prod%2Feu"
                    "?heartbeat=10&frame_max=8192&channel_max=5&connection_timeout=2500")).

user_without_password_test() ->
    ?assertMatch(#{user := <<"bob">>, password := <<"guest">>}, ok("amqp://bob@h")).

vhost_test() ->
    ?assertMatch(#{vhost := <<"/">>}, ok("amqp://h")),
    ?assertMatch(#{vhost := <<"/">>}, ok("amqp://h/")),
    ?assertMatch(#{vhost := <<"v1">>}, ok("amqp://h/v1")),
    ?assertMatch(#{vhost := <<"a b">>}, ok("amqp://h/a%20b")).

ipv6_and_case_test() ->
    ?assertMatch(#{host := "::1", port := 5673}, ok("amqp://[::1]:5673")),
    ?assertMatch(#{host := "h"}, ok("AMQP://h")),
    ?assertMatch(#{heartbeat := 0}, ok("amqp://h?heartbeat=0")).

%% The line a user sees has been through the secret policy: the form it
%% names is not taken for a URI with a password (it read "[user[:****@]host").
malformed_line_unmasked_test() ->
    Line = err("localhost"),
    ?assertEqual(list_to_binary(Line), beamlab_result_redact:text(Line)).

malformed_test_() ->
    [?_assertEqual("malformed AMQP URI localhost: expected amqp:// or amqps://, then [user[:password]@]host[:port][/vhost]",
                   err("localhost")),
     ?_assertEqual("http://h: scheme must be amqp://, not http://", err("http://h")),
     ?_assertEqual("amqp://h?cacertfile=ca.pem: cacertfile is a TLS parameter: use an amqps:// URI",
                   err("amqp://h?cacertfile=ca.pem")),
     ?_assertEqual("amqps://h?verify=maybe: bad value \"maybe\" for verify (expected verify_peer or verify_none)",
                   err("amqps://h?verify=maybe")),
     ?_assertEqual("amqp://h?auth_mechanism=kerberos: bad value \"kerberos\" for auth_mechanism "
                   "(expected plain or external)", err("amqp://h?auth_mechanism=kerberos")),
     ?_assertEqual("amqp://h:0: port must be 1..65535, got 0", err("amqp://h:0")),
     ?_assertEqual("amqp://h:70000: port must be 1..65535, got 70000", err("amqp://h:70000")),
     ?_assertEqual("malformed AMQP URI amqp://h:port: not a valid URI", err("amqp://h:port")),
     ?_assertEqual("amqp://h/a/b: vhost \"a/b\" contains '/'; percent-encode it (e.g. %2F for \"/\")",
                   err("amqp://h/a/b")),
     ?_assertEqual("amqp://h/%zz: bad percent-encoding in \"%zz\"", err("amqp://h/%zz")),
     ?_assertEqual("amqp://h?heartbeat=ten: bad value \"ten\" for heartbeat (expected an integer)",
                   err("amqp://h?heartbeat=ten")),
     ?_assertEqual("amqp://h?heartbeat=-1: bad value \"-1\" for heartbeat (expected an integer)",
                   err("amqp://h?heartbeat=-1")),
     ?_assertEqual("amqp://h?heartbeat: bad value \"\" for heartbeat (expected an integer)",
                   err("amqp://h?heartbeat")),
     ?_assertEqual("amqp://h?prefetch=1: unknown parameter \"prefetch\" (known: heartbeat, "
                   "frame_max, channel_max, connection_timeout, auth_mechanism; with amqps: "
                   "cacertfile, certfile, keyfile, verify, server_name_indication)",
                   err("amqp://h?prefetch=1")),
     ?_assertEqual("malformed AMQP URI amqp://h#x: fragments (#...) are not allowed", err("amqp://h#x"))].

%% amqps://: TLS on port 5671 by default, RabbitMQ's TLS query parameters.
tls_test() ->
    ?assertMatch(#{tls := false, port := 5672, auth_mechanism := plain}, ok("amqp://h")),
    ?assertMatch(#{tls := #{}, port := 5671}, ok("amqps://h")),
    ?assertMatch(#{tls := #{cacertfile := "/ca.pem", verify := verify_none,
                            server_name_indication := "broker.example"},
                   port := 6000, auth_mechanism := external},
                 ok("amqps://h:6000?cacertfile=/ca.pem&verify=verify_none"
                    "&server_name_indication=broker.example&auth_mechanism=external")).

password_never_printed_test() ->
    Msg = err("amqp://bob:hunter2@h:0/"),
    ?assertEqual(nomatch, string:find(Msg, "hunter2")),
    ?assertNotEqual(nomatch, string:find(Msg, "bob:****@h")).
