%%% @doc Builds a project with its own tool and tells where its code is.
%%%
%%% The tool is found from the files at the project's root:
%%% `rebar.config' is rebar3 (`rebar3 compile', code in
%%% `_build/default/lib/*/ebin' and `_build/default/checkouts/*/ebin'),
%%% `mix.exs' is Mix (`mix compile', code paths as `mix run' sets them:
%%% the project's and its dependencies' ebin, consolidated protocols and
%%% Elixir's own libraries), anything else has no build (bench modules
%%% only). The output of the tool goes to a log file; a failed build is
%%% one line with the tool's last line and the log's path.
%%%
%%% A base version checked out in a temporary worktree (see
%%% {@link beamlab_project_git}) is built offline: the dependencies the
%%% head's build already fetched and compiled are copied into it first
%%% (`deps_from'), so neither hex.pm nor a git server is needed, and
%%% plugins are not built again.
-module(beamlab_project_build).

-export([detect/1, build/2, paths/2, include_dirs/1, format_error/1]).

-type tool() :: rebar3 | mix | none.
-type project() :: #{root := file:filename(), tool := tool(), paths := [file:filename()],
                     include := [file:filename()]}.
-type opts() :: #{log => file:filename(),
                  deps_from => file:filename(),   % the head's root: reuse its dependencies
                  build => boolean(),             % false: only find the code paths
                  timeout => timeout()}.          % ms for each run of the tool
-type error_reason() :: {build_failed, tool(), file:filename(), beamlab_project_cmd:error_reason(),
                         file:filename() | none}.
-export_type([tool/0, project/0, error_reason/0]).

-define(PATH_MARK, "beamlab-code-path:").

%% @doc The build tool of the project at `Root'.
-spec detect(file:filename()) -> tool().
detect(Root) ->
    Has = fun(F) -> filelib:is_regular(filename:join(Root, F)) end,
    case {Has("rebar.config"), Has("mix.exs")} of
        {_, true} -> mix;
        {true, false} -> rebar3;
        {false, false} -> none
    end.

%% @doc Builds the project at `Root' (unless `build => false') and returns
%% its code paths and include directories.
-spec build(file:filename(), opts()) -> {ok, project()} | {error, error_reason()}.
build(Root, Opts) ->
    Tool = detect(Root),
    Log = maps:get(log, Opts, none),
    CmdOpts = maps:merge(#{cd => Root, env => env(Tool, Root, Opts)},
                         maps:merge(case Log of none -> #{}; _ -> #{log => Log} end,
                                    maps:with([timeout], Opts))),
    _ = [copy_deps(Tool, From, Root) || {ok, From} <- [maps:find(deps_from, Opts)]],
    Built = case maps:get(build, Opts, true) of
                true -> compile(Tool, CmdOpts);
                false -> ok
            end,
    case Built of
        ok ->
            case paths(Tool, CmdOpts) of
                {ok, Paths} ->
                    {ok, #{root => Root, tool => Tool, paths => Paths, include => include_dirs(Root)}};
                {error, Reason} ->
                    {error, {build_failed, Tool, Root, Reason, Log}}
            end;
        {error, Reason} ->
            {error, {build_failed, Tool, Root, Reason, Log}}
    end.

compile(none, _CmdOpts) -> ok;
compile(rebar3, CmdOpts) -> done(beamlab_project_cmd:run("rebar3", ["compile"], CmdOpts));
compile(mix, CmdOpts) -> done(beamlab_project_cmd:run("mix", ["compile"], CmdOpts)).

done({ok, _}) -> ok;
done({error, _} = E) -> E.

%% Colours off, the dependencies of the head for a base build.
env(rebar3, _Root, _Opts) ->
    [{"REBAR_COLOR", "none"}];
env(mix, _Root, Opts) ->
    [{"MIX_DEPS_PATH", filename:join(From, "deps")}
     || {ok, From} <- [maps:find(deps_from, Opts)],
        filelib:is_dir(filename:join(From, "deps"))];
env(none, _Root, _Opts) ->
    [].

%% @doc The code paths of a built project: rebar3's `_build/default'
%% directories, Mix's as `mix run' sets them (without OTP's own).
-spec paths(tool(), #{cd := file:filename(), env => list(), log => file:filename(), timeout => timeout()}) ->
          {ok, [file:filename()]} | {error, beamlab_project_cmd:error_reason()}.
paths(none, _CmdOpts) ->
    {ok, []};
paths(rebar3, #{cd := Root}) ->
    Build = filename:join([Root, "_build", "default"]),
    {ok, lists:sort(filelib:wildcard(filename:join([Build, "lib", "*", "ebin"])))
         ++ lists:sort(filelib:wildcard(filename:join([Build, "checkouts", "*", "ebin"])))};
paths(mix, CmdOpts) ->
    Expr = "for p <- :code.get_path(), do: IO.puts(\"" ?PATH_MARK "\" <> List.to_string(p))",
    case beamlab_project_cmd:run("mix", ["run", "--no-compile", "--no-start", "--no-deps-check", "-e", Expr],
                                 maps:without([log], CmdOpts)) of
        {ok, Out} ->
            Otp = unicode:characters_to_binary(code:root_dir()),
            {ok, [unicode:characters_to_list(P)
                  || L <- binary:split(Out, <<"\n">>, [global]),
                     P <- [string:prefix(string:trim(L), ?PATH_MARK)],
                     P =/= nomatch, P =/= <<".">>, string:prefix(P, Otp) =:= nomatch]};
        {error, _} = E ->
            E
    end.

%% @doc Directories a bench module's `-include' may name: the project's
%% `include', `src' and `bench', and those of umbrella applications.
-spec include_dirs(file:filename()) -> [file:filename()].
include_dirs(Root) ->
    Dirs = [filename:join(Root, D) || D <- ["include", "src", "bench"]]
           ++ lists:sort(filelib:wildcard(filename:join([Root, "apps", "*", "include"]))),
    [D || D <- Dirs, filelib:is_dir(D)].

%% A base build reuses what the head's build fetched and compiled: its
%% dependencies (rebar3's and its plugins; Mix's, with the head's deps/ as
%% MIX_DEPS_PATH), never the project's own applications: their copies
%% could look up to date to the tool (a worktree checked out within the
%% second the head was compiled has sources no newer than the copies).
copy_deps(rebar3, From, To) ->
    Own = project_apps(From),
    Lib = filename:join([From, "_build", "default", "lib"]),
    Deps = [D || D <- filelib:wildcard("*", Lib), not lists:member(D, Own)],
    _ = [copy(filename:join(Lib, D), filename:join([To, "_build", "default", "lib", D])) || D <- Deps],
    %% Checkouts (beamlab itself as a plugin from _checkouts/, a
    %% dependency under work) are not in git: the base uses the head's.
    Checkouts = filename:join(From, "_checkouts"),
    _ = filelib:is_dir(Checkouts) andalso not filelib:is_file(filename:join(To, "_checkouts"))
        andalso file:make_symlink(Checkouts, filename:join(To, "_checkouts")),
    [copy(filename:join([From, "_build", "default", D]), filename:join([To, "_build", "default", D]))
     || D <- ["plugins", "checkouts"]],
    ok;
copy_deps(mix, From, To) ->
    Deps = filelib:wildcard("*", filename:join(From, "deps")),
    _ = [copy(filename:join([From, "_build", Env, "lib", D]), filename:join([To, "_build", Env, "lib", D]))
         || Env <- filelib:wildcard("*", filename:join(From, "_build")), D <- Deps],
    ok;
copy_deps(none, _From, _To) ->
    ok.

project_apps(Root) ->
    [filename:basename(F, ".app.src")
     || F <- filelib:wildcard(filename:join([Root, "src", "*.app.src"]))
            ++ filelib:wildcard(filename:join([Root, "apps", "*", "src", "*.app.src"]))
            ++ filelib:wildcard(filename:join([Root, "lib", "*", "src", "*.app.src"]))].

%% cp -a keeps the times, so the tools see the copies as up to date.
copy(From, To) ->
    case filelib:is_dir(From) andalso not filelib:is_dir(To) of
        true ->
            ok = filelib:ensure_path(filename:dirname(To)),
            _ = beamlab_project_cmd:run("cp", ["-a", From, To], #{}),
            ok;
        false ->
            ok
    end.

%% @doc One line for a failed build.
-spec format_error(error_reason()) -> iolist().
format_error(Reason) ->
    beamlab_format_reason:line(fun error_line/1, Reason).

error_line({build_failed, Tool, Root, Reason, Log}) ->
    [io_lib:format("building ~ts with ~ts failed: ", [Root, Tool]),
     beamlab_project_cmd:format_error(Reason),
     case Log of
         none -> [];
         _ -> io_lib:format(" (log: ~ts)", [Log])
     end];
error_line(Other) ->
    %% (a reason of no kind above: printed, never raised)
    beamlab_format_reason:term(Other).
