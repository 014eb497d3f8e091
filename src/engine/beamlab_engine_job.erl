%%% @doc One benchmark job: runs the `init' hook, owns the worker processes
%%% (each runs `init_runner' and then the runner loop), starts, pauses and
%%% resumes them, runs timed samples, and runs `done' when stopped.
%%%
%%% All workers of a job add to one `counters' slot (see
%%% {@link beamlab_engine_code}); the sampler reads it directly, without a
%%% message to the job. Pausing uses `erlang:suspend_process/1', so a paused
%%% job keeps its workers (and their `init_runner' state) but uses no CPU:
%%% this is what lets the sampler interleave several jobs.
%%%
%%% A worker that raises, exits or throws marks the whole job failed with
%%% the reason; the job then stops its other workers. The job watches its
%%% owner and stops if the owner dies.
%%%
%%% Processes the benchmarked code leaves behind (`spawn(fun F() -> F()
%%% end)' in a runner) would keep every scheduler busy after the job and
%%% starve the output: the job, its workers and everything they spawn have
%%% a group leader of the job's own (a proxy passing I/O on to the real
%%% one), and when the job ends every process still having it is killed.
-module(beamlab_engine_job).
-behaviour(gen_server).

-export([start/2, stop/1, counter/1, set_concurrency/2, concurrency/1,
         resume/1, pause/1, measure/2, cancel/1, status/1, abort/2, format_error/1]).
-export([init/1, handle_call/3, handle_cast/2, handle_info/2, terminate/2]).

-export_type([job/0, failure/0]).

-type job() :: pid().
-type failure() :: {runner_failed, Class :: atom(), Reason :: term()}
                 | {hook_failed, Hook :: atom(), Class :: atom(), Reason :: term()}
                 | {hook_timeout, Hook :: atom(), Ms :: non_neg_integer()}
                 | {runner_timeout, Ms :: non_neg_integer()}
                 | {memory_limit, Bytes :: non_neg_integer()} | runner_killed
                 | {memory_watermark, Held :: non_neg_integer(), Allowed :: non_neg_integer()}
                 | {job_down, term()}.

%% How long a worker killed unasked waits for the heap-limit report.
-define(HEAP_REPORT_MS, 2000).

-record(st, {exec :: beamlab_engine_code:exec(),
             owner :: pid(),
             init_result :: term(),
             counter :: counters:counters_ref(),
             deadline :: non_neg_integer(),
             workers = #{} :: #{pid() => waiting | running | suspended},
             active = false :: boolean(),
             timed :: undefined | pid(),
             timed_from :: undefined | gen_server:from(),
             failure :: undefined | failure(),
             init_ok = true :: boolean(),
             leader :: pid(),                            % the job's group leader proxy
             spawned = [] :: [pid()],                    % every worker ever started
             heap_limit = 0 :: non_neg_integer(),        % bytes, 0: none
             %% heap-limit reports that came before their 'EXIT'
             heap_reported = [] :: [pid()]}).

%%====================================================================
%% API
%%====================================================================

%% @doc Starts a job for compiled code and runs its `init' hook (in the job
%% process, so resources it links to live as long as the job). `deadline'
%% (ms) bounds every hook call and every wait for a runner.
-spec start(beamlab_engine_code:exec(), #{deadline := non_neg_integer()}) ->
          {ok, job()} | {error, failure()}.
start(Exec, #{deadline := Deadline}) ->
    case gen_server:start(?MODULE, {Exec, self(), Deadline}, [{timeout, Deadline}]) of
        {ok, Pid} ->
            case status(Pid) of
                ok -> {ok, Pid};
                {error, F} -> _ = stop(Pid), {error, F}
            end;
        {error, timeout} -> {error, {hook_timeout, init, Deadline}};
        {error, Other} -> {error, {job_down, Other}}
    end.

%% @doc Stops the workers, runs `done' and ends the job.
-spec stop(job()) -> ok | {error, failure()}.
stop(Job) ->
    case call(Job, deadline, 5000) of
        Deadline when is_integer(Deadline) ->
            try gen_server:call(Job, stop, Deadline + 1000)
            catch
                exit:{timeout, _} ->
                    exit(Job, kill),
                    {error, {hook_timeout, done, Deadline}};
                exit:_ ->
                    ok
            end;
        _ ->
            ok
    end.

