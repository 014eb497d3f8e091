%%% @doc Reading a file of Erlang terms that a user wrote (`matrix --file',
%%% `suite --preset FILE'), bounded under the input policy (see
%%% docs/reliability.md "Input"), as `file:consult/1' is not: the file is
%%% read with `beamlab_runtime_file:read/2' (size and time bounded, any
%%% file type), at most 10,000 atoms the VM does not know yet may appear
%%% (atoms are never freed: a million distinct ones would abort the VM),
%%% numbers are at most 1000 characters long (their conversion is
%%% quadratic), and each term must be a literal whose binaries are built
%%% from segments of at most 1024 bits (`<<0:8796093022208>>' would
%%% allocate a terabyte).
-module(beamlab_input_terms).

-export([consult/1, limits/0, format_error/1]).

-define(MAX_BYTES, 1048576).
-define(MAX_NEW_ATOMS, 10000).
-define(MAX_NUMBER, 1000).
-define(MAX_SEGMENT_BITS, 1024).

-type error_reason() :: beamlab_runtime_file:read_error()
                      | {too_many_atoms, pos_integer()} | number_too_long
                      | {syntax, pos_integer(), string()} | {not_a_literal, pos_integer()}
                      | {big_binary, pos_integer()}.
-export_type([error_reason/0]).

%% @doc The limits {@link consult/1} enforces.
-spec limits() -> #{bytes := pos_integer(), new_atoms := pos_integer(), number_chars := pos_integer(),
                    segment_bits := pos_integer()}.
limits() ->
    #{bytes => ?MAX_BYTES, new_atoms => ?MAX_NEW_ATOMS, number_chars => ?MAX_NUMBER,
      segment_bits => ?MAX_SEGMENT_BITS}.

%% @doc The terms of `File', each ended by a dot, as `file:consult/1'
%% reads them, within {@link limits/0}.
-spec consult(file:filename()) -> {ok, [term()]} | {error, error_reason()}.
consult(File) ->
    case beamlab_runtime_file:read(File, ?MAX_BYTES) of
        {ok, Bin} ->
            try
                check_atoms(Bin),
                check_numbers(Bin),
                {ok, terms(beamlab_input_text:decode(Bin))}
            catch throw:{?MODULE, Reason} -> {error, Reason}
            end;
        {error, _} = E -> E
    end.

%% @doc One line for an error of {@link consult/1}.
-spec format_error(error_reason()) -> string().
format_error(Reason) ->
    beamlab_format_reason:line(fun error_line/1, Reason).

error_line({too_many_atoms, N}) ->
    text("it names ~b atoms this VM does not know (at most ~b)", [N, ?MAX_NEW_ATOMS]);
error_line(number_too_long) ->
    text("a number is longer than ~b characters", [?MAX_NUMBER]);
error_line({syntax, Line, Desc}) ->
    text("line ~b: ~ts", [Line, Desc]);
error_line({not_a_literal, Line}) ->
    text("line ~b: not a literal term (no variables, calls, funs or records)", [Line]);
error_line({big_binary, Line}) ->
    text("line ~b: a binary segment larger than ~b bits", [Line, ?MAX_SEGMENT_BITS]);
error_line(Reason) ->
    beamlab_runtime_file:format_error(Reason).

text(Format, Args) ->
    unicode:characters_to_list(io_lib:format(Format, Args)).

%% Words that would become atoms (unquoted ones, and quoted ones), before
%% the scanner makes them: an over-estimate (words in strings and
%% comments count too), so the limit errs on the safe side.
check_atoms(Bin) ->
    Words = case re:run(Bin, "'(?:[^'\\\\]|\\\\.){0,255}'|(?<![A-Za-z0-9_@])[a-z][A-Za-z0-9_@]{0,254}",
                        [global, {capture, first, binary}]) of
                {match, Ms} -> [W || [W] <- Ms];
                nomatch -> []
            end,
    New = count_new(lists:usort(Words), 0),
    New =< ?MAX_NEW_ATOMS orelse throw({?MODULE, {too_many_atoms, New}}),
    ok.

count_new([], N) -> N;
count_new([W | Ws], N) ->
    Name = case W of
               <<$', _/binary>> -> binary:part(W, 1, byte_size(W) - 2);
               _ -> W
           end,
    Known = try binary_to_existing_atom(Name, utf8), true
            catch error:badarg -> false
            end,
    count_new(Ws, case Known of true -> N; false -> N + 1 end).

check_numbers(Bin) ->
    Re = ["(?<![A-Za-z0-9_@])[0-9][0-9A-Za-z_#.]{", integer_to_list(?MAX_NUMBER), ",}"],
    case re:run(Bin, Re, [{capture, none}]) of
        match -> throw({?MODULE, number_too_long});
        nomatch -> ok
    end.

terms(Text) ->
    case erl_scan:string(Text, 1) of
        {ok, Tokens, _} -> [term(Form) || Form <- forms(Tokens, [])];
        {error, {Line, Mod, Desc}, _} -> throw({?MODULE, {syntax, line(Line), Mod:format_error(Desc)}})
    end.

forms([], []) -> [];
forms([], Acc) -> [lists:reverse(Acc)];
forms([{dot, _} = Dot | Rest], Acc) -> [lists:reverse([Dot | Acc]) | forms(Rest, [])];
forms([T | Rest], Acc) -> forms(Rest, [T | Acc]).

term(Tokens) ->
    case erl_parse:parse_exprs(Tokens) of
        {ok, [Expr]} ->
            literal(Expr),
            %% A literal that still cannot be built (`<<"x":2/binary>>').
            try erl_parse:normalise(Expr)
            catch error:_ -> throw({?MODULE, {not_a_literal, line(element(2, Expr))}})
            end;
        {ok, [Expr | _]} ->
            throw({?MODULE, {syntax, line(element(2, Expr)), "one term per dot"}});
        {error, {Line, Mod, Desc}} ->
            throw({?MODULE, {syntax, line(Line), lists:flatten(Mod:format_error(Desc))}})
    end.

%% Only what a literal term is made of, with small binary segments.
literal({Atomic, _, _}) when Atomic =:= atom; Atomic =:= integer; Atomic =:= float;
                             Atomic =:= char; Atomic =:= string -> ok;
literal({nil, _}) -> ok;
literal({cons, _, H, T}) -> literal(H), literal(T);
literal({tuple, _, Es}) -> lists:foreach(fun literal/1, Es);
literal({map, _, Fs}) -> [begin literal(K), literal(V) end || {map_field_assoc, _, K, V} <- Fs],
                         length(Fs) =:= length([F || {map_field_assoc, _, _, _} = F <- Fs])
                             orelse throw({?MODULE, {not_a_literal, 0}}),
                         ok;
literal({op, _, Op, {N, _, _}}) when (Op =:= '-' orelse Op =:= '+'),
                                    (N =:= integer orelse N =:= float) -> ok;
literal({bin, Anno, Elements}) -> lists:foreach(fun(E) -> segment(E, Anno) end, Elements);
literal(Other) -> throw({?MODULE, {not_a_literal, line(element(2, Other))}}).

segment({bin_element, _, Value, Size, Types}, Anno) ->
    case Value of
        {string, _, _} -> ok;
        {N, _, _} when N =:= integer; N =:= float; N =:= char -> ok;
        {op, _, _, {N, _, _}} when N =:= integer; N =:= float -> ok;
        _ -> throw({?MODULE, {not_a_literal, line(Anno)}})
    end,
    Unit = case Types of
               default -> 1;
               _ ->
                   case [U || {unit, U} <- Types] of
                       [U | _] -> U;
                       [] ->
                           case lists:member(binary, Types) orelse lists:member(bytes, Types) of
                               true -> 8;
                               false -> 1
                           end
                   end
           end,
    case Size of
        default -> ok;
        {integer, _, S} when S * Unit =< ?MAX_SEGMENT_BITS -> ok;
        _ -> throw({?MODULE, {big_binary, line(Anno)}})
    end.

line(Anno) when is_integer(Anno) -> Anno;
line(Anno) -> try erl_anno:line(Anno) catch _:_ -> 0 end.
