%%% @doc `beamlab suite': runs the actor workload suite (all workloads, or
%%% those named), lists workloads and their parameters, sets and sweeps
%%% parameters, and prints one table plus each workload's counters.
-module(beamlab_command_suite).
-behaviour(beamlab_command).

-export([summary/0, options/0, usage/0, run/1, experiment/1, text/2, parse_param/1]).
-export([kind/0, files/1]).

%% @doc One line for `beamlab help'.
-spec summary() -> string().
summary() -> "run the actor workload suite (spawn, ring, ping-pong, message load, ...)".

%% @doc Options of `beamlab suite'.
-spec options() -> [beamlab_cli_args:option()].
options() ->
    [#{name => list, long => "list", type => boolean, default => false,
       help => "list the workloads, their definitions and parameters"},
     #{name => param, long => "param", type => string, multi => true, default => [],
       metavar => "NAME.KEY=VALUE",
       help => "set a parameter; a comma list sweeps it (ping_pong.size=0,10,100)"},
     #{name => preset, long => "preset", type => string, metavar => "NAME|FILE",
       help => "run a published table's rows and print it in its own layout "
               "(termite, message-load, or a preset file)"},
     #{name => node, long => "node", type => string, metavar => "NAME@HOST",
       help => "with --preset termite: also the ping-pong rows to this remote node"},
     #{name => profile, long => "profile", type => {enum, [quick, full]}, default => quick,
       help => "quick (all workloads in < 60 s) or full (1M-process ring and skynet, ...)"},
     #{name => repeat, short => "n", long => "repeat", type => pos_integer, metavar => "N",
       max => 10000,
       help => "measured repetitions per point (default: per workload, 3-5 quick, 3-10 full)"},
     #{name => pa, short => "pa", type => string, multi => true, default => [], metavar => "DIR",
       help => "add DIR to the code path (for your own workload modules)"},
     #{name => timeout, long => "timeout", type => pos_integer, default => 600, metavar => "S",
       max => 604800, max_why => "one week",
       help => "seconds one repetition may take before the point is abandoned"},
     #{name => flavor, long => "flavor", type => {enum, [jit, emu]}, metavar => "jit|emu",
       help => "run every point in a fresh VM of this emulator flavour (the JIT or the interpreter), "
               "proven from what the VM reports; compare them with matrix --flavor emu --flavor jit -- suite"},
     #{name => memory, long => "memory", type => boolean, default => false,
       help => "after the measured repetitions, one more traced for words allocated and reductions "
               "(spawned processes included)"}]
        ++ beamlab_cli_dist:options()     % --name, --cookie for remote nodes
        ++ beamlab_cli_metrics:options()  % --metrics-port, --metrics-bind
        ++ beamlab_cli_args:common_options().

%% @doc Examples for `beamlab help suite'.
-spec usage() -> iodata().
usage() ->
    "Usage: beamlab suite [NAME... | --preset NAME|FILE] [--profile quick|full]\n"
    "                     [--param NAME.KEY=V[,V...]]...\n"
    "Examples:\n"
    "  beamlab suite                          # every workload, quick profile\n"
    "  beamlab suite --list\n"
    "  beamlab suite ring --param ring.variant=laps --param ring.n=1000,40000 --param ring.m=10\n"
    "  beamlab suite ping_pong --param ping_pong.vm=peer --param ping_pong.size=0,1000\n"
    "  beamlab suite ping_pong --param ping_pong.node=bench@otherhost\n"
    "  beamlab suite ping_pong --param ping_pong.vm=remote --param ping_pong.node=b@10.0.0.12 \\\n"
    "      --param ping_pong.from=a@10.0.0.11 --cookie C --name ctl@10.0.0.5\n"
    "  beamlab suite --preset termite [--node bench@otherhost]\n"
    "  beamlab suite --preset message-load --profile full -v\n"
    "  beamlab suite --preset ./my-table.preset\n"
    "  beamlab suite -pa ./ebin my_workload --format json\n"
    "  beamlab suite ring --flavor emu            (the interpreter: an OTP with both flavours)\n".

