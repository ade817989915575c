"""Who may have written kapi's disk cache (kapi/_cache.py; docs/guide/environment.md, "Disk
cache"). Entries hold code kapi runs in the user's process, so a cache directory that another
user could write is refused with one warning (the kernels still run), another user's entry or
environment memo is never read, new directories are 0700 and files 0600, and a bundle that root
installed read-only is trusted.

Each case runs as root (another user's files are chowned to nobody) and as a plain user: a
forked child of this process that drops to nobody when the tests run as root (the interpreter
is already loaded, so nobody need not be able to read it), or the test process itself when it
is not root. Where a case needs a file owned by someone else and the tests cannot chown, it
skips and says so."""

import contextlib
import grp  # noqa: F401 - imported before a child drops to nobody, who may not read the stdlib
import io
import marshal
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import traceback
import warnings
from pathlib import Path

import pytest

from kapi._cache import store as _cache

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
IS_ROOT = os.geteuid() == 0
KEY = "5e" * 32
PAYLOAD = {"kernel": "k", "spirv": b"\x03\x02\x23\x07"}
WARNING = "kapi's disk cache is off in this process"


def _nobody():
    try:
        return pwd.getpwnam("nobody")
    except KeyError:
        return None


class User:
    """Who runs a case: uid and gid, `other` (a uid whose files this user must not trust; None
    where the tests cannot make such files) and whether the case runs in a forked child."""

    def __init__(self, name, uid, gid, other, fork):
        self.name, self.uid, self.gid, self.other, self.fork = name, uid, gid, other, fork

    def need_other(self):
        if self.other is None:
            pytest.skip("files owned by another user need root to make (chown)")
        return self.other


def _root():
    nobody = _nobody()
    return pytest.param(
        User("root", 0, 0, nobody.pw_uid if nobody else None, False),
        id="root",
        marks=pytest.mark.skipif(not IS_ROOT, reason="the tests do not run as root"),
    )


def _plain():
    nobody = _nobody()
    if IS_ROOT and nobody is None:
        return pytest.param(None, id="plain", marks=pytest.mark.skip("no user nobody"))
    if IS_ROOT:  # 4242, a uid with no account, is the plain user's "another user"
        return pytest.param(User("nobody", nobody.pw_uid, nobody.pw_gid, 4242, True), id="plain")
    me = User(pwd.getpwuid(os.geteuid()).pw_name, os.geteuid(), os.getegid(), None, False)
    return pytest.param(me, id="plain")


@pytest.fixture(params=[_root(), _plain()])
def user(request):
    return request.param


@pytest.fixture(params=[_plain()])
def plain_user(request):
    return request.param


@pytest.fixture
def base(request):
    """A directory of the user's own, which the user can reach (pytest's tree is private)."""
    user = request.getfixturevalue("plain_user" if "plain_user" in request.fixturenames else "user")
    d = Path(tempfile.mkdtemp(prefix="kapi-trust-"))
    give(d, user.uid, user.gid)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def give(path, uid, gid=-1):
    if IS_ROOT:
        os.chown(path, uid, gid, follow_symlinks=False)
    elif uid != os.geteuid() or gid not in (-1, os.getegid(), *os.getgroups()):
        pytest.skip("files owned by another user need root to make (chown)")


def make_dir(path, mode, uid, gid=-1):
    path.mkdir(parents=True, exist_ok=True)
    give(path, uid, gid)
    os.chmod(path, mode)
    return path


def make_entry(folder, mode, uid, gid=-1, key=KEY, suffix=".spv"):
    path = folder / (key + suffix)
    path.write_bytes(_cache._encode(dict(PAYLOAD, key=key)))
    give(path, uid, gid)
    os.chmod(path, mode)
    return path


# -- running a case as the user -----------------------------------------------------------------


def _fresh():
    _cache._verdicts.clear()
    _cache._reasons_shown.clear()
    _cache.environment_token.cache_clear()


