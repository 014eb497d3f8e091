%%% @doc A profile document (`beamlab profile') in speedscope's file format
%%% (https://www.speedscope.app/file-format-schema.json): one sampled
%%% profile whose stacks are the document's folded stacks, root first (the
%%% thread type, then the outermost function), each weighted by its
%%% samples, over the frames they name. Opens in speedscope offline
%%% (`npm install -g speedscope', `speedscope FILE') or on its web page,
%%% which reads the file in the browser. Pure.
-module(beamlab_render_speedscope).

-export([render/1, format_error/1]).

-define(SCHEMA, <<"https://www.speedscope.app/file-format-schema.json">>).

%% @doc The speedscope file of a document with a profile.
%% A capture's profile (`beamlab profile --node N --process P') is its
%% timeline: the stacks in time order, each weighted by its milliseconds,
%% so speedscope's time-order view is a flame chart.
-spec render(beamlab_result:result()) -> {ok, iodata()} | {error, no_profile}.
render(#{extra := #{<<"profile">> := #{<<"stacks">> := Stacks0} = P} = Extra} = Doc) when is_list(Stacks0) ->
    Stacks = case Extra of
                 #{<<"capture">> := #{<<"timeline">> := [_ | _] = Timeline}} ->
                     [{binary:split(S, <<";">>, [global]), Ms}
                      || [_, Ms, S] <- Timeline, is_binary(S), is_integer(Ms), Ms > 0];
                 _ ->
                     [{binary:split(S, <<";">>, [global]), N}
                      || [S, N] <- Stacks0, is_binary(S), is_integer(N), N > 0]
             end,
    {Index, Frames} = frames(Stacks),
    Total = lists:sum([N || {_, N} <- Stacks]),
    Name = maps:get(<<"subject">>, P, maps:get(<<"subject">>, maps:get(params, Doc), <<"profile">>)),
    #{tool := #{name := Tool, version := Vsn}} = Doc,
    File = #{<<"$schema">> => ?SCHEMA,
             exporter => <<Tool/binary, "@", Vsn/binary>>,
             name => Name,
             activeProfileIndex => 0,
             shared => #{frames => [#{name => F} || F <- Frames]},
             profiles => [#{type => <<"sampled">>, name => Name, unit => <<"none">>,
                            startValue => 0, endValue => Total,
                            samples => [[maps:get(F, Index) || F <- Fs] || {Fs, _} <- Stacks],
                            weights => [N || {_, N} <- Stacks]}]},
    {ok, [beamlab_json:encode(File), $\n]};
render(_) ->
    {error, no_profile}.

%% @doc One line for each error of this module.
-spec format_error(no_profile) -> iolist().
format_error(Reason) ->
    beamlab_format_reason:line(fun error_line/1, Reason).

error_line(no_profile) ->
    "the document has no profile (speedscope's format is for `beamlab profile' documents)";
error_line(Other) ->
    %% (a reason of no kind above: printed, never raised)
    beamlab_format_reason:term(Other).


%% Each distinct frame name once, numbered in order of first appearance.
frames(Stacks) ->
    {Index, Rev, _} = lists:foldl(fun(F, {Idx, Acc, N} = St) ->
                                          case Idx of
                                              #{F := _} -> St;
                                              _ -> {Idx#{F => N}, [F | Acc], N + 1}
                                          end
                                  end, {#{}, [], 0}, lists:append([Fs || {Fs, _} <- Stacks])),
    {Index, lists:reverse(Rev)}.
