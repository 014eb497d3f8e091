-module(reliability_SUITE).
%%% Bad input, planted links, secrets and non-Latin-1 text, all through the
%%% built escript (docs/reliability.md lists what each case promises).
%%% The broker cases (frozen broker, counts that cannot be reached, runs
%%% that measure nothing) use a private RabbitMQ on their own port.
-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").
-include_lib("kernel/include/file.hrl").

-export([all/0, groups/0, init_per_group/2, end_per_group/2]).
-export([default_save_names_never_collide/1, named_save_is_replaced_and_said/1,
         save_path_checked_before_measuring/1, report_output_names/1,
         planted_link_at_temporary_names/1, vm_stderr_in_private_dir/1,
         non_latin1_text/1, crafted_result_files/1, big_result_files_bounded/1,
         csv_formula_cells/1, env_malformed_proc/1, rabbitmq_script_no_crash_dump/1,
         amqp_usage_errors/1, amqp_password_masked/1,
         amqp_nothing_measured_fails/1, amqp_frozen_broker/1, amqp_frozen_broker_interrupt/1,
         amqp_reconnect_after_restart/1]).

%% The broker's port, chosen free when it starts (beamlab_test_util:
%% start_suite_rabbitmq/1): a fresh machine or a parallel run may hold any
%% fixed one.
-define(PORT, beamlab_test_util:suite_broker_port(?MODULE)).
-define(URI, "amqp://guest:guest@127.0.0.1:" ++ ?PORT ++ "/%2F").

all() ->
    [{group, files}, {group, broker}].

groups() ->
    [{files, [], [default_save_names_never_collide, named_save_is_replaced_and_said,
                  save_path_checked_before_measuring, report_output_names,
                  planted_link_at_temporary_names, vm_stderr_in_private_dir, non_latin1_text,
                  crafted_result_files, big_result_files_bounded, csv_formula_cells,
                  env_malformed_proc, rabbitmq_script_no_crash_dump, amqp_usage_errors]},
     {broker, [], [amqp_password_masked, amqp_nothing_measured_fails, amqp_frozen_broker,
                   amqp_frozen_broker_interrupt, amqp_reconnect_after_restart]}].

init_per_group(broker, Config) ->
    ok = beamlab_test_util:start_suite_rabbitmq(?MODULE),
    Config;
init_per_group(_, Config) ->
    Config.

end_per_group(broker, _Config) ->
    beamlab_test_util:stop_suite_rabbitmq(?MODULE);
end_per_group(_, _Config) ->
    ok.

cli(Args) -> beamlab_test_util:cli(Args).
cli(Args, Opts) -> beamlab_test_util:cli(Args, Opts).

tmp() ->
    beamlab_test_util:tmp_dir("rel").

quick() -> ["ok.", "-d", "20", "-s", "2"].

%%--------------------------------------------------------------------
%% Saved files

%% Two runs started in the same second with --save: two files, each named
%% in its own "saved:" line.
default_save_names_never_collide(_Config) ->
    Dir = tmp(),
    Run = beamlab_test_util:escript() ++ " ok. -d 20 -s 2 --save",
    Out = os:cmd("cd " ++ Dir ++ " && (" ++ Run ++ " & " ++ Run ++ " & " ++ Run ++ " & wait) 2>&1"),
    {match, Saved0} = re:run(Out, "saved: (\\S+)", [global, {capture, all_but_first, list}]),
    Saved = lists:usort(lists:append(Saved0)),
    ?assertEqual(3, length(Saved), Out),
    {ok, Files} = file:list_dir(filename:join(Dir, "beamlab-results")),
    ?assertEqual(3, length(Files)).

%% A path the user names is replaced atomically, and the message says so.
named_save_is_replaced_and_said(_Config) ->
    Dir = tmp(),
    #{code := 0, err := E1} = cli(quick() ++ ["--save", "r.json"], #{dir => Dir}),
    ?assertEqual(nomatch, binary:match(E1, <<"replaced">>)),
    #{code := 0, err := E2} = cli(quick() ++ ["--save", "r.json"], #{dir => Dir}),
    ?assertNotEqual(nomatch, binary:match(E2, <<"saved: r.json (replaced the existing file)">>)).

