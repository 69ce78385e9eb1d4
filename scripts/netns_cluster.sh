#!/usr/bin/env bash
# A cluster of "nodes" inside this machine: each node is a Linux network
# namespace with its own address and host name, joined to the others by a
# veth pair and a bridge (the "switch", in a namespace of its own), so Open
# MPI sees separate hosts that talk TCP and nothing else. `tc netem` gives
# each node's link a bandwidth and a delay; a link can be cut and restored.
# Needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN), iproute2 and util-linux.
#
#   scripts/netns_cluster.sh [--name C] up N [--rate 1gbit] [--delay 100us] [--owner PID]
#   scripts/netns_cluster.sh [--name C] down
#   scripts/netns_cluster.sh [--name C] mpirun [mpirun arguments]   # from node 0, TCP only
#   scripts/netns_cluster.sh [--name C] exec I COMMAND...          # run COMMAND on node I
#   scripts/netns_cluster.sh [--name C] link I up|down              # cut / restore node I
#   scripts/netns_cluster.sh [--name C] shape I [--rate R] [--delay D]
#   scripts/netns_cluster.sh [--name C] status
#   scripts/netns_cluster.sh check      # exit 0 if namespaces can be made here, else 77
#   scripts/netns_cluster.sh sweep      # remove clusters whose owner process is gone
#
# Cluster C (default "xtc"; letters and digits, at most 12) is the namespaces
# C-n0 ... C-n{N-1} and C-sw. Node i has the address 10.77.0.(i+1)/24 on its
# eth0 and the host name C-ni (a UTS namespace per command run there). Every
# address lives inside the cluster's own namespaces, so clusters of the same
# subnet run side by side without meeting (parallel tests) and nothing is
# sent outside this machine.
#
# The link model: --rate limits both directions of each node's link (netem on
# the node's eth0 and on its switch port), --delay is added once each way
# (on the node's eth0 and on its switch port), so a node-to-node round trip
# takes 4x the delay (4 x 100us = 400us). `link I down` sets node I's switch
# port down: the node's packets are dropped silently, as when a switch port or
# cable fails, and no side gets an error.
#
# With --owner PID, a guard process (setsid, outside the caller's process
# group) removes the cluster once PID is gone, even if the caller was killed
# with SIGKILL; `up` and `sweep` also remove clusters of dead owners found in
# the state directory. `down` kills the processes still running in the nodes.
set -euo pipefail

readonly STATE_ROOT=${XTRAIN_NETNS_STATE_DIR:-/run/xtrain-netns}
readonly SUBNET=10.77.0
readonly HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
readonly SELF="$HERE/$(basename "${BASH_SOURCE[0]}")"
NAME=${XTRAIN_NETNS_CLUSTER:-xtc}

die() {
  echo "netns_cluster.sh: $*" >&2
  exit 1
}

usage() {
  sed -n '2,/^set -euo/p' "$SELF" | sed '$d' | sed 's/^# \{0,1\}//' >&2
  exit 2
}

check_name() {
  [[ $NAME =~ ^[a-z][a-z0-9]{0,11}$ ]] ||
    die "cluster name '$NAME': use 1 to 12 lower-case letters and digits, starting with a letter"
}

state_dir() { echo "$STATE_ROOT/$NAME"; }
node_count() { cat "$(state_dir)/nodes" 2>/dev/null || die "no cluster '$NAME' (run: $0 --name $NAME up N)"; }
check_node() {
  local n
  n=$(node_count)
  [[ $1 =~ ^[0-9]+$ ]] && (($1 < n)) || die "cluster '$NAME' has nodes 0 to $((n - 1)), not '$1'"
}

# Why this machine cannot make namespaces, or nothing.
why_not() {
  ((EUID == 0)) || { echo "network namespaces need root (this is uid $EUID)"; return; }
  command -v ip >/dev/null || { echo "iproute2's ip is not installed"; return; }
  command -v unshare >/dev/null || { echo "util-linux's unshare is not installed"; return; }
  command -v tc >/dev/null || { echo "iproute2's tc is not installed"; return; }
  local probe="xtprobe$$" output
  if ! output=$(ip netns add "$probe" 2>&1); then
    echo "ip netns add fails here: $output"
    return
  fi
  if ! output=$(ip -n "$probe" link add name xtprobea type veth peer name xtprobeb 2>&1); then
    echo "veth pairs cannot be made here: $output"
  elif ! output=$(ip -n "$probe" link add name xtprobebr type bridge 2>&1); then
    echo "bridges cannot be made here: $output"
  elif ! output=$(ip -n "$probe" link set dev xtprobea up && tc -n "$probe" qdisc add dev xtprobea root tbf rate 1gbit burst 128k latency 10ms 2>&1); then
    echo "tc's token bucket (tbf) is not available: $output"
  elif ! output=$(ip netns exec "$probe" unshare --uts sh -c 'hostname xtprobe' 2>&1); then
    echo "commands cannot run in a namespace with a host name of their own: $output"
  fi
  ip netns del "$probe" 2>/dev/null || true
}

