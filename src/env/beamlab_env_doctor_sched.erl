%%% @doc The doctor's per-scheduler reasoning, pure: the finding for
%%% "a few schedulers at 100% while the others idle" (the pattern of the
%%% 2025 forum report's utilisation dump), from each scheduler's busy
%%% share in several observations (the probe's repetitions, or a running
%%% node's samples), with the run queue and the kernel's migrations of
%%% the scheduler threads as evidence. A mean utilisation hides the
%%% pattern: two schedulers at 100% and two idle average 50%.
%%%
%%% Thresholds are shares (see docs/doctor.md): a scheduler is hot at
%%% 90% busy or more, idle at 25% or less; the pattern must show in at
%%% least half the observations.
%%%
%%% Idle schedulers beside busy ones are lost capacity only when the load
%%% offered them work: judged from evidence sampled while it ran, never
%%% from what the load was meant to be. The evidence is the share of
%%% samples in which one scheduler had work waiting while another had
%%% none (`stranded', the probe's `active_tasks' samples) or, where that
%%% is not sampled (a running node), processes waiting in the run queues
%%% (1 or more on average). Without it the picture is a load that was not
%%% parallel, or the VM's load compaction keeping a light load on few
%%% schedulers: information on a node, no finding at all under the
%%% probe's load (`unoffered => none'), whose figures would then describe
%%% the load, not the machine.
-module(beamlab_env_doctor_sched).

-export([imbalance/1, offered/1, pattern/1, mean_vector/1]).

-export_type([evidence/0]).

%% `samples': one list per observation, each online normal scheduler's
%% busy share (0..1) in scheduler order; `stranded': the share of the
%% run-queue samples in which a scheduler had work waiting while another
%% had none (`null' when not sampled); `active_mean': each scheduler's
%% runnable processes on average; `unoffered': what an imbalance with no
%% evidence of offered work is (`info', the default, or `none'); `where':
%% how the text names the observations.
-type evidence() :: #{samples := [[number()]], run_queue_mean => number() | null,
                      migrations_per_s => number() | null, stranded => number() | null,
                      active_mean => [number()], unoffered => info | none,
                      where => binary()}.

-define(HOT, 0.9).
-define(IDLE, 0.25).
-define(SHOWN, 0.5).     % share of observations with the pattern to raise it
-define(SURE, 0.8).      % ... to be sure of it (with at least 3 observations)
-define(STRANDED, 0.5).  % share of samples with work waiting beside an idle scheduler
-define(WAITING, 1).     % processes waiting in the run queues on average

%% @doc Whether one observation shows the pattern: at least two online
%% schedulers, at least one hot and at least one idle. Returns the hot
%% and idle schedulers' numbers (1-based) when it does.
-spec pattern([number()]) -> {true, [pos_integer()], [pos_integer()]} | false.
pattern(Us) when length(Us) >= 2 ->
    Numbered = lists:zip(lists:seq(1, length(Us)), Us),
    Hot = [I || {I, U} <- Numbered, U >= ?HOT],
    Idle = [I || {I, U} <- Numbered, U =< ?IDLE],
    case Hot =/= [] andalso Idle =/= [] of
        true -> {true, Hot, Idle};
        false -> false
    end;
pattern(_) ->
    false.

%% @doc The element-wise mean of the observations that have the most
%% common length (the schedulers online may differ between them only
%% when the node changed them meanwhile); `[]' when there is none.
-spec mean_vector([[number()]]) -> [float()].
mean_vector([]) ->
    [];
mean_vector(Samples) ->
    Lens = [length(S) || S <- Samples, S =/= []],
    case Lens of
        [] -> [];
        _ ->
            Len = mode(Lens),
            Same = [S || S <- Samples, length(S) =:= Len],
            [lists:sum(Col) / length(Same) || Col <- columns(Same, Len)]
    end.

mode(L) ->
    Counts = lists:foldl(fun(X, M) -> maps:update_with(X, fun(C) -> C + 1 end, 1, M) end, #{}, L),
    {_, Best} = lists:max([{C, X} || {X, C} <- maps:to_list(Counts)]),
    Best.

columns(Rows, Len) ->
    [[lists:nth(I, R) || R <- Rows] || I <- lists:seq(1, Len)].

%% @doc The `imbalance' finding when the observations show the pattern
%% often enough, with each scheduler's mean busy share, how often it
%% showed, the run queue and the migrations as evidence; `[]' otherwise.
%% A warning when the load offered the idle schedulers work ({@link
%% offered/1}); without that evidence information (the VM's load
%% compaction, `+scl' on by default, deliberately keeps a light load on
%% few schedulers), or nothing with `unoffered => none'.
-spec imbalance(evidence()) -> [beamlab_result:finding()].
imbalance(#{samples := Samples} = E) ->
    Obs = [S || S <- Samples, length(S) >= 2],
    Shown = [P || S <- Obs, {true, _, _} = P <- [pattern(S)]],
    case Obs =/= [] andalso length(Shown) / length(Obs) >= ?SHOWN of
        false -> [];
        true ->
            case offered(E) orelse maps:get(unoffered, E, info) =:= info of
                true -> [finding(E, Obs, Shown)];
                false -> []
            end
    end.

%% @doc Whether the load offered work to idle schedulers: in at least
%% half the samples a scheduler had work waiting while another had none
%% (`stranded'); where that was not sampled, 1 or more processes waited
%% in the run queues on average.
-spec offered(evidence()) -> boolean().
offered(E) ->
    case maps:get(stranded, E, null) of
        S when is_number(S) -> S >= ?STRANDED;
        _ ->
            Rq = maps:get(run_queue_mean, E, null),
            is_number(Rq) andalso Rq >= ?WAITING
    end.

finding(E, Obs, Shown) ->
    Mean = mean_vector(Obs),
    Share = length(Shown) / length(Obs),
    {_, Hot, Idle} = case pattern(Mean) of
                         {true, _, _} = P -> P;
                         false -> hd(Shown)
                     end,
    Rq = maps:get(run_queue_mean, E, null),
    Offered = offered(E),
    Sev = case Offered of
              true -> warning;
              false -> info
          end,
    Conf = case Share >= ?SURE andalso length(Obs) >= 3 of
               true -> high;
               false -> medium
           end,
    Where = maps:get(where, E, <<"in the observations">>),
    Mig = maps:get(migrations_per_s, E, null),
    Evidence = s("~ts, ~ts busy while ~ts idle (each scheduler's mean busy share: ~ts); the pattern "
                 "showed in ~b of ~b observation~s; run queue ~ts~ts; the kernel moved the scheduler threads "
                 "between CPUs ~ts",
                 [Where, names(Hot), names(Idle), shares(Mean), length(Shown), length(Obs), plural(length(Obs)),
                  case Rq of null -> <<"unknown">>; _ -> s("~.1f on average", [float(Rq)]) end,
                  stranded_text(E),
                  case Mig of null -> <<"(migrations not visible here)">>; _ -> s("~.1f times/s", [float(Mig)]) end]),
    Advice = case Offered of
                 true -> <<"work waits on a few schedulers while others idle: try +sub true (balance on "
                           "utilisation) or +scl false (no load compaction); when the work sits in a few "
                           "processes, only more processes spread it">>;
                 false -> <<"a light load kept on few schedulers is the VM's load compaction (+scl true), "
                            "harmless while the work keeps up; +sub true spreads it when latency suffers">>
             end,
    beamlab_result:finding(imbalance, Sev,
                           s("~b of ~b schedulers at ~ts or more while ~b idle", [length(Hot), length(Mean),
                                                                                 pct(?HOT), length(Idle)]),
                           Evidence, Advice,
                           #{confidence => Conf, remedies => [<<"+sub true">>, <<"+scl false">>],
                             per_scheduler => Mean, hot => Hot, idle => Idle, shown => Share,
                             run_queue_mean => Rq, migrations_per_s => Mig, offered => Offered,
                             stranded => maps:get(stranded, E, null)}).

%% The sampled evidence of offered work, when there is some.
stranded_text(E) ->
    Active = case maps:get(active_mean, E, []) of
                 [] -> <<>>;
                 A -> s("; runnable processes per scheduler on average: ~ts",
                        [lists:join(" ", [io_lib:format("~.1f", [float(X)]) || X <- A])])
             end,
    case maps:get(stranded, E, null) of
        S when is_number(S) ->
            s("; work waited on one scheduler while another had none in ~ts of the samples~ts",
              [pct(S), Active]);
        _ -> Active
    end.

names([I]) -> s("scheduler ~b", [I]);
names(Is) -> s("schedulers ~ts", [lists:join(", ", [integer_to_list(I) || I <- Is])]).

shares(Us) ->
    iolist_to_binary(lists:join(" ", [io_lib:format("~b%", [round(100 * U)]) || U <- Us])).

pct(X) -> s("~b%", [round(100 * X)]).

plural(1) -> "";
plural(_) -> "s".

s(Fmt, Args) -> iolist_to_binary(io_lib:format(Fmt, Args)).
