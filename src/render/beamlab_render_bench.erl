%%% @doc The text view of a micro-benchmark result (`beamlab run'), in
%%% erlperf's layout: a basic table (code, concurrency, QPS, time per
%%% iteration, relative rate) or an extended one with the statistics and
%%% the verdict against the baseline; concurrency curves of squeeze runs;
%%% the environment with `full'. Pure.
-module(beamlab_render_bench).

-export([render/2]).

-type opts() :: #{unicode := boolean(), report := auto | basic | extended | full}.
-export_type([opts/0]).

%% @doc The run table; `report' is basic, extended or full (adds the
%% environment), or auto (extended with 10 samples or more).
-spec render(beamlab_result:result(), opts()) -> unicode:chardata().
render(Doc, Opts) ->
    Benches = maps:get(benchmarks, Doc),
    Report = report_kind(maps:get(report, Opts), Benches),
    Cpu = maps:get(<<"metric">>, maps:get(params, Doc), <<"time">>) =:= <<"cpu">>,
    Timed = maps:get(<<"mode">>, maps:get(params, Doc), null) =:= <<"timed">> orelse Cpu,
    %% No column of comparisons where nothing is compared (a project's
    %% bench modules are not alternatives of one another).
    Many = length(Benches) > 1
        andalso lists:any(fun(#{extra := X}) -> maps:get(<<"rel">>, X, null) =/= null end, Benches),
    {Header, Rows} = case Report of
                         basic -> basic(Benches, Cpu, Many);
                         _ -> extended(Benches, {Timed, Cpu}, Many, plus_minus(Opts))
                     end,
    [case Doc of
         #{partial := true, extra := #{<<"vm_stopped">> := #{<<"exit_status">> := 130}}} ->
             "(interrupted: SIGINT to the VM; showing what was measured up to its last checkpoint)\n";
         #{partial := true, extra := #{<<"vm_stopped">> := #{<<"job">> := Job, <<"exit_status">> := St}}}
           when is_binary(Job) ->
             io_lib:format("(partial: the VM stopped (exit status ~w) while ~ts ran; showing what was "
                           "measured before)~n", [St, Job]);
         #{partial := true, extra := #{<<"vm_stopped">> := #{<<"exit_status">> := St}}} ->
             io_lib:format("(partial: the VM stopped (exit status ~w) after the measurement)~n", [St]);
         #{partial := true} -> "(interrupted: showing what was measured so far)\n";
         _ -> ""
     end,
     beamlab_format_table:render(Header, Rows),
     flavor_note(Doc),
     baseline_note(Doc),
     stopped_note(Doc),
     cpu_note(Cpu),
     [io_lib:format("note: ~ts completed fewer than one iteration per sample; "
                    "its figures come from ~w iteration(s) in total (use a longer -d or -l)~n",
                    [N, round(lists:sum(S))])
      || #{name := N, samples := S, extra := #{<<"less_than_one_per_sample">> := true}} <- Benches],
     squeeze_curves(Benches),
     case Report of
         full -> ["\n", beamlab_render_env:render(maps:get(env, Doc))];
         _ -> ""
     end,
     beamlab_render_text:findings(maps:get(findings, Doc))].

%% -i --flavor: the fresh VMs ran that flavour (each proved it before its
%% job ran); the document's env is the controlling VM's.
flavor_note(#{params := #{<<"flavor">> := F}}) ->
    io_lib:format("each job ran in a fresh VM of the ~ts flavour (as the VM reported)~n", [F]);
flavor_note(_) ->
    "".

%% Rel and the verdicts are against the job that actually served as the
%% baseline; say so when it is not the one asked for.
%% With a stopping rule (--ci, --cv), what ended the run.
stopped_note(#{extra := #{<<"stopped_by">> := By}, params := P}) ->
    Ci = maps:get(<<"rel_ci">>, P, null),
    Cv = maps:get(<<"cv">>, P, null),
    Target = lists:join(" and ", [io_lib:format("every mean's 95% CI within ~ts of it", [beamlab_format_units:percent(Ci)])
                                  || is_number(Ci)]
                                 ++ [io_lib:format("cv of the last samples at most ~ts", [beamlab_format_units:percent(Cv)])
                                     || is_number(Cv)]),
    case By of
        <<"converged">> -> io_lib:format("stopped: confident (~ts)~n", [Target]);
        <<"max_time">> -> io_lib:format("stopped: --max-time spent before ~ts~n", [Target]);
        <<"max_samples">> -> io_lib:format("stopped: --max-samples reached before ~ts~n", [Target]);
        _ -> ""
    end;
stopped_note(_) ->
    "".

baseline_note(#{benchmarks := Benches, params := #{<<"baseline">> := Asked}, extra := Extra})
  when length(Benches) > 1, is_integer(Asked), Asked >= 1, Asked =< length(Benches) ->
    AskedName = name(lists:nth(Asked, Benches)),
    case maps:get(<<"baseline_used">>, Extra, Asked) of
        Asked ->
            "";
        null ->
            io_lib:format("note: baseline ~ts failed and no other job succeeded: nothing compared~n",
                          [AskedName]);
        Used when not is_integer(Used); Used < 1; Used > length(Benches) ->
            "";
        Used ->
            io_lib:format("note: baseline ~ts failed; the others are compared with ~ts instead~n",
                          [AskedName, name(lists:nth(Used, Benches))])
    end;
baseline_note(_) ->
    "".

report_kind(Report, Benches) ->
    case Report of
        auto ->
            Max = lists:max([0 | [length(maps:get(samples, B)) || B <- Benches]]),
            case Max >= 10 of
                true -> extended;
                false -> basic
            end;
        Kind ->
            Kind
    end.

basic(Benches, Cpu, Many) ->
    Header = ["Code", "||", "QPS", "Time"] ++ ["CPU" || Cpu] ++ [ "Rel" || Many],
    {Header, [[name(B), conc(B), qps(B), iter(B)] ++ [cpu(B) || Cpu] ++ [rel(B) || Many]
              || B <- Benches]}.

%% --metric cpu: what the CPU column and the statistics are.
cpu_note(false) ->
    "";
cpu_note(true) ->
    "CPU: CPU time per iteration of the measuring VM's scheduler threads (their time waiting for a "
    "core is not counted); the statistics and verdicts are about it\n".

plus_minus(Opts) ->
    case maps:get(unicode, Opts) of
        true -> "±";
        false -> "+-"
    end.

extended(Benches, {Timed, Cpu}, Many, Pm) ->
    %% A sample counts iterations in a fixed time, or times a fixed
    %% number of them (timed), or is the CPU time per iteration: the
    %% header says which.
    Avg = case {Cpu, Timed} of
              {true, _} -> "Avg CPU/iter";
              {false, true} -> "Avg time/sample";
              {false, false} -> "Avg iter/sample"
          end,
    Header = ["Code", "||", "Samples", Avg, "StdDev", "Median", "P99", "Iteration", "95% CI",
              "Outliers"] ++ [H || Many, H <- ["Rel", "vs baseline"]],
    V = fun(X) -> case Timed of
                      true -> beamlab_format_units:duration(X);
                      false -> beamlab_format_units:count(X)
                  end
        end,
    Rows = [case maps:find(stats, B) of
                {ok, #{n := N, mean := Mean, cv := Cv, median := Med, p99 := P99,
                       outliers := Out} = S} ->
                    %% (one sample has no spread: "-", never 0%)
                    [name(B), conc(B), N, V(Mean), case N >= 2 of
                                                       true -> beamlab_format_units:percent(Cv);
                                                       false -> "-"
                                                   end, V(Med), V(P99),
                     iter(B), ci(Pm, Mean, maps:get(ci_mean, S, undefined)), outliers(Out)]
                    ++ [X || Many, X <- [rel(B), verdict(B)]];
                error ->
                    [name(B), conc(B), 0, "-", "-", "-", "-", iter(B), "-", "-"]
                    ++ [X || Many, X <- [rel(B), verdict(B)]]
            end || B <- Benches],
    {Header, Rows}.

name(#{name := N}) -> N.

%% (A document of another front, e.g. a project's bench modules, or one
%% read from a file, may not say: "-".)
conc(#{params := #{<<"concurrency">> := C}}) when is_integer(C) -> C;
conc(_) -> "-".

qps(#{extra := #{<<"not_run">> := true}}) -> "not run";
qps(#{extra := #{<<"status">> := <<"failed">>}}) -> "failed";
qps(#{extra := #{<<"qps">> := Q}}) when is_number(Q) -> beamlab_format_units:count(Q);
qps(_) -> "-".

%% "< 1 iteration per sample" is reported as such rather than a fake time.
iter(#{extra := #{<<"status">> := <<"failed">>}}) -> "-";
iter(#{extra := #{<<"iteration_ns">> := I}}) when is_number(I) -> beamlab_format_units:duration(I);
iter(#{extra := #{<<"less_than_one_per_sample">> := true}}) -> "> sample";
iter(_) -> "-".

cpu(#{extra := #{<<"cpu_iteration_ns">> := I}}) when is_number(I) -> beamlab_format_units:duration(I);
cpu(_) -> "-".

rel(#{extra := #{<<"rel">> := R}}) when is_number(R) -> io_lib:format("~w%", [round(R * 100)]);
rel(_) -> "-".

ci(Pm, Mean, Ci) -> beamlab_format_units:rel_interval(Mean, Ci, Pm).

outliers(#{low := L, high := H}) -> integer_to_list(L + H).

verdict(#{extra := #{<<"baseline">> := true}}) -> "baseline";
verdict(#{comparison := #{verdict := V, change := C}} = B) ->
    Name = case V of
               faster -> "faster";
               slower -> "slower";
               no_difference -> "no difference";
               too_few_samples -> "too few samples"
           end,
    Could = case V of
                %% what this `~' could have seen (#35)
                no_difference -> detectable(maps:get(detectable, maps:get(comparison, B), null));
                _ -> ""
            end,
    case C of
        undefined -> Name;
        _ -> io_lib:format("~ts ~ts~ts", [Name, beamlab_format_units:signed_percent(C), Could])
    end;
verdict(_) -> "-".

detectable(D) when is_number(D) -> [" (could have seen ", beamlab_format_units:detectable(D), ")"];
detectable(_) -> "".


squeeze_curves(Benches) ->
    [["\nConcurrency curve for ", Name, ":\n",
      beamlab_format_table:render(["||", "QPS"],
                                  [[C, beamlab_format_units:count(Q)]
                                   || #{<<"concurrency">> := C, <<"qps">> := Q} <- Curve],
                                  #{indent => 2})]
     || #{name := Name, extra := #{<<"squeeze_curve">> := Curve}} <- Benches, Curve =/= []].
