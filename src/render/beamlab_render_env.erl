%%% @doc The text view of an environment report (`beamlab env', `run -r
%%% full'): what the VM, the hardware and the OS are, one "key: value" per
%%% line. Pure: reads the report as a document holds it (a JSON object).
-module(beamlab_render_env).

-export([render/1]).


%% @doc The report, one "key: value" per line under VM, Hardware, OS.
-spec render(beamlab_result:object()) -> iolist().
render(#{<<"otp">> := O, <<"schedulers">> := S, <<"cpu">> := C, <<"numa">> := N, <<"cgroup">> := G,
         <<"os">> := OS, <<"memory">> := M, <<"load">> := L} = R) ->
    BW = maps:get(<<"busy_wait">>, S),
    Lines =
        [section("VM"),
         kv("OTP", [maps:get(<<"otp_version">>, O), " (erts ", maps:get(<<"erts">>, O), ")"]),
         kv("emulator", ["flavor ", maps:get(<<"emu_flavor">>, O),
                         case maps:get(<<"flavors_installed">>, O, []) of
                             [] -> "";
                             Fs -> [" (installed: ", lists:join(", ", Fs), ")"]
                         end,
                         ", type ", maps:get(<<"emu_type">>, O),
                         ", build ", maps:get(<<"build_type">>, O), ", dynamic trace ", maps:get(<<"dynamic_trace">>, O)]),
         [kv("WARNING", W) || W <- maps:get(<<"build_warnings">>, O)],
         kv("schedulers", io_lib:format("~b/~b online, dirty CPU ~b/~b online, dirty IO ~b",
                                        [maps:get(<<"online">>, S), maps:get(<<"total">>, S),
                                         maps:get(<<"dirty_cpu_online">>, S), maps:get(<<"dirty_cpu">>, S),
                                         maps:get(<<"dirty_io">>, S)])),
         kv("binding", [maps:get(<<"bind_type">>, S),
                        [[" (logical CPU per scheduler: ", lists:join(" ", [str(B) || B <- Bs]), ")"]
                         || Bs <- [maps:get(<<"bindings">>, S)], lists:any(fun is_integer/1, Bs)]]),
         kv("busy wait", io_lib:format("sbwt ~s, sbwtdcpu ~s, sbwtdio ~s, swt ~s",
                                       [maps:get(<<"normal">>, BW), maps:get(<<"dirty_cpu">>, BW),
                                        maps:get(<<"dirty_io">>, BW), maps:get(<<"wake_threshold">>, BW)])),
         kv("emulator flags", case emu_flag_args(maps:get(<<"emu_args">>, maps:get(<<"vm_args">>, R))) of
                                  [] -> "(none)";
                                  Flags -> lists:join(" ", Flags)
                              end),
         section("Hardware"),
         kv("CPU model", str(maps:get(<<"model">>, C))),
         kv("logical CPUs", io_lib:format("~s configured, ~s online, ~s available",
                                          [str(maps:get(<<"logical_processors">>, C)),
                                           str(maps:get(<<"logical_processors_online">>, C)),
                                           str(maps:get(<<"logical_processors_available">>, C))])),
         kv("topology", io_lib:format("~s socket(s), ~s core(s), ~s thread(s)",
                                      [str(maps:get(<<"sockets">>, C)), str(maps:get(<<"cores">>, C)),
                                       str(maps:get(<<"threads">>, C))])),
         kv("NUMA", case N of
                        #{<<"available">> := true, <<"nodes">> := Nodes} ->
                            lists:join("; ", [io_lib:format("node ~b: cpus ~s, distances ~s",
                                                            [Id, cpus_text(Cs),
                                                             lists:join(" ", [integer_to_list(D) || D <- Ds])])
                                              || #{<<"id">> := Id, <<"cpus">> := Cs, <<"distances">> := Ds} <- Nodes]);
                        _ -> "not available"
                    end),
         kv("cgroup CPU", case G of
                              #{<<"available">> := true} ->
                                  Stat = maps:get(<<"stat">>, G),
                                  io_lib:format("v~b quota ~s (~s cores) period ~s us; throttled ~s of ~s periods, ~s us",
                                                [maps:get(<<"version">>, G), str(maps:get(<<"quota_us">>, G)),
                                                 str(maps:get(<<"quota_cores">>, G)), str(maps:get(<<"period_us">>, G)),
                                                 str(maps:get(<<"nr_throttled">>, Stat, <<"unknown">>)),
                                                 str(maps:get(<<"nr_periods">>, Stat, <<"unknown">>)),
                                                 str(maps:get(<<"throttled_usec">>, Stat, <<"unknown">>))]);
                              _ -> "not available"
                          end),
         section("OS"),
         kv("kernel", [maps:get(<<"family">>, OS), "/", maps:get(<<"name">>, OS), " ", maps:get(<<"kernel_version">>, OS)]),
         kv("build", str(maps:get(<<"kernel">>, OS))),
         kv("hostname", maps:get(<<"hostname">>, OS)),
         kv("memory", io_lib:format("~s total, ~s available; VM uses ~s",
                                    [mb(maps:get(<<"total">>, maps:get(<<"system">>, M), <<"unknown">>)),
                                     mb(maps:get(<<"available">>, maps:get(<<"system">>, M), <<"unknown">>)),
                                     mb(maps:get(<<"total">>, maps:get(<<"erlang">>, M)))])),
         kv("load average", io_lib:format("~s ~s ~s", [str(maps:get(<<"load1">>, L)), str(maps:get(<<"load5">>, L)),
                                                         str(maps:get(<<"load15">>, L))])),
         [[section("Code"),
           kv("git commit", [maps:get(<<"commit">>, G1), " (", str(maps:get(<<"branch">>, G1, <<"?">>)), ", ",
                             str(maps:get(<<"commit_time">>, G1, <<"?">>)),
                             case maps:get(<<"dirty">>, G1, false) of
                                 true -> "; tracked files changed since";
                                 false -> "";
                                 _ -> "; changes unknown"
                             end, ")"])]
          || #{<<"commit">> := _} = G1 <- [maps:get(<<"git">>, R, #{})]],
         [[section("Notes"), [kv("note", Note) || Note <- Notes]]
          || Notes <- [maps:get(<<"notes">>, R, [])], Notes =/= []]],
    Lines;
render(_R) ->
    %% (a document whose environment was not recorded, or is not whole:
    %% made by the library's caller, cut by hand)
    "(no environment recorded in this document)\n".

section(Name) -> [Name, "\n"].

%% The emulator's own flags: between the beam executable and the first "--".
emu_flag_args([_Beam | Args]) -> lists:takewhile(fun(A) -> A =/= <<"--">> end, Args);
emu_flag_args([]) -> [].
kv(K, V) -> io_lib:format("  ~-15s ~ts~n", [K, iolist_to_binary(V)]).

mb(B) when is_integer(B) -> io_lib:format("~b MiB", [B div (1024 * 1024)]);
mb(Other) -> str(Other).

cpus_text(Cs) -> lists:join(",", [integer_to_list(C) || C <- Cs]).

str(B) when is_binary(B) -> B;
str(I) when is_integer(I) -> integer_to_list(I);
str(F) when is_float(F) -> float_to_list(F, [{decimals, 2}, compact]);
str(A) when is_atom(A) -> atom_to_list(A);
str(L) -> io_lib:format("~p", [L]).

