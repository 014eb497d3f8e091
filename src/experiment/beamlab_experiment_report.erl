%%% @doc The HTML report of result documents for the public API
%%% (`beamlab:report/2'), as `beamlab report' makes it from saved files:
%%% documents in memory or saved files, labelled, optionally drawn as a
%%% history, returned as the page or written atomically to `output'.
-module(beamlab_experiment_report).

-export([report/2, format_error/1]).

%% A document, a document with its label, or a saved run's file.
-type source() :: beamlab_result:result() | {unicode:chardata(), beamlab_result:result()}
                | file:filename().
-type opts() :: #{title => unicode:chardata(),
                  history => boolean(),
                  order => auto | time | commit,
                  %% the between-run term (a fraction, 0 to below 1) of
                  %% verdicts between runs with repetitions
                  run_noise => number(),
                  output => file:filename()}.
-type error_reason() :: {report, reason()}.
-type reason() :: no_documents
                      | {bad_source, term()}
                      | {bad_option, atom(), term()}
                      | {unknown_option, atom()}
                      | {output_is_input, file:filename()}
                      | {load, beamlab_result:error_reason()}
                      | {history, beamlab_result_history:error_reason()}
                      | {page, beamlab_report_html:error_reason()}.
-export_type([source/0, opts/0, error_reason/0]).

-define(OPTIONS, [title, history, order, output, run_noise]).

%% @doc The page (`{ok, Html}'), or `ok' once it is written to `output'
%% (atomically; a regular file there is replaced, an input file never).
%% The first document is the baseline of the comparison; with `history'
%% the documents are a history, put in `order' (auto, time, commit) with
%% each benchmark's trend.
-spec report([source()], opts()) -> ok | {ok, binary()} | {error, error_reason()}.
report(Sources, Opts) ->
    case report1(Sources, Opts) of
        {error, R} -> {error, {report, R}};
        Done -> Done
    end.

report1(Sources, Opts) when is_list(Sources), is_map(Opts) ->
    case check_opts(Opts) of
        ok when Sources =:= [] -> {error, no_documents};
        ok ->
            case runs(Sources, []) of
                {ok, Runs} -> report_runs(Runs, Sources, Opts);
                {error, _} = E -> E
            end;
        {error, _} = E -> E
    end;
report1(Sources, Opts) when is_map(Opts) ->
    {error, {bad_source, Sources}};
report1(_Sources, Opts) ->
    {error, {bad_option, options, Opts}}.

check_opts(Opts) ->
    case [K || K <- maps:keys(Opts), not lists:member(K, ?OPTIONS)] of
        [K | _] -> {error, {unknown_option, K}};
        [] -> check_values(maps:to_list(Opts))
    end.

check_values([]) -> ok;
check_values([{title, T} | Rest]) ->
    case is_text(T) of
        true -> check_values(Rest);
        false -> {error, {bad_option, title, T}}
    end;
check_values([{history, H} | Rest]) when is_boolean(H) -> check_values(Rest);
check_values([{run_noise, N} | Rest]) when is_number(N), N >= 0, N < 1 -> check_values(Rest);
check_values([{order, O} | Rest]) when O =:= auto; O =:= time; O =:= commit -> check_values(Rest);
check_values([{output, P} | Rest]) ->
    case is_text(P) andalso P =/= "" andalso P =/= <<>> of
        true -> check_values(Rest);
        false -> {error, {bad_option, output, P}}
    end;
check_values([{K, V} | _]) -> {error, {bad_option, K, V}}.

is_text(T) ->
    (is_list(T) orelse is_binary(T)) andalso is_binary(unicode:characters_to_binary(T)).

%% Documents are labelled by kind and place ("bench 1"), files by their
%% name as `beamlab report' labels them.
runs([], Acc) ->
    {ok, unique(lists:reverse(Acc))};
runs([Source | Rest], Acc) ->
    N = length(Acc) + 1,
    case source(Source, N) of
        {ok, Run} -> runs(Rest, [Run | Acc]);
        {error, _} = E -> E
    end.

source(#{schema := _, kind := Kind, benchmarks := _} = Doc, N) ->
    {ok, {iolist_to_binary(io_lib:format("~ts ~b", [Kind, N])), Doc}};
source({Label, #{schema := _, kind := _, benchmarks := _} = Doc} = S, _N) ->
    case is_text(Label) of
        true -> {ok, {unicode:characters_to_binary(Label), Doc}};
        false -> {error, {bad_source, S}}
    end;
source(Path, _N) when is_list(Path); is_binary(Path) ->
    case is_text(Path) andalso beamlab_result:load(unicode:characters_to_list(Path)) of
        {ok, Doc} -> {ok, {unicode:characters_to_binary(filename:basename(Path, ".json")), Doc}};
        {error, R} -> {error, {load, R}};
        false -> {error, {bad_source, Path}}
    end;
source(Other, _N) ->
    {error, {bad_source, Other}}.

%% Labels name runs in the page: two alike get their place in front.
unique(Runs) ->
    Labels = [L || {L, _} <- Runs],
    case length(lists:usort(Labels)) =:= length(Labels) of
        true -> Runs;
        false -> [{iolist_to_binary([integer_to_list(I), ":", L]), D}
                  || {I, {L, D}} <- lists:zip(lists:seq(1, length(Runs)), Runs)]
    end.

report_runs(Runs, Sources, Opts) ->
    Noise = maps:with([run_noise], Opts),
    Titled = case maps:find(title, Opts) of
                 {ok, T} -> Noise#{title => unicode:characters_to_binary(T)};
                 error -> Noise
             end,
    WithHistory = case maps:get(history, Opts, false) andalso length(Runs) > 1 of
                      true ->
                          case beamlab_result_history:history(Runs, Noise#{order => maps:get(order, Opts, auto)}) of
                              {ok, H} -> {ok, Titled#{history => H}};
                              {error, HR} -> {error, {history, HR}}
                          end;
                      false -> {ok, Titled}
                  end,
    case {WithHistory, maps:find(output, Opts)} of
        {{error, _} = E, _} -> E;
        {{ok, RenderOpts}, error} ->
            case beamlab_report_html:render(Runs, RenderOpts) of
                {ok, Html} -> {ok, Html};
                {error, PR} -> {error, {page, PR}}
            end;
        {{ok, RenderOpts}, {ok, Out0}} ->
            Out = unicode:characters_to_list(Out0),
            case is_input(Out, Sources) of
                true -> {error, {output_is_input, Out}};
                false ->
                    case beamlab_report_html:write(Out, Runs, RenderOpts) of
                        ok -> ok;
                        {error, WR} -> {error, {page, WR}}
                    end
            end
    end.

is_input(Out, Sources) ->
    Abs = filename:absname(Out),
    lists:any(fun(S) when is_list(S); is_binary(S) ->
                      filename:absname(unicode:characters_to_list(S)) =:= Abs;
                 (_) -> false
              end, Sources).

%% @doc One line for each error of this module.
-spec format_error(error_reason()) -> unicode:chardata().
format_error(Reason) ->
    beamlab_format_reason:line(fun error_line/1, Reason).

error_line({report, R}) ->
    reason(R);
error_line(Other) ->
    %% (a reason of no kind above: printed, never raised)
    beamlab_format_reason:term(Other).

reason(no_documents) ->
    "report needs at least one result document";
reason({bad_source, S}) ->
    io_lib:format("not a result document, {Label, Document} or saved file: ~tP", [S, 8]);
reason({bad_option, options, O}) ->
    io_lib:format("the options of report/2 are a map, not ~tP", [O, 8]);
reason({bad_option, title, V}) ->
    io_lib:format("title must be text, not ~tP", [V, 8]);
reason({bad_option, history, V}) ->
    io_lib:format("history must be true or false, not ~tP", [V, 8]);
reason({bad_option, order, V}) ->
    io_lib:format("order must be auto, time or commit, not ~tP", [V, 8]);
reason({bad_option, run_noise, V}) ->
    io_lib:format("run_noise must be a fraction from 0 to below 1 (0.025 is 2.5%), not ~tP", [V, 8]);
reason({bad_option, output, V}) ->
    io_lib:format("output must be a file name, not ~tP", [V, 8]);
reason({bad_option, K, V}) ->
    io_lib:format("~ts: bad value ~tP", [K, V, 8]);
reason({unknown_option, K}) ->
    io_lib:format("unknown option ~tp for report/2 (options: ~ts)",
                  [K, lists:join(", ", [atom_to_list(O) || O <- ?OPTIONS])]);
reason({output_is_input, Out}) ->
    io_lib:format("~ts is one of the reported files: the report never replaces an input", [Out]);
reason({load, R}) ->
    beamlab_result:format_error(R);
reason({history, R}) ->
    beamlab_result_history:format_error(R);
reason({page, R}) ->
    beamlab_report_html:format_error(R).