%% @doc The `counters' reference holding the job's completed iterations (slot 1).
-spec counter(job()) -> counters:counters_ref().
counter(Job) -> call(Job, counter, infinity).

%% @doc Sets the number of workers. New workers run `init_runner' and wait
%% (or start at once when the job is running). Returns the failure if a
%% worker's `init_runner' fails or hangs past the deadline.
-spec set_concurrency(job(), non_neg_integer()) -> ok | {error, failure()}.
set_concurrency(Job, N) -> call(Job, {set_concurrency, N}, infinity).

%% @doc Current number of workers.
-spec concurrency(job()) -> non_neg_integer().
concurrency(Job) -> call(Job, concurrency, infinity).

%% @doc Lets the workers run.
-spec resume(job()) -> ok | {error, failure()}.
resume(Job) -> call(Job, resume, infinity).

%% @doc Suspends the workers (they keep their state).
-spec pause(job()) -> ok | {error, failure()}.
pause(Job) -> call(Job, pause, infinity).

%% @doc Timed mode: runs exactly `N' iterations in one worker, returns
%% nanoseconds. A sample that does not finish within the deadline fails the
%% job with `runner_timeout'.
-spec measure(job(), pos_integer()) -> {ok, non_neg_integer()} | {error, failure() | cancelled}.
measure(Job, N) ->
    %% The timed worker's init_runner has its own deadline, enforced by the
    %% job; only then does the clock for the sample itself start.
    case {call(Job, deadline, 5000), call(Job, prepare_timed, infinity)} of
        {_, {error, _} = Error} ->
            Error;
        {Deadline, ok} when is_integer(Deadline) ->
            try gen_server:call(Job, {measure, N}, Deadline) of
                {error, cancelled} -> {error, cancelled};
                Reply -> Reply
            catch
                exit:{timeout, _} ->
                    Failure = {runner_timeout, Deadline},
                    ok = abort(Job, Failure),
                    {error, Failure};
                exit:{Reason, _} ->
                    {error, {job_down, Reason}}
            end;
        {Error, _} ->
            Error
    end.

%% @doc Timed mode: abandons the sample being measured (an interrupt came):
%% its worker is killed, the pending {@link measure/2} returns
%% `{error, cancelled}', and the job stays usable and not failed.
-spec cancel(job()) -> ok.
cancel(Job) ->
    _ = call(Job, cancel, infinity),
    ok.

%% @doc `ok' or the reason the job failed.
-spec status(job()) -> ok | {error, failure()}.
status(Job) -> call(Job, status, infinity).

%% @doc Marks the job failed (used by the sampler when a runner hangs) and
%% kills its workers.
-spec abort(job(), failure()) -> ok.
abort(Job, Failure) ->
    _ = call(Job, {abort, Failure}, infinity),
    ok.

%% @doc One line for a job failure.
-spec format_error(failure() | term()) -> iolist().
format_error(Reason) ->
    beamlab_format_reason:line(fun error_line/1, Reason).

error_line({runner_failed, error, {beamlab_stops_vm, Name}}) ->
    io_lib:format("the runner calls ~ts, which would stop beamlab's VM; not measured", [Name]);
error_line({hook_failed, Hook, error, {beamlab_stops_vm, Name}}) ->
    io_lib:format("the ~ts hook calls ~ts, which would stop beamlab's VM; not run", [Hook, Name]);
error_line({runner_failed, Class, Reason}) ->
    io_lib:format("runner failed: ~ts", [class_reason(Class, Reason)]);
error_line({hook_failed, Hook, Class, Reason}) ->
    io_lib:format("~ts hook failed: ~ts", [Hook, class_reason(Class, Reason)]);
error_line({hook_timeout, Hook, Ms}) ->
    io_lib:format("~ts hook did not return within ~w ms", [Hook, Ms]);
