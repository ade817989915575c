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

Entries hold code this process runs, so kapi uses a cache directory only where nobody but the
user (or root) can have written it; it creates its directories 0700 and its files 0600, and
checks each file it reads on the descriptor it reads it from ("who may have written the
cache" below).

The key's environment part (`environment_token`) covers kapi's and pyfront's sources, the
native libraries, Numba's install and the interpreter's minor version; it is computed once
per process from file metadata (a few dozen stat calls).
"""

from __future__ import annotations

import functools
import marshal
import os
import stat
import sys
import warnings

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


def debugging() -> bool:
    flags = {p.strip().lower() for p in os.environ.get("KAPI_DEBUG", "").split(",")}
    return "cache" in flags or "all" in flags


def debug(msg: str) -> None:
    """KAPI_DEBUG=cache (or all) prints the cache's decisions: hits, misses, refusals."""
    if debugging():
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


def _package_sources(folder: str) -> list[str]:
    """The .py files of a package folder and its subpackages, in a fixed order."""
    files = []
    for root, dirs, names in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not d.startswith("."))
        files += [os.path.join(root, n) for n in sorted(names) if n.endswith(".py")]
    return files


def _source_name(path: str) -> str:
    """What a source is hashed under: its path from its top package's folder (kapi/_kernel/x.py),
    so that kapi/_kernel/x.py and kapi/_numeric/x.py differ and a tree elsewhere with the same
    files gives the same token."""
    parts = os.path.normpath(path).split(os.sep)
    tops = [i for i, p in enumerate(parts) if p in ("kapi", "pyfront", "numba")]
    return "/".join(parts[tops[-1] :]) if tops else os.path.basename(path)


def _sources(here: str) -> list[str]:
    """kapi's sources (here: the package's folder, its subpackages included) and pyfront's
    (they produce the KIR), and Numba's version file."""
    import importlib.util

    files = _package_sources(here)
    spec = importlib.util.find_spec("pyfront")
    if spec and spec.origin:
        files += _package_sources(os.path.dirname(spec.origin))
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


def _inputs() -> tuple[list[str], list[str]]:
    """The files the environment token reads: sources, and native libraries."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the kapi package
    return _sources(here), _libraries(here)


def _content_token(sources: list[str], libraries: list[str]) -> bytes:
    h = _sha256()
    for path in sources:
        try:
            with open(path, "rb") as f:
                h.update(_source_name(path).encode() + b"\0" + f.read())
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

    sources, libraries = _inputs()
    st = _sha256()
    for path in sources + libraries:
        try:
            s = os.stat(path)
            st.update(f"{path}\0{s.st_size}\0{s.st_mtime_ns}\0".encode())
        except OSError:
            st.update(f"{path}\0missing\0".encode())
    head = f"kapi {__version__} format {FORMAT} py {sys.version_info[:2]}\0".encode()
    memo = f"env-{st.hexdigest()[:32]}"
    token = _read(memo)
    if token is not None and len(token) == 32:
        return _sha256(head + token).digest()
    token = _content_token(sources, libraries)
    _write(memo, token)
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
    """The entry's payload, or None on a miss (absent, unreadable, corrupt, foreign, or in a
    directory or file that another user could have written)."""
    data = _read(key + suffix)
    if data is None:
        return None
    path = os.path.join(directory(), key + suffix)
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
    cannot be written or is not trusted (the kernel keeps working from memory)."""
    if not _write(key + suffix, _encode(dict(payload, key=key))):
        return False
    evict(size_cap())
    return True


def _read(name: str) -> bytes | None:
    """The file `name` of the cache directory, or None: absent, unreadable, or written by
    someone this process does not trust (judged on the descriptor it is read from, so the file
    checked is the file read)."""
    trust = _trusted_directory()
    if trust is None:
        return None
    path = os.path.join(trust[0], name)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
    except FileNotFoundError:
        return None
    except OSError as e:
        debug(f"cannot read {path}: {e}")
        return None
    with open(fd, "rb") as f:
        st = os.fstat(fd)
        why = _untrusted(st, path, trust[1])
        if why is None and not stat.S_ISREG(st.st_mode):
            why = (f"{path} is not a file", None)
        if why is not None:
            debug(f"{why[0]}; not loaded")
            return None
        try:
            return f.read()
        except OSError as e:
            debug(f"cannot read {path}: {e}")
            return None


