%%% @doc `beamlab doctor' as an experiment kind: why this machine runs
%%% the BEAM slower, diagnosed, with the remedies measured and ranked.
%%% One fixed protocol in four phases, each told on the sink:
%%%
%%% 1. facts: the machine's (`beamlab_env_doctor_facts') and, from each
%%%    probed VM, what it runs with (`beamlab_suite_probe:vm/0');
%%% 2. curve: the probe (`beamlab_suite_probe') in fresh VMs with the
%%%    default flags and at scheduler counts 1, 2, 4, ... up to twice the
%%%    CPUs (`+S N:N'), the configurations interleaved repetition by
%%%    repetition, and a USL fit of the capacity;
%%% 3. diagnosis: findings from the facts, the default's figures and the
%%%    curve (`beamlab_env_doctor');
%%% 4. remedies: the findings' flag sets measured against the default,
%%%    again interleaved in fresh VMs, ranked with intervals.
%%%
%%% The default configuration is the VM as the user starts it: `vm_args'
%%% (default none), under `wrap' (e.g. `taskset -c 0') and in `cgroup'
%%% (a cgroup directory each VM joins before it starts). An interrupt
%%% stops between two VMs (the running one is interrupted too) and the
%%% document keeps what was measured, `partial'.
%%%
%%% With a system under test (`target' rabbitmq and an inner `amqp'
%%% experiment, `load'), phase 4 measures the remedies on the broker
%%% instead, each started fresh and loaded (`beamlab_experiment_doctor_target',
%%% through a matrix as `matrix --target' runs it).
%%% With `node' the doctor reads a running node instead, over
%%% distribution, for `duration' while it works, and recommends flags for
%%% its next start without measuring them (`beamlab_experiment_doctor_node').
-module(beamlab_experiment_doctor).
-behaviour(beamlab_experiment_kind).

-export([name/0, options/0, new/1, check/2, run/3, verdict/1, error_class/1, format_error/1,
         composes/0, inner_kinds/0, inner/1]).
-export([check_options/1, load_rule/2]).

-export_type([doctor/0, error_reason/0]).

-type doctor() :: #{quick := boolean(),
                    reps := pos_integer(),              % repetitions of each remedy
                    curve_reps := pos_integer(),        % repetitions of each curve point
                    warmup_ms := non_neg_integer(),
                    duration_ms := pos_integer(),       % measured time of each load
                    vm_args := [string()],
                    wrap := [string()],
                    cgroup := file:filename() | none,
                    counts := [pos_integer()] | auto,
                    remedies := [binary()],             % measured besides the findings' own
                    max_remedies := pos_integer(),
                    root := file:filename(),
                    target := none | rabbitmq,          % remedies measured on a broker
                    otp := file:filename() | none,       % the broker's OTP installation
                    flavor := beamlab_runtime_otp:flavor() | none,  % the broker's emulator flavour
                    load_cmd := string() | none,        % the broker's load: a command (PerfTest)
                    load => beamlab_experiment:experiment(),  % the target's load (an amqp)
                    broker => beamlab_experiment_doctor_target:broker(),
                    broker_wrap => [string()],
                    node := string() | none,                 % doctor --node: a running node
                    cookie := string() | undefined,
                    node_duration_ms := pos_integer()}.
-type error_reason() :: {option, beamlab_schema:error_reason()} | {vm_start, binary()} | {cgroup, file:filename(), term()}
                      | target_needs_load | load_needs_target | {target_start, usage | failure, binary()}
                      | load_cmd_without_flags
                      | beamlab_experiment_doctor_node:error_reason().

-define(CONF, 0.95).

%% @doc The kind's tag.
-spec name() -> atom().
name() -> doctor.

%% @doc The options (the command line's and the API's), as maps of the
%% CLI option schema.
-spec options() -> [beamlab_schema:option()].
options() ->
    [#{name => quick, long => "quick", type => boolean, default => false,
       help => "the short protocol: at most 2 minutes on a 2-core machine (fewer repetitions, "
               "shorter loads, fewer remedies)"},
     #{name => vm, long => "vm", type => string, metavar => "ARGS",
       help => "the emulator flags the VM is started with today (the default configuration), "
               "e.g. \"+S 16:16\""},
     #{name => wrap, long => "wrap", type => string, metavar => "CMD",
       help => "start every VM under this command, e.g. \"taskset -c 0\""},
     #{name => cgroup, long => "cgroup", type => string, metavar => "DIR",
       help => "start every VM in this cgroup (a directory with cgroup.procs)"},
     #{name => reps, long => "reps", type => pos_integer, metavar => "N", max => 50,
       max_why => "fresh VMs per remedy",
       help => "repetitions of each remedy and of the default (default 5, --quick 3)"},
     #{name => probe_ms, long => "probe-ms", type => pos_integer, metavar => "MS", max => 60000,
       max_why => "one minute per load", hidden => true,
       help => "measured milliseconds of each load in each VM (default 1500, --quick 600)"},
     #{name => schedulers, long => "schedulers", type => string, metavar => "N,N,...", hidden => true,
       help => "the curve's scheduler counts (default 1, 2, 4, ... up to twice the CPUs)"},
     #{name => max_remedies, long => "max-remedies", type => pos_integer, metavar => "N", max => 20,
       max_why => "remedies measured in one run", hidden => true,
       help => "measure at most N of the findings' remedies (default 6, --quick 3)"},
     #{name => remedy, long => "remedy", type => string, metavar => "FLAGS", multi => true,
       help => "also measure this flag set as a remedy, after the findings' own (repeatable)"},
     #{name => curve_reps, long => "curve-reps", type => pos_integer, metavar => "N", max => 50,
       max_why => "fresh VMs per point", hidden => true,
       help => "repetitions of each point of the curve (default 3, --quick 2)"},
     #{name => target, long => "target", type => {enum, [rabbitmq]}, metavar => "KIND",
       help => "measure the remedies on a system under test: rabbitmq (a private broker started fresh "
               "per remedy and repetition, loaded by the amqp command after --)"},
     %% The broker's OTP and flavour as matrix --target takes them, one
     %% each (the remedies are measured against one broker's default),
     %% and its load as a command of the user's (beamlab_experiment_target).
     broker_option(otp, "with --target: run the broker on the Erlang/OTP installed in DIR (default: the erl "
                        "on the PATH; the probe's VMs run on beamlab's own)"),
     broker_option(flavor, "with --target: the broker's emulator flavour (the installation must hold it: "
                           "scripts/install-otp.sh builds both into /opt/beamlab-otp/27)"),
     broker_option(load_cmd, "with --target: your own load tool (PerfTest) instead of amqp, run under /bin/sh "
                             "per remedy and repetition; {uri} (and $BEAMLAB_URI) is the broker's URI, {flags} "
                             "the arguments of the amqp after -- (without {flags}, give no amqp); its PerfTest "
                             "lines are read"),
     #{name => node, long => "node", type => string, metavar => "NAME@HOST",
       help => "diagnose this running node over distribution while it works (no code loaded there, "
               "nothing restarted) and recommend flags for its next start"},
     #{name => cookie, long => "cookie", type => cookie, metavar => "COOKIE",
       help => "with --node: its distribution cookie (default: ~/.erlang.cookie)"},
     #{name => duration, long => "duration", type => pos_number, metavar => "SECONDS", max => 3600,
       max_why => "one hour",
       help => "with --node: how long to watch it (default 10, --quick 5)"},
     %% (the library's `{amqp, Opts}'; the command line's amqp after --)
     #{name => load}].

%% An option of the target's broker, declared where matrix --target
%% declares it (its type and metavar), given once here.
broker_option(Name, Help) ->
    Decl = case Name of
               load_cmd -> beamlab_experiment_target:load_cmd_option();
               _ -> {ok, O} = beamlab_schema:find(Name, beamlab_experiment_matrix:options()), O
           end,
    (maps:remove(multi, Decl))#{help => Help, requires => [target],
                                requires_format => "~ts is for the broker of ~ts rabbitmq: add it"}.

