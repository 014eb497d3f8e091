%%% @doc `beamlab suite': runs the actor workload suite (all workloads, or
%%% those named), lists workloads and their parameters, sets and sweeps
%%% parameters, and prints one table plus each workload's counters.
-module(beamlab_cli_suite).

-export([summary/0, options/0, usage/0, run/1, text/1, text/2, parse_param/1]).

-define(TELEMETRY, beamlab_runtime_telemetry).
-define(DETECT, beamlab_env_detect).
%% As `beamlab run': an interrupted run still reports, and says so.
-define(SPARK_WIDTH, 10).

%% @doc One line for `beamlab help'.
-spec summary() -> string().
summary() -> "run the actor workload suite (spawn, ring, ping-pong, message load, ...)".

%% @doc Options of `beamlab suite'.
-spec options() -> [beamlab_cli_args:option()].
options() ->
    [#{name => list, long => "list", type => boolean, default => false,
       help => "list the workloads, their definitions and parameters"},
     #{name => param, long => "param", type => string, multi => true, default => [],
       metavar => "NAME.KEY=VALUE",
       help => "set a parameter; a comma list sweeps it (ping_pong.size=0,10,100)"},
     #{name => profile, long => "profile", type => {enum, [quick, full]}, default => quick,
       help => "quick (all workloads in < 60 s) or full (1M-process ring and skynet, ...)"},
     #{name => repeat, short => "n", long => "repeat", type => pos_integer, metavar => "N",
       help => "measured repetitions per point (default: per workload, 3-5 quick, 3-10 full)"},
     #{name => pa, short => "pa", type => string, multi => true, default => [], metavar => "DIR",
       help => "add DIR to the code path (for your own workload modules)"},
     #{name => timeout, long => "timeout", type => pos_integer, default => 600, metavar => "S",
       help => "seconds one repetition may take before the point is abandoned"}]
        ++ beamlab_cli_args:common_options().

