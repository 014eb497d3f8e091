%%% @doc `beamlab compare A.json B.json [C.json...]': the change of every
%%% benchmark against the first run, with its confidence interval and a
%%% verdict; unpaired benchmarks and env differences are reported. Exit
%%% codes: 0 ok, 1 when `--fail-if-slower PCT' finds a benchmark significantly
%%% slower by more than PCT percent, 2 for bad arguments or unreadable files.
-module(beamlab_command_compare).
-behaviour(beamlab_command).

-export([summary/0, options/0, usage/0, run/1, load_runs/1]).

%% @doc One line for `beamlab help'.
-spec summary() -> string().
summary() ->
    "compare saved runs: change, confidence interval and verdict per benchmark".

%% @doc Options of `beamlab compare'.
-spec options() -> [beamlab_cli_args:option()].
options() ->
    [#{name => format, long => "format", type => {enum, [text, json, csv, markdown]},
       default => text, metavar => "FMT", help => "output format: text, json, csv or markdown"}
     | [O || O = #{name := no_color} <- beamlab_cli_args:common_options()]]
        ++ [#{name => fail_if_slower, long => "fail-if-slower", type => percent, metavar => "PCT",
              help => "exit 1 when a benchmark is significantly slower than the baseline by more "
                      "than PCT percent"},
            #{name => confidence, long => "confidence", type => percent, default => 95.0,
              metavar => "PCT", help => "confidence level of intervals and tests, in percent"}].

%% @doc Examples for `beamlab help compare'.
-spec usage() -> iodata().
usage() ->
    "Usage: beamlab compare BASE.json NEW.json [MORE.json...] [OPTIONS]\n\n"
    "Benchmarks are paired by name; each later run is compared with the first.\n"
    "Verdicts: faster, SLOWER, ~ (no significant difference), too few samples.\n\n"
    "Examples:\n"
    "  beamlab compare before.json after.json\n"
    "  beamlab compare before.json after.json --fail-if-slower 5\n"
    "  beamlab compare a.json b.json c.json --format markdown >> pr-comment.md\n".

%% @doc Runs the command and prints the comparison in the chosen format.
-spec run(beamlab_cli_args:parsed()) -> beamlab_command:outcome().
run(Parsed = #{args := Files}) ->
    length(Files) >= 2 orelse
        beamlab_cli_error:usage("compare needs at least two result files (got ~b)", [length(Files)]),
    Conf = beamlab_cli_args:get(confidence, Parsed, 95.0) / 100,
    (Conf > 0.5 andalso Conf < 1) orelse
        beamlab_cli_error:usage("--confidence must be between 50 and 100 (exclusive)", []),
    Runs = load_runs(Files),
    {ok, Cmp} = beamlab_compare:compare(Runs, #{confidence => Conf}),
    Format = beamlab_cli_output:format(Parsed),
    beamlab_cli_output:put_chars(beamlab_render_compare:render(Cmp, Format, #{files => Files})),
    {fail_if_slower(Cmp, beamlab_cli_args:get(fail_if_slower, Parsed)), none}.

fail_if_slower(_Cmp, undefined) ->
    0;
fail_if_slower(Cmp, Pct) ->
            case beamlab_result_compare:slower_than(Cmp, Pct) of
                [] ->
                    0;
                Slower ->
                    io:format(standard_error, "beamlab: ~b benchmark(s) significantly slower by more "
                              "than ~ts%: ~ts~n",
                              [length(Slower), beamlab_format_units:number(Pct),
                               lists:join(", ", [io_lib:format("~ts (~ts: ~.1f% worse)", [N, L, P])
                                                 || {N, L, P} <- Slower])]),
                    1
            end.

%% @doc Loads result files, labelled by their base names (made unique), or
%% stops with one line naming the file that cannot be used.
-spec load_runs([string()]) -> [{binary(), beamlab_result:result()}].
load_runs(Files) ->
    Results = [case beamlab_result:load(F) of
                   {ok, R} -> beamlab_result_redact:document(R);
                   {error, Reason} ->
                       beamlab_cli_error:usage("~ts", [beamlab_result:format_error(Reason)])
               end || F <- Files],
    lists:zip(labels(Files), Results).

labels(Files) ->
    Base = [unicode:characters_to_binary(filename:basename(F, ".json")) || F <- Files],
    case length(lists:usort(Base)) =:= length(Base) of
        true -> Base;
        false -> [iolist_to_binary([integer_to_list(I), ":", B])
                  || {I, B} <- lists:zip(lists:seq(1, length(Base)), Base)]
    end.
