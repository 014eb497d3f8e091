%%% @doc One schema, two front ends (#31): option maps generated from
%%% every registered experiment kind's schema (`options/0') are given to
%%% the command line (as its flags, parsed and turned into the experiment
%%% as `beamlab COMMAND ...' does) and to the library (as the map the
%%% public API takes, turned into the experiment and checked as
%%% `beamlab:KIND/2' does). Both must accept the same maps and refuse the
%%% same ones for the same reason: the library's reason, formatted naming
%%% flags, is the command line's line.
%%%
%%% The generator is generic: every option of a kind that has a flag is
%%% drawn by its type (numbers around their bounds, fractions in both
%%% forms, enum values and one that is none of them, text, flags), its
%%% text the form the command's flag reads; an option whose flag counts in
%%% other units (`scale': seconds on the command line, milliseconds in
%%% the map) is drawn in the key's units and written in the
%%% flag's. A kind
%%% whose options have no flag yet contributes nothing; what a kind needs
%%% besides its options (the code of a benchmark, the node watched) is its
%%% front's context, {@link front/1}.
-module(prop_beamlab_schema_fronts).

-include_lib("proper/include/proper.hrl").
-include_lib("eunit/include/eunit.hrl").

-export([prop_cli_and_api_agree/0, front/1, kinds/0]).

-define(NODE, "watched@127.0.0.1").

%% @doc How a kind is reached from each front end: its command, the command
%% line's words before and after the flags, how the library builds its
%% experiment from the map, and the options that are the context (given
%% on both sides, never drawn).
front(bench) ->
    %% (the library's `squeeze' is `true' or the map of its bounds)
    #{command => beamlab_command_run, before => ["ok.", "ok."],
      api => fun(Map) ->
                     Bounds = maps:with([min, max, step, threshold], Map),
                     Api = case maps:get(squeeze, Map, false) of
                               true when map_size(Bounds) > 0 ->
                                   (maps:without(maps:keys(Bounds), Map))#{squeeze => Bounds};
                               _ -> Map
                           end,
                     beamlab_experiment_opts:benchmark(["ok.", "ok."], Api)
             end};
front(watch) ->
    #{before => ["--node", ?NODE], context => [node],
      api => fun(Map) -> beamlab_experiment_opts:watch(?NODE, Map) end};
front(profile) ->
    #{before => ["--pid", "4242"], context => [pid, node, subject],
      api => fun(Map) -> beamlab_experiment_opts:profile({pid, 4242}, Map) end};
