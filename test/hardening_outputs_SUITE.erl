%%% Issue 34, through the built escript: an output path never destroys an
%%% input or another output (compared by identity: device and inode,
%%% through links), whatever the command; a save is kept when standard
%%% output closes early (`| head -1'); `amqp -o' says when it replaced a
%%% file, as `--save' and `report -o' do. The broker cases use a private
%%% RabbitMQ on a port chosen free (scripts/rabbitmq.sh).
-module(hardening_outputs_SUITE).
-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-export([all/0, groups/0, init_per_suite/1, end_per_suite/1, init_per_group/2, end_per_group/2]).
-export([outputs_never_eat_inputs/1, outputs_by_identity/1, distinct_outputs_still_written/1,
         stdout_closed_keeps_save/1, amqp_stdout_closed_keeps_save/1, amqp_output_file_replaced_said/1]).

%% The broker's port, chosen free when it starts (beamlab_test_util:
%% start_suite_rabbitmq/1): a fresh machine or a parallel run may hold any
%% fixed one.
-define(AMQP_PORT, beamlab_test_util:suite_broker_port(?MODULE)).

all() ->
    [{group, files}, {group, broker}].

groups() ->
    [{files, [], [outputs_never_eat_inputs, outputs_by_identity, distinct_outputs_still_written,
                  stdout_closed_keeps_save]},
     {broker, [], [amqp_stdout_closed_keeps_save, amqp_output_file_replaced_said]}].

init_per_suite(Config) ->
    Dir = beamlab_test_util:tmp_dir("outputs"),
    %% Two saved runs that the cases read.
    #{code := 0} = beamlab_test_util:cli(["ok.", "-d", "20", "-s", "2", "--save", "a.json"], #{dir => Dir}),
    #{code := 0} = beamlab_test_util:cli(["ok.", "-d", "20", "-s", "2", "--save", "b.json"], #{dir => Dir}),
    [{runs, Dir} | Config].

end_per_suite(_Config) ->
    ok.

init_per_group(broker, Config) ->
    ok = beamlab_test_util:start_suite_rabbitmq(?MODULE),
    [{uri, "amqp://guest:guest@127.0.0.1:" ++ ?AMQP_PORT} | Config];
init_per_group(_, Config) ->
    Config.

end_per_group(broker, _Config) ->
    beamlab_test_util:stop_suite_rabbitmq(?MODULE);
end_per_group(_, _Config) ->
    ok.

%%--------------------------------------------------------------------
%% Outputs and inputs

%% A fresh directory with the two runs and the files the cases name.
workdir(Config) ->
    Dir = beamlab_test_util:tmp_dir("outputs"),
    Runs = ?config(runs, Config),
    [{ok, _} = file:copy(filename:join(Runs, F), filename:join(Dir, F)) || F <- ["a.json", "b.json"]],
    ok = file:write_file(filename:join(Dir, "body.txt"), <<"a body">>),
    ok = file:write_file(filename:join(Dir, "qf"), <<"q1\nq2\n">>),
    ok = file:write_file(filename:join(Dir, "s.json"), <<"{\"kept\": true}">>),
    ok = file:write_file(filename:join(Dir, "m.json"), <<"[].">>),
    Dir.

