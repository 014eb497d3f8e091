%%% @doc The doctor's saturating load: independent meshes of processes
%%% passing tokens, sized from the schedulers online so that every
%%% scheduler always has several runnable processes. Its goodput is the
%%% VM's capacity (the point of the scaling curve).
%%%
%%% Why not the message load's `mesh' variant: there every process sends
%%% one message per loop and flushes what else has queued, so messages
%%% that meet in one mailbox are discarded and only a few processes are
%%% runnable at any time; measured on 2 CPUs its capacity fell from 1 to
%%% 2 schedulers and one of two schedulers idled. Here no message is ever
%%% discarded: `groups' meshes of `size' processes each start with one
%%% token per process, and a process forwards every token it receives to
%%% a random other member of its own mesh, so the number of tokens (the
%%% runnable work) is constant: about 63% of the processes (1 - 1/e)
%%% hold one at any time, ~10 per scheduler with the default sizing of 2
%%% meshes of 8 per scheduler. The meshes share nothing, so the load is
%%% as parallel as the VM lets it be.
%%%
%%% Checked: the tokens are conserved (every token seeded is, at the end,
%%% held by a stopped process or in a mailbox). Runs where called (the
%%% probe, in a fresh VM).
-module(beamlab_suite_probe_mesh).

-export([run/1, sizing/1]).

-export_type([opts/0]).

-type opts() :: #{warmup_ms := non_neg_integer(), duration_ms := pos_integer(),
                  groups => pos_integer(), size => pos_integer()}.

-define(WARMUP, 1).
-define(MEASURE, 2).
-define(STOP, 3).

%% Meshes per scheduler online, and processes (and tokens) per mesh.
-define(GROUPS_PER_SCHEDULER, 2).
-define(SIZE, 8).

%% @doc The default sizing on `Schedulers' schedulers online: `{Groups,
%% Size}' (2 meshes of 8 processes per scheduler).
-spec sizing(pos_integer()) -> {pos_integer(), pos_integer()}.
sizing(Schedulers) when Schedulers >= 1 ->
    {?GROUPS_PER_SCHEDULER * Schedulers, ?SIZE}.

%% @doc Runs the load: warm-up, measured period, stop. Returns the shape
%% of a workload repetition: `value' (tokens received per second of the
%% measured period), `counters' (`goodput': every token received, warm-up
%% included, the window of the CPU time the probe reads around it),
%% `check' (token conservation) and the sizing in `extra'.
-spec run(opts()) -> #{value := float(), counters := map(), metrics := map(), check := term(),
                       extra := map()}.
run(#{warmup_ms := Warm, duration_ms := Dur} = Opts) ->
    {G0, S0} = sizing(erlang:system_info(schedulers_online)),
    Groups = maps:get(groups, Opts, G0),
    Size = max(2, maps:get(size, Opts, S0)),
    Phase = atomics:new(1, []),
    atomics:put(Phase, 1, ?WARMUP),
    Parent = self(),
    Meshes = [[spawn_link(fun() -> member(Parent, Phase) end) || _ <- lists:seq(1, Size)]
              || _ <- lists:seq(1, Groups)],
    All = lists:append(Meshes),
    %% Each member knows its own mesh only; then one token each.
    _ = [[P ! {peers, list_to_tuple(M)} || P <- M] || M <- Meshes],
    _ = [P ! token || P <- All],
    timer:sleep(Warm),
    T0 = erlang:monotonic_time(),
    atomics:put(Phase, 1, ?MEASURE),
    timer:sleep(Dur),
    atomics:put(Phase, 1, ?STOP),
    T1 = erlang:monotonic_time(),
    %% A member blocked without a token sees `stop'; one with tokens sees
    %% the phase at its next token.
    _ = [P ! stop || P <- All],
    {Received, Measured, Held} = collect(All, {0, 0, 0}),
    _ = [P ! drain || P <- All],
    Left = lists:sum([receive {left, P, K} -> K end || P <- All]),
    _ = [unlink(P) || P <- All],
    Seconds = erlang:convert_time_unit(T1 - T0, native, microsecond) / 1.0e6,
    Tokens = Groups * Size,
    #{value => Measured / Seconds,
      metrics => #{},
      counters => #{goodput => Received, measured_goodput => Measured, tokens => Tokens,
                    held => Held, left => Left},
      check => beamlab_workload:check_all([{"tokens seeded = held + left in mailboxes", Tokens, Held + Left}]),
      extra => #{groups => Groups, size => Size}}.

member(Parent, Phase) ->
    Peers = receive {peers, Ps} -> Ps end,
    loop(Parent, Phase, Peers, 0, 0).

loop(Parent, Phase, Peers, Received, Measured) ->
    receive
        token ->
            case atomics:get(Phase, 1) of
                ?STOP -> stopped(Parent, Received, Measured, 1);
                Ph ->
                    %% a random other member of the mesh
                    beamlab_workload:random_peer(Peers) ! token,
                    loop(Parent, Phase, Peers, Received + 1,
                         case Ph of ?MEASURE -> Measured + 1; _ -> Measured end)
            end;
        stop ->
            stopped(Parent, Received, Measured, 0)
    end.

stopped(Parent, Received, Measured, Held) ->
    Parent ! {stopped, self(), {Received, Measured, Held}},
    receive drain -> ok end,
    Parent ! {left, self(), tokens(0)}.

tokens(N) ->
    receive
        token -> tokens(N + 1);
        stop -> tokens(N)
    after 0 -> N
    end.

collect([], Acc) -> Acc;
collect([P | Rest], {R, M, H}) ->
    receive {stopped, P, {R1, M1, H1}} -> collect(Rest, {R + R1, M + M1, H + H1}) end.