error_line({runner_timeout, Ms}) ->
    io_lib:format("runner hung: no iteration completed within ~w ms", [Ms]);
error_line({memory_limit, Bytes}) ->
    io_lib:format("a process running the code grew past ~b MB of heap (a quarter of the memory "
                  "left) and was stopped", [Bytes div (1024 * 1024)]);
error_line(runner_killed) ->
    "a process running the code was killed (by the code itself, e.g. exit(self(), kill), "
    "or by another process)";
error_line({memory_watermark, Held, Allowed}) ->
    io_lib:format("the run's memory grew by more than ~b MB (three quarters of what was left when "
                  "it started); this job held the most (~b MB) and was stopped",
                  [Allowed div (1024 * 1024), Held div (1024 * 1024)]);
error_line({job_down, killed}) ->
    "the job's process was killed (did its init or done hook use too much memory?)";
error_line({job_down, Reason}) ->
    io_lib:format("job process died: ~0tP", [Reason, 20]);
error_line(Other) ->
    io_lib:format("~0tP", [Other, 20]).

class_reason(error, Reason) -> io_lib:format("error ~0tP", [Reason, 20]);
class_reason(Class, Reason) -> io_lib:format("~w ~0tP", [Class, Reason, 20]).

call(Job, Req, Timeout) ->
    try gen_server:call(Job, Req, Timeout)
    catch exit:{Reason, _} when Reason =/= timeout -> job_gone(Req, Reason)
    end.

job_gone(concurrency, _) -> 0;
job_gone(_, Reason) -> {error, {job_down, Reason}}.

%%====================================================================
%% gen_server
%%====================================================================

