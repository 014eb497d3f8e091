%%% @doc The VM-configuration matrix: run one beamlab command in a fresh VM
%%% per configuration (emulator arguments, `erl' executable, wrapper
%%% command such as `taskset'), repeat with interleaved order (A1 B1 A2 B2
%%% ...) so machine drift spreads over every configuration, and compare the
%%% repetitions' primary values against a baseline configuration.
%%%
%%% The VM work (start, run the inner command, report, stop) is
%%% `beamlab_runtime_peer:run/3'; the inner command is an MFA the caller
%%% gives (the command line passes its own entry point).
%%%
%%% Every run also returns the VM's own `beamlab_env:report()', which is
%%% kept per configuration: it proves which flags the VM really ran with
%%% (e.g. the scheduler count of a `+S 2' VM). A configuration whose VM
%%% fails to start is reported with its error; the others go on.
-module(beamlab_env_matrix).

%% Findings of a repetition on the machine's load, kept in the matrix.
-define(LOAD_FINDINGS, [<<"load_high">>, <<"machine_overloaded">>]).

-export([configs/1, configs/2, parse_range/1, read_grid/1, run/2, format_error/1]).

%% `--ci' without `--max-time': ten minutes; at most the schema's
%% ten thousand rounds.
-define(MAX_TIME, 600000).
-define(MAX_REPEAT, 10000).

%% `flavor': the emulator flavour the configuration asks for (`--flavor',
%% or `-emu_flavor' among its arguments), proven from what its VM reports.
-type config() :: #{name := binary(), args := [string()],
                    erl := string() | undefined, wrap := [string()] | undefined,
                    flavor => beamlab_runtime_otp:flavor(),
                    profiled => boolean()}.   % the runner's profiled repetition
-type dims() :: #{vm => [string()], sweep => [pos_integer()], erl => [string()],
                  wrap => [string()], flavor => [beamlab_runtime_otp:flavor()]}.
-type run_out() :: beamlab_runtime_peer:run_out().
-type runner() :: fun((config(), [string()]) -> {ok, run_out()} | {error, term()}).
%% `command' is the inner command (what every VM runs); `argv' the
%% matrix's own command line and `started_at' its start time, both for the
%% result document; `inner' runs the inner command in the fresh VM and
%% returns {ExitCode, ResultDocument}.
%% `ci' (`--ci PCT', a fraction): `repeat' is the least number of rounds;
%% more rounds follow until the interval of every configuration's values
%% (one per fresh VM) is within `ci' of its mean, or `max_time' ms
%% (default 600000) are spent ({@link beamlab_stats_stop}); the document
%% says which (`extra.stopped_by', `extra.unconfident').
%% `profiled': after the measured repetitions, one more per configuration
%% whose runner is given the configuration with `profiled => true' (it
%% profiles while it runs); its outcome is kept apart from the statistics
%% (`extra.configs[].profiled', its profile in `extra.configs[].profile'),
%% so profiling never changes the figures.
-type spec() :: #{configs := [config()], command := [string()], repeat := pos_integer(),
                  argv := [unicode:chardata()], started_at := binary(),
                  inner := beamlab_runtime_peer:call_spec(),
                  baseline => binary() | undefined, sweep => boolean(),
                  paths => [file:filename()], profiled => boolean(),
                  ci => float() | undefined, max_time => pos_integer(),
                  metric => time | cpu}.
-export_type([config/0, dims/0, spec/0, runner/0]).

%%--------------------------------------------------------------------
%% Configurations
%%--------------------------------------------------------------------

