%%% @doc Isolated mode (`-i'): every job runs in a fresh VM of its own,
%%% started with {@link beamlab_runtime_peer} (OTP's `peer', no distribution: the
%%% control connection is the child's standard I/O). The user's emulator
%%% arguments (`vm_args') and code paths (`code_paths', as `-pa') are passed
%%% to the child; `ERL_LIBS' is inherited from the environment. beamlab's
%%% own modules are loaded into the child from this VM's object code, so it
%%% works from the escript too.
%%%
%%% Jobs run one after another (one VM at a time), so they never compete
%%% for cores; they are not interleaved sample by sample. An interrupt
%%% received while a child measures is forwarded to it, and the child
%%% returns what it measured so far.
-module(beamlab_engine_isolated).

-export([run/3, remote_measure/3, format_error/1]).

-define(RUNNER, beamlab_isolated_runner).

%% @doc Measures each job in its own fresh VM; returns the outcomes in job
%% order and whether an interrupt cut the run short. A VM that cannot be
%% started or dies fails only its job.
-spec run([beamlab_engine:job_spec()], beamlab_engine:run_opts(), beamlab_engine:mode_opts()) ->
          {ok, #{outcomes := [beamlab_engine:outcome()], interrupted := boolean(),
                 telemetry := beamlab_runtime_telemetry:series()}}
        | {error, beamlab_engine:error_reason()}.
run(Jobs, RunOpts, ModeOpts) ->
    %% Compile here first: a syntax error is reported before any VM starts.
    %% The children's code paths are added meanwhile (only for this check),
    %% so calls into the user's modules are checked against them.
    case beamlab_engine_paths:add_code_paths(maps:get(code_paths, RunOpts)) of
        {ok, Paths} ->
            Compiled = try compiles(lists:zip(lists:seq(1, length(Jobs)), Jobs))
                       after beamlab_engine_paths:remove_code_paths(Paths)
                       end,
            case Compiled of
                ok -> {ok, run_compiled(Jobs, RunOpts, ModeOpts)};
                {error, _} = E -> E
            end;
        {error, _} = E ->
            E
    end.

%% Every job compiles (the first that does not is the error).
compiles([]) ->
    ok;
compiles([{I, J} | Rest]) ->
    case beamlab_engine_code:compile(J) of
        {ok, E} ->
            _ = beamlab_engine_code:purge(E),
            compiles(Rest);
        {error, R} ->
            {error, {compile, I, beamlab_engine_code:job_label(J), R}}
    end.

run_compiled(Jobs, RunOpts, ModeOpts) ->
    %% Telemetry and progress stay in this VM's domain; the child runs plain.
    Remote = maps:without([labels, flavor], RunOpts#{checks => false, telemetry => false, verbose => false,
                                             progress => undefined, isolated => false,
                                             checkpoint => none}),
    {Outcomes, Int} = lists:foldl(
      fun(_Job, {Acc, true}) ->
              {Acc ++ [skipped()], true};
         (Job, {Acc, false}) ->
              {Outcome, Int} = one(Job, Remote, ModeOpts, RunOpts),
              %% (its samples' ends count from its own VM's start, not
              %% the run's: left out, the report places them as before)
              {Acc ++ [maps:remove(ends, Outcome)], Int}
      end, {[], false}, Jobs),
    #{outcomes => Outcomes, interrupted => Int, telemetry => #{}}.

skipped() ->
    #{samples => [], times => [], status => ok, concurrency => 0, label => <<>>}.

one(Job, Remote, ModeOpts, RunOpts) ->
    %% With a flavour, the VM must report it (beamlab_runtime_peer proves
    %% it before the job runs).
    VmOpts = maps:merge(#{args => beamlab_runtime_peer:split_args(maps:get(vm_args, RunOpts)),
                          paths => maps:get(code_paths, RunOpts)},
                        maps:filter(fun(_, V) -> V =/= undefined end,
                                    maps:with([flavor], RunOpts))),
    case beamlab_runtime_peer:start(VmOpts) of
        {ok, Vm} ->
            try measure_in(Vm, Job, Remote, ModeOpts)
            catch throw:{?MODULE, unresponsive} ->
                    %% Passed an interrupt, it did not stop within the grace.
                    ok = beamlab_runtime_peer:kill(Vm),
                    {#{samples => [], times => [], concurrency => 0, label => <<>>,
                       status => {error, {isolated, {vm_unresponsive,
                                                     beamlab_runtime_peer:interrupt_grace()}}}},
                     true}
            after
                beamlab_runtime_peer:stop(Vm)
            end;
        {error, Reason} ->
            {#{samples => [], times => [], status => {error, {isolated, Reason}},
               concurrency => 0, label => <<>>}, false}
    end.

measure_in(Vm, Job, Remote, ModeOpts) ->
    Self = self(),
    Ref = make_ref(),
    _ = spawn_link(fun() ->
                           R = try beamlab_runtime_peer:call(Vm, ?MODULE, remote_measure,
                                                     [Job, Remote, ModeOpts])
                               catch C:E -> {error, {isolated, {C, E}}}
                               end,
                           Self ! {Ref, R}
                   end),
    wait(maps:get(peer, Vm), Ref, false).

wait(Peer, Ref, Forwarded) ->
    receive
        {Ref, {ok, #{outcomes := [Outcome], interrupted := Int}}} ->
            {Outcome, Int orelse Forwarded};
        {Ref, {error, Reason}} ->
            {#{samples => [], times => [], status => {error, Reason}, concurrency => 0,
               label => <<>>}, Forwarded};
        {beamlab_interrupt, _} = Msg when not Forwarded ->
            self() ! Msg,       % keep it visible to the caller
            catch peer:send(Peer, ?RUNNER, Msg),
            wait(Peer, Ref, true)
    after case Forwarded of
              false -> infinity;
              true -> beamlab_runtime_peer:interrupt_grace()
          end ->
            throw({?MODULE, unresponsive})
    end.

%% @doc Runs inside the child VM: measures one job and returns its outcome.
-spec remote_measure(beamlab_engine:job_spec(), beamlab_engine:options(),
                     beamlab_engine:mode_opts()) ->
          {ok, #{outcomes := [beamlab_engine:outcome()], interrupted := boolean(),
                 telemetry := beamlab_runtime_telemetry:series()}}
        | {error, beamlab_engine:error_reason()}.
remote_measure(Job, RunOpts, ModeOpts) ->
    true = register(?RUNNER, self()),
    try beamlab_engine_measure:measure([Job], RunOpts, ModeOpts)
    after
        unregister(?RUNNER)
    end.

%% @doc One line for an isolation failure.
-spec format_error(term()) -> iolist().
format_error(Reason) ->
    beamlab_format_reason:line(fun error_line/1, Reason).

error_line({exit, {Why, {gen_server, call, _}}}) ->
    %% (the call's arguments are the job: never print them)
    io_lib:format("the job's VM stopped while measuring (~0tP): did the code stop it "
                  "(halt, init:stop) or run it out of memory?", [Why, 6]);
error_line({C, E}) when C =:= error; C =:= exit; C =:= throw ->
    io_lib:format("isolated VM failed: ~0tP", [{C, E}, 15]);
error_line(Other) ->
    beamlab_runtime_peer:format_error(Other).