def _call(fn, env):
    """fn() under env (None deletes a variable) with the cache's per-process state fresh; its
    result, the UserWarnings it raised and what it printed to stderr."""
    saved = {k: os.environ.get(k) for k in env}
    old_umask = os.umask(0o022)
    _fresh()
    try:
        for k, v in env.items():
            os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, v)
        err = io.StringIO()
        with warnings.catch_warnings(record=True) as ws, contextlib.redirect_stderr(err):
            warnings.simplefilter("always")
            result = fn()
        shown = [str(w.message) for w in ws if issubclass(w.category, UserWarning)]
        return {"result": result, "warnings": shown, "stderr": err.getvalue()}
    finally:
        os.umask(old_umask)
        for k, v in saved.items():
            os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, v)
        _fresh()


def run_as(user, fn, **env):
    """Runs fn as the user (a forked child that drops to the user where the tests are root);
    fn's result must be marshal-able."""
    env.setdefault("KAPI_DEBUG", "cache")
    if not user.fork:
        return _call(fn, env)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 1
        try:
            os.close(r)
            os.setgroups([user.gid])
            os.setgid(user.gid)
            os.setuid(user.uid)
            out = ("ok", _call(fn, env))
            code = 0
        except BaseException:
            out = ("error", traceback.format_exc())
        finally:
            try:
                try:
                    data = marshal.dumps(out)
                except ValueError:
                    data = marshal.dumps(("error", f"cannot marshal {out!r}"))
                with os.fdopen(w, "wb") as f:
                    f.write(data)
            finally:
                os._exit(code)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        data = f.read()
    os.waitpid(pid, 0)
    status, out = marshal.loads(data)
    assert status == "ok", f"as {user.name}:\n{out}"
    return out


def store_and_load():
    return {"stored": _cache.store(KEY, ".spv", PAYLOAD), "loaded": _cache.load(KEY, ".spv")}


def load():
    return _cache.load(KEY, ".spv")


# -- new directories and files are private -----------------------------------------------------


def test_new_directories_and_files_are_private(user, base):
    def act():
        store_and_load()
        _cache.environment_token()
        return {
            os.path.relpath(os.path.join(d, n), str(base)): os.stat(os.path.join(d, n)).st_mode
            for d, dirs, files in os.walk(str(base))
            for n in dirs + files
        }

    out = run_as(user, act, KAPI_CACHE_DIR=str(base / "a" / "b" / "cache"))["result"]
    modes = {p: m & 0o7777 for p, m in out.items()}
    memo = [p for p in modes if os.path.basename(p).startswith("env-")]
    assert len(memo) == 1
    assert modes == {
        "a": 0o700,
        "a/b": 0o700,
        "a/b/cache": 0o700,
        f"a/b/cache/{KEY}.spv": 0o600,
        memo[0]: 0o600,
    }
    # the default location: $XDG_CACHE_HOME/kapi, parents made as private as the cache
    out = run_as(user, act, KAPI_CACHE_DIR=None, XDG_CACHE_HOME=str(base / "xdg"))["result"]
    assert out["xdg"] & 0o7777 == 0o700 and out["xdg/kapi"] & 0o7777 == 0o700


def test_the_directory_is_judged_once_per_process(user, base, monkeypatch):
    calls = []
    judge = _cache._judge

    def act():
        _cache._judge = lambda folder: calls.append(folder) or judge(folder)
        try:
            for _ in range(3):
                store_and_load()
            return len(calls)
        finally:
            _cache._judge = judge

    assert run_as(user, act, KAPI_CACHE_DIR=str(base / "cache"))["result"] == 1


# -- directories another user could write --------------------------------------------------------


