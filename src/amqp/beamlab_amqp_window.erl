%%% @doc A producer's confirm window (#33): the stamps of the publishes
%%% not yet confirmed, by sequence number, kept as runs of consecutive
%%% numbers that share one stamp. The messages of one timer tick go out
%%% stamped alike (`beamlab_amqp_rate:stamp/3'), so a burst is one run,
%%% and a confirm settles whole runs: a publish adds a few words where a
%%% map of the window rebuilt a path of its nodes, twice per message
%%% (insert and take), and the latencies of a run are recorded as one
%%% value and its count.
%%%
%%% Sequence numbers are added in increasing order (the channel's
%%% publishes); confirms may come in any order, for one number or for
%%% every number up to one (`multiple'), and a number not in the window
%%% (confirmed already) is ignored.
-module(beamlab_amqp_window).

-export([new/0, size/1, add/3, add_runs/3, take/2, take_upto/2]).

-export_type([window/0]).

%% Runs {First, Last, Stamp}: oldest first in the front list, newest
%% first in the rear list (a queue), and the numbers they hold.
-record(window, {n = 0 :: non_neg_integer(),
                 front = [] :: [run()],
                 rear = [] :: [run()]}).

-type run() :: {pos_integer(), pos_integer(), integer()}.
-opaque window() :: #window{}.

%% @doc An empty window.
-spec new() -> window().
new() ->
    #window{}.

%% @doc The sequence numbers in the window.
-spec size(window()) -> non_neg_integer().
size(#window{n = N}) ->
    N.

%% @doc Adds publish `Seq', stamped `Stamp', above every number in the
%% window: it extends the newest run if it follows that run with the
%% same stamp.
-spec add(window(), pos_integer(), integer()) -> window().
add(#window{n = N, rear = [{First, Last, Stamp} | Rest]} = W, Seq, Stamp) when Seq =:= Last + 1 ->
    W#window{n = N + 1, rear = [{First, Seq, Stamp} | Rest]};
add(#window{n = N, rear = Rear} = W, Seq, Stamp) when is_integer(Seq), Seq > 0 ->
    W#window{n = N + 1, rear = [{Seq, Seq, Stamp} | Rear]}.

%% @doc Adds publishes `Seq', `Seq + 1', ... above every number in the
%% window, stamped as `Runs' says (`{Stamp, Count}', oldest first: a
%% burst's, beamlab_amqp_rate:take/4): `{Next, Window1}', `Next' the
%% number after the last. The window is updated once per burst, a run
%% added per stamp, where add/3 per message copied it each time (#33).
-spec add_runs(window(), pos_integer(), [{integer(), pos_integer()}]) -> {pos_integer(), window()}.
add_runs(W, Seq, []) ->
    {Seq, W};
add_runs(#window{n = N, rear = Rear} = W, Seq, Runs) when is_integer(Seq), Seq > 0 ->
    add_runs(Runs, Seq, N, Rear, W).

add_runs([{Stamp, C} | Runs], Seq, N, [{First, Last, Stamp} | Rest], W) when Seq =:= Last + 1 ->
    add_runs(Runs, Seq + C, N + C, [{First, Seq + C - 1, Stamp} | Rest], W);
add_runs([{Stamp, C} | Runs], Seq, N, Rear, W) when is_integer(C), C > 0 ->
    add_runs(Runs, Seq + C, N + C, [{Seq, Seq + C - 1, Stamp} | Rear], W);
add_runs([], Seq, N, Rear, W) ->
    {Seq, W#window{n = N, rear = Rear}}.

%% @doc Takes publish `Seq' out of the window: `{Stamp, Window1}', or
%% `error' if it is not there.
-spec take(window(), pos_integer()) -> {integer(), window()} | error.
take(#window{front = [], rear = []}, _Seq) ->
    error;
take(#window{front = [], rear = Rear} = W, Seq) ->
    take(W#window{front = lists:reverse(Rear), rear = []}, Seq);
take(#window{n = N, front = [{Seq, Seq, Stamp} | Rest]} = W, Seq) ->
    %% In order, the usual case: the oldest run starts with it.
    {Stamp, W#window{n = N - 1, front = Rest}};
take(#window{n = N, front = [{Seq, Last, Stamp} | Rest]} = W, Seq) ->
    {Stamp, W#window{n = N - 1, front = [{Seq + 1, Last, Stamp} | Rest]}};
take(#window{n = N, front = Front, rear = Rear}, Seq) ->
    case cut(Front ++ lists:reverse(Rear), Seq, []) of
        {Stamp, Runs} -> {Stamp, #window{n = N - 1, front = Runs}};
        error -> error
    end.

%% The runs without `Seq' (a run holding it split around it), and its stamp.
cut([{First, Last, Stamp} | Rest], Seq, Acc) when First =< Seq, Seq =< Last ->
    Before = [{First, Seq - 1, Stamp} || First < Seq],
    After = [{Seq + 1, Last, Stamp} || Seq < Last],
    {Stamp, lists:reverse(Acc, Before ++ After ++ Rest)};
cut([{First, _, _} = Run | Rest], Seq, Acc) when First < Seq ->
    cut(Rest, Seq, [Run | Acc]);
cut(_Runs, _Seq, _Acc) ->
    error.

%% @doc Takes every publish up to `Seq' out of the window (a `multiple'
%% confirm): `{Settled, Window1}', with `Settled' the stamps and how many
%% publishes had each, oldest run last.
-spec take_upto(window(), pos_integer()) -> {[{integer(), pos_integer()}], window()}.
take_upto(W, Seq) ->
    take_upto(W, Seq, []).

take_upto(#window{front = [], rear = []} = W, _Seq, Acc) ->
    {Acc, W};
take_upto(#window{front = [], rear = Rear} = W, Seq, Acc) ->
    take_upto(W#window{front = lists:reverse(Rear), rear = []}, Seq, Acc);
take_upto(#window{n = N, front = [{First, Last, Stamp} | Rest]} = W, Seq, Acc) when Last =< Seq ->
    K = Last - First + 1,
    take_upto(W#window{n = N - K, front = Rest}, Seq, [{Stamp, K} | Acc]);
take_upto(#window{n = N, front = [{First, Last, Stamp} | Rest]} = W, Seq, Acc) when First =< Seq ->
    K = Seq - First + 1,
    {[{Stamp, K} | Acc], W#window{n = N - K, front = [{Seq + 1, Last, Stamp} | Rest]}};
take_upto(W, _Seq, Acc) ->
    {Acc, W}.
