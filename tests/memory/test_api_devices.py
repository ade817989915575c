"""Devices, filter strings, the default device, queues and `python -m kapi`."""

import subprocess
import sys

import pytest

import kapi
from kapi._memory import device as _device

try:
    DEVICES = kapi.devices()
except kapi.KapiError as e:  # pragma: no cover - native parts missing
    pytest.skip(f"no kapi runtime: {e}", allow_module_level=True)

ids = [d.filter_string for d in DEVICES]


def test_there_is_a_device_and_cpu_is_listed():
    assert DEVICES
    assert all(isinstance(d, kapi.Device) for d in DEVICES)
    assert [d.index for d in DEVICES] == list(range(len(DEVICES)))


@pytest.mark.parametrize("dev", DEVICES, ids=ids)
def test_device_properties(dev):
    assert dev.device_type in ("cpu", "gpu")
    assert dev.name and dev.driver_name and dev.vendor
    assert dev.max_work_group_size >= 1 and len(dev.max_work_item_sizes) == 3
    assert dev.has_aspect_fp64 in (True, False)
    assert kapi.Device(dev.filter_string) is dev
    assert hash(dev) == hash(kapi.Device(dev.filter_string))
    assert dev.default_queue is dev.default_queue
    assert dev.default_queue.device is dev


def test_filter_strings():
    cpu = kapi.devices("cpu")
    if cpu:
        assert kapi.Device("cpu") is cpu[0]
        assert kapi.Device("cpu:0") is cpu[0]
        assert kapi.Device("level_zero:cpu:0") is cpu[0]
        assert kapi.Device("opencl:cpu") is cpu[0]  # dpctl spelling still finds it
    assert kapi.Device(str(0)) is DEVICES[0]
    assert kapi.Device(DEVICES[0]) is DEVICES[0]


@pytest.mark.parametrize("bad", ["gpu:99", "cpu:7", "nosuch:cpu", "cpu:gpu", "", "a:b:c:d"])
def test_bad_filter_strings(bad):
    with pytest.raises(kapi.DeviceNotFoundError):
        kapi.Device(bad)


def test_filter_must_be_a_string():
    with pytest.raises(TypeError):
        kapi.Device(3.5)


def test_default_device_prefers_gpu(monkeypatch):
    monkeypatch.delenv("KAPI_DEFAULT_DEVICE", raising=False)
    gpus = kapi.devices("gpu")
    want = gpus[0] if gpus else kapi.devices("cpu")[0]
    assert kapi.default_device() is want
    assert kapi.Device() is want


def test_default_device_env(monkeypatch):
    monkeypatch.setenv("KAPI_DEFAULT_DEVICE", DEVICES[-1].filter_string)
    assert kapi.default_device() is DEVICES[-1]
    monkeypatch.setenv("KAPI_DEFAULT_DEVICE", "gpu:42")
    with pytest.raises(kapi.DeviceNotFoundError, match="KAPI_DEFAULT_DEVICE"):
        kapi.default_device()


@pytest.mark.parametrize("dev", DEVICES, ids=ids)
def test_queue(dev):
    q = kapi.Queue(dev)
    assert q.device is dev and q is not dev.default_queue
    q.wait()
    a = kapi.zeros(4, dtype="f4", queue=q)
    assert a.sycl_queue is q
    assert kapi.zeros(4, device=dev, queue=q).sycl_queue is q
    others = [d for d in DEVICES if d != dev]
    if others:
        with pytest.raises(ValueError, match="disagree"):
            kapi.zeros(4, device=others[0], queue=q)


def test_python_m_kapi_lists_devices():
    out = subprocess.run(
        [sys.executable, "-m", "kapi"], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    assert "drivers:" in out
    for d in DEVICES:
        assert d.filter_string in out and d.name in out
    assert "*" in out


def test_level_zero_matches_every_device():
    # numba-dpex code often says "level_zero:gpu:0": every kapi device is a Level Zero device
    gpus = kapi.devices("gpu")
    if gpus:
        assert kapi.Device("level_zero:gpu:0") is gpus[0]
    assert kapi.Device("level_zero:0") is DEVICES[0]


def test_parse_filter():
    assert _device._parse_filter("level_zero:gpu:1") == ("*", "gpu", 1)
    assert _device._parse_filter("kapi-cpu:cpu") == ("kapi-cpu", "cpu", None)
    assert _device._parse_filter("cuda:0") == ("cuda", None, 0)
    assert _device._parse_filter("gpu") == (None, "gpu", None)
