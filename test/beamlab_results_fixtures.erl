-module(beamlab_results_fixtures).
%% Synthetic result documents of every kind, for compare/report tests while
%% (or in addition to) the real commands produce them. Deterministic.
-export([result/1, result/2, benchmark/4, telemetry/2]).

%% result(Kind) / result(Kind, Opts): Opts #{seconds, schedulers, factor,
%% partial, label}.
result(Kind) ->
    result(Kind, #{}).

%% Built as the JSON a saved file holds, then read through the one JSON
%% boundary, so it is exactly what `beamlab_result:load/1' gives.
result(Kind, Opts) ->
    {ok, Json} = beamlab_json:decode(beamlab_json:encode(json(Kind, Opts))),
    {ok, Doc} = beamlab_result:from_json(Json),
    Doc.

json(Kind, Opts) ->
    rand:seed(exsss, {1, 2, 3}),
    Secs = maps:get(seconds, Opts, 60),
    Scheds = maps:get(schedulers, Opts, 4),
    F = maps:get(factor, Opts, 1.0),
    #{schema => <<"beamlab.result">>, version => 1,
      tool => #{name => <<"beamlab">>, version => <<"0.1.0">>},
      kind => Kind,
      command => [<<"beamlab">>, Kind, <<"--save">>],
      started_at => <<"2026-11-22T03:00:00Z">>, finished_at => <<"2026-11-22T03:01:00Z">>,
      partial => maps:get(partial, Opts, false),
      %% The shape of beamlab_env:report/0, abridged.
      env => #{otp => #{release => <<"25">>, erts => <<"13.1.5">>, emu_flavor => <<"jit">>},
               schedulers => #{total => Scheds, online => Scheds, bind_type => <<"unbound">>},
               cpu => #{model => <<"Synthetic CPU @ 3.0GHz">>, logical_processors => 2},
               os => #{name => <<"linux">>, hostname => <<"fixture">>},
               memory => #{erlang => #{total => 20000000 + Scheds}},
               collected_at => <<"2026-11-22T03:01:00Z">>},
      params => #{duration => 1000, samples => 20},
      benchmarks => benchmarks(Kind, F, Secs),
      telemetry => telemetry(Secs, Scheds),
      findings => [#{id => <<"noisy_measurement">>, severity => <<"warning">>,
                     title => <<"Measurement is noisy">>,
                     evidence => <<"cv 12% on <b>queue</b>">>,
                     advice => <<"take more samples">>, data => #{}}],
      extra => #{}}.

benchmarks(<<"matrix">>, F, _Secs) ->
    [((benchmark(<<"S", (integer_to_binary(S))/binary, "/ring">>, <<"ring">>, <<"higher">>,
                noise(20, 1.0e6 * F * S * (1 - 0.08 * (S - 1)))))#{params => #{schedulers => S}})#{unit => <<"ops/s">>, metric => <<"throughput">>}
     || S <- [1, 2, 4, 8]];
benchmarks(<<"amqp">>, F, Secs) ->
    Pub = benchmark(<<"publish">>, <<"amqp">>, <<"higher">>, noise(Secs, 50000 * F)),
    Lat = benchmark(<<"latency">>, <<"amqp">>, <<"lower">>, noise(200, 900 / F)),
    [Pub#{unit => <<"msg/s">>, extra => #{per_second => noise(Secs, 50000 * F)}},
     Lat#{unit => <<"us">>, extra => #{latency_hist => hist_map(Lat)}}];
benchmarks(Kind, F, _Secs) ->
    Names = case Kind of
                <<"suite">> -> [<<"ping_pong">>, <<"skynet">>, <<"send_\"quoted\", <tag>">>];
                _ -> [<<"ok.">>]
            end,
    [benchmark(N, Kind, <<"lower">>, noise(30, 57.0 * F * I)) || {I, N} <- lists:zip(lists:seq(1, length(Names)), Names)].

benchmark(Name, Group, Better, Samples) ->
    #{name => Name, group => Group, metric => <<"time">>, unit => <<"ns">>, better => Better,
      samples => Samples,
      sample_info => #{count => length(Samples), kept => length(Samples), method => <<"all">>},
      stats => beamlab_stats:summary(Samples), params => #{}, counters => #{}, extra => #{}}.

noise(N, Mean) ->
    [Mean * (1 + 0.03 * rand:normal()) || _ <- lists:seq(1, N)].

%% A histogram snapshot where beamlab_stats_hist exists; otherwise none (the
%% report then simply has no percentile curve for it).
hist_map(#{samples := Samples}) ->
    case code:ensure_loaded(beamlab_stats_hist) of
        {module, _} ->
            H = beamlab_stats_hist:new(#{significant_digits => 2, max => 1000000}),
            [beamlab_stats_hist:record(H, round(S)) || S <- Samples],
            beamlab_stats_hist:to_map(beamlab_stats_hist:snapshot(H));
        _ ->
            #{}
    end.

%% Per-second telemetry in the shape of beamlab_runtime_telemetry:stop/1
%% (abridged): utilisation in percent, run queue, memory, and per-scheduler
%% utilisation where scheduler 2 collapses half way.
telemetry(Secs, Scheds) ->
    Ts = lists:seq(0, Secs - 1),
    #{t_ms => [1000 * T || T <- Ts],
      interval_ms => 1000,
      samples => Secs,
      util => [50 + 40 * math:sin(T / 7) || T <- Ts],
      run_queue => [T rem 5 || T <- Ts],
      ets_tables => [20 || _ <- Ts],
      memory => #{total => [30000000 + 1000 * T || T <- Ts]},
      util_schedulers =>
          [[case S =:= 2 andalso T > Secs div 2 of
                true -> 2.0;
                false -> 90 - 10 * S / Scheds
            end || S <- lists:seq(1, Scheds)] || T <- Ts]}.
