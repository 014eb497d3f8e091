%%% @doc `beamlab doctor --node NAME': the doctor on a running node (the
%%% system under test), over distribution, with no code loaded there and
%%% nothing restarted. It reads what the node runs with
%%% (`beamlab_sut_doctor'), watches it for the duration while it works
%%% (`beamlab_sut_watch' with microstate accounting: the flags turned on
%%% there are held by a process of OTP code on the node that turns them
%%% back to what they were when the watch ends, is interrupted, or
%%% beamlab dies), counts the kernel's migrations of its scheduler
%%% threads when it runs on this host, applies the doctor's findings
%%% (`beamlab_env_doctor:node_findings/2') and recommends flags for the
%%% node's next start (`beamlab_env_doctor_node:recommendation/1'). The
%%% document is a doctor's (kind `doctor', `extra.node').
-module(beamlab_experiment_doctor_node).

-export([run/2, format_error/1, error_class/1]).

-export_type([error_reason/0]).

-type error_reason() :: {node, beamlab_sut_watch:error_reason() | beamlab_sut_doctor:error_reason()}.

%% @doc Runs the doctor on `node' for `node_duration_ms'.
-spec run(#{node := string(), cookie => string() | undefined, node_duration_ms := pos_integer(), atom() => term()},
          beamlab_experiment:experiment()) -> {ok, beamlab_result:result()} | {error, error_reason()}.
