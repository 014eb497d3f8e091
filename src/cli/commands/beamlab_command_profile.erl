%%% @doc `beamlab profile': where the time goes, with perf and the JIT.
%%% `beamlab profile [OPTIONS] -- COMMAND...' runs a beamlab command in a
%%% fresh VM with the JIT's perf support and profiles it end to end;
%%% `--pid OSPID' and `--node NAME@HOST' profile a VM that runs already
%%% (a broker under `beamlab amqp' load). Prints the top table; `--folded'
%%% writes folded stacks, `--save' the document that `beamlab report' draws
%%% as a flame graph (and a differential one for two profiles).
-module(beamlab_command_profile).
-behaviour(beamlab_command).

-export([summary/0, options/0, usage/0, run/1, text/2]).

-define(DEFAULT_FREQ, 999).
-define(DEFAULT_ATTACH_S, 10).

%% @doc One line for `beamlab help'.
-spec summary() -> string().
summary() ->
    "profile a command or a running VM with perf: top table, folded stacks, flame graphs".

%% @doc Options of `beamlab profile'.
-spec options() -> [beamlab_cli_args:option()].
options() ->
    [#{name => freq, short => "F", long => "freq", type => pos_integer, default => ?DEFAULT_FREQ,
       max => beamlab_profile:max_frequency(), max_why => "kernel.perf_event_max_sample_rate",
       metavar => "HZ", help => "samples per second and thread (default 999)"},
     #{name => call_graph, long => "call-graph", type => {enum, [fp, dwarf]}, default => fp, metavar => "fp|dwarf",
       help => "stack walking: fp (frame pointers, default) or dwarf (keeps the callers of C functions; "
               "more data, use a lower --freq)"},
     #{name => duration, long => "duration", type => pos_number, metavar => "S",
       help => "seconds to record (default: until the command ends; 10 with --pid/--node)"},
     #{name => pid, long => "pid", type => pos_integer, metavar => "OSPID",
       help => "profile the running VM with this OS pid"},
     #{name => node, long => "node", type => string, metavar => "NAME@HOST",
       help => "profile the running VM of this Erlang node (same machine)"},
     #{name => cookie, long => "cookie", type => cookie, metavar => "COOKIE",
       help => "cookie for --node (default: ~/.erlang.cookie)"},
     #{name => label, long => "label", type => string, metavar => "TEXT",
       help => "name of the profile (reports diff profiles with the same name)"},
     #{name => folded, long => "folded", type => string, metavar => "FILE",
       help => "write folded stacks (flamegraph.pl, inferno, speedscope)"},
     #{name => top, long => "top", type => pos_integer, default => 25, metavar => "N",
       help => "rows of the top table (default 25)"},
     #{name => callers, long => "callers", type => string, multi => true, metavar => "FUNCTION",
       help => "also list who calls FUNCTION (as named in the table; repeatable)"}
     | beamlab_cli_args:common_options()].

