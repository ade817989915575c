#!/bin/sh
# Finalises one SPIR-V fixture to PTX and assembles it with ptxas for sm_90 (the H200), the
# way the CUDA driver JIT will see it. Exit 77 (ctest SKIP) with the reason when ptxas or
# libdevice is missing, so a machine without the CUDA toolkit does not pass silently.
tool=$1 spv=$2 ptx=$3 libdevice=$4
PTXAS=${PTXAS:-$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)}
if [ ! -x "$PTXAS" ]; then
  echo "SKIP: ptxas not found (set PTXAS or install the CUDA toolkit)"
  exit 77
fi
if [ ! -f "$libdevice" ]; then
  echo "SKIP: libdevice not found at '$libdevice' (set -DKAPI_LIBDEVICE=...)"
  exit 77
fi
"$tool" "$spv" "$ptx" "$libdevice" || exit 1
"$PTXAS" -arch=sm_90 "$ptx" -o "$ptx.cubin" || exit 1
echo "ptxas -arch=sm_90 accepted $ptx"
