%%% @doc CPU time consumed by this VM's scheduler threads (`run --metric
%%% cpu'), read from Linux's per-thread scheduler statistics
%%% (`/proc/self/task/TID/schedstat': nanoseconds on a CPU).
%%%
%%% The BEAM has no per-process CPU clock, and `statistics(runtime)' is
%%% the whole OS process (I/O threads, the poller, every helper). The
%%% code measured runs on the normal and dirty-CPU scheduler threads
%%% (named `N_scheduler' and `N_dirty_cpu_sch' since OTP 21), so the
%%% measure is their CPU time summed. It includes the other Erlang
%%% processes scheduled meanwhile (the sampler's reads, timers) and the
%%% busy-wait of idle schedulers before they sleep; it excludes the time
%%% the threads wait for a CPU (the other programs' load), dirty-I/O and
%%% async threads, and the kernel's work on other threads. The kernel
%%% brings a running thread's figure up to date only at a tick or a
%%% context switch: read it while the threads are idle (the sampler reads
%%% with the job suspended). Where the file is missing (not Linux, or a
%%% kernel without schedstats) `threads/0' says so.
-module(beamlab_runtime_cpu).

-export([threads/0, read/1, format_error/1]).
-export([parse_schedstat/1, is_scheduler/1]).

-export_type([threads/0, error_reason/0]).

-opaque threads() :: [file:filename()].
-type error_reason() :: {unavailable, string()}.

%% @doc The schedstat files of this VM's normal and dirty-CPU scheduler
%% threads, or why they cannot be read.
-spec threads() -> {ok, threads()} | {error, error_reason()}.
threads() ->
    Dir = "/proc/self/task",
    case file:list_dir(Dir) of
        {ok, Tids} ->
            Files = [filename:join([Dir, T, "schedstat"])
                     || T <- lists:sort(Tids), is_scheduler(comm(filename:join([Dir, T, "comm"])))],
            case Files =/= [] andalso lists:all(fun(F) -> read_one(F) =/= error end, Files) of
                true -> {ok, Files};
                false -> {error, {unavailable, "no readable schedstat of a scheduler thread "
                                               "(a kernel without schedstats?)"}}
            end;
        {error, _} ->
            {error, {unavailable, "per-thread CPU time needs Linux's /proc/self/task"}}
    end.

%% @doc Nanoseconds the threads have spent on a CPU so far (a thread that
%% has gone counts 0: compare readings of the same threads only).
-spec read(threads()) -> non_neg_integer().
read(Files) ->
    lists:sum([case read_one(F) of error -> 0; Ns -> Ns end || F <- Files]).

%% @doc The first field of a schedstat line (time on a CPU, ns).
-spec parse_schedstat(binary()) -> {ok, non_neg_integer()} | error.
parse_schedstat(Bin) ->
    case binary:split(Bin, [<<" ">>, <<"\n">>]) of
        [First | _] ->
            try binary_to_integer(First) of
                N when N >= 0 -> {ok, N};
                _ -> error
            catch error:badarg -> error
            end;
        _ -> error
    end.

%% @doc Whether a thread name (its `comm') is a normal or dirty-CPU
%% scheduler's: `1_scheduler', `12_dirty_cpu_sch' (names are cut at 15
%% characters).
-spec is_scheduler(binary()) -> boolean().
is_scheduler(Comm) ->
    case re:run(Comm, "^[0-9]+_(scheduler|dirty_cpu_s)", [{capture, none}]) of
        match -> true;
        nomatch -> false
    end.

%% @doc One line for an error of this module.
-spec format_error(error_reason()) -> string().
format_error(Reason) ->
    beamlab_format_reason:line(fun error_line/1, Reason).

error_line({unavailable, Why}) ->
    "--metric cpu: this VM cannot measure its threads' CPU time: " ++ Why;
error_line(Other) ->
    %% (a reason of no kind above: printed, never raised)
    beamlab_format_reason:term(Other).

comm(File) ->
    case file:read_file(File) of
        {ok, Bin} -> string:trim(Bin);
        {error, _} -> <<>>
    end.

read_one(File) ->
    case file:read_file(File) of
        {ok, Bin} ->
            case parse_schedstat(Bin) of
                {ok, N} -> N;
                error -> error
            end;
        {error, _} ->
            error
    end.
