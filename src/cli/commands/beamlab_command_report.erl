%%% @doc `beamlab report RUN.json... -o report.html': one self-contained HTML
%%% page with the charts of saved runs (see `beamlab_report_html').
-module(beamlab_command_report).
-behaviour(beamlab_command).

-export([summary/0, options/0, usage/0, run/1, files/1]).

-define(DEFAULT_OUT, "beamlab-report.html").
-define(DEFAULT_OUT_2, "beamlab-report-2.html").

-include("beamlab_cli_error.hrl").

%% @doc One line for `beamlab help'.
-spec summary() -> string().
summary() ->
    "self-contained HTML report with charts of saved runs".

%% @doc Options of `beamlab report'.
-spec options() -> [beamlab_cli_args:option()].
options() ->
    [#{name => output, short => "o", long => "output", type => string,
       metavar => "FILE", help => "where to write the page (default " ?DEFAULT_OUT
                                  ", or " ?DEFAULT_OUT_2 "... when it exists; a FILE you name "
                                  "is replaced)"},
     #{name => title, long => "title", type => string, metavar => "TEXT",
       help => "page title (default: the run names)"},
     beamlab_cli_runs:run_noise_option()
     | beamlab_cli_runs:history_options()].

%% @doc Examples for `beamlab help report'.
-spec usage() -> iodata().
usage() ->
    "Usage: beamlab report RUN.json [MORE.json...] [-o report.html]\n"
    "       beamlab report DIR | 'GLOB' | --history RUN.json... [--order commit|time]\n\n"
    "The page embeds its data, styles and drawing code: it opens from disk\n"
    "without network access. The first run is the baseline of the comparison.\n"
    "A history (a directory of saved runs, a quoted glob, or --history) is drawn\n"
    "in order, by the git commit each run recorded or by time: a trend per\n"
    "benchmark with its interval and the significant changes marked.\n"
    "Two profiles of the same benchmark (or the same --label) get a\n"
    "differential flame graph.\n\n"
    "Examples:\n"
    "  beamlab report beamlab-results/*.json -o report.html\n"
    "  beamlab report before.json after.json --title 'OTP 25 vs 26'\n"
    "  beamlab report bench-history/ -o trend.html\n"
    "  beamlab report suite-a.json suite-b.json --run-noise 4\n".

%% @doc The runs read and the page written (`-o'); no input when the
%% arguments name no runs (`run/1' says why).
-spec files(beamlab_cli_args:parsed()) -> #{inputs := [beamlab_runtime_file:named()],
                                             outputs := [beamlab_runtime_file:named()]}.
files(Parsed = #{args := Args}) ->
    Files = case beamlab_cli_runs:expand(Args) of
                {ok, {Fs, _}} -> Fs;
                {error, _} -> []
            end,
    #{inputs => [{"input", F} || F <- Files],
      outputs => [{"-o", O} || O <- [beamlab_cli_args:get(output, Parsed)], O =/= undefined]}.

%% @doc Runs the command; returns the exit code.
-spec run(beamlab_cli_args:parsed()) -> beamlab_command:outcome().
run(Parsed) ->
    ?CATCHING(run_parsed(Parsed)).

run_parsed(Parsed = #{args := Args}) ->
    {Files, Listed} = ?VALUE(beamlab_cli_runs:expand(Args)),
    Files =/= [] orelse ?USAGE("report needs at least one result file", []),
    Out = beamlab_cli_args:get(output, Parsed),
    Out =:= undefined orelse ?CHECK(beamlab_cli_output:check_output("-o", Out)),
    Noise = case ?VALUE(beamlab_cli_runs:run_noise(Parsed)) of
                undefined -> #{};
                N -> #{run_noise => N}
            end,
    Titled = case beamlab_cli_args:get(title, Parsed) of
                 undefined -> Noise;
                 T -> Noise#{title => unicode:characters_to_binary(T)}
             end,
    {Runs, Opts} =
        case (Listed orelse beamlab_cli_args:get(history, Parsed, false)) andalso length(Files) > 1 of
            true -> history_runs(Files, Titled, beamlab_cli_args:get(order, Parsed, auto));
            false -> {?VALUE(beamlab_cli_runs:load_runs(Files)), Titled}
        end,
    Html = case beamlab_report_html:render(Runs, Opts) of
               {ok, H} -> H;
               {error, Reason} -> ?FAIL("~ts", [beamlab_report_html:format_error(Reason)])
           end,
    %% The default name never replaces a page (-2, -3... are added); a file
    %% named with -o is replaced atomically, and the message says so.
    %% A page written to standard output leaves it to the page: the message
    %% goes to standard error.
    Target = case Out of
                 undefined -> {unique, ?DEFAULT_OUT};
                 _ ->
                     case beamlab_runtime_file:check_target(Out) of
                         {ok, directory} -> {unique, filename:join(Out, ?DEFAULT_OUT)};
                         {ok, _} = Found -> {named, Out, Found};
                         {error, _} -> ?CHECK(beamlab_cli_output:check_output("-o", Out))
                     end
             end,
    {Written, Note, To} =
        case Target of
            {unique, Name} ->
                case beamlab_runtime_file:write_unique(Name, Html) of
                    {ok, W} -> {W, {ok, new}, standard_io};
                    {error, {W, Why}} -> write_failed(W, Why)
                end;
            {named, Path, Kind} ->
                case beamlab_runtime_file:write(Path, Html) of
                    {ok, _} when Kind =:= {ok, {in_place, standard_output}} -> {Path, Kind, standard_error};
                    {ok, _} -> {Path, Kind, standard_io};
                    {error, Why} -> write_failed(Path, Why)
                end
        end,
    io:format(To, "wrote ~ts (~b run(s), ~ts)~ts~n",
              [Written, length(Files), beamlab_format_units:bytes(byte_size(Html)),
               beamlab_cli_output:written_note(Note)]),
    {0, none}.

%% @doc A history: its trend from a summary of every run (read one file at
%% a time), the page's detail from the whole documents of the newest runs
%% only (#34: 3,000 runs took 62 s and 949 MB, each held whole). The runs
%% to draw and the options of `beamlab_report_html:render/2'.
-spec history_runs([string()], beamlab_report_html:opts(), beamlab_result_history:order() | auto) ->
          {[beamlab_result_history:run()], beamlab_report_html:opts()}.
history_runs(Files, Titled, Order) ->
    Summaries = ?VALUE(beamlab_cli_runs:load_runs(Files, fun beamlab_result_history:summary/1)),
    H = ?VALUE(beamlab_cli_runs:history(Summaries, maps:merge(maps:with([run_noise], Titled), #{order => Order}))),
    Ordered = [L || #{label := L} <- maps:get(runs, H)],
    Shown = maps:from_list([{L, true} || L <- lists:nthtail(max(0, length(Ordered) - beamlab_report_html:detail_runs()),
                                                            Ordered)]),
    Runs = case map_size(Shown) =:= length(Summaries) of
               true -> ?VALUE(beamlab_cli_runs:load_runs(Files));
               false -> ?VALUE(beamlab_cli_runs:load_runs(Files, {only, Shown}))
           end,
    {Runs, Titled#{history => H}}.

-spec write_failed(file:filename(), term()) -> no_return().
write_failed(Path, Why) ->
    ?FAIL("~ts", [beamlab_report_html:format_error({write, Path, Why})]).
