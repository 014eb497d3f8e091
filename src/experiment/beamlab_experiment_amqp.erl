%%% @doc An AMQP 0-9-1 load as an experiment: PerfTest's run
%%% (`beamlab_amqp_perf'), the broker's telemetry beside it (`watch'),
%%% this VM's telemetry and the detectors' findings; PerfTest's report
%%% lines go to the sink as `{amqp, Line}'.
-module(beamlab_experiment_amqp).

-behaviour(beamlab_experiment_kind).

-export([name/0, options/0, new/1, check/2, run/3, verdict/1, error_class/1, format_error/1]).

%% `config' is the load generator's (`beamlab_amqp_perf:options()', without
%% `out' and `nodes'); `nodes' where the load runs: this VM, N VMs (this
%% one and N-1 started peers) or named nodes; `watch' the broker's node;
%% `dist' names this VM for named nodes on other hosts.
-type amqp() :: #{config := beamlab_amqp_perf:options(),
                  nodes => this | {peers, pos_integer()} | [node()],
                  watch => #{node := string(), cookie => string() | undefined},
                  dist => beamlab_experiment:dist()}.
-type error_reason() :: {watch, beamlab_experiment_watch:error_reason()}
                      | {dist, beamlab_experiment_dist:error_reason()}
                      | term().
-export_type([amqp/0, error_reason/0]).

%% @doc The kind's name: `amqp'.
-spec name() -> amqp.
name() -> amqp.

%% @doc The options of an AMQP load: the load generator's
%% (`beamlab_amqp_config:defaults/0' but `out' and `nodes'), `nodes',
%% `watch'.
-spec options() -> [beamlab_schema:option()].
options() ->
    [#{name => K} || K <- lists:sort(maps:keys(config_defaults())) ++ [nodes, watch]].

%% @doc The load of the generator's options over its defaults (`uri' as
%% text), on `nodes' (a count of VMs, or node names as text), with the
%% broker's node watched beside it (`watch': `#{node, cookie}', text).
-spec new(#{atom() => term()}) -> {ok, amqp()} | {error, {bad_option, nodes, term()}}.
new(Opts) ->
    Defaults = config_defaults(),
    Cfg0 = maps:merge(Defaults, maps:with(maps:keys(Defaults), Opts)),
    Cfg = Cfg0#{uri := unicode:characters_to_binary(maps:get(uri, Cfg0))},
    Watch = case maps:find(watch, Opts) of
                {ok, #{node := _} = W} -> #{watch => W};
                _ -> #{}
            end,
    case maps:get(nodes, Opts, this) of
        N when is_integer(N), N > 1 -> {ok, Watch#{config => Cfg, nodes => {peers, N}}};
        N when N =:= 1; N =:= this -> {ok, Watch#{config => Cfg, nodes => this}};
        L when is_list(L) -> {ok, Watch#{config => Cfg, nodes => [list_to_atom(X) || X <- L]}};
        Bad -> {error, {bad_option, nodes, Bad}}
    end.

config_defaults() ->
    maps:without([out, nodes], beamlab_amqp_config:defaults()).

%% @doc Nothing to check before it starts (the generator checks its
%% configuration when it starts).
-spec check(amqp(), beamlab_experiment:experiment()) -> ok.
check(_A, _Exp) -> ok.

%% @doc Runs the load; a run that ended early (broker gone, node down)
%% still returns its document, whose verdict says so.
-spec run(amqp(), beamlab_experiment:experiment(), beamlab_experiment:inner()) ->
          {ok, beamlab_result:result()} | {error, {amqp, error_reason()}}.
run(#{config := Cfg0} = A, Exp, _Inner) ->
    Nodes0 = maps:get(nodes, A, this),
    case beamlab_experiment_dist:controller(maps:get(dist, A, #{}),
                                            case Nodes0 of L when is_list(L) -> L; _ -> [] end) of
        ok -> load(A, Cfg0, Exp);
        {error, R} -> {error, {amqp, {dist, R}}}
    end.

load(A, Cfg0, Exp) ->
    Sink = maps:get(sink, Exp, fun(_) -> ok end),
    Sampler = beamlab_experiment_telemetry:start(maps:get(telemetry, Exp, none), Exp),
    Started = beamlab_runtime_clock:rfc3339(),
    %% The broker's telemetry, one sample per reporting interval.
    Interval = max(1, round(maps:get(interval, Cfg0, 1) * 1000)),
    case beamlab_experiment_watch:start_beside(maps:get(watch, A, undefined), Interval, Exp) of
        {ok, Beside} ->
            %% (Watching may have made this VM a node: `this' is read now.)
            Nodes = case maps:get(nodes, A, this) of
                        this -> [node()];
                        N -> N
                    end,
            Cfg = Cfg0#{nodes => Nodes},
            %% --watch: the broker's figures under each interval line.
            Annotate = case Beside of
                           none -> none;
                           _ -> fun() -> beamlab_experiment_watch:line(Beside) end
                       end,
            %% --metrics-port: the rates and latencies as live metrics.
            Metrics = case beamlab_experiment_metrics:server(Exp) of
                          undefined -> none;
                          Server -> Server
                      end,
            case beamlab_amqp_perf:run(Cfg#{out => fun(Bin) -> Sink({amqp, Bin}) end,
                                            annotate => Annotate, metrics => Metrics}) of
                {ok, Report} ->
                    Doc0 = beamlab_amqp_perf:result(Report, #{command => maps:get(command, Exp, []),
                                                              started_at => Started,
                                                              params => params(Cfg)}),
                    Doc1 = beamlab_experiment_telemetry:stop(Sampler, Doc0, Exp),
                    Doc2 = beamlab_experiment_watch:stop_beside(Beside, Doc1, Exp),
                    case beamlab_experiment_watch:summary(Beside, Doc2) of
                        none -> ok;
                        Text -> Sink({amqp, unicode:characters_to_binary(
                                              ["id: ", maps:get(id, Report), ", ", Text, "\n"])})
                    end,
                    {ok, beamlab_experiment_env:attach(Doc2, Exp)};
                {error, interrupted} ->
                    %% Interrupted while connecting (a silent server):
                    %% nothing measured, the run is over at once.
                    ok = beamlab_experiment_telemetry:cancel(Sampler),
                    ok = beamlab_experiment_watch:cancel_beside(Beside, Exp),
                    Sink({note, "interrupted before the run started"}),
                    Doc = beamlab_result:new(amqp, #{command => maps:get(command, Exp, []),
                                                     started_at => Started, params => params(Cfg)}),
                    {ok, beamlab_result:finish(Doc, #{finished_at => beamlab_runtime_clock:rfc3339(),
                                                      partial => true})};
                {error, Reason} ->
                    ok = beamlab_experiment_telemetry:cancel(Sampler),
                    ok = beamlab_experiment_watch:cancel_beside(Beside, Exp),
                    {error, {amqp, Reason}}
            end;
        {error, E} ->
            ok = beamlab_experiment_telemetry:cancel(Sampler),
            {error, {amqp, {watch, E}}}
    end.

%% The options as they go into the result document (JSON-friendly; the
%% bodies and the TLS files left out).
params(Cfg) ->
    maps:map(fun(_, V) -> param(V) end, maps:without([out, body, tls, annotate, metrics], Cfg)).

param(V) when is_atom(V), V =/= true, V =/= false, V =/= undefined -> atom_to_binary(V);
param(undefined) -> null;
param({peers, N}) -> N;
param({P, F, T}) when is_integer(F) -> #{pattern => P, from => F, to => T};
param({A, B}) when is_integer(A), is_integer(B) -> [A, B];
param({timestamp, T}) -> T;
param(L) when is_list(L) -> [param(X) || X <- L];
param(M) when is_map(M) -> maps:map(fun(_, X) -> param(X) end, M);
param({K, V}) when is_binary(K) -> #{key => K, value => param(V)};
param(V) when is_tuple(V) -> iolist_to_binary(io_lib:format("~0tp", [V]));
param(V) -> V.

%% @doc Failed when the run ended early (the reason in one line) or
%% measured nothing (with the likely reason); interrupted when it was.
-spec verdict(beamlab_result:result()) -> beamlab_experiment:verdict().
verdict(#{extra := #{<<"amqp">> := #{<<"failure">> := F}}}) when is_binary(F) ->
    {failed, [F]};
verdict(#{partial := true}) ->
    {interrupted, []};
verdict(#{extra := #{<<"amqp">> := Amqp}, benchmarks := Bs}) ->
    C = maps:get(<<"counters">>, Amqp, #{}),
    Sent = maps:get(<<"sent">>, C, 0),
    Received = maps:get(<<"received">>, C, 0),
    Queued = case maps:get(<<"queued">>, maps:get(<<"accounting">>, Amqp, #{}), null) of
                 Q when is_integer(Q) -> integer_to_list(Q);
                 _ -> "?"
             end,
    Names = [N || #{name := N} <- Bs],
    Published = lists:member(<<"sent">>, Names),
    ReceivedOn = lists:member(<<"received">>, Names),
    if
        Published, Sent =:= 0 ->
            {failed, ["no messages measured: nothing was published (is the broker blocking "
                      "publishers, e.g. a memory or disk alarm?)"]};
        ReceivedOn, Received =:= 0, Sent > 0 ->
            {failed, [io_lib:format("no messages measured: ~b sent, none received (~b returned, "
                                    "~ts still queued); the run ended before the consumers got "
                                    "any (large messages take time: give -D or a longer -z)",
                                    [Sent, maps:get(<<"returned">>, C, 0), Queued])]};
        true ->
            {ok, []}
    end.

%% @doc A node name that cannot work is the caller's mistake; what the
%% broker or the nodes did is a failure.
-spec error_class(error_reason()) -> usage | failure.
error_class({watch, E}) -> beamlab_experiment_watch:error_class(E);
error_class({dist, E}) -> beamlab_experiment_dist:error_class(E);
error_class(_) -> failure.

%% @doc One line for each error.
-spec format_error(error_reason()) -> unicode:chardata().
format_error({watch, E}) -> ["--watch: ", beamlab_experiment_watch:format_error(E)];
format_error({dist, E}) -> beamlab_experiment_dist:format_error(E);
format_error(E) -> beamlab_amqp_perf:format_error(E).
