%%% @doc Live metrics over HTTP for Prometheus and any OpenMetrics
%%% scraper: `GET /metrics' answers with the families every registered
%%% collector returns at that moment, in the OpenMetrics text format when
%%% the scraper asks for it (`Accept: application/openmetrics-text', as
%%% Prometheus does) and in the Prometheus text format 0.0.4 otherwise
%%% (`beamlab_format_openmetrics' renders both). OTP only: `gen_tcp' with
%%% the emulator's own HTTP packet parser.
%%%
%%% A feature publishes what it measures by registering a collector, a fun
%%% that reads its own counters and histograms when a scrape comes (nothing
%%% is copied per event). Collectors run in parallel in the connection's
%%% own processes, each bounded by a timeout: a collector that fails or is
%%% late is left out of that scrape, and `beamlab_metrics_collector_up'
%%% says which. The server listens on loopback unless told otherwise and
%%% stops with the process that started it.
%%%
%%% Idle clients cannot lock a scraper out (#34): a request's head must be
%%% complete within 10 s of its first wait (a slowloris that trickles one
%%% header line at a time is cut when its request stops advancing towards
%%% that deadline), a kept-alive connection may wait 2 minutes for its next
%%% request, and when more than 16 connections are open every new one
%%% makes the connections that have been waiting (idle, or with a request
%%% that has not completed) for over a second close, so the newcomer, a
%%% scrape, is served. Only at 1024 connections is one refused (503).
-module(beamlab_runtime_metrics).
-behaviour(gen_server).

-export([start/1, register/3, unregister/2, stop/1, port/1, families/1, format_error/1]).
-export([init/1, handle_call/3, handle_cast/2, handle_info/2, terminate/2]).

-type labels() :: beamlab_format_openmetrics:labels().
-type histogram() :: beamlab_format_openmetrics:histogram().
-type family() :: beamlab_format_openmetrics:family().
-type collector() :: fun(() -> [family()]).
-type server() :: pid().
-type opts() :: #{port := inet:port_number(), bind => inet:ip_address()}.
-type error_reason() :: {listen, inet:ip_address(), inet:port_number(), inet:posix() | term()}.
-export_type([labels/0, histogram/0, family/0, collector/0, server/0, opts/0, error_reason/0]).

-define(SOFT_CONNECTIONS, 16).      % above this, waiting connections are evicted
-define(MAX_CONNECTIONS, 1024).    % above this, a newcomer is refused
-define(EVICT_AFTER, 1000).        % ms a connection waited before it may be evicted
-define(REQUEST_TIMEOUT, 10000).   % ms to send a request's head
-define(IDLE_TIMEOUT, 120000).     % ms a kept-alive connection may wait
-define(COLLECT_TIMEOUT, 5000).    % ms for all collectors of one scrape
-define(MAX_HEADERS, 100).

-record(st, {listen :: gen_tcp:socket(),
             acceptor :: pid(),
             owner :: reference(),
             collectors = [] :: [{atom(), collector()}]}).

%% @doc Listens on `bind' (default 127.0.0.1) at `port' (0: any free
%% port, see {@link port/1}). The server stops when the calling process
%% exits or {@link stop/1} is called.
-spec start(opts()) -> {ok, server()} | {error, error_reason()}.
start(#{port := Port} = Opts) ->
    %% (Listening here, not in init/1: on OTP 25 an init/1 that returns
    %% `{stop, _}' leaves a crash report on stderr beside our one line.)
    Bind = maps:get(bind, Opts, {127, 0, 0, 1}),
    Family = case tuple_size(Bind) of 8 -> inet6; _ -> inet end,
    case gen_tcp:listen(Port, [binary, Family, {ip, Bind}, {active, false}, {reuseaddr, true},
                               {packet, http_bin}, {packet_size, 16384}, {backlog, 64}]) of
        {ok, L} ->
            {ok, Server} = gen_server:start(?MODULE, {self(), L}, []),
            ok = gen_tcp:controlling_process(L, Server),
            {ok, Server};
        {error, Reason} ->
            {error, {listen, Bind, Port, Reason}}
    end.

%% @doc Adds (or replaces) the collector called `Name'.
-spec register(server(), atom(), collector()) -> ok.
register(Server, Name, Collector) when is_atom(Name), is_function(Collector, 0) ->
    gen_server:call(Server, {register, Name, Collector}).

%% @doc Removes the collector called `Name' (if there is one).
-spec unregister(server(), atom()) -> ok.
unregister(Server, Name) ->
    gen_server:call(Server, {unregister, Name}).

%% @doc Stops listening and closes every connection.
-spec stop(server()) -> ok.
stop(Server) ->
    try gen_server:stop(Server)
    catch exit:noproc -> ok
    end.

%% @doc The port the server listens on.
-spec port(server()) -> inet:port_number().
port(Server) ->
    gen_server:call(Server, port).

%% @doc What a scrape would serve now: every collector's families (those
%% that fail or are late left out) and `beamlab_metrics_collector_up'.
-spec families(server()) -> [family()].
families(Server) ->
    collect(gen_server:call(Server, collectors)).

%% @doc One line for an error of {@link start/1}.
-spec format_error(error_reason()) -> iolist().
format_error(Reason) ->
    beamlab_format_reason:line(fun error_line/1, Reason).

error_line({listen, Bind, Port, Reason}) ->
    Why = case Reason of
              R when is_atom(R) -> inet:format_error(R);
              R -> io_lib:format("~0tp", [R])
          end,
    io_lib:format("cannot serve metrics on ~ts: ~ts", [address(Bind, Port), Why]);
error_line(Other) ->
    %% (a reason of no kind above: printed, never raised)
    beamlab_format_reason:term(Other).

address(Ip, Port) when tuple_size(Ip) =:= 8 -> io_lib:format("[~ts]:~b", [inet:ntoa(Ip), Port]);
address(Ip, Port) -> io_lib:format("~ts:~b", [inet:ntoa(Ip), Port]).

%%--------------------------------------------------------------------
%% gen_server
%%--------------------------------------------------------------------

%% @private
-spec init({pid(), gen_tcp:socket()}) -> {ok, #st{}}.
init({Owner, L}) ->
    process_flag(trap_exit, true),
    Self = self(),
    Acceptor = spawn_link(fun() ->
                                  Conns = ets:new(beamlab_metrics_conns, [public, set]),
                                  accept(Self, L, {counters:new(1, [atomics]), Conns})
                          end),
    {ok, #st{listen = L, acceptor = Acceptor, owner = erlang:monitor(process, Owner)}}.

%% @private
-spec handle_call(term(), gen_server:from(), #st{}) -> {reply, term(), #st{}}.
handle_call({register, Name, Fun}, _From, St = #st{collectors = Cs}) ->
    {reply, ok, St#st{collectors = lists:keystore(Name, 1, Cs, {Name, Fun})}};
handle_call({unregister, Name}, _From, St = #st{collectors = Cs}) ->
    {reply, ok, St#st{collectors = lists:keydelete(Name, 1, Cs)}};
handle_call(collectors, _From, St = #st{collectors = Cs}) ->
    {reply, Cs, St};
handle_call(port, _From, St = #st{listen = L}) ->
    {ok, Port} = inet:port(L),
    {reply, Port, St}.

%% @private
-spec handle_cast(term(), #st{}) -> {noreply, #st{}}.
handle_cast(_, St) ->
    {noreply, St}.

%% @private
-spec handle_info(term(), #st{}) -> {noreply, #st{}} | {stop, term(), #st{}}.
handle_info({'DOWN', Ref, process, _, _}, St = #st{owner = Ref}) ->
    {stop, normal, St};
handle_info({'EXIT', Pid, Reason}, St = #st{acceptor = Pid}) ->
    {stop, Reason, St};
handle_info(_, St) ->
    {noreply, St}.

%% @private
-spec terminate(term(), #st{}) -> ok.
terminate(_, #st{listen = L, acceptor = A}) ->
    ok = gen_tcp:close(L),
    unlink(A),
    exit(A, kill),
    ok.

%%--------------------------------------------------------------------
%% Connections
%%--------------------------------------------------------------------

%% Connection handlers are linked to the acceptor, which is linked to the
%% server: stopping the server closes them all. A handler never crashes
%% (it catches everything), so it cannot take the acceptor down.
accept(Server, L, {Count, Conns} = Reg) ->
    case gen_tcp:accept(L) of
        {ok, S} ->
            Open = counters:get(Count, 1),
            %% Pressure: whoever has been waiting for over a second goes,
            %% so a scrape that arrives now is served.
            Open >= ?SOFT_CONNECTIONS andalso
                begin
                    Before = erlang:monotonic_time(millisecond) - ?EVICT_AFTER,
                    ets:foldl(fun({Pid}, _) -> Pid ! {evict, Before}, ok end, ok, Conns)
                end,
            case Open >= ?MAX_CONNECTIONS of
                true ->
                    _ = gen_tcp:send(S, response(503, <<"text/plain">>, <<"too many connections\n">>, false, [])),
                    ok = gen_tcp:close(S);
                false ->
                    counters:add(Count, 1, 1),
                    Pid = spawn_link(fun() -> connection(Server, S, Reg) end),
                    case gen_tcp:controlling_process(S, Pid) of
                        ok -> Pid ! go;
                        {error, _} -> exit(Pid, kill), counters:sub(Count, 1, 1)
                    end
            end,
            accept(Server, L, Reg);
        {error, closed} -> ok;
        {error, _} -> accept(Server, L, Reg)
    end.

connection(Server, S, {Count, Conns}) ->
    try
        receive go -> ok end,
        true = ets:insert(Conns, {self()}),
        serve(Server, S, ?REQUEST_TIMEOUT)
    catch _:_ -> ok
    after
        _ = gen_tcp:close(S),
        _ = ets:delete(Conns, self()),
        counters:sub(Count, 1, 1)
    end.

%% One request after the other on a kept-alive connection.
serve(Server, S, Timeout) ->
    ok = inet:setopts(S, [{packet, http_bin}]),
    case request(S, Timeout) of
        {ok, Method, Path, Version, Headers} ->
            %% A request with a body is answered, then the connection closed.
            Keep = keep_alive(Version, Headers)
                andalso not lists:keymember(<<"content-length">>, 1, Headers)
                andalso not lists:keymember(<<"transfer-encoding">>, 1, Headers),
            ok = gen_tcp:send(S, answer(Server, Method, Path, Headers, Keep)),
            case Keep of
                true -> serve(Server, S, ?IDLE_TIMEOUT);
                false -> ok
            end;
        {bad, Why} ->
            _ = gen_tcp:send(S, response(400, <<"text/plain">>, [Why, "\n"], false, [])),
            ok;
        closed ->
            ok
    end.

%% The request line within `Timeout' (idle) and then the whole head within
%% ?REQUEST_TIMEOUT of it: a deadline for the request, not for each line.
request(S, Timeout) ->
    Since = erlang:monotonic_time(millisecond),
    case recv(S, Since + Timeout, Since) of
        {ok, {http_request, Method, Uri, Version}} ->
            Now = erlang:monotonic_time(millisecond),
            case headers(S, [], 0, {Now + ?REQUEST_TIMEOUT, Now}) of
                {ok, Headers} -> {ok, Method, path(Uri), Version, Headers};
                Other -> Other
            end;
        {ok, {http_error, _}} -> {bad, <<"bad request line">>};
        {ok, _} -> {bad, <<"bad request">>};
        {error, _} -> closed
    end.

headers(_, _, N, _) when N > ?MAX_HEADERS ->
    {bad, <<"too many headers">>};
headers(S, Acc, N, {Deadline, Since} = D) ->
    case recv(S, Deadline, Since) of
        {ok, {http_header, _, Name, _, Value}} ->
            headers(S, [{header_name(Name), Value} | Acc], N + 1, D);
        {ok, http_eoh} -> {ok, Acc};
        {ok, {http_error, _}} -> {bad, <<"bad header">>};
        {ok, _} -> {bad, <<"bad request">>};
        {error, _} -> closed
    end.

%% One packet by its deadline; an eviction (the acceptor under pressure)
%% that names a time after this wait started closes the connection.
recv(S, Deadline, Since) ->
    ok = inet:setopts(S, [{active, once}]),
    wait_packet(S, Deadline, Since).

wait_packet(S, Deadline, Since) ->
    receive
        {http, S, Packet} -> {ok, Packet};
        {tcp_closed, S} -> {error, closed};
        {tcp_error, S, R} -> {error, R};
        {evict, Before} when Since =< Before -> {error, evicted};
        {evict, _} -> wait_packet(S, Deadline, Since)
    after max(0, Deadline - erlang:monotonic_time(millisecond)) ->
            {error, timeout}
    end.

header_name(A) when is_atom(A) -> string:lowercase(atom_to_binary(A));
header_name(B) -> string:lowercase(B).

path({abs_path, P}) -> hd(binary:split(P, <<"?">>));
path({absoluteURI, _, _, _, P}) -> hd(binary:split(P, <<"?">>));
path(_) -> <<>>.

keep_alive(Version, Headers) ->
    Conn = string:lowercase(proplists:get_value(<<"connection">>, Headers, <<>>)),
    case Version of
        {1, 1} -> binary:match(Conn, <<"close">>) =:= nomatch;
        _ -> binary:match(Conn, <<"keep-alive">>) =/= nomatch
    end.

answer(Server, Method, Path, Headers, Keep) when Method =:= 'GET'; Method =:= 'HEAD' ->
    {Status, Type, Body, Extra} =
        case Path of
            <<"/metrics">> ->
                Format = beamlab_format_openmetrics:negotiate(proplists:get_value(<<"accept">>, Headers)),
                Text = iolist_to_binary(beamlab_format_openmetrics:render(families(Server), Format)),
                {Enc, Out} = encode(proplists:get_value(<<"accept-encoding">>, Headers, <<>>), Text),
                {200, beamlab_format_openmetrics:content_type(Format), Out, Enc};
            <<"/">> ->
                {200, <<"text/plain; charset=utf-8">>, <<"beamlab metrics: GET /metrics\n">>, []};
            _ ->
                {404, <<"text/plain; charset=utf-8">>, <<"not found: the metrics are at /metrics\n">>, []}
        end,
    case Method of
        'HEAD' -> response(Status, Type, {head, iolist_size(Body)}, Keep, Extra);
        'GET' -> response(Status, Type, Body, Keep, Extra)
    end;
answer(_, _, _, _, Keep) ->
    response(405, <<"text/plain; charset=utf-8">>, <<"only GET and HEAD\n">>, Keep,
             [{<<"allow">>, <<"GET, HEAD">>}]).

%% gzip when the scraper accepts it (Prometheus does).
encode(AcceptEncoding, Text) ->
    case binary:match(string:lowercase(AcceptEncoding), <<"gzip">>) of
        nomatch -> {[], Text};
        _ -> {[{<<"content-encoding">>, <<"gzip">>}], zlib:gzip(Text)}
    end.

response(Status, Type, Body, Keep, Extra) ->
    {Len, Payload} = case Body of
                         {head, N} -> {N, <<>>};
                         _ -> {iolist_size(Body), Body}
                     end,
    ["HTTP/1.1 ", integer_to_list(Status), " ", reason(Status), "\r\n",
     "content-type: ", Type, "\r\n",
     "content-length: ", integer_to_list(Len), "\r\n",
     [[K, ": ", V, "\r\n"] || {K, V} <- Extra],
     case Keep of true -> ""; false -> "connection: close\r\n" end,
     "\r\n", Payload].

reason(200) -> "OK";
reason(400) -> "Bad Request";
reason(404) -> "Not Found";
reason(405) -> "Method Not Allowed";
reason(503) -> "Service Unavailable".

%%--------------------------------------------------------------------
%% Collecting
%%--------------------------------------------------------------------

%% Every collector in a process of its own, all bounded by one deadline.
collect(Collectors) ->
    Self = self(),
    Tag = make_ref(),
    Running = [{Name, spawn_monitor(fun() -> Self ! {Tag, self(), run(Fun)} end)}
               || {Name, Fun} <- Collectors],
    Deadline = erlang:monotonic_time(millisecond) + ?COLLECT_TIMEOUT,
    Results = [{Name, wait(Tag, Pid, Ref, Deadline)} || {Name, {Pid, Ref}} <- Running],
    lists:append([Fs || {_, {ok, Fs}} <- Results])
        ++ [#{name => <<"beamlab_metrics_collector_up">>, type => gauge,
              help => <<"1 when the collector answered the last scrape in time, 0 when it failed or was late">>,
              samples => [{[{<<"collector">>, atom_to_binary(Name)}], case R of {ok, _} -> 1; _ -> 0 end}
                          || {Name, R} <- Results]}].

run(Fun) ->
    try Fun() of
        Fs when is_list(Fs) -> {ok, [F || F = #{name := _, type := _, help := _, samples := _} <- Fs]};
        _ -> failed
    catch _:_ -> failed
    end.

wait(Tag, Pid, Ref, Deadline) ->
    receive
        {Tag, Pid, R} ->
            erlang:demonitor(Ref, [flush]),
            R;
        {'DOWN', Ref, process, Pid, _} -> failed
    after max(0, Deadline - erlang:monotonic_time(millisecond)) ->
            exit(Pid, kill),
            erlang:demonitor(Ref, [flush]),
            receive {Tag, Pid, _} -> ok after 0 -> ok end,
            late
    end.
