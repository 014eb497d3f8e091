#!/usr/bin/env escript
%%% Harness overhead of beamlab's continuous mode, measured in one run.
%%%
%%%   (1) `ok.': beamlab's iteration rate vs a bare hand-written counted
%%%       loop (`loop(0) -> ok; loop(N) -> loop(N - 1).'). Target: the bare
%%%       loop is at most 2.0x faster.
%%%   (2) `rand:uniform().': beamlab's reported time per iteration vs a bare
%%%       loop of the same call timed with timer:tc. Target: within 3%.
%%%
%%% The four measurements are interleaved over several rounds (so machine
%%% drift hits all of them alike); each round gives a ratio of adjacent
%%% measurements and the median ratio over the rounds is reported. The bare
%%% loops run in a fresh process each time, as beamlab's workers do.
%%% Usage (from the repository root, after `rebar3 compile'):
%%%   escript bench/overhead.escript [Rounds] [SampleMs]
-mode(compile).

main(Args) ->
    {Rounds, Ms} = case Args of
                       [] -> {15, 1000};
                       [R] -> {list_to_integer(R), 1000};
                       [R, D | _] -> {list_to_integer(R), list_to_integer(D)}
                   end,
    Root = filename:dirname(filename:dirname(filename:absname(escript:script_name()))),
    true = code:add_patha(filename:join([Root, "_build", "default", "lib", "beamlab", "ebin"])),
    {module, _} = code:ensure_loaded(beamlab_engine),
    bare_module(),
    Load0 = loadavg(),
    io:format("overhead: ~w interleaved rounds, ~w ms per measurement, ~ts ~ts, ~w schedulers~n",
              [Rounds, Ms, erlang:system_info(otp_release), erlang:system_info(emu_flavor),
               erlang:system_info(schedulers_online)]),
    %% Calibrate the bare loops to run about as long as one beamlab sample.
    OkN = calibrate(fun(N) -> bare_ok:loop(N) end, Ms),
    RandN = calibrate(fun(N) -> bare_rand:loop(N) end, Ms),
    Results = [round_(I, Ms, OkN, RandN) || I <- lists:seq(1, Rounds)],
    {BeamOk, BareOk, BeamRand, BareRand} = lists:foldl(
        fun({A, B, C, D}, {As, Bs, Cs, Ds}) -> {[A | As], [B | Bs], [C | Cs], [D | Ds]} end,
        {[], [], [], []}, Results),
    MBeamOk = median(BeamOk), MBareOk = median(BareOk),
    MBeamRand = median(BeamRand), MBareRand = median(BareRand),
    io:format("~-34s ~14s ~14s~n", ["", "beamlab", "bare loop"]),
    io:format("~-34s ~14.3f ~14.3f~n", ["ok.              ns/iteration", 1.0e9 / MBeamOk, 1.0e9 / MBareOk]),
    io:format("~-34s ~14.3f ~14.3f~n", ["rand:uniform().  ns/iteration", MBeamRand, MBareRand]),
    %% Ratios are taken within each round (adjacent measurements see the
    %% same machine state), then the median over rounds.
    OkRatios = [BO / BE || {BE, BO, _, _} <- Results],
    RandRatios = [BE / BA || {_, _, BE, BA} <- Results],
    OkRatio = median(OkRatios),
    RandRatio = median(RandRatios),
    io:format("median of per-round ratios:~n"),
    io:format("(1) ok.             bare-loop rate / beamlab rate = ~.3f  (target <= 2.0)  ~s~n",
              [OkRatio, verdict(OkRatio =< 2.0)]),
    io:format("(2) rand:uniform()  beamlab time / bare time      = ~.4f (target 0.97..1.03) ~s~n",
              [RandRatio, verdict(abs(RandRatio - 1.0) =< 0.03)]),
    io:format("spread of the per-round ratios (p25..p75): (1) ~.3f..~.3f  (2) ~.3f..~.3f~n",
              [quartile(OkRatios, 1), quartile(OkRatios, 3),
               quartile(RandRatios, 1), quartile(RandRatios, 3)]),
    io:format("load average before/after: ~ts / ~ts~n", [Load0, loadavg()]),
    halt(0).

