#!/bin/sh
# The launcher of ./beamlab: the escript's second line, made from this file
# when the escript is built (rebar.config.script: the lines below without
# comments and blank lines, leading blanks trimmed, joined by one space,
# after `%% 2>/dev/null; '). The line starts with `%%', so escript skips it
# as a comment; sh runs `%%' (no such command, its error discarded) and
# goes on. It is not run by itself (it needs "$0" to be the escript):
# `sh -n scripts/launcher.sh' checks its syntax, beamlab_launcher_tests
# checks the line it makes.
#
# It must stay under 1023 bytes: escript reads the emulator flags of the
# next line through a 1024-byte line buffer (the build fails beyond that,
# and hardening_SUITE checks the built escript).
#
# Run as ./beamlab it starts the VM as a background job and forwards every
# stop signal (HUP, INT, QUIT, TERM) to it as SIGUSR2, which beamlab
# handles by stopping the measurement and printing/saving what was
# measured. For run, suite and the bare form the VM runs in a session of
# its own with SIGINT at its default (the BEAM cannot catch SIGINT): group
# signals reach the launcher only, and SIGINT sent to the VM alone ends it,
# after which the launcher recovers its checkpoint as an interrupted run;
# the VM stops by itself if the launcher disappears
# (beamlab_runtime_interrupt). Otherwise a signal to the whole process
# group (a terminal's Ctrl-C, `timeout', `kill -TERM -PGID') may reach the
# VM twice, directly and forwarded: beamlab_runtime_interrupt pairs the two
# into one interrupt. SIGUSR2 is ignored in the VM until beamlab handles it
# (`trap '' USR2' is inherited), so an early Ctrl-C cannot kill the VM.
#
# Exit status: told by BEAMLAB_LAUNCHER=1, beamlab ends with 200 + its exit
# code 0, 1 or 2, and 203 for 130 (interrupted), which the launcher maps
# back. Any other status means the VM stopped without beamlab finishing
# (benchmarked code called halt/1 in a way beamlab could not see, the VM
# ran out of memory). For that case the launcher makes a private directory
# (mktemp -d, mode 0700, removed on every exit by the EXIT trap; HUP exits
# through it) where `run' and `suite' keep a checkpoint of what they
# measured (BEAMLAB_CHECKPOINT); it then runs the escript again with
# BEAMLAB_RECOVER=STATUS, which prints and saves the partial result naming
# the job that stopped the VM from the checkpoint when there is one
# (beamlab_cli_recover), else says in one line that the VM stopped. It then
# exits 1, never 0; a status of 128 and above (a signal) passes through as
# before. Crash dumps are off (ERL_CRASH_DUMP_SECONDS=0, also for the fresh
# VMs beamlab starts). `escript beamlab' skips the launcher and works as a
# plain escript with the plain exit codes.
#
# For `amqp' and `node' (load generators, not measurements of Erlang code)
# it turns the schedulers' busy waiting off (+sbwt none, as RabbitMQ does):
# a generator with hundreds of connections otherwise spins between small
# events and spends about twice the CPU per message (bench/amqp_scale.sh).
# The user's own ERL_FLAGS come after, so they win.

# What would end the VM before any Erlang code runs, said in one line
# first (#34): a deleted working directory ("init terminating in
# do_boot"), too few file descriptors ("Failed to create sig_suspend
# pipe: emfile", exit 134), an address space too small for the VM
# (`ulimit -v': "erts_mmap: Failed to create super carrier", or a
# std::bad_alloc abort; the VM reserves about 1.3 GB of address space on
# 2 cores, more with more schedulers, so a limit is tried by booting the
# VM once, quietly, only when there is one). (The shell's own
# "getcwd() failed" notice comes before this line: dash prints it while
# it initialises, before the script's first line, see
# docs/reliability.md.) Short on purpose: the line's byte budget.
# Crash dumps off, for every VM below and those beamlab starts.
f(){ echo beamlab: $1>&2;exit 1;};
[ -d "$PWD" ]||f "cwd deleted";
[ $(ulimit -n) -lt 64 ]&&f "ulimit -n < 64";
export ERL_CRASH_DUMP_SECONDS=0 ERL_CRASH_DUMP=/dev/null;
v=$(ulimit -v);
[ $v = unlimited ]||escript "$0" --version >/dev/null 2>&1||f "ulimit -v $v too low";
# Standard input, kept for the VM (a background job's would be /dev/null).
exec 3<&0;
s=;
case "$1" in
    amqp|node) export ERL_FLAGS="+sbwt none +sbwtdcpu none +sbwtdio none $ERL_FLAGS";;
    matrix|profile|watch) ;;
    # run, suite and the bare form: a session of its own, SIGINT at its default.
    *) command -v setsid >/dev/null&&env --default-signal=INT true 2>/dev/null&&s='setsid env --default-signal=INT';;
esac;
# The private directory of the checkpoint.
# (-t: in $TMPDIR, else /tmp; -q: quiet, empty when mktemp fails.)
d=$(mktemp -qdt beamlab.XXXXXX);
trap 'rm -rf "$d"' EXIT;
trap '' USR2;
trap 'kill -USR2 $p 2>&-' HUP INT QUIT TERM;
BEAMLAB_LAUNCHER=1 BEAMLAB_CHECKPOINT="$d" $s escript "$0" "$@" <&3 3<&- &
p=$!;
# A trapped signal ends `wait' early: wait again while the VM runs.
# (Builtins' errors: stderr closed, 2>&-, a few bytes shorter.)
while wait $p;rc=$?;kill -0 $p 2>&-;do :;done;
case $rc in
    20[012]) exit $((rc-200));;
    203) exit 130;;
esac;
# The VM stopped without beamlab finishing: recover what was measured.
BEAMLAB_RECOVER=$rc BEAMLAB_CHECKPOINT="$d" escript "$0" "$@" </dev/null 3<&- || echo "beamlab: the VM stopped (exit status $rc)" >&2;
[ $rc -lt 128 ]&&exit 1;
exit $rc
