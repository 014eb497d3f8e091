%%% @doc A project's bench modules checked (kind `check'), as an
%%% experiment.
%%%
%%% Without `against': the bench modules are compiled against the project
%%% and validated, and each benchmark runs in its own phase in this VM to
%%% count its reductions and words per iteration (which shows that every
%%% runner works); no timed samples.
%%%
%%% With `against' (a git ref): the working tree against that commit
%%% ({@link beamlab_project_check}: a temporary worktree, both versions
%%% built, paired rounds of fresh VMs). What each side's VM runs is a
%%% benchmark experiment of the bench modules compiled for that side,
%%% with the after-phase counting reductions and words per iteration,
%%% through this layer again ({@link beamlab_experiment:run_inner/1}).
-module(beamlab_experiment_check).

-behaviour(beamlab_experiment_kind).

-export([name/0, options/0, new/1, check/2, run/3, verdict/1, error_class/1, format_error/1]).
-export([check_options/1, default_rounds/1]).

-type check() :: #{root := file:filename(),                 % the project's root
                   bench := file:filename(),                % bench modules, relative to root
                   against => string(),                     % the base's git ref; absent: validate
                   project => beamlab_project_build:project(), % built already (a build tool)
                   build => boolean(),                      % build the working tree (default true)
                   rounds => pos_integer(),
                   gate => [beamlab_project_check:metric()],
                   threshold => float(),                    % effect floor, a fraction
                   alpha => float(),                        % significance level
                   options => #{duration => pos_integer(), samples => pos_integer(),
                                warmup => non_neg_integer()},
                   vm_args => [string()],
                   timeout => pos_integer()}.               % ms: each build, validation, side
-type error_reason() :: {option, beamlab_schema:error_reason()}
                      | beamlab_project_check:error_reason()
                      | beamlab_project_build:error_reason()
                      | {bench, beamlab_experiment_bench:error_reason()}.
-export_type([check/0, error_reason/0]).

-define(DEFAULTS, #{gate => [time], threshold => 0.05, alpha => 0.01,
                    options => #{duration => 100, samples => 3, warmup => 1}}).
%% Each phase's deadline when none is given: a build, a benchmark's
%% validation, a side's VM in a round (beyond the time its samples take).
-define(TIMEOUT, 600000).
-define(METRICS, [time, cpu, reductions, memory]).
%% `--ci' without `--max-time': ten minutes.
-define(MAX_TIME, 600000).

%% @doc The kind's name: `check'.
-spec name() -> check.
name() -> check.

%% @doc The options of a check, as the library's keys and the command
%% line's flags: `against' (a git ref), `bench', `rounds', `metric' (one
%% or a list), `threshold' (a fraction; the flag's percent), `alpha',
%% `duration', `samples', `warmup' per side and round, `vm_args',
%% `timeout' (ms; the flag's seconds), `root' and `build' (the flag's
%% `--no-build'). What only a comparison uses needs `against'.
-spec options() -> [beamlab_schema:option()].
options() ->
    Against = #{requires => [against], requires_format => "~ts needs ~ts REF"},
    Metrics = {enum, ?METRICS},
    [#{name => against, long => "against", type => string, metavar => "REF",
       help => "compare the working tree with this commit (branch, tag, HEAD~1, hash)"},
     #{name => bench, long => "bench", type => string, default => "bench", metavar => "DIR",
       help => "the directory of the bench modules"},
     Against#{name => rounds, long => "rounds", type => pos_integer, metavar => "N",
              max => 10000, max_why => "ten thousand rounds",
              help => "paired rounds (default 14, 24 when cpu is gated: under load a round now and "
                      "then has an outlier VM; at least 8 for p < 0.01, and the entries are judged "
                      "together, so more entries need more: 14 reach it for up to 60)"},
     Against#{name => metric, long => "metric", type => {one_of, [Metrics, {list, Metrics}]},
              cli_type => {list, Metrics}, default => [time], metavar => "M[,M]",
              help => "metrics that fail the check: time, cpu (CPU time per iteration of the sides' "
                      "scheduler threads, Linux: load-independent), reductions, memory"},
     Against#{name => threshold, long => "threshold", type => pos_number, cli_type => percent,
              scale => {1, 100}, default => 0.05, metavar => "PCT",
              help => "fail only on a regression beyond PCT percent"},
     Against#{name => ci, long => "ci", type => fraction, metavar => "PCT",
              help => "more rounds (--rounds is the least) until every gated metric's interval is within "
                      "PCT of the ratio head/base (2% or 0.02), or --max-time is spent; the output says which"},
     #{name => max_time, long => "max-time", type => pos_number, scale => 1000, requires => [ci],
       max => 604800000, max_why => "one week", metavar => "SEC",
       help => "--ci's time budget in seconds for the rounds (default 600)"},
     Against#{name => alpha, long => "alpha", type => fraction, default => 0.01, metavar => "P",
              help => "significance level of the whole check (Bonferroni over its entries)"},
     Against#{name => duration, short => "d", long => "duration", type => pos_integer, default => 100,
              max => 86400000, max_why => "one day",
              metavar => "MS", help => "sample duration per side and round"},
     Against#{name => samples, short => "s", long => "samples", type => pos_integer, default => 3,
              max => 1000000, max_why => "a million samples",
              metavar => "N", help => "samples per side and round"},
     Against#{name => warmup, short => "w", long => "warmup", type => non_neg_integer, default => 1,
              max => 1000000, max_why => "a million samples",
              metavar => "N", help => "warm-up samples per side and round"},
     Against#{name => vm_args, long => "vm-args", type => string, metavar => "ARGS",
              help => "emulator arguments of the measuring VMs, e.g. '+S 1'"},
     #{name => timeout, long => "timeout", type => pos_integer, scale => 1000, default => ?TIMEOUT,
       max => 604800000, max_why => "one week", metavar => "S",
       help => "deadline of each phase: a build, a benchmark's validation, a side's VM in a "
               "round (beyond the time its samples take); past it the phase is stopped"},
     #{name => root, type => string},
     #{name => build, type => boolean}].

