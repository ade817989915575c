"""The on-disk kernel cache (docs/guide/environment.md, "Disk cache").

Entries are files named by a SHA-256 key: `<key>.spv` holds one specialisation's entry name,
KIR, LLVM IR and SPIR-V (device-independent); `<key>.nat` holds a device program's native
binary (Level Zero's zeModuleGetNativeBinary), keyed by the SPIR-V entry's key plus the
driver, the device and the driver's build. Each file is a header (magic, format, payload
length, SHA-256 of the payload) then a marshal payload; anything that does not check out is
a miss, and the entry is rewritten. Writers write a temporary file and rename it, so readers
never see a partial entry and concurrent writers of one key leave one whole file. A hit
refreshes the entry's mtime; when the directory grows past its cap the least recently used
entries go. A directory that cannot be written is not an error: kernels compile in memory.

The key's environment part (`environment_token`) covers kapi's and pyfront's sources, the
native libraries, Numba's install and the interpreter's minor version; it is computed once
per process from file metadata (a few dozen stat calls).
"""

from __future__ import annotations

import functools
import marshal
import os
import sys

try:  # CPython's built-in SHA-256: `import hashlib` (OpenSSL) would cost `import kapi` time
    from _sha2 import sha256 as _sha256  # Python >= 3.12
except ImportError:  # pragma: no cover - depends on the interpreter
    try:
        from _sha256 import sha256 as _sha256  # Python 3.11
    except ImportError:
        from hashlib import sha256 as _sha256

MAGIC = b"KAPICACHE\x00"
FORMAT = 1
_HEADER = len(MAGIC) + 4 + 8 + 32
_DEFAULT_CAP = 1 << 30  # 1 GiB
SUFFIXES = (".spv", ".nat")

_reasons_shown: set[str] = set()


def debug(msg: str) -> None:
    """KAPI_DEBUG=cache (or all) prints the cache's decisions: hits, misses, refusals."""
    flags = {p.strip().lower() for p in os.environ.get("KAPI_DEBUG", "").split(",")}
    if "cache" in flags or "all" in flags:
        print(f"kapi cache: {msg}", file=sys.stderr, flush=True)


def enabled() -> bool:
    return os.environ.get("KAPI_CACHE", "1").strip().lower() not in ("0", "off", "false", "no")


def directory() -> str:
    d = os.environ.get("KAPI_CACHE_DIR")
    if d:
        return os.path.abspath(os.path.expanduser(d))
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "kapi")


def size_cap() -> int:
    """KAPI_CACHE_SIZE: bytes, or with a K/M/G suffix; default 1G."""
    v = os.environ.get("KAPI_CACHE_SIZE", "").strip().upper()
    if not v:
        return _DEFAULT_CAP
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(v[-1:], 1)
    try:
        return int(float(v[:-1] if mult > 1 else v) * mult)
    except ValueError:
        debug(f"KAPI_CACHE_SIZE={v!r} is not a size; using 1G")
        return _DEFAULT_CAP


# -- the environment part of every key ---------------------------------------------------------


def _elf_build_id(data: bytes) -> bytes | None:
    """The GNU build-id note of an ELF64 little-endian file's first bytes (the linker's hash of
    the library's content), or None."""
    if data[:6] != b"\x7fELF\x02\x01":
        return None
    phoff = int.from_bytes(data[32:40], "little")
    phentsize = int.from_bytes(data[54:56], "little")
    for i in range(int.from_bytes(data[56:58], "little")):
        ph = data[phoff + i * phentsize : phoff + (i + 1) * phentsize]
        if len(ph) < 56 or int.from_bytes(ph[0:4], "little") != 4:  # PT_NOTE
            continue
        off, size = int.from_bytes(ph[8:16], "little"), int.from_bytes(ph[32:40], "little")
        note, at = data[off : off + size], 0
        while at + 12 <= len(note):
            namesz, descsz, ntype = (
                int.from_bytes(note[at + k : at + k + 4], "little") for k in (0, 4, 8)
            )
            name_end = at + 12 + ((namesz + 3) & ~3)
            if ntype == 3 and note[at + 12 : at + 12 + namesz] == b"GNU\x00":
                return note[name_end : name_end + descsz]
            at = name_end + ((descsz + 3) & ~3)
    return None


