%%% @doc From perf samples to a profile: every frame resolved into a
%%% function and a category (`erlang' for `Module:Function/Arity' named by
%%% the JIT, `emulator' for the VM's C code with a note for the well-known
%%% functions, `kernel', and `harness' for beamlab's own measuring code, so
%%% it never hides in the user's numbers), the thread type of each sample
%%% (normal scheduler, dirty CPU, dirty IO, other), self and total counts
%%% per function, and the folded stacks that flame graphs read
%%% (`root;...;leaf COUNT', the format of flamegraph.pl, inferno and
%%% speedscope). Pure.
-module(beamlab_profile_stacks).

-export([build/2, classify/1, thread_type/1, folded/1, parse_folded/1, top/2, callers/3,
         harness_module/1, note/1]).

-type category() :: erlang | emulator | kernel | harness.
-type profile() :: #{binary() => beamlab_json:json()}.
-type opts() :: #{max_stacks => pos_integer(), max_functions => pos_integer()}.
-export_type([category/0, profile/0]).

-define(MAX_STACKS, 3000).
-define(MAX_FUNCTIONS, 300).
-define(OTHER, <<"[other stacks]">>).

%% @doc The profile of `Samples' as a JSON object (binary keys), bounded:
%% at most `max_stacks' distinct stacks (the rarest are merged into one
%% `[other stacks]' frame per thread type) and `max_functions' functions.
%% Keys: `samples', `categories' and `threads' (sample counts), `functions'
%% (name, category, note, self, total; by self time), `stacks'
%% (`[[Folded, Count]]'), `thread_categories' (samples per category within
%% each thread type), `stacks_merged', `names' (category per frame
%% name in the stacks) and `unnamed_jit' (samples in JIT code without a
%% name: the VM runs without perf support).
-spec build([beamlab_profile_perf:sample()], opts()) -> profile().
build(Samples, Opts) ->
    MaxStacks = maps:get(max_stacks, Opts, ?MAX_STACKS),
    MaxFuns = maps:get(max_functions, Opts, ?MAX_FUNCTIONS),
    Acc0 = #{n => 0, cats => #{}, threads => #{}, self => #{}, total => #{}, stacks => #{},
             funs => #{}, unnamed => 0, thread_cats => #{}},
    Acc = lists:foldl(fun add_sample/2, Acc0, Samples),
    #{n := N, cats := Cats, threads := Threads, self := Self, total := Total,
      stacks := Stacks, funs := Funs, unnamed := Unnamed, thread_cats := ThreadCats} = Acc,
    Functions0 = [begin
                      {Cat, Note} = maps:get(Name, Funs),
                      #{<<"name">> => Name, <<"category">> => atom_to_binary(Cat),
                        <<"note">> => Note, <<"self">> => maps:get(Name, Self, 0),
                        <<"total">> => T}
                  end || {Name, T} <- maps:to_list(Total)],
    Functions = lists:sublist(lists:sort(fun by_self/2, Functions0), MaxFuns),
    {Kept, Merged} = bound_stacks(Stacks, MaxStacks),
    Names = lists:usort(lists:append([binary:split(S, <<";">>, [global]) || [S, _] <- Kept])),
    NameCats = maps:from_list([{Nm, atom_to_binary(element(1, maps:get(Nm, Funs)))}
                               || Nm <- Names, is_map_key(Nm, Funs)]),
    #{<<"samples">> => N,
      <<"categories">> => maps:merge(#{<<"erlang">> => 0, <<"emulator">> => 0, <<"kernel">> => 0,
                                       <<"harness">> => 0}, bin_keys(Cats)),
      <<"threads">> => maps:merge(#{<<"scheduler">> => 0, <<"dirty_cpu">> => 0, <<"dirty_io">> => 0,
                                    <<"other">> => 0}, bin_keys(Threads)),
      <<"thread_categories">> => maps:from_list([{atom_to_binary(T), bin_keys(C)}
                                                  || {T, C} <- maps:to_list(ThreadCats)]),
      <<"functions">> => Functions,
      <<"stacks">> => Kept,
      <<"stacks_merged">> => Merged,
      <<"names">> => NameCats,
      <<"unnamed_jit">> => Unnamed}.

by_self(#{<<"self">> := A, <<"total">> := TA, <<"name">> := NA},
        #{<<"self">> := B, <<"total">> := TB, <<"name">> := NB}) ->
    {A, TA, NB} >= {B, TB, NA}.

bin_keys(M) ->
    maps:from_list([{atom_to_binary(K), V} || {K, V} <- maps:to_list(M)]).

add_sample(#{thread := Comm, frames := Frames}, Acc) ->
    case resolve(Frames) of
        [] ->
            Acc;
        Resolved = [{Leaf, LeafCat, _} | _] ->
            #{n := N, cats := Cats, threads := Threads, self := Self, total := Total,
              stacks := Stacks, funs := Funs, unnamed := Un, thread_cats := TC} = Acc,
            Type = thread_type(Comm),
            Cat = sample_category(Resolved),
            Names = [Nm || {Nm, _, _} <- Resolved],
            Folded = iolist_to_binary(lists:join(<<";">>, [atom_to_binary(Type)
                                                           | lists:reverse(Names)])),
            Funs1 = lists:foldl(fun({Nm, C, Note}, F) -> F#{Nm => {C, Note}} end, Funs, Resolved),
            Acc#{n := N + 1,
                 cats := incr(Cat, 1, Cats),
                 threads := incr(Type, 1, Threads),
                 thread_cats := TC#{Type => incr(Cat, 1, maps:get(Type, TC, #{}))},
                 self := incr(Leaf, 1, Self),
                 total := lists:foldl(fun(Nm, T) -> incr(Nm, 1, T) end, Total, lists:usort(Names)),
                 stacks := incr(Folded, 1, Stacks),
                 funs := Funs1,
                 unnamed := Un + case {Leaf, LeafCat} of
                                     {<<"[unnamed JIT code]">>, _} -> 1;
                                     _ -> 0
                                 end}
    end.

incr(K, By, M) ->
    M#{K => maps:get(K, M, 0) + By}.

%% Leaf first. Frames perf could not resolve at all are noise from walking
%% frame pointers through C code: dropped, except as the leaf, where they
%% are JIT code without a name.
resolve([]) ->
    [];
resolve([Leaf | Callers]) ->
    [classify(Leaf) | [classify(F) || F <- Callers, not unresolved(F)]].

unresolved(#{sym := <<"[unknown]">>, dso := <<"[unknown]">>}) -> true;
unresolved(_) -> false.

%% The nearest Erlang function decides whether beamlab's harness owns the
%% sample (its C callees and system calls included); otherwise the leaf's
%% category counts.
sample_category([{_, LeafCat, _} | _] = Resolved) ->
    case [C || {_, C, _} <- Resolved, C =:= erlang orelse C =:= harness] of
        [harness | _] -> harness;
        _ -> LeafCat
    end.

%% @doc A frame's function name, category and note.
-spec classify(beamlab_profile_perf:frame()) -> {binary(), category(), binary()}.
classify(#{sym := Sym, dso := Dso}) ->
    Kernel = binary:match(Dso, <<"kernel">>) =/= nomatch andalso binary:first(Dso) =:= $[,
    if
        Kernel -> {clean(Sym), kernel, note(Sym)};
        Sym =:= <<"[unknown]">> -> unknown_frame(Dso);
        true -> named(Sym, Dso)
    end.

unknown_frame(<<"[unknown]">>) ->
    unnamed_jit();
unknown_frame(<<"/memfd:", _/binary>>) ->
    unnamed_jit();
unknown_frame(<<"//anon", _/binary>>) ->
    unnamed_jit();
unknown_frame(Dso) ->
    {iolist_to_binary(["[", filename:basename(Dso), "]"]), emulator, <<"no symbols">>}.

named(Sym0, Dso) ->
    Sym = case Sym0 of
              <<"$", S/binary>> -> S;
              S -> S
          end,
    case Sym of
        <<"global::", Glue/binary>> ->
            {clean(Sym), emulator, jit_note(Glue)};
        _ ->
            case re:run(Sym, <<"^(.+?):(.+)/([0-9]+)$">>, [{capture, [1], binary}, unicode]) of
                {match, [Mod]} ->
                    {clean(Sym), case harness_module(Mod) of true -> harness; false -> erlang end, <<>>};
                nomatch ->
                    %% beam.smp, or beam.jit and beam.emu of an
                    %% installation with both flavours.
                    Note = case {note(Sym), filename:basename(Dso)} of
                               {<<>>, <<"beam.", _/binary>>} -> bif_note(Sym);
                               {<<>>, Lib} -> Lib;
                               {N, _} -> N
                           end,
                    {clean(Sym), emulator, Note}
            end
    end.

%% BIFs are C functions named after them: `lists_member_2' is
%% lists:member/2, `phash2_1' erlang:phash2/1.
bif_note(Sym) ->
    Mods = <<"lists|ets|maps|binary|persistent_term|os|re|unicode|atomics|counters|erts_internal|math">>,
    case re:run(Sym, <<"^(", Mods/binary, ")_([a-z][a-z0-9_]*)_([0-9])$">>, [{capture, all_but_first, binary}]) of
        {match, [M, F, A]} -> <<"BIF ", M/binary, ":", F/binary, "/", A/binary>>;
        nomatch ->
            case re:run(Sym, <<"^([a-z][a-z0-9]*(_[a-z0-9]+)*)_([0-9])$">>, [{capture, [1, 3], binary}]) of
                {match, [F, A]} -> <<"BIF erlang:", F/binary, "/", A/binary, "?">>;
                nomatch -> <<>>
            end
    end.

unnamed_jit() ->
    {<<"[unnamed JIT code]">>, erlang, <<"start the VM with +JPperf true to name it">>}.

%% `;' separates frames in folded stacks.
clean(Name) ->
    binary:replace(Name, <<";">>, <<":">>, [global]).

%% @doc Whether `Module' is beamlab's own measuring harness (the engine, the
%% CLI, the runtime services, results, statistics, formatting) rather than
%% the code being measured (generated runners `beamlab_gen_*', workloads,
%% the AMQP load generator).
-spec harness_module(binary()) -> boolean().
harness_module(<<"beamlab">>) -> true;
harness_module(<<"beamlab_gen_", _/binary>>) -> false;
harness_module(Mod) ->
    Prefixes = [<<"beamlab_engine">>, <<"beamlab_runtime">>, <<"beamlab_cli">>,
                <<"beamlab_result">>, <<"beamlab_stats">>, <<"beamlab_format">>,
                <<"beamlab_json">>, <<"beamlab_render">>, <<"beamlab_env">>,
                <<"beamlab_app">>, <<"beamlab_sup">>, <<"beamlab_profile">>],
    lists:any(fun(P) -> binary:longest_common_prefix([P, Mod]) =:= byte_size(P) end, Prefixes).

