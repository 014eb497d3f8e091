-module(beamlab_report_html_tests).
%% The page's model: telemetry series over time.
-include_lib("eunit/include/eunit.hrl").

telemetry_doc(Telemetry) ->
    D = beamlab_result:new(bench, #{command => [], started_at => <<"2026-01-01T00:00:00Z">>}),
    beamlab_result:set(telemetry, Telemetry, D).

series(Doc) ->
    #{runs := [#{series := Series}]} = beamlab_report_html:model([{<<"a">>, Doc}]),
    maps:from_list([{N, {T, Y}} || #{name := N, t := T, y := Y} <- Series]).

%% A watched node silent from 2.5 s to 4 s: a null point where the
%% silence began, so the chart breaks its line there instead of joining
%% the samples on either side; the axis starts at the first sample.
unanswered_gap_test() ->
    Doc = telemetry_doc(#{t_ms => [1000, 2000, 4000, 5000], run_queue => [1, 2, 3, 4],
                          unanswered => [#{from_ms => 2500, to_ms => 4000}]}),
    ?assertEqual({[0, 1.0, 1.5, 3.0, 4.0], [1, 2, null, 3, 4]}, maps:get(<<"run_queue">>, series(Doc))),
    %% A node silent to the end: the null point after the last sample.
    Open = telemetry_doc(#{t_ms => [1000, 2000], run_queue => [1, 2],
                           unanswered => [#{from_ms => 2500, to_ms => null}]}),
    ?assertEqual({[0, 1.0, 1.5], [1, 2, null]}, maps:get(<<"run_queue">>, series(Open))),
    %% No silence, no extra point.
    Quiet = telemetry_doc(#{t_ms => [1000, 2000], run_queue => [1, 2]}),
    ?assertEqual({[0, 1.0], [1, 2]}, maps:get(<<"run_queue">>, series(Quiet))).
