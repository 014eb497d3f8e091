%%% @doc `beamlab matrix': run one beamlab command in a fresh VM per VM
%%% configuration (emulator flags, scheduler sweeps, `erl' installs,
%%% wrappers such as taskset), with interleaved repetitions, and compare
%%% the configurations against a baseline. See `beamlab_env_matrix'.
-module(beamlab_command_matrix).
-behaviour(beamlab_command).

-export([summary/0, options/0, usage/0, run/1, experiment/1, text/2]).
-export([kind/0, files/1]).

-include("beamlab_cli_error.hrl").

%% @doc One line for `beamlab help'.
-spec summary() -> string().
summary() ->
    "run a benchmark or suite across VM configurations, each in a fresh VM".

%% @doc Options of `beamlab matrix': the matrix kind's
%% (beamlab_experiment_matrix:options/0, where their types, bounds and
%% help are declared), each followed by the command line's own that
%% belong with it, then the common ones.
-spec options() -> [beamlab_cli_args:option()].
options() ->
    Own = cli_options(),
    lists:append([[F | maps:get(N, Own, [])]
                  || #{name := N} = F <- beamlab_schema:flags(beamlab_experiment_matrix:options())])
        ++ beamlab_cli_args:common_options().

%% The command line's own options (the library has no grid file, no
%% preset, states a target command as a map and runs no load command),
%% by the kind's option they follow.
cli_options() ->
    #{wrap =>
          [#{name => file, long => "file", type => string, metavar => "FILE",
             help => "a grid of Erlang terms: {vm, \"+S 1\"}. {sweep, \"1..4\"}. {erl, Path}. "
                     "{wrap, Cmd}. {baseline, Name}. {repeat, N}. {command, [Arg, ...]}."}],
      repeat =>
          [#{name => preset, long => "preset", type => string, metavar => "NAME",
             help => "run a published study's scenarios and print its table beside this machine's: "
                     "jit-study (RabbitMQ's JIT against its interpreter under PerfTest's two scenarios)"},
           #{name => duration, long => "duration", type => pos_integer, metavar => "S", max => 86400,
             help => "with --preset: seconds each load runs (default the preset's)"}],
      target =>
          [#{name => target_cmd, long => "target-cmd", type => string, metavar => "'CMD'",
             help => "start any release or escript per configuration (flags via ERL_ZFLAGS)"},
           #{name => target_node, long => "target-node", type => string, metavar => "NODE",
             help => "the node name --target-cmd starts (name@host)"},
           #{name => cookie, long => "cookie", type => cookie, metavar => "COOKIE",
             help => "the --target-cmd node's cookie"}],
      otp =>
          [beamlab_experiment_target:load_cmd_option(),
           #{name => profile, long => "profile", type => boolean, default => false,
             help => "with a target: one more repetition per configuration, after the measured ones, with perf "
                     "on the target's OS process while the load runs (top table, folded stacks, flame graphs)"},
           #{name => profile_mode, long => "profile-mode", type => {enum, [graph, flat]}, default => graph,
             metavar => "graph|flat",
             help => "graph: call stacks (+JPperf true on the JIT; flame graphs); flat: self time only "
                     "(+JPperf map, no call graphs: the least perf work)"},
           #{name => profile_process, long => "profile-process", type => string, multi => true,
             metavar => "PROCESS",
             help => "with a target: one more repetition per configuration, after the measured ones, capturing "
                     "this process of the target's node while the load runs (as profile --process takes it: a "
                     "registered name, queue:NAME, top:reductions; repeatable): call table and flame graph"},
           #{name => folded, long => "folded", type => string, metavar => "DIR",
             help => "with --profile: write each configuration's folded stacks to DIR/CONFIG.folded"}]}.

%% @doc Examples for `beamlab help matrix'.
-spec usage() -> iodata().
usage() ->
    ["Usage: beamlab matrix [DIMENSIONS] [-n R] [--baseline CONFIG] -- COMMAND [ARGS]\n\n"
    "COMMAND is any beamlab command that produces a result (run, suite, ...). Every\n"
    "configuration is the cross product of --vm/--sweep-schedulers, --erl and --wrap.\n"
    "Repetitions are interleaved (A1 B1 A2 B2 ...) so machine drift hits all alike;\n"
    "each repetition is a fresh VM and contributes one value: wall-clock, its ", level(<<"time">>), ";\n"
    "--metric cpu, its ", level(<<"cpu">>), ". Each VM's own env report is kept, so the\n"
    "table shows the schedulers the VM really had.\n\n"
    "Examples:\n"
    "  beamlab matrix --vm '+S 1' --vm '+S 2' -- suite ping_pong\n"
    "  beamlab matrix --sweep-schedulers 1..max -n 5 -- run 'lists:seq(1, 1000).' -d 1000\n"
    "  beamlab matrix --vm '+sbwt none' --vm '+sbwt very_long' --wrap 'taskset -c 0' -- suite ring\n"
    "  beamlab matrix --erl /opt/otp26/bin/erl --erl /opt/otp27/bin/erl -- run 'ok.'\n"
    "  beamlab matrix --file grid.config --format json --save\n"
    "  beamlab matrix --vm '+S 1' --vm '+S 2' --ci 2% --max-time 600 -- run 'lists:seq(1, 1000).'\n"
    "  beamlab matrix --vm '+S 1' --vm '+S 2' --metric cpu -- run 'lists:seq(1, 1000).'\n"
    "  beamlab matrix --target rabbitmq --vm '+sbt u' --vm '+sbt db' --vm '+S 1' \\\n"
    "                 --wrap 'taskset -c 1' -n 3 -- amqp --closed-loop 50 -z 6\n"
    "  beamlab matrix --target rabbitmq --otp /opt/beamlab-otp/27 --flavor emu --flavor jit -n 5 \\\n"
    "                 --profile -- amqp -x 1 -y 1 -u q1 -f mandatory -q 300 -c 100 -z 30\n"
    "  beamlab matrix --target rabbitmq --otp /opt/beamlab-otp/27 --flavor emu --flavor jit -n 3 \\\n"
    "                 --profile-process queue:q1 -- amqp -x 1 -y 1 -u q1 -z 20\n"
    "  beamlab matrix --preset jit-study [--otp DIR] [-n 5] [--duration 30] [--profile] [--load-cmd CMD] [--save]\n"
    "  beamlab matrix --target rabbitmq --otp /opt/beamlab-otp/27 --flavor emu --flavor jit \\\n"
    "                 --load-cmd '/opt/beamlab-perftest/2.22.1/bin/perftest -h {uri} {flags}' \\\n"
    "                 -- amqp -x 1 -y 1 -u q1 -f mandatory -q 300 -c 100 -z 30\n"
    "  beamlab matrix --target-cmd './_build/prod/rel/app/bin/app foreground' \\\n"
    "                 --target-node app@127.0.0.1 --cookie app --vm '+S 1' --vm '+S 2' -- run 'ok.'\n\n"
    "With --target (or --target-cmd) each repetition starts the system under test\n"
    "with the configuration's flags (wrapper in front, --otp DIR's erl first on its\n"
    "PATH), waits until it is up, proves the flags from the node's own report read\n"
    "over distribution, runs the inner command against it (amqp gets -h URI and\n"
    "--watch NODE), stops it and removes its data. A configuration whose target\n"
    "fails (flag refused, wrapper missing, died under load) is reported as failed.\n"].

