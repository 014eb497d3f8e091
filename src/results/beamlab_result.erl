%%% @doc The result document: one typed value per measuring run, the same
%%% in memory, on screen as JSON and in saved files (schema
%%% `beamlab.result', see docs/result-format.md).
%%%
%%% Producers build it with {@link new/2}, {@link benchmark/3},
%%% {@link set/3} and {@link finish/2}; the command line, the clock and
%%% the environment report are passed in by the caller, never read here.
%%% Structural keys are atoms, enumerations are atoms (kind, better,
%%% verdict, severity, sample method, test), intervals are `{Lo, Hi}'
%%% tuples. The free-form sections (`params', `counters', `extra', `env',
%%% `telemetry', a finding's `data') are JSON objects (binary keys) from the
%%% moment they enter the document, so a document reads the same whether
%%% it was just measured or loaded from a file.
%%%
%%% {@link to_json/1} and {@link from_json/1} are the one JSON boundary:
%%% `from_json/1' validates every field and turns known strings into atoms
%%% through fixed tables; anything malformed is an error that
%%% {@link format_error/1} explains in one line. No atom is ever made from
%%% file input.
-module(beamlab_result).

-include_lib("kernel/include/file.hrl").

-export([new/2, benchmark/3, add_benchmarks/2, set/3, add_findings/2, finish/2,
         finding/6, bound_samples/2, save/2, save/3, load/1, to_json/1, from_json/1, default_path/2, default_dir/0,
         schema/0, version/0, tool_version/0, limits/0, format_error/1]).

-define(SCHEMA, <<"beamlab.result">>).
-define(VERSION, 1).
%% Limits on what `load/1' reads, checked before parsing so that a crafted
%% file costs bounded memory and time. beamlab itself saves at most 10,000
%% samples per benchmark: its files are far below every limit.
-define(MAX_FILE_BYTES, 64 * 1024 * 1024).
%% JSON values, counted as separators (`,') before the file is parsed.
-define(MAX_VALUES, 2000000).
%% Samples in one benchmark.
-define(MAX_BENCH_SAMPLES, 100000).
%% The magnitude of any number in a document, and the smallest non-zero
%% magnitude of a sample. Every statistic beamlab computes over a file
%% (sums of 100,000 samples, squares, ratios of means, the Welch degrees
%% of freedom with its fourth powers) stays a finite float inside these
%% bounds; a 901-digit integer or 1.79e308 used to end `compare' and
%% `report' in badarith. Real samples (times, rates, bytes) are far inside.
-define(MAX_NUMBER, 1.0e60).
-define(MIN_SAMPLE, 1.0e-60).

-type kind() :: bench | suite | matrix | amqp | profile | watch | check | doctor | capture.
-type better() :: higher | lower.
-type severity() :: info | warning | critical.
-type sample_method() :: all | reservoir.
-type object() :: beamlab_json:object().
-type timestamp() :: binary().
-type sample_info() :: #{count := non_neg_integer(), kept := non_neg_integer(),
                         method := sample_method()}.
-type stats() :: beamlab_stats:summary().
-type comparison() :: beamlab_stats:comparison().
-type finding() :: #{id := binary(), severity := severity(), title := binary(),
                     evidence := binary(), advice := binary(), data := object()}.
-type benchmark() :: #{name := binary(), group := binary(), metric := binary(),
                       unit := binary(), better := better(), samples := [number()],
                       sample_info := sample_info(), params := object(),
                       counters := object(), extra := object(),
                       measure => binary(),
                       stats => stats(), comparison => comparison()}.
-type result() :: #{schema := binary(), version := pos_integer(),
                    tool := #{name := binary(), version := binary()},
                    kind := kind(), command := [binary()],
                    started_at := timestamp(), finished_at => timestamp(),
                    partial := boolean(), env := object(), params := object(),
                    benchmarks := [benchmark()], telemetry := object(),
                    findings := [finding()], extra := object()}.
-type section() :: env | params | telemetry | extra.
-type new_opts() :: #{command := [unicode:chardata()], started_at := timestamp(),
                      params => map()}.