%% @private
-spec init({beamlab_engine_code:exec(), pid(), non_neg_integer()}) ->
          {ok, #st{}} | {stop, term()}.
init({Exec, Owner, Deadline}) ->
    process_flag(trap_exit, true),
    %% Workers may occupy every scheduler; the job must still answer the
    %% sampler's pause/resume at once.
    _ = process_flag(priority, high),
    _ = monitor(process, Owner),
    Leader = start_leader(group_leader(), self()),
    true = group_leader(Leader, self()),
    HeapLimit = case erlang:system_info(max_heap_size) of
                    #{size := W, kill := true} -> W * erlang:system_info(wordsize);
                    _ -> 0
                end,
    St = #st{exec = Exec, owner = Owner, deadline = Deadline, leader = Leader,
             heap_limit = HeapLimit,
             counter = counters:new(1, [write_concurrency])},
    %% A failing init is reported through status/1 rather than by stopping
    %% here, which would print a crash report at the user.
    try beamlab_engine_code:call_init(Exec) of
        IR -> {ok, St#st{init_result = IR}}
    catch
        Class:Reason ->
            {ok, St#st{init_ok = false, failure = {hook_failed, init, Class, Reason}}}
    end.

%% @private
-spec handle_call(term(), gen_server:from(), #st{}) -> {reply, term(), #st{}} |
          {noreply, #st{}} | {stop, normal, term(), #st{}}.
handle_call(deadline, _From, St) ->
    {reply, St#st.deadline, St};
handle_call(cancel, _From, #st{timed = Timed, timed_from = From} = St) ->
    Timed =/= undefined andalso kill_wait(Timed),
    From =/= undefined andalso gen_server:reply(From, {error, cancelled}),
    {reply, ok, St#st{timed = undefined, timed_from = undefined}};
handle_call(counter, _From, St) ->
    {reply, St#st.counter, St};
handle_call(concurrency, _From, St) ->
    {reply, map_size(St#st.workers), St};
handle_call(status, _From, St) ->
    {reply, status_reply(St), St};
handle_call(_Req, _From, #st{failure = F} = St) when F =/= undefined, _Req =/= stop ->
    {reply, {error, F}, St};
handle_call({set_concurrency, N}, _From, St) ->
    St1 = adjust(N, St),
    {reply, status_reply(St1), St1};
handle_call(resume, _From, St) ->
    Workers = maps:map(fun(Pid, waiting) -> Pid ! go, running;
                          (Pid, suspended) -> _ = resume_quiet(Pid), running;
                          (_Pid, running) -> running
                       end, St#st.workers),
    {reply, ok, St#st{workers = Workers, active = true}};
handle_call(pause, _From, St) ->
    Workers = maps:map(fun(Pid, running) -> suspend_quiet(Pid);
                          (_Pid, State) -> State
                       end, St#st.workers),
    {reply, ok, St#st{workers = Workers, active = false}};
handle_call(prepare_timed, _From, St) ->
    case ensure_timed(St) of
        {ok, _Pid, St1} -> {reply, ok, St1};
        {error, St1} -> {reply, {error, St1#st.failure}, St1}
    end;
handle_call({measure, N}, From, St) ->
    case ensure_timed(St) of
        {ok, Pid, St1} ->
            Pid ! {measure, N},
            {noreply, St1#st{timed_from = From}};
        {error, St1} ->
            {reply, {error, St1#st.failure}, St1}
    end;
handle_call({abort, Failure}, _From, St) ->
    {reply, ok, fail(Failure, St)};
handle_call(stop, _From, #st{init_ok = false} = St) ->
    reap(St),
    {stop, normal, status_reply(St), St};
handle_call(stop, _From, St) ->
    St1 = kill_all(St),
    Reply = try beamlab_engine_code:call_done(St1#st.exec, St1#st.init_result) of
                _ -> status_reply(St1)
            catch Class:Reason ->
                    case St1#st.failure of
                        undefined -> {error, {hook_failed, done, Class, Reason}};
                        F -> {error, F}
                    end
            end,
    reap(St1),
    {stop, normal, Reply, St1}.

%% @private
-spec handle_cast(term(), #st{}) -> {noreply, #st{}}.
handle_cast(_Msg, St) ->
    {noreply, St}.

%% @private
-spec handle_info(term(), #st{}) -> {noreply, #st{}} | {stop, term(), #st{}}.
handle_info({measured, Pid, Ns}, #st{timed = Pid, timed_from = From} = St) ->
    From =/= undefined andalso gen_server:reply(From, {ok, Ns}),
    {noreply, St#st{timed_from = undefined}};
handle_info({'EXIT', Pid, Reason}, St) ->
    case is_map_key(Pid, St#st.workers) orelse Pid =:= St#st.timed of
        true ->
            St1 = St#st{workers = maps:remove(Pid, St#st.workers),
                        timed = case St#st.timed of Pid -> undefined; T -> T end},
            {noreply, fail(exit_failure(Pid, Reason, St1), St1)};
        false ->
            {noreply, St}
    end;
handle_info({'DOWN', _, process, Owner, Reason}, #st{owner = Owner} = St) ->
    {stop, {shutdown, {owner_down, Reason}}, St};
%% The report can overtake the 'EXIT': the emulator sends it before the
%% process has freed its (large) heap and signalled its links.
handle_info({beamlab_heap_limit, Pid}, #st{heap_reported = R} = St) ->
    {noreply, St#st{heap_reported = [Pid | lists:sublist(R, 15)]}};
handle_info(_Msg, St) ->
    {noreply, St}.

%% @private
-spec terminate(term(), #st{}) -> ok.
terminate(normal, _St) ->
    ok;
terminate(_Reason, #st{init_ok = false} = St) ->
    reap(St);
terminate(_Reason, St) ->
    %% Abnormal end (owner gone): still release what init acquired.
    _ = kill_all(St),
    _ = catch beamlab_engine_code:call_done(St#st.exec, St#st.init_result),
    reap(St).

%%====================================================================
%% Internal
%%====================================================================

status_reply(#st{failure = undefined}) -> ok;
status_reply(#st{failure = F}) -> {error, F}.

exit_failure(_Pid, {beamlab_worker, Failure}, _St) -> Failure;
%% The job's own kills are awaited and never reach here: a worker killed
%% unasked hit the heap limit (the logger filter says so, through the
%% proxy leader, within a moment) or was killed by the code itself
%% (`exit(self(), kill)') or by another process.
exit_failure(Pid, killed, #st{heap_limit = L, heap_reported = R}) when L > 0 ->
    case lists:member(Pid, R) of
        true -> {memory_limit, L};
        false ->
            receive {beamlab_heap_limit, Pid} -> {memory_limit, L}
            after ?HEAP_REPORT_MS -> runner_killed
            end
    end;
exit_failure(_Pid, killed, _St) -> runner_killed;
exit_failure(_Pid, Other, _St) -> {runner_failed, exit, Other}.

fail(Failure, #st{failure = undefined} = St) ->
    St1 = kill_all(St#st{failure = Failure}),
    case St1#st.timed_from of
        undefined -> ok;
        From -> gen_server:reply(From, {error, Failure})
    end,
    St1#st{timed_from = undefined};
fail(_Failure, St) ->
    kill_all(St).

adjust(N, #st{workers = Workers} = St) when map_size(Workers) > N ->
    %% Drop the most recently started ones first.
    Extra = lists:sublist(lists:reverse(lists:sort(maps:keys(Workers))), map_size(Workers) - N),
    _ = [kill_wait(P) || P <- Extra],
    St#st{workers = maps:without(Extra, Workers)};
adjust(N, #st{workers = Workers} = St) when map_size(Workers) < N ->
    New = [spawn_worker(St) || _ <- lists:seq(1, N - map_size(Workers))],
    case await_ready(New, St) of
        ok ->
            State = case St#st.active of
                        true -> [P ! go || P <- New], running;
                        false -> waiting
                    end,
            St#st{workers = maps:merge(Workers, maps:from_list([{P, State} || P <- New])),
                  spawned = New ++ St#st.spawned};
        {error, Failure} ->
            _ = [kill_wait(P) || P <- New],
            fail(Failure, St#st{spawned = New ++ St#st.spawned})
    end;
adjust(_N, St) ->
    St.

spawn_worker(#st{exec = Exec, init_result = IR, counter = Counter}) ->
    Job = self(),
    spawn_link(fun() -> worker(Job, Exec, IR, Counter) end).

worker(Job, Exec, InitResult, Counter) ->
    RunnerInit = try beamlab_engine_code:call_init_runner(Exec, InitResult)
                 catch Class:Reason -> exit({beamlab_worker, {hook_failed, init_runner, Class, Reason}})
                 end,
    Job ! {ready, self()},
    receive go -> ok end,
    try beamlab_engine_code:continuous(Exec, Counter, RunnerInit)
    catch Class2:Reason2 -> exit({beamlab_worker, {runner_failed, Class2, Reason2}})
    end.

timed_worker(Job, Exec, InitResult) ->
    RunnerInit = try beamlab_engine_code:call_init_runner(Exec, InitResult)
                 catch Class:Reason -> exit({beamlab_worker, {hook_failed, init_runner, Class, Reason}})
                 end,
    Job ! {ready, self()},
    timed_loop(Job, Exec, RunnerInit).

timed_loop(Job, Exec, RunnerInit) ->
    receive
        {measure, N} ->
            Ns = try beamlab_engine_code:timed(Exec, N, RunnerInit)
                 catch Class:Reason -> exit({beamlab_worker, {runner_failed, Class, Reason}})
                 end,
            Job ! {measured, self(), Ns},
            timed_loop(Job, Exec, RunnerInit)
    end.

ensure_timed(#st{timed = undefined, exec = Exec, init_result = IR} = St) ->
    Job = self(),
    Pid = spawn_link(fun() -> timed_worker(Job, Exec, IR) end),
    St1 = St#st{spawned = [Pid | St#st.spawned]},
    case await_ready([Pid], St1) of
        ok -> {ok, Pid, St1#st{timed = Pid}};
        {error, Failure} -> kill_wait(Pid), {error, fail(Failure, St1)}
    end;
ensure_timed(#st{timed = Pid} = St) ->
    {ok, Pid, St}.

%% Waits for every new worker's `ready'; a worker dying in init_runner
%% arrives as an 'EXIT' carrying the failure.
await_ready(Pids, St) ->
    Deadline = St#st.deadline,
    End = erlang:monotonic_time(millisecond) + Deadline,
    await_ready_loop(Pids, End, St).

await_ready_loop([], _End, _St) ->
    ok;
await_ready_loop([Pid | Rest], End, #st{deadline = Deadline} = St) ->
    Left = max(0, End - erlang:monotonic_time(millisecond)),
    receive
        {ready, Pid} -> await_ready_loop(Rest, End, St);
        {'EXIT', Pid, Reason} -> {error, exit_failure(Pid, Reason, St)}
    after Left ->
            {error, {hook_timeout, init_runner, Deadline}}
    end.

kill_all(#st{workers = Workers, timed = Timed} = St) ->
    _ = [kill_wait(P) || P <- maps:keys(Workers)],
    Timed =/= undefined andalso kill_wait(Timed),
    St#st{workers = #{}, timed = undefined, active = false}.

%% The job's group leader. Output of the benchmarked code (io:format...)
%% goes to standard error, never into the command's output (`--format
%% json' stays one document); other I/O requests (input, options) go to
%% the real group leader, whose replies go straight to the requester. The
%% heap-limit reports that the logger filter
%% (beamlab_runtime_memory:heap_limit_filter/2) sends here go to the job.
%% It lives as long as the job (linked).
start_leader(Real, Job) ->
    spawn_link(fun() -> leader_loop(Real, Job) end).

leader_loop(Real, Job) ->
    receive
        {io_request, _From, _ReplyAs, Request} = Msg ->
            To = case output_request(Request) of
                     true -> whereis(standard_error);
                     false -> Real
                 end,
            (case To of undefined -> Real; _ -> To end) ! Msg,
            leader_loop(Real, Job);
        {beamlab_heap_limit, _Pid} = Msg ->
            Job ! Msg,
            leader_loop(Real, Job);
        Msg ->
            Real ! Msg,
            leader_loop(Real, Job)
    end.

output_request({put_chars, _, _}) -> true;
output_request({put_chars, _, _, _, _}) -> true;
output_request({put_chars, _}) -> true;
output_request({put_chars, _, _, _}) -> true;
output_request({requests, Rs}) when is_list(Rs) -> lists:all(fun output_request/1, Rs);
output_request(_) -> false.

%% Kills what the benchmarked code spawned and left running, then the
%% proxy: every process whose group leader is the job's, and every
%% process whose parent is the job, one of its workers or a process
%% already found (code that changed its group leader,
%% `group_leader(whereis(init), self())', is still found). Processes
%% spawned while this runs are caught by the next pass.
reap(#st{leader = Leader, spawned = Spawned}) ->
    reap(Leader, sets:from_list([self(), Leader | Spawned], [{version, 2}]), 10),
    unlink(Leader),
    exit(Leader, kill),
    ok.

reap(_Leader, _Known, 0) ->
    ok;
reap(Leader, Known, Passes) ->
    Self = self(),
    Left = [P || P <- erlang:processes(), P =/= Self, P =/= Leader, ours(P, Leader, Known)],
    case Left of
        [] -> ok;
        _ ->
            _ = [exit(P, kill) || P <- Left],
            reap(Leader, sets:union(Known, sets:from_list(Left, [{version, 2}])), Passes - 1)
    end.

ours(P, Leader, Known) ->
    case erlang:process_info(P, [group_leader, parent]) of
        [{group_leader, Leader}, _] -> true;
        [_, {parent, Parent}] -> sets:is_element(Parent, Known);
        undefined -> false
    end.

%% Kill is reliable even for a suspended process; waiting for the 'EXIT'
%% guarantees no worker still runs old code when the module is purged.
kill_wait(Pid) ->
    exit(Pid, kill),
    receive {'EXIT', Pid, _} -> ok
    after 5000 -> ok
    end.

suspend_quiet(Pid) ->
    try erlang:suspend_process(Pid), suspended
    catch error:badarg -> running
    end.

resume_quiet(Pid) ->
    try erlang:resume_process(Pid)
    catch error:badarg -> false
    end.
