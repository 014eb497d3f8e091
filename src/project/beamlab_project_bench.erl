%%% @doc Benchmark modules that live in a project: the convention, its
%%% discovery and the validation of what the modules declare.
%%%
%%% A project keeps its benchmarks in `bench/': Erlang modules named
%%% `*_bench' (files `bench/*_bench.erl'), and in Elixir projects the
%%% modules of `bench/*_bench.ex'. Each bench module exports
%%% `benchmarks/0', which returns a list of maps:
%%% ```
%%% benchmarks() ->
%%%     [#{name => "sort 1000", runner => fun() -> lists:sort(?LIST) end},
%%%      #{name => "encode", runner => {mylib, encode, [#{a => 1}]}},
%%%      #{name => "lookup", runner => "run(T) -> ets:lookup(T, 1).",
%%%        init => fun() -> mylib:table() end, init_runner => fun(T) -> T end},
%%%      #{name => "parse", runner => fun(Input) -> mylib:parse(Input) end,
%%%        inputs => [{"small", Small}, {"large", Large}]}].
%%% '''
%%% `name' (a string, unique in the project) and `runner' (a fun of arity
%%% 0, or of arity 1 or 2 with `init_runner' or `inputs'; an `{M, F, Args}'
%%% tuple; or a code string as `beamlab run' takes it) are required;
%%% `init', `init_runner' and `done' are the engine's hooks; `inputs' (a
%%% list of `{Label, Value}' or a map) makes one benchmark per input,
%%% named `Name[Label]', whose runner receives the input (it is the
%%% benchmark's `init' result, given to `init_runner', which by default
%%% passes it on; with an `init' of its own, that `init' is a fun of
%%% arity 1 that receives the input).
%%%
%%% Sources are compiled with the project's tools (`erlc', `elixirc') in a
%%% directory of the caller's choice, with the project's code paths, so
%%% `-include_lib' and remote calls resolve as in the project. Every
%%% mistake is reported as one line naming the file and the benchmark.
-module(beamlab_project_bench).

-export([sources/1, compile/3, load/1, benchmarks/1, jobs/1, validate/1, format_error/1, mistakes/1]).

-type callable() :: string() | binary() | fun() | {module(), atom(), [term()]}.
-type bench() :: #{module := module(), source := binary(), name := binary(),
                   runner := callable(), init => callable(), init_runner => callable(),
                   done => callable(), inputs => [{binary(), term()}]}.
%% A job for the engine (its code map), with where it came from.
-type job() :: #{label := binary(), runner := callable(), init => callable(),
                 init_runner => callable(), done => callable(),
                 module := module(), input => binary()}.
-type sources() :: #{dir := file:filename(), erl := [file:filename()],
                     ex := [file:filename()], beam := [file:filename()]}.
-type compile_opts() :: #{paths => [file:filename()], include => [file:filename()],
                          log => file:filename()}.
-type error_reason() :: {no_bench_dir, file:filename()}
                      | {no_bench_modules, file:filename()}
                      | {compile, [binary()]}
                      | {invalid, [binary()]}
                      | {no_elixirc, [file:filename()]}
                      | {tool, beamlab_project_cmd:error_reason()}.
-export_type([bench/0, job/0, callable/0, sources/0, error_reason/0]).

-define(KEYS, [name, runner, init, init_runner, done, inputs]).