quartile(L, Q) ->
    S = lists:sort(L),
    lists:nth(max(1, round(Q * length(S) / 4)), S).

loadavg() ->
    case file:read_file("/proc/loadavg") of
        {ok, B} -> hd(string:lexemes(binary_to_list(B), " "));
        _ -> "?"
    end.

verdict(true) -> "PASS";
verdict(false) -> "FAIL".

%% Odd rounds measure beamlab first, even rounds the bare loop first
%% (ABBA), so a linear drift within a round cancels out.
round_(I, Ms, OkN, RandN) ->
    Pair = fun(A, B) when I rem 2 =:= 1 -> {VA, VB} = {A(), B()}, {VA, VB};
              (A, B) -> VB = B(), VA = A(), {VA, VB}
           end,
    {BeamOk, BareOk} = Pair(fun() -> beam_rate("ok.", Ms) end,
                            fun() -> OkN * 1.0e6 / tc(fun() -> bare_ok:loop(OkN) end) end),
    {BeamRand, BareRand} = Pair(fun() -> beam_iteration_ns("rand:uniform().", Ms) end,
                                fun() -> tc(fun() -> bare_rand:loop(RandN) end) * 1000 / RandN end),
    {BeamOk, BareOk, BeamRand, BareRand}.

beam_rate(Code, Ms) ->
    #{extra := #{qps := Q}} = beam(Code, Ms),
    Q.

beam_iteration_ns(Code, Ms) ->
    #{extra := #{iteration_ns := I}} = beam(Code, Ms),
    I.

%% One beamlab sample after a short warm-up sample, default engine settings.
beam(Code, Ms) ->
    {ok, #{benchmarks := [B]}} =
        beamlab_engine:run([#{runner => Code}],
                           #{samples => 1, warmup => 1, duration => Ms, checks => false},
                           undefined),
    B.

%% In a fresh process, like beamlab's workers: a process's heap size changes
%% how often an allocating runner (rand:uniform/0 makes floats) collects
%% garbage, which is not harness overhead.
tc(Fun) ->
    Self = self(),
    Pid = spawn_link(fun() -> {Us, _} = timer:tc(Fun), Self ! {self(), Us} end),
    receive {Pid, Us} -> max(1, Us) end.

calibrate(Fun, Ms) ->
    calibrate(Fun, Ms, 100000).

calibrate(Fun, Ms, N) ->
    Us = tc(fun() -> Fun(N) end),
    case Us >= Ms * 100 of
        true -> round(N * (Ms * 1000) / Us);
        false -> calibrate(Fun, Ms, N * 4)
    end.

median(L) ->
    S = lists:sort(L),
    Len = length(S),
    case Len rem 2 of
        1 -> lists:nth(Len div 2 + 1, S);
        0 -> (lists:nth(Len div 2, S) + lists:nth(Len div 2 + 1, S)) / 2
    end.

%% The bare loops are compiled, like beamlab's generated code.
bare_module() ->
    compile_load("-module(bare_ok). -export([loop/1]).\n"
                 "loop(0) -> ok; loop(N) -> loop(N - 1).\n"),
    compile_load("-module(bare_rand). -export([loop/1]).\n"
                 "loop(0) -> ok; loop(N) -> rand:uniform(), loop(N - 1).\n").

compile_load(Src) ->
    {ok, Tokens, _} = erl_scan:string(Src),
    Forms = split(Tokens, []),
    {ok, Mod, Bin} = compile:forms(Forms, [binary]),
    {module, Mod} = code:load_binary(Mod, "bare", Bin).

split([], []) -> [];
split([{dot, _} = D | Rest], Acc) ->
    {ok, F} = erl_parse:parse_form(lists:reverse([D | Acc])),
    [F | split(Rest, [])];
split([T | Rest], Acc) -> split(Rest, [T | Acc]).
