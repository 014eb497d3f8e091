%%% @doc The experiment layer's entry point: one typed description of an
%%% experiment in, one result document out. The command line and the
%%% public API ({@link beamlab}) both build an {@link experiment()} and call
%%% {@link run/1}; this layer composes the features around what is run:
%%% the environment report, this VM's telemetry and the detectors' findings
%%% on it (`-v'), the after-phase of a benchmark (`--memory',
%%% `--reductions', `--profile TOOL'), the system under test of a matrix
%%% (`--target', `--target-cmd'), the broker's telemetry beside an AMQP
%%% load (`--watch'), and the inner experiment of a matrix or a profile.
%%%
%%% Live output goes to the caller's `sink' (nothing is printed here, except
%%% the live telemetry lines of `telemetry => live', which the sampler
%%% prints on stderr). What the document says about how the run went (an
%%% interrupt, failed jobs, a broker that went away) is {@link verdict/1}.
%%%
%%% The layer calls features and core, never the command line; features
%%% and core never call it (xref queries in rebar.config).
-module(beamlab_experiment).

-export([run/1, run_inner/1, check/1, verdict/1, inner_kinds/1, kind/1,
         format_error/1, error_class/1, is_error/1]).

-export_type([experiment/0, what/0, kind/0, telemetry/0, after_phase/0, sut/0, dist/0,
              sink/0, event/0, verdict/0, inner/0, error_reason/0]).

%% One experiment: what to run (`run'), and how it is composed.
-type experiment() ::
        #{run := what(),
          %% this VM's telemetry (-v): none, recorded, or recorded and
          %% printed live; the detectors' findings on it join the document
          %% (for `watch', the watched node's lines printed live or not)
          telemetry => telemetry(),
          %% after the samples of a benchmark (a suite: `memory' is one
          %% more traced repetition)
          'after' => after_phase(),
          %% the system under test a matrix starts per configuration
          target => sut(),
          %% this VM's environment report in the document (default true)
          env => boolean(),
          %% where live output goes (default: nowhere)
          sink => sink(),
          %% the command line recorded in the document
          command => [unicode:chardata()],
          %% the launcher's checkpoint (benchmarks and suites in this VM)
          checkpoint => beamlab_runtime_checkpoint:checkpoint() | none,
          %% serve what is measured as live metrics while it runs
          metrics => beamlab_experiment_metrics:spec()}.
%% `{Kind, What}': the kind's name and its own description (see the kind's
%% module, found by beamlab_experiment_kind: beamlab_experiment_bench:bench(),
%% beamlab_experiment_suite:suite(), ...).
-type what() :: {kind(), term()}.
%% The name of a registered kind (beamlab_experiment_kind:all/0): bench,
%% suite, matrix, watch, amqp, profile, check, ...
-type kind() :: atom().
-type telemetry() :: none | record | live.
-type after_phase() :: #{memory => boolean(), reductions => boolean(),
                         profile => beamlab_engine_after:tool(), msacc => boolean()}.
%% The system under test: a private RabbitMQ, or any release or escript
%% started as a command that becomes node `node'.
%% `load_cmd': the load is that command (a user's own tool, PerfTest),
%% not the inner experiment; `profile': how a matrix's profiled
%% repetition records the target (beamlab_experiment_target); `capture':
%% the target's processes a matrix's profiled repetition captures
%% (`--profile-process', as `profile --process' takes them).
-type sut() :: #{kind := rabbitmq | cmd, cmd => string(), node => string(),
                 cookie => string() | undefined, otp => [file:filename()],
                 load_cmd => string(), capture => [string()],
                 profile => #{mode := beamlab_profile:mode(), frequency := pos_integer()}}.
%% This VM as a controller of nodes on other hosts: its name and cookie.
-type dist() :: #{name => string(), cookie => string()}.
-type sink() :: fun((event()) -> any()).
-type event() :: {bench, beamlab_engine:progress()}       % a sampling round
               | {suite, beamlab_suite:event()}           % a point started, a repetition, a point done
               | {matrix, unicode:chardata()}             % a line per repetition, the target's lines
               | {amqp, binary()}                         % PerfTest's report lines
               | {check, unicode:chardata()}              % a step of a check (a build, a round)
               | {doctor, unicode:chardata()}             % a phase or a VM of the doctor's protocol
               | {note, unicode:chardata()}              % one line worth telling (a node went down)
               | {metrics, unicode:chardata()}.           % where the live metrics are served
%% How the run went, as its document tells it, and the lines worth
%% telling about it (a failed job, why nothing was measured).
-type verdict() :: {ok | interrupted | failed, [unicode:chardata()]}.
%% How a matrix or a profile runs an inner experiment (see run_inner/1).
-type inner() :: #{fresh := beamlab_runtime_peer:call_spec(),
                   here := fun((experiment()) -> {0 | 1 | 2 | 130, beamlab_result:result() | {error, binary()}})}.
