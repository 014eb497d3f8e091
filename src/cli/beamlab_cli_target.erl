%%% @doc `beamlab matrix --target rabbitmq | --target-cmd CMD --target-node
%%% NODE': the matrix runner that starts the system under test for each
%%% configuration and repetition (`beamlab_sut_broker:run/3') and runs
%%% the inner command against it in this VM (`amqp' gets the broker's URI
%%% and `--watch' of its node, so its telemetry joins the result).
-module(beamlab_cli_target).

-export([target/2, with_load/2, otp_erls/1, runner/2, write_folded/2]).

-type target() :: none | #{kind := rabbitmq | cmd, command := [string()],
                           cmd => string(), node => string(), cookie => string() | undefined,
                           load_cmd => string(),
                           profile => #{mode := beamlab_profile:mode(), frequency := pos_integer()}}.
-export_type([target/0]).

%% @doc The target the options ask for (`none' without one); user
%% mistakes end in a usage error.
-spec target(beamlab_cli_args:parsed(), [string()]) -> target().
target(Parsed, Command) ->
    Get = fun(K) -> beamlab_cli_args:get(K, Parsed) end,
    case {Get(target), Get(target_cmd), Get(target_node)} of
        {undefined, undefined, undefined} ->
            Get(otp) =:= undefined orelse
                beamlab_cli_error:usage("--otp needs --target or --target-cmd (use --erl for beamlab VMs)", []),
            none;
        {rabbitmq, undefined, undefined} ->
            case Command of
                ["amqp" | _] -> #{kind => rabbitmq, command => Command};
                _ -> beamlab_cli_error:usage("--target rabbitmq runs an amqp load: give '-- amqp ...'", [])
            end;
        {undefined, Cmd, Node} when Cmd =/= undefined, Node =/= undefined ->
            case string:split(Node, "@") of
                [[_ | _], [_ | _]] -> ok;
                _ -> beamlab_cli_error:usage("--target-node '~ts' is not a node name (name@host)", [Node])
            end,
            #{kind => cmd, command => Command, cmd => Cmd, node => Node, cookie => Get(cookie)};
        {undefined, _, _} ->
            beamlab_cli_error:usage("--target-cmd and --target-node go together", []);
        _ ->
            beamlab_cli_error:usage("give either --target rabbitmq or --target-cmd/--target-node", [])
    end.

%% @doc The target with its load (`--load-cmd') and profile (`--profile',
%% `--profile-mode') options, checked: perf must be usable before any
%% broker starts.
-spec with_load(target(), beamlab_cli_args:parsed()) -> target().
with_load(Target, Parsed) ->
    Get = fun(K) -> beamlab_cli_args:get(K, Parsed) end,
    Target =:= none andalso Get(load_cmd) =/= undefined andalso
        beamlab_cli_error:usage("--load-cmd is the load of a target: give --target rabbitmq", []),
    Target =:= none andalso Get(profile) andalso
        beamlab_cli_error:usage("--profile profiles a target's VM: give --target rabbitmq or --target-cmd "
                                "(beamlab profile -- matrix ... profiles beamlab's own VMs)", []),
    Get(folded) =/= undefined andalso not Get(profile) andalso
        beamlab_cli_error:usage("--folded writes the profiles' stacks: add --profile", []),
    case Target of
        none -> none;
        _ ->
            Load = case Get(load_cmd) of
                       undefined -> #{};
                       Cmd when map_get(kind, Target) =:= rabbitmq -> #{load_cmd => Cmd};
                       _ -> beamlab_cli_error:usage("--load-cmd needs --target rabbitmq", [])
                   end,
            Profile = case Get(profile) of
                          false -> #{};
                          true ->
                              case beamlab_profile:check_perf() of
                                  {ok, _} -> #{profile => #{mode => Get(profile_mode), frequency => 999}};
                                  {error, R} -> beamlab_cli_error:fail("--profile: ~ts", [beamlab_profile:format_error(R)])
                              end
                      end,
            maps:merge(maps:merge(Target, Load), Profile)
    end.

%% @doc `--otp DIR...' as `erl' executables of the matrix's dimension.
-spec otp_erls(beamlab_cli_args:parsed()) -> [string()].
otp_erls(Parsed) ->
    [case filelib:is_regular(filename:join([D, "bin", "erl"])) of
         true -> filename:join([D, "bin", "erl"]);
         false -> beamlab_cli_error:usage("--otp ~ts: no bin/erl there (an OTP installation prefix)", [D])
     end || D <- case beamlab_cli_args:get(otp, Parsed) of undefined -> []; L -> L end].

%% @doc The matrix runner for `Target'.
-spec runner(target(), fun((iodata()) -> term())) -> beamlab_env_matrix:runner().
runner(Target, Progress) ->
    fun(#{args := Args, erl := Erl, wrap := Wrap, name := Name} = Config, Argv) ->
            Profiled = maps:get(profiled, Config, false),
            %% The JIT names its code for perf only when started so.
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
                           #{load_cmd := Cmd} -> {cmd, fill_flags(Cmd, Argv)};
                           _ -> {inner, fun(T) -> beamlab_cli:run_command(Argv ++ load_args(Argv, T),
                                                                          #{quiet => true}) end}
                       end,
            Subject = iolist_to_binary(["broker under ", case LoadSpec of
                                                             {cmd, C} -> C;
                                                             _ -> lists:join(" ", Argv)
                                                         end]),
            Opts = #{load => LoadSpec, sink => fun(L) -> Progress(L) end,
                     profile => case {Profiled, Target} of
                                    {true, #{profile := P}} -> P#{subject => Subject, label => Name};
                                    _ -> none
                                end},
            Load = fun(T) -> compact(Profiled, beamlab_experiment_target:load(T, Opts)) end,
            case beamlab_sut_broker:run(Spec, Load, Progress) of
                {ok, Out} -> {ok, Out};
                {error, E} -> {error, {target, iolist_to_binary(beamlab_sut_broker:format_error(E))}}
            end
    end.

%% {flags} in a --load-cmd: the inner amqp's arguments (PerfTest's own),
%% each quoted for the shell.
fill_flags(Cmd, ["amqp" | Flags]) ->
    lists:flatten(string:replace(Cmd, "{flags}", join_flags(Flags), all));
fill_flags(Cmd, _) ->
    Cmd.

join_flags(Flags) ->
    string:join(["'" ++ lists:flatten(string:replace(F, "'", "'\\''", all)) ++ "'" || F <- Flags], " ").

%% The profiled repetition keeps its figures and profile only (no
%% telemetry series, no env: the matrix holds those of the measured ones).
compact(true, {Code, #{extra := Extra} = Doc}) ->
    {Code, Doc#{extra := maps:with([<<"profile">>, <<"profile_error">>, <<"broker_cpu_us">>], Extra),
                telemetry := #{}, env := #{}}};
compact(_, Out) ->
    Out.

%% @doc Writes each configuration's folded stacks to DIR/CONFIG.folded
%% (the configuration's name with what a file name cannot hold replaced).
-spec write_folded(file:filename() | undefined, beamlab_result:result()) -> ok.
write_folded(undefined, _) ->
    ok;
write_folded(Dir, Doc) ->
    case filelib:ensure_path(Dir) of
        ok -> ok;
        {error, R} -> beamlab_cli_error:fail("--folded ~ts: ~ts", [Dir, file:format_error(R)])
    end,
    lists:foreach(
      fun({Name, P}) ->
              File = filename:join(Dir, re:replace(Name, "[^A-Za-z0-9_.=+-]+", "_", [global, {return, list}])
                                   ++ ".folded"),
              case beamlab_runtime_file:write_atomic(File, beamlab_profile_stacks:folded(P)) of
                  ok -> io:format(standard_error, "folded stacks of ~ts: ~ts~n", [Name, File]);
                  {error, R2} -> beamlab_cli_error:fail("cannot write ~ts: ~ts", [File, file:format_error(R2)])
              end
      end, beamlab_render_matrix_profile:profiles(Doc)).

%% What the inner command needs to reach the target. The PerfTest lines
%% of an inner amqp go to stderr (--format json) as progress.
load_args(["amqp" | _], #{uri := Uri, node := Node, cookie := Cookie}) ->
    lists:append([case Uri of undefined -> []; _ -> ["-h", binary_to_list(Uri)] end,
                  ["--watch", atom_to_list(Node)],
                  case Cookie of undefined -> []; _ -> ["--cookie", Cookie] end,
                  ["--format", "json"]]);
load_args(_, _) ->
    [].
