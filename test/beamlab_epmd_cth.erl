%%% A Common Test hook (rebar.config's ct_opts) that leaves no epmd
%%% behind a suite: nodes started with a name (peer's named nodes,
%%% RabbitMQ, `erl -sname') start `epmd -daemon' when none runs, and
%%% stopping them does not stop it, so a full CT run left an OTP 25 epmd
%%% running. After each suite: the epmd beamlab's code started in this
%%% node goes (beamlab_runtime_peer:release_epmd/0), and an epmd that did
%%% not run when the suite began is stopped once no node is registered
%%% with it (epmd refuses to stop before: another worktree's suite may be
%%% using it, and then it stays). A suite whose nodes were still
%%% registered after 10 s leaves epmd to the next suites, which find it
%%% running at their start: so at the end of the whole run an epmd that
%%% did not run when it began is stopped too (a full run on a fresh
%%% machine left one that way).
-module(beamlab_epmd_cth).

-export([id/1, init/2, pre_init_per_suite/3, post_end_per_suite/4, terminate/1]).

id(_Opts) -> ?MODULE.

init(_Id, _Opts) -> {ok, #{'$run' => running()}}.

terminate(#{'$run' := Before}) ->
    ok = beamlab_runtime_peer:release_epmd(),
    _ = Before orelse stop_epmd(100),
    ok.

pre_init_per_suite(Suite, Config, State) ->
    {Config, State#{Suite => running()}}.

post_end_per_suite(Suite, _Config, Return, State) ->
    ok = beamlab_runtime_peer:release_epmd(),
    _ = maps:get(Suite, State, true) orelse stop_epmd(100),
    {Return, maps:remove(Suite, State)}.

running() ->
    element(1, erl_epmd:names()) =:= ok.

%% Up to 10 s for the suite's nodes (a broker shutting down) to go.
stop_epmd(0) ->
    ok;
stop_epmd(N) ->
    case erl_epmd:names() of
        {error, _} -> ok;
        {ok, []} ->
            _ = os:cmd("epmd -kill"),
            stop_epmd(N - 1);
        {ok, _} ->
            receive after 100 -> stop_epmd(N - 1) end
    end.
