%%% @doc The experiment-kind behaviour and its registry (#31). Every kind
%%% of experiment (bench, suite, matrix, watch, amqp, profile, check, ...)
%%% is one module declaring `-behaviour(beamlab_experiment_kind)';
%%% {@link beamlab_experiment} finds it by its name (the tag of
%%% `#{run := {Name, What}}', the document's `kind' and the tag of its
%%% errors `{Name, Reason}') and dispatches check, run, verdict,
%%% error_class and format_error to it. Adding a kind is one module and
%%% one line in {@link all/0}.
%%%
%%% Optional: `composes/0', what an experiment of the kind may be composed
%%% with besides its run (`after': a benchmark's after-phase; `target': a
%%% system under test), default none; `inner_kinds/0' and `inner/1', for a
%%% kind that runs another experiment inside it (a matrix, a profile): the
%%% kinds it can run and the inner experiment of a `What', which the entry
%%% point checks before the kind's own `check/2'.
-module(beamlab_experiment_kind).

-export([all/0, find/1, callbacks/0]).

%% The tag: `#{run := {Name, What}}', the document's `kind', `{Name, Reason}'.
-callback name() -> atom().
%% The kind's options, declared (beamlab_schema): what the command line
%% builds its flags from and the public API checks its maps against.
-callback options() -> [beamlab_schema:option()].
%% The kind's `What' from options already checked against options/0.
-callback new(Opts :: #{atom() => term()}) -> {ok, What :: term()} | {error, Reason :: term()}.
%% What can be checked before anything starts.
-callback check(What :: term(), beamlab_experiment:experiment()) -> ok | {error, Reason :: term()}.
%% Runs it; `Inner' is how to run an inner experiment (a matrix's, a profile's).
-callback run(What :: term(), beamlab_experiment:experiment(), beamlab_experiment:inner()) ->
    {ok, beamlab_result:result()} | {error, Reason :: term()}.
%% How the run went, read from its document.
-callback verdict(beamlab_result:result()) -> beamlab_experiment:verdict().
%% The caller's mistake (usage) or a failure of the run.
-callback error_class(Reason :: term()) -> usage | failure.
%% One line for each of its errors.
-callback format_error(Reason :: term()) -> unicode:chardata().
%% What an experiment of the kind may be composed with (default: nothing).
-callback composes() -> ['after' | target].
%% The kinds it can run inside it, and the inner experiment of a `What'.
-callback inner_kinds() -> [atom()].
-callback inner(What :: term()) -> {ok, beamlab_experiment:experiment()} | none.

-optional_callbacks([composes/0, inner_kinds/0, inner/1]).

%% @doc The registered kinds, one module each.
-spec all() -> [module()].
all() ->
    [beamlab_experiment_bench,
     beamlab_experiment_suite,
     beamlab_experiment_matrix,
     beamlab_experiment_watch,
     beamlab_experiment_amqp,
     beamlab_experiment_profile,
     beamlab_experiment_check,
     beamlab_experiment_doctor,
     beamlab_experiment_capture].

%% @doc The module of the kind named `Name'.
-spec find(atom()) -> {ok, module()} | error.
find(Name) when is_atom(Name) ->
    case [M || M <- all(), M:name() =:= Name] of
        [M | _] -> {ok, M};
        [] -> error
    end;
find(_) ->
    error.

%% @doc The callbacks every kind exports (the optional ones left out).
-spec callbacks() -> [{atom(), arity()}].
callbacks() ->
    ?MODULE:behaviour_info(callbacks) -- ?MODULE:behaviour_info(optional_callbacks).