@pytest.mark.parametrize(
    "mode", [0o777, 0o1777, 0o775, 0o757], ids=["0777", "sticky-1777", "group-0775", "0757"]
)
def test_open_directory_is_refused_with_one_warning(user, base, mode):
    cache = make_dir(base / "cache", mode, user.uid)
    entry = make_entry(cache, 0o600, user.uid)  # a good entry: not loaded from there either

    def act():
        return [store_and_load(), store_and_load(), _cache.entries()]

    out = run_as(user, act, KAPI_CACHE_DIR=str(cache))
    first, second, listed = out["result"]
    assert first == second == {"stored": False, "loaded": None} and listed == []
    (w,) = out["warnings"]
    assert WARNING in w and str(cache) in w and f"(mode {mode:04o})" in w
    assert f"chmod go-w {cache}" in w and "KAPI_DEBUG=cache" in w
    assert "Kernels still run" in w
    assert os.listdir(cache) == [entry.name]  # nothing written
    assert f"mode {mode:04o}" in out["stderr"]  # KAPI_DEBUG=cache: what was checked


def test_foreign_directory_is_refused(user, base):
    other = user.need_other()
    cache = make_dir(base / "cache", 0o755, other)
    make_entry(cache, 0o644, other)
    out = run_as(user, store_and_load, KAPI_CACHE_DIR=str(cache))
    assert out["result"] == {"stored": False, "loaded": None}
    (w,) = out["warnings"]
    assert f"{cache} is owned by uid {other}" in w and f"not by you (uid {user.uid}" in w
    assert "KAPI_CACHE_DIR at a directory of your own" in w and '"Disk cache"' in w


def test_not_a_directory_turns_the_cache_off_quietly(user, base):
    (base / "file").write_text("not a directory")
    give(base / "file", user.uid)
    out = run_as(user, store_and_load, KAPI_CACHE_DIR=str(base / "file" / "cache"))
    assert out["result"] == {"stored": False, "loaded": None} and out["warnings"] == []


# -- files another user could have written -----------------------------------------------------


@pytest.mark.parametrize("how", ["other-owner", "group-writable", "world-writable", "symlink"])
def test_foreign_entry_is_never_loaded_and_is_replaced(user, base, how):
    cache = make_dir(base / "cache", 0o700, user.uid)
    if how == "other-owner":
        make_entry(cache, 0o644, user.need_other())
    elif how == "symlink":  # to a good entry elsewhere: a link is never followed
        elsewhere = make_dir(base / "elsewhere", 0o700, user.uid)
        (cache / (KEY + ".spv")).symlink_to(make_entry(elsewhere, 0o600, user.uid))
        give(cache / (KEY + ".spv"), user.uid)
    else:
        make_entry(cache, 0o620 if how == "group-writable" else 0o606, user.uid)

    def act():
        before = load()
        after = store_and_load()
        st = os.stat(os.path.join(str(cache), KEY + ".spv"))
        return [before, after, st.st_uid, st.st_mode & 0o7777]

    out = run_as(user, act, KAPI_CACHE_DIR=str(cache))
    before, after, uid, mode = out["result"]
    assert before is None and out["warnings"] == []
    assert "not loaded" in out["stderr"] or "cannot read" in out["stderr"]
    assert after == {"stored": True, "loaded": dict(PAYLOAD, key=KEY)}  # rewritten: the user's
    assert (uid, mode) == (user.uid, 0o600)


def test_environment_memo_follows_the_same_rule(user, base):
    cache = make_dir(base / "cache", 0o700, user.uid)

    def token():
        return _cache.environment_token()

    real = run_as(user, token, KAPI_CACHE_DIR=str(cache))["result"]
    (memo,) = [p for p in cache.iterdir() if p.name.startswith("env-")]
    memo.write_bytes(b"\x01" * 32)  # a forged memo the user's own: it is used
    assert run_as(user, token, KAPI_CACHE_DIR=str(cache))["result"] != real
    give(memo, user.need_other())  # another user's: ignored
    os.chmod(memo, 0o644)
    out = run_as(user, token, KAPI_CACHE_DIR=str(cache))
    assert out["result"] == real and "not loaded" in out["stderr"]


