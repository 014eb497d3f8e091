%%% @doc The VM-configuration matrix as an experiment: an inner experiment
%%% (a benchmark, a suite, an AMQP load) run once per configuration and
%%% repetition (`beamlab_env_matrix'), each time in a fresh VM that runs
%%% the inner experiment through this layer (an MFA into
%%% `beamlab_experiment'); or, with a system under test (`target'), the
%%% target started per configuration and repetition
%%% (`beamlab_sut_broker:run/3') and the inner experiment run here against
%%% it: an inner AMQP load gets the target's broker URI and watches its
%%% node, so the broker's telemetry joins the result.
-module(beamlab_experiment_matrix).

-behaviour(beamlab_experiment_kind).

-export([name/0, options/0, new/1, check/2, configs/2, run/3, verdict/1, error_class/1,
         format_error/1, composes/0, inner_kinds/0, inner/1]).
-export([check_options/1, with_rule/2]).

%% `--ci' without `--max-time': ten minutes.
-define(MAX_TIME, 600000).

%% `configs' from {@link configs/2}; `baseline' the configuration the
%% others are compared with (default the first); `sweep' whether the
%% configurations are a scheduler sweep (the document then has speedups).
%% `profiled': one more repetition per configuration after the measured
%% ones, with the target's OS process profiled while its load runs (kept
%% out of the statistics), or (the target's `capture') its named processes
%% captured (beamlab_experiment_target).
%% With a preset (`beamlab_experiment_preset'), `scenarios' are its
%% scenarios with their inner experiments, run in turn in place of
%% `inner' and combined into one document.
-type matrix() :: #{configs := [beamlab_env_matrix:config()],
                    inner := beamlab_experiment:experiment(),
                    repeat => pos_integer(),
                    ci => float(),                  % --ci: repeat until confident ...
                    max_time => pos_integer(),      % ... or this budget (ms) is spent
                    baseline => binary() | undefined,
                    sweep => boolean(),
                    metric => time | cpu,           % --metric: what the inner command measures
                    profiled => boolean(),
                    preset => beamlab_experiment_preset:preset(),
                    scenarios => [{beamlab_experiment_preset:scenario(), beamlab_experiment:experiment()}]}.
-type error_reason() :: term().
-export_type([matrix/0, error_reason/0]).

%% @doc The kind's name: `matrix'.
-spec name() -> matrix.
name() -> matrix.

%% @doc The options of a matrix, as the library's keys and the command
%% line's flags: the dimensions (`vm', `sweep' as scheduler counts or a
%% range "1..4", `flavor', `erl', `wrap'), `baseline', `repeat', the
%% system under test (`target': rabbitmq, or the library's `#{cmd, node,
%% cookie}'), `otp'; the `inner' experiment is the command after `--'.
-spec options() -> [beamlab_schema:option()].
options() ->
    [#{name => vm, long => "vm", type => string, multi => true, metavar => "'ARGS'",
       help => "emulator arguments of one configuration, e.g. '+S 2 +sbt db' (repeat)"},
     #{name => sweep, long => "sweep-schedulers", type => {one_of, [string, {list, pos_integer}]},
       cli_type => string, metavar => "RANGE",
       help => "one configuration per scheduler count: 1..4, 1,2,4 or 1..max (+S K:K)"},
     #{name => flavor, long => "flavor", type => {enum, [jit, emu]}, multi => true, metavar => "jit|emu",
       help => "an emulator flavour as a dimension (repeat: --flavor emu --flavor jit); "
               "the installation must hold it (scripts/install-otp.sh builds both)"},
     #{name => erl, long => "erl", type => string, multi => true, metavar => "PATH",
       help => "an erl executable (another OTP install) as a dimension (repeat)"},
     #{name => wrap, long => "wrap", type => string, multi => true, metavar => "'CMD'",
       help => "a wrapper command, e.g. 'taskset -c 0' or 'numactl -N 0'; 'none' for no wrapper (repeat)"},
     #{name => baseline, long => "baseline", type => term, cli_type => string, metavar => "CONFIG",
       help => "the configuration others are compared with (default: the first)"},
     #{name => repeat, short => "n", long => "repeat", type => pos_integer, metavar => "R",
       max => 10000, max_why => "ten thousand fresh VMs per configuration",
       help => "fresh VMs per configuration, interleaved (default 3; a preset's own)"},
     #{name => ci, long => "ci", type => fraction, metavar => "PCT",
       help => "repeat (-n is the least) until every configuration's 95% interval between fresh VMs is "
               "within PCT of its mean (2% or 0.02), or --max-time is spent; the output says which"},
     %% (its need of --ci is a rule: checked after the target and the
     %% range, as the command line reads them first)
     #{name => max_time, long => "max-time", type => pos_number, scale => 1000,
       max => 604800000, max_why => "one week", metavar => "SEC",
       help => "--ci's time budget in seconds (default 600)"},
     #{name => metric, long => "metric", type => {enum, [time, cpu]}, default => time, metavar => "time|cpu",
       help => "cpu: the inner run or suite measures the CPU time of its VM's scheduler threads "
               "(Linux), which the machine's load does not inflate; the comparison rests on it"},
     %% (the library's target command, a map, is checked by rules/2)
     #{name => target, long => "target", type => term,
       cli_type => {enum, [rabbitmq]}, metavar => "KIND",
       help => "start the system under test per configuration instead of a beamlab VM: "
               "rabbitmq (a private broker; the inner command is amqp)"},
     #{name => otp, long => "otp", type => string, multi => true, metavar => "DIR",
       help => "run the target on the Erlang/OTP installed in DIR (a dimension; repeat)"},
     %% (the inner experiment's kind, when the options are checked)
     #{name => inner, type => term}].

%% @doc Checks the options given (the schema's keys; `target' as the
%% library gives it; `inner' the inner experiment's kind) against the schema and the matrix's own rules: other
%% OTP installations are a target's (beamlab's VMs take `erl'), a target
%% command starts a named node. The command line checks its flags here
%% too.
-spec check_options(#{atom() => term()}) -> ok | {error, beamlab_schema:error_reason()}.
check_options(Given) ->
    beamlab_schema:check(options(), Given, fun(Opt) -> rules(Given, Opt) end).

rules(Given, Opt) ->
    %% (a target's value first: the command line reads it as it parses)
    Budget = maps:get(max_time, Given, undefined) =/= undefined,
    Rule = maps:get(ci, Given, undefined) =/= undefined,
    case {maps:get(target, Given, none), range(maps:get(sweep, Given, []))} of
        {T, _} when T =/= none, T =/= rabbitmq, not is_map(T) ->
            {opt, O} = Opt(target),
            {error, {invalid, O, T, {type, {enum, [rabbitmq]}}}};
        {_, ok} when Budget, not Rule ->
            {opt, MaxTime} = Opt(max_time),
            {opt, Ci} = Opt(ci),
            {error, {requires, MaxTime, [Ci], ""}};
        {_, ok} -> target_rules(Given, Opt);
        {_, {error, S}} -> {error, {rule, "~ts: bad scheduler range '~ts' (use 1..4, 1,2,4 or 1..max)",
                               [Opt(sweep), {value, S}]}}
    end.

%% A range as text is one the command line's `--sweep-schedulers' takes.
range(S) when is_binary(S) ->
    range(unicode:characters_to_list(S));
range([C | _] = S) when is_integer(C) ->
    case beamlab_env_matrix:parse_range(S) of
        {ok, _} -> ok;
        {error, _} -> {error, S}
    end;
range(_) ->
    ok.

target_rules(Given, Opt) ->
    %% (an inner experiment not told: its kind is checked as it is built)
    case {maps:get(target, Given, none), maps:get(otp, Given, []), maps:get(inner, Given, amqp)} of
        {_, _, amqp} when map_get(metric, Given) =:= cpu ->
            {error, {rule, "~ts cpu measures a run or a suite; an amqp load's load-independent measure is "
                           "the broker's CPU per message, which it reports already", [Opt(metric)]}};
        {rabbitmq, _, Inner} when Inner =/= amqp ->
            {error, {rule, "~ts rabbitmq runs an amqp load: give an amqp inner experiment ('-- amqp ...', "
                           "{amqp, Opts})", [Opt(target)]}};
        {none, [_ | _], _} ->
            {error, {rule, "~ts needs ~ts or a target command (use ~ts for beamlab VMs)",
                     [Opt(otp), Opt(target), Opt(erl)]}};
        {#{cmd := _, node := Node}, _, _} ->
            case is_node_name(Node) of
                true -> ok;
                false -> {error, {rule, "~ts: '~ts' is not a node name (name@host)", [Opt(target), {value, Node}]}}
            end;
        {T, _, _} when is_map(T) ->
            {error, {rule, "~ts: a target command is #{cmd => Cmd, node => Node} (and a cookie)", [Opt(target)]}};
        _ ->
            ok
    end.

is_node_name(Node) when is_atom(Node) ->
    is_node_name(atom_to_list(Node));
is_node_name(Node) when is_list(Node); is_binary(Node) ->
    case unicode:characters_to_list(Node) of
        S when is_list(S) ->
            case string:split(S, "@") of
                [[_ | _], [_ | _]] -> true;
                _ -> false
            end;
        _ -> false
    end;
is_node_name(_) ->
    false.

%% @doc The matrix over the `inner' experiment: the configurations of the
%% dimensions (`vm', `sweep' as scheduler counts, `erl', `flavor',
%% `wrap') for the system under test `target' (`none': beamlab VMs),
%% `repeat' (3), `baseline' (a configuration's label, binary).
-spec new(#{atom() => term()}) -> {ok, matrix()} | {error, error_reason()}.
new(#{inner := Inner} = Opts) ->
    Sweep = maps:get(sweep, Opts, []),
    Dims = #{vm => maps:get(vm, Opts, []), sweep => Sweep, erl => maps:get(erl, Opts, []),
             flavor => maps:get(flavor, Opts, []), wrap => maps:get(wrap, Opts, [])},
    case configs(Dims, maps:get(target, Opts, none)) of
        {ok, Configs} ->
            {ok, with_rule(Opts, #{configs => Configs, inner => Inner, repeat => maps:get(repeat, Opts, 3),
                                   baseline => maps:get(baseline, Opts, undefined), sweep => Sweep =/= []})};
        {error, {matrix, R}} ->
            {error, R}
    end.

%% @doc The matrix with `ci' and its budget `max_time' (ms) and `metric'
%% (`cpu': its inner run or suite measures CPU time) of `Opts' (the
%% schema's keys).
-spec with_rule(#{atom() => term()}, matrix()) -> matrix().
with_rule(Opts, #{inner := Inner} = M) ->
    Metric = maps:get(metric, Opts, time),
    maps:merge(M#{inner := with_metric(Metric, Inner), metric => Metric}, rule(Opts)).

%% `--ci' and its budget (whole ms: the command line's seconds may have a
%% fraction).
rule(#{ci := Ci} = Opts) when is_number(Ci) ->
    #{ci => Ci, max_time => max(1, round(maps:get(max_time, Opts, ?MAX_TIME)))};
rule(_) ->
    #{}.

%% `--metric cpu': the inner run or suite measures CPU time.
with_metric(cpu, #{run := {bench, #{options := O} = B}} = Inner) ->
    Inner#{run := {bench, B#{options := O#{metric => cpu}}}};
with_metric(cpu, #{run := {bench, B}} = Inner) ->
    Inner#{run := {bench, B#{options => #{metric => cpu}}}};
with_metric(cpu, #{run := {suite, S}} = Inner) ->
    Inner#{run := {suite, S#{metric => cpu}}};
with_metric(_, Inner) ->
    Inner.

%% @doc The CPU time of `--metric cpu' must be measurable here (the
%% fresh VMs run on this machine); the entry point checks the inner
%% experiment ({@link inner/1}).
-spec check(matrix(), beamlab_experiment:experiment()) -> ok | {error, {matrix, error_reason()}}.
check(#{inner := #{run := {Kind, I}}}, _Exp)
  when (Kind =:= bench andalso map_get(metric, map_get(options, I)) =:= cpu)
       orelse (Kind =:= suite andalso map_get(metric, I) =:= cpu) ->
    case beamlab_runtime_cpu:threads() of
        {ok, _} -> ok;
        {error, R} -> {error, {matrix, {cpu, R}}}
    end;
check(_M, _Exp) -> ok.

%% @doc A matrix may have a system under test.
-spec composes() -> [target].
composes() -> [target].

%% @doc The kinds a matrix runs inside it.
-spec inner_kinds() -> [beamlab_experiment:kind()].
inner_kinds() -> [bench, suite, amqp].

%% @doc The inner experiment.
-spec inner(matrix()) -> {ok, beamlab_experiment:experiment()}.
inner(#{inner := I}) -> {ok, I}.

%% @doc The configurations of the dimensions, for the system under test
%% `Target' (`none': beamlab VMs). A target's other OTP installations
%% (`otp') are a dimension too; its wrappers are checked when it starts
%% (a missing one fails that configuration only).
-spec configs(beamlab_env_matrix:dims(), beamlab_experiment:sut() | none) ->
          {ok, [beamlab_env_matrix:config()]} | {error, {matrix, error_reason()}}.
configs(Dims, none) ->
    matrix_error(beamlab_env_matrix:configs(Dims));
configs(Dims, Target) ->
    case [D || D <- maps:get(otp, Target, []),
               not filelib:is_regular(filename:join([D, "bin", "erl"]))] of
        [] ->
            Erls = [filename:join([D, "bin", "erl"]) || D <- maps:get(otp, Target, [])],
            %% (a target runs the erl on its PATH)
            matrix_error(beamlab_env_matrix:configs(Dims#{erl => maps:get(erl, Dims, []) ++ Erls},
                                                    #{check_wrappers => false, default_erl => "erl"}));
        [D | _] ->
            {error, {matrix, {otp_not_found, D}}}
    end.

matrix_error({ok, _} = Ok) -> Ok;
matrix_error({error, R}) -> {error, {matrix, R}}.

%% @doc Runs the matrix; `Inner' says how to run the inner experiment in a
%% fresh VM and here.
-spec run(matrix(), beamlab_experiment:experiment(), beamlab_experiment:inner()) ->
          {ok, beamlab_result:result()} | {error, {matrix, error_reason()}}.
run(M, Exp, Inner) ->
    %% Telemetry of this VM, which only starts and waits for the
    %% configurations' VMs: what it shows is the machine around them.
    Sampler = beamlab_experiment_telemetry:start(maps:get(telemetry, Exp, none), Exp),
    case run_matrices(M, Exp, Inner) of
        {ok, Doc} ->
            Doc1 = beamlab_experiment_telemetry:stop(Sampler, Doc, Exp),
            {ok, beamlab_experiment_env:attach(Doc1, Exp)};
        {error, R} ->
            ok = beamlab_experiment_telemetry:cancel(Sampler),
            {error, {matrix, R}}
    end.

%% A preset's scenarios one after the other (each a matrix of its own,
%% its configurations interleaved), combined into one document; a plain
%% matrix.
run_matrices(#{scenarios := Scenarios, preset := Preset} = M, Exp, Inner) ->
    Sink = maps:get(sink, Exp, fun(_) -> ok end),
    Runs = lists:foldl(
             fun(_, {error, _} = E) -> E;
                ({S, I}, Acc) ->
                    case beamlab_runtime_interrupt:interrupted() of
                        true -> Acc;
                        false ->
                            Sink({matrix, io_lib:format("scenario ~ts: ~ts~n",
                                                        [maps:get(label, S), lists:join(" ", maps:get(command, I, []))])}),
                            case run_one(M#{inner => I}, Exp, Inner) of
                                {ok, Doc} -> Acc ++ [{S, Doc}];
                                {error, _} = E -> E
                            end
                    end
             end, [], Scenarios),
    case Runs of
        {error, _} = E -> E;
        [] -> {error, nothing_ran};
        _ -> {ok, beamlab_experiment_preset:combine(Preset, Runs, #{preset => maps:get(name, Preset)})}
    end;
run_matrices(M, Exp, Inner) ->
    run_one(M, Exp, Inner).

run_one(#{configs := Configs, inner := Inner0} = M, Exp, Inner) ->
    Sink = maps:get(sink, Exp, fun(_) -> ok end),
    %% The inner experiment prints nothing, has no checkpoint; its live
    %% output (an AMQP load's lines) goes to our sink when it runs here.
    InnerExp = maps:without([sink, checkpoint], Inner0),
    InnerCommand = maps:get(command, Inner0, []),
    #{fresh := {Mod, Fun, Args}} = Inner,
    Spec = #{configs => Configs, command => [unicode:characters_to_list(A) || A <- InnerCommand],
             baseline => maps:get(baseline, M, undefined),
             repeat => maps:get(repeat, M, 3),
             ci => maps:get(ci, M, undefined), max_time => maps:get(max_time, M, ?MAX_TIME),
             sweep => maps:get(sweep, M, false),
             metric => maps:get(metric, M, time),
             profiled => maps:get(profiled, M, false) andalso maps:is_key(target, Exp),
             argv => maps:get(command, Exp, []),
             started_at => beamlab_runtime_clock:rfc3339(),
             inner => {Mod, Fun, Args ++ [InnerExp]}},
    Progress = fun(Line) -> Sink({matrix, Line}) end,
    Runner = case maps:get(target, Exp, none) of
                 none -> #{};
                 Target -> #{runner => runner(Target, InnerExp#{sink => Sink}, Inner, Progress)}
             end,
    beamlab_env_matrix:run(Spec, Runner#{progress => Progress}).

%% The runner of a target: start it with the configuration, run the load
%% here against it (the inner experiment, or the target's `load_cmd'),
%% with the study's figures and, for the profiled repetition, the
%% target's profile (beamlab_experiment_target), stop it.
runner(Target, InnerExp, #{here := Here}, Progress) ->
    fun(#{args := Args, erl := Erl, wrap := Wrap, name := Name} = Config, Argv) ->
            Profiled = maps:get(profiled, Config, false),
            %% The JIT names its code for perf only when started so; the
            %% interpreter has no JIT (and refuses +JPperf).
            PerfFlags = case {Profiled, Target, maps:get(flavor, Config, undefined)} of
                            {true, #{profile := #{mode := M}}, F} when F =/= emu ->
                                string:split(maps:get(vm_flags, beamlab_profile:mode_info(M)), " ");
                            _ -> []
                        end,
            Spec = maps:merge(maps:merge(maps:with([kind, cmd, node, cookie], Target),
                                         maps:with([flavor], Config)),
                              #{args => Args ++ PerfFlags, wrap => Wrap,
                                otp => case Erl of
                                           undefined -> undefined;
                                           _ -> filename:dirname(filename:dirname(Erl))
                                       end}),
            LoadSpec = case Target of
                           #{load_cmd := Cmd} -> {cmd, beamlab_experiment_target:fill_flags(Cmd, Argv)};
                           _ -> {inner, fun(T) -> Here(against(InnerExp, T)) end}
                       end,
            Subject = iolist_to_binary(["target under ", case LoadSpec of
                                                             {cmd, C} -> C;
                                                             _ -> lists:join(" ", Argv)
                                                         end]),
            Opts = #{load => LoadSpec, sink => fun(L) -> Progress(L) end,
                     profile => case {Profiled, Target} of
                                    {true, #{profile := P}} -> P#{subject => Subject, label => Name};
                                    _ -> none
                                end,
                     capture => case {Profiled, Target} of
                                    {true, #{capture := Procs}} ->
                                        #{processes => Procs, label => Name,
                                          window => beamlab_experiment_target:capture_window(load_seconds(InnerExp))};
                                    _ -> none
                                end},
            Load = fun(T) -> compact(Profiled, beamlab_experiment_target:load(T, Opts)) end,
            case beamlab_sut_broker:run(Spec, Load, Progress) of
                {ok, #{result := #{extra := #{<<"capture_error">> := E}}} = Out} ->
                    Progress(io_lib:format("[~ts] ~ts~n", [Name, E])),
                    {ok, Out};
                {ok, Out} -> {ok, Out};
                {error, E} -> {error, {target, iolist_to_binary(beamlab_sut_broker:format_error(E))}}
            end
    end.

%% The inner AMQP load's time limit in whole seconds (-z; 0: none).
load_seconds(#{run := {amqp, #{config := #{duration := D}}}}) when is_number(D), D > 0 ->
    max(1, round(D));
load_seconds(_) ->
    0.

%% The profiled repetition keeps its figures and profile only (no
%% telemetry series, no env: the matrix holds those of the measured ones).
compact(true, {Code, #{extra := Extra} = Doc}) ->
    {Code, Doc#{extra := maps:with([<<"profile">>, <<"profile_error">>, <<"capture">>, <<"capture_error">>,
                                    <<"broker_cpu_us">>], Extra),
                telemetry := #{}, env := #{}}};
compact(_, Out) ->
    Out.

%% What the inner experiment needs to reach the target: an AMQP load gets
%% the broker's URI and watches its node.
against(#{run := {amqp, #{config := Cfg} = A}} = Exp, #{uri := Uri, node := Node, cookie := Cookie}) ->
    Cfg1 = case Uri of
               undefined -> Cfg;
               _ -> Cfg#{uri => Uri}
           end,
    Exp#{run := {amqp, A#{config := Cfg1, watch => #{node => atom_to_list(Node), cookie => Cookie}}}};
against(Exp, _Target) ->
    Exp.

%% @doc Interrupted when partial; failed when no configuration ran
%% successfully, or when captures were asked for and none was made.
-spec verdict(beamlab_result:result()) -> beamlab_experiment:verdict().
verdict(#{partial := true}) ->
    {interrupted, []};
verdict(#{extra := Extra}) ->
    Configs = maps:get(<<"configs">>, Extra, []),
    Captured = [C || C = #{<<"capture">> := Cap} <- Configs, is_map(Cap)],
    case {[C || C = #{<<"ok_runs">> := N} <- Configs, N > 0],
          [E || #{<<"capture_error">> := E} <- Configs, is_binary(E)]} of
        {[], _} -> {failed, ["no configuration ran successfully"]};
        %% A capture asked for (--profile-process) that no configuration
        %% got: its line says why (a name the node does not have).
        {_, [E | _]} when Captured =:= [] -> {failed, [E]};
        _ -> {ok, []}
    end.

%% @doc Configurations that cannot be built are the caller's mistakes.
-spec error_class(error_reason()) -> usage | failure.
error_class(_) -> usage.

%% @doc One line for each error.
-spec format_error(error_reason()) -> unicode:chardata().
format_error(Reason) ->
    beamlab_format_reason:line(fun error_line/1, Reason).

error_line({option, R}) ->
    beamlab_schema:format_error(R);
error_line({cpu, R}) ->
    beamlab_runtime_cpu:format_error(R);
error_line(nothing_ran) ->
    "interrupted before the first scenario ran";
error_line({otp_not_found, D}) ->
    io_lib:format("--otp ~ts: no bin/erl there (an OTP installation prefix)", [D]);
error_line(R) ->
    beamlab_env_matrix:format_error(R).
