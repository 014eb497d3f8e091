%%% @doc Two machines' doctor documents side by side, as a value
%%% (`beamlab doctor --compare a.json b.json'; `beamlab_render_doctor'
%%% renders it): the facts that differ (the machine's and the default
%%% VM's), where the scaling curves part (the first scheduler count at
%%% which B's capacity is outside 0.8 .. 1.25 of A's, each count's ratio),
%%% the default configuration's figures as ratios, and the findings each
%%% machine has that the other has not: what explains the difference,
%%% the most severe first. Pure.
-module(beamlab_result_doctor).

-export([compare/2]).

-export_type([comparison/0]).

-type comparison() :: #{atom() => term()}.

%% Capacity ratios outside this band: the curves have parted.
-define(PART_LO, 0.8).
-define(PART_HI, 1.25).

%% @doc The comparison of doctor document `A' (the reference) with `B'.
-spec compare(beamlab_result:result(), beamlab_result:result()) -> comparison().
compare(#{extra := XA} = A, #{extra := XB} = B) ->
    Facts = differing(flat(<<"machine">>, maps:get(<<"machine">>, XA, #{}))
                      ++ flat(<<"vm">>, maps:get(<<"vm">>, XA, #{})),
                      flat(<<"machine">>, maps:get(<<"machine">>, XB, #{}))
                      ++ flat(<<"vm">>, maps:get(<<"vm">>, XB, #{}))),
    CurveA = points(XA),
    CurveB = points(XB),
    Common = [N || N <- lists:usort(maps:keys(CurveA)), maps:is_key(N, CurveB)],
    Ratios = [#{schedulers => N, a => maps:get(N, CurveA), b => maps:get(N, CurveB),
                ratio => ratio(maps:get(N, CurveA), maps:get(N, CurveB))} || N <- Common],
    Parted = [R || #{ratio := Q} = R <- Ratios, is_number(Q), Q < ?PART_LO orelse Q > ?PART_HI],
    DA = maps:get(<<"default">>, XA, #{}),
    DB = maps:get(<<"default">>, XB, #{}),
    Default = [#{figure => K, a => maps:get(K, DA, null), b => maps:get(K, DB, null),
                 ratio => ratio(maps:get(K, DA, null), maps:get(K, DB, null))}
               || K <- [<<"goodput">>, <<"capacity">>, <<"latency_p99_us">>, <<"cpu_per_msg_us">>,
                        <<"round_trip_us">>, <<"others_share">>, <<"steal_share">>]],
    IdsA = ids(A),
    IdsB = ids(B),
    #{a => label(A), b => label(B),
      facts => Facts,
      curve => Ratios,
      parted_at => case Parted of
                       [#{schedulers := N} | _] -> N;
                       [] -> null
                   end,
      default => Default,
      only_a => [F || #{id := Id} = F <- severe_first(maps:get(findings, A, [])), not lists:member(Id, IdsB)],
      only_b => [F || #{id := Id} = F <- severe_first(maps:get(findings, B, [])), not lists:member(Id, IdsA)],
      recommendation_a => maps:get(<<"recommendation">>, XA, null),
      recommendation_b => maps:get(<<"recommendation">>, XB, null)}.

label(#{env := Env, started_at := At}) ->
    Host = case Env of
               #{<<"os">> := #{<<"hostname">> := H}} -> H;
               _ -> <<"?">>
           end,
    <<Host/binary, " at ", At/binary>>;
label(_) ->
    <<"?">>.

ids(Doc) -> [Id || #{id := Id} <- maps:get(findings, Doc, []), Id =/= <<"no_pathology">>].

severe_first(Fs) ->
    Rank = fun(#{severity := critical}) -> 0; (#{severity := warning}) -> 1; (_) -> 2 end,
    lists:sort(fun(X, Y) -> Rank(X) =< Rank(Y) end, [F || #{id := Id} = F <- Fs, Id =/= <<"no_pathology">>]).

points(X) ->
    maps:from_list([{N, C} || #{<<"schedulers">> := N, <<"capacity">> := C}
                                  <- maps:get(<<"points">>, maps:get(<<"curve">>, X, #{}), []),
                              is_number(N), is_number(C)]).

ratio(A, B) when is_number(A), is_number(B), A > 0 -> B / A;
ratio(_, _) -> null.

%% Scalar facts under dotted names ("machine.numa_nodes", "vm.schedulers_online").
flat(Prefix, M) when is_map(M) ->
    lists:append([flat(<<Prefix/binary, ".", K/binary>>, V) || {K, V} <- lists:sort(maps:to_list(M)),
                                                               K =/= <<"notes">>]);
flat(Prefix, V) ->
    [{Prefix, V}].

differing(A, B) ->
    MA = maps:from_list(A),
    MB = maps:from_list(B),
    [#{fact => K, a => maps:get(K, MA, null), b => maps:get(K, MB, null)}
     || K <- lists:usort(maps:keys(MA) ++ maps:keys(MB)),
        maps:get(K, MA, null) =/= maps:get(K, MB, null),
        not lists:member(K, [<<"machine.load1">>, <<"machine.frequency.current_khz">>,
                             <<"vm.timer_overshoot_us">>])].
