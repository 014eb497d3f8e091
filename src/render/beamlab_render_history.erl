%%% @doc Renders a history of runs (`beamlab_result_history') in every
%%% output format of `beamlab compare': `text' and `markdown' (the runs in
%%% order, then per benchmark one line per run with its mean and the change
%%% against the run before, then the significant changes and what a `~'
%%% between runs with repetitions could have seen), `csv' (one row per
%%% benchmark and run, raw numbers) and `json' (the whole history). Pure.
-module(beamlab_render_history).

-export([render/3]).

-type format() :: text | markdown | csv | json.
%% `files': the file of each run, in the history's order.
-type opts() :: #{files => [file:filename_all()]}.

%% @doc The history in `Format'.
-spec render(beamlab_result_history:history(), format(), opts()) -> iodata().
render(H, json, _Opts) ->
    [beamlab_json:encode(beamlab_json:canonical(H#{schema => <<"beamlab.history">>, version => 1})), $\n];
render(#{runs := Runs, trends := Trends}, csv, _Opts) ->
    Header = [<<"name">>, <<"unit">>, <<"better">>, <<"run">>, <<"label">>, <<"commit">>, <<"dirty">>,
              <<"started_at">>, <<"n">>, <<"mean">>, <<"ci_low">>, <<"ci_high">>, <<"change">>,
              <<"change_ci_low">>, <<"change_ci_high">>, <<"p_value">>, <<"detectable">>, <<"verdict">>],
    Rows = [[Name, Unit, Better, I, L, C, D, S, N, M, lo(Ci), hi(Ci)]
             ++ case lists:keyfind(I, 2, [{Ch, To} || Ch = #{to := To} <- Changes]) of
                    {#{change := X, ci := XCi, p_value := P, verdict := V} = Ch, _} ->
                        [X, lo(XCi), hi(XCi), P, maps:get(detectable, Ch, null), V];
                    false -> [null, null, null, null, null, null]
                end
            || #{name := Name, unit := Unit, better := Better, points := Ps, changes := Changes} <- Trends,
               #{run := I, n := N, mean := M, ci := Ci} <- Ps,
               #{label := L, commit := C, dirty := D, started_at := S} <- [lists:nth(I, Runs)]],
    beamlab_format_csv:encode([Header | Rows]);
render(H, Format, Opts) ->
    #{runs := Runs, trends := Trends, order := Order, confidence := Conf} = H,
    Files = maps:get(files, Opts, []),
    Legend = [[integer_to_binary(I), L, short(C), dirty(D), S | [text(lists:nth(I, Files)) || Files =/= []]]
              || {I, #{label := L, commit := C, dirty := D, started_at := S}}
                     <- lists:zip(lists:seq(1, length(Runs)), Runs)],
    LegendHead = [<<"#">>, <<"run">>, <<"commit">>, <<"">>, <<"started">> | [<<"file">> || Files =/= []]],
    Intro = io_lib:format("history of ~b runs, oldest first (ordered by ~ts); each change is against "
                          "the run before with the benchmark (a single run: it and the run before it "
                          "against the spread of the runs before both), ~ts confidence:~n",
                          [length(Runs), Order, level(Conf)]),
    Sig = beamlab_result_history:significant(H),
    Blocks = [{Title, [<<"#">>, <<"run">>, <<"mean">>, <<"change">>, ci_head(Conf), <<"p">>, <<"verdict">>],
               [trend_row(P, Changes, Runs, Unit, Conf) || P <- Ps]}
              || #{name := Name, unit := Unit, better := Better, points := Ps, changes := Changes} <- Trends,
                 Title <- [iolist_to_binary([Name, " (", unit_text(Unit), ", ", atom_to_binary(Better),
                                             " is better)"])]],
    Summary0 = case Sig of
                   [] -> [<<"no significant change between consecutive runs\n">>];
                   _ -> [io_lib:format("significant changes (~b):~n", [length(Sig)]),
                         [io_lib:format("  ~ts: ~ts -> ~ts ~ts ~ts~n",
                                        [Name, label(From, Runs), label(To, Runs), pct(X),
                                         beamlab_render_compare:verdict(V)])
                          || {Name, #{from := From, to := To, change := X, verdict := V}} <- Sig]]
               end,
    %% A single run outside the history's spread is not a verdict: one run
    %% is as often a burst of the machine as a change (docs/statistics.md).
    Unconfirmed = [{Name, C} || #{name := Name, changes := Cs} <- Trends,
                                C = #{verdict := unconfirmed} <- Cs],
    Detectable = [{Name, C} || #{name := Name, changes := Cs} <- Trends,
                               C = #{verdict := no_difference, detectable := D} <- Cs, is_number(D)],
    %% A wall-clock change on an overloaded machine has no verdict; CPU
    %% time keeps one (bench/aa.sh METRIC="time cpu", docs/statistics.md).
    Loaded = [{Name, C} || #{name := Name, changes := Cs} <- Trends,
                           C = #{verdict := inconclusive_load} <- Cs],
    Summary = [Summary0,
               [[io_lib:format("unconfirmed (~b): one run outside the history's range, not the run before it; "
                               "run again: a verdict needs two consecutive runs outside it~n",
                               [length(Unconfirmed)]),
                 [io_lib:format("  ~ts: ~ts ~ts~n", [Name, label(To, Runs), pct(X)])
                  || {Name, #{to := To, change := X}} <- Unconfirmed]]
                || Unconfirmed =/= []],
               %% What a `~' between runs with repetitions could have seen,
               %% as `compare' says it, or two single runs against the
               %% history's spread (#35).
               [[io_lib:format("no significant difference between separately measured runs; from their own "
                               "spread (single runs: the history's before them), each of these changes is "
                               "caught 80% of the time only beyond:~n", []),
                 [io_lib:format("  ~ts: ~ts ~ts~n", [Name, label(To, Runs), beamlab_format_units:detectable(D)])
                  || {Name, #{to := To, detectable := D}} <- Detectable]]
                || Detectable =/= []],
               [[io_lib:format("inconclusive (~b): the machine was overloaded and the wall-clock change is "
                               "not far outside the noise; CPU time keeps its verdict under load: "
                               "measure with --metric cpu~n", [length(Loaded)]),
                 [io_lib:format("  ~ts: ~ts ~ts~n", [Name, label(To, Runs), pct(X)])
                  || {Name, #{to := To, change := X}} <- Loaded]]
                || Loaded =/= []]],
    case Format of
        text ->
            [Intro, beamlab_format_table:render(LegendHead, Legend, #{indent => 2}),
             [["\n", T, "\n", beamlab_format_table:render(Head, Rows, #{indent => 2})] || {T, Head, Rows} <- Blocks],
             "\n", Summary];
        markdown ->
            [Intro, "\n", beamlab_format_markdown:table(LegendHead, Legend),
             [["\n**", beamlab_format_markdown:cell(T), "**\n\n",
               beamlab_format_markdown:table(Head, Rows, [right, left, right, right, right, right, left])]
              || {T, Head, Rows} <- Blocks],
             "\n", Summary]
    end.

trend_row(#{run := I, mean := M, ci := Ci, n := N}, Changes, Runs, Unit, Conf) ->
    Own = unicode:characters_to_binary(
            [beamlab_render_compare:value_text(M, Unit),
             " ", beamlab_format_units:rel_interval(M, Ci, "±"), io_lib:format(" n=~b", [N])]),
    Head = [integer_to_binary(I), label(I, Runs), Own],
    case [C || C = #{to := To} <- Changes, To =:= I] of
        [#{from := From, change := X, ci := XCi, p_value := P, verdict := V} = C] ->
            %% Against the history's spread: the runs it was judged by.
            Against = case C of
                          #{basis := history, confirmed_by := By} ->
                              %% this run and the one before it, against the runs before both
                              [" vs #", integer_to_binary(From), "-#", integer_to_binary(By - 1),
                               " with #", integer_to_binary(By)];
                          #{basis := history} -> [" vs #", integer_to_binary(From), "-#", integer_to_binary(I - 1)];
                          _ -> [[" vs #", integer_to_binary(From)] || From =/= I - 1]
                      end,
            %% (a change judged at another level than the header's says so)
            Level = case C of
                        #{confidence := L} when L /= Conf -> [" at ", level(L)];
                        _ -> []
                    end,
            Head ++ [iolist_to_binary([pct(X), Against]),
                     case XCi of
                         {A, B} -> iolist_to_binary(["[", pct(A), ", ", pct(B), "]", Level]);
                         _ -> <<"-">>
                     end,
                     beamlab_render_compare:p_text(P), beamlab_render_compare:verdict(V)];
        [] ->
            Head ++ [<<>>, <<>>, <<>>, <<>>]
    end.

pct(X) -> beamlab_render_compare:pct(X).

level(C) ->
    Pct = 100 * C,
    case Pct == round(Pct) of
        true -> io_lib:format("~b%", [round(Pct)]);
        false -> io_lib:format("~.1f%", [Pct])
    end.

ci_head(Conf) -> iolist_to_binary(io_lib:format("~b% CI", [round(Conf * 100)])).

label(I, Runs) -> maps:get(label, lists:nth(I, Runs)).

unit_text(<<>>) -> <<"no unit">>;
unit_text(U) -> U.

short(null) -> <<"-">>;
short(<<C:7/binary, _/binary>>) -> C;
short(C) -> C.

dirty(true) -> <<"dirty">>;
dirty(_) -> <<>>.

text(B) when is_binary(B) -> B;
text(L) -> unicode:characters_to_binary(L).

lo({L, _}) -> L;
lo(_) -> null.
hi({_, H}) -> H;
hi(_) -> null.