# netem (delay, and rate with it) where the kernel has it; a token bucket
# (tbf) for a rate alone: some kernels (this project's VMs, 6.x without
# CONFIG_NET_SCH_NETEM) have tbf and htb but no netem.
have_netem() {
  local probe="xtnetem$$" ok=1
  ip netns add "$probe" 2>/dev/null || return 1
  ip -n "$probe" link set dev lo up
  tc -n "$probe" qdisc add dev lo root netem delay 1ms 2>/dev/null && ok=0
  ip netns del "$probe" 2>/dev/null || true
  return $ok
}

# The burst of a token bucket: 1 ms at the rate, at least 64 KiB (a TSO frame).
tbf_burst() {
  python3 -c '
import re, sys
m = re.fullmatch(r"([0-9.]+)([kmg]?)(bit|bps)", sys.argv[1].lower())
if not m: sys.exit("bad rate")
bits = float(m.group(1)) * {"": 1, "k": 1e3, "m": 1e6, "g": 1e9}[m.group(2)] * (8 if m.group(3) == "bps" else 1)
print(max(65536, int(bits / 8 / 1000)))' "$1" 2>/dev/null || die "rate '$1': give it as tc does, e.g. 100mbit, 1gbit, 10gbit"
}

qdisc_args() { # rate delay
  local rate=$1 delay=$2
  if [[ -n $delay ]]; then
    echo "netem delay $delay${rate:+ rate $rate} limit 100000"
  elif [[ -n $rate ]]; then
    echo "tbf rate $rate burst $(tbf_burst "$rate") latency 200ms"
  fi
}

apply_shape() { # node rate delay
  local i=$1 rate=$2 delay=$3 args
  if [[ -n $delay ]] && ! have_netem; then
    echo "netns_cluster.sh: --delay needs the netem queueing discipline, which this kernel ($(uname -r)) lacks (CONFIG_NET_SCH_NETEM); --rate works without it" >&2
    return 77
  fi
  args=$(qdisc_args "$rate" "$delay")
  tc -n "$NAME-n$i" qdisc del dev eth0 root 2>/dev/null || true
  tc -n "$NAME-sw" qdisc del dev "p$i" root 2>/dev/null || true
  if [[ -n $args ]]; then
    # shellcheck disable=SC2086
    tc -n "$NAME-n$i" qdisc add dev eth0 root $args
    # shellcheck disable=SC2086
    tc -n "$NAME-sw" qdisc add dev "p$i" root $args
  fi
}

# Kills what still runs in the cluster's namespaces, then removes them.
teardown() {
  local ns pids
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^$NAME-(n[0-9]+|sw)\$" || true); do
    pids=$(ip netns pids "$ns" 2>/dev/null || true)
    # shellcheck disable=SC2086
    [[ -n $pids ]] && kill -KILL $pids 2>/dev/null || true
  done
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^$NAME-(n[0-9]+|sw)\$" || true); do
    ip netns del "$ns" 2>/dev/null || true
  done
  local guard
  guard=$(cat "$(state_dir)/guard" 2>/dev/null || true)
  rm -rf "$(state_dir)"
  if [[ -n $guard && $guard != "$$" && $guard != "${GUARD_SELF:-}" ]]; then
    kill "$guard" 2>/dev/null || true
  fi
}

