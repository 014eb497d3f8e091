%%% @doc Human units for numbers that people read in a terminal.
%%%
%%% Counts follow erlperf's habit so its users read them alike: `Ki', `Mi',
%%% `Gi' are thousands, millions, billions (decimal). Durations pick the
%%% unit that keeps the number short: ns, us, ms, s. Byte sizes use binary
%%% prefixes (KiB = 1024 B). Every function returns a flat string.
%%%
%%% ```
%%% 1> beamlab_format_units:count(17266000).
%%% "17266 Ki"
%%% 2> beamlab_format_units:duration(57.3).
%%% "57.3 ns"
%%% 3> beamlab_format_units:duration(2001000).
%%% "2001 us"
%%% '''
-module(beamlab_format_units).

-export([count/1, duration/1, duration/2, bytes/1, rate/1, percent/1, signed_percent/1, sign/1,
         rel_interval/3, detectable/1,
         number/1, value/2, bench_value/2, per_second/1, sig/2, to_binary/1, plural/2]).

%% @doc `Word' as it goes with the number `N': "1 scheduler", "2 schedulers"
%% (regular English plurals only).
-spec plural(number(), string()) -> string().
plural(1, Word) -> Word;
plural(_, Word) -> Word ++ "s".

%% @doc A count of iterations or messages: `"982"', `"17266 Ki"', `"1402 Mi"'.
-spec count(number()) -> string().
count(N) when N >= 100000000000 -> scaled(quot(N, 1000000000), " Gi");
count(N) when N >= 100000000 -> scaled(quot(N, 1000000), " Mi");
count(N) when N >= 100000 -> scaled(quot(N, 1000), " Ki");
count(N) when is_integer(N) -> integer_to_list(N);
count(N) when N == 0 -> "0";
count(N) when N >= 100 -> integer_to_list(round(N));
count(N) -> sig(N, 3).

scaled(V, Suffix) -> integer_to_list(round(V)) ++ Suffix.

%% @doc A duration given in nanoseconds: `"0.42 ns"', `"57 ns"', `"2001 us"'.
-spec duration(number()) -> string().
duration(Ns) ->
    duration(Ns, ns).

%% @doc A duration given in `Unit' (ns, us, ms or s).
-spec duration(number(), ns | us | ms | s) -> string().
duration(V, Unit) ->
    Ns = mul(V, case Unit of ns -> 1; us -> 1000; ms -> 1000000; s -> 1000000000 end),
    A = abs(Ns),
    if
        A < 10000 -> sig(Ns, 3) ++ " ns";
        A < 10000000 -> sig(quot(Ns, 1000), 3) ++ " us";
        A < 10000000000 -> sig(quot(Ns, 1000000), 3) ++ " ms";
        true -> sig(quot(Ns, 1000000000), 3) ++ " s"
    end.

%% @doc A byte size: `"512 B"', `"24.2 KiB"', `"3.00 GiB"'.
-spec bytes(number()) -> string().
bytes(B) when abs(B) < 1024 -> sig(B, 3) ++ " B";
bytes(B) when abs(B) < 1048576 -> sig(quot(B, 1024), 3) ++ " KiB";
bytes(B) when abs(B) < 1073741824 -> sig(quot(B, 1048576), 3) ++ " MiB";
bytes(B) -> sig(quot(B, 1073741824), 3) ++ " GiB".

%% @doc A rate per second: `"17266 Ki/s"'.
-spec rate(number()) -> string().
rate(R) ->
    count(R) ++ "/s".

%% @doc A fraction as a percentage: `percent(0.0123)' is `"1.23%"'.
-spec percent(number()) -> string().
percent(F) ->
    sig(mul(F, 100), 3) ++ "%".

%% @doc A mean's interval relative to the mean: `"±2.1%"' (with `Pm' as the
%% plus-minus sign) when both sides are equal to 3 significant digits,
%% `"-1.9%/+2.3%"' when not (log-scale intervals of times and rates are
%% wider above the mean than below), `"no interval"' without one (fewer
%% than three samples: never a `±0%'), `"-"' for a zero mean.
-spec rel_interval(number(), {number(), number()} | [number()] | undefined | null, string()) -> string().
rel_interval(Mean, [Lo, Hi], Pm) ->
    rel_interval(Mean, {Lo, Hi}, Pm);
rel_interval(Mean, {Lo, Hi}, Pm) when is_number(Mean), is_number(Lo), is_number(Hi) ->
    case Mean == 0 of
        true -> "-";
        false ->
            Below = percent(quot(sub(Mean, Lo), abs(Mean))),
            Above = percent(quot(sub(Hi, Mean), abs(Mean))),
            case Below =:= Above of
                true -> Pm ++ Above;
                false -> "-" ++ Below ++ "/+" ++ Above
            end
    end;
rel_interval(_Mean, _None, _Pm) ->
    "no interval".

