%%% @doc The declarative option schema: what an experiment kind's options
%%% are (name, type, default, bounds, choices, conflicts, requires, the
%%% reason shown on error). The command line builds its flags, help and
%%% errors from it, the public API checks its maps against it (#31).
%%%
%%% An option is the map `beamlab_cli_args' reads (`name', `short',
%%% `long', `type', `default', `metavar', `help', `max', `max_why',
%%% `multi', ...) plus `min', `conflicts' (names that cannot be given with
%%% it), `requires' (names that must be given with it) and `why' (the
%%% reason shown when a value is refused). Core: it calls nothing above it.
-module(beamlab_schema).

-type type() :: boolean | count | string | cookie | integer | pos_integer | non_neg_integer
              | number | pos_number | quantity | percent | fraction | {enum, [atom()]}
              | {list, type()} | term.
-type option() :: #{name := atom(), type => type(), short => string(), long => string(),
                    default => term(), metavar => string(), help => string(),
                    min => number(), max => number(), max_why => string(),
                    multi => boolean(), attach => boolean(), optional_value => term(),
                    hidden => boolean(),
                    conflicts => [atom()], requires => [atom()], why => string()}.
-export_type([type/0, option/0]).
