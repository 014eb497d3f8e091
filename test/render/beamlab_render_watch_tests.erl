-module(beamlab_render_watch_tests).
-include_lib("eunit/include/eunit.hrl").

proc(Pid, Name, Reds, Q, Mem) ->
    #{<<"pid">> => Pid, <<"name">> => Name, <<"current_function">> => <<"m:f/0">>,
      <<"reductions">> => Reds, <<"message_queue_len">> => Q, <<"memory">> => Mem}.

doc() ->
    Top1 = #{<<"by_reductions">> => [proc(<<"<1.2.3>">>, <<"spinner">>, 100, 0, 10), proc(<<"<1.9.3>">>, <<"idle">>, 1, 5, 900)],
             <<"by_message_queue">> => [proc(<<"<1.9.3>">>, <<"idle">>, 1, 5, 900)],
             <<"by_memory">> => [proc(<<"<1.9.3>">>, <<"idle">>, 1, 5, 900)]},
    Top2 = #{<<"by_reductions">> => [proc(<<"<1.2.3>">>, <<"spinner">>, 200, 0, 10)],
             <<"by_message_queue">> => [], <<"by_memory">> => []},
    #{params => #{<<"node">> => <<"n@h">>},
      telemetry => #{<<"node">> => <<"n@h">>, <<"samples">> => 2, <<"interval_ms">> => 500,
                     <<"node_down">> => true, <<"node_down_reason">> => <<"gone">>,
                     <<"util">> => [50.0, 60.0], <<"util_schedulers">> => [[100.0, 0.0], [98.0, 22.0]],
                     <<"memory">> => #{<<"total">> => [1000, 2000]},
                     <<"top">> => [Top1, Top2]}}.

summary_sums_reductions_per_process_test() ->
    [{<<"<1.2.3>">>, <<"spinner">>, _, 300, 0, 10}, {<<"<1.9.3>">>, <<"idle">>, _, 1, 5, 900}] =
        beamlab_render_watch:summary(maps:get(telemetry, doc())).

render_test() ->
    Text = unicode:characters_to_binary(beamlab_render_watch:render(doc())),
    [?assertNotEqual(nomatch, binary:match(Text, S), S)
     || S <- [<<"n@h: 2 samples every 500 ms (the node went down: gone)">>, <<"scheduler util %">>,
              <<"55.0">>, <<"schedulers (mean util %): 99 11">>, <<"spinner">>]].

render_empty_test() ->
    Text = unicode:characters_to_binary(beamlab_render_watch:render(#{params => #{}, telemetry => #{}})),
    ?assertNotEqual(nomatch, binary:match(Text, <<"no samples recorded">>)).
