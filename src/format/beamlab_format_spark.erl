%%% @doc Terminal distributions: sparklines and small horizontal histograms.
%%%
%%% Both are drawn with UTF-8 block characters, or with plain ASCII when the
%%% terminal cannot be trusted with UTF-8 (`--no-color', a non-UTF-8 locale).
%%% The histogram only renders bins; computing them is `beamlab_stats'' job.
-module(beamlab_format_spark).

-export([line/1, line/2, bars/1, bars/2, utf8_terminal/0, use_unicode/1]).

-type opts() :: #{width => pos_integer(), ascii => boolean(),
                  label => fun((number()) -> iodata())}.
-type bin() :: {Lo :: number(), Hi :: number(), Count :: non_neg_integer()}.
-export_type([opts/0, bin/0]).

-define(BLOCKS, [16#2581, 16#2582, 16#2583, 16#2584, 16#2585, 16#2586, 16#2587, 16#2588]).
-define(ASCII_LEVELS, "_.-:=+*#").
%% Eighths of a full block, for smooth histogram bar ends.
-define(PARTIAL, [16#258F, 16#258E, 16#258D, 16#258C, 16#258B, 16#258A, 16#2589]).

%% @doc Sparkline of `Values' (UTF-8, at most 60 columns).
-spec line([number()]) -> unicode:unicode_binary().
line(Values) ->
    line(Values, #{}).

%% @doc Sparkline with options: `width' (columns, longer inputs are reduced
%% by averaging consecutive values into one column) and `ascii'.
-spec line([number()], opts()) -> unicode:unicode_binary().
line([], _Opts) ->
    <<>>;
line(Values, Opts) ->
    Width = maps:get(width, Opts, 60),
    Cols = squeeze(Values, Width),
    Levels = levels(Opts),
    N = length(Levels),
    Min = lists:min(Cols),
    Max = lists:max(Cols),
    Chars = [lists:nth(level(V, Min, Max, N), Levels) || V <- Cols],
    unicode:characters_to_binary(Chars).

%% @doc Horizontal histogram, one line per bin (`[{Lo, Hi, Count}]', e.g.
%% from `beamlab_stats:histogram/2'), bars scaled to the largest count.
-spec bars([bin()]) -> [unicode:unicode_binary()].
bars(Bins) ->
    bars(Bins, #{}).

%% @doc Histogram with options: `width' (columns of the longest bar, default
%% 30), `ascii', `label' (formats a bin edge, default `~g'-like).
-spec bars([bin()], opts()) -> [unicode:unicode_binary()].
bars([], _Opts) ->
    [];
bars(Bins, Opts) ->
    Width = maps:get(width, Opts, 30),
    Label = maps:get(label, Opts, fun default_label/1),
    Ascii = maps:get(ascii, Opts, false),
    MaxCount = max(1, lists:max([C || {_, _, C} <- Bins])),
    Ranges = [iolist_to_binary([Label(Lo), " - ", Label(Hi)]) || {Lo, Hi, _} <- Bins],
    RangeW = lists:max([string:length(R) || R <- Ranges]),
    CountW = lists:max([length(integer_to_list(C)) || {_, _, C} <- Bins]),
    [unicode:characters_to_binary(
       [string:pad(R, RangeW, leading), " |", bar(C, MaxCount, Width, Ascii),
        string:pad(integer_to_list(C), Width + 1 + CountW - bar_len(C, MaxCount, Width), leading)])
     || {R, {_, _, C}} <- lists:zip(Ranges, Bins)].

%% @doc Whether the locale announces UTF-8 (LC_ALL, then LC_CTYPE, then LANG,
%% as setlocale(3) resolves them).
-spec utf8_terminal() -> boolean().
utf8_terminal() ->
    Locale = first_set(["LC_ALL", "LC_CTYPE", "LANG"]),
    Upper = string:uppercase(Locale),
    string:find(Upper, "UTF-8") =/= nomatch orelse string:find(Upper, "UTF8") =/= nomatch.

%% @doc Decide between UTF-8 and ASCII drawing for a parsed command line:
%% ASCII with `--no-color' (`no_color => true') or a non-UTF-8 locale.
-spec use_unicode(#{no_color => boolean()}) -> boolean().
use_unicode(Parsed) ->
    maps:get(no_color, Parsed, false) =/= true andalso utf8_terminal().

%% Internals

first_set([]) ->
    "";
first_set([Var | Rest]) ->
    case os:getenv(Var) of
        false -> first_set(Rest);
        "" -> first_set(Rest);
        Value -> Value
    end.

levels(#{ascii := true}) -> ?ASCII_LEVELS;
levels(_) -> ?BLOCKS.

level(_V, Min, Max, N) when Max == Min ->
    %% A flat series sits in the middle rather than pretending to be minimal.
    (N + 1) div 2;
level(V, Min, Max, N) ->
    1 + round((V - Min) / (Max - Min) * (N - 1)).

%% Reduce to at most Width columns by averaging runs of consecutive values.
squeeze(Values, Width) ->
    Len = length(Values),
    case Len =< Width of
        true -> Values;
        false -> squeeze(Values, Len, Width, 0, [])
    end.

squeeze(_Values, _Len, Width, Width, Acc) ->
    lists:reverse(Acc);
squeeze(Values, Len, Width, Col, Acc) ->
    Take = (Len * (Col + 1)) div Width - (Len * Col) div Width,
    {Chunk, Rest} = lists:split(Take, Values),
    squeeze(Rest, Len, Width, Col + 1, [lists:sum(Chunk) / Take | Acc]).

bar_len(C, MaxCount, Width) ->
    Eighths = round(C * Width * 8 / MaxCount),
    Eighths div 8 + case Eighths rem 8 of 0 -> 0; _ -> 1 end.

bar(C, MaxCount, Width, true) ->
    lists:duplicate(bar_len(C, MaxCount, Width), $#);
bar(C, MaxCount, Width, false) ->
    Eighths = round(C * Width * 8 / MaxCount),
    Full = lists:duplicate(Eighths div 8, 16#2588),
    case Eighths rem 8 of
        0 -> Full;
        R -> Full ++ [lists:nth(R, ?PARTIAL)]
    end.

default_label(X) when is_integer(X) ->
    integer_to_list(X);
default_label(X) when is_float(X), abs(X) >= 1.0e6; is_float(X), abs(X) < 1.0e-3, X /= 0.0 ->
    io_lib:format("~.3e", [X]);
default_label(X) ->
    float_to_list(X * 1.0, [{decimals, 3}, compact]).