%% @doc Checks the options given (the schema's keys, as given) against
%% the schema and the doctor's own rules: a running `node' is read as it
%% is (no `target', nothing of the probe's applies), `duration' is how long it is
%% watched, `vm' and `wrap' split into words, `schedulers' are counts. The command line's flags are checked
%% here too (new/1).
-spec check_options(#{atom() => term()}) -> ok | {error, beamlab_schema:error_reason()}.
check_options(Given) ->
    beamlab_schema:check(options(), Given, fun(Opt) -> rules(Given, Opt) end).

rules(Given, Opt) ->
    case broker_rules(Given, Opt) of
        ok -> probe_rules(Given, Opt);
        {error, _} = E -> E
    end.

%% The broker's OTP is an installation (as matrix --otp checks it; its
%% flavours are checked as the broker starts, before the probe); a
%% blank load command would fail every repetition after the brokers
%% started (#34).
broker_rules(Given, Opt) ->
    Otp = maps:get(otp, Given, undefined),
    Cmd = maps:get(load_cmd, Given, undefined),
    if
        Otp =/= undefined ->
            case filelib:is_regular(filename:join([Otp, "bin", "erl"])) of
                true -> broker_rules(maps:remove(otp, Given), Opt);
                false -> {error, {rule, "~ts ~ts: no bin/erl there (an OTP installation prefix)",
                                  [Opt(otp), {value, Otp}]}}
            end;
        Cmd =/= undefined ->
            case string:is_empty(string:trim(Cmd)) of
                true -> {error, {rule, "~ts is empty: give the load's command line (an unset variable in a script?)",
                               [Opt(load_cmd)]}};
                false -> ok
            end;
        true ->
            ok
    end.

probe_rules(Given, Opt) ->
    Words = fun(K) ->
                    case beamlab_runtime_peer:parse_words(unicode:characters_to_list(maps:get(K, Given, ""))) of
                        {ok, _} -> ok;
                        {error, _} -> {error, {rule, "~ts ~ts: an unterminated quote", [Opt(K), {value, maps:get(K, Given)}]}}
                    end
            end,
    Probe = [K || K <- [vm, wrap, cgroup, remedy, schedulers, probe_ms, curve_reps, max_remedies, reps],
                  maps:get(K, Given, undefined) =/= undefined, maps:get(K, Given) =/= []],
    case {Words(vm), Words(wrap), maps:find(schedulers, Given)} of
        _ when is_map_key(node, Given), is_map_key(target, Given) ->
            {error, {rule, "~ts reads a running node as it is; ~ts restarts a broker of its own: give one of them",
                     [Opt(node), Opt(target)]}};
        _ when is_map_key(node, Given), Probe =/= [] ->
            {error, {rule, "~ts reads a running node as it is: ~ts applies to the fresh VMs of the probe only",
                     [Opt(node), Opt(hd(Probe))]}};
        _ when is_map_key(duration, Given), not is_map_key(node, Given) ->
            {error, {rule, "~ts is how long ~ts watches a node: give ~ts NAME@HOST too",
                     [Opt(duration), Opt(node), Opt(node)]}};
        {ok, ok, {ok, S}} ->
            case counts(S) of
                {ok, _} -> ok;
                error -> {error, {rule, "~ts ~ts: give scheduler counts from 1 to 1024 separated by commas",
                                  [Opt(schedulers), {value, S}]}}
            end;
        {ok, ok, error} -> ok;
        {ok, E, _} -> E;
        {E, _, _} -> E
    end.

%% @doc A load command (`load_cmd') is the broker's load itself: an
%% amqp given with it (`LoadGiven': the command line's arguments after
%% `-- amqp', the library's `load') only fills its `{flags}', so a
%% command without `{flags}' would ignore it.
-spec load_rule(doctor(), boolean()) -> ok | {error, load_cmd_without_flags}.
load_rule(#{load_cmd := Cmd}, true) when Cmd =/= none ->
    case string:find(Cmd, "{flags}") of
        nomatch -> {error, load_cmd_without_flags};
        _ -> ok
    end;
load_rule(_D, _LoadGiven) ->
    ok.

%% @doc The description from the options (checked first, check_options/1).
-spec new(#{atom() => term()}) -> {ok, doctor()} | {error, {option, beamlab_schema:error_reason()}}.
new(Opts) ->
    case check_options(maps:without([root], Opts)) of
        ok -> {ok, build(Opts)};
        {error, R} -> {error, {option, R}}
    end.

%% (The options passed check_options/1: `vm' and `wrap' split into
%% words and `schedulers' are counts, as probe_rules/2 found.)
build(Opts) ->
    Quick = maps:get(quick, Opts, false) =:= true,
    Get = fun(K, D) -> case maps:get(K, Opts, undefined) of undefined -> D; V -> V end end,
    Node = case Get(node, none) of
               none -> none;
               N0 -> unicode:characters_to_list(N0)
           end,
    %% (a node with the probe's options, a duration without a node:
    %% refused by check_options/1 before)
    Duration = Get(duration, undefined),
    Vm = words(Get(vm, "")),
    Wrap = words(Get(wrap, "")),
    Counts = case Get(schedulers, auto) of
                 auto -> auto;
                 S -> {ok, Ns} = counts(S), Ns
             end,
    Remedies = [unicode:characters_to_binary(R) || R <- Get(remedy, [])],
    Reps = Get(reps, case Quick of true -> 3; false -> 5 end),
    #{quick => Quick, reps => Reps,
      curve_reps => Get(curve_reps, case Quick of true -> min(Reps, 2); false -> min(Reps, 3) end),
      warmup_ms => case Quick of true -> 200; false -> 300 end,
      duration_ms => Get(probe_ms, case Quick of true -> 600; false -> 1500 end),
      vm_args => Vm, wrap => Wrap,
      cgroup => case Get(cgroup, none) of
                    none -> none;
                    "" -> none;
                    D -> D
                end,
      counts => Counts, remedies => Remedies,
      max_remedies => Get(max_remedies, case Quick of true -> 3; false -> 6 end),
      root => Get(root, "/"),
      target => Get(target, none),
      otp => text_or_none(Get(otp, none)), flavor => Get(flavor, none),
      load_cmd => text_or_none(Get(load_cmd, none)),
      node => Node, cookie => Get(cookie, undefined),
      node_duration_ms => case Duration of
                              undefined when Quick -> 5000;
                              undefined -> 10000;
                              Sec -> max(1, round(Sec * 1000))
                          end}.

text_or_none(none) -> none;
text_or_none(T) -> unicode:characters_to_list(T).

words(S) ->
    {ok, W} = beamlab_runtime_peer:parse_words(unicode:characters_to_list(S)),
    W.

counts(S) ->
    try [list_to_integer(string:trim(X)) || X <- string:lexemes(unicode:characters_to_list(S), ",")] of
        [_ | _] = Ns ->
            case lists:all(fun(N) -> N >= 1 andalso N =< 1024 end, Ns) of
                true -> {ok, lists:usort(Ns)};
                false -> error
            end;
        [] -> error
    catch error:badarg -> error
    end.

%% @doc A target comes with its load (and the experiment's `target');
%% the cgroup, when given, must be a directory with `cgroup.procs'.
-spec check(doctor(), beamlab_experiment:experiment()) -> ok | {error, {doctor, error_reason()}}.
check(#{node := N}, _Exp) when N =/= none ->
    ok;
check(#{target := rabbitmq} = D, Exp) when not is_map_key(load, D); not is_map_key(target, Exp) ->
    {error, {doctor, target_needs_load}};
check(#{target := none} = D, Exp) when is_map_key(load, D); is_map_key(target, Exp) ->
    {error, {doctor, load_needs_target}};
check(#{cgroup := none}, _Exp) ->
    ok;
check(#{cgroup := Dir}, _Exp) ->
    case filelib:is_regular(filename:join(Dir, "cgroup.procs")) of
        true -> ok;
        false -> {error, {doctor, {cgroup, Dir, no_procs}}}
    end.

%% @doc A doctor may have a system under test (`--target rabbitmq').
-spec composes() -> [target].
composes() -> [target].

%% @doc The kinds a doctor's target is loaded with.
-spec inner_kinds() -> [beamlab_experiment:kind()].
inner_kinds() -> [amqp].

%% @doc The target's load, checked by the entry point.
-spec inner(doctor()) -> {ok, beamlab_experiment:experiment()} | none.
inner(#{load := L}) -> {ok, L};
inner(_) -> none.

%% @doc Runs the protocol and returns the document.
-spec run(doctor(), beamlab_experiment:experiment(), beamlab_experiment:inner()) ->
          {ok, beamlab_result:result()} | {error, {doctor, error_reason()}}.
run(#{node := N} = D, Exp, _Inner) when N =/= none ->
    case beamlab_experiment_doctor_node:run(D, Exp) of
        {ok, _} = Ok -> Ok;
        {error, R} -> {error, {doctor, R}}
    end;
run(D, Exp, Inner) ->
    %% The default's flags and wrapper first, before any line is told: a
    %% VM that does not start with them is the caller's mistake, one line.
    case beamlab_runtime_peer:start(#{args => maps:get(vm_args, D), load => false,
                                      wrapper => cgroup_wrap(maps:get(cgroup, D)) ++ maps:get(wrap, D)}) of
        {ok, Vm} ->
            ok = beamlab_runtime_peer:stop(Vm),
            case preflight(D, Exp) of
                {ok, D1} -> protocol(D1, Exp, Inner);
                {error, R} -> {error, {doctor, R}}
            end;
        {error, R} ->
            {error, {doctor, {vm_start, iolist_to_binary(beamlab_runtime_peer:format_error(R))}}}
    end.

%% With a target, its broker once with the default flags (the VM's
%% wrappers in front): its refusal is the caller's mistake, before the
%% probe's minutes.
preflight(#{target := rabbitmq} = D, Exp) ->
    Sink = maps:get(sink, Exp, fun(_) -> ok end),
    Wrap = cgroup_wrap(maps:get(cgroup, D)) ++ maps:get(wrap, D),
    Spec = maps:merge(#{kind => rabbitmq, args => maps:get(vm_args, D),
                        otp => case maps:get(otp, D) of none -> undefined; Otp -> Otp end,
                        wrap => case Wrap of [] -> undefined; _ -> Wrap end},
                      case maps:get(flavor, D) of none -> #{}; F -> #{flavor => F} end),
    case beamlab_experiment_doctor_target:preflight(Spec, fun(F, A) -> Sink({doctor, io_lib:format(F, A)}) end) of
        {ok, Broker} -> {ok, D#{broker => Broker, broker_wrap => Wrap}};
        {error, _} = E -> E
    end;
preflight(D, _Exp) ->
    {ok, D}.

protocol(D, Exp, Inner) ->
    Sink = maps:get(sink, Exp, fun(_) -> ok end),
    Say = fun(Fmt, Args) -> Sink({doctor, io_lib:format(Fmt, Args)}) end,
    Started = beamlab_runtime_clock:rfc3339(),
    Machine = beamlab_env_doctor_facts:machine(maps:get(root, D)),
    Cpus = case maps:get(logical_cpus, Machine) of
               N when is_integer(N), N > 0 -> N;
               _ -> erlang:system_info(logical_processors_available)
           end,
    Say("doctor: facts: ~b logical CPUs, ~ts physical cores, ~b NUMA node(s), governor ~ts, load ~ts~n",
        [Cpus, fmt(maps:get(physical_cores, Machine)), max(1, maps:get(numa_nodes, Machine)),
         fmt(maps:get(governor, maps:get(frequency, Machine))), fmt(maps:get(load1, Machine))]),
    Counts = case maps:get(counts, D) of
                 auto -> beamlab_env_doctor:counts(Cpus);
                 Cs -> Cs
             end,
    Base = #{name => <<"default">>, args => maps:get(vm_args, D), wrap => []},
    Curve = [Base | [#{name => iolist_to_binary(io_lib:format("+S ~b:~b", [N, N])),
                       args => maps:get(vm_args, D) ++ ["+S", io_lib:format("~b:~b", [N, N])],
                       wrap => [], schedulers => N} || N <- Counts]],
    Say("doctor: curve: the probe at ~ts schedulers and the default flags, ~b repetition(s) each, "
        "fresh VMs interleaved~n", [lists:join(", ", [integer_to_list(N) || N <- Counts]),
                                    maps:get(curve_reps, D)]),
    case measure(Curve, maps:get(curve_reps, D), D, Say) of
        {error, R} ->
            {error, {doctor, R}};
        {ok, CurveRuns} ->
            BaseSum = beamlab_env_doctor:summary(runs(<<"default">>, CurveRuns)),
            Points = [{N, beamlab_env_doctor:summary(runs(Name, CurveRuns))}
                      || #{name := Name, schedulers := N} <- Curve],
            CurveDoc = beamlab_env_doctor:curve(Points),
            Findings = beamlab_env_doctor:findings(Machine, BaseSum, CurveDoc),
            Say("doctor: diagnosis: ~ts~n",
                [lists:join("; ", [[atom_to_list(Sev), " ", T] || #{severity := Sev, title := T} <- Findings])]),
            Auto = beamlab_env_doctor:candidates(Findings, maps:get(vm_args, D), maps:get(max_remedies, D)),
            Remedies = Auto ++ [beamlab_env_doctor:remedy(R, [<<"asked">>], maps:get(vm_args, D))
                                || R <- maps:get(remedies, D), not lists:member(R, [N || #{name := N} <- Auto])],
            {Ranked, RemedyRuns, BaseRem} =
                case interrupted() orelse Remedies =:= [] orelse maps:get(target, D) =/= none of
                    true -> {[], [], BaseSum};
                    false ->
                        Say("doctor: remedies: ~ts against the default, ~b repetition(s) each~s~n",
                            [lists:join(", ", [N || #{name := N} <- Remedies]), maps:get(reps, D),
                             case maps:get(quick, D) of
                                 true -> " (--quick: fewer than the 5 of the full protocol)";
                                 false -> ""
                             end]),
                        case measure([Base | Remedies], maps:get(reps, D), D, Say) of
                            {error, _} -> {[], [], BaseSum};
                            {ok, RR} ->
                                B2 = beamlab_env_doctor:summary(runs(<<"default">>, RR)),
                                Sums = [{R, beamlab_env_doctor:summary(runs(N, RR))}
                                        || #{name := N} = R <- Remedies],
                                {beamlab_env_doctor:rank(B2, [X || {_, #{n := K}} = X <- Sums, K > 0], ?CONF),
                                 RR, B2}
                        end
                end,
            %% With a target: the remedies measured on the broker instead.
            Target = case maps:get(target, D) =/= none andalso not interrupted() of
                         true -> beamlab_experiment_doctor_target:phase(D, Exp, Inner, Findings, Say);
                         false -> #{}
                     end,
            Recommendation = case Target of
                                 #{recommendation := TR} -> TR;
                                 _ -> beamlab_env_doctor:recommendation(Ranked)
                             end,
            Partial = interrupted(),
            Doc = document(D, Exp, Started, Machine, BaseSum, BaseRem, CurveDoc, Curve, CurveRuns,
                           Findings, Remedies, Ranked, RemedyRuns, Recommendation, Partial, Target),
            {ok, beamlab_experiment_env:attach(Doc, Exp)}
    end.

fmt(null) -> "?";
fmt(X) when is_binary(X) -> X;
fmt(X) when is_integer(X) -> integer_to_list(X);
fmt(X) when is_float(X) -> io_lib:format("~.2f", [X]).

interrupted() ->
    beamlab_runtime_interrupt:interrupted().

runs(Name, Runs) ->
    [R || {N, R} <- Runs, N =:= Name].

%% Every configuration once per repetition, in turn (interleaved: a
%% drift of the machine touches every configuration alike), each in a
%% fresh VM. The default's first VM failing to start is the caller's
%% mistake (its flags); any other failure is recorded and skipped.
measure(Configs, Reps, D, Say) ->
    Total = Reps * length(Configs),
    measure(Configs, 1, Reps, D, Say, 1, Total, []).

measure(_Configs, Rep, Reps, _D, _Say, _I, _Total, Acc) when Rep > Reps ->
    {ok, lists:reverse(Acc)};
measure(Configs, Rep, Reps, D, Say, I, Total, Acc) ->
    Step = fun(Config, {ok, I0, A}) ->
                   case interrupted() of
                       true -> {ok, I0, A};
                       false -> one(Config, Rep, D, Say, I0, Total, A)
                   end;
              (_, {error, _} = E) -> E
           end,
    case lists:foldl(Step, {ok, I, Acc}, Configs) of
        {error, _} = E -> E;
        {ok, I1, Acc1} ->
            case interrupted() of
                true -> {ok, lists:reverse(Acc1)};
                false -> measure(Configs, Rep + 1, Reps, D, Say, I1, Total, Acc1)
            end
    end.

one(#{name := Name, args := Args, wrap := Wrap0}, Rep, D, Say, I, Total, Acc) ->
    Wrap = cgroup_wrap(maps:get(cgroup, D)) ++ maps:get(wrap, D) ++ Wrap0,
    ProbeOpts = #{warmup_ms => maps:get(warmup_ms, D), duration_ms => maps:get(duration_ms, D)},
    Opts = #{args => Args, wrapper => Wrap, timeout => 60000},
    case beamlab_runtime_peer:run(Opts, {beamlab_suite_probe, run, [ProbeOpts]},
                                  {beamlab_suite_probe, vm, []}) of
        {ok, #{exit := 0, result := Probe, env := Vm}} ->
            #{load := L, mesh := M} = Probe,
            Say("doctor: [~b/~b] ~ts rep ~b: goodput ~ts msg/s, capacity ~ts msg/s, CPU/msg ~ts us~n",
                [I, Total, Name, Rep, fmt(round(maps:get(goodput, L))), fmt(round(maps:get(goodput, M))),
                 fmt(maps:get(cpu_per_msg_us, L))]),
            {ok, I + 1, [{Name, #{probe => Probe, vm => Vm}} | Acc]};
        {ok, #{exit := Code}} ->
            Say("doctor: [~b/~b] ~ts rep ~b: stopped (exit ~b)~n", [I, Total, Name, Rep, Code]),
            {ok, I + 1, Acc};
        {error, {vm_start, R}} when Name =:= <<"default">>, Acc =:= [] ->
            {error, {vm_start, iolist_to_binary(beamlab_runtime_peer:format_error(R))}};
        {error, R} ->
            Say("doctor: [~b/~b] ~ts rep ~b failed: ~ts~n",
                [I, Total, Name, Rep, beamlab_runtime_peer:format_error(element(2, R))]),
            {ok, I + 1, [{Name, #{probe => #{}, vm => #{},
                                  error => iolist_to_binary(io_lib:format("~0tP", [R, 10]))}} | Acc]}
    end.

%% The VM joins the cgroup before erl starts: the shell writes its own
%% pid, then becomes the VM (exec), which keeps the pid.
cgroup_wrap(none) -> [];
cgroup_wrap(Dir) ->
    ["sh", "-c", "echo $$ > \"$0\"/cgroup.procs && exec \"$@\"", Dir].

document(D, Exp, Started, Machine, BaseSum, BaseRem, CurveDoc, Curve, CurveRuns, Findings, Remedies,
         Ranked, RemedyRuns, Recommendation, Partial, Target) ->
    Params = #{quick => maps:get(quick, D), reps => maps:get(reps, D), curve_reps => maps:get(curve_reps, D),
               warmup_ms => maps:get(warmup_ms, D), duration_ms => maps:get(duration_ms, D),
               vm_args => [list_to_binary(A) || A <- maps:get(vm_args, D)],
               wrap => [unicode:characters_to_binary(W) || W <- maps:get(wrap, D)],
               cgroup => case maps:get(cgroup, D) of none -> null; C -> unicode:characters_to_binary(C) end,
               confidence => ?CONF},
    Doc0 = beamlab_result:new(doctor, #{command => maps:get(command, Exp, []), started_at => Started,
                                        params => Params}),
    CurveBenches = [bench(Name, <<"curve">>, runs(Name, CurveRuns)) || #{name := Name} <- Curve],
    RemedyBenches = case RemedyRuns of
                        [] -> [];
                        _ -> [bench(Name, <<"remedies">>, runs(Name, RemedyRuns))
                              || #{name := Name} <- [#{name => <<"default">>} | Remedies]]
                    end,
    Extra = #{recommendation => Recommendation,
              machine => Machine,
              vm => case [Vm || {<<"default">>, #{vm := Vm}} <- CurveRuns, map_size(Vm) > 0] of
                        [V | _] -> V;
                        [] -> #{}
                    end,
              default => strip(BaseSum),
              default_remedies_phase => strip(BaseRem),
              curve => CurveDoc,
              remedies => Ranked,
              candidates => case Target of
                                #{target := #{candidates := TC}} -> TC;
                                _ -> [maps:with([name, why], R) || R <- Remedies]
                            end,
              protocol => #{probe => <<"message_load original (96 processes, 10 ms wait) for goodput, latency "
                                       "and CPU per message; a saturating load for capacity (2 independent "
                                       "token-passing meshes of 8 processes per scheduler online, "
                                       "beamlab_suite_probe_mesh); ping_pong local (2000 round trips)">>,
                            interleaved => true, fresh_vms => true}},
    Doc1 = beamlab_result:add_benchmarks(Doc0, CurveBenches ++ RemedyBenches ++ maps:get(benchmarks, Target, [])),
    Extra1 = case Target of
                 #{target := T} -> Extra#{target => T};
                 _ -> Extra
             end,
    Doc2 = beamlab_result:add_findings(beamlab_result:set(extra, Extra1, Doc1), Findings),
    beamlab_result:finish(Doc2, #{finished_at => beamlab_runtime_clock:rfc3339(), partial => Partial}).

strip(S) ->
    maps:without([goodput_samples, capacity_samples, latency_p99_samples, cpu_per_msg_samples], S).

bench(Name, Group, Runs) ->
    Loads = [P || #{probe := #{load := _} = P} <- Runs],
    beamlab_result:benchmark(<<Group/binary, " ", Name/binary>>,
                             [maps:get(goodput, maps:get(load, P)) || P <- Loads],
                             #{group => Group, metric => <<"goodput">>, unit => <<"msg/s">>,
                               better => higher,
                               params => #{config => Name},
                               extra => #{capacity => [maps:get(goodput, maps:get(mesh, P)) || P <- Loads],
                                          cpu_per_msg_us => [maps:get(cpu_per_msg_us, maps:get(load, P)) || P <- Loads],
                                          latency_p99_us => [maps:get(latency_p99_us, maps:get(load, P)) || P <- Loads],
                                          round_trip_us => [maps:get(round_trip_us, maps:get(ping_pong, P, #{}), null) || P <- Loads],
                                          failed => length(Runs) - length(Loads)}}).

%% @doc Interrupted when partial; failed when nothing was measured.
-spec verdict(beamlab_result:result()) -> beamlab_experiment:verdict().
verdict(#{partial := true}) ->
    {interrupted, []};
verdict(#{extra := #{<<"node">> := #{<<"node_down">> := true, <<"name">> := Node}}}) ->
    {failed, [io_lib:format("~ts went down during the watch; the findings rest on what was recorded", [Node])]};
verdict(#{extra := #{<<"node">> := _}}) ->
    {ok, []};
verdict(#{benchmarks := Bs}) ->
    case [B || #{samples := [_ | _]} = B <- Bs] of
        [] -> {failed, ["no probe run succeeded"]};
        _ -> {ok, []}
    end.

%% @doc Bad flags or a missing cgroup are the caller's mistakes.
-spec error_class(error_reason()) -> usage | failure.
error_class({option, _}) -> usage;
error_class({node, _} = R) -> beamlab_experiment_doctor_node:error_class(R);
error_class({vm_start, _}) -> usage;
error_class({cgroup, _, _}) -> usage;
error_class(target_needs_load) -> usage;
error_class(load_needs_target) -> usage;
error_class(load_cmd_without_flags) -> usage;
error_class({target_start, Class, _}) -> Class.

%% @doc One line for each error.
-spec format_error(error_reason()) -> unicode:chardata().
format_error(Reason) ->
    beamlab_format_reason:line(fun error_line/1, Reason).

error_line({option, R}) ->
    beamlab_schema:format_error(R);
error_line({node, _} = R) ->
    beamlab_experiment_doctor_node:format_error(R);
error_line({vm_start, Msg}) ->
    io_lib:format("the default configuration's VM did not start: ~ts", [Msg]);
error_line(target_needs_load) ->
    "--target rabbitmq runs an amqp load: give '-- amqp ...'";
error_line(load_needs_target) ->
    "a load after -- is the load of a target: give --target rabbitmq";
error_line(load_cmd_without_flags) ->
    "--load-cmd is the broker's load: the amqp after -- only fills its {flags}, which the command "
    "does not have (put {flags} in it, or give no amqp)";
error_line({target_start, _, Msg}) ->
    io_lib:format("the broker did not start with the default flags: ~ts", [Msg]);
error_line({cgroup, Dir, _}) ->
    io_lib:format("--cgroup ~ts: not a cgroup directory (no cgroup.procs there)", [Dir]);
error_line(Other) ->
    %% (a reason of no kind above: printed, never raised)
    beamlab_format_reason:term(Other).
