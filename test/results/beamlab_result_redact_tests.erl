-module(beamlab_result_redact_tests).
-include_lib("eunit/include/eunit.hrl").

argv_masks_cookies_test() ->
    ?assertEqual([<<"amqp">>, <<"--cookie">>, <<"****">>, <<"-z">>, <<"1">>],
                 beamlab_result_redact:argv(["amqp", "--cookie", "secret", "-z", "1"])),
    ?assertEqual([<<"watch">>, <<"--cookie=****">>],
                 beamlab_result_redact:argv([<<"watch">>, <<"--cookie=secret">>])),
    ?assertEqual([<<"--cookie">>], beamlab_result_redact:argv(["--cookie"])).

argv_masks_uri_passwords_test() ->
    ?assertEqual([<<"amqp">>, <<"-h">>, <<"amqp://guest:****@127.0.0.1:5672/%2F">>],
                 beamlab_result_redact:argv(["amqp", "-h", "amqp://guest:s3cret@127.0.0.1:5672/%2F"])).

%% An application parameter whose key names a secret (a node's arguments,
%% RabbitMQ's default_pass), in one string and in a command line; other
%% parameters stay.
app_params_test() ->
    T = fun beamlab_result_redact:text/1,
    ?assertEqual(<<"-rabbit default_pass ****">>, T(<<"-rabbit default_pass <<\"guest\">>">>)),
    ?assertEqual(<<"-myapp db_password **** -other x">>, T(<<"-myapp db_password hunter2 -other x">>)),
    ?assertEqual(<<"-app api_token ****">>, T(<<"-app api_token xyz">>)),
    ?assertEqual(<<"-kernel inet_dist_use_interface {127,0,0,1}">>, T(<<"-kernel inet_dist_use_interface {127,0,0,1}">>)),
    ?assertEqual(<<"-app bypass 1">>, T(<<"-app bypass 1">>)),
    ?assertEqual([<<"erl">>, <<"-rabbit">>, <<"default_pass">>, <<"****">>, <<"-app">>, <<"bypass">>, <<"1">>,
                  <<"-s">>, <<"x">>],
                 beamlab_result_redact:argv(["erl", "-rabbit", "default_pass", "<<\"guest\">>", "-app", "bypass", "1",
                                             "-s", "x"])).

%% #34: a query parameter whose name says it is a secret, in every URI of
%% a text (an error line, a command line, a document); a percent-encoded
%% name is masked too; other parameters and text outside URIs stay.
uri_query_secrets_test() ->
    T = fun beamlab_result_redact:text/1,
    ?assertEqual(<<"amqp://user:****@host/%2F?password=**** unknown parameter \"password\"">>,
                 T(<<"amqp://user:PW@host/%2F?password=PW unknown parameter \"password\"">>)),
    ?assertEqual(<<"amqps://h/v?heartbeat=5&token=****;api_key=****&pass%77ord=****#f">>,
                 T(<<"amqps://h/v?heartbeat=5&token=T1;api_key=K&pass%77ord=Q#f">>)),
    ?assertEqual(<<"amqp://h?heartbeat=5&frame_max=4096">>, T(<<"amqp://h?heartbeat=5&frame_max=4096">>)),
    ?assertEqual(<<"why? password=x">>, T(<<"why? password=x">>) =/= <<>> andalso <<"why? password=x">>),
    ?assertEqual([<<"amqp">>, <<"-h">>, <<"amqp://a/%2F?Secret_Key=****">>],
                 beamlab_result_redact:argv(["amqp", "-h", "amqp://a/%2F?Secret_Key=xyz"])),
    ?assertEqual(#{<<"uri">> => <<"amqp://a?cookie=****">>},
                 beamlab_result_redact:document(#{<<"uri">> => <<"amqp://a?cookie=c">>})).
