%%% @doc `beamlab matrix': run one beamlab command in a fresh VM per VM
%%% configuration (emulator flags, scheduler sweeps, `erl' installs,
%%% wrappers such as taskset), with interleaved repetitions, and compare
%%% the configurations against a baseline. See `beamlab_env_matrix'.
-module(beamlab_command_matrix).
-behaviour(beamlab_command).

-export([summary/0, options/0, usage/0, run/1, text/2]).

%% @doc One line for `beamlab help'.
-spec summary() -> string().
summary() ->
    "run a benchmark or suite across VM configurations, each in a fresh VM".

%% @doc Options of `beamlab matrix'.
-spec options() -> [beamlab_cli_args:option()].
options() ->
    [#{name => vm, long => "vm", type => string, multi => true, metavar => "'ARGS'",
       help => "emulator arguments of one configuration, e.g. '+S 2 +sbt db' (repeat)"},
     #{name => sweep, long => "sweep-schedulers", type => string, metavar => "RANGE",
       help => "one configuration per scheduler count: 1..4, 1,2,4 or 1..max (+S K:K)"},
     #{name => erl, long => "erl", type => string, multi => true, metavar => "PATH",
       help => "an erl executable (another OTP install) as a dimension (repeat)"},
     #{name => wrap, long => "wrap", type => string, multi => true, metavar => "'CMD'",
       help => "a wrapper command, e.g. 'taskset -c 0' or 'numactl -N 0'; 'none' for no wrapper (repeat)"},
     #{name => file, long => "file", type => string, metavar => "FILE",
       help => "a grid of Erlang terms: {vm, \"+S 1\"}. {sweep, \"1..4\"}. {erl, Path}. "
               "{wrap, Cmd}. {baseline, Name}. {repeat, N}. {command, [Arg, ...]}."},
     #{name => baseline, long => "baseline", type => string, metavar => "CONFIG",
       help => "the configuration others are compared with (default: the first)"},
     #{name => repeat, short => "n", long => "repeat", type => pos_integer, metavar => "R",
       max => 10000,
       help => "fresh VMs per configuration, interleaved (default 3)"}
     | target_options() ++ beamlab_cli_args:common_options()].

%% The system under test started per configuration (beamlab_cli_target).
target_options() ->
    [#{name => target, long => "target", type => {enum, [rabbitmq]}, metavar => "KIND",
       help => "start the system under test per configuration instead of a beamlab VM: "
               "rabbitmq (a private broker; the inner command is amqp)"},
     #{name => target_cmd, long => "target-cmd", type => string, metavar => "'CMD'",
       help => "start any release or escript per configuration (flags via ERL_ZFLAGS)"},
     #{name => target_node, long => "target-node", type => string, metavar => "NODE",
       help => "the node name --target-cmd starts (name@host)"},
     #{name => cookie, long => "cookie", type => string, metavar => "COOKIE",
       help => "the --target-cmd node's cookie"},
     #{name => otp, long => "otp", type => string, multi => true, metavar => "DIR",
       help => "run the target on the Erlang/OTP installed in DIR (a dimension; repeat)"}].

%% @doc Examples for `beamlab help matrix'.
-spec usage() -> iodata().
usage() ->
    "Usage: beamlab matrix [DIMENSIONS] [-n R] [--baseline CONFIG] -- COMMAND [ARGS]\n\n"
    "COMMAND is any beamlab command that produces a result (run, suite, ...). Every\n"
    "configuration is the cross product of --vm/--sweep-schedulers, --erl and --wrap.\n"
    "Repetitions are interleaved (A1 B1 A2 B2 ...) so machine drift hits all alike;\n"
    "each repetition is a fresh VM and contributes its mean. Each VM's own env\n"
    "report is kept, so the table shows the schedulers the VM really had.\n\n"
    "Examples:\n"
    "  beamlab matrix --vm '+S 1' --vm '+S 2' -- suite ping_pong\n"
    "  beamlab matrix --sweep-schedulers 1..max -n 5 -- run 'lists:seq(1, 1000).' -d 1000\n"
    "  beamlab matrix --vm '+sbwt none' --vm '+sbwt very_long' --wrap 'taskset -c 0' -- suite ring\n"
    "  beamlab matrix --erl /opt/otp26/bin/erl --erl /opt/otp27/bin/erl -- run 'ok.'\n"
    "  beamlab matrix --file grid.config --format json --save\n"
    "  beamlab matrix --target rabbitmq --vm '+sbt u' --vm '+sbt db' --vm '+S 1' \\\n"
    "                 --wrap 'taskset -c 1' -n 3 -- amqp --closed-loop 50 -z 6\n"
    "  beamlab matrix --target-cmd './_build/prod/rel/app/bin/app foreground' \\\n"
    "                 --target-node app@127.0.0.1 --cookie app --vm '+S 1' --vm '+S 2' -- run 'ok.'\n\n"
    "With --target (or --target-cmd) each repetition starts the system under test\n"
    "with the configuration's flags (wrapper in front, --otp DIR's erl first on its\n"
    "PATH), waits until it is up, proves the flags from the node's own report read\n"
    "over distribution, runs the inner command against it (amqp gets -h URI and\n"
    "--watch NODE), stops it and removes its data. A configuration whose target\n"
    "fails (flag refused, wrapper missing, died under load) is reported as failed.\n".

