%%% @doc The machine facts `beamlab doctor' reasons with, read from /proc
%%% and /sys below a root directory (EUnit points it at fixtures): logical
%%% CPUs, physical cores and SMT sibling groups, NUMA nodes with their
%%% CPUs and distances, last-level-cache groups, the CPU frequency
%%% governor and current frequencies, transparent huge pages, the
%%% kernel's extensible scheduler (sched_ext) where it shows, isolated
%%% CPUs and the load average. A file that is missing leaves its fact
%%% `null' (or an empty list) and a note; nothing here fails.
%%%
%%% What a VM runs with (schedulers, affinity, cgroup quota, flags) is
%%% read inside each probed VM (`beamlab_suite_probe:vm/0'), since it
%%% depends on how that VM was started.
-module(beamlab_env_doctor_facts).

-export([machine/1]).

-export_type([facts/0]).

-type facts() :: #{atom() => term()}.

%% What one file of /sys or /proc may hold.
-define(MAX_READ, 1024 * 1024).

%% @doc The machine's facts below `Root' ("/" for this machine).
-spec machine(file:filename()) -> facts().
machine(Root) ->
    Cpu = fun(P) -> filename:join([Root, "sys/devices/system/cpu", P]) end,
    Online = case read(Cpu("online")) of
                 {ok, S} -> beamlab_env:parse_cpulist(S);
                 error -> []
             end,
    Siblings = groups([read_list(Cpu(cpu(C) ++ "/topology/thread_siblings_list")) || C <- Online]),
    Cores = lists:usort([{read_int(Cpu(cpu(C) ++ "/topology/physical_package_id")),
                          read_int(Cpu(cpu(C) ++ "/topology/core_id"))} || C <- Online]),
    Physical = case [K || {P, Co} = K <- Cores, P =/= null, Co =/= null] of
                   [] -> null;
                   Known -> length(Known)
               end,
    Llc = llc_groups(Cpu, Online),
    Numa = numa(Root),
    Freq = frequency(Cpu, Online),
    Notes = [<<"no CPU list under /sys/devices/system/cpu/online">> || Online =:= []]
        ++ [<<"no CPU frequency information (cpufreq) visible">> || maps:get(governor, Freq) =:= null],
    #{logical_cpus => case Online of [] -> null; _ -> length(Online) end,
      online_cpus => Online,
      physical_cores => Physical,
      smt_groups => [G || G <- Siblings, length(G) > 1],
      threads_per_core => case {Online, Physical} of
                              {[_ | _], P} when is_integer(P), P > 0 -> length(Online) div P;
                              _ -> null
                          end,
      numa_nodes => length(Numa),
      numa => Numa,
      llc_groups => Llc,
      frequency => Freq,
      thp => bracketed(read(filename:join(Root, "sys/kernel/mm/transparent_hugepage/enabled"))),
      sched_ext => sched_ext(Root),
      isolated_cpus => read_list(Cpu("isolated")),
      nohz_full_cpus => read_list(Cpu("nohz_full")),
      load1 => case beamlab_runtime_probe:loadavg(Root) of
                   {ok, #{load1 := L}} -> L;
                   {error, _} -> null
               end,
      notes => Notes}.

cpu(C) -> "cpu" ++ integer_to_list(C).

groups(Lists) ->
    lists:usort([L || L <- Lists, L =/= []]).

%% The CPUs sharing each last-level cache: the highest cache level each
%% CPU lists, grouped.
llc_groups(Cpu, Online) ->
    PerCpu = [llc(Cpu, C) || C <- Online],
    case [{L, G} || {L, G} <- PerCpu, G =/= []] of
        [] -> #{level => null, groups => []};
        Known ->
            Level = lists:max([L || {L, _} <- Known]),
            #{level => Level, groups => groups([G || {L, G} <- Known, L =:= Level])}
    end.

llc(Cpu, C) ->
    Dir = Cpu(cpu(C) ++ "/cache"),
    Indexes = case file:list_dir(Dir) of
                  {ok, Names} -> [N || "index" ++ _ = N <- Names];
                  {error, _} -> []
              end,
    Levels = [{read_int(filename:join([Dir, I, "level"])),
               read_list(filename:join([Dir, I, "shared_cpu_list"]))} || I <- Indexes],
    case [{L, G} || {L, G} <- Levels, is_integer(L)] of
        [] -> {0, []};
        Known -> lists:max(Known)
    end.

numa(Root) ->
    Dir = filename:join(Root, "sys/devices/system/node"),
    case file:list_dir(Dir) of
        {ok, Names} ->
            Ids = lists:sort([list_to_integer(I) || "node" ++ I <- Names, I =/= [],
                                                   lists:all(fun(Ch) -> Ch >= $0 andalso Ch =< $9 end, I)]),
            [#{id => Id,
               cpus => read_list(filename:join([Dir, "node" ++ integer_to_list(Id), "cpulist"])),
               distances => case read(filename:join([Dir, "node" ++ integer_to_list(Id), "distance"])) of
                                {ok, D} -> ints(D);
                                error -> []
                            end} || Id <- Ids];
        {error, _} -> []
    end.

%% The governor of the first CPU that has one, and each CPU's current and
%% maximum frequency in kHz (the spread says whether they scale).
frequency(Cpu, Online) ->
    Gov = [G || C <- Online, {ok, G0} <- [read(Cpu(cpu(C) ++ "/cpufreq/scaling_governor"))],
                G <- [string:trim(G0)]],
    Cur = [F || C <- Online, F <- [read_int(Cpu(cpu(C) ++ "/cpufreq/scaling_cur_freq"))], is_integer(F)],
    Max = [F || C <- Online, F <- [read_int(Cpu(cpu(C) ++ "/cpufreq/cpuinfo_max_freq"))], is_integer(F)],
    #{governor => case lists:usort(Gov) of
                      [] -> null;
                      [G] -> G;
                      Gs -> iolist_to_binary(lists:join(",", Gs))
                  end,
      current_khz => Cur,
      max_khz => case Max of [] -> null; _ -> lists:max(Max) end}.

%% "always [madvise] never" -> <<"madvise">>.
bracketed({ok, T}) ->
    case re:run(T, "\\[([a-z_]+)\\]", [{capture, all_but_first, binary}]) of
        {match, [V]} -> V;
        nomatch -> null
    end;
bracketed(error) ->
    null.

sched_ext(Root) ->
    Dir = filename:join(Root, "sys/kernel/sched_ext"),
    case read(filename:join(Dir, "state")) of
        {ok, State} ->
            Ops = case read(filename:join([Dir, "root", "ops"])) of
                      {ok, O} -> string:trim(O);
                      error -> null
                  end,
            #{visible => true, state => string:trim(State), ops => Ops};
        error ->
            #{visible => false}
    end.

read_list(Path) ->
    case read(Path) of
        {ok, S} -> beamlab_env:parse_cpulist(string:trim(S));
        error -> []
    end.

read_int(Path) ->
    case read(Path) of
        {ok, S} ->
            try binary_to_integer(string:trim(S))
            catch error:badarg -> null
            end;
        error -> null
    end.

ints(B) ->
    try [binary_to_integer(X) || X <- string:lexemes(B, " \n")]
    catch error:badarg -> []
    end.

%% Regular files only, bounded.
read(Path) ->
    case file:open(Path, [read, binary, raw]) of
        {ok, F} ->
            try file:read(F, ?MAX_READ) of
                {ok, B} -> {ok, B};
                eof -> {ok, <<>>};
                {error, _} -> error
            after
                ok = file:close(F)
            end;
        {error, _} -> error
    end.
