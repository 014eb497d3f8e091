%%% @doc Writing files safely: atomically (readers see the old file or the
%%% whole new one) and never through a link planted at a temporary name.
-module(beamlab_runtime_file).

-export([write_atomic/2, write_new/2, format_error/1]).

-define(TMP_TRIES, 8).

%% @doc Writes `Data' to `Path' through a temporary file beside it, created
%% exclusively (an existing file or link at that name is never followed),
%% synced, then renamed over `Path'. Missing directories are created.
-spec write_atomic(file:filename_all(), iodata()) -> ok | {error, file:posix() | badarg | terminated}.
write_atomic(Path, Data) ->
    case filelib:ensure_dir(Path) of
        ok -> write_tmp(Path, Data, ?TMP_TRIES);
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
                    case write_tmp(Path, Data, ?TMP_TRIES) of
                        ok -> ok;
                        {error, _} = E -> _ = file:delete(Path), E
                    end;
                {error, _} = E -> E
            end;
        {error, _} = E -> E
    end.

%% @doc One line for an error of this module.
-spec format_error(term()) -> string().
format_error(Reason) ->
    file:format_error(Reason).

write_tmp(_Path, _Data, 0) ->
    {error, eexist};
write_tmp(Path, Data, Tries) ->
    Tmp = unicode:characters_to_list(
            io_lib:format("~ts.~s.~b.tmp", [Path, os:getpid(), erlang:unique_integer([positive])])),
    case file:open(Tmp, [write, exclusive, raw, binary]) of
        {ok, Fd} ->
            Written = case file:write(Fd, Data) of
                          ok -> file:sync(Fd);
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
        {error, eexist} -> write_tmp(Path, Data, Tries - 1);
        {error, _} = E -> E
    end.
