%%% @doc Watching a running node as an experiment (`beamlab watch'): its
%%% telemetry recorded from outside (`beamlab_sut_watch', no beamlab code
%%% loaded there) and the detectors run on it; and the same beside a load
%%% (`amqp --watch NODE'): the broker's series on the load's time axis, in
%%% the load's document (`extra.broker'), with its findings titled
%%% "broker: ...".
-module(beamlab_experiment_watch).

-behaviour(beamlab_experiment_kind).

-export([name/0, options/0, new/1, check/2, run/3, verdict/1, start_beside/4, stop_beside/3, cancel_beside/2, line/1, summary/2,
         error_class/1, format_error/1]).

%% `duration' in ms (infinity: until interrupted or the node goes down),
%% `interval' in ms, `top' processes listed per interval, `system_monitor'
%% the thresholds (ms) of the long GCs and long schedules to watch on the
%% node (false: leave its system monitor alone).
-type watch() :: #{node := string(), cookie => string() | undefined,
                   duration => pos_integer() | infinity, interval => pos_integer(),
                   top => non_neg_integer(), msacc => boolean(), capture => boolean(),
                   system_monitor => false | #{long_gc := pos_integer(), long_schedule := pos_integer()}}.
%% The node watched beside a load.
-type beside() :: none | #{node := node(), env := map(), pid := pid(), mon := reference()}.
-type error_reason() :: beamlab_sut_watch:error_reason() | {telemetry, term()}
                      | {option, beamlab_schema:error_reason()}.
-export_type([watch/0, beside/0, error_reason/0]).

%% @doc The kind's name: `watch'.
-spec name() -> watch.
name() -> watch.

%% @doc The options of a watch: the `node' (text; the command line's
%% `--node', the library's first argument), `cookie', `duration' (ms; the
%% command line's in seconds), `interval' (ms), `top', `msacc',
%% `capture', the node's system monitor (`long_gc', `long_schedule' in ms,
%% or `no_system_monitor'). The command line builds its flags from them.
-spec options() -> [beamlab_schema:option()].
options() ->
    Monitor = "~ts leaves the node's system monitor alone; ~ts sets it",
    [#{name => node, long => "node", type => string, metavar => "NAME@HOST",
       help => "the node to watch (required)"},
     #{name => cookie, long => "cookie", type => cookie, metavar => "COOKIE",
       help => "its distribution cookie (default: ~/.erlang.cookie)"},
     #{name => duration, long => "duration", type => pos_number, scale => 1000,
       max => 4294967000, max_why => "the longest timer, about 49 days", metavar => "SECONDS",
       help => "how long to watch (default: until Ctrl-C or the node goes down)"},
     #{name => interval, long => "interval", type => pos_integer, default => 1000, metavar => "MS",
       max => 86400000, max_why => "one day",
       help => "sampling interval in milliseconds"},
     #{name => top, long => "top", type => non_neg_integer, default => 5, metavar => "N",
       max => 10000, max_why => "processes read from the node per interval",
       help => "top processes listed per interval (by reductions, queue, memory)"},
     #{name => msacc, long => "msacc", type => boolean, default => false,
       help => "record microstate accounting too (restored when done)"},
     #{name => long_gc, long => "long-gc", type => pos_integer, default => 100, metavar => "MS",
       max => 86400000, max_why => "one day",
       help => "report garbage collections longer than MS (the node's system monitor)"},
     #{name => long_schedule, long => "long-schedule", type => pos_integer, default => 100, metavar => "MS",
       max => 86400000, max_why => "one day",
       help => "report processes or ports running longer than MS without yielding"},
     #{name => no_system_monitor, long => "no-system-monitor", type => boolean, default => false,
       conflicts => [{long_gc, Monitor}, {long_schedule, Monitor}],
       help => "leave the node's system monitor alone (no long GC, long schedule or busy port events)"},
     #{name => capture, long => "capture", type => boolean, default => false,
       help => "when a finding names a process (a growing mailbox or process), capture its calls for 5 s "
               "(as beamlab profile --node N --process P; the report shows it beside the finding)"}].

%% @doc The watch of `node' (text) with its `cookie' (text or undefined),
%% the other options checked against options/0 first. The node's system
%% monitor is set (long GCs and schedules of 100 ms, or as given) unless
%% `no_system_monitor'.
-spec new(#{atom() => term()}) -> {ok, watch()} | {error, {option, beamlab_schema:error_reason()}}.
new(#{node := Node} = Opts) ->
    Given = maps:filter(fun(_, V) -> V =/= undefined end, maps:without([node], Opts)),
    case beamlab_schema:check(options(), Given) of
        ok ->
            Monitor = case maps:get(no_system_monitor, Given, false) of
                          true -> false;
                          false -> #{long_gc => maps:get(long_gc, Given, 100),
                                     long_schedule => maps:get(long_schedule, Given, 100)}
                      end,
            %% (whole milliseconds: the command line's seconds may have a fraction)
            Duration = maps:from_list([{duration, max(1, round(D))} || {ok, D} <- [maps:find(duration, Given)]]),
            {ok, maps:merge(maps:merge(maps:with([interval, top, msacc, capture], Given), Duration),
                            #{node => Node, cookie => maps:get(cookie, Opts, undefined),
                              system_monitor => Monitor})};
        {error, R} ->
            {error, {option, R}}
    end.

%% @doc Nothing to check before it starts (the node is reached when it runs).
-spec check(watch(), beamlab_experiment:experiment()) -> ok.
check(_W, _Exp) -> ok.

%% @doc Watches the node; the document holds its series and the findings
%% (the detectors' and the growth findings raised while it ran). Every
%% wait is bounded by one deadline, the duration plus
%% `beamlab_sut_watch:grace_ms()' from now, however the node behaves:
%% connecting, reading its environment, each sample, stopping.
-spec run(watch(), beamlab_experiment:experiment(), beamlab_experiment:inner()) ->
          {ok, beamlab_result:result()} | {error, {watch, error_reason()}}.
