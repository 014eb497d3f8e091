%%% @doc Secrets never leave beamlab: the password of a URI
%%% (`amqp://user:PASSWORD@host') and the value of `--cookie' are masked
%%% as `****' in any text, and in every string of a result document
%%% (command line, emulator arguments, params, env) before it is printed,
%%% saved or embedded in a report.
-module(beamlab_result_redact).

-export([text/1, document/1, argv/1]).

-define(MASK, "****").
%% scheme://user:password@host - the password runs to the '@' that starts
%% the host (so an unencoded '@' or a space in a password is masked too).
-define(URI_RE, "([a-zA-Z][a-zA-Z0-9+.-]*://[^:/@\\s\"]*:)[^\"\\n]*?@(?=[^@/\\s\"]*(?:[/\\s\"?#]|$))").

%% @doc The text with every URI password masked.
-spec text(unicode:chardata()) -> binary().
text(Text) when is_binary(Text) ->
    case binary:match(Text, <<"://">>) of
        nomatch -> Text;
        _ ->
            Opts = case unicode:characters_to_binary(Text) of
                       Text -> [unicode];
                       _ -> []  % not UTF-8: masked byte-wise
                   end,
            re:replace(Text, ?URI_RE, "\\1" ?MASK "@", [global, {return, binary} | Opts])
    end;
text(Text) ->
    case unicode:characters_to_binary(Text) of
        B when is_binary(B) -> text(B);
        _ -> text(iolist_to_binary(io_lib:format("~tp", [Text])))
    end.

%% @doc A command line with URI passwords and `--cookie' values masked.
-spec argv([unicode:chardata()]) -> [binary()].
argv(Args) ->
    mask_cookie([text(A) || A <- Args]).

mask_cookie([<<"--cookie">>, _ | Rest]) -> [<<"--cookie">>, <<?MASK>> | mask_cookie(Rest)];
mask_cookie([<<"--cookie=", _/binary>> | Rest]) -> [<<"--cookie=" ?MASK>> | mask_cookie(Rest)];
mask_cookie([<<"-setcookie">>, _ | Rest]) -> [<<"-setcookie">>, <<?MASK>> | mask_cookie(Rest)];
mask_cookie([A | Rest]) -> [A | mask_cookie(Rest)];
mask_cookie([]) -> [].

%% @doc The document (or any JSON-like term) with secrets masked in every
%% string; lists of strings are treated as command lines.
-spec document(T) -> T.
document(M) when is_map(M) ->
    maps:map(fun(_K, V) -> document(V) end, M);
document(L) when is_list(L) ->
    case L =/= [] andalso lists:all(fun erlang:is_binary/1, L) of
        true -> argv(L);
        false -> [document(X) || X <- L]
    end;
document(B) when is_binary(B) ->
    text(B);
document(Other) ->
    Other.
