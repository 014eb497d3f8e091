%%% @doc `beamlab doctor --node''s reasoning, pure: what a running node
%%% runs with (from what `beamlab_sut_doctor' read there), the figures of
%%% its watch (`beamlab_runtime_telemetry''s series: microstate
%%% accounting, each scheduler's utilisation, run queues, the CPU it and
%%% the other processes used) as the summary the doctor's findings read,
%%% the findings themselves (`beamlab_env_doctor:node_findings/2') and the
%%% flags recommended for the node's next start, as a vm.args line, with
%%% the findings they rest on. Nothing is measured against them: a
%%% running node cannot be restarted by the doctor.
-module(beamlab_env_doctor_node).

-export([facts/1, summary/3, recommendation/1]).

%% @doc The node's facts in the shape of `beamlab_suite_probe:vm/0''s
%% (so the doctor's findings and renderers read them alike): schedulers
%% online and configured, the CPUs it may run on (its affinity), its
%% cgroup's quota in CPUs, bind type, emulator flags, release, flavour,
%% OS and OS pid.
-spec facts(#{info := map(), status := binary() | null, cgroup := binary() | null, quota := map()}) ->
          #{atom() => term()}.
facts(#{info := I} = Raw) ->
    Get = fun(K) -> maps:get(K, I, null) end,
    #{schedulers_online => Get(schedulers_online),
      schedulers => Get(schedulers),
      dirty_cpu_schedulers_online => Get(dirty_cpu_schedulers_online),
      logical_processors => int_or_null(Get(logical_processors)),
      logical_processors_available => int_or_null(Get(logical_processors_available)),
      cpus_allowed => cpus_allowed(maps:get(status, Raw, null)),
      cgroup_quota_cpus => quota(maps:get(quota, Raw, #{})),
      bind_type => text(Get(scheduler_bind_type)),
      emu_args => emu_args(Get(emu_args)),
      otp_release => text(Get(otp_release)),
      erts => text(Get(version)),
      emu_flavor => text(Get(emu_flavor)),
      os => case Get(os_type) of
                {Fam, Name} -> iolist_to_binary([atom_to_binary(Fam), "/", atom_to_binary(Name)]);
                _ -> null
            end,
      os_pid => text(Get(os_pid))}.

int_or_null(N) when is_integer(N) -> N;
int_or_null(_) -> null.

text(null) -> null;
text(A) when is_atom(A) -> atom_to_binary(A);
text(B) when is_binary(B) -> B;
text(L) when is_list(L) -> unicode:characters_to_binary(L);
text(X) -> iolist_to_binary(io_lib:format("~0tp", [X])).

%% The flags given at start (`+S 4:4' is listed as "-S", "4:4"); after
%% the first "--" come erl's own.
emu_args([_Beam | Args]) when is_list(Args) ->
    [unicode:characters_to_binary(A) || A <- lists:takewhile(fun(X) -> X =/= "--" end, Args),
                                        io_lib:printable_unicode_list(A)];
emu_args(_) ->
    [].

cpus_allowed(null) ->
    [];
cpus_allowed(Status) ->
    case [string:trim(V) || L <- string:split(Status, "\n", all),
                            [<<"Cpus_allowed_list">>, V] <- [string:split(L, ":")]] of
        [List | _] -> beamlab_env:parse_cpulist(List);
        [] -> []
    end.

%% The quota in CPUs from cpu.max (v2) or cpu.cfs_quota_us and
%% cpu.cfs_period_us (v1), whichever was read; `null' without a limit.
quota(Files) ->
    V2 = [Q / P || {F, T} <- maps:to_list(Files), filename:basename(F) =:= "cpu.max",
                   [Qb, Pb] <- [string:lexemes(T, " \n")], Qb =/= <<"max">>,
                   {Q, P} <- [ints(Qb, Pb)], Q > 0, P > 0],
    V1 = [Q / P || {F, T} <- maps:to_list(Files), filename:basename(F) =:= "cpu.cfs_quota_us",
                   {ok, Pt} <- [maps:find(filename:join(filename:dirname(F), "cpu.cfs_period_us"), Files)],
                   {Q, P} <- [ints(string:trim(T), string:trim(Pt))], Q > 0, P > 0],
    case V2 ++ V1 of
        [] -> null;
        Qs -> lists:min(Qs)
    end.

ints(A, B) ->
    try {binary_to_integer(A), binary_to_integer(B)}
    catch error:badarg -> {-1, -1}
    end.

%% @doc The summary the doctor's findings read (`beamlab_env_doctor'),
%% from the node's facts, its watched series and what else was measured
%% beside it (`migrations_per_s', the machine's `logical_cpus' when the
%% node runs on this host): the means over the watch of microstate
%% accounting per state (shares), utilisation (mean and each scheduler's,
%% per sample), run queue (mean, max), the CPU the node used as a share
%% of its schedulers, the share other processes took of the machine's
%% CPUs and the hypervisor's steal.
-spec summary(#{atom() => term()}, map(), #{atom() => term()}) -> beamlab_env_doctor:summary().
summary(Facts, Series, Extra) ->
    Online = maps:get(schedulers_online, Facts, null),
    Nums = fun(K) -> [V || V <- maps:get(K, Series, []), is_number(V)] end,
    Mean = fun([]) -> null; (L) -> lists:sum(L) / length(L) end,
    Share = fun(null) -> null; (P) -> P / 100 end,
    PerSched = [[U / 100 || U <- take(Online, S), is_number(U)]
                || S <- maps:get(util_schedulers, Series, []), is_list(S)],
    Msacc = maps:fold(fun(State, Vals, Acc) ->
                              case [V || V <- Vals, is_number(V)] of
                                  [] -> Acc;
                                  Vs -> Acc#{binary_to_atom(text(State)) => Mean(Vs) / 100}
                              end
                      end, #{}, maps:get(msacc, Series, #{})),
    Cores = Mean(Nums(os_cpu_cores)),
    Cpus = maps:get(logical_cpus, Extra, null),
    Allowed = case maps:get(cpus_allowed, Facts, []) of
                  [_ | _] = L -> length(L);
                  _ -> maps:get(logical_processors_available, Facts, null)
              end,
    Rq = Nums(run_queue),
    #{n => length(Nums(util)),
      where => <<"while the node worked">>,
      utilisation => Share(Mean(Nums(util))),
      utilisation_samples => PerSched,
      utilisation_schedulers => beamlab_env_doctor_sched:mean_vector(PerSched),
      run_queue_mean => Mean(Rq),
      run_queue_max => case Rq of [] -> null; _ -> lists:max(Rq) end,
      msacc => Msacc,
      cpu_cores => Cores,
      cpu_share => case {Cores, Online} of
                       {C, N} when is_number(C), is_integer(N), N > 0 -> C / N;
                       _ -> null
                   end,
      others_share => case {Mean(Nums(machine_cpu_pct)), Cores, Cpus} of
                          {M, C, K} when is_number(M), is_number(C), is_integer(K), K > 0 ->
                              min(1.0, max(0.0, (M / 100 * K - C) / K));
                          _ -> null
                      end,
      steal_share => Share(Mean(Nums(steal_pct))),
      throttled_share => null,
      migrations_per_s => maps:get(migrations_per_s, Extra, null),
      schedulers_online => Online,
      cpus_allowed => Allowed,
      quota_cpus => maps:get(cgroup_quota_cpus, Facts, null),
      emu_args => maps:get(emu_args, Facts, []),
      bind_type => maps:get(bind_type, Facts, null),
      timer_overshoot_us => null,
      goodput => null, capacity => null, latency_p99_us => null, cpu_per_msg_us => null}.

take(N, L) when is_integer(N), N >= 0 -> lists:sublist(L, N);
take(_, L) -> L.

%% @doc The flags for the node's next start, from the findings (the most
%% severe first, information left out): each finding's first flag set,
%% merged so that the first finding to set a flag wins; `numactl' and
%% other commands are not vm.args flags and are left to the advice.
%% Returns the vm.args line (`none' when nothing is to change) and the
%% findings it rests on.
-spec recommendation([beamlab_result:finding()]) -> #{line := binary(), flags := [binary()],
                                                      rests_on := [binary()]}.
recommendation(Findings) ->
    Order = fun(#{severity := critical}) -> 0; (#{severity := warning}) -> 1; (_) -> 2 end,
    Sorted = lists:sort(fun(A, B) -> Order(A) =< Order(B) end,
                        [F || #{severity := S} = F <- Findings, S =/= info]),
    Sets = [{Id, R} || #{id := Id, data := D} <- Sorted, [R | _] <- [[X || X <- maps:get(<<"remedies">>, D, []),
                                                                          binary:first(X) =:= $+]]],
    Flags = lists:foldl(fun({_, R}, Fs) ->
                                Fs ++ [P || {K, _} = P <- pairs(R), not lists:keymember(K, 1, Fs)]
                        end, [], Sets),
    %% The line rests on each finding that wants one of its flags (the
    %% most severe first).
    Rests = lists:foldl(fun({Id, R}, Acc) ->
                                case not lists:member(Id, Acc) andalso
                                    lists:any(fun(P) -> lists:member(P, Flags) end, pairs(R)) of
                                    true -> Acc ++ [Id];
                                    false -> Acc
                                end
                        end, [], Sets),
    Words = [iolist_to_binary([K, [[" ", V] || V =/= <<>>]]) || {K, V} <- Flags],
    Line = case Words of
               [] ->
                   <<"keep the node's flags: no finding calls for a change">>;
               _ ->
                   iolist_to_binary(["start the node next time with ", lists:join(" ", Words),
                                     " (in vm.args; rests on: ", lists:join(", ", Rests),
                                     "; not measured: the doctor does not restart a running node)"])
           end,
    #{line => Line, flags => Words, rests_on => Rests}.

%% "+S 2:2 +sbwt none" -> [{"+S", "2:2"}, {"+sbwt", "none"}].
pairs(R) ->
    pairs_(string:lexemes(R, " "), []).

pairs_([], Acc) -> lists:reverse(Acc);
pairs_([<<"+", _/binary>> = K, <<"+", _/binary>> = K2 | Rest], Acc) -> pairs_([K2 | Rest], [{K, <<>>} | Acc]);
pairs_([<<"+", _/binary>> = K], Acc) -> lists:reverse([{K, <<>>} | Acc]);
pairs_([K, V | Rest], Acc) -> pairs_(Rest, [{K, V} | Acc]).
