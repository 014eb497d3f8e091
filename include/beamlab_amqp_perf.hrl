%% Shared between the load generator's agent and its workers: the counter
%% slots of the per-node `counters' array and the message body layout.

-define(C_SENT, 1).
-define(C_RETURNED, 2).
-define(C_CONFIRMED, 3).
-define(C_NACKED, 4).
-define(C_RECEIVED, 5).
%% Set to 1 when the run stops publishing: closed-loop channels check it
%% before each publish so that the count of sent messages ends at once.
-define(C_STOPPING, 6).
%% Deliveries a consumer nacked with requeue (--nack): received, but back
%% in the queue.
-define(C_REQUEUED, 7).
%% Publishes of a -P producer made more than one interval after they were
%% due (the producer fell behind its schedule).
-define(C_LATE, 8).
%% Producers and consumers that took their socket's reads from the
%% connection (beamlab_amqp_worker:take_reads/2): whether the application
%% environment's `amqp_direct_reads' was in effect is in the result.
-define(C_DIRECT_READS, 9).
-define(C_SIZE, 9).

%% How long a worker waits for the broker's channel.close-ok when it stops,
%% and the agent for its connections to close: a frozen broker must not
%% hold the end of a run (the connection is killed after that).
-define(CLOSE_MS, 2000).

%% Body: intended send time (Erlang system time, microseconds, signed 64),
%% then a 32-bit per-producer sequence number, then zero padding.
-define(BODY_MIN, 12).

%% Clock used for every timestamp written into or compared with a body.
-define(NOW_US(), erlang:system_time(microsecond)).

%% The header that carries the stamp when the body cannot (--body files,
%% --json-body), as PerfTest names it.
-define(STAMP_HEADER, <<"timestamp">>).
