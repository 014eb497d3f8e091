-module(beamlab_suite_tests).
-include_lib("eunit/include/eunit.hrl").

plan_all_builtin_test() ->
    {ok, Plan} = beamlab_suite:plan([], quick, #{}),
    ?assertEqual(beamlab_workload:builtin(), [M || {M, _} <- Plan]).

plan_sweep_from_text_test() ->
    {ok, [{beamlab_workload_ping_pong, Points}]} =
        beamlab_suite:plan(["ping_pong"], quick,
                           #{<<"ping_pong">> => #{size => ["0", "10", "100"], payload => ["list"]}}),
    ?assertEqual([0, 10, 100], [S || {_, #{size := S}} <- Points]).

plan_errors_test_() ->
    Msg = fun({error, R}) -> lists:flatten(io_lib:format("~ts", [beamlab_suite:format_error(R)])) end,
    [?_assertEqual("unknown workload 'nope' (see beamlab suite --list)",
                   Msg(beamlab_suite:plan(["nope"], quick, #{}))),
     ?_assertEqual("workload fib has no parameter 'm' (it has: n)",
                   Msg(beamlab_suite:plan(["fib"], quick, #{<<"fib">> => #{m => ["1"]}}))),
     ?_assertEqual("fib.n: bad value 'x': expected integer 0..45",
                   Msg(beamlab_suite:plan(["fib"], quick, #{<<"fib">> => #{n => ["x"]}}))),
     ?_assertEqual("--param for workload 'ring', which is not selected or does not exist",
                   Msg(beamlab_suite:plan(["fib"], quick, #{<<"ring">> => #{n => ["1"]}}))),
     ?_assertEqual("skynet: size must be a power of 10 (10, 100, ..., 1000000), not 20",
                   Msg(beamlab_suite:plan(["skynet"], quick, #{<<"skynet">> => #{size => ["20"]}})))].

plan_dedupes_names_test() ->
    {ok, Plan} = beamlab_suite:plan(["ring", "fib", "ring"], quick, #{}),
    ?assertEqual([beamlab_workload_ring, beamlab_workload_fib], [M || {M, _} <- Plan]).
