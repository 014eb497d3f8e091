%%% @doc Entry point of the micro-benchmark engine, shared by the CLI
%%% (`beamlab run') and the API ({@link beamlab}).
%%%
%%% `run(Jobs, RunOpts, ModeOpts)' compiles every job, runs the pre-flight
%%% checks, starts the jobs, samples them (continuous, timed or concurrency
%%% estimation), stops them and returns the result document (kind `bench').
%%%
%%% Options are a subset of `run_opts()': every key missing is taken
%%% from {@link default_run_opts/0}, the one place the defaults are written
%%% (the CLI's option defaults and the public API read them from there):
%%% <ul>
%%%   <li>`concurrency' (1), `samples' (3), `duration' ms (1000), `warmup' (0);</li>
%%%   <li>`loop' N: timed mode, N iterations per sample;</li>
%%%   <li>`rel_ci', `cv' (fractions, e.g. 0.02): stopping rule, with
%%%       `max_samples' (1000) and `max_time' ms (600000);</li>
%%%   <li>`deadline' ms (30000): a hook that does not return, or a runner that
%%%       completes no iteration, within it fails its job;</li>
%%%   <li>`baseline': 1-based index or label of the job others are compared
%%%       to (default the first); if that job fails, the first job that
%%%       succeeded is used instead (`extra.baseline_used');</li>
%%%   <li>`isolated' (false), `vm_args' (string), `code_paths' ([string()]):
%%%       run each job in a fresh VM;</li>
%%%   <li>`metric' (`time'): `cpu' makes each sample the CPU time per
%%%       iteration of the measuring VM's scheduler threads
%%%       ({@link beamlab_runtime_cpu}; Linux), a load-independent measure;</li>
%%%   <li>`confidence' (0.95), `progress' (fun((progress()) -> any())),
%%%       `command' (the command line recorded in the result, given by the
%%%       caller; default []), `checks' (true), `busy_wait' (true forces the
%%%       busy-wait sample timer the timer check would choose when timers
%%%       fire late);</li>
%%%   <li>`telemetry' (false): record VM telemetry ({@link beamlab_runtime_telemetry},
%%%       with each job's iteration rate) into the result; `verbose' (false)
%%%       also prints it live, one line a second, on stderr.</li>
%%%   <li>`metrics' (undefined): a `beamlab_runtime_metrics' server where
%%%       each job's iteration counter (`beamlab_run_iterations_total') and
%%%       this VM's telemetry are served while the jobs run in this VM (not
%%%       with `isolated': its counters live in the fresh VMs).</li>
%%%   <li>`checkpoint' (none): a {@link beamlab_runtime_checkpoint} kept up
%%%       to date while the jobs run in this VM (not with `isolated'), so
%%%       that {@link recover/2} can rebuild the partial document if the
%%%       benchmarked code stops the VM.</li>
%%% </ul>
%%% ModeOpts: `undefined', or a map with `min', `max', `step', `threshold'
%%% for concurrency estimation (see {@link beamlab_engine_squeeze}).
%%%
%%% Measuring in this VM is {@link beamlab_engine_measure}, in fresh VMs
%%% {@link beamlab_engine_isolated}; `-pa' is {@link beamlab_engine_paths}.
-module(beamlab_engine).

-export([run/3, recover/2, format_error/1, default_run_opts/0, baseline/2]).

-export_type([job_spec/0, run_opts/0, options/0, mode_opts/0, outcome/0, progress/0,
              curve_point/0, error_reason/0, progress_state/0]).

-type job_spec() :: beamlab_engine_code:code_map().
%% Every run option, as {@link default_run_opts/0} returns them.
-type run_opts() :: #{concurrency := pos_integer(),
                      samples := pos_integer(),
                      duration := pos_integer(),              % ms per sample
                      warmup := non_neg_integer(),
                      loop := undefined | pos_integer(),      % timed mode
                      rel_ci := undefined | float(),
                      cv := undefined | float(),
                      max_samples := pos_integer(),
                      max_time := pos_integer(),              % ms
                      deadline := pos_integer(),              % ms
                      baseline := pos_integer() | unicode:chardata(),
                      isolated := boolean(),
                      vm_args := string(),
                      flavor := undefined | beamlab_runtime_otp:flavor(),
                      code_paths := [file:filename()],
                      confidence := float(),
                      progress := undefined | fun((progress()) -> any()),
                      command := [unicode:chardata()],
                      checks := boolean(),
                      busy_wait := undefined | boolean(),
                      telemetry := boolean(),
                      verbose := boolean(),
                      metrics := undefined | beamlab_runtime_metrics:server(),
                      checkpoint := beamlab_runtime_checkpoint:checkpoint() | none,
                      metric := time | cpu}.
%% What callers pass: any subset of run_opts(). `labels' is internal (the
%% unique job names, passed from run/3 to measure/3).
-type options() :: #{concurrency => pos_integer(),
                     samples => pos_integer(),
                     duration => pos_integer(),
                     warmup => non_neg_integer(),
                     loop => undefined | pos_integer(),
                     rel_ci => undefined | float(),
                     cv => undefined | float(),
                     max_samples => pos_integer(),
                     max_time => pos_integer(),
                     deadline => pos_integer(),
                     baseline => pos_integer() | unicode:chardata(),
                     isolated => boolean(),
                     vm_args => string(),
                     flavor => undefined | beamlab_runtime_otp:flavor(),
                     code_paths => [file:filename()],
                     confidence => float(),
                     progress => undefined | fun((progress()) -> any()),
                     command => [unicode:chardata()],
                     checks => boolean(),
                     busy_wait => undefined | boolean(),
                     telemetry => boolean(),
                     verbose => boolean(),
                     metrics => undefined | beamlab_runtime_metrics:server(),
                     checkpoint => beamlab_runtime_checkpoint:checkpoint() | none,
                     metric => time | cpu,
                     labels => [binary()],
                     save => fun((progress_state()) -> ok)}.
-type mode_opts() :: undefined | beamlab_engine_squeeze:given_opts().
-type progress() :: beamlab_engine_sampler:progress().
-type curve_point() :: #{concurrency := pos_integer(), mean := float(), samples := [number()]}.
-type outcome() :: #{label := binary(),
                     samples := [number()],
                     times := [non_neg_integer()],
                     cpu => [non_neg_integer()],
                     ends => [integer()],
                     status := ok | {error, beamlab_engine_job:failure() | {isolated, term()}
                                               | error_reason() | stop_failure()},
                     concurrency := non_neg_integer(),
                     curve => [curve_point()]}.
