%%% @doc The workload behaviour of `beamlab suite', plus the helpers the
%%% suite needs around it: finding a workload module by name, typed
%%% parameter parsing, profile defaults and sweep expansion.
%%%
%%% A workload module exports:
%%% <ul>
%%% <li>`info()': `#{name, summary, definition, unit, better, checks}' and
%%%     optionally `metric' (name of the primary metric), `measure' (what
%%%     it measures, in words, for the report's titles), `metrics' (secondary
%%%     metrics reported as their own benchmarks), `repeat' (default
%%%     repetitions per profile) and `warmup' (false to skip the harness's
%%%     warm-up repetition, for workloads with their own warm-up period).</li>
%%% <li>`params()': `[#{key, default, full, type, help}]'. A list as a default
%%%     means "sweep these values".</li>
%%% <li>`setup(Params) -> {ok, State} | {error, Reason}'</li>
%%% <li>`run(State, Params) -> {ok, Rep} | {error, Reason}' where Rep is
%%%     `#{value, counters, check, extra, metrics}' for ONE repetition
%%%     (optionally `metric', the primary metric's name when a variant
%%%     measures something else than `info()' names).</li>
%%% <li>`teardown(State)'.</li>
%%% </ul>
%%% Optional: `normalize(Params) -> {ok, Params} | {error, Reason}' (validate
%%% combinations before anything runs; it may remove the keys the point's
%%% variant does not use, and points that become equal run once), `processes(Params)' (peak number of
%%% processes, so the suite can run the point in a VM with a bigger `+P'),
%%% `format_error(Reason)'.
-module(beamlab_workload).

-export([builtin/0, resolve/1, is_workload/1, info/1, param_specs/1,
         parse_value/2, format_value/1, type_name/1,
         points/3, point_name/2, params_to_map/1, format_error/1,
         us/1, check_all/1, await_process_count/2, random_peer/1]).

-export_type([info/0, param_spec/0, param_type/0, params/0, rep/0, check/0,
              profile/0, overrides/0]).

-type profile() :: quick | full.
-type param_type() :: pos_integer | non_neg_integer | number | boolean | atom
                    | node | binary | {enum, [atom()]} | {int_range, integer(), integer()}.
-type param_spec() :: #{key := atom(), default := term(), full := term(),
                        type := param_type(), help := binary()}.
-type params() :: #{atom() => term()}.
-type check() :: ok | unchecked | {failed, binary()}.
%% counters and extra go into the result's JSON sections (keys become text).
-type rep() :: #{value := number(), metric => binary(),
                 counters => #{atom() => number() | binary()},
                 check => check(), extra => #{atom() => term()},
                 metrics => #{atom() => number()}}.
-type info() :: #{name := binary(), summary := binary(), definition := binary(),
                  unit := binary(), better := higher | lower, checks := binary(),
                  metric => binary(), measure => binary(),
                  %% `measure': what a metric measures, in words, where its
                  %% unit does not say it (the report's titles)
                  metrics => [#{key := atom(), unit := binary(),
                                better := higher | lower, measure => binary()}],
                  repeat => #{profile() => pos_integer()},
                  warmup => boolean()}.
%% Overrides: per parameter key, the list of values the user asked for.
-type overrides() :: #{atom() => [term()]}.

-callback info() -> info().
-callback params() -> [param_spec()].
-callback setup(params()) -> {ok, term()} | {error, term()}.
-callback run(term(), params()) -> {ok, rep()} | {ok, rep(), term()} | {error, term()}.
-callback teardown(term()) -> term().
-callback normalize(params()) -> {ok, params()} | {error, term()}.
-callback processes(params()) -> non_neg_integer().
-callback format_error(term()) -> iodata().
-optional_callbacks([normalize/1, processes/1, format_error/1]).

-define(BUILTIN, [fib, spawn, skynet, send, ping_pong, ring, thread_ring, big,
                  bang, message_load, selective_receive, serialization, ets,
                  gen_server]).

%% @doc The built-in workloads, in the order the suite runs them.
-spec builtin() -> [module()].
builtin() ->
    [list_to_atom("beamlab_workload_" ++ atom_to_list(N)) || N <- ?BUILTIN].

%% @doc Find the module of workload `Name': `beamlab_workload_<Name>' first,
%% then `<Name>' itself (a user module on the code path, e.g. via `-pa').
%% Atoms are only created for names that exist as a module on the path.
-spec resolve(string()) -> {ok, module()} | {error, term()}.
resolve(Name) ->
    case io_lib:printable_unicode_list(Name) andalso Name =/= "" of
        false -> {error, {unknown_workload, Name}};
        true -> resolve_first(["beamlab_workload_" ++ Name, Name], Name)
    end.

