%%% Crafted input (issue 27): random and adversarial JSON, Erlang terms,
%%% /proc and /sys trees and option values, fed to everything that reads
%%% them. Each property holds when the reader answers (a value or a
%%% one-line error), never crashes, never reports an internal error, and
%%% never hangs: every call runs aside with a limit (a hang detector, not
%%% a timing assertion). Run from hardening_SUITE (crafted_inputs), which
%%% also drives the escript with some of these files.
-module(prop_beamlab_crafted).
-include_lib("proper/include/proper.hrl").

-export([prop_result_numbers/2, numbers_doc/1, prop_uri_secrets/0, prop_output_paths/2]).
-export([prop_json/0, prop_result_files/2, prop_term_files/1, prop_env_root/1, prop_options/0,
         prop_dispatch_options/0, prop_experiments/1]).
-export([commands/0]).
-export([bounded/2, json_text/0, term_text/0]).

%% A call that takes longer than this is a hang.
-define(HANG_MS, 20000).

%%--------------------------------------------------------------------
%% Helpers

%% Runs Fun aside; `{ok, Value}', `{crashed, Class, Reason}' or `hang'.
bounded(Fun, Ms) ->
    {Pid, Ref} = spawn_monitor(fun() ->
                                       exit({done, try {ok, Fun()}
                                                   catch C:R -> {crashed, C, R}
                                                   end})
                               end),
    receive
        {'DOWN', Ref, process, Pid, {done, R}} -> R;
        {'DOWN', Ref, process, Pid, Other} -> {crashed, exit, Other}
    after Ms ->
            exit(Pid, kill),
            hang
    end.

one_line(Text) ->
    Flat = unicode:characters_to_binary(Text),
    is_binary(Flat) andalso binary:match(Flat, <<"\n">>) =:= nomatch.

is_text(Msg) ->
    is_binary(unicode:characters_to_binary(Msg)).

no_internal(Msg) ->
    binary:match(unicode:characters_to_binary(Msg), <<"internal error">>) =:= nomatch.

write_tmp(Dir, Name, Bytes) ->
    File = filename:join(Dir, Name),
    ok = file:write_file(File, Bytes),
    File.

%%--------------------------------------------------------------------
%% JSON

%% Text that is almost JSON, or is JSON built to be expensive.
json_text() ->
    oneof([binary(),
           ?LET(J, json(), iolist_to_binary(beamlab_json:encode(J))),
           ?LET({J, Cut}, {json(), nat()}, truncate(iolist_to_binary(beamlab_json:encode(J)), Cut)),
           ?LET(N, range(1, 3000), binary:copy(<<"[">>, N)),
           ?LET(N, range(1, 600), <<(binary:copy(<<"[">>, N))/binary, (binary:copy(<<"]">>, N))/binary>>),
           ?LET(N, range(1, 600), <<(binary:copy(<<"{\"a\":">>, N))/binary, "1",
                                    (binary:copy(<<"}">>, N))/binary>>),
           ?LET(N, range(900, 5000), <<"[", (binary:copy(<<"9">>, N))/binary, "]">>),
           ?LET(N, range(900, 5000), <<"-0.", (binary:copy(<<"1">>, N))/binary, "e-5">>),
           elements([<<"1e999999999">>, <<"-1e-999999999">>, <<"\"\\ud800\"">>, <<"\"\\udc00x\"">>,
                     <<"\"a", 255, 254, "b\"">>, <<"\"", 0, "\"">>, <<"{\"a\":1,\"a\":2}">>,
                     <<"[1,]">>, <<"{\"a\"}">>, <<"nul">>, <<"\"\\u12\"">>, <<>>, <<" ">>,
                     <<"{\"schema\":\"beamlab.result\",\"version\":99999999999999999999}">>,
                     <<"{\"schema\":\"beamlab.result\",\"version\":1}">>])]).

json() ->
    ?SIZED(S, json(min(S, 20))).
json(0) ->
    oneof([null, true, false, integer(), float(), utf8(), ?LET(B, binary(), B)]);
json(S) ->
    frequency([{3, json(0)},
               {1, ?LAZY(list(json(S div 3)))},
               {1, ?LAZY(?LET(KVs, list({utf8(), json(S div 3)}), maps:from_list(KVs)))}]).

