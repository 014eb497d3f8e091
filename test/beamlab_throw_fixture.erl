%%% @doc What beamlab_throw_tests must find: each exported function whose
%%% name starts with `out_' lets a throw out of the module, each starting
%%% with `in_' does not. Never called, only read.
-module(beamlab_throw_fixture).

-export([out_direct/0, out_raise/0, out_local/0, out_other_pattern/0, out_fun_run_outside/0,
         out_runner_other_pattern/0, out_from_catch_clause/0,
         in_caught/0, in_caught_any/0, in_old_catch/0, in_runner/0, in_variable/1, in_module_tag/0]).

-spec out_direct() -> no_return().
out_direct() -> throw(oops).

-spec out_raise() -> no_return().
out_raise() -> erlang:raise(throw, oops, []).

-spec out_local() -> no_return().
out_local() -> deep(1).

%% A catch clause for another term does not catch this one.
-spec out_other_pattern() -> term().
out_other_pattern() ->
    try deep(1) catch throw:{bad_arg, M} -> M end.

-spec out_fun_run_outside() -> term().
out_fun_run_outside() ->
    F = fun() -> throw({?MODULE, oops}) end,
    F().

-spec out_runner_other_pattern() -> term().
out_runner_other_pattern() ->
    catching(fun() -> throw(other) end).

-spec out_from_catch_clause() -> term().
out_from_catch_clause() ->
    try deep(1) catch throw:{?MODULE, _} -> throw(again) end.

-spec in_caught() -> term().
in_caught() ->
    try deep(1) catch throw:{?MODULE, {error, _} = E} -> E end.

-spec in_caught_any() -> term().
in_caught_any() ->
    try out_direct() catch Class:R -> {Class, R} end.

-spec in_old_catch() -> term().
in_old_catch() ->
    catch out_direct().

-spec in_runner() -> term().
in_runner() ->
    catching(fun() -> deep(2) end).

%% A thrown variable may be anything: a clause of class throw catches it.
-spec in_variable(term()) -> term().
in_variable(X) ->
    try throw(X) catch throw:{bad_arg, M} -> M end.

-spec in_module_tag() -> term().
in_module_tag() ->
    try throw({?MODULE, {error, because}}) catch throw:{?MODULE, R} -> R end.

deep(0) -> ok;
deep(N) -> throw({?MODULE, {error, N}}).

catching(Fun) ->
    try Fun() catch throw:{?MODULE, {error, _} = E} -> E end.
