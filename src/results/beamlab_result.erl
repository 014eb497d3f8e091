%%% @doc The result document: one map per measuring run, the same in
%%% memory, on screen as JSON and in saved files (schema `beamlab.result',
%%% see docs/result-format.md).
%%%
%%% Producers build it with {@link new/2}, {@link benchmark/3} and
%%% {@link finish/2}; consumers (output, compare, report) read it after
%%% {@link normalize/1}, which gives exactly what {@link load/1} gives for a
%%% saved file: structural keys are atoms, everything below `params',
%%% `counters', `extra', `env' and `telemetry' has binary keys, enumerated
%%% values (verdicts, units) are binaries, confidence intervals are
%%% `{Lo, Hi}' tuples.
-module(beamlab_result).

-export([new/2, benchmark/3, add_benchmarks/2, finish/2, normalize/1,
         save/2, load/1, to_json/1, from_json/1, default_path/1,
         write_atomic/2, schema/0, version/0, format_error/1]).

-define(SCHEMA, <<"beamlab.result">>).
-define(VERSION, 1).

-type result() :: #{atom() => term()}.
-type benchmark() :: #{atom() => term()}.
-export_type([result/0, benchmark/0]).

%% @doc The schema name written in every document.
-spec schema() -> binary().
schema() -> ?SCHEMA.

%% @doc The current format version. Readers accept this version and older.
-spec version() -> pos_integer().
version() -> ?VERSION.

%% @doc A new, empty document for a run of `Kind' (bench, suite, matrix,
%% amqp). `Opts' may give `params' and `command' (argv; defaults to the
%% current command line).
-spec new(atom() | binary(), #{params => map(), command => [string() | binary()]}) -> result().
new(Kind, Opts) ->
    #{schema => ?SCHEMA,
      version => ?VERSION,
      tool => #{name => <<"beamlab">>, version => list_to_binary(beamlab_cli:version())},
      kind => to_bin(Kind),
      command => [to_bin(A) || A <- maps:get(command, Opts, beamlab_cli:argv())],
      started_at => now_rfc3339(),
      partial => false,
      params => maps:get(params, Opts, #{}),
      benchmarks => [],
      telemetry => #{},
      findings => [],
      extra => #{}}.

%% @doc A benchmark entry with its statistics computed from `Samples'.
%% `Opts': `metric', `unit', `better' (higher | lower), `group', `params',
%% `counters', `extra', `comparison'. An empty sample list gives a
%% benchmark with no `stats' (for example, a job that failed), which must
%% then carry an `error' in `extra'.
-spec benchmark(unicode:chardata(), [number()], map()) -> benchmark().
benchmark(Name, Samples, Opts) ->
    Base = #{name => to_bin(Name),
             group => to_bin(maps:get(group, Opts, <<>>)),
             metric => to_bin(maps:get(metric, Opts, <<"value">>)),
             unit => to_bin(maps:get(unit, Opts, <<>>)),
             better => to_bin(maps:get(better, Opts, higher)),
             samples => Samples,
             sample_info => #{count => length(Samples), kept => length(Samples), method => <<"all">>},
             params => maps:get(params, Opts, #{}),
             counters => maps:get(counters, Opts, #{}),
             extra => maps:get(extra, Opts, #{})},
    WithStats = case Samples of
                    [] -> Base;
                    _ -> Base#{stats => beamlab_stats:summary(Samples)}
                end,
    case maps:find(comparison, Opts) of
        {ok, C} -> WithStats#{comparison => C};
        error -> WithStats
    end.

%% @doc Appends benchmarks to a document.
-spec add_benchmarks(result(), [benchmark()]) -> result().
add_benchmarks(R = #{benchmarks := Old}, New) ->
    R#{benchmarks := Old ++ New}.

%% @doc Completes a document: finish time, `partial' flag, and the
%% environment report (unless the producer attached one already, e.g. the
%% report of a remote VM).
-spec finish(result(), #{partial => boolean()}) -> result().
finish(R, Opts) ->
    R1 = R#{finished_at => now_rfc3339(), partial => maps:get(partial, Opts, false)},
    case maps:is_key(env, R1) of
        true -> R1;
        false -> R1#{env => beamlab_env:report()}
    end.

%% @doc The document as it reads back from JSON (see the module doc).
-spec normalize(result()) -> result().
normalize(R) ->
    {ok, Json} = beamlab_json:decode(to_json(R)),
    {ok, N} = from_json(Json),
    N.

%% @doc Writes the document to `Path' atomically (temporary file, then
%% rename), creating missing directories. A directory `Path' gets a
%% default file name inside it.
-spec save(result(), file:filename()) -> {ok, file:filename()} | {error, term()}.
save(R = #{kind := Kind}, Path0) ->
    Path = case filelib:is_dir(Path0) of
               true -> filename:join(Path0, filename:basename(default_path(Kind)));
               false -> Path0
           end,
    case write_atomic(Path, to_json(R)) of
        ok -> {ok, Path};
        {error, Reason} -> {error, {save, Path, Reason}}
    end.

%% @doc Reads and checks a saved document.
-spec load(file:filename()) -> {ok, result()} | {error, term()}.
load(Path) ->
    case file:read_file(Path) of
        {ok, Bin} ->
            case beamlab_json:decode(Bin) of
                {ok, Json} ->
                    case from_json(Json) of
                        {ok, R} -> {ok, R};
                        {error, Reason} -> {error, {load, Path, Reason}}
                    end;
                {error, Reason} -> {error, {load, Path, {json, Reason}}}
            end;
        {error, Reason} -> {error, {load, Path, Reason}}
    end.

%% @doc Pretty JSON text of a document.
-spec to_json(result()) -> iodata().
to_json(R) ->
    [beamlab_json:encode(R, #{pretty => true}), $\n].

%% @doc Turns decoded JSON back into a document, checking schema and
%% version.
-spec from_json(beamlab_json:json()) -> {ok, result()} | {error, term()}.
from_json(#{<<"schema">> := ?SCHEMA, <<"version">> := V} = Json) when is_integer(V), V =< ?VERSION ->
    {ok, restore(Json)};
from_json(#{<<"schema">> := ?SCHEMA, <<"version">> := V}) ->
    {error, {newer_version, V}};
from_json(_) ->
    {error, not_a_result}.

%% @doc The default file of `--save' without a path.
-spec default_path(binary() | atom()) -> file:filename().
default_path(Kind) ->
    {{Y, Mo, D}, {H, Mi, S}} = calendar:local_time(),
    Name = io_lib:format("~ts-~4..0b~2..0b~2..0b-~2..0b~2..0b~2..0b.json", [to_bin(Kind), Y, Mo, D, H, Mi, S]),
    filename:join("beamlab-results", lists:flatten(Name)).

%% @doc Writes `Data' to `Path' so that readers see the old file or the
%% whole new one, never a part: write a temporary file beside it, sync,
%% rename.
-spec write_atomic(file:filename(), iodata()) -> ok | {error, term()}.
write_atomic(Path, Data) ->
    Tmp = lists:flatten(io_lib:format("~ts.~s.tmp", [Path, os:getpid()])),
    case filelib:ensure_dir(Path) of
        ok ->
            case file:write_file(Tmp, Data, [raw, sync]) of
                ok ->
                    case file:rename(Tmp, Path) of
                        ok -> ok;
                        {error, _} = E -> _ = file:delete(Tmp), E
                    end;
                {error, _} = E -> _ = file:delete(Tmp), E
            end;
        {error, _} = E -> E
    end.

%% @doc One line for an error returned by this module.
-spec format_error(term()) -> iolist().
format_error({save, Path, Reason}) ->
    io_lib:format("cannot save results to ~ts: ~ts", [Path, file:format_error(Reason)]);
format_error({load, Path, enoent}) ->
    io_lib:format("~ts: no such file", [Path]);
format_error({load, Path, {json, Reason}}) ->
    io_lib:format("~ts is not a beamlab result (~ts)", [Path, beamlab_json:format_error(Reason)]);
format_error({load, Path, not_a_result}) ->
    io_lib:format("~ts is not a beamlab result file (no \"schema\": \"beamlab.result\")", [Path]);
format_error({load, Path, {newer_version, V}}) ->
    io_lib:format("~ts has result format version ~p, newer than this beamlab reads (~b): "
                  "upgrade beamlab", [Path, V, ?VERSION]);
format_error({load, Path, Reason}) ->
    io_lib:format("cannot read ~ts: ~ts", [Path, file:format_error(Reason)]).

%%--------------------------------------------------------------------

%% Keys that become atoms again when a document is read. Everything else
%% (user parameters, counters, env details) stays binary: a saved file must
%% never be able to create atoms.
-define(STRUCTURAL,
        [schema, version, tool, name, kind, command, started_at, finished_at, partial,
         env, params, benchmarks, telemetry, findings, extra, group, metric, unit, better,
         samples, sample_info, count, kept, method, stats, counters, comparison, error,
         n, mean, sd, cv, median, min, max, p1, p5, p10, p25, p75, p90, p95, p99, p999,
         ci_mean, ci_median, ci_median_exact, confidence, outliers, low, high, low_severe,
         high_severe, iqr, too_few, change, ci, p_value, p_value_welch, test, verdict, n_base,
         n_new, baseline, id, severity, title, evidence, advice, data, ci_median_coverage, ci_method,
         p_value_mann_whitney, mann_whitney_method, mean_base, mean_new, min_change, exact]).
-define(OPAQUE, [<<"params">>, <<"counters">>, <<"extra">>, <<"env">>, <<"telemetry">>,
                 <<"data">>]).
-define(INTERVALS, [<<"ci">>, <<"ci_mean">>, <<"ci_median">>]).

restore(M) when is_map(M) ->
    maps:fold(fun(K, V, Acc) -> Acc#{atom_key(K) => restore_value(K, V)} end, #{}, M);
restore(L) when is_list(L) ->
    [restore(X) || X <- L];
restore(X) ->
    X.

restore_value(K, V) ->
    case lists:member(K, ?OPAQUE) of
        true -> V;
        false ->
            case {lists:member(K, ?INTERVALS), V} of
                {true, [Lo, Hi]} -> {Lo, Hi};
                _ -> restore(V)
            end
    end.

atom_key(K) ->
    case [A || A <- ?STRUCTURAL, atom_to_binary(A, utf8) =:= K] of
        [A] -> A;
        [] -> K
    end.

to_bin(B) when is_binary(B) -> B;
to_bin(A) when is_atom(A) -> atom_to_binary(A, utf8);
to_bin(L) -> unicode:characters_to_binary(L).

now_rfc3339() ->
    list_to_binary(calendar:system_time_to_rfc3339(erlang:system_time(millisecond),
                                                   [{unit, millisecond}])).
