%%% @doc Helpers shared by the Common Test suites: where the repository and
%%% the built escript are, and running `./beamlab' as a user would, with
%%% stdout, stderr and the exit code kept apart.
-module(beamlab_test_util).

-export([free_port/0, free_broker_port/0, chromium/0, dump_dom/3, dump_dom/4, dom_body/1, dom_attr/2, root/0, escript/0, cli/1, cli/2, tmp_dir/1, assert_one_line_error/1, rabbitmq/2,
         rabbitmq/3, rabbitmqctl/2, start_rabbitmq/1, start_rabbitmq/2, stop_rabbitmq/1,
         start_suite_rabbitmq/1, start_suite_rabbitmq/2, suite_broker_port/1, stop_suite_rabbitmq/1]).
-export([wait_until/2, wait_until/3, wait_for/3, wait_for_file/3, await_output/4,
         cli_start/2, cli_finish/2, cli_start_group/2, signal_group/2, signal_pid/2,
         cli_group_finish/1, group_exit/3, launcher_children/1]).
-export([otp27_prefix/0, otp27/0, otp27_missing/1, otp_env/1]).
-export([vheap_charge/1, peer_eval/2]).
-export([json_schema_valid/2]).
-export([port_output/2, port_output/3]).

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

%% @doc Where scripts/install-otp.sh installs OTP 27 (`BEAMLAB_OTP27_PREFIX',
%% default /opt/beamlab-otp/27).
-spec otp27_prefix() -> file:filename().
otp27_prefix() ->
    case os:getenv("BEAMLAB_OTP27_PREFIX") of
        false -> "/opt/beamlab-otp/27";
        "" -> "/opt/beamlab-otp/27";
        P -> P
    end.

%% @doc The `bin' directory of the OTP 27 built by scripts/install-otp.sh,
%% when its `erl' runs and reports release 27 or later; else why not.
-spec otp27() -> {ok, file:filename()} | {error, string()}.
otp27() ->
    Bin = filename:join(otp27_prefix(), "bin"),
    Erl = filename:join(Bin, "erl"),
    case filelib:is_regular(Erl) of
        false ->
            {error, "no OTP 27 in " ++ otp27_prefix() ++ " (build it with scripts/install-otp.sh, "
             "or set BEAMLAB_OTP27_PREFIX)"};
        true ->
            Out = os:cmd("'" ++ Erl ++ "' -noshell -noinput -eval "
                         "'io:put_chars(erlang:system_info(otp_release)), halt().' 2>&1"),
            case string:to_integer(Out) of
                {N, ""} when N >= 27 -> {ok, Bin};
                _ -> {error, Erl ++ " does not run as OTP 27 or later: " ++ string:slice(Out, 0, 200)}
            end
    end.

%% @doc What a suite that needs OTP 27 does without it: fails where it is
%% required (BEAMLAB_REQUIRE_OTP27=1, set by .ci/run), else skips saying
%% why.
-spec otp27_missing(string()) -> {skip, string()}.
otp27_missing(Msg) ->
    case os:getenv("BEAMLAB_REQUIRE_OTP27") of
        "1" -> ct:fail(Msg);
        _ -> {skip, Msg}
    end.