# -- a cache shared on purpose: a bundle root installed, a group that opts in --------------------


def test_bundle_installed_by_root_is_trusted_read_only(user, base):
    if not IS_ROOT:
        pytest.skip("a bundle owned by root needs root to install")
    bundle = make_dir(base / "opt" / "bundle", 0o755, 0, 0)
    os.chown(base / "opt", 0, 0)
    os.chmod(base / "opt", 0o755)
    make_entry(bundle, 0o644, 0, 0)
    out = run_as(user, store_and_load, KAPI_CACHE_DIR=str(bundle))
    assert out["result"]["loaded"] == dict(PAYLOAD, key=KEY) and out["warnings"] == []
    if user.uid != 0:  # the plain user cannot write there: misses compile in memory, quietly
        assert out["result"]["stored"] is False and "cannot write" in out["stderr"]
    os.chmod(bundle / (KEY + ".spv"), 0o666)  # an entry anyone could have rewritten
    out = run_as(user, load, KAPI_CACHE_DIR=str(bundle))
    assert out["result"] is None and "writable by every user" in out["stderr"]
    os.chmod(bundle, 0o777)
    out = run_as(user, store_and_load, KAPI_CACHE_DIR=str(bundle))
    assert out["result"] == {"stored": False, "loaded": None} and len(out["warnings"]) == 1


@pytest.mark.parametrize(
    "parent, trusted",
    [
        ((0o755, "root"), True),
        ((0o1777, "root"), True),  # sticky, as /tmp: only a name's owner may replace it
        ((0o777, "root"), False),
        ((0o775, "root"), False),
        ((0o755, "other"), False),
    ],
    ids=["root-0755", "root-sticky-1777", "root-0777", "root-0775", "other-0755"],
)
def test_bundle_parents_are_judged_up_to_the_users_own(plain_user, base, parent, trusted):
    """A directory the user does not own (root's bundle) is only as safe as its parents:
    whoever can write one can put another directory in the bundle's place. (Root owns root's
    bundle, so for root the walk stops at the bundle: a plain user's case.)"""
    if not IS_ROOT:
        pytest.skip("a bundle owned by root needs root to install")
    user = plain_user
    mode, owner = parent
    holder = make_dir(base / "holder", mode, 0 if owner == "root" else user.other, 0)
    bundle = make_dir(holder / "bundle", 0o755, 0, 0)
    make_entry(bundle, 0o644, 0, 0)
    out = run_as(user, load, KAPI_CACHE_DIR=str(bundle))
    if trusted:
        assert out["result"] == dict(PAYLOAD, key=KEY) and out["warnings"] == []
    else:
        (w,) = out["warnings"]
        assert out["result"] is None and f"its parent {holder}" in w


@pytest.fixture
def member():
    """(the user who runs the case, a member of the user's group who owns the shared cache, a
    user outside the group). As root: uid 4242 in group nogroup, nobody (whose group it is),
    uid 4343; otherwise the test's own user and nobody else (the cases that need others skip)."""
    nobody = _nobody()
    if IS_ROOT and nobody is not None:
        return User("member", 4242, nobody.pw_gid, 4343, True), nobody.pw_uid, 4343
    if IS_ROOT:
        pytest.skip("no user nobody")
    me = User(pwd.getpwuid(os.geteuid()).pw_name, os.geteuid(), os.getegid(), None, False)
    return me, me.uid, None


