%%% @doc Graceful interruption. Ctrl-C reaches the VM as SIGTERM (the
%%% escript's launcher line forwards SIGINT), and so does `kill'. After
%%% {@link install/0}, every subscribed process receives
%%% `{beamlab_interrupt, sigterm}' so a measuring loop can stop between
%%% samples and report what it measured. A second signal halts at once
%%% with exit code 130, for a user who really wants out.
%%%
%%% This module is also the `gen_event' handler installed in OTP's
%%% `erl_signal_server' in place of the default one (which would stop the
%%% VM at once).
-module(beamlab_runtime_interrupt).
-behaviour(gen_event).

-export([install/0, subscribe/0, unsubscribe/0, interrupted/0, simulate/0, exit_code/0]).
-export([init/1, handle_event/2, handle_call/2, handle_info/2, terminate/2, code_change/3]).

-define(FLAG, {?MODULE, interrupted}).

%% @doc Takes over SIGTERM handling for this VM. Idempotent.
-spec install() -> ok.
install() ->
    Handlers = gen_event:which_handlers(erl_signal_server),
    case lists:member(?MODULE, Handlers) of
        true -> ok;
        false ->
            ok = os:set_signal(sigterm, handle),
            case lists:member(erl_signal_handler, Handlers) of
                true ->
                    ok = gen_event:swap_handler(erl_signal_server, {erl_signal_handler, []},
                                                {?MODULE, []});
                false ->
                    ok = gen_event:add_handler(erl_signal_server, ?MODULE, [])
            end
    end.

%% @doc The calling process will receive `{beamlab_interrupt, Signal}'.
-spec subscribe() -> ok.
subscribe() ->
    call({subscribe, self()}).

%% @doc Stops notifications to the calling process.
-spec unsubscribe() -> ok.
unsubscribe() ->
    call({unsubscribe, self()}).

%% @doc True once an interrupt arrived in this VM.
-spec interrupted() -> boolean().
interrupted() ->
    persistent_term:get(?FLAG, false).

%% @doc The exit code of a command stopped by an interrupt (as a shell
%% reports a process ended by SIGINT). What was measured is still printed
%% and saved before a command exits with it.
-spec exit_code() -> 130.
exit_code() ->
    130.

%% @doc Behaves as if SIGTERM arrived (for tests and for embedding).
-spec simulate() -> ok.
simulate() ->
    gen_event:notify(erl_signal_server, sigterm).

call(Request) ->
    case lists:member(?MODULE, gen_event:which_handlers(erl_signal_server)) of
        true -> gen_event:call(erl_signal_server, ?MODULE, Request);
        false -> ok  % not installed (API use): nobody will interrupt us
    end.

%%--------------------------------------------------------------------
%% gen_event callbacks

%% @private
-spec init(term()) -> {ok, [pid()]}.
init(_) ->
    {ok, []}.

%% @private
-spec handle_event(term(), [pid()]) -> {ok, [pid()]}.
handle_event(sigterm, Subscribers) ->
    case interrupted() of
        true ->
            io:put_chars(standard_error, "\nbeamlab: interrupted twice, stopping now\n"),
            erlang:halt(130);
        false ->
            persistent_term:put(?FLAG, true),
            _ = [Pid ! {beamlab_interrupt, sigterm} || Pid <- Subscribers],
            case Subscribers of
                [] -> erlang:halt(130);  % nothing is measuring: just stop
                _ -> ok
            end
    end,
    {ok, Subscribers};
handle_event(_Other, Subscribers) ->
    {ok, Subscribers}.

%% @private
-spec handle_call(term(), [pid()]) -> {ok, ok, [pid()]}.
handle_call({subscribe, Pid}, Subscribers) ->
    {ok, ok, [Pid | lists:delete(Pid, Subscribers)]};
handle_call({unsubscribe, Pid}, Subscribers) ->
    {ok, ok, lists:delete(Pid, Subscribers)}.

%% @private
-spec handle_info(term(), [pid()]) -> {ok, [pid()]}.
handle_info(_Info, Subscribers) ->
    {ok, Subscribers}.

%% @private
-spec terminate(term(), [pid()]) -> ok.
terminate(_Arg, _Subscribers) ->
    ok.

%% @private
-spec code_change(term(), [pid()], term()) -> {ok, [pid()]}.
code_change(_Old, Subscribers, _Extra) ->
    {ok, Subscribers}.
