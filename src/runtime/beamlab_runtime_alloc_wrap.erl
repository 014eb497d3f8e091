%%% @doc Code rewriting for the memory phases: spawn calls are routed
%%% through {@link beamlab_runtime_alloc:gc_after/1}, so a spawned process
%%% collects garbage once more when its function returns or raises and
%%% the GC trace of {@link beamlab_runtime_alloc} sees every word it
%%% allocated, also after its last ordinary collection.
%%%
%%% {@link spawns/1} rewrites abstract code (the runner `beamlab run'
%%% compiles). {@link module/1} builds a copy of an already compiled module
%%% (a suite workload) from its debug information, under another name, with
%%% its spawn calls wrapped and its calls to itself kept inside the copy, so
%%% every process its code spawns, at any depth, ends with that last
%%% collection. The original module is left untouched: processes running it
%%% (set up before the measurement) are not disturbed.
-module(beamlab_runtime_alloc_wrap).

-export([spawns/1, module/1, module/2, copy_name/1, format_error/1]).

-type error_reason() :: {no_debug_info, module()} | {no_object_code, module()}
                      | {compile, module(), term()} | {load, module(), term()}.
-export_type([error_reason/0]).

-define(SPAWNS, [spawn, spawn_link, spawn_monitor, spawn_opt]).

%% @doc Rewrites every `spawn(Fun)', `spawn(M, F, Args)' (and `spawn_link',
%% `spawn_monitor', `spawn_opt', local, `erlang:' and `proc_lib:' forms)
%% in an abstract term (clauses, forms) to spawn the same work through
%% `beamlab_runtime_alloc:gc_after'. Spawns on another node are kept.
-spec spawns(Tree) -> Tree when Tree :: term().
spawns(Tree) ->
    rewrite(Tree, {'$none', '$none'}, []).

%% @doc The name of the wrapped copy of `Mod' ({@link module/1}).
-spec copy_name(module()) -> module().
copy_name(Mod) ->
    list_to_atom("beamlab_alloc_wrapped__" ++ atom_to_list(Mod)).

%% @doc Loads (once per version of `Mod') the wrapped copy of `Mod' and
%% returns its name. Needs `Mod' compiled with `debug_info'.
-spec module(module()) -> {ok, module()} | {error, error_reason()}.
module(Mod) ->
    module(Mod, none).

%% @doc As {@link module/1}, from `Mod''s object code when given (a VM
%% that loaded `Mod' from a binary cannot read it back).
-spec module(module(), binary() | none) -> {ok, module()} | {error, error_reason()}.
module(Mod, ObjectCode) ->
    Copy = copy_name(Mod),
    Version = version(Mod),
    case erlang:module_loaded(Copy) andalso copied_from(Copy) =:= Version of
        true -> {ok, Copy};
        false -> build(Mod, Copy, Version, ObjectCode)
    end.

%% @doc One line for each error.
-spec format_error(error_reason()) -> iolist().
format_error(Reason) ->
    beamlab_format_reason:line(fun error_line/1, Reason).

error_line({no_debug_info, Mod}) ->
    io_lib:format("~ts has no debug information (compile it with debug_info)", [Mod]);
error_line({no_object_code, Mod}) ->
    io_lib:format("the object code of ~ts cannot be read in this VM", [Mod]);
error_line({compile, Mod, Reason}) ->
    io_lib:format("~ts could not be recompiled with wrapped spawns: ~0tp", [Mod, Reason]);
error_line({load, Mod, Reason}) ->
    io_lib:format("the wrapped copy of ~ts could not be loaded: ~0tp", [Mod, Reason]);
error_line(Other) ->
    %% (a reason of no kind above: printed, never raised)
    beamlab_format_reason:term(Other).

version(Mod) ->
    _ = code:ensure_loaded(Mod),
    try Mod:module_info(md5) catch error:_ -> undefined end.

copied_from(Copy) ->
    proplists:get_value(beamlab_copied_from, Copy:module_info(attributes)).

build(Mod, Copy, Version, ObjectCode) ->
    case forms(Mod, ObjectCode) of
        {ok, Forms, Opts} ->
            Locals = [{F, A} || {function, _, F, A, _} <- Forms],
            New = [{attribute, 0, beamlab_copied_from, Version}
                   | [F1 || F <- rewrite(Forms, {Mod, Copy}, Locals), F1 <- rename_attr(F, Mod, Copy)]],
            %% The attribute must follow -module.
            Ordered = module_first(New),
            case compile:forms(Ordered, [binary, return_errors, nowarn_unused_function,
                                         nowarn_unused_vars, nowarn_deprecated_function | Opts]) of
                {ok, Copy, Bin} -> load(Copy, Bin);
                {ok, Copy, Bin, _Warnings} -> load(Copy, Bin);
                {error, Errors, _Warnings} -> {error, {compile, Mod, Errors}};
                error -> {error, {compile, Mod, error}}
            end;
        {error, Why} ->
            {error, {Why, Mod}}
    end.

load(Copy, Bin) ->
    _ = code:purge(Copy),
    case code:load_binary(Copy, atom_to_list(Copy) ++ ".beam", Bin) of
        {module, Copy} -> {ok, Copy};
        {error, R} -> {error, {load, Copy, R}}
    end.

module_first(Forms) ->
    {Mods, Rest} = lists:partition(fun({attribute, _, module, _}) -> true; (_) -> false end, Forms),
    Mods ++ Rest.

%% The module's abstract code (after its parse transforms) and the
%% options it was compiled with that change the generated code
%% (`export_all', inlining, ...).
forms(Mod, none) ->
    case code:get_object_code(Mod) of
        {Mod, Bin, _File} -> forms(Mod, Bin);
        error -> {error, no_object_code}
    end;
forms(Mod, Bin) ->
    case beam_lib:chunks(Bin, [debug_info]) of
        {ok, {Mod, [{debug_info, {debug_info_v1, erl_abstract_code, {Forms, Opts}}}]}}
          when is_list(Forms) ->
            {ok, Forms, [O || O <- Opts, keep_option(O)]};
        _ ->
            {error, no_debug_info}
    end.

keep_option({parse_transform, _}) -> false;
keep_option({Key, _}) -> not lists:member(Key, [outdir, i, d, debug_info_key, source, cwd]);
keep_option(Flag) when is_atom(Flag) ->
    not lists:member(Flag, [debug_info, warnings_as_errors, report, report_errors, report_warnings,
                            verbose, binary, return, return_errors, return_warnings, from_core,
                            from_asm, from_beam, makedep, 'P', 'E', 'S']);
keep_option(_) -> false.

%% The copy's -module; no -on_load (the original ran it already).
rename_attr({attribute, A, module, Mod}, Mod, Copy) -> [{attribute, A, module, Copy}];
rename_attr({attribute, _, on_load, _}, _Mod, _Copy) -> [];
rename_attr(F, _Mod, _Copy) -> [F].

%% Post-order rewrite. `Rename' is `{Mod, Copy}': calls to `Mod' (remote
%% calls, `fun Mod:F/A', `apply' and spawns of `Mod, F, Args') go to the
%% copy. `Locals' are the module's own functions: a local call named like
%% a spawn BIF calls one of them when it is defined there.
rewrite(T, Rename, Locals) when is_tuple(T) ->
    node(list_to_tuple([rewrite(E, Rename, Locals) || E <- tuple_to_list(T)]), Rename, Locals);
rewrite(L, Rename, Locals) when is_list(L) ->
    [rewrite(E, Rename, Locals) || E <- L];
rewrite(T, _Rename, _Locals) ->
    T.

node({call, An, {remote, _, {atom, _, M}, {atom, _, F}} = Callee, Args} = T, Rename, _Locals)
  when M =:= erlang; M =:= proc_lib ->
    case {lists:member(F, ?SPAWNS), F, Args} of
        {true, _, _} -> wrap(An, Callee, F, Args, T, Rename);
        {false, apply, [{atom, A2, Mod}, Fn, As]} when element(1, Rename) =:= Mod, M =:= erlang ->
            {call, An, Callee, [{atom, A2, element(2, Rename)}, Fn, As]};
        _ -> T
    end;
node({call, An, {atom, _, F} = Callee, Args} = T, Rename, Locals) ->
    Local = lists:member({F, length(Args)}, Locals),
    case {lists:member(F, ?SPAWNS) andalso not Local, F, Args} of
        {true, _, _} -> wrap(An, Callee, F, Args, T, Rename);
        {false, apply, [{atom, A2, Mod}, Fn, As]} when element(1, Rename) =:= Mod, not Local ->
            {call, An, Callee, [{atom, A2, element(2, Rename)}, Fn, As]};
        _ -> T
    end;
node({remote, A, {atom, A2, Mod}, F}, {Mod, Copy}, _Locals) ->
    {remote, A, {atom, A2, Copy}, F};
node({'fun', A, {function, {atom, A2, Mod}, F, Ar}}, {Mod, Copy}, _Locals) ->
    {'fun', A, {function, {atom, A2, Copy}, F, Ar}};
node(T, _Rename, _Locals) ->
    T.

%% The wrapper, with `M' of an `M, F, Args' spawn already renamed when it
%% named the module (the remote-call rule does not see it: it is an
%% argument). Spawns on other nodes (`spawn(Node, Fun)', ...) are kept.
wrap(An, Callee, F, Args, T, Rename) ->
    Gc = fun(As) -> {call, An, {remote, An, {atom, An, beamlab_runtime_alloc}, {atom, An, gc_after}}, As} end,
    M = fun({atom, A, Mod}) when element(1, Rename) =:= Mod -> {atom, A, element(2, Rename)};
           (Other) -> Other
        end,
    case {F, Args} of
        {spawn_opt, [Fun, Opts]} -> {call, An, Callee, [Gc([Fun]), Opts]};
        {spawn_opt, [Mod, Fn, As, Opts]} -> {call, An, Callee, [Gc([M(Mod), Fn, As]), Opts]};
        {spawn_opt, _} -> T;
        {_, [Fun]} -> {call, An, Callee, [Gc([Fun])]};
        {_, [Mod, Fn, As]} -> {call, An, Callee, [Gc([M(Mod), Fn, As])]};
        _ -> T
    end.
