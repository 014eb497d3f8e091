%%% @doc The project in the current directory, for `run --bench' and
%%% `check': building it with its own tool, its bench modules as jobs, and
%%% the git commit its results are filed under.
%%%
%%% When beamlab runs inside the build tool (the rebar3 plugin
%%% {@link beamlab_rebar3}, the Mix task), the tool has built the
%%% project already and passes it as `project' (root, code paths); from
%%% the command line beamlab builds it (`--no-build': as it is).
-module(beamlab_cli_project).

-export([project/1, bench_jobs/2, runnable/1, attach/3, info/1, progress/1, error_lines/2,
         tool_argv/1, code_map/1]).

-type project() :: beamlab_project_build:project().

%% @doc The project the command works on (built unless `--no-build').
-spec project(beamlab_cli_args:parsed()) -> project().
project(#{project := Project}) ->
    Project;
project(Parsed) ->
    {ok, Root} = file:get_cwd(),
    Build = not beamlab_cli_args:get(no_build, Parsed, false),
    Tool = beamlab_project_build:detect(Root),
    Build andalso Tool =/= none
        andalso progress(io_lib:format("building the project (~ts compile)", [Tool])),
    case beamlab_project_build:build(Root, #{build => Build}) of
        {ok, P} -> P;
        {error, Reason} -> beamlab_cli_error:fail("~ts", [beamlab_project_build:format_error(Reason)])
    end.

%% @doc The jobs of the bench modules in `Dir', compiled against the
%% project and loaded in this VM. Every mistake in them is one line on
%% stderr (the last one through the usage error, exit code 2).
-spec bench_jobs(file:filename(), project()) -> [beamlab_project_bench:job()].
bench_jobs(Dir, #{paths := Paths, include := Include}) ->
    Sources = ok(beamlab_project_bench:sources(Dir)),
    Out = case beamlab_runtime_file:private_dir("beamlab-bench") of
              {ok, D} -> D;
              {error, Why} -> beamlab_cli_error:fail("cannot create a temporary directory: ~ts",
                                                     [beamlab_runtime_file:format_error(Why)])
          end,
    try
        beamlab_cli_args:add_code_paths(Paths),
        ok = ok(beamlab_project_bench:compile(Sources, Out, #{paths => Paths, include => [Dir | Include]})),
        Mods = ok(beamlab_project_bench:load(Out)),
        beamlab_project_bench:jobs(ok(beamlab_project_bench:benchmarks(Mods)))
    after
        %% The modules stay loaded; the directory goes.
        _ = code:del_path(Out),
        _ = file:del_dir_r(Out)
    end.

ok({ok, V}) -> V;
ok(ok) -> ok;
ok({error, Reason}) ->
    error_lines(beamlab_project_bench:format_error(Reason),
                case Reason of
                    {tool, _} -> fail;
                    _ -> usage
                end).

%% @doc An error of several lines (one per mistake): each on stderr, the
%% last through the usage error (exit 2) or failure (exit 1).
-spec error_lines(unicode:chardata(), usage | fail) -> no_return().
error_lines(Text, Kind) ->
    Lines = string:split(unicode:characters_to_list(Text), "\n", all),
    _ = [io:format(standard_error, "beamlab: ~ts~n", [L]) || L <- lists:droplast(Lines)],
    case Kind of
        usage -> beamlab_cli_error:usage("~ts", [lists:last(Lines)]);
        fail -> beamlab_cli_error:fail("~ts", [lists:last(Lines)])
    end.

%% @doc The jobs whose code compiles, and a failed benchmark for each of
%% the others: in a project one broken benchmark (a runner calling a
%% function this version lacks) must not stop the rest.
-spec runnable([beamlab_project_bench:job()]) ->
          {[beamlab_project_bench:job()], [beamlab_result:benchmark()]}.
runnable(Jobs) ->
    lists:foldr(
      fun(#{label := L} = J, {Ok, Failed}) ->
              case beamlab_engine_code:compile(code_map(J)) of
                  {ok, Exec} ->
                      beamlab_engine_code:purge(Exec),
                      {[J | Ok], Failed};
                  {error, Reason} ->
                      Msg = iolist_to_binary(beamlab_engine_code:format_error(Reason)),
                      {Ok, [beamlab_result:benchmark(L, [], #{group => <<"run">>, params => params(J),
                                                              extra => #{status => failed, error => Msg}})
                            | Failed]}
              end
      end, {[], []}, Jobs).

%% @doc A bench run's document: each benchmark says which module and
%% input it comes from; they are not compared with each other (they are
%% not alternatives of one another); the failed ones are added; the
%% project's commit goes to `params.project'.
-spec attach(beamlab_result:result(), [beamlab_project_bench:job()], [beamlab_result:benchmark()]) ->
          beamlab_result:result().
attach(#{benchmarks := Bs, params := Params} = Doc, Jobs, Failed) ->
    ByLabel = maps:from_list([{L, J} || #{label := L} = J <- Jobs]),
    New = [begin
               #{extra := X, params := P} = B1 = maps:remove(comparison, B),
               B1#{extra := X#{<<"rel">> => null, <<"baseline">> => false},
                   params := maps:merge(P, beamlab_json:canonical(params(maps:get(N, ByLabel, #{}))))}
           end || #{name := N} = B <- Bs],
    {ok, Root} = file:get_cwd(),
    Doc#{benchmarks := New ++ Failed,
         params := Params#{<<"project">> => beamlab_json:canonical(info(Root))}}.

params(Job) ->
    maps:with([module, input], Job).

%% @doc A bench job as the engine takes it (its code and label only).
-spec code_map(beamlab_project_bench:job()) -> beamlab_engine:job_spec().
code_map(Job) ->
    maps:with([runner, init, init_runner, done, label], Job).

%% @doc The project's root and, in a git repository, the commit of the
%% working tree (and whether it has changes): what history files are
%% named after.
-spec info(file:filename()) -> map().
info(Root) ->
    Git = case beamlab_project_git:toplevel(Root) of
              {ok, Top} ->
                  case beamlab_project_git:head(Top) of
                      {ok, H} -> maps:with([commit, short, dirty, date], H);
                      {error, _} -> #{}
                  end;
              {error, _} -> #{}
          end,
    Git#{root => unicode:characters_to_binary(Root),
         tool => beamlab_project_build:detect(Root)}.

%% @doc The command line of `rebar3 beamlab ARGS' and `mix beamlab ARGS':
%% `check ...' is `beamlab check ...'; `run ...' or bare options are
%% `beamlab run --bench bench ...' (unless they name another --bench).
-spec tool_argv([string()]) -> [string()].
tool_argv(["check" | Rest]) ->
    ["check" | Rest];
tool_argv(["run" | Rest]) ->
    tool_argv(Rest);
tool_argv(Args) ->
    case lists:any(fun(A) -> A =:= "--bench" orelse lists:prefix("--bench=", A) end, Args) of
        true -> ["run" | Args];
        false -> ["run", "--bench", "bench" | Args]
    end.

%% @doc A progress line on stderr.
-spec progress(unicode:chardata()) -> ok.
progress(Text) ->
    io:format(standard_error, "beamlab: ~ts~n", [Text]).
