%%% @doc beamlab's top supervisor: a `simple_one_for_one'-free, empty
%%% one_for_one supervisor under which long-running jobs and monitors
%%% started through the API are attached with {@link start_child/1}.
-module(beamlab_sup).
-behaviour(supervisor).

-export([start_link/0, start_child/1, init/1]).

%% @doc Starts the supervisor, registered as `beamlab_sup'.
-spec start_link() -> {ok, pid()} | {error, term()}.
start_link() ->
    supervisor:start_link({local, ?MODULE}, ?MODULE, []).

%% @doc Starts a child (a `supervisor:child_spec()') under beamlab.
-spec start_child(supervisor:child_spec()) -> supervisor:startchild_ret().
start_child(Spec) ->
    supervisor:start_child(?MODULE, Spec).

%% @private
-spec init([]) -> {ok, {supervisor:sup_flags(), [supervisor:child_spec()]}}.
init([]) ->
    {ok, {#{strategy => one_for_one, intensity => 5, period => 10}, []}}.
