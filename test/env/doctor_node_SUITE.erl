%%% Common Test suite for `beamlab doctor --node', through the built
%%% ./beamlab against peer nodes started with a pathology: more schedulers
%%% than CPUs and schedulers busy-waiting long under a light load (the
%%% doctor must name both, and recommend `+S N:N' with no busy-waiting for
%%% the next start, saying which findings it rests on and that it measured
%%% nothing), one spinning process on two schedulers (the imbalance
%%% finding). The node must be left with microstate accounting and
%%% scheduler wall time as found: after a normal end, after SIGTERM and
%%% after SIGKILL of beamlab (the flags are held by a process on the node
%%% that turns them back when beamlab's connection goes). Bad input gives
%%% one line. Assertions are about what the doctor says and the node's
%%% state, never about times.
-module(doctor_node_SUITE).
-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-export([all/0, suite/0, init_per_suite/1, end_per_suite/1]).
-export([oversubscribed_busy_waiting/1, imbalance_one_spinner/1, flags_restored_after_term/1,
         flags_restored_after_kill/1, bad_input/1, api_erlang/1]).

-define(COOKIE, "doctor_node_suite_cookie_2718").

suite() -> [{timetrap, {minutes, 3}}].

all() ->
    [bad_input, oversubscribed_busy_waiting, imbalance_one_spinner, flags_restored_after_term,
     flags_restored_after_kill, api_erlang].

init_per_suite(Config) ->
    _ = os:cmd("epmd -address 127.0.0.1 -daemon"),
    _ = beamlab_test_util:escript(),
    Config.

end_per_suite(_Config) ->
    ok.

%%--------------------------------------------------------------------

%% A peer controlled over stdio (so the test VM is not in its cluster):
%% `Args' are its emulator flags, `Load' OTP code it runs.
peer(Name, Args, Load) ->
    {ok, Peer, Node} = peer:start(#{name => peer:random_name(atom_to_list(Name)), longnames => true, host => "127.0.0.1",
                                    connection => standard_io,
                                    args => ["-setcookie", ?COOKIE, "-kernel", "inet_dist_use_interface",
                                             "{127,0,0,1}" | Args]}),
    ok = eval(Peer, Load),
    {Peer, atom_to_list(Node)}.

eval(Peer, Text) ->
    beamlab_test_util:peer_eval(Peer, Text).

%% 20 processes waking every 2 ms: work far below capacity, so
%% schedulers that busy-wait spin most of their awake time.
light_load() ->
    "[erlang:spawn(fun() -> L = fun Loop() -> receive after 2 -> Loop() end end, L() end)"
    " || _ <- lists:seq(1, 20)], ok.".

%% Whether the node has scheduler wall time on (read only).
swt_on(Peer) ->
    eval(Peer, "erlang:statistics(scheduler_wall_time) =/= undefined.").

%% Whether microstate accounting is on, read by setting it and setting it
%% back (statistics(microstate_accounting) answers even when it is off).
%% Only once beamlab's holder is gone: it turns scheduler wall time off
%% last, after microstate accounting.
msacc_on(Peer) ->
    false = swt_on(Peer),
    eval(Peer, "Old = erlang:system_flag(microstate_accounting, true),"
               " erlang:system_flag(microstate_accounting, Old), Old.").

