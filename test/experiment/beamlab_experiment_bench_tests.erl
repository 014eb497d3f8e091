%%% @doc The bench kind owns its options' checks (#31): what cannot go
%%% together, a squeeze's range, the fresh VMs' arguments, the baseline,
%%% msacc's needs are refused by the kind (its schema, `check/2') before
%%% the engine runs, with one reason that names keys for the library and
%%% flags for the command line. The engine's own checks of the same
%%% (beamlab_engine_tests) are invariants the front ends never reach.
-module(beamlab_experiment_bench_tests).

-include_lib("eunit/include/eunit.hrl").

%% The library's refusal (built and checked as beamlab:benchmark/2 does)
%% and its line naming keys and flags.
refusal(Codes, Opts) ->
    R = case beamlab_experiment_opts:benchmark(Codes, Opts) of
            {ok, Exp} -> beamlab_experiment:check(Exp);
            {error, _} = E -> E
        end,
    {error, {bench, {option, Reason}}} = R,
    {flat(beamlab_schema:format_error(Reason, key)), flat(beamlab_schema:format_error(Reason, flag))}.

flat(Chars) -> unicode:characters_to_list(Chars).

conflicts_are_the_schemas_test() ->
    ?assertEqual({"loop (timed mode) runs one worker; it cannot be combined with concurrency",
                  "-l (timed mode) runs one worker; it cannot be combined with -c"},
                 refusal(["ok."], #{loop => 10, concurrency => 2})),
    ?assertEqual({"loop (timed mode) and squeeze (concurrency estimation) cannot be combined",
                  "-l (timed mode) and -q (concurrency estimation) cannot be combined"},
                 refusal(["ok."], #{loop => 10, squeeze => true})),
    {_, MinMax} = refusal(["ok."], #{squeeze => #{min => 5, max => 2}}),
    ?assertMatch("--min 5 is above --max 2" ++ _, MinMax).

vm_args_are_checked_by_the_kind_test() ->
    ?assertEqual({"vm_args: emulator arguments: 'foo' is not a flag (they start with + or -, e.g. '+S 2')",
                  "--vm-args: emulator arguments: 'foo' is not a flag (they start with + or -, e.g. '+S 2')"},
                 refusal(["ok."], #{isolated => true, vm_args => "foo"})),
    ?assertEqual({"vm_args applies to the fresh VMs of isolated; add it",
                  "--vm-args applies to the fresh VMs of -i; add it"},
                 refusal(["ok."], #{vm_args => "+S 2"})).

baseline_is_checked_against_the_jobs_test() ->
    ?assertEqual({"baseline 'nope' is neither a job number nor a job's label",
                  "--baseline 'nope' is neither a job number nor a job's label"},
                 refusal(["ok.", "ok."], #{baseline => "nope"})),
    ?assertEqual({"baseline '3' is neither a job number nor a job's label",
                  "--baseline '3' is neither a job number nor a job's label"},
                 refusal(["ok.", "ok."], #{baseline => 3})),
    ?assertEqual({"baseline needs at least two codes to compare", "--baseline needs at least two codes to compare"},
                 refusal(["ok."], #{baseline => 1})),
    %% a label as the document names it, or a number
    {ok, Exp} = beamlab_experiment_opts:benchmark(["ok.", "ok."], #{baseline => "ok. #2"}),
    ?assertEqual(ok, beamlab_experiment:check(Exp)).

msacc_needs_a_profiler_and_live_telemetry_test() ->
    ?assertEqual({"msacc needs profile and live telemetry (verbose)",
                  "--msacc needs --profile and live telemetry (-v)"},
                 refusal(["ok."], #{msacc => true, profile => eprof})),
    ?assertEqual({"invalid value 'bogus' for profile: expected one of eprof, fprof, cprof, tprof",
                  "invalid value 'bogus' for --profile: expected one of eprof, fprof, cprof, tprof"},
                 refusal(["ok."], #{profile => bogus})),
    {ok, Exp} = beamlab_experiment_opts:benchmark(["ok."], #{msacc => true, profile => eprof, telemetry => true}),
    ?assertEqual(ok, beamlab_experiment:check(Exp)).

%% The library's max_time is in milliseconds (whole ones for the engine);
%% the command line's in seconds: both bounded at one week.
max_time_in_milliseconds_test() ->
    {ok, #{run := {bench, #{options := #{max_time := 1500}}}}} =
        beamlab_experiment_opts:benchmark(["ok."], #{rel_ci => 0.05, max_time => 1499.6}),
    ?assertEqual({"invalid value '604800001' for max_time: at most 604800000 (one week)",
                  "invalid value '604800.001' for --max-time: at most 604800 (one week)"},
                 refusal(["ok."], #{rel_ci => 0.05, max_time => 604800001})).

%% A project's bench modules have no baseline: the library refuses it as
%% the command line does (`run --bench DIR --baseline N'), with the same
%% line, before anything is built.
bench_modules_have_no_baseline_test() ->
    {error, {bench, {option, Reason}}} = beamlab_experiment_opts:bench("bench", #{baseline => 2}),
    ?assertEqual({"baseline: the benchmarks of bench modules are not compared with one another",
                  "--baseline: the benchmarks of bench modules are not compared with one another"},
                 {flat(beamlab_schema:format_error(Reason, key)), flat(beamlab_schema:format_error(Reason, flag))}),
    ?assertMatch({ok, _}, beamlab_experiment_opts:bench("bench", #{})).