%% What a fresh VM contributes for a metric, as the comparison takes it
%% (beamlab_result_compare:run_level/1).
level(Metric) ->
    beamlab_result_compare:level_words(beamlab_result_compare:run_level(Metric)).

%% @doc The configuration file read (`--file'; `--save' is the output).
-spec files(beamlab_cli_args:parsed()) -> #{inputs := [beamlab_runtime_file:named()]}.
files(Parsed) ->
    #{inputs => [{"--file", F} || F <- [beamlab_cli_args:get(file, Parsed)], F =/= undefined]}.

%% @doc Runs the matrix; the document compares the configurations.
-spec run(beamlab_cli_args:parsed()) -> beamlab_command:outcome().
run(Parsed) ->
    ?CATCHING(run_parsed(Parsed)).

run_parsed(Parsed) ->
    %% Each configuration's lines (and a target's, and an inner AMQP
    %% load's PerfTest lines) go to stderr: stdout carries the result.
    Sink = fun({note, Line}) -> io:format(standard_error, "beamlab: ~ts~n", [Line]);
              ({amqp, Bin}) -> beamlab_amqp_live:write_utf8(standard_error, Bin);
              ({matrix, Line}) -> io:put_chars(standard_error, Line);
              (_) -> ok
           end,
    {Code, Doc} = ?VALUE(beamlab_cli_experiment:run((describe(Parsed))#{sink => Sink})),
    ok = write_folded(beamlab_cli_args:get(folded, Parsed), Doc),
    {Code, Doc}.

%% @doc The experiment: the configurations, and the inner command parsed
%% into the inner experiment (so a command the matrix cannot run, or a
%% mistake in it, is a usage error before any VM starts).
-spec experiment(beamlab_cli_args:parsed()) ->
          {ok, beamlab_experiment:experiment()} | {error, beamlab_cli_error:reason()}.
experiment(Parsed) ->
    ?CATCHING({ok, describe(Parsed)}).

describe(Parsed) ->
    case beamlab_cli_args:get(preset, Parsed) of
        undefined ->
            beamlab_cli_args:get(duration, Parsed) =:= undefined orelse
                ?USAGE("--duration sets a preset's load time: give -z to the amqp after --", []),
            plain(Parsed);
        Name -> preset(Name, Parsed)
    end.

plain(Parsed) ->
    Get = fun(K) -> beamlab_cli_args:get(K, Parsed) end,
    %% (a range's mistake first, as the library says it; the rest once
    %% the target is known: check_options/2)
    Range = maps:with([sweep], beamlab_cli_experiment:given(Parsed, beamlab_experiment_matrix:options())),
    ?CHECK(beamlab_cli_experiment:checked(beamlab_experiment_matrix:check_options(Range))),
    Grid = case Get(file) of
               undefined -> #{};
               File -> ok_or_usage(beamlab_env_matrix:read_grid(File))
           end,
    Sweep = case Get(sweep) of
                undefined -> maps:get(sweep, Grid, []);
                Text -> maps:get(sweep, Grid, []) ++ ok_or_usage(beamlab_env_matrix:parse_range(Text))
            end,
    Dims = #{vm => maps:get(vm, Grid, []) ++ list(Get(vm)),
             sweep => Sweep,
             erl => maps:get(erl, Grid, []) ++ list(Get(erl)),
             flavor => list(Get(flavor)),
             wrap => maps:get(wrap, Grid, []) ++ list(Get(wrap))},
    Command0 = case {maps:get(rest, Parsed), maps:get(args, Parsed)} of
                   {[], []} -> maps:get(command, Grid, []);
                   {Rest, []} -> Rest;
                   {_, Args} -> ?USAGE("unexpected arguments before '--': ~ts "
                                       "(the inner command goes after --)",
                                       [lists:join(" ", Args)])
               end,
    %% --load-cmd is the load itself: an amqp after -- only lends its
    %% flags ({flags}).
    Command = case {Command0, Get(load_cmd)} of
                  {[], L} when L =/= undefined -> ["amqp"];
                  _ -> Command0
              end,
    case Command of
        [] -> ?USAGE("no command to run: give one after '--', e.g. "
                     "beamlab matrix --vm '+S 1' --vm '+S 2' -- suite ping_pong", []);
        ["matrix" | _] -> ?USAGE("a matrix cannot run a matrix", []);
        _ -> ok
    end,
    Target0 = target(Parsed),
    check_options(Parsed, Target0, case Command of
                                       ["amqp" | _] -> amqp;
                                       _ -> other
                                   end),
    Target = load_and_profile(Target0, Parsed),
    Configs = case beamlab_experiment_matrix:configs(Dims, Target) of
                  {ok, Cs} -> Cs;
                  {error, Why} -> ?ABORT(beamlab_cli_experiment:cli_error(Why))
              end,
    Inner = ?VALUE(beamlab_cli_experiment:inner(matrix, Command)),
    Matrix = #{configs => Configs, inner => Inner,
               baseline => case Get(baseline) of
                               undefined -> maps:get(baseline, Grid, undefined);
                               B -> unicode:characters_to_binary(B)
                           end,
               repeat => case Get(repeat) of
                             undefined -> maps:get(repeat, Grid, 3);
                             R -> R
                         end,
               sweep => Sweep =/= [], profiled => Get(profile) orelse (is_map(Target) andalso maps:is_key(capture, Target))},
    maps:merge(#{run => {matrix, with_rule(Parsed, Matrix)}, command => beamlab_result_redact:argv(maps:get(argv, Parsed)),
                 %% -v: live telemetry of this VM
                 telemetry => case Get(verbose) > 0 of true -> live; false -> none end},
               case Target of
                   none -> #{};
                   _ -> #{target => Target}
               end).

