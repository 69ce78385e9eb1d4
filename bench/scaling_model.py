#!/usr/bin/env python3
"""Predicts the time of one data-parallel training iteration.

From a net's measured per-layer times (the log of `xtrain time`), its
learnable parameters (from the net prototxt and the shapes in that log), and
a link model, it plans the gradient buckets as xtrain does
(src/solvers/gradient_buckets.*: parameters in the order backward finishes
them, the first bucket at most 1 MiB, the others about --bucket-mb), lets
each bucket's all-reduce start when its last gradient is final and run one
after another on the link while backward goes on, and prints the step time,
images/s and scaling efficiency for 1 to 64 workers.

    xtrain time --model=bench/nets/alexnet.prototxt --threads=1 > alexnet.log 2>&1
    bench/scaling_model.py --model bench/nets/alexnet.prototxt --time-log alexnet.log \\
        --bandwidth-gbit 1 --latency-us 50 --workers 1,2,3,4,8

The link model (time of an all-reduce of S bytes over N workers):
    ring: 2(N-1) * latency + 2(N-1)/N * S / bandwidth
    tree: 2 ceil(log2 N) * latency + 2(N-1)/N * S / bandwidth
    binomial: 2 ceil(log2 N) * (latency + S / bandwidth)   (a reduce to one
        worker, then a broadcast, each moving the whole buffer log2 N times:
        what Open MPI's MPI_Iallreduce does in place unless told otherwise)
with `bandwidth` the bus bandwidth in nccl-tests' sense (what each worker's
link moves, per direction); --hierarchy G,INTER_GBIT,INTER_LATENCY_US adds
a second level: workers in groups of G (the GPUs of one server) reduce over
the first link, the groups over the second (one server's NICs together):
    2(G-1)/G * S / bw_intra + 2(M-1)/M * S / bw_inter (+ latencies), M = N / G.
--overlap full lets the sums run beside backward (NCCL on its own stream);
--overlap polled advances a sum's steps only where the worker polls it,
between layers during backward (MPI on CPU ranks: Open MPI progresses a
non-blocking collective only inside MPI calls); --overlap none sums after
backward.

A worker's compute is the log's per-layer forward and backward times,
scaled by --compute-scale (e.g. 1.5 for 3 ranks sharing 2 cores), or
rescaled to --iteration-ms (a GPU's measured forward+backward time, the
layers keeping the log's proportions). --update-ms is the solver's update
after the sums (default: the parameters' bytes read and written 4 times at
--memory-gbs).
"""

import argparse
import math
import re
import sys


# ---------------------------------------------------------------------------
# The net: a minimal prototxt reader (enough for layer types and fields).

