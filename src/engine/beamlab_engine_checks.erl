%%% @doc Checks around a measurement: is the emulator an optimised JIT
%%% build, are this VM's schedulers already busy, do timers fire on time
%%% (before), and did other processes compete for the CPUs (over the
%%% measurement, {@link competition_start/0} and {@link competition/2}).
%%% Each problem becomes a finding (the result document's `findings'
%%% entry) so it is printed as a warning and saved with the result.
-module(beamlab_engine_checks).

-export([run/1, emulator/0, overload/0, timer/1, competition_start/0, competition/2, measure/2,
         load_high/2]).

-type finding() :: beamlab_result:finding().

%% Timers firing later than this (median, for a 1 ms wait) switch the
%% sampler to busy waiting: a late sample end would inflate counts.
-define(OVERSHOOT_LIMIT_US, 2000).
%% Competition is measured over at least this window (a shorter run is
%% followed by a wait): /proc/stat counts in 10 ms ticks.
-define(MIN_WINDOW_MS, 200).

-type start() :: {beamlab_runtime_probe:cpu_snapshot(), Cpus :: pos_integer()} | unknown.
-export_type([start/0]).

%% @doc Runs every check. Returns the findings and whether the sampler
%% should busy-wait for sample boundaries.
-spec run(#{duration := pos_integer()}) -> {[finding()], #{busy_wait := boolean(),
                                                           overshoot_us := non_neg_integer()}}.
run(Opts) ->
    {TimerFindings, Timer} = timer(Opts),
    {emulator() ++ overload() ++ TimerFindings, Timer}.

