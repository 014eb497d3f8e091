%%% @doc Wall-clock timestamps for result documents. Callers read the clock
%%% here and pass the values down, so the result model never reads it.
-module(beamlab_runtime_clock).

-export([rfc3339/0, rfc3339/1]).

%% @doc The current time as RFC 3339 text with milliseconds, local offset.
-spec rfc3339() -> binary().
rfc3339() ->
    rfc3339(erlang:system_time(millisecond)).

%% @doc A system time in milliseconds as RFC 3339 text.
-spec rfc3339(integer()) -> binary().
rfc3339(Ms) ->
    list_to_binary(calendar:system_time_to_rfc3339(Ms, [{unit, millisecond}])).
