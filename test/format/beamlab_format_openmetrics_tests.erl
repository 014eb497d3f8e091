-module(beamlab_format_openmetrics_tests).
-include_lib("eunit/include/eunit.hrl").

-define(M, beamlab_format_openmetrics).

text(Families, Format) ->
    iolist_to_binary(?M:render(Families, Format)).

lines(B) ->
    binary:split(B, <<"\n">>, [global, trim]).

counter() ->
    #{name => <<"beamlab_node_reductions">>, type => counter, help => <<"Reductions done">>,
      samples => [{[{<<"node">>, <<"a@h">>}], 12}]}.

counter_openmetrics_test() ->
    ?assertEqual([<<"# TYPE beamlab_node_reductions counter">>,
                  <<"# HELP beamlab_node_reductions Reductions done">>,
                  <<"beamlab_node_reductions_total{node=\"a@h\"} 12">>,
                  <<"# EOF">>],
                 lines(text([counter()], openmetrics))).

counter_prometheus_test() ->
    ?assertEqual([<<"# TYPE beamlab_node_reductions_total counter">>,
                  <<"# HELP beamlab_node_reductions_total Reductions done">>,
                  <<"beamlab_node_reductions_total{node=\"a@h\"} 12">>],
                 lines(text([counter()], prometheus))).

%% A name given with the suffix is the same family.
counter_suffix_given_test() ->
    F = (counter())#{name := <<"beamlab_node_reductions_total">>},
    ?assertEqual(text([counter()], openmetrics), text([F], openmetrics)).

