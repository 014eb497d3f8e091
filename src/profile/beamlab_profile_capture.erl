%%% @doc Call capture of chosen processes on a running node, over
%%% distribution, with no module loaded there (`beamlab profile --node N
%%% --process P'). The VM's own tracing does the measuring: the processes
%%% get the `call' trace flag and every loaded function a `call_time'
%%% pattern (and `call_memory' on OTP 26 and later), so the VM itself
%%% counts calls, own time and allocated words per function and process,
%%% as eprof and tprof read them; the call stacks come from sampling
%%% `process_info(P, current_stacktrace)' every millisecond (on-CPU only:
%%% a waiting process is counted apart), or, with `stacks => trace', from
%%% call and return trace messages (exact stacks, tail calls included, at
%%% the price of one message per call).
%%%
%%% The tracer is one process on the node running OTP's own interpreter
%%% (`erl_eval', an abstract form sent from here: no beamlab code), the
%%% owner of every flag and pattern it sets. It removes them all in an
%%% `after' clause however it ends: the capture's end, a stop sent from
%%% here (Ctrl-C, SIGTERM), its own deadline (the duration plus a grace,
%%% even if this VM hangs), a crash, and the `DOWN' of its monitor on the
%%% controlling process here (this VM killed, the connection gone). It
%%% enforces a hard bound on trace messages per second and in total
%%% (recon_trace's rate limit), checks its own mailbox, and stops and says
%%% so when a bound is reached. It measures its own cost: its reductions,
%%% its peak memory, the node's memory before and after, and the traced
%%% processes' reduction rate while captured against a window before.
%%%
%%% On OTP 27 and later the agent makes a trace session of its own
%%% (`trace:session_create/3'): its flags and patterns cannot collide with
%%% another tracer on the node (dbg, tprof, another capture), and the VM
%%% destroys the session with all its settings once the agent's handle is
%%% gone. Before 27, classic tracing (`erlang:trace/3'): a process with a
%%% tracer already (dbg, another tool) is refused, and `call_time'
%%% patterns are per node (a concurrent eprof or tprof on the node would
%%% lose its own). The document says which ran.
%%%
%%% By default the `call_time' patterns are duty-cycled: set on the
%%% processes' own modules for one window of `duty'% of each
%%% `duty_period'; each window's counters are read just after the setting
%%% and again at its end, while the patterns are still on, and only the
%%% difference counts (what the setting and the removal charge to the
%%% function a process is in is left out), then the patterns are removed;
%%% the differences summed over the windows are scaled by the measured
%%% on-fraction (what a breakpoint on every call costs a call-heavy
%%% process is paid only in the windows). `duty => 100' keeps them on all
%%% along. With the own modules, a module that a sampled stack shows later
%%% is patterned too (at most `max_followed', default 32). See
%%% docs/profile.md.
-module(beamlab_profile_capture).

-export([resolve/3, capture/3, agent_exprs/0, fun_name/1, on_fraction/2, scale/2, window_counts/2,
         format_error/1]).

-type target() :: {pid, string()} | {name, string()} | {top, reductions | message_queue}
                | {queue, string()}.
-type opts() :: #{duration := pos_integer(),          % ms
                  stacks => sample | trace,
                  calls => time | none,               % none: stack samples only
                  patterns => all | own,              % own: the processes' own modules only
                  duty => 1..100,                     % % of the time the patterns are on
                  duty_period => pos_integer(),       % ms: one window on, then off
                  max_rate => pos_integer(),          % trace messages per second
                  max_total => pos_integer(),         % trace messages and samples in all
                  sample_ms => pos_integer(),
                  max_followed => non_neg_integer(),  % modules followed beyond the own ones
                  grace_ms => pos_integer()}.
-type resolved() :: #{spec := binary(), pid := pid()}.
%% A duty cycle's window on the node's monotonic clock (µs): its first
%% read of the counters (just after the patterns were set) began and
%% returned, its last read (at its end, the patterns still on) began and
%% returned.
-type window() :: {integer(), integer(), integer(), integer()}.
-type capture() :: #{atom() => term()}.
-type error_reason() :: {bad_pid, string()} | {no_process, string()} | {no_name, string()}
                      | {no_queue, string()} | {not_rabbit, string()}
                      | {node, node(), term()} | {traced, [binary()]} | {agent, term()}
                      | no_processes.
-export_type([target/0, opts/0, resolved/0, capture/0, error_reason/0, window/0]).

-define(MAX_RATE, 20000).
-define(MAX_TOTAL, 2000000).
-define(SAMPLE_MS, 1).
-define(BATCH_MS, 200).
-define(MAX_STACKS, 5000).
-define(DEPTH, 64).
-define(GRACE_MS, 10000).
-define(MAX_SAMPLES, 300000).
-define(CALL_MS, 10000).
-define(OTHER, <<"[other stacks]">>).
-define(DUTY, 5).
-define(DUTY_PERIOD_MS, 2000).
-define(DUTY_SAMPLE_MS, 10).
-define(MAX_FOLLOWED, 32).

%%--------------------------------------------------------------------
%% Which processes
%%--------------------------------------------------------------------

%% @doc The processes named by `Targets' on `Node': a pid as the node
%% prints it (`<0.85.0>'), a registered name (never creates an atom on
%% the node), the top process by reductions (over 500 ms) or by
%% message queue length, or a RabbitMQ queue's process (`{queue, Name}',
%% in the default virtual host `/', found with the broker's own
%% `rabbit_amqqueue:lookup/1' and `amqqueue:get_pid/1' called over
%% distribution; a quorum queue's Ra server by its registered name).
%% The same process named twice is captured once.
-spec resolve(node(), [target()], timeout()) -> {ok, [resolved()]} | {error, error_reason()}.
resolve(_Node, [], _Timeout) ->
    {error, no_processes};
resolve(Node, Targets, Timeout) ->
    try
        Rs = [#{spec => spec(T), pid => one(Node, T, Timeout)} || T <- Targets],
        {ok, dedup(Rs, [])}
    catch
        throw:{capture, R} -> {error, R}
    end.

dedup([], Acc) -> lists:reverse(Acc);
dedup([#{pid := P} = R | Rest], Acc) ->
    case [x || #{pid := Q} <- Acc, Q =:= P] of
        [] -> dedup(Rest, [R | Acc]);
        _ -> dedup(Rest, Acc)
    end.

spec({pid, S}) -> unicode:characters_to_binary(S);
spec({name, S}) -> unicode:characters_to_binary(S);
spec({queue, S}) -> unicode:characters_to_binary(["queue:", S]);
spec({top, reductions}) -> <<"top:reductions">>;
spec({top, message_queue}) -> <<"top:message_queue">>.

one(Node, {pid, S}, T) ->
    %% `<8905.85.0>' (a pid as another node printed it) is `<0.85.0>' there.
    Local = re:replace(S, "^<[0-9]+\\.", "<0.", [{return, list}]),
    P = try call(Node, erlang, list_to_pid, [Local], T)
        catch throw:{capture, {node, _, {erlang_error, badarg}}} -> throw({capture, {bad_pid, S}})
        end,
    alive(Node, P, S, T);
one(Node, {name, S}, T) ->
    %% list_to_existing_atom: an unknown name creates no atom there.
    A = try call(Node, erlang, list_to_existing_atom, [S], T)
        catch throw:{capture, {node, _, {erlang_error, badarg}}} -> throw({capture, {no_name, S}})
        end,
    case call(Node, erlang, whereis, [A], T) of
        P when is_pid(P) -> P;
        _ -> throw({capture, {no_name, S}})
    end;
one(Node, {queue, S}, T) ->
    %% The broker's own lookup; nothing of ours is loaded there. A node
    %% without RabbitMQ has no rabbit_amqqueue.
    Resource = {resource, <<"/">>, queue, unicode:characters_to_binary(S)},
    Q = try call(Node, rabbit_amqqueue, lookup, [Resource], T)
        catch throw:{capture, {node, _, {erlang_error, undef}}} -> throw({capture, {not_rabbit, S}})
        end,
    case Q of
        {ok, Queue} ->
            case call(Node, amqqueue, get_pid, [Queue], T) of
                P when is_pid(P) -> alive(Node, P, "queue:" ++ S, T);
                %% A quorum queue: its Ra server, registered on its node.
                {RaName, RaNode} when is_atom(RaName), RaNode =:= Node ->
                    case call(Node, erlang, whereis, [RaName], T) of
                        P when is_pid(P) -> P;
                        _ -> throw({capture, {no_queue, S}})
                    end;
                _ -> throw({capture, {no_queue, S}})
            end;
        _ -> throw({capture, {no_queue, S}})
    end;
one(Node, {top, By}, T) ->
    Ps = call(Node, erlang, processes, [], T),
    Scan = fun() -> case beamlab_runtime_procs:scan(Node, Ps, false, T) of
                        {ok, Tab} -> Tab;
                        {error, R} -> throw({capture, {node, Node, R}})
                    end
           end,
    A = Scan(),
    Score = case By of
                message_queue -> [{Q, P} || {P, {_, Q, _}} <- maps:to_list(A)];
                reductions ->
                    receive after 500 -> ok end,
                    B = Scan(),
                    [{R2 - R1, P} || {P, {R2, _, _}} <- maps:to_list(B), {R1, _, _} <- [maps:get(P, A, {R2, 0, 0})]]
            end,
    case lists:reverse(lists:sort(Score)) of
        [{_, P} | _] -> P;
        [] -> throw({capture, no_processes})
    end.

alive(Node, P, S, T) ->
    case call(Node, erlang, is_process_alive, [P], T) of
        true -> P;
        _ -> throw({capture, {no_process, S}})
    end.

call(Node, M, F, A, T) ->
    try erpc:call(Node, M, F, A, T)
    catch
        error:{exception, R, _} -> throw({capture, {node, Node, {erlang_error, R}}});
        error:{erpc, R} -> throw({capture, {node, Node, R}})
    end.

%%--------------------------------------------------------------------
%% The capture
%%--------------------------------------------------------------------

%% @doc Captures the processes for `duration' ms (less when a bound is
%% reached, the processes all exit, or this process gets
%% `{beamlab_interrupt, _}'), and returns what was measured: per process
%% its state before and after and its reduction rate untraced and
%% captured, the call table, the stacks (as a profile the flame graph,
%% folded stacks and speedscope read), the timeline of samples, why it
%% stopped and what it cost the node. The caller is subscribed to
%% interrupts (or not: then only the duration ends it).
-spec capture(node(), [resolved()], opts()) -> {ok, capture()} | {error, error_reason()}.
capture(Node, Procs, Opts) ->
    Duration = maps:get(duration, Opts),
    Stacks = maps:get(stacks, Opts, sample),
    Pids = [P || #{pid := P} <- Procs],
    try
        Otp = otp(call(Node, erlang, system_info, [otp_release], ?CALL_MS)),
        Untraced = reduction_rates(Node, Pids, 300),
        Calls = maps:get(calls, Opts, time),
        Pct = maps:get(duty, Opts, ?DUTY),
        PeriodUs = maps:get(duty_period, Opts, ?DUTY_PERIOD_MS) * 1000,
        %% Duty-cycled: only call_time with sampled stacks (trace stacks
        %% need their local patterns all along); 100% is a full capture.
        Duty = case {Calls, Stacks} of
                   {time, sample} when Pct < 100 -> {max(1, PeriodUs * Pct div 100), PeriodUs};
                   _ -> none
               end,
        %% A duty cycle samples the stacks every 10 ms, not every 1: a
        %% process serving short requests answers each process_info
        %% request between two of them, which alone cost a gen_server a
        %% third of its speed at 1 ms (docs/profile.md).
        SampleMs = case Duty of none -> ?SAMPLE_MS; _ -> ?DUTY_SAMPLE_MS end,
        Cfg = #{sample_ms => maps:get(sample_ms, Opts, SampleMs), duty => Duty,
                max_rate => maps:get(max_rate, Opts, ?MAX_RATE),
                max_total => maps:get(max_total, Opts, ?MAX_TOTAL),
                %% (no call_memory in a duty cycle: switching call_time and
                %% call_memory on and off together crashes OTP 27.3's VM,
                %% docs/profile.md)
                stacks => Stacks, memory => Otp >= 26 andalso Calls =:= time andalso Duty =:= none,
                calls => Calls,
                %% A duty cycle reads the counters at each window's end, one
                %% trace_info call per patterned function: the own modules'
                %% few by default, not every loaded function.
                patterns => maps:get(patterns, Opts, case Duty of none -> all; _ -> own end),
                max_followed => maps:get(max_followed, Opts, ?MAX_FOLLOWED),
                until_ms => Duration + maps:get(grace_ms, Opts, ?GRACE_MS),
                batch_ms => ?BATCH_MS, max_stacks => ?MAX_STACKS, depth => ?DEPTH},
        Agent = spawn(Node, erl_eval, exprs, [agent_exprs(), []]),
        Mon = erlang:monitor(process, Agent),
        Agent ! {beamlab_capture, self(), Pids, Cfg},
        receive
            {beamlab_capture_started, Agent, Started} ->
                T0 = erlang:monotonic_time(millisecond),
                St = collect(#{agent => Agent, mon => Mon, until => T0 + Duration, stop_sent => false,
                               stacks => #{}, samples => [], nsamples => 0, dropped => 0, waiting => 0,
                               interrupted => false, done => undefined, lost => undefined}),
                {ok, result(Node, Procs, Cfg#{otp => Otp}, Started, Untraced, St)};
            {beamlab_capture_refused, Agent, {traced, Busy}} ->
                erlang:demonitor(Mon, [flush]),
                {error, {traced, [label(P, Procs) || P <- Busy]}};
            {'DOWN', Mon, process, Agent, Why} ->
                {error, {agent, Why}}
        after ?CALL_MS ->
            erlang:demonitor(Mon, [flush]),
            exit(Agent, kill),
            {error, {node, Node, timeout}}
        end
    catch
        throw:{capture, R} -> {error, R}
    end.

otp(R) ->
    case string:to_integer(R) of
        {N, _} when is_integer(N) -> N;
        _ -> 0
    end.

%% Reductions per second of each process over `Ms' (untraced).
reduction_rates(Node, Pids, Ms) ->
    A = reds(Node, Pids),
    receive after Ms -> ok end,
    B = reds(Node, Pids),
    maps:from_list([{P, (maps:get(P, B) - R) * 1000 / Ms} || {P, R} <- maps:to_list(A), is_map_key(P, B)]).

reds(Node, Pids) ->
    case beamlab_runtime_procs:scan(Node, Pids, false, ?CALL_MS) of
        {ok, Tab} -> maps:map(fun(_, {R, _, _}) -> R end, Tab);
        {error, R} -> throw({capture, {node, Node, R}})
    end.

%% Batches until the agent is done; the duration's end or an interrupt
%% sends it a stop (once).
collect(#{agent := Agent, mon := Mon, until := Until} = St) ->
    Wait = case maps:get(stop_sent, St) of
               true -> ?CALL_MS + ?GRACE_MS;
               false -> max(0, Until - erlang:monotonic_time(millisecond))
           end,
    receive
        {beamlab_capture_batch, Agent, New, Samples, _Stats} ->
            collect(add_batch(New, Samples, St));
        {beamlab_capture_done, Agent, Done} ->
            erlang:demonitor(Mon, [flush]),
            St#{done := Done};
        {beamlab_interrupt, _} ->
            collect(stop(St#{interrupted := true}));
        {'DOWN', Mon, process, Agent, Why} ->
            St#{lost := Why}
    after Wait ->
            case maps:get(stop_sent, St) of
                false -> collect(stop(St));
                true ->
                    %% The node did not answer the stop in time: its own
                    %% deadline still ends the agent there.
                    erlang:demonitor(Mon, [flush]),
                    St#{lost := no_answer}
            end
    end.

stop(#{stop_sent := true} = St) -> St;
stop(#{agent := Agent} = St) ->
    Agent ! {beamlab_capture_stop, self()},
    St#{stop_sent := true}.

add_batch(New, Samples, #{stacks := Stacks, samples := Acc, nsamples := N, dropped := D} = St) ->
    Stacks1 = lists:foldl(fun({Id, P, S}, M) -> M#{Id => {P, S}} end, Stacks, New),
    Len = length(Samples),
    case N + Len > ?MAX_SAMPLES of
        true -> St#{stacks := Stacks1, dropped := D + Len};
        false -> St#{stacks := Stacks1, samples := lists:reverse(Samples, Acc), nsamples := N + Len}
    end.

%%--------------------------------------------------------------------
%% The result
%%--------------------------------------------------------------------

result(Node, Procs, Cfg, Started, Untraced, St) ->
    #{stacks := Stacks, samples := RevSamples, done := Done, lost := Lost, interrupted := Int} = St,
    Labels = maps:from_list([{P, label(P, Procs, Started)} || #{pid := P} <- Procs]),
    Samples = lists:reverse(RevSamples),
    Folded = fun(0) -> ?OTHER;
                (Id) ->
                     case maps:find(Id, Stacks) of
                         {ok, {P, S}} -> folded(maps:get(P, Labels, pid_text(P)), S);
                         error -> ?OTHER
                     end
             end,
    Profile = profile(Samples, Folded),
    D = case Done of undefined -> #{}; _ -> Done end,
    Elapsed = maps:get(elapsed_us, D, 0),
    Why = case {Done, Lost} of
              {undefined, noconnection} -> node_down;
              {undefined, no_answer} -> no_answer;
              {undefined, _} -> agent_lost;
              _ when Int -> interrupted;
              _ -> maps:get(why, D)
          end,
    Before = maps:from_list(maps:get(before, Started, [])),
    After = maps:from_list(maps:get('after', D, [])),
    Pids = [P || #{pid := P} <- Procs],
    Captured = maps:get(reductions_captured, D, #{}),
    Processes = [#{pid => pid_text(P), spec => Spec, label => maps:get(P, Labels),
                   before => state(maps:get(P, Before, undefined)),
                   'after' => state(maps:get(P, After, undefined)),
                   reductions_per_s_untraced => round(maps:get(P, Untraced, 0)),
                   reductions_per_s_captured => case maps:find(P, Captured) of
                                                    {ok, R} when Elapsed > 0 -> round(R * 1.0e6 / Elapsed);
                                                    _ -> null
                                                end}
                 || #{pid := P, spec := Spec} <- Procs],
    {NodeMemBefore, NodeMemAfter} = maps:get(node_memory, D, {null, null}),
    Windows = maps:get(windows, D, []),
    {Fraction, FracErr} = on_fraction(Windows, Elapsed),
    Sampled = case maps:get(duty, Cfg) of
                  none -> null;
                  {OnUs, PeriodUs} ->
                      #{on_fraction => Fraction, on_fraction_error => FracErr, windows => length(Windows),
                        on_ms => OnUs / 1000, period_ms => PeriodUs div 1000}
              end,
    Scale = case Sampled of null -> 1.0; _ -> Fraction end,
    #{node => atom_to_binary(Node),
      tracing => tracing(Cfg#{session => maps:get(session, Started, false)}),
      calls_mode => atom_to_binary(maps:get(calls, Cfg)),
      patterns => atom_to_binary(maps:get(patterns, Cfg)),
      pattern_modules => [atom_to_binary(M) || M <- maps:get(modules, D, [])],
      followed_modules => [atom_to_binary(M) || M <- maps:get(followed, D, [])],
      followed_bound_reached => maps:get(follow_full, D, false),
      otp_release => maps:get(otp, Cfg),
      stacks_mode => atom_to_binary(maps:get(stacks, Cfg)),
      processes => Processes,
      calls => calls(window_counts(maps:get(times, D, []), maps:get(times_base, D, [])), maps:get(memory, D, []),
                     Pids, Profile, Scale),
      sampled => Sampled,
      memory_measured => maps:get(memory, Cfg),
      profile => Profile,
      timeline => timeline(Samples, Folded),
      stopped => atom_to_binary(Why),
      complete => Done =/= undefined,
      elapsed_ms => Elapsed div 1000,
      trace_messages => maps:get(messages, D, 0),
      samples => maps:get(nsamples, St),
      samples_dropped => maps:get(dropped, St),
      waiting_samples => maps:get(waiting, D, 0),
      exited => [pid_text(P) || P <- maps:get(dead, D, [])],
      bounds => #{max_rate => maps:get(max_rate, Cfg), max_total => maps:get(max_total, Cfg),
                  sample_ms => maps:get(sample_ms, Cfg), max_followed => maps:get(max_followed, Cfg)},
      cost => #{agent_reductions => maps:get(agent_reductions, D, null),
                agent_memory_peak => maps:get(peak, D, null),
                node_memory_before => NodeMemBefore, node_memory_after => NodeMemAfter,
                read_ms => maps:get(read_us, D, 0) div 1000}}.

tracing(#{calls := none, stacks := sample}) ->
    <<"none: stacks sampled with erlang:process_info/2 (no trace flag, no pattern)">>;
tracing(#{calls := Calls, stacks := Stacks, memory := Mem, patterns := Scope, session := Session}) ->
    iolist_to_binary([case Session of
                          true -> "session: trace:session_create/3, trace:process/4 and trace:function/4 (";
                          false -> "classic: erlang:trace/3 and erlang:trace_pattern/3 ("
                      end,
                      lists:join(", ", [P || {true, P} <- [{Calls =:= time, "call_time"},
                                                           {Mem, "call_memory"},
                                                           {Stacks =:= trace, "local call and return_to messages"}]]),
                      case Scope of
                          own -> " on the processes' own modules";
                          all -> " on every function"
                      end,
                      ")"]).

label(P, Procs) ->
    label(P, Procs, #{}).

label(P, Procs, Started) ->
    Name = case lists:keyfind(P, 1, maps:get(before, Started, [])) of
               {_, Info} when is_list(Info) ->
                   case lists:keyfind(registered_name, 1, Info) of
                       {_, N} when is_atom(N), N =/= [] -> [" ", atom_to_list(N)];
                       _ -> ""
                   end;
               _ -> ""
           end,
    %% A queue's process has no name of its own: the queue names it.
    Queue = [[" ", S] || #{pid := Q, spec := <<"queue:", _/binary>> = S} <- Procs, Q =:= P],
    iolist_to_binary([pid_text(P), Name, Queue]).

%% A pid as the node itself prints it (`<0.85.0>').
pid_text(P) ->
    case string:split(pid_to_list(P), ".", all) of
        ["<" ++ _, Mid, Tail] -> iolist_to_binary(["<0.", Mid, ".", Tail]);
        _ -> list_to_binary(pid_to_list(P))
    end.

state(undefined) -> null;
state(Info) ->
    G = fun(K) -> case lists:keyfind(K, 1, Info) of {_, V} -> V; false -> null end end,
    #{message_queue_len => G(message_queue_len), heap_size => G(heap_size),
      total_heap_size => G(total_heap_size), memory => G(memory), reductions => G(reductions),
      status => bin(G(status)),
      current_function => case G(current_function) of
                              {M, F, A} -> fun_name({M, F, A});
                              _ -> null
                          end,
      registered_name => case G(registered_name) of
                             N when is_atom(N), N =/= [] -> atom_to_binary(N);
                             _ -> null
                         end}.

bin(A) when is_atom(A), A =/= null -> atom_to_binary(A);
bin(_) -> null.

%% @doc `Module:Function/Arity' as text.
-spec fun_name({module(), atom(), arity() | [term()]}) -> binary().
fun_name({M, F, A}) when is_list(A) -> fun_name({M, F, length(A)});
fun_name({M, F, A}) ->
    iolist_to_binary(io_lib:format("~ts:~ts/~b", [atom_to_list(M), atom_to_list(F), A])).

%% Root first: the process, then the outermost function.
folded(Label, Stack) ->
    iolist_to_binary(lists:join(<<";">>, [Label | [fun_name(MFA) || MFA <- lists:reverse(Stack)]])).

%% The profile the flame graph, `--folded' and speedscope read (the shape
%% of `beamlab_profile_stacks:build/2': counts are samples).
profile(Samples, Folded) ->
    Counts = lists:foldl(fun({_, Id}, M) -> M#{Id => maps:get(Id, M, 0) + 1} end, #{}, Samples),
    Stacks = lists:reverse(lists:keysort(2, [{Folded(Id), C} || {Id, C} <- maps:to_list(Counts)])),
    {Self, Total} = lists:foldl(
                      fun({S, C}, {SA, TA}) ->
                              [_Root | Frames] = binary:split(S, <<";">>, [global]),
                              case Frames of
                                  [] -> {SA, TA};
                                  _ ->
                                      Leaf = lists:last(Frames),
                                      {SA#{Leaf => maps:get(Leaf, SA, 0) + C},
                                       lists:foldl(fun(F, T) -> T#{F => maps:get(F, T, 0) + C} end,
                                                   TA, lists:usort(Frames))}
                              end
                      end, {#{}, #{}}, Stacks),
    N = length(Samples),
    Functions = lists:sublist(
                  lists:sort(fun(#{<<"self">> := A, <<"name">> := NA}, #{<<"self">> := B, <<"name">> := NB}) ->
                                     {A, NB} >= {B, NA}
                             end,
                             [#{<<"name">> => F, <<"category">> => <<"erlang">>, <<"note">> => <<>>,
                                <<"self">> => maps:get(F, Self, 0), <<"total">> => T}
                              || {F, T} <- maps:to_list(Total)]), 300),
    Names = lists:usort(lists:append([binary:split(S, <<";">>, [global]) || {S, _} <- Stacks])),
    #{<<"samples">> => N,
      <<"categories">> => #{<<"erlang">> => N, <<"emulator">> => 0, <<"kernel">> => 0, <<"harness">> => 0},
      <<"threads">> => #{},
      <<"thread_categories">> => #{},
      <<"functions">> => Functions,
      <<"stacks">> => [[S, C] || {S, C} <- lists:sublist(Stacks, 3000)],
      <<"stacks_merged">> => lists:sum([C || {_, C} <- lists:nthtail(min(3000, length(Stacks)), Stacks)]),
      <<"names">> => maps:from_list([{Nm, <<"erlang">>} || Nm <- Names]),
      <<"unnamed_jit">> => 0}.

%% Samples in time order, runs of one stack merged: `[StartMs, Ms, Stack]'
%% (a flame chart: time on the x axis), at most 5000 runs.
timeline(Samples, Folded) ->
    Runs = lists:foldl(fun({T, Id}, [[T0, Id, _] | Rest]) -> [[T0, Id, T] | Rest];
                          ({T, Id}, Acc) -> [[T, Id, T] | Acc]
                       end, [], Samples),
    [[T0, max(1, T1 - T0 + 1), Folded(Id)] || [T0, Id, T1] <- lists:sublist(lists:reverse(Runs), 5000)].

%% The call table: per function the calls, own time and words of the
%% captured processes (the VM's counters), and its share of the stack
%% samples (self and total).
calls(Times, Mems, Pids, Profile, Scale) ->
    Ours = fun(P) -> lists:member(P, Pids) end,
    MemBy = maps:from_list([{MFA, lists:sum([W || {P, _, W} <- L, Ours(P)])} || {MFA, L} <- Mems]),
    SampleShare = maps:from_list([{N, {S, T}} || #{<<"name">> := N, <<"self">> := S, <<"total">> := T}
                                                      <- maps:get(<<"functions">>, Profile)]),
    NSamples = max(1, maps:get(<<"samples">>, Profile)),
    Rows0 = [{MFA, lists:sum([C || {P, C, _, _} <- L, Ours(P)]),
              lists:sum([S * 1000000 + U || {P, _, S, U} <- L, Ours(P)])}
             || {MFA, L} <- Times],
    %% (a function that ran in a window without being called in it has
    %% time but no calls)
    Rows = [R || {_, C, U} = R <- Rows0, C > 0 orelse U > 0],
    AllUs = max(1, lists:sum([U || {_, _, U} <- Rows])),
    Sorted = lists:reverse(lists:keysort(3, Rows)),
    [begin
         Name = fun_name(MFA),
         {SS, TS} = maps:get(Name, SampleShare, {0, 0}),
         Words = maps:get(MFA, MemBy, null),
         #{function => Name, calls => scale(C, Scale), own_us => scale(U, Scale), own_share => U / AllUs,
           calls_counted => C, self_samples => SS / NSamples, total_samples => TS / NSamples,
           memory_words => case Words of null -> null; _ -> scale(Words, Scale) end}
     end || {MFA, C, U} <- lists:sublist(Sorted, 300)].

%% @doc The share of `ElapsedUs' that a duty cycle's windows counted, and
%% its relative error: `{Fraction, Error}'. A window counts the
%% difference between two reads of the counters, each one call per
%% function at some moment inside the read, not known more closely, so
%% each window counts from the middle of its first read to the middle of
%% its last, give or take half of each read's length; `Error' is that
%% sum over the on-time (0.05: the scaled figures are 5% uncertain from
%% it). No window (or no time): `{0.0, 0.0}'.
-spec on_fraction([window()], non_neg_integer()) -> {float(), float()}.
on_fraction(Windows, ElapsedUs) ->
    On = lists:sum([(P0 + P1) / 2 - (S0 + S1) / 2 || {S0, S1, P0, P1} <- Windows]),
    Unsure = lists:sum([((S1 - S0) + (P1 - P0)) / 2 || {S0, S1, P0, P1} <- Windows]),
    case On > 0 andalso ElapsedUs > 0 of
        true -> {min(1.0, On / ElapsedUs), Unsure / On};
        false -> {0.0, 0.0}
    end.

%% @doc What the windows counted: the counters of their last reads minus
%% those of their first reads (each summed over the windows), per function
%% and process, in the VM's `call_time' form `{Pid, Calls, Seconds,
%% Microseconds}' (as microseconds). A pair absent from the first reads
%% started at zero; a difference is never below zero. A full capture has
%% no first reads: its counters as they are.
-spec window_counts([{mfa(), [{pid(), non_neg_integer(), non_neg_integer(), non_neg_integer()}]}],
                    [{mfa(), [{pid(), non_neg_integer(), non_neg_integer(), non_neg_integer()}]}]) ->
          [{mfa(), [{pid(), non_neg_integer(), 0, non_neg_integer()}]}].
window_counts(Ends, Bases) ->
    Base = maps:from_list([{{MFA, P}, {C, S * 1000000 + U}} || {MFA, L} <- Bases, {P, C, S, U} <- L]),
    [{MFA, [begin
                {C0, U0} = maps:get({MFA, P}, Base, {0, 0}),
                {P, max(0, C - C0), 0, max(0, S * 1000000 + U - U0)}
            end || {P, C, S, U} <- L]}
     || {MFA, L} <- Ends].

%% @doc A counter of the on-time scaled to the whole capture: `N' divided
%% by the on-fraction, rounded (`N' itself when the fraction is 0 or 1:
%% nothing counted, or counted all the time).
-spec scale(non_neg_integer(), float()) -> non_neg_integer().
scale(N, F) when F > 0.0, F < 1.0 -> round(N / F);
scale(N, _) -> N.

%%--------------------------------------------------------------------
%% The agent on the node
%%--------------------------------------------------------------------

%% @doc The agent: an expression OTP's `erl_eval' evaluates on the node
%% (spawned there by {@link capture/3}); parsed here, on this VM.
-spec agent_exprs() -> [erl_parse:abstract_expr()].
agent_exprs() ->
    {ok, Exprs} = beamlab_runtime_expr:parse(agent_text()),
    Exprs.

agent_text() ->
    "receive {beamlab_capture, C, Ps, Cfg} ->
      #{sample_ms := Iv, max_rate := MaxRate, max_total := MaxTotal, stacks := Mode, memory := Mem0,
        calls := Calls, until_ms := UntilMs, batch_ms := BatchMs, max_stacks := MaxStacks, depth := Depth,
        patterns := Scope} = Cfg,
      %% Duty cycle: {OnUs, PeriodUs} (patterns set for OnUs out of every
      %% PeriodUs, their counters read and the patterns removed at each
      %% window's end) or none (patterns on the whole capture).
      Duty = maps:get(duty, Cfg, none),
      Self = self(),
      %% Queued trace messages stay out of the heap: a collection does
      %% not copy them (the usual setting of a tracer).
      erlang:process_flag(message_queue_data, off_heap),
      CRef = erlang:monitor(process, C),
      Now = fun() -> erlang:monotonic_time(microsecond) end,
      Info = fun(P) -> erlang:process_info(P, [registered_name, current_function, initial_call, status,
                                               message_queue_len, heap_size, total_heap_size, memory,
                                               reductions]) end,
      Mem = Mem0 andalso Calls =:= time,
      Flags = case {Mode, Calls} of
                {trace, _} -> [call, return_to, arity, monotonic_timestamp];
                {sample, time} -> [call];
                {sample, none} -> []
              end,
      Pats = case Calls of time -> [call_time]; none -> [] end
             ++ case Mem of true -> [call_memory]; false -> [] end
             ++ case Mode of trace -> [local]; sample -> [] end,
      %% own: the modules on the processes' stacks and of their initial
      %% calls (a gen_server's callback module with gen_server and
      %% proc_lib): the calls into everything else (lists, ets, maps) run
      %% without a breakpoint, which is what call_time costs.
      OwnMods = fun(P) ->
                  case erlang:process_info(P, [current_stacktrace, initial_call, dictionary]) of
                    [{current_stacktrace, St}, {initial_call, {IM, _, _}}, {dictionary, Dict}] ->
                      PL = case lists:keyfind('$initial_call', 1, Dict) of
                             {_, {PM, _, _}} -> [PM];
                             _ -> []
                           end,
                      [M || {M, _, _, _} <- St] ++ [IM | PL];
                    _ -> []
                  end
                end,
      OwnList = lists:usort([M || P <- Ps, M <- OwnMods(P), not lists:member(M, [erlang, erts_internal,
                                                                                 erl_eval, erts_code_purger])]),
      Mods = case Scope of
               all -> all;
               own -> OwnList
             end,
      Specs = fun(all) -> [{'_', '_', '_'}];
                 (Ms) -> [{M, '_', '_'} || M <- Ms]
              end,
      %% Modules followed: with the own modules, a module a sampled stack
      %% shows later is patterned too (at the next window in a duty
      %% cycle, at once all along), at most MaxFollow of them. Not with
      %% call_memory: setting it again and again beside call_time is
      %% what crashed OTP 27.3's VM (docs/profile.md), so a capture that
      %% measures memory sets its patterns once.
      Follow = Scope =:= own andalso Calls =:= time andalso Mode =:= sample andalso not Mem,
      MaxFollow = maps:get(max_followed, Cfg, 0),
      NotOwn = [erlang, erts_internal, erl_eval, erts_code_purger],
      %% The cleanup removes the patterns of the modules patterned by
      %% the end (own and followed); only a capture that crashed does not
      %% know what it followed and removes its patterns from every
      %% function (with classic tracing, another tool's call_time too).
      CrashSpecs = case Follow of true -> Specs(all); false -> Specs(Mods) end,
      %% OTP 27 and later: a trace session of our own, isolated from any
      %% other tracer on the node (dbg, tprof, another capture) and
      %% destroyed with all its settings once this process's handle is
      %% gone, however it ends; classic tracing before.
      Sess = case code:ensure_loaded(trace) of
               {module, trace} ->
                 case erlang:function_exported(trace, session_create, 3) of
                   true -> trace:session_create(beamlab_capture, Self, []);
                   false -> none
                 end;
               _ -> none
             end,
      TraceP = fun(P, How, Fl) ->
                 case Sess of none -> erlang:trace(P, How, Fl); _ -> trace:process(Sess, P, How, Fl) end
               end,
      TraceF = fun(Spec, How, Fl) ->
                 case Sess of none -> erlang:trace_pattern(Spec, How, Fl); _ -> trace:function(Sess, Spec, How, Fl) end
               end,
      TInfo = fun(X, Item) ->
                case Sess of none -> erlang:trace_info(X, Item); _ -> trace:info(Sess, X, Item) end
              end,
      Clean = fun(CleanSpecs) ->
                [catch TraceP(P, false, Flags) || P <- Ps],
                [catch TraceF(Spec, false, [Pat]) || Pat <- Pats, Spec <- CleanSpecs],
                case Sess of none -> ok; _ -> catch trace:session_destroy(Sess) end,
                ok
              end,
      Busy = [P || P <- Ps, case catch TInfo(P, tracer) of
                              {tracer, Tr} when Tr =/= [] -> true;
                              _ -> false
                            end],
      case Busy of
        %% (nothing set yet: another tracer's flags and patterns are
        %% left alone)
        [_ | _] ->
          case Sess of none -> ok; _ -> catch trace:session_destroy(Sess) end,
          C ! {beamlab_capture_refused, Self, {traced, Busy}};
        [] ->
          {Result, Patterned} =
            try
              Before = [{P, Info(P)} || P <- Ps],
              MemBefore = erlang:memory(total),
              {reductions, R0} = erlang:process_info(Self, reductions),
              PatsTo = fun(How, Ms) -> [TraceF(Spec, How, [Pat]) || Pat <- Pats, Spec <- Specs(Ms)] end,
              case Duty of none -> PatsTo(true, Mods); _ -> ok end,
              Traced = case Flags of
                         [] -> [P || P <- Ps, erlang:is_process_alive(P)];
                         _ -> [P || P <- Ps, (catch TraceP(P, true, Flags)) =:= 1]
                       end,
              Reds0 = [{P, erlang:process_info(P, reductions)} || P <- Traced],
              MFAsOf = fun(Ms) ->
                         lists:append([try [{M, F, Ar} || {F, Ar} <- M:module_info(functions)]
                                       catch _:_ -> [] end
                                       || {M, _} <- code:all_loaded(),
                                          Ms =:= all orelse lists:member(M, Ms)])
                       end,
              ReadMFAs = fun(Item, MFAs) ->
                           Infos = lists:zipwith(TInfo, MFAs, lists:duplicate(length(MFAs), Item)),
                           [{MFA, I} || {MFA, {_, [_ | _] = I}} <- lists:zip(MFAs, Infos)]
                         end,
              Read = fun(Item, Ms) -> ReadMFAs(Item, MFAsOf(Ms)) end,
              %% Counters: {MFA, P} => {Calls, Us}.
              AddT = fun(Ts, Acc) ->
                       lists:foldl(fun({MFA, L}, A0) ->
                                     lists:foldl(fun({P, Cn, S, U}, A1) ->
                                                   {C0, U0} = maps:get({MFA, P}, A1, {0, 0}),
                                                   A1#{{MFA, P} => {C0 + Cn, U0 + S * 1000000 + U}}
                                                 end, A0, L)
                                   end, Acc, Ts)
                     end,
              %% The reads summed over the windows (first reads apart from
              %% last ones: beamlab takes the difference).
              Sum = fun(M, Acc) ->
                      maps:fold(fun(K, {C1, U1}, A0) ->
                                  {C0, U0} = maps:get(K, A0, {0, 0}),
                                  A0#{K => {C0 + C1, U0 + U1}}
                                end, Acc, M)
                    end,
              ReadT = fun(MFAs) -> case Calls of time -> AddT(ReadMFAs(call_time, MFAs), #{}); none -> #{} end end,
              %% The functions each window reads while its patterns are on:
              %% with the own modules all of them; with every function, the
              %% own modules' and those that counted in a window before
              %% (reading all 8000 twice a window, each read stopping the
              %% schedulers, kept the patterns on most of the time).
              KnownOf = fun(A, Ms) ->
                          case Ms of
                            all -> maps:keys(maps:get(known, A));
                            _ -> MFAsOf(Ms)
                          end
                        end,
              %% A window: the patterns set, the counters read at once (the
              %% baseline), read again at the window's end while the
              %% patterns are still on, then removed (which frees them);
              %% the window counts the difference of the two reads. What
              %% the edges charge is left out: at the setting, the first
              %% event charges the time since the process was last
              %% scheduled in to the function it was in at the previous
              %% window's end; and a paused pattern (the VM's `pause')
              %% still charges each schedule-out and return to the
              %% function the process was last counted in, so a read made
              %% after a pause charged its whole length to one function
              %% (docs/profile.md). Its times {BaseStart, BaseEnd,
              %% EndStart, EndEnd} tell the on-time.
              Open = fun(A) ->
                       Ms = maps:get(mods, A),
                       PatsTo(true, Ms),
                       B0 = Now(),
                       Base = ReadT(KnownOf(A, Ms)),
                       B1 = Now(),
                       {OnUs, _} = Duty,
                       A#{won := true, ws := {B0, B1}, base := Base, wmods := Ms, wnext := B1 + OnUs,
                          read_us := maps:get(read_us, A) + (B1 - B0)}
                     end,
              Close = fun(#{won := false} = A) -> A;
                         (A) ->
                           {B0, B1} = maps:get(ws, A),
                           Ms = maps:get(wmods, A),
                           Known = KnownOf(A, Ms),
                           P0 = Now(),
                           End1 = ReadT(Known),
                           P1 = Now(),
                           %% The rest (with every function patterned): paused,
                           %% then read; what the pause charges goes to the
                           %% function last counted, one read above.
                           End2 = case Ms of
                                    all ->
                                      KnownSet = maps:from_list([{K, true} || K <- Known]),
                                      PatsTo(pause, Ms),
                                      ReadT([K || K <- MFAsOf(Ms), not is_map_key(K, KnownSet)]);
                                    _ -> #{}
                                  end,
                           PatsTo(false, Ms),
                           End = maps:merge(End2, End1),
                           A#{won := false, wins := [{B0, B1, P0, P1} | maps:get(wins, A)], base := #{},
                              known := maps:merge(maps:get(known, A),
                                                  maps:from_list([{K, true} || {K, _} <- maps:keys(End2)])),
                              acc_t := Sum(End, maps:get(acc_t, A)),
                              acc_b := Sum(maps:get(base, A), maps:get(acc_b, A)),
                              read_us := maps:get(read_us, A) + (Now() - P0)}
                       end,
              Toggle = fun(#{won := false} = A) ->
                             S0 = Now(),
                             A1 = Open(A),
                             A1#{wstart := S0};
                          (A) ->
                             S0 = maps:get(wstart, A),
                             {_, PeriodUs} = Duty,
                             A1 = Close(A),
                             A1#{wnext := erlang:max(S0 + PeriodUs, Now())}
                       end,
              %% A module first seen on a sampled stack: patterned from
              %% then on (all along: at once; a duty cycle: from its next
              %% window, so each window reads what it set).
              FollowIn = fun(S, A) ->
                           Known = maps:get(mods, A),
                           New = lists:usort([M || {M, _, _} <- S]) -- (Known ++ NotOwn),
                           Room = MaxFollow - length(maps:get(followed, A)),
                           case New of
                             [] -> A;
                             _ when Room =< 0 -> A#{follow_full := true};
                             _ ->
                               Add = lists:sublist(New, Room),
                               case Duty of none -> PatsTo(true, Add); _ -> ok end,
                               A#{mods := lists:usort(Known ++ Add), followed := maps:get(followed, A) ++ Add}
                           end
                         end,
              T0 = Now(),
              C ! {beamlab_capture_started, Self, #{traced => Traced, before => Before, session => Sess =/= none}},
              Hard = T0 + UntilMs * 1000,
              Fold = fun(P, S, A) ->
                       #{ids := Ids, new := New, nid := NId} = A,
                       K = {P, S},
                       case maps:find(K, Ids) of
                         {ok, Id} -> {Id, A};
                         error when NId > MaxStacks -> {0, A};
                         error -> {NId, A#{ids := Ids#{K => NId}, new := [{NId, P, S} | New], nid := NId + 1}}
                       end
                     end,
              StackOf = fun(P, A) ->
                          case Mode of
                            sample ->
                              case erlang:process_info(P, [status, current_stacktrace]) of
                                undefined -> dead;
                                [{status, waiting}, _] -> waiting;
                                [_, {current_stacktrace, St}] -> [{M, F, Ar} || {M, F, Ar, _} <- St]
                              end;
                            trace ->
                              case erlang:process_info(P, status) of
                                undefined -> dead;
                                {status, waiting} -> waiting;
                                _ -> maps:get(P, maps:get(cur, A), [])
                              end
                          end
                        end,
              Tick = fun(A00) ->
                       Tms = (Now() - T0) div 1000,
                       %% Trace messages waiting beyond a second's bound:
                       %% the processes send faster than the bound allows.
                       A0 = case Mode of
                              trace ->
                                {message_queue_len, Qn} = erlang:process_info(Self, message_queue_len),
                                A00#{over := Qn > MaxRate};
                              sample -> A00
                            end,
                       lists:foldl(fun(P, A) ->
                                     case StackOf(P, A) of
                                       dead -> A#{dead := lists:usort([P | maps:get(dead, A)])};
                                       waiting -> A#{waiting := maps:get(waiting, A) + 1};
                                       [] -> A;
                                       S ->
                                         {Id, A1} = Fold(P, S, case Follow of true -> FollowIn(S, A); false -> A end),
                                         A1#{samples := [{Tms, Id} | maps:get(samples, A1)],
                                             n := maps:get(n, A1) + 1}
                                     end
                                   end, A0, Ps)
                     end,
              Flush = fun(A) ->
                        {memory, Mm} = erlang:process_info(Self, memory),
                        C ! {beamlab_capture_batch, Self, lists:reverse(maps:get(new, A)),
                             lists:reverse(maps:get(samples, A)), #{n => maps:get(n, A)}},
                        A#{samples := [], new := [], peak := erlang:max(maps:get(peak, A), Mm)}
                      end,
              Pop = fun Pp(_, []) -> none;
                        Pp(X, [Y | _] = S) when X =:= Y -> S;
                        Pp(X, [_ | Rest]) -> Pp(X, Rest)
                    end,
              Update = fun(P, What, MFA, A) ->
                         Cur = maps:get(cur, A),
                         S0 = maps:get(P, Cur, []),
                         S1 = case What of
                                call ->
                                  case S0 of
                                    [Top | _] when Top =:= MFA -> S0;
                                    _ -> lists:sublist([MFA | S0], Depth)
                                  end;
                                return_to ->
                                  case Pop(MFA, S0) of
                                    none when MFA =:= undefined -> S0;
                                    none -> [MFA];
                                    S2 -> S2
                                  end
                              end,
                         A#{cur := Cur#{P => S1}}
                       end,
              Count = fun(A) ->
                        #{n := N, msgs := Ms, win := W, win_n := WN} = A,
                        T = Now(),
                        {W1, WN1} = case T - W >= 1000000 of true -> {T, 1}; false -> {W, WN + 1} end,
                        A1 = A#{n := N + 1, msgs := Ms + 1, win := W1, win_n := WN1},
                        Queue = case (Ms + 1) rem 64 of
                                  0 -> element(2, erlang:process_info(Self, message_queue_len));
                                  _ -> 0
                                end,
                        if WN1 > MaxRate -> {rate_bound, A1};
                           Queue > MaxRate -> {rate_bound, A1};
                           N + 1 >= MaxTotal -> {total_bound, A1};
                           true -> {go, A1}
                        end
                      end,
              Loop = fun L(A) ->
                       #{next := Next, batch := NextBatch} = A,
                       T = Now(),
                       Live = [P || P <- Ps, not lists:member(P, maps:get(dead, A))],
                       Over = maps:get(over, A),
                       if Over -> {rate_bound, A};
                          T >= Hard -> {deadline, A};
                          Live =:= [] -> {exited, A};
                          T >= NextBatch -> L(Flush(A#{batch := T + BatchMs * 1000}));
                          Duty =/= none, T >= map_get(wnext, A) -> L(Toggle(A));
                          true ->
                            %% (A stop or a DOWN is seen before the next
                            %% tick even when the ticks fall behind.)
                            Due = case Duty of none -> Next; _ -> erlang:min(Next, map_get(wnext, A)) end,
                            Wait = erlang:max(0, (Due - T + 999) div 1000),
                            receive
                              {beamlab_capture_stop, C} -> {stopped, A};
                              {'DOWN', CRef, process, C, _} -> {gone, A};
                              {trace_ts, P, What, MFA, _} when What =:= call; What =:= return_to ->
                                case Count(Update(P, What, MFA, A)) of
                                  {go, A2} when T >= Next -> L(Tick(A2#{next := T + Iv * 1000}));
                                  {go, A2} -> L(A2);
                                  Stop -> Stop
                                end
                            after Wait ->
                              L(Tick(A#{next := T + Iv * 1000}))
                            end
                       end
                     end,
              Init = #{ids => #{}, new => [], nid => 1, samples => [], n => 0, msgs => 0, win => T0,
                       win_n => 0, over => false, waiting => 0, dead => [], peak => 0, cur => #{}, next => T0,
                       batch => T0 + BatchMs * 1000, won => false, ws => none, wnext => T0, wins => [],
                       acc_t => #{}, acc_b => #{}, read_us => 0, mods => Mods, followed => [], follow_full => false,
                       base => #{}, wmods => Mods, wstart => T0,
                       known => maps:from_list([{K, true} || K <- MFAsOf(OwnList)])},
              %% High priority while sampling (a few microseconds a
              %% millisecond), so ticks, bounds and a stop are honoured
              %% on a saturated node; normal again for reading the table.
              Prio = erlang:process_flag(priority, high),
              {Why, A8} = case Traced of [] -> {exited, Init}; _ -> Loop(Init) end,
              %% (an open window is closed and read, unless beamlab is
              %% gone: then only the cleanup below runs)
              A9 = case Why of gone -> A8; _ when Duty =/= none -> Close(A8); _ -> A8 end,
              [catch TraceP(P, false, Flags) || P <- Ps],
              erlang:process_flag(priority, Prio),
              Reds1 = [{P, erlang:process_info(P, reductions)} || P <- Traced],
              Elapsed = Now() - T0,
              case Why of
                gone -> {gone, maps:get(mods, A9)};
                _ ->
                  A10 = Flush(A9),
                  TR = Now(),
                  Group = fun(Acc, Row) ->
                            maps:to_list(maps:fold(fun({MFA, P}, V, G) ->
                                                     G#{MFA => [Row(P, V) | maps:get(MFA, G, [])]}
                                                   end, #{}, Acc))
                          end,
                  ByP = fun(P, {Cn, Us}) -> {P, Cn, 0, Us} end,
                  {Times, Mems} =
                    case Duty of
                      none -> {case Calls of time -> Read(call_time, maps:get(mods, A10)); none -> [] end,
                               case Mem of true -> Read(call_memory, maps:get(mods, A10)); false -> [] end};
                      %% (no call_memory in a duty cycle)
                      _ -> {Group(maps:get(acc_t, A10), ByP), []}
                    end,
                  ReadUs = Now() - TR + maps:get(read_us, A10),
                  {reductions, R1} = erlang:process_info(Self, reductions),
                  {#{why => Why, times => Times, memory => Mems, times_base => Group(maps:get(acc_b, A10), ByP),
                    'after' => [{P, Info(P)} || P <- Ps],
                    elapsed_us => Elapsed, agent_reductions => R1 - R0, peak => maps:get(peak, A10),
                    modules => case maps:get(mods, A10) of all -> []; Ms -> Ms end,
                    followed => maps:get(followed, A10), follow_full => maps:get(follow_full, A10),
                    node_memory => {MemBefore, erlang:memory(total)}, messages => maps:get(msgs, A10),
                    waiting => maps:get(waiting, A10), dead => maps:get(dead, A10), read_us => ReadUs,
                    windows => lists:reverse(maps:get(wins, A10)),
                    reductions_captured => maps:from_list([{P, Rb - Ra} || {P, {reductions, Ra}} <- Reds0,
                                                                           {Q, {reductions, Rb}} <- Reds1,
                                                                           P =:= Q])},
                   maps:get(mods, A10)}
              end
            catch Cl:Re:St ->
              Clean(CrashSpecs),
              erlang:raise(Cl, Re, St)
            end,
          Clean(Specs(Patterned)),
          case Result of
            gone -> ok;
            _ -> C ! {beamlab_capture_done, Self, Result}
          end
      end
    end.".

%% @doc One line for each error.
-spec format_error(error_reason()) -> iolist().
format_error(Reason) ->
    beamlab_format_reason:line(fun error_line/1, Reason).

error_line({bad_pid, S}) ->
    io_lib:format("--process ~ts: not a pid (give it as the node prints it: <0.85.0>)", [S]);
error_line({no_process, S}) ->
    io_lib:format("--process ~ts: no such process on the node", [S]);
error_line({no_name, S}) ->
    io_lib:format("--process ~ts: no process is registered under that name on the node", [S]);
error_line({no_queue, S}) ->
    io_lib:format("--process queue:~ts: no such queue on the node (virtual host /), or its process is "
                  "on another node", [S]);
error_line({not_rabbit, S}) ->
    io_lib:format("--process queue:~ts: the node does not run RabbitMQ (no rabbit_amqqueue)", [S]);
error_line(no_processes) ->
    "nothing to capture: no process found on the node";
error_line({traced, Labels}) ->
    io_lib:format("~ts is traced already by another tool (dbg, recon_trace, ...): "
                  "a process has one tracer; stop that trace first",
                  [lists:join(", ", Labels)]);
error_line({agent, Why}) ->
    io_lib:format("the capture's tracer on the node ended at start: ~0tP", [Why, 8]);
error_line({node, Node, timeout}) ->
    io_lib:format("~ts did not answer in time", [Node]);
error_line({node, Node, noconnection}) ->
    io_lib:format("lost the connection to ~ts", [Node]);
error_line({node, Node, R}) ->
    io_lib:format("~ts: ~0tP", [Node, R, 8]);
error_line(Other) ->
    %% (a reason of no kind above: printed, never raised)
    beamlab_format_reason:term(Other).