def test_group_cache_needs_the_opt_in(member):
    """A cache the group shares (set up as the guide says: setgid, group-writable) is refused
    until KAPI_CACHE_SHARED=group; then the members' entries are read and the user's are
    written for the group. Without root it is the user's own directory."""
    user, owner, outsider = member
    base = Path(tempfile.mkdtemp(prefix="kapi-trust-"))
    os.chmod(base, 0o755)
    try:
        _group_cache(user, owner, outsider, base)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _group_cache(user, owner, outsider, base):
    cache = make_dir(base / "team", 0o2770, owner, user.gid)
    make_entry(cache, 0o660, owner, user.gid)
    out = run_as(user, store_and_load, KAPI_CACHE_DIR=str(cache))
    assert out["result"] == {"stored": False, "loaded": None}
    (w,) = out["warnings"]
    assert f"owned by uid {owner}" in w if owner != user.uid else "writable by its group" in w
    assert "KAPI_CACHE_SHARED=group" in w or owner != user.uid

    def shared():
        before = load()
        r = store_and_load()
        st = os.stat(os.path.join(str(cache), KEY + ".spv"))
        return [before, r, st.st_uid, st.st_gid, st.st_mode & 0o7777]

    out = run_as(user, shared, KAPI_CACHE_DIR=str(cache), KAPI_CACHE_SHARED="group")
    before, r, uid, gid, mode = out["result"]
    assert before == dict(PAYLOAD, key=KEY) and out["warnings"] == []  # the member's entry
    assert r == {"stored": True, "loaded": dict(PAYLOAD, key=KEY)}
    assert (uid, gid, mode) == (user.uid, user.gid, 0o660)  # the group can read it
    # a shared directory that every user can write is refused all the same
    os.chmod(cache, 0o2777)
    out = run_as(user, load, KAPI_CACHE_DIR=str(cache), KAPI_CACHE_SHARED="group")
    assert out["result"] is None and "writable by every user" in out["warnings"][0]
    os.chmod(cache, 0o2770)
    if outsider is None:
        pytest.skip("files of a user outside the group need root to make (chown)")
    # the group's members are trusted, nobody else: an outsider's entry is not loaded, even
    # with the group's id, nor is a shared directory an outsider owns
    make_entry(cache, 0o644, outsider, user.gid)
    out = run_as(user, load, KAPI_CACHE_DIR=str(cache), KAPI_CACHE_SHARED="group")
    assert out["result"] is None and "nor by a member of group" in out["stderr"]
    os.chown(cache, outsider, user.gid)
    out = run_as(user, load, KAPI_CACHE_DIR=str(cache), KAPI_CACHE_SHARED="group")
    assert out["result"] is None and "nor by a member of group" in out["warnings"][0]
    # and the user must be in the directory's group
    os.chown(cache, owner, 4242)
    out = run_as(user, load, KAPI_CACHE_DIR=str(cache), KAPI_CACHE_SHARED="group")
    assert out["result"] is None and "you are not in" in out["warnings"][0]


# -- kernels, end to end -------------------------------------------------------------------------

SCRIPT = """
import sys, numpy as np, kapi

@kapi.kernel
def k(item, a, s):
    i = item.get_id(0)
    a[i] = s * 2.0 + i

@kapi.kernel
def k2(item, a):
    a[item.get_id(0)] += 1.0

a = kapi.zeros(64, dtype="f4", device=kapi.Device(sys.argv[1]))
kapi.call_kernel(k, kapi.Range(64), a, np.float32(1.0))
kapi.call_kernel(k2, kapi.Range(64), a)
assert (a.asnumpy() == 3.0 + np.arange(64, dtype=np.float32)).all()
print("numba" in sys.modules)
"""


@pytest.fixture
def dev():
    from kapi_testing import devices_or_skip

    return devices_or_skip()[0]


