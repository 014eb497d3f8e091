%%% @doc `beamlab report RUN.json... -o report.html': one self-contained HTML
%%% page with the charts of saved runs (see `beamlab_report_html').
-module(beamlab_cli_report).
-behaviour(beamlab_cli_command).

-export([summary/0, options/0, usage/0, run/1]).

-define(DEFAULT_OUT, "beamlab-report.html").

%% @doc One line for `beamlab help'.
-spec summary() -> string().
summary() ->
    "self-contained HTML report with charts of saved runs".

%% @doc Options of `beamlab report'.
-spec options() -> [beamlab_cli_args:option()].
options() ->
    [#{name => output, short => "o", long => "output", type => string, default => ?DEFAULT_OUT,
       metavar => "FILE", help => "where to write the page (default " ?DEFAULT_OUT ")"},
     #{name => title, long => "title", type => string, metavar => "TEXT",
       help => "page title (default: the run names)"}].

%% @doc Examples for `beamlab help report'.
-spec usage() -> iodata().
usage() ->
    "Usage: beamlab report RUN.json [MORE.json...] [-o report.html]\n\n"
    "The page embeds its data, styles and drawing code: it opens from disk\n"
    "without network access. The first run is the baseline of the comparison.\n\n"
    "Examples:\n"
    "  beamlab report beamlab-results/*.json -o report.html\n"
    "  beamlab report before.json after.json --title 'OTP 25 vs 26'\n".

%% @doc Runs the command; returns the exit code.
-spec run(beamlab_cli_args:parsed()) -> beamlab_cli_command:outcome().
run(Parsed = #{args := Files}) ->
    Files =/= [] orelse beamlab_cli:usage_error("report needs at least one result file", []),
    Runs = beamlab_cli_compare:load_runs(Files),
    Out = beamlab_cli_args:get(output, Parsed, ?DEFAULT_OUT),
    Opts = case beamlab_cli_args:get(title, Parsed) of
               undefined -> #{};
               T -> #{title => unicode:characters_to_binary(T)}
           end,
    case beamlab_report_html:write(Out, Runs, Opts) of
        ok ->
            io:format("wrote ~ts (~b run(s), ~ts)~n",
                      [Out, length(Runs), beamlab_format_units:bytes(filelib:file_size(Out))]),
            {0, none};
        {error, Reason} ->
            beamlab_cli:fail("~ts", [beamlab_report_html:format_error(Reason)])
    end.