run(#{node := Name} = D, Exp) ->
    Sink = maps:get(sink, Exp, fun(_) -> ok end),
    Say = fun(Fmt, Args) -> Sink({doctor, io_lib:format(Fmt, Args)}) end,
    Started = beamlab_runtime_clock:rfc3339(),
    Duration = maps:get(node_duration_ms, D),
    case connect(Name, maps:get(cookie, D, undefined)) of
        {ok, Node, Env, Raw} ->
            Facts = beamlab_env_doctor_node:facts(Raw),
            Local = maps:get(emulator_cmdline, Env, null) =/= null,
            OsPid = binary_to_list(maps:get(os_pid, Facts)),
            Machine = case Local of
                          true -> beamlab_env_doctor_facts:machine(maps:get(root, D, "/"));
                          false -> remote_machine(Facts)
                      end,
            Say("doctor: node ~ts: OTP ~ts (~ts), ~ts of ~ts schedulers online, may run on ~ts CPU(s), "
                "flags ~ts~ts~n",
                [Node, v(maps:get(otp_release, Facts)), v(maps:get(emu_flavor, Facts)),
                 v(maps:get(schedulers_online, Facts)), v(maps:get(schedulers, Facts)),
                 case maps:get(cpus_allowed, Facts) of [] -> <<"?">>; L -> integer_to_list(length(L)) end,
                 case maps:get(emu_args, Facts) of [] -> <<"none">>; A -> lists:join(" ", plus(A)) end,
                 case Local of true -> ", on this host"; false -> ", on another host" end]),
            Say("doctor: watching ~ts for ~.1f s while it works: microstate accounting and scheduler wall "
                "time turned on there, turned back to what they were at the end; nothing is loaded or "
                "restarted~n", [Node, Duration / 1000]),
            Mig0 = migrations(Local, OsPid),
            T0 = erlang:monotonic_time(microsecond),
            Interval = max(250, min(1000, Duration div 10)),
            case beamlab_sut_watch:watch(Node, #{duration => Duration, interval => Interval, msacc => true,
                                                 top => 0, print => false, system_monitor => false}) of
                {ok, Series, #{interrupted := Interrupted}} ->
                    WallUs = erlang:monotonic_time(microsecond) - T0,
                    Mig = beamlab_runtime_probe:migration_rate(Mig0, migrations(Local, OsPid), WallUs,
                                         maps:get(schedulers_online, Facts)),
                    Sum = beamlab_env_doctor_node:summary(
                            Facts, Series, #{migrations_per_s => maps:get(per_s, Mig),
                                             logical_cpus => case Local of
                                                                 true -> maps:get(logical_cpus, Machine);
                                                                 false -> null
                                                             end}),
                    Findings = beamlab_env_doctor:node_findings(Machine, Sum),
                    Rec = beamlab_env_doctor_node:recommendation(Findings),
                    Say("doctor: diagnosis: ~ts~n",
                        [lists:join("; ", [[atom_to_list(Sev), " ", T] || #{severity := Sev, title := T} <- Findings])]),
                    Doc = document(D, Exp, Started, Node, Local, Facts, Machine, Series, Sum, Mig, Findings, Rec,
                                   Interrupted orelse beamlab_runtime_interrupt:interrupted()),
                    {ok, Doc};
                {error, E} ->
                    {error, {node, E}}
            end;
        {error, E} ->
            {error, {node, E}}
    end.

connect(Name, Cookie) ->
    case beamlab_sut_watch:connect(Name, Cookie) of
        {ok, Node} ->
            case beamlab_sut_watch:node_env(Node) of
                {ok, Env} ->
                    case beamlab_sut_doctor:read(Node, 10000) of
                        {ok, Raw} -> {ok, Node, Env, Raw};
                        {error, _} = E -> E
                    end;
                {error, _} = E -> E
            end;
        {error, _} = E -> E
    end.

%% On another host only what the VM says of its CPUs is known.
remote_machine(Facts) ->
    #{logical_cpus => maps:get(logical_processors, Facts), online_cpus => [], physical_cores => null,
      smt_groups => [], threads_per_core => null, numa_nodes => 0, numa => [],
      llc_groups => #{level => null, groups => []},
      frequency => #{governor => null, current_khz => [], max_khz => null},
      thp => null, sched_ext => #{visible => false}, isolated_cpus => [], nohz_full_cpus => [], load1 => null,
      notes => [<<"the node runs on another host: its machine's facts are what its VM reports">>]}.

migrations(true, OsPid) ->
    beamlab_runtime_probe:scheduler_migrations("/", OsPid);
migrations(false, _) ->
    {error, remote}.

plus(Args) ->
    [case A of <<"-", R/binary>> -> <<"+", R/binary>>; _ -> A end || A <- Args].

v(null) -> <<"?">>;
v(X) when is_integer(X) -> integer_to_list(X);
v(X) -> X.

document(D, Exp, Started, Node, Local, Facts, Machine, Series, Sum, Mig, Findings, Rec, Partial) ->
    Params = #{node => atom_to_binary(Node), duration_ms => maps:get(node_duration_ms, D)},
    Doc0 = beamlab_result:new(doctor, #{command => maps:get(command, Exp, []), started_at => Started,
                                        params => Params}),
    Util = [U / 100 || U <- maps:get(util, Series, []), is_number(U)],
    Bench = [beamlab_result:benchmark(<<"node scheduler utilisation">>, Util,
                                      #{group => <<"node">>, metric => <<"utilisation">>, unit => <<"share">>,
                                        better => lower, params => #{node => atom_to_binary(Node)}})
             || Util =/= []],
    NodeX = #{name => atom_to_binary(Node),
              local => Local,
              duration_s => maps:get(node_duration_ms, D) / 1000,
              samples => maps:get(samples, Series, 0),
              node_down => maps:get(node_down, Series, false),
              utilisation => maps:get(utilisation, Sum),
              utilisation_schedulers => maps:get(utilisation_schedulers, Sum),
              run_queue_mean => maps:get(run_queue_mean, Sum),
              run_queue_max => maps:get(run_queue_max, Sum),
              msacc => maps:get(msacc, Sum),
              cpu_cores => maps:get(cpu_cores, Sum),
              others_share => maps:get(others_share, Sum),
              steal_share => maps:get(steal_share, Sum),
              migrations => Mig,
              flags => maps:get(flags, Rec),
              rests_on => maps:get(rests_on, Rec),
              restored => <<"microstate accounting and scheduler wall time were turned back to what they were">>,
              remedies_measured => false,
              why_not_measured => <<"the doctor cannot restart a running node: measure the flags on a fresh VM "
                                    "with `beamlab doctor --vm \"<the node's flags>\"' or `beamlab matrix'">>},
    Extra = #{recommendation => maps:get(line, Rec),
              node => NodeX,
              machine => Machine,
              vm => Facts,
              default => maps:without([utilisation_samples], Sum),
              remedies => [],
              candidates => []},
    Doc1 = beamlab_result:add_benchmarks(Doc0, Bench),
    Doc2 = beamlab_result:add_findings(beamlab_result:set(extra, Extra, Doc1), Findings),
    beamlab_result:finish(Doc2, #{finished_at => beamlab_runtime_clock:rfc3339(), partial => Partial}).

%% @doc A node name that is not one is the caller's mistake; a node that
%% is not there, refuses or fails is a failure.
-spec error_class(error_reason()) -> usage | failure.
error_class({node, {bad_node, _}}) -> usage;
error_class({node, _}) -> failure.

%% @doc One line for each error.
-spec format_error(error_reason()) -> unicode:chardata().
format_error(Reason) ->
    beamlab_format_reason:line(fun error_line/1, Reason).

error_line({node, {read, _, _} = E}) ->
    beamlab_sut_doctor:format_error(E);
error_line({node, E}) ->
    beamlab_sut_watch:format_error(E);
error_line(Other) ->
    %% (a reason of no kind above: printed, never raised)
    beamlab_format_reason:term(Other).