%% @doc Checks the options given (the schema's keys) against the schema
%% and the check's own rules: the emulator arguments split into words,
%% and the rounds can reach the significance level. The command line
%% checks its flags here too.
-spec check_options(#{atom() => term()}) -> ok | {error, beamlab_schema:error_reason()}.
check_options(Given) ->
    beamlab_schema:check(options(), Given, fun(Opt) -> rules(Given, Opt) end).

rules(Given, Opt) ->
    Rounds = maps:get(rounds, Given, default_rounds(gate(maps:get(metric, Given, [time])))),
    Alpha = maps:get(alpha, Given, maps:get(alpha, ?DEFAULTS)),
    Min = beamlab_stats_paired:min_rounds(Alpha),
    case beamlab_runtime_peer:parse_args(unicode:characters_to_list(maps:get(vm_args, Given, ""))) of
        {error, Why} ->
            {error, {rule, "~ts: ~ts", [Opt(vm_args), {value, lists:flatten(beamlab_runtime_peer:format_error(Why))}]}};
        {ok, _} when Rounds < Min, is_map_key(rounds, Given) ->
            {error, {rule, "~ts ~ts cannot reach p < ~ts: even rounds that all agree need at least ~ts",
                     [Opt(rounds), {value, Rounds}, {value, Alpha}, {value, Min}]}};
        {ok, _} when Rounds < Min ->
            {error, {rule, "the default ~ts ~ts cannot reach p < ~ts: even rounds that all agree need "
                     "at least ~ts (give ~ts)",
                     [Opt(rounds), {value, Rounds}, {value, Alpha}, {value, Min}, Opt(rounds)]}};
        {ok, _} ->
            ok
    end.

%% @doc The check of the project at `root' (default the current
%% directory) and its `bench' modules (default "bench"); `metric' (one or
%% a list) the gated metrics; `duration', `samples', `warmup' per side
%% and round over their defaults; `vm_args' one string of emulator
%% arguments.
-spec new(#{atom() => term()}) -> {ok, check()} | {error, {bad_option, vm_args, term()}}.
new(Opts) ->
    {ok, Cwd} = file:get_cwd(),
    C0a = maps:merge(#{root => Cwd, bench => "bench"},
                    maps:with([root, bench, build, against, rounds, threshold, alpha, timeout, ci], Opts)),
    C0b = case Opts of
              #{max_time := T} when is_number(T) -> C0a#{max_time => max(1, round(T))};
              _ -> C0a
          end,
    C1 = case maps:find(metric, Opts) of
             {ok, M} -> C0b#{gate => gate(M)};
             error -> C0b
         end,
    C2 = case maps:with([duration, samples, warmup], Opts) of
             O when map_size(O) > 0 -> C1#{options => maps:merge(maps:get(options, ?DEFAULTS), O)};
             _ -> C1
         end,
    VmArgs = maps:get(vm_args, Opts, ""),
    case beamlab_runtime_peer:parse_args(VmArgs) of
        {ok, Args} -> {ok, C2#{vm_args => Args}};
        {error, _} -> {error, {bad_option, vm_args, VmArgs}}
    end.

%% @doc The rounds of a check that gates on `Gate' when none are given:
%% 14, or 24 when CPU time is gated. Under load a round now and then has
%% an outlier VM (1.3-1.9x the other side's CPU time), and the sign test
%% at 0.01 over the family of the check's entries tolerates one such round
%% in 14 but four in 24: +20% is caught in at least 95% of checks with up
%% to 15% of the rounds disturbed (docs/statistics.md, "check's rounds
%% under load"; beamlab_stats_paired_tests' calibration).
-spec default_rounds([atom()]) -> pos_integer().
default_rounds(Gate) ->
    case lists:member(cpu, Gate) of
        true -> 24;
        false -> 14
    end.

gate(M) when is_atom(M) -> [M];
gate(Ms) when is_list(Ms) -> Ms.

%% @doc What is known before anything is built (#34): the bench directory
%% and its modules are there (`check --bench nosuch' used to be refused
%% only after the project was built). The project is built and read when
%% it runs.
-spec check(check(), beamlab_experiment:experiment()) -> ok | {error, {check, error_reason()}}.
check(#{root := Root, bench := Bench} = C, _Exp) ->
    case beamlab_project_bench:sources(filename:join(Root, Bench)) of
        {ok, _} -> cpu(C);
        {error, R} -> {error, {check, R}}
    end.

%% `--metric cpu': the sides' VMs run on this machine; its threads' CPU
%% time must be readable here.
cpu(#{gate := Gate}) ->
    case lists:member(cpu, Gate) andalso beamlab_runtime_cpu:threads() of
        {error, R} -> {error, {check, {cpu, R}}};
        _ -> ok
    end;
cpu(_) ->
    ok.

%% @doc Runs the check; its document (kind `check').
-spec run(check(), beamlab_experiment:experiment(), beamlab_experiment:inner()) ->
          {ok, beamlab_result:result()} | {error, {check, error_reason()}}.
run(C, Exp, _Inner) ->
    run(C, Exp).

run(#{against := _} = C0, Exp) ->
    C1 = maps:merge(?DEFAULTS, C0),
    C = maps:merge(#{rounds => default_rounds(maps:get(gate, C1))}, C1),
    #{root := Root, against := Ref, options := O} = C,
    Note = note(Exp),
    Opts0 = maps:with([rounds, gate, threshold, alpha, vm_args, ci, max_time], C),
    Timeout = maps:get(timeout, C, ?TIMEOUT),
    Opts = Opts0#{root => Root, against => Ref, bench => maps:get(bench, C),
                  main => main(O, lists:member(cpu, maps:get(gate, C))), command => maps:get(command, Exp, []),
                  params => O#{project => beamlab_experiment_project:info(Root)},
                  progress => Note, timeout => Timeout},
    Head = case head(C, Note) of
               none -> #{};
               P -> #{head => P}
           end,
    case beamlab_project_check:run(maps:merge(Opts, Head)) of
        {ok, Doc} -> {ok, beamlab_experiment_env:attach(Doc, Exp)};
        {error, R} ->
            case beamlab_project_check:interrupted(R) of
                true -> {ok, interrupted(Exp, #{against => unicode:characters_to_binary(Ref)}, Root)};
                false -> {error, {check, R}}
            end
    end;
run(C, Exp) ->
    validate(C, Exp).

%% The working tree as the build tool built it, or as it is (no build);
%% `none': the check builds it.
head(#{project := P}, _Note) ->
    P;
head(#{build := false, root := Root} = C, _Note) ->
    case beamlab_project_build:build(Root, #{build => false, timeout => maps:get(timeout, C, ?TIMEOUT)}) of
        {ok, P} -> P;
        {error, _} -> none
    end;
head(_, _Note) ->
    none.

%% What a side's fresh VM runs: a benchmark of the bench modules compiled
%% for that side (measuring CPU time with `check --metric cpu'), its
%% reductions and words per iteration counted after the samples, no
%% environment report (the document has this VM's).
main(#{duration := D, samples := S, warmup := W}, Cpu) ->
    Metric = case Cpu of
                 true -> #{metric => cpu};
                 false -> #{}
             end,
    fun(#{bench := Ebin, dir := Dir}) ->
            Inner = #{run => {bench, #{modules => #{dir => Ebin, root => Dir},
                                       options => Metric#{duration => D, samples => S, warmup => W}}},
                      'after' => #{reductions => true, memory => true},
                      env => false},
            {beamlab_experiment, run_inner, [Inner]}
    end.

note(Exp) ->
    case maps:find(sink, Exp) of
        {ok, Sink} -> fun(Line) -> Sink({check, Line}) end;
        error -> fun(_) -> ok end
    end.

%%--------------------------------------------------------------------
%% Without a base: validation

validate(C, Exp) ->
    Root = maps:get(root, C),
    Project = case maps:find(project, C) of
                  {ok, P} -> {ok, P};
                  error ->
                      Build = maps:get(build, C, true),
                      Tool = beamlab_project_build:detect(Root),
                      Build andalso Tool =/= none
                          andalso (note(Exp))(io_lib:format("building the project (~ts compile)", [Tool])),
                      beamlab_project_build:build(Root, #{build => Build, timeout => maps:get(timeout, C, ?TIMEOUT)})
              end,
    case Project of
        {ok, #{paths := Paths, include := Include}} ->
            Dir = filename:join(Root, maps:get(bench, C)),
            case beamlab_experiment_project:jobs(#{dir => Dir, root => Root, paths => Paths,
                                                   include => Include}) of
                {ok, #{jobs := Jobs, failed := Failed}} ->
                    Started = beamlab_runtime_clock:rfc3339(),
                    {Counted, Partial} = count_all(Jobs, maps:get(timeout, C, ?TIMEOUT), []),
                    Benches = Counted ++ Failed,
                    Doc0 = beamlab_result:new(check, #{command => maps:get(command, Exp, []),
                                                       started_at => Started,
                                                       params => #{project => beamlab_experiment_project:info(Root)}}),
                    Doc = beamlab_result:finish(beamlab_result:add_benchmarks(Doc0, Benches),
                                                #{finished_at => beamlab_runtime_clock:rfc3339(),
                                                  partial => Partial}),
                    {ok, beamlab_experiment_env:attach(Doc, Exp)};
                {error, R} ->
                    {error, {check, {bench, {project, R}}}}
            end;
        {error, R} ->
            case beamlab_project_check:interrupted(R) of
                true -> {ok, interrupted(Exp, #{}, Root)};
                false -> {error, {check, R}}
            end
    end.

%% Interrupted before anything was measured (while a build ran): an empty
%% partial document, which the command ends with 130.
interrupted(Exp, Params, Root) ->
    Doc0 = beamlab_result:new(check, #{command => maps:get(command, Exp, []),
                                       started_at => beamlab_runtime_clock:rfc3339(),
                                       params => Params#{project => beamlab_experiment_project:info(Root)}}),
    beamlab_result:finish(Doc0, #{finished_at => beamlab_runtime_clock:rfc3339(), partial => true}).

%% Each benchmark counted in a process of its own, within the deadline;
%% an interrupt ends the validation with what was counted (partial).
count_all([], _Timeout, Acc) ->
    {lists:reverse(Acc), false};
count_all([Job | Rest], Timeout, Acc) ->
    case bounded(Job, Timeout) of
        interrupted -> {lists:reverse(Acc), true};
        B -> count_all(Rest, Timeout, [B | Acc])
    end.

bounded(Job, Timeout) ->
    Self = self(),
    Ref = make_ref(),
    {Pid, MRef} = spawn_monitor(fun() -> Self ! {Ref, counted(Job)} end),
    receive
        {Ref, B} ->
            erlang:demonitor(MRef, [flush]),
            B;
        {'DOWN', MRef, process, Pid, Why} ->
            failed(Job, io_lib:format("the runner's process ended: ~0tP", [Why, 8]));
        {beamlab_interrupt, _} = Msg ->
            stop(Pid, MRef),
            %% (left for the caller's loop too)
            self() ! Msg,
            interrupted
    after Timeout ->
            stop(Pid, MRef),
            failed(Job, io_lib:format("did not return within ~b s (a runner that never returns?): "
                                      "stopped; --timeout sets the deadline", [Timeout div 1000]))
    end.

stop(Pid, MRef) ->
    exit(Pid, kill),
    receive {'DOWN', MRef, process, Pid, _} -> ok end.

failed(#{label := L, module := M} = Job, Error) ->
    beamlab_result:benchmark(L, [], #{group => L, metric => reductions, unit => reductions,
                                      measure => <<"reductions per iteration">>,
                                      better => lower, params => maps:with([module, input], Job),
                                      extra => #{status => failed, module => M,
                                                 error => iolist_to_binary(Error)}}).

%% One benchmark's reductions and words per iteration, in its own phase.
counted(#{label := L, module := M} = Job) ->
    Params = maps:with([module, input], Job),
    case beamlab_engine_after:per_iteration(beamlab_experiment_project:code_map(Job),
                                            #{reductions => true, memory => true}) of
        {ok, #{<<"reductions">> := R} = Per} ->
            beamlab_result:benchmark(L, [R], #{group => L, metric => reductions, unit => reductions,
                                      measure => <<"reductions per iteration">>,
                                               better => lower, params => Params,
                                               extra => #{status => ok, module => M, per_iteration => Per}});
        {error, Reason} ->
            beamlab_result:benchmark(L, [], #{group => L, metric => reductions, unit => reductions,
                                      measure => <<"reductions per iteration">>,
                                              better => lower, params => Params,
                                              extra => #{status => failed, module => M,
                                                         error => iolist_to_binary(
                                                                    beamlab_engine_after:format_error(Reason))}})
    end.

%%--------------------------------------------------------------------

%% @doc Interrupted when partial; failed when a gated metric regressed,
%% when a benchmark fails on the working tree although it ran on the
%% base, or (validation) when a runner fails; each told in one line.
-spec verdict(beamlab_result:result()) -> beamlab_experiment:verdict().
verdict(#{partial := true, benchmarks := []}) ->
    {interrupted, []};
verdict(#{params := #{<<"against">> := Ref}} = Doc) ->
    Regressed = beamlab_project_check:regressions(Doc),
    Broken = beamlab_project_check:failed_head(Doc),
    #{params := #{<<"threshold">> := T}} = Doc,
    Lines = [io_lib:format("~b benchmark metric(s) regressed beyond ~ts: ~ts",
                           [length(Regressed), beamlab_format_units:signed_percent(T),
                            lists:join("; ", [[G, " ", M, " ", change_text(P)] || {G, M, P} <- Regressed])])
             || Regressed =/= []]
            ++ [io_lib:format("~b benchmark(s) fail on the working tree but ran on ~ts: ~ts",
                              [length(Broken), Ref, lists:join(", ", Broken)]) || Broken =/= []],
    if
        map_get(partial, Doc) -> {interrupted, Lines};
        Lines =/= [] -> {failed, Lines};
        true -> {ok, []}
    end;
verdict(#{benchmarks := Bs} = Doc) ->
    case [[N, ": ", E] || #{name := N, extra := #{<<"status">> := <<"failed">>, <<"error">> := E}} <- Bs] of
        Lines when map_get(partial, Doc) -> {interrupted, Lines};
        [] -> {ok, []};
        Lines -> {failed, Lines}
    end.

change_text(#{<<"change">> := C, <<"ci">> := [Lo, Hi]}) ->
    io_lib:format("~ts [~ts, ~ts]", [beamlab_format_units:signed_percent(C),
                                     beamlab_format_units:signed_percent(Lo),
                                     beamlab_format_units:signed_percent(Hi)]);
change_text(#{<<"change">> := C}) ->
    beamlab_format_units:signed_percent(C).

%% @doc A ref that names nothing, a directory that is no git repository
%% and mistakes in the bench modules are the caller's; a build or a side
%% that fails is a failure.
-spec error_class(error_reason()) -> usage | failure.
error_class({option, _}) -> usage;
error_class({cpu, _}) -> failure;
error_class({bench, R}) -> beamlab_experiment_bench:error_class(R);
error_class({unknown_ref, _}) -> usage;
error_class({not_a_repository, _}) -> usage;
error_class({R, _}) when R =:= invalid; R =:= compile; R =:= no_bench_dir; R =:= no_bench_modules -> usage;
error_class(_) -> failure.

%% @doc One line for each error (one per mistake in the bench modules).
-spec format_error(error_reason()) -> unicode:chardata().
format_error(Reason) ->
    beamlab_format_reason:line(fun error_line/1, Reason).

error_line({option, R}) -> beamlab_schema:format_error(R);
error_line({bench, R}) -> beamlab_experiment_bench:format_error(R);
error_line({cpu, R}) -> beamlab_runtime_cpu:format_error(R);
error_line(R) -> beamlab_project_check:format_error(R).
