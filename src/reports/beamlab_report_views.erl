%%% @doc What each part of a result document is, read from its typed
%%% content (never from the command that made it), and the data of the
%%% chart that answers its question:
%%% <ul>
%%%   <li>{@link sweeps/1}: benchmarks that differ in one numeric parameter
%%%       (suite `--param a=1,2,3', any producer that sets `params'): one
%%%       line per series over that parameter, mean and interval;</li>
%%%   <li>{@link scaling/1}: throughput at several levels of concurrency
%%%       (a squeeze curve of workers, a matrix whose configurations differ
%%%       in their scheduler count, a parameter sweep over concurrency):
%%%       the points, speedup, efficiency and the Universal Scalability
%%%       Law fitted to them (`beamlab_stats_usl');</li>
%%%   <li>{@link latency/1}: latency histograms and percentile maps as a
%%%       percentile spectrum (50 .. 99.99);</li>
%%%   <li>{@link matrix/1}: a matrix's verdicts and every configuration's
%%%       repetitions per benchmark;</li>
%%%   <li>{@link marks/1}: findings that say when they fired, on the time
%%%       axis of the run's series;</li>
%%%   <li>{@link series_unit/2}: the unit of a series over time, for its
%%%       axis.</li>
%%% </ul>
%%% Every number is rounded to 6 significant digits ({@link num/1}) to keep
%%% the page small. Pure.
-module(beamlab_report_views).

-export([sweeps/1, scaling/1, latency/1, matrix/1, marks/1, claimed/1, measure/1,
         per_second/1, series_unit/2, key_bins/1, num/1, interval_method/1, partial_tail/1]).

-type point() :: [number()].
-type series() :: #{name := binary(), points := [point()]}.
-type sweep() :: #{param := binary(), metric := binary(), measure := binary() | null, unit := binary(),
                   better := beamlab_result:better(), log := boolean(), workload := binary(),
                   categorical := boolean(), ordinal := boolean(), method := binary(),
                   series := [series()], benchmarks := [binary()]}.
-type usl() :: #{lambda := number(), sigma := number(), kappa := number(),
                 model := usl | amdahl, peak_n := number() | null, peak_x := number() | null,
                 r2 := number(), curve := [point()]}.
-type scaling() :: #{title := binary(), axis := binary(), unit := binary(),
                     points := [point()], means := [point()], speedup := [point()], method := binary(),
                     efficiency := [point()], fit := usl() | null, benchmarks := [binary()]}.
-type spectrum() :: #{name := binary(), unit := binary(), points := [point()],
                      max := number() | null, count := number() | null}.
-type cell() :: #{config := binary(), mean := number() | null, ci := point() | null,
                  samples := [number()], change := number() | null, change_ci := point() | null,
                  p := number() | null, verdict := binary() | null, scenario := binary() | null,
                  %% a `~': the smallest slowdown the comparison catches 80% of the time
                  detectable => number()}.
-type matrix() :: #{baseline := binary(), configs := [beamlab_json:object()],
                    %% what its values are, each once ("mean", "fastest sample")
                    values := [binary()],
                    rows := [#{benchmark := binary(), unit := binary(), measure := binary() | null,
                               better := beamlab_result:better(), method := binary(),
                               workload := binary(),
                               %% what each dot (one fresh VM) is: "mean", "fastest sample"
                               value := binary(), cells := [cell()]}]}.
-type mark() :: #{title := binary(), severity := beamlab_result:severity(), from := number(),
                  to := number()}.
-export_type([sweep/0, scaling/0, spectrum/0, matrix/0, mark/0]).