%% @doc The preset file read, when `--preset' names one (`--save' is the
%% output).
-spec files(beamlab_cli_args:parsed()) -> #{inputs := [beamlab_runtime_file:named()]}.
files(Parsed) ->
    #{inputs => [{"--preset", F} || F <- [beamlab_cli_args:get(preset, Parsed)], F =/= undefined]}.

%% @doc Runs the command.
-spec run(beamlab_cli_args:parsed()) -> beamlab_command:outcome().
run(Parsed) ->
    case beamlab_cli_args:get(list, Parsed) of
        true ->
            beamlab_cli_args:add_code_paths(beamlab_cli_args:get(pa, Parsed)),
            list(maps:get(args, Parsed));
        false ->
            measure(experiment(Parsed), Parsed)
    end.

%% @doc The experiment: the selection (workloads or a preset), the
%% parameters, the measurement options.
-spec experiment(beamlab_cli_args:parsed()) -> beamlab_experiment:experiment().
experiment(Parsed) ->
    Get = fun(K) -> beamlab_cli_args:get(K, Parsed) end,
    Names = maps:get(args, Parsed),
    Select = case Get(preset) of
                 undefined ->
                     {workloads, Names};
                 Preset ->
                     Names =:= [] orelse
                         beamlab_cli_error:usage("--preset runs the preset's rows: do not also name workloads (~ts)",
                                                 [lists:join(" ", Names)]),
                     {preset, Preset, preset_node(Get(node))}
             end,
    _ = [filelib:is_dir(D) orelse beamlab_cli_error:usage("-pa ~ts: no such directory", [D]) || D <- Get(pa)],
    Suite = #{select => Select, params => overrides(Parsed), profile => Get(profile),
              repeat => beamlab_cli_args:get(repeat, Parsed, default), timeout => 1000 * Get(timeout),
              code_paths => Get(pa), flavor => Get(flavor),
              dist => maps:from_list([{K, V} || {K, O} <- [{name, dist_name}, {cookie, cookie}],
                                                V <- [Get(O)], V =/= undefined])},
    beamlab_cli_metrics:add(Parsed, maps:merge(#{run => {suite, Suite}, command => maps:get(argv, Parsed),
                 telemetry => case Get(verbose) > 0 of true -> live; false -> none end},
               case Get(memory) of
                   true -> #{'after' => #{memory => true}};
                   false -> #{}
               end)).

preset_node(undefined) ->
    none;
preset_node(Text) ->
    case beamlab_workload:parse_value(node, Text) of
        {ok, N} when N =/= none -> N;
        _ -> beamlab_cli_error:usage("--node ~ts: expected NAME@HOST", [Text])
    end.

%%--------------------------------------------------------------------
%% --list

list(Names) ->
    Mods = case Names of
               [] -> beamlab_workload:builtin();
               _ -> [resolve(N) || N <- Names]
           end,
    io:put_chars([list_one(M) || M <- Mods]),
    Names =:= [] andalso
        io:format("presets (beamlab suite --preset NAME): ~ts~n",
                  [lists:join(", ", beamlab_suite_preset:names())]),
    {0, none}.

resolve(Name) ->
    case beamlab_workload:resolve(Name) of
        {ok, M} -> M;
        {error, R} -> beamlab_cli_error:usage("~ts", [beamlab_workload:format_error(R)])
    end.

