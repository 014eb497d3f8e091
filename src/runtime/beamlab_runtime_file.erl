%%% @doc Writing files safely, under one output-path policy (see
%%% {@link check_target/1} and docs/reliability.md "Files beamlab
%%% writes"): a new file or a regular file is written atomically (readers
%%% see the old file or the whole new one) through a temporary file that
%%% no planted link can redirect; standard output, a character device or
%%% a FIFO is written in place, never replaced; anything else (a link at
%%% the name, a block device, another user's directory or link on the
%%% way) is refused with a reason naming it.
-module(beamlab_runtime_file).

-export([write/2, write_atomic/2, write_atomic/3, write_new/2, write_unique/2, check_target/1,
         check_distinct/2, read/2, read/3, private_dir/1, format_error/1]).

-include_lib("kernel/include/file.hrl").

-type in_place() :: standard_output | standard_error | character_device | fifo.
-type target() :: new | exists | directory | {in_place, in_place()}.
-type path_error() :: empty | {not_a_directory, file:filename()} | {link, file:filename()}
                    | {foreign_link, file:filename(), non_neg_integer()}
                    | {foreign_dir, file:filename(), non_neg_integer()}
                    | {special, file:filename(), special()}
                    | {system_dir, file:filename(), string()}
                    | {link_loop, file:filename()} | {no_reader, file:filename(), pos_integer()}
                    | file:posix().
-type written() :: new | replaced | in_place.
-type read_error() :: file:posix() | {too_large, pos_integer()} | {no_writer, non_neg_integer()}
                    | {special, file:filename(), special()} | badarg.
-type special() :: block_device | socket | character_device | fifo | unknown.
%% A file a command names: the option (or `input') and the path given.
-type named() :: {string(), file:filename()}.
-type distinct_error() :: {same_file, Output :: named(), Other :: named(), input | output}.
-export_type([target/0, in_place/0, path_error/0, written/0, read_error/0, named/0, distinct_error/0]).

-define(TMP_TRIES, 8).
%% write_unique/2 tries Path, Path-2 ... Path-<this>.
-define(MAX_SUFFIX, 1000).
%% Links followed while resolving one path (the kernel's own limit).
-define(MAX_LINKS, 40).
%% How long a FIFO may stay without a reader before the write gives up,
%% and how long reading a FIFO or a character device may take.
-define(FIFO_OPEN_MS, 10000).
-define(STREAM_READ_MS, 10000).
-define(READ_CHUNK, 1048576).
%% File type bits of st_mode.
-define(S_IFMT, 8#170000).
-define(S_IFSOCK, 8#140000).
-define(S_IFBLK, 8#060000).
-define(S_IFCHR, 8#020000).
-define(S_IFIFO, 8#010000).

%% @doc Writes `Data' where the user named, under the output-path policy
%% ({@link check_target/1}): a new or regular file atomically
%% ({@link write_atomic/2}), standard output, a character device or a
%% FIFO in place (a FIFO without a reader for 10 s is an error). Returns
%% what was done.
-spec write(file:filename(), iodata()) -> {ok, written()} | {error, path_error() | badarg | terminated}.
write(Path, Data) ->
    Native = beamlab_input_text:native_name(Path),
    case check_target(Path) of
        {ok, new} -> ok_as(write_atomic(Native, Data), new);
        {ok, exists} -> ok_as(write_atomic(Native, Data), replaced);
        {ok, directory} -> {error, eisdir};
        {ok, {in_place, Where}} -> ok_as(write_in_place(Native, Where, Data), in_place);
        {error, _} = E -> E
    end.

ok_as(ok, How) -> {ok, How};
ok_as({error, _} = E, _How) -> E.

write_in_place(_Path, standard_output, Data) ->
    io:put_chars(standard_io, Data);
write_in_place(_Path, standard_error, Data) ->
    io:put_chars(standard_error, Data);
write_in_place(Path, _Device, Data) ->
    %% Opening a FIFO waits for a reader: done aside, with a time limit
    %% (a process stuck in open(2) is left behind; the VM can still stop).
    aside(fun() ->
                  case file:open(Path, [write, raw, binary]) of
                      {ok, Fd} ->
                          W = file:write(Fd, Data),
                          _ = file:close(Fd),
                          W;
                      {error, _} = E -> E
                  end
          end, ?FIFO_OPEN_MS, {error, {no_reader, beamlab_input_text:display(Path), ?FIFO_OPEN_MS div 1000}}).

%% Runs Fun in a process of its own and returns what it returns, or
%% `Late' after `Ms' (the process is killed; one stuck in open(2) stays
%% behind until it returns, which does not keep the VM from stopping).
aside(Fun, Ms, Late) ->
    Parent = self(),
    Ref = make_ref(),
    {Pid, MRef} = spawn_monitor(fun() -> Parent ! {Ref, Fun()} end),
    receive
        {Ref, Result} ->
            erlang:demonitor(MRef, [flush]),
            Result;
        {'DOWN', MRef, process, Pid, Why} ->
            {error, Why}
    after Ms ->
            exit(Pid, kill),
            erlang:demonitor(MRef, [flush]),
            receive {Ref, _} -> ok after 0 -> ok end,
            Late
    end.