jit_note(<<"call_light_bif", _/binary>>) -> <<"JIT: calls a BIF">>;
jit_note(<<"call_bif", _/binary>>) -> <<"JIT: calls a BIF">>;
jit_note(<<"garbage_collect", _/binary>>) -> <<"JIT: enters garbage collection">>;
jit_note(<<"dispatch", _/binary>>) -> <<"JIT: scheduler dispatch">>;
jit_note(_) -> <<"JIT shared code">>.

%% @doc A short note for well-known emulator and kernel functions.
-spec note(binary()) -> binary().
note(Sym) ->
    %% {exact, Name, Note} or {prefix, Prefix, Note}; the first match wins.
    Notes = [{exact, <<"do_minor">>, <<"garbage collection (minor)">>},
             {exact, <<"do_major">>, <<"garbage collection (major)">>},
             {exact, <<"major_collection">>, <<"garbage collection (major)">>},
             {exact, <<"minor_collection">>, <<"garbage collection (minor)">>},
             {exact, <<"sweep">>, <<"garbage collection">>},
             {prefix, <<"erts_garbage_collect">>, <<"garbage collection">>},
             {prefix, <<"garbage_collect">>, <<"garbage collection">>},
             {exact, <<"make_internal_hash">>, <<"term hashing (maps, process dictionary, ETS)">>},
             {prefix, <<"make_hash2">>, <<"term hashing (phash2)">>},
             {prefix, <<"trapping_make_hash2">>, <<"term hashing (phash2)">>},
             {exact, <<"phash2_1">>, <<"BIF erlang:phash2/1">>},
             {exact, <<"eq">>, <<"term equality">>},
             {prefix, <<"erts_cmp">>, <<"term comparison">>},
             {prefix, <<"copy_struct">>, <<"term copying (messages, ETS, spawn)">>},
             {prefix, <<"copy_shallow">>, <<"term copying (messages)">>},
             {prefix, <<"copy_shared">>, <<"term copying (messages)">>},
             {prefix, <<"size_object">>, <<"term size before copying">>},
             {prefix, <<"erts_send_message">>, <<"message sending">>},
             {prefix, <<"erts_queue_message">>, <<"message queueing">>},
             {prefix, <<"erts_alloc_message">>, <<"message allocation">>},
             {prefix, <<"erts_proc_sig">>, <<"process signal/message queue">>},
             {prefix, <<"beam_jit_remove_message">>, <<"receive: message removal">>},
             {exact, <<"erts_find_export_entry">>, <<"export table lookup (apply/3, spawn/3, remote calls by name)">>},
             {exact, <<"fixed_apply">>, <<"apply with a fixed arity (M:F(...) with variable M or F)">>},
             {exact, <<"erts_new_local_fun_thing">>, <<"fun creation">>},
             {prefix, <<"get_map_element">>, <<"map lookup">>},
             {prefix, <<"erts_maps_">>, <<"map operation">>},
             {exact, <<"beam_jit_call_bif">>, <<"JIT: calls a BIF">>},
             {exact, <<"process_main">>, <<"emulator main loop (the interpreter runs every BEAM instruction in it)">>},
             {exact, <<"erts_schedule">>, <<"scheduler: picking the next process">>},
             {exact, <<"scheduler_wait">>, <<"scheduler idle">>},
             {prefix, <<"erts_thr_progress">>, <<"thread progress (scheduler bookkeeping)">>},
             {prefix, <<"db_">>, <<"ETS">>},
             {prefix, <<"ets_">>, <<"ETS">>},
             {prefix, <<"erts_port_output">>, <<"port I/O (port_command)">>},
             {prefix, <<"erts_alcu">>, <<"memory allocation">>},
             {exact, <<"erts_alloc">>, <<"memory allocation">>},
             {prefix, <<"erts_pd_">>, <<"process dictionary">>},
             {prefix, <<"pd_hash">>, <<"process dictionary">>},
             {exact, <<"put_2">>, <<"BIF erlang:put/2 (process dictionary)">>},
             {exact, <<"get_1">>, <<"BIF erlang:get/1 (process dictionary)">>},
             {prefix, <<"memcpy">>, <<"memory copy">>},
             {prefix, <<"__memmove">>, <<"memory copy">>},
             {prefix, <<"__memcpy">>, <<"memory copy">>},
             {prefix, <<"futex">>, <<"kernel: thread sleep/wake-up">>},
             {prefix, <<"__futex">>, <<"kernel: thread sleep/wake-up">>},
             {prefix, <<"__x64_sys_futex">>, <<"kernel: thread sleep/wake-up">>},
             {prefix, <<"finish_task_switch">>, <<"kernel: context switch">>},
             {prefix, <<"_raw_spin_unlock_irq">>, <<"kernel: wake-up, interrupts">>},
             {prefix, <<"epoll">>, <<"kernel: I/O polling">>},
             {prefix, <<"do_syscall">>, <<"kernel: system call">>},
             {prefix, <<"entry_SYSCALL">>, <<"kernel: system call">>},
             {prefix, <<"tcp_">>, <<"kernel: TCP">>},
             {exact, <<"schedule">>, <<"kernel: thread scheduling">>}],
    note(Sym, Notes).

