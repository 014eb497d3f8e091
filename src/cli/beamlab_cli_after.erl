%%% @doc The after-the-samples phases of `beamlab run' (`--profile TOOL',
%%% `--memory', `--reductions', `--msacc'): options, running them on each
%%% job once the timed samples are taken, and their text. They run in this
%%% VM, one job after the other, and never touch the timed figures; their
%%% results go to each benchmark's `extra' (`profile', `per_iteration').
-module(beamlab_cli_after).

-export([options/0, attach/3, text/1]).

%% @doc The options `beamlab run' adds.
-spec options() -> [beamlab_cli_args:option()].
options() ->
    [#{name => profile, long => "profile", type => {enum, [eprof, fprof, cprof, tprof]}, metavar => "TOOL",
       help => "after the samples, profile the runner in the VM: eprof, fprof, cprof (tprof: OTP 27+)"},
     #{name => msacc, long => "msacc", type => boolean, default => false,
       help => "with --profile and -v: microstate accounting of the profiled period"},
     #{name => memory, long => "memory", type => boolean, default => false,
       help => "after the samples, words allocated per iteration (spawned processes included)"},
     #{name => reductions, long => "reductions", type => boolean, default => false,
       help => "after the samples, reductions per iteration (spawned processes included)"}].

%% @doc Runs the requested phases for every job that measured and adds
%% their results to its benchmark. A partial run gets none.
-spec attach([beamlab_engine:job_spec()], beamlab_result:result(), beamlab_cli_args:parsed()) ->
          beamlab_result:result().
attach(_Jobs, Doc = #{partial := true}, _Parsed) ->
    Doc;
attach(Jobs, Doc = #{benchmarks := Bs}, Parsed) ->
    Get = fun(K) -> beamlab_cli_args:get(K, Parsed) end,
    Tool = Get(profile),
    Mem = Get(memory) =:= true,
    Reds = Get(reductions) =:= true,
    Get(msacc) =:= true andalso (Tool =:= undefined orelse Get(verbose) =:= 0)
        andalso beamlab_cli_error:usage("--msacc needs --profile TOOL and -v", []),
    Tool =:= tprof andalso not lists:member(tprof, beamlab_engine_after:tools())
        andalso beamlab_cli_error:usage("~ts", [beamlab_engine_after:format_error(
                                                  {unsupported_tool, tprof, erlang:system_info(otp_release)})]),
    case Tool =:= undefined andalso not Mem andalso not Reds of
        true -> Doc;
        false when length(Jobs) =/= length(Bs) -> Doc;
        false ->
            New = [phases(J, B, Tool, Mem, Reds, Get(msacc) =:= true) || {J, B} <- lists:zip(Jobs, Bs)],
            Doc#{benchmarks := New}
    end.

phases(_Job, B = #{extra := #{<<"status">> := <<"failed">>}}, _Tool, _Mem, _Reds, _Msacc) ->
    B;
phases(Job, B = #{extra := Extra}, Tool, Mem, Reds, Msacc) ->
    E1 = case Mem orelse Reds of
             false -> Extra;
             true -> Extra#{<<"per_iteration">> => result(beamlab_engine_after:per_iteration(
                                                             Job, #{memory => Mem, reductions => Reds}))}
         end,
    E2 = case Tool of
             undefined -> E1;
             _ -> E1#{<<"profile">> => result(beamlab_engine_after:profile(Job, Tool, #{msacc => Msacc}))}
         end,
    B#{extra := beamlab_json:canonical(E2)}.

result({ok, M}) -> M;
result({error, R}) -> #{<<"error">> => iolist_to_binary(beamlab_engine_after:format_error(R))}.

%% @doc The text of the phases, after the run's table.
-spec text(beamlab_result:result()) -> unicode:chardata().
text(#{benchmarks := Bs}) ->
    [[case maps:find(<<"per_iteration">>, E) of
          {ok, #{<<"error">> := Err}} -> ["\n", N, ": per iteration: ", Err, "\n"];
          {ok, M} -> ["\n", N, ", per iteration (own phase, after the samples):\n",
                      beamlab_render_profile:memory_lines(M)];
          error -> []
      end,
      case maps:find(<<"profile">>, E) of
          {ok, #{<<"error">> := Err}} -> ["\n", N, ": profile: ", Err, "\n"];
          {ok, P} -> ["\n", N, ": ", beamlab_render_profile:invm_table(P)];
          error -> []
      end] || #{name := N, extra := E} <- Bs].
