%%% @doc A user's own load tool as the load of a target (`matrix --target
%%% ... --load-cmd CMD'): the command runs under `/bin/sh' once per
%%% configuration and repetition with the broker's URI substituted for
%%% `{uri}' (and `{node}' for its node name), and in the environment as
%%% `BEAMLAB_URI' and `BEAMLAB_NODE'; what it prints is read as RabbitMQ
%%% PerfTest's output (`beamlab_format_perftest') and becomes a result
%%% document shaped like `beamlab amqp''s: `sent' and `received' (msg/s,
%%% one sample per interval, the summary's average in `extra.average'),
%%% `consumer latency' and `confirm latency' (per-interval medians, the
%%% summary's percentiles in `extra.total'), so the matrix compares them,
%%% gives verdicts and profiles the broker as it does for its own load.
%%%
%%% The command must end by itself (PerfTest's `-z SECONDS'); an interrupt
%%% sends SIGTERM to its process group (PerfTest then prints its summary)
%%% and what it printed is kept.
-module(beamlab_sut_load).

-export([run/3, command_line/2, document/3]).

-type opts() :: #{sink => fun((binary()) -> term()),  % each line it prints
                  started_at => binary()}.
-export_type([opts/0]).

%% @doc Runs `Cmd' against the target; returns its exit status and the
%% document of its figures, or why there is none.
-spec run(string(), beamlab_sut_broker:target(), opts()) ->
          {integer(), beamlab_result:result() | {error, binary()}}.
run(Cmd, Target, Opts) ->
    Line = command_line(Cmd, Target),
    Env = [{"BEAMLAB_URI", text(maps:get(uri, Target))},
           {"BEAMLAB_NODE", atom_to_list(maps:get(node, Target))}],
    Started = maps:get(started_at, Opts, beamlab_runtime_clock:rfc3339()),
    %% The shell leads a process group (and session) of its own, as OTP
    %% starts every port program, which an interrupt stops as a whole (a
    %% wrapper script and its java). (Not under setsid(1): already a group
    %% leader, it forked, and the port's pid was a process gone at once,
    %% so an interrupt reached nothing and the load ran to its end, #32.)
    Port = open_port({spawn_executable, "/bin/sh"},
                     [{args, ["-c", Line]}, {env, Env}, binary, exit_status,
                      stderr_to_stdout, {line, 16384}]),
    {os_pid, Pid} = erlang:port_info(Port, os_pid),
    {Status, Out} = collect(Port, Pid, maps:get(sink, Opts, fun(_) -> ok end), [], false),
    Text = iolist_to_binary(lists:join(<<"\n">>, lists:reverse(Out))),
    case document(Text, Cmd, #{started_at => Started, exit_status => Status}) of
        {ok, Doc} when Status =:= 0 -> {0, Doc};
        {ok, Doc} when Status =:= 143 -> {130, Doc#{partial := true}};
        {ok, _} -> {Status, {error, last_line(Out, Status)}};
        {error, Why} when Status =:= 0 -> {1, {error, Why}};
        {error, _} -> {Status, {error, last_line(Out, Status)}}
    end.

%% @doc The command with the target's `{uri}' and `{node}' filled in.
-spec command_line(string(), beamlab_sut_broker:target()) -> string().
command_line(Cmd, #{uri := Uri, node := Node}) ->
    S1 = string:replace(Cmd, "{uri}", text(Uri), all),
    lists:flatten(string:replace(lists:flatten(S1), "{node}", atom_to_list(Node), all)).

text(undefined) -> "";
text(B) when is_binary(B) -> binary_to_list(B).

collect(Port, Pid, Sink, Acc, Stopping) ->
    receive
        {Port, {data, {eol, L}}} ->
            Sink(<<L/binary, "\n">>),
            collect(Port, Pid, Sink, [L | Acc], Stopping);
        {Port, {data, {noeol, L}}} ->
            collect(Port, Pid, Sink, [L | Acc], Stopping);
        {Port, {exit_status, S}} ->
            {S, Acc};
        {beamlab_interrupt, _} = M when not Stopping ->
            %% Its group and what it started in sessions of their own.
            ok = beamlab_runtime_signal:send_tree(Pid, "TERM"),
            %% Kept for the caller, which stops the matrix too.
            self() ! M,
            collect(Port, Pid, Sink, Acc, true)
    end.

last_line(Out, Status) ->
    case [L || L <- Out, string:trim(L) =/= <<>>] of
        [L | _] -> iolist_to_binary(io_lib:format("the load command exited with status ~b: ~ts",
                                                  [Status, string:trim(L)]));
        [] -> iolist_to_binary(io_lib:format("the load command exited with status ~b", [Status]))
    end.

%% @doc The result document of a load tool's output (PerfTest's lines):
%% an error when it printed none.
-spec document(binary(), string(), #{started_at := binary(), exit_status => integer()}) ->
          {ok, beamlab_result:result()} | {error, binary()}.
document(Text, Cmd, #{started_at := Started} = Opts) ->
    case beamlab_format_perftest:parse(Text) of
        #{intervals := [], summary := S} when map_size(S) =:= 0 ->
            {error, <<"the load command printed no PerfTest figures (no 'id: ..., time ...' "
                      "or 'sending rate avg' lines)">>};
        #{id := Id, intervals := Is, summary := S} ->
            Rate = fun(Key, Name) ->
                           Samples = [maps:get(Key, I) || I <- Is, is_map_key(Key, I)],
                           Avg = maps:get(Key, S, mean(Samples)),
                           [beamlab_result:benchmark(
                              Name, case Samples of [] -> [Avg]; _ -> Samples end,
                              #{group => <<"load">>, metric => <<"throughput">>, unit => <<"msg/s">>,
                                better => higher, extra => #{average => Avg}})
                            || Avg =/= undefined]
                   end,
            Lat = fun(Key, Name) ->
                          Medians = [lists:nth(2, P) || I <- Is, P <- [maps:get(Key, I, [])],
                                                       length(P) =:= 5, P =/= [0, 0, 0, 0, 0]],
                          Total = case maps:get(Key, S, undefined) of
                                      [Min, P50, P75, P95, P99] ->
                                          #{min => Min, p50 => P50, p75 => P75, p95 => P95, p99 => P99};
                                      _ -> null
                                  end,
                          [beamlab_result:benchmark(
                             Name, Medians,
                             #{group => <<"load">>, metric => <<"latency">>, unit => <<"us">>,
                               better => lower, extra => #{per_interval => <<"median">>, total => Total}})
                           || Medians =/= []]
                  end,
            Doc0 = beamlab_result:new(amqp, #{command => [Cmd], started_at => Started,
                                              params => #{load_cmd => unicode:characters_to_binary(Cmd)}}),
            Doc1 = beamlab_result:add_benchmarks(
                     Doc0, Rate(sent, <<"sent">>) ++ Rate(received, <<"received">>)
                         ++ Lat(consumer, <<"consumer latency">>) ++ Lat(confirm, <<"confirm latency">>)),
            Doc2 = beamlab_result:set(extra, #{load => #{command => unicode:characters_to_binary(Cmd),
                                                        id => case Id of undefined -> null; _ -> Id end,
                                                        intervals => length(Is),
                                                        elapsed_s => case Is of
                                                                         [] -> null;
                                                                         _ -> maps:get(time_s, lists:last(Is))
                                                                     end,
                                                        summary => S,
                                                        exit_status => maps:get(exit_status, Opts, null)}},
                                      Doc1),
            {ok, beamlab_result:finish(Doc2, #{finished_at => beamlab_runtime_clock:rfc3339(),
                                               partial => false})}
    end.

mean([]) -> undefined;
mean(L) -> lists:sum(L) / length(L).
