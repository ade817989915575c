"""kapi's SPIR-V on Intel's OpenCL CPU runtime (PyPI intel-opencl-rt, through pyopencl and
clCreateProgramWithIL): finding the runtime, pointing the OpenCL ICD loader at it, and kapi's
kernel ABI (an array is a data pointer plus extents and element strides, a LocalAccessor a
local pointer plus extents, scalars by value) mapped to OpenCL kernel arguments.
Shared by tests/reliability/test_opencl_reference.py and bench/opencl_cpu.py; pyopencl is
imported only by the functions that need it, after use_intel_cpu_runtime()."""

import importlib.metadata
import os
import re
import tempfile
import warnings

import numpy as np

SCALARS = {
    "float": np.float32,
    "double": np.float64,
    "half": np.float16,
    "i8": np.int8,
    "i16": np.int16,
    "i32": np.int32,
    "i64": np.int64,
}


def intel_cpu_runtime():
    """Path of libintelocl.so from the intel-opencl-rt distribution, or None."""
    try:
        dist = importlib.metadata.distribution("intel-opencl-rt")
    except importlib.metadata.PackageNotFoundError:
        return None
    for f in dist.files or []:
        if f.name == "libintelocl.so":
            path = os.path.realpath(dist.locate_file(f))
            if os.path.exists(path):
                return path
    return None


def icd_vendors_dir(libintelocl, folder=None):
    """A folder holding one .icd file that names libintelocl: the value for OCL_ICD_VENDORS
    (the wheel's own .icd names a path of the machine that built it)."""
    folder = folder or tempfile.mkdtemp(prefix="kapi-ocl-icd-")
    with open(os.path.join(folder, "intel-cpu.icd"), "w") as f:
        f.write(libintelocl + "\n")
    return str(folder)


def use_intel_cpu_runtime():
    """Points the ICD loader of this process at Intel's CPU runtime; returns the library's
    path. Call it before pyopencl's first platform query (the loader reads the variable once)."""
    lib = intel_cpu_runtime()
    if lib is None:
        raise RuntimeError("intel-opencl-rt is not installed (make bench-opencl installs it)")
    os.environ["OCL_ICD_VENDORS"] = icd_vendors_dir(lib)
    return lib


def intel_cpu_context():
    """(context, queue) on the Intel OpenCL CPU device."""
    import pyopencl as cl

    platforms = [p for p in cl.get_platforms() if "Intel" in p.name]
    if not platforms:
        raise RuntimeError(f"no Intel OpenCL platform among {[p.name for p in cl.get_platforms()]}")
    ctx = cl.Context(platforms[0].get_devices())
    return ctx, cl.CommandQueue(ctx)


_PARAM = re.compile(r"%([\w.]+)$")


def entry_params(ck):
    """The OpenCL parameters of a compiled kernel's entry, in order, as (kind, argument, part):
    kind 'global' (data pointer of an array), 'local' (of a LocalAccessor), 'dim', 'stride'
    (part = the dimension) or 'scalar' (part = its numpy type); argument = the index of the
    call_kernel argument it comes from."""
    head = next(line for line in ck.kir.splitlines() if line.startswith("kernel @"))
    names = re.findall(r"%(\w+):", head[: head.index(") ->")])
    define = next(line for line in ck.llvm_ir.splitlines() if line.startswith("define spir_kernel"))
    params = []
    for p in define[define.index("(") + 1 : define.rindex(")")].split(", "):
        name = _PARAM.search(p).group(1)
        base, _, part = name.partition(".")
        arg = names.index(base)
        if "addrspace(1)*" in p:
            params.append(("global", arg, None))
        elif "addrspace(3)*" in p:
            params.append(("local", arg, None))
        elif part.startswith("dim"):
            params.append(("dim", arg, int(part[3:])))
        elif part.startswith("stride"):
            params.append(("stride", arg, int(part[6:])))
        elif not part and p.split()[0] in SCALARS:
            params.append(("scalar", arg, SCALARS[p.split()[0]]))
        else:
            raise NotImplementedError(f"{ck.entry}: parameter {p!r} has no OpenCL mapping here")
    return params


class OpenCLKernel:
    """One kapi specialisation (CompiledKernel) built from its SPIR-V on an OpenCL context.
    bind() takes the arguments as call_kernel got them (NumPy arrays, LocalAccessors,
    scalars) and sets the OpenCL arguments once; launches then only enqueue."""

    def __init__(self, ctx, ck):
        import pyopencl as cl

        self.ctx, self.ck = ctx, ck
        self.params = entry_params(ck)
        with warnings.catch_warnings():  # the build log is kept: self.build_log
            warnings.simplefilter("ignore", cl.CompilerWarning)
            self.program = cl.Program(ctx, ck.spirv).build()
        self.build_log = self.program.get_build_info(ctx.devices[0], cl.program_build_info.LOG)
        self.kernel = getattr(self.program, ck.entry)
        self.buffers = {}

    def bind(self, args):
        """Buffers (copies of the NumPy arrays, by argument index) and kernel arguments."""
        import pyopencl as cl

        self.buffers, self.arrays, values = {}, {}, []
        for kind, i, part in self.params:
            a = args[i]
            if kind == "global":
                if i not in self.buffers:
                    if not a.flags.c_contiguous:  # the buffer is a copy: its strides would differ
                        raise NotImplementedError(f"argument {i}: only C-contiguous arrays")
                    flags = cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR
                    self.buffers[i] = cl.Buffer(self.ctx, flags, hostbuf=a)
                    self.arrays[i] = a
                values.append(self.buffers[i])
            elif kind == "local":
                values.append(cl.LocalMemory(int(np.prod(a.shape)) * np.dtype(a.dtype).itemsize))
            elif kind == "dim":
                values.append(np.int64(a.shape[part]))
            elif kind == "stride":
                values.append(np.int64(a.strides[part] // a.itemsize))
            else:
                values.append(part(a))
        self.kernel.set_args(*values)
        return self

    def launch(self, queue, global_size, local_size=None):
        import pyopencl as cl

        return cl.enqueue_nd_range_kernel(queue, self.kernel, global_size, local_size)

    def read(self, queue, index):
        """The array of argument `index` as the device has it now."""
        import pyopencl as cl

        out = np.empty_like(self.arrays[index])
        cl.enqueue_copy(queue, out, self.buffers[index])
        queue.finish()
        return out

    def read_back(self, queue):
        """Copies every array argument back into the NumPy array it came from."""
        import pyopencl as cl

        for i, buf in self.buffers.items():
            cl.enqueue_copy(queue, self.arrays[i], buf)
        queue.finish()


def compiled(kernel):
    """The CompiledKernel kapi built last for a @kapi.kernel (call it after a call_kernel)."""
    return list(kernel.overloads.values())[-1]
