/* The CUDA driver's Level Zero tables, and nothing else: the loader gets them through the
 * shared getters (zed_getters.c), which copy the fields of the version it asks for. An entry
 * left out is NULL, which the loader turns into UNSUPPORTED_FEATURE. */
#include "cuda_driver.h"

static const ze_dditable_t cuda_tables = {
    .Global = {.pfnInit = cuda_init},
    .Driver =
        {
            .pfnGet = cuda_driver_get,
            .pfnGetApiVersion = cuda_driver_get_api_version,
            .pfnGetProperties = cuda_driver_get_properties,
            .pfnGetIpcProperties = cuda_driver_get_ipc_properties,
            .pfnGetExtensionProperties = cuda_driver_get_extension_properties,
        },
    .Device =
        {
            .pfnGet = cuda_device_get,
            .pfnGetSubDevices = cuda_device_get_sub_devices,
            .pfnGetProperties = cuda_device_get_properties,
            .pfnGetComputeProperties = cuda_device_get_compute_properties,
            .pfnGetModuleProperties = cuda_device_get_module_properties,
            .pfnGetCommandQueueGroupProperties = cuda_device_get_queue_group_properties,
            .pfnGetMemoryProperties = cuda_device_get_memory_properties,
            .pfnCanAccessPeer = cuda_device_can_access_peer,
        },
    .Context =
        {
            .pfnCreate = cuda_context_create,
            .pfnDestroy = cuda_context_destroy,
            .pfnGetStatus = cuda_context_get_status,
        },
    .CommandQueue =
        {
            .pfnCreate = cuda_queue_create,
            .pfnDestroy = cuda_queue_destroy,
            .pfnExecuteCommandLists = cuda_queue_execute,
            .pfnSynchronize = cuda_queue_synchronize,
        },
    .CommandList =
        {
            .pfnCreate = cuda_list_create,
            .pfnCreateImmediate = cuda_list_create_immediate,
            .pfnDestroy = cuda_list_destroy,
            .pfnClose = cuda_list_close,
            .pfnReset = cuda_list_reset,
            .pfnAppendBarrier = cuda_list_append_barrier,
            .pfnAppendMemoryRangesBarrier = cuda_list_append_memory_ranges_barrier,
            .pfnAppendMemoryCopy = cuda_list_append_copy,
            .pfnAppendMemoryFill = cuda_list_append_fill,
            .pfnAppendSignalEvent = cuda_list_append_signal,
            .pfnAppendWaitOnEvents = cuda_list_append_wait,
            .pfnAppendEventReset = cuda_list_append_reset,
            .pfnAppendLaunchKernel = cuda_list_append_launch,
        },
    .EventPool = {.pfnCreate = cuda_event_pool_create, .pfnDestroy = cuda_event_pool_destroy},
    .Event =
        {
            .pfnCreate = cuda_event_create,
            .pfnDestroy = cuda_event_destroy,
            .pfnHostSignal = cuda_event_host_signal,
            .pfnHostSynchronize = cuda_event_host_synchronize,
            .pfnQueryStatus = cuda_event_query_status,
            .pfnHostReset = cuda_event_host_reset,
        },
    .Fence =
        {
            .pfnCreate = cuda_fence_create,
            .pfnDestroy = cuda_fence_destroy,
            .pfnHostSynchronize = cuda_fence_host_synchronize,
            .pfnQueryStatus = cuda_fence_query_status,
            .pfnReset = cuda_fence_reset,
        },
    .Mem =
        {
            .pfnAllocShared = cuda_mem_alloc_shared,
            .pfnAllocDevice = cuda_mem_alloc_device,
            .pfnAllocHost = cuda_mem_alloc_host,
            .pfnFree = cuda_mem_free,
            .pfnGetAllocProperties = cuda_mem_get_alloc_properties,
            .pfnGetAddressRange = cuda_mem_get_address_range,
        },
    .Module =
        {
            .pfnCreate = cuda_module_create,
            .pfnDestroy = cuda_module_destroy,
            .pfnGetKernelNames = cuda_module_get_kernel_names,
            .pfnGetNativeBinary = cuda_module_get_native_binary,
        },
    .ModuleBuildLog =
        {
            .pfnDestroy = zed_build_log_destroy,
            .pfnGetString = zed_build_log_get_string,
        },
    .Kernel =
        {
            .pfnCreate = cuda_kernel_create,
            .pfnDestroy = cuda_kernel_destroy,
            .pfnSetGroupSize = cuda_kernel_set_group_size,
            .pfnSuggestGroupSize = cuda_kernel_suggest_group_size,
            .pfnSetArgumentValue = cuda_kernel_set_argument,
            .pfnGetProperties = cuda_kernel_get_properties,
            .pfnGetName = cuda_kernel_get_name,
        },
};

const ze_dditable_t *zed_driver_tables(void) {
  return &cuda_tables;
}
