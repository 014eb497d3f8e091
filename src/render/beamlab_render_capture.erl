%%% @doc The text of a capture document (`beamlab profile --node N
%%% --process P'): what ran and how it stopped, each process's state
%%% before and after and its reduction rate untraced against captured,
%%% the call table (calls, own time and words from the VM's counters, the
%%% shares of the stack samples) and what the capture cost the node. Pure.
-module(beamlab_render_capture).

-export([render/2]).

%% @doc The text; `top' rows of the call table (default 25).
-spec render(beamlab_result:result(), #{top => pos_integer(), atom() => term()}) -> unicode:chardata().
render(#{extra := #{<<"capture">> := C}} = Doc, Opts) ->
    Top = maps:get(top, Opts, 25),
    Get = fun(K) -> maps:get(K, C, null) end,
    Procs = case Get(<<"processes">>) of L when is_list(L) -> L; _ -> [] end,
    Calls = case Get(<<"calls">>) of L2 when is_list(L2) -> L2; _ -> [] end,
    Bounds = maps:get(<<"bounds">>, C, #{}),
    [io_lib:format("capture of ~ts on ~ts: ~ts, ~b stack samples (~ts), ~ts~n",
                   [lists:join(", ", [maps:get(<<"label">>, P, <<"?">>) || P <- Procs]), Get(<<"node">>),
                    beamlab_format_units:duration(num(Get(<<"elapsed_ms">>)), ms), num(Get(<<"samples">>)),
                    stacks_what(Get(<<"stacks_mode">>), maps:get(<<"sample_ms">>, Bounds, 1)),
                    calls_what(Get(<<"calls_mode">>))]),
     io_lib:format("tracing: ~ts~n", [Get(<<"tracing">>)]),
     sampled(Get(<<"sampled">>)),
     followed(Get(<<"followed_modules">>), Get(<<"followed_bound_reached">>), maps:get(<<"max_followed">>, Bounds, null)),
     io_lib:format("stopped: ~ts~n", [stopped(Get(<<"stopped">>), C)]),
     "\n",
     processes(Procs),
     "\n",
     case {Calls, Get(<<"calls_mode">>)} of
         {[], <<"none">>} -> functions(maps:get(<<"profile">>, maps:get(extra, Doc), #{}), Top);
         {[], _} -> "no calls counted\n";
         _ -> table(Calls, Top, Get(<<"memory_measured">>) =:= true)
     end,
     "\n",
     cost(maps:get(<<"cost">>, C, #{}), Get(<<"trace_messages">>))].

num(N) when is_number(N) -> N;
num(_) -> 0.

stacks_what(<<"trace">>, _) -> "stacks from call and return trace messages";
stacks_what(_, Ms) -> io_lib:format("process_info stacks every ~b ms, on CPU only", [Ms]).

calls_what(<<"none">>) -> "no call counters";
calls_what(_) -> "calls and own time counted by the VM (call_time)".

%% A duty-cycled capture says so, with how much of the time it counted.
sampled(#{<<"on_fraction">> := F} = S) ->
    io_lib:format("sampled: patterns on ~ts of the time (~b windows of ~ts every ~ts; on-time known within ~ts), "
                  "counts and times scaled to the whole capture (as if counted all along, at the counted speed: not the "
                  "untraced call rate)~n",
                  [beamlab_format_units:percent(num(F)), num(maps:get(<<"windows">>, S, 0)),
                   beamlab_format_units:duration(num(maps:get(<<"on_ms">>, S, 0)), ms),
                   beamlab_format_units:duration(num(maps:get(<<"period_ms">>, S, 0)), ms),
                   beamlab_format_units:percent(num(maps:get(<<"on_fraction_error">>, S, 0)))]);
sampled(_) -> "".

%% Modules first seen on the sampled stacks and patterned from then on.
followed(Mods, Full, Max) when is_list(Mods), (Mods =/= [] orelse Full =:= true) ->
    io_lib:format("modules followed (first seen on the stacks, patterned from then on~ts): ~ts~n",
                  [case Full of
                       true -> io_lib:format("; the bound of ~p was reached, later ones uncounted", [Max]);
                       _ -> ""
                   end,
                   case Mods of [] -> "none"; _ -> lists:join(", ", Mods) end]);
followed(_, _, _) -> "".

stopped(<<"stopped">>, _) -> "at the end of its duration";
stopped(<<"interrupted">>, _) -> "interrupted (what was captured until then is kept)";
stopped(<<"exited">>, C) ->
    io_lib:format("the captured processes exited (~ts)", [lists:join(", ", maps:get(<<"exited">>, C, []))]);
stopped(<<"rate_bound">>, C) ->
    io_lib:format("at its rate bound: more than ~b trace messages in one second (--max-rate); "
                  "every flag and pattern removed", [maps:get(<<"max_rate">>, maps:get(<<"bounds">>, C, #{}), 0)]);
stopped(<<"total_bound">>, C) ->
    io_lib:format("at its bound of ~b trace messages and samples (--max-total); every flag and pattern removed",
                  [maps:get(<<"max_total">>, maps:get(<<"bounds">>, C, #{}), 0)]);
stopped(<<"node_down">>, _) -> "the node went down";
stopped(<<"no_answer">>, _) -> "the node did not answer the stop in time (its tracer ends by its own deadline)";
stopped(Other, _) -> io_lib:format("~ts", [Other]).

processes(Procs) ->
    Rows = lists:append(
             [[[Label, "before" | state(maps:get(<<"before">>, P, null))],
               ["", "after" | state(maps:get(<<"after">>, P, null))]]
              || P <- Procs, Label <- [maps:get(<<"label">>, P, <<"?">>)]]),
    Rates = [io_lib:format("~ts: ~ts reductions/s untraced, ~ts captured~ts~n",
                           [maps:get(<<"label">>, P, <<"?">>), rate(U), rate(Cd), ratio(Cd, U)])
             || P <- Procs,
                U <- [maps:get(<<"reductions_per_s_untraced">>, P, null)],
                Cd <- [maps:get(<<"reductions_per_s_captured">>, P, null)]],
    [beamlab_format_table:render(["process", "", "status", "mailbox", "heap words", "memory", "reductions",
                                  "current function"], Rows,
                                 #{align => [left, left, left, right, right, right, right, left]}),
     Rates].

state(#{} = S) ->
    G = fun(K) -> maps:get(K, S, null) end,
    [text(G(<<"status">>)), numtext(G(<<"message_queue_len">>)), numtext(G(<<"total_heap_size">>)),
     case G(<<"memory">>) of M when is_integer(M) -> beamlab_format_units:bytes(M); _ -> "-" end,
     numtext(G(<<"reductions">>)), text(G(<<"current_function">>))];
state(_) ->
    ["exited", "-", "-", "-", "-", "-"].

text(null) -> "-";
text(B) -> B.

numtext(N) when is_integer(N) -> integer_to_list(N);
numtext(_) -> "-".

rate(N) when is_number(N) -> beamlab_format_units:count(N);
rate(_) -> "-".

ratio(C, U) when is_number(C), is_number(U), U > 0 ->
    io_lib:format(" (~ts of untraced)", [beamlab_format_units:sig(C / U, 3)]);
ratio(_, _) -> "".

table(Calls, Top, Memory) ->
    Rows = [[integer_to_list(I), maps:get(<<"function">>, R), numtext(maps:get(<<"calls">>, R, null)),
             beamlab_format_units:duration(num(maps:get(<<"own_us">>, R, 0)), us),
             beamlab_format_units:percent(num(maps:get(<<"own_share">>, R, 0))),
             beamlab_format_units:percent(num(maps:get(<<"self_samples">>, R, 0))),
             beamlab_format_units:percent(num(maps:get(<<"total_samples">>, R, 0)))]
            ++ [numtext(maps:get(<<"memory_words">>, R, null)) || Memory]
            || {I, R} <- lists:zip(lists:seq(1, min(Top, length(Calls))), lists:sublist(Calls, Top))],
    beamlab_format_table:render(["#", "function", "calls", "own time", "own", "self samples", "total samples"]
                                ++ ["words" || Memory], Rows).

%% Without counters: the stack samples' table.
functions(P, Top) ->
    N = max(1, maps:get(<<"samples">>, P, 0)),
    Fs = lists:sublist(maps:get(<<"functions">>, P, []), Top),
    Rows = [[integer_to_list(I), maps:get(<<"name">>, F),
             beamlab_format_units:percent(maps:get(<<"self">>, F, 0) / N),
             beamlab_format_units:percent(maps:get(<<"total">>, F, 0) / N), maps:get(<<"self">>, F, 0)]
            || {I, F} <- lists:zip(lists:seq(1, length(Fs)), Fs)],
    beamlab_format_table:render(["#", "function", "self", "total", "samples"], Rows).

cost(Cost, Msgs) ->
    G = fun(K) -> maps:get(K, Cost, null) end,
    Bytes = fun(null) -> "-"; (B) -> beamlab_format_units:bytes(B) end,
    io_lib:format("cost on the node: the tracer ran ~ts reductions (~ts trace messages), its memory peaked at ~ts; "
                  "node memory ~ts before, ~ts after; reading the counters took ~b ms~n",
                  [rate(G(<<"agent_reductions">>)), rate(Msgs), Bytes(G(<<"agent_memory_peak">>)),
                   Bytes(G(<<"node_memory_before">>)), Bytes(G(<<"node_memory_after">>)),
                   num(G(<<"read_ms">>))]).
