#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# What gets installed beside the binary, checked (dist/, `make packaging`,
# part of `make test`): `make install` lays out every file with its mode,
# systemd-analyze accepts the unit (and refuses broken copies of it), both
# man pages render without a warning, the bash completion completes, and
# `make deb` builds a package that lists every file, depends on the
# libraries the binary links, and that lintian finds no error in.
# Exits non-zero with one line on the first failure; 77 (skipped) when a
# tool it needs is missing (`make deps-test` installs them).
set -euo pipefail
cd "$(dirname "$0")/.."

fail() { echo "packaging: FAIL: $*" >&2; exit 1; }
ok() { echo "packaging: ok: $*"; }

for tool in systemd-analyze man lintian dpkg-deb dpkg-shlibdeps gzip readelf python3; do
    command -v "$tool" >/dev/null || { echo "packaging: skipped: no $tool (make deps-test)"; exit 77; }
done

tmp=$(mktemp -d /tmp/ddpnet-packaging.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
root=$tmp/root

# --- make install ---------------------------------------------------------------

make --no-print-directory install DESTDIR="$root" PREFIX=/usr >"$tmp/install.log" 2>&1 ||
    fail "make install DESTDIR=$root PREFIX=/usr: $(tail -n 5 "$tmp/install.log")"

# path, mode, type (f: file, d: directory)
expect=(
    "usr/bin/ddpnet 755 f"
    "lib/systemd/system/ddpnet@.service 644 f"
    "usr/share/man/man8/ddpnet.8.gz 644 f"
    "usr/share/man/man5/ddpnet.conf.5.gz 644 f"
    "usr/share/bash-completion/completions/ddpnet 644 f"
    "etc/ddpnet 755 d"
)
for e in "${expect[@]}"; do
    read -r path mode type <<<"$e"
    [[ -e $root/$path ]] || fail "make install did not install /$path"
    [[ $type == d && -d $root/$path ]] || [[ $type == f && -f $root/$path ]] ||
        fail "/$path is not a $([[ $type == d ]] && echo directory || echo file)"
    got=$(stat -c %a "$root/$path")
    [[ $got == "$mode" ]] || fail "/$path has mode $got, expected $mode"
done
# Nothing else: a file installed by mistake shows here.
extra=$(cd "$root" && find . -type f | sed 's|^\./||' | LC_ALL=C sort |
        grep -vxF -e usr/bin/ddpnet -e 'lib/systemd/system/ddpnet@.service' \
                  -e usr/share/man/man8/ddpnet.8.gz -e usr/share/man/man5/ddpnet.conf.5.gz \
                  -e usr/share/bash-completion/completions/ddpnet || true)
[[ -z $extra ]] || fail "make install installed more than expected: $extra"
unit=$root/lib/systemd/system/ddpnet@.service
grep -q '@BINDIR@' "$unit" && fail "the installed unit still says @BINDIR@"
grep -qx 'ExecStart=/usr/bin/ddpnet up --foreground -i %i -c /etc/ddpnet/%i.conf -k /etc/ddpnet/%i.key' \
    "$unit" || fail "the installed unit does not run /usr/bin/ddpnet up --foreground for %i"
for gz in "$root"/usr/share/man/man*/*.gz; do
    gzip -t "$gz" || fail "$gz is not gzip"
    # -n: no name and no time stamp in the header (bytes 4-7 are the mtime).
    [[ $(od -An -tu4 -j4 -N4 "$gz" | tr -d ' ') == 0 ]] || fail "$gz carries a time stamp (gzip -9n)"
done
ok "make install lays out ${#expect[@]} paths with their modes"

# The default prefix puts the unit where systemd reads a local one.
# (Read whole first: grep -q stopping early would kill make -n's long
# output with SIGPIPE, which pipefail takes for a failure.)
local_install=$(make --no-print-directory -s -n install DESTDIR="$tmp/local" PREFIX=/usr/local 2>/dev/null)
grep -q '/usr/local/lib/systemd/system/ddpnet@.service' <<<"$local_install" ||
    fail "PREFIX=/usr/local does not put the unit in /usr/local/lib/systemd/system"

# --- the unit ---------------------------------------------------------------------

# PID 1 here need not be systemd: verify reads the unit file offline. It
# checks that ExecStart= is executable and that Documentation='s man pages
# exist, so the unit is verified as a copy whose binary path points into
# the staging root, with the installed man pages on MANPATH. systemd 252
# exits 0 after "Unknown key" or a value it cannot parse (it ignores
# them): every line it prints counts as a failure too.
verify() {   # unit file -> 0 when systemd-analyze is silent and content
    local dir=$tmp/verify out
    rm -rf "$dir" && mkdir -p "$dir"
    sed "s|/usr/bin/ddpnet|$root/usr/bin/ddpnet|g" "$1" >"$dir/ddpnet@ddp0.service"
    out=$(MANPATH=$root/usr/share/man SYSTEMD_LOG_COLOR=0 \
          systemd-analyze verify "$dir/ddpnet@ddp0.service" 2>&1) || { echo "$out"; return 1; }
    [[ -z $out ]] || { echo "$out"; return 1; }
}
out=$(verify "$unit") || fail "systemd-analyze verify refuses the unit: $out"
broken=$tmp/broken.service
sed 's/^Restart=on-failure/Restartt=on-failure/' "$unit" >"$broken"
verify "$broken" >/dev/null && fail "systemd-analyze verify accepts a unit with an unknown key"
sed 's/^Type=notify/Type=notifyy/' "$unit" >"$broken"
verify "$broken" >/dev/null && fail "systemd-analyze verify accepts a unit with a bad Type="
sed 's|^ExecStart=/usr/bin/ddpnet|ExecStart=/usr/bin/ddpnet-missing|' "$unit" >"$broken"
verify "$broken" >/dev/null && fail "systemd-analyze verify accepts a unit whose binary is missing"
sed 's/^Documentation=.*/Documentation=man:ddpnet-missing(8)/' "$unit" >"$broken"
verify "$broken" >/dev/null && fail "systemd-analyze verify accepts a unit whose man page is missing"
ok "systemd-analyze verify accepts the unit, and refuses 4 broken copies"

# What the service must keep: Type=notify for the daemon's READY=1, the
# reload and the clean-up after a stop, and the sandbox (the exposure
# score is systemd's own, 0 to 10; the unit measured 4.1 on systemd 252).
for line in 'Type=notify' 'NotifyAccess=main' 'ExecReload=/usr/bin/ddpnet reload -i %i' \
            'ExecStopPost=-/usr/bin/ddpnet down -i %i' 'Restart=on-failure' \
            'ConditionPathExists=/etc/ddpnet/%i.conf' 'ProtectSystem=strict' \
            'ReadWritePaths=-/etc/hosts' 'RuntimeDirectory=wireguard' \
            'RuntimeDirectoryPreserve=yes' 'DeviceAllow=/dev/net/tun rw' \
            'CapabilityBoundingSet=CAP_NET_ADMIN CAP_NET_BIND_SERVICE CAP_SETUID CAP_SETGID' \
            'WantedBy=multi-user.target'; do
    grep -qxF "$line" "$unit" || fail "the unit lacks '$line'"
done
# io_uring must stay allowed: no SystemCallFilter that could refuse it.
if grep -q '^SystemCallFilter=' "$unit"; then
    grep -qE '^SystemCallFilter=.*(@system-service|@aio|io_uring)' "$unit" ||
        fail "the unit filters system calls without allowing io_uring"
fi
exposure() {   # unit file -> systemd's overall exposure, as 41 for 4.1
    local dir=$tmp/security
    rm -rf "$dir" && mkdir -p "$dir"
    sed "s|/usr/bin/ddpnet|$root/usr/bin/ddpnet|g" "$1" >"$dir/ddpnet@ddp0.service"
    MANPATH=$root/usr/share/man systemd-analyze security --offline=yes --no-pager \
        "$dir/ddpnet@ddp0.service" 2>/dev/null |
        sed -n 's/.*Overall exposure level for [^:]*: \([0-9]*\)\.\([0-9]\).*/\1\2/p'
}
score=$(exposure "$unit")
[[ -n $score ]] || fail "systemd-analyze security printed no exposure level"
((score <= 50)) || fail "the unit's exposure is $((score / 10)).$((score % 10)), above 5.0"
grep -v -e '^ProtectSystem=' -e '^CapabilityBoundingSet=' -e '^NoNewPrivileges=' \
    -e '^RestrictAddressFamilies=' -e '^ProtectKernel' "$unit" >"$broken"
weak=$(exposure "$broken")
[[ -n $weak ]] && ((weak > score)) ||
    fail "systemd-analyze security does not see the sandbox go ($weak vs $score)"
ok "the unit keeps notify, reload, stop clean-up and its sandbox (exposure $((score / 10)).$((score % 10)); $((weak / 10)).$((weak % 10)) without it)"

# --- man pages ----------------------------------------------------------------------

for page in ddpnet.8 ddpnet.conf.5; do
    sect=${page##*.}
    file=$root/usr/share/man/man$sect/$page.gz
    err=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$file" 2>&1 >"$tmp/$page.txt") ||
        fail "man -l $page failed: $err"
    [[ -z $err ]] || fail "man --warnings -l $page: $err"
    [[ $(wc -l <"$tmp/$page.txt") -gt 50 ]] || fail "$page renders to almost nothing"
done
# man itself must see a broken page, or the check above proves nothing.
printf '.TH X 1\n.SH NAME\nx \\- y\n.XX undefined\n' >"$tmp/bad.1"
err=$(LC_ALL=C.UTF-8 man --warnings -l "$tmp/bad.1" 2>&1 >/dev/null || true)
[[ -n $err ]] || fail "man --warnings does not report an undefined macro"
# Every verb and every option of the CLI is in ddpnet(8) (the verb table
# of overlay/cli/main.c, the option tables of overlay/cli/cli_args.c and
# of `ddpnet authority`, overlay/cli/cli_authority.c).
verbs=$(sed -n 's/^ *{ "\([a-z]*\)", *cli_[a-z]*,.*/\1/p' overlay/cli/main.c)
[[ $(wc -w <<<"$verbs") -ge 8 ]] || fail "cannot read the verbs from overlay/cli/main.c"
opts=$(sed -n 's/^ *{ CLI_OPT_[A-Z_]*, *\(0\|'"'"'\(.\)'"'"'\), *"\([a-z-]*\)".*/\2 \3/p' overlay/cli/cli_args.c)
[[ $(wc -l <<<"$opts") -ge 9 ]] || fail "cannot read the options from overlay/cli/cli_args.c"
auth_opts=$(sed -n 's/^ *{ AUTH_OPT_[A-Z_]*, *\(0\|'"'"'\(.\)'"'"'\), *"\([a-z-]*\)".*/\2 \3/p' overlay/cli/cli_authority.c)
[[ $(wc -l <<<"$auth_opts") -ge 10 ]] || fail "cannot read the options from overlay/cli/cli_authority.c"
opts+=$'\n'$auth_opts
page8=$(sed 's/\xe2\x80\x90/-/g' "$tmp/ddpnet.8.txt")
for v in $verbs; do
    grep -qE "^ {7}$v( |$)" <<<"$page8" || fail "ddpnet(8) has no entry for the verb $v"
done
while read -r short long; do
    [[ -n $long ]] || { long=$short; short=; }
    grep -qE -- "(^|[ ,(])--$long([ =,]|$)" <<<"$page8" || fail "ddpnet(8) does not describe --$long"
    [[ -z $short ]] || grep -qE -- "(^|[ ,(])-$short([ ,]|$)" <<<"$page8" ||
        fail "ddpnet(8) does not describe -$short"
done <<<"$opts"
# Every key of the cluster file (the key tables of config/cluster_keys.c)
# is in ddpnet.conf(5).
keys=$(sed -n 's/^ *\[CLUSTER_[A-Z_]*KEY_[A-Z_]*\] *= *[A-Z_]*( *"\([a-z-]*\)".*/\1/p' config/cluster_keys.c)
# Every entry of both tables is read (the tables' size is their enum's).
want=$(grep -cE '^ *\[CLUSTER_[A-Z_]*KEY_[A-Z_]*\] *=' config/cluster_keys.c)
[[ $(wc -w <<<"$keys") -ge 12 && $(wc -w <<<"$keys") -eq $want ]] ||
    fail "cannot read the keys from config/cluster_keys.c ($(wc -w <<<"$keys") of $want)"
page5=$(sed 's/\xe2\x80\x90/-/g' "$tmp/ddpnet.conf.5.txt")
# An entry is a tagged paragraph (.TP) whose tag begins with the key: a
# key named only in EXAMPLE does not count.
tags5=$(gzip -dc "$root/usr/share/man/man5/ddpnet.conf.5.gz" |
        awk 'prev == ".TP" { print } { prev = $0 }' | sed 's/\\-/-/g')
for k in $keys; do
    grep -qE "^ {7}$k = " <<<"$page5" && grep -qE "^\.B[IR]? \"?$k[ \"]" <<<"$tags5" ||
        fail "ddpnet.conf(5) has no entry for the key $k"
done
ok "both man pages render with no warning; ddpnet(8) covers $(wc -w <<<"$verbs") verbs and $(wc -l <<<"$opts") options, ddpnet.conf(5) $(wc -w <<<"$keys") keys"

# The environment variables the code reads (DDPNET_*) and the metric
# families it serves are in ddpnet(8) too. The man pages are the one
# reference: README.md and docs/ link to them rather than list these, so
# a verb, option, key, variable or metric added to the code and not to
# its page fails here.
envs=$(grep -rhoE '"DDPNET_[A-Z0-9_]+"' overlay config crypto tun | tr -d '"' | sort -u)
[[ $(wc -w <<<"$envs") -ge 3 ]] || fail "cannot read the DDPNET_* variables from the sources"
for e in $envs; do
    grep -qE "^ {7}$e( |=|$)" <<<"$page8" || fail "ddpnet(8) has no entry for \$$e (ENVIRONMENT)"
done
metrics=$(grep -ohE '"(ddpnet|wireguard)_[a-z_]+"' overlay/control/metrics.c | tr -d '"' | sort -u)
[[ $(wc -w <<<"$metrics") -ge 15 ]] || fail "cannot read the metric families from overlay/control/metrics.c"
for m in $metrics; do
    grep -qE "(^|[ ,])$m(,|$| )" <<<"$page8" || fail "ddpnet(8) (METRICS) does not name $m"
done
ok "ddpnet(8) names the $(wc -w <<<"$envs") DDPNET_* variables and $(wc -w <<<"$metrics") metric families"

# --- examples/ ---------------------------------------------------------------------

# The annotated cluster files the docs point to pass `ddpnet check`.
n=0
for ex in examples/*.conf; do
    out=$("$root/usr/bin/ddpnet" check -c "$ex" 2>&1) || fail "ddpnet check -c $ex: $out"
    n=$((n + 1))
done
((n >= 4)) || fail "examples/ holds $n cluster files, expected 4 or more"
ok "ddpnet check passes the $n cluster files of examples/"

# --- bash completion -----------------------------------------------------------------

comp=$root/usr/share/bash-completion/completions/ddpnet
bash -n "$comp" || fail "the bash completion does not parse"
mkdir -p "$tmp/run" && : >"$tmp/cluster.conf"
python3 -c 'import socket,sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$tmp/run/ddpx7.sock" 2>/dev/null ||
    fail "cannot make a socket for the completion test"
# complete WORD... -> the candidates for the last word, one a line
complete_words() {
    bash --norc --noprofile -c '
        source "$1"; shift
        COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
        COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
        _ddpnet ddpnet "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
        printf "%s\n" "${COMPREPLY[@]}"' _ "$comp" "$@"
}
has() {   # has CANDIDATE WORD... : the completion of WORD... offers CANDIDATE
    local want=$1 got; shift
    got=$(complete_words "$@") || fail "completing '$*' failed"
    grep -qxF -- "$want" <<<"$got" || fail "completing '$*' does not offer $want (offers: ${got//$'\n'/ })"
}
lacks() {
    local want=$1 got; shift
    got=$(complete_words "$@") || fail "completing '$*' failed"
    ! grep -qxF -- "$want" <<<"$got" || fail "completing '$*' offers $want"
}
bash --norc --noprofile -c 'source "$1"; complete -p ddpnet' _ "$comp" >/dev/null ||
    fail "the completion file does not register a completion for ddpnet"
for v in $verbs; do has "$v" ddpnet ""; done
has status ddpnet st
has version ddpnet vers
has check ddpnet help ch
lacks --json ddpnet help ""
has --key ddpnet check --k
has --watch ddpnet status --w
has --json ddpnet status -
has --foreground ddpnet up --f
has --hosts-file ddpnet up --h
has --master ddpnet env --m
has --rate ddpnet doctor --r
has --json ddpnet doctor --j
has sign ddpnet authority s
has --name-prefix ddpnet authority token --name-
has --public-key ddpnet authority sign --pub
lacks --max ddpnet authority sign --m
lacks --json ddpnet down -
lacks --watch ddpnet up -
has ddpx7 ddpnet status --run-dir "$tmp/run" -i ""
has ddpx7 ddpnet down --run-dir = "$tmp/run" --interface ""
has "$tmp/cluster.conf" ddpnet up -c "$tmp/clu"
has "$tmp/cluster.conf" ddpnet check --cluster = "$tmp/clu"
has "$tmp/run" ddpnet up --run-dir "$tmp/ru"
lacks "$tmp/cluster.conf" ddpnet up --run-dir "$tmp/clu"
ok "bash completion offers the verbs, each verb's options, interfaces, files and directories"

# --- make deb -----------------------------------------------------------------------

make --no-print-directory deb >"$tmp/deb.log" 2>&1 || fail "make deb: $(tail -n 5 "$tmp/deb.log")"
deb=$(sed -n 's/^built //p' "$tmp/deb.log")
# The VERSION file's version, with the Debian revision 1; `ddpnet
# --version` says it too, or git describe's name of a commit past its tag
# (the Makefile), and CHANGELOG.md's latest section is it.
upstream=$(cat VERSION)
built=$(make --no-print-directory -s version)
[[ $built == "$upstream" || $built == "$upstream"-* ]] ||
    fail "make version says $built, not VERSION's $upstream or a name past its tag"
[[ $(bin/ddpnet --version) == "ddpnet $built" ]] || fail "bin/ddpnet --version is not $built"
grep -m1 '^## ' CHANGELOG.md | grep -q "^## $upstream " ||
    fail "CHANGELOG.md's latest section is not $upstream: $(grep -m1 '^## ' CHANGELOG.md)"
version=$upstream-1
arch=$(dpkg --print-architecture)
[[ $deb == "build/ddpnet_${version}_${arch}.deb" && -f $deb ]] ||
    fail "make deb did not build build/ddpnet_${version}_${arch}.deb (said: ${deb:-nothing})"
dpkg-deb -c "$deb" >"$tmp/contents" || fail "dpkg-deb -c $deb failed"
for path in ./usr/bin/ddpnet './lib/systemd/system/ddpnet@.service' \
            ./usr/share/man/man8/ddpnet.8.gz ./usr/share/man/man5/ddpnet.conf.5.gz \
            ./usr/share/bash-completion/completions/ddpnet ./etc/ddpnet/ \
            ./usr/share/doc/ddpnet/copyright ./usr/share/doc/ddpnet/changelog.Debian.gz; do
    awk '{print $6}' "$tmp/contents" | grep -qxF -- "$path" || fail "$deb lacks $path"
done
awk '$2 != "root/root" {bad = 1} END {exit bad}' "$tmp/contents" || fail "$deb has files not owned by root"
grep -E ' \./usr/bin/ddpnet$' "$tmp/contents" | grep -q '^-rwxr-xr-x' || fail "$deb's ddpnet is not mode 0755"
grep -E ' \./etc/ddpnet/$' "$tmp/contents" | grep -q '^drwxr-xr-x' || fail "$deb's /etc/ddpnet is not mode 0755"
dpkg-deb -I "$deb" >"$tmp/info" || fail "dpkg-deb -I $deb failed"
[[ $(dpkg-deb -f "$deb" Version) == "$version" ]] || fail "$deb's Version is not $version"
depends=$(dpkg-deb -f "$deb" Depends)
# Every library the binary links itself (NEEDED; not what those pull in),
# by the package that holds it.
needed=$(readelf -d bin/ddpnet | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
[[ -n $needed ]] || fail "readelf shows no library that bin/ddpnet needs"
for soname in $needed; do
    lib=$(ldd bin/ddpnet | awk -v s="$soname" '$1 == s && $3 ~ /^\// {print $3}')
    [[ -n $lib ]] || fail "ldd does not find $soname"
    # dpkg knows a file by the path its package ships it at: with a merged
    # /usr that is /lib/... or /usr/lib/..., whichever ldd did not say.
    pkg=$( { dpkg -S "$lib" || dpkg -S "$(readlink -f "$lib")"; } 2>/dev/null | sed -n '1s/:.*//p')
    [[ -n $pkg ]] || fail "no package holds $lib"
    grep -qE "(^|, )$pkg( |,|$)" <<<"$depends" || fail "$deb does not depend on $pkg (for $lib): $depends"
done
for pkg in libsodium23 libmnl0 liburing2 adduser; do
    grep -qE "(^|, )$pkg( |,|$)" <<<"$depends" || fail "$deb does not depend on $pkg: $depends"
done
grep -qE '^ Recommends: .*wireguard-tools' "$tmp/info" || fail "$deb does not recommend wireguard-tools"
for script in postinst prerm postrm; do
    grep -qE "^ +[0-9]+ bytes, +[0-9]+ lines +\* +$script " "$tmp/info" ||
        fail "$deb has no executable $script"
done
dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./postinst | grep -q 'adduser --system --group' ||
    fail "$deb's postinst does not make the ddpnet user"
ok "make deb built $deb: files, modes, owner, Depends: $depends"

rc=0
lintian --tag-display-limit 0 "$deb" >"$tmp/lintian" 2>&1 || rc=$?
# 0: no error, 1: errors found; anything else: lintian itself failed.
((rc <= 1)) || fail "lintian did not run (exit $rc): $(head -n 3 "$tmp/lintian")"
if ((rc == 1)) || grep -q '^E: ' "$tmp/lintian"; then
    fail "lintian finds errors in $deb: $(grep '^E: ' "$tmp/lintian" | tr '\n' ';')"
fi
# lintian itself must see an error, or the check above proves nothing: the
# same package without its copyright file.
mkdir -p "$tmp/bad" && dpkg-deb -R "$deb" "$tmp/bad/root" && rm "$tmp/bad/root/usr/share/doc/ddpnet/copyright"
sed -i '/usr\/share\/doc\/ddpnet\/copyright$/d' "$tmp/bad/root/DEBIAN/md5sums"
dpkg-deb --root-owner-group --build "$tmp/bad/root" "$tmp/bad/ddpnet.deb" >/dev/null
bad=$(lintian "$tmp/bad/ddpnet.deb" 2>&1 || true)
grep -q '^E: .*no-copyright-file' <<<"$bad" ||
    fail "lintian does not report an error in a package without a copyright file"
ok "lintian: no errors in $deb ($(grep -c '^W: ' "$tmp/lintian" || true) warnings)"

# The licence: LICENSE (MIT, SPDX's name; Debian calls it Expat), and the
# package's copyright file in Debian's machine-readable format (DEP-5):
# its Format line, a Files: * paragraph naming a licence that a
# stand-alone License paragraph states, with LICENSE's words.
copyright=dist/deb/copyright
head -n 1 "$copyright" | grep -qx 'Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/' ||
    fail "$copyright does not start with DEP-5's Format line"
short=$(awk '/^Files: \*$/ {f = 1} f && /^License: / {print $2; exit}' "$copyright")
[[ $short == Expat ]] || fail "$copyright's Files: * paragraph names licence '${short:-none}', not Expat (MIT)"
awk -v s="License: $short" 'prev == "" && $0 == s {found = 1} {prev = $0} END {exit !found}' "$copyright" ||
    fail "$copyright has no stand-alone License: $short paragraph"
words() { tr -s ' \n.' ' ' | sed 's/^ //; s/ $//'; }
grant=$(sed -n '/^Permission is hereby granted/,$p' LICENSE | words)
stated=$(awk -v s="License: $short" 'prev == "" && $0 == s {f = 1} {prev = $0} f && /^ / {print; next}
                                      f && $0 != s {exit}' "$copyright" |
    sed 's/^ //' | words)
[[ -n $grant && $grant == "$stated" ]] || fail "$copyright's $short text is not LICENSE's"
dpkg-deb --fsys-tarfile "$deb" | tar -xO ./usr/share/doc/ddpnet/copyright | cmp -s - "$copyright" ||
    fail "$deb's copyright file is not $copyright"
ok "licence: LICENSE is MIT, $deb's copyright says so in DEP-5 (Expat)"
echo "packaging: all checks passed"