def run_script(path, dev, cache, *argv_prefix, **env):
    env = dict(os.environ, KAPI_CACHE_DIR=str(cache), PYTHONPATH=ROOT, **env)
    env.pop("KAPI_CACHE", None)
    return subprocess.run(
        [*argv_prefix, sys.executable, str(path), dev.filter_string],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_kernels_run_with_a_refused_cache_and_one_warning(tmp_path, dev):
    script = tmp_path / "kapi_trust_script.py"
    script.write_text(SCRIPT)
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o777)
    os.chmod(cache, 0o777)
    r = run_script(script, dev, cache)
    assert r.returncode == 0 and r.stdout.strip() == "True", r.stderr
    assert r.stderr.count(WARNING) == 1, r.stderr
    assert f"{script}:" in r.stderr  # shown at the user's line, not inside kapi
    assert os.listdir(cache) == []
    r = subprocess.run(
        [sys.executable, "-m", "kapi", "cache"],
        env=dict(os.environ, KAPI_CACHE_DIR=str(cache), PYTHONPATH=ROOT),
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0 and WARNING in r.stderr and "entries: 0" in r.stdout


def test_foreign_entry_of_a_kernel_is_recompiled(tmp_path, dev):
    if not IS_ROOT or _nobody() is None:
        pytest.skip("an entry owned by another user needs root and user nobody to make")
    script = tmp_path / "kapi_trust_script.py"
    script.write_text(SCRIPT)
    cache = tmp_path / "cache"
    r = run_script(script, dev, cache)
    assert r.returncode == 0 and r.stdout.strip() == "True", r.stderr
    assert run_script(script, dev, cache).stdout.strip() == "False"  # warm: no Numba
    spv = sorted(p for p in cache.iterdir() if p.suffix == ".spv")
    os.chown(spv[0], _nobody().pw_uid, -1)
    r = run_script(script, dev, cache, KAPI_DEBUG="cache")
    assert r.returncode == 0 and r.stdout.strip() == "True", r.stderr  # compiled again
    assert f"{spv[0]} is owned by uid {_nobody().pw_uid}" in r.stderr
    assert spv[0].stat().st_uid == 0  # replaced by root's own
    assert WARNING not in r.stderr


def _runs_as_nobody():
    """The command prefix that runs a program as nobody, or the reason there is none."""
    if not IS_ROOT or _nobody() is None:
        return None, "needs root and user nobody"
    for prefix in (["runuser", "-u", "nobody", "--"], ["setpriv", "--reuid=nobody",
                   "--regid=nogroup", "--clear-groups"]):  # fmt: skip
        try:
            r = subprocess.run([*prefix, sys.executable, "-c", "import kapi"],
                               env=dict(os.environ, PYTHONPATH=ROOT), cwd="/",
                               capture_output=True, text=True, timeout=60)  # fmt: skip
        except (OSError, subprocess.TimeoutExpired) as e:
            why = str(e)
            continue
        if r.returncode == 0:
            return prefix, None
        why = (r.stderr.strip().splitlines() or ["?"])[-1]
    return None, f"nobody cannot run {sys.executable} with kapi ({why})"


def test_plain_user_process_uses_a_bundle_root_installed(tmp_path, dev):
    prefix, why = _runs_as_nobody()
    if prefix is None:
        pytest.skip(why)
    base = Path(tempfile.mkdtemp(prefix="kapi-trust-"))
    try:
        os.chmod(base, 0o755)
        script = base / "kapi_trust_script.py"
        script.write_text(SCRIPT)
        build = base / "build"
        assert run_script(script, dev, build).returncode == 0  # the administrator's build
        bundle = make_dir(base / "bundle", 0o755, 0, 0)
        for p in build.iterdir():
            if p.suffix in (".spv", ".nat"):
                shutil.copy(p, bundle / p.name)
                os.chmod(bundle / p.name, 0o644)
        r = run_script(script, dev, bundle, *prefix, KAPI_DEBUG="cache")
        assert r.returncode == 0 and r.stdout.strip() == "False", r.stderr  # all hits
        assert WARNING not in r.stderr
        os.chmod(bundle, 0o777)
        r = run_script(script, dev, bundle, *prefix)
        assert r.returncode == 0 and r.stdout.strip() == "True" and WARNING in r.stderr
    finally:
        shutil.rmtree(base, ignore_errors=True)
