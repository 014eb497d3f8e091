%%% @doc Metric families as text: the OpenMetrics 1.0 text format
%%% (`application/openmetrics-text; version=1.0.0') or, for scrapers that
%%% do not ask for it, the Prometheus text format 0.0.4 (`text/plain;
%%% version=0.0.4'). Pure functions: `beamlab_runtime_metrics' serves
%%% what they render.
%%%
%%% A family is named without its type's suffix (`foo' for the counter
%%% whose samples are `foo_total', `foo' for the info whose sample is
%%% `foo_info'); a name given with the suffix is accepted and the suffix
%%% dropped. A family with a `unit' gets a `# UNIT' line only when its
%%% name ends in `_UNIT', as OpenMetrics requires. Families of the same
%%% name from several collectors (one per node, say) are merged into one;
%%% a later family of another type with a name already used is dropped,
%%% as is a repeated label set. Names and label names are sanitised to the
%%% allowed characters; samples whose value is not a number are skipped.
-module(beamlab_format_openmetrics).

-export([render/2, content_type/1, negotiate/1]).

-type labels() :: [{binary(), binary()}].
-type bound() :: number() | infinity.
-type histogram() :: #{buckets := [{bound(), non_neg_integer()}],  % cumulative
                       sum := number(), count := non_neg_integer()}.
-type type() :: counter | gauge | histogram | info.
-type family() :: #{name := binary(), type := type(), help := binary(),
                    unit => binary(),
                    samples := [{labels(), number() | histogram()}]}.
-type format() :: openmetrics | prometheus.
-export_type([labels/0, histogram/0, family/0, type/0, format/0]).

%% @doc The families as text in `Format'.
-spec render([family()], format()) -> iodata().
render(Families, Format) ->
    Body = [family(F, Format) || F <- merge(Families)],
    case Format of
        openmetrics -> [Body, "# EOF\n"];
        prometheus -> Body
    end.

%% @doc The HTTP `Content-Type' of `Format'.
-spec content_type(format()) -> binary().
content_type(openmetrics) -> <<"application/openmetrics-text; version=1.0.0; charset=utf-8">>;
content_type(prometheus) -> <<"text/plain; version=0.0.4; charset=utf-8">>.

%% @doc The format a scraper's `Accept' header asks for: OpenMetrics when
%% it accepts `application/openmetrics-text' at least as much as
%% `text/plain' (by q-value), the Prometheus text format otherwise.
-spec negotiate(binary() | undefined) -> format().
negotiate(undefined) ->
    prometheus;
negotiate(Accept) ->
    Ranges = [parse_range(R) || R <- binary:split(Accept, <<",">>, [global])],
    Q = fun(Type) -> lists:max([0.0 | [Qv || {T, Qv} <- Ranges, T =:= Type]]) end,
    Om = Q(<<"application/openmetrics-text">>),
    case Om > 0 andalso Om >= Q(<<"text/plain">>) of
        true -> openmetrics;
        false -> prometheus
    end.

parse_range(Range) ->
    [Type | Params] = [string:trim(P) || P <- binary:split(Range, <<";">>, [global])],
    Qs = [q(V) || P <- Params, [K, V] <- [binary:split(P, <<"=">>)], string:lowercase(K) =:= <<"q">>],
    {string:lowercase(Type), case Qs of [Qv | _] -> Qv; [] -> 1.0 end}.

q(V) ->
    case string:to_float(<<V/binary, "0">>) of
        {F, _} when is_float(F) -> F;
        _ -> case string:to_integer(V) of
                 {I, _} when is_integer(I) -> float(I);
                 _ -> 0.0
             end
    end.

%%--------------------------------------------------------------------
%% Families
%%--------------------------------------------------------------------

%% One family per name, in the order first seen; samples of later
%% families of the same name and type appended, other types dropped.
merge(Families) ->
    {Order, ByName} =
        lists:foldl(
          fun(F0, {Ord, Acc}) ->
                  F = normalise(F0),
                  Name = maps:get(name, F),
                  case Acc of
                      #{Name := Old = #{type := Type}} when Type =:= map_get(type, F) ->
                          {Ord, Acc#{Name := Old#{samples := maps:get(samples, Old) ++ maps:get(samples, F)}}};
                      #{Name := _} -> {Ord, Acc};
                      _ -> {[Name | Ord], Acc#{Name => F}}
                  end
          end, {[], #{}}, Families),
    [dedup(maps:get(N, ByName)) || N <- lists:reverse(Order)].

normalise(F = #{name := Name0, type := Type}) ->
    Name = strip_suffix(sanitise(Name0, name), Type),
    Samples = [{[{sanitise(K, label), value_text(LV)} || {K, LV} <- Labels], V}
               || {Labels, V} <- maps:get(samples, F, []), valid(Type, V)],
    F#{name := Name, samples => Samples}.

strip_suffix(Name, counter) -> strip(Name, <<"_total">>);
strip_suffix(Name, info) -> strip(Name, <<"_info">>);
strip_suffix(Name, _) -> Name.

strip(Name, Suffix) ->
    case byte_size(Name) > byte_size(Suffix) andalso
        binary:part(Name, byte_size(Name), -byte_size(Suffix)) =:= Suffix of
        true -> binary:part(Name, 0, byte_size(Name) - byte_size(Suffix));
        false -> Name
    end.

valid(info, _) -> true;
valid(histogram, #{buckets := B, sum := S, count := C}) -> is_list(B) andalso is_number(S) andalso is_integer(C);
valid(_, V) -> is_number(V).

%% A label set appears once in a family.
dedup(F = #{samples := Samples}) ->
    {Kept, _} = lists:foldl(fun({L, _} = S, {Acc, Seen}) ->
                                    Key = lists:sort(L),
                                    case Seen of
                                        #{Key := _} -> {Acc, Seen};
                                        _ -> {[S | Acc], Seen#{Key => true}}
                                    end
                            end, {[], #{}}, Samples),
    F#{samples := lists:reverse(Kept)}.

family(#{name := Name, type := Type, help := Help, samples := Samples} = F, Format) ->
    Exposed = case {Format, Type} of
                  {prometheus, counter} -> <<Name/binary, "_total">>;
                  {prometheus, info} -> <<Name/binary, "_info">>;
                  _ -> Name
              end,
    TypeText = case {Format, Type} of
                   {prometheus, info} -> "gauge";
                   _ -> atom_to_list(Type)
               end,
    Unit = case {Format, maps:get(unit, F, <<>>)} of
               {openmetrics, U} when U =/= <<>> ->
                   case strip(Name, <<"_", U/binary>>) =/= Name of
                       true -> ["# UNIT ", Name, " ", U, "\n"];
                       false -> []
                   end;
               _ -> []
           end,
    ["# TYPE ", Exposed, " ", TypeText, "\n", Unit,
     "# HELP ", Exposed, " ", escape_help(Help, Format), "\n",
     [sample(Name, Type, Labels, V) || {Labels, V} <- Samples]].

sample(Name, counter, Labels, V) ->
    line(<<Name/binary, "_total">>, Labels, number(V));
sample(Name, gauge, Labels, V) ->
    line(Name, Labels, number(V));
sample(Name, info, Labels, _) ->
    line(<<Name/binary, "_info">>, Labels, "1");
sample(Name, histogram, Labels, #{buckets := Buckets0, sum := Sum, count := Count}) ->
    Buckets = case lists:keyfind(infinity, 1, Buckets0) of
                  false -> Buckets0 ++ [{infinity, Count}];
                  _ -> Buckets0
              end,
    [[line(<<Name/binary, "_bucket">>, Labels ++ [{<<"le">>, le(Le)}], number(N)) || {Le, N} <- Buckets],
     line(<<Name/binary, "_sum">>, Labels, number(Sum)),
     line(<<Name/binary, "_count">>, Labels, number(Count))].

line(Name, [], Value) ->
    [Name, " ", Value, "\n"];
line(Name, Labels, Value) ->
    [Name, "{", lists:join(",", [[K, "=\"", escape_value(V), "\""] || {K, V} <- Labels]), "} ",
     Value, "\n"].

%%--------------------------------------------------------------------
%% Text of names, values and numbers
%%--------------------------------------------------------------------

%% Metric names: [a-zA-Z_:][a-zA-Z0-9_:]*; label names: no colon.
sanitise(Name, Kind) ->
    B = value_text(Name),
    Clean = << <<(ok_char(C, Kind))>> || <<C>> <= B >>,
    case Clean of
        <<D, _/binary>> when D >= $0, D =< $9 -> <<"_", Clean/binary>>;
        <<>> -> <<"_">>;
        _ -> Clean
    end.

ok_char(C, _) when C >= $a, C =< $z; C >= $A, C =< $Z; C >= $0, C =< $9; C =:= $_ -> C;
ok_char($:, name) -> $:;
ok_char(_, _) -> $_.

%% Label values and help are UTF-8: anything else is read as Latin-1.
value_text(B) when is_binary(B) ->
    case unicode:characters_to_binary(B) of
        U when is_binary(U) -> U;
        _ -> unicode:characters_to_binary(B, latin1)
    end;
value_text(A) when is_atom(A) -> atom_to_binary(A);
value_text(I) when is_integer(I) -> integer_to_binary(I);
value_text(L) when is_list(L) ->
    case unicode:characters_to_binary(L) of
        U when is_binary(U) -> U;
        _ -> value_text(iolist_to_binary(io_lib:format("~w", [L])))
    end;
value_text(T) -> iolist_to_binary(io_lib:format("~w", [T])).

escape_value(V) ->
    binary:replace(binary:replace(binary:replace(V, <<"\\">>, <<"\\\\">>, [global]),
                                  <<"\"">>, <<"\\\"">>, [global]),
                   <<"\n">>, <<"\\n">>, [global]).

%% OpenMetrics escapes the double quote in help text too; 0.0.4 does not.
escape_help(Help, Format) ->
    B = binary:replace(binary:replace(value_text(Help), <<"\\">>, <<"\\\\">>, [global]),
                       <<"\n">>, <<"\\n">>, [global]),
    case Format of
        openmetrics -> binary:replace(B, <<"\"">>, <<"\\\"">>, [global]);
        prometheus -> B
    end.

number(I) when is_integer(I) -> integer_to_binary(I);
number(F) when is_float(F) -> float_to_binary(F, [short]).

%% Bucket bounds as canonical numbers: 1 is "1.0", infinity "+Inf".
le(infinity) -> <<"+Inf">>;
le(N) -> float_to_binary(float(N), [short]).
