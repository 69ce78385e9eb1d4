#!/usr/bin/env bash
# Times README command 1 (scripts/run_lenet.sh) on a fresh Debian 12, apt
# included: a debootstrap --variant=minbase chroot in DIR (default
# /srv/fresh), restored from DIR.tar before each run, with a fresh clone of
# REPO's BRANCH in /root/xtrain. Root only; it deletes DIR first.
#   bench/fresh_debian_first_run.sh NAME [REPO [BRANCH]]
# Writes NAME.log (each line prefixed with the seconds since the start),
# NAME.load (load average and top's busiest processes every 15 s) and
# NAME.meta (start, end, exit status, CPU time) into the working directory,
# and prints the minutes of apt, build, first iteration and end.
# Afterwards: rm -rf DIR DIR.tar (several GB).
set -u
NAME=$1
REPO=${2:-$(cd "$(dirname "$0")/.." && pwd)}
BRANCH=${3:-$(git -C "$REPO" rev-parse --abbrev-ref HEAD)}
R=${DIR:-/srv/fresh}
OUT=$PWD

unmount() { for m in dev/pts dev proc sys; do mountpoint -q "$R/$m" && umount "$R/$m"; done; }
unmount
if [ ! -f "$R.tar" ]; then
  command -v debootstrap >/dev/null || apt-get install -y debootstrap
  rm -rf "$R"
  debootstrap --variant=minbase bookworm "$R" http://deb.debian.org/debian || exit 1
  # As on a cloud image: bookworm, its updates and security, no package lists yet.
  rm -f "$R/etc/apt/sources.list"
  cat > "$R/etc/apt/sources.list.d/debian.sources" <<'EOF'
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
  rm -rf "$R/var/lib/apt/lists/"*
  mkdir -p "$R/var/lib/apt/lists/partial"
  cp /etc/resolv.conf "$R/etc/resolv.conf"
  tar -C "$R" -cpf "$R.tar" .
fi
rm -rf "$R" && mkdir -p "$R" && tar -C "$R" -xpf "$R.tar"
git clone -q -b "$BRANCH" "$REPO" "$R/root/xtrain" || exit 1
for m in proc sys dev dev/pts; do mount --bind "/$m" "$R/$m"; done

{ echo "commit $(git -C "$R/root/xtrain" log --oneline -1)"; echo "start $(date -Is)"; uptime; } > "$OUT/$NAME.meta"
( while true; do
    echo "$(date +%T) $(cat /proc/loadavg) | $(top -b -n 2 -d 1 -w 200 |
      awk '/^top -/{f++} f==2 && $1 ~ /^[0-9]+$/ && n<5 {print $9"% "$12; n++}' | tr '\n' ';')"
    sleep 14
  done ) > "$OUT/$NAME.load" &
sampler=$!
T0=${EPOCHREALTIME/./}
TIMEFORMAT="cpu: real %R s, user %U s, sys %S s"
{ time {
  script -q -f -e -c "chroot $R /usr/bin/env -i HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin \
TERM=dumb LANG=C.UTF-8 bash -c 'cd /root/xtrain && scripts/run_lenet.sh'" /dev/null |
    while IFS= read -r line; do
      t=$(( ${EPOCHREALTIME/./} - T0 ))
      printf '%d.%03d %s\n' $((t / 1000000)) $(((t / 1000) % 1000)) "$line"
    done > "$OUT/$NAME.log"
  rc=${PIPESTATUS[0]}
}; } 2>> "$OUT/$NAME.meta"
kill $sampler
{ echo "end $(date -Is), exit status $rc"; uptime; } >> "$OUT/$NAME.meta"
unmount

minutes() { awk -v s="$1" 'BEGIN { if (s == "") print "-"; else { s = int(s + 0.5); printf "%d:%02d", s / 60, s % 60 } }'; }
apt_end=$(grep -m1 -a -- '-- The C compiler identification' "$OUT/$NAME.log" | cut -d' ' -f1)
build_end=$(grep -a 'Built target' "$OUT/$NAME.log" | tail -1 | cut -d' ' -f1)
first=$(grep -m1 -a '\] Iteration ' "$OUT/$NAME.log" | cut -d' ' -f1)
end=$(tail -1 "$OUT/$NAME.log" | cut -d' ' -f1)
build=$(awk -v a="${apt_end:-0}" -v b="${build_end:-0}" 'BEGIN { print b - a }')
echo "$NAME: apt $(minutes "$apt_end"), build $(minutes "$build") (ends at $(minutes "$build_end")), first iteration $(minutes "$first"), end $(minutes "$end") (exit status $rc)"
grep -a 'Final test net #0.*accuracy' "$OUT/$NAME.log" | sed 's/.*\] //'
grep -a 'Setting up [^ ]* (' "$OUT/$NAME.log" | grep -vc '\] ' | sed 's/$/ packages installed/'
awk '{print $2}' "$OUT/$NAME.load" | sort -n |
  awk '{a[NR] = $1} END {print "load average (1 min): min " a[1] ", median " a[int((NR + 1) / 2)] ", max " a[NR]}'
exit "$rc"