%% @doc Examples for `beamlab help profile'.
-spec usage() -> iodata().
usage() ->
    "Usage: beamlab profile [OPTIONS] -- COMMAND...\n"
    "       beamlab profile --pid OSPID | --node NAME@HOST [--duration S] [OPTIONS]\n\n"
    "Samples call stacks with perf (Debian package linux-perf) at --freq per thread.\n"
    "Each sample is resolved into an Erlang function (Module:Function/Arity, named\n"
    "by the JIT's perf map), an emulator C function (GC, hashing, copying, BIFs),\n"
    "the kernel, or beamlab's own harness, and counted per thread type (normal\n"
    "schedulers, dirty CPU, dirty IO, other). A command runs in a fresh VM started\n"
    "with +JPperf true; a running VM needs that flag for named Erlang frames.\n\n"
    "Examples:\n"
    "  beamlab profile -- run 'lists:seq(1, 100).' -s 3\n"
    "  beamlab profile --folded out.folded --save p.json -- suite message_load -s 3\n"
    "  beamlab profile --pid $(pgrep -f rabbit) --duration 10\n"
    "  beamlab profile --node rabbit@$(hostname -s) --cookie SECRET --duration 10\n"
    "  beamlab report before.json after.json -o flame.html   (differential flame graph)\n".

%% @doc Runs the command.
-spec run(beamlab_cli_args:parsed()) -> beamlab_command:outcome().
run(Parsed) ->
    Get = fun(K) -> beamlab_cli_args:get(K, Parsed) end,
    Rest = maps:get(rest, Parsed, []),
    Target = target(Get(pid), Get(node), Rest, Parsed),
    maps:get(args, Parsed) =:= [] orelse
        beamlab_cli_error:usage("unexpected argument '~ts': put the command to profile after --",
                                [hd(maps:get(args, Parsed))]),
    Duration = case {Get(duration), Target} of
                   {undefined, {command, _, _}} -> infinity;
                   {undefined, _} -> ?DEFAULT_ATTACH_S * 1000;
                   {Secs, _} -> max(1, round(Secs * 1000))
               end,
    Get(folded) =:= undefined orelse beamlab_cli_output:check_output("--folded", Get(folded)),
    Started = beamlab_runtime_clock:rfc3339(),
    {RecTarget, Subject, Inner, InnerDoc} = resolve(Target, Get(label)),
    ok = beamlab_runtime_interrupt:subscribe(),
    %% perf's data goes to the launcher's private directory when there is
    %% one: removed however this VM ends.
    Scratch = case maps:find(checkpoint, Parsed) of
                  {ok, Dir} -> #{scratch => Dir};
                  error -> #{}
              end,
    Outcome = try beamlab_profile:record(RecTarget, Scratch#{frequency => Get(freq), duration => Duration,
                                                             call_graph => Get(call_graph),
                                                             on_output => output_fun(InnerDoc)})
              after
                  ok = beamlab_runtime_interrupt:unsubscribe()
              end,
    case Outcome of
        {ok, #{exit_status := S}} when S =/= 0, S =/= 130 ->
            %% The command failed and said why on stderr (one line): its
            %% exit code is ours, and a profile of a failure is not shown.
            cleanup(InnerDoc),
            {exit_code(S), none};
        {ok, O} ->
            Benches = inner_benchmarks(InnerDoc),
            Doc = document(O, Subject, Inner, Benches, Started, Get, maps:get(argv, Parsed)),
            write_folded(Get(folded), Doc),
            Code = case O of
                       #{interrupted := true} -> beamlab_runtime_interrupt:exit_code();
                       _ -> 0
                   end,
            {Code, Doc};
        {error, Reason} ->
            cleanup(InnerDoc),
            beamlab_cli_error:fail("~ts", [beamlab_profile:format_error(Reason)])
    end.

exit_code(2) -> 2;
exit_code(_) -> 1.

%% @doc The top table.
-spec text(beamlab_result:result(), beamlab_cli_args:parsed()) -> unicode:chardata().
text(Doc, Parsed) ->
    Callers = case Doc of
                  #{extra := #{<<"profile">> := P}} ->
                      [{F, beamlab_profile_stacks:callers(P, F, 10)}
                       || F0 <- beamlab_cli_args:get(callers, Parsed, []),
                          F <- [unicode:characters_to_binary(F0)]];
                  _ -> []
              end,
    beamlab_render_profile:render(Doc, #{unicode => beamlab_cli_output:unicode(Parsed),
                                          top => beamlab_cli_args:get(top, Parsed, 25),
                                          callers => Callers}).

target(undefined, undefined, [], _) ->
    beamlab_cli_error:usage("nothing to profile: give a command after -- "
                            "(beamlab profile -- run 'lists:seq(1, 100).'), --pid or --node", []);
target(undefined, undefined, [Cmd | _] = Rest, _) ->
    case lists:keyfind(Cmd, 1, beamlab_command:all()) of
        {"profile", _} -> beamlab_cli_error:usage("profile cannot profile itself", []);
        {_, _} -> {command, Rest, Cmd};
        false -> {command, Rest, Cmd}
    end;
target(Pid, undefined, [], _) when is_integer(Pid) -> {pid, Pid};
target(undefined, Node, [], Parsed) when is_list(Node) ->
    {node, Node, beamlab_cli_args:get(cookie, Parsed)};
target(_, _, [_ | _], _) ->
    beamlab_cli_error:usage("give either a command after -- or --pid/--node, not both", []);
target(_, _, _, _) ->
    beamlab_cli_error:usage("--pid and --node cannot be combined", []).

resolve({command, Argv, _Cmd}, Label) ->
    Exe = escript_path(),
    Escript = case os:find_executable("escript") of
                  false -> beamlab_cli_error:fail("escript not found on PATH", []);
                  E -> E
              end,
    {Extra, InnerDoc} = case lists:any(fun(A) -> A =:= "--save" orelse lists:prefix("--save=", A) end, Argv)
                            orelse lists:member(hd(Argv), ["help", "env", "report", "compare"]) of
                            true -> {[], undefined};
                            false ->
                                Tmp = filename:join(filename:basedir(user_cache, "beamlab"),
                                                    "profile-inner-" ++ os:getpid() ++ "-"
                                                    ++ integer_to_list(erlang:unique_integer([positive]))
                                                    ++ ".json"),
                                ok = filelib:ensure_dir(Tmp),
                                {["--save=" ++ Tmp], Tmp}
                        end,
    Subject = case Label of
                  undefined -> unicode:characters_to_binary(lists:join(" ", ["beamlab" | Argv]));
                  L -> unicode:characters_to_binary(L)
              end,
    {{command, Escript, [Exe | Argv ++ Extra], []}, Subject, Argv, InnerDoc};
resolve({pid, Pid}, Label) ->
    {{pid, Pid}, label(Label, io_lib:format("OS pid ~b", [Pid])), [], undefined};
resolve({node, Name, Cookie}, Label) ->
    case beamlab_profile_node:os_pid(Name, Cookie) of
        {ok, Pid} -> {{pid, Pid}, label(Label, Name), [], undefined};
        {error, Reason} -> beamlab_cli_error:fail("~ts", [beamlab_profile_node:format_error(Reason)])
    end.

%% The profiled command's output goes to stderr, without the line about
%% the temporary file it saved its document to for us.
output_fun(undefined) ->
    fun(D) -> io:put_chars(standard_error, D) end;
output_fun(Tmp) ->
    Line = unicode:characters_to_binary(["saved: ", Tmp, "\n"]),
    fun(D) -> io:put_chars(standard_error, binary:replace(D, Line, <<>>)) end.

label(undefined, Default) -> unicode:characters_to_binary(Default);
label(L, _) -> unicode:characters_to_binary(L).

escript_path() ->
    Path = try escript:script_name() catch _:_ -> "" end,
    case Path =/= "" andalso filelib:is_regular(Path) of
        true -> filename:absname(Path);
        false -> beamlab_cli_error:fail("profiling a command needs the beamlab escript (run ./beamlab)", [])
    end.

inner_benchmarks(undefined) ->
    [];
inner_benchmarks(Tmp) ->
    Bs = case beamlab_result:load(Tmp) of
             {ok, D} -> maps:get(benchmarks, D, []);
             {error, _} -> []
         end,
    cleanup(Tmp),
    Bs.

cleanup(undefined) -> ok;
cleanup(Tmp) -> _ = file:delete(Tmp), ok.

document(O, Subject, Inner, Benches, Started, Get, Argv) ->
    #{profile := P, os_pid := OsPid, perf_support := Support, target_exited := Exited,
      elapsed_ms := Elapsed, interrupted := Int} = O,
    Params = #{subject => Subject, frequency => Get(freq), call_graph => Get(call_graph),
               target => case Inner of
                             [] -> #{os_pid => OsPid};
                             _ -> #{command => [unicode:characters_to_binary(A) || A <- Inner]}
                         end},
    Doc0 = beamlab_result:new(profile, #{command => Argv, started_at => Started, params => Params}),
    Doc1 = beamlab_result:add_benchmarks(Doc0, Benches),
    Doc2 = beamlab_result:set(extra, #{profile => P#{<<"perf_support">> => Support,
                                                      <<"target_exited">> => Exited,
                                                      <<"elapsed_ms">> => Elapsed,
                                                      <<"subject">> => Subject}},
                              Doc1),
    beamlab_result:finish(Doc2, #{finished_at => beamlab_runtime_clock:rfc3339(), partial => Int}).

write_folded(undefined, _Doc) ->
    ok;
write_folded(Path, #{extra := #{<<"profile">> := P}}) ->
    case beamlab_runtime_file:write(Path, beamlab_profile_stacks:folded(P)) of
        {ok, _} -> io:format(standard_error, "folded stacks: ~ts~n", [Path]);
        {error, R} -> beamlab_cli_error:fail("cannot write ~ts: ~ts", [Path, beamlab_runtime_file:format_error(R)])
    end.
