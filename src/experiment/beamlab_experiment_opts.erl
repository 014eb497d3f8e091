%%% @doc Experiments described as plain maps (the public API's form, for
%%% Erlang and Elixir callers) turned into the typed description
%%% ({@link beamlab_experiment:experiment()}). Each kind takes its own
%%% options plus the composition options every kind shares:
%%% <ul>
%%%   <li>`telemetry' (false): record this VM's telemetry and run the
%%%       detectors on it; `verbose' (false): the same, printed live on
%%%       stderr;</li>
%%%   <li>`env' (true): this VM's environment report in the document;</li>
%%%   <li>`sink': a fun receiving {@link beamlab_experiment:event()}s
%%%       (progress, PerfTest's lines);</li>
%%%   <li>`command': the command line to record in the document.</li>
%%% </ul>
%%% An unknown key is an error (`{unknown_option, Key}'), never ignored,
%%% and nothing is implied: concurrency estimation runs only with a
%%% `squeeze' key.
-module(beamlab_experiment_opts).

-export([benchmark/2, bench/2, check/1, suite/2, matrix/2, watch/2, amqp/1, profile/2, inner/1,
         doctor/1, format_error/1]).

-type opts() :: #{atom() => term()}.
%% The inner experiment of a matrix or a profile, as the call that would
%% run it: `{benchmark, Codes, Opts}', `{suite, Names, Opts}', `{amqp, Opts}'.
-type inner() :: {benchmark, [beamlab_engine_code:callable() | beamlab_engine_code:code_map()], opts()}
               | {suite, [atom() | string()], opts()}
               | {amqp, opts()}.
%% Its own (format_error/1), or a kind's refusal of a value (`{Kind, R}',
%% beamlab_experiment:format_error/1).
-type own_reason() :: {unknown_option, term()} | {bad_option, atom(), term()}.
-type error_reason() :: own_reason() | beamlab_experiment:error_reason().
-export_type([opts/0, inner/0, error_reason/0, own_reason/0]).

-define(COMMON, [telemetry, verbose, env, sink, command]).
-define(AFTER, [memory, reductions, profile, msacc]).

