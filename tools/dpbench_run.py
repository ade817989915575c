"""dpbench's numba-dpex implementations (`*_numba_dpex_k.py`, `*_numba_dpex_p.py`) run on
kapi and validated against dpbench's NumPy reference, by import substitution.

    python tools/dpbench_run.py CHECKOUT [--ref HEAD] [--preset S] [--only knn,gpairs]
                                [--impl numba_dpex_k,numba_dpex_p] [--device cpu] [--work DIR]

CHECKOUT is a dpbench working tree or a git directory of one (then --ref picks the commit).
Nothing of dpbench is kept in this repository: its benchmarks and configs are copied to a
scratch folder, `numba_dpex` imports rewritten to kapi (as tools/dpex_tests.py does) and
`dpnp` / `dpctl` served by that tool's modules. Each benchmark runs as dpbench's runner does
it: the initialize function at the preset's parameters (dpbench's precision, double by
default), array arguments copied to the device (kapi.asarray), the implementation called
with keyword arguments, output arrays and the return value copied back and compared with the
NumPy (or Python) reference by the benchmark's own validate function, else dpbench's default
(np.allclose, or relative error below 1e-5). Each benchmark runs in a child process.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import dpex_tests  # noqa: E402 - the shims and import rewrites, shared

ROOT = Path(__file__).resolve().parent.parent
DTYPES = {"int": {"single": "i4", "double": "i8"}, "float": {"single": "f4", "double": "f8"}}


def extract(checkout: Path, ref: str, dest: Path) -> None:
    if (checkout / "dpbench" / "benchmarks").is_dir():
        for part in ("benchmarks", "configs"):
            shutil.copytree(checkout / "dpbench" / part, dest / "dpbench" / part)
        return
    dest.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(
        ["git", f"--git-dir={checkout}", "archive", ref, "dpbench/benchmarks", "dpbench/configs"],
        check=True,
        capture_output=True,
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)


def prepare(checkout: Path, ref: str, work: Path) -> None:
    if (work / "dpbench").exists():
        shutil.rmtree(work / "dpbench")
    extract(checkout, ref, work)
    for path in (work / "dpbench").rglob("*.py"):
        text = path.read_text()
        for pattern, repl in dpex_tests.IMPORT_REWRITES:
            text = re.sub(pattern, repl, text, flags=re.M)
        path.write_text(text)
    for d in [work / "dpbench", *(work / "dpbench").rglob("*")]:
        if d.is_dir() and not (d / "__init__.py").exists():
            (d / "__init__.py").write_text("")
    (work / "dpbench" / "__init__.py").write_text("")  # not dpbench's: no version machinery
    for rel, text in dpex_tests.SHIMS.items():
        p = work / "shims" / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text.lstrip())


def benchmarks(work: Path):
    """(name, config, package) for each benchmark with a numba-dpex implementation."""
    info = work / "dpbench" / "configs" / "bench_info"
    for toml in sorted(info.rglob("*.toml")):
        cfg = tomllib.loads(toml.read_text())["benchmark"]
        group = toml.parent.relative_to(info).parts
        folder = work / "dpbench" / "benchmarks" / Path(*(group or ("default",)))
        folder = folder / cfg["relative_path"]
        if folder.is_dir():
            pkg = ".".join(folder.relative_to(work).parts)
            yield cfg["module_name"], cfg, pkg, folder


def _find(mod, names):
    for n in names:
        if hasattr(mod, n):
            return getattr(mod, n)
    return None


def _module(pkg, folder, cfg, postfix):
    for base in (cfg["module_name"], cfg.get("short_name", "")):
        if base and (folder / f"{base}_{postfix}.py").exists():
            return importlib.import_module(f"{pkg}.{base}_{postfix}"), base
    return None, None


def _impl_fn(mod, base, cfg, postfix):
    mname = mod.__name__.rsplit(".", 1)[1]
    names = [mname, f"{mname}_{postfix}", cfg["module_name"], f"{cfg['module_name']}_{postfix}"]
    if cfg.get("func_name"):  # the benchmark's own name for its function (lenet5, ...)
        names += [cfg["func_name"], f"{cfg['func_name']}_{postfix}"]
    return _find(mod, [*names, "kernel", re.sub(r"[0-9]", "", cfg["module_name"])])


def _inputs(cfg, pkg, folder, preset):
    import numpy as np

    data = dict(cfg["parameters"][preset])
    init = cfg.get("init")
    if init:
        prec = init.get("precision") or "double"
        if init.get("types_dict_name"):
            data[init["types_dict_name"]] = {k: np.dtype(v[prec]) for k, v in DTYPES.items()}
        base = next(
            b
            for b in (
                cfg["module_name"],
                cfg.get("short_name", ""),
                cfg["module_name"] + "_initialize",
            )
            if b and (folder / f"{b}.py").exists()
        )
        mod = importlib.import_module(f"{pkg}.{base}")
        fn = getattr(mod, init.get("func_name") or "initialize")
        out = fn(**{a: data[a] for a in init["input_args"]})
        outs = init["output_args"]
        out = out if isinstance(out, tuple) else (out,)
        data.update(zip(outs, out, strict=False))
        if not init.get("types_dict_name") and init.get("precision"):
            for o in outs:
                v = data[o]
                if hasattr(v, "dtype") and v.dtype.kind in "if":
                    data[o] = v.astype(DTYPES["float" if v.dtype.kind == "f" else "int"][prec])
    return data


def _validate(cfg, pkg, folder, expected, actual):
    import numpy as np

    for base in (cfg.get("short_name", ""), cfg["module_name"]):
        if base and (folder / f"{base}_validate.py").exists():
            mod = importlib.import_module(f"{pkg}.{base}_validate")
            return bool(getattr(mod, cfg.get("validate_func_name") or "validate")(expected, actual))
    for key, ref in expected.items():
        refs = ref if isinstance(ref, (tuple, list)) else [ref]
        vals = actual[key] if isinstance(actual[key], (tuple, list)) else [actual[key]]
        for r, v in zip(refs, vals, strict=False):
            r, v = np.asarray(r), np.asarray(v)
            if np.allclose(r, v):
                continue
            norm = np.linalg.norm(r) or np.linalg.norm(v)
            if norm and np.linalg.norm(r - v) / norm < 1e-5:
                continue
            return False
    return True


def run_one(name: str, postfix: str, preset: str, device: str, work: Path) -> dict:
    """In the child: one implementation, validated. Returns a result dict."""
    import numpy as np

    import kapi

    cfg, pkg, folder = next((c, p, f) for n, c, p, f in benchmarks(work) if n == name)
    impl_mod, base = _module(pkg, folder, cfg, postfix)
    fn = _impl_fn(impl_mod, base, cfg, postfix)
    ref_fn = None
    for rp in ("numpy", "python"):  # dpbench's order; one needing a missing package is skipped
        try:
            ref_mod, rbase = _module(pkg, folder, cfg, rp)
        except ImportError:
            continue
        if ref_mod is not None:
            ref_fn = _impl_fn(ref_mod, rbase, cfg, rp)
            break
    data = _inputs(cfg, pkg, folder, preset)
    dev = kapi.Device(device)

    def args(to_device):
        out = {}
        for a in cfg["input_args"]:
            v = data[a]
            if a in cfg.get("array_args", []):
                v = kapi.asarray(np.array(v, copy=True), device=dev) if to_device else v.copy()
            out[a] = v
        return out

    def outputs(inputs, retval):
        got = {}
        for o in cfg.get("output_args", []):
            if o in cfg.get("array_args", []):
                v = inputs[o]
                got[o] = v.asnumpy() if isinstance(v, kapi.Array) else np.asarray(v)
        if retval is not None:
            conv = lambda v: v.asnumpy() if isinstance(v, kapi.Array) else np.asarray(v)  # noqa: E731
            got["return-value"] = (
                tuple(map(conv, retval)) if isinstance(retval, (tuple, list)) else conv(retval)
            )
        return got

    ins = args(True)
    fn(**ins)  # the first call compiles
    ins = args(True)
    t0 = time.perf_counter()
    ret = fn(**ins)
    took = time.perf_counter() - t0
    got = outputs(ins, ret)
    rins = args(False)
    want = outputs(rins, ref_fn(**rins))
    ok = _validate(cfg, pkg, folder, want, got)
    return {"state": "validated" if ok else "mismatch", "seconds": round(took, 4)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("checkout", type=Path)
    ap.add_argument("--ref", default="HEAD")
    ap.add_argument("--preset", default="S")
    ap.add_argument("--only", help="benchmark module names, comma-separated")
    ap.add_argument("--impl", default="numba_dpex_k,numba_dpex_p")
    ap.add_argument("--device", default="cpu", help="kapi device filter string")
    ap.add_argument("--work", type=Path)
    ap.add_argument("--timeout", type=int, default=1800, help="seconds per implementation")
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    work = args.work or Path(tempfile.mkdtemp(prefix="dpbench_"))
    if args.child:
        sys.path[:0] = [str(work / "shims"), str(work)]
        print(json.dumps(run_one(*args.child, args.preset, args.device, work)))
        return 0
    work.mkdir(parents=True, exist_ok=True)
    prepare(args.checkout.resolve(), args.ref, work)
    only = set(args.only.split(",")) if args.only else None
    env = dict(os.environ)
    # a PYTHONPATH given stays (after ours): where the references' SciPy/scikit-learn live
    env["PYTHONPATH"] = os.pathsep.join(
        [str(work / "shims"), str(ROOT), str(work), env.get("PYTHONPATH", "")]
    )
    rows = []
    for name, cfg, _, folder in benchmarks(work):
        if only and name not in only:
            continue
        for postfix in args.impl.split(","):
            if not any((folder / f"{b}_{postfix}.py").exists()
                       for b in (cfg["module_name"], cfg.get("short_name", "")) if b):  # fmt: skip
                continue
            cmd = [sys.executable, __file__, str(args.checkout), "--work", str(work),
                   "--preset", args.preset, "--device", args.device,
                   "--child", name, postfix]  # fmt: skip
            try:
                r = subprocess.run(cmd, env=env, capture_output=True, text=True,
                                   timeout=args.timeout)  # fmt: skip
                last = r.stdout.strip().splitlines()[-1:] if r.returncode == 0 else []
                res = json.loads(last[0]) if last else {"state": "error", "why": _why(r.stderr)}
            except subprocess.TimeoutExpired:
                res = {"state": "timeout", "why": f"over {args.timeout} s"}
            rows.append((name, postfix, res))
            print(f"{name:28s} {postfix:14s} {res['state']:9s} "
                  f"{res.get('seconds', '')} {res.get('why', '')}", flush=True)  # fmt: skip
    good = sum(r["state"] == "validated" for _, _, r in rows)
    print(f"\ndpbench preset {args.preset} on kapi ({args.device}): {good} of {len(rows)} validate")
    return 0 if good == len(rows) else 1


def _why(stderr: str) -> str:
    lines = [ln for ln in stderr.strip().splitlines() if ln.strip()]
    return lines[-1][:300] if lines else "no output"


if __name__ == "__main__":
    sys.exit(main())
