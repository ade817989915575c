"""`python -m kapi cache` and `python -m kapi compile`: the disk cache from the command line.

    python -m kapi cache [--clear] [-v]
    python -m kapi compile MODULE [--kernel NAME]... [--signature SIG]... [--device FILTER]...
                           [--output DIR]

`compile` imports MODULE (a dotted module name or a .py file), takes its kapi kernels (all of
them, or those named), compiles each for its declared signatures and those given, and builds
the device programs for the devices given (default: every device), so the cache holds the
SPIR-V and each device's native binary. A script compiled so is found again when it runs as
`python script.py` (the cache names its kernels by the script's module name, not `__main__`).
It exits with 1 when something asked for was not compiled: a --signature that fits no kernel,
a --kernel that got no signature, or nothing to compile at all. `--output DIR` writes the
entries to DIR instead of the user's cache: point KAPI_CACHE_DIR at a copy of DIR on a machine
with the same kapi to use them.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import sys


def _human(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def cache_main(argv: list[str]) -> int:
    from ._cache import store as _cache

    p = argparse.ArgumentParser(prog="python -m kapi cache", description="kapi's disk cache")
    p.add_argument("--clear", action="store_true", help="remove every entry")
    p.add_argument("-v", "--verbose", action="store_true", help="list the entries")
    a = p.parse_args(argv)
    print(f"location: {_cache.directory()}")
    if not _cache.enabled():
        print("disabled (KAPI_CACHE=0): kernels compile in memory")
    if a.clear:
        print(f"removed {_cache.clear()} entries")
        return 0
    es = _cache.entries()
    total = sum(s for _, s, _ in es)
    spv = sum(1 for path, _, _ in es if path.endswith(".spv"))
    print(f"size: {_human(total)} of {_human(_cache.size_cap())} (KAPI_CACHE_SIZE)")
    print(f"entries: {len(es)} ({spv} SPIR-V, {len(es) - spv} native)")
    if a.verbose:
        for path, size, _ in reversed(es):  # most recently used first
            d = _cache.describe(path) or {}
            what = d.get("error") or f"{d.get('kernel', '?')}{d.get('signature', '')}"
            kind = "native " + d.get("device", "") if path.endswith(".nat") else "SPIR-V"
            print(f"  {os.path.basename(path)[:16]}  {_human(size):>9}  {kind}: {what}")
    return 0


def _import(target: str):
    if target.endswith(".py") or os.sep in target:
        path = os.path.abspath(target)
        name = os.path.splitext(os.path.basename(path))[0]
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot import {target}")
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        sys.path.insert(0, os.path.dirname(path))
        spec.loader.exec_module(mod)
        return mod
    sys.path.insert(0, os.getcwd())
    return importlib.import_module(target)


def compile_main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(
        prog="python -m kapi compile",
        description="compile a module's kernels ahead of time into the disk cache",
    )
    p.add_argument("module", help="dotted module name or path of a .py file")
    p.add_argument("--kernel", action="append", default=[], help="only this kernel (repeatable)")
    p.add_argument(
        "--signature",
        action="append",
        default=[],
        help='a signature with its index space, e.g. "(item(1), array(f32,1), f32)" (repeatable)',
    )
    p.add_argument("--device", action="append", default=[], help="device filter (repeatable)")
    p.add_argument("--output", help="write the entries to this directory (a bundle)")
    a = p.parse_args(argv)
    if a.output:
        os.environ["KAPI_CACHE_DIR"] = os.path.abspath(a.output)
        os.environ["KAPI_CACHE"] = "1"
    from ._cache import store as _cache
    from ._kernel.dispatcher import KernelDispatcher
    from ._kernel.types import parse_signature
    from ._memory.device import Device, devices

    if not _cache.enabled():
        print("kapi compile: the disk cache is off (KAPI_CACHE=0)", file=sys.stderr)
        return 1
    why = _cache.refusal()
    if why is not None:
        print(f"kapi compile: cannot write the cache there: {why}", file=sys.stderr)
        return 1
    try:
        mod = _import(a.module)
    except Exception as e:  # report, never a traceback
        print(f"kapi compile: cannot import {a.module}: {e}", file=sys.stderr)
        return 1
    kernels = {n: v for n, v in vars(mod).items() if isinstance(v, KernelDispatcher)}
    if a.kernel:
        missing = [n for n in a.kernel if n not in kernels]
        if missing:
            print(f"kapi compile: no kernel {', '.join(missing)} in {a.module}", file=sys.stderr)
            return 1
        kernels = {n: kernels[n] for n in a.kernel}
    try:
        sigs = [parse_signature(s) for s in a.signature]
        devs = [Device(f) for f in a.device] if a.device else devices()
    except Exception as e:
        print(f"kapi compile: {e}", file=sys.stderr)
        return 1
    if any(index is None for index, _ in sigs):
        print(
            "kapi compile: give each --signature its index space first, e.g. item(1)",
            file=sys.stderr,
        )
        return 1
    done, failed, problems = 0, 0, []
    used = [False] * len(sigs)
    for name, k in kernels.items():
        todo = []
        for j, (i, at) in enumerate(sigs):
            if k.nparams == len(at) + 1:
                todo.append((i, at))
                used[j] = True
        todo += [(ck.index, ck.argtypes) for ck in list(k.overloads.values())]
        if not todo:
            print(f"  {name}: no signature of its arity given; skipped")
            if name in a.kernel:
                problems.append(
                    f"kernel {name} takes {k.nparams} parameter(s) (its item included), and no "
                    f"--signature of that arity was given"
                )
            continue
        for index, argtypes in dict.fromkeys(todo):
            try:
                ck = k.compile(argtypes, index)
                for d in devs:
                    ck._prepare_device(d.index)
            except Exception as e:
                failed += 1
                print(f"  {name}: {type(e).__name__}: {e}", file=sys.stderr)
                continue
            if not ck.cache_key:
                why = getattr(k, "_cache_refusal", None) or "see KAPI_DEBUG=cache"
                problems.append(f"{name}{ck.signature} compiled but cannot be cached: {why}")
                continue
            done += 1
            print(f"  {name}{ck.signature}")
    arities = ", ".join(f"{n} ({k.nparams})" for n, k in kernels.items()) or "none"
    for text, was_used in zip(a.signature, used, strict=True):
        if not was_used:
            problems.append(
                f"--signature {text!r} fits no kernel: its arity (item included) is "
                f"{len(parse_signature(text)[1]) + 1}; the kernels' are {arities}"
            )
    if not done and not failed and not problems:
        problems.append(
            f"nothing to compile in {a.module}: "
            + (
                "it defines no kapi kernel"
                if not kernels
                else f"no kernel declares a signature; give --signature (kernels: {arities})"
            )
        )
    print(
        f"compiled {done} specialisation(s) for {', '.join(d.filter_string for d in devs)} "
        f"into {_cache.directory()}"
    )
    for text in problems:
        print(f"kapi compile: {text}", file=sys.stderr)
    return 1 if failed or problems else 0
