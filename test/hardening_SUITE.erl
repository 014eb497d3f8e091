-module(hardening_SUITE).
%%% The policies of issue 27, through the built escript (docs/reliability.md
%%% lists them): output paths, secrets, signals, input, benchmarked code
%%% that misbehaves, bounded ends, messages. Each case tries variants of a
%%% class, not one example.
-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").
-include_lib("kernel/include/file.hrl").

-export([all/0, groups/0, init_per_suite/1, end_per_suite/1]).
-export([output_devices_in_place/1, output_links_and_owners/1, output_stdout/1]).
-export([stop_signals_are_interrupts/1, int_to_vm_alone/1, launcher_killed/1, launcher_line_fits/1]).
-export([leftovers_reaped_whatever_their_leader/1, code_output_to_stderr/1, code_moves_cwd/1,
         code_kills_itself/1, heap_report_before_exit/1, workload_shapes/1]).
-export([crafted_inputs/1, crafted_files_through_escript/1, non_utf8_bytes/1, numbers_bounded/1]).
-export([secrets_masked_everywhere/1, empty_cookie_refused/1, node_messages/1, frozen_vm_bounded/1]).

all() ->
    [{group, paths}, {group, secrets}, {group, signals}, {group, code}, {group, input},
     {group, messages}].

groups() ->
    [{paths, [], [output_devices_in_place, output_links_and_owners, output_stdout]},
     {signals, [], [stop_signals_are_interrupts, int_to_vm_alone, launcher_killed,
                    launcher_line_fits, frozen_vm_bounded]},
     {code, [], [leftovers_reaped_whatever_their_leader, code_output_to_stderr, code_moves_cwd,
                 code_kills_itself, heap_report_before_exit, workload_shapes]},
     {input, [], [crafted_inputs, crafted_files_through_escript, non_utf8_bytes, numbers_bounded]},
     {secrets, [], [secrets_masked_everywhere, empty_cookie_refused]},
     {messages, [], [node_messages]}].

init_per_suite(Config) ->
    Dir = beamlab_test_util:tmp_dir("hard"),
    %% One saved result that the report cases read.
    #{code := 0} = cli(quick() ++ ["--save", "r.json"], #{dir => Dir}),
    [{run, filename:join(Dir, "r.json")} | Config].

end_per_suite(_Config) ->
    ok.

cli(Args) -> beamlab_test_util:cli(Args).
cli(Args, Opts) -> beamlab_test_util:cli(Args, Opts).

quick() -> ["ok.", "-d", "20", "-s", "2"].

tmp() ->
    beamlab_test_util:tmp_dir("hard").

root() ->
    string:trim(os:cmd("id -u")) =:= "0".

sh(Cmd) ->
    "" = os:cmd(Cmd ++ " 2>&1"),
    ok.

has(Bin, Part) ->
    binary:match(Bin, iolist_to_binary(Part)) =/= nomatch.

one_line(R) ->
    beamlab_test_util:assert_one_line_error(R).

