%%% @doc Progress of long runs on stderr: one line rewritten in place on a
%%% terminal; in a log (not a terminal) a plain line at most once a second,
%%% so logs stay readable. `clear/0' removes the in-place line before the
%%% results are printed. State lives in the calling process.
-module(beamlab_runtime_progress).

-export([show/1, clear/0, stderr_is_terminal/0]).

-define(SHOWN, {?MODULE, shown}).
-define(AT, {?MODULE, at}).

%% @doc Shows `Text' (one line, no newline) as the current progress.
-spec show(unicode:chardata()) -> ok.
show(Text) ->
    case stderr_is_terminal() of
        true ->
            put(?SHOWN, true),
            io:format(standard_error, "\r\e[K~ts", [Text]);
        false ->
            Now = erlang:monotonic_time(millisecond),
            case get(?AT) of
                Last when is_integer(Last), Now - Last < 1000 -> ok;
                _ ->
                    put(?AT, Now),
                    io:format(standard_error, "beamlab: ~ts~n", [Text])
            end
    end.

%% @doc Removes the in-place line, if one is shown.
-spec clear() -> ok.
clear() ->
    erase(?AT),
    case erase(?SHOWN) of
        true -> io:put_chars(standard_error, "\r\e[K");
        _ -> ok
    end.

%% @doc Whether stderr is a terminal. Linux tells through /proc which file
%% it is; elsewhere assume a log file (plain lines are safe everywhere).
-spec stderr_is_terminal() -> boolean().
stderr_is_terminal() ->
    case file:read_link("/proc/self/fd/2") of
        {ok, "/dev/pts/" ++ _} -> true;
        {ok, "/dev/tty" ++ _} -> true;
        _ -> false
    end.
