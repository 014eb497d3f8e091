%%% @doc Parses the text of `perf script -F comm,tid,ip,sym,dso' into
%%% samples: the thread's name and id, and its call stack, leaf first,
%%% each frame a symbol and the object it lives in (`[kernel.kallsyms]',
%%% `.../beam.smp', `/tmp/perf-PID.map' for JIT code named by the VM).
%%% Pure: the recorded text in, samples out.
-module(beamlab_profile_perf).

-export([parse/1, script_fields/0]).

-type frame() :: #{sym := binary(), dso := binary()}.
-type sample() :: #{thread := binary(), tid := integer(), frames := [frame()]}.
-export_type([frame/0, sample/0]).

%% @doc The `-F' fields `parse/1' expects.
-spec script_fields() -> string().
script_fields() ->
    "comm,tid,ip,sym,dso".

%% @doc The samples of a `perf script' text: with call graphs, blocks
%% separated by blank lines (a header `COMM TID', then one frame a line);
%% without (perf record without -g), one line a sample
%% (`COMM TID IP SYM (DSO)'). Lines that fit no form (perf's warnings)
%% are skipped.
-spec parse(iodata()) -> [sample()].
parse(Text) ->
    Lines = binary:split(iolist_to_binary(Text), <<"\n">>, [global]),
    blocks(Lines, undefined, []).

blocks([], Cur, Acc) ->
    lists:reverse(close(Cur, Acc));
blocks([Line | Rest], Cur, Acc) ->
    case classify(Line) of
        blank -> blocks(Rest, undefined, close(Cur, Acc));
        {frame, F} when Cur =/= undefined ->
            #{frames := Fs} = Cur,
            blocks(Rest, Cur#{frames := [F | Fs]}, Acc);
        {frame, _} -> blocks(Rest, Cur, Acc);
        {header, Thread, Tid} ->
            blocks(Rest, #{thread => Thread, tid => Tid, frames => []}, close(Cur, Acc));
        {leaf, Thread, Tid, F} ->
            blocks(Rest, undefined, [#{thread => Thread, tid => Tid, frames => [F]} | close(Cur, Acc)]);
        skip -> blocks(Rest, Cur, Acc)
    end.

close(undefined, Acc) -> Acc;
close(S = #{frames := Fs}, Acc) -> [S#{frames := lists:reverse(Fs)} | Acc].

classify(Line) ->
    case string:trim(Line, trailing) of
        <<>> -> blank;
        <<$\t, _/binary>> = L -> frame(string:trim(L, leading));
        L ->
            %% perf pads the thread's name on the left to 16 columns.
            case {leaf(string:trim(L, leading)), L} of
                {skip, <<$\s, _/binary>>} -> frame(string:trim(L, leading));
                {skip, _} -> header(L);
                {Leaf, _} -> Leaf
            end
    end.

%% `   1_scheduler 11710     7f14f45bf6fa $busy:loop/2 (/tmp/perf-11702.map)'
leaf(L) ->
    case re:run(L, <<"^(.*?\\S)\\s+(\\d+)(?:/\\d+)?\\s+([0-9a-fA-F]+)\\s+(.*?)\\s+\\((.*)\\)$">>,
                [{capture, all_but_first, binary}, unicode]) of
        {match, [Comm, Tid, _Ip, Sym, Dso]} ->
            {leaf, Comm, binary_to_integer(Tid), #{sym => strip_offset(Sym), dso => Dso}};
        nomatch -> skip
    end.

%% `7f14f45bf6fa $busy:loop/2 (/tmp/perf-11702.map)'; the symbol may hold
%% spaces (quoted atoms, C++); the object is what follows the first ` (',
%% itself possibly with parentheses (`/memfd:vmem (deleted)', where the
%% JIT's code lives).
frame(L) ->
    case re:run(L, <<"^([0-9a-fA-F]+)\\s+(.*?)\\s+\\((.*)\\)$">>, [{capture, all_but_first, binary}, unicode]) of
        {match, [_Ip, Sym, Dso]} -> {frame, #{sym => strip_offset(Sym), dso => Dso}};
        nomatch -> skip
    end.

strip_offset(Sym) ->
    case re:run(Sym, <<"^(.*)\\+0x[0-9a-fA-F]+$">>, [{capture, all_but_first, binary}, unicode]) of
        {match, [S]} -> S;
        nomatch -> Sym
    end.

%% `1_scheduler 11710' (the name may hold spaces: the id is the last word).
header(L) ->
    case re:run(L, <<"^(.*\\S)\\s+(\\d+)(/\\d+)?$">>, [{capture, all_but_first, binary}, unicode]) of
        {match, [Comm, Tid | _]} -> {header, Comm, binary_to_integer(Tid)};
        nomatch -> skip
    end.
