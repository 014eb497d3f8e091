%%% @doc GitHub-flavoured Markdown tables, ready to paste into a pull request.
%%%
%%% Cells are escaped so that no value can break the table: `|' is escaped,
%%% `<' and `>' become entities and line breaks become `<br>'. Numeric columns are right-aligned.
-module(beamlab_format_markdown).

-export([table/2, table/3, cell/1]).

-type align() :: left | right | center.
-export_type([align/0]).

%% @doc A table; a column is right-aligned when all its non-empty cells are
%% numbers.
-spec table([term()], [[term()]]) -> binary().
table(Header, Rows) ->
    Aligns = [case lists:all(fun(C) -> is_number(C) orelse C =:= <<>> orelse C =:= "" end, Col)
                   andalso lists:any(fun erlang:is_number/1, Col) of
                  true -> right;
                  false -> left
              end || Col <- columns(length(Header), Rows)],
    table(Header, Rows, Aligns).

%% @doc A table with explicit column alignments.
-spec table([term()], [[term()]], [align()]) -> binary().
table(Header, Rows, Aligns) ->
    iolist_to_binary([row(Header), sep_row(Aligns), [row(R) || R <- Rows]]).

%% @doc One escaped cell.
-spec cell(term()) -> binary().
cell(B) when is_binary(B) -> escape(B);
cell(I) when is_integer(I) -> integer_to_binary(I);
cell(F) when is_float(F) -> float_to_binary(F, [short]);
cell(null) -> <<>>;
cell(undefined) -> <<>>;
cell(A) when is_atom(A) -> escape(atom_to_binary(A, utf8));
cell(S) -> escape(unicode:characters_to_binary(S)).

%% Internals

columns(N, Rows) ->
    [[lists:nth(I, R) || R <- Rows, length(R) >= I] || I <- lists:seq(1, N)].

row(Cells) ->
    ["|", [[" ", cell(C), " |"] || C <- Cells], "\n"].

sep_row(Aligns) ->
    ["|", [[" ", sep(A), " |"] || A <- Aligns], "\n"].

sep(left) -> "---";
sep(right) -> "--:";
sep(center) -> ":-:".

escape(B) ->
    B1 = binary:replace(B, <<"\\">>, <<"\\\\">>, [global]),
    B2 = binary:replace(B1, <<"|">>, <<"\\|">>, [global]),
    %% GitHub would take <tag> for HTML and hide it.
    B3 = binary:replace(B2, <<"<">>, <<"&lt;">>, [global]),
    B4 = binary:replace(B3, <<">">>, <<"&gt;">>, [global]),
    B5 = binary:replace(B4, <<"\r\n">>, <<"<br>">>, [global]),
    binary:replace(B5, [<<"\n">>, <<"\r">>], <<"<br>">>, [global]).
