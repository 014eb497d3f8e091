-module(beamlab_cli_broker_watch_tests).
-include_lib("eunit/include/eunit.hrl").

mask_cookie_test() ->
    ?assertEqual(["amqp", "--cookie", "***", "-z", "1"],
                 beamlab_cli_broker_watch:mask_cookie(["amqp", "--cookie", "secret", "-z", "1"])),
    ?assertEqual([<<"watch">>, <<"--cookie=***">>],
                 beamlab_cli_broker_watch:mask_cookie([<<"watch">>, <<"--cookie=secret">>])),
    ?assertEqual([<<"--cookie">>, <<"***">>],
                 beamlab_cli_broker_watch:mask_cookie([<<"--cookie">>, <<"secret">>])),
    ?assertEqual(["--cookie"], beamlab_cli_broker_watch:mask_cookie(["--cookie"])).
