%%% @doc Renders a comparison (`beamlab_result_compare') in every output format:
%%% `text' (aligned table, benchstat spirit, with notes and the env
%%% differences), `markdown' (ready to paste into a pull request), `csv'
%%% (raw numbers, one row per benchmark) and `json' (the whole comparison).
-module(beamlab_render_compare).

-export([render/2, render/3, rows/1, json/1, display_rows/1, value_text/2,
         verdict/1, pct/1, p_text/1]).

-type format() :: text | markdown | csv | json.
-export_type([format/0]).

%% Env differences listed in text/markdown before "... N more".
-define(MAX_ENV_LINES, 12).

%% @doc Render in `Format' with default options.
-spec render(beamlab_result_compare:comparison(), format()) -> iodata().
render(Cmp, Format) ->
    render(Cmp, Format, #{}).

%% @doc Render; options: `files' (the path of each run, shown in the legend).
-spec render(beamlab_result_compare:comparison(), format(), map()) -> iodata().
render(Cmp, json, _Opts) ->
    [beamlab_json:encode(json(Cmp)), $\n];
render(Cmp, csv, _Opts) ->
    {Header, Rows} = rows(Cmp),
    beamlab_format_csv:encode([Header | Rows]);
render(Cmp, markdown, Opts) ->
    {Header, Rows} = display_rows(Cmp),
    [legend_md(Cmp, Opts), "\n",
     beamlab_format_markdown:table(Header, Rows, [left | [case H of <<"verdict">> -> left; _ -> right end
                                                         || H <- tl(Header)]]),
     [["\n", [["> ", N, "\n"] || N <- maps:get(notes, Cmp)]] || maps:get(notes, Cmp) =/= []],
     env_md(Cmp)];
render(Cmp, text, Opts) ->
    {Header, Rows} = display_rows(Cmp),
    [legend_text(Cmp, Opts), "\n",
     beamlab_format_table:render(Header, Rows, #{}),
     [["\n", [["note: ", N, "\n"] || N <- maps:get(notes, Cmp)]] || maps:get(notes, Cmp) =/= []],
     env_text(Cmp)].

%% @doc The comparison as a table: a header and one row per benchmark, cells
%% as plain values (binaries, numbers, `null'), shared by every format.
%% Columns: name, unit, then per run its mean, the low and high bounds of
%% its interval (in the unit: the interval is asymmetric on the log scale,
%% so no single half-width describes it; `null' below 3 values) and n, and for each later run the change and its CI bounds
%% (fractions: -0.1 is 10% lower), the p-value, `detectable' (for a
%% `no_difference' between runs: the smallest slowdown the comparison
%% catches 80% of the time, a fraction; else empty) and the verdict
%% (`faster', `slower', `no_difference', `too_few_samples', `unit_mismatch',
%% `no_baseline', `missing', ...: always the last column).
-spec rows(beamlab_result_compare:comparison()) -> {[binary()], [[binary() | number() | null]]}.
rows(#{runs := Runs, rows := Rows}) ->
    [#{label := Base} | Later] = Runs,
    Header = [<<"name">>, <<"unit">>]
        ++ lists:append([[<<L/binary, " mean">>, <<L/binary, " CI low">>, <<L/binary, " CI high">>,
                          <<L/binary, " n">>]
                         || #{label := L} <- Runs])
        ++ lists:append([[<<L/binary, " vs ", Base/binary>>, <<"CI low">>, <<"CI high">>, <<"p">>,
                          <<"detectable">>, <<"verdict">>]
                         || #{label := L} <- Later]),
    {Header, [table_row(R) || R <- Rows]}.

%% @doc The comparison as a JSON value (schema `beamlab.compare').
-spec json(beamlab_result_compare:comparison()) -> beamlab_json:json().
json(Cmp) ->
    beamlab_json:canonical(Cmp#{schema => <<"beamlab.compare">>, version => 1}).

%% @doc The comparison as human-readable cells (units, percentages): name,
%% unit, each run's mean with its CI half-width, then for each later run the
%% change, its CI, the p-value and the verdict.
-spec display_rows(beamlab_result_compare:comparison()) -> {[binary()], [[binary()]]}.
display_rows(#{runs := Runs, rows := Rows, confidence := Conf}) ->
    [#{label := Base} | Later] = Runs,
    CiHead = iolist_to_binary(io_lib:format("~b% CI", [round(Conf * 100)])),
    Header = [<<"name">>]
        ++ [mark(R) || R <- Runs]
        ++ lists:append([[<<L/binary, " vs ", Base/binary>>, CiHead, <<"p">>, <<"verdict">>]
                         || #{label := L} <- Later]),
    {Header, [display_row(R) || R <- Rows]}.

%% @doc A value in its unit, e.g. `57.1 ns', `1.91 ms', `5120 Ki msg/s'.
-spec value_text(number() | null, binary()) -> binary().
value_text(null, _Unit) ->
    <<"-">>;
value_text(V, Unit) ->
    unicode:characters_to_binary(beamlab_format_units:value(V, Unit)).

%% Internals

mark(#{label := L, partial := true}) -> <<L/binary, " (partial)">>;
mark(#{label := L}) -> L.

display_row(#{name := Name, unit := Unit, cells := Cells}) ->
    [Name]
        ++ [own_text(C, Unit) || C <- Cells]
        ++ lists:append([change_text(C) || C <- tl(Cells)]).

own_text(#{present := false}, _Unit) ->
    <<"missing">>;
own_text(#{mean := Mean, ci_mean := CI, n := N}, Unit) ->
    %% Intervals of times and rates are not symmetric (log scale): both
    %% sides are shown; fewer than 3 samples have none.
    Half = case is_number(Mean) of
               true -> [" ", beamlab_format_units:rel_interval(Mean, CI, "±")];
               false -> ""
           end,
    unicode:characters_to_binary([value_text(Mean, Unit), Half, io_lib:format(" n=~b", [N])]).

change_text(#{present := false}) ->
    [<<"-">>, <<"-">>, <<"-">>, <<"missing">>];
change_text(#{verdict := V} = C) ->
    [pct(maps:get(change, C, null)), ci_text(maps:get(ci, C, null)),
     p_text(maps:get(p_value, C, null)), verdict(V)];
change_text(_) ->
    [<<"-">>, <<"-">>, <<"-">>, <<"-">>].

%% @doc A verdict as the tables show it (`SLOWER' stands out).
-spec verdict(atom()) -> binary().
verdict(faster) -> <<"faster">>;
verdict(slower) -> <<"SLOWER">>;
verdict(no_difference) -> <<"~">>;
verdict(too_few_samples) -> <<"too few samples">>;
verdict(unit_mismatch) -> <<"units differ">>;
verdict(no_baseline) -> <<"no baseline">>;
verdict(within_run_only) -> <<"within-run only">>;
verdict(inconclusive_load) -> <<"inconclusive: overloaded">>;
verdict(unconfirmed) -> <<"unconfirmed: run again">>;
verdict(Other) -> atom_to_binary(Other, utf8).

%% @doc A fraction as a signed percentage: `-0.248' is `-24.8%'.
-spec pct(number() | null) -> binary().
pct(null) -> <<"-">>;
pct(F) -> iolist_to_binary(io_lib:format("~s~.1f%", [beamlab_format_units:sign(F), 100 * F])).

ci_text([Lo, Hi]) when is_number(Lo), is_number(Hi) ->
    iolist_to_binary(["[", pct(Lo), ", ", pct(Hi), "]"]);
ci_text(_) -> <<"-">>.

%% @doc A p-value with three decimals (`<0.001' below).
-spec p_text(number() | null) -> binary().
p_text(null) -> <<"-">>;
p_text(P) when P < 0.001 -> <<"<0.001">>;
p_text(P) -> iolist_to_binary(io_lib:format("~.3f", [P * 1.0])).

legend_text(#{runs := Runs, confidence := Conf} = Cmp, Opts) ->
    Files = maps:get(files, Opts, [null || _ <- Runs]),
    ["runs (", maps:get(label, hd(Runs)), " is the baseline; ",
     io_lib:format("~b", [round(Conf * 100)]), "% confidence",
     %% (the between-run term, when there is one: docs/statistics.md)
     case maps:get(run_noise, Cmp, 0.0) of
         N when N > 0 -> io_lib:format("; runs with repetitions: +~ts run-to-run noise a side (--run-noise)",
                                       [beamlab_format_units:number(100 * N) ++ "%"]);
         _ -> ""
     end,
     "; ~ = no significant difference):\n",
     beamlab_format_table:render([<<>>, <<>>, <<>>, <<>>, <<>>],
                                 [[L, file_text(F), to_bin(K), to_bin(S),
                                   case P of true -> <<"partial: interrupted run">>; false -> <<>> end]
                                  || {#{label := L, kind := K, started_at := S, partial := P}, F}
                                         <- lists:zip(Runs, Files)],
                                 #{indent => 2, header => false, align => [left, left, left, left, left]})].

legend_md(#{runs := Runs}, Opts) ->
    Files = maps:get(files, Opts, [null || _ <- Runs]),
    ["Baseline **", maps:get(label, hd(Runs)), "**. Runs: ",
     lists:join("; ", [["**", L, "** ", beamlab_format_markdown:cell(file_text(F)), " (", to_bin(K),
                        [[", partial"] || P], ")"]
                       || {#{label := L, kind := K, partial := P}, F} <- lists:zip(Runs, Files)]),
     "\n"].

file_text(null) -> <<>>;
file_text(F) -> unicode:characters_to_binary(F).

env_text(#{env_diff := []}) ->
    [];
env_text(#{env_diff := Diff, runs := Runs}) ->
    {Shown, More} = split(Diff),
    ["\nenv differences that might explain a change:\n",
     beamlab_format_table:render([<<"key">> | [L || #{label := L} <- Runs]],
                                 [[K | [beamlab_result_env:value_text(K, V) || V <- Vs]] || #{key := K, values := Vs} <- Shown], #{}),
     [io_lib:format("... ~b more (see --format json)~n", [More]) || More > 0]].

env_md(#{env_diff := []}) ->
    [];
env_md(#{env_diff := Diff, runs := Runs}) ->
    {Shown, More} = split(Diff),
    ["\n<details><summary>env differences that might explain a change</summary>\n\n",
     beamlab_format_markdown:table([<<"key">> | [L || #{label := L} <- Runs]],
                                   [[K | [beamlab_result_env:value_text(K, V) || V <- Vs]] || #{key := K, values := Vs} <- Shown]),
     [io_lib:format("~n... ~b more~n", [More]) || More > 0],
     "\n</details>\n"].

split(Diff) when length(Diff) > ?MAX_ENV_LINES ->
    {Shown, Rest} = lists:split(?MAX_ENV_LINES, Diff),
    {Shown, length(Rest)};
split(Diff) ->
    {Diff, 0}.

to_bin(null) -> <<"-">>;
to_bin(B) when is_binary(B) -> B;
to_bin(A) when is_atom(A) -> atom_to_binary(A, utf8).

table_row(#{name := Name, unit := Unit, cells := Cells}) ->
    [Name, Unit]
        ++ lists:append([own_cols(C) || C <- Cells])
        ++ lists:append([change_cols(C) || C <- tl(Cells)]).

own_cols(#{present := false}) -> [null, null, null, null];
own_cols(#{mean := Mean, ci_mean := [Lo, Hi], n := N}) when is_number(Lo), is_number(Hi) -> [Mean, Lo, Hi, N];
own_cols(#{mean := Mean, n := N}) -> [Mean, null, null, N].

change_cols(#{present := false}) -> [null, null, null, null, null, <<"missing">>];
change_cols(#{verdict := V} = C) ->
    {Lo, Hi} = case maps:get(ci, C, null) of
                   [L, H] -> {L, H};
                   _ -> {null, null}
               end,
    [maps:get(change, C, null), Lo, Hi, maps:get(p_value, C, null), maps:get(detectable, C, null),
     atom_to_binary(V, utf8)];
change_cols(_) -> [null, null, null, null, null, null].

