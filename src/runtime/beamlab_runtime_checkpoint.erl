%%% @doc The backstop for a VM that dies while it measures: a checkpoint of
%%% what was measured so far, kept in the private directory the escript's
%%% launcher creates (`BEAMLAB_CHECKPOINT', mode 0700, removed by the
%%% launcher on every exit), so that a recovery run can print and save it
%%% when the benchmarked code stopped the VM (`M = erlang, M:halt(0)', an
%%% allocation too large to fit). See docs/reliability.md.
%%%
%%% A checkpoint is one file, `checkpoint', replaced atomically (never
%%% synced: a VM that dies leaves the kernel's page cache intact) holding
%%% `#{context => Context, state => State}' in the external term format:
%%% `Context' is given once by the command (how to print and save the
%%% result), `State' by the feature that measures (the samples so far and
%%% which job is running). Writes are rare (a job starts, about once a
%%% second) and never fail their caller: a checkpoint that cannot be
%%% written only weakens the backstop.
%%%
%%% {@link due/3} is the pacing rule the writers share; {@link cause/1} the
%%% one line saying what an exit status most likely means.
-module(beamlab_runtime_checkpoint).

-export([open/2, save/2, clear/1, load/1, due/3, cause/1]).

-export_type([checkpoint/0, pace/0, saved/0]).

-define(NAME, "checkpoint").
-define(VERSION, 1).
%% At most one write a second while the same job runs.
-define(PERIOD_MS, 1000).

-opaque checkpoint() :: #{file := file:filename(), context := term()}.
%% The last write: which job was running and when (monotonic ms).
-type pace() :: none | {term(), integer()}.
-type saved() :: #{context := term(), state := term()}.

%% @doc A checkpoint in `Dir' (the launcher's private directory) carrying
%% `Context'; `none' without a directory (not under the launcher, a
%% library caller, a fresh VM), which makes every other call a no-op.
-spec open(undefined | false | string(), term()) -> checkpoint() | none.
open(Dir, Context) when is_list(Dir), Dir =/= "" ->
    #{file => filename:join(Dir, ?NAME), context => Context};
open(_Dir, _Context) ->
    none.

%% @doc Replaces the checkpoint with `State'. Nothing is written once the
%% VM is stopping (`init:stop/0,1' called by the benchmarked code returns
%% at once, and stopping takes a while, during which beamlab's processes
%% go on): the last checkpoint names the job that stopped it, not one
%% that started meanwhile.
-spec save(checkpoint() | none, term()) -> ok.
save(none, _State) ->
    ok;
save(#{file := File, context := Context}, State) ->
    case init:get_status() of
        {stopping, _} ->
            ok;
        _ ->
            Bin = term_to_binary(#{version => ?VERSION, context => Context, state => State}),
            _ = beamlab_runtime_file:write_atomic(File, Bin, #{sync => false, make_dirs => false}),
            ok
    end.

%% @doc Removes the checkpoint: the command finished measuring and prints
%% its result itself.
-spec clear(checkpoint() | none | string()) -> ok.
clear(none) ->
    ok;
clear(#{file := File}) ->
    _ = file:delete(File),
    ok;
clear(Dir) when is_list(Dir) ->
    clear(open(Dir, undefined)).

%% @doc Reads the checkpoint left in `Dir'.
-spec load(string()) -> {ok, saved()} | {error, term()}.
load(Dir) ->
    case file:read_file(filename:join(Dir, ?NAME)) of
        {ok, Bin} ->
            try binary_to_term(Bin) of
                #{version := ?VERSION, context := C, state := S} -> {ok, #{context => C, state => S}};
                _ -> {error, unknown_version}
            catch
                error:badarg -> {error, corrupt}
            end;
        {error, _} = E ->
            E
    end.

%% @doc Whether a writer should save now: always when `Current' (the job
%% or point now starting) is not the one of the last write, else at most
%% once a second. Returns the pace to keep when it is due.
-spec due(term(), pace(), integer()) -> {true, pace()} | false.
due(Current, {Current, At}, Now) when Now - At < ?PERIOD_MS ->
    false;
due(Current, _Pace, Now) ->
    {true, {Current, Now}}.

%% @doc What the exit status of a VM that stopped without beamlab most
%% likely means (one clause of a sentence, no full stop).
-spec cause(integer()) -> unicode:chardata().
cause(1) ->
    "likely out of memory (an allocation too large to fit; the emulator's line above "
    "names it) or a halt(1) or halt(\"Slogan\") call beamlab could not see in the code";
cause(130) ->
    "interrupted: SIGINT reached the VM alone, which cannot catch it (what was measured up to "
    "its last checkpoint, at most a second before, is kept)";
cause(137) ->
    "killed by SIGKILL: likely the kernel's out-of-memory killer (or a kill -9)";
cause(134) ->
    "the emulator aborted (SIGABRT)";
cause(Status) when Status > 128 ->
    io_lib:format("killed by signal ~b", [Status - 128]);
cause(0) ->
    "likely a halt() or init:stop() call beamlab could not see in the code (a module or "
    "function named at run time, a call inside a module)";
cause(Status) ->
    io_lib:format("likely a halt(~b) or init:stop(~b) call beamlab could not see in the code "
                  "(a module or function named at run time, a call inside a module)",
                  [Status, Status]).