%% --save= and a path below a regular file fail before anything is measured,
%% with a message naming the file in the way.
save_path_checked_before_measuring(_Config) ->
    Dir = tmp(),
    ok = file:write_file(filename:join(Dir, "afile"), <<"x">>),
    #{code := 2, out := <<>>, err := E1} = cli(quick() ++ ["--save="], #{dir => Dir}),
    ?assertMatch({match, _}, re:run(E1, "^beamlab: --save= needs a path")),
    #{code := 2, out := <<>>, err := E2} = cli(quick() ++ ["--save", "afile/r.json"], #{dir => Dir}),
    ?assertMatch({match, _}, re:run(E2, "^beamlab: --save afile/r.json: afile is a file, not a directory\n$")),
    #{code := 2, err := E3} = cli(quick() ++ ["--save=afile/sub/r.json"], #{dir => Dir}),
    ?assertNotEqual(nomatch, binary:match(E3, <<"afile is a file, not a directory">>)),
    %% a path under /proc or /dev is --save's (it was run as code: `runner:
    %% 1:1: syntax error before: '/''), and refused in one line
    [begin
         R = #{code := 2, out := <<>>, err := E4} = cli(Args, #{dir => Dir}),
         beamlab_test_util:assert_one_line_error(R),
         ?assertMatch({match, _}, re:run(E4, ["^beamlab: --save ", Path, ": ", Path, " is under /(proc|dev), "]), E4)
     end || Path <- ["/proc/self/x", "/dev/beamlab-x"],
            Args <- [quick() ++ ["--save", Path], ["--save", Path | quick()]]],
    ?assertEqual([], filelib:wildcard("/dev/beamlab-x*")).

%% report: the default page name never replaces a page; -o FILE is replaced
%% with a message; -o below a file is a usage error.
report_output_names(_Config) ->
    Dir = tmp(),
    #{code := 0} = cli(quick() ++ ["--save", "r.json"], #{dir => Dir}),
    #{code := 0, out := O1} = cli(["report", "r.json"], #{dir => Dir}),
    #{code := 0, out := O2} = cli(["report", "r.json"], #{dir => Dir}),
    ?assertMatch({match, _}, re:run(O1, "^wrote beamlab-report.html ")),
    ?assertMatch({match, _}, re:run(O2, "^wrote beamlab-report-2.html ")),
    #{code := 0, out := O3} = cli(["report", "r.json", "-o", "beamlab-report.html"], #{dir => Dir}),
    ?assertNotEqual(nomatch, binary:match(O3, <<"replaced the existing file">>)),
    #{code := 2, err := E} = cli(["report", "r.json", "-o", "r.json/x.html"], #{dir => Dir}),
    ?assertNotEqual(nomatch, binary:match(E, <<"r.json is a file, not a directory">>)).

