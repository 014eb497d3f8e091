%%% Issue 34, problems 7-13, 15 (engineer harden2): bounded memory,
%%% crafted numbers, secrets in every URI field, errors a person can read
%%% (TLS files, `check' failures, a careless environment) and silent
%%% acceptance, through the built escript. The metrics endpoint's cases
%%% (problem 16) are in metrics_SUITE. See docs/reliability.md.
-module(hardening_limits_SUITE).
-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-export([all/0, groups/0, init_per_suite/1, end_per_suite/1]).
-export([compare_crafted_numbers/1, crafted_numbers_property/1, crafted_uris_property/1,
         crafted_paths_property/1]).
-export([amqp_body_sizes_bounded/1, amqp_bodies_held_bounded/1]).
-export([silent_acceptance_refused/1, check_bench_dir_before_build/1]).
-export([check_runner_raises_readable/1, uri_query_secrets_masked/1, tls_files_checked/1]).
-export([report_long_history_bounded/1, home_unset_one_line/1, check_base_build_plain/1,
         launcher_checks_environment/1, launcher_address_space/1]).

all() ->
    [{group, numbers}, {group, memory}, {group, acceptance}, {group, readable}, {group, secrets}].

groups() ->
    [{numbers, [], [compare_crafted_numbers, crafted_numbers_property]},
     {memory, [], [amqp_body_sizes_bounded, amqp_bodies_held_bounded, report_long_history_bounded]},
     {acceptance, [], [silent_acceptance_refused, check_bench_dir_before_build]},
     {readable, [], [check_runner_raises_readable, check_base_build_plain, tls_files_checked,
                     home_unset_one_line, launcher_checks_environment,
                     launcher_address_space]},
     {secrets, [], [uri_query_secrets_masked, crafted_uris_property, crafted_paths_property]}].

init_per_suite(Config) ->
    Dir = beamlab_test_util:tmp_dir("limits"),
    #{code := 0} = cli(["ok.", "-d", "20", "-s", "3", "--save", "r.json"], #{dir => Dir}),
    [{run, filename:join(Dir, "r.json")} | Config].

end_per_suite(_Config) ->
    ok.

cli(Args, Opts) -> beamlab_test_util:cli(Args, Opts).

tmp() -> beamlab_test_util:tmp_dir("limits").

has(Bin, Part) ->
    binary:match(Bin, iolist_to_binary(Part)) =/= nomatch.

one_line(R) ->
    beamlab_test_util:assert_one_line_error(R).

%% The saved run with its samples replaced (its stats dropped, so that
%% every statistic is computed from them) and written as Name in Dir.
crafted_run(Config, Dir, Name, SamplesText) ->
    {ok, Bin} = file:read_file(?config(run, Config)),
    {ok, J = #{<<"benchmarks">> := [B | _]}} = beamlab_json:decode(Bin),
    Doc = J#{<<"benchmarks">> := [maps:remove(<<"stats">>, B#{<<"samples">> := [1, 2, 3]})]},
    Text = iolist_to_binary(beamlab_json:encode(Doc)),
    %% Spliced in as text: a 901-digit integer must reach the file as such.
    [Pre, Post] = binary:split(Text, <<"[1,2,3]">>),
    File = filename:join(Dir, Name),
    ok = file:write_file(File, [Pre, "[", SamplesText, "]", Post]),
    File.

%%--------------------------------------------------------------------
%% Crafted numbers (problem 9)

%% A 901-digit integer sample and samples of 1.79e308 were an internal
%% error (badarith) in compare and report; now one line naming the field.
%% Variants: a negative huge float, a subnormal sample, a huge number in a
%% free-form section; numbers at the bounds give a result.
compare_crafted_numbers(Config) ->
    Dir = tmp(),
    Run = ?config(run, Config),
    Big = crafted_run(Config, Dir, "digits.json", lists:duplicate(901, $9)),
    Max = crafted_run(Config, Dir, "max.json", "1.79e308, 1.79e308, 1.79e308"),
    Neg = crafted_run(Config, Dir, "neg.json", "-1.7e308, 1, 2"),
    Tiny = crafted_run(Config, Dir, "tiny.json", "5e-324, 1e-320, 2e-310"),
    [begin
         R = #{code := 2, err := Err} = cli([Cmd, Run, F | Rest], #{dir => Dir}),
         one_line(R),
         ?assert(has(Err, "is not a valid beamlab result: benchmarks[0].samples[0] is ")),
         ?assertNot(has(Err, "internal error"))
     end || F <- [Big, Max, Neg, Tiny],
            {Cmd, Rest} <- [{"compare", []}, {"report", ["-o", "r.html"]}]],
    %% In a free-form section (reports compute with some of those).
    {ok, Bin} = file:read_file(Run),
    {ok, J} = beamlab_json:decode(Bin),
    Extra = filename:join(Dir, "extra.json"),
    ok = file:write_file(Extra, beamlab_json:encode(J#{<<"extra">> => #{<<"n">> => 1.0e300}})),
    #{code := 2, err := ExtraErr} = cli(["compare", Run, Extra], #{dir => Dir}),
    ?assert(has(ExtraErr, "extra.n is out of range")),
    %% At the bounds: a correct result, the means as given.
    Edge = crafted_run(Config, Dir, "edge.json", "1e60, 1e60, 1e-60, 1e-60, 9.99e59"),
    #{code := 0, out := Out} = cli(["compare", Run, Edge, "--format", "json"], #{dir => Dir}),
    {ok, #{<<"rows">> := [#{<<"cells">> := [_, Cell]}]}} = beamlab_json:decode(Out),
    ?assert(is_number(maps:get(<<"mean">>, Cell))),
    #{code := 0} = cli(["report", Run, Edge, "-o", "edge.html"], #{dir => Dir}),
    ok.

%% The numbers class of the crafted-input properties: extreme numbers in
%% samples, statistics and free-form values, through compare and report.
crafted_numbers_property(_Config) ->
    Dir = tmp(),
    Bases = [begin
                 {ok, J} = beamlab_json:decode(beamlab_result:to_json(beamlab_results_fixtures:result(K, #{}))),
                 J
             end || K <- [<<"bench">>, <<"suite">>, <<"matrix">>, <<"amqp">>]],
    ?assert(proper:quickcheck(prop_beamlab_crafted:prop_result_numbers(Dir, Bases),
                              [{numtests, 200}, {to_file, user}])).

%%--------------------------------------------------------------------
%% Bounded memory (problem 7). The bounds are checked before any broker
%% is contacted: the URIs point at a closed port, so a run that got past
%% them would fail with a connection error instead of the line asserted.

-define(NOBROKER, "amqp://127.0.0.1:1/%2F").

usage(Args, Expected) ->
    R = #{code := Code, err := Err} = cli(["amqp", "-h", ?NOBROKER, "-z", "1" | Args], #{dir => tmp()}),
    ?assertEqual({2, Args}, {Code, Args}),
    one_line(R),
    ?assert(has(Err, Expected)),
    Err.

%% One bound for every way a body size is given: -s, -vs and -B files
%% (RabbitMQ's largest message, 512 MiB). `-vs 600000000:1' was accepted.
amqp_body_sizes_bounded(_Config) ->
    _ = usage(["-s", "600000000"], "at most 536870912"),
    _ = usage(["-vs", "600000000:1"], "-vs: 600000000:1: at most 536870912"),
    _ = usage(["-vs", "100:5", "-vs", "536870913:1"], "-vs: 536870913:1: at most 536870912"),
    Dir = tmp(),
    Big = filename:join(Dir, "big.bin"),
    %% Sparse: no disk space, and nothing is read (the size decides).
    {ok, F} = file:open(Big, [write]),
    {ok, _} = file:position(F, 536870913),
    ok = file:write(F, <<0>>),
    ok = file:close(F),
    _ = usage(["-B", Big], "larger than 512 MiB"),
    ok.

%% A total for what is held at once: 100 files of 60 MiB (each under the
%% per-file bound) used to be read whole, past 2.5 GB; -vs sizes that add
%% up past 1 GiB likewise. Bodies are shared, not copied per producer
%% (beamlab_amqp_producer_tests:shared_padding_test).
amqp_bodies_held_bounded(_Config) ->
    Dir = tmp(),
    Files = [begin
                 Name = filename:join(Dir, "b" ++ integer_to_list(I)),
                 {ok, F} = file:open(Name, [write]),
                 {ok, _} = file:position(F, 60 * 1048576 - 1),
                 ok = file:write(F, <<0>>),
                 ok = file:close(F),
                 Name
             end || I <- lists:seq(1, 100)],
    _ = usage(["-B", lists:join(",", Files)], "-B: 100 files of 6291456000 bytes in all, more than 1 GiB"),
    _ = usage(["-x", "4", "-vs", "536870912:1", "-vs", "536870911:1"],
              "add up to 1073741835 bytes, more than 1 GiB"),
    _ = usage(["--json-body", "-bc", "10000", "-s", "200000"], "more than 1 GiB"),
    ok.

%%--------------------------------------------------------------------
%% Silent acceptance (problem 15): refused up front, one line, exit 2.

silent_acceptance_refused(_Config) ->
    _ = usage(["-vr", "99999999999999999999:1"], "-vr: 99999999999999999999:1: at most 1000000000"),
    _ = usage(["-vl", "60000001:1"], "-vl: 60000001:1: at most 60000000"),
    _ = usage(["--uris", ?NOBROKER ",," ?NOBROKER], "-H: an empty entry"),
    _ = usage(["--uris", ?NOBROKER ","], "-H: an empty entry"),
    _ = usage(["--uris", " , "], "-H: an empty entry"),
    _ = usage(["-B", "a,,b"], "-B: an empty entry"),
    _ = usage(["-B", "a,"], "-B: an empty entry"),
    [begin
         R = #{code := 2, err := Err} = cli(["matrix", "--target", "rabbitmq", "--load-cmd", Cmd,
                                             "--", "amqp", "-z", "1"], #{dir => tmp()}),
         one_line(R),
         ?assert(has(Err, "--load-cmd is empty"))
     end || Cmd <- ["", "  "]],
    ok.

