-module(prop_beamlab_intervals).
%% Issue #35: no output of any command shows an interval below zero for a
%% positive quantity, a change below -100%, or an interval (a ±0%) from
%% one or two samples. Checked over crafted documents (skewed positive
%% samples, 1 to 8 per benchmark, the shapes of run, suite and matrix
%% documents, through the JSON boundary as a saved file is) and the
%% synthetic documents of every kind in beamlab_results_fixtures, in every
%% format: text (the generic, run, suite and matrix tables), JSON, CSV,
%% Markdown, github-bigger/smaller, bencher, and `compare' and history in
%% text, Markdown, CSV and JSON, and the report page's model (its
%% benchmarks, matrix cells, comparison and history trend); runs with a
%% load finding (the load-aware verdicts, #35) as well as quiet ones. No
%% CSV has a `±' column: intervals are their low and high bounds; one
%% value has no sd or cv (empty); a `~' between runs says what it could
%% have seen (`detectable') in text, Markdown and CSV alike.
%%
%% Real saved results too (test/fixtures/results: run with 1, 2 and 5
%% samples, suite, a ping_pong sweep, matrix -n 1 and -n 3, check, amqp,
%% profile, watch, made by the built escript on a loaded 2-core machine):
%% each in every format through beamlab_render_view (the table behind
%% `--format' and beamlab:format/3), compared with and without another
%% run of its kind (compare, history, the report's model), and reshaped:
%% every benchmark's samples replaced by crafted ones (zeros among them:
%% a rate with an idle second), its statistics recomputed.
-include_lib("proper/include/proper.hrl").
-include_lib("eunit/include/eunit.hrl").

-export([prop_no_impossible_interval/0, prop_no_impossible_comparison/0, prop_real_reshaped/0,
         prop_check_detectable/0]).

%%--------------------------------------------------------------------
%% Generators

%% Log-normal with a large spread: three such values give a Student
%% interval far below zero (the issue's `-35.69 .. 61.03').
samples() ->
    ?LET({Scale, Zs}, {oneof([float(1.0e-3, 10.0), float(10.0, 1.0e7)]),
                       ?LET(N, range(1, 8), vector(N, float(-2.5, 2.5)))},
         %% Distinct values: three equal samples honestly have a ±0% interval.
         [Scale * math:exp(Z) * (1 + I / 1000) || {I, Z} <- lists:zip(lists:seq(1, length(Zs)), Zs)]).

%% Non-negative samples, sometimes with a zero (a rate's second in which
%% nothing happened: an amqp run's `sent' printed ±315% from one).
samples_with_zero() ->
    ?LET({S, Zero}, {samples(), frequency([{3, false}, {1, true}])},
         case {Zero, S} of
             {true, [_, _ | _]} -> [0.0 | tl(S)];
             _ -> S
         end).

unit() -> oneof([<<"ns">>, <<"us">>, <<"ms">>, <<"iterations">>, <<"msg/s">>, <<"bytes">>, <<"ops/s">>]).
better() -> oneof([higher, lower]).
kind() -> oneof([bench, suite, matrix]).

doc() ->
    ?LET({Kind, Unit, Better, Sets}, {kind(), unit(), better(), ?LET(N, range(1, 3), vector(N, samples_with_zero()))},
         build(Kind, Unit, Better, Sets)).

%%--------------------------------------------------------------------
%% Properties

prop_no_impossible_interval() ->
    ?FORALL(Doc, doc(),
            begin
                Outputs = outputs(Doc),
                Bad = [{F, Why} || {F, Out} <- Outputs, Why <- problems(F, Out)],
                ?WHENFAIL(io:format("~p~n", [Bad]), Bad =:= [])
            end).

prop_no_impossible_comparison() ->
    ?FORALL({Kind, Unit, Better, Sets, Loaded}, {kind(), unit(), better(), vector(4, samples_with_zero()),
                                                 vector(4, boolean())},
            begin
                Docs = [loaded(L, build(Kind, Unit, Better, [S])) || {L, S} <- lists:zip(Loaded, Sets)],
                Runs = [{iolist_to_binary(["r", integer_to_list(I)]), D#{started_at := started(I)}}
                        || {I, D} <- lists:zip(lists:seq(1, 4), Docs)],
                Outputs = compare_outputs(Runs),
                Bad = [{F, Why} || {F, Out} <- Outputs, Why <- problems(F, Out)] ++ detectable_problems(Runs),
                ?WHENFAIL(io:format("~p~n", [Bad]), Bad =:= [])
            end).

%% #35: a check's paired `~' (`unchanged') says what its rounds could
%% have seen (`detectable', beamlab_stats_paired) in text, Markdown and
%% the CSV and the github-* formats' `extra'; and none of its outputs
%% (every `--format') shows an impossible interval. Crafted rounds:
%% 8 to 30, noise from 0.1% to 30%, no change or +20%, through the JSON
%% boundary as a saved check is.
prop_check_detectable() ->
    ?FORALL({Base, Noise, Shift}, {?LET(N, range(8, 30), vector(N, float(0.5, 2.0))),
                                   float(0.001, 0.3), oneof([0.0, 0.2])},
            begin
                Doc = check_doc(Base, Noise, Shift),
                Text = beamlab_render_check:text(Doc, #{unicode => true}),
                Md = beamlab_render_check:markdown(Doc),
                Csv = beamlab_render_csv:render(Doc),
                %% (text and Markdown name it for the measures with noise;
                %% the CSV for every entry)
                All = [{M, D} || #{metric := M,
                                   extra := #{<<"paired">> := #{<<"verdict">> := <<"unchanged">>,
                                                                <<"detectable">> := D}}} <- maps:get(benchmarks, Doc),
                                 is_number(D)],
                Ds = [D || {M, D} <- All, lists:member(M, [<<"time">>, <<"cpu">>])],
                Shown = fun(Out, D) -> binary:match(unicode:characters_to_binary(Out),
                                                    list_to_binary(beamlab_format_units:detectable(D))) =/= nomatch
                        end,
                {ok, [Header | Rows]} = beamlab_csv_decoder:decode(Csv),
                InCsv = fun(D) -> lists:any(fun(Row) -> lists:member({<<"detectable">>, D},
                                                                     [{H, field_number(V)} || {H, V} <- lists:zip(Header, Row)])
                                            end, Rows)
                        end,
                {ok, Github} = beamlab_render_view:render(Doc, 'github-smaller', #{unicode => true}),
                Bad = [{F, Why} || {F, Out} <- [{text, Text}, {text, Md}, {csv, Csv} | view_outputs(Doc)],
                                   Why <- problems(F, Out)]
                    ++ [{not_shown, F, D} || D <- Ds, {F, Out} <- [{text, Text}, {markdown, Md}, {github, Github}],
                                             not Shown(Out, D)]
                    ++ [{not_in_csv, D} || {_, D} <- All, not InCsv(D)],
                ?WHENFAIL(io:format("~p~n~ts~n", [Bad, Text]), Bad =:= [])
            end).

%% A check of one benchmark over the rounds: time per iteration `Base'
%% on the base side, `Base' x e^(Shift + noise) on the head, as
%% beamlab_project_check makes it.
check_doc(Base, Noise, Shift) ->
    Side = fun(Ns) ->
                   D0 = beamlab_result:new(bench, #{command => [], started_at => started(1)}),
                   {ok, {1, beamlab_result:add_benchmarks(
                              D0, [beamlab_result:benchmark(<<"work">>, [1],
                                                            #{params => #{module => m_bench},
                                                              extra => #{status => ok, iteration_ns => Ns,
                                                                         per_iteration => #{reductions => 100,
                                                                                            words => 0}}})])}}
           end,
    Rounds = [#{index => I, order => [base, head], base => Side(1000 * B),
                head => Side(1000 * B * math:exp(Shift + Noise * math:sin(7 * I)))}
              || {I, B} <- lists:zip(lists:seq(1, length(Base)), Base)],
    Commit = #{commit => <<"c">>, short => <<"c">>, date => started(1), subject => <<"s">>},
    Opts = #{root => ".", against => "HEAD~1", bench => "bench", rounds => length(Base), gate => [time],
             threshold => 0.05, alpha => 0.01, command => ["check"], main => fun(_) -> {erlang, node, []} end,
             params => #{duration => 100, samples => 3, warmup => 1, project => Commit}},
    Doc = beamlab_project_check:document(#{rounds => Rounds, interrupted => false}, Commit#{ref => <<"HEAD~1">>},
                                         Commit, started(1), Opts),
    {ok, Json} = beamlab_json:decode(iolist_to_binary(beamlab_result:to_json(Doc))),
    {ok, Loaded} = beamlab_result:from_json(Json),
    Loaded.

%%--------------------------------------------------------------------
%% Documents

build(Kind, Unit, Better, Sets) ->
    Names = [iolist_to_binary(["b", integer_to_list(I)]) || I <- lists:seq(1, length(Sets))],
    [{_, BaseSamples} | _] = Named = lists:zip(Names, Sets),
    Benches = [bench(Kind, Name, Samples, Unit, Better, Name =:= hd(Names), BaseSamples)
               || {Name, Samples} <- Named],
    Doc0 = beamlab_result:new(Kind, #{command => [<<"beamlab">>], started_at => started(1),
                                      params => params(Kind)}),
    Doc1 = beamlab_result:add_benchmarks(Doc0, Benches),
    Doc = case Kind of
              matrix -> beamlab_result:set(extra, #{configs => []}, Doc1);
              _ -> Doc1
          end,
    %% Through the one JSON boundary, as a saved and loaded file.
    {ok, Json} = beamlab_json:decode(iolist_to_binary(beamlab_result:to_json(Doc))),
    {ok, Loaded} = beamlab_result:from_json(Json),
    Loaded.

%% A run measured on a loaded machine carries the engine's pre-flight
%% finding (a matrix: its repetitions', beamlab_env_matrix).
loaded(false, Doc) ->
    Doc;
loaded(true, Doc) ->
    beamlab_result:add_findings(Doc, [beamlab_result:finding(load_high, warning, <<"Machine is overloaded">>,
                                                             <<"1-minute load average 9.00 on 2 cores">>,
                                                             <<"stop them">>, #{})]).

params(bench) -> #{mode => continuous, sample => #{duration_ms => 100}};
params(suite) -> #{};
params(matrix) -> #{baseline => <<"b1">>, repeat => 3}.

bench(Kind, Name, Samples, Unit, Better, IsBase, BaseSamples) ->
    Cmp = case IsBase of
              true -> #{};
              false -> #{comparison => beamlab_stats:compare(BaseSamples, Samples, #{better => Better})}
          end,
    Opts = Cmp#{unit => Unit, better => Better, metric => <<"time">>,
                group => case Kind of matrix -> Name; _ -> <<"g">> end,
                params => #{concurrency => 1},
                extra => case Kind of
                             matrix -> #{inner_benchmark => <<"x">>, schedulers_online => 2};
                             bench -> #{baseline => IsBase, rel => 1.0};
                             suite -> #{check => <<"ok">>}
                         end},
    beamlab_result:benchmark(Name, Samples, Opts).

started(I) ->
    iolist_to_binary(io_lib:format("2026-11-~2..0bT00:00:00Z", [I])).

%%--------------------------------------------------------------------
%% Outputs

outputs(#{kind := Kind} = Doc) ->
    Own = case Kind of
              bench -> [{text, beamlab_render_bench:render(Doc, #{unicode => U, report => extended})}
                        || U <- [true, false]];
              suite -> [{text, beamlab_render_suite:render(Doc, #{unicode => U})} || U <- [true, false]];
              matrix -> [{text, beamlab_render_matrix:render(Doc, #{unicode => U})} || U <- [true, false]]
          end,
    Own ++ [{text, beamlab_render_text:render(Doc, #{unicode => true})} | view_outputs(Doc)].

%% Every `--format' of a document of any kind, as the command line
%% prints it (beamlab_render_view), the text view in both alphabets.
view_outputs(Doc) ->
    [{tag(F), Out} || F <- beamlab_render_view:formats(), U <- [true, false],
                      F =:= text orelse U,
                      {ok, Out} <- [beamlab_render_view:render(Doc, F, #{unicode => U})]].

tag('github-bigger') -> github;
tag('github-smaller') -> github;
tag(F) -> F.

compare_outputs(Runs) ->
    runs_outputs(Runs) ++ lists:append([outputs(D) || {_, D} <- Runs]).

%% compare and history in every format, and the report's model.
runs_outputs(Runs) ->
    {ok, Cmp} = beamlab_result_compare:compare(Runs),
    {ok, H} = beamlab_result_history:history(Runs, #{}),
    [{text, beamlab_render_compare:render(Cmp, F)} || F <- [text, markdown]]
        ++ [{csv, beamlab_render_compare:render(Cmp, csv)},
            {compare_json, beamlab_render_compare:render(Cmp, json)}]
        ++ [{text, beamlab_render_history:render(H, F, #{})} || F <- [text, markdown]]
        ++ [{csv, beamlab_render_history:render(H, csv, #{})},
            {history_json, beamlab_render_history:render(H, json, #{})}]
        ++ [{report_model, beamlab_json:encode(beamlab_report_html:model(Runs))},
            {report_model, beamlab_json:encode(beamlab_report_html:model(Runs, #{history => H}))}].

%% #35: every `~' between runs that could have seen something says so in
%% every format that prints it: the comparison's and the history's
%% `detectable' in text and Markdown (both ways) and in the CSV.
detectable_problems(Runs) ->
    {ok, Cmp} = beamlab_result_compare:compare(Runs),
    {ok, H} = beamlab_result_history:history(Runs, #{}),
    Shown = fun(Out, D) -> binary:match(unicode:characters_to_binary(Out),
                                        list_to_binary(beamlab_format_units:detectable(D))) =/= nomatch end,
    InCsv = fun(Out, D) ->
                    {ok, [Header | Rows]} = beamlab_csv_decoder:decode(iolist_to_binary(Out)),
                    lists:any(fun(Row) -> lists:any(fun({<<"detectable">>, V}) ->
                                                            is_number(field_number(V))
                                                                andalso abs(field_number(V) - D) =< 1.0e-9 * D;
                                                       (_) -> false
                                                    end, lists:zip(Header, Row))
                              end, Rows)
            end,
    [{compare_detectable_not_shown, F, D}
     || #{cells := Cs} <- maps:get(rows, Cmp), #{verdict := no_difference, detectable := D} <- Cs, is_number(D),
        {F, Out} <- [{text, beamlab_render_compare:render(Cmp, text)},
                     {markdown, beamlab_render_compare:render(Cmp, markdown)}],
        not Shown(Out, D)]
        ++ [{compare_detectable_not_in_csv, D}
            || #{cells := Cs} <- maps:get(rows, Cmp), #{verdict := no_difference, detectable := D} <- Cs, is_number(D),
               not InCsv(beamlab_render_compare:render(Cmp, csv), D)]
        ++ [{history_detectable_not_shown, F, D}
            || #{changes := Cs} <- maps:get(trends, H), #{verdict := no_difference, detectable := D} <- Cs,
               {F, Out} <- [{text, beamlab_render_history:render(H, text, #{})},
                            {markdown, beamlab_render_history:render(H, markdown, #{})}],
               not Shown(Out, D)]
        ++ [{history_detectable_not_in_csv, D}
            || #{changes := Cs} <- maps:get(trends, H), #{verdict := no_difference, detectable := D} <- Cs,
               not InCsv(beamlab_render_history:render(H, csv, #{}), D)].

%%--------------------------------------------------------------------
%% Checks: every sample is positive, so nothing may go below zero.

problems(Format, Out) ->
    Bin = unicode:characters_to_binary(Out),
    text_problems(Bin) ++ format_problems(Format, Bin).

text_problems(Bin) ->
    %% A ±0% (or +-0%) is an interval of zero width: from one sample. (A
    %% cell that says it holds 3 or more, `n=11', may honestly be one:
    %% a check's reductions, the same count every round.)
    [{zero_width, Bin} || Cell <- binary:split(Bin, [<<"\n">>, <<"\",\"">>], [global]),
                          re:run(Cell, <<"(±|\\+-|\\+/-) ?0(\\.0+)?%"/utf8>>, [unicode]) =/= nomatch,
                          re:run(Cell, <<"n=([3-9]|[1-9][0-9]+)\\b">>) =:= nomatch]
    %% A symmetric ± beyond 100%: its lower side is below zero.
    ++ [{plus_minus_beyond_100, P} || {match, Ps} <- [re:run(Bin, <<"(?:±|\\+-|\\+/-) ?([0-9]+(?:\\.[0-9]+)?)%"/utf8>>,
                                                             [global, unicode, {capture, all_but_first, binary}])],
                                      [P] <- Ps, binary_to_number(P) > 100.0]
    %% A percentage below -100%: a change, or the lower side of a mean's
    %% interval, below zero.
    ++ [{below_minus_100, P} || {match, Ps} <- [re:run(Bin, <<"-([0-9]+(?:\\.[0-9]+)?)%">>,
                                                       [global, {capture, all_but_first, binary}])],
                                [P] <- Ps, binary_to_number(P) > 100.0]
    %% An interval of values whose lower end is negative: `[-35.7 ms, ...]', `-35.69 .. 61.03'.
    %% (Changes are negative when faster: only values with a unit count.)
    %% (Possessive: a JSON change interval `[-8.8e-4,11.0]' is no value
    %% with a unit: its exponent's `e' must not be read as one.)
    ++ [{negative_bound, Bin} || re:run(Bin, <<"\\[-[0-9.]++(e[-+]?[0-9]+)?+ ?[A-Za-z]|(^|[ (])-[0-9.]++(e[-+]?[0-9]+)?+ \\.\\. ">>,
                                        [multiline]) =/= nomatch].

format_problems(json, Bin) ->
    {ok, #{<<"benchmarks">> := Bs}} = beamlab_json:decode(Bin),
    lists:append([stats_problems(maps:get(<<"stats">>, B, #{}))
                   ++ change_problems(maps:get(<<"comparison">>, B, #{})) || B <- Bs]);
format_problems(csv, Bin) ->
    {ok, [Header | Rows]} = beamlab_csv_decoder:decode(Bin),
    Idx = fun(Col) -> index(Col, Header) end,
    [{csv_plus_minus_column, H} || H <- Header, is_binary(H),
                                   re:run(H, <<"±|\\+-|\\+/-"/utf8>>, [unicode]) =/= nomatch]
    ++ [{csv_below_zero, Col, V} || Row <- Rows, Col <- [<<"ci_low">>, <<"change_ci_low">>, <<"CI low">>],
                                 I <- [Idx(Col)], I > 0, V <- [field_number(lists:nth(I, Row))], is_number(V),
                                 V < limit(Col)]
    %% One value has no spread: its sd and cv are empty, never 0.0.
    ++ [{csv_spread_from_one, Row} || Idx(<<"sd">>) > 0, Row <- Rows,
                                      field_number(lists:nth(Idx(<<"n">>), Row)) =:= 1,
                                      lists:nth(Idx(<<"sd">>), Row) =/= <<>>
                                          orelse lists:nth(Idx(<<"cv">>), Row) =/= <<>>]
    %% What a `~' could have seen: a positive fraction beside `no_difference'
    %% only (#35; the verdict follows it).
    ++ [{csv_detectable, Row} || Row <- Rows, {I, <<"detectable">>} <- lists:zip(lists:seq(1, length(Header)), Header),
                                 D <- [lists:nth(I, Row)], D =/= <<>>,
                                 not (is_number(field_number(D)) andalso field_number(D) > 0
                                      andalso lists:nth(I + 1, Header) =:= <<"verdict">>
                                      andalso lists:member(lists:nth(I + 1, Row),
                                                           [<<"no_difference">>, <<"unchanged">>]))];
format_problems(github, Bin) ->
    {ok, Entries} = beamlab_json:decode(Bin),
    [{github, E} || E <- Entries,
                    binary:match(maps:get(<<"extra">>, E, <<>>), <<"of the mean -">>) =/= nomatch
                        orelse symmetric_below_zero(E)];
format_problems(bencher, Bin) ->
    {ok, Bmf} = beamlab_json:decode(Bin),
    [{bencher, M} || {_, Ms} <- maps:to_list(Bmf), {_, M} <- maps:to_list(Ms),
                     maps:get(<<"lower_value">>, M, 0) < 0];
format_problems(compare_json, Bin) ->
    {ok, #{<<"rows">> := Rows}} = beamlab_json:decode(Bin),
    lists:append([change_problems(C) ++ interval_problems(maps:get(<<"ci_mean">>, C, null), C)
                  || #{<<"cells">> := Cs} <- Rows, C <- Cs]);
format_problems(history_json, Bin) ->
    {ok, #{<<"trends">> := Ts}} = beamlab_json:decode(Bin),
    lists:append([change_problems(C) || #{<<"changes">> := Cs} <- Ts, C <- Cs])
        ++ lists:append([interval_problems(maps:get(<<"ci">>, P, null), P)
                         || #{<<"points">> := Ps} <- Ts, P <- Ps, is_map(P)]);
format_problems(report_model, Bin) ->
    {ok, #{<<"runs">> := Runs} = M} = beamlab_json:decode(Bin),
    lists:append([interval_problems(maps:get(<<"ci">>, B, null), B) || #{<<"benchmarks">> := Bs} <- Runs, B <- Bs])
        ++ lists:append([interval_problems(maps:get(<<"ci">>, C, null), C)
                         ++ change_problems(#{<<"ci">> => maps:get(<<"change_ci">>, C, null)})
                         || #{<<"matrix">> := #{<<"rows">> := Rows}} <- Runs, #{<<"cells">> := Cs} <- Rows, C <- Cs])
        ++ case maps:get(<<"history">>, M, null) of
               #{<<"trends">> := Ts} ->
                   %% a point: [run, mean, low, high, n] (no interval: [run, mean, n])
                   [{history_point_below_zero, P} || #{<<"points">> := Ps} <- Ts, P = [_, _, Lo, _, _] <- Ps,
                                                     is_number(Lo), Lo < 0]
                       ++ lists:append([change_problems(C) || #{<<"changes">> := Cs} <- Ts, C <- Cs]);
               _ -> []
           end;
format_problems(_, _) ->
    [].

%% A `± h' range (symmetric) wider than the value reads as reaching below zero.
symmetric_below_zero(#{<<"range">> := <<"± "/utf8, H/binary>>, <<"value">> := V}) ->
    binary_to_number(H) > V;
symmetric_below_zero(_) ->
    false.

stats_problems(#{<<"n">> := N} = S) when N < 3 ->
    [{interval_from_too_few, S} || is_map_key(<<"ci_mean">>, S) orelse is_map_key(<<"ci_median">>, S)];
stats_problems(S) ->
    interval_problems(maps:get(<<"ci_mean">>, S, null), S).

interval_problems([Lo, _], Ctx) when Lo < 0 -> [{below_zero, Ctx}];
interval_problems(_, _) -> [].

change_problems(#{<<"ci">> := [Lo, _]} = C) when Lo < -1 -> [{change_below_minus_100, C}];
change_problems(_) -> [].

binary_to_number(B) ->
    try binary_to_float(B)
    catch error:badarg -> float(binary_to_integer(B))
    end.

%% A CSV field (the decoder gives text) as a number, when it is one.
field_number(B) when is_binary(B) ->
    try binary_to_number(B)
    catch error:badarg -> B
    end;
field_number(V) ->
    V.

limit(<<"ci_low">>) -> 0;
limit(_) -> -1.

index(X, L) -> index(X, L, 1).
index(_, [], _) -> 0;
index(X, [X | _], I) -> I;
index(X, [_ | T], I) -> index(X, T, I + 1).

%%--------------------------------------------------------------------
%% The fixtures of every kind (`real' documents in shape: every section,
%% findings, telemetry) in every format.

%% (Its own timeout, as every test here that renders in every format: the
%% 5 s default is close at a load average of 30.)
fixtures_test_() ->
    {timeout, 60, fun fixtures/0}.

fixtures() ->
    Docs = [beamlab_results_fixtures:result(K, #{factor => F})
            || K <- [<<"bench">>, <<"suite">>, <<"matrix">>, <<"amqp">>], F <- [1.0, 1.3]],
    Bad = [{F, Why} || D <- Docs, {F, Out} <- [{text, beamlab_render_text:render(D, #{unicode => true})}
                                               | view_outputs(D)],
                       Why <- problems(F, Out)],
    ?assertEqual([], Bad).

%% The issue's own examples, as they would be printed now.
issue_examples_test() ->
    %% `suite fib -n 3 --format github-smaller': three skewed repetitions.
    Doc = build(suite, <<"ms">>, lower, [[2.1, 3.0, 31.5]]),
    [] = [P || {F, Out} <- outputs(Doc), P <- problems(F, Out)],
    %% `matrix -n 1': no ±0%, "no interval".
    One = build(matrix, <<"ops/s">>, higher, [[100.0], [120.0]]),
    Text = iolist_to_binary(beamlab_render_matrix:render(One, #{unicode => true})),
    ?assertEqual(nomatch, binary:match(Text, <<"±0"/utf8>>)),
    ?assertNotEqual(nomatch, binary:match(Text, <<"no interval">>)).

%%--------------------------------------------------------------------
%% Real saved results (test/fixtures/results)

real_docs() ->
    Files = filelib:wildcard(filename:join([beamlab_test_util:root(), "test", "fixtures", "results", "*.json"])),
    [begin
         {ok, Doc} = beamlab_result:load(F),
         {filename:basename(F, ".json"), Doc}
     end || F <- Files].

%% Every kind that carries intervals has a real result here.
real_kinds_test() ->
    Kinds = lists:usort([K || {_, #{kind := K}} <- real_docs()]),
    ?assertEqual([amqp, bench, check, matrix, profile, suite, watch], Kinds).

%% The files are read once. EUnit's timeout on a list of tests bounds the
%% whole list and leaves each test its 5 s default: each has its own.
real_results_test_() ->
    {setup, fun real_docs/0,
     fun(All) ->
             [{Name, {timeout, 60, fun() -> ?assertEqual([], real_problems(Name, Doc, All)) end}}
              || {Name, Doc} <- All]
     end}.

real_problems(Name, #{kind := Kind} = Doc, All) ->
    Own = [{F, Why} || {F, Out} <- view_outputs(Doc), Why <- problems(F, Out)],
    %% with itself, and with every other saved run of its kind
    Others = [D || {N, #{kind := K} = D} <- All, K =:= Kind, N =/= Name],
    Sets = [[Doc, Doc] | [[Doc, O] || O <- Others]],
    Cmp = [{F, Why} || Set <- Sets, Runs <- [runs(Set)], {F, Out} <- runs_outputs(Runs),
                       Why <- problems(F, Out)],
    Own ++ Cmp.

runs(Docs) ->
    [{iolist_to_binary(["r", integer_to_list(I)]), D#{started_at := started(I)}}
     || {I, D} <- lists:zip(lists:seq(1, length(Docs)), Docs)].


%% A real document of any kind with every benchmark's samples replaced
%% by crafted ones (statistics and comparisons recomputed): the kind's
%% own views meet skewed samples, one or two of them, and zeros.
prop_real_reshaped() ->
    Docs = real_docs(),
    ?FORALL({I, Sets}, {range(1, length(Docs)), vector(6, samples_with_zero())},
            begin
                {Name, Doc} = lists:nth(I, Docs),
                New = reshaped(Doc, Sets),
                Bad = [{Name, F, Why} || {F, Out} <- view_outputs(New) ++ runs_outputs(runs([Doc, New])),
                                         Why <- problems(F, Out)],
                ?WHENFAIL(io:format("~p~n", [Bad]), Bad =:= [])
            end).

reshaped(#{benchmarks := Bs} = Doc, Sets) ->
    Cycle = fun(J) -> lists:nth(1 + (J rem length(Sets)), Sets) end,
    New = [B#{samples => S, stats => beamlab_stats:summary(S),
              sample_info => #{count => length(S), kept => length(S), method => all}}
           || {J, B} <- lists:zip(lists:seq(1, length(Bs)), Bs), S <- [Cycle(J)]],
    Base = hd(New ++ [#{samples => []}]),
    Doc#{benchmarks := [case B of
                            #{comparison := _, better := Better} when length(map_get(samples, Base)) > 0 ->
                                B#{comparison := beamlab_stats:compare(map_get(samples, Base), map_get(samples, B),
                                                                       #{better => Better})};
                            _ -> B
                        end || B <- New]}.

%%--------------------------------------------------------------------
%% EUnit wrappers

check(Prop, N) ->
    ?assertEqual(true, proper:quickcheck(Prop, [{numtests, N}, {to_file, user}])).

%% (A timeout each: on the list, it would leave each property the 5 s
%% default, which the comparisons' took 4.2 s of at a load average of 23.)
intervals_props_test_() ->
    [{timeout, 120, ?_test(check(prop_no_impossible_interval(), 150))},
     {timeout, 120, ?_test(check(prop_no_impossible_comparison(), 60))},
     {timeout, 120, ?_test(check(prop_check_detectable(), 60))}].

%% (Its own timeout, few shrinks: each case renders a real document in
%% every format and compares it, a second or two on a loaded machine.)
real_reshaped_test_() ->
    {timeout, 300,
     ?_assertEqual(true, proper:quickcheck(prop_real_reshaped(), [{numtests, 25}, {max_shrinks, 10},
                                                                  {to_file, user}]))}.
