%%% @doc Pre-flight checks before a measurement: is the emulator an
%%% optimised JIT build, is the machine already busy, do timers fire on
%%% time. Each problem becomes a finding (the result document's `findings'
%%% entry) so it is printed as a warning and saved with the result.
-module(beamlab_engine_checks).

-export([run/1, emulator/0, overload/0, timer/1]).

-type finding() :: beamlab_result:finding().

%% Timers firing later than this (median, for a 1 ms wait) switch the
%% sampler to busy waiting: a late sample end would inflate counts.
-define(OVERSHOOT_LIMIT_US, 2000).

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

%% @doc Warns when runnable work or the OS load already exceeds the cores.
-spec overload() -> [finding()].
overload() ->
    Cores = cores(),
    RunQueue = erlang:statistics(total_run_queue_lengths_all),
    Load = beamlab_runtime_probe:load1(),
    [finding(run_queue_busy, <<"Schedulers are already busy">>,
             fmt("~w processes runnable on ~w schedulers before the run", [RunQueue, Cores]),
             <<"Other work in this VM competes with the benchmark.">>,
             #{run_queue => RunQueue, cores => Cores})
     || RunQueue > Cores]
        ++ [finding(load_high, <<"Machine is overloaded">>,
                    fmt("1-minute load average ~.2f on ~w cores", [Load, Cores]),
                    <<"Other processes compete for the CPU; expect noisy, pessimistic numbers. "
                      "Stop them or use more samples.">>,
                    #{load_average => Load, cores => Cores})
            || is_number(Load), Load > Cores].

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
