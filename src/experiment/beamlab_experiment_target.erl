%%% @doc One load of a started target (a matrix configuration's broker):
%%% runs the load (`beamlab amqp' in this VM, or a user's own tool with
%%% `--load-cmd', `beamlab_sut_load'), measures the broker's CPU time over
%%% it (its OS process, from /proc), and adds to the load's document the
%%% figures the JIT study compares, each a benchmark the matrix gives a
%%% mean, interval and verdict: PerfTest's `sending rate avg' and
%%% `receiving rate avg', the run's consumer latency percentiles (`p50',
%%% `p95', `p99') and the broker's CPU time per message sent. With a
%%% profile asked for, perf records the broker's OS process while the load
%%% runs (`beamlab_profile:start/2', `stop/1') and the profile joins the
%%% document (`extra.profile'), annotated with the mode, what it costs,
%%% the flavour and the subject that pairs the configurations' profiles.
%%% With a capture asked for (`matrix --profile-process NAME'), the
%%% capture kind (`beamlab_experiment_capture') captures the named broker
%%% processes over a window of the load (from a quarter of its time limit,
%%% for half of it) and its document joins the load's (`extra.capture',
%%% or the one line of `extra.capture_error').
-module(beamlab_experiment_target).

-export([load/2, figures/2, capture_window/1, load_cmd_option/0, fill_flags/2]).

-type load() :: {inner, fun((beamlab_sut_broker:target()) -> {integer(), term()})}
              | {cmd, string()}.
-type profile() :: #{mode := beamlab_profile:mode(), frequency := pos_integer(),
                     subject := binary(), label := binary()}.
%% `processes': as `profile --process' takes them; `window': the
%% capture's start and length in ms after the load's start.
-type capture() :: #{processes := [string()], window := {non_neg_integer(), pos_integer()},
                     label => binary()}.
-type opts() :: #{load := load(), profile => profile() | none,
                  capture => capture() | none,
                  sink => fun((binary()) -> term())}.
-export_type([load/0, profile/0, capture/0, opts/0]).

%% How long the capture may take beyond its window to come back (the
%% tracer reads the call table after it).
-define(CAPTURE_GRACE_MS, 30000).

%% @doc The `load_cmd' option (`--load-cmd CMD') as every command that
%% loads a target declares it (`matrix --target', `doctor --target'):
%% a user's own load tool (PerfTest) run per configuration and
%% repetition instead of `beamlab amqp' (`beamlab_sut_load').
-spec load_cmd_option() -> beamlab_schema:option().
load_cmd_option() ->
    #{name => load_cmd, long => "load-cmd", type => string, metavar => "'CMD'",
      help => "with --target rabbitmq: your own load tool (PerfTest) instead of amqp, run under /bin/sh "
              "per configuration and repetition; {uri} (and $BEAMLAB_URI) is the broker's URI, {flags} "
              "the arguments of the amqp after --; its PerfTest lines are read"}.

%% @doc A load command with `{flags}' filled: the inner amqp's arguments
%% (`Argv', its command words: PerfTest's own), each quoted for the shell.
-spec fill_flags(string(), [unicode:chardata()]) -> string().
fill_flags(Cmd, ["amqp" | Flags]) ->
    Quoted = [[$', string:replace(F, "'", "'\\''", all), $'] || F <- Flags],
    lists:flatten(string:replace(Cmd, "{flags}", lists:join(" ", Quoted), all));
fill_flags(Cmd, _) ->
    Cmd.

%% @doc Runs the load against `Target'; returns the load's exit code and
%% its document with the study's figures (and the profile), as the load
%% function of `beamlab_sut_broker:run/3' does.
-spec load(beamlab_sut_broker:target(), opts()) -> {integer(), term()}.
load(#{os_pid := Pid} = Target, #{load := Load} = Opts) ->
    case start_profile(Pid, maps:get(profile, Opts, none)) of
        {error, Why} ->
            {1, {error, iolist_to_binary(["profiling the broker: ", beamlab_profile:format_error(Why)])}};
        {ok, Rec} ->
            Cpu0 = cpu_us(Pid),
            Cap = start_capture(Target, maps:get(capture, Opts, none)),
            Out = try run_load(Load, Target, Opts)
                  catch C:R:St -> _ = stop_profile(Rec), _ = stop_capture(Cap), erlang:raise(C, R, St)
                  end,
            Cpu = cpu_us(Pid) - Cpu0,
            Profile = stop_profile(Rec),
            Captured = stop_capture(Cap),
            case Out of
                {Code, #{benchmarks := _} = Doc} when Code =:= 0; Code =:= 130 ->
                    Doc1 = with_capture(figures(Doc, Cpu), Captured),
                    {Code, with_profile(Doc1, Profile, maps:get(profile, Opts, none), Target)};
                Other ->
                    Other
            end
    end.

run_load({inner, Fun}, Target, _Opts) ->
    Fun(Target);
run_load({cmd, Cmd}, Target, Opts) ->
    beamlab_sut_load:run(Cmd, Target, maps:with([sink], Opts)).

cpu_us(Pid) ->
    case beamlab_runtime_probe:process_cpu_us("/", Pid) of
        {ok, Us} -> Us;
        {error, _} -> 0
    end.

%% The capture runs in a process of its own beside the load: it waits
%% for its window, then the capture kind connects to the target's node,
%% resolves the processes (a queue exists once the load declared it) and
%% captures them for the window's length. The load's end stops it (what
%% was captured until then is kept, as after Ctrl-C).
start_capture(_Target, none) ->
    none;
start_capture(#{node := Node} = Target, #{processes := Procs, window := {Delay, Length}} = C) ->
    Parent = self(),
    %% Every call timed all along (--duty 100): the profiled repetition is
    %% out of the statistics, so its slowdown costs no figure, and a
    %% queue's process changes modules (rabbit_prequeue becomes
    %% rabbit_amqqueue_process) where the duty cycle's own modules, taken
    %% at the start, could miss its code.
    Opts = #{node => atom_to_list(Node), cookie => maps:get(cookie, Target, undefined), process => Procs,
             duration => Length, duty => 100},
    {Pid, Mon} = spawn_monitor(
                   fun() ->
                           Out = receive
                                     {beamlab_interrupt, load_ended} -> {error, load_ended}
                                 after Delay ->
                                         case beamlab_experiment_capture:new(maps:merge(Opts, maps:with([label], C))) of
                                             {ok, Cap} ->
                                                 beamlab_experiment_capture:run(
                                                   Cap, #{run => {capture, Cap}, env => false, command => []}, none);
                                             {error, R} -> {error, {capture, R}}
                                         end
                                 end,
                           Parent ! {beamlab_target_capture, self(), Out}
                   end),
    {Pid, Mon, Delay + Length}.

stop_capture(none) ->
    none;
stop_capture({Pid, Mon, WindowMs}) ->
    Pid ! {beamlab_interrupt, load_ended},
    receive
        {beamlab_target_capture, Pid, Out} ->
            erlang:demonitor(Mon, [flush]),
            Out;
        {'DOWN', Mon, process, Pid, Why} ->
            {error, {crashed, Why}}
    after WindowMs + ?CAPTURE_GRACE_MS ->
            erlang:demonitor(Mon, [flush]),
            exit(Pid, kill),
            {error, timeout}
    end.

with_capture(Doc, none) ->
    Doc;
with_capture(Doc, {ok, CapDoc}) ->
    beamlab_result:set(extra, (maps:get(extra, Doc))#{<<"capture">> => CapDoc}, Doc);
with_capture(Doc, {error, Why}) ->
    beamlab_result:set(extra, (maps:get(extra, Doc))#{<<"capture_error">> => capture_error(Why)}, Doc).

capture_error(load_ended) ->
    <<"the load ended before the capture's window">>;
capture_error({capture, R}) ->
    %% (the matrix's flag is --profile-process)
    Line = unicode:characters_to_list(beamlab_experiment_capture:format_error(R)),
    iolist_to_binary(["capture: ", case string:prefix(Line, "--process") of
                                       nomatch -> Line;
                                       Rest -> ["--profile-process", Rest]
                                   end]);
capture_error(timeout) ->
    <<"capture: no answer after its window (its tracer on the node removes its flags by its own deadline)">>;
capture_error({crashed, Why}) ->
    iolist_to_binary(io_lib:format("capture: ended unexpectedly: ~0tP", [Why, 8])).

%% @doc The capture's window over a load that runs `Seconds' (0: until a
%% count is reached, time unknown): from a quarter of it, for half of it
%% (at least a second); 1 s then 5 s for an unknown time.
-spec capture_window(non_neg_integer()) -> {non_neg_integer(), pos_integer()}.
capture_window(0) ->
    {1000, 5000};
capture_window(Seconds) ->
    {Seconds * 250, max(1000, Seconds * 500)}.

start_profile(_Pid, none) ->
    {ok, none};
start_profile(Pid, #{mode := Mode, frequency := Hz}) ->
    beamlab_profile:start({pid, list_to_integer(Pid)}, #{frequency => Hz, mode => Mode,
                                                         duration => infinity}).

stop_profile(none) -> none;
stop_profile(Rec) -> beamlab_profile:stop(Rec).

with_profile(Doc, none, _, _) ->
    Doc;
with_profile(Doc, {error, Why}, _, _) ->
    Extra = maps:get(extra, Doc),
    beamlab_result:set(extra, Extra#{<<"profile_error">> => iolist_to_binary(beamlab_profile:format_error(Why))}, Doc);
with_profile(Doc, {ok, O}, #{mode := Mode, frequency := Hz, subject := Subject, label := Label}, Target) ->
    #{profile := P, perf_support := Support, elapsed_ms := Ms} = O,
    #{what := What, cost := Cost} = beamlab_profile:mode_info(Mode),
    Flavor = case maps:get(env, Target, #{}) of
                 #{otp := #{flavor := F}} when is_binary(F) -> F;
                 _ -> atom_to_binary(maps:get(flavor, O, unknown))
             end,
    Annotated = P#{<<"subject">> => Subject, <<"label">> => Label, <<"mode">> => atom_to_binary(Mode),
                   <<"mode_what">> => What, <<"mode_cost">> => Cost, <<"flavor">> => Flavor,
                   <<"frequency">> => Hz, <<"perf_support">> => Support, <<"elapsed_ms">> => Ms,
                   <<"os_pid">> => maps:get(os_pid, O), <<"target_exited">> => maps:get(target_exited, O)},
    beamlab_result:set(extra, (maps:get(extra, Doc))#{<<"profile">> => Annotated}, Doc).

%% @doc The study's figures added to a load's document (`beamlab amqp''s,
%% or a `--load-cmd''s): the summary's average rates, the run's consumer
%% latency percentiles and, given the broker's CPU time over the load in
%% microseconds, its CPU time per message sent.
-spec figures(beamlab_result:result(), non_neg_integer()) -> beamlab_result:result().
figures(#{benchmarks := Bs} = Doc, CpuUs) ->
    Find = fun(Name) -> [B || #{name := N} = B <- Bs, N =:= Name] end,
    Avg = fun(Name, As) ->
                  [bench(As, V, <<"msg/s">>, higher, <<"throughput">>)
                   || #{extra := #{<<"average">> := V}} <- Find(Name), is_number(V)]
          end,
    Pct = [bench(<<"consumer latency ", K/binary>>, V, <<"us">>, lower, <<"latency">>)
           || #{extra := #{<<"total">> := #{} = T}} <- Find(<<"consumer latency">>),
              K <- [<<"p50">>, <<"p95">>, <<"p99">>], V <- [maps:get(K, T, null)], is_number(V)],
    Cpu = case messages(Doc) of
              N when is_number(N), N > 0 ->
                  [bench(<<"broker CPU per message">>, CpuUs / N, <<"us">>, lower, <<"cost">>)];
              _ -> []
          end,
    Extra = maps:get(extra, Doc),
    beamlab_result:set(extra, Extra#{<<"broker_cpu_us">> => CpuUs},
                       beamlab_result:add_benchmarks(Doc, Avg(<<"sent">>, <<"sending rate avg">>)
                                                     ++ Avg(<<"received">>, <<"receiving rate avg">>)
                                                     ++ Pct ++ Cpu)).

bench(Name, V, Unit, Better, Metric) ->
    beamlab_result:benchmark(Name, [V], #{group => <<"study">>, unit => Unit, better => Better,
                                          metric => Metric}).

%% Messages sent over the load: beamlab amqp counts them; a load tool's
%% are its average rate over its last interval's time.
messages(#{extra := #{<<"amqp">> := #{<<"counters">> := #{<<"sent">> := N}}}}) ->
    N;
messages(#{extra := #{<<"load">> := #{<<"summary">> := #{<<"sent">> := Avg}, <<"elapsed_s">> := S}}})
  when is_number(S) ->
    Avg * S;
messages(_) ->
    undefined.
