%%% @doc The text view of a suite result: one aligned table (workload,
%%% params, metric, unit, median, mean with its 95% CI half-width, p99, n,
%%% a sparkline of the repetitions in the order run, check), histograms
%%% when few points have many repetitions, each point's counters and
%%% latency percentiles, the per-scheduler utilisation over the whole run
%%% (when the run had -v telemetry), then failures and findings. Pure.
-module(beamlab_render_suite).

-export([render/2]).

-define(SPARK_WIDTH, 10).

%% @doc The suite's text view: one aligned table (workload, params, metric,
%% unit, median, mean ± 95% CI half-width, p99, n, a sparkline of the
%% repetitions in the order run, check), histograms when few points have
%% many repetitions, each point's counters and latency percentiles, then
%% failures. `unicode => false' draws with ASCII only (`+-', `_.-:=+*#').
-spec render(beamlab_result:result(), beamlab_render_text:opts()) -> unicode:chardata().
render(Doc, Opts) ->
    Unicode = maps:get(unicode, Opts),
    Bs = maps:get(benchmarks, Doc),
    Header = ["Workload", "Params", "Metric", "Unit", "Median", ["Mean ", pm(Unicode), " CI95"], "P99",
              "n", "Reps", "Check"],
    Rows = [row(B, Unicode) || B <- Bs],
    Failures = maps:get(<<"failures">>, maps:get(extra, Doc), []),
    Extra = maps:get(extra, Doc),
    [case {maps:get(partial, Doc), maps:get(<<"vm_stopped">>, Extra, none)} of
         {true, #{<<"exit_status">> := 130}} ->
             "(interrupted: SIGINT to the VM; what was measured up to its last checkpoint is shown)\n";
         {true, #{<<"point">> := Point, <<"exit_status">> := St}} when is_binary(Point) ->
             io_lib:format("(partial: the VM stopped (exit status ~w) while ~ts ran; what was measured "
                           "before is shown)~n", [St, Point]);
         {true, #{<<"exit_status">> := St}} ->
             io_lib:format("(partial: the VM stopped (exit status ~w) after the measurement)~n", [St]);
         {true, _} -> "(partial: interrupted before the end; what was measured is shown)\n";
         {false, _} -> ""
     end,
     case Rows of
         [] -> "";
         _ -> beamlab_format_table:render(Header, Rows, #{align => [left, left, left, left, right,
                                                                    right, right, right, left, left]})
     end,
     case {maps:get(params, Doc), Extra} of
         {#{<<"ci">> := Ci}, #{<<"stopped_by">> := By}} ->
             beamlab_stats_stop:line(By, Ci, maps:get(<<"unconfident">>, Extra, []), pm(Unicode));
         _ -> ""
     end,
     case maps:get(params, Doc) of
         #{<<"flavor">> := F} when is_binary(F) ->
             io_lib:format("each point ran in a fresh VM of the ~ts flavour (as the VM reported)~n", [F]);
         _ -> ""
     end,
     beamlab_render_text:distributions(Doc, Opts),
     details(Bs),
     scheduler_utilisation(maps:get(telemetry, Doc, #{})),
     [io_lib:format("FAILED ~ts: ~ts~n", [N, E]) || #{<<"name">> := N, <<"error">> := E} <- Failures],
     case maps:get(<<"not_run">>, Extra, []) of
         [] -> "";
         NotRun -> io_lib:format("not run (the VM stopped before them): ~ts~n", [lists:join(", ", NotRun)])
     end,
     beamlab_render_text:findings(maps:get(findings, Doc))].

row(#{name := Name, group := Group, metric := Metric, unit := Unit, stats := S} = B, Unicode) ->
    #{n := N, median := Med, mean := Mean, p99 := P99} = S,
    Num = fun(V) -> beamlab_format_units:sig(V, 4) end,
    %% The interval relative to the mean: a log-scale interval is wider
    %% above than below, and one or two repetitions have none.
    [Group, params_text(Name), Metric, Unit, Num(Med),
     [Num(Mean), " ", beamlab_format_units:rel_interval(Mean, maps:get(ci_mean, S, undefined), pm(Unicode))],
     Num(P99), N, reps(B, Unicode),
     maps:get(<<"check">>, maps:get(extra, B), <<"unchecked">>)];
row(#{name := Name, group := Group, metric := Metric, unit := Unit, extra := X}, _Unicode) ->
    %% (a point with no sample: its failure, when the document says it)
    [Group, params_text(Name), Metric, Unit, "-", "-", "-", 0, "",
     case X of
         #{<<"error">> := E} when is_binary(E) -> ["failed: ", E];
         _ -> "no samples"
     end].

pm(true) -> "±";
pm(false) -> "+-".

%% Drift or a warm-up effect across repetitions shows as a slope; fewer
%% than three repetitions, or a reservoir (no order left), show nothing.
reps(#{samples := S, sample_info := #{method := all}}, Unicode) when length(S) >= 3 ->
    beamlab_format_spark:line(S, #{width => ?SPARK_WIDTH, ascii => not Unicode});
reps(_, _) ->
    "".

%% The swept parameters are in the name, between brackets.
params_text(Name) ->
    case binary:split(Name, <<"[">>) of
        [_, Rest] -> hd(binary:split(Rest, <<"]">>));
        [_] -> <<"-">>
    end.

details(Bs) ->
    Lines = [detail(B) || B = #{counters := C} <- Bs, C =/= #{}],
    case Lines of
        [] -> [];
        _ -> ["\nCounters (last repetition):\n" | Lines]
    end.

detail(#{name := Name, counters := C, extra := Extra}) ->
    [io_lib:format("  ~ts: ~ts~n", [Name, kvs(C)]),
     case maps:find(<<"latency_us">>, Extra) of
         {ok, L} ->
             io_lib:format("    latency us (~ts): p50 ~ts  p90 ~ts  p99 ~ts  p99.9 ~ts  max ~ts  (~b samples)~n",
                           [maps:get(<<"latency_scope">>, Extra, <<"all">>)
                            | [beamlab_format_units:sig(maps:get(K, L), 3)
                               || K <- [<<"p50">>, <<"p90">>, <<"p99">>, <<"p999">>, <<"max">>]]
                              ++ [maps:get(<<"count">>, L)]]);
         error -> ""
     end,
     case maps:find(<<"series">>, Extra) of
         {ok, [_ | _] = S} ->
             io_lib:format("    per second (rep:second goodput/flushput/mean latency us): ~ts~n",
                           [lists:join("  ", [io_lib:format("~b:~b ~b/~b/~ts",
                                                            [R, Sec, G, F, beamlab_format_units:sig(Lat, 3)])
                                              || #{<<"rep">> := R, <<"second">> := Sec, <<"goodput">> := G,
                                                   <<"flushput">> := F, <<"latency_mean_us">> := Lat} <- S])]);
         _ -> ""
     end].

%% With -v the telemetry's per-second utilisation of every scheduler,
%% averaged over the whole run: a few schedulers pinned near 100% while
%% the others idle is the pathology the message-load benchmark shows.
scheduler_utilisation(#{<<"util_schedulers">> := [_ | _] = PerSample}) ->
    Samples = [S || S <- PerSample, is_list(S), S =/= []],
    case Samples of
        [] -> "";
        [First | _] ->
            N = length(First),
            Means = [lists:sum([lists:nth(I, S) || S <- Samples, length(S) >= I]) / length(Samples)
                     || I <- lists:seq(1, N)],
            io_lib:format("~nScheduler utilisation over the whole run (~b samples): ~ts~n",
                          [length(Samples),
                           lists:join("  ", [io_lib:format("~b: ~ts%", [I, beamlab_format_units:sig(U, 3)])
                                             || {I, U} <- lists:zip(lists:seq(1, N), Means)])])
    end;
scheduler_utilisation(_) ->
    "".

kvs(Map) ->
    lists:join("  ", [io_lib:format("~ts=~ts", [K, val(V)]) || {K, V} <- lists:sort(maps:to_list(Map))]).

val(V) when is_integer(V) -> integer_to_list(V);
val(V) when is_float(V) -> beamlab_format_units:sig(V, 4);
val(V) when is_binary(V) -> V;
val(V) -> io_lib:format("~0p", [V]).