file_type(Path) ->
    {ok, #file_info{type = T, mode = M}} = file:read_link_info(Path),
    {T, M band 8#170000}.

%%--------------------------------------------------------------------
%% Output paths

%% Character devices and FIFOs are written in place, never replaced by a
%% regular file: device nodes made by the test in its own directory (a
%% null and a full device), a FIFO with a reader; a block device node is
%% refused before anything is written.
output_devices_in_place(Config) ->
    root() orelse throw({skip, "device nodes need root"}),
    Dir = tmp(),
    Run = ?config(run, Config),
    J = fun(N) -> filename:join(Dir, N) end,
    sh("cd " ++ Dir ++ " && mknod null c 1 3 && mknod full c 1 7 && mknod blk b 7 250 && mkfifo fifo"),
    Dev = file_type(J("null")),
    %% --save=DEVICE and --save DEVICE (the value is taken: it is a device)
    #{code := 0, err := E1} = cli(quick() ++ ["--save=null"], #{dir => Dir}),
    ?assert(has(E1, "saved: null (a character device: written in place)")),
    #{code := 0} = cli(quick() ++ ["--save", "null", "--format", "json"], #{dir => Dir}),
    ?assertEqual(Dev, file_type(J("null"))),
    %% A device that cannot take the data: one line, exit 1, still a device.
    R2 = #{code := 1, err := E2} = cli(["report", Run, "-o", "full"], #{dir => Dir}),
    one_line(R2),
    ?assert(has(E2, "cannot write full: no space left on device")),
    ?assertEqual({device, 8#020000}, file_type(J("full"))),
    %% A block device is refused before anything is measured.
    R3 = #{code := 2, out := <<>>, err := E3} = cli(quick() ++ ["--save=blk"], #{dir => Dir}),
    one_line(R3),
    ?assert(has(E3, "blk is a block device")),
    %% A FIFO: the reader gets the page; the FIFO stays a FIFO.
    Reader = open_port({spawn_executable, "/bin/cat"}, [{args, [J("fifo")]}, binary, exit_status]),
    #{code := 0, out := O4} = cli(["report", Run, "-o", "fifo"], #{dir => Dir}),
    ?assert(has(O4, "(a FIFO: written in place)")),
    Page = read_port(Reader, <<>>),
    ?assertMatch(<<"<!DOCTYPE html>", _/binary>>, Page),
    ?assertEqual({other, 8#010000}, file_type(J("fifo"))).

read_port(Port, Acc) ->
    receive
        {Port, {data, D}} -> read_port(Port, <<Acc/binary, D/binary>>);
        {Port, {exit_status, 0}} -> Acc
    after 30000 -> error({reader_timeout, Acc})
    end.

%% A link at the name is neither replaced nor written through; links and
%% directories of another user on the way are refused (a `beamlab-results'
%% link planted by another user in a shared directory, a subdirectory of
%% theirs); the user's own links to directories are followed.
output_links_and_owners(Config) ->
    Dir = tmp(),
    Run = ?config(run, Config),
    J = fun(N) -> filename:join(Dir, N) end,
    ok = file:write_file(J("victim"), <<"precious">>),
    ok = file:make_symlink(J("victim"), J("link.html")),
    R1 = #{code := 2} = cli(["report", Run, "-o", "link.html"], #{dir => Dir}),
    one_line(R1),
    ?assert(has(maps:get(err, R1), "link.html is a symbolic link")),
    ok = file:make_symlink(J("nowhere"), J("dangling.json")),
    #{code := 2} = cli(quick() ++ ["--save", "dangling.json"], #{dir => Dir}),
    ?assertEqual({error, enoent}, file:read_file_info(J("nowhere"))),
    ?assertEqual({ok, <<"precious">>}, file:read_file(J("victim"))),
    %% The user's own link to a directory is followed.
    ok = file:make_dir(J("mine")),
    ok = file:make_symlink("mine", J("mylink")),
    #{code := 0} = cli(["report", Run, "-o", "mylink/p.html"], #{dir => Dir}),
    ?assert(filelib:is_regular(J("mine/p.html"))),
    case root() of
        false -> {comment, "ownership cases need root"};
        true ->
            ok = file:make_dir(J("theirs")),
            sh("chown nobody " ++ J("theirs")),
            ok = file:make_dir(J("shared")),
            ok = file:make_dir(J("target")),
            ok = file:make_symlink(J("target"), J("shared/beamlab-results")),
            sh("chown -h nobody " ++ J("shared/beamlab-results")),
            Refused = [{["--save"], "shared", "beamlab-results is a symbolic link owned by another user"},
                       {["--save", "theirs"], ".", "theirs belongs to another user"},
                       {["--save=theirs/r.json"], ".", "theirs belongs to another user"},
                       {["--save=theirs/sub/r.json"], ".", "theirs belongs to another user"}],
            [begin
                 R = #{code := 2, out := <<>>, err := E} = cli(quick() ++ Args, #{dir => J(Cwd)}),
                 one_line(R),
                 ?assert(has(E, Msg))
             end || {Args, Cwd, Msg} <- Refused],
            R5 = #{code := 2} = cli(["report", Run, "-o", J("shared/beamlab-results/p.html")]),
            one_line(R5),
            ?assertEqual({ok, []}, file:list_dir(J("target"))),
            ?assertEqual({ok, []}, file:list_dir(J("theirs")))
    end.

%% `-o -' writes the page to standard output (the message goes to
%% standard error); `--save=-' the document.
output_stdout(Config) ->
    Dir = tmp(),
    Run = ?config(run, Config),
    #{code := 0, out := O1, err := E1} = cli(["report", Run, "-o", "-"], #{dir => Dir}),
    ?assertMatch(<<"<!DOCTYPE html>", _/binary>>, O1),
    ?assert(has(E1, "wrote - (")),
    #{code := 0, out := O2} = cli(quick() ++ ["--format", "json", "--save=-"], #{dir => Dir}),
    %% Two documents: the printed one and the saved one.
    [_, _] = binary:split(O2, <<"\n}\n">>, [global, trim_all]),
    %% Nothing was written in the directory.
    ?assertEqual({ok, []}, file:list_dir(Dir)).

%%--------------------------------------------------------------------
%% Signals

%% A run in a process group of its own, every signal at its default in
%% the launcher (as a terminal's foreground job has them), stderr watched.
start_run(Extra) ->
    H = beamlab_test_util:cli_start_group(["timer:sleep(50).", "-s", "200", "-d", "200",
                                           "--save", "h.json"] ++ Extra,
                                          #{prefix => ["env", "--default-signal"]}),
    _ = beamlab_test_util:wait_for_file(maps:get(err_file, H), "sampling round [3-9]", 60000),
    H.

vm_of(H) ->
    [Vm] = beamlab_test_util:launcher_children(H),
    Vm.

%% What a stopped run must leave: exit 130, the partial result printed and
%% saved, one interrupt (not "interrupted twice").
interrupted(H, What) ->
    R = #{code := Code, out := Out, err := Err, dir := Dir} = beamlab_test_util:cli_group_finish(H),
    ct:log("~p: exit ~p~n~ts~n~ts", [What, Code, Out, Err]),
    ?assertEqual({What, 130}, {What, Code}),
    ?assertNot(has(Err, "interrupted twice")),
    ?assert(has(Out, "timer:sleep(50).")),
    {ok, #{partial := true, benchmarks := [#{samples := [_ | _]}]}} =
        beamlab_result:load(filename:join(Dir, "h.json")),
    R.

%% Every stop signal (HUP, INT, QUIT, TERM), to the launcher's process
%% group, to the launcher alone or to the VM alone, is one interrupt: what
%% was measured is printed and saved, exit 130. (INT to the VM alone has
%% a case of its own.)
stop_signals_are_interrupts(_Config) ->
    Cases = [{group, "HUP"}, {launcher, "HUP"}, {vm, "HUP"}, {group, "QUIT"}, {vm, "QUIT"},
             {launcher, "INT"}, {vm, "TERM"}],
    [begin
         H = start_run([]),
         Target = case Who of
                      group -> "-" ++ maps:get(pgid, H);
                      launcher -> maps:get(pgid, H);
                      vm -> vm_of(H)
                  end,
         "" = os:cmd("kill -" ++ Sig ++ " " ++ Target),
         interrupted(H, {Who, Sig})
     end || {Who, Sig} <- Cases],
    ok.

%% SIGINT to the VM alone: the VM cannot catch it (the BEAM has no handler
%% for it), so it dies; the launcher recovers what the last checkpoint
%% holds as an interrupted run: printed, saved, exit 130. Ctrl-C (the
%% group) still takes the graceful path: the VM runs in a session of its
%% own and only the launcher gets it.
int_to_vm_alone(_Config) ->
    H = start_run([]),
    "" = os:cmd("kill -INT " ++ vm_of(H)),
    #{err := Err} = interrupted(H, {vm, "INT"}),
    ?assert(has(Err, "SIGINT reached the VM alone")),
    H2 = start_run([]),
    Vm = vm_of(H2),
    ?assertNotEqual(maps:get(pgid, H2), string:trim(os:cmd("ps -o sid= -p " ++ Vm))),
    ok = beamlab_test_util:signal_group(H2, "INT"),
    #{err := Err2} = interrupted(H2, {group, "INT"}),
    ?assertNot(has(Err2, "SIGINT reached the VM alone")).

%% The launcher killed (SIGKILL to its group, as a CI runner may do): the
%% VM, in a session of its own, notices, saves what it measured and
%% exits; the launcher's private directory is removed.
launcher_killed(_Config) ->
    Tmp = beamlab_test_util:tmp_dir("tmpdir"),
    H = beamlab_test_util:cli_start_group(["timer:sleep(50).", "-s", "200", "-d", "200",
                                           "--save", "h.json"],
                                          #{env => [{"TMPDIR", Tmp}]}),
    _ = beamlab_test_util:wait_for_file(maps:get(err_file, H), "sampling round [3-9]", 60000),
    Vm = vm_of(H),
    ok = beamlab_test_util:signal_group(H, "KILL"),
    beamlab_test_util:wait_until(fun() -> os:cmd("kill -0 " ++ Vm ++ " 2>&1") =/= "" end, 30000,
                                 vm_exit),
    %% The launcher died of the SIGKILL (setsid says "child N did not exit
    %% normally": expected here, and only here).
    ?assertEqual({signal, 9}, beamlab_test_util:group_exit(maps:get(port, H), <<>>, 30000)),
    {ok, #{partial := true}} = beamlab_result:load(filename:join(maps:get(dir, H), "h.json")),
    ?assertEqual({ok, []}, file:list_dir(Tmp)).

%% escript reads its emulator flags from the line after the launcher, in
%% a buffer of 1024 bytes: a longer launcher line would hide them.
launcher_line_fits(_Config) ->
    {ok, Bin} = file:read_file(beamlab_test_util:escript()),
    [_Shebang, Launcher, Flags | _] = binary:split(Bin, <<"\n">>, [global]),
    ?assert(byte_size(Launcher) + 1 < 1024),
    ?assertMatch(<<"%%! ", _/binary>>, Flags).

%%--------------------------------------------------------------------
%% Benchmarked code that misbehaves

%% Processes the code leaves running are killed when the job ends, also
%% when they changed their group leader (to init, to user, to a process
%% of their own) and what they spawned in turn. Run in this VM: the
%% leftovers are looked for afterwards by a mark in their dictionary.
leftovers_reaped_whatever_their_leader(_Config) ->
    Loop = "receive after infinity -> ok end",
    Mark = "put(beamlab_escapee, true), ",
    Codes = ["spawn(fun() -> " ++ Mark ++ "group_leader(whereis(init), self()), " ++ Loop ++ " end).",
             "spawn(fun() -> " ++ Mark ++ "group_leader(whereis(user), self()), " ++ Loop ++ " end).",
             "spawn(fun() -> " ++ Mark ++ "G = spawn(fun() -> " ++ Mark ++ Loop ++ " end), "
             "group_leader(G, self()), " ++ Loop ++ " end).",
             "spawn(fun() -> " ++ Mark ++ "group_leader(whereis(init), self()), "
             "spawn(fun() -> " ++ Mark ++ "group_leader(whereis(user), self()), " ++ Loop ++ " end), "
             ++ Loop ++ " end)."],
    [begin
         {ok, _} = beamlab_engine:run([#{runner => C}], #{samples => 2, duration => 20, checks => false},
                                      undefined),
         Left = [P || P <- erlang:processes(),
                      {dictionary, D} <- [erlang:process_info(P, dictionary)],
                      proplists:get_value(beamlab_escapee, D) =:= true],
         ?assertEqual({C, []}, {C, Left})
     end || C <- Codes],
    ok.

%% What the code prints through its group leader goes to standard error:
%% `--format json' stays one JSON document (from the runner, the init and
%% done hooks, with io:format, io:put_chars and io:nl).
code_output_to_stderr(_Config) ->
    Cases = [["io:format(\"noise~n\")."],
             ["io:put_chars(standard_io, <<\"noise\">>)."],
             ["ok.", "--init", "io:format(\"noise\"), io:nl()."],
             ["ok.", "--done", "io:put_chars(\"noise\")."]],
    [begin
         #{code := 0, out := Out, err := Err} = cli(Args ++ ["-d", "20", "-s", "2", "--format", "json"]),
         ?assertMatch({Args, {ok, _}}, {Args, beamlab_json:decode(Out)}),
         ?assert(has(Err, "noise"))
     end || Args <- Cases],
    ok.

%% Code that moves the working directory (in the runner, in a hook) does
%% not move a relative --save: the file lands where the command line
%% meant, and a line says what happened.
code_moves_cwd(_Config) ->
    Dir = tmp(),
    ok = file:make_dir(filename:join(Dir, "elsewhere")),
    Move = "file:set_cwd(\"elsewhere\")",
    [begin
         #{code := 0, err := Err} = cli(Args ++ ["-d", "20", "-s", "2", "--save", Name], #{dir => Dir}),
         ?assert(filelib:is_regular(filename:join(Dir, Name))),
         ?assertNot(filelib:is_file(filename:join([Dir, "elsewhere", Name]))),
         ?assert(has(Err, "changed the working directory"))
     end || {Args, Name} <- [{[Move ++ "."], "a.json"},
                             {["ok.", "--init", Move ++ "."], "b.json"},
                             {["ok.", "--done", Move ++ "."], "c.json"}]],
    ok.

%% A worker the code kills (itself, from another process, in its
%% init_runner hook) is reported as killed, not as a heap limit.
code_kills_itself(_Config) ->
    Cases = [["exit(self(), kill)."],
             ["W = self(), spawn(fun() -> exit(W, kill) end), receive after 1000 -> ok end."],
             ["ok.", "--init_runner", "exit(self(), kill)."]],
    [begin
         R = #{code := 1, err := Err} = cli(Args ++ ["-d", "50", "-s", "2"]),
         ct:log("~p: ~ts", [Args, Err]),
         ?assert(has(Err, "was killed")),
         ?assertNot(has(Err, "heap")),
         ?assertNot(has(Err, "internal error")),
         _ = R
     end || Args <- Cases],
    ok.

%% The emulator's heap-limit report can reach the job before the killed
%% worker's 'EXIT' (it is sent before the worker frees its heap and
%% signals its links): the job keeps it and still calls the kill a heap
%% limit. The code plays the emulator's part (its group leader is the
%% job's proxy, which passes the report on) and then dies.
heap_report_before_exit(_Config) ->
    Code = "group_leader() ! {beamlab_heap_limit, self()}, "
           "receive after 20 -> ok end, exit(self(), kill).",
    #{code := 1, err := Err} = cli([Code, "-d", "50", "-s", "2"]),
    ct:log("~ts", [Err]),
    ?assert(has(Err, "grew past")),
    ?assertNot(has(Err, "was killed")).

%% User workloads of the wrong shape: one line naming what is wrong, exit 2.
workload_shapes(Config) ->
    Dir = ?config(priv_dir, Config),
    Info = "#{name => <<\"~s\">>, summary => <<\"s\">>, definition => <<\"d\">>, unit => <<\"u\">>, "
           "better => higher, checks => <<\"c\">>}",
    Good = fun(N) -> lists:flatten(io_lib:format(Info, [N])) end,
    Cases = [{"wparams", Good("wparams"), "[foo, bar]", "params/0: foo is not a parameter map"},
             {"wnodef", "#{name => <<\"wnodef\">>}", "[]", "info/0: no summary"},
             {"wtype", Good("wtype"),
              "[#{key => n, default => 1, full => 1, type => weird, help => <<\"h\">>}]",
              "parameter n: unknown type weird"},
             {"wbetter", string:replace(Good("wbetter"), "higher", "up"), "[]",
              "better must be higher or lower"},
             {"wdup", Good("wdup"),
              "[#{key => n, default => 1, full => 1, type => pos_integer, help => <<\"h\">>},"
              " #{key => n, default => 1, full => 1, type => pos_integer, help => <<\"h\">>}]",
              "parameter n given twice"}],
    [begin
         Src = filename:join(Dir, M ++ ".erl"),
         ok = file:write_file(Src, ["-module(", M, ").\n"
                                    "-export([info/0, params/0, setup/1, run/2, teardown/1]).\n"
                                    "info() -> ", I, ".\nparams() -> ", P, ".\n"
                                    "setup(P) -> {ok, P}.\nrun(_, _) -> {ok, #{value => 1}}.\n"
                                    "teardown(_) -> ok.\n"]),
         {ok, _} = compile:file(Src, [{outdir, Dir}, return_errors]),
         R = #{code := 2, err := Err} = cli(["suite", M, "-pa", Dir]),
         one_line(R),
         ?assertNot(has(Err, "internal error")),
         ?assert(has(Err, Expect))
     end || {M, I, P, Expect} <- Cases],
    ok.

%%--------------------------------------------------------------------
%% Crafted input

%% The PropEr properties of prop_beamlab_crafted, a bounded number of
%% cases each: JSON, result files through compare and report, Erlang term
%% files through the grid and preset readers, crafted /proc and /sys
%% trees (read, and through `env --root'), option values of every command
%% of the command table (parsed, and dispatched), and option values,
%% crafted files and positional arguments through the experiment of every
%% command that has one (run, suite, matrix, amqp, profile, watch, check:
%% described and checked, nothing run).
crafted_inputs(_Config) ->
    Dir = tmp(),
    Bases = [begin
                 {ok, J} = beamlab_json:decode(beamlab_result:to_json(beamlab_results_fixtures:result(K, #{}))),
                 J
             end || K <- [<<"bench">>, <<"suite">>, <<"matrix">>, <<"amqp">>]],
    Props = [{json, prop_beamlab_crafted:prop_json(), 300},
             {result_files, prop_beamlab_crafted:prop_result_files(Dir, Bases), 60},
             {term_files, prop_beamlab_crafted:prop_term_files(Dir), 300},
             {env_root, prop_beamlab_crafted:prop_env_root(Dir), 40},
             {options, prop_beamlab_crafted:prop_options(), 500},
             {dispatch, prop_beamlab_crafted:prop_dispatch_options(), 150},
             {experiments, prop_beamlab_crafted:prop_experiments(Dir), 300}],
    [?assertEqual({Name, true}, {Name, proper:quickcheck(P, [{numtests, N}, {to_file, user}])})
     || {Name, P, N} <- Props],
    ok.

%% Crafted files through the escript itself (a limit on each run: a hang
%% fails the case): a FIFO nobody writes to, a FIFO that delivers, a
%% character device of endless zeros (made with mknod in the test's
%% directory, as root), deep JSON, a huge binary and too many atoms in a
%% grid and a preset, a crafted env --root.
crafted_files_through_escript(Config) ->
    RunFile = ?config(run, Config),
    Dir = tmp(),
    J = fun(N) -> filename:join(Dir, N) end,
    sh("cd " ++ Dir ++ " && mkfifo silent && mkfifo talking"),
    ok = file:write_file(J("deep.json"), binary:copy(<<"[">>, 5000000)),
    ok = file:write_file(J("digits.json"), ["[", lists:duplicate(1000000, $7), "]"]),
    ok = file:write_file(J("bin.grid"), "{vm, <<0:8796093022208>>}.\n"),
    ok = file:write_file(J("atoms.preset"), ["#{rows => [", lists:join(",", [["hardening_atom_", integer_to_list(I)]
                                                                          || I <- lists:seq(1, 20000)]), "]}.\n"]),
    ok = filelib:ensure_dir(J("root/proc/x")),
    ok = filelib:ensure_dir(J("root/sys/devices/system/cpu/x")),
    sh("mkfifo " ++ J("root/proc/cpuinfo")),
    ok = file:write_file(J("root/sys/devices/system/cpu/online"), "0-999999999\n"),
    Limit = #{dir => Dir, timeout => 60000},
    Refused = [{["compare", "silent", "silent"], "nothing came within 10 s"},
               {["compare", "deep.json", "deep.json"], "nested more than 512 levels"},
               {["report", "digits.json"], "a number longer than 1000 characters"},
               {["matrix", "--file", "bin.grid", "--", "ok."], "binary segment larger than 1024 bits"},
               {["suite", "--preset", "atoms.preset"], "atoms this VM does not know"}],
    [begin
         R = #{code := 2, err := Err} = cli(Args, Limit),
         one_line(R),
         ?assert(has(Err, Expect))
     end || {Args, Expect} <- Refused],
    %% A FIFO that delivers a real result is read.
    Writer = open_port({spawn, "sh -c 'cat " ++ RunFile ++ " > " ++ J("talking") ++ "'"}, [exit_status]),
    #{code := 0} = cli(["compare", "talking", RunFile], Limit),
    receive {Writer, {exit_status, 0}} -> ok after 30000 -> error(writer) end,
    case root() of
        true ->
            sh("cd " ++ Dir ++ " && mknod zeros c 1 5"),
            R2 = #{code := 2, err := E2} = cli(["report", "zeros"], Limit),
            one_line(R2),
            ?assert(has(E2, "too large"));
        false -> ok
    end,
    #{code := 0, out := EnvOut} = cli(["env", "--root", "root", "--format", "json"], Limit),
    {ok, #{<<"cpu">> := #{<<"online_cpus">> := []}}} = beamlab_json:decode(EnvOut),
    ok.

%% Bytes that are not UTF-8 anywhere on the command line: shown with the
%% Latin-1 fallback, never an internal error; a file named so is that file
%% on disk, for --save, compare and report, and the page is valid UTF-8.
non_utf8_bytes(Config) ->
    Dir = tmp(),
    Run = ?config(run, Config),
    Name = <<"r", 255, ".json">>,
    %% Port arguments given as binaries reach the program as raw bytes.
    Cases = [[<<"ok.">>, <<"-d">>, <<"20">>, <<"-s">>, <<"2">>, <<"--label">>, <<255, "l", 254>>],
             [<<"<<\"", 255, "\">>.">>, <<"-d">>, <<"20">>, <<"-s">>, <<"2">>],
             [<<"ok.">>, <<"-d">>, <<"20">>, <<"-s">>, <<"2">>, <<"--label">>, <<195>>],
             [<<"ok.">>, <<"-d">>, <<"20">>, <<"-s">>, <<"2">>, <<"--save">>, Name],
             [<<"compare">>, Name, list_to_binary(Run)],
             [<<"report">>, Name, <<"-o">>, <<"page.html">>, <<"--title">>, <<"t", 255>>],
             [<<"suite">>, <<"bang">>, <<"--param">>, <<"bang.senders=", 255>>],
             [<<"compare">>, <<"missing", 255, ".json">>, list_to_binary(Run)],
             %% An overlong encoding (of NUL), a missing --root and --file
             %% named so, a password so in an AMQP URI.
             [<<"ok.">>, <<"-d">>, <<"20">>, <<"-s">>, <<"2">>, <<"--label">>, <<192, 128, "x">>],
             [<<"env">>, <<"--root">>, <<"no", 255>>],
             [<<"matrix">>, <<"--file">>, <<"g", 255, ".terms">>, <<"--">>, <<"ok.">>],
             [<<"amqp">>, <<"-z">>, <<"1">>, <<"-h">>, <<"amqp://u:p", 255, "@127.0.0.1:1/">>]],
    [begin
         #{code := Code, err := Err} = cli(Args, #{dir => Dir}),
         ct:log("~w: ~p ~ts", [Args, Code, Err]),
         ?assertNot(has(Err, "internal error")),
         ?assert(lists:member(Code, [0, 2])),
         ?assertEqual(Err, unicode:characters_to_binary(Err))
     end || Args <- Cases],
    ?assert(filelib:is_regular(filename:join(list_to_binary(Dir), Name))),
    {ok, Page} = file:read_file(filename:join(Dir, "page.html")),
    ?assertEqual(Page, unicode:characters_to_binary(Page)),
    ?assert(has(Page, <<"t", 16#ff/utf8>>)).

%% Numbers beyond what an option can mean: one line naming the limit,
%% before anything runs.
numbers_bounded(_Config) ->
    Cases = [{["ok.", "-d", "100000000000"], "at most 86400000 (one day)"},
             {["ok.", "--deadline", "100000000000"], "at most 86400000"},
             {["ok.", "-c", "1000000000000"], "half the VM's process limit"},
             {["ok.", "-s", "10000000000"], "at most 1000000"},
             {["ok.", "--max-time", "1000000000000"], "at most 604800"},
             {["ok.", "-l", "100000000000G"], "at most 1000000000000000"},
             {["suite", "ring", "--timeout", "1000000000000"], "at most 604800 (one week)"},
             {["suite", "ring", "-n", "1000000"], "at most 10000"},
             {["matrix", "-n", "99999999999", "--", "ok."], "at most 10000"},
             {["profile", "-F", "1000000000", "--", "ok."], "perf_event_max_sample_rate"},
             {["watch", "--node", "x@127.0.0.1", "--interval", "99999999999"], "at most 86400000 (one day)"}],
    [begin
         R = #{code := 2, out := <<>>, err := Err} = cli(Args),
         one_line(R),
         ?assert(has(Err, Expect))
     end || {Args, Expect} <- Cases],
    ok.

%%--------------------------------------------------------------------
%% Secrets

%% Cookies given as emulator flags (ERL_FLAGS, ERL_ZFLAGS, -i --vm-args as
%% one string), secret environment assignments and URI passwords in a
%% label never reach the printed or saved document nor the report page.
secrets_masked_everywhere(_Config) ->
    Dir = tmp(),
    Env = [{"ERL_FLAGS", "-setcookie SECRETA"}, {"ERL_ZFLAGS", "-setcookie SECRETZ"}],
    #{code := 0, out := Out, err := Err} =
        cli(["ok.", "-d", "20", "-s", "2", "-i", "--vm-args", "-setcookie 'SECRET B'",
             "--label", "x RABBITMQ_ERLANG_COOKIE=SECRETE amqp://u:SECRETP@h/", "--save", "s.json",
             "--format", "json"], #{dir => Dir, env => Env}),
    #{code := 0} = cli(["report", "s.json", "-o", "s.html"], #{dir => Dir}),
    {ok, Saved} = file:read_file(filename:join(Dir, "s.json")),
    {ok, Page} = file:read_file(filename:join(Dir, "s.html")),
    [?assertNot({Where, has(Text, "SECRET")} =:= {Where, true})
     || {Where, Text} <- [{stdout, Out}, {stderr, Err}, {saved, Saved}, {page, Page}]],
    ?assert(has(Saved, "****")),
    %% An error line quoting a URI or a cookie flag is masked too.
    #{code := 2, err := E2} = cli(["compare", "amqp://u:SECRETQ@h/", "x.json"], #{dir => Dir}),
    ?assertNot(has(E2, "SECRETQ")).

%% An empty cookie is refused by every command that takes one, in one
%% line, before anything starts; and from ERL_FLAGS.
empty_cookie_refused(_Config) ->
    Cases = [["node", "--name", "e1@127.0.0.1", "--cookie", ""],
             ["node", "--stop", "e1@127.0.0.1", "--cookie="],
             ["watch", "--node", "e1@127.0.0.1", "--cookie", ""],
             ["profile", "--node", "e1@127.0.0.1", "--cookie", ""],
             ["amqp", "-z", "1", "--cookie", ""],
             ["matrix", "--cookie", "", "--", "ok."],
             ["suite", "ring", "--cookie", ""],
             ["node", "--name", "e1@127.0.0.1", "--cookie", lists:duplicate(300, $c)]],
    [begin
         R = #{code := 2, err := Err} = cli(Args),
         one_line(R),
         ?assert(has(Err, "--cookie: ")),
         ?assert(has(Err, "cookie"))
     end || Args <- Cases],
    R2 = #{code := 1, err := E2} = cli(["node", "--name", "e2@127.0.0.1"],
                                       #{env => [{"ERL_FLAGS", "-setcookie ''"}]}),
    one_line(R2),
    ?assert(has(E2, "empty distribution cookie")).

%%--------------------------------------------------------------------
%% Messages

%% beamlab node: bad names, a port in use, a name in use: one line each.
node_messages(_Config) ->
    Name = "hn" ++ integer_to_list(erlang:unique_integer([positive])) ++ "@127.0.0.1",
    Cases = [{["node", "--name", "a b@127.0.0.1"], 2, "letters, digits, _ and - before the @"},
             {["node", "--name", "caf\x{e9}@127.0.0.1"], 2, "is not a node name"},
             {["node", "--name", "ab@127.0.0.1", "--dist-port", "4369"], 1, "is in use"},
             %% Variants the issue did not list: no name, no host, a port
             %% beyond TCP's, watch's names.
             {["node", "--name", "@127.0.0.1"], 2, "is not a node name"},
             {["node", "--name", "x@"], 2, "is not a node name"},
             {["node", "--name", "ab@127.0.0.1", "--dist-port", "99999"], 2, "is not a TCP port"},
             {["watch", "--node", "a b@127.0.0.1", "--duration", "1"], 2, "is not a node name"},
             {["watch", "--node", "a@b@c", "--duration", "1"], 2, "is not a node name"}],
    [begin
         R = #{code := Code, err := Err} = cli(Args),
         one_line(R),
         ?assertEqual(Expect, Code),
         ?assert(has(Err, Msg))
     end || {Args, Expect, Msg} <- Cases],
    H = beamlab_test_util:cli_start(["node", "--name", Name, "--cookie", "hardening"], #{}),
    Seen = beamlab_test_util:await_output(maps:get(port, H), "ready", <<>>, 60000),
    R3 = #{code := 1, err := E3} = cli(["node", "--name", Name, "--cookie", "hardening"]),
    one_line(R3),
    ?assert(has(E3, "already running on this machine")),
    #{code := 0} = cli(["node", "--stop", Name, "--cookie", "hardening"]),
    #{code := 0} = beamlab_test_util:cli_finish(H, Seen).

%% A matrix configuration's VM frozen with SIGSTOP, then the run is
%% interrupted: the frozen VM is killed after the grace, the run ends,
%% exit 130 (before, it waited for a second interrupt).
frozen_vm_bounded(_Config) ->
    Dir = tmp(),
    %% The runner marks that the configuration's VM measures (it booted).
    Marker = filename:join(Dir, "measuring"),
    H = beamlab_test_util:cli_start_group(["matrix", "-n", "1", "--save", "m.json", "--",
                                           "file:write_file(\"" ++ Marker ++ "\", <<\"y\">>).",
                                           "-d", "500", "-s", "200"], #{dir => Dir}),
    %% The configuration's VM: a beam.smp below the VM's port program
    %% launcher (erl_child_setup), below the launcher's VM.
    Inner = beamlab_test_util:wait_for(
              fun() ->
                      case [P || V <- beamlab_test_util:launcher_children(H),
                                 C <- string:lexemes(os:cmd("pgrep -P " ++ V), "\n"),
                                 P <- string:lexemes(os:cmd("pgrep -P " ++ C ++ " beam.smp"), "\n")] of
                          [P | _] -> {ok, P};
                          [] -> none
                      end
              end, 60000, matrix_vm_started),
    _ = beamlab_test_util:wait_for_file(Marker, "y", 60000),
    "" = os:cmd("kill -STOP " ++ Inner),
    ok = beamlab_test_util:signal_group(H, "TERM"),
    #{code := Code, err := Err} = beamlab_test_util:cli_group_finish(H),
    ct:log("~ts", [Err]),
    ?assertEqual(130, Code),
    ?assert(has(Err, "did not stop within 10 s")),
    ?assertNotEqual("", os:cmd("kill -0 " ++ Inner ++ " 2>&1")).
