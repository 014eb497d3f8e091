#!/usr/bin/env escript
%%! -pa _build/default/lib/beamlab/ebin
%%% What message_load's recording (record=true) adds per goodput message,
%%% measured in one run (run from the repository root after
%%% `rebar3 compile'): the inline bucket add the loop does now
%%% (`counters:add' on the latency's exact bucket, behind a guard) and the
%%% `beamlab_stats_hist:record/2' call it replaced, each on latencies of
%%% 1..40 us as message_load sees them, next to the bare loop (the floor).
%%% Median of 7 runs of 5 million records in one process; prints ns per
%%% record and the ratio of the two forms.
-mode(compile).

main(_) ->
    H = beamlab_stats_hist:new(#{significant_digits => 3, exact => false}),
    {C, B} = beamlab_stats_hist:inline_buckets(H),
    N = 5000000,
    Vs = list_to_tuple([rand:uniform(40) || _ <- lists:seq(1, 1024)]),
    Per = fun(F) -> {Us, _} = timer:tc(F), Us * 1000 / N end,
    R = [{Per(fun() -> base(Vs, N) end), Per(fun() -> inline(Vs, C, B, N) end),
          Per(fun() -> call(Vs, H, N) end)} || _ <- lists:seq(1, 7)],
    Med = fun(L) -> lists:nth(4, lists:sort(L)) end,
    Base = Med([X || {X, _, _} <- R]),
    Inl = Med([X || {_, X, _} <- R]) - Base,
    Call = Med([X || {_, _, X} <- R]) - Base,
    io:format("ns per record (loop floor ~.1f ns subtracted):~n"
              "  inline bucket add (record=true now)   ~6.1f~n"
              "  beamlab_stats_hist:record/2 (before)  ~6.1f~n"
              "  inline / record/2                     ~6.2f~n", [Base, Inl, Call, Inl / Call]).

base(_, 0) -> ok;
base(Vs, N) -> _ = element(1 + (N band 1023), Vs), base(Vs, N - 1).

inline(_, _, _, 0) -> ok;
inline(Vs, C, B, N) ->
    D = element(1 + (N band 1023), Vs),
    if D >= 0, D < B -> counters:add(C, D + 1, 1); true -> ok end,
    inline(Vs, C, B, N - 1).

call(_, _, 0) -> ok;
call(Vs, H, N) ->
    D = element(1 + (N band 1023), Vs),
    beamlab_stats_hist:record(H, max(D, 0)),
    call(Vs, H, N - 1).
