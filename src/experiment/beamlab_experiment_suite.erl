%%% @doc The workload suite as an experiment: a selection (workloads by
%%% name, every built-in one, or a preset's rows), parameter overrides and
%%% sweeps, the measurement options; planned by `beamlab_suite' (or
%%% `beamlab_suite_preset') and run by `beamlab_suite:run/2'.
-module(beamlab_experiment_suite).

-behaviour(beamlab_experiment_kind).

-export([name/0, options/0, new/1, run/3, check/2, verdict/1, error_class/1, format_error/1,
         composes/0]).
-export([check_options/1, remote_node/1]).

%% `--ci' without `--max-time': ten minutes per point.
-define(MAX_TIME, 600000).

%% `select': workload names ([] is every built-in one), or a preset (a
%% built-in name or a preset file) with the node of its remote rows;
%% `params': workload => key => [value] as text (several values sweep);
%% `timeout' in ms per repetition; `code_paths' for the user's own
%% workload modules; `flavor' the emulator flavour of the points' fresh
%% VMs (jit or emu; undefined: this VM's); `dist' names this VM for
%% remote nodes.
-type suite() :: #{select := {workloads, [string()]} | {preset, string(), node() | none},
                   params => #{binary() => #{string() => [string()]}},
                   profile => beamlab_workload:profile(),
                   repeat => pos_integer() | default,
                   timeout => pos_integer(),
                   code_paths => [file:filename()],
                   flavor => undefined | beamlab_runtime_otp:flavor(),
                   ci => float(),                   % --ci: repeat each point until confident ...
                   max_time => pos_integer(),       % ... or this budget (ms per point) is spent
                   metric => time | cpu,
                   dist => beamlab_experiment:dist()}.
-type error_reason() :: beamlab_suite:error_reason()
                      | {preset, term()}
                      | {names_with_preset, [string()]}
                      | {param_not_in_preset, binary(), binary()}
                      | {no_such_directory, file:filename()}
                      | {flavor, term()}
                      | {option, beamlab_schema:error_reason()}
                      | {dist, beamlab_experiment_dist:error_reason()}.
-export_type([suite/0, error_reason/0]).

%% @doc The kind's name: `suite'.
-spec name() -> suite.
name() -> suite.

%% @doc The options of a suite, as the library's keys and the command
%% line's flags: `params' (workload => key => value or values; `--param
%% W.K=V,V'), `preset' and its `node', `profile', `repeat', `code_paths'
%% (`-pa'), `timeout' (ms; the flag's seconds), `flavor', `memory' (the
%% after-phase); the workloads' `names' are the arguments.
-spec options() -> [beamlab_schema:option()].
options() ->
    [#{name => params, long => "param", type => map, cli_type => string, multi => true,
       metavar => "NAME.KEY=VALUE",
       help => "set a parameter; a comma list sweeps it (ping_pong.size=0,10,100)"},
     #{name => preset, long => "preset", type => string, metavar => "NAME|FILE",
       help => "run a published table's rows and print it in its own layout "
               "(termite, message-load, or a preset file)"},
     #{name => node, long => "node", type => term, cli_type => string, metavar => "NAME@HOST",
       requires => [preset], requires_format => "~ts names the remote node of a preset's rows: add ~ts",
       help => "with --preset termite: also the ping-pong rows to this remote node"},
     #{name => profile, long => "profile", type => {enum, [quick, full]}, default => quick,
       help => "quick (all workloads in < 60 s) or full (1M-process ring and skynet, ...)"},
     #{name => repeat, short => "n", long => "repeat", type => pos_integer, metavar => "N",
       max => 10000, max_why => "ten thousand repetitions",
       help => "measured repetitions per point (default: per workload, 3-5 quick, 3-10 full)"},
     #{name => code_paths, short => "pa", type => string, multi => true, default => [], metavar => "DIR",
       help => "add DIR to the code path (for your own workload modules)"},
     #{name => timeout, long => "timeout", type => pos_integer, scale => 1000, default => 600000,
       metavar => "S", max => 604800000, max_why => "one week",
       help => "seconds one repetition may take before the point is abandoned"},
     #{name => flavor, long => "flavor", type => {enum, [jit, emu]}, metavar => "jit|emu",
       help => "run every point in a fresh VM of this emulator flavour (the JIT or the interpreter), "
               "proven from what the VM reports; compare them with matrix --flavor emu --flavor jit -- suite"},
     #{name => ci, long => "ci", type => fraction, metavar => "PCT",
       help => "repeat each point (-n is the least) until the 95% interval of its repetitions' mean is "
               "within PCT of it (2% or 0.02), or --max-time is spent; the output says which"},
     #{name => max_time, long => "max-time", type => pos_number, scale => 1000, requires => [ci],
       max => 604800000, max_why => "one week", metavar => "SEC",
       help => "--ci's time budget per point in seconds (default 600)"},
     #{name => metric, long => "metric", type => {enum, [time, cpu]}, default => time, metavar => "time|cpu",
       help => "cpu: also measure each repetition's CPU time of the VM's scheduler threads (Linux; "
               "NAME/cpu, ms), which the machine's load does not inflate; --ci judges it"},
     #{name => memory, long => "memory", type => boolean, default => false,
       help => "after the measured repetitions, one more traced for words allocated and reductions "
               "(spawned processes included)"},
     #{name => names, type => {list, string}}].

