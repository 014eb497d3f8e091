%%% @doc Prints a result document in the format the user chose and saves
%%% it when asked: the one exit point of every measuring command.
%%%
%%% ```
%%% beamlab_output:emit(Result, Parsed)                       % generic text table
%%% beamlab_output:emit(Result, Parsed, #{text => fun my_text/1})
%%% '''
%%% `text' renders the command's own text view (the generic one adds a
%%% sparkline of each benchmark's samples and, for a few benchmarks, a small
%%% histogram); `json', `csv' and `markdown' are the same for every command.
%%% With `--save' the document is written atomically, raw samples bounded
%%% to {@link max_samples/0} per benchmark by a uniform reservoir (the
%%% statistics stay those of every sample; `sample_info' says which were
%%% kept), and its path printed on stderr.
-module(beamlab_output).

-export([emit/2, unicode/1, emit/3, put_chars/1, text/1, text/2, distributions_text/2, findings_text/1, format/1,
         csv/1, csv_header/0, markdown/1, env_summary/1, bound_samples/2, max_samples/0]).

-type emit_opts() :: #{text => fun((beamlab_result:result()) -> unicode:chardata())}.
-type text_opts() :: #{unicode => boolean()}.
-export_type([emit_opts/0, text_opts/0]).

%% Raw samples kept per benchmark in a saved file.
-define(MAX_SAMPLES, 10000).
%% Histograms under the text table only when they stay readable.
-define(MAX_HISTOGRAMS, 3).
-define(MIN_HIST_SAMPLES, 10).
-define(SPARK_WIDTH, 16).

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
        _ -> put_chars(render(format(Parsed), Result, Parsed, Opts))
    end,
    save(Result, beamlab_cli_args:get(save, Parsed)).

