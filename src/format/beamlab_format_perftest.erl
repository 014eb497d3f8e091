%%% @doc Reads the text RabbitMQ PerfTest prints (and `beamlab amqp', which
%%% keeps its format): the per-interval lines
%%% (`id: ID, time 1.000 s, sent: 13548 msg/s, returned: 0 msg/s, ...,
%%% min/median/75th/95th/99th consumer latency: 404/5648/7770/11609/14864 µs,
%%% confirm latency: ...') and the summary (`sending rate avg: 24354 msg/s',
%%% `receiving rate avg: ...', and from PerfTest 2.19 on the total latency
%%% percentiles). Older PerfTest releases write `time: 1,000s' with the
%%% locale's decimal comma; both forms are read. Lines of any other kind
%%% are ignored. Pure: text in, figures out.
-module(beamlab_format_perftest).

-export([parse/1]).

%% min, median, 75th, 95th, 99th percentile, in microseconds.
-type percentiles() :: [non_neg_integer()].
-type interval() :: #{time_s := float(), sent => number(), returned => number(),
                      confirmed => number(), nacked => number(), received => number(),
                      consumer => percentiles(), confirm => percentiles()}.
-type summary() :: #{sent => number(), received => number(),
                     consumer => percentiles(), confirm => percentiles()}.
-type figures() :: #{id := binary() | undefined, intervals := [interval()], summary := summary()}.
-export_type([figures/0, interval/0, summary/0, percentiles/0]).

%% @doc The figures of a PerfTest run's output.
-spec parse(iodata()) -> figures().
parse(Text) ->
    Lines = binary:split(unicode:characters_to_binary(Text), [<<"\n">>, <<"\r\n">>], [global]),
    Acc = lists:foldl(fun line/2, #{id => undefined, intervals => [], summary => #{}}, Lines),
    Acc#{intervals := lists:reverse(maps:get(intervals, Acc))}.

line(Line, Acc) ->
    case re:run(Line, <<"^id: ([^,]+), (.*)$">>, [{capture, all_but_first, binary}, unicode]) of
        {match, [Id, Rest]} -> fields(Rest, Acc#{id := Id});
        nomatch -> Acc
    end.

fields(<<"time", _/binary>> = Rest, #{intervals := Is} = Acc) ->
    case re:run(Rest, <<"^time:? ([0-9]+(?:[.,][0-9]+)?) ?s, (.*)$">>, [{capture, all_but_first, binary}]) of
        {match, [T, Fields]} ->
            I = maps:merge(#{time_s => number(T)}, interval_fields(Fields)),
            Acc#{intervals := [I | Is]};
        nomatch -> Acc
    end;
fields(Rest, #{summary := S} = Acc) ->
    Rate = fun(Key, Re) ->
                   case re:run(Rest, Re, [{capture, all_but_first, binary}]) of
                       {match, [V]} -> #{Key => number(V)};
                       nomatch -> #{}
                   end
           end,
    Lat = fun(Key, Re) ->
                  case re:run(Rest, Re, [{capture, all_but_first, binary}, unicode]) of
                      {match, [V]} -> #{Key => percentiles(V)};
                      nomatch -> #{}
                  end
          end,
    New = maps:merge(maps:merge(Rate(sent, <<"^sending rate avg: ([0-9.,]+) msg/s">>),
                                Rate(received, <<"^receiving rate avg: ([0-9.,]+) msg/s">>)),
                     maps:merge(Lat(consumer, <<"^consumer latency min/median/75th/95th/99th ([0-9/]+) ">>),
                                Lat(confirm, <<"^confirm latency min/median/75th/95th/99th ([0-9/]+) ">>))),
    Acc#{summary := maps:merge(S, New)}.

interval_fields(Fields) ->
    Rates = [{binary_to_atom(K), number(V)}
             || [K, V] <- matches(Fields, <<"(sent|returned|confirmed|nacked|received): ([0-9.,]+) msg/s">>)],
    Lats = [{binary_to_atom(K), percentiles(V)}
            || [K, V] <- matches(Fields, <<"(consumer|confirm) latency: ([0-9/]+) ">>)],
    maps:from_list(Rates ++ Lats).

matches(Subject, Re) ->
    case re:run(Subject, Re, [global, {capture, all_but_first, binary}, unicode]) of
        {match, Ms} -> Ms;
        nomatch -> []
    end.

percentiles(V) ->
    [binary_to_integer(P) || P <- binary:split(V, <<"/">>, [global]), P =/= <<>>].

%% PerfTest prints rates as integers ("24354", below 10 "2.5"); old
%% releases wrote times with a decimal comma ("1,000").
number(B) ->
    Dot = binary:replace(B, <<",">>, <<".">>),
    case binary:match(Dot, <<".">>) of
        nomatch -> float(binary_to_integer(Dot));
        _ -> binary_to_float(Dot)
    end.
