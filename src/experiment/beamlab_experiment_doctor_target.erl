%%% @doc `beamlab doctor --target rabbitmq -- amqp ...': the doctor's
%%% remedies measured on a system under test instead of the probe. The
%%% findings come from the probe as always (`beamlab_experiment_doctor');
%%% their flag sets are then applied to a private RabbitMQ, each started
%%% fresh and loaded by the inner `amqp' command, interleaved, with
%%% repetitions, exactly as `matrix --target rabbitmq' does it: this
%%% module builds that matrix (the broker's default configuration first,
%%% then one configuration per remedy) and runs it through the experiment
%%% layer (`Inner''s `here', the matrix kind), then ranks the remedies by
%%% the load's own figures (`beamlab_env_doctor_target').
%%%
%%% Before anything is measured, {@link preflight/2} starts the broker
%%% once with the default flags: a flag it refuses is the caller's
%%% mistake (one line, before the probe's minutes), and its emulator
%%% command line says which remedies it already runs with (RabbitMQ
%%% starts with `+sbwt none +sbwtdcpu none +sbwtdio none'), which are
%%% left out rather than measured against themselves.
-module(beamlab_experiment_doctor_target).

-export([preflight/2, phase/5]).

-type broker() :: #{cmdline := [binary()] | null, env := map()}.
-export_type([broker/0]).

-define(CONF, 0.95).

%% @doc Starts the broker once with the default flags (the doctor's
%% `vm_args', under its wrappers), reads what it runs with, stops it.
-spec preflight(beamlab_sut_broker:spec(), fun((string(), list()) -> term())) ->
          {ok, broker()} | {error, {target_start, usage | failure, binary()}}.
preflight(Spec, Say) ->
    %% (what is not installed is said before any line: one line)
    Started = case beamlab_sut_broker:check(Spec) of
                  {ok, _} ->
                      Say("doctor: target: starting the broker once with the default flags (what it runs with)~n", []),
                      beamlab_sut_broker:start(Spec);
                  {error, _} = E -> E
              end,
    case Started of
        {ok, #{env := Env} = T} ->
            ok = beamlab_sut_broker:stop(T),
            Cmdline = maps:get(emulator_cmdline, Env, null),
            Say("doctor: target: the broker runs with ~ts~n",
                [case Cmdline of
                     null -> <<"(its command line is not readable)">>;
                     _ -> lists:join(" ", flags(Cmdline))
                 end]),
            {ok, #{cmdline => Cmdline, env => Env}};
        {error, R} ->
            %% Flags it refuses or a wrapper that is missing are the
            %% caller's; anything else is a failure of the run.
            Class = case R of
                        {boot_failed, _, _} -> usage;
                        {flags_not_applied, _} -> usage;
                        {wrapper_not_found, _} -> usage;
                        %% an --otp or --flavor the installation cannot run
                        {otp, _} -> usage;
                        {otp_not_found, _} -> usage;
                        {no_broker_for, _, _, _} -> usage;
                        _ -> failure
                    end,
            {error, {target_start, Class, iolist_to_binary(beamlab_sut_broker:format_error(R))}}
    end.

%% The emulator's own flags of a command line (from the first `-' flag
%% after the executable; `-' as the VM lists them, `+' as a user types).
flags([_Exe | Args]) ->
    [case A of <<"-", R/binary>> -> <<"+", R/binary>>; _ -> A end
     || A <- lists:takewhile(fun(A) -> A =/= <<"--">> andalso A =/= <<"-root">> end,
                             lists:dropwhile(fun(A) -> binary:first(A) =/= $- end, Args))];
flags([]) ->
    [].

%% @doc The remedies phase on the target: the findings' remedies (and
%% the asked ones) the broker does not already run with, at most
%% `max_remedies', each a configuration of a matrix against the
%% broker's default, loaded by the inner experiment, `reps' repetitions
%% interleaved; ranked by the load's figures. Returns what the doctor's
%% document gets: the recommendation, the target's section of `extra'
%% and one benchmark per configuration and figure.
-spec phase(beamlab_experiment_doctor:doctor(), beamlab_experiment:experiment(), beamlab_experiment:inner(),
            [beamlab_result:finding()], fun((string(), list()) -> term())) ->
          #{recommendation := binary(), target := map(), benchmarks := [beamlab_result:benchmark()]}.
phase(D, Exp, #{here := Here}, Findings, Say) ->
    #{vm_args := Vm, max_remedies := Max, reps := Reps, load := Load} = D,
    Broker = maps:get(broker, D, #{cmdline => null, env => #{}}),
    Cmdline = maps:get(cmdline, Broker),
    Found = beamlab_env_doctor:candidates(Findings, Vm, 1000),
    Asked = [beamlab_env_doctor:remedy(R, [<<"asked">>], Vm) || R <- maps:get(remedies, D)],
    %% Each remedy as it would change the broker: without the flags it
    %% already runs with (RabbitMQ's +sbwt none); nothing left, left out;
    %% two that come to the same, measured once (their reasons joined).
    Eff = [case W of
               [] -> R#{name := name(beamlab_env_doctor_target:effective(A -- Vm, Cmdline)),
                        args := Vm ++ beamlab_env_doctor_target:effective(A -- Vm, Cmdline), given => N};
               _ -> R#{given => N}
           end || #{name := N, args := A, wrap := W} = R <- Found ++ Asked],
    {Skipped, Changing} = lists:partition(fun(#{name := N}) -> N =:= <<>> end, Eff),
    Merged = lists:foldl(fun(#{name := N, why := Why} = R, Acc) ->
                                 case lists:keyfind(N, 1, Acc) of
                                     {N, #{why := W0} = R0} -> lists:keyreplace(N, 1, Acc, {N, R0#{why := lists:usort(W0 ++ Why)}});
                                     false -> Acc ++ [{N, R}]
                                 end
                         end, [], Changing),
    %% At most `max_remedies' of the findings' own, and every asked one.
    IsAsked = fun(#{why := W}) -> lists:member(<<"asked">>, W) end,
    Remedies = lists:sublist([R || {_, R} <- Merged, not IsAsked(R)], Max) ++ [R || {_, R} <- Merged, IsAsked(R)],
    Skipped1 = [S#{name := G} || #{given := G} = S <- Skipped],
    SkippedNames = lists:usort([N || #{name := N} <- Skipped1]),
    SkippedNames =:= [] orelse
        Say("doctor: target: left out (the broker already runs with them): ~ts~n", [lists:join(", ", SkippedNames)]),
    %% The broker's OTP, flavour and load command as matrix --target
    %% takes them; with a load command the amqp only lends its flags
    %% ({flags}: none when it has no command, as from the library).
    Otp = maps:get(otp, D, none),
    Flavor = maps:get(flavor, D, none),
    LoadCmd = maps:get(load_cmd, D, none),
    Load1 = case {LoadCmd, [unicode:characters_to_list(A) || A <- maps:get(command, Load, [])]} of
                {none, _} -> Load;
                {_, ["amqp" | _] = Words} -> Load#{command => Words};
                {_, _} -> Load#{command => ["amqp"]}
            end,
    InnerCommand = maps:get(command, Load1, []),
    Section0 = #{kind => rabbitmq,
                 load_command => case LoadCmd of
                                     none -> [unicode:characters_to_binary(A) || A <- InnerCommand];
                                     _ -> [unicode:characters_to_binary(beamlab_experiment_target:fill_flags(LoadCmd, InnerCommand))]
                                 end,
                 load_cmd => case LoadCmd of none -> null; _ -> unicode:characters_to_binary(LoadCmd) end,
                 otp => case Otp of none -> null; _ -> unicode:characters_to_binary(Otp) end,
                 flavor => case Flavor of none -> null; _ -> atom_to_binary(Flavor) end,
                 broker_flags => case Cmdline of null -> null; _ -> flags(Cmdline) end,
                 already_in_effect => SkippedNames, repetitions => Reps,
                 candidates => [maps:with([name, why, given], R) || R <- Remedies]},
    case Remedies =:= [] orelse beamlab_runtime_interrupt:interrupted() of
        true ->
            #{recommendation => beamlab_env_doctor_target:recommendation([], Vm, SkippedNames),
              target => Section0#{remedies => [], configs => []}, benchmarks => []};
        false ->
            Say("doctor: target: ~ts against the broker's default, each a fresh broker~ts loaded by '~ts', "
                "~b repetition(s) each, interleaved~n",
                [lists:join(", ", [N || #{name := N} <- Remedies]), on(Otp, Flavor),
                 lists:join(" ", maps:get(load_command, Section0)), Reps]),
            Wrap = maps:get(broker_wrap, D, []),
            Config = fun(Name, Args, W) ->
                             C = #{name => Name, args => Args,
                                   erl => case Otp of none -> undefined; _ -> filename:join([Otp, "bin", "erl"]) end,
                                   wrap => case Wrap ++ W of [] -> undefined; Ws -> Ws end},
                             case Flavor of none -> C; _ -> C#{flavor => Flavor} end
                     end,
            Configs = [Config(<<"default">>, Vm, []) | [Config(N, A, W) || #{name := N, args := A, wrap := W} <- Remedies]],
            Sink = maps:get(sink, Exp, fun(_) -> ok end),
            Target = case LoadCmd of
                         none -> maps:get(target, Exp);
                         _ -> (maps:get(target, Exp))#{load_cmd => LoadCmd}
                     end,
            Matrix = #{run => {matrix, #{configs => Configs, inner => Load1, repeat => Reps,
                                         baseline => <<"default">>, sweep => false}},
                       target => Target,
                       env => false, telemetry => none,
                       command => maps:get(command, Exp, []),
                       sink => fun({matrix, Line}) -> Sink({doctor, ["doctor: target: ", Line]});
                                  (_) -> ok
                               end},
            case Here(Matrix) of
                {_Code, #{benchmarks := _} = Doc} ->
                    Base = beamlab_env_doctor_target:summary(<<"default">>, Doc),
                    Sums = [{R, beamlab_env_doctor_target:summary(N, Doc)} || #{name := N} = R <- Remedies],
                    Ranked = beamlab_env_doctor_target:rank(Base, [X || {_, #{n := K}} = X <- Sums, K > 0], ?CONF),
                    #{recommendation => beamlab_env_doctor_target:recommendation(Ranked, Vm, SkippedNames),
                      target => Section0#{remedies => Ranked,
                                          default => maps:without([throughput_samples, latency_p99_samples,
                                                                   broker_cpu_per_msg_samples], Base),
                                          configs => [config_info(C) || C <- configs(Doc)]},
                      benchmarks => [B#{name := <<"target ", N/binary>>, group := <<"target">>}
                                     || #{name := N} = B <- maps:get(benchmarks, Doc), is_binary(N)]};
                {_Code, {error, Msg}} ->
                    Say("doctor: target: the remedies could not be measured: ~ts~n", [Msg]),
                    #{recommendation => iolist_to_binary(["keep the broker's flags: the remedies could not be "
                                                          "measured (", Msg, ")"]),
                      target => Section0#{remedies => [], configs => [], error => Msg}, benchmarks => []}
            end
    end.

name(Args) ->
    iolist_to_binary(lists:join(" ", Args)).

%% Where the brokers run, when not on the erl on the PATH.
on(none, none) -> "";
on(Otp, Flavor) ->
    [" on ", case Otp of none -> "the PATH's erl"; _ -> Otp end,
     case Flavor of none -> ""; _ -> [" (", atom_to_list(Flavor), ")"] end].

configs(#{extra := X}) ->
    case maps:get(configs, X, maps:get(<<"configs">>, X, [])) of
        L when is_list(L) -> L;
        _ -> []
    end.

%% A configuration's runs as the matrix counted them, and why any failed.
%% (The matrix's `extra' has crossed beamlab_result:set/3: binary keys.)
config_info(C) ->
    Keys = [<<"name">>, <<"args">>, <<"wrap">>, <<"erl">>, <<"runs">>, <<"ok_runs">>, <<"status">>, <<"errors">>,
            <<"schedulers_online">>, <<"flavor">>, <<"flavor_reported">>],
    maps:filter(fun(K, _) -> lists:member(if is_atom(K) -> atom_to_binary(K); true -> K end, Keys) end, C).
