// host-device.h - TG_HOST_DEVICE: a function compiled for the host and, under
// nvcc, for CUDA devices too (the helpers the CPU code and the CUDA kernels
// share: core/alibi.h, core/quant-round.h).
#ifndef TG_HOST_DEVICE_H
#define TG_HOST_DEVICE_H

#ifdef __CUDACC__
#define TG_HOST_DEVICE __host__ __device__
#else
#define TG_HOST_DEVICE
#endif

#endif
