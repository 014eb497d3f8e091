%%% @doc A result document as a GitHub Markdown table, ready to paste into
%%% a pull request: title line, environment summary, the benchmarks with
%%% their verdicts, the findings.
-module(beamlab_render_markdown).

-export([render/1]).

%% @doc The Markdown view of a document (a `check' has its own, the
%% summary for a pull-request comment; a `doctor' its diagnosis).
-spec render(beamlab_result:result()) -> binary().
render(#{kind := check} = Result) ->
    beamlab_render_check:markdown(Result);
render(#{kind := doctor} = Result) ->
    beamlab_render_doctor:markdown(Result);
render(Result = #{kind := Kind, command := Command, partial := Partial, findings := Findings}) ->
    Bs = maps:get(benchmarks, Result),
    %% A matrix's values are one per fresh VM: its mean, or for CPU time
    %% its fastest sample (beamlab_result_compare:vm_level/1), said as the
    %% text says it.
    {Values, Mean} = case maps:get(extra, Result, #{}) of
                         #{<<"configs">> := _} ->
                             {["Each value is one ", beamlab_render_matrix:value_kind(Result), ".\n\n"],
                              capital(beamlab_render_matrix:mean_header(Result))};
                         _ -> {[], <<"Mean">>}
                     end,
    Header = [<<"Benchmark">>, <<"n">>, Mean, <<"95% CI">>, <<"Median">>, <<"P99">>,
              <<"Change">>, <<"Verdict">>],
    Rows = [row(B) || B <- Bs],
    unicode:characters_to_binary(
      [io_lib:format("**beamlab ~ts** `~ts`", [Kind, lists:join(" ", Command)]),
       [case maps:get(extra, Result, #{}) of
            #{<<"vm_stopped">> := #{<<"exit_status">> := St}} ->
                io_lib:format(" — **partial run** (the VM stopped, exit status ~w)", [St]);
            _ -> " — **partial run** (interrupted)"
        end || Partial],
       "\n\n", beamlab_result_env:summary(Result), "\n\n", Values,
       beamlab_format_markdown:table(Header, Rows,
                                     [left, right, right, right, right, right, right, left]),
       %% (a matrix's verdicts: the fresh VMs they left out)
       [["\n", beamlab_render_matrix:rejected_line(Bs)] || Values =/= [], beamlab_render_matrix:rejected_line(Bs) =/= []],
       [["\n", [io_lib:format("- **~ts** ~ts: ~ts~n",
                              [Severity, beamlab_format_markdown:cell(Title),
                               beamlab_format_markdown:cell(Evidence)])
                || #{severity := Severity, title := Title, evidence := Evidence} <- Findings]]
        || Findings =/= []]]).

capital([C | Rest]) -> unicode:characters_to_binary([string:to_upper(C) | Rest]).

row(B = #{name := Name}) ->
    V = fun(X) -> unicode:characters_to_binary(beamlab_format_units:bench_value(X, B)) end,
    case maps:find(stats, B) of
        {ok, S = #{n := N, mean := Mean, median := Med, p99 := P99}} ->
            Ci = case maps:get(ci_mean, S, undefined) of
                     {Lo, Hi} -> iolist_to_binary(["[", V(Lo), ", ", V(Hi), "]"]);
                     _ -> <<"no interval">>
                 end,
            {Change, Verdict} = case maps:get(comparison, B, #{}) of
                                    #{change := Ch, verdict := no_difference, detectable := D}
                                      when is_number(Ch), is_number(D) ->
                                        %% what this `~' could have seen (#35)
                                        {list_to_binary(beamlab_format_units:signed_percent(Ch)),
                                         iolist_to_binary(["no_difference (could have seen ",
                                                           beamlab_format_units:detectable(D), ")"])};
                                    #{change := Ch, verdict := Vd} when is_number(Ch) ->
                                        {list_to_binary(beamlab_format_units:signed_percent(Ch)),
                                         atom_to_binary(Vd)};
                                    #{verdict := Vd} -> {<<>>, atom_to_binary(Vd)};
                                    _ -> {<<>>, <<>>}
                                end,
            [Name, N, V(Mean), Ci, V(Med), V(P99), Change, Verdict];
        error ->
            [Name, 0, <<"-">>, <<"-">>, <<"-">>, <<"-">>, <<>>, <<"failed">>]
    end.
