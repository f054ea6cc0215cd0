# bash completion for kingest: commands, state commands, each command's options, job files and option values.
# Installed as <prefix>/share/bash-completion/completions/kingest; without bash-completion, source this file.
# Needs nothing of bash-completion's helpers.

# Options of each command (a state command is "state-<name>"), and the options that take a value.
_kingest_options() {
    local log="-l --log-level --log-file --log-format"
    case $1 in
    run) echo "-w --work-dir -l --log-level --log-file --log-format --strict -h --help" ;;
    plan) echo "-j --json -w --work-dir -l --log-level --log-file --log-format --strict -h --help" ;;
    validate) echo "-w --work-dir --strict $log -h --help" ;;
    test) echo "-t --topic -p --partition -f --format -k --key-separator --timestamp -w --work-dir --strict $log -h --help" ;;
    run-task) echo "-w --work-dir -l --log-level --log-file --log-format -h --help" ;;
    properties) echo "--markdown -h --help" ;;
    state) echo "-h --help" ;;
    state-show) echo "-j --json -w --work-dir -s --state-store-dir $log -h --help" ;;
    state-history) echo "-j --json -n --limit -w --work-dir -s --state-store-dir $log -h --help" ;;
    state-set-offset) echo "--dry-run --force -w --work-dir -s --state-store-dir $log -h --help" ;;
    state-reset) echo "-y --yes --dry-run -w --work-dir -s --state-store-dir $log -h --help" ;;
    esac
}

_kingest_takes_value() {
    case $1 in
    -w | --work-dir | -l | --log-level | --log-file | --log-format | -s | --state-store-dir | -n | --limit | \
        -t | --topic | -p | --partition | -f | --format | -k | --key-separator | --timestamp) return 0 ;;
    esac
    return 1
}

# Adds to COMPREPLY the job files (*.lua, *.pull, *.properties, *.job, *.conf) and folders matching $1.
_kingest_job_files() {
    local f
    compopt -o filenames 2>/dev/null
    while IFS= read -r f; do
        if [[ -d $f ]]; then
            COMPREPLY+=("$f")
        else
            case $f in
            *.lua | *.pull | *.properties | *.job | *.conf) COMPREPLY+=("$f") ;;
            esac
        fi
    done < <(compgen -f -- "$1")
}

# Adds to COMPREPLY the values of option $1 that start with $2.
_kingest_values() {
    local opt=$1 cur=$2
    case $opt in
    -l | --log-level) COMPREPLY+=($(compgen -W "debug info warn error" -- "$cur")) ;;
    --log-format) COMPREPLY+=($(compgen -W "text json" -- "$cur")) ;;
    -f | --format) COMPREPLY+=($(compgen -W "lines length-prefixed" -- "$cur")) ;;
    -w | --work-dir | -s | --state-store-dir)
        compopt -o filenames 2>/dev/null
        COMPREPLY+=($(compgen -d -- "$cur"))
        ;;
    --log-file)
        compopt -o filenames 2>/dev/null
        COMPREPLY+=($(compgen -f -- "$cur"))
        ;;
    esac
}

_kingest() {
    COMPREPLY=()
    local cword=$COMP_CWORD cur=${COMP_WORDS[COMP_CWORD]}
    local words=("${COMP_WORDS[@]:0:COMP_CWORD}")
    local commands="run plan validate test state properties run-task help version"

    # --opt=value: with '=' in COMP_WORDBREAKS (the default) bash splits it into "--opt" "=" "value".
    if [[ $cur == = ]]; then
        _kingest_values "${words[cword - 1]}" ""
        return 0
    fi
    if ((cword >= 2)) && [[ ${words[cword - 1]} == = ]]; then
        _kingest_values "${words[cword - 2]}" "$cur"
        return 0
    fi
    if [[ $cur == --*=* ]]; then
        local opt=${cur%%=*} before=${#COMPREPLY[@]}
        _kingest_values "$opt" "${cur#*=}"
        local i
        for ((i = before; i < ${#COMPREPLY[@]}; i++)); do COMPREPLY[i]=$opt=${COMPREPLY[i]}; done
        return 0
    fi

    if ((cword == 1)); then
        COMPREPLY=($(compgen -W "$commands -h --help -V --version" -- "$cur"))
        return 0
    fi

    local cmd=${words[1]} key=${words[1]} first=2
    if [[ $cmd == state ]]; then
        if ((cword == 2)); then
            COMPREPLY=($(compgen -W "show history set-offset reset -h --help" -- "$cur"))
            return 0
        fi
        key=state-${words[2]}
        first=3
    fi
    if [[ $cmd == help ]]; then
        ((cword == 2)) && COMPREPLY=($(compgen -W "$commands" -- "$cur"))
        return 0
    fi

    # The value of the option before the cursor.
    if _kingest_takes_value "${words[cword - 1]}"; then
        _kingest_values "${words[cword - 1]}" "$cur"
        return 0
    fi

    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$(_kingest_options "$key")" -- "$cur"))
        return 0
    fi

    # Which positional argument the cursor is on: option values and --opt=value are not positional.
    local i n=0
    for ((i = first; i < cword; i++)); do
        if [[ ${words[i]} == = ]]; then
            ((i++))
        elif [[ ${words[i]} == -* ]]; then
            _kingest_takes_value "${words[i]}" && [[ ${words[i + 1]:-} != = ]] && ((i++))
        else
            ((n++))
        fi
    done
    case $key:$n in
    run:0 | plan:0 | validate:0 | test:0 | run-task:0 | state-show:0 | state-history:0 | state-set-offset:0 | \
        state-reset:0)
        _kingest_job_files "$cur"
        ;;
    state-set-offset:2) COMPREPLY=($(compgen -W "earliest latest" -- "$cur")) ;;
    esac
    return 0
}

complete -F _kingest kingest