%% What a checkpoint says of a run in progress (see recover/2): the phase,
%% the job whose code runs (by position), each job's outcome so far.
-type phase() :: init | init_runner | sampling | done | finished.
-type entry() :: {beamlab_engine_sampler:outcome(), non_neg_integer(),
                  undefined | [beamlab_engine_squeeze:point()]}.
-type progress_state() :: #{phase := phase(), current := pos_integer() | none,
                            entries := #{pos_integer() => entry()}}.
-type stop_failure() :: {vm_stopped, phase(), integer()} | not_run.
-type error_reason() :: no_jobs
                      | {compile, pos_integer(), binary(), term()}
                      | {bad_option, atom(), term()}
                      | {conflict, atom(), atom()}
                      | {bad_baseline, term()}
                      | {min_above_max, pos_integer(), pos_integer()}
                      | {bad_vm_args, term()}
                      | beamlab_runtime_cpu:error_reason()
                      | {no_such_directory, file:filename()}.

%% @doc Defaults of every run option: the one source of them.
-spec default_run_opts() -> run_opts().
default_run_opts() ->
    #{concurrency => 1, samples => 3, duration => 1000, warmup => 0, loop => undefined,
      rel_ci => undefined, cv => undefined, max_samples => 1000, max_time => 600000,
      deadline => 30000, baseline => 1, isolated => false, vm_args => "", flavor => undefined, code_paths => [],
      confidence => 0.95, progress => undefined, command => [], checks => true,
      busy_wait => undefined, telemetry => false, verbose => false, metrics => undefined,
      checkpoint => none, metric => time}.