def _write(name: str, data: bytes) -> bool:
    """Writes the file `name` of the cache directory atomically, private to the user (shared
    with the directory's group under KAPI_CACHE_SHARED=group); False if it cannot."""
    trust = _trusted_directory(create=True)
    if trust is None:
        return False
    folder, gid = trust
    try:
        fd, tmp = _mkstemp(folder)  # mode 0600
    except OSError as e:
        _refuse(f"cannot write to {folder} ({e.strerror or e}); compiling in memory")
        return False
    try:
        with os.fdopen(fd, "wb") as f:
            if gid is not None:  # readable by the group that shares the cache
                os.fchown(f.fileno(), -1, gid)
                os.fchmod(f.fileno(), 0o660)
            f.write(data)
        os.replace(tmp, os.path.join(folder, name))
    except OSError as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        _refuse(f"cannot write to {folder} ({e.strerror or e}); compiling in memory")
        return False
    return True


def _refuse(msg: str) -> None:
    if msg not in _reasons_shown:
        _reasons_shown.add(msg)
        debug(msg)


# -- who may have written the cache ------------------------------------------------------------
#
# As OpenSSH's StrictModes does for key files: a directory is trusted when it is owned by the
# user or by root (root can change anything anyway: an administrator's read-only bundle) and is
# writable by nobody else; its parents are checked the same way up to the first the user owns,
# since whoever can write a parent can put another directory in its place. Every file read is
# judged again on its open descriptor, so a file another user slipped in (or a directory
# swapped after the check) is never unmarshalled. KAPI_CACHE_SHARED=group extends the trust to
# the members of the cache directory's group (owners, and group-writable files of that group),
# for a cache shared on purpose. A directory that fails is off for
# the process, with one warning; verdicts are kept per directory (a few stat calls a process).

_verdicts: dict[str, tuple[bool, int | None]] = {}  # directory -> (trusted, shared group)


def _trusted_directory(create: bool = False) -> tuple[str, int | None] | None:
    """(the cache directory, the group it is shared with or None) if this process may read and
    write it; None if it is absent (created first when `create`), unusable or not trusted."""
    folder = directory()
    verdict = _verdicts.get(folder)
    if verdict is None:
        made = _make_private(folder) if create else None
        try:
            why, fix, gid = _judge(folder)
        except FileNotFoundError:
            if not create:
                return None  # nothing to read yet; judged when something is written
            why, fix, gid = f"cannot create {folder} ({made})", None, None
        except OSError as e:
            why, fix, gid = f"cannot use {folder} ({e.strerror or e})", None, None
        verdict = _verdicts[folder] = (why is None, gid)
        if fix is not None:
            _warn(
                f"kapi's disk cache is off in this process: {why}, so code in it could have "
                f"been written by another user. Kernels still run, compiled in memory. {fix} "
                f"(KAPI_DEBUG=cache gives the details.)"
            )
        elif why is not None:
            _refuse(f"{why}; compiling in memory")
    return (folder, verdict[1]) if verdict[0] else None


def _make_private(folder: str) -> str | None:
    """Creates the directory and its missing parents with mode 0700 (os.makedirs gives the
    parents the umask's mode); why it could not, or None."""
    missing = []
    while not os.path.isdir(folder):
        missing.append(folder)
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    for path in reversed(missing):
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:  # another process made it: judged like any other
            pass
        except OSError as e:
            return e.strerror or str(e)
    return None


