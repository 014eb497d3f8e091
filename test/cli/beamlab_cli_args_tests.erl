-module(beamlab_cli_args_tests).
-include_lib("eunit/include/eunit.hrl").

opts() ->
    [#{name => concurrency, short => "c", long => "concurrency", type => pos_integer, default => 1},
     #{name => duration, short => "d", long => "duration", type => pos_integer, default => 1000},
     #{name => pa, short => "pa", type => string, multi => true},
     #{name => init_runner, long => "init_runner", type => string, attach => true},
     #{name => loop, short => "l", long => "loop", type => quantity},
     #{name => report, short => "r", long => "report", type => {enum, [basic, extended, full]}},
     #{name => sizes, long => "sizes", type => {list, non_neg_integer}},
     #{name => cv, long => "cv", type => percent}
     | beamlab_cli_args:common_options()].

parse(Args) ->
    beamlab_cli_args:parse(Args, opts()).

msg(Args) ->
    {error, M} = parse(Args),
    lists:flatten(io_lib:format("~ts", [M])).

defaults_test() ->
    {ok, P} = parse(["ok."]),
    ?assertEqual(["ok."], maps:get(args, P)),
    ?assertEqual(1, beamlab_cli_args:get(concurrency, P)),
    ?assertEqual(text, beamlab_cli_args:get(format, P)),
    ?assertEqual(undefined, beamlab_cli_args:get(save, P)),
    ?assertEqual(fallback, beamlab_cli_args:get(loop, P, fallback)).

values_test() ->
    {ok, P} = parse(["-c", "4", "--duration=250", "-l", "10M", "-r", "full", "--sizes", "0, 10,100",
                     "--cv", "2%", "-pa", "a", "-pa", "b", "-v", "-v", "x."]),
    ?assertEqual(4, beamlab_cli_args:get(concurrency, P)),
    ?assertEqual(250, beamlab_cli_args:get(duration, P)),
    ?assertEqual(10000000, beamlab_cli_args:get(loop, P)),
    ?assertEqual(full, beamlab_cli_args:get(report, P)),
    ?assertEqual([0, 10, 100], beamlab_cli_args:get(sizes, P)),
    ?assertEqual(2, beamlab_cli_args:get(cv, P)),
    ?assertEqual(["a", "b"], beamlab_cli_args:get(pa, P)),
    ?assertEqual(2, beamlab_cli_args:get(verbose, P)),
    ?assertEqual(["x."], maps:get(args, P)).

