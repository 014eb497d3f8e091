-module(beamlab_engine_checks_tests).
-include_lib("eunit/include/eunit.hrl").

c(Others, Own) ->
    #{others_cores => Others, own_cores => Own, machine_cores => Others + Own, window_ms => 3000}.

%% Other processes using half the CPUs or more: load_high, saying what was
%% measured; all of them: critical.
load_high_test() ->
    [F] = beamlab_engine_checks:load_high(c(1.2, 0.8), 2),
    ?assertMatch(#{id := <<"load_high">>, severity := warning,
                   data := #{<<"others_cores">> := 1.2, <<"cores">> := 2, <<"window_ms">> := 3000}}, F),
    ?assertNotEqual(nomatch, binary:match(maps:get(evidence, F),
                                          <<"other processes used 1.20 of 2 CPUs during the measurement (3.0 s)">>)),
    ?assertMatch([#{severity := critical}], beamlab_engine_checks:load_high(c(2.0, 0.0), 2)).

%% beamlab's own work, however busy, is not a competitor.
own_work_is_quiet_test() ->
    ?assertEqual([], beamlab_engine_checks:load_high(c(0.1, 2.0), 2)),
    ?assertEqual([], beamlab_engine_checks:load_high(c(0.9, 1.1), 2)).

%% A window of real time on this machine: nothing invented off Linux, a
%% finding (if any) only with its evidence.
competition_window_test() ->
    Start = beamlab_engine_checks:competition_start(),
    Fs = beamlab_engine_checks:competition(Start, measured),
    case os:type() of
        {unix, linux} ->
            [?assert(maps:get(<<"window_ms">>, D) >= 200) || #{data := D} <- Fs];
        _ ->
            ?assertEqual([], Fs)
    end,
    %% interrupted at once: a window too short to say anything
    ?assertEqual([], beamlab_engine_checks:competition(beamlab_engine_checks:competition_start(), interrupted)).
