%%% @doc What a feature publishes for its live metrics (`--metrics-port'):
%%% named values in a table the publisher owns and rewrites once per
%%% interval, and a collector for `beamlab_runtime_metrics' that renders
%%% them at scrape time. A scrape reads the table only: it never waits for
%%% the publisher, and nothing is copied per event.
-module(beamlab_runtime_metrics_board).

-export([new/2, get/2, set/2, collector/1, serve/3, withdraw/3, delete/1]).

-opaque board() :: {ets:tid(), render()}.
%% Turns the values, read at scrape time, into families.
-type render() :: fun((values()) -> [beamlab_runtime_metrics:family()]).
-type values() :: #{atom() => term()}.
-export_type([board/0, render/0, values/0]).

%% @doc A board holding `Values' at first, owned by the calling process
%% (only it may {@link set/2}).
-spec new(values(), render()) -> board().
new(Values, Render) when is_map(Values), is_function(Render, 1) ->
    T = ets:new(?MODULE, [protected, set, {read_concurrency, true}]),
    true = ets:insert(T, maps:to_list(Values)),
    {T, Render}.

%% @doc The value of `Key'.
-spec get(board(), atom()) -> term().
get({T, _}, Key) ->
    ets:lookup_element(T, Key, 2).

%% @doc Replaces the values of the keys in `Values' (one write: a scrape
%% sees all of them or none).
-spec set(board(), values()) -> ok.
set({T, _}, Values) ->
    true = ets:insert(T, maps:to_list(Values)),
    ok.

%% @doc The collector that renders the board's values.
-spec collector(board()) -> beamlab_runtime_metrics:collector().
collector({T, Render}) ->
    fun() -> Render(maps:from_list(ets:tab2list(T))) end.

%% @doc Serves the board on `Server' as the collector `Name'.
-spec serve(beamlab_runtime_metrics:server(), atom(), board()) -> ok.
serve(Server, Name, Board) ->
    beamlab_runtime_metrics:register(Server, Name, collector(Board)).

%% @doc Stops serving the board (a server already gone is fine) and
%% forgets it.
-spec withdraw(beamlab_runtime_metrics:server(), atom(), board()) -> ok.
withdraw(Server, Name, Board) ->
    _ = catch beamlab_runtime_metrics:unregister(Server, Name),
    delete(Board).

%% @doc Forgets the board (scrapes after it see nothing from it: the
%% collector fails and is left out).
-spec delete(board()) -> ok.
delete({T, _}) ->
    true = ets:delete(T),
    ok.
