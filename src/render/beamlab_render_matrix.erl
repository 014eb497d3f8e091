%%% @doc The text view of a VM-configuration matrix: configuration x
%%% benchmark with the mean of the repetitions and its confidence interval,
%%% the change against the baseline with its interval and verdict, the
%%% scheduler count each VM reported, speedup and efficiency for scheduler
%%% sweeps, then the failed runs. Pure.
-module(beamlab_render_matrix).

-export([render/2, stop_line/2, value_kind/1, mean_header/1, rejected_line/1]).


%% @doc The matrix as text: configuration x metric with the mean of the
%% repetitions, its confidence interval, the change against the baseline
%% with its interval and verdict, the scheduler count each VM reported, and
%% speedup/efficiency for scheduler sweeps; then failed configurations.
-spec render(beamlab_result:result(), beamlab_render_text:opts()) -> iolist().
render(#{benchmarks := Bs, params := #{<<"baseline">> := Base} = P,
              extra := #{<<"configs">> := Cs}} = Doc, Opts) ->
    Pm = case maps:get(unicode, Opts) of true -> "±"; false -> "+/-" end,
    Sweep = maps:get(<<"sweep">>, P, false),
    Header = ["configuration", "benchmark", mean_header(Doc), "95% CI", ["vs ", Base],
              "change CI", "verdict", "schedulers"]
        ++ case Sweep of true -> ["speedup", "efficiency"]; false -> [] end,
    Rows = [row(B, Base, Sweep, Pm) || B <- Bs],
    Failed = [io_lib:format("~ts: ~ts~n", [N, lists:join("; ", Es)])
              || #{<<"name">> := N, <<"errors">> := Es} <- Cs, Es =/= []],
    Value = value_kind(Doc),
    [case maps:get(partial, Doc, false) of
         true -> "(partial: interrupted before the end; what was measured is shown)\n";
         false -> []
     end,
     case {maps:get(<<"ci">>, P, null), maps:get(<<"repeat">>, P, null)} of
         {null, Reps} when is_integer(Reps) ->
             io_lib:format("~b repetitions per configuration, interleaved; baseline ~ts; each value is one "
                           "~ts~n", [Reps, Base, Value]);
         {_, Reps} when is_integer(Reps) ->
             io_lib:format("at least ~b repetitions per configuration (--ci), interleaved; baseline ~ts; each "
                           "value is one ~ts~n", [Reps, Base, Value]);
         _ ->
             io_lib:format("baseline ~ts; each value is one ~ts~n", [Base, Value])
     end,
     beamlab_format_table:render(Header, Rows,
                                 #{align => [left, left, right, right, right, left, left, right, right, right]}),
     stop_line(Doc, Pm),
     rejected_line(Bs),
     case Failed of
         [] -> [];
         _ -> ["\nfailed runs:\n" | Failed]
     end];
render(Doc, Opts) ->
    %% (no configurations or no baseline: a document of another tool, or
    %% cut by hand; its benchmarks as the generic table shows them, the
    %% findings after the view as ever)
    beamlab_render_text:render(Doc#{findings => []}, Opts).

%% @doc The fresh VMs the verdicts left out, as one line ending in a
%% newline (CPU time's fastest samples far from their configuration's
%% other VMs: beamlab_result_compare:robust_vms/1); "" when none was.
-spec rejected_line([beamlab_result:benchmark()]) -> iolist().
rejected_line(Bs) ->
    case [io_lib:format("~ts / ~ts: ~b of the baseline, ~b of this configuration",
                        [G, maps:get(<<"inner_benchmark">>, X, M), RB, RN])
          || #{group := G, metric := M, extra := X,
               comparison := #{rejected_base := RB, rejected_new := RN}} <- Bs, RB + RN > 0] of
        [] -> [];
        Lines -> ["fresh VMs left out of the change and verdict as far from their configuration's other VMs "
                  "(more than 3.5 robust sd of the logs; the mean and its interval hold every VM; "
                  "docs/statistics.md): ", lists:join("; ", Lines), "\n"]
    end.

%% @doc With `--ci', what ended the repetitions (and for which
%% benchmarks), `Pm' the plus-minus sign; "" without.
-spec stop_line(beamlab_result:result(), string()) -> unicode:chardata().
stop_line(#{params := #{<<"ci">> := Ci}, extra := #{<<"stopped_by">> := By} = X}, Pm) ->
    beamlab_stats_stop:line(By, Ci, maps:get(<<"unconfident">>, X, []), Pm);
stop_line(_Doc, _Pm) ->
    "".

row(#{group := G, metric := M, stats := #{mean := Mean} = Stats,
      extra := X} = B, Base, Sweep, Pm) ->
    {Change, Ci, Verdict} =
        case {G, B} of
            {Base, _} -> {"baseline", "", ""};
            {_, #{comparison := #{change := C, ci := {CLo, CHi}, verdict := no_difference, detectable := D}}}
              when is_number(C), is_number(D) ->
                %% what this `~' could have seen (#35)
                {pct(C), [pct(CLo), " .. ", pct(CHi)],
                 ["no_difference (could have seen ", beamlab_format_units:detectable(D), ")"]};
            {_, #{comparison := #{change := C, ci := {CLo, CHi}, verdict := V}}} when is_number(C) ->
                {pct(C), [pct(CLo), " .. ", pct(CHi)], atom_to_list(V)};
            {_, #{comparison := #{verdict := V}}} -> {"", "", atom_to_list(V)};
            _ -> {"", "", ""}
        end,
    Rel = case Mean == 0 of
              true -> "";
              %% One repetition per configuration: no interval, not ±0%.
              false -> beamlab_format_units:rel_interval(Mean, maps:get(ci_mean, Stats, undefined), Pm)
          end,
    [G, maps:get(<<"inner_benchmark">>, X, M), beamlab_format_units:bench_value(Mean, B), Rel, Change, Ci, Verdict,
     case maps:get(<<"schedulers_online">>, X, null) of null -> "?"; N -> integer_to_list(N) end]
        ++ case Sweep of
               true -> [case X of #{<<"speedup">> := S} -> io_lib:format("~.2fx", [S]); _ -> "" end,
                        case X of #{<<"efficiency">> := E} -> io_lib:format("~b%", [round(100 * E)]); _ -> "" end];
               false -> []
           end.

pct(X) -> beamlab_format_units:signed_percent(X).

%% @doc What a value of the matrix document is, for the line above its
%% table: "fresh VM's mean", or for CPU time "fresh VM's fastest sample"
%% (beamlab_result_compare:vm_level/1).
-spec value_kind(beamlab_result:result()) -> string().
value_kind(Doc) ->
    case beamlab_result_compare:vm_levels(Doc) of
        [L] -> "fresh VM's " ++ beamlab_result_compare:level_words(L);
        _ -> "fresh VM's mean (CPU time: its fastest sample)"
    end.

%% @doc The heading of the column of each configuration's mean of its VMs'
%% values: "mean", or "mean of fastest" where they are fastest samples.
-spec mean_header(beamlab_result:result()) -> string().
mean_header(Doc) ->
    case beamlab_result_compare:vm_levels(Doc) of
        [fastest] -> "mean of fastest";
        [mean] -> "mean";
        _ -> "mean of values"
    end.
