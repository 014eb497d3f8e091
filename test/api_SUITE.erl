-module(api_SUITE).
%% The public API (beamlab.erl) from Erlang and from Elixir: what the
%% commands do, as documents. Each case calls the API in this VM, then the
%% same call from Debian's `elixir' (with -pa this build's ebin, the
%% document printed as JSON on stdout) and checks both documents the same
%% way. benchmark/2 with the after-phase (memory and reductions per
%% iteration, an in-VM profile), concurrency estimation only when asked
%% for (#27 item 14), suite/2 with parameters, matrix/2 over fresh VMs,
%% findings with telemetry, watch/2 of a peer node, amqp/2 against a
%% private RabbitMQ (scripts/rabbitmq.sh) with its lines through the sink,
%% profile/2 with perf; format/2,3 and report/2 (the rendering API);
%% a plain VM stays undistributed after watch/2 (the caller's VM as
%% found); the README's Erlang examples, run in order in one shell's
%% bindings.
-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-export([all/0, groups/0, suite/0, init_per_group/2, end_per_group/2]).
-export([benchmark_after_phase/1, squeeze_only_when_asked/1, suite_params/1, matrix_fresh_vms/1,
         findings_with_telemetry/1, watch_peer/1, amqp_broker/1, profile_with_perf/1,
         unknown_options_refused/1, format_and_report/1, plain_vm_left_as_found/1, readme_examples/1]).

%% The broker's port, chosen free when it starts (beamlab_test_util:
%% start_suite_rabbitmq/1): a fresh machine or a parallel run may hold any
%% fixed one.
-define(PORT, beamlab_test_util:suite_broker_port(?MODULE)).
-define(COOKIE, "apisecret").

suite() -> [{timetrap, {minutes, 6}}].

all() -> [{group, api}, {group, broker}].

groups() ->
    [{api, [], [benchmark_after_phase, squeeze_only_when_asked, unknown_options_refused, suite_params,
                matrix_fresh_vms, findings_with_telemetry, watch_peer, profile_with_perf,
                format_and_report, plain_vm_left_as_found]},
     {broker, [], [amqp_broker, readme_examples]}].

init_per_group(broker, Config) ->
    ok = beamlab_test_util:start_suite_rabbitmq(?MODULE),
    Config;
init_per_group(_, Config) ->
    Config.

end_per_group(broker, _Config) ->
    beamlab_test_util:stop_suite_rabbitmq(?MODULE);
end_per_group(_, _Config) ->
    ok.

%%--------------------------------------------------------------------

%% benchmark/2 returns the command's full document: per-iteration memory
%% and reductions and the in-VM profile of the after-phase, the
%% environment report.
benchmark_after_phase(_Config) ->
    {ok, Doc} = beamlab:benchmark(["lists:seq(1, 100)."],
                                  #{samples => 2, duration => 100, memory => true, reductions => true,
                                    profile => eprof}),
    after_phase(Doc),
    elixir("{:ok, doc} = :beamlab.benchmark([~c\"lists:seq(1, 100).\"], %{samples: 2, duration: 100, "
           "memory: true, reductions: true, profile: :eprof})", fun after_phase/1).

after_phase(Doc) ->
    #{kind := bench, env := Env, benchmarks := [#{name := <<"lists:seq(1, 100).">>, extra := E}]} = Doc,
    ?assert(map_size(Env) > 0),
    #{<<"per_iteration">> := #{<<"words">> := Words, <<"reductions">> := Reds},
      <<"profile">> := #{<<"tool">> := <<"eprof">>, <<"rows">> := [_ | _]}} = E,
    %% 100 list cells of two words each.
    ?assert(Words >= 200),
    ?assert(Reds > 0).

