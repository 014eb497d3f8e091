%%% @doc beamlab's public API, for Erlang and Elixir.
%%%
%%% The short forms follow erlperf and return plain numbers (they raise
%%% `error({beamlab, Reason})' on failure; `format_error/1' explains it):
%%% ```
%%% 1> beamlab:run("rand:uniform().").
%%% 1043154                               % iterations per second
%%% 2> beamlab:run(#{runner => "rand:uniform()."}, #{samples => 5, duration => 200}).
%%% 1078251
%%% 3> beamlab:run({rand, uniform, [10]}, #{concurrency => 2}).
%%% 1788609                               % both workers together
%%% 4> beamlab:run(#{runner => "run(_, S) -> rand:mwc59(S).",
%%%                  init_runner => "rand:mwc59_seed()."}, #{}).
%%% 15465171
%%% 5> beamlab:compare(["rand:uniform().", "crypto:strong_rand_bytes(2)."], #{}).
%%% [1096115,87540]
%%% 6> beamlab:time("rand:uniform().", 1000000).   % timed mode: microseconds
%%% 739864
%%% 7> beamlab:run("code:is_loaded(local_udp).", #{}, #{max => 8}).
%%% {121952,3}                             % best throughput and its worker count
%%% '''
%%% (Real output, from a 2-core machine shared with several busy builds, so
%%% the rates are far below what an idle machine gives.)
%%%
%%% From Elixir: `:beamlab.run(~c"rand:uniform().")' or with a fun,
%%% `:beamlab.run(%{runner: fn -> :rand.uniform() end})'.
%%%
%%% The experiments return the full result document, the same the
%%% commands print with `--format json' (`{ok, Doc}' or `{error, Reason}';
%%% {@link format_error/1} says why in one line). Each takes the options
%%% of its command as a map (see {@link beamlab_experiment_opts}), runs
%%% through the same experiment layer as the command line
%%% ({@link beamlab_experiment}) and attaches what the command attaches
%%% (the environment report; with `verbose' or `telemetry', this VM's
%%% telemetry and the detectors' findings):
%%% ```
%%% {ok, Alloc} = beamlab:benchmark(["lists:seq(1, 100)."],
%%%                                 #{samples => 5, memory => true, reductions => true, profile => eprof}).
%%% {ok, Squeezed} = beamlab:benchmark(["code:is_loaded(local_udp)."], #{squeeze => #{max => 8}}).
%%% {ok, Ring} = beamlab:suite([ring], #{params => #{ring => #{n => [1000, 4000]}}, repeat => 3}).
%%% {ok, Matrix} = beamlab:matrix({benchmark, ["ok."], #{samples => 3}}, #{vm => ["+S 1", "+S 2"]}).
%%% {ok, Watched} = beamlab:watch('rabbit@host', #{duration => 10000, cookie => "secret"}).
%%% {ok, Load} = beamlab:amqp("amqp://guest:guest@127.0.0.1:5672/%2F", #{duration => 10, closed_loop => 10}).
%%% {ok, Profiled} = beamlab:profile({benchmark, ["lists:seq(1, 100)."], #{}}, #{frequency => 499}).
%%% {ok, Text} = beamlab:format(Alloc, text).
%%% {ok, Html} = beamlab:report([Alloc, Squeezed], #{title => "plain and squeezed"}).
%%% '''
%%% A call leaves the calling VM as it found it: distribution started on
%%% the way (to watch a node, for `amqp''s `nodes', a remote ping-pong) is
%%% stopped when the call returns.
%%% Concurrency estimation runs only when asked for: `squeeze' in the
%%% options of `benchmark/2', or `run/3' (whose answer is the best
%%% concurrency). `benchmark/3' is the earlier form: its third argument is
%%% `undefined' or the bounds of a concurrency estimation; an empty map is
%%% refused (it used to start a concurrency estimation nobody asked for).
%%% Its document has no environment report.
%%%
%%% Options not given take {@link beamlab_engine:default_run_opts/0}, the
%%% same defaults as the CLI; the short forms also turn the pre-flight
%%% checks off (`checks => false'), as their findings would not be seen.
-module(beamlab).

-export([run/1, run/2, run/3, compare/2, time/2]).
-export([benchmark/2, benchmark/3, bench/2, check/1, suite/2, matrix/2, watch/2, amqp/2, profile/2,
         doctor/1, format_error/1]).
-export([format/2, format/3, report/2]).

-type code() :: beamlab_engine_code:callable() | beamlab_engine_code:code_map().
-type options() :: beamlab_engine:options().
-type mode_opts() :: undefined | beamlab_engine_squeeze:given_opts().
%% The options of an experiment, as its command's (see beamlab_experiment_opts).
-type experiment_opts() :: beamlab_experiment_opts:opts().
%% An inner experiment, as the call that would run it.
-type inner() :: {benchmark, [code()], experiment_opts()} | {suite, [atom() | string()], experiment_opts()}
               | {amqp, unicode:chardata(), experiment_opts()}.
-type error_reason() :: {job_failed, binary(), binary()}
                      | beamlab_engine:error_reason()
                      | beamlab_experiment:error_reason()
                      | beamlab_experiment_opts:error_reason()
                      | squeeze_needs_bounds
                      | beamlab_render_view:error_reason()
                      | beamlab_experiment_report:error_reason().
-type result() :: {ok, beamlab_result:result()} | {error, error_reason()}.
-export_type([code/0, options/0, mode_opts/0, experiment_opts/0, inner/0, error_reason/0, result/0]).

%% @doc Iterations per second of `Code' with the default options
%% (3 samples of 1 s, one worker).
-spec run(code()) -> non_neg_integer().
run(Code) ->
    run(Code, #{}).

%% @doc Iterations per second of `Code' with run options (see
%% {@link beamlab_engine}: `concurrency', `samples', `duration', `warmup',
%% `loop', `rel_ci', `cv', `isolated', ...). In timed mode (`loop') the
%% figure is still iterations per second.
-spec run(code(), options()) -> non_neg_integer().
run(Code, RunOpts) ->
    [Bench] = benchmarks([Code], RunOpts),
    qps(Bench).

%% @doc With `ModeOpts' a map (`min', `max', `step', `threshold'; `#{}' for
%% the defaults): concurrency estimation, as erlperf's `run/3', returning
%% `{IterationsPerSecond, BestConcurrency}'. With `undefined', the same as
%% `run/2'.
-spec run(code(), options(), mode_opts()) ->
          non_neg_integer() | {non_neg_integer(), non_neg_integer()}.
run(Code, RunOpts, undefined) ->
    run(Code, RunOpts);
run(Code, RunOpts, ModeOpts) when is_map(ModeOpts) ->
    [Bench] = benchmarks([Code], RunOpts#{squeeze => ModeOpts}),
    #{params := #{<<"concurrency">> := C}} = Bench,
    {qps(Bench), C}.

%% @doc Runs several codes side by side (interleaved samples) and returns
%% the iterations per second of each, in order.
-spec compare([code()], options()) -> [non_neg_integer()].
compare(Codes, RunOpts) ->
    [qps(B) || B <- benchmarks(Codes, RunOpts)].

%% @doc Timed mode: microseconds taken by `Count' iterations of `Code'
%% (one sample, as erlperf's `time/2').
-spec time(code(), pos_integer()) -> non_neg_integer().
time(Code, Count) ->
    [#{samples := [Ns]}] = benchmarks([Code], #{loop => Count, samples => 1}),
    Ns div 1000.

%% @doc The full result document (kind `bench') of a benchmark of
%% `Codes', compared with the first (or `baseline'). `Opts' are the run
%% options (`samples', `duration', `concurrency', `loop', `rel_ci',
%% `isolated', ...), `squeeze' (`true' or `#{min, max, step, threshold}':
%% concurrency estimation), the after-phase (`memory' and `reductions' per
%% iteration, `profile' of the runner: eprof, fprof, cprof, tprof;
%% `msacc'), `verbose' or `telemetry', `env'.
-spec benchmark([code()], experiment_opts()) -> result().
benchmark(Codes, Opts) ->
    experiment(beamlab_experiment_opts:benchmark(Codes, Opts)).

%% @doc The earlier form of {@link benchmark/2}: run options, and
%% `undefined' or the bounds of a concurrency estimation (at least one of
%% `min', `max', `step', `threshold'). The document has no environment
%% report, and engine errors come as the engine gives them.
-spec benchmark([code()], options(), mode_opts()) -> result().
benchmark(_Codes, _RunOpts, ModeOpts) when ModeOpts =:= #{} ->
    {error, squeeze_needs_bounds};
benchmark(Codes, RunOpts, ModeOpts) ->
    Opts = case ModeOpts of
               undefined -> RunOpts;
               _ -> RunOpts#{squeeze => ModeOpts}
           end,
    case benchmark(Codes, Opts#{env => false}) of
        {error, {bench, R}} -> {error, R};
        Other -> Other
    end.

%% @doc A project's bench modules (kind `bench'; see docs/ci.md): `Dir'
%% holds `*_bench.erl' sources (or `*_bench.ex', or compiled bench
%% modules) exporting `benchmarks/0'; they are compiled against the
%% project's `code_paths' and run as {@link benchmark/2} runs code (its
%% options, `memory' and `reductions' too), each benchmark naming its
%% module and input.
%% ```
%% {ok, Doc} = beamlab:bench("bench", #{code_paths => ["_build/default/lib/myapp/ebin"],
%%                                      samples => 5, reductions => true}).
%% '''
-spec bench(file:filename(), experiment_opts()) -> result().
bench(Dir, Opts) ->
    experiment(beamlab_experiment_opts:bench(Dir, Opts)).

%% @doc A project's bench modules checked (kind `check'), as `beamlab
%% check' does: validated (each benchmark's reductions and words per
%% iteration), or with `against' (a git ref) the working tree against
%% that commit in paired rounds of fresh VMs (options: `root', `bench',
%% `rounds', `metric' (gated), `threshold', `alpha', `duration',
%% `samples', `warmup', `vm_args', `build', `timeout' in ms: each phase's
%% deadline). A value it refuses has the line `beamlab check' gives, naming
%% the key (`rounds needs against REF').
%% ```
%% {ok, Doc} = beamlab:check(#{against => "HEAD~1", metric => [reductions], threshold => 0.01}).
%% '''
-spec check(experiment_opts()) -> result().
check(Opts) ->
    experiment(beamlab_experiment_opts:check(Opts)).

%% @doc The workload suite (kind `suite'): `Names' of workloads ([] for
%% every built-in one) and the options of `beamlab suite' (`params',
%% `profile', `repeat', `timeout' in ms, `memory', `preset', `node',
%% `verbose').
-spec suite([atom() | string()], experiment_opts()) -> result().
suite(Names, Opts) ->
    experiment(beamlab_experiment_opts:suite(Names, Opts)).

%% @doc The matrix of VM configurations (kind `matrix') over an inner
%% experiment given as the call that would run it (`{benchmark, Codes,
%% Opts}', `{suite, Names, Opts}', `{amqp, Uri, Opts}'); options `vm',
%% `sweep', `erl', `wrap', `repeat', `baseline', `target' (`rabbitmq' or
%% `#{cmd, node, cookie}') and `otp'.
-spec matrix(inner(), experiment_opts()) -> result().
matrix(Inner, Opts) ->
    experiment(beamlab_experiment_opts:matrix(inner(Inner), Opts)).

