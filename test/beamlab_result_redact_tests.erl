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