# Clusters whose owner process is gone (a test killed before its cleanup).
sweep() {
  local dir owner
  for dir in "$STATE_ROOT"/*/; do
    [[ -d $dir ]] || continue
    owner=$(cat "$dir/owner" 2>/dev/null || true)
    [[ -n $owner ]] || continue
    if ! kill -0 "$owner" 2>/dev/null; then
      NAME=$(basename "$dir") teardown_named
    fi
  done
}
teardown_named() { teardown; }

up() {
  local n=${1:-} rate="" delay="" owner=""
  shift || true
  [[ $n =~ ^[0-9]+$ ]] && ((n >= 1 && n <= 250)) || die "up needs the number of nodes (1 to 250), not '$n'"
  while (($#)); do
    case $1 in
      --rate) rate=$2; shift 2 ;;
      --delay) delay=$2; shift 2 ;;
      --owner) owner=$2; shift 2 ;;
      *) die "up: unknown option '$1' (--rate R, --delay D, --owner PID)" ;;
    esac
  done
  local why
  why=$(why_not)
  [[ -z $why ]] || { echo "netns_cluster.sh: $why" >&2; exit 77; }
  if [[ -n $delay ]] && ! have_netem; then
    echo "netns_cluster.sh: --delay needs the netem queueing discipline, which this kernel ($(uname -r)) lacks (CONFIG_NET_SCH_NETEM); --rate works without it" >&2
    exit 77
  fi
  sweep
  [[ ! -e $(state_dir) ]] || die "cluster '$NAME' exists already (run: $0 --name $NAME down)"
  mkdir -p "$(state_dir)"
  echo "$n" >"$(state_dir)/nodes"
  echo "$rate" >"$(state_dir)/rate"
  echo "$delay" >"$(state_dir)/delay"
  [[ -z $owner ]] || echo "$owner" >"$(state_dir)/owner"
  # Half-made clusters are removed, not left behind.
  trap 'teardown; exit 1' ERR INT TERM
  ip netns add "$NAME-sw"
  ip -n "$NAME-sw" link set dev lo up
  ip -n "$NAME-sw" link add name br0 type bridge
  ip -n "$NAME-sw" link set dev br0 up
  local hostfile="$(state_dir)/hostfile" i
  : >"$hostfile"
  for ((i = 0; i < n; ++i)); do
    ip netns add "$NAME-n$i"
    ip -n "$NAME-n$i" link set dev lo up
    ip -n "$NAME-sw" link add name "p$i" type veth peer name eth0 netns "$NAME-n$i"
    ip -n "$NAME-sw" link set dev "p$i" master br0 up
    ip -n "$NAME-n$i" addr add "$SUBNET.$((i + 1))/24" dev eth0
    ip -n "$NAME-n$i" link set dev eth0 up
    apply_shape "$i" "$rate" "$delay"
    echo "$NAME-n$i slots=1" >>"$hostfile"
  done
  trap - ERR INT TERM
  if [[ -n $owner ]]; then
    # The guard: setsid so that killing the caller's process group spares it.
    setsid bash "$SELF" --name "$NAME" guard "$owner" </dev/null >/dev/null 2>&1 &
    echo $! >"$(state_dir)/guard"
  fi
  echo "cluster $NAME: $n nodes $NAME-n0..$NAME-n$((n - 1)) on $SUBNET.0/24${rate:+, rate $rate}${delay:+, delay $delay each way per link}"
}

guard() {
  local owner=$1
  while kill -0 "$owner" 2>/dev/null && [[ -d $(state_dir) ]]; do sleep 1; done
  GUARD_SELF=$$ teardown
}

# Runs a command as node I: in its network namespace, under its host name.
node_exec() {
  local i=$1
  shift
  check_node "$i"
  exec ip netns exec "$NAME-n$i" unshare --uts sh -c 'hostname "$0" && exec "$@"' "$NAME-n$i" "$@"
}

# mpirun from node 0 over all nodes (or -np fewer): Open MPI's TCP transport
# only (no shared memory: btl tcp,self and the ob1 PML, so no libfabric or
# UCX path sneaks in), one slot per node, remote daemons started through
# scripts/netns_rsh (which enters the node's namespace, as ssh would log in).
run_mpirun() {
  local n
  n=$(node_count)
  node_exec 0 env XTRAIN_NETNS_CLUSTER="$NAME" OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
    mpirun --hostfile "$(state_dir)/hostfile" --map-by node --bind-to none \
    --mca plm_rsh_agent "$HERE/netns_rsh" --mca plm_rsh_no_tree_spawn 1 \
    --mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include eth0 --mca oob_tcp_if_include eth0 \
    "$@"
}

main() {
  while [[ ${1:-} == --name ]]; do
    NAME=$2
    shift 2
  done
  local command=${1:-}
  shift || true
  case $command in
    check)
      local why
      why=$(why_not)
      [[ -z $why ]] || { echo "$why"; exit 77; }
      echo "network namespaces, veth pairs, bridges and tbf work here; netem (--delay): $(have_netem && echo yes || echo no)"
      ;;
    sweep) sweep ;;
    up) check_name; up "$@" ;;
    down) check_name; teardown ;;
    guard) check_name; guard "$@" ;;
    exec) check_name; (($# >= 2)) || die "exec needs a node and a command"; node_exec "$@" ;;
    mpirun) check_name; run_mpirun "$@" ;;
    link)
      check_name
      check_node "${1:-x}"
      [[ ${2:-} == up || ${2:-} == down ]] || die "link $1 needs 'up' or 'down'"
      ip -n "$NAME-sw" link set dev "p$1" "$2"
      ;;
    shape)
      check_name
      local i=${1:-x} rate="" delay=""
      check_node "$i"
      shift
      while (($#)); do
        case $1 in
          --rate) rate=$2; shift 2 ;;
          --delay) delay=$2; shift 2 ;;
          *) die "shape: unknown option '$1'" ;;
        esac
      done
      apply_shape "$i" "$rate" "$delay"
      ;;
    status)
      check_name
      local n i
      n=$(node_count)
      for ((i = 0; i < n; ++i)); do
        echo "$NAME-n$i $SUBNET.$((i + 1)) port $(ip -n "$NAME-sw" -br link show "p$i" | awk '{print $2}')" \
          "qdisc: $(tc -n "$NAME-n$i" qdisc show dev eth0 | head -1)"
      done
      ;;
    *) usage ;;
  esac
}

main "$@"
