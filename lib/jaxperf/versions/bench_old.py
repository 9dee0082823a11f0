"""The dispatch benchmark that runs inside one Equinox release's environment.

Self-contained on purpose: the old environments have only jax, jaxlib, equinox
and their dependencies, not jaxperf, so this file imports nothing from jaxperf
and is run by path::

    .envs/equinox-0.7.1/bin/python lib/jaxperf/versions/bench_old.py --repeats 15

It works on Python 3.10 with jax 0.4.13 and Equinox 0.7.1 (the oldest release
studied) and on today's jax/Equinox, using only APIs present in all of them:
``eqx.nn.Linear``/``MLP``/``MultiheadAttention``/``LayerNorm``/``Embedding``,
``eqx.partition``/``combine``/``is_array``, ``eqx.filter_pmap`` with its
defaults, ``jax.pmap`` and ``jax.tree_util``.

What it measures is the seed's no-op step of equinox#192,
``step(model, x, opt_state) -> (0.0, model, opt_state)``, on 8 (forced host)
devices, called three ways, each loop feeding its outputs back in as a
training loop does:

- ``filter_pmap``: ``eqx.filter_pmap(step)(model, x, opt_state)``;
- ``pmap_params``: ``jax.pmap`` over the params half of
  ``eqx.partition(model, eqx.is_array)``, partitioned once outside the loop,
  the static half closed over (the issue's workaround, the baseline);
- ``pmap_cached``: the cached fix: params and optimiser state flattened once
  (treedef cached), one ``jax.pmap`` over the flat list of leaves reused, so
  no Module is flattened or partitioned per call.

Before timing, every method's output after one call from the same start is
checked to be the same pytree with the same values; a mismatch is an error.

Timing follows jaxperf.timing (copied, since jaxperf is not importable here):
warm-up excluded; each repeat runs every variant once in an order rotated from
repeat to repeat; per variant and repeat, ``number`` calls each blocked
(wall and thread-CPU seconds per call) and ``number`` calls only enqueued,
blocked once after the loop (dispatch seconds per call).

Protocol: exit code 0 and exactly one JSON document on stdout (anything the
libraries print goes to stderr); on failure a non-zero exit code and the
traceback on stderr.
"""

import argparse
import json
import os
import platform
import sys
import time
import traceback

from bench_old_models import define_models  # sibling file: the script's folder is sys.path[0]

PROTOCOL = "jaxperf.versions.bench_old/1"
MODELS = ("mlp", "transformer")
VARIANTS = ("filter_pmap", "pmap_params", "pmap_cached")


def _force_host_devices(count):
    """Must run before jax is imported: the CPU backend reads XLA_FLAGS once."""
    flag = "--xla_force_host_platform_device_count"
    kept = [f for f in os.environ.get("XLA_FLAGS", "").split() if not f.startswith(flag)]
    os.environ["XLA_FLAGS"] = " ".join(kept + ["%s=%d" % (flag, count)])
    os.environ.setdefault("JAX_PLATFORMS", "cpu")


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host-devices", type=int, default=8)
    parser.add_argument("--models", default=",".join(MODELS), help="comma-separated: mlp, transformer")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--number", type=int, default=20, help="calls per variant per repeat")
    parser.add_argument("--mlp-width", type=int, default=128)
    parser.add_argument("--mlp-depth", type=int, default=8)
    parser.add_argument("--d-model", type=int, default=64)
    parser.add_argument("--blocks", type=int, default=4)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--seq-len", type=int, default=16)
    parser.add_argument("--vocab", type=int, default=256)
    parser.add_argument("--batch", type=int, default=2, help="examples per device")
    args = parser.parse_args(argv)
    models = [m for m in args.models.split(",") if m]
    for m in models:
        if m not in MODELS:
            parser.error("--models: %r is not one of %s" % (m, ", ".join(MODELS)))
    if not models:
        parser.error("--models: expected at least one of %s" % ", ".join(MODELS))
    args.models = models
    for name in (
        "host_devices",
        "repeats",
        "number",
        "mlp_width",
        "mlp_depth",
        "d_model",
        "blocks",
        "heads",
        "seq_len",
        "vocab",
        "batch",
    ):
        if getattr(args, name) < 1:
            parser.error("--%s must be >= 1" % name.replace("_", "-"))
    if args.warmup < 0:
        parser.error("--warmup must be >= 0")
    if args.d_model % args.heads:
        parser.error("--d-model must be divisible by --heads")
    return args


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    _force_host_devices(args.host_devices)
    real_stdout = sys.stdout
    sys.stdout = sys.stderr  # keep stdout for the one JSON document
    try:
        result = run(args)
    finally:
        sys.stdout = real_stdout
    json.dump(result, real_stdout)
    real_stdout.write("\n")
    real_stdout.flush()
    return 0