list_one(Mod) ->
    #{name := Name, summary := Summary, unit := Unit} = Info = beamlab_workload:info(Mod),
    Rows = [[["  ", atom_to_list(K)], beamlab_workload:format_value(D),
             beamlab_workload:format_value(maps:get(full, S, D)),
             beamlab_workload:type_name(T), H]
            || #{key := K, default := D, type := T, help := H} = S <- beamlab_workload:param_specs(Mod)],
    [io_lib:format("~ts  (~ts, ~ts is better)~n  ~ts~n",
                   [Name, Unit, maps:get(better, Info), Summary]),
     beamlab_format_table:render(["  param", "quick", "full", "type", "meaning"], Rows,
                                 #{align => [left, left, left, left, left]}),
     "\n"].

%%--------------------------------------------------------------------
%% Measuring

measure(Exp, Parsed) ->
    Verbose = beamlab_cli_args:get(verbose, Parsed, 0) > 0,
    Progress = case Verbose orelse beamlab_cli_output:format(Parsed) =/= text of
                   true -> undefined;
                   false -> beamlab_runtime_progress:start()
               end,
    Checkpoint = beamlab_runtime_checkpoint:open(maps:get(checkpoint, Parsed, undefined),
                                                 #{command => "suite", parsed => Parsed}),
    try beamlab_cli_experiment:run(Exp#{sink => sink(Verbose, Progress), checkpoint => Checkpoint})
    after
        Progress =/= undefined andalso beamlab_runtime_progress:stop(Progress)
    end.

overrides(Parsed) ->
    lists:foldl(fun(P, Acc) -> add_param(parse_param(P), Acc) end, #{},
                beamlab_cli_args:get(param, Parsed)).

%% @doc Parses `NAME.KEY=VALUE[,VALUE...]'; usage error when malformed.
-spec parse_param(string()) -> {binary(), string(), [string()]}.
parse_param(Text) ->
    case string:split(Text, "=") of
        [Lhs, Value] ->
            case string:split(Lhs, ".") of
                [W, K] when W =/= "", K =/= "", Value =/= "" ->
                    {unicode:characters_to_binary(W), K, string:split(Value, ",", all)};
                _ -> bad_param(Text)
            end;
        _ -> bad_param(Text)
    end.

-spec bad_param(string()) -> no_return().
bad_param(Text) ->
    beamlab_cli_error:usage("--param ~ts: expected NAME.KEY=VALUE (e.g. ring.n=1000 or "
                            "ping_pong.size=0,10,100)", [Text]).

add_param({W, K, Vs}, Acc) ->
    Acc#{W => (maps:get(W, Acc, #{}))#{K => Vs}}.

%% Without -v: the point being measured, as one progress line (text output
%% only, like `run'); with -v: every repetition's value.
sink(false, undefined) ->
    fun(_) -> ok end;
sink(false, Progress) ->
    fun({suite, {point_start, Name, #{isolated := Iso}}}) ->
            N = beamlab_runtime_progress:next(Progress),
            beamlab_runtime_progress:show(Progress,
                                          io_lib:format("suite: point ~w: ~ts~ts",
                                                        [N, Name, case Iso of true -> " (fresh VM)"; false -> "" end]));
       (_) -> ok
    end;
sink(true, _Progress) ->
    fun({suite, {point_start, Name, #{isolated := Iso}}}) ->
            io:format(standard_error, "suite: ~ts~ts~n",
                      [Name, case Iso of true -> " (in a fresh VM with a larger +P)"; false -> "" end]);
       ({suite, {repetition, _Name, Which, V}}) ->
            io:format(standard_error, "  ~ts: ~ts~n",
                      [case Which of warmup -> "warm-up"; N -> integer_to_list(N) end,
                       beamlab_format_units:sig(V, 4)]);
       ({suite, {point_done, Name, {error, Msg}}}) ->
            io:format(standard_error, "  ~ts: ~ts~n", [Name, Msg]);
       (_) -> ok
    end.

%%--------------------------------------------------------------------
%% Text view

%% @doc The suite's table, counters and failures; a preset's own table
%% first when the run followed one.
-spec text(beamlab_result:result(), beamlab_cli_args:parsed()) -> unicode:chardata().
text(Doc, Parsed) ->
    beamlab_render_view:text(Doc, beamlab_cli_output:text_opts(Parsed)).

%% @doc The kind of experiment the command runs.
-spec kind() -> suite.
kind() -> suite.
