%%% @doc The processes, ETS tables and ports of a node, read as recon and
%%% observer_cli read them but from outside: every call is an `erpc' call
%%% to OTP functions (`erlang', `ets', `lists') through OTP's own
%%% interpreter `erl_eval', so no beamlab code is loaded on the node. The
%%% loops over processes run in compiled OTP code (`lists:zipwith/3' with
%%% `fun erlang:process_info/2'), not in the interpreter, and in batches of
%%% 5000 processes, so one batch is a short call and a small reply.
%%%
%%% Every function takes the node (the local one works too) and a timeout
%%% in milliseconds that bounds the whole operation, and returns
%%% `{error, Reason}' (`timeout', `noconnection', ...) instead of waiting
%%% for a node that does not answer.
-module(beamlab_runtime_procs).

-export([scan/4, top/5, describe/4, ets/3, ets_describe/3, new_processes/5, ports/2,
         binary_holders/3, id/1]).
-export([new/2, full_due/1, baseline/3, observe/4]).

-type info() :: {Reductions :: non_neg_integer(), Queue :: non_neg_integer(), Memory :: non_neg_integer()}
              | {non_neg_integer(), non_neg_integer(), non_neg_integer(),
                 BinaryBytes :: non_neg_integer(), Binaries :: non_neg_integer()}.
-type table() :: #{pid() => info()}.
-type desc() :: #{name := binary(), initial_call := binary() | null, current_function := binary() | null}.
-type names() :: #{pid() => {binary() | null, binary() | null}}.  % initial call, ancestor
-type entry() :: #{atom() => term()}.
-type reason() :: timeout | noconnection | term().
-type raw() :: #{t := integer(), atom() => term()}.  % a snapshot of the node's counters
-type tracker() :: #{node := node(), atom() => term()}.
-export_type([info/0, table/0, desc/0, names/0, entry/0, reason/0, raw/0, tracker/0]).

-define(BATCH, 5000).
-define(SAMPLE_NEW, 50).
-define(BINARY_GROWTH, 262144).  % bytes of refc binaries in one interval: find who holds them
-define(NEW_PROCESSES, 20).      % new processes in one full scan: say what they are
-define(NEW_PORTS, 5).           % more ports than in the last sample: say what they are

