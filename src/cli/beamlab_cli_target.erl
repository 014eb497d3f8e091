%%% @doc `beamlab matrix --target rabbitmq | --target-cmd CMD --target-node
%%% NODE': the matrix runner that starts the system under test for each
%%% configuration and repetition (`beamlab_sut_broker:run/3') and runs
%%% the inner command against it in this VM (`amqp' gets the broker's URI
%%% and `--watch' of its node, so its telemetry joins the result).
-module(beamlab_cli_target).

-export([target/2, otp_erls/1, runner/2]).

-type target() :: none | #{kind := rabbitmq | cmd, command := [string()],
                           cmd => string(), node => string(), cookie => string() | undefined}.
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
    fun(#{args := Args, erl := Erl, wrap := Wrap} = Config, Argv) ->
            Spec = maps:merge(maps:merge(maps:with([kind, cmd, node, cookie], Target),
                                         maps:with([flavor], Config)),
                              #{args => Args, wrap => Wrap,
                                otp => case Erl of
                                           undefined -> undefined;
                                           _ -> filename:dirname(filename:dirname(Erl))
                                       end}),
            Load = fun(T) -> beamlab_cli:run_command(Argv ++ load_args(Argv, T), #{quiet => true}) end,
            case beamlab_sut_broker:run(Spec, Load, Progress) of
                {ok, Out} -> {ok, Out};
                {error, E} -> {error, {target, iolist_to_binary(beamlab_sut_broker:format_error(E))}}
            end
    end.

%% What the inner command needs to reach the target. The PerfTest lines
%% of an inner amqp go to stderr (--format json) as progress.
load_args(["amqp" | _], #{uri := Uri, node := Node, cookie := Cookie}) ->
    lists:append([case Uri of undefined -> []; _ -> ["-h", binary_to_list(Uri)] end,
                  ["--watch", atom_to_list(Node)],
                  case Cookie of undefined -> []; _ -> ["--cookie", Cookie] end,
                  ["--format", "json"]]);
load_args(_, _) ->
    [].
