%%% @doc Command-line option parsing shared by every beamlab command.
%%%
%%% A command describes its options as a list of maps:
%%% ```
%%% #{name => concurrency, short => "c", long => "concurrency",
%%%   type => pos_integer, default => 1, metavar => "N",
%%%   help => "number of concurrent workers"}
%%% '''
%%% Keys: `name' (atom, required), `short' (without the dash; may be several
%%% letters, as erlperf's `-pa'), `long' (without the dashes), `type',
%%% `default', `multi' (collect every occurrence in a list), `attach' (the
%%% option applies to the positional argument before it, as erlperf's
%%% `--init_runner'; stored per argument), `optional_value' (the value used
%%% when the option is given without one, as `--save'), `help', `metavar'.
%%%
%%% Types: `boolean' (a flag), `count' (a flag counted: -vv), `string',
%%% `cookie' (a distribution cookie: not empty, never echoed in errors),
%%% `integer', `pos_integer', `non_neg_integer', `number', `pos_number',
%%% `quantity' (a positive integer with K/M/G suffix: 10M), `percent'
%%% (a positive number; a trailing % is allowed), `fraction' (a number
%%% below 1, `0.05', or a percentage with its % sign, `5%'; both give
%%% 0.05), `{enum, [atom()]}',
%%% `{list, Type}' (comma separated).
%%%
%%% Numbers are bounded at parse time (the input policy,
%%% docs/reliability.md "Input"): `max' (with `max_why', a few words on
%%% why) caps an option; without one, an integer is at most 2^32-1 and
%%% any other number at most 4294967 (seconds that still fit a timer in
%%% milliseconds), a quantity at most 10^15. A value beyond is one line
%%% naming the limit, never a failure later.
%%%
%%% `--' ends the options; what follows is returned in `rest'. Values may be
%%% given as `--long=VALUE', `--long VALUE' or `-s VALUE'. A value that looks
%%% like a negative number is taken as the value, so `-d -5' is reported as a
%%% bad duration instead of an unknown option.
-module(beamlab_cli_args).

-export([add_code_paths/1, parse/2, help/1, common_options/0, get/2, get/3, parse_value/2]).

-type type() :: boolean | count | string | cookie | integer | pos_integer | non_neg_integer
              | number | pos_number | quantity | percent | fraction | {enum, [atom()]}
              | {list, type()}.
-type option() :: #{name := atom(), short => string(), long => string(), type := type(),
                    default => term(), multi => boolean(), attach => boolean(),
                    optional_value => term(), help => string(), metavar => string(),
                    max => number(), max_why => string(), hidden => boolean()}.
-type parsed() :: #{opts := #{atom() => term()}, args := [string()],
                    arg_opts := [#{atom() => term()}], rest := [string()],
                    given := [atom()], command => string(), argv => [string()],
                    checkpoint => string(), project => beamlab_project_build:project()}.
-export_type([option/0, parsed/0, type/0]).

%% @doc Options every measuring command accepts.
-spec common_options() -> [option()].
common_options() ->
    [#{name => format, long => "format",
       type => {enum, [text, json, csv, markdown, 'github-bigger', 'github-smaller', bencher]},
       default => text, metavar => "FMT",
       help => "output format: text, json, csv, markdown, or for continuous-benchmarking services "
               "github-bigger / github-smaller (github-action-benchmark's customBiggerIsBetter / "
               "customSmallerIsBetter) and bencher (Bencher Metric Format)"},
     #{name => save, long => "save", type => string, optional_value => auto, metavar => "[PATH]",
       help => "save the result document (default path: beamlab-results/<kind>-<time>.json; "
               "a PATH must end in .json, name a directory or be absolute, or use --save=PATH)"},
     #{name => verbose, short => "v", long => "verbose", type => count, default => 0,
       help => "print live VM telemetry every second (and record it in the result)"},
     #{name => no_color, long => "no-color", type => boolean, default => false,
       help => "plain ASCII output (no colours, no Unicode bars)"}].

%% @doc Parses `Argv' against `Options'.
-spec parse([string()], [option()]) -> {ok, parsed()} | {error, iolist()}.
parse(Argv, Options) ->
    try
        Init = #{opts => #{}, args => [], arg_opts => [], rest => [], given => []},
        P = loop(Argv, Options, Init),
        {ok, finish(P, Options)}
    catch
        throw:{bad_arg, Msg} -> {error, Msg}
    end.

