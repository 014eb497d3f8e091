%%% @doc The command line's side of the experiment layer: runs the
%%% description a command parsed ({@link beamlab_experiment:run/1}), turns
%%% its errors into one line with the right exit code and its verdict into
%%% the command's exit code (telling its lines on stderr); and parses the
%%% inner command of `matrix' and `profile' into an inner description, up
%%% front, so that a command they cannot run is a usage error (exit 2)
%%% before anything starts. Errors are values (`beamlab_cli_error:reason()').
-module(beamlab_cli_experiment).

-export([run/1, run/2, inner/2, cli_error/1, given/2, checked/1]).

%% `error': the command's own line for some errors (naming its flags);
%% `undefined' leaves the error to the layer's line.
-type opts() :: #{error => fun((beamlab_experiment:error_reason()) -> undefined | {error, beamlab_cli_error:reason()})}.
-export_type([opts/0]).

-include("beamlab_cli_error.hrl").

%% @doc As {@link run/2} with no options.
-spec run(beamlab_experiment:experiment()) ->
          {ok, {beamlab_command:exit_code(), beamlab_result:result()}} | {error, beamlab_cli_error:reason()}.
run(Exp) ->
    run(Exp, #{}).

%% @doc Runs the experiment and returns the exit code and the document:
%% 0, 130 when interrupted (what was measured is still printed and
%% saved), 1 when the document says the run failed (each line of the
%% verdict told as `beamlab: LINE'); or the command line's error.
-spec run(beamlab_experiment:experiment(), opts()) ->
          {ok, {beamlab_command:exit_code(), beamlab_result:result()}} | {error, beamlab_cli_error:reason()}.
run(Exp0, Opts) ->
    %% Where the live metrics are served is told here, whatever the
    %% command's own sink does with its events.
    Sink = maps:get(sink, Exp0, fun(_) -> ok end),
    Exp = Exp0#{sink => fun({metrics, Url}) -> io:format(standard_error, "metrics: ~ts~n", [Url]);
                           (E) -> Sink(E)
                        end},
    case beamlab_experiment:run(Exp) of
        {ok, Doc} ->
            {Status, Lines} = beamlab_experiment:verdict(Doc),
            _ = [io:format(standard_error, "beamlab: ~ts~n", [L]) || L <- Lines],
            {ok, {case Status of
                      ok -> 0;
                      interrupted -> beamlab_runtime_interrupt:exit_code();
                      failed -> 1
                  end, Doc}};
        {error, Reason} ->
            case (maps:get(error, Opts, fun(_) -> undefined end))(Reason) of
                {error, _} = Error -> Error;
                undefined -> cli_error(Reason)
            end
    end.

%% @doc The command line's error for the layer's error: a usage error
%% (exit 2) for the caller's mistakes, else a failure (exit 1).
-spec cli_error(beamlab_experiment:error_reason()) -> {error, beamlab_cli_error:reason()}.
cli_error({_Kind, {option, R}}) ->
    %% a kind's refusal of an option, naming the flag
    beamlab_cli_error:usage_error("~ts", [beamlab_schema:format_error(R, flag)]);
cli_error(Reason) ->
    Line = beamlab_experiment:format_error(Reason),
    case beamlab_experiment:error_class(Reason) of
        usage -> beamlab_cli_error:usage_error("~ts", [Line]);
        failure -> beamlab_cli_error:failure("~ts", [Line])
    end.

%% @doc The options of a kind's `Schema' given on the command line (not
%% the defaults), as the kind's keys take them: in their units
%% (beamlab_schema:from_flags/2), for the kind's `check_options/1'.
-spec given(beamlab_cli_args:parsed(), beamlab_schema:schema()) -> #{atom() => term()}.
given(Parsed, Schema) ->
    beamlab_schema:from_flags(Schema, maps:with(maps:get(given, Parsed), maps:get(opts, Parsed))).

%% @doc What the kind's `check_options/1' says of the flags given: a
%% refusal is a usage error, its line naming the flags.
-spec checked(ok | {error, beamlab_schema:error_reason()}) -> ok | {error, beamlab_cli_error:reason()}.
checked(ok) -> ok;
checked({error, R}) -> beamlab_cli_error:usage_error("~ts", [beamlab_schema:format_error(R, flag)]).

%% @doc The inner command of `Outer' (`matrix', `profile', `doctor') parsed into
%% its description. A command without an experiment (`env', `compare',
%% `report', `node'), a kind the outer command cannot run inside it, a
%% request for help and the inner command's own usage errors are usage
%% errors naming the inner command. Its `--save' would write the inner
%% document once per VM: the outer command saves its own.
-spec inner(matrix | profile | doctor, [string(), ...]) ->
          {ok, beamlab_experiment:experiment()} | {error, beamlab_cli_error:reason()}.
inner(Outer, Argv) ->
    ?CATCHING({ok, inner_experiment(Outer, Argv)}).

inner_experiment(Outer, Argv) ->
    case beamlab_command:find(Argv) of
        {ok, Name, Mod, Args} ->
            {module, Mod} = code:ensure_loaded(Mod),
            erlang:function_exported(Mod, experiment, 1) orelse cannot(Outer, Name),
            lists:any(fun(F) -> lists:member(F, Args) end, beamlab_command:help_flags(Mod))
                andalso ?USAGE("~ts: the inner command asks for help (see: beamlab help ~ts)", [Outer, Name]),
            Parsed = case beamlab_cli_args:parse(Args, Mod:options()) of
                         {ok, P} -> P#{command => Name, argv => Argv};
                         {error, Msg} -> ?USAGE("~ts: ~ts: ~ts (see: beamlab help ~ts)", [Outer, Name, Msg, Name])
                     end,
            beamlab_cli_args:get(save, Parsed, undefined) =:= undefined
                orelse ?USAGE("~ts: the inner command's --save would save once per run: "
                              "give --save to ~ts", [Outer, Outer]),
            Exp = ?VALUE(Mod:experiment(Parsed)),
            lists:member(beamlab_experiment:kind(Exp), beamlab_experiment:inner_kinds(Outer))
                orelse cannot(Outer, Name),
            Exp;
        {unknown, Cmd} ->
            cannot(Outer, Cmd)
    end.

-spec cannot(matrix | profile | doctor, string()) -> no_return().
cannot(Outer, Name) ->
    Allowed = [N || {N, M} <- beamlab_command:all(), code:ensure_loaded(M) =:= {module, M},
                    erlang:function_exported(M, experiment, 1),
                    erlang:function_exported(M, kind, 0),
                    lists:member(M:kind(), beamlab_experiment:inner_kinds(Outer))],
    ?USAGE("~ts cannot run '~ts' (it runs: ~ts)", [Outer, Name, lists:join(", ", Allowed)]).
