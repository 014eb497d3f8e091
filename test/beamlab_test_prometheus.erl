%%% @doc A real Prometheus for the test suites: Debian's `prometheus'
%%% (installed by `scripts/install-deps.sh --test') started on loopback at
%%% a free port with a generated configuration that scrapes the given
%%% targets, queried through its HTTP API, and `promtool check metrics'.
%%%
%%% ```
%%% {ok, P} = beamlab_test_prometheus:start(["127.0.0.1:9464"], #{interval => "1s"}),
%%% [_ | _] = beamlab_test_prometheus:wait_for(P, "beamlab_node_processes", fun(R) -> R =/= [] end, 30000),
%%% ok = beamlab_test_prometheus:stop(P).
%%% '''
-module(beamlab_test_prometheus).

-export([available/0, start/2, stop/1, query/2, wait_for/4, targets/1, check_metrics/1, get/2, url/1]).

-type prom() :: #{port := port(), os_pid := integer(), url := string(), dir := file:filename()}.
-type sample() :: #{metric := map(), value := float() | binary()}.
-export_type([prom/0, sample/0]).

%% @doc `ok' when the `prometheus' and `promtool' binaries are installed,
%% else why not (a suite skips with it).
-spec available() -> ok | {skip, string()}.
available() ->
    case {os:find_executable("prometheus"), os:find_executable("promtool")} of
        {P, T} when is_list(P), is_list(T) -> ok;
        _ -> {skip, "Debian's prometheus is not installed (scripts/install-deps.sh --test)"}
    end.

%% @doc Starts Prometheus scraping `Targets' ("host:port") at `/metrics'
%% every `interval' (default "1s"), job `job' (default "beamlab"); waits
%% until it is ready. Its files go to a fresh test directory.
-spec start([string()], #{interval => string(), job => string()}) -> {ok, prom()} | {error, term()}.
start(Targets, Opts) ->
    {ok, _} = application:ensure_all_started(inets),
    Dir = beamlab_test_util:tmp_dir("prometheus"),
    Interval = maps:get(interval, Opts, "1s"),
    Config = filename:join(Dir, "prometheus.yml"),
    ok = file:write_file(Config,
                         ["global:\n  scrape_interval: ", Interval, "\n  scrape_timeout: ", Interval, "\n",
                          "scrape_configs:\n  - job_name: ", maps:get(job, Opts, "beamlab"), "\n",
                          "    metrics_path: /metrics\n    static_configs:\n      - targets: [",
                          lists:join(", ", ["'" ++ T ++ "'" || T <- Targets]), "]\n"]),
    Port = beamlab_test_util:free_port(),
    Url = "http://127.0.0.1:" ++ integer_to_list(Port),
    Exe = os:find_executable("prometheus"),
    Log = filename:join(Dir, "prometheus.log"),
    %% exec: the port's OS pid is Prometheus itself, so stop/1 can signal it.
    P = open_port({spawn_executable, "/bin/sh"},
                  [{args, ["-c", "exec \"$0\" \"$@\" >\"$LOG\" 2>&1", Exe,
                           "--config.file=" ++ Config,
                           "--storage.tsdb.path=" ++ filename:join(Dir, "data"),
                           "--web.listen-address=127.0.0.1:" ++ integer_to_list(Port),
                           "--log.level=info"]},
                   {env, [{"LOG", Log}]}, exit_status, {cd, Dir}]),
    {os_pid, OsPid} = erlang:port_info(P, os_pid),
    Prom = #{port => P, os_pid => OsPid, url => Url, dir => Dir},
    try beamlab_test_util:wait_until(fun() -> ready(Prom) end, 60000, prometheus_ready) of
        ok -> {ok, Prom}
    catch error:{timeout, _} ->
            ok = stop(Prom),
            {error, {not_ready, file:read_file(Log)}}
    end.

ready(Prom) ->
    case get(Prom, "/-/ready") of
        {ok, 200, _} -> true;
        _ -> false
    end.

%% @doc Stops Prometheus (SIGTERM, then SIGKILL after 10 s).
-spec stop(prom()) -> ok.
stop(#{port := P, os_pid := OsPid}) ->
    _ = os:cmd("kill -TERM " ++ integer_to_list(OsPid)),
    receive
        {P, {exit_status, _}} -> ok
    after 10000 ->
            _ = os:cmd("kill -KILL " ++ integer_to_list(OsPid)),
            receive {P, {exit_status, _}} -> ok after 5000 -> ok end
    end,
    catch port_close(P),
    ok.

%% @doc The base URL of its HTTP API.
-spec url(prom()) -> string().
url(#{url := Url}) -> Url.

%% @doc An instant query: the vector's samples.
-spec query(prom(), string()) -> {ok, [sample()]} | {error, term()}.
query(Prom, Expr) ->
    case get(Prom, "/api/v1/query?query=" ++ uri_string:quote(Expr)) of
        {ok, 200, Body} ->
            {ok, #{<<"data">> := #{<<"result">> := Result}}} = beamlab_json:decode(Body),
            {ok, [#{metric => M, value => to_float(V)} || #{<<"metric">> := M, <<"value">> := [_, V]} <- Result]};
        {ok, Status, Body} -> {error, {Status, Body}};
        Error -> Error
    end.

%% @doc Queries `Expr' until `Pred' holds on its samples; fails the test
%% after `Timeout' ms, naming the last answer.
-spec wait_for(prom(), string(), fun(([sample()]) -> boolean()), pos_integer()) -> [sample()].
wait_for(Prom, Expr, Pred, Timeout) ->
    beamlab_test_util:wait_for(fun() ->
                                       case query(Prom, Expr) of
                                           {ok, Samples} = R -> Pred(Samples) andalso R;
                                           E -> E
                                       end
                               end, Timeout, {prometheus_query, Expr}).

%% @doc The active targets: `[{ScrapeUrl, Health, LastError}]'.
-spec targets(prom()) -> [{binary(), binary(), binary()}].
targets(Prom) ->
    {ok, 200, Body} = get(Prom, "/api/v1/targets"),
    {ok, #{<<"data">> := #{<<"activeTargets">> := Ts}}} = beamlab_json:decode(Body),
    [{maps:get(<<"scrapeUrl">>, T), maps:get(<<"health">>, T), maps:get(<<"lastError">>, T)} || T <- Ts].

%% @doc `promtool check metrics' on an exposition in the Prometheus text
%% format: `{ExitStatus, Output}' (0 and no output when it is clean).
-spec check_metrics(iodata()) -> {integer(), binary()}.
check_metrics(Text) ->
    Dir = beamlab_test_util:tmp_dir("promtool"),
    File = filename:join(Dir, "metrics.txt"),
    ok = file:write_file(File, Text),
    P = open_port({spawn_executable, "/bin/sh"},
                  [{args, ["-c", "exec promtool check metrics <\"$0\" 2>&1", File]},
                   binary, exit_status, stderr_to_stdout]),
    beamlab_test_util:port_output(P, 60000).

%% @doc A GET on its API (or any path of it): status and body.
-spec get(prom() | string(), string()) -> {ok, integer(), binary()} | {error, term()}.
get(#{url := Url}, Path) ->
    get(Url, Path);
get(Url, Path) ->
    {ok, _} = application:ensure_all_started(inets),
    case httpc:request(get, {Url ++ Path, []}, [{timeout, 10000}], [{body_format, binary}]) of
        {ok, {{_, Status, _}, _, Body}} -> {ok, Status, Body};
        {error, _} = E -> E
    end.

%% "NaN" and "+Inf" stay as they are.
to_float(B) ->
    case string:to_float(B) of
        {F, <<>>} -> F;
        _ -> try float(binary_to_integer(B)) catch error:badarg -> B end
    end.
