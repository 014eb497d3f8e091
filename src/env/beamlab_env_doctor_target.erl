%%% @doc `beamlab doctor --target rabbitmq''s reasoning, pure: which of
%%% the findings' remedies the broker already runs with (its own defaults,
%%% e.g. RabbitMQ's `+sbwt none'), a configuration's figures from the
%%% matrix document of the loaded brokers (the load's own: the rate the
%%% consumers received, their p99 latency, the broker's CPU time per
%%% message), the ranking of the remedies against the broker's default by
%%% those figures (`beamlab_env_doctor:rank/4') and the recommendation's
%%% first line, as a `rabbitmq-env.conf' line. The measuring is the
%%% experiment layer's (`beamlab_experiment_doctor_target').
-module(beamlab_env_doctor_target).

-export([effective/2, summary/2, rank/3, recommendation/3]).

%% The inner benchmarks of a loaded broker's repetition
%% (`beamlab_experiment_target:figures/2') the ranking reads.
-define(THROUGHPUT, <<"receiving rate avg">>).
-define(P99, <<"consumer latency p99">>).
-define(CPU, <<"broker CPU per message">>).

%% @doc The flags of `Args' (`["+S", "1:1", "+sbwt", "none"]') that are
%% not already in effect on a node whose emulator command line is
%% `Cmdline' (as the node reports it: `-sbwt', `none', ...; the last
%% occurrence of a flag wins, as in the emulator). A remedy of RabbitMQ
%% whose flags are all in its defaults comes back empty; an unreadable
%% command line keeps them all.
-spec effective([string()], [binary()] | null) -> [string()].
effective(Args, null) ->
    Args;
effective(Args, Cmdline) ->
    Last = last_values(Cmdline, #{}),
    case length(Args) rem 2 of
        0 -> lists:append([[F, V] || {F, V} <- pairs(Args),
                                     maps:get(dash(F), Last, undefined) =/= list_to_binary(V)]);
        _ -> Args
    end.

dash("+" ++ R) -> list_to_binary("-" ++ R);
dash(F) -> list_to_binary(F).

last_values([<<"-", _/binary>> = F, V | Rest], Acc) ->
    case V of
        <<"-", _/binary>> -> last_values([V | Rest], Acc);
        _ -> last_values(Rest, Acc#{F => V})
    end;
last_values([_ | Rest], Acc) ->
    last_values(Rest, Acc);
last_values([], Acc) ->
    Acc.

pairs([F, V | Rest]) -> [{F, V} | pairs(Rest)];
pairs(_) -> [].

%% @doc The figures of configuration `Name' in the matrix document of the
%% loaded brokers (in memory or read back from JSON): each repetition's
%% value of throughput (msg/s received), consumer latency p99 (us) and
%% broker CPU per message (us), their medians, and the repetitions that
%% ran (`n').
-spec summary(binary(), beamlab_result:result()) -> beamlab_env_doctor:summary().
summary(Name, #{benchmarks := Bs} = Doc) ->
    Samples = fun(Metric) ->
                      case [S || #{samples := S} = B <- Bs, group(B) =:= Name, inner(B) =:= Metric] of
                          [S | _] -> [X || X <- S, is_number(X)];
                          [] -> []
                      end
              end,
    T = Samples(?THROUGHPUT),
    L = Samples(?P99),
    C = Samples(?CPU),
    #{n => ok_runs(Name, Doc),
      throughput => median(T), throughput_samples => T,
      latency_p99_us => median(L), latency_p99_samples => L,
      broker_cpu_per_msg_us => median(C), broker_cpu_per_msg_samples => C}.

group(B) -> get(group, B).

inner(#{extra := X}) -> get(inner_benchmark, X);
inner(_) -> undefined.

%% A key of a document in memory (an atom) or read back (a binary).
get(K, M) ->
    case maps:find(K, M) of
        {ok, V} -> V;
        error -> maps:get(atom_to_binary(K), M, undefined)
    end.

ok_runs(Name, #{extra := X}) ->
    case [get(ok_runs, C) || C <- list(get(configs, X)), get(name, C) =:= Name] of
        [N | _] when is_integer(N) -> N;
        _ -> 0
    end;
ok_runs(_, _) ->
    0.

list(L) when is_list(L) -> L;
list(_) -> [].

median([]) -> null;
median(L) -> beamlab_stats:median(L).

%% @doc The remedies against the broker's default, best first, by the
%% load's own figures: throughput (higher is better), consumer latency
%% p99 (lower), broker CPU per message (lower); the score is the
%% throughput ratio over the CPU-per-message ratio.
-spec rank(beamlab_env_doctor:summary(), [{beamlab_env_doctor:remedy(), beamlab_env_doctor:summary()}],
           float()) -> [beamlab_env_doctor:ranked()].
rank(Base, Remedies, Conf) ->
    beamlab_env_doctor:rank(Base, Remedies,
                            #{metrics => [{throughput, throughput_samples, higher, gain},
                                          {latency_p99, latency_p99_samples, lower, none},
                                          {broker_cpu_per_msg, broker_cpu_per_msg_samples, lower, cost}],
                              medians => [throughput, latency_p99_us, broker_cpu_per_msg_us]},
                            Conf).

%% @doc The first line: the `rabbitmq-env.conf' line that starts the
%% broker with the best remedy (the flags it is started with today,
%% `VmArgs', then the remedy's) and what it buys, or why its flags stay.
%% `Skipped' are the remedies left out because the broker already runs
%% with them.
-spec recommendation([beamlab_env_doctor:ranked()], [string()], [binary()]) -> binary().
recommendation([#{verdict := better, name := Name} = Best | _], VmArgs, _Skipped) ->
    Line = case Name of
               <<"numactl ", _/binary>> ->
                   io_lib:format("start rabbitmq-server under ~ts", [Name]);
               _ ->
                   Flags = lists:join(" ", [list_to_binary(A) || A <- VmArgs] ++ [Name]),
                   io_lib:format("put in rabbitmq-env.conf: RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS=\"~ts\"", [Flags])
           end,
    iolist_to_binary([Line, ": ", buys(Best)]);
recommendation([#{name := Name} = Best | _], _VmArgs, _Skipped) ->
    iolist_to_binary(io_lib:format("keep the broker's flags: no remedy measured clearly better "
                                   "(best tried: ~ts: ~ts)", [Name, buys(Best)]));
recommendation([], _VmArgs, []) ->
    <<"keep the broker's flags: no remedy was measured">>;
recommendation([], _VmArgs, Skipped) ->
    iolist_to_binary(["keep the broker's flags: it already runs with every remedy the findings suggest (",
                      lists:join("; ", Skipped), ")"]).

buys(Row) ->
    beamlab_env_doctor:buys(Row, [{throughput, "throughput"}, {latency_p99, "p99 latency"},
                                  {broker_cpu_per_msg, "broker CPU per message"}]).
