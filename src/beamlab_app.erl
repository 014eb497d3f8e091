%%% @doc Application callback: starts beamlab's top supervisor. The escript
%%% does not need the application running; embedding users (a shell, a
%%% production node) get a supervisor to hang long-lived jobs under.
-module(beamlab_app).
-behaviour(application).

-export([start/2, stop/1]).

%% @private
-spec start(application:start_type(), term()) -> {ok, pid()} | {error, term()}.
start(_Type, _Args) ->
    beamlab_sup:start_link().

%% @private
-spec stop(term()) -> ok.
stop(_State) ->
    ok.
