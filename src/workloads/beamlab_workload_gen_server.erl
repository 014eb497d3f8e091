%%% @doc Workload `gen_server': call throughput of N client processes
%%% calling one gen_server (`beamlab_workload_gen_server_srv').
-module(beamlab_workload_gen_server).
-behaviour(beamlab_workload).

-export([info/0, params/0, setup/1, run/2, teardown/1]).

%% @doc Workload description.
-spec info() -> beamlab_workload:info().
info() ->
    #{name => <<"gen_server">>,
      summary => <<"gen_server:call throughput with N clients on one server">>,
      definition =>
          <<"One gen_server is started in setup. N client processes each make "
            "C gen_server:call(Server, {add, 1}) calls in a row. Timed: from "
            "broadcasting go until all clients finished. Value: calls per "
            "second (N*C calls).">>,
      unit => <<"calls/s">>, better => higher, metric => <<"throughput">>,
      checks => <<"the server handled exactly N*C calls in the repetition and "
                  "every client got C replies">>}.

%% @doc Parameters.
-spec params() -> [beamlab_workload:param_spec()].
params() ->
    [#{key => clients, default => [1, 16], full => [1, 4, 16, 64], type => pos_integer,
       help => <<"client processes">>},
     #{key => calls, default => 5000, full => 50000, type => pos_integer,
       help => <<"calls per client">>}].

%% @doc Start the server.
-spec setup(beamlab_workload:params()) -> {ok, pid()} | {error, term()}.
setup(_) ->
    beamlab_workload_gen_server_srv:start_link().

%% @doc One repetition.
-spec run(pid(), beamlab_workload:params()) -> {ok, beamlab_workload:rep()}.
run(Server, #{clients := N, calls := C}) ->
    0 = beamlab_workload_gen_server_srv:reset(Server),
    Parent = self(),
    Pids = [spawn_link(fun() ->
                               receive go -> ok end,
                               Parent ! {gs_done, client(Server, C, 0)}
                       end) || _ <- lists:seq(1, N)],
    T0 = erlang:monotonic_time(),
    _ = [P ! go || P <- Pids],
    Replies = collect(N, 0),
    T1 = erlang:monotonic_time(),
    Handled = beamlab_workload_gen_server_srv:reset(Server),
    {ok, #{value => N * C / (beamlab_workload:us(T1 - T0) / 1.0e6),
           counters => #{calls => N * C, replies => Replies, handled => Handled},
           check => beamlab_workload:check_all([{"replies", N * C, Replies},
                                                {"calls handled by the server", N * C, Handled}])}}.

%% @doc Stop the server.
-spec teardown(pid()) -> ok.
teardown(Server) ->
    unlink(Server),
    gen_server:stop(Server).

client(_Server, 0, Got) -> Got;
client(Server, C, Got) ->
    ok = gen_server:call(Server, {add, 1}, infinity),
    client(Server, C - 1, Got + 1).

collect(0, Acc) -> Acc;
collect(N, Acc) -> receive {gs_done, K} -> collect(N - 1, Acc + K) end.
