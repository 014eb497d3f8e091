%%% @doc The git commit of a directory, for the environment report: a run
%%% saved in a project's work tree records which code it measured, so a
%%% history of runs can be ordered by commit (`beamlab_result_history').
%%%
%%% Asks the `git' program (when installed) for the commit checked out, its
%%% committer date, the branch and whether tracked files differ from it
%%% (`dirty'; untracked files do not count). `GIT_OPTIONAL_LOCKS=0' keeps
%%% `git status' from writing the index of the project it looks at. Each
%%% call is bounded in time; a directory outside a work tree, a missing
%%% `git' or a call that fails or takes too long gives `none'.
-module(beamlab_env_git).

-export([work_tree/1]).

-type info() :: #{commit := binary(), commit_time := binary(), branch := binary(),
                  dirty := boolean() | unknown}.
-export_type([info/0]).

%% Milliseconds one git call may take.
-define(TIMEOUT, 5000).

%% @doc The checked-out commit of the work tree `Dir' is in, or `none'.
-spec work_tree(file:filename()) -> info() | none.
work_tree(Dir) ->
    case os:find_executable("git") of
        false -> none;
        Git ->
            case git(Git, Dir, ["log", "-1", "--format=%H%n%cI"]) of
                {ok, Out} ->
                    case binary:split(string:trim(Out), <<"\n">>, [global]) of
                        [Commit, Time] when byte_size(Commit) >= 40 ->
                            #{commit => Commit, commit_time => Time,
                              branch => case git(Git, Dir, ["rev-parse", "--abbrev-ref", "HEAD"]) of
                                            {ok, B} -> string:trim(B);
                                            error -> <<"unknown">>
                                        end,
                              dirty => case git(Git, Dir, ["status", "--porcelain", "--untracked-files=no"]) of
                                           {ok, Status} -> string:trim(Status) =/= <<>>;
                                           error -> unknown
                                       end};
                        _ -> none
                    end;
                error -> none
            end
    end.

git(Git, Dir, Args) ->
    try open_port({spawn_executable, Git},
                  [{args, ["-C", Dir | Args]}, {env, [{"GIT_OPTIONAL_LOCKS", "0"}, {"LC_ALL", "C"}]},
                   exit_status, binary, stderr_to_stdout, hide]) of
        Port -> collect(Port, [], erlang:monotonic_time(millisecond) + ?TIMEOUT)
    catch
        error:_ -> error
    end.

collect(Port, Acc, Deadline) ->
    receive
        {Port, {data, D}} -> collect(Port, [Acc, D], Deadline);
        {Port, {exit_status, 0}} -> {ok, iolist_to_binary(Acc)};
        {Port, {exit_status, _}} -> error
    after max(0, Deadline - erlang:monotonic_time(millisecond)) ->
        {os_pid, Pid} = erlang:port_info(Port, os_pid),
        catch port_close(Port),
        _ = os:cmd("kill -9 " ++ integer_to_list(Pid) ++ " 2>/dev/null"),
        error
    end.
