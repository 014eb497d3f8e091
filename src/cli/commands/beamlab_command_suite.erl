%%% @doc `beamlab suite': runs the actor workload suite (all workloads, or
%%% those named), lists workloads and their parameters, sets and sweeps
%%% parameters, and prints one table plus each workload's counters.
-module(beamlab_command_suite).
-behaviour(beamlab_command).

-export([summary/0, options/0, usage/0, run/1, experiment/1, text/2]).
-export([kind/0, files/1]).

-include("beamlab_cli_error.hrl").

%% @doc One line for `beamlab help'.
-spec summary() -> string().
summary() -> "run the actor workload suite (spawn, ring, ping-pong, message load, ...)".

%% @doc Options of `beamlab suite': `--list', then the suite kind's
%% (beamlab_experiment_suite:options/0, where their types, bounds and
%% help are declared), then the command line's own.
-spec options() -> [beamlab_cli_args:option()].
options() ->
    [#{name => list, long => "list", type => boolean, default => false,
       help => "list the workloads, their definitions and parameters"}]
        ++ beamlab_schema:flags(beamlab_experiment_suite:options())
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
    "  beamlab suite ring --flavor emu            (the interpreter: an OTP with both flavours)\n"
    "  beamlab suite fib ring --ci 2% --max-time 60   (repeat each point until within +-2%, or 60 s)\n"
    "  beamlab suite fib --metric cpu                 (also each repetition's CPU time: fib/cpu)\n".

%% @doc The preset file read, when `--preset' names one (`--save' is the
%% output).
-spec files(beamlab_cli_args:parsed()) -> #{inputs := [beamlab_runtime_file:named()]}.
files(Parsed) ->
    #{inputs => [{"--preset", F} || F <- [beamlab_cli_args:get(preset, Parsed)], F =/= undefined]}.

%% @doc Runs the command.
-spec run(beamlab_cli_args:parsed()) -> beamlab_command:outcome().
run(Parsed) ->
    ?CATCHING(run_parsed(Parsed)).

run_parsed(Parsed) ->
    case beamlab_cli_args:get(list, Parsed) of
        true ->
            ?CHECK(beamlab_cli_args:add_code_paths(beamlab_cli_args:get(code_paths, Parsed))),
            list(maps:get(args, Parsed));
        false ->
            measure(describe(Parsed), Parsed)
    end.

%% @doc The experiment: the selection (workloads or a preset), the
%% parameters, the measurement options, checked as the library checks
%% them (beamlab_experiment_suite:check_options/1), naming the flags.
-spec experiment(beamlab_cli_args:parsed()) ->
          {ok, beamlab_experiment:experiment()} | {error, beamlab_cli_error:reason()}.
experiment(Parsed) ->
    ?CATCHING({ok, describe(Parsed)}).

describe(Parsed) ->
    Get = fun(K) -> beamlab_cli_args:get(K, Parsed) end,
    Names = maps:get(args, Parsed),
    Schema = beamlab_experiment_suite:options(),
    Flags = beamlab_cli_experiment:given(Parsed, Schema),
    Params = overrides(Parsed),
    Given = case maps:is_key(params, Flags) of
                true -> Flags#{params => Params};
                false -> Flags
            end,
    ?CHECK(beamlab_cli_experiment:checked(beamlab_experiment_suite:check_options(Given#{names => Names}))),
    Select = case Get(preset) of
                 undefined ->
                     {workloads, Names};
                 Preset ->
                     {preset, Preset, case Get(node) of
                                          undefined -> none;
                                          Text -> {ok, N} = beamlab_experiment_suite:remote_node(Text), N
                                      end}
             end,
    Suite = #{select => Select, params => Params, profile => Get(profile),
              repeat => beamlab_cli_args:get(repeat, Parsed, default),
              timeout => maps:get(timeout, beamlab_schema:from_flags(Schema, #{timeout => Get(timeout)})),
              code_paths => Get(code_paths), flavor => Get(flavor), metric => Get(metric),
              dist => maps:from_list([{K, V} || {K, O} <- [{name, dist_name}, {cookie, cookie}],
                                                V <- [Get(O)], V =/= undefined])},
    %% --ci, and its budget per point in whole ms
    Rule = maps:from_list([{ci, C} || C <- [Get(ci)], C =/= undefined]
                          ++ [{max_time, max(1, round(T))}
                              || #{max_time := T} <- [beamlab_schema:from_flags(Schema, #{max_time => Get(max_time)})],
                                 is_number(T)]),
    Exp = maps:merge(#{run => {suite, maps:merge(Suite, Rule)}, command => maps:get(argv, Parsed),
                       telemetry => case Get(verbose) > 0 of true -> live; false -> none end},
                     case Get(memory) of
                         true -> #{'after' => #{memory => true}};
                         false -> #{}
                     end),
    ?VALUE(beamlab_cli_metrics:add(Parsed, Exp)).

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
        {error, R} -> ?USAGE("~ts", [beamlab_workload:format_error(R)])
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
    try ?VALUE(beamlab_cli_experiment:run(Exp#{sink => sink(Verbose, Progress), checkpoint => Checkpoint}))
    after
        Progress =/= undefined andalso beamlab_runtime_progress:stop(Progress)
    end.

overrides(Parsed) ->
    lists:foldl(fun(P, Acc) -> add_param(parse_param(P), Acc) end, #{},
                beamlab_cli_args:get(params, Parsed, [])).

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
    ?USAGE("--param ~ts: expected NAME.KEY=VALUE (e.g. ring.n=1000 or "
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
