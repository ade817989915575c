"""kapi arrays in mpi4py's buffer-based calls without copies: the buffer protocol on memory the
host addresses (kapi's CPU device, host USM), DLPack on GPUs (checked on fake_cuda.c's GPUs,
see tests/memory/test_multi_device.py), and refusals instead of silent copies elsewhere. The
two-rank samples run in `make test-mpi` (mpiexec -n 2)."""

import os
import subprocess
import sys

import numpy as np
import pytest
from kapi_testing import fake_cuda_run as fake_run

# mpi4py is in requirements.txt (make test installs it); a machine without it says so here.
MPI = pytest.importorskip("mpi4py.MPI", reason="mpi4py is not installed (requirements.txt has it)")

import kapi  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture
def cpu():
    cpus = kapi.devices("cpu")
    if not cpus:
        pytest.skip("needs kapi's CPU device")
    return cpus[0]


def test_buffer_protocol_exposes_the_arrays_own_memory(cpu):
    a = kapi.asarray(np.arange(12, dtype=np.float32).reshape(3, 4), device=cpu)
    m = memoryview(a)
    assert (m.format, m.shape, m.strides, m.readonly) == ("f", (3, 4), (16, 4), False)
    view = np.frombuffer(m, dtype=np.float32)
    assert view.ctypes.data == a.data_ptr  # the same memory, no copy
    view[5] = -1  # writes through
    assert a.asnumpy()[1, 1] == -1


def test_mpi_send_and_receive_land_in_kapi_memory(cpu):
    comm = MPI.COMM_SELF
    src = kapi.asarray(np.arange(1000, dtype=np.float64), device=cpu)
    dst = kapi.zeros(1000, dtype=np.float64, device=cpu)
    assert MPI.buffer(src).address == src.data_ptr
    assert MPI.buffer(dst).address == dst.data_ptr  # MPI writes where the array lives
    comm.Sendrecv(src, dest=0, recvbuf=dst, source=0)
    np.testing.assert_array_equal(dst.asnumpy(), np.arange(1000))
    req = comm.Isend(src[10:20], dest=0, tag=3)
    comm.Recv(dst[:10], source=0, tag=3)
    req.Wait()
    np.testing.assert_array_equal(dst.asnumpy()[:10], np.arange(10, 20))


def test_mpi_allreduce_of_kapi_arrays_and_a_pending_result(cpu):
    x = kapi.asarray(np.arange(6, dtype=np.int64), device=cpu)
    y = x * 3 + 1  # lazy: its kernel runs when MPI asks for the memory
    out = kapi.empty(6, dtype=np.int64, device=cpu)
    MPI.COMM_SELF.Allreduce(y, out, op=MPI.SUM)
    np.testing.assert_array_equal(out.asnumpy(), np.arange(6) * 3 + 1)


def test_host_usm_is_a_staging_buffer_mpi_reads_in_place(cpu):
    h = kapi.empty(16, dtype=np.int32, device=cpu, usm_type="host")
    h[...] = np.arange(16)
    assert MPI.buffer(h).address == h.data_ptr


def test_non_contiguous_arrays_are_refused_not_copied(cpu):
    a = kapi.asarray(np.arange(20, dtype=np.float64), device=cpu)
    with pytest.raises(BufferError):
        MPI.COMM_SELF.Send(a[::2], dest=0)


def test_gpu_arrays_go_to_mpi_through_dlpack_without_copies():
    out = fake_run(
        "from mpi4py import MPI\n"
        "a = kapi.asarray(np.arange(64, dtype=np.float32), device='cuda:gpu:1')\n"
        "b = MPI.buffer(a)\n"
        "try:\n"
        "    memoryview(a); why = None\n"
        "except BufferError as e:\n"
        "    why = str(e)\n"
        "print(json.dumps({'same': b.address == a.data_ptr, 'nbytes': b.nbytes, 'why': why}))\n"
    )
    assert out["same"] and out["nbytes"] == 256
    assert "cuda:gpu:1" in out["why"] and "DLPack" in out["why"]


def test_cuda_aware_mpi_reads_the_library_and_the_override(monkeypatch):
    monkeypatch.delenv("KAPI_MPI_CUDA_AWARE", raising=False)
    assert kapi.cuda_aware_mpi() is False  # MPICH's wheel is built without CUDA
    monkeypatch.setenv("KAPI_MPI_CUDA_AWARE", "1")
    assert kapi.cuda_aware_mpi() is True


def test_local_rank_from_an_mpi_communicator():
    assert kapi.local_rank(MPI.COMM_SELF) == 0


@pytest.mark.parametrize("sample", ["mpi_heat.py", "mpi_kmeans.py"])
def test_mpi_sample_with_one_rank_and_the_staged_path(sample, cpu):
    """One rank here (two in make test-mpi), through pinned host buffers: the path a GPU takes
    when the MPI is not CUDA-aware."""
    env = dict(os.environ, PYTHONPATH=ROOT, KAPI_DEFAULT_DEVICE="cpu")
    path = os.path.join(ROOT, "samples", "distributed", sample)
    small = (
        ["--rows", "64", "--cols", "48", "--steps", "20"] if "heat" in sample else ["--steps", "2"]
    )
    r = subprocess.run(
        [sys.executable, path, "--transport", "staged", *small],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert "OK" in r.stdout and "staged" in r.stdout