%% @doc A running node's telemetry and the detectors' findings (kind
%% `watch'): options `duration' (ms), `interval' (ms), `top', `msacc',
%% `cookie'; `verbose' prints a line per interval on stderr.
-spec watch(node() | string(), experiment_opts()) -> result().
watch(Node, Opts) ->
    experiment(beamlab_experiment_opts:watch(Node, Opts)).

%% @doc An AMQP 0-9-1 load on the broker at `Uri' (kind `amqp'), with
%% PerfTest's options (`producers', `consumers', `duration' in seconds,
%% `rate', `confirm', `closed_loop', ...), `nodes', `watch' (the broker's
%% node, or `#{node, cookie}': its telemetry beside the load); PerfTest's
%% lines go to `sink' as `{amqp, Line}'. The options PerfTest spells in its
%% own syntax take the value it means (docs/amqp.md, "From Erlang and
%% Elixir"): `variable_rate', `variable_size', `variable_latency' steps
%% `[{Value, Seconds}]'; `publishing_interval' seconds; `body_files' file
%% names (read into the bodies) and `body_content_type'; `message_properties'
%% a map (`priority', `content_type', ..., `headers' a map); `queue_args'
%% and `consumer_args' `[{Key, Value}]'; `max_length_bytes' and
%% `stream_segment_bytes' bytes; `max_age' seconds; `stream_offset'
%% `first', `last', `next' (text), an offset or `{timestamp, Seconds}';
%% `recovery_interval' `{MinMs, MaxMs}'; `output_file' a file name; `tls'
%% `#{cacertfile, certfile, keyfile}'. Each is checked as the command line
%% checks its flag, with the same line naming the key.
-spec amqp(unicode:chardata(), experiment_opts()) -> result().
amqp(Uri, Opts) ->
    experiment(beamlab_experiment_opts:amqp(Opts#{uri => Uri})).

%% @doc A perf profile (kind `profile') of an inner experiment (as for
%% {@link matrix/2}), run in a fresh VM under perf, or of a running VM
%% (`{pid, OsPid}', `{node, Node}'): options `frequency', `call_graph',
%% `duration' (ms), `label', `cookie'. With `process' (a list of pids as
%% the node prints them, registered names, `top:reductions',
%% `top:message_queue') and `{node, Node}': a call capture of those
%% processes (kind `capture', no module loaded on the node): `duration'
%% (ms), `stacks' (sample | trace), `calls' (time | none), `duty' (the %
%% of the time the call_time patterns are on, default 5; 100: all along),
%% `duty_period' (ms), `patterns' (own | all), `max_rate', `max_total',
%% `cookie'.
-spec profile(inner() | {pid, pos_integer()} | {node, node() | string()}, experiment_opts()) -> result().
profile(Subject, Opts) ->
    experiment(beamlab_experiment_opts:profile(inner(Subject), Opts)).

%% @doc Why this machine runs the BEAM slower (kind `doctor'): the
%% probe at several scheduler counts in fresh VMs, findings, remedies
%% measured and ranked; the document's `extra' holds `recommendation'
%% (the first line `beamlab doctor' prints). Options: `quick', `vm' (the
%% flags the VM is started with today), `wrap' ("taskset -c 0"),
%% `cgroup', `reps', `curve_reps', `probe_ms', `schedulers' ("1,2,4"),
%% `max_remedies', `remedy' (flag strings measured besides the
%% findings' own); `sink' gets `{doctor, Line}' per phase and VM.
%% ```
%% {ok, Doc} = beamlab:doctor(#{quick => true}),
%% maps:get(<<"recommendation">>, maps:get(extra, Doc)).
%% '''
-spec doctor(experiment_opts()) -> result().
doctor(Opts) ->
    experiment(beamlab_experiment_opts:doctor(Opts)).

%% @doc `Doc' (a document an experiment returned, or one
%% `beamlab_result:load/1' read) as text: `text' (the view its command
%% prints), `json' (the saved form), `csv', `markdown', `github-bigger',
%% `github-smaller' or `bencher' (the formats of CI tools; they leave out
%% measures they cannot express). The format may be given as an atom or
%% its name. Text uses Unicode (±, sparklines); see {@link format/3}.
%% ```
%% {ok, Text} = beamlab:format(Doc, text), io:put_chars(Text).
%% {ok, Json} = beamlab:format(Doc, json), file:write_file("run.json", Json).
%% '''
-spec format(beamlab_result:result(), beamlab_render_view:format() | string() | binary()) ->
          {ok, unicode:chardata()} | {error, error_reason()}.
format(Doc, Format) ->
    format(Doc, Format, #{}).

%% @doc {@link format/2} with the text view's options: `unicode'
%% (`false': ASCII only), `report' (a benchmark's table: `basic',
%% `extended', `full' or `auto'), `top' (rows of a profile's table).
-spec format(beamlab_result:result(), beamlab_render_view:format() | string() | binary(),
             beamlab_render_view:opts()) -> {ok, unicode:chardata()} | {error, error_reason()}.
format(Doc, Format, Opts) ->
    beamlab_render_view:render(Doc, Format, Opts).

%% @doc The self-contained HTML report of one or several documents, as
%% `beamlab report' makes it from saved files: `Docs' are documents,
%% `{Label, Doc}' pairs or saved files' names; the first is the baseline
%% of the comparison. Options: `title', `history' (`true': the documents
%% are a history, drawn in `order' (`auto', `time' or `commit') with each
%% benchmark's trend), `run_noise' (the between-run term of verdicts
%% between runs with repetitions, a fraction: `beamlab report
%% --run-noise PCT'), `output' (a file: the page is written there
%% atomically and `ok' returned; without it, `{ok, Html}').
%% ```
%% {ok, Html} = beamlab:report([Before, After], #{title => "before and after"}).
%% ok = beamlab:report(["base.json", "new.json"], #{output => "report.html"}).
%% '''
-spec report([beamlab_experiment_report:source()], beamlab_experiment_report:opts()) ->
          ok | {ok, binary()} | {error, error_reason()}.
report(Docs, Opts) ->
    beamlab_experiment_report:report(Docs, Opts).

%% @doc One line explaining an error returned or raised by this module.
-spec format_error(error_reason()) -> unicode:chardata().
format_error(Reason) ->
    beamlab_format_reason:line(fun error_line/1, Reason).

error_line({job_failed, Name, Message}) ->
    io_lib:format("~ts: ~ts", [Name, Message]);
error_line(squeeze_needs_bounds) ->
    "an empty map as the third argument of benchmark/3 does not start a concurrency estimation: "
    "ask for one with benchmark(Codes, Opts#{squeeze => #{}}) or give its bounds (min, max, step, "
    "threshold)";
error_line({unknown_format, _} = R) ->
    beamlab_render_view:format_error(R);
error_line({not_a_document, _} = R) ->
    beamlab_render_view:format_error(R);
error_line({report, _} = R) ->
    beamlab_experiment_report:format_error(R);
error_line({unknown_option, _} = R) ->
    beamlab_experiment_opts:format_error(R);
error_line({bad_option, _, _} = R) ->
    %% one line for a bad value, whoever refused it (the maps' reader, or
    %% the engine behind benchmark/3 and the short forms)
    beamlab_experiment_opts:format_error(R);
error_line(Reason) ->
    %% the experiment layer's errors (a kind's `{Kind, R}', its own), else
    %% the engine's (benchmark/3 and the short forms give them untagged)
    case beamlab_experiment:is_error(Reason) of
        true -> beamlab_experiment:format_error(Reason);
        false -> beamlab_engine:format_error(Reason)
    end.

%%====================================================================
%% Internal
%%====================================================================

%% `{amqp, Uri, Opts}' is the call amqp/2.
inner({amqp, Uri, Opts}) when is_map(Opts) -> {amqp, Opts#{uri => Uri}};
inner(Other) -> Other.

%% The caller's VM is left as found: distribution beamlab starts on the
%% way is stopped again (beamlab_experiment_dist:as_found/1).
experiment({ok, Exp}) -> beamlab_experiment_dist:as_found(fun() -> beamlab_experiment:run(Exp) end);
experiment({error, _} = E) -> E.

%% The short forms: no environment report, no pre-flight checks; a failed
%% job raises. Result sections are JSON objects: their keys are binaries.
benchmarks(Codes, RunOpts) ->
    case benchmark(Codes, maps:merge(#{checks => false, env => false}, RunOpts)) of
        {ok, #{benchmarks := Benches}} ->
            [case B of
                 #{extra := #{<<"status">> := <<"ok">>}} -> B;
                 #{name := Name, extra := #{<<"error">> := Msg}} ->
                     error({beamlab, {job_failed, Name, Msg}})
             end || B <- Benches];
        {error, {bench, Reason}} ->
            error({beamlab, Reason});
        {error, Reason} ->
            error({beamlab, Reason})
    end.

qps(#{extra := #{<<"qps">> := Q}}) when is_number(Q) -> round(Q);
qps(_) -> 0.
