%%% @doc One schema, two front ends (#31): option maps generated from
%%% each experiment kind's schema (`options/0') are given to the command
%%% line (as its flags, parsed and turned into the experiment as
%%% `beamlab KIND ...' does) and to the library (as the map the public API
%%% takes, turned into the experiment and checked as `beamlab:KIND/2'
%%% does). Both must accept the same maps and refuse the same ones for the
%%% same reason: the library's reason, formatted naming flags, is the
%%% command line's line.
%%%
%%% The values are drawn around each option's bounds (below the minimum,
%%% at it, inside, at the maximum, beyond it), of the form the flag's
%%% parser reads (integers for an integer flag, decimals for a flag read as
%%% text). A kind whose schema declares no bounded option with a flag has
%%% nothing to generate; `fronts/1' says how each kind is reached.
-module(prop_beamlab_schema_fronts).

-include_lib("proper/include/proper.hrl").
-include_lib("eunit/include/eunit.hrl").

-export([prop_cli_and_api_agree/0]).

%% The kinds, their command and how the library builds their experiment.
fronts(amqp) ->
    {ok, beamlab_command_amqp, fun(Map) -> beamlab_experiment_opts:amqp(Map) end};
fronts(bench) ->
    %% The library's `squeeze' is `true' or the map of its bounds.
    {ok, beamlab_command_run,
     fun(Map) ->
             Bounds = maps:with([min, max, step, threshold], Map),
             Api = case maps:get(squeeze, Map, false) of
                       true when map_size(Bounds) > 0 -> (maps:without(maps:keys(Bounds), Map))#{squeeze => Bounds};
                       _ -> Map
                   end,
             beamlab_experiment_opts:benchmark(["ok."], Api)
     end};
fronts(suite) ->
    {ok, beamlab_command_suite, fun(Map) -> beamlab_experiment_opts:suite(["ring"], Map) end};