%% A preset: its scenarios against a private broker on one OTP (--otp,
%% default the one scripts/install-otp.sh builds), one configuration per
%% flavour of the preset.
preset(Name, Parsed) ->
    Get = fun(K) -> beamlab_cli_args:get(K, Parsed) end,
    Preset = case beamlab_experiment_preset:find(Name) of
                 {ok, P} -> P;
                 {error, R} -> ?USAGE("~ts", [beamlab_experiment_preset:format_error(R)])
             end,
    _ = [?USAGE("--preset ~ts sets the configurations, the target and the load: "
                "drop --~ts", [Name, string:replace(atom_to_list(K), "_", "-", all)])
         || K <- [vm, sweep, erl, wrap, file, flavor, target, target_cmd, target_node, baseline],
            Get(K) =/= undefined],
    maps:get(rest, Parsed) =:= [] andalso maps:get(args, Parsed) =:= [] orelse
        ?USAGE("--preset ~ts runs its own loads: no command after --", [Name]),
    Otp = case list(Get(otp)) of
              [] -> default_otp();
              [O] -> O;
              _ -> ?USAGE("--preset runs on one OTP: give --otp once", [])
          end,
    Target = load_and_profile(#{kind => rabbitmq, otp => [Otp]}, Parsed),
    Configs = case beamlab_experiment_matrix:configs(#{flavor => maps:get(flavors, Preset)}, Target) of
                  {ok, Cs} -> Cs;
                  {error, Why} -> ?ABORT(beamlab_cli_experiment:cli_error(Why))
              end,
    Seconds = case Get(duration) of undefined -> maps:get(duration, Preset); D -> D end,
    Scenarios = [{S, ?VALUE(beamlab_cli_experiment:inner(matrix, beamlab_experiment_preset:inner(Preset, S, Seconds)))}
                 || S <- maps:get(scenarios, Preset)],
    Matrix = #{configs => Configs, inner => element(2, hd(Scenarios)),
               repeat => case Get(repeat) of undefined -> maps:get(repeat, Preset); N -> N end,
               profiled => Get(profile) orelse maps:is_key(capture, Target), preset => Preset,
               scenarios => Scenarios},
    #{run => {matrix, with_rule(Parsed, Matrix)}, command => beamlab_result_redact:argv(maps:get(argv, Parsed)),
      telemetry => case Get(verbose) > 0 of true -> live; false -> none end,
      target => Target}.

