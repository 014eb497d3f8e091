%%% @doc The TLS files of an `amqps://' connection, checked before any
%%% connection (#34): the CA file (`--tls-ca-file'), the client
%%% certificate and its key (`--tls-cert-file', `--tls-key-file'). Each is
%%% read as PEM (`public_key:pem_decode/1') and every entry decoded
%%% (`public_key:pem_entry_decode/1'); the key must match the
%%% certificate (a signature made with the key verifies with the
%%% certificate's public key). A garbage, empty or bad-base64 CA file was
%%% accepted and the broker blamed ("not signed by a trusted CA") after
%%% OTP's own `SSL WARNING: Ignoring a CA cert' notice; an encrypted key
%%% printed a raw term with an asn1 stack; a certificate given as the key
%%% `bad TLS options'; a key that does not match its certificate `socket
%%% error: unknown POSIX error'. Each is now one line naming the file.
-module(beamlab_amqp_tls).
-include_lib("public_key/include/public_key.hrl").

-export([check_files/1, format_error/1]).

-type files() :: #{cacertfile => file:filename(), certfile => file:filename(),
                   keyfile => file:filename()}.
-type error_reason() :: {file, string(), file:filename(), atom() | string()}.
-export_type([files/0, error_reason/0]).

-define(MAX_BYTES, 1048576).   % a PEM file of certificates or a key: far below

-define(KEY_TYPES, ['RSAPrivateKey', 'ECPrivateKey', 'DSAPrivateKey', 'PrivateKeyInfo']).

%% @doc Checks the TLS files given (any of the three; the certificate and
%% the key together).
-spec check_files(files()) -> ok | {error, error_reason()}.
check_files(Files) ->
    try
        _ = [certificates("--tls-ca-file", F) || F <- [maps:get(cacertfile, Files, undefined)], F =/= undefined],
        case {maps:get(certfile, Files, undefined), maps:get(keyfile, Files, undefined)} of
            {undefined, undefined} -> ok;
            {C, K} when C =/= undefined, K =/= undefined ->
                [Cert | _] = certificates("--tls-cert-file", C),
                Key = key(K),
                matches(Cert, Key) orelse
                    throw({file, "--tls-key-file", K, "does not match the certificate in " ++ flat(C)}),
                ok;
            _ -> ok
        end
    catch throw:{file, _, _, _} = E -> {error, E}
    end.

%% @doc One line for an error of {@link check_files/1}.
-spec format_error(error_reason()) -> iolist().
format_error(Reason) ->
    beamlab_format_reason:line(fun error_line/1, Reason).

error_line({file, Flag, File, Why}) ->
    io_lib:format("~ts ~ts: ~ts", [Flag, File, why(Why)]);
error_line(Other) ->
    %% (a reason of no kind above: printed, never raised)
    beamlab_format_reason:term(Other).

why(not_pem) -> "no PEM certificate in it (expected -----BEGIN CERTIFICATE----- blocks)";
why(bad_entry) -> "a PEM block in it cannot be decoded (bad base64 or DER)";
why(not_a_certificate) -> "holds no certificate (a key? the certificate and key files swapped?)";
why(encrypted) -> "the private key is encrypted with a passphrase, which beamlab cannot ask for "
                  "(decrypt it: openssl pkey -in KEY -out PLAIN)";
why(certificate_not_key) -> "holds a certificate, not a private key (the certificate and key files swapped?)";
why(no_key) -> "no PEM private key in it (expected a -----BEGIN PRIVATE KEY----- block)";
why(Text) when is_list(Text) -> Text;
why(Posix) when is_atom(Posix) -> file:format_error(Posix).

read(Flag, File) ->
    case beamlab_runtime_file:read(File, ?MAX_BYTES) of
        {ok, Bin} -> Bin;
        {error, {too_large, _}} -> throw({file, Flag, File, "larger than 1 MiB: not a PEM file"});
        {error, R} when is_atom(R) -> throw({file, Flag, File, R});
        {error, R} -> throw({file, Flag, File, flat(beamlab_runtime_file:format_error(R))})
    end.

entries(Flag, File) ->
    Bin = read(Flag, File),
    try public_key:pem_decode(Bin)
    catch _:_ -> throw({file, Flag, File, bad_entry})
    end.

certificates(Flag, File) ->
    case [E || {'Certificate', _, _} = E <- entries(Flag, File)] of
        [] ->
            case entries(Flag, File) of
                [] -> throw({file, Flag, File, not_pem});
                _ -> throw({file, Flag, File, not_a_certificate})
            end;
        Certs ->
            [try public_key:pkix_decode_cert(Der, otp)
             catch _:_ -> throw({file, Flag, File, bad_entry})
             end || {'Certificate', Der, _} <- Certs]
    end.

key(File) ->
    Flag = "--tls-key-file",
    Entries = entries(Flag, File),
    case [E || {T, _, _} = E <- Entries, lists:member(T, ?KEY_TYPES)] of
        [{_, _, Cipher} = E | _] ->
            Cipher =:= not_encrypted orelse throw({file, Flag, File, encrypted}),
            try public_key:pem_entry_decode(E)
            catch _:_ -> throw({file, Flag, File, bad_entry})
            end;
        [] ->
            case Entries of
                [{'Certificate', _, _} | _] -> throw({file, Flag, File, certificate_not_key});
                _ -> throw({file, Flag, File, no_key})
            end
    end.

%% The key signs, the certificate's public key verifies.
matches(#'OTPCertificate'{tbsCertificate = Tbs}, Key) ->
    #'OTPSubjectPublicKeyInfo'{algorithm = #'PublicKeyAlgorithm'{parameters = Params},
                               subjectPublicKey = Pub} = Tbs#'OTPTBSCertificate'.subjectPublicKeyInfo,
    Public = case Pub of
                 #'ECPoint'{} -> {Pub, Params};
                 _ when is_integer(Pub) -> {Pub, Params};    % DSA
                 _ -> Pub
             end,
    Msg = <<"beamlab key check">>,
    try public_key:verify(Msg, sha256, public_key:sign(Msg, sha256, Key), Public)
    catch _:_ -> false
    end.

flat(S) -> lists:flatten(io_lib:format("~ts", [S])).