run(#{node := Name} = W, Exp, _Inner) ->
    Started = beamlab_runtime_clock:rfc3339(),
    T0 = erlang:monotonic_time(millisecond),
    Duration = maps:get(duration, W, infinity),
    Grace = beamlab_sut_watch:grace_ms(),
    Deadline = case Duration of
                   infinity -> infinity;
                   _ -> T0 + Duration + Grace
               end,
    case connect(Name, maps:get(cookie, W, undefined), Deadline) of
        {ok, Node, NodeEnv} ->
            Interval = maps:get(interval, W, 1000),
            %% What is left of the duration after connecting; the calls
            %% end a second before the deadline, for what follows.
            Recording = case Deadline of
                            infinity -> infinity;
                            _ -> max(1, min(Duration, Deadline - Grace - erlang:monotonic_time(millisecond)))
                        end,
            Opts = #{duration => Recording, interval => Interval,
                     top => maps:get(top, W, 5), msacc => maps:get(msacc, W, false),
                     system_monitor => maps:get(system_monitor, W, false),
                     metrics => beamlab_experiment_metrics:server(Exp),
                     deadline => case Deadline of infinity -> infinity; _ -> Deadline - 1000 end,
                     print => maps:get(telemetry, Exp, none) =:= live},
            Capturer = case maps:get(capture, W, false) of
                           true -> start_capturer(Node);
                           false -> none
                       end,
            Opts1 = case Capturer of
                        none -> Opts;
                        _ -> Opts#{on_finding => fun(New) -> culprit(Capturer, New) end}
                    end,
            case beamlab_sut_watch:watch(Node, Opts1) of
                {ok, Series, #{interrupted := Interrupted, findings := Growth}} ->
                    Doc = document(W#{interval => Interval}, Exp, Started, Node, NodeEnv, Series, Growth,
                                   Interrupted),
                    {ok, with_capture(Doc, finish_capturer(Capturer))};
                {error, E} ->
                    _ = finish_capturer(Capturer),
                    {error, {watch, E}}
            end;
        {error, E} ->
            {error, {watch, E}}
    end.

connect(Name, Cookie) ->
    connect(Name, Cookie, infinity).

connect(Name, Cookie, Deadline) ->
    Left = fun(Cap) -> case Deadline of
                           infinity -> Cap;
                           _ -> max(1, min(Cap, Deadline - erlang:monotonic_time(millisecond) - 1000))
                       end
           end,
    case beamlab_sut_watch:connect(Name, Cookie, Left(5000)) of
        {ok, Node} ->
            case beamlab_sut_watch:node_env(Node, Left(10000)) of
                {ok, NodeEnv} -> {ok, Node, NodeEnv};
                {error, _} = E -> E
            end;
        {error, _} = E ->
            E
    end.

document(W, Exp, Started, Node, NodeEnv, Series, Growth, Interrupted) ->
    Doc0 = beamlab_result:new(watch, #{command => maps:get(command, Exp, []), started_at => Started,
                                      params => #{node => atom_to_binary(Node),
                                                  interval_ms => maps:get(interval, W),
                                                  duration_s => seconds(maps:get(duration, W, infinity)),
                                                  top => maps:get(top, W, 5),
                                                  msacc => maps:get(msacc, W, false),
                                                  system_monitor => maps:get(system_monitor, W, false)}}),
    %% Observations of the node, not a benchmark's: reductions are a rate
    %% of the node's work (`reductions/s'), and more of it for the same
    %% traffic is no better, so like utilisation and run queue `lower'
    %% (the report names no direction for a watched node). The run queue
    %% counts processes waiting (its axis says so, not `value').
    Benchmarks = [beamlab_result:benchmark(Name, Vals, #{group => <<"watch">>, metric => Metric,
                                                         unit => Unit, better => Better})
                  || {Key, Name, Metric, Unit, Better} <- [{util, <<"scheduler utilisation">>, <<"util">>, <<"%">>, lower},
                                                           {run_queue, <<"run queue">>, <<"run_queue">>, <<"processes">>, lower},
                                                           {reductions_per_s, <<"reductions">>, <<"reductions">>, <<"reductions/s">>, lower}],
                     Vals <- [[V || V <- maps:get(Key, Series, []), is_number(V)]], Vals =/= []],
    Doc1 = beamlab_result:add_benchmarks(Doc0, Benchmarks),
    %% The environment is the watched node's, as it reports it (never
    %% this VM's: the experiment's attach keeps an env already there).
    Doc2 = beamlab_result:set(env, NodeEnv, beamlab_result:set(telemetry, Series, Doc1)),
    %% The benchmarks are the node's series, not measurements: no noise check.
    Findings = beamlab_env_detect:findings(#{telemetry => Series, env => NodeEnv, result => #{},
                                             timer => skip}) ++
        [beamlab_sut_growth:with_capture_command(Node, F) || F <- Growth],
    Doc3 = beamlab_result:finish(beamlab_result:add_findings(Doc2, Findings),
                                 #{finished_at => beamlab_runtime_clock:rfc3339(), partial => Interrupted}),
    beamlab_experiment_env:attach(Doc3, Exp).

%%--------------------------------------------------------------------
%% watch --capture: the first process a finding names, captured

-define(CAPTURE_MS, 5000).

%% A process that captures the first culprit it is told of (once), and
%% keeps the result until the watch asks for it.
start_capturer(Node) ->
    Watch = self(),
    spawn_link(fun() -> capturer(Node, Watch) end).

capturer(Node, Watch) ->
    receive
        {culprit, Pid} ->
            R = case beamlab_profile_capture:resolve(Node, [{pid, binary_to_list(Pid)}], 5000) of
                    {ok, Procs} -> beamlab_profile_capture:capture(Node, Procs, #{duration => ?CAPTURE_MS});
                    {error, _} = E -> E
                end,
            receive {done, Watch} -> Watch ! {capture, self(), {Pid, R}} end;
        {done, Watch} ->
            Watch ! {capture, self(), none}
    end.

%% Called by the watch with the findings of each sample.
culprit(Capturer, New) ->
    case [Pid || #{data := #{<<"capture_command">> := _, <<"culprit">> := Pid}} <- New] of
        [Pid | _] -> Capturer ! {culprit, Pid};
        [] -> ok
    end.

%% Ends a capture still running (as an interrupt would: it keeps what it
%% captured) and returns what was captured, if anything.
finish_capturer(none) ->
    none;
finish_capturer(Capturer) ->
    Capturer ! {beamlab_interrupt, watch_ended},
    Capturer ! {done, self()},
    receive
        {capture, Capturer, R} -> unlink(Capturer), R
    after 30000 ->
            unlink(Capturer),
            exit(Capturer, kill),
            none
    end.

%% The capture beside the finding that named its process: `extra.capture'
%% and `extra.profile' (the report's flame graph), and the finding says
%% where the process's time went.
with_capture(Doc, none) ->
    Doc;
with_capture(Doc, {_Id, {error, R}}) ->
    Extra = maps:get(extra, Doc, #{}),
    beamlab_result:set(extra, Extra#{capture_error => iolist_to_binary(beamlab_profile_capture:format_error(R))},
                       Doc);
with_capture(Doc, {Pid, {ok, Cap}}) ->
    #{profile := Prof, processes := [P | _]} = Cap,
    Label = maps:get(label, P),
    Extra = maps:get(extra, Doc, #{}),
    Doc1 = beamlab_result:set(extra, Extra#{capture => maps:without([profile], Cap),
                                            profile => Prof#{<<"subject">> => <<"capture of ", Label/binary>>}},
                              Doc),
    Hottest = case maps:get(calls, Cap) of
                  [#{function := F} | _] -> F;
                  [] -> <<"-">>
              end,
    Findings = [case F of
                    #{data := #{<<"capture_command">> := _, <<"culprit">> := Pid} = D, advice := A} ->
                        F#{data := D#{<<"captured">> => #{<<"hottest">> => Hottest, <<"process">> => Label}},
                           advice := <<A/binary, " Captured for ", (integer_to_binary(maps:get(elapsed_ms, Cap)))/binary,
                                       " ms: its hottest function by own time is ", Hottest/binary,
                                       " (the capture's flame graph is in the report).">>};
                    _ -> F
                end || F <- maps:get(findings, Doc1)],
    Doc1#{findings := Findings}.

seconds(infinity) -> null;
seconds(Ms) when Ms rem 1000 =:= 0 -> Ms div 1000;
seconds(Ms) -> Ms / 1000.

%% @doc Failed when the node went down mid-watch (what was recorded is
%% kept); interrupted when the watch was.
-spec verdict(beamlab_result:result()) -> beamlab_experiment:verdict().
verdict(#{telemetry := T, params := #{<<"node">> := Node}} = Doc) ->
    case maps:get(<<"node_down">>, T, false) of
        true ->
            {failed, [io_lib:format("~ts went down (~ts); keeping the ~b samples recorded",
                                    [Node, maps:get(<<"node_down_reason">>, T, <<"?">>),
                                     maps:get(<<"samples">>, T, 0)])]};
        false when map_get(partial, Doc) -> {interrupted, []};
        false -> {ok, []}
    end.

%%--------------------------------------------------------------------
%% Beside a load

%% @doc Connects to the node and starts sampling it every `IntervalMs'
%% (`none' for no node), its series' time from `T0' (a monotonic ms: the
%% run's start); with the experiment's live metrics, serves its
%% telemetry there (collector `broker', labelled with its node) beside
%% the load's.
-spec start_beside(undefined | #{node := string(), cookie => string() | undefined}, pos_integer(),
                   beamlab_experiment:experiment(), integer()) ->
          {ok, beside()} | {error, error_reason()}.
start_beside(undefined, _IntervalMs, _Exp, _T0) ->
    {ok, none};
start_beside(#{node := Name} = W, IntervalMs, Exp, T0) ->
    case connect(Name, maps:get(cookie, W, undefined)) of
        {ok, Node, Env} ->
            case beamlab_runtime_telemetry:start(#{node => Node, interval => IntervalMs, top => 5,
                                                   print => false, t0 => T0}) of
                {ok, Pid} ->
                    ok = beamlab_experiment_metrics:node_telemetry(Exp, broker, Node, Pid),
                    %% Monitored: a sampler that dies mid-run is told with its reason.
                    {ok, #{node => Node, env => Env, pid => Pid, mon => erlang:monitor(process, Pid)}};
                {error, E} -> {error, {telemetry, E}}
            end;
        {error, _} = E ->
            E
    end.

%% @doc Stops sampling and records the node's series and findings (each
%% titled "broker: ...") in the document; a node that went down during
%% the run is told to the sink.
-spec stop_beside(beside(), beamlab_result:result(), beamlab_experiment:experiment()) ->
          beamlab_result:result().
stop_beside(none, Doc, _Exp) ->
    Doc;
stop_beside(#{node := Node, env := Env, pid := Pid, mon := Mon}, Doc, Exp) ->
    ok = beamlab_experiment_metrics:withdraw(Exp, broker),
    Sink = maps:get(sink, Exp, fun(_) -> ok end),
    Extra = maps:get(extra, Doc, #{}),
    Broker = #{node => atom_to_binary(Node), env => Env},
    %% (The cookie in the command line is masked with every other secret
    %% when the document is printed or saved: beamlab_result_redact.)
    case beamlab_runtime_telemetry:finish(Pid, Mon) of
        {ok, Series} ->
            Findings = [F#{title := <<"broker: ", T/binary>>}
                        || F = #{title := T} <- beamlab_env_detect:findings(#{telemetry => Series, env => Env,
                                                                              result => #{}, timer => skip})
                                                ++ beamlab_sut_growth:findings(Series)],
            Doc1 = beamlab_result:set(extra, Extra#{broker => Broker#{telemetry => Series}}, Doc),
            case maps:get(node_down, Series, false) of
                true ->
                    Sink({note, io_lib:format("--watch: ~ts went down during the run (~ts)",
                                              [Node, maps:get(node_down_reason, Series)])});
                false -> ok
            end,
            beamlab_result:add_findings(Doc1, Findings);
        {error, Reason} ->
            %% The load's own figures stand; only the node's series is lost.
            Lost = iolist_to_binary(io_lib:format("~0tp", [Reason])),
            Sink({note, io_lib:format("--watch: sampling ~ts stopped during the run (~ts); "
                                      "its figures are lost, the load's are not", [Node, Lost])}),
            beamlab_result:set(extra, Extra#{broker => Broker#{telemetry_lost => Lost}}, Doc)
    end.

%% @doc The node's key figures in its latest sample, for a line under each
%% of the load's interval lines; `none' without a node or before a sample
%% (or when the sampler does not answer at once: a frozen node must not
%% hold the lines).
-spec line(beside()) -> unicode:chardata() | none.
line(none) ->
    none;
line(#{node := Node, pid := Pid}) ->
    case last(Pid, 500) of
        #{} = S -> figures(Node, S);
        _ -> none
    end.

last(Pid, Timeout) ->
    Self = self(),
    Ref = make_ref(),
    Helper = spawn(fun() -> Self ! {Ref, catch beamlab_runtime_telemetry:last(Pid)} end),
    receive
        {Ref, S} -> S
    after Timeout ->
        exit(Helper, kill),
        receive {Ref, _} -> none after 0 -> none end
    end.

figures(Node, S) ->
    Mem = maps:get(memory, S, #{}),
    Bytes = fun(K) -> beamlab_format_units:bytes(maps:get(K, Mem, 0)) end,
    io_lib:format("broker ~ts: schedulers ~b% used, run queue ~b, memory ~ts (processes ~ts, "
                  "binary ~ts, ETS ~ts), ~b processes~ts",
                  [Node, round(maps:get(util, S, 0)), maps:get(run_queue, S, 0), Bytes(total),
                   Bytes(processes), Bytes(binary), Bytes(ets), maps:get(processes, S, 0),
                   case S of
                       #{top := #{by_reductions := [P | _]}} ->
                           io_lib:format(", busiest ~ts (~ts) ~ts reductions",
                                         [maps:get(name, P, <<"?">>), text(maps:get(current_function, P, null)),
                                          beamlab_format_units:count(maps:get(reductions, P, 0))]);
                       _ -> ""
                   end]).

text(null) -> "-";
text(B) -> B.

%% @doc The node's figures over the run (the series {@link stop_beside/3}
%% put in the document), for the load's summary: mean and peak scheduler
%% use, the longest run queue, the memory range and the busiest process
%% over all samples; `none' without a node.
-spec summary(beside(), beamlab_result:result()) -> unicode:chardata() | none.
summary(none, _Doc) ->
    none;
summary(#{node := Node}, Doc) ->
    Get = fun(K, M) when is_map(M) -> maps:get(K, M, #{}); (_, _) -> #{} end,
    Series = Get(<<"telemetry">>, Get(<<"broker">>, maps:get(extra, Doc, #{}))),
    Nums = fun(L) when is_list(L) -> [X || X <- L, is_number(X)]; (_) -> [] end,
    Util = Nums(maps:get(<<"util">>, Series, [])),
    Rq = Nums(maps:get(<<"run_queue">>, Series, [])),
    Total = Nums(maps:get(<<"total">>, Get(<<"memory">>, Series), [])),
    Tops = case maps:get(<<"top">>, Series, []) of
               L when is_list(L) -> L;
               _ -> []
           end,
    Busiest = lists:foldl(fun(#{<<"by_reductions">> := Ps}, Acc) ->
                                  lists:foldl(fun(P, A) ->
                                                      K = {maps:get(<<"name">>, P, <<"?">>),
                                                           maps:get(<<"pid">>, P, <<>>)},
                                                      A#{K => maps:get(K, A, 0)
                                                             + maps:get(<<"reductions">>, P, 0)}
                                              end, Acc, Ps);
                             (_, Acc) -> Acc
                          end, #{}, Tops),
    case {Util, Total} of
        {[], _} -> none;
        {_, []} -> none;
        _ ->
            io_lib:format("broker ~ts over the run: schedulers ~b% used on average (at most ~b%), "
                          "run queue at most ~b, memory ~ts to ~ts~ts",
                          [Node, round(lists:sum(Util) / length(Util)), round(lists:max(Util)),
                           lists:max([0 | Rq]), beamlab_format_units:bytes(lists:min(Total)),
                           beamlab_format_units:bytes(lists:max(Total)),
                           case lists:reverse(lists:keysort(2, maps:to_list(Busiest))) of
                               [{{Name, Pid}, Reds} | _] ->
                                   io_lib:format(", busiest process ~ts ~ts (~ts reductions)",
                                                 [Name, Pid, beamlab_format_units:count(Reds)]);
                               [] -> ""
                           end])
    end.

%% @doc Stops sampling for a run that produced no document.
-spec cancel_beside(beside(), beamlab_experiment:experiment()) -> ok.
cancel_beside(none, _Exp) ->
    ok;
cancel_beside(#{pid := Pid, mon := Mon}, Exp) ->
    ok = beamlab_experiment_metrics:withdraw(Exp, broker),
    _ = beamlab_runtime_telemetry:finish(Pid, Mon),
    ok.

%% @doc A name that is not a node name is the caller's mistake.
-spec error_class(error_reason()) -> usage | failure.
error_class({bad_node, _}) -> usage;
error_class({option, _}) -> usage;
error_class(_) -> failure.

%% @doc One line for each error.
-spec format_error(error_reason()) -> unicode:chardata().
format_error(Reason) ->
    beamlab_format_reason:line(fun error_line/1, Reason).

error_line({telemetry, E}) -> beamlab_runtime_telemetry:format_error(E);
error_line({option, R}) -> beamlab_schema:format_error(R);
error_line(E) -> beamlab_sut_watch:format_error(E).
