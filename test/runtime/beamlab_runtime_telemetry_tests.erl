-module(beamlab_runtime_telemetry_tests).
%% The `-v' table: its header and lines.
-include_lib("eunit/include/eunit.hrl").

sample(Rate) ->
    #{t_ms => 1500, util => 50.0, util_schedulers => [50.0, 50.0], util_dirty_cpu => 0.0, util_dirty_io => 0.0,
      run_queue => 0, processes => 40, memory => #{total => 1000000}, reductions_per_s => 1.0e6,
      gc_per_s => 10.0, rates => #{<<"lists:seq(1, 100).">> => Rate}, monitor_wall_pct => 0.1}.

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

%% The sampler's share of the interval is its wall time, waiting
%% included (#35: it was `monitor_cost_pct', shown as a cost): it is
%% served under a name that says so, as a ratio, and no longer as a cost.
sampler_wall_ratio_test() ->
    Fams = beamlab_format_vm_metrics:families((sample(1.0))#{monitor_wall_pct => 250.0, totals => #{}}, []),
    ?assertEqual([[{[], 2.5}]], [Ss || #{name := <<"beamlab_vm_sampler_wall_ratio">>, samples := Ss} <- Fams]),
    ?assertEqual([], [N || #{name := N} <- Fams, binary:match(N, <<"cost">>) =/= nomatch]).

%% Where the last occurrence of Sub in S ends.
column_end(S, Sub) ->
    length(S) - length(string:find(S, Sub, trailing)) + length(Sub).

%% A sample that raises (here the caller's `rates' fun, on its third call:
%% the first is the sampler's baseline) is counted and left out; the
%% sampler goes on and its series keeps every other sample.
failed_sample_left_out_test() ->
    Calls = counters:new(1, []),
    Rates = fun() ->
                    counters:add(Calls, 1, 1),
                    case counters:get(Calls, 1) of
                        3 -> error(rates_broke);
                        N -> [{<<"r">>, N}]
                    end
            end,
    {ok, Pid} = beamlab_runtime_telemetry:start_link(#{interval => 20, print => false, rates => Rates,
                                                       notify => self()}),
    %% Four good samples: the third call failed in between.
    [receive {beamlab_telemetry_sample, Pid, _} -> ok end || _ <- lists:seq(1, 4)],
    Series = beamlab_runtime_telemetry:stop(Pid),
    ?assertEqual(1, maps:get(failed_samples, Series)),
    ?assertMatch(<<"error:rates_broke", _/binary>>, maps:get(first_failure, Series)),
    ?assert(maps:get(samples, Series) >= 4),
    ?assertEqual(maps:get(samples, Series), length(maps:get(t_ms, Series))).

%% Without a failure the series says nothing of failures.
no_failure_no_key_test() ->
    {ok, Pid} = beamlab_runtime_telemetry:start_link(#{interval => 20, print => false, notify => self()}),
    receive {beamlab_telemetry_sample, Pid, _} -> ok end,
    Series = beamlab_runtime_telemetry:stop(Pid),
    ?assertNot(maps:is_key(failed_samples, Series)).
