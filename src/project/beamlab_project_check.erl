%%% @doc `check --against REF': is the working tree of a project slower,
%%% or does it do more work, than the commit REF names?
%%%
%%% 1. REF is resolved and checked out in a temporary worktree
%%%    ({@link beamlab_project_git}), removed at the end whatever happens.
%%% 2. Both versions are built with the project's tool
%%%    ({@link beamlab_project_build}); the base reuses the head's
%%%    dependencies, so the build needs no network.
%%% 3. The head's bench modules are compiled once for each side, against
%%%    that side's code: both versions run the same benchmarks, so only the
%%%    code under test differs.
%%% 4. Paired rounds ({@link beamlab_project_rounds}): each round runs
%%%    base and head in fresh VMs, one after the other, order swapped every
%%%    round. What a side's VM runs is the caller's `main' (the command
%%%    line gives `beamlab run --bench DIR --reductions --memory'); its
%%%    result is a run document, from which each benchmark gives a time
%%%    per iteration, reductions per iteration and words allocated per
%%%    iteration.
%%% 5. Each benchmark and metric is compared over the rounds with
%%%    {@link beamlab_stats_paired} (median of the per-round ratios, its
%%%    order-statistic interval, the sign test), all at one level
%%%    corrected for their number (`params.family':
%%%    {@link beamlab_stats_paired:family/2}), so `alpha' bounds the
%%%    chance of any false verdict in the whole check.
%%%
%%% The result is a document of kind `check': per benchmark one entry per
%%% metric (`NAME (time)', `NAME (reductions)', `NAME (memory)'; group
%%% NAME), whose samples are the head's per-round values, with the base's
%%% in `extra.base' and the paired comparison in `extra.paired'.
%%% {@link regressions/1} lists what the gate fails on.
-module(beamlab_project_check).

-export([run/1, document/5, regressions/1, failed_head/1, metrics/0, interrupted/1, format_error/1]).

%% `--ci' without `--max-time': ten minutes; at most ten thousand rounds.
-define(MAX_TIME, 600000).
-define(MAX_ROUNDS, 10000).

-type metric() :: time | cpu | reductions | memory.
-type side_project() :: beamlab_project_build:project().
-type opts() :: #{root := file:filename(),             % the project (the working tree)
                  against := string(),                  % the git ref of the base
                  bench := file:filename(),             % relative to root, default "bench"
                  rounds := pos_integer(),
                  gate := [metric()],                   % metrics whose regression fails the check
                  threshold := float(),                 % effect floor, a fraction
                  alpha := float(),                     % significance level
                  main := fun((beamlab_project_rounds:side()) -> beamlab_runtime_peer:call_spec()),
                  command := [string()],
                  params => map(),                      % more run parameters, recorded
                  head => side_project(),               % already built (the rebar3 plugin, Mix)
                  vm_args => [string()],
                  ci => float(),                        % --ci: more rounds until confident ...
                  max_time => pos_integer(),            % ... or this budget (ms) is spent
                  timeout => timeout(),                 % ms: each build, validation, side of a round
                  progress => fun((unicode:chardata()) -> any())}.
-type error_reason() :: beamlab_project_git:error_reason()
                      | beamlab_project_build:error_reason()
                      | beamlab_project_bench:error_reason()
                      | {tmp_dir, term()}
                      | {logs_dir, file:filename(), term()}
                      | {side, base | head, binary()}
                      | {normalize, file:filename(), file:posix() | badarg | terminated}
                      | {write_code, file:filename(), file:posix() | badarg | terminated}.
-export_type([metric/0, opts/0, error_reason/0]).