def _sources(here: str) -> list[str]:
    import importlib.util

    files = []
    folders = [here]
    spec = importlib.util.find_spec("pyfront")
    if spec and spec.origin:
        folders.append(os.path.dirname(spec.origin))
    for folder in folders:
        try:
            files += [
                os.path.join(folder, n) for n in sorted(os.listdir(folder)) if n.endswith(".py")
            ]
        except OSError:
            pass
    spec = importlib.util.find_spec("numba")
    if spec and spec.origin:
        files.append(os.path.join(os.path.dirname(spec.origin), "_version.py"))
    return files


def _libraries(here: str) -> list[str]:
    folder = os.path.join(here, "_lib")
    try:
        return [os.path.join(folder, n) for n in sorted(os.listdir(folder)) if n.endswith(".so")]
    except OSError:
        return []


def _content_token(sources: list[str], libraries: list[str]) -> bytes:
    h = _sha256()
    for path in sources:
        try:
            with open(path, "rb") as f:
                h.update(os.path.basename(path).encode() + b"\0" + f.read())
        except OSError:
            h.update(f"{path}: missing".encode())
    for path in libraries:
        try:
            with open(path, "rb") as f:
                head = f.read(1 << 16)
                bid = _elf_build_id(head)
                if bid is None:  # no build id: the whole library
                    bid = _sha256(head + f.read()).digest()
        except OSError:
            bid = b"missing"
        h.update(os.path.basename(path).encode() + b"\0" + bid)
    return h.digest()


@functools.cache
def environment_token() -> bytes:
    """What besides the kernel changes compiled code, by content so that a bundle serves another
    machine: kapi's version and sources, pyfront's sources (they produce the KIR), the native
    libraries' build ids, Numba's version (its typing) and the interpreter's minor version.
    Hashing the sources costs milliseconds, so the result is remembered in the cache directory
    under a digest of the files' sizes and times."""
    from .. import __version__

    here = os.path.dirname(os.path.abspath(__file__))
    sources, libraries = _sources(here), _libraries(here)
    st = _sha256()
    for path in sources + libraries:
        try:
            s = os.stat(path)
            st.update(f"{path}\0{s.st_size}\0{s.st_mtime_ns}\0".encode())
        except OSError:
            st.update(f"{path}\0missing\0".encode())
    head = f"kapi {__version__} format {FORMAT} py {sys.version_info[:2]}\0".encode()
    memo = os.path.join(directory(), f"env-{st.hexdigest()[:32]}")
    try:
        with open(memo, "rb") as f:
            token = f.read()
        if len(token) == 32:
            return _sha256(head + token).digest()
    except OSError:
        pass
    token = _content_token(sources, libraries)
    try:
        os.makedirs(os.path.dirname(memo), exist_ok=True)
        fd, tmp = _mkstemp(os.path.dirname(memo))
        with os.fdopen(fd, "wb") as f:
            f.write(token)
        os.replace(tmp, memo)
    except OSError:
        pass
    return _sha256(head + token).digest()


def _mkstemp(folder: str):
    import tempfile  # only writers need it (it imports shutil, random, compression modules)

    return tempfile.mkstemp(prefix=".tmp-", dir=folder)


# -- entry files -------------------------------------------------------------------------------


def _encode(payload) -> bytes:
    body = marshal.dumps(payload)
    return b"".join(
        (
            MAGIC,
            FORMAT.to_bytes(4, "little"),
            len(body).to_bytes(8, "little"),
            _sha256(body).digest(),
            body,
        )
    )


def _decode(data: bytes):
    """The payload, or None (with the reason under KAPI_DEBUG) if the file does not check out."""
    if len(data) < _HEADER or not data.startswith(MAGIC):
        return None, "not a kapi cache entry (bad header)"
    p = len(MAGIC)
    if int.from_bytes(data[p : p + 4], "little") != FORMAT:
        return None, "written by another cache format"
    n = int.from_bytes(data[p + 4 : p + 12], "little")
    body = data[_HEADER:]
    if len(body) != n:
        return None, f"truncated ({len(body)} of {n} payload bytes)"
    if _sha256(body).digest() != data[p + 12 : p + 44]:
        return None, "checksum mismatch"
    try:
        return marshal.loads(body), None
    except (ValueError, EOFError, TypeError) as e:
        return None, f"unreadable payload ({e})"


def load(key: str, suffix: str):
    """The entry's payload, or None on a miss (absent, unreadable, corrupt or foreign)."""
    path = os.path.join(directory(), key + suffix)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return None
    except OSError as e:
        debug(f"cannot read {path}: {e}")
        return None
    payload, why = _decode(data)
    if why is None and not (isinstance(payload, dict) and payload.get("key") == key):
        payload, why = None, "holds another key"
    if why is not None:
        debug(f"{path}: {why}; recompiling")
        return None
    try:
        os.utime(path)  # least recently used goes first
    except OSError:
        pass
    return payload


