%%% @doc beamlab's public API, for Erlang and Elixir.
%%%
%%% The short forms follow erlperf and return plain numbers (they raise
%%% `error({beamlab, Reason})' on failure; `format_error/1' explains it):
%%% ```
%%% 1> beamlab:run("rand:uniform().").
%%% 1043154                               % iterations per second
%%% 2> beamlab:run(#{runner => "rand:uniform()."}, #{samples => 5, duration => 200}).
%%% 1078251
%%% 3> beamlab:run({rand, uniform, [10]}, #{concurrency => 2}).
%%% 1788609                               % both workers together
%%% 4> beamlab:run(#{runner => "run(_, S) -> rand:mwc59(S).",
%%%                  init_runner => "rand:mwc59_seed()."}, #{}).
%%% 15465171
%%% 5> beamlab:compare(["rand:uniform().", "crypto:strong_rand_bytes(2)."], #{}).
%%% [1096115,87540]
%%% 6> beamlab:time("rand:uniform().", 1000000).   % timed mode: microseconds
%%% 739864
%%% 7> beamlab:run("code:is_loaded(local_udp).", #{}, #{max => 8}).
%%% {121952,3}                             % best throughput and its worker count
%%% '''
%%% (Real output, from a 2-core machine shared with several busy builds, so
%%% the rates are far below what an idle machine gives.)
%%%
%%% From Elixir: `:beamlab.run(~c"rand:uniform().")' or with a fun,
%%% `:beamlab.run(%{runner: fn -> :rand.uniform() end})'.
%%%
%%% `benchmark/3' returns the full result document (samples, statistics,
%%% comparisons against the baseline, squeeze curve, findings); it is the
%%% same document `beamlab run --format json' prints, without the
%%% environment report and with an empty `command'.
%%%
%%% Options not given take {@link beamlab_engine:default_run_opts/0}, the
%%% same defaults as the CLI; the short forms also turn the pre-flight
%%% checks off (`checks => false'), as their findings would not be seen.
-module(beamlab).

-export([run/1, run/2, run/3, compare/2, time/2, benchmark/3, format_error/1]).

-type code() :: beamlab_engine_code:callable() | beamlab_engine_code:code_map().
-type options() :: beamlab_engine:options().
-type mode_opts() :: beamlab_engine:mode_opts().
-type error_reason() :: {job_failed, binary(), binary()} | beamlab_engine:error_reason().
-export_type([code/0, options/0, mode_opts/0, error_reason/0]).

%% @doc Iterations per second of `Code' with the default options
%% (3 samples of 1 s, one worker).
-spec run(code()) -> non_neg_integer().
run(Code) ->
    run(Code, #{}).

%% @doc Iterations per second of `Code' with run options (see
%% {@link beamlab_engine}: `concurrency', `samples', `duration', `warmup',
%% `loop', `rel_ci', `cv', `isolated', ...). In timed mode (`loop') the
%% figure is still iterations per second.
-spec run(code(), options()) -> non_neg_integer().
run(Code, RunOpts) ->
    [Bench] = benchmarks([Code], RunOpts, undefined),
    qps(Bench).

%% @doc With `ModeOpts' a map (`min', `max', `step', `threshold'): concurrency
%% estimation, returning `{IterationsPerSecond, BestConcurrency}'. With
%% `undefined', the same as `run/2'.
-spec run(code(), options(), mode_opts()) ->
          non_neg_integer() | {non_neg_integer(), non_neg_integer()}.
run(Code, RunOpts, undefined) ->
    run(Code, RunOpts);
run(Code, RunOpts, ModeOpts) when is_map(ModeOpts) ->
    [Bench] = benchmarks([Code], RunOpts, ModeOpts),
    #{params := #{<<"concurrency">> := C}} = Bench,
    {qps(Bench), C}.

%% @doc Runs several codes side by side (interleaved samples) and returns
%% the iterations per second of each, in order.
-spec compare([code()], options()) -> [non_neg_integer()].
compare(Codes, RunOpts) ->
    [qps(B) || B <- benchmarks(Codes, RunOpts, undefined)].

%% @doc Timed mode: microseconds taken by `Count' iterations of `Code'
%% (one sample, as erlperf's `time/2').
-spec time(code(), pos_integer()) -> non_neg_integer().
time(Code, Count) ->
    [#{samples := [Ns]}] = benchmarks([Code], #{loop => Count, samples => 1}, undefined),
    Ns div 1000.

%% @doc Full result document (kind `bench') for several jobs.
-spec benchmark([code()], options(), mode_opts()) ->
          {ok, beamlab_result:result()} | {error, beamlab_engine:error_reason()}.
benchmark(Codes, RunOpts, ModeOpts) ->
    Opts = maps:merge(beamlab_engine:default_run_opts(), RunOpts),
    beamlab_engine:run([code_map(C) || C <- Codes], Opts, ModeOpts).

%% @doc One line explaining an error raised by this module.
-spec format_error(error_reason()) -> iolist().
format_error({job_failed, Name, Message}) ->
    io_lib:format("~ts: ~ts", [Name, Message]);
format_error(Reason) ->
    beamlab_engine:format_error(Reason).

%%====================================================================
%% Internal
%%====================================================================

code_map(#{runner := _} = Map) -> Map;
code_map(Callable) -> #{runner => Callable}.

%% Result sections are JSON objects: their keys are binaries.
benchmarks(Codes, RunOpts, ModeOpts) ->
    case benchmark(Codes, maps:merge(#{checks => false}, RunOpts), ModeOpts) of
        {ok, #{benchmarks := Benches}} ->
            [case B of
                 #{extra := #{<<"status">> := <<"ok">>}} -> B;
                 #{name := Name, extra := #{<<"error">> := Msg}} ->
                     error({beamlab, {job_failed, Name, Msg}})
             end || B <- Benches];
        {error, Reason} ->
            error({beamlab, Reason})
    end.

qps(#{extra := #{<<"qps">> := Q}}) when is_number(Q) -> round(Q);
qps(_) -> 0.
