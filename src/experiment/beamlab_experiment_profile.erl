%%% @doc A perf profile as an experiment: of an inner experiment, run in a
%%% fresh VM with the JIT's perf support under `perf record' (through this
%%% layer again, by MFA; its document comes back with the profile and its
%%% benchmarks join the profile's document), or of a VM that runs already
%%% (by OS pid, or by node name on this machine). See `beamlab_profile'.
-module(beamlab_experiment_profile).

-behaviour(beamlab_experiment_kind).

-export([name/0, options/0, new/1, check/2, run/3, verdict/1, error_class/1, format_error/1,
         inner_kinds/0, inner/1]).

%% `mode': graph (call stacks, the default) or flat (the leaf only, almost
%% free; see `beamlab_profile:mode_info/1'); `duration' in ms (infinity:
%% until the inner experiment ends); `label' names the profile (reports
%% diff profiles with the same name).
-type subject() :: {experiment, beamlab_experiment:experiment()}
                 | {pid, pos_integer()}
                 | {node, string(), string() | undefined}.
-type profile() :: #{subject := subject(),
                     frequency => pos_integer(), call_graph => fp | dwarf,
                     mode => beamlab_profile:mode(),
                     duration => pos_integer() | infinity, label => unicode:chardata()}.
-type error_reason() :: beamlab_profile:error_reason()
                      | {node, beamlab_profile_node:error_reason()}
                      | {inner_failed, 0..255, binary()}
                      | {option, beamlab_schema:error_reason()}.
-export_type([profile/0, subject/0, error_reason/0]).

-define(DEFAULT_FREQ, 999).
-define(DEFAULT_ATTACH_MS, 10000).

%% @doc The kind's name: `profile'.
-spec name() -> profile.
name() -> profile.

