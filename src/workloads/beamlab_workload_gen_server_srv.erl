%%% @doc The server of the `gen_server' workload: counts the calls it handles.
-module(beamlab_workload_gen_server_srv).
-behaviour(gen_server).

-export([start_link/0, reset/1]).
-export([init/1, handle_call/3, handle_cast/2]).

%% @doc Start a counting server linked to the caller.
-spec start_link() -> {ok, pid()} | {error, term()}.
start_link() -> gen_server:start_link(?MODULE, 0, []).

%% @doc Return the number of `{add, N}' calls handled since the last reset.
-spec reset(pid()) -> non_neg_integer().
reset(Server) -> gen_server:call(Server, reset, infinity).

%% @private
-spec init(non_neg_integer()) -> {ok, non_neg_integer()}.
init(N) -> {ok, N}.

%% @private
-spec handle_call({add, integer()} | reset, gen_server:from(), non_neg_integer()) ->
          {reply, ok | non_neg_integer(), non_neg_integer()}.
handle_call({add, _}, _From, N) -> {reply, ok, N + 1};
handle_call(reset, _From, N) -> {reply, N, 0}.

%% @private
-spec handle_cast(term(), non_neg_integer()) -> {noreply, non_neg_integer()}.
handle_cast(_Msg, N) -> {noreply, N}.