%% `check --bench nosuch' (and a bench directory without bench modules)
%% is refused before the project is built: the project here does not
%% compile, so getting that far would say so instead.
check_bench_dir_before_build(_Config) ->
    Dir = tmp(),
    ok = file:write_file(filename:join(Dir, "rebar.config"), "{erl_opts, []}.\n"),
    ok = filelib:ensure_path(filename:join(Dir, "src")),
    ok = file:write_file(filename:join([Dir, "src", "broken.erl"]), "-module(broken).\nthis is not erlang\n"),
    ok = filelib:ensure_path(filename:join(Dir, "bench")),
    [begin
         R = #{code := 2, err := Err} = cli(["check" | Args], #{dir => Dir}),
         one_line(R),
         ?assert(has(Err, Expected)),
         ?assertNot(has(Err, "broken"))
     end || {Args, Expected} <- [{["--bench", "nosuch"], "nosuch: no such directory"},
                                 {["--bench", "nosuch", "--against", "HEAD"], "nosuch: no such directory"},
                                 {[], "holds no bench module"}]],
    ok.

%%--------------------------------------------------------------------
%% Errors a person can read (problem 12)

%% A runner that raises printed OTP's "Error in process ... with exit
%% value" and a stack of beamlab_gen_* and beamlab_engine_after frames in
%% the error and the table. Now: the class, the reason and the user's own
%% frames. Variants: a throw, an exit, a raise deep in a helper.
check_runner_raises_readable(_Config) ->
    Dir = tmp(),
    ok = file:write_file(filename:join(Dir, "rebar.config"), "{erl_opts, []}.\n"),
    ok = filelib:ensure_path(filename:join(Dir, "src")),
    ok = file:write_file(filename:join([Dir, "src", "lim.erl"]), "-module(lim).\n-export([f/0]).\nf() -> ok.\n"),
    ok = filelib:ensure_path(filename:join(Dir, "bench")),
    ok = file:write_file(filename:join([Dir, "bench", "raise_bench.erl"]),
                         "-module(raise_bench).\n-export([benchmarks/0]).\n"
                         "benchmarks() ->\n"
                         "    [#{name => \"raises\", runner => fun() -> deep(3) end},\n"
                         "     #{name => \"throws\", runner => fun() -> throw(oops) end},\n"
                         "     #{name => \"exits\", runner => fun() -> exit(gone) end},\n"
                         "     #{name => \"fine\", runner => fun() -> lim:f() end}].\n"
                         "deep(0) -> erlang:error({bad, input});\n"
                         "deep(N) -> [deep(N - 1)].\n"),
    #{code := 1, out := Out, err := Err} = cli(["check"], #{dir => Dir}),
    All = <<Out/binary, Err/binary>>,
    [?assertNot(has(All, Harness)) || Harness <- ["Error in process", "beamlab_gen_", "beamlab_engine",
                                                  "exit value", "erl_eval"]],
    ?assert(has(All, "raises: the runner failed while profiling: error {bad,input} in raise_bench:deep/1 (raise_bench.erl:8)")),
    ?assert(has(All, "throws: the runner failed while profiling: throw oops")),
    ?assert(has(All, "exits: the runner failed while profiling: exit gone")),
    ok.

%%--------------------------------------------------------------------
%% Secrets (problem 10)

%% The query value of `?password=PW' was printed in clear (`unknown
%% parameter "password"') while the user-info part was masked. Variants:
%% a token among known parameters, a percent-encoded name, the command
%% line recorded in a saved document.
uri_query_secrets_masked(_Config) ->
    Dir = tmp(),
    [begin
         R = #{code := 2, err := Err} = cli(["amqp", "-h", Uri, "-z", "1"], #{dir => Dir}),
         one_line(R),
         ?assertNot(has(Err, "SECRETPW")),
         ?assert(has(Err, "****"))
     end || Uri <- ["amqp://user:SECRETPW@127.0.0.1:1/%2F?password=SECRETPW",
                    "amqp://127.0.0.1:1/%2F?heartbeat=5&token=SECRETPW",
                    "amqp://127.0.0.1:1/%2F?pass%77ord=SECRETPW"]],
    #{code := 0, out := Out} = cli(["ok.", "-d", "20", "-s", "2", "--label", "amqp://h/%2F?token=SECRETPW",
                                    "--save", "r.json"], #{dir => Dir}),
    ?assertNot(has(Out, "SECRETPW")),
    {ok, Saved} = file:read_file(filename:join(Dir, "r.json")),
    ?assertNot(has(Saved, "SECRETPW")),
    ?assert(has(Saved, "token=****")),
    ok.