%% @doc Runs a benchmark and returns the result document (kind `bench',
%% without an environment report: the caller attaches one if it wants).
-spec run([job_spec()], options(), mode_opts()) ->
          {ok, beamlab_result:result()} | {error, error_reason()}.
run([], _RunOpts, _ModeOpts) ->
    {error, no_jobs};
run(Jobs, RunOpts0, ModeOpts) ->
    Started = beamlab_runtime_clock:rfc3339(),
    RunOpts = maps:merge(default_run_opts(), RunOpts0),
    maybe_result(
      fun() ->
              ok = validate(RunOpts, ModeOpts),
              Labels = labels(Jobs),
              Base = baseline_index(maps:get(baseline, RunOpts), Labels),
              Competition = competition_start(RunOpts),
              {Findings0, Timer} = checks(RunOpts),
              %% `busy_wait => true' forces the busy-wait sample timer.
              Busy = maps:get(busy_wait, RunOpts) =:= true orelse maps:get(busy_wait, Timer),
              Opts1 = RunOpts#{busy_wait => Busy},
              Context = #{labels => Labels, base => Base,
                          run_opts => maps:without([progress, checkpoint, metrics], Opts1),
                          mode_opts => ModeOpts, findings => Findings0,
                          timer => Timer#{busy_wait := Busy}, started_at => Started},
              Measured = case maps:get(isolated, RunOpts) of
                             true -> beamlab_engine_isolated:run(Jobs, Opts1, ModeOpts);
                             false -> beamlab_engine_measure:measure(
                                        Jobs, with_save(Opts1#{labels => Labels}, Context), ModeOpts)
                         end,
              #{outcomes := Outcomes, interrupted := Interrupted, telemetry := Telemetry} =
                  case Measured of
                      {ok, M} -> M;
                      {error, Reason} -> throw({beamlab_engine, Reason})
                  end,
              flush_interrupts(),
              {LoadFindings, Load} = competition(Competition, Interrupted),
              Findings = Findings0 ++ LoadFindings,
              Labelled = [O#{label => L} || {O, L} <- lists:zip(Outcomes, Labels)],
              {ok, document(Labelled, Base, Opts1, ModeOpts,
                            #{findings => Findings, timer => Timer#{busy_wait := Busy},
                              partial => Interrupted, started_at => Started,
                              telemetry => Telemetry, competition => Load})}
      end).

%% Checkpoints of this run: the document's context with the progress.
with_save(#{checkpoint := none} = Opts, _Context) ->
    Opts;
with_save(#{checkpoint := Cp} = Opts, Context) ->
    Opts#{save => fun(Progress) ->
                          beamlab_runtime_checkpoint:save(Cp, #{engine => Context,
                                                                 progress => Progress})
                  end}.

%% @doc The document of a run whose VM stopped while it measured, from its
%% last checkpoint (the `state' {@link beamlab_runtime_checkpoint:load/1}
%% returns) and the VM's exit status: partial, the job whose code was
%% running failed (`vm_stopped'), the jobs never started failed as not run
%% (`extra.not_run'); `extra.vm_stopped' says which job, when and the
%% likely cause. No environment report: the caller attaches one.
-spec recover(term(), integer()) -> {ok, beamlab_result:result()} | {error, bad_checkpoint}.
recover(#{engine := #{labels := Labels, base := Base, run_opts := RunOpts, mode_opts := ModeOpts,
                      findings := Findings, timer := Timer, started_at := Started},
          progress := #{phase := Phase, current := Current, entries := Entries}}, Status)
  when is_list(Labels), is_map(Entries) ->
    NoCurve = case ModeOpts of
                  undefined -> undefined;
                  _ -> []
              end,
    Stop = {vm_stopped, Phase, Status},
    Measuring = lists:member(Phase, [init, init_runner, sampling]),
    %% 130: SIGINT sent to the VM alone, which it cannot catch: an
    %% interrupt, so the job that was running keeps its samples.
    PerJob = [case {maps:find(I, Entries), I =:= Current} of
                  {{ok, {_O, _C, _Curve} = Entry}, true} when Status =:= 130 ->
                      Entry;
                  {{ok, {O, C, Curve}}, true} ->
                      {O#{status := {error, Stop}}, C, Curve};
                  {{ok, {#{samples := [], status := ok} = O, C, Curve}}, false} when Measuring ->
                      {O#{status := {error, not_run}}, C, Curve};
                  {{ok, Entry}, false} ->
                      Entry;
                  {error, true} -> {beamlab_engine_measure:empty({error, Stop}), 0, NoCurve};
                  {error, false} -> {beamlab_engine_measure:empty({error, not_run}), 0, NoCurve}
              end || I <- lists:seq(1, length(Labels))],
    {Outcomes, _} = beamlab_engine_measure:finish({PerJob, true}, [ok || _ <- PerJob]),
    Labelled = [O#{label => L} || {O, L} <- lists:zip(Outcomes, Labels)],
    Job = case Current of
              none -> null;
              _ -> lists:nth(Current, Labels)
          end,
    {ok, document(Labelled, Base, RunOpts, ModeOpts,
                  #{findings => Findings, timer => Timer, partial => true, started_at => Started,
                    telemetry => #{},
                    vm_stopped => #{job => Job, phase => atom_to_binary(Phase), exit_status => Status,
                                    cause => unicode:characters_to_binary(
                                               beamlab_runtime_checkpoint:cause(Status))}})};
recover(_, _Status) ->
    {error, bad_checkpoint}.

%% The sampler leaves an interrupt in the mailbox so every loop level sees
%% it; once the run is over it has been acted upon and must not cut the
%% caller's next run short.
flush_interrupts() ->
    receive {beamlab_interrupt, _} -> flush_interrupts()
    after 0 -> ok
    end.

maybe_result(Fun) ->
    try Fun()
    catch throw:{beamlab_engine, Reason} -> {error, Reason}
    end.

%% Whether other processes competed for the CPUs is measured over the
%% whole run, pre-flight checks included (beamlab_engine_checks).
competition_start(#{checks := false}) ->
    none;
competition_start(_RunOpts) ->
    beamlab_engine_checks:competition_start().

competition(none, _Interrupted) ->
    {[], null};
competition(Start, Interrupted) ->
    case beamlab_engine_checks:measure(Start, case Interrupted of
                                                  true -> interrupted;
                                                  false -> measured
                                              end) of
        {ok, C, Cpus} ->
            %% Kept below the finding's threshold too (`extra.competition'):
            %% what a load too small to raise it did is worth knowing.
            {beamlab_engine_checks:load_high(C, Cpus), C#{cores => Cpus}};
        none ->
            {[], null}
    end.

checks(#{checks := false}) ->
    {[], #{busy_wait => false, overshoot_us => 0}};
checks(RunOpts) ->
    beamlab_engine_checks:run(#{duration => maps:get(duration, RunOpts)}).

%%====================================================================
%% Validation
%%====================================================================

%% Invariants of a run: the bench kind (its schema and check/2,
%% beamlab_experiment_bench) refuses all of these before the engine runs,
%% with one reason naming the library's keys or the command line's flags
%% (#31); the engine checks them again only so that it never runs what
%% it cannot measure, and neither front end reaches these lines.
validate(RunOpts, ModeOpts) ->
    Pos = [concurrency, samples, duration, max_samples, max_time, deadline],
    _ = [bad(K, maps:get(K, RunOpts)) || K <- Pos,
                                         not (is_integer(maps:get(K, RunOpts))
                                              andalso maps:get(K, RunOpts) > 0)],
    W = maps:get(warmup, RunOpts),
    (is_integer(W) andalso W >= 0) orelse bad(warmup, W),
    L = maps:get(loop, RunOpts),
    (L =:= undefined orelse (is_integer(L) andalso L > 0)) orelse bad(loop, L),
    _ = [bad(K, maps:get(K, RunOpts))
         || K <- [rel_ci, cv],
            not (maps:get(K, RunOpts) =:= undefined
                 orelse (is_number(maps:get(K, RunOpts)) andalso maps:get(K, RunOpts) > 0))],
    case maps:get(isolated, RunOpts) andalso beamlab_runtime_peer:parse_args(maps:get(vm_args, RunOpts)) of
        {error, Why} -> throw({beamlab_engine, {bad_vm_args, Why}});
        _ -> ok
    end,
    L =/= undefined andalso maps:get(concurrency, RunOpts) > 1
        andalso throw({beamlab_engine, {conflict, loop, concurrency}}),
    L =/= undefined andalso ModeOpts =/= undefined
        andalso throw({beamlab_engine, {conflict, loop, squeeze}}),
    case maps:get(metric, RunOpts) of
        time -> ok;
        cpu when ModeOpts =/= undefined -> throw({beamlab_engine, {conflict, metric, squeeze}});
        cpu -> case beamlab_runtime_cpu:threads() of
                   {ok, _} -> ok;
                   {error, Unavailable} -> throw({beamlab_engine, Unavailable})
               end;
        NoMetric -> bad(metric, NoMetric)
    end,
    case ModeOpts of
        undefined ->
            ok;
        Q when is_map(Q) ->
            _ = [bad(K, V) || {K, V} <- maps:to_list(maps:with([min, max, step, threshold], Q)),
                              not (is_integer(V) andalso V > 0)],
            M = maps:merge(beamlab_engine_squeeze:defaults(), Q),
            maps:get(min, M) =< maps:get(max, M)
                orelse throw({beamlab_engine, {min_above_max, maps:get(min, M), maps:get(max, M)}}),
            ok;
        Other ->
            bad(mode_opts, Other)
    end.

-spec bad(atom(), term()) -> no_return().
bad(Key, Value) -> throw({beamlab_engine, {bad_option, Key, Value}}).

labels(Jobs) ->
    Raw = [beamlab_engine_code:job_label(J) || J <- Jobs],
    unique(Raw, #{}).


%% Duplicate labels get " #2", " #3", ... (names are unique in a result).
unique([], _Seen) -> [];
unique([L | Rest], Seen) ->
    N = maps:get(L, Seen, 0) + 1,
    Name = case N of
               1 -> L;
               _ -> <<L/binary, " #", (integer_to_binary(N))/binary>>
           end,
    [Name | unique(Rest, Seen#{L => N})].

%% @doc The job a `baseline' names among `Jobs' (its number, or its
%% label as the document names it), or why none: what the bench kind
%% checks before anything runs.
-spec baseline(term(), [job_spec()]) -> {ok, pos_integer()} | {error, {bad_baseline, term()}}.
baseline(Baseline, Jobs) ->
    try {ok, baseline_index(Baseline, labels(Jobs))}
    catch throw:{beamlab_engine, {bad_baseline, _} = R} -> {error, R}
    end.

baseline_index(I, Labels) when is_integer(I), I >= 1, I =< length(Labels) -> I;
baseline_index(L, Labels) when is_binary(L); is_list(L) ->
    Bin = unicode:characters_to_binary(L),
    case string:to_integer(Bin) of
        {I, <<>>} when is_integer(I) -> baseline_index(I, Labels);
        _ ->
            case [I || {I, X} <- lists:zip(lists:seq(1, length(Labels)), Labels), X =:= Bin] of
                [I | _] -> I;
                [] -> throw({beamlab_engine, {bad_baseline, Bin}})
            end
    end;
baseline_index(Other, _) ->
    throw({beamlab_engine, {bad_baseline, Other}}).

%% @doc One line for an engine error or a job's failure.
-spec format_error(error_reason() | beamlab_engine_job:failure() | {isolated, term()}
                   | stop_failure()) -> iolist().
format_error(Reason) ->
    beamlab_format_reason:line(fun error_line/1, Reason).

error_line(no_jobs) ->
    "no code to benchmark";
error_line({no_such_directory, Dir}) ->
    io_lib:format("~ts: no such directory", [Dir]);
error_line({compile, _I, Label, Reason}) ->
    io_lib:format("~ts: ~ts", [Label, beamlab_engine_code:format_error(Reason)]);
error_line({bad_option, Key, Value}) ->
    io_lib:format("invalid ~ts: ~0tp", [Key, Value]);
error_line({conflict, A, B}) ->
    io_lib:format("~ts and ~ts cannot be used together", [A, B]);
error_line({bad_baseline, B}) when is_binary(B) ->
    io_lib:format("baseline '~ts' is neither a job number nor a job's label", [B]);
error_line({bad_baseline, B}) ->
    io_lib:format("baseline ~0tP is neither a job number nor a job's label", [B, 6]);
error_line({min_above_max, Min, Max}) ->
    io_lib:format("squeeze: the first concurrency (min ~b) is above the last (max ~b)", [Min, Max]);
error_line({bad_vm_args, Why}) ->
    beamlab_runtime_peer:format_error(Why);
error_line(not_run) ->
    "not run: the VM stopped before this job was measured";
error_line({vm_stopped, Phase, Status}) ->
    io_lib:format("the VM stopped (exit status ~b) while ~ts: ~ts",
                  [Status, phase_text(Phase), beamlab_runtime_checkpoint:cause(Status)]);
error_line({isolated, Reason}) ->
    beamlab_engine_isolated:format_error(Reason);
error_line({unavailable, _} = Cpu) ->
    beamlab_runtime_cpu:format_error(Cpu);
error_line(Other) ->
    beamlab_engine_job:format_error(Other).

phase_text(init) -> "its init hook ran";
phase_text(init_runner) -> "its workers ran init_runner";
phase_text(sampling) -> "it was measured";
phase_text(done) -> "its done hook ran";
phase_text(finished) -> "beamlab finished the run".

%%====================================================================
%% Result document
%%====================================================================

document(Outcomes, Base, RunOpts, ModeOpts, #{findings := Findings, timer := Timer,
                                                 partial := Partial, started_at := Started,
                                                 telemetry := Telemetry} = Info) ->
    Mode = case maps:get(loop, RunOpts) of
               undefined when ModeOpts =:= undefined -> continuous;
               undefined -> squeeze;
               _ -> timed
           end,
    Used = used_baseline(Base, Outcomes),
    Indexed = lists:zip(lists:seq(1, length(Outcomes)), Outcomes),
    BaseOutcome = case Used of
                      none -> none;
                      _ -> lists:nth(Used, Outcomes)
                  end,
    Benches = [benchmark(O, role(I, Used), BaseOutcome, Mode, RunOpts) || {I, O} <- Indexed],
    Doc0 = beamlab_result:new(bench, #{command => maps:get(command, RunOpts),
                                       started_at => Started,
                                       params => params(Mode, RunOpts, ModeOpts, Base)}),
    Doc1 = beamlab_result:add_findings(beamlab_result:add_benchmarks(Doc0, Benches), Findings),
    Extra = #{timer => Timer,
              interleaved => length(Outcomes) > 1 andalso not maps:get(isolated, RunOpts),
              isolated => maps:get(isolated, RunOpts),
              baseline_used => case Used of none -> null; _ -> Used end,
              stopped_by => stopped_by(Outcomes, Mode, RunOpts, Partial)},
    Doc2 = beamlab_result:set(extra, maps:merge(Extra, maps:with([vm_stopped, competition], Info)), Doc1),
    Doc3 = beamlab_result:set(telemetry, Telemetry, Doc2),
    beamlab_result:finish(Doc3, #{finished_at => beamlab_runtime_clock:rfc3339(),
                                  partial => Partial}).

%% What ended the sampling, as the sampler decided it
%% (beamlab_engine_sampler): `samples' (the -s asked for, no stopping rule),
%% `converged' (every job's interval within --ci / its cv within --cv),
%% `max_samples' or `max_time' (a cap spent first), `interrupted'; `null'
%% for a concurrency search.
stopped_by(_Outcomes, squeeze, _RunOpts, _Partial) ->
    null;
stopped_by(_Outcomes, _Mode, _RunOpts, true) ->
    interrupted;
stopped_by(Outcomes, Mode, #{rel_ci := RelCi, cv := Cv, samples := S, max_samples := Max} = RunOpts,
           false) ->
    Ok = [judged(O, Mode, RunOpts) || #{status := ok} = O <- Outcomes],
    Window = max(2, S),
    Converged = fun(Xs) ->
                        beamlab_stats:converged(Xs, #{rel_ci => RelCi, min => Window})
                            andalso beamlab_stats:converged(lists:sublist(lists:reverse(Xs), Window),
                                                            #{cv => Cv, min => Window})
                end,
    if
        RelCi =:= undefined, Cv =:= undefined -> samples;
        Ok =:= [] -> samples;
        true ->
            case lists:all(Converged, Ok) of
                true -> converged;
                false ->
                    case lists:any(fun(Xs) -> length(Xs) >= Max end, Ok) of
                        true -> max_samples;
                        false -> max_time
                    end
            end
    end.

%% A failed job is no yardstick: when the requested baseline failed, the
%% first job that succeeded takes its place (`params.baseline' keeps the
%% request, `extra.baseline_used' says which one was used); `none' when
%% every job failed.
used_baseline(Base, Outcomes) ->
    Ok = fun(#{status := S}) -> S =:= ok end,
    case Ok(lists:nth(Base, Outcomes)) of
        true ->
            Base;
        false ->
            case [I || {I, O} <- lists:zip(lists:seq(1, length(Outcomes)), Outcomes), Ok(O)] of
                [First | _] -> First;
                [] -> none
            end
    end.

role(_I, none) -> not_compared;
role(I, I) -> baseline;
role(_I, _Used) -> compared.

params(Mode, RunOpts, ModeOpts, Base) ->
    P = maps:with([concurrency, samples, duration, warmup, loop, rel_ci, cv, max_samples,
                   max_time, deadline, isolated, flavor, metric], RunOpts),
    P1 = maps:filter(fun(_, V) -> V =/= undefined end, P),
    Q = case ModeOpts of
            undefined -> #{};
            _ -> #{squeeze => maps:merge(beamlab_engine_squeeze:defaults(),
                                         maps:with([min, max, step, threshold], ModeOpts))}
        end,
    maps:merge(P1#{mode => atom_to_binary(Mode), baseline => Base}, Q).

%% The values a benchmark's statistics are about: the samples, or with
%% `--metric cpu' each sample's scheduler CPU time per iteration (a
%% continuous sample with no iteration has none).
judged(#{samples := S}, _Mode, #{metric := time}) ->
    S;
judged(#{samples := S} = O, Mode, #{metric := cpu} = RunOpts) ->
    Cpu = maps:get(cpu, O, []),
    case length(Cpu) =:= length(S) of
        false -> [];
        true -> [Ns / case Mode of timed -> maps:get(loop, RunOpts); _ -> N end
                 || {N, Ns} <- lists:zip(S, Cpu), Mode =:= timed orelse N > 0]
    end.

benchmark(#{label := Label} = O, Role, BaseOutcome, Mode, RunOpts) ->
    Timed = Mode =:= timed,
    Samples = judged(O, Mode, RunOpts),
    %% (a rate of iterations says its measure in its unit: no words)
    {Metric, Unit, Better, Measure} = case {maps:get(metric, RunOpts), Timed} of
                                          {cpu, _} -> {<<"cpu">>, <<"ns">>, lower, [{measure, <<"CPU time per iteration">>}]};
                                          {time, true} -> {<<"time">>, <<"ns">>, lower,
                                                           [{measure, <<"wall-clock time per iteration">>}]};
                                          {time, false} -> {<<"throughput">>, <<"iterations">>, higher, []}
                                      end,
    Conf = maps:get(confidence, RunOpts),
    Extra = extra(O, Mode, RunOpts),
    {Relation, Comparison} = relation(Role, O, Extra, BaseOutcome, Mode, RunOpts, Better),
    Opts0 = (maps:from_list(Measure))#{group => <<"run">>, metric => Metric, unit => Unit, better => Better,
              params => #{concurrency => maps:get(concurrency, O), mode => atom_to_binary(Mode),
                          sample => case Timed of
                                        true -> #{iterations => maps:get(loop, RunOpts)};
                                        false -> #{duration_ms => maps:get(duration, RunOpts)}
                                    end},
              counters => #{},
              extra => maps:merge(Extra, Relation)},
    Opts = case Comparison of
               none -> Opts0;
               C -> Opts0#{comparison => C}
           end,
    B = beamlab_result:benchmark(Label, Samples, Opts),
    %% beamlab_result:benchmark/3 summarises at the default confidence; the
    %% run's own confidence is applied here.
    case Samples of
        [] -> B;
        _ -> B#{stats := beamlab_stats:summary(Samples, #{confidence => Conf})}
    end.

extra(#{samples := Samples, times := Times, status := Status, concurrency := C} = O,
      Mode, RunOpts) ->
    Rates = maps:merge(rates(Mode, Samples, Times, C, RunOpts), cpu_rate(O, RunOpts)),
    Extra0 = maps:merge(Rates#{status => status_name(Status), mode => atom_to_binary(Mode)}, sample_ends(O)),
    Extra1 = case Status of
                 ok -> Extra0;
                 {error, not_run} -> Extra0#{error => iolist_to_binary(format_error(not_run)),
                                             not_run => true};
                 {error, F} -> Extra0#{error => iolist_to_binary(format_error(F))}
             end,
    case maps:find(curve, O) of
        {ok, Curve} -> Extra1#{squeeze_curve => [curve_point(P, RunOpts) || P <- Curve]};
        error -> Extra1
    end.

%% When each sample ended, in ms since the run's clock origin (that of
%% its telemetry's `t_ms'): the report's samples over time go there (#35;
%% rounds rotate the jobs, so the k-th sample did not end at k durations).
sample_ends(#{samples := S, ends := E}) when length(S) =:= length(E), E =/= [] ->
    #{sample_end_ms => E};
sample_ends(_) ->
    #{}.

%% `baseline'/`rel' (throughput relative to the baseline's) in extra, and
%% the statistical comparison when both sides have samples.
relation(not_compared, _O, _Extra, _Base, _Mode, _RunOpts, _Better) ->
    {#{baseline => false, rel => null}, none};
relation(baseline, _O, _Extra, _Base, _Mode, _RunOpts, _Better) ->
    {#{baseline => true, rel => 1.0}, none};
relation(compared, O, #{qps := Q}, Base, Mode, RunOpts, Better) ->
    S = judged(O, Mode, RunOpts),
    BS = judged(Base, Mode, RunOpts),
    #{qps := BQ} = extra(Base, Mode, RunOpts),
    Rel = case is_number(Q) andalso is_number(BQ) andalso BQ > 0 of
              true -> Q / BQ;
              false -> null
          end,
    Comparison = case S =/= [] andalso BS =/= [] of
                     true -> beamlab_stats:compare(BS, S, #{better => Better,
                                                           confidence => maps:get(confidence, RunOpts)});
                     false -> none
                 end,
    {#{baseline => false, rel => Rel}, Comparison}.

%% The CPU time per iteration over the whole run (total CPU / total
%% iterations), and what it is.
cpu_rate(#{samples := S, cpu := Cpu}, #{metric := cpu} = RunOpts) when Cpu =/= [] ->
    Iters = case maps:get(loop, RunOpts) of
                undefined -> lists:sum(S);
                Loop -> Loop * length(S)
            end,
    #{cpu_iteration_ns => case Iters of 0 -> null; _ -> lists:sum(Cpu) / Iters end,
      cpu_source => <<"scheduler threads (/proc/self/task/*/schedstat)">>};
cpu_rate(_O, _RunOpts) ->
    #{}.

curve_point(#{concurrency := C, mean := Mean, samples := S}, #{duration := D}) ->
    #{concurrency => C, mean => Mean, samples => S, qps => Mean * 1000 / D}.

status_name(ok) -> <<"ok">>;
status_name({error, _}) -> <<"failed">>.

%% Per-second throughput and per-iteration time from the totals (actual
%% elapsed time, not the nominal duration), so a runner slower than a
%% sample, or a late timer, still gives an honest figure.
rates(_Mode, [], _Times, _C, _RunOpts) ->
    #{qps => null, iteration_ns => null};
rates(timed, Samples, _Times, _C, #{loop := Loop}) ->
    TotalNs = lists:sum(Samples),
    Iter = TotalNs / (Loop * length(Samples)),
    #{qps => case TotalNs of 0 -> null; _ -> Loop * length(Samples) * 1.0e9 / TotalNs end,
      iteration_ns => Iter,
      iterations_per_sample => Loop};
rates(_Continuous, Samples, Times, C, _RunOpts) ->
    Iters = lists:sum(Samples),
    Ns = lists:sum(Times),
    Base = #{mean_iterations_per_sample => lists:sum(Samples) / length(Samples),
             less_than_one_per_sample => lists:sum(Samples) < length(Samples)},
    case Iters of
        0 -> Base#{qps => 0.0, iteration_ns => null};
        _ -> Base#{qps => Iters * 1.0e9 / Ns, iteration_ns => Ns * C / Iters}
    end.
