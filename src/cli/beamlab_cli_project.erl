%%% @doc The project in the current directory, for `run --bench' and
%%% `check', as the command line sees it: built with its own tool, the
%%% command lines of the build tools' entry points, errors of several
%%% lines and progress lines on stderr.
%%%
%%% When beamlab runs inside the build tool (the rebar3 plugin
%%% {@link beamlab_rebar3}, the Mix task), the tool has built the
%%% project already and passes it as `project' (root, code paths); from
%%% the command line beamlab builds it (`--no-build': as it is).
-module(beamlab_cli_project).

-export([project/1, progress/1, error_lines/1, tool_argv/1]).

%% @doc The project the command works on (built unless `--no-build').
-spec project(beamlab_cli_args:parsed()) ->
          {ok, beamlab_project_build:project()} | {error, beamlab_cli_error:reason()}.
project(#{project := Project}) ->
    {ok, Project};
project(Parsed) ->
    {ok, Root} = file:get_cwd(),
    Build = not beamlab_cli_args:get(no_build, Parsed, false),
    Tool = beamlab_project_build:detect(Root),
    Build andalso Tool =/= none
        andalso progress(io_lib:format("building the project (~ts compile)", [Tool])),
    case beamlab_project_build:build(Root, #{build => Build}) of
        {ok, P} -> {ok, P};
        {error, Reason} -> beamlab_cli_error:failure("~ts", [beamlab_project_build:format_error(Reason)])
    end.

%% @doc An experiment's error: the mistakes in the bench modules (of
%% `check', of `run --bench') one per line on stderr, the last through the
%% usage error (exit 2) or failure (exit 1) as any other error's line.
-spec error_lines(beamlab_experiment:error_reason()) -> {error, beamlab_cli_error:reason()}.
error_lines(R) ->
    %% (the bench modules' reason as `check' (comparing, or validating
    %% through a bench) and `run --bench' wrap it)
    Mistakes = case R of
                   {check, {bench, {project, Inner}}} -> beamlab_project_bench:mistakes(Inner);
                   {check, Inner} -> beamlab_project_bench:mistakes(Inner);
                   {bench, {project, Inner}} -> beamlab_project_bench:mistakes(Inner);
                   _ -> none
               end,
    Lines = case Mistakes of
                {ok, Ls} -> Ls;
                none -> [beamlab_experiment:format_error(R)]
            end,
    _ = [io:format(standard_error, "beamlab: ~ts~n", [L]) || L <- lists:droplast(Lines)],
    case beamlab_experiment:error_class(R) of
        usage -> beamlab_cli_error:usage_error("~ts", [lists:last(Lines)]);
        failure -> beamlab_cli_error:failure("~ts", [lists:last(Lines)])
    end.

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
