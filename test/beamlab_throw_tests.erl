%%% @doc Errors are values across layers (#31): no `throw' leaves the
%%% module that throws it. Read from each module's abstract code: a
%%% function "lets a throw out" when it calls `throw/1' (or
%%% `erlang:raise(throw, ...)') outside a `try' or `catch' that catches
%%% the class `throw', or calls a local function that lets one out, or
%%% calls a local function with a fun that lets one out (a fun is judged
%%% where it is made and where it is run: a fun handed to a local function
%%% that runs its argument inside such a `try' is caught there). No
%%% exported function may let a throw out.
%%%
%%% The one documented exception: `beamlab_cli_error:usage/2' and
%%% `fail/2', the command line's way to end a command, which the
%%% dispatcher (`beamlab_cli') catches (docs/architecture.md, "Errors").
-module(beamlab_throw_tests).
-include_lib("eunit/include/eunit.hrl").

-export([escaping/1]).

-define(EXCEPTIONS, [{beamlab_cli_error, usage, 2}, {beamlab_cli_error, fail, 2}]).

no_throw_leaves_its_module_test() ->
    _ = application:load(beamlab),
    {ok, Mods} = application:get_key(beamlab, modules),
    ?assert(length(Mods) > 100),
    Escaping = [MFA || M <- Mods, MFA <- escaping(M), not lists:member(MFA, ?EXCEPTIONS)],
    ?assertEqual([], Escaping).

%% The analysis finds what it should.
the_analysis_sees_a_throw_test() ->
    ?assertEqual([{beamlab_cli_error, fail, 2}, {beamlab_cli_error, usage, 2}],
                 lists:sort(escaping(beamlab_cli_error))).

%% @doc The exported functions of `Mod' that let a throw out.
-spec escaping(module()) -> [mfa()].
escaping(Mod) ->
    {ok, {Mod, [{abstract_code, {raw_abstract_v1, Forms}}]}} =
        beam_lib:chunks(code:which(Mod), [abstract_code]),
    Exports = lists:append([E || {attribute, _, export, E} <- Forms]),
    Funs = maps:from_list([{{F, A}, Cs} || {function, _, F, A, Cs} <- Forms]),
    %% Functions that run an argument (by position) inside a try catching throws.
    Runners = runners(Funs),
    Out = fixpoint(Funs, Runners, #{}),
    [{Mod, F, A} || {F, A} <- Exports, maps:get({F, A}, Out, false)].

fixpoint(Funs, Runners, Out0) ->
    Out = maps:map(fun(_FA, Clauses) -> escapes(Clauses, Out0, Runners) end, Funs),
    case Out =:= Out0 of
        true -> Out;
        false -> fixpoint(Funs, Runners, Out)
    end.

%% Whether any clause body lets a throw out.
escapes(Clauses, Out, Runners) ->
    lists:any(fun({clause, _, _, Guards, Body}) -> esc(Guards, Out, Runners) orelse esc(Body, Out, Runners) end,
              Clauses).

%% esc(Abstract, Out, Runners): whether evaluating it may let a throw out.
esc({'try', _, Body, OfClauses, CatchClauses, After}, Out, Runners) ->
    BodyOut = esc(Body, Out, Runners) andalso not catches_throw(CatchClauses),
    BodyOut orelse esc(OfClauses, Out, Runners) orelse esc(CatchClauses, Out, Runners)
        orelse esc(After, Out, Runners);
esc({'catch', _, _Expr}, _Out, _Runners) ->
    false;
esc({call, _, {atom, _, throw}, [_]}, _Out, _Runners) ->
    true;
esc({call, _, {remote, _, {atom, _, erlang}, {atom, _, throw}}, [_]}, _Out, _Runners) ->
    true;
esc({call, _, {remote, _, {atom, _, erlang}, {atom, _, raise}}, [{atom, _, throw} | _]}, _Out, _Runners) ->
    true;
esc({call, _, {atom, _, F}, Args}, Out, Runners) ->
    A = length(Args),
    Caught = maps:get({F, A}, Runners, []),
    %% A fun given where the callee runs it inside its try is caught there.
    ArgsOut = lists:any(fun({I, Arg}) -> esc(Arg, Out, Runners) andalso not lists:member(I, Caught) end,
                        lists:zip(lists:seq(1, A), Args)),
    maps:get({F, A}, Out, false) orelse ArgsOut;
esc({'fun', _, {clauses, Clauses}}, Out, Runners) ->
    escapes(Clauses, Out, Runners);
esc({named_fun, _, _, Clauses}, Out, Runners) ->
    escapes(Clauses, Out, Runners);
esc(T, Out, Runners) when is_tuple(T) ->
    esc(tuple_to_list(T), Out, Runners);
esc(L, Out, Runners) when is_list(L) ->
    lists:any(fun(X) -> esc(X, Out, Runners) end, L);
esc(_, _Out, _Runners) ->
    false.

%% A catch clause of class throw, or of any class.
catches_throw(Clauses) ->
    lists:any(fun({clause, _, [{tuple, _, [Class, _, _]}], _, _}) -> class_throw(Class);
                 (_) -> false
              end, Clauses).

class_throw({atom, _, throw}) -> true;
class_throw({var, _, _}) -> true;
class_throw(_) -> false.

%% Local functions that call one of their arguments (a variable bound by
%% the clause head) inside a try that catches throws: {F, A} => [Position].
runners(Funs) ->
    maps:filter(fun(_, Ps) -> Ps =/= [] end,
                maps:map(fun({_F, _A}, Clauses) ->
                                 lists:usort([I || {clause, _, Params, _, Body} <- Clauses,
                                                   {I, {var, _, V}} <- lists:zip(lists:seq(1, length(Params)), Params),
                                                   runs_in_try(V, Body)])
                         end, Funs)).

runs_in_try(V, Body) ->
    lists:any(fun({'try', _, TryBody, _, Catches, _}) ->
                      catches_throw(Catches) andalso calls_var(V, TryBody);
                 (_) -> false
              end, flatten(Body)).

calls_var(V, Abs) ->
    lists:any(fun({call, _, {var, _, V1}, _}) -> V1 =:= V; (_) -> false end, flatten(Abs)).

%% Every sub-term of an abstract form.
flatten(T) when is_tuple(T) -> [T | flatten(tuple_to_list(T))];
flatten(L) when is_list(L) -> lists:append([flatten(X) || X <- L]);
flatten(_) -> [].
