%%% @doc Call capture of processes on a running node as an experiment
%%% (`beamlab profile --node N --process P', `beamlab:profile({node, N},
%%% #{process => [...]})'): connects to the node as `watch' does
%%% (`beamlab_sut_watch', a hidden node), captures with
%%% `beamlab_profile_capture' (no module loaded on the node) and returns a
%%% document of kind `capture': the call table, the stacks as a profile
%%% (flame graph, folded stacks, speedscope), the flame chart's timeline,
%%% the processes' state before and after, why it stopped and its cost.
-module(beamlab_experiment_capture).
-behaviour(beamlab_experiment_kind).

-export([name/0, options/0, new/1, check/2, run/3, verdict/1, error_class/1, format_error/1,
         command_line/2]).

-type capture() :: #{node := string(), cookie => string() | undefined,
                     processes := [beamlab_profile_capture:target()],
                     duration => pos_integer(),                        % ms
                     stacks => sample | trace, calls => time | none, patterns => all | own,
                     duty => 1..100, duty_period => pos_integer(),       % %, ms
                     max_rate => pos_integer(), max_total => pos_integer(),
                     label => unicode:chardata()}.
-type error_reason() :: {watch, beamlab_sut_watch:error_reason()}
                      | beamlab_profile_capture:error_reason()
                      | {bad_process, string()}
                      | {option, beamlab_schema:error_reason()}.
-export_type([capture/0, error_reason/0]).

-define(DEFAULT_MS, 5000).

%% @doc The kind's tag.
-spec name() -> capture.
name() -> capture.

%% @doc The options a capture takes (the command line's `profile
%% --process' flags are built from them): the `node' (the library's first
%% argument), `cookie', `label', `process' (texts), `duration' (ms; the
%% command line's in seconds), `stacks', `calls', `patterns', `duty' (%),
%% `duty_period' (ms; the command line's in seconds), `max_rate',
%% `max_total'.
-spec options() -> [beamlab_schema:option()].
options() ->
    [#{name => node, long => "node", type => string, metavar => "NAME@HOST",
       help => "the node whose processes are captured"},
     #{name => cookie, long => "cookie", type => cookie, metavar => "COOKIE",
       help => "cookie for --node (default: ~/.erlang.cookie)"},
     #{name => label, long => "label", type => string, metavar => "TEXT",
       help => "name of the capture (reports diff profiles with the same name)"},
     #{name => process, long => "process", type => string, multi => true,
       metavar => "PID|NAME|top:reductions|top:message_queue|queue:NAME",
       help => "with --node: capture this process's calls with the VM's tracing instead of perf "
               "(no module loaded on the node; repeatable; docs/profile.md)"},
     #{name => duration, long => "duration", type => pos_number, scale => 1000,
       max => 4294967000, max_why => "the longest timer, about 49 days", metavar => "S",
       help => "seconds to capture (default 5)"},
     #{name => stacks, long => "stacks", type => {enum, [sample, trace]}, default => sample,
       metavar => "sample|trace",
       help => "--process: stacks sampled every ms (default) or from call/return trace messages "
               "(exact, one message per call)"},
     #{name => calls, long => "calls", type => {enum, [time, none]}, default => time, metavar => "time|none",
       help => "--process: count calls and own time per function (call_time; slows call-heavy code) "
               "or none (stack samples only, nearly free)"},
     #{name => patterns, long => "patterns", type => {enum, [all, own]}, metavar => "all|own",
       help => "--process: call_time on the processes' own modules only (the modules on their stacks and "
               "of their initial calls, and up to 32 more the stack samples show later: calls into lists, "
               "ets, ... are not timed, and cost nothing; the default with --duty below 100) or on every "
               "function (the default with --duty 100)"},
     #{name => duty, long => "duty", type => pos_integer, max => 100, max_why => "a share of the time",
       metavar => "PCT",
       help => "--process --calls time: the call_time patterns are on PCT% of the time (default 5: "
               "one window every --duty-period, on the own modules, counts and times scaled, no memory "
               "counted; 100: on all along, every call timed, the call-heavy code slowed tens of times)"},
     #{name => duty_period, long => "duty-period", type => pos_number, scale => 1000, max => 3600000,
       max_why => "an hour", metavar => "S",
       help => "--process --duty: seconds from one window's start to the next (default 2)"},
     #{name => max_rate, long => "max-rate", type => pos_integer, metavar => "N",
       max => 10000000, max_why => "trace messages one second holds in memory",
       help => "--process: stop after N trace messages in one second (default 20000)"},
     #{name => max_total, long => "max-total", type => pos_integer, metavar => "N",
       max => 1000000000, max_why => "trace messages and samples kept in memory",
       help => "--process: stop after N trace messages and samples in all (default 2000000)"}].

%% @doc Builds the capture from an option map (`node', `cookie',
%% `process' (a list of texts), `duration' in ms, `stacks', `calls',
%% `patterns', `duty', `duty_period' in ms, `max_rate', `max_total',
%% `label'), checked against options/0 first.
-spec new(#{atom() => term()}) -> {ok, capture()} | {error, error_reason()}.
new(#{node := Node, process := Procs} = Opts) ->
    Given = maps:filter(fun(_, V) -> V =/= undefined end, maps:without([node], Opts)),
    case beamlab_schema:check(options(), Given) of
        ok ->
            try
                Targets = [target(text(P)) || P <- Procs],
                %% (whole milliseconds: the command line's seconds may have a fraction)
                Ms = maps:from_list([{K, max(1, round(D))} || K <- [duration, duty_period],
                                                              {ok, D} <- [maps:find(K, Given)]]),
                {ok, maps:merge(maps:merge(maps:with([cookie, stacks, calls, patterns, duty, max_rate, max_total, label], Opts), Ms),
                                #{node => text(Node), processes => Targets})}
            catch
                throw:{bad_process, _} = E -> {error, E}
            end;
        {error, R} ->
            {error, {option, R}}
    end.

text(A) when is_atom(A) -> atom_to_list(A);
text(B) when is_binary(B) -> unicode:characters_to_list(B);
text(L) -> L.

%% `top:reductions', `top:message_queue', `queue:NAME' (a RabbitMQ
%% queue's process), `<0.85.0>', or a registered name.
target("top:reductions") -> {top, reductions};
target("top:message_queue") -> {top, message_queue};
target("top:" ++ _ = T) -> throw({bad_process, T});
target("queue:") -> throw({bad_process, "queue:"});
target("queue:" ++ Q) -> {queue, Q};
target("<" ++ _ = P) -> {pid, P};
target("") -> throw({bad_process, ""});
target(Name) -> {name, Name}.

%% @doc Nothing to check before it starts but its own description.
-spec check(capture(), beamlab_experiment:experiment()) -> ok | {error, error_reason()}.
check(#{processes := []}, _Exp) -> {error, no_processes};
check(_, _Exp) -> ok.

%% @doc Connects, captures and returns the document.
-spec run(capture(), beamlab_experiment:experiment(), beamlab_experiment:inner() | none) ->
          {ok, beamlab_result:result()} | {error, {capture, error_reason()}}.
run(#{node := Name, processes := Targets} = C, Exp, _Inner) ->
    Started = beamlab_runtime_clock:rfc3339(),
    case beamlab_sut_watch:connect(Name, maps:get(cookie, C, undefined)) of
        {ok, Node} ->
            case beamlab_profile_capture:resolve(Node, Targets, 10000) of
                {ok, Procs} ->
                    Opts = maps:merge(#{duration => maps:get(duration, C, ?DEFAULT_MS)},
                                      maps:with([stacks, calls, patterns, duty, duty_period, max_rate,
                                                 max_total], C)),
                    case beamlab_profile_capture:capture(Node, Procs, Opts) of
                        {ok, Cap} -> {ok, document(C, Exp, Started, Cap)};
                        {error, R} -> {error, {capture, R}}
                    end;
                {error, R} -> {error, {capture, R}}
            end;
        {error, R} ->
            {error, {capture, {watch, R}}}
    end.

document(C, Exp, Started, Cap) ->
    #{profile := Prof, node := Node, processes := Procs} = Cap,
    Subject = case maps:find(label, C) of
                  {ok, L} -> unicode:characters_to_binary(L);
                  error -> iolist_to_binary([Node, " ", lists:join(", ", [maps:get(label, P) || P <- Procs])])
              end,
    Params = #{subject => Subject, node => Node,
               processes => [maps:get(spec, P) || P <- Procs],
               duration_s => maps:get(duration, C, ?DEFAULT_MS) / 1000,
               stacks => maps:get(stacks_mode, Cap), calls => maps:get(calls_mode, Cap)},
    Doc0 = beamlab_result:new(capture, #{command => maps:get(command, Exp, []), started_at => Started,
                                         params => Params}),
    Doc1 = beamlab_result:set(extra, #{capture => maps:without([profile], Cap),
                                       profile => Prof#{<<"subject">> => Subject}}, Doc0),
    Partial = not lists:member(maps:get(stopped, Cap), [<<"stopped">>, <<"exited">>]),
    Doc = beamlab_result:finish(Doc1, #{finished_at => beamlab_runtime_clock:rfc3339(), partial => Partial}),
    beamlab_experiment_env:attach(Doc, Exp).

%% @doc Interrupted when stopped by a signal; failed when the node went
%% away or did not answer; a bound reached is told (what was captured
%% until then stands).
-spec verdict(beamlab_result:result()) -> beamlab_experiment:verdict().
verdict(#{extra := #{<<"capture">> := #{<<"stopped">> := Why} = C}}) ->
    Bounds = maps:get(<<"bounds">>, C, #{}),
    case Why of
        <<"stopped">> -> {ok, []};
        <<"exited">> -> {ok, [<<"the captured processes exited before the end">>]};
        <<"interrupted">> -> {interrupted, []};
        <<"rate_bound">> ->
            {ok, [io_lib:format("capture stopped at its rate bound: more than ~b trace messages in one second "
                                "(--max-rate); what was captured until then is kept",
                                [maps:get(<<"max_rate">>, Bounds, 0)])]};
        <<"total_bound">> ->
            {ok, [io_lib:format("capture stopped at its bound of ~b trace messages and samples (--max-total)",
                                [maps:get(<<"max_total">>, Bounds, 0)])]};
        <<"node_down">> -> {failed, [<<"the node went down during the capture">>]};
        <<"no_answer">> -> {failed, [<<"the node did not answer the end of the capture in time "
                                       "(its tracer removes its flags by its own deadline)">>]};
        <<"deadline">> -> {failed, [<<"the capture's tracer reached its own deadline on the node">>]};
        Other -> {failed, [<<"the capture ended: ", Other/binary>>]}
    end;
verdict(#{partial := true}) -> {interrupted, []};
verdict(_) -> {ok, []}.

%% @doc A process or a node name that does not exist is the caller's
%% mistake; the rest are failures.
-spec error_class(error_reason()) -> usage | failure.
error_class({watch, {bad_node, _}}) -> usage;
error_class({bad_process, _}) -> usage;
error_class({option, _}) -> usage;
error_class({bad_pid, _}) -> usage;
error_class({no_process, _}) -> usage;
error_class({no_name, _}) -> usage;
error_class({no_queue, _}) -> usage;
error_class({not_rabbit, _}) -> usage;
error_class(_) -> failure.

%% @doc One line for each error.
-spec format_error(error_reason()) -> unicode:chardata().
format_error(Reason) ->
    beamlab_format_reason:line(fun error_line/1, Reason).

error_line({watch, R}) -> beamlab_sut_watch:format_error(R);
error_line({option, R}) -> beamlab_schema:format_error(R);
error_line({bad_process, P}) ->
    io_lib:format("--process '~ts': expected a pid (<0.85.0>), a registered name, "
                  "top:reductions, top:message_queue or queue:NAME", [P]);
error_line(R) -> beamlab_profile_capture:format_error(R).

%% @doc The command line that captures `Process' (a pid as the node
%% prints it, or a registered name) on `Node': what a `watch' finding
%% prints. The cookie is never part of it.
-spec command_line(binary() | string(), binary() | string()) -> binary().
command_line(Node, Process) ->
    iolist_to_binary(["beamlab profile --node ", Node, " --process '", Process, "' --duration 5"]).
