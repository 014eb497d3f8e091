%%% @doc Text views of profiles: the perf profile of a `profile' document
%%% (samples per thread type and category, then the top table: self and
%%% total share per function, its category and a note), and the in-VM
%%% profiler tables (`run --profile', `--memory', `--reductions') that
%%% the run command adds to its benchmarks. Pure: the document in, text out.
-module(beamlab_render_profile).

-export([render/2, top_table/2, invm_table/1, memory_lines/1, memory_lines/2, after_phases/1]).

-type opts() :: #{unicode => boolean(), top => pos_integer(),
                  callers => [{binary(), [{binary(), pos_integer()}]}]}.

%% @doc The text view of a `profile' document.
-spec render(beamlab_result:result(), opts()) -> unicode:chardata().
render(#{extra := #{<<"profile">> := P}, params := Params}, Opts) ->
    N = maps:get(<<"samples">>, P, 0),
    Head = io_lib:format("~ts: ~b samples at ~b Hz over ~ts s~n",
                         [maps:get(<<"subject">>, Params, <<"profile">>), N,
                          maps:get(<<"frequency">>, Params, 0),
                          beamlab_format_units:number(maps:get(<<"elapsed_ms">>, P, 0) / 1000)]),
    [Head,
     mode_line(P),
     shares("threads", maps:get(<<"threads">>, P, #{}), N,
            [<<"scheduler">>, <<"dirty_cpu">>, <<"dirty_io">>, <<"other">>]),
     shares("categories", maps:get(<<"categories">>, P, #{}), N,
            [<<"erlang">>, <<"emulator">>, <<"kernel">>, <<"harness">>]),
     thread_categories(maps:get(<<"thread_categories">>, P, #{}), N),
     warnings(P, N),
     "\n",
     top_table(P, maps:get(top, Opts, 25)),
     [callers(F, Paths, N) || {F, Paths} <- maps:get(callers, Opts, [])]];
render(_Doc, _Opts) ->
    "no profile in this document\n".

callers(F, [], _N) ->
    ["\ncallers of ", F, ": none in the recorded stacks\n"];
callers(F, Paths, N) ->
    Total = lists:sum([C || {_, C} <- Paths]),
    ["\ncallers of ", F, " (nearest Erlang function first; ",
     beamlab_format_units:percent(share(Total, N)), " of all samples):\n",
     beamlab_format_table:render(["share", "samples", "path"],
                                 [[beamlab_format_units:percent(share(C, N)), integer_to_list(C),
                                   binary:replace(Path, <<";">>, <<" > ">>, [global])]
                                  || {Path, C} <- Paths],
                                 #{align => [right, right, left]})].

%% Within each thread type that has samples: its categories, as shares of
%% all samples.
thread_categories(TC, N) ->
    [["  ", T, ": ",
      lists:join(", ", [io_lib:format("~ts ~ts", [C, beamlab_format_units:percent(share(V, N))])
                        || C <- [<<"erlang">>, <<"emulator">>, <<"kernel">>, <<"harness">>],
                           V <- [maps:get(C, maps:get(T, TC), 0)], V > 0]), "\n"]
     || T <- [<<"scheduler">>, <<"dirty_cpu">>, <<"dirty_io">>, <<"other">>], is_map_key(T, TC)].

shares(Title, Counts, N, Keys) ->
    Parts = [io_lib:format("~ts ~ts", [K, beamlab_format_units:percent(share(maps:get(K, Counts, 0), N))])
             || K <- Keys],
    [Title, ": ", lists:join(", ", Parts), "\n"].

mode_line(#{<<"mode">> := M, <<"mode_what">> := What, <<"mode_cost">> := Cost}) ->
    io_lib:format("mode ~ts: ~ts; cost: ~ts~n", [M, What, Cost]);
mode_line(_) ->
    "".

warnings(P, N) ->
    Unnamed = maps:get(<<"unnamed_jit">>, P, 0),
    W1 = case maps:get(<<"perf_support">>, P, true) of
             _ when map_get(<<"flavor">>, P) =:= <<"emu">> ->
                 ["note: the interpreter (emu flavour) runs no JIT code: Erlang functions are not named; "
                  "its time is in the emulator's C functions, process_main (the loop that runs BEAM "
                  "instructions) first\n"];
             false -> ["warning: the VM was started without perf support: its Erlang functions are "
                       "anonymous JIT addresses; start it with +JPperf true (e.g. ERL_FLAGS='+JPperf true')\n"];
             _ when N > 0, Unnamed * 10 > N ->
                 ["warning: ", integer_to_list(Unnamed), " samples in unnamed JIT code\n"];
             _ -> []
         end,
    W2 = case maps:get(<<"target_exited">>, P, false) of
             true -> ["note: the target exited during the profile; this is what was recorded\n"];
             false -> []
         end,
    W3 = case N of
             0 -> ["note: no samples: the target was idle or exited at once\n"];
             _ -> []
         end,
    [W1, W2, W3].

%% @doc The top table: the `Top' functions with the most self samples.
-spec top_table(#{binary() => beamlab_json:json()}, pos_integer()) -> unicode:chardata().
top_table(P, Top) ->
    N = maps:get(<<"samples">>, P, 0),
    Fs = lists:sublist(maps:get(<<"functions">>, P, []), Top),
    Rows = [[integer_to_list(I), maps:get(<<"name">>, F), maps:get(<<"category">>, F),
             beamlab_format_units:percent(share(maps:get(<<"self">>, F), N)),
             beamlab_format_units:percent(share(maps:get(<<"total">>, F), N)),
             integer_to_list(maps:get(<<"self">>, F)), maps:get(<<"note">>, F, <<>>)]
            || {I, F} <- lists:zip(lists:seq(1, length(Fs)), Fs)],
    beamlab_format_table:render(["#", "function", "category", "self", "total", "samples", "note"], Rows,
                                #{align => [right, left, left, right, right, right, left]}).

share(_C, 0) -> 0.0;
share(C, N) -> C / N.

%% @doc The table of an in-VM profiler (`extra.profile' of a benchmark:
%% `tool', `rows' of function, calls, time or count, share).
-spec invm_table(#{binary() => beamlab_json:json()}) -> unicode:chardata().
invm_table(#{<<"tool">> := Tool, <<"rows">> := Rows} = P) ->
    Unit = maps:get(<<"unit">>, P, <<"us">>),
    Head = io_lib:format("~ts profile (~ts, after the timed samples, ~b iterations)~n",
                         [Tool, unit_text(Unit), maps:get(<<"iterations">>, P, 0)]),
    Cells = [[maps:get(<<"function">>, R), integer_to_list(maps:get(<<"calls">>, R, 0)),
              case maps:get(<<"value">>, R, null) of
                  null -> "-";
                  V -> beamlab_format_units:number(V)
              end,
              beamlab_format_units:percent(maps:get(<<"share">>, R, 0.0))]
             || R <- Rows],
    [Head, beamlab_format_table:render(["function", "calls", Unit, "share"], Cells,
                                       #{align => [left, right, right, right]}),
     case maps:get(<<"msacc">>, P, null) of
         M when is_map(M), map_size(M) > 0 ->
             ["microstate accounting during the profile (share of thread time):\n",
              [io_lib:format("  ~ts: ~ts~n", [K, V]) || {K, V} <- lists:sort(maps:to_list(M))]];
         _ -> []
     end].

unit_text(<<"us">>) -> "time in microseconds";
unit_text(<<"count">>) -> "call counts";
unit_text(<<"words">>) -> "words allocated";
unit_text(U) -> U.

%% @doc Lines for `--memory' / `--reductions' (`extra.per_iteration').
-spec memory_lines(#{binary() => beamlab_json:json()}) -> unicode:chardata().
memory_lines(M) ->
    memory_lines(M, "iteration").

%% @doc As {@link memory_lines/1}, per `Unit' (`"iteration"', `"repetition"').
-spec memory_lines(#{binary() => beamlab_json:json()}, string()) -> unicode:chardata().
memory_lines(M, Unit) ->
    Words = maps:get(<<"words">>, M, null),
    Reds = maps:get(<<"reductions">>, M, null),
    [case Words of
         null -> [];
         _ -> io_lib:format("  memory: ~ts words (~ts) allocated per ~s~ts~n",
                            [beamlab_format_units:number(Words),
                             beamlab_format_units:bytes(maps:get(<<"bytes">>, M, 0)), Unit,
                             spawned(maps:get(<<"spawned">>, M, 0), Unit)])
     end,
     case Reds of
         null -> [];
         _ -> io_lib:format("  reductions: ~ts per ~s~n", [beamlab_format_units:number(Reds), Unit])
     end,
     case maps:get(<<"allocators">>, M, []) of
         [] -> [];
         As -> ["  allocating functions (words per iteration):\n",
                [io_lib:format("    ~ts  ~ts~n", [F, beamlab_format_units:number(W)])
                 || #{<<"function">> := F, <<"words">> := W} <- As]]
     end].

spawned(0, _Unit) -> "";
spawned(N, Unit) -> io_lib:format(", counting ~b spawned process(es) per ~s", [N, Unit]).

%% @doc The after-phase of a benchmark document (per-iteration memory and
%% reductions, an in-VM profiler's table), after the run's table.
-spec after_phases(beamlab_result:result()) -> unicode:chardata().
after_phases(#{benchmarks := Bs}) ->
    [[case maps:find(<<"per_iteration">>, E) of
          {ok, #{<<"error">> := Err}} -> ["\n", N, ": per iteration: ", Err, "\n"];
          {ok, M} -> ["\n", N, ", per iteration (own phase, after the samples):\n", memory_lines(M)];
          error -> []
      end,
      case maps:find(<<"profile">>, E) of
          {ok, #{<<"error">> := Err}} -> ["\n", N, ": profile: ", Err, "\n"];
          {ok, P} -> ["\n", N, ": ", invm_table(P)];
          error -> []
      end] || #{name := N, extra := E} <- Bs].