%% @doc The configurations of a grid: the cross product of the VM argument
%% sets (`vm', plus `+S K:K' for each K of `sweep'), the emulator flavours
%% (`flavor'), the `erl' executables and the wrappers. A missing dimension
%% contributes one default entry; wrapper "none" means no wrapper.
%% Wrappers must be executable, and every `erl' must hold the flavours
%% asked for.
-spec configs(dims()) -> {ok, [config()]} | {error, term()}.
configs(Dims) ->
    configs(Dims, #{}).

%% @doc As {@link configs/1}; `check_wrappers => false' leaves a missing
%% wrapper to the run, which then fails that configuration only (the
%% runner of `matrix --target' does so); `default_erl' is the `erl' a
%% configuration without one runs (default: this VM's), whose flavours
%% are checked.
-spec configs(dims(), #{check_wrappers => boolean(), default_erl => file:filename()}) ->
          {ok, [config()]} | {error, term()}.
configs(Dims, Opts) ->
    case [{vm, V, Why} || V <- maps:get(vm, Dims, []),
                          {error, Why} <- [beamlab_runtime_peer:parse_args(lists:flatten(V))]]
        ++ [{wrap, W, Why} || W <- maps:get(wrap, Dims, []),
                              {error, Why} <- [beamlab_runtime_peer:parse_words(lists:flatten(W))]] of
        [] -> configs_checked(Dims, Opts);
        [{Opt, V, Why} | _] -> {error, {bad_args, Opt, V, Why}}
    end.

configs_checked(Dims, Opts) ->
    Vms = [split(V) || V <- maps:get(vm, Dims, [])]
        ++ [["+S", io_lib:format("~b:~b", [K, K])] || K <- maps:get(sweep, Dims, [])],
    Erls = maps:get(erl, Dims, []),
    Wraps = [case split(W) of
                 ["none"] -> none;
                 [] -> none;
                 Ws -> Ws
             end || W <- maps:get(wrap, Dims, [])],
    CheckWraps = case maps:get(check_wrappers, Opts, true) of
                     true -> [hd(W) || W <- Wraps, W =/= none];
                     false -> []
                 end,
    Flavors = maps:get(flavor, Dims, []),
    case check_execs(Erls, CheckWraps) of
        ok ->
            Cs = [config([lists:flatten(X) || X <- A], F, E, W)
                  || A <- default([[]], Vms), F <- default([undefined], Flavors),
                     E <- default([undefined], Erls), W <- default([none], Wraps)],
            Names = [maps:get(name, C) || C <- Cs, is_map(C)],
            case {Names -- lists:usort(Names), [C || {error, _} = C <- Cs]} of
                {_, [Error | _]} -> Error;
                {[], []} -> check_flavors(Cs, maps:get(default_erl, Opts, undefined));
                {[Dup | _], []} -> {error, {duplicate_config, Dup}}
            end;
        Error -> Error
    end.

%% A flavour comes from the `flavor' dimension (shown as flavor=F in the
%% name) or from `-emu_flavor F' among the arguments, not from both.
config(Args, Flavor, Erl, Wrap) ->
    InArgs = case lists:dropwhile(fun(A) -> A =/= "-emu_flavor" end, Args) of
                 [_, F | _] -> F;
                 _ -> undefined
             end,
    Parts = [string:join(Args, " ") || Args =/= []]
        ++ ["flavor=" ++ atom_to_list(Flavor) || Flavor =/= undefined]
        ++ ["erl=" ++ Erl || Erl =/= undefined]
        ++ ["wrap=" ++ string:join(Wrap, " ") || Wrap =/= none],
    Name = case Parts of
               [] -> <<"default">>;
               _ -> unicode:characters_to_binary(lists:join(" ", Parts))
           end,
    C = #{name => Name, args => Args, erl => Erl,
          wrap => case Wrap of none -> undefined; _ -> Wrap end},
    case {Flavor, InArgs} of
        {undefined, undefined} -> C;
        {undefined, _} ->
            %% (-emu_flavor smp, the default's name, proves nothing)
            case beamlab_runtime_otp:parse_flavor(InArgs) of
                {ok, F1} -> C#{flavor => F1};
                {error, _} -> C
            end;
        {_, undefined} -> C#{flavor => Flavor};
        _ -> {error, {flavor_twice, Name}}
    end.

%% Every (erl, flavour) pair is checked once, before anything runs: a
%% flavour the installation lacks is one line, not a failed VM each time.
check_flavors(Cs, DefaultErl) ->
    Pairs = lists:usort([{case E of undefined -> DefaultErl; _ -> E end, F}
                         || #{flavor := F, erl := E} <- Cs]),
    Check = fun({undefined, F}) -> beamlab_runtime_peer:flavor_args(#{flavor => F});
               ({Erl, F}) -> beamlab_runtime_peer:flavor_args(#{flavor => F, exec => Erl})
            end,
    case [R || P <- Pairs, {error, R} <- [Check(P)]] of
        [] -> {ok, Cs};
        [R | _] -> {error, {flavor, R}}
    end.

default(D, []) -> D;
default(_, L) -> L.

split(S) -> beamlab_runtime_peer:split_args(lists:flatten(S)).

check_execs(Erls, Wrappers) ->
    Missing = [{erl_not_found, E} || E <- Erls, not is_exec(E)]
        ++ [{wrapper_not_found, W} || W <- Wrappers, os:find_executable(W) =:= false],
    case Missing of
        [] -> ok;
        [M | _] -> {error, M}
    end.

is_exec(Path) ->
    case lists:member($/, Path) of
        true -> filelib:is_regular(Path);
        false -> os:find_executable(Path) =/= false
    end.

%% @doc "1..4" -> [1,2,3,4]; "1,2,4" -> [1,2,4]; "1..max" ends at the
%% logical processors available.
-spec parse_range(string()) -> {ok, [pos_integer()]} | {error, term()}.
parse_range(S) ->
    try
        %% Scheduler counts: 1..1024, checked before a range is expanded.
        Num = fun(T) when length(T) =< 4 -> list_to_integer(T);
                 (_) -> error(badarg)
              end,
        Ks = lists:append(
               [case string:split(Part, "..") of
                    [A, "max"] -> lists:seq(Num(A), cpus());
                    [A, B] -> lists:seq(Num(A), Num(B));
                    [A] -> [Num(A)]
                end || Part <- string:lexemes(S, ",")]),
        case Ks =/= [] andalso lists:all(fun(K) -> K >= 1 andalso K =< 1024 end, Ks) of
            true -> {ok, lists:usort(Ks)};
            false -> {error, {bad_range, S}}
        end
    catch error:_ -> {error, {bad_range, S}}
    end.

cpus() ->
    case erlang:system_info(logical_processors_available) of
        N when is_integer(N) -> N;
        _ -> erlang:system_info(schedulers)
    end.

%% @doc Read a grid file of Erlang terms:
%% `{vm, "+S 1"}.' `{sweep, "1..4"}.' `{erl, "/opt/otp26/bin/erl"}.'
%% `{wrap, "taskset -c 0"}.' `{baseline, "+S 1"}.' `{repeat, 5}.'
%% `{command, ["suite", "ping_pong"]}.' Every key may repeat where it makes
%% sense; the result has the shape of the `configs/1' dimensions plus
%% `baseline', `repeat' and `command'.
-spec read_grid(file:filename()) -> {ok, map()} | {error, term()}.
read_grid(File) ->
    case beamlab_input_terms:consult(File) of
        {ok, Terms} -> grid(Terms, #{});
        {error, Reason} -> {error, {grid_file, File, Reason}}
    end.

grid([], Acc) -> {ok, Acc};
grid([{Key, V} | Rest], Acc) when Key =:= vm; Key =:= erl; Key =:= wrap ->
    case io_lib:char_list(V) of
        true -> grid(Rest, maps:update_with(Key, fun(L) -> L ++ [V] end, [V], Acc));
        false -> {error, {bad_grid_term, {Key, V}}}
    end;
grid([{sweep, V} | Rest], Acc) ->
    case io_lib:char_list(V) andalso parse_range(V) of
        false -> {error, {bad_grid_term, {sweep, V}}};
        {ok, Ks} -> grid(Rest, maps:update_with(sweep, fun(L) -> L ++ Ks end, Ks, Acc));
        Error -> Error
    end;
grid([{baseline, V} | Rest], Acc) when is_list(V) ->
    case io_lib:char_list(V) of
        true -> grid(Rest, Acc#{baseline => unicode:characters_to_binary(V)});
        false -> {error, {bad_grid_term, {baseline, V}}}
    end;
grid([{repeat, N} | Rest], Acc) when is_integer(N), N >= 1 ->
    grid(Rest, Acc#{repeat => N});
grid([{command, Argv} | Rest], Acc) when is_list(Argv) ->
    case proper_list(Argv) andalso lists:all(fun io_lib:char_list/1, Argv) of
        true -> grid(Rest, Acc#{command => Argv});
        false -> {error, {bad_grid_term, {command, Argv}}}
    end;
grid([T | _], _) -> {error, {bad_grid_term, T}}.

proper_list([_ | T]) -> proper_list(T);
proper_list([]) -> true;
proper_list(_) -> false.

%%--------------------------------------------------------------------
%% Running
%%--------------------------------------------------------------------

%% @doc Run the matrix. `runner' (default: a fresh VM per run through
%% {@link beamlab_runtime_peer:run/3} calling the spec's `inner') runs the
%% command for one configuration; `progress' gets one line per run. An
%% interrupt (`beamlab_runtime_interrupt') stops it between runs and marks
%% the result partial.
-spec run(spec(), #{runner => runner(), progress => fun((iodata()) -> term())}) ->
          {ok, beamlab_result:result()} | {error, term()}.
run(#{configs := Configs, command := Argv, repeat := R} = Spec, Opts) ->
    %% `paths' are extra code paths for the inner command's modules.
    Paths = maps:get(paths, Spec, []),
    Runner = case Opts of
                 #{runner := R0} -> R0;
                 _ -> fun(C, _) -> run_in_vm(C, maps:get(inner, Spec), Paths) end
             end,
    Progress = maps:get(progress, Opts, fun(_) -> ok end),
    Baseline = case maps:get(baseline, Spec, undefined) of
                   undefined -> maps:get(name, hd(Configs));
                   B -> B
               end,
    case lists:member(Baseline, [maps:get(name, C) || C <- Configs]) of
        false -> {error, {unknown_baseline, Baseline}};
        true ->
            {Runs, Stop} = case maps:get(ci, Spec, undefined) of
                               undefined -> {interleave(Configs, R, Argv, Runner, Progress), none};
                               Ci -> until_confident(Configs, R, Ci, maps:get(max_time, Spec, ?MAX_TIME),
                                                     Argv, Runner, Progress)
                           end,
            Profiled = case maps:get(profiled, Spec, false) of
                           true -> profiled(Configs, Runs, Argv, Runner, Progress);
                           false -> #{}
                       end,
            {ok, stopping(Stop, result(Spec#{baseline => Baseline}, Runs, Profiled))}
    end.

%% Rep 1 of every configuration, then rep 2, ... A configuration whose VM
%% failed to start is not retried. Returns [{Config, Rep, Outcome}].
interleave(Configs, R, Argv, Runner, Progress) ->
    {Runs, _} = rounds(Configs, 1, R, R, Argv, Runner, Progress, {[], []}),
    lists:reverse(Runs).

%% `--ci': rounds of every configuration until the stopping rule says
%% stop (judged after each round from `Min' on); the runs and
%% `{Reason, Unmet}' (`interrupted' when an interrupt ended them).
until_confident(Configs, Min, Ci, Budget, Argv, Runner, Progress) ->
    Start = erlang:monotonic_time(millisecond),
    {Runs0, Dead0} = rounds(Configs, 1, Min, Min, Argv, Runner, Progress, {[], []}),
    more(Configs, Min, Ci, Budget, Start, Argv, Runner, Progress, {Runs0, Dead0}).

more(Configs, Done, Ci, Budget, Start, Argv, Runner, Progress, {Runs, Dead} = Acc) ->
    Unmet = beamlab_stats_stop:unmet(items([C || #{name := N} = C <- Configs, not lists:member(N, Dead)],
                                           lists:reverse(Runs)), Ci, 0),
    State = #{ci => Ci, elapsed => erlang:monotonic_time(millisecond) - Start, max_time => Budget,
              repetitions => Done, min => 1, max_repeat => ?MAX_REPEAT, unmet => Unmet},
    case interrupted() of
        true ->
            {lists:reverse(Runs), {interrupted, Unmet}};
        false ->
            case beamlab_stats_stop:decide(State) of
                {stop, Reason} ->
                    {lists:reverse(Runs), {Reason, Unmet}};
                continue ->
                    Next = rounds(Configs, Done + 1, Done + 1, Done + 1, Argv, Runner, Progress, Acc),
                    more(Configs, Done + 1, Ci, Budget, Start, Argv, Runner, Progress, Next)
            end
    end.

%% What the rule judges: per configuration and inner metric (named as the
%% document's benchmark), the repetitions' primary values; a configuration
%% with none yet (its runs failed) by its name, with none. A configuration
%% whose VM cannot start is left out: it is not retried.
items(Configs, Runs) ->
    maps:from_list(lists:append(
                     [case maps:to_list(vm_values([Out || {N, _, Out} <- Runs, N =:= Name])) of
                          [] -> [{Name, []}];
                          Vs -> [{<<Name/binary, " / ", Metric/binary>>, Vals} || {Metric, {_, Vals, _}} <- Vs]
                      end || #{name := Name} <- Configs])).

%% Rounds `From'..`To' of every configuration (`R' the count shown).
rounds(Configs, From, To, R, Argv, Runner, Progress, Acc0) ->
    Order = [{Rep, C} || Rep <- lists:seq(From, To), C <- Configs],
    lists:foldl(
      fun({Rep, #{name := Name} = C}, {Acc, Dead}) ->
              case lists:member(Name, Dead) orelse interrupted() of
                  true -> {Acc, Dead};
                  false ->
                      Out = Runner(C, Argv),
                      Progress(progress_line(Name, Rep, R, Out)),
                      Dead1 = case Out of
                                  {error, _} -> [Name | Dead];
                                  {ok, _} -> Dead
                              end,
                      {[{Name, Rep, Out} | Acc], Dead1}
              end
      end, Acc0, Order).

%% What ended the rounds under `--ci', in the document.
stopping(none, Doc) ->
    Doc;
stopping({Reason, Unmet}, #{extra := Extra} = Doc) ->
    Doc#{extra := Extra#{<<"stopped_by">> => atom_to_binary(Reason), <<"unconfident">> => Unmet}}.

%% The profiled repetition of every configuration that ran, in the same
%% order, unless interrupted.
profiled(Configs, Runs, Argv, Runner, Progress) ->
    Ok = lists:usort([N || {N, _, {ok, #{exit := 0}}} <- Runs]),
    maps:from_list(
      [{Name, begin
                  Out = Runner(C#{profiled => true}, Argv),
                  Progress(case Out of
                               {ok, #{exit := 0}} -> io_lib:format("[~ts] profiled repetition done~n", [Name]);
                               _ -> io_lib:format("[~ts] profiled repetition: ~ts~n", [Name, format_run_error(Out)])
                           end),
                  Out
              end}
       || #{name := Name} = C <- Configs, lists:member(Name, Ok), not interrupted()]).

progress_line(Name, Rep, R, {ok, #{exit := 0, env := Env}}) ->
    Online = online(Env),
    io_lib:format("[~ts] rep ~b/~b done (~w ~ts online, ~ts flavour)~n",
                  [Name, Rep, R, Online, beamlab_format_units:plural(Online, "scheduler"), flavor(Env)]);
progress_line(Name, Rep, R, {ok, #{exit := 130}}) ->
    io_lib:format("[~ts] rep ~b/~b: interrupted (left out)~n", [Name, Rep, R]);
progress_line(Name, Rep, R, {error, {vm_start, interrupted}}) ->
    progress_line(Name, Rep, R, {ok, #{exit => 130}});
progress_line(Name, Rep, R, {ok, #{exit := _}} = Out) ->
    io_lib:format("[~ts] rep ~b/~b: ~ts~n", [Name, Rep, R, format_run_error(Out)]);
progress_line(Name, Rep, R, {error, E}) ->
    io_lib:format("[~ts] rep ~b/~b: ~ts~n", [Name, Rep, R, format_error(E)]).

interrupted() ->
    beamlab_runtime_interrupt:interrupted().

%% The matrix result document: one benchmark per configuration and inner
%% metric, whose samples are the repetitions' primary values.
result(#{configs := Configs, command := Argv, repeat := R, baseline := Base} = Spec, Runs, Profiled) ->
    Sweep = maps:get(sweep, Spec, false),
    PerConfig = [{C, [Out || {N, _, Out} <- Runs, N =:= maps:get(name, C)]} || C <- Configs],
    Values = maps:from_list([{maps:get(name, C), vm_values(Outs)} || {C, Outs} <- PerConfig]),
    BaseVals = maps:get(Base, Values),
    BaseEnv = last_env(proplists:get_value(Base, [{maps:get(name, C), O} || {C, O} <- PerConfig])),
    LoadFindings = load_findings(Runs),
    Loaded = beamlab_result_compare:overloaded(#{findings => LoadFindings}),
    Benchmarks =
        [bench(C, Metric, Info, Vals, base_values(Metric, BaseVals), Base, Sweep,
               online(last_env(Outs)), online(BaseEnv), Loaded, Kept)
         || {C, Outs} <- PerConfig,
            {Metric, {Info, Vals, Kept}} <- lists:sort(maps:to_list(maps:get(maps:get(name, C), Values)))],
    Doc = beamlab_result:new(matrix, #{command => maps:get(argv, Spec),
                                       started_at => maps:get(started_at, Spec),
                                       params => maps:merge(
                                                   #{repeat => R, baseline => Base, sweep => Sweep,
                                                     inner_command => [beamlab_format_units:to_binary(A) || A <- Argv],
                                                     order => <<"interleaved">>},
                                                   maps:merge(rule(Spec), metric(Spec)))}),
    Doc1 = beamlab_result:add_findings(beamlab_result:add_benchmarks(Doc, Benchmarks), LoadFindings),
    Doc2 = beamlab_result:set(extra, #{configs => [maps:merge(config_info(C, Outs),
                                                              profiled_info(maps:get(name, C), Profiled))
                                                   || {C, Outs} <- PerConfig],
                                       competition => competition(Runs)}, Doc1),
    beamlab_result:finish(Doc2, #{finished_at => beamlab_runtime_clock:rfc3339(),
                                  partial => interrupted()}).

%% `--ci' and its budget (ms), when given.
rule(#{ci := Ci} = Spec) when is_number(Ci) ->
    #{ci => Ci, max_time => maps:get(max_time, Spec, ?MAX_TIME)};
rule(_) ->
    #{}.

%% `--metric cpu': what every value is follows from it even when nothing
%% was measured (beamlab_render_matrix:value_kind/1).
metric(#{metric := cpu}) -> #{metric => <<"cpu">>};
metric(_) -> #{}.

%% The machine's load while the matrix ran, as a run document records it:
%% every fresh VM's pre-flight check (`load_high') and detectors
%% (`machine_overloaded') saw the machine around it, so the matrix keeps
%% one finding per id, the worst repetition's, with how many repetitions
%% raised it. Without it a compare or a history of matrices measured on a
%% loaded machine was judged as if quiet (beamlab_result_compare).
load_findings(Runs) ->
    Raised = [{Name, Rep, F} || {Name, Rep, {ok, #{exit := 0, result := #{findings := Fs}}}} <- Runs,
                                F = #{id := Id} <- Fs, lists:member(Id, ?LOAD_FINDINGS)],
    Total = length([ok || {_, _, {ok, #{exit := 0}}} <- Runs]),
    [begin
         Of = [{N, R, F} || {N, R, F = #{id := I}} <- Raised, I =:= Id],
         {Name, Rep, Worst} = lists:last(lists:sort(fun({_, _, A}, {_, _, B}) -> rank(A) =< rank(B) end, Of)),
         Worst#{evidence := iolist_to_binary(
                              io_lib:format("~b of ~b repetitions; worst [~ts] rep ~b: ~ts",
                                            [length(Of), Total, Name, Rep, maps:get(evidence, Worst)])),
                data := (maps:get(data, Worst))#{<<"repetitions">> => length(Of),
                                                 <<"of">> => Total}}
     end || Id <- lists:usort([I || {_, _, #{id := I}} <- Raised])].

%% What every fresh VM measured of the machine's load over its run (its
%% `extra.competition', below the `load_high' threshold too), in the
%% order the repetitions ran.
competition(Runs) ->
    [maps:merge(#{config => Name, repetition => Rep}, C)
     || {Name, Rep, {ok, #{exit := 0, result := #{extra := Extra}}}} <- lists:sort(fun run_order/2, Runs),
        C <- [maps:get(competition, Extra, maps:get(<<"competition">>, Extra, null))], is_map(C)].

run_order({_, RepA, _}, {_, RepB, _}) -> RepA =< RepB.

rank(#{severity := critical}) -> 1;
rank(_) -> 0.

base_values(Metric, BaseVals) ->
    case BaseVals of
        #{Metric := {_, Vs, _}} -> Vs;
        _ -> undefined
    end.

%% Per inner metric: {Info, Values, Kept}: one value per successful
%% repetition (fresh VM), the rule's (beamlab_result_compare:run_level/1:
%% the VM's mean, or for CPU time its fastest sample), and the other one
%% kept beside them for the record (`vm_fastest' or `vm_means').
vm_values(Outs) ->
    maps:map(fun(_, {Info, Reps}) ->
                     {Means, Fastest} = lists:unzip(Reps),
                     Whole = not lists:member(undefined, Fastest),
                     case beamlab_result_compare:run_level(
                            beamlab_format_units:to_binary(maps:get(metric, Info, <<>>))) of
                         fastest when Whole -> {Info, Fastest, #{vm_means => Means}};
                         _ when Whole -> {Info, Means, #{vm_fastest => Fastest}};
                         _ -> {Info, Means, #{}}
                     end
             end, rep_values(Outs)).

%% Per inner metric: {Info, [{Mean, Fastest} per successful repetition]}.
rep_values(Outs) ->
    lists:foldl(
      fun({ok, #{exit := 0, result := #{benchmarks := Bs}}}, Acc) ->
              lists:foldl(fun(B, A) ->
                                  case primary(B) of
                                      undefined -> A;
                                      V ->
                                          Name = maps:get(name, B),
                                          Info = (maps:with([unit, better, metric, params, measure], B))#{
                                                   %% a suite's point (`fib[n=16]' of `fib[n=16]/cpu')
                                                   point => maps:get(<<"point">>, maps:get(extra, B, #{}), null)},
                                          Rep = {V, fastest(B)},
                                          maps:update_with(Name, fun({I, Vs}) -> {I, Vs ++ [Rep]} end,
                                                           {Info, [Rep]}, A)
                                  end
                          end, Acc, Bs);
         (_, Acc) -> Acc
      end, #{}, Outs).

%% A repetition's primary value: the mean of its samples.
primary(#{stats := #{mean := M}}) when is_number(M) -> M;
primary(#{samples := [_ | _] = S}) -> lists:sum(S) / length(S);
primary(_) -> undefined.

%% A repetition's fastest sample: its least for a cost, its largest for a
%% rate (kept beside the means: docs/statistics.md).
fastest(#{samples := [_ | _] = S} = B) ->
    case maps:get(better, B, higher) of
        Lower when Lower =:= lower; Lower =:= <<"lower">> -> lists:min(S);
        _ -> lists:max(S)
    end;
fastest(_) -> undefined.

bench(#{name := Name}, Metric, Info, Vals, BaseVals, Base, Sweep, Sched, BaseSched, Loaded, Kept) ->
    %% An inner document in memory says `lower'; one that crossed JSON
    %% would say <<"lower">>.
    Better = case maps:get(better, Info, higher) of
                 lower -> lower;
                 <<"lower">> -> lower;
                 _ -> higher
             end,
    Cmp = case BaseVals of
              undefined -> #{};
              _ when Name =:= Base -> #{};
              %% Each value is one fresh VM's mean: the VM is the unit of
              %% replication, and Welch on the logs of the VMs' means
              %% decides (beamlab_stats:compare/3), at the level of every
              %% verdict between runs (99%). The configurations ran in the
              %% same rounds, so no between-run term: `compare M.json'
              %% gives the same verdict (beamlab_result_compare, interleaved).
              %% CPU time's fastest samples: VMs far from their
              %% configuration's others left out first (robust_vms/1).
              _ ->
                  Opts = #{better => Better,
                           robust => beamlab_result_compare:robust_vms(
                                       case Kept of
                                           #{vm_means := _} -> fastest;
                                           _ -> mean
                                       end)},
                  #{comparison => load_aware(beamlab_stats:compare(
                                               BaseVals, Vals,
                                               Opts#{confidence => beamlab_result_compare:between_runs_confidence()}),
                                             BaseVals, Vals, Opts, Loaded,
                                              beamlab_result_compare:wall_clock(
                                                beamlab_format_units:to_binary(maps:get(unit, Info, <<>>)),
                                                beamlab_format_units:to_binary(maps:get(metric, Info, Metric))))}
          end,
    Scaling = case Sweep andalso is_integer(Sched) andalso is_integer(BaseSched)
                  andalso BaseVals =/= undefined andalso mean(Vals) /= 0 andalso mean(BaseVals) /= 0 of
                  true ->
                      Speedup = case Better of
                                    higher -> mean(Vals) / mean(BaseVals);
                                    lower -> mean(BaseVals) / mean(Vals)
                                end,
                      #{speedup => Speedup, efficiency => Speedup / (Sched / BaseSched)};
                  false -> #{}
              end,
    beamlab_result:benchmark(<<Name/binary, " / ", Metric/binary>>, Vals,
                             (maps:merge(Cmp, maps:with([measure], Info)))#{group => Name, metric => maps:get(metric, Info, Metric),
                                  unit => maps:get(unit, Info, <<>>), better => Better,
                                  %% The inner benchmark's parameters (a swept
                                  %% workload parameter, the sample duration)
                                  %% stay, for the report's charts and units.
                                  params => maps:merge(maps:get(params, Info, #{}), #{<<"config">> => Name}),
                                  extra => maps:merge(Scaling#{schedulers_online => Sched,
                                                               inner_benchmark => Metric},
                                                      maps:merge(Kept, maps:with([point], maps:filter(fun(_, V) -> V =/= null end, Info))))}).

%% A repetition measured on a loaded machine (its `load_high' or
%% `machine_overloaded': the matrix's load findings) makes a wall-clock
%% verdict `inconclusive_load' unless it holds at far_confidence too, as
%% a compare of two matrices says (beamlab_result_compare:qualify/3);
%% reductions, words and CPU time keep theirs.
load_aware(C, BaseVals, Vals, Opts, true, true) ->
    Far = maps:get(verdict, beamlab_stats:compare(BaseVals, Vals,
                                                  Opts#{confidence => beamlab_result_compare:far_confidence()})),
    case beamlab_result_compare:qualify(C, Far, #{replication => runs, overloaded => true, wall_clock => true}) of
        inconclusive_load -> C#{verdict := inconclusive_load};
        _ -> C
    end;
load_aware(C, _BaseVals, _Vals, _Opts, _Loaded, _WallClock) ->
    C.

config_info(#{name := Name, args := Args, erl := Erl, wrap := Wrap} = C, Outs) ->
    %% A repetition cut short by an interrupt is left out (its mean covers
    %% less than the others), and is no error.
    Errors = [format_run_error(O) || O <- Outs, not ok_run(O), not interrupted_run(O)],
    Env = last_env(Outs),
    #{name => Name, args => [beamlab_format_units:to_binary(A) || A <- Args],
      erl => case Erl of undefined -> null; _ -> beamlab_format_units:to_binary(Erl) end,
      wrap => case Wrap of undefined -> null; _ -> [beamlab_format_units:to_binary(W) || W <- Wrap] end,
      runs => length(Outs), ok_runs => length([O || O <- Outs, ok_run(O)]),
      status => case {Outs, Errors} of
                    {[], _} -> <<"not run">>;
                    {_, []} -> <<"ok">>;
                    _ -> <<"failed">>
                end,
      errors => Errors,
      schedulers_online => online(Env),
      %% asked for (null: the installation's default) and as the VM reported it
      flavor => case C of #{flavor := F} -> atom_to_binary(F); _ -> null end,
      flavor_reported => case Env of undefined -> null; _ -> flavor(Env) end,
      env => case Env of undefined -> null; _ -> Env end,
      %% A watched target's telemetry (matrix --target: the inner amqp
      %% --watch), of the last repetition that ran, with when that
      %% repetition's load started (`load_start_ms', ms since its run
      %% started, the origin of the broker's `t_ms'), so the report can
      %% say what its time axis counts from.
      broker => case [with_load_start(B, X) || {ok, #{exit := 0, result := #{extra := #{<<"broker">> := B} = X}}} <- Outs] of
                    [] -> null;
                    Bs -> lists:last(Bs)
                end}.

with_load_start(Broker, #{<<"load_start_ms">> := Ms}) when is_map(Broker), is_number(Ms) ->
    Broker#{<<"load_start_ms">> => Ms};
with_load_start(Broker, _) ->
    Broker.

%% The profiled repetition's document (its benchmarks) or its error, and
%% the profile the runner put in that document's `extra.profile', which
%% becomes the configuration's `profile' (where the report finds a
%% matrix configuration's profile).
profiled_info(Name, Profiled) ->
    case maps:find(Name, Profiled) of
        error -> #{profiled => null, profile => null};
        {ok, {ok, #{exit := 0, result := #{extra := X} = Doc}}} ->
            %% A call capture of the target's processes (matrix
            %% --profile-process) is the configuration's `capture', or
            %% its one line `capture_error'.
            Capture = maps:with([<<"capture">>, <<"capture_error">>], X),
            maps:merge(#{profiled => #{status => <<"ok">>,
                                       result => Doc#{extra := maps:without([<<"profile">>, <<"capture">>,
                                                                             <<"capture_error">>], X)}},
                         profile => maps:get(<<"profile">>, X, null)},
                       maps:from_list([{binary_to_atom(K), V} || {K, V} <- maps:to_list(Capture)]));
        {ok, Out} ->
            #{profiled => #{status => <<"failed">>, error => format_run_error(Out)}, profile => null}
    end.

ok_run({ok, #{exit := 0}}) -> true;
ok_run(_) -> false.

interrupted_run({ok, #{exit := 130}}) -> true;
%% An interrupt while the repetition's VM was still booting (the boot is
%% interruptible): the repetition is cut, not failed.
interrupted_run({error, {vm_start, interrupted}}) -> true;
interrupted_run(_) -> false.

format_run_error({ok, #{exit := Code} = Out}) ->
    case inner_error(maps:get(result, Out, undefined)) of
        none -> beamlab_format_units:to_binary(io_lib:format("command exited with status ~b", [Code]));
        Msg -> beamlab_format_units:to_binary(io_lib:format("command exited with status ~b: ~ts", [Code, Msg]))
    end;
format_run_error({error, E}) ->
    beamlab_format_units:to_binary(format_error(E)).

%% What the inner command said: its error line, or the first failed
%% benchmark's error (or failure, for a suite) in its document.
inner_error({error, Msg}) when is_binary(Msg) ->
    Msg;
inner_error(#{benchmarks := Bs} = Doc) ->
    Failures = [<<N/binary, ": ", E/binary>> || #{name := N, extra := #{<<"error">> := E}} <- Bs,
                                                 is_binary(E)]
        ++ [<<N/binary, ": ", E/binary>>
            || #{<<"name">> := N, <<"error">> := E} <- failures(maps:get(extra, Doc, #{})),
               is_binary(N), is_binary(E)],
    case Failures of
        [F | _] -> F;
        [] -> none
    end;
inner_error(_) ->
    none.

failures(#{<<"failures">> := Fs}) when is_list(Fs) -> [F || F <- Fs, is_map(F)];
failures(_) -> [].

last_env(Outs) ->
    case [Env || {ok, #{env := Env}} <- Outs, is_map(Env)] of
        [] -> undefined;
        Envs -> lists:last(Envs)
    end.

online(#{schedulers := #{online := N}}) -> N;
online(_) -> null.

%% The flavour an env report gives: beamlab_env's (a fresh VM) or
%% beamlab_sut_watch's (a target node).
flavor(#{otp := #{emu_flavor := F}}) -> F;
flavor(#{otp := #{flavor := F}}) when F =/= null -> F;
flavor(_) -> <<"?">>.

%% One run in a fresh VM configured as `Config': the inner command, then
%% the VM's own env report.
run_in_vm(#{args := Args, erl := Erl, wrap := Wrap} = C, Inner, Paths) ->
    PeerOpts = maps:from_list([{args, Args}, {paths, Paths}]
                              ++ [{exec, Erl} || Erl =/= undefined]
                              ++ [{wrapper, Wrap} || Wrap =/= undefined]
                              ++ [{flavor, F} || #{flavor := F} <- [C]]),
    beamlab_runtime_peer:run(PeerOpts, Inner, {beamlab_env, report, []}).

%% @doc One line for each error of this module.
-spec format_error(term()) -> iolist().
format_error(Reason) ->
    beamlab_format_reason:line(fun error_line/1, Reason).

error_line({bad_args, Opt, V, Why}) ->
    io_lib:format("--~ts ~ts: ~ts", [Opt, V, beamlab_runtime_peer:format_error(Why)]);
error_line({flavor_twice, Name}) ->
    io_lib:format("configuration \"~ts\" gives -emu_flavor in its arguments and --flavor: give one",
                  [Name]);
error_line({flavor, R}) ->
    ["--flavor: ", beamlab_runtime_peer:format_error({otp, R})];
error_line({duplicate_config, Name}) ->
    io_lib:format("configuration \"~ts\" is given twice", [Name]);
error_line({erl_not_found, E}) ->
    io_lib:format("--erl ~ts: no such executable", [E]);
error_line({wrapper_not_found, W}) ->
    io_lib:format("--wrap: ~ts is not installed (not found on PATH)", [W]);
error_line({bad_range, S}) ->
    io_lib:format("bad scheduler range \"~ts\" (use 1..4, 1,2,4 or 1..max)", [S]);
error_line({grid_file, File, Reason}) ->
    io_lib:format("~ts: ~ts", [File, beamlab_input_terms:format_error(Reason)]);
error_line({bad_grid_term, T}) ->
    io_lib:format("grid file: unknown or malformed term ~0tP", [T, 8]);
error_line({unknown_baseline, B}) ->
    io_lib:format("baseline \"~ts\" is not one of the configurations", [B]);
error_line({vm_start, _} = E) ->
    beamlab_runtime_peer:format_error(E);
error_line({vm_unresponsive, _} = E) ->
    beamlab_runtime_peer:format_error(E);
error_line({vm_failed, _, _} = E) ->
    beamlab_runtime_peer:format_error(E);
error_line({target, Line}) when is_binary(Line) ->
    Line;
error_line(Other) ->
    beamlab_format_reason:term(Other).

mean(L) -> lists:sum(L) / length(L).

