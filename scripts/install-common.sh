# Sourced by the install scripts (install-deps.sh, install-otp.sh,
# install-perftest.sh, install-rabbitmq.sh): the checks and the apt step
# they share. The caller defines say() (one line on stderr, prefixed with
# its name).
#
#   debian_missing PKG...          prints " PKG" for each one not installed
#   apt_install_missing PKG...     installs them (as root; else says which
#                                  are needed and exits 1)
#   prefix_writable PREFIX VAR     exits 1 unless PREFIX can be made (as
#                                  root, or its parent writable), naming
#                                  the variable that moves it

debian_missing() {
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || printf ' %s' "$p"
    done
}

apt_install_missing() {
    [ $# -gt 0 ] || return 0
    if [ "$(id -u)" -ne 0 ]; then
        say "needs these Debian packages: $* (sudo apt-get install -y $*)"
        exit 1
    fi
    say "installing: $*"
    apt-get update -q >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@" >/dev/null
}

prefix_writable() {
    if [ "$(id -u)" -ne 0 ] && [ ! -w "$(dirname "$1")" ]; then
        say "cannot write $(dirname "$1"); run as root or set $2"
        exit 1
    fi
}
