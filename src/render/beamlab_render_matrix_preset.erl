%%% @doc The text view of a matrix that followed a preset (`matrix --preset
%%% jit-study', see `beamlab_experiment_preset'): the published table's
%%% layout with this machine's figures beside the published ones (per
%%% scenario, sent / received msg/s per flavour, the JIT / interpreter
%%% ratio with its 95% interval and the verdict), then this machine's
%%% details per scenario and flavour (rates with their intervals, consumer
%%% latency percentiles, the broker's CPU time per message and their
%%% ratios), then each scenario's matrix table. Reads the document's
%%% `extra.preset' (JSON form). Pure.
-module(beamlab_render_matrix_preset).

-export([render/2, table/1]).

-define(SENT, <<"sending rate avg">>).
-define(RECEIVED, <<"receiving rate avg">>).
-define(CPU, <<"broker CPU per message">>).

%% @doc The preset's tables, then each scenario's matrix, then (with
%% `--ci') what ended the repetitions: once, as it is one rule over every
%% scenario.
-spec render(beamlab_result:result(), beamlab_render_text:opts()) -> unicode:chardata().
render(#{extra := #{<<"preset">> := #{<<"scenarios">> := Scenarios}}} = Doc, Opts) ->
    Pm = case maps:get(unicode, Opts) of true -> "±"; false -> "+/-" end,
    [table(Doc),
     [["\n", L, " (", lists:join(" ", Cmd), "):\n",
       beamlab_render_matrix:render(scenario_doc(Doc, S), Opts)]
      || #{<<"label">> := L, <<"command">> := Cmd} = S <- Scenarios],
     beamlab_render_matrix:stop_line(Doc, Pm)].

%% @doc The published layout and this machine's details ("" without a
%% preset).
-spec table(beamlab_result:result()) -> unicode:chardata().
table(#{extra := #{<<"preset">> := Preset}} = Doc) ->
    #{<<"scenarios">> := Scenarios} = Preset,
    Flavors = maps:get(<<"flavors">>, Preset, [<<"emu">>, <<"jit">>]),
    Reps = maps:get(<<"repeat">>, maps:get(params, Doc), null),
    Published = beamlab_format_table:render(
                  ["scenario" | lists:append([[[name(F), " published"], [name(F), " here"]] || F <- Flavors])]
                  ++ ["JIT/interp. published", "JIT/interp. here (95% CI)", "verdict"],
                  [published_row(Doc, S, Flavors) || S <- Scenarios],
                  #{align => [left | [right || _ <- Flavors, _ <- [1, 2]]] ++ [right, right, left]}),
    Details = beamlab_format_table:render(
                ["scenario", "flavour", "sent msg/s", "received msg/s", "consumer latency p50 / p95 / p99",
                 "broker CPU per message"],
                lists:append([detail_rows(Doc, S, Flavors) || S <- Scenarios]),
                #{align => [left, left, right, right, right, right]}),
    beamlab_render_suite_preset:titled(
      Preset,
      [io_lib:format("this machine: ~p interleaved ~ts per flavour and scenario, each a fresh broker; "
                     "published: one run per flavour~n~n", [Reps, beamlab_format_units:plural(Reps, "repetition")]),
       Published,
       "(sent / received msg/s: PerfTest's sending and receiving rate avg; here the mean of the repetitions)\n",
       short_runs(Doc, Reps), "\n",
       Details]);
table(_) ->
    "".

%% A configuration with fewer measured repetitions than asked: said under
%% the table (its failed runs are listed after the scenarios' tables).
short_runs(#{extra := #{<<"configs">> := Cs}}, Reps) when is_integer(Reps) ->
    [io_lib:format("~ts, ~ts: ~b of ~b repetitions measured (failed runs below)~n", [S, name(F), Ok, Reps])
     || #{<<"scenario">> := S, <<"flavor">> := F, <<"ok_runs">> := Ok} <- Cs, Ok < Reps];
short_runs(_, _) ->
    [].

name(<<"emu">>) -> "interpreter";
name(<<"jit">>) -> "JIT";
name(F) -> F.

published_row(Doc, #{<<"label">> := L, <<"published">> := Pub}, Flavors) ->
    Cells = lists:append(
              [[case maps:get(F, Pub, null) of
                    #{<<"sent">> := S, <<"received">> := R} -> [int(S), " / ", int(R)];
                    _ -> ""
                end,
                [mean_text(Doc, L, F, ?SENT), " / ", mean_text(Doc, L, F, ?RECEIVED)]]
               || F <- Flavors]),
    PubRatio = case Pub of
                   #{<<"jit">> := #{<<"sent">> := J}, <<"emu">> := #{<<"sent">> := E}} when E > 0 ->
                       io_lib:format("~.2f", [J / E]);
                   _ -> ""
               end,
    {Ratio, Verdict} = ratio(Doc, L, ?SENT),
    [L | Cells] ++ [PubRatio, Ratio, Verdict].

detail_rows(Doc, #{<<"label">> := L}, Flavors) ->
    [[L, name(F), with_ci(Doc, L, F, ?SENT), with_ci(Doc, L, F, ?RECEIVED),
      lists:join(" / ", [mean_text(Doc, L, F, <<"consumer latency ", P/binary>>, <<"us">>)
                         || P <- [<<"p50">>, <<"p95">>, <<"p99">>]]),
      with_ci(Doc, L, F, ?CPU)]
     || F <- Flavors]
        ++ [["", "JIT / interp.",
             ratio_text(Doc, L, ?SENT), ratio_text(Doc, L, ?RECEIVED),
             lists:join(" / ", [ratio_only(Doc, L, <<"consumer latency ", P/binary>>)
                                || P <- [<<"p50">>, <<"p95">>, <<"p99">>]]),
             ratio_text(Doc, L, ?CPU)]].

%% The benchmark of scenario L, flavour F, metric M.
bench(#{benchmarks := Bs, extra := #{<<"configs">> := Cs}}, L, F, M) ->
    Names = [N || #{<<"scenario">> := S, <<"flavor">> := Fl, <<"config">> := N} <- Cs, S =:= L, Fl =:= F],
    case [B || #{params := #{<<"scenario">> := S, <<"config">> := G}, extra := #{<<"inner_benchmark">> := I}} = B <- Bs,
               S =:= L, I =:= M, lists:member(G, Names)] of
        [B | _] -> B;
        [] -> none
    end.

mean_text(Doc, L, F, M) ->
    mean_text(Doc, L, F, M, none).

mean_text(Doc, L, F, M, Unit) ->
    case bench(Doc, L, F, M) of
        #{stats := #{mean := V}} when Unit =:= none -> int(V);
        #{stats := #{mean := V}} -> beamlab_format_units:value(V, Unit);
        _ -> "-"
    end.

with_ci(Doc, L, F, M) ->
    case bench(Doc, L, F, M) of
        #{stats := #{mean := V} = S, unit := U} ->
            [case U of <<"msg/s">> -> int(V); _ -> beamlab_format_units:value(V, U) end,
             case V == 0 of
                 true -> "";
                 false -> [" ", beamlab_format_units:rel_interval(V, maps:get(ci_mean, S, undefined), "±")]
             end];
        _ -> "-"
    end.

%% JIT / interpreter: the mean ratio with Fieller's 95% interval (the
%% matrix's comparison against the interpreter, its baseline) and the
%% verdict of Welch's test.
ratio(Doc, L, M) ->
    case bench(Doc, L, <<"jit">>, M) of
        #{comparison := #{change := C, ci := {Lo, Hi}, verdict := V}} when is_number(C) ->
            {io_lib:format("~.2f (~.2f .. ~.2f)", [1 + C, 1 + Lo, 1 + Hi]), atom_to_list(V)};
        #{comparison := #{change := C, verdict := V}} when is_number(C) ->
            {io_lib:format("~.2f", [1 + C]), atom_to_list(V)};
        _ -> {"-", ""}
    end.

ratio_only(Doc, L, M) ->
    case bench(Doc, L, <<"jit">>, M) of
        #{comparison := #{change := C}} when is_number(C) -> io_lib:format("~.2f", [1 + C]);
        _ -> "-"
    end.

ratio_text(Doc, L, M) ->
    case ratio(Doc, L, M) of
        {R, ""} -> R;
        {R, V} -> [R, " ", V]
    end.

int(V) when is_number(V) -> integer_to_list(round(V));
int(_) -> "-".

%% One scenario's part of the document, as the plain matrix it was: its
%% benchmarks and configurations under their own names, its baseline.
scenario_doc(#{benchmarks := Bs, params := P, extra := Extra} = Doc, #{<<"label">> := L, <<"baseline">> := Base}) ->
    Doc#{benchmarks := [B#{group := G} || #{params := #{<<"scenario">> := S, <<"config">> := G}} = B <- Bs, S =:= L],
         params := P#{<<"baseline">> => Base},
         %% (the stop rule's line is the whole preset's: said once, after)
         extra := (maps:without([<<"stopped_by">>], Extra))#{
                    <<"configs">> := [C#{<<"name">> := N} || #{<<"scenario">> := S, <<"config">> := N} = C
                                                              <- maps:get(<<"configs">>, Extra), S =:= L]}}.
