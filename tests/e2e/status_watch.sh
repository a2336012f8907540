#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `ddpnet status --watch` on a terminal (a tmux pane) and into a file.
#  1. node-a and node-b up (node-c is in the file but never up: a second
#     peer row); in a tmux pane, inside node-a, `status --watch 0.5`
#     takes the alternate screen and hides the cursor; while pings flow
#     a -> b, two captures of the pane: the table is redrawn in place (the
#     header once on the screen, the title on its first line), node-b's
#     row changes between them and shows a non-zero rate each way; once
#     the pings stop its rates fall to 0; `q` ends it with 0, the screen,
#     the cursor and the terminal's modes (stty -g) as they were;
#  2. `--watch 30`: Ctrl-Z gives the screen back while it is stopped and
#     SIGCONT takes it again; a resize redraws at once (no tick comes
#     within 30 s) to the new size -- one row short of the table: "... 2
#     more peers", no line wider than the pane --; Ctrl-C ends it with 0,
#     restored;
#  3. stdout to a file, SIGINT after ~2 s: exit 0, at least two tables,
#     a blank line between each two, not one ESC byte;
#  4. node-a's daemon stopped while watching: exit 1, the terminal
#     restored, and one line saying the daemon stopped.
#
#                    namespace "hub": bridge br0
#         +------------------+
#      p-node-a          p-node-b                  (node-c: no namespace)
#   192.168.241.1/24   192.168.241.2/24
#   ddp0 10.77.0.1     ddp0 10.77.0.2               10.77.0.3
set -eu
. "$(dirname "$0")/lib.sh"
e2e_init status_watch ping tmux awk pgrep

step "namespaces, keys, cluster file; a and b up"
e2e_hub
e2e_node node-a 1 -
e2e_node node-b 2 -
for n in node-a node-b node-c; do e2e_key "$n"; done
cluster_begin "$T/cluster.conf"
cluster_node "$T/cluster.conf" node-a "$(pub node-a)" 10.77.0.1 "$E2E_V4NET.1:$E2E_PORT"
cluster_node "$T/cluster.conf" node-b "$(pub node-b)" 10.77.0.2 "$E2E_V4NET.2:$E2E_PORT"
cluster_node "$T/cluster.conf" node-c "$(pub node-c)" 10.77.0.3
ddp_up node-a
ddp_up node-b
ping_ok node-a 10.77.0.2

# A tmux server of our own (its socket in the scratch directory, no
# configuration), killed by lib.sh's cleanup with the rest.
tm() { tmux -S "$T/tmux.sock" -f /dev/null "$@"; }
# $T/watch.sh TAG ARGS...: in the pane, `ddpnet status ARGS...` inside
# node-a; the terminal's modes before and after (stty -g), its exit
# status into $T/TAG.rc, then it stays, so the pane can still be read.
cat >"$T/watch.sh" <<EOF
#!/bin/bash
tag=\$1; shift
stty -g >"$T/\$tag.stty-before"
nsenter -t "$(cat "$T/node-a/pid")" -m -u -n -- "$DDPNET" status --run-dir "$T/node-a/run" "\$@"
rc=\$?
stty -g >"$T/\$tag.stty-after"
echo "WATCH-ENDED rc=\$rc"
echo "\$rc" >"$T/\$tag.rc"
exec sleep 600
EOF
chmod 700 "$T/watch.sh"

# watch_start TAG COLS ROWS ARGS...: a session TAG running watch.sh.
watch_start() {
    local tag=$1 cols=$2 rows=$3; shift 3
    tm new-session -d -s "$tag" -x "$cols" -y "$rows" "$T/watch.sh $tag $*"
    if [ "${#TMUX_PID[@]}" -eq 0 ]; then
        TMUX_PID=("$(tm display -p '#{pid}')")
        E2E_PIDS+=("${TMUX_PID[0]}")
    fi
    wait_for 10 pane_has "$tag" '^NAME  *ADDRESS' ||
        fail "$tag: no table on the screen within 10 s: $(pane "$tag")"
}
TMUX_PID=()
pane() { tm capture-pane -p -J -t "$1"; }
pane_has() { pane "$1" | grep -q -- "$2"; }
flags() { tm display -p -t "$1" '#{alternate_on} #{cursor_flag}'; }

