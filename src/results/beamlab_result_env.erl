%%% @doc Views of a result's `env' and `params' sections: flattened to
%%% dotted paths for side-by-side comparison (each value as text with the
%%% unit its path names), and summarised in one line.
-module(beamlab_result_env).

-export([flat/1, value_text/2, summary/1]).

-type scalar() :: binary() | number() | boolean() | null.
-export_type([scalar/0]).

%% Lists longer than this (e.g. CPU topologies) are shortened in flat views.
-define(MAX_SCALAR_BYTES, 60).

%% @doc The `env' and `params' of a result as sorted `{DottedPath, Value}'
%% pairs with scalar values (long lists shortened), for side-by-side views.
-spec flat(beamlab_result:result()) -> [{binary(), scalar()}].
flat(Result) ->
    flatten(<<"env">>, maps:get(env, Result, #{})) ++ flatten(<<"params">>, maps:get(params, Result, #{})).

%% @doc A flat value as text, a number with the unit its path names:
%% `env.memory.*' and `*_bytes' in bytes (`"22.2 MiB"'), `*_us'/`*_usec'
%% and `*_ms' as durations (`"100 ms"'); other numbers and text as they
%% are, `null' as `"-"'.
-spec value_text(binary(), scalar()) -> binary().
value_text(_Key, null) -> <<"-">>;
value_text(_Key, true) -> <<"true">>;
value_text(_Key, false) -> <<"false">>;
value_text(_Key, V) when is_binary(V) -> V;
value_text(Key, V) when is_number(V) ->
    Text = case unit(Key) of
               none when is_integer(V) -> integer_to_list(V);
               none -> float_to_list(V, [short]);
               Unit -> beamlab_format_units:value(V, Unit)
           end,
    unicode:characters_to_binary(Text).

unit(<<"env.memory.", _/binary>>) -> <<"bytes">>;
unit(Key) ->
    Suffixes = [{<<"_bytes">>, <<"bytes">>}, {<<"_usec">>, <<"us">>}, {<<"_us">>, <<"us">>},
                {<<"_ms">>, <<"ms">>}],
    case [U || {S, U} <- Suffixes, byte_size(Key) >= byte_size(S),
               binary:part(Key, byte_size(Key), -byte_size(S)) =:= S] of
        [U | _] -> U;
        [] -> none
    end.

%% @doc One line describing the machine and VM of a run, e.g.
%% `OTP 25 · erts 13.1.5 · jit · 2 schedulers · bind unbound · AMD EPYC ·
%% linux · 6.18.44'; only the facts the env report has.
-spec summary(beamlab_result:result()) -> binary().
summary(Result) ->
    Flat = flatten(<<"env">>, maps:get(env, Result, #{})),
    %% First key ending in one of the suffixes (env reports nest them, e.g.
    %% env.otp.release; flat spellings are accepted too).
    Pick = fun(Suffixes) ->
                   case [V || Suf <- Suffixes, {K, V} <- Flat, V =/= null, V =/= <<>>,
                              ends_with(K, <<".", Suf/binary>>)] of
                       [First | _] -> First;
                       [] -> undefined
                   end
           end,
    Parts = [{"OTP ~ts", Pick([<<"otp.release">>, <<"otp_release">>])},
             {"erts ~ts", Pick([<<"otp.erts">>, <<"erts_version">>])},
             {"~ts", Pick([<<"emu_flavor">>])},
             {"~ts schedulers", Pick([<<"schedulers.online">>, <<"schedulers_online">>])},
             {"bind ~ts", Pick([<<"bind_type">>])},
             {"~ts", Pick([<<"cpu.model">>, <<"cpu_model">>])},
             {"~ts", Pick([<<"os.name">>])},
             {"~ts", Pick([<<"os.kernel_version">>])}],
    Text = [io_lib:format(F, [beamlab_format_units:to_binary(V)]) || {F, V} <- Parts, V =/= undefined],
    case Text of
        [] -> <<"env: not recorded">>;
        _ -> unicode:characters_to_binary(lists:join(" · ", Text))
    end.

ends_with(Bin, Suffix) ->
    byte_size(Bin) >= byte_size(Suffix) andalso
        binary:part(Bin, byte_size(Bin) - byte_size(Suffix), byte_size(Suffix)) =:= Suffix.

flatten(Prefix, M) when is_map(M) ->
    lists:append([flatten(<<Prefix/binary, ".", (beamlab_format_units:to_binary(K))/binary>>, V)
                  || {K, V} <- lists:sort(maps:to_list(M))]);
flatten(Prefix, V) ->
    [{Prefix, scalar(V)}].

%% Lists are summarised to one comparable value; long ones are shortened
%% to keep tables readable.
scalar(V) when is_binary(V); is_number(V); is_boolean(V); V =:= null -> V;
scalar(V) when is_atom(V) -> atom_to_binary(V, utf8);
scalar(V) ->
    B = iolist_to_binary(beamlab_json:encode(V)),
    case byte_size(B) > ?MAX_SCALAR_BYTES of
        true -> <<(binary:part(B, 0, char_start(B, ?MAX_SCALAR_BYTES - 3)))/binary, "...">>;
        false -> B
    end.

%% The largest cut at or before `N' bytes that does not split a UTF-8
%% sequence (a continuation byte is 2#10xxxxxx): the page stays UTF-8.
char_start(B, N) when N > 0 ->
    case binary:at(B, N) of
        C when C band 16#C0 =:= 16#80 -> char_start(B, N - 1);
        _ -> N
    end;
char_start(_B, N) ->
    N.
