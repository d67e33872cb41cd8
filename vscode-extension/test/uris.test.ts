import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isAsmPath, isCppKernelPath } from '../src/uris';

test('a C++ kernel of the store is one the extension serves; a .cpp elsewhere is not', () => {
  assert.ok(isCppKernelPath('/ws/.kernelscope/runs/3/graphs/0_0_0-forward/kernels/cpp_fused_mul_silu_0.cpp'));
  assert.ok(!isCppKernelPath('/ws/src/kernel.cpp'));  // the user's own C++: not a stored kernel
  assert.ok(!isCppKernelPath('/ws/.kernelscope/runs/3/graphs/0_0_0-forward/kernels/triton_poi_fused_0.py'));
  assert.ok(!isAsmPath('/ws/.kernelscope/runs/3/graphs/0_0_0-forward/kernels/cpp_fused_mul_silu_0.cpp'));
});
