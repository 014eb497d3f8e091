#!/usr/bin/env escript
%%! -noinput
%%% Measures what write batching in beamlab_amqp_conn buys: publishing with
%%% confirms (at most 1000 outstanding) through a connection that writes
%%% every message on its own (batch_msgs = 1) and through one that drains its
%%% mailbox into one write (the default), alternating, in one run. Prints
%%% msg/s, CPU of this VM per message, socket writes, and the ratios.
%%%
%%%   rebar3 compile && scripts/rabbitmq.sh start
%%%   bench/amqp_client_batching.escript [URI] [MESSAGES] [ROUNDS]
-mode(compile).

main(Args) ->
    Root = filename:dirname(filename:dirname(filename:absname(escript:script_name()))),
    true = code:add_patha(filename:join([Root, "_build", "default", "lib", "beamlab", "ebin"])),
    [Uri, N, Rounds] = case Args of
                           [] -> ["amqp://127.0.0.1:5673", "50000", "3"];
                           [U] -> [U, "50000", "3"];
                           [U, M] -> [U, M, "3"];
                           [U, M, R | _] -> [U, M, R]
                       end,
    Msgs = list_to_integer(N),
    Configs = [{"unbatched (batch_msgs=1)", #{batch_msgs => 1}}, {"batched (default)", #{}}],
    Results = [{Name, run(Uri, Opts, Msgs)} || _ <- lists:seq(1, list_to_integer(Rounds)),
                                               {Name, Opts} <- Configs],
    io:format("~-26s ~10s ~12s ~12s ~10s~n", ["config", "msg/s", "cpu us/msg", "writes", "msgs/write"]),
    [io:format("~-26s ~10b ~12.2f ~12b ~10.1f~n", [Name, round(Rate), Cpu, W, Msgs / W])
     || {Name, #{rate := Rate, cpu_us := Cpu, writes := W}} <- Results],
    Med = fun(Name, Key) ->
                  L = lists:sort([maps:get(Key, R) || {Nm, R} <- Results, Nm =:= Name]),
                  lists:nth((length(L) + 1) div 2, L)
          end,
    [{U1, _}, {B1, _}] = Configs,
    io:format("~nmedian throughput ratio batched/unbatched: ~.2f~n",
              [Med(B1, rate) / Med(U1, rate)]),
    io:format("median CPU per message ratio batched/unbatched: ~.2f~n",
              [Med(B1, cpu_us) / Med(U1, cpu_us)]).

run(Uri, Opts, Msgs) ->
    {ok, C} = case beamlab_amqp:connect(Uri, Opts) of
                  {ok, _} = Ok -> Ok;
                  {error, R} -> io:format("~s~n", [beamlab_amqp:format_error(R)]), halt(1)
              end,
    {ok, Ch} = beamlab_amqp:open_channel(C),
    {ok, #{queue := Q}} = beamlab_amqp:declare_queue(Ch, <<>>, #{exclusive => true}),
    ok = beamlab_amqp:confirm_select(Ch),
    Body = binary:copy(<<"x">>, 16),
    {ok, #{batch_writes := W0}} = beamlab_amqp:info(C),
    {_, _} = erlang:statistics(runtime),
    T0 = erlang:monotonic_time(microsecond),
    publish(Ch, Q, Body, Msgs, 0, 0),
    T1 = erlang:monotonic_time(microsecond),
    {_, CpuMs} = erlang:statistics(runtime),
    {ok, #{batch_writes := W1}} = beamlab_amqp:info(C),
    ok = beamlab_amqp:close(C),
    #{rate => Msgs * 1.0e6 / (T1 - T0), cpu_us => CpuMs * 1000 / Msgs, writes => W1 - W0}.

%% Keep at most 1000 unconfirmed messages in flight.
publish(_Ch, _Q, _Body, Total, Total, Total) -> ok;
publish(Ch, Q, Body, Total, Sent, Confirmed) when Sent < Total, Sent - Confirmed < 1000 ->
    ok = beamlab_amqp:publish(Ch, <<>>, Q, Body),
    publish(Ch, Q, Body, Total, Sent + 1, Confirmed);
publish(Ch, Q, Body, Total, Sent, Confirmed) ->
    receive
        {amqp_confirm, Ch, _, Seq, true} -> publish(Ch, Q, Body, Total, Sent, max(Seq, Confirmed));
        {amqp_confirm, Ch, _, _, false} -> publish(Ch, Q, Body, Total, Sent, Confirmed + 1)
    end.
