%%% @doc Aligned plain-text tables. Numbers (cells that start with a digit,
%%% a sign or a dot) are right-aligned, text is left-aligned; columns are
%%% separated by two spaces and never wrapped, so a table survives a pipe,
%%% `less -S' and a narrow terminal alike.
%%%
%%% ```
%%% 1> io:put_chars(beamlab_format_table:render(["Code", "QPS"], [["ok.", "17266 Ki"]])).
%%% Code       QPS
%%% ok.   17266 Ki
%%% '''
-module(beamlab_format_table).

-export([render/2, render/3]).

-type cell() :: iodata() | unicode:chardata() | number() | atom().
-type align() :: left | right | auto.
-export_type([cell/0]).

%% @doc Renders a header and rows.
-spec render([cell()], [[cell()]]) -> unicode:chardata().
render(Header, Rows) ->
    render(Header, Rows, #{}).

%% @doc Renders with options: `align' (a list, one per column: left, right
%% or auto), `indent' (spaces before each line), `header' (false to omit).
-spec render([cell()], [[cell()]], #{align => [align()], indent => non_neg_integer(),
                                     header => boolean()}) -> unicode:chardata().
render(Header, Rows, Opts) ->
    Cols = length(Header),
    Text = [[text(C) || C <- pad_row(R, Cols)] || R <- [Header | Rows]],
    Widths = [lists:max([string:length(lists:nth(I, R)) || R <- Text]) || I <- lists:seq(1, Cols)],
    Aligns = column_aligns(maps:get(align, Opts, []), tl(Text), Cols),
    Indent = lists:duplicate(maps:get(indent, Opts, 0), $\s),
    Lines = case maps:get(header, Opts, true) of
                true -> Text;
                false -> tl(Text)
            end,
    [[Indent, string:trim(line(R, Widths, Aligns), trailing), $\n] || R <- Lines].

pad_row(R, Cols) when length(R) >= Cols -> lists:sublist(R, Cols);
pad_row(R, Cols) -> R ++ lists:duplicate(Cols - length(R), "").

text(C) when is_integer(C) -> integer_to_list(C);
text(C) when is_float(C) -> beamlab_format_units:number(C);
text(C) when is_atom(C) -> atom_to_list(C);
text(C) -> unicode:characters_to_list(C).

column_aligns(Given, Rows, Cols) ->
    [case nth_or(I, Given, auto) of
         auto -> auto_align([lists:nth(I, R) || R <- Rows]);
         A -> A
     end || I <- lists:seq(1, Cols)].

nth_or(I, L, _Default) when I =< length(L) -> lists:nth(I, L);
nth_or(_, _, Default) -> Default.

auto_align(Cells) ->
    NonEmpty = [C || C <- Cells, C =/= ""],
    case NonEmpty =/= [] andalso lists:all(fun numeric/1, NonEmpty) of
        true -> right;
        false -> left
    end.

numeric([C | _]) when C >= $0, C =< $9; C =:= $-; C =:= $+; C =:= $.; C =:= $< -> true;
numeric(_) -> false.

line(Cells, Widths, Aligns) ->
    lists:join("  ", [pad(C, W, A) || {C, W, A} <- lists:zip3(Cells, Widths, Aligns)]).

pad(C, W, right) -> [lists:duplicate(W - string:length(C), $\s), C];
pad(C, W, _) -> [C, lists:duplicate(W - string:length(C), $\s)].
