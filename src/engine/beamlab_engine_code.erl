%%% @doc Turns runner and hook definitions into callables.
%%%
%%% A benchmark is defined by a code map: `runner' (required), `init',
%%% `init_runner' and `done'. Each entry is one of
%%% <ul>
%%%   <li>an expression string: `"rand:uniform()."' (the final dot is optional);</li>
%%%   <li>a function definition string with arity 0, 1 or 2, several clauses
%%%       allowed: `"r(X) -> X * 2."';</li>
%%%   <li>an MFA tuple as text: `"{rand, uniform, []}"';</li>
%%%   <li>(API only) a fun of arity 0, 1 or 2, or an `{M, F, Args}' tuple.</li>
%%% </ul>
%%% Code strings are compiled (never interpreted) into one generated module
%%% per job, loaded from a binary under a name derived from the job's label
%%% or else its code (`beamlab_gen_<hash>', see {@link module_name/1}), so
%%% the same benchmark profiles to the same frames in every run and a
%%% differential flame graph can match them. That module also holds
%%% the measuring loops, so the runner is a local call the compiler inlines
%%% into the loop:
%%% <ul>
%%%   <li>continuous mode runs the runner in batches of K iterations (a plain
%%%       count-down loop, the same shape as a hand-written benchmark loop),
%%%       then publishes K with one `counters:add/3' and reads the monotonic
%%%       clock once. K doubles while a batch takes under 50 us and halves when
%%%       it takes over 500 us, so the per-iteration cost of the counter and
%%%       clock is negligible for fast runners while the counter still moves
%%%       at least every half millisecond (slow runners publish every iteration);</li>
%%%   <li>timed mode runs exactly N iterations of the same count-down loop
%%%       between two clock reads.</li>
%%% </ul>
%%% A runner of arity 1 receives the result of `init_runner'; a runner of
%%% arity 2 receives (InitRunnerResult, State) and returns the next state,
%%% the first State being the `init_runner' result.
-module(beamlab_engine_code).

-export([user_frames/1, format_raised/3]).
-export([compile/1, compile/2, purge/1, continuous/3, timed/3,
         call_init/1, call_init_runner/2, call_done/2,
         runner_arity/1, source_label/1, job_label/1, module_name/1, stops_vm/3, format_error/1]).

-export_type([callable/0, code_map/0, exec/0]).

-type callable() :: string() | binary() | fun() | {module(), atom(), [term()]}.
-type code_map() :: #{runner := callable(), init => callable(),
                      init_runner => callable(), done => callable(),
                      label => unicode:chardata()}.
-type role() :: runner | init | init_runner | done.
-opaque exec() :: #{module := module(),
                    runner_arity := 0..2,
                    runner_fun := fun() | undefined,
                    init := fun(() -> term()),
                    init_runner := fun((term()) -> term()),
                    done := fun((term()) -> term())}.

%% Batch-size adaptation bounds (see module doc).
-define(BATCH_LO_US, 50).
-define(BATCH_HI_US, 500).
-define(MAX_BATCH, 1 bsl 24).

%% Internal parsed form of one callable.
-type parsed() :: {function, Arity :: 0..2, Clauses :: [erl_parse:abstract_clause()],
                   SelfRecursive :: boolean()}
                | {fn, fun()}.

%%====================================================================
%% API
%%====================================================================

