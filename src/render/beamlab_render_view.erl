%%% @doc A result document in any output format: the text view of its
%%% kind (what the command that made it prints), JSON, CSV, Markdown and
%%% the formats other tools read (github-bigger, github-smaller, bencher).
%%% The one table from a format's name to its renderer, shared by the
%%% command line's `--format' and the public API's `beamlab:format/2,3'.
%%% Pure: the document and the options in, text out.
-module(beamlab_render_view).

-export([formats/0, render/3, text/2, format_error/1]).

-type format() :: text | json | csv | markdown | 'github-bigger' | 'github-smaller' | bencher.
%% `unicode' (default true): ±, sparklines and box drawing, else ASCII;
%% `report' (bench): the run table's detail; `top' and `callers'
%% (profile): the rows of the top table and callers already computed for
%% some functions (beamlab_profile_stacks:callers/3).
-type opts() :: #{unicode => boolean(),
                  report => auto | basic | extended | full,
                  top => pos_integer(),
                  callers => [{binary(), [{binary(), pos_integer()}]}]}.
-type error_reason() :: {unknown_format, term()} | {not_a_document, term()}.
-export_type([format/0, opts/0, error_reason/0]).

%% @doc Every format, in the order `--help' lists them.
-spec formats() -> [format(), ...].
formats() ->
    [text, json, csv, markdown, 'github-bigger', 'github-smaller', bencher].

%% @doc `Doc' rendered in `Format' (an atom of {@link formats/0} or its
%% name as a string or binary). A CI format leaves out what it cannot
%% express (failed measures; the other direction for github-*): ask
%% `beamlab_render_ci:left_out/1' and `beamlab_render_github_benchmark:left_out/2'
%% to say so.
-spec render(beamlab_result:result(), format() | string() | binary(), opts()) ->
          {ok, unicode:chardata()} | {error, error_reason()}.
render(Doc, Format, Opts) when is_list(Format); is_binary(Format) ->
    case [F || F <- formats(), atom_to_binary(F) =:= unicode:characters_to_binary(Format)] of
        [F] -> render(Doc, F, Opts);
        [] -> {error, {unknown_format, Format}}
    end;
render(#{schema := _, kind := _, benchmarks := _} = Doc, Format, Opts) ->
    case lists:member(Format, formats()) of
        true -> {ok, rendered(Format, Doc, Opts)};
        false -> {error, {unknown_format, Format}}
    end;
render(Other, _Format, _Opts) ->
    {error, {not_a_document, Other}}.

rendered(text, Doc, Opts) -> text(Doc, Opts);
rendered(json, Doc, _) -> beamlab_result:to_json(Doc);
rendered(csv, Doc, _) -> beamlab_render_csv:render(Doc);
rendered(markdown, Doc, _) -> beamlab_render_markdown:render(Doc);
rendered('github-bigger', Doc, _) -> beamlab_render_github_benchmark:render(Doc, bigger);
rendered('github-smaller', Doc, _) -> beamlab_render_github_benchmark:render(Doc, smaller);
rendered(bencher, Doc, _) -> beamlab_render_bencher:render(Doc).

%% @doc The text view of a document's kind: the view its command prints
%% (run, suite, matrix, profile, watch, check, doctor) or, for the other kinds,
%% the generic table (`beamlab_render_text').
-spec text(beamlab_result:result(), opts()) -> unicode:chardata().
text(#{kind := Kind} = Doc, Opts) ->
    U = #{unicode => maps:get(unicode, Opts, true)},
    case Kind of
        bench ->
            [beamlab_render_bench:render(Doc, U#{report => maps:get(report, Opts, auto)}),
             beamlab_render_profile:after_phases(Doc)];
        suite ->
            suite(Doc, U);
        matrix ->
            [case Doc of
                 #{extra := #{<<"preset">> := _}} -> beamlab_render_matrix_preset:render(Doc, U);
                 _ -> beamlab_render_matrix:render(Doc, U)
             end,
             beamlab_render_matrix_profile:render(Doc, U),
             beamlab_render_text:findings(maps:get(findings, Doc))];
        profile ->
            beamlab_render_profile:render(Doc, maps:merge(U, maps:with([top, callers], Opts)));
        watch ->
            [beamlab_render_watch:render(Doc), beamlab_render_text:findings(maps:get(findings, Doc))];
        check ->
            beamlab_render_check:text(Doc, U);
        doctor ->
            beamlab_render_doctor:text(Doc);
        _ ->
            beamlab_render_text:render(Doc, U)
    end.

suite(#{extra := #{<<"preset">> := _}} = Doc, U) ->
    beamlab_render_suite_preset:render(Doc, U);
suite(Doc, U) ->
    [beamlab_render_suite:render(Doc, U),
     %% --memory: one repetition's words and reductions per point.
     [["\n", N, ", one repetition (traced, after the measured ones):\n",
       beamlab_render_profile:memory_lines(M, "repetition"),
       case {maps:get(<<"spawned">>, M, 0), maps:get(<<"spawns_wrapped">>, M, false)} of
           {0, _} -> [];
           {_, true} -> [];
           {_, Why} ->
               ["  (spawned processes count through their garbage collections only: what one "
                "allocates after its last one, and its reductions, are not seen",
                case Why of
                    B when is_binary(B) -> ["; ", B];
                    _ -> []
                end, ")\n"]
       end]
      || #{name := N, extra := #{<<"per_repetition">> := M}} <- maps:get(benchmarks, Doc)]].

%% @doc One line for each error of this module.
-spec format_error(error_reason()) -> unicode:chardata().
format_error(Reason) ->
    beamlab_format_reason:line(fun error_line/1, Reason).

error_line({unknown_format, F}) ->
    io_lib:format("unknown format ~tp: one of ~ts", [F, lists:join(", ", [atom_to_list(X) || X <- formats()])]);
error_line({not_a_document, _}) ->
    "not a result document (a map with schema, kind and benchmarks, as the experiments return "
    "it or beamlab_result:load/1 reads it)";
error_line(Other) ->
    %% (a reason of no kind above: printed, never raised)
    beamlab_format_reason:term(Other).
