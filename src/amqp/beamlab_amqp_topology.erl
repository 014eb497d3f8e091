%%% @doc The broker-side topology of a load test: queue names (`-u', the
%%% queue file, the queue pattern, closed-loop and exclusive queues), the
%%% queues' arguments (type, length, age, leader locator), exchange and
%%% queue declarations and bindings as PerfTest makes them (over several
%%% nodes with `--uris': queue i on node i), the queues' depth for the
%%% accounting, and deleting what the run created.
-module(beamlab_amqp_topology).

-export([queue_names/2, expand_pattern/3, declare/3, declare_exclusive/3, queue_spec/2,
         table/1, delete/2, depth/2, format_error/1]).

-export_type([topology/0, error/0, queue_spec/0]).

%% `queues': {Name, message count before the run, existing | ours |
%% kept (ours, left on the broker: --auto-delete false) | exclusive
%% (declared by its consumer, gone with its connection)}; `stream': the
%% queues are streams (consumed messages stay in them).
-type topology() :: #{queues := [{binary(), non_neg_integer(), existing | ours | kept | exclusive}],
                      stream := boolean()}.
%% What a consumer needs to declare its exclusive queue and bind it.
-type queue_spec() :: #{opts := beamlab_amqp:queue_opts(), exchange := binary() | none,
                        key := binary()}.
%% What stopped the declarations, with the broker's reason.
-type error() :: {declare_queue | bind, Queue :: binary(), beamlab_amqp:reason()}
               | {declare_exchange, Exchange :: binary(), beamlab_amqp:reason()}.

-define(STREAM_MAX_LENGTH_BYTES, 20000000000).     % PerfTest's defaults for streams
-define(STREAM_SEGMENT_BYTES, 500000000).

%% @doc The queues of a run: the closed-loop queues, the expanded
%% `--queue-pattern', the `-u'/`--queue-file' queues, with `--exclusive'
%% one per consumer, or one queue named after the test id.
-spec queue_names(beamlab_amqp_config:config(), binary()) -> [binary()].
queue_names(#{closed_loop := N}, Id) when N > 0 ->
    [iolist_to_binary([<<"beamlab-loop-">>, Id, $-, integer_to_binary(I)]) || I <- lists:seq(1, N)];
queue_names(#{queue_pattern := {Pattern, From, To}}, _Id) ->
    expand_pattern(Pattern, From, To);
queue_names(#{queues := Qs}, _Id) when is_list(Qs) ->
    Qs;
queue_names(#{queue := Q}, _Id) when is_binary(Q) ->
    [Q];
queue_names(#{exclusive := true, consumers := C}, Id) when C > 1 ->
    [iolist_to_binary([<<"beamlab-">>, Id, $-, integer_to_binary(I)]) || I <- lists:seq(1, C)];
queue_names(_, Id) ->
    [<<"beamlab-", Id/binary>>].

%% @doc Expands a PerfTest queue pattern: a Java format string with the
%% queue number from `From' to `To' (`%d', `%s', `%03d', ...).
-spec expand_pattern(unicode:chardata(), integer(), integer()) -> [binary()].
expand_pattern(Pattern, From, To) ->
    [beamlab_amqp_perftest:queue_name(Pattern, I) || I <- lists:seq(From, To)].

