# librdkafka.sh: builds the librdkafka that kingest links (third_party/librdkafka/build.conf) from Debian's source
# package, once per machine, into a cache outside the build folder; sourced by scripts/setup.
#
# The source package comes through apt-get with a sources list, lists and cache of its own (the machine's apt
# configuration is neither read nor changed), is unpacked with Debian's patches (dpkg-source -x), configured with
# the options of build.conf and installed into a staging folder, which is renamed into place only once complete:
# a build that failed or was stopped half-way is never taken for a finished one. A lock serialises two setups
# that run at once; the second finds the first's build and uses it.

# Reads build.conf at ROOT into RDKAFKA_VERSION, RDKAFKA_SUITE, RDKAFKA_CONFIGURE and RDKAFKA_DIR (the cached
# build's folder: KINGEST_RDKAFKA_DIR, else librdkafka-<version>-<digest> under KINGEST_CACHE_DIR, else under
# ${XDG_CACHE_HOME:-$HOME/.cache}/kingest). CMakeLists.txt names the folder the same way.
rdkafka_conf() { # root
    local conf=$1/third_party/librdkafka/build.conf key value digest
    RDKAFKA_VERSION= RDKAFKA_SUITE= RDKAFKA_CONFIGURE=
    while IFS='=' read -r key value; do
        case $key in
        version) RDKAFKA_VERSION=$value ;;
        suite) RDKAFKA_SUITE=$value ;;
        configure) RDKAFKA_CONFIGURE=$value ;;
        esac
    done < <(grep -v '^[[:space:]]*#' "$conf")
    if [[ -z $RDKAFKA_VERSION || -z $RDKAFKA_SUITE || -z $RDKAFKA_CONFIGURE ]]; then
        echo "setup: $conf needs version=, suite= and configure= lines" >&2
        return 1
    fi
    digest=$(printf '%s %s' "$RDKAFKA_VERSION" "$RDKAFKA_CONFIGURE" | sha256sum | cut -c1-12)
    local cache=${KINGEST_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/kingest}
    RDKAFKA_DIR=${KINGEST_RDKAFKA_DIR:-$cache/librdkafka-$RDKAFKA_VERSION-$digest}
}

# The Debian mirror the source comes from: KINGEST_DEBIAN_MIRROR, else the first Debian archive (…/debian) this
# machine's apt sources name, else deb.debian.org.
rdkafka_mirror() {
    local mirror=${KINGEST_DEBIAN_MIRROR:-}
    if [[ -z $mirror ]]; then
        mirror=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources \
            2>/dev/null | grep -v '^[[:space:]]*#' | grep -oE '(https?|ftp)://[^[:space:]]+/debian/?([[:space:]]|$)' |
            head -n 1 | tr -d '[:space:]' || true)
    fi
    printf '%s\n' "${mirror:-http://deb.debian.org/debian}"
}

# Builds librdkafka into RDKAFKA_DIR unless it is there. Fails with a message that names the step that failed
# and shows the end of its log.
rdkafka_build() { # root
    local root=$1
    rdkafka_conf "$root" || return 1
    [[ -f $RDKAFKA_DIR/lib/librdkafka.a && -f $RDKAFKA_DIR/include/librdkafka/rdkafka.h ]] && return 0
    local parent
    parent=$(dirname "$RDKAFKA_DIR")
    mkdir -p "$parent" || { echo "setup: cannot create $parent for librdkafka's build" >&2; return 1; }
    (
        set -euo pipefail
        exec 9>"$RDKAFKA_DIR.lock"
        if ! flock -n 9; then
            echo "setup: waiting for another setup's build of librdkafka into $RDKAFKA_DIR" >&2
            flock 9
        fi
        # Another setup may have finished it while this one waited.
        [[ -f $RDKAFKA_DIR/lib/librdkafka.a ]] && exit 0
        work="$RDKAFKA_DIR.tmp.$$"
        rm -rf "$RDKAFKA_DIR".tmp.* # left by a build that was stopped: the lock says none is running
        mkdir -p "$work/lists/partial" "$work/cache/archives/partial" "$work/download"
        trap 'rm -rf "$work"' EXIT
        log=$RDKAFKA_DIR.log
        : >"$log"
        fail() { # step
            echo "setup: librdkafka $RDKAFKA_VERSION: $1 failed; the end of $log:" >&2
            tail -n 25 "$log" | sed 's/^/  /' >&2
            exit 1
        }
        mirror=$(rdkafka_mirror)
        echo "setup: building librdkafka $RDKAFKA_VERSION (Debian $RDKAFKA_SUITE's source from $mirror) into $RDKAFKA_DIR" >&2
        echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror $RDKAFKA_SUITE main" \
            >"$work/sources.list"
        apt=(apt-get -q -o Dir::Etc::SourceList="$work/sources.list" -o Dir::Etc::SourceParts=/dev/null
            -o Dir::State::Lists="$work/lists" -o Dir::Cache="$work/cache")
        # As root, apt downloads as the user _apt, who may not enter a private cache (~root is closed to it).
        [[ $(id -u) != 0 ]] || apt+=(-o APT::Sandbox::User=root)
        "${apt[@]}" update --error-on=any >>"$log" 2>&1 || fail "apt-get update of $mirror $RDKAFKA_SUITE (deb-src)"
        (cd "$work/download" && "${apt[@]}" source --download-only "librdkafka=$RDKAFKA_VERSION") >>"$log" 2>&1 ||
            fail "downloading the source package librdkafka=$RDKAFKA_VERSION"
        dsc=("$work"/download/librdkafka_*.dsc)
        [[ -f ${dsc[0]} ]] || fail "downloading the source package librdkafka=$RDKAFKA_VERSION (no .dsc)"
        dpkg-source -x "${dsc[0]}" "$work/src" >>"$log" 2>&1 || fail "unpacking ${dsc[0]##*/} (dpkg-source -x)"
        # shellcheck disable=SC2086 # the options are words
        (cd "$work/src" && ./configure --prefix="$RDKAFKA_DIR" --no-download $RDKAFKA_CONFIGURE) >>"$log" 2>&1 ||
            fail "configure $RDKAFKA_CONFIGURE"
        make -C "$work/src/src" -j"$(nproc)" >>"$log" 2>&1 || fail "make"
        make -C "$work/src/src" install DESTDIR="$work/stage" >>"$log" 2>&1 || fail "make install"
        staged=$work/stage$RDKAFKA_DIR
        # Only the static library: nothing can link the shared one by mistake and then miss it at run time.
        rm -f "$staged"/lib/librdkafka.so* "$staged"/lib/librdkafka-static.a "$staged"/lib/pkgconfig/rdkafka.pc
        printf 'librdkafka %s (Debian %s source package, %s)\nconfigure %s\n' "$RDKAFKA_VERSION" "$RDKAFKA_SUITE" \
            "$mirror" "$RDKAFKA_CONFIGURE" >"$staged/BUILD"
        [[ -f $staged/lib/librdkafka.a && -f $staged/lib/pkgconfig/rdkafka-static.pc ]] ||
            fail "make install (no lib/librdkafka.a or rdkafka-static.pc)"
        if [[ -e $RDKAFKA_DIR ]]; then
            rmdir "$RDKAFKA_DIR" 2>/dev/null ||
                fail "moving the build into $RDKAFKA_DIR, which exists and holds no librdkafka build (remove it)"
        fi
        mv -T "$staged" "$RDKAFKA_DIR" || fail "moving the build into $RDKAFKA_DIR"
        echo "setup: built librdkafka $RDKAFKA_VERSION into $RDKAFKA_DIR" >&2
    )
}