%% @doc The options of a profile: its `subject' (the library's first
%% argument; the command line's `--pid', `--node' or a command after
%% `--'), `frequency', `mode', `call_graph', `duration' (ms; the command
%% line's in seconds), `label', `cookie' (a node's). The command line
%% builds its flags from them.
-spec options() -> [beamlab_schema:option()].
options() ->
    [#{name => frequency, short => "F", long => "freq", type => pos_integer, default => ?DEFAULT_FREQ,
       max => beamlab_profile:max_frequency(), max_why => "kernel.perf_event_max_sample_rate",
       metavar => "HZ", help => "samples per second and thread"},
     #{name => mode, long => "mode", type => {enum, [graph, flat]}, default => graph, metavar => "graph|flat",
       help => "graph: call stacks (+JPperf true, perf -g; flame graphs); flat: self time only "
               "(+JPperf map, no call graphs: the least perf work; what each costs: docs/profile.md)"},
     #{name => call_graph, long => "call-graph", type => {enum, [fp, dwarf]}, default => fp, metavar => "fp|dwarf",
       help => "stack walking: fp (frame pointers, default) or dwarf (keeps the callers of C functions; "
               "more data, use a lower --freq)"},
     #{name => duration, long => "duration", type => pos_number, scale => 1000,
       max => 4294967000, max_why => "the longest timer, about 49 days", metavar => "S",
       help => "seconds to record (default: until the command ends; 10 with --pid/--node)"},
     #{name => pid, long => "pid", type => pos_integer, metavar => "OSPID",
       conflicts => [{node, "~ts and ~ts cannot be combined"}],
       help => "profile the running VM with this OS pid"},
     #{name => node, long => "node", type => string, metavar => "NAME@HOST",
       help => "profile the running VM of this Erlang node (same machine)"},
     #{name => cookie, long => "cookie", type => cookie, metavar => "COOKIE",
       help => "cookie for --node (default: ~/.erlang.cookie)"},
     #{name => label, long => "label", type => string, metavar => "TEXT",
       help => "name of the profile (reports diff profiles with the same name)"},
     #{name => subject}].

%% @doc The profile of `subject' (an inner experiment, an OS pid, a node
%% with its cookie; or `pid', or `node' and `cookie'), the options checked
%% against options/0 first: `call_graph' walks stacks, so `mode' flat
%% refuses it.
-spec new(#{atom() => term()}) -> {ok, profile()} | {error, {option, beamlab_schema:error_reason()}}.
new(Opts) ->
    Schema = options(),
    Given = maps:filter(fun(_, V) -> V =/= undefined end, maps:without([subject], Opts)),
    case beamlab_schema:check(Schema, Given) of
        ok when map_get(mode, Given) =:= flat, is_map_key(call_graph, Given) ->
            {ok, CallGraph} = beamlab_schema:find(call_graph, Schema),
            {ok, Mode} = beamlab_schema:find(mode, Schema),
            {error, {option, {rule, "~ts walks stacks: ~ts flat records the leaf only",
                              [{opt, CallGraph}, {opt, Mode}]}}};
        ok ->
            case maps:merge(Given, maps:with([subject], Opts)) of
                #{subject := S} -> {ok, profile(S, Given)};
                #{pid := Pid} -> {ok, profile({pid, Pid}, Given)};
                #{node := Node} -> {ok, profile({node, Node, maps:get(cookie, Given, undefined)}, Given)};
                _ ->
                    {ok, PidO} = beamlab_schema:find(pid, Schema),
                    {ok, NodeO} = beamlab_schema:find(node, Schema),
                    {error, {option, {rule, "nothing to profile: give a subject, ~ts or ~ts",
                                      [{opt, PidO}, {opt, NodeO}]}}}
            end;
        {error, R} ->
            {error, {option, R}}
    end.

profile(Subject, Opts) ->
    maps:merge(maps:merge(maps:with([frequency, call_graph, mode, label], Opts), ms(Opts)), #{subject => Subject}).

%% Whole milliseconds (the command line's seconds may have a fraction).
ms(#{duration := D}) when is_number(D) -> #{duration => max(1, round(D))};
ms(_) -> #{}.

%% @doc Nothing of its own to check (the entry point checks an inner
%% experiment, {@link inner/1}; perf is found when it records).
-spec check(profile(), beamlab_experiment:experiment()) -> ok.
check(_P, _Exp) -> ok.

%% @doc The kinds a profile runs inside it.
-spec inner_kinds() -> [beamlab_experiment:kind()].
inner_kinds() -> [bench, suite, matrix, amqp].

%% @doc The inner experiment, when the subject is one.
-spec inner(profile()) -> {ok, beamlab_experiment:experiment()} | none.
inner(#{subject := {experiment, I}}) -> {ok, I};
inner(_) -> none.

%% @doc Interrupted when the recording was (what was recorded is kept).
-spec verdict(beamlab_result:result()) -> beamlab_experiment:verdict().
verdict(#{partial := true}) -> {interrupted, []};
verdict(_) -> {ok, []}.

%% @doc Records the profile and returns its document; an inner experiment
%% that failed is an error (its line, its exit code) and no profile.
-spec run(profile(), beamlab_experiment:experiment(), beamlab_experiment:inner()) ->
          {ok, beamlab_result:result()} | {error, {profile, error_reason()}}.
run(#{subject := Subject} = P, Exp, #{fresh := {M, F, A}}) ->
    Started = beamlab_runtime_clock:rfc3339(),
    case target(Subject, {M, F, A}) of
        {ok, Target, Default} ->
            Duration = maps:get(duration, P, case Subject of
                                                 {experiment, _} -> infinity;
                                                 _ -> ?DEFAULT_ATTACH_MS
                                             end),
            Opts0 = #{frequency => maps:get(frequency, P, ?DEFAULT_FREQ), duration => Duration,
                      call_graph => maps:get(call_graph, P, fp), mode => maps:get(mode, P, graph)},
            %% perf's data in the launcher's private directory when there
            %% is one: removed however this VM ends (#27).
            Opts = case maps:find(checkpoint, Exp) of
                       {ok, Dir} when is_list(Dir), Dir =/= "" -> Opts0#{scratch => Dir};
                       _ -> Opts0
                   end,
            case beamlab_profile:record(Target, Opts) of
                {ok, #{returned := {Code, Inner}}} when Code =/= 0, Code =/= 130 ->
                    {error, {profile, {inner_failed, Code, inner_message(Inner)}}};
                {ok, O} ->
                    Subj = unicode:characters_to_binary(maps:get(label, P, Default)),
                    {ok, beamlab_experiment_env:attach(document(O, P#{subject_name => Subj}, Opts, Started, Exp), Exp)};
                {error, R} ->
                    {error, {profile, R}}
            end;
        {error, _} = E ->
            E
    end.

%% The recording's target and the profile's default name.
target({experiment, Inner}, {M, F, A}) ->
    Command = maps:get(command, Inner, []),
    {ok, {vm, #{}, {M, F, A ++ [maps:without([sink, checkpoint], Inner)]}},
     lists:join(" ", ["beamlab" | Command])};
target({pid, Pid}, _) ->
    {ok, {pid, Pid}, io_lib:format("OS pid ~b", [Pid])};
target({node, Name, Cookie}, _) ->
    case beamlab_profile_node:os_pid(Name, Cookie) of
        {ok, Pid} -> {ok, {pid, Pid}, Name};
        {error, R} -> {error, {profile, {node, R}}}
    end.

inner_message({error, Msg}) ->
    Msg;
inner_message(#{} = Doc) ->
    %% (failed jobs, a failure of the load: the first line of them)
    case [B || #{name := N, extra := #{<<"error">> := E}} <- maps:get(benchmarks, Doc, []),
               B <- [<<N/binary, ": ", E/binary>>]] of
        [L | _] -> L;
        [] -> <<"the profiled experiment failed">>
    end.

document(O, P, #{frequency := Hz, call_graph := CG, mode := Mode}, Started, Exp) ->
    #{profile := Prof, os_pid := OsPid, perf_support := Support, target_exited := Exited,
      elapsed_ms := Elapsed, interrupted := Int} = O,
    Subject = maps:get(subject_name, P),
    {Inner, Benches} = case {maps:get(subject, P), O} of
                           {{experiment, I}, #{returned := {_, #{benchmarks := Bs}}}} ->
                               {maps:get(command, I, []), Bs};
                           {{experiment, I}, _} ->
                               {maps:get(command, I, []), []};
                           _ ->
                               {none, []}
                       end,
    Params = #{subject => Subject, frequency => Hz, call_graph => CG, mode => Mode,
               target => case Inner of
                             none -> #{os_pid => OsPid};
                             _ -> #{command => [unicode:characters_to_binary(A) || A <- Inner]}
                         end},
    Doc0 = beamlab_result:new(profile, #{command => maps:get(command, Exp, []), started_at => Started,
                                         params => Params}),
    Doc1 = beamlab_result:add_benchmarks(Doc0, Benches),
    #{what := What, cost := Cost} = beamlab_profile:mode_info(Mode),
    Doc2 = beamlab_result:set(extra, #{profile => Prof#{<<"perf_support">> => Support,
                                                         <<"target_exited">> => Exited,
                                                         <<"elapsed_ms">> => Elapsed,
                                                         <<"subject">> => Subject,
                                                         %% the mode, what it records and costs,
                                                         %% the VM's flavour
                                                         <<"mode">> => atom_to_binary(Mode),
                                                         <<"mode_what">> => What,
                                                         <<"mode_cost">> => Cost,
                                                         <<"flavor">> => atom_to_binary(maps:get(flavor, O, unknown))}},
                              Doc1),
    beamlab_result:finish(Doc2, #{finished_at => beamlab_runtime_clock:rfc3339(), partial => Int}).

%% @doc An inner experiment that was the caller's mistake is a usage
%% error; the rest (perf, the VM, a node not reached) are failures.
-spec error_class(error_reason()) -> usage | failure.
error_class({inner_failed, 2, _}) -> usage;
error_class({option, _}) -> usage;
error_class(_) -> failure.

%% @doc One line for each error.
-spec format_error(error_reason()) -> unicode:chardata().
format_error(Reason) ->
    beamlab_format_reason:line(fun error_line/1, Reason).

error_line({node, R}) -> beamlab_profile_node:format_error(R);
error_line({option, R}) -> beamlab_schema:format_error(R);
error_line({inner_failed, _Code, Msg}) -> Msg;
error_line(R) -> beamlab_profile:format_error(R).
