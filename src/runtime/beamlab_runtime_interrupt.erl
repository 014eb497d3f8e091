%%% @doc Graceful interruption. Every subscribed process receives
%%% `{beamlab_interrupt, sigterm}' so a measuring loop can stop between
%%% samples and report what it measured.
%%%
%%% Two modes. After {@link install/0} (the command line) this module owns
%%% SIGTERM and SIGUSR2. A second interrupt halts the VM with exit code
%%% 130; so does a first one that arrives before anything subscribed
%%% (nothing is measured yet, nothing can be lost). A first one that
%%% arrives after the measurement ended (the command is printing and
%%% saving) only sets the flag. Without install (a library user)
%%% subscribing still works and {@link simulate/0} still notifies, but a
%%% real SIGTERM keeps OTP's default meaning (stop the VM) and nothing is
%%% halted from here.
%%%
%%% One interrupt, two signals. The escript's launcher line (see
%%% rebar.config) traps SIGINT and SIGTERM and forwards each as SIGUSR2.
%%% A signal sent to the whole process group (Ctrl-C in a terminal,
%%% `timeout', `kill -TERM -PGID', a CI runner) reaches both the launcher
%%% and the VM, so the VM gets SIGTERM directly and SIGUSR2 from the
%%% launcher for the same event (the VM ignores SIGINT: it runs as a
%%% background job of the launcher). A signal sent to the launcher alone
%%% arrives as SIGUSR2 only; to the VM alone (or `escript beamlab',
%%% without the launcher) as SIGTERM only. So the VM counts SIGTERMs and
%%% SIGUSR2s separately and the number of interrupts is the larger count:
%%% a direct and a forwarded signal pair up into one interrupt whatever
%%% their order. The counts last as long as the VM (one command line).
%%% `timeout' signals its child and then the group, so the launcher may get
%%% SIGTERM twice and forward it twice: a rise of the count within a
%%% second of the last interrupt is taken as part of it. A second interrupt
%%% is one that comes later than that.
%%%
%%% Subscriptions nest: a process that subscribes again (an AMQP load run
%%% by the experiment that subscribed, in the same process) stays
%%% subscribed until it has unsubscribed as often, so the inner run's end
%%% does not end the outer run's (before, a matrix --target or doctor
%%% --target lost an interrupt that came during a load, #32).
%%% Subscribers are monitored: one that dies is dropped. The interrupted
%%% flag belongs to a run: it is cleared when the last subscriber is gone
%%% (unsubscribed or dead) and by {@link reset/0}.
%%%
%%% This module is the `gen_event' handler added to OTP's
%%% `erl_signal_server' (in place of the default one once installed).
-module(beamlab_runtime_interrupt).
-behaviour(gen_event).

-export([install/0, install/1, subscribe/0, unsubscribe/0, interrupted/0, reset/0, simulate/0,
         exit_code/0]).
-export([init/1, handle_event/2, handle_call/2, handle_info/2, terminate/2, code_change/3]).

-define(FLAG, {?MODULE, interrupted}).

-record(st, {owner = false :: boolean(),                 % installed: we own SIGTERM
             halt_code = 130 :: non_neg_integer(),       % the status of a halt from here
             subs = #{} :: #{pid() => {reference(), pos_integer()}},  % monitor, subscriptions
             measured = false :: boolean(),              % someone subscribed once
             terms = 0 :: non_neg_integer(),             % SIGTERMs received
             forwarded = 0 :: non_neg_integer(),         % SIGUSR2s (from the launcher)
             seen = 0 :: non_neg_integer(),              % max(terms, forwarded) accounted for
             events = 0 :: non_neg_integer(),            % interrupts from signals
             last = undefined :: undefined | integer(),  % ms, time of the last one
             simulated = 0 :: non_neg_integer()}).       % simulate/0 calls

%% Signals within this many ms of an interrupt belong to it.
-define(SAME_EVENT_MS, 1000).
%% How often the VM checks that the launcher is still there.
-define(LAUNCHER_POLL_MS, 500).

%% @doc Takes over the stop signals (SIGTERM, SIGHUP, SIGQUIT, and
%% SIGUSR2, the launcher's forwarded interrupt) for this VM. Idempotent.
-spec install() -> ok.
install() ->
    install(#{}).

%% @doc As {@link install/0}; under the escript's launcher (`launcher =>
%% true') a halt from here ends with status 203, which the launcher
%% reports as 130, so that a VM killed by SIGINT (which the VM cannot
%% catch; the shell sees 130) is told apart. Also, under the launcher,
%% the VM watches it: if the launcher disappears (SIGKILL, the VM runs in
%% a session of its own so a signal to the launcher's group does not
%% reach it), that is an interrupt.
-spec install(#{launcher => boolean(), private_dir => string()}) -> ok.
install(Opts) ->
    Launched = maps:get(launcher, Opts, false),
    Handlers = gen_event:which_handlers(erl_signal_server),
    _ = [ok = os:set_signal(S, handle) || S <- [sigterm, sighup, sigquit, sigusr2]],
    ok = case {lists:member(?MODULE, Handlers), lists:member(erl_signal_handler, Handlers)} of
             {true, true} ->
                 %% Added by a library subscribe: the default handler goes now.
                 ok = gen_event:call(erl_signal_server, ?MODULE, own),
                 ok = gen_event:delete_handler(erl_signal_server, erl_signal_handler, []),
                 ok;
             {true, false} ->
                 gen_event:call(erl_signal_server, ?MODULE, own);
             {false, true} ->
                 ok = gen_event:swap_handler(erl_signal_server, {erl_signal_handler, []},
                                             {?MODULE, owner});
             {false, false} ->
                 ok = gen_event:add_handler(erl_signal_server, ?MODULE, owner)
         end,
    case Launched of
        true ->
            ok = gen_event:call(erl_signal_server, ?MODULE, {halt_code, 203}),
            watch_launcher(maps:get(private_dir, Opts, ""));
        false -> ok
    end.

%% The launcher is our parent: once our parent is another process (we
%% were orphaned), it is gone, and its private directory is removed in
%% its place (checkpoints are not written into a removed directory).
%% Linux only (/proc); elsewhere no watch.
watch_launcher(Dir) ->
    case parent() of
        {ok, Launcher} ->
            _ = spawn(fun() -> watch_launcher(Launcher, Dir) end),
            ok;
        error -> ok
    end.

watch_launcher(Launcher, Dir) ->
    receive after ?LAUNCHER_POLL_MS -> ok end,
    case parent() of
        {ok, Launcher} -> watch_launcher(Launcher, Dir);
        _ ->
            _ = Dir =/= "" andalso file:del_dir_r(Dir),
            gen_event:notify(erl_signal_server, launcher_gone)
    end.

parent() ->
    case file:read_file("/proc/self/stat") of
        {ok, Stat} ->
            %% pid (comm) state ppid ...: the name may hold spaces and ')'.
            [_, After] = string:split(Stat, <<")">>, trailing),
            case string:lexemes(After, " ") of
                [_State, PPid | _] -> {ok, PPid};
                _ -> error
            end;
        {error, _} -> error
    end.

%% @doc The calling process will receive `{beamlab_interrupt, sigterm}'
%% until it unsubscribes or exits.
-spec subscribe() -> ok.
subscribe() ->
    ensure_handler(),
    gen_event:call(erl_signal_server, ?MODULE, {subscribe, self()}).

%% @doc Stops notifications to the calling process.
-spec unsubscribe() -> ok.
unsubscribe() ->
    case handler_present() of
        true -> gen_event:call(erl_signal_server, ?MODULE, {unsubscribe, self()});
        false -> ok
    end.

%% @doc True once an interrupt arrived during the current run.
-spec interrupted() -> boolean().
interrupted() ->
    persistent_term:get(?FLAG, false).

%% @doc Clears the interrupted flag (the next run starts uninterrupted).
-spec reset() -> ok.
reset() ->
    %% An atom value: erasing it needs no global garbage collection.
    _ = persistent_term:erase(?FLAG),
    ok.

%% @doc The exit code of a command stopped by an interrupt (as a shell
%% reports a process ended by SIGINT). What was measured is still printed
%% and saved before a command exits with it.
-spec exit_code() -> 130.
exit_code() ->
    130.

%% @doc Behaves as if SIGTERM arrived (for tests and for embedding): the
%% flag is set and subscribers are notified. Only this handler sees it, so
%% in library mode OTP's default handler does not stop the VM.
-spec simulate() -> ok.
simulate() ->
    ensure_handler(),
    gen_event:call(erl_signal_server, ?MODULE, simulate).

handler_present() ->
    lists:member(?MODULE, gen_event:which_handlers(erl_signal_server)).

%% Library use: our handler sits beside OTP's default one, which keeps
%% its meaning for a real SIGTERM.
ensure_handler() ->
    case handler_present() of
        true -> ok;
        false ->
            case gen_event:add_handler(erl_signal_server, ?MODULE, library) of
                ok -> ok;
                {'EXIT', _} -> ok  % added concurrently by another process
            end
    end.

%%--------------------------------------------------------------------
%% gen_event callbacks

%% @private
-spec init(owner | library | {term(), term()}) -> {ok, #st{}}.
init(owner) -> {ok, #st{owner = true}};
init({owner, _SwappedOut}) -> {ok, #st{owner = true}};
init(_) -> {ok, #st{}}.

%% @private
-spec handle_event(term(), #st{}) -> {ok, #st{}}.
handle_event(Direct, #st{terms = T} = St) when Direct =:= sigterm; Direct =:= sighup;
                                               Direct =:= sigquit ->
    %% Every stop signal is an interrupt (docs/reliability.md "Signals").
    {ok, signal(St#st{terms = T + 1})};
handle_event(sigusr2, #st{owner = true, forwarded = F} = St) ->
    {ok, signal(St#st{forwarded = F + 1})};
handle_event(launcher_gone, #st{owner = true, simulated = S} = St) ->
    %% Nobody waits for us any more: stop as interrupted (what was
    %% measured is still saved).
    {ok, interrupt(St#st{simulated = S + 1})};
handle_event(_Other, St) ->
    {ok, St}.

%% A signal is a new interrupt only when it raises max(terms, forwarded)
%% (the other half of a pair does not), and not within a second of the
%% last interrupt (a repeat of the same event).
signal(#st{terms = T, forwarded = F, seen = Seen, events = E, last = Last} = St) ->
    Now = erlang:monotonic_time(millisecond),
    case max(T, F) > Seen of
        false ->
            St;
        true when Last =/= undefined, Now - Last < ?SAME_EVENT_MS ->
            St#st{seen = max(T, F)};
        true ->
            interrupt(St#st{seen = max(T, F), events = E + 1, last = Now})
    end.

count(#st{events = E, simulated = S}) ->
    E + S.

interrupt(#st{owner = Owner, subs = Subs, measured = Measured, halt_code = Halt} = St) ->
    case Owner andalso count(St) >= 2 of
        true ->
            io:put_chars(standard_error, "\nbeamlab: interrupted twice, stopping now\n"),
            erlang:halt(Halt);
        false ->
            persistent_term:put(?FLAG, true),
            _ = [Pid ! {beamlab_interrupt, sigterm} || Pid <- maps:keys(Subs)],
            %% Nothing has been measured yet: just stop (only when SIGTERM
            %% is ours). After a measurement the command is printing and
            %% saving its result: let it finish.
            _ = Owner andalso map_size(Subs) =:= 0 andalso not Measured
                andalso erlang:halt(Halt),
            St
    end.

%% @private
-spec handle_call(term(), #st{}) -> {ok, ok, #st{}}.
handle_call({subscribe, Pid}, #st{subs = Subs} = St) ->
    case Subs of
        #{Pid := {Ref, N}} -> {ok, ok, St#st{subs = Subs#{Pid := {Ref, N + 1}}}};
        _ ->
            %% An interrupt that came before anyone listened (passed on to a
            %% fresh VM while its command was starting) still stops the run.
            _ = interrupted() andalso (Pid ! {beamlab_interrupt, sigterm}),
            {ok, ok, St#st{subs = Subs#{Pid => {erlang:monitor(process, Pid), 1}}, measured = true}}
    end;
handle_call({unsubscribe, Pid}, #st{subs = Subs} = St) ->
    case maps:take(Pid, Subs) of
        {{Ref, N}, _} when N > 1 ->
            {ok, ok, St#st{subs = Subs#{Pid := {Ref, N - 1}}}};
        {{Ref, 1}, Rest} ->
            erlang:demonitor(Ref, [flush]),
            {ok, ok, run_over(St#st{subs = Rest})};
        error ->
            {ok, ok, St}
    end;
handle_call(own, St) ->
    {ok, ok, St#st{owner = true}};
handle_call({halt_code, Code}, St) ->
    {ok, ok, St#st{halt_code = Code}};
handle_call(simulate, #st{simulated = S} = St) ->
    {ok, ok, interrupt(St#st{simulated = S + 1})}.

%% @private
-spec handle_info(term(), #st{}) -> {ok, #st{}}.
handle_info({'DOWN', Ref, process, Pid, _}, #st{subs = Subs} = St) ->
    case Subs of
        #{Pid := {Ref, _}} -> {ok, run_over(St#st{subs = maps:remove(Pid, Subs)})};
        _ -> {ok, St}
    end;
handle_info(_Info, St) ->
    {ok, St}.

%% The last subscriber is gone: the interrupted run is over.
run_over(#st{subs = Subs} = St) when map_size(Subs) =:= 0 ->
    ok = reset(),
    St;
run_over(St) ->
    St.

%% @private
-spec terminate(term(), #st{}) -> ok.
terminate(_Arg, _St) ->
    ok.

%% @private
-spec code_change(term(), #st{}, term()) -> {ok, #st{}}.
code_change(_Old, St, _Extra) ->
    {ok, St}.
