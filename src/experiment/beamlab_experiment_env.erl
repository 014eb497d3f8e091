%%% @doc The environment report of an experiment's document: this VM's
%%% (`beamlab_env:report/0'), unless the document has one already (the
%%% report of the VM that ran it) or the experiment asks for none
%%% (`env => false').
-module(beamlab_experiment_env).

-export([attach/2, attach/1]).

%% @doc The document with the environment report, as the experiment asks.
-spec attach(beamlab_result:result(), beamlab_experiment:experiment()) -> beamlab_result:result().
attach(Doc, Exp) ->
    case maps:get(env, Exp, true) of
        true -> attach(Doc);
        false -> Doc
    end.

%% @doc The document with this VM's environment report, unless it has one.
-spec attach(beamlab_result:result()) -> beamlab_result:result().
attach(Doc = #{env := Env}) when map_size(Env) > 0 ->
    Doc;
attach(Doc) ->
    beamlab_result:set(env, beamlab_env:report(), Doc).