%% Every file of `Dir' and its bytes.
contents(Dir) ->
    {ok, Names} = file:list_dir(Dir),
    lists:sort([{N, element(2, file:read_file(filename:join(Dir, N)))}
                || N <- Names, filelib:is_regular(filename:join(Dir, N))]).

%% `Args' is refused before anything runs: exit 2, one line naming both
%% files (`Says'), and no file of the directory changed or appeared.
refused(Dir, Args, Says) ->
    Before = contents(Dir),
    R = beamlab_test_util:cli(Args, #{dir => Dir}),
    ct:log("~p: ~p", [Args, R]),
    ?assertEqual(2, maps:get(code, R), Args),
    beamlab_test_util:assert_one_line_error(R),
    [?assertNotEqual(nomatch, binary:match(maps:get(err, R), list_to_binary(S)), {Args, S}) || S <- Says],
    ?assertEqual(Before, contents(Dir), Args),
    R.

%% The issue's cases: each used to destroy its input (`report a.json -o
%% a.json' replaced the run with the page) or the other output.
outputs_never_eat_inputs(Config) ->
    Dir = workdir(Config),
    refused(Dir, ["report", "a.json", "-o", "a.json"], ["-o a.json is the input a.json"]),
    refused(Dir, ["report", "a.json", "b.json", "-o", "b.json"], ["-o b.json is the input b.json"]),
    refused(Dir, ["amqp", "-B", "body.txt", "-o", "body.txt"], ["-o body.txt is the input -B body.txt"]),
    refused(Dir, ["amqp", "-qf", "qf", "-o", "qf"], ["-o qf is the input -qf qf"]),
    refused(Dir, ["amqp", "--save", "r.json", "-o", "r.json"], ["-o r.json and --save r.json are the same file"]),
    refused(Dir, ["check", "--summary", "s.json", "--save", "s.json"],
            ["--summary s.json and --save s.json are the same file"]).

%% Identity, not spelling: a hard link, a symbolic link to the input, a
%% path through `..', an absolute path, a body among several, a file a
%% directory of runs holds, two outputs of `profile', a matrix's term
%% file, a suite's preset file, doctor's --compare documents.
outputs_by_identity(Config) ->
    Dir = workdir(Config),
    ok = file:make_link(filename:join(Dir, "a.json"), filename:join(Dir, "hard.json")),
    ok = file:make_symlink("b.json", filename:join(Dir, "sym.json")),
    ok = filelib:ensure_path(filename:join(Dir, "sub")),
    ok = filelib:ensure_path(filename:join(Dir, "runs")),
    {ok, _} = file:copy(filename:join(Dir, "a.json"), filename:join([Dir, "runs", "r1.json"])),
    refused(Dir, ["report", "a.json", "-o", "hard.json"], ["-o hard.json is the input a.json"]),
    refused(Dir, ["report", "sym.json", "-o", "b.json"], ["-o b.json is the input sym.json"]),
    refused(Dir, ["report", "a.json", "-o", "sub/../a.json"], ["-o sub/../a.json is the input a.json"]),
    refused(Dir, ["report", "a.json", "-o", filename:join(Dir, "a.json")], ["is the input a.json"]),
    refused(Dir, ["report", "runs", "-o", "runs/r1.json"], ["-o runs/r1.json is the input runs/r1.json"]),
    refused(Dir, ["amqp", "-B", "qf,body.txt", "-o", "./body.txt"], ["is the input -B body.txt"]),
    refused(Dir, ["profile", "--folded", "f.txt", "--speedscope", "f.txt", "--", "ok."],
            ["--folded f.txt and --speedscope f.txt are the same file"]),
    refused(Dir, ["matrix", "--file", "m.json", "--save", "m.json", "--", "ok."],
            ["--save m.json is the input --file m.json"]),
    refused(Dir, ["suite", "--preset", "s.json", "--save", "s.json"],
            ["--save s.json is the input --preset s.json"]),
    %% doctor --compare reads two documents: neither may be the save
    refused(Dir, ["doctor", "--compare", "a.json", "b.json", "--save", "a.json"],
            ["--save a.json is the input --compare a.json"]),
    refused(Dir, ["doctor", "--compare", "a.json", "sym.json", "--save", "b.json"],
            ["--save b.json is the input --compare sym.json"]).

%% Outputs that are other files still work: a new page beside its input,
%% two devices written in place, the same file named for input twice.
distinct_outputs_still_written(Config) ->
    Dir = workdir(Config),
    #{code := 0} = beamlab_test_util:cli(["report", "a.json", "a.json", "-o", "page.html"], #{dir => Dir}),
    ?assert(filelib:is_regular(filename:join(Dir, "page.html"))),
    R = beamlab_test_util:cli(["ok.", "-d", "20", "-s", "2", "--save", "/dev/null", "--format", "json"],
                              #{dir => Dir}),
    ?assertEqual(0, maps:get(code, R)),
    {ok, A} = file:read_file(filename:join(Dir, "a.json")),
    {ok, A} = file:read_file(filename:join(?config(runs, Config), "a.json")).

%% Standard output closed early (`| head -c 10'): the run's save is kept,
%% no crash report, no internal error; closed before the start (`>&-')
%% too.
stdout_closed_keeps_save(Config) ->
    Dir = workdir(Config),
    Esc = beamlab_test_util:escript(),
    Cases = [{"head", "'" ++ Esc ++ "' ok. -d 50 -s 4 --format json --save h.json | head -c 10 >/dev/null; "
                      "echo \"status ${PIPESTATUS[0]}\" >&2", "h.json"},
             {"closed", "'" ++ Esc ++ "' ok. -d 50 -s 4 --save c.json >&-; echo \"status $?\" >&2", "c.json"}],
    [begin
         {_, Out} = bash(Dir, Cmd),
         ct:log("~ts:~n~ts", [Name, Out]),
         no_crash(Out),
         ?assertNotEqual(nomatch, binary:match(Out, <<"status 0">>), Name),
         {ok, #{partial := false}} = beamlab_result:load(filename:join(Dir, File))
     end || {Name, Cmd, File} <- Cases].

no_crash(Out) ->
    [?assertEqual(nomatch, binary:match(Out, P), {P, Out})
     || P <- [<<"user_sup">>, <<"epipe">>, <<"internal error">>, <<"crasher">>, <<"Supervisor">>]].

bash(Dir, Cmd) ->
    Port = open_port({spawn_executable, "/bin/bash"},
                     [{args, ["-c", Cmd]}, {cd, Dir}, exit_status, stderr_to_stdout, binary]),
    beamlab_test_util:port_output(Port, 120000).

%%--------------------------------------------------------------------
%% The broker

%% `amqp ... --save p.json | head -1', one node and two: the first
%% interval line reaches `head', the run goes on without standard output,
%% ends with 0 and saves; nothing of OTP's crash reports appears (it used
%% to print four crash-report lines and an internal error, exit 1, no
%% file). Standard output closed before the start too.
amqp_stdout_closed_keeps_save(Config) ->
    Dir = workdir(Config),
    Esc = beamlab_test_util:escript(),
    Uri = ?config(uri, Config),
    Run = fun(Extra, File, Redirect) ->
                  "'" ++ Esc ++ "' amqp -h " ++ Uri ++ " -z 3 " ++ Extra ++ " --save " ++ File ++ Redirect
          end,
    Cases = [{"head", Run("", "p1.json", " | head -1; echo \"status ${PIPESTATUS[0]}\" >&2"), "p1.json", true},
             {"nodes", Run("--nodes 2", "p2.json", " | head -1; echo \"status ${PIPESTATUS[0]}\" >&2"), "p2.json", true},
             {"closed", Run("", "p3.json", " >&-; echo \"status $?\" >&2"), "p3.json", false}],
    [begin
         {_, Out} = bash(Dir, Cmd),
         ct:log("~ts:~n~ts", [Name, Out]),
         no_crash(Out),
         ?assertNotEqual(nomatch, binary:match(Out, <<"status 0">>), Name),
         Head andalso ?assertMatch({match, _}, re:run(Out, "^id: test-[0-9-]+, time 1\\.[0-9]+ s, sent: ", [multiline])),
         {ok, #{kind := amqp, benchmarks := [_ | _]}} = beamlab_result:load(filename:join(Dir, File))
     end || {Name, Cmd, File, Head} <- Cases].

%% `amqp -o FILE' over an existing file says it replaced it (as `--save'
%% and `report -o' do); a new file is said as written. Both hold the CSV.
amqp_output_file_replaced_said(Config) ->
    Dir = workdir(Config),
    Old = filename:join(Dir, "old.csv"),
    ok = file:write_file(Old, <<"an older file\n">>),
    Uri = ?config(uri, Config),
    R1 = beamlab_test_util:cli(["amqp", "-h", Uri, "-z", "1", "-o", "old.csv"], #{dir => Dir}),
    R2 = beamlab_test_util:cli(["amqp", "-h", Uri, "-z", "1", "-o", "new.csv"], #{dir => Dir}),
    ct:log("~p~n~p", [R1, R2]),
    #{code := 0, err := E1} = R1,
    #{code := 0, err := E2} = R2,
    ?assertNotEqual(nomatch, binary:match(E1, <<"wrote old.csv (replaced the existing file)">>)),
    ?assertNotEqual(nomatch, binary:match(E2, <<"wrote new.csv\n">>)),
    ?assertEqual(nomatch, binary:match(E2, <<"replaced">>)),
    [begin
         {ok, Csv} = file:read_file(filename:join(Dir, F)),
         ?assertMatch(<<"id,time (s),published (msg/s)", _/binary>>, Csv)
     end || F <- ["old.csv", "new.csv"]].