%% @doc The bench sources (or compiled bench modules) in `Dir'.
-spec sources(file:filename()) -> {ok, sources()} | {error, error_reason()}.
sources(Dir) ->
    case filelib:is_dir(Dir) of
        false -> {error, {no_bench_dir, Dir}};
        true ->
            In = fun(Pattern) -> [filename:join(Dir, F) || F <- lists:sort(filelib:wildcard(Pattern, Dir))] end,
            S = #{dir => Dir, erl => In("*_bench.erl"), ex => In("*_bench.ex"), beam => In("*.beam")},
            case S of
                #{erl := [], ex := [], beam := []} -> {error, {no_bench_modules, Dir}};
                _ -> {ok, S}
            end
    end.

%% @doc Compiles the bench sources into `OutDir' (created if missing) with
%% the project's code paths (`paths') and include directories
%% (`include'). Compiled modules found in the directory are copied there
%% as they are. Errors are the compilers' lines.
-spec compile(sources(), file:filename(), compile_opts()) -> ok | {error, error_reason()}.
compile(#{erl := Erl, ex := Ex, beam := Beam}, OutDir, Opts) ->
    ok = filelib:ensure_path(OutDir),
    _ = [{ok, _} = file:copy(B, filename:join(OutDir, filename:basename(B))) || B <- Beam],
    Pa = lists:append([["-pa", P] || P <- maps:get(paths, Opts, [])]),
    Inc = lists:append([["-I", I] || I <- maps:get(include, Opts, [])]),
    Log = maps:with([log], Opts),
    first_error([{Erl, fun() -> tool("erlc", ["-o", OutDir | Inc ++ Pa ++ Erl], Log) end},
                 {Ex, fun() ->
                              case beamlab_project_cmd:find("elixirc") of
                                  false -> {error, {no_elixirc, Ex}};
                                  _ -> tool("elixirc", ["-o", OutDir, "--ignore-module-conflict" | Pa ++ Ex], Log)
                              end
                      end}]).

%% Each compiler that has files to compile, until one fails.
first_error([]) -> ok;
first_error([{[], _} | Rest]) -> first_error(Rest);
first_error([{_, Compile} | Rest]) ->
    case Compile() of
        ok -> first_error(Rest);
        {error, _} = E -> E
    end.

tool(Program, Args, Opts) ->
    case beamlab_project_cmd:run(Program, Args, Opts) of
        {ok, _} -> ok;
        {error, {exit, _, _, Output}} -> {error, {compile, compiler_errors(Output)}};
        {error, Reason} -> {error, {tool, Reason}}
    end.

%% The compilers' error lines (warnings left out): `file:line:col: text'
%% from erlc, `** (CompileError) file:line: text' (and the syntax errors'
%% forms) from elixirc; the last lines when nothing matches.
compiler_errors(Output) ->
    Lines = beamlab_project_cmd:last_lines(Output, 200),
    Errors = [L || L <- Lines,
                   re:run(L, <<"^[^ ]+:[0-9]+(:[0-9]+)?: ">>) =/= nomatch
                       andalso binary:match(L, <<"Warning:">>) =:= nomatch
                       orelse binary:match(L, <<"(CompileError)">>) =/= nomatch
                       orelse binary:match(L, <<"(SyntaxError)">>) =/= nomatch
                       orelse binary:match(L, <<"(TokenMissingError)">>) =/= nomatch],
    case Errors of
        [] -> beamlab_project_cmd:last_lines(Output, 5);
        _ -> Errors
    end.

%% @doc Puts `Dir' first on the code path and (re)loads every module
%% compiled there; returns them sorted.
-spec load(file:filename()) -> {ok, [module()]} | {error, error_reason()}.
load(Dir) ->
    true = code:add_patha(Dir),
    Mods = lists:sort([list_to_atom(filename:basename(F, ".beam"))
                       || F <- filelib:wildcard(filename:join(Dir, "*.beam"))]),
    Failed = [{M, Why} || M <- Mods,
                          Why <- [begin
                                      _ = code:purge(M),
                                      code:load_abs(filename:join(Dir, atom_to_list(M)))
                                  end],
                          element(1, Why) =/= module],
    case Failed of
        [] -> {ok, Mods};
        _ -> {error, {invalid, [iolist_to_binary(io_lib:format("~ts: cannot be loaded: ~0tp", [M, W]))
                                || {M, {error, W}} <- Failed]}}
    end.

%% @doc The benchmarks the bench modules among `Modules' declare, checked:
%% every mistake in any module is one line of the error. Bench modules
%% are those named `*_bench' (each must export `benchmarks/0') and the
%% modules of `*_bench.ex' files that export it (each such file must
%% have one).
-spec benchmarks([module()]) -> {ok, [bench()]} | {error, error_reason()}.
benchmarks(Modules) ->
    Info = [{M, source(M), erlang:function_exported(M, benchmarks, 0)} || M <- Modules],
    Named = [M || {M, _, _} <- Info, lists:suffix("_bench", atom_to_list(M))],
    Exporting = [M || {M, _, true} <- Info],
    BenchMods = lists:usort(Named ++ Exporting),
    Missing = [line(Src, "~ts does not export benchmarks/0", [M])
               || {M, Src, false} <- Info, lists:member(M, Named)],
    ExSources = lists:usort([Src || {_, Src, _} <- Info, is_ex(Src)]),
    EmptyEx = [line(Src, "defines no module exporting benchmarks/0", [])
               || Src <- ExSources,
                  not lists:any(fun({_, S, E}) -> S =:= Src andalso E end, Info)],
    Results = [declared(M, Src) || {M, Src, true} <- Info, lists:member(M, BenchMods)],
    Benches = lists:append([Bs || {ok, Bs} <- Results]),
    Errors = Missing ++ EmptyEx ++ lists:append([Es || {error, Es} <- Results]) ++ duplicates(Benches),
    case {Errors, Benches} of
        {[], []} -> {error, {invalid, [<<"no bench module (bench/*_bench.erl exporting benchmarks/0) found">>]}};
        {[], _} -> {ok, Benches};
        _ -> {error, {invalid, Errors}}
    end.

source(M) ->
    Src = proplists:get_value(source, M:module_info(compile), atom_to_list(M) ++ ".erl"),
    relative(unicode:characters_to_binary(Src)).

%% Paths under the working directory are shown relative to it.
relative(Path) ->
    {ok, Cwd} = file:get_cwd(),
    Prefix = unicode:characters_to_binary(Cwd ++ "/"),
    case string:prefix(Path, Prefix) of
        nomatch -> Path;
        Rest -> Rest
    end.

is_ex(Src) ->
    filename:extension(Src) =:= <<".ex">>.

line(Src, Fmt, Args) ->
    iolist_to_binary([Src, ": ", io_lib:format(Fmt, Args)]).

declared(M, Src) ->
    try M:benchmarks() of
        List when is_list(List), List =/= [] ->
            Checked = [check(M, Src, I, B) || {I, B} <- lists:zip(lists:seq(1, length(List)), List)],
            case lists:append([Es || {error, Es} <- Checked]) of
                [] -> {ok, [B || {ok, B} <- Checked]};
                Errors -> {error, Errors}
            end;
        [] ->
            {error, [line(Src, "~ts:benchmarks() returned no benchmarks", [M])]};
        Other ->
            {error, [line(Src, "~ts:benchmarks() must return a list of maps, got ~0tP", [M, Other, 8])]}
    catch
        Class:Reason ->
            {error, [line(Src, "~ts:benchmarks() failed: ~0tp:~0tP", [M, Class, Reason, 10])]}
    end.

check(M, Src, I, Map) when is_map(Map) ->
    Where = case maps:find(name, Map) of
                {ok, N} when is_binary(N); is_list(N) ->
                    case text(N) of
                        {ok, Shown} -> io_lib:format("benchmark \"~ts\" of ~ts", [Shown, M]);
                        error -> io_lib:format("benchmark ~b of ~ts", [I, M])
                    end;
                _ -> io_lib:format("benchmark ~b of ~ts", [I, M])
            end,
    Problems = lists:append([unknown_keys(Map), name_problems(Map), runner_problems(Map),
                             hook_problems(Map), input_problems(Map)]),
    case Problems of
        [] ->
            {ok, Name} = text(maps:get(name, Map)),
            B0 = maps:with([runner, init, init_runner, done], Map),
            B = B0#{module => M, source => Src, name => Name},
            {ok, case maps:find(inputs, Map) of
                     {ok, Inputs} -> B#{inputs => inputs(Inputs)};
                     error -> B
                 end};
        _ ->
            {error, [line(Src, "~ts: ~ts", [Where, P]) || P <- Problems]}
    end;
check(M, Src, I, Other) ->
    {error, [line(Src, "benchmark ~b of ~ts is not a map: ~0tP", [I, M, Other, 8])]}.

unknown_keys(Map) ->
    [io_lib:format("unknown key ~0tp (the keys are ~ts)", [K, keys_text()])
     || K <- lists:sort(maps:keys(Map)), not lists:member(K, ?KEYS)].

keys_text() ->
    lists:join(", ", [atom_to_list(K) || K <- ?KEYS]).

name_problems(#{name := N}) ->
    case text(N) of
        {ok, T} when T =/= <<>> -> [];
        _ -> [io_lib:format("name must be a non-empty string, got ~0tP", [N, 6])]
    end;
name_problems(_) ->
    ["has no name (a string)"].

runner_problems(#{runner := R} = Map) ->
    case arity(R) of
        bad -> [io_lib:format("runner must be a fun, an {M, F, Args} tuple or a code string, got ~0tP",
                              [R, 6])];
        A when A > 0, not is_map_key(init_runner, Map), not is_map_key(inputs, Map) ->
            [io_lib:format("a runner of arity ~b needs init_runner or inputs (they give its argument)", [A])];
        A when A > 2 ->
            [io_lib:format("runner has arity ~b; it takes at most 2 arguments", [A])];
        0 when is_map_key(inputs, Map), not is_map_key(init_runner, Map) ->
            ["with inputs, the runner takes the input as its argument (arity 1)"];
        _ -> []
    end;
runner_problems(_) ->
    ["has no runner (a fun, an {M, F, Args} tuple or a code string)"].

hook_problems(Map) ->
    [io_lib:format("~ts must be a fun, an {M, F, Args} tuple or a code string, got ~0tP", [K, V, 6])
     || K <- [init, init_runner, done], {ok, V} <- [maps:find(K, Map)], arity(V) =:= bad]
    ++ case Map of
           #{inputs := _, init := Init} when not is_function(Init, 1) ->
               ["with inputs, init must be a fun of arity 1 (it receives the input)"];
           _ -> []
       end.

input_problems(#{inputs := Inputs}) ->
    case inputs(Inputs) of
        bad -> [io_lib:format("inputs must be a non-empty list of {Label, Value} or a map, got ~0tP",
                              [Inputs, 6])];
        List ->
            Labels = [L || {L, _} <- List],
            [io_lib:format("input label \"~ts\" is used twice", [L])
             || L <- lists:usort(Labels), length([x || X <- Labels, X =:= L]) > 1]
    end;
input_problems(_) ->
    [].

inputs(Map) when is_map(Map), map_size(Map) > 0 ->
    inputs(lists:sort(maps:to_list(Map)));
inputs([_ | _] = List) ->
    Labelled = [{label(L), V} || {L, V} <- [E || E <- List, is_tuple(E), tuple_size(E) =:= 2]],
    case length(Labelled) =:= length(List) andalso lists:all(fun({L, _}) -> L =/= bad end, Labelled) of
        true -> Labelled;
        false -> bad
    end;
inputs(_) ->
    bad.

label(L) when is_atom(L) -> atom_to_binary(L);
label(L) when is_integer(L) -> integer_to_binary(L);
label(L) when is_float(L) -> float_to_binary(L, [short]);
label(L) ->
    case text(L) of
        {ok, T} when T =/= <<>> -> T;
        _ -> bad
    end.

text(B) when is_binary(B) ->
    case unicode:characters_to_binary(B) of
        T when is_binary(T) -> {ok, T};
        _ -> error
    end;
text(L) when is_list(L) ->
    try unicode:characters_to_binary(L) of
        T when is_binary(T) -> {ok, T};
        _ -> error
    catch error:_ -> error
    end;
text(_) ->
    error.

arity(F) when is_function(F) -> element(2, erlang:fun_info(F, arity));
arity({M, F, A}) when is_atom(M), is_atom(F), is_list(A) -> 0;
arity(Code) when is_binary(Code) -> 0;
arity(Code) when is_list(Code) ->
    case text(Code) of
        {ok, _} -> 0;
        error -> bad
    end;
arity(_) -> bad.

duplicates(Benches) ->
    Names = [{Name, M} || #{name := N, module := M} = B <- Benches, Name <- names(N, B)],
    Seen = lists:foldl(fun({N, M}, Acc) -> Acc#{N => [M | maps:get(N, Acc, [])]} end, #{}, Names),
    [iolist_to_binary(io_lib:format("benchmark name \"~ts\" is used ~b times (~ts)",
                                    [N, length(Ms), lists:join(", ", [atom_to_list(M) || M <- lists:reverse(Ms)])]))
     || {N, Ms} <- lists:sort(maps:to_list(Seen)), length(Ms) > 1].

names(N, #{inputs := Inputs}) -> [input_name(N, L) || {L, _} <- Inputs];
names(N, _) -> [N].

input_name(N, L) -> <<N/binary, "[", L/binary, "]">>.

%% @doc The engine's jobs for the benchmarks, one per input.
-spec jobs([bench()]) -> [job()].
jobs(Benches) ->
    lists:append([bench_jobs(B) || B <- Benches]).

bench_jobs(#{name := N, module := M, inputs := Inputs} = B) ->
    Hooks = maps:with([init_runner, done], B),
    [Hooks#{label => input_name(N, L), module => M, input => L,
            runner => maps:get(runner, B),
            init => input_init(V, maps:find(init, B)),
            init_runner => maps:get(init_runner, B, fun(I) -> I end)}
     || {L, V} <- Inputs];
bench_jobs(#{name := N, module := M} = B) ->
    [(maps:with([runner, init, init_runner, done], B))#{label => N, module => M}].

input_init(V, error) -> fun() -> V end;
input_init(V, {ok, Init}) -> fun() -> Init(V) end.

%% @doc Loads the compiled bench modules of `Dir' and checks them: the
%% names of their benchmarks, or the error. Made to run in a fresh VM
%% holding a side's code ({@link beamlab_runtime_peer:run/3}: it returns
%% an exit code with the result).
-spec validate(file:filename()) -> {0, {ok, [binary()]}} | {2, {error, error_reason()}}.
validate(Dir) ->
    case load(Dir) of
        {ok, Mods} ->
            case benchmarks(Mods) of
                {ok, Benches} -> {0, {ok, [L || #{label := L} <- jobs(Benches)]}};
                {error, _} = E -> {2, E}
            end;
        {error, _} = E ->
            {2, E}
    end.

%% @doc One line for an error; several mistakes in the bench modules
%% are joined with "; " ({@link mistakes/1} gives them one by one).
-spec format_error(error_reason()) -> iolist().
format_error(Reason) ->
    beamlab_format_reason:line(fun error_line/1, Reason).

%% @doc The mistakes in the bench modules of an error (`compile',
%% `invalid'), one line each, for the command line to print a line per
%% mistake; `none' for any other reason.
-spec mistakes(term()) -> {ok, [unicode:chardata(), ...]} | none.
mistakes({Kind, [_ | _] = Lines}) when Kind =:= compile; Kind =:= invalid ->
    {ok, [beamlab_format_reason:line(fun(Text) -> Text end, L) || L <- Lines]};
mistakes(_) ->
    none.

error_line({no_bench_dir, Dir}) ->
    io_lib:format("~ts: no such directory (bench modules live in bench/, as bench/NAME_bench.erl)", [Dir]);
error_line({no_bench_modules, Dir}) ->
    io_lib:format("~ts holds no bench module (files named *_bench.erl, or *_bench.ex in an Elixir project)",
                  [Dir]);
error_line({Kind, _} = R) when Kind =:= compile; Kind =:= invalid ->
    {ok, Lines} = mistakes(R),
    lists:join("; ", Lines);
error_line({no_elixirc, [File | _]}) ->
    io_lib:format("~ts: Elixir bench modules need elixirc on the PATH", [File]);
error_line({tool, Reason}) ->
    beamlab_project_cmd:format_error(Reason);
error_line(Other) ->
    %% (a reason of no kind above: printed, never raised)
    beamlab_format_reason:term(Other).