%% @doc The metrics, in the order they are reported (`cpu' only when a
%% check gates on it: the sides measure it then).
-spec metrics() -> [metric()].
metrics() ->
    [time, cpu, reductions, memory].

measured(Gate) ->
    [M || M <- metrics(), M =/= cpu orelse lists:member(cpu, Gate)].

%% @doc Runs the check; the document says what changed.
-spec run(opts()) -> {ok, beamlab_result:result()} | {error, error_reason()}.
run(#{root := Root0, against := Ref} = Opts) ->
    Started = beamlab_runtime_clock:rfc3339(),
    Root = filename:absname(Root0),
    Progress = maps:get(progress, Opts, fun(_) -> ok end),
    maybe_run(
      fun() ->
              Git = ok(beamlab_project_git:toplevel(Root)),
              Base = ok(beamlab_project_git:commit(Git, Ref)),
              Head = ok(beamlab_project_git:head(Git)),
              %% The build logs stay when something failed (the error names
              %% them), not when the check was interrupted or passed. They
              %% are kept in the project's _build, not in TMPDIR: a failed
              %% check (a base that does not build) must not leave a
              %% directory behind in TMPDIR at every run in CI.
              Logs = logs_dir(Root),
              Tmp = private_dir("beamlab-check"),
              try
                  Rel = ok(beamlab_project_git:prefix(Root)),
                  Progress(io_lib:format("checking out ~ts (~ts) in a temporary worktree",
                                         [Ref, maps:get(short, Base)])),
                  Tree = ok(beamlab_project_git:worktree(Git, maps:get(commit, Base),
                                                         filename:join(Tmp, "base"))),
                  try
                      BaseRoot = filename:join([Tmp, "base" | Rel]),
                      Sides = sides(Root, BaseRoot, Tmp, Logs, Opts),
                      Benchmarks = validate(lists:last(Sides), Opts),
                      Rounds = rounds(Sides, Benchmarks, Opts),
                      Doc = document(Rounds, Base, Head, Started, Opts),
                      _ = file:del_dir_r(Logs),
                      Doc
                  after
                      beamlab_project_git:remove(Tree)
                  end
              catch
                  throw:{?MODULE, Reason} = Thrown ->
                      _ = interrupted(Reason) andalso file:del_dir_r(Logs),
                      throw(Thrown)
              after
                  _ = file:del_dir_r(Tmp)
              end
      end).

%% @doc Whether the check stopped because it was interrupted (a build
%% tool stopped by the interrupt): the caller ends it as interrupted.
-spec interrupted(error_reason()) -> boolean().
interrupted({build_failed, _, _, {interrupted, _}, _}) -> true;
interrupted({side, _, interrupted}) -> true;
interrupted(_) -> false.

private_dir(Prefix) ->
    case beamlab_runtime_file:private_dir(Prefix) of
        {ok, D} -> D;
        {error, Why} -> throw({?MODULE, {tmp_dir, Why}})
    end.

%% `_build/beamlab-check/' of the project, emptied first: the logs of
%% the last check only.
logs_dir(Root) ->
    Logs = filename:join([Root, "_build", "beamlab-check"]),
    _ = file:del_dir_r(Logs),
    case filelib:ensure_path(Logs) of
        ok -> Logs;
        {error, Why} -> throw({?MODULE, {logs_dir, Logs, Why}})
    end.

maybe_run(Fun) ->
    try {ok, Fun()}
    catch throw:{?MODULE, Reason} -> {error, Reason}
    end.

ok(ok) -> ok;
ok({ok, V}) -> V;
ok({error, Reason}) -> throw({?MODULE, Reason}).

%%--------------------------------------------------------------------
%% Building both sides

sides(Root, BaseRoot, Tmp, Logs, Opts) ->
    Progress = maps:get(progress, Opts, fun(_) -> ok end),
    HeadProject = case maps:find(head, Opts) of
                      {ok, P} -> P;
                      error ->
                          Progress(io_lib:format("building the working tree (~ts)",
                                                 [beamlab_project_build:detect(Root)])),
                          ok(beamlab_project_build:build(Root, (timeout(Opts))#{log => filename:join(Logs, "head.log")}))
                  end,
    Progress(io_lib:format("building the base (~ts)", [beamlab_project_build:detect(BaseRoot)])),
    BaseProject = ok(beamlab_project_build:build(BaseRoot, (timeout(Opts))#{log => filename:join(Logs, "base.log"),
                                                                            deps_from => Root})),
    BenchDir = filename:join(Root, maps:get(bench, Opts, "bench")),
    Sources = ok(beamlab_project_bench:sources(BenchDir)),
    Sides = [side(Name, Project, Sources, BenchDir, Tmp, Logs)
             || {Name, Project} <- [{base, BaseProject}, {head, HeadProject}]],
    preload(Sides, Tmp).

%% Each side's VM loads its code first, the same bytes in the same order
%% as the other side's wherever the code is the same
%% (beamlab_project_code): built in different directories, identical code
%% was laid out differently and measured faster on one side in every
%% round (#35). Paths both sides have (Elixir's libraries) are the same
%% code on both: loaded on demand, as usual. Normalized once, into
%% `base-code/' and `head-code/' of the check's temporary directory
%% (removed with it), read from there by every VM of the side; so is this
%% beamlab's code, which a side that does not bring its own runs
%% (`beamlab-code/', in name order too): sent to every VM at its start
%% instead, it took a second or more a VM under load.
preload([#{paths := BasePaths} = Base, #{paths := HeadPaths} = Head], Tmp) ->
    Shared = [P || P <- BasePaths, lists:member(P, HeadPaths)],
    Own = case lists:any(fun(#{load := L}) -> L end, [Base, Head]) of
              true -> ok(beamlab_runtime_peer:write_code(filename:join(Tmp, "beamlab-code")));
              false -> []
          end,
    [S#{preload => ok(beamlab_project_code:write(Paths, Shared, filename:join(Tmp, atom_to_list(Name) ++ "-code"))),
        load => case Load of
                    true -> Own;
                    false -> false
                end}
     || #{name := Name, paths := Paths, load := Load} = S <- [Base, Head]].

timeout(Opts) ->
    maps:with([timeout], Opts).

side(Name, #{root := Root, paths := Paths, include := Include}, Sources, BenchDir, Tmp, Logs) ->
    Ebin = filename:join(Tmp, atom_to_list(Name) ++ "-bench"),
    ok = ok(beamlab_project_bench:compile(Sources, Ebin,
                                     #{paths => Paths, include => [BenchDir | Include],
                                       log => filename:join(Logs, atom_to_list(Name) ++ "-bench.log")})),
    %% (compiled against the side's include directories: the same bytes
    %% for both sides once normalized, see preload/2)
    ok = ok(beamlab_project_code:normalize_dir(Ebin)),
    #{name => Name, dir => Root, paths => Paths ++ [Ebin], bench => Ebin, load => not own_code(Paths)}.

%% beamlab checking itself: each side's VM runs that side's beamlab (its
%% hot paths are the code under test), not this one's.
own_code(Paths) ->
    lists:any(fun(P) -> filelib:is_regular(filename:join(P, "beamlab.app")) end, Paths).

%% The head's bench modules are checked once, in a fresh VM with the
%% head's code, before any round: every mistake is reported, each in a
%% line of its own.
validate(#{paths := Paths, bench := Ebin, load := Load}, Opts) ->
    Progress = maps:get(progress, Opts, fun(_) -> ok end),
    Progress("checking the bench modules"),
    case beamlab_runtime_peer:run(maps:merge(#{paths => Paths, args => maps:get(vm_args, Opts, []), load => Load},
                                             deadline(Opts, 0)),
                                  {beamlab_project_bench, validate, [Ebin]},
                                  {erlang, system_info, [otp_release]}) of
        {ok, #{result := {ok, Names}}} -> length(Names);
        {ok, #{result := {error, Reason}}} -> throw({?MODULE, Reason});
        {error, Reason} -> throw({?MODULE, side_failure(head, Reason)})
    end.

%% A side's VM stopped by the interrupt is the check interrupted.
side_failure(Side, {vm_start, interrupted}) -> {side, Side, interrupted};
side_failure(Side, Reason) -> {side, Side, iolist_to_binary(beamlab_runtime_peer:format_error(Reason))}.

%% The deadline of a side's VM: `timeout' beyond the time its samples
%% take (`Benchmarks' of them, each warm-up and sample a duration).
deadline(#{timeout := T} = Opts, Benchmarks) when is_integer(T) ->
    #{duration := D, samples := S, warmup := W} =
        maps:merge(#{duration => 0, samples => 0, warmup => 0},
                   maps:with([duration, samples, warmup], maps:get(params, Opts, #{}))),
    #{deadline => T + Benchmarks * D * (S + W)};
deadline(_, _) ->
    #{}.

%%--------------------------------------------------------------------
%% Rounds

rounds([Base, Head], Benchmarks, Opts) ->
    N = maps:get(rounds, Opts),
    Progress = maps:get(progress, Opts, fun(_) -> ok end),
    Result = beamlab_project_rounds:run(
               Base, Head,
               maps:merge((deadline(Opts, Benchmarks))#{
                 rounds => N, main => maps:get(main, Opts), vm_args => maps:get(vm_args, Opts, []),
                 progress => fun(I, Side) when I =< N -> Progress(io_lib:format("round ~b/~b: ~ts", [I, N, Side]));
                                (I, Side) -> Progress(io_lib:format("round ~b (--ci): ~ts", [I, Side]))
                             end,
                 %% A side that cannot run at all will not run in the next round either.
                 stop => fun(#{base := B, head := H}) -> not (runs(B) andalso runs(H)) end}, more(Opts))),
    case Result of
        #{rounds := [#{head := First} | _]} ->
            ok = head_runs(First),
            Result;
        _ ->
            Result
    end.

%% `--ci': rounds beyond `rounds' until every gated metric's interval is
%% within the target (beamlab_stats_stop), or the budget is spent.
more(#{ci := Ci} = Opts) when is_number(Ci) ->
    Start = erlang:monotonic_time(millisecond),
    Budget = maps:get(max_time, Opts, ?MAX_TIME),
    #{more => fun(Rounds) ->
                      Unmet = unconfident(Rounds, Opts),
                      State = #{ci => Ci, elapsed => erlang:monotonic_time(millisecond) - Start,
                                max_time => Budget, repetitions => length(Rounds), min => 1,
                                max_repeat => ?MAX_ROUNDS, unmet => Unmet},
                      case beamlab_stats_stop:decide(State) of
                          continue -> continue;
                          {stop, Reason} -> {stop, {Reason, Unmet}}
                      end
              end};
more(_) ->
    #{}.

%% The gated entries (`NAME (metric)') whose paired interval is not yet
%% within `ci' of the ratio.
unconfident(Rounds, #{ci := Ci} = Opts) ->
    {Entries, _, _} = entries_of(Rounds, Opts),
    %% (the entries' extra as the document holds it: JSON keys)
    [N || #{name := N, extra := #{<<"gated">> := true} = X} <- Entries,
          not beamlab_stats_stop:paired_met(paired_ci(maps:get(<<"paired">>, X, #{})), Ci)].

paired_ci(#{<<"change">> := C, <<"ci">> := [Lo, Hi]}) -> #{change => C, ci => {Lo, Hi}};
paired_ci(_) -> #{change => undefined, ci => undefined}.

runs({ok, {Code, #{}}}) -> Code =:= 0 orelse Code =:= 1;
runs(_) -> false.

%% The head must run (its bench modules were validated); a base that
%% cannot (a project before its bench modules existed, a beamlab before
%% `run --bench') leaves every benchmark not compared.
head_runs({ok, {_, #{}}}) -> ok;
head_runs(Outcome) -> throw({?MODULE, {side, head, side_error(Outcome)}}).

side_error({ok, {_, {error, Msg}}}) -> Msg;
side_error({error, Reason}) -> iolist_to_binary(beamlab_runtime_peer:format_error(Reason));
side_error({ok, {Code, _}}) -> iolist_to_binary(io_lib:format("exit code ~b", [Code])).

%%--------------------------------------------------------------------
%% The document

%% @doc The check's document from the rounds (each side's outcome a run
%% document or an error), the base's and head's commits, the start time
%% and the check's options (`against', `gate', `threshold', `alpha',
%% `rounds', `command', `params').
-spec document(#{rounds := [beamlab_project_rounds:round()], interrupted := boolean()},
               beamlab_project_git:commit(), beamlab_project_git:head(), binary(), opts()) ->
          beamlab_result:result().
document(#{rounds := Rounds, interrupted := Interrupted} = Done, Base, Head, Started, Opts) ->
    {Entries, Findings, Family} = entries_of(Rounds, Opts),
    Gate = maps:get(gate, Opts),
    Rule = case Opts of
               #{ci := Ci} when is_number(Ci) -> #{ci => Ci, max_time => maps:get(max_time, Opts, ?MAX_TIME)};
               _ -> #{}
           end,
    Params = maps:merge(maps:get(params, Opts, #{}),
                        #{against => unicode:characters_to_binary(maps:get(against, Opts)),
                          base => maps:with([commit, short, subject, date, ref], Base),
                          head => maps:with([commit, short, subject, date, dirty], Head),
                          rounds => maps:get(rounds, Opts), rounds_done => length(Rounds),
                          gate => Gate, threshold => maps:get(threshold, Opts),
                          alpha => maps:get(alpha, Opts), test => sign, family => Family,
                          %% enough for every entry compared to count
                          min_rounds => beamlab_stats_paired:min_rounds(
                                          maps:get(alpha, Opts) / max(1, maps:get(compared, Family)))}),
    Params1 = maps:merge(Params, Rule),
    Doc0 = beamlab_result:new(check, #{command => maps:get(command, Opts), started_at => Started,
                                       params => Params1}),
    Doc1 = beamlab_result:add_findings(beamlab_result:add_benchmarks(Doc0, Entries), Findings),
    Stopped = case {Rule, Done} of
                  {#{ci := _}, #{stopped := {Reason, Unmet}}} -> #{stopped_by => Reason, unconfident => Unmet};
                  {#{ci := _}, _} when Interrupted -> #{stopped_by => interrupted, unconfident => []};
                  _ -> #{}
              end,
    Doc2 = beamlab_result:set(extra, Stopped#{regressed => [iolist_to_binary(regression_text(R))
                                                            || R <- regressions(Doc1)]}, Doc1),
    beamlab_result:finish(Doc2, #{finished_at => beamlab_runtime_clock:rfc3339(),
                                  partial => Interrupted}).

%% The entries of the rounds (per benchmark and metric, the paired
%% comparison), the head's findings and the family the entries were
%% judged in: every entry is compared at the family's `entry_alpha'
%% (Bonferroni with Tarone's refinement, beamlab_stats_paired:family/2),
%% so that `alpha' bounds the chance of any false verdict in the check,
%% not of each of its entries (8 benchmarks x 3 metrics at 0.01 each
%% gave a false `regressed' in one check in five).
entries_of(Rounds, Opts) ->
    HeadDocs = [D || #{head := {ok, {_, #{} = D}}} <- Rounds],
    Names = case HeadDocs of
                [D | _] -> [N || #{name := N} <- maps:get(benchmarks, D)];
                [] -> []
            end,
    PerRound = [{values(maps:get(base, R), Names), values(maps:get(head, R), Names)} || R <- Rounds],
    Modules = case HeadDocs of
                  [D1 | _] -> maps:from_list([{N, P} || #{name := N, params := P} <- maps:get(benchmarks, D1)]);
                  [] -> #{}
              end,
    Gate = maps:get(gate, Opts),
    Findings = case HeadDocs of
                   [D2 | _] -> maps:get(findings, D2);
                   [] -> []
               end,
    %% An overloaded machine makes a time verdict inconclusive unless far
    %% outside the noise (beamlab_result_compare:qualify/3's rule).
    Loaded = beamlab_result_compare:overloaded(#{findings => Findings}),
    Differing = [length([x || {B, H} <- paired_values(M, Pairs), B /= H])
                 || N <- Names, Pairs <- [pairs(N, PerRound)], status(Pairs) =:= compared,
                    M <- measured(Gate), paired_values(M, Pairs) =/= []],
    Family = beamlab_stats_paired:family(maps:get(alpha, Opts), Differing),
    Stats = #{alpha => maps:get(entry_alpha, Family), threshold => maps:get(threshold, Opts),
              overloaded => Loaded,
              far_alpha => (1 - beamlab_result_compare:far_confidence()) / max(1, maps:get(size, Family))},
    Entries = lists:append([entries(N, PerRound, maps:get(N, Modules, #{}), Gate, Stats) || N <- Names]),
    {Entries, Findings, Family}.

pairs(Name, PerRound) ->
    [{maps:get(Name, B, missing), maps:get(Name, H, missing)} || {B, H} <- PerRound].

%% The rounds where both sides measured `Metric': [{Base, Head}].
paired_values(Metric, Pairs) ->
    [{B, H} || {{ok, BV}, {ok, HV}} <- Pairs,
               B <- [maps:get(Metric, BV, none)], H <- [maps:get(Metric, HV, none)],
               is_number(B), is_number(H)].

%% Name => {ok, #{time, reductions, memory}} | {error, Message} for one
%% side of a round; a side that did not run fails every benchmark.
values({ok, {_, #{benchmarks := Bs}}}, _Names) ->
    maps:from_list([{N, bench_values(B)} || #{name := N} = B <- Bs]);
values(Outcome, Names) ->
    Error = {error, side_error(Outcome)},
    maps:from_list([{N, Error} || N <- Names]).

bench_values(#{extra := #{<<"status">> := <<"ok">>} = X}) ->
    Per = case maps:get(<<"per_iteration">>, X, #{}) of
              P when is_map(P) -> P;
              _ -> #{}
          end,
    {ok, maps:from_list([{K, V} || {K, V} <- [{time, maps:get(<<"iteration_ns">>, X, null)},
                                              {cpu, maps:get(<<"cpu_iteration_ns">>, X, null)},
                                              {reductions, maps:get(<<"reductions">>, Per, null)},
                                              {memory, maps:get(<<"words">>, Per, null)}],
                                   is_number(V)])};
bench_values(#{extra := X}) ->
    {error, maps:get(<<"error">>, X, <<"failed">>)}.

entries(Name, PerRound, Params, Gate, Stats) ->
    Pairs = pairs(Name, PerRound),
    Status = status(Pairs),
    [entry(Name, M, Pairs, Status, Params, lists:member(M, Gate), Stats) || M <- measured(Gate)].

status(Pairs) ->
    BaseErr = [E || {{error, E}, _} <- Pairs],
    HeadErr = [E || {_, {error, E}} <- Pairs],
    Both = [x || {{ok, _}, {ok, _}} <- Pairs],
    if
        HeadErr =/= [], BaseErr =/= [] -> {failed_both, hd(HeadErr)};
        HeadErr =/= [] -> {failed_head, hd(HeadErr)};
        Both =:= [], BaseErr =/= [] -> {failed_base, hd(BaseErr)};
        true -> compared
    end.

entry(Name, Metric, Pairs, Status, Params, Gated, Stats) ->
    Paired = paired_values(Metric, Pairs),
    {BaseVals, HeadVals} = lists:unzip(Paired),
    Extra0 = #{base => BaseVals, gated => Gated, status => status_name(Status)},
    Extra = case Status of
                compared when Paired =/= [] ->
                    P = beamlab_stats_paired:compare(BaseVals, HeadVals,
                                                     maps:with([alpha, threshold], Stats#{better => lower})),
                    Extra0#{paired => paired_json(load_aware(P, Metric, Stats))};
                compared ->
                    Extra0#{error => <<"not measured">>};
                {_, Error} ->
                    Extra0#{error => Error}
            end,
    {Unit, _} = unit(Metric),
    beamlab_result:benchmark(<<Name/binary, " (", (atom_to_binary(Metric))/binary, ")">>, HeadVals,
                             #{group => Name, metric => Metric, unit => Unit, better => lower,
                               measure => measure(Metric),
                               params => maps:with([<<"module">>, <<"input">>], Params),
                               extra => Extra}).

%% Time on an overloaded machine: a regression or an improvement stands
%% only when the sign test is significant at 1 - far_confidence (0.001,
%% over the family like alpha) too; reductions and memory keep their
%% verdicts.
load_aware(#{verdict := V, p_value := P} = Paired, time, #{overloaded := true, far_alpha := Far})
  when V =:= regressed; V =:= improved ->
    case P < Far of
        true -> Paired;
        false -> Paired#{verdict := inconclusive_load}
    end;
load_aware(Paired, _Metric, _Stats) ->
    Paired.

status_name(compared) -> compared;
status_name({S, _}) -> S.

%% What an entry of METRIC measures, in words, for the report's titles.
measure(time) -> <<"wall-clock time per iteration">>;
measure(cpu) -> <<"CPU time per iteration">>;
measure(reductions) -> <<"reductions per iteration">>;
measure(memory) -> <<"memory per iteration">>.

unit(time) -> {<<"ns">>, "time per iteration"};
unit(cpu) -> {<<"ns">>, "CPU time per iteration"};
unit(reductions) -> {<<"reductions">>, "reductions per iteration"};
unit(memory) -> {<<"words">>, "words allocated per iteration"}.

paired_json(P) ->
    maps:with([change, ci, confidence, ci_coverage, p_value, test, higher, lower, ties, n,
               median_base, median_new, threshold, alpha, detectable, verdict], P).

%% @doc What the gate fails on: `{Group, Metric, Paired}' for every gated
%% metric whose verdict is `regressed'.
-spec regressions(beamlab_result:result()) -> [{binary(), binary(), beamlab_json:object()}].
regressions(#{benchmarks := Bs}) ->
    [{G, M, P} || #{group := G, metric := M,
                    extra := #{<<"gated">> := true,
                               <<"paired">> := #{<<"verdict">> := <<"regressed">>} = P}} <- Bs].

%% @doc The benchmarks that fail on the head although they ran on the base.
-spec failed_head(beamlab_result:result()) -> [binary()].
failed_head(#{benchmarks := Bs}) ->
    lists:usort([G || #{group := G, extra := #{<<"status">> := <<"failed_head">>}} <- Bs]).

regression_text({Group, Metric, #{<<"change">> := C}}) ->
    io_lib:format("~ts: ~ts ~ts", [Group, Metric, beamlab_format_units:signed_percent(C)]).

%% @doc One line for an error of a check.
-spec format_error(error_reason()) -> iolist().
format_error(Reason) ->
    beamlab_format_reason:line(fun error_line/1, Reason).

error_line({tmp_dir, Why}) ->
    ["cannot create a temporary directory: ", beamlab_runtime_file:format_error(Why)];
error_line({logs_dir, Dir, Why}) ->
    io_lib:format("cannot create ~ts for the build logs: ~ts", [Dir, beamlab_runtime_file:format_error(Why)]);
error_line({normalize, File, Why}) ->
    io_lib:format("cannot rewrite ~ts: ~ts", [File, beamlab_runtime_file:format_error(Why)]);
error_line({write_code, _, _} = R) ->
    beamlab_runtime_peer:format_error(R);
error_line({side, Side, Msg}) ->
    io_lib:format("the benchmarks cannot run on the ~ts side: ~ts", [Side, Msg]);
error_line({build_failed, _, _, _, _} = R) ->
    beamlab_project_build:format_error(R);
error_line({R, _} = E) when R =:= not_a_repository; R =:= unknown_ref; R =:= worktree; R =:= git ->
    beamlab_project_git:format_error(E);
error_line(Other) ->
    beamlab_project_bench:format_error(Other).
