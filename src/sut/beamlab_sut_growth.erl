%%% @doc Growth findings on a watched node: what keeps growing, who it is,
%%% how fast, over which interval. Fed one telemetry sample at a time
%%% ({@link step/2}, as the watch runs: a finding is raised at the sample
%%% that proves it, so it can be printed then) or a whole series
%%% ({@link findings/1}, the same fold, for the document).
%%%
%%% | finding | culprit | raised when |
%%% |---|---|---|
%%% | `mailbox_growing' | the process | its message queue (>= 1000) rose over two consecutive intervals, by >= 500 |
%%% | `process_memory_growing' | the process | its memory never fell over two intervals and rose >= 1 MiB |
%%% | `binary_growing' | who holds the most refc binary bytes | the node's binary memory rose over two intervals, >= 1 MiB |
%%% | `ets_growing' | the table and its owner | its memory rose over two intervals, >= 512 KiB |
%%% | `processes_growing' | the new processes' initial call and spawner | the process count rose over two intervals, >= 100 |
%%% | `ports_growing' | the new ports' name and owner | the port count rose over two intervals, >= 20 |
%%% | `atoms_growing' | (none can be named) | the atom count rose over two intervals, >= 500 |
%%% | `long_gc', `long_schedule' | the process (or port) | the system monitor reported it |
%%% | `busy_dist_port', `busy_port' | the port, the remote node, the suspended processes | likewise |
%%% | `system_monitor_taken' | who holds it | another process held the node's one system monitor |
%%% | `node_unresponsive' | | the node did not answer a sample in time |
%%%
%%% "Two intervals": the first sample already carries the change since the
%%% watch started, so a fault present from the start is named at the
%%% second sample. A finding that fired keeps its evidence up to date: the
%%% document's finding covers the whole rise (first to last value, rate,
%%% interval, peak) and is critical when the growth went on for five
%%% samples or more (or, for counts, went on for three and would reach the
%%% node's limit within an hour at that rate). Samples are read in their JSON form (binary keys), live or
%%% saved alike.
-module(beamlab_sut_growth).

-export([new/1, step/2, findings/1, finding/2, live_line/1, capture_command/2, with_capture_command/2]).

-type key() :: {atom(), binary()}.
-type obs() :: #{t := number(), v := number(), d := number() | null, since := number() | null, ctx := map()}.
-type track() :: [obs()].   % newest first, consecutive samples only
-type fired() :: #{key := key(), at := number(), track := track(), count => number(), max_ms => number(),
                   ctx := map()}.
-opaque state() :: #{tracks := #{key() => track()}, fired := #{key() => fired()}, order := [key()],
                     limits := map(), interval := number()}.
-export_type([state/0]).

-define(SUSTAINED, 5).   % samples of growth that make a finding critical