%% Parameters that count concurrent workers: a sweep over one is scaling.
-define(CONCURRENCY, [<<"concurrency">>, <<"workers">>, <<"schedulers">>, <<"schedulers_online">>]).
%% The spectrum's percentiles, HdrHistogram's plot.
-define(SPECTRUM, [50.0, 75.0, 90.0, 95.0, 98.0, 99.0, 99.5, 99.9, 99.95, 99.99]).
%% Percentile keys of summary maps (message_load's latency_us) and their level.
-define(PCT_KEYS, [{<<"p50">>, 50.0}, {<<"median">>, 50.0}, {<<"p75">>, 75.0}, {<<"p90">>, 90.0},
                   {<<"p95">>, 95.0}, {<<"p99">>, 99.0}, {<<"p999">>, 99.9}, {<<"p9999">>, 99.99}]).
%% Nanoseconds in a unit of time.
-define(TIME_UNITS, [{<<"ns">>, 1.0}, {<<"us">>, 1.0e3}, {<<"ms">>, 1.0e6}, {<<"s">>, 1.0e9}]).

%%====================================================================
%% Sweeps and scaling
%%====================================================================

%% @doc Parameter sweeps other than over concurrency.
-spec sweeps(beamlab_result:result()) -> [sweep()].
sweeps(#{kind := doctor}) ->
    %% (the doctor's section draws its own curve and rankings)
    [];
sweeps(Doc) ->
    [S || {sweep, S} <- param_sweeps(Doc)].

%% @doc Throughput against concurrency, with the USL fit.
-spec scaling(beamlab_result:result()) -> [scaling()].
scaling(#{kind := doctor}) ->
    [];
scaling(#{benchmarks := Bs} = Doc) ->
    Squeeze = [scaling_view(<<(maps:get(name, B))/binary, ": throughput against workers">>, <<"workers">>,
                            Unit, [{C, S * Scale} || {C, Ss} <- Curve, S <- Ss], [maps:get(name, B)])
               || B <- Bs, Curve <- [squeeze_curve(B)], length(Curve) >= 2,
                  {Scale, Unit} <- [per_second(B)]],
    Matrix = [scaling_view(<<Inner/binary, ": throughput against schedulers">>, <<"schedulers">>,
                           Unit, Points, Names)
              || {Inner, Unit, Points, Names} <- matrix_levels(Bs)],
    Params = [scaling_view(<<(series_title(Name, M))/binary, ": throughput against ", P/binary>>, P, U,
                           Pts, Names)
              || {scaling, #{param := P, metric := M, series := Series}} <- param_sweeps(Doc),
                 #{name := Name, throughput := {U, Pts}, benchmarks := Names} <- Series],
    Squeeze ++ Matrix ++ Params.

%% @doc Names of the benchmarks a sweep, scaling or matrix view (or the
%% doctor's section) draws, which the page leaves out of its plain
%% per-benchmark charts.
-spec claimed(beamlab_result:result()) -> [binary()].
claimed(Doc) ->
    lists:usort(lists:append([maps:get(benchmarks, V) || V <- sweeps(Doc)])
                ++ lists:append([maps:get(benchmarks, V) || #{axis := A} = V <- scaling(Doc),
                                 A =/= <<"workers">>])
                ++ case matrix(Doc) =/= null orelse maps:get(kind, Doc, null) =:= doctor of
                       %% (a doctor's section draws its curve and remedies)
                       false -> [];
                       true -> [maps:get(name, B) || B <- maps:get(benchmarks, Doc)]
                   end).

param_sweeps(#{benchmarks := Bs}) ->
    Measured = [B || B <- Bs, is_map_key(stats, B), map_size(maps:get(params, B)) > 0],
    Groups = group(fun(#{metric := M, unit := U, better := Bt, params := P}) ->
                           {M, U, Bt, lists:sort(maps:keys(maps:without([<<"config">>], P)))}
                   end, Measured),
    lists:append([param_sweep(G) || {_, G} <- Groups, length(G) >= 2]).

param_sweep([#{metric := M, unit := U, better := Better} | _] = Bs) ->
    Keys = lists:usort(lists:append([maps:keys(P) || #{params := P} <- Bs])),
    Varying = [K || K <- Keys, length(lists:usort([maps:get(K, P, null) || #{params := P} <- Bs])) > 1],
    Numeric = [K || K <- Varying, K =/= <<"config">>,
                    lists:all(fun(#{params := P}) -> number(maps:get(K, P, null)) =/= error end, Bs)],
    case lists:reverse(lists:keysort(2, [{K, length(lists:usort([maps:get(K, P) || #{params := P} <- Bs]))}
                                         || K <- Numeric])) of
        [] -> [];
        [{X, _} | _] ->
            Others = Varying -- [X],
            BySeries = group(fun(#{params := P}) -> [{K, maps:get(K, P, null)} || K <- Others] end, Bs),
            Series = [#{name => series_name(Key), bs => lists:sort(fun(A, B) -> xval(X, A) =< xval(X, B) end, G)}
                      || {Key, G} <- BySeries,
                         length(lists:usort([xval(X, B) || B <- G])) >= 2],
            case Series of
                [] -> [];
                %% (CPU time per iteration against workers is not a
                %% throughput: drawn as it is, a sweep)
                _ -> [sweep_view(lists:member(X, ?CONCURRENCY) andalso M =/= <<"cpu">>, X, M, U, Better, Series)]
            end
    end.

sweep_view(false, X, M, U, Better, Series) ->
    Xs = [xval(X, B) || #{bs := G} <- Series, B <- G],
    Scale = x_scale(lists:usort([float(V) || V <- Xs])),
    {sweep, #{param => X, metric => M, unit => U, better => Better,
              measure => measure(hd(maps:get(bs, hd(Series)))),
              workload => workload([B || #{bs := G} <- Series, B <- G]),
              %% Two values are levels, not a range: points at their values,
              %% no line through values that were never measured.
              categorical => Scale =:= categorical,
              method => ci_method([B || #{bs := G} <- Series, B <- G]),
              log => Scale =:= log,
              ordinal => Scale =:= ordinal,
              series => [#{name => N, points => [[num(xval(X, B)) | mean_ci(B)] || B <- G]}
                         || #{name := N, bs := G} <- Series],
              benchmarks => [maps:get(name, B) || #{bs := G} <- Series, B <- G]}};
sweep_view(true, X, M, U, Better, Series) ->
    {scaling, #{param => X, metric => M,
                series => [#{name => N, throughput => throughput(Better, U, [{xval(X, B), B} || B <- G]),
                             benchmarks => [maps:get(name, B) || B <- G]}
                           || #{name := N, bs := G} <- Series]}}.

%% The x axis of a sweep over these distinct values (sorted), so that
%% every point is visible and apart from its neighbours:
%% - fewer than three values are levels (`categorical');
%% - positive values spanning two decades or more go on a log axis (a 0
%%   sits one decade below the smallest positive value's decade, past a
%%   marked break of the axis, as report.js draws it);
%% - else a linear axis;
%% - unless two neighbouring values would then sit closer than 1/25 of
%%   the axis (about 19 pixels of the plot): an `ordinal' axis, the
%%   measured values evenly spaced, a tick at each and none between.
x_scale(Vs) when length(Vs) < 3 ->
    categorical;
x_scale(Vs) ->
    Pos = [V || V <- Vs, V > 0],
    Log = Pos =/= [] andalso lists:max(Pos) / lists:min(Pos) >= 100,
    Mapped = case Log of
                 true ->
                     Floor = math:floor(math:log10(lists:min(Pos))) - 1,
                     [case V > 0 of true -> math:log10(V); false -> Floor end || V <- Vs];
                 false -> Vs
             end,
    Span = lists:max(Mapped) - lists:min(Mapped),
    Gaps = [B - A || {A, B} <- lists:zip(lists:droplast(Mapped), tl(Mapped))],
    case lists:min(Gaps) < Span / 25 of
        true -> ordinal;
        false when Log -> log;
        false -> linear
    end.

%% What the benchmarks of a view ran: their common group (a suite's
%% workload), else the common name before its parameters; in a matrix,
%% whose groups are its configurations, the inner point (`extra.point',
%% else the inner benchmark) before its parameters.
workload(Bs) ->
    case lists:usort([what_ran(B) || B <- Bs]) of
        [W] -> W;
        _ -> <<>>
    end.

what_ran(#{extra := #{<<"inner_benchmark">> := _}} = B) -> hd(binary:split(ran(B), <<"[">>));
what_ran(#{group := G}) when G =/= <<>>, G =/= <<"run">> -> G;
what_ran(B) -> hd(binary:split(ran(B), <<"[">>)).

ran(#{extra := #{<<"point">> := P}}) when is_binary(P) -> P;
ran(#{extra := #{<<"inner_benchmark">> := I}}) when is_binary(I) -> I;
ran(#{name := N}) -> N.

%% How the intervals of these benchmarks were made, as the document says
%% (`stats.ci_method'), else the mean's Student t interval it has always
%% carried.
ci_method(Bs) ->
    case lists:usort([interval_method(B) || B <- Bs]) of
        [Method] -> Method;
        Methods -> iolist_to_binary(lists:join(" or ", Methods))
    end.

%% @doc What a benchmark measures, in words, when its unit alone does not
%% say it (#35: a chart of `--metric cpu' said only `(ns)', as if it were
%% wall-clock time; a suite's `fib (us)' said neither): the document's
%% own `measure' (`CPU time per iteration', `wall-clock time per
%% repetition', `reductions per iteration', ...; documents written before
%% it are read with it where they can tell, `beamlab_result'); `null'
%% for the rest, whose unit (iterations/s, msg/s) or name says it.
-spec measure(#{measure => binary(), atom() => term()}) -> binary() | null.
measure(#{measure := M}) when is_binary(M) ->
    M;
measure(_) ->
    null.

%% @doc How a benchmark's interval of the mean was made, in words, as its
%% document says (`stats.ci_mean_method': `log_delta', `student', `none'),
%% else the Student t interval documents carried before they said.
-spec interval_method(#{stats => map(), atom() => term()}) -> binary().
interval_method(#{stats := S}) ->
    case maps:get(ci_mean_method, S, maps:get(<<"ci_mean_method">>, S, null)) of
        null -> <<"Student t interval of the mean">>;
        M -> method_text(text(M))
    end;
interval_method(_) ->
    <<"no interval">>.

method_text(<<"log_delta">>) -> <<"interval of the mean on the log scale (delta method)">>;
method_text(<<"student">>) -> <<"Student t interval of the mean">>;
method_text(<<"none">>) -> <<"no interval">>;
method_text(Other) -> <<Other/binary, " interval of the mean">>.

series_title(<<>>, M) -> M;
series_title(N, M) -> <<N/binary, " ", M/binary>>.

series_name([]) -> <<>>;
series_name(KVs) ->
    iolist_to_binary(lists:join(", ", [[K, "=", text(V)] || {K, V} <- KVs])).

xval(X, #{params := P}) ->
    {ok, V} = number(maps:get(X, P)),
    V.

number(V) when is_number(V) -> {ok, V};
number(B) when is_binary(B) ->
    case {string:to_integer(B), string:to_float(B)} of
        {{I, <<>>}, _} -> {ok, I};
        {_, {F, <<>>}} -> {ok, F};
        _ -> error
    end;
number(_) -> error.

%% Throughput points of benchmarks measured at concurrency levels: higher
%% is better as it is (per second where the unit counts per sample), a
%% time per operation as operations per second.
throughput(Better, Unit, LevelBs) ->
    {Conv, TUnit} = rate(Better, Unit, element(2, hd(LevelBs))),
    {TUnit, [{N, Conv(S)} || {N, B} <- LevelBs, S <- maps:get(samples, B), is_number(S), S > 0]}.

rate(higher, _Unit, B) ->
    {Scale, U} = per_second(B),
    {fun(V) -> V * Scale end, U};
rate(lower, Unit, _B) ->
    case lists:keyfind(Unit, 1, ?TIME_UNITS) of
        {_, Ns} -> {fun(V) -> 1.0e9 / (V * Ns) end, <<"ops/s">>};
        false -> {fun(V) -> 1 / V end, <<"1/", Unit/binary>>}
    end.

%% @doc The unit of a series over time named `Key' (a telemetry key such
%% as `memory.total' or `util', a per-second key of a benchmark such as
%% `series.goodput'): the unit of the run's metric of that name when
%% `Metrics' (metric => unit) has one, else what its name says
%% (`_us', `_per_s', `memory.', `util', ...); `<<"count">>' for the rest
%% (processes, run queue lengths, ports).
-spec series_unit(binary(), #{binary() => binary()}) -> binary().
series_unit(Key, Metrics) ->
    Last = lists:last(binary:split(Key, <<".">>, [global])),
    case Metrics of
        #{Last := Unit} -> Unit;
        _ -> named_unit(Key, Last)
    end.

named_unit(<<"memory.", _/binary>>, _) -> <<"bytes">>;
named_unit(<<"growth.memory_", _/binary>>, _) -> <<"bytes">>;
named_unit(<<"rates.", _/binary>>, _) -> <<"iterations/s">>;
named_unit(<<"util", _/binary>>, _) -> <<"%">>;
named_unit(<<"load", _/binary>>, _) -> <<"load average">>;
named_unit(_, Last) ->
    %% A rate names what it counts: reductions_per_s is reductions/s (a
    %% bare "/s" or "1/s" reads as a frequency of nothing).
    Suffixes = [{<<"_bytes_per_s">>, <<"bytes/s">>}, {<<"_bytes">>, <<"bytes">>},
                {<<"_per_s">>, <<(per_s_counted(Last))/binary, "/s">>},
                {<<"_pct">>, <<"%">>}, {<<"_cores">>, <<"cores">>}, {<<"_usec">>, <<"us">>},
                {<<"_us">>, <<"us">>}, {<<"_ms">>, <<"ms">>}, {<<"_ns">>, <<"ns">>}],
    case [U || {Suffix, U} <- Suffixes, ends_with(Last, Suffix)] of
        [U | _] -> U;
        [] -> <<"count">>
    end.

%% What a `X_per_s' series counts: X, its words spaced.
per_s_counted(Last) ->
    case binary:split(Last, <<"_per_s">>) of
        [<<>> | _] -> <<"events">>;
        [X | _] -> binary:replace(X, <<"_">>, <<" ">>, [global])
    end.

ends_with(Bin, Suffix) ->
    byte_size(Bin) >= byte_size(Suffix)
        andalso binary:part(Bin, byte_size(Bin) - byte_size(Suffix), byte_size(Suffix)) =:= Suffix.

%% @doc True when the last interval of a time axis (sample times,
%% ascending) is a partial one: shorter than 90% of the shortest interval
%% before it (a sampler's last sample taken when the run stopped between
%% two ticks; the shortest, as a silent node makes longer intervals,
%% never shorter ones). Drawn, it invents a fall or a swing; the report
%% leaves it out and says so. Needs three times (two intervals) to tell.
-spec partial_tail([number()]) -> boolean().
partial_tail(Ts) when length(Ts) >= 3 ->
    Steps = [B - A || {A, B} <- lists:zip(lists:droplast(Ts), tl(Ts))],
    Shortest = lists:min(lists:droplast(Steps)),
    Shortest > 0 andalso lists:last(Steps) < 0.9 * Shortest;
partial_tail(_) ->
    false.

%% @doc As `beamlab_format_units:per_second/1'.
-spec per_second(beamlab_result:benchmark()) -> {number(), binary()}.
per_second(B) ->
    beamlab_format_units:per_second(B).

squeeze_curve(#{extra := #{<<"squeeze_curve">> := Curve}}) when is_list(Curve) ->
    [{C, [S || S <- Ss, is_number(S)]} || #{<<"concurrency">> := C, <<"samples">> := Ss} <- Curve,
                                          is_number(C), is_list(Ss)];
squeeze_curve(_) ->
    [].

%% A matrix whose configurations each ran at their own scheduler count:
%% per inner benchmark, its throughput at each count.
matrix_levels(Bs) ->
    %% (CPU time per iteration is not a rate: 1/it is no throughput)
    Levels = [{Inner, S, B} || B = #{extra := #{<<"inner_benchmark">> := Inner,
                                                <<"schedulers_online">> := S}} <- Bs,
                               is_integer(S), S > 0, is_map_key(stats, B), maps:get(metric, B, <<>>) =/= <<"cpu">>],
    [begin
         #{better := Better, unit := Unit} = hd(G),
         {TUnit, Pts} = throughput(Better, Unit, [{S, B} || {_, S, B} <- Group]),
         {Inner, TUnit, Pts, [maps:get(name, B) || {_, _, B} <- Group]}
     end || {Inner, Group} <- group(fun({I, _, _}) -> I end, Levels),
            G <- [[B || {_, _, B} <- Group]],
            Counts <- [[S || {_, S, _} <- Group]],
            length(Counts) >= 2, length(lists:usort(Counts)) =:= length(Counts)].

scaling_view(Title, Axis, Unit, Points, Names) ->
    Levels = group(fun({N, _}) -> N end, lists:keysort(1, Points)),
    Means = [{N, [X || {_, X} <- G]} || {N, G} <- Levels],
    {N0, X0s} = hd(Means),
    M0 = mean(X0s),
    Speedup = [{N, case M0 > 0 of true -> mean(Xs) / M0; false -> 0.0 end} || {N, Xs} <- Means],
    #{title => Title, axis => Axis, unit => Unit,
      method => interval_method(#{stats => beamlab_stats:summary(X0s)}),
      points => [[num(N), num(X)] || {N, X} <- Points],
      means => [[num(N) | ci(Xs)] || {N, Xs} <- Means],
      speedup => [[num(N), num(S)] || {N, S} <- Speedup],
      efficiency => [[num(N), num(S / (N / N0))] || {N, S} <- Speedup],
      fit => case beamlab_stats_usl:fit(Points) of
                 {ok, F} -> fit_view(F, [N || {N, _} <- Means]);
                 {error, _} -> null
             end,
      benchmarks => Names}.

fit_view(#{lambda := L, sigma := S, kappa := K, model := Model, peak_n := PN, peak_x := PX, r2 := R2} = F,
         Ns) ->
    Max = lists:max(Ns),
    %% The curve reaches past the peak when it is near, to show the fall.
    End = case PN of
              _ when PN =:= infinity; PN > 2 * Max -> Max;
              _ -> max(Max, PN * 1.25)
          end,
    Start = min(1, lists:min(Ns)),
    Steps = 60,
    #{lambda => num(L), sigma => num(S), kappa => num(K), model => Model, r2 => num(R2),
      peak_n => inf_null(PN), peak_x => inf_null(PX),
      curve => [[num(N), num(beamlab_stats_usl:predict(F, N))]
                || I <- lists:seq(0, Steps), N <- [Start + (End - Start) * I / Steps]]}.

inf_null(infinity) -> null;
inf_null(V) -> num(V).

%%====================================================================
%% Latency spectra
%%====================================================================

%% @doc Percentile spectra of every latency histogram snapshot (any key
%% with `hist' in a benchmark's `extra' or `counters') and percentile map
%% (`p50', `p99', ... keys, unit from a `_us'/`_ms'/`_ns' suffix).
-spec latency(beamlab_result:result()) -> [spectrum()].
latency(#{kind := doctor}) ->
    [];
latency(#{benchmarks := Bs}) ->
    lists:append([bench_spectra(B) || B <- Bs]).

%% A histogram has the whole spectrum: the summaries beside it repeat it.
bench_spectra(#{name := Name, unit := Unit} = B) ->
    Maps = [{K, key_bins(V)} || {K, V} <- lists:sort(maps:to_list(maps:merge(key_bins(maps:get(counters, B, #{})),
                                                                             key_bins(maps:get(extra, B, #{}))))),
                                is_map(V)],
    Spectra = [S || {K, V} <- Maps, S <- spectrum(Name, Unit, K, V)],
    case [S || S = #{name := N} <- Spectra, N =:= Name] of
        [] -> Spectra;
        FromHist -> FromHist
    end.

spectrum(Name, Unit, Key, V) ->
    case binary:match(Key, <<"hist">>) =/= nomatch andalso beamlab_stats_hist:from_map(V) of
        {ok, Snap} ->
            case beamlab_stats_hist:count(Snap) of
                0 -> [];
                Count ->
                    Ps = beamlab_stats_hist:percentiles(Snap, ?SPECTRUM),
                    [#{name => Name, unit => Unit, count => Count,
                       max => num(beamlab_stats_hist:percentile(Snap, 100.0)),
                       points => [[P, num(X)] || {P, X} <- lists:zip(?SPECTRUM, Ps), is_number(X)]}]
            end;
        _ ->
            Points = lists:usort([[P, num(X)] || {K, P} <- ?PCT_KEYS, X <- [maps:get(K, V, null)], is_number(X)]),
            case length(Points) >= 2 of
                true -> [#{name => <<Name/binary, " ", Key/binary>>, unit => suffix_unit(Key, Unit),
                           count => maps:get(<<"count">>, V, null),
                           max => case maps:get(<<"max">>, V, null) of
                                      M when is_number(M) -> num(M);
                                      _ -> null
                                  end,
                           points => Points}];
                false -> []
            end
    end.

suffix_unit(Key, Default) ->
    case [U || {U, _} <- ?TIME_UNITS, binary:longest_common_suffix([Key, <<"_", U/binary>>]) =:= byte_size(U) + 1] of
        [U | _] -> U;
        [] -> Default
    end.

%%====================================================================
%% Matrix
%%====================================================================

%% @doc A matrix document's configurations and, per inner benchmark, each
%% configuration's mean, interval, repetitions and verdict against the
%% baseline; `null' for any other document.
-spec matrix(beamlab_result:result()) -> matrix() | null.
matrix(#{extra := #{<<"configs">> := Configs}, benchmarks := Bs, params := P} = Doc) when is_list(Configs) ->
    Rows = group(fun(B) -> inner(B) end, Bs),
    #{baseline => maps:get(<<"baseline">>, P, null),
      values => [list_to_binary(beamlab_result_compare:level_words(L)) || L <- beamlab_result_compare:vm_levels(Doc)],
      configs => [maps:with([<<"name">>, <<"status">>, <<"schedulers_online">>, <<"runs">>, <<"ok_runs">>,
                             <<"errors">>], C) || C <- Configs, is_map(C)],
      rows => [#{benchmark => Inner, unit => element(2, per_second(hd(G))), better => maps:get(better, hd(G)),
                 measure => row_measure(hd(G), Workload, Inner),
                 workload => Workload,
                 method => ci_method(G),
                 value => list_to_binary(beamlab_result_compare:level_words(beamlab_result_compare:vm_level(hd(G)))),
                 cells => [cell(B) || B <- G]}
               || {Inner, G} <- Rows,
                  %% what ran, as the title names it: the inner suite's point
                  %% (`extra.point'), else the inner benchmark
                  Workload <- [ran(hd(G))]]};
matrix(_) ->
    null.

%% What a row measures, for its title after its workload: the document's
%% `measure'; else, for a point's other metric (`ring[k=0]/total' of a
%% suite written before its metrics said their measure), that metric
%% (`ring[k=0]: total (ms)', as the suite's own charts name it), never
%% the point's name glued to it; `null' where the benchmark is what ran
%% and its unit says the measure (iterations/s).
row_measure(B, Workload, Inner) ->
    case measure(B) of
        null when Workload =/= Inner -> maps:get(metric, B, null);
        M -> M
    end.

inner(#{extra := #{<<"inner_benchmark">> := I}}) -> I;
inner(#{name := N}) -> N.

%% Iterations counted per sample of D ms are drawn per second, as the
%% command line prints them (`iter/s').
cell(#{group := Config, samples := Samples} = B) ->
    S = maps:get(stats, B, #{}),
    C = maps:get(comparison, B, #{}),
    {Scale, _} = per_second(B),
    Sc = fun(X) when is_number(X) -> X * Scale; (X) -> X end,
    Cell = #{config => Config,
      %% a preset's scenario: its configurations are compared within it
      scenario => maps:get(<<"scenario">>, maps:get(params, B, #{}), null),
      mean => num(Sc(maps:get(mean, S, null))),
      ci => case {maps:get(ci_mean, S, null), maps:get(n, S, 0)} of
                {{Lo, Hi}, N} when N >= 2 -> pair({Sc(Lo), Sc(Hi)});
                _ -> null
            end,
      samples => [num(Sc(X)) || X <- Samples, is_number(X)],
      change => num(maps:get(change, C, null)),
      change_ci => pair(maps:get(ci, C, null)),
      p => num(maps:get(p_value, C, null)),
      verdict => case maps:get(verdict, C, null) of
                     null -> null;
                     V -> atom_to_binary(V)
                 end},
    %% what a `~' could have seen (#35), as the command line says it
    case C of
        #{verdict := no_difference, detectable := D} when is_number(D) -> Cell#{detectable => num(D)};
        _ -> Cell
    end.

%%====================================================================
%% Findings on the time axis
%%====================================================================

%% @doc Findings whose data say when they fired (`from_ms', `to_ms' on
%% the telemetry's clock, or `last_ms' when the evidence runs past
%% `to_ms'), in seconds on that clock (from the start of the recording,
%% as the evidence and the time axis tell them).
-spec marks(beamlab_result:result()) -> [mark()].
marks(#{findings := Fs}) ->
    [#{title => Title, severity => Sev, from => num(From / 1000), to => num(To / 1000)}
     || #{title := Title, severity := Sev, data := #{<<"from_ms">> := From, <<"to_ms">> := To0} = D} <- Fs,
        %% the interval the finding states: a growth finding's evidence
        %% runs to its last sample (`last_ms'), past the one that raised it
        To <- [case maps:get(<<"last_ms">>, D, null) of L when is_number(L) -> max(L, To0); _ -> To0 end],
        is_number(From), is_number(To)].

%%====================================================================
%% Helpers
%%====================================================================

%% @doc A map with binary keys (atom keys converted, others dropped).
-spec key_bins(term()) -> #{binary() => term()}.
key_bins(M) when is_map(M) ->
    maps:fold(fun(K, V, Acc) when is_atom(K) -> Acc#{atom_to_binary(K, utf8) => V};
                 (K, V, Acc) when is_binary(K) -> Acc#{K => V};
                 (_, _, Acc) -> Acc
              end, #{}, M);
key_bins(_) ->
    #{}.

%% @doc A number rounded to 6 significant digits (floats; integers and
%% other terms unchanged), which keeps the page small.
-spec num(T) -> T | number().
num(I) when is_integer(I) -> I;
num(F) when is_float(F), abs(F) < 1.0e-200 -> 0;
num(F) when is_float(F) ->
    Digits = 6 - 1 - floor(math:log10(abs(F))),
    Scale = math:pow(10, Digits),
    round(F * Scale) / Scale;
num(Other) -> Other.

pair({Lo, Hi}) -> [num(Lo), num(Hi)];
pair(_) -> null.

mean(Xs) -> lists:sum(Xs) / length(Xs).

%% [mean, lo, hi, n] of a benchmark, or of values.
mean_ci(#{stats := #{mean := M, n := N} = S}) ->
    case maps:get(ci_mean, S, undefined) of
        %% One or two values have no interval (docs/statistics.md), whatever
        %% an older document gives them: no band, never a band of width 0.
        {Lo, Hi} when N >= 3 -> [num(M), num(Lo), num(Hi), N];
        _ -> [num(M), null, null, N]
    end.

ci([X]) -> [num(X), null, null, 1];
ci(Xs) -> mean_ci(#{stats => beamlab_stats:summary(Xs)}).

text(V) when is_binary(V) -> V;
text(V) -> iolist_to_binary(io_lib:format("~tp", [V])).

%% Groups by key in first-seen order.
group(KeyFun, Items) ->
    {Order, Map} = lists:foldl(fun(I, {O, M}) ->
                                       K = KeyFun(I),
                                       case M of
                                           #{K := L} -> {O, M#{K := [I | L]}};
                                           _ -> {[K | O], M#{K => [I]}}
                                       end
                               end, {[], #{}}, Items),
    [{K, lists:reverse(maps:get(K, Map))} || K <- lists:reverse(Order)].
