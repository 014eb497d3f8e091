#!/usr/bin/env escript
%% bench/check_rounds.escript: check's paired rule under load (#35,
%% docs/statistics.md "check's rounds under load").
%%
%%   bench/check_rounds.escript sim
%%       the sign test of beamlab_stats_paired on simulated rounds: log
%%       ratio normal (sd 3.2%) plus, with probability q, one side's VM
%%       1.2-2.0x slower; 14, 18 and 24 rounds at the family's 0.005;
%%       false verdicts of 1000 A/A checks, +20% caught of 1000 (seeded)
%%   bench/check_rounds.escript recompute KEEP_DIR
%%       the check documents bench/aa.sh kept (KEEP_DIR/runs/check*.json,
%%       CHECK_ROUNDS=24): each cpu cell's verdicts recomputed with the
%%       old rule (the first 14 rounds, as the old default ran them) and
%%       the new (all the rounds), the family of each document's entries
%%       as the check forms it; the rounds' spread (log ratios beyond
%%       +-8% of their check's median); what the new rule's `~' could
%%       have seen (`detectable')
%%
%% Run from the repository root after `make'.
-mode(compile).

main(["sim"]) ->
    ebin(),
    C = fun(V, Vs) -> length([x || X <- Vs, X =:= V]) end,
    io:format("rounds  q     false of 1000  +20% caught of 1000~n"),
    [begin
         AA = verdicts(N, Q, 0.0, 1000, 1),
         S = verdicts(N, Q, math:log(1.2), 1000, 2),
         io:format("~-7b ~-5.2f ~-14b ~b~n", [N, Q, C(regressed, AA) + C(improved, AA), C(regressed, S)])
     end || N <- [14, 18, 24], Q <- [0.0, 0.05, 0.10, 0.15]];
main(["recompute", Dir]) ->
    ebin(),
    Files = lists:sort(filelib:wildcard(filename:join([Dir, "runs", "check*.json"]))),
    Cells = lists:foldl(fun(F, Acc) ->
                                Cell = cell(filename:basename(F)),
                                {ok, Doc} = beamlab_result:load(F),
                                maps:update_with(Cell, fun(L) -> [Doc | L] end, [Doc], Acc)
                        end, #{}, Files),
    [begin
         Docs = lists:reverse(maps:get(Cell, Cells)),
         Old = [V || D <- Docs, {V, _} <- [verdict(D, 14)]],
         New = [V || D <- Docs, {V, _} <- [verdict(D, all)]],
         Seen = lists:sort([X || D <- Docs, {unchanged, X} <- [verdict(D, all)], is_number(X)]),
         Rounds = lists:usort([length(cpu_pairs(D)) || D <- Docs]),
         io:format("~ts: N=~b (rounds ~w)~n  old rule (14 rounds): ~ts~n  new rule (all rounds): ~ts~n",
                   [Cell, length(Docs), Rounds, counts(Old), counts(New)]),
         Logs = lists:append([spread(D) || D <- Docs]),
         Out = length([x || L <- Logs, abs(L) > math:log(1.08)]),
         io:format("  rounds: ~b, ~b beyond +-8% of their check's median (~.1f%)~n",
                   [length(Logs), Out, 100 * Out / max(1, length(Logs))]),
         [io:format("  detectable of the new rule's ~~ (~b): median +~.1f%, ~.1f% .. ~.1f%~n",
                    [length(Seen), 100 * lists:nth((length(Seen) + 1) div 2, Seen),
                     100 * hd(Seen), 100 * lists:last(Seen)]) || Seen =/= []]
     end || Cell <- lists:sort(maps:keys(Cells))],
    ok;
main(_) ->
    io:format(standard_error, "usage: bench/check_rounds.escript sim | recompute KEEP_DIR~n", []),
    halt(2).

ebin() ->
    true = code:add_patha("_build/default/lib/beamlab/ebin").

%% check-cpu-20-7.json -> check-cpu-20
cell(Name) ->
    [Base | _] = string:split(filename:rootname(Name), "-", trailing),
    Base.

%% The paired values of a document's entry: [{Base, Head}] per round.
pairs(#{samples := Head, extra := #{<<"base">> := Base}}) when length(Head) =:= length(Base) ->
    lists:zip(Base, Head);
pairs(_) ->
    [].

cpu_pairs(#{benchmarks := Bs}) ->
    lists:append([pairs(B) || #{metric := <<"cpu">>} = B <- Bs]).

%% The cpu entry's verdict with the first `N' rounds (`all': every one),
%% judged in the family of the document's entries over those rounds.
verdict(#{benchmarks := Bs}, N) ->
    Take = fun(Ps) when N =:= all -> Ps; (Ps) -> lists:sublist(Ps, N) end,
    Differing = [length([x || {B, H} <- Take(pairs(E)), B /= H]) || E <- Bs, pairs(E) =/= []],
    #{entry_alpha := A} = beamlab_stats_paired:family(0.01, Differing),
    case [Take(pairs(E)) || #{metric := <<"cpu">>} = E <- Bs, pairs(E) =/= []] of
        [Ps] ->
            {Base, Head} = lists:unzip(Ps),
            #{verdict := V, detectable := X} = beamlab_stats_paired:compare(Base, Head,
                                                                             #{alpha => A, threshold => 0.05}),
            {V, X};
        [] -> {failed, undefined}
    end.

counts(Vs) ->
    Kinds = lists:usort(Vs),
    lists:flatten(lists:join(", ", [io_lib:format("~b ~ts", [length([x || V <- Vs, V =:= K]), K]) || K <- Kinds])).

%% The cpu rounds' log ratios, centred on their median.
spread(Doc) ->
    case cpu_pairs(Doc) of
        [] -> [];
        Ps ->
            Logs = [math:log(H / B) || {B, H} <- Ps, B > 0, H > 0],
            M = beamlab_stats:median(Logs),
            [L - M || L <- Logs]
    end.

rounds(N, Q, Shift, Rng0) ->
    lists:mapfoldl(fun(_, R0) ->
                           {Z, R1} = rand:normal_s(R0),
                           {U, R2} = rand:uniform_s(R1),
                           {Mag, R3} = rand:uniform_s(R2),
                           {Side, R4} = rand:uniform_s(R3),
                           Out = case U < Q of
                                     true when Side < 0.5 -> 0.2 + 0.5 * Mag;
                                     true -> -(0.2 + 0.5 * Mag);
                                     false -> 0.0
                                 end,
                           {math:exp(Shift + 0.032 * Z + Out), R4}
                   end, Rng0, lists:seq(1, N)).

verdicts(N, Q, Shift, Trials, Seed) ->
    {Vs, _} = lists:mapfoldl(
                fun(_, R0) ->
                        {Ratios, R1} = rounds(N, Q, Shift, R0),
                        #{verdict := V} = beamlab_stats_paired:compare([1.0 || _ <- Ratios], Ratios,
                                                                        #{alpha => 0.005}),
                        {V, R1}
                end, rand:seed_s(exsss, {Seed, 35, 35}), lists:seq(1, Trials)),
    Vs.