%% @doc A benchmark of `Codes': the engine's run options
%% (`beamlab_engine:options()': `samples', `duration', `concurrency',
%% `loop', `rel_ci', `isolated', ...), `squeeze' (`true' or a map of
%% `min', `max', `step', `threshold': concurrency estimation), and the
%% after-phase: `memory' and `reductions' per iteration, `profile' (eprof,
%% fprof, cprof, tprof) of the runner, `msacc' (with `profile' and
%% `verbose').
-spec benchmark([beamlab_engine_code:callable() | beamlab_engine_code:code_map()], opts()) ->
          {ok, beamlab_experiment:experiment()} | {error, error_reason()}.
benchmark(Codes, Opts) when is_list(Codes), is_map(Opts) ->
    Own = maps:keys(beamlab_engine:default_run_opts()) ++ ?AFTER ++ [squeeze],
    known(Own, Opts, fun() -> benchmark_experiment(Codes, Opts) end);
benchmark(Codes, Opts) ->
    {error, {bad_option, benchmark, {Codes, Opts}}}.

benchmark_experiment(Codes, Opts) ->
    What = beamlab_experiment_bench:new(maps:without(?COMMON, Opts#{codes => Codes})),
    common(Opts, kind(bench, What), maps:with(?AFTER, Opts)).

%% @doc A benchmark of a project's bench modules in `Dir' (sources
%% `*_bench.erl', `*_bench.ex', or compiled bench modules): the options of
%% {@link benchmark/2} (`code_paths' are the project's: its modules are
%% compiled and run against them), `include' (directories the sources'
%% `-include' searches), `root' (the project, for its commit; default the
%% current directory).
-spec bench(file:filename(), opts()) -> {ok, beamlab_experiment:experiment()} | {error, error_reason()}.
bench(Dir, Opts) when is_map(Opts) ->
    Own = maps:keys(beamlab_engine:default_run_opts()) ++ ?AFTER ++ [squeeze, include, root],
    known(Own, Opts,
          fun() ->
                  What = beamlab_experiment_bench:new(maps:without(?COMMON, Opts#{dir => Dir})),
                  common(Opts, kind(bench, What), maps:with(?AFTER, Opts))
          end);
bench(Dir, Opts) ->
    {error, {bad_option, bench, {Dir, Opts}}}.

%% @doc A project's bench modules checked: `root' (the project; default
%% the current directory), `bench' (default "bench"), `build' (default
%% true); with `against' (a git ref), the working tree against that
%% commit: `rounds' (12), `metric' (the gated metrics: time, reductions,
%% memory; default [time]), `threshold' (a fraction, default 0.05),
%% `alpha' (0.01), `duration', `samples', `warmup' per side and round
%% (100 ms, 3, 1), `vm_args' (a string), `timeout' (ms: each build,
%% validation and side's VM; default 600000), `ci' (more rounds until
%% confident, a fraction) with `max_time' (ms).
-spec check(opts()) -> {ok, beamlab_experiment:experiment()} | {error, error_reason()}.
check(Opts) when is_map(Opts) ->
    Own = [K || #{name := K} <- beamlab_experiment_check:options()],
    known(Own, Opts, fun() -> check_experiment(Opts) end);
check(Opts) ->
    {error, {bad_option, check, Opts}}.

check_experiment(Opts) ->
    %% (the schema's check, the command line's: the same reasons)
    case beamlab_experiment_check:check_options(maps:without(?COMMON, Opts)) of
        ok ->
            What = beamlab_experiment_check:new(maps:without(?COMMON, Opts)),
            common(Opts, kind(check, What), #{});
        {error, R} ->
            {error, {check, {option, R}}}
    end.

%% @doc `beamlab doctor': the options of its command as a map (`quick',
%% `vm' and `wrap' as strings of flags, `cgroup', `reps', `probe_ms',
%% `schedulers' ("1,2,4"), `remedy' (a list of flag strings); or
%% `node' ("name@host", a running node), its `cookie' and `duration'
%% (seconds)); the doctor's phases go to `sink' as `{doctor, Line}'. With
%% `target' (`rabbitmq') and `load' (`{amqp, Opts}', as a matrix's inner
%% AMQP load) the remedies are measured on a private broker under that
%% load.
-spec doctor(opts()) -> {ok, beamlab_experiment:experiment()} | {error, error_reason()}.
doctor(Opts) when is_map(Opts) ->
    Own = [K || #{name := K} <- beamlab_experiment_doctor:options()],
    known(Own, Opts,
          fun() ->
                  %% (an atom is text too, "rabbitmq" a target; the kind
                  %% checks the rest against its schema, as the command
                  %% line's flags)
                  Texts = maps:map(fun(target, T) when T =:= "rabbitmq"; T =:= <<"rabbitmq">> -> rabbitmq;
                                      (target, T) -> T;
                                      (flavor, F) when F =:= "jit"; F =:= <<"jit">> -> jit;
                                      (flavor, F) when F =:= "emu"; F =:= <<"emu">> -> emu;
                                      (flavor, F) -> F;
                                      (_, V) when is_atom(V), not is_boolean(V) -> atom_to_list(V);
                                      (_, V) -> V
                                   end, maps:with(Own -- [load], Opts)),
                  Load = case maps:find(load, Opts) of
                             error -> #{};
                             {ok, {amqp, _} = L} ->
                                 case inner(L) of
                                     {ok, I} -> #{load => I};
                                     {error, _} = E -> throw({inner, E})
                                 end;
                             {ok, L} -> throw({bad_option, load, L})
                         end,
                  Exp = kind(doctor, case beamlab_experiment_doctor:new(Texts) of
                                         {ok, D} -> doctor_load(D, Load);
                                         Other -> Other
                                     end),
                  Target = case maps:get(target, Texts, none) of
                               none -> #{};
                               _ -> #{target => #{kind => rabbitmq, otp => []}}
                           end,
                  common(Opts, maps:merge(Exp, Target), #{})
          end);
doctor(Opts) ->
    {error, {bad_option, doctor, Opts}}.

%% A load command is the load itself: an amqp given too only lends it
%% {flags}; without one, the broker's load is that command alone.
doctor_load(#{load_cmd := Cmd} = D, Load) when Cmd =/= none ->
    case beamlab_experiment_doctor:load_rule(D, maps:is_key(load, Load)) of
        ok when map_size(Load) =:= 0 ->
            case inner({amqp, #{}}) of
                {ok, I} -> {ok, D#{load => I}};
                {error, _} = E -> throw({inner, E})
            end;
        ok -> {ok, maps:merge(D, Load)};
        {error, _} = E -> E
    end;
doctor_load(D, Load) ->
    {ok, maps:merge(D, Load)}.

%% @doc The workload suite: `Names' of workloads ([] for every built-in
%% one), `params' (workload => key => a value, or a list of values to
%% sweep; a string value is a binary or an atom), `profile' (quick | full), `repeat', `timeout' (ms per
%% repetition), `memory' (one more traced repetition), `preset' (a
%% published table's rows, by name or file) and its `node', `code_paths',
%% `ci' (repeat each point until confident, a fraction) with `max_time'
%% (ms per point), `metric' (time | cpu).
-spec suite([atom() | string() | binary()], opts()) ->
          {ok, beamlab_experiment:experiment()} | {error, error_reason()}.
suite(Names, Opts) when is_list(Names), is_map(Opts) ->
    Own = [K || #{name := K} <- beamlab_experiment_suite:options(), K =/= names],
    known(Own, Opts, fun() -> suite_experiment(Names, Opts) end);
suite(Names, Opts) ->
    {error, {bad_option, suite, {Names, Opts}}}.

suite_experiment(Names, Opts) ->
    Text = [text(N) || N <- Names],
    %% (the schema's check, the command line's: the same reasons)
    Checked = case beamlab_experiment_suite:check_options((maps:without(?COMMON, Opts))#{names => Text}) of
                  ok -> params(maps:get(params, Opts, #{}));
                  {error, R} -> {error, {suite, {option, R}}}
              end,
    case Checked of
        {error, _} = E -> E;
        {ok, Params} ->
            Node = case maps:find(node, Opts) of
                       {ok, N} -> {ok, Remote} = beamlab_experiment_suite:remote_node(N), #{node => Remote};
                       error -> #{}
                   end,
            Given = maps:merge(maps:with([profile, repeat, timeout, code_paths, flavor, ci, max_time, metric],
                                         Opts),
                               Node#{names => Text, params => Params}),
            Preset = case maps:find(preset, Opts) of
                         {ok, P} -> #{preset => text(P)};
                         error -> #{}
                     end,
            What = beamlab_experiment_suite:new(maps:merge(Given, Preset)),
            common(Opts, kind(suite, What), maps:with([memory], Opts))
    end.

%% workload => key => [text], as the suite's planner reads the command
%% line's `--param'.
params(Params) when is_map(Params) ->
    try {ok, maps:fold(fun(W, Kvs, Acc) when is_map(Kvs) ->
                               Acc#{unicode:characters_to_binary(text(W)) =>
                                        maps:fold(fun(K, V, A) -> A#{text(K) => values(V)} end, #{}, Kvs)};
                          (W, V, _) -> throw({bad_option, params, {W, V}})
                       end, #{}, Params)}
    catch throw:{bad_option, _, _} = E -> {error, E}
    end;
params(Other) ->
    {error, {bad_option, params, Other}}.

%% A list is a list of values (a sweep), never a string: `[10, 12]' is two
%% values; a string value is a binary or an atom (or a list's element).
values(V) when is_list(V) ->
    [text(X) || X <- V];
values(V) ->
    [text(V)].

text(V) when is_atom(V) -> atom_to_list(V);
text(V) when is_binary(V) -> unicode:characters_to_list(V);
text(V) when is_integer(V) -> integer_to_list(V);
text(V) when is_float(V) -> float_to_list(V, [short]);
text(V) when is_list(V) ->
    case io_lib:char_list(V) of
        true -> V;
        false -> throw({bad_option, value, V})
    end;
text(V) -> throw({bad_option, value, V}).

%% @doc A matrix of VM configurations over an inner experiment: `vm'
%% (emulator argument strings), `sweep' (scheduler counts, or a range
%% "1..4"), `erl' (executables), `wrap' (wrapper commands), `repeat',
%% `baseline', `ci' (repeat until confident, a fraction) with `max_time'
%% (ms), `metric' (time | cpu: the inner run's or suite's); `target' (`rabbitmq', or `#{cmd, node, cookie}') with
%% `otp' (installation directories) starts a system under test per
%% configuration.
-spec matrix(inner(), opts()) -> {ok, beamlab_experiment:experiment()} | {error, error_reason()}.
matrix(Inner, Opts) when is_map(Opts) ->
    Own = [K || #{name := K} <- beamlab_experiment_matrix:options(), K =/= inner],
    known(Own, Opts,
          fun() ->
                  %% (the schema's check, the command line's: the same reasons)
                  case inner(Inner) of
                      {ok, #{run := {InnerKind, _}} = InnerExp} ->
                          Given = (maps:without(?COMMON, Opts))#{inner => InnerKind},
                          case beamlab_experiment_matrix:check_options(Given) of
                              ok -> matrix_experiment(InnerExp, Opts);
                              {error, R} -> {error, {matrix, {option, R}}}
                          end;
                      {error, _} = E ->
                          E
                  end
          end);
matrix(_Inner, Opts) ->
    {error, {bad_option, matrix, Opts}}.

matrix_experiment(InnerExp, Opts) ->
    %% (a range's mistake is said as the command line says it)
    Sweep = case maps:get(sweep, Opts, []) of
                S when is_binary(S) -> range(unicode:characters_to_list(S));
                S -> case io_lib:char_list(S) andalso S =/= [] of
                         true -> range(S);
                         false -> S
                     end
            end,
    Target = target(maps:get(target, Opts, none), maps:get(otp, Opts, [])),
    Baseline = case maps:get(baseline, Opts, undefined) of
                   undefined -> undefined;
                   B -> unicode:characters_to_binary(text(B))
               end,
    What = beamlab_experiment_matrix:new((maps:with([vm, erl, flavor, wrap, repeat, ci, max_time, metric], Opts))#{
                                           inner => InnerExp, sweep => Sweep, target => Target,
                                           baseline => Baseline}),
    common(Opts, maps:merge(kind(matrix, What), case Target of none -> #{}; _ -> #{target => Target} end),
           #{}).

range(S) ->
    case beamlab_env_matrix:parse_range(S) of
        {ok, Ks} -> Ks;
        {error, R} -> throw({kind, {matrix, R}})
    end.

target(none, _) -> none;
target(rabbitmq, Otp) -> #{kind => rabbitmq, otp => Otp};
target(#{cmd := Cmd, node := Node} = T, Otp) ->
    #{kind => cmd, cmd => text(Cmd), node => text(Node), cookie => cookie(T), otp => Otp};
target(Other, _) -> throw({bad_option, target, Other}).

%% @doc The inner experiment of a matrix or a profile, from the call that
%% would run it.
-spec inner(inner()) -> {ok, beamlab_experiment:experiment()} | {error, error_reason()}.
inner({benchmark, Codes, Opts}) -> benchmark(Codes, Opts);
inner({suite, Names, Opts}) -> suite(Names, Opts);
inner({amqp, Opts}) -> amqp(Opts);
inner(Other) -> {error, {bad_option, inner, Other}}.

%% @doc Watching a running node: `duration' (ms; default: until
%% interrupted or the node goes down), `interval' (ms), `top', `msacc',
%% `capture', `long_gc' and `long_schedule' (ms) or `no_system_monitor',
%% `cookie' (`beamlab_experiment_watch:options/0'); `verbose' prints one
%% line per interval on stderr.
-spec watch(node() | string(), opts()) -> {ok, beamlab_experiment:experiment()} | {error, error_reason()}.
watch(Node, Opts) when is_map(Opts) ->
    Own = [K || #{name := K} <- beamlab_experiment_watch:options(), K =/= node],
    known(Own, Opts,
          fun() ->
                  What = beamlab_experiment_watch:new((maps:with(Own, Opts))#{node => text(Node),
                                                                              cookie => cookie(Opts)}),
                  common(maps:remove(telemetry, Opts), kind(watch, What), #{})
          end);
watch(Node, Opts) ->
    {error, {bad_option, watch, {Node, Opts}}}.

%% @doc An AMQP 0-9-1 load in PerfTest's style: the load generator's
%% options (`beamlab_amqp_config:defaults/0': `uri', `producers',
%% `consumers', `duration' in seconds, `rate', `confirm', `closed_loop',
%% ...), `nodes' (a count of VMs, or node names), `watch' (the broker's
%% node, or `#{node, cookie}': its telemetry beside the load).
-spec amqp(opts()) -> {ok, beamlab_experiment:experiment()} | {error, error_reason()}.
amqp(Opts) when is_map(Opts) ->
    Own = [K || #{name := K} <- beamlab_experiment_amqp:options()],
    known(Own, Opts, fun() -> amqp_experiment(Opts) end);
amqp(Opts) ->
    {error, {bad_option, amqp, Opts}}.

amqp_experiment(Opts) ->
    Uri = case maps:find(uri, Opts) of
              {ok, U} -> #{uri => text(U)};
              error -> #{}
          end,
    Nodes = case maps:find(nodes, Opts) of
                {ok, L} when is_list(L) -> #{nodes => [text(X) || X <- L]};
                {ok, N} -> #{nodes => N};
                error -> #{}
            end,
    Watch = case maps:get(watch, Opts, undefined) of
                undefined -> #{};
                #{node := WN} = W -> #{watch => #{node => text(WN), cookie => cookie(W)}};
                WN -> #{watch => #{node => text(WN), cookie => undefined}}
            end,
    Given = maps:merge(maps:without(?COMMON ++ [uri, nodes, watch], Opts), maps:merge(Uri, maps:merge(Nodes, Watch))),
    common(Opts, kind(amqp, beamlab_experiment_amqp:new(Given)), #{}).

%% @doc A perf profile of an inner experiment (run in a fresh VM under
%% perf), of an OS pid (`{pid, N}') or of a node on this machine (`{node,
%% Name}'): `frequency' (Hz), `mode' (graph | flat), `call_graph' (fp |
%% dwarf), `duration' (ms),
%% `label', `cookie' (for a node).
-spec profile(inner() | {pid, pos_integer()} | {node, node() | string()}, opts()) ->
          {ok, beamlab_experiment:experiment()} | {error, error_reason()}.
profile({node, Node}, #{process := Procs} = Opts) ->
    %% A call capture of processes on the node (beamlab_experiment_capture).
    Own = [K || #{name := K} <- beamlab_experiment_capture:options(), K =/= node],
    known(Own, Opts, fun() ->
                             Ps = case Procs of
                                      [_ | _] -> [text(P) || P <- Procs];
                                      _ -> throw({bad_option, process, Procs})
                                  end,
                             C0 = maps:with(Own, Opts),
                             New = beamlab_experiment_capture:new(C0#{node => text(Node), cookie => cookie(Opts),
                                                                      process => Ps}),
                             What = case New of
                                        {error, {bad_process, P}} -> {error, {bad_option, process, P}};
                                        Other -> Other
                                    end,
                             common(Opts, kind(capture, What), #{})
                     end);
profile(Subject, Opts) when is_map(Opts) ->
    %% (the subject is the first argument: not `pid' or `node')
    Own = [K || #{name := K} <- beamlab_experiment_profile:options(), not lists:member(K, [subject, pid, node])],
    known(Own, Opts, fun() -> profile_experiment(Subject, Opts, Own) end);
profile(Subject, Opts) ->
    {error, {bad_option, profile, {Subject, Opts}}}.

profile_experiment(Subject, Opts, Own) ->
    S = case Subject of
            {pid, Pid} when is_integer(Pid), Pid > 0 -> {ok, {pid, Pid}};
            {node, Node} -> {ok, {node, text(Node), cookie(Opts)}};
            _ -> case inner(Subject) of
                     {ok, I} -> {ok, {experiment, I}};
                     {error, _} = E -> E
                 end
        end,
    case S of
        {ok, Subj} ->
            What = beamlab_experiment_profile:new((maps:with(Own, Opts))#{subject => Subj}),
            common(Opts, kind(profile, What), #{});
        {error, _} = E2 -> E2
    end.

%% Builds a kind's experiment with `Build' when `Opts' holds only the
%% kind's own keys and the shared ones; a bad value `Build' throws is the
%% error returned.
known(Own, Opts, Build) ->
    case maps:keys(maps:without(Own ++ ?COMMON, Opts)) of
        [] ->
            try Build()
            catch
                throw:{bad_option, _, _} = Bad -> {error, Bad};
                %% the kind's own refusal, as its errors are: {Kind, R}
                throw:{kind, KindError} -> {error, KindError};
                %% an inner experiment's own error (a doctor's load)
                throw:{inner, {error, InnerError}} -> {error, InnerError}
            end;
        [K | _] ->
            {error, {unknown_option, K}}
    end.

%% The experiment of a kind's `What' (a value refused is thrown, caught by
%% known/3 in this module).
kind(Kind, {ok, What}) -> #{run => {Kind, What}};
kind(_Kind, {error, {bad_option, _, _} = Bad}) -> throw(Bad);
kind(Kind, {error, R}) -> throw({kind, {Kind, R}}).

%% The `cookie' of an option map, as text (undefined when not given).
cookie(Opts) ->
    case maps:get(cookie, Opts, undefined) of
        undefined -> undefined;
        C -> text(C)
    end.

%% The composition every kind shares.
common(Opts, Exp, After) ->
    %% (a shared option of the wrong shape is a bad option, as a kind's)
    _ = [throw({bad_option, K, V}) || K <- [verbose, telemetry, env], {ok, V} <- [maps:find(K, Opts)],
                                      not is_boolean(V)],
    _ = [throw({bad_option, sink, V}) || {ok, V} <- [maps:find(sink, Opts)], not is_function(V, 1)],
    _ = [throw({bad_option, command, V}) || {ok, V} <- [maps:find(command, Opts)], not is_list(V)],
    Telemetry = case {maps:get(verbose, Opts, false), maps:get(telemetry, Opts, false)} of
                    {true, _} -> live;
                    {false, true} -> record;
                    {false, false} -> none
                end,
    Exp1 = maps:merge(Exp#{telemetry => Telemetry, env => maps:get(env, Opts, true)},
                      maps:with([sink, command], Opts)),
    {ok, case map_size(After) of
             0 -> Exp1;
             _ -> Exp1#{'after' => After}
         end}.

%% @doc One line for each error.
-spec format_error(own_reason()) -> unicode:chardata().
format_error(Reason) ->
    beamlab_format_reason:line(fun error_line/1, Reason).

error_line({unknown_option, K}) ->
    io_lib:format("unknown option ~0tp", [K]);
error_line({bad_option, K, V}) ->
    io_lib:format("bad value for option ~0tp: ~0tP", [K, V, 10]);
error_line(Other) ->
    %% (a reason of no kind above: printed, never raised)
    beamlab_format_reason:term(Other).