%% @doc A detector with nothing seen yet, for samples every `interval'
%% ms of a node with `limits' (`processes', `ports', `atoms'; as in the
%% series, JSON or not).
-spec new(#{interval := number(), limits => map()}) -> state().
new(#{interval := I} = Opts) ->
    #{tracks => #{}, fired => #{}, order => [], interval => I,
      limits => beamlab_json:canonical(maps:get(limits, Opts, #{}))}.

%% @doc Feeds one sample; returns the findings raised at it (already
%% complete for that moment) and the new state.
-spec step(map(), state()) -> {[beamlab_result:finding()], state()}.
step(Sample0, St = #{tracks := Tracks, fired := Fired}) ->
    S = beamlab_json:canonical(Sample0),
    T = num(maps:get(<<"t_ms">>, S, 0)),
    Obs = observations(S),
    Tracks1 = maps:from_list([{K, extend(O#{t => T}, maps:get(K, Tracks, []))} || {K, O} <- Obs]),
    %% A fired culprit keeps its whole track, even when it leaves the top.
    Fired1 = maps:map(fun(K, F) ->
                              case Tracks1 of
                                  #{K := Tr} -> F#{track := merge_track(Tr, maps:get(track, F)),
                                                   ctx := maps:get(ctx, hd(Tr))};
                                  _ -> F
                              end
                      end, Fired),
    New0 = [{K, #{key => K, at => T, track => Tr, ctx => maps:get(ctx, hd(Tr))}}
            || {K, Tr} <- lists:sort(maps:to_list(Tracks1)), not is_map_key(K, Fired), rises(K, Tr)],
    %% A growing mailbox grows its process's memory too: one finding.
    Mailboxes = [P || {mailbox, P} <- maps:keys(Fired) ++ [K || {K, _} <- New0]],
    New = [N || N = {{Kind, P}, _} <- New0, Kind =/= process_memory orelse not lists:member(P, Mailboxes)],
    {Events, St1} = events(S, T, St#{tracks := Tracks1, fired := maps:merge(Fired1, maps:from_list(New))}),
    St2 = St1#{order := maps:get(order, St1) ++ [K || {K, _} <- New] ++ [K || {K, _} <- Events]},
    {[finding(F, St2) || {_, F} <- New ++ Events], St2}.

%% @doc All growth findings of a recorded series (the `telemetry' section
%% of a watch document, or what the sampler returned), in the order they
%% were raised, each with its whole evidence; then the node's silences and
%% a system monitor held by another process.
-spec findings(map()) -> [beamlab_result:finding()].
findings(Series0) ->
    Series = beamlab_json:canonical(Series0),
    St0 = new(#{interval => num(maps:get(<<"interval_ms">>, Series, 0)),
                limits => maps:get(<<"limits">>, Series, #{})}),
    St = lists:foldl(fun(S, Acc) -> element(2, step(S, Acc)) end, St0, samples(Series)),
    [finding(maps:get(K, maps:get(fired, St)), St) || K <- maps:get(order, St)]
        ++ silences(Series) ++ sysmon(Series).

%% @doc A fired culprit as a finding, its evidence up to the last sample
%% seen.
-spec finding(fired(), state()) -> beamlab_result:finding().
finding(F = #{key := {Kind, _}}, St) ->
    kind(Kind, F, St).

%% @doc One line for a finding raised while watching.
-spec live_line(beamlab_result:finding()) -> iolist().
live_line(#{severity := Sev, title := Title, evidence := Ev} = F) ->
    [io_lib:format("          ! [~s] ~ts: ~ts~n", [Sev, Title, Ev]),
     case F of
         #{data := #{<<"capture_command">> := Cmd}} -> io_lib:format("            capture it: ~ts~n", [Cmd]);
         _ -> ""
     end].

%% @doc The command line that captures the calls of process `Pid' (as
%% beamlab printed it: `<8905.85.0>' or `<0.85.0>') on `Node': what a
%% finding about a process prints. The cookie is never part of it (add
%% `--cookie' when the node's is not in ~/.erlang.cookie).
-spec capture_command(binary() | string() | atom(), binary() | string()) -> binary().
capture_command(Node, Pid) ->
    Local = re:replace(Pid, "^<[0-9]+\\.", "<0.", [{return, binary}]),
    iolist_to_binary(["beamlab profile --node ", beamlab_format_units:to_binary(Node),
                      " --process '", Local, "' --duration 5"]).

%% @doc A finding about one process (a growing mailbox, a growing
%% process, long schedules or collections) with the command that captures it: `data.capture_command',
%% and the advice says it. Other findings are returned as they are.
-spec with_capture_command(node() | binary(), beamlab_result:finding()) -> beamlab_result:finding().
with_capture_command(Node, #{data := #{<<"culprit">> := <<"<", _/binary>> = Pid} = D, advice := Advice} = F) ->
    Cmd = capture_command(Node, Pid),
    F#{data := D#{<<"capture_command">> => Cmd},
       advice := <<Advice/binary, " See where its time goes: ", Cmd/binary>>};
with_capture_command(_Node, F) ->
    F.

%%--------------------------------------------------------------------
%% Observations and rules
%%--------------------------------------------------------------------

%% What one sample says about each candidate culprit: its value, its
%% change since it was last seen (or null) and some context.
observations(S) ->
    Top = case maps:get(<<"top">>, S, null) of M when is_map(M) -> M; _ -> #{} end,
    Growth = case maps:get(<<"growth">>, S, null) of G when is_map(G) -> G; _ -> #{} end,
    Memory = case maps:get(<<"memory">>, S, null) of Mm when is_map(Mm) -> Mm; _ -> #{} end,
    Proc = fun(E) -> maps:with([<<"pid">>, <<"name">>, <<"current_function">>, <<"initial_call">>, <<"memory">>], E) end,
    [{{mailbox, maps:get(<<"pid">>, E)}, obs(maps:get(<<"message_queue_len">>, E), maps:get(<<"queue_delta">>, E, null),
                                             maps:get(<<"since_ms">>, E, null), Proc(E))}
     || E <- list(<<"by_message_queue">>, Top)]
        ++ [{{process_memory, maps:get(<<"pid">>, E)}, obs(maps:get(<<"memory">>, E), maps:get(<<"memory_delta">>, E, null),
                                                           maps:get(<<"since_ms">>, E, null), Proc(E))}
            || E <- list(<<"by_memory">>, Top)]
        ++ [{{ets, maps:get(<<"id">>, E)}, obs(maps:get(<<"memory">>, E), maps:get(<<"memory_delta">>, E, null), null,
                                               maps:with([<<"id">>, <<"name">>, <<"owner">>, <<"owner_name">>, <<"size">>,
                                                          <<"type">>], E))}
            || E <- list(<<"ets_top">>, S)]
        ++ [{{binary, <<"node">>}, obs(maps:get(<<"binary">>, Memory), maps:get(<<"memory_binary">>, Growth, null), null,
                                      #{<<"holders">> => list(<<"binary_holders">>, S)})}
            || is_map_key(<<"binary">>, Memory)]
        ++ [{{Kind, <<"node">>}, obs(maps:get(Count, S), maps:get(Count, Growth, null), null,
                                    case maps:get(Extra, S, null) of X when is_map(X) -> X; _ -> #{} end)}
            || {Kind, Count, Extra} <- [{processes, <<"processes">>, <<"new_processes">>},
                                        {ports, <<"ports">>, <<"new_ports">>},
                                        {atoms, <<"atoms">>, null}],
               is_number(maps:get(Count, S, null))].

obs(V, D, Since, Ctx) ->
    #{v => num(V), d => case D of null -> null; _ -> num(D) end, since => Since, ctx => Ctx}.

list(K, M) ->
    case maps:get(K, M, null) of
        L when is_list(L) -> [E || E <- L, is_map(E)];
        _ -> []
    end.

%% A track holds the observations of consecutive samples (a culprit not
%% seen in a sample loses its track). Context read only now and then (the
%% binary holders, the new processes) stays until read again.
extend(O = #{ctx := Ctx}, [#{ctx := Old} | _] = Track) ->
    [O#{ctx := maps:merge(Old, maps:filter(fun(_, V) -> V =/= [] end, Ctx))} | Track];
extend(O, []) ->
    [O].

merge_track(New, Old) ->
    Ts = [T || #{t := T} <- Old],
    [O || O = #{t := T} <- New, not lists:member(T, Ts)] ++ Old.

%% Two consecutive rises (the last two changes), big enough to matter.
rises({Kind, _}, [#{d := D1} = A, #{d := D2} | _]) when is_number(D1), is_number(D2) ->
    {Min, Sum} = thresholds(Kind),
    Pos = case Kind of
              process_memory -> D1 >= 0 andalso D2 >= 0;
              _ -> D1 > 0 andalso D2 > 0
          end,
    Pos andalso D1 + D2 >= Sum andalso maps:get(v, A) >= Min;
rises(_, _) ->
    false.

%% {minimum value, minimum growth over the two intervals}
thresholds(mailbox) -> {1000, 500};
thresholds(process_memory) -> {0, 1048576};
thresholds(binary) -> {0, 1048576};
thresholds(ets) -> {0, 524288};
thresholds(processes) -> {0, 100};
thresholds(ports) -> {0, 20};
thresholds(atoms) -> {0, 500}.

%% The system monitor's events: each kind and culprit fires once, then
%% counts on.
events(S, T, St = #{fired := Fired}) ->
    Events = list(<<"monitor_events">>, S),
    lists:foldl(
      fun(E, {New, Acc = #{fired := F}}) ->
              Kind = binary_to_atom(maps:get(<<"event">>, E)),
              Who = case Kind of
                        busy_dist_port -> maps:get(<<"port">>, E, null);
                        busy_port -> maps:get(<<"port">>, E, null);
                        _ -> maps:get(<<"pid">>, E)
                    end,
              K = {Kind, Who},
              C = num(maps:get(<<"count">>, E, 1)),
              Max = num(maps:get(<<"max_ms">>, E, 0)),
              case F of
                  #{K := Old} ->
                      Ctx = maps:get(ctx, Old),
                      Procs = lists:usort([maps:with([<<"pid">>, <<"name">>], E) | maps:get(<<"suspended">>, Ctx, [])]),
                      {New, Acc#{fired := F#{K := Old#{count := maps:get(count, Old) + C,
                                                      max_ms := max(maps:get(max_ms, Old), Max),
                                                      last := T,
                                                      ctx := Ctx#{<<"suspended">> => lists:sublist(Procs, 10)}}}}};
                  _ ->
                      Fd = #{key => K, at => T, last => T, track => [], count => C, max_ms => Max,
                             ctx => E#{<<"suspended">> => [maps:with([<<"pid">>, <<"name">>], E)]}},
                      {New ++ [{K, Fd}], Acc#{fired := F#{K => Fd}}}
              end
      end, {[], St#{fired := Fired}}, Events).

%%--------------------------------------------------------------------
%% Findings
%%--------------------------------------------------------------------

kind(mailbox, F, St) ->
    Who = who(F),
    R = #{from_ms := From, to_ms := To, rate_per_s := Rate, first := First, last := Last, peak := Peak,
           samples := N} = rise(F, St),
    beamlab_result:finding(
      mailbox_growing, severity(F, N, Last >= 100000), ["Message queue growing: ", Who],
      io_lib:format("the message queue of ~ts grew from ~ts to ~ts messages over ~ts (~ts msg/s)~ts~ts~ts",
                    [Who, count(First), count(Last), span(From, To), rate(Rate), peak(Peak, Last, count),
                     current(F), case maps:get(<<"memory">>, maps:get(ctx, F), null) of
                                     null -> "";
                                     M -> [", holding ", bytes(M)]
                                 end]),
      "The process receives faster than it handles its messages. Look at what it is doing (its current "
      "function: a selective receive scans the whole queue, a call to a slow service blocks it), give its "
      "producers back-pressure (calls instead of casts, bounded buffers) or more workers, and consider "
      "process_flag(message_queue_data, off_heap) for large queues.",
      data(F, R));
kind(process_memory, F, St) ->
    Who = who(F),
    R = #{from_ms := From, to_ms := To, rate_per_s := Rate, first := First, last := Last, peak := Peak,
           samples := N} = rise(F, St),
    beamlab_result:finding(
      process_memory_growing, severity(F, N, false), ["Process memory growing: ", Who],
      io_lib:format("the memory of ~ts grew from ~ts to ~ts over ~ts (~ts/s)~ts~ts",
                    [Who, bytes(First), bytes(Last), span(From, To), bytes(Rate), peak(Peak, Last, bytes),
                     current(F)]),
      "Its heap keeps growing: state that only accumulates (a list or map never trimmed, a cache without "
      "eviction) or a growing mailbox. Read its state and dictionary size with "
      "erlang:process_info(Pid, [total_heap_size, message_queue_len, garbage_collection]) or recon:info/1.",
      data(F, R));
kind(binary, F, St) ->
    R = #{from_ms := From, to_ms := To, rate_per_s := Rate, first := First, last := Last, peak := Peak,
           samples := N} = rise(F, St),
    Holders = maps:get(<<"holders">>, maps:get(ctx, F), []),
    {Title, Held} = case Holders of
                        [H | _] ->
                            HWho = who_of(H),
                            {["Refc binary memory growing, held by ", HWho],
                             io_lib:format("; most of it referenced by ~ts (~ts in ~ts binaries)",
                                           [HWho, bytes(num(maps:get(<<"binary">>, H, 0))),
                                            count(num(maps:get(<<"binaries">>, H, 0)))])};
                        [] -> {"Refc binary memory growing", ""}
                    end,
    beamlab_result:finding(
      binary_growing, severity(F, N, false), Title,
      io_lib:format("the node's refc binary memory grew from ~ts to ~ts over ~ts (~ts/s)~ts~ts",
                    [bytes(First), bytes(Last), span(From, To), bytes(Rate), peak(Peak, Last, bytes), Held]),
      "Binaries over 64 bytes live off-heap and are freed only when every process that referenced them has "
      "garbage collected. A long-lived process that handles large binaries and rarely collects keeps them "
      "alive: hibernate it or collect after bursts, copy the small parts you keep (binary:copy/1); "
      "recon:bin_leak/1 confirms by collecting every process.",
      data(F, R#{holders => Holders}));
kind(ets, F, St) ->
    Ctx = maps:get(ctx, F),
    R = #{from_ms := From, to_ms := To, rate_per_s := Rate, first := First, last := Last, peak := Peak,
           samples := N} = rise(F, St),
    Name = maps:get(<<"name">>, Ctx, maps:get(<<"id">>, Ctx, <<"?">>)),
    Owner = who_of(#{<<"pid">> => maps:get(<<"owner">>, Ctx, null), <<"name">> => maps:get(<<"owner_name">>, Ctx, null)}),
    beamlab_result:finding(
      ets_growing, severity(F, N, false), ["ETS table growing: ", Name, " (owner ", Owner, ")"],
      io_lib:format("ETS table ~ts (~ts, owner ~ts) grew from ~ts to ~ts over ~ts (~ts/s); ~ts objects~ts",
                    [Name, maps:get(<<"type">>, Ctx, <<"?">>), Owner, bytes(First), bytes(Last), span(From, To),
                     bytes(Rate), count(num(maps:get(<<"size">>, Ctx, 0))), peak(Peak, Last, bytes)]),
      "Entries are inserted and never deleted: look at the owner for a missing cleanup or expiry, a key "
      "that is never the same twice (a timestamp, a pid, a ref), or a cache without a bound.",
      data(F, R#{table => Name, owner => maps:get(<<"owner">>, Ctx, null)}));
kind(processes, F, St) ->
    count_finding(processes_growing, "Process count growing", "processes", F, St,
                  "Processes are started faster than they end: a spawn per request or message whose process "
                  "never exits (waiting in a receive with no timeout, a missing reply), or supervisors "
                  "restarting children in a loop. The new processes' initial call and who started them point "
                  "at the code.");
kind(ports, F, St) ->
    count_finding(ports_growing, "Port count growing", "ports", F, St,
                  "Ports (sockets, files, external programs) are opened and not closed: every open needs a "
                  "close on every path, including errors and timeouts; the owner named here is the process "
                  "that keeps them.");
kind(atoms, F, St) ->
    count_finding(atoms_growing, "Atom table growing", "atoms", F, St,
                  "Atoms are never garbage collected and the table has a fixed limit: something turns data "
                  "into atoms (list_to_atom/1, binary_to_atom/2, a decoder with atom keys). Use "
                  "list_to_existing_atom/1 or binary_to_existing_atom/2, or keep such keys as binaries.");
kind(Kind, F = #{ctx := E, count := C, max_ms := Max}, St)
  when Kind =:= long_gc; Kind =:= long_schedule ->
    Who = who_of(E),
    {Title, What, Advice} =
        case Kind of
            long_gc -> {"Long garbage collections", "garbage collections",
                        "A collection of a large heap blocks its scheduler for its whole length. Keep large "
                        "state out of one process heap (ETS, several processes), let big mailboxes live "
                        "off-heap (message_queue_data off_heap), or hibernate idle processes."};
            long_schedule -> {"Long schedules", "runs without yielding",
                              "It ran past the threshold without yielding its scheduler, so other work on "
                              "that scheduler waited: a long NIF or BIF without dirty scheduling, a port "
                              "driver doing blocking work, or a huge single operation."}
        end,
    beamlab_result:finding(
      Kind, case Max >= 1000 of true -> critical; false -> warning end, [Title, ": ", Who],
      io_lib:format("~ts: ~ts ~ts over the system monitor's threshold, the longest ~b ms (first at ~.1f s)~ts",
                    [Who, count(C), What, round(Max), maps:get(at, F) / 1000, current_of(E)]),
      Advice, data(F, #{count => C, max_ms => Max, from_ms => maps:get(at, F) - maps:get(interval, St),
                        to_ms => maps:get(last, F)}));
kind(Kind, F = #{ctx := E, count := C}, St) when Kind =:= busy_dist_port; Kind =:= busy_port ->
    Port = maps:get(<<"port">>, E, <<"?">>),
    Suspended = [who_of(P) || P <- maps:get(<<"suspended">>, E, [])],
    {Title, Advice} =
        case Kind of
            busy_dist_port ->
                {["Busy distribution port to ", maps:get(<<"node">>, E, <<"?">>)],
                 "The distribution buffer to that node was full, so senders were suspended: the link or the "
                 "other node cannot keep up with what is sent. Send less or smaller messages, or raise the "
                 "buffer (+zdbbl, erlang:system_flag(dist_buf_busy_limit)) if the peak is short."};
            busy_port ->
                {["Busy port ", Port],
                 "The port's queue was over its limit, so senders were suspended: the port (a socket, a "
                 "file, a driver) cannot keep up with what is written to it."}
        end,
    beamlab_result:finding(
      Kind, warning, Title,
      io_lib:format("~ts times a process was suspended sending to ~ts (first at ~.1f s); suspended: ~ts",
                    [count(C), Port, maps:get(at, F) / 1000, lists:join(", ", Suspended)]),
      Advice, data(F, #{count => C, port => Port, node => maps:get(<<"node">>, E, null),
                        from_ms => maps:get(at, F) - maps:get(interval, St), to_ms => maps:get(last, F)})).

count_finding(Id, Title, Noun, F, St = #{limits := Limits}, Advice) ->
    R = #{from_ms := From, to_ms := To, rate_per_s := Rate, first := First, last := Last, samples := N} = rise(F, St),
    Ctx = maps:get(ctx, F),
    Limit = case maps:get(list_to_binary(Noun), Limits, null) of L when is_number(L) -> L; _ -> null end,
    %% The limit within an hour at this rate, once it has lasted a while.
    Soon = is_number(Limit) andalso Rate > 0 andalso (Limit - Last) / Rate < 3600 andalso rising(F) >= 3,
    Groups = list(<<"groups">>, Ctx),
    Culprit = case Groups of
                  [G | _] -> [": ", group_text(G, Noun)];
                  [] -> []
              end,
    beamlab_result:finding(
      Id, severity(F, N, Soon), [Title | Culprit],
      io_lib:format("~ts grew from ~ts to ~ts over ~ts (~ts/s)~ts~ts~ts",
                    [Noun, count(First), count(Last), span(From, To), rate(Rate),
                     case Limit of null -> ""; _ -> io_lib:format("; limit ~ts", [count(Limit)]) end,
                     case Soon of true -> io_lib:format(", reached in ~b min at this rate",
                                                        [round((Limit - Last) / Rate / 60)]);
                                  false -> "" end,
                     groups_text(Groups, Ctx, Noun)]),
      Advice,
      data(F, R#{limit => Limit, groups => Groups})).

group_text(G, "processes") ->
    [case maps:get(<<"initial_call">>, G, null) of null -> "?"; Ic -> Ic end,
     case maps:get(<<"spawned_by">>, G, null) of null -> ""; By -> [" started by ", By] end];
group_text(G, _) ->
    [maps:get(<<"name">>, G, <<"?">>),
     case maps:get(<<"connected">>, G, null) of null -> ""; C -> [" owned by ", C] end].

groups_text([], _, _) -> "";
groups_text(Groups, Ctx, Noun) ->
    Of = case Noun of
             "processes" -> io_lib:format(" (~b of ~b read)", [num(maps:get(<<"alive">>, Ctx, 0)), num(maps:get(<<"sampled">>, Ctx, 0))]);
             _ -> ""
         end,
    ["; the new ones", Of, ": ",
     lists:join(", ", [[count(num(maps:get(<<"count">>, G, 0))), " ", group_text(G, Noun)]
                       || G <- lists:sublist(Groups, 3)])].

%% The rise: from the value before the first change of the last unbroken
%% run of rises to the last value seen; its interval starts where the
%% first change was measured from.
rise(#{track := Track}, #{interval := I}) ->
    Obs = lists:reverse(Track),
    Run = lists:reverse(lists:takewhile(fun(#{d := D}) -> is_number(D) andalso D >= 0 end, Track)),
    [#{t := T1, v := V1, d := D1, since := Since} | _] = case Run of [] -> Obs; _ -> Run end,
    {Start, From} = case D1 of
                        null -> {V1, T1};
                        _ when is_number(Since) -> {V1 - D1, T1 - Since};
                        _ -> {V1 - D1, T1 - window(T1, Obs, I)}
                    end,
    #{t := Tn, v := Vn} = lists:last(Obs),
    #{from_ms => From, to_ms => Tn, rate_per_s => (Vn - Start) * 1000 / max(1, Tn - From), first => Start,
      last => Vn, peak => lists:max([V || #{v := V} <- Obs]), samples => length(Obs)}.

%% The time between an observation and the one before it (the series'
%% interval for the first).
window(T, Obs, I) ->
    case [Tp || #{t := Tp} <- Obs, Tp < T] of
        [] -> I;
        Before -> T - lists:max(Before)
    end.

severity(F, _N, Big) ->
    case Big orelse rising(F) >= ?SUSTAINED of
        true -> critical;
        false -> warning
    end.

%% Samples of growth up to the last one.
rising(#{track := Track}) ->
    length(lists:takewhile(fun(#{d := D}) -> is_number(D) andalso D > 0 end, Track)).

%% `from_ms'..`to_ms': when it was raised (from the start of the rise, or
%% the interval of the first event, to the sample that proved it), which
%% the report shades; `last_ms': the last sample of the evidence.
data(F, Extra) ->
    {Kind, Who} = maps:get(key, F),
    At = maps:get(at, F),
    maps:merge(Extra#{to_ms => At, last_ms => maps:get(to_ms, Extra, At)},
               #{kind => Kind, culprit => Who, detected_ms => At, context => maps:get(ctx, F)}).

%% Silences and a system monitor held by someone else, from the series.
silences(Series) ->
    case [U || U <- list(<<"unanswered">>, Series)] of
        [] -> [];
        Us ->
            Total = lists:sum([num(maps:get(<<"to_ms">>, U, 0)) - num(maps:get(<<"from_ms">>, U, 0))
                               || U <- Us, is_number(maps:get(<<"to_ms">>, U, null))]),
            [beamlab_result:finding(
               node_unresponsive, warning, "The node stopped answering",
               io_lib:format("the node did not answer ~b time(s): ~ts", [length(Us),
                             lists:join(", ", [case maps:get(<<"to_ms">>, U, null) of
                                                   null -> io_lib:format("from ~.1f s to the end", [num(maps:get(<<"from_ms">>, U)) / 1000]);
                                                   To -> span(num(maps:get(<<"from_ms">>, U)), To)
                                               end || U <- Us])]),
               "A node that stops answering its distribution calls is stopped (SIGSTOP, a debugger), swapping, "
               "or so overloaded that a call waits seconds: check its host and its schedulers' run queues.",
               #{periods => Us, answered_again_after_ms => Total})]
    end.

sysmon(Series) ->
    case maps:get(<<"system_monitor">>, Series, #{}) of
        #{<<"state">> := <<"taken">>, <<"holder">> := Holder} ->
            [beamlab_result:finding(
               system_monitor_taken, info, "System monitor held by another process",
               io_lib:format("~ts already held the node's system monitor (there is one per node); long "
                             "garbage collections, long schedules and busy ports were not watched", [Holder]),
               "Another tool (observer_cli, a monitoring library, your own code) holds it; beamlab leaves it "
               "alone. Stop that monitor to let beamlab watch these events.",
               #{holder => Holder})];
        _ -> []
    end.

%%--------------------------------------------------------------------
%% Text
%%--------------------------------------------------------------------

who(#{ctx := Ctx}) -> who_of(Ctx).

who_of(E) ->
    Pid = maps:get(<<"pid">>, E, null),
    case maps:get(<<"name">>, E, null) of
        null when Pid =:= null -> "?";
        null -> Pid;
        Name when Pid =:= null -> Name;
        Name -> [Name, " ", Pid]
    end.

current(#{ctx := Ctx}) -> current_of(Ctx).

current_of(E) ->
    case maps:get(<<"current_function">>, E, null) of
        null -> "";
        Cf -> [", in ", Cf]
    end.

span(From, To) -> io_lib:format("~.1f-~.1f s", [From / 1000, To / 1000]).

peak(Peak, Last, Unit) when Peak > Last ->
    [", peak ", case Unit of count -> count(Peak); bytes -> bytes(Peak) end];
peak(_, _, _) -> "".

count(N) -> beamlab_format_units:count(round(N)).
rate(R) -> beamlab_format_units:count(round(R)).
bytes(N) -> beamlab_format_units:bytes(round(N)).

samples(Series) ->
    Ts = case maps:get(<<"t_ms">>, Series, []) of L when is_list(L) -> L; _ -> [] end,
    Keys = [K || {K, V} <- maps:to_list(Series), is_list(V), length(V) =:= length(Ts), K =/= <<"unanswered">>],
    Nested = [K || {K, V} <- maps:to_list(Series), is_map(V), K =/= <<"schedulers">>, K =/= <<"limits">>,
                   K =/= <<"system_monitor">>],
    [maps:merge(maps:from_list([{K, lists:nth(I, maps:get(K, Series))} || K <- Keys]),
                maps:from_list([{K, column(maps:get(K, Series), I)} || K <- Nested]))
     || I <- lists:seq(1, length(Ts))].

column(Cols, I) ->
    maps:from_list([{K, lists:nth(I, V)} || {K, V} <- maps:to_list(Cols), is_list(V), length(V) >= I]).

num(N) when is_number(N) -> N;
num(_) -> 0.
