%%% @doc Presets of `beamlab matrix --preset': a published study as data
%%% (its scenarios: the inner load's flags and the published figures per
%%% configuration), run as one target matrix per scenario and combined into
%%% one document whose text is the published table's layout with this
%%% machine's figures beside the published ones
%%% (`beamlab_render_matrix_preset').
%%%
%%% Built-in: `jit-study', RabbitMQ's JIT against its interpreter under
%%% PerfTest's single-queue and 100-queue scenarios (Erlang Solutions,
%%% "Performance testing the JIT compiler for the BEAM VM", 2020).
-module(beamlab_experiment_preset).

-export([builtin/0, names/0, find/1, inner/3, combine/3, format_error/1]).

-type scenario() :: #{label := binary(), flags := [string()],
                      published := #{jit | emu => #{sent := number(), received := number()}}}.
-type preset() :: #{name := binary(), title := binary(), source := binary(),
                    target := rabbitmq, flavors := [beamlab_runtime_otp:flavor()],
                    repeat := pos_integer(), duration := pos_integer(),
                    scenarios := [scenario()]}.
-export_type([preset/0, scenario/0]).

%% @doc The built-in presets.
-spec builtin() -> [preset()].
builtin() ->
    [jit_study()].

%% @doc Names of the built-in presets.
-spec names() -> [binary()].
names() ->
    [N || #{name := N} <- builtin()].

%% The published runs: PerfTest's "sending rate avg" and "receiving rate
%% avg" of one run per flavour (msg/s).
jit_study() ->
    Common = ["-f", "mandatory", "-q", "300", "-c", "100"],
    #{name => <<"jit-study">>,
      title => <<"The JIT against the interpreter: RabbitMQ loaded with PerfTest's scenarios">>,
      source => <<"Erlang Solutions, 'Performance testing the JIT compiler for the BEAM VM' (2020): "
                  "RabbitMQ 3.8 era in Docker on one large machine, OTP master 4d9f947 built with "
                  "both flavours, PerfTest 2.x; one run per flavour">>,
      target => rabbitmq, flavors => [emu, jit], repeat => 5, duration => 30,
      scenarios =>
          [#{label => <<"single queue">>,
             flags => ["-x", "1", "-y", "1", "-u", "q1" | Common],
             published => #{emu => #{sent => 24354, received => 24352},
                            jit => #{sent => 36620, received => 36612}}},
           #{label => <<"100 queues">>,
             flags => ["-x", "150", "-y", "300" | Common]
                 ++ ["--queue-pattern", "perf-test-%d", "--queue-pattern-from", "1",
                     "--queue-pattern-to", "100"],
             published => #{emu => #{sent => 37489, received => 37242},
                            jit => #{sent => 47626, received => 47390}}}]}.

%% @doc A built-in preset by name.
-spec find(string()) -> {ok, preset()} | {error, term()}.
find(Name) ->
    B = unicode:characters_to_binary(Name),
    case [P || #{name := N} = P <- builtin(), N =:= B] of
        [P] -> {ok, P};
        [] -> {error, {unknown_preset, B}}
    end.

%% @doc The inner command of a scenario: `beamlab amqp' with its flags and
%% `-z Seconds' (a --load-cmd gets the same flags as {flags}).
-spec inner(preset(), scenario(), pos_integer()) -> [string()].
inner(_Preset, #{flags := Flags}, Seconds) ->
    ["amqp" | Flags] ++ ["-z", integer_to_list(Seconds)].

%% @doc One document of the scenarios' matrices (in the preset's order):
%% every benchmark and configuration named after its scenario
%% (`single queue: flavor=emu ...'), with `params.scenario' and
%% `params.config'; `extra.preset' holds the preset with each scenario's
%% baseline configuration; `finished_at' is the last scenario's (the end
%% of the whole study, #35: it was the first's); the rest is the first
%% scenario's document's.
-spec combine(preset(), [{scenario(), beamlab_result:result()}], map()) -> beamlab_result:result().
combine(Preset, [{_, First} | _] = Runs, Params) ->
    Prefix = fun(Label, Name) -> <<Label/binary, ": ", Name/binary>> end,
    Benchmarks = lists:append(
                   [[B#{name := Prefix(L, N), group := Prefix(L, G),
                        params := Ps#{<<"scenario">> => L, <<"config">> => G}}
                     || #{name := N, group := G, params := Ps} = B <- maps:get(benchmarks, Doc)]
                    || {#{label := L}, Doc} <- Runs]),
    Configs = lists:append(
                [[C#{<<"name">> := Prefix(L, N), <<"scenario">> => L, <<"config">> => N}
                  || #{<<"name">> := N} = C <- maps:get(<<"configs">>, maps:get(extra, Doc))]
                 || {#{label := L}, Doc} <- Runs]),
    Scenarios = [S#{baseline => maps:get(<<"baseline">>, maps:get(params, Doc)),
                    command => maps:get(<<"inner_command">>, maps:get(params, Doc)),
                    published => maps:from_list([{atom_to_binary(F), V}
                                                 || {F, V} <- maps:to_list(maps:get(published, S))])}
                 || {S, Doc} <- Runs],
    Extra = (maps:get(extra, First))#{<<"configs">> => Configs,
                                      <<"preset">> => beamlab_json:canonical(
                                                        (maps:without([scenarios, flavors], Preset))#{
                                                          scenarios => Scenarios,
                                                          flavors => [atom_to_binary(F) || F <- maps:get(flavors, Preset)]})},
    Partial = lists:any(fun({_, D}) -> maps:get(partial, D) end, Runs),
    %% --ci: what ended the scenarios' rounds, the furthest from confident,
    %% and every scenario's items that did not meet it.
    Stops = [{L, By, maps:get(<<"unconfident">>, X, [])}
             || {#{label := L}, #{extra := #{<<"stopped_by">> := By} = X}} <- Runs],
    Stopped = case Stops of
                  [] -> #{};
                  _ -> #{<<"stopped_by">> => hd([R || R <- [<<"interrupted">>, <<"max_time">>, <<"max_repeat">>],
                                                      lists:keymember(R, 2, Stops)] ++ [<<"converged">>]),
                         <<"unconfident">> => [Prefix(L, U) || {L, _, Us} <- Stops, U <- Us]}
              end,
    {_, Last} = lists:last(Runs),
    Doc0 = (maps:merge(First, maps:with([finished_at], Last)))#{
             benchmarks := Benchmarks,
             params := maps:merge(maps:get(params, First), beamlab_json:canonical(Params)),
             partial := Partial},
    beamlab_result:set(extra, maps:merge(Extra, Stopped), Doc0).

%% @doc One line for each error.
-spec format_error(term()) -> iolist().
format_error(Reason) ->
    beamlab_format_reason:line(fun error_line/1, Reason).

error_line({unknown_preset, N}) ->
    io_lib:format("unknown preset '~ts' (matrix presets: ~ts)", [N, lists:join(", ", names())]);
error_line(Other) ->
    %% (a reason of no kind above: printed, never raised)
    beamlab_format_reason:term(Other).
