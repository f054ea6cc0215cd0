# bench_doc.sh: what the benchmarks (scripts/bench, bench-peers, bench-plan) write above their tables in docs/,
# sourced by them.

# Prints "Measured on DATE by `COMMAND` on ARCH, N cores (CPU); kingest VERSION built from commit HASH" (no full
# stop), for the kingest binary BIN and the checkout at ROOT; ", with changes to it" follows the commit when the
# engine, the Lua library or the build differ from it.
bench_measured_on() { # root, bin, command line
    local root=$1 bin=$2 command_line=$3 model version commit
    model=$(sed -n 's/^model name[[:space:]]*: *//p' /proc/cpuinfo 2>/dev/null | head -n 1)
    version=$("$bin" --version 2>/dev/null | sed -n '1s/^kingest //p')
    commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || true)
    if [[ -n $commit ]] && ! git -C "$root" diff --quiet HEAD -- engine lua CMakeLists.txt 2>/dev/null; then
        commit+=", with changes to it"
    fi
    printf 'Measured on %s by `%s` on %s, %s cores%s; kingest %s%s' "$(date -u +%Y-%m-%d)" "$command_line" \
        "$(uname -m)" "$(nproc)" "${model:+ ($model)}" "${version:-?}" "${commit:+ built from commit $commit}"
}
