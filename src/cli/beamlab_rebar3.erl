%%% @doc `rebar3 beamlab': beamlab as a rebar3 plugin (a provider).
%%%
%%% A project adds it to its `rebar.config':
%%% ```
%%% {project_plugins, [{beamlab, {git, "https://.../beamlab.git", {tag, "v0.1.0"}}}]}.
%%% '''
%%% (or puts a checkout of beamlab in `_checkouts/'). rebar3 reads the
%%% providers of a plugin from its application environment (`providers'
%%% in `beamlab.app.src' names this module) and calls their `init/1'.
%%%
%%% `rebar3 beamlab [run] [OPTIONS]' compiles the project (the provider
%%% depends on `compile'), then runs its bench modules as `beamlab run
%%% --bench bench/' does; `rebar3 beamlab check [--against REF]' is
%%% `beamlab check'. The options are the command line's; the project's
%%% code paths are rebar3's. The exit status is rebar3's: 0, or 1 with
%%% the reason (a regression, a mistake in the bench modules) printed
%%% above rebar3's own error line.
%%%
%%% rebar3's modules (`providers', `rebar_state', `rebar_app_info') exist
%%% only when rebar3 runs this: every call to them goes through
%%% `rebar3/3', the one place that names them, so that xref and dialyzer
%%% (which cannot know them) check everything else. Nothing in beamlab
%%% calls this module (an xref query in rebar.config keeps it so).
-module(beamlab_rebar3).

-export([init/1, do/1, format_error/1]).


%% rebar3's state, opaque to beamlab.
-type state() :: term().

%% @doc Registers the `beamlab' provider.
-spec init(state()) -> {ok, state()}.
init(State) ->
    Provider = rebar3(providers, create, [
                 [{name, beamlab},
                  {module, ?MODULE},
                  {bare, true},
                  {deps, [compile]},
                  {example, "rebar3 beamlab check --against main"},
                  {opts, getopt_specs()},
                  {short_desc, "Run the project's bench modules, or check them against a git commit."},
                  {desc, "rebar3 beamlab [run] [OPTIONS]: run bench/*_bench.erl (beamlab run --bench bench).\n"
                         "rebar3 beamlab check [--against REF] [OPTIONS]: validate the bench modules, or\n"
                         "compare the working tree with REF in paired rounds (exit 1 on a regression).\n"
                         "See beamlab's docs/ci.md."}]]),
    {ok, rebar3(rebar_state, add_provider, [State, Provider])}.

%% @doc Runs `beamlab run --bench' or `beamlab check' on the project.
-spec do(state()) -> {ok, state()} | {error, {module(), term()}}.
do(State) ->
    Argv = beamlab_cli_project:tool_argv(rebar3(rebar_state, command_args, [State])),
    %% In a VM of its own: benchmarked code that stops its VM must not
    %% stop rebar3's with status 0 (beamlab_cli_launch).
    case beamlab_cli_launch:run(Argv, #{project => project(State)}) of
        0 -> {ok, State};
        Code -> {error, {?MODULE, {exit, Code}}}
    end.

project(State) ->
    Root = rebar3(rebar_state, dir, [State]),
    Apps = rebar3(rebar_state, project_apps, [State]) ++ rebar3(rebar_state, all_deps, [State]),
    #{root => Root, tool => rebar3, paths => [rebar3(rebar_app_info, ebin_dir, [A]) || A <- Apps],
      include => beamlab_project_build:include_dirs(Root)}.

%% A call to rebar3's own modules.
rebar3(Mod, Fun, Args) ->
    erlang:apply(Mod, Fun, Args).

%% rebar3 checks the options with getopt before the provider runs: every
%% option of `run' and `check' is declared (beamlab parses them itself).
getopt_specs() ->
    Options = beamlab_command_run:options() ++ beamlab_command_check:options(),
    Unique = lists:foldl(fun(#{long := L} = O, Acc) ->
                                 case lists:keymember(L, 1, Acc) of
                                     true -> Acc;
                                     false -> Acc ++ [{L, O}]
                                 end;
                            (_, Acc) -> Acc
                         end, [], Options),
    {Specs, _} = lists:mapfoldl(fun({L, O}, Shorts) -> spec(L, O, Shorts) end, ["h", "v"], Unique),
    Specs.

spec(Long, #{type := Type} = O, Shorts) ->
    Short = case maps:find(short, O) of
                {ok, [C]} -> case lists:member([C], Shorts) of
                                 true -> undefined;
                                 false -> C
                             end;
                _ -> undefined
            end,
    Arg = case Type of
              T when T =:= boolean; T =:= count -> undefined;
              _ when is_map_key(optional_value, O) -> undefined;
              _ -> string
          end,
    {{list_to_atom(Long), Short, Long, Arg, maps:get(help, O, "")},
     case Short of undefined -> Shorts; _ -> [[Short] | Shorts] end}.

%% @doc rebar3's last line when beamlab did not exit with 0.
-spec format_error({exit, pos_integer()}) -> iolist().
format_error(Reason) ->
    beamlab_format_reason:line(fun error_line/1, Reason).

error_line({exit, 1}) ->
    "beamlab: failed (the reason is above)";
error_line({exit, 2}) ->
    "beamlab: usage error (the reason is above; see: rebar3 help beamlab)";
error_line({exit, 130}) ->
    "beamlab: interrupted";
error_line({exit, Code}) ->
    io_lib:format("beamlab: exit code ~b", [Code]);
error_line(Other) ->
    %% (a reason of no kind above: printed, never raised)
    beamlab_format_reason:term(Other).
