%%% @doc An Erlang/OTP installation on disk, seen through one of its `erl'
%%% executables: its root, release, erts version and the emulator flavours
%%% it holds, and the `erl' flags that start a given flavour.
%%%
%%% An installation built with several flavours (scripts/install-otp.sh
%%% builds the JIT and the interpreter) has `beam.jit' and `beam.emu' beside
%%% `beam.smp' in `erts-VSN/bin', and `erl -emu_flavor emu' starts the
%%% interpreter (erlexec reads the flag, wherever it stands on the command
%%% line or in `ERL_FLAGS'). A single-flavour installation such as
%%% Debian's has `beam.smp' only, which erlexec knows as `-emu_flavor smp':
%%% asking it for its own flavour by name fails, so its flavour is asked
%%% from the VM itself once and then needs no flag.
-module(beamlab_runtime_otp).

-export([install/1, flavor_args/2, parse_flavor/1, format_error/1]).

-type flavor() :: jit | emu.
-type install() :: #{erl := file:filename(), root := file:filename(), release := string(),
                     erts := string(), flavors := [flavor()]}.
-type error_reason() :: {no_erl, file:filename()} | {not_an_install, file:filename()}
                      | {flavor_missing, flavor(), file:filename(), [flavor() | unknown]}
                      | {bad_flavor, string()}.
-export_type([flavor/0, install/0, error_reason/0]).

%% @doc The installation `Erl' (a path, or a name looked up on PATH)
%% belongs to. `flavors' lists the flavours it holds by name (`beam.jit',
%% `beam.emu'); a single-flavour installation lists none.
-spec install(file:filename()) -> {ok, install()} | {error, error_reason()}.
install(Erl0) ->
    case executable(Erl0) of
        false -> {error, {no_erl, Erl0}};
        Erl ->
            %% bin/erl is the root's bin/erl, or a link to it (/usr/bin/erl,
            %% PREFIX/bin/erl -> ../lib/erlang/bin/erl), or erts-VSN/bin/erl
            %% (first on the PATH of a VM's children).
            Dir = filename:dirname(filename:dirname(real_path(Erl))),
            Root = case filename:basename(Dir) of
                       "erts-" ++ _ -> filename:dirname(Dir);
                       _ -> Dir
                   end,
            case file:read_file(filename:join([Root, "releases", "start_erl.data"])) of
                {ok, Data} ->
                    case string:lexemes(binary_to_list(Data), " \n") of
                        [Erts, Release | _] ->
                            Bin = filename:join(Root, "erts-" ++ Erts ++ "/bin"),
                            {ok, #{erl => Erl, root => Root, release => Release, erts => Erts,
                                   flavors => [F || F <- [jit, emu],
                                                    filelib:is_regular(filename:join(Bin, "beam." ++ atom_to_list(F)))]}};
                        _ -> {error, {not_an_install, Erl}}
                    end;
                {error, _} -> {error, {not_an_install, Erl}}
            end
    end.

executable(Erl) ->
    case lists:member($/, Erl) of
        true -> filelib:is_regular(Erl) andalso Erl;
        false -> os:find_executable(Erl)
    end.

%% Follows links, component by component.
real_path(Path) ->
    real_path(filename:split(filename:absname(Path)), [], 40).

real_path(_, _, 0) -> error(too_many_links);
real_path([], Acc, _) -> filename:join(lists:reverse(Acc));
real_path([C | Rest], Acc, N) ->
    Here = filename:join(lists:reverse([C | Acc])),
    case file:read_link(Here) of
        {ok, Target} ->
            Parts = case filename:pathtype(Target) of
                        absolute -> filename:split(Target);
                        _ -> filename:split(filename:join(filename:join(lists:reverse(Acc)), Target))
                    end,
            real_path(normalise(Parts) ++ Rest, [], N - 1);
        {error, _} -> real_path(Rest, [C | Acc], N)
    end.

normalise(Parts) ->
    lists:reverse(lists:foldl(fun(".", A) -> A;
                                 ("..", [_Root]) -> [_Root];
                                 ("..", [_ | A]) -> A;
                                 (P, A) -> [P | A]
                              end, [], Parts)).

%% @doc The `erl' flags that start `Flavor' from `Install': `-emu_flavor F'
%% when the installation holds that flavour by name, none when it is the
%% only flavour of a single-flavour installation (asked from the VM), an
%% error naming what the installation has otherwise.
-spec flavor_args(install(), flavor()) -> {ok, [string()]} | {error, error_reason()}.
flavor_args(#{flavors := Fs} = I, F) ->
    case lists:member(F, Fs) of
        true -> {ok, ["-emu_flavor", atom_to_list(F)]};
        false ->
            Default = default_flavor(I),
            case Fs =:= [] andalso Default =:= F of
                true -> {ok, []};
                false ->
                    {error, {flavor_missing, F, maps:get(root, I),
                             lists:usort(case Fs of [] -> [Default]; _ -> Fs end)}}
            end
    end.

%% The flavour a single-flavour installation runs, as its VM says.
default_flavor(#{erl := Erl}) ->
    Port = open_port({spawn_executable, Erl},
                     [{args, ["-noshell", "-noinput", "-eval",
                              "io:put_chars(atom_to_list(erlang:system_info(emu_flavor))), halt()."]},
                      {env, [{V, false} || V <- ["ERL_FLAGS", "ERL_AFLAGS", "ERL_ZFLAGS"]]},
                      binary, exit_status, stderr_to_stdout]),
    case collect(Port, <<>>) of
        {0, <<"jit">>} -> jit;
        {0, <<"emu">>} -> emu;
        _ -> unknown
    end.

collect(Port, Acc) ->
    receive
        {Port, {data, D}} -> collect(Port, <<Acc/binary, D/binary>>);
        {Port, {exit_status, S}} -> {S, string:trim(Acc)}
    after 60000 ->
            catch port_close(Port),
            {timeout, Acc}
    end.

%% @doc "jit" or "emu" as a flavour.
-spec parse_flavor(string()) -> {ok, flavor()} | {error, error_reason()}.
parse_flavor("jit") -> {ok, jit};
parse_flavor("emu") -> {ok, emu};
parse_flavor(Other) -> {error, {bad_flavor, Other}}.

%% @doc One line for each error.
-spec format_error(error_reason()) -> iolist().
format_error(Reason) ->
    beamlab_format_reason:line(fun error_line/1, Reason).

error_line({no_erl, Erl}) ->
    io_lib:format("~ts: no such erl executable", [Erl]);
error_line({not_an_install, Erl}) ->
    io_lib:format("~ts is not the erl of an Erlang/OTP installation (no releases/start_erl.data beside it)",
                  [Erl]);
error_line({flavor_missing, F, Root, Have}) ->
    io_lib:format("the Erlang/OTP in ~ts has no ~s flavour (it has ~ts): scripts/install-otp.sh builds "
                  "both into /opt/beamlab-otp/27", [Root, F, lists:join(", ", [atom_to_list(H) || H <- Have])]);
error_line({bad_flavor, F}) ->
    io_lib:format("flavour '~ts': expected jit or emu", [F]);
error_line(Other) ->
    %% (a reason of no kind above: printed, never raised)
    beamlab_format_reason:term(Other).
