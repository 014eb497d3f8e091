%%% @doc Secrets never leave beamlab (the secret policy, docs/reliability.md
%%% "Secrets"): the password of a URI (`amqp://user:PASSWORD@host'), the
%%% value of `--cookie' and of the emulator flag `-setcookie' (as separate
%%% arguments or inside one string: `--vm-args "-setcookie X"', a node's
%%% `ERL_FLAGS'), and the value of an environment assignment or a field
%%% whose name says it is a secret (`RABBITMQ_ERLANG_COOKIE=X',
%%% `"password": X'), and an application parameter whose key says it is a
%%% secret in an emulator command line (`-rabbit default_pass <<"X">>',
%%% `-app db_password X') are masked as `****' in any text, and in every string
%%% of a result document (command line, emulator arguments, params, env,
%%% a watched node's arguments) before it is printed, saved or embedded in
%%% a report; the command line's error lines go through it too.
-module(beamlab_result_redact).

-export([text/1, document/1, argv/1]).

-define(MASK, "****").
%% scheme://user:password@host - the password runs to the '@' that starts
%% the host (so an unencoded '@' or a space in a password is masked too).
-define(URI_RE, "([a-zA-Z][a-zA-Z0-9+.-]*://[^:/@\\s\"]*:)[^\"\\n]*?@(?=[^@/\\s\"]*(?:[/\\s\"?#]|$))").
%% A URI's query (up to a fragment, a space or a quote), and the name of a
%% query parameter that says it is a secret, or that is percent-encoded
%% (so that `?pass%77ord=X' cannot hide one).
-define(QUERY_RE, "[a-zA-Z][a-zA-Z0-9+.-]*://[^\\s\"?#]*\\?([^\\s\"#]*)").
-define(SECRET_QUERY_KEY, "(?i)pass|pwd|secret|cookie|token|api_?key|credential|signature|%").
%% A cookie flag and its value inside one string: "-setcookie X",
%% "--cookie X", "--cookie=X" (the value may be quoted).
-define(FLAG_RE, "((?:^|[\\s\"'])(?:-setcookie|--cookie)(?:=|\\s+))(?:'[^']*'|\"[^\"]*\"|[^\\s\"']+)").
%% NAME=VALUE where NAME says it holds a secret (an environment variable).
-define(ASSIGN_RE, "((?:^|[\\s\"'])[A-Za-z_]*(?:COOKIE|PASSWORD|PASSWD|SECRET)[A-Za-z0-9_]*=)"
                   "(?:'[^']*'|\"[^\"]*\"|[^\\s\"']+)").
%% Field names whose values are secrets.
-define(SECRET_KEY_RE, "(?i)cookie|password|passwd|secret|(?:^|_)pass(?:_|$)").
%% An application parameter's key that says its value is a secret.
-define(SECRET_PARAM, "(?i:[a-z0-9_]*(?:password|passwd|secret|cookie|token)[a-z0-9_]*|(?:[a-z0-9]+_)*pass(?:_[a-z0-9]+)*)").
%% -APP KEY VALUE inside one string (an emulator command line, a node's
%% init arguments) where KEY names a secret.
-define(PARAM_RE, "((?:^|\\s)-[A-Za-z][A-Za-z0-9_]*\\s+" ?SECRET_PARAM "\\s+)"
                  "(?:<<\"[^\"]*\">>|'[^']*'|\"[^\"]*\"|[^\\s]+)").

%% @doc The text with every secret it holds masked.
-spec text(unicode:chardata()) -> binary().
text(Text) when is_binary(Text) ->
    Opts = case unicode:characters_to_binary(Text) of
               Text -> [unicode];
               _ -> []  % not UTF-8: masked byte-wise
           end,
    Masked = lists:foldl(fun({Probe, Re, Repl}, Acc) ->
                                 case binary:match(Acc, Probe) of
                                     nomatch -> Acc;
                                     _ -> re:replace(Acc, Re, Repl, [global, {return, binary} | Opts])
                                 end
                         end, Text,
                         [{<<"://">>, ?URI_RE, "\\1" ?MASK "@"},
                          {<<"cookie">>, ?FLAG_RE, "\\1" ?MASK},
                          {<<"=">>, ?ASSIGN_RE, "\\1" ?MASK},
                          {<<"-">>, ?PARAM_RE, "\\1" ?MASK}]),
    case binary:match(Masked, <<"?">>) of
        nomatch -> Masked;
        _ -> query_secrets(Masked, Opts)
    end;
text(Text) ->
    case unicode:characters_to_binary(Text) of
        B when is_binary(B) -> text(B);
        _ -> text(iolist_to_binary(io_lib:format("~tp", [Text])))
    end.

%% Every query parameter of every URI in the text whose name says it is a
%% secret (`amqp://h/%2F?password=X', `?token=X') is masked (#34): an
%% error line that quotes the URI shows no value.
query_secrets(Text, Opts) ->
    case re:run(Text, ?QUERY_RE, [global, {capture, [1], index} | Opts]) of
        nomatch -> Text;
        {match, Queries} ->
            {Parts, Last} = lists:foldl(
                              fun([{At, Len}], {Acc, From}) ->
                                      Before = binary:part(Text, From, At - From),
                                      Query = binary:part(Text, At, Len),
                                      {[mask_query(Query), Before | Acc], At + Len}
                              end, {[], 0}, Queries),
            iolist_to_binary(lists:reverse([binary:part(Text, Last, byte_size(Text) - Last) | Parts]))
    end.

mask_query(Query) ->
    lists:join(<<"&">>, [lists:join(<<";">>, [mask_param(P) || P <- binary:split(Amp, <<";">>, [global])])
                         || Amp <- binary:split(Query, <<"&">>, [global])]).

mask_param(Param) ->
    case binary:split(Param, <<"=">>) of
        [Key, _Value] ->
            case re:run(Key, ?SECRET_QUERY_KEY) of
                nomatch -> Param;
                _ -> <<Key/binary, "=", ?MASK>>
            end;
        _ -> Param
    end.

%% @doc A command line with every secret masked: the value after
%% `--cookie' or `-setcookie', the value of an application parameter whose
%% key names a secret (`-rabbit default_pass X'), and what {@link text/1}
%% masks in each argument.
-spec argv([unicode:chardata()]) -> [binary()].
argv(Args) ->
    mask_cookie([text(A) || A <- Args]).

mask_cookie([Flag, _ | Rest]) when Flag =:= <<"--cookie">>; Flag =:= <<"-setcookie">> ->
    [Flag, <<?MASK>> | mask_cookie(Rest)];
mask_cookie([<<"-", _/binary>> = Flag, Key, _ | Rest] = All) ->
    case secret_param(Flag, Key) of
        true -> [Flag, Key, <<?MASK>> | mask_cookie(Rest)];
        false -> [Flag | mask_cookie(tl(All))]
    end;
mask_cookie([A | Rest]) -> [A | mask_cookie(Rest)];
mask_cookie([]) -> [].

%% @doc The document (or any JSON-like term) with secrets masked in every
%% string; lists of strings are treated as command lines; the value of a
%% field named after a secret (`cookie', `password'...) and the values of
%% an emulator flag entry `#{flag => setcookie, values => [...]}' (the
%% environment report's arguments) are masked whole.
-spec document(T) -> T.
document(#{flag := Flag, values := Values} = M) when is_list(Values) ->
    case is_cookie_flag(Flag) of
        true -> M#{values := [<<?MASK>> || _ <- Values]};
        false -> maps:map(fun field/2, M)
    end;
document(#{<<"flag">> := Flag, <<"values">> := Values} = M) when is_list(Values) ->
    case is_cookie_flag(Flag) of
        true -> M#{<<"values">> := [<<?MASK>> || _ <- Values]};
        false -> maps:map(fun field/2, M)
    end;
document(M) when is_map(M) ->
    maps:map(fun field/2, M);
document(L) when is_list(L) ->
    case L =/= [] andalso lists:all(fun erlang:is_binary/1, L) of
        true -> argv(L);
        false -> [document(X) || X <- L]
    end;
document(B) when is_binary(B) ->
    text(B);
document(Other) ->
    Other.

field(Key, V) when is_binary(V); is_list(V) ->
    case secret_key(Key) of
        true -> mask_value(V);
        false -> document(V)
    end;
field(_Key, V) ->
    document(V).

mask_value(V) when is_binary(V) -> <<?MASK>>;
mask_value([]) -> [];
mask_value(L) when is_list(L) ->
    case io_lib:printable_unicode_list(L) of
        true -> <<?MASK>>;
        false -> [mask_value(X) || X <- L]
    end;
mask_value(Other) -> document(Other).

secret_key(K) when is_atom(K) -> secret_key(atom_to_binary(K));
secret_key(K) when is_binary(K) -> re:run(K, ?SECRET_KEY_RE) =/= nomatch;
secret_key(_) -> false.

%% `-APP KEY': an application parameter whose key names a secret.
secret_param(<<"-", App/binary>>, Key) ->
    re:run(App, "^[A-Za-z][A-Za-z0-9_]*$") =/= nomatch andalso re:run(Key, "^" ?SECRET_PARAM "$") =/= nomatch.

is_cookie_flag(F) when is_atom(F) -> is_cookie_flag(atom_to_binary(F));
is_cookie_flag(F) when is_binary(F) -> lists:member(F, [<<"setcookie">>, <<"-setcookie">>, <<"cookie">>]);
is_cookie_flag(_) -> false.
