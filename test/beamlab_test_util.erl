%%% @doc Helpers shared by the Common Test suites: where the repository and
%%% the built escript are, and running `./beamlab' as a user would, with
%%% stdout, stderr and the exit code kept apart.
-module(beamlab_test_util).

-export([root/0, escript/0, cli/1, cli/2, tmp_dir/1, assert_one_line_error/1, rabbitmq/2,
         start_rabbitmq/1, stop_rabbitmq/1]).

%% @doc The repository root (where `make' leaves `./beamlab').
-spec root() -> file:filename().
root() ->
    find_root(filename:dirname(code:which(?MODULE))).

find_root("/") ->
    error(repository_root_not_found);
find_root(Dir) ->
    case filelib:is_regular(filename:join(Dir, "rebar.config"))
         andalso filelib:is_dir(filename:join(Dir, "src")) of
        true -> Dir;
        false -> find_root(filename:dirname(Dir))
    end.

%% @doc The built escript; fails the suite when `make' has not been run.
-spec escript() -> file:filename().
escript() ->
    Path = filename:join(root(), "beamlab"),
    case filelib:is_regular(Path) of
        true -> Path;
        false -> error({escript_not_built, Path, "run: make"})
    end.

%% @doc Runs `./beamlab Args' in a fresh temporary directory.
-spec cli([string()]) -> #{code := integer(), out := binary(), err := binary(), dir := file:filename()}.
cli(Args) ->
    cli(Args, #{}).

%% @doc Options: `dir' (working directory), `timeout' (ms, default 120000),
%% `env' ([{Name, Value}]).
-spec cli([string()], map()) -> #{code := integer(), out := binary(), err := binary(), dir := file:filename()}.
cli(Args, Opts) ->
    Dir = maps:get(dir, Opts, tmp_dir("cli")),
    ErrFile = filename:join(Dir, ".stderr"),
    Port = open_port({spawn_executable, "/bin/sh"},
                     [{args, ["-c", "exec \"$0\" \"$@\" 2>\"$BEAMLAB_TEST_STDERR\" </dev/null",
                              escript() | Args]},
                      {cd, Dir}, {env, [{"BEAMLAB_TEST_STDERR", ErrFile} | maps:get(env, Opts, [])]},
                      exit_status, binary, use_stdio]),
    {Code, Out} = collect(Port, [], maps:get(timeout, Opts, 120000)),
    {ok, Err} = file:read_file(ErrFile),
    ok = file:delete(ErrFile),
    #{code => Code, out => Out, err => Err, dir => Dir}.

collect(Port, Acc, Timeout) ->
    receive
        {Port, {data, D}} -> collect(Port, [Acc, D], Timeout);
        {Port, {exit_status, S}} -> {S, iolist_to_binary(Acc)}
    after Timeout ->
        catch port_close(Port),
        error({cli_timeout, iolist_to_binary(Acc)})
    end.

%% @doc A new empty directory under the system temp dir.
-spec tmp_dir(string()) -> file:filename().
tmp_dir(Prefix) ->
    Base = case os:getenv("TMPDIR") of
               false -> "/tmp";
               T -> T
           end,
    Dir = filename:join(Base, io_lib:format("beamlab-~s-~s-~b", [Prefix, os:getpid(),
                                                                  erlang:unique_integer([positive])])),
    ok = filelib:ensure_path(Dir),
    lists:flatten(Dir).

%% @doc Asserts the shape of a user-error report: exactly one line on
%% stderr starting with "beamlab: ", no stack trace, no crash dump.
-spec assert_one_line_error(#{err := binary(), dir := file:filename(), atom() => term()}) -> ok.
assert_one_line_error(#{err := Err, dir := Dir}) ->
    Lines = [L || L <- binary:split(Err, <<"\n">>, [global]), L =/= <<>>],
    case Lines of
        [<<"beamlab: ", _/binary>>] -> ok;
        _ -> error({not_one_line_error, Err})
    end,
    nomatch = binary:match(Err, [<<"stacktrace">>, <<"{'EXIT'">>, <<"erl_eval">>]),
    false = filelib:is_regular(filename:join(Dir, "erl_crash.dump")),
    ok.

%% @doc Runs `scripts/rabbitmq.sh Action' (start, stop, status, ...) for the
%% private broker on AMQP port `Port'; returns its exit status and output.
-spec rabbitmq(string(), string() | integer()) -> {integer(), binary()}.
rabbitmq(Action, Port) when is_integer(Port) ->
    rabbitmq(Action, integer_to_list(Port));
rabbitmq(Action, Port) ->
    Script = filename:join([root(), "scripts", "rabbitmq.sh"]),
    P = open_port({spawn_executable, Script},
                  [{args, [Action]}, {env, [{"BEAMLAB_RABBIT_PORT", Port}]},
                   exit_status, stderr_to_stdout, binary]),
    collect(P, [], 180000).

%% @doc Starts the private broker on `Port' for a suite (fails the suite
%% when it does not start) and logs what the script said.
-spec start_rabbitmq(string() | integer()) -> ok.
start_rabbitmq(Port) ->
    {0, Out} = rabbitmq("start", Port),
    ct:log("~ts", [Out]),
    ok.

%% @doc Stops the private broker on `Port'.
-spec stop_rabbitmq(string() | integer()) -> ok.
stop_rabbitmq(Port) ->
    _ = rabbitmq("stop", Port),
    ok.