%% TLS files (problem 11), checked before any connection (the URI points
%% at a closed port: a run that got past the check would fail to connect
%% instead): a garbage, empty or bad-base64 CA file was accepted and the
%% broker blamed; an encrypted key printed a raw term with an asn1 stack;
%% a certificate given as the key `bad TLS options'; a key that does not
%% match its certificate `socket error: unknown POSIX error'. Variants: a
%% key given as the CA file, the certificate and key swapped, a
%% directory.
tls_files_checked(_Config) ->
    Dir = tmp(),
    ok = beamlab_test_tls:make(Dir),
    F = fun(Name) -> filename:join(Dir, Name) end,
    ok = file:write_file(F("garbage.pem"), <<"hello, not a certificate\n">>),
    ok = file:write_file(F("empty.pem"), <<>>),
    ok = file:write_file(F("badb64.pem"), <<"-----BEGIN CERTIFICATE-----\n!!not base64**\n-----END CERTIFICATE-----\n">>),
    {ok, KeyPem} = file:read_file(F("client.key")),
    [{KeyType, KeyDer, not_encrypted}] = public_key:pem_decode(KeyPem),
    Key = public_key:der_decode(KeyType, KeyDer),
    Enc = public_key:pem_entry_encode(KeyType, Key, {{"DES-EDE3-CBC", crypto:strong_rand_bytes(8)}, "passphrase"}),
    ok = file:write_file(F("encrypted.key"), public_key:pem_encode([Enc])),
    Uri = "amqps://127.0.0.1:1/%2F",
    Ca = ["--tls-ca-file", F("server-ca.pem")],
    Cases = [{["--tls-ca-file", F("garbage.pem")], "garbage.pem: no PEM certificate in it"},
             {["--tls-ca-file", F("empty.pem")], "empty.pem: no PEM certificate in it"},
             {["--tls-ca-file", F("badb64.pem")], "badb64.pem: a PEM block in it cannot be decoded"},
             {["--tls-ca-file", F("client.key")], "client.key: holds no certificate"},
             {["--tls-ca-file", Dir], "not a regular file"},
             {Ca ++ ["--tls-cert-file", F("client.pem"), "--tls-key-file", F("encrypted.key")],
              "encrypted.key: the private key is encrypted"},
             {Ca ++ ["--tls-cert-file", F("client.pem"), "--tls-key-file", F("client.pem")],
              "--tls-key-file " ++ F("client.pem") ++ ": holds a certificate, not a private key"},
             {Ca ++ ["--tls-cert-file", F("client.key"), "--tls-key-file", F("client.pem")],
              "--tls-cert-file " ++ F("client.key") ++ ": holds no certificate"},
             {Ca ++ ["--tls-cert-file", F("client.pem"), "--tls-key-file", F("server.key")],
              "server.key: does not match the certificate in " ++ F("client.pem")}],
    [begin
         R = #{code := Code, err := Err} = cli(["amqp", "-h", Uri, "-z", "1" | Args], #{dir => Dir}),
         ?assertEqual({2, Args}, {Code, Args}),
         one_line(R),
         ?assert(has(Err, Expected)),
         [?assertNot(has(Err, Bad)) || Bad <- ["SSL WARNING", "asn1", "{keyfile", "POSIX", "trusted CA"]]
     end || {Args, Expected} <- Cases],
    %% The good files pass the check (and the run then fails to connect).
    #{code := 1, err := Good} = cli(["amqp", "-h", Uri, "-z", "1" | Ca ++ ["--tls-cert-file", F("client.pem"),
                                                                          "--tls-key-file", F("client.key")]],
                                    #{dir => Dir}),
    ?assertNot(has(Good, "--tls-")),
    ok.

