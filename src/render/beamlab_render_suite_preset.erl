%%% @doc The text view of a suite run that follows a preset (a published
%%% table, see `beamlab_suite_preset'): the preset's own table first - for
%%% the `rows' layout one line per row with the published figure, ours and
%%% their ratio; for the `columns' layout one line per row with the
%%% preset's metric columns, then the published lines as a reference - and
%%% below it the suite's usual view. Reads the document's `extra.preset'
%%% (JSON form: binary keys). Pure.
-module(beamlab_render_suite_preset).

-export([render/2, table/1, titled/2]).

%% @doc The preset table, then the suite's view of the same document.
-spec render(beamlab_result:result(), beamlab_render_text:opts()) -> unicode:chardata().
render(Doc, Opts) ->
    [table(Doc), "\n", beamlab_render_suite:render(Doc, Opts)].

%% @doc The preset table alone ("" when the document follows no preset).
-spec table(beamlab_result:result()) -> unicode:chardata().
table(#{extra := #{<<"preset">> := Preset}, benchmarks := Bs}) ->
    #{<<"rows">> := Rows} = Preset,
    Body = case maps:get(<<"layout">>, Preset, <<"rows">>) of
               <<"columns">> -> columns(Preset, Rows, Bs);
               _ -> rows(Preset, Rows, Bs)
           end,
    titled(Preset, Body);
table(_) ->
    "".

%% @doc A preset's table as every preset view shows it: its title, `Body',
%% and the line naming its source (when it has one). `Preset' is the
%% document's `extra.preset'.
-spec titled(beamlab_json:object(), unicode:chardata()) -> unicode:chardata().
titled(#{<<"title">> := Title} = Preset, Body) ->
    [Title, "\n", Body,
     case maps:get(<<"source">>, Preset, <<>>) of
         <<>> -> "";
         Src -> ["source: ", Src, "\n"]
     end].

rows(Preset, Rows, Bs) ->
    Ref = maps:get(<<"reference">>, Preset, <<"published">>),
    Lines = [begin
                 Ours = value(Bs, B, maps:get(<<"metric">>, R, null)),
                 Pub = maps:get(<<"published">>, R, null),
                 [L, num(Pub), num(Ours), unit(R, Bs, B), ratio(Ours, Pub)]
             end || #{<<"label">> := L, <<"benchmark">> := B} = R <- Rows],
    [beamlab_format_table:render(["test", Ref, "this machine", "unit", "this / published"], Lines,
                                 #{align => [left, right, right, left, right]})].

columns(Preset, Rows, Bs) ->
    Cols = maps:get(<<"columns">>, Preset, []),
    Headers = ["" | [H || #{<<"header">> := H} <- Cols]],
    Ours = [[L | [num(value(Bs, B, M)) || #{<<"metric">> := M} <- Cols]]
            || #{<<"label">> := L, <<"benchmark">> := B} <- Rows],
    Align = [left | [right || _ <- Cols]],
    [beamlab_format_table:render(Headers, Ours, #{align => Align}),
     case maps:get(<<"published">>, Preset, []) of
         [] -> "";
         Pub ->
             ["published (reference):\n",
              beamlab_format_table:render(Headers, [[L | [num(V) || V <- Vs]]
                                                    || #{<<"label">> := L, <<"values">> := Vs} <- Pub],
                                          #{align => Align})]
     end].

%% The median of the row's benchmark: its primary metric (null), or the
%% named metric (a secondary benchmark is named Name/metric).
value(Bs, Name, Metric) ->
    Slash = <<Name/binary, "/">>,
    Match = [B || #{name := N, metric := M} = B <- Bs,
                  case Metric of
                      null -> N =:= Name;
                      _ -> (N =:= Name orelse prefix(Slash, N)) andalso M =:= Metric
                  end],
    case Match of
        [#{stats := #{median := Med}} | _] -> Med;
        [] -> null
    end.

prefix(P, B) ->
    byte_size(B) >= byte_size(P) andalso binary:part(B, 0, byte_size(P)) =:= P.

unit(R, Bs, Name) ->
    case maps:get(<<"unit">>, R, null) of
        null ->
            case [U || #{name := N, unit := U} <- Bs, N =:= Name] of
                [U | _] -> U;
                [] -> ""
            end;
        U -> U
    end.

ratio(Ours, Pub) when is_number(Ours), is_number(Pub), Pub /= 0 ->
    beamlab_format_units:sig(Ours / Pub, 3);
ratio(_, _) ->
    "-".

num(V) when is_integer(V) -> integer_to_list(V);
num(V) when is_number(V) -> beamlab_format_units:sig(V, 4);
num(_) -> "-".
