%%% @doc A point of beamlab's workload suite: 100 ping-pong round trips of
%%% a 10-element list between two processes of this VM, through the
%%% workload's own run/2 (its checks included). Bench module of `beamlab
%%% check' (docs/ci.md).
-module(suite_bench).

-export([benchmarks/0]).

-define(PARAMS, #{size => 10, payload => list, vm => local, n => 100}).

benchmarks() ->
    [#{name => "suite ping_pong local n=100",
       init => fun() ->
                       {ok, St} = beamlab_workload_ping_pong:setup(?PARAMS),
                       St
               end,
       init_runner => fun(St) -> St end,
       runner => fun(St) -> {ok, _} = beamlab_workload_ping_pong:run(St, ?PARAMS) end,
       done => fun(St) -> beamlab_workload_ping_pong:teardown(St) end}].
