#!/usr/bin/env escript
%%% A minimal reproducer (for an upstream report) of a crash of the VM seen
%%% by `beamlab profile --node N --process P' (#36): switching `call_time'
%%% and `call_memory' patterns on and off together, repeatedly, on the
%%% modules of a busy gen_server that has the `call' trace flag, crashed
%%% OTP 27.3.4.1's VM with a segmentation fault. No beamlab code: OTP only.
%%%
%%% Run with the release to test (the VM running the escript is the one
%%% traced; a crash ends it):
%%%   /opt/beamlab-otp/27/bin/escript scripts/repro/call_memory_toggle.escript [both|time|memory] [classic|session] [ROUNDS]
%%% Defaults: both, classic, 300 (call_memory needs OTP 26 or later).
%%% Expected: "survived N rounds" and exit 0.
%%% Seen on 27.3.4.1 with `both': the VM died (exit status 139, SIGSEGV)
%%% before the end; `time' or `memory' alone survived.
-mode(compile).
-behaviour(gen_server).
-export([init/1, handle_call/3, handle_cast/2]).

main(Args) ->
    {Which, How, Rounds} = args(Args, {both, classic, 300}),
    io:format("OTP ~s (erts ~s), ~b schedulers: ~p patterns, ~p tracing, ~b rounds~n",
              [erlang:system_info(otp_release), erlang:system_info(version),
               erlang:system_info(schedulers_online), Which, How, Rounds]),
    {ok, Server} = gen_server:start(?MODULE, [], []),
    _Client = spawn(fun() -> client(Server) end),
    Pats = case Which of
               both -> [call_time, call_memory];
               time -> [call_time];
               memory -> [call_memory]
           end,
    Specs = [{M, '_', '_'} || M <- [?MODULE, gen_server, proc_lib, lists]],
    {TraceP, TraceF, Info} = tracing(How),
    1 = TraceP(Server, true, [call]),
    lists:foreach(
      fun(N) ->
              [TraceF(S, true, [P]) || P <- Pats, S <- Specs],
              receive after 5 -> ok end,
              [TraceF(S, pause, [P]) || P <- Pats, S <- Specs],
              %% the counters read, as a profiler does
              _ = [Info({M, F, A}, P) || P <- Pats, {M, _, _} <- Specs,
                                         {F, A} <- M:module_info(functions)],
              [TraceF(S, false, [P]) || P <- Pats, S <- Specs],
              case N rem 50 of 0 -> io:format("~b rounds~n", [N]); _ -> ok end
      end, lists:seq(1, Rounds)),
    io:format("survived ~b rounds~n", [Rounds]).

args([], Acc) -> Acc;
args([W | Rest], {_, H, R}) when W =:= "both"; W =:= "time"; W =:= "memory" ->
    args(Rest, {list_to_atom(W), H, R});
args([H | Rest], {W, _, R}) when H =:= "classic"; H =:= "session" ->
    args(Rest, {W, list_to_atom(H), R});
args([R | Rest], {W, H, _}) ->
    args(Rest, {W, H, list_to_integer(R)}).

%% Classic tracing (erlang:trace/3, trace_pattern/3, trace_info/2) or an
%% OTP 27 trace session of this process.
tracing(classic) ->
    {fun erlang:trace/3, fun erlang:trace_pattern/3, fun erlang:trace_info/2};
tracing(session) ->
    S = trace:session_create(repro, self(), []),
    {fun(P, On, Fl) -> trace:process(S, P, On, Fl) end,
     fun(Spec, On, Fl) -> trace:function(S, Spec, On, Fl) end,
     fun(X, Item) -> trace:info(S, X, Item) end}.

client(Server) ->
    _ = gen_server:call(Server, work, infinity),
    client(Server).

init([]) -> {ok, #{}}.

handle_call(work, _From, T) ->
    Items = [{(I * 7919) rem 1000, I} || I <- lists:seq(1, 20)],
    Sorted = lists:sort(fun({A, _}, {B, _}) -> A =< B end, Items),
    Sum = lists:foldl(fun({W, K}, Acc) -> Acc + W * K end, 0, Sorted),
    {reply, Sum, maps:put(Sum rem 256, Sum, T)}.

handle_cast(_, T) -> {noreply, T}.