%% @doc Prints text as UTF-8: an escript's standard output starts in latin1,
%% which would mangle `±', sparklines and non-ASCII benchmark names.
-spec put_chars(unicode:chardata()) -> ok.
put_chars(Text) ->
    ok = io:setopts(standard_io, [{encoding, unicode}]),
    io:put_chars(standard_io, Text).

%% @doc Whether text output may use Unicode (±, sparklines): not with
%% `--no-color', not in a non-UTF-8 locale.
-spec unicode(beamlab_cli_args:parsed()) -> boolean().
unicode(Parsed) ->
    beamlab_format_spark:use_unicode(#{no_color => beamlab_cli_args:get(no_color, Parsed, false)}).

%% @doc The output format chosen on the command line.
-spec format(beamlab_cli_args:parsed()) -> text | json | csv | markdown.
format(Parsed) ->
    beamlab_cli_args:get(format, Parsed, text).

render(text, Result, Parsed, Opts) ->
    case maps:find(text, Opts) of
        {ok, Fun} -> Fun(Result);
        error -> text(Result, #{unicode => unicode(Parsed)})
    end;
render(json, Result, _, _) ->
    beamlab_result:to_json(Result);
render(csv, Result, _, _) ->
    csv(beamlab_result:normalize(Result));
render(markdown, Result, _, _) ->
    markdown(beamlab_result:normalize(Result)).

save(_Result, undefined) ->
    ok;
save(Result = #{kind := Kind}, Where) ->
    Path = case Where of
               auto -> beamlab_result:default_path(Kind);
               P -> P
           end,
    case beamlab_result:save(bound_samples(Result, ?MAX_SAMPLES), Path) of
        {ok, Saved} -> io:format(standard_error, "saved: ~ts~n", [Saved]);
        {error, Reason} -> beamlab_cli:fail("~ts", [beamlab_result:format_error(Reason)])
    end.

%% @doc Raw samples kept per benchmark when saving.
-spec max_samples() -> pos_integer().
max_samples() ->
    ?MAX_SAMPLES.

%% @doc Keeps at most `Max' raw samples per benchmark: a uniform reservoir
%% sample (`beamlab_stats_reservoir', seeded by the benchmark name so that
%% saving twice gives the same file). `stats' are left as computed from all
%% samples; `sample_info' records count, kept and method.
-spec bound_samples(beamlab_result:result(), pos_integer()) -> beamlab_result:result().
bound_samples(Result = #{benchmarks := Bs}, Max) ->
    Result#{benchmarks := [bound_benchmark(B, Max) || B <- Bs]};
bound_samples(Result, _Max) ->
    Result.

bound_benchmark(B = #{samples := Samples}, Max) when length(Samples) > Max ->
    Info = maps:get(sample_info, B, #{}),
    R = beamlab_stats_reservoir:add_all(
          beamlab_stats_reservoir:new(Max, #{seed => erlang:phash2(maps:get(name, B, <<>>))}), Samples),
    B#{samples := beamlab_stats_reservoir:samples(R),
       sample_info => Info#{count => maps:get(count, Info, length(Samples)), kept => Max,
                            method => <<"reservoir">>}};
bound_benchmark(B, _Max) ->
    B.

%% @doc The generic text view, drawn with Unicode when the locale allows.
-spec text(beamlab_result:result()) -> unicode:chardata().
text(Result) ->
    text(Result, #{unicode => beamlab_format_spark:utf8_terminal()}).

%% @doc The generic text view: one aligned row per benchmark with a
%% sparkline of its samples, histograms of a few benchmarks, the findings.
%% `unicode => false' draws with ASCII only.
-spec text(beamlab_result:result(), text_opts()) -> unicode:chardata().
text(Result, Opts) ->
    Benchmarks = maps:get(benchmarks, Result, []),
    Ascii = not maps:get(unicode, Opts, true),
    Header = ["Benchmark", "n", "Median", "Mean", "95% CI", "P99", "Samples", "Verdict"],
    Rows = [benchmark_row(B, Ascii) || B <- Benchmarks],
    [case maps:get(partial, Result, false) of
         true -> "(partial: interrupted before the end; what was measured is shown)\n";
         false -> ""
     end,
     beamlab_format_table:render(Header, Rows),
     distributions_text(Result, Opts),
     findings_text(maps:get(findings, Result, []))].

benchmark_row(B = #{name := Name}, Ascii) ->
    Unit = maps:get(unit, B, <<>>),
    V = fun(X) -> beamlab_format_units:value(X, Unit) end,
    case maps:find(stats, B) of
        {ok, S = #{n := N, median := Med, mean := Mean, p99 := P99}} ->
            {Lo, Hi} = maps:get(ci_mean, S),
            Rel = case Mean == 0 of
                      true -> "";
                      false -> "±" ++ beamlab_format_units:percent((Hi - Lo) / 2 / abs(Mean))
                  end,
            [Name, N, V(Med), V(Mean), Rel, V(P99), spark(B, Ascii), verdict(B)];
        error ->
            Err = maps:get(error, maps:get(extra, B, #{}), <<"no samples">>),
            [Name, 0, "-", "-", "-", "-", "", ["failed: ", Err]]
    end.

%% Samples in the order measured; a reservoir has no order to show.
spark(#{samples := Samples} = B, Ascii) when length(Samples) >= 3 ->
    case maps:get(method, maps:get(sample_info, B, #{}), <<"all">>) of
        <<"all">> -> beamlab_format_spark:line(Samples, #{width => ?SPARK_WIDTH, ascii => Ascii});
        _ -> ""
    end;
spark(_, _) ->
    "".

%% @doc Small horizontal histograms of the samples of each benchmark, when
%% there are at most three benchmarks with enough samples to show a shape.
-spec distributions_text(beamlab_result:result(), text_opts()) -> unicode:chardata().
distributions_text(Result, Opts) ->
    Shown = [B || B = #{samples := S} <- maps:get(benchmarks, Result, []),
                  length(S) >= ?MIN_HIST_SAMPLES],
    case Shown =/= [] andalso length(Shown) =< ?MAX_HISTOGRAMS of
        false ->
            [];
        true ->
            Ascii = not maps:get(unicode, Opts, true),
            [[io_lib:format("~nDistribution of ~ts (~b samples):~n",
                            [maps:get(name, B), length(S)]),
              [["  ", Line, "\n"]
               || Line <- beamlab_format_spark:bars(
                            beamlab_stats:histogram(S, bins(length(S))),
                            #{width => 30, ascii => Ascii,
                              label => fun(X) -> beamlab_format_units:value(X, maps:get(unit, B, <<>>)) end})]]
             || B = #{samples := S} <- Shown]
    end.

%% Sturges' rule, capped so the histogram stays small.
bins(N) ->
    max(3, min(10, ceil(math:log2(N)) + 1)).

verdict(#{comparison := #{verdict := V, change := C}}) when is_number(C) ->
    io_lib:format("~ts (~ts~ts)", [V, sign(C), beamlab_format_units:percent(C)]);
verdict(#{comparison := #{verdict := V}}) ->
    io_lib:format("~ts", [V]);
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

%% @doc The stable CSV columns, in order (documented in docs/results.md).
-spec csv_header() -> [binary()].
csv_header() ->
    [<<"kind">>, <<"name">>, <<"group">>, <<"metric">>, <<"unit">>, <<"better">>,
     <<"n">>, <<"mean">>, <<"ci_low">>, <<"ci_high">>, <<"sd">>, <<"cv">>,
     <<"median">>, <<"min">>, <<"p5">>, <<"p25">>, <<"p75">>, <<"p95">>, <<"p99">>, <<"max">>,
     <<"samples_kept">>, <<"sample_method">>,
     <<"change">>, <<"change_ci_low">>, <<"change_ci_high">>, <<"p_value">>, <<"verdict">>,
     <<"partial">>, <<"started_at">>].

%% @doc One CSV row per benchmark (RFC 4180, header first).
-spec csv(beamlab_result:result()) -> binary().
csv(Result) ->
    Kind = maps:get(kind, Result, null),
    Partial = maps:get(partial, Result, false),
    Started = maps:get(started_at, Result, null),
    Rows = [begin
                S = maps:get(stats, B, #{}),
                C = maps:get(comparison, B, #{}),
                {CiLo, CiHi} = interval(maps:get(ci_mean, S, null)),
                {ChLo, ChHi} = interval(maps:get(ci, C, null)),
                Info = maps:get(sample_info, B, #{}),
                [Kind, maps:get(name, B, null), maps:get(group, B, null), maps:get(metric, B, null),
                 maps:get(unit, B, null), maps:get(better, B, null),
                 maps:get(n, S, null), maps:get(mean, S, null), CiLo, CiHi,
                 maps:get(sd, S, null), maps:get(cv, S, null), maps:get(median, S, null),
                 maps:get(min, S, null), maps:get(p5, S, null), maps:get(p25, S, null),
                 maps:get(p75, S, null), maps:get(p95, S, null), maps:get(p99, S, null),
                 maps:get(max, S, null),
                 maps:get(kept, Info, length(maps:get(samples, B, []))),
                 maps:get(method, Info, <<"all">>),
                 undef_null(maps:get(change, C, null)), ChLo, ChHi,
                 undef_null(maps:get(p_value, C, null)), maps:get(verdict, C, null),
                 Partial, Started]
            end || B <- maps:get(benchmarks, Result, [])],
    beamlab_format_csv:encode([csv_header() | Rows]).

interval({Lo, Hi}) -> {Lo, Hi};
interval(_) -> {null, null}.

undef_null(undefined) -> null;
undef_null(V) -> V.

%% @doc A GitHub Markdown table of the benchmarks, ready to paste into a
%% pull request: title line, env summary, the table with the verdict
%% column, the findings.
-spec markdown(beamlab_result:result()) -> binary().
markdown(Result) ->
    Header = [<<"Benchmark">>, <<"n">>, <<"Mean">>, <<"95% CI">>, <<"Median">>, <<"P99">>,
              <<"Change">>, <<"Verdict">>],
    Rows = [md_row(B) || B <- maps:get(benchmarks, Result, [])],
    Findings = maps:get(findings, Result, []),
    unicode:characters_to_binary(
      [io_lib:format("**beamlab ~ts** `~ts`", [maps:get(kind, Result, <<"run">>),
                                                 lists:join(" ", maps:get(command, Result, []))]),
       [" — **partial run** (interrupted)" || maps:get(partial, Result, false) =:= true],
       "\n\n", env_summary(Result), "\n\n",
       beamlab_format_markdown:table(Header, Rows,
                                     [left, right, right, right, right, right, right, left]),
       [["\n", [io_lib:format("- **~ts** ~ts: ~ts~n",
                              [maps:get(severity, F, <<"info">>), beamlab_format_markdown:cell(maps:get(title, F, <<>>)),
                               beamlab_format_markdown:cell(maps:get(evidence, F, <<>>))])
                || F <- Findings]] || Findings =/= []]]).

md_row(B) ->
    Unit = maps:get(unit, B, <<>>),
    V = fun(X) -> list_to_binary(beamlab_format_units:value(X, Unit)) end,
    case maps:find(stats, B) of
        {ok, S = #{n := N, mean := Mean, median := Med, p99 := P99}} ->
            {Lo, Hi} = maps:get(ci_mean, S),
            Ci = iolist_to_binary(["[", V(Lo), ", ", V(Hi), "]"]),
            {Change, Verdict} = case maps:get(comparison, B, #{}) of
                                    #{change := Ch, verdict := Vd} when is_number(Ch) ->
                                        {iolist_to_binary([sign(Ch), beamlab_format_units:percent(Ch)]), Vd};
                                    #{verdict := Vd} -> {<<>>, Vd};
                                    _ -> {<<>>, <<>>}
                                end,
            [maps:get(name, B), N, V(Mean), Ci, V(Med), V(P99), Change, Verdict];
        error ->
            [maps:get(name, B), 0, <<"-">>, <<"-">>, <<"-">>, <<"-">>, <<>>, <<"failed">>]
    end.

%% @doc One line describing the machine and VM of a run, e.g.
%% `OTP 25 · erts 13.1.5 · jit · 2 schedulers · bind unbound · AMD EPYC ·
%% linux · 6.18.44'; only the facts the env report has.
-spec env_summary(beamlab_result:result()) -> binary().
env_summary(Result) ->
    Flat = beamlab_compare:flat_env(Result#{params => #{}}),
    %% First key ending in one of the suffixes (env reports nest them, e.g.
    %% env.otp.release; flat spellings are accepted too).
    Pick = fun(Suffixes) ->
                   case [V || Suf <- Suffixes, {K, V} <- Flat, V =/= null, V =/= <<>>,
                              ends_with(K, <<".", Suf/binary>>)] of
                       [First | _] -> First;
                       [] -> undefined
                   end
           end,
    Parts = [{"OTP ~ts", Pick([<<"otp.release">>, <<"otp_release">>])},
             {"erts ~ts", Pick([<<"otp.erts">>, <<"erts_version">>])},
             {"~ts", Pick([<<"emu_flavor">>])},
             {"~ts schedulers", Pick([<<"schedulers.online">>, <<"schedulers_online">>])},
             {"bind ~ts", Pick([<<"bind_type">>])},
             {"~ts", Pick([<<"cpu.model">>, <<"cpu_model">>])},
             {"~ts", Pick([<<"os.name">>])},
             {"~ts", Pick([<<"os.kernel_version">>])}],
    Text = [io_lib:format(F, [to_text(V)]) || {F, V} <- Parts, V =/= undefined],
    case Text of
        [] -> <<"env: not recorded">>;
        _ -> unicode:characters_to_binary(lists:join(" · ", Text))
    end.

ends_with(Bin, Suffix) ->
    byte_size(Bin) >= byte_size(Suffix) andalso
        binary:part(Bin, byte_size(Bin) - byte_size(Suffix), byte_size(Suffix)) =:= Suffix.

to_text(B) when is_binary(B) -> B;
to_text(I) when is_integer(I) -> integer_to_binary(I);
to_text(F) when is_float(F) -> float_to_binary(F, [short]);
to_text(A) when is_atom(A) -> atom_to_binary(A, utf8).