resolve_first([], Name) ->
    {error, {unknown_workload, Name}};
resolve_first([Candidate | Rest], Name) ->
    case module_exists(Candidate) of
        {true, Mod} ->
            case is_workload(Mod) of
                true -> check_callbacks(Mod);
                false when Rest =:= [] -> {error, {not_a_workload, Mod}};
                false -> resolve_first(Rest, Name)
            end;
        false ->
            resolve_first(Rest, Name)
    end.

module_exists(Candidate) ->
    Loaded = try list_to_existing_atom(Candidate) of
                 A -> code:is_loaded(A) =/= false andalso {true, A}
             catch error:badarg -> false
             end,
    case Loaded of
        {true, _} = T -> T;
        false ->
            case code:where_is_file(Candidate ++ ".beam") of
                non_existing -> embedded(Candidate);
                _ -> {true, list_to_atom(Candidate)}
            end
    end.

%% In the escript our own modules live in the archive, not as files.
embedded(Candidate) ->
    Own = [atom_to_list(M) || M <- builtin()],
    case lists:member(Candidate, Own) of
        true -> {true, list_to_atom(Candidate)};
        false -> false
    end.

%% A user's info/0 or params/0 that crashes or returns something else is
%% the workload's fault: say so in one line rather than crash later.
check_callbacks(Mod) ->
    case {call_callback(Mod, info), call_callback(Mod, params)} of
        {{ok, Info}, _} when not is_map(Info) -> {error, {bad_callback, Mod, info, {returned, Info}}};
        {{ok, _}, {ok, Params}} when not is_list(Params) ->
            {error, {bad_callback, Mod, params, {returned, Params}}};
        {{ok, Info}, {ok, Params}} ->
            case {info_problem(Info), params_problem(Params)} of
                {none, none} -> {ok, Mod};
                {none, Problem} -> {error, {bad_callback, Mod, params, {invalid, Problem}}};
                {Problem, _} -> {error, {bad_callback, Mod, info, {invalid, Problem}}}
            end;
        {{ok, _}, {error, Why}} -> {error, {bad_callback, Mod, params, Why}};
        {{error, Why}, _} -> {error, {bad_callback, Mod, info, Why}}
    end.

%% What is wrong with an info/0 map (see the info() type), or none.
info_problem(Info) ->
    Required = [{name, fun is_binary/1, "a binary"}, {summary, fun is_binary/1, "a binary"},
                {definition, fun is_binary/1, "a binary"}, {unit, fun is_binary/1, "a binary"},
                {better, fun(B) -> B =:= higher orelse B =:= lower end, "higher or lower"},
                {checks, fun is_binary/1, "a binary"}],
    Optional = [{metric, fun is_binary/1, "a binary"}, {measure, fun is_binary/1, "a binary"},
                {metrics, fun(L) -> is_list(L) andalso lists:all(fun metric_spec/1, L) end,
                 "a list of #{key := atom(), unit := binary(), better := higher | lower, measure => binary()}"},
                {repeat, fun(R) -> is_map(R) andalso
                                       lists:all(fun({P, N}) -> (P =:= quick orelse P =:= full)
                                                                    andalso is_integer(N) andalso N > 0
                                                 end, maps:to_list(R)) end,
                 "a map of quick/full to a positive integer"},
                {warmup, fun is_boolean/1, "true or false"}],
    first_problem([case maps:find(K, Info) of
                       error -> io_lib:format("no ~s (~ts)", [K, What]);
                       {ok, V} -> check_field(K, V, Check, What)
                   end || {K, Check, What} <- Required] ++
                  [check_field(K, V, Check, What)
                   || {K, Check, What} <- Optional, {ok, V} <- [maps:find(K, Info)]]).