%% @doc Declares the exchange and the queues of a run and binds them, queue
%% i on connection i (one per node of a cluster, `--uris'). Exclusive
%% queues are left to their consumers. Returns the queues as
%% `{Name, DepthBefore, Kind}'.
-spec declare([beamlab_amqp:conn(), ...], beamlab_amqp_config:config(), [binary()]) ->
          {ok, topology()} | {error, error()}.
declare([Conn | _] = Conns, Cfg, Queues) ->
    #{exchange := Ex, exchange_type := Type, closed_loop := Loop} = Cfg,
    Stream = is_stream(arguments(Cfg)),
    case maps:get(exclusive, Cfg) andalso Loop =:= 0 of
        true ->
            %% The broker gets the exchange now, the queues from their consumers.
            case declare_exchange(Conn, Ex, Type, Loop) of
                ok -> {ok, #{queues => [{Q, 0, exclusive} || Q <- Queues], stream => Stream}};
                {error, R} -> {error, {declare_exchange, Ex, R}}
            end;
        false ->
            case declare_exchange(Conn, Ex, Type, Loop) of
                ok ->
                    N = length(Conns),
                    Indexed = lists:zip(lists:seq(0, length(Queues) - 1), Queues),
                    ByConn = [{C, [Q || {I, Q} <- Indexed, I rem N =:= K]}
                              || {K, C} <- lists:zip(lists:seq(0, N - 1), Conns)],
                    declare_on(ByConn, Cfg, Queues, #{}, Stream);
                {error, R} ->
                    {error, {declare_exchange, Ex, R}}
            end
    end.

declare_on([], _Cfg, Queues, Done, Stream) ->
    {ok, #{queues => [maps:get(Q, Done) || Q <- Queues], stream => Stream}};
declare_on([{_Conn, []} | Rest], Cfg, Queues, Done, Stream) ->
    declare_on(Rest, Cfg, Queues, Done, Stream);
declare_on([{Conn, Qs} | Rest], Cfg, Queues, Done, Stream) ->
    {ok, Ch} = beamlab_amqp:open_channel(Conn),
    case declare_queues(Conn, Ch, Cfg, Qs, []) of
        {ok, Entries} ->
            declare_on(Rest, Cfg, Queues,
                       maps:merge(Done, maps:from_list([{Q, E} || {Q, _, _} = E <- Entries])), Stream);
        {error, _} = E ->
            E
    end.

%% An existing exchange is used as it is (whatever its durability); a
%% missing one is declared durable, as PerfTest does, so that the two
%% tools can take turns on one broker. The default exchange and amq.*
%% exchanges are never declared.
declare_exchange(_Conn, Ex, _Type, Loop) when Ex =:= <<>>; Loop > 0 ->
    ok;
declare_exchange(_Conn, <<"amq.", _/binary>>, _Type, _Loop) ->
    ok;
declare_exchange(Conn, Ex, Type, _Loop) ->
    {ok, Ch} = beamlab_amqp:open_channel(Conn),
    R = case quiet(Ch, beamlab_amqp:declare_exchange(Ch, Ex, #{passive => true})) of
            ok -> ok;
            {error, {amqp_closed, 404, _}} ->
                {ok, Ch1} = beamlab_amqp:open_channel(Conn),
                quiet(Ch1, beamlab_amqp:declare_exchange(Ch1, Ex, #{type => Type, durable => true}));
            {error, _} = E ->
                E
        end,
    _ = catch beamlab_amqp:close_channel(Ch),
    R.

%% @doc What a consumer needs to declare and bind its exclusive queue.
-spec queue_spec(beamlab_amqp_config:config(), binary()) -> queue_spec().
queue_spec(Cfg, Q) ->
    #{opts => (queue_opts(Cfg))#{exclusive => true, auto_delete => false},
      exchange => case needs_binding(Cfg) of
                      true -> maps:get(exchange, Cfg);
                      false -> none
                  end,
      key => binding_key(Cfg, Q)}.

%% @doc Declares an exclusive queue on the consumer's channel and binds it.
-spec declare_exclusive(beamlab_amqp:channel(), binary(), queue_spec()) -> ok | {error, error()}.
declare_exclusive(Ch, Q, #{opts := Opts, exchange := Ex, key := Key}) ->
    case beamlab_amqp:declare_queue(Ch, Q, Opts) of
        {ok, _} when Ex =:= none -> ok;
        {ok, _} ->
            case beamlab_amqp:bind(Ch, Q, Ex, Key) of
                ok -> ok;
                {error, R} -> {error, {bind, Q, R}}
            end;
        {error, R} -> {error, {declare_queue, Q, R}}
    end.

%% Each queue is first looked up passively, to learn whether it exists
%% (a queue created here is deleted at the end) and its depth (the
%% accounting counts what the run adds). Then, unless -p, it is declared
%% with the run's arguments as PerfTest does, so a queue that exists with
%% other arguments fails with the broker's reply (406 PRECONDITION_FAILED).
declare_queues(_Conn, Ch, _Cfg, [], Acc) ->
    _ = catch beamlab_amqp:close_channel(Ch),
    {ok, lists:reverse(Acc)};
declare_queues(Conn, Ch, Cfg, [Q | Qs], Acc) ->
    Pre = maps:get(predeclared, Cfg),
    case quiet(Ch, beamlab_amqp:declare_queue(Ch, Q, #{passive => true})) of
        {ok, #{message_count := N}} when Pre ->
            bind_and_continue(Conn, Ch, Cfg, Q, Qs, [{Q, N, existing} | Acc]);
        {ok, #{message_count := N}} ->
            declare_active(Conn, Ch, Cfg, Q, Qs, [{Q, N, existing} | Acc]);
        {error, {amqp_closed, 404, _}} when not Pre ->
            %% The failed passive declare closed the channel.
            {ok, Ch1} = beamlab_amqp:open_channel(Conn),
            Kind = case maps:get(auto_delete, Cfg) of
                       false -> kept;         % PerfTest's -ad false: left on the broker
                       _ -> ours
                   end,
            declare_active(Conn, Ch1, Cfg, Q, Qs, [{Q, 0, Kind} | Acc]);
        {error, R} ->
            {error, {declare_queue, Q, R}}
    end.

declare_active(Conn, Ch, Cfg, Q, Qs, Acc) ->
    case quiet(Ch, beamlab_amqp:declare_queue(Ch, Q, queue_opts(Cfg))) of
        {ok, _} -> bind_and_continue(Conn, Ch, Cfg, Q, Qs, Acc);
        {error, R} -> {error, {declare_queue, Q, R}}
    end.

bind_and_continue(Conn, Ch, Cfg, Q, Qs, Acc) ->
    Bind = case needs_binding(Cfg) of
               true -> quiet(Ch, beamlab_amqp:bind(Ch, Q, maps:get(exchange, Cfg), binding_key(Cfg, Q)));
               false -> ok
           end,
    case Bind of
        ok -> declare_queues(Conn, Ch, Cfg, Qs, Acc);
        {error, R} -> {error, {bind, Q, R}}
    end.

needs_binding(#{exchange := Ex, closed_loop := Loop, predeclared := Pre, skip_binding := Skip}) ->
    Ex =/= <<>> andalso Loop =:= 0 andalso not Pre andalso not Skip.

binding_key(#{routing_key := undefined}, Q) -> Q;
binding_key(#{routing_key := K}, _Q) -> K.

%% Durable with -f persistent and for quorum queues and streams (which
%% must be); auto-delete as --auto-delete says (never for quorum queues
%% and streams, as PerfTest).
queue_opts(Cfg) ->
    Args = arguments(Cfg),
    Replicated = is_stream(Args) orelse lists:member({<<"x-queue-type">>, <<"quorum">>}, Args),
    #{durable => maps:get(persistent, Cfg) orelse Replicated,
      auto_delete => maps:get(auto_delete, Cfg) =:= true andalso not Replicated,
      arguments => table(Args)}.

%% @doc Arguments as PerfTest types them (booleans, 64-bit integers,
%% strings; a stream offset's time as a timestamp) as an AMQP field table.
-spec table([{binary(), beamlab_amqp_perftest:value() | {timestamp, integer()}}]) ->
          beamlab_amqp_method:table().
table(Args) ->
    [{K, T, V1} || {K, V} <- Args, {T, V1} <- [arg_type(V)]].

arg_type(V) when is_boolean(V) -> {bool, V};
arg_type(V) when is_integer(V) -> {long, V};
arg_type({timestamp, T}) -> {timestamp, T};
arg_type(V) when is_binary(V) -> {longstr, V}.

%% The queue arguments in PerfTest's order: --queue-args, the queue type
%% of -qq/-sq, a stream's defaults (20 GB, 500 MB segments), then
%% --max-length-bytes (0 removes it), --stream-max-segment-size-bytes,
%% --max-age and --leader-locator.
arguments(Cfg) ->
    Put = fun(K, V, A) -> lists:keystore(K, 1, A, {K, V}) end,
    A0 = maps:get(queue_args, Cfg),
    A1 = case {maps:get(quorum, Cfg), maps:get(stream, Cfg)} of
             {true, _} -> Put(<<"x-queue-type">>, <<"quorum">>, A0);
             {_, true} ->
                 Put(<<"x-stream-max-segment-size-bytes">>, ?STREAM_SEGMENT_BYTES,
                     Put(<<"x-max-length-bytes">>, ?STREAM_MAX_LENGTH_BYTES,
                         Put(<<"x-queue-type">>, <<"stream">>, A0)));
             _ -> A0
         end,
    A2 = case maps:get(max_length_bytes, Cfg) of
             undefined -> A1;
             0 -> lists:keydelete(<<"x-max-length-bytes">>, 1, A1);
             B -> Put(<<"x-max-length-bytes">>, B, A1)
         end,
    A3 = case maps:get(stream_segment_bytes, Cfg) of
             undefined -> A2;
             S -> Put(<<"x-stream-max-segment-size-bytes">>, S, A2)
         end,
    A4 = case maps:get(max_age, Cfg) of
             undefined -> A3;
             Age -> Put(<<"x-max-age">>, <<(integer_to_binary(Age))/binary, "s">>, A3)
         end,
    case maps:get(leader_locator, Cfg) of
        undefined -> A4;
        L -> Put(<<"x-queue-leader-locator">>, L, A4)
    end.

is_stream(Args) ->
    lists:member({<<"x-queue-type">>, <<"stream">>}, Args).

%% @doc Deletes the queues this run created (never existing ones).
-spec delete(beamlab_amqp:conn(), topology()) -> ok.
delete(Conn, #{queues := Qs}) ->
    Ours = [Q || {Q, _, ours} <- Qs],
    case Ours =/= [] andalso beamlab_amqp:open_channel(Conn) of
        {ok, Ch} ->
            _ = [catch beamlab_amqp:delete_queue(Ch, Q, #{}) || Q <- Ours],
            _ = catch beamlab_amqp:close_channel(Ch),
            ok;
        _ ->
            ok
    end.

%% @doc How many messages the queues gained over the run (passive
%% declares), `undefined' when a queue cannot be read. Exclusive queues
%% are gone with their consumers' connections (their consumers report
%% their depth).
-spec depth(beamlab_amqp:conn(), topology()) -> integer() | undefined.
depth(Conn, #{queues := Qs0}) ->
    Qs = [E || {_, _, Kind} = E <- Qs0, Kind =/= exclusive],
    case catch beamlab_amqp:open_channel(Conn) of
        {ok, Ch} ->
            Depths = [catch quiet(Ch, beamlab_amqp:declare_queue(Ch, Q, #{passive => true})) || {Q, _, _} <- Qs],
            _ = catch beamlab_amqp:close_channel(Ch),
            case [N || {ok, #{message_count := N}} <- Depths] of
                Ns when length(Ns) =:= length(Qs) ->
                    lists:sum(Ns) - lists:sum([N0 || {_, N0, _} <- Qs]);
                _ ->
                    undefined
            end;
        _ ->
            undefined
    end.


%% @doc One line for a topology error.
-spec format_error(error()) -> iolist().
format_error(Reason) ->
    beamlab_format_reason:line(fun error_line/1, Reason).

error_line({declare_queue, Q, {amqp_closed, 404, _}}) ->
    io_lib:format("queue ~ts does not exist (-p expects predeclared queues)", [Q]);
error_line({declare_queue, Q, R}) ->
    io_lib:format("cannot declare queue ~ts: ~ts", [Q, beamlab_amqp:format_error(R)]);
error_line({declare_exchange, Ex, R}) ->
    io_lib:format("cannot declare exchange ~ts: ~ts", [Ex, beamlab_amqp:format_error(R)]);
error_line({bind, Q, R}) ->
    io_lib:format("cannot bind queue ~ts: ~ts", [Q, beamlab_amqp:format_error(R)]);
error_line(Other) ->
    %% (a reason of no kind above: printed, never raised)
    beamlab_format_reason:term(Other).

%% A failed synchronous operation also sends the channel owner (us) an
%% amqp_closed message, already in the mailbox when the call returns: drop
%% it, the error is handled from the return value.
quiet(Ch, {error, _} = E) ->
    receive {amqp_closed, Ch, _, _} -> E
    after 0 -> E
    end;
quiet(_Ch, Ok) ->
    Ok.