%% @doc Compiles a code map and loads the generated module.
%% Errors name the role (`runner', `init', ...) and, for code strings, the
%% `line:column' of the problem in the user's text.
-spec compile(code_map()) -> {ok, exec()} | {error, term()}.
compile(CodeMap) ->
    compile(CodeMap, #{}).

%% @doc As {@link compile/1}; `#{wrap_spawns => true}' compiles the
%% runner's own spawn calls through `beamlab_runtime_alloc:gc_after', so a
%% spawned process collects garbage once more when it ends (the memory
%% phase counts every word it allocated).
-spec compile(code_map(), #{wrap_spawns => boolean()}) -> {ok, exec()} | {error, term()}.
compile(#{runner := _} = CodeMap, Opts) ->
    try
        Parsed = maps:from_list([{Role, parse(Role, maps:get(Role, CodeMap))}
                                 || Role <- [runner, init, init_runner, done],
                                    maps:is_key(Role, CodeMap)]),
        check_arities(Parsed),
        Guarded = maps:map(fun(_Role, P) -> guard_vm_stops(P) end, Parsed),
        build(module_name(CodeMap),
              case maps:get(wrap_spawns, Opts, false) of
                  true -> wrap_spawns(Guarded);
                  false -> Guarded
              end)
    catch
        throw:{beamlab_code, Reason} -> {error, Reason}
    end;
compile(_, _) ->
    {error, no_runner}.

%% @doc The frames of a stack that are the user's code: the harness's
%% (the generated module, beamlab's own modules, the evaluator) left out.
-spec user_frames([tuple()]) -> [tuple()].
user_frames(Stack) when is_list(Stack) ->
    [F || F <- Stack, is_tuple(F), tuple_size(F) =:= 4, not harness(element(1, F))];
user_frames(_) ->
    [].

harness(M) when is_atom(M) ->
    lists:prefix("beamlab_", atom_to_list(M)) orelse
        lists:member(M, [erl_eval, proc_lib, gen_server, gen, timer, eprof, fprof, cprof]);
harness(_) ->
    true.

%% @doc One line for what the user's code raised: class, reason (depth
%% limited) and where, from the user's own frames (at most three).
-spec format_raised(atom(), term(), [tuple()]) -> iolist().
format_raised(Class, Reason, Frames) ->
    Where = [frame(F) || F <- lists:sublist(Frames, 3)],
    [io_lib:format("~w ~0tP", [Class, Reason, 12]),
     case Where of
         [] -> [];
         _ -> [" in ", lists:join(" <- ", Where)]
     end].

frame({M, F, A, Loc}) ->
    Arity = case A of
                L when is_list(L) -> length(L);
                N -> N
            end,
    [io_lib:format("~tw:~tw/~b", [M, F, Arity]),
     case {proplists:get_value(file, Loc), proplists:get_value(line, Loc)} of
         {File, Line} when is_list(File), is_integer(Line) ->
             io_lib:format(" (~ts:~b)", [filename:basename(File), Line]);
         _ -> []
     end].

%% @doc The base name of a code map's generated module: `beamlab_gen_'
%% and 8 hex digits of `erlang:phash2/2' (the same on every machine and
%% OTP release) of the job's label, or without a label of its code. Two
%% runs of one benchmark, or of two versions given the same `--label',
%% thus profile to the same frames. A job whose name is taken in this VM
%% (the same code measured twice at once) gets `_2', `_3'... appended.
-spec module_name(code_map()) -> module().
module_name(CodeMap) ->
    Key = case CodeMap of
              #{label := L} when is_binary(L); is_list(L) -> {label, unicode:characters_to_binary(L)};
              _ -> {code, [{Role, maps:get(Role, CodeMap)} || Role <- [runner, init, init_runner, done],
                                                               is_map_key(Role, CodeMap)]}
          end,
    list_to_atom(lists:flatten(io_lib:format("beamlab_gen_~8.16.0b", [erlang:phash2(Key, 1 bsl 32)]))).

%% @doc Unloads the generated module. Call after every worker has exited.
-spec purge(exec()) -> ok.
purge(#{module := Mod}) ->
    _ = code:purge(Mod),
    _ = code:delete(Mod),
    _ = code:purge(Mod),
    ok.

%% @doc Runs the runner forever in the calling process, adding completed
%% iterations to slot 1 of `Counter'. Never returns (raises if the runner does).
-spec continuous(exec(), counters:counters_ref(), term()) -> no_return().
continuous(#{module := Mod, runner_fun := F}, Counter, InitRunnerResult) ->
    Mod:'$continuous'(Counter, F, InitRunnerResult).

%% @doc Runs exactly `N' iterations and returns the elapsed time in
%% nanoseconds (measured with the monotonic clock around the loop only).
-spec timed(exec(), pos_integer(), term()) -> non_neg_integer().
timed(#{module := Mod, runner_fun := F}, N, InitRunnerResult) ->
    Native = Mod:'$timed'(N, F, InitRunnerResult),
    erlang:convert_time_unit(Native, native, nanosecond).

%% @doc Calls the `init' hook (`undefined' when there is none).
-spec call_init(exec()) -> term().
call_init(#{init := Init}) -> Init().

%% @doc Calls the `init_runner' hook with the `init' result.
-spec call_init_runner(exec(), term()) -> term().
call_init_runner(#{init_runner := IR}, InitResult) -> IR(InitResult).

%% @doc Calls the `done' hook with the `init' result.
-spec call_done(exec(), term()) -> term().
call_done(#{done := Done}, InitResult) -> Done(InitResult).

%% @doc Arity of the runner (0, 1 or 2).
-spec runner_arity(exec()) -> 0..2.
runner_arity(#{runner_arity := A}) -> A.

%% @doc A printable label for a callable: code text as given, MFA and funs printed.
%% @doc A job's name: its label, or else its runner's source.
-spec job_label(map()) -> binary().
job_label(#{label := L}) when is_binary(L); is_list(L) -> unicode:characters_to_binary(L);
job_label(#{runner := R}) -> source_label(R);
job_label(_) -> <<"?">>.

-spec source_label(callable()) -> binary().
source_label(Code) when is_binary(Code) -> Code;
source_label(Code) when is_list(Code) -> unicode:characters_to_binary(Code);
source_label({M, F, A}) -> iolist_to_binary(io_lib:format("{~0tp,~0tp,~0tp}", [M, F, A]));
source_label(Fun) when is_function(Fun) -> iolist_to_binary(io_lib:format("~0tp", [Fun])).

%% @doc One line describing a compile error.
-spec format_error(term()) -> iolist().
format_error(Reason) ->
    beamlab_format_reason:line(fun error_line/1, Reason).

error_line({Role, Reason}) when is_atom(Role) ->
    %% (a role of any atom: its control characters are not printed)
    [[C || C <- atom_to_list(Role), C >= 32, C =/= 127], ": ", format_reason(Reason)];
error_line(no_runner) ->
    "no runner given";
error_line(Other) ->
    io_lib:format("~0tp", [Other]).

format_reason({syntax, {Line, Col}, Mod, Desc}) ->
    io_lib:format("~w:~w: ~ts", [Line, Col, Mod:format_error(Desc)]);
format_reason({syntax, Line, Mod, Desc}) ->
    io_lib:format("~w: ~ts", [Line, Mod:format_error(Desc)]);
format_reason({ends_early, Loc, After}) ->
    io_lib:format("~ts: syntax error at the end of the code, after '~ts'", [loc(Loc), After]);
format_reason({undef, Loc, {M, F, A}}) ->
    io_lib:format("~ts: undefined function ~0tp:~0tp/~w", [loc(Loc), M, F, A]);
format_reason({bad_arity, Arity}) ->
    io_lib:format("a function of arity ~w is not allowed here", [Arity]);
format_reason({needs_init_runner, Arity}) ->
    io_lib:format("a runner of arity ~w needs an init_runner hook (its result is the argument)",
                  [Arity]);
format_reason({needs_init, Arity}) ->
    io_lib:format("a hook of arity ~w needs an init hook (its result is the argument)", [Arity]);
format_reason(not_a_function) ->
    "the code defines something other than a function";
format_reason(empty) ->
    "empty code";
format_reason({bad_callable, Term}) ->
    io_lib:format("not code, a fun or an {M,F,Args} tuple: ~0tp", [Term]);
format_reason(Other) ->
    io_lib:format("~0tp", [Other]).

loc({Line, Col}) -> io_lib:format("~w:~w", [Line, Col]);
loc(Line) -> io_lib:format("~w", [Line]).

%%====================================================================
%% Parsing
%%====================================================================

-spec parse(role(), callable()) -> parsed().
parse(Role, Code) when is_binary(Code) ->
    parse(Role, unicode:characters_to_list(Code));
parse(Role, Code) when is_list(Code) ->
    %% Deep lists (io_lib:format output) are text too.
    Flat = try unicode:characters_to_list(Code) catch error:_ -> error end,
    case is_list(Flat) andalso io_lib:printable_unicode_list(Flat) of
        true -> parse_text(Role, Flat);
        false -> fail(Role, {bad_callable, Code})
    end;
parse(Role, {M, F, A}) when is_atom(M), is_atom(F), is_list(A) ->
    mfa_callable(Role, M, F, A, erl_anno:new({1, 1}));
parse(_Role, Fun) when is_function(Fun, 0); is_function(Fun, 1); is_function(Fun, 2) ->
    {fn, Fun};
parse(Role, Other) ->
    fail(Role, {bad_callable, Other}).

parse_text(Role, Text) ->
    {Tokens, Added} = case erl_scan:string(Text, {1, 1}) of
                          {ok, [], _} -> fail(Role, empty);
                          {ok, Toks, End} -> ensure_dot(Toks, End);
                          {error, {SLoc, SMod, SDesc}, _} -> fail(Role, {syntax, SLoc, SMod, SDesc})
                      end,
    try parse_tokens(Role, Tokens)
    catch
        %% The code ended where an expression had not: the error is at the
        %% full stop beamlab added (where the code ends), which the user
        %% never wrote ("before: '.'"); told at their last token.
        throw:{beamlab_code, {Role, {syntax, Added, erl_parse, _}}} ->
            Loc = element(2, lists:nth(length(Tokens) - 1, Tokens)),
            fail(Role, {ends_early, Loc, token_text(Text, Loc)})
    end.

parse_tokens(Role, Tokens) ->
    case looks_like_function(Tokens) of
        true ->
            case erl_parse:parse_form(Tokens) of
                {ok, {function, _, Name, Arity, Clauses}} ->
                    parsed_function(Role, Name, Arity, Clauses);
                {ok, _} ->
                    fail(Role, not_a_function);
                {error, {Loc, Mod, Desc}} ->
                    fail(Role, {syntax, Loc, Mod, Desc})
            end;
        false ->
            case erl_parse:parse_exprs(Tokens) of
                {ok, [{tuple, Anno, [{atom, _, M}, {atom, _, F}, Args]}]} ->
                    mfa_text(Role, M, F, Args, Anno, Tokens);
                {ok, Exprs} ->
                    {function, 0, [{clause, anno(Tokens), [], [], Exprs}], false};
                {error, {Loc, Mod, Desc}} ->
                    fail(Role, {syntax, Loc, Mod, Desc})
            end
    end.

%% `name(' at the start and a `->' before the first `.' at nesting level 0
%% (a `fun ... end' opens a level, so expressions with funs stay expressions).
looks_like_function([{atom, _, _}, {'(', _} | Rest]) -> arrow_at_top(Rest, 1);
looks_like_function(_) -> false.

arrow_at_top([], _) -> false;
arrow_at_top([{dot, _} | _], _) -> false;
arrow_at_top([{'->', _} | _], 0) -> true;
arrow_at_top([{T, _} | Rest], D) when T =:= '('; T =:= '['; T =:= '{'; T =:= 'fun';
                                      T =:= 'begin'; T =:= 'case'; T =:= 'receive';
                                      T =:= 'try'; T =:= 'if'; T =:= '<<'; T =:= 'maybe' ->
    %% `fun M:F/A' has no `end'; only `fun (' opens a level.
    case {T, Rest} of
        {'fun', [{'(', _} | _]} -> arrow_at_top(Rest, D + 1);
        {'fun', _} -> arrow_at_top(Rest, D);
        _ -> arrow_at_top(Rest, D + 1)
    end;
arrow_at_top([{T, _} | Rest], D) when T =:= ')'; T =:= ']'; T =:= '}'; T =:= 'end';
                                      T =:= '>>' ->
    arrow_at_top(Rest, D - 1);
arrow_at_top([_ | Rest], D) ->
    arrow_at_top(Rest, D).

%% The full stop the code may leave out, added where the code ends, and
%% its location (`none': the code has its own).
ensure_dot(Tokens, End) ->
    case lists:last(Tokens) of
        {dot, _} -> {Tokens, none};
        _ -> {Tokens ++ [{dot, End}], End}
    end.

%% The text of the token at `{Line, Col}' of `Text' (to the end of its
%% line, trimmed: the last token of the code).
token_text(Text, {Line, Col}) ->
    L = lists:nth(Line, string:split(Text, "\n", all) ++ [""]),
    string:trim(lists:nthtail(min(Col - 1, length(L)), L)).

anno([Tok | _]) -> element(2, Tok).

parsed_function(_Role, Name, Arity, Clauses) when Arity =< 2 ->
    Renamed = rename_calls(Clauses, Name, Arity),
    {function, Arity, Renamed, calls_self(Renamed, Arity)};
parsed_function(Role, _Name, Arity, _Clauses) ->
    fail(Role, {bad_arity, Arity}).

mfa_text(Role, M, F, ArgsExpr, Anno, Tokens) ->
    %% Only a literal argument list makes `{M,F,Args}' an MFA; anything else is
    %% an ordinary tuple expression.
    try erl_parse:normalise(ArgsExpr) of
        Args when is_list(Args) -> mfa_callable(Role, M, F, Args, Anno);
        _ -> expr_of(Tokens, Role)
    catch
        _:_ -> expr_of(Tokens, Role)
    end.

expr_of(Tokens, Role) ->
    case erl_parse:parse_exprs(Tokens) of
        {ok, Exprs} -> {function, 0, [{clause, anno(Tokens), [], [], Exprs}], false};
        {error, {Loc, Mod, Desc}} -> fail(Role, {syntax, Loc, Mod, Desc})
    end.

%% A direct remote call compiles to the fastest call; arguments that have no
%% literal form (pids, refs, funs) fall back to apply/3.
mfa_callable(_Role, M, F, Args, Anno) ->
    try [erl_parse:abstract(A, [{location, location(Anno)}]) || A <- Args] of
        AbsArgs ->
            Call = {call, Anno, {remote, Anno, {atom, Anno, M}, {atom, Anno, F}}, AbsArgs},
            {function, 0, [{clause, Anno, [], [], [Call]}], false}
    catch
        _:_ ->
            case stops_vm(M, F, length(Args)) of
                true -> {function, 0, [{clause, Anno, [], [], [raise_stop(Anno, M, F, length(Args))]}], false};
                false -> {fn, fun() -> erlang:apply(M, F, Args) end}
            end
    end.

-spec fail(role(), term()) -> no_return().
fail(Role, Reason) -> throw({beamlab_code, {Role, Reason}}).

%% User functions become '$<role>'/Arity; their self-calls follow the rename.
rename_calls(Term, Name, Arity) ->
    map_tree(fun({call, A, {atom, A2, N}, Args}) when N =:= Name, length(Args) =:= Arity ->
                     {call, A, {atom, A2, '$self'}, Args};
                (T) -> T
             end, Term).

calls_self(Clauses, Arity) ->
    try
        _ = map_tree(fun({call, _, {atom, _, '$self'}, Args}) when length(Args) =:= Arity ->
                             throw(self_call);
                        (T) -> T
                     end, Clauses),
        false
    catch
        throw:self_call -> true
    end.

%% Post-order rewrite of every tuple and list in an abstract term.
map_tree(Fun, T) when is_tuple(T) ->
    Fun(list_to_tuple([map_tree(Fun, E) || E <- tuple_to_list(T)]));
map_tree(Fun, L) when is_list(L) ->
    [map_tree(Fun, E) || E <- L];
map_tree(_Fun, T) ->
    T.

%% spawn(Fun) -> spawn(beamlab_runtime_alloc:gc_after(Fun)), also for
%% spawn_link, spawn_monitor, spawn_opt and the M, F, Args forms.
wrap_spawns(Parsed = #{runner := {function, A, Clauses, Rec}}) ->
    Parsed#{runner := {function, A, beamlab_runtime_alloc_wrap:spawns(Clauses), Rec}};
wrap_spawns(Parsed) ->
    Parsed.

%%====================================================================
%% Checks
%%====================================================================

check_arities(Parsed) ->
    HasInit = maps:is_key(init, Parsed),
    HasIR = maps:is_key(init_runner, Parsed),
    RA = arity(maps:get(runner, Parsed)),
    RA > 0 andalso not HasIR andalso fail(runner, {needs_init_runner, RA}),
    maps:foreach(
      fun(init, P) ->
              A = arity(P),
              A > 0 andalso fail(init, {bad_arity, A});
         (Role, P) when Role =:= init_runner; Role =:= done ->
              A = arity(P),
              A > 1 andalso fail(Role, {bad_arity, A}),
              A =:= 1 andalso not HasInit andalso fail(Role, {needs_init, A});
         (runner, _) ->
              ok
      end, Parsed),
    maps:foreach(fun(Role, {function, _, Clauses, _}) -> check_remote_calls(Role, Clauses);
                    (_, {fn, _}) -> ok
                 end, Parsed).

arity({function, A, _, _}) -> A;
arity({fn, F}) -> {arity, A} = erlang:fun_info(F, arity), A.

%% Report calls to functions that do not exist before running anything.
check_remote_calls(Role, Clauses) ->
    _ = map_tree(
          fun({call, Anno, {remote, _, {atom, _, M}, {atom, _, F}}, Args} = T) ->
                  A = length(Args),
                  exists(M, F, A) orelse fail(Role, {undef, location(Anno), {M, F, A}}),
                  T;
             (T) ->
                  T
          end, Clauses),
    ok.

exists(M, F, A) ->
    case code:ensure_loaded(M) of
        {module, M} -> erlang:function_exported(M, F, A) orelse erlang:is_builtin(M, F, A);
        _ -> false
    end.

location(Anno) ->
    case erl_anno:column(Anno) of
        undefined -> erl_anno:line(Anno);
        Col -> {erl_anno:line(Anno), Col}
    end.

%%====================================================================
%% Calls that would stop the VM
%%====================================================================

%% Benchmarked code runs inside beamlab's VM: `halt()' or `init:stop()'
%% there would end beamlab with no result and exit code 0. Every direct
%% call to a function that stops the VM (also through apply/3 with literal
%% names, a `fun erlang:halt/1' or an `{erlang, halt, Args}' tuple) is
%% compiled into an error naming it instead, so only that job fails, when
%% it runs. (Calls whose module or function is only known at run time are
%% not caught here; the escript's launcher reports such a stop.)
guard_vm_stops({function, A, Clauses, Recursive}) ->
    {function, A, map_tree(fun stop_call/1, Clauses), Recursive};
guard_vm_stops(Fn) ->
    Fn.

stop_call({call, Anno, Callee, Args} = T) ->
    case {callee(Callee), Args} of
        {{erlang, apply}, [{atom, _, M}, {atom, _, F}, ArgList]} ->
            case list_length(ArgList) of
                N when is_integer(N) -> stop_or(Anno, M, F, N, T);
                unknown -> T
            end;
        {{M, F}, _} ->
            stop_or(Anno, M, F, length(Args), T);
        {unknown, _} ->
            T
    end;
stop_call({'fun', Anno, {function, {atom, _, M}, {atom, _, F}, {integer, _, N}}} = T) ->
    stop_fun(Anno, M, F, N, T);
stop_call({'fun', Anno, {function, M, F, N}} = T) when is_atom(M), is_atom(F), is_integer(N) ->
    stop_fun(Anno, M, F, N, T);
stop_call(T) ->
    T.

%% A remote call with literal names, or a local call: only the
%% auto-imported BIFs can be meant (the user's own function was renamed to
%% '$self').
callee({remote, _, {atom, _, M}, {atom, _, F}}) -> {M, F};
callee({atom, _, F}) -> {erlang, F};
callee(_) -> unknown.

stop_or(Anno, M, F, N, T) ->
    case stops_vm(M, F, N) of
        true -> raise_stop(Anno, M, F, N);
        false -> T
    end.

stop_fun(Anno, M, F, N, T) ->
    case stops_vm(M, F, N) of
        true ->
            Vars = [{var, Anno, list_to_atom("_A" ++ integer_to_list(I))} || I <- lists:seq(1, N)],
            {'fun', Anno, {clauses, [{clause, Anno, Vars, [], [raise_stop(Anno, M, F, N)]}]}};
        false -> T
    end.

raise_stop(Anno, M, F, N) ->
    Name = iolist_to_binary(io_lib:format("~ts:~ts/~b", [M, F, N])),
    {call, Anno, {remote, Anno, {atom, Anno, erlang}, {atom, Anno, error}},
     [{tuple, Anno, [{atom, Anno, beamlab_stops_vm}, erl_parse:abstract(Name, [{location, location(Anno)}])]}]}.

list_length({nil, _}) -> 0;
list_length({cons, _, _, Tail}) ->
    case list_length(Tail) of
        unknown -> unknown;
        N -> N + 1
    end;
list_length(_) -> unknown.

%% @doc True for a function that stops (or restarts) the VM it runs in.
-spec stops_vm(atom(), atom(), non_neg_integer()) -> boolean().
stops_vm(erlang, halt, N) -> N =< 2;
stops_vm(init, stop, N) -> N =< 1;
stops_vm(init, reboot, 0) -> true;
stops_vm(init, restart, N) -> N =< 1;
stops_vm(c, q, 0) -> true;
stops_vm(c, halt, N) -> N =< 1;
stops_vm(_, _, _) -> false.

%%====================================================================
%% Code generation
%%====================================================================

build(Base, Parsed) ->
    %% Choosing a free name and loading under it are one step: jobs of a
    %% comparison compile at the same time.
    global:trans({?MODULE, names}, fun() -> build_as(free_name(Base, 1), Parsed) end, [node()]).

free_name(Base, N) ->
    Mod = case N of
              1 -> Base;
              _ -> list_to_atom(atom_to_list(Base) ++ "_" ++ integer_to_list(N))
          end,
    %% Old code still running (a job being stopped) holds the name too.
    case erlang:module_loaded(Mod) orelse erlang:check_old_code(Mod) of
        true -> free_name(Base, N + 1);
        false -> Mod
    end.

build_as(Mod, Parsed) ->
    A0 = erl_anno:new(0),
    Runner = maps:get(runner, Parsed),
    RA = arity(Runner),
    {RunnerForms, Call, RunnerFun} =
        case Runner of
            {function, _, Clauses, Recursive} ->
                Inline = case Recursive of
                             true -> [];
                             false -> [{attribute, A0, compile, {inline, [{'$runner', RA}]}}]
                         end,
                {Inline ++ [function_form('$runner', RA, Clauses)], "'$runner'", undefined};
            {fn, Fun} ->
                {[], "F", Fun}
        end,
    {HookForms, HookExports, Hooks} = hooks(Mod, Parsed),
    Loop = loop_source(RA, Call),
    Forms = [{attribute, A0, module, Mod},
             {attribute, A0, export, [{'$continuous', 3}, {'$timed', 3} | HookExports]}]
        ++ scaffold(Loop) ++ RunnerForms ++ HookForms,
    case compile:forms(Forms, [binary, return_errors, nowarn_unused_vars,
                               nowarn_unused_function, nowarn_shadow_vars]) of
        {ok, Mod, Bin} ->
            {module, Mod} = code:load_binary(Mod, "beamlab_generated", Bin),
            {ok, Hooks#{module => Mod, runner_arity => RA, runner_fun => RunnerFun}};
        {ok, Mod, Bin, _Warnings} ->
            {module, Mod} = code:load_binary(Mod, "beamlab_generated", Bin),
            {ok, Hooks#{module => Mod, runner_arity => RA, runner_fun => RunnerFun}};
        {error, Errors, _Warnings} ->
            {error, first_error(Errors, Parsed)}
    end.

%% Every role's code starts at line 1, so a location alone does not say
%% whose code is wrong: compile each user function on its own to find it.
first_error(Errors, Parsed) ->
    Culprits = [{Role, Errs} || Role <- [runner, init, init_runner, done],
                                {function, A, Clauses, _} <- [maps:get(Role, Parsed, none)],
                                {error, Errs, _} <- [compile:forms(
                                                       [{attribute, 0, module, beamlab_gen_check},
                                                        {attribute, 0, export, [{'$f', A}]},
                                                        function_form('$f', A, Clauses)],
                                                       [binary, return_errors])]],
    case Culprits of
        [{Role, [{_File, [{Loc, EMod, Desc} | _]} | _]} | _] -> {Role, {syntax, Loc, EMod, Desc}};
        _ ->
            [{_File, [{Loc, EMod, Desc} | _]} | _] = Errors,
            {runner, {syntax, Loc, EMod, Desc}}
    end.

function_form(Name, Arity, Clauses) ->
    Renamed = map_tree(fun({call, A, {atom, A2, '$self'}, Args}) when length(Args) =:= Arity ->
                               {call, A, {atom, A2, Name}, Args};
                          (T) -> T
                       end, Clauses),
    {function, element(2, hd(Clauses)), Name, Arity, Renamed}.

%% Hooks given as code are compiled into the module and exported with a
%% uniform arity (init/0, init_runner/1, done/1); funs are wrapped in place.
hooks(Mod, Parsed) ->
    Specs = [{init, '$init', '$hook_init', 0},
             {init_runner, '$init_runner', '$hook_init_runner', 1},
             {done, '$done', '$hook_done', 1}],
    lists:foldl(
      fun({Role, Name, Export, Arity}, {Forms, Exports, Funs}) ->
              case maps:find(Role, Parsed) of
                  error ->
                      {Forms, Exports, Funs#{Role => default_hook(Arity)}};
                  {ok, {fn, F}} ->
                      {Forms, Exports, Funs#{Role => wrap_fun(F, Arity)}};
                  {ok, {function, A, Clauses, _}} ->
                      Wrapper = wrapper_source(Export, Name, Arity, A),
                      {Forms ++ [function_form(Name, A, Clauses) | scaffold(Wrapper)],
                       [{Export, Arity} | Exports],
                       Funs#{Role => erlang:make_fun(Mod, Export, Arity)}}
              end
      end, {[], [], #{}}, Specs).

default_hook(0) -> fun() -> undefined end;
default_hook(1) -> fun(_) -> undefined end.

wrap_fun(F, 0) -> F;
wrap_fun(F, 1) when is_function(F, 1) -> F;
wrap_fun(F, 1) when is_function(F, 0) -> fun(_) -> F() end.

wrapper_source(Export, Name, 0, 0) ->
    io_lib:format("~0tp() -> ~0tp().", [Export, Name]);
wrapper_source(Export, Name, 1, 0) ->
    io_lib:format("~0tp(_) -> ~0tp().", [Export, Name]);
wrapper_source(Export, Name, 1, 1) ->
    io_lib:format("~0tp(X) -> ~0tp(X).", [Export, Name]).

%% The loops. `Call' is the runner: a local function (inlined) or the fun F.
loop_source(RA, Call) ->
    Lo = erlang:convert_time_unit(?BATCH_LO_US, microsecond, native),
    Hi = erlang:convert_time_unit(?BATCH_HI_US, microsecond, native),
    Inner = case RA of
                0 -> io_lib:format("'$inner'(N, F, I, S) -> ~s(), '$inner'(N - 1, F, I, S).", [Call]);
                1 -> io_lib:format("'$inner'(N, F, I, S) -> ~s(I), '$inner'(N - 1, F, I, S).", [Call]);
                2 -> io_lib:format("'$inner'(N, F, I, S) -> '$inner'(N - 1, F, I, ~s(I, S)).", [Call])
            end,
    ["'$continuous'(C, F, I) -> '$outer'(C, F, I, I, 1, erlang:monotonic_time()).\n",
     "'$outer'(C, F, I, S, K, T0) ->\n"
     "    S1 = '$inner'(K, F, I, S),\n"
     "    counters:add(C, 1, K),\n"
     "    T1 = erlang:monotonic_time(),\n"
     "    '$outer'(C, F, I, S1, '$adapt'(K, T1 - T0), T1).\n",
     io_lib:format("'$adapt'(K, D) when D < ~w, K < ~w -> K bsl 1;\n"
                   "'$adapt'(K, D) when D > ~w, K > 1 -> K bsr 1;\n"
                   "'$adapt'(K, _) -> K.\n", [Lo, ?MAX_BATCH, Hi]),
     "'$inner'(0, _, _, S) -> S;\n", Inner, "\n",
     "'$timed'(N, F, I) ->\n"
     "    T0 = erlang:monotonic_time(),\n"
     "    _ = '$inner'(N, F, I, I),\n"
     "    erlang:monotonic_time() - T0.\n"].

%% Parses generated source into forms (anno line 0 keeps them apart from
%% the user's lines in error messages).
scaffold(Source) ->
    {ok, Tokens, _} = erl_scan:string(lists:flatten(Source), 0),
    split_forms(Tokens, []).

split_forms([], []) -> [];
split_forms([{dot, _} = Dot | Rest], Acc) ->
    {ok, Form} = erl_parse:parse_form(lists:reverse([Dot | Acc])),
    [Form | split_forms(Rest, [])];
split_forms([T | Rest], Acc) ->
    split_forms(Rest, [T | Acc]).
