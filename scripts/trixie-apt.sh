# Sourced by scripts/install-otp.sh and scripts/install-rabbitmq.sh: apt
# reading Debian trixie's indexes through a private configuration (its own
# sources list, lists and cache under a work directory), so nothing of this
# machine's apt setup changes. The mirror is the Debian one this machine's
# apt already uses; apt checks the index's signature with Debian's archive
# keyring, so the checksums it lists can be trusted.
#
#   trixie_apt_init WORKDIR deb|deb-src   set up and download the index
#   trixie_apt ARGS...                    apt-get with that configuration
#   trixie_uri_line PACKAGE=VERSION FILE [source|download]
#                                         apt's "'URI' FILE SIZE SHA256:..." line
#
# The caller defines say() (one line on stderr, prefixed with its name).

# The Debian mirror this machine's apt already uses (not the security one).
trixie_mirror() {
    apt-get indextargets --format '$(REPO_URI) $(ORIGIN) $(SUITE)' 2>/dev/null \
        | awk '$2 == "Debian" && $3 !~ /-/ { print $1; exit }'
}

trixie_apt_init() {
    TRIXIE_APT_DIR=$1/apt
    mirror=$(trixie_mirror)
    if [ -z "$mirror" ] && [ "$(id -u)" -eq 0 ]; then
        # apt knows the origin of a source only once its lists are downloaded.
        apt-get update -q >/dev/null
        mirror=$(trixie_mirror)
    fi
    if [ -z "$mirror" ]; then
        say "no Debian mirror in apt's sources; cannot read Debian trixie's index"
        exit 1
    fi
    mkdir -p "$TRIXIE_APT_DIR/lists/partial" "$TRIXIE_APT_DIR/cache/archives/partial"
    echo "$2 [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] ${mirror%/} trixie main" \
        > "$TRIXIE_APT_DIR/sources.list"
    say "reading trixie's index ($2)"
    trixie_apt update >/dev/null
}

trixie_apt() {
    apt-get -q -o Dir::Etc::SourceList="$TRIXIE_APT_DIR/sources.list" \
        -o Dir::Etc::SourceParts=/nonexistent \
        -o Dir::State::Lists="$TRIXIE_APT_DIR/lists" \
        -o Dir::Cache="$TRIXIE_APT_DIR/cache" \
        -o Acquire::IndexTargets::deb::DEP-11::DefaultEnabled=false \
        -o APT::Sandbox::User=root "$@"
}

# apt's line for FILE of PACKAGE=VERSION: 'URI' FILE SIZE SHA256:HEX
# ("source" for a source package's files, "download" for a binary package).
trixie_uri_line() {
    trixie_apt --print-uris "${3:-download}" "$1" 2>/dev/null | grep "^'" | awk -v f="$2" '$2 == f'
}

trixie_uri() { printf '%s\n' "$1" | awk '{ gsub("\x27", "", $1); print $1 }'; }
trixie_sha256() { printf '%s\n' "$1" | awk '{ sub("^SHA256:", "", $4); print $4 }'; }
