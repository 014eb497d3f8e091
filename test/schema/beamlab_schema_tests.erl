%%% @doc beamlab_schema: types, bounds, conflicts, requirements and the
%%% line of each refusal, naming options by key or by flag.
-module(beamlab_schema_tests).
-include_lib("eunit/include/eunit.hrl").

schema() ->
    [#{name => rate, short => "r", type => {one_of, [number, {enum, [infinity]}]}, min => 0,
       max => 100, max_why => "per channel"},
     #{name => loop, short => "l", long => "loop", type => pos_integer, conflicts => [concurrency],
       why => "timed mode runs one worker"},
     #{name => concurrency, short => "c", type => pos_integer},
     #{name => min, long => "min", type => pos_integer, requires => [squeeze]},
     #{name => squeeze, short => "q", type => boolean}].

line(R, Names) -> lists:flatten(io_lib:format("~ts", [beamlab_schema:format_error(R, Names)])).

accepts_what_fits_test() ->
    ?assertEqual(ok, beamlab_schema:check(schema(), #{})),
    ?assertEqual(ok, beamlab_schema:check(schema(), #{rate => 0, loop => 3, min => 2, squeeze => true})),
    ?assertEqual(ok, beamlab_schema:check(schema(), #{rate => infinity})),
    ?assertEqual(ok, beamlab_schema:check(schema(), #{rate => 100.0})).

unknown_option_test() ->
    {error, R} = beamlab_schema:check(schema(), #{bogus => 1}),
    ?assertEqual({unknown_option, bogus}, R),
    ?assertEqual("unknown option bogus", line(R, key)).

type_and_bounds_test() ->
    {error, R1} = beamlab_schema:check(schema(), #{rate => -5}),
    ?assertEqual("invalid value '-5' for rate: expected a number >= 0", line(R1, key)),
    ?assertEqual("invalid value '-5' for -r: expected a number >= 0", line(R1, flag)),
    {error, R2} = beamlab_schema:check(schema(), #{rate => 101}),
    ?assertEqual("invalid value '101' for -r: at most 100 (per channel)", line(R2, flag)),
    {error, R3} = beamlab_schema:check(schema(), #{concurrency => 0}),
    ?assertEqual("invalid value '0' for concurrency: expected a positive integer", line(R3, key)),
    {error, R4} = beamlab_schema:check(schema(), #{rate => <<"fast">>}),
    ?assertEqual("invalid value 'fast' for rate: expected a number or one of infinity", line(R4, key)).

conflicts_and_requires_test() ->
    {error, R1} = beamlab_schema:check(schema(), #{loop => 10, concurrency => 2}),
    ?assertEqual("-l and -c cannot be used together (timed mode runs one worker)", line(R1, flag)),
    ?assertEqual("loop and concurrency cannot be used together (timed mode runs one worker)", line(R1, key)),
    {error, R2} = beamlab_schema:check(schema(), #{min => 2}),
    ?assertEqual("--min needs -q", line(R2, flag)).

rule_lines_name_options_test() ->
    {ok, Rate} = beamlab_schema:find(rate, schema()),
    R = {rule, "~ts ~ts is too much", [{opt, Rate}, {value, 5}]},
    ?assertEqual("-r 5 is too much", line(R, flag)),
    ?assertEqual("rate 5 is too much", line(R, key)).

%% A rule naming a key of a map option: its field's flag on the command
%% line, `Key in Option' in the library.
rule_lines_name_fields_test() ->
    {ok, Rate} = beamlab_schema:find(rate, schema()),
    Tls = #{name => tls, type => map,
            fields => [#{name => tls_ca_file, key => cacertfile, long => "tls-ca-file", type => string}]},
    R = {rule, "~ts needs ~ts", [{opt, Rate}, {field, Tls, cacertfile}]},
    ?assertEqual("-r needs --tls-ca-file", line(R, flag)),
    ?assertEqual("rate needs cacertfile in tls", line(R, key)).

%% Values that are not text are printed, on one line, bounded.
values_quoted_on_one_line_test() ->
    {error, R} = beamlab_schema:check(schema(), #{concurrency => "a\nb"}),
    ?assertEqual("invalid value 'a?b' for concurrency: expected a positive integer", line(R, key)),
    {error, R2} = beamlab_schema:check(schema(), #{concurrency => <<255, 0>>}),
    ?assertNot(lists:member($\n, line(R2, key))).

%% An atom is quoted as text too: its control characters never break the line.
atom_values_on_one_line_test() ->
    {error, R} = beamlab_schema:check(schema(), #{concurrency => 'a\nb'}),
    ?assertEqual("invalid value 'a?b' for concurrency: expected a positive integer", line(R, key)).

%%--------------------------------------------------------------------
%% The command line's flags from the schema (#31: flags/1, from_flags/2)

flag_schema() ->
    [#{name => timeout, long => "timeout", type => pos_integer, scale => 1000, default => 600000,
       max => 604800000, max_why => "one week", metavar => "S", help => "seconds"},
     #{name => threshold, long => "threshold", type => pos_number, scale => {1, 100}, default => 0.05,
       help => "percent"},
     #{name => paths, short => "pa", type => string, multi => true, default => [], metavar => "DIR",
       requires => [timeout], why => "x"},
     #{name => params, long => "param", type => map, cli_type => string, multi => true},
     #{name => names, type => {list, string}}].

%% Only options with a flag, in the flag's units and type, without what
%% only the schema's check reads.
flags_are_the_schema_in_the_flags_units_test() ->
    [T, Th, Pa, P] = beamlab_schema:flags(flag_schema()),
    ?assertEqual(#{name => timeout, long => "timeout", type => pos_integer, default => 600,
                   max => 604800, max_why => "one week", metavar => "S", help => "seconds"}, T),
    ?assertEqual(5, maps:get(default, Th)),   % (5 percent, not 5.000000000000001)
    ?assertEqual(#{name => paths, short => "pa", type => string, multi => true, default => [],
                   metavar => "DIR"}, Pa),
    ?assertEqual(string, maps:get(type, P)).

from_flags_gives_the_keys_units_test() ->
    ?assertEqual(#{timeout => 5000, threshold => 0.05, paths => ["a"]},
                 beamlab_schema:from_flags(flag_schema(), #{timeout => 5, threshold => 5, paths => ["a"],
                                                            format => json})),
    ?assertEqual(#{}, beamlab_schema:from_flags(flag_schema(), #{})).

%% A line naming the flag shows its units; naming the key, the key's.
scaled_lines_test() ->
    {error, R} = beamlab_schema:check(flag_schema(), #{timeout => 700000000}),
    ?assertEqual("invalid value '700000' for --timeout: at most 604800 (one week)", line(R, flag)),
    ?assertEqual("invalid value '700000000' for timeout: at most 604800000 (one week)", line(R, key)),
    {error, R2} = beamlab_schema:check(flag_schema(), #{timeout => 1500.5}),
    ?assertEqual("invalid value '1.5005' for --timeout: expected a positive integer", line(R2, flag)).

%% Several values (a flag given again and again) are a list, each
%% checked; a flag the command turns into a value of its own is not.
multi_values_test() ->
    ?assertEqual(ok, beamlab_schema:check(flag_schema(), #{paths => ["a", <<"b">>], timeout => 1})),
    {error, R} = beamlab_schema:check(flag_schema(), #{paths => "a", timeout => 1}),
    ?assertEqual("invalid value 'a' for paths: expected a list of text", line(R, key)),
    {error, R2} = beamlab_schema:check(flag_schema(), #{paths => ["a", 3], timeout => 1}),
    ?assertEqual("invalid value '3' for paths: expected text", line(R2, key)),
    ?assertEqual(ok, beamlab_schema:check(flag_schema(), #{params => #{ring => #{n => 1}}})),
    {error, R3} = beamlab_schema:check(flag_schema(), #{params => [x]}),
    ?assertEqual("invalid value '[x]' for params: expected a map", line(R3, key)).

%% A kind's own rules run once the schema's check passed, naming options
%% as the line's front end does.
check_with_rules_test() ->
    Rules = fun(Opt) -> {error, {rule, "~ts ~ts: too long", [Opt(timeout), {value, 5}]}} end,
    {error, R} = beamlab_schema:check(flag_schema(), #{timeout => 5000}, Rules),
    ?assertEqual("--timeout 5: too long", line(R, flag)),
    ?assertEqual("timeout 5: too long", line(R, key)),
    %% the schema's refusal first: the rules are not asked
    {error, R2} = beamlab_schema:check(flag_schema(), #{timeout => 0}, Rules),
    ?assertMatch({invalid, _, 0, _}, R2),
    ?assertEqual(ok, beamlab_schema:check(flag_schema(), #{}, fun(_) -> ok end)).
