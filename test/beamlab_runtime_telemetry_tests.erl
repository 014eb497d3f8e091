-module(beamlab_runtime_telemetry_tests).
%% The `-v' table: its header and lines.
-include_lib("eunit/include/eunit.hrl").

sample(Rate) ->
    #{t_ms => 1500, util => 50.0, util_schedulers => [50.0, 50.0], util_dirty_cpu => 0.0, util_dirty_io => 0.0,
      run_queue => 0, processes => 40, memory => #{total => 1000000}, reductions_per_s => 1.0e6,
      gc_per_s => 10.0, rates => #{<<"lists:seq(1, 100).">> => Rate}, monitor_cost_pct => 0.1}.

%% A rate named by a benchmark's code longer than the column shows its
%% whole name (it was cut to `lists:seq(1,'), and the value stays under it.
rate_header_test() ->
    Info = #{online => 2, labels => [<<"lists:seq(1, 100).">>]},
    Header = unicode:characters_to_list(beamlab_runtime_telemetry:header(Info)),
    ?assertNotEqual(nomatch, string:find(Header, " lists:seq(1, 100). ")),
    Line = unicode:characters_to_list(beamlab_runtime_telemetry:line(Info, sample(4.0e6))),
    Value = unicode:characters_to_list(beamlab_format_units:rate(4.0e6)),
    %% Right-aligned under its name.
    ?assertEqual(column_end(Header, "lists:seq(1, 100)."), column_end(Line, Value)).

%% Where the last occurrence of Sub in S ends.
column_end(S, Sub) ->
    length(S) - length(string:find(S, Sub, trailing)) + length(Sub).
