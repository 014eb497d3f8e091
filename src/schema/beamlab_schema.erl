%%% @doc The declarative option schema: what an experiment kind's options
%%% are (name, type, default, bounds, choices, conflicts, requires, the
%%% reason shown on error). The command line and the public API check the
%%% same options against it (#31), so both refuse the same values for the
%%% same reason; the line names the option as its front end's user knows
%%% it: the API by its key (`rate'), the command line by its flag (`-r').
%%%
%%% An option is the map `beamlab_cli_args' reads (`name', `short',
%%% `long', `type', `default', `metavar', `help', `max', `max_why',
%%% `multi', ...) plus `min' (with `min_why'), `conflicts' (names that
%%% cannot be given with it; `{Name, Format}' with the line's own format,
%%% whose two `~ts' take the two options' names), `requires' (names of
%%% which one must be given with it, `requires_format' the line's own
%%% format: `~ts' this option, `~ts' the first it requires) and `why' (the
%%% reason shown for a conflict or a requirement). An option counts as
%%% given when its key is there with a value other than `false' and
%%% `undefined'.
%%% An option of several values (`multi', a flag given again and again)
%%% takes a list of values of its type. A flag read in other units than
%%% its key (seconds on the command line, milliseconds in the library)
%%% says so with `scale' (the key's value is the flag's times `N', or
%%% divided by `N' for `{1, N}'): its bounds and default are the key's,
%%% and a line naming the flag shows them in the flag's units. A flag
%%% whose text the command turns into the key's value itself (`--param
%%% W.K=V' into a map) says how the text is read with `cli_type'.
%%% A value checked is the value as the kind takes it (a number, an atom,
%%% a binary), after the command line parsed its text (and, for a flag
%%% whose text the command turns into the key's value, after it did).
%%% What a type cannot say (a URI that parses, a file that exists, a name
%%% of at most 255 bytes) is the option's `check': a fun of the kind's
%%% that takes one value of the option's type (each value of a `multi'
%%% option) and returns `ok' or `{error, Why}', Why a line's end naming
%%% the value as it may be shown (a URI's password masked): the line is
%%% the option's name, a colon and Why.
%%% A flag whose text the kind reads itself (PerfTest's `100:60' steps,
%%% `20gb', `PT10M', `k=v' lists) says how with `parse': a fun of the
%%% kind's from the flag's text (a list of texts for a `multi' flag) to
%%% `{ok, Value}' (the key's value, then checked as the library's is) or
%%% `{error, Why}' (text that reads as no value: the line "option: Why";
%%% `{error, {type, Type}}' for text that is no value of `Type', the
%%% line "invalid value 'TEXT' for option: expected ...").
%%% A parser reads; the bounds are the check's, so both fronts refuse the
%%% same values with the same line.
%%% An option whose value is a map may give some of its keys flags of
%%% their own (`--tls-ca-file' is `tls''s `cacertfile'): `fields', options
%%% each with the `key' it sets (and its flag, type, help, `parse'); the
%%% flags given make the map. A check names one of its keys with the Why
%%% `{field, Key, Why}' (the library's line `tls: cacertfile Why', the
%%% command line's `--tls-ca-file Why') or several with `{fields, Format,
%%% Keys}' (a `~ts' for each, no other text of the user's).
%%%
%%% Core: pure, it calls nothing above it.
-module(beamlab_schema).

-export([check/2, check_value/2, find/2, shown/2, format_error/1, format_error/2]).
-export([check/3, flags/1, from_flags/2, parse/2, value_text/1]).

-type type() :: boolean | count | string | cookie | integer | pos_integer | non_neg_integer
              | number | pos_number | quantity | percent | fraction | {enum, [atom()]}
              | {list, type()} | {one_of, [type()]} | map | term.
-type option() :: #{name := atom(), type => type(), short => string(), long => string(),
                    default => term(), metavar => string(), help => string(),
                    min => number(), min_why => string(), max => number(), max_why => string(),
                    multi => boolean(), attach => boolean(), optional_value => term(),
                    hidden => boolean(),
                    conflicts => [atom() | {atom(), string()}], requires => [atom()], why => string(),
                    requires_format => string(), scale => scale(), cli_type => type(),
                    check => fun((term()) -> ok | {error, check_why()}),
                    parse => fun((term()) -> {ok, term()} | {error, unicode:chardata() | {type, type()}}),
                    fields => [option()], key => atom()}.
%% Why a kind's check refused a value: a line's end, or naming keys of a
%% map option (`fields').
-type check_why() :: unicode:chardata() | {field, atom(), unicode:chardata()} | {fields, string(), [atom()]}.
-type schema() :: [option()].
%% The key's value is the flag's times `N' (`{1, N}': divided by `N').
-type scale() :: pos_integer() | {1, pos_integer()}.
%% How a line names an option: by its key (the API) or its flag (the CLI).
-type names() :: key | flag.
%% Why a value was refused.
-type why() :: {type, type()} | {min, number(), string()} | {max, number(), string()}
             | {check, check_why()}.
%% A rule of a kind's own that names options: `Format' is an io_lib
%% format whose `~ts' take, in order, the `Args' (an option's shown name
%% for `{opt, Option}', a key of a map option for `{field, Option, Key}':
%% its field's flag, or `Key in Option' naming keys; the text of `{value, V}').
-type arg() :: {opt, option()} | {field, option(), atom()} | {value, term()}.
-type error_reason() :: {unknown_option, term()}
                      | {invalid, option(), term(), why()}
                      | {conflict, option(), option(), string()}
                      | {conflict, option(), option(), {format, string()}}
                      | {requires, option(), [option()], string()}
                      | {requires, option(), [option()], {format, string()}}
                      | {rule, string(), [arg()]}.
-export_type([type/0, option/0, schema/0, names/0, why/0, arg/0, error_reason/0, scale/0, check_why/0]).

%% @doc Checks the options given (`Given': name => value, only those
%% given, not the defaults) against `Schema': every name is one of its
%% options, every value has the option's type and is within its bounds,
%% no two options given conflict, and an option that requires others has
%% one of them. The first mistake is the error.
-spec check(schema(), #{atom() => term()}) -> ok | {error, error_reason()}.
check(Schema, Given) when is_map(Given) ->
    Names = [N || #{name := N} <- Schema],
    case [K || K <- lists:sort(maps:keys(Given)), not lists:member(K, Names)] of
        [K | _] ->
            {error, {unknown_option, K}};
        [] ->
            first([fun() -> values(Schema, Given) end,
                   fun() -> conflicts(Schema, Given) end,
                   fun() -> requires(Schema, Given) end])
    end.

%% @doc Checks the options given as {@link check/2} does, then, when they
%% pass, a kind's own rules: `Rules' gets how a rule's line names an
%% option (`Opt(Name)', an `arg()') and returns the first rule broken.
-spec check(schema(), #{atom() => term()}, fun((fun((atom()) -> arg())) -> ok | {error, error_reason()})) ->
          ok | {error, error_reason()}.
check(Schema, Given, Rules) ->
    case check(Schema, Given) of
        ok -> Rules(fun(Name) -> {ok, O} = find(Name, Schema), {opt, O} end);
        {error, _} = E -> E
    end.

%% @doc Checks one value against its option: its type and bounds.
-spec check_value(option(), term()) -> ok | {error, error_reason()}.
check_value(#{multi := true} = Opt, Values) when not is_map_key(cli_type, Opt) ->
    %% (with `cli_type', only the flag is repeated: the command makes the
    %% value; one text is not a list of texts)
    Type = maps:get(type, Opt, term),
    case is_list(Values) andalso not (Values =/= [] andalso Type =:= string andalso is_text(Values)) of
        true -> first([fun() -> check_value(maps:remove(multi, Opt), V) end || V <- Values]);
        false -> {error, {invalid, Opt, Values, {type, {list, Type}}}}
    end;
check_value(Opt, Value) ->
    Type = maps:get(type, Opt, term),
    case has_type(Type, Value) of
        false ->
            {error, {invalid, Opt, Value, {type, Type}}};
        true ->
            Numbers = [X || X <- elements(Type, Value), is_number(X)],
            Min = maps:get(min, Opt, undefined),
            Max = maps:get(max, Opt, undefined),
            case {[X || X <- Numbers, is_number(Min), X < Min], [X || X <- Numbers, is_number(Max), X > Max]} of
                {[_ | _], _} -> {error, {invalid, Opt, Value, {min, Min, maps:get(min_why, Opt, "")}}};
                {_, [_ | _]} -> {error, {invalid, Opt, Value, {max, Max, maps:get(max_why, Opt, "")}}};
                {[], []} -> own_check(Opt, Value)
            end
    end.

%% The kind's own check of a value of the option's type.
own_check(#{check := Check} = Opt, Value) ->
    case Check(Value) of
        ok -> ok;
        {error, Why} -> {error, {invalid, Opt, Value, {check, Why}}}
    end;
own_check(_, _) ->
    ok.

%% @doc The option named `Name' of `Schema'.
-spec find(atom(), schema()) -> {ok, option()} | error.
find(Name, Schema) ->
    case [O || #{name := N} = O <- Schema, N =:= Name] of
        [O | _] -> {ok, O};
        [] -> error
    end.

%% @doc An option's name as a line shows it: its key, or its flag (the
%% short one first, as PerfTest's and erlperf's messages name them).
-spec shown(option(), names()) -> string().
shown(#{short := S}, flag) -> "-" ++ S;
shown(#{long := L}, flag) -> "--" ++ L;
shown(#{name := N}, _) -> atom_to_list(N).

%% @doc The options of `Schema' the command line has a flag for, as its
%% parser reads them: in the flag's units (`scale': the bounds and the
%% default), of the flag's type (`cli_type'), without what only the
%% schema's check reads (the command line checks it there too, with
%% {@link from_flags/2} and {@link check/2}).
-spec flags(schema()) -> [option()].
flags(Schema) ->
    [flag(O) || O <- lists:append([[O | maps:get(fields, O, [])] || O <- Schema]),
                maps:is_key(short, O) orelse maps:is_key(long, O)].

flag(O) ->
    Scale = maps:get(scale, O, 1),
    Units = maps:map(fun(K, V) when K =:= max; K =:= default -> in_flag_units(V, Scale);
                        (_, V) -> V
                     end, maps:with([max, default], O)),
    Typed = case maps:find(cli_type, O) of
                {ok, T} -> #{type => T};
                error -> #{}
            end,
    maps:merge(maps:with([name, short, long, type, default, metavar, help, max, max_why, multi,
                          attach, optional_value, hidden], O),
               maps:merge(Units, Typed)).

%% @doc The values of the flags given (name => value as the command line
%% parsed it) as the schema's keys take them: each in its key's units
%% (`scale'); the names that are not options of `Schema' left out.
-spec from_flags(schema(), #{atom() => term()}) -> #{atom() => term()}.
from_flags(Schema, Values) ->
    Own = maps:from_list([{N, in_key_units(V, maps:get(scale, O, 1))}
                          || #{name := N} = O <- Schema, {ok, V} <- [maps:find(N, Values)]]),
    %% (the flags of a map's keys make the map)
    lists:foldl(fun(#{name := N, fields := Fields}, Acc) ->
                        case maps:from_list([{K, V} || #{name := F, key := K} <- Fields,
                                                       {ok, V} <- [maps:find(F, Values)]]) of
                            M when map_size(M) =:= 0 -> Acc;
                            M -> Acc#{N => maps:merge(maps:get(N, Acc, #{}), M)}
                        end;
                   (_, Acc) -> Acc
                end, Own, Schema).

in_key_units(V, N) when is_integer(N), is_number(V) -> V * N;
in_key_units(V, {1, N}) when is_number(V) -> V / N;
in_key_units(V, _) -> V.

in_flag_units(V, 1) -> V;
in_flag_units(V, N) when is_integer(N), is_integer(V), V rem N =:= 0 -> V div N;
in_flag_units(V, N) when is_integer(N), is_number(V) -> V / N;
in_flag_units(V, {1, N}) when is_number(V) ->
    %% (0.05 is 5 percent, not 5.000000000000001)
    X = V * N,
    case abs(X - round(X)) < 1.0e-9 * max(1, abs(X)) of
        true -> round(X);
        false -> X
    end;
in_flag_units(V, _) -> V.

%% @doc The flags' values (as {@link from_flags/2} gives them) with each
%% option's `parse' applied to its text: the key's value, to check as the
%% library's is. The first text that reads as no value is the error.
-spec parse(schema(), #{atom() => term()}) -> {ok, #{atom() => term()}} | {error, error_reason()}.
parse(Schema, Values) ->
    lists:foldl(fun(#{name := N, parse := Parse} = O, {ok, Acc}) when is_map_key(N, Acc) ->
                        Text = maps:get(N, Acc),
                        case Parse(Text) of
                            {ok, V} -> {ok, Acc#{N := V}};
                            {error, {type, T}} -> {error, {invalid, O, Text, {type, T}}};
                            {error, Why} -> {error, {invalid, O, Text, {check, Why}}}
                        end;
                   (#{name := N, fields := Fields}, {ok, Acc}) when is_map_key(N, Acc) ->
                        case parse(Fields, rekey(maps:get(N, Acc), Fields, key, name)) of
                            {ok, M} -> {ok, Acc#{N := rekey(M, Fields, name, key)}};
                            {error, _} = E -> E
                        end;
                   (_, Acc) ->
                        Acc
                end, {ok, Values}, Schema).

%% A map option's value with its keys named as its fields' `From' (`key'
%% or `name') named as their `To'.
rekey(Map, Fields, From, To) ->
    maps:from_list([{case [maps:get(To, F) || F <- Fields, maps:get(From, F) =:= K] of
                         [K2 | _] -> K2;
                         [] -> K
                     end, V} || {K, V} <- maps:to_list(Map)]).

%% @doc One line for each error, naming options by their keys.
-spec format_error(error_reason()) -> unicode:chardata().
format_error(Reason) ->
    format_error(Reason, key).

%% @doc One line for each error, naming options as `Names' says.
-spec format_error(error_reason(), names()) -> unicode:chardata().
format_error(Reason, Names) ->
    beamlab_format_reason:line(fun(R) -> error_line(R, Names) end, Reason).

error_line({unknown_option, K}, _) ->
    io_lib:format("unknown option ~0tp", [K]);
error_line({invalid, Opt, _Value, {check, {field, K, Why}}}, key) ->
    io_lib:format("~ts: ~ts ~ts", [shown(Opt, key), atom_to_list(K), Why]);
error_line({invalid, Opt, _Value, {check, {field, K, Why}}}, flag) ->
    io_lib:format("~ts ~ts", [field_shown(Opt, K), Why]);
error_line({invalid, Opt, _Value, {check, {fields, Format, Keys}}}, key) ->
    io_lib:format("~ts: ~ts", [shown(Opt, key), io_lib:format(Format, [atom_to_list(K) || K <- Keys])]);
error_line({invalid, Opt, _Value, {check, {fields, Format, Keys}}}, flag) ->
    io_lib:format(Format, [field_shown(Opt, K) || K <- Keys]);
error_line({invalid, Opt, _Value, {check, Why}}, Names) ->
    %% (Why names the value as it may be shown: not quoted here)
    io_lib:format("~ts: ~ts", [shown(Opt, Names), Why]);
error_line({invalid, #{scale := S} = Opt, Value, Why}, flag) when S =/= 1 ->
    %% (in the flag's units, as its user wrote them)
    Bound = case Why of
                {Side, B, W} when Side =:= min; Side =:= max -> {Side, in_flag_units(B, S), W};
                _ -> Why
            end,
    error_line({invalid, maps:remove(scale, Opt), in_flag_units(Value, S), Bound}, flag);
error_line({invalid, Opt, Value, {type, fraction}}, Names) when is_number(Value), Value >= 1 ->
    %% (a percentage written without its sign; the command line reads
    %% `5%' as 0.05)
    Text = value_text(Value),
    io_lib:format("invalid value '~ts' for ~ts: a fraction is below 1 (0.05 means 5%)~ts",
                  [Text, shown(Opt, Names), case Names of
                                                flag -> io_lib:format("; for ~ts percent write ~ts%", [Text, Text]);
                                                key -> ""
                                            end]);
error_line({invalid, Opt, Value, {type, fraction}}, flag) ->
    %% (the command line's fraction is also a percentage)
    io_lib:format("invalid value '~ts' for ~ts: expected a fraction below 1 or a percentage with %, "
                  "e.g. 0.05 or 5%", [value_text(Value), shown(Opt, flag)]);
error_line({invalid, Opt, Value, {type, Type}}, Names) ->
    io_lib:format("invalid value '~ts' for ~ts: expected ~ts", [value_text(Value), shown(Opt, Names), type_text(Type)]);
error_line({invalid, Opt, Value, {min, Min, Why}}, Names) ->
    io_lib:format("invalid value '~ts' for ~ts: expected a number >= ~ts~ts",
                  [value_text(Value), shown(Opt, Names), number_text(Min), why(Why)]);
error_line({invalid, Opt, Value, {max, Max, Why}}, Names) ->
    io_lib:format("invalid value '~ts' for ~ts: at most ~ts~ts",
                  [value_text(Value), shown(Opt, Names), number_text(Max), why(Why)]);
error_line({conflict, A, B, {format, Format}}, Names) ->
    io_lib:format(Format, [shown(A, Names), shown(B, Names)]);
error_line({requires, A, [B | _], {format, Format}}, Names) ->
    io_lib:format(Format, [shown(A, Names), shown(B, Names)]);
error_line({conflict, A, B, Why}, Names) ->
    io_lib:format("~ts and ~ts cannot be used together~ts", [shown(A, Names), shown(B, Names), why(Why)]);
error_line({requires, A, Bs, Why}, Names) ->
    io_lib:format("~ts needs ~ts~ts", [shown(A, Names), lists:join(" or ", [shown(B, Names) || B <- Bs]),
                                       why(Why)]);
error_line({rule, Format, Args}, Names) ->
    io_lib:format(Format, [case A of
                               {opt, O} -> shown(O, Names);
                               {field, O, K} when Names =:= flag -> field_shown(O, K);
                               {field, O, K} -> [atom_to_list(K), " in ", shown(O, key)];
                               {value, V} -> value_text(V)
                           end || A <- Args]);
error_line(Other, _) ->
    %% (a reason of no kind above: printed, never raised)
    beamlab_format_reason:term(Other).

%% A map option's key as the command line names it: its field's flag.
field_shown(Opt, K) ->
    case [F || #{key := Key} = F <- maps:get(fields, Opt, []), Key =:= K] of
        [F | _] -> shown(F, flag);
        [] -> atom_to_list(K)
    end.

%%--------------------------------------------------------------------

first([]) -> ok;
first([F | Rest]) ->
    case F() of
        ok -> first(Rest);
        {error, _} = E -> E
    end.

values(Schema, Given) ->
    first([fun() -> check_value(O, maps:get(N, Given)) end
           || #{name := N} = O <- Schema, maps:is_key(N, Given)]).

conflicts(Schema, Given) ->
    case [{A, B, Why} || #{name := N} = A <- Schema, given(N, Given),
                         C0 <- maps:get(conflicts, A, []),
                         {C, Why} <- [case C0 of
                                          {Name, Format} -> {Name, {format, Format}};
                                          Name -> {Name, maps:get(why, A, "")}
                                      end],
                         given(C, Given), {ok, B} <- [find(C, Schema)]] of
        [{A, B, Why} | _] -> {error, {conflict, A, B, Why}};
        [] -> ok
    end.

requires(Schema, Given) ->
    case [A || #{name := N, requires := Rs} = A <- Schema, given(N, Given),
               Rs =/= [], not lists:any(fun(R) -> given(R, Given) end, Rs)] of
        [A | _] ->
            Why = case maps:find(requires_format, A) of
                      {ok, Format} -> {format, Format};
                      error -> maps:get(why, A, "")
                  end,
            {error, {requires, A, [B || R <- maps:get(requires, A), {ok, B} <- [find(R, Schema)]], Why}};
        [] ->
            ok
    end.

given(Name, Given) ->
    case maps:find(Name, Given) of
        {ok, V} -> V =/= false andalso V =/= undefined;
        error -> false
    end.

has_type(term, _) -> true;
has_type(map, V) -> is_map(V);
has_type(boolean, V) -> is_boolean(V);
has_type(count, V) -> is_integer(V) andalso V >= 0;
has_type(string, V) -> is_text(V);
has_type(cookie, V) -> is_text(V) orelse is_atom(V);
has_type(integer, V) -> is_integer(V);
has_type(pos_integer, V) -> is_integer(V) andalso V > 0;
has_type(non_neg_integer, V) -> is_integer(V) andalso V >= 0;
has_type(quantity, V) -> is_integer(V) andalso V > 0;
has_type(number, V) -> is_number(V);
has_type(pos_number, V) -> is_number(V) andalso V > 0;
has_type(percent, V) -> is_number(V) andalso V > 0;
has_type(fraction, V) -> is_number(V) andalso V > 0 andalso V < 1;
has_type({enum, L}, V) -> lists:member(V, L);
has_type({list, T}, V) -> is_list(V) andalso lists:all(fun(X) -> has_type(T, X) end, V);
has_type({one_of, Ts}, V) -> lists:any(fun(T) -> has_type(T, V) end, Ts).

is_text(V) when is_binary(V) -> is_list(unicode:characters_to_list(V));
is_text(V) when is_list(V) -> io_lib:char_list(V);
is_text(_) -> false.

elements({list, _}, L) when is_list(L) -> L;
elements(_, X) -> [X].

type_text(boolean) -> "true or false";
type_text(count) -> "a count";
type_text(string) -> "text";
type_text(cookie) -> "a cookie";
type_text(integer) -> "an integer";
type_text(pos_integer) -> "a positive integer";
type_text(non_neg_integer) -> "a non-negative integer";
type_text(quantity) -> "a positive count, optionally with a K, M or G suffix (e.g. 10M)";
type_text(number) -> "a number";
type_text(pos_number) -> "a positive number";
type_text(percent) -> "a positive percentage";
type_text(fraction) -> "a fraction below 1";
type_text({enum, L}) -> ["one of ", lists:join(", ", [atom_to_list(A) || A <- L])];
type_text({list, T}) -> ["a list of ", type_text(T)];
type_text({one_of, Ts}) ->
    %% (`undefined' stands for "not given": not worth telling)
    lists:join(" or ", [type_text(T) || T <- Ts, T =/= {enum, [undefined]}]);
type_text(map) -> "a map";
type_text(term) -> "a value".

why("") -> "";
why(Why) -> [" (", Why, ")"].

number_text(N) when is_integer(N) -> integer_to_list(N);
number_text(N) -> float_to_list(float(N), [short]).

%% @doc A value as a line quotes it: numbers as the command line writes
%% them, text as it is (one line, at most 80 characters), anything else
%% printed (a kind's own check names its value with it).
-spec value_text(term()) -> string().
value_text(V) when is_number(V) -> number_text(V);
value_text(V) ->
    Text = case is_text(V) of
               true -> unicode:characters_to_list(V);
               false when is_atom(V) -> atom_to_list(V);
               false -> lists:flatten(io_lib:format("~0tP", [V, 8]))
           end,
    Line = [case C of C when C < 32; C =:= 127 -> $?; C -> C end || C <- Text],
    case string:length(Line) > 80 of
        true -> string:slice(Line, 0, 77) ++ "...";
        false -> Line
    end.