%% @doc The `env' option of {@link cli/2} that runs ./beamlab with the
%% OTP in `Bin' (its `escript' first on PATH: the launcher runs `escript').
-spec otp_env(file:filename()) -> [{string(), string()}].
otp_env(Bin) ->
    [{"PATH", Bin ++ ":" ++ os:getenv("PATH", "/usr/bin:/bin")}].

%% @doc Runs `./beamlab Args' in a fresh temporary directory.
-spec cli([string()]) -> #{code := integer(), out := binary(), err := binary(), dir := file:filename()}.
cli(Args) ->
    cli(Args, #{}).

%% @doc Options: `dir' (working directory), `timeout' (ms, default 120000),
%% `env' ([{Name, Value}]).
-spec cli([string()], map()) -> #{code := integer(), out := binary(), err := binary(), dir := file:filename()}.
cli(Args, Opts) ->
    finish(cli_start(Args, Opts), [], maps:get(timeout, Opts, 120000)).

%% @doc Reads a port's output to its exit: `{ExitStatus, Output}' (the
%% port opened with `exit_status'). After `Timeout' ms the program is
%% killed and the test fails with what it printed.
-spec port_output(port(), timeout()) -> {integer(), binary()}.
port_output(Port, Timeout) ->
    port_output(Port, [], Timeout).

%% @doc As {@link port_output/2}, `Seen' being the output already read.
-spec port_output(port(), iodata(), timeout()) -> {integer(), binary()}.
port_output(Port, Seen, Timeout) ->
    collect(Port, [Seen], Timeout).

collect(Port, Acc, Timeout) ->
    receive
        {Port, {data, D}} -> collect(Port, [Acc, D], Timeout);
        {Port, {exit_status, S}} -> {S, iolist_to_binary(Acc)}
    after Timeout ->
        case erlang:port_info(Port, os_pid) of
            {os_pid, Pid} -> os:cmd("kill -KILL " ++ integer_to_list(Pid));
            undefined -> ok
        end,
        catch port_close(Port),
        error({port_timeout, iolist_to_binary(Acc)})
    end.

%% @doc Starts `./beamlab Args' in the background, as `cli/2' runs it
%% (options `dir' and `env'), and returns at once: stdout comes to the
%% calling process through the port, stderr goes to a file that
%% `wait_for_file/3' can watch. Finish with `cli_finish/2'.
-spec cli_start([string()], map()) ->
          #{port := port(), os_pid := integer() | undefined, dir := file:filename(), err_file := file:filename()}.
cli_start(Args, Opts) ->
    Dir = maps:get(dir, Opts, tmp_dir("cli")),
    ErrFile = filename:join(Dir, ".stderr"),
    Port = open_port({spawn_executable, "/bin/sh"},
                     [{args, ["-c", "exec \"$0\" \"$@\" 2>\"$BEAMLAB_TEST_STDERR\" </dev/null",
                              escript() | Args]},
                      {cd, Dir}, {env, [{"BEAMLAB_TEST_STDERR", ErrFile} | maps:get(env, Opts, [])]},
                      exit_status, binary, use_stdio]),
    %% (undefined when the program has already exited)
    OsPid = case erlang:port_info(Port, os_pid) of
                {os_pid, P} -> P;
                undefined -> undefined
            end,
    #{port => Port, os_pid => OsPid, dir => Dir, err_file => ErrFile}.

%% @doc Waits for a `cli_start/2' run to exit; `Seen' is the stdout already
%% read from the port (by `await_output/4'). Returns what `cli/2' returns.
-spec cli_finish(#{port := port(), dir := file:filename(), err_file := file:filename(), atom() => term()},
                 iodata()) -> #{code := integer(), out := binary(), err := binary(), dir := file:filename()}.
cli_finish(H, Seen) ->
    finish(H, Seen, 120000).

finish(#{port := Port, dir := Dir, err_file := ErrFile}, Seen, Timeout) ->
    {Code, Out} = collect(Port, [Seen], Timeout),
    {ok, Err} = file:read_file(ErrFile),
    ok = file:delete(ErrFile),
    #{code => Code, out => Out, err => Err, dir => Dir}.

%% @doc Starts `./beamlab Args' as a shell or CI runner would: in a
%% process group (and session) of its own, led by the escript's launcher,
%% with stdout and stderr in files (`out_file', `err_file': watch them with
%% `wait_for_file/3'). SIGINT is restored to its default first (rebar3
%% starts the test VM with +B, which leaves it ignored in children). Then
%% `signal_group/2' signals the whole group, as `timeout', `kill -TERM
%% -PGID' and a terminal's Ctrl-C do; `cli_group_finish/1' waits for the
%% exit.
-spec cli_start_group([string()], map()) ->
          #{port := port(), pgid := string(), dir := file:filename(),
            out_file := file:filename(), err_file := file:filename()}.
cli_start_group(Args, Opts) ->
    Dir = maps:get(dir, Opts, tmp_dir("grp")),
    Out = filename:join(Dir, ".stdout"),
    Err = filename:join(Dir, ".stderr"),
    PidFile = filename:join(Dir, ".pgid"),
    Port = open_port({spawn_executable, os:find_executable("env")},
                     [{args, ["--default-signal=INT", "setsid", "-w", "sh", "-c",
                              "echo $$ > \"$1\"; shift; exec \"$@\" > \"$OUT\" 2> \"$ERR\" </dev/null",
                              "sh", PidFile | maps:get(prefix, Opts, []) ++ [escript() | Args]]},
                      {env, [{"OUT", Out}, {"ERR", Err} | maps:get(env, Opts, [])]},
                      %% setsid's own complaint (a child killed by a signal)
                      %% comes to us, not to the test VM's stderr.
                      {cd, Dir}, exit_status, binary, stderr_to_stdout]),
    Pgid = string:trim(binary_to_list(wait_for_file(PidFile, "^[0-9]+\n", 10000))),
    #{port => Port, pgid => Pgid, dir => Dir, out_file => Out, err_file => Err}.

%% @doc Sends `Sig' ("TERM", "INT") to every process of the group.
-spec signal_group(#{pgid := string(), atom() => term()}, string()) -> ok.
signal_group(#{pgid := Pgid}, Sig) ->
    "" = os:cmd("kill -" ++ Sig ++ " -" ++ Pgid),
    ok.

%% @doc Sends `Sig' to one process.
-spec signal_pid(string() | integer(), string()) -> ok.
signal_pid(Pid, Sig) when is_integer(Pid) ->
    signal_pid(integer_to_list(Pid), Sig);
signal_pid(Pid, Sig) ->
    "" = os:cmd("kill -" ++ Sig ++ " " ++ Pid),
    ok.

%% @doc The launcher's children (the VM), as OS pids.
-spec launcher_children(#{pgid := string(), atom() => term()}) -> [string()].
launcher_children(#{pgid := Pgid}) ->
    string:lexemes(os:cmd("pgrep -P " ++ Pgid), "\n").

%% @doc Waits for a `cli_start_group/2' run to exit; returns what `cli/2'
%% returns. A launcher killed by a signal (`setsid -w' says "child N did
%% not exit normally" and exits with the wait status) has code
%% `{signal, N}', never a number a case could take for an exit status.
-spec cli_group_finish(#{port := port(), dir := file:filename(), out_file := file:filename(),
                         err_file := file:filename(), atom() => term()}) ->
          #{code := integer(), out := binary(), err := binary(), dir := file:filename()}.
cli_group_finish(#{port := Port, dir := Dir, out_file := OutFile, err_file := ErrFile}) ->
    Code = group_exit(Port, <<>>, 120000),
    {ok, Out} = file:read_file(OutFile),
    {ok, Err} = file:read_file(ErrFile),
    #{code => Code, out => Out, err => Err, dir => Dir}.

%% @doc The exit of a `cli_start_group/2' run as `cli_group_finish/1'
%% gives it: a status, or `{signal, N}'.
-spec group_exit(port(), binary(), pos_integer()) -> integer() | {signal, pos_integer()}.
group_exit(Port, Said, Ms) ->
    receive
        {Port, {data, D}} ->
            group_exit(Port, <<Said/binary, D/binary>>, Ms);
        {Port, {exit_status, S}} ->
            case binary:match(Said, <<"did not exit normally">>) of
                nomatch -> S;
                _ -> {signal, S band 16#7f}
            end
    after Ms -> error({cli_group_timeout, Said})
    end.

%% @doc Words charged to a process's virtual binary heaps (young and old):
%% what the magic references and binaries on its heap count for.
-spec vheap_charge(pid()) -> non_neg_integer().
vheap_charge(Pid) ->
    {garbage_collection_info, I} = process_info(Pid, garbage_collection_info),
    proplists:get_value(bin_vheap_size, I) + proplists:get_value(bin_old_vheap_size, I).

%% @doc The value of `Text' (expressions of OTP's modules, ended by a
%% full stop) evaluated on `Peer' by `erl_eval' (within 30 s): code run
%% on a node that has none of the suite's modules.
-spec peer_eval(pid(), string()) -> term().
peer_eval(Peer, Text) ->
    {ok, Exprs} = beamlab_runtime_expr:parse(Text),
    {value, V, _} = peer:call(Peer, erl_eval, exprs, [Exprs, []], 30000),
    V.

%% @doc Polls `Cond' (quickly, backing off to every 50 ms) until it returns
%% true; fails the test after `TimeoutMs' with what was awaited.
-spec wait_until(fun(() -> boolean()), pos_integer()) -> ok.
wait_until(Cond, TimeoutMs) ->
    wait_until(Cond, TimeoutMs, {condition, Cond}).

%% @doc `wait_until/2' naming what is awaited in the failure (`What').
-spec wait_until(fun(() -> boolean()), pos_integer(), term()) -> ok.
wait_until(Cond, TimeoutMs, What) ->
    _ = wait_for(fun() -> Cond() andalso {ok, ok} end, TimeoutMs, What),
    ok.

%% @doc Polls `Get' until it returns `{ok, Value}' (anything else: not
%% yet) and returns `Value'; fails the test after `TimeoutMs'.
-spec wait_for(fun(() -> {ok, V} | term()), pos_integer(), term()) -> V.
wait_for(Get, TimeoutMs, What) ->
    Deadline = erlang:monotonic_time(millisecond) + TimeoutMs,
    poll(Get, Deadline, 1, What, TimeoutMs).

poll(Get, Deadline, Pause, What, TimeoutMs) ->
    case Get() of
        {ok, V} ->
            V;
        Last ->
            case erlang:monotonic_time(millisecond) >= Deadline of
                true ->
                    error({timeout, #{waiting_for => What, after_ms => TimeoutMs, last => Last}});
                false ->
                    receive after Pause -> ok end,
                    poll(Get, Deadline, min(2 * Pause, 50), What, TimeoutMs)
            end
    end.

%% @doc Waits until `File' exists and its content matches `Pattern' (a
%% regular expression); returns the content.
-spec wait_for_file(file:filename(), iodata(), pos_integer()) -> binary().
wait_for_file(File, Pattern, TimeoutMs) ->
    wait_for(fun() ->
                     case file:read_file(File) of
                         {ok, B} ->
                             case re:run(B, Pattern) of
                                 {match, _} -> {ok, B};
                                 nomatch -> B
                             end;
                         E -> E
                     end
             end, TimeoutMs, {File, matching, iolist_to_binary(Pattern)}).

%% @doc Reads a port's output until what was read (after `Acc') matches
%% `Pattern'; returns everything read. Fails the test on timeout or when
%% the program exits first (with its exit status and output).
-spec await_output(port(), iodata(), binary(), pos_integer()) -> binary().
await_output(Port, Pattern, Acc, TimeoutMs) ->
    Deadline = erlang:monotonic_time(millisecond) + TimeoutMs,
    await_output1(Port, Pattern, Acc, Deadline, TimeoutMs).

await_output1(Port, Pattern, Acc, Deadline, TimeoutMs) ->
    case re:run(Acc, Pattern) of
        {match, _} ->
            Acc;
        nomatch ->
            Left = max(0, Deadline - erlang:monotonic_time(millisecond)),
            receive
                {Port, {data, D}} ->
                    await_output1(Port, Pattern, <<Acc/binary, D/binary>>, Deadline, TimeoutMs);
                {Port, {exit_status, S}} ->
                    error({exited_before_output, #{pattern => iolist_to_binary(Pattern),
                                                   exit_status => S, output => Acc}})
            after Left ->
                error({timeout, #{waiting_for => iolist_to_binary(Pattern),
                                  after_ms => TimeoutMs, output => Acc}})
            end
    end.

%% @doc A new empty directory under `$BEAMLAB_TEST_TMP' (the test run's
%% own directory, which scripts/test.sh removes when every check passed),
%% else under the system temp dir.
-spec tmp_dir(string()) -> file:filename().
tmp_dir(Prefix) ->
    Base = case {os:getenv("BEAMLAB_TEST_TMP"), os:getenv("TMPDIR")} of
               {false, false} -> "/tmp";
               {false, T} -> T;
               {R, _} -> R
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
rabbitmq(Action, Port) ->
    rabbitmq([Action], Port, []).

%% @doc `scripts/rabbitmq.sh Args' for the broker on `Port' with more
%% environment (`BEAMLAB_RABBIT_TLS_PORT', ...).
-spec rabbitmq([string()], string() | integer(), [{string(), string()}]) -> {integer(), binary()}.
rabbitmq(Args, Port, Env) when is_integer(Port) ->
    rabbitmq(Args, integer_to_list(Port), Env);
rabbitmq(Args, Port, Env) ->
    Script = filename:join([root(), "scripts", "rabbitmq.sh"]),
    P = open_port({spawn_executable, Script},
                  [{args, Args}, {env, [{"BEAMLAB_RABBIT_PORT", Port} | Env]},
                   exit_status, stderr_to_stdout, binary]),
    collect(P, [], 180000).

%% @doc `rabbitmqctl Args' against the private broker on `Port'.
-spec rabbitmqctl(string() | integer(), [string()]) -> {integer(), binary()}.
rabbitmqctl(Port, Args) ->
    rabbitmq(["ctl" | Args], Port, []).

%% @doc Starts the private broker on `Port' for a suite (fails the suite
%% when it does not start) and logs what the script said.
-spec start_rabbitmq(string() | integer()) -> ok.
start_rabbitmq(Port) ->
    start_rabbitmq(Port, []).

%% @doc The same with more environment (a TLS listener, ...).
-spec start_rabbitmq(string() | integer(), [{string(), string()}]) -> ok.
start_rabbitmq(Port, Env) ->
    case rabbitmq(["start"], Port, Env) of
        {0, Out} -> ct:log("~ts", [Out]);
        {Status, Out} -> ct:fail({rabbitmq_start, Status, Out})
    end,
    ok.

%% @doc Stops the private broker on `Port'.
-spec stop_rabbitmq(string() | integer()) -> ok.
stop_rabbitmq(Port) ->
    _ = rabbitmq("stop", Port),
    ok.

%% @doc Starts the private broker of suite `Suite' on a port free a moment
%% ago ({@link free_broker_port/0}): a fresh machine or a parallel run may
%% hold any fixed port. The suite's cases find it with
%% {@link suite_broker_port/1}.
-spec start_suite_rabbitmq(module()) -> ok.
start_suite_rabbitmq(Suite) ->
    start_suite_rabbitmq(Suite, []).

%% @doc {@link start_suite_rabbitmq/1} with more environment for
%% scripts/rabbitmq.sh (`BEAMLAB_RABBIT_TLS_PORT', ...).
-spec start_suite_rabbitmq(module(), [{string(), string()}]) -> ok.
start_suite_rabbitmq(Suite, Env) ->
    Port = integer_to_list(free_broker_port()),
    persistent_term:put({?MODULE, broker_port, Suite}, Port),
    start_rabbitmq(Port, Env).

%% @doc The AMQP port (text) of the broker {@link start_suite_rabbitmq/1}
%% started for `Suite'.
-spec suite_broker_port(module()) -> string().
suite_broker_port(Suite) ->
    persistent_term:get({?MODULE, broker_port, Suite}).

%% @doc Stops `Suite''s broker and removes its state directory under
%% `_build/rabbitmq' (its port will not come again).
-spec stop_suite_rabbitmq(module()) -> ok.
stop_suite_rabbitmq(Suite) ->
    Port = suite_broker_port(Suite),
    ok = stop_rabbitmq(Port),
    Dir = filename:join([root(), "_build", "rabbitmq"]),
    _ = [file:del_dir_r(filename:join(Dir, D)) || D <- [Port | filelib:wildcard(Port ++ "-*", Dir)]],
    _ = persistent_term:erase({?MODULE, broker_port, Suite}),
    ok.

%% @doc The headless browser the report tests drive, or `false'.
chromium() ->
    Found = [P || P <- [os:find_executable("chromium"), "/usr/bin/chromium",
                        os:find_executable("chromium-browser")],
                  P =/= false, filelib:is_regular(P)],
    case Found of
        [P | _] -> P;
        [] -> false
    end.

%% @doc The `<body ...>' start tag of a page's DOM dump.
dom_body(Dom) ->
    {match, [B]} = re:run(Dom, <<"<body[^>]*>">>, [{capture, first, binary}]),
    B.

%% @doc An attribute's value in a start tag (the test fails without it).
dom_attr(Tag, Name) ->
    case re:run(Tag, <<Name/binary, "=\"([^\"]*)\"">>, [{capture, all_but_first, binary}]) of
        {match, [V]} -> V;
        nomatch -> error({no_attribute, Name, Tag})
    end.

%% @doc Validates the JSON file `File' against the schema
%% `test/fixtures/schemas/<Schema>' with python3-jsonschema (installed by
%% scripts/install-deps.sh --test); the test fails on an invalid document,
%% and when the validator is missing.
-spec json_schema_valid(string(), file:filename()) -> ok.
json_schema_valid(Schema, File) ->
    Dir = filename:join([root(), "test", "fixtures", "schemas"]),
    Python = case os:find_executable("python3") of
                 false -> error(python3_missing);
                 P -> P
             end,
    Port = open_port({spawn_executable, Python},
                     [{args, [filename:join(Dir, "validate.py"), filename:join(Dir, Schema), File]},
                      exit_status, stderr_to_stdout, binary]),
    case collect(Port, [], 60000) of
        {0, <<"valid\n">>} -> ok;
        {_, Out} -> error({json_schema, Schema, File, Out})
    end.

%% @doc A TCP port on 127.0.0.1 that was free a moment ago.
-spec free_port() -> inet:port_number().
free_port() ->
    {ok, S} = gen_tcp:listen(0, [{ip, {127, 0, 0, 1}}]),
    {ok, Port} = inet:port(S),
    ok = gen_tcp:close(S),
    Port.

%% @doc An AMQP port for a private broker of scripts/rabbitmq.sh that was
%% free a moment ago, with the distribution port the script derives from
%% it (port + 20000) free too: drawn at random from 10000-34999 (below the
%% usual ephemeral ports; the distribution port stays below 65536), so two
%% suites on one machine, or two runs of one suite, do not pick the same.
-spec free_broker_port() -> inet:port_number().
free_broker_port() ->
    free_broker_port(100).

free_broker_port(0) ->
    error(no_free_broker_port);
free_broker_port(Tries) ->
    Port = 9999 + rand:uniform(25000),
    Ls = [L || P <- [Port, Port + 20000], {ok, L} <- [gen_tcp:listen(P, [{ip, {127, 0, 0, 1}}])]],
    lists:foreach(fun gen_tcp:close/1, Ls),
    case length(Ls) of
        2 -> Port;
        _ -> free_broker_port(Tries - 1)
    end.

%% The DOM of a page after its scripts ran, from headless Chromium (a
%% profile of its own under Dir).
-spec dump_dom(string(), file:filename(), string()) -> binary().
dump_dom(Chromium, Dir, Path) ->
    dump_dom(Chromium, Dir, Path, []).

%% @doc {@link dump_dom/3} with more Chromium flags (`--window-size=W,H':
%% the page laid out at that width).
-spec dump_dom(string(), file:filename(), string(), [string()]) -> binary().
dump_dom(Chromium, Dir, Path, Extra) ->
    UserDir = filename:join(Dir, "chromium-" ++ integer_to_list(erlang:unique_integer([positive]))),
    ok = filelib:ensure_dir(filename:join(UserDir, "x")),
    Args = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--user-data-dir=" ++ UserDir | Extra ++ ["--dump-dom", "file://" ++ Path]],
    Port = open_port({spawn_executable, "/bin/sh"},
                     [{args, ["-c", "exec \"$0\" \"$@\" 2>/dev/null", Chromium | Args]}, binary, exit_status]),
    {0, Dom} = port_output(Port, 120000),
    Dom.