%% @doc Runs the matrix; the document compares the configurations.
-spec run(beamlab_cli_args:parsed()) -> beamlab_command:outcome().
run(Parsed) ->
    Get = fun(K) -> beamlab_cli_args:get(K, Parsed) end,
    Grid = case Get(file) of
               undefined -> #{};
               File -> ok_or_usage(beamlab_env_matrix:read_grid(File))
           end,
    Sweep = case Get(sweep) of
                undefined -> maps:get(sweep, Grid, []);
                Range -> maps:get(sweep, Grid, []) ++ ok_or_usage(beamlab_env_matrix:parse_range(Range))
            end,
    Dims = #{vm => maps:get(vm, Grid, []) ++ list(Get(vm)),
             sweep => Sweep,
             erl => maps:get(erl, Grid, []) ++ list(Get(erl)),
             wrap => maps:get(wrap, Grid, []) ++ list(Get(wrap))},
    Command = case {maps:get(rest, Parsed), maps:get(args, Parsed)} of
                  {[], []} -> maps:get(command, Grid, []);
                  {Rest, []} -> Rest;
                  {_, Args} -> beamlab_cli_error:usage("unexpected arguments before '--': ~ts "
                                                       "(the inner command goes after --)",
                                                       [lists:join(" ", Args)])
              end,
    case Command of
        [] -> beamlab_cli_error:usage("no command to run: give one after '--', e.g. "
                                      "beamlab matrix --vm '+S 1' --vm '+S 2' -- suite ping_pong", []);
        ["matrix" | _] -> beamlab_cli_error:usage("a matrix cannot run a matrix", []);
        _ -> ok
    end,
    Target = beamlab_cli_target:target(Parsed, Command),
    Configs = case Target of
                  none -> ok_or_usage(beamlab_env_matrix:configs(Dims));
                  _ -> ok_or_usage(beamlab_env_matrix:configs(
                                     Dims#{erl => maps:get(erl, Dims) ++ beamlab_cli_target:otp_erls(Parsed)},
                                     #{check_wrappers => false}))
              end,
    Baseline = case Get(baseline) of
                   undefined -> maps:get(baseline, Grid, undefined);
                   B -> unicode:characters_to_binary(B)
               end,
    Spec = #{configs => Configs, command => Command, baseline => Baseline,
             repeat => case Get(repeat) of
                           undefined -> maps:get(repeat, Grid, 3);
                           R -> R
                       end,
             sweep => Sweep =/= [], argv => beamlab_result_redact:argv(maps:get(argv, Parsed)),
             started_at => beamlab_runtime_clock:rfc3339(),
             %% Each configuration's VM runs the inner command through the
             %% dispatcher, quietly, and hands back its document.
             inner => {beamlab_cli, run_command, [Command, #{quiet => true, errors => return}]}},
    ok = beamlab_runtime_interrupt:subscribe(),
    Progress = fun(Line) -> io:put_chars(standard_error, Line) end,
    %% -v: live telemetry of this VM, which only starts and waits for the
    %% configurations' VMs; what it shows is the machine around them.
    Telemetry = beamlab_cli_verbose:start(Get(verbose) > 0),
    Runner = case Target of
                 none -> #{};
                 _ -> #{runner => beamlab_cli_target:runner(Target, Progress)}
             end,
    Run = try beamlab_env_matrix:run(Spec, Runner#{progress => Progress})
          after ok = beamlab_runtime_interrupt:unsubscribe()
          end,
    case Run of
        {ok, Result0} ->
            Result = beamlab_cli_verbose:stop(Telemetry, Result0),
            case [C || C = #{<<"ok_runs">> := N} <- maps:get(<<"configs">>, maps:get(extra, Result)), N > 0] of
                _ when map_get(partial, Result) -> {beamlab_runtime_interrupt:exit_code(), Result};
                [] ->
                    io:put_chars(standard_error, "beamlab: no configuration ran successfully\n"),
                    {1, Result};
                _ -> {0, Result}
            end;
        {error, Reason} ->
            ok = beamlab_cli_verbose:cancel(Telemetry),
            beamlab_cli_error:usage("~ts", [beamlab_env_matrix:format_error(Reason)])
    end.

%% @doc The configurations' table with verdicts, then the findings.
-spec text(beamlab_result:result(), beamlab_cli_args:parsed()) -> unicode:chardata().
text(Result, Parsed) ->
    [beamlab_render_matrix:render(Result, beamlab_cli_output:text_opts(Parsed)),
     beamlab_render_text:findings(maps:get(findings, Result))].

ok_or_usage({ok, V}) -> V;
ok_or_usage({error, Reason}) -> beamlab_cli_error:usage("~ts", [beamlab_env_matrix:format_error(Reason)]).

list(undefined) -> [];
list(L) when is_list(L) -> L.