def refusal() -> str | None:
    """Why this process may not write the cache directory (created if absent), or None if it
    may: `python -m kapi compile` asks before compiling anything for it."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if _trusted_directory(create=True) is not None:
            return None
    folder = directory()
    try:
        why, _, _ = _judge(folder)
    except OSError as e:
        why = f"cannot use {folder} ({e.strerror or e})"
    return why or f"cannot use {folder}"


def _judge(folder: str) -> tuple[str | None, str | None, int | None]:
    """(why the directory is not trusted or None, what to do or None when it is not a question
    of trust, the group it is shared with or None)."""
    real = os.path.realpath(folder)
    st = os.stat(real)
    if not stat.S_ISDIR(st.st_mode):
        return f"{folder} is not a directory", None, None
    gid = None
    if _shared_with_group():
        if st.st_gid not in {os.getegid(), *os.getgroups()}:
            why = f"KAPI_CACHE_SHARED=group, but you are not in {folder}'s group ({st.st_gid})"
            return why, "Ask its owner to add you to the group.", None
        gid = st.st_gid
    path, euid = real, os.geteuid()
    while True:
        what = folder if path == real else f"its parent {path}"
        if debugging():
            debug(f"{path}: owner {_user(st.st_uid)}, group {st.st_gid}, mode {_mode(st)}")
        untrusted = _untrusted(st, what, gid, parent=path != real)
        if untrusted is not None:
            return (*untrusted, gid)
        if st.st_uid == euid:  # the user's own: whoever could replace it is the user
            return None, None, gid
        parent = os.path.dirname(path)
        if parent == path:
            return None, None, gid
        path, st = parent, os.stat(parent)


def _untrusted(st, what: str, gid: int | None, parent: bool = False) -> tuple[str, str] | None:
    """(why, what to do) if another user could have written this file or directory, else None.
    Parents may be sticky and open to all (/tmp): there only a name's owner may replace it."""
    mode, euid = st.st_mode, os.geteuid()
    sticky = parent and mode & stat.S_ISVTX
    own = "point KAPI_CACHE_DIR at a directory of your own"
    if mode & stat.S_IWOTH and not sticky:
        why = f"{what} is writable by every user (mode {_mode(st)})"
    elif st.st_uid not in (euid, 0) and not (gid is not None and _member(st.st_uid, gid)):
        why = f"{what} is owned by {_user(st.st_uid)}, not by you ({_user(euid)})"
        if gid is not None:
            why += f" nor by a member of group {gid}"
        if parent:
            return why, f"Move the cache: {own}."
        return why, (
            f"Remove it or {own}; a cache shared on purpose is set up as kapi's guide says "
            f'(docs/guide/environment.md, "Disk cache").'
        )
    elif mode & stat.S_IWGRP and st.st_gid != gid and not sticky:
        why = f"{what} is writable by its group (mode {_mode(st)})"
        if not parent:
            return why, (
                f"Run `chmod go-w {what}` or {own} (or, if every member of its group may run "
                f"code in your processes, set KAPI_CACHE_SHARED=group)."
            )
    else:
        return None
    path = what.removeprefix("its parent ")
    return why, f"Run `chmod go-w {path}` or {own}."


@functools.cache
def _member(uid: int, gid: int) -> bool:
    """Whether user uid is in group gid (as its primary group or a listed member)."""
    try:
        import grp
        import pwd

        user = pwd.getpwuid(uid)
        return user.pw_gid == gid or user.pw_name in grp.getgrgid(gid).gr_mem
    except (ImportError, KeyError):
        return False


def _shared_with_group() -> bool:
    return os.environ.get("KAPI_CACHE_SHARED", "").strip().lower() == "group"


def _user(uid: int) -> str:
    try:
        import pwd

        return f"uid {uid} ({pwd.getpwuid(uid).pw_name})"
    except (ImportError, KeyError):
        return f"uid {uid}"


def _mode(st) -> str:
    return f"{stat.S_IMODE(st.st_mode):04o}"


def _warn(msg: str) -> None:
    """A UserWarning shown at the first frame outside kapi (the user's call that needed it)."""
    import warnings

    package = os.path.dirname(sys.modules[__name__.partition(".")[0]].__file__) + os.sep
    frame, level = sys._getframe(0), 1
    while frame is not None and frame.f_code.co_filename.startswith(package):
        frame, level = frame.f_back, level + 1
    warnings.warn(msg, UserWarning, stacklevel=level)


# -- listing and eviction ----------------------------------------------------------------------


def entries() -> list[tuple[str, int, float]]:
    """(path, size, mtime) of every entry, oldest first."""
    out = []
    trust = _trusted_directory()
    if trust is None:
        return out
    try:
        it = os.scandir(trust[0])
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
    trust = _trusted_directory()
    if trust is None:
        return 0
    try:
        for n in os.listdir(trust[0]):
            if n.startswith(("env-", ".tmp-")):
                try:
                    os.unlink(os.path.join(trust[0], n))
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
    data = _read(os.path.basename(path))
    if data is None:
        return {"error": "unreadable, or written by another user (KAPI_DEBUG=cache says which)"}
    payload, why = _decode(data)
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
    # bounds-checked, register-capped or fastmath kernels differ; others keep their old keys
    opts = {}
    if getattr(dispatcher, "boundscheck", False):
        opts["boundscheck"] = True
    if getattr(dispatcher, "max_registers", None):
        opts["max_registers"] = dispatcher.max_registers
    if getattr(dispatcher, "fastmath", None):
        opts["fastmath"] = sorted(dispatcher.fastmath)
    if getattr(dispatcher, "required_group_size", None):
        opts["required_group_size"] = list(dispatcher.required_group_size)
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

    from .identity import main_module_for

    cls = main_module_for(module) or importlib.import_module(module)
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
    from .identity import module_name

    return (module_name(cls.__module__), cls.__qualname__, tuple(args), filename, line)


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
