%%% @doc Writing files safely: atomically (readers see the old file or the
%%% whole new one) and never through a link planted at a temporary name.
-module(beamlab_runtime_file).

-export([write_atomic/2, write_atomic/3, write_new/2, write_unique/2, check_target/1, private_dir/1,
         format_error/1]).

-include_lib("kernel/include/file.hrl").

-define(TMP_TRIES, 8).
%% write_unique/2 tries Path, Path-2 ... Path-<this>.
-define(MAX_SUFFIX, 1000).

%% @doc Writes `Data' to `Path' through a temporary file beside it, created
%% exclusively (an existing file or link at that name is never followed),
%% synced, then renamed over `Path'. Missing directories are created.
-spec write_atomic(file:filename_all(), iodata()) -> ok | {error, file:posix() | badarg | terminated}.
write_atomic(Path, Data) ->
    write_atomic(Path, Data, #{}).

%% @doc As {@link write_atomic/2}, with options (defaults `true'):
%% `sync => false' skips the sync (a file that only has to outlive the VM,
%% not the machine: a checkpoint); `make_dirs => false' fails when the
%% directory is missing instead of creating it (a private directory that
%% is gone must stay gone).
-spec write_atomic(file:filename_all(), iodata(), #{sync => boolean(), make_dirs => boolean()}) ->
          ok | {error, file:posix() | badarg | terminated}.
write_atomic(Path, Data, Opts) ->
    Sync = maps:get(sync, Opts, true),
    Made = case maps:get(make_dirs, Opts, true) of
               true -> filelib:ensure_dir(Path);
               false -> ok
           end,
    case Made of
        ok -> write_tmp(Path, Data, Sync, ?TMP_TRIES);
        {error, _} = E -> E
    end.

%% @doc Writes `Data' to `Path' only if nothing exists there yet (atomic
%% as {@link write_atomic/2}): `{error, eexist}' otherwise.
-spec write_new(file:filename_all(), iodata()) -> ok | {error, file:posix() | badarg | terminated}.
write_new(Path, Data) ->
    case filelib:ensure_dir(Path) of
        ok ->
            %% Reserve the name exclusively, then replace the empty
            %% placeholder atomically with the content.
            case file:open(Path, [write, exclusive, raw]) of
                {ok, Fd} ->
                    ok = file:close(Fd),
                    case write_tmp(Path, Data, true, ?TMP_TRIES) of
                        ok -> ok;
                        {error, _} = E -> _ = file:delete(Path), E
                    end;
                {error, _} = E -> E
            end;
        {error, _} = E -> E
    end.

%% @doc Writes `Data' to the first free name among `Path', `Path-2',
%% `Path-3'... (the suffix goes before the extension: `r-2.json'), never
%% replacing a file; returns the name written.
-spec write_unique(file:filename(), iodata()) ->
          {ok, file:filename()} | {error, {file:filename(), file:posix() | badarg | terminated}}.
write_unique(Path, Data) ->
    write_unique(Path, Data, 1).

write_unique(Path, Data, N) ->
    Candidate = case N of
                    1 -> Path;
                    _ -> filename:rootname(Path) ++ "-" ++ integer_to_list(N) ++ filename:extension(Path)
                end,
    case write_new(Candidate, Data) of
        ok -> {ok, Candidate};
        {error, eexist} when N < ?MAX_SUFFIX -> write_unique(Path, Data, N + 1);
        {error, Reason} -> {error, {Candidate, Reason}}
    end.

%% @doc Whether a file can be written at `Path' before any work is done:
%% `new' when nothing is there, `exists' when a file (or link) would be
%% replaced, `directory' when `Path' is a directory; otherwise the reason,
%% naming the part of the path that is in the way (`{not_a_directory, P}':
%% a regular file where a directory is needed).
-spec check_target(file:filename()) ->
          {ok, new | exists | directory} | {error, empty | {not_a_directory, file:filename()}}.
check_target("") ->
    {error, empty};
check_target(Path) ->
    case file:read_file_info(Path) of
        {ok, #file_info{type = directory}} -> {ok, directory};
        {ok, _} -> {ok, exists};
        {error, _} ->
            case file:read_link_info(Path) of
                {ok, _} -> {ok, exists};  % a dangling link: replaced, never followed
                {error, _} -> check_parents(filename:dirname(Path), Path)
            end
    end.

check_parents(Dir, Child) when Dir =:= Child ->
    {ok, new};
check_parents(Dir, _Child) ->
    case file:read_file_info(Dir) of
        {ok, #file_info{type = directory}} -> {ok, new};
        {ok, _} -> {error, {not_a_directory, Dir}};
        {error, _} -> check_parents(filename:dirname(Dir), Dir)
    end.

%% @doc A new directory only this user can enter (mode 0700), named
%% `$TMPDIR/Prefix-<ospid>-<n>' and created exclusively: an existing
%% directory or a link planted at the name is never used.
-spec private_dir(string()) -> {ok, file:filename()} | {error, file:posix() | badarg}.
private_dir(Prefix) ->
    Tmp = case os:getenv("TMPDIR") of
              false -> "/tmp";
              "" -> "/tmp";
              T -> T
          end,
    private_dir(Tmp, Prefix, ?TMP_TRIES).

private_dir(_Tmp, _Prefix, 0) ->
    {error, eexist};
private_dir(Tmp, Prefix, Tries) ->
    Dir = filename:join(Tmp, lists:flatten(io_lib:format("~s-~s-~b", [Prefix, os:getpid(),
                                                                       erlang:unique_integer([positive])]))),
    %% mkdir(2) fails on any existing name, links included.
    case file:make_dir(Dir) of
        ok ->
            case file:change_mode(Dir, 8#700) of
                ok -> {ok, Dir};
                {error, _} = E -> _ = file:del_dir(Dir), E
            end;
        {error, eexist} -> private_dir(Tmp, Prefix, Tries - 1);
        {error, _} = E -> E
    end.

%% @doc One line for an error of this module.
-spec format_error(term()) -> string().
format_error(empty) ->
    "empty file name";
format_error({not_a_directory, Dir}) ->
    unicode:characters_to_list(io_lib:format("~ts is a file, not a directory", [Dir]));
format_error(Reason) ->
    file:format_error(Reason).

write_tmp(_Path, _Data, _Sync, 0) ->
    {error, eexist};
write_tmp(Path, Data, Sync, Tries) ->
    Tmp = unicode:characters_to_list(
            io_lib:format("~ts.~s.~b.tmp", [Path, os:getpid(), erlang:unique_integer([positive])])),
    case file:open(Tmp, [write, exclusive, raw, binary]) of
        {ok, Fd} ->
            Written = case file:write(Fd, Data) of
                          ok when Sync -> file:sync(Fd);
                          ok -> ok;
                          {error, _} = E -> E
                      end,
            ok = file:close(Fd),
            case Written of
                ok ->
                    case file:rename(Tmp, Path) of
                        ok -> ok;
                        {error, _} = E2 -> _ = file:delete(Tmp), E2
                    end;
                {error, _} = E3 -> _ = file:delete(Tmp), E3
            end;
        {error, eexist} -> write_tmp(Path, Data, Sync, Tries - 1);
        {error, _} = E -> E
    end.
