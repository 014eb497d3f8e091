%%% @doc The CSS and JavaScript of the HTML report, read from
%%% `priv/report/' (real files: edited, linted and syntax-checked as such).
%%%
%%% Vanilla JavaScript, no library: the scripts read the JSON model that
%%% `beamlab_report_html' embeds and draw every chart as inline SVG (the
%%% scheduler heatmap on a canvas); see the files themselves. The page
%%% inlines them, so a report stays one self-contained file.
%%%
%%% The files are found through the application's priv directory: a
%%% regular directory when beamlab runs from a code path (a release, a
%%% rebar3 or mix dependency), a directory inside the archive when it runs
%%% as the escript (`escript_incl_priv' in rebar.config puts them there),
%%% which `erl_prim_loader' reads; `file' cannot.
-module(beamlab_report_assets).

-export([styles/0, scripts/0, files/0, format_error/1]).

-type name() :: string().
-type error_reason() :: {asset, name(), file:posix() | badarg | term()}.
-export_type([error_reason/0]).

%% In page order: later styles and scripts build on the earlier ones.
-define(STYLES, ["report.css", "flame.css", "doctor.css"]).
%% (layout.js checks the drawn page: last)
-define(SCRIPTS, ["report.js", "flame.js", "watch.js", "doctor.js", "layout.js"]).

%% @doc The stylesheets, in page order.
-spec styles() -> {ok, [binary()]} | {error, error_reason()}.
styles() ->
    read_all(?STYLES).

%% @doc The scripts, each for its own `<script>' element, in page order.
-spec scripts() -> {ok, [binary()]} | {error, error_reason()}.
scripts() ->
    read_all(?SCRIPTS).

%% @doc Every asset's name, styles first.
-spec files() -> [name()].
files() ->
    ?STYLES ++ ?SCRIPTS.

%% @doc One line for an asset that cannot be read.
-spec format_error(error_reason()) -> iolist().
format_error(Reason) ->
    beamlab_format_reason:line(fun error_line/1, Reason).

error_line({asset, Name, Reason}) ->
    io_lib:format("cannot read the report's ~ts from ~ts: ~tp (a broken installation: rebuild beamlab)",
                  [Name, dir(), Reason]);
error_line(Other) ->
    %% (a reason of no kind above: printed, never raised)
    beamlab_format_reason:term(Other).

read_all(Names) ->
    read_all(Names, []).

read_all([], Acc) ->
    {ok, lists:reverse(Acc)};
read_all([Name | Rest], Acc) ->
    case read(Name) of
        {ok, Bin} -> read_all(Rest, [Bin | Acc]);
        {error, Reason} -> {error, {asset, Name, Reason}}
    end.

read(Name) ->
    Path = filename:join(dir(), Name),
    case file:read_file(Path) of
        {ok, _} = Ok -> Ok;
        {error, _} = E ->
            case erl_prim_loader:get_file(Path) of
                {ok, Bin, _} -> {ok, Bin};
                error -> E
            end
    end.

%% Without an application directory named beamlab on the code path (an
%% ebin added by hand), the priv directory beside this module's ebin.
dir() ->
    case code:priv_dir(beamlab) of
        Priv when is_list(Priv) -> filename:join(Priv, "report");
        {error, bad_name} ->
            case code:which(?MODULE) of
                Beam when is_list(Beam) -> filename:join([filename:dirname(filename:dirname(Beam)), "priv", "report"]);
                _ -> filename:join("priv", "report")
            end
    end.
