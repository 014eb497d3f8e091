%%% @doc Workload `bang': many-to-one flood. variant=bencherl (default)
%%% follows bencherl's bench/bang: one shared tuple of five references is
%%% the message, a separate receiver takes exactly that term with a
%%% selective receive, senders flood as soon as they are spawned and
%%% spawning is timed. variant=gated is beamlab's form: senders wait for a
%%% go, each message is {Sender, I} and the harness process receives.
-module(beamlab_workload_bang).
-behaviour(beamlab_workload).

-export([info/0, params/0, setup/1, run/2, teardown/1, processes/1]).

%% @doc Workload description.
-spec info() -> beamlab_workload:info().
info() ->
    #{name => <<"bang">>,
      summary => <<"many-to-one flood: S senders send M messages each to one receiver">>,
      definition =>
          <<"variant=bencherl (bencherl bench/bang): timed from spawning the "
            "receiver until it reports done: the receiver is spawned first "
            "and takes S*M copies of one tuple of five references with a "
            "selective receive on that exact term; then S senders are "
            "spawned, each sending the tuple M times as soon as it runs. "
            "variant=gated (beamlab's form): S senders are spawned untimed "
            "and wait for go; timed from broadcasting go until the harness "
            "process has received all S*M messages {Sender, I}. Value: "
            "messages received per second.">>,
      unit => <<"msg/s">>, better => higher, metric => <<"throughput">>,
      checks => <<"bencherl: the receiver matched S*M messages and its mailbox "
                  "is empty after; gated: S*M messages received and the sum of "
                  "their sequence numbers (each sender sends M..1) is "
                  "S*M*(M+1)/2">>}.

%% @doc Parameters.
-spec params() -> [beamlab_workload:param_spec()].
params() ->
    [#{key => variant, default => bencherl, full => [bencherl, gated],
       type => {enum, [bencherl, gated]},
       help => <<"bencherl: shared tuple, separate receiver, spawning timed; gated: go, then flood">>},
     #{key => senders, default => 100, full => 1000, type => pos_integer,
       help => <<"sending processes">>},
     #{key => m, default => 2000, full => 10000, type => pos_integer,
       help => <<"messages per sender">>}].

%% @doc Peak number of processes.
-spec processes(beamlab_workload:params()) -> non_neg_integer().
processes(#{senders := S}) -> S + 1.

%% @doc No state.
-spec setup(beamlab_workload:params()) -> {ok, none}.
setup(_) -> {ok, none}.

%% @doc One repetition.
-spec run(none, beamlab_workload:params()) -> {ok, beamlab_workload:rep()}.
run(none, #{variant := bencherl, senders := S, m := M}) ->
    Parent = self(),
    Done = make_ref(),
    T0 = erlang:monotonic_time(),
    Bang = {make_ref(), make_ref(), make_ref(), make_ref(), make_ref()},
    Rec = spawn_opt(fun() -> b_rec(Bang, S * M), b_report(Parent, Done, S * M) end, [link]),
    lists:foreach(fun(_) -> spawn_link(fun() -> b_send(Rec, Bang, M) end) end,
                  lists:seq(1, S)),
    receive Done -> ok end,
    T1 = erlang:monotonic_time(),
    Rec ! {count, Done},
    {Matched, Left} = receive {Done, Mt, L} -> {Mt, L} end,
    unlink(Rec),
    {ok, #{value => S * M / (beamlab_workload:us(T1 - T0) / 1.0e6),
           counters => #{sent => S * M, received => Matched, left => Left},
           check => beamlab_workload:check_all([{"received", S * M, Matched},
                                                {"left in the receiver's mailbox", 0, Left}])}};
run(none, #{variant := gated, senders := S, m := M}) ->
    Self = self(),
    Senders = [spawn_link(fun() -> receive go -> send(Self, M) end end)
               || _ <- lists:seq(1, S)],
    T0 = erlang:monotonic_time(),
    _ = [P ! go || P <- Senders],
    {Got, Sum} = receive_all(S * M, 0, 0),
    T1 = erlang:monotonic_time(),
    {ok, #{value => Got / (beamlab_workload:us(T1 - T0) / 1.0e6),
           counters => #{sent => S * M, received => Got},
           check => beamlab_workload:check_all([{"received", S * M, Got},
                                                {"sum of sequence numbers", S * (M * (M + 1) div 2), Sum}])}}.

%% @doc Nothing to clean.
-spec teardown(none) -> ok.
teardown(_) -> ok.

send(_To, 0) -> ok;
send(To, M) -> To ! {self(), M}, send(To, M - 1).

receive_all(0, Got, Sum) -> {Got, Sum};
receive_all(Left, Got, Sum) ->
    receive {From, I} when is_pid(From) -> receive_all(Left - 1, Got + 1, Sum + I) end.

b_send(_T, _M, 0) -> ok;
b_send(T, M, N) -> T ! M, b_send(T, M, N - 1).

b_rec(_M, 0) -> ok;
b_rec(M, N) -> receive M -> b_rec(M, N - 1) end.

%% After the timed part: done, then (asked untimed) how many it matched
%% (b_rec/2 returns only after `Matched' matches) and what else is left.
b_report(Parent, Done, Matched) ->
    Parent ! Done,
    receive {count, Done} -> ok end,
    {message_queue_len, L} = process_info(self(), message_queue_len),
    Parent ! {Done, Matched, L}.
