%%% @doc Where OTP's log events go. By default the `default' logger handler
%%% writes to standard output, so a benchmarked runner that makes OTP log
%%% (a crash report, a message to a system process, `logger:error/1' in a
%%% loop) would mix log lines into beamlab's tables and JSON. The command
%%% line and every fresh VM beamlab starts send them to standard error
%%% instead, with a burst limit so a runner logging in a loop cannot flood
%%% the terminal.
-module(beamlab_runtime_logs).

-export([to_stderr/0, drop_peer_crash/2, drop_stdout_closed/2]).

%% At most this many events a second reach the terminal; the rest are
%% dropped (logger_std_h says how many).
-define(BURST, 20).
-define(DEPTH, 12).
-define(CHARS, 300).

%% @doc Replaces the `default' handler by one writing to standard error
%% (same formatter, same level). Idempotent; `ok' also when logger is not
%% running.
-spec to_stderr() -> ok.
to_stderr() ->
    case logger:get_handler_config(default) of
        {ok, #{module := logger_std_h, config := #{type := standard_error}}} ->
            ok;
        {ok, Old} ->
            New = maps:with([level, filter_default, filters, formatter], Old),
            _ = logger:remove_handler(default),
            add(New);
        {error, _} ->
            add(#{})
    end.

add(Base) ->
    Config = #{type => standard_error, burst_limit_enable => true,
               burst_limit_max_count => ?BURST, burst_limit_window_time => 1000},
    %% A report can hold huge terms (a crash while loading code carries the
    %% whole .beam): each event is cut to a few lines.
    Formatter = {logger_formatter, #{depth => ?DEPTH, chars_limit => ?CHARS, max_size => ?CHARS}},
    Filters = [{beamlab_peer_crash, {fun ?MODULE:drop_peer_crash/2, []}},
               {beamlab_stdout_closed, {fun ?MODULE:drop_stdout_closed/2, []}} | maps:get(filters, Base, [])],
    case logger:add_handler(default, logger_std_h, Base#{config => Config, formatter => Formatter,
                                                          filters => Filters}) of
        ok -> ok;
        {error, {already_exist, _}} -> ok;
        {error, _} -> ok
    end.

%% @doc Drops the crash of OTP's `peer' connection process when a fresh VM
%% dies while it is being set up: beamlab reports that failure itself, in
%% one line naming the job.
-spec drop_peer_crash(logger:log_event(), term()) -> logger:filter_return().
drop_peer_crash(#{msg := {report, #{label := {gen_server, terminate},
                                    last_message := {call, code, _, _}}}}, _) ->
    stop;
drop_peer_crash(#{msg := {report, #{label := {proc_lib, crash}, report := [Info | _]}}} = Event, _)
  when is_list(Info) ->
    case lists:keyfind(initial_call, 1, Info) of
        {initial_call, {peer, init, _}} -> stop;
        _ -> Event
    end;
drop_peer_crash(Event, _) ->
    Event.

%% @doc Drops the reports of OTP's standard output server ending with
%% `epipe' (stdout closed early: `beamlab ... | head -1'): its supervisor,
%% its bridge and `kernel_sup' each log the exit. beamlab carries on
%% without standard output (what it writes there is dropped, the save is
%% kept), so these are noise, not errors.
-spec drop_stdout_closed(logger:log_event(), term()) -> logger:filter_return().
drop_stdout_closed(#{msg := {report, #{label := {supervisor, _}, report := R}}} = Event, _) when is_list(R) ->
    epipe_or(proplists:get_value(reason, R), Event);
drop_stdout_closed(#{msg := {report, #{label := {gen_server, terminate}, reason := Reason}}} = Event, _) ->
    epipe_or(Reason, Event);
drop_stdout_closed(#{msg := {report, #{label := {proc_lib, crash}, report := [Info | _]}}} = Event, _)
  when is_list(Info) ->
    case lists:keyfind(error_info, 1, Info) of
        {error_info, {_, Reason, _}} -> epipe_or(Reason, Event);
        _ -> Event
    end;
drop_stdout_closed(Event, _) ->
    Event.

epipe_or(epipe, _Event) -> stop;
epipe_or(_, Event) -> Event.
