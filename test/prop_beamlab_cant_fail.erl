%%% @doc Exported functions whose spec promises no error do not raise
%%% (#31): each is called on generated inputs its spec allows and must
%%% return a value of its return type.
%%%
%%% Covered:
%%% - every `format_error/1' of a module in src/ (the application's
%%%   modules, found, not listed), on arbitrary terms and on its own
%%%   reasons' tags (read from its clauses) with payloads of any shape:
%%%   whatever it is given it returns one line, never raises (a reason
%%%   passed up a layer it does not know is printed, not turned into a
%%%   crash; a payload's line breaks and control characters are escaped);
%%% - the public rendering API `beamlab:format/2' over every format on
%%%   generated documents: the machine formats (json, csv, markdown,
%%%   github-bigger/smaller, bencher) on documents of any kind, and the
%%%   text view of every kind (`beamlab_experiment_kind:all/0') on
%%%   documents whose parameters are drawn from the kind's option schema
%%%   (`options/0'), with every text option: `{ok, Text}' or `{error, R}'
%%%   with a one-line reason;
%%% - every formatter of `beamlab_format_units' over the numbers its spec
%%%   allows (any integer or float: zero, negative, tiny, huge).
%%%
%%% The inputs are drawn by hand from what each spec allows, not by
%%% `proper:check_spec/1': PropEr 1.2 (Debian's, the one on OTP 25 here)
%%% calls `erlang:get_stacktrace/0', removed in OTP 23, and its spec
%%% checks hang there.
-module(prop_beamlab_cant_fail).

-include_lib("proper/include/proper.hrl").
-include_lib("eunit/include/eunit.hrl").

-export([prop_format_error_never_raises/0, prop_format_never_raises/0,
         prop_text_never_raises/0, prop_units_never_raise/0]).

%%--------------------------------------------------------------------
%% format_error/1 of every module

%% The application's modules that export format_error/1.
formatters() ->
    _ = application:load(beamlab),
    {ok, Mods} = application:get_key(beamlab, modules),
    [M || M <- lists:sort(Mods), {module, M} =:= code:ensure_loaded(M),
          erlang:function_exported(M, format_error, 1)].

%% A reason for `M': any term; a tagged tuple with a tag no module
%% knows; or one of `M''s own tags (in a tuple of the size its clause
%% matches, or of another) with payloads of any shape, which its spec
%% does not give them.
reason(M) ->
    Unknown = ?SUCHTHAT(A, atom(), not lists:member(A, known_tags())),
    Own = [tagged(T, N, payload()) || {T, N} <- tags(M)]
        ++ [tagged(T, N + 1, payload()) || {T, N} <- tags(M), N > 0],
    oneof([any(), Unknown, {Unknown, any()}, {Unknown, any(), any()}, {Unknown, any(), any(), any()}
           | Own]).

%% `Tag' alone (size 0) or a tuple of `Size' elements led by `Tag'.
tagged(Tag, 0, _Payload) -> Tag;
tagged(Tag, Size, Payload) -> ?LET(Ps, vector(Size - 1, Payload), list_to_tuple([Tag | Ps])).

%% Payloads of any shape, and those a line is most likely to trip on:
%% text with line breaks and a terminal's escapes, bytes that are not
%% UTF-8, numbers of any size, deep terms.
payload() ->
    oneof([any(), atom(), binary(), list(range(0, 16#10ffff)), integer(), float(),
           <<"a\nb">>, "a\nb", <<255, 0>>, [27 | "[31mred"], <<16#9b/utf8>>, 'a\nb', -1, 1.0e300,
           1 bsl 1100, #{}, #{a => <<"\n">>}, [], [x | y], {}, {{{{{{{{{{{{{{x}}}}}}}}}}}}}},
           fun erlang:self/0, make_ref()]).

%% The tags of every module's reasons, read from the compiled modules.
known_tags() ->
    case persistent_term:get({?MODULE, tags}, undefined) of
        undefined ->
            Tags = lists:usort([T || M <- formatters(), {T, _} <- tags(M)]),
            persistent_term:put({?MODULE, tags}, Tags),
            Tags;
        Tags -> Tags
    end.

%% `M''s own reasons, `{Tag, Size}' (size 0: the atom alone): the first
%% element of a tuple pattern of a clause of format_error/1, or of the
%% local function it hands its reason to (`fun F/1', e.g. through
%% beamlab_format_reason:line/2).
tags(M) ->
    {ok, {_, [{abstract_code, {raw_abstract_v1, Forms}}]}} = beam_lib:chunks(code:which(M), [abstract_code]),
    Funs = maps:from_list([{{F, A}, Cs} || {function, _, F, A, Cs} <- Forms]),
    Top = maps:get({format_error, 1}, Funs, []),
    Locals = [FA || {clause, _, _, _, Body} <- Top, FA <- local_funs(Body)],
    Clauses = Top ++ lists:append([maps:get(FA, Funs, []) || FA <- Locals]),
    lists:usort([T || {clause, _, [P], _, _} <- Clauses, T <- tag(P)]).

tag({tuple, _, [{atom, _, A} | _] = Es}) -> [{A, length(Es)}];
tag({match, _, L, R}) -> tag(L) ++ tag(R);
tag({atom, _, A}) -> [{A, 0}];
tag(_) -> [].

%% The local functions of arity 1 a body refers to as `fun F/1'.
local_funs({'fun', _, {function, F, 1}}) -> [{F, 1}];
local_funs(T) when is_tuple(T) -> local_funs(tuple_to_list(T));
local_funs(L) when is_list(L) -> lists:append([local_funs(X) || X <- L]);
local_funs(_) -> [].

prop_format_error_never_raises() ->
    Mods = formatters(),
    ?FORALL({M, R}, ?LET(M, oneof(Mods), {M, reason(M)}),
            ?WHENFAIL(io:format("~p:format_error(~P)~n", [M, R, 12]),
                      one_line(catch_line(M, R)))).

catch_line(M, R) ->
    try M:format_error(R)
    catch C:E -> {raised, C, E}
    end.

%% Chardata of one line, without a control character (a trailing newline
%% is not one line either: the caller adds its own).
one_line(Chars) ->
    try unicode:characters_to_list(Chars) of
        L when is_list(L) -> not lists:any(fun control/1, L);
        _ -> false
    catch error:_ -> false
    end.

%% A line break, or a character a terminal takes for a command (C0, DEL,
%% C1): a payload's are escaped.
control(C) -> C < 16#20 orelse (C >= 16#7F andalso C =< 16#9F).

format_error_test_() ->
    {timeout, 300,
     fun() ->
             %% every module is reached, not only those drawn
             Mods = formatters(),
             ?assert(length(Mods) > 40),
             _ = [?assert({M, one_line(catch_line(M, R))} =:= {M, true})
                  || M <- Mods, R <- [foo, {foo, bar}, {option, x}, {error, x}, 42, <<"x">>, "x",
                                      [], #{}, {a, b, c}, {bad_option, x, y}, make_ref()]],
             %% every module's own tags, each with the same odd payload
             %% everywhere: not a spec's shape, text that would break a
             %% line, bytes that are not UTF-8
             ?assert(lists:sum([length(tags(M)) || M <- Mods]) > 300),
             _ = [?assert({M, R, one_line(catch_line(M, R))} =:= {M, R, true})
                  || M <- Mods, {T, N} <- tags(M), P <- [x, -1, <<"a\nb">>, "a\nb", <<255>>, {}, [{}], #{}],
                     R <- [T, list_to_tuple([T | lists:duplicate(max(N, 1) - 1, P)]),
                           list_to_tuple([T | lists:duplicate(N, P)])]],
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
    catch_format(Doc, Format, #{}).

catch_format(Doc, Format, Opts) ->
    try beamlab:format(Doc, Format, Opts)
    catch C:E:St -> {raised, C, E, St}
    end.

is_chardata(Text) ->
    is_binary(unicode:characters_to_binary(Text)).

%% A document as the kinds write them: benchmarks of any unit and
%% direction, samples of any size (one sample: no interval), findings,
%% parameters, partial or not.
document() ->
    ?LET({Kind, Benchmarks, Partial, Findings},
         {oneof([bench, suite, matrix, amqp, watch, check]), list(oneof([benchmark(), failed()])), boolean(),
          list(finding())},
         doc(Kind, #{}, Benchmarks, Partial, Findings)).

doc(Kind, Params, Benchmarks, Partial, Findings) ->
    R0 = beamlab_result:new(Kind, #{params => Params, command => [<<"beamlab">>, atom_to_binary(Kind)],
                                   started_at => <<"2026-11-22T02:59:00Z">>}),
    Unique = maps:values(maps:from_list([{maps:get(name, B), B} || B <- Benchmarks])),
    R1 = beamlab_result:add_findings(beamlab_result:add_benchmarks(R0, Unique), Findings),
    beamlab_result:finish(R1, #{finished_at => <<"2026-11-22T03:00:00Z">>, partial => Partial}).

%% A benchmark with its own parameters or none (a bench job's
%% concurrency; a project's bench modules say none).
benchmark() ->
    ?LET({Name, Samples, Unit, Better, Params},
         {name(), non_empty(list(sample())),
          oneof([<<"ns">>, <<"us">>, <<"ms">>, <<"ops/s">>, <<"msg/s">>, <<"iterations">>, <<"bytes">>, <<>>]),
          oneof([higher, lower]), oneof([#{}, ?LET(C, range(1, 64), #{concurrency => C})])},
         beamlab_result:benchmark(Name, Samples, #{unit => Unit, better => Better, params => Params})).

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
%% The text view of every kind

%% The text views read each kind's own parameters: a document of every
%% registered kind, its parameters drawn from the kind's option schema
%% (each option absent or a value of its type, within its bounds, as the
%% document's JSON holds it), rendered with every text option.
prop_text_never_raises() ->
    ?FORALL({Doc, Opts}, {kind_document(), text_opts()},
            case catch_format(Doc, text, Opts) of
                {ok, Text} -> ?WHENFAIL(io:format("~P~n", [Doc, 30]), is_chardata(Text));
                {error, R} -> one_line(beamlab:format_error(R));
                {raised, C, E, St} ->
                    ?WHENFAIL(io:format("~p:~P~n~P~n~p ~P~n", [C, E, 8, lists:sublist(St, 3), 12,
                                                              maps:get(kind, Doc), maps:get(params, Doc), 12]),
                              false)
            end).

kind_document() ->
    ?LET(Mod, oneof(beamlab_experiment_kind:all()),
         ?LET({Params, Benchmarks, Partial, Findings},
              {params(Mod:options()), list(oneof([benchmark(), failed()])), boolean(), list(finding())},
              doc(Mod:name(), Params, Benchmarks, Partial, Findings))).

%% A benchmark that measured nothing (a job that failed).
failed() ->
    ?LET(Name, name(), beamlab_result:benchmark(Name, [], #{})).

text_opts() ->
    ?LET({U, Report, Top}, {boolean(), oneof([auto, basic, extended, full]), range(1, 50)},
         #{unicode => U, report => Report, top => Top}).

%% Each option of the schema absent or given.
params(Options) ->
    ?LET(Pairs, [oneof([none, ?LET(V, value(O), {N, V})]) || #{name := N} = O <- Options],
         maps:from_list([P || {_, _} = P <- Pairs])).

value(#{multi := true} = O) -> list(typed(maps:get(type, O, term), O));
value(O) -> typed(maps:get(type, O, term), O).

%% A value of the option's type within its bounds.
typed(boolean, _) -> boolean();
typed(T, O) when T =:= count; T =:= non_neg_integer -> int(O, 0);
typed(T, O) when T =:= pos_integer; T =:= quantity -> int(O, 1);
typed(integer, O) -> int(O, -1000);
typed(T, O) when T =:= number; T =:= pos_number; T =:= percent ->
    Lo = maps:get(min, O, case T of number -> -1000; _ -> 0.001 end),
    Hi = maps:get(max, O, 1.0e6),
    oneof([float(float(Lo), float(Hi)), Hi, Lo]);
typed(fraction, _) -> float(0.001, 0.999);
typed(T, _) when T =:= string; T =:= cookie -> name();
typed({enum, L}, _) -> oneof(L);
typed({list, T}, O) -> list(typed(T, O));
typed({one_of, Ts}, O) -> oneof([typed(T, O) || T <- Ts]);
typed(map, _) -> oneof([#{}, ?LET(V, json(), #{<<"k">> => V})]);
typed(term, _) -> json().

int(O, Min) ->
    Lo = max(Min, ceil(maps:get(min, O, Min))),
    Hi = max(Lo, floor(maps:get(max, O, 1000000))),
    oneof([range(Lo, Hi), Lo, Hi]).

%% A JSON value, as a document read from a file holds it.
json() ->
    oneof([null, boolean(), integer(), float(), name(), list(oneof([integer(), name()]))]).

text_test_() ->
    {timeout, 300,
     ?_assert(proper:quickcheck(prop_text_never_raises(), [{numtests, 500}, {to_file, user}]))}.

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