def parse_prototxt(text):
    """Nested dicts of lists: {'layer': [{'name': ['conv1'], ...}, ...]}."""
    tokens = re.findall(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|[{}:]|[^\s{}:"\']+',
                        re.sub(r'#[^\n]*', '', text))
    position = 0

    def block():
        nonlocal position
        result = {}
        while position < len(tokens):
            token = tokens[position]
            if token == '}':
                position += 1
                return result
            key = token
            position += 1
            if tokens[position] == ':':
                position += 1
            if tokens[position] == '{':
                position += 1
                value = block()
            else:
                value = tokens[position].strip('"\'')
                position += 1
            result.setdefault(key, []).append(value)
        return result

    return block()


def first(fields, key, default=None):
    values = fields.get(key)
    return values[0] if values else default


def parse_time_log(text):
    """Per layer (in net order): name, forward ms, backward ms, bottoms' and
    tops' shapes; and the batch size."""
    layers = {}
    order = []
    current = None
    for line in text.splitlines():
        m = re.search(r'Creating layer (\S+)', line)
        if m:
            current = m.group(1)
            order.append(current)
            layers[current] = {'bottoms': [], 'tops': [], 'forward': 0.0, 'backward': 0.0}
            continue
        m = re.search(r'\] (\S+) <- (\S+)$', line)
        if m and m.group(1) in layers:
            layers[m.group(1)]['bottoms'].append(m.group(2))
            continue
        m = re.search(r'\] (\S+) -> (\S+)$', line)
        if m and m.group(1) in layers:
            layers[m.group(1)]['top_names'] = layers[m.group(1)].get('top_names', []) + [m.group(2)]
            continue
        m = re.search(r'Top shape: ([\d ]+) \(', line)
        if m and current:
            layers[current]['tops'].append([int(v) for v in m.group(1).split()])
            continue
        m = re.search(r'\]\s+(\S+)\s+(forward|backward): ([\d.e+-]+) ms\.', line)
        if m and m.group(1) in layers:
            layers[m.group(1)][m.group(2)] = float(m.group(3))
    if not order or all(layers[n]['backward'] == 0 for n in order):
        sys.exit('the time log has no per-layer times: give the output of `xtrain time --model=...`')
    # Shapes of blobs by name (the last layer to write a blob names its shape).
    shapes = {}
    for name in order:
        for top, shape in zip(layers[name].get('top_names', []), layers[name]['tops']):
            shapes[top] = shape
        layers[name]['bottom_shapes'] = []
    # Bottoms are read before the layer's own tops overwrite in-place blobs.
    shapes = {}
    for name in order:
        layers[name]['bottom_shapes'] = [shapes.get(b) for b in layers[name]['bottoms']]
        for top, shape in zip(layers[name].get('top_names', []), layers[name]['tops']):
            shapes[top] = shape
    return order, layers


def learnable_counts(net, order, layers):
    """Per layer: the element counts of its learnable blobs (those summed)."""
    params = {}
    for layer in net.get('layer', []):
        name = first(layer, 'name')
        kind = first(layer, 'type')
        if name not in layers:
            continue
        bottoms = layers[name]['bottom_shapes']
        tops = layers[name]['tops']
        counts = []
        if kind in ('Convolution', 'Deconvolution'):
            p = first(layer, 'convolution_param', {})
            out = int(first(p, 'num_output'))
            group = int(first(p, 'group', 1))
            if 'kernel_h' in p:
                kernel = int(first(p, 'kernel_h')) * int(first(p, 'kernel_w'))
            else:
                sizes = [int(k) for k in p.get('kernel_size', ['1'])]
                kernel = sizes[0] * (sizes[1] if len(sizes) > 1 else sizes[0])
            channels = bottoms[0][1]
            counts.append(out * channels // group * kernel)
            if first(p, 'bias_term', 'true') != 'false':
                counts.append(out)
        elif kind == 'InnerProduct':
            p = first(layer, 'inner_product_param', {})
            out = int(first(p, 'num_output'))
            axis = int(first(p, 'axis', 1))
            inputs = math.prod(bottoms[0][axis:])
            counts.append(out * inputs)
            if first(p, 'bias_term', 'true') != 'false':
                counts.append(out)
        elif kind == 'BatchNorm':
            channels = tops[0][1]
            counts += [channels, channels, 1]
        elif kind == 'Scale':
            p = first(layer, 'scale_param', {})
            channels = tops[0][1]
            counts.append(channels)
            if first(p, 'bias_term', 'false') == 'true':
                counts.append(channels)
        elif kind == 'PReLU':
            counts.append(tops[0][1])
        params[name] = counts
    return params


# ---------------------------------------------------------------------------
# The plan and the schedule.

def plan_buckets(order, layers, params, bucket_bytes, first_bucket_bytes=1 << 20):
    """Buckets in the order backward finishes their parameters: (bytes, the
    index in backward order of the layer that finishes the bucket)."""
    backward = [name for name in reversed(order)]
    buckets = []
    size = 0
    limit = first_bucket_bytes
    last = 0
    for position, name in enumerate(backward):
        for count in params.get(name, []):
            size += 4 * count
            last = position
            if size >= limit:
                buckets.append((size, last))
                size = 0
                limit = bucket_bytes
    if size:
        buckets.append((size, last))
    return backward, buckets


def allreduce_seconds(size, workers, link):
    if workers <= 1:
        return 0.0
    if link.get('hierarchy'):
        group, inter_bw, inter_lat = link['hierarchy']
        group = min(group, workers)
        groups = max(1, workers // group)
        t = 0.0
        if group > 1:
            t += 2 * (group - 1) / group * size / link['bandwidth'] + 2 * (group - 1) * link['latency']
        if groups > 1:
            steps = (2 * math.ceil(math.log2(groups)) if link['algorithm'] == 'tree'
                     else 2 * (groups - 1))
            t += 2 * (groups - 1) / groups * size / inter_bw + steps * inter_lat
        return t
    if link['algorithm'] == 'binomial':
        return 2 * math.ceil(math.log2(workers)) * (link['latency'] + size / link['bandwidth'])
    steps = (2 * math.ceil(math.log2(workers)) if link['algorithm'] == 'tree'
             else 2 * (workers - 1))
    return steps * link['latency'] + 2 * (workers - 1) / workers * size / link['bandwidth']


def allreduce_steps(size, workers, link):
    """The all-reduce as steps, each needing the worker to hand it on:
    (count, seconds each)."""
    if workers <= 1:
        return 0, 0.0
    if link['algorithm'] == 'binomial':
        return 2 * math.ceil(math.log2(workers)), link['latency'] + size / link['bandwidth']
    if link['algorithm'] == 'ring' and not link.get('hierarchy'):
        return 2 * (workers - 1), link['latency'] + size / workers / link['bandwidth']
    return 1, allreduce_seconds(size, workers, link)


def step_seconds(order, layers, params, workers, link, bucket_bytes, compute_scale,
                 update_seconds, overlap='full'):
    """overlap: 'full' (the sums run beside backward, as NCCL's on its own
    stream), 'polled' (a sum advances a step only when the worker polls it:
    between layers during backward, continuously after -- MPI on CPU ranks,
    whose progress happens inside MPI calls), 'none' (all sums after backward)."""
    backward, buckets = plan_buckets(order, layers, params, bucket_bytes)
    forward = sum(layers[n]['forward'] for n in order) / 1000 * compute_scale
    finish = []
    t = 0.0
    for name in backward:
        t += layers[name]['backward'] / 1000 * compute_scale
        finish.append(t)
    backward_seconds = t

    def next_poll(when):
        """The first moment >= when at which the worker polls."""
        if when >= backward_seconds:
            return when
        for f in finish:
            if f >= when:
                return f
        return backward_seconds

    link_free = 0.0
    for size, last in buckets:
        ready = finish[last] if overlap != 'none' else backward_seconds
        start = max(ready, link_free)
        if overlap == 'polled':
            count, each = allreduce_steps(size, workers, link)
            now = next_poll(start)
            for _ in range(count):
                now = next_poll(now) + each
            link_free = now
        else:
            link_free = start + allreduce_seconds(size, workers, link)
    exposed = max(0.0, link_free - backward_seconds) if workers > 1 else 0.0
    # The small sums of every iteration (xtrain agrees on stop requests after
    # each update): latency only.
    small = link.get('small_collectives', 0) * allreduce_seconds(4, workers, link)
    return (forward + backward_seconds + exposed + small + update_seconds, exposed + small,
            buckets)


# ---------------------------------------------------------------------------

def gbit(value):
    return float(value) * 1e9 / 8


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--model', required=True, help='the net prototxt that was timed')
    parser.add_argument('--time-log', required=True, help='the output of `xtrain time --model=...`')
    parser.add_argument('--bandwidth-gbit', type=float, default=10,
                        help='bus bandwidth of each worker\'s link, Gbit/s (default 10)')
    parser.add_argument('--latency-us', type=float, default=50, help='per message step, us')
    parser.add_argument('--algorithm', choices=('ring', 'tree', 'binomial'), default='ring')
    parser.add_argument('--hierarchy', default='',
                        help='G,INTER_GBIT,INTER_LATENCY_US: groups of G workers on the fast '
                             'link, the groups joined by the second')
    parser.add_argument('--small-collectives', type=int, default=1,
                        help='latency-bound sums per iteration besides the gradients (xtrain: 1, '
                             'the stop agreement)')
    parser.add_argument('--bucket-mb', type=float, default=25)
    parser.add_argument('--overlap', choices=('full', 'polled', 'none'), default='full',
                        help='full: sums beside backward (NCCL); polled: a sum advances only when '
                             'the worker polls, between layers (MPI on CPU ranks); none')
    parser.add_argument('--workers', default='1,2,4,8,16,32,64')
    parser.add_argument('--compute-scale', type=float, default=1.0)
    parser.add_argument('--iteration-ms', type=float, default=0,
                        help='rescale the layers to this forward+backward time (then times '
                             '--compute-scale)')
    parser.add_argument('--update-ms', type=float, default=-1)
    parser.add_argument('--memory-gbs', type=float, default=10,
                        help='memory bandwidth for the default update time, GB/s')
    parser.add_argument('--batch', type=int, default=0, help='images per worker (default: the log\'s)')
    parser.add_argument('--sweep-buckets', default='',
                        help='MiB values: print the step time at each bucket size instead')
    args = parser.parse_args()

    order, layers = parse_time_log(open(args.time_log).read())
    net = parse_prototxt(open(args.model).read())
    params = learnable_counts(net, order, layers)
    total = sum(sum(c) for c in params.values())
    compute = sum(layers[n]['forward'] + layers[n]['backward'] for n in order)
    scale = args.compute_scale
    if args.iteration_ms > 0:
        scale *= args.iteration_ms / compute
    update = (args.update_ms / 1000 if args.update_ms >= 0
              else 4 * 4 * total / (args.memory_gbs * 1e9))
    batch = args.batch or layers[order[0]]['tops'][0][0]
    link = {'bandwidth': gbit(args.bandwidth_gbit), 'latency': args.latency_us * 1e-6,
            'algorithm': args.algorithm, 'small_collectives': args.small_collectives}
    if args.hierarchy:
        g, bw, lat = args.hierarchy.split(',')
        link['hierarchy'] = (int(g), gbit(bw), float(lat) * 1e-6)

    print(f'{net.get("name", ["net"])[0]}: {total:,} learnable values ({4 * total / 2**20:.1f} MiB), '
          f'forward+backward {compute * scale:.1f} ms per worker, update {update * 1000:.1f} ms, '
          f'batch {batch} per worker')
    if args.sweep_buckets:
        workers = [int(w) for w in args.workers.split(',')]
        print('bucket MiB  ' + '  '.join(f'{w:>4} workers ms' for w in workers))
        for mb in [float(v) for v in args.sweep_buckets.split(',')]:
            row = [step_seconds(order, layers, params, w, link, mb * 2**20, scale, update,
                                args.overlap)[0] for w in workers]
            print(f'{mb:10g}  ' + '  '.join(f'{t * 1000:15.2f}' for t in row))
        return
    one = None
    print(' workers   step ms   exposed comm ms   images/s   efficiency   buckets')
    for w in [int(v) for v in args.workers.split(',')]:
        t, exposed, buckets = step_seconds(order, layers, params, w, link, args.bucket_mb * 2**20,
                                           scale, update, args.overlap)
        if one is None:
            one = step_seconds(order, layers, params, 1, link, args.bucket_mb * 2**20, scale,
                               update, args.overlap)[0]
        print(f'{w:8d} {t * 1000:9.2f} {exposed * 1000:17.2f} {w * batch / t:10.1f} '
              f'{one / t * 100:11.1f}%   {len(buckets)}')


if __name__ == '__main__':
    main()
