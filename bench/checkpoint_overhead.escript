#!/usr/bin/env escript
%%% Cost of the launcher's checkpoint (docs/reliability.md, "Benchmarked
%%% code that stops the VM") on the measurement, in one run: the rate of an
%%% empty runner (`ok.') with and without a checkpoint being kept, as
%%% `./beamlab' keeps it under its launcher.
%%%
%%%   (1) one job, continuous mode (the job runs while the checkpoint is
%%%       written, about once a second);
%%%   (2) two jobs, interleaved (a checkpoint before each job's sample,
%%%       while every job is suspended: only the run's length could grow);
%%%   (3) one job, timed mode (`-l 100M': samples of about 0.2 s).
%%%
%%% Each round measures both ways, in alternating order (ABBA), and gives
%%% the ratio with/without; the median over the rounds is reported, with
%%% the spread (p25..p75) of the per-round ratios. Target: 1.0 is inside
%%% the spread ("within noise"). Then the cost of one write, which bounds
%%% the CPU a checkpoint can take while a job runs (target: under 0.1% of
%%% a core). By construction a write never falls inside a sample's timed
%%% interval: it happens between samples.
%%% Usage (from the repository root, after `rebar3 compile'):
%%%   escript bench/checkpoint_overhead.escript [Rounds] [SampleMs]
-mode(compile).

main(Args) ->
    {Rounds, Ms} = case Args of
                       [] -> {10, 500};
                       [R] -> {list_to_integer(R), 500};
                       [R, D | _] -> {list_to_integer(R), list_to_integer(D)}
                   end,
    Root = filename:dirname(filename:dirname(filename:absname(escript:script_name()))),
    true = code:add_patha(filename:join([Root, "_build", "default", "lib", "beamlab", "ebin"])),
    {ok, Dir} = beamlab_runtime_file:private_dir("beamlab-checkpoint-bench"),
    Cp = beamlab_runtime_checkpoint:open(Dir, #{command => "run", parsed => #{}}),
    Load0 = loadavg(),
    io:format("checkpoint overhead: ~w rounds, ~w ms samples, OTP ~ts, ~w schedulers~n",
              [Rounds, Ms, erlang:system_info(otp_release), erlang:system_info(schedulers_online)]),
    Cases = [{"(1) ok. continuous, 1 job", [#{runner => "ok."}], #{duration => Ms, samples => 3}},
             {"(2) ok. ok. interleaved", [#{runner => "ok."}, #{runner => "ok."}],
              #{duration => Ms div 5, samples => 10}},
             {"(3) ok. timed -l 100M", [#{runner => "ok."}], #{loop => 100000000, samples => 5}}],
    Results = [{Name, [round_(I, Jobs, Opts, Cp) || I <- lists:seq(1, Rounds)]}
               || {Name, Jobs, Opts} <- Cases],
    %% The write itself: a state as large as a run of 3 jobs x 1000
    %% samples (the stopping rule's cap), and how many a run writes.
    Big = #{phase => sampling, current => 1,
            entries => maps:from_list([{I, {#{samples => lists:seq(1, 1000), times => lists:seq(1, 1000),
                                              status => ok}, 1, undefined}} || I <- [1, 2, 3]])},
    WriteUs = median([element(1, timer:tc(fun() -> beamlab_runtime_checkpoint:save(Cp, Big) end))
                      || _ <- lists:seq(1, 1000)]),
    _ = file:del_dir_r(Dir),
    io:format("~-30s ~14s ~14s ~12s  ~s~n",
              ["", "without", "with", "with/without", "(p25..p75)"]),
    [begin
         Ratios = [W / O || {O, W} <- Rs],
         M = median(Ratios),
         io:format("~-30s ~14.4g ~14.4g ~12.4f  (~.4f..~.4f) ~s~n",
                   [Name, median([O || {O, _} <- Rs]), median([W || {_, W} <- Rs]), M,
                    quartile(Ratios, 1), quartile(Ratios, 3),
                    case quartile(Ratios, 1) =< 1.0 andalso 1.0 =< quartile(Ratios, 3) of
                        true -> "within noise";
                        false -> "DIFFERENT"
                    end])
     end || {Name, Rs} <- Results],
    io:format("(rates: iterations per second; timed: ns per sample, lower is better)~n"),
    Share = WriteUs / 1.0e6 * 100,
    io:format("one checkpoint write (3 jobs x 1000 samples): median ~.1f us; while a job runs on "
              "its own at most one a second (when jobs alternate, one per sample, while all are "
              "suspended): at most ~.3f% of one core (target < 0.1%) ~s~n",
              [float(WriteUs), Share, case Share < 0.1 of true -> "PASS"; false -> "FAIL" end]),
    io:format("load average before/after: ~ts / ~ts~n", [Load0, loadavg()]),
    halt(0).

round_(I, Jobs, Opts, Cp) ->
    Without = fun() -> measure(Jobs, Opts, none) end,
    With = fun() -> measure(Jobs, Opts, Cp) end,
    case I rem 2 of
        1 -> A = Without(), B = With(), {A, B};
        0 -> B = With(), A = Without(), {A, B}
    end.

%% Mean rate over the jobs (continuous), or mean ns per sample (timed).
measure(Jobs, Opts, Cp) ->
    {ok, #{benchmarks := Bs}} =
        beamlab_engine:run(Jobs, Opts#{warmup => 1, checks => false, checkpoint => Cp}, undefined),
    case maps:is_key(loop, Opts) of
        true -> lists:sum([lists:sum(S) / length(S) || #{samples := S} <- Bs]) / length(Bs);
        false -> lists:sum([Q || #{extra := #{<<"qps">> := Q}} <- Bs]) / length(Bs)
    end.

median(L) ->
    S = lists:sort(L),
    Len = length(S),
    case Len rem 2 of
        1 -> lists:nth(Len div 2 + 1, S);
        0 -> (lists:nth(Len div 2, S) + lists:nth(Len div 2 + 1, S)) / 2
    end.

quartile(L, Q) ->
    S = lists:sort(L),
    lists:nth(max(1, round(Q * length(S) / 4)), S).

loadavg() ->
    case file:read_file("/proc/loadavg") of
        {ok, B} -> hd(string:lexemes(binary_to_list(B), " "));
        _ -> "?"
    end.
