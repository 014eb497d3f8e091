%% A command line module's local way to end a command deep in its parsing
%% (#31, docs/architecture.md "Errors"): ?USAGE and ?FAIL make the error
%% (beamlab_cli_error:usage_error/2, failure/2) and ?ABORT(Error) throw it
%% as `{?MODULE, {error, Reason}}'; ?VALUE(Expr) unwraps `{ok, V}' and
%% ?CHECK(Expr) takes `ok', throwing an `{error, Reason}' the same way.
%% The module's own exported entries catch it with ?CATCHING(Expr), which
%% gives the `{error, Reason}' back as a value: the throw never leaves the
%% module (beamlab_throw_tests).

-define(ABORT(Error), erlang:throw({?MODULE, Error})).
-define(USAGE(Fmt, Args), ?ABORT(beamlab_cli_error:usage_error(Fmt, Args))).
-define(FAIL(Fmt, Args), ?ABORT(beamlab_cli_error:failure(Fmt, Args))).
-define(VALUE(Expr), cli_value(Expr)).
-define(CHECK(Expr), cli_check(Expr)).
-define(CATCHING(Expr), cli_catching(fun() -> Expr end)).

%% (A module uses the ones it needs: neither the compiler nor xref warns
%% of the others.)
-compile({nowarn_unused_function, [{cli_value, 1}, {cli_check, 1}, {cli_catching, 1}]}).
-ignore_xref([{cli_value, 1}, {cli_check, 1}, {cli_catching, 1}]).

-spec cli_value({ok, T} | {error, beamlab_cli_error:reason()}) -> T.
cli_value({ok, V}) -> V;
cli_value({error, _} = Error) -> ?ABORT(Error).

-spec cli_check(ok | {error, beamlab_cli_error:reason()}) -> ok.
cli_check(ok) -> ok;
cli_check({error, _} = Error) -> ?ABORT(Error).

-spec cli_catching(fun(() -> T)) -> T | {error, beamlab_cli_error:reason()}.
cli_catching(Fun) ->
    try Fun()
    catch throw:{?MODULE, {error, _} = Error} -> Error
    end.