%% A kind's error is `{Kind, Reason}' (its module's format_error/1 and
%% error_class/1 take `Reason'); the others are this layer's.
-type error_reason() :: {dist, beamlab_experiment_dist:error_reason()}
                      | {telemetry, term()}
                      | {metrics, beamlab_experiment_metrics:error_reason()}
                      | {unsupported, atom(), kind()}
                      | {inner_kind, kind(), kind()}
                      | {unknown_kind, term()}
                      | {kind(), term()}.

%% @doc Runs an experiment and returns its result document; `{error, R}'
%% when it could not run ({@link format_error/1} says why in one line,
%% {@link error_class/1} whether it was the caller's mistake).
-spec run(experiment()) -> {ok, beamlab_result:result()} | {error, error_reason()}.
run(Exp0) ->
    case check(Exp0) of
        ok ->
            case beamlab_experiment_metrics:start(Exp0) of
                {ok, Exp} ->
                    %% Measuring loops stop between samples on an interrupt
                    %% and keep what they measured.
                    ok = beamlab_runtime_interrupt:subscribe(),
                    try dispatch(Exp)
                    after
                        ok = beamlab_runtime_interrupt:unsubscribe(),
                        ok = beamlab_experiment_metrics:stop(Exp)
                    end;
                {error, _} = E ->
                    E
            end;
        {error, _} = E ->
            E
    end.

%% An inner experiment run here, by a process that runs the outer one
%% (and is subscribed to interrupts already).
nested(Exp) ->
    case check(Exp) of
        ok -> dispatch(Exp);
        {error, _} = E -> E
    end.

%% The kind's module runs it (beamlab_experiment_kind); a matrix or a
%% profile gets the way to run its inner experiment (in a fresh VM, or
%% here against a target) through this module again.
dispatch(#{run := {Kind, What}} = Exp) ->
    {ok, Mod} = beamlab_experiment_kind:find(Kind),
    Mod:run(What, Exp, inner()).

%% How a matrix or a profile runs its inner experiment: in a fresh VM
%% (by MFA, with the experiment appended to the arguments) or here.
inner() ->
    #{fresh => {?MODULE, run_inner, []},
      here => fun(Exp) -> outcome(fun() -> nested(Exp) end) end}.

%% @doc Runs an experiment the way a command line would and returns its
%% exit code and document, or the one-line error in place of the
%% document: what each fresh VM of a matrix or a profile runs (called by
%% MFA there), and what a matrix runs against its target here. Never
%% raises.
-spec run_inner(experiment()) -> {0 | 1 | 2 | 130, beamlab_result:result() | {error, binary()}}.
run_inner(Exp) ->
    outcome(fun() -> run(Exp) end).

outcome(Run) ->
    try Run() of
        {ok, Doc} ->
            {code(verdict(Doc)), Doc};
        {error, R} ->
            Code = case error_class(R) of usage -> 2; failure -> 1 end,
            {Code, {error, unicode:characters_to_binary(format_error(R))}}
    catch
        Class:Reason ->
            {1, {error, unicode:characters_to_binary(
                          io_lib:format("internal error: ~0tP", [{Class, Reason}, 12]))}}
    end.

code({ok, _}) -> 0;
code({interrupted, _}) -> beamlab_runtime_interrupt:exit_code();
code({failed, _}) -> 1.

%% @doc Checks what can be checked before anything starts: the kind, the
%% kinds an experiment combines, options that cannot go together, a
%% suite's plan, a matrix's inner experiment.
-spec check(experiment()) -> ok | {error, error_reason()}.
check(#{run := {Kind, What}} = Exp) ->
    case beamlab_experiment_kind:find(Kind) of
        {ok, Mod} ->
            Composes = optional(Mod, composes, [], []),
            Unsupported = [{unsupported, K, Kind} || K <- ['after', target], maps:is_key(K, Exp),
                                                     not lists:member(K, Composes)],
            case Unsupported of
                [E | _] -> {error, E};
                [] -> check_inner(Mod, Kind, What, Exp)
            end;
        error ->
            {error, {unknown_kind, Kind}}
    end;
check(Other) ->
    {error, {unknown_kind, Other}}.

%% A matrix's or a profile's inner experiment first, then the kind's own
%% checks.
check_inner(Mod, Kind, What, Exp) ->
    case optional(Mod, inner, [What], none) of
        {ok, #{run := {Inner, _}} = I} ->
            case lists:member(Inner, inner_kinds(Kind)) of
                true ->
                    case check(I) of
                        ok -> Mod:check(What, Exp);
                        {error, _} = E -> E
                    end;
                false ->
                    {error, {inner_kind, Kind, Inner}}
            end;
        _ ->
            Mod:check(What, Exp)
    end.

%% An optional callback of a kind, or `Default' when it has none.
optional(Mod, F, Args, Default) ->
    {module, Mod} = code:ensure_loaded(Mod),
    case erlang:function_exported(Mod, F, length(Args)) of
        true -> apply(Mod, F, Args);
        false -> Default
    end.

%% @doc The kinds of experiment a kind can run inside it (a matrix's, a
%% profile's; none for the others).
-spec inner_kinds(kind()) -> [kind()].
inner_kinds(Kind) ->
    case beamlab_experiment_kind:find(Kind) of
        {ok, Mod} -> optional(Mod, inner_kinds, [], []);
        error -> []
    end.

%% @doc What kind of experiment this is.
-spec kind(experiment()) -> kind().
kind(#{run := {Kind, _}}) -> Kind.

%% @doc How the run went, read from its document (its kind's verdict; a
%% document of no registered kind: interrupted when partial, else ok).
-spec verdict(beamlab_result:result()) -> verdict().
verdict(#{kind := Kind} = Doc) ->
    case beamlab_experiment_kind:find(Kind) of
        {ok, Mod} -> Mod:verdict(Doc);
        error -> generic_verdict(Doc)
    end;
verdict(Doc) ->
    generic_verdict(Doc).

generic_verdict(#{partial := true}) -> {interrupted, []};
generic_verdict(_) -> {ok, []}.

%% @doc Whether an error is the caller's mistake (`usage': a bad option,
%% code that does not compile, an unknown workload) or a failure of the
%% run (`failure': a broker that refused, perf that cannot record).
-spec error_class(error_reason()) -> usage | failure.
error_class({dist, R}) -> beamlab_experiment_dist:error_class(R);
error_class({telemetry, _}) -> failure;
error_class({metrics, _}) -> failure;
error_class({unsupported, _, _}) -> usage;
error_class({inner_kind, _, _}) -> usage;
error_class({unknown_kind, _}) -> usage;
error_class({Kind, R}) ->
    {ok, Mod} = beamlab_experiment_kind:find(Kind),
    Mod:error_class(R).

%% @doc Whether `Reason' is one of this layer's errors (its own, or a
%% registered kind's `{Kind, Reason}'): what {@link format_error/1} and
%% {@link error_class/1} take.
-spec is_error(term()) -> boolean().
is_error({Tag, _}) when Tag =:= dist; Tag =:= telemetry; Tag =:= metrics; Tag =:= unknown_kind ->
    true;
is_error({Tag, _, _}) when Tag =:= unsupported; Tag =:= inner_kind ->
    true;
is_error({Kind, _}) ->
    beamlab_experiment_kind:find(Kind) =/= error;
is_error(_) ->
    false.

%% @doc One line for each error.
-spec format_error(error_reason()) -> unicode:chardata().
format_error(Reason) ->
    beamlab_format_reason:line(fun error_line/1, Reason).

error_line({dist, R}) -> beamlab_experiment_dist:format_error(R);
error_line({telemetry, R}) -> beamlab_runtime_telemetry:format_error(R);
error_line({metrics, R}) -> beamlab_experiment_metrics:format_error(R);
error_line({unknown_kind, Kind}) ->
    io_lib:format("no experiment of kind ~0tP (the kinds: ~ts)",
                  [Kind, 5, lists:join(", ", [atom_to_list(M:name()) || M <- beamlab_experiment_kind:all()])]);
error_line({unsupported, 'after', Kind}) ->
    io_lib:format("a ~ts experiment has no after-phase (memory, reductions, profile: a benchmark's; "
                  "memory: a suite's)", [Kind]);
error_line({unsupported, target, Kind}) ->
    io_lib:format("a ~ts experiment has no system under test (a matrix has)", [Kind]);
error_line({inner_kind, Outer, Inner}) ->
    io_lib:format("a ~ts cannot run a ~ts experiment inside it (it runs: ~ts)",
                  [Outer, Inner, lists:join(", ", [atom_to_list(K) || K <- inner_kinds(Outer)])]);
error_line({Kind, R} = Reason) ->
    case beamlab_experiment_kind:find(Kind) of
        {ok, Mod} -> Mod:format_error(R);
        error -> beamlab_format_reason:term(Reason)
    end;
error_line(Other) ->
    %% (a reason of no kind: printed, never raised)
    beamlab_format_reason:term(Other).
