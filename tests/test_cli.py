"""`python -m kapi`'s command-line conventions: --help lists the commands, an unknown command is a
usage error (status 2), and a reader that closes the pipe early gets no traceback."""

import os
import signal
import subprocess
import sys

import pytest

KAPI = [sys.executable, "-m", "kapi"]


def test_help_lists_the_commands():
    r = subprocess.run(KAPI + ["--help"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("usage: python -m kapi")
    for command in ("devices", "cache", "compile"):
        assert command in r.stdout


@pytest.mark.parametrize("command", ["cache", "compile", "devices"])
def test_each_command_has_help(command):
    r = subprocess.run(KAPI + [command, "--help"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"usage: python -m kapi {command}")


def test_unknown_command_is_a_usage_error():
    r = subprocess.run(KAPI + ["no-such-command"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    assert "invalid choice: 'no-such-command'" in r.stderr
    assert r.stderr.startswith("usage: python -m kapi")
    assert "Traceback" not in r.stderr


def test_unknown_option_is_a_usage_error():
    r = subprocess.run(KAPI + ["cache", "--no-such-option"], capture_output=True, text=True)
    assert r.returncode == 2
    assert "Traceback" not in r.stderr


@pytest.mark.parametrize("args", [["cache", "-v"], ["--help"]])
def test_closed_pipe_ends_quietly(tmp_path, args):
    # `python -m kapi cache -v | head`: the reader is gone before kapi writes. A pipe whose read
    # end is already closed makes the first write fail, whatever the output's size.
    r_fd, w_fd = os.pipe()
    os.close(r_fd)
    env = dict(os.environ, KAPI_CACHE_DIR=str(tmp_path / "cache"))
    try:
        p = subprocess.run(KAPI + args, stdout=w_fd, stderr=subprocess.PIPE, env=env, timeout=60)
    finally:
        os.close(w_fd)
    err = p.stderr.decode()
    assert "Traceback" not in err and "BrokenPipeError" not in err, err
    # As a shell reports a writer killed by SIGPIPE (argparse's --help swallows the error itself).
    assert p.returncode == (0 if args == ["--help"] else 128 + signal.SIGPIPE)


def test_compile_into_an_untrusted_directory_fails_before_compiling(tmp_path):
    """A bundle directory others may write is refused by the cache: `compile --output` says so
    and exits 1, instead of reporting kernels compiled into a cache that stored nothing."""
    out = tmp_path / "bundle"
    out.mkdir()
    out.chmod(0o777)
    src = tmp_path / "app.py"
    src.write_text("import kapi\n\n@kapi.kernel\ndef k(item, a):\n    a[item.get_id(0)] = 1.0\n")
    r = subprocess.run(
        KAPI
        + ["compile", str(src), "--signature", "(item(1), array(f32,1))", "--output", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert r.returncode == 1, r.stdout + r.stderr
    assert "writable by every user" in r.stderr
    assert "compiled" not in r.stdout
    assert list(out.iterdir()) == []
