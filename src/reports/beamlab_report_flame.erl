%%% @doc Flame graphs in the HTML report: the model of a `profile' run
%%% (its folded stacks, the category of each frame name, the top
%%% functions) that `priv/report/flame.js' draws: for every run
%%% with a profile, an interactive flame graph (click a frame to zoom into
%%% it, click the root to zoom out, search with highlight and matched
%%% share, tooltip with samples and share), and for each later profile of
%%% the same subject a differential flame graph against the first: the
%%% later profile's stacks, each frame coloured by the change of its share
%%% of all samples (red hotter, blue cooler), normalised by each profile's
%%% total samples. The drawing code reads the embedded model only: no
%%% network.
-module(beamlab_report_flame).

-export([model/1]).

%% @doc The flame graph model of a result (`null' without a profile).
-spec model(beamlab_result:result()) -> map() | null.
model(#{extra := #{<<"profile">> := P}} = R) when is_map(P) ->
    Stacks = [[S, C] || [S, C] <- maps:get(<<"stacks">>, P, []), is_binary(S), is_integer(C)],
    #{subject => maps:get(<<"subject">>, P, maps:get(<<"subject">>, maps:get(params, R, #{}), <<"profile">>)),
      samples => maps:get(<<"samples">>, P, 0),
      stacks => Stacks,
      names => maps:get(<<"names">>, P, #{}),
      categories => maps:get(<<"categories">>, P, #{}),
      threads => maps:get(<<"threads">>, P, #{}),
      top => lists:sublist(maps:get(<<"functions">>, P, []), 15)};
model(_) ->
    null.