doctor(Node, Seconds, Extra) ->
    Dir = beamlab_test_util:tmp_dir("doctor_node"),
    Save = filename:join(Dir, "doctor.json"),
    R = beamlab_test_util:cli(["doctor", "--node", Node, "--cookie", ?COOKIE, "--duration", integer_to_list(Seconds),
                               "--save", Save | Extra], #{dir => Dir}),
    ct:log("exit ~p~nstdout:~n~ts~nstderr:~n~ts", [maps:get(code, R), maps:get(out, R), maps:get(err, R)]),
    ?assertEqual(0, maps:get(code, R)),
    {ok, Json} = file:read_file(Save),
    {ok, Doc} = beamlab_json:decode(Json),
    R#{doc => Doc, save => Save}.

ids(Doc) ->
    [Id || #{<<"id">> := Id} <- maps:get(<<"findings">>, Doc)].

%%--------------------------------------------------------------------

%% Twice as many schedulers as CPUs, busy-waiting long, under a light
%% load: `oversubscribed' and `busy_wait' named, the recommendation is
%% `+S N:N' and no busy-waiting for the next start, resting on both and
%% saying it was not measured; each scheduler's utilisation is listed;
%% the flags are as found afterwards; text and report show it.
oversubscribed_busy_waiting(_Config) ->
    Cpus = erlang:system_info(logical_processors_available),
    S = 2 * Cpus,
    {Peer, Node} = peer(doctor_node_over, ["+S", io_lib:format("~b:~b", [S, S]),
                                           "+sbwt", "very_long", "+sbwtdcpu", "very_long", "+sbwtdio", "very_long"],
                        light_load()),
    try
        ?assertEqual({false, false}, {msacc_on(Peer), swt_on(Peer)}),
        #{doc := Doc, save := Save, err := Err, dir := Dir, out := Text} = doctor(Node, 3, []),
        ?assertEqual({false, false}, {msacc_on(Peer), swt_on(Peer)}),
        Ids = ids(Doc),
        ?assert(lists:member(<<"oversubscribed">>, Ids)),
        ?assert(lists:member(<<"busy_wait">>, Ids)),
        X = maps:get(<<"extra">>, Doc),
        Rec = maps:get(<<"recommendation">>, X),
        Want = iolist_to_binary(io_lib:format("+S ~b:~b", [Cpus, Cpus])),
        ?assertMatch({_, _}, binary:match(Rec, <<"start the node next time with ", Want/binary>>)),
        ?assertMatch({_, _}, binary:match(Rec, <<"+sbwt none +sbwtdcpu none +sbwtdio none">>)),
        ?assertMatch({_, _}, binary:match(Rec, <<"not measured">>)),
        N = maps:get(<<"node">>, X),
        ?assert(lists:member(<<"oversubscribed">>, maps:get(<<"rests_on">>, N))),
        ?assert(lists:member(<<"busy_wait">>, maps:get(<<"rests_on">>, N))),
        ?assertEqual(S, length(maps:get(<<"utilisation_schedulers">>, N))),
        ?assertEqual(S, maps:get(<<"schedulers_online">>, maps:get(<<"vm">>, X))),
        ?assertNotEqual(#{}, maps:get(<<"msacc">>, N)),
        ?assertEqual(false, maps:get(<<"remedies_measured">>, N)),
        ?assertMatch({_, _}, binary:match(Err, <<"doctor: watching ", (list_to_binary(Node))/binary>>)),
        %% The text view, and the report page from the saved document.
        ?assertMatch({_, _}, binary:match(Text, <<"start the node next time with">>)),
        ?assertMatch({_, _}, binary:match(Text, <<"each scheduler: ">>)),
        Html = filename:join(Dir, "doctor.html"),
        ?assertEqual(0, maps:get(code, beamlab_test_util:cli(["report", Save, "-o", Html], #{dir => Dir}))),
        {ok, Page} = file:read_file(Html),
        ?assertMatch({_, _}, binary:match(Page, <<"start the node next time with">>)),
        node_page_in_chromium(Dir, Html),
        nomatch = binary:match(iolist_to_binary([Text, Page, Err]), list_to_binary(?COOKIE))
    after
        peer:stop(Peer)
    end.

%% The node's report page in headless Chromium at 1300 and 800 px: each
%% scheduler's utilisation drawn (and its thread's migrations where the
%% kernel shows them), no script error, nothing wrong by the page's own
%% layout check (no point outside its axis, no label cut off, the
%% tables fit).
node_page_in_chromium(Dir, Html) ->
    case beamlab_test_util:chromium() of
        false -> ct:comment("chromium is not installed: the page was not drawn");
        Chromium ->
            [begin
                 Dom = beamlab_test_util:dump_dom(Chromium, Dir, Html, ["--window-size=" ++ integer_to_list(W) ++ ",2000"]),
                 Body = beamlab_test_util:dom_body(Dom),
                 ?assertEqual({W, <<>>}, {W, beamlab_test_util:dom_attr(Body, <<"data-errors">>)}),
                 ?assertEqual({W, <<>>}, {W, beamlab_test_util:dom_attr(Body, <<"data-layout">>)}),
                 ?assertMatch({match, _}, re:run(Dom, <<"data-kind=\"doctor-node-utilisation\".*?<svg class=\"chart\"">>,
                                                 [dotall])),
                 %% one marker per scheduler online
                 {match, [Chart]} = re:run(Dom, <<"data-kind=\"doctor-node-utilisation\".*?</svg>">>,
                                           [dotall, {capture, first, binary}]),
                 N = node_of(Html),
                 ?assertEqual(length(maps:get(<<"utilisation_schedulers">>, N)),
                              length(binary:matches(Chart, <<"<circle">>))),
                 %% migrations drawn when the kernel showed them
                 Drawn = binary:match(Dom, <<"data-kind=\"doctor-node-migrations\"">>) =/= nomatch,
                 ct:log("migrations: ~p", [maps:get(<<"migrations">>, N)]),
                 ?assertEqual(maps:get(<<"per_scheduler">>, maps:get(<<"migrations">>, N)) =/= [], Drawn)
             end || W <- [1300, 800]],
            ok
    end.

%% The saved document's `extra.node' beside the page.
node_of(Html) ->
    {ok, Json} = file:read_file(filename:join(filename:dirname(Html), "doctor.json")),
    {ok, Doc} = beamlab_json:decode(Json),
    maps:get(<<"node">>, maps:get(<<"extra">>, Doc)).

%% One process spinning on two schedulers: one scheduler saturated, the
%% other idle, in most samples: the imbalance finding, with each
%% scheduler's share. (Scheduler wall time counts a scheduler that the
%% OS preempts as busy, so a loaded machine does not hide the pattern.)
imbalance_one_spinner(_Config) ->
    {Peer, Node} = peer(doctor_node_spin, ["+S", "2:2"],
                        "erlang:spawn(fun() -> L = fun Loop() -> Loop() end, L() end), ok."),
    try
        #{doc := Doc} = doctor(Node, 3, []),
        ?assert(lists:member(<<"imbalance">>, ids(Doc))),
        [F] = [F || #{<<"id">> := <<"imbalance">>} = F <- maps:get(<<"findings">>, Doc)],
        D = maps:get(<<"data">>, F),
        ?assertEqual(2, length(maps:get(<<"per_scheduler">>, D))),
        ?assertEqual(1, length(maps:get(<<"hot">>, D))),
        ?assertEqual(1, length(maps:get(<<"idle">>, D)))
    after
        peer:stop(Peer)
    end.

%% SIGTERM while watching: beamlab stops (130), keeps what it recorded
%% (partial), and the node's flags are as found: microstate accounting
%% that was on stays on, scheduler wall time that was off is off.
flags_restored_after_term(_Config) ->
    {Peer, Node} = peer(doctor_node_term, [], light_load()),
    try
        false = eval(Peer, "erlang:system_flag(microstate_accounting, true)."),
        H = watching(Peer, Node),
        ok = beamlab_test_util:signal_group(H, "TERM"),
        R = beamlab_test_util:cli_group_finish(H),
        ct:log("exit ~p~nstderr:~n~ts", [maps:get(code, R), maps:get(err, R)]),
        ?assertEqual(130, maps:get(code, R)),
        ?assertEqual(false, swt_on(Peer)),
        ?assertEqual(true, msacc_on(Peer))
    after
        peer:stop(Peer)
    end.

%% SIGKILL while watching: nothing of beamlab runs to restore anything;
%% the holder on the node sees the connection go and turns the flags back.
flags_restored_after_kill(_Config) ->
    {Peer, Node} = peer(doctor_node_kill, [], light_load()),
    try
        H = watching(Peer, Node),
        ok = beamlab_test_util:signal_group(H, "KILL"),
        _ = beamlab_test_util:cli_group_finish(H),
        beamlab_test_util:wait_until(fun() -> not swt_on(Peer) end, 30000, scheduler_wall_time_off),
        ?assertEqual(false, msacc_on(Peer))
    after
        peer:stop(Peer)
    end.

%% A doctor watching `Node' for a minute, once its flags are on there.
watching(Peer, Node) ->
    H = beamlab_test_util:cli_start_group(["doctor", "--node", Node, "--cookie", ?COOKIE, "--duration", "60"], #{}),
    _ = beamlab_test_util:wait_for_file(maps:get(err_file, H), "doctor: watching", 30000),
    beamlab_test_util:wait_until(fun() -> swt_on(Peer) end, 30000, scheduler_wall_time_on),
    H.

%% No such node, a wrong cookie, not a node name, --node with --compare,
%% --target or the probe's options, --duration alone: one line each, exit 2
%% for a usage error, 1 for a node that is not there or refuses.
bad_input(_Config) ->
    {Peer, Node} = peer(doctor_node_bad, [], "ok."),
    try
        Cases = [{1, ["doctor", "--node", "doctor_node_nobody@127.0.0.1", "--duration", "1"], <<"no node">>},
                 {1, ["doctor", "--node", Node, "--cookie", "not_the_cookie", "--duration", "1"], <<"wrong cookie">>},
                 {2, ["doctor", "--node", "nonsense", "--duration", "1"], <<"not a node name">>},
                 {2, ["doctor", "--compare", "--node", Node, "a.json", "b.json"], <<"--node does not apply">>},
                 {2, ["doctor", "--node", Node, "--vm", "+S 1:1"], <<"--vm applies to the fresh VMs">>},
                 {2, ["doctor", "--node", Node, "--target", "rabbitmq"], <<"give one of them">>},
                 {2, ["doctor", "--duration", "3"], <<"give --node">>}],
        [begin
             R = beamlab_test_util:cli(Args),
             ct:log("~p -> ~p ~ts", [Args, maps:get(code, R), maps:get(err, R)]),
             ?assertEqual(Code, maps:get(code, R)),
             ok = beamlab_test_util:assert_one_line_error(R),
             ?assertMatch({_, _}, binary:match(maps:get(err, R), Said))
         end || {Code, Args, Said} <- Cases],
        ok
    after
        peer:stop(Peer)
    end.

%% beamlab:doctor(#{node => ...}) from Erlang: the same document.
api_erlang(_Config) ->
    {Peer, Node} = peer(doctor_node_api, ["+S", "2:2"], light_load()),
    try
        {ok, Doc} = beamlab:doctor(#{node => Node, cookie => ?COOKIE, duration => 2}),
        ?assertMatch(#{kind := doctor}, Doc),
        X = maps:get(extra, Doc),
        ?assertMatch(#{<<"node">> := #{<<"name">> := _}}, X),
        ?assert(is_binary(maps:get(<<"recommendation">>, X))),
        ?assertEqual({false, false}, {msacc_on(Peer), swt_on(Peer)})
    after
        peer:stop(Peer)
    end.
