%%% @doc Flame graphs in the HTML report: the profiles of the runs (a
%%% `profile' document's `extra.profile', a matrix configuration's
%%% `extra.configs[].profile') and which of them are differentials of
%%% which, for `priv/report/flame.js' to draw.
%%%
%%% Every profile gets an interactive flame graph. A later profile of the
%%% same benchmark gets a differential flame graph against the first one:
%%% two profiles pair when they profiled the same benchmarks (by name), or
%%% carry the same subject (`beamlab profile --label', or the same command
%%% line), or are configurations of one matrix (each against the first
%%% configuration). Frames match by the functions on their path: generated
%%% runner modules are named after their code (`beamlab_engine_code'), and
%%% the counter-named ones of older files (`beamlab_gen_17') are read as
%%% one name. Each frame's share is normalised by its own profile's
%%% samples, and the differential graph colours a frame by the change of
%%% its share in percentage points; {@link diff_table/2} lists the
%%% functions whose share changed most. Pure.
-module(beamlab_report_flame).

-export([profiles/1, diffs/1, diff_table/2, normalise/1]).

-type run() :: {Label :: binary(), beamlab_result:result()}.
-type profile() :: #{label := binary(), subject := binary(), detail := binary(), keys := [binary()],
                     samples := non_neg_integer(), stacks := [[binary() | integer()]],
                     names := beamlab_json:object(), categories := beamlab_json:object(),
                     threads := beamlab_json:object(), top := [beamlab_json:object()]}.
-type row() :: #{function := binary(), before := float(), 'after' := float(), change := float(),
                 self_before := float(), self_after := float()}.
-type diff() :: #{base := non_neg_integer(), new := non_neg_integer(), table := [row()], scale := float()}.
-export_type([profile/0, diff/0, row/0]).

%% Rows of the table of changed functions.
-define(TABLE_ROWS, 20).
%% Root frames of every stack: the thread types, not functions.
-define(ROOTS, [<<"scheduler">>, <<"dirty_cpu">>, <<"dirty_io">>, <<"other">>]).

%% @doc The profiles of the runs, in order.
-spec profiles([run()]) -> [profile()].
profiles(Runs) ->
    lists:append([run_profiles(L, R) || {L, R} <- Runs]).

run_profiles(Label, #{extra := Extra} = R) ->
    Subject = maps:get(<<"subject">>, maps:get(params, R, #{}), Label),
    Benches = lists:sort([N || #{name := N} <- maps:get(benchmarks, R, [])]),
    Own = case Extra of
              #{<<"profile">> := P} when is_map(P) ->
                  [profile(Label, maps:get(<<"subject">>, P, Subject),
                           [<<"subject:", (maps:get(<<"subject">>, P, Subject))/binary>>
                            | [iolist_to_binary(["benchmarks:" | lists:join("\n", Benches)]) || Benches =/= []]],
                           P)];
              _ -> []
          end,
    %% A matrix: every configuration's profile pairs with the first one's.
    Inner = iolist_to_binary(lists:join(" ", [beamlab_format_units:to_binary(A)
                                               || A <- maps:get(<<"inner_command">>, maps:get(params, R, #{}), [])])),
    %% (A preset's configurations pair within their scenario.)
    Configs = [profile(<<Label/binary, ": ", Name/binary>>, maps:get(<<"subject">>, P, Name),
                       [<<"matrix:", Inner/binary, (maps:get(<<"scenario">>, C, <<>>))/binary>>], P)
               || C <- case maps:get(<<"configs">>, Extra, []) of L when is_list(L) -> L; _ -> [] end,
                  is_map(C), #{<<"name">> := Name, <<"profile">> := P} <- [C], is_map(P)],
    %% Call captures of the target's processes (matrix
    %% --profile-process): every configuration's pairs with the first one's.
    Captures = [profile(<<Label/binary, ": ", Name/binary, " capture">>, maps:get(<<"subject">>, P, Name),
                        [<<"capture:", Inner/binary, (maps:get(<<"scenario">>, C, <<>>))/binary>>], P)
                || C <- case maps:get(<<"configs">>, Extra, []) of L when is_list(L) -> L; _ -> [] end,
                   is_map(C), #{<<"name">> := Name, <<"capture">> := #{<<"extra">> := #{<<"profile">> := P}}} <- [C],
                   is_map(P)],
    Own ++ Configs ++ Captures.

profile(Label, Subject, Keys, P) ->
    #{label => Label, subject => Subject, detail => detail(Label, Subject), keys => Keys,
      samples => maps:get(<<"samples">>, P, 0),
      stacks => normalise([[S, C] || [S, C] <- maps:get(<<"stacks">>, P, []), is_binary(S), is_integer(C)]),
      names => maps:get(<<"names">>, P, #{}),
      categories => maps:get(<<"categories">>, P, #{}),
      threads => maps:get(<<"threads">>, P, #{}),
      top => lists:sublist(maps:get(<<"functions">>, P, []), 15)}.

%% What a caption adds to the label: the subject with long paths cut to
%% their last component, nothing when the label already ends with it (a
%% matrix configuration's name, or `--label').
detail(Label, Subject) ->
    Short = unicode:characters_to_binary(lists:join(" ", [short_path(T) || T <- string:lexemes(Subject, " ")])),
    case binary:longest_common_suffix([Label, Short]) =:= byte_size(Short) of
        true -> <<>>;
        false -> Short
    end.

short_path(Token) ->
    case string:length(Token) > 24 andalso string:find(Token, "/") =/= nomatch of
        true -> ["\x{2026}/" | filename:basename(Token)];
        false -> Token
    end.

%% @doc Folded stacks with the counter-named generated modules of older
%% files (`beamlab_gen_' and a number that is not 8 digits) read as one
%% name, equal stacks merged.
-spec normalise([[binary() | integer()]]) -> [[binary() | integer()]].
normalise(Stacks) ->
    Merged = lists:foldl(fun([S, C], Acc) ->
                                 N = re:replace(S, <<"beamlab_gen_([0-9]{1,7}|[0-9]{9,})(?=[:;]|$)">>,
                                                <<"beamlab_gen_N">>, [global, {return, binary}]),
                                 maps:update_with(N, fun(X) -> X + C end, C, Acc)
                         end, #{}, Stacks),
    [[S, C] || {S, C} <- lists:reverse(lists:keysort(2, maps:to_list(Merged)))].

%% @doc For each profile that pairs with an earlier one, the index (from
%% 0) of its base and of itself, the table of changed functions and the
%% end of the colour scale (`scale'): the largest change in the table, in
%% percentage points, so that the scale and the table beside it show one
%% maximum (#35: the scale took its own from the frames' paths); a frame
%% that changed more is drawn at the end of the scale.
-spec diffs([profile()]) -> [diff()].
diffs(Profiles) ->
    Indexed = lists:zip(lists:seq(0, length(Profiles) - 1), Profiles),
    [#{base => I, new => J, table => Table, scale => lists:max([0.0 | [abs(C) || #{change := C} <- Table]])}
     || {J, New} <- Indexed,
        {I, Base} <- [first_pair(New, [P || {K, _} = P <- Indexed, K < J])], I =/= none,
        Table <- [diff_table(Base, New)]].

first_pair(#{keys := Keys}, Earlier) ->
    case [P || {_, #{keys := Ks}} = P <- Earlier, lists:any(fun(K) -> lists:member(K, Ks) end, Keys)] of
        [First | _] -> First;
        [] -> {none, none}
    end.

%% @doc The functions whose share of samples changed most between two
%% profiles: for each, the share of samples with the function anywhere on
%% the stack (`before', `after') and as the leaf (`self_before',
%% `self_after'), and the change of the first in percentage points, largest
%% first.
-spec diff_table(profile(), profile()) -> [row()].
diff_table(Base, New) ->
    B = shares(Base),
    N = shares(New),
    Rows = [begin
                {Bi, Bs} = maps:get(F, B, {0.0, 0.0}),
                {Ni, Ns} = maps:get(F, N, {0.0, 0.0}),
                #{function => F, before => pp(Bi), 'after' => pp(Ni), change => pp(Ni - Bi),
                  self_before => pp(Bs), self_after => pp(Ns)}
            end || F <- lists:usort(maps:keys(B) ++ maps:keys(N))],
    Sorted = lists:sort(fun(#{change := X, function := F}, #{change := Y, function := G}) ->
                                {-abs(X), F} =< {-abs(Y), G}
                        end, Rows),
    lists:sublist([R || R = #{change := C} <- Sorted, C /= 0], ?TABLE_ROWS).

%% Per function, the share of samples on stacks it is on and of those
%% where it is the leaf.
shares(#{stacks := Stacks}) ->
    Total = max(1, lists:sum([C || [_, C] <- Stacks])),
    Counts = lists:foldl(
               fun([S, C], Acc) ->
                       Frames = [F || F <- binary:split(S, <<";">>, [global]), not lists:member(F, ?ROOTS)],
                       Leaf = case Frames of [] -> []; _ -> [lists:last(Frames)] end,
                       A1 = lists:foldl(fun(F, A) -> maps:update_with(F, fun({I, X}) -> {I + C, X} end, {C, 0}, A) end,
                                        Acc, lists:usort(Frames)),
                       lists:foldl(fun(F, A) -> maps:update_with(F, fun({I, X}) -> {I, X + C} end, A) end, A1, Leaf)
               end, #{}, Stacks),
    maps:map(fun(_, {I, X}) -> {I / Total, X / Total} end, Counts).

%% A share as percentage points, to 3 decimals.
pp(Share) -> round(Share * 100000) / 1000.
