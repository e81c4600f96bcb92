# tests/deps.sh - sourced by tests/run.sh and samples/demo.sh: installs the
# Debian packages tgdb builds with (when run as root and something is
# missing), then configures and builds with CMake.
#   tg_install_deps            apt-get install what is missing (no prompt)
#   tg_build DIR [cmake args]  configure + build into DIR
TG_DEB_PACKAGES="build-essential cmake pkg-config libopenblas-dev libncurses-dev libreadline-dev libgraphviz-dev graphviz libxxhash-dev libzstd-dev libpcre2-dev tmux libxml2-utils python3"
TG_DEB_OPTIONAL="clang libclang-rt-14-dev"

tg_missing_packages() {
    local p missing=""
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
    done
    echo "$missing"
}

tg_install_deps() {
    local missing
    missing=$(tg_missing_packages $TG_DEB_PACKAGES)
    if [ -n "$missing" ]; then
        if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
            echo "== installing Debian packages:$missing"
            export DEBIAN_FRONTEND=noninteractive
            apt-get update -qq </dev/null || echo "warning: apt-get update failed" >&2
            apt-get install -y -qq --no-install-recommends $missing </dev/null
        else
            echo "error: missing Debian packages:$missing (run as root, or: sudo apt-get install$missing)" >&2
            return 1
        fi
    fi
    missing=$(tg_missing_packages $TG_DEB_OPTIONAL)
    if [ -n "$missing" ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        echo "== installing optional Debian packages (fuzzing):$missing"
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing </dev/null \
            || echo "warning: optional packages not installed; fuzzing is skipped" >&2
    fi
}

tg_build() {
    local dir=$1; shift
    local jobs
    jobs=$(nproc 2>/dev/null || echo 2)
    cmake -S "$TG_ROOT" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >"$dir.configure.log" 2>&1 \
        || { cat "$dir.configure.log"; echo "error: cmake configure failed ($dir)" >&2; return 1; }
    cmake --build "$dir" -j "$jobs" ${TG_BUILD_TARGETS:+--target $TG_BUILD_TARGETS}
}