%% @doc Checks the options given (the schema's keys, `names' the
%% workloads as text) against the schema and the suite's own rules: a
%% preset runs its own rows (no workload named beside it), its `node' is
%% a node name, the `code_paths' are directories. The command line checks its flags here too.
-spec check_options(#{atom() => term()}) -> ok | {error, beamlab_schema:error_reason()}.
check_options(Given) ->
    beamlab_schema:check(options(), Given, fun(Opt) -> rules(Given, Opt) end).

rules(Given, Opt) ->
    case Given of
        #{preset := _, names := [_ | _] = Names} ->
            {error, {rule, "~ts runs the preset's rows: do not also name workloads (~ts)",
                     [Opt(preset), {value, lists:flatten(lists:join(" ", Names))}]}};
        #{node := Node} ->
            case remote_node(Node) of
                {ok, _} -> code_paths(Given, Opt);
                error -> {error, {rule, "~ts ~ts: expected NAME@HOST", [Opt(node), {value, Node}]}}
            end;
        _ ->
            code_paths(Given, Opt)
    end.

code_paths(Given, Opt) ->
    case [D || D <- maps:get(code_paths, Given, []), not filelib:is_dir(D)] of
        [D | _] -> {error, {rule, "~ts ~ts: no such directory", [Opt(code_paths), {value, D}]}};
        [] -> ok
    end.

%% @doc A preset's remote node, from its text (or atom).
-spec remote_node(term()) -> {ok, node()} | error.
remote_node(Node) when is_atom(Node) ->
    remote_node(atom_to_list(Node));
remote_node(Text) when is_list(Text); is_binary(Text) ->
    case unicode:characters_to_list(Text) of
        S when is_list(S) ->
            case beamlab_workload:parse_value(node, S) of
                {ok, N} when N =/= none -> {ok, N};
                _ -> error
            end;
        _ -> error
    end;
remote_node(_) ->
    error.

%% @doc The suite of the workloads `names' (text; none: every built-in
%% one) or of a `preset' (text) with the `node' of its remote rows;
%% `params' as the planner reads `--param' (workload => key => values).
-spec new(#{atom() => term()}) -> {ok, suite()} | {error, {bad_option, preset, [string()]}}.
new(Opts) ->
    Names = maps:get(names, Opts, []),
    Select = case maps:find(preset, Opts) of
                 error -> {ok, {workloads, Names}};
                 {ok, P} when Names =:= [] -> {ok, {preset, P, maps:get(node, Opts, none)}};
                 {ok, _} -> {error, {bad_option, preset, Names}}
             end,
    case Select of
        {ok, Sel} ->
            {ok, maps:merge(maps:merge(maps:with([profile, repeat, timeout, code_paths, flavor, ci, metric], Opts),
                                       case Opts of
                                           #{max_time := T} when is_number(T) -> #{max_time => max(1, round(T))};
                                           _ -> #{}
                                       end),
                            #{select => Sel, params => maps:get(params, Opts, #{})})};
        {error, _} = E ->
            E
    end.

%% @doc A suite has an after-phase (memory).
-spec composes() -> ['after'].
composes() -> ['after'].

%% @doc Runs the suite (after `check/2' passed).
-spec run(suite(), beamlab_experiment:experiment(), beamlab_experiment:inner()) ->
          {ok, beamlab_result:result()} | {error, {suite, error_reason()}}.
run(S, Exp, _Inner) ->
    case plan(S) of
        {ok, Plan, DocParams, Extra} ->
            Sink = maps:get(sink, Exp, fun(_) -> ok end),
            Sampler = beamlab_experiment_telemetry:start(maps:get(telemetry, Exp, none), Exp),
            After = maps:get('after', Exp, #{}),
            {ok, Doc} = beamlab_suite:run(Plan, #{profile => maps:get(profile, S, quick),
                                                  repeat => maps:get(repeat, S, default),
                                                  memory => maps:get(memory, After, false)
                                                      orelse maps:get(reductions, After, false),
                                                  timeout => maps:get(timeout, S, 600000),
                                                  flavor => maps:get(flavor, S, undefined),
                                                  ci => maps:get(ci, S, undefined),
                                                  max_time => maps:get(max_time, S, ?MAX_TIME),
                                                  metric => maps:get(metric, S, time),
                                                  progress => fun(E) -> Sink({suite, E}) end,
                                                  command => maps:get(command, Exp, []),
                                                  params => DocParams,
                                                  extra => Extra,
                                                  checkpoint => maps:get(checkpoint, Exp, none)}),
            Doc1 = beamlab_experiment_telemetry:stop(Sampler, Doc, Exp),
            {ok, beamlab_experiment_env:attach(Doc1, Exp)};
        {error, _} = E ->
            E
    end.

%% @doc Plans the suite without running it: unknown workloads, parameters
%% and presets are found before anything starts. An after-phase other
%% than memory (reductions come with it) is not a suite's.
-spec check(suite(), beamlab_experiment:experiment()) -> ok | {error, term()}.
check(S, Exp) ->
    case maps:is_key(profile, maps:get('after', Exp, #{})) of
        true -> {error, {unsupported, 'after', suite}};
        false when map_get(metric, S) =:= cpu ->
            case beamlab_runtime_cpu:threads() of
                {ok, _} -> check(maps:remove(metric, S), Exp);
                {error, R} -> {error, {suite, {cpu, R}}}
            end;
        false ->
            case plan(S) of
                {ok, _, _, _} -> ok;
                {error, _} = E -> E
            end
    end.

%% The plan, the document's params and extra.
plan(#{select := Select} = S) ->
    Overrides = maps:get(params, S, #{}),
    Profile = maps:get(profile, S, quick),
    case prepare(S, Select, Overrides) of
        ok -> plan(Select, Profile, Overrides, S);
        {error, R} -> {error, {suite, R}}
    end.

%% Code paths for the user's workloads, the flavour's VMs, and this VM
%% named for the nodes the parameters name (`ping_pong.node', `.from', a
%% preset's node).
prepare(S, Select, Overrides) ->
    Flavor = case maps:get(flavor, S, undefined) of
                 undefined -> ok;
                 F -> beamlab_runtime_peer:flavor_args(#{flavor => F})
             end,
    case {beamlab_engine_paths:add_code_paths(maps:get(code_paths, S, [])), Flavor} of
        {_, {error, R}} ->
            {error, {flavor, R}};
        {{ok, _}, _} ->
            Nodes = [N || {preset, _, N} <- [Select], N =/= none] ++ named_nodes(Overrides),
            case beamlab_experiment_dist:controller(maps:get(dist, S, #{}), Nodes) of
                ok -> ok;
                {error, R} -> {error, {dist, R}}
            end;
        {{error, _} = E, _} ->
            E
    end.

plan({workloads, Names}, Profile, Overrides, S) ->
    case beamlab_suite:plan(Names, Profile, Overrides) of
        {ok, Plan} -> {ok, Plan, doc_params(Profile, Names, Overrides, S), #{}};
        {error, R} -> {error, {suite, R}}
    end;
plan({preset, Arg, Node}, Profile, Overrides, S) ->
    case beamlab_suite_preset:find(Arg) of
        {ok, Preset} ->
            InPreset = lists:usort([W || #{workload := W} <- maps:get(rows, Preset)]),
            case [W || W <- maps:keys(Overrides), not lists:member(W, InPreset)] of
                [] ->
                    case beamlab_suite_preset:plan(Preset, Profile, Node, Overrides) of
                        {ok, Plan, Rows} ->
                            Params = (doc_params(Profile, [], Overrides, S))#{<<"preset">> => maps:get(name, Preset)},
                            {ok, Plan, Params, #{preset => Preset#{rows => Rows}}};
                        {error, R} ->
                            {error, {suite, {preset, R}}}
                    end;
                [W | _] ->
                    {error, {suite, {param_not_in_preset, W, maps:get(name, Preset)}}}
            end;
        {error, R} ->
            {error, {suite, {preset, R}}}
    end.

%% Nodes named in node-valued parameters (`ping_pong.node', `.from').
named_nodes(Overrides) ->
    [list_to_atom(V) || Kvs <- maps:values(Overrides), {K, Vs} <- maps:to_list(Kvs),
                        lists:member(K, ["node", "from"]), V <- Vs, lists:member($@, V)].

doc_params(Profile, Names, Overrides, S) ->
    Rule = case S of
               #{ci := Ci} when is_number(Ci) -> #{<<"ci">> => Ci, <<"max_time">> => maps:get(max_time, S, ?MAX_TIME)};
               _ -> #{}
           end,
    Rule#{<<"profile">> => atom_to_binary(Profile),
      <<"workloads">> => [unicode:characters_to_binary(N) || N <- Names],
      <<"repeat">> => case maps:get(repeat, S, default) of
                          default -> <<"default">>;
                          N -> N
                      end,
      <<"metric">> => atom_to_binary(maps:get(metric, S, time)),
      <<"flavor">> => case maps:get(flavor, S, undefined) of
                          undefined -> null;
                          F -> atom_to_binary(F)
                      end,
      <<"param">> => maps:map(fun(_W, Kvs) ->
                                      maps:from_list([{unicode:characters_to_binary(K),
                                                       [unicode:characters_to_binary(V) || V <- Vs]}
                                                      || {K, Vs} <- maps:to_list(Kvs)])
                              end, Overrides)}.

%% @doc Interrupted when partial; failed when a point failed or a check
%% did not hold (the points told their failures as they ran).
-spec verdict(beamlab_result:result()) -> beamlab_experiment:verdict().
verdict(#{partial := true}) ->
    {interrupted, []};
verdict(#{benchmarks := Bs, extra := Extra}) ->
    Failures = maps:get(<<"failures">>, Extra, []),
    Failed = [B || #{extra := #{<<"check">> := <<"failed", _/binary>>}} = B <- Bs],
    case Failures =:= [] andalso Failed =:= [] of
        true -> {ok, []};
        false -> {failed, []}
    end.

%% @doc A failure of the fresh VMs' distribution or of another OTP
%% flavour is the run's; any other error (an unknown workload, parameter
%% or preset) is the caller's mistake.
-spec error_class(error_reason()) -> usage | failure.
error_class({dist, R}) -> beamlab_experiment_dist:error_class(R);
error_class({flavor, _}) -> failure;
error_class({cpu, _}) -> failure;
error_class({option, _}) -> usage;
error_class(_) -> usage.

%% @doc One line for each error.
-spec format_error(error_reason()) -> unicode:chardata().
format_error(Reason) ->
    beamlab_format_reason:line(fun error_line/1, Reason).

error_line({option, R}) ->
    beamlab_schema:format_error(R);
error_line({preset, R}) ->
    beamlab_suite_preset:format_error(R);
error_line({names_with_preset, Names}) ->
    io_lib:format("a preset runs its own rows: do not also name workloads (~ts)", [lists:join(" ", Names)]);
error_line({param_not_in_preset, W, Preset}) ->
    io_lib:format("--param for workload '~ts', which preset ~ts does not run", [W, Preset]);
error_line({no_such_directory, D}) ->
    io_lib:format("-pa ~ts: no such directory", [D]);
error_line({dist, R}) ->
    beamlab_experiment_dist:format_error(R);
error_line({flavor, R}) ->
    ["--flavor: ", beamlab_runtime_otp:format_error(R)];
error_line({cpu, R}) ->
    beamlab_runtime_cpu:format_error(R);
error_line(R) ->
    beamlab_suite:format_error(R).
