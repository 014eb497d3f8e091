-module(beamlab_report_assets_tests).
%% The report's CSS and JavaScript are real files under priv/report: each
%% one is found, passes a syntax check (node --check for the scripts,
%% installed by scripts/install-deps.sh --test) and cannot end the page
%% element that inlines it.
-include_lib("eunit/include/eunit.hrl").

every_asset_is_read_test() ->
    {ok, Styles} = beamlab_report_assets:styles(),
    {ok, Scripts} = beamlab_report_assets:scripts(),
    ?assertEqual(length(beamlab_report_assets:files()), length(Styles) + length(Scripts)),
    [?assert(byte_size(B) > 100) || B <- Styles ++ Scripts].

%% Nothing in priv/report that the page would leave out.
no_stray_asset_test() ->
    ?assertEqual(lists:sort(beamlab_report_assets:files()), lists:sort(filelib:wildcard("*.*", dir()))).

scripts_pass_node_check_test_() ->
    {timeout, 60,
     fun() ->
             Node = os:find_executable("node"),
             ?assertNotEqual(false, Node),   % scripts/install-deps.sh --test installs nodejs
             [begin
                  Path = filename:join(dir(), F),
                  {Status, Out} = run(Node, ["--check", Path]),
                  ?assertEqual({F, 0, <<>>}, {F, Status, Out})
              end || F <- beamlab_report_assets:files(), filename:extension(F) =:= ".js"]
     end}.

%% HTML ends a <script> at the first "</script" and lets "<!--" change how
%% the rest is read; a <style> ends at "</style".
assets_cannot_close_their_element_test() ->
    {ok, Scripts} = beamlab_report_assets:scripts(),
    {ok, Styles} = beamlab_report_assets:styles(),
    [?assertEqual(nomatch, re:run(S, <<"</script|<!--">>, [caseless])) || S <- Scripts],
    [?assertEqual(nomatch, re:run(S, <<"</style">>, [caseless])) || S <- Styles].

%% The stylesheets' braces balance outside comments and strings (a missing
%% brace would swallow every rule after it without an error).
styles_balance_test() ->
    {ok, Styles} = beamlab_report_assets:styles(),
    [?assertEqual(0, depth(strip(S))) || S <- Styles].

dir() ->
    filename:join(code:priv_dir(beamlab), "report").

strip(Css) ->
    re:replace(Css, <<"/\\*.*?\\*/|'[^']*'|\"[^\"]*\"">>, <<>>, [global, dotall, {return, binary}]).

depth(Css) ->
    lists:foldl(fun($\{, D) when D >= 0 -> D + 1;
                   ($\}, D) when D > 0 -> D - 1;
                   ($\}, _) -> -1;
                   (_, D) -> D
                end, 0, binary_to_list(Css)).

run(Exe, Args) ->
    Port = open_port({spawn_executable, Exe}, [{args, Args}, exit_status, stderr_to_stdout]),
    beamlab_test_util:port_output(Port, 60000).