truncate(Bin, Cut) ->
    binary:part(Bin, 0, Cut rem (byte_size(Bin) + 1)).

%% The JSON decoder answers every text.
prop_json() ->
    ?FORALL(Text, json_text(),
            case bounded(fun() -> beamlab_json:decode(Text) end, ?HANG_MS) of
                {ok, {ok, Value}} -> valid_strings(Value);
                {ok, {error, Reason}} -> one_line(beamlab_json:format_error(Reason));
                Other -> report(Text, Other)
            end).

%% Every decoded string is valid UTF-8.
valid_strings(B) when is_binary(B) -> unicode:characters_to_binary(B) =:= B;
valid_strings(L) when is_list(L) -> lists:all(fun valid_strings/1, L);
valid_strings(M) when is_map(M) -> valid_strings(maps:keys(M)) andalso valid_strings(maps:values(M));
valid_strings(_) -> true.

%% Where an internal error came from: run again, printing its stack.
stack(Argv) ->
    os:putenv("BEAMLAB_DEBUG", "1"),
    try beamlab_cli:run_command(Argv, #{quiet => true})
    after os:unsetenv("BEAMLAB_DEBUG")
    end.

report(Input, Outcome) ->
    io:format(user, "~ninput: ~0tP~noutcome: ~0tP~n", [short(Input), 20, short(Outcome), 30]),
    false.

%% Long binaries cut for the log.
short(B) when is_binary(B), byte_size(B) > 200 -> <<(binary:part(B, 0, 200))/binary, "...">>;
short(L) when is_list(L) -> [short(X) || X <- L];
short(T) when is_tuple(T) -> list_to_tuple(short(tuple_to_list(T)));
short(X) -> X.

%%--------------------------------------------------------------------
%% Result files: compare and report through the dispatcher

%% A real result (one of `Bases', decoded) with one field replaced by a
%% random JSON value, or crafted text.
result_text(Bases) ->
    oneof([json_text(),
           ?LET({Base, Path, V}, {elements(Bases), list(nat()), json()},
                iolist_to_binary(beamlab_json:encode(replace(Base, Path, V))))]).

replace(_Json, [], V) -> V;
replace(M, [I | Rest], V) when is_map(M), map_size(M) > 0 ->
    Keys = lists:sort(maps:keys(M)),
    K = lists:nth(I rem length(Keys) + 1, Keys),
    M#{K := replace(maps:get(K, M), Rest, V)};
replace(L, [I | Rest], V) when is_list(L), L =/= [] ->
    N = I rem length(L) + 1,
    lists:sublist(L, N - 1) ++ [replace(lists:nth(N, L), Rest, V)] ++ lists:nthtail(N, L);
replace(_Other, _Path, V) -> V.

%% compare and report answer every pair of files: exit 0, 1 or 2, and
%% never an internal error.
prop_result_files(Dir, Bases) ->
    ?FORALL({A, B}, {result_text(Bases), result_text(Bases)},
            begin
                FA = write_tmp(Dir, "a.json", A),
                FB = write_tmp(Dir, "b.json", B),
                Out = filename:join(Dir, "r.html"),
                lists:all(fun(Argv) -> dispatched(Argv) end,
                          [["compare", FA, FB], ["report", FA, FB, "-o", Out],
                           ["compare", FA, FB, "--format", "json"]])
            end).

%% Numbers class (issue 34): a real result whose samples, statistics or
%% free-form values are extreme numbers (at, inside and beyond the bounds
%% of beamlab_result:limits/0: huge integers, 1.79e308, subnormals, mixes
%% of huge and tiny). compare and report answer with a correct result or a
%% one-line refusal, never badarith.
extreme() ->
    oneof([elements([0, 0.0, -0.0, 1.0e60, -1.0e60, 1.0e-60, -1.0e-60, 1.7976931348623157e308,
                     -1.79e308, 5.0e-324, 2.2250738585072014e-308, 1.0e59, 9.9e-61,
                     1 bsl 199, -(1 bsl 199), 1 bsl 1000, 999999999999999999999]),
           ?LET(E, range(-340, 310), math:pow(10, E) * 1.0),
           ?LET(D, range(20, 990), list_to_integer(lists:duplicate(D, $9))),
           float(), integer()]).

%% Inside the bounds: these must give a result, not a refusal.
in_range() ->
    oneof([elements([0, 1.0e60, -1.0e60, 1.0e-60, -1.0e-60, 1 bsl 199, 3]),
           ?LET({M, E}, {float(0.1, 9.9), range(-59, 59)}, M * math:pow(10, E)),
           ?LET({M, E}, {float(-9.9, -0.1), range(-59, 59)}, M * math:pow(10, E))]).

numbers_doc(Bases) ->
    ?LET({Base, Samples, Where, V},
         {elements(Bases), oneof([non_empty(list(in_range())), non_empty(list(extreme()))]),
          oneof([[], non_empty(list(nat()))]), oneof([in_range(), extreme()])},
         begin
             Bs = [maps:remove(<<"stats">>, B#{<<"samples">> => Samples})
                   || B <- maps:get(<<"benchmarks">>, Base, [])],
             Doc = Base#{<<"benchmarks">> => Bs},
             iolist_to_binary(beamlab_json:encode(case Where of
                                                      [] -> Doc;
                                                      _ -> replace(Doc, Where, V)
                                                  end))
         end).

prop_result_numbers(Dir, Bases) ->
    ?FORALL({A, B}, {elements([iolist_to_binary(beamlab_json:encode(hd(Bases)))]), numbers_doc(Bases)},
            begin
                FA = write_tmp(Dir, "a.json", A),
                FB = write_tmp(Dir, "b.json", B),
                Out = filename:join(Dir, "r.html"),
                lists:all(fun(Argv) -> dispatched(Argv) end,
                          [["compare", FA, FB], ["compare", FB, FA, "--format", "json"],
                           ["report", FB, FA, "-o", Out]])
            end).

%% URIs class (issue 34): a URI holding secrets in its user-info and in
%% query parameters named as secrets (any case, percent-encoded names,
%% `;' or `&' separators, known parameters around them) is checked as
%% `amqp -h' checks it; whatever the answer (an experiment, or a one-line
%% error quoting the URI), neither secret appears in it, nor in the
%% command line a document records.
secret() ->
    ?LET(Cs, vector(10, elements(lists:seq($a, $z) ++ lists:seq($A, $Z) ++ lists:seq($0, $9))),
         "Zq" ++ Cs).

secret_key() ->
    ?LET({K, Upper, Enc}, {elements(["password", "passwd", "pwd", "token", "access_token", "api_key",
                                     "apikey", "secret", "client_secret", "cookie", "credential"]),
                           boolean(), boolean()},
         begin
             K1 = case Upper of true -> string:uppercase(K); false -> K end,
             case Enc of
                 true -> "%" ++ integer_to_list(hd(K1), 16) ++ tl(K1);
                 false -> K1
             end
         end).

uri() ->
    ?LET({Scheme, User, Pass, Key, Val, Before, After, Sep},
         {elements(["amqp", "amqps", "AMQP"]), elements(["guest", "u", ""]), secret(), secret_key(), secret(),
          elements([[], ["heartbeat=5"], ["frame_max=8192", "channel_max=10"]]),
          elements([[], ["heartbeat=x"], ["nosuch=1"]]), elements(["&", ";"])},
         {Scheme ++ "://" ++ User ++ ":" ++ Pass ++ "@127.0.0.1:1/%2F?"
          ++ lists:append(lists:join(Sep, Before ++ [Key ++ "=" ++ Val] ++ After)), [Pass, Val]}).

prop_uri_secrets() ->
    ?FORALL({Uri, Secrets}, uri(),
            begin
                Argv = ["-h", Uri, "-z", "1"],
                Said = case bounded(fun() -> experiment(beamlab_command_amqp, "amqp", Argv) end, ?HANG_MS) of
                           {ok, ok} -> <<>>;
                           {ok, {error, Msg}} -> unicode:characters_to_binary(Msg);
                           Other -> report(Argv, Other), <<"crashed">>
                       end,
                Recorded = iolist_to_binary(beamlab_result_redact:argv(["amqp" | Argv])),
                Clean = fun(B) -> lists:all(fun(S) -> binary:match(B, list_to_binary(S)) =:= nomatch end, Secrets) end,
                (Said =/= <<"crashed">> andalso no_internal(Said) andalso Clean(Said) andalso Clean(Recorded))
                    orelse report(Uri, {Said, Recorded})
            end).

%% Paths class (issue 34): an output path made of crafted parts (`..',
%% empty parts, a name that is not UTF-8, a very long name, a directory,
%% a missing directory, a name like an option) for `report -o' and as a
%% `compare' input: one answer (exit 0, 1 or 2, one line), never an
%% internal error, and the input file is never changed. (The input named
%% as the output itself is the output-identity policy's case, in
%% hardening_SUITE.) Paths start 8 directories below `Dir' and have at
%% most 6 parts: a `..' never leads out of the test's directory.
path_part() ->
    elements(["a", "..", ".", "", "sub", "in.json", "\x{ff}name", lists:duplicate(300, $p), "-x",
              "beamlab-results", "out.html", " "]).

