%%% @doc The git side of a project check: which commit a ref names, what
%%% the working tree is, and a temporary worktree holding another commit.
%%%
%%% A worktree is made with `git worktree add --detach' in a directory of
%%% the caller's and is removed by a small guard process (`sh') started
%%% with it: the guard waits on a pipe from this VM and removes the
%%% worktree (`git worktree remove --force', then `prune') when told to,
%%% or when the pipe closes because this VM ended in any way, Ctrl-C,
%%% `kill' or a crash included. It ignores SIGINT, SIGTERM and SIGHUP,
%%% so a Ctrl-C to the whole process group cannot stop it first.
-module(beamlab_project_git).

-export([toplevel/1, prefix/1, commit/2, head/1, worktree/3, remove/1, format_error/1]).

-type commit() :: #{commit := binary(), short := binary(), date := binary(),
                    subject := binary(), ref := binary()}.
-type head() :: #{commit := binary(), short := binary(), date := binary(),
                  subject := binary(), dirty := boolean()}.
-opaque worktree() :: #{dir := file:filename(), guard := port()}.
-type error_reason() :: {not_a_repository, file:filename()}
                      | {unknown_ref, binary()}
                      | {worktree, beamlab_project_cmd:error_reason()}
                      | {git, beamlab_project_cmd:error_reason()}.
-export_type([commit/0, head/0, worktree/0, error_reason/0]).

-define(GUARD, "trap '' INT TERM HUP; read -r _; "
               "git -C \"$1\" worktree remove --force \"$2\" >/dev/null 2>&1; rm -rf \"$2\"; "
               "git -C \"$1\" worktree prune >/dev/null 2>&1; exit 0").
%% Fields of `git log --format', separated by NUL.
-define(FORMAT, "--format=%H%x00%h%x00%cI%x00%s").

%% @doc The top directory of the git repository holding `Dir'.
-spec toplevel(file:filename()) -> {ok, file:filename()} | {error, error_reason()}.
toplevel(Dir) ->
    case git(Dir, ["rev-parse", "--show-toplevel"]) of
        {ok, Out} -> {ok, unicode:characters_to_list(string:trim(Out))};
        {error, {exit, _, _, _}} -> {error, {not_a_repository, Dir}};
        {error, Reason} -> {error, {git, Reason}}
    end.

%% @doc Where `Dir' is inside its repository, as path components ([] at
%% the top): a project in a subdirectory of a repository is found there
%% in a worktree too.
-spec prefix(file:filename()) -> {ok, [file:filename()]} | {error, error_reason()}.
prefix(Dir) ->
    case git(Dir, ["rev-parse", "--show-prefix"]) of
        {ok, Out} -> {ok, filename:split(unicode:characters_to_list(string:trim(Out)))};
        {error, {exit, _, _, _}} -> {error, {not_a_repository, Dir}};
        {error, Reason} -> {error, {git, Reason}}
    end.

%% @doc The commit `Ref' names (a branch, tag, `HEAD~1', a hash...).
-spec commit(file:filename(), string()) -> {ok, commit()} | {error, error_reason()}.
commit(Root, Ref) ->
    Bin = unicode:characters_to_binary(Ref),
    %% `--end-of-options' keeps a ref starting with `-' from being an option.
    case git(Root, ["rev-parse", "--verify", "--quiet", "--end-of-options", Ref ++ "^{commit}"]) of
        {ok, Out} ->
            case log(Root, string:trim(Out)) of
                {ok, C} -> {ok, C#{ref => Bin}};
                {error, _} = E -> E
            end;
        {error, {exit, _, _, _}} -> {error, {unknown_ref, Bin}};
        {error, Reason} -> {error, {git, Reason}}
    end.

%% @doc The commit checked out at `Root' and whether tracked files differ
%% from it (the working tree is what gets measured).
-spec head(file:filename()) -> {ok, head()} | {error, error_reason()}.
head(Root) ->
    case log(Root, <<"HEAD">>) of
        {ok, C} ->
            case git(Root, ["status", "--porcelain", "--untracked-files=no"]) of
                {ok, Status} -> {ok, C#{dirty => string:trim(Status) =/= <<>>}};
                {error, Reason} -> {error, {git, Reason}}
            end;
        {error, _} = E -> E
    end.

log(Root, Rev) ->
    case git(Root, ["log", "-1", ?FORMAT, unicode:characters_to_list(Rev), "--"]) of
        {ok, Out} ->
            [Commit, Short, Date, Subject] = binary:split(string:trim(Out, trailing, "\n"), <<0>>, [global]),
            {ok, #{commit => Commit, short => Short, date => Date, subject => Subject}};
        {error, {exit, _, _, _}} -> {error, {unknown_ref, Rev}};
        {error, Reason} -> {error, {git, Reason}}
    end.

%% @doc Checks out `Commit' of the repository at `Root' into `Dir' (which
%% must not exist), detached, guarded (see the module doc).
-spec worktree(file:filename(), binary(), file:filename()) -> {ok, worktree()} | {error, error_reason()}.
worktree(Root, Commit, Dir) ->
    Sh = beamlab_project_cmd:find("sh"),
    Guard = open_port({spawn_executable, Sh},
                      [{args, ["-c", ?GUARD, "beamlab-worktree-guard", Root, Dir]}, exit_status,
                       binary, hide]),
    case git(Root, ["worktree", "add", "--detach", "--quiet", Dir, unicode:characters_to_list(Commit)]) of
        {ok, _} ->
            {ok, #{dir => Dir, guard => Guard}};
        {error, Reason} ->
            remove(#{dir => Dir, guard => Guard}),
            {error, {worktree, Reason}}
    end.

%% @doc Removes the worktree and waits until it is gone.
-spec remove(worktree()) -> ok.
remove(#{guard := Guard}) ->
    true = port_command(Guard, <<"remove\n">>),
    receive
        {Guard, {exit_status, _}} -> ok
    after 60000 ->
            catch port_close(Guard),
            ok
    end.

git(Dir, Args) ->
    beamlab_project_cmd:run("git", ["-C", Dir | Args], #{env => [{"GIT_TERMINAL_PROMPT", "0"}]}).

%% @doc One line for an error of this module.
-spec format_error(error_reason()) -> iolist().
format_error(Reason) ->
    beamlab_format_reason:line(fun error_line/1, Reason).

error_line({not_a_repository, Dir}) ->
    io_lib:format("~ts is not in a git repository (check --against compares with a git commit)", [Dir]);
error_line({unknown_ref, Ref}) ->
    io_lib:format("~ts: no such commit, branch or tag in this repository (in a shallow clone, fetch more "
                  "history: git fetch --deepen=1)", [Ref]);
error_line({worktree, Reason}) ->
    ["git worktree add failed: ", beamlab_project_cmd:format_error(Reason)];
error_line({git, Reason}) ->
    beamlab_project_cmd:format_error(Reason);
error_line(Other) ->
    %% (a reason of no kind above: printed, never raised)
    beamlab_format_reason:term(Other).
