-module(beamlab_report_flame_tests).
%% Profiles, their pairing into differentials and the table of changed
%% functions.
-include_lib("eunit/include/eunit.hrl").

profile_doc(Subject, Benchmarks, Stacks) ->
    D0 = beamlab_result:new(profile, #{command => [], started_at => <<"2026-01-01T00:00:00Z">>,
                                       params => #{subject => Subject}}),
    D1 = beamlab_result:add_benchmarks(D0, [beamlab_result:benchmark(B, [1, 2], #{}) || B <- Benchmarks]),
    beamlab_result:set(extra, #{profile => #{subject => Subject, samples => lists:sum([C || [_, C] <- Stacks]),
                                             stacks => Stacks}}, D1).

%% The same benchmark pairs whatever the subject; the same label pairs
%% other code; anything else stands alone.
pairing_test() ->
    S = [[<<"scheduler;m:f/0">>, 10]],
    Runs = [{<<"a">>, profile_doc(<<"beamlab run x -pa /one">>, [<<"m:f().">>], S)},
            {<<"b">>, profile_doc(<<"beamlab run x -pa /two">>, [<<"m:f().">>], S)},
            {<<"c">>, profile_doc(<<"hot">>, [<<"m:g().">>], S)},
            {<<"d">>, profile_doc(<<"hot">>, [], S)},
            {<<"e">>, profile_doc(<<"OS pid 1">>, [], S)}],
    Ps = beamlab_report_flame:profiles(Runs),
    ?assertEqual([<<"a">>, <<"b">>, <<"c">>, <<"d">>, <<"e">>], [L || #{label := L} <- Ps]),
    ?assertEqual([{0, 1}, {2, 3}], [{B, N} || #{base := B, new := N} <- beamlab_report_flame:diffs(Ps)]).

%% A matrix's configurations pair with its first.
matrix_configs_test() ->
    P = #{<<"samples">> => 1, <<"stacks">> => [[<<"scheduler;f">>, 1]]},
    D0 = beamlab_result:new(matrix, #{command => [], started_at => <<"2026-01-01T00:00:00Z">>,
                                      params => #{inner_command => [<<"amqp">>]}}),
    D = beamlab_result:set(extra, #{configs => [#{name => N, profile => P} || N <- [<<"jit">>, <<"emu">>]]}, D0),
    Ps = beamlab_report_flame:profiles([{<<"m">>, D}]),
    ?assertEqual([<<"m: jit">>, <<"m: emu">>], [L || #{label := L} <- Ps]),
    ?assertMatch([#{base := 0, new := 1}], beamlab_report_flame:diffs(Ps)).

%% A caption names a configuration once and cuts long paths: a profiled
%% `matrix --target' with amqp as the load.
caption_detail_test() ->
    Subject = <<"target under amqp -pa /work/wt/x/_build/default/lib/beamlab/ebin --rate 10">>,
    P = #{<<"samples">> => 1, <<"stacks">> => [[<<"scheduler;f">>, 1]], <<"subject">> => Subject},
    D0 = beamlab_result:new(matrix, #{command => [], started_at => <<"2026-01-01T00:00:00Z">>,
                                      params => #{inner_command => [<<"amqp">>]}}),
    D = beamlab_result:set(extra, #{configs => [#{name => <<"jit">>, profile => P}]}, D0),
    [#{label := L, detail := Detail}] = beamlab_report_flame:profiles([{<<"m">>, D}]),
    ?assertEqual(<<"m: jit">>, L),
    ?assertEqual(<<"target under amqp -pa \x{2026}/ebin --rate 10"/utf8>>, Detail),
    %% Without a subject of its own, the configuration's name is not repeated.
    D2 = beamlab_result:set(extra, #{configs => [#{name => <<"jit">>, profile => maps:remove(<<"subject">>, P)}]}, D0),
    ?assertMatch([#{label := <<"m: jit">>, detail := <<>>}], beamlab_report_flame:profiles([{<<"m">>, D2}])),
    %% --label as the subject of a profile saved under that name.
    ?assertMatch([#{detail := <<>>}], beamlab_report_flame:profiles([{<<"hot">>, profile_doc(<<"hot">>, [], [])}])).

%% Counter-named runner modules of older files are one name.
normalise_test() ->
    ?assertEqual([[<<"scheduler;beamlab_gen_N:'$continuous'/3;m:f/0">>, 5]],
                 beamlab_report_flame:normalise([[<<"scheduler;beamlab_gen_17:'$continuous'/3;m:f/0">>, 2],
                                                 [<<"scheduler;beamlab_gen_3:'$continuous'/3;m:f/0">>, 3]])),
    %% Names derived from the code (8 hex digits) stay.
    ?assertEqual([[<<"scheduler;beamlab_gen_00c0ffee:'$runner'/0">>, 1]],
                 beamlab_report_flame:normalise([[<<"scheduler;beamlab_gen_00c0ffee:'$runner'/0">>, 1]])).

%% Shares of each profile's own samples: hot falls from 80% to 20%, cold
%% rises; the thread root is not a function.
diff_table_test() ->
    Before = #{stacks => [[<<"scheduler;run;hot">>, 80], [<<"scheduler;run;cold">>, 20]]},
    After = #{stacks => [[<<"scheduler;run;hot">>, 40], [<<"scheduler;run;cold">>, 160]]},
    Rows = beamlab_report_flame:diff_table(Before, After),
    ?assertEqual([#{function => <<"cold">>, before => 20.0, 'after' => 80.0, change => 60.0,
                    self_before => 20.0, self_after => 80.0},
                  #{function => <<"hot">>, before => 80.0, 'after' => 20.0, change => -60.0,
                    self_before => 80.0, self_after => 20.0}], Rows).
