%%% @doc `beamlab doctor': why this machine runs the BEAM slower, diagnosed,
%%% with the remedies measured and ranked (`beamlab_experiment_doctor').
%%% The first line of the output is the recommendation; each phase and
%%% each VM is told on stderr.
-module(beamlab_command_doctor).
-behaviour(beamlab_command).

-export([summary/0, options/0, usage/0, run/1, experiment/1, text/2, files/1]).

-include("beamlab_cli_error.hrl").

%% @doc One line for `beamlab help'.
-spec summary() -> string().
summary() ->
    "diagnose why this machine runs the BEAM slower and measure the remedies (vm.args flags)".

%% @doc Options of `beamlab doctor': the kind's own
%% (beamlab_experiment_doctor:options/0, where their types, bounds and
%% help are declared), then the command line's own and the common ones.
-spec options() -> [beamlab_cli_args:option()].
options() ->
    beamlab_schema:flags(beamlab_experiment_doctor:options())
        ++ [#{name => compare, long => "compare", type => boolean, default => false,
              help => "compare two saved doctor documents (A.json B.json): the facts that differ, "
                      "where the curves part, which finding explains it"}]
        ++ beamlab_cli_args:common_options().

%% @doc Usage and examples for `beamlab help doctor'.
-spec usage() -> iodata().
usage() ->
    "Usage: beamlab doctor [--quick] [--vm \"FLAGS\"] [--wrap CMD] [--cgroup DIR] [--reps N]\n"
    "                      [--remedy FLAGS]... [--save [FILE]] [--format text|json|markdown]\n"
    "       beamlab doctor --target rabbitmq [--otp DIR] [--flavor jit|emu] [OPTIONS] -- amqp [AMQP OPTIONS]\n"
    "       beamlab doctor --target rabbitmq --load-cmd CMD [OPTIONS] [-- amqp [ITS {flags}]]\n"
    "       beamlab doctor --compare A.json B.json\n"
    "       beamlab doctor --node NAME@HOST [--cookie C] [--duration S]\n\n"
    "One fixed protocol (docs/doctor.md), each phase on stderr:\n"
    "  facts     SMT siblings, physical cores, NUMA nodes and distances, last-level\n"
    "            caches, frequency governor, THP, sched_ext, isolated CPUs; in each\n"
    "            probed VM its schedulers, the CPUs it may run on, its cgroup quota\n"
    "  curve     the probe (the message-load benchmark as published, the same mesh\n"
    "            saturating the VM, a ping-pong) in fresh VMs with the default flags\n"
    "            and at +S 1, 2, 4 ... up to twice the CPUs, interleaved; goodput,\n"
    "            capacity, latency p50/p99, CPU per message, microstate accounting,\n"
    "            utilisation, run queues, other processes' and the hypervisor's CPU;\n"
    "            a USL fit locates the peak\n"
    "  diagnosis named findings with evidence and confidence (oversubscribed,\n"
    "            cgroup_quota, collapse, busy_wait, competing, steal, smt, numa,\n"
    "            frequency_scaling, late_timers; or no_pathology)\n"
    "  remedies  the findings' flag sets measured against the default in fresh VMs,\n"
    "            interleaved, 5 repetitions (--quick: 3), ranked with intervals\n\n"
    "The first line says what to put in vm.args and what it buys, e.g.\n"
    "  start the VM with +S 2:2: goodput 1.01x (0.98 .. 1.04), capacity 2.90x (2.41 .. 3.49), ...\n\n"
    "--quick finishes within 2 minutes on a 2-core machine, the default within 10.\n"
    "--vm gives the flags the VM is started with today (the default configuration\n"
    "the remedies are measured against); --wrap and --cgroup start every VM under a\n"
    "command (taskset, numactl) or in a cgroup, as the VM runs in production.\n"
    "Ctrl-C stops between two VMs and keeps what was measured (exit 130).\n\n"
    "With --target rabbitmq the remedies are measured on a private RabbitMQ instead\n"
    "(as matrix --target starts it): the broker's default flags and each remedy it\n"
    "does not already run with, a fresh broker per repetition loaded by the amqp\n"
    "command after --, interleaved, ranked by throughput, p99 latency and the\n"
    "broker's CPU per message; the first line is a rabbitmq-env.conf line.\n"
    "--otp DIR runs every broker on the Erlang/OTP installed in DIR (RabbitMQ 4.0\n"
    "on OTP 26 and 27), --flavor its emulator flavour (jit or emu), as matrix\n"
    "--target takes them; the probe's VMs run on beamlab's own. --load-cmd loads\n"
    "each broker with your own tool (PerfTest) instead of amqp: {uri} is the\n"
    "broker's URI, {flags} the arguments of an amqp after --; its PerfTest lines\n"
    "are read into the same figures. Ctrl-C in this phase stops the broker and\n"
    "the load, keeps the configurations finished (exit 130).\n\n"
    "--node reads a running node instead, over distribution, while it works (no code\n"
    "loaded there): its schedulers, CPUs, cgroup quota and flags, microstate\n"
    "accounting, each scheduler's utilisation, run queues, the kernel's migrations\n"
    "of its scheduler threads and other processes' CPU (when it runs on this host),\n"
    "for --duration seconds; the flags turned on there are turned back at the end,\n"
    "on Ctrl-C and when beamlab dies. It recommends flags for the node's next start\n"
    "(a vm.args line) with the findings they rest on; it does not measure them (it\n"
    "cannot restart the node).\n\n"
    "Examples:\n"
    "  beamlab doctor --quick\n"
    "  beamlab doctor --vm \"+S 16:16\" --save doctor.json\n"
    "  beamlab doctor --quick --wrap \"taskset -c 0\" --vm \"+S 2:2\"\n"
    "  beamlab doctor --remedy \"+S 2:2 +sbwt none\" --remedy \"+sbt db\"\n"
    "  beamlab doctor --compare machine-a.json machine-b.json\n"
    "  beamlab doctor --node rabbit@$(hostname -s) --duration 20\n"
    "  beamlab doctor --quick --target rabbitmq -- amqp -x 1 -y 1 -r 2000 -z 10\n"
    "  beamlab doctor --quick --target rabbitmq --otp /opt/beamlab-otp/27 -- amqp -x 1 -y 1 -r 2000 -z 10\n"
    "  beamlab doctor --quick --target rabbitmq --otp /opt/beamlab-otp/27 --flavor emu -- amqp -r 2000 -z 10\n"
    "  beamlab doctor --quick --target rabbitmq --load-cmd '/opt/beamlab-perftest/2.22.1/bin/perftest -h {uri} {flags}' \\\n"
    "                 -- amqp -x 1 -y 1 -r 2000 -z 10\n".

%% @doc The files the command line reads: `--compare''s two documents
%% (the dispatcher refuses a `--save' that is one of them).
-spec files(beamlab_cli_args:parsed()) -> #{inputs := [beamlab_runtime_file:named()]}.
files(Parsed) ->
    case beamlab_cli_args:get(compare, Parsed) of
        true -> #{inputs => [{"--compare", F} || F <- maps:get(args, Parsed)]};
        false -> #{inputs => []}
    end.

%% @doc Runs the doctor; the document holds the diagnosis. With
%% `--compare', prints two saved documents side by side instead.
-spec run(beamlab_cli_args:parsed()) -> beamlab_command:outcome().
run(Parsed) ->
    ?CATCHING(run_parsed(Parsed)).

run_parsed(Parsed) ->
    Node = beamlab_cli_args:get(node, Parsed),
    Target = beamlab_cli_args:get(target, Parsed),
    Rest = maps:get(rest, Parsed, []),
    case beamlab_cli_args:get(compare, Parsed) of
        true when Node =/= undefined ->
            ?USAGE("doctor --compare reads two saved documents: --node does not apply", []);
        true when Target =/= undefined; Rest =/= [] ->
            ?USAGE("doctor --compare reads two saved documents: --target and a load after -- "
                   "do not apply", []);
        true -> compare(maps:get(args, Parsed));
        false -> ?VALUE(beamlab_cli_experiment:run(describe(Parsed)))
    end.

compare([FileA, FileB]) ->
    [A, B] = [case beamlab_result:load(F) of
                  {ok, #{kind := doctor} = D} -> D;
                  {ok, #{kind := K}} -> ?USAGE("~ts is a ~ts document, not a doctor's", [F, K]);
                  {error, R} -> ?USAGE("~ts", [beamlab_result:format_error(R)])
              end || F <- [FileA, FileB]],
    beamlab_cli_output:put_chars(beamlab_render_doctor:compare(beamlab_result_doctor:compare(A, B))),
    {0, none};
compare(Args) ->
    ?USAGE("doctor --compare takes two saved doctor documents (got ~b argument~s)",
           [length(Args), case length(Args) of 1 -> ""; _ -> "s" end]).

%% @doc The experiment: the options as the kind's map, the phases on
%% stderr; with `--target rabbitmq', the `amqp' command after `--' is the
%% broker's load.
-spec experiment(beamlab_cli_args:parsed()) ->
          {ok, beamlab_experiment:experiment()} | {error, beamlab_cli_error:reason()}.
experiment(Parsed) ->
    ?CATCHING({ok, describe(Parsed)}).

describe(Parsed) ->
    maps:get(args, Parsed) =:= [] orelse
        ?USAGE("doctor takes no arguments (got: ~ts)", [lists:join(" ", maps:get(args, Parsed))]),
    Names = [N || #{name := N} <- beamlab_experiment_doctor:options()],
    Opts = maps:from_list([{N, V} || N <- Names, V <- [beamlab_cli_args:get(N, Parsed)], V =/= undefined]),
    D = case beamlab_experiment_doctor:new(Opts) of
            {ok, D0} -> D0;
            {error, {option, R}} -> ?USAGE("~ts", [beamlab_schema:format_error(R, flag)])
        end,
    %% (--load-cmd is the load itself: an amqp after -- only lends its
    %% flags, {flags}; without one the load is that command alone)
    Rest = case {maps:get(load_cmd, D), maps:get(rest, Parsed, [])} of
               {none, R0} -> R0;
               {_, []} -> ["amqp"];
               {_, ["amqp" | Args] = R0} ->
                   case beamlab_experiment_doctor:load_rule(D, Args =/= []) of
                       ok -> R0;
                       {error, R1} -> refuse(R1)
                   end;
               {_, R0} -> R0
           end,
    Target = case {maps:get(target, D), Rest} of
                 {none, []} -> #{};
                 {none, _} -> refuse(load_needs_target);
                 {rabbitmq, ["amqp" | _]} -> #{load => ?VALUE(beamlab_cli_experiment:inner(doctor, Rest))};
                 {rabbitmq, _} -> refuse(target_needs_load)
             end,
    maps:merge(#{run => {doctor, maps:merge(D, Target)},
                 command => beamlab_result_redact:argv(maps:get(argv, Parsed)),
                 sink => fun({doctor, Line}) -> io:format(standard_error, "~ts", [Line]);
                            (_) -> ok
                         end},
               case Target of
                   #{load := _} -> #{target => #{kind => rabbitmq, otp => []}};
                   _ -> #{}
               end).

%% The doctor's own refusal, one line (exit 2).
-spec refuse(beamlab_experiment_doctor:error_reason()) -> no_return().
refuse(R) ->
    ?USAGE("~ts", [beamlab_experiment_doctor:format_error(R)]).

%% @doc The recommendation, findings, curve, accounting and ranking.
-spec text(beamlab_result:result(), beamlab_cli_args:parsed()) -> unicode:chardata().
text(Doc, Parsed) ->
    beamlab_render_view:text(Doc, beamlab_cli_output:text_opts(Parsed)).
