%%% @doc The model of a doctor document for the report page
%%% (`priv/report/doctor.js' draws it): the recommendation and the
%%% findings first, the scaling curve per scheduler count (capacity and
%%% the load's goodput, every repetition as a point) with the USL fit
%%% drawn over it, microstate accounting per configuration (each state's
%%% share, to stack), and the remedies ranked with their ratios and
%%% intervals; with a system under test (`doctor --target rabbitmq'), the
%%% remedies ranked by its load's figures instead; on a running node
%%% (`doctor --node'), each scheduler's utilisation and its thread's
%%% migrations between CPUs. Pure; reads the document's JSON sections.
-module(beamlab_report_doctor).

-export([model/1]).

-export_type([model/0]).

-type model() :: #{atom() => term()}.

%% The ratios of a remedy's row: the probe's, a target's load's.
-define(PROBE, [<<"goodput">>, <<"capacity">>, <<"latency_p99">>, <<"cpu_per_msg">>]).
-define(TARGET, [<<"throughput">>, <<"latency_p99">>, <<"broker_cpu_per_msg">>]).

%% @doc The model, `null' for a document of another kind.
-spec model(beamlab_result:result() | map()) -> model() | null.
model(#{kind := doctor, extra := X} = R) ->
    Curve = maps:get(<<"curve">>, X, #{}),
    Points = [P || #{<<"schedulers">> := N} = P <- maps:get(<<"points">>, Curve, []), is_number(N)],
    Ns = [maps:get(<<"schedulers">>, P) || P <- Points],
    #{recommendation => maps:get(<<"recommendation">>, X, null),
      partial => maps:get(partial, R, false) =:= true,
      findings => [(maps:with([id, severity, title, evidence, advice], F))
                   #{confidence => maps:get(<<"confidence">>, maps:get(data, F, #{}), null)}
                   || F <- maps:get(findings, R, []), is_map(F)],
      curve => #{schedulers => Ns,
                 capacity => [num(maps:get(<<"capacity">>, P, null)) || P <- Points],
                 goodput => [num(maps:get(<<"goodput">>, P, null)) || P <- Points],
                 points => [[N, num(S)] || P <- Points, N <- [maps:get(<<"schedulers">>, P)],
                                           S <- maps:get(<<"capacity_samples">>, P, []), is_number(S)],
                 fit => fit(maps:get(<<"usl">>, Curve, #{}), Ns)},
      msacc => msacc(X, Points, <<"msacc">>),
      capacity_msacc => msacc(X, Points, <<"capacity_msacc">>),
      remedies => [remedy(Rm, ?PROBE) || Rm <- maps:get(<<"remedies">>, X, []), is_map(Rm)],
      target => target(maps:get(<<"target">>, X, null)),
      node => node_model(maps:get(<<"node">>, X, null))};
model(_) ->
    null.

%% A watched node's schedulers: each one's busy share (in %) and its
%% thread's migrations between CPUs per second (empty where the kernel
%% did not show them, e.g. a node on another host).
node_model(#{<<"utilisation_schedulers">> := [_ | _] = Us} = N) ->
    Ns = lists:seq(1, length(Us)),
    Secs = maps:get(<<"duration_s">>, N, null),
    Mig = case maps:get(<<"migrations">>, N, #{}) of
              #{<<"per_scheduler">> := [_ | _] = Per} when is_number(Secs), Secs > 0 ->
                  [num(C / Secs) || C <- lists:sublist(Per, length(Us))];
              _ -> []
          end,
    #{name => maps:get(<<"name">>, N, null),
      schedulers => Ns,
      utilisation => [num(100 * U) || U <- Us],
      migrations => Mig,
      migrations_per_s => num(maps:get(<<"per_s">>, maps:get(<<"migrations">>, N, #{}), null)),
      run_queue_mean => num(maps:get(<<"run_queue_mean">>, N, null))};
node_model(_) ->
    null.

%% The fitted law on a fine grid from 1 to the largest count measured.
fit(#{<<"lambda">> := L, <<"sigma">> := S, <<"kappa">> := K} = F, [_ | _] = Ns)
  when is_number(L), is_number(S), is_number(K) ->
    Max = lists:max(Ns),
    Grid = lists:usort([1 + (Max - 1) * I / 40 || I <- lists:seq(0, 40)]),
    #{sigma => float(S), kappa => float(K), model => maps:get(<<"model">>, F, null),
      peak_n => num(maps:get(<<"peak_n">>, F, null)), r2 => num(maps:get(<<"r2">>, F, null)),
      curve => [[num(N), num(beamlab_stats_usl:predict(#{lambda => L, sigma => S, kappa => K}, N))]
                || N <- Grid]};
fit(_, _) ->
    null.

%% `Key': msacc (under the load below capacity) or capacity_msacc (under
%% the saturating load).
msacc(X, Points, Key) ->
    %% (`doctor --node': the default is the running node, as found)
    Rows0 = [{case maps:is_key(<<"node">>, X) of true -> <<"node">>; false -> <<"default">> end,
              maps:get(Key, maps:get(<<"default">>, X, #{}), #{})}
             | [{<<"+S ", (integer_to_binary(maps:get(<<"schedulers">>, P)))/binary>>, maps:get(Key, P, #{})}
                || P <- Points]],
    Rows = [{L, M} || {L, M} <- Rows0, is_map(M), map_size(M) > 0],
    %% Sleep last: the stack reads as awake time from the left.
    States = lists:usort(lists:append([maps:keys(M) || {_, M} <- Rows])) -- [<<"sleep">>],
    Ordered = States ++ [<<"sleep">> || lists:any(fun({_, M}) -> maps:is_key(<<"sleep">>, M) end, Rows)],
    #{states => Ordered,
      rows => [#{label => L, shares => [num(maps:get(S, M, 0.0)) || S <- Ordered]} || {L, M} <- Rows]}.

target(#{} = T) ->
    #{kind => maps:get(<<"kind">>, T, <<"rabbitmq">>),
      load_command => maps:get(<<"load_command">>, T, []),
      already_in_effect => maps:get(<<"already_in_effect">>, T, []),
      failed => [#{name => N, runs => Runs, ok_runs => Ok, errors => Es}
                 || #{<<"name">> := N, <<"runs">> := Runs, <<"ok_runs">> := Ok, <<"errors">> := Es}
                        <- maps:get(<<"configs">>, T, []), is_integer(Ok), is_integer(Runs), Ok < Runs],
      remedies => [remedy(Rm, ?TARGET) || Rm <- maps:get(<<"remedies">>, T, []), is_map(Rm)]};
target(_) ->
    null.

remedy(R, Keys) ->
    Ratio = fun(K) ->
                    case maps:get(K, R, #{}) of
                        #{<<"ratio">> := V, <<"ci">> := [Lo, Hi]} -> [num(V), num(Lo), num(Hi)];
                        #{<<"ratio">> := V} when is_number(V) -> [num(V), null, null];
                        _ -> [null, null, null]
                    end
            end,
    maps:merge(maps:from_list([{binary_to_atom(K), Ratio(K)} || K <- Keys]),
               #{name => maps:get(<<"name">>, R, <<"?">>), verdict => maps:get(<<"verdict">>, R, null),
                 n => maps:get(<<"n">>, R, null), why => maps:get(<<"why">>, R, []),
                 %% the multiplicity correction of its intervals (a
                 %% document from before it: 95% each, uncorrected)
                 confidence => num(maps:get(<<"confidence">>, R, 0.95)),
                 correction => maps:get(<<"correction">>, R, <<"none">>),
                 comparisons => maps:get(<<"comparisons">>, R, null)}).

num(X) when is_float(X) -> float(round(X * 1.0e6) / 1.0e6);
num(X) when is_integer(X) -> X;
num(_) -> null.