# watch_ended TAG RC WHY: it exits with RC within 5 s, on the main screen
# with the cursor shown and the terminal's modes as before.
watch_ended() {
    local tag=$1 want=$2 why=$3 got
    wait_for 5 test -s "$T/$tag.rc" ||
        fail "$tag: still running 5 s after $why: $(pane "$tag")"
    got=$(cat "$T/$tag.rc")
    [ "$got" = "$want" ] || fail "$tag: exit $got after $why, want $want: $(pane "$tag")"
    wait_for 2 pane_has "$tag" "WATCH-ENDED" || fail "$tag: the pane after $why: $(pane "$tag")"
    [ "$(flags "$tag")" = "0 1" ] ||
        fail "$tag: after $why, alternate screen and cursor shown are '$(flags "$tag")', want '0 1'"
    cmp -s "$T/$tag.stty-before" "$T/$tag.stty-after" ||
        fail "$tag: terminal modes not restored after $why: $(cat "$T/$tag.stty-before") -> $(cat "$T/$tag.stty-after")"
    ! pane_has "$tag" '^NAME  *ADDRESS' || fail "$tag: the table is left on the screen: $(pane "$tag")"
    say "$tag: exit $got after $why, terminal restored"
}

# screen_ok TAG FILE: one frame, drawn from the top.
screen_ok() {
    local tag=$1 f=$2 n
    n=$(grep -c '^NAME  *ADDRESS' "$f") || true
    [ "$n" -eq 1 ] || fail "$tag: $n column headers on the screen, want 1 (scrolled, not redrawn?): $(cat "$f")"
    n=$(grep -c '^ddp0: node node-a' "$f") || true
    [ "$n" -eq 1 ] || fail "$tag: $n node headers on the screen, want 1: $(cat "$f")"
    head -n 1 "$f" | grep -q '^every ' || fail "$tag: the title is not on the first line: $(cat "$f")"
}

# rates FILE: node-b's "RX/s TX/s" cells, as "N unit N unit".
rates() { awk '$1 == "node-b" { print $(NF-3), $(NF-2), $(NF-1), $NF }' "$1"; }

step "on a terminal: in place, rates while pings flow, q"
watch_start q 160 30 --watch 0.5
[ "$(flags q)" = "1 0" ] || fail "q: alternate screen and cursor shown are '$(flags q)', want '1 0'"
nx_bg node-a pings ping -n -q -i 0.02 -s 1200 -c 200 10.77.0.2
pings=$BG_PID
sleep 1.5
pane q >"$T/q.1"
sleep 1
pane q >"$T/q.2"
for i in 1 2; do
    screen_ok q "$T/q.$i"
    grep -q '^node-b ' "$T/q.$i" || fail "q: no row for node-b: $(cat "$T/q.$i")"
    read -r rx rxu tx txu <<<"$(rates "$T/q.$i")"
    [ -n "$txu" ] && [ "$rx" != 0 ] && [ "$tx" != 0 ] ||
        fail "q: capture $i: node-b's rates are '$rx $rxu $tx $txu' while pings flow: $(cat "$T/q.$i")"
    say "capture $i: node-b receives $rx $rxu, sends $tx $txu"
done
row1=$(grep '^node-b ' "$T/q.1") row2=$(grep '^node-b ' "$T/q.2")
[ "$row1" != "$row2" ] || fail "q: node-b's row did not change in 1 s of pings: $row1"
wait "$pings" || fail "pings a -> b failed: $(cat "$T/node-a/pings.out")"
rates_zero() { pane q | awk '$1 == "node-b" && $(NF-3) == 0 && $(NF-1) == 0 { ok = 1 } END { exit !ok }'; }
wait_for 3 rates_zero ||
    fail "q: node-b's rates are not 0 after the pings ended: $(pane q)"
say "node-b's rates fall to 0 once the pings end"
tm send-keys -t q q
watch_ended q 0 "q"

