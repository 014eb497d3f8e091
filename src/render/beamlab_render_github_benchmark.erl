%%% @doc A result document in the format of github-action-benchmark's
%%% custom tools: a JSON array of `{"name", "unit", "value", "range",
%%% "extra"}' for `tool: customBiggerIsBetter' (the measures where higher
%%% is better) or `customSmallerIsBetter' (lower is better). One file
%%% holds one direction; {@link left_out/2} names the measures the other
%%% file holds. `range' is the half-width of the mean's confidence
%%% interval (`± 12.3'), `extra' says n, the interval and the median. The
%%% measures are those of `beamlab_render_ci'. Pure.
-module(beamlab_render_github_benchmark).

-export([render/2, left_out/2, tool/1]).

-type direction() :: bigger | smaller.
-export_type([direction/0]).

%% @doc The JSON array of the measures in `Direction'.
-spec render(beamlab_result:result(), direction()) -> iodata().
render(Doc, Direction) ->
    Entries = [entry(M) || M <- beamlab_render_ci:measures(Doc), fits(M, Direction)],
    [beamlab_json:encode(Entries, #{pretty => true}), $\n].

%% @doc Names (as in the array) of the measures of the other direction.
-spec left_out(beamlab_result:result(), direction()) -> [binary()].
left_out(Doc, Direction) ->
    [Name || #{name := Name} = M <- beamlab_render_ci:measures(Doc), not fits(M, Direction)].

%% @doc The `tool' input of the action for a direction.
-spec tool(direction()) -> binary().
tool(bigger) -> <<"customBiggerIsBetter">>;
tool(smaller) -> <<"customSmallerIsBetter">>.

fits(#{better := higher}, bigger) -> true;
fits(#{better := lower}, smaller) -> true;
fits(_, _) -> false.

entry(#{name := Name, unit := Unit, value := V} = M) ->
    E0 = #{name => Name, unit => Unit, value => V},
    E = plain_entry(E0, M),
    %% the verdict against the baseline, where the document has one
    case M of
        #{verdict := Verdict} ->
            Extra = case E of
                        #{extra := X} -> [X, ", "];
                        _ -> []
                    end,
            E#{extra => unicode:characters_to_binary([Extra, "vs baseline ", Verdict])};
        _ -> E
    end.

plain_entry(#{value := V} = E, M) ->
    case M of
        #{interval := {Lo, Hi}, confidence := C, n := N} ->
            E#{range => range(V, Lo, Hi),
               extra => unicode:characters_to_binary(
                          io_lib:format("n=~b~ts, ~ts% CI of the mean ~ts .. ~ts~ts",
                                        [N, vm_values(M), level(C), num(Lo), num(Hi),
                                         case M of
                                             #{median := Md} -> [", median ", num(Md)];
                                             _ -> []
                                         end]))};
        #{n := N} ->
            E#{extra => unicode:characters_to_binary(io_lib:format("n=~b~ts", [N, vm_values(M)]))};
        _ ->
            E
    end.

%% A matrix's n values are one per fresh VM: its mean, or for CPU time
%% its fastest sample.
vm_values(#{vm_level := L}) -> [" (one ", beamlab_result_compare:level_words(L), " per fresh VM)"];
vm_values(_) -> "".

num(V) -> beamlab_format_units:sig(V, 4).

%% `± h' when the interval is symmetric to 4 digits, else `-a +b': the
%% log-scale interval of a time or a rate is wider above than below, and a
%% `± h' wider than the value would read as reaching below zero.
range(V, Lo, Hi) ->
    Below = below(V, V - Lo),
    Above = num(Hi - V),
    unicode:characters_to_binary(case Below =:= Above of
                                     true -> ["\x{b1} ", Above];
                                     false -> ["-", Below, " +", Above]
                                 end).

%% The distance to a lower bound at (or near) zero: rounded to 4 digits it
%% can exceed the value (18.8598 - 0 -> 18.86) and read as reaching below
%% zero, so there it is rounded down.
below(V, D) ->
    case num(D) of
        S when D > 0 ->
            case parse(S) > V of
                true -> sig_down(D, 4);
                false -> S
            end;
        S -> S
    end.

parse(S) ->
    case string:to_float(S) of
        {F, []} -> F;
        _ -> list_to_integer(S)
    end.

sig_down(D, Digits) ->
    %% (within a float's decimals: below 1e-250 the rounded text stays)
    Decimals = min(250, max(0, Digits - (floor(math:log10(D)) + 1))),
    Scale = math:pow(10, Decimals),
    float_to_list(floor(D * Scale) / Scale, [{decimals, Decimals}]).

%% 0.95 -> "95", 0.995 -> "99.5".
level(C) ->
    P = round(C * 1000) / 10,
    case P == round(P) of
        true -> integer_to_list(round(P));
        false -> beamlab_format_units:number(P)
    end.
