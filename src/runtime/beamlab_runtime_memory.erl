%%% @doc How much memory this VM may still take before the system refuses
%%% it, and the per-process heap limit derived from it.
%%%
%%% A runner that allocates without bound would otherwise end the VM with
%%% the emulator's `eheap_alloc: Cannot allocate' line, losing every result.
%%% With a `max_heap_size' on the processes that run benchmarked code, the
%%% offending process is killed instead and only its job fails.
%%%
%%% The headroom is the smallest of: `MemAvailable' in /proc/meminfo, the
%%% address-space limit (`ulimit -v', /proc/self/limits) minus this VM's
%%% current size (/proc/self/status `VmSize'), and a cgroup v2 memory limit
%%% minus its usage. What cannot be read is left out; `unknown' when nothing
%%% could be read (not Linux).
-module(beamlab_runtime_memory).

-export([headroom/0, heap_limit/0, heap_limit/1, parse_kb_field/2, parse_limit/1,
         watch_heap_limit/0, unwatch_heap_limit/0, heap_limit_filter/2]).

%% A process may take a quarter of the headroom: a copying collection
%% needs room for the old and the new heap at once, and other processes
%% (other workers, beamlab itself) need some too.
-define(SHARE, 4).
%% Never limit a process below this (a tiny headroom reading must not
%% break ordinary runners).
-define(FLOOR, 64 * 1024 * 1024).
-define(HEAP_FILTER, beamlab_heap_limit).

%% @doc Bytes this VM can still allocate, or `unknown'.
-spec headroom() -> pos_integer() | unknown.
headroom() ->
    Limits = [L || L <- [mem_available(), address_space(), cgroup()], is_integer(L)],
    case Limits of
        [] -> unknown;
        _ -> max(1, lists:min(Limits))
    end.

%% @doc The `max_heap_size' (in bytes) for processes that run benchmarked
%% code, from the current headroom; `infinity' when it is unknown.
-spec heap_limit() -> pos_integer() | infinity.
heap_limit() ->
    heap_limit(headroom()).

%% @doc As {@link heap_limit/0} for a given headroom.
-spec heap_limit(pos_integer() | unknown) -> pos_integer() | infinity.
heap_limit(unknown) -> infinity;
heap_limit(Headroom) -> max(?FLOOR, Headroom div ?SHARE).

%% @doc Tells who hit the heap limit: the emulator's report of a process
%% killed at its `max_heap_size' (set with `error_logger => true') is
%% turned into `{beamlab_heap_limit, Pid}', sent to that process's group
%% leader (a job's proxy passes it to the job), and is not logged: the
%% job reports it in one line. A process that was killed otherwise
%% (`exit(self(), kill)') sends no such report.
-spec watch_heap_limit() -> ok.
watch_heap_limit() ->
    case logger:add_primary_filter(?HEAP_FILTER, {fun ?MODULE:heap_limit_filter/2, []}) of
        ok -> ok;
        {error, {already_exist, _}} -> ok
    end.

%% @doc Removes the filter of {@link watch_heap_limit/0}.
-spec unwatch_heap_limit() -> ok.
unwatch_heap_limit() ->
    _ = logger:remove_primary_filter(?HEAP_FILTER),
    ok.

%% @private The logger filter of {@link watch_heap_limit/0}.
-spec heap_limit_filter(logger:log_event(), term()) -> logger:filter_return().
heap_limit_filter(#{msg := {Format, _}, meta := #{pid := Pid, gl := Gl, error_logger := #{emulator := true}}},
                  _) when is_list(Format), is_pid(Gl) ->
    case string:find(Format, "maximum heap size reached") of
        nomatch -> ignore;
        _ -> Gl ! {beamlab_heap_limit, Pid}, stop
    end;
heap_limit_filter(_Event, _) ->
    ignore.

%% @doc The value of a `Name: N kB' line (meminfo, status) in bytes.
-spec parse_kb_field(binary(), binary()) -> non_neg_integer() | undefined.
parse_kb_field(Text, Name) ->
    case re:run(Text, <<"(?m)^", Name/binary, ":\\s+(\\d+) kB">>, [{capture, all_but_first, binary}]) of
        {match, [N]} -> binary_to_integer(N) * 1024;
        nomatch -> undefined
    end.

%% @doc The soft "Max address space" of /proc/self/limits, in bytes
%% (`undefined' when unlimited or absent).
-spec parse_limit(binary()) -> non_neg_integer() | undefined.
parse_limit(Text) ->
    case re:run(Text, <<"(?m)^Max address space\\s+(\\S+)">>, [{capture, all_but_first, binary}]) of
        {match, [<<"unlimited">>]} -> undefined;
        {match, [N]} ->
            try binary_to_integer(N)
            catch error:badarg -> undefined
            end;
        nomatch -> undefined
    end.

mem_available() ->
    case read("/proc/meminfo") of
        undefined -> undefined;
        Text -> parse_kb_field(Text, <<"MemAvailable">>)
    end.

address_space() ->
    case {read("/proc/self/limits"), read("/proc/self/status")} of
        {undefined, _} -> undefined;
        {_, undefined} -> undefined;
        {Limits, Status} ->
            case {parse_limit(Limits), parse_kb_field(Status, <<"VmSize">>)} of
                {Max, Size} when is_integer(Max), is_integer(Size) -> max(0, Max - Size);
                _ -> undefined
            end
    end.

%% cgroup v2, as seen from inside the container (the cgroup's own root).
cgroup() ->
    case {read("/sys/fs/cgroup/memory.max"), read("/sys/fs/cgroup/memory.current")} of
        {undefined, _} -> undefined;
        {_, undefined} -> undefined;
        {Max, Cur} ->
            try {binary_to_integer(string:trim(Max)), binary_to_integer(string:trim(Cur))} of
                {M, C} -> max(0, M - C)
            catch error:badarg -> undefined  % "max": no limit
            end
    end.

read(File) ->
    %% /proc files report size 0: read_file still reads them whole.
    case file:read_file(File) of
        {ok, B} -> B;
        {error, _} -> undefined
    end.
