%%% @doc Why `serialization[term=map_of_lists]' is slower on the JIT than
%%% on the interpreter (docs/jit-study.md): decoding the same binary in a
%%% loop, each flavour's time per binary_to_term/1, garbage collections per
%%% decode and where their time was spent (normal or dirty CPU schedulers,
%%% from msacc). bench/jit_decode_gc.sh runs it on both flavours.
%%%
%%%   erl -emu_flavor jit|emu -noshell -pa DIR -run jit_decode_gc main
-module(jit_decode_gc).

-export([main/0]).

-define(WARMUP, 2000).
-define(DECODES, 20000).

%% The suite's map_of_lists shape (10 keys, each a list of 1000 integers),
%% small integers so that no bignum work hides the effect.
-spec main() -> no_return().
main() ->
    Bin = term_to_binary(maps:from_list([{K, lists:seq(1, 1000)} || K <- lists:seq(1, 10)])),
    decode(Bin, ?WARMUP),
    {Gcs0, _, _} = erlang:statistics(garbage_collection),
    msacc:start(),
    {Us, ok} = timer:tc(fun() -> decode(Bin, ?DECODES) end),
    Stats = msacc:stats(),
    msacc:stop(),
    {Gcs1, _, _} = erlang:statistics(garbage_collection),
    io:format("~s: ~.1f us per decode, ~.2f garbage collections per decode, "
              "GC time on normal schedulers ~b ms, on dirty CPU schedulers ~b ms~n",
              [erlang:system_info(emu_flavor), Us / ?DECODES, (Gcs1 - Gcs0) / ?DECODES,
               gc_ms(Stats, scheduler), gc_ms(Stats, dirty_cpu_scheduler)]),
    halt().

decode(_Bin, 0) ->
    ok;
decode(Bin, N) ->
    _ = binary_to_term(Bin),
    decode(Bin, N - 1).

gc_ms(Stats, Type) ->
    lists:sum([maps:get(gc, C, 0) + maps:get(gc_full, C, 0)
               || #{type := T, counters := C} <- Stats, T =:= Type]) div 1000.