fronts(matrix) ->
    {ok, beamlab_command_matrix, fun(Map) -> beamlab_experiment_opts:matrix({benchmark, ["ok."], #{}}, Map) end};
fronts(check) ->
    {ok, beamlab_command_check, fun(Map) -> beamlab_experiment_opts:check(Map) end};
fronts(doctor) ->
    {ok, beamlab_command_doctor, fun(Map) -> beamlab_experiment_opts:doctor(Map) end};
fronts(_) ->
    none.

%% The command line's positional arguments before the flags.
args(bench) -> ["ok."];
args(suite) -> ["ring"];
args(_) -> [].

%% The command line's words after the flags (a matrix's inner command).
tail(matrix) -> ["--", "run", "ok."];
tail(_) -> [].

%% Maps both front ends can say: a squeeze's bounds only with a squeeze
%% (the library's map cannot give them alone); `max_time' left out (seconds
%% on the command line, milliseconds in the library).
shape(bench, Pairs) ->
    Squeeze = lists:any(fun({#{name := squeeze}, true}) -> true; (_) -> false end, Pairs),
    [P || {#{name := N}, _} = P <- Pairs, N =/= max_time,
          Squeeze orelse not lists:member(N, [min, max, step, threshold])];
shape(check, Pairs) ->
    %% (a comparison: what only it uses is reached)
    [{opt(check, against), "HEAD"} | Pairs];
shape(_, Pairs) ->
    Pairs.

%% Options of a kind worth generating: bounded or typed, reached by a flag.
generated(Kind) ->
    {ok, Mod} = beamlab_experiment_kind:find(Kind),
    {ok, Cmd, _} = fronts(Kind),
    Flags = Cmd:options(),
    %% numbers, and flags (booleans); the text forms of fractions, enums
    %% and strings are the command line's own
    %% (bounded in the flag's units: its bounds are the flag's)
    [{maps:merge(O, maps:with([max], F)), T}
     || O <- Mod:options(), maps:is_key(short, O) orelse maps:is_key(long, O),
        maps:is_key(type, O), F <- [flag_of(O, Flags)], T <- [maps:get(type, F, none)],
               lists:member(T, [integer, pos_integer, non_neg_integer, number, pos_number, quantity,
                                string, boolean]),
               T =/= string orelse lists:member(maps:get(type, O), [number, pos_number,
                                                                   {one_of, [pos_number, {enum, [undefined]}]},
                                                                   {one_of, [number, {enum, [infinity]}]}])].

%% The command line's flag of a schema option (how its text is read).
flag_of(O, Flags) ->
    case [F || F <- Flags, same_flag(O, F)] of
        [F | _] -> F;
        [] -> #{}
    end.

same_flag(#{short := S}, #{short := S}) -> true;
same_flag(#{short := _}, _) -> false;
same_flag(#{long := L}, #{long := L}) -> true;
same_flag(_, _) -> false.

kinds() ->
    [M:name() || M <- beamlab_experiment_kind:all(), fronts(M:name()) =/= none].

%%--------------------------------------------------------------------
%% Generators

%% A value around the option's bounds, of the form its flag reads.
value(_Opt, boolean) ->
    true;
value(Opt, CliType) ->
    Min = maps:get(min, Opt, 0),
    Max = maps:get(max, Opt, 1000),
    Integer = lists:member(CliType, [integer, pos_integer, non_neg_integer, quantity]),
    Ints = oneof([range(-3, 3), Max, Max + 1, range(Max - 2, Max + 2), range(0, min(Max, 100000)),
                  integer(-2, 2)]),
    case Integer of
        true -> Ints;
        false -> oneof([Ints, Min, Min / 2, ?LET(F, float(0.0, 1.0), F * Max * 1.1)])
    end.

option_map(Kind) ->
    Opts = generated(Kind),
    ?LET(Picked, list(oneof([{O, T} || {O, T} <- Opts])),
         ?LET(Values, [{O, value(O, T)} || {O, T} <- lists:ukeysort(1, Picked)],
              %% in the schema's order: the order of the checks
              [{O, V} || O0 <- [O || {O, _} <- Opts], {O, V} <- Values, O =:= O0])).

kind_and_map() ->
    ?LET(Kind, oneof(kinds()), ?LET(Pairs, option_map(Kind), {Kind, shape(Kind, Pairs)})).

%%--------------------------------------------------------------------
%% The two front ends

%% The command line: the flags parsed, then the experiment built (as the
%% command does, before anything runs).
cli(Kind, Pairs) ->
    {ok, Cmd, _} = fronts(Kind),
    Argv = args(Kind) ++ lists:append([case V of
                                           true -> [flag(O)];
                                           _ -> [flag(O), text(V)]
                                       end || {O, V} <- Pairs]) ++ tail(Kind),
    case beamlab_cli_args:parse(Argv, Cmd:options()) of
        {error, Msg} ->
            {refused, flat(Msg)};
        {ok, Parsed} ->
            try Cmd:experiment(Parsed#{command => atom_to_list(Kind), argv => Argv}) of
                _ -> accepted
            catch
                throw:{beamlab_cli_error, usage, Msg} -> {refused, flat(Msg)}
            end
    end.

%% The library: the map as the API takes it, the experiment built and
%% checked; a refusal formatted naming flags.
api(Kind, Pairs) ->
    {ok, _, Build} = fronts(Kind),
    {ok, Mod} = beamlab_experiment_kind:find(Kind),
    %% in the keys' units (the flag's seconds are the key's milliseconds)
    Map = beamlab_schema:from_flags(Mod:options(), maps:from_list([{maps:get(name, O), V} || {O, V} <- Pairs])),
    Result = case Build(Map) of
                 {ok, Exp} -> checked(Kind, Exp);
                 {error, _} = E -> E
             end,
    case Result of
        ok -> accepted;
        {error, {Kind, {option, R}}} -> {refused, flat(beamlab_schema:format_error(R, flag))};
        {error, Other} -> {other, Other}
    end.

%% What the command line checks before it runs: a check's project (its
%% bench directory) is read when it runs, by both.
checked(check, _Exp) -> ok;
checked(_, Exp) -> beamlab_experiment:check(Exp).

flag(#{short := S}) -> "-" ++ S;
flag(#{long := L}) -> "--" ++ L.

text(V) when is_list(V) -> V;
text(V) when is_integer(V) -> integer_to_list(V);
text(V) when is_float(V) -> float_to_list(V, [short]).

flat(Chars) -> unicode:characters_to_list(Chars).

%%--------------------------------------------------------------------
%% Properties

prop_cli_and_api_agree() ->
    ?FORALL({Kind, Pairs}, kind_and_map(),
            begin
                Cli = cli(Kind, Pairs),
                Api = api(Kind, Pairs),
                ?WHENFAIL(io:format("~p ~p~n  cli: ~p~n  api: ~p~n", [Kind, Pairs, Cli, Api]),
                          collect(element(1, {Cli}) =:= accepted, Cli =:= Api))
            end).

%% Both refusing and accepting happen (the generator reaches both sides).
both_sides_are_reached_test() ->
    ?assertEqual([amqp, bench, check, doctor, matrix, suite], lists:sort(kinds())),
    ?assertMatch({refused, "invalid value '-5' for -r: expected a number >= 0"},
                 cli(amqp, [{opt(amqp, rate), -5}])),
    ?assertEqual(cli(amqp, [{opt(amqp, rate), -5}]), api(amqp, [{opt(amqp, rate), -5}])),
    ?assertEqual(accepted, cli(amqp, [{opt(amqp, rate), 5}])),
    ?assertEqual(accepted, api(amqp, [{opt(amqp, rate), 5}])),
    ?assertEqual({refused, "nothing to run: -x 0 and -y 0 (give producers, consumers or --closed-loop)"},
                 api(amqp, [{opt(amqp, producers), 0}, {opt(amqp, consumers), 0}])).

%% The suite's reasons, its own rules included, are the same from both
%% front ends; a flag in seconds is a key in milliseconds.
suite_fronts_agree_test() ->
    Timeout = opt(suite, timeout),
    ?assertEqual({refused, "invalid value '700000' for --timeout: at most 604800 (one week)"},
                 cli(suite, [{Timeout, 700000}])),
    ?assertEqual(cli(suite, [{Timeout, 700000}]), api(suite, [{Timeout, 700000}])),
    ?assertEqual(accepted, api(suite, [{Timeout, 5}])),
    ?assertEqual(cli(suite, [{opt(suite, repeat), 0}]), api(suite, [{opt(suite, repeat), 0}])),
    {error, R} = beamlab_experiment_opts:suite([ring], #{preset => "termite"}),
    ?assertEqual("preset runs the preset's rows: do not also name workloads (ring)",
                 flat(beamlab:format_error(R))),
    {error, R2} = beamlab_experiment_opts:suite([], #{node => "bench@host"}),
    ?assertEqual("node names the remote node of a preset's rows: add preset", flat(beamlab:format_error(R2))),
    {error, R3} = beamlab_experiment_opts:suite([], #{timeout => 0}),
    ?assertEqual("invalid value '0' for timeout: expected a positive integer", flat(beamlab:format_error(R3))).

%% The matrix's rules are the same from both front ends.
matrix_fronts_agree_test() ->
    ?assertEqual({refused, "invalid value '0' for -n: expected a positive integer"},
                 cli(matrix, [{opt(matrix, repeat), 0}])),
    ?assertEqual(cli(matrix, [{opt(matrix, repeat), 0}]), api(matrix, [{opt(matrix, repeat), 0}])),
    ?assertEqual(accepted, api(matrix, [{opt(matrix, repeat), 2}])),
    {error, R} = beamlab_experiment_opts:matrix({benchmark, ["ok."], #{}}, #{otp => ["/tmp"]}),
    ?assertEqual("otp needs target or a target command (use erl for beamlab VMs)", flat(beamlab:format_error(R))),
    {error, R2} = beamlab_experiment_opts:matrix({benchmark, ["ok."], #{}}, #{sweep => "x"}),
    ?assertEqual("bad scheduler range \"x\" (use 1..4, 1,2,4 or 1..max)", flat(beamlab:format_error(R2))),
    {error, R3} = beamlab_experiment_opts:matrix({benchmark, ["ok."], #{}},
                                                 #{target => #{cmd => "x", node => "nohost"}}),
    ?assertEqual("target: 'nohost' is not a node name (name@host)", flat(beamlab:format_error(R3))).

%% The check's and the doctor's rules are the same from both front ends.
check_and_doctor_fronts_agree_test() ->
    Against = {opt(check, against), "HEAD"},
    ?assertEqual({refused, "--rounds needs --against REF"}, cli(check, [{opt(check, rounds), 12}])),
    ?assertEqual(cli(check, [{opt(check, rounds), 12}]), api(check, [{opt(check, rounds), 12}])),
    ?assertEqual({refused, "--rounds 3 cannot reach p < 0.01: even rounds that all agree need at least 8"},
                 cli(check, [Against, {opt(check, rounds), 3}])),
    ?assertEqual(cli(check, [Against, {opt(check, rounds), 3}]), api(check, [Against, {opt(check, rounds), 3}])),
    ?assertEqual(accepted, api(check, [Against, {opt(check, rounds), 8}])),
    ?assertEqual(cli(check, [{opt(check, timeout), 700000}]), api(check, [{opt(check, timeout), 700000}])),
    ?assertEqual(cli(check, [Against, {opt(check, vm_args), "+S '1"}]),
                 api(check, [Against, {opt(check, vm_args), "+S '1"}])),
    ?assertEqual({refused, "--vm-args: unterminated ' quote"}, api(check, [Against, {opt(check, vm_args), "+S '1"}])),
    {error, R} = beamlab_experiment_opts:check(#{against => "HEAD", threshold => 0}),
    ?assertEqual("invalid value '0' for threshold: expected a positive number", flat(beamlab:format_error(R))),
    ?assertEqual({refused, "invalid value '51' for --reps: at most 50 (fresh VMs per remedy)"},
                 api(doctor, [{opt(doctor, reps), 51}])),
    ?assertEqual(cli(doctor, [{opt(doctor, reps), 51}]), api(doctor, [{opt(doctor, reps), 51}])),
    ?assertEqual(cli(doctor, [{opt(doctor, schedulers), "0,x"}]), api(doctor, [{opt(doctor, schedulers), "0,x"}])),
    ?assertEqual(accepted, api(doctor, [{opt(doctor, schedulers), "1,2"}])),
    {error, R2} = beamlab_experiment_opts:doctor(#{vm => "+S '1"}),
    ?assertEqual("vm +S '1: an unterminated quote", flat(beamlab:format_error(R2))).

%% The library's own line names the key.
api_line_names_the_key_test() ->
    {error, R} = beamlab_experiment_opts:amqp(#{rate => -5}),
    ?assertEqual("invalid value '-5' for rate: expected a number >= 0", flat(beamlab:format_error(R))),
    {error, R2} = beamlab_experiment_opts:amqp(#{producers => 200000}),
    ?assertEqual("invalid value '200000' for producers: at most 100000 (connections to one broker)",
                 flat(beamlab:format_error(R2))).

opt(Kind, Name) ->
    {ok, Mod} = beamlab_experiment_kind:find(Kind),
    {ok, O} = beamlab_schema:find(Name, Mod:options()),
    O.

cli_and_api_agree_test_() ->
    {timeout, 120,
     ?_assert(proper:quickcheck(prop_cli_and_api_agree(), [{numtests, 300}, {to_file, user}]))}.
