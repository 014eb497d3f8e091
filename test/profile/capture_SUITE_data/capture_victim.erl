%% The processes capture_SUITE captures, loaded on the test's node (the
%% node's own code: beamlab loads nothing there). Each has one known
%% hottest function by own time.
-module(capture_victim).
-export([start/1, hot/0, deep/0, mailbox/0, producer/1, spin/2, d1/0, d2/0, d3/0, d4/0, d5/0, d6/0,
         leaf_loop/2, handle/1, crunch/2, client/1, serve/1, tally/2, late/0]).
-export([init/1, handle_call/3, handle_cast/2]).
-behaviour(gen_server).

%% Starts one victim, registered as capture_hot, capture_deep or
%% capture_mailbox (with its producer, capture_producer).
start(hot) ->
    register(capture_hot, spawn(?MODULE, hot, [])), ok;
start(deep) ->
    register(capture_deep, spawn(?MODULE, deep, [])), ok;
start(mailbox) ->
    Mb = spawn(?MODULE, mailbox, []),
    register(capture_mailbox, Mb),
    register(capture_producer, spawn(?MODULE, producer, [Mb])),
    ok;
start(server) ->
    {ok, _} = gen_server:start({local, capture_server}, ?MODULE, [], []),
    register(capture_client, spawn(?MODULE, client, [0])),
    ok;
start(late) ->
    register(capture_late_victim, spawn(?MODULE, late, [])), ok.

%% A hot loop: spin/2 calls itself (and nothing else) forever.
hot() -> spin(1000000, 0).

spin(0, Acc) -> spin(1000000, Acc band 16#ffff);
spin(N, Acc) -> spin(N - 1, Acc + N * 2).

%% A deep call chain d1 > d2 > ... > d6 > leaf_loop (no tail calls, so
%% each frame stays on the stack).
deep() -> _ = d1(), deep().
d1() -> 1 + d2().
d2() -> 1 + d3().
d3() -> 1 + d4().
d4() -> 1 + d5().
d5() -> 1 + d6().
d6() -> 1 + leaf_loop(20000, 0).

leaf_loop(0, Acc) -> Acc band 16#ff;
leaf_loop(N, Acc) -> leaf_loop(N - 1, Acc + N).

%% A mailbox that grows on any machine: each message costs 200000
%% iterations of crunch/2 (at most some 5000 a second even at 1 ns an
%% iteration), the producer sends 20 a millisecond.
mailbox() ->
    receive Msg -> _ = handle(Msg), mailbox() end.

handle({work, N}) -> crunch(N, 0).

crunch(0, Acc) -> Acc;
crunch(N, Acc) -> crunch(N - 1, (Acc * 31 + N) band 16#ffffff).

producer(To) ->
    [To ! {work, 200000} || _ <- lists:seq(1, 20)],
    receive after 1 -> ok end,
    producer(To).

%% A gen_server (capture_server) that a client calls in a loop: each
%% request is a short loop of tally/2, the server's hottest function by
%% own time; the rest of a request (gen_server's code, handle_call/3,
%% serve/1) is a small part of it.
client(N) ->
    _ = gen_server:call(capture_server, {serve, N}, infinity),
    client(N + 1).

init([]) -> {ok, 0}.

handle_call({serve, N}, _From, S) -> {reply, serve(N), S + 1}.

handle_cast(_, S) -> {noreply, S}.

serve(N) -> tally(300, N).

tally(0, Acc) -> Acc band 16#ffff;
tally(K, Acc) -> tally(K - 1, Acc + K).

%% A process that waits for `{go, Module}' and then runs Module:run/0
%% for ever: a module loaded after a capture of it started.
late() ->
    receive {go, M} -> M:run() end.
