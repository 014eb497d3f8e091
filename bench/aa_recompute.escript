#!/usr/bin/env escript
%%! -pa _build/default/lib/beamlab/ebin
%%% bench/aa_recompute.sh in one VM: the same `beamlab compare' command
%%% lines on the documents `KEEP=DIR bench/aa.sh' kept, run through
%%% beamlab_cli:run_command/1 (what ./beamlab runs), without starting a
%%% VM per comparison (on a loaded 2-core machine the shell version takes
%%% about half an hour for 85 iterations). Usage, from the repository root
%%% after `make' (or `rebar3 compile'):
%%%
%%%   bench/aa_recompute.escript KEEP_DIR [odd|even|all] [COMPARE OPTIONS...]
%%%
%%% Prints one line per cell that has documents, wall-clock time's
%%% (SCENARIO-Z) and CPU time's (SCENARIO-cpu-Z, kept by `METRIC=cpu' or
%%% "time cpu"): the counts of every verdict (A/A cells: false = faster +
%%% slower; planted cells: caught = slower). Asserts nothing.
-mode(compile).

main([Dir | Rest]) ->
    {Half, Opts} = case Rest of
                       [H | O] when H =:= "odd"; H =:= "even"; H =:= "all" -> {H, O};
                       O -> {"all", O}
                   end,
    Keep = fun(I) -> Half =:= "all" orelse (I rem 2 =:= 1) =:= (Half =:= "odd") end,
    io:format("== ~s (~s iterations), compare ~s~n", [Dir, Half, string:join(Opts, " ")]),
    [cell(Name, [{I, V} || {I, Args} <- Cmds, Keep(I), V <- [verdict(Args ++ Opts)]])
     || {Name, Cmds} <- cells(Dir)],
    ok;
main(_) ->
    io:format(standard_error, "usage: bench/aa_recompute.escript KEEP_DIR [odd|even|all] [OPTIONS...]~n", []),
    halt(2).

%% The cells of every measure kept: wall-clock time (SCENARIO-Z) and CPU
%% time (SCENARIO-cpu-Z, `METRIC=cpu' or "time cpu"); a cell without
%% documents is left out.
cells(Dir) ->
    Runs = filename:join(Dir, "runs"),
    [Cell || T <- ["", "-cpu"],
             {_, [_ | _]} = Cell
                 <- [{"compare" ++ T ++ "-" ++ Z,
                      [{I, ["compare", filename:join(S, "a.json"), filename:join(S, "b-" ++ Z ++ ".json")]}
                       || {I, S} <- iterations(Runs, "compare" ++ T ++ "-" ++ Z ++ "-", "")]}
                     || Z <- ["0", "5", "20"]]
                 ++ [{"history" ++ T ++ "-" ++ Z,
                      [{I, ["compare", S]} || {I, S} <- iterations(Runs, "history" ++ T ++ "-" ++ Z ++ "-", "")]}
                     || Z <- ["0", "5", "20"]]
                 ++ [{"matrix" ++ T ++ "-0",
                      [{I, ["compare", S]} || {I, S} <- iterations(Runs, "matrix" ++ T ++ "-0-", ".json")]}]].

iterations(Runs, Prefix, Suffix) ->
    lists:sort([{I, P} || P <- filelib:wildcard(filename:join(Runs, Prefix ++ "*" ++ Suffix)),
                          N <- [lists:nthtail(length(Prefix), filename:basename(P, Suffix))],
                          {I, []} <- [string:to_integer(N)]]).

%% The verdict of the last row of `beamlab compare ... --format csv' (a
%% history: its newest run; a matrix: its second configuration).
verdict(Args) ->
    Out = capture(fun() -> beamlab_cli:run_command(Args ++ ["--format", "csv"]) end),
    Lines = [L || L <- string:split(Out, "\n", all), string:trim(L) =/= ""],
    lists:last(string:split(string:trim(lists:last(Lines)), ",", all)).

cell(Name, Vs) ->
    Counts = lists:foldl(fun({_, V}, M) -> maps:update_with(V, fun(C) -> C + 1 end, 1, M) end, #{}, Vs),
    N = length(Vs),
    Head = case lists:suffix("-0", Name) of
               true -> io_lib:format("~b false of ~b", [maps:get("faster", Counts, 0) + maps:get("slower", Counts, 0), N]);
               false -> io_lib:format("caught ~b of ~b", [maps:get("slower", Counts, 0), N])
           end,
    io:format("~-15s ~s; ~s~n", [Name, Head, lists:join(", ", [io_lib:format("~b ~s", [C, V])
                                                               || {V, C} <- lists:sort(maps:to_list(Counts))])]).

%% Everything the command prints to standard output, as a string.
capture(Fun) ->
    Self = self(),
    Io = spawn_link(fun() -> io_server(Self, []) end),
    Old = group_leader(),
    group_leader(Io, self()),
    try Fun()
    after group_leader(Old, self())
    end,
    Io ! {done, Self},
    receive {captured, Text} -> Text end.

io_server(Owner, Acc) ->
    receive
        {io_request, From, Ref, Req} ->
            {Reply, Acc1} = request(Req, Acc),
            From ! {io_reply, Ref, Reply},
            io_server(Owner, Acc1);
        {done, Owner} ->
            Owner ! {captured, unicode:characters_to_list(lists:reverse(Acc))}
    end.

request({put_chars, Enc, Chars}, Acc) -> {ok, [unicode:characters_to_binary(Chars, Enc) | Acc]};
request({put_chars, Chars}, Acc) -> {ok, [unicode:characters_to_binary(Chars) | Acc]};
request({put_chars, Enc, M, F, A}, Acc) -> request({put_chars, Enc, apply(M, F, A)}, Acc);
request({requests, Rs}, Acc) ->
    lists:foldl(fun(R, {_, A}) -> request(R, A) end, {ok, Acc}, Rs);
request({get_geometry, _}, Acc) -> {{error, enotsup}, Acc};
request(getopts, Acc) -> {[{binary, false}, {encoding, unicode}], Acc};
request(_, Acc) -> {{error, request}, Acc}.
