#!/bin/sh
# bench/tree_reader.sh: does the telemetry sampler stay on its ticks under
# load now that beamlab's process tree is read beside it (issue #35,
# 54f9436 for a watched node, then this VM's own sampler), and what one
# reading sent to the sampler weighs.
#
# N_YES CPU-bound competitors (`yes >/dev/null', default 4, started in this
# script's session and stopped by their process ids), then ROUNDS rounds
# (default 2) of `run 'lists:seq(1,100).' -d 1000 -s SAMPLES -v` (default
# 15 samples of 1 s), each round with ./beamlab (or $BEAMLAB) and, when
# BASE names another build's escript, that build too, interleaved so both
# see the same minutes. Per run, from its telemetry: how late each sample
# was taken after its tick (t_ms - k*1000), the sampler's own time per
# sample (monitor_wall_pct of its interval) and the latest a sample was
# done after its tick (both together), as median and max, and how many
# samples have no `tree_cpu_cores' (the reader's reading came late).
# Then the size of one reading message at this machine's /proc, the whole
# walk (what 54f9436 sent) against what is sent now, by
# erts_debug:flat_size and term_to_binary.
set -eu
cd "$(dirname "$0")/.."
BEAMLAB=${BEAMLAB:-./beamlab}
BASE=${BASE:-}
N_YES=${N_YES:-4}
ROUNDS=${ROUNDS:-2}
SAMPLES=${SAMPLES:-15}
DIR=${KEEP:-$(mktemp -d "${TMPDIR:-/tmp}/tree-reader.XXXXXX")}
mkdir -p "$DIR"
echo "documents in $DIR"

pids=""
stop() { [ -z "$pids" ] || kill $pids 2>/dev/null || true; }
trap stop EXIT INT TERM
i=0
while [ "$i" -lt "$N_YES" ]; do yes >/dev/null & pids="$pids $!"; i=$((i + 1)); done

r=1
while [ "$r" -le "$ROUNDS" ]; do
    for b in new ${BASE:+base}; do
        exe=$BEAMLAB; [ "$b" = base ] && exe=$BASE
        "$exe" 'lists:seq(1,100).' -d 1000 -s "$SAMPLES" -v --save "$DIR/$b-$r.json" >/dev/null 2>&1
    done
    r=$((r + 1))
done
stop; pids=""

erl -noshell -pa _build/default/lib/beamlab/ebin -eval '
    [Dir | _] = init:get_plain_arguments(),
    Files = lists:sort(filelib:wildcard(filename:join(Dir, "*.json"))),
    Med = fun(L) -> lists:nth((length(L) + 1) div 2, lists:sort(L)) end,
    lists:foreach(
      fun(F) ->
              {ok, D} = beamlab_result:load(F),
              T = maps:get(telemetry, D),
              Ts = maps:get(<<"t_ms">>, T),
              %% (the last sample is taken when the run stops, off its tick)
              N = length(Ts) - 1,
              Late = [X - 1000 * K || {K, X} <- lists:zip(lists:seq(1, N), lists:sublist(Ts, N))],
              Dts = lists:sublist([hd(Ts) | [B - A || {A, B} <- lists:zip(lists:droplast(Ts), tl(Ts))]], N),
              Cost = [P * Dt / 100 || {P, Dt} <- lists:zip(lists:sublist(maps:get(<<"monitor_wall_pct">>, T), N), Dts)],
              Done = [L + C || {L, C} <- lists:zip(Late, Cost)],
              NoTree = length([x || null <- lists:sublist(maps:get(<<"tree_cpu_cores">>, T, []), N)]),
              io:format("~-12s samples ~2b  late ms median ~4b max ~4b  sampler ms median ~4b max ~4b  "
                        "done after tick max ~4b  no tree figure ~b~n",
                        [filename:basename(F, ".json"), N, Med(Late), lists:max(Late), round(Med(Cost)),
                         round(lists:max(Cost)), round(lists:max(Done)), NoTree])
      end, Files),
    {ok, Us, Tree} = beamlab_runtime_probe:tree_cpu("/", [os:getpid()], beamlab_runtime_probe:tree_root(), undefined),
    Whole = {tree_cpu, self(), {Us, 0, Tree}},
    Now = {tree_cpu, self(), {Us, 0}},
    io:format("one reading at ~b processes in /proc: whole walk ~b words, ~b bytes; sent now ~b words, ~b bytes~n",
              [length(filelib:wildcard("/proc/[0-9]*")), erts_debug:flat_size(Whole), byte_size(term_to_binary(Whole)),
               erts_debug:flat_size(Now), byte_size(term_to_binary(Now))]),
    halt().' -extra "$DIR"