front(capture) ->
    #{command => beamlab_command_profile, before => ["--node", ?NODE, "--process", "p"],
      context => [node, process],
      api => fun(Map) -> beamlab_experiment_opts:profile({node, ?NODE}, Map#{process => ["p"]}) end};
front(suite) ->
    #{before => ["ring"], api => fun(Map) -> beamlab_experiment_opts:suite(["ring"], Map) end};
front(matrix) ->
    #{'after' => ["--", "run", "ok."],
      api => fun(Map) -> beamlab_experiment_opts:matrix({benchmark, ["ok."], #{}}, Map) end};
front(check) ->
    %% (a comparison, so that what only it uses is reached; its project is
    %% read when it runs, by both: nothing to check before)
    #{context => [against], check => false,
      api => fun(Map) -> beamlab_experiment_opts:check(Map) end};
front(Kind) ->
    %% the library's `beamlab_experiment_opts:KIND/1' (amqp, check, doctor)
    {module, _} = code:ensure_loaded(beamlab_experiment_opts),
    case erlang:function_exported(beamlab_experiment_opts, Kind, 1) of
        true -> #{api => fun(Map) -> beamlab_experiment_opts:Kind(Map) end};
        false -> #{}
    end.

%% The command of a kind: its front's, else the one whose kind() it is,
%% else the one named after it.
command(Kind) ->
    case maps:find(command, front(Kind)) of
        {ok, Cmd} -> Cmd;
        error ->
            _ = [code:ensure_loaded(M) || {_, M} <- beamlab_command:all()],
            Named = list_to_atom("beamlab_command_" ++ atom_to_list(Kind)),
            hd([M || {_, M} <- beamlab_command:all(), erlang:function_exported(M, kind, 0),
                     M:kind() =:= Kind]
               ++ [M || {_, M} <- beamlab_command:all(), M =:= Named] ++ [none])
    end.

%% Options of a kind the generator draws: those with a flag of the
%% command's, not the front's context, of a type it can write.
generated(Kind) ->
    {ok, Mod} = beamlab_experiment_kind:find(Kind),
    case command(Kind) of
        none -> [];
        Cmd ->
            Flags = Cmd:options(),
            Context = maps:get(context, front(Kind), []),
            [{O, T} || O = #{name := N} <- Mod:options(), is_map_key(short, O) orelse is_map_key(long, O),
                       not lists:member(N, Context), T <- [cli_type(O, Flags)], drawn(O, T)]
    end.

%% The types drawn: numbers (a flag read as text whose key is a number
%% too), fractions, enums, text, flags. Lists and repeated flags are not.
drawn(O, T) ->
    %% (a flag the kind reads itself, `parse', is drawn as its library
    %% value and the text that reads as it: checked_value/1)
    is_map_key(parse, O) orelse not maps:get(multi, O, false) andalso
        (lists:member(T, [integer, pos_integer, non_neg_integer, number, pos_number, quantity, fraction,
                          boolean, cookie])
         orelse (is_tuple(T) andalso element(1, T) =:= enum)
         orelse T =:= string).

%% The type of the command line's flag for a schema option (how its text is read).
cli_type(O, Flags) ->
    case [maps:get(type, F) || F <- Flags, same_flag(O, F)] of
        [T | _] -> T;
        [] -> none
    end.

same_flag(#{short := S}, #{short := S}) -> true;
same_flag(#{short := _}, _) -> false;
same_flag(#{long := L}, #{long := L}) -> true;
same_flag(_, _) -> false.

%% @doc The kinds the property covers: a front on both sides and options to draw.
kinds() ->
    [K || M <- beamlab_experiment_kind:all(), K <- [M:name()], is_map_key(api, front(K)),
          generated(K) =/= [], not lists:member(K, pending())].

%% Kinds whose flags come from their schema but whose library front does
%% not check it yet: none (a kind is listed here, with the disagreement
%% the property found, until its fronts agree).
pending() ->
    [].

%% Maps both front ends can say: a squeeze's bounds only with a squeeze
%% (the library's map cannot give them alone).
shape(bench, Pairs) ->
    Squeeze = lists:any(fun({#{name := squeeze}, true, _}) -> true; (_) -> false end, Pairs),
    [P || {#{name := N}, _, _} = P <- Pairs, Squeeze orelse not lists:member(N, [min, max, step, threshold])];
shape(check, Pairs) ->
    [pair(check, against, "HEAD") | Pairs];
shape(amqp, Pairs) ->
    %% one URI: the TLS combination's (extra/1, first) when it drew one
    case lists:splitwith(fun({#{name := N}, _, _}) -> N =/= uri end, Pairs) of
        {Before, [Uri | After]} -> Before ++ [Uri | [P || {#{name := N}, _, _} = P <- After, N =/= uri]];
        {_, []} -> Pairs
    end;
shape(_, Pairs) ->
    Pairs.

%% What a kind's map may hold besides its flags' options: amqp's `tls'
%% map, which the command line's --tls-* flags make, drawn as a
%% combination with an amqp:// or amqps:// URI (or the default one): a CA
%% file (PEM, not PEM, missing, a directory), a client certificate with
%% its key or one without the other, a server name, --tls-insecure. With
%% `sasl' (-se) and `use_default_ssl_context' (-udsc), drawn as options
%% of the schema, the property covers the TLS rules (#31).
extra(amqp) ->
    ?LET({Uri, Ca, Client, Sni, Insecure},
         {frequency([{2, none}, {3, "amqps://127.0.0.1"}, {2, "amqp://127.0.0.1"}]),
          frequency([{3, none}, {2, "ec.pem"}, {1, oneof(["names", "missing", "."])}]),
          frequency([{3, none}, {2, both}, {1, oneof([cert, key])}]),
          frequency([{4, false}, {1, true}]), frequency([{3, false}, {1, true}])},
         tls_pairs(Uri, Ca, Client, Sni, Insecure));
extra(_) ->
    [].

%% The pairs of a TLS combination: the URI's, then the `tls' map's (its
%% flags as one argv).
tls_pairs(Uri, Ca, Client, Sni, Insecure) ->
    {ok, Tls} = beamlab_schema:find(tls, beamlab_experiment_amqp:options()),
    F = fun(Name) -> filename:join(qf_dir(), Name) end,
    Fields = [{cacertfile, "--tls-ca-file", F(Ca)} || Ca =/= none]
        ++ [{certfile, "--tls-cert-file", F("ec.pem")} || lists:member(Client, [both, cert])]
        ++ [{keyfile, "--tls-key-file", F("ec.key")} || lists:member(Client, [both, key])]
        ++ [{server_name_indication, "-sni", "b.example"} || Sni]
        ++ [{verify, "--tls-insecure", verify_none} || Insecure],
    Map = maps:from_list([{K, V} || {K, _, V} <- Fields]),
    Argv = lists:append([case V of verify_none -> [Flag]; _ -> [Flag, V] end || {_, Flag, V} <- Fields]),
    [pair(amqp, uri, Uri) || Uri =/= none] ++ [{Tls, Map, {argv, Argv}} || Fields =/= []].
%%--------------------------------------------------------------------
%% Generators: {Option, the library's value, the command line's text}

value(#{name := Name, parse := _} = Opt, string) when Name =:= interval; Name =:= duration; Name =:= rate;
                                                     Name =:= consumer_rate ->
    %% (amqp's PerfTest numbers: drawn as numbers, written as the flag's text)
    value(maps:remove(parse, Opt), string);
value(#{name := Name} = Opt, _) when is_map_key(check, Opt); is_map_key(parse, Opt) ->
    %% a text the kind checks itself (amqp's URIs, names, pattern, id):
    %% drawn valid and not
    checked_value(Name);
value(_Opt, boolean) ->
    {true, none};
value(_Opt, cookie) ->
    {"c00kie", "c00kie"};
value(_Opt, fraction) ->
    oneof([{0.05, "0.05"}, {0.05, "5%"}, {0.5, "0.5"}, {0.999, "0.999"}, {0.125, "12.5%"},
           {1, "1"}, {1.5, "1.5"}, {0, "0"}, {-0.1, "-0.1"}]);
value(_Opt, {enum, Choices}) ->
    ?LET(A, oneof(Choices ++ [bogus]), {A, atom_to_list(A)});
value(#{type := T}, string) when T =:= string; T =:= cookie; T =:= term ->
    text();
value(#{type := {one_of, Ts}} = Opt, string) ->
    %% text for a key that takes text (a baseline's label or number)
    case lists:member(string, Ts) of
        true -> text();
        false -> value(maps:remove(type, Opt), number)
    end;
value(Opt, CliType) ->
    Scale = maps:get(scale, Opt, 1),
    Min = maps:get(min, Opt, 0),
    Max = maps:get(max, Opt, 1000 * Scale),
    Integer = lists:member(CliType, [integer, pos_integer, non_neg_integer, quantity]),
    Ints = oneof([range(-3, 3), Max, Max + 1, range(Max - 2, Max + 2), range(0, min(Max, 100000)),
                  integer(-2, 2)]),
    Numbers = case Integer of
                  true when Scale > 1 ->
                      %% whole flag units (the flag reads integers)
                      MaxF = Max div Scale,
                      ?LET(I, oneof([range(-3, 3), MaxF, MaxF + 1, range(0, min(MaxF, 100000))]), I * Scale);
                  true -> Ints;
                  false when Scale > 1 ->
                      %% in the key's units; the flag's text is exact
                      oneof([Ints, Min, range(-2 * Scale, 3 * Scale), Max - 1]);
                  false -> oneof([Ints, Min, Min / 2, ?LET(F, float(0.0, 1.0), F * Max * 1.1)])
              end,
    ?LET(V, Numbers, {V, number_text(flag_units(Opt, V))}).

%% A key's value in its flag's units (an integer when it is a whole one).
flag_units(#{scale := Scale}, V) when is_integer(Scale), is_number(V) ->
    case V / Scale of
        F when F == trunc(F) -> trunc(F);
        F -> F
    end;
flag_units(_, V) ->
    V.

%% The values of an option the kind checks: {the library's value, the
%% command line's text, or {args, Words} for a value given by several
%% flags}.
checked_value(uri) ->
    ?LET(U, uri(), {U, U});
checked_value(uris) ->
    ?LET(Us, non_empty(list(uri())), {Us, lists:join(",", Us)});
checked_value(queue) ->
    ?LET(N, name(), {N, N});
checked_value(Name) when Name =:= exchange; Name =:= routing_key ->
    ?LET(N, oneof([name(), ""]), {N, N});
checked_value(queue_pattern) ->
    ?LET({P, F, T}, {oneof(["q-%d", "perf-%03d", "q", "q-%f", "q-%s-%d"]),
                     oneof([1, 3, 5]), oneof([1, 4, 100001])},
         {{P, F, T}, {args, [P, "--queue-pattern-from", integer_to_list(F),
                             "--queue-pattern-to", integer_to_list(T)]}});
checked_value(queue_file) ->
    %% files in the test's temporary directory (qf_files/0): names, none,
    %% a bad name, missing, a directory
    ?LET(F, oneof(["names", "empty", "bad", "missing", "."]),
         begin P = filename:join(qf_dir(), F), {P, P} end);
checked_value(nodes) ->
    %% (counts around the bound, names that are not; named nodes need a
    %% distributed VM to run, not drawn)
    oneof([{3, "3"}, {0, "0"}, {64, "64"}, {65, "65"}, {["nohost"], "nohost"},
           {["a@h", "b"], "a@h,b"}]);
checked_value(Name) when Name =:= variable_rate; Name =:= variable_latency; Name =:= variable_size ->
    %% PerfTest's steps: valid, a value over its fixed option's bound, a
    %% size or a step of 0, a step over a year
    Max = #{variable_rate => 1000000000, variable_latency => 60000000, variable_size => 536870912},
    M = maps:get(Name, Max),
    %% (valid ones mostly: a map of many options still reaches acceptance)
    ?LET(Steps, non_empty(list(frequency([{6, oneof([{100, 60}, {1, 5}, {M, 1}])},
                                          {1, oneof([{0, 5}, {M + 1, 1}, {5, 0}, {5, 31536001}])}]))),
         {Steps, {args, lists:join(flag_of(Name), [lists:flatten(io_lib:format("~b:~b", [V, S])) || {V, S} <- Steps])}});
checked_value(publishing_interval) ->
    frequency([{3, oneof([{5, "5"}, {0.1, "0.1"}, {2.5, "2.5"}])},
               {1, oneof([{0.05, "0.05"}, {86401, "86401"}, {0, "0"}])}]);
checked_value(body_files) ->
    %% files in the test's temporary directory: a file, two, missing, a
    %% directory
    ?LET(Fs, non_empty(list(frequency([{4, oneof(["names", "empty"])}, {1, oneof(["missing", "."])}]))),
         begin Ps = [filename:join(qf_dir(), F) || F <- Fs], {Ps, lists:join(",", Ps)} end);
checked_value(body_content_type) ->
    frequency([{4, {"text/plain", "text/plain"}}, {1, {lists:duplicate(256, $t), lists:duplicate(256, $t)}}]);
checked_value(message_properties) ->
    oneof([{#{priority => 5}, "priority=5"}, {#{content_type => <<"text/plain">>}, "contentType=text/plain"},
           {#{delivery_mode => 2, headers => #{<<"h">> => <<"v">>}}, "deliveryMode=2,h=v"}]);
checked_value(Name) when Name =:= queue_args; Name =:= consumer_args ->
    oneof([{[{<<"x-max-length">>, 10}], "x-max-length=10"}, {[{"x-a", true}, {"x-b", <<"c">>}], "x-a=true,x-b=c"}]);
checked_value(max_length_bytes) ->
    oneof([{20000000000, "20gb"}, {0, "0"}, {1000, "1kb"}]);
checked_value(max_age) ->
    oneof([{600, "PT10M"}, {1, "PT1S"}]);
checked_value(stream_segment_bytes) ->
    frequency([{3, oneof([{100000000, "100mb"}, {3000000000, "3gb"}])}, {1, oneof([{4000000000, "4gb"}, {0, "0"}])}]);
checked_value(stream_offset) ->
    oneof([{<<"first">>, "first"}, {"next", "NEXT"}, {5, "5"}]);
checked_value(recovery_interval) ->
    oneof([{{1000, 3000}, "1-3"}, {{30000, 30000}, "30"}]);
checked_value(output_file) ->
    %% a new file, a directory, a file in a directory that is not there
    ?LET(F, frequency([{4, "out.csv"}, {1, oneof([".", "missing/out.csv"])}]),
         begin P = filename:join(qf_dir(), F), {P, P} end);
checked_value(watch) ->
    frequency([{4, {"rabbit@127.0.0.1", "rabbit@127.0.0.1"}}, {1, {"nohost", "nohost"}}]);
checked_value(sasl) ->
    %% (the command line's -se)
    {external, none};
checked_value(id) ->
    ?LET(I, oneof(["run-1", "", "a\nb", lists:duplicate(201, $i), "ünï"]), {I, I}).

%% URIs that parse and that do not, a password in some (never printed).
uri() ->
    oneof(["amqp://guest:guest@127.0.0.1:5672/%2F", "amqp://127.0.0.1", "amqps://127.0.0.1:5671/v",
           "amqp://u:s3cr3t@127.0.0.1:99999/", "bogus://u:s3cr3t@h", "amqp://u:s3cr3t@h:notaport/",
           "amqp://h/%zz", "abc"]).

%% AMQP names: short, empty, longer than 255 bytes, not ASCII.
name() ->
    oneof(["q1", "", lists:duplicate(256, $q), lists:duplicate(255, $q), "ünï"]).

text() ->
    ?LET(T, oneof(["abc", "a b", "+S 2", "1", "2", "3", "0", "-1", "ok. #2"]), {T, T}).

number_text(V) when is_integer(V) -> integer_to_list(V);
number_text(V) when is_float(V) -> float_to_list(V, [short]).

option_map(Kind) ->
    Opts = generated(Kind),
    ?LET(Picked, list(oneof(Opts)),
         ?LET(Values, [{O, value(O, T)} || {O, T} <- lists:ukeysort(1, Picked)],
              %% in the schema's order: the order of the checks
              [{O, V, Text} || O0 <- [O || {O, _} <- Opts], {O, {V, Text}} <- Values, O =:= O0])).

kind_and_map() ->
    ?LET(Kind, oneof(kinds()), ?LET({Pairs, Extra}, {option_map(Kind), extra(Kind)},
                                    {Kind, shape(Kind, Extra ++ Pairs)})).

%%--------------------------------------------------------------------
%% The two front ends

%% The command line: the flags parsed, then the experiment built (as the
%% command does, before anything runs) and checked as the command's run
%% checks it.
cli(Kind, Pairs) ->
    Cmd = command(Kind),
    Front = front(Kind),
    Argv = maps:get(before, Front, [])
        ++ lists:append([case Text of
                             none -> [flag(O)];
                             {args, Words} -> [flag(O) | Words];
                             {argv, Words} -> Words;
                             _ -> [flag(O), Text]
                         end || {O, _, Text} <- Pairs])
        ++ maps:get('after', Front, []),
    case beamlab_cli_args:parse(Argv, Cmd:options()) of
        {error, Msg} ->
            {refused, flat(Msg)};
        {ok, Parsed} ->
            case Cmd:experiment(Parsed#{command => atom_to_list(Kind), argv => Argv}) of
                {ok, Exp} ->
                    case checked(Kind, Exp) of
                        ok -> accepted;
                        {error, {_, {option, R}}} -> {refused, flat(beamlab_schema:format_error(R, flag))};
                        {error, Other} -> refused(Other)
                    end;
                {error, {usage, Msg}} ->
                    {refused, flat(Msg)}
            end
    end.

%% The library: the map as the API takes it, the experiment built and
%% checked; a refusal formatted naming flags.
api(Kind, Pairs) ->
    #{api := Build} = front(Kind),
    Map = maps:from_list([{maps:get(name, O), V} || {O, V, _} <- Pairs]),
    Result = case Build(Map) of
                 {ok, Exp} -> checked(Kind, Exp);
                 {error, _} = E -> E
             end,
    case Result of
        ok -> accepted;
        {error, {_, {option, R}}} -> {refused, flat(beamlab_schema:format_error(R, flag))};
        {error, Other} -> refused(Other)
    end.

%% A refusal by the kind's own check (not the schema's): the line the
%% user reads, as both front ends print it with the kind's format_error
%% (`doctor --target rabbitmq' without its load).
refused(Reason) ->
    try {refused, flat(beamlab_experiment:format_error(Reason))}
    catch error:_ -> {other, Reason}
    end.

%% What both front ends check before anything runs.
checked(Kind, Exp) ->
    case maps:get(check, front(Kind), true) of
        true -> beamlab_experiment:check(Exp);
        false -> ok
    end.

flag(#{short := S}) -> "-" ++ S;
flag(#{long := L}) -> "--" ++ L.

%% The flag of an amqp option, to repeat it.
flag_of(Name) ->
    {ok, O} = beamlab_schema:find(Name, beamlab_experiment_amqp:options()),
    flag(O).

flat(Chars) -> unicode:characters_to_list(Chars).

%%--------------------------------------------------------------------
%% Properties

prop_cli_and_api_agree() ->
    ?FORALL({Kind, Pairs}, kind_and_map(),
            begin
                {Cli, Api} = try {cli(Kind, Pairs), api(Kind, Pairs)}
                             catch C:E:St -> {{raised, C, E, St}, none}
                             end,
                ?WHENFAIL(io:format("~p ~p~n  cli: ~p~n  api: ~p~n", [Kind, [{N, V, T} || {#{name := N}, V, T} <- Pairs], Cli, Api]),
                          collect({Kind, element(1, {Cli}) =:= accepted},
                                  Cli =:= Api andalso no_password(Cli)))
            end).

%% A URI's password is never printed in a refusal.
no_password({refused, Line}) -> string:find(Line, "s3cr3t") =:= nomatch;
no_password(_) -> true.

%% Every kind whose schema gives flags is covered (a kind whose options
%% are names only has nothing to draw until its schema is full).
every_kind_with_flags_is_covered_test() ->
    WithFlags = [K || M <- beamlab_experiment_kind:all(), K <- [M:name()],
                      lists:any(fun(O) -> is_map_key(short, O) orelse is_map_key(long, O) end, M:options())],
    ?assertEqual([], WithFlags -- (kinds() ++ pending())),
    ?assertEqual([], [amqp, bench, suite, watch, profile, capture, check] -- kinds()).

%% The matrix's rules are the same from both front ends.
matrix_fronts_agree_test() ->
    ?assertEqual({refused, "invalid value '0' for -n: expected a positive integer"},
                 cli(matrix, [fpair(matrix, repeat, 0)])),
    ?assertEqual(cli(matrix, [fpair(matrix, repeat, 0)]), api(matrix, [fpair(matrix, repeat, 0)])),
    ?assertEqual(accepted, api(matrix, [fpair(matrix, repeat, 2)])),
    {error, R} = beamlab_experiment_opts:matrix({benchmark, ["ok."], #{}}, #{otp => ["/tmp"]}),
    ?assertEqual("otp needs target or a target command (use erl for beamlab VMs)", flat(beamlab:format_error(R))),
    {error, R2} = beamlab_experiment_opts:matrix({benchmark, ["ok."], #{}}, #{sweep => "x"}),
    ?assertEqual("sweep: bad scheduler range 'x' (use 1..4, 1,2,4 or 1..max)", flat(beamlab:format_error(R2))),
    ?assertEqual({refused, "--sweep-schedulers: bad scheduler range 'x' (use 1..4, 1,2,4 or 1..max)"},
                 cli(matrix, [fpair(matrix, sweep, "x")])),
    {error, R3} = beamlab_experiment_opts:matrix({benchmark, ["ok."], #{}},
                                                 #{target => #{cmd => "x", node => "nohost"}}),
    ?assertEqual("target: 'nohost' is not a node name (name@host)", flat(beamlab:format_error(R3))).

%% A project's bench modules have no baseline: `run --bench DIR
%% --baseline N' and `beamlab:bench(Dir, #{baseline => N})' refuse it
%% with the same line (naming the flag, the key), the command line before
%% it builds the project.
bench_modules_fronts_agree_test() ->
    Argv = ["--bench", "bench", "--baseline", "2"],
    {ok, Parsed} = beamlab_cli_args:parse(Argv, beamlab_command_run:options()),
    {error, {usage, Msg}} = beamlab_command_run:experiment(Parsed#{command => "run", argv => Argv}),
    {error, {bench, {option, R}}} = beamlab_experiment_opts:bench("bench", #{baseline => 2}),
    ?assertEqual("--baseline: the benchmarks of bench modules are not compared with one another", flat(Msg)),
    ?assertEqual(flat(Msg), flat(beamlab_schema:format_error(R, flag))).

%% The check's and the doctor's rules are the same from both front ends.
check_and_doctor_fronts_agree_test() ->
    Against = fpair(check, against, "HEAD"),
    ?assertEqual({refused, "--rounds needs --against REF"}, cli(check, [fpair(check, rounds, 12)])),
    ?assertEqual(cli(check, [fpair(check, rounds, 12)]), api(check, [fpair(check, rounds, 12)])),
    ?assertEqual({refused, "--rounds 3 cannot reach p < 0.01: even rounds that all agree need at least 8"},
                 cli(check, [Against, fpair(check, rounds, 3)])),
    ?assertEqual(cli(check, [Against, fpair(check, rounds, 3)]), api(check, [Against, fpair(check, rounds, 3)])),
    ?assertEqual(accepted, api(check, [Against, fpair(check, rounds, 8)])),
    ?assertEqual(cli(check, [fpair(check, timeout, 700000)]), api(check, [fpair(check, timeout, 700000)])),
    ?assertEqual(cli(check, [Against, fpair(check, vm_args, "+S '1")]),
                 api(check, [Against, fpair(check, vm_args, "+S '1")])),
    ?assertEqual({refused, "--vm-args: unterminated ' quote"}, api(check, [Against, fpair(check, vm_args, "+S '1")])),
    {error, R} = beamlab_experiment_opts:check(#{against => "HEAD", threshold => 0}),
    ?assertEqual("invalid value '0' for threshold: expected a positive number", flat(beamlab:format_error(R))),
    ?assertEqual({refused, "invalid value '51' for --reps: at most 50 (fresh VMs per remedy)"},
                 api(doctor, [fpair(doctor, reps, 51)])),
    ?assertEqual(cli(doctor, [fpair(doctor, reps, 51)]), api(doctor, [fpair(doctor, reps, 51)])),
    ?assertEqual(cli(doctor, [fpair(doctor, schedulers, "0,x")]), api(doctor, [fpair(doctor, schedulers, "0,x")])),
    ?assertEqual(accepted, api(doctor, [fpair(doctor, schedulers, "1,2")])),
    %% a running node is read as it is: the same line from both
    Node = fpair(doctor, node, "a@127.0.0.1"),
    ?assertEqual({refused, "--node reads a running node as it is: --reps applies to the fresh VMs of the probe only"},
                 cli(doctor, [fpair(doctor, reps, 2), Node])),
    ?assertEqual(cli(doctor, [fpair(doctor, reps, 2), Node]), api(doctor, [fpair(doctor, reps, 2), Node])),
    ?assertEqual(cli(doctor, [fpair(doctor, duration, 5)]), api(doctor, [fpair(doctor, duration, 5)])),
    {error, R2} = beamlab_experiment_opts:doctor(#{vm => "+S '1"}),
    ?assertEqual("vm +S '1: an unterminated quote", flat(beamlab:format_error(R2))).

%% The broker's options of doctor --target (#32): its OTP, flavour and
%% load command, declared as matrix --target declares them; the same
%% line from both fronts.
doctor_broker_options_agree_test() ->
    Enum = fun(Name, A) -> {O, _, _} = fpair(doctor, Name, "x"), {O, A, atom_to_list(A)} end,
    Target = Enum(target, rabbitmq),
    Cases = [{[fpair(doctor, otp, "/nonexistent-otp"), Target],
              "--otp /nonexistent-otp: no bin/erl there (an OTP installation prefix)"},
             {[Enum(flavor, emu)], "--flavor is for the broker of --target rabbitmq: add it"},
             {[fpair(doctor, load_cmd, "perftest -h {uri}")],
              "--load-cmd is for the broker of --target rabbitmq: add it"},
             {[fpair(doctor, load_cmd, "  "), Target],
              "--load-cmd is empty: give the load's command line (an unset variable in a script?)"},
             {[fpair(doctor, otp, "/nonexistent-otp"), fpair(doctor, node, "a@127.0.0.1")],
              "--otp is for the broker of --target rabbitmq: add it"}],
    [begin
         ?assertEqual({Pairs, {refused, Line}}, {Pairs, cli(doctor, Pairs)}),
         ?assertEqual({Pairs, cli(doctor, Pairs)}, {Pairs, api(doctor, Pairs)})
     end || {Pairs, Line} <- Cases],
    %% A load command is a load: no amqp needed, from either front.
    LoadCmd = [fpair(doctor, load_cmd, "perftest -h {uri} {flags}"), Enum(flavor, jit), Target],
    ?assertEqual(accepted, cli(doctor, LoadCmd)),
    ?assertEqual(accepted, api(doctor, LoadCmd)),
    {ok, #{run := {doctor, D}}} = beamlab_experiment_opts:doctor(#{target => rabbitmq, flavor => "jit",
                                                                   load_cmd => "perftest -h {uri}"}),
    ?assertMatch(#{flavor := jit, load_cmd := "perftest -h {uri}", otp := none, load := #{run := {amqp, _}}}, D),
    %% an amqp given too only fills {flags}: a command without them would ignore it
    {error, R} = beamlab_experiment_opts:doctor(#{target => rabbitmq, load_cmd => "perftest -h {uri}",
                                                  load => {amqp, #{duration => 2}}}),
    ?assertEqual("--load-cmd is the broker's load: the amqp after -- only fills its {flags}, which the command "
                 "does not have (put {flags} in it, or give no amqp)", flat(beamlab:format_error(R))),
    ?assertMatch({ok, _}, beamlab_experiment_opts:doctor(#{target => rabbitmq, load_cmd => "perftest {flags}",
                                                           load => {amqp, #{duration => 2}}})).

%% A pair of an option of a kind, its value given in the flag's units
%% (the key's value converted by the schema) and the flag's text.
fpair(Kind, Name, V) ->
    {ok, Mod} = beamlab_experiment_kind:find(Kind),
    {ok, O} = beamlab_schema:find(Name, Mod:options()),
    #{Name := Key} = beamlab_schema:from_flags(Mod:options(), #{Name => V}),
    {O, Key, case V of
                 _ when is_integer(V) -> integer_to_list(V);
                 _ when is_float(V) -> float_to_list(V, [short]);
                 _ -> V
             end}.

%% The suite's reasons, its own rules included, are the same from both
%% front ends; a flag in seconds is a key in milliseconds.
suite_fronts_agree_test() ->
    Over = [pair(suite, timeout, 700000000)],
    ?assertEqual({refused, "invalid value '700000' for --timeout: at most 604800 (one week)"}, cli(suite, Over)),
    ?assertEqual(cli(suite, Over), api(suite, Over)),
    ?assertEqual(accepted, api(suite, [pair(suite, timeout, 5000)])),
    ?assertEqual(cli(suite, [pair(suite, repeat, 0)]), api(suite, [pair(suite, repeat, 0)])),
    {error, R} = beamlab_experiment_opts:suite([ring], #{preset => "termite"}),
    ?assertEqual("preset runs the preset's rows: do not also name workloads (ring)",
                 flat(beamlab:format_error(R))),
    {error, R2} = beamlab_experiment_opts:suite([], #{node => "bench@host"}),
    ?assertEqual("node names the remote node of a preset's rows: add preset", flat(beamlab:format_error(R2))),
    {error, R3} = beamlab_experiment_opts:suite([], #{timeout => 0}),
    ?assertEqual("invalid value '0' for timeout: expected a positive integer", flat(beamlab:format_error(R3))).

%% A command's flags are its kind's: every option of the kind's schema
%% that has a flag is a flag of the command, by the same name, flags,
%% default and help (nothing declared twice, nothing lost).
every_flag_of_a_kind_is_its_commands_test() ->
    [begin
         {ok, Mod} = beamlab_experiment_kind:find(Kind),
         Flags = (command(Kind)):options(),
         [?assertEqual({Kind, maps:with([name, short, long, type, default, max], F)}, {Kind, maps:with([name, short, long, type, default, max], hd([C || #{name := N} = C <- Flags, N =:= maps:get(name, F)]
                                            ++ [#{missing => F}]))})
          || F <- beamlab_schema:flags(Mod:options())]
     end || Kind <- kinds() ++ pending()].

%% Both refusing and accepting happen (the generator reaches both sides).
both_sides_are_reached_test() ->
    ?assertMatch({refused, "invalid value '-5' for -r: expected a number >= 0"},
                 cli(amqp, [pair(amqp, rate, -5)])),
    ?assertEqual(cli(amqp, [pair(amqp, rate, -5)]), api(amqp, [pair(amqp, rate, -5)])),
    ?assertEqual(accepted, cli(amqp, [pair(amqp, rate, 5)])),
    ?assertEqual(accepted, api(amqp, [pair(amqp, rate, 5)])),
    ?assertEqual({refused, "nothing to run: -x 0 and -y 0 (give producers, consumers or --closed-loop)"},
                 api(amqp, [pair(amqp, producers, 0), pair(amqp, consumers, 0)])).

%% Once, under load, the property saw the command line refuse `-A 1000
%% -q 200' where the library accepted it: drawn here directly, in both
%% orders, with a prefetch the multi-ack fits in and an unlimited one.
multi_ack_over_prefetch_test() ->
    Over = [pair(amqp, prefetch, 200), pair(amqp, multi_ack, 1000)],
    Line = "-A 1000 must be less than or equal to -q 200 (the consumer would wait forever for more messages)",
    ?assertEqual({refused, Line}, cli(amqp, Over)),
    ?assertEqual({refused, Line}, api(amqp, Over)),
    ?assertEqual({refused, Line}, cli(amqp, lists:reverse(Over))),
    ?assertEqual({refused, Line}, api(amqp, lists:reverse(Over))),
    [begin
         ?assertEqual(accepted, cli(amqp, Fits)),
         ?assertEqual(accepted, api(amqp, Fits))
     end || Fits <- [[pair(amqp, prefetch, 1000), pair(amqp, multi_ack, 1000)],
                     [pair(amqp, prefetch, 0), pair(amqp, multi_ack, 1000)]]],
    %% A stream queue's consumers get PerfTest's prefetch of 200 when none
    %% is given, on both fronts (the CLI alone applied it once).
    Stream = [{O, V, none} || {O, V, _} <- [pair(amqp, stream, true)]] ++ [pair(amqp, multi_ack, 262)],
    StreamLine = "-A 262 must be less than or equal to -q 200 (the consumer would wait forever for more messages)",
    ?assertEqual({refused, StreamLine}, cli(amqp, Stream)),
    ?assertEqual({refused, StreamLine}, api(amqp, Stream)),
    ?assertEqual(accepted, api(amqp, [pair(amqp, stream, true), pair(amqp, multi_ack, 200)])).

%% A flag in seconds and its key in milliseconds: the same line.
seconds_and_milliseconds_test() ->
    Over = [pair(watch, duration, 4294967001)],
    ?assertEqual({refused, "invalid value '4294967.001' for --duration: at most 4294967 "
                           "(the longest timer, about 49 days)"}, cli(watch, Over)),
    ?assertEqual(cli(watch, Over), api(watch, Over)),
    Negative = [pair(watch, duration, -500)],
    ?assertEqual({refused, "invalid value '-0.5' for --duration: expected a positive number"},
                 cli(watch, Negative)),
    ?assertEqual(cli(watch, Negative), api(watch, Negative)),
    ?assertEqual(accepted, api(watch, [pair(watch, duration, 1500)])).

%% The library's own line names the key.
api_line_names_the_key_test() ->
    {error, R} = beamlab_experiment_opts:amqp(#{rate => -5}),
    ?assertEqual("invalid value '-5' for rate: expected a number >= 0", flat(beamlab:format_error(R))),
    {error, R2} = beamlab_experiment_opts:amqp(#{producers => 200000}),
    ?assertEqual("invalid value '200000' for producers: at most 100000 (connections to one broker)",
                 flat(beamlab:format_error(R2))),
    {error, R3} = beamlab_experiment_opts:watch(?NODE, #{interval => 0}),
    ?assertEqual("invalid value '0' for interval: expected a positive integer", flat(beamlab:format_error(R3))).

%% A pair of an option of a kind, its value and the flag's text.
pair(Kind, Name, V) ->
    {ok, Mod} = beamlab_experiment_kind:find(Kind),
    {ok, O} = beamlab_schema:find(Name, Mod:options()),
    Text = case flag_units(O, V) of
               X when is_number(X) -> number_text(X);
               X -> X
           end,
    {O, V, Text}.

cli_and_api_agree_test_() ->
    {setup, fun qf_files/0, fun qf_clean/1,
     {timeout, 300,
      ?_assert(proper:quickcheck(prop_cli_and_api_agree(), [{numtests, 500}, {to_file, user}]))}}.

%% The queue files the property draws (amqp's -qf / queue_file).
qf_dir() ->
    filename:join(os:getenv("TMPDIR", "/tmp"), "beamlab-prop-qf-" ++ os:getpid()).

qf_files() ->
    Dir = qf_dir(),
    ok = filelib:ensure_path(Dir),
    Files = [{"names", <<"qa\n\nqb\n">>}, {"empty", <<"\n">>},
             {"bad", [lists:duplicate(256, $q), "\n"]}] ++ ec_cert(),
    [ok = file:write_file(filename:join(Dir, F), C) || {F, C} <- Files],
    Dir.

%% A certificate and its key (PEM), also a CA file: what the TLS
%% combinations need to be accepted.
ec_cert() ->
    Ec = [{key, {namedCurve, secp256r1}}],
    #{client_config := C} = public_key:pkix_test_data(#{server_chain => #{root => Ec, intermediates => [], peer => Ec},
                                                         client_chain => #{root => Ec, intermediates => [], peer => Ec}}),
    {KT, KD} = proplists:get_value(key, C),
    [{"ec.pem", public_key:pem_encode([{'Certificate', proplists:get_value(cert, C), not_encrypted}])},
     {"ec.key", public_key:pem_encode([{KT, KD, not_encrypted}])}].

qf_clean(Dir) ->
    _ = [ok = file:delete(filename:join(Dir, F)) || F <- ["names", "empty", "bad", "ec.pem", "ec.key"]],
    ok = file:del_dir(Dir).

%% The library's TLS files are checked before anything connects (the
%% command line checks its --tls-*-file flags itself): missing, not a
%% regular file, not PEM, a certificate without its key.
library_tls_files_test() ->
    Dir = filename:join(os:getenv("TMPDIR", "/tmp"),
                        "beamlab-tls-" ++ integer_to_list(erlang:unique_integer([positive]))),
    ok = file:make_dir(Dir),
    NotPem = filename:join(Dir, "ca.pem"),
    ok = file:write_file(NotPem, <<"not a certificate\n">>),
    Line = fun(Tls) ->
                   case beamlab_experiment_opts:amqp(#{uri => "amqps://127.0.0.1", tls => Tls}) of
                       {error, R} -> flat(beamlab:format_error(R));
                       {ok, _} -> accepted
                   end
           end,
    try
        Missing = filename:join(Dir, "none.pem"),
        ?assertEqual("tls: cacertfile " ++ Missing ++ ": no such file or directory",
                     Line(#{cacertfile => Missing})),
        ?assertEqual("tls: cacertfile " ++ Dir ++ ": not a regular file", Line(#{cacertfile => Dir})),
        ?assertEqual("tls: cacertfile " ++ NotPem ++ ": no PEM certificate in it (expected "
                     "-----BEGIN CERTIFICATE----- blocks)", Line(#{cacertfile => NotPem})),
        ?assertEqual("tls: certfile and keyfile go together", Line(#{certfile => NotPem})),
        ?assertEqual(accepted, Line(#{verify => verify_peer}))
    after
        ok = file:delete(NotPem),
        ok = file:del_dir(Dir)
    end.

%% PerfTest's text forms and the body files in the library's shapes
%% (#31): refused with the command line's line, naming the key; taken as
%% the load takes them.
library_forms_test() ->
    Line = fun(Opts) ->
                   case beamlab_experiment_opts:amqp(Opts) of
                       {error, R} -> flat(beamlab:format_error(R));
                       {ok, _} -> accepted
                   end
           end,
    ?assertEqual("variable_rate: 2000000000:5: at most 1000000000 (messages per second per channel)",
                 Line(#{variable_rate => [{100, 5}, {2000000000, 5}]})),
    ?assertEqual("variable_rate: expected a list of steps {Value, Seconds}", Line(#{variable_rate => 5})),
    ?assertMatch("variable_size: Invalid variable value definition: 0:5." ++ _,
                 Line(#{variable_size => [{0, 5}]})),
    ?assertEqual("invalid value '0.05' for publishing_interval: expected a number >= 0.1 (PerfTest's smallest)",
                 Line(#{publishing_interval => 0.05})),
    ?assertEqual("body_files: /nonexistent/x: no such file or directory", Line(#{body_files => ["/nonexistent/x"]})),
    ?assertEqual("message_properties: priority '300': expected an integer 0..255",
                 Line(#{message_properties => #{priority => 300}})),
    ?assertMatch("message_properties: 'colour' is not a message property" ++ _,
                 Line(#{message_properties => #{colour => <<"red">>}})),
    ?assertEqual("queue_args: '' is not a key (1 to 255 bytes of text)", Line(#{queue_args => [{<<>>, 1}]})),
    ?assertEqual("consumer_args: the value of 'x' is not true, false, a 64-bit integer or text",
                 Line(#{consumer_args => [{"x", 1.5}]})),
    ?assertEqual("invalid value '4000000000' for stream_segment_bytes: at most 3000000000 "
                 "(a stream segment is at most 3 GB)", Line(#{stream_segment_bytes => 4000000000})),
    ?assertMatch("stream_offset: 'sometime' is not a stream offset" ++ _, Line(#{stream_offset => sometime})),
    ?assertMatch("recovery_interval: '{3000,1000}' is not {Min, Max}" ++ _,
                 Line(#{recovery_interval => {3000, 1000}})),
    ?assertEqual("watch: 'nohost' is not a node name (name@host)", Line(#{watch => "nohost"})),
    ?assertEqual("body_size and variable_size: the bodies of 3 distinct sizes add up to 1073741835 bytes, "
                 "more than 1 GiB to keep in memory at once",
                 Line(#{variable_size => [{536870912, 1}, {536870911, 1}]})),
    %% taken as the load takes them
    Dir = filename:join(os:getenv("TMPDIR", "/tmp"),
                        "beamlab-forms-" ++ integer_to_list(erlang:unique_integer([positive]))),
    ok = file:make_dir(Dir),
    Body = filename:join(Dir, "b.txt"),
    ok = file:write_file(Body, <<"hello">>),
    try
        {ok, #{run := {amqp, #{config := C}}}} =
            beamlab_experiment_opts:amqp(#{body_files => [Body], body_content_type => "text/plain",
                                           publishing_interval => 5, stream_offset => "NEXT",
                                           queue_args => [{"x-max-length", 10}, {"x-q", "quorum"}],
                                           message_properties => #{priority => 5, content_type => "a/b",
                                                                   headers => #{<<"h">> => <<"v">>}},
                                           output_file => filename:join(Dir, "o.csv")}),
        ?assertMatch(#{body := {files, [<<"hello">>], <<"text/plain">>}, publishing_interval := 5.0,
                       stream_offset := <<"next">>,
                       queue_args := [{<<"x-max-length">>, 10}, {<<"x-q">>, <<"quorum">>}],
                       message_properties := #{priority := 5, content_type := <<"a/b">>,
                                               headers := [{<<"h">>, longstr, <<"v">>}]}}, C),
        ?assertEqual(unicode:characters_to_binary(filename:join(Dir, "o.csv")), maps:get(output_file, C))
    after
        ok = file:delete(Body),
        ok = file:del_dir(Dir)
    end.

%% The TLS files from both fronts (#31): the command line's --tls-*-file
%% flags are the library's `tls' map, checked once; each line names the
%% flag on the command line and the map's key in the library
%% (library_tls_files_test). Missing, a directory, not PEM, the key not
%% PEM; --tls-insecure is `verify => verify_none'.
tls_fronts_agree_test() ->
    Dir = filename:join(os:getenv("TMPDIR", "/tmp"),
                        "beamlab-tls-fronts-" ++ integer_to_list(erlang:unique_integer([positive]))),
    ok = file:make_dir(Dir),
    NotPem = filename:join(Dir, "ca.pem"),
    ok = file:write_file(NotPem, <<"not a certificate\n">>),
    Missing = filename:join(Dir, "none.pem"),
    {ok, Tls} = beamlab_schema:find(tls, beamlab_experiment_amqp:options()),
    Uri = pair(amqp, uri, "amqps://127.0.0.1"),
    NoPem = ": no PEM certificate in it (expected -----BEGIN CERTIFICATE----- blocks)",
    Cases = [{#{cacertfile => Missing}, ["--tls-ca-file", Missing],
              "--tls-ca-file " ++ Missing ++ ": no such file or directory"},
             {#{cacertfile => Dir}, ["--tls-ca-file", Dir], "--tls-ca-file " ++ Dir ++ ": not a regular file"},
             {#{cacertfile => NotPem}, ["--tls-ca-file", NotPem], "--tls-ca-file " ++ NotPem ++ NoPem},
             {#{certfile => NotPem, keyfile => NotPem}, ["--tls-cert-file", NotPem, "--tls-key-file", NotPem],
              "--tls-cert-file " ++ NotPem ++ NoPem}],
    try
        [begin
             Pairs = [Uri, {Tls, Map, {argv, Words}}],
             ?assertEqual({Map, {refused, Line}}, {Map, cli(amqp, Pairs)}),
             ?assertEqual({Map, cli(amqp, Pairs)}, {Map, api(amqp, Pairs)})
         end || {Map, Words, Line} <- Cases],
        Insecure = [Uri, {Tls, #{verify => verify_none}, {argv, ["--tls-insecure"]}}],
        ?assertEqual(accepted, cli(amqp, Insecure)),
        ?assertEqual(accepted, api(amqp, Insecure)),
        {ok, P} = beamlab_cli_args:parse(["-h", "amqps://h", "--tls-insecure", "-sni", "b.example,c"],
                                         beamlab_command_amqp:options()),
        {ok, #{run := {amqp, #{config := #{tls := T}}}}} = beamlab_command_amqp:experiment(P#{argv => []}),
        ?assertEqual(#{verify => verify_none, server_name_indication => "b.example"}, T)
    after
        ok = file:delete(NotPem),
        ok = file:del_dir(Dir)
    end.

%% -f's words are the library's booleans, typed.
library_message_flags_test() ->
    {error, R} = beamlab_experiment_opts:amqp(#{persistent => yes}),
    ?assertEqual("invalid value 'yes' for persistent: expected true or false", flat(beamlab:format_error(R))),
    {ok, #{run := {amqp, #{config := C}}}} = beamlab_experiment_opts:amqp(#{persistent => true, mandatory => true}),
    ?assertMatch(#{persistent := true, mandatory := true}, C).

%% The TLS rules (#31), every combination of an amqp:// or amqps:// URI
%% (or the default), a CA file, a client certificate (with its key or
%% alone), a server name, --tls-insecure, -se and -udsc: the kind's, the
%% same line from both fronts (the flag on the command line, the key in
%% the library).
tls_rules_fronts_agree_test_() ->
    {setup, fun qf_files/0, fun qf_clean/1,
     fun(_) ->
             {timeout, 120,
              fun() ->
                      Sasl = pair(amqp, sasl, external),
                      Udsc = pair(amqp, use_default_ssl_context, true),
                      Outcomes =
                          [begin
                               Pairs = tls_pairs(Uri, Ca, Client, Sni, Insecure)
                                   ++ [{S, external, none} || {S, _, _} <- [Sasl], Se]
                                   ++ [{U, true, none} || {U, _, _} <- [Udsc], D],
                               Cli = cli(amqp, Pairs),
                               ?assertEqual({Pairs, Cli}, {Pairs, api(amqp, Pairs)}),
                               Cli
                           end || Uri <- [none, "amqp://127.0.0.1", "amqps://127.0.0.1"], Ca <- [none, "ec.pem"],
                                  Client <- [none, both, cert], Sni <- [false, true], Insecure <- [false, true],
                                  Se <- [false, true], D <- [false, true]],
                      Lines = lists:usort([L || {refused, L} <- Outcomes]),
                      ?assert(lists:member(accepted, Outcomes)),
                      [?assert(lists:member(L, Lines))
                       || L <- ["--tls-ca-file needs an amqps:// URI", "-sni needs an amqps:// URI",
                                "--tls-insecure needs an amqps:// URI", "-udsc needs an amqps:// URI",
                                "--tls-cert-file and --tls-key-file go together",
                                "-se logs in with the client certificate: give --tls-cert-file and "
                                "--tls-key-file (and an amqps:// URI)",
                                "--tls-insecure verifies nothing: drop --tls-ca-file and -udsc, or drop "
                                "--tls-insecure"]],
                      %% the library's lines name its keys
                      Line = fun(Map) ->
                                     {error, R} = beamlab_experiment_opts:amqp(Map),
                                     flat(beamlab:format_error(R))
                             end,
                      ?assertEqual("tls: cacertfile needs an amqps:// URI",
                                   Line(#{tls => #{cacertfile => "ca.pem"}})),
                      ?assertEqual("use_default_ssl_context needs an amqps:// URI",
                                   Line(#{use_default_ssl_context => true})),
                      ?assertEqual("sasl logs in with the client certificate: give certfile in tls and keyfile "
                                   "in tls (and an amqps:// URI)", Line(#{uri => "amqps://h", sasl => external})),
                      ?assertEqual("verify in tls verifies nothing: drop cacertfile in tls and "
                                   "use_default_ssl_context, or drop verify in tls",
                                   Line(#{uri => "amqps://h", use_default_ssl_context => true,
                                          tls => #{verify => verify_none}})),
                      %% the URIs the load connects to: `uris' when given
                      ?assertEqual("tls: verify needs an amqps:// URI",
                                   Line(#{uri => "amqps://h", uris => ["amqp://a"], tls => #{verify => verify_none}})),
                      ?assertMatch({ok, _}, beamlab_experiment_opts:amqp(#{uris => ["amqps://a"],
                                                                          tls => #{verify => verify_none}})),
                      %% an experiment made by hand is checked alike (the kind's check/2)
                      {ok, #{run := {amqp, A}} = Exp} = beamlab_experiment_opts:amqp(#{}),
                      #{config := C} = A,
                      Bad = Exp#{run := {amqp, A#{config := C#{tls := #{verify => verify_none}}}}},
                      {error, R} = beamlab_experiment:check(Bad),
                      ?assertEqual("tls: verify needs an amqps:// URI", flat(beamlab:format_error(R)))
              end}
     end}.

%% --json-body's options are the kind's (#31): the same lines from both
%% fronts, the load's `body' made alike.
json_body_fronts_agree_test() ->
    Jb = pair(amqp, json_body, true),
    Big = [setelement(3, Jb, none), pair(amqp, body_count, 100000), pair(amqp, body_size, 100000)],
    ?assertEqual({refused, "-jb: 100000 bodies of 100000 bytes are more than 1 GiB to keep in memory; "
                           "lower -bc or -s"}, cli(amqp, Big)),
    ?assertEqual(cli(amqp, Big), api(amqp, Big)),
    Over = [setelement(3, Jb, none), pair(amqp, body_field_count, 100001)],
    ?assertEqual({refused, "invalid value '100001' for -bfc: at most 100000 (fields kept in memory)"}, cli(amqp, Over)),
    ?assertEqual(cli(amqp, Over), api(amqp, Over)),
    {ok, #{run := {amqp, #{config := C}}}} = beamlab_experiment_opts:amqp(#{json_body => true, body_count => 5}),
    ?assertEqual({json, 1000, 5}, maps:get(body, C)),
    {error, R} = beamlab_experiment_opts:amqp(#{json_body => true, body_files => ["/etc/hostname"]}),
    ?assertEqual("give either body_files or json_body, not both", flat(beamlab:format_error(R))).

%% The acknowledgement and queue rules (#31: the command line's until now)
%% are the kind's: the same line from both fronts.
ack_and_queue_rules_fronts_agree_test() ->
    Cases = [{[pair(amqp, multi_ack, 10), pair(amqp, prefetch, 5)],
              "-A 10 must be less than or equal to -q 5 (the consumer would wait forever for more messages)"},
             {[pair(amqp, multi_ack, 2), {element(1, pair(amqp, autoack, true)), true, none}],
              "-A (multi-ack) and -a (autoack) exclude each other"},
             {[{element(1, pair(amqp, quorum, true)), true, none}, {element(1, pair(amqp, stream, true)), true, none}],
              "use quorum queues or stream queues, not both (-qq, -sq)"},
             {[{element(1, pair(amqp, predeclared, true)), true, none}], "-p needs the queue(s): -u, -qf or -qp"}],
    [begin
         ?assertEqual({refused, Line}, cli(amqp, Pairs)),
         ?assertEqual(cli(amqp, Pairs), api(amqp, Pairs))
     end || {Pairs, Line} <- Cases],
    {error, R} = beamlab_experiment_opts:amqp(#{predeclared => true}),
    ?assertEqual("predeclared needs the queue(s): queue, queue_file or queue_pattern", flat(beamlab:format_error(R))),
    ?assertMatch({ok, _}, beamlab_experiment_opts:amqp(#{predeclared => true, queue => "q"})),
    ?assertMatch({ok, _}, beamlab_experiment_opts:amqp(#{multi_ack => 5, prefetch => 5})).

%% PerfTest's numbers (-i, -z, -r, -R) are read by the kind's `parse' (#31):
%% an exponent is a number, text that is none is refused naming the flag,
%% and a value over its bound gets the library's line.
perftest_numbers_test() ->
    {Z, _, _} = pair(amqp, duration, 1),
    ?assertEqual(accepted, cli(amqp, [{Z, 1000.0, "1e3"}])),
    ?assertEqual(accepted, api(amqp, [{Z, 1000.0, "1e3"}])),
    ?assertEqual({refused, "invalid value 'abc' for -z: expected a number"}, cli(amqp, [{Z, x, "abc"}])),
    Over = [{Z, 2.0e9, "2e9"}],
    ?assertEqual({refused, "invalid value '2.0e9' for -z: at most 31536000 (one year)"}, cli(amqp, Over)),
    ?assertEqual(cli(amqp, Over), api(amqp, Over)),
    {ok, P} = beamlab_cli_args:parse(["-z", "2.5E1", "-r", "1e2", "-i", "0.5"], beamlab_command_amqp:options()),
    {ok, #{run := {amqp, #{config := C}}}} = beamlab_command_amqp:experiment(P#{argv => []}),
    ?assertMatch(#{duration := 25.0, rate := 100.0, interval := 0.5}, C).