%% @doc Examples for `beamlab help suite'.
-spec usage() -> iodata().
usage() ->
    "Usage: beamlab suite [NAME...] [--profile quick|full] [--param NAME.KEY=V[,V...]]...\n"
    "Examples:\n"
    "  beamlab suite                          # every workload, quick profile\n"
    "  beamlab suite --list\n"
    "  beamlab suite ring --param ring.n=1000,40000 --param ring.m=10\n"
    "  beamlab suite ping_pong --param ping_pong.vm=peer --param ping_pong.size=0,1000\n"
    "  beamlab suite ping_pong --param ping_pong.node=bench@otherhost\n"
    "  beamlab suite -pa ./ebin my_workload --format json\n".

%% @doc Runs the command.
-spec run(beamlab_cli_args:parsed()) -> non_neg_integer().
run(Parsed) ->
    [add_path(D) || D <- beamlab_cli_args:get(pa, Parsed)],
    Names = maps:get(args, Parsed),
    case beamlab_cli_args:get(list, Parsed) of
        true -> list(Names);
        false -> measure(Names, Parsed)
    end.

add_path(Dir) ->
    case filelib:is_dir(Dir) of
        true -> true = code:add_patha(Dir);
        false -> beamlab_cli:usage_error("-pa ~ts: no such directory", [Dir])
    end.

%%--------------------------------------------------------------------
%% --list

list(Names) ->
    Mods = case Names of
               [] -> beamlab_workload:builtin();
               _ -> [resolve(N) || N <- Names]
           end,
    io:put_chars([list_one(M) || M <- Mods]),
    0.

resolve(Name) ->
    case beamlab_workload:resolve(Name) of
        {ok, M} -> M;
        {error, R} -> beamlab_cli:usage_error("~ts", [beamlab_workload:format_error(R)])
    end.

list_one(Mod) ->
    #{name := Name, summary := Summary, unit := Unit} = Info = beamlab_workload:info(Mod),
    Rows = [[["  ", atom_to_list(K)], beamlab_workload:format_value(D),
             beamlab_workload:format_value(maps:get(full, S, D)),
             beamlab_workload:type_name(T), H]
            || #{key := K, default := D, type := T, help := H} = S <- beamlab_workload:param_specs(Mod)],
    [io_lib:format("~ts  (~ts, ~ts is better)~n  ~ts~n",
                   [Name, Unit, maps:get(better, Info), Summary]),
     beamlab_format_table:render(["  param", "quick", "full", "type", "meaning"], Rows,
                                 #{align => [left, left, left, left, left]}),
     "\n"].

%%--------------------------------------------------------------------
%% Measuring

measure(Names, Parsed) ->
    Overrides = lists:foldl(fun(P, Acc) -> add_param(parse_param(P), Acc) end, #{},
                            beamlab_cli_args:get(param, Parsed)),
    Profile = beamlab_cli_args:get(profile, Parsed),
    Plan = case beamlab_suite:plan(Names, Profile, Overrides) of
               {ok, P} -> P;
               {error, R} -> beamlab_cli:usage_error("~ts", [beamlab_suite:format_error(R)])
           end,
    Verbose = beamlab_cli_args:get(verbose, Parsed, 0) > 0,
    ok = beamlab_runtime_interrupt:subscribe(),
    Telemetry = telemetry_start(Verbose, ?TELEMETRY),
    {ok, Doc0} = beamlab_suite:run(Plan, #{profile => Profile,
                                          repeat => beamlab_cli_args:get(repeat, Parsed, default),
                                          timeout => 1000 * beamlab_cli_args:get(timeout, Parsed),
                                          progress => progress(Verbose, beamlab_output:format(Parsed)),
                                          params => doc_params(Profile, Names, Overrides, Parsed)}),
    ok = beamlab_runtime_interrupt:unsubscribe(),
    beamlab_runtime_progress:clear(),
    Doc = telemetry_stop(Telemetry, Doc0, ?DETECT),
    Unicode = beamlab_output:unicode(Parsed),
    ok = beamlab_output:emit(Doc, Parsed, #{text => fun(D) -> text(D, #{unicode => Unicode}) end}),
    exit_code(Doc).

%% With -v, live VM telemetry (scheduler utilisation, run queues, memory,
%% ...) is printed every second and recorded, and the pathology detectors
%% run on it. Both live in the env area, which this command does not need
%% in order to run: the modules are passed in, so a build without them
%% still links (and xref stays clean).
telemetry_start(false, _Mod) -> none;
telemetry_start(true, Mod) ->
    case code:ensure_loaded(Mod) of
        {module, _} ->
            {ok, Pid} = Mod:start_link(#{interval => 1000, print => true}),
            {Mod, Pid};
        _ -> none
    end.

telemetry_stop(none, Doc, _Detect) -> Doc;
telemetry_stop({Mod, Pid}, Doc, Detect) ->
    Series = Mod:stop(Pid),
    Findings = case code:ensure_loaded(Detect) of
                   {module, _} ->
                       Detect:findings(#{telemetry => Series, result => Doc,
                                         env => maps:get(env, Doc, #{})});
                   _ -> []
               end,
    Doc#{telemetry => Series, findings => Findings}.

%% @doc Parses `NAME.KEY=VALUE[,VALUE...]'; usage error when malformed.
-spec parse_param(string()) -> {binary(), string(), [string()]}.
parse_param(Text) ->
    case string:split(Text, "=") of
        [Lhs, Value] ->
            case string:split(Lhs, ".") of
                [W, K] when W =/= "", K =/= "", Value =/= "" ->
                    {unicode:characters_to_binary(W), K, string:split(Value, ",", all)};
                _ -> bad_param(Text)
            end;
        _ -> bad_param(Text)
    end.

-spec bad_param(string()) -> no_return().
bad_param(Text) ->
    beamlab_cli:usage_error("--param ~ts: expected NAME.KEY=VALUE (e.g. ring.n=1000 or "
                            "ping_pong.size=0,10,100)", [Text]).