%% @doc The value of option `Name' (its default when not given).
-spec get(atom(), parsed()) -> term().
get(Name, #{opts := Opts}) ->
    maps:get(Name, Opts, undefined).

%% @doc The value of option `Name', or `Default' when it has no value.
-spec get(atom(), parsed(), term()) -> term().
get(Name, #{opts := Opts}, Default) ->
    case maps:get(Name, Opts, undefined) of
        undefined -> Default;
        V -> V
    end.

%% @doc Help text for a list of options, one aligned line each.
-spec help([option()]) -> iolist().
help(Options) ->
    Rows = [{option_synopsis(O), help_text(O)} || O <- Options, not maps:get(hidden, O, false)],
    Width = lists:max([0 | [string:length(S) || {S, _} <- Rows]]),
    [io_lib:format("  ~ts~ts  ~ts~n", [S, lists:duplicate(Width - string:length(S), $\s), H])
     || {S, H} <- Rows].

%% @doc Parses one value of the given type; used for values read elsewhere
%% (e.g. `--param KEY=VALUE' of the suite).
-spec parse_value(type(), string()) -> {ok, term()} | {error, iolist()}.
parse_value(Type, S) ->
    try {ok, value(#{type => Type}, S, "value")}
    catch throw:{bad_arg, Msg} -> {error, Msg}
    end.

%%--------------------------------------------------------------------
%% Parsing

loop([], _Options, P) ->
    P;
loop(["--" | Rest], _Options, P) ->
    P#{rest := Rest};
loop(["--" ++ Long | Rest], Options, P) ->
    {Name, Inline} = case string:split(Long, "=") of
                         [N, V] -> {N, {value, V}};
                         [N] -> {N, none}
                     end,
    Opt = find(long, Name, Options, "--" ++ Name),
    take(Opt, "--" ++ Name, Inline, Rest, Options, P);
loop(["-" ++ Short = Arg | Rest], Options, P) when Short =/= [] ->
    case is_number_text(Arg) of
        true -> positional(Arg, Rest, Options, P);
        false ->
            case find_short(Short, Options) of
                {ok, Opt} -> take(Opt, Arg, none, Rest, Options, P);
                error -> throw({bad_arg, io_lib:format("unknown option '~ts'", [echo(Arg)])})
            end
    end;
loop([Arg | Rest], Options, P) ->
    positional(Arg, Rest, Options, P).

positional(Arg, Rest, Options, P = #{args := Args, arg_opts := AO}) ->
    loop(Rest, Options, P#{args := Args ++ [Arg], arg_opts := AO ++ [#{}]}).

find_short(Short, Options) ->
    case [O || O = #{short := S} <- Options, S =:= Short] of
        [O] -> {ok, O};
        [] -> error
    end.

find(long, Name, Options, Shown) ->
    case [O || O = #{long := L} <- Options, L =:= Name] of
        [O] -> O;
        [] ->
            Near = lists:sort([{distance(Name, L), L} || #{long := L} <- Options]),
            Close = max(1, length(Name) div 3),
            Hint = case Near of
                       [{D, L} | _] when D =< Close -> io_lib:format(" (did you mean --~ts?)", [L]);
                       _ -> ""
                   end,
            throw({bad_arg, io_lib:format("unknown option '~ts'~ts", [echo(Shown), Hint])})
    end.

take(#{type := Flag} = Opt, Shown, Inline, Rest, Options, P) when Flag =:= boolean; Flag =:= count ->
    Value = case Inline of
                none when Flag =:= boolean -> true;
                none -> 1;
                {value, V} when Flag =:= boolean -> convert(boolean, V, Shown);
                {value, V} -> convert(non_neg_integer, V, Shown)
            end,
    loop(Rest, Options, store(Opt, Value, Shown, P));
take(Opt = #{optional_value := Default}, Shown, none, Rest, Options, P) ->
    case Rest of
        [Next | More] ->
            case takes_optional(Opt, Next) of
                true -> loop(More, Options, store(Opt, value(Opt, Next, Shown), Shown, P));
                false -> loop(Rest, Options, store(Opt, Default, Shown, P))
            end;
        [] -> loop(Rest, Options, store(Opt, Default, Shown, P))
    end;
take(Opt, Shown, {value, V}, Rest, Options, P) ->
    loop(Rest, Options, store(Opt, value(Opt, V, Shown), Shown, P));
take(Opt, Shown, none, [V | Rest], Options, P) when V =/= "--" ->
    loop(Rest, Options, store(Opt, value(Opt, V, Shown), Shown, P));
take(Opt, Shown, none, _, _Options, _P) ->
    throw({bad_arg, io_lib:format("option '~ts' needs a value (~ts)",
                                  [echo(Shown), maps:get(metavar, Opt, type_text(maps:get(type, Opt)))])}).

%% An optional value (as --save's PATH) is only taken when it cannot be
%% mistaken for a positional argument such as Erlang code: a .json name, a
%% directory, an absolute path (no code starts with `/': `--save
%% /proc/self/x' was run as code), or what is written in place (`-', a
%% device, a FIFO).
takes_optional(#{name := save}, Next) ->
    lists:suffix(".json", Next) orelse filelib:is_dir(Next) orelse lists:prefix("/", Next) orelse
        case beamlab_runtime_file:check_target(Next) of
            {ok, {in_place, _}} -> true;
            _ -> false
        end;
takes_optional(_, Next) ->
    not lists:prefix("-", Next).

store(Opt = #{name := Name}, Value, Shown, P = #{given := Given}) ->
    P1 = P#{given := [Name | Given]},
    case maps:get(attach, Opt, false) of
        true -> store_attached(Name, Value, Shown, P1);
        false ->
            Opts = maps:get(opts, P1),
            case maps:get(multi, Opt, false) of
                true -> P1#{opts := Opts#{Name => maps:get(Name, Opts, []) ++ [Value]}};
                false when map_get(type, Opt) =:= count ->
                    P1#{opts := Opts#{Name => maps:get(Name, Opts, 0) + Value}};
                false -> P1#{opts := Opts#{Name => Value}}
            end
    end.

store_attached(_Name, _Value, Shown, #{arg_opts := []}) ->
    throw({bad_arg, io_lib:format("'~ts' applies to the code before it; give the code first "
                                  "(or use the _all form for every runner)", [echo(Shown)])});
store_attached(Name, Value, Shown, P = #{arg_opts := AO}) ->
    Last = lists:last(AO),
    case maps:is_key(Name, Last) of
        true -> throw({bad_arg, io_lib:format("'~ts' given twice for the same code", [echo(Shown)])});
        false -> P#{arg_opts := lists:droplast(AO) ++ [Last#{Name => Value}]}
    end.

finish(P = #{opts := Opts, given := Given}, Options) ->
    Defaults = maps:from_list([{N, D} || O = #{name := N, default := D} <- Options,
                                         not maps:get(attach, O, false)]),
    P#{opts := maps:merge(Defaults, Opts), given := lists:reverse(Given)}.

%% Levenshtein distance, for "did you mean" hints on mistyped options.
distance(A, B) ->
    First = lists:seq(0, length(B)),
    {_, Last} = lists:foldl(
                  fun(CA, {I, Prev}) ->
                          Row = distance_row(CA, B, Prev, [I]),
                          {I + 1, Row}
                  end, {1, First}, A),
    lists:last(Last).

distance_row(_CA, [], _Prev, Acc) ->
    lists:reverse(Acc);
distance_row(CA, [CB | B], [Diag, Up | Prev], [Left | _] = Acc) ->
    Cost = case CA =:= CB of true -> 0; false -> 1 end,
    distance_row(CA, B, [Up | Prev], [lists:min([Left + 1, Up + 1, Diag + Cost]) | Acc]).

%%--------------------------------------------------------------------
%% Values

value(Opt = #{type := Type}, V, Shown) ->
    Value = convert(Type, V, Shown),
    Max = maps:get(max, Opt, default_max(element_type(Type))),
    _ = [bounded(X, Max, maps:get(max_why, Opt, ""), Shown, V) || X <- elements(Type, Value)],
    Value.

element_type({list, T}) -> element_type(T);
element_type(T) -> T.

elements({list, _}, L) -> L;
elements(_, X) -> [X].

%% The bound of every number without one of its own.
default_max(T) when T =:= integer; T =:= pos_integer; T =:= non_neg_integer -> 4294967295;
default_max(quantity) -> 1000000000000000;
default_max(T) when T =:= number; T =:= pos_number; T =:= percent -> 4294967;
default_max(_) -> infinity.

bounded(X, Max, Why, Shown, V) when is_number(X), is_number(Max), X > Max ->
    throw({bad_arg, io_lib:format("invalid value '~ts' for ~ts: at most ~ts~ts",
                                  [echo(V), echo(Shown), number_text(Max),
                                   case Why of "" -> ""; _ -> [" (", Why, ")"] end])});
bounded(X, _Max, _Why, _Shown, _V) ->
    X.

number_text(N) when is_integer(N) -> integer_to_list(N);
number_text(N) -> float_to_list(N, [short]).

convert(boolean, V, Shown) ->
    case string:lowercase(V) of
        T when T =:= "true"; T =:= "yes"; T =:= "1"; T =:= "on" -> true;
        F when F =:= "false"; F =:= "no"; F =:= "0"; F =:= "off" -> false;
        _ -> bad(Shown, V, "true or false")
    end;
convert(string, V, _) ->
    V;
convert(cookie, V, Shown) ->
    %% The value is never echoed: it is a secret.
    case beamlab_runtime_peer:cookie(V) of
        {ok, _} -> V;
        {error, Why} ->
            throw({bad_arg, io_lib:format("~ts: ~ts", [Shown, beamlab_runtime_peer:format_error(Why)])})
    end;
convert(integer, V, Shown) ->
    to_int(V, Shown, "an integer");
convert(pos_integer, V, Shown) ->
    check(to_int(V, Shown, "a positive integer"), fun(N) -> N > 0 end, Shown, V, "a positive integer");
convert(non_neg_integer, V, Shown) ->
    check(to_int(V, Shown, "a non-negative integer"), fun(N) -> N >= 0 end, Shown, V,
          "a non-negative integer");
convert(number, V, Shown) ->
    to_num(V, Shown, "a number");
convert(pos_number, V, Shown) ->
    check(to_num(V, Shown, "a positive number"), fun(N) -> N > 0 end, Shown, V, "a positive number");
convert(percent, V, Shown) ->
    Num = string:trim(V, trailing, "%"),
    check(to_num(Num, Shown, "a positive percentage"), fun(N) -> N > 0 end, Shown, V,
          "a positive percentage, e.g. 2 or 2%");
convert(fraction, V, Shown) ->
    What = "a fraction below 1 or a percentage with %, e.g. 0.05 or 5%",
    case lists:suffix("%", string:trim(V)) of
        true ->
            P = check(to_num(string:trim(string:trim(V), trailing, "%"), Shown, What),
                      fun(N) -> N > 0 end, Shown, V, What),
            P / 100;
        false ->
            F = check(to_num(V, Shown, What), fun(N) -> N > 0 end, Shown, V, What),
            F < 1 orelse throw({bad_arg, io_lib:format(
                                            "invalid value '~ts' for ~ts: a fraction is below 1 "
                                            "(0.05 means 5%); for ~ts percent write ~ts%",
                                            [echo(V), echo(Shown), echo(V), echo(string:trim(V))])}),
            F * 1.0
    end;
convert(quantity, V, Shown) ->
    What = "a positive count, optionally with a K, M or G suffix (e.g. 10M)",
    {Digits, Mult} = case lists:reverse(string:uppercase(V)) of
                         [$K | R] -> {lists:reverse(R), 1000};
                         [$M | R] -> {lists:reverse(R), 1000000};
                         [$G | R] -> {lists:reverse(R), 1000000000};
                         _ -> {V, 1}
                     end,
    check(to_int(Digits, Shown, What) * Mult, fun(N) -> N > 0 end, Shown, V, What);
convert({enum, Allowed}, V, Shown) ->
    case [A || A <- Allowed, atom_to_list(A) =:= V] of
        [A] -> A;
        [] -> bad(Shown, V, "one of " ++ string:join([atom_to_list(A) || A <- Allowed], ", "))
    end;
convert({list, Type}, V, Shown) ->
    [convert(Type, string:trim(Item), Shown) || Item <- string:split(V, ",", all)].

to_int(V, Shown, What) ->
    case string:to_integer(string:trim(V)) of
        {N, []} -> N;
        _ -> bad(Shown, V, What)
    end.

to_num(V, Shown, What) ->
    T = string:trim(V),
    case string:to_float(T) of
        {F, []} -> F;
        _ ->
            case string:to_integer(T) of
                {N, []} -> N;
                _ -> bad(Shown, V, What)
            end
    end.

check(Value, Pred, Shown, Raw, What) ->
    case Pred(Value) of
        true -> Value;
        false -> bad(Shown, Raw, What)
    end.

-spec bad(string(), string(), string()) -> no_return().
bad(Shown, V, What) ->
    throw({bad_arg, io_lib:format("invalid value '~ts' for ~ts: expected ~ts", [echo(V), echo(Shown), What])}).

%% A value the user typed, as an error line may quote it: control
%% characters escaped (the line stays one line), at most 80 characters.
echo(Text) ->
    Chars = [case C of
                 C when C < 32; C =:= 127 -> io_lib:format("\\x~2.16.0B", [C]);
                 C -> C
             end || C <- beamlab_input_text:decode(Text)],
    case string:length(Chars) of
        N when N > 80 -> [string:slice(Chars, 0, 77), "..."];
        _ -> Chars
    end.

%% "-5", "-0.5" and code such as "-1." are values or positional arguments,
%% never options: no option name starts with a digit.
is_number_text([$-, D | _]) -> D >= $0 andalso D =< $9;
is_number_text(_) -> false.

%%--------------------------------------------------------------------
%% Help

option_synopsis(O) ->
    Names = [["-", S] || S <- [maps:get(short, O, undefined)], S =/= undefined] ++
            [["--", L] || L <- [maps:get(long, O, undefined)], L =/= undefined],
    Meta = case maps:get(type, O) of
               boolean -> "";
               count -> "";
               T -> [" ", maps:get(metavar, O, type_text(T))]
           end,
    lists:flatten([lists:join(", ", Names), Meta]).

help_text(O) ->
    H = maps:get(help, O, ""),
    case maps:find(default, O) of
        {ok, D} when D =/= undefined, D =/= false, D =/= [], D =/= 0 ->
            io_lib:format("~ts (default: ~ts)", [H, default_text(D)]);
        _ -> H
    end.

default_text(D) when is_atom(D) -> atom_to_list(D);
default_text(D) when is_integer(D) -> integer_to_list(D);
default_text(D) when is_float(D) -> float_to_list(D, [short]);
default_text([A | _] = L) when is_atom(A) -> lists:join(",", [atom_to_list(X) || X <- L]);
%% A string as the user would type it, not as an Erlang term in quotes.
default_text(D) when is_binary(D) -> D;
default_text(D) when is_list(D) ->
    case io_lib:printable_unicode_list(D) of
        true -> D;
        false -> io_lib:format("~tp", [D])
    end;
default_text(D) -> io_lib:format("~tp", [D]).

type_text({enum, A}) -> string:join([atom_to_list(X) || X <- A], "|");
type_text({list, T}) -> type_text(T) ++ ",...";
type_text(quantity) -> "N[K|M|G]";
type_text(percent) -> "PCT";
type_text(fraction) -> "F";
type_text(string) -> "VALUE";
type_text(cookie) -> "COOKIE";
type_text(_) -> "N".

%% @doc `-pa DIR...': puts the directories on the code path, or stops
%% with a usage error naming the one that does not exist.
-spec add_code_paths([file:filename()]) -> ok | {error, beamlab_cli_error:reason()}.
add_code_paths(Dirs) ->
    case beamlab_engine_paths:add_code_paths(Dirs) of
        {ok, _} -> ok;
        {error, {no_such_directory, D}} -> beamlab_cli_error:usage_error("-pa ~ts: no such directory", [D])
    end.