%% @doc `process_info' of `Pids' (reductions, message queue length,
%% memory, and with `Binary' the refc binaries each holds: total bytes and
%% count) in batches; processes that exited in between are left out.
-spec scan(node(), [pid()], boolean(), timeout()) -> {ok, table()} | {error, reason()}.
scan(Node, Pids, Binary, Timeout) ->
    Items = case Binary of
                true -> [reductions, message_queue_len, memory, binary];
                false -> [reductions, message_queue_len, memory]
            end,
    Deadline = deadline(Timeout),
    Expr = parse("lists:zipwith(fun erlang:process_info/2, Ps, lists:duplicate(length(Ps), Is))."),
    batches(Node, Expr, Items, chunks(Pids), Deadline, #{}).

batches(_, _, _, [], _, Acc) ->
    {ok, Acc};
batches(Node, Expr, Items, [Batch | Rest], Deadline, Acc) ->
    case eval(Node, Expr, [{'Ps', Batch}, {'Is', Items}], left(Deadline)) of
        {ok, Infos} ->
            Add = maps:from_list([{P, info(I)} || {P, I} <- lists:zip(Batch, Infos), I =/= undefined]),
            batches(Node, Expr, Items, Rest, Deadline, maps:merge(Acc, Add));
        Error -> Error
    end.

info([{reductions, R}, {message_queue_len, Q}, {memory, M}]) -> {R, Q, M};
info([{reductions, R}, {message_queue_len, Q}, {memory, M}, {binary, Bins}]) ->
    {R, Q, M, lists:sum([S || {_, S, _} <- Bins]), length(Bins)}.

chunks(L) when length(L) =< ?BATCH -> [L];
chunks(L) ->
    {A, B} = lists:split(?BATCH, L),
    [A | chunks(B)].

%% @doc The top `N' processes of `Now' (scanned at millisecond `T') by
%% reductions used since each was last seen in `Seen' (per second; one
%% not seen before is counted over `WindowMs', it was born within it), by
%% message queue length and by memory: `[{by_reductions, [{Pid, Entry}]},
%% {by_message_queue, ...}, {by_memory, ...}]'. Each entry has the
%% counts, the change of queue and memory since the process was last seen
%% (`null' when it was not), the reductions used since then and per
%% second.
-spec top(table(), integer(), #{pid() => {info(), integer()}}, pos_integer(), non_neg_integer()) ->
          [{atom(), [{pid(), entry()}]}].
top(Now, T, Seen, WindowMs, N) ->
    Rows = [{P, Rate, element(2, I), element(3, I), I}
            || {P, I} <- maps:to_list(Now), Rate <- [rate(I, T, maps:get(P, Seen, undefined), WindowMs)]],
    By = fun(K) -> lists:sublist(lists:reverse(lists:keysort(K, Rows)), N) end,
    Entry = fun({P, Rate, Q, M, I}) ->
                    Old = maps:get(P, Seen, undefined),
                    {P, #{reductions => reds(I, Old), reductions_per_s => Rate, message_queue_len => Q, memory => M,
                          queue_delta => delta(2, I, Old), memory_delta => delta(3, I, Old),
                          since_ms => case Old of undefined -> null; {_, T0} -> T - T0 end}}
            end,
    [{by_reductions, [Entry(R) || R <- By(2)]},
     {by_message_queue, [Entry(R) || R <- By(3), element(3, R) > 0]},
     {by_memory, [Entry(R) || R <- By(4)]}].

reds(I, undefined) -> element(1, I);
reds(I, {Old, _}) -> max(0, element(1, I) - element(1, Old)).

rate(I, _T, undefined, WindowMs) -> element(1, I) * 1000 / WindowMs;
rate(I, T, {Old, T0}, _) -> max(0, element(1, I) - element(1, Old)) * 1000 / max(1, T - T0).

delta(_, _, undefined) -> null;
delta(K, I, {Old, _}) -> element(K, I) - element(K, Old).

%% @doc Names for `Pids': the registered name, else the initial call (the
%% `proc_lib' one from the process dictionary, as recon reads it), and the
%% current function. `Names' caches the initial calls already read (they
%% never change), so a known process costs no dictionary read.
-spec describe(node(), [pid()], names(), timeout()) -> {ok, #{pid() => desc()}, names()} | {error, reason()}.
describe(_Node, [], Names, _Timeout) ->
    {ok, #{}, Names};
describe(Node, Pids, Names, Timeout) ->
    Items = [case Names of
                 #{P := _} -> [registered_name, current_function];
                 _ -> [registered_name, current_function, initial_call, dictionary]
             end || P <- Pids],
    case eval(Node, parse("lists:zipwith(fun erlang:process_info/2, Ps, Is)."),
              [{'Ps', Pids}, {'Is', Items}], Timeout) of
        {ok, Infos} ->
            {Descs, Names1} =
                lists:foldl(fun({P, undefined}, {D, Ns}) ->
                                    {D#{P => #{name => <<"(exited)">>, initial_call => null,
                                               current_function => null}}, Ns};
                               ({P, Info}, {D, Ns}) ->
                                    {Initial, _} = Known = case Ns of
                                                               #{P := K} -> K;
                                                               _ -> initial(Info)
                                                           end,
                                    Name = case lists:keyfind(registered_name, 1, Info) of
                                               {_, R} when is_atom(R), R =/= [] -> atom_to_binary(R);
                                               _ -> null_name(Initial)
                                           end,
                                    {D#{P => #{name => Name, initial_call => Initial,
                                               current_function => mfa(proplists:get_value(current_function, Info))}},
                                     Ns#{P => Known}}
                            end, {#{}, Names}, lists:zip(Pids, Infos)),
            {ok, Descs, Names1};
        Error -> Error
    end.

%% The proc_lib initial call when there is one, else the spawn's; and the
%% first ancestor of a proc_lib process (who started it).
initial(Info) ->
    Dict = proplists:get_value(dictionary, Info, []),
    Initial = case lists:keyfind('$initial_call', 1, Dict) of
                  {_, MFA = {_, _, _}} -> MFA;
                  _ -> proplists:get_value(initial_call, Info)
              end,
    Ancestor = case lists:keyfind('$ancestors', 1, Dict) of
                   {_, [A | _]} when is_atom(A) -> atom_to_binary(A);
                   {_, [A | _]} when is_pid(A) -> id(A);
                   _ -> null
               end,
    {mfa(Initial), Ancestor}.

null_name(null) -> <<"?">>;
null_name(B) -> B.

mfa({M, F, A}) when is_atom(M), is_atom(F), is_integer(A) ->
    unicode:characters_to_binary(io_lib:format("~ts:~ts/~b", [M, F, A]));
mfa(_) -> null.

%% @doc Every ETS table of the node and its memory in bytes.
-spec ets(node(), pos_integer(), timeout()) -> {ok, #{term() => non_neg_integer()}} | {error, reason()}.
ets(Node, WordSize, Timeout) ->
    case eval(Node, parse("Ts = ets:all(), {Ts, lists:zipwith(fun ets:info/2, Ts, lists:duplicate(length(Ts), memory))}."),
              [], Timeout) of
        {ok, {Tabs, Words}} ->
            {ok, maps:from_list([{T, W * WordSize} || {T, W} <- lists:zip(Tabs, Words), is_integer(W)])};
        Error -> Error
    end.

%% @doc Name, owner, object count and kind of `Tabs'.
-spec ets_describe(node(), [term()], timeout()) -> {ok, #{term() => map()}} | {error, reason()}.
ets_describe(_Node, [], _Timeout) ->
    {ok, #{}};
ets_describe(Node, Tabs, Timeout) ->
    case eval(Node, parse("lists:map(fun ets:info/1, Ts)."), [{'Ts', Tabs}], Timeout) of
        {ok, Infos} ->
            {ok, maps:from_list([{T, #{name => atom_to_binary(proplists:get_value(name, I)),
                                       owner => proplists:get_value(owner, I),
                                       size => proplists:get_value(size, I),
                                       type => atom_to_binary(proplists:get_value(type, I)),
                                       protection => atom_to_binary(proplists:get_value(protection, I))}}
                                 || {T, I} <- lists:zip(Tabs, Infos), is_list(I)])};
        Error -> Error
    end.

%% @doc What the processes in `New' (which appeared since the last scan)
%% are: up to 50 of them are read and grouped by initial call, with who
%% started them (the `proc_lib' ancestor, or on OTP 26 and later the
%% parent of a plain spawn).
-spec new_processes(node(), [pid()], boolean(), names(), timeout()) -> {ok, map()} | {error, reason()}.
new_processes(Node, New, HasParent, Names, Timeout) ->
    Sample = lists:sublist(New, ?SAMPLE_NEW),
    Items = [current_function, initial_call, dictionary] ++ [parent || HasParent],
    case eval(Node, parse("lists:zipwith(fun erlang:process_info/2, Ps, lists:duplicate(length(Ps), Is))."),
              [{'Ps', Sample}, {'Is', Items}], Timeout) of
        {ok, Infos} ->
            Read = [{P, I} || {P, I} <- lists:zip(Sample, Infos), is_list(I)],
            Keys = [{Initial, spawner(Ancestor, proplists:get_value(parent, I, undefined), Names)}
                    || {_, I} <- Read, {Initial, Ancestor} <- [initial(I)]],
            Groups = lists:reverse(lists:keysort(2, count(Keys))),
            {ok, #{count => length(New), sampled => length(Sample), alive => length(Read),
                   groups => [#{initial_call => Ic, spawned_by => By, count => C} || {{Ic, By}, C} <- Groups]}};
        Error -> Error
    end.

spawner(null, Parent, _) when is_pid(Parent) -> id(Parent);
spawner(Ancestor, _, _) -> Ancestor.

count(L) ->
    maps:to_list(lists:foldl(fun(K, M) -> maps:update_with(K, fun(C) -> C + 1 end, 1, M) end, #{}, L)).

%% @doc Every port of the node with its name and connected process.
-spec ports(node(), timeout()) -> {ok, [{port(), binary(), pid() | null}]} | {error, reason()}.
ports(Node, Timeout) ->
    case eval(Node, parse("Ps = erlang:ports(), N = length(Ps),"
                          " {Ps, lists:zipwith(fun erlang:port_info/2, Ps, lists:duplicate(N, name)),"
                          "  lists:zipwith(fun erlang:port_info/2, Ps, lists:duplicate(N, connected))}."),
              [], Timeout) of
        {ok, {Ports, Names, Conns}} ->
            {ok, [{P, unicode:characters_to_binary(Name), case C of {connected, Pid} -> Pid; _ -> null end}
                  || {P, {name, Name}, C} <- lists:zip3(Ports, Names, Conns)]};
        Error -> Error
    end.

%% @doc The `N' processes of a scan made with binaries that hold the most
%% refc binary bytes: `[{Pid, Bytes, Count}]'.
-spec binary_holders(table(), non_neg_integer(), pos_integer()) -> [{pid(), non_neg_integer(), non_neg_integer()}].
binary_holders(Table, MinBytes, N) ->
    All = [{P, B, C} || {P, {_, _, _, B, C}} <- maps:to_list(Table), B >= MinBytes],
    lists:sublist(lists:reverse(lists:keysort(2, All)), N).

%% @doc A pid, port or table identifier as text: `<0.85.0>', `#Port<0.7>'.
-spec id(pid() | port() | reference() | atom()) -> binary().
id(P) when is_pid(P) -> list_to_binary(pid_to_list(P));
id(P) when is_port(P) -> list_to_binary(port_to_list(P));
id(A) when is_atom(A) -> atom_to_binary(A);
id(R) when is_reference(R) -> list_to_binary(ref_to_list(R)).

%%--------------------------------------------------------------------
%% Tracking a node's processes over a recording
%%--------------------------------------------------------------------

%% @doc A tracker for `Node': `top' processes listed per sample,
%% `interval' (ms) of the recording, the node's `wordsize', whether
%% `process_info(P, parent)' exists there (OTP 26 and later) and the
%% processes never to list (the watch's own, `exclude').
-spec new(node(), #{top := pos_integer(), interval := pos_integer(), wordsize := pos_integer(),
                    parent := boolean(), exclude => [pid()]}) -> tracker().
new(Node, #{top := N, interval := I, wordsize := W, parent := Parent} = Opts) ->
    #{node => Node, top => N, interval => I, wordsize => W, parent => Parent,
      exclude => maps:get(exclude, Opts, []),
      seen => #{}, names => #{}, candidates => [], full_every => 1, since_full => 0,
      ets => #{}, ports => undefined}.

%% @doc Whether the next sample reads every process (a full scan) or
%% only the candidates: a full scan runs every interval while it costs at
%% most a tenth of the interval, less often when it costs more (a node
%% with many processes); the candidates (the leaders of the last full
%% scan by each measure) are read in between.
-spec full_due(tracker()) -> boolean().
full_due(#{since_full := K, full_every := E}) ->
    K + 1 >= E.

%% @doc Reads the baseline the first sample compares with: every process
%% and every port; `{error, {remote, Reason}}' when the node does not
%% answer by `Deadline'.
-spec baseline(tracker(), raw(), integer() | infinity) -> {ok, tracker()} | {error, {remote, term()}}.
baseline(Tr, Raw, Deadline) ->
    remote(fun() -> read_baseline(Tr, Raw, Deadline) end).

%% The reads of a node throw `{remote, Reason}' (ok/1, ok3/1) when it
%% does not answer: caught here, for the exported functions to return.
remote(Read) ->
    try {ok, Read()}
    catch throw:{remote, _} = R -> {error, R}
    end.

read_baseline(Tr = #{node := Node}, Raw, Deadline) ->
    T = maps:get(t, Raw),
    Table = maps:without(maps:get(exclude, Tr), ok(scan(Node, maps:get(pids, Raw), false, left(Deadline)))),
    Ports = ok(ports(Node, left(Deadline))),
    Tr#{seen := maps:map(fun(_, I) -> {I, T} end, Table), candidates := candidates(Table, #{}, T, Tr),
        ets := maps:get(ets_mem, Raw, #{}), ports := sets:from_list([P || {P, _, _} <- Ports], [{version, 2}])}.

%% @doc What one sample adds about the node's processes, tables and
%% ports, given this sample's and the previous snapshot (`Raw', `Prev',
%% from the node's counters): the top processes (`top'), how they were
%% read (`scan'), the largest and fastest-growing ETS tables (`ets_top'),
%% and when a measure grew, who holds the refc binaries
%% (`binary_holders'), what the new processes and ports are
%% (`new_processes', `new_ports'); the system monitor's events of the
%% interval (`monitor_events'). `{error, {remote, Reason}}' when the node
%% does not answer by `Deadline'.
-spec observe(tracker(), raw(), raw(), integer() | infinity) ->
          {ok, {map(), tracker()}} | {error, {remote, term()}}.
observe(Tr, Raw, Prev, Deadline) ->
    remote(fun() -> read_observe(Tr, Raw, Prev, Deadline) end).

read_observe(Tr = #{node := Node, top := N, seen := Seen, names := Names0}, Raw, Prev, Deadline) ->
    T = maps:get(t, Raw),
    Full = maps:get(pids, Raw, skip) =/= skip,
    Pids = case Full of true -> maps:get(pids, Raw); false -> maps:get(candidates, Tr) end,
    Binary = grew(memory_of(binary, Prev), memory_of(binary, Raw), ?BINARY_GROWTH),
    Start = erlang:monotonic_time(millisecond),
    Table = maps:without(maps:get(exclude, Tr), ok(scan(Node, Pids, Binary, left(Deadline)))),
    ScanMs = erlang:monotonic_time(millisecond) - Start,
    Window = max(1, T - maps:get(t, Prev)),
    Tops = top(Table, T, Seen, Window, N),
    Holders = case Binary of
                  true -> binary_holders(Table, 1, N);
                  false -> []
              end,
    {EtsTop, EtsOwners} = ets_top(Tr, maps:get(ets_mem, Raw, #{}), Deadline),
    Events = events(Raw),
    Want = lists:usort([P || {_, L} <- Tops, {P, _} <- L] ++ [P || {P, _, _} <- Holders] ++ EtsOwners
                       ++ [P || #{pid := P} <- Events, is_pid(P)]),
    {ok, Descs, Names} = ok3(describe(Node, Want, Names0, left(Deadline))),
    Name = fun(P) -> maps:get(name, maps:get(P, Descs, #{name => null}), null) end,
    New = case Full andalso maps:get(processes, Raw) > maps:get(processes, Prev) of
              true -> [P || P <- maps:keys(Table), not is_map_key(P, Seen)];
              false -> []
          end,
    NewProcs = case length(New) >= ?NEW_PROCESSES of
                   true -> [{new_processes, ok(new_processes(Node, New, maps:get(parent, Tr), Names, left(Deadline)))}];
                   false -> []
               end,
    {NewPorts, PortSet} = new_ports(Tr, Raw, Prev, Deadline),
    Seen1 = case Full of
                true -> maps:map(fun(_, I) -> {I, T} end, Table);
                false -> maps:merge(Seen, maps:map(fun(_, I) -> {I, T} end, Table))
            end,
    Extras = #{top => maps:from_list([{K, [maps:merge(maps:get(P, Descs), E#{pid => id(P)}) || {P, E} <- L]}
                                      || {K, L} <- Tops]),
               scan => #{kind => case Full of true -> full; false -> candidates end,
                         processes => map_size(Table), ms => ScanMs},
               ets_top => [E#{owner_name => Name(O), owner => id(O)} || {O, E} <- EtsTop]},
    Extras1 = maps:merge(Extras, maps:from_list(
                                   NewProcs ++ NewPorts
                                   ++ [{binary_holders, [#{pid => id(P), name => Name(P), binary => B, binaries => C}
                                                         || {P, B, C} <- Holders]} || Binary]
                                   ++ [{monitor_events, [E#{pid := id(P), name => Name(P)} || E = #{pid := P} <- Events]}
                                       || Events =/= []])),
    Tr1 = Tr#{seen := Seen1, names := prune(Names, Seen1),
              ets := maps:get(ets_mem, Raw, #{}), ports := PortSet},
    Candidates = case Full of
                     true -> candidates(Table, Seen, T, Tr);
                     false -> maps:get(candidates, Tr)
                 end,
    {Extras1, budget(Tr1#{candidates := Candidates}, Full, ScanMs)}.

%% After a full scan: the candidates for the scans in between, and how
%% often the next full scans can run within a tenth of the interval.
budget(Tr = #{interval := I}, true, ScanMs) ->
    Tr#{since_full := 0, full_every := max(1, ceil(ScanMs * 10 / I))};
budget(Tr = #{since_full := K}, false, _) ->
    Tr#{since_full := K + 1}.

%% The leaders of a full scan by each measure (at least 20 of each).
candidates(Table, Seen, T, #{top := N}) ->
    K = max(20, 3 * N),
    lists:usort([P || {_, L} <- top(Table, T, Seen, 1000, K), {P, _} <- L]).

prune(Names, Seen) ->
    maps:filter(fun(P, _) -> is_map_key(P, Seen) end, Names).

%% The largest ETS tables and those that grew most since the last sample.
ets_top(#{node := Node, top := N, ets := Before}, Now, Deadline) ->
    Rows = [{Tab, M, M - maps:get(Tab, Before, M)} || {Tab, M} <- maps:to_list(Now)],
    Largest = lists:sublist(lists:reverse(lists:keysort(2, Rows)), N),
    Growing = lists:sublist(lists:reverse(lists:keysort(3, [R || R = {_, _, D} <- Rows, D > 0])), N),
    Tabs = lists:ukeysort(1, Largest ++ Growing),
    Info = ok(ets_describe(Node, [Tab || {Tab, _, _} <- Tabs], left(Deadline))),
    Top = [{maps:get(owner, I), maps:remove(owner, I#{id => id(Tab), memory => M,
                                                        memory_delta => case is_map_key(Tab, Before) of
                                                                            true -> D;
                                                                            false -> null
                                                                        end})}
           || {Tab, M, D} <- lists:reverse(lists:keysort(2, Tabs)), I <- [maps:get(Tab, Info, undefined)],
              is_map(I)],
    {Top, lists:usort([O || {O, _} <- Top, is_pid(O)])}.

%% New ports since the last sample, grouped by name and connected
%% process, when the port count grew.
new_ports(#{node := Node, ports := Set}, Raw, Prev, Deadline) ->
    case maps:get(ports, Raw) >= maps:get(ports, Prev) + ?NEW_PORTS of
        false -> {[], Set};
        true ->
            All = ok(ports(Node, left(Deadline))),
            New = [{Name, C} || {P, Name, C} <- All, Set =:= undefined orelse not sets:is_element(P, Set)],
            Groups = lists:reverse(lists:keysort(2, count(New))),
            {[{new_ports, #{count => length(New),
                            groups => [#{name => Name, connected => case C of null -> null; _ -> id(C) end,
                                         count => K} || {{Name, C}, K} <- lists:sublist(Groups, 10)]}}],
             sets:from_list([P || {P, _, _} <- All], [{version, 2}])}
    end.

%% The system monitor's events gathered on the node during the interval.
events(#{events := {Acc, _Total}, dist_ctrl := Dist}) when is_map(Acc) ->
    [maps:merge(#{event => What, pid => P, count => C, max_ms => Max},
                case Extra of
                    none -> #{};
                    Port when is_port(Port) ->
                        #{port => id(Port), node => case lists:keyfind(Port, 2, Dist) of
                                                        {DNode, _} -> atom_to_binary(DNode);
                                                        false -> null
                                                    end}
                end)
     || {{What, P, Extra}, {C, Max}} <- maps:to_list(Acc)];
events(_) -> [].

memory_of(K, #{memory := M}) -> maps:get(K, M, 0);
memory_of(_, _) -> 0.

grew(Before, Now, By) -> Now - Before >= By.

ok({ok, V}) -> V;
ok({error, R}) -> throw({remote, R}).

ok3({ok, _, _} = R) -> R;
ok3({error, R}) -> throw({remote, R}).

%%--------------------------------------------------------------------
%% Calls
%%--------------------------------------------------------------------

%% One interpreted expression on the node; the loops inside it are
%% compiled OTP code. (Bindings as an orddict: what erl_eval of every
%% release takes.)
eval(Node, Exprs, Bindings, Timeout) ->
    try erpc:call(Node, erl_eval, exprs, [Exprs, lists:sort(Bindings)], max(0, Timeout)) of
        {value, V, _} -> {ok, V}
    catch
        error:{erpc, R} -> {error, R};
        error:{exception, R, _} -> {error, R}
    end.

parse(Text) ->
    {ok, Exprs} = beamlab_runtime_expr:parse(Text),
    Exprs.

deadline(infinity) -> infinity;
deadline(T) -> erlang:monotonic_time(millisecond) + T.

left(infinity) -> infinity;
left(D) -> max(0, D - erlang:monotonic_time(millisecond)).