prop_output_paths(Dir, Input) ->
    {ok, Before} = file:read_file(Input),
    Base = filename:join([Dir, "d1", "d2", "d3", "d4", "d5", "d6", "d7", "d8"]),
    ok = filelib:ensure_path(Base),
    ?FORALL(Parts, ?LET(N, range(1, 6), vector(N, path_part())),
            begin
                Out = filename:join([Base | Parts]),
                Ok = dispatched(["report", Input, "-o", Out]) andalso dispatched(["compare", Input, Out]),
                {ok, After} = file:read_file(Input),
                (Ok andalso After =:= Before) orelse report(Out, changed)
            end).

dispatched(Argv) ->
    case bounded(fun() -> quietly(fun() -> beamlab_cli:run_command(Argv, #{quiet => true, errors => return}) end) end,
                 ?HANG_MS) of
        {ok, {Code, {error, Msg}}} when Code =:= 1; Code =:= 2 ->
            no_internal(Msg) andalso one_line(Msg) orelse report(Argv, {Msg, stack(Argv)});
        {ok, {Code, _}} when Code =:= 0; Code =:= 1 -> true;
        Other -> report(Argv, Other)
    end.

%% Runs Fun with what it prints to standard output dropped (env and
%% compare print their own output): the test log stays readable.
quietly(Fun) ->
    Sink = spawn_link(fun sink/0),
    Old = group_leader(),
    group_leader(Sink, self()),
    try Fun()
    after group_leader(Old, self()), unlink(Sink), exit(Sink, kill)
    end.

sink() ->
    receive
        {io_request, From, ReplyAs, _} -> From ! {io_reply, ReplyAs, ok}, sink();
        _ -> sink()
    end.

%%--------------------------------------------------------------------
%% Erlang term files: matrix --file and suite --preset

%% Atoms come from a small vocabulary (the test VM's atom table must not
%% fill up); the adversarial cases carry more words than the reader
%% accepts, so they are refused before any atom is made.
term_text() ->
    oneof([?LET(T, eterm(), iolist_to_binary(io_lib:format("~tp.~n", [T]))),
           ?LET(Ts, list(eterm()), iolist_to_binary([io_lib:format("~tp.~n", [T]) || T <- Ts])),
           binary(),
           ?LET(N, oneof([range(1025, 100000), range(1 bsl 30, 1 bsl 45)]),
                iolist_to_binary(io_lib:format("{vm, <<0:~b>>}.~n", [N]))),
           ?LET(N, range(2, 1000), iolist_to_binary(["{vm, <<\"x\":", integer_to_list(N), "/binary-unit:", integer_to_list(N), ">>}.\n"])),
           ?LET(N, range(10050, 20000),
                iolist_to_binary(["{vm, [", lists:join(",", [["crafted_atom_", integer_to_list(I)]
                                                            || I <- lists:seq(1, N)]), "]}.\n"])),
           ?LET(N, range(1001, 20000), <<"{repeat, ", (binary:copy(<<"7">>, N))/binary, "}.\n">>),
           ?LET(N, range(1, 2000), <<(binary:copy(<<"[">>, N))/binary, (binary:copy(<<"]">>, N))/binary, ".\n">>),
           elements([<<"{vm, \"+S 1\"">>, <<"fun() -> ok end.">>, <<"#{a => X}.">>, <<"#r{a = 1}.">>,
                     <<"{vm, \"\\x{ff}\"}.">>, <<"'", 255, "'.">>, <<"{command, [\"a\" | b]}.">>,
                     <<"{repeat, 0}.">>, <<"{sweep, \"1..100000000000\"}.">>, <<"{sweep, \"4..1\"}.">>,
                     <<"{baseline, 7}.">>, <<"a. b. c.">>, <<"\"unterminated">>, <<"1.0e400.">>,
                     <<"#{rows => [#{}]}.">>, <<"#{rows => [], layout => diagonal}.">>,
                     <<"#{rows => [#{label => <<\"x\">>, workload => nosuch}]}.">>])]).

eterm() ->
    ?SIZED(S, eterm(min(S, 12))).
eterm(0) ->
    oneof([integer(), float(), utf8(), binary(), elements(vocabulary()), string(),
           ?LET(C, range(0, 16#10FFFF), [C])]);
eterm(S) ->
    frequency([{3, eterm(0)},
               {1, ?LAZY(list(eterm(S div 3)))},
               {1, ?LAZY(?LET(L, list(eterm(S div 3)), list_to_tuple(L)))},
               {1, ?LAZY(?LET({K, V}, {elements(vocabulary()), eterm(S div 3)}, {K, V}))},
               {1, ?LAZY(?LET(KVs, list({elements(vocabulary()), eterm(S div 3)}), maps:from_list(KVs)))}]).

vocabulary() ->
    [vm, sweep, erl, wrap, baseline, repeat, command, rows, layout, columns, name, title, source,
     reference, label, workload, params, header, metric, published, true, false, undefined].

%% The grid and preset readers answer every file: a value or an error
%% their format_error turns into one line.
prop_term_files(Dir) ->
    ?FORALL(Text, term_text(),
            begin
                File = write_tmp(Dir, "crafted.terms", Text),
                Grid = bounded(fun() -> beamlab_env_matrix:read_grid(File) end, ?HANG_MS),
                Preset = bounded(fun() -> beamlab_suite_preset:find(File) end, ?HANG_MS),
                answered(Grid, fun beamlab_env_matrix:format_error/1) andalso
                    answered(Preset, fun beamlab_suite_preset:format_error/1)
                    orelse report(Text, {Grid, Preset})
            end).

answered({ok, {ok, _}}, _Format) -> true;
answered({ok, {error, Reason}}, Format) ->
    case bounded(fun() -> Format(Reason) end, ?HANG_MS) of
        {ok, Text} -> one_line(Text);
        _ -> false
    end;
answered(_, _) -> false.

%%--------------------------------------------------------------------
%% env --root: a crafted /proc and /sys

env_tree() ->
    {cpulist(), cpulist(), text(), text(), text(), text(), boolean()}.

cpulist() ->
    oneof([text(),
           ?LET({A, B}, {nat(), nat()}, iolist_to_binary([integer_to_list(A), "-", integer_to_list(B)])),
           ?LET({A, B}, {range(0, 70000), oneof([range(0, 70000), range(1 bsl 20, 1 bsl 40)])},
                iolist_to_binary([integer_to_list(A), "-", integer_to_list(B), ",", integer_to_list(A)])),
           ?LET(N, range(10, 5000), binary:copy(<<"9">>, N)),
           <<"0-999999999">>, <<"0-3,8,10-11\n">>]).

text() ->
    oneof([binary(), utf8(),
           ?LET(Lines, list({utf8(), oneof([utf8(), ?LET(N, range(1, 3000), binary:copy(<<"8">>, N))])}),
                iolist_to_binary([[K, ": ", V, " kB\n"] || {K, V} <- Lines])),
           ?LET(N, range(1, 5000), <<"MemTotal: ", (binary:copy(<<"1">>, N))/binary, " kB\n">>)]).

%% The environment report answers every tree (unknown values and notes,
%% never a crash), FIFOs included.
prop_env_root(Dir) ->
    ?FORALL({Online, Node0, CpuInfo, MemInfo, LoadAvg, Version, Fifo}, env_tree(),
            try
                Root = filename:join(Dir, "root-" ++ integer_to_list(erlang:unique_integer([positive]))),
                P = fun(Rel) -> filename:join(Root, Rel) end,
                ok = filelib:ensure_dir(P("sys/devices/system/node/node0/x")),
                ok = filelib:ensure_dir(P("proc/x")),
                ok = filelib:ensure_dir(P("sys/devices/system/cpu/x")),
                _ = write_tmp(Root, "sys/devices/system/cpu/online", Online),
                _ = write_tmp(Root, "sys/devices/system/node/node0/cpulist", Node0),
                _ = write_tmp(Root, "sys/devices/system/node/node0/meminfo", MemInfo),
                _ = write_tmp(Root, "proc/meminfo", MemInfo),
                _ = write_tmp(Root, "proc/loadavg", LoadAvg),
                _ = write_tmp(Root, "proc/version", Version),
                _ = case Fifo of
                        true -> os:cmd("mkfifo " ++ P("proc/cpuinfo"));
                        false -> write_tmp(Root, "proc/cpuinfo", CpuInfo)
                    end,
                %% It is saved as JSON: every string valid UTF-8.
                R = bounded(fun() ->
                                    Report = beamlab_env:report(#{root => Root}),
                                    beamlab_json:decode(beamlab_json:encode(Report))
                            end, ?HANG_MS),
                %% And through the command (text and JSON views).
                Cmd = dispatched(["env", "--root", Root]) andalso
                    dispatched(["env", "--root", Root, "--format", "json"]),
                _ = file:del_dir_r(Root),
                case R of
                    {ok, {ok, Json}} -> valid_strings(Json) andalso Cmd;
                    Other -> report({Online, Node0, CpuInfo, MemInfo}, Other)
                end
            catch
                %% (this PropEr cannot report an exception itself)
                C:E:S -> report(setup, {C, E, S})
            end).

%%--------------------------------------------------------------------
%% Option values

%% Every command of the command table: a command added later is covered
%% without touching this file.
commands() ->
    [M || {_, M} <- beamlab_command:all()].

value() ->
    oneof([?LET(I, integer(), integer_to_list(I)),
           ?LET(I, oneof([range(1 bsl 31, 1 bsl 64), range(1 bsl 64, 1 bsl 200)]), integer_to_list(I)),
           ?LET(F, float(), float_to_list(F)),
           ?LET(S, string(), S),
           ?LET(B, binary(), beamlab_input_text:decode(B)),
           elements(["", "-", "1e11", "1e12", "100000000000", "-1", "0", "0.0", "nan", "inf",
                     "10G", "1000000G", "5%", "500%", "1,2,3", "1..4", "-0", "0x10", "1_000",
                     "amqp://u:p@127.0.0.1:1/%2F", "\x{ff}\x{fe}", "ラベル"])]).

args(Mod) ->
    Opts = [O || O <- Mod:options(), maps:is_key(long, O)],
    list(?LET({O, V}, {elements(Opts), value()},
              case maps:get(type, O) of
                  T when T =:= boolean; T =:= count -> ["--" ++ maps:get(long, O)];
                  _ -> ["--" ++ maps:get(long, O) ++ "=" ++ V]
              end)).

%% The option parser answers every value of every option of every command.
prop_options() ->
    ?FORALL({Mod, Args}, ?LET(Mod, elements(commands()), {Mod, args(Mod)}),
            case bounded(fun() -> beamlab_cli_args:parse(lists:append(Args), Mod:options()) end,
                         ?HANG_MS) of
                {ok, {ok, _}} -> true;
                {ok, {error, Msg}} -> one_line(Msg) orelse report(Args, Msg);
                Other -> report(Args, Other)
            end).

%% Through the dispatcher: the same values followed by an unknown option,
%% so nothing is run: always a usage error (exit 2), never an internal
%% error, whatever came first.
prop_dispatch_options() ->
    ?FORALL({Mod, Args}, ?LET(Mod, elements(commands()), {Mod, args(Mod)}),
            begin
                Cmd = [N || {N, M} <- beamlab_command:all(), M =:= Mod],
                Argv = Cmd ++ lists:append(Args) ++ ["--no-such-option-here"],
                case bounded(fun() -> beamlab_cli:run_command(Argv, #{quiet => true, errors => return}) end,
                             ?HANG_MS) of
                    {ok, {2, {error, Msg}}} -> (no_internal(Msg) andalso one_line(Msg)) orelse report(Argv, Msg);
                    Other -> report(Argv, Other)
                end
            end).

%%--------------------------------------------------------------------
%% Option values and files through each command's experiment

%% The commands that describe an experiment (run, suite, matrix, amqp,
%% profile, watch, check): what their options say is turned into the
%% experiment and checked as before anything starts (the suite's plan and
%% --param values, a matrix's --file grid and inner command, a preset, the
%% amqp options), nothing run. Option values are random, adversarial, or
%% the paths of crafted term and JSON files written for the case; each
%% command gets positional arguments of its own kind (code, workloads,
%% an inner command). Every answer is an experiment, or a one-line usage
%% error or failure: never a crash, an internal error or a hang.
prop_experiments(Dir) ->
    Mods = [M || M <- commands(), code:ensure_loaded(M) =:= {module, M},
                 erlang:function_exported(M, experiment, 1)],
    ?FORALL({Mod, Terms, Json, Args, Pos},
            ?LET(Mod, elements(Mods), {Mod, term_text(), json_text(), exp_args(Mod, Dir), positional(Mod)}),
            begin
                _ = write_tmp(Dir, "crafted.terms", Terms),
                _ = write_tmp(Dir, "crafted.json", Json),
                [Name] = [N || {N, M} <- beamlab_command:all(), M =:= Mod],
                Argv = lists:append(Args) ++ Pos,
                Outcome = bounded(fun() -> experiment(Mod, Name, Argv) end, ?HANG_MS),
                case Outcome of
                    {ok, ok} -> true;
                    %% (the dispatcher prints it on one line: a newline the
                    %% user typed is shown as a space)
                    {ok, {error, Msg}} -> (no_internal(Msg) andalso is_text(Msg)) orelse report(Argv, Msg);
                    Other -> report([Name | Argv], Other)
                end
            end).

%% What the dispatcher does up to running: parse, describe, check.
experiment(Mod, Name, Argv) ->
    case beamlab_cli_args:parse(Argv, Mod:options()) of
        {ok, P} ->
            case Mod:experiment(P#{command => Name, argv => [Name | Argv]}) of
                {ok, Exp} ->
                    case beamlab_experiment:check(Exp) of
                        ok -> ok;
                        {error, R} -> {error, beamlab_experiment:format_error(R)}
                    end;
                {error, {_Kind, Said}} ->
                    {error, Said}
            end;
        {error, Msg} ->
            {error, Msg}
    end.

%% Any option's value may be one of the crafted files (or a directory, or
%% nothing there). The options that name this VM on the network (a
%% cookie, a distribution name) are left to prop_options/0: checking them
%% would make the test VM a distributed node with a random cookie.
exp_args(Mod, Dir) ->
    Opts = [O || O <- Mod:options(), maps:is_key(long, O),
                 not lists:member(maps:get(long, O), ["cookie", "dist-name", "name"])],
    Paths = [filename:join(Dir, "crafted.terms"), filename:join(Dir, "crafted.json"), Dir,
             filename:join(Dir, "nothing-here")],
    list(?LET({O, V}, {elements(Opts), oneof([value(), elements(Paths)])},
              case maps:get(type, O) of
                  T when T =:= boolean; T =:= count -> ["--" ++ maps:get(long, O)];
                  _ -> ["--" ++ maps:get(long, O) ++ "=" ++ V]
              end)).

%% Positional arguments of the command's kind.
positional(beamlab_command_run) ->
    list(oneof([elements(["ok.", "1 +", "<<0:8796093022208>>.", "fun() -> ok end.", "receive after infinity -> ok end.",
                          "erlang:halt().", "X.", "'\\x{ff}'."]),
                value()]));
positional(beamlab_command_suite) ->
    list(oneof([elements(["ring", "bang", "nosuch", "--param", "ring.n=1", "bang.senders=0", "ring.n=1e99"]),
                ?LET({W, K, V}, {elements(["ring", "bang", "big", "x"]), elements(["n", "senders", "m", ""]), value()},
                     W ++ "." ++ K ++ "=" ++ V)]));
positional(Outer) when Outer =:= beamlab_command_matrix; Outer =:= beamlab_command_profile ->
    ?LET({Inner, V}, {elements([["ok.", "-d"], ["amqp", "-z"], ["suite", "ring", "--param"], ["env", "--root"],
                                ["compare", "a.json"], ["node", "--name"], ["run", "ok.", "-c"],
                                ["matrix", "--", "ok.", "-s"], ["no-such-command", "-x"]]),
                      value()},
         ["--" | Inner ++ [V]]);
positional(_) ->
    list(value()).
