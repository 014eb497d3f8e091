%%% @doc One line for any error reason, whatever its shape: every
%%% module's `format_error/1' runs its own clauses through {@link line/2},
%%% so a reason it does not know, or one of its own tags with a payload
%%% of another shape than its spec gives (a reason passed up a layer, a
%%% document read from a file), is printed as a term rather than raised,
%%% and a line never holds a line break or a terminal's control
%%% character taken from a payload (#31). Pure.
-module(beamlab_format_reason).

-export([line/2, term/1]).

%% @doc `Format(Reason)' when it returns chardata of one line; with its
%% control characters escaped (`\n', `\x{1B}') when it holds any; the
%% term printed ({@link term/1}) when it raises or returns something
%% else than chardata. A line that is fine is returned as it is.
-spec line(fun((term()) -> unicode:chardata()), term()) -> unicode:chardata().
line(Format, Reason) ->
    try
        Chars = Format(Reason),
        {Chars, unicode:characters_to_list(Chars)}
    of
        {Chars, L} when is_list(L) ->
            case lists:any(fun control/1, L) of
                false -> Chars;
                true -> escape(L)
            end;
        _ ->
            %% (invalid or incomplete UTF-8 in a binary)
            term(Reason)
    catch
        _:_ ->
            term(Reason)
    end.

%% @doc `Term' printed on one line, its depth limited, strings and atoms
%% quoted and escaped as Erlang writes them (`~0tP').
-spec term(term()) -> string().
term(Term) ->
    escape(unicode:characters_to_list(io_lib:format("~0tP", [Term, 12]))).

%% C0, DEL and C1: line breaks, and what a terminal takes for commands.
control(C) -> C < 16#20 orelse (C >= 16#7F andalso C =< 16#9F).

escape(L) ->
    lists:flatten([escaped(C) || C <- L]).

escaped($\n) -> "\\n";
escaped($\r) -> "\\r";
escaped($\t) -> "\\t";
escaped(C) ->
    case control(C) of
        true -> io_lib:format("\\x{~.16B}", [C]);
        false -> C
    end.