gauge_unit_test() ->
    F = #{name => <<"beamlab_node_memory_bytes">>, type => gauge, help => <<"Memory">>, unit => <<"bytes">>,
          samples => [{[{<<"kind">>, <<"ets">>}], 1.5}, {[], 2}]},
    ?assertEqual([<<"# TYPE beamlab_node_memory_bytes gauge">>,
                  <<"# UNIT beamlab_node_memory_bytes bytes">>,
                  <<"# HELP beamlab_node_memory_bytes Memory">>,
                  <<"beamlab_node_memory_bytes{kind=\"ets\"} 1.5">>,
                  <<"beamlab_node_memory_bytes 2">>,
                  <<"# EOF">>],
                 lines(text([F], openmetrics))),
    %% No UNIT line in the Prometheus format, nor when the name lacks the unit.
    ?assertEqual(nomatch, binary:match(text([F], prometheus), <<"# UNIT">>)),
    ?assertEqual(nomatch, binary:match(text([F#{unit := <<"seconds">>}], openmetrics), <<"# UNIT">>)).

histogram_test() ->
    F = #{name => <<"lat_seconds">>, type => histogram, help => <<"Latency">>, unit => <<"seconds">>,
          samples => [{[{<<"node">>, <<"n">>}], #{buckets => [{0.001, 3}, {1, 7}], sum => 2.5, count => 9}}]},
    ?assertEqual([<<"# TYPE lat_seconds histogram">>,
                  <<"# UNIT lat_seconds seconds">>,
                  <<"# HELP lat_seconds Latency">>,
                  <<"lat_seconds_bucket{node=\"n\",le=\"0.001\"} 3">>,
                  <<"lat_seconds_bucket{node=\"n\",le=\"1.0\"} 7">>,
                  <<"lat_seconds_bucket{node=\"n\",le=\"+Inf\"} 9">>,
                  <<"lat_seconds_sum{node=\"n\"} 2.5">>,
                  <<"lat_seconds_count{node=\"n\"} 9">>,
                  <<"# EOF">>],
                 lines(text([F], openmetrics))),
    %% An explicit +Inf bucket is not repeated.
    F2 = F#{samples := [{[], #{buckets => [{1, 2}, {infinity, 4}], sum => 1, count => 4}}]},
    ?assertEqual(1, length(binary:matches(text([F2], prometheus), <<"+Inf">>))).

info_test() ->
    F = #{name => <<"beamlab_build">>, type => info, help => <<"Version">>,
          samples => [{[{<<"version">>, <<"1.2">>}], 1}]},
    ?assertEqual([<<"# TYPE beamlab_build info">>, <<"# HELP beamlab_build Version">>,
                  <<"beamlab_build_info{version=\"1.2\"} 1">>, <<"# EOF">>],
                 lines(text([F], openmetrics))),
    ?assertEqual([<<"# TYPE beamlab_build_info gauge">>, <<"# HELP beamlab_build_info Version">>,
                  <<"beamlab_build_info{version=\"1.2\"} 1">>],
                 lines(text([F#{name := <<"beamlab_build_info">>}], prometheus))).

escaping_test() ->
    F = #{name => <<"x">>, type => gauge, help => <<"a \\ \"b\"\nc">>,
          samples => [{[{<<"p">>, <<"C:\\d \"q\"\nz">>}], 1}]},
    Om = text([F], openmetrics),
    ?assertNotEqual(nomatch, binary:match(Om, <<"# HELP x a \\\\ \\\"b\\\"\\nc\n">>)),
    ?assertNotEqual(nomatch, binary:match(Om, <<"x{p=\"C:\\\\d \\\"q\\\"\\nz\"} 1\n">>)),
    %% The 0.0.4 format leaves quotes in help as they are.
    ?assertNotEqual(nomatch, binary:match(text([F], prometheus), <<"# HELP x a \\\\ \"b\"\\nc\n">>)).

sanitise_test() ->
    F = #{name => <<"9bad-name.x">>, type => gauge, help => <<"h">>,
          samples => [{[{<<"a-b">>, <<"v">>}, {<<"k">>, <<255, "x">>}], 1}]},
    Om = text([F], openmetrics),
    ?assertNotEqual(nomatch, binary:match(Om, <<"_9bad_name_x{a_b=\"v\",k=\"", 16#c3, 16#bf, "x\"} 1">>)).

%% Two collectors' families of one name become one family; another type
%% under that name, repeated label sets and non-numbers are dropped.
merge_test() ->
    A = #{name => <<"g">>, type => gauge, help => <<"G">>, samples => [{[{<<"node">>, <<"a">>}], 1}]},
    B = A#{samples := [{[{<<"node">>, <<"b">>}], 2}, {[{<<"node">>, <<"a">>}], 3}, {[], null}]},
    C = A#{type := counter},
    ?assertEqual([<<"# TYPE g gauge">>, <<"# HELP g G">>, <<"g{node=\"a\"} 1">>, <<"g{node=\"b\"} 2">>,
                  <<"# EOF">>],
                 lines(text([A, B, C], openmetrics))).

numbers_test() ->
    F = #{name => <<"n">>, type => gauge, help => <<"h">>, samples => [{[{<<"i">>, <<"1">>}], 0.1}, {[], 1.0e20}]},
    ?assertEqual([<<"n{i=\"1\"} 0.1">>, <<"n 1.0e20">>], lists:sublist(lines(text([F], prometheus)), 3, 2)).

negotiate_test() ->
    Prom242 = <<"application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,"
                "text/plain;version=0.0.4;q=0.5,*/*;q=0.1">>,
    ?assertEqual(openmetrics, ?M:negotiate(Prom242)),
    ?assertEqual(prometheus, ?M:negotiate(undefined)),
    ?assertEqual(prometheus, ?M:negotiate(<<"*/*">>)),
    ?assertEqual(prometheus, ?M:negotiate(<<"text/plain;version=0.0.4">>)),
    ?assertEqual(prometheus, ?M:negotiate(<<"application/openmetrics-text;q=0.2, text/plain">>)),
    ?assertEqual(prometheus, ?M:negotiate(<<"application/openmetrics-text;q=0">>)),
    ?assertEqual(prometheus, ?M:negotiate(<<"Application/OpenMetrics-Text; q=0.9, text/plain;q=1">>)),
    ?assertEqual(openmetrics, ?M:negotiate(<<"Application/OpenMetrics-Text; q=1, text/plain;q=0.9">>)),
    ?assertEqual(prometheus, ?M:negotiate(<<";;,=,q=x">>)).

content_type_test() ->
    ?assertEqual(<<"application/openmetrics-text; version=1.0.0; charset=utf-8">>, ?M:content_type(openmetrics)),
    ?assertEqual(<<"text/plain; version=0.0.4; charset=utf-8">>, ?M:content_type(prometheus)).