def run(args):
    started = time.perf_counter()
    import equinox as eqx
    import jax
    import jax.numpy as jnp
    import jaxlib
    import numpy as np

    devices = jax.devices()
    if len(devices) != args.host_devices:
        raise RuntimeError(
            "expected %d devices, JAX has %d (%s); XLA_FLAGS=%r"
            % (args.host_devices, len(devices), devices[0].platform, os.environ.get("XLA_FLAGS"))
        )
    n_dev = len(devices)
    tree = jax.tree_util

    Transformer = define_models(eqx, jax)

    key = jax.random.PRNGKey(0)

    def build(name):
        """(model, one device's input, forward) for one model name."""
        if name == "mlp":
            model = eqx.nn.MLP(args.d_model, args.d_model, args.mlp_width, args.mlp_depth, key=key)
            x = np.ones((args.batch, args.d_model), np.float32)
            forward = jax.vmap(model)
        else:
            model = Transformer(args.vocab, args.d_model, args.blocks, args.heads, key)
            x = np.zeros((args.batch, args.seq_len), np.int32)
            forward = jax.vmap(model)
        return model, x, forward

    def step(model, x, opt_state):
        return 0.0, model, opt_state

    shard = jax.pmap(lambda t: t)  # host arrays -> arrays sharded over the devices, as pmap outputs are

    def replicate(t):
        return shard(
            tree.tree_map(lambda a: np.broadcast_to(np.asarray(a), (n_dev,) + np.shape(a)).copy(), t)
        )

    def block(out):
        for leaf in tree.tree_leaves(out):
            if hasattr(leaf, "block_until_ready"):
                leaf.block_until_ready()
        return out

    def make_variants(model, x_host):
        """Each variant: (call, to_model) over a mutable loop state."""
        params, static = eqx.partition(model, eqx.is_array)
        params_rep = replicate(params)
        opt_rep = replicate(tree.tree_map(np.zeros_like, params))  # momentum buffers mirroring params
        x_rep = replicate(x_host)

        fstep = eqx.filter_pmap(step)
        filter_state = [eqx.combine(params_rep, static), opt_rep]

        def call_filter_pmap():
            loss, filter_state[0], filter_state[1] = fstep(filter_state[0], x_rep, filter_state[1])
            return loss, filter_state[0], filter_state[1]

        def step_params(p, x, opt):
            loss, new_model, new_opt = step(eqx.combine(p, static), x, opt)
            return loss, eqx.partition(new_model, eqx.is_array)[0], new_opt

        pstep = jax.pmap(step_params)
        params_state = [params_rep, opt_rep]

        def call_pmap_params():
            loss, params_state[0], params_state[1] = pstep(params_state[0], x_rep, params_state[1])
            return loss, params_state[0], params_state[1]

        leaves, treedef = tree.tree_flatten((params_rep, opt_rep))

        def step_leaves(flat, x):
            p, opt = tree.tree_unflatten(treedef, flat)
            loss, new_model, new_opt = step(eqx.combine(p, static), x, opt)
            return loss, tree.tree_leaves((eqx.partition(new_model, eqx.is_array)[0], new_opt))

        cstep = jax.pmap(step_leaves)
        cached_state = [list(leaves)]

        def call_pmap_cached():
            loss, cached_state[0] = cstep(cached_state[0], x_rep)
            return loss, cached_state[0]

        def unflatten_cached(out):
            p, opt = tree.tree_unflatten(treedef, out[1])
            return out[0], eqx.combine(p, static), opt

        variants = {
            "filter_pmap": (call_filter_pmap, lambda out: out),
            "pmap_params": (call_pmap_params, lambda out: (out[0], eqx.combine(out[1], static), out[2])),
            "pmap_cached": (call_pmap_cached, unflatten_cached),
        }
        counts = {
            "param_arrays": len(tree.tree_leaves(params)),
            "arrays_per_call": len(tree.tree_leaves((params_rep, x_rep, opt_rep))),
        }
        return variants, counts

    def same_outputs(outputs):
        """Every method's (loss, model, opt_state) after one call: same pytree, same values."""
        reference_name = VARIANTS[1]
        _, ref_model, ref_opt = outputs[reference_name]
        ref_leaves, ref_def = tree.tree_flatten((ref_model, ref_opt))
        problems = []
        for name, (loss, model, opt) in outputs.items():
            if not np.all(np.asarray(loss) == 0.0):
                problems.append("%s: loss is %r, expected 0.0" % (name, loss))
            leaves, treedef = tree.tree_flatten((model, opt))
            if treedef != ref_def:
                problems.append("%s: pytree structure differs from %s" % (name, reference_name))
                continue
            for a, b in zip(leaves, ref_leaves):
                if hasattr(a, "shape") or hasattr(b, "shape"):
                    if not np.array_equal(np.asarray(a), np.asarray(b)):
                        problems.append("%s: an array leaf differs from %s" % (name, reference_name))
                        break
                elif a != b:
                    problems.append("%s: leaf %r differs from %r" % (name, a, b))
                    break
        return problems

    clock_wall, clock_cpu = time.perf_counter, time.thread_time
    rows, model_info = [], {}
    for model_name in args.models:
        model, x_host, forward = build(model_name)
        forward_shape = list(forward(jnp.asarray(x_host)).shape)  # the model is real: it runs
        variants, counts = make_variants(model, x_host)
        first = {}
        for name in VARIANTS:
            call, to_model = variants[name]
            first[name] = to_model(block(call()))
        problems = same_outputs(first)
        if problems:
            raise RuntimeError("methods disagree for %s: %s" % (model_name, "; ".join(problems)))
        model_info[model_name] = dict(counts, same_pytree=True, forward_output_shape=forward_shape)

        for name in VARIANTS:
            for _ in range(args.warmup):
                block(variants[name][0]())
        for repeat in range(args.repeats):
            shift = repeat % len(VARIANTS)
            order = VARIANTS[shift:] + VARIANTS[:shift]
            for position, name in enumerate(order):
                call = variants[name][0]
                wall0, cpu0 = clock_wall(), clock_cpu()
                for _ in range(args.number):
                    block(call())
                wall = (clock_wall() - wall0) / args.number
                cpu = (clock_cpu() - cpu0) / args.number
                outs = []
                wall0 = clock_wall()
                for _ in range(args.number):
                    outs.append(call())
                dispatch = (clock_wall() - wall0) / args.number
                block(outs)
                rows.append(
                    {
                        "model": model_name,
                        "variant": name,
                        "repeat": repeat,
                        "position": position,
                        "calls": args.number,
                        "wall_s_per_call": wall,
                        "cpu_s_per_call": cpu,
                        "it_per_s": 1.0 / wall if wall > 0 else None,
                        "dispatch_s_per_call": dispatch,
                    }
                )

    def version(module):
        return getattr(module, "__version__", None) or getattr(
            getattr(module, "version", None), "__version__", None
        )

    return {
        "protocol": PROTOCOL,
        "versions": {
            "python": platform.python_version(),
            "jax": jax.__version__,
            "jaxlib": version(jaxlib),
            "equinox": getattr(eqx, "__version__", None),
            "numpy": np.__version__,
        },
        "executable": sys.executable,
        "backend": jax.default_backend(),
        "device_kind": devices[0].device_kind,
        "device_count": n_dev,
        "xla_flags": os.environ.get("XLA_FLAGS", ""),
        "config": {
            "warmup": args.warmup,
            "repeats": args.repeats,
            "number": args.number,
            "mlp_width": args.mlp_width,
            "mlp_depth": args.mlp_depth,
            "d_model": args.d_model,
            "blocks": args.blocks,
            "heads": args.heads,
            "seq_len": args.seq_len,
            "vocab": args.vocab,
            "batch": args.batch,
            "models": args.models,
            "variants": list(VARIANTS),
        },
        "models": model_info,
        "rows": rows,
        "wall_s": time.perf_counter() - started,
    }


if __name__ == "__main__":
    try:
        sys.exit(main())
    except SystemExit:
        raise
    except BaseException:
        traceback.print_exc(file=sys.stderr)
        sys.exit(1)
