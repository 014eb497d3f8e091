%%% @doc Workload `serialization': `term_to_binary/2' followed by
%%% `binary_to_term/1' on representative terms, with the encoding options
%%% that matter (compressed, minor_version, deterministic).
-module(beamlab_workload_serialization).
-behaviour(beamlab_workload).

-export([info/0, params/0, setup/1, run/2, teardown/1]).
-export([term/1]).

%% @doc Workload description.
-spec info() -> beamlab_workload:info().
info() ->
    #{name => <<"serialization">>,
      summary => <<"term_to_binary + binary_to_term of representative terms; size and time">>,
      definition =>
          <<"Time of K iterations of binary_to_term(term_to_binary(Term, "
            "Opts)), divided by K (us per encode+decode). Terms: map_of_lists "
            "(10 keys, each a list of 1000 integers above 2^40, like the Jobim "
            "table's map of long lists), binary (64 KiB of random bytes), "
            "deep_tuple (tuples nested 200 deep, each with an integer, a float "
            "and an atom), atoms (a list of 1000 distinct atoms). Opts: "
            "{compressed, Level} when Level > 0, {minor_version, V}, and "
            "deterministic when set. The encoded size is a counter.">>,
      unit => <<"us">>, better => lower, metric => <<"encode_decode">>,
      measure => <<"wall-clock time per encode+decode">>,
      repeat => #{quick => 5, full => 5},
      checks => <<"the last decoded term equals the original (=:=, untimed)">>}.

%% @doc Parameters.
-spec params() -> [beamlab_workload:param_spec()].
params() ->
    [#{key => term, default => [map_of_lists, binary, deep_tuple, atoms],
       full => [map_of_lists, binary, deep_tuple, atoms],
       type => {enum, [map_of_lists, binary, deep_tuple, atoms]}, help => <<"term encoded">>},
     #{key => compressed, default => [0, 6], full => [0, 1, 6, 9],
       type => {int_range, 0, 9}, help => <<"zlib level, 0 = not compressed">>},
     #{key => minor_version, default => 1, full => [1, 2], type => {int_range, 0, 2},
       help => <<"external term format minor version">>},
     #{key => deterministic, default => false, full => [false, true], type => boolean,
       help => <<"deterministic map encoding (OTP 24+)">>},
     #{key => k, default => 40, full => 100, type => pos_integer,
       help => <<"encode+decode pairs per repetition">>}].

%% @doc Build the term once.
-spec setup(beamlab_workload:params()) -> {ok, {term(), list()}}.
setup(#{term := Kind} = P) ->
    {ok, {term(Kind), options(P)}}.

%% @doc One repetition.
-spec run({term(), list()}, beamlab_workload:params()) -> {ok, beamlab_workload:rep()}.
run({Term, Opts}, #{k := K}) ->
    T0 = erlang:monotonic_time(),
    Last = loop(Term, Opts, K, none),
    T1 = erlang:monotonic_time(),
    Size = byte_size(term_to_binary(Term, Opts)),
    {ok, #{value => beamlab_workload:us(T1 - T0) / K,
           counters => #{encoded_bytes => Size, round_trips => K},
           check => beamlab_workload:check_all([{"decoded term equals the original", true,
                                                 Last =:= Term}])}}.

%% @doc Nothing to clean.
-spec teardown(term()) -> ok.
teardown(_) -> ok.

%% @doc The representative terms (deterministic, built from a fixed seed).
-spec term(map_of_lists | binary | deep_tuple | atoms) -> term().
term(map_of_lists) ->
    maps:from_list([{list_to_binary("key" ++ integer_to_list(K)),
                     [(1 bsl 40) + K * 1000 + I || I <- lists:seq(1, 1000)]}
                    || K <- lists:seq(1, 10)]);
term(binary) ->
    S0 = rand:seed_s(exsss, {1, 2, 3}),
    {Bin, _} = rand:bytes_s(65536, S0),
    Bin;
term(deep_tuple) ->
    lists:foldl(fun(I, Acc) -> {I, I / 3, deep, Acc} end, leaf, lists:seq(1, 200));
term(atoms) ->
    [list_to_atom("beamlab_serialization_atom_" ++ integer_to_list(I))
     || I <- lists:seq(1, 1000)].

options(#{compressed := C, minor_version := V, deterministic := D}) ->
    [{compressed, C} || C > 0] ++ [{minor_version, V}] ++ [deterministic || D].

%% The decoded term is carried to the end so the work cannot be dropped;
%% it is compared outside the timed loop.
loop(_Term, _Opts, 0, Last) -> Last;
loop(Term, Opts, K, _Last) ->
    loop(Term, Opts, K - 1, binary_to_term(term_to_binary(Term, Opts))).
