%%% @doc Prints a result document in the format the user chose and saves
%%% it when asked: the one exit point of every measuring command.
%%%
%%% ```
%%% beamlab_output:emit(Result, Parsed)                       % generic text table
%%% beamlab_output:emit(Result, Parsed, #{text => fun my_text/1})
%%% '''
%%% `text' renders the command's own text view; json, csv and markdown are
%%% the same for every command. With `--save' the document is written
%%% atomically and its path printed on stderr.
-module(beamlab_output).

-export([emit/2, emit/3, text/1, findings_text/1, format/1]).

-type emit_opts() :: #{text => fun((beamlab_result:result()) -> unicode:chardata())}.

%% @doc Prints (unless quiet) and saves (if `--save') a finished document.
-spec emit(beamlab_result:result(), beamlab_cli_args:parsed()) -> ok.
emit(Result, Parsed) ->
    emit(Result, Parsed, #{}).

%% @doc As {@link emit/2} with a command-specific text renderer.
-spec emit(beamlab_result:result(), beamlab_cli_args:parsed(), emit_opts()) -> ok.
emit(Result, Parsed, Opts) ->
    put(beamlab_last_result, Result),
    case get(beamlab_quiet) of
        true -> ok;
        _ -> io:put_chars(render(format(Parsed), Result, Opts))
    end,
    save(Result, beamlab_cli_args:get(save, Parsed)).

%% @doc The output format chosen on the command line.
-spec format(beamlab_cli_args:parsed()) -> text | json | csv | markdown.
format(Parsed) ->
    beamlab_cli_args:get(format, Parsed, text).

render(text, Result, Opts) ->
    Fun = maps:get(text, Opts, fun text/1),
    Fun(Result);
render(json, Result, _) ->
    beamlab_result:to_json(Result);
render(csv, Result, _) ->
    beamlab_format_csv:render(beamlab_result:normalize(Result));
render(markdown, Result, _) ->
    beamlab_format_markdown:render(beamlab_result:normalize(Result)).

save(_Result, undefined) ->
    ok;
save(Result = #{kind := Kind}, Where) ->
    Path = case Where of
               auto -> beamlab_result:default_path(Kind);
               P -> P
           end,
    case beamlab_result:save(Result, Path) of
        {ok, Saved} -> io:format(standard_error, "saved: ~ts~n", [Saved]);
        {error, Reason} -> beamlab_cli:fail("~ts", [beamlab_result:format_error(Reason)])
    end.

%% @doc The generic text view: one aligned row per benchmark, then the
%% findings.
-spec text(beamlab_result:result()) -> unicode:chardata().
text(Result) ->
    Benchmarks = maps:get(benchmarks, Result, []),
    Header = ["Benchmark", "n", "Median", "Mean", "95% CI", "P99", "Verdict"],
    Rows = [benchmark_row(B) || B <- Benchmarks],
    [case maps:get(partial, Result, false) of
         true -> "(partial: interrupted before the end; what was measured is shown)\n";
         false -> ""
     end,
     beamlab_format_table:render(Header, Rows),
     findings_text(maps:get(findings, Result, []))].

benchmark_row(B = #{name := Name}) ->
    Unit = maps:get(unit, B, <<>>),
    V = fun(X) -> beamlab_format_units:value(X, Unit) end,
    case maps:find(stats, B) of
        {ok, S = #{n := N, median := Med, mean := Mean, p99 := P99}} ->
            {Lo, Hi} = maps:get(ci_mean, S),
            Rel = case Mean == 0 of
                      true -> "";
                      false -> "±" ++ beamlab_format_units:percent((Hi - Lo) / 2 / abs(Mean))
                  end,
            [Name, N, V(Med), V(Mean), Rel, V(P99), verdict(B)];
        error ->
            Err = maps:get(error, maps:get(extra, B, #{}), <<"no samples">>),
            [Name, 0, "-", "-", "-", "-", ["failed: ", Err]]
    end.

verdict(#{comparison := #{verdict := V, change := C}}) ->
    io_lib:format("~ts (~ts~ts)", [V, sign(C), beamlab_format_units:percent(C)]);
verdict(_) ->
    "".

sign(C) when C > 0 -> "+";
sign(_) -> "".

%% @doc Findings as text: one line each with the evidence and advice
%% indented below.
-spec findings_text([map()]) -> unicode:chardata().
findings_text([]) ->
    [];
findings_text(Findings) ->
    ["\nFindings:\n" |
     [io_lib:format("  [~ts] ~ts~n      evidence: ~ts~n~ts",
                    [maps:get(severity, F, <<"info">>), maps:get(title, F, <<>>),
                     maps:get(evidence, F, <<>>),
                     case maps:get(advice, F, <<>>) of
                         <<>> -> "";
                         A -> io_lib:format("      advice: ~ts~n", [A])
                     end])
      || F <- Findings]].
