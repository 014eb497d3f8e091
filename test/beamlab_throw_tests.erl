%%% @doc Errors are values across layers (#31): no `throw' leaves the
%%% module that throws it, with no exception (the command line's errors
%%% are values too: docs/architecture.md, "Errors"). Read from each
%%% module's abstract code: a function "lets a throw out" when it calls
%%% `throw/1' (or `erlang:raise(throw, ...)') outside a `try' with a
%%% `catch' clause of class `throw' whose pattern can match the thrown
%%% term, or calls a local function that lets one out, or calls a local
%%% function with a fun that lets one out (a fun is judged where it is
%%% made and where it is run: a fun handed to a local function that runs
%%% its argument inside such a `try' is caught there). No exported
%%% function may let a throw out. A `catch Expr' catches everything.
-module(beamlab_throw_tests).
-include_lib("eunit/include/eunit.hrl").

-export([escaping/1]).

no_throw_leaves_its_module_test() ->
    _ = application:load(beamlab),
    {ok, Mods} = application:get_key(beamlab, modules),
    ?assert(length(Mods) > 100),
    ?assertEqual([], [MFA || M <- Mods, MFA <- escaping(M)]).

%% The analysis finds what it should, and only that (the fixture's
%% functions say by their names whether a throw gets out).
the_analysis_sees_a_throw_test() ->
    Exported = beamlab_throw_fixture:module_info(exports),
    Out = [{beamlab_throw_fixture, F, A} || {F, A} <- Exported, lists:prefix("out_", atom_to_list(F))],
    ?assert(length(Out) >= 5),
    ?assertEqual(lists:sort(Out), lists:sort(escaping(beamlab_throw_fixture))).

%% @doc The exported functions of `Mod' that let a throw out.
-spec escaping(module()) -> [mfa()].
escaping(Mod) ->
    {ok, {Mod, [{abstract_code, {raw_abstract_v1, Forms}}]}} =
        beam_lib:chunks(code:which(Mod), [abstract_code]),
    Exports = lists:append([E || {attribute, _, export, E} <- Forms]),
    Funs = maps:from_list([{{F, A}, Cs} || {function, _, F, A, Cs} <- Forms]),
    %% Functions that run an argument (by position) inside a try catching
    %% throws, with that try's catch clauses.
    Runners = runners(Funs),
    Out = fixpoint(Funs, Runners, #{}),
    [{Mod, F, A} || {F, A} <- Exports, maps:get({F, A}, Out, []) =/= []].

%% Out: {F, A} => the terms (abstract, without annotations) a throw of
%% the function may let out.
fixpoint(Funs, Runners, Out0) ->
    Out = maps:map(fun(_FA, Clauses) -> lists:usort(escapes(Clauses, Out0, Runners)) end, Funs),
    case Out =:= Out0 of
        true -> Out;
        false -> fixpoint(Funs, Runners, Out)
    end.

%% What any clause's guards or body may let out.
escapes(Clauses, Out, Runners) ->
    lists:append([esc(Guards, Out, Runners) ++ esc(Body, Out, Runners)
                  || {clause, _, _, Guards, Body} <- Clauses]).

%% esc(Abstract, Out, Runners): the thrown terms evaluating it may let out.
esc({'try', _, Body, OfClauses, CatchClauses, After}, Out, Runners) ->
    [T || T <- esc(Body, Out, Runners), not caught(T, CatchClauses)]
        ++ esc(OfClauses, Out, Runners) ++ esc(CatchClauses, Out, Runners) ++ esc(After, Out, Runners);
esc({'catch', _, _Expr}, _Out, _Runners) ->
    [];
esc({call, _, {atom, _, throw}, [T]}, Out, Runners) ->
    [strip(T) | esc(T, Out, Runners)];
esc({call, _, {remote, _, {atom, _, erlang}, {atom, _, throw}}, [T]}, Out, Runners) ->
    [strip(T) | esc(T, Out, Runners)];
esc({call, _, {remote, _, {atom, _, erlang}, {atom, _, raise}}, [{atom, _, throw}, T, _]}, Out, Runners) ->
    [strip(T) | esc(T, Out, Runners)];
esc({call, _, {atom, _, F}, Args}, Out, Runners) ->
    A = length(Args),
    Caught = maps:get({F, A}, Runners, []),
    %% A fun given where the callee runs it inside its try is judged by
    %% that try's catch clauses.
    ArgsOut = lists:append(
                [[T || T <- esc(Arg, Out, Runners),
                       not lists:any(fun({P, Catches}) -> P =:= I andalso caught(T, Catches) end, Caught)]
                 || {I, Arg} <- lists:zip(lists:seq(1, A), Args)]),
    maps:get({F, A}, Out, []) ++ ArgsOut;
esc({'fun', _, {clauses, Clauses}}, Out, Runners) ->
    escapes(Clauses, Out, Runners);
esc({named_fun, _, _, Clauses}, Out, Runners) ->
    escapes(Clauses, Out, Runners);
esc(T, Out, Runners) when is_tuple(T) ->
    esc(tuple_to_list(T), Out, Runners);
esc(L, Out, Runners) when is_list(L) ->
    lists:append([esc(X, Out, Runners) || X <- L]);
esc(_, _Out, _Runners) ->
    [].

%% Whether a catch clause of class throw (or of any class) can match the
%% thrown term.
caught(Thrown, Clauses) ->
    lists:any(fun({clause, _, [{tuple, _, [Class, Pattern, _]}], _, _}) ->
                      class_throw(Class) andalso may_match(strip(Pattern), Thrown);
                 (_) -> false
              end, Clauses).

class_throw({atom, _, throw}) -> true;
class_throw({var, _, _}) -> true;
class_throw(_) -> false.

%% Whether a pattern can match the value of an expression, as far as the
%% expression's literal shape tells (a variable or a call can be anything).
may_match({var, _, _}, _) -> true;
may_match({match, _, P1, P2}, E) -> may_match(P1, E) andalso may_match(P2, E);
may_match(P, {match, _, _, E}) -> may_match(P, E);
may_match({tuple, _, Ps}, {tuple, _, Es}) ->
    length(Ps) =:= length(Es) andalso lists:all(fun({P, E}) -> may_match(P, E) end, lists:zip(Ps, Es));
may_match({Lit, _, V}, {Lit, _, W}) when Lit =:= atom; Lit =:= integer; Lit =:= char; Lit =:= float ->
    V =:= W;
may_match(P, E) ->
    not (literal_shape(P) andalso literal_shape(E) andalso element(1, P) =/= element(1, E)).

%% Terms whose kind the abstract form tells.
literal_shape(T) ->
    lists:member(element(1, T), [tuple, atom, integer, char, float, string, nil, cons, map, bin]).

strip(Abs) ->
    erl_parse:map_anno(fun(_) -> 0 end, Abs).

%% Local functions that call one of their arguments (a variable bound by
%% the clause head) inside a try that catches throws:
%% {F, A} => [{Position, CatchClauses}].
runners(Funs) ->
    maps:filter(fun(_, Ps) -> Ps =/= [] end,
                maps:map(fun({_F, _A}, Clauses) ->
                                 [{I, Catches}
                                  || {clause, _, Params, _, Body} <- Clauses,
                                     {I, {var, _, V}} <- lists:zip(lists:seq(1, length(Params)), Params),
                                     {'try', _, TryBody, _, Catches, _} <- flatten(Body),
                                     calls_var(V, TryBody)]
                         end, Funs)).

calls_var(V, Abs) ->
    lists:any(fun({call, _, {var, _, V1}, _}) -> V1 =:= V; (_) -> false end, flatten(Abs)).

%% Every sub-term of an abstract form.
flatten(T) when is_tuple(T) -> [T | flatten(tuple_to_list(T))];
flatten(L) when is_list(L) -> lists:append([flatten(X) || X <- L]);
flatten(_) -> [].
