%%% @doc Exported functions whose spec promises no error do not raise
%%% (#31): each is called on generated inputs its spec allows and must
%%% return a value of its return type.
%%%
%%% Covered:
%%% - every `format_error/1' of a module in src/ (the application's
%%%   modules, found, not listed), on arbitrary terms: its reasons'
%%%   shapes are its own, but whatever it is given it returns one line,
%%%   never raises (a reason passed up a layer it does not know is
%%%   printed, not turned into a crash);
%%% - the public rendering API `beamlab:format/2' over every machine
%%%   format (json, csv, markdown, github-bigger/smaller, bencher: the
%%%   renderers that read any kind's document) on generated documents:
%%%   `{ok, Text}' or `{error, R}' with a one-line reason (the text views
%%%   read each kind's own parameters: not drawn here);
%%% - every formatter of `beamlab_format_units' over the numbers its spec
%%%   allows (any integer or float: zero, negative, tiny, huge).
-module(prop_beamlab_cant_fail).

-include_lib("proper/include/proper.hrl").
-include_lib("eunit/include/eunit.hrl").

-export([prop_format_error_never_raises/0, prop_format_never_raises/0,
         prop_units_never_raise/0]).

%%--------------------------------------------------------------------
%% format_error/1 of every module

%% The application's modules that export format_error/1.
formatters() ->
    _ = application:load(beamlab),
    {ok, Mods} = application:get_key(beamlab, modules),
    [M || M <- lists:sort(Mods), {module, M} =:= code:ensure_loaded(M),
          erlang:function_exported(M, format_error, 1)].

%% Any term, and terms shaped as reasons are (a tagged tuple) with tags
%% the module does not know: its own tags take the payloads its spec
%% gives them, which a term drawn at random is not.
reason() ->
    Tag = ?SUCHTHAT(A, atom(), not lists:member(A, known_tags())),
    oneof([any(), Tag, {Tag, any()}, {Tag, any(), any()}, {Tag, any(), any(), any()}]).

%% The tags of every module's reasons (the first element of a tuple
%% pattern of a format_error/1 clause), read from the compiled modules.
known_tags() ->
    case persistent_term:get({?MODULE, tags}, undefined) of
        undefined ->
            Tags = lists:usort(lists:append([tags(M) || M <- formatters()])),
            persistent_term:put({?MODULE, tags}, Tags),
            Tags;
        Tags -> Tags
    end.

tags(M) ->
    {ok, {_, [{abstract_code, {raw_abstract_v1, Forms}}]}} = beam_lib:chunks(code:which(M), [abstract_code]),
    [T || {function, _, format_error, 1, Cs} <- Forms, {clause, _, [P], _, _} <- Cs,
          T <- case P of
                   {tuple, _, [{atom, _, A} | _]} -> [A];
                   {match, _, {tuple, _, [{atom, _, A} | _]}, _} -> [A];
                   {match, _, _, {tuple, _, [{atom, _, A} | _]}} -> [A];
                   {atom, _, A} -> [A];
                   _ -> []
               end].

prop_format_error_never_raises() ->
    Mods = formatters(),
    ?FORALL({M, R}, {oneof(Mods), reason()},
            ?WHENFAIL(io:format("~p:format_error(~P)~n", [M, R, 12]),
                      one_line(catch_line(M, R)))).

catch_line(M, R) ->
    try M:format_error(R)
    catch C:E -> {raised, C, E}
    end.

%% Chardata of one line (at most a trailing newline is not one line
%% either: the caller adds its own).
one_line(Chars) ->
    try unicode:characters_to_list(Chars) of
        L when is_list(L) -> not lists:member($\n, L);
        _ -> false
    catch error:_ -> false
    end.

format_error_test_() ->
    {timeout, 300,
     fun() ->
             %% every module is reached, not only those drawn
             Mods = formatters(),
             ?assert(length(Mods) > 40),
             _ = [?assert({M, one_line(catch_line(M, R))} =:= {M, true})
                  || M <- Mods, R <- [foo, {foo, bar}, {option, x}, {error, x}, 42, <<"x">>, "x",
                                      [], #{}, {a, b, c}, {bad_option, x, y}, make_ref()]],
             ?assert(proper:quickcheck(prop_format_error_never_raises(),
                                       [{numtests, 2000}, {to_file, user}]))
     end}.

%%--------------------------------------------------------------------
%% The rendering API over every format

prop_format_never_raises() ->
    ?FORALL({Doc, Format}, {document(), oneof(beamlab_render_view:formats() -- [text])},
            case catch_format(Doc, Format) of
                {ok, Text} -> is_chardata(Text);
                {error, R} -> one_line(beamlab:format_error(R));
                Other -> ?WHENFAIL(io:format("~p: ~P~n", [Format, Other, 20]), false)
            end).

catch_format(Doc, Format) ->
    try beamlab:format(Doc, Format)
    catch C:E:St -> {raised, C, E, St}
    end.

is_chardata(Text) ->
    is_binary(unicode:characters_to_binary(Text)).

%% A document as the kinds write them: benchmarks of any unit and
%% direction, samples of any size (one sample: no interval), findings,
%% parameters, partial or not.
document() ->
    ?LET({Kind, Benchmarks, Partial, Findings},
         {oneof([bench, suite, matrix, amqp, watch, check]), list(benchmark()), boolean(),
          list(finding())},
         begin
             R0 = beamlab_result:new(Kind, #{params => #{}, command => [<<"beamlab">>, atom_to_binary(Kind)],
                                            started_at => <<"2026-11-22T02:59:00Z">>}),
             Unique = maps:values(maps:from_list([{maps:get(name, B), B} || B <- Benchmarks])),
             R1 = beamlab_result:add_findings(beamlab_result:add_benchmarks(R0, Unique), Findings),
             beamlab_result:finish(R1, #{finished_at => <<"2026-11-22T03:00:00Z">>, partial => Partial})
         end).

benchmark() ->
    ?LET({Name, Samples, Unit, Better},
         {name(), non_empty(list(sample())),
          oneof([<<"ns">>, <<"us">>, <<"ms">>, <<"ops/s">>, <<"msg/s">>, <<"iterations">>, <<"bytes">>, <<>>]),
          oneof([higher, lower])},
         beamlab_result:benchmark(Name, Samples, #{unit => Unit, better => Better})).

sample() ->
    oneof([range(0, 1000000), float(0.0, 1.0e9), 0, 0.0, 1.0e-9, 1.0e15]).

finding() ->
    ?LET({Title, Sev}, {name(), oneof([info, warning, critical])},
         beamlab_result:finding(f, Sev, Title, Title, <<>>, #{})).

name() ->
    ?LET(S, non_empty(list(oneof([range($a, $z), range($0, $9), $\s, $-, 16#e9, 16#3bb]))),
         unicode:characters_to_binary(S)).

format_test_() ->
    {timeout, 300,
     ?_assert(proper:quickcheck(prop_format_never_raises(), [{numtests, 300}, {to_file, user}]))}.

%%--------------------------------------------------------------------
%% beamlab_format_units over every number

%% Any number its spec allows: ordinary, zero, negative, tiny, huge
%% (an integer beyond a float's range too).
num() ->
    oneof([integer(), float(), 0, 0.0, -0.0, 1.0e-300, -1.0e-300, 5.0e-324, 1.0e300, -1.0e300,
           1 bsl 1100, -(1 bsl 1100), 123456789012345678901234567890]).

unit() ->
    oneof([<<"ns">>, <<"us">>, <<"ms">>, <<"s">>, <<"bytes">>, <<"B">>, <<"ratio">>, <<"%">>,
           <<"iterations">>, <<>>, <<"msg/s">>, <<"ops">>, "ms"]).

%% Every exported formatter, each with arguments of its spec.
calls() ->
    oneof([?LET(N, num(), {count, [N]}),
           ?LET(N, num(), {duration, [N]}),
           ?LET({N, U}, {num(), oneof([ns, us, ms, s])}, {duration, [N, U]}),
           ?LET(N, num(), {bytes, [N]}),
           ?LET(N, num(), {rate, [N]}),
           ?LET(N, num(), {percent, [N]}),
           ?LET(N, num(), {signed_percent, [N]}),
           ?LET(N, num(), {sign, [N]}),
           ?LET(N, num(), {number, [N]}),
           ?LET({N, U}, {num(), unit()}, {value, [N, U]}),
           ?LET({N, U}, {num(), unit()}, {bench_value, [N, #{unit => unicode:characters_to_binary(U)}]}),
           ?LET({N, D}, {num(), range(1, 20)}, {sig, [N, D]}),
           ?LET({N, W}, {num(), oneof(["scheduler", "run"])}, {plural, [N, W]}),
           ?LET({V, I}, {num(), oneof([undefined, null, {num(), num()}, list(num())])},
                {rel_interval, [V, I, "ms"]}),
           ?LET(V, oneof([num(), atom(), binary(), list(range(0, 16#10ffff))]), {to_binary, [V]})]).

prop_units_never_raise() ->
    ?FORALL({F, Args}, calls(),
            begin
                Result = try apply(beamlab_format_units, F, Args)
                         catch C:E -> {raised, C, E}
                         end,
                ?WHENFAIL(io:format("beamlab_format_units:~p(~p) -> ~p~n", [F, Args, Result]),
                          case F of
                              to_binary -> is_binary(Result);
                              _ -> io_lib:char_list(Result)
                          end)
            end).

units_test_() ->
    {timeout, 300,
     ?_assert(proper:quickcheck(prop_units_never_raise(), [{numtests, 2000}, {to_file, user}]))}.