%% @doc Writes `Data' to `Path' through a temporary file beside it, created
%% exclusively (an existing file or link at that name is never followed),
%% synced, then renamed over `Path'. Missing directories are created. This
%% is the step under {@link write/2}, for paths beamlab made itself (a
%% private directory); a path a user names goes through {@link write/2}.
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
%% replacing anything; the directory must pass {@link check_target/1}.
%% Returns the name written.
-spec write_unique(file:filename(), iodata()) ->
          {ok, file:filename()} | {error, {file:filename(), path_error() | badarg | terminated}}.
write_unique(Path, Data) ->
    write_unique(Path, Data, 1).

write_unique(Path, Data, N) ->
    Candidate = case N of
                    1 -> Path;
                    _ -> filename:rootname(Path) ++ "-" ++ integer_to_list(N) ++ filename:extension(Path)
                end,
    Checked = case check_target(Candidate) of
                  {ok, new} -> write_new(beamlab_input_text:native_name(Candidate), Data);
                  {ok, _} -> {error, eexist};  % anything there is kept: try the next name
                  {error, _} = E -> E
              end,
    case Checked of
        ok -> {ok, Candidate};
        {error, eexist} when N < ?MAX_SUFFIX -> write_unique(Path, Data, N + 1);
        {error, Reason} -> {error, {Candidate, Reason}}
    end.

%% @doc What writing to `Path' would do, checked before any work is done
%% (the output-path policy, docs/reliability.md "Files beamlab writes"):
%% `new' when nothing is there, `exists' when a regular file would be
%% replaced atomically, `directory' when `Path' is a directory (a name is
%% chosen inside it), `{in_place, What}' for standard output (`-',
%% `/dev/stdout'...), a character device or a FIFO, which are written in
%% place and never replaced. Refused, with the part of the path in the way:
%% a symbolic link at the name itself (never replaced, never written
%% through, unless it leads to a character device or a FIFO), a link or a
%% directory on the way that belongs to another user (neither you nor
%% root: it could be swapped under us), a block device, a socket, a regular
%% file where a directory is needed.
-spec check_target(file:filename()) -> {ok, target()} | {error, path_error()}.
check_target("") ->
    {error, empty};
check_target(Path) ->
    case stream(Path) of
        {ok, Stream} -> {ok, {in_place, Stream}};
        none ->
            try classify(beamlab_input_text:native_name(Path))
            catch throw:{path, Why} -> {error, Why}
            end
    end.

%% @doc Checks that no output is also an input or another output, by
%% identity, not by spelling: two names are the same file when they lead
%% (through links, `..', hard links) to the same device and inode; an
%% output that does not exist yet is the same as another name for that
%% place (the same directory, by identity, and the same name). Streams,
%% devices, FIFOs and directories are left out (they are written in
%% place or given a new name, never replaced). The first clash is
%% returned, outputs in the order given.
-spec check_distinct([named()], [named()]) -> ok | {error, distinct_error()}.
check_distinct(Outputs, Inputs) ->
    Keyed = fun(L) -> [{K, N} || N = {_, P} <- L, K <- [identity(P)], K =/= none] end,
    Outs = Keyed(Outputs),
    %% (An input that is not there is the command's own error, later.)
    Ins = [I || I = {{file, _, _}, _} <- Keyed(Inputs)],
    clash(Outs, Ins).

clash([], _Ins) ->
    ok;
clash([{K, Out} | Rest], Ins) ->
    case {lists:keyfind(K, 1, Ins), lists:keyfind(K, 1, Rest)} of
        {{K, In}, _} -> {error, {same_file, Out, In, input}};
        {false, {K, Other}} -> {error, {same_file, Out, Other, output}};
        {false, false} -> clash(Rest, Ins)
    end.

%% What a name leads to: `{file, Device, Inode}' for a regular file,
%% `{new, DirIdentity, Name}' for a name not there yet, `none' for what
%% is never replaced.
identity(Path) when Path =:= ""; Path =:= <<>> ->
    none;
identity(Path) ->
    case stream(Path) of
        {ok, _} -> none;
        none ->
            Native = beamlab_input_text:native_name(Path),
            case file:read_file_info(Native) of
                {ok, #file_info{type = regular, major_device = Dev, inode = Ino}} -> {file, Dev, Ino};
                {ok, _} -> none;
                {error, enoent} ->
                    Dir = filename:dirname(Native),
                    case file:read_file_info(Dir) of
                        {ok, #file_info{type = directory, major_device = Dev, inode = Ino}} ->
                            {new, {Dev, Ino}, filename:basename(Native)};
                        _ -> {new, filename:absname(Dir), filename:basename(Native)}
                    end;
                {error, _} -> none
            end
    end.

%% The names of beamlab's own standard output and error: written through
%% the VM's I/O servers, whatever the descriptor is (a terminal, a pipe, a
%% file opened with `>>', which must not be truncated).
stream("-") -> {ok, standard_output};
stream(P) when P =:= "/dev/stdout"; P =:= "/dev/fd/1"; P =:= "/proc/self/fd/1" -> {ok, standard_output};
stream(P) when P =:= "/dev/stderr"; P =:= "/dev/fd/2"; P =:= "/proc/self/fd/2" -> {ok, standard_error};
stream(_) -> none.

classify(Path) ->
    Start = case filename:pathtype(Path) of
                absolute -> "/";
                _ -> "."
            end,
    Parts = [{P, user} || P <- filename:split(Path), P =/= "/", P =/= <<"/">>],
    case walk(Start, Parts, ?MAX_LINKS, none) of
        {missing, _Dir, _Shown, Link} when Link =/= none ->
            throw({path, {link, Link}});
        {missing, Dir, _Shown, none} ->
            system_dir(Dir, Path),
            trusted_dir(Dir),
            {ok, new};
        {found, Real, Shown, Info, Link} ->
            case final(Real, Shown, Info, Link) of
                {ok, {in_place, _}} = InPlace -> InPlace;
                Other -> system_dir(Real, Path), Other
            end
    end.

%% /proc, /sys and /dev hold the kernel's files and device nodes: no file
%% or directory of beamlab's belongs there (`--save /proc/self/x'), where
%% it writes only in place (a device, standard output: decided before
%% this). /dev/shm is a directory for files. Judged where the path leads.
system_dir(Where, Path) ->
    Bin = fun(P) when is_binary(P) -> P;
             (P) -> unicode:characters_to_binary(P)
          end,
    case [Bin(P) || P <- filename:split(filename:absname(Where))] of
        [<<"/">>, <<"dev">>, <<"shm">> | _] -> ok;
        [<<"/">>, Top | _] when Top =:= <<"proc">>; Top =:= <<"sys">>; Top =:= <<"dev">> ->
            throw({path, {system_dir, strip_dot(beamlab_input_text:display(Path)), "/" ++ binary_to_list(Top)}});
        _ -> ok
    end.

%% The last component, resolved (`Link': the name of the link that led
%% there, if any): what it is decides what is done.
final(_Real, Shown, #file_info{type = directory, uid = Uid}, _Link) ->
    trusted(Uid) orelse throw({path, {foreign_dir, Shown, Uid}}),
    {ok, directory};
final(Real, _Shown, #file_info{type = regular}, none) ->
    trusted_dir(filename:dirname(Real)),
    {ok, exists};
final(_Real, _Shown, #file_info{type = regular}, Link) ->
    throw({path, {link, Link}});
final(_Real, Shown, #file_info{mode = Mode}, _Link) ->
    case Mode band ?S_IFMT of
        ?S_IFCHR -> {ok, {in_place, character_device}};
        ?S_IFIFO -> {ok, {in_place, fifo}};
        ?S_IFBLK -> throw({path, {special, Shown, block_device}});
        ?S_IFSOCK -> throw({path, {special, Shown, socket}});
        _ -> throw({path, {special, Shown, unknown}})
    end.

%% Resolves `Parts' from the directory `Cur' one component at a time,
%% following symbolic links only when they belong to this user or root.
%% `Parts' are tagged `user' (named on the command line: shown as given)
%% or `link' (from a link's target: shown as the path on disk).
walk(Cur, [], _Hops, Link) ->
    {ok, Info} = file:read_file_info(Cur),
    {found, Cur, beamlab_input_text:display(Cur), Info, Link};
walk(Cur, [{Part, From} | Rest], Hops, Link) ->
    Next = filename:join(Cur, Part),
    Shown = shown(Next, From),
    case file:read_link_info(Next) of
        {ok, #file_info{type = symlink, uid = Uid}} ->
            trusted(Uid) orelse throw({path, {foreign_link, Shown, Uid}}),
            Hops > 0 orelse throw({path, {link_loop, Shown}}),
            %% The first link met at the last component names the target.
            Link1 = case {Rest, Link} of
                        {[], none} -> Shown;
                        _ -> Link
                    end,
            follow(Cur, Next, Shown, Rest, Hops - 1, Link1);
        {ok, #file_info{type = directory}} when Rest =/= [] ->
            walk(Next, Rest, Hops, Link);
        {ok, _} when Rest =/= [] ->
            throw({path, {not_a_directory, Shown}});
        {ok, Info} ->
            {found, Next, Shown, Info, Link};
        {error, enoent} ->
            {missing, Cur, Shown, Link};
        {error, Reason} ->
            throw({path, Reason})
    end.

%% A link: its target's components replace it. A link the kernel resolves
%% without a path (`/proc/self/fd/N' -> `pipe:[123]') is taken as it is.
follow(Cur, Link, Shown, Rest, Hops, Named) ->
    {ok, Target} = file:read_link_all(Link),
    case filename:pathtype(Target) of
        absolute ->
            walk("/", [{P, link} || P <- tl(filename:split(Target))] ++ Rest, Hops, Named);
        _ ->
            case {Rest, file:read_link_info(filename:join(Cur, Target)), file:read_file_info(Link)} of
                {[], {error, enoent}, {ok, Info}} ->
                    {found, Link, Shown, Info, Named};
                _ ->
                    walk(Cur, [{P, link} || P <- filename:split(Target)] ++ Rest, Hops, Named)
            end
    end.

shown(Path, user) -> strip_dot(beamlab_input_text:display(Path));
shown(Path, link) -> beamlab_input_text:display(Path).

strip_dot("./" ++ P) -> P;
strip_dot(P) -> P.

%% The directory a file is created in must belong to this user or root.
trusted_dir(Dir) ->
    case file:read_file_info(Dir) of
        {ok, #file_info{uid = Uid}} ->
            trusted(Uid) orelse throw({path, {foreign_dir, strip_dot(beamlab_input_text:display(Dir)), Uid}}),
            ok;
        {error, Reason} -> throw({path, Reason})
    end.

trusted(0) -> true;
trusted(Uid) -> Uid =:= my_uid().

%% This process's effective uid: the owner of /proc/self.
my_uid() ->
    case file:read_file_info("/proc/self") of
        {ok, #file_info{uid = Uid}} -> Uid;
        {error, _} -> 0
    end.

%% @doc Reads a whole file a user named, bounded (the input policy,
%% docs/reliability.md "Input"): at most `Max' bytes (`{too_large, Max}'
%% beyond, found from a regular file's size before reading, or while
%% reading anything else, so `/dev/zero' costs `Max' bytes at most); a
%% FIFO or a character device must deliver within 10 s (a FIFO nobody
%% writes to is `{no_writer, 10}', not a hang); a directory is `eisdir';
%% a block device or a socket is refused.
-spec read(file:filename_all(), pos_integer()) -> {ok, binary()} | {error, read_error()}.
read(Path, Max) ->
    read(Path, Max, #{}).

%% @doc As {@link read/2}; `streams => false' refuses a FIFO or a
%% character device at once (where only regular files make sense: the
%% files of /proc and /sys).
-spec read(file:filename_all(), pos_integer(), #{streams => boolean()}) ->
          {ok, binary()} | {error, read_error()}.
read(Path, Max, Opts) ->
    Native = beamlab_input_text:native_name(Path),
    Streams = maps:get(streams, Opts, true),
    case file:read_file_info(Native) of
        {ok, #file_info{type = directory}} -> {error, eisdir};
        {ok, #file_info{type = regular, size = Size}} when Size > Max -> {error, {too_large, Max}};
        {ok, #file_info{type = regular}} -> read_bounded(Native, Max, infinity);
        {ok, #file_info{mode = Mode}} ->
            case Mode band ?S_IFMT of
                T when Streams, T =:= ?S_IFCHR orelse T =:= ?S_IFIFO ->
                    read_bounded(Native, Max, ?STREAM_READ_MS);
                ?S_IFCHR -> {error, {special, beamlab_input_text:display(Path), character_device}};
                ?S_IFIFO -> {error, {special, beamlab_input_text:display(Path), fifo}};
                ?S_IFBLK -> {error, {special, beamlab_input_text:display(Path), block_device}};
                ?S_IFSOCK -> {error, {special, beamlab_input_text:display(Path), socket}};
                _ -> {error, {special, beamlab_input_text:display(Path), unknown}}
            end;
        {error, _} = E -> E
    end.

%% Reads in chunks until the end or past `Max'; aside, with a time limit
%% (opening a FIFO waits for a writer; a process stuck in open(2) is left
%% behind, the VM can still stop).
read_bounded(Path, Max, Timeout) ->
    aside(fun() ->
                  case file:open(Path, [read, raw, binary]) of
                      {ok, Fd} ->
                          try read_chunks(Fd, Max, 0, [])
                          after file:close(Fd)
                          end;
                      {error, _} = E -> E
                  end
          end, Timeout, case Timeout of
                            infinity -> {error, timeout};  % (never: no limit)
                            _ -> {error, {no_writer, Timeout div 1000}}
                        end).

read_chunks(Fd, Max, Size, Acc) ->
    case file:read(Fd, min(?READ_CHUNK, Max + 1 - Size)) of
        {ok, Bin} when Size + byte_size(Bin) > Max -> {error, {too_large, Max}};
        {ok, Bin} -> read_chunks(Fd, Max, Size + byte_size(Bin), [Bin | Acc]);
        eof -> {ok, iolist_to_binary(lists:reverse(Acc))};
        {error, _} = E -> E
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
-spec format_error(path_error() | term()) -> string().
format_error(Reason) ->
    beamlab_format_reason:line(fun error_line/1, Reason).

error_line({same_file, {Opt, Path}, {Other, OtherPath}, input}) ->
    text("~ts ~ts is the input ~ts~ts: writing it would destroy it (name another file)",
         [Opt, beamlab_input_text:display(Path), as_given(Other), beamlab_input_text:display(OtherPath)]);
error_line({same_file, {Opt, Path}, {Other, OtherPath}, output}) ->
    text("~ts ~ts and ~ts ~ts are the same file: one would overwrite the other (name two files)",
         [Opt, beamlab_input_text:display(Path), Other, beamlab_input_text:display(OtherPath)]);
error_line(empty) ->
    "empty file name";
error_line({not_a_directory, Dir}) ->
    text("~ts is a file, not a directory", [Dir]);
error_line({link, Link}) ->
    text("~ts is a symbolic link: beamlab neither replaces a link nor writes through one "
         "(name the file it points to, or remove the link)", [Link]);
error_line({foreign_link, Link, Uid}) ->
    text("~ts is a symbolic link owned by another user (uid ~b): not followed", [Link, Uid]);
error_line({foreign_dir, Dir, Uid}) ->
    text("~ts belongs to another user (uid ~b): beamlab writes only in directories owned "
         "by you or root", [Dir, Uid]);
error_line({special, Path, What}) when What =:= character_device; What =:= fifo ->
    text("~ts is ~ts, not a regular file", [Path, special_text(What)]);
error_line({special, Path, What}) ->
    text("~ts is ~ts: beamlab reads and writes only regular files, character devices and FIFOs",
         [Path, special_text(What)]);
error_line({system_dir, Path, Top}) ->
    text("~ts is under ~ts, the kernel's: beamlab writes there only to a device or its standard "
         "output or error (/dev/null, /dev/stdout, /proc/self/fd/1); name a file elsewhere", [Path, Top]);
error_line({link_loop, Link}) ->
    text("~ts: too many levels of symbolic links", [Link]);
error_line({too_large, Max}) ->
    text("larger than the limit of ~ts", [beamlab_format_units:bytes(Max)]);
error_line({no_writer, Secs}) ->
    text("nothing came within ~b s (a FIFO nobody writes to?)", [Secs]);
error_line({no_reader, Path, Secs}) ->
    text("~ts is a FIFO and nothing opened it for reading within ~b s", [Path, Secs]);
error_line(Reason) when is_atom(Reason) ->
    file:format_error(Reason);
error_line(Reason) ->
    text("~0tp", [Reason]).

%% "the input a.json" for a positional file, "the input -B a.json" for
%% an option's.
as_given("input") -> "";
as_given(Opt) -> [Opt, " "].

special_text(block_device) -> "a block device";
special_text(socket) -> "a socket";
special_text(character_device) -> "a character device";
special_text(fifo) -> "a FIFO";
special_text(unknown) -> "neither a file nor a device".

text(Format, Args) ->
    unicode:characters_to_list(io_lib:format(Format, Args)).

write_tmp(_Path, _Data, _Sync, 0) ->
    {error, eexist};
write_tmp(Path, Data, Sync, Tries) ->
    Suffix = io_lib:format(".~s.~b.tmp", [os:getpid(), erlang:unique_integer([positive])]),
    Tmp = case is_binary(Path) of
              true -> iolist_to_binary([Path, Suffix]);  % a raw file name
              false -> unicode:characters_to_list([Path, Suffix])
          end,
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
