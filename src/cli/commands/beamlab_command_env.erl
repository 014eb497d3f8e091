%%% @doc `beamlab env': the environment report (VM, CPU, NUMA, cgroup, OS,
%%% memory) as text or JSON.
-module(beamlab_command_env).
-behaviour(beamlab_command).

-export([summary/0, options/0, usage/0, run/1]).

%% @doc One line for `beamlab help'.
-spec summary() -> string().
summary() ->
    "report the VM, CPU, NUMA, cgroup and OS facts that explain a number".

%% @doc Options of `beamlab env'.
-spec options() -> [beamlab_cli_args:option()].
options() ->
    [#{name => format, long => "format", type => {enum, [text, json]}, default => text,
       metavar => "FMT", help => "output format: text or json"},
     #{name => root, long => "root", type => string, default => "/", metavar => "DIR",
       help => "read /proc and /sys below DIR (a copy of another machine's tree)"}].

%% @doc Examples for `beamlab help env'.
-spec usage() -> iodata().
usage() ->
    "Usage: beamlab env [--format json] [--root DIR]\n\n"
    "VM facts come from the running VM; OS and hardware facts from /proc and /sys.\n"
    "What the OS does not offer (another OS, a container) is reported as unknown,\n"
    "with a note saying what was missing.\n\n"
    "Examples:\n"
    "  beamlab env\n"
    "  beamlab env --format json > env.json\n"
    "  erl +S 4 +sbt db ... (the report shows the flags a VM really runs with)\n".

%% @doc Prints the report.
-spec run(beamlab_cli_args:parsed()) -> beamlab_command:outcome().
run(Parsed) ->
    Root = beamlab_cli_args:get(root, Parsed),
    case {maps:get(args, Parsed), filelib:is_dir(Root)} of
        {[_ | _] = Extra, _} ->
            beamlab_cli_error:usage_error("env takes no arguments (got: ~ts)", [lists:join(" ", Extra)]);
        {[], false} ->
            beamlab_cli_error:usage_error("--root ~ts: no such directory", [Root]);
        {[], true} ->
            Report = beamlab_env:report(#{root => Root}),
            case beamlab_cli_args:get(format, Parsed) of
                json -> beamlab_cli_output:put_chars([beamlab_json:encode(Report, #{pretty => true}), "\n"]);
                text -> beamlab_cli_output:put_chars(beamlab_render_env:render(beamlab_json:canonical(Report)))
            end,
            {0, none}
    end.