%% An empty map as benchmark/3's third argument is refused in one line;
%% benchmark/2 estimates concurrency only with `squeeze'; the README's
%% library example runs the benchmark it names and nothing else.
squeeze_only_when_asked(_Config) ->
    Quick = #{samples => 1, duration => 50},
    {error, Why} = beamlab:benchmark(["ok."], Quick, #{}),
    Line = lists:flatten(io_lib:format("~ts", [beamlab:format_error(Why)])),
    ?assertEqual(nomatch, string:find(Line, "\n")),
    ?assertNotEqual(nomatch, string:find(Line, "squeeze")),
    {ok, Plain} = beamlab:benchmark(["ok."], Quick),
    ?assertNot(squeezed(Plain)),
    {ok, Asked} = beamlab:benchmark(["ok."], Quick#{squeeze => #{max => 2}}),
    ?assert(squeezed(Asked)),
    {ok, Bounds} = beamlab:benchmark(["ok."], Quick, #{max => 2}),
    ?assert(squeezed(Bounds)),
    %% The README's example (with short samples).
    {ok, Readme} = beamlab:benchmark([#{runner => "lists:seq(1, 100)."},
                                      #{runner => "lists:duplicate(100, x)."}],
                                     #{samples => 10, duration => 20}),
    ?assertMatch(#{benchmarks := [_, _]}, Readme),
    ?assertNot(squeezed(Readme)),
    elixir("{:ok, doc} = :beamlab.benchmark([~c\"ok.\"], %{samples: 1, duration: 50, squeeze: %{max: 2}})",
           fun(D) -> ?assert(squeezed(D)) end).

squeezed(#{benchmarks := Bs}) ->
    lists:all(fun(#{extra := E}) -> maps:is_key(<<"squeeze_curve">>, E) end, Bs).

%% A misspelt option is an error, not a default silently taken.
unknown_options_refused(_Config) ->
    [begin
         {error, R} = Call(),
         Line = lists:flatten(io_lib:format("~ts", [beamlab:format_error(R)])),
         ?assertNotEqual(nomatch, string:find(Line, Expect))
     end || {Call, Expect} <- [{fun() -> beamlab:benchmark(["ok."], #{sampels => 1}) end, "sampels"},
                               {fun() -> beamlab:suite([fib], #{repeats => 1}) end, "repeats"},
                               {fun() -> beamlab:matrix({benchmark, ["ok."], #{}}, #{vms => []}) end, "vms"},
                               {fun() -> beamlab:suite([no_such_workload], #{}) end, "no_such_workload"}]],
    ok.

%% suite/2 sweeps a parameter given as a list of values.
suite_params(_Config) ->
    Check = fun(Doc) ->
                    #{kind := suite, benchmarks := Bs, params := #{<<"param">> := P}} = Doc,
                    ?assertEqual([<<"fib[n=10]">>, <<"fib[n=12]">>], [N || #{name := N} <- Bs]),
                    ?assertEqual(#{<<"fib">> => #{<<"n">> => [<<"10">>, <<"12">>]}}, P)
            end,
    {ok, Doc} = beamlab:suite([fib], #{repeat => 1, params => #{fib => #{n => [10, 12]}}}),
    Check(Doc),
    elixir("{:ok, doc} = :beamlab.suite([:fib], %{repeat: 1, params: %{fib: %{n: [10, 12]}}})", Check).

%% matrix/2 runs the inner experiment in one fresh VM per configuration:
%% each VM's own report shows the schedulers it was given.
matrix_fresh_vms(_Config) ->
    Check = fun(Doc) ->
                    #{kind := matrix, extra := #{<<"configs">> := Cs}, benchmarks := Bs} = Doc,
                    ?assertEqual([{<<"+S 1">>, 1}, {<<"+S 2">>, 2}],
                                 [{N, S} || #{<<"name">> := N, <<"schedulers_online">> := S} <- Cs]),
                    ?assertEqual(2, length(Bs))
            end,
    {ok, Doc} = beamlab:matrix({benchmark, ["ok."], #{samples => 1, duration => 50}},
                               #{vm => ["+S 1", "+S 2"], repeat => 1}),
    Check(Doc),
    elixir("{:ok, doc} = :beamlab.matrix({:benchmark, [~c\"ok.\"], %{samples: 1, duration: 50}}, "
           "%{vm: [~c\"+S 1\", ~c\"+S 2\"], repeat: 1})", Check).

%% With `telemetry', this VM's series is recorded and the detectors'
%% findings join the document: one scheduler online while two processes
%% spin is "schedulers offline while work waits". The same from Elixir,
%% whose VM is the one recorded there.
findings_with_telemetry(_Config) ->
    Check = fun(#{telemetry := T, findings := Fs}) ->
                    ?assert(maps:get(<<"samples">>, T) >= 3),
                    ?assert(lists:member(<<"schedulers_offline">>, [Id || #{id := Id} <- Fs]))
            end,
    Old = erlang:system_flag(schedulers_online, 1),
    Spinners = [spawn(fun Loop() -> Loop() end) || _ <- [1, 2]],
    Run = try beamlab:matrix({benchmark, ["ok."], #{samples => 4, duration => 1000}},
                             #{vm => ["+S 1"], repeat => 1, telemetry => true})
          after
              [exit(P, kill) || P <- Spinners],
              erlang:system_flag(schedulers_online, Old)
          end,
    {ok, Doc} = Run,
    Check(Doc),
    %% Without it: no series, no detectors.
    {ok, #{telemetry := None}} = beamlab:benchmark(["ok."], #{samples => 1, duration => 50}),
    ?assertEqual(#{}, None),
    elixir(":erlang.system_flag(:schedulers_online, 1)\n"
           "for _ <- 1..2, do: spawn(fn -> Stream.run(Stream.cycle([:spin])) end)\n"
           "{:ok, doc} = :beamlab.matrix({:benchmark, [~c\"ok.\"], %{samples: 4, duration: 1000}}, "
           "%{vm: [~c\"+S 1\"], repeat: 1, telemetry: true})", Check).

%% watch/2 records a peer node's series from outside.
watch_peer(_Config) ->
    {ok, Peer, Node} = peer:start(#{name => peer:random_name("api_watched"), longnames => true, host => "127.0.0.1",
                                    connection => standard_io,
                                    args => ["-setcookie", ?COOKIE, "-kernel", "inet_dist_use_interface",
                                             "{127,0,0,1}"]}),
    try
        Check = fun(Doc) ->
                        #{kind := watch, telemetry := T, params := #{<<"node">> := N}} = Doc,
                        ?assertEqual(atom_to_binary(Node), N),
                        ?assert(maps:get(<<"samples">>, T) >= 2)
                end,
        {ok, Doc} = beamlab:watch(Node, #{duration => 1500, interval => 500, cookie => ?COOKIE}),
        Check(Doc),
        elixir(io_lib:format("{:ok, doc} = :beamlab.watch(:\"~s\", %{duration: 1500, interval: 500, "
                             "cookie: ~~c\"~s\"})", [Node, ?COOKIE]), Check)
    after
        peer:stop(Peer)
    end.

%% amqp/2 loads the private broker; PerfTest's lines go to the sink.
amqp_broker(_Config) ->
    Uri = "amqp://guest:guest@127.0.0.1:" ++ ?PORT ++ "/%2F",
    Self = self(),
    Check = fun(Doc) ->
                    #{kind := amqp, benchmarks := Bs, extra := #{<<"amqp">> := #{<<"counters">> := C}}} = Doc,
                    ?assert(maps:get(<<"received">>, C) > 0),
                    ?assert(lists:member(<<"received">>, [N || #{name := N} <- Bs]))
            end,
    {ok, Doc} = beamlab:amqp(Uri, #{duration => 2, closed_loop => 2,
                                    sink => fun(E) -> Self ! {sink, E} end}),
    Check(Doc),
    Lines = [L || {amqp, L} <- flush()],
    ?assert(lists:any(fun(L) -> binary:match(L, <<"received">>) =/= nomatch end, Lines)),
    elixir(io_lib:format("{:ok, doc} = :beamlab.amqp(~~c\"~s\", %{duration: 2, closed_loop: 2})", [Uri]),
           Check).

flush() ->
    receive {sink, E} -> [E | flush()]
    after 0 -> []
    end.

%% profile/2 profiles an inner experiment run in a fresh VM under perf;
%% its benchmarks join the profile's document (from Elixir too).
profile_with_perf(_Config) ->
    case os:find_executable("perf") of
        false ->
            {skip, "perf is not installed (Debian package linux-perf); CI installs it"};
        _ ->
            Check = fun(Doc) ->
                            #{kind := profile, benchmarks := [#{name := <<"lists:seq(1, 100).">>}],
                              extra := #{<<"profile">> := P}} = Doc,
                            ?assert(maps:get(<<"samples">>, P) > 0)
                    end,
            {ok, Doc} = beamlab:profile({benchmark, ["lists:seq(1, 100)."], #{samples => 1, duration => 500}},
                                        #{frequency => 499}),
            Check(Doc),
            elixir("{:ok, doc} = :beamlab.profile({:benchmark, [~c\"lists:seq(1, 100).\"], "
                   "%{samples: 1, duration: 500}}, %{frequency: 499})", Check)
    end.

%% format/2,3 renders a document in every format of the command line,
%% and report/2 makes the HTML page of documents, returned or written
%% atomically (never over an input); mistakes are one line. The same
%% from Elixir.
format_and_report(Config) ->
    Dir = ?config(priv_dir, Config),
    {ok, Doc} = beamlab:benchmark(["lists:seq(1, 10).", "ok."], #{samples => 3, duration => 20}),
    [begin
         {ok, Out} = beamlab:format(Doc, F),
         ?assert(iolist_size(unicode:characters_to_binary(Out)) > 0, F)
     end || F <- [text, json, csv, markdown, 'github-bigger', 'github-smaller', bencher]],
    %% JSON is the saved form: it reads back as the same document.
    {ok, Json} = beamlab:format(Doc, json),
    {ok, Decoded} = beamlab_json:decode(iolist_to_binary(Json)),
    ?assertEqual({ok, Doc}, beamlab_result:from_json(Decoded)),
    %% Text is the command's table; ASCII on request; a name works too.
    {ok, Text} = beamlab:format(Doc, text),
    Flat = unicode:characters_to_binary(Text),
    [?assertNotEqual(nomatch, binary:match(Flat, N)) || N <- [<<"lists:seq(1, 10).">>, <<"ok.">>]],
    {ok, Ascii} = beamlab:format(Doc, "text", #{unicode => false}),
    ?assert(lists:all(fun(C) -> C < 128 end, unicode:characters_to_list(Ascii))),
    {ok, Md} = beamlab:format(Doc, <<"markdown">>),
    ?assertNotEqual(nomatch, binary:match(unicode:characters_to_binary(Md), <<"| Benchmark |">>)),
    one_line(beamlab:format(Doc, yaml), "yaml"),
    one_line(beamlab:format(#{not_a => document}, text), "not a result document"),
    %% The report: returned, or written; a saved file is an input too.
    {ok, Other} = beamlab:benchmark(["lists:seq(1, 10)."], #{samples => 3, duration => 20}),
    {ok, Html} = beamlab:report([Doc, {"second", Other}], #{title => "api"}),
    ?assertMatch(<<"<!DOCTYPE html>", _/binary>>, Html),
    ?assertNotEqual(nomatch, binary:match(Html, <<"<title>api</title>">>)),
    Saved = filename:join(Dir, "saved.json"),
    ok = file:write_file(Saved, Json),
    Page = filename:join(Dir, "page.html"),
    ok = beamlab:report([Saved, Other], #{output => Page, history => true, order => time}),
    {ok, <<"<!DOCTYPE html>", _/binary>>} = file:read_file(Page),
    one_line(beamlab:report([Saved], #{output => Saved}), "never replaces an input"),
    ?assertEqual({ok, iolist_to_binary(Json)}, file:read_file(Saved)),
    one_line(beamlab:report([], #{}), "at least one"),
    one_line(beamlab:report([Doc], #{titel => "x"}), "titel"),
    one_line(beamlab:report([42], #{}), "not a result document"),
    one_line(beamlab:report([filename:join(Dir, "missing.json")], #{}), "missing.json"),
    %% From Elixir: the text as the command prints it, the page written.
    ElixirText = filename:join(Dir, "elixir.txt"),
    ElixirPage = filename:join(Dir, "elixir.html"),
    elixir(io_lib:format("{:ok, doc} = :beamlab.benchmark([~~c\"ok.\"], %{samples: 3, duration: 20})\n"
                         "{:ok, text} = :beamlab.format(doc, :text)\n"
                         "File.write!(~~c\"~ts\", IO.chardata_to_string(text))\n"
                         ":ok = :beamlab.report([doc], %{output: ~~c\"~ts\", title: \"from Elixir\"})",
                         [ElixirText, ElixirPage]),
           fun(D) ->
                   {ok, T} = file:read_file(ElixirText),
                   {ok, Expected} = beamlab:format(D, text),
                   ?assertEqual(unicode:characters_to_binary(Expected), T),
                   {ok, P} = file:read_file(ElixirPage),
                   ?assertNotEqual(nomatch, binary:match(P, <<"<title>from Elixir</title>">>))
           end).

one_line({error, R}, Expect) ->
    Line = unicode:characters_to_list(beamlab:format_error(R)),
    ?assertEqual(nomatch, string:find(Line, "\n")),
    ?assertNotEqual(nomatch, string:find(Line, Expect), Line).

%% A plain VM (not distributed) that calls watch/2 is still `nonode@nohost'
%% afterwards, its kernel's distribution settings untouched: when the node
%% does not exist (an error) and when it does (a short watch).
plain_vm_left_as_found(_Config) ->
    Ebin = filename:dirname(code:which(beamlab)),
    {ok, Plain, _} = peer:start(#{connection => standard_io, args => ["-pa", Ebin]}),
    {ok, Watched, Node} = peer:start(#{name => peer:random_name("api_found"), longnames => true, host => "127.0.0.1",
                                       connection => standard_io,
                                       args => ["-setcookie", ?COOKIE, "-kernel", "inet_dist_use_interface",
                                                "{127,0,0,1}"]}),
    try
        State = fun() -> {peer:call(Plain, erlang, node, []),
                          peer:call(Plain, application, get_env, [kernel, inet_dist_use_interface])}
                end,
        ?assertEqual({nonode@nohost, undefined}, State()),
        {error, _} = peer:call(Plain, beamlab, watch,
                               ['api_nosuch@127.0.0.1', #{duration => 500, cookie => ?COOKIE}], 60000),
        ?assertEqual({nonode@nohost, undefined}, State()),
        {ok, #{kind := watch}} = peer:call(Plain, beamlab, watch,
                                           [Node, #{duration => 1000, interval => 500, cookie => ?COOKIE}],
                                           60000),
        ?assertEqual({nonode@nohost, undefined}, State())
    after
        peer:stop(Watched),
        peer:stop(Plain)
    end.

%% The README's Erlang examples ("From Erlang and Elixir"), in order, in
%% one set of bindings as a shell would keep them: a name bound twice
%% fails as it would when pasted. What they need is started or stood in
%% for, and they run short: the watched node is a peer with their cookie,
%% the broker is this group's, durations and samples are cut, files go to
%% this case's directory.
readme_examples(Config) ->
    case os:find_executable("perf") of
        false -> {skip, "perf is not installed (Debian package linux-perf); CI installs it"};
        _ -> readme_examples_run(?config(priv_dir, Config))
    end.

readme_examples_run(Dir) ->
    {ok, Peer, Node} = peer:start(#{name => peer:random_name("api_readme"), longnames => true, host => "127.0.0.1",
                                    connection => standard_io,
                                    args => ["-setcookie", "secret", "-kernel", "inet_dist_use_interface",
                                             "{127,0,0,1}"]}),
    try
        Exprs = readme_erlang(),
        ?assert(length(Exprs) >= 14),
        Handler = fun({beamlab, F}, Args) ->
                          {F1, Args1} = quick(F, Args, #{node => Node, dir => Dir}),
                          apply(beamlab, F1, Args1);
                     ({M, F}, Args) -> apply(M, F, Args)
                  end,
        Bindings = lists:foldl(fun({Line, E}, B) ->
                                       try erl_eval:exprs(E, B, none, {value, Handler}) of
                                           {value, _, B1} -> B1
                                       catch C:R:St ->
                                               ct:fail("README example ~b: ~p:~p~n~p", [Line, C, R, St])
                                       end
                               end, erl_eval:new_bindings(), Exprs),
        ?assertMatch({value, #{kind := profile}}, erl_eval:binding('Profiled', Bindings)),
        {ok, <<"<!DOCTYPE html>", _/binary>>} = file:read_file(filename:join(Dir, "report.html"))
    after
        peer:stop(Peer)
    end.

%% The README's ```erlang blocks as {Line, Exprs}, shell prompts removed.
readme_erlang() ->
    {ok, Md} = file:read_file(filename:join(beamlab_test_util:root(), "README.md")),
    Blocks = re:run(Md, "```erlang\n(.*?)```", [global, dotall, {capture, all_but_first, list}]),
    {match, Found} = Blocks,
    Code = lists:append([re:replace(B, "^[0-9]+> ", "", [multiline, global, {return, list}])
                         || [B] <- Found]),
    {ok, Tokens, _} = erl_scan:string(Code),
    split_exprs(Tokens, []).

split_exprs([], []) -> [];
split_exprs([{dot, _} = Dot | Rest], Acc) ->
    [First | _] = Expr = lists:reverse([Dot | Acc]),
    {ok, Parsed} = erl_parse:parse_exprs(Expr),
    [{erl_anno:line(element(2, First)), Parsed} | split_exprs(Rest, [])];
split_exprs([T | Rest], Acc) ->
    split_exprs(Rest, [T | Acc]).

%% The examples' calls, made short and pointed at what this case started.
-define(QUICK, #{samples => 2, duration => 20}).
quick(run, [Code], _) -> {run, [Code, ?QUICK]};
quick(F, [Code, Opts], _) when F =:= run; F =:= compare; F =:= benchmark -> {F, [Code, maps:merge(Opts, ?QUICK)]};
quick(suite, [Names, Opts], _) -> {suite, [Names, Opts#{repeat => 1}]};
quick(matrix, [{benchmark, C, O}, Opts], _) -> {matrix, [{benchmark, C, maps:merge(O, ?QUICK)}, Opts#{repeat => 1}]};
quick(profile, [{benchmark, C, O}, Opts], _) -> {profile, [{benchmark, C, maps:merge(O, ?QUICK)}, Opts]};
quick(watch, [_Node, Opts], #{node := Node}) -> {watch, [Node, Opts#{duration => 1000, interval => 500}]};
quick(amqp, [Uri, Opts], _) ->
    {amqp, [lists:flatten(string:replace(Uri, ":5672/", ":" ++ ?PORT ++ "/")), Opts#{duration => 2, closed_loop => 2}]};
quick(report, [Docs, #{output := Out} = Opts], #{dir := Dir}) -> {report, [Docs, Opts#{output => filename:join(Dir, Out)}]};
quick(doctor, [Opts], _) ->
    {doctor, [Opts#{reps => 1, curve_reps => 1, probe_ms => 100, max_remedies => 1, schedulers => "1,2"}]};
quick(F, Args, _) -> {F, Args}.

%%--------------------------------------------------------------------

%% Runs `Expr' (Elixir binding `doc' to a document) in Debian's elixir
%% with this build's ebin, and checks the document it prints as JSON.
elixir(Expr, Check) ->
    case os:find_executable("elixir") of
        false ->
            {skip, "elixir is not installed (Debian package elixir); scripts/install-deps.sh --test installs it"};
        Elixir ->
            Ebin = filename:dirname(code:which(beamlab)),
            Code = [Expr, "\nIO.binwrite(:beamlab_result.to_json(doc))\n"],
            Port = open_port({spawn_executable, Elixir},
                             [{args, ["-pa", Ebin, "-e", unicode:characters_to_list(Code)]},
                              exit_status, binary, use_stdio]),
            {0, Out} = beamlab_test_util:port_output(Port, 300000),
            {ok, Json} = beamlab_json:decode(Out),
            {ok, Doc} = beamlab_result:from_json(Json),
            Check(Doc),
            ok
    end.