step "Ctrl-Z and SIGCONT; a resize redraws at once; Ctrl-C"
watch_start cc 160 30 --watch 30
pane cc >"$T/cc.1"
screen_ok cc "$T/cc.1"
flags_are() { [ "$(flags "$1")" = "$2" ]; }
tm send-keys -t cc C-z
wait_for 3 flags_are cc "0 1" || fail "cc: Ctrl-Z: alternate screen and cursor shown are '$(flags cc)', want '0 1'"
# watch.sh's shell has no job control: SIGCONT by hand, to ddpnet (its child).
watcher=$(pgrep -P "$(tm display -p -t cc '#{pane_pid}')" | head -n 1)
[ -n "$watcher" ] || fail "cc: no ddpnet under the pane's shell"
kill -CONT "$watcher"
wait_for 3 flags_are cc "1 0" || fail "cc: SIGCONT: alternate screen and cursor shown are '$(flags cc)', want '1 0'"
wait_for 3 pane_has cc '^NAME  *ADDRESS' || fail "cc: no table after SIGCONT: $(pane cc)"
say "cc: the screen given back on Ctrl-Z, taken again on SIGCONT"
# The frame's lines: the title down to the last peer's row.
rows=$(awk '/^node-[bc] / { last = NR } END { print last }' "$T/cc.1")
[ "$rows" -ge 5 ] || fail "cc: no peer rows: $(cat "$T/cc.1")"
tm resize-window -t cc -x 60 -y "$((rows - 1))"
wait_for 3 pane_has cc '^\.\.\. 2 more peers$' ||
    fail "cc: no redraw to 60x$((rows - 1)) with '... 2 more peers' after the resize: $(pane cc)"
pane cc >"$T/cc.2"
screen_ok cc "$T/cc.2"
wide=$(awk 'length($0) > 60' "$T/cc.2")
[ -z "$wide" ] || fail "cc: lines wider than the 60 columns of the pane: $wide"
say "resized to 60x$((rows - 1)): redrawn at once, cut to the pane"
tm send-keys -t cc C-c
watch_ended cc 0 "Ctrl-C"

step "into a file: plain tables until SIGINT"
nx node-a sh -c 'echo $$ >"$1"; exec "$2" status --run-dir "$3" --watch 0.5' sh \
    "$T/plain.pid" "$DDPNET" "$T/node-a/run" >"$T/plain.out" 2>"$T/plain.err" &
plain=$!
E2E_PIDS+=("$plain")
wait_for 5 test -s "$T/plain.pid" || fail "plain: did not start"
sleep 2.2
kill -INT "$(cat "$T/plain.pid")"
rc=0; wait "$plain" || rc=$?
[ "$rc" -eq 0 ] || fail "plain: exit $rc after SIGINT, want 0: $(cat "$T/plain.err")"
[ ! -s "$T/plain.err" ] || fail "plain: said on stderr: $(cat "$T/plain.err")"
tables=$(grep -c '^NAME  *ADDRESS' "$T/plain.out") || true
blanks=$(grep -c '^$' "$T/plain.out") || true
[ "$tables" -ge 2 ] || fail "plain: $tables tables in 2.2 s at 0.5 s: $(cat "$T/plain.out")"
[ "$blanks" -eq $((tables - 1)) ] ||
    fail "plain: $blanks blank lines between $tables tables: $(cat "$T/plain.out")"
! grep -q $'\033' "$T/plain.out" || fail "plain: escape codes in the file: $(cat -v "$T/plain.out")"
grep -q '^node-b ' "$T/plain.out" || fail "plain: no row for node-b: $(cat "$T/plain.out")"
say "plain: $tables tables, no escape codes, exit 0 on SIGINT"

step "the daemon stops while watching"
watch_start gone 160 30 --watch 0.5
ddp_down node-a
watch_ended gone 1 "the daemon stopped"
pane gone >"$T/gone.1"
msg=$(grep '^ddpnet status' "$T/gone.1") || true
[ "$msg" = "ddpnet status: the daemon of ddp0 stopped" ] ||
    fail "gone: the line on the screen is '$msg': $(cat "$T/gone.1")"
say "gone: '$msg'"
tm kill-server 2>/dev/null || true
