%%% @doc Paired rounds: base and head of a project measured in turn, each
%%% in a fresh VM with its own code paths, round after round, the order
%%% swapped every round (base first in odd rounds, head first in even
%%% ones). The module names are the same on both sides, so they cannot
%%% share a VM; a fresh VM per side and round also makes each round's
%%% ratio independent of the previous ones (code layout, heap state).
%%% One VM runs at a time, so the sides never compete for the cores.
%%%
%%% What a side's VM runs is the caller's: `main' gives, for a side, the
%%% `{M, F, Args}' called there (in the side's directory); it must return
%%% `{ExitCode, Result}'. The rounds collect these results and interpret
%%% nothing.
%%%
%%% An interrupt stops the rounds (the caller subscribes to them, see
%%% {@link beamlab_runtime_interrupt}): one that arrives while a VM runs
%%% is passed on to it ({@link beamlab_runtime_peer:run/3}); that
%%% unfinished round is dropped, and the complete rounds are returned
%%% with `interrupted => true'. A VM that fails to start or dies fails
%%% its side of the round only.
-module(beamlab_project_rounds).

-export([run/3, in_dir/4]).

-type side_name() :: base | head.
-type side() :: #{name := side_name(), dir := file:filename(), paths := [file:filename()],
                  %% load this VM's beamlab (default; from its copies:
                  %% beamlab_runtime_peer:write_code/1), or use the side's
                  load => boolean() | [beamlab_runtime_peer:stored()],
                  %% loaded first, in this order, each from its normalized
                  %% copy (beamlab_project_code:write/3)
                  preload => [beamlab_project_code:stored()],
                  atom() => term()}.
-type outcome() :: {ok, {integer(), term()}} | {error, beamlab_runtime_peer:run_error()}.
-type round() :: #{index := pos_integer(), order := [side_name()],
                   base := outcome(), head := outcome()}.
-type opts() :: #{rounds := pos_integer(),
                  main := fun((side()) -> beamlab_runtime_peer:call_spec()),
                  vm_args => [string()],
                  deadline => timeout(),                  % ms for a side's VM
                  progress => fun((pos_integer(), side_name()) -> any()),
                  stop => fun((round()) -> boolean()),    % stop early after this round?
                  %% past `rounds' (then the least number): one more round?
                  more => fun(([round()]) -> continue | {stop, term()})}.
-export_type([side/0, side_name/0, outcome/0, round/0, opts/0]).

%% @doc Runs the rounds. `stop' may end them early (a side that cannot
%% run at all, say); `more' (`--ci') asks for rounds beyond `rounds' until
%% it says stop, and why (`stopped').
-spec run(side(), side(), opts()) -> #{rounds := [round()], interrupted := boolean(), stopped => term()}.
run(#{name := base} = Base, #{name := head} = Head, Opts) ->
    loop(1, Base, Head, Opts, []).

loop(I, Base, Head, #{rounds := N} = Opts, Acc) when I > N ->
    Done = lists:reverse(Acc),
    case maps:find(more, Opts) of
        error ->
            #{rounds => Done, interrupted => false};
        {ok, More} ->
            case More(Done) of
                continue -> loop(I, Base, Head, Opts#{rounds := I}, Acc);
                {stop, Why} -> #{rounds => Done, interrupted => false, stopped => Why}
            end
    end;
loop(I, Base, Head, Opts, Acc) ->
    Order = case I rem 2 of
                1 -> [Base, Head];
                0 -> [Head, Base]
            end,
    case sides(I, Order, Opts, #{}) of
        interrupted ->
            #{rounds => lists:reverse(Acc), interrupted => true};
        Outcomes ->
            Round = Outcomes#{index => I, order => [S || #{name := S} <- Order]},
            Stop = maps:get(stop, Opts, fun(_) -> false end),
            case Stop(Round) of
                true -> #{rounds => lists:reverse([Round | Acc]), interrupted => false};
                false -> loop(I + 1, Base, Head, Opts, [Round | Acc])
            end
    end.

sides(_I, [], _Opts, Acc) ->
    Acc;
sides(I, [#{name := Name} = Side | Rest], Opts, Acc) ->
    case interrupted() of
        true -> interrupted;
        false ->
            _ = [P(I, Name) || {ok, P} <- [maps:find(progress, Opts)]],
            Outcome = side(Side, Opts),
            case interrupted() of
                true -> interrupted;
                false -> sides(I, Rest, Opts, Acc#{Name => Outcome})
            end
    end.

side(#{dir := Dir, paths := Paths} = Side, #{main := Main} = Opts) ->
    {M, F, A} = Main(Side),
    VmOpts = maps:merge(#{args => maps:get(vm_args, Opts, []), paths => Paths, load => maps:get(load, Side, true),
                          preload => maps:get(preload, Side, [])},
                        maps:with([deadline], Opts)),
    case beamlab_runtime_peer:run(VmOpts, {?MODULE, in_dir, [Dir, M, F, A]},
                                  {erlang, system_info, [otp_release]}) of
        {ok, #{exit := Code, result := Result}} -> {ok, {Code, Result}};
        {error, _} = E -> E
    end.

%% An interrupt that arrived is left in the mailbox for the caller.
interrupted() ->
    receive
        {beamlab_interrupt, _} = Msg ->
            self() ! Msg,
            true
    after 0 ->
            false
    end.

%% @doc Runs in a side's VM: `M:F(A)' in the side's directory, so that
%% files a benchmark reads by relative path are that side's.
-spec in_dir(file:filename(), module(), atom(), [term()]) -> term().
in_dir(Dir, M, F, A) ->
    ok = file:set_cwd(Dir),
    %% (done at start when beamlab's code was loaded into the VM; not when
    %% the side brought its own)
    ok = beamlab_runtime_logs:to_stderr(),
    apply(M, F, A).
