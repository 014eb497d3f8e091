%%% @doc Terms read by many processes without a copy on each heap.
%%%
%%% A counters, atomics or ETS reference is a magic reference, and every
%%% process heap holding one is charged the whole object's size on its
%%% virtual binary heap. A process that keeps a large histogram's reference
%%% (hundreds of kB of counters) is over its virtual heap limit after every
%%% collection, so each of its collections becomes a full sweep: in
%%% `message_load''s workers that tripled the number of collections and
%%% moved the benchmark's own figures. A term stored here is a literal:
%%% a process that fetches it itself (not one that receives it in a message
%%% or as spawn arguments, which copy it) holds a pointer to it, and nothing
%%% is charged to its heap.
%%%
%%% Each {@link share/1} costs a copy of the term into the literal area and
%%% each {@link release/1} a scan of every process (what persistent_term
%%% costs), so share once per run, not per message. A term whose sharing
%%% process died without releasing it (killed) is released by the next
%%% {@link share/1} on the node.
-module(beamlab_runtime_shared).

-export([share/1, fetch/1, release/1]).

-opaque key() :: {?MODULE, pid(), reference()}.
-export_type([key/0]).

%% @doc Stores `Term' for the calling process and returns the key its
%% readers fetch it with.
-spec share(term()) -> key().
share(Term) ->
    _ = [persistent_term:erase(K) || {{?MODULE, Owner, _} = K, _} <- persistent_term:get(),
                                     not is_process_alive(Owner)],
    Key = {?MODULE, self(), make_ref()},
    persistent_term:put(Key, Term),
    Key.

%% @doc The shared term; call it in the process that uses the term.
-spec fetch(key()) -> term().
fetch({?MODULE, _, _} = Key) ->
    persistent_term:get(Key).

%% @doc Frees a shared term (processes still holding it get a copy).
-spec release(key()) -> ok.
release({?MODULE, _, _} = Key) ->
    _ = persistent_term:erase(Key),
    ok.