%% @doc Warns when the emulator is not the optimised JIT build.
-spec emulator() -> [finding()].
emulator() ->
    Flavor = erlang:system_info(emu_flavor),
    Type = erlang:system_info(build_type),
    [finding(emulator_not_jit, <<"Emulator is not the JIT">>,
             fmt("emu_flavor is ~w", [Flavor]),
             <<"The interpreter (emu) is several times slower than the JIT; results "
               "do not represent production speed.">>, #{emu_flavor => Flavor})
     || Flavor =/= jit]
        ++ [finding(build_not_opt, <<"Emulator is not an optimised build">>,
                    fmt("build_type is ~w", [Type]),
                    <<"Debug, valgrind or lcnt builds distort timings; use the opt build.">>,
                    #{build_type => Type})
            || Type =/= opt].

%% @doc Warns when runnable work in this VM already exceeds the cores.
%% (The machine's load is judged over the measurement itself:
%% {@link competition/2}.)
-spec overload() -> [finding()].
overload() ->
    Cores = cores(),
    RunQueue = erlang:statistics(total_run_queue_lengths_all),
    [finding(run_queue_busy, <<"Schedulers are already busy">>,
             fmt("~w processes runnable on ~w schedulers before the run", [RunQueue, Cores]),
             <<"Other work in this VM competes with the benchmark.">>,
             #{run_queue => RunQueue, cores => Cores})
     || RunQueue > Cores].

%% @doc The start of a competition window: the machine's busy CPU time
%% and this VM's process tree's (itself and the fresh VMs it starts), or
%% `unknown' off Linux.
-spec competition_start() -> start().
competition_start() ->
    %% (a fresh VM of a matrix or a check: the beamlab VM that started it
    %% is ours too, BEAMLAB_TREE)
    case beamlab_runtime_probe:cpu_snapshot("/", os:getpid(), beamlab_runtime_probe:tree_root()) of
        {ok, S} -> {S, erlang:system_info(logical_processors_online)};
        {error, _} -> unknown
    end.

%% @doc At the end of a measurement that began at `Start': a `load_high'
%% finding when other processes (the machine's busy CPU time minus this
%% VM's process tree's) competed for the CPUs during it ({@link
%% load_high/2}). beamlab's own work, and a run that ended before, never
%% count (the load average did: a previous benchmark kept it above the
%% cores for a minute). No finding off Linux: unknown, never invented.
-spec competition(start(), interrupted | measured) -> [finding()].
competition(Start, How) ->
    case measure(Start, How) of
        {ok, C, Cpus} -> load_high(C, Cpus);
        none -> []
    end.

%% @doc What other processes and this VM's tree used over the window that
%% began at `Start', with the CPUs of the machine; `none' off Linux or for
%% a window too short to say anything. A window shorter than 0.2 s is
%% extended by a wait first, unless the measurement was `interrupted'.
-spec measure(start(), interrupted | measured) ->
          {ok, beamlab_runtime_probe:competition(), pos_integer()} | none.
measure(unknown, _) ->
    none;
measure({#{t_us := T0} = S0, Cpus}, How) ->
    Left = ?MIN_WINDOW_MS - (erlang:monotonic_time(microsecond) - T0) div 1000,
    _ = Left > 0 andalso How =:= measured andalso timer:sleep(Left),
    case beamlab_runtime_probe:cpu_snapshot("/", os:getpid(), beamlab_runtime_probe:tree_root()) of
        {ok, S1} ->
            C = beamlab_runtime_probe:competition(S0, S1),
            case maps:get(window_ms, C) >= ?MIN_WINDOW_MS of
                true -> {ok, C, Cpus};
                false -> none
            end;
        {error, _} -> none
    end.

%% @doc The `load_high' finding for what was measured over a run on a
%% machine of `Cpus' CPUs, if other processes competed for them
%% ({@link beamlab_runtime_probe:contended/2}; critical when others alone used all of them).
-spec load_high(beamlab_runtime_probe:competition(), pos_integer()) -> [finding()].
load_high(#{others_cores := Others, own_cores := Own, machine_cores := Machine, window_ms := Ms} = C, Cpus) ->
    Sev = case Others >= Cpus of
              true -> critical;
              false -> warning
          end,
    [beamlab_result:finding(
       load_high, Sev, <<"Machine is overloaded">>,
       fmt("other processes used ~.2f of ~w CPUs during the measurement (~.1f s), the machine's busy "
           "CPU time (~.2f CPUs) minus this VM's and its children's (~.2f)~ts",
           [Others, Cpus, Ms / 1000, Machine, Own,
            case Others >= maps:get(others, beamlab_runtime_probe:thresholds()) * Cpus of
                true -> "";
                false -> ": the machine was busy, so they took CPU time from the measurement"
            end]),
       <<"Other processes competed for the CPUs; expect noisy, pessimistic numbers. "
         "Stop them, or interleave and repeat runs (`beamlab matrix -n`, `check`).">>,
       #{others_cores => Others, own_cores => Own, machine_cores => Machine, window_ms => Ms, cores => Cpus})
     || beamlab_runtime_probe:contended(C, Cpus)].

%% @doc Measures timer overshoot; a bad timer means busy waiting.
-spec timer(map()) -> {[finding()], #{busy_wait := boolean(), overshoot_us := non_neg_integer()}}.
timer(_Opts) ->
    Overshoot = beamlab_runtime_probe:timer_overshoot(),
    Bad = Overshoot > ?OVERSHOOT_LIMIT_US,
    Findings = [finding(timer_late, <<"Timer accuracy problem detected">>,
                        fmt("a 1 ms wait overshoots by ~w us (median of 9)", [Overshoot]),
                        <<"Switched to a busy-wait sample timer, which takes one scheduler; "
                          "results may be skewed. Look for lock contention or overload.">>,
                        #{overshoot_us => Overshoot})
                || Bad],
    {Findings, #{busy_wait => Bad, overshoot_us => Overshoot}}.

cores() ->
    case erlang:system_info(logical_processors_available) of
        N when is_integer(N) -> N;
        _ -> erlang:system_info(schedulers_online)
    end.

%% Pre-flight problems are warnings: the run goes on, the reader is told.
finding(Id, Title, Evidence, Advice, Data) ->
    beamlab_result:finding(Id, warning, Title, Evidence, Advice, Data).

fmt(Fmt, Args) -> iolist_to_binary(io_lib:format(Fmt, Args)).
