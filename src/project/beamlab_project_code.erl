%%% @doc The code a side of `check --against' loads, made independent of
%%% where it was built, and loaded in one fixed order.
%%%
%%% The two sides of a check are built in different directories (the
%%% working tree, the base's temporary worktree), and a compiler records
%%% where: the source's path and the include and output directories in
%%% the compile information (`module_info(compile)'), the source's path in
%%% the line table. The JIT places the compile information beside the
%%% module's machine code, so the same code built in a directory with a
%%% longer name took 64 bytes more per module, every module after it moved
%%% in memory, and the hot loops of one side sat at other offsets in the
%%% instruction cache than the other's, in every round: identical code
%%% measured faster on one side 14 rounds of 14 (issue #35). Modules
%%% loaded on demand also came in an order that varied with the timing.
%%%
%%% So each side's VM gets its modules before it runs anything of them:
%%% every module of the side's own code paths (the first of a name along
%%% the path, as the code server would load it), its compile information
%%% reduced to what `+deterministic' keeps (the compiler's version), its
%%% line table's file names to their base names (as `+deterministic'
%%% writes them), the chunks the loader never reads left out, all sorted
%%% by module name. Built from the same sources, both sides load the same
%%% bytes in the same order: they differ in the code under test only.
%%% They are normalized once per check, into a directory of each side
%%% ({@link write/3}), from which every VM of that side reads them: sent
%%% over the VM's control channel at each start instead, the 208 modules
%%% of beamlab checking itself cost a second or more per VM. The
%%% bench modules, compiled for each side into a directory of its own and
%%% loaded again from there by the benchmark harness, are normalized in
%%% place ({@link normalize_dir/1}).
-module(beamlab_project_code).

-export([modules/2, write/3, normalize/1, normalize_dir/1]).

