%%% @doc `mix beamlab': beamlab as a Mix task, for Elixir projects.
%%%
%%% A project adds beamlab to its dependencies (Mix builds it with rebar3):
%%% ```
%%% {:beamlab, git: "https://.../beamlab.git", tag: "v0.1.0", only: [:dev, :test], runtime: false}
%%% '''
%%% `mix beamlab [run] [OPTIONS]' compiles the project (`mix compile')
%%% and runs its bench modules as `beamlab run --bench bench/' does;
%%% `mix beamlab check [--against REF]' is `beamlab check'. The options
%%% are the command line's; the code paths are the ones Mix set up (the
%%% project, its dependencies, consolidated protocols, Elixir's own
%%% libraries). A non-zero exit code of beamlab ends Mix with that code.
%%%
%%% This is an Erlang module with an Elixir module's name, which is how
%%% Mix finds a task (`Mix.Tasks.Beamlab'); `__info__/1' gives Mix the
%%% attributes it reads (`shortdoc' for `mix help'). Mix's own modules
%%% exist only when Mix runs this: the one call to them goes through
%%% `mix/3', the one place that applies them, so that xref and dialyzer
%%% (which cannot know them) check everything else.
-module('Elixir.Mix.Tasks.Beamlab').

-export([run/1, '__info__'/1]).

%% Read by `mix help'.
-shortdoc([<<"Runs the project's bench modules, or checks them against a git commit">>]).

%% @doc The task: `mix beamlab [run|check] ARGS...'.
-spec run([binary()]) -> ok.
run(Args0) ->
    Args = [unicode:characters_to_list(A) || A <- Args0],
    _ = mix('Elixir.Mix.Task', run, [<<"compile">>, []]),
    {ok, Root} = file:get_cwd(),
    Otp = code:root_dir(),
    Paths = [P || P <- code:get_path(), P =/= ".", not lists:prefix(Otp, P)],
    Project = #{root => Root, tool => mix, paths => Paths,
                include => beamlab_project_build:include_dirs(Root)},
    Argv = beamlab_cli_project:tool_argv(Args),
    %% In a VM of its own: benchmarked code that stops its VM must not
    %% stop Mix's with status 0 (beamlab_cli_launch).
    case beamlab_cli_launch:run(Argv, #{project => Project}) of
        0 -> ok;
        Code -> exit({shutdown, Code})
    end.

%% A call to Mix's own modules (here `Mix.Task.run("compile", [])': the
%% project and its dependencies are built as `mix compile' builds them).
mix(Mod, Fun, Args) ->
    erlang:apply(Mod, Fun, Args).

%% @doc What Mix asks an Elixir module about itself.
-spec '__info__'(attributes | module | functions | macros | compile | md5) -> term().
'__info__'(attributes) -> module_info(attributes);
'__info__'(module) -> ?MODULE;
'__info__'(functions) -> [{run, 1}];
'__info__'(macros) -> [];
'__info__'(compile) -> module_info(compile);
'__info__'(md5) -> module_info(md5).
