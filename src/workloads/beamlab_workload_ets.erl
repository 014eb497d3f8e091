%%% @doc Workload `ets': concurrent readers and writers on one ETS table,
%%% set or ordered_set, with and without read/write concurrency.
-module(beamlab_workload_ets).
-behaviour(beamlab_workload).

-export([info/0, params/0, setup/1, run/2, teardown/1, normalize/1, format_error/1]).

%% @doc Workload description.
-spec info() -> beamlab_workload:info().
info() ->
    #{name => <<"ets">>,
      summary => <<"R readers and W writers on one set/ordered_set table, +/- read/write concurrency">>,
      definition =>
          <<"A public table of `keys` integer keys is filled in setup. "
            "R reader processes each do `ops` ets:lookup/2 of random keys, W "
            "writer processes each do `ops` ets:insert/2 of random existing "
            "keys. Timed: from broadcasting go until all R+W processes "
            "finished. Value: operations per second, (R+W)*ops in all. "
            "concurrency: none, read (read_concurrency), write "
            "(write_concurrency), both.">>,
      unit => <<"ops/s">>, better => higher, metric => <<"throughput">>,
      checks => <<"every lookup found its key, (R+W)*ops operations were done, "
                  "the table still has exactly `keys` entries">>}.

%% @doc Parameters.
-spec params() -> [beamlab_workload:param_spec()].
params() ->
    [#{key => type, default => [set, ordered_set], full => [set, ordered_set],
       type => {enum, [set, ordered_set]}, help => <<"table type">>},
     #{key => concurrency, default => [none, both], full => [none, read, write, both],
       type => {enum, [none, read, write, both]}, help => <<"table concurrency options">>},
     #{key => readers, default => 4, full => 8, type => non_neg_integer,
       help => <<"reader processes">>},
     #{key => writers, default => 2, full => 4, type => non_neg_integer,
       help => <<"writer processes">>},
     #{key => keys, default => 10000, full => 100000, type => pos_integer,
       help => <<"keys in the table">>},
     #{key => ops, default => 20000, full => 200000, type => pos_integer,
       help => <<"operations per process">>}].

%% @doc At least one process must work.
-spec normalize(beamlab_workload:params()) -> {ok, beamlab_workload:params()} | {error, term()}.
normalize(#{readers := 0, writers := 0}) -> {error, no_processes};
normalize(P) -> {ok, P}.

%% @doc One line per error.
-spec format_error(term()) -> iolist().
format_error(Reason) ->
    beamlab_format_reason:line(fun error_line/1, Reason).

error_line(no_processes) -> "readers + writers must be at least 1";
error_line(Other) ->
    %% (a reason of no kind above: printed, never raised)
    beamlab_format_reason:term(Other).

%% @doc Create and fill the table (owned by the measuring process).
-spec setup(beamlab_workload:params()) -> {ok, ets:tid()}.
setup(#{type := Type, concurrency := C, keys := Keys}) ->
    Tab = ets:new(beamlab_workload_ets, [Type, public | conc(C)]),
    true = ets:insert(Tab, [{K, 0} || K <- lists:seq(1, Keys)]),
    {ok, Tab}.

%% @doc One repetition.
-spec run(ets:tid(), beamlab_workload:params()) -> {ok, beamlab_workload:rep()}.
run(Tab, #{readers := R, writers := W, keys := Keys, ops := Ops}) ->
    Parent = self(),
    Spawn = fun(Role) ->
                    spawn_link(fun() ->
                                       receive go -> ok end,
                                       Parent ! {ets_done, Role, work(Role, Tab, Keys, Ops, 0)}
                               end)
            end,
    Pids = [Spawn(read) || _ <- lists:seq(1, R)] ++ [Spawn(write) || _ <- lists:seq(1, W)],
    T0 = erlang:monotonic_time(),
    _ = [P ! go || P <- Pids],
    {Found, Written} = collect(R + W, 0, 0),
    T1 = erlang:monotonic_time(),
    Size = ets:info(Tab, size),
    {ok, #{value => (R + W) * Ops / (beamlab_workload:us(T1 - T0) / 1.0e6),
           counters => #{lookups => R * Ops, found => Found, inserts => Written},
           check => beamlab_workload:check_all([{"lookups that found their key", R * Ops, Found},
                                                {"inserts", W * Ops, Written},
                                                {"table size", Keys, Size}])}}.

%% @doc Delete the table.
-spec teardown(ets:tid()) -> ok.
teardown(Tab) ->
    true = ets:delete(Tab),
    ok.

conc(none) -> [];
conc(read) -> [{read_concurrency, true}];
conc(write) -> [{write_concurrency, true}];
conc(both) -> [{read_concurrency, true}, {write_concurrency, true}].

work(_Role, _Tab, _Keys, 0, Acc) -> Acc;
work(read, Tab, Keys, Ops, Acc) ->
    case ets:lookup(Tab, rand:uniform(Keys)) of
        [_] -> work(read, Tab, Keys, Ops - 1, Acc + 1);
        [] -> work(read, Tab, Keys, Ops - 1, Acc)
    end;
work(write, Tab, Keys, Ops, Acc) ->
    true = ets:insert(Tab, {rand:uniform(Keys), Ops}),
    work(write, Tab, Keys, Ops - 1, Acc + 1).

collect(0, F, W) -> {F, W};
collect(N, F, W) ->
    receive
        {ets_done, read, K} -> collect(N - 1, F + K, W);
        {ets_done, write, K} -> collect(N - 1, F, W + K)
    end.
