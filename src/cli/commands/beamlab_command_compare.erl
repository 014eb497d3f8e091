%%% @doc `beamlab compare A.json B.json [C.json...]': the change of every
%%% benchmark against the first run, with its confidence interval and a
%%% verdict; unpaired benchmarks and env differences are reported. Exit
%%% codes: 0 ok, 1 when `--fail-if-slower PCT' finds a benchmark significantly
%%% slower by more than PCT percent, 2 for bad arguments or unreadable files.
-module(beamlab_command_compare).
-behaviour(beamlab_command).

-export([summary/0, options/0, usage/0, run/1, files/1]).

-include("beamlab_cli_error.hrl").

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
            #{name => confidence, long => "confidence", type => percent,
              metavar => "PCT", help => "confidence level of intervals and tests between runs, in percent "
                                        "(default 95 between runs with repetitions, judged with --run-noise; "
                                        "99 for a matrix's configurations, a history of single runs and "
                                        "single runs' within-run intervals)"},
            beamlab_cli_runs:run_noise_option()
            | beamlab_cli_runs:history_options()].

%% @doc Examples for `beamlab help compare'.
-spec usage() -> iodata().
usage() ->
    "Usage: beamlab compare BASE.json NEW.json [MORE.json...] [OPTIONS]\n"
    "       beamlab compare DIR | 'GLOB' | --history RUN.json... [--order commit|time]\n"
    "       beamlab compare MATRIX.json\n\n"
    "Benchmarks are paired by name; each later run is compared with the first.\n"
    "One matrix document: its configurations against its baseline, judged again\n"
    "with this version's rule.\n"
    "Verdicts: faster, SLOWER, ~ (no significant difference), too few samples.\n"
    "A history (a directory of saved runs, a quoted glob, or --history) is put in\n"
    "order, by the git commit each run recorded or by time, and each run is\n"
    "compared with the one before; --fail-if-slower then checks the newest run.\n\n"
    "Examples:\n"
    "  beamlab compare before.json after.json\n"
    "  beamlab compare before.json after.json --fail-if-slower 5\n"
    "  beamlab compare a.json b.json c.json --format markdown >> pr-comment.md\n"
    "  beamlab compare bench-history/ --order commit\n"
    "  beamlab compare 'beamlab-results/bench-*.json'\n".

%% @doc Runs the command and prints the comparison in the chosen format.
-spec run(beamlab_cli_args:parsed()) -> beamlab_command:outcome().
run(Parsed) ->
    ?CATCHING(run_parsed(Parsed)).

run_parsed(Parsed = #{args := Args}) ->
    {Files, Listed} = ?VALUE(beamlab_cli_runs:expand(Args)),
    Files =/= [] orelse ?USAGE("compare needs at least two result files (got 0)", []),
    Level = case beamlab_cli_args:get(confidence, Parsed) of
                undefined -> #{};
                Pct ->
                    Conf = Pct / 100,
                    (Conf > 0.5 andalso Conf < 1) orelse
                        ?USAGE("--confidence must be between 50 and 100 (exclusive)", []),
                    #{confidence => Conf}
            end,
    Noise = case ?VALUE(beamlab_cli_runs:run_noise(Parsed)) of
                undefined -> beamlab_result_compare:run_noise();
                N -> N
            end,
    {Runs, Matrix} = runs(Files),
    Judge = Level#{run_noise => Noise, interleaved => Matrix},
    Format = beamlab_cli_output:format(Parsed),
    case (Listed orelse beamlab_cli_args:get(history, Parsed, false)) andalso not Matrix of
        true ->
            H = ?VALUE(beamlab_cli_runs:history(Runs, (maps:remove(interleaved, Judge))#{order => beamlab_cli_args:get(order, Parsed, auto)})),
            FileOf = maps:from_list(lists:zip([L || {L, _} <- Runs], Files)),
            Ordered = [maps:get(L, FileOf) || #{label := L} <- maps:get(runs, H)],
            beamlab_cli_output:put_chars(beamlab_render_history:render(H, Format, #{files => Ordered})),
            {fail_if_newest_slower(H, beamlab_cli_args:get(fail_if_slower, Parsed)), none};
        false ->
            {ok, Cmp} = beamlab_result_compare:compare(Runs, Judge),
            beamlab_cli_output:put_chars(beamlab_render_compare:render(Cmp, Format, #{files => [F || F <- Files, _ <- Runs, Matrix] ++ [F || F <- Files, not Matrix]})),
            {fail_if_slower(Cmp, beamlab_cli_args:get(fail_if_slower, Parsed)), none}
    end.

%% Two or more files are runs; one file must be a matrix document, whose
%% configurations (measured interleaved, in the same rounds) are the runs.
runs([File]) ->
    [{_, Doc}] = ?VALUE(beamlab_cli_runs:load_runs([File])),
    case beamlab_result_compare:configurations(Doc) of
        {ok, [_, _ | _] = Configs} -> {Configs, true};
        {ok, _} -> ?USAGE("~ts: a matrix of one configuration has nothing to compare", [File]);
        {error, not_a_matrix} ->
            ?USAGE("compare needs at least two result files (got 1; one file is "
                   "compared only when it is a matrix document)", [])
    end;
runs(Files) ->
    {?VALUE(beamlab_cli_runs:load_runs(Files)), false}.

%% @doc The runs read (`--save' is the only output); none when the
%% arguments name no runs (`run/1' says why).
-spec files(beamlab_cli_args:parsed()) -> #{inputs := [beamlab_runtime_file:named()]}.
files(#{args := Args}) ->
    case beamlab_cli_runs:expand(Args) of
        {ok, {Files, _}} -> #{inputs => [{"input", F} || F <- Files]};
        {error, _} -> #{inputs => []}
    end.

%% A history fails when its newest run is significantly slower than the
%% run before it by more than PCT percent.
fail_if_newest_slower(_H, undefined) ->
    0;
fail_if_newest_slower(#{trends := Trends, runs := Runs}, Pct) ->
    Newest = length(Runs),
    Slower = [{Name, Worse}
              || #{name := Name, better := Better, changes := Cs} <- Trends,
                 #{to := To, verdict := slower, change := X} <- Cs, To =:= Newest, is_number(X),
                 Worse <- [100 * case Better of higher -> -X; lower -> X end], Worse > Pct],
    case Slower of
        [] -> 0;
        _ ->
            io:format(standard_error, "beamlab: ~b benchmark(s) of the newest run (~ts) significantly slower "
                      "than the run before by more than ~ts%: ~ts~n",
                      [length(Slower), maps:get(label, lists:last(Runs)), beamlab_format_units:number(Pct),
                       lists:join(", ", [io_lib:format("~ts (~.1f% worse)", [N, P]) || {N, P} <- Slower])]),
            1
    end.

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
