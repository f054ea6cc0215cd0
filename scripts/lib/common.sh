# scripts/lib/common.sh: what the service scripts (scripts/kafka, scripts/hadoop, scripts/registry, scripts/kdc) and the
# developer scripts share: messages, checks of the command line and of the tools, free ports, the state folder's
# lock, the pids of daemons and their stopping, Maven fetches, and help texts. Sourced, never run.
#
# The sourcing script sets, before it calls these:
#   SCRIPT_NAME   the prefix of its messages ("kafka" prints "kafka: ...")
#   PROG          how it is called in usage lines ("scripts/kafka")
#   COMMANDS      its commands, separated by blanks (for is_command and run_help)
#   STATE         its state folder (for lock_state)
#   STOP_TIMEOUT  seconds between SIGTERM and SIGKILL (for stop_pid)
# and defines usage [COMMAND], which prints the help of COMMAND, or the general help without one.

# An error: the message on stderr, exit status 1.
die() { echo "$SCRIPT_NAME: $*" >&2; exit 1; }
# A command line that is not right: "SCRIPT_NAME: usage: PROG $*" on stderr, exit status 2.
usage_error() { echo "$SCRIPT_NAME: usage: $PROG $*" >&2; exit 2; }
# Progress on stderr.
say() { echo "$SCRIPT_NAME: $*" >&2; }

# Dies unless each of the commands given is in PATH.
need() {
    local c
    for c in "$@"; do command -v "$c" >/dev/null 2>&1 || die "'$c' not found in PATH"; done
}

is_uint() { [[ $1 =~ ^[0-9]+$ ]]; }

# Whether $1 is one of COMMANDS.
is_command() {
    local c
    for c in $COMMANDS; do [[ $1 == "$c" ]] && return 0; done
    return 1
}

# What every command line of a service script shares, given the script's arguments: "-h" and "--help" print the
# general help, "help [COMMAND]" the help of COMMAND, no command at all the general help on stderr (exit 2), and
# an unknown command is a usage error. A COMMAND followed by -h or --help anywhere prints its help; for a
# command in OWN_OPTIONS (blank-separated), whose arguments are options of another tool, only a leading --help
# does. Returns 0 when it printed a help text (the script is done), 1 when the command is to run.
run_help() {
    local cmd=${1:-} a
    case $cmd in
    -h | --help) usage; return 0 ;;
    "") usage >&2; exit 2 ;;
    help)
        [[ -z ${2:-} ]] || is_command "$2" || usage_error "help [COMMAND] (unknown command '$2')"
        usage "${2:-}"
        return 0
        ;;
    esac
    is_command "$cmd" || usage_error "COMMAND ... (unknown command '$cmd'; see $PROG --help)"
    shift
    if [[ " ${OWN_OPTIONS:-} " == *" $cmd "* ]]; then
        [[ ${1:-} == --help ]] && { usage "$cmd"; return 0; }
    else
        for a in "$@"; do
            [[ $a == -h || $a == --help ]] && { usage "$cmd"; return 0; }
        done
    fi
    return 1
}

# The help text of a developer script: the comment block at the top of FILE (from its second line to the first
# line that is not a comment), without the comment marks.
header_help() {
    awk 'NR == 1 { next } !/^#/ { exit } { sub(/^# ?/, ""); print }' "$1"
}

# N distinct free loopback ports, on one line (the sockets stay bound until all are picked).
free_ports() {
    python3 -c '
import socket, sys
socks = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(*(s.getsockname()[1] for s in socks))
' "$1"
}

# Serialises the commands that start and stop daemons on one state folder. fd 9 holds the lock: a daemon is
# started with 9>&-, so that it does not hold the lock for its whole life.
lock_state() {
    mkdir -p "$STATE"
    exec 9>"$STATE/lock"
    flock 9
}

# Prints the pid in PIDFILE if that process is alive and its command line (its arguments joined by blanks, with a
# blank after the last) holds MARKER: so that a stale pid file whose pid got reused by something else is not
# mistaken for the daemon. Fails otherwise.
pid_of() {
    local pidfile=$1 marker=$2 pid
    [[ -f $pidfile ]] || return 1
    pid=$(<"$pidfile")
    is_uint "$pid" && [[ -r /proc/$pid/cmdline ]] || return 1
    tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "$marker" || return 1
    echo "$pid"
}

# Stops process PID, called WHAT in the messages, with SIGNAL (default TERM, then said in the message), and waits
# until it is gone: after STOP_TIMEOUT seconds, SIGKILL.
stop_pid() {
    local what=$1 pid=$2 signal=${3:-} i
    say "stopping $what pid $pid${signal:+ (SIG$signal)}"
    kill "-${signal:-TERM}" "$pid" 2>/dev/null || true
    for ((i = 0; i < STOP_TIMEOUT * 5; i++)); do
        [[ -e /proc/$pid ]] || break
        sleep 0.2
    done
    if [[ -e /proc/$pid ]]; then
        say "$what did not stop within ${STOP_TIMEOUT}s; killing it"
        kill -KILL "$pid" 2>/dev/null || true
        while [[ -e /proc/$pid ]]; do sleep 0.1; done
    fi
}

# The last 30 lines of each FILE that is not empty, on stderr, each under "--- tail of FILE".
show_tails() {
    local f
    for f in "$@"; do
        [[ -s $f ]] || continue
        echo "--- tail of $f" >&2
        tail -n 30 "$f" >&2
    done
}

# Runs Maven quietly (mvn -B -q ARGS...) to fetch WHAT. Its output is shown only on failure, minus the colour
# codes Maven 3.8 emits even with -B; then it dies with "Maven could not fetch WHAT (see above)".
mvn_fetch() {
    local what=$1 out
    shift
    out=$(mvn -B -q "$@" 2>&1) || {
        sed 's/\x1b\[[0-9;]*m//g' <<<"$out" >&2
        die "Maven could not fetch $what (see above)"
    }
}
