%%% @doc The one place where a command's document leaves beamlab: printed
%%% in the format chosen on the command line (unless quiet), and saved
%%% atomically with `--save' (raw samples bounded per benchmark, the
%%% statistics staying those of every sample).
-module(beamlab_cli_output).

-export([emit/4, check_save/1, check_files/2, check_output/2, written_note/1, put_chars/1, unicode/1,
         format/1, text_opts/1]).

-type format() :: beamlab_render_view:format().
-export_type([format/0]).

%% Raw samples kept per benchmark in a saved file.
-define(MAX_SAMPLES, 10000).

%% @doc Prints (unless `Quiet') and saves (with `--save') a finished
%% document; `Mod' is the command, whose `text/2' renders the text view.
%% A file that cannot be written is an error the caller reports.
-spec emit(module(), beamlab_result:result(), beamlab_cli_args:parsed(), boolean()) ->
          ok | {error, beamlab_result:error_reason()}.
emit(Mod, Doc0, Parsed, Quiet) ->
    %% Secrets (a URI's password, --cookie) are masked in everything that
    %% is printed or saved: command line, emulator arguments, params.
    Doc = beamlab_result_redact:document(Doc0),
    Quiet orelse put_chars(render(format(Parsed), Mod, Doc, Parsed)),
    save(Doc, beamlab_cli_args:get(save, Parsed, undefined)).

%% @doc Prints text as UTF-8: an escript's standard output starts in latin1,
%% which would mangle `±', sparklines and non-ASCII benchmark names.
-spec put_chars(unicode:chardata()) -> ok.
put_chars(Text) ->
    %% Standard output may be gone (a terminal hung up: SIGHUP, a closed
    %% pipe): what is saved after this must be saved all the same.
    try
        _ = io:setopts(standard_io, [{encoding, unicode}]),
        io:put_chars(standard_io, Text)
    catch
        _:_ -> ok
    end.

%% @doc Whether text output may use Unicode (±, sparklines): not with
%% `--no-color', not in a non-UTF-8 locale.
-spec unicode(beamlab_cli_args:parsed()) -> boolean().
unicode(Parsed) ->
    beamlab_format_spark:use_unicode(#{no_color => beamlab_cli_args:get(no_color, Parsed, false)}).

%% @doc The options of the generic text renderer for this command line.
-spec text_opts(beamlab_cli_args:parsed()) -> beamlab_render_text:opts().
text_opts(Parsed) ->
    #{unicode => unicode(Parsed)}.

%% @doc The output format chosen on the command line.
-spec format(beamlab_cli_args:parsed()) -> format().
format(Parsed) ->
    beamlab_cli_args:get(format, Parsed, text).

render(text, Mod, Doc, Parsed) ->
    case erlang:function_exported(Mod, text, 2) of
        true -> Mod:text(Doc, Parsed);
        false -> beamlab_render_text:render(Doc, text_opts(Parsed))
    end;
render(Format, _Mod, Doc, _Parsed) ->
    _ = lists:member(Format, ['github-bigger', 'github-smaller', bencher]) andalso left_out(Format, Doc),
    {ok, Out} = beamlab_render_view:render(Doc, Format, #{}),
    Out.

%% What a CI format leaves out is said on stderr, never dropped silently.
left_out(Ci, Doc) ->
    Say = fun([], _) -> ok;
             (Names, Why) -> io:format(standard_error, "beamlab: --format ~ts leaves out ~b measure(s) ~ts: ~ts~n",
                                       [Ci, length(Names), Why, lists:join(", ", Names)])
          end,
    Say(beamlab_render_ci:left_out(Doc), "without statistics (failed)"),
    case Ci of
        'github-bigger' ->
            Say(beamlab_render_github_benchmark:left_out(Doc, bigger),
                "where lower is better (--format github-smaller has them)");
        'github-smaller' ->
            Say(beamlab_render_github_benchmark:left_out(Doc, smaller),
                "where higher is better (--format github-bigger has them)");
        bencher -> ok
    end.

%% @doc Checks `--save PATH' before anything is measured: an empty path or
%% a path below a file is a usage error now, not a failure after the run.
-spec check_save(beamlab_cli_args:parsed()) -> ok | {error, beamlab_cli_error:reason()}.
check_save(Parsed) ->
    case beamlab_cli_args:get(save, Parsed, undefined) of
        undefined -> ok;
        auto ->
            %% The default directory passes the same checks (a link planted
            %% there by another user is refused before anything is run).
            case beamlab_runtime_file:check_target(filename:join(beamlab_result:default_dir(), "x.json")) of
                {ok, _} -> ok;
                {error, Why} -> beamlab_cli_error:usage_error("--save: ~ts", [beamlab_runtime_file:format_error(Why)])
            end;
        "" -> beamlab_cli_error:usage_error("--save= needs a path (or give --save alone for "
                                      "beamlab-results/<kind>-<time>.json)", []);
        Path -> check_output("--save", Path)
    end.

%% @doc Checks, before anything runs, that no file the command writes
%% (`--save PATH' and the command's own outputs, `Mod:files/1') is one it
%% reads or another it writes, by identity (device and inode, through
%% links): a usage error naming both otherwise.
-spec check_files(module(), beamlab_cli_args:parsed()) -> ok | {error, beamlab_cli_error:reason()}.
check_files(Mod, Parsed) ->
    Files = case erlang:function_exported(Mod, files, 1) of
                true -> Mod:files(Parsed);
                false -> #{}
            end,
    Save = case beamlab_cli_args:get(save, Parsed, undefined) of
               P when is_list(P), P =/= "" -> [{"--save", P}];
               _ -> []
           end,
    case beamlab_runtime_file:check_distinct(maps:get(outputs, Files, []) ++ Save, maps:get(inputs, Files, [])) of
        ok -> ok;
        {error, Why} -> beamlab_cli_error:usage_error("~ts", [beamlab_runtime_file:format_error(Why)])
    end.

%% @doc As {@link check_save/1} for any output file option (`Option' names
%% it in the message).
-spec check_output(string(), file:filename()) -> ok | {error, beamlab_cli_error:reason()}.
check_output(Option, Path) ->
    case beamlab_runtime_file:check_target(Path) of
        {ok, _} -> ok;
        {error, empty} -> beamlab_cli_error:usage_error("~ts needs a file name", [Option]);
        {error, Why} -> beamlab_cli_error:usage_error("~ts ~ts: ~ts",
                                                [Option, Path, beamlab_runtime_file:format_error(Why)])
    end.

%% A name beamlab chooses (`--save' alone, a directory) never replaces a
%% file: `-2', `-3'... are added. A file the user names is replaced
%% atomically, and the message says so.
save(_Doc, undefined) ->
    ok;
save(Doc, Where) ->
    Bounded = beamlab_result:bound_samples(Doc, ?MAX_SAMPLES),
    Target = case Where of
                 auto -> new;
                 _ -> beamlab_runtime_file:check_target(Where)
             end,
    Saved = case Where of
                auto -> beamlab_result:save(Bounded, {new, default_path(Doc)});
                Path -> beamlab_result:save(Bounded, Path)
            end,
    case Saved of
        {ok, File} -> io:format(standard_error, "saved: ~ts~ts~n", [File, written_note(Target)]);
        {error, _} = Error -> Error
    end.

%% @doc What the message about a written file adds for what was there.
-spec written_note({ok, beamlab_runtime_file:target()} | term()) -> string().
written_note({ok, exists}) -> " (replaced the existing file)";
written_note({ok, {in_place, standard_output}}) -> " (standard output)";
written_note({ok, {in_place, standard_error}}) -> " (standard error)";
written_note({ok, {in_place, character_device}}) -> " (a character device: written in place)";
written_note({ok, {in_place, fifo}}) -> " (a FIFO: written in place)";
written_note(_) -> "".

%% A project's runs (`run --bench', `check') are its history, filed by
%% date and commit: `.beamlab/history/<date>-<time>-<commit>.json' (UTC;
%% `-dirty' when the working tree had changes), which `beamlab report
%% .beamlab/history/' draws as a trend.
default_path(#{params := #{<<"project">> := #{<<"short">> := Short} = P}, started_at := Started}) ->
    Stamp = [C || C <- binary_to_list(Started), C >= $0, C =< $9],
    {Date, Rest} = lists:split(min(8, length(Stamp)), Stamp),
    Dirty = case maps:get(<<"dirty">>, P, false) of
                true -> "-dirty";
                false -> ""
            end,
    filename:join([".beamlab", "history",
                   lists:flatten([Date, "-", lists:sublist(Rest, 6), "-", binary_to_list(Short), Dirty, ".json"])]);
default_path(#{kind := Kind, started_at := Started}) ->
    beamlab_result:default_path(Kind, Started).
