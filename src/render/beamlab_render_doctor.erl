%%% @doc The doctor's document as text and as Markdown: the recommendation
%%% first (the flags for vm.args and what they buy), the findings with
%%% their evidence and confidence, the scaling curve per scheduler count
%%% with the USL fit, microstate accounting per configuration, and the
%%% remedies ranked with their intervals. Pure; reads the document's
%%% JSON sections (binary keys), so a saved document renders the same.
-module(beamlab_render_doctor).

-export([text/1, markdown/1, compare/1]).

%% @doc The text view.
-spec text(beamlab_result:result()) -> unicode:chardata().
text(#{extra := #{<<"node">> := _}} = Doc) ->
    node_view(Doc, text);
text(Doc) ->
    #{extra := X, findings := Findings} = Doc,
    Curve = maps:get(<<"curve">>, X, #{}),
    [maps:get(<<"recommendation">>, X, <<"no recommendation (nothing was measured)">>), "\n",
     [" (partial: interrupted; what was measured so far)\n" || maps:get(partial, Doc, false)],
     "\nFindings:\n",
     [io_lib:format("  [~ts] ~ts (confidence: ~ts)~n      evidence: ~ts~n      advice: ~ts~n",
                    [Sev, T, conf(D), E, A])
      || #{severity := Sev, title := T, evidence := E, advice := A, data := D} <- Findings],
     "\nScaling (the probe in fresh VMs per scheduler count; medians):\n",
     beamlab_format_table:render(curve_header(), curve_rows(Curve), #{indent => 2}),
     usl_line(maps:get(<<"usl">>, Curve, #{})),
     "\nMicrostate accounting of the schedulers under the load (below capacity; share of their time):\n",
     msacc_table(Curve, X, <<"msacc">>, text),
     "\nMicrostate accounting of the schedulers under the saturating load (capacity; share of their time):\n",
     msacc_table(Curve, X, <<"capacity_msacc">>, text),
     remedies_section(X, text),
     facts_lines(X)].

%% @doc The Markdown view.
-spec markdown(beamlab_result:result()) -> binary().
markdown(#{extra := #{<<"node">> := _}} = Doc) ->
    unicode:characters_to_binary(node_view(Doc, markdown));
markdown(Doc) ->
    #{extra := X, findings := Findings} = Doc,
    Curve = maps:get(<<"curve">>, X, #{}),
    unicode:characters_to_binary(
      ["**beamlab doctor**: ", beamlab_format_markdown:cell(maps:get(<<"recommendation">>, X, <<"">>)),
       [" — **partial run** (interrupted)" || maps:get(partial, Doc, false)], "\n\n",
       [io_lib:format("- **~ts** ~ts (confidence ~ts): ~ts~n",
                      [Sev, beamlab_format_markdown:cell(T), conf(D), beamlab_format_markdown:cell(E)])
        || #{severity := Sev, title := T, evidence := E, data := D} <- Findings],
       "\n", beamlab_format_markdown:table(curve_header(), curve_rows(Curve)),
       usl_line(maps:get(<<"usl">>, Curve, #{})), "\n",
       "Microstate accounting under the load (below capacity):\n\n",
       msacc_table(Curve, X, <<"msacc">>, markdown), "\n",
       "Microstate accounting under the saturating load (capacity):\n\n",
       msacc_table(Curve, X, <<"capacity_msacc">>, markdown), "\n",
       remedies_section(X, markdown)]).

%% `doctor --node': the recommendation for the node's next start (not
%% measured: a running node is not restarted), the findings, what the
%% watch saw (each scheduler's utilisation, run queue, CPU, migrations,
%% microstate accounting) and the node's facts.
node_view(#{extra := X, findings := Findings} = Doc, Form) ->
    N = maps:get(<<"node">>, X),
    Get = fun(K) -> maps:get(K, N, null) end,
    Mig = case Get(<<"migrations">>) of M when is_map(M) -> M; _ -> #{} end,
    Lines = [io_lib:format("utilisation ~ts on average; each scheduler: ~ts~n",
                           [pct(Get(<<"utilisation">>)), per_scheduler(Get(<<"utilisation_schedulers">>))]),
             io_lib:format("run queue ~ts on average, ~ts at most~n",
                           [rate(Get(<<"run_queue_mean">>)), v(Get(<<"run_queue_max">>))]),
             io_lib:format("CPU: the node ~ts cores, other processes ~ts of the CPUs, steal ~ts~n",
                           [rate(Get(<<"cpu_cores">>)), pct(Get(<<"others_share">>)), pct(Get(<<"steal_share">>))]),
             io_lib:format("the kernel moved the scheduler threads between CPUs ~ts times/s (each: ~ts)~n",
                           [rate(maps:get(<<"per_s">>, Mig, null)), v(maps:get(<<"per_scheduler">>, Mig, []))]),
             [Get(<<"restored">>), "\n"]],
    Msacc = maps:get(<<"msacc">>, N, #{}),
    States = lists:sort(maps:keys(Msacc)),
    MsaccRows = [[<<"node">> | [pct(maps:get(S, Msacc)) || S <- States]]],
    Head = io_lib:format("Node ~ts, watched ~ts s (~ts samples), on ~ts:~n",
                         [Get(<<"name">>), rate(Get(<<"duration_s">>)), v(Get(<<"samples">>)),
                          case Get(<<"local">>) of true -> "this host"; _ -> "another host" end]),
    case Form of
        text ->
            [maps:get(<<"recommendation">>, X, <<>>), "\n",
             "  (", Get(<<"why_not_measured">>), ")\n",
             [" (partial: interrupted; what was recorded so far)\n" || maps:get(partial, Doc, false)],
             "\nFindings:\n",
             [io_lib:format("  [~ts] ~ts (confidence: ~ts)~n      evidence: ~ts~n      advice: ~ts~n",
                            [Sev, T, conf(D), E, A])
              || #{severity := Sev, title := T, evidence := E, advice := A, data := D} <- Findings],
             "\n", Head, [["  ", L] || L <- Lines],
             "\nMicrostate accounting of the schedulers while the node worked (share of their time):\n",
             case States of
                 [] -> "  (none recorded)\n";
                 _ -> beamlab_format_table:render([<<>> | States], MsaccRows, #{indent => 2})
             end,
             facts_lines(X)];
        markdown ->
            ["**beamlab doctor --node**: ", beamlab_format_markdown:cell(maps:get(<<"recommendation">>, X, <<>>)),
             [" — **partial run** (interrupted)" || maps:get(partial, Doc, false)], "\n\n",
             "_", beamlab_format_markdown:cell(Get(<<"why_not_measured">>)), "_\n\n",
             [io_lib:format("- **~ts** ~ts (confidence ~ts): ~ts~n",
                            [Sev, beamlab_format_markdown:cell(T), conf(D), beamlab_format_markdown:cell(E)])
              || #{severity := Sev, title := T, evidence := E, data := D} <- Findings],
             "\n", Head, "\n", [["- ", L] || L <- Lines], "\n",
             case States of
                 [] -> [];
                 _ -> beamlab_format_markdown:table([<<>> | States], MsaccRows)
             end]
    end.

conf(#{<<"confidence">> := C}) -> C;
conf(_) -> <<"?">>.

curve_header() ->
    [<<"schedulers">>, <<"capacity msg/s">>, <<"goodput msg/s">>, <<"p99 latency">>,
     <<"CPU/msg">>, <<"round trip">>, <<"utilisation">>, <<"per scheduler">>, <<"migrations/s">>].

curve_rows(#{<<"points">> := Ps}) ->
    [[integer_to_binary(N), num(maps:get(<<"capacity">>, P, null)), num(maps:get(<<"goodput">>, P, null)),
      us(maps:get(<<"latency_p99_us">>, P, null)), us(maps:get(<<"cpu_per_msg_us">>, P, null)),
      us(maps:get(<<"round_trip_us">>, P, null)), pct(maps:get(<<"utilisation">>, P, null)),
      per_scheduler(maps:get(<<"utilisation_schedulers">>, P, [])),
      rate(maps:get(<<"migrations_per_s">>, P, null))]
     || #{<<"schedulers">> := N} = P <- Ps];
curve_rows(_) ->
    [].

%% Each scheduler's busy share, in scheduler order ("98 97 3 2"): the
%% mean hides a few saturated schedulers beside idle ones.
per_scheduler(Us) when not is_list(Us); Us =:= [] -> <<"?">>;
per_scheduler(Us) ->
    iolist_to_binary(lists:join(" ", [integer_to_list(round(100 * U)) || U <- Us, is_number(U)])).

rate(R) when is_number(R) -> iolist_to_binary(io_lib:format("~.1f", [float(R)]));
rate(_) -> <<"?">>.

usl_line(#{<<"model">> := M, <<"sigma">> := S, <<"kappa">> := K, <<"peak_n">> := PN, <<"r2">> := R2}) ->
    io_lib:format("  USL fit (~ts): contention sigma ~.3g, coherency kappa ~.3g, ~ts, R^2 ~.2f~n",
                  [M, float(S), float(K),
                   case PN of
                       N when is_number(N), N =< 4096 -> io_lib:format("peak at ~.1f schedulers", [float(N)]);
                       _ -> "no peak within reach (capacity keeps rising)"
                   end, float(R2)]);
usl_line(#{<<"error">> := E}) ->
    io_lib:format("  USL fit: ~ts~n", [E]);
usl_line(_) ->
    [].

%% `Key': msacc (the load below capacity) or capacity_msacc (the
%% saturating load).
msacc_table(#{<<"points">> := Ps}, X, Key, Form) ->
    Default = maps:get(<<"default">>, X, #{}),
    Rows0 = [{<<"default">>, maps:get(Key, Default, #{})}
             | [{<<"+S ", (integer_to_binary(N))/binary>>, maps:get(Key, P, #{})}
                || #{<<"schedulers">> := N} = P <- Ps]],
    States = lists:usort(lists:append([maps:keys(M) || {_, M} <- Rows0])),
    Header = [<<"configuration">> | States],
    Rows = [[Name | [pct(maps:get(S, M, null)) || S <- States]] || {Name, M} <- Rows0],
    case States of
        [] -> "  (no microstate accounting)\n";
        _ when Form =:= text -> beamlab_format_table:render(Header, Rows, #{indent => 2});
        _ -> beamlab_format_markdown:table(Header, Rows)
    end;
msacc_table(_, _, _, _) ->
    "  (no curve)\n".

%% The probe's remedies, or with a target the broker's: measured under
%% its load, ranked by the load's own figures.
remedies_section(#{<<"target">> := T}, Form) ->
    Load = lists:join(" ", maps:get(<<"load_command">>, T, [])),
    %% (the broker's OTP and flavour when asked for: --otp, --flavor)
    On = [case K of <<"otp">> -> [" on ", V]; _ -> [", ", V, " flavour"] end
          || K <- [<<"otp">>, <<"flavor">>], V <- [maps:get(K, T, null)], is_binary(V)],
    Title = io_lib:format("Remedies on the broker (~ts~ts, a fresh broker per repetition loaded by '~ts'; "
                          "ratios against its default, 95% intervals on the log scale; best first):~n",
                          [maps:get(<<"kind">>, T, <<"rabbitmq">>), On, Load]),
    Left = case maps:get(<<"already_in_effect">>, T, []) of
               [] -> [];
               L -> io_lib:format("  left out, the broker already runs with them: ~ts~n", [lists:join("; ", L)])
           end,
    Failed = [io_lib:format("  ~ts: ~b of ~b repetition(s) failed: ~ts~n",
                            [N, Runs - Ok, Runs, lists:join("; ", Es)])
              || #{<<"name">> := N, <<"runs">> := Runs, <<"ok_runs">> := Ok, <<"errors">> := Es}
                     <- maps:get(<<"configs">>, T, []), Ok < Runs, Es =/= []],
    [case Form of text -> ["\n", Title]; markdown -> ["**", string:trim(Title), "**\n\n"] end,
     remedies(maps:get(<<"remedies">>, T, []), Form,
              [{<<"throughput">>, <<"throughput">>}, {<<"latency_p99">>, <<"p99 latency">>},
               {<<"broker_cpu_per_msg">>, <<"broker CPU/msg">>}]),
     Left, Failed];
remedies_section(X, Form) ->
    ["\nRemedies against the default (ratios, ", intervals(maps:get(<<"remedies">>, X, [])),
     " on the log scale; best first):\n",
     remedies(maps:get(<<"remedies">>, X, []), Form,
              [{<<"goodput">>, <<"goodput">>}, {<<"capacity">>, <<"capacity">>},
               {<<"latency_p99">>, <<"p99 latency">>}, {<<"cpu_per_msg">>, <<"CPU/msg">>}])].

%% How the ranking's intervals were made (its rows say; a document from
%% before the correction: 95% each).
intervals([#{<<"correction">> := <<"bonferroni">>, <<"comparisons">> := M, <<"confidence">> := C} | _]) ->
    io_lib:format("~ts intervals, Bonferroni-corrected over ~b comparisons (remedies x figures) so that all of "
                  "them hold together at ~ts", [level(C), M, level(1 - (1 - C) * M)]);
intervals([#{<<"confidence">> := C} | _]) when is_number(C) ->
    io_lib:format("~ts intervals", [level(C)]);
intervals(_) ->
    "95% intervals".

level(C) when C >= 0.99 -> io_lib:format("~.2f%", [100 * C]);
level(C) -> io_lib:format("~b%", [round(100 * C)]).

remedies([], _, _) ->
    "  (none measured)\n";
remedies(Rs, Form, Columns) ->
    Header = [<<"#">>, <<"flags">>, <<"n">>, <<"verdict">>] ++ [H || {_, H} <- Columns] ++ [<<"why">>],
    Rows = [[integer_to_binary(I), Name, integer_to_binary(maps:get(<<"n">>, R, 0)), maps:get(<<"verdict">>, R, <<>>)]
            ++ [ratio(maps:get(K, R, #{})) || {K, _} <- Columns]
            ++ [iolist_to_binary(lists:join(",", maps:get(<<"why">>, R, [])))]
            || {I, #{<<"name">> := Name} = R} <- lists:zip(lists:seq(1, length(Rs)), Rs)],
    case Form of
        text -> beamlab_format_table:render(Header, Rows, #{indent => 2});
        markdown -> beamlab_format_markdown:table(Header, Rows)
    end.

ratio(#{<<"ratio">> := R, <<"ci">> := [Lo, Hi]}) when is_number(R) ->
    iolist_to_binary(io_lib:format("~.2fx (~.2f..~.2f)", [float(R), float(Lo), float(Hi)]));
ratio(#{<<"ratio">> := R}) when is_number(R) ->
    iolist_to_binary(io_lib:format("~.2fx", [float(R)]));
ratio(_) ->
    <<"?">>.

facts_lines(X) ->
    M = maps:get(<<"machine">>, X, #{}),
    Vm = maps:get(<<"vm">>, X, #{}),
    Freq = maps:get(<<"frequency">>, M, #{}),
    ["\nFacts: ",
     io_lib:format("~ts logical CPUs, ~ts physical cores, ~ts NUMA node(s), LLC groups ~ts, governor ~ts, "
                   "THP ~ts, sched_ext ~ts, isolated CPUs ~ts; ~ts: ~ts schedulers online, "
                   "may run on ~ts CPUs, cgroup quota ~ts CPUs, flags ~ts~n",
                   [v(maps:get(<<"logical_cpus">>, M, null)), v(maps:get(<<"physical_cores">>, M, null)),
                    v(maps:get(<<"numa_nodes">>, M, null)),
                    v(maps:get(<<"groups">>, maps:get(<<"llc_groups">>, M, #{}), null)),
                    v(maps:get(<<"governor">>, Freq, null)), v(maps:get(<<"thp">>, M, null)),
                    case maps:get(<<"sched_ext">>, M, #{}) of
                        #{<<"visible">> := true, <<"state">> := St} -> St;
                        _ -> <<"not visible">>
                    end,
                    v(maps:get(<<"isolated_cpus">>, M, [])),
                    case maps:is_key(<<"node">>, X) of true -> "the node"; false -> "the default VM" end,
                    v(maps:get(<<"schedulers_online">>, Vm, null)),
                    v(length(maps:get(<<"cpus_allowed">>, Vm, []))),
                    v(maps:get(<<"cgroup_quota_cpus">>, Vm, null)),
                    case maps:get(<<"emu_args">>, Vm, []) of
                        [] -> <<"none">>;
                        %% (the VM lists its emulator flags with a dash)
                        A -> lists:join(" ", [case F of <<"-", R/binary>> -> <<"+", R/binary>>; _ -> F end || F <- A])
                    end])].

v(null) -> <<"unknown">>;
v([]) -> <<"none">>;
v(L) when is_list(L) -> io_lib:format("~w", [L]);
v(B) when is_binary(B) -> B;
v(F) when is_float(F) -> io_lib:format("~.2f", [F]);
v(I) -> io_lib:format("~w", [I]).

num(X) when is_number(X), X >= 1.0e6 -> iolist_to_binary(io_lib:format("~.2fM", [X / 1.0e6]));
num(X) when is_number(X), X >= 1.0e3 -> iolist_to_binary(io_lib:format("~.1fk", [X / 1.0e3]));
num(X) when is_number(X) -> iolist_to_binary(io_lib:format("~.1f", [float(X)]));
num(_) -> <<"?">>.

us(X) when is_number(X), X >= 1000 -> iolist_to_binary(io_lib:format("~.2f ms", [X / 1000]));
us(X) when is_number(X) -> iolist_to_binary(io_lib:format("~.2f us", [float(X)]));
us(_) -> <<"?">>.

pct(X) when is_number(X) -> iolist_to_binary(io_lib:format("~.1f%", [100 * X]));
pct(_) -> <<"?">>.

%% @doc Two machines' doctor documents side by side
%% (`beamlab_result_doctor:compare/2'): what explains the difference
%% first, then the facts that differ, the curves and the default's
%% figures.
-spec compare(beamlab_result_doctor:comparison()) -> unicode:chardata().
compare(C) ->
    #{a := A, b := B, facts := Facts, curve := Curve, parted_at := Parted, default := Default,
      only_a := OnlyA, only_b := OnlyB} = C,
    Explain = case {OnlyA, OnlyB} of
                  {[], []} -> ["  the same findings on both machines\n"];
                  _ ->
                      [[io_lib:format("  only on ~ts: [~ts] ~ts~n      evidence: ~ts~n", [Who, Sev, T, E])
                        || #{severity := Sev, title := T, evidence := E} <- Fs]
                       || {Who, Fs} <- [{<<"B">>, OnlyB}, {<<"A">>, OnlyA}]]
              end,
    [io_lib:format("A: ~ts~nB: ~ts~n", [A, B]),
     case Parted of
         null -> "\nThe capacity curves stay within 0.8 .. 1.25 of each other at every scheduler count both measured.\n";
         N -> io_lib:format("\nThe capacity curves part at ~b scheduler~s (B/A outside 0.8 .. 1.25).~n",
                            [N, case N of 1 -> ""; _ -> "s" end])
     end,
     "\nWhat explains it (findings one machine has and the other has not, the most severe first):\n",
     Explain,
     "\nCapacity per scheduler count (msg/s):\n",
     beamlab_format_table:render([<<"schedulers">>, <<"A">>, <<"B">>, <<"B/A">>],
                                 [[integer_to_binary(N), num(Xa), num(Xb), x(R)]
                                  || #{schedulers := N, a := Xa, b := Xb, ratio := R} <- Curve], #{indent => 2}),
     "\nThe default configuration:\n",
     beamlab_format_table:render([<<"figure">>, <<"A">>, <<"B">>, <<"B/A">>],
                                 [[F, fig(F, Va), fig(F, Vb), x(R)]
                                  || #{figure := F, a := Va, b := Vb, ratio := R} <- Default], #{indent => 2}),
     "\nFacts that differ:\n",
     case Facts of
         [] -> "  none\n";
         _ -> beamlab_format_table:render([<<"fact">>, <<"A">>, <<"B">>],
                                          [[K, short(Va), short(Vb)] || #{fact := K, a := Va, b := Vb} <- Facts],
                                          #{indent => 2})
     end,
     io_lib:format("~nRecommendation on A: ~ts~nRecommendation on B: ~ts~n",
                   [v(maps:get(recommendation_a, C)), v(maps:get(recommendation_b, C))])].

x(R) when is_number(R) -> iolist_to_binary(io_lib:format("~.2fx", [float(R)]));
x(_) -> <<"-">>.

fig(<<"others_share">>, V) -> pct(V);
fig(<<"steal_share">>, V) -> pct(V);
fig(F, V) ->
    case binary:longest_common_suffix([F, <<"_us">>]) of
        3 -> us(V);
        _ -> num(V)
    end.

short(V) ->
    B = iolist_to_binary(v(V)),
    case byte_size(B) > 60 of
        true -> <<(binary:part(B, 0, 57))/binary, "...">>;
        false -> B
    end.