note(_Sym, []) -> <<>>;
note(Sym, [{exact, Sym, Note} | _]) -> Note;
note(Sym, [{prefix, P, Note} | Rest]) ->
    case binary:longest_common_prefix([P, Sym]) =:= byte_size(P) of
        true -> Note;
        false -> note(Sym, Rest)
    end;
note(Sym, [_ | Rest]) ->
    note(Sym, Rest).

%% @doc The thread type of a VM thread name: OTP 25's `1_scheduler',
%% `3_dirty_cpu_sch', `2_dirty_io_sche', `1_aux', and the names of later
%% releases (`erts_sched_1', `erts_dcpus_1', `erts_dios_1', `erts_aux_1').
-spec thread_type(binary()) -> scheduler | dirty_cpu | dirty_io | other.
thread_type(<<"erts_sched_", _/binary>>) -> scheduler;
thread_type(<<"erts_dcpus_", _/binary>>) -> dirty_cpu;
thread_type(<<"erts_dios_", _/binary>>) -> dirty_io;
thread_type(Comm) ->
    case {binary:match(Comm, <<"dirty_cpu">>), binary:match(Comm, <<"dirty_io">>),
          re:run(Comm, <<"^[0-9]+_scheduler">>)} of
        {{_, _}, _, _} -> dirty_cpu;
        {_, {_, _}, _} -> dirty_io;
        {_, _, {match, _}} -> scheduler;
        _ -> other
    end.

bound_stacks(Stacks, Max) ->
    Sorted = lists:sort(fun({A, CA}, {B, CB}) -> {CA, B} >= {CB, A} end, maps:to_list(Stacks)),
    {Kept, Rest} = case length(Sorted) > Max of
                       true -> lists:split(Max - 1, Sorted);
                       false -> {Sorted, []}
                   end,
    Other = lists:foldl(fun({S, C}, M) ->
                                [Root | _] = binary:split(S, <<";">>),
                                incr(<<Root/binary, ";", (?OTHER)/binary>>, C, M)
                        end, #{}, Rest),
    {[[S, C] || {S, C} <- Kept ++ lists:sort(maps:to_list(Other))],
     lists:sum([C || {_, C} <- Rest])}.

%% @doc The folded-stacks text of a profile: one `root;...;leaf COUNT' line
%% a distinct stack.
-spec folded(profile()) -> iodata().
folded(#{<<"stacks">> := Stacks}) ->
    [[S, " ", integer_to_binary(C), "\n"] || [S, C] <- Stacks].

%% @doc Reads folded-stacks text back: `[{[Frame], Count}]' (root first).
-spec parse_folded(iodata()) -> {ok, [{[binary()], non_neg_integer()}]} | {error, {bad_line, pos_integer()}}.
parse_folded(Text) ->
    Lines = [L || L <- binary:split(iolist_to_binary(Text), <<"\n">>, [global]), L =/= <<>>],
    parse_lines(Lines, 1, []).

parse_lines([], _N, Acc) ->
    {ok, lists:reverse(Acc)};
parse_lines([L | Rest], N, Acc) ->
    case re:run(L, <<"^(.*) ([0-9]+)$">>, [{capture, all_but_first, binary}, unicode]) of
        {match, [S, C]} when S =/= <<>> ->
            parse_lines(Rest, N + 1, [{binary:split(S, <<";">>, [global]), binary_to_integer(C)} | Acc]);
        _ ->
            {error, {bad_line, N}}
    end.

%% @doc The `N' functions with the most self samples.
-spec top(profile(), pos_integer()) -> [#{binary() => beamlab_json:json()}].
top(#{<<"functions">> := Fs}, N) ->
    lists:sublist(Fs, N).

%% @doc Who calls `Name' (a function name as in the top table): for every
%% stack through it, the frames from the nearest Erlang function above it
%% down to it (`credit_flow:send/2;put_2;make_internal_hash'), with their
%% samples, most first, at most `Max'. Frames unknown to the profile count
%% as C code; a stack without any Erlang frame above shows its thread type.
-spec callers(profile(), binary(), pos_integer()) -> [{binary(), pos_integer()}].
callers(#{<<"stacks">> := Stacks} = P, Name, Max) ->
    Names = maps:get(<<"names">>, P, #{}),
    Erlangish = fun(F) -> lists:member(maps:get(F, Names, <<>>), [<<"erlang">>, <<"harness">>]) end,
    Paths = lists:foldl(
              fun([S, C], Acc) ->
                      Frames = binary:split(S, <<";">>, [global]),
                      case lists:member(Name, Frames) of
                          false -> Acc;
                          true ->
                              %% Root first: cut at the first occurrence of Name.
                              {Above, _} = lists:splitwith(fun(F) -> F =/= Name end, Frames),
                              RevAbove = lists:reverse(Above),
                              {CFrames, Rest} = lists:splitwith(fun(F) -> not Erlangish(F) end, RevAbove),
                              Chain = case Rest of
                                          [E | _] -> [E | lists:reverse(CFrames)];
                                          [] -> lists:reverse(CFrames)
                                      end,
                              Key = iolist_to_binary(lists:join(<<";">>, Chain ++ [Name])),
                              incr(Key, C, Acc)
                      end
              end, #{}, Stacks),
    lists:sublist(lists:sort(fun({A, CA}, {B, CB}) -> {CA, B} >= {CB, A} end, maps:to_list(Paths)), Max).