-type benchmark_opts() :: #{metric => unicode:chardata() | atom(),
                            unit => unicode:chardata() | atom(),
                            better => better(), group => unicode:chardata() | atom(),
                            params => map(), counters => map(), extra => map(),
                            measure => unicode:chardata(), comparison => comparison()}.
-type finish_opts() :: #{finished_at := timestamp(), partial := boolean()}.
-type error_reason() :: {save, file:filename_all(), term()}
                      | {load, file:filename_all(), term()}
                      | not_a_result | {newer_version, pos_integer()}
                      | {bad_field, [binary() | non_neg_integer()],
                         atom() | {too_many_samples, pos_integer()} | out_of_range | too_small}.
-export_type([result/0, benchmark/0, finding/0, kind/0, better/0, severity/0,
              stats/0, comparison/0, object/0, sample_info/0, section/0, error_reason/0]).

%% @doc The schema name written in every document.
-spec schema() -> binary().
schema() -> ?SCHEMA.

%% @doc The current format version. Readers accept this version and older.
-spec version() -> pos_integer().
version() -> ?VERSION.

%% @doc beamlab's version, from the application resource file.
-spec tool_version() -> binary().
tool_version() ->
    _ = application:load(beamlab),
    case application:get_key(beamlab, vsn) of
        {ok, Vsn} -> list_to_binary(Vsn);
        undefined -> <<"unknown">>
    end.

