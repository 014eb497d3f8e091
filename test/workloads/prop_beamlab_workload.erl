%%% PropEr properties of sweep expansion (run from beamlab_workload_tests).
-module(prop_beamlab_workload).
-include_lib("proper/include/proper.hrl").

-export([prop_sweep/0]).

values(Gen) -> ?LET(L, non_empty(list(Gen)), lists:usort(L)).

%% For any values of ping_pong's size, payload and n (given as text, as on
%% the command line): the points are the cartesian product, every point
%% takes its values from the given lists, and the names are unique.
prop_sweep() ->
    ?FORALL({Sizes, Payloads, Ns},
            {values(range(0, 5000)), values(oneof([list, binary])), values(range(1, 10))},
            begin
                Text = fun(Vs) -> [beamlab_workload:format_value(V) || V <- Vs] end,
                {ok, [{_, Points}]} =
                    beamlab_suite:plan(["ping_pong"], quick,
                                       #{<<"ping_pong">> => #{"size" => Text(Sizes),
                                                              "payload" => Text(Payloads),
                                                              "n" => Text(Ns)}}),
                Names = [beamlab_workload:point_name(<<"ping_pong">>, P) || P <- Points],
                Swept = [K || {K, Vs} <- [{size, Sizes}, {payload, Payloads}, {n, Ns}],
                              length(Vs) > 1],
                length(Points) =:= length(Sizes) * length(Payloads) * length(Ns)
                    andalso length(lists:usort(Names)) =:= length(Names)
                    andalso lists:all(fun({S, #{size := Sz, payload := Pl, n := N}}) ->
                                              S =:= Swept andalso lists:member(Sz, Sizes)
                                                  andalso lists:member(Pl, Payloads)
                                                  andalso lists:member(N, Ns)
                                      end, Points)
            end).
