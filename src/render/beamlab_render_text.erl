%%% @doc The generic text view of a result document: one aligned row per
%%% benchmark with a sparkline of its samples, small histograms of a few
%%% benchmarks, and the findings. Pure: a function of the document and
%%% the options.
-module(beamlab_render_text).

-export([render/2, distributions/2, findings/1]).

-type opts() :: #{unicode := boolean()}.
-export_type([opts/0]).

%% Histograms under the table only when they stay readable.
-define(MAX_HISTOGRAMS, 3).
-define(MIN_HIST_SAMPLES, 10).
-define(SPARK_WIDTH, 16).

%% @doc The generic text view; `unicode => false' draws with ASCII only.
-spec render(beamlab_result:result(), opts()) -> unicode:chardata().
render(Result, Opts) ->
    Ascii = not maps:get(unicode, Opts),
    Header = ["Benchmark", "n", "Median", "Mean", "95% CI", "P99", "Samples", "Verdict"],
    Rows = [benchmark_row(B, Ascii) || B <- maps:get(benchmarks, Result)],
    [case maps:get(partial, Result) of
         true -> "(partial: interrupted before the end; what was measured is shown)\n";
         false -> ""
     end,
     beamlab_format_table:render(Header, Rows),
     distributions(Result, Opts),
     findings(maps:get(findings, Result))].

benchmark_row(B = #{name := Name}, Ascii) ->
    V = fun(X) -> beamlab_format_units:bench_value(X, B) end,
    case maps:find(stats, B) of
        {ok, S = #{n := N, median := Med, mean := Mean, p99 := P99}} ->
            Rel = case Mean == 0 of
                      true -> "";
                      false -> beamlab_format_units:rel_interval(Mean, maps:get(ci_mean, S, undefined), "±")
                  end,
            [Name, N, V(Med), V(Mean), Rel, V(P99), spark(B, Ascii), verdict(B)];
        error ->
            Err = maps:get(<<"error">>, maps:get(extra, B), <<"no samples">>),
            [Name, 0, "-", "-", "-", "-", "", ["failed: ", Err]]
    end.

%% Samples in the order measured; a reservoir has no order to show.
spark(#{samples := Samples, sample_info := #{method := all}}, Ascii) when length(Samples) >= 3 ->
    beamlab_format_spark:line(Samples, #{width => ?SPARK_WIDTH, ascii => Ascii});
spark(_, _) ->
    "".

%% @doc Small horizontal histograms of the samples of each benchmark, when
%% there are at most three benchmarks with enough samples to show a shape.
-spec distributions(beamlab_result:result(), opts()) -> unicode:chardata().
distributions(Result, Opts) ->
    Shown = [B || B = #{samples := S} <- maps:get(benchmarks, Result),
                  length(S) >= ?MIN_HIST_SAMPLES],
    case Shown =/= [] andalso length(Shown) =< ?MAX_HISTOGRAMS of
        false ->
            [];
        true ->
            Ascii = not maps:get(unicode, Opts),
            [[io_lib:format("~nDistribution of ~ts (~b samples):~n", [Name, length(S)]),
              [["  ", Line, "\n"]
               || Line <- beamlab_format_spark:bars(
                            beamlab_stats:histogram(S, bins(length(S))),
                            #{width => 30, ascii => Ascii,
                              label => fun(X) -> beamlab_format_units:bench_value(X, B) end})]]
             || B = #{name := Name, samples := S} <- Shown]
    end.

%% Sturges' rule, capped so the histogram stays small.
bins(N) ->
    max(3, min(10, ceil(math:log2(N)) + 1)).

verdict(#{comparison := #{verdict := no_difference, change := C, detectable := D}})
  when is_number(C), is_number(D) ->
    %% what this `~' could have seen (#35)
    io_lib:format("no_difference (~ts; could have seen ~ts)",
                  [beamlab_format_units:signed_percent(C), beamlab_format_units:detectable(D)]);
verdict(#{comparison := #{verdict := V, change := C}}) when is_number(C) ->
    io_lib:format("~ts (~ts)", [V, beamlab_format_units:signed_percent(C)]);
verdict(#{comparison := #{verdict := V}}) ->
    atom_to_list(V);
verdict(_) ->
    "".

%% @doc Findings as text: one line each with the evidence and advice
%% indented below.
-spec findings([beamlab_result:finding()]) -> unicode:chardata().
findings([]) ->
    [];
findings(Findings) ->
    ["\nFindings:\n" |
     [io_lib:format("  [~ts] ~ts~n      evidence: ~ts~n~ts",
                    [Severity, Title, Evidence,
                     case Advice of
                         <<>> -> "";
                         _ -> io_lib:format("      advice: ~ts~n", [Advice])
                     end])
      || #{severity := Severity, title := Title, evidence := Evidence, advice := Advice} <- Findings]].
