%%% @doc Views of a `check' document (see {@link beamlab_project_check}):
%%% the text table and the Markdown summary for a pull-request comment.
%%% Pure functions of the document.
%%%
%%% A benchmark has one entry per metric (group = the benchmark, metric =
%%% time, reductions or memory); each shows the medians of the base's and
%%% the head's per-round values, the change (median of the per-round
%%% ratios), its interval, the sign test's p-value and the verdict. A
%%% gated metric that regressed is REGRESSED; the others are informative.
-module(beamlab_render_check).

-export([text/2, markdown/1, entries/1, lines/1]).

-type opts() :: #{unicode := boolean()}.
%% One entry of a check as its text table says it, for the HTML report:
%% the medians as text in their unit, the change (head/base - 1), its
%% interval, the sign test's p, the verdict in words (with what a `~'
%% could have seen) and its kind.
-type entry() :: #{benchmark := binary(), metric := binary(), base := binary() | null,
                   head := binary() | null, change := number() | null, ci := [number()] | null,
                   p := number() | null, confidence := number(), verdict := binary(),
                   kind := binary(), gated := boolean(), detectable := number() | null}.
-export_type([entry/0]).

%% @doc The text view.
-spec text(beamlab_result:result(), opts()) -> unicode:chardata().
text(#{partial := true, benchmarks := []}, _Opts) ->
    "(interrupted before anything was measured)\n";
text(#{params := P} = Doc, _Opts) when not is_map_key(<<"against">>, P) ->
    validation(Doc);
text(Doc = #{benchmarks := Bs, findings := Findings}, Opts) ->
    Conf = confidence(Doc),
    Header = ["Benchmark", "Metric", "Base", "Head", "Change", ci_title(Conf), "p", "Verdict"],
    Rows = [text_row(B, First) || {B, First} <- with_first(Bs)],
    [headline(Doc), "\n",
     [["(interrupted: showing the rounds measured so far)\n"] || maps:get(partial, Doc)],
     "\n",
     beamlab_format_table:render(Header, Rows, #{align => [left, left, right, right, right, right, right, left]}),
     "\n", result_line(Doc), "\n",
     stop_line(Doc, Opts),
     beamlab_render_text:findings(Findings)].

%% With --ci, what ended the rounds (and for which entries).
stop_line(#{params := #{<<"ci">> := Ci}, extra := #{<<"stopped_by">> := By} = X} = Doc, Opts) ->
    Pm = case maps:get(unicode, Opts, false) of
             true -> "±";
             false -> "+-"
         end,
    %% (the rule judges each entry's interval, at the family's level)
    lists:flatten(io_lib:format("~ts", [beamlab_stats_stop:line(By, Ci, maps:get(<<"unconfident">>, X, []), Pm,
                                                                conf_pct(confidence(Doc)))]));
stop_line(_Doc, _Opts) ->
    "".

%% Each benchmark's name on its first metric's row only.
with_first(Bs) ->
    {Rows, _} = lists:mapfoldl(fun(#{group := G} = B, Prev) -> {{B, G =/= Prev}, G} end, none, Bs),
    Rows.

text_row(#{group := G, metric := M} = B, First) ->
    Name = case First of
               true -> G;
               false -> ""
           end,
    case paired(B) of
        none ->
            [Name, M, "-", "-", "-", "-", "-", status_text(B)];
        P ->
            [Name, M, value(M, maps:get(<<"median_base">>, P)), value(M, maps:get(<<"median_new">>, P)),
             change(maps:get(<<"change">>, P)), interval(maps:get(<<"ci">>, P)),
             p_value(maps:get(<<"p_value">>, P)), verdict_text(B, P)]
    end.

%% A check without a base: the bench modules validated, each benchmark's
%% reductions and words per iteration.
validation(#{benchmarks := Bs} = Doc) ->
    Rows = [[N, maps:get(<<"module">>, X, ""),
             per(X, <<"reductions">>, ""), per(X, <<"words">>, " words"),
             case S of <<"ok">> -> "ok"; _ -> ["failed: ", maps:get(<<"error">>, X, <<>>)] end]
            || #{name := N, extra := #{<<"status">> := S} = X} <- Bs],
    Failed = length([x || #{extra := #{<<"status">> := S}} <- Bs, S =/= <<"ok">>]),
    Modules = lists:usort([M || #{extra := #{<<"module">> := M}} <- Bs]),
    [[["(interrupted: showing the benchmarks checked so far)\n"] || maps:get(partial, Doc)],
     beamlab_format_table:render(["Benchmark", "Module", "Reductions/iter", "Memory/iter", "Status"], Rows),
     io_lib:format("~b benchmark(s) in ~b module(s); ~ts~n",
                   [length(Bs), length(Modules),
                    case {maps:get(partial, Doc), Failed} of
                        {true, _} -> io_lib:format("interrupted, ~b failed so far", [Failed]);
                        {false, 0} -> "every runner works";
                        {false, _} -> io_lib:format("~b failed", [Failed])
                    end])].

per(#{<<"per_iteration">> := #{} = P}, Key, Unit) ->
    case maps:find(Key, P) of
        {ok, V} when is_number(V) -> [beamlab_format_units:number(V), Unit];
        _ -> "-"
    end;
per(_, _, _) ->
    "-".

%% @doc Every entry of a check against a base (none for any other
%% document, or a check that only validated its bench modules).
-spec entries(beamlab_result:result()) -> [entry()].
entries(#{kind := check, params := #{<<"against">> := _}, benchmarks := Bs} = Doc) ->
    Conf = confidence(Doc),
    [entry(B, Conf) || B <- Bs];
entries(_) ->
    [].

entry(#{group := G, metric := M, extra := X} = B, Conf) ->
    Gated = maps:get(<<"gated">>, X, false) =:= true,
    Common = #{benchmark => G, metric => M, confidence => Conf, gated => Gated},
    case paired(B) of
        none ->
            Common#{base => null, head => null, change => null, ci => null, p => null,
                    verdict => unicode:characters_to_binary(status_text(B)),
                    kind => maps:get(<<"status">>, X, <<"not_measured">>), detectable => null};
        P ->
            Num = fun(K) -> case maps:get(K, P, null) of V when is_number(V) -> V; _ -> null end end,
            Common#{base => unicode:characters_to_binary(value(M, maps:get(<<"median_base">>, P))),
                    head => unicode:characters_to_binary(value(M, maps:get(<<"median_new">>, P))),
                    change => Num(<<"change">>),
                    ci => case maps:get(<<"ci">>, P, null) of
                              [Lo, Hi] when is_number(Lo), is_number(Hi) -> [Lo, Hi];
                              _ -> null
                          end,
                    p => Num(<<"p_value">>),
                    verdict => unicode:characters_to_binary(verdict_text(B, P)),
                    kind => case {maps:get(<<"verdict">>, P), Gated} of
                                {<<"regressed">>, false} -> <<"regressed_not_gated">>;
                                {V, _} -> V
                            end,
                    detectable => Num(<<"detectable">>)}
    end.

%% @doc What the text view says around its table, one line each: the
%% headline, the method, the result and its notes, and with `--ci' what
%% ended the rounds (none for a check without a base).
-spec lines(beamlab_result:result()) -> [binary()].
lines(#{kind := check, params := #{<<"against">> := _}, benchmarks := [_ | _]} = Doc) ->
    Text = unicode:characters_to_binary([headline(Doc), "\n", result_line(Doc), "\n",
                                         stop_line(Doc, #{unicode => true})]),
    [L || L <- binary:split(Text, <<"\n">>, [global]), string:trim(L) =/= <<>>];
lines(_) ->
    [].

%% @doc The Markdown summary: a headline with the outcome, one table row
%% per benchmark (time, reductions and memory side by side), the method
%% and the findings folded below. A check without a base: its validation
%% table.
-spec markdown(beamlab_result:result()) -> binary().
markdown(#{partial := true, benchmarks := []}) ->
    <<"**Interrupted** before anything was measured.\n">>;
markdown(#{params := P} = Doc) when not is_map_key(<<"against">>, P) ->
    unicode:characters_to_binary(["```\n", validation(Doc), "```\n"]);
markdown(Doc = #{benchmarks := Bs, findings := Findings}) ->
    Regressed = [B || B <- Bs, gated_regression(B)],
    Failed = [B || B = #{extra := #{<<"status">> := <<"failed_head">>}} <- Bs],
    Icon = case Regressed ++ Failed of
               [] -> ":white_check_mark:";
               _ -> ":x:"
           end,
    Title = case {length(lists:usort([G || #{group := G} <- Regressed])), Failed} of
                {0, []} -> "no regression";
                {0, _} -> "a benchmark fails on the head";
                {1, _} -> "1 benchmark regressed";
                {N, _} -> io_lib:format("~b benchmarks regressed", [N])
            end,
    Conf = confidence(Doc),
    Groups = groups(Bs),
    %% CPU time per iteration has a column when the check measured it
    %% (`--metric cpu').
    Metrics = [<<"time">>] ++ [<<"cpu">> || lists:any(fun(#{metric := M}) -> M =:= <<"cpu">> end, Bs)]
        ++ [<<"reductions">>, <<"memory">>],
    Header = ["Benchmark"] ++ lists:append([md_titles(M, Conf) || M <- Metrics]) ++ ["Verdict"],
    Rows = [md_row(G, Entries, Metrics) || {G, Entries} <- Groups],
    unicode:characters_to_binary(
      [io_lib:format("### ~ts beamlab check: ~ts~n~n", [Icon, Title]),
       [["**Interrupted**: only the rounds measured so far.\n\n"] || maps:get(partial, Doc)],
       md_cell(headline(Doc)), "\n\n",
       [[md_cell(string:trim(Line)), "\n\n"] || Line <- [stop_line(Doc, #{unicode => true})], Line =/= ""],
       beamlab_format_markdown:table(Header, Rows, [left] ++ [right || _ <- tl(tl(Header))] ++ [left]),
       "\n<details><summary>How this was measured</summary>\n\n",
       md_cell(method(Doc)), "\n\n",
       beamlab_result_env:summary(Doc), "\n",
       [["\n", [io_lib:format("- **~ts** ~ts: ~ts~n", [S, md_cell(T), md_cell(E)])
                || #{severity := S, title := T, evidence := E} <- Findings]] || Findings =/= []],
       "\n</details>\n"]).

groups(Bs) ->
    Order = lists:foldl(fun(#{group := G}, Acc) ->
                                case lists:member(G, Acc) of
                                    true -> Acc;
                                    false -> Acc ++ [G]
                                end
                        end, [], Bs),
    [{G, [B || #{group := G1} = B <- Bs, G1 =:= G]} || G <- Order].

md_titles(<<"time">>, Conf) -> ["Time/iter", "Change [" ++ ci_title(Conf) ++ "]"];
md_titles(<<"cpu">>, Conf) -> ["CPU/iter", "Change [" ++ ci_title(Conf) ++ "]"];
md_titles(<<"reductions">>, _) -> ["Reductions/iter", "Change"];
md_titles(<<"memory">>, _) -> ["Memory/iter (words)", "Change"].

md_row(G, Entries, Metrics) ->
    ByMetric = maps:from_list([{M, B} || #{metric := M} = B <- Entries]),
    Cells = lists:append([md_metric(maps:get(M, ByMetric, none), M) || M <- Metrics]),
    Verdicts = [[icon(B), " ", M] || #{metric := M} = B <- Entries, gated_regression(B)]
               ++ [["failed: ", status_text(B)] || B <- lists:sublist(Entries, 1), paired(B) =:= none],
    [md_cell(G) | Cells] ++ [case Verdicts of
                                 [] -> ":white_check_mark:";
                                 _ -> lists:join(", ", Verdicts)
                             end].

md_metric(none, _M) ->
    ["", ""];
md_metric(B, M) ->
    case paired(B) of
        none -> ["-", "-"];
        P ->
            Ch = change(maps:get(<<"change">>, P)),
            Shown = case gated_regression(B) of
                        true -> ["**", Ch, "**"];
                        false -> Ch
                    end,
            [[value(M, maps:get(<<"median_base">>, P)), " → ", value(M, maps:get(<<"median_new">>, P))],
             case M of
                 _ when M =:= <<"time">>; M =:= <<"cpu">> ->
                     [Shown, " ", interval(maps:get(<<"ci">>, P)),
                      case maps:get(<<"verdict">>, P) of
                          <<"unchanged">> -> could_have_seen(P);
                          _ -> ""
                      end];
                 _ -> Shown
             end]
    end.

icon(_) -> ":x:".

md_cell(Text) ->
    beamlab_format_markdown:cell(unicode:characters_to_binary(Text)).

%%--------------------------------------------------------------------

headline(#{params := P}) ->
    Head = maps:get(<<"project">>, P, #{}),
    Base = maps:get(<<"base">>, P, #{}),
    Dirty = case maps:get(<<"dirty">>, Head, false) of
                true -> ", with uncommitted changes";
                false -> ""
            end,
    io_lib:format("beamlab check: the working tree (~ts~ts) against ~ts (~ts ~ts)",
                  [maps:get(<<"short">>, Head, <<"?">>), Dirty, maps:get(<<"against">>, P, <<"?">>),
                   maps:get(<<"short">>, Base, <<"?">>), subject(maps:get(<<"subject">>, Base, <<>>))]).

%% A commit's subject, cut to fit a line.
subject(S) ->
    case string:length(S) > 60 of
        true -> [string:slice(S, 0, 57), "..."];
        false -> S
    end.

method(#{params := P} = Doc) ->
    io_lib:format("~b paired rounds (base and head each in a fresh VM, order swapped every round; "
                  "~b ms x ~b samples per side and round after ~b warm-up). Change: the median of the "
                  "per-round ratios head/base; interval: its distribution-free order-statistic interval "
                  "(~ts); p: the exact sign test on the rounds. ~tsGate: ~ts regressed beyond ~ts at p < ~ts.",
                  [maps:get(<<"rounds_done">>, P, 0), maps:get(<<"duration">>, P, 0),
                   maps:get(<<"samples">>, P, 0), maps:get(<<"warmup">>, P, 0),
                   ci_title(confidence(Doc)), family(P),
                   lists:join(", ", maps:get(<<"gate">>, P, [])),
                   beamlab_format_units:signed_percent(maps:get(<<"threshold">>, P, 0)),
                   level(entry_alpha(P))]).

%% The family-wise correction (checks saved before it have none).
family(#{<<"family">> := #{<<"size">> := K, <<"compared">> := M, <<"alpha">> := A, <<"entry_alpha">> := E}}) ->
    io_lib:format("Family: ~b entries compared, each judged at p < ~ts (~ts / ~b: Bonferroni, leaving out "
                  "entries whose rounds cannot reach it, after Tarone) with its ~ts, so that all verdicts "
                  "together hold at ~ts. ",
                  [M, level(E), level(A), max(1, K), ci_title(1 - E), level(A)]);
family(_) ->
    "".

entry_alpha(#{<<"family">> := #{<<"entry_alpha">> := E}}) -> E;
entry_alpha(P) -> maps:get(<<"alpha">>, P, 0.01).

level(A) ->
    float_to_list(float(A), [{decimals, 6}, compact]).

result_line(Doc = #{benchmarks := Bs, params := P}) ->
    Regressed = [B || B <- Bs, gated_regression(B)],
    Failed = lists:usort([G || #{group := G, extra := #{<<"status">> := <<"failed_head">>}} <- Bs]),
    NotCompared = lists:usort([G || #{group := G, extra := #{<<"status">> := <<"failed_base">>}} <- Bs]),
    Rounds = maps:get(<<"rounds_done">>, P, 0),
    [method(Doc), "\n",
     case Regressed of
         [] -> io_lib:format("Result: no regression in ~b benchmark(s).~n", [length(groups(Bs))]);
         _ -> io_lib:format("Result: ~b regression(s): ~ts.~n",
                            [length(Regressed),
                             lists:join("; ", [[G, " ", M, " ", change(maps:get(<<"change">>, paired(B)))]
                                               || #{group := G, metric := M} = B <- Regressed])])
     end,
     [io_lib:format("Fails on the head: ~ts.~n", [lists:join(", ", Failed)]) || Failed =/= []],
     [io_lib:format("Not compared (fail on the base): ~ts.~n", [lists:join(", ", NotCompared)])
      || NotCompared =/= []],
     %% (whether the rounds reach the level the entries were judged at,
     %% not every entry's: the note never sits beside a verdict below it;
     %% the advice is enough rounds for every entry compared)
     [io_lib:format("Note: ~b round(s) cannot reach p < ~ts; use --rounds ~b or more.~n",
                    [Rounds, level(E), max(Reach, maps:get(<<"min_rounds">>, P, 0))])
      || E <- [entry_alpha(P)], E > 0, Reach <- [beamlab_stats_paired:min_rounds(float(E))], Rounds < Reach],
     [io_lib:format("Note: the machine was overloaded; time is inconclusive (~ts), "
                    "CPU time keeps its verdict under load: check --metric cpu.~n",
                    [lists:join(", ", Loaded)]) || Loaded <- [loaded(Bs)], Loaded =/= []]].

%% The benchmarks whose time an overloaded machine made inconclusive
%% (none to name when the check measured CPU time already).
loaded(Bs) ->
    case lists:any(fun(#{metric := M}) -> M =:= <<"cpu">> end, Bs) of
        true -> [];
        false -> lists:usort([G || #{group := G,
                                     extra := #{<<"paired">> := #{<<"verdict">> := <<"inconclusive_load">>}}}
                                       <- Bs])
    end.


gated_regression(#{extra := #{<<"gated">> := true, <<"paired">> := #{<<"verdict">> := <<"regressed">>}}}) ->
    true;
gated_regression(_) ->
    false.

paired(#{extra := #{<<"paired">> := P}}) -> P;
paired(_) -> none.

verdict_text(#{metric := M} = B, #{<<"verdict">> := V} = P) ->
    Gated = maps:get(<<"gated">>, maps:get(extra, B), false),
    case {V, Gated} of
        {<<"regressed">>, true} -> "REGRESSED";
        {<<"regressed">>, false} -> "regressed (not gated)";
        {<<"improved">>, _} -> "improved";
        {<<"unchanged">>, _} when M =:= <<"time">>; M =:= <<"cpu">> -> ["~", could_have_seen(P)];
        {<<"unchanged">>, _} -> "~";
        {<<"too_few_rounds">>, _} -> "too few rounds";
        {<<"inconclusive_load">>, _} -> "inconclusive: overloaded"
    end.

%% What an `unchanged' could have seen (#35): the change these rounds,
%% with their spread, call 80% of the time (beamlab_stats_paired). Shown
%% for the measures with noise (time, cpu): a count's `~' is exact.
could_have_seen(#{<<"detectable">> := D}) when is_number(D) ->
    [" (could have seen ", beamlab_format_units:detectable(D), ")"];
could_have_seen(_) ->
    "".

status_text(#{extra := #{<<"status">> := S} = X}) ->
    What = case S of
               <<"failed_head">> -> "FAILS on the head";
               <<"failed_base">> -> "fails on the base (not compared)";
               <<"failed_both">> -> "fails on both sides";
               _ -> "not measured"
           end,
    case maps:find(<<"error">>, X) of
        {ok, E} -> [What, ": ", E];
        error -> What
    end;
status_text(_) ->
    %% (a benchmark the check has no word of)
    "not measured".

value(<<"time">>, V) -> beamlab_format_units:duration(V);
value(<<"cpu">>, V) -> beamlab_format_units:duration(V);
value(_, V) -> beamlab_format_units:number(V).

%% Changes below 0.01% are noise of the counting, shown as none.
change(null) -> "-";
change(C) when abs(C) < 0.0001 -> "0%";
change(C) -> beamlab_format_units:signed_percent(C).

interval([Lo, Hi]) -> ["[", change(Lo), ", ", change(Hi), "]"];
interval(_) -> "-".

p_value(P) when P >= 0.001 -> float_to_list(float(P), [{decimals, 3}]);
p_value(P) -> float_to_list(float(P), [{scientific, 1}]).

%% The confidence of every entry's interval: 1 - the family's level.
confidence(#{params := P}) ->
    1 - entry_alpha(P).

ci_title(Conf) ->
    conf_pct(Conf) ++ " CI".

conf_pct(Conf) ->
    Pct = Conf * 100,
    case abs(Pct - round(Pct)) < 1.0e-9 of
        true -> lists:flatten(io_lib:format("~b%", [round(Pct)]));
        false -> lists:flatten(io_lib:format("~ts%", [float_to_list(Pct, [{decimals, 3}, compact])]))
    end.
