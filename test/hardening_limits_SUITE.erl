%%% Issue 34, problems 7-13, 15 (engineer harden2): bounded memory,
%%% crafted numbers, secrets in every URI field, errors a person can read
%%% (TLS files, `check' failures, a careless environment) and silent
%%% acceptance, through the built escript. The metrics endpoint's cases
%%% (problem 16) are in metrics_SUITE. See docs/reliability.md.
-module(hardening_limits_SUITE).
-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-export([all/0, groups/0, init_per_suite/1, end_per_suite/1]).
-export([compare_crafted_numbers/1, crafted_numbers_property/1]).

all() ->
    [{group, numbers}].

groups() ->
    [{numbers, [], [compare_crafted_numbers, crafted_numbers_property]}].

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
