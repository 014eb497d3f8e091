-module(beamlab_command_amqp_tests).
-include_lib("eunit/include/eunit.hrl").

%% The load's configuration with where it runs, as the command describes
%% the experiment.
config(Argv) ->
    {ok, P} = beamlab_cli_args:parse(Argv, beamlab_command_amqp:options()),
    #{run := {amqp, #{config := C, nodes := N}}} = beamlab_command_amqp:experiment(P#{argv => Argv}),
    C#{nodes => N}.

usage_error(Argv) ->
    try config(Argv) of
        Cfg -> {no_error, Cfg}
    catch
        throw:{beamlab_cli_error, usage, Msg} -> lists:flatten(io_lib:format("~ts", [Msg]))
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
    ?assertMatch("malformed AMQP URI" ++ _, usage_error(["-h", "amqp://h:notaport/"])),
    ?assertMatch("-A (multi-ack) and -a" ++ _, usage_error(["-A", "5", "-a"])),
    ?assertMatch("give either -u or --queue-pattern" ++ _,
                 usage_error(["-u", "q", "--queue-pattern", "p-%d", "--queue-pattern-from", "1",
                              "--queue-pattern-to", "2"])),
    ?assertMatch("--queue-pattern needs" ++ _, usage_error(["--queue-pattern", "p-%d"])),
    ?assertMatch("--queue-pattern 'p' has no %d" ++ _,
                 usage_error(["--queue-pattern", "p", "--queue-pattern-from", "1",
                              "--queue-pattern-to", "2"])),
    ?assertMatch("--queue-pattern-from 3 is above" ++ _,
                 usage_error(["--queue-pattern", "p-%d", "--queue-pattern-from", "3",
                              "--queue-pattern-to", "2"])),
    ?assertMatch("-p needs the queue(s)" ++ _, usage_error(["-p"])),
    ?assertMatch("--nodes: 'nohost' is not a node name" ++ _, usage_error(["--nodes", "nohost"])).

bad_values_are_parse_errors_test() ->
    Opts = beamlab_command_amqp:options(),
    ?assertMatch({error, _}, beamlab_cli_args:parse(["-f", "urgent"], Opts)),
    ?assertMatch({error, _}, beamlab_cli_args:parse(["-x", "-1"], Opts)),
    ?assertMatch({error, _}, beamlab_cli_args:parse(["-r", "0"], Opts)),
    ?assertMatch({error, _}, beamlab_cli_args:parse(["-t", "nonsense"], Opts)).
