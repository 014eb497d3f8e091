%%% @doc Functions whose spec says they cannot fail do not raise for what
%%% the command line gives them (#31). The checkable form: the functions
%%% that take a user's input first, with their spec's return type an
%%% outcome (`{ok, _} | {error, _}', `ok | {error, _}') or a line, are
%%% called on generated input of the shape the command line passes
%%% (every command's argv tokens; every kind's option maps, any value) and
%%% must return a value of that type, never raise; their error lines are
%%% one line. Covered: `beamlab_cli_args:parse/2' over every command's
%%% options, `beamlab_schema:check/2' and `format_error/2' over every
%%% kind's schema, and every kind's library front (`beamlab_experiment_opts',
%%% what `beamlab:KIND' calls, whose spec is an outcome), then
%%% `beamlab_experiment:check/1' and `beamlab:format_error/1' over the
%%% experiments it builds from those maps.
-module(prop_beamlab_no_raise).

-include_lib("proper/include/proper.hrl").
-include_lib("eunit/include/eunit.hrl").

-export([prop_parse_never_raises/0, prop_schema_never_raises/0, kind_map/0, command_argv/0]).

%%--------------------------------------------------------------------
%% Generators

%% A command and an argv of its flags and values, well formed or not.
command_argv() ->
    ?LET({_Name, Mod}, oneof(beamlab_command:all()),
         {Mod, list(token(Mod:options()))}).

token(Options) ->
    Flags = [["--", L] || #{long := L} <- Options] ++ [["-", S] || #{short := S} <- Options],
    oneof([?LET(F, oneof(Flags), lists:flatten(F)),
           ?LET({F, V}, {oneof(Flags), value_text()}, lists:flatten([F, "=", V])),
           value_text(),
           "--", "-", "--no-such-flag", "-Z"]).

value_text() ->
    oneof(["0", "-1", "1", "2.5", "1e3", "-5", "10M", "5%", "", "x", "true", "1,2,,3",
           "99999999999999999999", "0.0001", "ok.",
           ?LET(N, integer(), integer_to_list(N)),
           ?LET(S, list(range(0, 300)), S)]).

%% A kind and a map of its options, values of any shape.
kind_map() ->
    ?LET(Mod, oneof(beamlab_experiment_kind:all()),
         {Mod, ?LET(Pairs, list({oneof([N || #{name := N} <- Mod:options()] ++ [no_such_option]), any_value()}),
                    maps:from_list(Pairs))}).

any_value() ->
    oneof([integer(), float(), atom(), binary(), list(range(0, 200)), infinity, undefined,
           true, false, [1, 2], #{}, {1, 2}]).

%%--------------------------------------------------------------------
%% Properties

prop_parse_never_raises() ->
    ?FORALL({Mod, Argv}, command_argv(),
            case beamlab_cli_args:parse(Argv, Mod:options()) of
                {ok, #{opts := _}} -> true;
                {error, Msg} -> one_line(Msg)
            end).

prop_schema_never_raises() ->
    ?FORALL({Mod, Map}, kind_map(),
            case beamlab_schema:check(Mod:options(), Map) of
                ok -> true;
                {error, R} -> one_line(beamlab_schema:format_error(R, key))
                                  andalso one_line(beamlab_schema:format_error(R, flag))
            end).

one_line(Chars) ->
    case unicode:characters_to_list(Chars) of
        L when is_list(L) -> not lists:member($\n, L);
        _ -> false
    end.

parse_never_raises_test_() ->
    {timeout, 120, ?_assert(proper:quickcheck(prop_parse_never_raises(), [{numtests, 500}, {to_file, user}]))}.

schema_never_raises_test_() ->
    {timeout, 120, ?_assert(proper:quickcheck(prop_schema_never_raises(), [{numtests, 500}, {to_file, user}]))}.

%% Every kind's library maps, one option of any value (its own, or one
%% every kind shares): built, checked and formatted as values, never
%% raised. The kinds are those whose schema is full (the agreement
%% property's, prop_beamlab_schema_fronts:kinds/0, reached as it reaches
%% them); the others join it as their schemas fill.
api_maps_never_raise_test_() ->
    {timeout, 120,
     fun() ->
             Values = [-1, 0, 1, 2.5, 1.0e20, infinity, undefined, <<"x">>, "x", x, [], #{}, [x], {1, 2}],
             Shared = [telemetry, verbose, env, sink, command],
             _ = [begin
                      #{api := Build} = Front = prop_beamlab_schema_fronts:front(Kind),
                      {ok, Mod} = beamlab_experiment_kind:find(Kind),
                      Context = maps:get(context, Front, []),
                      [outcome(Build(#{N => V})) || N <- [N || #{name := N} <- Mod:options()] ++ Shared,
                                                   not lists:member(N, Context), V <- Values]
                  end || Kind <- prop_beamlab_schema_fronts:kinds()],
             ok
     end}.

%% A built experiment checked, an error formatted: one line, no raise.
outcome({ok, Exp}) ->
    case beamlab_experiment:check(Exp) of
        ok -> ok;
        {error, R} -> ?assert(one_line(beamlab:format_error(R)))
    end;
outcome({error, R}) ->
    ?assert(one_line(beamlab:format_error(R))).

%% The library's maps of an amqp load, any value: checked and formatted
%% as values, never raised.
amqp_maps_never_raise_test() ->
    Values = [-1, 0, 1, 2.5, 1.0e20, infinity, undefined, <<"x">>, "x", x, [], #{}],
    Names = [N || #{name := N, type := _} <- beamlab_experiment_amqp:options()],
    _ = [case beamlab_experiment_opts:amqp(#{K => V}) of
             {ok, Exp} ->
                 case beamlab_experiment:check(Exp) of
                     ok -> ok;
                     {error, R} -> ?assert(one_line(beamlab:format_error(R)))
                 end;
             {error, R} ->
                 ?assert(one_line(beamlab:format_error(R)))
         end || K <- Names, V <- Values],
    ok.
