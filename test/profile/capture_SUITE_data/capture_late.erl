%% A module capture_SUITE loads on its node only after a capture of
%% capture_late_victim started (capture_victim:late/0 then runs it): the
%% capture follows a module it did not see at its start.
-module(capture_late).
-export([run/0, churn/2]).

run() -> churn(1000000, 0).

churn(0, Acc) -> churn(1000000, Acc band 16#ffff);
churn(N, Acc) -> churn(N - 1, Acc + N).
