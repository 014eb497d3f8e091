%%% @doc The text view of the profiles a matrix recorded (`matrix --target
%%% ... --profile'): for each configuration, the broker's OS pid and
%%% flavour, what its profiled repetition's load reached beside the
%%% measured repetitions' mean (what profiling cost in this run), then the
%%% profile as `beamlab profile' shows it (mode and cost, thread and
%%% category shares, the top table). Pure.
-module(beamlab_render_matrix_profile).

-export([render/2]).

%% @doc The profiles section ("" when the matrix recorded none).
-spec render(beamlab_result:result(), #{top => pos_integer(), unicode => boolean()}) -> unicode:chardata().
render(Doc, Opts) ->
    [[section(Name, P, Doc, Opts) || {Name, P} <- beamlab_result_profiles:of_matrix(Doc)],
     [capture(Name, C, Opts) || {Name, C} <- beamlab_result_profiles:captures_of_matrix(Doc)]].

capture(Name, {error, Line}, _Opts) ->
    ["
capture in ", Name, ": ", Line, "
"];
capture(Name, {ok, #{extra := #{<<"capture">> := C}} = CapDoc}, Opts) ->
    Hottest = case maps:get(<<"calls">>, C, []) of
                  [#{<<"function">> := F, <<"own_share">> := S} | _] when is_number(S) ->
                      io_lib:format("hottest function (own time): ~ts, ~ts~n", [F, beamlab_format_units:percent(S)]);
                  _ -> ""
              end,
    ["
capture in ", Name, " (its own repetition after the measured ones)
", Hottest,
     beamlab_render_capture:render(CapDoc, #{top => min(10, maps:get(top, Opts, 10))})];
capture(_, _, _) ->
    "".

section(Name, #{extra := #{<<"profile">> := P}} = ProfileDoc, Doc, Opts) ->
    ["\nprofile of ", Name, io_lib:format(" (OS pid ~p, ~ts flavour, its own repetition after the measured ones)~n",
                                          [maps:get(<<"os_pid">>, P, null), maps:get(<<"flavor">>, P, <<"?">>)]),
     cost_line(Name, Doc),
     beamlab_render_profile:render(ProfileDoc, #{top => maps:get(top, Opts, 15),
                                                  unicode => maps:get(unicode, Opts, true)}),
     erlang_functions(P)].

%% The JIT's own code, which the top table (dominated by the emulator's
%% C functions) may not reach: the Erlang functions under which most
%% samples fall (total: with what they call, as perf report shows it by
%% default), counted from the recorded stacks, and their self time.
erlang_functions(P) ->
    N = maps:get(<<"samples">>, P, 0),
    Names = maps:get(<<"names">>, P, #{}),
    Erlang = fun(F) -> maps:get(F, Names, null) =:= <<"erlang">> end,
    {Total, Self} =
        lists:foldl(fun([Stack, C], {T, S}) ->
                            Frames = binary:split(Stack, <<";">>, [global]),
                            T1 = lists:foldl(fun(F, A) -> A#{F => maps:get(F, A, 0) + C} end, T,
                                             lists:usort([F || F <- Frames, Erlang(F)])),
                            Leaf = lists:last(Frames),
                            S1 = case Erlang(Leaf) of
                                     true -> S#{Leaf => maps:get(Leaf, S, 0) + C};
                                     false -> S
                                 end,
                            {T1, S1}
                    end, {#{}, #{}}, maps:get(<<"stacks">>, P, [])),
    Top = lists:sublist(lists:reverse(lists:keysort(2, maps:to_list(Total))), 10),
    case Top of
        [] -> "";
        _ when N > 0 ->
            Pct = fun(C) -> beamlab_format_units:percent(C / N) end,
            ["hottest Erlang functions (total, self):\n",
             [io_lib:format("  ~-50ts ~7ts ~7ts~n", [F, Pct(T), Pct(maps:get(F, Self, 0))]) || {F, T} <- Top]];
        _ -> ""
    end.

%% The profiled repetition's sending rate against the measured
%% repetitions' mean: what profiling cost the load in this run.
cost_line(Name, #{benchmarks := Bs, extra := #{<<"configs">> := Cs}}) ->
    Metric = <<"sending rate avg">>,
    Measured = [M || #{group := G, extra := #{<<"inner_benchmark">> := I}, stats := #{mean := M}} <- Bs,
                     G =:= Name, I =:= Metric],
    Profiled = [V || #{<<"name">> := N, <<"profiled">> := #{<<"result">> := #{<<"benchmarks">> := PBs}}} <- Cs,
                     N =:= Name, #{<<"name">> := BN, <<"samples">> := [V]} <- PBs, BN =:= Metric],
    case {Measured, Profiled} of
        {[M | _], [V | _]} when M > 0 ->
            io_lib:format("load while profiled: sending rate avg ~ts, ~.2f of the measured repetitions' mean (~ts)~n",
                          [beamlab_format_units:value(V, <<"msg/s">>), V / M, beamlab_format_units:value(M, <<"msg/s">>)]);
        _ -> ""
    end.