def store(key: str, suffix: str, payload: dict) -> bool:
    """Writes the entry atomically (temporary file, then rename); False if the directory
    cannot be written (the kernel keeps working from memory)."""
    folder = directory()
    payload = dict(payload, key=key)
    try:
        os.makedirs(folder, exist_ok=True)
        fd, tmp = _mkstemp(folder)
    except OSError as e:
        _refuse(f"cannot write to {folder} ({e.strerror or e}); compiling in memory")
        return False
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(_encode(payload))
        os.replace(tmp, os.path.join(folder, key + suffix))
    except OSError as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        _refuse(f"cannot write to {folder} ({e.strerror or e}); compiling in memory")
        return False
    evict(size_cap())
    return True


def _refuse(msg: str) -> None:
    if msg not in _reasons_shown:
        _reasons_shown.add(msg)
        debug(msg)


# -- listing and eviction ----------------------------------------------------------------------


def entries() -> list[tuple[str, int, float]]:
    """(path, size, mtime) of every entry, oldest first."""
    out = []
    try:
        it = os.scandir(directory())
    except OSError:
        return out
    with it:
        for e in it:
            if e.name.endswith(SUFFIXES) and e.is_file(follow_symlinks=False):
                try:
                    st = e.stat(follow_symlinks=False)
                except OSError:
                    continue
                out.append((e.path, st.st_size, st.st_mtime))
    out.sort(key=lambda t: t[2])
    return out


def evict(cap: int) -> int:
    """Removes least recently used entries until the total is at most cap; returns how many."""
    es = entries()
    total = sum(s for _, s, _ in es)
    removed = 0
    for path, size, _ in es:
        if total <= cap:
            break
        try:
            os.unlink(path)
        except OSError:
            continue
        total -= size
        removed += 1
        debug(f"evicted {os.path.basename(path)} ({size} bytes)")
    return removed


def clear() -> int:
    """Removes every entry (and the remembered environment digests); returns how many entries."""
    removed = 0
    try:
        for n in os.listdir(directory()):
            if n.startswith(("env-", ".tmp-")):
                try:
                    os.unlink(os.path.join(directory(), n))
                except OSError:
                    pass
    except OSError:
        pass
    for path, _, _ in entries():
        try:
            os.unlink(path)
            removed += 1
        except OSError:
            pass
    return removed


def describe(path: str) -> dict | None:
    """An entry's payload minus the bulky parts, for `python -m kapi cache`."""
    try:
        with open(path, "rb") as f:
            payload, why = _decode(f.read())
    except OSError as e:
        return {"error": str(e)}
    if why is not None:
        return {"error": why}
    return {k: v for k, v in payload.items() if k in ("kernel", "signature", "device", "key")}


# -- keys ------------------------------------------------------------------------------------


def spirv_key(identity: bytes, index, argtypes, opt_level: int, options) -> str:
    h = _sha256(environment_token())
    h.update(identity)
    h.update(repr((index, tuple(argtypes), int(opt_level), options)).encode())
    return h.hexdigest()


def native_key(spirv_key_: str, device_token: str) -> str:
    return _sha256(f"{spirv_key_}\0{device_token}".encode()).hexdigest()


# -- the dispatcher's side (kapi/_kernel/dispatcher.py calls these)
# ----------------------------------------