%% @doc The smallest change a comparison could have seen (its `detectable':
%% a slowdown `D' on the log scale, relative) both ways, `"-11%/+12%"':
%% the speed-up it mirrors is 1/(1 + D) - 1, never below -100% (where a
%% `±460%' would go); whole percentages, one decimal below 10%.
-spec detectable(number()) -> string().
detectable(D) when D >= 0 ->
    lists:flatten(["-", detectable_digits(D / (1 + D)), "/+", detectable_digits(D)]).

detectable_digits(F) when F < 0.1 -> io_lib:format("~.1f%", [100 * F]);
detectable_digits(F) -> io_lib:format("~b%", [round(100 * F)]).

%% @doc A relative change with its sign: `"+4.2%"', `"-1.3%"', `"0%"'.
-spec signed_percent(number()) -> string().
signed_percent(F) ->
    sign(F) ++ percent(F).

%% @doc `"+"' before a positive number, nothing otherwise (a negative
%% number prints its own `-').
-spec sign(number()) -> string().
sign(F) when F > 0 -> "+";
sign(_) -> "".

%% @doc Text of a name, label or value as UTF-8: binaries as they are,
%% atoms and numbers printed, character lists (any Unicode) encoded.
-spec to_binary(unicode:chardata() | atom() | number()) -> binary().
to_binary(B) when is_binary(B) -> B;
to_binary(A) when is_atom(A) -> atom_to_binary(A, utf8);
to_binary(I) when is_integer(I) -> integer_to_binary(I);
to_binary(F) when is_float(F) -> float_to_binary(F, [short]);
to_binary(L) ->
    case unicode:characters_to_binary(L) of
        B when is_binary(B) -> B;
        _ -> unicode:characters_to_binary(L, latin1)
    end.

%% @doc A plain number with at most 3 significant decimals (integers as is).
-spec number(number()) -> string().
number(N) when is_integer(N) -> integer_to_list(N);
number(N) -> sig(N, 3).

%% @doc A value in a result document unit (`<<"ns">>', `<<"ops/s">>', ...).
-spec value(number(), binary() | string()) -> string().
value(V, Unit) when is_list(Unit) -> value(V, to_binary(Unit));
value(V, <<"ns">>) -> duration(V, ns);
value(V, <<"us">>) -> duration(V, us);
value(V, <<"ms">>) -> duration(V, ms);
value(V, <<"s">>) -> duration(V, s);
value(V, <<"bytes">>) -> bytes(V);
value(V, <<"B">>) -> bytes(V);
value(V, <<"ratio">>) -> sig(V, 3) ++ "x";
value(V, <<"%">>) -> sig(V, 3) ++ "%";
value(V, <<"iterations">>) -> count(V) ++ " iter";
value(V, <<>>) -> number(V);
value(V, Unit) ->
    case binary:split(Unit, <<"/">>) of
        [_, <<"s">>] -> count(V) ++ " " ++ binary_to_list(Unit);
        _ -> number(V) ++ " " ++ binary_to_list(Unit)
    end.

%% @doc A value of a benchmark in its unit: iterations counted per sample
%% of D ms (`beamlab run', `params.sample.duration_ms') per second,
%% `"4.13 Mi iter/s"', so that runs with another `-d' read alike; any
%% other unit as {@link value/2}.
-spec bench_value(number(), #{unit := binary(), params => map(), atom() => term()}) -> string().
bench_value(V, #{unit := <<"iterations">>} = B) ->
    case per_second(B) of
        {Scale, <<"iterations/s">>} -> count(V * Scale) ++ " iter/s";
        _ -> value(V, <<"iterations">>)
    end;
bench_value(V, #{unit := Unit}) ->
    value(V, Unit).

%% @doc The factor and unit that turn a benchmark's values into a rate
%% per second: iterations counted per sample of D ms (`beamlab run',
%% `params.sample.duration_ms') become iterations/s; other units stay
%% (factor 1).
-spec per_second(#{unit := binary(), params => map(), atom() => term()}) -> {number(), binary()}.
per_second(#{unit := <<"iterations">>, params := #{<<"sample">> := #{<<"duration_ms">> := D}}})
  when is_number(D), D > 0 ->
    {1000 / D, <<"iterations/s">>};
per_second(#{unit := U}) ->
    {1, U}.

%% @doc `V' with `Digits' significant digits, without exponent notation;
%% numbers of `Digits' or more integer digits are rounded to an integer.
-spec sig(number(), pos_integer()) -> string().
sig(V, _Digits) when V == 0 -> "0";
sig(V, _Digits) when is_integer(V), abs(V) >= 1 bsl 53 ->
    %% (more integer digits than any `Digits', and beyond a float's range
    %% maybe: printed as it is)
    integer_to_list(V);
sig(V, Digits) ->
    Magnitude = floor(math:log10(abs(V))) + 1,
    Decimals = max(0, Digits - Magnitude),
    if
        Decimals =:= 0 -> integer_to_list(round(V));
        Decimals > 253 ->
            %% (below 1e-250: more zeros than a line holds or
            %% float_to_list/2 writes; the exponent says it)
            float_to_list(float(V), [{scientific, Digits - 1}]);
        true -> float_to_list(float(V), [{decimals, Decimals}])
    end.

%% Arithmetic on any two numbers of a spec's `number()': a result a float
%% cannot hold (beyond 1.8e308: no measurement is) is the largest float
%% of its sign instead of an exception.
mul(A, B) -> arith(fun() -> A * B end, sign_of(A) * sign_of(B)).
quot(A, B) -> arith(fun() -> A / B end, sign_of(A) * sign_of(B)).
sub(A, B) -> arith(fun() -> A - B end, sign_of(A)).

arith(F, Sign) ->
    try F()
    catch error:badarith -> Sign * 1.7976931348623157e308
    end.

sign_of(X) when X < 0 -> -1;
sign_of(_) -> 1.
