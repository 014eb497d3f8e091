# bench/check_sample.sh: sourced by the bench/check_*.sh scripts.
# sample_project P: the sample rebar3 project in P (two benchmarks, as
# test/project/project_SUITE's), a git repository with one commit;
# git_commit MESSAGE commits what is staged there.
git_commit() { git -C "$P" -c user.name=beamlab -c user.email=beamlab@localhost commit -q -m "$1"; }
sample_project() {
    P=$1
    mkdir -p "$P/src" "$P/bench"
    echo '{erl_opts, [debug_info]}.' > "$P/rebar.config"
    printf '%s\n' '{application, sample, [{description, "sample"}, {vsn, "0.1.0"},' \
        '  {applications, [kernel, stdlib]}, {modules, []}]}.' > "$P/src/sample.app.src"
    printf '%s\n' '-module(sample).' '-export([work/1, other/1]).' \
        'work(N) -> sum(N, 0).' 'other(N) -> sum(N, 0).' \
        'sum(0, Acc) -> Acc;' 'sum(I, Acc) -> sum(I - 1, Acc + I * I).' > "$P/src/sample.erl"
    printf '%s\n' '-module(sample_bench).' '-export([benchmarks/0]).' 'benchmarks() ->' \
        '    [#{name => "work", runner => fun() -> sample:work(1000) end},' \
        '     #{name => "other", runner => {sample, other, [1000]}}].' > "$P/bench/sample_bench.erl"
    echo _build > "$P/.gitignore"
    git -C "$P" init -q && git -C "$P" add -A && git_commit first
}
