"""`python -m kapi`: kapi's command line. With no command it lists the drivers and devices kapi
sees, like sycl-ls (`-v` adds properties); `cache` and `compile` work the disk cache
(kapi/_cli.py). `python -m kapi --help` lists the commands."""

from __future__ import annotations

import argparse
import os
import signal
import sys

COMMANDS = {
    "devices": "list the drivers and devices kapi sees (the default command)",
    "cache": "show or clear the disk cache of compiled kernels",
    "compile": "compile a module's kernels ahead of time into the disk cache",
}


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m kapi",
        usage="python -m kapi [-h] [-v] [--include | --cmake-dir] [COMMAND [ARGS ...]]",
        description="kapi: Python kernels compiled to SPIR-V and run through Level Zero.",
        epilog="`python -m kapi COMMAND --help` describes a command's own options.",
    )
    p.add_argument("-v", "--verbose", action="store_true", help="list each device's properties")
    # Where the C API for native extensions is (docs/guide/c-api.md), as pybind11's flags.
    paths = p.add_mutually_exclusive_group()
    paths.add_argument(
        "--include", action="store_true", help="print the folder of <kapi/capi.h> and exit"
    )
    paths.add_argument(
        "--cmake-dir", action="store_true", help="print the folder of kapiConfig.cmake and exit"
    )
    sub = p.add_subparsers(dest="command", metavar="COMMAND", title="commands")
    for name, text in COMMANDS.items():
        # Each command parses its own arguments (kapi/_cli.py): this parser only picks the
        # command, so it takes the rest as they are (no prefix char means no option here).
        c = sub.add_parser(name, help=text, add_help=False, prefix_chars="\0")
        c.add_argument("args", nargs=argparse.REMAINDER)
    return p


def devices_main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="python -m kapi devices", description=COMMANDS["devices"])
    p.add_argument("-v", "--verbose", action="store_true", help="list each device's properties")
    verbose = p.parse_args(argv).verbose
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


def main(argv: list[str]) -> int:
    a = _parser().parse_args(argv)  # an unknown command exits with status 2 and the usage
    if a.include or a.cmake_dir:
        from . import _capi

        print(_capi.get_include() if a.include else _capi.get_cmake_dir())
        return 0
    if a.command in ("cache", "compile"):
        from . import _cli

        return (_cli.cache_main if a.command == "cache" else _cli.compile_main)(a.args)
    rest = a.args if a.command == "devices" else []
    return devices_main((["-v"] if a.verbose else []) + rest)


def run(argv: list[str]) -> int:
    """main(), except that a reader closing the pipe early (`python -m kapi cache -v | head`)
    ends the command quietly with the status a shell gives a writer killed by SIGPIPE."""
    try:
        status = main(argv)
        sys.stdout.flush()  # inside the try: the last write may be the one that finds no reader
    except BrokenPipeError:
        # Point stdout at /dev/null so the interpreter's own flush at exit fails no more.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + signal.SIGPIPE
    return status


if __name__ == "__main__":
    sys.exit(run(sys.argv[1:]))