add_param({W, K, Vs}, Acc) ->
    Acc#{W => (maps:get(W, Acc, #{}))#{K => Vs}}.

doc_params(Profile, Names, Overrides, Parsed) ->
    #{<<"profile">> => atom_to_binary(Profile),
      <<"workloads">> => [unicode:characters_to_binary(N) || N <- Names],
      <<"repeat">> => case beamlab_cli_args:get(repeat, Parsed) of
                          undefined -> <<"default">>;
                          N -> N
                      end,
      <<"param">> => maps:map(fun(_W, Kvs) ->
                                      maps:from_list([{unicode:characters_to_binary(K),
                                                       [unicode:characters_to_binary(V) || V <- Vs]}
                                                      || {K, Vs} <- maps:to_list(Kvs)])
                              end, Overrides)}.

%% Without -v: the point being measured, as one progress line (text output
%% only, like `run'); with -v: every repetition's value.
progress(false, text) ->
    fun({point_start, Name, #{isolated := Iso}}) ->
            N = case get(beamlab_suite_points) of undefined -> 1; K -> K + 1 end,
            put(beamlab_suite_points, N),
            beamlab_runtime_progress:show(io_lib:format("suite: point ~w: ~ts~ts",
                                                    [N, Name, case Iso of true -> " (fresh VM)"; false -> "" end]));
       (_) -> ok
    end;
progress(false, _Format) ->
    fun(_) -> ok end;
progress(true, _Format) ->
    fun({point_start, Name, #{isolated := Iso}}) ->
            io:format(standard_error, "suite: ~ts~ts~n",
                      [Name, case Iso of true -> " (in a fresh VM with a larger +P)"; false -> "" end]);
       ({repetition, _Name, Which, V}) ->
            io:format(standard_error, "  ~ts: ~ts~n",
                      [case Which of warmup -> "warm-up"; N -> integer_to_list(N) end,
                       beamlab_format_units:sig(V, 4)]);
       ({point_done, _Name, ok}) -> ok;
       ({point_done, Name, {error, Msg}}) ->
            io:format(standard_error, "  ~ts: ~ts~n", [Name, Msg])
    end.

%% 130 when interrupted (what was measured is still reported); 1 when a
%% point failed or a check did not hold; 0 otherwise.
exit_code(#{partial := true}) ->
    beamlab_runtime_interrupt:exit_code();
exit_code(#{benchmarks := Bs, extra := #{failures := Fs}}) ->
    Failed = [B || #{extra := #{check := <<"failed", _/binary>>}} = B <- Bs],
    case Fs =:= [] andalso Failed =:= [] of
        true -> 0;
        false -> 1
    end.

%%--------------------------------------------------------------------
%% Text view

%% @doc The suite's text view, drawn with Unicode when the locale allows
%% (see {@link text/2}).
-spec text(beamlab_result:result()) -> unicode:chardata().
text(Doc) ->
    text(Doc, #{unicode => beamlab_format_spark:utf8_terminal()}).

%% @doc The suite's text view: one aligned table (workload, params, metric,
%% unit, median, mean ± 95% CI half-width, p99, n, a sparkline of the
%% repetitions in the order run, check), histograms when few points have
%% many repetitions, each point's counters and latency percentiles, then
%% failures. `unicode => false' draws with ASCII only (`+-', `_.-:=+*#').
-spec text(beamlab_result:result(), beamlab_output:text_opts()) -> unicode:chardata().
text(Doc, Opts) ->
    Unicode = maps:get(unicode, Opts, true),
    Bs = maps:get(benchmarks, Doc),
    Header = ["Workload", "Params", "Metric", "Unit", "Median", ["Mean ", pm(Unicode), " CI95"], "P99",
              "n", "Reps", "Check"],
    Rows = [row(B, Unicode) || B <- Bs],
    Failures = maps:get(failures, maps:get(extra, Doc, #{}), []),
    [case maps:get(partial, Doc, false) of
         true -> "(partial: interrupted before the end; what was measured is shown)\n";
         false -> ""
     end,
     case Rows of
         [] -> "";
         _ -> beamlab_format_table:render(Header, Rows, #{align => [left, left, left, left, right,
                                                                    right, right, right, left, left]})
     end,
     beamlab_output:distributions_text(Doc, #{unicode => Unicode}),
     details(Bs),
     [io_lib:format("FAILED ~ts: ~ts~n", [N, E]) || #{name := N, error := E} <- Failures],
     beamlab_output:findings_text(maps:get(findings, Doc, []))].

row(#{name := Name, group := Group, metric := Metric, unit := Unit} = B, Unicode) ->
    #{n := N, median := Med, mean := Mean, p99 := P99, ci_mean := {Lo, Hi}} = maps:get(stats, B),
    Num = fun(V) -> beamlab_format_units:sig(V, 4) end,
    [Group, params_text(Name), Metric, Unit, Num(Med),
     [Num(Mean), " ", pm(Unicode), " ", Num((Hi - Lo) / 2)], Num(P99), N, reps(B, Unicode),
     maps:get(check, maps:get(extra, B, #{}), <<"unchecked">>)].

pm(true) -> "±";
pm(false) -> "+-".

%% Drift or a warm-up effect across repetitions shows as a slope; fewer
%% than three repetitions, or a reservoir (no order left), show nothing.
reps(#{samples := S} = B, Unicode) when length(S) >= 3 ->
    case maps:get(method, maps:get(sample_info, B, #{}), <<"all">>) of
        <<"all">> -> beamlab_format_spark:line(S, #{width => ?SPARK_WIDTH, ascii => not Unicode});
        _ -> ""
    end;
reps(_, _) ->
    "".

%% The swept parameters are in the name, between brackets.
params_text(Name) ->
    case binary:split(Name, <<"[">>) of
        [_, Rest] -> hd(binary:split(Rest, <<"]">>));
        [_] -> <<"-">>
    end.

details(Bs) ->
    Lines = [detail(B) || B <- Bs, maps:get(counters, B, #{}) =/= #{}],
    case Lines of
        [] -> [];
        _ -> ["\nCounters (last repetition):\n" | Lines]
    end.

detail(#{name := Name, counters := C, extra := Extra}) ->
    [io_lib:format("  ~ts: ~ts~n", [Name, kvs(C)]),
     case maps:find(latency_us, Extra) of
         {ok, L} ->
             io_lib:format("    latency us (~ts): p50 ~ts  p90 ~ts  p99 ~ts  p99.9 ~ts  max ~ts  (~b samples)~n",
                           [maps:get(latency_scope, Extra, <<"all">>)
                            | [beamlab_format_units:sig(maps:get(K, L), 3)
                               || K <- [p50, p90, p99, p999, max]] ++ [maps:get(count, L)]]);
         error -> ""
     end,
     case maps:find(series, Extra) of
         {ok, [_ | _] = S} ->
             io_lib:format("    per second (rep:second goodput/flushput/mean latency us): ~ts~n",
                           [lists:join("  ", [io_lib:format("~b:~b ~b/~b/~ts",
                                                            [R, Sec, G, F, beamlab_format_units:sig(Lat, 3)])
                                              || #{rep := R, second := Sec, goodput := G,
                                                   flushput := F, latency_mean_us := Lat} <- S])]);
         _ -> ""
     end].

kvs(Map) ->
    lists:join("  ", [io_lib:format("~ts=~ts", [K, val(V)]) || {K, V} <- lists:sort(maps:to_list(Map))]).

val(V) when is_integer(V) -> integer_to_list(V);
val(V) when is_float(V) -> beamlab_format_units:sig(V, 4);
val(V) when is_binary(V) -> V;
val(V) -> io_lib:format("~0p", [V]).
