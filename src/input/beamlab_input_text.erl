%%% @doc Text that comes from outside, under one input policy (see
%%% docs/reliability.md "Input"): bytes are decoded as UTF-8, and a byte
%%% that is not part of valid UTF-8 stands for the Latin-1 character of
%%% that value, so any input becomes valid Unicode and nothing downstream
%%% can crash on it (`\xff' in a label, a code string, `--title', a file
%%% name). A file named on the command line with such bytes is still the
%%% same file on disk: {@link native_name/1} gives its bytes back.
-module(beamlab_input_text).

-export([decode/1, native_name/1, display/1]).

%% What the VM hands an escript for an argument that is not valid UTF-8.
-type raw_arg() :: string() | binary() | {error | incomplete, string(), binary()}.
-export_type([raw_arg/0]).

%% @doc An argument or any bytes as a string of characters: UTF-8 where
%% valid, a Latin-1 character for every other byte.
-spec decode(raw_arg()) -> string().
decode({Tag, Good, Rest}) when Tag =:= error; Tag =:= incomplete ->
    decode(Good) ++ decode(Rest);
decode(B) when is_binary(B) ->
    case unicode:characters_to_list(B) of
        L when is_list(L) -> L;
        {_, Good, <<Byte, Rest/binary>>} -> Good ++ [Byte | decode(Rest)]
    end;
decode(L) when is_list(L) ->
    case unicode:characters_to_list(L) of
        S when is_list(S) -> S;
        _ -> decode(iolist_to_binary([byte_chars(X) || X <- L]))
    end.

byte_chars(C) when is_integer(C), C >= 0, C < 256 -> C;
byte_chars(C) when is_integer(C) -> unicode:characters_to_binary([C]);
byte_chars(B) when is_binary(B) -> B;
byte_chars(L) when is_list(L) -> [byte_chars(X) || X <- L].

%% Each character with the bytes it came from.
pairs(<<>>) ->
    [];
pairs(Bin) ->
    case unicode:characters_to_list(Bin) of
        L when is_list(L) -> [{C, unicode:characters_to_binary([C])} || C <- L];
        {Tag, Good, <<Byte, Rest/binary>>} when Tag =:= error; Tag =:= incomplete ->
            [{C, unicode:characters_to_binary([C])} || C <- Good] ++ [{Byte, <<Byte>>} | pairs(Rest)]
    end.

%% @doc The name of a file as the operating system knows it: for a name
%% that was decoded from command-line bytes that are not UTF-8 (see
%% {@link decode/1}), those bytes (a raw file name); any other name as it
%% is.
-spec native_name(file:filename_all()) -> file:filename_all().
native_name(Name) when is_list(Name), Name =/= [] ->
    Raw = [R || A <- command_line(), {ok, R} <- [raw_suffix(A, Name)]],
    case Raw of
        [R | _] -> R;
        [] -> Name
    end;
native_name(Name) ->
    Name.

%% This VM's command line as the bytes it was given (Linux).
command_line() ->
    case file:read_file("/proc/self/cmdline") of
        {ok, Bin} -> [A || A <- binary:split(Bin, <<0>>, [global]), unicode:characters_to_binary(A) =/= A];
        {error, _} -> []
    end.

%% When `Name' ends the decoded argument and covers a byte that was not
%% UTF-8: the argument's bytes for it.
raw_suffix(Arg, Name) ->
    Pairs = pairs(Arg),
    N = length(Name),
    Len = length(Pairs),
    case Len >= N andalso lists:nthtail(Len - N, Pairs) of
        false -> error;
        Suffix ->
            Chars = [C || {C, _} <- Suffix],
            Fallback = lists:any(fun({C, B}) -> B =/= unicode:characters_to_binary([C]) end, Suffix),
            case Chars =:= Name andalso Fallback of
                true -> {ok, iolist_to_binary([B || {_, B} <- Suffix])};
                false -> error
            end
    end.

%% @doc A file name (a string, or raw bytes from the file system) as text
%% to show: never a crash on bytes that are not UTF-8.
-spec display(file:filename_all()) -> string().
display(Name) when is_binary(Name) -> decode(Name);
display(Name) when is_atom(Name) -> atom_to_list(Name);
display(Name) -> decode(Name).
