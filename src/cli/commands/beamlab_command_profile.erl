%%% @doc `beamlab profile': where the time goes, with perf and the JIT.
%%% `beamlab profile [OPTIONS] -- COMMAND...' runs a beamlab command in a
%%% fresh VM with the JIT's perf support and profiles it end to end;
%%% `--pid OSPID' and `--node NAME@HOST' profile a VM that runs already
%%% (a broker under `beamlab amqp' load). Prints the top table; `--folded'
%%% writes folded stacks, `--speedscope' speedscope's JSON, `--save' the document that `beamlab report' draws
%%% as a flame graph (and a differential one for two profiles).
-module(beamlab_command_profile).
-behaviour(beamlab_command).

-export([summary/0, options/0, usage/0, run/1, experiment/1, text/2]).
-export([kind/0, files/1]).

-include("beamlab_cli_error.hrl").

%% @doc One line for `beamlab help'.
-spec summary() -> string().
summary() ->
    "profile a command or a running VM with perf: top table, folded stacks, flame graphs".

%% @doc Options of `beamlab profile': the profile kind's
%% (`beamlab_experiment_profile:options/0'), the table's and the files',
%% the call capture's (`beamlab_experiment_capture:options/0', `--process'
%% and the flags that go with it), the common ones.
-spec options() -> [beamlab_cli_args:option()].
options() ->
    Perf = beamlab_schema:flags(beamlab_experiment_profile:options()),
    Names = [N || #{name := N} <- Perf],
    Perf
    ++ [#{name => folded, long => "folded", type => string, metavar => "FILE",
          help => "write folded stacks (flamegraph.pl, inferno, speedscope)"},
        #{name => speedscope, long => "speedscope", type => string, metavar => "FILE",
          help => "write the profile in speedscope's JSON format (speedscope FILE, or www.speedscope.app)"},
        #{name => top, long => "top", type => pos_integer, default => 25, metavar => "N",
          max => 100000, max_why => "rows of one table",
          help => "rows of the top table"},
        #{name => callers, long => "callers", type => string, multi => true, metavar => "FUNCTION",
          help => "also list who calls FUNCTION (as named in the table; repeatable)"}]
    ++ [F || #{name := N} = F <- beamlab_schema:flags(beamlab_experiment_capture:options()),
             not lists:member(N, Names)]
    ++ beamlab_cli_args:common_options().

