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
%%%
%%% Then what the recording does to the workers' garbage collection:
%%% message_load (96 processes, 10 ms wait, 2 s warm-up, 3 s measured)
%%% with record=false and record=true alternately, 3 runs each; per
%%% setting the median of the VM's collections per worker per second during
%%% the measured period and the most any worker is charged on its virtual
%%% binary heaps (a histogram reference copied onto a worker's heap is
%%% charged whole and turns its collections into full sweeps).
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
              "  inline / record/2                     ~6.2f~n", [Base, Inl, Call, Inl / Call]),
    Runs = [{Rec, gc_run(Rec)} || _ <- lists:seq(1, 3), Rec <- [false, true]],
    GcMed = fun(Rec) -> lists:nth(2, lists:sort([G || {Rc, {G, _}} <- Runs, Rc =:= Rec])) end,
    Charged = fun(Rec) -> lists:max([W || {Rc, {_, W}} <- Runs, Rc =:= Rec]) end,
    io:format("~nmessage_load workers, measured period (median of 3 runs each):~n"
              "                GCs per worker per s   most words charged to a worker~n"
              "  record=false  ~8.1f               ~10b~n"
              "  record=true   ~8.1f               ~10b~n"
              "  true / false  ~8.2f~n",
              [GcMed(false), Charged(false), GcMed(true), Charged(true),
               GcMed(true) / GcMed(false)]).

%% One message_load run; collections per worker per second over 2 s of
%% its measured period, and the largest virtual binary heap charge.
gc_run(Rec) ->
    M = beamlab_workload_message_load,
    P = #{variant => original, procs => 96, wait => 10, warmup => 2000, duration => 3000,
          record => Rec},
    {ok, S} = M:setup(P),
    Self = self(),
    Runner = spawn_link(fun() -> Self ! {self(), M:run(S, P)} end),
    timer:sleep(2500),
    {links, Ls} = process_info(Runner, links),
    Ws = [W || W <- Ls, W =/= Self],
    {N0, _, _} = erlang:statistics(garbage_collection),
    timer:sleep(2000),
    {N1, _, _} = erlang:statistics(garbage_collection),
    Words = lists:max([proplists:get_value(bin_vheap_size, I)
                       + proplists:get_value(bin_old_vheap_size, I)
                       || W <- Ws,
                          {garbage_collection_info, I} <- [process_info(W, garbage_collection_info)]]),
    receive {Runner, {ok, _, _}} -> ok end,
    {(N1 - N0) / 96 / 2, Words}.

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