%% @doc A new, empty document for a run of `Kind'. The caller gives the
%% command line and the start time; `params' are the command's options.
-spec new(kind(), new_opts()) -> result().
new(Kind, #{command := Command, started_at := Started} = Opts) ->
    #{schema => ?SCHEMA,
      version => ?VERSION,
      tool => #{name => <<"beamlab">>, version => tool_version()},
      kind => Kind,
      command => [text(A) || A <- Command],
      started_at => Started,
      partial => false,
      env => #{},
      params => object(maps:get(params, Opts, #{})),
      benchmarks => [],
      telemetry => #{},
      findings => [],
      extra => #{}}.

%% @doc A benchmark entry with its statistics computed from `Samples'. An
%% empty sample list gives a benchmark with no `stats' (for example, a job
%% that failed), which then carries an `error' in `extra'.
-spec benchmark(unicode:chardata() | atom(), [number()], benchmark_opts()) -> benchmark().
benchmark(Name, Samples, Opts) ->
    Base = #{name => text(Name),
             group => text(maps:get(group, Opts, <<>>)),
             metric => text(maps:get(metric, Opts, <<"value">>)),
             unit => text(maps:get(unit, Opts, <<>>)),
             better => maps:get(better, Opts, higher),
             samples => Samples,
             sample_info => #{count => length(Samples), kept => length(Samples), method => all},
             params => object(maps:get(params, Opts, #{})),
             counters => object(maps:get(counters, Opts, #{})),
             extra => object(maps:get(extra, Opts, #{}))},
    Measured = case maps:find(measure, Opts) of
                   {ok, M} -> Base#{measure => text(M)};
                   error -> Base
               end,
    WithStats = case Samples of
                    [] -> Measured;
                    _ -> Measured#{stats => beamlab_stats:summary(Samples)}
                end,
    case maps:find(comparison, Opts) of
        {ok, C} -> WithStats#{comparison => C};
        error -> WithStats
    end.

%% @doc Appends benchmarks to a document.
-spec add_benchmarks(result(), [benchmark()]) -> result().
add_benchmarks(R = #{benchmarks := Old}, New) ->
    R#{benchmarks := Old ++ New}.

%% @doc Sets a free-form section (`env', `params', `telemetry', `extra')
%% from any map of terms: it is stored as the JSON object it encodes to.
-spec set(section(), map(), result()) -> result().
set(Section, Value, R) when Section =:= env; Section =:= params; Section =:= telemetry;
                            Section =:= extra ->
    R#{Section => object(Value)}.

%% @doc Appends findings to a document.
-spec add_findings(result(), [finding()]) -> result().
add_findings(R = #{findings := Old}, New) ->
    R#{findings := Old ++ New}.

%% @doc A finding (a detector's or a pre-flight check's diagnosis).
-spec finding(unicode:chardata() | atom(), severity(), unicode:chardata(), unicode:chardata(),
              unicode:chardata(), map()) -> finding().
finding(Id, Severity, Title, Evidence, Advice, Data) ->
    #{id => text(Id), severity => Severity, title => text(Title), evidence => text(Evidence),
      advice => text(Advice), data => object(Data)}.

%% @doc Completes a document with its finish time and `partial' flag.
-spec finish(result(), finish_opts()) -> result().
finish(R, #{finished_at := At, partial := Partial}) ->
    R#{finished_at => At, partial => Partial}.

%% @doc Keeps at most `Max' raw samples per benchmark: a uniform reservoir
%% sample (`beamlab_stats_reservoir', seeded by the benchmark name so that
%% saving twice gives the same file). `stats' stay those of every sample;
%% `sample_info' records count, kept and method.
-spec bound_samples(result(), pos_integer()) -> result().
bound_samples(R = #{benchmarks := Bs}, Max) ->
    R#{benchmarks := [bound_benchmark(B, Max) || B <- Bs]}.

bound_benchmark(B = #{name := Name, samples := Samples, sample_info := Info}, Max)
  when length(Samples) > Max ->
    Res = beamlab_stats_reservoir:add_all(
            beamlab_stats_reservoir:new(Max, #{seed => erlang:phash2(Name)}), Samples),
    B#{samples := beamlab_stats_reservoir:samples(Res),
       sample_info := Info#{kept := Max, method := reservoir}};
bound_benchmark(B, _Max) ->
    B.

%% @doc Writes the document to `Path' atomically, creating missing
%% directories. A directory `Path' gets the default file name inside it;
%% that name never replaces an existing file (a `-2', `-3'... suffix is
%% added), and neither does `{new, Path}'.
-spec save(result(), file:filename() | {new, file:filename()}) ->
          {ok, file:filename()} | {error, error_reason()}.
save(R, {new, Path}) ->
    save(R, Path, new);
save(R = #{kind := Kind, started_at := Started}, Path) ->
    case beamlab_runtime_file:check_target(Path) of
        {ok, directory} -> save(R, filename:join(Path, filename:basename(default_path(Kind, Started))), new);
        {ok, _} -> save(R, Path, replace);
        {error, Why} -> {error, {save, Path, Why}}
    end.

%% @doc As {@link save/2}: `replace' writes `Path' under the output-path
%% policy (`beamlab_runtime_file:write/2': a file atomically, a device or
%% standard output in place); `new' picks the first free name among
%% `Path', `Path-2', `Path-3'...
-spec save(result(), file:filename(), replace | new) ->
          {ok, file:filename()} | {error, error_reason()}.
save(R, Path, replace) ->
    case beamlab_runtime_file:write(Path, to_json(R)) of
        {ok, _} -> {ok, Path};
        {error, Reason} -> {error, {save, Path, Reason}}
    end;
save(R, Path, new) ->
    case beamlab_runtime_file:write_unique(Path, to_json(R)) of
        {ok, Written} -> {ok, Written};
        {error, {Candidate, Reason}} -> {error, {save, Candidate, Reason}}
    end.

%% @doc The limits {@link load/1} enforces (see docs/reliability.md):
%% file size in bytes, JSON values in the file, samples per benchmark.
%% `number' is the largest magnitude of any number, `sample_min' the
%% smallest non-zero magnitude of a sample.
-spec limits() -> #{file_bytes := pos_integer(), values := pos_integer(),
                    samples := pos_integer(), number := float(), sample_min := float()}.
limits() ->
    #{file_bytes => ?MAX_FILE_BYTES, values => ?MAX_VALUES, samples => ?MAX_BENCH_SAMPLES,
      number => ?MAX_NUMBER, sample_min => ?MIN_SAMPLE}.

%% @doc Reads and checks a saved document. Files beyond {@link limits/0}
%% are refused before they are parsed.
-spec load(file:filename()) -> {ok, result()} | {error, error_reason()}.
load(Path) ->
    %% Bounded in size and time, whatever the file is (a FIFO, /dev/zero):
    %% beamlab_runtime_file:read/2.
    case beamlab_runtime_file:read(Path, ?MAX_FILE_BYTES) of
        {ok, Bin} ->
            case count_separators(Bin, 0) of
                N when N > ?MAX_VALUES -> {error, {load, Path, {too_many_values, N}}};
                _ ->
                    case beamlab_json:decode(Bin) of
                        {ok, Json} ->
                            case from_json(Json) of
                                {ok, R} -> {ok, R};
                                {error, Reason} -> {error, {load, Path, Reason}}
                            end;
                        {error, Reason} -> {error, {load, Path, {json, Reason}}}
                    end
            end;
        {error, Reason} -> {error, {load, Path, Reason}}
    end.

count_separators(<<$,, Rest/binary>>, N) -> count_separators(Rest, N + 1);
count_separators(<<_, Rest/binary>>, N) -> count_separators(Rest, N);
count_separators(<<>>, N) -> N.

%% @doc Pretty JSON text of a document.
-spec to_json(result()) -> iodata().
to_json(R) ->
    [beamlab_json:encode(R, #{pretty => true}), $\n].

%% @doc Turns decoded JSON into a document, checking every field.
-spec from_json(beamlab_json:json()) -> {ok, result()} | {error, error_reason()}.
from_json(#{<<"schema">> := ?SCHEMA, <<"version">> := V} = Json) when is_integer(V), V >= 1, V =< ?VERSION ->
    try
        bound_numbers(Json, []),
        {ok, doc(Json)}
    catch throw:{bad_field, Path, Expected} -> {error, {bad_field, lists:reverse(Path), Expected}}
    end;
from_json(#{<<"schema">> := ?SCHEMA, <<"version">> := V}) when is_integer(V), V > ?VERSION ->
    {error, {newer_version, V}};
from_json(#{<<"schema">> := ?SCHEMA}) ->
    {error, {bad_field, [<<"version">>], version}};
from_json(_) ->
    {error, not_a_result}.

%% @doc The default file of `--save' without a path: named after the kind
%% and the start time of the run.
-spec default_path(kind(), timestamp()) -> file:filename().
default_path(Kind, StartedAt) ->
    Stamp = [C || C <- binary_to_list(StartedAt), C >= $0, C =< $9],
    {Date, Rest} = lists:split(min(8, length(Stamp)), Stamp),
    Time = lists:sublist(Rest, 6),
    filename:join(default_dir(), lists:flatten([atom_to_list(Kind), "-", Date, "-", Time, ".json"])).

%% @doc The directory of {@link default_path/2}.
-spec default_dir() -> file:filename().
default_dir() ->
    "beamlab-results".

%% @doc One line for an error returned by this module.
-spec format_error(error_reason()) -> iolist().
format_error(Reason) ->
    beamlab_format_reason:line(fun error_line/1, Reason).

error_line({save, Path, Reason}) ->
    io_lib:format("cannot save results to ~ts: ~ts", [Path, save_error(Path, Reason)]);
error_line({load, Path, enoent}) ->
    io_lib:format("~ts: no such file", [Path]);
error_line({load, Path, {json, Reason}}) ->
    io_lib:format("~ts is not a beamlab result (~ts)", [Path, beamlab_json:format_error(Reason)]);
error_line({load, Path, {too_large, _Max}}) ->
    io_lib:format("~ts is too large for a beamlab result (more than ~b bytes)", [Path, ?MAX_FILE_BYTES]);
error_line({load, Path, {too_many_values, N}}) ->
    io_lib:format("~ts holds too many values for a beamlab result (~b; at most ~b)",
                  [Path, N, ?MAX_VALUES]);
error_line({load, Path, eisdir}) ->
    io_lib:format("~ts is a directory, not a result file", [Path]);
error_line({load, Path, Reason}) when is_atom(Reason) ->
    case Reason of
        not_a_result -> format_error_in(Path, not_a_result);
        _ -> io_lib:format("cannot read ~ts: ~ts", [Path, file:format_error(Reason)])
    end;
error_line({load, Path, {Read, _} = Reason}) when Read =:= no_writer ->
    io_lib:format("cannot read ~ts: ~ts", [Path, beamlab_runtime_file:format_error(Reason)]);
error_line({load, Path, {special, _, _} = Reason}) ->
    io_lib:format("cannot read ~ts: ~ts", [Path, beamlab_runtime_file:format_error(Reason)]);
error_line({load, Path, Reason}) ->
    format_error_in(Path, Reason);
error_line(Reason) ->
    format_error_in(<<"result">>, Reason).

format_error_in(Path, not_a_result) ->
    io_lib:format("~ts is not a beamlab result file (no \"schema\": \"beamlab.result\")", [Path]);
format_error_in(Path, {newer_version, V}) ->
    io_lib:format("~ts has result format version ~b, newer than this beamlab reads (~b): "
                  "upgrade beamlab", [Path, V, ?VERSION]);
format_error_in(Path, {bad_field, Field, {too_many_samples, N}}) ->
    io_lib:format("~ts is not a valid beamlab result: ~ts has ~b samples (at most ~b)",
                  [Path, field_path(Field), N, ?MAX_BENCH_SAMPLES]);
format_error_in(Path, {bad_field, Field, out_of_range}) ->
    io_lib:format("~ts is not a valid beamlab result: ~ts is out of range (numbers in a result "
                  "are at most ~s in magnitude)", [Path, field_path(Field), "1e60"]);
format_error_in(Path, {bad_field, Field, too_small}) ->
    io_lib:format("~ts is not a valid beamlab result: ~ts is too small (a sample is 0 or at "
                  "least ~s in magnitude)", [Path, field_path(Field), "1e-60"]);
format_error_in(Path, {bad_field, Field, Expected}) ->
    io_lib:format("~ts is not a valid beamlab result: ~ts must be ~ts",
                  [Path, field_path(Field), expected(Expected)]);
format_error_in(_Path, Other) ->
    %% (a reason of no kind above: printed, never raised)
    beamlab_format_reason:term(Other).

%% "file already exists" from mkdir when a file stands where a directory
%% is needed: name that file instead.
save_error(Path, Reason) when Reason =:= eexist; Reason =:= enotdir ->
    case beamlab_runtime_file:check_target(Path) of
        {error, Why} -> beamlab_runtime_file:format_error(Why);
        {ok, _} -> file_error(Reason)
    end;
save_error(_Path, Reason) ->
    file_error(Reason).

file_error(Reason) -> beamlab_runtime_file:format_error(Reason).

%% benchmarks[0].samples
field_path([First | Rest]) ->
    [field_name(First) | [case F of
                              I when is_integer(I) -> ["[", integer_to_list(I), "]"];
                              B -> [".", field_name(B)]
                          end || F <- Rest]].

field_name(I) when is_integer(I) -> ["[", integer_to_list(I), "]"];
field_name(B) -> B.

expected(string) -> "a string";
expected(number) -> "a number";
expected(integer) -> "a non-negative integer";
expected(boolean) -> "true or false";
expected(object) -> "an object";
expected(list) -> "a list";
expected(numbers) -> "a list of numbers";
expected(strings) -> "a list of strings";
expected(interval) -> "a pair of numbers [low, high]";
expected(kind) -> "one of bench, suite, matrix, amqp, profile, watch, check, doctor, capture";
expected(better) -> "higher or lower";
expected(severity) -> "one of info, warning, critical";
expected(method) -> "all or reservoir";
expected(verdict) -> "one of faster, slower, no_difference, too_few_samples, inconclusive_load";
expected(test) -> "one of welch_log, welch_log_robust, welch, mann_whitney, none";
expected(ci_method) -> "one of log_welch, welch, fieller, none";
expected(mw_method) -> "one of exact, normal, none";
expected(version) -> "a format version (1, 2, ...)";
expected(present) -> "present".

%%--------------------------------------------------------------------
%% Decoding: one function per part of the document. Each field is read
%% with its expected type; the path of the field is kept for the error.

-define(ENUMS,
        #{kind => [bench, suite, matrix, amqp, profile, watch, check, doctor, capture],
          better => [higher, lower],
          severity => [info, warning, critical],
          method => [all, reservoir],
          verdict => [faster, slower, no_difference, too_few_samples, inconclusive_load],
          %% mann_whitney and fieller: written by beamlab before 0.2, still read.
          test => [welch_log, welch_log_robust, welch, mann_whitney, none],
          ci_method => [log_welch, welch, fieller, none],
          mw_method => [exact, normal, none]}).

doc(J) ->
    P = [],
    Doc = #{schema => ?SCHEMA,
      version => ?VERSION,
      tool => tool(opt(<<"tool">>, J, #{}), P),
      kind => field(<<"kind">>, J, kind, P),
      command => field(<<"command">>, J, strings, P, []),
      started_at => field(<<"started_at">>, J, string, P, <<>>),
      partial => field(<<"partial">>, J, boolean, P, false),
      env => field(<<"env">>, J, object, P, #{}),
      params => field(<<"params">>, J, object, P, #{}),
      benchmarks => [benchmark_json(B, [I, <<"benchmarks">>])
                     || {I, B} <- indexed(field(<<"benchmarks">>, J, list, P, []))],
      telemetry => field(<<"telemetry">>, J, object, P, #{}),
      findings => [finding_json(F, [I, <<"findings">>])
                   || {I, F} <- indexed(field(<<"findings">>, J, list, P, []))],
      extra => field(<<"extra">>, J, object, P, #{})},
    case maps:is_key(<<"finished_at">>, J) of
        true -> Doc#{finished_at => field(<<"finished_at">>, J, string, P)};
        false -> Doc
    end.

tool(T, P) when is_map(T) ->
    #{name => field(<<"name">>, T, string, [<<"tool">> | P], <<"beamlab">>),
      version => field(<<"version">>, T, string, [<<"tool">> | P], <<"unknown">>)};
tool(_, P) ->
    throw({bad_field, [<<"tool">> | P], object}).

benchmark_json(B, P) when is_map(B) ->
    Samples = field(<<"samples">>, B, numbers, P, []),
    case length(Samples) of
        Many when Many > ?MAX_BENCH_SAMPLES ->
            throw({bad_field, [<<"samples">> | P], {too_many_samples, Many}});
        _ -> ok
    end,
    Base = #{name => field(<<"name">>, B, string, P),
             group => field(<<"group">>, B, string, P, <<>>),
             metric => field(<<"metric">>, B, string, P, <<"value">>),
             unit => field(<<"unit">>, B, string, P, <<>>),
             better => field(<<"better">>, B, better, P, higher),
             samples => Samples,
             sample_info => sample_info(opt(<<"sample_info">>, B, #{}), length(Samples),
                                        [<<"sample_info">> | P]),
             params => field(<<"params">>, B, object, P, #{}),
             counters => field(<<"counters">>, B, object, P, #{}),
             extra => field(<<"extra">>, B, object, P, #{})},
    Measured = case opt(<<"measure">>, B, null) of
                   null -> legacy_measure(Base);
                   _ -> Base#{measure => field(<<"measure">>, B, string, P)}
               end,
    S = case opt(<<"stats">>, B, null) of
            null -> Measured;
            Stats -> Measured#{stats => stats(Stats, [<<"stats">> | P])}
        end,
    case opt(<<"comparison">>, B, null) of
        null -> S;
        C -> S#{comparison => comparison(C, [<<"comparison">> | P])}
    end;
benchmark_json(_, P) ->
    throw({bad_field, P, object}).

%% What a benchmark of a document written before `measure' (#35)
%% measured when its unit alone does not say it, read once here from
%% the only signs such a document has: `--metric cpu' (a suite's
%% `NAME/cpu' holds one value per repetition) and a check's
%% `G (metric)' entries; none for the rest, as before.
legacy_measure(#{metric := <<"cpu">>, name := Name} = B) ->
    case binary:longest_common_suffix([Name, <<"/cpu">>]) =:= 4 of
        true -> B#{measure => <<"CPU time per repetition">>};
        false -> B#{measure => <<"CPU time per iteration">>}
    end;
legacy_measure(#{metric := M, group := G, name := Name} = B) when Name =:= <<G/binary, " (", M/binary, ")">> ->
    case M of
        <<"time">> -> B#{measure => <<"wall-clock time per iteration">>};
        <<"reductions">> -> B#{measure => <<"reductions per iteration">>};
        <<"memory">> -> B#{measure => <<"memory per iteration">>};
        _ -> B
    end;
legacy_measure(B) ->
    B.

sample_info(I, N, P) when is_map(I) ->
    #{count => field(<<"count">>, I, integer, P, N),
      kept => field(<<"kept">>, I, integer, P, N),
      method => field(<<"method">>, I, method, P, all)};
sample_info(_, _, P) ->
    throw({bad_field, P, object}).

-define(STAT_NUMBERS, [mean, sd, cv, median, min, max, p1, p5, p10, p25, p75, p90, p95, p99,
                       p999, iqr, confidence, ci_median_coverage]).
-define(CI_MEAN_METHODS, [<<"log_delta">>, <<"student">>, <<"none">>]).

stats(S, P) when is_map(S) ->
    Numbers = maps:from_list([{K, field(atom_to_binary(K), S, number, P)}
                              || K <- ?STAT_NUMBERS, maps:is_key(atom_to_binary(K), S)]),
    Outliers = case opt(<<"outliers">>, S, null) of
                   null -> #{};
                   O when is_map(O) ->
                       #{outliers => maps:from_list(
                                       [{K, field(atom_to_binary(K), O, integer, [<<"outliers">> | P], 0)}
                                        || K <- [low, high, low_severe, high_severe]])};
                   _ -> throw({bad_field, [<<"outliers">> | P], object})
               end,
    Optional = maps:from_list(
                 [{ci_mean, field(<<"ci_mean">>, S, interval, P)} || maps:is_key(<<"ci_mean">>, S)] ++
                 [{ci_median, field(<<"ci_median">>, S, interval, P)} || maps:is_key(<<"ci_median">>, S)] ++
                 [{ci_mean_method, binary_to_atom(M)} || M <- [maps:get(<<"ci_mean_method">>, S, none)],
                                                         lists:member(M, ?CI_MEAN_METHODS)] ++
                 [{ci_median_exact, field(<<"ci_median_exact">>, S, boolean, P)}
                  || maps:is_key(<<"ci_median_exact">>, S)] ++
                 [{too_few, field(<<"too_few">>, S, boolean, P)} || maps:is_key(<<"too_few">>, S)]),
    maps:merge(maps:merge(Numbers#{n => field(<<"n">>, S, integer, P)}, Outliers), Optional);
stats(_, P) ->
    throw({bad_field, P, object}).

comparison(C, P) when is_map(C) ->
    Maybe = fun(K, Type) ->
                    case opt(K, C, null) of
                        null -> undefined;
                        _ -> field(K, C, Type, P)
                    end
            end,
    Base = #{change => Maybe(<<"change">>, number),
             ci => Maybe(<<"ci">>, interval),
             p_value => Maybe(<<"p_value">>, number),
             p_value_welch => Maybe(<<"p_value_welch">>, number),
             p_value_mann_whitney => Maybe(<<"p_value_mann_whitney">>, number),
             mean_base => Maybe(<<"mean_base">>, number),
             mean_new => Maybe(<<"mean_new">>, number),
             ci_method => field(<<"ci_method">>, C, ci_method, P, none),
             mann_whitney_method => field(<<"mann_whitney_method">>, C, mw_method, P, none),
             test => field(<<"test">>, C, test, P, none),
             verdict => field(<<"verdict">>, C, verdict, P),
             n_base => field(<<"n_base">>, C, integer, P, 0),
             n_new => field(<<"n_new">>, C, integer, P, 0),
             confidence => field(<<"confidence">>, C, number, P, 0.95)},
    %% (documents before #35's `detectable' and `rejected_*' have no such keys)
    Optional = [{detectable, <<"detectable">>, fun(K) -> Maybe(K, number) end},
                {rejected_base, <<"rejected_base">>, fun(K) -> field(K, C, integer, P) end},
                {rejected_new, <<"rejected_new">>, fun(K) -> field(K, C, integer, P) end}],
    lists:foldl(fun({Key, K, Read}, Acc) ->
                        case maps:is_key(K, C) of
                            true -> Acc#{Key => Read(K)};
                            false -> Acc
                        end
                end, Base, Optional);
comparison(_, P) ->
    throw({bad_field, P, object}).

finding_json(F, P) when is_map(F) ->
    #{id => field(<<"id">>, F, string, P),
      severity => field(<<"severity">>, F, severity, P, info),
      title => field(<<"title">>, F, string, P, <<>>),
      evidence => field(<<"evidence">>, F, string, P, <<>>),
      advice => field(<<"advice">>, F, string, P, <<>>),
      data => field(<<"data">>, F, object, P, #{})};
finding_json(_, P) ->
    throw({bad_field, P, object}).

%% Every number anywhere in the document (free-form sections too: reports
%% compute with them) within ?MAX_NUMBER; samples also not below
%% ?MIN_SAMPLE unless zero. Integers are compared without converting them
%% to floats (a 400-digit one would not convert).
bound_numbers(N, P) when is_integer(N) ->
    (N >= -?MAX_NUMBER andalso N =< ?MAX_NUMBER) orelse throw({bad_field, P, out_of_range}),
    ok;
bound_numbers(N, P) when is_float(N) ->
    abs(N) =< ?MAX_NUMBER orelse throw({bad_field, P, out_of_range}),
    ok;
bound_numbers(M, P) when is_map(M) ->
    maps:foreach(fun(<<"samples">>, L) when is_list(L) -> bound_samples_in(L, 0, [<<"samples">> | P]);
                    (K, V) -> bound_numbers(V, [K | P])
                 end, M);
bound_numbers(L, P) when is_list(L) ->
    bound_list(L, 0, P);
bound_numbers(_, _) ->
    ok.

bound_list([], _, _) -> ok;
bound_list([X | T], I, P) -> bound_numbers(X, [I | P]), bound_list(T, I + 1, P).

bound_samples_in([], _, _) -> ok;
bound_samples_in([X | T], I, P) ->
    bound_numbers(X, [I | P]),
    case X of
        _ when is_number(X), X /= 0, abs(X) < ?MIN_SAMPLE -> throw({bad_field, [I | P], too_small});
        _ -> bound_samples_in(T, I + 1, P)
    end.

indexed(L) ->
    lists:zip(lists:seq(0, length(L) - 1), L).

opt(K, M, Default) ->
    maps:get(K, M, Default).

field(K, M, Type, P) ->
    case maps:find(K, M) of
        {ok, V} -> check(V, Type, [K | P]);
        error -> throw({bad_field, [K | P], present})
    end.

field(K, M, Type, P, Default) ->
    case maps:find(K, M) of
        {ok, V} -> check(V, Type, [K | P]);
        error -> Default
    end.

check(V, string, _) when is_binary(V) -> V;
check(V, number, _) when is_number(V) -> V;
check(V, integer, _) when is_integer(V), V >= 0 -> V;
check(V, boolean, _) when is_boolean(V) -> V;
check(V, object, _) when is_map(V) -> V;
check(V, list, _) when is_list(V) -> V;
check(V, numbers, P) when is_list(V) ->
    case lists:all(fun erlang:is_number/1, V) of
        true -> V;
        false -> throw({bad_field, P, numbers})
    end;
check(V, strings, P) when is_list(V) ->
    case lists:all(fun erlang:is_binary/1, V) of
        true -> V;
        false -> throw({bad_field, P, strings})
    end;
check([Lo, Hi], interval, _) when is_number(Lo), is_number(Hi) -> {Lo, Hi};
check(V, Enum, P) when is_binary(V), is_map_key(Enum, ?ENUMS) ->
    case [A || A <- maps:get(Enum, ?ENUMS), atom_to_binary(A) =:= V] of
        [A] -> A;
        [] -> throw({bad_field, P, Enum})
    end;
check(_, Type, P) ->
    throw({bad_field, P, Type}).

%%--------------------------------------------------------------------

object(M) when is_map(M) ->
    beamlab_json:canonical(M).

text(B) when is_binary(B) -> B;
text(A) when is_atom(A) -> atom_to_binary(A, utf8);
text(L) -> beamlab_format_units:to_binary(L).