%% Links planted at every name a save could use as a temporary file (and
%% at the default names) are never followed: their targets are unchanged.
planted_link_at_temporary_names(_Config) ->
    Dir = tmp(),
    Victim = filename:join(Dir, "victim"),
    ok = file:write_file(Victim, <<"precious">>),
    %% The temporary names hold the OS pid of the saving VM, unknown in
    %% advance: plant a link for every pid the next runs could get.
    Pid = list_to_integer(string:trim(os:cmd("echo $$"))),
    Plant = fun(Name) ->
                    [ok = file:make_symlink(Victim, filename:join(Dir, Name(P)))
                     || P <- lists:seq(Pid, Pid + 400)]
            end,
    Plant(fun(P) -> "r.json." ++ integer_to_list(P) ++ ".1.tmp" end),
    ok = file:make_dir(filename:join(Dir, "beamlab-results")),
    #{code := 0} = cli(quick() ++ ["--save", "r.json"], #{dir => Dir}),
    #{code := 0} = cli(["report", "r.json", "-o", "out.html"], #{dir => Dir}),
    %% A link at the name itself is never written through (nor replaced:
    %% the output-path policy refuses it before measuring).
    ok = file:make_symlink(Victim, filename:join(Dir, "linked.json")),
    #{code := 2} = cli(quick() ++ ["--save", "linked.json"], #{dir => Dir}),
    {ok, #file_info{type = symlink}} = file:read_link_info(filename:join(Dir, "linked.json")),
    ?assertEqual({ok, <<"precious">>}, file:read_file(Victim)).

%% Fresh VMs (matrix, isolated runs) send their stderr to a file in a new
%% 0700 directory: a link planted in TMPDIR at the old name is not followed
%% and the directory is gone after the run.
vm_stderr_in_private_dir(_Config) ->
    Dir = tmp(),
    Tmp = filename:join(Dir, "tmp"),
    ok = file:make_dir(Tmp),
    Victim = filename:join(Dir, "victim"),
    ok = file:write_file(Victim, <<"precious">>),
    Pid = list_to_integer(string:trim(os:cmd("echo $$"))),
    [ok = file:make_symlink(Victim, filename:join(Tmp, "beamlab-vm-" ++ integer_to_list(P) ++ "-"
                                                   ++ integer_to_list(N) ++ ".stderr"))
     || P <- lists:seq(Pid, Pid + 100), N <- lists:seq(1, 20)],
    #{code := 0} = cli(["matrix", "--vm", "+S 1", "--", "ok.", "-d", "20", "-s", "2"],
                       #{dir => Dir, env => [{"TMPDIR", Tmp}]}),
    ?assertEqual({ok, <<"precious">>}, file:read_file(Victim)),
    {ok, Left} = file:list_dir(Tmp),
    ?assertEqual([], [F || F <- Left, lists:prefix("beamlab-vm-", F),
                           filelib:is_dir(filename:join(Tmp, F))]),
    %% The directory itself is private while it exists.
    {ok, D} = beamlab_runtime_file:private_dir("beamlab-test"),
    {ok, #file_info{mode = Mode, type = directory}} = file:read_link_info(D),
    ?assertEqual(8#700, Mode band 8#777),
    ok = file:del_dir(D).

%% Text outside Latin-1 in labels, code and saved files: no crash, and
%% everything written (stdout, JSON, saved file) is valid UTF-8.
non_latin1_text(_Config) ->
    Dir = tmp(),
    Label = <<"ラベル ✓"/utf8>>,
    #{code := 0, out := O1} = cli(["ok.", "-d", "20", "-s", "2", "--label", Label], #{dir => Dir}),
    ?assertNotEqual(nomatch, binary:match(O1, Label)),
    #{code := 0, out := O2} = cli([<<"<<\"✓\"/utf8>>."/utf8>>, "-d", "20", "-s", "2"], #{dir => Dir}),
    ?assert(is_binary(unicode:characters_to_binary(O2, utf8, utf8))),
    #{code := 0, out := Json} = cli([<<"\"café\"."/utf8>>, "-d", "20", "-s", "2", "--format", "json"],
                                    #{dir => Dir}),
    {ok, Doc} = beamlab_json:decode(Json),
    {ok, R} = beamlab_result:from_json(Doc),
    ?assertEqual([<<"\"café\"."/utf8>>], [N || #{name := N} <- maps:get(benchmarks, R)]),
    #{code := 0} = cli(["ok.", "-d", "20", "-s", "2", "--label", <<"café"/utf8>>, "--save", "c.json"],
                       #{dir => Dir}),
    {ok, Saved} = file:read_file(filename:join(Dir, "c.json")),
    ?assert(is_binary(unicode:characters_to_binary(Saved, utf8, utf8))),
    %% The emulator arguments hold the label as it was typed, not mojibake.
    ?assertEqual(nomatch, binary:match(Saved, <<"cafÃ©"/utf8>>)),
    ?assertNotEqual(nomatch, binary:match(Saved, <<"\"café\""/utf8>>)).

%% Crafted result files: one clear line from compare and report, exit 2.
crafted_result_files(_Config) ->
    Dir = tmp(),
    #{code := 0} = cli(quick() ++ ["--save", "good.json"], #{dir => Dir}),
    {ok, Good} = beamlab_json:decode(element(2, file:read_file(filename:join(Dir, "good.json")))),
    [B0 | _] = maps:get(<<"benchmarks">>, Good),
    Cases = [{"sideways.json", Good#{<<"benchmarks">> := [B0#{<<"better">> => <<"sideways">>}]},
              "benchmarks[0].better must be higher or lower"},
             {"notalist.json", Good#{<<"benchmarks">> := <<"notalist">>}, "benchmarks must be a list"},
             {"strings.json", Good#{<<"benchmarks">> := [B0#{<<"samples">> => [<<"1">>, <<"2">>]}]},
              "benchmarks[0].samples must be a list of numbers"},
             {"kind.json", Good#{<<"kind">> => 7}, "kind must be one of"},
             {"null.json", null, "is not a beamlab result file"}],
    lists:foreach(
      fun({Name, Json, Expect}) ->
              ok = file:write_file(filename:join(Dir, Name), beamlab_json:encode(Json)),
              [begin
                   #{code := 2, out := Out, err := Err} = cli(Cmd, #{dir => Dir}),
                   ?assertEqual(<<>>, Out),
                   ?assertMatch([_], binary:split(string:trim(Err), <<"\n">>, [global])),
                   ?assertNotEqual(nomatch, binary:match(Err, list_to_binary(Expect)), {Cmd, Err})
               end || Cmd <- [["compare", "good.json", Name], ["report", Name]]]
      end, Cases),
    ok = file:write_file(filename:join(Dir, "trunc.json"), <<"{\"schema\":">>),
    #{code := 2, err := ET} = cli(["compare", "good.json", "trunc.json"], #{dir => Dir}),
    ?assertNotEqual(nomatch, binary:match(ET, <<"trunc.json is not a beamlab result">>)),
    %% A directory is a history of runs: one crafted file in it is one
    %% line naming that file; a directory without runs says so.
    #{code := 2, out := <<>>, err := ED} = cli(["report", "."], #{dir => Dir}),
    ?assertMatch([_], binary:split(string:trim(ED), <<"\n">>, [global])),
    ?assertMatch({match, _}, re:run(ED, <<"[a-z]+\\.json">>)),
    ok = file:make_dir(filename:join(Dir, "empty")),
    #{code := 2, err := EE} = cli(["report", "empty"], #{dir => Dir}),
    ?assertNotEqual(nomatch, binary:match(EE, <<"no saved runs">>)).

%% Big but well-formed files cost bounded time and memory: refused before
%% parsing above the documented limits, with the limit in the message.
big_result_files_bounded(_Config) ->
    Dir = tmp(),
    #{code := 0} = cli(quick() ++ ["--save", "good.json"], #{dir => Dir}),
    {ok, Good} = file:read_file(filename:join(Dir, "good.json")),
    %% 25M samples of "1,": 50 MB, refused by its value count.
    Many = filename:join(Dir, "many.json"),
    {ok, Fd} = file:open(Many, [write, raw, binary]),
    ok = file:write(Fd, <<"{\"schema\":\"beamlab.result\",\"version\":1,\"kind\":\"bench\","
                          "\"benchmarks\":[{\"name\":\"x\",\"samples\":[">>),
    Chunk = binary:copy(<<"1,">>, 1000000),
    [ok = file:write(Fd, Chunk) || _ <- lists:seq(1, 25)],
    ok = file:write(Fd, <<"1]}]}">>),
    ok = file:close(Fd),
    #{code := 2, err := E1} = cli(["compare", "good.json", "many.json"], #{dir => Dir}),
    ?assertMatch({match, _}, re:run(E1, "many.json holds too many values .* at most 2000000")),
    #{code := 2, err := E1r} = cli(["report", "many.json"], #{dir => Dir}),
    ?assertNotEqual(nomatch, binary:match(E1r, <<"too many values">>)),
    %% Over the size limit: refused from its size alone.
    Huge = filename:join(Dir, "huge.json"),
    {ok, Fd2} = file:open(Huge, [write, raw, binary]),
    ok = file:write(Fd2, Good),
    {ok, _} = file:position(Fd2, 65 * 1024 * 1024),
    ok = file:write(Fd2, <<" ">>),
    ok = file:close(Fd2),
    #{code := 2, err := E2} = cli(["report", "huge.json"], #{dir => Dir}),
    ?assertNotEqual(nomatch, binary:match(E2, <<"huge.json is too large for a beamlab result">>)),
    %% Within the value limit but over the per-benchmark sample limit.
    {ok, GoodJson} = beamlab_json:decode(Good),
    [B0 | _] = maps:get(<<"benchmarks">>, GoodJson),
    Lots = GoodJson#{<<"benchmarks">> := [maps:without([<<"stats">>, <<"sample_info">>],
                                                       B0#{<<"samples">> => lists:duplicate(100001, 1)})]},
    ok = file:write_file(filename:join(Dir, "lots.json"), beamlab_json:encode(Lots)),
    #{code := 2, err := E3} = cli(["compare", "good.json", "lots.json"], #{dir => Dir}),
    ?assertNotEqual(nomatch, binary:match(E3, <<"benchmarks[0].samples has 100001 samples (at most 100000)">>)).

%% CSV cells that a spreadsheet would run as formulas are neutralised.
csv_formula_cells(_Config) ->
    Dir = tmp(),
    #{code := 0, out := Csv} = cli(["ok.", "-d", "20", "-s", "2", "--label", "=HYPERLINK(\"x\")",
                                    "--format", "csv"], #{dir => Dir}),
    {ok, [_Header, Row]} = beamlab_csv_decoder:decode(Csv),
    ?assertEqual(<<"'=HYPERLINK(\"x\")">>, lists:nth(2, Row)),
    [?assertNotMatch(<<C, _/binary>> when C =:= $=; C =:= $+; C =:= $@, F) || F <- Row].

%% env --root over malformed /proc and /sys files: exit 0, valid JSON,
%% the trouble in the notes.
env_malformed_proc(_Config) ->
    Root = tmp(),
    W = fun(Rel, Bytes) ->
                P = filename:join(Root, Rel),
                ok = filelib:ensure_dir(P),
                ok = file:write_file(P, Bytes)
        end,
    W("proc/meminfo", <<"MemTotal: lots kB\nMemFree\n">>),
    W("proc/loadavg", <<"x">>),
    W("proc/cpuinfo", <<"model name: \xff\xfe\n">>),
    W("proc/version", <<"\xff\n">>),
    W("proc/self/cgroup", <<"0::/\n">>),
    W("sys/fs/cgroup/cpu.max", <<"lots of\n">>),
    W("sys/devices/system/cpu/online", <<"0-x\n">>),
    W("sys/devices/system/node/node0/distance", <<"a b\n">>),
    W("sys/devices/system/node/node0/meminfo", <<"Node 0 MemTotal: ? kB\n">>),
    #{code := 0, out := Json, err := Err} = cli(["env", "--root", Root, "--format", "json"]),
    ?assertEqual(<<>>, Err),
    {ok, Doc} = beamlab_json:decode(Json),
    ?assert(is_binary(unicode:characters_to_binary(Json, utf8, utf8))),
    #{<<"notes">> := Notes} = maps:get(<<"env">>, Doc, Doc),
    ?assert(length(Notes) > 0),
    #{code := 0} = cli(["env", "--root", Root]).

%% scripts/rabbitmq.sh status/stop with no state directory: a clean answer,
%% no erl_crash.dump left in the current directory.
rabbitmq_script_no_crash_dump(_Config) ->
    Dir = tmp(),
    Script = filename:join([beamlab_test_util:root(), "scripts", "rabbitmq.sh"]),
    %% A port no broker uses now (a fixed one could be another run's).
    Port = integer_to_list(beamlab_test_util:free_broker_port()),
    [begin
         Out = os:cmd("cd " ++ Dir ++ " && BEAMLAB_RABBIT_PORT=" ++ Port ++ " BEAMLAB_RABBIT_DIR=" ++ Dir
                      ++ "/nostate " ++ Script ++ " " ++ Cmd ++ " 2>&1"),
         ?assertNotEqual(nomatch, string:find(Out, "not running"), Out)
     end || Cmd <- ["status", "stop"]],
    ?assertNot(filelib:is_regular(filename:join(Dir, "erl_crash.dump"))).

%% amqp arguments that could never run are usage errors, before connecting.
amqp_usage_errors(_Config) ->
    Unreachable = "amqp://guest:guest@127.0.0.1:1/%2F",
    #{code := 2, err := E1} = cli(["amqp", "-h", Unreachable, "-x", "0", "-y", "0"]),
    ?assertMatch({match, _}, re:run(E1, "^beamlab: nothing to run: -x 0 and -y 0")),
    #{code := 2, err := E2} = cli(["amqp", "-h", Unreachable, "-C", "1000", "-D", "1000",
                                   "-x", "1", "-y", "2"]),
    ?assertNotEqual(nomatch, binary:match(E2, <<"-D 1000 can never be reached">>)),
    #{code := 2, err := E3} = cli(["amqp", "-h", Unreachable, "-x", "0", "-D", "10"]),
    ?assertNotEqual(nomatch, binary:match(E3, <<"can never be reached">>)),
    %% The malformed-URI message masks the password in full.
    [begin
         #{code := 2, err := E} = cli(["amqp", "-h", U, "-z", "1"]),
         ?assertEqual(nomatch, binary:match(E, <<"s3cr">>), E),
         ?assertNotEqual(nomatch, binary:match(E, <<"****">>), E)
     end || U <- ["amqp://guest:s3cret@127.0.0.1:99999/", "amqp://guest:s3cr%ZZet@127.0.0.1/",
                  "amqp://guest:s3cret@127.0.0.1/a/b", "amqp://guest:s3cr et@127.0.0.1:x/"]].

%%--------------------------------------------------------------------
%% Broker

%% The password is masked in everything stored or printed: the saved
%% result (command, emulator args, params), every format, the report.
amqp_password_masked(_Config) ->
    Dir = tmp(),
    Uri = "amqp://guest:guest@127.0.0.1:" ++ ?PORT ++ "/%2F",
    #{code := 0, out := Text} = cli(["amqp", "-h", Uri, "-z", "1", "--save", "a.json"], #{dir => Dir}),
    #{code := 0, out := Json} = cli(["amqp", "-h", Uri, "-z", "1", "--format", "json"], #{dir => Dir}),
    #{code := 0} = cli(["report", "a.json", "-o", "a.html"], #{dir => Dir}),
    {ok, Saved} = file:read_file(filename:join(Dir, "a.json")),
    {ok, Html} = file:read_file(filename:join(Dir, "a.html")),
    [?assertEqual(nomatch, binary:match(X, <<"guest:guest">>)) || X <- [Text, Json, Saved, Html]],
    ?assertNotEqual(nomatch, binary:match(Saved, <<"amqp://guest:****@127.0.0.1">>)).

%% A run that ends with nothing received exits 1 and says why.
%% (Three 50 MB messages: the run usually ends before a consumer has one;
%% on a quick machine one may arrive, and then the run did measure.)
amqp_nothing_measured_fails(_Config) ->
    case cli(["amqp", "-h", ?URI, "-s", "52428800", "-C", "3"]) of
        #{code := 1, err := Err} ->
            ?assertNotEqual(nomatch, binary:match(Err, <<"no messages measured: 3 sent, none received">>));
        #{code := 0, out := Out} ->
            {match, [Received]} = re:run(Out, <<"accounting: sent 3 = received ([0-9]+)">>,
                                         [{capture, all_but_first, binary}]),
            ?assert(binary_to_integer(Received) > 0)
    end.

%% A frozen broker (SIGSTOP) does not hold the run past its deadline; the
%% run reports what it measured. The broker is thawed whatever happens.
amqp_frozen_broker(_Config) ->
    PidFile = filename:join([beamlab_test_util:root(), "_build", "rabbitmq", ?PORT, "rabbit.pid"]),
    {ok, PidText} = file:read_file(PidFile),
    BrokerPid = string:trim(binary_to_list(PidText)),
    H = #{port := Port} = beamlab_test_util:cli_start(["amqp", "-h", ?URI, "-z", "5", "-r", "100"], #{}),
    try
        Seen = beamlab_test_util:await_output(Port, <<"time 1\\.">>, <<>>, 30000),
        _ = os:cmd("kill -STOP " ++ BrokerPid),
        %% The run's own 5 s deadline plus its bounded stop: cli_finish/2
        %% fails after 120 s, far above; the run must end on its own.
        #{code := Code, out := Out} = beamlab_test_util:cli_finish(H, Seen),
        ?assert(lists:member(Code, [0, 1]), Code),
        ?assertNotEqual(nomatch, binary:match(Out, <<"sending rate avg">>))
    after
        os:cmd("kill -CONT " ++ BrokerPid)
    end.

broker_pid() ->
    PidFile = filename:join([beamlab_test_util:root(), "_build", "rabbitmq", ?PORT, "rabbit.pid"]),
    {ok, PidText} = file:read_file(PidFile),
    string:trim(binary_to_list(PidText)).

%% Starts `beamlab Args' in its own process group, as a terminal runs it
%% (stdout and stderr to files).
start_in_group(Args) ->
    H = beamlab_test_util:cli_start_group(Args, #{}),
    H#{out => maps:get(out_file, H), err => maps:get(err_file, H)}.

%% The exit status of a start_in_group/1 run. `Ms' separates "stops" from
%% "hangs" (the run's own bound is far below): past it the whole group is
%% killed, so that a hung run does not outlive the case, and the case
%% fails.
await_exit(#{port := Port} = H, Ms) ->
    try beamlab_test_util:group_exit(Port, <<>>, Ms)
    catch error:{cli_group_timeout, _} ->
            _ = os:cmd("kill -KILL -" ++ maps:get(pgid, H)),
            error({no_exit_within_ms, Ms})
    end.

%% A frozen broker (SIGSTOP) and the first Ctrl-C (SIGINT to the process
%% group, as a terminal sends it): the run stops at once, bounded (every
%% close and call on the way out has a deadline; connections that cannot
%% close are aborted), prints its summary and exits 130. It used to wait
%% about 60 s; then it printed its summary within seconds but its VM did
%% not exit while the broker stayed frozen (the agent given up at the
%% shutdown timeout was killed with its connections open, and the VM's
%% halt waited to flush their unsent data). The broker stays frozen until
%% the run has exited; the bound below only separates "stops" from
%% "hangs".
amqp_frozen_broker_interrupt(_Config) ->
    BrokerPid = broker_pid(),
    H = #{out := Out, err := Err, pgid := Pgid} = start_in_group(["amqp", "-h", ?URI, "-z", "120"]),
    try
        _ = beamlab_test_util:wait_for_file(Out, "sent: [1-9]", 60000),
        "" = os:cmd("kill -STOP " ++ BrokerPid),
        %% One more line: the run goes on while the broker is frozen.
        _ = beamlab_test_util:wait_for_file(Out, "sent: [1-9][^\n]*\n[^\n]*\n", 30000),
        "" = os:cmd("kill -INT -" ++ Pgid),
        Code = await_exit(H, 40000),
        {ok, Text} = file:read_file(Out),
        {ok, ErrText} = file:read_file(Err),
        ct:log("~ts~n~ts", [Text, ErrText]),
        ?assertEqual(130, Code),
        ?assertNotEqual(nomatch, binary:match(Text, <<"sending rate avg">>)),
        ?assertNotEqual(nomatch, binary:match(Text, <<"accounting: sent">>)),
        ?assertNotEqual(nomatch, binary:match(Text, <<"interrupted">>)),
        ?assertEqual(nomatch, binary:match(ErrText, <<"interrupted twice">>))
    after
        os:cmd("kill -CONT " ++ BrokerPid)
    end.

%% --reconnect through a broker restart with the default queue (not
%% durable: the restart loses it and its binding). The run declares the
%% topology again, says so on its own line, messages flow again (a line
%% after that one shows some received), and the accounting names the lost
%% queue whenever anything is unaccounted.
amqp_reconnect_after_restart(_Config) ->
    H = #{out := Out, err := Err, pgid := Pgid} =
        start_in_group(["amqp", "-h", ?URI, "-r", "100", "--reconnect", "--format", "text"]),
    try
        _ = beamlab_test_util:wait_for_file(Out, "received: [1-9]", 60000),
        {0, RestartOut} = beamlab_test_util:rabbitmq("restart", ?PORT),
        ct:log("~ts", [RestartOut]),
        _ = beamlab_test_util:wait_for_file(
              Out, "the broker lost queue beamlab-test-[^\n]* declared again[^\n]*\n"
                   "(?:[^\n]*\n)*[^\n]*received: [1-9]", 120000),
        "" = os:cmd("kill -INT -" ++ Pgid),
        Code = await_exit(H, 60000),
        {ok, Text} = file:read_file(Out),
        {ok, ErrText} = file:read_file(Err),
        ct:log("~ts~n~ts", [Text, ErrText]),
        ?assertEqual(130, Code),
        ?assertMatch({match, _}, re:run(Text, "reconnects: [1-9]")),
        {match, [Acc]} = re:run(Text, "accounting: [^\n]*", [{capture, first, binary}]),
        case re:run(Acc, "unaccounted [1-9]") of
            {match, _} ->
                ?assertMatch({match, _}, re:run(Acc, "the broker lost queue beamlab-test-\\S+ at [0-9.]+ s "
                                                     "\\(broker restart\\)"));
            nomatch ->
                ?assertMatch({match, _}, re:run(Acc, "\\(balanced\\)"))
        end
    after
        _ = os:cmd("kill -TERM -" ++ Pgid)
    end.