%% The flags of one kind that the other does not take (`--process' and
%% `--pid' aside: each has its own line).
only(Kind, Other) ->
    Others = [N || #{name := N} <- Other:options()],
    [{N, Long} || #{name := N, long := Long} <- Kind:options(), not lists:member(N, Others),
                  N =/= process, N =/= pid].

%% @doc Examples for `beamlab help profile'.
-spec usage() -> iodata().
usage() ->
    "Usage: beamlab profile [OPTIONS] -- COMMAND...\n"
    "       beamlab profile --pid OSPID | --node NAME@HOST [--duration S] [OPTIONS]\n"
    "       beamlab profile --node NAME@HOST --process PID|NAME|top:reductions|top:message_queue|queue:NAME\n"
    "                       [--process ...] [--duration S] [--stacks sample|trace] [--calls time|none]\n"
    "                       [--duty PCT] [--duty-period S] [--patterns own|all]\n\n"
    "Samples call stacks with perf (Debian package linux-perf) at --freq per thread.\n"
    "Each sample is resolved into an Erlang function (Module:Function/Arity, named\n"
    "by the JIT's perf map), an emulator C function (GC, hashing, copying, BIFs),\n"
    "the kernel, or beamlab's own harness, and counted per thread type (normal\n"
    "schedulers, dirty CPU, dirty IO, other). A command runs in a fresh VM started\n"
    "with +JPperf true; a running VM needs that flag for named Erlang frames.\n\n"
    "Examples:\n"
    "  beamlab profile -- run 'lists:seq(1, 100).' -s 3\n"
    "  beamlab profile --folded out.folded --save p.json -- suite message_load -s 3\n"
    "  beamlab profile --speedscope p.speedscope.json -- run 'lists:seq(1, 100).'\n"
    "  beamlab profile --pid $(pgrep -f rabbit) --duration 10\n"
    "  beamlab profile --node rabbit@$(hostname -s) --cookie SECRET --duration 10\n"
    "  beamlab profile --node app@host --process my_server --duration 5 --save --folded s.folded\n"
    "  beamlab profile --node app@host --process top:message_queue --calls none\n"
    "  (--process counts calls with call_time patterns on its own modules 5% of the time by default,\n"
    "   counts and times scaled and said to be; --duty 100: every call of every function timed, the\n"
    "   full table, at a tenth of the process's speed or less for call-heavy code; docs/profile.md)\n"
    "  beamlab report before.json after.json -o flame.html   (differential flame graph)\n".

%% @doc The files written besides `--save' (`--folded', `--speedscope').
-spec files(beamlab_cli_args:parsed()) -> #{outputs := [beamlab_runtime_file:named()]}.
files(Parsed) ->
    #{outputs => [{"--" ++ atom_to_list(O), P} || O <- [folded, speedscope],
                                                 P <- [beamlab_cli_args:get(O, Parsed)], P =/= undefined]}.

%% @doc Runs the command.
-spec run(beamlab_cli_args:parsed()) -> beamlab_command:outcome().
run(Parsed) ->
    ?CATCHING(run_parsed(Parsed)).

run_parsed(Parsed) ->
    Exp = describe(Parsed),
    Get = fun(K) -> beamlab_cli_args:get(K, Parsed) end,
    %% An output file that cannot be written is said now, not after the run.
    _ = [?CHECK(beamlab_cli_output:check_output("--" ++ atom_to_list(O), P))
         || O <- [folded, speedscope], P <- [Get(O)], P =/= undefined],
    {Code, Doc} = ?VALUE(beamlab_cli_experiment:run(Exp)),
    write_folded(Get(folded), Doc),
    write_speedscope(Get(speedscope), Doc),
    {Code, Doc}.

%% @doc The experiment: what to profile (an inner command parsed into its
%% experiment, an OS pid, a node), how often and how long.
-spec experiment(beamlab_cli_args:parsed()) ->
          {ok, beamlab_experiment:experiment()} | {error, beamlab_cli_error:reason()}.
experiment(Parsed) ->
    ?CATCHING({ok, describe(Parsed)}).

describe(Parsed) ->
    case beamlab_cli_args:get(process, Parsed, []) of
        [] ->
            Given = maps:get(given, Parsed, []),
            [?USAGE("--~ts goes with --process", [L])
             || {K, L} <- only(beamlab_experiment_capture, beamlab_experiment_profile), lists:member(K, Given)],
            perf_experiment(Parsed);
        _ ->
            capture_experiment(Parsed)
    end.

%% `--node N --process P': a call capture (beamlab_experiment_capture).
capture_experiment(Parsed) ->
    Get = fun(K) -> beamlab_cli_args:get(K, Parsed) end,
    Get(node) =:= undefined andalso
        ?USAGE("--process captures a process of a running node: give its --node", []),
    (Get(pid) =/= undefined orelse maps:get(rest, Parsed, []) =/= [] orelse maps:get(args, Parsed) =/= [])
        andalso ?USAGE("--process goes with --node only (not --pid or a command)", []),
    Given = maps:get(given, Parsed, []),
    [?USAGE("--~ts is perf's: a --process capture does not take it", [L])
     || {K, L} <- only(beamlab_experiment_profile, beamlab_experiment_capture) ++ [{callers, "callers"}],
        lists:member(K, Given)],
    Opts = ?VALUE(beamlab_cli_schema:given(beamlab_experiment_capture:options(), Parsed)),
    case beamlab_experiment_capture:new(Opts#{node => Get(node), cookie => Get(cookie)}) of
        {ok, C} -> #{run => {capture, C}, command => maps:get(argv, Parsed)};
        {error, {option, R}} -> ?ABORT(beamlab_cli_schema:refusal(R));
        {error, R} -> ?USAGE("~ts", [beamlab_experiment_capture:format_error(R)])
    end.

perf_experiment(Parsed) ->
    Get = fun(K) -> beamlab_cli_args:get(K, Parsed) end,
    Subject = subject(Get(pid), Get(node), maps:get(rest, Parsed, [])),
    maps:get(args, Parsed) =:= [] orelse
        ?USAGE("unexpected argument '~ts': put the command to profile after --",
               [hd(maps:get(args, Parsed))]),
    Given = ?VALUE(beamlab_cli_schema:given(beamlab_experiment_profile:options(), Parsed)),
    case beamlab_experiment_profile:new(maps:merge(Given, Subject)) of
        {ok, Profile} -> #{run => {profile, Profile}, command => maps:get(argv, Parsed)};
        {error, {option, R}} -> ?ABORT(beamlab_cli_schema:refusal(R))
    end.

%% @doc The top table.
-spec text(beamlab_result:result(), beamlab_cli_args:parsed()) -> unicode:chardata().
text(#{kind := capture} = Doc, Parsed) ->
    beamlab_render_capture:render(Doc, #{top => beamlab_cli_args:get(top, Parsed, 25)});
text(Doc, Parsed) ->
    Callers = case Doc of
                  #{extra := #{<<"profile">> := P}} ->
                      [{F, beamlab_profile_stacks:callers(P, F, 10)}
                       || F0 <- beamlab_cli_args:get(callers, Parsed, []),
                          F <- [unicode:characters_to_binary(F0)]];
                  _ -> []
              end,
    beamlab_render_view:text(Doc, #{unicode => beamlab_cli_output:unicode(Parsed),
                                    top => beamlab_cli_args:get(top, Parsed, 25),
                                    callers => Callers}).

%% The subject besides `--pid' and `--node' (the kind's options): a
%% command after `--'.
subject(undefined, undefined, []) ->
    ?USAGE("nothing to profile: give a command after -- "
           "(beamlab profile -- run 'lists:seq(1, 100).'), --pid or --node", []);
subject(undefined, undefined, ["profile" | _]) ->
    ?USAGE("profile cannot profile itself", []);
subject(undefined, undefined, Command) ->
    #{subject => {experiment, ?VALUE(beamlab_cli_experiment:inner(profile, Command))}};
subject(_, _, [_ | _]) ->
    ?USAGE("give either a command after -- or --pid/--node, not both", []);
subject(_, _, []) ->
    #{}.

write_speedscope(undefined, _Doc) ->
    ok;
write_speedscope(Path, Doc) ->
    {ok, Json} = beamlab_render_speedscope:render(Doc),
    case beamlab_runtime_file:write(Path, Json) of
        {ok, _} -> io:format(standard_error, "speedscope profile: ~ts~n", [Path]);
        {error, R} -> ?FAIL("cannot write ~ts: ~ts", [Path, beamlab_runtime_file:format_error(R)])
    end.

write_folded(undefined, _Doc) ->
    ok;
write_folded(Path, #{extra := #{<<"profile">> := P}}) ->
    case beamlab_runtime_file:write(Path, beamlab_profile_stacks:folded(P)) of
        {ok, _} -> io:format(standard_error, "folded stacks: ~ts~n", [Path]);
        {error, R} -> ?FAIL("cannot write ~ts: ~ts", [Path, beamlab_runtime_file:format_error(R)])
    end.

%% @doc The kind of experiment the command runs.
-spec kind() -> profile.
kind() -> profile.
