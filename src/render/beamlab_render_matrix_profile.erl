%%% @doc The text view of the profiles a matrix recorded (`matrix --target
%%% ... --profile'): for each configuration, how its profiled repetition
%%% was recorded (mode, what it records and costs, the broker's flavour and
%%% OS pid, samples), its load figures beside the measured repetitions'
%%% mean (what profiling cost in this run), the shares of threads and
%%% categories, and the top table of functions. Pure.
-module(beamlab_render_matrix_profile).

-export([render/2]).

%% @doc The profiles section ("" when the matrix recorded none).
-spec render(beamlab_result:result(), #{top => pos_integer()}) -> unicode:chardata().
render(Doc, Opts) ->
    case beamlab_result_profiles:of_matrix(Doc) of
        [] -> "";
        Ps -> [section(Name, P, Doc, maps:get(top, Opts, 15)) || {Name, P} <- Ps]
    end.


section(Name, P, Doc, Top) ->
    N = maps:get(<<"samples">>, P, 0),
    ["\nprofile of ", Name, io_lib:format(" (broker OS pid ~p, ~ts flavour): ~b samples at ~b Hz over ~ts s~n",
                                          [maps:get(<<"os_pid">>, P, null), maps:get(<<"flavor">>, P, <<"?">>), N,
                                           maps:get(<<"frequency">>, P, 0),
                                           beamlab_format_units:number(maps:get(<<"elapsed_ms">>, P, 0) / 1000)]),
     io_lib:format("mode ~ts: ~ts; cost: ~ts~n",
                   [maps:get(<<"mode">>, P, <<"?">>), maps:get(<<"mode_what">>, P, <<>>),
                    maps:get(<<"mode_cost">>, P, <<>>)]),
     cost_line(Name, Doc),
     shares("threads", maps:get(<<"threads">>, P, #{}), N, [<<"scheduler">>, <<"dirty_cpu">>, <<"dirty_io">>, <<"other">>]),
     shares("categories", maps:get(<<"categories">>, P, #{}), N, [<<"erlang">>, <<"emulator">>, <<"kernel">>]),
     case maps:get(<<"flavor">>, P, null) of
         <<"emu">> -> "note: the interpreter runs no JIT code: its time is in the emulator's C functions, "
                      "process_main (the loop that runs BEAM instructions) first\n";
         _ -> ""
     end,
     beamlab_render_profile:top_table(P, Top)].

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
            io_lib:format("profiled repetition: sending rate avg ~ts, ~.2f of the measured repetitions' mean ~ts~n",
                          [beamlab_format_units:value(V, <<"msg/s">>), V / M, beamlab_format_units:value(M, <<"msg/s">>)]);
        _ -> ""
    end.

shares(Title, Counts, N, Keys) ->
    Parts = [io_lib:format("~ts ~ts", [K, beamlab_format_units:percent(case N of 0 -> 0.0; _ -> maps:get(K, Counts, 0) / N end)])
             || K <- Keys],
    [Title, ": ", lists:join(", ", Parts), "\n"].