def spirv_lookup(dispatcher, index, argtypes):
    """(key, payload): payload is the cached specialisation or None; key is None when the
    kernel is not cached on disk (off, or a value it reads cannot be hashed)."""
    if not dispatcher.options.get("cache", True) or not enabled():
        return None, None
    from .identity import Uncacheable, identity

    try:
        ident = identity(dispatcher.py_func)
    except Uncacheable as e:
        dispatcher._cache_refusal = str(e)
        _refuse(f"kernel {dispatcher.__qualname__} is not cached on disk: {e}")
        return None, None
    except RecursionError:
        dispatcher._cache_refusal = "values nested too deeply to hash"
        return None, None
    except Exception as e:  # a value that fails when inspected: the cache is never in the way
        dispatcher._cache_refusal = f"{type(e).__name__} while hashing: {e}"
        _refuse(f"kernel {dispatcher.__qualname__} is not cached on disk: {e}")
        return None, None
    dispatcher._cache_refusal = None
    # bounds-checked or register-capped kernels differ; others keep the keys they always had
    opts = {}
    if getattr(dispatcher, "boundscheck", False):
        opts["boundscheck"] = True
    if getattr(dispatcher, "max_registers", None):
        opts["max_registers"] = dispatcher.max_registers
    key = spirv_key(ident, index, argtypes, dispatcher.opt_level, opts or None)
    payload = load(key, ".spv")
    debug(f"{'hit' if payload else 'miss'} {dispatcher.__qualname__} {key[:16]}")
    here = dispatcher.py_func.__code__.co_filename
    if payload and payload.get("file", here) != here:  # the same source elsewhere (a bundle)
        old, new = f'file "{payload["file"]}"', f'file "{here}"'
        payload["kir"] = payload["kir"].replace(old, new)
        payload["raises"] = [
            (*site[:3], here if site[3] == payload["file"] else site[3], site[4])
            for site in payload.get("raises", ())
        ]
    if payload:
        try:
            payload["raises"] = tuple(_raise_site(*site) for site in payload.get("raises", ()))
        except (ImportError, AttributeError) as e:  # the exception class is gone: recompile
            debug(f"stale raise site in {key[:16]}: {e}")
            return key, None
        payload["prints"] = bool(payload.get("prints", False))
    return key, payload


# Raise sites (assert/raise in kernels, docs/kir.md) hold exception classes, which marshal cannot
# write: an entry names each class by module and qualified name, found again on a hit.
def _raise_site(module, qualname, args, filename, line):
    import importlib

    cls = importlib.import_module(module)
    for part in qualname.split("."):
        cls = getattr(cls, part)
    return (cls, tuple(args), filename, line)


def _raise_record(site):
    cls, args, filename, line = site
    if "<locals>" in cls.__qualname__:
        raise TypeError(f"exception class {cls.__qualname__} defined in a function")
    try:
        marshal.dumps(tuple(args))
    except ValueError:
        raise TypeError(f"arguments of {cls.__qualname__} cannot be stored") from None
    return (cls.__module__, cls.__qualname__, tuple(args), filename, line)


def spirv_store(key, ck) -> None:
    if key is None:
        return
    try:
        raises = [_raise_record(site) for site in ck.raises]
    except TypeError as e:
        debug(f"not stored: {e}")
        return
    store(
        key,
        ".spv",
        {
            "kernel": f"{ck.dispatcher.__module__}.{ck.dispatcher.__qualname__}",
            "signature": ck.signature,
            "file": ck.dispatcher.py_func.__code__.co_filename,
            "entry": ck.entry,
            "kir": ck.kir,
            "llvm_ir": ck.llvm_ir,
            "spirv": ck.spirv,
            "raises": raises,
            "prints": bool(ck.prints),
        },
    )


# -- native binaries: the launch path's first use of a kernel on a device ----------------------


def device_token(device_index: int) -> str:
    """What a native binary depends on besides the SPIR-V: the driver and its version, the
    device (its name gives the architecture), and the drivers' code-generation settings."""
    from .._memory.device import _all_devices

    info = _all_devices()[device_index]._info
    env = sorted(
        (k, v) for k, v in os.environ.items() if k.startswith(("KAPI_HOST_", "KAPI_CUDA_"))
    )
    return repr((info["driver_name"], info["driver_version"], info["name"], env))


def native_prepare(ck, device_index: int) -> None:
    """Before a kernel's first launch on a device: hands a cached native binary to the
    runtime, or keeps the one the runtime builds now. A binary the driver refuses (another
    CPU, a newer driver) is rebuilt and replaced."""
    from .. import _native

    ext = _native.ext()
    key = native_key(ck.cache_key, device_token(device_index))
    payload = load(key, ".nat")
    if payload is not None:
        why = ext.rt_cache_native(device_index, ck.spirv, payload["native"])
        if why is None:
            debug(f"native hit {ck.dispatcher.__qualname__} on device {device_index}")
            return
        debug(f"native binary refused ({why}); rebuilding from SPIR-V")
    native = ext.rt_native_binary(device_index, ck.spirv)
    if native is None:
        debug(f"device {device_index}'s driver gives no native binaries; SPIR-V cached only")
        return
    from .._memory.device import _all_devices

    store(
        key,
        ".nat",
        {
            "kernel": f"{ck.dispatcher.__module__}.{ck.dispatcher.__qualname__}",
            "signature": ck.signature,
            "device": _all_devices()[device_index].name,
            "native": native,
        },
    )
