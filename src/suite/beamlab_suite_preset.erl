%%% @doc Presets of `beamlab suite': a published table as data - a list of
%%% rows (label, workload, parameters, and the published figure when there
%%% is one) plus how to lay the table out. Built-in: `termite' (the
%%% Termite/Jobim actor benchmarks, Erlang column) and `message-load' (the
%%% cloud-instance tables of the message-load benchmark). A user's preset
%%% is a file holding one Erlang term of the same shape (see docs/suite.md),
%%% read with `file:consult/1'.
%%%
%%% Shape (keys are atoms, text is a string or binary):
%%% ```
%%% #{name => "my-table", title => "...", source => "...",
%%%   layout => rows | columns,
%%%   %% rows layout: one line per row, the published figure beside ours
%%%   reference => "Erlang (published)",
%%%   %% columns layout: one column per metric of each row's point
%%%   columns => [#{header => "throughput (/s)", metric => "goodput"}, ...],
%%%   published => [#{label => "m5.24xlarge", values => [10, 39695, ...]}],
%%%   rows => [#{label => "ring 40k/4", workload => "ring",
%%%              params => #{"n" => "40000", "k" => "4"},
%%%              metric => "per_process",      % optional: default primary
%%%              published => 5, unit => "us",  % rows layout
%%%              needs => node}]}               % optional: only with --node
%%% '''
-module(beamlab_suite_preset).

-export([builtin/0, names/0, find/1, plan/4, format_error/1]).
-export_type([preset/0, row/0]).

-type text() :: binary().
-type row() :: #{label := text(), workload := text(), params := #{text() => text()},
                 metric => text(), published => number(), unit => text(),
                 needs => node}.
-type preset() :: #{name := text(), title := text(), source := text(),
                    layout := rows | columns, reference => text(),
                    columns => [#{header := text(), metric := text()}],
                    published => [#{label := text(), values := [number()]}],
                    rows := [row()]}.

%% @doc The built-in presets.
-spec builtin() -> [preset()].
builtin() ->
    [termite(), message_load()].

%% @doc Names of the built-in presets.
-spec names() -> [binary()].
names() -> [N || #{name := N} <- builtin()].

%% The Termite paper's Erlang benchmarks as re-measured for the Jobim
%% comparison: Erlang column, same hardware as Jobim. Published text reads
%% "fib(534)"; the Termite benchmark is fib(34).
termite() ->
    Local = fun(Size) -> #{<<"vm">> => <<"local">>, <<"payload">> => <<"list">>,
                           <<"size">> => Size} end,
    Peer = fun(Size) -> #{<<"vm">> => <<"peer">>, <<"payload">> => <<"list">>,
                          <<"size">> => Size} end,
    Remote = fun(Size) -> #{<<"vm">> => <<"remote">>, <<"payload">> => <<"list">>,
                            <<"size">> => Size} end,
    #{name => <<"termite">>,
      title => <<"Termite / Jobim actor benchmarks: published Erlang column beside this machine">>,
      source => <<"Termite paper benchmarks (alvatar/spheres test/termite/benchmarks), "
                  "Erlang figures as re-measured in 'Chasing Erlang: profiling a Clojure library'">>,
      layout => rows, reference => <<"Erlang (published)">>,
      rows => [#{label => <<"fib(34)">>, workload => <<"fib">>, params => #{<<"n">> => <<"34">>},
                 published => 585, unit => <<"ms">>},
               #{label => <<"spawn">>, workload => <<"spawn">>,
                 params => #{<<"variant">> => <<"termite">>}, published => 6.92, unit => <<"us">>},
               #{label => <<"send">>, workload => <<"send">>, params => #{},
                 published => 0.2, unit => <<"us">>},
               #{label => <<"ring 40k/0">>, workload => <<"ring">>,
                 params => #{<<"variant">> => <<"termite">>, <<"n">> => <<"40000">>, <<"k">> => <<"0">>},
                 published => 3, unit => <<"us">>},
               #{label => <<"ring 40k/4">>, workload => <<"ring">>,
                 params => #{<<"variant">> => <<"termite">>, <<"n">> => <<"40000">>, <<"k">> => <<"4">>},
                 published => 5, unit => <<"us">>},
               #{label => <<"ping-pong internal (0)">>, workload => <<"ping_pong">>,
                 params => Local(<<"0">>), published => 0.7, unit => <<"us">>},
               #{label => <<"ping-pong internal (1000)">>, workload => <<"ping_pong">>,
                 params => Local(<<"1000">>), published => 16, unit => <<"us">>},
               #{label => <<"ping-pong same node (0)">>, workload => <<"ping_pong">>,
                 params => Peer(<<"0">>), published => 58, unit => <<"us">>},
               #{label => <<"ping-pong same node (1000)">>, workload => <<"ping_pong">>,
                 params => Peer(<<"1000">>), published => 182, unit => <<"us">>},
               #{label => <<"ping-pong remote (0)">>, workload => <<"ping_pong">>,
                 params => Remote(<<"0">>), published => 3267, unit => <<"us">>, needs => node},
               #{label => <<"ping-pong remote (1000)">>, workload => <<"ping_pong">>,
                 params => Remote(<<"1000">>), published => 16556, unit => <<"us">>, needs => node}]}.

%% The message-load benchmark's cloud-instance tables (96 and 192 Erlang
%% processes; avg latency us, throughput, flushput, total per second).
message_load() ->
    Row = fun(Procs) -> #{label => <<"this machine, ", Procs/binary, " procs">>,
                          workload => <<"message_load">>,
                          params => #{<<"variant">> => <<"original">>, <<"procs">> => Procs}} end,
    Pub = fun(Inst, Cpus, Procs, Vals) ->
                  #{label => iolist_to_binary([Inst, " (", Cpus, " cpus, ", Procs, " procs)"]),
                    values => Vals}
          end,
    #{name => <<"message-load">>,
      title => <<"message-load benchmark: this machine in the columns of the cloud-instance tables">>,
      source => <<"jessestimpson/message_load_benchmark_public; published rows: after 5 min "
                  "warm-up, 60 s measured (use --profile full for those periods)">>,
      layout => columns,
      columns => [#{header => <<"avg latency (us)">>, metric => <<"latency_mean">>},
                  #{header => <<"throughput (/s)">>, metric => <<"goodput">>},
                  #{header => <<"flushput (/s)">>, metric => <<"flushput">>},
                  #{header => <<"total (/s)">>, metric => <<"total">>}],
      published => [Pub("m5.24xlarge", "96", "96", [10, 39695, 2320, 42015]),
                    Pub("c7i.metal-24xl", "96", "96", [11, 40109, 1201, 41310]),
                    Pub("c7i.24xlarge", "96", "96", [772, 5620, 4074, 9694]),
                    Pub("c7i.metal-48xl", "192", "96", [12, 40225, 1026, 41251]),
                    Pub("m5.24xlarge", "96", "192", [8, 92782, 1297, 94073]),
                    Pub("c7i.metal-24xl", "96", "192", [8, 92404, 1349, 93753]),
                    Pub("c7i.24xlarge", "96", "192", [3962, 1987, 4081, 6068]),
                    Pub("c7i.metal-48xl", "192", "192", [957, 6779, 3456, 10245])],
      rows => [Row(<<"96">>), Row(<<"192">>)]}.

%% @doc A built-in preset by name, else a file holding one preset term.
-spec find(string()) -> {ok, preset()} | {error, term()}.
find(NameOrFile) ->
    Name = unicode:characters_to_binary(NameOrFile),
    case [P || #{name := N} = P <- builtin(), N =:= Name] of
        [P] -> {ok, P};
        [] ->
            case filelib:is_file(beamlab_input_text:native_name(NameOrFile)) of
                false -> {error, {unknown_preset, Name}};
                true ->
                    case beamlab_input_terms:consult(NameOrFile) of
                        {ok, [Term]} -> validate(Term);
                        {ok, _} -> {error, {bad_preset, Name, "the file must hold exactly one term"}};
                        {error, R} -> {error, {bad_preset, Name, beamlab_input_terms:format_error(R)}}
                    end
            end
    end.

validate(T) when is_map(T) ->
    try
        Layout = case maps:get(layout, T, rows) of
                     L when L =:= rows; L =:= columns -> L;
                     _ -> throw("layout must be rows or columns")
                 end,
        Rows = case maps:get(rows, T, undefined) of
                   [_ | _] = Rs -> [row(R) || R <- Rs];
                   _ -> throw("rows must be a non-empty list")
               end,
        Base = #{name => txt(maps:get(name, T, <<"preset">>)),
                 title => txt(maps:get(title, T, maps:get(name, T, <<"preset">>))),
                 source => txt(maps:get(source, T, <<"">>)),
                 layout => Layout, rows => Rows,
                 reference => txt(maps:get(reference, T, <<"published">>))},
        Cols = [#{header => txt(maps:get(header, C)), metric => txt(maps:get(metric, C))}
                || C <- maps:get(columns, T, [])],
        Layout =:= columns andalso Cols =:= [] andalso throw("a columns layout needs columns"),
        Pub = [#{label => txt(maps:get(label, P)), values => [num(V) || V <- maps:get(values, P)]}
               || P <- maps:get(published, T, [])],
        {ok, Base#{columns => Cols, published => Pub}}
    catch
        throw:Why -> {error, {bad_preset, preset_name(T), Why}};
        error:_ -> {error, {bad_preset, preset_name(T),
                            "a row, column or published line lacks a key or has a bad value"}}
    end;
validate(_) ->
    {error, {bad_preset, <<"preset">>, "the term must be a map"}}.

row(#{label := L, workload := W} = R) ->
    Params = maps:fold(fun(K, V, A) -> A#{txt(K) => param_txt(V)} end, #{}, maps:get(params, R, #{})),
    Base = #{label => txt(L), workload => txt(W), params => Params},
    Opt = maps:with([metric, published, unit, needs], R),
    maps:merge(Base, maps:map(fun(metric, V) -> txt(V);
                                 (unit, V) -> txt(V);
                                 (published, V) -> num(V);
                                 (needs, node) -> node;
                                 (needs, _) -> throw("needs must be node")
                              end, Opt));
row(_) -> throw("every row needs a label and a workload").

preset_name(T) ->
    try txt(maps:get(name, T, <<"preset">>))
    catch _:_ -> <<"preset">>
    end.

%% Text of a preset: valid UTF-8 whatever the file held.
txt(B) when is_binary(B) -> unicode:characters_to_binary(beamlab_input_text:decode(B));
txt(A) when is_atom(A) -> atom_to_binary(A);
txt(L) when is_list(L) ->
    try unicode:characters_to_binary(L) of
        B when is_binary(B) -> B;
        _ -> throw("text fields (name, title, labels...) must be strings")
    catch error:badarg -> throw("text fields (name, title, labels...) must be strings")
    end;
txt(_) -> throw("text fields (name, title, labels...) must be strings").

param_txt(V) when is_integer(V) -> integer_to_binary(V);
param_txt(V) when is_float(V) -> float_to_binary(V, [short]);
param_txt(V) -> txt(V).

num(V) when is_number(V) -> V;
num(_) -> throw("published values must be numbers").

%% @doc The suite plan of a preset: one point per row (rows needing a node
%% only when `Node' is given), plus the rows with the benchmark name each
%% row's figure will have. `Overrides' (workload => key => [text]) from
%% `--param' apply to every row of that workload.
-spec plan(preset(), beamlab_workload:profile(), node() | none,
           #{binary() => #{string() => [string()]}}) ->
          {ok, beamlab_suite:plan(), [map()]} | {error, term()}.
plan(#{rows := Rows}, Profile, Node, Overrides) ->
    Wanted = [R || R <- Rows, Node =/= none orelse maps:get(needs, R, none) =/= node],
    plan_rows(Wanted, Profile, Node, Overrides, [], []).

plan_rows([], _Profile, _Node, _Ov, PlanAcc, RowAcc) ->
    Names = [N || #{benchmark := N} <- RowAcc],
    case Names -- lists:usort(Names) of
        [] -> {ok, lists:reverse(PlanAcc), lists:reverse(RowAcc)};
        [Dup | _] -> {error, {same_point_twice, Dup}}
    end;
plan_rows([#{label := Label, workload := W, params := P} = Row | Rest], Profile, Node, Ov, PA, RA) ->
    RowParams0 = maps:fold(fun(K, V, A) -> A#{binary_to_list(K) => [binary_to_list(V)]} end, #{}, P),
    RowParams = case maps:get(needs, Row, none) of
                    node -> RowParams0#{"node" => [atom_to_list(Node)]};
                    none -> RowParams0
                end,
    Given = maps:merge(RowParams, maps:get(W, Ov, #{})),
    case beamlab_suite:plan([binary_to_list(W)], Profile, #{W => Given}) of
        {ok, [{Mod, [{_Swept, Params}]}]} ->
            %% Name the point after the keys the row sets, so rows differ.
            Keys = [K || #{key := K} <- beamlab_workload:param_specs(Mod),
                         maps:is_key(atom_to_list(K), Given)],
            Point = {Keys, Params},
            Name = beamlab_workload:point_name(maps:get(name, beamlab_workload:info(Mod)), Point),
            %% null: the point's primary metric (a variant may rename it).
            Metric = maps:get(metric, Row, null),
            plan_rows(Rest, Profile, Node, Ov, [{Mod, [Point]} | PA],
                      [#{label => Label, benchmark => Name, metric => Metric,
                         published => maps:get(published, Row, null),
                         unit => maps:get(unit, Row, null)} | RA]);
        {ok, _} ->
            {error, {row_sweeps, Label}};
        {error, R} ->
            {error, {row, Label, R}}
    end.

%% @doc One line per error.
-spec format_error(term()) -> iolist().
format_error(Reason) ->
    beamlab_format_reason:line(fun error_line/1, Reason).

error_line({unknown_preset, Name}) ->
    io_lib:format("unknown preset '~ts' (built in: ~ts; or give a file)",
                  [Name, lists:join(", ", names())]);
error_line({bad_preset, Name, Why}) ->
    io_lib:format("preset ~ts: ~ts", [Name, Why]);
error_line({row_sweeps, Label}) ->
    io_lib:format("preset row '~ts' gives more than one point: set a single value "
                  "for every swept parameter", [Label]);
error_line({row, Label, R}) ->
    io_lib:format("preset row '~ts': ~ts", [Label, beamlab_suite:format_error(R)]);
error_line({same_point_twice, Name}) ->
    io_lib:format("two preset rows measure the same point (~ts)", [Name]);
error_line(Other) ->
    beamlab_format_reason:term(Other).