%%--------------------------------------------------------------------
%% A report over a long history (problem 8): the trend covers every run,
%% read from a summary of each; only the newest runs are held whole and
%% shown in detail (bench/report_history.escript measures the time and
%% memory). Here: 45 runs, the page's trend has all 45 in order, its
%% detail the newest 30 (beamlab_report_html:detail_runs/0); a history of
%% 3 keeps all of them in detail.
report_long_history_bounded(Config) ->
    Dir = tmp(),
    Hist = filename:join(Dir, "hist"),
    ok = filelib:ensure_path(Hist),
    {ok, Bin} = file:read_file(?config(run, Config)),
    {ok, J} = beamlab_json:decode(Bin),
    Names = [begin
                 Name = lists:flatten(io_lib:format("r~3..0b", [I])),
                 Started = iolist_to_binary(io_lib:format("2026-11-01T10:~2..0b:00Z", [I])),
                 ok = file:write_file(filename:join(Hist, Name ++ ".json"),
                                      beamlab_json:encode(J#{<<"started_at">> => Started})),
                 list_to_binary(Name)
             end || I <- lists:seq(0, 44)],
    #{code := 0, out := Out} = cli(["report", Hist, "-o", "h.html"], #{dir => Dir}),
    ?assert(has(Out, "(45 run(s)")),
    Data = page_data(filename:join(Dir, "h.html")),
    #{<<"history">> := #{<<"runs">> := HRuns}, <<"runs">> := Detail} = Data,
    ?assertEqual(Names, [L || #{<<"label">> := L} <- HRuns]),
    ?assertEqual(lists:nthtail(15, Names), [L || #{<<"label">> := L} <- Detail]),
    Few = filename:join(Dir, "few"),
    ok = filelib:ensure_path(Few),
    [{ok, _} = file:copy(filename:join(Hist, binary_to_list(N) ++ ".json"),
                         filename:join(Few, binary_to_list(N) ++ ".json")) || N <- lists:sublist(Names, 3)],
    #{code := 0} = cli(["report", Few, "-o", "f.html"], #{dir => Dir}),
    #{<<"runs">> := All} = page_data(filename:join(Dir, "f.html")),
    ?assertEqual(lists:sublist(Names, 3), [L || #{<<"label">> := L} <- All]),
    ok.

page_data(Html) ->
    {ok, Page} = file:read_file(Html),
    [_, Rest] = binary:split(Page, <<"<script type=\"application/json\" id=\"beamlab-data\">">>),
    [Json | _] = binary:split(Rest, <<"</script>">>),
    {ok, Data} = beamlab_json:decode(Json),
    Data.

%%--------------------------------------------------------------------
%% A careless environment (problem 13, the part the VM can check): HOME
%% unset with `watch' and no --cookie printed a supervisor report and a
%% crash report from OTP's auth server. Now one line, exit 1, before
%% distribution starts. Variants: with --cookie (the cookie file is read
%% first all the same), HOME set but empty, `node'.
home_unset_one_line(_Config) ->
    [begin
         R = #{code := Code, err := Err} = cli(Args, #{dir => tmp(), env => [{"HOME", Home}]}),
         ?assertEqual({1, Args}, {Code, Args}),
         one_line(R),
         ?assert(has(Err, "HOME is not set")),
         [?assertNot(has(Err, Bad)) || Bad <- ["Supervisor", "crasher", "badmatch", "basedir"]]
     end || {Args, Home} <- [{["watch", "--node", "nosuch@127.0.0.1"], false},
                             {["watch", "--node", "nosuch@127.0.0.1", "--cookie", "c00kie"], false},
                             {["watch", "--node", "nosuch@127.0.0.1"], ""},
                             {["node", "--name", "limits_home@127.0.0.1"], false}]],
    ok.

%% The URIs class of the crafted-input properties: secrets in user-info
%% and in secret-named query parameters never reach an error line or a
%% recorded command line.
crafted_uris_property(_Config) ->
    ?assert(proper:quickcheck(prop_beamlab_crafted:prop_uri_secrets(), [{numtests, 300}, {to_file, user}])).

%% The paths class: crafted output paths for report and compare answer in
%% one line and never change the input.
crafted_paths_property(Config) ->
    Dir = tmp(),
    Input = filename:join(Dir, "r.json"),
    {ok, _} = file:copy(?config(run, Config), Input),
    ?assert(proper:quickcheck(prop_beamlab_crafted:prop_output_paths(Dir, Input), [{numtests, 100}, {to_file, user}])).

%% A base that fails to build put rebar3's colour codes inside the error
%% line. Now the line quotes rebar3's last line as plain text. (The base
%% is the commit; the working tree fixes it.)
check_base_build_plain(_Config) ->
    Dir = tmp(),
    W = fun(Path, Text) -> ok = filelib:ensure_dir(filename:join(Dir, Path)),
                           ok = file:write_file(filename:join(Dir, Path), Text) end,
    %% A broken rebar.config: rebar3's last line is then its coloured
    %% "===> Error reading file rebar.config: ..." one.
    W("rebar.config", "{erl_opts, [}.\n"),
    W("src/lim.app.src", "{application, lim, [{vsn, \"1\"}, {applications, [kernel, stdlib]}]}.\n"),
    W("src/lim.erl", "-module(lim).\n-export([f/0]).\nf() -> ok.\n"),
    W("bench/lim_bench.erl", "-module(lim_bench).\n-export([benchmarks/0]).\n"
                             "benchmarks() -> [#{name => \"f\", runner => fun() -> lim:f() end}].\n"),
    Git = fun(Args) -> {0, _} = beamlab_test_util:port_output(
                                  open_port({spawn_executable, os:find_executable("git")},
                                            [{args, ["-C", Dir | Args]}, exit_status, stderr_to_stdout, binary,
                                             {env, [{"GIT_AUTHOR_NAME", "t"}, {"GIT_AUTHOR_EMAIL", "t@example.com"},
                                                    {"GIT_COMMITTER_NAME", "t"}, {"GIT_COMMITTER_EMAIL", "t@example.com"}]}]),
                                  30000) end,
    _ = Git(["init", "-q"]),
    _ = Git(["add", "."]),
    _ = Git(["commit", "-q", "-m", "broken"]),
    W("rebar.config", "{erl_opts, []}.\n"),
    %% Colours as on a terminal: rebar3 colours unless told not to.
    R = #{code := Code, err := Err} = cli(["check", "--against", "HEAD", "--rounds", "4", "--alpha", "0.2"],
                                          #{dir => Dir, env => [{"TERM", "xterm-256color"}, {"NO_COLOR", false},
                                                                {"REBAR_COLOR", "high"}]}),
    ct:log("~ts", [Err]),
    ?assertEqual(1, Code),
    ?assert(has(Err, "rebar3 exited with status 1: ")),
    ?assert(has(Err, "Error reading file rebar.config")),
    ?assertEqual(nomatch, binary:match(Err, <<"\e">>)),
    _ = R,
    ok.

%% What ends the VM before any Erlang code runs is said by the launcher
%% in one line, exit 1: a deleted working directory ("init terminating in
%% do_boot" twice), `ulimit -n 16' ("Failed to create sig_suspend pipe",
%% "Aborted", exit 134). Variant: 32 descriptors; 64 still runs.
launcher_checks_environment(_Config) ->
    Dir = tmp(),
    Esc = beamlab_test_util:escript(),
    Sh = fun(Script) -> sh(Dir, Script) end,
    Gone = filename:join(Dir, "gone"),
    {1, Out1} = Sh("mkdir '" ++ Gone ++ "' && cd '" ++ Gone ++ "' && rmdir '" ++ Gone ++ "' && exec '" ++ Esc
                   ++ "' ok. -d 20 -s 1"),
    ?assert(has(Out1, "beamlab: cwd deleted")),
    ?assertNot(has(Out1, "do_boot")),
    [begin
         {1, Out} = Sh("ulimit -n " ++ N ++ " && exec '" ++ Esc ++ "' ok. -d 20 -s 1"),
         ?assert(has(Out, "beamlab: ulimit -n < 64")),
         ?assertNot(has(Out, "Aborted")),
         ?assertNot(has(Out, "sig_suspend"))
     end || N <- ["16", "32"]],
    {0, _} = Sh("ulimit -n 64 && exec '" ++ Esc ++ "' ok. -d 20 -s 1"),
    %% The deleted directory: beamlab's own line, and before it only the
    %% notice of the shell the `#!' line starts (dash prints it while it
    %% initialises, before any line of the script).
    Lines1 = [L || L <- binary:split(Out1, <<"\n">>, [global, trim_all])],
    ?assertEqual(<<"beamlab: cwd deleted">>, lists:last(Lines1)),
    ?assert(lists:all(fun(L) -> has(L, "getcwd() failed") end, lists:droplast(Lines1))),
    ok.

%% `sh -c Script' in Dir: its exit status and output (both streams).
sh(Dir, Script) ->
    Port = open_port({spawn_executable, "/bin/sh"},
                     [{args, ["-c", Script]}, {cd, Dir}, exit_status, stderr_to_stdout, binary]),
    beamlab_test_util:port_output(Port, 120000).

%% `ulimit -v' too small for the VM (it reserves about 1.3 GB of address
%% space: a 1 GB literal carrier, the JIT, thread stacks): the launcher
%% boots it once, quietly, and says so in one line, exit 1, instead of the
%% emulator's `erts_mmap: Failed to create super carrier' lines or a
%% std::bad_alloc abort (#34-13). Whatever the command, even a usage
%% mistake (it cannot be parsed without the VM); a limit the VM can live
%% with still runs.
launcher_address_space(_Config) ->
    Dir = tmp(),
    Esc = beamlab_test_util:escript(),
    Sh = fun(Script) -> sh(Dir, Script) end,
    [begin
         {1, Out} = Sh("ulimit -v " ++ V ++ " && exec '" ++ Esc ++ "' " ++ Args),
         ?assertEqual(iolist_to_binary(["beamlab: ulimit -v ", V, " too low\n"]), Out)
     end || {V, Args} <- [{"200000", "ok. -d 20 -s 1 --save r.json"}, {"600000", "--version"},
                          {"200000", "--no-such-option"}, {"100000", "amqp -x 0 -y 0"}]],
    ?assertNot(filelib:is_file(filename:join(Dir, "r.json"))),
    {0, _} = Sh("ulimit -v 8000000 && exec '" ++ Esc ++ "' ok. -d 20 -s 1 --save r.json"),
    ?assert(filelib:is_regular(filename:join(Dir, "r.json"))),
    ok.
