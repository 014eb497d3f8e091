#!/usr/bin/env escript
%%% A report over a long history of saved runs (#34): before, every
%%% document was held whole and drawn in detail (3,000 runs took 62 s and
%%% 949 MB through `beamlab report DIR'); now each file is read, summarised
%%% to what the trend needs and dropped, and only the newest runs
%%% (beamlab_report_html:detail_runs/0) are loaded whole for the page's
%%% detail. Both ways run here, in one VM, on the same N files (made from
%%% one real document shape: two benchmarks, 30 samples each, an
%%% environment report), alternately, each in a fresh process; printed:
%%% the median wall time and peak memory (erlang:memory(total) sampled
%%% every 5 ms, above the VM at rest after a collection) of each, and the
%%% ratios. The "whole" way is today's page code given every document: it
%%% no longer computes the N-way comparison a history never shows, so
%%% the real before (62 s, 949 MB at 3,000 runs) was slower still.
%%% Usage (from the repository root, after `rebar3 compile'):
%%%   escript bench/report_history.escript [Runs] [Rounds]
-mode(compile).

main(Args) ->
    {N, Rounds} = case Args of
                      [] -> {3000, 3};
                      [A] -> {list_to_integer(A), 3};
                      [A, B | _] -> {list_to_integer(A), list_to_integer(B)}
                  end,
    Root = filename:dirname(filename:dirname(filename:absname(escript:script_name()))),
    true = code:add_patha(filename:join([Root, "_build", "default", "lib", "beamlab", "ebin"])),
    {ok, Dir} = beamlab_runtime_file:private_dir("beamlab-report-bench"),
    Files = make_runs(Dir, N),
    io:format("report over a history: ~b runs (~ts on disk), ~b rounds, OTP ~ts~n",
              [N, beamlab_format_units:bytes(lists:sum([filelib:file_size(F) || F <- Files])), Rounds,
               erlang:system_info(otp_release)]),
    Results = [[measure(Mode, Files) || Mode <- order(R)] || R <- lists:seq(1, Rounds)],
    Flat = lists:append(Results),
    Med = fun(Mode, K) -> median([maps:get(K, M) || {Md, M} <- Flat, Md =:= Mode]) end,
    [io:format("~-28s ~8.2f s ~10.1f MB~n", [Label, Med(Mode, secs), Med(Mode, mb)])
     || {Mode, Label} <- [{whole, "every document whole"}, {summarised, "summaries + newest whole"}]],
    io:format("ratio whole/summarised: time ~.2fx, peak memory ~.2fx~n",
              [Med(whole, secs) / Med(summarised, secs), Med(whole, mb) / Med(summarised, mb)]),
    _ = os:cmd("rm -rf '" ++ Dir ++ "'"),
    ok.

order(R) when R rem 2 =:= 1 -> [whole, summarised];
order(_) -> [summarised, whole].

median(L) -> lists:nth((length(L) + 1) div 2, lists:sort(L)).

%% N saved runs of one shape, started a minute apart.
make_runs(Dir, N) ->
    rand:seed(exsss, {7, 8, 9}),
    Env = beamlab_env:report(),
    [begin
         Started = iolist_to_binary(io_lib:format("2026-~2..0b-~2..0bT~2..0b:~2..0b:00Z",
                                                  [1 + I div 40320, 1 + (I div 1440) rem 28, (I div 60) rem 24, I rem 60])),
         R0 = beamlab_result:new(bench, #{command => ["beamlab", "ok."], started_at => Started}),
         Bs = [beamlab_result:benchmark(Name, [Base * (0.9 + 0.2 * rand:uniform()) || _ <- lists:seq(1, 30)],
                                        #{unit => <<"ns">>, better => lower})
               || {Name, Base} <- [{<<"ok.">>, 40.0}, {<<"rand:uniform().">>, 90.0}]],
         R = beamlab_result:finish(beamlab_result:set(env, Env, beamlab_result:add_benchmarks(R0, Bs)),
                                   #{finished_at => Started, partial => false}),
         F = filename:join(Dir, io_lib:format("r~5..0b.json", [I])),
         {ok, _} = beamlab_result:save(R, F),
         F
     end || I <- lists:seq(1, N)].

%% One way, in a fresh process, its peak memory above the VM at rest.
measure(Mode, Files) ->
    [erlang:garbage_collect(P) || P <- processes()],
    Idle = erlang:memory(total),
    Self = self(),
    Peak = spawn(fun() -> process_flag(priority, high), peak(Self, Idle) end),
    {Pid, Ref} = spawn_monitor(fun() ->
                                       T0 = erlang:monotonic_time(microsecond),
                                       {ok, Html} = render(Mode, Files),
                                       true = byte_size(Html) > 0,
                                       exit({done, erlang:monotonic_time(microsecond) - T0})
                               end),
    Us = receive {'DOWN', Ref, process, Pid, {done, T}} -> T end,
    Peak ! {stop, self()},
    Max = receive {peak, M} -> M end,
    {Mode, #{secs => Us / 1.0e6, mb => (Max - Idle) / 1.0e6}}.

peak(Parent, Max) ->
    receive {stop, From} -> From ! {peak, max(Max, erlang:memory(total))}
    after 5 -> peak(Parent, max(Max, erlang:memory(total)))
    end.

render(whole, Files) ->
    Runs = beamlab_command_compare:load_runs(Files),
    H = beamlab_command_compare:history(Runs, #{order => auto}),
    beamlab_report_html:render(Runs, #{history => H});
render(summarised, Files) ->
    {Runs, Opts} = beamlab_command_report:history_runs(Files, #{}, auto),
    beamlab_report_html:render(Runs, Opts).