-type loadable() :: {module(), file:filename(), binary()}.
%% a module, the file it was built as (`code:which/1' names it), the
%% normalized copy the VM reads
-type stored() :: beamlab_runtime_peer:stored().
-export_type([loadable/0, stored/0]).

%% Chunks the loader does not read: debug information, abstract code,
%% documentation (they are the bulk of a .beam; code:get_object_code/1
%% and the debuggers read the file, which stays where it is).
-define(UNLOADED, ["Dbgi", "Abst", "Docs"]).

%% @doc The modules to load into a side's VM, normalized and sorted by
%% name: of `Paths' (the side's code paths, in order), the first module of
%% each name, unless it is found first in one of `Shared' (paths both
%% sides have, such as Elixir's libraries, loaded on demand as they are).
%% Each comes with the file it was read from (`code:which/1' names it).
-spec modules([file:filename()], [file:filename()]) -> [loadable()].
modules(Paths, Shared) ->
    First = lists:foldl(
              fun(P, Acc) ->
                      lists:foldl(fun(F, A) ->
                                          M = list_to_atom(filename:basename(F, ".beam")),
                                          case maps:is_key(M, A) of
                                              true -> A;
                                              false -> A#{M => {P, F}}
                                          end
                                  end, Acc, lists:sort(filelib:wildcard(filename:join(P, "*.beam"))))
              end, #{}, Paths),
    lists:sort([{M, F, normalize(Bin)}
                || {M, {P, F}} <- maps:to_list(First), not lists:member(P, Shared),
                   {ok, Bin} <- [file:read_file(F)]]).

%% @doc Writes the modules {@link modules/2} gives into `Dir' (one of the
%% check's own temporary directories), each as `Dir/NAME.beam', and lists
%% them in the order they are to be loaded, each with the file it was
%% read from. A side's VMs load them from there, so they are normalized
%% once per check, not at every VM start.
-spec write([file:filename()], [file:filename()], file:filename()) ->
          {ok, [stored()]} | {error, {normalize, file:filename(), file:posix() | badarg | terminated}}.
write(Paths, Shared, Dir) ->
    case beamlab_runtime_peer:store(modules(Paths, Shared), Dir) of
        {ok, Stored} -> {ok, Stored};
        {error, {write_code, File, Why}} -> {error, {normalize, File, Why}}
    end.

%% @doc Normalizes (see {@link normalize/1}) every .beam of `Dir' in
%% place; `Dir' is one of the check's own temporary directories.
-spec normalize_dir(file:filename()) -> ok | {error, {normalize, file:filename(), file:posix() | badarg | terminated}}.
normalize_dir(Dir) ->
    lists:foldl(fun(F, ok) ->
                        case file:read_file(F) of
                            {ok, Bin} ->
                                case beamlab_runtime_file:write_atomic(F, normalize(Bin)) of
                                    ok -> ok;
                                    {error, Why} -> {error, {normalize, F, Why}}
                                end;
                            {error, Why} -> {error, {normalize, F, Why}}
                        end;
                   (_, Error) -> Error
                end, ok, lists:sort(filelib:wildcard(filename:join(Dir, "*.beam")))).

%% @doc A .beam binary without what depends on where it was built: its
%% compile information reduced to the compiler's version, its line
%% table's file names to their base names, the chunks the loader does
%% not read left out. What is not a .beam, or a chunk in a form not known
%% here, is left as it is.
-spec normalize(binary()) -> binary().
normalize(Bin) ->
    try beam_lib:all_chunks(Bin) of
        {ok, _, Chunks} ->
            Kept = [{Id, chunk(Id, Data)} || {Id, Data} <- Chunks, not lists:member(Id, ?UNLOADED)],
            {ok, New} = beam_lib:build_module(Kept),
            New;
        _ ->
            Bin
    catch
        _:_ -> Bin
    end.

chunk("CInf", Data) ->
    try binary_to_term(Data) of
        Info when is_list(Info) -> term_to_binary([T || {version, _} = T <- Info]);
        _ -> Data
    catch
        error:_ -> Data
    end;
chunk("Line", Data) ->
    line_table(Data);
chunk(_, Data) ->
    Data.

%% The line table (beam_asm's build_line_table/1): a header, the line
%% items (compact terms: a file index, tag_a, before the line number,
%% tag_i, when the file changes), then the file names, each a 16-bit
%% length and the name. The names become their base names.
line_table(<<Header:12/binary, NumLines:32, NumFnames:32, Rest/binary>> = Data) ->
    case items(Rest, NumLines) of
        {ok, Items, Names0} ->
            case names(Names0, NumFnames, []) of
                {ok, Names} ->
                    Base = << <<(byte_size(B)):16, B/binary>>
                              || N <- Names, B <- [filename:basename(N)] >>,
                    <<Header/binary, NumLines:32, NumFnames:32, Items/binary, Base/binary>>;
                error ->
                    Data
            end;
        error ->
            Data
    end;
line_table(Data) ->
    Data.

%% The line items: until `Lines' line numbers (tag_i) are read.
items(Bin, Lines) ->
    items(Bin, Lines, 0).

items(Bin, 0, Used) ->
    <<Items:Used/binary, Rest/binary>> = Bin,
    {ok, Items, Rest};
items(Bin, Lines, Used) ->
    <<_:Used/binary, Next/binary>> = Bin,
    case compact(Next) of
        {1, Size} -> items(Bin, Lines - 1, Used + Size);     % tag_i: a line
        {2, Size} -> items(Bin, Lines, Used + Size);         % tag_a: a file index
        _ -> error
    end.

%% A compact term's tag and size in bytes (beam_asm:encode/2).
compact(<<_:4, 0:1, Tag:3, _/binary>>) -> {Tag, 1};
compact(<<_:3, 1:2, Tag:3, _:8, _/binary>>) -> {Tag, 2};
compact(<<7:3, 3:2, Tag:3, Rest/binary>>) ->
    %% the length (minus 9) is itself a compact term (tag_u), then the bytes
    case compact_value(Rest) of
        {L, LSize} when byte_size(Rest) >= LSize + L + 9 -> {Tag, 1 + LSize + L + 9};
        _ -> error
    end;
compact(<<L:3, 3:2, Tag:3, Rest/binary>>) when byte_size(Rest) >= L + 2 -> {Tag, 1 + L + 2};
compact(_) -> error.

compact_value(<<V:4, 0:1, 0:3, _/binary>>) -> {V, 1};
compact_value(<<Hi:3, 1:2, 0:3, Lo:8, _/binary>>) -> {(Hi bsl 8) bor Lo, 2};
compact_value(<<L:3, 3:2, 0:3, Rest/binary>>) when L < 7, byte_size(Rest) >= L + 2 ->
    N = L + 2,
    <<V:N/unit:8, _/binary>> = Rest,
    {V, 1 + N};
compact_value(_) -> error.

names(<<>>, 0, Acc) -> {ok, lists:reverse(Acc)};
names(<<Len:16, Name:Len/binary, Rest/binary>>, N, Acc) when N > 0 -> names(Rest, N - 1, [Name | Acc]);
names(_, _, _) -> error.
