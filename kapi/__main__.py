"""`python -m kapi`: the drivers and devices kapi sees, like sycl-ls. `-v` adds properties.

`python -m kapi cache ...` and `python -m kapi compile ...` work the disk cache (kapi/_cli.py)."""

from __future__ import annotations

import sys


def main(argv: list[str]) -> int:
    if argv and argv[0] in ("cache", "compile"):
        from . import _cli

        return (_cli.cache_main if argv[0] == "cache" else _cli.compile_main)(argv[1:])
    verbose = "-v" in argv or "--verbose" in argv
    from . import _native
    from ._memory.device import default_device, devices

    try:
        devs = devices()
    except Exception as e:  # report, never a traceback
        print(f"kapi: cannot list devices: {e}", file=sys.stderr)
        return 1
    print(f"drivers: {_native.ext().rt_driver_list() or '(none)'}")
    if not devs:
        print("no devices")
        return 1
    default = default_device()
    for d in devs:
        mark = "*" if d == default else " "
        print(f"{mark}[{d.filter_string}] {d.name} ({d.vendor}; driver {d.driver_name})")
        if verbose:
            for k, v in sorted(d.info.items()):
                if k != "uuid":
                    print(f"      {k}: {v}")
    print("* default device (KAPI_DEFAULT_DEVICE overrides)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
