%%% @doc Saved runs named on the command line, shared by `compare' and
%%% `report': directories and quoted globs expanded to files, files loaded
%%% one at a time (redacted, labelled by their base names), a history put
%%% in order, and the options of a history. Each failure stops with one
%%% usage line naming the file or argument (an error value).
-module(beamlab_cli_runs).

-export([expand/1, load_runs/1, load_runs/2, history_options/0, history/2, run_noise_option/0, run_noise/1]).

-include("beamlab_cli_error.hrl").

%% @doc The options of a history (many saved runs of the same benchmarks),
%% shared with `beamlab report'.
-spec history_options() -> [beamlab_cli_args:option()].
history_options() ->
    [#{name => history, long => "history", type => boolean, default => false,
       help => "the runs are a history: order them and compare each with the one before "
               "(the default when a directory or a quoted glob is given)"},
     #{name => order, long => "order", type => {enum, [auto, time, commit]}, default => auto, metavar => "HOW",
       help => "order of a history: commit (the git commit's date each run recorded), time (when each "
               "run started) or auto (commit when every run has one)"}].

%% @doc `--run-noise PCT', the between-run term of a verdict between two
%% separately measured runs with repetitions (docs/statistics.md "Verdicts
%% between runs"): every command whose verdicts use it takes it (`compare'
%% of runs and of a history, `report' of several runs or of a history).
-spec run_noise_option() -> beamlab_cli_args:option().
run_noise_option() ->
    #{name => run_noise, long => "run-noise", type => number, metavar => "PCT",
      help => "machine-specific: the sd of a run's level from run to run, in percent (0 to below 100), "
              "added on each side when two runs with repetitions are compared (default "
              ++ beamlab_format_units:number(100 * beamlab_result_compare:run_noise())
              ++ ", chosen on beamlab's quiet 2-core machine; bench/aa_components.escript measures "
                 "yours; 0: the repetitions' spread alone)"}.

%% @doc The `--run-noise' given, as a fraction, or `undefined' (the
%% default, beamlab_result_compare:run_noise/0); a value outside 0 to
%% below 100 is a usage error of one line.
-spec run_noise(beamlab_cli_args:parsed()) -> {ok, float() | undefined} | {error, beamlab_cli_error:reason()}.
run_noise(Parsed) ->
    case beamlab_cli_args:get(run_noise, Parsed) of
        undefined -> {ok, undefined};
        N when N >= 0, N < 100 -> {ok, N / 100};
        N -> beamlab_cli_error:usage_error("--run-noise must be a percentage from 0 to below 100, not ~ts",
                                     [beamlab_format_units:number(N)])
    end.

%% @doc The history of loaded runs in the order asked for, or one line
%% saying why it cannot be ordered so.
-spec history([beamlab_result_history:run()], beamlab_result_history:opts()) ->
          {ok, beamlab_result_history:history()} | {error, beamlab_cli_error:reason()}.
history(Runs, Opts) ->
    case beamlab_result_history:history(Runs, Opts) of
        {ok, H} -> {ok, H};
        {error, Reason} -> beamlab_cli_error:usage_error("~ts", [beamlab_result_history:format_error(Reason)])
    end.

%% @doc Result files named by the arguments: a file as it is, a directory
%% as its `*.json' files, a pattern with `*', `?' or `[' (quoted, so the
%% shell left it) as the files it matches, sorted. `Listed' is true when a
%% directory or pattern was given: the runs are then a history.
-spec expand([string()]) -> {ok, {[string()], Listed :: boolean()}} | {error, beamlab_cli_error:reason()}.
expand(Args) ->
    ?CATCHING({ok, expanded(Args)}).

expanded(Args) ->
    Expanded = [expand_arg(A) || A <- Args],
    {lists:append([Fs || {Fs, _} <- Expanded]), lists:any(fun({_, L}) -> L end, Expanded)}.

expand_arg(Arg) ->
    case {filelib:is_dir(Arg), lists:any(fun(C) -> lists:member(C, "*?[") end, Arg)} of
        {true, _} ->
            case lists:sort(filelib:wildcard(filename:join(Arg, "*.json"))) of
                [] -> ?USAGE("~ts: no saved runs (*.json) in this directory", [Arg]);
                Fs -> {Fs, true}
            end;
        {false, true} ->
            case lists:sort([F || F <- filelib:wildcard(Arg), filelib:is_regular(F)]) of
                [] -> ?USAGE("~ts: no file matches", [Arg]);
                Fs -> {Fs, true}
            end;
        {false, false} ->
            {[Arg], false}
    end.

%% @doc Loads result files, labelled by their base names (made unique), or
%% stops with one line naming the file that cannot be used.
-spec load_runs([string()]) -> {ok, [{binary(), beamlab_result:result()}]} | {error, beamlab_cli_error:reason()}.
load_runs(Files) ->
    load_runs(Files, fun(R) -> R end).

%% @doc As {@link load_runs/1}, keeping `Keep(Document)' of each, or only
%% the runs whose labels are keys of `{only, Labels}' (the others are not
%% read): one file is read, checked and reduced at a time, so a report over
%% thousands of runs never holds their whole documents together (#34).
-spec load_runs([string()], fun((beamlab_result:result()) -> beamlab_result:result())
                          | {only, #{binary() => true}}) ->
          {ok, [{binary(), beamlab_result:result()}]} | {error, beamlab_cli_error:reason()}.
load_runs(Files, Keep) ->
    ?CATCHING({ok, loaded(Files, Keep)}).

loaded(Files, Keep) ->
    [{Label, case beamlab_result:load(F) of
                 {ok, R} when is_function(Keep, 1) -> Keep(beamlab_result_redact:document(R));
                 {ok, R} -> beamlab_result_redact:document(R);
                 {error, Reason} -> ?USAGE("~ts", [beamlab_result:format_error(Reason)])
             end}
     || {Label, F} <- lists:zip(labels(Files), Files),
        not is_tuple(Keep) orelse is_map_key(Label, element(2, Keep))].

labels(Files) ->
    Base = [unicode:characters_to_binary(filename:basename(F, ".json")) || F <- Files],
    case length(lists:usort(Base)) =:= length(Base) of
        true -> Base;
        false -> [iolist_to_binary([integer_to_list(I), ":", B])
                  || {I, B} <- lists:zip(lists:seq(1, length(Base)), Base)]
    end.
