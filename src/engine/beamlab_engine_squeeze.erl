%%% @doc Concurrency estimation (erlperf's "squeeze" mode).
%%%
%%% Runs continuous sampling of one job at concurrency `min', `min + step',
%%% ... up to `max'. A step "gains" when its mean throughput beats the best
%%% seen so far; the search stops after `threshold' consecutive steps without
%%% a gain (or at `max', an interrupt, or a failure). The answer is the best
%%% point plus the whole curve, so the shape (linear scaling, plateau,
%%% collapse under contention) is visible, not just the peak.
-module(beamlab_engine_squeeze).

-export([run/3, run/4, defaults/0]).

-export_type([opts/0, given_opts/0, point/0]).

-type opts() :: #{min := pos_integer(), max := pos_integer(),
                  step := pos_integer(), threshold := pos_integer(),
                  checkpoint => undefined | fun((#{best := point() | undefined,
                                                   curve := [point()]}) -> ok)}.
%% What callers pass: missing keys take defaults/0.
-type given_opts() :: #{min => pos_integer(), max => pos_integer(),
                        step => pos_integer(), threshold => pos_integer()}.
-type point() :: #{concurrency := pos_integer(), mean := float(),
                   outcome := beamlab_engine_sampler:outcome()}.

%% @doc Defaults: from 1 worker, step 1, up to twice the online schedulers,
%% stop after 3 steps without gain.
-spec defaults() -> opts().
defaults() ->
    #{min => 1, max => 2 * erlang:system_info(schedulers_online), step => 1, threshold => 3}.

%% @doc Runs the search. Returns the best point (undefined when not even
%% the first step produced a sample), the curve in concurrency order, and
%% whether an interrupt cut it short.
-spec run(beamlab_engine_job:job(), beamlab_engine_sampler:opts(), given_opts()) ->
          #{best := point() | undefined, curve := [point()], interrupted := boolean(),
            status := ok | {error, beamlab_engine_job:failure()}}.
run(Job, SamplerOpts, Opts0) ->
    run(Job, SamplerOpts, Opts0, undefined).

%% @doc As {@link run/3}; `Checkpoint' (unless `undefined') is given the
%% search so far, the step being sampled included, whenever the sampler
%% checkpoints (see {@link beamlab_engine_sampler}).
-spec run(beamlab_engine_job:job(), beamlab_engine_sampler:opts(), given_opts(),
          undefined | fun((#{best := point() | undefined, curve := [point()]}) -> ok)) ->
          #{best := point() | undefined, curve := [point()], interrupted := boolean(),
            status := ok | {error, beamlab_engine_job:failure()}}.
run(Job, SamplerOpts, Opts0, Checkpoint) ->
    Opts = maps:merge(defaults(), maps:with([min, max, step, threshold], Opts0)),
    step(maps:get(min, Opts), Job, SamplerOpts, Opts#{checkpoint => Checkpoint},
         #{best => undefined, curve => [], interrupted => false, status => ok}, 0).

step(C, _Job, _SOpts, #{max := Max}, Acc, _Misses) when C > Max ->
    finish(Acc);
step(_C, _Job, _SOpts, #{threshold := T}, Acc, Misses) when Misses >= T ->
    finish(Acc);
step(C, Job, SOpts, #{step := Step} = Opts, Acc, Misses) ->
    case beamlab_engine_job:set_concurrency(Job, C) of
        {error, Failure} ->
            finish(Acc#{status := {error, Failure}});
        ok ->
            {[Outcome], #{interrupted := Int}} =
                beamlab_engine_sampler:run([Job], sampler_opts(C, SOpts, Opts, Acc)),
            {Acc2, Gain} = add_point(C, Outcome, Acc),
            Misses1 = case Gain of
                          true -> 0;
                          false -> Misses + 1
                      end,
            case {Int, maps:get(status, Outcome)} of
                {true, _} -> finish(Acc2#{interrupted := true});
                {false, {error, _} = E} -> finish(Acc2#{status := E});
                {false, ok} -> step(C + Step, Job, SOpts, Opts, Acc2, Misses1)
            end
    end.

add_point(C, Outcome, Acc) ->
    Point = #{concurrency => C, mean => mean(maps:get(samples, Outcome)), outcome => Outcome},
    Acc1 = Acc#{curve := [Point | maps:get(curve, Acc)]},
    case better(Point, maps:get(best, Acc)) of
        true -> {Acc1#{best := Point}, true};
        false -> {Acc1, false}
    end.

%% The sampler's checkpoints carry the whole search: the steps done and
%% the one being sampled.
sampler_opts(_C, SOpts, #{checkpoint := undefined}, _Acc) ->
    SOpts;
sampler_opts(C, SOpts, #{checkpoint := Checkpoint}, Acc) ->
    SOpts#{checkpoint => fun(_, [Outcome]) ->
                                 {Acc1, _} = add_point(C, Outcome, Acc),
                                 #{best := Best, curve := Curve} = finish(Acc1),
                                 Checkpoint(#{best => Best, curve => Curve})
                         end}.

finish(#{curve := Curve} = Acc) ->
    Acc#{curve := lists:reverse(Curve)}.

better(#{outcome := #{samples := []}}, _) -> false;
better(_Point, undefined) -> true;
better(#{mean := M}, #{mean := Best}) -> M > Best.

mean([]) -> 0.0;
mean(S) -> beamlab_stats:mean(S).
