%%% Test certificates made with OTP's public_key (no openssl needed): a CA,
%%% a server certificate naming localhost and 127.0.0.1, a client
%%% certificate (common name "client Peer cert", the SASL EXTERNAL user),
%%% and a second, unrelated CA for the wrong-CA case, as PEM files in a
%%% directory (the layout scripts/rabbitmq.sh reads for its TLS listener).
-module(beamlab_test_tls).
-include_lib("public_key/include/public_key.hrl").

-export([make/1, client_user/0]).

%% @doc Writes ca.pem (the broker's and the client's CAs), server.pem,
%% server.key, client.pem, client.key, server-ca.pem (the CA of the
%% broker's certificate only), client-ca.pem and other-ca.pem (unrelated
%% CAs) into Dir.
make(Dir) ->
    ok = filelib:ensure_dir(filename:join(Dir, "x")),
    San = #'Extension'{extnID = ?'id-ce-subjectAltName', critical = false,
                       extnValue = [{dNSName, "localhost"}, {iPAddress, <<127, 0, 0, 1>>}]},
    Key = [{key, {rsa, 2048, 65537}}, {digest, sha256}],
    #{server_config := S, client_config := C} =
        public_key:pkix_test_data(#{server_chain => #{root => Key, intermediates => [],
                                                      peer => [{extensions, [San]} | Key]},
                                    client_chain => #{root => Key, intermediates => [],
                                                      peer => Key}}),
    #{server_config := OtherS} =
        public_key:pkix_test_data(#{server_chain => #{root => Key, intermediates => [], peer => Key},
                                    client_chain => #{root => Key, intermediates => [], peer => Key}}),
    Roots = proplists:get_value(cacerts, S),
    ServerCert = proplists:get_value(cert, S),
    ServerCas = [R || R <- Roots, public_key:pkix_is_issuer(ServerCert, R)],
    ClientCas = Roots -- ServerCas,
    write_certs(Dir, "ca.pem", Roots),
    write_certs(Dir, "server-ca.pem", ServerCas),
    write_certs(Dir, "client-ca.pem", ClientCas),
    write_certs(Dir, "server.pem", [proplists:get_value(cert, S)]),
    write_key(Dir, "server.key", proplists:get_value(key, S)),
    write_certs(Dir, "client.pem", [proplists:get_value(cert, C)]),
    write_key(Dir, "client.key", proplists:get_value(key, C)),
    write_certs(Dir, "other-ca.pem", proplists:get_value(cacerts, OtherS)),
    ok.

%% @doc The user name RabbitMQ takes from the client certificate.
client_user() ->
    <<"client Peer cert">>.

write_certs(Dir, Name, Ders) ->
    Pem = public_key:pem_encode([{'Certificate', D, not_encrypted} || D <- Ders]),
    ok = file:write_file(filename:join(Dir, Name), Pem).

write_key(Dir, Name, {Type, Der}) ->
    ok = file:write_file(filename:join(Dir, Name), public_key:pem_encode([{Type, Der, not_encrypted}])).
