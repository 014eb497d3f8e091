%%% @doc A project's bench modules as the jobs of a benchmark: the
%%% composition of the project feature (the convention, its compilation
%%% and validation: {@link beamlab_project_bench}) with the engine (each
%%% job's code compiled before the run) and the result document (which
%%% module and input each benchmark comes from, the project's commit).
%%%
%%% In a project, one broken benchmark (a runner calling a function this
%%% version lacks) must not stop the others: a job whose code does not
%%% compile becomes a failed benchmark of the document.
-module(beamlab_experiment_project).

-export([jobs/1, attach/3, info/1, code_map/1]).

-type modules() :: #{dir := file:filename(),          % bench sources (bench/) or compiled bench modules
                     root => file:filename(),          % the project (default: the current directory)
                     paths => [file:filename()],       % its code paths
                     include => [file:filename()]}.    % include directories of the sources
-type jobs() :: #{jobs := [beamlab_project_bench:job()], failed := [beamlab_result:benchmark()]}.
-type error_reason() :: beamlab_project_bench:error_reason()
                      | {no_such_directory, file:filename()}
                      | {tmp_dir, term()}
                      | no_runnable_benchmark.
-export_type([modules/0, jobs/0, error_reason/0]).

%% @doc The bench modules of `dir' compiled (sources; compiled modules are
%% taken as they are) against the project's code paths, loaded in this
%% VM and validated; their jobs, and a failed benchmark for each job
%% whose code does not compile.
-spec jobs(modules()) -> {ok, jobs()} | {error, error_reason()}.
jobs(#{dir := Dir} = M) ->
    Paths = maps:get(paths, M, []),
    case beamlab_engine_paths:add_code_paths(Paths) of
        {ok, _} ->
            case beamlab_project_bench:sources(Dir) of
                {ok, #{erl := [], ex := []}} -> checked(beamlab_project_bench:load(Dir));
                {ok, Sources} -> compiled(Sources, Paths, [Dir | maps:get(include, M, [])]);
                {error, _} = E -> E
            end;
        {error, _} = E ->
            E
    end.

%% Sources are compiled in a private directory, removed once the modules
%% are loaded.
compiled(Sources, Paths, Include) ->
    case beamlab_runtime_file:private_dir("beamlab-bench") of
        {ok, Out} ->
            try beamlab_project_bench:compile(Sources, Out, #{paths => Paths, include => Include}) of
                ok -> checked(beamlab_project_bench:load(Out));
                {error, _} = E -> E
            after
                _ = code:del_path(Out),
                _ = file:del_dir_r(Out)
            end;
        {error, Why} ->
            {error, {tmp_dir, Why}}
    end.

checked({ok, Mods}) ->
    case beamlab_project_bench:benchmarks(Mods) of
        {ok, Benches} ->
            case runnable(beamlab_project_bench:jobs(Benches)) of
                #{jobs := []} -> {error, no_runnable_benchmark};
                Jobs -> {ok, Jobs}
            end;
        {error, _} = E -> E
    end;
checked({error, _} = E) ->
    E.

runnable(Jobs) ->
    {Ok, Failed} =
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
          end, {[], []}, Jobs),
    #{jobs => Ok, failed => Failed}.

%% @doc A bench job as the engine takes it (its code and label only).
-spec code_map(beamlab_project_bench:job()) -> beamlab_engine:job_spec().
code_map(Job) ->
    maps:with([runner, init, init_runner, done, label], Job).

%% @doc A bench run's document: each benchmark says which module and input
%% it comes from; they are not compared with each other (they are not
%% alternatives of one another); the failed ones are added; the project
%% goes to `params.project' (its commit names history files).
-spec attach(beamlab_result:result(), jobs(), file:filename()) -> beamlab_result:result().
attach(#{benchmarks := Bs, params := Params} = Doc, #{jobs := Jobs, failed := Failed}, Root) ->
    ByLabel = maps:from_list([{L, J} || #{label := L} = J <- Jobs]),
    New = [begin
               #{extra := X, params := P} = B1 = maps:remove(comparison, B),
               B1#{extra := X#{<<"rel">> => null, <<"baseline">> => false},
                   params := maps:merge(P, beamlab_json:canonical(params(maps:get(N, ByLabel, #{}))))}
           end || #{name := N} = B <- Bs],
    Doc#{benchmarks := New ++ Failed,
         params := Params#{<<"project">> => beamlab_json:canonical(info(Root))}}.

params(Job) ->
    maps:with([module, input], Job).

%% @doc The project's root, its build tool and, in a git repository, the
%% commit of the working tree (and whether tracked files changed).
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
    Git#{root => unicode:characters_to_binary(filename:absname(Root)),
         tool => beamlab_project_build:detect(Root)}.