%% --ci, --max-time (in ms, as the library takes it) and --metric.
with_rule(Parsed, Matrix) ->
    Schema = beamlab_experiment_matrix:options(),
    Values = beamlab_schema:from_flags(Schema, maps:with([ci, max_time, metric], maps:get(opts, Parsed))),
    beamlab_experiment_matrix:with_rule(maps:filter(fun(_, V) -> V =/= undefined end, Values), Matrix).

default_otp() ->
    Prefix = case os:getenv("BEAMLAB_OTP27_PREFIX") of
                 V when V =:= false; V =:= "" -> "/opt/beamlab-otp/27";
                 V -> V
             end,
    case filelib:is_regular(filename:join([Prefix, "bin", "erl"])) of
        true -> Prefix;
        false -> ?USAGE("--preset needs an OTP with both flavours: build it with "
                        "scripts/install-otp.sh (~ts) or give --otp DIR", [Prefix])
    end.

%% The kind's options given, checked as the library checks them
%% (beamlab_experiment_matrix:check_options/1), naming the flags; a
%% target command as the library states it.
check_options(Parsed, Target, InnerKind) ->
    Flags = beamlab_cli_experiment:given(Parsed, beamlab_experiment_matrix:options()),
    Given = case Target of
                none -> Flags;
                #{kind := rabbitmq} -> Flags#{target => rabbitmq};
                #{kind := cmd} -> Flags#{target => maps:with([cmd, node], Target)}
            end,
    ?CHECK(beamlab_cli_experiment:checked(beamlab_experiment_matrix:check_options(Given#{inner => InnerKind}))).

%% The target the options ask for (`none' without one).
target(Parsed) ->
    Get = fun(K) -> beamlab_cli_args:get(K, Parsed) end,
    Otp = list(Get(otp)),
    case {Get(target), Get(target_cmd), Get(target_node)} of
        {undefined, undefined, undefined} ->
            none;
        {rabbitmq, undefined, undefined} ->
            %% (its load is amqp: check_options/3)
            #{kind => rabbitmq, otp => Otp};
        {undefined, Cmd, Node} when Cmd =/= undefined, Node =/= undefined ->
            case string:split(Node, "@") of
                [[_ | _], [_ | _]] -> ok;
                _ -> ?USAGE("--target-node '~ts' is not a node name (name@host)", [Node])
            end,
            #{kind => cmd, cmd => Cmd, node => Node, cookie => Get(cookie), otp => Otp};
        {undefined, _, _} ->
            ?USAGE("--target-cmd and --target-node go together", []);
        _ ->
            ?USAGE("give either --target rabbitmq or --target-cmd/--target-node", [])
    end.

%% The target with its load (--load-cmd) and profile (--profile,
%% --profile-mode) options; perf must be usable before any broker starts.
load_and_profile(Target, Parsed) ->
    Get = fun(K) -> beamlab_cli_args:get(K, Parsed) end,
    Target =:= none andalso Get(load_cmd) =/= undefined andalso
        ?USAGE("--load-cmd is the load of a target: give --target rabbitmq", []),
    Target =:= none andalso Get(profile) andalso
        ?USAGE("--profile profiles a target's VM: give --target rabbitmq or --target-cmd "
               "(beamlab profile -- matrix ... profiles beamlab's own VMs)", []),
    Target =:= none andalso Get(profile_process) =/= undefined andalso
        ?USAGE("--profile-process captures a process of a target's node: give --target "
               "rabbitmq or --target-cmd", []),
    Get(folded) =/= undefined andalso not Get(profile) andalso
        ?USAGE("--folded writes the profiles' stacks: add --profile", []),
    case Target of
        none -> none;
        _ ->
            Load = case Get(load_cmd) of
                       undefined -> #{};
                       Cmd when map_get(kind, Target) =:= rabbitmq ->
                           %% Blank: no load at all, every repetition would
                           %% fail after the brokers started (#34).
                           string:trim(Cmd) =:= "" andalso
                               ?USAGE("--load-cmd is empty: give the load's command "
                                      "line (an unset variable in a script?)", []),
                           #{load_cmd => Cmd};
                       _ -> ?USAGE("--load-cmd needs --target rabbitmq", [])
                   end,
            Profile = case Get(profile) of
                          false -> #{};
                          true ->
                              case beamlab_profile:check_perf() of
                                  {ok, _} -> #{profile => #{mode => Get(profile_mode), frequency => 999}};
                                  {error, R} -> ?FAIL("--profile: ~ts",
                                                      [beamlab_profile:format_error(R)])
                              end
                      end,
            maps:merge(maps:merge(maps:merge(Target, Load), Profile), capture(Get(profile_process)))
    end.

%% --profile-process: each form checked as `profile --process' checks it
%% (before any broker starts); whether it names a process there is known
%% only once the target runs.
capture(undefined) ->
    #{};
capture(Procs) ->
    case beamlab_experiment_capture:new(#{node => "target@127.0.0.1", process => Procs}) of
        {ok, _} -> #{capture => Procs};
        {error, R} ->
            Line = lists:flatten(beamlab_experiment_capture:format_error(R)),
            ?USAGE("~ts", [case string:prefix(Line, "--process") of
                   nomatch -> Line;
                   Rest -> "--profile-process" ++ Rest
               end])
    end.

%% Each configuration's folded stacks to DIR/CONFIG.folded (the
%% configuration's name with what a file name cannot hold replaced).
write_folded(undefined, _) ->
    ok;
write_folded(Dir, Doc) ->
    case filelib:ensure_path(Dir) of
        ok -> ok;
        {error, R} -> ?FAIL("--folded ~ts: ~ts", [Dir, file:format_error(R)])
    end,
    lists:foreach(
      fun({Name, #{extra := #{<<"profile">> := P}}}) ->
              File = filename:join(Dir, re:replace(Name, "[^A-Za-z0-9_.=+-]+", "_", [global, {return, list}])
                                   ++ ".folded"),
              case beamlab_runtime_file:write(File, beamlab_profile_stacks:folded(P)) of
                  {ok, _} -> io:format(standard_error, "folded stacks of ~ts: ~ts~n", [Name, File]);
                  {error, R2} -> ?FAIL("cannot write ~ts: ~ts",
                                       [File, beamlab_runtime_file:format_error(R2)])
              end
      end, beamlab_result_profiles:of_matrix(Doc)).

%% @doc The configurations' table with verdicts, the profiles, then the
%% findings.
-spec text(beamlab_result:result(), beamlab_cli_args:parsed()) -> unicode:chardata().
text(Result, Parsed) ->
    beamlab_render_view:text(Result, beamlab_cli_output:text_opts(Parsed)).

ok_or_usage({ok, V}) -> V;
ok_or_usage({error, Reason}) -> ?USAGE("~ts", [beamlab_env_matrix:format_error(Reason)]).

list(undefined) -> [];
list(L) when is_list(L) -> L.

%% @doc The kind of experiment the command runs.
-spec kind() -> matrix.
kind() -> matrix.
