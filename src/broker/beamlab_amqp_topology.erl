%%% @doc The broker-side topology of a load test: queue names (`-u', the
%%% queue pattern, closed-loop queues), exchange and queue declarations and
%%% bindings as PerfTest makes them, the queues' depth for the accounting,
%%% and deleting what the run created.
-module(beamlab_amqp_topology).

-export([queue_names/2, expand_pattern/3, declare/3, delete/2, depth/2, format_error/1]).

-export_type([topology/0, error/0]).

%% `queues': {Name, message count before the run, existing | ours}.
-type topology() :: #{queues := [{binary(), non_neg_integer(), existing | ours}]}.

%% @doc The queues of a run: the closed-loop queues, the expanded
%% `--queue-pattern', the `-u' queue, or one queue named after the test id.
%% What stopped the declarations, with the broker's reason.
-type error() :: {declare_queue | bind, Queue :: binary(), beamlab_amqp:reason()}
               | {declare_exchange, Exchange :: binary(), beamlab_amqp:reason()}.

-spec queue_names(beamlab_amqp_config:config(), binary()) -> [binary()].
queue_names(#{closed_loop := N}, Id) when N > 0 ->
    [iolist_to_binary([<<"beamlab-loop-">>, Id, $-, integer_to_binary(I)]) || I <- lists:seq(1, N)];
queue_names(#{queue_pattern := {Pattern, From, To}}, _Id) ->
    expand_pattern(Pattern, From, To);
queue_names(#{queue := Q}, _Id) when is_binary(Q) ->
    [Q];
queue_names(_, Id) ->
    [<<"beamlab-", Id/binary>>].

%% @doc Expands a PerfTest queue pattern (`%d' replaced by each number from
%% `From' to `To'; other printf-style integer directives such as `%03d' are
%% honoured too).
-spec expand_pattern(binary() | string(), integer(), integer()) -> [binary()].
expand_pattern(Pattern, From, To) ->
    P = unicode:characters_to_list(Pattern),
    [iolist_to_binary(subst(P, I)) || I <- lists:seq(From, To)].

subst([], _I) -> [];
subst("%%" ++ Rest, I) -> [$% | subst(Rest, I)];
subst([$% | Rest], I) ->
    {Flags, Rest1} = lists:splitwith(fun(C) -> C >= $0 andalso C =< $9 end, Rest),
    case Rest1 of
        [$d | Rest2] -> [pad(integer_to_list(I), Flags) | subst(Rest2, I)];
        _ -> [$%, Flags | subst(Rest1, I)]
    end;
subst([C | Rest], I) -> [C | subst(Rest, I)].

pad(S, "") -> S;
pad(S, [$0 | W]) -> string:pad(S, list_to_integer(W), leading, $0);
pad(S, W) -> string:pad(S, list_to_integer(W), leading, $\s).

%% @doc Declares the exchange and the queues of a run and binds them.
%% Returns the queues as `{Name, DepthBefore, existing | ours}'.
-spec declare(beamlab_amqp:conn(), beamlab_amqp_config:config(), [binary()]) ->
          {ok, topology()} | {error, error()}.
declare(Conn, Cfg, Queues) ->
    {ok, Ch} = beamlab_amqp:open_channel(Conn),
    #{exchange := Ex, exchange_type := Type, closed_loop := Loop} = Cfg,
    Skip = Ex =:= <<>> orelse Loop > 0 orelse maps:get(predeclared, Cfg),
    %% An existing exchange is used as it is (whatever its durability);
    %% a missing one is declared durable, as PerfTest does, so that the two
    %% tools can take turns on one broker.
    ExOk = case Skip orelse quiet(Ch, beamlab_amqp:declare_exchange(Ch, Ex, #{passive => true})) of
               true -> {ok, Ch};
               ok -> {ok, Ch};
               {error, {amqp_closed, 404, _}} ->
                   {ok, Ch1} = beamlab_amqp:open_channel(Conn),
                   case quiet(Ch1, beamlab_amqp:declare_exchange(Ch1, Ex, #{type => Type, durable => true})) of
                       ok -> {ok, Ch1};
                       {error, _} = E -> E
                   end;
               {error, _} = E ->
                   E
           end,
    case ExOk of
        {ok, Ch2} -> declare_queues(Conn, Ch2, Cfg, Queues, []);
        {error, R} -> {error, {declare_exchange, Ex, R}}
    end.

%% Each queue is first looked up passively, to learn whether it exists
%% (a queue created here is deleted at the end) and its depth (the
%% accounting counts what the run adds). Then, unless -p, it is declared
%% with the run's arguments as PerfTest does, so a queue that exists with
%% other arguments fails with the broker's reply (406 PRECONDITION_FAILED).
declare_queues(_Conn, Ch, _Cfg, [], Acc) ->
    _ = catch beamlab_amqp:close_channel(Ch),
    {ok, #{queues => lists:reverse(Acc)}};
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
            declare_active(Conn, Ch1, Cfg, Q, Qs, [{Q, 0, ours} | Acc]);
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

needs_binding(#{exchange := Ex, closed_loop := Loop, predeclared := Pre}) ->
    Ex =/= <<>> andalso Loop =:= 0 andalso not Pre.

binding_key(#{routing_key := undefined}, Q) -> Q;
binding_key(#{routing_key := K}, _Q) -> K.

queue_opts(#{quorum := true}) ->
    #{durable => true, arguments => #{<<"x-queue-type">> => <<"quorum">>}};
queue_opts(#{persistent := P}) ->
    #{durable => P}.

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
%% declares), `undefined' when a queue cannot be read.
-spec depth(beamlab_amqp:conn(), topology()) -> integer() | undefined.
depth(Conn, #{queues := Qs}) ->
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
format_error({declare_queue, Q, {amqp_closed, 404, _}}) ->
    io_lib:format("queue ~ts does not exist (-p expects predeclared queues)", [Q]);
format_error({declare_queue, Q, R}) ->
    io_lib:format("cannot declare queue ~ts: ~ts", [Q, beamlab_amqp:format_error(R)]);
format_error({declare_exchange, Ex, R}) ->
    io_lib:format("cannot declare exchange ~ts: ~ts", [Ex, beamlab_amqp:format_error(R)]);
format_error({bind, Q, R}) ->
    io_lib:format("cannot bind queue ~ts: ~ts", [Q, beamlab_amqp:format_error(R)]).

%% A failed synchronous operation also sends the channel owner (us) an
%% amqp_closed message, already in the mailbox when the call returns: drop
%% it, the error is handled from the return value.
quiet(Ch, {error, _} = E) ->
    receive {amqp_closed, Ch, _, _} -> E
    after 0 -> E
    end;
quiet(_Ch, Ok) ->
    Ok.
