%%% @doc Progress of long runs on stderr: one line rewritten in place on a
%%% terminal; in a log (not a terminal) a plain line at most once a second,
%%% so logs stay readable. The state (what is shown, when, how many steps)
%%% is owned by a small process, so any process of a run may report.
-module(beamlab_runtime_progress).

-export([start/0, show/2, next/1, stop/1, stderr_is_terminal/0]).

-opaque progress() :: pid().
-export_type([progress/0]).

-record(st, {terminal :: boolean(), shown = false :: boolean(),
             at = undefined :: undefined | integer(), steps = 0 :: non_neg_integer()}).

%% @doc Starts a progress line (nothing is shown yet).
-spec start() -> progress().
start() ->
    St = #st{terminal = stderr_is_terminal()},
    spawn_link(fun() -> loop(St) end).

%% @doc Shows `Text' (one line, no newline) as the current progress.
-spec show(progress(), unicode:chardata()) -> ok.
show(P, Text) ->
    P ! {show, unicode:characters_to_binary(Text)},
    ok.

%% @doc Counts a step and returns its number (1, 2, ...).
-spec next(progress()) -> pos_integer().
next(P) ->
    call(P, next).

%% @doc Removes the in-place line, if one is shown, and stops.
-spec stop(progress()) -> ok.
stop(P) ->
    call(P, stop).

%% @doc Whether stderr is a terminal. Linux tells through /proc which file
%% it is; elsewhere assume a log file (plain lines are safe everywhere).
-spec stderr_is_terminal() -> boolean().
stderr_is_terminal() ->
    case file:read_link("/proc/self/fd/2") of
        {ok, "/dev/pts/" ++ _} -> true;
        {ok, "/dev/tty" ++ _} -> true;
        _ -> false
    end.

call(P, Request) ->
    Ref = monitor(process, P),
    P ! {Request, self(), Ref},
    receive
        {Ref, Reply} -> demonitor(Ref, [flush]), Reply;
        {'DOWN', Ref, process, P, Reason} -> exit(Reason)
    end.

loop(St) ->
    receive
        {show, Text} -> loop(shown(Text, St));
        {next, From, Ref} ->
            N = St#st.steps + 1,
            From ! {Ref, N},
            loop(St#st{steps = N});
        {stop, From, Ref} ->
            St#st.shown andalso io:put_chars(standard_error, "\r\e[K"),
            From ! {Ref, ok}
    end.

shown(Text, St = #st{terminal = true}) ->
    io:format(standard_error, "\r\e[K~ts", [Text]),
    St#st{shown = true};
shown(Text, St = #st{at = Last}) ->
    Now = erlang:monotonic_time(millisecond),
    case is_integer(Last) andalso Now - Last < 1000 of
        true -> St;
        false ->
            io:format(standard_error, "beamlab: ~ts~n", [Text]),
            St#st{at = Now}
    end.
