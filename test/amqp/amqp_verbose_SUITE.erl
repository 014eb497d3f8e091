%%% `beamlab amqp -v' through the built escript against a private RabbitMQ
%%% (scripts/rabbitmq.sh on its own port): the generator VM's telemetry and
%%% the detectors' findings land in the result document, with the advice of
%%% the amqp command.
-module(amqp_verbose_SUITE).
-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-export([all/0, suite/0, init_per_suite/1, end_per_suite/1]).
-export([verbose_records_telemetry_and_findings/1]).

%% The broker's port, chosen free when it starts (beamlab_test_util:
%% start_suite_rabbitmq/1): a fresh machine or a parallel run may hold any
%% fixed one.
-define(PORT, beamlab_test_util:suite_broker_port(?MODULE)).

suite() -> [{timetrap, {minutes, 5}}].

all() -> [verbose_records_telemetry_and_findings].

init_per_suite(Config) ->
    ok = beamlab_test_util:start_suite_rabbitmq(?MODULE),
    Config.

end_per_suite(_Config) ->
    beamlab_test_util:stop_suite_rabbitmq(?MODULE).

verbose_records_telemetry_and_findings(_Config) ->
    Queue = "verbose-" ++ integer_to_list(erlang:unique_integer([positive])),
    #{code := 0, out := Out, err := Err} =
        beamlab_test_util:cli(["amqp", "-h", "amqp://guest:guest@127.0.0.1:" ++ ?PORT ++ "/%2F",
                               "-z", "3", "-r", "300", "-u", Queue, "-v", "--format", "json"]),
    ct:log("~ts~n--- stderr ---~n~ts", [Out, Err]),
    %% Telemetry lines and PerfTest lines share stderr in json mode.
    ?assertMatch({match, _}, re:run(Err, "^ +time +util .*runq", [multiline])),
    {ok, Doc} = beamlab_json:decode(Out),
    #{<<"kind">> := <<"amqp">>, <<"telemetry">> := #{<<"t_ms">> := Ts, <<"util">> := Util},
      <<"findings">> := Fs, <<"benchmarks">> := Bs} = Doc,
    ?assert(length(Ts) >= 2 andalso length(Ts) =:= length(Util)),
    [?assertMatch(#{<<"id">> := _, <<"severity">> := _, <<"evidence">> := _, <<"advice">> := _}, F)
     || F <- Fs],
    %% Noise findings: exactly the benchmarks past the limits, advising -z.
    Noisy = [N || #{<<"name">> := N, <<"stats">> := #{<<"mean">> := M, <<"cv">> := Cv,
                                                      <<"ci_mean">> := [Lo, Hi]}} <- Bs,
                  M /= 0, abs(Hi - Lo) / 2 / abs(M) > 0.05 orelse Cv > 0.10],
    ?assertEqual(lists:sort(Noisy),
                 lists:sort([N || #{<<"id">> := <<"noisy_measurement">>,
                                    <<"data">> := #{<<"benchmark">> := N}} <- Fs])),
    [?assertMatch({match, _}, re:run(A, "run longer \\(-z\\)"))
     || #{<<"id">> := <<"noisy_measurement">>, <<"advice">> := A} <- Fs].