metric_spec(#{key := K, unit := U, better := B} = M) ->
    is_atom(K) andalso is_binary(U) andalso (B =:= higher orelse B =:= lower)
        andalso is_binary(maps:get(measure, M, <<>>));
metric_spec(_) ->
    false.

%% What is wrong with a params/0 list (of param_spec()), or none.
params_problem(Params) ->
    first_problem([param_problem(P) || P <- Params] ++
                  case [K || #{key := K} <- Params] of
                      Keys when length(Keys) =/= length(Params) -> [];
                      Keys ->
                          case Keys -- lists:usort(Keys) of
                              [] -> [];
                              [Dup | _] -> [io_lib:format("parameter ~0tp given twice", [Dup])]
                          end
                  end).

param_problem(#{key := K, type := T, help := H} = P) when is_atom(K) ->
    %% (`full' is optional: the full profile then uses the default)
    case {valid_type(T), is_binary(H), maps:is_key(default, P)} of
        {true, true, true} -> none;
        {false, _, _} -> io_lib:format("parameter ~0tp: unknown type ~0tP", [K, T, 6]);
        {_, false, _} -> io_lib:format("parameter ~0tp: help must be a binary", [K]);
        {_, _, false} -> io_lib:format("parameter ~0tp: needs a default value", [K])
    end;
param_problem(Other) ->
    io_lib:format("~0tP is not a parameter map (#{key, default, type, help})", [Other, 6]).

valid_type(T) when T =:= pos_integer; T =:= non_neg_integer; T =:= number; T =:= boolean;
                   T =:= atom; T =:= node; T =:= binary -> true;
valid_type({enum, L}) when is_list(L) -> lists:all(fun is_atom/1, L);
valid_type({int_range, Lo, Hi}) -> is_integer(Lo) andalso is_integer(Hi) andalso Lo =< Hi;
valid_type(_) -> false.

check_field(K, V, Check, What) ->
    case Check(V) of
        true -> none;
        false -> io_lib:format("~s must be ~ts, not ~0tP", [K, What, V, 6])
    end.

first_problem(Problems) ->
    case [P || P <- Problems, P =/= none] of
        [] -> none;
        [P | _] -> P
    end.

call_callback(Mod, F) ->
    try {ok, Mod:F()}
    catch Class:Reason -> {error, {Class, Reason}}
    end.

%% @doc True when `Mod' loads and exports the behaviour's callbacks.
-spec is_workload(module()) -> boolean().
is_workload(Mod) ->
    case code:ensure_loaded(Mod) of
        {module, Mod} ->
            lists:all(fun({F, A}) -> erlang:function_exported(Mod, F, A) end,
                      [{info, 0}, {params, 0}, {setup, 1}, {run, 2}, {teardown, 1}]);
        _ ->
            false
    end.

%% @doc The workload's info map with the optional keys filled in.
-spec info(module()) -> info().
info(Mod) ->
    maps:merge(#{metric => <<"time">>, metrics => [], repeat => #{},
                 warmup => true}, Mod:info()).

%% @doc The workload's parameter specifications.
-spec param_specs(module()) -> [param_spec()].
param_specs(Mod) -> Mod:params().

%% @doc Parse one textual value of the given type.
-spec parse_value(param_type(), string()) -> {ok, term()} | {error, term()}.
parse_value(Type, Str0) ->
    Str = string:trim(Str0),
    try parse(Type, Str) of
        {ok, _} = Ok -> Ok;
        error -> {error, {bad_value, Type, Str}}
    catch error:_ -> {error, {bad_value, Type, Str}}
    end.

parse(pos_integer, S) -> int(S, 1, infinity);
parse(non_neg_integer, S) -> int(S, 0, infinity);
parse({int_range, Lo, Hi}, S) -> int(S, Lo, Hi);
parse(number, S) ->
    case string:to_float(S) of
        {F, ""} -> {ok, F};
        _ -> int(S, any, any)
    end;
parse(boolean, S) ->
    case string:lowercase(S) of
        T when T =:= "true"; T =:= "yes"; T =:= "1"; T =:= "on" -> {ok, true};
        F when F =:= "false"; F =:= "no"; F =:= "0"; F =:= "off" -> {ok, false};
        _ -> error
    end;
parse({enum, Allowed}, S) ->
    case [A || A <- Allowed, atom_to_list(A) =:= S] of
        [A] -> {ok, A};
        [] -> error
    end;
parse(node, S) ->
    case string:split(S, "@") of
        [N, H] when N =/= "", H =/= "" -> {ok, list_to_atom(S)};
        _ when S =:= "none" -> {ok, none};
        _ -> error
    end;
parse(atom, S) when S =/= "" -> {ok, list_to_atom(S)};
parse(binary, S) -> {ok, unicode:characters_to_binary(S)};
parse(_, _) -> error.

int(S, Lo, Hi) ->
    N = list_to_integer(S),
    case (Lo =:= any orelse N >= Lo) andalso (Hi =:= infinity orelse Hi =:= any orelse N =< Hi) of
        true -> {ok, N};
        false -> error
    end.

%% @doc A parameter value as text (for benchmark names and tables).
-spec format_value(term()) -> string().
format_value(V) when is_integer(V) -> integer_to_list(V);
format_value(V) when is_float(V) -> float_to_list(V, [short]);
format_value(V) when is_atom(V) -> atom_to_list(V);
format_value(V) when is_binary(V) -> unicode:characters_to_list(V);
format_value(V) when is_list(V) -> lists:join(",", [format_value(X) || X <- V]).

%% @doc A type as text, for `--list' and error messages.
-spec type_name(param_type()) -> string().
type_name({enum, As}) -> lists:flatten(lists:join("|", [atom_to_list(A) || A <- As]));
type_name({int_range, Lo, Hi}) -> lists:flatten(io_lib:format("integer ~b..~b", [Lo, Hi]));
type_name(node) -> "name@host";
type_name(T) -> atom_to_list(T).

%% @doc Expand a workload's parameters into measurement points: profile
%% defaults, overridden by the user's values (each a list: more than one value
%% is a sweep), then the cartesian product. Returns the points in sweep order,
%% each as `{SweptKeys, Params}'.
-spec points(module(), profile(), overrides()) ->
          {ok, [{[atom()], params()}]} | {error, term()}.
points(Mod, Profile, Overrides) ->
    Specs = param_specs(Mod),
    Keys = [K || #{key := K} <- Specs],
    case [K || K <- maps:keys(Overrides), not lists:member(K, Keys)] of
        [Unknown | _] ->
            {error, {unknown_param, info_name(Mod), Unknown, Keys}};
        [] ->
            Values = [{K, values(Spec, Profile, Overrides)} || #{key := K} = Spec <- Specs],
            Swept = [K || {K, Vs} <- Values, length(Vs) > 1],
            normalize_all(Mod, [{Swept, P} || P <- product(Values)])
    end.

values(#{key := K} = Spec, Profile, Overrides) ->
    Default = case Profile of
                  full -> maps:get(full, Spec, maps:get(default, Spec));
                  quick -> maps:get(default, Spec)
              end,
    case maps:find(K, Overrides) of
        {ok, Vs} -> Vs;
        error when is_list(Default) -> Default;
        error -> [Default]
    end.

product([]) -> [#{}];
product([{K, Vs} | Rest]) ->
    [P#{K => V} || V <- Vs, P <- product(Rest)].

normalize_all(Mod, Points) ->
    case erlang:function_exported(Mod, normalize, 1) of
        false -> {ok, Points};
        true -> normalize_each(Mod, Points, [])
    end.

%% normalize/1 may drop a parameter its variant does not use, which can
%% make points equal: each is measured once.
normalize_each(_Mod, [], Acc) -> {ok, dedupe(lists:reverse(Acc), [])};
normalize_each(Mod, [{Swept, P} | Rest], Acc) ->
    case Mod:normalize(P) of
        {ok, P1} -> normalize_each(Mod, Rest, [{Swept, P1} | Acc]);
        {error, R} -> {error, {invalid_params, Mod, R}}
    end.

dedupe([], Acc) -> lists:reverse(Acc);
dedupe([{_, P} = Point | Rest], Acc) ->
    case lists:any(fun({_, Q}) -> Q =:= P end, Acc) of
        true -> dedupe(Rest, Acc);
        false -> dedupe(Rest, [Point | Acc])
    end.

info_name(Mod) -> maps:get(name, Mod:info()).

%% @doc The benchmark name of a point: `name[k1=v1,k2=v2]' over the swept
%% keys (in parameter order) the point has (normalize/1 may drop a key its
%% variant does not use); just `name' when nothing is swept.
-spec point_name(binary(), {[atom()], params()}) -> binary().
point_name(Name, {Swept, Params}) ->
    case [[atom_to_list(K), $=, format_value(maps:get(K, Params))]
          || K <- Swept, maps:is_key(K, Params)] of
        [] -> Name;
        Kvs -> iolist_to_binary([Name, $[, lists:join(",", Kvs), $]])
    end.

%% @doc Parameters as a JSON-friendly map (binary keys and values).
-spec params_to_map(params()) -> #{binary() => term()}.
params_to_map(Params) ->
    maps:fold(fun(K, V, Acc) ->
                      Acc#{atom_to_binary(K) => json_value(V)}
              end, #{}, Params).

json_value(V) when is_number(V); is_boolean(V); is_binary(V) -> V;
json_value(V) when is_atom(V) -> atom_to_binary(V);
json_value(V) -> iolist_to_binary(format_value(V)).

%% @doc A native monotonic time difference in microseconds (float).
-spec us(integer()) -> float().
us(NativeDiff) ->
    erlang:convert_time_unit(NativeDiff, native, nanosecond) / 1000.

%% @doc Wait (untimed, polling every ms) until the VM's process count is
%% at most `Baseline' again, for workloads whose processes exit on their own
%% without telling anyone (as in the originals). Returns whether it got
%% there within `TimeoutMs', and the last count seen.
-spec await_process_count(non_neg_integer(), non_neg_integer()) ->
          {boolean(), non_neg_integer()}.
await_process_count(Baseline, TimeoutMs) ->
    Deadline = erlang:monotonic_time(millisecond) + TimeoutMs,
    await_count(Baseline, Deadline).

await_count(Baseline, Deadline) ->
    Count = erlang:system_info(process_count),
    Now = erlang:monotonic_time(millisecond),
    if
        Count =< Baseline -> {true, Count};
        Now >= Deadline -> {false, Count};
        true -> timer:sleep(1), await_count(Baseline, Deadline)
    end.

%% @doc Combine named equalities into one check: `ok' when every
%% `{What, Expected, Got}' holds, else `{failed, Why}' naming the first miss.
-spec check_all([{string(), term(), term()}]) -> check().
check_all([]) -> ok;
check_all([{_What, X, X} | Rest]) -> check_all(Rest);
check_all([{What, Expected, Got} | _]) ->
    {failed, iolist_to_binary(io_lib:format("~ts: expected ~0p, got ~0p",
                                            [What, Expected, Got]))}.

%% @doc One line for each error this module returns.
-spec format_error(term()) -> iolist().
format_error(Reason) ->
    beamlab_format_reason:line(fun error_line/1, Reason).

error_line({unknown_workload, Name}) ->
    io_lib:format("unknown workload '~ts' (see beamlab suite --list)", [Name]);
error_line({bad_callback, Mod, Callback, {invalid, Problem}}) ->
    io_lib:format("workload module ~p: ~p/0: ~ts (a fault in the workload, not in beamlab)",
                  [Mod, Callback, Problem]);
error_line({bad_callback, Mod, Callback, {returned, Value}}) ->
    io_lib:format("workload module ~p: ~p/0 returned ~0tP (expected ~ts)",
                  [Mod, Callback, Value, 8, case Callback of
                                                info -> "a map with a binary name";
                                                params -> "a list of parameter maps"
                                            end]);
error_line({bad_callback, Mod, Callback, {Class, Reason}}) ->
    io_lib:format("workload module ~p: ~p/0 failed: ~p ~0tP (a fault in the workload, not in beamlab)",
                  [Mod, Callback, Class, Reason, 10]);
error_line({not_a_workload, Mod}) ->
    io_lib:format("module ~p is not a workload: it must export info/0, params/0, "
                  "setup/1, run/2 and teardown/1", [Mod]);
error_line({unknown_param, W, K, Keys}) ->
    io_lib:format("workload ~ts has no parameter '~ts' (it has: ~ts)",
                  [W, if is_atom(K) -> atom_to_list(K); true -> K end, lists:join(", ", [atom_to_list(X) || X <- Keys])]);
error_line({bad_value, Type, Str}) ->
    io_lib:format("bad value '~ts': expected ~ts", [Str, expected(Type)]);
error_line({invalid_params, Mod, R}) ->
    case erlang:function_exported(Mod, format_error, 1) of
        true -> [info_name(Mod), ": ", Mod:format_error(R)];
        false -> io_lib:format("~ts: invalid parameters: ~0p", [info_name(Mod), R])
    end;
error_line(Other) ->
    io_lib:format("~0p", [Other]).

%% A type as an error message says it (type_name/1 is the tables' form).
expected(pos_integer) -> "an integer >= 1";
expected(non_neg_integer) -> "an integer >= 0";
expected(number) -> "a number";
expected(boolean) -> "true or false";
expected(T) -> type_name(T).

%% @doc A random element of `Peers' other than the calling process (the
%% tuple holds at least one other).
-spec random_peer(tuple()) -> pid().
random_peer(Peers) ->
    Self = self(),
    case element(rand:uniform(tuple_size(Peers)), Peers) of
        Self -> random_peer(Peers);
        P -> P
    end.