quantity_suffixes_test() ->
    [?assertMatch({ok, #{opts := #{loop := N}}}, parse(["-l", S])) ||
        {S, N} <- [{"5", 5}, {"2K", 2000}, {"3m", 3000000}, {"1G", 1000000000}]].

attached_options_follow_their_code_test() ->
    {ok, P} = parse(["a.", "--init_runner", "1.", "b.", "c.", "--init_runner", "2."]),
    ?assertEqual([#{init_runner => "1."}, #{}, #{init_runner => "2."}], maps:get(arg_opts, P)),
    ?assertMatch("'--init_runner' applies to the code before it" ++ _, msg(["--init_runner", "1.", "a."])),
    ?assertMatch("'--init_runner' given twice" ++ _, msg(["a.", "--init_runner", "1.", "--init_runner", "2."])).

save_optional_path_test() ->
    {ok, P1} = parse(["ok.", "--save"]),
    ?assertEqual(auto, beamlab_cli_args:get(save, P1)),
    {ok, P2} = parse(["--save", "r.json", "ok."]),
    ?assertEqual("r.json", beamlab_cli_args:get(save, P2)),
    ?assertEqual(["ok."], maps:get(args, P2)),
    %% Code after --save is code, not a path.
    {ok, P3} = parse(["--save", "ok."]),
    ?assertEqual(auto, beamlab_cli_args:get(save, P3)),
    ?assertEqual(["ok."], maps:get(args, P3)),
    {ok, P4} = parse(["--save=out", "ok."]),
    ?assertEqual("out", beamlab_cli_args:get(save, P4)).

double_dash_ends_options_test() ->
    {ok, P} = parse(["-c", "2", "--", "suite", "-c", "3"]),
    ?assertEqual(["suite", "-c", "3"], maps:get(rest, P)),
    ?assertEqual(2, beamlab_cli_args:get(concurrency, P)).

bad_values_test() ->
    ?assertEqual("invalid value '0' for -c: expected a positive integer", msg(["-c", "0"])),
    ?assertEqual("invalid value '-5' for -d: expected a positive integer", msg(["-d", "-5"])),
    ?assertMatch("invalid value '0' for -l: expected a positive count" ++ _, msg(["-l", "0"])),
    ?assertMatch("invalid value 'x' for -l" ++ _, msg(["-l", "x"])),
    ?assertEqual("invalid value 'huge' for -r: expected one of basic, extended, full", msg(["-r", "huge"])),
    ?assertEqual("unknown option '-z'", msg(["-z"])),
    ?assertEqual("unknown option '--nope'", msg(["--nope"])),
    ?assertEqual("unknown option '--concurrent' (did you mean --concurrency?)", msg(["--concurrent", "1"])),
    ?assertMatch("option '-c' needs a value" ++ _, msg(["ok.", "-c"])).

negative_number_is_positional_without_option_test() ->
    {ok, P} = parse(["-1."]),
    ?assertEqual(["-1."], maps:get(args, P)).

help_lists_every_option_test() ->
    Help = lists:flatten(io_lib:format("~ts", [beamlab_cli_args:help(opts())])),
    [?assertNotEqual(nomatch, string:find(Help, S)) ||
        S <- ["-c, --concurrency N", "-pa VALUE", "--save [PATH]", "(default: 1000)"]].

%% A string default is printed as typed, without Erlang's quotes.
help_string_default_test() ->
    Help = lists:flatten(io_lib:format("~ts", [beamlab_cli_args:help(
                                                  [#{name => bench, long => "bench", type => string, default => "bench",
                                                     metavar => "DIR", help => "the directory"},
                                                   #{name => root, long => "root", type => string, default => <<"/">>,
                                                     help => "the root"}])])),
    ?assertNotEqual(nomatch, string:find(Help, "the directory (default: bench)")),
    ?assertNotEqual(nomatch, string:find(Help, "the root (default: /)")),
    ?assertEqual(nomatch, string:find(Help, "\"")).

parse_value_test() ->
    ?assertEqual({ok, [1, 2]}, beamlab_cli_args:parse_value({list, pos_integer}, "1,2")),
    ?assertMatch({error, _}, beamlab_cli_args:parse_value(pos_integer, "0")).

%% `fraction' (--cv, --rel-ci): erlperf's fractions, or a percentage
%% with its sign; a bare number of 1 or more is refused with a hint.
fraction_test() ->
    Opts = [#{name => cv, long => "cv", type => fraction}],
    Get = fun(V) -> {ok, P} = beamlab_cli_args:parse(["--cv", V], Opts),
                    beamlab_cli_args:get(cv, P) end,
    ?assertEqual(0.05, Get("0.05")),
    ?assertEqual(0.05, Get("5%")),
    ?assertEqual(0.005, Get("0.5%")),
    {error, Msg} = beamlab_cli_args:parse(["--cv", "5"], Opts),
    ?assertMatch({match, _}, re:run(Msg, "0.05 means 5%.*write 5%")),
    ?assertMatch({error, _}, beamlab_cli_args:parse(["--cv", "0"], Opts)),
    ?assertMatch({error, _}, beamlab_cli_args:parse(["--cv", "-1%"], Opts)),
    ?assertMatch({error, _}, beamlab_cli_args:parse(["--cv", "x"], Opts)).
